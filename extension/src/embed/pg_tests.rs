//! `vigil.embed` through SQL, in a real backend with the real model.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn embed(text: &str) -> Vec<f32> {
        Spi::get_one_with_args::<Vec<f32>>("SELECT vigil.embed($1)", &[text.into()])
            .expect("embed ran")
            .expect("embed returned a vector")
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn norm(a: &[f32]) -> f32 {
        dot(a, a).sqrt()
    }

    #[pg_test]
    fn has_384_dimensions_and_unit_norm() {
        let v = embed("Vigil scores online payments.");
        assert_eq!(v.len(), 384);
        assert!((norm(&v) - 1.0).abs() < 1e-4, "norm {}", norm(&v));
    }

    #[pg_test]
    fn related_sentences_have_the_reference_cosine() {
        let a = embed("A man is eating food.");
        let b = embed("A man is eating a piece of bread.");
        let cos = dot(&a, &b);
        assert!((cos - 0.75).abs() <= 0.02, "cosine {cos}");
        let unrelated = embed("The stock market fell sharply on Monday.");
        assert!(dot(&a, &unrelated) < cos - 0.3, "unrelated text is not far");
    }

    #[pg_test]
    fn same_text_gives_the_same_vector() {
        assert_eq!(embed("repeatable"), embed("repeatable"));
    }

    /// Threads and spinning change how fast a vector comes, never which one
    /// (up to the order of floating-point sums across threads).
    #[pg_test]
    fn thread_settings_do_not_change_the_vector() {
        let text = "Vigil keeps its embeddings inside PostgreSQL.";
        let reference = embed(text);
        for (threads, spinning) in [(2, "on"), (2, "off"), (1, "on")] {
            Spi::run(&format!(
                "SET vigil.embed_threads = {threads}; SET vigil.embed_spinning = {spinning}"
            ))
            .expect("SET ran");
            let v = embed(text);
            let cos = dot(&reference, &v);
            assert!(
                cos > 0.99999,
                "threads {threads}, spinning {spinning}: cosine {cos}"
            );
        }
    }

    #[pg_test]
    fn batch_form_equals_single_form_in_order() {
        let texts = [
            "first text",
            "a considerably longer second text with many more words in it",
            "",
            "third",
        ];
        let rows: Vec<(i64, Option<Vec<f32>>)> = Spi::connect(|client| {
            client
                .select(
                    "SELECT n, e FROM vigil.embed($1::text[]) WITH ORDINALITY AS t(e, n) ORDER BY n",
                    None,
                    &[texts.iter().map(|t| Some(t.to_string())).collect::<Vec<_>>().into()],
                )
                .expect("batch ran")
                .map(|row| (row.get::<i64>(1).unwrap().unwrap(), row.get::<Vec<f32>>(2).unwrap()))
                .collect()
        });
        assert_eq!(rows.len(), texts.len());
        for ((n, batch), text) in rows.into_iter().zip(texts) {
            let batch = batch.expect("non-null input gives a vector");
            let single = embed(text);
            let worst = batch
                .iter()
                .zip(&single)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                worst < 1e-4,
                "row {n} ({text:?}) differs from the single form by {worst}"
            );
        }
    }

    #[pg_test]
    fn batch_keeps_nulls_in_place() {
        let nulls: Vec<bool> = Spi::connect(|client| {
            client
                .select(
                    "SELECT e IS NULL FROM vigil.embed(ARRAY['a', NULL, 'b']::text[]) AS e",
                    None,
                    &[],
                )
                .expect("batch ran")
                .map(|row| row.get::<bool>(1).unwrap().unwrap())
                .collect()
        });
        assert_eq!(nulls, vec![false, true, false]);
    }

    #[pg_test]
    fn empty_string_embeds() {
        let v = embed("");
        assert_eq!(v.len(), 384);
        assert!((norm(&v) - 1.0).abs() < 1e-4);
    }

    #[pg_test]
    fn very_long_text_is_truncated_not_refused() {
        let long = "fraud detection inside the database ".repeat(600);
        assert!(long.len() >= 20_000);
        let v = embed(&long[..20_000]);
        assert_eq!(v.len(), 384);
        // Truncation keeps the first 256 word pieces: the prefix alone agrees.
        let prefix = embed(&"fraud detection inside the database ".repeat(60));
        assert!(dot(&v, &prefix) > 0.99);
    }

    #[pg_test]
    fn non_ascii_text_embeds() {
        let a = embed("Ein Mann isst Brot. Üble Zahlungen! 東京で買い物 🚀");
        assert_eq!(a.len(), 384);
        assert!((norm(&a) - 1.0).abs() < 1e-4);
        assert_ne!(a, embed("Ein Mann isst Brot."));
    }

    #[pg_test]
    fn null_text_gives_null() {
        let v = Spi::get_one::<Vec<f32>>("SELECT vigil.embed(NULL::text)").expect("embed ran");
        assert!(v.is_none());
    }

    #[pg_test(
        error = "could not load the tokenizer \"/nonexistent/vigil-model/tokenizer.json\": no such file (setting vigil.model_dir)"
    )]
    fn wrong_model_dir_names_the_setting_and_path() {
        Spi::run("SET vigil.model_dir = '/nonexistent/vigil-model'").expect("SET ran");
        embed("anything");
    }

    #[pg_test]
    fn model_dir_without_model_names_the_model_file() {
        let dir = std::env::temp_dir().join(format!("vigil-tokenizer-only-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let installed = Spi::get_one::<String>("SELECT current_setting('vigil.model_dir')")
            .unwrap()
            .unwrap();
        let source = if installed.is_empty() {
            super::super::settings::model_dir()
        } else {
            installed.into()
        };
        std::fs::copy(source.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
        Spi::run(&format!("SET vigil.model_dir = '{}'", dir.display())).unwrap();
        let err = PgTryBuilder::new(|| {
            embed("anything");
            None
        })
        .catch_others(|e| match e {
            pg_sys::panic::CaughtError::PostgresError(r)
            | pg_sys::panic::CaughtError::ErrorReport(r) => Some(r.message().to_string()),
            other => Some(format!("{other:?}")),
        })
        .execute()
        .expect("embedding without a model fails");
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            err.contains(&format!("\"{}\"", dir.join("model.onnx").display())),
            "{err}"
        );
        assert!(err.contains("vigil.model_dir"), "{err}");
    }
}
