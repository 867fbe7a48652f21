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
//! day ([`KNOWN_FOR`]): one client guessing behind a shared address (a proxy,
//! a NAT) does not lock out the valid keys used from it.
//!
//! Keys are never logged or echoed: errors name the field, never its value, and
//! [`AccountCredentials`] redacts itself in `Debug`.

pub mod client_ip;
pub mod rate;
mod recent;
pub mod whoami;

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::config::LimitArgs;
use crate::error::ApiError;
use rate::{retry_after_secs, Buckets, Quota};
use recent::{fingerprint, Check, Recent};

/// A pooled connection being taken (`AppState::db`), for a check that may need one.
pub trait Connecting: Future<Output = Result<crate::abandon::Conn, ApiError>> + Send {}

impl<F: Future<Output = Result<crate::abandon::Conn, ApiError>> + Send> Connecting for F {}

/// The header that carries API keys.
pub const API_KEY_HEADER: &str = "x-api-key";

/// How long credentials that passed stay exempt from their address's lock-out.
pub const KNOWN_FOR: Duration = Duration::from_secs(24 * 3600);

/// Authentication state shared by all requests: the rate limits, and the
/// checks that passed a moment ago.
pub struct Limits {
    per_key: Buckets<KeyRef>,
    /// Failed attempts by client address.
    failures: Buckets<IpAddr>,
    /// Failed attempts by what failed (a digest of the credentials and what
    /// they were checked for), from any address.
    failing: Buckets<[u8; 32]>,
    key_default: Quota,
    failure: Quota,
    recent: Recent<ApiCaller>,
    recent_accounts: Recent<AccountPass>,
    /// Credentials that passed within [`KNOWN_FOR`], from any address.
    known: Recent<()>,
}

/// An attempt as the lock-out sees it: the credentials alone (what a pass
/// vouches for), and the whole check (with the scope or database they were
/// checked for; what a failure counts against).
#[derive(Clone, Copy)]
struct Attempt<'a> {
    credentials: &'a Check<'a>,
    check: &'a Check<'a>,
}

/// What entering an account found of the user key: its id and its limits.
#[derive(Debug, Clone, Copy)]
struct AccountPass {
    key_id: i64,
    quota: Quota,
}

/// A bucket's key: API and user keys have separate id spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum KeyRef {
    Api(i64),
    User(i64),
}

impl Limits {
    pub fn new(args: &LimitArgs) -> Result<Limits, String> {
        Ok(Limits {
            per_key: Buckets::new(10_000),
            failures: Buckets::new(100_000),
            failing: Buckets::new(100_000),
            key_default: Quota::new(args.rate_per_second, args.rate_burst)?,
            failure: Quota::new(
                args.auth_failures_per_minute / 60.0,
                args.auth_failure_burst,
            )?,
            recent: Recent::new(Duration::from_millis(args.auth_cache_ms)),
            recent_accounts: Recent::new(Duration::from_millis(args.auth_cache_ms)),
            known: Recent::from_anywhere(KNOWN_FOR),
        })
    }

    /// Whether a request may do costly work (a search's model call) before
    /// it enters the account in the database: only when these credentials
    /// entered it for `db` from `ip` within `--auth-cache-ms`. Then the key's
    /// rate-limit token is taken here (a 429 before any work), and
    /// [`enter_account`] must be told so (`charged`). The account is still
    /// entered, and the key checked, in the request's transaction.
    pub fn admit_early(
        &self,
        credentials: &AccountCredentials,
        db: Option<&str>,
        ip: IpAddr,
    ) -> Result<bool, ApiError> {
        let check = credentials.check(db);
        self.refuse_locked_out(ip, Some(credentials.attempt(&check)))?;
        let Some(pass) = self.recent_accounts.get(&check, ip, Instant::now()) else {
            return Ok(false);
        };
        self.take(KeyRef::User(pass.key_id), pass.quota)?;
        Ok(true)
    }

