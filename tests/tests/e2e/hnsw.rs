//! `vigil_hnsw` as a psql user meets it: the errors they read, VACUUM
//! repairing the graph, REINDEX, and a build that runs out of
//! `maintenance_work_mem`. (Crashes, replicas and concurrent writers are in
//! `durability.rs`.)

use std::sync::OnceLock;

use vigil_e2e::Cluster;

/// One cluster for the file, used by one test at a time: VACUUM only removes
/// rows no open transaction (another test's CREATE INDEX) may still see.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::start)
}

/// Runs a script as the superuser with `vigil` on the search path, statement
/// by statement (each its own transaction, as typed in psql); returns
/// (success, stdout, stderr) as psql printed them.
fn psql(script: &str) -> (bool, String, String) {
    cluster().run(&format!("SET search_path = public, vigil;\n{script};\n"))
}

fn ok(script: &str) -> String {
    let (success, out, err) = psql(script);
    assert!(success, "{script}\nfailed: {err}");
    out
}

/// The ERROR line psql prints for `script`, which must fail.
fn error(script: &str) -> String {
    let (success, _, err) = psql(script);
    assert!(!success, "{script} should fail");
    err.lines()
        .find_map(|l| l.split_once("ERROR:  ").map(|(_, m)| m))
        .unwrap_or_else(|| panic!("no ERROR in {err}"))
        .to_owned()
}

/// `n` rows of 16-dimensional vectors around 20 centres.
fn make_table(name: &str, n: usize) {
    make_table_of(name, n, 16)
}

/// `n` rows of `dims`-dimensional vectors around 20 centres.
fn make_table_of(name: &str, n: usize, dims: usize) {
    ok(&format!(
        "CREATE TABLE {name} (id int PRIMARY KEY, v real[]);
         SELECT setseed(0.7);
         CREATE TEMP TABLE centres AS
           SELECT c, array_agg(random()::real * 2 - 1) AS v FROM generate_series(0, 19) c, generate_series(1, {dims}) GROUP BY c;
         INSERT INTO {name}
           SELECT i, (SELECT array_agg(x + (random()::real - 0.5) * 0.6 ORDER BY o) FROM unnest(ce.v) WITH ORDINALITY u(x, o))
           FROM generate_series(1, {n}) i JOIN centres ce ON ce.c = i % 20;"
    ));
}

fn check(index: &str) -> serde_json::Value {
    serde_json::from_str(&ok(&format!("SELECT vigil.hnsw_check('{index}')"))).expect("json report")
}

/// Recall@10 of the index against the exact order over the rows `queries`
/// selects, each query being a row's vector.
fn recall(table: &str, queries: &str) -> f64 {
    let top = |settings: &str, into: &str| {
        format!(
            "{settings} CREATE TEMP TABLE {into} AS SELECT q.id AS qid, a.id FROM {table} q
               CROSS JOIN LATERAL (SELECT id FROM {table} t ORDER BY t.v <=> q.v LIMIT 10) a WHERE q.id IN ({queries});"
        )
    };
    let script = [
        "DROP TABLE IF EXISTS approx, exact;".to_owned(),
        top("SET enable_seqscan = off; SET enable_indexscan = on;", "approx"),
        top("SET enable_seqscan = on; SET enable_indexscan = off;", "exact"),
        "SELECT (SELECT count(*) FROM approx JOIN exact USING (qid, id))::float8 / (SELECT count(*) FROM exact);"
            .to_owned(),
    ]
    .concat();
    ok(&script).parse().expect("a ratio")
}

