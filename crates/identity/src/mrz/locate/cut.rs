//! Each line of the zone cut out level from the full-resolution upload (step
//! 6): tightened to its ink, levelled again if it still tilts, and scaled
//! for the recogniser.

use image::{GrayImage, RgbImage};

use super::bands::Band;
use super::sample::{bilinear_rgb, sample_with, Frame};
use super::{LINE_HEIGHT, MAX_LINE_WIDTH};

/// Otsu's threshold of `pixels`.
pub(super) fn otsu(pixels: &[u8]) -> u8 {
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
pub(super) fn cut_line(
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
