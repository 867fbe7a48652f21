//! Finding the document around its portrait, when the outline search of
//! [`crate::document`] found none or only something cut off.
//!
//! That search wants a document whose outline closes a region of its own.
//! In a cluttered photo (a card on a keyboard beside a box, leaning on the
//! box, held in a hand) the card's edges run into the box's and the keys',
//! or the fingers break them, and the biggest straight-edged region is the
//! box, cut off by the frame. Every identity document's front shows its
//! holder's face, and the face gives the document's scale: the portrait's
//! face is a quarter to a half of an ID-1 card's or a passport page's
//! height (0.32 to 0.40 on the real cards of tests/tests/e2e/identity_real.rs).
//!
//! So: straight lines in a window around the face (a Hough transform in
//! which each edge pixel votes along its own edge only, [`lines`]); every
//! two pairs of them, one pair across the other, that enclose the face at
//! a size the face allows and lie wider than high (the face is upright)
//! are a candidate outline; it is kept when its proportions, measured in
//! its own plane ([`true_aspect`]: a card leaning back shows 2.2), are a
//! document's, edges run along each of its four sides (a finger may cover
//! part of one), and the colour steps across each side (a card against
//! what it lies on, where the gap between two keys has one colour on both
//! sides). The best supported is the document. An outline the frame cuts
//! has no fourth line of its own: none is made up (the caller also keeps
//! `CutOff` when the outline is most of a region the frame cuts).
//!
//! On the real pictures (tests/tests/e2e/identity_real.rs) it finds the cards
//! on a keyboard, leaning on a box and in a hand (in the light and in the
//! dark) that the outline search missed. A single view's rectification is
//! only as good as the corners: the card leaning on the box, whose short
//! sides converge by 22 degrees, measures 1.55 to 1.85 in its own plane
//! as its outline moves by a few pixels (its picture shows 2.2).

use image::{GrayImage, RgbImage};
use imageproc::distance_transform::Norm;

use crate::document::{
    colour_edges, convex_contains, Framing, Quad, ASPECT_RANGE, EDGE_MARGIN, ID1_ASPECT,
};
use crate::face::Face;

/// Longest side of the window's working copy.
const WORK_SIDE: u32 = 400;
/// The face's height over the document's height, least and most.
const FACE_SHARE: (f64, f64) = (0.22, 0.5);
/// Degrees two opposite sides may differ by under perspective (a card
/// leaning back, photographed from above: 22).
const MAX_SIDE_SKEW: f64 = 25.0;
/// Degrees from square the angle between adjacent sides may be.
const MAX_CORNER_SKEW: f64 = 15.0;
/// Share of each side along which edges run, at least, and on average.
const MIN_SIDE_SUPPORT: f64 = 0.4;
const MIN_SUPPORT: f64 = 0.7;
/// Share of each side, at least, across which the colour steps.
const MIN_STEP: f64 = 0.5;
/// Lines considered at most: the rest are weaker.
const MAX_LINES: usize = 60;
/// Long side over short side a document's outline may show in a photo,
/// before it is rectified: a card leaning back shows 2.2.
const PHOTO_ASPECT: (f64, f64) = (1.2, 2.6);
/// Degrees either side of its gradient's direction an edge pixel votes for.
const ANGLE_SPREAD: i64 = 5;

/// A face found, in the coordinates of the image searched.
#[derive(Clone, Copy, Debug)]
pub struct FaceBox {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl FaceBox {
    /// `face` from the detector, found in a region of `region_width`
    /// pixels whose top left is at `origin` in the image searched.
    pub fn from_detected(face: &Face, region_width: f64, origin: (f64, f64)) -> FaceBox {
        let to = region_width / f64::from(crate::face::WORK_WIDTH);
        FaceBox {
            x: origin.0 + f64::from(face.x) * to,
            y: origin.1 + f64::from(face.y) * to,
            width: f64::from(face.width) * to,
            height: f64::from(face.height) * to,
        }
    }

