//! A backend's copy of the keyword index its searches read, per database
//! and term: the term's record count (its IDF's input) and its posting
//! blocks, so a common word's blocks (a few hundred rows for a word in a
//! quarter of 100,000 records) are fetched once, not on every search that
//! holds it, and a search of known words reads no table at all.
//!
//! Each database's terms are kept under the version of the database they
//! were read at ([`Version`]: whatever the caller can tell apart, PostgreSQL's
//! row version of the database's counts, which every write of its postings
//! and term counts replaces). A search at another version finds nothing of
//! the old one: it is dropped and the terms are read again. When the terms
//! kept pass the budget, the databases least recently searched are dropped
//! first.

use std::collections::HashMap;
use std::rc::Rc;

/// What identifies one state of a database's postings.
pub type Version = (u64, u64);

/// One term's blocks, as stored.
pub type Blocks = Vec<Vec<u8>>;

/// What a database holds of one term.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Term {
    /// Records holding it (0: none, or a term the database never saw).
    pub records: u64,
    pub blocks: Blocks,
}

struct Kept {
    version: Version,
    terms: HashMap<String, Rc<Term>>,
    bytes: usize,
    /// When it was last searched, in searches of this cache.
    used: u64,
}

/// Terms by database, within a budget of bytes.
pub struct PostingsCache {
    databases: HashMap<i64, Kept>,
    bytes: usize,
    clock: u64,
}

