//! Measures two offline OCRs on machine-readable zones (issue #48, part 4).
//!
//! ```text
//! mrz-ocr-bench gen DIR [PER_CONDITION]      images of MRZs and DIR/truth.tsv
//! mrz-ocr-bench tess DIR [scaled]            Tesseract (the CLI, one process for all)
//! mrz-ocr-bench rapid DIR MODEL DICT ORT_LIB [greedy|fixed]
//!                                            PP-OCRv4 recognition (RapidOCR's ONNX) via ort
//! ```
//!
//! Each engine prints a summary by condition and writes DIR/<engine>.tsv.
//! Settings from the environment: `MRZ_TESS_LANG`, `MRZ_TESSDATA` (Tesseract's
//! model); `MRZ_REC_HEIGHT` (input height, 48 as RapidOCR feeds it, 32 reads
//! MRZs better and 2.3x faster), `MRZ_REC_SQUEEZE` (horizontal scale: below
//! ~1 the CTC has too few steps a character), `MRZ_REC_MERGE=1` (lower case
//! and chevron-like classes added to the MRZ class they look like),
//! `MRZ_REPEAT` (time inference as the fastest of N), `MRZ_SHOW_WRONG=1`
//! (print readings whose check digits hold but whose fields are wrong).
//! The parser is the identity crate's own `mrz.rs`, included by path, so this
//! prototype builds apart from the workspace. See ../MRZ-OCR.md.

#[path = "../../../../crates/identity/src/mrz.rs"]
#[allow(dead_code)]
mod mrz;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{GrayImage, ImageEncoder, Luma, RgbImage};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TODAY: mrz::Date = mrz::Date {
    year: 2026,
    month: 11,
    day: 27,
};
const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<";
const FONT: &str = "/usr/share/fonts/opentype/ocr-b/OCRB.otf";

/// The ICAO 9303 specimens (parts 4 to 7).
const SPECIMENS: [&str; 5] = [
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10",
    "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<",
    "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nD231458907UTO7408122F1204159<<<<<<<6",
    "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL8988901C4XXX4009078F96121096ZE184226B<<<<<<",
    "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nL8988901C4XXX4009078F9612109<<<<<<<<",
];

