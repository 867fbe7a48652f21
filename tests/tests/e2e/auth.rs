//! Accounts and keys end to end: the admin command makes real keys, the sidecar
//! checks them over real HTTP(S), the database isolates accounts.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::StatusCode;
use serde_json::{json, Value};
use vigil_e2e::{start, wait_until, Env, Sidecar, SidecarOptions};

/// The environment of this file: failed attempts are not limited here (the
/// tests fail on purpose); one test checks that limit on a sidecar of its own.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| start(&["--auth-failure-burst", "100000"]))
}

fn client() -> Client {
    Client::new()
}

fn api_key(env: &Env, args: &[&str]) -> String {
    let mut all = vec!["keys", "create"];
    all.extend_from_slice(args);
    let key = env.admin_ok(&all);
    assert!(key.starts_with("vk_") && key.len() == 67, "a key: {key}");
    key
}

fn prefix(key: &str) -> &str {
    &key[..11]
}

/// An account with a user key (with extra `user-keys create` flags).
fn account_key(env: &Env, account: &str, args: &[&str]) -> String {
    env.admin_ok(&["accounts", "create", account]);
    let mut all = vec!["user-keys", "create", account];
    all.extend_from_slice(args);
    env.admin_ok(&all)
}

fn whoami(env: &Env, key: Option<&str>, query: &str) -> Response {
    let mut request = client().get(env.url(&format!("/api/key{query}")));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    request.send().expect("request sent")
}

fn create_database(env: &Env, body: Value) -> Response {
    client()
        .post(env.url("/createDatabase"))
        .json(&body)
        .send()
        .expect("request sent")
}

/// Asserts a JSON error of this status, code and field, that does not echo `secret`.
fn assert_refused(
    response: Response,
    status: u16,
    code: &str,
    field: Option<&str>,
    secret: Option<&str>,
) {
    assert_eq!(response.status().as_u16(), status, "status");
    let text = response.text().unwrap();
    let body: Value = serde_json::from_str(&text).expect("a JSON error body");
    assert_eq!(body["error"]["code"], code, "{text}");
    assert_eq!(body["error"]["field"].as_str(), field, "{text}");
    if let Some(secret) = secret {
        assert!(
            !text.contains(&secret[11..]),
            "the error echoes the key: {text}"
        );
    }
}

#[test]
fn api_key_failure_modes_have_their_status_and_error() {
    let env = env();
    assert_refused(
        whoami(env, None, ""),
        401,
        "missing_credentials",
        Some("x-api-key"),
        None,
    );
    let made_up = format!("vk_{}", "ab".repeat(32));
    assert_refused(
        whoami(env, Some(&made_up), ""),
        401,
        "unknown_key",
        Some("x-api-key"),
        Some(&made_up),
    );

    // Bytes that are not text cannot be a key: unknown, not a database error.
    let not_text = client()
        .get(env.url("/api/key"))
        .header(
            "x-api-key",
            reqwest::header::HeaderValue::from_bytes(b"vk_\xff\xfe").unwrap(),
        )
        .send()
        .unwrap();
    assert_refused(not_text, 401, "unknown_key", Some("x-api-key"), None);

    let identity_only = api_key(env, &["--name", "identity only", "--scope", "identity"]);
    assert_refused(
        whoami(env, Some(&identity_only), "?scope=transaction"),
        403,
        "key_scope",
        Some("x-api-key"),
        Some(&identity_only),
    );
    assert_eq!(
        whoami(env, Some(&identity_only), "?scope=identity").status(),
        StatusCode::OK
    );
    assert_refused(
        whoami(env, Some(&identity_only), "?scope=everything"),
        400,
        "invalid_field",
        Some("scope"),
        None,
    );

    let expired = api_key(
        env,
        &["--name", "old", "--expires-at", "2020-01-01T00:00:00Z"],
    );
    assert_refused(
        whoami(env, Some(&expired), ""),
        403,
        "key_expired",
        Some("x-api-key"),
        Some(&expired),
    );

    // A key that passed is believed for --auth-cache-ms (1 s by default), so
    // its revocation shows within that time, not necessarily at once.
    let revoked = api_key(env, &["--name", "gone"]);
    assert_eq!(whoami(env, Some(&revoked), "").status(), StatusCode::OK);
    env.admin_ok(&["keys", "revoke", prefix(&revoked)]);
    wait_until(
        "the revocation to show",
        Duration::from_secs(1) + Duration::from_millis(500),
        || whoami(env, Some(&revoked), "").status() != StatusCode::OK,
    );
    assert_refused(
        whoami(env, Some(&revoked), ""),
        403,
        "key_revoked",
        Some("x-api-key"),
        Some(&revoked),
    );

    let office = api_key(env, &["--name", "office", "--allow-ip", "10.0.0.0/8"]);
    assert_refused(
        whoami(env, Some(&office), ""),
        403,
        "ip_not_allowed",
        Some("x-api-key"),
        Some(&office),
    );
    let local = api_key(env, &["--name", "local", "--allow-ip", "127.0.0.0/8"]);
    assert_eq!(whoami(env, Some(&local), "").status(), StatusCode::OK);
}

