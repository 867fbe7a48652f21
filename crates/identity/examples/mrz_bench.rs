//! Time and accuracy of reading the MRZ (`mrz::read_mrz` with PP-OCRv4
//! through ONNX Runtime) on rendered documents.
//!
//! ```text
//! cargo run --release -p vigil-identity --features ocr-ort --example mrz_bench [IMAGES]
//! ```
//!
//! 1. **Time**: a 2 MP photo (1600 x 1200 JPEG, a passport page 70% of its
//!    width on a desk, tilted 2 degrees), decoded and its outline found once;
//!    then locating, recognising and parsing, each the fastest and median of
//!    30 runs, in CPU time of the thread (ONNX Runtime on one intra-op thread
//!    runs on it), so a busy machine inflates it less than wall time.
//! 2. **Accuracy**: IMAGES (default 120) random TD3 pages and TD1 cards whose
//!    check digits hold, on a desk at 4 sizes (characters about 12 to 30 px
//!    high in a 1600 x 1200 photo), tilted up to 6 degrees, one in 8 upside
//!    down, JPEG quality 90 or 60, half of them blurred (sigma 0.8):
//!    how many zones were found, read with every check digit holding, and
//!    read right (the fields the check digits cover equal the truth).
//!
//! `VIGIL_MRZ_MODEL` and `VIGIL_ONNXRUNTIME` say where the model and runtime
//! are (default: where docker/fetch-data.sh installs them).

use std::path::PathBuf;
use std::process::Command;

use image::RgbImage;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use vigil_embed::load_runtime;
use vigil_identity::document::{self, Found};
use vigil_identity::mrz::locate::locate;
use vigil_identity::mrz::onnx::{OrtRecognizer, MODEL_FILE};
use vigil_identity::mrz::{self, read_mrz, Date, LineRecognizer};

#[path = "../src/mrz/render.rs"]
mod render;
use render::Kind;

const TODAY: Date = Date {
    year: 2026,
    month: 11,
    day: 27,
};

