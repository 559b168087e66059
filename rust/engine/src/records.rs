//! The record table: what every index slot holds, in columns, plus the orderings the filter
//! planner needs. Indexes can always be rebuilt from these records (the durable store relies
//! on it).

use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::ops::Bound;

// foldhash: fast, and seeded per process (no hash flooding from crafted text or ids).
use foldhash::{HashMap, HashMapExt};

use crate::arena::Arena;
use crate::dedup::{DedupIndex, Fingerprint};
use crate::error::{EngineError, Result};
use crate::store::codec::{Dec, Enc};

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

    /// Ids of the names in use.
    pub fn live_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.refs
            .iter()
            .enumerate()
            .filter(|(_, &r)| r > 0)
            .map(|(i, _)| i as u32 + 1)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Image: the names by id (freed ids as empty strings); counts are rebuilt on load.
    fn encode(&self, e: &mut Enc) {
        e.u64(self.names.len() as u64);
        for n in &self.names {
            e.str(n);
        }
    }

    /// Rebuilds the table from its image and the column of ids that `alive` records use.
    fn decode(d: &mut Dec, column: &[u32], alive: &[bool]) -> Result<Names> {
        let n = d.count(4)?;
        let mut names: Vec<Box<str>> = Vec::with_capacity(n);
        for _ in 0..n {
            names.push(d.str()?.into());
        }
        let mut refs = vec![0usize; n];
        for (&id, &live) in column.iter().zip(alive) {
            match (live, id) {
                (false, 0) | (true, 0) => {}
                (true, id) if (id as usize) <= n && !names[id as usize - 1].is_empty() => {
                    refs[id as usize - 1] += 1
                }
                _ => return Err(d.error(format!("record refers to unknown name id {id}"))),
            }
        }
        let mut ids = HashMap::with_capacity(n);
        let mut free = Vec::new();
        for (i, name) in names.iter_mut().enumerate() {
            if refs[i] == 0 {
                *name = "".into();
                free.push(i as u32 + 1);
            } else if ids.insert(name.clone(), i as u32 + 1).is_some() {
                return Err(d.error(format!("name {name:?} appears twice")));
            }
        }
        free.reverse();
        Ok(Names {
            ids,
            names,
            refs,
            free,
        })
    }
}

/// Checks a namespace or session name: non-empty, bounded, no control characters.
pub fn validate_name(what: &'static str, name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > MAX_NAME_BYTES {
        format!(
            "it has {} bytes, over the limit of {MAX_NAME_BYTES}",
            name.len()
        )
    } else if name.chars().any(char::is_control) {
        "it contains control characters".to_owned()
    } else {
        return Ok(());
    };
    Err(EngineError::InvalidName {
        what,
        reason: format!("{name:?}: {reason}"),
    })
}

/// The slot of each live id. Entries hold only the slot (4 bytes) and read the id from the
/// id column, where a map of id → slot would spend 16 bytes an entry on the same facts.
#[derive(Default)]
struct SlotOf {
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl SlotOf {
    fn with_capacity(n: usize) -> Self {
        SlotOf {
            table: hashbrown::HashTable::with_capacity(n),
            hasher: Default::default(),
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    fn get(&self, id: u64, ids: &[u64]) -> Option<u32> {
        self.table
            .find(self.hasher.hash_one(id), |&s| ids[s as usize] == id)
            .copied()
    }

    /// Adds `slot` under the id `ids[slot]`; false (and nothing changes) if that id is present.
    fn insert(&mut self, slot: u32, ids: &[u64]) -> bool {
        let id = ids[slot as usize];
        let hasher = &self.hasher;
        match self.table.entry(
            hasher.hash_one(id),
            |&s| ids[s as usize] == id,
            |&s| hasher.hash_one(ids[s as usize]),
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(slot);
                true
            }
        }
    }

    fn remove(&mut self, id: u64, ids: &[u64]) {
        if let Ok(e) = self
            .table
            .find_entry(self.hasher.hash_one(id), |&s| ids[s as usize] == id)
        {
            e.remove();
        }
    }
}

/// The order [`Records::range`] lists slots in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// By time (then slot), across namespaces too.
    Time,
    /// Whatever is cheapest (callers that sort or only count).
    Any,
}

/// What a use of a record was, for [`Records::count_use`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Access,
    Mention,
}

