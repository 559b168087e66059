//! BM25 over an inverted index with exact, incrementally maintained statistics.
//!
//! Lucene's formula (no `k1 + 1` factor):
//! `idf = ln(1 + (N − df + 0.5) / (df + 0.5))`,
//! `score = Σ idf · tf / (tf + k1 · (1 − b + b · dl / avgdl))` over distinct query terms.
//! N, df, dl and the total length are exact after every add and delete (Lucene approximates dl).

// foldhash: fast, and seeded per process (no hash flooding from crafted text or ids).
use foldhash::{HashMap, HashMapExt};

use parking_lot::Mutex;

use crate::error::Result;
use crate::store::codec::{Dec, Enc};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// One document of a term's list: 5 bytes (the lists hold about one posting per word of every
/// text, the largest part of the index). A term frequency over [`Posting::TF_SPILL`] − 1 is
/// kept exactly in [`Bm25::spilled`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed)]
struct Posting {
    slot: u32,
    tf: u8,
}

impl Posting {
    const TF_SPILL: u8 = u8::MAX;
}

/// Dense per-slot score accumulators, pooled so concurrent searches do not allocate.
struct Scratch {
    scores: Vec<f32>,
    touched: Vec<u32>,
}

#[derive(Default)]
pub struct Bm25 {
    params: Bm25Params,
    term_ids: HashMap<Box<str>, u32>,
    /// Postings per term id, sorted by slot.
    postings: Vec<Vec<Posting>>,
    /// Exact term frequencies of postings whose `tf` is [`Posting::TF_SPILL`], by (term, slot).
    spilled: HashMap<(u32, u32), u32>,
    free_term_ids: Vec<u32>,
    doc_len: Vec<u32>,
    n_docs: usize,
    total_len: u64,
    scratch: Mutex<Vec<Scratch>>,
}

impl Bm25 {
    pub fn new(params: Bm25Params) -> Self {
        Bm25 {
            params,
            ..Default::default()
        }
    }

    pub fn params(&self) -> Bm25Params {
        self.params
    }

    pub fn n_docs(&self) -> usize {
        self.n_docs
    }

    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    pub fn vocabulary_size(&self) -> usize {
        self.term_ids.len()
    }

    pub fn avgdl(&self) -> f64 {
        if self.n_docs == 0 {
            0.0
        } else {
            self.total_len as f64 / self.n_docs as f64
        }
    }

    pub fn doc_freq(&self, term: &str) -> usize {
        self.term_ids
            .get(term)
            .map_or(0, |&t| self.postings[t as usize].len())
    }

    /// A query's distinct terms that the index knows, as term ids: what [`Bm25::search`]
    /// reads. (In the order of the terms' text, so scores sum in the same order every time.)
    pub fn query(&self, query_terms: &[String]) -> Vec<u32> {
        let mut terms: Vec<&str> = query_terms.iter().map(String::as_str).collect();
        terms.sort_unstable();
        terms.dedup();
        terms
            .iter()
            .filter_map(|t| self.term_ids.get(*t).copied())
            .collect()
    }

    /// Postings a search for `query` reads: its cost, about 6 ns each on this project's machine.
    pub fn postings_to_read(&self, query: &[u32]) -> usize {
        query.iter().map(|&t| self.postings[t as usize].len()).sum()
    }

    pub fn doc_len(&self, slot: u32) -> u32 {
        self.doc_len.get(slot as usize).copied().unwrap_or(0)
    }

