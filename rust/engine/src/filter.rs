//! Search filters (time range, namespace, session, a set of allowed ids), resolved once per query
//! against the record table into a cheap per-slot predicate that both searches call while they
//! run.

use crate::error::{EngineError, Result};
use crate::records::{validate_name, Order, Records};

/// What a caller may restrict a search to. Time is microseconds since the epoch, half-open.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub time_range: Option<(i64, i64)>,
    pub namespace: Option<String>,
    pub session: Option<String>,
    /// Only these records (ids no record has are ignored): a caller's own selection, e.g. the
    /// items of a store whose values pass a filter the engine cannot read.
    pub ids: Option<Vec<u64>>,
}

impl Filter {
    pub fn validate(&self) -> Result<()> {
        if let Some((lo, hi)) = self.time_range {
            if lo > hi {
                return Err(EngineError::InvalidTimeRange { lo, hi });
            }
        }
        if let Some(ns) = &self.namespace {
            validate_name("namespace", ns)?;
        }
        if let Some(s) = &self.session {
            validate_name("session", s)?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.time_range.is_none()
            && self.namespace.is_none()
            && self.session.is_none()
            && self.ids.is_none()
    }
}

/// A filter with names turned into ids. `None` from [`Resolved::new`] means nothing can match
/// (an unknown namespace or session, or an empty range).
pub struct Resolved<'a> {
    records: &'a Records,
    time: Option<(i64, i64)>,
    namespace: Option<u32>,
    session: Option<u32>,
    /// The slots of the allowed ids, and how many there are.
    allow: Option<(SlotBits, usize)>,
}

/// The slots a filter allows, one bit each: a selective graph walk tests thousands of slots,
/// and a bit in a small array is cheaper than reading the columns.
pub struct SlotBits(Vec<u64>);

impl SlotBits {
    #[inline(always)]
    pub fn contains(&self, slot: u32) -> bool {
        self.0[slot as usize / 64] >> (slot % 64) & 1 == 1
    }