#[derive(Default)]
pub struct Records {
    pub ids: Vec<u64>,
    slot_of: SlotOf,
    pub timestamps: Vec<i64>,
    pub namespace: Vec<u32>,
    pub session: Vec<u32>,
    texts: Arena,
    pub importance: Vec<f32>,
    /// Use of each record: times recalled, times seen again (a duplicate reinforced it) and
    /// when it was last used (µs, 0 = never). The lifecycle's reinforcement reads these.
    pub accesses: Vec<u32>,
    pub mentions: Vec<u32>,
    pub last_access: Vec<i64>,
    pub prints: Vec<Fingerprint>,
    pub alive: Vec<bool>,
    free: Vec<u32>,
    pub dedup: DedupIndex,
    pub namespaces: Names,
    pub sessions: Names,
    /// A namespace's records in time order. (All records in time order are these ranges
    /// merged: a second tree would cost ~20 bytes a record for searches no namespace scopes.)
    by_namespace_time: BTreeSet<NsTime>,
}

/// Key of [`Records::by_namespace_time`], ordered by (namespace, timestamp, slot): 16 bytes
/// where the tuple would take 24.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NsTime {
    timestamp: i64,
    namespace: u32,
    slot: u32,
}

impl Ord for NsTime {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.namespace, self.timestamp, self.slot).cmp(&(o.namespace, o.timestamp, o.slot))
    }
}

impl PartialOrd for NsTime {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Time-ordered streams of slots merged into one time order (ties by slot).
struct MergeByTime<'a, I: Iterator<Item = &'a NsTime>> {
    streams: Vec<std::iter::Peekable<I>>,
    heads: std::collections::BinaryHeap<std::cmp::Reverse<(i64, u32, usize)>>,
}

impl<'a, I: Iterator<Item = &'a NsTime>> MergeByTime<'a, I> {
    fn new(streams: impl IntoIterator<Item = I>) -> Self {
        let mut streams: Vec<_> = streams.into_iter().map(Iterator::peekable).collect();
        let heads = streams
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| {
                s.peek()
                    .map(|k| std::cmp::Reverse((k.timestamp, k.slot, i)))
            })
            .collect();
        MergeByTime { streams, heads }
    }
}

impl<'a, I: Iterator<Item = &'a NsTime>> Iterator for MergeByTime<'a, I> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let std::cmp::Reverse((_, slot, i)) = self.heads.pop()?;
        self.streams[i].next();
        if let Some(k) = self.streams[i].peek() {
            self.heads.push(std::cmp::Reverse((k.timestamp, k.slot, i)));
        }
        Some(slot)
    }
}

