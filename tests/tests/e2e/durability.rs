//! Durability and concurrency of `vigil_hnsw` indexes: committed rows and
//! the graph over them survive a crash (SIGKILL mid-write, then crash
//! recovery), concurrent inserts leave a well-formed graph with good recall,
//! and a physical streaming replica answers index scans like its primary.
//!
//! Tables live in `public` (the database's search path is `vigil, public`, so
//! the operators resolve unqualified and the tables by their unique names),
//! without autovacuum: only the VACUUMs a test runs change the graph behind
//! its back.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use serde_json::Value;
use vigil_e2e::{Cluster, Writers};

/// Dimensions of the vectors of the concurrent and replica tests: enough
/// for a cosine index to keep neighbour codes (page.rs, `CODED_MIN_DIMS`),
/// so concurrent inserts and replay cover them.
const DIMS: usize = 256;
/// Dimensions of the crash test's vectors, which must all find themselves:
/// uniform random vectors of many dimensions are the hardest data there is
/// for a graph, and one in thousands would not.
const CRASH_DIMS: usize = 16;

/// A fresh random `dims`-dimensional vector per row of the statement:
/// `outer` must be a column of the row being made, so that the subquery is
/// correlated and evaluated again for every row (uncorrelated, Postgres runs
/// it once and every row gets the same vector).
fn random_vector(outer: &str, dims: usize) -> String {
    format!(
        "(SELECT array_agg(random()::real ORDER BY d) FROM generate_series(1, {dims}) d
          WHERE ({outer}) IS NOT NULL)"
    )
}

