//! Sampling the upload through an affine frame: the shrunk grey copy, and
//! the working copies and line strips read from it or the upload bilinearly.

use image::{GrayImage, Luma, RgbImage};

/// An affine frame: upload coordinates of a working copy's pixel centres.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    /// Upload position of the copy's pixel (0, 0).
    pub(super) origin: (f64, f64),
    /// Upload displacement of one pixel along the copy's x and y.
    pub(super) ex: (f64, f64),
    pub(super) ey: (f64, f64),
}

impl Frame {
    pub(super) fn at(&self, x: f64, y: f64) -> (f64, f64) {
        (
            self.origin.0 + x * self.ex.0 + y * self.ey.0,
            self.origin.1 + x * self.ex.1 + y * self.ey.1,
        )
    }
}

/// Luminance of the region [x0, x1) x [y0, y1) of `image` (within it)
/// shrunk by a whole `factor`: block means, partial blocks at the ends
/// averaged over what they hold.
pub(super) fn grey_shrunk(
    image: &RgbImage,
    factor: u32,
    (x0, y0, x1, y1): (u32, u32, u32, u32),
) -> GrayImage {
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
pub(super) fn bilinear_rgb(image: &RgbImage, x: f64, y: f64) -> f64 {
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
pub(super) fn sample_grey(image: &GrayImage, frame: Frame, w: u32, h: u32, k: u32) -> GrayImage {
    sample_with(|x, y| bilinear(image, x, y), frame, w, h, k)
}

pub(super) fn sample_with(
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
