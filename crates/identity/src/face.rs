//! The portrait check: is there a frontal face on the document?
//!
//! SeetaFace's funnel-structured cascade, through the `rustface` crate, with
//! the model that crate ships (in `model/`, compiled into the binary so no
//! file has to be found at run time). It runs on the document's region only,
//! scaled to a fixed width, so its cost does not grow with the upload.

use image::GrayImage;
use rustface::{Detector, ImageData};

static MODEL: &[u8] = include_bytes!("../model/seeta_fd_frontal_v1.0.bin");

/// Width whose coordinates faces are given in.
pub const WORK_WIDTH: u32 = 512;
/// Smallest face looked for, in pixels at [`WORK_WIDTH`]. A portrait's face
/// is about a fifth of an ID-1 card's width (about 100 pixels) and a sixth
/// of a passport page's (about 80); the synthetic cards' is about 70.
const MIN_FACE: u32 = 48;
/// The cascade's window: the smallest face it finds in the image it is given.
const WINDOW: u32 = 40;
/// Width the region is searched at: the window is then [`MIN_FACE`] at
/// [`WORK_WIDTH`]. rustface 0.1.7 takes a minimum face size but ignores it
/// (its pyramid always starts at the image's own scale), so the minimum is
/// applied by scaling the image: 0.69x the pixels of searching at
/// `WORK_WIDTH`, and the cascade's time goes with the pixels.
const SEARCH_WIDTH: u32 = WORK_WIDTH * WINDOW / MIN_FACE;

/// A detector, loaded once and reused (loading parses 1.2 MB of weights).
pub struct FaceDetector(Box<dyn Detector>);

/// A face found, in the coordinates of the region searched, scaled to [`WORK_WIDTH`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Face {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    /// The cascade's confidence (2 is its usual cut-off).
    pub score: f64,
}

impl FaceDetector {
    pub fn new() -> Self {
        let model = rustface::read_model(MODEL).expect("the bundled face model parses");
        let mut detector = rustface::create_detector_with_model(model);
        detector.set_min_face_size(WINDOW);
        detector.set_score_thresh(2.0);
        detector.set_pyramid_scale_factor(0.8);
        // A step of 4 (the crate's example) missed one drawn face in six; 2 misses none.
        detector.set_slide_window_step(2, 2);
        FaceDetector(detector)
    }

    /// Faces in `region`, best first.
    pub fn detect(&mut self, region: &GrayImage) -> Vec<Face> {
        let (w, h) = region.dimensions();
        if w == 0 || h == 0 {
            return Vec::new();
        }
        let scaled = crate::to_width(region, SEARCH_WIDTH);
        // The detector panics on images smaller than its window.
        if scaled.height() < WINDOW {
            return Vec::new();
        }
        let to_work = f64::from(WORK_WIDTH) / f64::from(SEARCH_WIDTH);
        let at_work = |v: i64| (v as f64 * to_work).round();
        let data = ImageData::new(scaled.as_raw(), scaled.width(), scaled.height());
        let mut faces: Vec<Face> = self
            .0
            .detect(&data)
            .into_iter()
            .map(|f| {
                let b = f.bbox();
                Face {
                    x: at_work(b.x().into()) as i32,
                    y: at_work(b.y().into()) as i32,
                    width: at_work(b.width().into()) as u32,
                    height: at_work(b.height().into()) as u32,
                    score: f.score(),
                }
            })
            .collect();
        faces.sort_by(|a, b| b.score.total_cmp(&a.score));
        faces
    }
}

impl Default for FaceDetector {
    fn default() -> Self {
        Self::new()
    }
}
