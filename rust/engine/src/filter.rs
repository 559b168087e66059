//! Search filters (time range, namespace, session), resolved once per query against the record
//! table into a cheap per-slot predicate that both searches call while they run.

use crate::error::{EngineError, Result};
use crate::records::{validate_name, Records};

/// What a caller may restrict a search to. Time is microseconds since the epoch, half-open.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub time_range: Option<(i64, i64)>,
    pub namespace: Option<String>,
    pub session: Option<String>,
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
        self.time_range.is_none() && self.namespace.is_none() && self.session.is_none()
    }
}

/// A filter with names turned into ids. `None` from [`Resolved::new`] means nothing can match
/// (an unknown namespace or session, or an empty range).
pub struct Resolved<'a> {
    records: &'a Records,
    time: Option<(i64, i64)>,
    namespace: Option<u32>,
    session: Option<u32>,
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
        Some(Resolved { records, time: f.time_range, namespace, session })
    }

    /// Whether the filter restricts anything beyond "alive".
    pub fn restricts(&self) -> bool {
        self.time.is_some() || self.namespace.is_some() || self.session.is_some()
    }

    #[inline(always)]
    pub fn allows(&self, slot: u32) -> bool {
        let s = slot as usize;
        let r = self.records;
        r.alive[s]
            && self.namespace.is_none_or(|n| r.namespace[s] == n)
            && self.session.is_none_or(|n| r.session[s] == n)
            && self.time.is_none_or(|(lo, hi)| (lo..hi).contains(&r.timestamps[s]))
    }

    /// Upper bound on matching records, counting at most `cap + 1` (bounded cost whatever the
    /// size of the store).
    pub fn estimate(&self, cap: usize) -> usize {
        let r = self.records;
        match (self.namespace, self.time) {
            (Some(ns), None) => r.namespaces.count(ns),
            (None, None) => r.len(),
            (ns, time) => r.range(ns, time).take(cap + 1).count(),
        }
    }

    /// Every matching slot (the exact-scan path).
    pub fn matching(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        if self.namespace.is_none() && self.time.is_none() {
            Box::new(self.records.all_slots().filter(move |&s| self.allows(s)))
        } else {
            Box::new(self.records.range(self.namespace, self.time).filter(move |&s| self.allows(s)))
        }
    }
}
