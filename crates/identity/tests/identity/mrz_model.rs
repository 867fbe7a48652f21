//! The MRZ read off rendered documents by the real model (feature `ocr-ort`):
//! PP-OCRv4 recognition through ONNX Runtime, as set-up installs them
//! (docker/fetch-data.sh). `VIGIL_MRZ_MODEL` and `VIGIL_ONNXRUNTIME` override
//! where they are looked for. Without them every test fails, saying what is
//! missing, unless `VIGIL_TEST_OPT_OUT` names `mrz-model`
//! (docs/getting-started.md): then each says it was opted out and `make test`
//! lists the group as opted out.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use vigil_embed::load_runtime;
use vigil_identity::document::{self, Found};
use vigil_identity::mrz::onnx::{OrtRecognizer, Runtime, MODEL_FILE};
use vigil_identity::mrz::{read_mrz, CheckOutcome, Date, Format, Mrz, MrzReading, Sex};

#[path = "../../src/mrz/render.rs"]
mod render;
use render::Kind;

const TODAY: Date = Date {
    year: 2026,
    month: 11,
    day: 27,
};

fn pg_config(flag: &str) -> Option<PathBuf> {
    let out = Command::new("/usr/lib/postgresql/15/bin/pg_config")
        .arg(flag)
        .output()
        .ok()?;
    Some(PathBuf::from(String::from_utf8(out.stdout).ok()?.trim()))
}

/// Whether `VIGIL_TEST_OPT_OUT` names this file's group, `mrz-model`.
fn opted_out() -> bool {
    std::env::var("VIGIL_TEST_OPT_OUT").is_ok_and(|v| v.split([' ', ',']).any(|g| g == "mrz-model"))
}

/// The recogniser; `None` (said each time) only when the group is opted out.
/// Panics, naming what is missing, when the runtime or model is not installed.
fn recognizer() -> Option<&'static OrtRecognizer> {
    if opted_out() {
        eprintln!("OPTED OUT (VIGIL_TEST_OPT_OUT=mrz-model): the MRZ model is not tried");
        return None;
    }
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    static RECOGNIZER: OnceLock<OrtRecognizer> = OnceLock::new();
    let installed = |var: &str, flag: &str, file: &str| {
        let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
            pg_config(flag)
                .unwrap_or_else(|| panic!("no pg_config to find {file} (set {var})"))
                .join(file)
        });
        assert!(
            path.is_file(),
            "missing {} (docker/fetch-data.sh installs it; VIGIL_TEST_OPT_OUT=mrz-model \
             opts out of these tests, docs/getting-started.md)",
            path.display()
        );
        path
    };
    Some(RECOGNIZER.get_or_init(|| {
        let runtime_path = installed(
            "VIGIL_ONNXRUNTIME",
            "--pkglibdir",
            "vigil/libonnxruntime.so.1.31.1",
        );
        let model = installed(
            "VIGIL_MRZ_MODEL",
            "--sharedir",
            &format!("vigil/model/{MODEL_FILE}"),
        );
        let runtime = RUNTIME.get_or_init(|| load_runtime(&runtime_path).expect("runtime loads"));
        OrtRecognizer::load(runtime, &model, 1).expect("model loads")
    }))
}

fn outline(image: &image::RgbImage) -> Option<document::Quad> {
    match document::find(image) {
        Found::Document(q) => Some(q),
        _ => None,
    }
}

fn valid(reading: &MrzReading) -> &Mrz {
    let mrz = reading
        .mrz
        .as_ref()
        .unwrap_or_else(|e| panic!("not read: {e:?}, text {:?}", reading.text));
    assert!(
        mrz.checks.iter().all(|c| c.outcome == CheckOutcome::Valid),
        "checks {:?}, text {:?}",
        mrz.checks,
        reading.text
    );
    mrz
}

