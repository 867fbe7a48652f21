//! `vigil.enter_api_key(key)`: the API key's account for the rest of the
//! transaction, and the key's id.
//!
//! The sidecar calls it in every statement that acts for a key
//! (`SELECT vigil.risk_score($1, vigil.enter_api_key($2))`), having checked the
//! key's scope and address a moment before (`vigil.authenticate_api_key`,
//! believed for a second). So it is on the hot path of every assessment, and
//! in Rust rather than PL/pgSQL: one lookup by a plan kept for the backend's
//! life, the hash compared here, the settings set directly, and no
//! `SET search_path` clause, whose save and restore of the setting cost as
//! much as the rest (docs/performance.md, "Entering an account").
//!
//! Without that clause the function runs under its caller's `search_path`,
//! as the extension's owner: so [`LIVE_KEY`] names every table, function and
//! operator with its schema, and no object a caller's schema holds can stand
//! in for ours.

use std::cell::RefCell;
use std::ffi::CString;

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use vigil_auth::KeyKind;

/// The key of this prefix, when it is live: `vigil._key_status`'s "active"
/// (not revoked, and not past its expiry), written out with qualified
/// operators for the reason in the module's docs.
const LIVE_KEY: &str = "SELECT id, account, hash FROM vigil.api_keys \
     WHERE prefix OPERATOR(pg_catalog.=) $1 AND revoked_at IS NULL \
     AND (expires_at IS NULL OR expires_at OPERATOR(pg_catalog.>) pg_catalog.now())";

thread_local! {
    /// [`LIVE_KEY`], planned once per backend.
    static LIVE_KEY_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

/// The account of `key` for the rest of the transaction (`vigil.account`,
/// with `vigil.databases` cleared: an API key is limited to no vector
/// database), and the key's id. A key that is not live (unknown, revoked or
/// expired since the sidecar checked it), or NULL, raises 28000.
#[pg_extern(volatile, security_definer)]
fn enter_api_key(key: Option<&str>) -> i64 {
    let entered = key.and_then(|key| {
        let prefix = vigil_auth::prefix_of(KeyKind::Api, key).ok()?;
        let (id, account, hash) = live_key(prefix)?;
        vigil_auth::verify(key, &hash).then_some((id, account))
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

/// (id, account, stored hash) of the live key of `prefix`, if there is one.
fn live_key(prefix: &str) -> Option<(i64, String, Vec<u8>)> {
    let found: Result<_, pgrx::spi::Error> = Spi::connect(|client| {
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
                ))),
            }
        })
    });
    match found {
        Ok(Some((Some(id), Some(account), Some(hash)))) => Some((id, account, hash)),
        Ok(_) => None,
        Err(e) => error!("reading the API key: {e}"),
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