/// Character height (cap height, px), blur sigma, noise amplitude, JPEG quality.
const HEIGHTS: [u32; 4] = [10, 14, 20, 30];
const BLURS: [f32; 3] = [0.0, 0.8, 1.5];
const NOISES: [i16; 2] = [0, 10];
const QUALITIES: [u8; 2] = [90, 40];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        "usage: gen DIR [N] | tess DIR [scaled] | rapid DIR MODEL DICT ORT_LIB [greedy|fixed]";
    match args.get(1).map(String::as_str) {
        Some("gen") => {
            let per = args.get(3).map_or(5, |s| s.parse().expect("N"));
            generate(Path::new(&args[2]), per);
        }
        Some("tess") => tesseract(
            Path::new(&args[2]),
            args.get(3).is_some_and(|s| s == "scaled"),
        ),
        Some("rapid") if args.len() >= 6 => rapid(
            Path::new(&args[2]),
            Path::new(&args[3]),
            Path::new(&args[4]),
            Path::new(&args[5]),
            args.get(6).is_none_or(|s| s != "greedy"),
        ),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------- MRZs

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

fn pick<'a>(rng: &mut SmallRng, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

fn digits(rng: &mut SmallRng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

fn alnum(rng: &mut SmallRng, n: usize) -> String {
    let a = ALPHABET.as_bytes();
    (0..n)
        .map(|_| char::from(a[rng.random_range(0..36)]))
        .collect()
}

fn date(rng: &mut SmallRng, years: std::ops::Range<u32>) -> String {
    let y = rng.random_range(years) % 100;
    let m = rng.random_range(1..=12u32);
    let d = rng.random_range(1..=28u32);
    format!("{y:02}{m:02}{d:02}")
}

/// A random MRZ whose check digits all hold (checked with the parser).
fn random_mrz(rng: &mut SmallRng) -> String {
    const SURNAMES: [&str; 10] = [
        "MUSTERMANN",
        "DUPONT",
        "DE<LA<CRUZ",
        "OBRIEN",
        "NGUYEN",
        "SCHMIDT<MEIER",
        "KOWALSKA",
        "OCONNOR",
        "VAN<DER<BERG",
        "ZHANG",
    ];
    const GIVEN: [&str; 10] = [
        "ERIKA",
        "JEAN<PIERRE",
        "MARIA<JOSE",
        "SEAN",
        "THI<BINH",
        "OTTO",
        "ZOFIA",
        "IBRAHIM",
        "BOB",
        "QING<YUN",
    ];
    const STATES: [&str; 8] = ["D<<", "FRA", "GBR", "NLD", "POL", "ESP", "UTO", "IRL"];
    loop {
        let names = format!("{}<<{}", pick(rng, &SURNAMES), pick(rng, &GIVEN));
        let state = pick(rng, &STATES);
        let nat = pick(rng, &STATES);
        let number = alnum(rng, 9);
        let birth = date(rng, 1940..2008);
        let expiry = date(rng, 2020..2036);
        let sex = pick(rng, &["M", "F", "<"]);
        let text = match rng.random_range(0..3) {
            0 => {
                // TD3 passport.
                let personal = if rng.random_bool(0.5) {
                    {
                        let n = rng.random_range(4..14);
                        pad(&alnum(rng, n), 14)
                    }
                } else {
                    pad("", 14)
                };
                let pcd = if personal.starts_with('<') {
                    '<'
                } else {
                    cd(&personal)
                };
                let l1 = pad(&format!("P<{state}{names}"), 44);
                let body = format!(
                    "{number}{}{nat}{birth}{}{sex}{expiry}{}{personal}{pcd}",
                    cd(&number),
                    cd(&birth),
                    cd(&expiry)
                );
                let composite = format!("{}{}{}", &body[0..10], &body[13..20], &body[21..43]);
                format!("{l1}\n{body}{}", cd(&composite))
            }
            1 => {
                // TD1 card.
                let n = rng.random_range(0..8);
                let opt1 = pad(&digits(rng, n), 15);
                let opt2 = pad("", 11);
                let l1 = format!(
                    "I{}{state}{number}{}{opt1}",
                    pick(rng, &["<", "D", "R"]),
                    cd(&number)
                );
                let l2a = format!(
                    "{birth}{}{sex}{expiry}{}{nat}{opt2}",
                    cd(&birth),
                    cd(&expiry)
                );
                let composite = format!("{}{}{}", &l1[5..30], &l2a[0..7], &l2a[8..15]);
                let composite = format!("{composite}{}", &l2a[18..29]);
                format!("{l1}\n{l2a}{}\n{}", cd(&composite), pad(&names, 30))
            }
            _ => {
                // TD2 card.
                let opt = pad("", 7);
                let l1 = pad(&format!("I<{state}{names}"), 36);
                let body = format!(
                    "{number}{}{nat}{birth}{}{sex}{expiry}{}{opt}",
                    cd(&number),
                    cd(&birth),
                    cd(&expiry)
                );
                let composite = format!("{}{}{}", &body[0..10], &body[13..20], &body[21..35]);
                format!("{l1}\n{body}{}", cd(&composite))
            }
        };
        match mrz::parse(&text, TODAY) {
            Ok(m) if m.all_checks_valid() && m.lines.join("\n") == text => return text,
            _ => continue,
        }
    }
}

// ---------------------------------------------------------------- images

struct Condition {
    height: u32,
    blur: f32,
    noise: i16,
    quality: u8,
}

fn conditions() -> Vec<Condition> {
    let mut v = Vec::new();
    for &height in &HEIGHTS {
        for &blur in &BLURS {
            for &noise in &NOISES {
                for &quality in &QUALITIES {
                    v.push(Condition {
                        height,
                        blur,
                        noise,
                        quality,
                    });
                }
            }
        }
    }
    v
}

/// Draws `text` in OCR-B, dark on a paper tone with a faint guilloche,
/// supersampled 4x and reduced, then blurred, noised and JPEG-compressed.
fn render(font: &FontRef, text: &str, c: &Condition, rng: &mut SmallRng) -> Vec<u8> {
    const K: f32 = 4.0;
    // Cap height of OCR-B as a share of the scale.
    let probe = font.as_scaled(PxScale::from(100.0));
    let e = font.outline_glyph(probe.scaled_glyph('E')).expect("E");
    let cap = e.px_bounds().height() / 100.0;
    let scale = PxScale::from(c.height as f32 * K / cap);
    let sf = font.as_scaled(scale);
    let pitch = sf.h_advance(font.glyph_id('0'));
    let line_pitch = c.height as f32 * K * 1.9;
    let lines: Vec<&str> = text.lines().collect();
    let cols = lines.iter().map(|l| l.len()).max().unwrap_or(0) as f32;
    let margin = c.height as f32 * K * 2.0;
    let w = (margin * 2.0 + cols * pitch).ceil() as u32;
    let h = (margin * 2.0 + lines.len() as f32 * line_pitch).ceil() as u32;
    let paper = [
        rng.random_range(205..245u8),
        rng.random_range(200..240u8),
        rng.random_range(190..235u8),
    ];
    let ink = rng.random_range(15..70u8) as f32;
    let phase: f32 = rng.random_range(0.0..6.28);
    let freq = rng.random_range(0.004..0.012) / K;
    let mut img = RgbImage::from_fn(w, h, |x, y| {
        // Faint guilloche: thin sinusoidal lines 20 levels darker.
        let s = ((x as f32 * freq * 6.0 + phase).sin() * 40.0 * K + y as f32).rem_euclid(22.0 * K);
        let d = if s < 1.2 * K { 20 } else { 0 };
        image::Rgb(paper.map(|p| p.saturating_sub(d)))
    });
    for (li, line) in lines.iter().enumerate() {
        let baseline = margin + li as f32 * line_pitch + c.height as f32 * K;
        for (ci, ch) in line.chars().enumerate() {
            let glyph = sf.scaled_glyph(ch);
            let mut glyph = glyph;
            glyph.position = ab_glyph::point(margin + ci as f32 * pitch, baseline);
            if let Some(og) = font.outline_glyph(glyph) {
                let b = og.px_bounds();
                og.draw(|gx, gy, cov| {
                    let x = b.min.x as i32 + gx as i32;
                    let y = b.min.y as i32 + gy as i32;
                    if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                        let p = img.get_pixel_mut(x as u32, y as u32);
                        for ch in p.0.iter_mut() {
                            *ch = (*ch as f32 * (1.0 - cov) + ink * cov).round() as u8;
                        }
                    }
                });
            }
        }
    }
    let mut img = image::imageops::resize(
        &img,
        (w as f32 / K).round() as u32,
        (h as f32 / K).round() as u32,
        FilterType::Triangle,
    );
    if c.blur > 0.0 {
        img = image::imageops::blur(&img, c.blur);
    }
    if c.noise > 0 {
        for p in img.pixels_mut() {
            for ch in p.0.iter_mut() {
                *ch = (*ch as i16 + rng.random_range(-c.noise..=c.noise)).clamp(0, 255) as u8;
            }
        }
    }
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, c.quality)
        .write_image(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::Rgb8,
        )
        .expect("jpeg");
    out
}

