//! Hash sets and maps keyed by element id, for the visited sets and maps
//! every search, repair and check keeps: ids are slot addresses, not
//! attacker-chosen keys, so a fast hasher serves where SipHash would cost.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A fast, non-cryptographic hasher for visited sets (ids are not
/// attacker-chosen in a way that matters: they are slot addresses).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Final avalanche so that the low bits HashMap uses are well mixed.
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^ (z >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

pub(crate) type IdSet<I> = HashSet<I, BuildHasherDefault<IdHasher>>;
pub(crate) type IdMap<I, V> = HashMap<I, V, BuildHasherDefault<IdHasher>>;
