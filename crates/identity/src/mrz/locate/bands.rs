//! Text lines in the working copy (steps 2 to 4): ink edges, the skew, bands
//! of rows dense with edges, and the group of bands that is the zone.

use image::GrayImage;

use super::MAX_SKEW_DEGREES;

/// A band's run of columns over its height: a 30-character line is about 31
/// times as long as high, a 44-character one 46.
const MIN_LINE_ASPECT: f64 = 18.0;
const MAX_LINE_ASPECT: f64 = 70.0;

/// Points (x, y) of strong horizontal gradient: the sides of glyphs' strokes.
pub(super) fn ink_edges(work: &GrayImage) -> Vec<(u32, u32)> {
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
pub(super) fn skew(edges: &[(u32, u32)], width: u32) -> f64 {
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
pub(super) struct Band {
    /// Sheared rows [top, bottom) in the working copy (before the offset is taken off).
    pub(super) top: f64,
    pub(super) bottom: f64,
    /// Columns of its longest run.
    pub(super) left: f64,
    pub(super) right: f64,
}

impl Band {
    pub(super) fn height(&self) -> f64 {
        self.bottom - self.top
    }
    pub(super) fn length(&self) -> f64 {
        self.right - self.left
    }
    /// The band's middle row at the middle column.
    pub(super) fn centre_row(&self) -> f64 {
        (self.top + self.bottom) / 2.0
    }
}

/// Bands of rows dense with edges at slope `t`, at three density thresholds
/// (a textured background can join lines at the lowest), each with its
/// longest run of columns.
pub(super) fn bands(edges: &[(u32, u32)], width: u32, height: u32, t: f64) -> Vec<Band> {
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
pub(super) fn zone_group(bands: &[Band], height: u32, outlined: bool) -> Option<Vec<Band>> {
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
