//! Finding the document in the photo: a card- or passport-shaped quadrilateral.
//!
//! Canny edges on a fixed-size grey copy, closed by one dilation, give
//! contours; each contour's minimum-area rectangle is a candidate when the
//! contour fills most of it (a card is convex and straight-edged) and it is
//! big enough to matter. The biggest candidate clear of the frame's edges with
//! the proportions of an ID card or passport page is the document. When there
//! is none, a big straight-edged region running into the frame's edge means the
//! document is cut off; otherwise no document was found.

use image::{GrayImage, RgbImage};
use imageproc::contours::find_contours;
use imageproc::distance_transform::Norm;
use imageproc::geometry::{convex_hull, min_area_rect};
use imageproc::point::Point;

/// Width the photo is scaled to for the search.
pub const WORK_WIDTH: u32 = 320;
/// ID-1 (credit-card size) width over height: 85.60 x 53.98 mm.
pub const ID1_ASPECT: f64 = 85.60 / 53.98;
/// ID-3 / TD3 (passport data page): 125 x 88 mm.
pub const TD3_ASPECT: f64 = 125.0 / 88.0;
/// Long side over short side that a document may show, tilt included.
const ASPECT_RANGE: (f64, f64) = (1.33, 1.85);
/// Share of the frame under which a region is not considered at all.
const MIN_CANDIDATE_SHARE: f64 = 0.03;
/// Share of the frame under which the document is too small to read.
pub const MIN_DOCUMENT_SHARE: f64 = 0.15;
/// Contour area over rectangle area for a straight-edged, convex outline.
const MIN_RECTANGULARITY: f64 = 0.85;
/// A rectangle corner within this share of the frame's edge touches it.
const EDGE_MARGIN: f64 = 0.01;

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// A document clear of the frame's edges.
    Document(Quad),
    /// A large straight-edged region running out of the frame.
    CutOff(Quad),
    Nothing,
}

impl Found {
    /// The same, with coordinates multiplied by `factor`.
    pub fn scaled(self, factor: f64) -> Found {
        let scale = |q: Quad| Quad {
            corners: q.corners.map(|(x, y)| (x * factor, y * factor)),
            ..q
        };
        match self {
            Found::Document(q) => Found::Document(scale(q)),
            Found::CutOff(q) => Found::CutOff(scale(q)),
            Found::Nothing => Found::Nothing,
        }
    }
}

/// A rectangle in coordinates of the photo as decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Quad {
    /// Corners, clockwise from top left.
    pub corners: [(f64, f64); 4],
    /// Share of the frame it covers.
    pub frame_share: f64,
    /// Long side over short side.
    pub aspect: f64,
    /// Contour area over rectangle area.
    pub rectangularity: f64,
}

impl Quad {
    /// The nearest standard format and the relative deviation from its aspect.
    pub fn format(&self) -> (&'static str, f64) {
        let id1 = (self.aspect - ID1_ASPECT).abs() / ID1_ASPECT;
        let td3 = (self.aspect - TD3_ASPECT).abs() / TD3_ASPECT;
        if id1 <= td3 {
            ("ID-1", id1)
        } else {
            ("TD3", td3)
        }
    }

    pub fn centre(&self) -> (f64, f64) {
        let (sx, sy) = self
            .corners
            .iter()
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        (sx / 4.0, sy / 4.0)
    }

    /// Whether `point` lies inside the rectangle (corners in order, convex).
    pub fn contains(&self, point: (f64, f64)) -> bool {
        let c = self.corners;
        let side = |i: usize| {
            let (a, b) = (c[i], c[(i + 1) % 4]);
            (b.0 - a.0) * (point.1 - a.1) - (b.1 - a.1) * (point.0 - a.0)
        };
        let signs: Vec<f64> = (0..4).map(side).collect();
        signs.iter().all(|s| *s >= 0.0) || signs.iter().all(|s| *s <= 0.0)
    }

    /// Axis-aligned bounds (x, y, width, height), clipped to `width` x `height`.
    pub fn bounds(&self, width: u32, height: u32) -> (u32, u32, u32, u32) {
        let xs = self.corners.map(|c| c.0);
        let ys = self.corners.map(|c| c.1);
        let clip = |v: f64, max: u32| v.clamp(0.0, f64::from(max)) as u32;
        let x0 = clip(xs.iter().copied().fold(f64::INFINITY, f64::min), width);
        let x1 = clip(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max), width);
        let y0 = clip(ys.iter().copied().fold(f64::INFINITY, f64::min), height);
        let y1 = clip(ys.iter().copied().fold(f64::NEG_INFINITY, f64::max), height);
        (x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0))
    }
}

