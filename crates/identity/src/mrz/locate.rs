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
//!    the recogniser was measured with, bench/identity/MRZ-OCR.md), and scaled
//!    to [`LINE_HEIGHT`].
//!
//! No input panics, and the work is bounded by the working copy's size (one
//! pass over the upload to shrink it; each line sampled once or twice).

use image::{GrayImage, Luma, RgbImage};

use crate::document::Quad;

/// Height of the line images given to the recogniser: PP-OCRv4 reads MRZ lines
/// best at 32 (bench/identity/MRZ-OCR.md).
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
/// A band's run of columns over its height: a 30-character line is about 31
/// times as long as high, a 44-character one 46.
const MIN_LINE_ASPECT: f64 = 18.0;
const MAX_LINE_ASPECT: f64 = 70.0;

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

/// An affine frame: upload coordinates of a working copy's pixel centres.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Upload position of the copy's pixel (0, 0).
    origin: (f64, f64),
    /// Upload displacement of one pixel along the copy's x and y.
    ex: (f64, f64),
    ey: (f64, f64),
}

impl Frame {
    fn at(&self, x: f64, y: f64) -> (f64, f64) {
        (
            self.origin.0 + x * self.ex.0 + y * self.ey.0,
            self.origin.1 + x * self.ex.1 + y * self.ey.1,
        )
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

/// Luminance of the region [x0, x1) x [y0, y1) of `image` (within it)
/// shrunk by a whole `factor`: block means, partial blocks at the ends
/// averaged over what they hold.
fn grey_shrunk(image: &RgbImage, factor: u32, (x0, y0, x1, y1): (u32, u32, u32, u32)) -> GrayImage {
    let f = factor.max(1) as usize;
    let (x0, y0) = (x0 as usize, y0 as usize);
    let x1 = (x1 as usize).min(image.width() as usize);
    let y1 = (y1 as usize).min(image.height() as usize);
    if x1 <= x0 || y1 <= y0 {
        return GrayImage::new(1, 1);
    }
    let (w, h) = ((x1 - x0).div_ceil(f), (y1 - y0).div_ceil(f));
    let stride = image.width() as usize * 3;
    let raw = image.as_raw();
    let mut sums = vec![0u32; w];
    let mut out = Vec::with_capacity(w * h);
    for oy in 0..h {
        // A pass over up to the whole upload: stopped when asked (the
        // caller checks again and gives up).
        if crate::interrupt::pending() {
            return GrayImage::new(1, 1);
        }
        sums.fill(0);
        let rows = (y0 + oy * f..(y0 + (oy + 1) * f).min(y1)).len() as u32;
        for y in y0 + oy * f..(y0 + (oy + 1) * f).min(y1) {
            let row = raw
                .get(y * stride + x0 * 3..y * stride + x1 * 3)
                .unwrap_or(&[]);
            for (sum, block) in sums.iter_mut().zip(row.chunks(f * 3)) {
                for px in block.chunks_exact(3) {
                    *sum += 77 * u32::from(px[0]) + 150 * u32::from(px[1]) + 29 * u32::from(px[2]);
                }
            }
        }
        for (ox, &sum) in sums.iter().enumerate() {
            let cols = ((ox + 1) * f).min(x1 - x0) - ox * f;
            let area = (rows * cols as u32 * 256).max(1);
            out.push((sum / area).min(255) as u8);
        }
    }
    GrayImage::from_raw(w as u32, h as u32, out).unwrap_or_else(|| GrayImage::new(1, 1))
}

#[inline]
/// Bilinear sample of `image` at (x, y) (pixel centres at whole numbers),
/// clamped to its edges.
fn bilinear(image: &GrayImage, x: f64, y: f64) -> f64 {
    let (w, h) = image.dimensions();
    let x = x.clamp(0.0, f64::from(w.saturating_sub(1)));
    let y = y.clamp(0.0, f64::from(h.saturating_sub(1)));
    // Non-negative after the clamp: the cast is the floor.
    let (x0, y0) = (x as u32, y as u32);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - f64::from(x0), y - f64::from(y0));
    let p = |x: u32, y: u32| f64::from(image.get_pixel(x, y).0[0]);
    let top = p(x0, y0) * (1.0 - fx) + p(x1, y0) * fx;
    let bottom = p(x0, y1) * (1.0 - fx) + p(x1, y1) * fx;
    top * (1.0 - fy) + bottom * fy
}

#[inline]
/// Bilinear luminance of an RGB image at (x, y), clamped to its edges.
fn bilinear_rgb(image: &RgbImage, x: f64, y: f64) -> f64 {
    let (w, h) = image.dimensions();
    let x = x.clamp(0.0, f64::from(w.saturating_sub(1)));
    let y = y.clamp(0.0, f64::from(h.saturating_sub(1)));
    // Non-negative after the clamp: the cast is the floor.
    let (x0, y0) = (x as u32, y as u32);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - f64::from(x0), y - f64::from(y0));
    let p = |x: u32, y: u32| {
        let [r, g, b] = image.get_pixel(x, y).0;
        0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b)
    };
    let top = p(x0, y0) * (1.0 - fx) + p(x1, y0) * fx;
    let bottom = p(x0, y1) * (1.0 - fx) + p(x1, y1) * fx;
    top * (1.0 - fy) + bottom * fy
}

