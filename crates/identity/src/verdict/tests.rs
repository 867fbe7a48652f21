//! The six checks, the level, the score and the answer's JSON, on measures
//! made up for each case and on documents drawn and analysed.

use super::*;
use crate::document::{Found, Framing, Quad};
use crate::face::Face;
use crate::mrz::{self, MrzReading, ReadFailure};
use crate::quality::Quality;
use crate::tamper::Metadata;

/// A clear document with one face, a camera and no error-level analysis.
fn analysis() -> Analysis {
    Analysis {
        format: "png",
        bytes: 1000,
        sha256: [0; 32],
        width: 1200,
        height: 800,
        document: Found::Document(Quad {
            corners: [
                (100.0, 100.0),
                (1100.0, 100.0),
                (1100.0, 700.0),
                (100.0, 700.0),
            ],
            frame_share: 0.6,
            aspect: 1.585,
            rectangularity: 0.98,
            framing: Framing::Background,
        }),
        quality: Quality {
            sharpness: 200.0,
            brightness: 130.0,
            contrast: 50.0,
            glare_share: 0.0,
            colourfulness: 30.0,
            dark_level: 40.0,
            colour_share: 0.3,
        },
        document_pixels: 1000,
        faces: Some(vec![Face {
            x: 20,
            y: 40,
            width: 90,
            height: 110,
            score: 3.0,
        }]),
        face_search: crate::face::Searched::PortraitZone,
        metadata: Metadata {
            has_exif: true,
            camera: Some("Canon EOS 80D".into()),
            ..Metadata::default()
        },
        ela: None,
        phash: [0; 32],
        mrz: MrzAttempt::Skipped("no recogniser".into()),
    }
}

const TD3: &str =
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
/// Before the specimen's expiry (2012-04-15).
const BEFORE_EXPIRY: mrz::Date = mrz::Date {
    year: 2010,
    month: 1,
    day: 1,
};

/// The document's outline given the format's proportions.
fn with_format(mut a: Analysis, aspect: f64) -> Analysis {
    if let Found::Document(q) = &mut a.document {
        q.aspect = aspect;
    }
    a
}

fn passport() -> Analysis {
    with_format(analysis(), 125.0 / 88.0)
}

/// `text` as a recogniser read it, each character at least `confidence` sure.
fn read(text: &str, confidence: f32, today: mrz::Date) -> MrzAttempt {
    let mut a = mrz::read_zone(
        &mrz::locate::Zone {
            lines: text
                .lines()
                .map(|_| image::GrayImage::new(400, mrz::locate::LINE_HEIGHT))
                .collect(),
            upside_down: false,
            skew_degrees: 0.5,
            char_height: 24.0,
            bounds: (0.0, 0.0, 400.0, 96.0),
        },
        false,
        &Scripted(text.lines().map(str::to_owned).collect()),
        today,
    );
    a.confidence = confidence;
    a.char_probs = text.lines().map(|l| vec![confidence; l.len()]).collect();
    MrzAttempt::Read { reading: a, today }
}

/// Gives its lines, whatever it is shown.
struct Scripted(Vec<String>);

impl mrz::LineRecognizer for Scripted {
    fn recognize(
        &self,
        lines: &[image::GrayImage],
    ) -> Result<Vec<mrz::ctc::LineProbabilities>, mrz::RecognizeError> {
        Ok(self
            .0
            .iter()
            .take(lines.len())
            .map(|l| mrz::ctc::LineProbabilities::certain(l))
            .collect())
    }
}

fn no_zone(today: mrz::Date) -> MrzAttempt {
    MrzAttempt::Read {
        reading: MrzReading {
            zone: None,
            text: String::new(),
            confidence: 0.0,
            char_probs: Vec::new(),
            mrz: Err(ReadFailure::NoZone),
        },
        today,
    }
}