    /// 429 if this attempt's check has failed too often, or if this address
    /// has and the credentials have not passed lately.
    fn refuse_locked_out(&self, ip: IpAddr, attempt: Option<Attempt<'_>>) -> Result<(), ApiError> {
        let now = Instant::now();
        let refuse = |whose: &str, wait| {
            ApiError::too_many(
                "too_many_failures",
                &format!("too many failed authentication attempts {whose}"),
                retry_after_secs(wait),
            )
        };
        if let Some(attempt) = attempt {
            self.failing
                .check(&fingerprint(attempt.check), self.failure, now)
                .map_err(|wait| refuse("with these credentials", wait))?;
        }
        let Err(wait) = self.failures.check(&ip, self.failure, now) else {
            return Ok(());
        };
        // Locked out: only credentials that passed lately get through.
        match attempt {
            Some(a) if self.known.get(a.credentials, ip, now).is_some() => Ok(()),
            _ => Err(refuse("from this address", wait)),
        }
    }

    /// 429 if this address is locked out, for a request whose credentials
    /// are not read yet (they would have to be read to be let through).
    pub fn refuse_address_locked_out(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.refuse_locked_out(ip, None)
    }

    /// Counts a failed attempt against the address and its check, and
    /// passes the error on.
    fn failed(&self, ip: IpAddr, attempt: Option<Attempt<'_>>, error: ApiError) -> ApiError {
        let now = Instant::now();
        self.failures.charge(&ip, self.failure, now);
        if let Some(attempt) = attempt {
            self.failing
                .charge(&fingerprint(attempt.check), self.failure, now);
            self.known.remove(attempt.credentials, ip);
        }
        error
    }

    /// Remembers credentials that passed, for [`Limits::refuse_locked_out`].
    fn passed(&self, attempt: Attempt<'_>, ip: IpAddr) {
        self.known
            .insert(attempt.credentials, ip, (), Instant::now());
    }

    /// A key's own limits from the database, else the defaults.
    fn quota_of(&self, per_second: Option<f32>, burst: Option<i32>) -> Quota {
        Quota::new(
            per_second.map_or(self.key_default.per_second, f64::from),
            burst
                .and_then(|b| u32::try_from(b).ok())
                .unwrap_or(self.key_default.burst),
        )
        .unwrap_or(self.key_default)
    }

    /// Takes a token from the key's bucket.
    fn take(&self, key: KeyRef, quota: Quota) -> Result<(), ApiError> {
        self.per_key
            .take(&key, quota, Instant::now())
            .map_err(|wait| {
                ApiError::too_many(
                    "rate_limited",
                    "this key has made too many requests; slow down",
                    retry_after_secs(wait),
                )
            })
    }
}

/// An API key that passed: what the handlers and the records need of it.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    /// The key's database id, recorded with what it does.
    pub key_id: i64,
    /// The key itself, which the handler's statement gives to
    /// `vigil.enter_api_key` so that it acts for the key's account.
    pub key: ApiKeySecret,
    pub name: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    /// ISO 8601, or None for a key that does not expire.
    pub expires_at: Option<String>,
    pub quota: Quota,
}

/// An API key as sent, kept out of logs.
#[derive(Clone)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    #[cfg(test)]
    pub fn for_tests(key: &str) -> Self {
        ApiKeySecret(key.to_owned())
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

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

/// The body credentials of the vector endpoints, as read by `extract::AccountJson`.
#[derive(Default, Clone)]
pub struct AccountCredentials {
    pub user_key: Option<String>,
    pub account: Option<String>,
}

impl AccountCredentials {
    /// What entering the account checks: these credentials, for `db`.
    fn check<'a>(&'a self, db: Option<&'a str>) -> [Option<&'a str>; 3] {
        [self.user_key.as_deref(), self.account.as_deref(), db]
    }

    /// This check as the lock-out sees it: the first two parts of `check`
    /// are the credentials.
    fn attempt<'a>(&self, check: &'a [Option<&'a str>; 3]) -> Attempt<'a> {
        Attempt {
            credentials: &check[..2],
            check,
        }
    }
}

impl fmt::Debug for AccountCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountCredentials")
            .field("user_key", &self.user_key.as_ref().map(|_| "<redacted>"))
            .field("account", &self.account)
            .finish()
    }
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
/// of this task each; the performance log (`git show 9307556:docs/performance-log.md`), "One round trip a search", has the figures.
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
    limits.refuse_locked_out(ip, Some(credentials.attempt(&check)))?;
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
    let attempt = credentials.attempt(&check);
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