/// A `w` x `h` copy of `image` through `frame`, each pixel the mean of
/// `k` x `k` bilinear samples over its footprint.
fn sample_grey(image: &GrayImage, frame: Frame, w: u32, h: u32, k: u32) -> GrayImage {
    sample_with(|x, y| bilinear(image, x, y), frame, w, h, k)
}

fn sample_with(
    sample: impl Fn(f64, f64) -> f64,
    frame: Frame,
    w: u32,
    h: u32,
    k: u32,
) -> GrayImage {
    let k = k.clamp(1, 4);
    let kf = f64::from(k);
    GrayImage::from_fn(w.max(1), h.max(1), |x, y| {
        let mut sum = 0.0;
        for j in 0..k {
            for i in 0..k {
                let (sx, sy) = frame.at(
                    f64::from(x) + (f64::from(i) + 0.5) / kf - 0.5,
                    f64::from(y) + (f64::from(j) + 0.5) / kf - 0.5,
                );
                sum += sample(sx, sy);
            }
        }
        // Float-to-integer casts saturate: no clamp needed.
        Luma([(sum / (kf * kf) + 0.5) as u8])
    })
}

/// Points (x, y) of strong horizontal gradient: the sides of glyphs' strokes.
fn ink_edges(work: &GrayImage) -> Vec<(u32, u32)> {
    let (w, h) = work.dimensions();
    if w < 3 {
        return Vec::new();
    }
    let mut grads = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 1..w - 1 {
            let a = i32::from(work.get_pixel(x - 1, y).0[0]);
            let b = i32::from(work.get_pixel(x + 1, y).0[0]);
            grads.push(a.abs_diff(b) as u8);
        }
    }
    let mut histogram = [0usize; 256];
    for &g in &grads {
        histogram[usize::from(g)] += 1;
    }
    // The 99th percentile stands for the sharpest text's contrast; a quarter
    // of it, and never under 24 levels, is a stroke's side.
    let mut seen = 0;
    let mut p99 = 255;
    for (value, &count) in histogram.iter().enumerate() {
        seen += count;
        if seen * 100 >= grads.len() * 99 {
            p99 = value;
            break;
        }
    }
    let threshold = (p99 / 4).max(24) as u8;
    let row = (w - 2) as usize;
    grads
        .iter()
        .enumerate()
        .filter(|(_, &g)| g > threshold)
        .map(|(i, _)| ((i % row) as u32 + 1, (i / row) as u32))
        .collect()
}

