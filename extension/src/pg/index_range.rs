//! Btree ranges read straight from Rust, the way an index-only scan reads them.
//!
//! The history of one assessment is a handful of short ranges. Asked through
//! SPI as one query, each call paid for the plan's revalidation and for
//! starting an executor over six sub-plans: more than the ranges themselves,
//! and about a third of an assessment. Here a range is an `index_beginscan`
//! with its scan keys; each entry's values come from the index tuple (the
//! indexes `INCLUDE` what the history reads), and the heap is visited only to
//! check visibility when the visibility map cannot vouch for the page, as
//! `nodeIndexonlyscan.c` does. Relations are opened with `AccessShareLock`,
//! the lock a SELECT takes, held to the end of the transaction.
//!
//! The caller owns the tables (the function is SECURITY DEFINER); there is no
//! privilege or row-level-security check here, and none of these tables has
//! row-level security.

use std::ffi::CString;
use std::ops::ControlFlow;

use pgrx::pg_sys;
use pgrx::prelude::*;

unsafe extern "C-unwind" {
    // storage/predicate.h, not in pgrx's bindings; called through
    // `pg_guard_ffi_boundary` as pgrx's own bindings are.
    fn PredicateLockPage(
        relation: pg_sys::Relation,
        blkno: pg_sys::BlockNumber,
        snapshot: pg_sys::Snapshot,
    );
}

/// An open table or index of schema `vigil`.
pub struct Relation(pg_sys::Relation);

impl Relation {
    /// Opens `vigil.<name>` (a table or an index) with `AccessShareLock`.
    pub fn open(name: &str) -> Relation {
        let relname = cstring(name);
        // SAFETY: both names are NUL-terminated; a missing one gives InvalidOid.
        // (Two syscache probes; not cached across calls, so that a recreated
        // extension is found.)
        let oid = unsafe {
            let namespace = pg_sys::get_namespace_oid(c"vigil".as_ptr(), true);
            pg_sys::get_relname_relid(relname.as_ptr(), namespace)
        };
        if oid == pg_sys::InvalidOid {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!("relation vigil.{name} does not exist")
            );
        }
        // SAFETY: the oid names an existing relation; relation_open errors
        // (rather than returning) if it was dropped since.
        Relation(unsafe { pg_sys::relation_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE) })
    }

    /// Closes the relation, keeping its lock until the end of the transaction.
    /// (After an ERROR the transaction's abort releases it instead.)
    pub fn close(self) {
        // SAFETY: opened by `open`, closed once.
        unsafe { pg_sys::relation_close(self.0, pg_sys::NoLock as pg_sys::LOCKMODE) }
    }

    /// The collation of the index's column `attno` (1-based).
    fn collation(&self, attno: usize) -> pg_sys::Oid {
        // SAFETY: an open index has rd_indcollation for each key column.
        unsafe { *(*self.0).rd_indcollation.add(attno - 1) }
    }
}

/// The snapshot the history is read with: a fresh one that also sees what
/// this transaction wrote before, including the rows earlier calls in the same
/// statement recorded (what SPI gives a volatile function's query).
pub struct Snapshot(pg_sys::Snapshot);

impl Snapshot {
    pub fn take() -> Snapshot {
        // SAFETY: as SPI does for a read-write query: a new command id, then a
        // transaction snapshot made active with that command id.
        unsafe {
            pg_sys::CommandCounterIncrement();
            pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
            pg_sys::UpdateActiveSnapshotCommandId();
            Snapshot(pg_sys::GetActiveSnapshot())
        }
    }

    /// Pops the snapshot (after an ERROR the transaction's abort does).
    pub fn release(self) {
        // SAFETY: pushed by `take`, and nothing pushed since is left active.
        unsafe { pg_sys::PopActiveSnapshot() }
    }
}

/// One scan key on an index column.
#[derive(Clone, Copy)]
pub enum Key<'a> {
    /// `column = value` on a text column.
    TextEq(&'a str),
    /// `after < column <= until` on a timestamptz column (`after` None: no
    /// lower bound).
    Between {
        after: Option<pg_sys::TimestampTz>,
        until: pg_sys::TimestampTz,
    },
}

/// Entries of a range, newest or oldest first (the order of the index).
#[derive(Clone, Copy)]
pub enum Direction {
    Forward,
    Backward,
}

/// The values of one index entry, in the index's column order (key columns,
/// then INCLUDE columns).
pub struct Entry<'a> {
    values: &'a [pg_sys::Datum],
    nulls: &'a [bool],
}

impl Entry<'_> {
    /// Column `attno` (1-based); None when NULL or past the index's columns.
    fn datum(&self, attno: usize) -> Option<pg_sys::Datum> {
        let i = attno.checked_sub(1)?;
        match self.nulls.get(i) {
            Some(false) => self.values.get(i).copied(),
            _ => None,
        }
    }

    /// A timestamptz column (microseconds since 2000-01-01).
    pub fn timestamp(&self, attno: usize) -> Option<pg_sys::TimestampTz> {
        self.datum(attno).map(|d| d.value() as i64)
    }

    /// A bigint column.
    pub fn int8(&self, attno: usize) -> Option<i64> {
        self.datum(attno).map(|d| d.value() as i64)
    }

    /// A double precision column.
    pub fn float8(&self, attno: usize) -> Option<f64> {
        self.datum(attno).map(|d| f64::from_bits(d.value() as u64))
    }

    /// A text column's bytes, valid while the entry is.
    pub fn text(&self, attno: usize) -> Option<&[u8]> {
        // SAFETY: the column is text; detoasting handles a compressed or
        // short-header value and leaves a plain one in place.
        self.datum(attno).map(|d| unsafe {
            let text = pg_sys::pg_detoast_datum_packed(d.cast_mut_ptr());
            pgrx::varlena::varlena_to_byte_slice(text)
        })
    }
}

