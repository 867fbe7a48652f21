//! README's identity reason codes are the ones the verdict gives.

#[test]
fn every_reason_code_of_the_verdict_is_in_readme() {
    let root = env!("CARGO_MANIFEST_DIR");
    let verdict = std::fs::read_to_string(format!("{root}/src/verdict.rs")).expect("verdict.rs");
    let readme = std::fs::read_to_string(format!("{root}/../../README.md")).expect("README.md");
    // Reason codes are the upper-case string literals of the verdict.
    let codes: Vec<&str> = verdict
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.len() > 3 && s.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    assert!(codes.len() >= 15, "{codes:?}");
    let missing: Vec<_> = codes
        .iter()
        .filter(|c| !readme.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "reason codes missing from README: {missing:?}"
    );
}