/// Sheared row of (x, y) for slope `t` about the middle column, offset so
/// that every row is positive.
fn sheared(x: u32, y: u32, t: f64, mid: f64, offset: f64) -> usize {
    (f64::from(y) - (f64::from(x) - mid) * t + offset)
        .round()
        .max(0.0) as usize
}

/// The slope (tangent) whose sheared row projection of `edges` is peakiest.
fn skew(edges: &[(u32, u32)], width: u32) -> f64 {
    let mid = f64::from(width) / 2.0;
    let max_t = MAX_SKEW_DEGREES.to_radians().tan();
    let offset = mid * max_t + 2.0;
    let rows = edges.iter().map(|e| e.1).max().unwrap_or(0) as usize + 2 * offset as usize + 4;
    let mut profile = vec![0u32; rows];
    let mut shift = vec![0i64; width as usize];
    let mut peakiness = |t: f64| {
        profile.fill(0);
        for (x, s) in shift.iter_mut().enumerate() {
            *s = ((x as f64 - mid) * t - offset).round() as i64;
        }
        for &(x, y) in edges {
            let row = i64::from(y) - shift.get(x as usize).copied().unwrap_or(0);
            if let Some(p) = usize::try_from(row).ok().and_then(|r| profile.get_mut(r)) {
                *p += 1;
            }
        }
        profile
            .iter()
            .map(|&p| f64::from(p) * f64::from(p))
            .sum::<f64>()
    };
    let best_of = |candidates: &mut dyn Iterator<Item = f64>,
                   peakiness: &mut dyn FnMut(f64) -> f64| {
        candidates
            .map(|deg: f64| (deg, peakiness(deg.to_radians().tan())))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0.0, |(deg, _)| deg)
    };
    let steps = (MAX_SKEW_DEGREES * 2.0) as i32;
    let coarse = best_of(
        &mut (-steps..=steps).map(|i| f64::from(i) * 0.5),
        &mut peakiness,
    );
    let fine = best_of(
        &mut (-5..=5).map(|i| coarse + f64::from(i) * 0.1),
        &mut peakiness,
    );
    fine.clamp(-MAX_SKEW_DEGREES, MAX_SKEW_DEGREES)
        .to_radians()
        .tan()
}

/// A band of the sheared projection that may be a line of text.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Band {
    /// Sheared rows [top, bottom) in the working copy (before the offset is taken off).
    top: f64,
    bottom: f64,
    /// Columns of its longest run.
    left: f64,
    right: f64,
}

impl Band {
    fn height(&self) -> f64 {
        self.bottom - self.top
    }
    fn length(&self) -> f64 {
        self.right - self.left
    }
    /// The band's middle row at the middle column.
    fn centre_row(&self) -> f64 {
        (self.top + self.bottom) / 2.0
    }
}

/// Bands of rows dense with edges at slope `t`, at three density thresholds
/// (a textured background can join lines at the lowest), each with its
/// longest run of columns.
fn bands(edges: &[(u32, u32)], width: u32, height: u32, t: f64) -> Vec<Band> {
    let mid = f64::from(width) / 2.0;
    let offset = mid * t.abs() + 2.0;
    let rows = height as usize + 2 * offset as usize + 4;
    let mut profile = vec![0u32; rows];
    let mut by_row: Vec<Vec<u32>> = vec![Vec::new(); rows];
    for &(x, y) in edges {
        let r = sheared(x, y, t, mid, offset);
        if let (Some(p), Some(list)) = (profile.get_mut(r), by_row.get_mut(r)) {
            *p += 1;
            list.push(x);
        }
    }
    let peak = profile.iter().copied().max().unwrap_or(0);
    let mut out = Vec::new();
    for share in [0.12, 0.25, 0.4] {
        let floor = (f64::from(peak) * share).max(f64::from(width) / 100.0);
        let dense: Vec<bool> = profile.iter().map(|&p| f64::from(p) >= floor).collect();
        let mut r = 0;
        while r < rows {
            if !dense[r] {
                r += 1;
                continue;
            }
            let start = r;
            // One thin row does not end a band.
            while r < rows && (dense[r] || dense.get(r + 1) == Some(&true)) {
                r += 1;
            }
            if r >= start + 3 {
                if let Some(band) = band_run(&by_row[start..r], start, r, offset) {
                    if !out.contains(&band) {
                        out.push(band);
                    }
                }
            }
        }
    }
    out
}

