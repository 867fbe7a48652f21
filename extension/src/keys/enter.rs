//! `vigil.enter_api_key(key)`: the API key's account for the rest of the
//! transaction, and the key's id.
//!
//! The sidecar calls it in every statement that acts for a key
//! (`SELECT vigil.risk_score($1, vigil.enter_api_key($2))`), having checked the
//! key's scope and address a moment before (`vigil.authenticate_api_key`,
//! believed for a second). So it is on the hot path of every assessment, and
//! in Rust rather than PL/pgSQL, without a `SET search_path` clause: each
//! backend keeps the live keys it has read ([`CACHE`]), and a call compares
//! the key's hash and expiry with the kept row and sets two settings. Any
//! change to `vigil.api_keys` (a revocation, a rotation, an account deleted)
//! tells every backend to forget what it kept when that change commits, by
//! the relation cache invalidation PostgreSQL already sends between backends
//! (`vigil._forget_api_keys`, from the table's trigger); a transaction that
//! starts after the change reads the table again. Measured in
//! docs/performance.md ("Entering an account").
//!
//! Without the clause the function runs under its caller's `search_path`,
//! as the extension's owner: so [`LIVE_KEY`] names every table, function and
//! operator with its schema, and no object a caller's schema holds can stand
//! in for ours.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::rc::Rc;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use vigil_auth::KeyKind;

/// The key of this prefix unless it is revoked, with its expiry, which is
/// compared with the transaction's time on every call (`vigil._key_status`'s
/// "active": not revoked and not past its expiry), and the table's oid.
/// Operators are qualified for the reason in the module's docs.
const LIVE_KEY: &str = "SELECT id, account, hash, expires_at, tableoid FROM vigil.api_keys \
     WHERE prefix OPERATOR(pg_catalog.=) $1 AND revoked_at IS NULL";

/// At most this many keys are kept by a backend; past it, it starts again.
const MAX_KEPT: usize = 1024;

/// A key as [`LIVE_KEY`] read it.
struct Kept {
    id: i64,
    account: String,
    hash: Vec<u8>,
    expires_at: Option<pg_sys::TimestampTz>,
}

thread_local! {
    /// [`LIVE_KEY`], planned once per backend.
    static LIVE_KEY_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
    /// The keys this backend read, by prefix (shared, so a hit copies nothing).
    static CACHE: RefCell<HashMap<String, Rc<Kept>>> = RefCell::new(HashMap::new());
    /// Whether [`forget`] is registered with this backend's relation cache.
    static LISTENING: Cell<bool> = const { Cell::new(false) };
    /// The oid of the table [`CACHE`] was read from, whose invalidation empties it.
    static TABLE: Cell<pg_sys::Oid> = const { Cell::new(pg_sys::InvalidOid) };
    /// Set by [`forget`]: [`CACHE`] is to be emptied before its next use.
    static STALE: Cell<bool> = const { Cell::new(false) };
    /// Whether [`LIVE_KEY`] is being read, when any invalidation counts.
    static READING: Cell<bool> = const { Cell::new(false) };
}

/// The account of `key` for the rest of the transaction (`vigil.account`,
/// with `vigil.databases` cleared: an API key is limited to no vector
/// database), and the key's id. A key that is not live (unknown, revoked or
/// expired since the sidecar checked it), or NULL, raises 28000.
#[pg_extern(volatile, security_definer)]
fn enter_api_key(key: Option<&str>) -> i64 {
    // SAFETY: reads the current transaction's start time (`now()`).
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    let entered = key.and_then(|key| {
        let prefix = vigil_auth::prefix_of(KeyKind::Api, key).ok()?;
        let kept = live_key(prefix)?;
        let live = kept.expires_at.is_none_or(|at| at > now);
        (live && vigil_auth::verify(key, &kept.hash)).then(|| (kept.id, kept.account.clone()))
    });
    let Some((id, account)) = entered else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION,
            "the API key is not valid"
        );
    };
    set_local(c"vigil.account", &account);
    set_local(c"vigil.databases", "");
    id
}

/// Tells every backend to forget the keys it kept from `table` (vigil.api_keys),
/// when the calling transaction commits; called by the table's trigger.
#[pg_extern(volatile, name = "_forget_api_keys")]
fn forget_api_keys(table: pg_sys::Oid) {
    // SAFETY: `table` is the trigger's own relation, so it exists; the message
    // is queued for the transaction's commit and dropped on its rollback.
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(table) }
}