#[test]
fn bad_input_gets_clear_errors() {
    let _serial = serial();
    ok("CREATE TABLE mixed (id int, v real[]); INSERT INTO mixed VALUES (1, '{1,2,3}'), (2, '{1,2}')");
    assert_eq!(
        error("CREATE INDEX mixed_v ON mixed USING vigil_hnsw (v)"),
        "vigil_hnsw index \"mixed_v\": row (0,2) has 2 dimensions, earlier rows 3: every vector in one index must have the same dimensions"
    );
    ok("DELETE FROM mixed WHERE id = 2; CREATE INDEX mixed_v ON mixed USING vigil_hnsw (v)");
    let cases = [
        ("INSERT INTO mixed VALUES (3, '{1,2}')", "vigil_hnsw index \"mixed_v\": row (0,3) has 2 dimensions, the index holds vectors of 3"),
        ("INSERT INTO mixed VALUES (5, '{1,NaN,0}')", "vigil_hnsw index \"mixed_v\": invalid vector: it contains NaN or infinity"),
        ("INSERT INTO mixed VALUES (6, '{1,NULL,0}')", "vigil_hnsw index \"mixed_v\": a vector must not contain NULLs"),
        (
            "SET enable_seqscan = off; SELECT id FROM mixed ORDER BY v <=> '{1,2}' LIMIT 1",
            "vigil_hnsw index \"mixed_v\": the query vector has 2 dimensions, the index holds vectors of 3",
        ),
        ("SELECT vigil.hnsw_check('mixed')", "\"mixed\" is not a vigil_hnsw index"),
        (
            "CREATE INDEX ON mixed USING vigil_hnsw (v) WITH (m = 40, ef_construction = 50)",
            "vigil_hnsw: ef_construction (50) must be at least 2 * m (80)",
        ),
        ("CREATE INDEX ON mixed USING vigil_hnsw (v) WITH (m = 1)", "value 1 out of bounds for option \"m\""),
    ];
    for (sql, message) in cases {
        assert_eq!(error(sql), message, "{sql}");
    }
    // Nothing half-written: the failed inserts left the graph as it was.
    assert_eq!(check("mixed_v")["elements"], 1);
    assert_eq!(ok("SELECT count(*) FROM mixed"), "1");
}

