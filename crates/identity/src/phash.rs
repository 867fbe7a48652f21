//! The perceptual hash that finds the same picture submitted again.
//!
//! A 256-bit DCT hash (pHash, 16x16 lowest frequencies against their median)
//! of the document's region, or of the whole frame when no document was found.
//! Hashing the document rather than the frame makes a crop of the margins or a
//! new background around the same picture of the document change few bits,
//! while the portrait and text of a different document of the same design
//! change many (measured in the tests: the same picture re-encoded, resized
//! or cropped differs by at most a few bits; different cards by 28 or more).
//! Two hashes within [`DUPLICATE_DISTANCE`] bits are the same picture.
//!
//! Lookup among many stored hashes is multi-index hashing: the hash is cut
//! into [`BANDS`] 16-bit bands, and an index of (band number, band value)
//! pairs answers "which stored hashes share a band" with 16 exact probes; only
//! those few are compared bit by bit. Two hashes within 15 bits always share a
//! band (pigeonhole). Within [`DUPLICATE_DISTANCE`] (24) they nearly always
//! do: 24 differing bits spread over 16 bands leave on average 3.4 bands
//! untouched, and the test below finds more than 97 in 100.

use image::RgbImage;
use image_hasher::{HashAlg, HasherConfig};

/// Bytes of a hash.
pub const HASH_BYTES: usize = 32;
/// 16-bit bands of a hash.
pub const BANDS: usize = HASH_BYTES / 2;
/// Hashes this close (in differing bits of 256) are the same picture.
pub const DUPLICATE_DISTANCE: u32 = 24;

pub type Hash = [u8; HASH_BYTES];

/// The perceptual hash of `image`.
pub fn hash(image: &RgbImage) -> Hash {
    // The hasher shrinks to a few dozen pixels; a quick shrink first keeps that cheap.
    let small = crate::to_width(image, image.width().clamp(1, 128));
    let hasher = HasherConfig::new()
        .hash_alg(HashAlg::Median)
        .preproc_dct()
        .hash_size(16, 16)
        .to_hasher();
    let bytes = hasher.hash_image(&image::DynamicImage::ImageRgb8(small));
    let mut out = [0u8; HASH_BYTES];
    for (o, b) in out.iter_mut().zip(bytes.as_bytes()) {
        *o = *b;
    }
    out
}

/// Differing bits.
pub fn distance(a: &Hash, b: &Hash) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// The index keys of a hash: band number in the high 16 bits, band value in the low.
pub fn band_keys(hash: &Hash) -> [i32; BANDS] {
    let mut keys = [0i32; BANDS];
    for (i, key) in keys.iter_mut().enumerate() {
        let value = u16::from_be_bytes([hash[2 * i], hash[2 * i + 1]]);
        *key = ((i as i32) << 16) | i32::from(value);
    }
    keys
}

pub fn to_hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `base` with `flips` distinct random bits flipped.
    fn flipped(base: &Hash, flips: u32, state: &mut u64) -> Hash {
        let mut other = *base;
        while distance(base, &other) < flips {
            *state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let bit = (*state >> 56) as usize;
            // Flip a bit that still equals the base's, so flips are distinct.
            let mask = 1 << (bit % 8);
            if (other[bit / 8] ^ base[bit / 8]) & mask == 0 {
                other[bit / 8] ^= mask;
            }
        }
        other
    }

    fn share_a_band(a: &Hash, b: &Hash) -> bool {
        let keys = band_keys(a);
        band_keys(b).iter().any(|k| keys.contains(k))
    }

    #[test]
    fn hashes_within_15_bits_always_share_a_band_and_within_24_nearly_always() {
        let base: Hash = core::array::from_fn(|i| (i as u8).wrapping_mul(37));
        let mut state = 7u64;
        for _ in 0..2000 {
            assert!(share_a_band(&base, &flipped(&base, 15, &mut state)));
        }
        let tries = 10_000;
        let found = (0..tries)
            .filter(|_| share_a_band(&base, &flipped(&base, DUPLICATE_DISTANCE, &mut state)))
            .count();
        println!("{found} of {tries} share a band");
        assert!(found * 100 >= tries * 97, "{found} of {tries}");
    }
}
