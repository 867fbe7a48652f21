//! The rate limits and lock-outs every request's credentials meet, and the
//! checks that passed a moment ago ([`recent`](super::recent)): state
//! shared by all requests, kept apart from the checks themselves
//! ([`auth`](super)), which consult it before and after asking the database.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::credentials::{AccountCredentials, ApiCaller};
use super::rate::{retry_after_secs, Buckets, Quota};
use super::recent::{fingerprint, Check, Recent};
use crate::config::LimitArgs;
use crate::error::ApiError;

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
    pub(super) recent: Recent<ApiCaller>,
    pub(super) recent_accounts: Recent<AccountPass>,
    /// Credentials that passed within [`KNOWN_FOR`], from any address.
    known: Recent<()>,
}

/// An attempt as the lock-out sees it: the credentials alone (what a pass
/// vouches for), and the whole check (with the scope or database they were
/// checked for; what a failure counts against).
#[derive(Clone, Copy)]
pub(super) struct Attempt<'a> {
    pub(super) credentials: &'a Check<'a>,
    pub(super) check: &'a Check<'a>,
}

impl<'a> Attempt<'a> {
    /// An account's check as the lock-out sees it: the first two parts of
    /// `check` (the user key and the account) are the credentials.
    pub(super) fn of_account(check: &'a [Option<&'a str>; 3]) -> Attempt<'a> {
        Attempt {
            credentials: &check[..2],
            check,
        }
    }
}

/// What entering an account found of the user key: its id and its limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct AccountPass {
    pub(super) key_id: i64,
    pub(super) quota: Quota,
}

/// A bucket's key: API and user keys have separate id spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum KeyRef {
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
        self.refuse_locked_out(ip, Some(Attempt::of_account(&check)))?;
        let Some(pass) = self.recent_accounts.get(&check, ip, Instant::now()) else {
            return Ok(false);
        };
        self.take(KeyRef::User(pass.key_id), pass.quota)?;
        Ok(true)
    }

    /// 429 if this attempt's check has failed too often, or if this address
    /// has and the credentials have not passed lately.
    pub(super) fn refuse_locked_out(
        &self,
        ip: IpAddr,
        attempt: Option<Attempt<'_>>,
    ) -> Result<(), ApiError> {
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
    pub(super) fn failed(
        &self,
        ip: IpAddr,
        attempt: Option<Attempt<'_>>,
        error: ApiError,
    ) -> ApiError {
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
    pub(super) fn passed(&self, attempt: Attempt<'_>, ip: IpAddr) {
        self.known
            .insert(attempt.credentials, ip, (), Instant::now());
    }

    /// A key's own limits from the database, else the defaults.
    pub(super) fn quota_of(&self, per_second: Option<f32>, burst: Option<i32>) -> Quota {
        Quota::new(
            per_second.map_or(self.key_default.per_second, f64::from),
            burst
                .and_then(|b| u32::try_from(b).ok())
                .unwrap_or(self.key_default.burst),
        )
        .unwrap_or(self.key_default)
    }

    /// Takes a token from the key's bucket.
    pub(super) fn take(&self, key: KeyRef, quota: Quota) -> Result<(), ApiError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

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