    fn centre(&self) -> (f64, f64) {
        (self.x + self.width / 2.0, self.y + self.height / 2.0)
    }
}

/// The document around `face` in `rgb`, as a quad in `rgb`'s coordinates.
pub fn around(rgb: &RgbImage, face: FaceBox) -> Option<Quad> {
    let (w, h) = (f64::from(rgb.width()), f64::from(rgb.height()));
    if face.height < 4.0 || w < 16.0 || h < 16.0 {
        return None;
    }
    // The window holds every document the face allows, the face anywhere on it.
    let (cx, cy) = face.centre();
    let tallest = face.height / FACE_SHARE.0;
    let widest = tallest * ID1_ASPECT;
    let x0 = (cx - widest).max(0.0).floor();
    let y0 = (cy - tallest).max(0.0).floor();
    let x1 = (cx + widest).min(w).ceil();
    let y1 = (cy + tallest).min(h).ceil();
    let (ww, wh) = (x1 - x0, y1 - y0);
    if ww < 16.0 || wh < 16.0 {
        return None;
    }
    let to_work = f64::from(WORK_SIDE) / ww.max(wh);
    let window = image::imageops::crop_imm(rgb, x0 as u32, y0 as u32, ww as u32, wh as u32);
    let (kw, kh) = (
        ((ww * to_work).round() as u32).max(16),
        ((wh * to_work).round() as u32).max(16),
    );
    let small = image::imageops::resize(&*window, kw, kh, image::imageops::FilterType::Triangle);
    let edges = colour_edges(&small);
    let near = imageproc::morphology::dilate(&edges, Norm::LInf, 1);
    // Where the face is, in the working copy.
    let face_at = ((cx - x0) * to_work, (cy - y0) * to_work);
    let face_height = face.height * to_work;
    let face_box = {
        let (fx, fy) = ((face.x - x0) * to_work, (face.y - y0) * to_work);
        let (fw, fh) = (face.width * to_work, face_height);
        [(fx, fy), (fx + fw, fy), (fx + fw, fy + fh), (fx, fy + fh)]
    };
    let lines = lines(&small, &edges, face_height);
    // An outline stays inside the window (which holds any document the face
    // allows), clear of its edges: some are the frame's.
    let (mx, my) = (f64::from(kw) * EDGE_MARGIN, f64::from(kh) * EDGE_MARGIN);
    let inside = |(x, y): (f64, f64)| {
        x > mx && y > my && x < f64::from(kw) - 1.0 - mx && y < f64::from(kh) - 1.0 - my
    };
    let mut bands = bands(&lines, face_at, face_height);
    bands.sort_by(|a, b| a.width.total_cmp(&b.width));
    // (score, edge support, corners) of the best outline so far.
    let mut best: Option<(f64, f64, Corners)> = None;
    for a in &bands {
        // The other band is the long side's when `a` is the short side's:
        // as much wider as a document's proportions in a photo allow.
        {
            let (low, high) = (a.width * PHOTO_ASPECT.0, a.width * PHOTO_ASPECT.1);
            let from = bands.partition_point(|b| b.width < low);
            for b in bands[from..].iter().take_while(|b| b.width <= high) {
                let across = angle_between(a.angle, b.angle);
                if (across - 90.0).abs() > MAX_CORNER_SKEW {
                    continue;
                }
                let share = face_height / a.width;
                if !(FACE_SHARE.0..=FACE_SHARE.1).contains(&share) {
                    continue;
                }
                let Some(corners) = corners(a, b) else {
                    continue;
                };
                if !corners.iter().all(|&c| inside(c))
                    || !face_box.iter().all(|&p| convex_contains(&corners, p))
                    || !lies_flat(&corners)
                {
                    continue;
                }
                let in_frame =
                    corners.map(|(x, y)| (x0 + x / to_work - w / 2.0, y0 + y / to_work - h / 2.0));
                let Some(aspect) = true_aspect(&in_frame, w.hypot(h)) else {
                    continue;
                };
                if !(ASPECT_RANGE.0..=ASPECT_RANGE.1).contains(&aspect) {
                    continue;
                }
                let Some(support) = support(&near, &corners) else {
                    continue;
                };
                let step = steps(&small, &corners);
                // Best where edges run along the sides and the colour steps
                // across them all: a document's outline against what it lies
                // on, where lines of keys or of print have one colour each side.
                if step.0 < MIN_STEP {
                    continue;
                }
                let score = support * step.1;
                if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                    best = Some((score, support, corners));
                }
            }
        }
    }
    let (_, support, corners) = best?;
    let corners = corners.map(|(x, y)| (x0 + x / to_work, y0 + y / to_work));
    let area = polygon_area(&corners);
    Some(Quad {
        corners: clockwise(corners),
        frame_share: (area / (w * h)).min(1.0),
        aspect: true_aspect(
            &corners.map(|(x, y)| (x - w / 2.0, y - h / 2.0)),
            w.hypot(h),
        )?,
        rectangularity: support,
        framing: Framing::Background,
    })
}

