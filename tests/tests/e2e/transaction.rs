//! `POST /api/transaction` and its feedback over real HTTP, against the real
//! extension: assessments, history building up, feedback, and the bad-input matrix.

use std::sync::OnceLock;

use reqwest::blocking::{Client, Response};
use reqwest::StatusCode;
use serde_json::{json, Value};
use vigil_e2e::{start, Env};

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        start(&[
            "--auth-failure-burst",
            "100000",
            "--max-body-bytes",
            "65536",
        ])
    })
}

fn key() -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| env().admin_ok(&["keys", "create", "--name", "shop"]))
}

fn post_raw(path: &str, content_type: &str, body: impl Into<reqwest::blocking::Body>) -> Response {
    post_as(key(), path, content_type, body)
}

fn post_as(
    key: &str,
    path: &str,
    content_type: &str,
    body: impl Into<reqwest::blocking::Body>,
) -> Response {
    Client::new()
        .post(env().url(path))
        .header("x-api-key", key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .expect("request sent")
}

fn assess(body: &Value) -> Response {
    post_raw("/api/transaction", "application/json", body.to_string())
}

fn ok(response: Response) -> Value {
    assert_eq!(response.status(), StatusCode::OK);
    response.json().unwrap()
}

/// Transactions recorded for the key with this prefix (tests run in parallel).
fn recorded(prefix: &str) -> i64 {
    env()
        .psql(&format!(
            "SELECT count(*) FROM vigil.transactions t JOIN vigil.api_keys k ON k.id = t.api_key_id
             WHERE k.prefix = '{prefix}'"
        ))
        .parse()
        .unwrap()
}

/// Form B as the published client sends it.
fn form_b(email: &str) -> Value {
    json!({
        "customerEmail": email, "product": "headphones", "amount": 129.99,
        "location": "Berlin", "time": "2026-11-20T14:03:00Z", "customerProfile": "returning",
        "onlinePurchase": true, "paymentMethod": "credit card",
        "shippingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "billingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "customerName": "Erika Mustermann", "isVPN": false, "clientBrowser": "Firefox",
        "deviceType": "desktop", "ipAddress": "8.8.8.8", "deviceFingerprint": format!("fp-{email}"),
        "transactionFrequency": 2, "accountAge": 800, "emailDomain": email.split('@').nth(1).unwrap(),
        "addressMismatch": false, "twoFactorAuth": true, "referralSource": "newsletter",
        "proxyOrVPN": false, "orderQuantity": 1, "strictness": 50
    })
}

#[test]
fn an_assessment_has_the_superset_shape_and_is_recorded() {
    let a = ok(assess(&form_b("shape@example.com")));
    for field in [
        "transactionId",
        "RiskScore",
        "RiskLevel",
        "RiskLevelLabel",
        "ConfidenceLevel",
        "Result",
        "reasons",
    ] {
        assert!(a.get(field).is_some(), "{field} missing: {a}");
    }
    let score = a["RiskScore"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&score));
    assert!(["Passed", "Review", "Failed"].contains(&a["Result"].as_str().unwrap()));
    let id = a["transactionId"].as_str().unwrap();
    assert_eq!(
        env().psql(&format!(
            "SELECT k.name FROM vigil.transactions t JOIN vigil.api_keys k ON k.id = t.api_key_id WHERE t.id = '{id}'"
        )),
        "shop",
        "the record names the key that asked"
    );
}

#[test]
fn form_a_and_form_b_of_the_same_data_agree() {
    let b = json!({"customerEmail": "forms@example.com", "amount": 250, "isVPN": true,
                   "onlinePurchase": true, "time": "2026-11-20T03:15:00Z",
                   "billingAddress": "1 Main St, Springfield, USA", "paymentMethod": "card"});
    let a = json!({"customerEmail": "forms@example.com", "amount": "250", "isVPN": "Yes",
                   "onlinePurchase": "Yes", "time": "2026-11-20 03:15:00",
                   "billingAddress": "1 Main St, Springfield, USA", "paymentMethod": "card"});
    let (first, second) = (ok(assess(&b)), ok(assess(&a)));
    // The second call sees the first in its history; compare what the data alone gives.
    let codes = |v: &Value| {
        let mut c: Vec<String> = v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["code"].as_str().unwrap().to_owned())
            .filter(|c| !c.ends_with("_VELOCITY") && c != "AMOUNT_ABOVE_HISTORY")
            .collect();
        c.sort();
        c
    };
    assert_eq!(codes(&first), codes(&second));
}