fn mrz_not_performed(json: &Value) -> Option<&str> {
    json["notPerformed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["check"] == "mrz")
        .and_then(|e| e["reason"].as_str())
}

#[test]
fn a_zone_read_with_every_check_digit_gives_its_fields_and_leaves_not_performed() {
    let mut a = passport();
    a.mrz = read(TD3, 0.98, BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), Vec::<&str>::new());
    assert_eq!(verdict.level, Level::Safe);
    let json = verdict.to_json("id");
    let m = &json["checks"]["mrz"];
    assert_eq!(m["outcome"], "passed", "{m}");
    let metrics = &m["metrics"];
    for (key, value) in [
        ("format", "TD3"),
        ("documentType", "P"),
        ("issuingState", "UTO"),
        ("documentNumber", "L898902C3"),
        // Sliced, not spelled: upper-case literals here are taken for
        // reason codes (tests/tests/e2e/reference.rs).
        ("primaryName", &TD3[5..13]),
        ("secondaryName", "Anna Maria".to_uppercase().as_str()),
        ("nationality", "UTO"),
        ("birthDate", "1974-08-12"),
        ("expiryDate", "2012-04-15"),
        ("sex", "F"),
        ("optionalData", "ZE184226B"),
        ("reading", "valid"),
    ] {
        assert_eq!(metrics[key], value, "{key}: {metrics}");
    }
    assert_eq!(metrics["expired"], false);
    assert_eq!(metrics["allCheckDigitsValid"], true);
    let digits = metrics["checkDigits"].as_object().unwrap();
    assert_eq!(
        digits.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "birthDate",
            "composite",
            "documentNumber",
            "expiryDate",
            "optionalData"
        ]
    );
    assert!(digits.values().all(|d| d["valid"] == true));
    assert!(metrics["correctedLines"].is_null());
    assert_eq!(mrz_not_performed(&json), None);
    // The check sits between the face and tampering.
    let names: Vec<&String> = json["checks"].as_object().unwrap().keys().collect();
    assert!(names.contains(&&"mrz".to_string()));
}

#[test]
fn an_expired_document_is_a_concern_when_its_expiry_check_digit_holds() {
    let mut a = passport();
    a.mrz = read(TD3, 0.98, mrz::Date::new(2026, 11, 27).unwrap());
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), vec!["DOCUMENT_EXPIRED"]);
    assert_eq!(verdict.reasons[0].points, 60.0);
    assert_eq!(verdict.level, Level::Caution);
    assert!(verdict.reasons[0].message.contains("2012-04-15"));
    assert_eq!(
        verdict.to_json("id")["checks"]["mrz"]["metrics"]["expired"],
        true
    );
    // Valid on its expiry day.
    a.mrz = read(TD3, 0.98, mrz::Date::new(2012, 4, 15).unwrap());
    assert_eq!(judge(&a, None).codes(), Vec::<&str>::new());
}

