//! Clients that attack or misbehave cost the sidecar little and hold up no
//! one else: an unauthenticated body is refused after its first 64 KiB,
//! whatever its length; a client sending its body slowly holds no database
//! connection meanwhile; a database that holds a lock makes a request wait
//! no longer than the request timeout, answered 503 with `Retry-After`, and
//! the connection of a request that timed out is never handed on.
//!
//! Each test has a sidecar of its own, so its memory and its pool are its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{shared, Env, SidecarOptions};

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn account(env: &Env, name: &str) -> Value {
    let account = format!("{name}@example.com");
    env.admin_ok(&["accounts", "create", &account]);
    let user_key = env.admin_ok(&["user-keys", "create", &account]);
    json!({"userKey": user_key, "account": account, "dbName": "main"})
}

fn post(env: &Env, path: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(env.url(path))
        .json(body)
        .send()
        .expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

/// Sends `body` to `/storeEmbeddings` from six clients at once, its length
/// declared (`Content-Length`) or, `chunked`, not; the statuses of the
/// answers (None: the upload broke off, refused early).
fn six_at_once(env: &Env, body: &str, chunked: bool) -> Vec<Option<u16>> {
    at_once(env, 6, body, chunked)
}

/// As [`six_at_once`], from `clients` clients.
fn at_once(env: &Env, clients: usize, body: &str, chunked: bool) -> Vec<Option<u16>> {
    std::thread::scope(|s| {
        let sent: Vec<_> = (0..clients)
            .map(|_| {
                s.spawn(move || {
                    let body = if chunked {
                        reqwest::blocking::Body::new(std::io::Cursor::new(body.as_bytes().to_vec()))
                    } else {
                        body.to_owned().into()
                    };
                    client()
                        .post(env.url("/storeEmbeddings"))
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .ok()
                        .map(|r| r.status().as_u16())
                })
            })
            .collect();
        sent.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

/// Issue 60, part 7: a long body whose credentials come last is read within
/// the shared budget, and its credentials are checked before its fields are
/// parsed. Three 48 MB bodies with a wrong key at once, their lengths
/// declared, with the default budget of 64 MiB, grow the
/// sidecar's peak by under 80 MiB: 145 MB when each read was parsed whole
/// before its credentials were checked.
#[test]
fn a_body_is_not_parsed_before_its_late_credentials_are_checked() {
    let env = shared().with_sidecar(SidecarOptions::default());
    let mib = 1048576.0;
    let peak = || env.metric("vigil_process_peak_resident_bytes");
    let before = peak();
    let pad = "x".repeat(48_000_000);
    let wrong = format!("vu_{}", "0".repeat(64));
    let last = format!(
        r#"{{"records":[{{"title":"t","content":"{pad}"}}],"userKey":"{wrong}","account":"nobody@example.com","dbName":"main"}}"#
    );
    // Lengths declared: one body takes the budget and is read whole, the
    // others are refused at once (sent in chunks, all three could be cut
    // off part-read when the budget ran out, and none reach the check).
    let statuses = at_once(&env, 3, &last, false);
    assert!(
        statuses.iter().flatten().all(|&s| s == 401 || s == 503),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&Some(401)),
        "one body at least is read whole and refused for its key: {statuses:?}"
    );
    let grown = (peak() - before) / mib;
    eprintln!("three bodies of 48 MB, credentials last: the peak grew {grown:.1} MiB");
    assert!(
        grown < 80.0,
        "three bodies of 48 MB with their credentials last grew the sidecar's peak by {grown:.0} MiB"
    );
}

#[test]
fn unauthenticated_bodies_cost_the_sidecar_little_memory() {
    let env = shared().with_sidecar(SidecarOptions {
        args: &["--unauthenticated-body-mb", "16"],
        ..Default::default()
    });
    let mib = 1048576.0;
    let peak = || env.metric("vigil_process_peak_resident_bytes");
    let before = peak();
    // Maximal batches (the limit is 64 MiB) with a user key that is wrong.
    let pad = "x".repeat(60 << 20);
    let wrong = format!("vu_{}", "0".repeat(64));
    let first = format!(
        r#"{{"userKey":"{wrong}","account":"nobody@example.com","dbName":"main","records":[{{"title":"t","content":"{pad}"}}]}}"#
    );
    let statuses = six_at_once(&env, &first, false);
    assert!(statuses.iter().flatten().all(|&s| s == 401), "{statuses:?}");
    let grown = |phase: &str| {
        let grown = (peak() - before) / mib;
        eprintln!("six bodies of 60 MiB, {phase}: the peak grew {grown:.1} MiB");
        grown
    };
    let first_grown = grown("credentials first");
    assert!(
        first_grown < 32.0,
        "credentials first: six bodies of 60 MiB grew the sidecar's peak by {first_grown:.0} MiB"
    );
    // The credentials after the records: such bodies share a budget (16 MiB
    // here). One that declares more than it can hold is refused before it
    // is read; one sent in chunks is read within it and refused past it.
    let last = format!(
        r#"{{"records":[{{"title":"t","content":"{pad}"}}],"userKey":"{wrong}","account":"nobody@example.com","dbName":"main"}}"#
    );
    let statuses = six_at_once(&env, &last, false);
    assert!(statuses.iter().flatten().all(|&s| s == 503), "{statuses:?}");
    let declared = grown("credentials last, length declared");
    assert!(
        declared < first_grown + 8.0,
        "credentials last, length declared: six bodies of 60 MiB grew the sidecar's peak by {declared:.0} MiB"
    );
    let statuses = six_at_once(&env, &last, true);
    assert!(statuses.iter().flatten().all(|&s| s == 503), "{statuses:?}");
    let chunked = grown("credentials last, in chunks");
    assert!(
        chunked < 48.0,
        "credentials last, in chunks: six bodies of 60 MiB grew the sidecar's peak by {chunked:.0} MiB"
    );

    // Within the budget, credentials may come anywhere.
    let me = account(&env, "latecredentials");
    assert!([200, 201].contains(&post(&env, "/createDatabase", &me).0));
    let mut late = json!({"records": [{"title": "a", "content": "b ".repeat(40_000)}]});
    late.as_object_mut()
        .unwrap()
        .extend(me.as_object().unwrap().clone());
    let text = late.to_string();
    assert!(
        text.find("userKey").unwrap() > 64 * 1024,
        "the credentials come late"
    );
    let response = client()
        .post(env.url("/storeEmbeddings"))
        .header("content-type", "application/json")
        .body(text)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
}

/// A request whose body is sent in two halves over a raw connection, the
/// second when [`Trickle::finish`] says.
struct Trickle {
    stream: TcpStream,
    rest: Vec<u8>,
}

impl Trickle {
    /// Sends the head and the first half of `body`, once the server has
    /// asked for the body (`100 Continue`): by then it has checked the key.
    fn start(env: &Env, path: &str, key: &str, body: &[u8]) -> Trickle {
        let address = env.url("").trim_start_matches("http://").to_owned();
        let mut stream = TcpStream::connect(&address).expect("connected");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nx-api-key: {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\
             Expect: 100-continue\r\n\r\n",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 100"), "{line}");
        reader.read_line(&mut line).unwrap();
        let half = body.len() / 2;
        stream.write_all(&body[..half]).unwrap();
        Trickle {
            stream,
            rest: body[half..].to_vec(),
        }
    }

    /// Sends the rest; the response's status.
    fn finish(mut self) -> u16 {
        self.stream.write_all(&self.rest).unwrap();
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
            let n = self.stream.read(&mut buffer).expect("an answer");
            assert!(n > 0, "closed without an answer");
            answer.extend_from_slice(&buffer[..n]);
        }
        let text = String::from_utf8_lossy(&answer);
        text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap()
    }
}

#[test]
fn a_client_sending_slowly_holds_up_no_one() {
    // Two connections, and three uploads in progress at once.
    let env = shared().with_sidecar(SidecarOptions {
        env: &[("VIGIL_POOL_SIZE", "2")],
        ..Default::default()
    });
    let key = env.admin_ok(&["keys", "create", "--name", "slow", "--scope", "transaction"]);
    let other = account(&env, "othertenant");
    assert!([200, 201].contains(&post(&env, "/createDatabase", &other).0));
    let purchase = json!({"customerEmail": "slow@example.com", "amount": 12.5}).to_string();
    let slow: Vec<Trickle> = (0..3)
        .map(|_| Trickle::start(&env, "/api/transaction", &key, purchase.as_bytes()))
        .collect();
    // While all three are half sent, another tenant is served at once.
    let mut list = other.clone();
    list["start"] = json!(0);
    list["limit"] = json!(5);
    for _ in 0..3 {
        let (status, body) = post(&env, "/getEmbeddings", &list);
        assert_eq!(status, 200, "{body}");
    }
    let health = client().get(env.url("/healthz")).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    for upload in slow {
        assert_eq!(upload.finish(), 200);
    }
}

#[test]
fn a_database_holding_a_lock_answers_503_with_retry_after_within_the_timeout() {
    // A cluster of its own: the lock would hold up the other tests' requests.
    let env = vigil_e2e::start(&["--request-timeout-ms", "2000"]);
    let me = account(&env, "lockedout");
    assert!([200, 201].contains(&post(&env, "/createDatabase", &me).0));
    let mut list = me.clone();
    list["start"] = json!(0);
    list["limit"] = json!(5);
    let _lock = env.open_transaction("LOCK TABLE vigil.vector_records IN ACCESS EXCLUSIVE MODE;");
    let start = Instant::now();
    let response = client()
        .post(env.url("/getEmbeddings"))
        .json(&list)
        .send()
        .expect("an answer");
    let waited = start.elapsed();
    assert_eq!(response.status().as_u16(), 503);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "timeout", "{body}");
    // The request timeout, and a margin for a loaded machine.
    assert!(
        waited < Duration::from_secs(12),
        "answered after {waited:?}"
    );
}