/// A quad's corners, in order round it.
type Corners = [(f64, f64); 4];

/// A straight line: the points `(x, y)` with `x cos(angle) + y sin(angle) = r`.
#[derive(Clone, Copy, Debug)]
struct Line {
    r: f64,
    /// The normal's direction, degrees in [0, 180).
    angle: f64,
    votes: u32,
}

/// Lines of the edges long enough to be a side of a document the face
/// allows (less what a hand may cover), the strongest [`MAX_LINES`].
///
/// A Hough transform in which each edge pixel votes only for lines along
/// its own edge: its gradient's direction, within [`ANGLE_SPREAD`]
/// degrees (O'Gorman and Clowes, 1976). Over a keyboard or printed text,
/// a plain transform (every pixel voting for every direction, as
/// `imageproc::hough` does) finds hundreds of lines through unrelated
/// edges and misses a card's sides among them; voting by orientation
/// leaves mostly the lines edges run along. Written here for that: no
/// crate of the field's offers it.
fn lines(rgb: &RgbImage, edges: &GrayImage, face_height: f64) -> Vec<Line> {
    let min_votes = (0.3 * face_height / FACE_SHARE.1).max(12.0) as u32;
    let gradients: Vec<_> = (0..3)
        .map(|channel| {
            let plane = GrayImage::from_fn(rgb.width(), rgb.height(), |x, y| {
                image::Luma([rgb.get_pixel(x, y).0[channel]])
            });
            (
                imageproc::gradients::horizontal_sobel(&plane),
                imageproc::gradients::vertical_sobel(&plane),
            )
        })
        .collect();
    let (w, h) = edges.dimensions();
    let diagonal = f64::from(w).hypot(f64::from(h)).ceil() as i64;
    let rows = (2 * diagonal + 1) as usize;
    let mut votes = vec![0u32; 180 * rows];
    let trig: Vec<(f64, f64)> = (0..180)
        .map(|a| (f64::from(a)).to_radians().sin_cos())
        .map(|(s, c)| (c, s))
        .collect();
    for (x, y, e) in edges.enumerate_pixels() {
        if e.0[0] == 0 {
            continue;
        }
        let (gx, gy) = gradients
            .iter()
            .map(|(gx, gy)| {
                (
                    f64::from(gx.get_pixel(x, y).0[0]),
                    f64::from(gy.get_pixel(x, y).0[0]),
                )
            })
            .max_by(|a, b| a.0.hypot(a.1).total_cmp(&b.0.hypot(b.1)))
            .unwrap_or((0.0, 0.0));
        if gx == 0.0 && gy == 0.0 {
            continue;
        }
        let along = gy.atan2(gx).to_degrees().rem_euclid(180.0).round() as i64;
        for d in -ANGLE_SPREAD..=ANGLE_SPREAD {
            let a = (along + d).rem_euclid(180) as usize;
            let (c, s) = trig[a];
            let r = (f64::from(x) * c + f64::from(y) * s).round() as i64 + diagonal;
            votes[a * rows + r as usize] += 1;
        }
    }
    // Past 0 or 180 degrees a line's normal turns round: the same line has
    // the opposite distance.
    let at = |a: i64, r: i64| {
        let (a, r) = if (0..180).contains(&a) {
            (a, r)
        } else {
            (a.rem_euclid(180), 2 * diagonal - r)
        };
        votes[a as usize * rows + r as usize]
    };
    let mut found = Vec::new();
    for a in 0..180i64 {
        for r in 0..rows as i64 {
            let v = at(a, r);
            if v < min_votes {
                continue;
            }
            // A peak: no neighbour within 3 degrees and 4 pixels has more
            // (ties go to the first).
            let peak = (-3..=3).all(|da| {
                (-4..=4).all(|dr| {
                    let rr = r + dr;
                    if (da == 0 && dr == 0) || rr < 0 || rr >= rows as i64 {
                        return true;
                    }
                    let u = at(a + da, rr);
                    u < v || (u == v && (da, dr) > (0, 0))
                })
            });
            if peak {
                found.push(Line {
                    r: (r - diagonal) as f64,
                    angle: a as f64,
                    votes: v,
                });
            }
        }
    }
    found.sort_by_key(|l| std::cmp::Reverse(l.votes));
    found.truncate(MAX_LINES);
    found
}

