//! The record table: what every index slot holds, in columns, plus the orderings the filter
//! planner needs. Indexes can always be rebuilt from these records (the durable store relies
//! on it).

use std::collections::{BTreeSet, HashMap};

use crate::error::{EngineError, Result};

/// One stored record, as given to [`crate::HybridIndex::add`] and returned by `get`.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub id: u64,
    pub namespace: String,
    pub session: Option<String>,
    pub timestamp: i64,
    pub text: String,
    /// Opaque bytes for the caller (the Python layer stores msgspec-encoded fields here).
    pub payload: Vec<u8>,
    pub importance: f32,
    pub vector: Option<Vec<f32>>,
}

pub const MAX_NAME_BYTES: usize = 512;

/// Names (namespaces, sessions) interned to small ids; id 0 means "none".
#[derive(Default)]
pub struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    refs: Vec<usize>,
    free: Vec<u32>,
}

impl Names {
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize - 1]
    }

    fn acquire(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            self.refs[id as usize - 1] += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.names[id as usize - 1] = name.into();
                self.refs[id as usize - 1] = 1;
                id
            }
            None => {
                self.names.push(name.into());
                self.refs.push(1);
                self.names.len() as u32
            }
        };
        self.ids.insert(name.into(), id);
        id
    }

    /// Drops one reference; the name is forgotten with its last record.
    fn release(&mut self, id: u32) {
        let r = &mut self.refs[id as usize - 1];
        *r -= 1;
        if *r == 0 {
            let name = std::mem::take(&mut self.names[id as usize - 1]);
            self.ids.remove(&name);
            self.free.push(id);
        }
    }

    pub fn count(&self, id: u32) -> usize {
        self.refs.get(id as usize - 1).copied().unwrap_or(0)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Checks a namespace or session name: non-empty, bounded, no control characters.
pub fn validate_name(what: &'static str, name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > MAX_NAME_BYTES {
        format!("it has {} bytes, over the limit of {MAX_NAME_BYTES}", name.len())
    } else if name.chars().any(char::is_control) {
        "it contains control characters".to_owned()
    } else {
        return Ok(());
    };
    Err(EngineError::InvalidName { what, reason: format!("{name:?}: {reason}") })
}

#[derive(Default)]
pub struct Records {
    pub ids: Vec<u64>,
    slot_of: HashMap<u64, u32>,
    pub timestamps: Vec<i64>,
    pub namespace: Vec<u32>,
    pub session: Vec<u32>,
    pub texts: Vec<Box<str>>,
    pub payloads: Vec<Box<[u8]>>,
    pub importance: Vec<f32>,
    pub alive: Vec<bool>,
    free: Vec<u32>,
    pub namespaces: Names,
    pub sessions: Names,
    /// (namespace, timestamp, slot): a namespace's records in time order.
    by_namespace_time: BTreeSet<(u32, i64, u32)>,
    /// (timestamp, slot): all records in time order.
    by_time: BTreeSet<(i64, u32)>,
    text_bytes: usize,
}

impl Records {
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.ids.len()
    }

    pub fn free_slots(&self) -> usize {
        self.free.len()
    }

    pub fn slot(&self, id: u64) -> Option<u32> {
        self.slot_of.get(&id).copied()
    }

    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    pub fn payload_bytes(&self) -> usize {
        self.payloads.iter().map(|p| p.len()).sum()
    }

    /// The slot a new record will take: a freed one first, so storage stays compact.
    pub fn next_slot(&self, nth: usize) -> u32 {
        let f = self.free.len();
        if nth < f {
            self.free[f - 1 - nth]
        } else {
            (self.ids.len() + nth - f) as u32
        }
    }

    /// Stores a record (already validated) and returns its slot.
    pub fn insert(&mut self, r: &Record) -> u32 {
        let ns = self.namespaces.acquire(&r.namespace);
        let sess = r.session.as_deref().map_or(0, |s| self.sessions.acquire(s));
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.ids.push(0);
                self.timestamps.push(0);
                self.namespace.push(0);
                self.session.push(0);
                self.texts.push("".into());
                self.payloads.push(Box::new([]));
                self.importance.push(0.0);
                self.alive.push(false);
                (self.ids.len() - 1) as u32
            }
        };
        let s = slot as usize;
        self.ids[s] = r.id;
        self.timestamps[s] = r.timestamp;
        self.namespace[s] = ns;
        self.session[s] = sess;
        self.texts[s] = r.text.as_str().into();
        self.payloads[s] = r.payload.as_slice().into();
        self.importance[s] = r.importance;
        self.alive[s] = true;
        self.slot_of.insert(r.id, slot);
        self.by_namespace_time.insert((ns, r.timestamp, slot));
        self.by_time.insert((r.timestamp, slot));
        self.text_bytes += r.text.len();
        slot
    }

    /// Removes the record at `slot`, dropping its text and payload from memory.
    pub fn remove(&mut self, slot: u32) {
        let s = slot as usize;
        let (ns, ts) = (self.namespace[s], self.timestamps[s]);
        self.by_namespace_time.remove(&(ns, ts, slot));
        self.by_time.remove(&(ts, slot));
        self.slot_of.remove(&self.ids[s]);
        self.namespaces.release(ns);
        if self.session[s] != 0 {
            self.sessions.release(self.session[s]);
        }
        self.text_bytes -= self.texts[s].len();
        self.texts[s] = "".into();
        self.payloads[s] = Box::new([]);
        self.alive[s] = false;
        self.namespace[s] = 0;
        self.session[s] = 0;
        self.free.push(slot);
    }

    /// Slots in `namespace` (when given) with a timestamp in `[lo, hi)` (any time when `None`),
    /// in time order.
    pub fn range(
        &self,
        namespace: Option<u32>,
        time: Option<(i64, i64)>,
    ) -> Box<dyn Iterator<Item = u32> + '_> {
        use std::ops::Bound::{Excluded, Included};
        let (lo, hi) = match time {
            Some((lo, hi)) if lo >= hi => return Box::new(std::iter::empty()),
            Some((lo, hi)) => (Included(lo), Excluded(hi)),
            None => (Included(i64::MIN), Included(i64::MAX)),
        };
        match namespace {
            Some(ns) => {
                let b = |t: std::ops::Bound<i64>, slot| t.map(|t| (ns, t, slot));
                let range = (b(lo, 0), b(hi, if time.is_some() { 0 } else { u32::MAX }));
                Box::new(self.by_namespace_time.range(range).map(|&(_, _, s)| s))
            }
            None => {
                let b = |t: std::ops::Bound<i64>, slot| t.map(|t| (t, slot));
                let range = (b(lo, 0), b(hi, if time.is_some() { 0 } else { u32::MAX }));
                Box::new(self.by_time.range(range).map(|&(_, s)| s))
            }
        }
    }

    pub fn all_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.alive.iter().enumerate().filter(|(_, &a)| a).map(|(s, _)| s as u32)
    }

    pub fn record(&self, slot: u32, vector: Option<Vec<f32>>) -> Record {
        let s = slot as usize;
        Record {
            id: self.ids[s],
            namespace: self.namespaces.name(self.namespace[s]).to_owned(),
            session: (self.session[s] != 0).then(|| self.sessions.name(self.session[s]).to_owned()),
            timestamp: self.timestamps[s],
            text: self.texts[s].to_string(),
            payload: self.payloads[s].to_vec(),
            importance: self.importance[s],
            vector,
        }
    }
}