/// Issue 60: a request that timed out returned its connection to the pool
/// while the server still ran its statement, and the next requests waited
/// behind it and failed: with one pooled connection, the whole API was down.
/// Here the pool's one backend stops answering (SIGSTOP, as a statement
/// that ignores cancels would): the request that meets it times out, and
/// the next, unrelated one is served on a new connection; the stopped one,
/// once it runs again, finds its statement cancelled and its client gone.
#[test]
fn a_timed_out_request_hands_no_busy_connection_on() {
    // A cluster of its own: its one pooled connection is the one stopped.
    let env = vigil_e2e::start(&["--pool-size", "1", "--request-timeout-ms", "2000"]);
    let key = env.admin_ok(&[
        "keys",
        "create",
        "--name",
        "stopped",
        "--scope",
        "transaction",
    ]);
    let assess = |email: &str| {
        let response = client()
            .post(env.url("/api/transaction"))
            .header("x-api-key", &key)
            .json(&json!({"customerEmail": email, "amount": 12.5}))
            .send()
            .expect("an answer");
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap_or(Value::Null))
    };
    assert_eq!(assess("first@example.com").0, 200);
    let backends = "SELECT pid FROM pg_stat_activity WHERE application_name = 'vigil-sidecar'";
    let pid: i32 = env.psql(backends).parse().expect("the pool's one backend");
    // SAFETY: kill(2) on a process id; no memory is shared.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let (status, body) = assess("stuck@example.com");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("timeout")),
        "{body}"
    );
    let (status, body) = assess("next@example.com");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    assert_eq!(status, 200, "the request after a timeout: {body}");
    // The stopped backend, running again, ends: its client closed it.
    let gone = format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {pid}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.psql(&gone) != "0" {
        assert!(Instant::now() < deadline, "backend {pid} still runs");
        std::thread::yield_now();
    }
    let pids = env.psql(backends);
    assert_eq!(pids.lines().count(), 1, "one pooled connection: {pids}");
}

