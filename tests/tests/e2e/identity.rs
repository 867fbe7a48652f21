//! `POST /assess-id` over HTTP: a good photo passes and is recorded, the same
//! picture again is flagged with the first assessment's id, every refusal has
//! its status and code and records nothing, the key's scope is enforced, a
//! passport's machine-readable zone is read, and the SQL function answers as
//! the endpoint does.
//!
//! Each test uploads cards of its own seeds, so duplicates never cross tests.

use reqwest::blocking::multipart::{Form, Part};
use reqwest::blocking::Client;
use serde_json::Value;
use vigil_e2e::{shared, Env};
use vigil_identity::synthetic as s;

/// A key of `scope` in an account of its own: duplicates are per account,
/// and each test's uploads are its own.
fn key(env: &Env, scope: &str) -> String {
    env.tenant_key(&format!("identity {scope}"), &[scope]).0
}

/// Uploads `bytes` as the part `part` (file name and type deliberately
/// misleading: the format is read from the bytes); (status, JSON body).
fn upload(env: &Env, key: Option<&str>, part: &str, bytes: Vec<u8>) -> (u16, Value) {
    let form = Form::new().part(
        part.to_owned(),
        Part::bytes(bytes)
            .file_name("scan.pdf")
            .mime_str("application/pdf")
            .unwrap(),
    );
    let mut request = Client::new().post(env.url("/assess-id")).multipart(form);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().expect("request sent");
    let status = response.status().as_u16();
    let text = response.text().expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status}: {e}: {text}"));
    (status, body)
}

fn assess(env: &Env, key: &str, bytes: Vec<u8>) -> Value {
    let (status, body) = upload(env, Some(key), "image", bytes);
    assert_eq!(status, 200, "{body}");
    body
}