#[test]
fn a_failing_check_digit_is_a_concern_when_read_cleanly_else_a_retake() {
    // The birth date altered (740812 to 740813): its check digit and
    // the composite fail, and no confusable character explains it.
    let altered = TD3.replace("7408122F", "7408132F");
    let mut a = passport();
    a.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(
        verdict.codes(),
        vec!["MRZ_CHECK_DIGIT"],
        "{:?}",
        verdict.reasons
    );
    assert_eq!(verdict.reasons[0].points, 75.0);
    assert!(verdict.reasons[0].message.contains("birthDate"));
    assert_eq!(
        (verdict.level, verdict.decision),
        (Level::High, Decision::Review)
    );
    let json = verdict.to_json("id");
    let digits = &json["checks"]["mrz"]["metrics"]["checkDigits"];
    assert_eq!(digits["birthDate"]["valid"], false);
    assert_eq!(digits["birthDate"]["printed"], "2");
    assert_eq!(digits["birthDate"]["computed"], 3);
    assert_eq!(digits["documentNumber"]["valid"], true);
    assert_eq!(json["checks"]["mrz"]["outcome"], "failed");

    // The same read unsurely: a misreading, so a retake.
    a.mrz = read(&altered, 0.3, BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), vec!["MRZ_UNREADABLE"]);
    assert_eq!((verdict.level, verdict.retryable), (Level::Retake, true));
    // Unsure only where no failing digit looks (the names' fillers, the
    // optional data's): the birth date read surely, its digit fails:
    // the document's. Unsure in the birth date itself: a misreading.
    let unsure_at = |columns: &[(usize, usize)]| {
        let mut m = read(&altered, 0.95, BEFORE_EXPIRY);
        if let MrzAttempt::Read { reading, .. } = &mut m {
            for &(line, column) in columns {
                reading.char_probs[line][column] = 0.2;
            }
            reading.confidence = 0.2;
        }
        m
    };
    a.mrz = unsure_at(&[(0, 40), (0, 41), (1, 30), (1, 31)]);
    assert_eq!(judge(&a, None).codes(), vec!["MRZ_CHECK_DIGIT"]);
    a.mrz = unsure_at(&[(0, 40), (1, 16)]);
    assert_eq!(judge(&a, None).codes(), vec!["MRZ_UNREADABLE"]);
    // On a card, an unsure reading whose digits fail is print taken
    // for a zone: not performed; read cleanly, it is a zone.
    let mut card = analysis();
    card.mrz = read(&altered, 0.3, BEFORE_EXPIRY);
    let json = judge(&card, None).to_json("id");
    assert_eq!(json["reasons"], json!([]), "{json}");
    assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
    card.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
    assert_eq!(judge(&card, None).codes(), vec!["MRZ_CHECK_DIGIT"]);

    // Cleanly, but on a blurred photo: a retake, not a forgery.
    a.mrz = read(&altered, 0.97, BEFORE_EXPIRY);
    a.quality.sharpness = 10.0;
    assert_eq!(judge(&a, None).codes(), vec!["BLURRY", "MRZ_UNREADABLE"]);
}

#[test]
fn a_confusable_character_is_corrected_when_the_check_digits_allow_one_reading() {
    // The document number's 0 read as O.
    let misread = TD3.replace("L898902C3", "L8989O2C3");
    let mut a = passport();
    a.mrz = read(&misread, 0.9, BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), Vec::<&str>::new());
    let json = verdict.to_json("id");
    let metrics = &json["checks"]["mrz"]["metrics"];
    assert_eq!(metrics["reading"], "corrected", "{metrics}");
    assert_eq!(metrics["documentNumber"], "L898902C3");
    assert_eq!(metrics["correctedLines"][1], TD3.lines().nth(1).unwrap());
    assert_eq!(metrics["recognised"], misread);
    let correction = &metrics["corrections"][0];
    assert_eq!(
        (
            &correction["line"],
            &correction["column"],
            &correction["read"],
            &correction["corrected"],
            &correction["field"]
        ),
        (
            &json!(2),
            &json!(6),
            &json!("O"),
            &json!("0"),
            &json!("documentNumber")
        )
    );
}

#[test]
fn no_zone_is_a_retake_on_a_passport_page_and_not_performed_on_a_card() {
    let mut a = passport();
    a.mrz = no_zone(BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), vec!["MRZ_UNREADABLE"]);
    assert_eq!(verdict.level, Level::Retake);
    let json = verdict.to_json("id");
    assert_eq!(json["checks"]["mrz"]["metrics"]["found"], false);
    assert_eq!(mrz_not_performed(&json), None);

    // A card: its front has no zone.
    let mut a = analysis();
    a.mrz = no_zone(BEFORE_EXPIRY);
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), Vec::<&str>::new());
    let json = verdict.to_json("id");
    assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
    assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("front")));

    // Text that is not a zone: the same two ways.
    let garbled = MrzAttempt::Read {
        reading: MrzReading {
            zone: None,
            text: "P<UTOERIKSSON<<ANNA<MARIA<<<".into(),
            confidence: 0.4,
            char_probs: Vec::new(),
            mrz: Err(ReadFailure::Mrz(mrz::MrzError::LineCount { found: 1 })),
        },
        today: BEFORE_EXPIRY,
    };
    a.mrz = garbled.clone();
    let json = judge(&a, None).to_json("id");
    assert_eq!(json["reasons"], json!([]));
    assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("1 lines")));
    let mut p = passport();
    p.mrz = garbled;
    assert_eq!(judge(&p, None).codes(), vec!["MRZ_UNREADABLE"]);
    // Print without fillers, read as a zone on what looks like a page
    // (a card outlined with something beside it): not a zone.
    p.mrz = read(
        "10O001010000011110100000001010000030\n10000A010010001000101000000O01010020",
        0.01,
        BEFORE_EXPIRY,
    );
    let json = judge(&p, None).to_json("id");
    assert_eq!(json["reasons"], json!([]), "{json}");
    assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");

    // Not attempted: not performed, with the reason given.
    let json = judge(&analysis(), None).to_json("id");
    assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
    assert_eq!(mrz_not_performed(&json), Some("no recogniser"));
}