#[test]
fn metrics_with_a_token_are_served_to_those_who_give_it() {
    let env = shared().with_sidecar(SidecarOptions {
        env: &[("VIGIL_METRICS_TOKEN", "scrape-secret")],
        ..Default::default()
    });
    let scrape = |token: Option<&str>| {
        let mut request = client().get(env.url("/metrics"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        (status, response.text().unwrap())
    };
    let (status, body) = scrape(None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("missing_credentials"), "{body}");
    assert_eq!(scrape(Some("guess")).0, 401);
    let (status, body) = scrape(Some("scrape-secret"));
    assert_eq!(status, 200);
    assert!(body.contains("vigil_process_resident_bytes"), "{body}");
}

#[test]
fn a_locked_out_address_is_refused_before_a_long_body_is_read() {
    let env = shared().with_sidecar(SidecarOptions {
        args: &[
            "--auth-failure-burst",
            "1",
            "--auth-failures-per-minute",
            "1",
        ],
        ..Default::default()
    });
    let wrong = json!({"userKey": format!("vu_{}", "1".repeat(64)), "account": "x@example.com", "dbName": "main"});
    assert_eq!(post(&env, "/getEmbeddings", &wrong).0, 401);
    // 60 MiB, the credentials after the records: refused from its first
    // 64 KiB, whatever the budget for such bodies.
    let late = format!(
        r#"{{"records":[{{"title":"t","content":"{}"}}],"userKey":"vu_x","account":"x@example.com","dbName":"main"}}"#,
        "x".repeat(60 << 20)
    );
    let before = env.metric("vigil_process_peak_resident_bytes");
    let status = client()
        .post(env.url("/storeEmbeddings"))
        .header("content-type", "application/json")
        .body(late)
        .send()
        .ok()
        .map(|r| r.status().as_u16());
    assert!(matches!(status, None | Some(429)), "{status:?}");
    let grown = env.metric("vigil_process_peak_resident_bytes") - before;
    assert!(grown < 8.0 * 1048576.0, "grew by {grown} bytes");
}
