//! Clients that write (and search) over HTTP while a test breaks the
//! database under them (tests/tests/e2e/crash.rs, ha.rs), and what they saw:
//! every acknowledged transaction and record, every answer's timing, and
//! anything but a 2xx or a 503 with `Retry-After`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::Env;

/// What one client sends, again and again.
#[derive(Clone, Copy)]
pub enum Role {
    /// `POST /api/transaction` for `w{client}-{n}@example.com`.
    Assess,
    /// `POST /storeEmbedding` of `writer {client} note {n}` into `db`.
    Store { db: &'static str },
    /// `POST /queryEmbeddings` in `db`, each of `queries` in turn; an
    /// empty answer is unexpected.
    Search {
        db: &'static str,
        queries: &'static [&'static str],
    },
}

/// One answer a client saw.
pub struct Answer {
    /// Since the load's clock started, when the request was sent and answered.
    pub sent: Duration,
    pub answered: Duration,
    pub ok: bool,
}

/// What the clients saw.
#[derive(Default)]
pub struct Seen {
    pub transactions: Mutex<Vec<String>>,
    pub records: Mutex<Vec<i64>>,
    pub answers: Mutex<Vec<Answer>>,
    /// Searches answered with records.
    pub searches: AtomicUsize,
    /// 503s with Retry-After.
    pub unavailable: AtomicUsize,
    /// Anything but a 2xx or a 503 with Retry-After.
    pub unexpected: Mutex<Vec<String>>,
}

impl Seen {
    /// Transactions and records acknowledged so far.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.transactions.lock().unwrap().len(),
            self.records.lock().unwrap().len(),
        )
    }
}

/// The clients' common ground: the sidecar, the credentials, what stored
/// records say, and the clock answers are timed by.
pub struct Load<'a> {
    pub env: &'a Env,
    /// An API key with scope transaction.
    pub api_key: &'a str,
    /// `{"userKey": ..., "account": ...}`.
    pub creds: &'a Value,
    /// The content of every stored record.
    pub content: &'a str,
    pub clock: Instant,
}

impl<'a> Load<'a> {
    /// The load of `env`'s sidecar, its clock started now.
    pub fn new(env: &'a Env, api_key: &'a str, creds: &'a Value, content: &'a str) -> Load<'a> {
        Load {
            env,
            api_key,
            creds,
            content,
            clock: Instant::now(),
        }
    }

    /// Client number `client` in `role` until `stop`: each answer goes into
    /// `seen`; after a 503 with Retry-After it waits 50 ms, as a client
    /// told to come back would, a little sooner.
    pub fn client(&self, client: usize, role: Role, seen: &Seen, stop: &AtomicBool) {
        let http = Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let mut n = 0;
        while !stop.load(Ordering::SeqCst) {
            n += 1;
            let with_creds = |fields: Value| {
                let mut body = self.creds.clone();
                body.as_object_mut()
                    .unwrap()
                    .extend(fields.as_object().unwrap().clone());
                body
            };
            let (path, request) = match role {
                Role::Assess => {
                    let body =
                        json!({"customerEmail": format!("w{client}-{n}@example.com"), "amount": n});
                    let request = http.post(self.env.url("/api/transaction"));
                    (
                        "/api/transaction",
                        request.header("x-api-key", self.api_key).json(&body),
                    )
                }
                Role::Store { db } => {
                    let body = with_creds(json!({
                        "dbName": db,
                        "title": format!("writer {client} note {n}"),
                        "content": self.content,
                    }));
                    (
                        "/storeEmbedding",
                        http.post(self.env.url("/storeEmbedding")).json(&body),
                    )
                }
                Role::Search { db, queries } => {
                    let body =
                        with_creds(json!({"dbName": db, "query": queries[n % queries.len()]}));
                    (
                        "/queryEmbeddings",
                        http.post(self.env.url("/queryEmbeddings")).json(&body),
                    )
                }
            };
            let sent = self.clock.elapsed();
            let response = request.send();
            let answered = self.clock.elapsed();
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    seen.unexpected.lock().unwrap().push(format!("{path}: {e}"));
                    continue;
                }
            };
            let status = response.status().as_u16();
            let retry = response.headers().contains_key("retry-after");
            let body: Value = response.json().unwrap_or(Value::Null);
            let ok = matches!(status, 200 | 201);
            seen.answers
                .lock()
                .unwrap()
                .push(Answer { sent, answered, ok });
            match (status, path) {
                (200, "/api/transaction") => seen
                    .transactions
                    .lock()
                    .unwrap()
                    .push(body["transactionId"].as_str().unwrap().to_owned()),
                (201, "/storeEmbedding") => seen
                    .records
                    .lock()
                    .unwrap()
                    .push(body["id"].as_i64().unwrap()),
                (200, "/queryEmbeddings") if body.as_array().is_some_and(|a| !a.is_empty()) => {
                    seen.searches.fetch_add(1, Ordering::SeqCst);
                }
                (503, _) if retry => {
                    seen.unavailable.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => seen
                    .unexpected
                    .lock()
                    .unwrap()
                    .push(format!("{path}: {status} {body}")),
            }
        }
    }
}