#[test]
fn a_passport_rendered_in_ocr_b_is_read_through_analyse_with() {
    use crate::mrz::render;
    let font = render::font();
    let page = render::document(&font, render::Kind::Td3, render::TD3_SPECIMEN, 1100, 7);
    let mut scene = render::desk(1600, 1200, 3);
    render::place(&mut scene, &page, (800.0, 600.0), 1100.0, 2.0);
    let bytes = crate::synthetic::jpeg(&scene, 92, Some(crate::synthetic::camera_exif()));
    let scripted = Scripted(render::TD3_SPECIMEN.lines().map(str::to_owned).collect());
    let a = crate::analyse_with(
        &bytes,
        &mut crate::FaceDetector::new(),
        crate::MrzReader::On {
            recognizer: &scripted,
            today: BEFORE_EXPIRY,
        },
    )
    .expect("decodes");
    let json = judge(&a, None).to_json("id");
    let m = &json["checks"]["mrz"];
    assert_eq!(m["outcome"], "passed", "{m}");
    assert_eq!(m["metrics"]["documentNumber"], "L898902C3");
    assert_eq!(m["metrics"]["zone"]["lines"], 2);
    assert_eq!(m["metrics"]["zone"]["wholeFrame"], false);
}

#[test]
fn a_cards_front_with_its_portrait_is_not_searched_for_a_zone() {
    let card = crate::synthetic::card(7);
    let bytes = crate::synthetic::jpeg(&card, 90, Some(crate::synthetic::camera_exif()));
    let scripted = Scripted(render_specimen());
    let a = crate::analyse_with(
        &bytes,
        &mut crate::FaceDetector::new(),
        crate::MrzReader::On {
            recognizer: &scripted,
            today: BEFORE_EXPIRY,
        },
    )
    .expect("decodes");
    assert_eq!(a.face_search, crate::face::Searched::PortraitZone);
    let json = judge(&a, None).to_json("id");
    assert_eq!(json["checks"]["mrz"]["outcome"], "not_performed");
    assert!(mrz_not_performed(&json).is_some_and(|r| r.contains("front")));
}