/// What the assessment of transaction `id` was computed from (`features`).
fn features(id: &str) -> Value {
    serde_json::from_str(&env().psql(&format!(
        "SELECT features FROM vigil.transactions WHERE id = '{id}'"
    )))
    .unwrap()
}

#[test]
fn the_history_reads_the_same_once_vacuum_marks_pages_all_visible() {
    // Before VACUUM the history's index entries are checked against the heap;
    // after it, against the visibility map. Both must count the same rows.
    let body = |amount: u32| {
        json!({"customerEmail": "settled@example.com", "deviceFingerprint": "fp-settled",
               "ipAddress": "203.0.113.9", "amount": amount})
    };
    for amount in [10, 20, 30, 40] {
        ok(assess(&body(amount)));
    }
    let before = ok(assess(&body(50)));
    let f = features(before["transactionId"].as_str().unwrap());
    assert_eq!(f["velocity"]["email"], json!([4, 4]), "{f}");
    assert_eq!(f["velocity"]["device"], json!([4, 4]), "{f}");
    assert_eq!(f["customerAmountCount"], 4, "{f}");
    env().psql("VACUUM (FREEZE) vigil.transactions");
    let after = ok(assess(&body(60)));
    let f = features(after["transactionId"].as_str().unwrap());
    assert_eq!(f["velocity"]["email"], json!([5, 5]), "{f}");
    assert_eq!(f["velocity"]["device"], json!([5, 5]), "{f}");
    assert_eq!(f["velocity"]["ip"], json!([5, 5]), "{f}");
    assert_eq!(f["customerAmountCount"], 5, "{f}");
    // Amounts 10..50: the new 60 is 2 standard deviations above their mean.
    let z = f["amountZScore"].as_f64().unwrap();
    assert!((z - (60.0 - 30.0) / 250f64.sqrt()).abs() < 1e-9, "{f}");
}

#[test]
fn the_longest_accepted_strings_are_assessed_and_recorded() {
    // 1,000 characters of three bytes each, in every identity a btree indexes:
    // too long for an index entry as written, so they are keyed by a digest.
    let long = |c: &str| c.repeat(1_000);
    let body = json!({
        "customerEmail": format!("{}@example.com", "é".repeat(300)),
        "deviceFingerprint": long("指"), "paymentMethod": long("紙"),
        "customerName": long("名"), "billingAddress": long("址"),
    });
    let first = ok(assess(&body));
    let second = ok(assess(&body));
    let f = features(second["transactionId"].as_str().unwrap());
    assert_eq!(f["velocity"]["device"], json!([1, 1]), "{f}");
    assert_eq!(f["velocity"]["card"], json!([1, 1]), "{f}");
    assert_eq!(f["velocity"]["email"], json!([1, 1]), "{f}");
    let id = first["transactionId"].as_str().unwrap();
    assert_eq!(
        env().psql(&format!(
            "SELECT left(device, 7) || length(device) || ' ' || left(card, 7) || length(card)
             FROM vigil.transactions WHERE id = '{id}'"
        )),
        "sha256:71 sha256:71"
    );
}

#[test]
fn vpn_never_lowers_the_score_over_http() {
    let mut with = form_b("vpn-http@example.com");
    let mut without = with.clone();
    with["isVPN"] = json!(true);
    without["isVPN"] = json!(false);
    // Different identities so the two do not see each other in the history.
    with["customerEmail"] = json!("vpn-yes@example.com");
    without["customerEmail"] = json!("vpn-no@example.com");
    with["deviceFingerprint"] = json!("fp-vpn-yes");
    without["deviceFingerprint"] = json!("fp-vpn-no");
    with["ipAddress"] = json!("9.9.9.9");
    without["ipAddress"] = json!("9.9.9.10");
    // And cards of their own: another test's fraud label makes the shared
    // card a hard rule, which scores 100 either way.
    with["customerName"] = json!("Vera Yes");
    without["customerName"] = json!("Vera No");
    let (w, wo) = (ok(assess(&with)), ok(assess(&without)));
    assert!(
        w["RiskScore"].as_f64() > wo["RiskScore"].as_f64(),
        "{w} vs {wo}"
    );
}

