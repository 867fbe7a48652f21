//! Element items: one per indexed heap row, its header (level, flags, heap
//! row, where its neighbour item is), the code in layout version 3, then the
//! vector as the index's [`Encoding`] holds it.

use vigil_hnsw::codes::{Code, Directions, CODE_BYTES};
use vigil_hnsw::distance::{unit_halves, widen_halves};

use crate::encoding::Encoding;
use crate::layout::{CODE_AT, ELEMENT_HEADER, FLAG_DELETED, FLAG_REMOVED, KEY_BYTES, KIND_ELEMENT};
use crate::tid::Tid;

/// The fixed part of an element item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementHeader {
    pub level: u8,
    pub flags: u8,
    pub heap: Tid,
    pub neighbours: Tid,
}

pub fn element_size(dims: usize, encoding: Encoding) -> usize {
    encoding.vector_at() + encoding.bytes_per_dim() * dims
}

impl ElementHeader {
    pub fn deleted(&self) -> bool {
        self.flags & (FLAG_DELETED | FLAG_REMOVED) != 0
    }

    pub fn removed(&self) -> bool {
        self.flags & FLAG_REMOVED != 0
    }

    pub fn decode(item: &[u8]) -> Result<ElementHeader, String> {
        if item.len() < ELEMENT_HEADER || item[0] != KIND_ELEMENT {
            return Err("item is not an element".into());
        }
        Ok(ElementHeader {
            level: item[1],
            flags: item[2],
            heap: Tid::read(&item[4..10]),
            neighbours: Tid {
                block: u32::from_ne_bytes([item[12], item[13], item[14], item[15]]),
                offset: u16::from_ne_bytes([item[10], item[11]]),
            },
        })
    }

    /// Writes the header into the first 16 bytes of `item`.
    pub fn encode(&self, item: &mut [u8]) {
        item[0] = KIND_ELEMENT;
        item[1] = self.level;
        item[2] = self.flags;
        item[3] = 0;
        self.heap.write(&mut item[4..10]);
        item[10..12].copy_from_slice(&self.neighbours.offset.to_ne_bytes());
        item[12..16].copy_from_slice(&self.neighbours.block.to_ne_bytes());
    }
}

/// Builds a whole element item.
pub fn encode_element(header: &ElementHeader, vector: &[f32], encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::F32 => {
            let mut item = vec![0u8; element_size(vector.len(), encoding)];
            header.encode(&mut item);
            for (chunk, x) in item[ELEMENT_HEADER..].chunks_exact_mut(4).zip(vector) {
                chunk.copy_from_slice(&x.to_ne_bytes());
            }
            item
        }
        Encoding::UnitF16 | Encoding::UnitF16Coded => {
            let mut halves = Vec::with_capacity(vector.len());
            unit_halves(vector, &mut halves);
            let code = encoding
                .coded()
                .then(|| Directions::for_dims(vector.len()).code(vector));
            encode_halves_element(header, &halves, code)
        }
    }
}

/// An element item of unit halves, made already ([`unit_halves`]; a bulk
/// build holds them): layout version 3 with a `code`, else version 2.
pub fn encode_halves_element(
    header: &ElementHeader,
    halves: &[u16],
    code: Option<Code>,
) -> Vec<u8> {
    let encoding = match code {
        Some(_) => Encoding::UnitF16Coded,
        None => Encoding::UnitF16,
    };
    let mut item = vec![0u8; element_size(halves.len(), encoding)];
    header.encode(&mut item);
    if let Some(code) = code {
        item[CODE_AT..CODE_AT + CODE_BYTES].copy_from_slice(&code.to_bytes());
    }
    for (chunk, h) in item[encoding.vector_at()..].chunks_exact_mut(2).zip(halves) {
        chunk.copy_from_slice(&h.to_ne_bytes());
    }
    item
}

/// Appends a partitioned index's `key` to an element item.
pub fn append_key(item: &mut Vec<u8>, key: i64) {
    item.extend_from_slice(&key.to_ne_bytes());
}

/// The key of an element item of a partitioned index whose items are
/// `len` bytes ([`crate::Meta::element_len`]): its last 8 bytes.
pub fn element_key(item: &[u8], len: usize) -> Result<i64, String> {
    len.checked_sub(KEY_BYTES)
        .and_then(|at| item.get(at..len))
        .and_then(|b| b.try_into().ok())
        .map(i64::from_ne_bytes)
        .ok_or_else(|| format!("element item of {} bytes has no key", item.len()))
}