    pub fn memory_bytes(&self) -> usize {
        self.postings
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Posting>() + 24)
            .sum::<usize>()
            + self.spilled.capacity() * 16
            + self.term_ids.keys().map(|k| k.len() + 40).sum::<usize>()
            + self.doc_len.capacity() * 4
    }

    /// The exact frequency of term `t` in the posting's document.
    #[inline(always)]
    fn tf(&self, t: u32, p: &Posting) -> u32 {
        match p.tf {
            Posting::TF_SPILL => self.spilled[&(t, p.slot)],
            tf => u32::from(tf),
        }
    }

    /// Lucene's idf for a term in `df` of the current documents.
    pub fn idf(&self, df: usize) -> f64 {
        let n = self.n_docs as f64;
        let df = df as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Indexes a document's terms at `slot` (a slot not currently indexed).
    pub fn add(&mut self, slot: u32, terms: &[String]) {
        let s = slot as usize;
        if self.doc_len.len() <= s {
            self.doc_len.resize(s + 1, 0);
        }
        self.doc_len[s] = terms.len() as u32;
        self.n_docs += 1;
        self.total_len += terms.len() as u64;
        for (term, tf) in term_counts(terms) {
            let t = match self.term_ids.get(term) {
                Some(&t) => t,
                None => {
                    let t = match self.free_term_ids.pop() {
                        Some(t) => t,
                        None => {
                            self.postings.push(Vec::new());
                            (self.postings.len() - 1) as u32
                        }
                    };
                    self.term_ids.insert(term.into(), t);
                    t
                }
            };
            let p = Posting {
                slot,
                tf: tf.min(u32::from(Posting::TF_SPILL)) as u8,
            };
            if p.tf == Posting::TF_SPILL {
                self.spilled.insert((t, slot), tf);
            }
            let list = &mut self.postings[t as usize];
            // Slots mostly grow, so appending is the common case; a reused slot is inserted.
            match list.last() {
                Some(last) if last.slot > slot => {
                    let at = list.partition_point(|q| q.slot < slot);
                    list.insert(at, p);
                }
                _ => list.push(p),
            }
        }
    }

    /// Removes the document at `slot`, given the same terms it was added with.
    pub fn remove(&mut self, slot: u32, terms: &[String]) {
        let s = slot as usize;
        self.n_docs -= 1;
        self.total_len -= self.doc_len[s] as u64;
        self.doc_len[s] = 0;
        for (term, _) in term_counts(terms) {
            let Some(&t) = self.term_ids.get(term) else {
                continue;
            };
            let list = &mut self.postings[t as usize];
            if let Ok(at) = list.binary_search_by_key(&slot, |p| p.slot) {
                if list.remove(at).tf == Posting::TF_SPILL {
                    self.spilled.remove(&(t, slot));
                }
            }
            if list.is_empty() {
                // Forget the term itself, so no trace of deleted text stays in the vocabulary.
                *list = Vec::new();
                self.term_ids.remove(term);
                self.free_term_ids.push(t);
            }
        }
        if self.term_ids.is_empty() {
            self.free_term_ids.clear();
            self.postings.clear();
            self.spilled = HashMap::new();
        }
    }

    /// Image: which slots hold a document and their lengths, then per term id its text (empty
    /// when free) and its postings as slot gaps and term frequencies (varints: about two bytes
    /// a posting).
    pub(crate) fn encode(&self, e: &mut Enc, indexed: &[bool]) {
        let flags: Vec<u8> = indexed.iter().map(|&a| a as u8).collect();
        e.array(&flags);
        e.array(&self.doc_len);
        let mut names = vec![""; self.postings.len()];
        for (name, &t) in &self.term_ids {
            names[t as usize] = name;
        }
        e.u64(self.postings.len() as u64);
        for (t, (name, list)) in names.iter().zip(&self.postings).enumerate() {
            e.str(name);
            e.varint(list.len() as u64);
            let mut prev = 0u32;
            for p in list {
                e.varint(u64::from(p.slot - prev));
                e.varint(u64::from(self.tf(t as u32, p)));
                prev = p.slot;
            }
        }
    }

    /// Rebuilds the index from its image, checking every posting against the slots that hold
    /// documents; statistics are recomputed. Returns the per-slot "holds a document" flags,
    /// which the caller checks against its records.
    pub(crate) fn decode(d: &mut Dec, params: Bm25Params) -> Result<(Bm25, Vec<bool>)> {
        let flags: Vec<u8> = d.array()?;
        if flags.iter().any(|&f| f > 1) {
            return Err(d.error("bad document flag"));
        }
        let indexed: Vec<bool> = flags.into_iter().map(|f| f == 1).collect();
        let doc_len: Vec<u32> = d.array()?;
        if doc_len.len() > indexed.len() || doc_len.iter().zip(&indexed).any(|(&l, &x)| l > 0 && !x)
        {
            return Err(d.error("document lengths of empty slots"));
        }
        let n_terms = d.count(5)?;
        let mut term_ids = HashMap::with_capacity(n_terms);
        let mut postings = Vec::with_capacity(n_terms);
        let mut spilled = HashMap::new();
        let mut free_term_ids = Vec::new();
        for t in 0..n_terms as u32 {
            let name = d.str()?;
            let n = d.varint()? as usize;
            if n > d.remaining() / 2 {
                return Err(d.error(format!("posting count {n} exceeds the bytes left")));
            }
            let mut list = Vec::with_capacity(n);
            let mut slot = 0u64;
            for i in 0..n {
                let gap = d.varint()?;
                let tf = d.varint()?;
                slot += gap;
                let ok = (i == 0 || gap > 0)
                    && (slot as usize) < doc_len.len()
                    && indexed[slot as usize]
                    && (1..=u64::from(u32::MAX)).contains(&tf);
                if !ok {
                    return Err(d.error(format!(
                        "bad posting (slot {slot}, tf {tf}) for term {name:?}"
                    )));
                }
                let p = Posting {
                    slot: slot as u32,
                    tf: tf.min(u64::from(Posting::TF_SPILL)) as u8,
                };
                if p.tf == Posting::TF_SPILL {
                    spilled.insert((t, slot as u32), tf as u32);
                }
                list.push(p);
            }
            match (name.is_empty(), list.is_empty()) {
                (true, true) => free_term_ids.push(t),
                (false, false) => {
                    if term_ids.insert(Box::<str>::from(name), t).is_some() {
                        return Err(d.error(format!("term {name:?} appears twice")));
                    }
                }
                _ => return Err(d.error(format!("term id {t} is half free"))),
            }
            postings.push(list);
        }
        free_term_ids.reverse();
        let n_docs = indexed.iter().filter(|&&a| a).count();
        let total_len = doc_len.iter().map(|&l| u64::from(l)).sum();
        let bm25 = Bm25 {
            params,
            term_ids,
            postings,
            spilled,
            free_term_ids,
            doc_len,
            n_docs,
            total_len,
            scratch: Mutex::default(),
        };
        Ok((bm25, indexed))
    }

    /// The `k` best documents that pass `allow` and score at least `min_score`, best first,
    /// as (score, slot); ties go to the lower `tie_key`.
    pub fn search(
        &self,
        query: &[u32],
        k: usize,
        min_score: f32,
        allow: impl Fn(u32) -> bool,
        tie_key: impl Fn(u32) -> u64,
    ) -> Vec<(f32, u32)> {
        if self.n_docs == 0 || k == 0 {
            return Vec::new();
        }
        let avgdl = self.avgdl() as f32;
        let Bm25Params { k1, b } = self.params;
        let c1 = k1 * (1.0 - b);
        let c2 = k1 * b / avgdl;

        let mut scratch = self.scratch.lock().pop().unwrap_or(Scratch {
            scores: Vec::new(),
            touched: Vec::new(),
        });
        if scratch.scores.len() < self.doc_len.len() {
            scratch.scores.resize(self.doc_len.len(), 0.0);
        }
        let Scratch { scores, touched } = &mut scratch;
        for &t in query {
            let list = &self.postings[t as usize];
            let idf = self.idf(list.len()) as f32;
            for p in list {
                let s = p.slot as usize;
                let tf = self.tf(t, p) as f32;
                let dl = self.doc_len[s] as f32;
                let acc = &mut scores[s];
                if *acc == 0.0 {
                    touched.push(p.slot);
                }
                *acc += idf * tf / (tf + c1 + c2 * dl);
            }
        }
        let mut top = crate::topk::TopK::new(k);
        for &slot in touched.iter() {
            let score = std::mem::take(&mut scores[slot as usize]);
            if score >= min_score && score > 0.0 && top.admits(score) && allow(slot) {
                top.push(score, tie_key(slot), slot);
            }
        }
        touched.clear();
        self.scratch.lock().push(scratch);
        top.into_sorted()
    }

    /// BM25 score of one indexed document for the query (0 when nothing matches).
    pub fn score(&self, query_terms: &[String], slot: u32, doc_terms: &[String]) -> f32 {
        let counts = term_counts(doc_terms);
        let mut terms: Vec<&str> = query_terms.iter().map(String::as_str).collect();
        terms.sort_unstable();
        terms.dedup();
        let dl = self.doc_len(slot) as f32;
        let Bm25Params { k1, b } = self.params;
        let norm = k1 * (1.0 - b + b * dl / self.avgdl() as f32);
        terms
            .iter()
            .filter_map(|t| counts.get(t).map(|&tf| (self.doc_freq(t), tf as f32)))
            .map(|(df, tf)| self.idf(df) as f32 * tf / (tf + norm))
            .sum()
    }
}