/// `vigil.hnsw_check(index)`: the graph is well formed (else psql fails with
/// the ERROR describing the corruption); its statistics.
fn hnsw_check(cluster: &Cluster, index: &str) -> Value {
    let out = cluster.psql(&format!("SELECT vigil.hnsw_check('{index}')"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("hnsw_check printed {out:?}: {e}"))
}

fn count(report: &Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {report}"))
}

/// Asserts that the report is of a healthy graph of `dims`-dimensional
/// vectors with no element marked deleted; returns its element count.
fn check_clean(cluster: &Cluster, index: &str, dims: usize) -> u64 {
    let report = hnsw_check(cluster, index);
    assert_eq!(count(&report, "dims"), dims as u64, "{report}");
    assert_eq!(count(&report, "deleted"), 0, "{report}");
    assert!(count(&report, "links") > 0, "{report}");
    let levels: u64 = report["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("no levels in {report}"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(levels, count(&report, "elements"), "{report}");
    count(&report, "elements")
}

/// Rows of `a|b|...` as their fields.
fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').collect())
        .collect()
}

/// `settings`, then `EXPLAIN (COSTS OFF) sql`.
fn explain(settings: &str, sql: &str) -> String {
    format!("{settings} EXPLAIN (COSTS OFF) {sql}")
}

/// Rows each crash-test transaction inserts: a crash keeps all or none.
const ROWS_PER_TX: i64 = 5;

/// Every row of `table` looks itself up through its index `index` over `v`
/// (`ef_search` 100): the first row in index order with the row's vector as
/// the query. Checks that the plan uses the index; returns psql's rows
/// `row|found|distance`.
fn self_lookup(cluster: &Cluster, table: &str, index: &str, op: &str) -> String {
    let settings = "SET enable_seqscan = off; SET enable_bitmapscan = off;
                    SET vigil.hnsw_ef_search = 100;";
    let lookup = format!(
        "SELECT c.id, n.id, n.d FROM {table} c CROSS JOIN LATERAL
           (SELECT i.id, i.v {op} c.v AS d FROM {table} i ORDER BY i.v {op} c.v LIMIT 1) n
         ORDER BY c.id"
    );
    let plan = cluster.psql(&explain(settings, &lookup));
    assert!(
        plan.contains(&format!("Index Scan using {index} on {table} i")),
        "{plan}"
    );
    cluster.psql(&format!("{settings} {lookup}"))
}

/// [`self_lookup`] must find every row itself, at distance 0 (vectors are
/// distinct), but for at most `max_misses` rows. Returns the number of rows checked.
fn rows_find_themselves(
    cluster: &Cluster,
    table: &str,
    index: &str,
    op: &str,
    max_misses: usize,
) -> usize {
    let out = self_lookup(cluster, table, index, op);
    let found = rows(&out);
    // Cosine distance to itself may be a rounding error off 0; L2 is exact.
    let misses: Vec<_> = found
        .iter()
        .filter(|r| r[0] != r[1] || r[2].parse::<f64>().unwrap().abs() > 1e-6)
        .collect();
    assert!(
        misses.len() <= max_misses,
        "{} of {} rows of {table} not found first through {index} (row, found, distance): {misses:?}",
        misses.len(),
        found.len()
    );
    found.len()
}

/// Every row of `table` is in `index`: each finds itself through it. A
/// beam search is approximate (see the concurrent test: a rare row's search
/// for its own vector ends in a near neighbour), so a row missed at
/// `ef_search` 100 is looked up again with a beam of 1,000; one missed then
/// too is an element lost. Returns the number of rows checked.
fn every_row_finds_itself(cluster: &Cluster, table: &str, index: &str, op: &str) -> usize {
    let out = self_lookup(cluster, table, index, op);
    let found = rows(&out);
    let missed: Vec<&str> = found
        .iter()
        .filter(|r| r[0] != r[1] || r[2].parse::<f64>().unwrap().abs() > 1e-6)
        .map(|r| r[0])
        .collect();
    if !missed.is_empty() {
        let again = cluster.psql(&format!(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; SET vigil.hnsw_ef_search = 1000;
             SELECT c.id FROM {table} c CROSS JOIN LATERAL
               (SELECT i.id FROM {table} i ORDER BY i.v {op} c.v LIMIT 1) n
             WHERE c.id IN ({}) AND n.id <> c.id",
            missed.join(",")
        ));
        assert!(
            again.trim().is_empty(),
            "rows of {table} not found through {index} even with a beam of 1,000: {again}"
        );
        eprintln!(
            "{index}: {} of {} rows found themselves only with a wider beam",
            missed.len(),
            found.len()
        );
    }
    found.len()
}

/// The crash test's indexes with their operators: one of f32 vectors (L2)
/// and one of half-precision unit vectors (cosine, layout version 2).
const CRASH_INDEXES: [(&str, &str); 2] = [("hnsw_crash_v", "<->"), ("hnsw_crash_cos", "<=>")];

/// [`every_row_finds_itself`] on the crash test's table, through each index.
fn every_crash_row_finds_itself(cluster: &Cluster) -> usize {
    let [by_l2, by_cosine] =
        CRASH_INDEXES.map(|(index, op)| every_row_finds_itself(cluster, "hnsw_crash", index, op));
    assert_eq!(by_l2, by_cosine);
    by_l2
}

/// [`check_clean`] of each of the crash test's indexes: their element counts.
fn check_crash_indexes(cluster: &Cluster) -> [u64; 2] {
    assert_eq!(
        hnsw_check(cluster, "hnsw_crash_cos")["vectors"],
        "unit half"
    );
    CRASH_INDEXES.map(|(index, _)| check_clean(cluster, index, CRASH_DIMS))
}

#[test]
fn hnsw_index_survives_a_crash_mid_insert() {
    let started = Instant::now();
    let cluster = Cluster::start();
    // Built over a few hundred rows, half of them deleted and vacuumed (so
    // the first inserts write over removed elements' items), then inserted
    // into by concurrent transactions of ROWS_PER_TX rows each, the server
    // killed among them.
    cluster.psql(&format!(
        "CREATE TABLE public.hnsw_crash (id int PRIMARY KEY, v real[] NOT NULL)
           WITH (autovacuum_enabled = off);
         INSERT INTO hnsw_crash SELECT -g, {} FROM generate_series(1, 300) g;
         CREATE INDEX hnsw_crash_v ON hnsw_crash USING vigil_hnsw (v vigil.l2_ops);
         CREATE INDEX hnsw_crash_cos ON hnsw_crash USING vigil_hnsw (v);
         DELETE FROM hnsw_crash WHERE id % 2 = 0;
         VACUUM hnsw_crash;",
        random_vector("g", CRASH_DIMS)
    ));
    assert_eq!(check_crash_indexes(&cluster), [150, 150]);

    let writers = Writers::start(&cluster, 4, |tx| {
        format!(
            "INSERT INTO hnsw_crash SELECT {tx} * {ROWS_PER_TX} + g, {}
             FROM generate_series(0, {}) g;",
            random_vector("g", CRASH_DIMS),
            ROWS_PER_TX - 1
        )
    });
    writers.wait_for_commits(100);
    cluster.crash();
    let committed = writers.finish();
    let crashed = started.elapsed();
    cluster.restart();
    let log = cluster.server_log();
    assert!(
        log.contains("database system was interrupted") && log.contains("redo done"),
        "the restart ran no crash recovery:\n{log}"
    );

    // The heap: every committed transaction whole, none in part, vectors distinct.
    let txs = committed
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let no_index = "SET enable_indexscan = off; SET enable_bitmapscan = off;
                    SET enable_indexonlyscan = off;";
    assert_eq!(
        cluster.psql(&format!(
            "{no_index} SELECT count(*) FROM hnsw_crash WHERE id >= 0 AND id / {ROWS_PER_TX} = ANY('{{{txs}}}')"
        )),
        (committed.len() as i64 * ROWS_PER_TX).to_string(),
        "committed rows were lost"
    );
    assert_eq!(
        cluster.psql(&format!(
            "{no_index} SELECT id / {ROWS_PER_TX} FROM hnsw_crash WHERE id >= 0
             GROUP BY 1 HAVING count(*) <> {ROWS_PER_TX}"
        )),
        "",
        "transactions survived in part"
    );
    let heap_rows: u64 = cluster
        .psql(&format!("{no_index} SELECT count(*) FROM hnsw_crash"))
        .parse()
        .unwrap();
    assert_eq!(
        cluster.psql("SELECT count(DISTINCT v) = count(*) FROM hnsw_crash"),
        "t",
        "two rows drew the same vector"
    );

    // The graph: well formed, every committed row in it (and perhaps elements
    // of the transactions cut short, dead rows until VACUUM).
    // Each index on its own: a transaction cut short may have reached one
    // index and not the other.
    let elements = check_crash_indexes(&cluster);
    assert!(
        elements.iter().all(|&e| e >= heap_rows),
        "{elements:?} elements in the indexes, {heap_rows} rows in the table"
    );
    let checked = every_crash_row_finds_itself(&cluster);
    assert_eq!(checked as u64, heap_rows);

    // VACUUM takes the dead elements out; the graph stays whole.
    cluster.psql("VACUUM hnsw_crash");
    assert_eq!(check_crash_indexes(&cluster), [heap_rows; 2]);
    every_crash_row_finds_itself(&cluster);

    // The recovered index takes inserts again.
    cluster.psql(&format!(
        "INSERT INTO hnsw_crash VALUES (2000000000, {})",
        random_vector("1", CRASH_DIMS)
    ));
    assert_eq!(check_crash_indexes(&cluster), [heap_rows + 1; 2]);
    assert_eq!(every_crash_row_finds_itself(&cluster) as u64, heap_rows + 1);
    eprintln!(
        "crash test: {} transactions ({} rows) acknowledged before the crash, \
         {heap_rows} rows after recovery, {:?} elements before VACUUM; \
         crashed after {crashed:?}, done after {:?}",
        committed.len(),
        committed.len() as i64 * ROWS_PER_TX,
        elements,
        started.elapsed()
    );
}

/// Clusters the concurrency test's vectors gather around.
const CENTRES: usize = 8;

/// A vector near centre `centre` (an SQL expression), its coordinates drawn
/// afresh on every evaluation (one per row of `hnsw_centres`).
fn near_centre(centre: &str) -> String {
    format!(
        "(SELECT array_agg((c.x + (random() - 0.5) * 0.5)::real ORDER BY c.d)
          FROM hnsw_centres c WHERE c.k = ({centre}) % {CENTRES})"
    )
}

