//! `make run` and `make test` side by side: the extension tests install their
//! test build into a private copy of PostgreSQL (scripts/pgrx-test.sh), so a
//! server that serves from the system installation, with vigil.so mapped in
//! several pooled backends, goes on answering as before and logs no error.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

use reqwest::blocking::Client;
use serde_json::json;
use vigil_e2e::{workspace_root, Cluster, Env, SidecarOptions};

/// The system's installed vigil.so: (inode, modification time).
fn installed_library() -> (PathBuf, u64, i64) {
    let out = Command::new("/usr/lib/postgresql/15/bin/pg_config")
        .arg("--pkglibdir")
        .output()
        .expect("pg_config runs");
    let path = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("vigil.so");
    let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, meta.ino(), meta.mtime())
}

/// Requests that use the extension in several backends at once: assessments,
/// a database, an unknown key. Returns their statuses, in order.
fn requests(env: &Env, api_key: &str, user_key: &str) -> Vec<u16> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|n| {
                s.spawn(move || {
                    let client = Client::new();
                    let request = match n % 3 {
                        0 => client
                            .post(env.url("/api/transaction"))
                            .header("x-api-key", api_key)
                            .json(&json!({"customerEmail": format!("b{n}@example.com"), "amount": 10 + n})),
                        1 => client.post(env.url("/createDatabase")).json(
                            &json!({"userKey": user_key, "account": "side@example.com", "dbName": format!("db{n}")}),
                        ),
                        _ => client
                            .post(env.url("/api/transaction"))
                            .header("x-api-key", "vk_not_a_key")
                            .json(&json!({"amount": 1})),
                    };
                    request.send().expect("request sent").status().as_u16()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn the_extension_tests_leave_a_running_server_alone() {
    let cluster = Cluster::start();
    let env = cluster.env().with_sidecar(SidecarOptions::default());
    let api_key = env.admin_ok(&["keys", "create", "--name", "test"]);
    env.admin_ok(&["accounts", "create", "side@example.com"]);
    let user_key = env.admin_ok(&["user-keys", "create", "side@example.com"]);

    let expected: Vec<u16> = (0..12)
        .map(|n| match n % 3 {
            0 => 200,
            1 => 201,
            _ => 401,
        })
        .collect();
    assert_eq!(requests(&env, &api_key, &user_key), expected);
    let backends: i64 = cluster
        .psql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'vigil_app'")
        .parse()
        .unwrap();
    assert!(
        backends >= 2,
        "the sidecar pools several backends ({backends})"
    );
    let library = installed_library();

    // The step `make test` runs, on one quick test.
    let status = Command::new(workspace_root().join("scripts/pgrx-test.sh"))
        .arg("api_key_outcomes")
        .status()
        .expect("scripts/pgrx-test.sh runs");
    assert!(status.success(), "the extension test passes");

    assert_eq!(installed_library(), library, "vigil.so was not rewritten");
    let again: Vec<u16> = requests(&env, &api_key, &user_key)
        .into_iter()
        .enumerate()
        // The databases exist now: 200 instead of 201.
        .map(|(n, s)| if n % 3 == 1 && s == 200 { 201 } else { s })
        .collect();
    assert_eq!(again, expected, "the same requests get the same answers");
    let log = cluster.server_log();
    let problems: Vec<_> = log
        .lines()
        .filter(|l| {
            ["ERROR:", "FATAL:", "PANIC:", "terminated by signal"]
                .iter()
                .any(|p| l.contains(p))
        })
        .collect();
    assert!(problems.is_empty(), "the server logged: {problems:#?}");
}