/// The longest run of columns holding edges in rows `rows` (the sheared
/// rows `start..end`), bridging gaps up to about a character wide.
fn band_run(rows: &[Vec<u32>], start: usize, end: usize, offset: f64) -> Option<Band> {
    let height = (end - start) as f64;
    let mut xs: Vec<u32> = rows.iter().flatten().copied().collect();
    if xs.len() < 8 {
        return None;
    }
    xs.sort_unstable();
    let max_gap = (1.3 * height).max(3.0) as u32;
    let (mut best, mut run_start, mut prev) = ((0u32, 0u32), xs[0], xs[0]);
    for &x in &xs[1..] {
        if x - prev > max_gap {
            run_start = x;
        }
        prev = x;
        if x - run_start > best.1 - best.0 {
            best = (run_start, x);
        }
    }
    Some(Band {
        top: start as f64 - offset,
        bottom: end as f64 - offset,
        left: f64::from(best.0),
        right: f64::from(best.1),
    })
}

/// The likeliest zone: 2 or 3 consecutive bands of a line's proportions,
/// equal in height and length, evenly spaced; the longest such group, a
/// third line preferred, and, with an outline, only in the region's top or
/// bottom part.
fn zone_group(bands: &[Band], height: u32, outlined: bool) -> Option<Vec<Band>> {
    let mut lines: Vec<Band> = bands
        .iter()
        .copied()
        .filter(|b| {
            let aspect = b.length() / b.height().max(1.0);
            b.height() >= 3.0 && (MIN_LINE_ASPECT..=MAX_LINE_ASPECT).contains(&aspect)
        })
        .collect();
    lines.sort_by(|a, b| a.top.total_cmp(&b.top));
    let fits = |a: &Band, b: &Band| {
        let (ha, hb) = (a.height(), b.height());
        let h = (ha + hb) / 2.0;
        let pitch = b.centre_row() - a.centre_row();
        ha.max(hb) <= 1.6 * ha.min(hb)
            && (1.2 * h..=3.2 * h).contains(&pitch)
            && (a.length() - b.length()).abs() <= 0.12 * a.length().max(b.length())
            && (a.left - b.left).abs() <= 2.0 * h
    };
    let h = f64::from(height);
    let placed = |group: &[Band]| {
        if !outlined {
            return true;
        }
        let middle = group.iter().map(Band::centre_row).sum::<f64>() / group.len() as f64;
        middle >= 0.55 * h || middle <= 0.45 * h
    };
    let mut best: Option<(f64, Vec<Band>)> = None;
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            if !fits(&lines[i], &lines[j]) {
                continue;
            }
            let mut group = vec![lines[i], lines[j]];
            for k in j + 1..lines.len() {
                let even = {
                    let p1 = lines[j].centre_row() - lines[i].centre_row();
                    let p2 = lines[k].centre_row() - lines[j].centre_row();
                    (p1 - p2).abs() <= 0.2 * p1
                };
                if even && fits(&lines[j], &lines[k]) {
                    group.push(lines[k]);
                    break;
                }
            }
            if !placed(&group) {
                continue;
            }
            let score = group.iter().map(Band::length).sum::<f64>();
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, group));
            }
        }
    }
    best.map(|(_, g)| g)
}

