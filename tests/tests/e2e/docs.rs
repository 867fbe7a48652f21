//! Every example of README.md and docs/ runs, so none can rot.
//!
//! A fenced block whose language is `sh` or `sql` is run, unless its info
//! string says `norun` (the two commands, Docker, real hosts: what needs a
//! machine of its own). `sh` blocks run in bash (`set -euo pipefail`) in a
//! sandbox that looks like a checkout after `make run`: `.vigil/credentials.env`
//! and `.vigil/pg` (this test's cluster), `scripts/`, `sql/` and `target/`, the
//! sample photos the examples upload, `vigil-sidecar` on the PATH and the
//! credentials in the environment. `sql` blocks run in psql as the superuser,
//! stopping at the first error, in unaligned output (`a|b`).
//!
//! A line `# → text` after a shell command (`-- → text` after an SQL
//! statement) is what that step prints; consecutive such lines are its lines,
//! and `…` stands for any text. A step without one must only succeed.
//!
//! Every example runs twice, the second time on what the first left, so no
//! example depends on what an installation holds before it. Links between the
//! pages must lead to a page and a heading that exist, and `json` blocks must
//! parse.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use vigil_e2e::{feed_script, workspace_root, Env};
use vigil_identity::synthetic as s;

/// The pages a newcomer reads: README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("docs/ exists")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut pages = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut pages);
    pages
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

struct Block {
    page: String,
    line: usize,
    info: String,
    body: Vec<String>,
}

impl Block {
    fn language(&self) -> &str {
        self.info
            .split([' ', ','])
            .next()
            .unwrap_or_default()
            .trim()
    }

    fn runs(&self) -> bool {
        matches!(self.language(), "sh" | "sql") && !self.info.contains("norun")
    }

    fn at(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

/// The fenced code blocks of a page, with the line each starts on.
fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).expect("a readable page");
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block {
                    page: relative(path),
                    line: i + 1,
                    info: line.trim_start().trim_start_matches('`').trim().to_owned(),
                    body: Vec::new(),
                })
            }
            (Some(_), true) => out.extend(open.take()),
            (Some(block), false) => block.body.push(line.to_owned()),
            (None, false) => {}
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is never closed",
        relative(path)
    );
    out
}

/// A step of an example: its lines, and what it must print (None: anything).
struct Step {
    lines: Vec<String>,
    expected: Option<String>,
}

/// The steps of `block`: a step ends where a line of `marker` (what it
/// prints) follows it, or where `ends_step` says a line ends one (an SQL
/// statement), so a step prints only what its own lines print.
fn steps(block: &Block, marker: &str, ends_step: fn(&str) -> bool) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for line in &block.body {
        match line.trim_start().strip_prefix(marker) {
            Some(expected) => {
                if !open.is_empty() {
                    steps.push(Step {
                        lines: std::mem::take(&mut open),
                        expected: None,
                    });
                }
                let expected = expected.trim_end();
                let Some(last) = steps.last_mut() else {
                    panic!("{}: `{marker}` before any command", block.at());
                };
                last.expected = Some(match last.expected.take() {
                    Some(before) => format!("{before}\n{expected}"),
                    None => expected.to_owned(),
                });
            }
            None => {
                open.push(line.clone());
                if ends_step(line) {
                    steps.push(Step {
                        lines: std::mem::take(&mut open),
                        expected: None,
                    });
                }
            }
        }
    }
    if !open.is_empty() {
        steps.push(Step {
            lines: open,
            expected: None,
        });
    }
    steps
}

/// Shell commands may span lines (quotes, `\`), so only `# →` ends a step.
fn shell_step_end(_: &str) -> bool {
    false
}

/// An SQL statement ends with `;` (or a psql `\gset`) before any comment.
fn sql_step_end(line: &str) -> bool {
    let code = line.split(" --").next().unwrap_or(line).trim_end();
    code.ends_with(';') || code.ends_with("\\gset")
}

