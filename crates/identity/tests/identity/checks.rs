//! The checks on synthetic cards: a good photo passes, each kind of bad photo
//! gets its code, the hash tells the same picture from a different document,
//! and no input makes the decoder path panic.

use image::RgbImage;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use vigil_identity::synthetic::{self as s, Backdrop, Scene};
use vigil_identity::{
    analyse, document, judge, phash, Analysis, DecodeError, Duplicate, FaceDetector,
};

fn analysed(bytes: &[u8]) -> Analysis {
    analyse(bytes, &mut FaceDetector::new()).expect("a valid image")
}

fn camera_jpeg(image: &RgbImage) -> Vec<u8> {
    s::jpeg(image, 90, Some(s::camera_exif()))
}

fn codes(bytes: &[u8]) -> Vec<&'static str> {
    judge(&analysed(bytes), None).codes()
}

#[test]
fn a_sharp_card_photographed_with_a_camera_passes_every_check() {
    let mut detector = FaceDetector::new();
    for seed in 1..6 {
        let a = analyse(&camera_jpeg(&s::card(seed)), &mut detector).unwrap();
        let verdict = judge(&a, None);
        assert_eq!(verdict.codes(), Vec::<&str>::new(), "seed {seed}");
        assert_eq!(
            (
                verdict.result.as_str(),
                verdict.level.number(),
                verdict.decision.as_str()
            ),
            ("Passed", 5, "accept")
        );
        assert!(!verdict.retryable);
        // 0, not -0: the answer says "RiskScore": 0.0.
        assert!(verdict.score == 0.0 && verdict.score.is_sign_positive());
        let document::Found::Document(quad) = &a.document else {
            panic!("seed {seed}: {:?}", a.document)
        };
        let (format, deviation) = quad.format();
        assert_eq!(format, "ID-1");
        assert!(deviation < 0.03, "seed {seed}: aspect {}", quad.aspect);
        assert_eq!(a.faces.as_ref().map(Vec::len), Some(1), "seed {seed}");
        let json = verdict.to_json("00000000-0000-4000-8000-000000000000");
        assert_eq!(json["checks"]["face"]["outcome"], "passed");
        assert_eq!(
            json["checks"]["document"]["metrics"]["nearestFormat"],
            "ID-1"
        );
        assert!(json["notPerformed"].as_array().unwrap().len() >= 4);
    }
}

#[test]
fn png_and_webp_are_assessed_like_jpeg() {
    let card = s::card(7);
    for bytes in [s::png(&card), s::webp(&card)] {
        let a = analysed(&bytes);
        assert!(matches!(a.document, document::Found::Document(_)));
        assert_eq!(a.faces.as_ref().map(Vec::len), Some(1));
        // Neither format carries a camera here, and neither has a JPEG history.
        assert_eq!(judge(&a, None).codes(), vec!["NO_CAMERA_METADATA"]);
        assert!(a.ela.is_none());
    }
}

#[test]
fn each_bad_photo_gets_its_code_and_asks_for_a_retake() {
    let card = s::card(3);
    let cases: [(&str, RgbImage); 8] = [
        ("BLURRY", s::blurred(&card, 4.0)),
        ("GLARE", s::glared(&card)),
        ("TOO_DARK", s::exposed(&card, 0.2)),
        // Washed out: bright, and its printing lifted with the rest.
        ("TOO_BRIGHT", s::exposed(&card, 3.0)),
        ("LOW_RESOLUTION", s::resized(&card, 400)),
        (
            "CUT_OFF",
            s::card_in(
                3,
                Scene {
                    centre: (0.8, 0.5),
                    ..Scene::default()
                },
            ),
        ),
        ("BLACK_AND_WHITE", s::black_and_white(&card)),
        ("NO_DOCUMENT", s::scenery(3)),
    ];
    for (code, image) in cases {
        let verdict = judge(&analysed(&camera_jpeg(&image)), None);
        assert!(
            verdict.codes().contains(&code),
            "{code}: {:?}",
            verdict.codes()
        );
        assert_eq!(
            (
                verdict.result.as_str(),
                verdict.level.number(),
                verdict.decision.as_str(),
                verdict.retryable
            ),
            ("Review", 7, "resubmit", true),
            "{code}"
        );
        // A score-only integrator reviews from 50.
        assert!(verdict.score >= 50.0, "{code}: {}", verdict.score);
        assert_eq!(verdict.confidence.as_str(), "Low");
    }
    let small = s::card_in(
        3,
        Scene {
            card_share: 0.3,
            ..Scene::default()
        },
    );
    assert!(codes(&camera_jpeg(&small)).contains(&"DOCUMENT_TOO_SMALL"));
}

