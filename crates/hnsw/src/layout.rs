//! The order a bulk build lays a graph's elements out in, so that elements
//! linked to one another sit together.
//!
//! A search's time goes to fetching the elements it scores: on pages, each
//! one a buffer pin and the cache misses of its line pointer and item. With
//! elements in input order, a page holds elements that have nothing to do
//! with each other, and a search touches a new page for nearly every element
//! it scores. Laid out so that each run of a page's worth of elements is
//! densely linked, the elements a search meets in one region of the space
//! share pages, and the pages it has just read are the ones it reads next.
//!
//! The order is a greedy version of Gorder (Wei, Yu, Lu and Lin, "Speedup
//! Graph Processing by Graph Ordering", SIGMOD 2016), the reordering that
//! Coleman et al. found to help proximity-graph search the most ("Graph
//! Reordering for Cache-Efficient Near Neighbor Search", NeurIPS 2022): each
//! next element is the unplaced one with the most links to or from the last
//! `window` placed. Scores change by one as elements enter and leave the
//! window, so they sit in buckets by score (lazily: stale entries are
//! skipped when met), which makes each step cost about the links of the
//! elements that enter and leave. When nothing unplaced links to the window,
//! the next element is the first unplaced one of a breadth-first walk from
//! the entry point, so a new run starts next to where the last one ended.
//! Layer 0 alone decides: it holds every element and nearly every link.

/// Layer-0 links by position, in compressed rows: `targets[starts[k]..
/// starts[k + 1]]` are the positions element `k` links to.
pub struct Links {
    starts: Vec<usize>,
    targets: Vec<u32>,
}

impl Links {
    /// Links from `lists`, one list of positions per element; positions out
    /// of range are dropped.
    pub fn new<L: IntoIterator<Item = u32>>(lists: impl ExactSizeIterator<Item = L>) -> Links {
        let n = lists.len();
        let mut starts = Vec::with_capacity(n + 1);
        let mut targets = Vec::new();
        starts.push(0);
        for list in lists {
            targets.extend(list.into_iter().filter(|&t| (t as usize) < n));
            starts.push(targets.len());
        }
        Links { starts, targets }
    }

    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn of(&self, k: usize) -> &[u32] {
        &self.targets[self.starts[k]..self.starts[k + 1]]
    }

    /// The same links, each turned around.
    fn reversed(&self) -> Links {
        let n = self.len();
        let mut counts = vec![0usize; n + 1];
        for &t in &self.targets {
            counts[t as usize + 1] += 1;
        }
        for k in 0..n {
            counts[k + 1] += counts[k];
        }
        let starts = counts.clone();
        let mut next = counts;
        let mut targets = vec![0u32; self.targets.len()];
        for k in 0..n {
            for &t in self.of(k) {
                targets[next[t as usize]] = k as u32;
                next[t as usize] += 1;
            }
        }
        Links { starts, targets }
    }
}

/// Every position `0..links.len()` once, in the order to lay them out:
/// `start` first, then greedily the one with the most links to or from the
/// last `window` placed (see the module docs). Deterministic.
pub fn locality_order(links: &Links, start: usize, window: usize) -> Vec<usize> {
    let n = links.len();
    if n == 0 {
        return Vec::new();
    }
    let window = window.max(1);
    let incoming = links.reversed();
    let neighbours = |k: usize| links.of(k).iter().chain(incoming.of(k));
    let fallback = breadth_first(links, start.min(n - 1));

    // score[k]: links between unplaced k and the window (each direction
    // counts, capped at `top_score`). A rise files k in its new score's
    // bucket; a fall files nothing, so k sits too high until its entry is
    // met and filed again where it belongs. Every bucket above `top` is
    // empty, and an element's highest entry is at least its score, so the
    // first entry met whose score is its bucket's has the highest score.
    let top_score = 2 * window;
    let mut score = vec![0u32; n];
    let mut placed = vec![false; n];
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); top_score + 1];
    let mut top = 0usize;
    let mut cursor = 0usize;
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let mut pick = None;
        while top > 0 {
            match buckets[top].pop() {
                Some(k) => {
                    let k = k as usize;
                    let s = (score[k] as usize).min(top_score);
                    if placed[k] || s == 0 {
                        continue;
                    }
                    if s == top {
                        pick = Some(k);
                        break;
                    }
                    buckets[s].push(k as u32);
                }
                None => top -= 1,
            }
        }
        let k = pick.unwrap_or_else(|| {
            while placed[fallback[cursor]] {
                cursor += 1;
            }
            fallback[cursor]
        });
        placed[k] = true;
        order.push(k);
        for &j in neighbours(k) {
            let j = j as usize;
            if !placed[j] {
                score[j] += 1;
                let s = (score[j] as usize).min(top_score);
                buckets[s].push(j as u32);
                top = top.max(s);
            }
        }
        if let Some(&left) = order.len().checked_sub(window + 1).map(|i| &order[i]) {
            for &j in neighbours(left) {
                let j = j as usize;
                if !placed[j] {
                    score[j] = score[j].saturating_sub(1);
                }
            }
        }
    }
    order
}

/// Positions in the order a breadth-first walk of `links` from `start`
/// meets them, then the ones it does not reach, ascending.
fn breadth_first(links: &Links, start: usize) -> Vec<usize> {
    let n = links.len();
    let mut met = vec![false; n];
    let mut order = Vec::with_capacity(n);
    met[start] = true;
    order.push(start);
    let mut next = 0;
    while next < order.len() {
        let k = order[next];
        next += 1;
        for &j in links.of(k) {
            if !std::mem::replace(&mut met[j as usize], true) {
                order.push(j as usize);
            }
        }
    }
    order.extend((0..n).filter(|&k| !met[k]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(lists: &[Vec<u32>]) -> Links {
        Links::new(lists.iter().map(|l| l.iter().copied()))
    }

    #[test]
    fn reversing_turns_every_link_around() {
        let l = links(&[vec![1, 2], vec![2], vec![0], vec![]]);
        let r = l.reversed();
        assert_eq!(r.of(0), &[2]);
        assert_eq!(r.of(1), &[0]);
        assert_eq!(r.of(2), &[0, 1]);
        assert!(r.of(3).is_empty());
    }

    #[test]
    fn out_of_range_links_are_dropped() {
        let l = links(&[vec![1, 9], vec![0]]);
        assert_eq!(l.of(0), &[1]);
    }

    #[test]
    fn unreached_elements_follow_in_their_old_order() {
        // 0 - 1 linked; 2 and 3 reached by nothing.
        let l = links(&[vec![1], vec![0], vec![], vec![2]]);
        assert_eq!(breadth_first(&l, 1), [1, 0, 2, 3]);
        let order = locality_order(&l, 1, 2);
        assert_eq!(order[..2], [1, 0]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3]);
    }
}
