//! Image quality: can a person (or a later check) read this document?
//!
//! Every measure is taken on the document's region when one was found (else
//! the whole frame), scaled to a fixed width, so figures compare across
//! uploads of any size: sharpness as the variance of the Laplacian, exposure
//! as mean luminance, contrast as its standard deviation, glare as the share of
//! blown-out pixels in highlights, colour as the mean chroma (a photocopy has
//! none).
//!
//! Glare is a specular highlight: a blob blown out to white inside the
//! document. White paper is blown out too on a scan, around and between the
//! printing, but it runs into the region's edge (the page's margin, or the
//! paper the region's corners take in), or, inside a document's frame, holds
//! the printing: the letters and lines on it are holes in the blob, where a
//! highlight hides what is under it and has next to none. So blown-out
//! pixels count only in blobs that stay clear of the region's edge, unless
//! the region's edge is itself hardly blown out (a coloured document, where a
//! highlight reaching its edge is still a highlight), that are solid (at
//! most [`MAX_HOLE_SHARE`] of them holes), that fade out into a bright
//! halo as light does ([`MIN_HALO_LUMA`]), and of some size (a highlight
//! hides a field; the white of an eye in the portrait does not). Real
//! pictures taught the holes and the halo: white paper inside a card's or a
//! page's frame (ICAO's specimen page, a German card's white ground) read as
//! 5 to 68% glare before, and a portrait's white ground as 2 to 4%
//! (tests/tests/e2e/identity_real.rs).
//!
//! Exposure and colour are judged on what a retake could change: a white
//! document is bright on average, but its printing keeps its contrast, so
//! an image is overexposed only when it is washed out too (the verdict reads
//! the contrast; [`Quality::dark_level`], the printing's level, is reported
//! beside it and told white documents from overexposure less well on real
//! pictures); a document printed in muted colours has little chroma on
//! average, but its portrait or emblem has some, where a photocopy or a grey
//! scan has none anywhere ([`Quality::colour_share`]).

use image::RgbImage;

/// Width the region is scaled to before measuring.
pub const WORK_WIDTH: u32 = 640;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quality {
    /// Variance of the 4-neighbour Laplacian of luminance (low: blurred).
    pub sharpness: f64,
    /// Mean luminance, 0 to 255.
    pub brightness: f64,
    /// Standard deviation of luminance.
    pub contrast: f64,
    /// Share of pixels blown out to white (every channel at least 245, no
    /// colour) in highlights (see the module's doc).
    pub glare_share: f64,
    /// Mean of max(R, G, B) - min(R, G, B), 0 to 255.
    pub colourfulness: f64,
    /// Luminance level (whole) under which the darkest 5% lie: the
    /// printing's level, reported; exposure is judged by the contrast.
    pub dark_level: f64,
    /// Share of pixels in colour (max(R, G, B) - min(R, G, B) at least
    /// [`COLOUR_SPREAD`]): none on a photocopy or a grey scan, some on any
    /// document printed in colour, however muted.
    pub colour_share: f64,
}

/// Channel spread from which a pixel is in colour: above what JPEG's
/// chroma noise gives a grey image.
pub const COLOUR_SPREAD: u8 = 24;

/// Measures `region` (any size).
pub fn measure(region: &RgbImage) -> Quality {
    let scaled = if region.width() == WORK_WIDTH {
        std::borrow::Cow::Borrowed(region)
    } else {
        std::borrow::Cow::Owned(crate::to_width(region, WORK_WIDTH))
    };
    let work_h = scaled.height();
    let n = f64::from(WORK_WIDTH) * f64::from(work_h);
    let luma: Vec<f64> = scaled
        .pixels()
        .map(|p| {
            let [r, g, b] = p.0.map(f64::from);
            0.299 * r + 0.587 * g + 0.114 * b
        })
        .collect();
    let brightness = luma.iter().sum::<f64>() / n;
    let contrast = (luma.iter().map(|l| (l - brightness).powi(2)).sum::<f64>() / n).sqrt();
    let mut chroma = 0.0;
    let mut coloured = 0usize;
    let blown = image::GrayImage::from_fn(scaled.width(), work_h, |x, y| {
        let [r, g, b] = scaled.get_pixel(x, y).0;
        let spread = r.max(g).max(b) - r.min(g).min(b);
        chroma += f64::from(spread);
        coloured += usize::from(spread >= COLOUR_SPREAD);
        image::Luma([if r.min(g).min(b) >= 245 && spread <= 12 {
            255
        } else {
            0
        }])
    });
    Quality {
        sharpness: laplacian_variance(&luma, WORK_WIDTH as usize, work_h as usize),
        brightness,
        contrast,
        glare_share: highlights(&blown, &luma) as f64 / n,
        colourfulness: chroma / n,
        dark_level: percentile(&luma, 0.05),
        colour_share: coloured as f64 / n,
    }
}

