//! Upgrades keep data: a cluster made with the previous version's script (kept in
//! `extension/sql/`), filled through the API, upgraded the way `make run` does it
//! (`ALTER EXTENSION vigil UPDATE` in `pg-cluster.sh up`), still holds every key,
//! account, transaction, label and indexed row, every function works, and its
//! schema equals a fresh install's.

use std::path::Path;

use reqwest::blocking::Client;
use serde_json::{json, Value};
use vigil_e2e::{workspace_root, Cluster, Env, SidecarOptions};

const CURRENT: &str = env!("CARGO_PKG_VERSION");

/// The newest version before this one whose full script the repository keeps.
fn previous_version() -> String {
    let dir = workspace_root().join("extension/sql");
    let mut versions: Vec<Vec<u32>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let version = name.strip_prefix("vigil--")?.strip_suffix(".sql")?;
            (!version.contains("--")).then(|| parse(version))
        })
        .filter(|v| *v < parse(CURRENT))
        .collect();
    versions.sort();
    let newest = versions
        .pop()
        .expect("extension/sql/ keeps the script of the version before this one");
    newest
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

fn parse(version: &str) -> Vec<u32> {
    version
        .split('.')
        .map(|p| p.parse().expect("numeric version"))
        .collect()
}

fn post(env: &Env, path: &str, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = Client::new().post(env.url(path)).json(&body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

fn transaction(n: usize) -> Value {
    json!({
        "customerEmail": format!("buyer{}@example.com", n % 3),
        "amount": 20 + n,
        "deviceFingerprint": format!("device-{}", n % 2),
        "ipAddress": "203.0.113.7",
        "time": "2026-11-20T10:00:00Z",
    })
}

/// What the cluster holds, as the test compares it before and after.
fn census(cluster: &Cluster) -> String {
    cluster.psql(
        "SELECT (SELECT count(*) FROM vigil.api_keys), (SELECT count(*) FROM vigil.user_keys), \
                (SELECT count(*) FROM vigil.accounts WHERE account <> 'default@localhost'), \
                (SELECT count(*) FROM vigil.vector_databases), \
                (SELECT count(*) FROM vigil.transactions), (SELECT count(*) FROM vigil.blocklist), \
                (SELECT string_agg(label, ',' ORDER BY label) FROM vigil.feedback), \
                (SELECT count(*) FROM public.notes)",
    )
}

#[test]
fn an_upgraded_cluster_keeps_its_data_and_equals_a_fresh_install() {
    let previous = previous_version();
    assert_ne!(previous, CURRENT);
    let cluster = Cluster::start_at_version(&previous);
    assert_eq!(
        cluster.psql("SELECT extversion FROM pg_extension WHERE extname = 'vigil'"),
        previous
    );
    let log = std::env::temp_dir().join(format!("vigil-upgrade-{}.log", std::process::id()));
    let env = cluster.env().with_sidecar(SidecarOptions {
        log: Some(Path::new(&log)),
        ..Default::default()
    });

    // Filled through the API, as users of the previous version did.
    let api_key = env.admin_ok(&["keys", "create", "--name", "before the upgrade"]);
    env.admin_ok(&["accounts", "create", "acme@example.com"]);
    let user_key = env.admin_ok(&["user-keys", "create", "acme@example.com"]);
    let db = json!({"userKey": user_key, "account": "acme@example.com", "dbName": "notes"});
    assert_eq!(post(&env, "/createDatabase", None, db.clone()).0, 201);
    // Records stored before the keyword index existed (0.7.0 builds it).
    let mut records = db.clone();
    records["records"] = json!([
        {"title": "Refunds", "content": "Money back within 14 days of delivery."},
        {"title": "Parts", "content": "Order part XK-42 from the warehouse."},
        {"title": "Shipping", "content": "Orders ship in two days; refunds take longer."}
    ]);
    let (status, body) = post(&env, "/storeEmbeddings", None, records);
    assert_eq!(status, 201, "{body}");
    // Assessments as the previous version recorded them, four of the
    // default account's and two of acme's. Its risk_score cannot write them:
    // the library installed is this build's, which needs this version's
    // tables (make run updates the extension before serving).
    let ids: Vec<String> = (0..6)
        .map(|n| {
            let t = transaction(n);
            let account = if n < 4 { "default@localhost" } else { "acme@example.com" };
            cluster.psql(&format!(
                "INSERT INTO vigil.transactions (request, features, score, level, result, confidence,
                                                 reasons, email, device, ip, amount, account)
                 VALUES ('{t}', '{{}}', 12.5, 5, 'Passed', 'Medium', '[]', '{}', '{}', '{}', {}, '{account}')
                 RETURNING id",
                t["customerEmail"].as_str().unwrap(),
                t["deviceFingerprint"].as_str().unwrap(),
                t["ipAddress"].as_str().unwrap(),
                t["amount"],
            ))
        })
        .collect();
    // Labelled as a SQL caller that entered no account does (the default
    // account's transaction).
    cluster.psql(&format!(
        "SELECT vigil.transaction_feedback('{}', 'fraud')",
        ids[0]
    ));
    cluster.psql(
        "SELECT vigil.blocklist_add('email', 'blocked@example.com', 'upgrade test', NULL);
         CREATE TABLE public.notes (id int PRIMARY KEY, body text, v real[]);
         INSERT INTO public.notes
             SELECT i, 'note ' || i, vigil.embed('note number ' || i || ' about ' || (i % 7)) FROM generate_series(1, 40) i;
         CREATE INDEX notes_v ON public.notes USING vigil_hnsw (v vigil.cosine_ops);",
    );
    let nearest = "SET enable_seqscan = off; \
                   SELECT string_agg(id::text, ',') FROM (SELECT id FROM public.notes \
                   ORDER BY v OPERATOR(vigil.<=>) vigil.embed('note number 12 about 5') LIMIT 5) t;";
    let nearest_before = cluster.psql(nearest);
    let before = census(&cluster);

    // Upgraded as `make run` upgrades, with the sidecar still serving.
    cluster.upgrade().expect("the upgrade succeeds");
    assert_eq!(
        cluster.psql("SELECT extversion FROM pg_extension WHERE extname = 'vigil'"),
        CURRENT
    );
    assert_eq!(census(&cluster), before, "every row is still there");
    // Each row keeps its account; no account has a review budget of its own
    // until it sets one (0.18.0).
    assert_eq!(
        cluster.psql(
            "SELECT (SELECT count(*) FROM vigil.transactions WHERE account = 'acme@example.com') || ' ' ||
                    (SELECT count(*) FROM vigil.accounts WHERE review_rate IS NOT NULL)"
        ),
        "2 0"
    );
    assert_eq!(
        cluster.psql("SELECT vigil.set_risk_review_rate('acme@example.com', 0.02)"),
        "t"
    );
    assert_eq!(
        cluster.psql(
            "SELECT (SELECT count(*) FROM vigil.transactions WHERE account = vigil.default_account()) || ' ' ||
                    (SELECT count(*) FROM vigil.feedback WHERE account = vigil.default_account()) || ' ' ||
                    (SELECT count(*) FROM vigil.fraud_identities WHERE account = vigil.default_account()) || ' ' ||
                    (SELECT count(*) FROM vigil.blocklist WHERE account = vigil.default_account()) || ' ' ||
                    (SELECT count(*) FROM vigil.identity_assessments WHERE account <> vigil.default_account()) || ' ' ||
                    (SELECT string_agg(DISTINCT account, ',') FROM vigil.api_keys)"
        ),
        "4 1 3 1 0 default@localhost"
    );
    assert_eq!(
        cluster.psql(
            "SELECT count(*) FILTER (WHERE f.occurred_at = t.occurred_at) || '/' || count(*)
             FROM vigil.fraud_identities f JOIN vigil.transactions t ON t.id = f.transaction_id"
        ),
        "3/3",
        "each mark of confirmed fraud (e-mail, device, IP: no card)  keeps the fraud's own time (0.9.0 reads it)"
    );
    assert_eq!(
        cluster.psql("SELECT count(*) FROM vigil.transactions WHERE occurred_at = received_at"),
        "6",
        "earlier assessments keep their event time (0.5.0 dated them when they were received)"
    );
    assert_eq!(
        cluster.psql(
            "SELECT string_agg(attname || '=' || attcompression::text, ',' ORDER BY attname) \
             FROM pg_attribute WHERE attrelid = 'vigil.transactions'::regclass \
             AND attname IN ('request', 'features', 'reasons')"
        ),
        "features=l,reasons=l,request=l",
        "0.6.0 records with lz4 (this server has it)"
    );
    assert_eq!(
        cluster.psql(nearest),
        nearest_before,
        "the index answers as before"
    );
    let report: Value =
        serde_json::from_str(&cluster.psql("SELECT vigil.hnsw_check('public.notes_v')")).unwrap();
    assert_eq!(report["elements"], 40, "{report}");
    // The vector database's index, rebuilt by 0.7.9's script, keeps
    // neighbour codes (384 dimensions).
    assert_eq!(
        cluster.psql("SELECT vigil.hnsw_check('vigil.vector_records_embedding')->>'vectors'"),
        "unit half, coded"
    );
    // 0.10.0 rebuilds it partitioned by database: one graph per database.
    assert_eq!(
        cluster.psql(
            "SELECT r->>'partitioned' || ' ' || (r->>'keys') || ' ' || (r->>'elements') \
             FROM vigil.hnsw_check('vigil.vector_records_embedding') r"
        ),
        "true 1 3"
    );
    // 0.14.0 builds it again with a beam of 128: the graph itself, not only
    // the option (the search beams of vigil._search_ef assume such graphs).
    assert_eq!(
        cluster.psql(
            "SELECT (r->>'ef_construction') || ' ' || (r->>'elements') \
             FROM vigil.hnsw_check('vigil.vector_records_embedding') r"
        ),
        "128 3"
    );

    // Records stored before keep their openings (0.11.0 and later write one
    // with each record), each the one a store writes now; fill_openings has
    // none to read, and the keyword index stays as it was.
    let postings = "SELECT string_agg(term || ':' || size, ',' ORDER BY term, first_id) FROM vigil.vector_postings";
    let postings_before = cluster.psql(postings);
    assert_eq!(cluster.psql("SELECT vigil.fill_openings()"), "0");
    assert_eq!(
        cluster.psql(
            "SELECT count(*) FROM vigil.vector_records r WHERE r.opening = \
             (SELECT e.opening FROM vigil._embed_records(ARRAY[r.title], ARRAY[r.content]) e)"
        ),
        "3"
    );
    assert_eq!(cluster.psql(postings), postings_before);

    // Keyword search finds records stored before the upgrade, from postings
    // the upgrade built: one per record and term.
    assert_eq!(
        cluster.psql(
            "SELECT (SELECT sum(size) FROM vigil.vector_postings) = \
                    (SELECT count(*) FROM vigil.vector_records r, unnest(r.terms))"
        ),
        "t"
    );
    let mut search = db.clone();
    search["query"] = json!("xk-42");
    search["limit"] = json!(3);
    let (status, body) = post(&env, "/hybridSearch", None, search.clone());
    assert_eq!(
        (status, &body[0]["title"]),
        (200, &json!("Parts")),
        "{body}"
    );
    search["query"] = json!("refunds");
    let (status, body) = post(&env, "/hybridSearch", None, search);
    let titles: Vec<&str> = body
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["title"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        status == 200 && titles[..2].contains(&"Refunds") && titles[..2].contains(&"Shipping"),
        "{body}"
    );

    // The same credentials work, and every function does.
    let (status, body) = post(&env, "/createDatabase", None, db);
    assert_eq!((status, &body["created"]), (200, &json!(false)), "{body}");
    let (status, body) = post(&env, "/api/transaction", Some(&api_key), transaction(0));
    assert_eq!(status, 200, "{body}");
    // The fraud labelled before holds for the key made before: its e-mail.
    assert_eq!(body["Result"], "Failed", "{body}");
    let (status, body) = post(
        &env,
        &format!("/api/transaction/{}/feedback", ids[1]),
        Some(&api_key),
        json!({"label": "legit"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        &env,
        "/api/transaction",
        Some(&api_key),
        json!({"customerEmail": "blocked@example.com", "amount": 10}),
    );
    assert_eq!((status, &body["Result"]), (200, &json!("Failed")), "{body}");
    let (status, body) = post(
        &env,
        "/api/transaction",
        Some(&api_key),
        json!({"amount": "ten"}),
    );
    assert_eq!(
        (status, &body["error"]["field"]),
        (400, &json!("amount")),
        "{body}"
    );
    assert_eq!(
        cluster.psql("SELECT array_length(vigil.embed('hello'), 1)"),
        "384"
    );
    // What 0.4.0 added: the identity check, for a key made before it.
    let photo = vigil_identity::synthetic::jpeg(&vigil_identity::synthetic::card(1), 90, None);
    let form = reqwest::blocking::multipart::Form::new().part(
        "image",
        reqwest::blocking::multipart::Part::bytes(photo).file_name("id.jpg"),
    );
    let response = reqwest::blocking::Client::new()
        .post(env.url("/assess-id"))
        .header("x-api-key", &api_key)
        .multipart(form)
        .send()
        .expect("sent");
    assert_eq!(response.status(), 200);
    let identity: Value = response.json().unwrap();
    assert_eq!(identity["Result"], "Passed", "{identity}");
    // What 0.2.0 changed: admin errors name their argument.
    let (ok, _, err) = cluster.run(
        "\\set VERBOSITY verbose\nSELECT * FROM vigil.rotate_key('vk_nonexistent', interval '-1 hour');",
    );
    assert!(!ok && err.contains("COLUMN NAME:  old_key_lives"), "{err}");

    // The schema is the one a fresh install makes (the test's own table aside).
    cluster.psql("DROP TABLE public.notes");
    let fresh = Cluster::start();
    let (upgraded, made) = (cluster.schema_dump(), fresh.schema_dump());
    assert!(
        made.contains("vigil.risk_score"),
        "the dump lists the extension's members"
    );
    if upgraded != made {
        let diff: Vec<_> = upgraded
            .lines()
            .zip(made.lines())
            .filter(|(a, b)| a != b)
            .take(10)
            .collect();
        panic!("the upgraded schema differs from a fresh install's: {diff:#?}");
    }
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!log.contains("ERROR"), "the sidecar logged errors: {log}");
}

#[test]
fn every_version_the_scripts_name_upgrades_to_this_one() {
    // Versions from the upgrade scripts' names (vigil--A--B.sql): each was
    // released, and each script was tested from its A when it was written.
    let dir = workspace_root().join("extension/sql");
    let mut versions: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let pair = name
                .strip_prefix("vigil--")?
                .strip_suffix(".sql")?
                .to_owned();
            let (from, _) = pair.split_once("--")?;
            Some(from.to_owned())
        })
        .collect();
    versions.sort_by_key(|v| parse(v));
    assert_eq!(versions.first().map(String::as_str), Some("0.1.0"));
    let cluster = Cluster::start();
    for version in &versions {
        let path = cluster.psql(&format!(
            "SELECT coalesce(path, 'none') FROM pg_extension_update_paths('vigil') \
             WHERE source = '{version}' AND target = '{CURRENT}'"
        ));
        assert!(
            path.starts_with(version.as_str()) && path.ends_with(CURRENT),
            "no chain of scripts from {version} to {CURRENT}: {path:?}"
        );
    }
}

#[test]
fn a_cluster_of_a_version_without_an_upgrade_path_is_left_alone() {
    let cluster = Cluster::start();
    // A version no script leads from, as a cluster made by a newer build would hold.
    cluster.psql("UPDATE pg_extension SET extversion = '9.9.9' WHERE extname = 'vigil'");
    let err = cluster.upgrade().expect_err("no path from 9.9.9");
    assert!(
        err.contains("9.9.9") && err.contains(CURRENT),
        "the refusal names both versions: {err}"
    );
}