fn codes(a: &Value) -> Vec<&str> {
    a["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect()
}

/// Assessments recorded for `key` (tests run in parallel, each with its own key).
fn recorded(env: &Env, key: &str) -> i64 {
    env.psql(&format!(
        "SELECT count(*) FROM vigil.identity_assessments a JOIN vigil.api_keys k ON k.id = a.api_key_id
         WHERE k.prefix = '{}'",
        &key[..11]
    ))
    .parse()
    .unwrap()
}

/// The checks every answer reports.
const CHECKS: [&str; 5] = [
    "imageQuality",
    "document",
    "face",
    "tampering",
    "duplicates",
];

fn camera_jpeg(seed: u64) -> Vec<u8> {
    s::jpeg(&s::card(seed), 90, Some(s::camera_exif()))
}

#[test]
fn a_good_photo_passes_and_is_recorded_with_its_key() {
    let env = shared();
    let key = key(env, "identity");
    let a = assess(env, &key, camera_jpeg(101));
    assert_eq!(
        (&a["Result"], &a["decision"], &a["retryable"]),
        (&"Passed".into(), &"accept".into(), &false.into()),
        "{a}"
    );
    assert!(codes(&a).is_empty(), "{a}");
    for check in CHECKS {
        assert_eq!(a["checks"][check]["outcome"], "passed", "{check}: {a}");
    }
    let id = a["assessmentId"].as_str().unwrap();
    let row = env.psql(&format!(
        "SELECT result, api_key_id IS NOT NULL, image IS NULL, encode(sha256, 'hex') = '{}'
         FROM vigil.identity_assessments WHERE id = '{id}'",
        a["image"]["sha256"].as_str().unwrap()
    ));
    assert_eq!(row, "Passed|t|t|t");
}

#[test]
fn a_passport_photo_has_its_machine_readable_zone_read_and_checked() {
    use vigil_identity::mrz::render;
    let env = shared();
    let key = key(env, "identity");
    // ICAO 9303's specimen, in OCR-B on a data page photographed on a desk.
    let font = render::font();
    let page = render::document(&font, render::Kind::Td3, render::TD3_SPECIMEN, 1200, 11);
    let mut photo = render::desk(1700, 1250, 11);
    render::place(&mut photo, &page, (850.0, 625.0), 1200.0, -1.0);
    let a = assess(env, &key, s::jpeg(&photo, 92, Some(s::camera_exif())));
    let m = &a["checks"]["mrz"]["metrics"];
    assert_eq!(m["documentNumber"], "L898902C3", "{a}");
    assert_eq!(m["birthDate"], "1974-08-12");
    assert_eq!(m["allCheckDigitsValid"], true, "{a}");
    // It expired in 2012.
    assert!(codes(&a).contains(&"DOCUMENT_EXPIRED"), "{a}");
    assert_eq!(a["checks"]["mrz"]["outcome"], "failed");
    let not_performed = a["notPerformed"].to_string();
    assert!(!not_performed.contains("\"mrz\""), "{not_performed}");
}

#[test]
fn bad_photos_ask_for_a_retake_with_their_code() {
    let env = shared();
    let key = key(env, "identity");
    let card = s::card(102);
    for (code, image) in [
        ("BLURRY", s::blurred(&card, 4.0)),
        ("GLARE", s::glared(&card)),
        ("TOO_DARK", s::exposed(&card, 0.2)),
        ("LOW_RESOLUTION", s::resized(&card, 400)),
        ("BLACK_AND_WHITE", s::black_and_white(&card)),
    ] {
        let a = assess(env, &key, s::jpeg(&image, 90, Some(s::camera_exif())));
        assert!(codes(&a).contains(&code), "{code}: {a}");
        assert_eq!(
            (&a["Result"], &a["RiskLevel"], &a["decision"]),
            (&"Review".into(), &7.into(), &"resubmit".into()),
            "{code}"
        );
        assert!(a["RiskScore"].as_f64().unwrap() >= 50.0);
    }
}

#[test]
fn the_same_picture_again_is_flagged_with_the_first_assessment() {
    let env = shared();
    let key = key(env, "identity");
    let picture = s::card(103);
    let first = assess(env, &key, s::jpeg(&picture, 92, Some(s::camera_exif())));
    assert!(codes(&first).is_empty(), "{first}");
    for (what, again) in [
        (
            "the same bytes",
            s::jpeg(&picture, 92, Some(s::camera_exif())),
        ),
        (
            "re-encoded smaller",
            s::jpeg(&s::resized(&picture, 1000), 65, Some(s::camera_exif())),
        ),
        ("as PNG", s::png(&s::resized(&picture, 1200))),
    ] {
        let a = assess(env, &key, again);
        assert!(codes(&a).contains(&"DUPLICATE_IMAGE"), "{what}: {a}");
        assert_eq!(
            a["checks"]["duplicates"]["metrics"]["duplicateOf"], first["assessmentId"],
            "{what}"
        );
        assert_eq!(a["Result"], "Review", "{what}");
    }
    let other = assess(env, &key, camera_jpeg(104));
    assert!(!codes(&other).contains(&"DUPLICATE_IMAGE"), "{other}");
    // Issues 60 and 61: another account's upload of the same picture is not
    // told of the first.
    let elsewhere = assess(
        env,
        &self::key(env, "identity"),
        s::jpeg(&picture, 92, Some(s::camera_exif())),
    );
    assert!(
        !codes(&elsewhere).contains(&"DUPLICATE_IMAGE"),
        "{elsewhere}"
    );
    assert!(
        !elsewhere
            .to_string()
            .contains(first["assessmentId"].as_str().unwrap()),
        "{elsewhere}"
    );
}

#[test]
fn an_editor_in_the_metadata_is_a_tampering_concern() {
    let env = shared();
    let key = key(env, "identity");
    let exif = s::exif(&[
        (s::ExifTag::Make, "Apple"),
        (s::ExifTag::Model, "iPhone 15"),
        (s::ExifTag::Software, "Adobe Photoshop Lightroom 9.0"),
    ]);
    let a = assess(env, &key, s::jpeg(&s::card(105), 90, Some(exif)));
    assert_eq!(codes(&a), vec!["EDITING_SOFTWARE"], "{a}");
    assert_eq!(a["checks"]["tampering"]["outcome"], "failed");
    assert_eq!(a["Result"], "Review");
}

#[test]
fn refused_uploads_have_their_status_and_code_and_record_nothing() {
    let env = shared();
    let key = key(env, "identity");
    let jpeg = camera_jpeg(106);
    let mut huge_png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    huge_png.extend_from_slice(&[
        0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0, 8, 2, 0, 0, 0, 0x27, 0x30, 0x9c, 0x9f,
    ]);
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    // Cut short, then sealed with an end-of-image marker (issue 60).
    let sealed = [&jpeg[..jpeg.len() / 2], &[0xFF, 0xD9]].concat();
    let before = recorded(env, &key);
    let cases: [(&str, Vec<u8>, u16, &str); 6] = [
        ("random bytes", noise, 415, "unsupported_image_type"),
        (
            "a PDF",
            b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj".to_vec(),
            415,
            "unsupported_image_type",
        ),
        (
            "a HEIC",
            b"\0\0\0\x18ftypheic\0\0\0\0mif1heic".to_vec(),
            415,
            "unsupported_image_type",
        ),
        (
            "a truncated JPEG",
            jpeg[..jpeg.len() / 2].to_vec(),
            422,
            "invalid_image",
        ),
        ("a truncated JPEG sealed", sealed, 422, "invalid_image"),
        ("a huge PNG header", huge_png, 422, "image_too_large"),
    ];
    for (what, bytes, status, code) in cases {
        let (got, body) = upload(env, Some(&key), "image", bytes);
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{what}: {body}"
        );
        if status != 413 {
            assert_eq!(body["error"]["field"], "image", "{what}");
        }
    }
    // 12 MB, sent as curl sends it (Expect: 100-continue), so the early 413 is read.
    let big = std::env::temp_dir().join(format!("vigil-12mb-{}.jpg", std::process::id()));
    std::fs::write(&big, vec![0xFFu8; 12 * 1024 * 1024]).unwrap();
    let out = std::process::Command::new("curl")
        .args(["-s", "-H", &format!("x-api-key: {key}"), "-F"])
        .arg(format!("image=@{}", big.display()))
        .arg(env.url("/assess-id"))
        .output()
        .expect("curl runs");
    std::fs::remove_file(&big).unwrap();
    let body: Value = serde_json::from_slice(&out.stdout).expect("a JSON error");
    assert_eq!(body["error"]["code"], "payload_too_large", "{body}");

    let (got, body) = upload(env, Some(&key), "photo", camera_jpeg(107));
    assert_eq!(
        (got, body["error"]["field"].as_str()),
        (400, Some("image")),
        "{body}"
    );
    let not_multipart = Client::new()
        .post(env.url("/assess-id"))
        .header("x-api-key", &key)
        .header("content-type", "image/jpeg")
        .body(camera_jpeg(107))
        .send()
        .unwrap();
    assert_eq!(not_multipart.status(), 415);
    assert_eq!(recorded(env, &key), before, "a refused upload was recorded");
    // The same key's uploads are recorded, so the count would have moved.
    assess(env, &key, camera_jpeg(111));
    assert_eq!(recorded(env, &key), before + 1);
}

