//! Tenants for risk and identity (issue 61): the four attacks that one API
//! key's holder made on another merchant's customers, each now leaving the
//! other account's scores, labels and model untouched; and the network layer,
//! which shares a confirmed fraud only between accounts that both opted in,
//! as bounded evidence. Two accounts, A (the attacker) and B, each with a
//! transaction-scope key, on one installation.
//!
//! `cargo test --release -p vigil-e2e --test e2e tenants:: -- --nocapture`

use std::sync::OnceLock;

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{shared, Env};

fn post(env: &Env, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = Client::new()
        .post(env.url(path))
        .header("x-api-key", key)
        .json(body)
        .send()
        .expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

fn assess(env: &Env, key: &str, body: &Value) -> Value {
    let (status, answer) = post(env, key, "/api/transaction", body);
    assert_eq!(status, 200, "{answer}");
    answer
}

fn label(env: &Env, key: &str, id: &str, label: &str) -> (u16, Value) {
    post(
        env,
        key,
        &format!("/api/transaction/{id}/feedback"),
        &json!({ "label": label }),
    )
}

fn codes(a: &Value) -> Vec<String> {
    a["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["code"].as_str().map(str::to_owned))
        .collect()
}

/// The keys of A and B, made once (each test uses its own customers).
fn keys(env: &Env) -> &'static (String, String) {
    static KEYS: OnceLock<(String, String)> = OnceLock::new();
    KEYS.get_or_init(|| {
        // A rate that A's hundreds of requests stay within.
        let rate = ["--rate-per-second", "1000", "--burst", "1000"];
        (
            env.tenant_key_with("attacker", &["transaction"], &rate).0,
            env.tenant_key_with("merchant", &["transaction"], &rate).0,
        )
    })
}

/// An ordinary purchase of B's customer `email`, on `device` and `ip`.
fn ordinary(email: &str, device: &str, ip: &str) -> Value {
    json!({
        "customerEmail": email, "deviceFingerprint": device, "ipAddress": ip,
        "amount": 120, "paymentMethod": "card", "accountAge": 400,
        "billingAddress": "1 Main St, Springfield, USA"
    })
}

#[test]
fn a_label_on_an_invented_transaction_does_not_touch_another_accounts_customer() {
    let env = shared();
    let (a, b) = keys(env);
    let customer = "carol@shop-b.example";
    let before = assess(env, b, &ordinary(customer, "dev-carol", "198.51.100.20"));
    assert_eq!(before["Result"], "Passed", "{before}");
    // A invents a purchase with B's customer's e-mail, and labels it fraud.
    let invented = assess(env, a, &ordinary(customer, "dev-a", "203.0.113.66"));
    let id = invented["transactionId"].as_str().unwrap();
    let (status, marks) = label(env, a, id, "fraud");
    assert_eq!(status, 200, "{marks}");
    assert!(
        marks["hardRules"]
            .as_array()
            .unwrap()
            .contains(&json!("email")),
        "{marks}"
    );
    // A's own next purchase with that e-mail fails: the label holds in A.
    let in_a = assess(env, a, &ordinary(customer, "dev-a", "203.0.113.66"));
    assert_eq!(in_a["Result"], "Failed", "{in_a}");
    // B's customer is scored as before.
    let after = assess(env, b, &ordinary(customer, "dev-carol", "198.51.100.20"));
    assert_eq!(after["Result"], "Passed", "{after}");
    assert!(
        (after["RiskScore"].as_f64().unwrap() - before["RiskScore"].as_f64().unwrap()).abs() < 5.0,
        "before {before}, after {after}"
    );
    assert!(
        !codes(&after).iter().any(|c| c.contains("FRAUD")),
        "{after}"
    );
}

#[test]
fn another_accounts_traffic_on_a_shared_device_and_ip_does_not_move_a_score() {
    let env = shared();
    let (a, b) = keys(env);
    let (device, ip) = ("dev-shared-7", "198.51.100.77");
    let before = assess(env, b, &ordinary("dave@shop-b.example", device, ip));
    // A's burst of purchases by 40 e-mails on B's customer's device and IP.
    for n in 0..40 {
        assess(env, a, &ordinary(&format!("bot{n}@a.example"), device, ip));
    }
    let after = assess(env, b, &ordinary("dave@shop-b.example", device, ip));
    assert_eq!(
        after["Result"], before["Result"],
        "before {before}, after {after}"
    );
    let moved: Vec<String> = codes(&after)
        .into_iter()
        .filter(|c| c.starts_with("DEVICE") || c.starts_with("IP"))
        .filter(|c| !codes(&before).contains(c))
        .collect();
    assert!(
        moved.is_empty(),
        "A's traffic reached B: {moved:?} in {after}"
    );
    // In A, the same burst is velocity and reuse.
    let in_a = assess(env, a, &ordinary("bot99@a.example", device, ip));
    let c = codes(&in_a);
    assert!(
        c.iter().any(|c| c == "DEVICE_VELOCITY") && c.iter().any(|c| c == "DEVICE_SHARED"),
        "{in_a}"
    );
}

#[test]
fn a_label_on_another_accounts_transaction_is_not_found() {
    let env = shared();
    let (a, b) = keys(env);
    let theirs = assess(
        env,
        b,
        &ordinary("erin@shop-b.example", "dev-erin", "198.51.100.30"),
    );
    let id = theirs["transactionId"].as_str().unwrap();
    let (status, body) = label(env, a, id, "fraud");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{body}"
    );
    // As a transaction that does not exist is: nothing says it does.
    let (status, missing) = label(env, a, "00000000-0000-4000-8000-000000000000", "fraud");
    assert_eq!(status, 404);
    assert_eq!(
        body["error"]["message"]
            .as_str()
            .map(|m| m.replace(id, "ID")),
        missing["error"]["message"]
            .as_str()
            .map(|m| m.replace("00000000-0000-4000-8000-000000000000", "ID")),
    );
    assert_eq!(
        env.psql(&format!(
            "SELECT count(*) FROM vigil.feedback WHERE transaction_id = '{id}'"
        )),
        "0"
    );
    // B labels its own.
    assert_eq!(label(env, b, id, "legit").0, 200);
}