fn pg_config(flag: &str) -> PathBuf {
    let out = Command::new("/usr/lib/postgresql/15/bin/pg_config")
        .arg(flag)
        .output()
        .expect("pg_config runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// CPU time of this thread, ms.
fn cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e6
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = cpu_ms();
    let out = f();
    (out, cpu_ms() - t)
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    format!(
        "fastest {:.1} ms, median {:.1} ms",
        v.first().copied().unwrap_or(0.0),
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    )
}

fn cd(s: &str) -> char {
    char::from(b'0' + mrz::check_digit(s.as_bytes()).expect("alphabet"))
}

fn pad(s: &str, n: usize) -> String {
    let mut s: String = s.chars().take(n).collect();
    while s.len() < n {
        s.push('<');
    }
    s
}

/// A random TD3 or TD1 zone whose check digits all hold (as the parser says).
fn random_mrz(rng: &mut SmallRng, kind: Kind) -> String {
    const SURNAMES: [&str; 8] = [
        "MUSTERMANN",
        "DUPONT",
        "DE<LA<CRUZ",
        "NGUYEN",
        "SCHMIDT<MEIER",
        "KOWALSKA",
        "VAN<DER<BERG",
        "ZHANG",
    ];
    const GIVEN: [&str; 8] = [
        "ERIKA",
        "JEAN<PIERRE",
        "MARIA<JOSE",
        "SEAN",
        "THI<BINH",
        "OTTO",
        "ZOFIA",
        "QING<YUN",
    ];
    const STATES: [&str; 6] = ["D<<", "FRA", "GBR", "NLD", "POL", "UTO"];
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut pick = |xs: &[&'static str]| xs[rng.random_range(0..xs.len())];
    let names = format!("{}<<{}", pick(&SURNAMES), pick(&GIVEN));
    let (state, nat, sex) = (pick(&STATES), pick(&STATES), pick(&["M", "F", "<"]));
    loop {
        let number: String = (0..9)
            .map(|_| char::from(ALNUM[rng.random_range(0..36)]))
            .collect();
        let date = |rng: &mut SmallRng, from: u32, to: u32| {
            format!(
                "{:02}{:02}{:02}",
                rng.random_range(from..to) % 100,
                rng.random_range(1..=12u32),
                rng.random_range(1..=28u32)
            )
        };
        let (birth, expiry) = (date(rng, 1940, 2008), date(rng, 2020, 2036));
        let text = match kind {
            Kind::Td3 => {
                let personal = pad(
                    &(0..rng.random_range(0..12))
                        .map(|_| char::from(ALNUM[rng.random_range(0..36)]))
                        .collect::<String>(),
                    14,
                );
                let pcd = if personal.starts_with('<') {
                    '<'
                } else {
                    cd(&personal)
                };
                let body = format!(
                    "{number}{}{nat}{birth}{}{sex}{expiry}{}{personal}{pcd}",
                    cd(&number),
                    cd(&birth),
                    cd(&expiry)
                );
                let composite = format!("{}{}{}", &body[0..10], &body[13..20], &body[21..43]);
                format!(
                    "{}\n{body}{}",
                    pad(&format!("P<{state}{names}"), 44),
                    cd(&composite)
                )
            }
            Kind::Td1 => {
                let l1 = format!("I<{state}{number}{}{}", cd(&number), pad("", 15));
                let l2 = format!(
                    "{birth}{}{sex}{expiry}{}{nat}{}",
                    cd(&birth),
                    cd(&expiry),
                    pad("", 11)
                );
                let composite = format!("{}{}{}{}", &l1[5..30], &l2[0..7], &l2[8..15], &l2[18..29]);
                format!("{l1}\n{l2}{}\n{}", cd(&composite), pad(&names, 30))
            }
        };
        match mrz::parse(&text, TODAY) {
            Ok(m) if m.all_checks_valid() && m.lines.join("\n") == text => return text,
            _ => continue,
        }
    }
}

fn photo(
    font: &ab_glyph::FontRef,
    kind: Kind,
    text: &str,
    share: f32,
    tilt: f32,
    seed: u64,
) -> RgbImage {
    let doc_w = 1600.0 * share;
    let page = render::document(font, kind, text, (doc_w * 1.1) as u32, seed);
    let mut scene = render::desk(1600, 1200, seed);
    render::place(&mut scene, &page, (800.0, 600.0), doc_w, tilt);
    scene
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let runtime_path = std::env::var_os("VIGIL_ONNXRUNTIME")
        .map(PathBuf::from)
        .unwrap_or_else(|| pg_config("--pkglibdir").join("vigil/libonnxruntime.so.1.31.1"));
    let model = std::env::var_os("VIGIL_MRZ_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| pg_config("--sharedir").join("vigil/model").join(MODEL_FILE));
    let runtime = load_runtime(&runtime_path).unwrap_or_else(|e| panic!("{e}"));
    let recognizer = OrtRecognizer::load(&runtime, &model, 1).unwrap_or_else(|e| panic!("{e}"));
    let font = render::font();

    // 1. Time on a 2 MP photo.
    let scene = photo(&font, Kind::Td3, render::TD3_SPECIMEN, 0.7, 2.0, 1);
    let upload = image::load_from_memory(&{
        use image::ImageEncoder;
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
            .write_image(scene.as_raw(), 1600, 1200, image::ExtendedColorType::Rgb8)
            .expect("encodes");
        bytes
    })
    .expect("decodes")
    .to_rgb8();
    let outline = match document::find(&upload) {
        Found::Document(q) => Some(q),
        _ => None,
    };
    let zone = locate(&upload, outline.as_ref()).expect("the zone is found");
    let _ = recognizer.recognize(&zone.lines); // warm-up
    let (mut t_locate, mut t_recognise, mut t_read) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..30 {
        t_locate.push(timed(|| locate(&upload, outline.as_ref())).1);
        t_recognise.push(timed(|| recognizer.recognize(&zone.lines)).1);
        let (reading, ms) = timed(|| read_mrz(&upload, outline.as_ref(), &recognizer, TODAY));
        assert!(reading.is_valid(), "{:?}", reading.text);
        t_read.push(ms);
    }
    println!(
        "2 MP photo (1600 x 1200, TD3 page 70% wide, outline {}), characters {:.0} px high, lines {:?}",
        if outline.is_some() { "found" } else { "not found" },
        zone.char_height,
        zone.lines.iter().map(|l| l.dimensions()).collect::<Vec<_>>()
    );
    println!("  locate            {}", stats(t_locate));
    println!("  recognise 2 lines {}", stats(t_recognise));
    println!("  read_mrz in all   {}", stats(t_read));

    // 2. Accuracy on random documents.
    let mut rng = SmallRng::seed_from_u64(48);
    let shares = [0.45f32, 0.6, 0.75, 0.9];
    let (mut found, mut valid, mut right, mut wrong_valid) = (0, 0, 0, 0);
    let mut by_share = [(0usize, 0usize); 4];
    let mut ms = Vec::new();
    for i in 0..count {
        let kind = if i % 3 == 2 { Kind::Td1 } else { Kind::Td3 };
        let truth = random_mrz(&mut rng, kind);
        let s = i % shares.len();
        let mut tilt = rng.random_range(-6.0..6.0f32);
        if i % 8 == 7 {
            tilt += 180.0;
        }
        let mut scene = photo(&font, kind, &truth, shares[s], tilt, i as u64 + 100);
        if i % 2 == 1 {
            scene = image::imageops::blur(&scene, 0.8);
        }
        let scene = render::jpeg(&scene, if i % 4 < 2 { 90 } else { 60 });
        let outline = match document::find(&scene) {
            Found::Document(q) => Some(q),
            _ => None,
        };
        let (reading, t) = timed(|| read_mrz(&scene, outline.as_ref(), &recognizer, TODAY));
        ms.push(t);
        found += usize::from(reading.zone.is_some());
        by_share[s].0 += 1;
        if reading.is_valid() {
            valid += 1;
            let got = reading.mrz.as_ref().ok();
            let want = mrz::parse(&truth, TODAY).ok();
            let key = |m: &mrz::Mrz| {
                (
                    m.document_number.clone(),
                    m.birth_date.clone(),
                    m.expiry_date.clone(),
                    m.optional_data.clone(),
                )
            };
            if got.map(key) == want.as_ref().map(key) {
                right += 1;
                by_share[s].1 += 1;
            } else {
                wrong_valid += 1;
                if std::env::var_os("MRZ_SHOW").is_some() {
                    eprintln!(
                        "{i}: wrong but valid, {:?}\n  truth {truth:?}\n  read  {:?}",
                        got.map(|m| &m.corrections),
                        reading.text
                    );
                }
            }
        } else if std::env::var_os("MRZ_SHOW").is_some() {
            eprintln!(
                "{i}: {kind:?} share {} tilt {tilt:.1} zone {:?}\n  truth {truth:?}\n  read  {:?}",
                shares[s], reading.zone, reading.text
            );
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / count.max(1) as f64;
    println!(
        "{count} random documents (2 of 3 TD3, 1 of 3 TD1; tilt up to 6 degrees, 1 in 8 upside down, half blurred, JPEG 90/60):"
    );
    println!(
        "  zone found {:.1}%, every check digit holds {:.1}%, covered fields right {:.1}%, wrong but valid {wrong_valid}",
        pct(found),
        pct(valid),
        pct(right)
    );
    for (share, (n, r)) in shares.iter().zip(by_share) {
        // Characters 2.4 mm high on a page 125 mm (TD3) wide.
        println!(
            "  document {:.0}% of the width (TD3 characters ~{:.0} px): {r}/{n} right",
            share * 100.0,
            1600.0 * share * 2.4 / 125.0
        );
    }
    println!("  read_mrz per image: {}", stats(ms));
}