#[test]
fn feedback_fails_the_same_payer_and_grades_a_shared_device() {
    let mut thief = form_b("thief@example.com");
    thief["customerName"] = json!("Max Dieb");
    thief["ipAddress"] = json!("203.0.113.66");
    let first = ok(assess(&thief));
    let id = first["transactionId"].as_str().unwrap();
    let label = post_raw(
        &format!("/api/transaction/{id}/feedback"),
        "application/json",
        json!({"label": "fraud", "note": "chargeback from the bank"}).to_string(),
    );
    assert_eq!(label.status(), StatusCode::OK);
    let answer: Value = label.json().unwrap();
    assert_eq!(answer["hardRules"], json!(["card", "email"]), "{answer}");
    assert_eq!(answer["linked"], json!(["device", "ip"]), "{answer}");
    // The same card with another e-mail: the same payer, Failed.
    let mut same_card = thief.clone();
    same_card["customerEmail"] = json!("alias@example.com");
    same_card["deviceFingerprint"] = json!("fp-alias");
    let later = ok(assess(&same_card));
    assert_eq!(later["RiskLevel"], 2, "{later}");
    assert_eq!(later["Result"], "Failed");
    // Another customer on the thief's device: graded evidence, not a hard rule.
    let mut neighbour = form_b("neighbour@example.com");
    neighbour["deviceFingerprint"] = json!("fp-thief@example.com");
    let shared = ok(assess(&neighbour));
    assert_ne!(shared["RiskLevel"], 2, "{shared}");
    let codes: Vec<&str> = shared["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"FRAUD_LINKED_DEVICE"), "{shared}");
    assert!(!codes.contains(&"CONFIRMED_FRAUD"), "{shared}");

    let unknown = post_raw(
        "/api/transaction/00000000-0000-4000-8000-000000000000/feedback",
        "application/json",
        json!({"label": "fraud"}).to_string(),
    );
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let bad_label = post_raw(
        &format!("/api/transaction/{id}/feedback"),
        "application/json",
        json!({"label": "maybe"}).to_string(),
    );
    assert_eq!(bad_label.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        bad_label.json::<Value>().unwrap()["error"]["field"],
        "label"
    );
    let bad_id = post_raw("/api/transaction/42/feedback", "application/json", "{}");
    assert_eq!(
        bad_id.json::<Value>().unwrap()["error"]["field"],
        "transactionId"
    );
}

#[test]
fn a_blocklisted_email_gets_level_2() {
    env().admin_ok(&[
        "blocklist",
        "add",
        "email",
        "Blocked@Example.com",
        "--reason",
        "test",
    ]);
    let a = ok(assess(&form_b("blocked@example.com")));
    assert_eq!(a["RiskLevel"], 2, "{a}");
}

#[test]
fn an_identity_only_key_may_not_assess() {
    let identity = env().admin_ok(&["keys", "create", "--name", "id only", "--scope", "identity"]);
    let response = Client::new()
        .post(env().url("/api/transaction"))
        .header("x-api-key", identity)
        .json(&form_b("scope@example.com"))
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let none = Client::new()
        .post(env().url("/api/transaction"))
        .body("not json at all")
        .send()
        .unwrap();
    assert_eq!(
        none.status(),
        StatusCode::UNAUTHORIZED,
        "authentication comes before parsing"
    );
}

#[test]
fn bad_input_is_refused_with_its_field_and_nothing_is_recorded() {
    let own = env().admin_ok(&["keys", "create", "--name", "bad input"]);
    let before = recorded(&own[..11]);
    let deep = format!("{{\"product\":{}1{}}}", "[".repeat(5000), "]".repeat(5000));
    let huge = "x".repeat(1001);
    let cases: Vec<(&str, String, u16, Option<&str>)> = vec![
        ("application/json", "not json".into(), 400, None),
        ("application/json", "[1, 2]".into(), 400, None),
        ("text/plain", json!({"amount": 5}).to_string(), 415, None),
        (
            "application/json",
            json!({"amount": true}).to_string(),
            400,
            Some("amount"),
        ),
        (
            "application/json",
            json!({"amount": -5}).to_string(),
            400,
            Some("amount"),
        ),
        (
            "application/json",
            json!({"amount": "12abc"}).to_string(),
            400,
            Some("amount"),
        ),
        (
            "application/json",
            json!({"isVPN": 3}).to_string(),
            400,
            Some("isVPN"),
        ),
        (
            "application/json",
            json!({"strictness": 101}).to_string(),
            400,
            Some("strictness"),
        ),
        (
            "application/json",
            json!({"time": "yesterday"}).to_string(),
            400,
            Some("time"),
        ),
        (
            "application/json",
            json!({"time": "2026-13-45 25:00:00"}).to_string(),
            400,
            Some("time"),
        ),
        (
            "application/json",
            json!({"accountAge": "old"}).to_string(),
            400,
            Some("accountAge"),
        ),
        (
            "application/json",
            json!({"ipAddress": "999.1.1.1"}).to_string(),
            400,
            Some("ipAddress"),
        ),
        (
            "application/json",
            json!({"customerName": huge}).to_string(),
            400,
            Some("customerName"),
        ),
        ("application/json", deep, 400, Some("product")),
        (
            "application/json",
            format!("{{\"product\":\"{}\"}}", "y".repeat(70_000)),
            413,
            None,
        ),
    ];
    for (content_type, body, status, field) in cases {
        let shown = body.chars().take(60).collect::<String>();
        let response = post_as(&own, "/api/transaction", content_type, body);
        assert_eq!(response.status().as_u16(), status, "{shown}");
        let error: Value = response.json().expect("a JSON error");
        assert_eq!(error["error"]["field"].as_str(), field, "{shown}: {error}");
    }
    assert_eq!(
        recorded(&own[..11]),
        before,
        "no refused request was recorded"
    );
    let good = post_as(
        &own,
        "/api/transaction",
        "application/json",
        json!({"amount": 5}).to_string(),
    );
    assert_eq!(good.status(), StatusCode::OK);
    assert_eq!(
        recorded(&own[..11]),
        before + 1,
        "the count above can see a record"
    );
}

#[test]
fn the_analysis_queries_run_on_real_records() {
    // Some labelled history: two frauds, one legit.
    for (email, label) in [
        ("an-1@example.com", "fraud"),
        ("an-2@example.com", "chargeback"),
        ("an-3@example.com", "legit"),
    ] {
        let a = ok(assess(&form_b(email)));
        let id = a["transactionId"].as_str().unwrap().to_owned();
        let response = post_raw(
            &format!("/api/transaction/{id}/feedback"),
            "application/json",
            json!({ "label": label }).to_string(),
        );
        assert_eq!(response.status(), StatusCode::OK);
    }
    // Other tests label transactions meanwhile: count before and after the run.
    let frauds = || -> i64 {
        env()
            .psql("SELECT count(*) FROM vigil.transaction_labels WHERE label IN ('fraud', 'chargeback')")
            .parse()
            .unwrap()
    };
    let frauds_before = frauds();
    let text = env().psql_file("sql/analysis.sql");
    for section in [
        "per day",
        "top reasons",
        "riskiest",
        "score distribution",
        "precision and recall",
        "model learned from labels",
    ] {
        assert!(text.contains(section), "no {section} section:\n{text}");
    }
    // Each cut-off's row counts every labelled fraud once, as caught or missed.
    let frauds_after = frauds();
    assert!(frauds_before >= 2);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|f| f.len() == 6 && f[0].parse::<u32>().is_ok_and(|c| c % 5 == 0))
        .collect();
    assert_eq!(rows.len(), 18, "cut-offs 10 to 95:\n{text}");
    for row in rows {
        let (tp, fn_): (i64, i64) = (row[1].parse().unwrap(), row[3].parse().unwrap());
        assert!(
            (frauds_before..=frauds_after).contains(&(tp + fn_)),
            "{row:?}"
        );
    }
}