/// Top-10 ids per query vector of `hnsw_queries` (`q`, `v`) from `table`
/// ordered by `op`, after `settings`; checks the plan has `plan_has`.
fn top10(
    cluster: &Cluster,
    settings: &str,
    table: &str,
    op: &str,
    plan_has: &str,
) -> BTreeMap<i64, Vec<i64>> {
    let sql = format!(
        "SELECT q.q, n.id FROM hnsw_queries q CROSS JOIN LATERAL
           (SELECT id FROM {table} ORDER BY v {op} q.v LIMIT 10) n"
    );
    let plan = cluster.psql(&explain(settings, &sql));
    assert!(plan.contains(plan_has), "no {plan_has:?} in:\n{plan}");
    let mut top = BTreeMap::<i64, Vec<i64>>::new();
    for row in rows(&cluster.psql(&format!("{settings} {sql}"))) {
        top.entry(row[0].parse().unwrap())
            .or_default()
            .push(row[1].parse().unwrap());
    }
    top
}

#[test]
fn concurrent_inserts_build_a_sound_graph() {
    const WRITERS: usize = 4;
    const ROWS_EACH: usize = 300;
    const ROWS: usize = WRITERS * ROWS_EACH;
    let started = Instant::now();
    let cluster = Cluster::start();
    // The index exists before the first row: the writers race to give it its
    // dimensions and its entry point, then to link to each other's elements.
    cluster.psql(&format!(
        "CREATE TABLE public.hnsw_centres (k int, d int, x real);
         INSERT INTO hnsw_centres SELECT k, d, random()::real * 2 - 1
         FROM generate_series(0, {}) k, generate_series(1, {DIMS}) d;
         CREATE TABLE public.hnsw_concurrent (id int PRIMARY KEY, v real[] NOT NULL)
           WITH (autovacuum_enabled = off);
         CREATE INDEX hnsw_concurrent_v ON hnsw_concurrent USING vigil_hnsw (v);
         CREATE TABLE public.hnsw_queries AS SELECT q, {} AS v FROM generate_series(1, 20) q;",
        CENTRES - 1,
        near_centre("q")
    ));

    // One row per transaction; writer w inserts the rows w, w + 4, ... below
    // ROWS, then idles until told to stop.
    let writers = Writers::start(&cluster, WRITERS, |id| {
        if id < ROWS as i64 {
            format!(
                "INSERT INTO hnsw_concurrent VALUES ({id}, {});",
                near_centre(&id.to_string())
            )
        } else {
            "SELECT pg_sleep(0.01);".to_owned()
        }
    });
    writers.wait_for_commits(ROWS_EACH);
    let committed = writers.finish();
    assert!(committed.len() >= ROWS);
    let inserted = started.elapsed();

    assert_eq!(
        cluster.psql("SELECT count(*) FROM hnsw_concurrent"),
        ROWS.to_string()
    );
    assert_eq!(
        check_clean(&cluster, "hnsw_concurrent_v", DIMS),
        ROWS as u64
    );
    // Racing inserts kept every link's neighbour code (the check compares them).
    assert_eq!(
        hnsw_check(&cluster, "hnsw_concurrent_v")["vectors"],
        "unit half, coded"
    );
    assert_eq!(
        cluster.psql("SELECT count(DISTINCT v) FROM hnsw_concurrent"),
        ROWS.to_string()
    );
    // A beam search is approximate: for a rare row the search for its own
    // vector ends in a near neighbour instead (2 of 1,200 rows in 1 of 21 runs
    // here, at ef_search 100). The same kind of data in memory, inserted by one
    // writer, misses at the same rate (2 of 48,000) with no element left
    // unlinked (crates/hnsw/tests/hnsw/reachability.rs), so this is the
    // search's approximation, not a link lost between writers; hnsw_check
    // above checks the links. More than 1 in 200 would be a broken graph.
    rows_find_themselves(
        &cluster,
        "hnsw_concurrent",
        "hnsw_concurrent_v",
        "<=>",
        ROWS / 200,
    );

    // Recall@10 of the index against the exact order.
    let approx = top10(
        &cluster,
        "SET enable_seqscan = off;",
        "hnsw_concurrent",
        "<=>",
        "Index Scan using hnsw_concurrent_v on hnsw_concurrent",
    );
    let exact = top10(
        &cluster,
        "SET enable_indexscan = off; SET enable_bitmapscan = off;",
        "hnsw_concurrent",
        "<=>",
        "Seq Scan on hnsw_concurrent",
    );
    assert_eq!(exact.len(), 20);
    let mut hits = 0;
    for (q, exact) in &exact {
        assert_eq!(exact.len(), 10);
        let approx = approx.get(q).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(approx.len(), 10, "query {q}: {approx:?}");
        let approx: HashSet<_> = approx.iter().collect();
        hits += exact.iter().filter(|id| approx.contains(id)).count();
    }
    let recall = hits as f64 / (10 * exact.len()) as f64;
    assert!(recall >= 0.9, "recall@10 {recall}");
    eprintln!(
        "concurrency test: {ROWS} rows by {WRITERS} writers in {inserted:?}, recall@10 {recall}, \
         done after {:?}",
        started.elapsed()
    );
}