fn assert_specimen_td3(mrz: &Mrz) {
    assert_eq!(mrz.format, Format::Td3);
    assert_eq!(mrz.document_type, "P");
    assert_eq!(mrz.issuing_state, "UTO");
    assert_eq!(mrz.document_number, "L898902C3");
    assert_eq!(mrz.primary_name, "ERIKSSON");
    assert_eq!(mrz.secondary_name, "ANNA MARIA");
    assert_eq!(mrz.nationality, "UTO");
    assert_eq!(mrz.birth_date.date, Date::new(1974, 8, 12));
    assert_eq!(mrz.sex, Sex::Female);
    assert_eq!(mrz.expiry_date.date, Date::new(2012, 4, 15));
    assert_eq!(mrz.optional_data, "ZE184226B");
    assert_eq!(mrz.checks.len(), 5);
}

#[test]
fn a_passport_photographed_on_a_desk_reads_with_every_check_digit() {
    let Some(recognizer) = recognizer() else {
        return;
    };
    let font = render::font();
    let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1300, 11);
    let mut scene = render::desk(1600, 1200, 11);
    render::place(&mut scene, &page, (790.0, 610.0), 1150.0, -3.0);
    let scene = render::jpeg(&scene, 85);
    let outline = outline(&scene);
    assert!(outline.is_some(), "the page is found on the desk");
    let reading = read_mrz(&scene, outline.as_ref(), recognizer, TODAY);
    let zone = reading.zone.clone().expect("zone");
    assert_eq!(
        (zone.lines, zone.upside_down, zone.whole_frame),
        (2, false, false)
    );
    let mrz = valid(&reading);
    assert_specimen_td3(mrz);
    // As printed, after the fixes a field's type decides (an O read 0 in a
    // country code, say).
    assert_eq!(mrz.lines.join("\n"), render::TD3_SPECIMEN);
}

#[test]
fn a_card_cropped_and_upside_down_reads_with_every_check_digit() {
    let Some(recognizer) = recognizer() else {
        return;
    };
    let font = render::font();
    let card = render::document(&font, Kind::Td1, render::TD1_SPECIMEN, 1000, 12);
    let turned = image::imageops::rotate180(&card);
    let reading = read_mrz(&render::jpeg(&turned, 85), None, recognizer, TODAY);
    let zone = reading.zone.clone().expect("zone");
    assert_eq!(
        (zone.lines, zone.upside_down, zone.whole_frame),
        (3, true, true)
    );
    let mrz = valid(&reading);
    assert_eq!(mrz.format, Format::Td1);
    assert_eq!(mrz.document_type, "I");
    assert_eq!(mrz.issuing_state, "UTO");
    assert_eq!(mrz.document_number, "D23145890");
    assert_eq!(mrz.lines.join("\n"), render::TD1_SPECIMEN);
    assert_eq!(mrz.primary_name, "ERIKSSON");
    assert_eq!(mrz.secondary_name, "ANNA MARIA");
    assert_eq!(mrz.birth_date.date, Date::new(1974, 8, 12));
    assert_eq!(mrz.expiry_date.date, Date::new(2012, 4, 15));
    assert_eq!(mrz.sex, Sex::Female);
    assert_eq!(mrz.expired(TODAY), Some(true));
}

#[test]
fn a_passport_scan_upside_down_with_its_outline_reads() {
    let Some(recognizer) = recognizer() else {
        return;
    };
    let font = render::font();
    let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1100, 13);
    let mut scene = image::RgbImage::from_pixel(1700, 1300, image::Rgb([246, 246, 244]));
    let corners = render::place(&mut scene, &page, (850.0, 650.0), 1100.0, 180.5);
    let outline = document::Quad {
        corners,
        frame_share: 0.5,
        aspect: 125.0 / 88.0,
        rectangularity: 1.0,
        framing: document::Framing::Page,
    };
    let reading = read_mrz(&render::jpeg(&scene, 90), Some(&outline), recognizer, TODAY);
    assert_eq!(reading.zone.as_ref().map(|z| z.upside_down), Some(true));
    assert_specimen_td3(valid(&reading));
}