/// The publisher's demo page posts this body (its field names, form A values).
#[test]
fn the_demo_pages_body_is_read_with_its_own_field_names() {
    let body = json!({
        "Email": "bob@mailinator.com", "Name": "Bob Smith", "Profile": "new",
        "amount": "2500", "isVPN": "Yes", "time": "2026-11-21 03:12:00",
    });
    let a = ok(assess(&body));
    let codes: Vec<&str> = a["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.contains(&"DISPOSABLE_EMAIL"),
        "Email is read as email: {a}"
    );
    assert!(
        a.get("ignoredFields").is_none(),
        "every field was read: {a}"
    );
    let lower = ok(assess(&json!({
        "email": "bob@mailinator.com", "customerName": "Bob Smith", "customerProfile": "new",
        "amount": "2500", "isVPN": "Yes", "time": "2026-11-21 03:12:00",
    })));
    assert_eq!(
        a["RiskScore"], lower["RiskScore"],
        "the same data scores the same"
    );
}

#[test]
fn fields_outside_the_transaction_are_listed_in_ignored_fields() {
    let a = ok(assess(
        &json!({"amount": 10, "ammount": 12, "ipAdress": "1.2.3.4"}),
    ));
    assert_eq!(a["ignoredFields"], json!(["ammount", "ipAdress"]), "{a}");
}

