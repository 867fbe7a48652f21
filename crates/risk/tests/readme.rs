//! README's table of signals is the one the code scores with.

#[test]
fn readme_lists_every_signal_as_the_code_scores_it() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let table = vigil_risk::signals::signals_markdown();
    assert!(
        readme.contains(table.trim()),
        "README's signal table is stale; replace it with:\n{table}"
    );
}
