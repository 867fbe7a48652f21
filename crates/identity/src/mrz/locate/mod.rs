//! Finding the machine-readable zone on a photo and cutting its lines out.
//!
//! Classical and cheap, on the document the outline search found (or the
//! whole frame when it found none):
//!
//! 1. The region is resampled upright (its long side level) into a working
//!    copy at most [`LOCATE_WIDTH`] wide, in grey.
//! 2. Ink edges: pixels whose horizontal gradient is strong. Text is made of
//!    vertical strokes; a guilloche's faint lines and a photo's shading are not.
//! 3. The skew: the angle (within [`MAX_SKEW_DEGREES`]) whose sheared row
//!    projection of the edges is peakiest, as text lines concentrate there.
//! 4. Bands: runs of rows of that projection dense with edges, each with the
//!    longest stretch of its columns without a gap wider than about a
//!    character. An MRZ line is 30 to 44 characters in one unbroken run, 25
//!    to 50 times as long as it is high, and the zone is 2 or 3 such bands,
//!    equal in height, length and spacing.
//! 5. The page's orientation: the zone is at the bottom of a TD3 page or a
//!    card's back; found in the top half, the page is upside down.
//! 6. Each line is sampled level from the full-resolution image along the
//!    band, tightened to its ink (Otsu's threshold), a residual tilt taken
//!    out once, given margins of 0.35 and 0.6 of the characters' height (what
//!    the recogniser was measured with, docs/identity.md, "Why this MRZ recogniser"), and scaled
//!    to [`LINE_HEIGHT`].
//!
//! Step 1's sampling is in `sample`, steps 2 to 4 in `bands`, step 6 in `cut`.
//!
//! No input panics, and the work is bounded by the working copy's size (one
//! pass over the upload to shrink it; each line sampled once or twice).

use image::{GrayImage, RgbImage};

use crate::document::Quad;

mod bands;
mod cut;
mod sample;

use bands::{bands, ink_edges, skew, zone_group};
use cut::cut_line;
use sample::{grey_shrunk, sample_grey, Frame};

/// Height of the line images given to the recogniser: PP-OCRv4 reads MRZ lines
/// best at 32 (docs/identity.md, "Why this MRZ recogniser").
pub const LINE_HEIGHT: u32 = 32;
/// Widest working copy the zone is searched in.
pub const LOCATE_WIDTH: u32 = 800;
/// Largest skew of the lines in the region looked for, either way.
pub const MAX_SKEW_DEGREES: f64 = 8.0;
/// Widest line image (the recogniser's steps are 8 pixels: 256 steps, more
/// than 5 a character of a 44-character line).
pub const MAX_LINE_WIDTH: u32 = 2048;
/// Margin around the outline, as a share of its sides: an outline found on a
/// small copy may cut into the zone at the document's edge.
const OUTLINE_MARGIN: f64 = 0.04;

/// The zone found: its lines, ready for a recogniser.
#[derive(Clone, Debug)]
pub struct Zone {
    /// The lines from the top of the zone as read, each [`LINE_HEIGHT`] high, level.
    pub lines: Vec<GrayImage>,
    /// The region was turned 180 degrees to read it (the zone was in its top half).
    pub upside_down: bool,
    /// Angle of the lines to the region's long side, degrees.
    pub skew_degrees: f64,
    /// Mean height of the characters in the upload, in pixels.
    pub char_height: f64,
    /// Where its lines are in the upload: x0, y0, x1, y1 (the box round them).
    pub bounds: (f64, f64, f64, f64),
}

impl Zone {
    /// The same zone read the other way up: lines turned and their order reversed.
    pub fn turned(&self) -> Zone {
        Zone {
            lines: self
                .lines
                .iter()
                .rev()
                .map(image::imageops::rotate180)
                .collect(),
            upside_down: !self.upside_down,
            skew_degrees: self.skew_degrees,
            char_height: self.char_height,
            bounds: self.bounds,
        }
    }
}

