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
//! paper the region's corners take in); so blown-out pixels count only in
//! blobs that stay clear of the region's edge, unless the region's edge is
//! itself hardly blown out (a coloured document, where a highlight reaching
//! its edge is still a highlight), and only in blobs of some size (a
//! highlight hides a field; the white of an eye in the portrait does not).

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
}

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
    let blown = image::GrayImage::from_fn(scaled.width(), work_h, |x, y| {
        let [r, g, b] = scaled.get_pixel(x, y).0;
        let spread = r.max(g).max(b) - r.min(g).min(b);
        chroma += f64::from(spread);
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
        glare_share: highlights(&blown) as f64 / n,
        colourfulness: chroma / n,
    }
}

/// Smallest highlight counted, as a share of the region.
const MIN_HIGHLIGHT_SHARE: f64 = 0.001;
/// Share of the region's edge blown out under which the document is not on
/// (or made of) white paper, so a blob reaching the edge counts too.
const WHITE_EDGE_SHARE: f64 = 0.1;

/// Pixels of `blown` (white where blown out) in highlights: blobs at least
/// [`MIN_HIGHLIGHT_SHARE`] of the region, clear of its edge unless its edge
/// is hardly blown out.
fn highlights(blown: &image::GrayImage) -> usize {
    use imageproc::region_labelling::{connected_components, Connectivity};
    let (w, h) = blown.dimensions();
    if w == 0 || h == 0 {
        return 0;
    }
    let on_edge = |x: u32, y: u32| x == 0 || y == 0 || x + 1 == w || y + 1 == h;
    let labels = connected_components(blown, Connectivity::Eight, image::Luma([0u8]));
    let (mut edge_pixels, mut edge_blown) = (0usize, 0usize);
    // Per blob: its size and whether it reaches the edge.
    let mut blobs: std::collections::HashMap<u32, (usize, bool)> = std::collections::HashMap::new();
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
        let blob = blobs.entry(label).or_insert((0, false));
        blob.0 += 1;
        blob.1 |= edge;
    }
    let white_edge = edge_blown as f64 >= WHITE_EDGE_SHARE * edge_pixels as f64;
    let min = (MIN_HIGHLIGHT_SHARE * f64::from(w) * f64::from(h)) as usize;
    blobs
        .values()
        .filter(|(size, reaches_edge)| *size >= min && !(white_edge && *reaches_edge))
        .map(|(size, _)| size)
        .sum()
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
    /// blown-out disc of `radius` at (cx, cy).
    fn region(base: [u8; 3], cx: u32, cy: u32, radius: u32) -> RgbImage {
        RgbImage::from_fn(WORK_WIDTH, 400, |x, y| {
            let (dx, dy) = (f64::from(x) - f64::from(cx), f64::from(y) - f64::from(cy));
            if dx.hypot(dy) < f64::from(radius) {
                Rgb([255, 255, 255])
            } else if y % 40 < 8 {
                Rgb([30, 30, 40])
            } else {
                Rgb(base)
            }
        })
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
    }
}
