//! Image quality: can a person (or a later check) read this document?
//!
//! Every measure is taken on the document's region when one was found (else
//! the whole frame), scaled to a fixed width, so figures compare across
//! uploads of any size: sharpness as the variance of the Laplacian, exposure
//! as mean luminance, contrast as its standard deviation, glare as the share of
//! blown-out pixels, colour as the mean chroma (a photocopy has none).

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
    /// Share of pixels blown out to white (luminance at least 250, no colour).
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
    let (mut blown, mut chroma) = (0usize, 0.0);
    for p in scaled.pixels() {
        let [r, g, b] = p.0;
        let spread = r.max(g).max(b) - r.min(g).min(b);
        chroma += f64::from(spread);
        if r.min(g).min(b) >= 245 && spread <= 12 {
            blown += 1;
        }
    }
    Quality {
        sharpness: laplacian_variance(&luma, WORK_WIDTH as usize, work_h as usize),
        brightness,
        contrast,
        glare_share: blown as f64 / n,
        colourfulness: chroma / n,
    }
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