/// Invalid input is refused by the extension alone (the sidecar does not
/// validate transactions): its error names the field as the client spelled it.
#[test]
fn the_extensions_error_names_the_field_over_http() {
    let response = assess(&json!({"AMOUNT": "ten"}));
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let e: Value = response.json().unwrap();
    assert_eq!(e["error"]["field"], "AMOUNT", "{e}");
    assert_eq!(e["error"]["code"], "invalid_field", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid AMOUNT:"),
        "{e}"
    );
    // psql shows the same field as the error's COLUMN.
    let (ok, _, err) = env()
        .psql_as_app("\\set VERBOSITY verbose\nSELECT vigil.risk_score('{\"AMOUNT\": \"ten\"}');");
    assert!(
        !ok && err.contains("22023") && err.contains("COLUMN NAME:  AMOUNT"),
        "{err}"
    );
}

/// A failure inside the database that is no fault of the request (here: an
/// index the history reads is missing) is a 500 with a stable code, never a 400.
#[test]
fn an_internal_failure_is_not_a_client_error() {
    let cluster = vigil_e2e::Cluster::start();
    let env = cluster
        .env()
        .with_sidecar(vigil_e2e::SidecarOptions::default());
    let key = env.admin_ok(&["keys", "create", "--name", "test"]);
    cluster.psql("ALTER INDEX vigil.transactions_email RENAME TO transactions_email_gone");
    let response = Client::new()
        .post(env.url("/api/transaction"))
        .header("x-api-key", &key)
        .json(&json!({"customerEmail": "a@example.com", "amount": 10}))
        .send()
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let e: Value = response.json().unwrap();
    assert_eq!(e["error"]["code"], "internal", "{e}");
    assert!(e["error"].get("field").is_none(), "{e}");
}

/// Issue 60: refits run one at a time. Each adopts its model only when it
/// beats the one in force, which holds only if no other adopts one
/// meanwhile (three at once each adopted theirs). A refit whose transaction
/// is still open holds the lock; a second one is refused at once, naming
/// why, and runs once the first has committed.
#[test]
fn a_second_refit_while_one_runs_is_refused() {
    let env = env();
    let first = env.open_transaction("SELECT vigil.risk_refit();");
    let second = env
        .try_psql("SELECT vigil.risk_refit()")
        .expect_err("a second refit is refused while the first is open");
    assert!(second.contains("a refit is running"), "{second}");
    first.commit();
    let third = env.psql("SELECT vigil.risk_refit() ->> 'fitted'");
    assert!(third == "true" || third == "false", "{third}");
}