#[test]
fn a_zero_vector_is_stored_and_left_out_of_a_cosine_index_as_pgvector_does() {
    let _serial = serial();
    // At build time and at insert time; NULLs as before.
    ok("CREATE TABLE zeros (id int, v real[]);
        INSERT INTO zeros VALUES (1, '{0,0,0}'), (2, '{1,2,3}'), (3, '{1,1,1}'), (4, NULL);
        CREATE INDEX zeros_cos ON zeros USING vigil_hnsw (v vigil.cosine_ops);
        INSERT INTO zeros VALUES (5, '{1,2,4}'), (6, '{0,0,0}')");
    assert_eq!(
        ok("SELECT count(*) FROM zeros"),
        "6",
        "every write was stored"
    );
    assert_eq!(
        check("zeros_cos")["elements"],
        3,
        "the zero vectors are not in the index"
    );
    assert_eq!(
        ok("SET enable_seqscan = off; SELECT string_agg(id::text, ',') FROM (SELECT id FROM zeros ORDER BY v <=> '{3,3,3}') t"),
        "3,2,5"
    );
    // Under L2 a zero vector has a distance like any other, and is indexed.
    ok("CREATE INDEX zeros_l2 ON zeros USING vigil_hnsw (v vigil.l2_ops)");
    assert_eq!(check("zeros_l2")["elements"], 5);
    ok("DROP TABLE zeros");
}

#[test]
fn iterative_scan_takes_its_own_and_pgvectors_spellings() {
    let _serial = serial();
    // The setting exists once the library is loaded (any vigil call loads it).
    assert_eq!(ok("LOAD 'vigil'; SHOW vigil.hnsw_iterative_scan"), "strict");
    for (set, shown) in [
        ("off", "off"),
        ("Relaxed", "relaxed"),
        ("strict_order", "strict_order"),
        ("relaxed_order", "relaxed_order"),
    ] {
        assert_eq!(
            ok(&format!(
                "LOAD 'vigil'; SET vigil.hnsw_iterative_scan = {set}; SHOW vigil.hnsw_iterative_scan"
            )),
            shown
        );
    }
    let refused = error("LOAD 'vigil'; SET vigil.hnsw_iterative_scan = sideways");
    assert!(refused.contains("sideways"), "{refused}");
    // pgvector's relaxed_order continues past ef_search as relaxed does.
    make_table("spelled", 500);
    ok("CREATE INDEX spelled_v ON spelled USING vigil_hnsw (v)");
    let filtered = |setting: &str| {
        ok(&format!(
            "SET enable_seqscan = off; SET vigil.hnsw_ef_search = 10; SET vigil.hnsw_iterative_scan = {setting};
             SELECT count(*) FROM (SELECT id FROM spelled WHERE id % 10 = 0 ORDER BY v <=> (SELECT v FROM spelled WHERE id = 7) LIMIT 20) t"
        ))
    };
    assert_eq!(filtered("relaxed_order"), "20");
    assert_eq!(filtered("strict_order"), "20");
    assert_ne!(filtered("off"), "20", "off stops after ef_search rows");
    ok("DROP TABLE spelled");
}

#[test]
fn vacuum_repairs_the_graph_and_reindex_rebuilds_it() {
    let _serial = serial();
    churn("churn", 16, "unit half");
}

/// The same with vectors long enough for neighbour codes: every write of a
/// layer-0 list (build, insert, vacuum's repair) keeps each link's code,
/// which the check compares with the linked element's own.
#[test]
fn vacuum_repairs_the_graph_and_keeps_neighbour_codes() {
    let _serial = serial();
    churn("coded", 320, "unit half, coded");
}

/// Deletes a third of `table`, vacuums, inserts, reindexes; checks the
/// graph and the recall at each step.
fn churn(table: &str, dims: usize, vectors: &str) {
    make_table_of(table, 3000, dims);
    let sql = |s: &str| s.replace("churn", table);
    ok(&sql("CREATE INDEX churn_v ON churn USING vigil_hnsw (v)"));
    let check = |index: &str| check(&sql(index));
    let recall = |table: &str, queries: &str| recall(&sql(table), &sql(queries));
    let ok = |s: &str| ok(&sql(s));
    assert_eq!(check("churn_v")["vectors"], vectors);
    ok("DELETE FROM churn WHERE id % 3 = 0");
    // Before vacuum the deleted elements are still in the graph, never returned.
    assert_eq!(check("churn_v")["elements"], 3000);
    let returned = ok("SET enable_seqscan = off;
        SELECT count(*) FROM churn q CROSS JOIN LATERAL (SELECT id FROM churn t ORDER BY t.v <=> q.v LIMIT 10) a
        WHERE q.id % 97 = 1 AND a.id % 3 = 0");
    assert_eq!(returned, "0");

    ok("VACUUM churn");
    let report = check("churn_v");
    assert_eq!(
        (report["elements"].as_u64(), report["deleted"].as_u64()),
        (Some(2000), Some(0)),
        "{report}"
    );
    // A third of the graph is gone and re-linked: a little below a fresh build.
    let r = recall("churn", "SELECT id FROM churn WHERE id % 37 = 1");
    assert!(r >= 0.9, "recall after vacuum {r}");

    // The repaired graph takes new rows, and a rebuild holds exactly the live ones.
    // New vectors near old ones, not copies: exact ties would make the
    // recall depend on how each side orders equal distances.
    ok("INSERT INTO churn SELECT id + 10000,
          (SELECT array_agg(x + 0.05 ORDER BY o) FROM unnest(v) WITH ORDINALITY u(x, o))
        FROM churn WHERE id % 5 = 0");
    assert_eq!(check("churn_v")["elements"], 2400);
    ok("REINDEX INDEX churn_v");
    let report = check("churn_v");
    assert_eq!(
        (report["elements"].as_u64(), report["deleted"].as_u64()),
        (Some(2400), Some(0)),
        "{report}"
    );
    let r = recall("churn", "SELECT id FROM churn WHERE id % 37 = 1");
    assert!(r >= 0.95, "recall after reindex {r}");
}

/// A partitioned index (one graph per key) through deletes, VACUUM and
/// REINDEX: each key's graph is repaired on its own, a key whose rows all
/// go (its entry point with them) answers nothing and then takes rows
/// again, and every search stays as good as the exact one of its key.
#[test]
fn vacuum_repairs_each_key_of_a_partitioned_index() {
    let _serial = serial();
    make_table("keyed_src", 4000);
    ok("CREATE TABLE keyed (id int PRIMARY KEY, key bigint, v real[]);
        INSERT INTO keyed SELECT id, CASE WHEN id % 50 = 0 THEN 1 WHEN id % 2 = 1 THEN 2 ELSE 3 END, v FROM keyed_src;
        CREATE INDEX keyed_v ON keyed USING vigil_hnsw (key, v) WITH (ef_construction = 128)");
    let keyed_recall = |key: i64| -> f64 {
        let sql = |plan: &str| {
            format!(
                "{plan}; SELECT count(*) FROM keyed q CROSS JOIN LATERAL (SELECT id FROM keyed t WHERE t.key = {key}
                 ORDER BY t.v <=> q.v LIMIT 10) a WHERE q.id % 41 = 1 AND a.id IN (SELECT id FROM (SELECT id FROM keyed e
                 WHERE e.key = {key} ORDER BY vigil.cosine_distance(e.v, q.v), id LIMIT 10) x)"
            )
        };
        let hits: f64 = ok(&sql(
            "SET enable_seqscan = off; SET vigil.hnsw_ef_search = 80",
        ))
        .trim()
        .parse()
        .expect("a count");
        let queries: f64 = ok("SELECT count(*) * 10 FROM keyed q WHERE q.id % 41 = 1")
            .trim()
            .parse()
            .expect("a count");
        hits / queries
    };
    assert_eq!(check("keyed_v")["keys"], 3);
    ok("DELETE FROM keyed WHERE key = 2 AND id % 3 = 0; DELETE FROM keyed WHERE key = 1");
    ok("VACUUM keyed");
    let report = check("keyed_v");
    assert_eq!(
        (
            report["keys"].as_u64(),
            report["deleted"].as_u64(),
            report["unreachable"].as_u64()
        ),
        (Some(2), Some(0), Some(0)),
        "{report}"
    );
    // Built and searched as the vector database's index is (ef_construction
    // 128; vigil._search_ef's beam for a database of 50,000 records or fewer).
    for key in [2, 3] {
        let r = keyed_recall(key);
        eprintln!("key {key}: recall@10 against exact after VACUUM {r:.3}");
        assert!(r >= 0.99, "key {key}: recall after vacuum {r}");
    }
    let none = ok(
        "SET enable_seqscan = off; SELECT count(*) FROM (SELECT id FROM keyed WHERE key = 1
        ORDER BY v <=> (SELECT v FROM keyed_src WHERE id = 50) LIMIT 10) x",
    );
    assert_eq!(none.trim(), "0");
    ok("INSERT INTO keyed SELECT id + 10000, 1, v FROM keyed_src WHERE id % 50 = 0");
    ok("REINDEX INDEX keyed_v");
    let report = check("keyed_v");
    assert_eq!(
        (report["keys"].as_u64(), report["unreachable"].as_u64()),
        (Some(3), Some(0)),
        "{report}"
    );
    let r = keyed_recall(1);
    assert!(r >= 0.99, "key 1 after reindex: recall {r}");
}

/// Rows far from the others that the selection heuristic left linked from
/// no list: `hnsw_check` counts them, VACUUM links them, and searches for
/// their own vectors then find them. Short lists (`m` 4) under L2 on spread
/// clusters, inserted one at a time, strand a hundred or more of 4,000.
#[test]
fn vacuum_links_rows_no_search_reached() {
    let _serial = serial();
    ok("CREATE TABLE far (id int PRIMARY KEY, v real[]);
        CREATE INDEX far_v ON far USING vigil_hnsw (v l2_ops) WITH (m = 4, ef_construction = 32);
        SELECT setseed(0.3);
        CREATE TEMP TABLE centres AS
          SELECT c, array_agg(random()::real * 4 - 2) AS v FROM generate_series(0, 49) c, generate_series(1, 64) GROUP BY c;
        INSERT INTO far
          SELECT i, (SELECT array_agg(x + (random()::real - 0.5) * 3.4 ORDER BY o) FROM unnest(ce.v) WITH ORDINALITY u(x, o))
          FROM generate_series(1, 4000) i JOIN centres ce ON ce.c = i % 50 ORDER BY i");
    let missed = || -> u64 {
        ok(
            "SET enable_seqscan = off; SET vigil.hnsw_iterative_scan = off;
            SELECT count(*) FROM far q
            WHERE q.id <> (SELECT t.id FROM far t ORDER BY t.v <-> q.v LIMIT 1)",
        )
        .trim()
        .parse()
        .expect("a count")
    };
    let before = check("far_v");
    let stranded = before["unreachable"].as_u64().expect("unreachable counted");
    assert!(stranded >= 20, "the data should strand rows: {before}");
    let missed_before = missed();
    ok("VACUUM far");
    let after = check("far_v");
    assert_eq!(after["unreachable"], 0, "{after}");
    assert_eq!(after["elements"], 4000, "{after}");
    // Nothing was dead: the walk's count of live elements is what VACUUM
    // reports for the index.
    assert_eq!(
        ok("SELECT reltuples::bigint FROM pg_class WHERE relname = 'far_v'").trim(),
        "4000"
    );
    // Every stranded row was missed; most are found now (lists of 8 also
    // miss rows they reach).
    let missed_after = missed();
    eprintln!("{stranded} stranded; self-lookups missed {missed_before} before VACUUM, {missed_after} after");
    assert!(
        missed_after + stranded / 2 <= missed_before,
        "{stranded} stranded; self-lookups missed {missed_before} before VACUUM, {missed_after} after"
    );
}

/// An index that loses a third of its rows, is vacuumed and gains as many
/// keeps its size: each new element takes a removed one's items. Twice, so
/// slots taken over are freed and taken over again; the graph checks, and
/// searches keep their recall.
#[test]
fn rows_deleted_and_vacuumed_leave_room_that_new_rows_take() {
    let _serial = serial();
    make_table_of("reuse", 3000, 320);
    ok("CREATE INDEX reuse_v ON reuse USING vigil_hnsw (v)");
    let size = || -> u64 {
        ok("SELECT pg_relation_size('reuse_v')")
            .trim()
            .parse()
            .expect("a size")
    };
    let built = size();
    // Round 2 deletes the rows round 1 wrote into reused slots.
    let rounds = [
        ("id % 3 = 1", "id % 3 = 2", 10_000),
        ("id >= 10000", "id % 3 = 0", 20_000),
    ];
    for (round, (gone, near, shift)) in rounds.into_iter().enumerate() {
        ok(&format!("DELETE FROM reuse WHERE {gone}"));
        ok("VACUUM reuse");
        // New vectors near remaining ones, not copies.
        ok(&format!(
            "INSERT INTO reuse SELECT id + {shift},
               (SELECT array_agg(x + 0.03 ORDER BY o) FROM unnest(v) WITH ORDINALITY u(x, o))
             FROM reuse WHERE {near} AND id < 10000"
        ));
        let report = check("reuse_v");
        assert_eq!(
            (report["elements"].as_u64(), report["deleted"].as_u64()),
            (Some(3000), Some(0)),
            "round {round}: {report}"
        );
        assert_eq!(report["unreachable"], 0, "round {round}: {report}");
        let grown = size().saturating_sub(built);
        eprintln!("round {round}: {built} bytes built, {grown} more after taking the slots back");
        // Before slots were reused: about 1.4 MB more a round (the new rows'
        // items appended).
        assert!(
            grown <= built / 50,
            "round {round}: the index grew by {grown} bytes from {built}"
        );
        let r = recall("reuse", "SELECT id FROM reuse WHERE id % 37 = 1");
        assert!(r >= 0.95, "round {round}: recall {r}");
    }
}

#[test]
fn a_build_short_of_memory_says_so_and_inserts_the_rest() {
    let _serial = serial();
    make_table("big", 4000);
    let (success, _, stderr) =
        psql("SET maintenance_work_mem = '1MB'; CREATE INDEX big_v ON big USING vigil_hnsw (v)");
    assert!(success, "{stderr}");
    assert!(
        stderr.contains("NOTICE:  vigil_hnsw graph no longer fits into maintenance_work_mem after"),
        "{stderr}"
    );
    assert_eq!(check("big_v")["elements"], 4000);
    let r = recall("big", "SELECT id FROM big WHERE id % 101 = 1");
    assert!(r >= 0.95, "recall {r}");
}

#[test]
fn the_build_reports_its_phases_in_pg_stat_progress_create_index() {
    let _serial = serial();
    ok("CREATE TABLE progress (id int, v real[]);
        INSERT INTO progress SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 64) WHERE i > 0)
        FROM generate_series(1, 40000) i");
    let building = std::thread::spawn(|| {
        ok("SET maintenance_work_mem = '512MB'; CREATE INDEX progress_v ON progress USING vigil_hnsw (v)")
    });
    // Watch from another session until the build is over; every phase seen is kept.
    let mut phases = std::collections::BTreeSet::new();
    while !building.is_finished() {
        let (_, out, _) = psql(
            "SELECT phase FROM pg_stat_progress_create_index WHERE relid = 'progress'::regclass",
        );
        phases.extend(out.lines().filter(|l| !l.is_empty()).map(str::to_owned));
    }
    building.join().expect("the build succeeds");
    let ours = [
        "building index: loading tuples",
        "building index: building graph in memory",
        "building index: writing pages",
    ];
    assert!(
        phases.iter().any(|p| ours.contains(&p.as_str())),
        "phases seen: {phases:?}"
    );
    assert_eq!(check("progress_v")["elements"], 40000);
}
