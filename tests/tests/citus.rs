//! Vigil on a Citus cluster (issue 47, docs/scaling-out.md): a coordinator
//! and two workers on loopback (`scripts/citus-cluster.sh`, with the Citus 13
//! its user installed into this PostgreSQL), with the sidecar unchanged in
//! front of the coordinator, against a single node given the same records in
//! the same order. Built and run only by `make test-citus` (feature `citus`),
//! which fails at once where Citus is not installed; `make test` does not
//! include it.
//!
//! - an installation filled on one server moves onto the workers with
//!   `vigil.distribute()`, every row kept, and takes more records after;
//! - the published client's calls answer as on the single node: the same
//!   records with the same similarities and scores for a database searched
//!   exactly, the exact top 10 on both sides for one large enough for its
//!   graph (whose lists may differ at the margin), and the keyword index
//!   (the BM25 statistics) equal term for term;
//! - two accounts with a database of the same name never see each other's
//!   records, through the API and as the application role in SQL, and the
//!   application role reads no shard on a worker directly;
//! - a third worker added and the shards rebalanced onto it while records
//!   are stored and searched: no error, no record lost, the index whole;
//!   then one account isolated to a shard of its own, still searchable.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{
    eval_corpus, feed_script, free_port, start, step, workspace_root, Env, SidecarOptions,
};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
/// The database name both accounts use.
const DB: &str = "catalog";
/// Alice's records: past the 2,000 where a database's search walks its graph.
const ALICE_RECORDS: usize = 2400;
/// Bob's: searched exactly.
const BOB_RECORDS: usize = 300;
/// Queries compared between the cluster and the single node.
const QUERIES: usize = 60;

/// A Citus cluster made by scripts/citus-cluster.sh, removed when dropped.
struct Citus {
    dir: PathBuf,
    env: Env,
}

impl Citus {
    fn up() -> Citus {
        let port = free_run_of_ports(3);
        let dir =
            std::env::temp_dir().join(format!("vigil-e2e-citus-{}-{port}", std::process::id()));
        let out = Command::new(workspace_root().join("scripts/citus-cluster.sh"))
            .args(["up", dir.to_str().unwrap(), &port.to_string()])
            .env("CITUS_WORKERS", "2")
            .output()
            .expect("citus-cluster.sh runs");
        assert!(
            out.status.success(),
            "the Citus cluster did not start (is Citus 13 installed? docs/scaling-out.md): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let printed = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(name).map(str::to_owned))
                .unwrap_or_else(|| panic!("citus-cluster.sh printed no {name}"))
        };
        let coordinator = Env {
            base: String::new(),
            database_url: printed("DATABASE_URL="),
            admin_url: printed("ADMIN_DATABASE_URL="),
            cluster_dir: dir.join("coordinator"),
        };
        let env = coordinator.with_sidecar(SidecarOptions::default());
        Citus { dir, env }
    }

    /// Runs `sql` as the superuser on the coordinator; psql's unaligned output.
    fn psql(&self, sql: &str) -> String {
        self.env.psql(sql)
    }

    fn add_worker(&self) {
        let status = Command::new(workspace_root().join("scripts/citus-cluster.sh"))
            .args([
                "add-worker",
                self.dir.to_str().unwrap(),
                &free_port().to_string(),
            ])
            .status()
            .expect("citus-cluster.sh runs");
        assert!(status.success(), "the third worker did not join");
    }

    /// The directory of the worker on `port`.
    fn worker_dir(&self, port: u16) -> PathBuf {
        (1..10)
            .map(|n| self.dir.join(format!("worker{n}")))
            .find(|d| {
                std::fs::read_to_string(d.join("port")).is_ok_and(|p| p.trim() == port.to_string())
            })
            .unwrap_or_else(|| panic!("no worker on port {port}"))
    }

    /// The workers' ports.
    fn worker_ports(&self) -> Vec<u16> {
        self.psql("SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport")
            .lines()
            .map(|p| p.parse().unwrap())
            .collect()
    }
}