/// Otsu's threshold of `pixels`.
fn otsu(pixels: &[u8]) -> u8 {
    let mut histogram = [0u64; 256];
    for &p in pixels {
        histogram[usize::from(p)] += 1;
    }
    let total = pixels.len() as f64;
    let sum: f64 = histogram
        .iter()
        .enumerate()
        .map(|(i, &n)| i as f64 * n as f64)
        .sum();
    let (mut below, mut below_sum, mut best, mut threshold) = (0.0, 0.0, 0.0, 127u8);
    for (i, &n) in histogram.iter().enumerate() {
        below += n as f64;
        if below == 0.0 {
            continue;
        }
        let above = total - below;
        if above <= 0.0 {
            break;
        }
        below_sum += i as f64 * n as f64;
        let (m0, m1) = (below_sum / below, (sum - below_sum) / above);
        let between = below * above * (m0 - m1) * (m0 - m1);
        if between > best {
            best = between;
            threshold = i as u8;
        }
    }
    threshold
}

/// Rows per character height the strip is sampled at before tightening.
const STRIP_CHAR: f64 = 28.0;

/// One band cut out level from the upload: the line image at
/// [`LINE_HEIGHT`] and its characters' height in the upload.
fn cut_line(
    image: &RgbImage,
    frame: Frame,
    band: &Band,
    t: f64,
    work_w: u32,
) -> Option<(GrayImage, f64)> {
    let mid = f64::from(work_w) / 2.0;
    // The band's centre in the working copy, and in the upload.
    let cx = (band.left + band.right) / 2.0;
    let cy = band.centre_row() + (cx - mid) * t;
    let centre = frame.at(cx, cy);
    let unit = frame.ex.0.hypot(frame.ex.1);
    if unit <= 0.0 || !unit.is_finite() {
        return None;
    }
    // Along the line: the working copy's x turned by the skew.
    let norm = (1.0 + t * t).sqrt();
    let along = (
        (frame.ex.0 + frame.ey.0 * t) / (unit * norm),
        (frame.ex.1 + frame.ey.1 * t) / (unit * norm),
    );
    let height = band.height() * unit / norm;
    let length = band.length() * unit * norm;
    let mut strip = level_strip(image, centre, along, length, height)?;
    // A residual tilt: the ink's middle row at the line's two ends.
    // Levelled again when the ink drifts by a tenth of its height along the line.
    let tilt = strip.tilt();
    if (tilt * strip.length_px).abs() > 0.1 * strip.char_px {
        let (sin, cos) = tilt.atan().sin_cos();
        let turned = (along.0 * cos - along.1 * sin, along.0 * sin + along.1 * cos);
        let centre = strip.frame.at(strip.ink_centre.0, strip.ink_centre.1);
        let height = strip.char_px * strip.scale;
        let length = strip.length_px * strip.scale;
        strip = level_strip(image, centre, turned, length, height)?;
    }
    let line = strip.line()?;
    Some((line, strip.char_px * strip.scale))
}

/// A line's neighbourhood sampled level, and its ink's extent in it.
struct Strip {
    grey: GrayImage,
    frame: Frame,
    /// Upload pixels per strip pixel.
    scale: f64,
    /// Ink rows [top, bottom) and columns [left, right) in the strip.
    top: u32,
    bottom: u32,
    left: u32,
    right: u32,
    ink: Vec<bool>,
    char_px: f64,
    length_px: f64,
    ink_centre: (f64, f64),
}

