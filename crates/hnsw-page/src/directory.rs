//! Directory items: where each key's graph of a partitioned index starts
//! (layout in [`crate::layout`]).

use crate::layout::{DIRECTORY_ITEM, KIND_DIRECTORY};
use crate::tid::Tid;

/// One key's entry point; `entry` is `None` while the key has no element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectoryItem {
    pub key: i64,
    pub entry: Option<(Tid, u32)>,
}

impl DirectoryItem {
    pub fn encode(&self) -> [u8; DIRECTORY_ITEM] {
        let mut out = [0u8; DIRECTORY_ITEM];
        out[0] = KIND_DIRECTORY;
        if let Some((at, level)) = self.entry {
            out[1] = level as u8;
            at.write(&mut out[2..8]);
        }
        out[8..16].copy_from_slice(&self.key.to_ne_bytes());
        out
    }

    pub fn decode(item: &[u8]) -> Result<DirectoryItem, String> {
        if item.len() < DIRECTORY_ITEM || item[0] != KIND_DIRECTORY {
            return Err("item is not a directory item".into());
        }
        let at = Tid::read(&item[2..8]);
        let mut key = [0u8; 8];
        key.copy_from_slice(&item[8..16]);
        Ok(DirectoryItem {
            key: i64::from_ne_bytes(key),
            entry: (at.offset != 0).then_some((at, u32::from(item[1]))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_items_round_trip() {
        for item in [
            DirectoryItem {
                key: 1 << 40,
                entry: Some((
                    Tid {
                        block: 70_000,
                        offset: 3,
                    },
                    5,
                )),
            },
            DirectoryItem {
                key: -7,
                entry: None,
            },
        ] {
            assert_eq!(DirectoryItem::decode(&item.encode()).unwrap(), item);
        }
        assert!(DirectoryItem::decode(&[KIND_DIRECTORY; 8]).is_err());
        assert!(DirectoryItem::decode(&[1u8; 16]).is_err());
    }
}
