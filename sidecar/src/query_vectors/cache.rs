//! The embeddings of queries the sidecar has searched for, kept process-wide
//! so that a query that comes again runs no model: one short query through
//! the model is 3 to 4.5 ms of a core, most of what a search costs (docs/performance.md,
//! "Vector database"), and search traffic repeats itself.
//!
//! Keyed by the account and the query's exact text, least recently used
//! first out: per account, so that no account can tell from a search's speed
//! that another searched the same words (a kept query answered in 3 ms, a
//! new one in 23 to 29: issue 60). The
//! model lives in the database, so the cache cannot see it change: after
//! changing `vigil.model_dir`, restart the sidecar.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;

/// An account and a query's text.
type Key = (String, String);

pub struct QueryCache {
    /// `None` when the cache is off (0 entries).
    entries: Option<Mutex<LruCache<Key, Arc<[f32]>>>>,
}

impl QueryCache {
    pub fn new(capacity: usize) -> QueryCache {
        QueryCache {
            entries: NonZeroUsize::new(capacity).map(|c| Mutex::new(LruCache::new(c))),
        }
    }

    pub fn enabled(&self) -> bool {
        self.entries.is_some()
    }

    /// The embedding of `account`'s `query`, if kept.
    pub fn get(&self, account: &str, query: &str) -> Option<Arc<[f32]>> {
        let mut entries = self
            .entries
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        entries
            .get(&(account.to_owned(), query.to_owned()))
            .cloned()
    }

    pub fn put(&self, account: &str, query: &str, embedding: Arc<[f32]>) {
        if let Some(entries) = &self.entries {
            let mut entries = entries.lock().unwrap_or_else(|e| e.into_inner());
            entries.put((account.to_owned(), query.to_owned()), embedding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used_and_can_be_off() {
        let cache = QueryCache::new(2);
        let v = |x: f32| -> Arc<[f32]> { Arc::from(vec![x; 3]) };
        cache.put("acct", "a", v(1.0));
        cache.put("acct", "b", v(2.0));
        assert_eq!(cache.get("acct", "a").as_deref(), Some(&[1.0; 3][..]));
        cache.put("acct", "c", v(3.0));
        assert!(
            cache.get("acct", "b").is_none(),
            "the least recently used goes"
        );
        assert!(cache.get("acct", "a").is_some() && cache.get("acct", "c").is_some());

        let off = QueryCache::new(0);
        off.put("acct", "a", v(1.0));
        assert!(!off.enabled() && off.get("acct", "a").is_none());
    }

    #[test]
    fn an_accounts_queries_are_its_own() {
        let cache = QueryCache::new(4);
        cache.put("a@example.com", "refund", Arc::from(vec![1.0f32; 3]));
        assert!(cache.get("a@example.com", "refund").is_some());
        assert!(cache.get("b@example.com", "refund").is_none());
    }
}
