//! API key checks that passed a moment ago, so a busy key is not checked in
//! the database on every request.
//!
//! Only successes are remembered, for `--auth-cache-ms` (1 s by default; 0
//! turns it off): a key revoked, expired, or given other scopes or addresses
//! is refused at most that long later. Failures always go to the database and
//! count against the client address. An entry is keyed by a SHA-256 of the
//! key, the scope asked for and the client address, so the map holds no key
//! and a hit means the same check on the same key from the same place.
//! Per-key rate limits apply on every request, hit or not.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::ApiCaller;

/// Entries kept at most; beyond it expired ones are dropped, and if all are
/// fresh the map starts over.
const CAPACITY: usize = 10_000;

pub struct RecentKeys {
    ttl: Duration,
    entries: Mutex<HashMap<[u8; 32], (Instant, ApiCaller)>>,
}

impl RecentKeys {
    pub fn new(ttl: Duration) -> RecentKeys {
        RecentKeys {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn id(key: &str, scope: Option<&str>, ip: IpAddr) -> [u8; 32] {
        let mut digest = Sha256::new();
        digest.update(key.as_bytes());
        // NUL cannot occur in a key or a scope, so the parts cannot run together.
        digest.update([0]);
        digest.update(scope.unwrap_or("").as_bytes());
        digest.update([0, u8::from(scope.is_some())]);
        match ip {
            IpAddr::V4(v4) => digest.update(v4.octets()),
            IpAddr::V6(v6) => digest.update(v6.octets()),
        }
        digest.finalize().into()
    }

    /// The caller `key` was found to be, if that check passed within the TTL.
    pub fn get(
        &self,
        key: &str,
        scope: Option<&str>,
        ip: IpAddr,
        now: Instant,
    ) -> Option<ApiCaller> {
        if self.ttl.is_zero() {
            return None;
        }
        let id = Self::id(key, scope, ip);
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&id)
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(_, caller)| caller.clone())
    }

    /// Remembers a check that passed.
    pub fn insert(
        &self,
        key: &str,
        scope: Option<&str>,
        ip: IpAddr,
        caller: &ApiCaller,
        now: Instant,
    ) {
        if self.ttl.is_zero() {
            return;
        }
        let id = Self::id(key, scope, ip);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.ttl);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(id, (now, caller.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rate::Quota;

    fn caller(key_id: i64) -> ApiCaller {
        ApiCaller {
            key_id,
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
        assert!(recent.get("vk_a", Some("transaction"), ip, t0).is_none());
        recent.insert("vk_a", Some("transaction"), ip, &caller(7), t0);
        let hit = recent.get(
            "vk_a",
            Some("transaction"),
            ip,
            t0 + Duration::from_millis(999),
        );
        assert_eq!(hit.map(|c| c.key_id), Some(7));
        assert!(recent
            .get("vk_a", Some("transaction"), ip, t0 + Duration::from_secs(1))
            .is_none());
    }

    #[test]
    fn another_key_scope_or_address_is_a_miss() {
        let recent = RecentKeys::new(Duration::from_secs(1));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        recent.insert("vk_a", Some("transaction"), ip, &caller(7), t0);
        assert!(recent.get("vk_b", Some("transaction"), ip, t0).is_none());
        assert!(recent.get("vk_a", Some("identity"), ip, t0).is_none());
        assert!(recent.get("vk_a", None, ip, t0).is_none());
        assert!(recent
            .get("vk_a", Some("transaction"), IpAddr::from([10, 0, 0, 2]), t0)
            .is_none());
    }

    #[test]
    fn a_zero_ttl_remembers_nothing() {
        let recent = RecentKeys::new(Duration::ZERO);
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        recent.insert("vk_a", None, ip, &caller(7), t0);
        assert!(recent.get("vk_a", None, ip, t0).is_none());
    }

    #[test]
    fn a_full_map_keeps_its_size() {
        let recent = RecentKeys::new(Duration::from_secs(60));
        let (ip, t0) = (IpAddr::from([10, 0, 0, 1]), Instant::now());
        for i in 0..CAPACITY + 10 {
            recent.insert(&format!("vk_{i}"), None, ip, &caller(1), t0);
        }
        assert!(recent.entries.lock().unwrap().len() <= CAPACITY);
        assert!(recent
            .get(&format!("vk_{}", CAPACITY + 9), None, ip, t0)
            .is_some());
    }
}