/// Samples a strip about `centre` along the unit vector `along`, 2.4 line
/// heights high and 4 wider than `length`, at [`STRIP_CHAR`] rows a line
/// height (at most [`MAX_LINE_WIDTH`] x 2 wide), and finds the ink in it.
fn level_strip(
    image: &RgbImage,
    centre: (f64, f64),
    along: (f64, f64),
    length: f64,
    height: f64,
) -> Option<Strip> {
    if !(height.is_finite() && length.is_finite()) || height < 1.0 || length < height {
        return None;
    }
    let across = (-along.1, along.0);
    let mut scale = height / STRIP_CHAR;
    let (mut w, h) = ((length + 4.0 * height) / scale, 2.4 * STRIP_CHAR);
    if w > f64::from(MAX_LINE_WIDTH) * 2.0 {
        scale *= w / (f64::from(MAX_LINE_WIDTH) * 2.0);
        w = f64::from(MAX_LINE_WIDTH) * 2.0;
    }
    let h = (h * height / scale / STRIP_CHAR).round().clamp(8.0, 400.0);
    let (w, h) = (w.round().clamp(8.0, 2.0 * f64::from(MAX_LINE_WIDTH)), h);
    let frame = Frame {
        origin: (
            centre.0 - along.0 * scale * (w - 1.0) / 2.0 - across.0 * scale * (h - 1.0) / 2.0,
            centre.1 - along.1 * scale * (w - 1.0) / 2.0 - across.1 * scale * (h - 1.0) / 2.0,
        ),
        ex: (along.0 * scale, along.1 * scale),
        ey: (across.0 * scale, across.1 * scale),
    };
    let k = (scale.ceil() as u32).clamp(1, 3);
    let grey = sample_with(
        |x, y| bilinear_rgb(image, x, y),
        frame,
        w as u32,
        h as u32,
        k,
    );
    Strip::measure(grey, frame, scale)
}

impl Strip {
    fn measure(grey: GrayImage, frame: Frame, scale: f64) -> Option<Strip> {
        let (w, h) = grey.dimensions();
        let threshold = otsu(grey.as_raw());
        let ink: Vec<bool> = grey.as_raw().iter().map(|&p| p <= threshold).collect();
        let row_ink: Vec<u32> = (0..h as usize)
            .map(|y| {
                ink[y * w as usize..(y + 1) * w as usize]
                    .iter()
                    .filter(|&&i| i)
                    .count() as u32
            })
            .collect();
        // The run of inked rows around the middle.
        let peak = row_ink.iter().copied().max().unwrap_or(0);
        if peak == 0 {
            return None;
        }
        let on = |y: usize| row_ink.get(y).is_some_and(|&n| n * 5 >= peak);
        let middle = (h / 2) as usize;
        let seed = (0..h as usize / 4)
            .flat_map(|d| [middle + d, middle.saturating_sub(d)])
            .find(|&y| on(y))?;
        let mut top = seed;
        while top > 0 && on(top - 1) {
            top -= 1;
        }
        let mut bottom = seed + 1;
        while (bottom as u32) < h && on(bottom) {
            bottom += 1;
        }
        let char_px = (bottom - top) as f64;
        // Columns holding ink in those rows; the longest run bridging gaps
        // up to 1.5 characters' height, through the middle.
        let cols: Vec<bool> = (0..w as usize)
            .map(|x| (top..bottom).any(|y| ink[y * w as usize + x]))
            .collect();
        let max_gap = (1.5 * char_px).max(2.0) as usize;
        let (mut best, mut start, mut last) = ((0usize, 0usize), None::<usize>, 0usize);
        for (x, &c) in cols.iter().enumerate() {
            if !c {
                continue;
            }
            match start {
                Some(_) if x - last > max_gap => start = Some(x),
                None => start = Some(x),
                _ => {}
            }
            last = x;
            let s = start.unwrap_or(x);
            if x + 1 - s > best.1 - best.0 {
                best = (s, x + 1);
            }
        }
        let (left, right) = best;
        if right <= left {
            return None;
        }
        Some(Strip {
            grey,
            frame,
            scale,
            top: top as u32,
            bottom: bottom as u32,
            left: left as u32,
            right: right as u32,
            ink,
            char_px,
            length_px: (right - left) as f64,
            ink_centre: (
                (left + right) as f64 / 2.0 - 0.5,
                (top + bottom) as f64 / 2.0 - 0.5,
            ),
        })
    }

