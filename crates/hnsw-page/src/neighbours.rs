//! Neighbour items: an element's links, layer by layer, written with the
//! element and then overwritten in place; in layout version 3 with the code
//! of each layer-0 link's element.

use vigil_hnsw::codes::{Code, CODE_BYTES};
use vigil_hnsw::MAX_LEVEL;

use crate::layout::{COUNTS_AT, KIND_NEIGHBOURS, NEIGHBOUR_HEADER, SLOT};
use crate::tid::Tid;

/// The shape of an index's neighbour items: `m`, and whether layer 0
/// carries codes (layout version 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lists {
    pub m: usize,
    pub coded: bool,
}

impl Lists {
    /// Slots of layers `0..layers` together: `2m` on layer 0, `m` above.
    fn slots_below(self, layers: usize) -> usize {
        match layers {
            0 => 0,
            n => 2 * self.m + self.m * (n - 1),
        }
    }

    fn capacity(self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    /// Bytes of a neighbour item of an element of `level`.
    pub fn size(self, level: usize) -> usize {
        self.codes_at(level)
            + if self.coded {
                CODE_BYTES * 2 * self.m
            } else {
                0
            }
    }

    /// Byte offset of `layer`'s first slot.
    fn slots_at(self, level: usize, layer: usize) -> usize {
        COUNTS_AT + 2 * (level + 1) + SLOT * self.slots_below(layer)
    }

    /// Byte offset of the layer-0 codes (version 3), after every slot.
    fn codes_at(self, level: usize) -> usize {
        self.slots_at(level, level + 1)
    }

    /// The level of `item`, checked against its size.
    fn level_of(self, item: &[u8]) -> Result<usize, String> {
        let level = neighbour_level(item)?;
        if item.len() != self.size(level) {
            return Err(format!(
                "neighbour item of level {level} is {} bytes, expected {}",
                item.len(),
                self.size(level)
            ));
        }
        Ok(level)
    }

    /// Builds a neighbour item with the given lists (each within capacity)
    /// and, when coded, the codes of layer 0's links.
    pub fn encode(self, lists: &[Vec<Tid>], codes: &[Code]) -> Result<Vec<u8>, String> {
        let level = lists
            .len()
            .checked_sub(1)
            .ok_or("an element needs layer 0")?;
        if level > MAX_LEVEL {
            return Err(format!("level {level} is above the maximum {MAX_LEVEL}"));
        }
        let mut item = vec![0u8; self.size(level)];
        item[0] = KIND_NEIGHBOURS;
        item[1] = level as u8;
        for (layer, list) in lists.iter().enumerate() {
            self.write(&mut item, layer, list, if layer == 0 { codes } else { &[] })?;
        }
        Ok(item)
    }

    /// Overwrites `layer`'s list in a neighbour item, in place; on layer 0
    /// of a coded item `codes` are the links' codes, one each.
    pub fn write(
        self,
        item: &mut [u8],
        layer: usize,
        list: &[Tid],
        codes: &[Code],
    ) -> Result<(), String> {
        let level = self.level_of(item)?;
        if layer > level {
            return Err(format!(
                "neighbour item has no layer {layer} (level {level})"
            ));
        }
        let cap = self.capacity(layer);
        if list.len() > cap {
            return Err(format!(
                "{} links on layer {layer}, capacity {cap}",
                list.len()
            ));
        }
        let coded = self.coded && layer == 0;
        if coded && codes.len() != list.len() {
            return Err(format!(
                "{} codes for {} links on layer 0",
                codes.len(),
                list.len()
            ));
        }
        let c = COUNTS_AT + 2 * layer;
        item[c..c + 2].copy_from_slice(&(list.len() as u16).to_ne_bytes());
        let start = self.slots_at(level, layer);
        for (i, t) in list.iter().enumerate() {
            t.write(&mut item[start + SLOT * i..start + SLOT * (i + 1)]);
        }
        if coded {
            let start = self.codes_at(level);
            for (i, code) in codes.iter().enumerate() {
                let at = start + CODE_BYTES * i;
                item[at..at + CODE_BYTES].copy_from_slice(&code.to_bytes());
            }
        }
        Ok(())
    }

    /// Reads `layer`'s list from a neighbour item into `out` (cleared first).
    pub fn read(self, item: &[u8], layer: usize, out: &mut Vec<Tid>) -> Result<(), String> {
        let (level, count) = self.count(item, layer)?;
        let start = self.slots_at(level, layer);
        out.clear();
        out.extend((0..count).map(|i| Tid::read(&item[start + SLOT * i..])));
        Ok(())
    }

    /// Reads the codes of layer 0's links into `out` (cleared first; left
    /// empty for an item without codes).
    pub fn read_codes(self, item: &[u8], out: &mut Vec<Code>) -> Result<(), String> {
        out.clear();
        if !self.coded {
            return Ok(());
        }
        let (level, count) = self.count(item, 0)?;
        let start = self.codes_at(level);
        out.extend(
            item[start..start + CODE_BYTES * count]
                .chunks_exact(CODE_BYTES)
                .map(|c| Code::from_bytes(c).unwrap_or_default()),
        );
        Ok(())
    }

    /// The item's level and the links in use on `layer`.
    fn count(self, item: &[u8], layer: usize) -> Result<(usize, usize), String> {
        let level = self.level_of(item)?;
        if layer > level {
            return Err(format!(
                "neighbour item of level {level} has no layer {layer}"
            ));
        }
        let c = COUNTS_AT + 2 * layer;
        let count = usize::from(u16::from_ne_bytes([item[c], item[c + 1]]));
        let cap = self.capacity(layer);
        if count > cap {
            return Err(format!(
                "layer {layer} claims {count} links, capacity {cap}"
            ));
        }
        Ok((level, count))
    }
}

/// Level recorded in a neighbour item.
pub fn neighbour_level(item: &[u8]) -> Result<usize, String> {
    if item.len() < NEIGHBOUR_HEADER || item[0] != KIND_NEIGHBOURS {
        return Err("item is not a neighbour list".into());
    }
    Ok(usize::from(item[1]))
}

/// The shape of the tests' neighbour items: `m` 16, no codes.
#[cfg(test)]
pub(crate) const PLAIN: Lists = Lists {
    m: 16,
    coded: false,
};

#[cfg(test)]
mod tests {
    use vigil_hnsw::codes::Code;

