//! Search quality on two labelled sets over one corpus of 3,000 Debian
//! package descriptions (`bench/vectordb/eval-corpus.jsonl.gz`, frozen from
//! `corpus.py --limit 3000`):
//!
//! - `eval`: 300 natural-language queries written by reading one
//!   description each (`bench/vectordb/queries.tsv`), records titled with
//!   the package's short description;
//! - `known`: 89 known-item queries, each a paraphrase of one description's
//!   first sentence (`bench/vectordb/known-items.tsv`), records titled
//!   with the package's name, a short identifier.
//!
//! Each branch, the default hybrid search and the best plain fusions of the
//! exact branches are measured by MRR@10 and recall@10 of the labelled
//! answer. The default must beat either branch on both sets, and the best
//! plain fusion (tuned on each set itself) on `eval` by a margin.
//!
//! `cargo test --release -p vigil-e2e --test e2e search_quality:: -- --nocapture`
//! prints the tables docs/vector-database.md reports.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{json, Value};
use vigil_e2e::{eval_corpus, feed_script, shared, workspace_root};

const ACCOUNT: &str = "quality@example.com";

/// One labelled set: the database it is stored in, its queries' file, and
/// what a record's title is.
struct Set {
    db: &'static str,
    queries: &'static str,
    title: fn(&Value) -> Value,
}

const SETS: [Set; 2] = [
    Set {
        db: "eval",
        queries: "queries.tsv",
        title: |doc| doc["title"].clone(),
    },
    Set {
        db: "known",
        queries: "known-items.tsv",
        title: |doc| doc["name"].clone(),
    },
];

/// `method|set|mrr|recall` per method and set, after storing the corpus
/// once per set over SQL, as the application would.
fn measure(methods: &[(&str, &str)], extra: &str) -> BTreeMap<(String, String), (f64, f64)> {
    let env = shared();
    let root = workspace_root().join("bench/vectordb");
    let docs = eval_corpus();

    // The corpus is embedded on both cores: one backend's model on one
    // thread made this the longest e2e test (588 s of a 19m48s stage).
    let mut script = format!(
        "SET client_min_messages = warning;\n\
         SET vigil.embed_threads = 2;\n\
         SELECT vigil.delete_account('{ACCOUNT}');\n\
         SELECT vigil.create_account('{ACCOUNT}');\n\
         SET vigil.account = '{ACCOUNT}';\n\
         CREATE TEMP TABLE q (db text, package text, query text);\n"
    );
    for set in &SETS {
        script += &format!(
            "SELECT count(*) FROM vigil.create_database('{}');\n",
            set.db
        );
        let records: Vec<Value> = docs
            .iter()
            .map(|doc| json!({"title": (set.title)(doc), "content": doc["content"], "metadata": {"name": doc["name"]}}))
            .collect();
        for batch in records.chunks(500) {
            script += &format!(
                "SELECT count(*) FROM vigil.store_records($batch${}$batch$::jsonb, '{}');\n",
                Value::Array(batch.to_vec()),
                set.db
            );
        }
        let queries = std::fs::read_to_string(root.join(set.queries)).unwrap();
        let rows: Vec<String> = queries
            .lines()
            .skip(1)
            .map(|line| {
                let (package, query) = line.split_once('\t').unwrap();
                format!("('{}', $q${package}$q$, $q${query}$q$)", set.db)
            })
            .collect();
        assert!(rows.len() >= 89, "{}", set.queries);
        script += &format!("INSERT INTO q VALUES\n{};\n", rows.join(",\n"));
    }
    script += "ALTER TABLE q ADD COLUMN qv real[];\nUPDATE q SET qv = vigil.embed(query);\n";
    for (name, call) in methods {
        script += &format!(
            "SELECT '{name}', q.db, avg(coalesce(1.0 / r.rank, 0)), avg((r.rank IS NOT NULL)::int)
             FROM q LEFT JOIN LATERAL (
                 SELECT x.n AS rank FROM {call} WITH ORDINALITY AS x (id, t, c, metadata, created, s, n)
                 WHERE x.metadata ->> 'name' = q.package) r ON true
             GROUP BY q.db;\n"
        );
    }
    script += extra;
    let mut psql = Command::new(workspace_root().join("scripts/pg-cluster.sh"));
    psql.args([
        "psql",
        env.cluster_dir.to_str().unwrap(),
        "-At",
        "-v",
        "ON_ERROR_STOP=1",
    ]);
    let (ok, out, err) = feed_script(psql, &script);
    assert!(ok, "{err}");
    out.lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split('|').collect();
            (parts.len() == 4).then(|| {
                (
                    (parts[0].to_owned(), parts[1].to_owned()),
                    (parts[2].parse().unwrap(), parts[3].parse().unwrap()),
                )
            })
        })
        .collect()
}

/// The best plain fusions of the two exact branches, each query's top 100
/// of each: Reciprocal Rank Fusion over a grid of k (1 to 100) and vector
/// weights (0.5 to 3), and a convex combination of scores min-max
/// normalised within each list over a grid of weights; the best of each
/// grid on each set, as `name|set|mrr|recall` lines.
const PLAIN_FUSION: &str = "
CREATE TEMP TABLE dense AS SELECT q.db, q.package, x.id, x.rnk, x.sim FROM q, LATERAL (
  SELECT r.id, row_number() OVER (ORDER BY vigil.cosine_distance(r.embedding, q.qv), r.id) AS rnk,
         1 - vigil.cosine_distance(r.embedding, q.qv) AS sim
  FROM vigil.vector_records r WHERE r.db = vigil._database(q.db)
  ORDER BY vigil.cosine_distance(r.embedding, q.qv), r.id LIMIT 100) x;