#[test]
fn a_good_api_key_describes_itself() {
    let env = env();
    let key = api_key(env, &["--name", "shop", "--expires-in", "30d"]);
    let response = whoami(env, Some(&key), "?scope=transaction");
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().unwrap();
    assert_eq!(body["name"], "shop");
    assert_eq!(body["prefix"], prefix(&key));
    assert_eq!(body["scopes"], json!(["transaction", "identity"]));
    assert!(
        body["expiresAt"].as_str().unwrap().starts_with("20"),
        "{body}"
    );
    assert_eq!(body["rateLimit"], json!({"perSecond": 100.0, "burst": 200}));
}

#[test]
fn user_key_failure_modes_have_their_status_and_error() {
    let env = env();
    let alice = account_key(env, "alice@example.com", &["--database", "main"]);
    let bob = account_key(env, "bob@example.com", &[]);
    let body = |key: &str, account: &str, db: &str| json!({"userKey": key, "account": account, "dbName": db});

    assert_refused(
        create_database(
            env,
            json!({"account": "alice@example.com", "dbName": "main"}),
        ),
        401,
        "missing_credentials",
        Some("userKey"),
        None,
    );
    assert_refused(
        create_database(env, json!({"userKey": alice, "dbName": "main"})),
        401,
        "missing_credentials",
        Some("account"),
        Some(&alice),
    );
    let made_up = format!("vu_{}", "cd".repeat(32));
    assert_refused(
        create_database(env, body(&made_up, "alice@example.com", "main")),
        401,
        "unknown_key",
        Some("userKey"),
        Some(&made_up),
    );
    assert_refused(
        create_database(env, body(&bob, "alice@example.com", "main")),
        403,
        "wrong_account",
        Some("account"),
        Some(&bob),
    );
    assert_refused(
        create_database(env, body(&alice, "alice@example.com", "other")),
        403,
        "database_not_granted",
        Some("dbName"),
        Some(&alice),
    );

    let created = create_database(env, body(&alice, "alice@example.com", "main"));
    assert_eq!(created.status(), StatusCode::CREATED);
    let first: Value = created.json().unwrap();
    assert_eq!(first["dbName"], "main");
    assert_eq!(first["account"], "alice@example.com");
    let created_at = first["createdAt"].as_str().unwrap();
    assert!(created_at.len() == 19 && created_at.bytes().all(|b| b.is_ascii_digit()));
    let again = create_database(env, body(&alice, "alice@example.com", "main"));
    assert_eq!(again.status(), StatusCode::OK, "creating is idempotent");
    assert_eq!(again.json::<Value>().unwrap()["createdAt"], created_at);

    let expired = account_key(
        env,
        "carol@example.com",
        &["--expires-at", "2020-01-01T00:00:00Z"],
    );
    assert_refused(
        create_database(env, body(&expired, "carol@example.com", "main")),
        403,
        "key_expired",
        Some("userKey"),
        Some(&expired),
    );
    let revoked = account_key(env, "carol@example.com", &[]);
    env.admin_ok(&["keys", "revoke", prefix(&revoked)]);
    assert_refused(
        create_database(env, body(&revoked, "carol@example.com", "main")),
        403,
        "key_revoked",
        Some("userKey"),
        Some(&revoked),
    );

    // Input errors after authentication name their field and change nothing.
    assert_refused(
        create_database(env, json!({"userKey": bob, "account": "bob@example.com"})),
        400,
        "invalid_field",
        Some("dbName"),
        None,
    );
    assert_refused(
        create_database(env, body(&bob, "bob@example.com", "../etc")),
        400,
        "invalid_field",
        Some("dbName"),
        None,
    );
    assert_refused(
        create_database(
            env,
            json!({"userKey": bob, "account": "bob@example.com", "dbName": 7}),
        ),
        400,
        "invalid_json",
        Some("dbName"),
        None,
    );
    let not_json = client()
        .post(env.url("/createDatabase"))
        .body("dbName=main")
        .send()
        .unwrap();
    assert_refused(not_json, 415, "unsupported_media_type", None, None);
    assert_eq!(
        env.psql("SELECT count(*) FROM vigil.vector_databases WHERE account = 'bob@example.com'"),
        "0"
    );
}

