//! A database crash under load, over HTTP: four clients post transactions
//! and store records while the whole PostgreSQL server is killed (SIGKILL,
//! no shutdown), the sidecar answers 503 with `Retry-After` while it is
//! down, and once it is back (crash recovery) the same sidecar serves again
//! without a restart; every transaction and record a client saw
//! acknowledged is there.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{wait_until, Cluster, SidecarOptions};

/// What the clients saw.
#[derive(Default)]
struct Seen {
    transactions: Mutex<Vec<String>>,
    records: Mutex<Vec<i64>>,
    unavailable: AtomicUsize,
    /// Anything but a 2xx or a 503 with Retry-After.
    unexpected: Mutex<Vec<String>>,
}

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
    let db = json!({"userKey": user_key, "account": "crash@example.com", "dbName": "notes"});
    let created = Client::new()
        .post(env.url("/createDatabase"))
        .json(&db)
        .send()
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);

    let seen = Seen::default();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for writer in 0..4 {
            let (env, seen, stop, api_key, db) = (&env, &seen, &stop, &api_key, &db);
            s.spawn(move || {
                let client = Client::builder()
                    .timeout(Duration::from_secs(30))
                    .build()
                    .unwrap();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let (path, request) = if writer % 2 == 0 {
                        let body = json!({"customerEmail": format!("w{writer}-{n}@example.com"), "amount": n});
                        ("/api/transaction", client.post(env.url("/api/transaction")).header("x-api-key", api_key).json(&body))
                    } else {
                        let mut body = db.clone();
                        body["title"] = json!(format!("writer {writer} note {n}"));
                        body["content"] = json!("written while the server may crash");
                        ("/storeEmbedding", client.post(env.url("/storeEmbedding")).json(&body))
                    };
                    let response = match request.send() {
                        Ok(r) => r,
                        Err(e) => {
                            seen.unexpected.lock().unwrap().push(format!("{path}: {e}"));
                            continue;
                        }
                    };
                    let status = response.status().as_u16();
                    let retry = response.headers().contains_key("retry-after");
                    let body: Value = response.json().unwrap_or(Value::Null);
                    match status {
                        200 => seen.transactions.lock().unwrap().push(body["transactionId"].as_str().unwrap().to_owned()),
                        201 => seen.records.lock().unwrap().push(body["id"].as_i64().unwrap()),
                        503 if retry => {
                            seen.unavailable.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        _ => {
                            seen.unexpected.lock().unwrap().push(format!("{path}: {status} {body}"));
                            continue;
                        }
                    }
                }
            });
        }
        let patience = Duration::from_secs(120);
        // Both kinds acknowledged (a store embeds its record, so it is the slower).
        let counts = || {
            (
                seen.transactions.lock().unwrap().len(),
                seen.records.lock().unwrap().len(),
            )
        };
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
