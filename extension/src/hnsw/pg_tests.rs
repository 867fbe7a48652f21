//! `vigil_hnsw` in a real Postgres: every phase followed by `hnsw_check` and
//! a recall check against the exact operator.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// The operators live in schema vigil, which `make run` puts on the path.
    fn use_vigil_path() {
        Spi::run("SET search_path TO public, vigil").unwrap();
    }

    /// `n` rows of `dims`-dimensional vectors around 20 centres, deterministic.
    fn make_table(name: &str, n: usize, dims: usize) {
        Spi::run(&format!(
            "CREATE TABLE {name} (id int PRIMARY KEY, cat int, v real[]);
             SELECT setseed(0.42);
             CREATE TEMP TABLE centres AS
               SELECT c, array_agg(random()::real * 2 - 1) AS v
               FROM generate_series(0, 19) c, generate_series(1, {dims}) d GROUP BY c;
             INSERT INTO {name}
               SELECT i, i % 10, (SELECT array_agg(x + (random()::real - 0.5) * 0.6 ORDER BY o)
                                  FROM unnest(ce.v) WITH ORDINALITY AS u(x, o))
               FROM generate_series(1, {n}) i JOIN centres ce ON ce.c = i % 20;
             DROP TABLE centres;"
        ))
        .expect("table made");
    }

    fn query_vector(table: &str, id: i32) -> String {
        Spi::get_one::<String>(&format!(
            "SELECT (SELECT array_agg(x + 0.05 ORDER BY o) FROM unnest(v) WITH ORDINALITY u(x, o))::text FROM {table} WHERE id = {id}"
        ))
        .expect("spi")
        .expect("row")
    }

    fn ids(sql: &str) -> Vec<i32> {
        Spi::connect(|c| {
            c.select(sql, None, &[])
                .expect("select")
                .map(|r| r.get::<i32>(1).expect("int").expect("not null"))
                .collect()
        })
    }

    /// Mean recall@10 of the index over `queries` against the exact order.
    fn recall(table: &str, op: &str, queries: &[i32]) -> f64 {
        let mut hits = 0;
        for &q in queries {
            let qv = query_vector(table, q);
            let sql = format!("SELECT id FROM {table} ORDER BY v {op} '{qv}'::real[] LIMIT 10");
            Spi::run("SET enable_seqscan = off; SET enable_indexscan = on").unwrap();
            let approx = ids(&sql);
            Spi::run("SET enable_seqscan = on; SET enable_indexscan = off").unwrap();
            let exact = ids(&sql);
            Spi::run("RESET enable_seqscan; RESET enable_indexscan").unwrap();
            hits += approx.iter().filter(|id| exact.contains(id)).count();
        }
        hits as f64 / (10 * queries.len()) as f64
    }

    fn check(index: &str) -> serde_json::Value {
        Spi::get_one::<pgrx::JsonB>(&format!("SELECT vigil.hnsw_check('{index}')"))
            .expect("check runs")
            .expect("report")
            .0
    }

    fn uses_index(sql: &str, index: &str) -> bool {
        let plan: String = Spi::connect(|c| {
            c.select(&format!("EXPLAIN (COSTS OFF) {sql}"), None, &[])
                .expect("explain")
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        });
        plan.contains(index)
    }

    #[pg_test]
    fn operators_work_without_an_index() {
        use_vigil_path();
        let d = |sql: &str| Spi::get_one::<f64>(sql).unwrap().unwrap();
        assert!((d("SELECT '{3,4}'::real[] <-> '{0,0}'::real[]") - 5.0).abs() < 1e-6);
        assert!((d("SELECT '{1,0}'::real[] <=> '{0,1}'::real[]") - 1.0).abs() < 1e-6);
        assert!((d("SELECT '{1,2}'::real[] <#> '{3,4}'::real[]") + 11.0).abs() < 1e-6);
        assert!((d("SELECT vigil.inner_product('{1,2}', '{3,4}')") - 11.0).abs() < 1e-6);
        let err = |sql: &str| {
            PgTryBuilder::new(|| {
                Spi::run(sql).unwrap();
                String::new()
            })
            .catch_others(|e| match e {
                pg_sys::panic::CaughtError::PostgresError(r) => r.message().to_string(),
                _ => "other".into(),
            })
            .execute()
        };
        assert_eq!(
            err("SELECT '{1,2}'::real[] <-> '{1,2,3}'::real[]"),
            "vectors have different dimensions: 2 and 3"
        );
        assert_eq!(
            err("SELECT '{1,NULL}'::real[] <-> '{1,2}'::real[]"),
            "a vector must not contain NULLs"
        );
        assert_eq!(
            err("SELECT '{{1,2},{3,4}}'::real[] <-> '{1,2}'::real[]"),
            "a vector must be a one-dimensional array, not 2-dimensional"
        );
        assert_eq!(
            err("SELECT '{}'::real[] <-> '{1,2}'::real[]"),
            "a vector must not be empty"
        );
    }

    #[pg_test]
    fn build_search_and_check() {
        use_vigil_path();
        make_table("items", 3000, 32);
        Spi::run("CREATE INDEX items_v ON items USING vigil_hnsw (v)").unwrap();
        let report = check("items_v");
        assert_eq!(report["elements"], 3000, "{report}");
        assert_eq!(report["dims"], 32);
        assert_eq!(report["metric"], "cosine");
        let q = query_vector("items", 7);
        assert!(uses_index(
            &format!("SELECT id FROM items ORDER BY v <=> '{q}' LIMIT 10"),
            "items_v"
        ));
        let r = recall("items", "<=>", &[1, 50, 333, 999, 2500]);
        assert!(r >= 0.95, "recall {r}");
    }
}