fn generate(dir: &Path, per: usize) {
    fs::create_dir_all(dir).expect("dir");
    let bytes = fs::read(FONT).expect("OCR-B font: apt-get install fonts-ocr-b");
    let font = FontRef::try_from_slice(&bytes).expect("font");
    let mut rng = SmallRng::seed_from_u64(48);
    let mut mrzs: Vec<String> = SPECIMENS.iter().map(|s| s.to_string()).collect();
    for s in &mrzs {
        let m = mrz::parse(s, TODAY).expect("specimen parses");
        assert!(m.all_checks_valid(), "specimen {s}");
    }
    while mrzs.len() < 64 {
        mrzs.push(random_mrz(&mut rng));
    }
    let mut truth = fs::File::create(dir.join("truth.tsv")).expect("truth");
    let mut i = 0;
    for c in conditions() {
        for _ in 0..per {
            let text = &mrzs[i % mrzs.len()];
            let jpeg = render(&font, text, &c, &mut rng);
            let name = format!("{i:04}.jpg");
            fs::write(dir.join(&name), jpeg).expect("write");
            writeln!(
                truth,
                "{name}\t{}\t{}\t{}\t{}\t{}",
                c.height,
                c.blur,
                c.noise,
                c.quality,
                text.replace('\n', "|")
            )
            .unwrap();
            i += 1;
        }
    }
    eprintln!("{i} images in {}", dir.display());
}

// ---------------------------------------------------------------- locating lines

/// Otsu's threshold of a grey image.
fn otsu(g: &GrayImage) -> u8 {
    let mut hist = [0u64; 256];
    for p in g.pixels() {
        hist[p.0[0] as usize] += 1;
    }
    let total: u64 = hist.iter().sum();
    let sum: f64 = hist
        .iter()
        .enumerate()
        .map(|(i, &n)| i as f64 * n as f64)
        .sum();
    let (mut wb, mut sb, mut best, mut t) = (0f64, 0f64, 0f64, 0u8);
    for (i, &n) in hist.iter().enumerate() {
        wb += n as f64;
        if wb == 0.0 {
            continue;
        }
        let wf = total as f64 - wb;
        if wf == 0.0 {
            break;
        }
        sb += i as f64 * n as f64;
        let mb = sb / wb;
        let mf = (sum - sb) / wf;
        let between = wb * wf * (mb - mf) * (mb - mf);
        if between > best {
            best = between;
            t = i as u8;
        }
    }
    t
}