#[test]
fn a_streaming_replica_answers_hnsw_scans_like_its_primary() {
    let started = Instant::now();
    let primary = Cluster::start();
    let replica = primary.replica();
    assert_eq!(replica.psql("SELECT pg_is_in_recovery()"), "t");
    assert_eq!(
        replica.psql("SELECT status FROM pg_stat_wal_receiver"),
        "streaming"
    );

    // Rows before the index (its build is replayed), after it (inserts are),
    // deletions, the VACUUM that takes them out of the graph, and rows that
    // take the removed elements' items.
    primary.psql(&format!(
        "CREATE TABLE public.hnsw_replicated (id int PRIMARY KEY, v real[] NOT NULL)
           WITH (autovacuum_enabled = off);
         INSERT INTO hnsw_replicated SELECT g, {vector} FROM generate_series(1, 1000) g;
         CREATE INDEX hnsw_replicated_v ON hnsw_replicated USING vigil_hnsw (v vigil.l2_ops)
           WITH (m = 8, ef_construction = 32);
         CREATE INDEX hnsw_replicated_cos ON hnsw_replicated USING vigil_hnsw (v)
           WITH (m = 8, ef_construction = 32);
         INSERT INTO hnsw_replicated SELECT g, {vector} FROM generate_series(1001, 2000) g;
         DELETE FROM hnsw_replicated WHERE id % 5 = 0;
         VACUUM hnsw_replicated;
         INSERT INTO hnsw_replicated SELECT g, {vector} FROM generate_series(2001, 2500) g
           WHERE g % 5 <> 0;
         CREATE TABLE public.hnsw_queries AS SELECT g AS q, {vector} AS v
           FROM generate_series(1, 10) g;",
        vector = random_vector("g", DIMS)
    ));
    replica.wait_for_replay(&primary);
    assert_eq!(
        hnsw_check(&replica, "hnsw_replicated_cos")["vectors"],
        "unit half, coded"
    );
    // The same on both, through the index of f32 vectors (L2) and the one of
    // half-precision unit vectors (cosine, re-ranked by exact distance).
    for (index, op) in [("hnsw_replicated_v", "<->"), ("hnsw_replicated_cos", "<=>")] {
        replicated_alike(&primary, &replica, index, op);
    }
    eprintln!("replica test: done after {:?}", started.elapsed());
}

