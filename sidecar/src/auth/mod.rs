//! Who is calling, and may they.
//!
//! Two kinds of credentials (SPEC, Authentication): an API key in the
//! `x-api-key` header for the transaction and identity endpoints, and a user key
//! with its `account` in the body for the vector endpoints. The checks
//! themselves are the extension's SECURITY DEFINER functions
//! `vigil.authenticate_api_key` and `vigil.enter_account`: the keys' hashes never
//! leave the database. An API key that passed is believed for a moment
//! ([`recent`]), so a busy client costs one check a second, not one a request;
//! a user key that entered its account a moment ago lets a search queue for
//! the model before it takes a connection ([`Limits::admit_early`]), and is
//! checked in the database all the same. This module reads the credentials, turns each outcome
//! into its status (401 missing or unknown, 403 not allowed here), and applies
//! the rate limits: a token bucket per key, and two that only failed attempts
//! drain, so guessing keys is slow: one per client address, and one per
//! credentials that failed (whatever the address). An address locked out by
//! its failures still lets through credentials that passed within the last
//! day ([`limits::KNOWN_FOR`]): one client guessing behind a shared address (a proxy,
//! a NAT) does not lock out the valid keys used from it.
//!
//! Keys are never logged or echoed: errors name the field, never its value, and
//! [`AccountCredentials`] redacts itself in `Debug`.

mod credentials;
mod limits;
pub mod rate;
mod recent;
mod refusal;

use std::future::Future;
use std::net::IpAddr;
use std::time::Instant;

use axum::http::HeaderMap;
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::error::ApiError;
pub use credentials::{AccountCredentials, ApiCaller, ApiKeySecret, API_KEY_HEADER};
pub use limits::Limits;
use limits::{AccountPass, Attempt, KeyRef};
use refusal::{refusal, Credential};

/// A pooled connection being taken (`AppState::db`), for a check that may need one.
pub trait Connecting: Future<Output = Result<crate::abandon::Conn, ApiError>> + Send {}

impl<F: Future<Output = Result<crate::abandon::Conn, ApiError>> + Send> Connecting for F {}

/// Checks the `x-api-key` header for `scope` (None: any scope) from `ip`, on
/// a connection from `connect` unless the same check passed a moment ago
/// ([`recent`]). The connection is the caller's to drop once this returns:
/// a request holds none while its body is sent.
pub async fn check_api_key<C: Connecting>(
    limits: &Limits,
    connect: impl FnOnce() -> C,
    headers: &HeaderMap,
    ip: IpAddr,
    scope: Option<&str>,
) -> Result<ApiCaller, ApiError> {
    let key = match headers.get(API_KEY_HEADER).map(|v| v.to_str()) {
        None | Some(Ok("")) => {
            limits.refuse_locked_out(ip, None)?;
            return Err(limits.failed(ip, None, refusal("missing", Credential::ApiKey)));
        }
        Some(Ok(key)) => key,
        // Not visible ASCII, so no key of ours: unknown, without asking the database.
        Some(Err(_)) => {
            limits.refuse_locked_out(ip, None)?;
            return Err(limits.failed(ip, None, refusal("unknown", Credential::ApiKey)));
        }
    };
    let (credentials, check) = ([Some(key)], [Some(key), scope]);
    let attempt = Attempt {
        credentials: &credentials,
        check: &check,
    };
    limits.refuse_locked_out(ip, Some(attempt))?;
    if let Some(caller) = limits.recent.get(&[Some(key), scope], ip, Instant::now()) {
        tracing::Span::current().record("key", format!("api:{}", caller.key_id));
        limits.take(KeyRef::Api(caller.key_id), caller.quota)?;
        return Ok(caller);
    }
    let db = connect().await?;
    let statement = db
        .prepare_cached(
            "SELECT key_id, outcome, name, prefix, scopes, to_json(expires_at) #>> '{}', \
             rate_per_second, burst FROM vigil.authenticate_api_key($1, $2, $3)",
        )
        .await?;
    let row = db.query_one(&statement, &[&key, &scope, &ip]).await?;
    let outcome: String = row.try_get(1)?;
    if outcome != "ok" {
        return Err(limits.failed(ip, Some(attempt), refusal(&outcome, Credential::ApiKey)));
    }
    limits.passed(attempt, ip);
    let key_id: i64 = row.try_get(0)?;
    tracing::Span::current().record("key", format!("api:{key_id}"));
    let quota = limits.quota_of(row.try_get(6)?, row.try_get(7)?);
    let caller = ApiCaller {
        key_id,
        key: ApiKeySecret(key.to_owned()),
        name: row.try_get(2)?,
        prefix: row.try_get(3)?,
        scopes: row.try_get(4)?,
        expires_at: row.try_get(5)?,
        quota,
    };
    limits
        .recent
        .insert(&[Some(key), scope], ip, caller.clone(), Instant::now());
    limits.take(KeyRef::Api(key_id), quota)?;
    Ok(caller)
}

/// The statement that checks body credentials: `vigil.enter_account`.
const ENTER_ACCOUNT: &str = "SELECT key_id, outcome, rate_per_second, burst \
                             FROM vigil.enter_account($1, $2, $3)";

/// Checks the body credentials for database `db` inside the request's
/// transaction; on success the rest of that transaction acts for the account
/// (the database's row-level security keys on it). Returns the user key's id.
/// `charged`: [`Limits::admit_early`] has taken this request's rate-limit token.
pub async fn enter_account(
    limits: &Limits,
    tx: &impl GenericClient,
    credentials: &AccountCredentials,
    db: Option<&str>,
    ip: IpAddr,
    charged: bool,
) -> Result<i64, ApiError> {
    let (account, user_key) = to_enter(limits, credentials, db, ip)?;
    let statement = tx.prepare_cached(ENTER_ACCOUNT).await?;
    let row = tx
        .query_one(&statement, &[&account, &user_key, &db])
        .await?;
    settle_entry(limits, credentials, db, ip, charged, &row)
}

