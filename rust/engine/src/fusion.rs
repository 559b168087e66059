//! Reciprocal rank fusion of the BM25 and vector legs, plus the optional time-decay and
//! importance terms, all reported per hit.
//!
//! `score = Σ wᵢ / (rrf_k + rankᵢ) + decay_weight · 0.5^(age / half_life) + importance_weight · importance`
//! with ranks from 1. A first place in one leg adds `w / (rrf_k + 1)` (≈ 0.0164 at the defaults),
//! which is the scale the extra weights are on.
//!
//! `importance` is the effective importance: the record's base importance plus
//! `min(reinforce_cap, reinforce_step · uses)`, capped at 1, where uses are its accesses (recalls)
//! and mentions (duplicates that reinforced it). `age` runs from the record's last use when
//! `decay_from_use` (a memory recalled yesterday is fresh, whenever it was written), else from
//! its timestamp.

use crate::records::Records;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusionParams {
    pub rrf_k: f32,
    /// Weights of the (BM25, vector) legs.
    pub weights: (f32, f32),
    /// Half-life of the decay term in microseconds; `None` turns the term off.
    pub half_life: Option<f64>,
    /// "Now" for the decay term, in microseconds since the epoch.
    pub now: i64,
    pub decay_weight: f32,
    pub importance_weight: f32,
    /// Effective importance grows by this per use...
    pub reinforce_step: f32,
    /// ...by at most this much in all.
    pub reinforce_cap: f32,
    pub decay_from_use: bool,
}

impl Default for FusionParams {
    fn default() -> Self {
        FusionParams {
            rrf_k: 60.0,
            weights: (1.0, 1.0),
            half_life: None,
            now: 0,
            decay_weight: 0.005,
            importance_weight: 0.0,
            reinforce_step: 0.1,
            reinforce_cap: 0.5,
            decay_from_use: true,
        }
    }
}

/// One fused result with every signal that made its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub id: u64,
    pub slot: u32,
    pub score: f32,
    /// 1-based rank and raw score in the BM25 leg, if it found this record.
    pub bm25: Option<(u32, f32)>,
    /// 1-based rank and similarity in the vector leg, if it found this record.
    pub vector: Option<(u32, f32)>,
    /// The decay factor 0.5^(age / half_life) (1 when decay is off).
    pub decay: f32,
    /// Effective importance (base plus reinforcement, at most 1).
    pub importance: f32,
    pub base_importance: f32,
    pub accesses: u32,
    pub mentions: u32,
    /// Last use, µs (0: never used).
    pub last_access: i64,
    pub timestamp: i64,
}

impl FusionParams {
    /// Effective importance of a record with `base` importance used `uses` times.
    pub fn effective_importance(&self, base: f32, uses: u32) -> f32 {
        if base >= 1.0 {
            return base; // an importance set above 1 on purpose is kept
        }
        (base + (self.reinforce_step * uses as f32).min(self.reinforce_cap)).min(1.0)
    }
}

/// 1-based ranks of a leg (best first), equal scores sharing the better rank ("1, 2, 2, 4"):
/// records a leg cannot tell apart must not be told apart by the fusion, or the order they
/// happened to come in would outweigh the decay and importance terms.
fn ranked(leg: &[(f32, u32)]) -> impl Iterator<Item = (u32, f32, u32)> + '_ {
    let mut rank = 0u32;
    leg.iter().enumerate().map(move |(i, &(sc, slot))| {
        if i == 0 || sc != leg[i - 1].0 {
            rank = i as u32 + 1;
        }
        (rank, sc, slot)
    })
}

/// Fuses the two ranked legs (best first, as (raw score, slot)) into the top `k` hits, best
/// first; ties go to the smaller id.
pub fn fuse(
    bm25: &[(f32, u32)],
    vector: &[(f32, u32)],
    p: &FusionParams,
    k: usize,
    records: &Records,
) -> Vec<Hit> {
    // Legs hold at most a few hundred entries: a sort-and-merge by slot beats hashing.
    let mut tagged: Vec<(u32, bool, u32, f32)> = Vec::with_capacity(bm25.len() + vector.len());
    tagged.extend(ranked(bm25).map(|(rank, sc, slot)| (slot, false, rank, sc)));
    tagged.extend(ranked(vector).map(|(rank, sc, slot)| (slot, true, rank, sc)));
    tagged.sort_unstable_by_key(|t| (t.0, t.1));
    let mut hits: Vec<Hit> = Vec::with_capacity(tagged.len());
    for (slot, is_vector, rank, raw) in tagged {
        if hits.last().is_none_or(|h| h.slot != slot) {
            let s = slot as usize;
            hits.push(Hit {
                id: records.ids[s],
                slot,
                score: 0.0,
                bm25: None,
                vector: None,
                decay: 1.0,
                importance: records.importance[s],
                base_importance: records.importance[s],
                accesses: 0,
                mentions: 0,
                last_access: 0,
                timestamp: records.timestamps[s],
            });
        }
        let h = hits.last_mut().expect("pushed above");
        let weight = if is_vector { p.weights.1 } else { p.weights.0 };
        h.score += weight / (p.rrf_k + rank as f32);
        if is_vector {
            h.vector = Some((rank, raw));
        } else {
            h.bm25 = Some((rank, raw));
        }
    }
    // Use counts are three more scattered reads per candidate: read them for every candidate
    // only when they move the ranking, else just for the hits returned.
    let fill_usage = |h: &mut Hit| {
        let s = h.slot as usize;
        (h.accesses, h.mentions, h.last_access) = (
            records.accesses[s],
            records.mentions[s],
            records.last_access[s],
        );
        h.importance =
            p.effective_importance(h.base_importance, h.accesses.saturating_add(h.mentions));
    };
    let ranking_uses = p.importance_weight != 0.0 || (p.half_life.is_some() && p.decay_from_use);
    for h in &mut hits {
        if ranking_uses {
            fill_usage(h);
        }
        if let Some(half_life) = p.half_life {
            let since = if p.decay_from_use {
                h.timestamp.max(h.last_access)
            } else {
                h.timestamp
            };
            let age = (p.now.saturating_sub(since)).max(0) as f64;
            h.decay = 0.5f64.powf(age / half_life) as f32;
            h.score += p.decay_weight * h.decay;
        }
        h.score += p.importance_weight * h.importance;
    }
    hits.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    hits.truncate(k);
    if !ranking_uses {
        hits.iter_mut().for_each(fill_usage);
    }
    hits
}