fn term_counts(terms: &[String]) -> HashMap<&str, u32> {
    let mut counts: HashMap<&str, u32> = HashMap::with_capacity(terms.len());
    for t in terms {
        *counts.entry(t.as_str()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn scores_match_hand_computation() {
        let mut idx = Bm25::new(Bm25Params::default());
        idx.add(0, &terms("docker node port 8080"));
        idx.add(1, &terms("nginx proxy port 443"));
        idx.add(2, &terms("mysql port 3306 port taken"));
        let hits = idx.search(
            &idx.query(&terms("port 8080")),
            10,
            0.0,
            |_| true,
            |s| s as u64,
        );
        // Hand computation: N = 3, avgdl = 13/3.
        let avgdl = 13.0f64 / 3.0;
        let idf = |df: f64| (1.0 + (3.0 - df + 0.5) / (df + 0.5)).ln();
        let part = |tf: f64, dl: f64| tf / (tf + 1.2 * (1.0 - 0.75 + 0.75 * dl / avgdl));
        let want0 = idf(3.0) * part(1.0, 4.0) + idf(1.0) * part(1.0, 4.0);
        let want2 = idf(3.0) * part(2.0, 5.0);
        let want1 = idf(3.0) * part(1.0, 4.0);
        assert_eq!(hits.iter().map(|h| h.1).collect::<Vec<_>>(), [0, 2, 1]);
        for ((score, _), want) in hits.iter().zip([want0, want2, want1]) {
            assert!(
                ((*score as f64) - want).abs() / want < 1e-6,
                "{score} vs {want}"
            );
        }
    }

    #[test]
    fn large_term_frequencies_are_exact() {
        let mut idx = Bm25::new(Bm25Params::default());
        let long = |n: usize| vec!["x".to_owned(); n];
        for (slot, n) in [(0u32, 254usize), (1, 255), (2, 70_000)] {
            idx.add(slot, &long(n));
        }
        idx.add(3, &terms("x y"));
        // Hand computation: N = df = 4, dl = tf for the three long documents.
        let avgdl = (254.0 + 255.0 + 70_000.0 + 2.0) / 4.0;
        let score = |tf: f64| {
            let idf = (1.0f64 + (4.0 - 4.0 + 0.5) / 4.5).ln();
            idf * tf / (tf + 1.2 * (0.25 + 0.75 * tf / avgdl))
        };
        let check = |idx: &Bm25, slots: &[u32]| {
            assert_eq!(idx.spilled.len(), 2, "tf 255 and 70,000 spill; 254 fits");
            let hits = idx.search(&idx.query(&terms("x")), 10, 0.0, |_| true, |s| s as u64);
            for &(got, slot) in hits.iter().filter(|h| h.1 < 3) {
                let tf = [254.0, 255.0, 70_000.0][slot as usize];
                assert!(
                    ((got as f64) - score(tf)).abs() < 1e-5 * score(tf),
                    "slot {slot}: {got}"
                );
            }
            assert_eq!(hits.iter().filter(|h| h.1 < 3).count(), slots.len());
        };
        check(&idx, &[0, 1, 2]);
        let mut e = Enc::default();
        idx.encode(&mut e, &[true; 4]);
        let (back, _) = Bm25::decode(&mut Dec::new(&e.buf, "bm25"), Bm25Params::default()).unwrap();
        check(&back, &[0, 1, 2]);
        idx.remove(2, &long(70_000));
        assert_eq!(
            idx.spilled.len(),
            1,
            "the spilled frequency goes with its posting"
        );
    }

    #[test]
    fn statistics_stay_exact_after_delete() {
        let mut idx = Bm25::new(Bm25Params::default());
        idx.add(0, &terms("a b c"));
        idx.add(1, &terms("a d"));
        idx.remove(0, &terms("a b c"));
        assert_eq!(idx.n_docs(), 1);
        assert_eq!(idx.total_len(), 2);
        assert_eq!(idx.doc_freq("a"), 1);
        assert_eq!(idx.doc_freq("b"), 0);
        assert_eq!(idx.vocabulary_size(), 2);
        let hits = idx.search(&idx.query(&terms("b c")), 10, 0.0, |_| true, |s| s as u64);
        assert!(hits.is_empty());
    }
}