#[derive(Clone, Copy)]
enum Credential {
    ApiKey,
    UserKey,
    Account,
}

impl Credential {
    fn field(self) -> &'static str {
        match self {
            Credential::ApiKey => API_KEY_HEADER,
            Credential::UserKey => "userKey",
            Credential::Account => "account",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Credential::ApiKey => "API key",
            Credential::UserKey => "user key",
            Credential::Account => "account",
        }
    }
}

/// The error of a check's outcome. Statuses as DESIGN.md fixes them: 401 when
/// the caller is not identified, 403 when identified but not allowed here.
fn refusal(outcome: &str, credential: Credential) -> ApiError {
    let noun = credential.noun();
    let (status, code, message, field) = match outcome {
        "missing" => (
            StatusCode::UNAUTHORIZED,
            "missing_credentials",
            match credential {
                Credential::ApiKey => "an API key is required in the x-api-key header".to_owned(),
                _ => format!("{} is required", credential.field()),
            },
            credential.field(),
        ),
        "unknown" => (
            StatusCode::UNAUTHORIZED,
            "unknown_key",
            format!("the {noun} is not recognised"),
            credential.field(),
        ),
        "revoked" => (
            StatusCode::FORBIDDEN,
            "key_revoked",
            format!("the {noun} has been revoked"),
            credential.field(),
        ),
        "expired" => (
            StatusCode::FORBIDDEN,
            "key_expired",
            format!("the {noun} has expired"),
            credential.field(),
        ),
        "scope" => (
            StatusCode::FORBIDDEN,
            "key_scope",
            format!("the {noun} is not allowed to use this endpoint"),
            credential.field(),
        ),
        "ip" => (
            StatusCode::FORBIDDEN,
            "ip_not_allowed",
            format!("the {noun} may not be used from this address"),
            credential.field(),
        ),
        "account" => (
            StatusCode::FORBIDDEN,
            "wrong_account",
            "the user key does not belong to this account".to_owned(),
            "account",
        ),
        "database" => (
            StatusCode::FORBIDDEN,
            "database_not_granted",
            "the user key may not use this database".to_owned(),
            "dbName",
        ),
        other => {
            return ApiError::internal(&format!("unexpected authentication outcome {other:?}"))
        }
    };
    ApiError::new(status, code, message).with_field(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(auth_cache_ms: u64) -> Limits {
        Limits::new(&LimitArgs {
            rate_per_second: 1.0,
            rate_burst: 1,
            auth_failures_per_minute: 10.0,
            auth_failure_burst: 10,
            auth_cache_ms,
        })
        .unwrap()
    }

    fn credentials(user_key: &str, account: &str) -> AccountCredentials {
        AccountCredentials {
            user_key: Some(user_key.into()),
            account: Some(account.into()),
        }
    }

    /// What `enter_account` remembers when the database lets `who` in.
    fn passed(limits: &Limits, who: &AccountCredentials, db: &str, ip: IpAddr) {
        let pass = AccountPass {
            key_id: 7,
            quota: Quota::new(1.0, 1).unwrap(),
        };
        let check = who.check(Some(db));
        limits
            .recent_accounts
            .insert(&check, ip, pass, Instant::now());
    }

    #[test]
    fn only_credentials_that_just_entered_are_admitted_early() {
        let limits = limits(1000);
        let (me, ip) = (credentials("vu_a", "a@x.org"), IpAddr::from([10, 0, 0, 1]));
        assert!(!limits.admit_early(&me, Some("notes"), ip).unwrap());
        passed(&limits, &me, "notes", ip);
        for (who, db, from) in [
            (credentials("vu_b", "a@x.org"), "notes", ip),
            (credentials("vu_a", "b@x.org"), "notes", ip),
            (credentials("vu_a", "a@x.org"), "other", ip),
            (
                credentials("vu_a", "a@x.org"),
                "notes",
                IpAddr::from([10, 0, 0, 2]),
            ),
        ] {
            assert!(!limits.admit_early(&who, Some(db), from).unwrap());
        }
        assert!(limits.admit_early(&me, Some("notes"), ip).unwrap());
        // A refusal in the database forgets the pass at once.
        limits.recent_accounts.remove(&me.check(Some("notes")), ip);
        assert!(!limits.admit_early(&me, Some("notes"), ip).unwrap());
    }

    #[test]
    fn an_early_admission_takes_the_rate_limit_token_first() {
        let limits = limits(1000);
        let (me, ip) = (credentials("vu_a", "a@x.org"), IpAddr::from([10, 0, 0, 1]));
        passed(&limits, &me, "notes", ip);
        assert!(limits.admit_early(&me, Some("notes"), ip).unwrap());
        let refused = limits.admit_early(&me, Some("notes"), ip).unwrap_err();
        assert_eq!(
            (refused.status, refused.code),
            (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
        );
    }

    /// `n` failed attempts of `check` (credentials first, then what for) from `ip`.
    fn fail(limits: &Limits, check: &[Option<&str>], ip: IpAddr, n: usize) {
        let attempt = Attempt {
            credentials: &check[..1],
            check,
        };
        for _ in 0..n {
            limits.failed(
                ip,
                Some(attempt),
                ApiError::from_status(StatusCode::UNAUTHORIZED),
            );
        }
    }

    fn refused(limits: &Limits, check: &[Option<&str>], ip: IpAddr) -> bool {
        let attempt = Attempt {
            credentials: &check[..1],
            check,
        };
        limits.refuse_locked_out(ip, Some(attempt)).is_err()
    }

    #[test]
    fn an_address_locked_out_still_lets_in_credentials_that_passed() {
        let limits = limits(1000);
        let (shared, elsewhere) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let valid = [Some("vk_valid"), Some("transaction")];
        limits.passed(
            Attempt {
                credentials: &valid[..1],
                check: &valid,
            },
            elsewhere,
        );
        // Someone behind the same address guesses ten keys.
        for guess in 0..10 {
            let key = format!("vk_guess{guess}");
            fail(&limits, &[Some(&key), Some("transaction")], shared, 1);
        }
        assert!(refused(
            &limits,
            &[Some("vk_guess99"), Some("transaction")],
            shared
        ));
        assert!(refused(
            &limits,
            &[Some("vk_never_seen"), Some("transaction")],
            shared
        ));
        assert!(
            !refused(&limits, &valid, shared),
            "a key that passed is not locked out"
        );
        // The same guesses from elsewhere are not refused for this address's failures.
        assert!(!refused(
            &limits,
            &[Some("vk_guess99"), Some("transaction")],
            elsewhere
        ));
    }

    #[test]
    fn credentials_that_keep_failing_are_refused_from_every_address() {
        let limits = limits(1000);
        let revoked = [Some("vk_revoked"), Some("transaction")];
        for i in 1..=10u8 {
            let ip = IpAddr::from([10, 0, 1, i]);
            assert!(!refused(&limits, &revoked, ip), "attempt {i}");
            fail(&limits, &revoked, ip, 1);
        }
        assert!(refused(&limits, &revoked, IpAddr::from([10, 0, 2, 1])));
        // The same key for another scope is another check.
        assert!(!refused(
            &limits,
            &[Some("vk_revoked"), Some("identity")],
            IpAddr::from([10, 0, 2, 1])
        ));
        // A failure forgets that the credentials passed.
        let valid = [Some("vk_valid"), Some("transaction")];
        let attempt = Attempt {
            credentials: &valid[..1],
            check: &valid,
        };
        let ip = IpAddr::from([10, 0, 3, 1]);
        limits.passed(attempt, ip);
        fail(&limits, &[Some("vk_other"), None], ip, 10);
        assert!(!refused(&limits, &valid, ip));
        fail(&limits, &valid, ip, 1);
        assert!(refused(&limits, &valid, ip));
    }

    #[test]
    fn with_the_cache_off_nothing_is_admitted_early() {
        let limits = limits(0);
        let (me, ip) = (credentials("vu_a", "a@x.org"), IpAddr::from([10, 0, 0, 1]));
        passed(&limits, &me, "notes", ip);
        assert!(!limits.admit_early(&me, Some("notes"), ip).unwrap());
    }
}
