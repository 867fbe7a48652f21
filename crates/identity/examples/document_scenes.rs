//! What the document search and the checks make of each way a document
//! arrives: photos on a desk, crops to the card (edge to edge, with a
//! margin, tilted), scans on white paper, passport pages, cut-off cards.
//! Prints, per scene and seed, what was found and the reason codes.
//!
//! cargo run --release -p vigil-identity --features synthetic --example document_scenes [SEEDS]

use vigil_identity::synthetic::{self as s, Backdrop, Scene};
use vigil_identity::{analyse, document::Found, judge, FaceDetector};

/// Draws a scene for a seed.
type Draw = Box<dyn Fn(u64) -> image::RgbImage>;

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .map_or(4, |n| n.parse().expect("SEEDS is a number"));
    let mut detector = FaceDetector::new();
    let td3 = Scene {
        aspect: s::TD3_ASPECT,
        ..Scene::default()
    };
    let scan = Scene {
        width: 1654,
        height: 2339,
        card_share: 0.41,
        centre: (0.3, 0.15),
        backdrop: Backdrop::Paper,
        ..Scene::default()
    };
    let scenes: Vec<(&str, Draw)> = vec![
        ("photo", Box::new(s::card)),
        ("photo TD3", Box::new(move |seed| s::card_in(seed, td3))),
        (
            "photo tilt 8",
            Box::new(|seed| {
                s::card_in(
                    seed,
                    Scene {
                        tilt: 8.0,
                        ..Scene::default()
                    },
                )
            }),
        ),
        (
            "crop",
            Box::new(|seed| s::card_crop(seed, Scene::default(), 0)),
        ),
        ("crop TD3", Box::new(move |seed| s::card_crop(seed, td3, 0))),
        (
            "crop margin 6",
            Box::new(|seed| s::card_crop(seed, Scene::default(), 6)),
        ),
        (
            "crop margin 20",
            Box::new(|seed| s::card_crop(seed, Scene::default(), 20)),
        ),
        (
            "crop inset 6",
            Box::new(|seed| s::card_crop(seed, Scene::default(), -6)),
        ),
        (
            "crop tilt 2",
            Box::new(|seed| {
                s::card_crop(
                    seed,
                    Scene {
                        tilt: 2.0,
                        ..Scene::default()
                    },
                    0,
                )
            }),
        ),
        (
            "crop tilt -3 m4",
            Box::new(|seed| {
                s::card_crop(
                    seed,
                    Scene {
                        tilt: -3.0,
                        ..Scene::default()
                    },
                    4,
                )
            }),
        ),
        ("scan", Box::new(move |seed| s::card_in(seed, scan))),
        (
            "scan tilt 3",
            Box::new(move |seed| s::card_in(seed, Scene { tilt: 3.0, ..scan })),
        ),
        (
            "scan TD3",
            Box::new(move |seed| {
                s::card_in(
                    seed,
                    Scene {
                        aspect: s::TD3_ASPECT,
                        card_share: 0.6,
                        centre: (0.45, 0.2),
                        ..scan
                    },
                )
            }),
        ),
        (
            "page crop",
            Box::new(move |seed| {
                s::card_crop(
                    seed,
                    Scene {
                        backdrop: Backdrop::Paper,
                        ..Scene::default()
                    },
                    40,
                )
            }),
        ),
        (
            "cut right",
            Box::new(|seed| {
                s::card_in(
                    seed,
                    Scene {
                        centre: (0.8, 0.5),
                        ..Scene::default()
                    },
                )
            }),
        ),
        (
            "cut corner",
            Box::new(|seed| {
                s::card_in(
                    seed,
                    Scene {
                        centre: (0.75, 0.72),
                        ..Scene::default()
                    },
                )
            }),
        ),
        (
            "cut big",
            Box::new(|seed| {
                s::card_in(
                    seed,
                    Scene {
                        card_share: 0.95,
                        centre: (0.45, 0.5),
                        ..Scene::default()
                    },
                )
            }),
        ),
        (
            "cut scan",
            Box::new(move |seed| {
                s::card_in(
                    seed,
                    Scene {
                        centre: (0.9, 0.15),
                        ..scan
                    },
                )
            }),
        ),
        ("desk", Box::new(s::scenery)),
        ("glare", Box::new(|seed| s::glared(&s::card(seed)))),
    ];
    for (name, make) in &scenes {
        for seed in 1..=seeds {
            let image = make(seed);
            let bytes = s::jpeg(&image, 90, Some(s::camera_exif()));
            let a = analyse(&bytes, &mut detector).expect("a synthetic image decodes");
            let found = match &a.document {
                Found::Document(q) => format!(
                    "Document {} share {:.2} aspect {:.3}",
                    q.format().0,
                    q.frame_share,
                    q.aspect
                ),
                Found::CutOff(q) => format!("CutOff share {:.2}", q.frame_share),
                Found::Nothing => "Nothing".into(),
            };
            println!(
                "{name:16} {seed} {}x{} {found:44} faces {:?} glare {:.3} {:?}",
                image.width(),
                image.height(),
                a.faces.as_ref().map(Vec::len),
                a.quality.glare_share,
                judge(&a, None).codes()
            );
        }
    }
}
