//! The reference's table of signals (docs/reference/signals.md) is the one
//! the code scores with.

#[test]
fn the_reference_lists_every_signal_as_the_code_scores_it() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/reference/signals.md"
    );
    let page = std::fs::read_to_string(path).expect("docs/reference/signals.md");
    let table = vigil_risk::signals::signals_markdown();
    assert!(
        page.contains(table.trim()),
        "docs/reference/signals.md's signal table is stale; replace it with:\n{table}"
    );
}