#[test]
fn an_editor_in_exif_raises_concern_but_does_not_fail_alone() {
    let exif = s::exif(&[
        (exif::Tag::Make, "Canon"),
        (exif::Tag::Model, "EOS 80D"),
        (exif::Tag::Software, "Adobe Photoshop 25.0 (Windows)"),
    ]);
    let a = analysed(&s::jpeg(&s::card(4), 90, Some(exif)));
    assert_eq!(a.metadata.editor, Some("photoshop"));
    let verdict = judge(&a, None);
    assert_eq!(verdict.codes(), vec!["EDITING_SOFTWARE"]);
    assert_eq!(
        (
            verdict.result.as_str(),
            verdict.level.number(),
            verdict.decision.as_str()
        ),
        ("Review", 6, "review")
    );
    let json = verdict.to_json("x");
    assert_eq!(
        json["checks"]["tampering"]["metrics"]["software"],
        "Adobe Photoshop 25.0 (Windows)"
    );
    assert_eq!(json["reasons"][0]["check"], "tampering");
}

#[test]
fn a_pasted_region_recompresses_unlike_the_rest() {
    let mut detector = FaceDetector::new();
    for seed in 1..4 {
        let card = s::with_noise(&s::card(seed), 4, seed);
        let donor = s::with_noise(&s::card(seed + 100), 4, seed + 100);
        let clean = image::load_from_memory(&s::jpeg(&card, 70, None))
            .unwrap()
            .into_rgb8();
        let camera = Some(s::camera_exif());
        let clean = analyse(&s::jpeg(&clean, 90, camera.clone()), &mut detector).unwrap();
        let forged = analyse(
            &s::jpeg(&s::spliced(&card, &donor), 90, camera),
            &mut detector,
        )
        .unwrap();
        assert_eq!(
            judge(&clean, None).codes(),
            Vec::<&str>::new(),
            "seed {seed}: {:?}",
            clean.ela
        );
        let verdict = judge(&forged, None);
        assert!(
            verdict.codes().contains(&"COMPRESSION_INCONSISTENT"),
            "seed {seed}: {:?}",
            forged.ela
        );
        // A weak signal alone does not stop the document.
        assert_eq!(verdict.result.as_str(), "Passed");
    }
}

