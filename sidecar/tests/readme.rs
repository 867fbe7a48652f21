//! README keeps up with the code: its error table names every `code` the
//! sidecar can answer with, it names the version the build installs, and
//! every environment variable of the sidecar and setting of the extension.
//!
//! The codes are read from the sources: the first string literal after a
//! `StatusCode::NAME` (the status an error is made with), after
//! `too_many(` (a 429's code), and in `error.rs` the first element of a
//! match arm's tuple (`=> ("code", message)`, the codes a bare status gets).

use std::collections::BTreeSet;
use std::path::Path;

/// Snake-case string literals that follow one of `openers`, with only
/// whitespace, commas, `=>`, `(` and `{` between.
fn literals_after(source: &str, openers: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for opener in openers {
        let mut rest = source;
        while let Some(at) = rest.find(opener) {
            let mut after = &rest[at + opener.len()..];
            if opener.ends_with("::") {
                // Skip the constant's name: StatusCode::BAD_REQUEST.
                after = after.trim_start_matches(|c: char| c.is_ascii_uppercase() || c == '_');
            }
            let gap = after
                .find(|c: char| !(c.is_whitespace() || matches!(c, ',' | '=' | '>' | '(' | '{')))
                .unwrap_or(after.len());
            let tail = &after[gap..];
            if let Some(literal) = tail.strip_prefix('"') {
                let end = literal.find('"').unwrap_or(0);
                let word = &literal[..end];
                if !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    found.push(word.to_owned());
                }
            }
            rest = &rest[at + opener.len()..];
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("the sidecar's sources") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn every_error_code_the_sidecar_answers_with_is_in_readmes_error_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut codes = BTreeSet::new();
    for (path, text) in &files {
        // Tests make errors of their own to check the mapping.
        let text = text.split("#[cfg(test)]").next().unwrap_or(text);
        codes.extend(literals_after(text, &["StatusCode::", "too_many("]));
        if path.ends_with("error.rs") {
            codes.extend(literals_after(text, &["=> ("]));
        }
    }
    assert!(
        codes.len() >= 20,
        "too few codes found, the scan is broken: {codes:?}"
    );

    let readme = std::fs::read_to_string(root.join("../README.md")).expect("README.md");
    let table: String = readme
        .lines()
        .skip_while(|l| !l.starts_with("| status | code | when |"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(2).unwrap_or("").to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let missing: Vec<_> = codes
        .iter()
        .filter(|c| !table.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "codes missing from README's error table: {missing:?}"
    );
}

#[test]
fn readme_names_the_version_the_build_installs() {
    // The extension and the sidecar share the workspace's version.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let stated = format!("workspace version, now **{}**", env!("CARGO_PKG_VERSION"));
    assert!(
        readme.contains(&stated),
        "README's \"Versions and upgrades\" should say: {stated}"
    );
}

/// `needle`-prefixed quoted names in the `.rs` files below `dir`: `env =
/// "` gives the sidecar's environment variables, `c"vigil.` the settings
/// the extension defines (as pgrx takes their names).
fn quoted_after(dir: &Path, needle: &str) -> BTreeSet<String> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    let mut names = BTreeSet::new();
    for (_, text) in files {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(needle) {
            let name = &rest[at + needle.len()..];
            let end = name.find('"').unwrap_or(0);
            names.insert(name[..end].to_owned());
            rest = &name[end..];
        }
    }
    names
}

#[test]
fn every_setting_is_in_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).expect("README.md");
    let variables = quoted_after(&root.join("src"), "env = \"");
    let settings: BTreeSet<String> = quoted_after(&root.join("../extension/src"), "c\"vigil.")
        .into_iter()
        .map(|name| format!("vigil.{name}"))
        .collect();
    assert!(
        variables.len() >= 10 && settings.len() >= 10,
        "{variables:?} {settings:?}"
    );
    let missing: Vec<_> = variables
        .iter()
        .chain(&settings)
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "settings missing from README: {missing:?}"
    );
}