/// The luminance level (whole, 0 to 255) that `share` of `luma` lie at or
/// under: from a histogram, in one pass and without a copy.
fn percentile(luma: &[f64], share: f64) -> f64 {
    let mut histogram = [0usize; 256];
    for &l in luma {
        histogram[l.clamp(0.0, 255.0) as usize] += 1;
    }
    let wanted = (luma.len() as f64 * share).ceil().max(1.0) as usize;
    let mut seen = 0;
    for (level, &count) in histogram.iter().enumerate() {
        seen += count;
        if seen >= wanted {
            return level as f64;
        }
    }
    0.0
}

/// Smallest highlight counted, as a share of the region.
const MIN_HIGHLIGHT_SHARE: f64 = 0.001;
/// Share of the region's edge blown out under which the document is not on
/// (or made of) white paper, so a blob reaching the edge counts too.
const WHITE_EDGE_SHARE: f64 = 0.1;
/// Most of a highlight (with its holes filled) that may be holes: the
/// synthetic highlights have none, white paper holding print 10% and more.
pub const MAX_HOLE_SHARE: f64 = 0.03;

/// Pixels of `blown` (white where blown out) in highlights: solid blobs at
/// least [`MIN_HIGHLIGHT_SHARE`] of the region, clear of its edge unless its
/// edge is hardly blown out.
fn highlights(blown: &image::GrayImage, luma: &[f64]) -> usize {
    use imageproc::region_labelling::{connected_components, Connectivity};
    let (w, h) = blown.dimensions();
    if w == 0 || h == 0 {
        return 0;
    }
    let on_edge = |x: u32, y: u32| x == 0 || y == 0 || x + 1 == w || y + 1 == h;
    let labels = connected_components(blown, Connectivity::Eight, image::Luma([0u8]));
    let (mut edge_pixels, mut edge_blown) = (0usize, 0usize);
    // Per blob: its size, whether it reaches the edge, and its bounds.
    let mut blobs: std::collections::HashMap<u32, Blob> = std::collections::HashMap::new();
    for (x, y, label) in labels.enumerate_pixels() {
        let label = label.0[0];
        let edge = on_edge(x, y);
        if edge {
            edge_pixels += 1;
        }
        if label == 0 {
            continue;
        }
        edge_blown += usize::from(edge);
        let blob = blobs.entry(label).or_insert(Blob {
            size: 0,
            reaches_edge: false,
            bounds: (x, y, x, y),
        });
        blob.size += 1;
        blob.reaches_edge |= edge;
        let b = &mut blob.bounds;
        *b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
    }
    let white_edge = edge_blown as f64 >= WHITE_EDGE_SHARE * edge_pixels as f64;
    let min = (MIN_HIGHLIGHT_SHARE * f64::from(w) * f64::from(h)) as usize;
    let candidates: Vec<(u32, &Blob)> = blobs
        .iter()
        .filter(|(_, blob)| blob.size >= min && !(white_edge && blob.reaches_edge))
        .map(|(&label, blob)| (label, blob))
        .collect();
    if candidates.is_empty() {
        // Most photos: no blob big enough; the holes' labelling is skipped.
        return 0;
    }
    let holes = holes_by_blob(blown, &labels);
    candidates
        .into_iter()
        .filter(|(label, blob)| {
            let holes = holes.get(label).copied().unwrap_or(0);
            (holes as f64) <= MAX_HOLE_SHARE * (blob.size + holes) as f64
                && halo(&labels, *label, blob.bounds, luma) >= MIN_HALO_LUMA
        })
        .map(|(_, blob)| blob.size)
        .sum()
}

/// A blob of blown-out pixels.
struct Blob {
    size: usize,
    reaches_edge: bool,
    /// Smallest and largest x and y.
    bounds: (u32, u32, u32, u32),
}

