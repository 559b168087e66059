//! Near-duplicate detection without a model: a hash of the normalised text (its token
//! sequence), a 64-bit SimHash of its token set, and — when both records have vectors — their
//! cosine. Each namespace keeps its exact hashes and its most recent fingerprints, so a check
//! costs one map lookup plus a scan of a few KB.
//!
//! A SimHash of a short text (an agent memory is 5–50 tokens) moves many bits when one token
//! changes, so it only picks candidates (Hamming distance ≤ `candidate_bits`; unrelated texts
//! sit near 32); the decision is the token-set Jaccard similarity of the candidate and, when
//! both have vectors, their cosine. Jaccard is read from a 256-bit set sketch kept with each
//! record (one bit per token hash); two tokens can share a bit, so a candidate that passes the
//! sketch is confirmed on the exact token sets (its stored text tokenised again).

use foldhash::{HashMap, HashSet};

/// Fingerprint of one text, persisted with its record (the hash must not depend on the
/// process, so it is FNV-1a + a fixed mixer, not a seeded map hasher).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Hash of the token sequence: equal for texts that differ only in case, spacing or
    /// punctuation.
    pub exact: u64,
    /// SimHash of the token set.
    pub sim: u64,
    /// The token set as 256 bits (bit = token hash mod 256).
    pub set: [u64; 4],
}

impl Fingerprint {
    /// Jaccard similarity of two token sets, estimated from their sketches (exact unless two
    /// tokens share a bit, which for texts of tens of tokens is rare and only raises it a little).
    pub fn jaccard(&self, other: &Fingerprint) -> f32 {
        let (mut both, mut any) = (0, 0);
        for (a, b) in self.set.iter().zip(&other.set) {
            both += (a & b).count_ones();
            any += (a | b).count_ones();
        }
        if any == 0 {
            1.0
        } else {
            both as f32 / any as f32
        }
    }
}

