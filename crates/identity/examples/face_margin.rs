//! How surely the face search finds the synthetic cards' portraits: 40 seeds,
//! the card 45%, 60%, 72% and 90% of a 1600 x 1200 frame's width; prints how
//! many cards had exactly one face and the cascade's scores (its cut-off is 2).
//! Run it before and after a change to the face search to see its margin.
//!
//! cargo run --release -p vigil-identity --features synthetic --example face_margin

use vigil_identity::synthetic::{self as s, Scene};
use vigil_identity::{analyse, FaceDetector};

fn main() {
    let mut detector = FaceDetector::new();
    let (mut cards, mut scores) = (0, Vec::new());
    for seed in 0..40u64 {
        for card_share in [0.45, 0.6, 0.72, 0.9] {
            let scene = Scene {
                card_share,
                ..Scene::default()
            };
            let bytes = s::jpeg(&s::card_in(seed, scene), 90, Some(s::camera_exif()));
            let analysis = analyse(&bytes, &mut detector).expect("a synthetic card decodes");
            cards += 1;
            match analysis.faces.as_deref() {
                Some([face]) => scores.push(face.score),
                Some(faces) => println!("seed {seed}, card {card_share}: {} faces", faces.len()),
                None => println!("seed {seed}, card {card_share}: no document found"),
            }
        }
    }
    scores.sort_by(f64::total_cmp);
    let at = |share: f64| scores[((scores.len() - 1) as f64 * share) as usize];
    println!(
        "{} of {cards} cards with one face; scores: least {:.2}, tenth {:.2}, median {:.2}",
        scores.len(),
        at(0.0),
        at(0.1),
        at(0.5)
    );
}
