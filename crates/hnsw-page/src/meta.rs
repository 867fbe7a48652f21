//! The page-level records: every page's special space ([`Opaque`]) and
//! the meta page's record ([`Meta`]), the index's parameters and entry point.

use vigil_hnsw::{Metric, Params};

use crate::element::element_size;
use crate::encoding::Encoding;
use crate::layout::{KEY_BYTES, MAGIC, META_SIZE};
use crate::neighbours::Lists;
use crate::tid::Tid;

/// Special space of every page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opaque {
    pub page_id: u16,
    pub kind: u16,
    /// Directory pages: the next directory page (0: the last). Zero on
    /// other pages.
    pub next: u32,
}

impl Opaque {
    pub fn read(bytes: &[u8]) -> Opaque {
        Opaque {
            page_id: u16::from_ne_bytes([bytes[0], bytes[1]]),
            kind: u16::from_ne_bytes([bytes[2], bytes[3]]),
            next: u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }

    pub fn write(self, bytes: &mut [u8]) {
        bytes[..2].copy_from_slice(&self.page_id.to_ne_bytes());
        bytes[2..4].copy_from_slice(&self.kind.to_ne_bytes());
        bytes[4..8].copy_from_slice(&self.next.to_ne_bytes());
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
    /// A partitioned index (two columns, a `bigint` key first): one graph
    /// per key, each with its entry point in the directory.
    pub partitioned: bool,
    /// The first directory page (0: none yet).
    pub directory: u32,
    /// Changed by every change of the directory, so a backend knows when
    /// the copy it keeps is stale.
    pub directory_version: u32,
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

    /// Bytes of an element item: the vector as [`Encoding`] holds it, and
    /// the key after it in a partitioned index.
    pub fn element_len(&self) -> usize {
        element_size(self.dims as usize, self.encoding)
            + if self.partitioned { KEY_BYTES } else { 0 }
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
            u32::from(self.partitioned),
            self.directory,
            self.directory_version,
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
            // Zero in meta pages written before 0.10.0 (a page starts zeroed).
            partitioned: w(10) != 0,
            directory: w(11),
            directory_version: w(12),
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
            partitioned: true,
            directory: 7,
            directory_version: 12,
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
        // A meta record of before 0.10.0 (40 bytes, zeros after): one graph.
        let mut old_record = [0u8; META_SIZE];
        coded.encode(&mut old_record);
        old_record[40..].fill(0);
        let one_graph = Meta::decode(&old_record).unwrap();
        assert_eq!((one_graph.partitioned, one_graph.directory), (false, 0));
        bytes[4..8].copy_from_slice(&4u32.to_ne_bytes());
        assert!(Meta::decode(&bytes).unwrap_err().contains("REINDEX"));
    }
}