/// Jaccard similarity of two token sets, exactly (two empty sets are the same text).
pub fn exact_jaccard(a: &HashSet<&str>, b: &HashSet<&str>) -> f32 {
    let both = a.iter().filter(|t| b.contains(*t)).count();
    let any = a.len() + b.len() - both;
    if any == 0 {
        1.0
    } else {
        both as f32 / any as f32
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DedupParams {
    /// Token-set Jaccard similarity from which two texts are duplicates.
    pub min_jaccard: f32,
    /// Cosine from which two records with vectors are duplicates (both tests must pass).
    pub min_cosine: f32,
    /// SimHash distance within which a record is a candidate.
    pub candidate_bits: u32,
    /// How many of the namespace's most recent records are compared (at most [`RECENT_KEEP`]).
    pub scan: usize,
    /// Whether a duplicate counts a mention of the record it duplicates (false: only report
    /// it, for a caller that counts once its write is durable).
    pub reinforce: bool,
}

impl Default for DedupParams {
    fn default() -> Self {
        DedupParams {
            min_jaccard: 0.8,
            min_cosine: 0.9,
            candidate_bits: 14,
            scan: 1024,
            reinforce: true,
        }
    }
}

/// A stable 64-bit hash of a token: 8 bytes at a time through a multiply-xorshift mixer.
/// (Fixed here rather than a library's, whose output may change between versions: the
/// fingerprints are persisted.)
fn hash_token(bytes: &[u8]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15 ^ (bytes.len() as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h ^ u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut buf = [0u8; 8];
        buf[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(buf));
    }
    mix(h)
}

/// splitmix64's finaliser: every input bit moves every output bit (SimHash reads all 64).
#[inline(always)]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Computed for every record added (its fingerprint is kept for later checks), so it avoids
/// allocating for texts of up to 256 tokens and counts bits without branches.
pub fn fingerprint(terms: &[String]) -> Fingerprint {
    let mut exact: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut stack = [0u64; 256];
    let mut heap = Vec::new();
    let hashes: &mut [u64] = if terms.len() <= stack.len() {
        &mut stack[..terms.len()]
    } else {
        heap.resize(terms.len(), 0);
        &mut heap
    };
    for (slot, t) in hashes.iter_mut().zip(terms) {
        let h = hash_token(t.as_bytes());
        exact = mix(exact ^ h).rotate_left(17);
        *slot = h;
    }
    hashes.sort_unstable();
    let mut ones = [0u32; 64];
    let mut distinct = 0u32;
    let mut set = [0u64; 4];
    for (i, &h) in hashes.iter().enumerate() {
        if i > 0 && hashes[i - 1] == h {
            continue;
        }
        distinct += 1;
        set[(h >> 62) as usize] |= 1 << (h >> 56 & 63);
        for (bit, c) in ones.iter_mut().enumerate() {
            *c += (h >> bit & 1) as u32;
        }
    }
    let sim = ones.iter().enumerate().fold(0u64, |acc, (bit, &c)| {
        acc | ((2 * c > distinct) as u64) << bit
    });
    Fingerprint { exact, sim, set }
}

/// How many recent SimHashes a namespace keeps: the most `DedupParams::scan` can use.
pub const RECENT_KEEP: usize = 4096;

/// One namespace's fingerprints: exact hashes, and the recent SimHashes in insertion order
/// (entries of removed records are skipped when read and dropped once they are half).
#[derive(Default)]
struct Namespace {
    exact: HashMap<u64, u32>,
    recent: Vec<(u64, u32)>,
    stale: usize,
}

#[derive(Default)]
pub struct DedupIndex {
    namespaces: HashMap<u32, Namespace>,
}

impl DedupIndex {
    pub fn insert(&mut self, namespace: u32, slot: u32, fp: Fingerprint) {
        let ns = self.namespaces.entry(namespace).or_default();
        ns.exact.insert(fp.exact, slot);
        ns.recent.push((fp.sim, slot));
        // Candidates come from the newest `scan` entries only: keeping every record's entry
        // cost 16 B per record (1 % of a 1M × 384 store's memory) for nothing.
        if ns.recent.len() >= 2 * RECENT_KEEP {
            ns.recent.drain(..ns.recent.len() - RECENT_KEEP);
            ns.stale = ns.stale.min(ns.recent.len());
        }
    }

    /// Forgets a removed record. `live(slot, sim)` says whether a listed slot still holds that
    /// record (a freed slot can be reused by another one).
    pub fn remove(
        &mut self,
        namespace: u32,
        slot: u32,
        fp: Fingerprint,
        live: impl Fn(u32, u64) -> bool,
    ) {
        let Some(ns) = self.namespaces.get_mut(&namespace) else {
            return;
        };
        if ns.exact.get(&fp.exact) == Some(&slot) {
            ns.exact.remove(&fp.exact);
        }
        // Compacting on every delete would make bulk deletes quadratic: rebuild past half stale.
        ns.stale += 1;
        if ns.stale * 2 > ns.recent.len() {
            ns.recent.retain(|&(sim, s)| s != slot && live(s, sim));
            ns.stale = 0;
        }
        if ns.recent.is_empty() && ns.exact.is_empty() {
            self.namespaces.remove(&namespace);
        }
    }

    /// The slot of an earlier record with the same exact hash, if any.
    pub fn exact(&self, namespace: u32, fp: Fingerprint) -> Option<u32> {
        self.namespaces
            .get(&namespace)?
            .exact
            .get(&fp.exact)
            .copied()
    }

    /// Recent live slots whose SimHash is within `candidate_bits` of `fp`, nearest first
    /// (newest on ties).
    pub fn candidates(
        &self,
        namespace: u32,
        fp: Fingerprint,
        p: &DedupParams,
        live: impl Fn(u32, u64) -> bool,
    ) -> Vec<u32> {
        let Some(ns) = self.namespaces.get(&namespace) else {
            return Vec::new();
        };
        let from = ns.recent.len().saturating_sub(p.scan.min(RECENT_KEEP));
        let mut near = Vec::new();
        near_positions(&ns.recent[from..], fp.sim, p.candidate_bits, &mut near);
        let mut found: Vec<(u32, usize, u32)> = near
            .into_iter()
            .filter_map(|(d, pos)| {
                let (sim, slot) = ns.recent[from + pos];
                live(slot, sim).then_some((d, usize::MAX - pos, slot))
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, _, s)| s).collect()
    }
}

/// (distance, position) of the entries whose SimHash is within `bits` of `sim`. Every retain
/// scans up to `scan` entries, so the popcount must be one instruction: x86-64's baseline
/// lacks it, hence the runtime dispatch.
fn near_positions(entries: &[(u64, u32)], sim: u64, bits: u32, out: &mut Vec<(u32, usize)>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports popcnt (checked just above).
        return unsafe { near_positions_popcnt(entries, sim, bits, out) };
    }
    near_positions_portable(entries, sim, bits, out)
}

#[inline(always)]
fn near_positions_portable(
    entries: &[(u64, u32)],
    sim: u64,
    bits: u32,
    out: &mut Vec<(u32, usize)>,
) {
    for (pos, &(s, _)) in entries.iter().enumerate() {
        let d = (s ^ sim).count_ones();
        if d <= bits {
            out.push((d, pos));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn near_positions_popcnt(
    entries: &[(u64, u32)],
    sim: u64,
    bits: u32,
    out: &mut Vec<(u32, usize)>,
) {
    near_positions_portable(entries, sim, bits, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn exact_hash_ignores_nothing_but_is_order_sensitive() {
        let a = fingerprint(&toks("deploy the node service"));
        assert_eq!(a, fingerprint(&toks("deploy the node service")));
        assert_ne!(a.exact, fingerprint(&toks("service node the deploy")).exact);
        // The token set is the same, so the SimHash is too.
        assert_eq!(a.sim, fingerprint(&toks("service node the deploy")).sim);
    }

    #[test]
    fn simhash_separates_unrelated_and_keeps_near_texts_close() {
        let base =
            "we moved the billing service from heroku to fly io last tuesday after the outage";
        let near = "we moved the billing service from heroku to fly io on tuesday after the outage";
        let other = "my favourite editor is vim and i use a dark colour theme everywhere";
        let (a, b, c) = (
            fingerprint(&toks(base)),
            fingerprint(&toks(near)),
            fingerprint(&toks(other)),
        );
        assert!((a.sim ^ b.sim).count_ones() <= DedupParams::default().candidate_bits);
        assert!((a.sim ^ c.sim).count_ones() > DedupParams::default().candidate_bits);
    }

    #[test]
    fn jaccard_by_hand() {
        let j = |a: &str, b: &str| fingerprint(&toks(a)).jaccard(&fingerprint(&toks(b)));
        assert_eq!(
            j("alpha beta gamma delta", "alpha beta gamma epsilon"),
            3.0 / 5.0
        );
        assert_eq!(j("alpha alpha beta", "beta alpha"), 1.0);
        assert_eq!(j("", ""), 1.0);
        assert_eq!(j("alpha", "beta"), 0.0);
    }

    #[test]
    fn candidates_are_scoped_and_removed() {
        let mut d = DedupIndex::default();
        let fp = fingerprint(&toks("one two three four"));
        d.insert(1, 10, fp);
        assert_eq!(d.exact(1, fp), Some(10));
        assert_eq!(d.exact(2, fp), None);
        assert_eq!(
            d.candidates(1, fp, &DedupParams::default(), |_, _| true),
            vec![10]
        );
        d.remove(1, 10, fp, |_, _| false);
        assert_eq!(d.exact(1, fp), None);
        assert!(d
            .candidates(1, fp, &DedupParams::default(), |_, _| false)
            .is_empty());
    }

    #[test]
    fn recent_entries_are_bounded_and_the_window_is_unchanged() {
        let mut d = DedupIndex::default();
        let fp = |i: u64| Fingerprint {
            exact: i,
            sim: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            set: [0; 4],
        };
        let n = 5 * RECENT_KEEP as u64;
        for i in 0..n {
            d.insert(7, i as u32, fp(i));
        }
        let ns = &d.namespaces[&7];
        assert!(ns.recent.len() < 2 * RECENT_KEEP && ns.exact.len() == n as usize);
        let p = DedupParams {
            candidate_bits: 0,
            ..DedupParams::default()
        };
        // The newest records are candidates of themselves; one just outside the window is not.
        let live = |_: u32, _: u64| true;
        assert_eq!(d.candidates(7, fp(n - 1), &p, live), vec![(n - 1) as u32]);
        assert_eq!(
            d.candidates(7, fp(n - 1024), &p, live),
            vec![(n - 1024) as u32]
        );
        assert!(d.candidates(7, fp(n - 1025), &p, live).is_empty());
        assert_eq!(d.exact(7, fp(0)), Some(0)); // exact hashes are all kept
    }
}