/// Whether `text` is what `pattern` shows, `…` standing for any text.
fn shows(pattern: &str, text: &str) -> bool {
    let text = text.trim_end();
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return text == pattern;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

const STEP: &str = "@@vigil-docs-step@@";

/// Checks each step's share of `stdout` (steps separated by [`STEP`] lines).
fn check_steps(block: &Block, steps: &[Step], stdout: &str, failures: &mut Vec<String>) {
    let outputs: Vec<&str> = stdout.split(&format!("{STEP}\n")).skip(1).collect();
    for (i, step) in steps.iter().enumerate() {
        let Some(expected) = &step.expected else {
            continue;
        };
        let got = outputs.get(i).copied().unwrap_or_default();
        if !shows(expected, got) {
            failures.push(format!(
                "{}: `{}` printed\n{}\nwhere the page shows\n{}",
                block.at(),
                step.lines.join("\n").trim(),
                got.trim_end(),
                expected
            ));
        }
    }
}

/// A directory that looks like a checkout after `make run`.
struct Sandbox {
    dir: PathBuf,
    vars: Vec<(String, String)>,
}

impl Sandbox {
    fn new(env: &Env) -> Sandbox {
        let root = workspace_root();
        let dir = std::env::temp_dir().join(format!("vigil-docs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".vigil")).unwrap();
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        for name in ["scripts", "sql", "target", "bench"] {
            std::os::unix::fs::symlink(root.join(name), dir.join(name)).unwrap();
        }
        std::os::unix::fs::symlink(&env.cluster_dir, dir.join(".vigil/pg")).unwrap();
        std::os::unix::fs::symlink(
            root.join("target/release/vigil-sidecar"),
            dir.join("bin/vigil-sidecar"),
        )
        .unwrap();
        // The sample photos the examples upload, and the one the SQL example
        // reads as a server-side file.
        let photo = s::jpeg(&s::card(101), 90, Some(s::camera_exif()));
        for name in ["my-id-card.jpg", "passport.jpg"] {
            std::fs::write(dir.join(name), &photo).unwrap();
        }
        std::fs::write("/tmp/card.jpg", &photo).unwrap();

        // What `make run` makes: an API key, an account with a user key and
        // a database `demo`.
        let api_key = env.admin_ok(&["keys", "create", "--name", "demo (make run)"]);
        let account = "demo@vigil.local";
        env.admin_ok(&["accounts", "create", account]);
        let user_key = env.admin_ok(&["user-keys", "create", account, "--name", "demo"]);
        env.psql(&format!(
            "SET vigil.account = '{account}'; SELECT vigil.create_database('demo')"
        ));
        let vars: Vec<(String, String)> = [
            ("DATABASE_URL", env.database_url.as_str()),
            ("VIGIL_ADMIN_DATABASE_URL", env.admin_url.as_str()),
            ("VIGIL_HTTP", env.base.as_str()),
            ("VIGIL_API_KEY", api_key.trim()),
            ("VIGIL_USER_KEY", user_key.trim()),
            ("VIGIL_ACCOUNT", account),
            ("VIGIL_DB", "demo"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let file: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        std::fs::write(dir.join(".vigil/credentials.env"), file).unwrap();
        Sandbox { dir, vars }
    }

    fn run_sh(&self, block: &Block, failures: &mut Vec<String>) {
        let steps = steps(block, "# → ", shell_step_end);
        let mut script = String::from("set -euo pipefail\n");
        for step in &steps {
            script.push_str(&format!("echo '{STEP}'\n"));
            for line in &step.lines {
                script.push_str(line);
                script.push('\n');
            }
        }
        let path = std::env::var("PATH").unwrap_or_default();
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&self.dir)
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .env("PATH", format!("{}:{path}", self.dir.join("bin").display()))
            .output()
            .expect("bash runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            failures.push(format!(
                "{}: failed ({})\n{}\n{}",
                block.at(),
                out.status,
                stdout.replace(&format!("{STEP}\n"), ""),
                String::from_utf8_lossy(&out.stderr)
            ));
            return;
        }
        check_steps(block, &steps, &stdout, failures);
    }

    fn run_sql(&self, env: &Env, block: &Block, failures: &mut Vec<String>) {
        let steps = steps(block, "-- → ", sql_step_end);
        let mut script = String::new();
        for step in &steps {
            script.push_str(&format!("\\echo {STEP}\n"));
            for line in &step.lines {
                script.push_str(line);
                script.push('\n');
            }
        }
        let mut psql = Command::new(workspace_root().join("scripts/pg-cluster.sh"));
        psql.args(["psql", env.cluster_dir.to_str().unwrap()])
            .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]);
        let (ok, stdout, stderr) = feed_script(psql, &script);
        if !ok {
            failures.push(format!(
                "{}: failed\n{}\n{stderr}",
                block.at(),
                stdout.replace(&format!("{STEP}\n"), "")
            ));
            return;
        }
        check_steps(block, &steps, &format!("{stdout}\n"), failures);
    }
}

