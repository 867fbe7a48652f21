//! The reference (docs/reference/) keeps up with the code. A user reads
//! the reference, not the sources, so each list it gives is checked against
//! what the build has: every endpoint of the OpenAPI document (http.md),
//! every metric served (metrics.md; a labelled family appears once it has a
//! sample), every public SQL function of the installed extension (sql.md),
//! every error code the sidecar can answer with (errors.md), every reason
//! code of the identity verdict (signals.md), every environment variable of
//! the sidecar and setting of the extension (configuration.md), and the
//! version the build installs (docs/operations.md). Each test fails naming
//! what the page lacks. (The risk signals' table is checked by
//! `crates/risk/tests/risk/reference.rs`, which prints the table itself.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use vigil_e2e::{shared, workspace_root};

/// A page of the documentation, `docs/<name>`.
fn page(name: &str) -> String {
    std::fs::read_to_string(workspace_root().join("docs").join(name))
        .unwrap_or_else(|e| panic!("docs/{name}: {e}"))
}

/// Fails unless `text` (of the page `at`) holds `spelled(name)` for every
/// name, and unless there are at least `least` names (so a broken scan
/// cannot pass).
fn assert_page_names(
    what: &str,
    names: &BTreeSet<String>,
    least: usize,
    (at, text): (&str, &str),
    spelled: impl Fn(&str) -> String,
) {
    assert!(names.len() >= least, "too few {what} found: {names:?}");
    let missing: Vec<_> = names
        .iter()
        .filter(|name| !text.contains(&spelled(name)))
        .collect();
    assert!(
        missing.is_empty(),
        "{what} missing from docs/{at}: {missing:?}"
    );
}

/// Every `.rs` file below `dir` but a module of tests (`tests.rs`), with
/// its path, the part before its tests.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                let text = std::fs::read_to_string(&path).expect("a source file");
                // Tests make errors and names of their own.
                let code = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
                out.push((path, code));
            }
        }
    }
    out
}

/// Snake-case string literals that follow one of `openers`, with only
/// whitespace, commas, `=>`, `(` and `{` between; after an opener ending in
/// `::` (such as `StatusCode::`) the constant's name is skipped first.
fn literals_after(source: &str, openers: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for opener in openers {
        let mut rest = source;
        while let Some(at) = rest.find(opener) {
            rest = &rest[at + opener.len()..];
            let mut after = rest;
            if opener.ends_with("::") {
                after = after.trim_start_matches(|c: char| c.is_ascii_uppercase() || c == '_');
            }
            let after = after.trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, ',' | '=' | '>' | '(' | '{')
            });
            if let Some(literal) = after.strip_prefix('"') {
                let word = &literal[..literal.find('"').unwrap_or(0)];
                if !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    found.push(word.to_owned());
                }
            }
        }
    }
    found
}

/// The quoted names that follow `needle` (`env = "` gives the sidecar's
/// environment variables, `c"vigil.` the extension's settings as pgrx takes
/// their names).
fn quoted_after(files: &[(PathBuf, String)], needle: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (_, text) in files {
        for piece in text.split(needle).skip(1) {
            names.insert(piece[..piece.find('"').unwrap_or(0)].to_owned());
        }
    }
    names
}

#[test]
fn every_endpoint_of_the_openapi_document_is_in_the_http_table() {
    let doc: Value = reqwest::blocking::get(shared().url("/openapi.json"))
        .and_then(|r| r.json())
        .expect("the document");
    let mut endpoints = BTreeSet::new();
    for (path, operations) in doc["paths"].as_object().expect("paths") {
        for method in operations.as_object().expect("operations").keys() {
            endpoints.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    let http = page("reference/http.md");
    assert_page_names(
        "endpoints",
        &endpoints,
        15,
        ("reference/http.md", &http),
        |e| format!("| `{e}"),
    );
}

#[test]
fn every_metric_served_is_in_the_metrics_table() {
    // One answered request, so the HTTP families have samples.
    reqwest::blocking::get(shared().url("/healthz")).expect("answered");
    let text = reqwest::blocking::get(shared().url("/metrics"))
        .and_then(|r| r.text())
        .expect("the metrics");
    // `# TYPE name kind`; a counter's samples, as README names them, end in `_total`.
    let metrics = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| match kind {
            "counter" => format!("{name}_total"),
            _ => name.to_owned(),
        })
        .collect();
    let page_text = page("reference/metrics.md");
    let at = ("reference/metrics.md", page_text.as_str());
    assert_page_names("metrics", &metrics, 10, at, |m| format!("`{m}`"));
}

#[test]
fn every_public_sql_function_of_the_extension_is_named() {
    // Names starting with `_` are the extension's internals.
    let names = shared().psql(
        "SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname = 'vigil' AND p.prokind IN ('f', 'p') AND p.proname !~ '^_'",
    );
    let names = names.lines().map(str::to_owned).collect();
    let sql = page("reference/sql.md");
    assert_page_names(
        "SQL functions",
        &names,
        30,
        ("reference/sql.md", &sql),
        |f| format!("vigil.{f}"),
    );
}

#[test]
fn every_error_code_of_the_sidecar_is_in_the_error_table() {
    // The codes: the first literal after `StatusCode::NAME` (the status an
    // error is made with) or `too_many(` (a 429's), and in error.rs the first
    // of a match arm's tuple (`=> ("code", message)`: a bare status's code).
    let mut codes = BTreeSet::new();
    for (path, text) in sources(&workspace_root().join("sidecar/src")) {
        codes.extend(literals_after(&text, &["StatusCode::", "too_many("]));
        if path.ends_with("error.rs") {
            codes.extend(literals_after(&text, &["=> ("]));
        }
    }
    let errors = page("reference/errors.md");
    let table: String = errors
        .lines()
        .skip_while(|l| !l.starts_with("| status | code | when |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(2))
        .collect();
    let at = ("reference/errors.md", table.as_str());
    assert_page_names("error codes", &codes, 20, at, |c| format!("`{c}`"));
}

#[test]
fn every_reason_code_of_the_identity_verdict_is_named() {
    // Reason codes are the upper-case string literals of the verdict's
    // files (one per check).
    let verdict = sources(&workspace_root().join("crates/identity/src/verdict"));
    assert!(
        verdict.len() > 3,
        "the verdict's files are not where they were"
    );
    let codes = verdict
        .iter()
        .flat_map(|(_, text)| text.split('"').skip(1).step_by(2))
        .filter(|s| s.len() > 3 && s.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .map(str::to_owned)
        .collect();
    let signals = page("reference/signals.md");
    let at = ("reference/signals.md", signals.as_str());
    assert_page_names("reason codes", &codes, 15, at, |c| format!("`{c}`"));
}

#[test]
fn every_setting_of_the_sidecar_and_the_extension_is_named() {
    let root = workspace_root();
    let variables = quoted_after(&sources(&root.join("sidecar/src")), "env = \"");
    let settings = quoted_after(&sources(&root.join("extension/src")), "c\"vigil.");
    let configuration = page("reference/configuration.md");
    let at = ("reference/configuration.md", configuration.as_str());
    assert_page_names("environment variables", &variables, 10, at, |v| {
        format!("`{v}`")
    });
    assert_page_names("settings", &settings, 10, at, |s| format!("`vigil.{s}`"));
}

#[test]
fn the_version_the_build_installs_is_named() {
    // The extension and every crate share the workspace's version.
    let stated = format!("workspace version, now **{}**", env!("CARGO_PKG_VERSION"));
    assert!(
        page("operations.md").contains(&stated),
        "docs/operations.md's \"Versions and upgrades\" should say: {stated}"
    );
}