/// Width of the ring around a blob whose luminance tells a highlight's halo.
const HALO_PIXELS: u32 = 3;
/// Mean luminance of that ring from which the blob fades out as a
/// highlight does (its light falls off gradually onto the document), where
/// white print or a portrait's white ground ends sharply at what is beside
/// it: the synthetic highlights' rings are 235 to 238, the white grounds and
/// patches of a New York licence 197 to 231 (all but one under 225).
pub const MIN_HALO_LUMA: f64 = 225.0;

/// Mean luminance of the pixels within [`HALO_PIXELS`] of blob `label` (and
/// not in it): the blob's box, widened by the ring, dilated by a sliding
/// count along rows then columns, so the cost is the box's size whatever the
/// blob's shape.
fn halo(
    labels: &image::ImageBuffer<image::Luma<u32>, Vec<u32>>,
    label: u32,
    (x0, y0, x1, y1): (u32, u32, u32, u32),
    luma: &[f64],
) -> f64 {
    let (w, h) = labels.dimensions();
    let r = HALO_PIXELS as usize;
    let (bx, by) = (
        x0.saturating_sub(HALO_PIXELS),
        y0.saturating_sub(HALO_PIXELS),
    );
    let (ex, ey) = ((x1 + HALO_PIXELS).min(w - 1), (y1 + HALO_PIXELS).min(h - 1));
    let (bw, bh) = ((ex - bx + 1) as usize, (ey - by + 1) as usize);
    let inside: Vec<bool> = (0..bw * bh)
        .map(|i| {
            labels
                .get_pixel(bx + (i % bw) as u32, by + (i / bw) as u32)
                .0[0]
                == label
        })
        .collect();
    // Within r of the blob along the row, then within r of that along the column.
    let mut along_row = vec![false; bw * bh];
    for y in 0..bh {
        let row = &inside[y * bw..(y + 1) * bw];
        let mut count = row[..r.min(bw)].iter().filter(|&&b| b).count();
        for x in 0..bw {
            if x + r < bw && row[x + r] {
                count += 1;
            }
            along_row[y * bw + x] = count > 0;
            if x >= r && row[x - r] {
                count -= 1;
            }
        }
    }
    let (mut sum, mut ring) = (0.0, 0usize);
    for x in 0..bw {
        let mut count = (0..r.min(bh)).filter(|&y| along_row[y * bw + x]).count();
        for y in 0..bh {
            if y + r < bh && along_row[(y + r) * bw + x] {
                count += 1;
            }
            if count > 0 && !inside[y * bw + x] {
                sum += luma[(by as usize + y) * w as usize + bx as usize + x];
                ring += 1;
            }
            if y >= r && along_row[(y - r) * bw + x] {
                count -= 1;
            }
        }
    }
    if ring == 0 {
        255.0
    } else {
        sum / ring as f64
    }
}

/// For each blob of `labels` (blown-out pixels, 8-connected), the pixels of
/// the holes in it: the 4-connected parts of the rest that stay clear of the
/// image's edge, each given to the blob beside it.
fn holes_by_blob(
    blown: &image::GrayImage,
    labels: &image::ImageBuffer<image::Luma<u32>, Vec<u32>>,
) -> std::collections::HashMap<u32, usize> {
    use imageproc::region_labelling::{connected_components, Connectivity};
    let (w, h) = blown.dimensions();
    let rest =
        image::GrayImage::from_fn(w, h, |x, y| image::Luma([255 - blown.get_pixel(x, y).0[0]]));
    let parts = connected_components(&rest, Connectivity::Four, image::Luma([0u8]));
    // Per part: its size, whether it reaches the edge, and a blob beside it.
    let mut found: std::collections::HashMap<u32, (usize, bool, u32)> =
        std::collections::HashMap::new();
    for (x, y, part) in parts.enumerate_pixels() {
        let part = part.0[0];
        if part == 0 {
            continue;
        }
        let entry = found.entry(part).or_insert((0, false, 0));
        entry.0 += 1;
        entry.1 |= x == 0 || y == 0 || x + 1 == w || y + 1 == h;
        if entry.2 == 0 && x > 0 {
            entry.2 = labels.get_pixel(x - 1, y).0[0];
        }
    }
    let mut holes = std::collections::HashMap::new();
    for (size, reaches_edge, blob) in found.into_values() {
        if !reaches_edge && blob != 0 {
            *holes.entry(blob).or_insert(0) += size;
        }
    }
    holes
}