    /// How many slots are allowed.
    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The allowed slots whose bit is also set in `mask` (missing words count as zero), in
    /// increasing order.
    pub fn ones_within(&self, mask: &[u64]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.count());
        for (i, (&a, &b)) in self.0.iter().zip(mask).enumerate() {
            let mut w = a & b;
            while w != 0 {
                out.push((i * 64) as u32 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

impl<'a> Resolved<'a> {
    pub fn new(records: &'a Records, f: &Filter) -> Option<Self> {
        if f.time_range.is_some_and(|(lo, hi)| lo >= hi) {
            return None;
        }
        let namespace = match &f.namespace {
            Some(n) => Some(records.namespaces.get(n)?),
            None => None,
        };
        let session = match &f.session {
            Some(s) => Some(records.sessions.get(s)?),
            None => None,
        };
        let allow = match &f.ids {
            Some(ids) => {
                let mut words = vec![0u64; records.capacity().div_ceil(64)];
                let mut n = 0;
                for s in ids.iter().filter_map(|&id| records.slot(id)) {
                    let w = &mut words[s as usize / 64];
                    n += (*w >> (s % 64) & 1 == 0) as usize;
                    *w |= 1 << (s % 64);
                }
                if n == 0 {
                    return None;
                }
                Some((SlotBits(words), n))
            }
            None => None,
        };
        Some(Resolved {
            records,
            time: f.time_range,
            namespace,
            session,
            allow,
        })
    }

    /// The namespace id the filter names, if any.
    pub fn namespace(&self) -> Option<u32> {
        self.namespace
    }

    /// Whether the filter restricts anything beyond its namespace.
    pub fn restricts_within_namespace(&self) -> bool {
        self.time.is_some() || self.session.is_some() || self.allow.is_some()
    }

    /// Whether the filter restricts anything beyond "alive".
    pub fn restricts(&self) -> bool {
        self.restricts_within_namespace() || self.namespace.is_some()
    }

    #[inline(always)]
    pub fn allows(&self, slot: u32) -> bool {
        let s = slot as usize;
        let r = self.records;
        self.time
            .is_none_or(|(lo, hi)| (lo..hi).contains(&r.timestamps[s]))
            && r.alive[s]
            && self.namespace.is_none_or(|n| r.namespace[s] == n)
            && self.session.is_none_or(|n| r.session[s] == n)
            && self.allow.as_ref().is_none_or(|(a, _)| a.contains(slot))
    }

    /// How many records match, estimated cheaply: exact for a namespace alone, otherwise from
    /// a strided sample of slots (whatever the store's size, the cost stays bounded).
    pub fn estimate(&self) -> usize {
        let columns = self.estimate_columns();
        match &self.allow {
            Some((_, n)) => columns.min(*n),
            None => columns,
        }
    }

    fn estimate_columns(&self) -> usize {
        let r = self.records;
        let live = r.len();
        if let (Some(ns), None, None, None) = (self.namespace, self.time, self.session, &self.allow)
        {
            return r.namespaces.count(ns);
        }
        if !self.restricts() || live == 0 {
            return live;
        }
        const SAMPLES: u64 = 512;
        let cap = r.capacity() as u64;
        let (mut seen, mut hit) = (0usize, 0usize);
        // Scattered sample positions (golden-ratio steps): a fixed stride would alias with
        // records written round-robin (user 1, user 2, ..., user 1, ...) and miss whole tenants.
        let mut x = 0u64;
        for _ in 0..SAMPLES.min(cap) {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let s = ((x as u128 * cap as u128) >> 64) as usize;
            if r.alive[s] {
                seen += 1;
                hit += self.allows(s as u32) as usize;
            }
        }
        let est = if seen == 0 {
            live
        } else {
            (hit * live).div_ceil(seen)
        };
        match self.namespace {
            Some(ns) => est.min(r.namespaces.count(ns)),
            None => est,
        }
    }

    /// The filter as a bitmap over all slots, with AVX2 where the CPU has it (the columns are
    /// read once per selective query, so this pass is a fixed cost worth vectorising).
    pub fn bitmap(&self) -> SlotBits {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::distance::avx512_allowed() && std::arch::is_x86_feature_detected!("avx512bw")
            {
                // SAFETY: AVX-512F and AVX-512BW were detected just above.
                return SlotBits(unsafe { self.bitmap_avx512() });
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 was detected just above.
                return SlotBits(unsafe { self.bitmap_avx2() });
            }
        }
        SlotBits(self.bitmap_words())
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn bitmap_avx512(&self) -> Vec<u64> {
        self.bitmap_words()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn bitmap_avx2(&self) -> Vec<u64> {
        self.bitmap_words()
    }

    /// One pass over the columns, 64 slots at a time: each column's test fills a 64-byte mask
    /// (the loops vectorise and the mask stays in L1), packed eight bytes at a time.
    #[inline(always)]
    fn bitmap_words(&self) -> Vec<u64> {
        let r = self.records;
        let cap = r.capacity();
        let mut bits = Vec::with_capacity(cap.div_ceil(64));
        let mut mask = [0u8; 64];
        for base in (0..cap).step_by(64) {
            let end = (base + 64).min(cap);
            let m = &mut mask[..end - base];
            for (m, &a) in m.iter_mut().zip(&r.alive[base..end]) {
                *m = a as u8;
            }
            if let Some((lo, hi)) = self.time {
                // One unsigned comparison tests both ends of the half-open range.
                let span = hi.wrapping_sub(lo) as u64;
                for (m, &t) in m.iter_mut().zip(&r.timestamps[base..end]) {
                    *m &= ((t.wrapping_sub(lo) as u64) < span) as u8;
                }
            }
            if let Some(ns) = self.namespace {
                for (m, &n) in m.iter_mut().zip(&r.namespace[base..end]) {
                    *m &= (n == ns) as u8;
                }
            }
            if let Some(sess) = self.session {
                for (m, &n) in m.iter_mut().zip(&r.session[base..end]) {
                    *m &= (n == sess) as u8;
                }
            }
            mask[end - base..].fill(0);
            let word = mask.chunks_exact(8).enumerate().fold(0u64, |acc, (i, b)| {
                // Eight 0/1 bytes → eight bits: the multiply gathers bit 0 of each byte into
                // the top byte, in order.
                let x = u64::from_le_bytes(b.try_into().unwrap());
                acc | ((x.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * i))
            });
            bits.push(match &self.allow {
                Some((a, _)) => word & a.0[base / 64],
                None => word,
            });
        }
        bits
    }

    /// Exact number of matching records, counting no further than `cap + 1`.
    pub fn count_up_to(&self, cap: usize) -> usize {
        self.matching(Order::Any)
            .take(cap.saturating_add(1))
            .count()
    }

    /// Every matching slot: with [`Order::Time`] in time order within a namespace and across
    /// them (slot order when the filter names no namespace and no time).
    pub fn matching(&self, order: Order) -> Box<dyn Iterator<Item = u32> + '_> {
        if let (Some((allow, _)), None, None) = (&self.allow, self.namespace, self.time) {
            // the allowed slots alone, in slot order (as every slot would be)
            let every = vec![u64::MAX; allow.0.len()];
            Box::new(
                allow
                    .ones_within(&every)
                    .into_iter()
                    .filter(move |&s| self.allows(s)),
            )
        } else if self.namespace.is_none() && self.time.is_none() {
            Box::new(self.records.all_slots().filter(move |&s| self.allows(s)))
        } else {
            Box::new(
                self.records
                    .range(self.namespace, self.time, order)
                    .filter(move |&s| self.allows(s)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Record;

    #[test]
    fn bitmap_agrees_with_direct_checks() {
        let mut records = Records::default();
        for i in 0..1000u64 {
            records.insert(
                &Record {
                    id: i,
                    namespace: format!("ns{}", i % 3),
                    session: (i % 5 == 0).then(|| "s".to_owned()),
                    timestamp: (i as i64 * 7919) % 1000,
                    text: String::new(),
                    payload: Vec::new(),
                    importance: 0.0,
                    vector: None,
                },
                Default::default(),
            );
        }
        for i in (0..1000).step_by(7) {
            records.remove(i);
        }
        let filters = [
            Filter {
                time_range: Some((100, 400)),
                ..Default::default()
            },
            Filter {
                namespace: Some("ns1".into()),
                ..Default::default()
            },
            Filter {
                time_range: Some((0, 999)),
                namespace: Some("ns2".into()),
                session: Some("s".into()),
                ids: None,
            },
            Filter {
                ids: Some((0..1000).filter(|i| i % 3 != 1).chain([5000, 7]).collect()),
                ..Default::default()
            },
            Filter {
                time_range: Some((100, 900)),
                namespace: Some("ns0".into()),
                ids: Some((0..600).collect()),
                ..Default::default()
            },
        ];
        for f in &filters {
            let r = Resolved::new(&records, f).unwrap();
            let direct: Vec<bool> = (0..1000).map(|s| r.allows(s)).collect();
            let bitmap = r.bitmap();
            let bits: Vec<bool> = (0..1000).map(|s| bitmap.contains(s)).collect();
            assert_eq!(direct, bits, "{f:?}");
            let listed: Vec<u32> = (0..1000).filter(|&s| direct[s as usize]).collect();
            assert_eq!(bitmap.ones_within(&[u64::MAX; 16]), listed, "{f:?}");
            let evens: Vec<u32> = listed.iter().copied().filter(|s| s % 2 == 0).collect();
            assert_eq!(
                bitmap.ones_within(&[0x5555_5555_5555_5555; 16]),
                evens,
                "{f:?}"
            );
            assert!(direct.iter().any(|&b| b) && direct.iter().any(|&b| !b));
            let mut matched: Vec<u32> = r.matching(Order::Any).collect();
            matched.sort_unstable();
            assert_eq!(matched, listed, "{f:?}");
        }
        // the allow-list alone, checked against the ids themselves
        let r = Resolved::new(&records, &filters[3]).unwrap();
        for s in 0..1000u32 {
            let id = records.ids[s as usize];
            let expected = records.alive[s as usize] && id % 3 != 1;
            assert_eq!(r.allows(s), expected, "slot {s}");
        }
        let unknown = Filter {
            ids: Some(vec![5000, 6000]),
            ..Default::default()
        };
        assert!(Resolved::new(&records, &unknown).is_none());
    }
}
