//! [`Tid`]: an item's address, the graph's element id and the heap row an
//! element indexes, six bytes wherever an item holds one.

/// A TID: inside the index it is an element's id in the graph (printed
/// `(block,offset)` in messages, as `ctid` is); in an element it is the heap row.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tid {
    pub block: u32,
    pub offset: u16,
}

impl std::fmt::Debug for Tid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.block, self.offset)
    }
}

impl std::hash::Hash for Tid {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.id());
    }
}

impl Tid {
    pub fn id(self) -> u64 {
        (u64::from(self.block) << 16) | u64::from(self.offset)
    }

    pub fn from_id(id: u64) -> Tid {
        Tid {
            block: (id >> 16) as u32,
            offset: (id & 0xFFFF) as u16,
        }
    }

    pub(crate) fn read(bytes: &[u8]) -> Tid {
        Tid {
            block: u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            offset: u16::from_ne_bytes([bytes[4], bytes[5]]),
        }
    }

    pub(crate) fn write(self, bytes: &mut [u8]) {
        bytes[..4].copy_from_slice(&self.block.to_ne_bytes());
        bytes[4..6].copy_from_slice(&self.offset.to_ne_bytes());
    }
}