CREATE TEMP TABLE sparse AS SELECT q.db, q.package, k.id, k.n AS rnk, k.s::float8 AS score
FROM q, LATERAL vigil.keyword_search(q.query, 100, q.db) WITH ORDINALITY k(id, t, c, m, cr, s, n);
CREATE TEMP TABLE answer AS SELECT q.db, q.package, r.id FROM q JOIN vigil.vector_records r
  ON r.metadata ->> 'name' = q.package AND r.db = vigil._database(q.db);
CREATE FUNCTION pg_temp.score(fused text) RETURNS TABLE (db text, mrr float8, recall float8)
LANGUAGE plpgsql AS $f$
BEGIN
  RETURN QUERY EXECUTE 'SELECT a.db, avg(coalesce(1.0 / x.rnk, 0))::float8, avg((x.rnk IS NOT NULL)::int)::float8 FROM answer a LEFT JOIN
           (SELECT db, package, id, row_number() OVER (PARTITION BY db, package ORDER BY score DESC, id) AS rnk
            FROM (' || fused || ') f) x ON x.db = a.db AND x.package = a.package AND x.id = a.id AND x.rnk <= 10
           GROUP BY a.db';
END $f$;
SELECT DISTINCT ON (s.db) 'plain fusion, best RRF', s.db, s.mrr, s.recall
FROM unnest(ARRAY[1, 5, 10, 20, 40, 60, 100]) kk, unnest(ARRAY[0.5, 0.75, 1, 1.5, 2, 3]) w,
  LATERAL pg_temp.score(format('SELECT db, package, id, sum(s) AS score FROM (SELECT db, package, id, %s / (%s + rnk) AS s
    FROM dense UNION ALL SELECT db, package, id, 1.0 / (%s + rnk) FROM sparse) u GROUP BY 1, 2, 3', w, kk, kk)) s
ORDER BY s.db, s.mrr DESC;
SELECT DISTINCT ON (s.db) 'plain fusion, best convex', s.db, s.mrr, s.recall
FROM unnest(ARRAY[0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]) a,
  LATERAL pg_temp.score(format('SELECT db, package, id, sum(s) AS score FROM (
    SELECT db, package, id, %s * (sim - min(sim) OVER w) / nullif(max(sim) OVER w - min(sim) OVER w, 0) AS s
    FROM dense WINDOW w AS (PARTITION BY db, package)
    UNION ALL SELECT db, package, id, (1 - %s) * (score - min(score) OVER w) / nullif(max(score) OVER w - min(score) OVER w, 0)
    FROM sparse WINDOW w AS (PARTITION BY db, package)) u GROUP BY 1, 2, 3', a, a)) s
ORDER BY s.db, s.mrr DESC;
";

#[test]
fn hybrid_search_beats_either_branch_and_the_best_plain_fusion() {
    let results = measure(
        &[
            ("keyword (BM25)", "vigil.keyword_search(q.query, 10, q.db)"),
            ("vector", "vigil.query_embeddings(q.query, q.db, 10, q.qv)"),
            (
                "hybrid (default: convex)",
                "vigil.hybrid_search(q.query, 10, q.db, query_vector => q.qv)",
            ),
            (
                "hybrid rrf",
                "vigil.hybrid_search(q.query, 10, q.db, 'rrf', query_vector => q.qv)",
            ),
        ],
        PLAIN_FUSION,
    );
    for set in &SETS {
        println!(
            "\n{}:\n| method | MRR@10 | recall@10 |\n|---|---|---|",
            set.db
        );
        for ((name, db), (mrr, recall)) in &results {
            if db == set.db {
                println!("| {name} | {mrr:.3} | {recall:.3} |");
            }
        }
    }
    let mrr = |name: &str, db: &str| results[&(name.to_owned(), db.to_owned())].0;
    for set in &SETS {
        let db = set.db;
        let hybrid = mrr("hybrid (default: convex)", db);
        assert!(
            hybrid > mrr("keyword (BM25)", db) && hybrid > mrr("vector", db),
            "{db}: {results:?}"
        );
        let plain = mrr("plain fusion, best RRF", db).max(mrr("plain fusion, best convex", db));
        println!(
            "{db}: hybrid {hybrid:.3} against the best plain fusion {plain:.3}: {:+.3}",
            hybrid - plain
        );
        // Tuned on the set it is measured on, the plain fusion is an upper
        // bound for its kind; the default, untuned, reads the records'
        // openings too. On eval it must be ahead by a margin (0.006 when
        // measured, 2026-11-28), on the 89 known-item queries not behind.
        let margin = if db == "eval" { 0.003 } else { 0.0 };
        assert!(hybrid >= plain + margin, "{db}: {results:?}");
        // Sanity: each branch finds most answers; a broken branch would not.
        assert!(results[&("keyword (BM25)".to_owned(), db.to_owned())].1 > 0.5);
        assert!(results[&("vector".to_owned(), db.to_owned())].1 > 0.5);
    }
}