/// The code of a version-3 element item.
pub fn element_code(item: &[u8]) -> Result<Code, String> {
    item.get(CODE_AT..CODE_AT + CODE_BYTES)
        .and_then(Code::from_bytes)
        .ok_or_else(|| format!("element item of {} bytes has no code", item.len()))
}

/// Copies the vector of an element item into `out` (cleared first), widened
/// to f32 if it is stored in halves.
pub fn element_vector(
    item: &[u8],
    dims: usize,
    encoding: Encoding,
    out: &mut Vec<f32>,
) -> Result<(), String> {
    let body = item
        .get(encoding.vector_at()..element_size(dims, encoding))
        .ok_or_else(|| {
            format!(
                "element item of {} bytes is too short for {dims} dimensions",
                item.len()
            )
        })?;
    out.clear();
    match encoding {
        Encoding::F32 => out.extend(
            body.chunks_exact(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])),
        ),
        Encoding::UnitF16 | Encoding::UnitF16Coded => {
            let halves: Vec<u16> = body
                .chunks_exact(2)
                .map(|c| u16::from_ne_bytes([c[0], c[1]]))
                .collect();
            widen_halves(&halves, out);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{item_footprint, MAX_DIMS, PAGE_CAPACITY};

    #[test]
    fn two_thousand_dimensions_fit_a_page() {
        const { assert!(MAX_DIMS >= 2000) };
        assert!(item_footprint(element_size(MAX_DIMS, Encoding::F32)) <= PAGE_CAPACITY);
    }

    #[test]
    fn elements_round_trip() {
        let h = ElementHeader {
            level: 3,
            flags: FLAG_DELETED,
            heap: Tid {
                block: 70_000,
                offset: 12,
            },
            neighbours: Tid {
                block: 5,
                offset: 9,
            },
        };
        let item = encode_element(&h, &[1.0, -2.5, 3.25], Encoding::F32);
        assert_eq!(ElementHeader::decode(&item).unwrap(), h);
        let mut v = Vec::new();
        element_vector(&item, 3, Encoding::F32, &mut v).unwrap();
        assert_eq!(v, vec![1.0, -2.5, 3.25]);
        assert!(element_vector(&item, 4, Encoding::F32, &mut v).is_err());
        // Halves: half the bytes, the direction kept, the length dropped.
        let item = encode_element(&h, &[3.0, 0.0, -4.0], Encoding::UnitF16);
        assert_eq!(item.len(), ELEMENT_HEADER + 6);
        assert_eq!(ElementHeader::decode(&item).unwrap(), h);
        element_vector(&item, 3, Encoding::UnitF16, &mut v).unwrap();
        // 0.6 and -0.8 rounded to half precision: 4,916 and -6,552 2^-13ths.
        let halves = vec![4_916.0 / 8_192.0, 0.0, -6_552.0 / 8_192.0];
        assert_eq!(v, halves);
        assert_eq!(&*Encoding::UnitF16.stored_form(&[3.0, 0.0, -4.0]), &v[..]);
        assert!(element_vector(&item, 4, Encoding::UnitF16, &mut v).is_err());
        // Version 3: the code between header and vector.
        let coded = encode_element(&h, &[3.0, 0.0, -4.0], Encoding::UnitF16Coded);
        assert_eq!(coded.len(), ELEMENT_HEADER + CODE_BYTES + 6);
        assert_eq!(ElementHeader::decode(&coded).unwrap(), h);
        assert_eq!(
            element_code(&coded).unwrap(),
            Directions::for_dims(3).code(&[3.0, 0.0, -4.0])
        );
        element_vector(&coded, 3, Encoding::UnitF16Coded, &mut v).unwrap();
        assert_eq!(v, halves);
        // A partitioned index's key after the vector, which reads as before.
        let mut keyed = coded.clone();
        append_key(&mut keyed, -42);
        assert_eq!(element_key(&keyed, keyed.len()).unwrap(), -42);
        assert_eq!(ElementHeader::decode(&keyed).unwrap(), h);
        element_vector(&keyed, 3, Encoding::UnitF16Coded, &mut v).unwrap();
        assert_eq!(v, halves);
        assert!(element_key(&keyed, keyed.len() + 1).is_err());
        assert!(element_key(&keyed[..4], 4).is_err());
    }
}
