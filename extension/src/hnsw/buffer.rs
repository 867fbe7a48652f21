//! Pinned, content-locked buffers ([`Locked`]) and generic WAL records
//! ([`Wal`]): how the index's pages are read and written.
//!
//! Every write is one generic WAL record (`GenericXLogStart` ..
//! `GenericXLogFinish`) covering every page it touches, so each write is
//! atomic on crash and replayed on replicas. A scan pins a thousand or so
//! pages, so a backend remembers where it last found each block (`pin`).

use std::cell::RefCell;

use pgrx::pg_sys;

/// A pinned, content-locked buffer; unlocked and unpinned on drop.
pub struct Locked {
    buf: pg_sys::Buffer,
}

thread_local! {
    /// Per index (by its file), the buffer where this backend last found
    /// each block: see [`pin`].
    static RECENT: RefCell<Vec<(pg_sys::RelFileNode, Vec<pg_sys::Buffer>)>> =
        const { RefCell::new(Vec::new()) };
}

/// Indexes whose recent buffers a backend remembers, and blocks per index.
const RECENT_INDEXES: usize = 8;
const RECENT_BLOCKS: u32 = 1 << 22;

/// Pins `block` of `rel`. A scan visits a thousand or so elements, each a
/// page lookup in the shared buffer table (hash and partition lock: a
/// fifth of a scan in a profile). So the backend remembers where it last
/// found each block and first asks `ReadRecentBuffer`, which pins that
/// buffer if it still holds the block (it checks the buffer's tag) with no
/// table lookup; otherwise `ReadBuffer` as usual. A stale hint (the block
/// evicted, the index dropped or rewritten) only costs the fallback.
pub(super) fn pin(rel: pg_sys::Relation, block: u32) -> pg_sys::Buffer {
    const INVALID: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
    // SAFETY: rel is an open relation.
    let node = unsafe { (*rel).rd_node };
    let same = |a: &pg_sys::RelFileNode| {
        (a.spcNode, a.dbNode, a.relNode) == (node.spcNode, node.dbNode, node.relNode)
    };
    let recent = RECENT.with_borrow(|all| {
        all.iter()
            .find(|(n, _)| same(n))
            .and_then(|(_, bufs)| bufs.get(block as usize).copied())
            .unwrap_or(INVALID)
    });
    // SAFETY: any buffer number is accepted; the tag is checked under its header lock.
    if recent != INVALID
        && unsafe {
            pg_sys::ReadRecentBuffer(node, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent)
        }
    {
        return recent;
    }
    // SAFETY: rel is open; ReadBuffer errors out on a bad block.
    let buf = unsafe { pg_sys::ReadBuffer(rel, block) };
    if block < RECENT_BLOCKS {
        RECENT.with_borrow_mut(|all| {
            let at = match all.iter().position(|(n, _)| same(n)) {
                Some(at) => at,
                None => {
                    if all.len() >= RECENT_INDEXES {
                        all.remove(0);
                    }
                    all.push((node, Vec::new()));
                    all.len() - 1
                }
            };
            let bufs = &mut all[at].1;
            if bufs.len() <= block as usize {
                bufs.resize(block as usize + 1, INVALID);
            }
            bufs[block as usize] = buf;
        });
    }
    buf
}

impl Locked {
    fn lock(rel: pg_sys::Relation, block: u32, mode: u32) -> Locked {
        Locked::pinned(pin(rel, block), mode)
    }

    /// Locks a buffer the caller has pinned; the pin passes to the result.
    pub(super) fn pinned(buf: pg_sys::Buffer, mode: u32) -> Locked {
        // SAFETY: the caller pinned `buf` (ReadBuffer) and hands the pin over.
        unsafe { pg_sys::LockBuffer(buf, mode as i32) };
        Locked { buf }
    }

    pub fn share(rel: pg_sys::Relation, block: u32) -> Locked {
        Locked::lock(rel, block, pg_sys::BUFFER_LOCK_SHARE)
    }

    pub fn exclusive(rel: pg_sys::Relation, block: u32) -> Locked {
        Locked::lock(rel, block, pg_sys::BUFFER_LOCK_EXCLUSIVE)
    }

    /// A new page at the end of the relation, exclusively locked.
    pub fn extend(rel: pg_sys::Relation) -> Locked {
        // SAFETY: the extension lock serialises extenders, as Postgres requires.
        unsafe {
            pg_sys::LockRelationForExtension(rel, pg_sys::ExclusiveLock as i32);
            let buf = pg_sys::ReadBufferExtended(
                rel,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                pg_sys::InvalidBlockNumber,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            pg_sys::UnlockRelationForExtension(rel, pg_sys::ExclusiveLock as i32);
            pg_sys::LockBuffer(buf, pg_sys::BUFFER_LOCK_EXCLUSIVE as i32);
            Locked { buf }
        }
    }

    pub fn block(&self) -> u32 {
        // SAFETY: the buffer is pinned.
        unsafe { pg_sys::BufferGetBlockNumber(self.buf) }
    }

    pub fn page(&self) -> pg_sys::Page {
        // SAFETY: the buffer is pinned.
        unsafe { pg_sys::BufferGetPage(self.buf) }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: we hold the pin and the content lock taken in `lock`.
        unsafe { pg_sys::UnlockReleaseBuffer(self.buf) }
    }
}

/// One generic WAL record over up to four pages. Pages are modified through
/// the images `register` returns; `finish` applies and logs them at once.
pub struct Wal {
    state: *mut pg_sys::GenericXLogState,
    held: Vec<Locked>,
}

impl Wal {
    pub fn start(rel: pg_sys::Relation) -> Wal {
        // SAFETY: rel is an open index.
        Wal {
            state: unsafe { pg_sys::GenericXLogStart(rel) },
            held: Vec::with_capacity(4),
        }
    }

    /// Registers an exclusively locked buffer; `full` logs a whole image
    /// (for new pages). Returns the image to modify.
    pub fn register(&mut self, locked: Locked, full: bool) -> pg_sys::Page {
        let flags = if full {
            pg_sys::GENERIC_XLOG_FULL_IMAGE as i32
        } else {
            0
        };
        // SAFETY: state is live; the buffer is exclusively locked.
        let page = unsafe { pg_sys::GenericXLogRegisterBuffer(self.state, locked.buf, flags) };
        self.held.push(locked);
        page
    }

    pub fn finish(mut self) {
        // SAFETY: every registered buffer is still locked (held).
        unsafe { pg_sys::GenericXLogFinish(self.state) };
        self.state = std::ptr::null_mut();
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        if !self.state.is_null() {
            // SAFETY: an unfinished record: discard the images, change nothing.
            unsafe { pg_sys::GenericXLogAbort(self.state) };
        }
        // `held` unlocks after the record is finished or aborted.
    }
}
