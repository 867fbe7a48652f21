//! The portrait check: is there a frontal face on the document?
//!
//! SeetaFace's funnel-structured cascade, through the `rustface` crate, with
//! the model that crate ships (in `model/`, compiled into the binary so no
//! file has to be found at run time). It runs on a fixed-width copy of the
//! document's region, so its cost does not grow with the upload: first on
//! the zone where the format puts the portrait, then, if none is there, on
//! the rest; on the whole frame when no outline was found, as a document
//! whose edges were missed still shows its holder's face.

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

/// Where the portrait was looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Searched {
    /// The format's portrait zone of the document (see [`portrait_zone`]).
    PortraitZone,
    /// The whole document: nothing in the zone, or a document standing on its side.
    Document,
    /// The whole frame: no document outline was found.
    Frame,
}

impl Searched {
    pub fn as_str(self) -> &'static str {
        match self {
            Searched::PortraitZone => "portraitZone",
            Searched::Document => "document",
            Searched::Frame => "frame",
        }
    }
}

/// Where the portrait is on an upright document of `format`, as shares of
/// its width and height (x, y, width, height): the left part, the whole
/// height (ICAO 9303 parts 4 and 5 put zone V, the portrait, on the left of
/// a TD3 data page and of a TD1 card's front; about a third of the page and
/// two fifths of the card, with room for a tilt and a loose outline).
pub fn portrait_zone(format: &str) -> (f64, f64, f64, f64) {
    match format {
        "ID-1" => (0.0, 0.0, 0.48, 1.0),
        _ => (0.0, 0.0, 0.42, 1.0),
    }
}

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
        self.detect_in(region, (0.0, 0.0, 1.0, 1.0))
    }

    /// Faces in the `zone` of `region` (shares of its width and height: x,
    /// y, width, height), best first, in the coordinates of the whole region.
    /// The region is scaled as for [`detect`](Self::detect) and then cropped,
    /// so faces are looked for at the same sizes, in fewer pixels.
    pub fn detect_in(&mut self, region: &GrayImage, zone: (f64, f64, f64, f64)) -> Vec<Face> {
        let (w, h) = region.dimensions();
        if w == 0 || h == 0 {
            return Vec::new();
        }
        let scaled = crate::to_width(region, SEARCH_WIDTH);
        let (sw, sh) = (f64::from(scaled.width()), f64::from(scaled.height()));
        let clip = |v: f64, max: f64| v.clamp(0.0, max) as u32;
        let (x0, y0) = (clip(zone.0 * sw, sw), clip(zone.1 * sh, sh));
        let x1 = clip((zone.0 + zone.2) * sw, sw).max(x0);
        let y1 = clip((zone.1 + zone.3) * sh, sh).max(y0);
        // The detector panics on images smaller than its window.
        if x1 - x0 < WINDOW || y1 - y0 < WINDOW {
            return Vec::new();
        }
        let view = image::imageops::crop_imm(&scaled, x0, y0, x1 - x0, y1 - y0).to_image();
        let to_work = f64::from(WORK_WIDTH) / f64::from(SEARCH_WIDTH);
        let at_work = |v: i64| (v as f64 * to_work).round();
        let data = ImageData::new(view.as_raw(), view.width(), view.height());
        let mut faces: Vec<Face> = self
            .0
            .detect(&data)
            .into_iter()
            .map(|f| {
                let b = f.bbox();
                Face {
                    x: at_work(i64::from(b.x()) + i64::from(x0)) as i32,
                    y: at_work(i64::from(b.y()) + i64::from(y0)) as i32,
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