/// The text lines of a zone image: bands of rows holding ink, each with its
/// columns' extent. (A prototype of the locator: it assumes the zone is
/// level and already cut out; on a whole page the zone must first be found,
/// e.g. as the bottom-most run of 2 or 3 equal, evenly spaced, long bands.)
fn locate_lines(g: &GrayImage) -> Vec<(u32, u32, u32, u32)> {
    let t = otsu(g);
    let (w, h) = g.dimensions();
    let rows: Vec<u32> = (0..h)
        .map(|y| (0..w).filter(|&x| g.get_pixel(x, y).0[0] <= t).count() as u32)
        .collect();
    let peak = rows.iter().copied().max().unwrap_or(0);
    let on = (peak / 12).max(2);
    let mut bands = Vec::new();
    let mut start = None;
    for y in 0..=h {
        let ink = y < h && rows[y as usize] >= on;
        match (ink, start) {
            (true, None) => start = Some(y),
            (false, Some(s)) => {
                bands.push((s, y));
                start = None;
            }
            _ => {}
        }
    }
    let tallest = bands.iter().map(|(a, b)| b - a).max().unwrap_or(0);
    bands.retain(|(a, b)| (b - a) * 2 >= tallest);
    bands
        .into_iter()
        .map(|(y0, y1)| {
            let cols: Vec<u32> = (0..w)
                .filter(|&x| (y0..y1).any(|y| g.get_pixel(x, y).0[0] <= t))
                .collect();
            let (x0, x1) = (
                cols.first().copied().unwrap_or(0),
                cols.last().copied().unwrap_or(w - 1) + 1,
            );
            (x0, y0, x1, y1)
        })
        .collect()
}

// ---------------------------------------------------------------- scoring

struct Case {
    name: String,
    height: u32,
    blur: f32,
    noise: i16,
    quality: u8,
    truth: String,
}

fn read_truth(dir: &Path) -> Vec<Case> {
    fs::read_to_string(dir.join("truth.tsv"))
        .expect("truth.tsv: run gen first")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Case {
                name: f[0].into(),
                height: f[1].parse().unwrap(),
                blur: f[2].parse().unwrap(),
                noise: f[3].parse().unwrap(),
                quality: f[4].parse().unwrap(),
                truth: f[5].replace('|', "\n"),
            }
        })
        .collect()
}