fn render_specimen() -> Vec<String> {
    crate::mrz::render::TD3_SPECIMEN
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn levels_follow_the_cut_offs_a_failure_outranking_a_retake_outranking_the_rest() {
    let cases = [
        (0.0, false, 5, "Passed", "accept"),
        (19.0, false, 5, "Passed", "accept"),
        (20.0, false, 4, "Passed", "accept"),
        (40.0, false, 3, "Passed", "accept"),
        (60.0, false, 6, "Review", "review"),
        (75.0, false, 1, "Review", "review"),
        (90.0, false, 0, "Failed", "decline"),
        (0.0, true, 7, "Review", "resubmit"),
        (85.0, true, 7, "Review", "resubmit"),
        (100.0, true, 0, "Failed", "decline"),
    ];
    for (points, retake, number, result, decision) in cases {
        let level = Level::of(points, retake);
        assert_eq!(
            (
                level.number(),
                level.verdict().as_str(),
                level.decision().as_str()
            ),
            (number, result, decision),
            "{points} points, retake {retake}"
        );
    }
}

#[test]
fn tampering_counts_at_most_its_cap_and_no_points_are_a_positive_zero() {
    assert!(points(&[]) == 0.0 && points(&[]).is_sign_positive());
    let editor = concern("EDITING_SOFTWARE", TAMPERING, 60.0, "");
    let ela = concern("COMPRESSION_INCONSISTENT", TAMPERING, 40.0, "");
    let camera = concern("NO_CAMERA_METADATA", TAMPERING, 10.0, "");
    let tampered = [editor, ela, camera];
    assert_eq!(points(&tampered), TAMPERING_CAP);
    // Only the tampering is capped, and the total is at most 100.
    let no_face = concern("NO_FACE", FACE, 60.0, "");
    assert_eq!(points(&[tampered[2].clone(), no_face.clone()]), 70.0);
    assert_eq!(
        points(&[tampered[0].clone(), no_face.clone(), no_face]),
        100.0
    );
}

#[test]
fn no_face_is_asked_for_only_when_no_retake_is() {
    let mut a = analysis();
    a.faces = Some(Vec::new());
    let found = face(&a, false);
    assert_eq!(found.reasons.len(), 1);
    assert_eq!(
        (found.reasons[0].code, found.entry["outcome"].as_str()),
        ("NO_FACE", Some("failed"))
    );
    let retake = face(&a, true);
    assert!(retake.reasons.is_empty());
    assert_eq!(retake.entry["outcome"], "passed");
    a.faces = None;
    assert_eq!(face(&a, false).entry["outcome"], "not_performed");

    // Through judge: a blurred photo without a face is only a retake.
    a.faces = Some(Vec::new());
    a.quality.sharpness = 10.0;
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), vec!["BLURRY"]);
    assert_eq!(
        (verdict.level, verdict.confidence),
        (Level::Retake, Confidence::Low)
    );
}

#[test]
fn a_check_outcome_is_failed_for_a_retake_or_a_strong_concern_warning_for_a_weak_one() {
    let camera = concern("NO_CAMERA_METADATA", TAMPERING, 10.0, "");
    let ela = concern("COMPRESSION_INCONSISTENT", TAMPERING, 40.0, "");
    let editor = concern("EDITING_SOFTWARE", TAMPERING, 60.0, "");
    let blurry = retake("BLURRY", QUALITY, "");
    assert_eq!(outcome(&[]), "passed");
    assert_eq!(outcome(&[camera.clone(), ela]), "warning");
    assert_eq!(outcome(&[camera.clone(), editor]), "failed");
    assert_eq!(outcome(&[blurry]), "failed");
}

#[test]
fn only_a_zone_whose_check_digits_hold_makes_a_pass_high_confidence() {
    let ela = Some(crate::tamper::Ela {
        pixels: 1000,
        median: 0.01,
        outlier_ratio: 2.0,
    });
    // A card's front (or a drawing of one): every image check ran, no zone.
    let mut card = analysis();
    card.ela = ela;
    let verdict = judge(&card, None);
    assert_eq!(
        (verdict.result, verdict.confidence),
        (Verdict::Passed, Confidence::Medium)
    );
    // A passport page whose zone holds.
    let mut page = passport();
    page.ela = ela;
    page.mrz = read(TD3, 0.98, BEFORE_EXPIRY);
    let verdict = judge(&page, None);
    assert_eq!(
        (verdict.result, verdict.confidence),
        (Verdict::Passed, Confidence::High)
    );
    // The same zone with a failing check digit, read unsurely: a retake.
    page.mrz = read(&TD3.replace("7408122", "7408123"), 0.5, BEFORE_EXPIRY);
    assert_ne!(judge(&page, None).confidence, Confidence::High);
}

#[test]
fn a_clean_photo_without_error_level_analysis_passes_with_medium_confidence() {
    let verdict = judge(&analysis(), None);
    assert_eq!(verdict.codes(), Vec::<&str>::new());
    assert_eq!(
        (
            verdict.result,
            verdict.level,
            verdict.decision,
            verdict.confidence
        ),
        (
            Verdict::Passed,
            Level::Safe,
            Decision::Accept,
            Confidence::Medium
        )
    );
    let json = verdict.to_json("id");
    assert_eq!(json["RiskLevel"], 5);
    assert_eq!(json["RiskLevelLabel"], "Safe zone, pass");
    assert_eq!(json["decision"], "accept");
}