/// The replica test's checks through `index` (operator `op`): the primary's
/// graph is whole, and the replica answers and checks out the same.
fn replicated_alike(primary: &Cluster, replica: &Cluster, index: &str, op: &str) {
    let on_primary = hnsw_check(primary, index);
    assert_eq!(check_clean(primary, index, DIMS), 2000);

    let settings = "SET enable_seqscan = off;";
    let index_scan = format!("Index Scan using {index} on hnsw_replicated");
    let top_primary = top10(primary, settings, "hnsw_replicated", op, &index_scan);
    let top_replica = top10(replica, settings, "hnsw_replicated", op, &index_scan);
    assert_eq!(top_primary.len(), 10);
    for ids in top_primary.values() {
        assert_eq!(ids.len(), 10, "{ids:?}");
        assert!(ids.iter().all(|id| id % 5 != 0), "a deleted row: {ids:?}");
    }
    assert_eq!(top_replica, top_primary, "the replica's index scans differ");
    // Every row looked up by its own vector, the same answer on both. Not
    // necessarily the row itself: with m = 8 an element now and then ends up
    // with no links to it that a search follows (HNSW guarantees no
    // reachability; the default m = 16 of the other tests makes it rare).
    let lookups = self_lookup(primary, "hnsw_replicated", index, op);
    assert_eq!(rows(&lookups).len(), 2000);
    assert!(
        self_lookup(replica, "hnsw_replicated", index, op) == lookups,
        "the replica's self-lookups differ from the primary's"
    );

    // The replica's copy of the graph checks out the same (read-only).
    match replica.try_psql(&format!("SELECT vigil.hnsw_check('{index}')")) {
        Ok(out) => {
            let on_replica: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(on_replica, on_primary);
        }
        Err(e) => panic!("hnsw_check fails on the replica: {e}"),
    }
}