fn levenshtein(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[derive(Default, Clone)]
struct Tally {
    images: usize,
    chars: usize,
    char_errors: usize,
    lines: usize,
    lines_exact: usize,
    mrz_exact: usize,
    /// `mrz::parse` succeeded and every check digit holds.
    checks_hold: usize,
    /// ... and the (possibly corrected) lines are the truth.
    read_right: usize,
    /// Every check digit holds and the fields they cover are the truth's.
    checked_right: usize,
    /// ... and so is every other field but the names.
    fields_right: usize,
    /// Every check digit holds but a field they cover is not the truth's.
    wrong_but_valid: usize,
    corrected: usize,
    ms: f64,
}

impl Tally {
    fn add(&mut self, truth: &str, read: &str, ms: f64) {
        let read_lines: Vec<String> = read
            .lines()
            .map(|l| l.chars().filter(|c| !c.is_whitespace()).collect::<String>())
            .filter(|l| !l.is_empty())
            .collect();
        let joined = read_lines.join("\n");
        self.images += 1;
        self.chars += truth.len();
        self.char_errors += levenshtein(truth.as_bytes(), joined.as_bytes());
        for t in truth.lines() {
            self.lines += 1;
            self.lines_exact += usize::from(read_lines.iter().any(|r| r == t));
        }
        self.mrz_exact += usize::from(joined == truth);
        if let Ok(m) = mrz::parse(&joined, TODAY) {
            if m.all_checks_valid() {
                self.checks_hold += 1;
                self.read_right += usize::from(m.lines.join("\n") == truth);
                let t = mrz::parse(truth, TODAY).expect("truth parses");
                let key = |m: &mrz::Mrz| {
                    (
                        m.format,
                        m.document_type.clone(),
                        m.issuing_state.clone(),
                        m.document_number.clone(),
                        m.nationality.clone(),
                        m.birth_date.clone(),
                        m.sex,
                        m.expiry_date.clone(),
                        m.optional_data.clone(),
                        m.optional_data_2.clone(),
                    )
                };
                let checked = |m: &mrz::Mrz| {
                    (
                        m.document_number.clone(),
                        m.birth_date.clone(),
                        m.expiry_date.clone(),
                        m.optional_data.clone(),
                        m.optional_data_2.clone(),
                    )
                };
                if checked(&m) == checked(&t) {
                    self.checked_right += 1;
                    self.fields_right += usize::from(key(&m) == key(&t));
                } else {
                    self.wrong_but_valid += 1;
                    if std::env::var("MRZ_SHOW_WRONG").is_ok() {
                        eprintln!(
                            "WRONG {:?} {:?}\n  truth {:?}\n  read  {:?}\n  lines {:?}",
                            m.reading,
                            m.corrections
                                .iter()
                                .map(|c| (c.line, c.column, c.read, c.corrected))
                                .collect::<Vec<_>>(),
                            truth,
                            joined,
                            m.lines
                        );
                    }
                }
                self.corrected +=
                    usize::from(!m.corrections.is_empty() || !m.repaired_lines.is_empty());
            }
        }
        self.ms += ms;
    }

    fn row(&self, label: &str) -> String {
        let pct = |n: usize, d: usize| {
            if d == 0 {
                0.0
            } else {
                100.0 * n as f64 / d as f64
            }
        };
        format!(
            "| {label} | {} | {:.2}% | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {} | {:.1} |",
            self.images,
            100.0 - pct(self.char_errors, self.chars),
            pct(self.lines_exact, self.lines),
            pct(self.mrz_exact, self.images),
            pct(self.checks_hold, self.images),
            pct(self.checked_right, self.images),
            pct(self.fields_right, self.images),
            pct(self.read_right, self.images),
            self.wrong_but_valid,
            self.ms / self.images.max(1) as f64,
        )
    }
}

fn report(engine: &str, dir: &Path, cases: &[Case], reads: &[(String, f64)]) {
    let mut out = fs::File::create(dir.join(format!("{engine}.tsv"))).expect("tsv");
    let mut all = Tally::default();
    let mut by: BTreeMap<String, Tally> = BTreeMap::new();
    for (c, (read, ms)) in cases.iter().zip(reads) {
        writeln!(
            out,
            "{}\t{:.2}\t{}",
            c.name,
            ms,
            read.trim().replace('\n', "|")
        )
        .unwrap();
        all.add(&c.truth, read, *ms);
        for key in [
            format!("height {:02} px", c.height),
            format!("blur {}", c.blur),
            format!("noise {}", c.noise),
            format!("JPEG q{}", c.quality),
            format!(
                "format {}",
                match c.truth.lines().count() {
                    3 => "TD1",
                    _ if c.truth.len() > 80 => "44",
                    _ => "36",
                }
            ),
            format!("h>=14, blur<=0.8: {}", c.height >= 14 && c.blur <= 0.8),
        ] {
            by.entry(key).or_default().add(&c.truth, read, *ms);
        }
    }
    println!("\n{engine}\n");
    println!("| subset | images | chars right | lines exact | MRZ exact | check digits hold | checked fields right | all fields but names right | all right, names too | checks hold, a checked field wrong | CPU ms per MRZ |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!("{}", all.row("all"));
    for (k, t) in &by {
        println!("{}", t.row(k));
    }
}

// ---------------------------------------------------------------- CPU time

/// CPU time of this thread, in ms (the machine may be busy: wall time is not
/// what one core would take). ONNX Runtime on one intra-op thread runs in the
/// caller's thread.
fn thread_cpu_ms() -> f64 {
    let s = fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e6
}

/// CPU time of the waited-for children (user + system), in ms.
fn children_cpu_ms() -> f64 {
    let s = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 16 and 17 of stat (cutime, cstime) are 14 and 15 after the name.
    let ticks: f64 = f.get(13).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(14).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    ticks * 10.0
}

// ---------------------------------------------------------------- Tesseract

fn gray(path: &Path) -> GrayImage {
    image::open(path).expect("image").to_luma8()
}

/// One `tesseract` process over a list of all images (so the model loads
/// once, as with the library), pages split at form feeds.
fn tesseract(dir: &Path, scaled: bool) {
    let cases = read_truth(dir);
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut prep_ms = Vec::new();
    let sub = dir.join("tess-scaled");
    if scaled {
        fs::create_dir_all(&sub).unwrap();
    }
    for c in &cases {
        let p = dir.join(&c.name);
        if scaled {
            // Cut the zone out and bring its characters to ~32 px high.
            let t0 = Instant::now();
            let g = gray(&p);
            let lines = locate_lines(&g);
            let mut hs: Vec<u32> = lines.iter().map(|l| l.3 - l.1).collect();
            hs.sort();
            let ch = hs.get(hs.len() / 2).copied().unwrap_or(32).max(4) as f32;
            let f = 32.0 / ch;
            let x0 = lines.iter().map(|l| l.0).min().unwrap_or(0);
            let x1 = lines.iter().map(|l| l.2).max().unwrap_or(g.width());
            let y0 = lines.first().map_or(0, |l| l.1);
            let y1 = lines.last().map_or(g.height(), |l| l.3);
            let m = (ch * 0.8) as u32;
            let (cx0, cy0) = (x0.saturating_sub(m), y0.saturating_sub(m));
            let (cx1, cy1) = ((x1 + m).min(g.width()), (y1 + m).min(g.height()));
            let crop = image::imageops::crop_imm(&g, cx0, cy0, cx1 - cx0, cy1 - cy0).to_image();
            let out = image::imageops::resize(
                &crop,
                ((cx1 - cx0) as f32 * f) as u32,
                ((cy1 - cy0) as f32 * f) as u32,
                FilterType::CatmullRom,
            );
            prep_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            let q = sub.join(c.name.replace(".jpg", ".png"));
            out.save(&q).unwrap();
            inputs.push(q);
        } else {
            prep_ms.push(0.0);
            inputs.push(p);
        }
    }
    let list = dir.join(if scaled {
        "tess-scaled.txt"
    } else {
        "tess.txt"
    });
    fs::write(
        &list,
        inputs
            .iter()
            .map(|p| p.display().to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let lang = std::env::var("MRZ_TESS_LANG").unwrap_or_else(|_| "eng".into());
    let mut cmd = Command::new("tesseract");
    if let Ok(d) = std::env::var("MRZ_TESSDATA") {
        cmd.args(["--tessdata-dir", &d]);
    }
    let c0 = children_cpu_ms();
    let t0 = Instant::now();
    let out = cmd
        .arg(&list)
        .arg("stdout")
        .args(["--oem", "1", "--psm", "6", "-l", &lang])
        .args(["-c", &format!("tessedit_char_whitelist={ALPHABET}")])
        .args(["-c", "load_system_dawg=0", "-c", "load_freq_dawg=0"])
        .env("OMP_THREAD_LIMIT", "1")
        .output()
        .expect("tesseract: apt-get install tesseract-ocr");
    let total = t0.elapsed().as_secs_f64() * 1e3;
    let cpu = children_cpu_ms() - c0;
    // One process start and model load, measured on its own, is taken out.
    let t1 = Instant::now();
    let _ = Command::new("tesseract")
        .arg(&inputs[0])
        .arg("stdout")
        .args(["--oem", "1", "--psm", "6"])
        .env("OMP_THREAD_LIMIT", "1")
        .output();
    let one = t1.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    let pages: Vec<&str> = text.split('\u{c}').collect();
    let per = cpu / cases.len() as f64;
    eprintln!(
        "tesseract: {} pages for {} images, {total:.0} ms in all, {cpu:.0} ms of CPU ({per:.1} ms an image, one process for one image {one:.0} ms)",
        pages.len(),
        cases.len()
    );
    let reads: Vec<(String, f64)> = cases
        .iter()
        .enumerate()
        .map(|(i, _)| {
            (
                pages.get(i).copied().unwrap_or("").to_string(),
                per + prep_ms[i],
            )
        })
        .collect();
    let name = format!("tesseract-{lang}{}", if scaled { "-scaled" } else { "" });
    report(&name, dir, &cases, &reads);
}

// ---------------------------------------------------------------- PP-OCRv4 recognition

fn rapid(dir: &Path, model: &Path, dict: &Path, ortlib: &Path, fixed: bool) {
    use ort::session::Session;
    use ort::value::Tensor;
    let cases = read_truth(dir);
    // Narrower inputs run faster; CTC needs about 2 steps (16 px) a character.
    let squeeze: f32 = std::env::var("MRZ_REC_SQUEEZE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let height: u32 = std::env::var("MRZ_REC_HEIGHT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48);
    let repeat: usize = std::env::var("MRZ_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let hf = height as f32;
    let hu = height as usize;
    let chars: Vec<String> = fs::read_to_string(dict)
        .expect("dict")
        .lines()
        .map(String::from)
        .collect();
    // Class 0 is CTC's blank, 1..=n the dictionary, n+1 a space.
    let class_of = |s: &str| chars.iter().position(|d| d == s).map(|i| i + 1);
    let merge: Vec<Vec<usize>> = ALPHABET
        .chars()
        .map(|c| {
            let mut alts: Vec<String> = Vec::new();
            if c.is_ascii_uppercase() {
                alts.push(c.to_ascii_lowercase().to_string());
            }
            match c {
                '<' => alts.extend(["〈", "《", "‹", "«", "く", "＜"].map(String::from)),
                'I' => alts.extend(["|", "丨"].map(String::from)),
                'O' => alts.push("〇".into()),
                _ => {}
            }
            alts.iter().filter_map(|a| class_of(a)).collect()
        })
        .collect();
    let merging = std::env::var("MRZ_REC_MERGE").is_ok_and(|v| v == "1");
    let allowed: Vec<(usize, u8)> = ALPHABET
        .bytes()
        .map(|c| {
            (
                1 + chars
                    .iter()
                    .position(|d| d.as_bytes() == [c])
                    .expect("MRZ character in dictionary"),
                c,
            )
        })
        .collect();
    let env = ort::init_from(ortlib)
        .expect("ORT")
        .with_name("mrz")
        .build()
        .expect("env");
    let mut session = Session::builder(&env)
        .and_then(|b| Ok(b.with_intra_threads(1)?))
        .and_then(|b| Ok(b.with_inter_threads(1)?))
        .and_then(|mut b| b.commit_from_file(model))
        .expect("model");
    let mut reads = Vec::new();
    let mut warm = true;
    for c in &cases {
        let g = gray(&dir.join(&c.name));
        let t0 = thread_cpu_ms();
        let lines = locate_lines(&g);
        let n_lines = lines.len();
        // Crops with a margin, 48 px high, batched at the widest.
        let crops: Vec<GrayImage> = lines
            .iter()
            .map(|&(x0, y0, x1, y1)| {
                let h = y1 - y0;
                let (my, mx) = ((h as f32 * 0.35) as u32, (h as f32 * 0.6) as u32);
                let (a, b) = (x0.saturating_sub(mx), y0.saturating_sub(my));
                let (cx, cy) = ((x1 + mx).min(g.width()), (y1 + my).min(g.height()));
                let crop = image::imageops::crop_imm(&g, a, b, cx - a, cy - b).to_image();
                let w = ((cx - a) as f32 * hf * squeeze / (cy - b) as f32).round() as u32;
                image::imageops::resize(&crop, w.max(8), height, FilterType::Triangle)
            })
            .collect();
        let wmax = crops.iter().map(|c| c.width()).max().unwrap_or(8) as usize;
        let mut data = vec![0f32; crops.len() * 3 * hu * wmax];
        for (i, crop) in crops.iter().enumerate() {
            for (x, y, Luma([v])) in crop.enumerate_pixels() {
                let v = (*v as f32 / 255.0 - 0.5) / 0.5;
                for ch in 0..3 {
                    data[((i * 3 + ch) * hu + y as usize) * wmax + x as usize] = v;
                }
            }
        }
        let mut text = String::new();
        let mut extra_ms = 0.0;
        if !crops.is_empty() {
            let input = Tensor::from_array(([crops.len() as i64, 3, hu as i64, wmax as i64], data))
                .expect("tensor");
            if warm {
                let _ = session.run(ort::inputs! {"x" => input.clone()});
                warm = false;
            }
            // With MRZ_REPEAT > 1 the inference is timed as the fastest of the repeats.
            let mut best = f64::MAX;
            let t_rep = thread_cpu_ms();
            for _ in 1..repeat {
                let t = thread_cpu_ms();
                let _ = session.run(ort::inputs! {"x" => input.clone()});
                best = best.min(thread_cpu_ms() - t);
            }
            extra_ms -= thread_cpu_ms() - t_rep;
            let t_inf = thread_cpu_ms();
            let outputs = session.run(ort::inputs! {"x" => input}).expect("run");
            let inf_ms = thread_cpu_ms() - t_inf;
            if repeat > 1 && best < inf_ms {
                extra_ms -= inf_ms - best;
            }
            let (shape, probs) = outputs[0].try_extract_tensor::<f32>().expect("output");
            let (t_steps, classes) = (shape[1] as usize, shape[2] as usize);
            for i in 0..crops.len() {
                // Only the MRZ alphabet and the blank, per time step.
                let steps: Vec<Vec<f32>> = (0..t_steps)
                    .map(|t| {
                        let row =
                            &probs[(i * t_steps + t) * classes..(i * t_steps + t + 1) * classes];
                        std::iter::once(row[0])
                            .chain(allowed.iter().enumerate().map(|(j, &(k, _))| {
                                row[k]
                                    + if merging {
                                        merge[j].iter().map(|&m| row[m]).sum::<f32>()
                                    } else {
                                        0.0
                                    }
                            }))
                            .collect()
                    })
                    .collect();
                let greedy = ctc_greedy(&steps);
                let want = match (n_lines, greedy.len()) {
                    (3, _) => 30,
                    (_, n) if n >= 40 => 44,
                    _ => 36,
                };
                let labels = if fixed && greedy.len() != want {
                    ctc_fixed(&steps, want).unwrap_or(greedy)
                } else {
                    greedy
                };
                text.extend(labels.iter().map(|&l| char::from(allowed[l].1)));
                text.push('\n');
            }
        }
        reads.push((text, thread_cpu_ms() - t0 + extra_ms));
    }
    let stem = model
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let name = format!(
        "{stem}-{}-h{height}-x{squeeze}{}",
        if fixed { "fixed" } else { "greedy" },
        if merging { "-merged" } else { "" }
    );
    report(&name, dir, &cases, &reads);
}

/// Greedy CTC: the best class at each step, repeats merged, blanks (0) dropped;
/// labels are indices into the allowed alphabet.
fn ctc_greedy(steps: &[Vec<f32>]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev = 0;
    for s in steps {
        let best = (0..s.len())
            .max_by(|&a, &b| s[a].total_cmp(&s[b]))
            .unwrap_or(0);
        if best != 0 && best != prev {
            out.push(best - 1);
        }
        prev = best;
    }
    out
}

/// The most probable single CTC path that emits exactly `len` labels (an MRZ
/// line's length is known): Viterbi over (labels emitted, last class, in a
/// blank or not). O(steps x len x classes).
fn ctc_fixed(steps: &[Vec<f32>], len: usize) -> Option<Vec<usize>> {
    let t_n = steps.len();
    let c_n = steps.first()?.len(); // includes blank at 0
    if t_n < len {
        return None;
    }
    let lp: Vec<Vec<f32>> = steps
        .iter()
        .map(|s| s.iter().map(|p| p.max(1e-12).ln()).collect())
        .collect();
    let neg = f32::NEG_INFINITY;
    // state (k, c): k labels emitted, currently at class c (c = 0: in a blank after k labels, last label irrelevant).
    // To forbid merging equal neighbours we track, for blank states, nothing;
    // for label states, the label itself. A label state (k, c) comes from
    // (k, c) (staying), (k-1, blank), or (k-1, c') with c' != c.
    let idx = |k: usize, c: usize| k * c_n + c;
    let size = (len + 1) * c_n;
    let mut score = vec![neg; size];
    let mut back: Vec<Vec<u32>> = Vec::with_capacity(t_n);
    score[idx(0, 0)] = lp[0][0];
    for c in 1..c_n {
        score[idx(1, c)] = lp[0][c];
    }
    back.push(vec![u32::MAX; size]);
    for t in 1..t_n {
        let mut next = vec![neg; size];
        let mut bp = vec![u32::MAX; size];
        for k in 0..=len {
            // Best and second-best label state at k-1, to exclude c' == c.
            let (mut b1, mut b1c, mut b2) = (neg, 0usize, neg);
            if k >= 1 {
                for c in 1..c_n {
                    let s = score[idx(k - 1, c)];
                    if s > b1 {
                        b2 = b1;
                        b1 = s;
                        b1c = c;
                    } else if s > b2 {
                        b2 = s;
                    }
                }
            }
            // Blank at k: from blank at k or any label state at k.
            let mut best = score[idx(k, 0)];
            let mut from = idx(k, 0) as u32;
            for c in 1..c_n {
                if score[idx(k, c)] > best {
                    best = score[idx(k, c)];
                    from = idx(k, c) as u32;
                }
            }
            next[idx(k, 0)] = best + lp[t][0];
            bp[idx(k, 0)] = from;
            if k == 0 {
                continue;
            }
            let blank_prev = score[idx(k - 1, 0)];
            for c in 1..c_n {
                let stay = score[idx(k, c)];
                let other = if b1c == c { b2 } else { b1 };
                let other_from = if b1c == c {
                    u32::MAX
                } else {
                    idx(k - 1, b1c) as u32
                };
                let (mut s, mut f) = (stay, idx(k, c) as u32);
                if blank_prev > s {
                    s = blank_prev;
                    f = idx(k - 1, 0) as u32;
                }
                if other > s {
                    s = other;
                    f = other_from;
                    if f == u32::MAX {
                        // second best: find it.
                        let mut bb = neg;
                        for c2 in 1..c_n {
                            if c2 != c && score[idx(k - 1, c2)] > bb {
                                bb = score[idx(k - 1, c2)];
                                f = idx(k - 1, c2) as u32;
                            }
                        }
                    }
                }
                next[idx(k, c)] = s + lp[t][c];
                bp[idx(k, c)] = f;
            }
        }
        score = next;
        back.push(bp);
    }
    // End in any state with k == len.
    let mut end = idx(len, 0);
    for c in 1..c_n {
        if score[idx(len, c)] > score[end] {
            end = idx(len, c);
        }
    }
    if score[end] == neg {
        return None;
    }
    // Trace back the class at each step, then collapse.
    let mut path = vec![0usize; t_n];
    let mut s = end;
    for t in (0..t_n).rev() {
        path[t] = s;
        if t > 0 {
            s = back[t][s] as usize;
        }
    }
    let mut out = Vec::new();
    let mut prev_state = usize::MAX;
    for &st in &path {
        let c = st % c_n;
        if c != 0 && st != prev_state {
            out.push(c - 1);
        }
        prev_state = st;
    }
    (out.len() == len).then_some(out)
}
