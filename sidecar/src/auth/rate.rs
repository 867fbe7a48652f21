//! Token buckets, keyed: one per API or user key, one per client address for
//! failed authentication.
//!
//! Written here rather than taken from `governor` because each key carries its
//! own rate and burst from the database (governor's keyed limiter has one quota
//! for all keys), and because the failure buckets need a "look without taking"
//! check. A bucket holds at most `burst` tokens and refills at `rate` per
//! second; a request takes one token or is told how long until one is there.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Rate and burst of one bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quota {
    pub per_second: f64,
    pub burst: u32,
}

impl Quota {
    /// A quota with a positive rate and a burst of at least one.
    pub fn new(per_second: f64, burst: u32) -> Result<Quota, String> {
        if !(per_second.is_finite() && per_second > 0.0) {
            return Err(format!(
                "a rate must be a positive number, not {per_second}"
            ));
        }
        if burst == 0 {
            return Err("a burst must be at least 1".into());
        }
        Ok(Quota { per_second, burst })
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    quota: Quota,
}

impl Bucket {
    fn refilled(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * self.quota.per_second).min(f64::from(self.quota.burst))
    }
}

/// Buckets by key. Once there are `capacity` keys, buckets that have refilled
/// (which behave exactly like absent ones) are swept out; if most are still in
/// use, the next sweep waits until the map has doubled, so sweeping costs O(1)
/// per request on average while memory follows the keys actually limited.
pub struct Buckets<K> {
    inner: Mutex<Inner<K>>,
    capacity: usize,
}

struct Inner<K> {
    buckets: HashMap<K, Bucket>,
    next_sweep: usize,
}

impl<K: Hash + Eq + Clone> Buckets<K> {
    pub fn new(capacity: usize) -> Self {
        Buckets {
            inner: Mutex::new(Inner {
                buckets: HashMap::new(),
                next_sweep: capacity,
            }),
            capacity,
        }
    }

    /// Takes a token from `key`'s bucket, or returns how long until one is there.
    pub fn take(&self, key: &K, quota: Quota, now: Instant) -> Result<(), Duration> {
        self.with_bucket(key, quota, now, |bucket| {
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                Ok(())
            } else {
                Err(wait(bucket.tokens, quota))
            }
        })
    }

    /// Whether `key` has a token, without taking it; if not, how long until it does.
    pub fn check(&self, key: &K, quota: Quota, now: Instant) -> Result<(), Duration> {
        self.with_bucket(key, quota, now, |bucket| {
            if bucket.tokens >= 1.0 {
                Ok(())
            } else {
                Err(wait(bucket.tokens, quota))
            }
        })
    }

    /// Takes a token if there is one; an empty bucket stays empty.
    pub fn charge(&self, key: &K, quota: Quota, now: Instant) {
        let _ = self.take(key, quota, now);
    }

    fn with_bucket<T>(
        &self,
        key: &K,
        quota: Quota,
        now: Instant,
        f: impl FnOnce(&mut Bucket) -> T,
    ) -> T {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.buckets.len() >= inner.next_sweep && !inner.buckets.contains_key(key) {
            inner
                .buckets
                .retain(|_, b| b.refilled(now) < f64::from(b.quota.burst));
            inner.next_sweep = self.capacity.max(2 * inner.buckets.len());
        }
        let bucket = inner.buckets.entry(key.clone()).or_insert(Bucket {
            tokens: f64::from(quota.burst),
            at: now,
            quota,
        });
        bucket.tokens = bucket.refilled(now);
        bucket.at = now.max(bucket.at);
        // A key's limits may have been changed in the database meanwhile.
        bucket.quota = quota;
        bucket.tokens = bucket.tokens.min(f64::from(quota.burst));
        f(bucket)
    }
}

fn wait(tokens: f64, quota: Quota) -> Duration {
    Duration::from_secs_f64(((1.0 - tokens) / quota.per_second).max(0.0))
}

/// Whole seconds for `Retry-After`: rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(per_second: f64, burst: u32) -> Quota {
        Quota::new(per_second, burst).unwrap()
    }

    #[test]
    fn a_burst_then_the_sustained_rate() {
        let buckets = Buckets::new(100);
        let q = quota(2.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(buckets.take(&"k", q, t0), Ok(()));
        }
        let wait = buckets.take(&"k", q, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(
            buckets.take(&"k", q, t0 + Duration::from_millis(499)),
            Err(Duration::from_millis(1))
        );
        assert_eq!(
            buckets.take(&"k", q, t0 + Duration::from_millis(500)),
            Ok(())
        );
    }

    #[test]
    fn keys_are_independent_and_refill_caps_at_the_burst() {
        let buckets = Buckets::new(100);
        let q = quota(1.0, 2);
        let t0 = Instant::now();
        buckets.take(&1, q, t0).unwrap();
        buckets.take(&1, q, t0).unwrap();
        assert!(buckets.take(&1, q, t0).is_err());
        assert!(
            buckets.take(&2, q, t0).is_ok(),
            "another key has its own bucket"
        );
        let later = t0 + Duration::from_secs(3600);
        buckets.take(&1, q, later).unwrap();
        buckets.take(&1, q, later).unwrap();
        assert!(
            buckets.take(&1, q, later).is_err(),
            "an hour idle gives only the burst"
        );
    }

    #[test]
    fn check_does_not_take_and_charge_saturates() {
        let buckets = Buckets::new(100);
        let q = quota(1.0 / 60.0, 2);
        let t0 = Instant::now();
        assert!(buckets.check(&"ip", q, t0).is_ok());
        assert!(buckets.check(&"ip", q, t0).is_ok());
        for _ in 0..5 {
            buckets.charge(&"ip", q, t0);
        }
        let wait = buckets.check(&"ip", q, t0).unwrap_err();
        assert_eq!(retry_after_secs(wait), 60);
    }

    #[test]
    fn full_buckets_are_dropped_when_over_capacity() {
        let buckets = Buckets::new(2);
        let q = quota(1.0, 1);
        let t0 = Instant::now();
        buckets.take(&1, q, t0).unwrap();
        buckets.take(&2, q, t0).unwrap();
        // Later both have refilled, so adding a third drops them.
        buckets.take(&3, q, t0 + Duration::from_secs(5)).unwrap();
        assert_eq!(buckets.inner.lock().unwrap().buckets.len(), 1);
        // An empty bucket is never dropped: it still limits its key.
        buckets.take(&4, q, t0 + Duration::from_secs(5)).unwrap();
        assert!(buckets.take(&3, q, t0 + Duration::from_secs(5)).is_err());
    }

    #[test]
    fn bad_quotas_are_refused() {
        assert!(Quota::new(0.0, 1).is_err());
        assert!(Quota::new(f64::NAN, 1).is_err());
        assert!(Quota::new(1.0, 0).is_err());
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
    }
}