/// A grey PNG of `width` x `height`: a few hundred bytes, however tall.
fn plain_png(width: u32, height: u32) -> Vec<u8> {
    let mut png = Vec::new();
    image::DynamicImage::ImageLuma8(image::GrayImage::from_pixel(
        width,
        height,
        image::Luma([200]),
    ))
    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
    .unwrap();
    png
}

/// Issue 60: a 5x12000 PNG of 266 bytes took a backend to 8.6 GB and beyond
/// cancel; 300x6000 took 6 to 9 s. Slivers are refused from their header,
/// with their proportions, at once, and the pool is free for the next call.
#[test]
fn slivers_are_refused_at_once_with_their_proportions() {
    let env = shared();
    let key = key(env, "identity");
    let before = recorded(env, &key);
    for (width, height) in [(5, 12_000), (12_000, 5), (100, 12_000), (300, 6000)] {
        let png = plain_png(width, height);
        let started = std::time::Instant::now();
        let (status, body) = upload(env, Some(&key), "image", png.clone());
        let took = started.elapsed();
        let ratio = format!(
            "{:.1} to 1",
            f64::from(width.max(height)) / f64::from(width.min(height))
        );
        assert_eq!(
            (
                status,
                body["error"]["code"].as_str(),
                body["error"]["field"].as_str()
            ),
            (422, Some("image_out_of_proportion"), Some("image")),
            "{width}x{height} ({} bytes): {body}",
            png.len()
        );
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(&ratio), "{message}");
        assert!(
            took < std::time::Duration::from_secs(1),
            "{width}x{height} took {took:?}"
        );
    }
    assert_eq!(recorded(env, &key), before, "a refused upload was recorded");
    // Four to one is taken and assessed.
    let (status, body) = upload(env, Some(&key), "image", plain_png(400, 1600));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn the_key_must_hold_the_identity_scope() {
    let env = shared();
    let (status, body) = upload(env, None, "image", camera_jpeg(108));
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("missing_credentials"))
    );
    let transactions_only = key(env, "transaction");
    let (status, body) = upload(env, Some(&transactions_only), "image", camera_jpeg(108));
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("key_scope")),
        "{body}"
    );
}