#[test]
fn one_accounts_labels_fit_a_model_for_that_account_alone() {
    let env = shared();
    let (a, b) = keys(env);
    // 240 labelled purchases from A over nine days: 48 frauds of 800 and 192
    // legitimate ones of 120, which the rules score alike.
    for i in 0..240 {
        let fraud = i % 5 == 0;
        let body = json!({
            "customerEmail": format!("{}{i}@model-a.example", if fraud { "f" } else { "l" }),
            "time": format!("2026-03-0{}T14:00:00Z", 1 + i % 9),
            "amount": if fraud { 800 } else { 120 },
            "accountAge": 400,
        });
        let id = assess(env, a, &body)["transactionId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            label(env, a, &id, if fraud { "chargeback" } else { "legit" }).0,
            200
        );
    }
    // What the sidecar's schedule runs: each account refits on its own labels.
    let refits = env.psql(
        "SELECT string_agg(account || '=' || (outcome ->> 'adopted'), ',' ORDER BY account)
         FROM vigil.risk_refit_accounts() WHERE account LIKE 'attacker-%'",
    );
    assert!(refits.ends_with("=true"), "{refits}");
    let purchase = |email: &str| json!({"customerEmail": email, "time": "2026-03-09T15:00:00Z", "amount": 800, "accountAge": 400});
    let in_a = assess(env, a, &purchase("new@model-a.example"));
    assert!(codes(&in_a).iter().any(|c| c == "LEARNED_MODEL"), "{in_a}");
    // B's customers are scored by B's own scoring: the rules alone.
    let in_b = assess(env, b, &purchase("frank@shop-b.example"));
    assert!(
        !codes(&in_b).iter().any(|c| c == "LEARNED_MODEL"),
        "A's model scored B's customer: {in_b}"
    );
}

/// An analyst in psql enters an account and sees its rows, no other's; the
/// application role without an account sees none.
#[test]
fn an_analyst_who_entered_an_account_sees_its_transactions_only() {
    let env = shared();
    let (a, b) = keys(env);
    assess(
        env,
        b,
        &ordinary("gina@shop-b.example", "dev-gina", "198.51.100.40"),
    );
    assess(
        env,
        a,
        &ordinary("gina@a.example", "dev-gina-a", "198.51.100.41"),
    );
    let as_app = |sql: &str| {
        let (ok, out, err) = env.psql_as_app(sql);
        assert!(ok, "{err}");
        out.trim().to_owned()
    };
    // Entered for the rest of the transaction, as `vigil.enter_account` is.
    let seen = as_app(&format!(
        "BEGIN;
         SELECT vigil.enter_api_key('{b}') IS NOT NULL;
         SELECT count(*) FILTER (WHERE email LIKE '%@shop-b.example') > 0,
                count(*) FILTER (WHERE email NOT LIKE '%@shop-b.example') FROM vigil.transactions;
         COMMIT;"
    ));
    assert_eq!(seen.lines().last(), Some("t|0"), "{seen}");
    assert_eq!(as_app("SELECT count(*) FROM vigil.transactions"), "0");
}