impl Default for PostingsCache {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes a term takes in the cache (its blocks' bytes and its own).
fn size(name: &str, term: &Term) -> usize {
    name.len() + term.blocks.iter().map(|b| b.len() + 24).sum::<usize>() + 72
}

impl PostingsCache {
    pub fn new() -> Self {
        PostingsCache {
            databases: HashMap::new(),
            bytes: 0,
            clock: 0,
        }
    }

    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What database `db` at `version` holds of `terms`, reading those not
    /// kept with `read` (given the missing terms, it returns what the
    /// database holds of each; a term it leaves out is held by no record),
    /// then keeping what fits in `budget` bytes. The answer is in the order
    /// of `terms`, shared with the cache rather than copied.
    pub fn terms<E>(
        &mut self,
        db: i64,
        version: Version,
        terms: &[String],
        budget: usize,
        read: impl FnOnce(&[String]) -> Result<Vec<(String, Term)>, E>,
    ) -> Result<Vec<Rc<Term>>, E> {
        self.clock += 1;
        if self
            .databases
            .get(&db)
            .is_some_and(|kept| kept.version != version)
        {
            self.drop_database(db);
        }
        let kept = self.databases.get(&db);
        let mut missing: Vec<String> = terms
            .iter()
            .filter(|t| !kept.is_some_and(|k| k.terms.contains_key(*t)))
            .cloned()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let mut fresh: HashMap<String, Rc<Term>> = HashMap::new();
        if !missing.is_empty() {
            let mut read_now: HashMap<String, Term> = read(&missing)?.into_iter().collect();
            fresh = missing
                .into_iter()
                .map(|t| {
                    let term = read_now.remove(&t).unwrap_or_default();
                    (t, Rc::new(term))
                })
                .collect();
        }
        let answer = terms
            .iter()
            .map(|t| {
                fresh
                    .get(t)
                    .or_else(|| self.databases.get(&db).and_then(|k| k.terms.get(t)))
                    .map(Rc::clone)
                    .unwrap_or_default()
            })
            .collect();
        let added: usize = fresh.iter().map(|(t, b)| size(t, b)).sum();
        if added <= budget {
            while self.bytes + added > budget {
                let Some(oldest) = self
                    .databases
                    .iter()
                    .min_by_key(|(_, k)| k.used)
                    .map(|(&db, _)| db)
                else {
                    break;
                };
                self.drop_database(oldest);
            }
            let kept = self.databases.entry(db).or_insert_with(|| Kept {
                version,
                terms: HashMap::new(),
                bytes: 0,
                used: 0,
            });
            kept.terms.extend(fresh);
            kept.bytes += added;
            self.bytes += added;
        }
        if let Some(kept) = self.databases.get_mut(&db) {
            kept.used = self.clock;
        }
        Ok(answer)
    }

    fn drop_database(&mut self, db: i64) {
        if let Some(kept) = self.databases.remove(&db) {
            self.bytes -= kept.bytes;
        }
    }

    /// Drops everything kept.
    pub fn clear(&mut self) {
        self.databases.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn plain<E>(got: Result<Vec<Rc<Term>>, E>) -> Result<Vec<Term>, E> {
        got.map(|all| all.iter().map(|t| t.as_ref().clone()).collect())
    }

    /// What `reader` gives a term: as many records as its name has bytes,
    /// in one block of those bytes.
    fn held(name: &str) -> Term {
        Term {
            records: name.len() as u64,
            blocks: vec![name.as_bytes().to_vec()],
        }
    }

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// A reader that gives each term but "none" what [`held`] says and
    /// records what it was asked.
    fn reader<'a>(
        asked: &'a RefCell<Vec<Vec<String>>>,
    ) -> impl FnOnce(&[String]) -> Result<Vec<(String, Term)>, ()> + 'a {
        move |missing: &[String]| {
            asked.borrow_mut().push(missing.to_vec());
            Ok(missing
                .iter()
                .filter(|t| *t != "none")
                .map(|t| (t.clone(), held(t)))
                .collect())
        }
    }

    #[test]
    fn terms_are_read_once_per_database_version() {
        let mut cache = PostingsCache::new();
        let asked = RefCell::new(Vec::new());
        let got = cache.terms(1, (7, 1), &terms(&["cat", "dog"]), 1 << 20, reader(&asked));
        assert_eq!(plain(got), Ok(vec![held("cat"), held("dog")]));
        // A term asked twice is read once; one the database lacks is empty.
        let got = cache.terms(
            1,
            (7, 1),
            &terms(&["dog", "eel", "none", "eel"]),
            1 << 20,
            reader(&asked),
        );
        assert_eq!(
            plain(got),
            Ok(vec![held("dog"), held("eel"), Term::default(), held("eel")])
        );
        // Another database, and the first at another version, read again.
        cache
            .terms(2, (7, 1), &terms(&["cat"]), 1 << 20, reader(&asked))
            .unwrap();
        cache
            .terms(1, (8, 1), &terms(&["cat"]), 1 << 20, reader(&asked))
            .unwrap();
        assert_eq!(
            asked.into_inner(),
            [
                terms(&["cat", "dog"]),
                terms(&["eel", "none"]),
                terms(&["cat"]),
                terms(&["cat"])
            ]
        );
    }

    #[test]
    fn the_least_recently_searched_database_goes_first_past_the_budget() {
        let mut cache = PostingsCache::new();
        let asked = RefCell::new(Vec::new());
        let one = size("aaaa", &held("aaaa"));
        let budget = 2 * one;
        cache
            .terms(1, (1, 1), &terms(&["aaaa"]), budget, reader(&asked))
            .unwrap();
        cache
            .terms(2, (1, 1), &terms(&["bbbb"]), budget, reader(&asked))
            .unwrap();
        cache
            .terms(1, (1, 1), &terms(&["aaaa"]), budget, reader(&asked))
            .unwrap();
        assert_eq!(asked.borrow().len(), 2, "both kept");
        cache
            .terms(3, (1, 1), &terms(&["cccc"]), budget, reader(&asked))
            .unwrap();
        assert_eq!(cache.bytes(), budget);
        // Database 2 was searched least recently: dropped; 1 is still kept.
        cache
            .terms(1, (1, 1), &terms(&["aaaa"]), budget, reader(&asked))
            .unwrap();
        assert_eq!(asked.borrow().len(), 3);
        cache
            .terms(2, (1, 1), &terms(&["bbbb"]), budget, reader(&asked))
            .unwrap();
        assert_eq!(asked.borrow().len(), 4);
        // More than the whole budget is answered, not kept.
        let got = cache.terms(
            4,
            (1, 1),
            &terms(&["a-term-far-too-long"]),
            10,
            reader(&asked),
        );
        assert_eq!(got.unwrap().len(), 1);
        assert!(cache.bytes() <= budget);
        cache.clear();
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn a_failed_read_keeps_nothing() {
        let mut cache = PostingsCache::new();
        let got = cache.terms(1, (1, 1), &terms(&["cat"]), 1 << 20, |_| Err("no"));
        assert_eq!(got.err(), Some("no"));
        assert_eq!(cache.bytes(), 0);
    }
}