/// Looks for the zone in `image` (the upload, oriented), within `outline`
/// (in the upload's coordinates) when given, else in the whole frame.
pub fn locate(image: &RgbImage, outline: Option<&Quad>) -> Option<Zone> {
    let (w, h) = image.dimensions();
    if w < 16 || h < 16 {
        return None;
    }
    // The region: centre, unit vectors along its long side (u) and across (v), sides.
    let (centre, u, long, short) = match outline {
        Some(q) => region_of(q)?,
        None => (
            (f64::from(w) / 2.0, f64::from(h) / 2.0),
            (1.0, 0.0),
            f64::from(w),
            f64::from(h),
        ),
    };
    let margin = if outline.is_some() {
        OUTLINE_MARGIN
    } else {
        0.0
    };
    let (long, short) = (long * (1.0 + 2.0 * margin), short * (1.0 + 2.0 * margin));
    let v = (-u.1, u.0);
    // One working pixel a whole number of upload pixels: a box average
    // makes it, without resampling a finer copy.
    let step = (long / f64::from(LOCATE_WIDTH)).ceil().clamp(1.0, 64.0);
    let work_w = (long / step).round().max(16.0);
    let work_h = (short / step)
        .round()
        .clamp(16.0, f64::from(LOCATE_WIDTH) * 2.0);
    let frame = Frame {
        origin: (
            centre.0 - u.0 * long / 2.0 - v.0 * short / 2.0 + (u.0 + v.0) * step / 2.0,
            centre.1 - u.1 * long / 2.0 - v.1 * short / 2.0 + (u.1 + v.1) * step / 2.0,
        ),
        ex: (u.0 * step, u.1 * step),
        ey: (v.0 * step, v.1 * step),
    };
    // A box-averaged grey copy of the region's bounds at about the working
    // copy's scale, to sample from without aliasing.
    let factor = step as u32;
    let (x0, y0, x1, y1) = {
        let corners = [
            frame.at(0.0, 0.0),
            frame.at(work_w, 0.0),
            frame.at(0.0, work_h),
            frame.at(work_w, work_h),
        ];
        let pad = f64::from(factor) + 2.0;
        let clip = |v: f64, max: u32| v.clamp(0.0, f64::from(max)) as u32;
        let xs = corners.map(|c| c.0);
        let ys = corners.map(|c| c.1);
        (
            clip(xs.iter().copied().fold(f64::INFINITY, f64::min) - pad, w),
            clip(ys.iter().copied().fold(f64::INFINITY, f64::min) - pad, h),
            clip(
                xs.iter().copied().fold(f64::NEG_INFINITY, f64::max) + pad,
                w,
            ),
            clip(
                ys.iter().copied().fold(f64::NEG_INFINITY, f64::max) + pad,
                h,
            ),
        )
    };
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    let shrunk = grey_shrunk(image, factor, (x0, y0, x1, y1));
    if crate::interrupt::pending() {
        return None;
    }
    let f = f64::from(factor);
    let small = Frame {
        origin: (
            (frame.origin.0 - f64::from(x0) + 0.5) / f - 0.5,
            (frame.origin.1 - f64::from(y0) + 0.5) / f - 0.5,
        ),
        ex: (frame.ex.0 / f, frame.ex.1 / f),
        ey: (frame.ey.0 / f, frame.ey.1 / f),
    };
    let work = sample_grey(&shrunk, small, work_w as u32, work_h as u32, 1);
    let edges = ink_edges(&work);
    let angle = skew(&edges, work.width());
    let bands = bands(&edges, work.width(), work.height(), angle);
    let group = zone_group(&bands, work.height(), outline.is_some())?;
    let upside_down = {
        let middle = group.iter().map(|b| b.centre_row()).sum::<f64>() / group.len() as f64;
        middle < f64::from(work.height()) / 2.0
    };
    let mut lines = Vec::with_capacity(group.len());
    let mut heights = Vec::with_capacity(group.len());
    for band in &group {
        if crate::interrupt::pending() {
            return None;
        }
        let (line, char_height) = cut_line(image, frame, band, angle, work.width())?;
        lines.push(line);
        heights.push(char_height);
    }
    // The bands' corners (rows sheared by the skew) in the upload.
    let mid = f64::from(work.width()) / 2.0;
    let corners: Vec<(f64, f64)> = group
        .iter()
        .flat_map(|b| {
            [
                (b.left, b.top),
                (b.right, b.top),
                (b.left, b.bottom),
                (b.right, b.bottom),
            ]
            .map(|(x, y)| frame.at(x, y + (x - mid) * angle))
        })
        .collect();
    let extreme = |pick: fn(&(f64, f64)) -> f64, max: bool| {
        corners.iter().map(pick).fold(
            if max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            if max { f64::max } else { f64::min },
        )
    };
    let zone = Zone {
        lines,
        upside_down: false,
        skew_degrees: angle.atan().to_degrees(),
        char_height: heights.iter().sum::<f64>() / heights.len().max(1) as f64,
        bounds: (
            extreme(|c| c.0, false),
            extreme(|c| c.1, false),
            extreme(|c| c.0, true),
            extreme(|c| c.1, true),
        ),
    };
    Some(if upside_down { zone.turned() } else { zone })
}

/// Centre, unit vector along the long side (pointing right, or up when
/// vertical), long and short sides of a quad; `None` for a degenerate one.
type Region = ((f64, f64), (f64, f64), f64, f64);

fn region_of(q: &Quad) -> Option<Region> {
    let c = q.corners;
    if c.iter().any(|p| !p.0.is_finite() || !p.1.is_finite()) {
        return None;
    }
    let side = |a: (f64, f64), b: (f64, f64)| (b.0 - a.0, b.1 - a.1);
    let (s1, s2) = (side(c[0], c[1]), side(c[1], c[2]));
    let (n1, n2) = (s1.0.hypot(s1.1), s2.0.hypot(s2.1));
    let (dir, long, short) = if n1 >= n2 { (s1, n1, n2) } else { (s2, n2, n1) };
    if short < 8.0 {
        return None;
    }
    let mut u = (dir.0 / long, dir.1 / long);
    if u.0 < -1e-9 || (u.0.abs() <= 1e-9 && u.1 > 0.0) {
        u = (-u.0, -u.1);
    }
    Some((q.centre(), u, long, short))
}

#[cfg(test)]
mod tests;