#[test]
fn the_sql_function_answers_as_the_endpoint_does() {
    let env = shared();
    let key = key(env, "identity");
    // Two different pictures, one through each path, so neither is the other's duplicate.
    let over_http = assess(
        env,
        &key,
        s::jpeg(&s::resized(&s::card(109), 900), 90, Some(s::camera_exif())),
    );
    let bytes = s::jpeg(&s::resized(&s::card(110), 900), 90, Some(s::camera_exif()));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let (ok, out, err) =
        env.psql_as_app(&format!("SELECT vigil.assess_id(decode('{hex}', 'hex'));"));
    assert!(ok, "{err}");
    let in_sql: Value = serde_json::from_str(out.trim()).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&in_sql), keys(&over_http));
    // What was not performed: the same checks (the MRZ's reason may differ
    // between the two pictures: a front told by its portrait, or print that
    // reads as no zone).
    let not_performed = |v: &Value| {
        v["notPerformed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["check"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(not_performed(&in_sql), not_performed(&over_http));
    for field in ["Result", "RiskLevel", "decision", "reasons"] {
        assert_eq!(
            in_sql[field], over_http[field],
            "{field}: in SQL {in_sql}, over HTTP {over_http}"
        );
    }
    for check in CHECKS {
        assert_eq!(
            in_sql["checks"][check]["outcome"], over_http["checks"][check]["outcome"],
            "{check}"
        );
    }
}

#[test]
fn the_analysis_queries_report_identity_outcomes() {
    let env = shared();
    let key = key(env, "identity");
    let photo = camera_jpeg(112);
    assess(env, &key, photo.clone());
    let again = assess(env, &key, photo);
    assert!(codes(&again).contains(&"DUPLICATE_IMAGE"));
    let text = env.psql_file("sql/analysis.sql");
    for section in [
        "identity checks per day",
        "identity reasons",
        "submitted again",
        "identity retakes by API key",
    ] {
        assert!(text.contains(section), "no {section} section:\n{text}");
    }
    let id = again["assessmentId"].as_str().unwrap();
    let row = text
        .lines()
        .find(|l| l.contains(id))
        .unwrap_or_else(|| panic!("the duplicate is not listed:\n{text}"));
    assert!(
        row.contains(&*format!(
            "|{}|",
            again["checks"]["duplicates"]["metrics"]["duplicateOf"]
                .as_str()
                .unwrap()
        )),
        "{row}"
    );
}

#[test]
fn maximal_images_at_once_stay_within_the_identity_memory_budget() {
    // A sidecar of its own, whose backends are told apart by their name:
    // 768 MiB is two assessments' worth (384 MiB each).
    let url = format!("{}?application_name=identity-budget", shared().database_url);
    let env = shared().with_sidecar(vigil_e2e::SidecarOptions {
        args: &["--identity-memory-mb", "768"],
        env: &[("DATABASE_URL", &url)],
        ..Default::default()
    });
    let key = key(&env, "identity");
    let picture = vigil_e2e::maximal_png();
    assert!(
        picture.len() < 10 << 20,
        "the upload fits: {} bytes",
        picture.len()
    );
    // Private memory only (RssAnon): VmRSS also counts the shared buffers
    // each backend has touched, which are the server's once. The requests'
    // connections only: the query embedders (`identity-budget embedders`)
    // hold the text model, whose size depends on the processor (on one
    // without VNNI, the published model: two of them held 330 MiB, and this
    // sum 966 MiB when it counted them), and never assess an image.
    let resident_kb = || -> u64 {
        let pids = env.psql(
            "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE application_name = 'identity-budget'",
        );
        pids.split_whitespace()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| {
                let line = status
                    .lines()
                    .find(|l| l.starts_with("RssAnon:"))?
                    .to_owned();
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .sum()
    };
    /// Sets the flag when dropped, a panic included, so the sampler stops.
    struct Done<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    let (most, statuses) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(resident_kb());
            }
            most
        });
        let finished = Done(&done);
        let uploads: Vec<_> = (0..4)
            .map(|_| s.spawn(|| upload(&env, Some(&key), "image", picture.clone()).0))
            .collect();
        let statuses: Vec<std::thread::Result<u16>> =
            uploads.into_iter().map(|u| u.join()).collect();
        drop(finished);
        let statuses: Vec<u16> = statuses.into_iter().map(|s| s.unwrap()).collect();
        (sampler.join().unwrap(), statuses)
    });
    assert_eq!(statuses, [200; 4]);
    // The sampler saw the assessments (one alone takes about 340 MB)...
    assert!(most > 200 * 1024, "the samples saw {} MiB", most / 1024);
    // ...and never more than two at once, and the idle backends beside
    // them; four at once would take about 1,400 MB.
    let bound_kb = (768 + 4 * 48) * 1024;
    assert!(
        most < bound_kb,
        "the sidecar's backends held {} MiB at once",
        most / 1024
    );
    eprintln!(
        "identity budget: the backends held at most {} MiB at once",
        most / 1024
    );
}
