//! Credential checks that passed a moment ago.
//!
//! An API key that passed is believed for `--auth-cache-ms` (1 s by default;
//! 0 turns it off), so a busy key is not checked in the database on every
//! request: a key revoked, expired, or given other scopes or addresses is
//! refused at most that long later. A user key that entered its account is
//! remembered for as long, but only so a search may queue its query for the
//! model before it takes a connection: the account is still entered in the
//! database on every request, and a refusal forgets the pass at once.
//!
//! Only successes are remembered. Failures always go to the database and
//! count against the client address. An entry is keyed by a SHA-256 of the
//! credentials, what they were checked for and the client address, so the
//! map holds no key and a hit means the same check on the same key from the
//! same place. Per-key rate limits apply on every request, hit or not.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Entries kept at most; beyond it expired ones are dropped, and if all are
/// fresh the map starts over.
const CAPACITY: usize = 10_000;

/// What a check was about: the credentials and what they were checked for,
/// each part present or absent.
pub type Check<'a> = [Option<&'a str>];

/// Passes of one kind of check, each with what the check found (`V`).
pub struct Recent<V> {
    ttl: Duration,
    /// Whether the client address is part of what was checked: a pass from
    /// one address is no pass from another.
    by_address: bool,
    entries: Mutex<HashMap<[u8; 32], (Instant, V)>>,
}

impl<V: Clone> Recent<V> {
    pub fn new(ttl: Duration) -> Recent<V> {
        Recent {
            ttl,
            by_address: true,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Passes that hold from any address.
    pub fn from_anywhere(ttl: Duration) -> Recent<V> {
        Recent {
            by_address: false,
            ..Recent::new(ttl)
        }
    }

    fn id(&self, check: &Check<'_>, ip: IpAddr) -> [u8; 32] {
        let mut digest = Sha256::new();
        digest_check(&mut digest, check);
        if self.by_address {
            match ip {
                IpAddr::V4(v4) => digest.update(v4.octets()),
                IpAddr::V6(v6) => digest.update(v6.octets()),
            }
        }
        digest.finalize().into()
    }

    /// What `check` found, if it passed from `ip` within the TTL.
    pub fn get(&self, check: &Check<'_>, ip: IpAddr, now: Instant) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let id = self.id(check, ip);
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&id)
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(_, found)| found.clone())
    }

    /// Remembers a check that passed.
    pub fn insert(&self, check: &Check<'_>, ip: IpAddr, found: V, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let id = self.id(check, ip);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.ttl);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(id, (now, found));
    }

    /// Forgets a pass: the same check has just failed.
    pub fn remove(&self, check: &Check<'_>, ip: IpAddr) {
        if self.ttl.is_zero() {
            return;
        }
        let id = self.id(check, ip);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(&id);
    }
}

/// Each part as its length then its bytes (an absent one as a length no
/// text has), so no two different checks digest alike.
fn digest_check(digest: &mut Sha256, check: &Check<'_>) {
    for part in check {
        match part {
            Some(text) => {
                digest.update((text.len() as u64).to_le_bytes());
                digest.update(text.as_bytes());
            }
            None => digest.update(u64::MAX.to_le_bytes()),
        }
    }
}

/// A digest of credentials, to key their failures by without keeping them.
pub fn fingerprint(check: &Check<'_>) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest_check(&mut digest, check);
    digest.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rate::Quota;
    use crate::auth::ApiCaller;

    type RecentKeys = Recent<ApiCaller>;

    fn caller(key_id: i64) -> ApiCaller {
        ApiCaller {
            key_id,
            key: crate::auth::ApiKeySecret::for_tests("vk_1_secret"),
            name: "shop".into(),
            prefix: "vk_1".into(),
            scopes: vec!["transaction".into()],
            expires_at: None,
            quota: Quota::new(10.0, 10).unwrap(),
        }
    }

    #[test]
    fn a_pass_is_remembered_for_the_ttl_only() {
        let recent = RecentKeys::new(Duration::from_secs(1));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        assert!(recent
            .get(&[Some("vk_a"), Some("transaction")], ip, t0)
            .is_none());
        recent.insert(&[Some("vk_a"), Some("transaction")], ip, caller(7), t0);
        let hit = recent.get(
            &[Some("vk_a"), Some("transaction")],
            ip,
            t0 + Duration::from_millis(999),
        );
        assert_eq!(hit.map(|c| c.key_id), Some(7));
        assert!(recent
            .get(
                &[Some("vk_a"), Some("transaction")],
                ip,
                t0 + Duration::from_secs(1)
            )
            .is_none());
    }

    #[test]
    fn another_key_scope_or_address_is_a_miss() {
        let recent = RecentKeys::new(Duration::from_secs(1));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        recent.insert(&[Some("vk_a"), Some("transaction")], ip, caller(7), t0);
        assert!(recent
            .get(&[Some("vk_b"), Some("transaction")], ip, t0)
            .is_none());
        assert!(recent
            .get(&[Some("vk_a"), Some("identity")], ip, t0)
            .is_none());
        assert!(recent.get(&[Some("vk_a"), None], ip, t0).is_none());
        assert!(recent
            .get(
                &[Some("vk_a"), Some("transaction")],
                IpAddr::from([10, 0, 0, 2]),
                t0
            )
            .is_none());
    }

    #[test]
    fn a_zero_ttl_remembers_nothing() {
        let recent = RecentKeys::new(Duration::ZERO);
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        recent.insert(&[Some("vk_a"), None], ip, caller(7), t0);
        assert!(recent.get(&[Some("vk_a"), None], ip, t0).is_none());
    }

    #[test]
    fn parts_cannot_run_together_and_a_failure_forgets() {
        let recent = RecentKeys::new(Duration::from_secs(1));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        recent.insert(&[Some("ab"), Some("c")], ip, caller(7), t0);
        assert!(recent.get(&[Some("a"), Some("bc")], ip, t0).is_none());
        assert!(recent.get(&[Some("ab"), Some("c"), None], ip, t0).is_none());
        assert!(recent.get(&[Some("ab"), Some("c")], ip, t0).is_some());
        recent.remove(&[Some("ab"), Some("c")], ip);
        assert!(recent.get(&[Some("ab"), Some("c")], ip, t0).is_none());
    }

    #[test]
    fn a_pass_from_anywhere_holds_from_every_address() {
        let recent = RecentKeys::from_anywhere(Duration::from_secs(1));
        let t0 = Instant::now();
        recent.insert(&[Some("vk_a")], IpAddr::from([10, 0, 0, 1]), caller(7), t0);
        assert!(recent
            .get(&[Some("vk_a")], IpAddr::from([10, 0, 0, 2]), t0)
            .is_some());
        assert!(recent
            .get(&[Some("vk_b")], IpAddr::from([10, 0, 0, 1]), t0)
            .is_none());
    }

    #[test]
    fn a_full_map_keeps_its_size() {
        let recent = RecentKeys::new(Duration::from_secs(60));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        for i in 0..CAPACITY + 10 {
            recent.insert(&[Some(format!("vk_{i}").as_str()), None], ip, caller(1), t0);
        }
        assert!(recent.entries.lock().unwrap().len() <= CAPACITY);
        assert!(recent
            .get(
                &[Some(format!("vk_{}", CAPACITY + 9).as_str()), None],
                ip,
                t0
            )
            .is_some());
    }
}