/// Two nearly parallel lines with the face between them.
#[derive(Clone, Copy, Debug)]
struct Band {
    first: Line,
    second: Line,
    /// Mean normal angle, degrees in [0, 180).
    angle: f64,
    /// Distance between the lines across the face.
    width: f64,
}

fn bands(lines: &[Line], face: (f64, f64), face_height: f64) -> Vec<Band> {
    let shortest = face_height / FACE_SHARE.1;
    let longest = face_height / FACE_SHARE.0 * PHOTO_ASPECT.1;
    let mut out = Vec::new();
    for (i, a) in lines.iter().enumerate() {
        for b in &lines[i + 1..] {
            if angle_between(a.angle, b.angle) > MAX_SIDE_SKEW {
                continue;
            }
            let (da, db) = (signed_distance(a, face), signed_distance(b, face));
            // Same orientation of the normals for the sign test.
            let db = if normals_agree(a, b) { db } else { -db };
            if da.signum() == db.signum() {
                continue;
            }
            let width = da.abs() + db.abs();
            if !(shortest..=longest).contains(&width) {
                continue;
            }
            out.push(Band {
                first: *a,
                second: *b,
                angle: mean_angle(a.angle, b.angle),
                width,
            });
        }
    }
    out
}

fn normal(line: &Line) -> (f64, f64) {
    let t = line.angle.to_radians();
    (t.cos(), t.sin())
}

fn normals_agree(a: &Line, b: &Line) -> bool {
    let (na, nb) = (normal(a), normal(b));
    na.0 * nb.0 + na.1 * nb.1 >= 0.0
}

fn signed_distance(line: &Line, (x, y): (f64, f64)) -> f64 {
    let (c, s) = normal(line);
    x * c + y * s - line.r
}

/// Angle between two line orientations, degrees in [0, 90].
fn angle_between(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(180.0);
    d.min(180.0 - d)
}

fn mean_angle(a: f64, b: f64) -> f64 {
    let d = (b - a).rem_euclid(180.0);
    let d = if d > 90.0 { d - 180.0 } else { d };
    (a + d / 2.0).rem_euclid(180.0)
}

fn intersect(a: &Line, b: &Line) -> Option<(f64, f64)> {
    let ((a1, b1), (a2, b2)) = (normal(a), normal(b));
    let det = a1 * b2 - a2 * b1;
    if det.abs() < 1e-6 {
        return None;
    }
    let (r1, r2) = (a.r, b.r);
    Some(((r1 * b2 - r2 * b1) / det, (a1 * r2 - a2 * r1) / det))
}

/// The four corners where band `a`'s lines cross band `b`'s, in order round the quad.
fn corners(a: &Band, b: &Band) -> Option<[(f64, f64); 4]> {
    Some([
        intersect(&a.first, &b.first)?,
        intersect(&a.first, &b.second)?,
        intersect(&a.second, &b.second)?,
        intersect(&a.second, &b.first)?,
    ])
}

