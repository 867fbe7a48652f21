//! Vector databases through SQL, as an entered account and as the
//! application role.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::{count, error_of};

    fn enter(account: &str) {
        Spi::run(&format!("SELECT vigil.create_account('{account}')")).unwrap();
        let key = Spi::get_one::<String>(&format!(
            "SELECT key FROM vigil.create_user_key('{account}')"
        ))
        .unwrap()
        .unwrap();
        let outcome = Spi::get_one::<String>(&format!(
            "SELECT outcome FROM vigil.enter_account('{account}', '{key}', NULL)"
        ));
        assert_eq!(outcome, Ok(Some("ok".into())));
    }

    fn text(sql: &str) -> String {
        Spi::get_one::<String>(sql).unwrap().unwrap()
    }

    #[pg_test]
    fn create_database_is_idempotent_and_per_account() {
        enter("a@example.com");
        let created = || {
            Spi::get_one::<bool>("SELECT created FROM vigil.create_database('docs')")
                .unwrap()
                .unwrap()
        };
        assert!(created());
        assert!(!created(), "the second call finds it");
        enter("b@example.com");
        assert!(created(), "B's 'docs' is another database");
        let names = Spi::get_one::<i64>("SELECT count(*) FROM vigil.vector_databases");
        assert_eq!(names, Ok(Some(2)));
    }

    #[pg_test(
        error = "dbName must be 1 to 63 letters, digits, \"_\", \".\" or \"-\", starting with a letter or digit"
    )]
    fn a_bad_database_name_is_refused() {
        enter("a@example.com");
        Spi::run("SELECT * FROM vigil.create_database('../etc')").unwrap();
    }

    #[pg_test(error = "no account selected")]
    fn creating_needs_an_account() {
        Spi::run("SELECT * FROM vigil.create_database('docs')").unwrap();
    }

    #[pg_test]
    fn created_at_is_19_digit_nanoseconds() {
        let ns = Spi::get_one::<String>("SELECT vigil.epoch_ns('2026-11-21 10:00:00.123456+00')");
        assert_eq!(ns, Ok(Some("1795255200123456000".into())));
    }

    #[pg_test]
    fn records_round_trip_and_term_counts_follow_them() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs'); SET vigil.db = 'docs'").unwrap();
        Spi::run(
            r#"SELECT vigil.store_records('[
                {"title": "Grüße", "content": "東京 🚀 cats purr", "metadata": {"n": [1, {"x": null}]}},
                {"title": "Dogs", "content": "dogs bark at cats"},
                {"title": "Parts", "content": "order XK-42 now"}]')"#,
        )
        .unwrap();
        assert_eq!(
            text("SELECT title || '|' || content || '|' || metadata::text FROM vigil.list_records(0, 1)"),
            "Grüße|東京 🚀 cats purr|{\"n\": [1, {\"x\": null}]}"
        );
        assert_eq!(
            count("SELECT records FROM vigil.vector_terms WHERE term = 'cat'"),
            2
        );
        assert_eq!(
            count("SELECT records FROM vigil.vector_terms WHERE term = 'xk-42'"),
            1,
            "the exact token is a term"
        );
        assert_eq!(count("SELECT records FROM vigil.vector_databases"), 3);
        let total = count("SELECT total_length FROM vigil.vector_databases");
        assert_eq!(
            total,
            count("SELECT sum(vigil.bm25_length(terms))::bigint FROM vigil.vector_records")
        );

        let dogs = count("SELECT id FROM vigil.vector_records WHERE title = 'Dogs'");
        assert_eq!(
            text(&format!("SELECT title FROM vigil.delete_record({dogs})")),
            "Dogs"
        );
        assert_eq!(
            count("SELECT records FROM vigil.vector_terms WHERE term = 'cat'"),
            1
        );
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_terms WHERE term = 'bark'"),
            0,
            "a term no record holds is gone"
        );
        Spi::run("UPDATE vigil.vector_records SET content = 'order XK-43' WHERE title = 'Parts'")
            .unwrap();
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_terms WHERE term IN ('xk-42', 'now')"),
            0
        );
        assert_eq!(
            count("SELECT records FROM vigil.vector_terms WHERE term = 'xk-43'"),
            1
        );
        assert_eq!(count("SELECT records FROM vigil.vector_databases"), 2);
        assert_index_matches_records();

        assert_eq!(
            text("SELECT name || ':' || records FROM vigil.drop_database('docs')"),
            "docs:2"
        );
        assert_eq!(count("SELECT count(*) FROM vigil.vector_terms"), 0);
        assert_eq!(count("SELECT count(*) FROM vigil.vector_postings"), 0);
        assert_eq!(count("SELECT count(*) FROM vigil.vector_records"), 0);
    }

    #[pg_test(error = "records[1].content is required (a string)")]
    fn a_batch_names_the_record_at_fault() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs')").unwrap();
        Spi::run(
            r#"SELECT vigil.store_records('[{"title": "a", "content": "b"}, {"title": "c"}]', 'docs')"#,
        )
        .unwrap();
    }

    #[pg_test(error = "no database \"nope\" in account a@example.com")]
    fn an_unknown_database_is_not_found() {
        enter("a@example.com");
        Spi::run("SELECT * FROM vigil.query_embeddings('x', 'nope')").unwrap();
    }

    #[pg_test]
    fn a_long_name_is_echoed_cut_to_64_characters() {
        enter("a@example.com");
        let message = error_of(&format!(
            "SELECT * FROM vigil.query_embeddings('x', '{}')",
            "n".repeat(5000)
        ));
        assert_eq!(
            message,
            format!(
                "no database \"{}…\" in account a@example.com",
                "n".repeat(63)
            )
        );
    }

    #[pg_test]
    fn unicode_and_zero_width_blanks_are_blank() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs'); SET vigil.db = 'docs'").unwrap();
        // no-break, ideographic and em spaces, zero-width space and joiner,
        // the byte-order mark, a Hangul filler, a line separator
        let blanks = r"E'\u00a0\u3000\u2003', E'\u200b\u200d\ufeff\u3164\u2028'";
        assert_eq!(
            error_of(&format!("SELECT * FROM vigil.store_record({blanks})")),
            "title and content are both empty: nothing to store"
        );
        assert_eq!(
            error_of(r"SELECT * FROM vigil.keyword_search(E'\u200b\u00a0', 5)"),
            "query is blank: give words to search for"
        );
        assert_eq!(
            count(r"SELECT count(*) FROM vigil.store_record(E'\u200bcats', '')"),
            1,
            "a word beside a zero-width space is not blank"
        );
    }

    #[pg_test]
    fn internal_functions_given_a_database_of_another_account_say_so() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs')").unwrap();
        let theirs = count("SELECT id FROM vigil.vector_databases WHERE name = 'docs'");
        enter("b@example.com");
        let vector = "array_fill(0.1::real, ARRAY[384])";
        for sql in [
            format!("SELECT * FROM vigil._nearest({theirs}, {vector}, 10)"),
            format!("SELECT * FROM vigil._keyword_ranked({theirs}, 'cats', 10)"),
        ] {
            assert_eq!(
                error_of(&sql),
                format!("no database \"#{theirs}\" in account b@example.com"),
                "{sql}"
            );
        }
        Spi::run("SELECT vigil.create_database('mine')").unwrap();
        let mine = count("SELECT id FROM vigil.vector_databases WHERE name = 'mine'");
        assert_eq!(
            error_of(&format!(
                "SELECT * FROM vigil._nearest({mine}, {vector}, 0)"
            )),
            "k must be 1 to 2000, not 0"
        );
        assert_eq!(
            error_of(&format!(
                "SELECT * FROM vigil._nearest({mine}, ARRAY[1, 2]::real[], 5)"
            )),
            "query_vector must be 384 numbers"
        );
    }

    #[pg_test]
    fn the_weights_are_named_as_the_request_names_them() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs')").unwrap();
        let search = |v: &str, k: &str| {
            error_of(&format!(
                "SELECT * FROM vigil.hybrid_search('cats', 5, 'docs', 'convex', {v}, {k})"
            ))
        };
        assert_eq!(
            search("0", "0"),
            "vectorWeight and keywordWeight are both 0: at least one must be above 0"
        );
        assert_eq!(search("-1", "1"), "vectorWeight must be 0 or more, not -1");
        assert_eq!(
            search("1", "NULL"),
            "keywordWeight must be 0 or more, not null"
        );
    }

    #[pg_test(error = "dbName is required (pass it, or SET vigil.db)")]
    fn a_database_must_be_named() {
        enter("a@example.com");
        Spi::run("SELECT * FROM vigil.hybrid_search('x', 5)").unwrap();
    }

    #[pg_test(error = "limit must be 1 to 1000, not 1001")]
    fn limit_is_bounded() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs')").unwrap();
        Spi::run("SELECT * FROM vigil.list_records(0, 1001, 'docs')").unwrap();
    }

    #[pg_test(error = "start must be 0 or more, not -1")]
    fn start_is_not_negative() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('docs')").unwrap();
        Spi::run("SELECT * FROM vigil.list_records(-1, 10, 'docs')").unwrap();
    }

    /// Records with made-up embeddings and words (no model), straight into
    /// the table: `n` of them in database `db` of the entered account.
    fn fill(db: &str, n: i64) -> i64 {
        Spi::run(&format!("SELECT vigil.create_database('{db}')")).unwrap();
        Spi::run(&format!(
            "INSERT INTO vigil.vector_records (db, account, title, content, embedding)
             SELECT vigil._database('{db}'), vigil.current_account(), 'r' || i,
                    -- word w<j> appears in about 1 of j records: rare and common words
                    (SELECT string_agg('w' || j, ' ') FROM generate_series(1, 60) j
                      WHERE (i * 7919 + j * 104729) % j = 0 OR j % 13 = i % 13),
                    ARRAY(SELECT sin(i * 0.37 + d * (1 + i % 7))::real FROM generate_series(1, 384) d)
             FROM generate_series(1, {n}) i"
        ))
        .unwrap();
        count(&format!("SELECT vigil._database('{db}')"))
    }

    #[pg_test]
    fn nearest_returns_k_of_its_own_database_on_both_paths() {
        enter("a@example.com");
        let big = fill("big", 2500);
        let small = fill("small", 40);
        let q = "ARRAY(SELECT cos(d * 0.5)::real FROM generate_series(1, 384) d)";
        // 2,000: what a hybrid search of limit 1,000 asks of each branch,
        // past ef_search's largest.
        for (db, k) in [(small, 30), (big, 50), (big, 2000)] {
            let found = count(&format!(
                "SELECT count(*) FROM vigil._nearest({db}, {q}, {k}) x
                 JOIN vigil.vector_records r ON r.id = x.id AND r.db = {db}"
            ));
            assert_eq!(found, k, "{db}");
            // Against an exact scan of the same database.
            let overlap = count(&format!(
                "SELECT count(*) FROM vigil._nearest({db}, {q}, {k}) x
                 WHERE x.id IN (SELECT id FROM vigil.vector_records WHERE db = {db}
                                ORDER BY vigil.cosine_distance(embedding, {q}) LIMIT {k})"
            ));
            assert!(overlap * 10 >= k * 9, "{db}: recall {overlap}/{k}");
        }
        let hybrid = count(&format!(
            "SELECT count(*) FROM vigil.hybrid_search('w1 w2', 1000, 'big', query_vector => {q})"
        ));
        assert_eq!(hybrid, 1000);
        // The graph itself, filtered to the small database, still yields k.
        Spi::run("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off").unwrap();
        let through_index = count(&format!(
            "SELECT count(*) FROM (SELECT id FROM vigil.vector_records WHERE db = {small}
             ORDER BY embedding OPERATOR(vigil.<=>) {q} LIMIT 30) x"
        ));
        assert_eq!(through_index, 30);
    }

    /// The graph path's plan is made once per connection, here while the
    /// database is just big enough for the graph: once the table has grown
    /// and been analyzed, that plan still walks the graph (each walk counts
    /// as a scan of the index) rather than sorting the table.
    #[pg_test]
    fn the_graph_path_keeps_walking_the_graph_as_the_table_grows() {
        enter("a@example.com");
        let big = fill("big", 2100);
        let q = "ARRAY(SELECT cos(d * 0.5)::real FROM generate_series(1, 384) d)";
        let scans = || {
            count("SELECT pg_stat_get_xact_numscans('vigil.vector_records_embedding'::regclass)")
        };
        let nearest = || {
            count(&format!(
                "SELECT count(*) FROM vigil._nearest({big}, {q}, 30)"
            ))
        };
        let before = scans();
        assert_eq!(nearest(), 30);
        assert_eq!(scans(), before + 1, "the first search walked the graph");
        // Planned with sorts off, the exact path's sort costs a
        // disable_cost, past jit_above_cost: JIT must be off with them.
        assert_eq!(
            text("SELECT array_to_string(proconfig, ' ') FROM pg_proc WHERE oid = 'vigil._nearest'::regproc"),
            "search_path=pg_catalog, vigil plan_cache_mode=force_generic_plan enable_sort=off enable_seqscan=off \
             jit=off citus.propagate_set_commands=local"
        );
        Spi::run(&format!(
            "INSERT INTO vigil.vector_records (db, account, title, content, embedding)
             SELECT {big}, vigil.current_account(), 'more ' || i, 'w1 w2',
                    ARRAY(SELECT sin(i * 0.11 + d)::real FROM generate_series(1, 384) d)
             FROM generate_series(1, 3000) i;
             ANALYZE vigil.vector_records"
        ))
        .unwrap();
        let before = scans();
        assert_eq!(nearest(), 30);
        assert_eq!(
            scans(),
            before + 1,
            "the plan made on the small table walks the graph"
        );
    }

    /// The keyword index's top k for `query` against every matching record
    /// scored from its own `tsvector`, as `id:score` lists.
    fn ranked_from_index_and_exhaustively(db: i64, query: &str, k: i64) -> (String, String) {
        let from_index = text(&format!(
            "SELECT coalesce(string_agg(id || ':' || round(score::numeric, 4), ' '), '')
             FROM vigil._keyword_ranked({db}, '{query}', {k})"
        ));
        let exhaustive = text(&format!(
            "WITH s AS (
                 SELECT d.records AS n, (d.total_length::real / d.records)::real AS avg,
                        array_agg(t.term ORDER BY t.records, t.term) AS lex,
                        array_agg(vigil.bm25_idf(d.records, t.records) ORDER BY t.records, t.term) AS idf
                 FROM vigil.vector_databases d JOIN vigil.vector_terms t ON t.db = d.id
                 WHERE d.id = {db} AND t.term = ANY (tsvector_to_array(vigil.search_terms('{query}')))
                 GROUP BY d.records, d.total_length)
             SELECT coalesce(string_agg(id || ':' || round(score::numeric, 4), ' '), '') FROM (
                 SELECT r.id, vigil.bm25_score(r.terms, s.lex, s.idf, s.avg) AS score
                 FROM vigil.vector_records r, s
                 WHERE r.db = {db} AND r.terms @@ vigil._any_term(s.lex)
                 ORDER BY 2 DESC, 1 LIMIT {k}) x"
        ));
        (from_index, exhaustive)
    }

    /// Every (database, term, record) of the keyword index equals what the
    /// records' terms say, and each block's header matches its bytes.
    fn assert_index_matches_records() {
        let mismatched = count(
            "WITH indexed AS (
                 SELECT p.db, p.term, x.id
                 FROM vigil.vector_postings p,
                      vigil._bm25_top(ARRAY[1], ARRAY[p.postings], ARRAY[1::real], 1, 1000000) x
             ), held AS (
                 SELECT r.db, u.lexeme AS term, r.id FROM vigil.vector_records r, unnest(r.terms) u
             )
             SELECT count(*) FROM ((TABLE indexed EXCEPT ALL TABLE held)
                                   UNION ALL (TABLE held EXCEPT ALL TABLE indexed)) d",
        );
        assert_eq!(mismatched, 0, "postings differ from the records' terms");
        assert_eq!(
            count(
                "SELECT count(*) FROM vigil.vector_terms t
                 WHERE t.records <> (SELECT sum(size) FROM vigil.vector_postings p
                                     WHERE p.db = t.db AND p.term = t.term)"
            ),
            0,
            "a term's record count is the sum of its blocks' sizes"
        );
    }

    /// The terms a backend keeps between searches (`vigil.keyword_cache`:
    /// their record counts and posting blocks) follow each write, also
    /// within one transaction: the search right after a store finds the new
    /// record, and after its delete no longer does, with the scores of
    /// every record scored from the tables (record counts weigh them).
    #[pg_test]
    fn a_search_after_a_write_sees_it_though_terms_are_kept() {
        enter("a@example.com");
        let db = fill("kept", 500);
        let query = "w3 w5 w41";
        let ranked = || {
            let (from_index, exhaustive) = ranked_from_index_and_exhaustively(db, query, 5);
            assert_eq!(from_index, exhaustive);
            from_index
        };
        let before = ranked();
        assert!(!before.is_empty());
        assert_eq!(ranked(), before, "the same from the terms kept");
        // The rare word twice more: its weight falls for every record.
        Spi::run(&format!(
            "INSERT INTO vigil.vector_records (db, account, title, content, embedding)
             SELECT {db}, vigil.current_account(), 'new', c, array_fill(0.5::real, ARRAY[384])
             FROM unnest(ARRAY['w3 w3 w3 w5 w5 w41 w41', 'w41']) c"
        ))
        .unwrap();
        let new_id = count(&format!(
            "SELECT min(id) FROM vigil.vector_records WHERE db = {db} AND title = 'new'"
        ));
        assert!(ranked().starts_with(&format!("{new_id}:")));
        Spi::run(&format!(
            "DELETE FROM vigil.vector_records WHERE db = {db} AND title = 'new'"
        ))
        .unwrap();
        assert_eq!(ranked(), before);
        Spi::run("SET LOCAL vigil.keyword_cache = 0").unwrap();
        assert_eq!(ranked(), before);
    }

    /// Kept terms are read only through `_keyword_ranked`'s account check:
    /// the application role, which pooled connections share between
    /// accounts, may not ask for a database's terms itself.
    #[pg_test(error = "permission denied for function _bm25_search_kept")]
    fn kept_terms_are_read_only_through_the_account_check() {
        Spi::run("CREATE ROLE vigil_test_kept NOSUPERUSER NOBYPASSRLS").unwrap();
        Spi::run("GRANT USAGE ON SCHEMA vigil TO vigil_test_kept").unwrap();
        Spi::run("SET ROLE vigil_test_kept").unwrap();
        Spi::run("SELECT * FROM vigil._bm25_search_kept(1, 'a@example.com', 1, '(0,1)', ARRAY['w1'], 10, 1, 10)")
            .unwrap();
    }

    #[pg_test]
    fn keyword_ranking_from_the_index_equals_scoring_every_record() {
        enter("a@example.com");
        let db = fill("kw", 3000);
        // Rare and common words together; common words alone; many results.
        let queries = [
            ("w59 w2 w3 w4", 10),
            ("w1 w2 w3", 10),
            ("w47 w53 w5 w6 w7 w8", 10),
            ("w13", 10),
            ("w2 w31 w17", 200),
        ];
        for (query, k) in queries {
            let (from_index, exhaustive) = ranked_from_index_and_exhaustively(db, query, k);
            assert!(!from_index.is_empty(), "{query}");
            assert_eq!(from_index, exhaustive, "{query}");
        }
        assert_index_matches_records();
        // As writers leave it: records gone from the middle of blocks,
        // rewritten, and added one statement at a time.
        Spi::run(&format!(
            "DELETE FROM vigil.vector_records WHERE db = {db} AND id % 7 = 3;
             UPDATE vigil.vector_records SET content = content || ' w2 w59 extra'
              WHERE db = {db} AND id % 11 = 5;"
        ))
        .unwrap();
        for i in 0..30 {
            Spi::run(&format!(
                "INSERT INTO vigil.vector_records (db, account, title, content, embedding)
                 VALUES ({db}, vigil.current_account(), 'late {i}', 'w1 w2 w13 w47 late{}',
                         array_fill(0.5::real, ARRAY[384]))",
                i % 4
            ))
            .unwrap();
        }
        assert_index_matches_records();
        for (query, k) in queries.iter().chain(&[("late2 w1", 10)]) {
            let (from_index, exhaustive) = ranked_from_index_and_exhaustively(db, query, *k);
            assert_eq!(from_index, exhaustive, "{query} after writes");
        }
    }

    #[pg_test]
    fn a_search_takes_the_query_embedding_when_given() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('given'); SET vigil.db = 'given'").unwrap();
        Spi::run(
            r#"SELECT vigil.store_records('[
                {"title": "Refunds", "content": "Money back within 14 days."},
                {"title": "Shipping", "content": "Parcels leave the warehouse in two days."},
                {"title": "Parts", "content": "Order part XK-42 for the pump."}]')"#,
        )
        .unwrap();
        let listed = |search: &str| {
            text(&format!(
                "SELECT string_agg(title || ':' || round(x.s::numeric, 5), ',')
                 FROM (SELECT title, similarity AS s FROM {search}) x"
            ))
        };
        assert_eq!(
            listed("vigil.query_embeddings('when do parcels ship', NULL, 3)"),
            listed(
                "vigil.query_embeddings('when do parcels ship', NULL, 3,
                                        vigil.embed('when do parcels ship'))"
            ),
            "the query's own embedding, given, answers as computed"
        );
        let hybrid = |extra: &str| {
            text(&format!(
                "SELECT string_agg(title, ',') FROM vigil.hybrid_search('money back', 3, NULL,
                                                                        'rrf', 1, 1{extra})"
            ))
        };
        assert_eq!(hybrid(""), hybrid(", vigil.embed('money back')"));
        // What is given is what is searched for.
        assert_eq!(
            text(
                "SELECT title FROM vigil.query_embeddings('anything', NULL, 1,
                                                          vigil.embed('order part XK-42'))"
            ),
            "Parts"
        );
    }

    #[pg_test]
    fn a_record_is_read_by_its_opening_too() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('open'); SET vigil.db = 'open'").unwrap();
        Spi::run(
            r#"SELECT vigil.store_records('[
                {"title": "pump-xk", "content": "It moves water out of flooded cellars. The housing is cast iron and the seals last ten years."},
                {"title": "tagless", "content": "..."}]')"#,
        )
        .unwrap();
        Spi::run(
            "SELECT vigil.store_record('lamp', 'A lamp for reading at night. It dims by itself.')",
        )
        .unwrap();
        // Each record's opening is its first sentence as read in the record:
        // near that sentence alone, nearer than the whole record is.
        let near = |title: &str, what: &str| {
            text(&format!(
                "SELECT round((1 - vigil.cosine_distance(r.{what}, vigil.embed(
                        split_part(r.content, '. ', 1) || '.')))::numeric, 3)::text
                 FROM vigil.vector_records r WHERE r.title = '{title}'"
            ))
            .parse::<f64>()
            .unwrap()
        };
        for title in ["pump-xk", "lamp"] {
            assert!(near(title, "opening") > near(title, "embedding"), "{title}");
            assert!(near(title, "opening") > 0.8, "{title}");
        }
        // Content without a sentence is read by its whole text.
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_records WHERE title = 'tagless' AND opening = embedding"),
            1
        );
        // A query restating the opening finds the record first by meaning.
        assert_eq!(
            text(
                "SELECT title FROM vigil.hybrid_search('drains water from a flooded basement', 1)"
            ),
            "pump-xk"
        );
    }

    #[pg_test]
    fn fill_openings_reads_records_stored_without_one_and_leaves_words_alone() {
        enter("a@example.com");
        // Records as 0.10.0 left them: no opening.
        fill("old", 30);
        let terms = || {
            text("SELECT string_agg(term || ':' || records, ',' ORDER BY term) FROM vigil.vector_terms")
        };
        let (before_terms, before_blocks) =
            (terms(), count("SELECT count(*) FROM vigil.vector_postings"));
        assert_eq!(count("SELECT vigil.fill_openings(20)"), 20);
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_records WHERE opening IS NULL"),
            10
        );
        assert_eq!(count("SELECT vigil.fill_openings()"), 10);
        assert_eq!(count("SELECT vigil.fill_openings()"), 0);
        // The openings a store would have written.
        assert_eq!(
            count(
                "SELECT count(*) FROM vigil.vector_records r
                 WHERE r.opening = (SELECT e.opening FROM vigil._embed_records(ARRAY[r.title], ARRAY[r.content]) e)"
            ),
            30
        );
        // Writing openings changes no record's words: the keyword index stays.
        assert_eq!(terms(), before_terms);
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_postings"),
            before_blocks
        );
        assert_index_matches_records();
    }

    #[pg_test(error = "max_records must be 1 or more")]
    fn fill_openings_needs_a_positive_count() {
        Spi::run("SELECT vigil.fill_openings(0)").unwrap();
    }

    #[pg_test(error = "query_vector must be 384 numbers, the embedding of query")]
    fn a_given_query_embedding_must_have_384_numbers() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('given'); SET vigil.db = 'given'").unwrap();
        Spi::run("SELECT * FROM vigil.query_embeddings('x', NULL, 3, ARRAY[1, 2]::real[])")
            .unwrap();
    }

    #[pg_test]
    fn identifiers_and_rare_words_win() {
        enter("a@example.com");
        Spi::run("SELECT vigil.create_database('tickets'); SET vigil.db = 'tickets'").unwrap();
        Spi::run(
            r#"SELECT vigil.store_records('[
                {"title": "Late order", "content": "The customer placed an order that was shipped today but arrived late."},
                {"title": "Refund", "content": "The customer asked for a refund of the order shipped today."},
                {"title": "Address", "content": "The customer changed the shipping address of the order placed today."},
                {"title": "Inventory", "content": "Warehouse count of part XK-42 is below the reorder threshold."},
                {"title": "Poetry", "content": "A zeugma yokes two words with one verb, as in she broke his car and his heart."}]')"#,
        )
        .unwrap();
        // Common words are common: twenty more orders.
        Spi::run(
            "SELECT vigil.store_records((SELECT jsonb_agg(jsonb_build_object('title', 'Order ' || i,
                 'content', 'The customer placed order ' || i || ', shipped today.'))
             FROM generate_series(1, 20) i))",
        )
        .unwrap();
        let first = |search: &str| text(&format!("SELECT title FROM {search} LIMIT 1"));
        let query = "the customer placed an order that was shipped today";
        assert_eq!(
            first(&format!("vigil.hybrid_search('{query} XK-42', 5)")),
            "Inventory",
            "the part number wins over the meaning of the rest"
        );
        assert_eq!(
            first(&format!("vigil.keyword_search('{query} zeugma')")),
            "Poetry",
            "one rare word outweighs many common ones"
        );
        assert_eq!(
            first("vigil.query_embeddings('money back for a purchase')"),
            "Refund",
            "a paraphrase finds its record"
        );
    }

    #[pg_test]
    fn accounts_never_see_each_others_records_as_the_app_role() {
        Spi::run("CREATE ROLE vigil_test_vec NOSUPERUSER NOBYPASSRLS").unwrap();
        Spi::run("GRANT USAGE ON SCHEMA vigil TO vigil_test_vec").unwrap();
        Spi::run(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON vigil.vector_databases, vigil.vector_records,
             vigil.vector_terms TO vigil_test_vec",
        )
        .unwrap();
        Spi::run(
            "GRANT EXECUTE ON FUNCTION vigil.enter_account(text, text, text) TO vigil_test_vec",
        )
        .unwrap();
        let mut keys = Vec::new();
        for account in ["a@example.com", "b@example.com"] {
            Spi::run(&format!("SELECT vigil.create_account('{account}')")).unwrap();
            keys.push(text(&format!(
                "SELECT key FROM vigil.create_user_key('{account}')"
            )));
        }
        Spi::run("SET ROLE vigil_test_vec").unwrap();
        let as_account = |account: &str, key: &str| {
            assert_eq!(
                text(&format!(
                    "SELECT outcome FROM vigil.enter_account('{account}', '{key}', 'shared')"
                )),
                "ok"
            );
            Spi::run("SELECT vigil.create_database('shared'); SET vigil.db = 'shared'").unwrap();
        };
        as_account("a@example.com", &keys[0]);
        Spi::run("SELECT vigil.store_record('secret', 'alpha quokka plans')").unwrap();
        as_account("b@example.com", &keys[1]);
        Spi::run("SELECT vigil.store_record('mine', 'beta wombat notes')").unwrap();
        assert_eq!(count("SELECT count(*) FROM vigil.vector_records"), 1);
        assert_eq!(count("SELECT count(*) FROM vigil.list_records(0, 100)"), 1);
        for (search, expected) in [
            ("vigil.query_embeddings('alpha quokka plans')", "mine"),
            ("vigil.hybrid_search('alpha quokka plans', 10)", "mine"),
            ("vigil.keyword_search('alpha quokka plans')", ""),
            ("vigil.keyword_search('beta wombat')", "mine"),
        ] {
            assert_eq!(
                text(&format!(
                    "SELECT coalesce(string_agg(title, ','), '') FROM {search}"
                )),
                expected,
                "{search}"
            );
        }
        assert_eq!(
            count("SELECT count(*) FROM vigil.vector_terms WHERE term = 'quokka'"),
            0,
            "A's words are not B's to see"
        );
        Spi::run("RESET ROLE").unwrap();
        // The keyword ranking runs as its owner (to use the GIN index under
        // row-level security): named A's database, it tells B there is none.
        let a_db = count(
            "SELECT id FROM vigil.vector_databases WHERE account = 'a@example.com' AND name = 'shared'",
        );
        Spi::run("SET ROLE vigil_test_vec").unwrap();
        assert_eq!(
            error_of(&format!(
                "SELECT count(*) FROM vigil._keyword_ranked({a_db}, 'alpha quokka plans', 10)"
            )),
            format!("no database \"#{a_db}\" in account b@example.com"),
            "B cannot rank A's records by naming A's database"
        );
        Spi::run("RESET ROLE").unwrap();
    }
}
