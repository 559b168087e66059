//! Bounded top-k selection by descending score with a deterministic tie-break.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Orders entries so that the heap's top is the *worst* kept entry: lowest score, then highest
/// tie key.
#[derive(Clone, Copy, Debug)]
struct Entry {
    score: f32,
    tie: u64,
    slot: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.tie.cmp(&other.tie))
    }
}

pub struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    pub fn push(&mut self, score: f32, tie: u64, slot: u32) {
        let e = Entry { score, tie, slot };
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(worst) = self.heap.peek() {
            if e < *worst {
                self.heap.pop();
                self.heap.push(e);
            }
        }
    }

    /// Whether an entry with `score` could enter: lets callers skip work (a filter check, a
    /// tie-key lookup) for the many candidates that cannot.
    #[inline]
    pub fn admits(&self, score: f32) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|w| score >= w.score)
    }

    /// Best first: highest score, then lowest tie key.
    pub fn into_sorted(self) -> Vec<(f32, u32)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.score, e.slot))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_best_with_ties_by_key() {
        let mut t = TopK::new(3);
        for (score, tie) in [(1.0, 5), (3.0, 1), (2.0, 9), (2.0, 2), (0.5, 0)] {
            t.push(score, tie, tie as u32);
        }
        assert_eq!(t.into_sorted(), [(3.0, 1), (2.0, 2), (2.0, 9)]);
    }
}