/// The proportions of the rectangle a quad is a photo of: Zhang and He's
/// rectification ("Whiteboard scanning and image enhancement", 2007),
/// which finds the camera's focal length from the quad's vanishing points
/// (principal point at the frame's centre, square pixels) and measures the
/// sides in the rectangle's plane. A card leaning against a box shows a
/// trapezoid of proportions 2.2 whose card is 1.59. Corners in order round
/// the quad, relative to the frame's centre; where the sides are parallel
/// enough to leave the focal length unknown (a photo taken square on),
/// the side lengths' ratio is the answer. Long side over short.
fn true_aspect(c: &[(f64, f64); 4], diagonal: f64) -> Option<f64> {
    let affine = side_aspect(c)?;
    let m = |i: usize| [c[i].0, c[i].1, 1.0];
    // m1 and m4 opposite; m2 and m3 beside m1.
    let (m1, m2, m4, m3) = (m(0), m(1), m(2), m(3));
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let (d2, d3) = (dot(cross(m2, m4), m3), dot(cross(m3, m4), m2));
    if d2.abs() < 1e-9 || d3.abs() < 1e-9 {
        return Some(affine);
    }
    let k2 = dot(cross(m1, m4), m3) / d2;
    let k3 = dot(cross(m1, m4), m2) / d3;
    let n2 = [k2 * m2[0] - m1[0], k2 * m2[1] - m1[1], k2 * m2[2] - m1[2]];
    let n3 = [k3 * m3[0] - m1[0], k3 * m3[1] - m1[1], k3 * m3[2] - m1[2]];
    let f2 = -(n2[0] * n3[0] + n2[1] * n3[1]) / (n2[2] * n3[2]);
    // Where one pair of sides is parallel in the picture (a card leaning
    // straight back), the focal length cannot be told from the quad: a
    // phone's is taken, about 0.7 of the picture's diagonal (26 mm in 35
    // mm terms, 0.6, in a picture cut a little). A parallelogram's
    // proportions do not depend on it.
    let f2 =
        if f2.is_finite() && ((0.3 * diagonal).powi(2)..=(8.0 * diagonal).powi(2)).contains(&f2) {
            f2
        } else {
            (ASSUMED_FOCAL * diagonal).powi(2)
        };
    let length = |n: [f64; 3]| ((n[0] * n[0] + n[1] * n[1]) / f2 + n[2] * n[2]).sqrt();
    let (along, across) = (length(n2), length(n3));
    if along <= 0.0 || across <= 0.0 {
        return Some(affine);
    }
    Some(along.max(across) / along.min(across))
}

/// Whether the quad's long sides run across the picture: the face was
/// found upright, and an upright card's front or passport page is wider
/// than high (a quad standing on its short side around a face is the
/// portrait's column and the print beside it, on a card the frame cuts).
fn lies_flat(c: &[(f64, f64); 4]) -> bool {
    let len = |i: usize| {
        let (p, q) = (c[i], c[(i + 1) % 4]);
        (p.0 - q.0).hypot(p.1 - q.1)
    };
    let across = |i: usize| {
        let (p, q) = (c[i], c[(i + 1) % 4]);
        (q.0 - p.0).abs() >= (q.1 - p.1).abs()
    };
    let (mut wide, mut high) = (0.0, 0.0);
    for i in 0..4 {
        if across(i) {
            wide += len(i);
        } else {
            high += len(i);
        }
    }
    wide > high
}

/// Mean of the longer opposite sides over the mean of the shorter ones.
fn side_aspect(c: &[(f64, f64); 4]) -> Option<f64> {
    let len = |i: usize| {
        let (p, q) = (c[i], c[(i + 1) % 4]);
        (p.0 - q.0).hypot(p.1 - q.1)
    };
    let (one, two) = ((len(0) + len(2)) / 2.0, (len(1) + len(3)) / 2.0);
    let (long, short) = (one.max(two), one.min(two));
    (short >= 1.0).then(|| long / short)
}

/// A phone camera's focal length over the picture's diagonal, where the
/// quad cannot tell it.
const ASSUMED_FOCAL: f64 = 0.7;

/// Mean share of each side along which an edge runs, `None` when a side
/// has too little.
fn support(near: &GrayImage, c: &[(f64, f64); 4]) -> Option<f64> {
    let (w, h) = (f64::from(near.width()), f64::from(near.height()));
    let mut total = 0.0;
    for i in 0..4 {
        let (p, q) = (c[i], c[(i + 1) % 4]);
        let steps = (p.0 - q.0).hypot(p.1 - q.1).ceil().max(1.0) as usize;
        let on = (0..=steps)
            .filter(|&k| {
                let t = k as f64 / steps as f64;
                let (x, y) = (p.0 + (q.0 - p.0) * t, p.1 + (q.1 - p.1) * t);
                x >= 0.0
                    && y >= 0.0
                    && x < w
                    && y < h
                    && near.get_pixel(x as u32, y as u32).0[0] > 0
            })
            .count();
        let share = on as f64 / (steps + 1) as f64;
        if share < MIN_SIDE_SUPPORT {
            return None;
        }
        total += share;
    }
    let mean = total / 4.0;
    (mean >= MIN_SUPPORT).then_some(mean)
}