fn retry_after(response: &Response) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in seconds")
}

#[test]
fn a_key_over_its_rate_gets_429_with_retry_after() {
    let env = env();
    let slow = api_key(
        env,
        &["--name", "slow", "--rate-per-second", "0.2", "--burst", "2"],
    );
    for _ in 0..2 {
        assert_eq!(whoami(env, Some(&slow), "").status(), StatusCode::OK);
    }
    let limited = whoami(env, Some(&slow), "");
    let wait = retry_after(&limited);
    assert!((1..=5).contains(&wait), "Retry-After {wait}");
    assert_refused(limited, 429, "rate_limited", None, Some(&slow));
    let other = api_key(env, &["--name", "unhurried"]);
    assert_eq!(
        whoami(env, Some(&other), "").status(),
        StatusCode::OK,
        "another key has its own bucket"
    );

    let user = account_key(
        env,
        "dave@example.com",
        &["--rate-per-second", "0.2", "--burst", "1"],
    );
    let body = json!({"userKey": user, "account": "dave@example.com", "dbName": "main"});
    assert_eq!(
        create_database(env, body.clone()).status(),
        StatusCode::CREATED
    );
    let limited = create_database(env, body);
    assert!(retry_after(&limited) >= 1);
    assert_refused(limited, 429, "rate_limited", None, Some(&user));
}