/// Visits the visible entries of `index` (on `table`) that match `keys`
/// (`keys[i]` on column i + 1), in `direction`, until `visit` breaks.
pub fn scan(
    table: &Relation,
    index: &Relation,
    snapshot: &Snapshot,
    keys: &[Key],
    direction: Direction,
    mut visit: impl FnMut(&Entry) -> ControlFlow<()>,
) {
    // SAFETY: the relations are open and locked, the snapshot is active, and
    // every pointer read below belongs to the scan, which is ended before
    // returning. An ERROR in between unwinds to the transaction's abort, which
    // releases the scan's buffer pins.
    unsafe {
        let mut scan_keys: Vec<pg_sys::ScanKeyData> = Vec::with_capacity(2 * keys.len());
        let mut push = |attno: usize, strategy: u32, procedure: u32, collation, argument| {
            let mut entry: pg_sys::ScanKeyData = std::mem::zeroed();
            pg_sys::ScanKeyEntryInitialize(
                &mut entry,
                0,
                attno as pg_sys::AttrNumber,
                strategy as pg_sys::StrategyNumber,
                pg_sys::InvalidOid,
                collation,
                procedure.into(),
                argument,
            );
            scan_keys.push(entry);
        };
        // Keys on one column are adjacent, as index_rescan wants them.
        for (i, key) in keys.iter().enumerate() {
            let attno = i + 1;
            match key {
                Key::TextEq(value) => push(
                    attno,
                    pg_sys::BTEqualStrategyNumber,
                    pg_sys::F_TEXTEQ,
                    index.collation(attno),
                    text_datum(value),
                ),
                Key::Between { after, until } => {
                    if let Some(after) = after {
                        push(
                            attno,
                            pg_sys::BTGreaterStrategyNumber,
                            pg_sys::F_TIMESTAMPTZ_GT,
                            pg_sys::InvalidOid,
                            pg_sys::Datum::from(*after),
                        );
                    }
                    push(
                        attno,
                        pg_sys::BTLessEqualStrategyNumber,
                        pg_sys::F_TIMESTAMPTZ_LE,
                        pg_sys::InvalidOid,
                        pg_sys::Datum::from(*until),
                    );
                }
            }
        }
        let nkeys = scan_keys.len() as i32;
        let scan = pg_sys::index_beginscan(table.0, index.0, snapshot.0, nkeys, 0);
        (*scan).xs_want_itup = true;
        pg_sys::index_rescan(scan, scan_keys.as_mut_ptr(), nkeys, std::ptr::null_mut(), 0);

        let slot = pg_sys::table_slot_create(table.0, std::ptr::null_mut());
        let mut vm_buffer: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
        let columns = (*(*scan).xs_itupdesc).natts as usize;
        let mut values = vec![pg_sys::Datum::from(0usize); columns];
        let mut nulls = vec![true; columns];
        let direction = match direction {
            Direction::Forward => pg_sys::ScanDirection::ForwardScanDirection,
            Direction::Backward => pg_sys::ScanDirection::BackwardScanDirection,
        };
        loop {
            let tid = pg_sys::index_getnext_tid(scan, direction);
            if tid.is_null() {
                break;
            }
            let block = pgrx::itemptr::item_pointer_get_block_number_no_check(*tid);
            let all_visible = pg_sys::visibilitymap_get_status(table.0, block, &mut vm_buffer)
                & pg_sys::VISIBILITYMAP_ALL_VISIBLE as u8
                != 0;
            if all_visible {
                // Serializable transactions lock what they read, as if the
                // heap page had been read.
                pg_sys::ffi::pg_guard_ffi_boundary(|| {
                    PredicateLockPage(table.0, block, snapshot.0)
                });
            } else {
                if !pg_sys::index_fetch_heap(scan, slot) {
                    continue;
                }
                pg_sys::ExecClearTuple(slot);
            }
            pg_sys::index_deform_tuple(
                (*scan).xs_itup,
                (*scan).xs_itupdesc,
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            );
            let entry = Entry {
                values: &values,
                nulls: &nulls,
            };
            if visit(&entry).is_break() {
                break;
            }
        }
        if vm_buffer != pg_sys::InvalidBuffer as pg_sys::Buffer {
            pg_sys::ReleaseBuffer(vm_buffer);
        }
        pg_sys::ExecDropSingleTupleTableSlot(slot);
        pg_sys::index_endscan(scan);
    }
}

/// A text datum holding `value`, in the current memory context.
fn text_datum(value: &str) -> pg_sys::Datum {
    // SAFETY: the pointer and length describe `value`'s bytes, which are copied.
    unsafe {
        let text = pg_sys::cstring_to_text_with_len(value.as_ptr().cast(), value.len() as i32);
        pg_sys::Datum::from(text)
    }
}

fn cstring(s: &str) -> CString {
    // Names here are constants without NUL.
    CString::new(s).unwrap_or_default()
}
