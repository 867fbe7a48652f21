//! Backups restore everything. An installation filled through the API (keys,
//! an account, records in two vector databases, transactions with labels and
//! a fitted risk model, identity assessments) is dumped with `pg_dump` as
//! its users back up PostgreSQL, in the custom and the plain format, and each
//! dump is restored into a fresh cluster. There the same keys authenticate,
//! the same searches give the same answers (the keyword index and counts,
//! which are not dumped, are rebuilt by the restore), risk assessments and
//! duplicate-image lookups see the same past, and new rows get new ids.

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{Cluster, Env, SidecarOptions};
use vigil_identity::synthetic as s;

fn post(env: &Env, path: &str, key: Option<&str>, body: &Value) -> Value {
    let mut request = Client::new().post(env.url(path)).json(body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().expect("request sent");
    let status = response.status().as_u16();
    let body: Value = response.json().unwrap_or(Value::Null);
    assert!((200..300).contains(&status), "{path}: {status} {body}");
    body
}

fn whoami(env: &Env, key: &str) -> Value {
    let response = Client::new()
        .get(env.url("/api/key"))
        .header("x-api-key", key)
        .send()
        .expect("request sent");
    assert_eq!(response.status().as_u16(), 200, "the key authenticates");
    response.json().unwrap()
}

/// A purchase of customer `n`, dated `days_ago` days before 2026-11-20.
fn purchase(n: usize, days_ago: u32) -> Value {
    json!({
        "customerEmail": format!("buyer{n}@example.com"),
        "amount": 20 + n % 50,
        "deviceFingerprint": format!("device-{n}"),
        "ipAddress": format!("203.0.{}.{}", n / 200, n % 200 + 1),
        "time": format!("2026-{:02}-{:02}T10:00:00Z", 10 - days_ago / 30, 28 - days_ago % 28),
        "paymentMethod": format!("card-{n}"),
    })
}

/// The credentials of the filled installation and what is asked of it.
struct Installation {
    api_key: String,
    user_key: String,
    picture: Vec<u8>,
    first_assessment: Value,
}

impl Installation {
    fn body(&self, db: &str, fields: Value) -> Value {
        let mut body =
            json!({"userKey": self.user_key, "account": "acme@example.com", "dbName": db});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        body
    }

    fn fill(env: &Env) -> Installation {
        let api_key = env.admin_ok(&[
            "keys",
            "create",
            "--name",
            "shop",
            "--scope",
            "transaction",
            "--scope",
            "identity",
        ]);
        env.admin_ok(&["accounts", "create", "acme@example.com"]);
        let user_key = env.admin_ok(&["user-keys", "create", "acme@example.com"]);
        let picture = s::jpeg(&s::card(501), 90, Some(s::camera_exif()));
        let first_assessment = env.assess_id(&api_key, picture.clone());
        let this = Installation {
            api_key,
            user_key,
            picture,
            first_assessment,
        };
        for (db, topic) in [("notes", "refunds"), ("parts", "warehouse")] {
            post(env, "/createDatabase", None, &this.body(db, json!({})));
            let records: Vec<Value> = (0..12)
                .map(|i| {
                    json!({"title": format!("{topic} {i}"),
                           "content": format!("Note {i} about {topic}: part XK-{i} ships in {i} days."),
                           "metadata": {"n": i}})
                })
                .collect();
            post(
                env,
                "/storeEmbeddings",
                None,
                &this.body(db, json!({ "records": records })),
            );
        }
        // Enough labels for a model: 20 frauds, and unlabelled purchases
        // older than a day counted as legitimate.
        for n in 0..130 {
            let answer = post(
                env,
                "/api/transaction",
                Some(&this.api_key),
                &purchase(n, 60),
            );
            if n % 6 == 0 && n < 120 {
                let id = answer["transactionId"].as_str().unwrap();
                let path = format!("/api/transaction/{id}/feedback");
                post(
                    env,
                    &path,
                    Some(&this.api_key),
                    &json!({"label": "chargeback"}),
                );
            }
        }
        let fit = env.psql("SELECT vigil.risk_refit('1 day') ->> 'fitted'");
        assert_eq!(fit, "true", "a model was fitted");
        env.psql("SELECT vigil.blocklist_add('email', 'blocked@example.com', 'backup test', NULL)");
        this
    }

    /// What the installation answers that a restore must keep: searches of
    /// both databases, a record listing, the key's identity, and a new
    /// purchase of a customer with history (a chargeback, velocity).
    fn answers(&self, env: &Env) -> Vec<Value> {
        let mut answers = vec![whoami(env, &self.api_key)];
        for db in ["notes", "parts"] {
            for query in ["refunds in days", "XK-7", "warehouse part"] {
                let search = json!({"query": query, "limit": 5});
                answers.push(post(
                    env,
                    "/queryEmbeddings",
                    None,
                    &self.body(db, search.clone()),
                ));
                answers.push(post(env, "/hybridSearch", None, &self.body(db, search)));
            }
            let list = json!({"start": 0, "limit": 3});
            answers.push(post(env, "/getEmbeddings", None, &self.body(db, list)));
        }
        let mut again = post(
            env,
            "/api/transaction",
            Some(&self.api_key),
            &purchase(6, 0),
        );
        again.as_object_mut().unwrap().remove("transactionId");
        answers.push(again);
        answers
    }

    /// What the tables hold, derived ones included.
    fn census(env: &Env) -> String {
        env.psql(
            "SELECT (SELECT count(*) FROM vigil.api_keys), (SELECT count(*) FROM vigil.user_keys),
                    (SELECT count(*) FROM vigil.accounts),
                    (SELECT string_agg(name || ':' || records || ':' || total_length, ',' ORDER BY name)
                       FROM vigil.vector_databases),
                    (SELECT count(*) FROM vigil.vector_records),
                    (SELECT sum(records) FROM vigil.vector_terms),
                    (SELECT sum(size) FROM vigil.vector_postings),
                    (SELECT count(*) FROM vigil.transactions), (SELECT count(*) FROM vigil.feedback),
                    (SELECT count(*) FROM vigil.fraud_identities), (SELECT count(*) FROM vigil.blocklist),
                    (SELECT count(*) FROM vigil.risk_models),
                    (SELECT count(*) FROM vigil.identity_assessments)",
        )
    }

    /// The restored installation works on: the picture is a duplicate of
    /// its first assessment, and new rows get ids past the restored ones.
    fn check_new_rows(&self, env: &Env) {
        let again = env.assess_id(&self.api_key, self.picture.clone());
        assert_eq!(
            again["checks"]["duplicates"]["metrics"]["duplicateOf"],
            self.first_assessment["assessmentId"],
            "{again}"
        );
        let before = env.psql(
            "SELECT (SELECT max(id) FROM vigil.vector_records), (SELECT max(id) FROM vigil.api_keys),
                    (SELECT max(id) FROM vigil.feedback)",
        );
        let record = json!({"title": "new", "content": "stored after the restore"});
        let stored = post(env, "/storeEmbedding", None, &self.body("notes", record));
        let max: Vec<i64> = before.split('|').map(|v| v.parse().unwrap()).collect();
        assert!(
            stored["id"].as_i64().unwrap() > max[0],
            "{stored} after {before}"
        );
        env.admin_ok(&["keys", "create", "--name", "after the restore"]);
        let answer = post(
            env,
            "/api/transaction",
            Some(&self.api_key),
            &purchase(7, 0),
        );
        let id = answer["transactionId"].as_str().unwrap();
        post(
            env,
            &format!("/api/transaction/{id}/feedback"),
            Some(&self.api_key),
            &json!({"label": "legit"}),
        );
        let after = env.psql(
            "SELECT (SELECT max(id) FROM vigil.api_keys), (SELECT max(id) FROM vigil.feedback)",
        );
        let after: Vec<i64> = after.split('|').map(|v| v.parse().unwrap()).collect();
        assert_eq!(
            after,
            vec![max[1] + 1, max[2] + 1],
            "new ids follow the restored ones"
        );
    }
}

/// A fresh cluster holding what `restore` puts into it, as `make run` would
/// then find it (`pg-cluster.sh up`: roles, grants, an upgrade if due).
fn restored(restore: impl FnOnce(&Cluster)) -> (Cluster, Env) {
    let cluster = Cluster::start();
    cluster.superuser_tool(
        "psql",
        &["-X", "-q", "-d", "postgres", "-c", "DROP DATABASE vigil"],
        &[],
    );
    restore(&cluster);
    cluster
        .upgrade()
        .expect("make run's set-up runs on the restored cluster");
    let env = cluster.env().with_sidecar(SidecarOptions::default());
    (cluster, env)
}

#[test]
fn a_pg_dump_restores_every_key_record_label_and_assessment() {
    let source = Cluster::start();
    let env = source.env().with_sidecar(SidecarOptions::default());
    let installation = Installation::fill(&env);
    let census = Installation::census(&env);

    let custom = source.superuser_tool("pg_dump", &["-Fc", "-d", "vigil"], &[]);
    let plain = source.superuser_tool("pg_dump", &["--create", "-d", "vigil"], &[]);
    let answers = installation.answers(&env);
    assert!(
        answers
            .iter()
            .any(|a| a.to_string().contains("CONFIRMED_FRAUD")),
        "the history has a chargeback to see"
    );
    drop(env);
    drop(source);

    let (_custom_cluster, custom_env) = restored(|cluster| {
        cluster.superuser_tool(
            "pg_restore",
            &["--create", "--exit-on-error", "-d", "postgres"],
            &custom,
        );
    });
    assert_eq!(Installation::census(&custom_env), census, "custom format");
    assert_eq!(installation.answers(&custom_env), answers, "custom format");
    installation.check_new_rows(&custom_env);

    let (_plain_cluster, plain_env) = restored(|cluster| {
        cluster.superuser_tool(
            "psql",
            &["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres"],
            &plain,
        );
    });
    assert_eq!(Installation::census(&plain_env), census, "plain format");
    assert_eq!(installation.answers(&plain_env), answers, "plain format");
}
