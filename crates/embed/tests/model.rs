//! The embedder against the installed runtime and model (see scripts/setup.sh).
//! `VIGIL_MODEL_DIR` and `VIGIL_ONNXRUNTIME` override where they are looked for.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use vigil_embed::{cosine, load_runtime, EmbedError, Embedder, Runtime};

fn pg_config(flag: &str) -> PathBuf {
    let out = Command::new("/usr/lib/postgresql/15/bin/pg_config")
        .arg(flag)
        .output()
        .expect("pg_config runs");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn model_dir() -> PathBuf {
    std::env::var_os("VIGIL_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| pg_config("--sharedir").join("vigil/model"))
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let path = std::env::var_os("VIGIL_ONNXRUNTIME")
            .map(PathBuf::from)
            .unwrap_or_else(|| pg_config("--pkglibdir").join("vigil/libonnxruntime.so.1.31.1"));
        load_runtime(&path).expect("runtime installed by scripts/setup.sh")
    })
}

fn embedder() -> std::sync::MutexGuard<'static, Embedder> {
    static EMBEDDER: OnceLock<Mutex<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            Mutex::new(Embedder::load(runtime(), &model_dir(), 2, true).expect("model installed"))
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

#[test]
fn reference_pair_has_the_published_cosine() {
    let mut e = embedder();
    let a = e.embed("A man is eating food.").unwrap();
    let b = e.embed("A man is eating a piece of bread.").unwrap();
    assert_eq!(a.len(), vigil_embed::DIMENSIONS);
    let c = cosine(&a, &b);
    assert!((c - 0.75).abs() <= 0.02, "cosine {c}");
}