impl Records {
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.ids.len()
    }

    pub fn free_slots(&self) -> usize {
        self.free.len()
    }

    pub fn slot(&self, id: u64) -> Option<u32> {
        self.slot_of.get(id, &self.ids)
    }

    pub fn text_bytes(&self) -> usize {
        self.texts.text_bytes()
    }

    pub fn payload_bytes(&self) -> usize {
        self.texts.payload_bytes()
    }

    pub fn text(&self, slot: u32) -> &str {
        self.texts.text(slot as usize)
    }

    pub fn payload(&self, slot: u32) -> &[u8] {
        self.texts.payload(slot as usize)
    }

    /// Counts one use of the record in `slot` (a recall returned it, or a duplicate mentioned
    /// it again); its last use moves to `at` (µs) unless it is later already.
    pub fn count_use(&mut self, slot: u32, kind: Use, at: i64) {
        let s = slot as usize;
        let counter = match kind {
            Use::Access => &mut self.accesses[s],
            Use::Mention => &mut self.mentions[s],
        };
        *counter = counter.saturating_add(1);
        self.last_access[s] = self.last_access[s].max(at);
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
    pub fn insert(&mut self, r: &Record, fp: Fingerprint) -> u32 {
        let ns = self.namespaces.acquire(&r.namespace);
        let sess = r.session.as_deref().map_or(0, |s| self.sessions.acquire(s));
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.ids.push(0);
                self.timestamps.push(0);
                self.namespace.push(0);
                self.session.push(0);
                self.texts.push_empty();
                self.importance.push(0.0);
                self.accesses.push(0);
                self.mentions.push(0);
                self.last_access.push(0);
                self.prints.push(Fingerprint::default());
                self.alive.push(false);
                (self.ids.len() - 1) as u32
            }
        };
        let s = slot as usize;
        self.ids[s] = r.id;
        self.timestamps[s] = r.timestamp;
        self.namespace[s] = ns;
        self.session[s] = sess;
        self.texts.set(s, &r.text, &r.payload);
        self.importance[s] = r.importance;
        self.accesses[s] = 0;
        self.mentions[s] = 0;
        self.last_access[s] = 0;
        self.prints[s] = fp;
        self.dedup.insert(ns, slot, fp);
        self.alive[s] = true;
        self.slot_of.insert(slot, &self.ids);
        self.by_namespace_time.insert(NsTime {
            timestamp: r.timestamp,
            namespace: ns,
            slot,
        });
        slot
    }

    /// Removes the record at `slot`, dropping its text and payload from memory.
    pub fn remove(&mut self, slot: u32) {
        let s = slot as usize;
        let (ns, ts) = (self.namespace[s], self.timestamps[s]);
        self.by_namespace_time.remove(&NsTime {
            timestamp: ts,
            namespace: ns,
            slot,
        });
        self.slot_of.remove(self.ids[s], &self.ids);
        self.alive[s] = false;
        let (alive, namespace, prints) = (&self.alive, &self.namespace, &self.prints);
        self.dedup.remove(ns, slot, self.prints[s], |x, sim| {
            alive[x as usize] && namespace[x as usize] == ns && prints[x as usize].sim == sim
        });
        self.namespaces.release(ns);
        if self.session[s] != 0 {
            self.sessions.release(self.session[s]);
        }
        self.texts.clear(s);
        self.namespace[s] = 0;
        self.session[s] = 0;
        self.free.push(slot);
    }

    /// Slots in `namespace` (when given) with a timestamp in `[lo, hi)` (any time when `None`):
    /// in time order (ties by slot) with [`Order::Time`], else as the namespaces' ranges come
    /// (cheaper when no namespace is named: no merge).
    pub fn range(
        &self,
        namespace: Option<u32>,
        time: Option<(i64, i64)>,
        order: Order,
    ) -> Box<dyn Iterator<Item = u32> + '_> {
        match (namespace, order) {
            (Some(ns), _) => Box::new(self.namespace_range(ns, time).map(|k| k.slot)),
            (None, Order::Time) => Box::new(MergeByTime::new(
                self.namespaces
                    .live_ids()
                    .map(|ns| self.namespace_range(ns, time)),
            )),
            (None, Order::Any) => Box::new(
                self.namespaces
                    .live_ids()
                    .flat_map(move |ns| self.namespace_range(ns, time))
                    .map(|k| k.slot),
            ),
        }
    }

    fn namespace_range(
        &self,
        ns: u32,
        time: Option<(i64, i64)>,
    ) -> std::collections::btree_set::Range<'_, NsTime> {
        let key = |timestamp, slot| NsTime {
            timestamp,
            namespace: ns,
            slot,
        };
        match time {
            // An empty range (lo >= hi) reads nothing.
            Some((lo, hi)) => self.by_namespace_time.range(key(lo, 0)..key(hi.max(lo), 0)),
            None => self
                .by_namespace_time
                .range(key(i64::MIN, 0)..=key(i64::MAX, u32::MAX)),
        }
    }

    /// The records written just before and after `slot` in its session (same namespace and
    /// session): the nearest lower and higher ids among the `steps` records on either side of it
    /// in the namespace's time order. Ids grow in the order records are written, so in a
    /// conversation these are the turns said just before and after it; a record stamped far from
    /// its session's other records (an event dated to when it happened) may find none.
    pub fn session_neighbours(&self, slot: u32, steps: usize) -> (Option<u32>, Option<u32>) {
        let s = slot as usize;
        let (ns, sess, id) = (self.namespace[s], self.session[s], self.ids[s]);
        if sess == 0 || !self.alive[s] {
            return (None, None);
        }
        let key = |timestamp, slot| NsTime {
            timestamp,
            namespace: ns,
            slot,
        };
        let here = key(self.timestamps[s], slot);
        let before = self.by_namespace_time.range(key(i64::MIN, 0)..here).rev();
        let after = self.by_namespace_time.range((
            Bound::Excluded(here),
            Bound::Included(key(i64::MAX, u32::MAX)),
        ));
        let (mut prev, mut next): (Option<u32>, Option<u32>) = (None, None);
        for k in before.take(steps).chain(after.take(steps)) {
            let t = k.slot as usize;
            if self.session[t] != sess {
                continue;
            }
            let other = self.ids[t];
            if other < id && prev.is_none_or(|p| self.ids[p as usize] < other) {
                prev = Some(k.slot);
            } else if other > id && next.is_none_or(|n| self.ids[n as usize] > other) {
                next = Some(k.slot);
            }
        }
        (prev, next)
    }

    pub fn all_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.alive
            .iter()
            .enumerate()
            .filter(|(_, &a)| a)
            .map(|(s, _)| s as u32)
    }

    /// Image of the table: columns, texts and payloads (empty in freed slots), the free list
    /// and the name tables. Orderings and the id map are derived, so they are rebuilt on load.
    pub(crate) fn encode(&self, e: &mut Enc) {
        e.array(&self.ids);
        e.array(&self.timestamps);
        e.array(&self.namespace);
        e.array(&self.session);
        e.array(&self.importance);
        e.array(&self.accesses);
        e.array(&self.mentions);
        e.array(&self.last_access);
        let (exact, sim): (Vec<u64>, Vec<u64>) =
            self.prints.iter().map(|p| (p.exact, p.sim)).unzip();
        e.array(&exact);
        e.array(&sim);
        let sets: Vec<u64> = self.prints.iter().flat_map(|p| p.set).collect();
        e.array(&sets);
        let alive: Vec<u8> = self.alive.iter().map(|&a| a as u8).collect();
        e.array(&alive);
        for s in 0..self.ids.len() {
            e.str(self.texts.text(s));
            e.bytes(self.texts.payload(s));
        }
        e.array(&self.free);
        self.namespaces.encode(e);
        self.sessions.encode(e);
    }

    /// Reads an image written by [`Records::encode`]; images of version 1 have no use counts
    /// or fingerprints (they start at zero, so older records are never found as duplicates).
    pub(crate) fn decode(d: &mut Dec, version: u32) -> Result<Records> {
        let ids: Vec<u64> = d.array()?;
        let n = ids.len();
        let timestamps: Vec<i64> = d.array()?;
        let namespace: Vec<u32> = d.array()?;
        let session: Vec<u32> = d.array()?;
        let importance: Vec<f32> = d.array()?;
        #[allow(clippy::type_complexity)]
        let (accesses, mentions, last_access, exact, sim, sets): (
            Vec<u32>,
            Vec<u32>,
            Vec<i64>,
            Vec<u64>,
            Vec<u64>,
            Vec<u64>,
        ) = if version >= 2 {
            (
                d.array()?,
                d.array()?,
                d.array()?,
                d.array()?,
                d.array()?,
                d.array()?,
            )
        } else {
            (
                vec![0; n],
                vec![0; n],
                vec![0; n],
                vec![0; n],
                vec![0; n],
                vec![0; 4 * n],
            )
        };
        let alive_raw: Vec<u8> = d.array()?;
        if [
            timestamps.len(),
            namespace.len(),
            session.len(),
            importance.len(),
            alive_raw.len(),
            accesses.len(),
            mentions.len(),
            last_access.len(),
            exact.len(),
            sim.len(),
            sets.len() / 4,
        ]
        .iter()
        .any(|&l| l != n)
        {
            return Err(d.error("record columns differ in length"));
        }
        if alive_raw.iter().any(|&a| a > 1) {
            return Err(d.error("bad liveness flag"));
        }
        let alive: Vec<bool> = alive_raw.into_iter().map(|a| a == 1).collect();
        let mut texts = Arena::with_capacity(n, 0);
        for (s, &live) in alive.iter().enumerate() {
            let t = d.str()?;
            let p = d.bytes()?;
            if !live && (!t.is_empty() || !p.is_empty()) {
                return Err(d.error(format!("freed slot {s} still holds data")));
            }
            texts.push_empty();
            texts.set(s, t, p);
        }
        let free: Vec<u32> = d.array()?;
        let mut seen = vec![false; n];
        for &f in &free {
            if f as usize >= n
                || alive[f as usize]
                || std::mem::replace(&mut seen[f as usize], true)
            {
                return Err(d.error(format!("bad free slot {f}")));
            }
        }
        let namespaces = Names::decode(d, &namespace, &alive)?;
        let sessions = Names::decode(d, &session, &alive)?;
        if sets.len() % 4 != 0 {
            return Err(d.error("record columns differ in length"));
        }
        let prints: Vec<Fingerprint> = exact
            .into_iter()
            .zip(sim)
            .zip(sets.chunks_exact(4))
            .map(|((exact, sim), set)| Fingerprint {
                exact,
                sim,
                set: set.try_into().expect("4 words"),
            })
            .collect();
        let mut dedup = DedupIndex::default();
        let mut slot_of = SlotOf::with_capacity(n - free.len());
        let mut by_namespace_time = Vec::with_capacity(n);
        for s in (0..n).filter(|&s| alive[s]) {
            if namespace[s] == 0 {
                return Err(d.error(format!("record in slot {s} has no namespace")));
            }
            if !slot_of.insert(s as u32, &ids) {
                return Err(d.error(format!("id {} appears twice", ids[s])));
            }
            by_namespace_time.push(NsTime {
                timestamp: timestamps[s],
                namespace: namespace[s],
                slot: s as u32,
            });
        }
        // Sorted input builds the B-tree in one pass.
        by_namespace_time.sort_unstable();
        if version >= 2 {
            // Oldest first, so "recent" means the same after a reload as before it.
            for k in &by_namespace_time {
                dedup.insert(k.namespace, k.slot, prints[k.slot as usize]);
            }
        }
        Ok(Records {
            ids,
            slot_of,
            timestamps,
            namespace,
            session,
            texts,
            importance,
            accesses,
            mentions,
            last_access,
            prints,
            alive,
            free,
            dedup,
            namespaces,
            sessions,
            by_namespace_time: by_namespace_time.into_iter().collect(),
        })
    }

    pub fn record(&self, slot: u32, vector: Option<Vec<f32>>) -> Record {
        let s = slot as usize;
        Record {
            id: self.ids[s],
            namespace: self.namespaces.name(self.namespace[s]).to_owned(),
            session: (self.session[s] != 0).then(|| self.sessions.name(self.session[s]).to_owned()),
            timestamp: self.timestamps[s],
            text: self.texts.text(s).to_owned(),
            payload: self.texts.payload(s).to_vec(),
            importance: self.importance[s],
            vector,
        }
    }
}