    use super::*;

    #[test]
    fn neighbour_items_round_trip() {
        let lists = vec![
            (1..=5)
                .map(|i| Tid {
                    block: i,
                    offset: 3,
                })
                .collect::<Vec<_>>(),
            vec![Tid {
                block: 9,
                offset: 1,
            }],
        ];
        let mut item = PLAIN.encode(&lists, &[]).unwrap();
        let mut out = Vec::new();
        PLAIN.read(&item, 0, &mut out).unwrap();
        assert_eq!(out, lists[0]);
        PLAIN
            .write(
                &mut item,
                1,
                &[
                    Tid {
                        block: 7,
                        offset: 2,
                    },
                    Tid {
                        block: 8,
                        offset: 4,
                    },
                ],
                &[],
            )
            .unwrap();
        PLAIN.read(&item, 1, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                Tid {
                    block: 7,
                    offset: 2
                },
                Tid {
                    block: 8,
                    offset: 4
                }
            ]
        );
        assert!(PLAIN
            .write(
                &mut item,
                1,
                &[Tid {
                    block: 1,
                    offset: 1
                }; 17],
                &[],
            )
            .is_err());
        assert!(PLAIN.read(&item, 2, &mut out).is_err());
    }

    #[test]
    fn coded_neighbour_items_keep_a_code_per_layer_0_link() {
        let coded = Lists { m: 16, coded: true };
        assert_eq!(coded.size(1), PLAIN.size(1) + 32 * 16);
        let tid = |block| Tid { block, offset: 1 };
        let code = |k: u64| Code([k, !k]);
        let lists = vec![vec![tid(1), tid(2)], vec![tid(3)]];
        let mut item = coded.encode(&lists, &[code(1), code(2)]).unwrap();
        let (mut out, mut codes) = (Vec::new(), Vec::new());
        coded.read(&item, 0, &mut out).unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(out, lists[0]);
        assert_eq!(codes, vec![code(1), code(2)]);
        // A layer-0 list is written with its codes or not at all.
        assert!(coded.write(&mut item, 0, &[tid(4)], &[]).is_err());
        coded
            .write(
                &mut item,
                0,
                &[tid(4), tid(5), tid(6)],
                &[code(4), code(5), code(6)],
            )
            .unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(codes, vec![code(4), code(5), code(6)]);
        // Upper layers carry none, and leave layer 0's alone.
        coded.write(&mut item, 1, &[tid(7)], &[]).unwrap();
        coded.read_codes(&item, &mut codes).unwrap();
        assert_eq!(codes.len(), 3);
        // An item of the other shape is refused, not misread.
        assert!(PLAIN.read(&item, 0, &mut out).is_err());
    }
}