#[test]
fn failed_attempts_from_one_address_are_limited_but_not_valid_keys() {
    let strict = env().with_sidecar(SidecarOptions {
        args: &[
            "--auth-failure-burst",
            "3",
            "--auth-failures-per-minute",
            "1",
        ],
        ..Default::default()
    });
    let good = api_key(&strict, &["--name", "innocent"]);
    let user = account_key(&strict, "lockout@example.com", &[]);
    let user_body = json!({"userKey": user, "account": "lockout@example.com", "dbName": "main"});
    // Both used from this address before anyone guesses from it.
    assert_eq!(whoami(&strict, Some(&good), "").status(), StatusCode::OK);
    assert_eq!(
        create_database(&strict, user_body.clone()).status(),
        StatusCode::CREATED
    );
    let unseen = api_key(&strict, &["--name", "not used yet"]);
    let made_up = format!("vk_{}", "ef".repeat(32));
    for _ in 0..3 {
        assert_eq!(
            whoami(&strict, Some(&made_up), "").status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let locked = whoami(&strict, Some(&made_up), "");
    assert!((30..=60).contains(&retry_after(&locked)));
    assert_refused(locked, 429, "too_many_failures", None, None);
    // Keys that passed are not locked out with the address: one guesser
    // behind a shared address (a proxy, a NAT) locks out only the guesses.
    assert_eq!(whoami(&strict, Some(&good), "").status(), StatusCode::OK);
    assert_eq!(
        create_database(&strict, user_body).status(),
        StatusCode::OK,
        "the database exists: 200"
    );
    // A key this sidecar has not seen pass waits, like any guess, for the
    // address's next attempt.
    assert_eq!(
        whoami(&strict, Some(&unseen), "").status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    let body = json!({"userKey": made_up, "account": "x@example.com", "dbName": "main"});
    assert_eq!(
        create_database(&strict, body).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// Polls `f` until it is true or `within` passes.
fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn rotation_keeps_both_keys_until_the_old_one_expires() {
    let env = env();
    let old = api_key(env, &["--name", "rotating"]);
    let new = env.admin_ok(&["keys", "rotate", prefix(&old), "--old-key-lives", "4s"]);
    assert_ne!(old, new);
    assert_eq!(whoami(env, Some(&old), "").status(), StatusCode::OK);
    assert_eq!(whoami(env, Some(&new), "").status(), StatusCode::OK);
    let old_stops = eventually(Duration::from_secs(30), || {
        whoami(env, Some(&old), "").status() == StatusCode::FORBIDDEN
    });
    assert!(old_stops, "the old key expires");
    assert_refused(
        whoami(env, Some(&old), ""),
        403,
        "key_expired",
        Some("x-api-key"),
        None,
    );
    assert_eq!(whoami(env, Some(&new), "").status(), StatusCode::OK);
    assert_eq!(env.admin_ok(&["keys", "status", prefix(&old)]), "expired");
    assert_eq!(env.admin_ok(&["keys", "status", prefix(&new)]), "active");

    let user_old = account_key(env, "erin@example.com", &[]);
    let user_new = env.admin_ok(&["keys", "rotate", prefix(&user_old), "--old-key-lives", "0s"]);
    let body = |key: &str| json!({"userKey": key, "account": "erin@example.com", "dbName": "main"});
    assert_eq!(
        create_database(env, body(&user_new)).status(),
        StatusCode::CREATED
    );
    assert_refused(
        create_database(env, body(&user_old)),
        403,
        "key_expired",
        Some("userKey"),
        None,
    );
}

#[test]
fn as_the_app_role_another_accounts_rows_are_invisible() {
    let env = env();
    let a = account_key(env, "rls-a@example.com", &[]);
    let b = account_key(env, "rls-b@example.com", &[]);
    for (key, account) in [(&a, "rls-a@example.com"), (&b, "rls-b@example.com")] {
        for db in ["one", "two"] {
            let body = json!({"userKey": key, "account": account, "dbName": db});
            assert_eq!(create_database(env, body).status(), StatusCode::CREATED);
        }
    }
    let (ok, out, err) = env.psql_as_app(&format!(
        "SELECT count(*) FROM vigil.vector_databases;
         BEGIN;
         SELECT outcome FROM vigil.enter_account('rls-a@example.com', '{a}', NULL);
         SELECT count(*) FROM vigil.vector_databases WHERE account = 'rls-b@example.com';
         SELECT string_agg(DISTINCT account, ',') FROM vigil.vector_databases;
         COMMIT;
         SELECT count(*) FROM vigil.vector_databases;"
    ));
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["0", "ok", "0", "rls-a@example.com", "0"],
        "nothing before entering, only A's rows inside, nothing after the transaction"
    );
    // The app role cannot pick an account itself: once the extension's library
    // is loaded the setting refuses it; before that, a placeholder it sets is
    // dropped when the library loads, so it reads nothing either way.
    let (ok, _, err) =
        env.psql_as_app("SELECT vigil.current_account(); SET vigil.account = 'rls-b@example.com';");
    assert!(!ok && err.contains("permission denied"), "{err}");
    let (_, out, err) = env.psql_as_app(
        "SET vigil.account = 'rls-b@example.com'; SELECT count(*) FROM vigil.vector_databases;",
    );
    assert!(
        out.is_empty() || out == "0",
        "a placeholder opened B's rows: {out} {err}"
    );
    let (ok, _, err) = env.psql_as_app("SELECT count(*) FROM vigil.api_keys;");
    assert!(!ok && err.contains("permission denied"), "{err}");
}

/// Issue 60: in SQL, a user key limited to one database entered its
/// account with `db` NULL and then used the account's other databases.
/// The key's limit now holds for the whole transaction, as over HTTP.
#[test]
fn in_sql_a_key_limited_to_a_database_uses_no_other() {
    let env = env();
    let all = account_key(env, "limited@example.com", &[]);
    for db in ["mine", "theirs"] {
        let body = json!({"userKey": all, "account": "limited@example.com", "dbName": db});
        assert_eq!(create_database(env, body).status(), StatusCode::CREATED);
    }
    let limited = env.admin_ok(&[
        "user-keys",
        "create",
        "limited@example.com",
        "--database",
        "mine",
    ]);
    for entered_with in ["NULL", "'mine'"] {
        let enter = format!(
            "BEGIN; SELECT outcome FROM vigil.enter_account('limited@example.com', '{limited}', {entered_with});"
        );
        let (ok, out, _) = env.psql_as_app(&format!(
            "{enter}\nSELECT count(*) FROM vigil.list_records(0, 10, 'mine'); COMMIT;"
        ));
        assert!(
            ok && out.lines().collect::<Vec<_>>() == ["ok", "0"],
            "{out}"
        );
        for call in [
            "SELECT count(*) FROM vigil.list_records(0, 10, 'theirs')",
            "SELECT vigil.store_record('t', 'c', '{}', 'theirs')",
            "SELECT count(*) FROM vigil.keyword_search('word', 10, 'theirs')",
            "SELECT * FROM vigil.create_database('another')",
            "SELECT * FROM vigil.drop_database('theirs')",
        ] {
            let (ok, _, err) = env.psql_as_app(&format!("{enter}\n{call}; COMMIT;"));
            assert!(
                !ok && err.contains("the user key is limited to other databases"),
                "entered with {entered_with}, {call}: {err}"
            );
        }
    }
    // The key without a limit uses both, in the same way.
    let (ok, out, err) = env.psql_as_app(&format!(
        "BEGIN; SELECT outcome FROM vigil.enter_account('limited@example.com', '{all}', NULL);
         SELECT count(*) FROM vigil.list_records(0, 10, 'theirs'); COMMIT;"
    ));
    assert!(
        ok && out.lines().collect::<Vec<_>>() == ["ok", "0"],
        "{out} {err}"
    );
}

/// Issue 60: the application role ran `vigil.hnsw_check` on the records'
/// index: every tenant's counts, and a scan of the whole index.
#[test]
fn the_application_role_runs_no_maintenance_function() {
    let env = env();
    let (ok, _, err) =
        env.psql_as_app("SELECT vigil.hnsw_check('vigil.vector_records_embedding');");
    assert!(
        !ok && err.contains("permission denied for function hnsw_check"),
        "{err}"
    );
    // The owner still may.
    assert!(env
        .psql("SELECT vigil.hnsw_check('vigil.vector_records_embedding') ? 'vectors'")
        .contains('t'));
}

#[test]
fn behind_a_trusted_proxy_the_forwarded_address_is_checked() {
    let env = env();
    let key = api_key(env, &["--name", "via proxy", "--allow-ip", "10.0.0.0/8"]);
    let forwarded = |env: &Env, xff: &str| {
        client()
            .get(env.url("/api/key"))
            .header("x-api-key", &key)
            .header("x-forwarded-for", xff)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(
        forwarded(env, "10.1.2.3"),
        StatusCode::FORBIDDEN,
        "a header from an untrusted peer is ignored"
    );
    let proxied = env.with_sidecar(SidecarOptions {
        args: &["--trusted-proxies", "127.0.0.1/32"],
        ..Default::default()
    });
    assert_eq!(forwarded(&proxied, "10.1.2.3"), StatusCode::OK);
    assert_eq!(
        forwarded(&proxied, "10.1.2.3, 192.0.2.1"),
        StatusCode::FORBIDDEN,
        "the right-most untrusted hop is the client"
    );
}

#[test]
fn a_run_with_keys_logs_no_key() {
    let env = env();
    let dir = std::env::temp_dir().join(format!("vigil-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("sidecar.log");
    let sidecar = Sidecar::start(
        &env.database_url,
        SidecarOptions {
            args: &["--auth-failure-burst", "1000"],
            env: &[("RUST_LOG", "trace,tokio_postgres=trace")],
            log: Some(&log),
        },
    );
    let logged = Env {
        base: sidecar.base.clone(),
        ..env.clone()
    };
    let good = api_key(env, &["--name", "logged"]);
    let made_up = format!("vk_{}", "12".repeat(32));
    let user = account_key(env, "logs@example.com", &[]);
    let made_up_user = format!("vu_{}", "34".repeat(32));
    let requests: Vec<RequestBuilder> = vec![
        client()
            .get(logged.url("/api/key"))
            .header("x-api-key", &good),
        client()
            .get(logged.url("/api/key"))
            .header("x-api-key", &made_up),
        client().get(logged.url(&format!("/api/key?key={good}"))),
        client()
            .post(logged.url("/createDatabase"))
            .json(&json!({"userKey": user, "account": "logs@example.com", "dbName": "main"})),
        client().post(logged.url("/createDatabase")).json(
            &json!({"userKey": made_up_user, "account": "logs@example.com", "dbName": "main"}),
        ),
        client()
            .post(logged.url("/createDatabase"))
            .header("content-type", "application/json")
            .body(format!("{{\"userKey\": \"{user}\", \"account\": 5}}")),
    ];
    for request in requests {
        request.send().unwrap();
    }
    sidecar.stop();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("TRACE") || text.contains("DEBUG"),
        "the log is verbose"
    );
    assert!(
        text.matches("/createDatabase").count() >= 3,
        "requests are logged"
    );
    let server_log =
        std::fs::read_to_string(env.cluster_dir.join("server.log")).unwrap_or_default();
    for secret in [&good, &made_up, &user, &made_up_user] {
        assert!(!text.contains(&secret[11..]), "the sidecar log holds a key");
        assert!(
            !server_log.contains(&secret[11..]),
            "the server log holds a key"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn https_with_a_certificate_made_here() {
    let env = env();
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let dir = std::env::temp_dir().join(format!("vigil-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let tls = env.with_sidecar(SidecarOptions {
        args: &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        ..Default::default()
    });
    assert!(tls.base.starts_with("https://127.0.0.1:"), "{}", tls.base);

    let trusting = Client::builder()
        .use_rustls_tls()
        .add_root_certificate(
            reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap(),
        )
        .build()
        .unwrap();
    let api = api_key(env, &["--name", "over tls"]);
    let response = trusting
        .get(tls.url("/api/key"))
        .header("x-api-key", &api)
        .send()
        .expect("an HTTPS request succeeds");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.json::<Value>().unwrap()["name"], "over tls");

    let untrusting = Client::builder().use_rustls_tls().build().unwrap();
    assert!(
        untrusting.get(tls.url("/healthz")).send().is_err(),
        "a client that does not trust the certificate is refused"
    );
    let plain = tls.base.replace("https://", "http://");
    assert!(
        client().get(format!("{plain}/healthz")).send().is_err(),
        "no plain HTTP on the TLS port"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_admin_command_lists_and_refuses_clearly() {
    let env = env();
    let key = api_key(env, &["--name", "listed"]);
    let listing = env.admin_ok(&["keys", "list"]);
    assert!(
        listing.contains(prefix(&key)) && listing.contains("listed"),
        "{listing}"
    );
    assert!(
        !listing.contains(&key[11..]),
        "a listing never shows a secret"
    );
    let records: Value = serde_json::from_str(&env.admin_ok(&["keys", "list", "--json"])).unwrap();
    assert!(records
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["prefix"] == prefix(&key) && r["status"] == "active"));

    let user = account_key(env, "listed@example.com", &["--database", "main"]);
    let body = json!({"userKey": user, "account": "listed@example.com", "dbName": "main"});
    assert_eq!(create_database(env, body).status(), StatusCode::CREATED);
    let accounts = env.admin_ok(&["accounts", "list"]);
    let line = accounts
        .lines()
        .find(|l| l.starts_with("listed@example.com"))
        .unwrap_or_else(|| panic!("{accounts}"));
    let columns: Vec<&str> = line.split_whitespace().collect();
    // Keys, databases, then the risk settings: no network, the installation's review budget.
    assert_eq!(
        columns[columns.len() - 4..],
        ["1", "main", "false", "default"],
        "{line}"
    );
    let user_keys = env.admin_ok(&["user-keys", "list", "--account", "listed@example.com"]);
    assert!(user_keys.contains(prefix(&user)) && !user_keys.contains(&user[11..]));

    let unknown = env.admin(&["keys", "status", "vk_00000000"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no key with prefix vk_00000000"));
    let bad_account = env.admin(&["accounts", "create", "not an email"]);
    assert!(!bad_account.status.success());
    let no_url = std::process::Command::new(
        vigil_e2e::workspace_root().join("target/release/vigil-sidecar"),
    )
    .args(["keys", "list"])
    .env_remove("VIGIL_ADMIN_DATABASE_URL")
    .output()
    .unwrap();
    assert!(String::from_utf8_lossy(&no_url.stderr).contains("VIGIL_ADMIN_DATABASE_URL"));

    env.admin_ok(&["accounts", "delete", "listed@example.com"]);
    let gone = create_database(
        env,
        json!({"userKey": user, "account": "listed@example.com", "dbName": "main"}),
    );
    assert_eq!(
        gone.status(),
        StatusCode::UNAUTHORIZED,
        "its keys went with it"
    );
}

#[test]
fn with_the_auth_cache_off_a_revoked_key_is_refused_at_once() {
    let env = env();
    let sidecar = Sidecar::start(
        &env.database_url,
        SidecarOptions {
            args: &["--auth-cache-ms", "0"],
            env: &[],
            log: None,
        },
    );
    let uncached = Env {
        base: sidecar.base.clone(),
        ..env.clone()
    };
    let key = api_key(env, &["--name", "uncached"]);
    for _ in 0..3 {
        assert_eq!(whoami(&uncached, Some(&key), "").status(), StatusCode::OK);
    }
    env.admin_ok(&["keys", "revoke", prefix(&key)]);
    assert_refused(
        whoami(&uncached, Some(&key), ""),
        403,
        "key_revoked",
        Some("x-api-key"),
        Some(&key),
    );
}

#[test]
fn the_admin_command_into_a_reader_that_stopped_reading() {
    let env = env();
    // A pipe whose reader is closed before the command starts: `| head -0`.
    let run = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        std::process::Command::new(vigil_e2e::workspace_root().join("target/release/vigil-sidecar"))
            .args(args)
            .env("VIGIL_ADMIN_DATABASE_URL", &env.admin_url)
            .stdout(writer)
            .output()
            .expect("vigil-sidecar runs")
    };
    // A listing ends quietly, as any Unix tool does.
    let listing = run(&["keys", "list"]);
    let stderr = String::from_utf8_lossy(&listing.stderr);
    assert!(listing.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A new key is shown only once: one that could not be printed says so.
    let created = run(&["keys", "create", "--name", "unprinted"]);
    let stderr = String::from_utf8_lossy(&created.stderr);
    assert!(!created.status.success());
    assert!(
        stderr.contains("could not print its key") && stderr.contains("revoke it"),
        "{stderr}"
    );
}