#[test]
fn many_equals_one_by_one_across_chunks() {
    let texts: Vec<String> = (0..150)
        .map(|i| format!("record {i} {}", "word ".repeat(i % 37)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut calls = 0;
    let mut e = embedder();
    let many = e.embed_many(&refs, || calls += 1).unwrap();
    // Calls of at most MAX_BATCH texts, split further by length, but batched.
    assert!(
        (150usize.div_ceil(vigil_embed::MAX_BATCH)..20).contains(&calls),
        "{calls} calls"
    );
    for (text, v) in refs.iter().zip(&many) {
        let single = e.embed(text).unwrap();
        assert!(cosine(v, &single) > 0.9999, "{text:?} moved in a batch");
    }
}

/// What the query embedders rely on: a search's vector never depends on
/// which other queries shared its model call (the int8 model quantizes per
/// token, and takes a call's texts packed with attention kept per text).
#[test]
fn a_text_embeds_bit_for_bit_as_it_does_alone_in_any_call() {
    let texts = [
        "paraphrase of a package description",
        "XK-42",
        "a text editor for the terminal with syntax highlighting and plugins",
        "tiny",
        "ünïcödé 検索 search",
        "library for parsing json documents quickly in c",
    ];
    let mut e = embedder();
    let alone: Vec<Vec<f32>> = texts.iter().map(|t| e.embed(t).unwrap()).collect();
    for call in [&texts[..], &texts[1..4], &texts[2..]] {
        let together = e.embed_batch(call).unwrap();
        for (text, v) in call.iter().zip(together) {
            let i = texts.iter().position(|t| t == text).unwrap();
            assert_eq!(v, alone[i], "{text:?} changed in a call of {}", call.len());
        }
    }
}

#[test]
fn missing_runtime_is_an_error_naming_the_path() {
    let err = load_runtime(std::path::Path::new("/nonexistent/libonnxruntime.so")).unwrap_err();
    assert!(matches!(err, EmbedError::Runtime { .. }));
    assert!(
        err.to_string().contains("/nonexistent/libonnxruntime.so"),
        "{err}"
    );
}

#[test]
fn model_dir_without_files_is_an_error_naming_the_file() {
    let err = Embedder::load(
        runtime(),
        std::path::Path::new("/nonexistent/model"),
        1,
        false,
    )
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .contains("/nonexistent/model/tokenizer.json"),
        "{err}"
    );
}

#[test]
fn corrupt_model_is_an_error_not_a_crash() {
    let dir = std::env::temp_dir().join(format!("vigil-corrupt-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        model_dir().join("tokenizer.json"),
        dir.join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(dir.join("model.onnx"), b"this is not an onnx model").unwrap();
    let err = Embedder::load(runtime(), &dir, 1, false).err().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(matches!(err, EmbedError::Model { .. }), "{err}");
}

/// A model directory holding only the published model and the tokenizer.
fn published_only_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vigil-model-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["model.onnx", "tokenizer.json"] {
        let link = dir.join(file);
        std::fs::remove_file(&link).ok();
        std::os::unix::fs::symlink(model_dir().join(file), link).unwrap();
    }
    dir
}

#[test]
fn int8_model_is_preferred_and_agrees_with_the_published_one() {
    // scripts/setup.sh writes model-int8.onnx; this machine has VNNI.
    let installed = model_dir();
    assert!(installed.join(vigil_embed::INT8_MODEL_FILE).is_file());
    if vigil_embed::cpu_multiplies_int8_exactly() {
        assert_eq!(
            vigil_embed::model_path(&installed),
            installed.join(vigil_embed::INT8_MODEL_FILE)
        );
    }
    let dir = published_only_dir("published");
    assert_eq!(vigil_embed::model_path(&dir), dir.join("model.onnx"));
    let mut published = Embedder::load(runtime(), &dir, 1, false).unwrap();
    std::fs::remove_dir_all(&dir).ok();

    let texts = [
        "A man is eating food.",
        "Refund requested for order XK-42 by jane.doe@example.com",
        "Große Überweisung ins Ausland, 9.999 € — 東京",
        "high-performance TCP/IP network stack for embedded systems with IPv6 support",
    ];
    let mut int8 = embedder();
    let a = int8.embed_many(&texts, || {}).unwrap();
    let b = published.embed_many(&texts, || {}).unwrap();
    for ((text, x), y) in texts.iter().zip(&a).zip(&b) {
        let c = cosine(x, y);
        assert!(c > 0.99, "{text:?}: cosine {c} between the two models");
    }
    // The models tell texts apart the same way.
    let (ca, cb) = (cosine(&a[0], &a[1]), cosine(&b[0], &b[1]));
    assert!((ca - cb).abs() < 0.02, "{ca} vs {cb}");
}

#[test]
fn a_part_is_pooled_from_the_same_call_as_its_text() {
    let text = "accerciser\nIt inspects and controls widgets through the accessibility layer. \
                It has a plugin framework for custom views.";
    let opening = text.find("It inspects").unwrap()..text.find(" It has").unwrap();
    let texts = [text, "no part here", text];
    let parts = [
        Some(opening.clone()),
        None,
        Some(text.len() + 5..text.len() + 9),
    ];
    let mut e = embedder();
    let pooled = e.embed_many_with_parts(&texts, &parts, || {}).unwrap();
    let wholes = e.embed_many(&texts, || {}).unwrap();
    for (p, w) in pooled.iter().zip(&wholes) {
        assert!(
            cosine(&p.whole, w) > 0.9999,
            "the whole text's embedding moved"
        );
    }
    // The opening read within its text: near the sentence embedded alone,
    // nearer than the whole text is, and not the whole text's vector.
    let part = pooled[0].part.as_ref().expect("the opening covers tokens");
    let alone = e.embed(&text[opening]).unwrap();
    assert!(cosine(part, &alone) > 0.8, "{}", cosine(part, &alone));
    assert!(cosine(part, &alone) > cosine(&pooled[0].whole, &alone));
    assert!(cosine(part, &pooled[0].whole) < 0.999);
    assert!((part.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
    // No part asked for, or one past the text: none.
    assert_eq!(pooled[1].part, None);
    assert_eq!(pooled[2].part, None);
}

#[test]
fn a_part_past_the_truncation_has_no_vector() {
    let long = "word ".repeat(400) + "The end is here.";
    let tail = long.find("The end").unwrap()..long.len();
    let mut e = embedder();
    let pooled = e
        .embed_many_with_parts(&[long.as_str()], &[Some(tail)], || {})
        .unwrap();
    assert_eq!(pooled[0].part, None, "the tail was cut at MAX_TOKENS");
}