    /// Slope of the ink's middle from the line's first fifth to its last.
    fn tilt(&self) -> f64 {
        let w = self.grey.width() as usize;
        let centroid = |from: u32, to: u32| {
            let (mut sum, mut n) = (0.0, 0.0);
            // A tilted line's ink spills over its rows: look a little wider.
            let spill = (self.char_px / 2.0) as u32;
            let (top, bottom) = (
                self.top.saturating_sub(spill),
                (self.bottom + spill).min(self.grey.height()),
            );
            for y in top..bottom {
                for x in from..to {
                    if self.ink.get(y as usize * w + x as usize) == Some(&true) {
                        sum += f64::from(y);
                        n += 1.0;
                    }
                }
            }
            (n > 0.0).then(|| sum / n)
        };
        let fifth = (self.right - self.left) / 5;
        match (
            centroid(self.left, self.left + fifth),
            centroid(self.right - fifth, self.right),
        ) {
            (Some(a), Some(b)) if fifth > 0 => (b - a) / (f64::from(4 * fifth)),
            _ => 0.0,
        }
    }

    /// The line with its margins, scaled to [`LINE_HEIGHT`].
    fn line(&self) -> Option<GrayImage> {
        let (w, h) = self.grey.dimensions();
        let (my, mx) = ((0.35 * self.char_px) as u32, (0.6 * self.char_px) as u32);
        let (x0, y0) = (self.left.saturating_sub(mx), self.top.saturating_sub(my));
        let (x1, y1) = ((self.right + mx).min(w), (self.bottom + my).min(h));
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        let crop = image::imageops::crop_imm(&self.grey, x0, y0, x1 - x0, y1 - y0).to_image();
        let width = (f64::from(x1 - x0) * f64::from(LINE_HEIGHT) / f64::from(y1 - y0))
            .round()
            .clamp(8.0, f64::from(MAX_LINE_WIDTH)) as u32;
        Some(image::imageops::resize(
            &crop,
            width,
            LINE_HEIGHT,
            image::imageops::FilterType::Triangle,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrz::render::{self, Kind};

    fn quad(corners: [(f64, f64); 4]) -> Quad {
        Quad {
            corners,
            frame_share: 0.5,
            aspect: 1.42,
            rectangularity: 1.0,
            framing: crate::document::Framing::Background,
        }
    }

    /// Rows of `line` holding ink over its left and right quarters: a level
    /// line has them at the same height.
    fn ink_rows(line: &GrayImage, from: u32, to: u32) -> (u32, u32) {
        let threshold = otsu(line.as_raw());
        let rows: Vec<u32> = (0..line.height())
            .filter(|&y| {
                (from..to)
                    .filter(|&x| line.get_pixel(x, y).0[0] <= threshold)
                    .count()
                    > 1
            })
            .collect();
        (
            rows.first().copied().unwrap_or(0),
            rows.last().copied().unwrap_or(0),
        )
    }

    fn assert_lines(zone: &Zone, count: usize, chars: usize, what: &str) {
        assert_eq!(zone.lines.len(), count, "{what}: lines");
        for (i, line) in zone.lines.iter().enumerate() {
            assert_eq!(line.height(), LINE_HEIGHT, "{what}: line {i}");
            // Glyphs, roughly: the chevrons and most characters stand apart.
            let runs = render::ink_runs(line);
            assert!(
                runs + 6 >= chars && runs <= chars + 2,
                "{what}: line {i}: {runs} ink runs for {chars} characters"
            );
            let quarter = line.width() / 4;
            let (l, r) = (
                ink_rows(line, 0, quarter),
                ink_rows(line, line.width() - quarter, line.width()),
            );
            assert!(
                l.0.abs_diff(r.0) <= 2 && l.1.abs_diff(r.1) <= 2,
                "{what}: line {i} not level: {l:?} {r:?}"
            );
        }
    }

    #[test]
    fn a_passport_page_filling_the_frame_gives_two_level_lines() {
        let font = render::font();
        let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1200, 1);
        let zone = locate(&render::jpeg(&page, 85), None).expect("zone");
        assert!(!zone.upside_down);
        assert_lines(&zone, 2, 44, "TD3 crop");
        // 2.4 mm characters on a page 1,200 pixels for 125 mm.
        assert!(
            (zone.char_height - 23.0).abs() < 4.0,
            "{}",
            zone.char_height
        );
    }

    #[test]
    fn a_card_on_a_desk_tilted_gives_three_lines_with_or_without_its_outline() {
        let font = render::font();
        let card = render::document(&font, Kind::Td1, render::TD1_SPECIMEN, 1000, 2);
        let mut scene = render::desk(1600, 1200, 2);
        let corners = render::place(&mut scene, &card, (800.0, 620.0), 1100.0, 4.0);
        let scene = render::jpeg(&scene, 85);
        let zone = locate(&scene, Some(&quad(corners))).expect("zone in the outline");
        assert!(!zone.upside_down);
        assert!((zone.skew_degrees).abs() < 1.0, "{}", zone.skew_degrees);
        assert_lines(&zone, 3, 30, "TD1 outlined");
        let zone = locate(&scene, None).expect("zone in the frame");
        assert!(
            (zone.skew_degrees - 4.0).abs() < 0.6,
            "{}",
            zone.skew_degrees
        );
        assert_lines(&zone, 3, 30, "TD1 in the frame");
    }

    #[test]
    fn a_page_upside_down_is_found_and_turned() {
        let font = render::font();
        let page = render::document(&font, Kind::Td3, render::TD3_SPECIMEN, 1100, 3);
        let mut scene = render::desk(1600, 1200, 3);
        let corners = render::place(&mut scene, &page, (800.0, 600.0), 1150.0, 178.0);
        let zone = locate(&scene, Some(&quad(corners))).expect("zone");
        assert!(zone.upside_down);
        assert_lines(&zone, 2, 44, "TD3 upside down");
        // Turned back, the first line is the names line: its fillers (light,
        // thin chevrons) on the right.
        let first = &zone.lines[0];
        let darkness = |from: u32, to: u32| {
            (from..to)
                .flat_map(|x| (0..first.height()).map(move |y| (x, y)))
                .map(|(x, y)| 255 - u32::from(first.get_pixel(x, y).0[0]))
                .sum::<u32>()
        };
        let w = first.width();
        assert!(
            darkness(0, w / 3) > darkness(2 * w / 3, w),
            "names first, fillers last"
        );
    }

    #[test]
    fn nothing_like_a_zone_gives_none_and_nothing_panics() {
        let mut rng = render::Lcg(7);
        let noise = RgbImage::from_fn(700, 500, |_, _| {
            image::Rgb([rng.next() as u8, rng.next() as u8, rng.next() as u8])
        });
        assert!(locate(&noise, None).is_none());
        let plain = RgbImage::from_pixel(900, 600, image::Rgb([230, 230, 230]));
        assert!(locate(&plain, None).is_none());
        for (w, h) in [(1, 1), (15, 400), (4000, 17), (17, 4000)] {
            let _ = locate(&RgbImage::new(w, h), None);
        }
        // Random quads over random rectangles of random sizes.
        for _ in 0..40 {
            let (w, h) = (rng.range(1, 700), rng.range(1, 700));
            let image = RgbImage::from_fn(w, h, |x, y| {
                let v = if (x / 7 + y / 3) % 5 == 0 { 20 } else { 220 };
                image::Rgb([v, v, v])
            });
            let mut corner = || {
                (
                    f64::from(rng.range(0, 1400)) - 350.0,
                    f64::from(rng.range(0, 1400)) - 350.0,
                )
            };
            let corners = [corner(), corner(), corner(), corner()];
            let _ = locate(&image, Some(&quad(corners)));
            let _ = locate(&image, None);
        }
        // Degenerate and absurd outlines.
        let page = RgbImage::from_pixel(300, 200, image::Rgb([200, 200, 200]));
        for corners in [
            [(0.0, 0.0); 4],
            [(f64::NAN, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)],
            [(-1e9, -1e9), (1e9, -1e9), (1e9, 1e9), (-1e9, 1e9)],
            [(10.0, 10.0), (10.0, 190.0), (290.0, 190.0), (290.0, 10.0)],
        ] {
            let _ = locate(&page, Some(&quad(corners)));
        }
    }
}