#[test]
fn every_example_of_readme_and_docs_runs_and_prints_what_it_shows() {
    // As `make run` starts it: the local demo page's origin allowed.
    let env = vigil_e2e::start(&["--cors-origins", "http://localhost:3000"]);
    let sandbox = Sandbox::new(&env);
    let blocks: Vec<Block> = pages().iter().flat_map(|p| blocks(p)).collect();
    let runnable: Vec<&Block> = blocks.iter().filter(|b| b.runs()).collect();
    assert!(
        runnable.len() >= 20,
        "only {} runnable examples found",
        runnable.len()
    );
    let mut failures = Vec::new();
    for round in ["first", "second"] {
        for block in &runnable {
            let before = failures.len();
            match block.language() {
                "sh" => sandbox.run_sh(block, &mut failures),
                _ => sandbox.run_sql(&env, block, &mut failures),
            }
            for failure in &mut failures[before..] {
                *failure = format!("({round} round) {failure}");
            }
        }
        if !failures.is_empty() {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&sandbox.dir);
    assert!(
        failures.is_empty(),
        "{} of {} examples do not do what the page shows:\n\n{}",
        failures.len(),
        runnable.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_json_example_parses() {
    let mut bad = Vec::new();
    for block in pages().iter().flat_map(|p| blocks(p)) {
        if block.language() == "json" {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&block.body.join("\n")) {
                bad.push(format!("{}: {e}", block.at()));
            }
        }
    }
    assert!(bad.is_empty(), "JSON examples that do not parse: {bad:?}");
}

/// A heading's anchor as GitHub and mdBook make it.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap_or_default();
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_link_between_the_pages_leads_somewhere() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for rest in line.match_indices("](").map(|(at, _)| &line[at + 2..]) {
                let Some(end) = rest.find(')') else { continue };
                let target = &rest[..end];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
                let dest = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let at = format!("{}:{}: {target}", relative(&page), i + 1);
                if !dest.exists() {
                    broken.push(format!("{at} (no such file)"));
                } else if !fragment.is_empty() && !anchors(&dest).contains(fragment) {
                    broken.push(format!("{at} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_steps_of_an_example_and_what_they_show_are_told_apart() {
    // The harness itself: a pattern with `…` and one without.
    assert!(shows("{\"id\":…,\"ok\":true}", "{\"id\":42,\"ok\":true}\n"));
    assert!(!shows("{\"id\":…,\"ok\":true}", "{\"id\":42,\"ok\":false}"));
    assert!(shows("384", "384\n"));
    assert!(!shows("384", "385"));
    assert!(!shows("a…a", "a"));
    let block = Block {
        page: "x".into(),
        line: 1,
        info: "sh".into(),
        body: vec![
            "echo a".into(),
            "# → a".into(),
            "echo b; echo c".into(),
            "# → b".into(),
            "# → c".into(),
            "true".into(),
        ],
    };
    let steps = steps(&block, "# → ", shell_step_end);
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[1].expected.as_deref(), Some("b\nc"));
    assert!(steps[2].expected.is_none());
    let mut failures = Vec::new();
    check_steps(
        &block,
        &steps,
        &format!("{STEP}\na\n{STEP}\nb\nd\n{STEP}\n"),
        &mut failures,
    );
    assert_eq!(failures.len(), 1, "{failures:?}");

    // SQL: each statement is a step, so one without `-- →` prints apart.
    let block = Block {
        body: vec![
            "SELECT 1;".into(),
            "SELECT 2 -- two;".into(),
            "  + 0;".into(),
            "-- → 2".into(),
        ],
        ..block
    };
    let statements = self::steps(&block, "-- → ", sql_step_end);
    assert_eq!(statements.len(), 2);
    assert!(statements[0].expected.is_none());
    assert_eq!(statements[1].lines.len(), 2);
    assert_eq!(statements[1].expected.as_deref(), Some("2"));
}