fn polygon_area(c: &[(f64, f64); 4]) -> f64 {
    let twice: f64 = (0..4)
        .map(|i| {
            let (a, b) = (c[i], c[(i + 1) % 4]);
            a.0 * b.1 - b.0 * a.1
        })
        .sum();
    twice.abs() / 2.0
}

/// Corners clockwise (in image coordinates, y down) from the top left.
fn clockwise(c: [(f64, f64); 4]) -> [(f64, f64); 4] {
    let (sx, sy) = c.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let centre = (sx / 4.0, sy / 4.0);
    let mut sorted = c;
    sorted.sort_by(|p, q| {
        let angle = |v: &(f64, f64)| (v.1 - centre.1).atan2(v.0 - centre.0);
        angle(p).total_cmp(&angle(q))
    });
    // atan2 with y down runs clockwise from the left; start at the top left.
    let start = (0..4)
        .min_by(|&i, &j| (sorted[i].0 + sorted[i].1).total_cmp(&(sorted[j].0 + sorted[j].1)))
        .unwrap_or(0);
    std::array::from_fn(|i| sorted[(start + i) % 4])
}

/// Share of each side along which the colour steps across it (a
/// document's edge against what it lies on), least over the four sides and
/// mean: a line between two keys or two text lines has the same colour on
/// both sides of it.
fn steps(rgb: &RgbImage, c: &[(f64, f64); 4]) -> (f64, f64) {
    const OFFSET: f64 = 3.0;
    const STEP: u8 = 24;
    let (w, h) = (f64::from(rgb.width()), f64::from(rgb.height()));
    let (sx, sy) = c.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let centre = (sx / 4.0, sy / 4.0);
    let at = |x: f64, y: f64| {
        (x >= 0.0 && y >= 0.0 && x < w && y < h).then(|| rgb.get_pixel(x as u32, y as u32).0)
    };
    let (mut least, mut total) = (f64::INFINITY, 0.0);
    for i in 0..4 {
        let (p, q) = (c[i], c[(i + 1) % 4]);
        let len = (p.0 - q.0).hypot(p.1 - q.1).max(1.0);
        let (mut nx, mut ny) = ((q.1 - p.1) / len, -(q.0 - p.0) / len);
        let mid = ((p.0 + q.0) / 2.0, (p.1 + q.1) / 2.0);
        if (mid.0 - centre.0) * nx + (mid.1 - centre.1) * ny < 0.0 {
            (nx, ny) = (-nx, -ny);
        }
        let samples = len.ceil() as usize;
        let (mut stepped, mut seen) = (0usize, 0usize);
        // The middle 90%: corners are rounded.
        for k in 0..samples {
            let t = 0.05 + 0.9 * k as f64 / samples as f64;
            let (x, y) = (p.0 + (q.0 - p.0) * t, p.1 + (q.1 - p.1) * t);
            let (Some(inner), Some(outer)) = (
                at(x - nx * OFFSET, y - ny * OFFSET),
                at(x + nx * OFFSET, y + ny * OFFSET),
            ) else {
                continue;
            };
            seen += 1;
            if (0..3).any(|ch| inner[ch].abs_diff(outer[ch]) > STEP) {
                stepped += 1;
            }
        }
        let share = if seen == 0 {
            0.0
        } else {
            stepped as f64 / seen as f64
        };
        least = least.min(share);
        total += share;
    }
    (least, total / 4.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rectangle of `aspect` seen by a pinhole camera of focal length
    /// `f`, tilted `pitch` degrees about the horizontal axis, at `depth`:
    /// its corners in the picture, relative to its centre, in order.
    fn photographed(aspect: f64, f: f64, pitch: f64, depth: f64) -> [(f64, f64); 4] {
        let (s, c) = pitch.to_radians().sin_cos();
        let (hw, hh) = (aspect / 2.0, 0.5);
        [(-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh)].map(|(x, y)| {
            let (y3, z3) = (y * c, depth + y * s);
            (f * x / z3, f * y3 / z3)
        })
    }

    #[test]
    fn a_leaning_card_is_measured_in_its_own_plane() {
        for (pitch, off_centre) in [(0.0, 0.0), (25.0, 0.0), (50.0, 0.0), (35.0, 0.4)] {
            let corners = photographed(ID1_ASPECT, 1000.0, pitch, 4.0)
                .map(|(x, y)| (x + off_centre * 300.0, y));
            // Off centre, the principal point is elsewhere: the card is
            // moved in the picture, not in the world, so only check the
            // centred ones closely.
            let found = true_aspect(&corners, 1000.0 / ASSUMED_FOCAL).expect("an aspect");
            let raw = side_aspect(&corners).expect("sides");
            if off_centre == 0.0 {
                assert!(
                    (found - ID1_ASPECT).abs() < 0.01,
                    "pitch {pitch}: {found:.3} (the picture shows {raw:.3})"
                );
            }
            if pitch >= 25.0 {
                assert!(
                    raw > ID1_ASPECT * 1.08,
                    "pitch {pitch}: foreshortened {raw:.3}"
                );
            }
        }
        // Square on, the sides tell.
        let flat = [(0.0, 0.0), (159.0, 0.0), (159.0, 100.0), (0.0, 100.0)];
        assert!((true_aspect(&flat, 1500.0).unwrap() - 1.59).abs() < 1e-9);
    }

    #[test]
    fn an_outline_encloses_the_face_and_lies_flat() {
        let card = [(0.0, 0.0), (160.0, 4.0), (158.0, 104.0), (-2.0, 100.0)];
        assert!(convex_contains(&card, (120.0, 50.0)));
        assert!(!convex_contains(&card, (170.0, 50.0)));
        assert!(lies_flat(&card));
        let column = [(0.0, 0.0), (70.0, 0.0), (70.0, 100.0), (0.0, 100.0)];
        assert!(!lies_flat(&column));
    }

    #[test]
    fn lines_vote_along_their_edges_only() {
        // A card-coloured rectangle on a dark ground, and thin dark lines
        // across the picture (a keyboard's gaps): the rectangle's sides are
        // found, each once.
        let mut rgb = RgbImage::from_pixel(300, 200, image::Rgb([40, 30, 20]));
        for y in 50..150 {
            for x in 60..240 {
                rgb.put_pixel(x, y, image::Rgb([120, 180, 230]));
            }
        }
        let edges = colour_edges(&rgb);
        let found = lines(&rgb, &edges, 40.0);
        let near = |angle: f64, r: f64| {
            found
                .iter()
                .filter(|l| angle_between(l.angle, angle) <= 2.0 && (l.r.abs() - r).abs() <= 3.0)
                .count()
        };
        for (angle, r) in [(0.0, 60.0), (0.0, 240.0), (90.0, 50.0), (90.0, 150.0)] {
            assert_eq!(
                near(angle, r),
                1,
                "side at {angle} degrees, {r} px: {found:?}"
            );
        }
    }

    #[test]
    fn a_card_on_a_busy_ground_is_found_around_its_face() {
        // Stripes of another colour behind a card (a keyboard's rows), the
        // card across three of them, a face-sized box on it.
        let mut rgb = RgbImage::from_fn(800, 600, |_, y| {
            if (y / 40) % 2 == 0 {
                image::Rgb([235, 235, 235])
            } else {
                image::Rgb([90, 90, 90])
            }
        });
        let (cx0, cy0, cw, ch) = (200u32, 180u32, 318u32, 200u32);
        for y in cy0..cy0 + ch {
            for x in cx0..cx0 + cw {
                rgb.put_pixel(x, y, image::Rgb([110, 170, 220]));
            }
        }
        let face = FaceBox {
            x: 420.0,
            y: 230.0,
            width: 70.0,
            height: 70.0,
        };
        let quad = around(&rgb, face).expect("the card");
        let want = [
            (200.0, 180.0),
            (518.0, 180.0),
            (518.0, 380.0),
            (200.0, 380.0),
        ];
        for (got, want) in quad.corners.iter().zip(want) {
            assert!(
                (got.0 - want.0).abs() < 6.0 && (got.1 - want.1).abs() < 6.0,
                "{:?}",
                quad.corners
            );
        }
        assert_eq!(quad.format().0, "ID-1");
        // The same picture with the card's right part out of the frame: no
        // outline is made up for it.
        let cut = image::imageops::crop_imm(&rgb, 0, 0, 420 + 70 + 10, 600).to_image();
        assert!(around(&cut, face).is_none());
    }
}