impl Drop for Citus {
    fn drop(&mut self) {
        let _ = Command::new(workspace_root().join("scripts/citus-cluster.sh"))
            .args(["remove", self.dir.to_str().unwrap()])
            .status();
    }
}

/// A port where it and the `n - 1` after it are free (the cluster script
/// puts the workers on the ports after the coordinator's).
fn free_run_of_ports(n: u16) -> u16 {
    loop {
        let port = free_port();
        if port < 60000 && (1..n).all(|i| TcpListener::bind(("127.0.0.1", port + i)).is_ok()) {
            return port;
        }
    }
}

/// Runs `script` as the superuser of `env`'s cluster statement by statement
/// (psql reading it), every result printed, unaligned.
fn script(env: &Env, script: &str) -> String {
    let mut psql = Command::new(workspace_root().join("scripts/pg-cluster.sh"));
    psql.args([
        "psql",
        env.cluster_dir.to_str().unwrap(),
        "-q",
        "-At",
        "-v",
        "ON_ERROR_STOP=1",
    ]);
    let (ran, out, err) = feed_script(psql, script);
    assert!(ran, "{err}");
    out
}

fn post(env: &Env, path: &str, body: Value) -> (u16, Value) {
    let response = Client::new()
        .post(env.url(path))
        .json(&body)
        .send()
        .expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

fn ok(env: &Env, path: &str, body: Value) -> Value {
    let (status, answer) = post(env, path, body);
    assert!((200..300).contains(&status), "{path}: {status} {answer}");
    answer
}

/// An account's user key, made with the admin command.
fn user_key(env: &Env, account: &str) -> String {
    env.admin_ok(&["accounts", "create", account]);
    env.admin_ok(&["user-keys", "create", account])
        .lines()
        .next()
        .expect("the key")
        .to_owned()
}

/// One side of the comparison: a sidecar and the keys of its two accounts.
struct Side {
    env: Env,
    alice: String,
    bob: String,
}

impl Side {
    fn new(env: Env) -> Side {
        let alice = user_key(&env, ALICE);
        let bob = user_key(&env, BOB);
        let side = Side { env, alice, bob };
        for account in [ALICE, BOB] {
            ok(&side.env, "/createDatabase", side.credentials(account));
        }
        side
    }

    fn credentials(&self, account: &str) -> Value {
        let key = if account == ALICE {
            &self.alice
        } else {
            &self.bob
        };
        json!({"account": account, "userKey": key, "dbName": DB})
    }

    fn call(&self, path: &str, account: &str, extra: Value) -> Value {
        let mut body = self.credentials(account);
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ok(&self.env, path, body)
    }

    /// Stores `docs` in batches as the client would; the ids given.
    fn store(&self, account: &str, docs: &[Value]) -> Vec<i64> {
        let mut ids = Vec::new();
        for batch in docs.chunks(100) {
            let stored = self.call("/storeEmbeddings", account, json!({"records": batch}));
            ids.extend(
                stored
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["id"].as_i64().unwrap()),
            );
        }
        ids
    }

    /// Every search the comparison makes, as text: ids with their scores.
    fn answers(&self, account: &str, queries: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for q in queries {
            for (path, extra) in [
                ("/queryEmbeddings", json!({"query": q, "limit": 10})),
                ("/hybridSearch", json!({"query": q, "limit": 10})),
                (
                    "/hybridSearch",
                    json!({"query": q, "limit": 10, "fusion": "rrf"}),
                ),
            ] {
                let found = self.call(path, account, extra);
                let line: Vec<String> = found
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let score = r.get("similarity").or_else(|| r.get("score")).unwrap();
                        format!("{}:{:.4}", r["id"], score.as_f64().unwrap())
                    })
                    .collect();
                out.push(format!("{path} {account} {q:?}: {}", line.join(" ")));
            }
        }
        out
    }
}