/// Looks for the document in `rgb` (the whole photo, any size).
pub fn find(rgb: &RgbImage) -> Found {
    let (w, h) = rgb.dimensions();
    if w < 8 || h < 8 {
        return Found::Nothing;
    }
    let small = crate::to_width(rgb, WORK_WIDTH);
    let scale = f64::from(w) / f64::from(WORK_WIDTH);
    let edges = imageproc::morphology::dilate(&colour_edges(&small), Norm::LInf, 1);
    // Documents clear of the frame: regions closed off from the frame's edge,
    // opened so that a stray line of the background touching the outline
    // does not become part of it.
    let enclosed = imageproc::morphology::open(&enclosed_regions(&edges), Norm::LInf, 3);
    let document = candidates(&enclosed, scale)
        .filter(|(quad, touches)| {
            !touches && (ASPECT_RANGE.0..=ASPECT_RANGE.1).contains(&quad.aspect)
        })
        .map(|(quad, _)| quad)
        .max_by(|a, b| a.frame_share.total_cmp(&b.frame_share));
    // A document running out of the frame: straight-edged outlines touching it.
    let cut = candidates(&edges, scale)
        .filter(|(quad, touches)| *touches && quad.frame_share <= 0.97)
        .map(|(quad, _)| quad)
        .max_by(|a, b| a.frame_share.total_cmp(&b.frame_share));
    match (document, cut) {
        // Part of a card (its photo, a text block) inside the cut-off card.
        (Some(d), Some(c)) if c.frame_share >= 2.0 * d.frame_share && c.contains(d.centre()) => {
            Found::CutOff(c)
        }
        (Some(d), _) => Found::Document(d),
        (None, Some(c)) if c.frame_share >= MIN_DOCUMENT_SHARE => Found::CutOff(c),
        _ => Found::Nothing,
    }
}

/// Straight-edged convex outlines in `mask` big enough to matter, each with
/// whether it touches the frame's edge, in the upload's coordinates.
fn candidates(mask: &GrayImage, scale: f64) -> impl Iterator<Item = (Quad, bool)> {
    let (w, h) = (f64::from(mask.width()), f64::from(mask.height()));
    let frame = w * h;
    find_contours::<i32>(mask)
        .into_iter()
        .filter_map(move |contour| {
            if contour.points.len() < 8 {
                return None;
            }
            let hull = convex_hull(contour.points);
            let hull_area = polygon_area(&hull);
            if hull_area < frame * MIN_CANDIDATE_SHARE {
                return None;
            }
            let rect = min_area_rect(&hull);
            let rect_area = polygon_area(&rect);
            let rectangularity = hull_area / rect_area.max(1.0);
            if rectangularity < MIN_RECTANGULARITY {
                return None;
            }
            let (side_a, side_b) = (distance(rect[0], rect[1]), distance(rect[1], rect[2]));
            let (mx, my) = (w * EDGE_MARGIN, h * EDGE_MARGIN);
            let touches = rect.iter().any(|p| {
                let (x, y) = (f64::from(p.x), f64::from(p.y));
                x <= mx || y <= my || x >= w - 1.0 - mx || y >= h - 1.0 - my
            });
            let quad = Quad {
                corners: rect.map(|p| (f64::from(p.x) * scale, f64::from(p.y) * scale)),
                frame_share: (rect_area / frame).min(1.0),
                aspect: side_a.max(side_b) / side_a.min(side_b).max(1.0),
                rectangularity,
            };
            Some((quad, touches))
        })
}

/// White where a pixel cannot be reached from the frame's edge without
/// crossing an edge pixel (the edges included): filled closed outlines.
fn enclosed_regions(edges: &GrayImage) -> GrayImage {
    let (w, h) = edges.dimensions();
    let mut outside = vec![false; (w * h) as usize];
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for x in 0..w {
        stack.push((x, 0));
        stack.push((x, h - 1));
    }
    for y in 0..h {
        stack.push((0, y));
        stack.push((w - 1, y));
    }
    while let Some((x, y)) = stack.pop() {
        let i = (y * w + x) as usize;
        if outside[i] || edges.get_pixel(x, y).0[0] != 0 {
            continue;
        }
        outside[i] = true;
        if x > 0 {
            stack.push((x - 1, y));
        }
        if x + 1 < w {
            stack.push((x + 1, y));
        }
        if y > 0 {
            stack.push((x, y - 1));
        }
        if y + 1 < h {
            stack.push((x, y + 1));
        }
    }
    GrayImage::from_fn(w, h, |x, y| {
        image::Luma([if outside[(y * w + x) as usize] {
            0
        } else {
            255
        }])
    })
}

/// Canny edges of each colour channel, joined: a blue card on a brown desk
/// can have the desk's luminance, never its colour.
pub fn colour_edges(rgb: &RgbImage) -> GrayImage {
    let mut joined = GrayImage::new(rgb.width(), rgb.height());
    for channel in 0..3 {
        let plane = GrayImage::from_fn(rgb.width(), rgb.height(), |x, y| {
            image::Luma([rgb.get_pixel(x, y).0[channel]])
        });
        // Shrinking to WORK_WIDTH by averaging has smoothed away most of the
        // texture of a desk or a carpet; Canny smooths a little more.
        let edges = imageproc::edges::canny(&plane, 15.0, 45.0);
        for (j, e) in joined.pixels_mut().zip(edges.pixels()) {
            j.0[0] |= e.0[0];
        }
    }
    joined
}

fn polygon_area(points: &[Point<i32>]) -> f64 {
    let n = points.len();
    if n < 3 {
        return 0.0;
    }
    let twice: i64 = (0..n)
        .map(|i| {
            let (a, b) = (points[i], points[(i + 1) % n]);
            i64::from(a.x) * i64::from(b.y) - i64::from(b.x) * i64::from(a.y)
        })
        .sum();
    twice.unsigned_abs() as f64 / 2.0
}

fn distance(a: Point<i32>, b: Point<i32>) -> f64 {
    (f64::from(a.x - b.x)).hypot(f64::from(a.y - b.y))
}
