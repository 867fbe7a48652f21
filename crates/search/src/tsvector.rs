//! Reading PostgreSQL's `tsvector` as stored (src/include/tsearch/ts_type.h).
//!
//! After the varlena header: an `int32` entry count, then one 32-bit
//! `WordEntry` per lexeme (bit 0 `haspos`, bits 1..12 the lexeme's length,
//! bits 12..32 its offset in the string area), then the string area. A
//! lexeme with positions is followed, at the next even offset, by a `uint16`
//! count and that many `uint16` positions. Lexemes are sorted by bytes,
//! shorter first on a shared prefix, so a lexeme is found by binary search.
//!
//! Everything is bounds-checked: a malformed value is an error, never a panic.

use std::cmp::Ordering;

/// A `tsvector` value, borrowed from its bytes after the varlena header.
#[derive(Debug, Clone, Copy)]
pub struct TsVector<'a> {
    entries: &'a [u8],
    strings: &'a [u8],
}

/// One lexeme and how often it occurs (its positions; 0 when stored without).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub lexeme: &'a [u8],
    pub positions: u16,
}

/// The bytes are not a `tsvector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl<'a> TsVector<'a> {
    /// Reads `data`: a `tsvector` without its varlena header, in native byte order.
    pub fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let count = data
            .get(..4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or(Malformed("shorter than its header"))?;
        let count = usize::try_from(count).map_err(|_| Malformed("negative size"))?;
        let end = count
            .checked_mul(4)
            .and_then(|n| n.checked_add(4))
            .filter(|&end| end <= data.len())
            .ok_or(Malformed("entries past the end"))?;
        Ok(TsVector {
            entries: &data[4..end],
            strings: &data[end..],
        })
    }

    /// Number of lexemes.
    pub fn len(&self) -> usize {
        self.entries.len() / 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `i`-th lexeme, `i < len()`.
    pub fn entry(&self, i: usize) -> Result<Entry<'a>, Malformed> {
        let b = &self.entries[i * 4..i * 4 + 4];
        let word = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let has_positions = word & 1 == 1;
        let len = ((word >> 1) & 0x7ff) as usize;
        let offset = (word >> 12) as usize;
        let lexeme = self
            .strings
            .get(offset..offset + len)
            .ok_or(Malformed("lexeme past the end"))?;
        let positions = if has_positions {
            // The position vector starts at the next even offset.
            let at = (offset + len + 1) & !1;
            let b = self
                .strings
                .get(at..at + 2)
                .ok_or(Malformed("positions past the end"))?;
            let count = u16::from_ne_bytes([b[0], b[1]]);
            if self.strings.len() < at + 2 + 2 * usize::from(count) {
                return Err(Malformed("positions past the end"));
            }
            count
        } else {
            0
        };
        Ok(Entry { lexeme, positions })
    }

    /// The entry of `lexeme`, if present.
    pub fn find(&self, lexeme: &[u8]) -> Result<Option<Entry<'a>>, Malformed> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let entry = self.entry(mid)?;
            // Lexemes are sorted by bytes, shorter first on a shared prefix: slice order.
            match entry.lexeme.cmp(lexeme) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Some(entry)),
            }
        }
        Ok(None)
    }

    /// Tokens the document had: the sum of all positions. Lexemes stored
    /// without positions (the exact tokens, which repeat words already
    /// counted) add nothing.
    pub fn token_count(&self) -> Result<u32, Malformed> {
        (0..self.len()).try_fold(0u32, |sum, i| {
            Ok(sum.saturating_add(u32::from(self.entry(i)?.positions)))
        })
    }
}

/// Builds `tsvector` bytes (without varlena header), for tests:
/// `(lexeme, positions)` sorted as Postgres sorts.
#[cfg(test)]
pub(crate) fn encode(lexemes: &[(&str, u16)]) -> Vec<u8> {
    let mut sorted: Vec<(&str, u16)> = lexemes.to_vec();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut strings = Vec::new();
    let mut entries = Vec::new();
    for (lexeme, positions) in sorted {
        let offset = strings.len() as u32;
        strings.extend_from_slice(lexeme.as_bytes());
        let mut word = ((lexeme.len() as u32) << 1) | (offset << 12);
        if positions > 0 {
            word |= 1;
            if strings.len() % 2 == 1 {
                strings.push(0);
            }
            strings.extend_from_slice(&positions.to_ne_bytes());
            for p in 1..=positions {
                strings.extend_from_slice(&p.to_ne_bytes());
            }
        }
        entries.extend_from_slice(&word.to_ne_bytes());
    }
    let mut data = ((entries.len() / 4) as i32).to_ne_bytes().to_vec();
    data.extend(entries);
    data.extend(strings);
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lexemes_and_their_frequencies() {
        let data = encode(&[("cat", 2), ("dog", 1), ("xk-42", 0), ("ca", 3)]);
        let v = TsVector::parse(&data).unwrap();
        assert_eq!(v.len(), 4);
        let tf = |l: &str| v.find(l.as_bytes()).unwrap().map(|e| e.positions);
        assert_eq!(tf("cat"), Some(2));
        assert_eq!(tf("ca"), Some(3));
        assert_eq!(tf("dog"), Some(1));
        assert_eq!(tf("xk-42"), Some(0));
        assert_eq!(tf("cow"), None);
        assert_eq!(v.token_count(), Ok(6));
    }

    #[test]
    fn an_empty_vector_has_nothing() {
        let data = encode(&[]);
        let v = TsVector::parse(&data).unwrap();
        assert!(v.is_empty());
        assert_eq!(v.find(b"a"), Ok(None));
    }

    #[test]
    fn malformed_bytes_are_errors_not_panics() {
        assert!(TsVector::parse(&[1, 0]).is_err());
        assert!(TsVector::parse(&(-1i32).to_ne_bytes()).is_err());
        assert!(TsVector::parse(&5i32.to_ne_bytes()).is_err());
        let mut data = encode(&[("cat", 2)]);
        data.truncate(data.len() - 3);
        let v = TsVector::parse(&data).unwrap();
        assert!(v.find(b"cat").is_err());
        // Truncate every possible way: never a panic.
        let full = encode(&[("a", 1), ("bb", 0), ("ccc", 5)]);
        for cut in 0..full.len() {
            if let Ok(v) = TsVector::parse(&full[..cut]) {
                let _ = v.token_count();
                let _ = v.find(b"bb");
            }
        }
    }
}