fn laplacian_variance(luma: &[f64], w: usize, h: usize) -> f64 {
    if w < 3 || h < 3 {
        return 0.0;
    }
    let mut values = Vec::with_capacity((w - 2) * (h - 2));
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            values.push(luma[i - 1] + luma[i + 1] + luma[i - w] + luma[i + w] - 4.0 * luma[i]);
        }
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    /// A region of `base` with dark "printing" bands reaching its edges and a
    /// highlight of `radius` at (cx, cy): blown out, fading over as many
    /// pixels again onto what is under it, as light does; with `sharp`, a
    /// white disc that ends at once (a portrait's white ground).
    fn lit(base: [u8; 3], cx: u32, cy: u32, radius: u32, sharp: bool) -> RgbImage {
        RgbImage::from_fn(WORK_WIDTH, 400, |x, y| {
            let (dx, dy) = (f64::from(x) - f64::from(cx), f64::from(y) - f64::from(cy));
            let under = if y % 40 < 8 { [30, 30, 40] } else { base };
            let r = f64::from(radius);
            let t = if sharp {
                f64::from(u8::from(dx.hypot(dy) < r))
            } else {
                (2.0 - dx.hypot(dy) / r).clamp(0.0, 1.0)
            };
            Rgb(under.map(|c| (f64::from(c) * (1.0 - t) + 255.0 * t) as u8))
        })
    }

    fn region(base: [u8; 3], cx: u32, cy: u32, radius: u32) -> RgbImage {
        lit(base, cx, cy, radius, false)
    }

    #[test]
    fn glare_is_a_highlight_not_white_paper() {
        let pastel = [210, 220, 230];
        let white = [255, 255, 255];
        // A highlight inside a coloured document, and reaching its edge.
        assert!(measure(&region(pastel, 320, 200, 60)).glare_share > 0.02);
        assert!(measure(&region(pastel, 0, 200, 60)).glare_share > 0.01);
        // A white document (or the paper of a scan) between its printing:
        // no glare, even with a "highlight" that is only more of the paper.
        assert_eq!(measure(&region(white, 320, 200, 60)).glare_share, 0.0);
        // Specks (the white of an eye) are no highlight.
        assert_eq!(measure(&region(pastel, 320, 200, 5)).glare_share, 0.0);
        // A white patch that ends sharply (a portrait's white ground) is print.
        assert_eq!(measure(&lit(pastel, 320, 200, 60, true)).glare_share, 0.0);
    }

    /// White paper inside a printed frame (a page's border, a card's
    /// coloured rim), holding lines of "print": one blob clear of the edge.
    fn framed_page(highlight: bool) -> RgbImage {
        RgbImage::from_fn(WORK_WIDTH, 400, |x, y| {
            let frame = x < 12 || y < 12 || x >= WORK_WIDTH - 12 || y >= 388;
            let print = y % 24 < 5 && (40..600).contains(&x) && x % 9 < 6;
            let (dx, dy) = (f64::from(x) - 320.0, f64::from(y) - 200.0);
            if frame {
                Rgb([120, 60, 40])
            } else if highlight && dx.hypot(dy) < 70.0 {
                Rgb([255, 255, 255])
            } else if print {
                Rgb([20, 20, 30])
            } else {
                Rgb([252, 252, 250])
            }
        })
    }

    #[test]
    fn white_paper_holding_print_is_no_highlight() {
        let page = measure(&framed_page(false));
        assert_eq!(page.glare_share, 0.0, "{page:?}");
        // Print is a hole in the paper; a highlight washes it out: still no
        // highlight apart from the paper, which it joins.
        assert_eq!(measure(&framed_page(true)).glare_share, 0.0);
    }

    #[test]
    fn the_printing_keeps_its_level_and_colour_shows_in_a_few_pixels() {
        let page = measure(&framed_page(false));
        assert!(page.dark_level < 40.0, "{page:?}");
        // The frame is in colour: about 9% of the page.
        assert!(page.colour_share > 0.05, "{page:?}");
        let grey = image::imageops::grayscale(&framed_page(false));
        let grey = RgbImage::from_fn(WORK_WIDTH, 400, |x, y| {
            let v = grey.get_pixel(x, y).0[0];
            Rgb([v, v, v])
        });
        assert_eq!(measure(&grey).colour_share, 0.0);
    }
}