/// The network layer: A's fraud label on B's customer's e-mail reaches B only
/// when both accounts opted in to share risk signals, and then as bounded
/// evidence (`NETWORK_FRAUD_LINK`, at most 20 points), never a failure alone.
#[test]
fn the_network_shares_a_fraud_only_between_accounts_that_opted_in_and_boundedly() {
    let env = shared();
    let (a, a_account) = env.tenant_key("network attacker", &["transaction"]);
    let (b, b_account) = env.tenant_key("network merchant", &["transaction"]);
    let share = |account: &str, on: bool| {
        env.admin_ok(&[
            "accounts",
            "set",
            account,
            "--share-risk-signals",
            if on { "true" } else { "false" },
        ]);
    };
    let customer = "hana@shop-b.example";
    let purchase = || ordinary(customer, "dev-hana", "198.51.100.50");
    let before = assess(env, &b, &purchase());
    // A invents a purchase with B's customer's e-mail, and labels it fraud.
    let invented = assess(env, &a, &ordinary(customer, "dev-a2", "203.0.113.67"));
    let id = invented["transactionId"].as_str().unwrap();
    assert_eq!(label(env, &a, id, "fraud").0, 200);
    let network = |a: &Value| {
        a["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["code"] == "NETWORK_FRAUD_LINK")
            .cloned()
    };
    // One side opted in, then the other alone: nothing reaches B.
    for (a_on, b_on) in [(true, false), (false, true)] {
        share(&a_account, a_on);
        share(&b_account, b_on);
        let after = assess(env, &b, &purchase());
        assert_eq!(network(&after), None, "A {a_on}, B {b_on}: {after}");
        assert_eq!(after["Result"], before["Result"], "{after}");
    }
    // Both: bounded evidence, never a failure alone; what it says names no value.
    share(&a_account, true);
    share(&b_account, true);
    let after = assess(env, &b, &purchase());
    let link = network(&after).unwrap_or_else(|| panic!("{after}"));
    let points = link["points"].as_f64().unwrap();
    assert!((5.0..=20.0).contains(&points), "{link}");
    assert_ne!(after["Result"], "Failed", "{after}");
    assert!(
        !link["detail"].as_str().unwrap().contains(customer),
        "{link}"
    );
    // What the network holds is hashes: no e-mail in it.
    assert_eq!(
        env.psql(&format!(
            "SELECT bool_and(hash ~ '^[0-9a-f]{{64}}$' AND kind <> 'ip') AND count(*) >= 2
             FROM vigil.network_fraud WHERE account = '{a_account}'"
        )),
        "t",
        "the e-mail, device (and card) of A's labelled purchase, as hashes"
    );
    // A leaves the network: its hashes go with it.
    share(&a_account, false);
    assert_eq!(network(&assess(env, &b, &purchase())), None);
}

/// A key revoked in another session enters nothing in a backend that used
/// it a moment before: each backend keeps the keys it read (0.18.0), and
/// forgets them when a change to the keys commits.
#[test]
fn a_key_revoked_elsewhere_enters_nothing_where_it_was_kept() {
    let env = shared();
    let (key, _) = env.tenant_key("revoked-elsewhere", &["transaction"]);
    let revoke = env.psql_command(&format!("SELECT vigil.revoke_key('{}')", &key[..11]));
    let (ok, out, err) = env.psql_as_app(&format!(
        "SELECT vigil.enter_api_key('{key}') > 0;\n\
         SELECT vigil.enter_api_key('{key}') > 0;\n\
         \\! {revoke} >/dev/null\n\
         SELECT vigil.enter_api_key('{key}') > 0;\n"
    ));
    assert_eq!(out, "t\nt", "entered twice before the revocation: {err}");
    assert!(!ok, "entered after it: {out}");
    assert!(err.contains("the API key is not valid"), "{err}");
}