/// The kept or read row of `prefix`'s key, unless it is revoked or unknown.
fn live_key(prefix: &str) -> Option<Rc<Kept>> {
    if STALE.replace(false) {
        CACHE.with_borrow_mut(HashMap::clear);
    }
    let kept = CACHE.with_borrow(|cache| cache.get(prefix).cloned());
    if kept.is_some() {
        return kept;
    }
    listen();
    READING.set(true);
    let read = read_live_key(prefix);
    READING.set(false);
    let (table, read) = read?;
    TABLE.set(table);
    let read = Rc::new(read);
    // An invalidation during the read may have come after its snapshot: the
    // row is used for this call, not kept.
    if STALE.replace(false) {
        CACHE.with_borrow_mut(HashMap::clear);
        return Some(read);
    }
    CACHE.with_borrow_mut(|cache| {
        if cache.len() >= MAX_KEPT {
            cache.clear();
        }
        cache.insert(prefix.to_owned(), Rc::clone(&read));
    });
    Some(read)
}

/// Reads [`LIVE_KEY`] for `prefix`: the table's oid and the key's row.
fn read_live_key(prefix: &str) -> Option<(pg_sys::Oid, Kept)> {
    type Row = (
        Option<i64>,
        Option<String>,
        Option<Vec<u8>>,
        Option<pgrx::datum::TimestampWithTimeZone>,
        Option<pg_sys::Oid>,
    );
    let found: Result<Option<Row>, pgrx::spi::Error> = Spi::connect(|client| {
        LIVE_KEY_PLAN.with_borrow_mut(|plan| {
            let statement: &OwnedPreparedStatement = match plan {
                Some(statement) => statement,
                None => {
                    let types = [PgBuiltInOids::TEXTOID.oid()];
                    plan.insert(client.prepare(LIVE_KEY, &types)?.keep())
                }
            };
            let args: [DatumWithOid; 1] = [prefix.into()];
            let rows = client.select(statement, Some(1), &args)?;
            match rows.into_iter().next() {
                None => Ok(None),
                Some(row) => Ok(Some((
                    row.get::<i64>(1)?,
                    row.get::<String>(2)?,
                    row.get::<Vec<u8>>(3)?,
                    row.get::<pgrx::datum::TimestampWithTimeZone>(4)?,
                    row.get::<pg_sys::Oid>(5)?,
                ))),
            }
        })
    });
    match found {
        Ok(Some((Some(id), Some(account), Some(hash), expires_at, Some(table)))) => Some((
            table,
            Kept {
                id,
                account,
                hash,
                expires_at: expires_at.map(pg_sys::TimestampTz::from),
            },
        )),
        Ok(_) => None,
        Err(e) => error!("reading the API key: {e}"),
    }
}

/// Registers [`forget`] with this backend's relation cache, once (a
/// registration lasts for the backend's life).
fn listen() {
    if !LISTENING.get() {
        // SAFETY: registers a callback that only empties a thread-local cache.
        unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(forget), pg_sys::Datum::from(0)) };
        LISTENING.set(true);
    }
}

/// Relation cache invalidation: of the keys' table (its trigger, above), or
/// of every relation (InvalidOid, after a cache overflow): the kept keys go
/// before the next lookup. Only sets a flag, so it can neither fail nor
/// meet the cache borrowed.
#[pg_guard]
unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    if READING.get() || relid == pg_sys::InvalidOid || relid == TABLE.get() {
        STALE.set(true);
    }
}

/// `SET LOCAL name = value`, as `set_config(name, value, true)` does it for a
/// superuser: the value lasts until the transaction ends. The function runs
/// as the extension's owner, so the superuser-only settings may be set.
fn set_local(name: &std::ffi::CStr, value: &str) {
    // An account name cannot hold NUL (text cannot); were one to, nothing is set
    // and the error says so rather than entering a shortened name.
    let Ok(value) = CString::new(value) else {
        error!("an account name holds a NUL byte")
    };
    // SAFETY: both pointers are NUL-terminated strings that outlive the call;
    // set_config_option copies what it keeps. Errors it raises (elevel ERROR)
    // unwind through pgrx's guard.
    unsafe {
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_LOCAL,
            true,
            PgLogLevel::ERROR as i32,
            false,
        );
    }
}
