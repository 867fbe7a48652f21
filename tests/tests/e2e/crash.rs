//! A database crash under load, over HTTP: four clients post transactions
//! and store records while the whole PostgreSQL server is killed (SIGKILL,
//! no shutdown), the sidecar answers 503 with `Retry-After` while it is
//! down, and once it is back (crash recovery) the same sidecar serves again
//! without a restart; every transaction and record a client saw
//! acknowledged is there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::blocking::Client;
use serde_json::json;
use vigil_e2e::load::{Load, Role, Seen};
use vigil_e2e::{wait_until, Cluster, SidecarOptions};

#[test]
fn acknowledged_writes_survive_a_crash_and_the_sidecar_recovers_alone() {
    let cluster = Cluster::start();
    let env = cluster.env().with_sidecar(SidecarOptions {
        args: &["--request-timeout-ms", "5000"],
        ..Default::default()
    });
    // Keys whose rate the writers cannot reach: a 429 would be a failure here.
    let unlimited = ["--rate-per-second", "100000", "--burst", "100000"];
    let api_key = env.admin_ok(&[&["keys", "create", "--name", "crash"][..], &unlimited].concat());
    env.admin_ok(&["accounts", "create", "crash@example.com"]);
    let user_key = env.admin_ok(
        &[
            &["user-keys", "create", "crash@example.com"][..],
            &unlimited,
        ]
        .concat(),
    );
    let creds = json!({"userKey": user_key, "account": "crash@example.com"});
    let created = Client::new()
        .post(env.url("/createDatabase"))
        .json(&json!({"userKey": user_key, "account": "crash@example.com", "dbName": "notes"}))
        .send()
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);

    let seen = Seen::default();
    let stop = AtomicBool::new(false);
    let load = Load::new(&env, &api_key, &creds, "written while the server may crash");
    std::thread::scope(|s| {
        for writer in 0..4 {
            let role = if writer % 2 == 0 {
                Role::Assess
            } else {
                Role::Store { db: "notes" }
            };
            let (load, seen, stop) = (&load, &seen, &stop);
            s.spawn(move || load.client(writer, role, seen, stop));
        }
        let patience = Duration::from_secs(120);
        // Both kinds acknowledged (a store embeds its record, so it is the slower).
        let counts = || seen.counts();
        wait_until("writes of both kinds before the crash", patience, || {
            let (t, r) = counts();
            t >= 20 && r >= 10
        });
        cluster.crash();
        wait_until("503s while the server is down", patience, || {
            seen.unavailable.load(Ordering::SeqCst) >= 4
        });
        let (t0, r0) = counts();
        cluster.restart();
        wait_until(
            "writes of both kinds after recovery, same sidecar",
            patience,
            || {
                let (t, r) = counts();
                t >= t0 + 20 && r >= r0 + 10
            },
        );
        stop.store(true, Ordering::SeqCst);
    });

    let unexpected = seen.unexpected.into_inner().unwrap();
    assert!(
        unexpected.is_empty(),
        "answers other than 2xx or 503 with Retry-After: {unexpected:?}"
    );
    let transactions = seen.transactions.into_inner().unwrap();
    let records = seen.records.into_inner().unwrap();
    let quoted: Vec<String> = transactions.iter().map(|t| format!("'{t}'")).collect();
    let found = cluster.psql(&format!(
        "SELECT count(*) FROM vigil.transactions WHERE id IN ({})",
        quoted.join(",")
    ));
    assert_eq!(
        found,
        transactions.len().to_string(),
        "every acknowledged transaction"
    );
    let ids: Vec<String> = records.iter().map(i64::to_string).collect();
    let found = cluster.psql(&format!(
        "SELECT count(*) FROM vigil.vector_records WHERE id IN ({})",
        ids.join(",")
    ));
    assert_eq!(
        found,
        records.len().to_string(),
        "every acknowledged record"
    );
    println!(
        "crash: {} transactions and {} records acknowledged, all found; {} answers 503 while down",
        transactions.len(),
        records.len(),
        seen.unavailable.load(Ordering::SeqCst)
    );
}
