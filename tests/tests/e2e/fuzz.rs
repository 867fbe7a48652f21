//! The API against its own OpenAPI document, fuzzed: Schemathesis (pinned
//! by hash in `tests/fuzz/requirements.txt`, installed in a venv of its own
//! under `.vigil/`) runs every operation of `/openapi.json` against a live
//! sidecar, with valid credentials and without, for a bounded time: no 5xx,
//! no response the document does not allow, no request the document allows
//! that the server refuses, and every request it should refuse refused.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use vigil_e2e::{shared, workspace_root, Env, SidecarOptions};

/// Seconds each run may take (Schemathesis's `--max-time`).
const SECONDS_PER_RUN: &str = "75";

/// The venv holding Schemathesis, made (again) when the requirements change.
fn schemathesis() -> PathBuf {
    let requirements = workspace_root().join("tests/fuzz/requirements.txt");
    let venv = workspace_root().join(".vigil/fuzz-venv");
    let stamp = venv.join("requirements.txt");
    let want = std::fs::read(&requirements).expect("tests/fuzz/requirements.txt");
    if std::fs::read(&stamp).ok().as_ref() != Some(&want) {
        let _ = std::fs::remove_dir_all(&venv);
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(made.success(), "python3 -m venv failed");
        let installed = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "--require-hashes", "-r"])
            .arg(&requirements)
            .status()
            .expect("pip runs");
        assert!(installed.success(), "pip install --require-hashes failed");
        std::fs::write(&stamp, &want).unwrap();
    }
    venv.join("bin/schemathesis")
}

/// The sidecar's document with the body credentials fixed to `credentials`
/// (the fields of `BodyCredentials`), so generated bodies authenticate.
fn document_with(env: &Env, credentials: &Value) -> Value {
    let mut doc: Value = reqwest::blocking::get(env.url("/openapi.json"))
        .and_then(|r| r.json())
        .expect("the document");
    let properties = &mut doc["components"]["schemas"]["BodyCredentials"]["properties"];
    assert!(properties.is_object(), "BodyCredentials in the document");
    for (field, value) in credentials.as_object().unwrap() {
        properties[field] = json!({"type": "string", "const": value});
    }
    doc
}

/// Runs Schemathesis on `document` against `env`'s sidecar with `headers`;
/// panics with its report unless every check passed.
fn fuzz(env: &Env, what: &str, document: &Value, headers: &[String]) {
    let file = std::env::temp_dir().join(format!("vigil-fuzz-{}-{what}.json", std::process::id()));
    std::fs::write(&file, document.to_string()).unwrap();
    let mut command = Command::new(schemathesis());
    // Its cache of past failures goes beside the venv, out of the checkout.
    command.current_dir(workspace_root().join(".vigil"));
    command
        .arg("--config-file")
        .arg(workspace_root().join("tests/fuzz/schemathesis.toml"))
        .arg("run")
        .arg(&file)
        .args(["--url", &env.url("")])
        .args(["--checks", "all"])
        // Not asked of the server (tests/fuzz/schemathesis.toml says why).
        .args(["--exclude-checks", "negative_data_rejection"])
        .args(["--max-time", SECONDS_PER_RUN])
        // One worker: with two, CPython 3.11's ast module, which Hypothesis
        // uses from both threads, failed now and then ("AST constructor
        // recursion depth mismatch"), a fault of the tool, not of the server.
        .args(["--workers", "1"])
        .args(["--seed", "20261127"])
        .args(["--suppress-health-check", "all"])
        .args(["--no-color"]);
    for header in headers {
        command.args(["-H", header]);
    }
    let out = command.output().expect("schemathesis runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "schemathesis ({what}) found:\n{report}"
    );
}

#[test]
fn every_operation_answers_as_its_document_says() {
    // A sidecar of its own that never locks the fuzzer out: half of its
    // requests fail authentication on purpose.
    let env = &shared().with_sidecar(SidecarOptions {
        args: &["--auth-failure-burst", "1000000"],
        ..Default::default()
    });
    let api_key = env.admin_ok(&["keys", "create", "--name", "fuzz"]);
    let account = "fuzz@example.com";
    env.admin_ok(&["accounts", "create", account]);
    let user_key = env.admin_ok(&["user-keys", "create", account]);
    let credentials = json!({"userKey": user_key, "account": account, "dbName": "fuzzed"});
    let (status, _) = {
        let r = reqwest::blocking::Client::new()
            .post(env.url("/createDatabase"))
            .json(&credentials)
            .send()
            .unwrap();
        (r.status().as_u16(), ())
    };
    assert_eq!(status, 201);
    let with_key = [format!("x-api-key: {api_key}")];
    fuzz(
        env,
        "credentials",
        &document_with(env, &credentials),
        &with_key,
    );
    let plain: Value = reqwest::blocking::get(env.url("/openapi.json"))
        .and_then(|r| r.json())
        .unwrap();
    fuzz(env, "none", &plain, &[]);
}