/// Checks body credentials for database `db` without acting on them: they
/// passed from `ip` a moment ago, or `vigil.enter_account` lets them in, in
/// a transaction on a connection from `connect` that is rolled back and
/// returned at once. For a long body, before the rest of it is read
/// (`extract::AccountJson`); the request enters the account again for its
/// work, and takes its rate-limit token then.
pub async fn check_account<C: Connecting>(
    limits: &Limits,
    connect: impl FnOnce() -> C,
    credentials: &AccountCredentials,
    db: Option<&str>,
    ip: IpAddr,
) -> Result<(), ApiError> {
    let (account, user_key) = to_enter(limits, credentials, db, ip)?;
    if limits
        .recent_accounts
        .get(&credentials.check(db), ip, Instant::now())
        .is_some()
    {
        return Ok(());
    }
    let mut client = connect().await?;
    let tx = client.transaction().await?;
    let statement = tx.prepare_cached(ENTER_ACCOUNT).await?;
    let row = tx
        .query_one(&statement, &[&account, &user_key, &db])
        .await?;
    settle_entry(limits, credentials, db, ip, true, &row).map(|_| ())
}

/// Runs `sql` for the account in one round trip, for a request whose
/// credentials [`Limits::admit_early`] admitted (its token taken): BEGIN,
/// `vigil.enter_account`, `sql` and COMMIT go to the server together, which
/// runs them in order, and their answers come back together. The refusals
/// are the ones [`enter_account`] gives, and come first: `sql` has then run
/// with no account (every vector function refuses at once without one,
/// row-level security hides every row, and COMMIT rolls back its failure).
/// The sequential way took four round trips, a wake-up of the backend and
/// of this task each; docs/performance.md ("Vector database", "One round trip a search") has the figure.
/// Nothing can leave the connection inside the transaction: the four are
/// queued before the first answer is awaited, so a request dropped midway
/// still sends COMMIT. Queued together, with nothing awaited between them,
/// they are also never interleaved with another caller's statements, so
/// several searches may run this way at once on one connection (a query
/// embedder's: `vectordb::search`), each in a transaction
/// of its own that no other statement enters.
pub async fn enter_account_and_run(
    limits: &Limits,
    client: &deadpool_postgres::Client,
    credentials: &AccountCredentials,
    db: Option<&str>,
    ip: IpAddr,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, ApiError> {
    let (account, user_key) = to_enter(limits, credentials, db, ip)?;
    let enter = client.prepare_cached(ENTER_ACCOUNT).await?;
    let work = client.prepare_cached(sql).await?;
    let enter_params: [&(dyn ToSql + Sync); 3] = [&account, &user_key, &db];
    let (begin, entry, rows, commit) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.query(&enter, &enter_params),
        client.query(&work, params),
        client.batch_execute("COMMIT"),
    );
    begin?;
    let entry = entry?;
    let [row] = entry.as_slice() else {
        return Err(ApiError::internal(&format!(
            "vigil.enter_account returned {} rows, not one",
            entry.len()
        )));
    };
    settle_entry(limits, credentials, db, ip, true, row)?;
    let rows = rows?;
    commit?;
    Ok(rows)
}

/// The account and user key to check, or the refusal that needs no
/// database (locked out, or either missing).
fn to_enter<'a>(
    limits: &Limits,
    credentials: &'a AccountCredentials,
    db: Option<&str>,
    ip: IpAddr,
) -> Result<(&'a str, &'a str), ApiError> {
    let user_key = credentials.user_key.as_deref().unwrap_or("");
    let account = credentials.account.as_deref().unwrap_or("");
    let missing = if user_key.is_empty() {
        Some(Credential::UserKey)
    } else if account.is_empty() {
        Some(Credential::Account)
    } else {
        None
    };
    if let Some(credential) = missing {
        limits.refuse_locked_out(ip, None)?;
        return Err(limits.failed(ip, None, refusal("missing", credential)));
    }
    let check = credentials.check(db);
    limits.refuse_locked_out(ip, Some(Attempt::of_account(&check)))?;
    Ok((account, user_key))
}

/// Acts on what `vigil.enter_account` returned: a refusal forgets the
/// credentials' pass and counts against the address; a pass is remembered
/// and takes the key's rate-limit token unless `charged`.
fn settle_entry(
    limits: &Limits,
    credentials: &AccountCredentials,
    db: Option<&str>,
    ip: IpAddr,
    charged: bool,
    row: &Row,
) -> Result<i64, ApiError> {
    let outcome: String = row.try_get(1)?;
    let check = credentials.check(db);
    let attempt = Attempt::of_account(&check);
    if outcome != "ok" && crate::db::in_replica() {
        // A standby may not have replayed a new key yet: only the
        // primary's refusal counts (the read goes there: `reads`).
        return Err(ApiError::unavailable(
            "a replica refused the credentials; the primary decides",
        ));
    }
    if outcome != "ok" {
        limits.recent_accounts.remove(&check, ip);
        return Err(limits.failed(ip, Some(attempt), refusal(&outcome, Credential::UserKey)));
    }
    limits.passed(attempt, ip);
    let key_id: i64 = row.try_get(0)?;
    tracing::Span::current().record("key", format!("user:{key_id}"));
    let quota = limits.quota_of(row.try_get(2)?, row.try_get(3)?);
    limits
        .recent_accounts
        .insert(&check, ip, AccountPass { key_id, quota }, Instant::now());
    if !charged {
        limits.take(KeyRef::User(key_id), quota)?;
    }
    Ok(key_id)
}
