//! Accounts, API keys and user keys: the tables, the admin functions and the
//! checks the sidecar calls, all in `schema.sql`; the cryptographic primitives
//! those SQL functions use are here, from the pure `vigil-auth` crate.
//!
//! The primitives are internal (`vigil._*`): they are granted to no one but the
//! extension's owner, and reached by callers only through the SQL functions.

mod enter;
#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use std::ffi::CString;

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use vigil_auth::{KeyKind, SECRET_BYTES};

static ACCOUNT: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static DATABASES: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// `vigil.account`: the account the transaction acts for, the key of row-level
/// security. Superuser-only, so the application role cannot set it; the SECURITY
/// DEFINER `vigil.enter_account` sets it after checking the account's user key.
pub fn register_settings() {
    GucRegistry::define_string_guc(
        c"vigil.account",
        c"The account this transaction acts for (set by vigil.enter_account).",
        c"Row-level security of the vector tables keys on it. Only a superuser can set it directly.",
        &ACCOUNT,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"vigil.databases",
        c"The databases of the account this transaction may use, comma-separated; empty: all (set by vigil.enter_account).",
        c"A user key limited to some databases limits the transaction it entered. Only a superuser can set it directly.",
        &DATABASES,
        GucContext::Suset,
        GucFlags::default(),
    );
}

/// Whether the transaction may use its account's database `db`: the user key
/// that entered it (`vigil.enter_account`, which sets `vigil.databases`) is
/// limited to none, or to `db` among others. In Rust for the reason
/// [`current_account`] is.
#[pg_extern(stable, parallel_safe, name = "_database_granted")]
fn database_granted(db: &str) -> bool {
    let granted = DATABASES
        .get()
        .and_then(|value| value.into_string().ok())
        .unwrap_or_default();
    granted.is_empty() || granted.split(',').any(|name| name == db)
}

/// The account this transaction acts for: NULL until `vigil.enter_account`
/// succeeds. The key of the vector tables' row-level security.
///
/// Written in Rust, not as `current_setting('vigil.account')` in SQL, because
/// calling it loads this library, which defines `vigil.account` as
/// superuser-only. Until the library is loaded, anyone may `SET vigil.account`
/// as a placeholder, and SQL would read that placeholder; once it is defined,
/// PostgreSQL drops a placeholder set by a role without the privilege.
#[pg_extern(stable, parallel_safe)]
fn current_account() -> Option<String> {
    ACCOUNT
        .get()
        .and_then(|value| value.into_string().ok())
        .filter(|account| !account.is_empty())
}

/// `vigil.default_account()`: what is done without an account is its.
pub const DEFAULT_ACCOUNT: &str = "default@localhost";

/// The account the risk and identity functions act for: the one entered
/// (`vigil.enter_api_key`, `vigil.enter_account`), else the default account
/// (`vigil._acting_account()` in SQL).
pub fn acting_account() -> String {
    current_account().unwrap_or_else(|| DEFAULT_ACCOUNT.to_owned())
}

fn kind(name: &str) -> KeyKind {
    match name {
        "api" => KeyKind::Api,
        "user" => KeyKind::User,
        other => error!("unknown key kind \"{other}\" (expected \"api\" or \"user\")"),
    }
}

/// A new key of `kind` ('api' or 'user'): the secret to show once, its prefix and hash.
#[pg_extern(volatile, name = "_new_key")]
fn new_key(
    kind_name: &str,
) -> TableIterator<
    'static,
    (
        name!(secret, String),
        name!(prefix, String),
        name!(hash, Vec<u8>),
    ),
> {
    let random = crate::pg::strong_random::<SECRET_BYTES>("a key");
    let key = vigil_auth::new_key(kind(kind_name), random);
    TableIterator::once((key.secret, key.prefix, key.hash.to_vec()))
}

/// The stored prefix of a presented key, or NULL when it is not a well-formed key of `kind`.
#[pg_extern(immutable, parallel_safe, name = "_key_prefix")]
fn key_prefix(kind_name: &str, presented: &str) -> Option<String> {
    vigil_auth::prefix_of(kind(kind_name), presented)
        .ok()
        .map(str::to_owned)
}

/// Whether `presented` hashes to `stored`, compared in constant time.
#[pg_extern(immutable, parallel_safe, name = "_verify_key")]
fn verify_key(presented: &str, stored: &[u8]) -> bool {
    vigil_auth::verify(presented, stored)
}

extension_sql_file!(
    "schema.sql",
    name = "keys_schema",
    requires = [
        new_key,
        key_prefix,
        verify_key,
        current_account,
        database_granted,
        enter::enter_api_key,
        enter::forget_api_keys
    ]
);