/// The corpus: 3,000 real package descriptions, and queries written for them.
fn corpus() -> (Vec<Value>, Vec<String>) {
    let root = workspace_root().join("bench/vectordb");
    let docs: Vec<Value> = eval_corpus()
        .into_iter()
        .map(|doc| json!({"title": doc["title"], "content": doc["content"], "metadata": {"package": doc["name"]}}))
        .collect();
    let queries = std::fs::read_to_string(root.join("queries.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .take(QUERIES)
        .map(|l| l.split_once('\t').unwrap().1.to_owned())
        .collect();
    (docs, queries)
}

/// The exact top 10 of `account`'s database for each query: the stored
/// embeddings ranked by cosine distance to the query's in SQL, no index.
fn exact_top_10(env: &Env, account: &str, queries: &[String]) -> Vec<BTreeSet<String>> {
    let mut sql = format!(
        "SELECT id AS db FROM vigil.vector_databases WHERE account = '{account}' AND name = '{DB}' \\gset\n"
    );
    for q in queries {
        sql += &format!(
            "SELECT vigil.embed($q${q}$q$)::text AS v \\gset
             SELECT string_agg(id::text, ' ') FROM (
                SELECT id FROM vigil.vector_records WHERE account = '{account}' AND db = :db
                ORDER BY vigil.cosine_distance(embedding, :'v'::real[]), id LIMIT 10) s;\n"
        );
    }
    let out = script(env, &sql);
    let lists: Vec<BTreeSet<String>> = out
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect();
    assert_eq!(lists.len(), queries.len(), "{out}");
    lists
}

/// What the keyword index holds, term by term, and the databases' counts.
fn keyword_statistics(env: &Env) -> String {
    env.psql(
        "SELECT string_agg(format('%s %s %s %s %s', d.account, d.name, t.term, t.records, p.size), E'\\n'
                           ORDER BY d.account, t.term)
         FROM vigil.vector_databases d
         JOIN vigil.vector_terms t ON t.account = d.account AND t.db = d.id
         JOIN (SELECT account, db, term, sum(size) AS size FROM vigil.vector_postings
               GROUP BY account, db, term) p ON p.account = t.account AND p.db = t.db AND p.term = t.term",
    ) + "\n"
        + &env.psql(
            "SELECT string_agg(format('%s %s %s %s', account, name, records, total_length), E'\\n' ORDER BY account)
             FROM vigil.vector_databases",
        )
}

/// The index of one account agrees with its records: each term's count
/// is the number of records holding it, each term's postings as many, and
/// the database's count its records'.
fn assert_index_whole(env: &Env, account: &str) {
    let counts = env.psql(&format!(
        "SELECT (SELECT sum(records) FROM vigil.vector_terms WHERE account = '{account}'),
                (SELECT sum(size) FROM vigil.vector_postings WHERE account = '{account}'),
                (SELECT sum(length(terms)) FROM vigil.vector_records WHERE account = '{account}'),
                (SELECT sum(records) FROM vigil.vector_databases WHERE account = '{account}'),
                (SELECT count(*) FROM vigil.vector_records WHERE account = '{account}')"
    ));
    let v: Vec<&str> = counts.split('|').collect();
    assert_eq!(
        v[0], v[2],
        "{account}: term counts against records' terms ({counts})"
    );
    assert_eq!(
        v[1], v[2],
        "{account}: postings against records' terms ({counts})"
    );
    assert_eq!(
        v[3], v[4],
        "{account}: the database's count against its records ({counts})"
    );
}

#[test]
fn the_vector_database_on_a_citus_cluster_answers_as_one_server() {
    let (docs, queries) = step("read the corpus and its queries", corpus);
    let (alice_docs, rest) = docs.split_at(ALICE_RECORDS);
    let bob_docs = &rest[..BOB_RECORDS];
    let spare = &rest[BOB_RECORDS..];

    let single = step("start one server with the two accounts", || {
        Side::new(start(&[]))
    });
    let citus = step("start the Citus cluster", Citus::up);
    let cluster = step("make the two accounts on the cluster", || {
        Side::new(citus.env.clone())
    });

    // Half the records on one server, as an installation grows before it
    // scales out; then vigil.distribute(); then the rest.
    let half = |d: &[Value]| d.len() / 2;
    step("store half the records on each side", || {
        for side in [&single, &cluster] {
            side.store(ALICE, &alice_docs[..half(alice_docs)]);
            side.store(BOB, &bob_docs[..half(bob_docs)]);
        }
    });
    step("distribute the installation onto the workers", || {
        let before = citus.psql(
            "SELECT (SELECT count(*) FROM vigil.vector_records), (SELECT count(*) FROM vigil.vector_terms),
                    (SELECT count(*) FROM vigil.vector_postings), (SELECT count(*) FROM vigil.accounts),
                    (SELECT count(*) FROM vigil.user_keys), (SELECT count(*) FROM vigil.vector_databases)",
        );
        let layout = citus.psql(
            "SET client_min_messages = warning;
             SELECT string_agg(format('%s %s %s', relation, kind, rows_kept), ', ') FROM vigil.distribute()",
        );
        println!("vigil.distribute(): {layout}");
        let kept: Vec<&str> = before.split('|').collect();
        for (table, n) in [
            ("vector_records", kept[0]),
            ("vector_terms", kept[1]),
            ("vector_postings", kept[2]),
            ("accounts", kept[3]),
            ("user_keys", kept[4]),
            ("vector_databases", kept[5]),
        ] {
            assert!(layout.contains(&format!("{table} ")), "{layout}");
            let expected = format!(
                "{table} {} {n}",
                if ["accounts", "user_keys"].contains(&table) {
                    "reference"
                } else {
                    "distributed by account"
                }
            );
            assert!(layout.contains(&expected), "{expected} in {layout}");
        }
        assert_eq!(
            citus.psql(
                "SELECT count(DISTINCT nodeport) FROM pg_dist_shard JOIN pg_dist_placement USING (shardid)
                 JOIN pg_dist_node USING (groupid) WHERE logicalrelid = 'vigil.vector_records'::regclass"
            ),
            "2",
            "the records are on both workers"
        );
        // Called again, it moves nothing and says the same.
        assert_eq!(
            citus.psql("SELECT string_agg(format('%s %s %s', relation, kind, rows_kept), ', ') FROM vigil.distribute()"),
            layout
        );
    });
    // An upgrade's rebuild of the graphs reaches every shard: what 0.14.0's
    // upgrade asks of a distributed installation (docs/scaling-out.md,
    // Limits: "Upgrades"), run on graphs built with another beam first.
    step("rebuild every shard's graph as an upgrade does", || {
        let shard_graphs = || {
            citus.psql(
                "SELECT string_agg(result, ' ' ORDER BY nodeport) FROM run_command_on_workers($$
                    SELECT string_agg(DISTINCT vigil.hnsw_check(c.oid::regclass)->>'ef_construction', ',')
                    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = 'vigil' AND c.relkind = 'i' AND c.relname LIKE 'vector_records_embedding_%' $$)",
            )
        };
        assert_eq!(
            shard_graphs(),
            "128 128",
            "distribute() builds as the schema says"
        );
        // One statement a call: Citus passes a REINDEX on as the text it came in.
        citus.psql("ALTER INDEX vigil.vector_records_embedding SET (ef_construction = 64)");
        citus.psql("REINDEX INDEX vigil.vector_records_embedding");
        assert_eq!(shard_graphs(), "64 64");
        citus.psql("ALTER INDEX vigil.vector_records_embedding SET (ef_construction = 128)");
        citus.psql("REINDEX INDEX vigil.vector_records_embedding");
        assert_eq!(shard_graphs(), "128 128");
    });

    let alice_ids = step("store the rest on each side, deleting a few", || {
        let mut alice_ids = Vec::new();
        for side in [&single, &cluster] {
            let a = side.store(ALICE, &alice_docs[half(alice_docs)..]);
            let b = side.store(BOB, &bob_docs[half(bob_docs)..]);
            // A few go again, through the client's delete.
            for id in [a[0], a[7], b[3]] {
                let account = if b.contains(&id) { BOB } else { ALICE };
                side.call("/deleteEmbedding", account, json!({"id": id}));
            }
            alice_ids = a;
        }
        alice_ids
    });

    // The same keyword index, term for term, and the same counts.
    step("compare the keyword indexes", || {
        let (on_one, on_cluster) = (
            keyword_statistics(&single.env),
            keyword_statistics(&cluster.env),
        );
        assert!(
            on_one.lines().count() > 10_000,
            "a real vocabulary: {}",
            on_one.lines().count()
        );
        assert!(
            on_one == on_cluster,
            "the keyword index differs between one server and the cluster"
        );
    });

    // The same answers. Bob's database is searched exactly: every list the
    // same. Alice's walks its graph: an approximate search, whose path
    // depends on where each element sits in its index (the order a beam
    // meets its neighbours in), and a shard's index holds other elements
    // than one server's. Its lists must hold the same records, and each
    // side's must be what an exact search of the same rows returns (the
    // target of one server's graph search: recall@10 at least 0.99).
    step("compare the searches' answers", || {
        let mut identical = 0;
        let mut compared = 0;
        let (mut shared_ids, mut listed) = (0usize, 0usize);
        let ids = |line: &str| -> BTreeSet<String> {
            let (_, list) = line.rsplit_once(": ").unwrap();
            list.split(' ')
                .map(|e| e.split(':').next().unwrap().to_owned())
                .collect()
        };
        for account in [BOB, ALICE] {
            let (one, many) = (
                single.answers(account, &queries),
                cluster.answers(account, &queries),
            );
            for (a, b) in one.iter().zip(&many) {
                compared += 1;
                if a == b {
                    identical += 1;
                    continue;
                }
                assert_eq!(
                    account, ALICE,
                    "an exact search differs:\n  one server: {a}\n  cluster:    {b}"
                );
                println!("differs:\n  one server: {a}\n  cluster:    {b}");
            }
            if account == ALICE {
                for (a, b) in one.iter().zip(&many) {
                    shared_ids += ids(a).intersection(&ids(b)).count();
                    listed += ids(a).len();
                }
                // Every third line is /queryEmbeddings's.
                let exact = exact_top_10(&single.env, ALICE, &queries);
                assert_eq!(
                    exact,
                    exact_top_10(&cluster.env, ALICE, &queries),
                    "exact searches differ"
                );
                for (side, lines) in [("one server", &one), ("cluster", &many)] {
                    let hits: usize = lines
                        .iter()
                        .step_by(3)
                        .zip(&exact)
                        .map(|(line, want)| ids(line).intersection(want).count())
                        .sum();
                    let recall = hits as f64 / (10 * queries.len()) as f64;
                    println!("{side}: /queryEmbeddings recall@10 against exact {recall:.4}");
                    assert!(
                        recall >= 0.99,
                        "{side}: recall@10 against exact {recall:.4}"
                    );
                }
            }
        }
        let overlap = shared_ids as f64 / listed as f64;
        println!("{compared} result lists compared, {identical} identical; Alice's graph-searched lists share {overlap:.4} of their records");
        assert!(
            overlap >= 0.97,
            "the cluster's graph searches found other records: {overlap:.4}"
        );
    });
    // The keyword ranking, BM25 scores and all, exactly.
    step("compare the keyword rankings", || {
        let keyword = |env: &Env| {
            let mut script = String::from("SET client_min_messages = warning;");
            for account in [ALICE, BOB] {
                script += &format!("SET vigil.account = '{account}';");
                for q in &queries {
                    script += &format!(
                        "SELECT coalesce(string_agg(format('%s:%s', id, score), ' ' ORDER BY score DESC, id), 'none')
                         FROM vigil.keyword_search($q${q}$q$, 10, '{DB}');"
                    );
                }
            }
            self::script(env, &script)
        };
        let (one, many) = (keyword(&single.env), keyword(&cluster.env));
        assert_eq!(one.lines().count(), 2 * QUERIES);
        assert!(
            one.lines().filter(|l| *l != "none").count() > QUERIES,
            "the queries find words"
        );
        assert!(one == many, "BM25 rankings differ:\n{one}\n---\n{many}");
    });
    // The beam a search sets reaches the worker that walks the graph
    // (vigil._search_ef of 10 records among 2,400: 80; the default is 40).
    step("pass a search's beam to the workers", || {
        let beam = script(&cluster.env, &format!(
            "BEGIN; SET LOCAL vigil.account = '{ALICE}';
             SELECT count(*) FROM vigil.query_embeddings('a game', '{DB}', 10);
             SELECT current_setting('vigil.hnsw_ef_search') FROM vigil.vector_databases WHERE account = '{ALICE}';
             COMMIT;"
        ));
        assert_eq!(beam.lines().collect::<Vec<_>>(), ["10", "80"], "{beam}");
    });

    // The published client's calls in a new database, one record at a time:
    // the same records listed (embeddings and all) and found.
    step("compare the published client's calls", || {
        let client = |side: &Side| {
            let body = |extra: Value| {
                let mut body = side.credentials(ALICE);
                body["dbName"] = json!("kb");
                body.as_object_mut()
                    .unwrap()
                    .extend(extra.as_object().unwrap().clone());
                body
            };
            ok(&side.env, "/createDatabase", body(json!({})));
            for doc in &spare[..3] {
                ok(&side.env, "/storeEmbedding", body(doc.clone()));
            }
            let strip = |answer: Value| -> Vec<Value> {
                answer
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        r.as_object_mut().unwrap().remove("createdAt");
                        r
                    })
                    .collect()
            };
            let answers = (
                strip(ok(&side.env, "/getEmbeddings", body(json!({"limit": 10})))),
                strip(ok(
                    &side.env,
                    "/queryEmbeddings",
                    body(json!({"query": queries[3]})),
                )),
                strip(ok(
                    &side.env,
                    "/hybridSearch",
                    body(json!({"query": queries[3], "limit": 10})),
                )),
            );
            let dropped = ok(&side.env, "/deleteDatabase", body(json!({})));
            assert_eq!(dropped, json!({"dbName": "kb", "deletedRecords": 3}));
            answers
        };
        let (listed, found, fused) = client(&single);
        assert_eq!(listed.len(), 3);
        assert!(listed
            .iter()
            .all(|r| r["embedding"].as_array().is_some_and(|e| e.len() == 384)));
        assert_eq!(
            client(&cluster),
            (listed, found, fused),
            "the client's calls answer differently"
        );
    });

    // Isolation: Bob's key is not Alice's, and Bob finds only Bob's records
    // though both databases are called "catalog".
    let bobs = step("keep Bob's key and searches from Alice's records", || {
        let mut stolen = cluster.credentials(ALICE);
        stolen["userKey"] = json!(cluster.bob);
        stolen["query"] = json!(queries[0]);
        let (status, answer) = post(&cluster.env, "/queryEmbeddings", stolen);
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("wrong_account"))
        );
        let bobs: BTreeSet<i64> = cluster
            .env
            .psql(&format!(
                "SELECT id FROM vigil.vector_records WHERE account = '{BOB}'"
            ))
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(bobs.len(), BOB_RECORDS - 1);
        for q in &queries[..10] {
            let found = cluster.call("/hybridSearch", BOB, json!({"query": q, "limit": 50}));
            for r in found.as_array().unwrap() {
                assert!(bobs.contains(&r["id"].as_i64().unwrap()), "Bob got {r}");
            }
        }
        bobs
    });
    // As the application role in SQL: Bob's records through the functions, and
    // nothing of anyone's in a worker's shards.
    step("confine the application role in SQL and shards", || {
        let (ran, out, err) = cluster.env.psql_as_app(&format!(
            "BEGIN;
             SELECT outcome FROM vigil.enter_account('{BOB}', '{}', '{DB}');
             SELECT count(*) FROM vigil.list_records(0, 1000, '{DB}');
             SELECT count(*) FROM vigil.query_embeddings('{}', '{DB}', 1000) q
              WHERE q.id NOT IN (SELECT unnest(ARRAY[{}]::bigint[]));
             COMMIT;",
            cluster.bob,
            queries[1],
            bobs.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
        assert!(ran, "{err}");
        assert_eq!(out, format!("ok\n{}\n0", BOB_RECORDS - 1));
        let app_password = cluster
            .env
            .database_url
            .split_once("vigil_app:")
            .and_then(|(_, rest)| rest.split_once('@'))
            .map(|(password, _)| password.to_owned())
            .unwrap();
        // Each shard on its own: the application role may read the records and
        // term counts of no account there (row-level security on the shards,
        // where no account is entered), and the postings not at all.
        let mut held = 0;
        for port in citus.worker_ports() {
            let shards = citus.psql(&format!(
                "SELECT shard_name(logicalrelid, shardid)
                 FROM pg_dist_shard JOIN pg_dist_placement USING (shardid) JOIN pg_dist_node USING (groupid)
                 WHERE nodeport = {port} AND logicalrelid IN ('vigil.vector_records'::regclass,
                       'vigil.vector_terms'::regclass, 'vigil.vector_postings'::regclass)"
            ));
            let worker = Env {
                cluster_dir: citus.worker_dir(port),
                ..cluster.env.clone()
            };
            for shard in shards.lines() {
                let count = format!("SELECT count(*) FROM {shard}");
                held += worker.psql(&count).parse::<u64>().unwrap();
                let out = Command::new("/usr/lib/postgresql/15/bin/psql")
                    .arg(format!(
                        "postgres://vigil_app:{app_password}@127.0.0.1:{port}/vigil"
                    ))
                    .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", &count])
                    .output()
                    .expect("psql runs");
                let (said, complaint) = (
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                );
                if shard.contains("vector_postings") {
                    assert!(
                        complaint.contains("permission denied"),
                        "{shard} on {port}: {said}{complaint}"
                    );
                } else {
                    assert_eq!(
                        (said.trim(), complaint.trim()),
                        ("0", ""),
                        "the application role read {shard} on {port}"
                    );
                }
            }
        }
        assert!(held > 0, "the checked shards hold rows");
    });

    // A third worker, and the shards rebalanced onto it while records are
    // stored and searched.
    step("add a third worker", || citus.add_worker());
    let stored = step("rebalance while records are stored and searched", || {
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let spare = spare[..spare.len() - 5].to_vec();
            let (env, key, stop) = (cluster.env.clone(), cluster.alice.clone(), stop.clone());
            thread::spawn(move || {
                let mut stored = Vec::new();
                let mut failures = Vec::new();
                for (i, doc) in spare.iter().enumerate() {
                    if stop.load(Ordering::Relaxed) && i >= 20 {
                        break;
                    }
                    let mut body = json!({"account": ALICE, "userKey": key, "dbName": DB});
                    body.as_object_mut()
                        .unwrap()
                        .extend(doc.as_object().unwrap().clone());
                    match post(&env, "/storeEmbedding", body) {
                        (201, record) => stored.push(record["id"].as_i64().unwrap()),
                        (status, answer) => failures.push(format!("{status} {answer}")),
                    }
                }
                (stored, failures)
            })
        };
        let reader = {
            let (env, key, queries, stop) = (
                cluster.env.clone(),
                cluster.bob.clone(),
                queries.clone(),
                stop.clone(),
            );
            thread::spawn(move || {
                let mut failures = Vec::new();
                let (mut searches, mut limited) = (0, 0);
                while !stop.load(Ordering::Relaxed) || searches < 20 {
                    let body = json!({"account": BOB, "userKey": key, "dbName": DB,
                                      "query": queries[searches % queries.len()], "limit": 10});
                    let response = Client::new()
                        .post(env.url("/hybridSearch"))
                        .json(&body)
                        .send()
                        .expect("sent");
                    match response.status().as_u16() {
                        200 => searches += 1,
                        // The key's rate limit: as a client should, wait as told.
                        429 => {
                            limited += 1;
                            let wait = response
                                .headers()
                                .get("retry-after")
                                .and_then(|v| v.to_str().ok())
                                .and_then(|v| v.parse::<u64>().ok())
                                .unwrap_or(1);
                            thread::sleep(std::time::Duration::from_secs(wait));
                        }
                        status => failures
                            .push(format!("{status} {}", response.text().unwrap_or_default())),
                    }
                }
                (searches, limited, failures)
            })
        };
        // Statement by statement: the job starts when its statement commits.
        let moved = script(
            &cluster.env,
            "SET client_min_messages = warning;
             SELECT citus_rebalance_start();
             SET statement_timeout = '10min';
             SELECT citus_rebalance_wait();
             SELECT count(*) FROM pg_dist_placement JOIN pg_dist_node USING (groupid)
             WHERE nodeport = (SELECT max(nodeport) FROM pg_dist_node)",
        );
        stop.store(true, Ordering::Relaxed);
        let (stored, write_failures) = writer.join().unwrap();
        let (searches, limited, read_failures) = reader.join().unwrap();
        println!(
            "rebalanced: {} placements on the new worker; {} records stored and {searches} searches \
             meanwhile ({limited} more refused by the key's rate limit)",
            moved.lines().last().unwrap(),
            stored.len()
        );
        assert!(
            moved.lines().last().unwrap().parse::<u32>().unwrap() > 0,
            "nothing moved: {moved}"
        );
        assert!(
            write_failures.is_empty(),
            "{} stores failed during the rebalance, first: {:?}",
            write_failures.len(),
            write_failures.first()
        );
        assert!(
            read_failures.is_empty(),
            "{} searches failed during the rebalance, first: {:?}",
            read_failures.len(),
            read_failures.first()
        );
        stored
    });
    step("check no record was lost, both indexes whole", || {
        let held: BTreeSet<i64> = cluster
            .env
            .psql(&format!(
                "SELECT id FROM vigil.vector_records WHERE account = '{ALICE}'"
            ))
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        for id in alice_ids
            .iter()
            .skip(1)
            .filter(|id| **id != alice_ids[7])
            .chain(&stored)
        {
            assert!(held.contains(id), "record {id} was lost");
        }
        assert_index_whole(&cluster.env, ALICE);
        assert_index_whole(&cluster.env, BOB);
    });

    // Alice, the large account, on a shard of her own; her database still
    // takes records and answers, and Bob's still answers as before.
    step("isolate Alice on a shard of her own", || {
        citus.psql(&format!(
            "SET client_min_messages = warning;
             SELECT isolate_tenant_to_new_shard('vigil.vector_databases', '{ALICE}', 'CASCADE',
                                                shard_transfer_mode => 'block_writes')"
        ));
        let alone = citus.psql(&format!(
            "SELECT count(*) FROM vigil.vector_records WHERE account <> '{ALICE}'
               AND get_shard_id_for_distribution_column('vigil.vector_records', account)
                 = get_shard_id_for_distribution_column('vigil.vector_records', '{ALICE}')"
        ));
        assert_eq!(alone, "0", "another account's records share Alice's shard");
        let more = cluster.store(ALICE, &spare[spare.len() - 5..]);
        assert_eq!(more.len(), 5);
        assert_index_whole(&cluster.env, ALICE);
        let found = cluster.call(
            "/hybridSearch",
            ALICE,
            json!({"query": queries[2], "limit": 5}),
        );
        assert_eq!(found.as_array().unwrap().len(), 5);
        assert_eq!(
            single.answers(BOB, &queries[..5]),
            cluster.answers(BOB, &queries[..5]),
            "Bob's answers changed with the shards' moves"
        );
    });
    // An account deleted with the admin command leaves with its databases,
    // records and keyword index from every worker.
    step("delete Bob's account from every worker", || {
        cluster.env.admin_ok(&["accounts", "delete", BOB]);
        assert_eq!(
            citus.psql(&format!(
                "SELECT (SELECT count(*) FROM vigil.vector_records WHERE account = '{BOB}')
                      + (SELECT count(*) FROM vigil.vector_terms WHERE account = '{BOB}')
                      + (SELECT count(*) FROM vigil.vector_postings WHERE account = '{BOB}')
                      + (SELECT count(*) FROM vigil.vector_databases WHERE account = '{BOB}')"
            )),
            "0"
        );
        assert_index_whole(&cluster.env, ALICE);
    });
}
