//! The page-level records: every page's special space ([`Opaque`]) and
//! the meta page's record ([`Meta`]), the index's parameters and entry point.

use vigil_hnsw::{Metric, Params};

use crate::encoding::Encoding;
use crate::layout::{MAGIC, META_SIZE};
use crate::neighbours::Lists;
use crate::tid::Tid;

/// Special space of every page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opaque {
    pub page_id: u16,
    pub kind: u16,
}

impl Opaque {
    pub fn read(bytes: &[u8]) -> Opaque {
        Opaque {
            page_id: u16::from_ne_bytes([bytes[0], bytes[1]]),
            kind: u16::from_ne_bytes([bytes[2], bytes[3]]),
        }
    }

    pub fn write(self, bytes: &mut [u8]) {
        bytes[..2].copy_from_slice(&self.page_id.to_ne_bytes());
        bytes[2..4].copy_from_slice(&self.kind.to_ne_bytes());
        bytes[4..8].fill(0);
    }
}

/// The meta page's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub dims: u32,
    pub metric: Metric,
    pub m: u32,
    pub ef_construction: u32,
    pub entry: Option<(Tid, u32)>,
    pub insert_block: u32,
    pub encoding: Encoding,
}

fn metric_code(m: Metric) -> u32 {
    match m {
        Metric::L2 => 1,
        Metric::Cosine => 2,
        Metric::InnerProduct => 3,
    }
}

impl Meta {
    /// The shape of its neighbour items.
    pub fn lists(&self) -> Lists {
        Lists {
            m: self.m as usize,
            coded: self.encoding.coded(),
        }
    }

    pub fn params(&self) -> Params {
        Params {
            dims: self.dims as usize,
            metric: self.metric,
            m: self.m as usize,
            ef_construction: self.ef_construction as usize,
        }
    }

    pub fn encode(&self, out: &mut [u8]) {
        let (eb, eo, el) = match self.entry {
            Some((t, l)) => (t.block, u32::from(t.offset), l),
            None => (0, 0, 0),
        };
        let words = [
            MAGIC,
            self.encoding.layout_version(),
            self.dims,
            metric_code(self.metric),
            self.m,
            self.ef_construction,
            eb,
            eo,
            el,
            self.insert_block,
        ];
        for (i, w) in words.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Meta, String> {
        let w = |i: usize| {
            u32::from_ne_bytes([
                bytes[i * 4],
                bytes[i * 4 + 1],
                bytes[i * 4 + 2],
                bytes[i * 4 + 3],
            ])
        };
        if bytes.len() < META_SIZE || w(0) != MAGIC {
            return Err("the meta page is not a vigil_hnsw meta page".into());
        }
        let metric = match w(3) {
            1 => Metric::L2,
            2 => Metric::Cosine,
            3 => Metric::InnerProduct,
            other => return Err(format!("the meta page names unknown metric {other}")),
        };
        let encoding = match (w(1), metric) {
            (1, _) => Encoding::F32,
            (2, Metric::Cosine) => Encoding::UnitF16,
            (3, Metric::Cosine) => Encoding::UnitF16Coded,
            (2 | 3, _) => return Err("layout versions 2 and 3 are for cosine indexes only".into()),
            (other, _) => {
                return Err(format!(
                    "the index has layout version {other}, this build reads 1 to 3; REINDEX it"
                ))
            }
        };
        let entry = (w(7) != 0).then(|| {
            (
                Tid {
                    block: w(6),
                    offset: w(7) as u16,
                },
                w(8),
            )
        });
        Ok(Meta {
            dims: w(2),
            metric,
            m: w(4),
            ef_construction: w(5),
            entry,
            insert_block: w(9),
            encoding,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips() {
        let meta = Meta {
            dims: 384,
            metric: Metric::Cosine,
            m: 16,
            ef_construction: 64,
            entry: Some((
                Tid {
                    block: 3,
                    offset: 2,
                },
                4,
            )),
            insert_block: 99,
            encoding: Encoding::UnitF16,
        };
        let mut bytes = [0u8; META_SIZE];
        meta.encode(&mut bytes);
        assert_eq!(Meta::decode(&bytes).unwrap(), meta);
        // Version 1 (every index before 0.7.6) reads as f32, of any metric.
        let old = Meta {
            encoding: Encoding::F32,
            ..meta
        };
        old.encode(&mut bytes);
        assert_eq!(bytes[4..8], 1u32.to_ne_bytes());
        assert_eq!(Meta::decode(&bytes).unwrap(), old);
        // Halves under L2 would make wrong lower bounds: refused.
        let l2 = Meta {
            metric: Metric::L2,
            ..meta
        };
        l2.encode(&mut bytes);
        assert!(Meta::decode(&bytes).is_err());
        let coded = Meta {
            encoding: Encoding::UnitF16Coded,
            ..meta
        };
        coded.encode(&mut bytes);
        assert_eq!(Meta::decode(&bytes).unwrap(), coded);
        bytes[4..8].copy_from_slice(&4u32.to_ne_bytes());
        assert!(Meta::decode(&bytes).unwrap_err().contains("REINDEX"));
    }
}