#[test]
fn a_duplicate_asks_for_review_and_with_an_editor_fails() {
    let duplicate = Duplicate {
        assessment_id: "0f1e2d3c-0000-4000-8000-000000000000".into(),
        distance: 2,
        matches: 1,
    };
    let clean = analysed(&camera_jpeg(&s::card(5)));
    let verdict = judge(&clean, Some(&duplicate));
    assert_eq!(verdict.codes(), vec!["DUPLICATE_IMAGE"]);
    assert_eq!(
        (verdict.result.as_str(), verdict.level.number()),
        ("Review", 1)
    );
    let json = verdict.to_json("x");
    assert_eq!(
        json["checks"]["duplicates"]["metrics"]["duplicateOf"],
        duplicate.assessment_id
    );
    assert!(json["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .contains(&duplicate.assessment_id));

    let edited = s::exif(&[
        (exif::Tag::Make, "Canon"),
        (exif::Tag::Software, "GIMP 2.10"),
    ]);
    let edited = analysed(&s::jpeg(&s::card(5), 90, Some(edited)));
    let verdict = judge(&edited, Some(&duplicate));
    assert_eq!(
        (
            verdict.result.as_str(),
            verdict.level.number(),
            verdict.decision.as_str()
        ),
        ("Failed", 0, "decline")
    );
    assert!(verdict.score >= 90.0);
}

#[test]
fn the_hash_matches_the_same_picture_re_encoded_and_not_another_document() {
    let mut detector = FaceDetector::new();
    let mut hash = |bytes: Vec<u8>| analyse(&bytes, &mut detector).unwrap().phash;
    let originals: Vec<phash::Hash> = (1..13)
        .map(|seed| hash(camera_jpeg(&s::card(seed))))
        .collect();
    for seed in 1..5u64 {
        let card = s::card(seed);
        let original = originals[seed as usize - 1];
        for (what, bytes) in [
            ("same bytes", camera_jpeg(&card)),
            (
                "quality 60 at 1000 px",
                s::jpeg(&s::resized(&card, 1000), 60, None),
            ),
            ("PNG at 1200 px", s::png(&s::resized(&card, 1200))),
            ("cropped 3%", s::jpeg(&s::cropped(&card, 0.03), 85, None)),
        ] {
            let d = phash::distance(&original, &hash(bytes));
            assert!(
                d <= phash::DUPLICATE_DISTANCE,
                "seed {seed}, {what}: {d} bits"
            );
        }
    }
    for (i, a) in originals.iter().enumerate() {
        for b in &originals[i + 1..] {
            let d = phash::distance(a, b);
            assert!(
                d > phash::DUPLICATE_DISTANCE + 8,
                "two documents {d} bits apart"
            );
        }
    }
}

#[test]
fn exif_orientation_is_applied_before_the_checks() {
    // A landscape card stored rotated a quarter turn, with EXIF saying so (6: rotate 90 clockwise).
    let card = s::card(6);
    let stored = image::imageops::rotate270(&card);
    let a = analysed(&s::jpeg(&stored, 90, Some(s::oriented_exif(6))));
    assert_eq!((a.width, a.height), (card.width(), card.height()));
    assert_eq!(a.faces.as_ref().map(Vec::len), Some(1));
}

#[test]
fn refused_uploads_say_what_was_received() {
    let jpeg = camera_jpeg(&s::card(1));
    let refused = |bytes: &[u8]| analyse(bytes, &mut FaceDetector::new()).expect_err("refused");
    assert!(
        matches!(refused(b"%PDF-1.7\n%\xe2\xe3\n1 0 obj"), DecodeError::Unsupported { received } if received == "a PDF document")
    );
    let mut rng = SmallRng::seed_from_u64(1);
    let noise: Vec<u8> = (0..5000).map(|_| rng.random()).collect();
    assert!(matches!(refused(&noise), DecodeError::Unsupported { .. }));
    let card = s::card(1);
    for (format, bytes) in [
        ("JPEG", jpeg),
        ("PNG", s::png(&card)),
        ("WebP", s::webp(&card)),
    ] {
        let truncated = refused(&bytes[..bytes.len() / 3]);
        assert!(
            matches!(truncated, DecodeError::Corrupt { format: f, .. } if f == format),
            "{truncated:?}"
        );
        assert!(truncated.message().contains("truncated"));
    }
    let big = vec![0xFFu8; 12 * 1024 * 1024];
    assert!(matches!(refused(&big), DecodeError::TooManyBytes { .. }));
    assert!(matches!(refused(b""), DecodeError::Empty));
}

/// Thousands of damaged images through the whole path: errors, never a panic.
#[test]
fn mutated_images_never_panic() {
    let card = s::resized(&s::card(9), 240);
    let seeds = [
        s::jpeg(&card, 80, Some(s::camera_exif())),
        s::png(&card),
        s::webp(&card),
    ];
    let mut detector = FaceDetector::new();
    let mut rng = SmallRng::seed_from_u64(42);
    let (mut decoded, mut refused) = (0, 0);
    for i in 0..2000 {
        let mut bytes = seeds[i % seeds.len()].clone();
        match rng.random_range(0..4) {
            0 => {
                for _ in 0..rng.random_range(1..20) {
                    let at = rng.random_range(0..bytes.len());
                    bytes[at] = rng.random();
                }
            }
            1 => bytes.truncate(rng.random_range(1..bytes.len())),
            2 => {
                let at = rng.random_range(0..bytes.len());
                let junk: Vec<u8> = (0..rng.random_range(1..64)).map(|_| rng.random()).collect();
                bytes.splice(at..at, junk);
            }
            _ => {
                // Damage the header, where dimensions and lengths live.
                let end = bytes.len().min(64);
                let at = rng.random_range(0..end);
                bytes[at] = rng.random();
            }
        }
        match analyse(&bytes, &mut detector) {
            Ok(_) => decoded += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(
        decoded > 0 && refused > 0,
        "{decoded} decoded, {refused} refused"
    );
}

/// The reason codes that ask for a retake.
const RETAKES: [&str; 10] = [
    "LOW_RESOLUTION",
    "BLURRY",
    "GLARE",
    "TOO_DARK",
    "TOO_BRIGHT",
    "LOW_CONTRAST",
    "BLACK_AND_WHITE",
    "NO_DOCUMENT",
    "CUT_OFF",
    "DOCUMENT_TOO_SMALL",
];

/// `image` is found as a document of `format`, framed so, its portrait
/// found, and nothing asks for a retake.
fn assert_document(what: &str, image: &RgbImage, format: &str, framing: document::Framing) {
    let a = analysed(&camera_jpeg(image));
    let document::Found::Document(quad) = &a.document else {
        panic!("{what}: {:?}", a.document)
    };
    assert_eq!(
        (quad.format().0, quad.framing),
        (format, framing),
        "{what}: aspect {}",
        quad.aspect
    );
    assert!(quad.format().1 < 0.05, "{what}: aspect {}", quad.aspect);
    assert_eq!(a.faces.as_ref().map(Vec::len), Some(1), "{what}");
    let verdict = judge(&a, None);
    let retakes: Vec<&str> = verdict
        .codes()
        .into_iter()
        .filter(|c| RETAKES.contains(c))
        .collect();
    assert!(retakes.is_empty(), "{what}: {:?}", verdict.codes());
    assert_ne!(verdict.decision.as_str(), "resubmit", "{what}");
}

#[test]
fn a_crop_to_the_document_is_the_document_with_its_format() {
    use document::Framing::Filling;
    let td3 = Scene {
        aspect: s::TD3_ASPECT,
        ..Scene::default()
    };
    for seed in 21..24 {
        let tilted = |tilt: f64| Scene {
            tilt,
            ..Scene::default()
        };
        for (what, image, format) in [
            (
                "edge to edge",
                s::card_crop(seed, Scene::default(), 0),
                "ID-1",
            ),
            ("passport page", s::card_crop(seed, td3, 0), "TD3"),
            (
                "6 px of desk",
                s::card_crop(seed, Scene::default(), 6),
                "ID-1",
            ),
            (
                "6 px inside",
                s::card_crop(seed, Scene::default(), -6),
                "ID-1",
            ),
            (
                "tilted 2 degrees",
                s::card_crop(seed, tilted(2.0), 0),
                "ID-1",
            ),
            (
                "tilted -3, 4 px",
                s::card_crop(seed, tilted(-3.0), 4),
                "ID-1",
            ),
        ] {
            assert_document(&format!("seed {seed}, {what}"), &image, format, Filling);
        }
    }
}

#[test]
fn a_scan_on_white_paper_is_the_document_and_its_whitespace_is_no_glare() {
    use document::Framing::Page;
    // An A4 page at 200 dpi, the card near its top.
    let page = Scene {
        width: 1654,
        height: 2339,
        card_share: 0.41,
        centre: (0.3, 0.15),
        backdrop: Backdrop::Paper,
        ..Scene::default()
    };
    for seed in 31..34 {
        assert_document(
            &format!("seed {seed}"),
            &s::card_in(seed, page),
            "ID-1",
            Page,
        );
        let tilted = Scene { tilt: 3.0, ..page };
        assert_document(
            &format!("seed {seed}, tilted"),
            &s::card_in(seed, tilted),
            "ID-1",
            Page,
        );
        let passport = Scene {
            aspect: s::TD3_ASPECT,
            card_share: 0.6,
            centre: (0.45, 0.2),
            ..page
        };
        assert_document(
            &format!("seed {seed}, passport"),
            &s::card_in(seed, passport),
            "TD3",
            Page,
        );
    }
}

#[test]
fn a_card_with_a_corner_out_of_the_frame_is_cut_off_and_its_face_still_searched() {
    for seed in 41..45 {
        for centre in [(0.75, 0.72), (0.8, 0.5), (0.25, 0.3)] {
            let scene = Scene {
                centre,
                ..Scene::default()
            };
            let a = analysed(&camera_jpeg(&s::card_in(seed, scene)));
            assert!(
                matches!(a.document, document::Found::CutOff(_)),
                "seed {seed}, {centre:?}: {:?}",
                a.document
            );
            assert!(judge(&a, None).codes().contains(&"CUT_OFF"));
            assert!(a.faces.is_some(), "seed {seed}, {centre:?}");
        }
    }
    // Running off a scanned page.
    let page = Scene {
        width: 1654,
        height: 2339,
        card_share: 0.41,
        centre: (0.95, 0.15),
        backdrop: Backdrop::Paper,
        ..Scene::default()
    };
    let a = analysed(&camera_jpeg(&s::card_in(41, page)));
    assert!(
        matches!(a.document, document::Found::CutOff(_)),
        "{:?}",
        a.document
    );
}

#[test]
fn the_portrait_is_searched_in_its_zone_and_over_the_frame_without_an_outline() {
    use vigil_identity::face::Searched;
    let a = analysed(&camera_jpeg(&s::card(51)));
    assert_eq!(a.face_search, Searched::PortraitZone);
    assert_eq!(a.faces.as_ref().map(Vec::len), Some(1));
    // A blurred card is found by nothing but its face is still looked for,
    // on the whole frame.
    let desk = analysed(&camera_jpeg(&s::scenery(51)));
    assert_eq!(
        (&desk.document, desk.face_search),
        (&document::Found::Nothing, Searched::Frame)
    );
    assert_eq!(desk.faces.as_ref().map(Vec::len), Some(0));
    let json = judge(&desk, None).to_json("x");
    assert_eq!(json["checks"]["face"]["outcome"], "passed");
    assert_eq!(json["checks"]["face"]["metrics"]["searched"], "frame");
}
