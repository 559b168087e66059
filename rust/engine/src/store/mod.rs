//! The durable store: one folder, one writer, a write-ahead log and snapshots.
//!
//! Files: `LOCK` (the writer's advisory lock), `snapshot-<generation>.trimem` (the state as of
//! the start of log `generation`) and `wal-<generation>.log` (changes since that snapshot).
//! A checkpoint writes snapshot `g + 1` (temporary file, fsync, rename, folder fsync), starts
//! log `g + 1`, then removes generation `g`'s files, so purged data leaves the folder. Opening
//! loads the newest snapshot, replays the logs from its generation on, cuts a torn log tail
//! and removes files a crash left behind. The log payloads are opaque to the engine: the
//! caller (the Python layer) encodes and applies its own operations.
//!
//! File names are fixed patterns; no caller-supplied id or name ever becomes a path.

pub mod codec;
pub mod fs;
mod lock;
pub mod snapshot;
mod syncer;
pub mod wal;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{EngineError, Result};
use crate::index::{HybridIndex, ImageBlocks};
use fs::{io_error, Faults};
use lock::WriterLock;
use snapshot::{Body, Part};
pub use wal::Durability;
use wal::Wal;

const LOCK_FILE: &str = "LOCK";
const STATE_SECTION: &str = "state";

fn snapshot_name(generation: u64) -> String {
    format!("snapshot-{generation:016x}.trimem")
}

fn wal_name(generation: u64) -> String {
    format!("wal-{generation:016x}.log")
}

/// (kind, generation) of a store file name; `None` for anything else.
fn parse_name(name: &str) -> Option<(&'static str, u64)> {
    let parse = |hex: &str| {
        (hex.len() == 16)
            .then(|| u64::from_str_radix(hex, 16).ok())
            .flatten()
    };
    if let Some(g) = name
        .strip_prefix("snapshot-")
        .and_then(|r| r.strip_suffix(".trimem"))
    {
        return parse(g).map(|g| ("snapshot", g));
    }
    if let Some(g) = name
        .strip_prefix("snapshot-")
        .and_then(|r| r.strip_suffix(".tmp"))
    {
        return parse(g).map(|g| ("tmp", g));
    }
    if let Some(g) = name
        .strip_prefix("wal-")
        .and_then(|r| r.strip_suffix(".log"))
    {
        return parse(g).map(|g| ("wal", g));
    }
    None
}

/// What opening the store found and did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recovery {
    pub generation: u64,
    pub snapshot: bool,
    pub log_records: usize,
    /// Bytes of a torn log tail that were cut off (an append that never completed).
    pub torn_bytes: usize,
    /// Files of older generations or unfinished snapshots that were removed.
    pub removed_files: Vec<String>,
    pub seconds: f64,
}

/// A freshly opened store with what it holds, for the caller to take.
pub struct Opened {
    pub store: Store,
    /// The caller's state blob from the snapshot.
    pub state: Option<Vec<u8>>,
    pub indexes: Vec<(String, HybridIndex)>,
    /// Log records after the snapshot, oldest first.
    pub log: Vec<Vec<u8>>,
}

pub struct Store {
    dir: PathBuf,
    wal: Wal,
    faults: Arc<Faults>,
    /// The background fsync thread: deferred appends (fsync durability), or the periodic
    /// flush of buffered appends. Taken (and stopped, with a last fsync) on close.
    syncer: Option<syncer::Syncer>,
    recovery: Recovery,
    /// Set when the store can no longer accept writes safely (see the message).
    broken: Option<String>,
    /// Declared last so it is released after everything above is closed.
    _lock: WriterLock,
}

fn check_section_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name != STATE_SECTION;
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidArgument(format!(
            "index name {name:?} must be 1-64 ASCII letters, digits or '_' (and not {STATE_SECTION:?})"
        )))
    }
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path, durability: Durability) -> Result<Opened> {
        let started = Instant::now();
        std::fs::create_dir_all(dir).map_err(|e| io_error("cannot create folder", dir, e))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = WriterLock::take(dir, &lock_path)?;
        let faults = Arc::new(Faults::default());
        let mut snapshots = Vec::new();
        let mut wals = Vec::new();
        let mut temps = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| io_error("cannot list", dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error("cannot list", dir, e))?;
            let name = entry.file_name();
            match name.to_str().and_then(parse_name) {
                Some(("snapshot", g)) => snapshots.push(g),
                Some(("wal", g)) => wals.push(g),
                Some((_, _)) => temps.push(name.to_string_lossy().into_owned()),
                None => {}
            }
        }
        let generation = snapshots.iter().copied().max().unwrap_or(0);
        let mut recovery = Recovery {
            generation,
            snapshot: !snapshots.is_empty(),
            ..Default::default()
        };
        let (state, indexes) = if recovery.snapshot {
            load_snapshot(&dir.join(snapshot_name(generation)), generation, &faults)?
        } else {
            (None, Vec::new())
        };
        wals.sort_unstable();
        let live: Vec<u64> = wals.iter().copied().filter(|&g| g >= generation).collect();
        let mut log = Vec::new();
        let mut current = None;
        for (i, &g) in live.iter().enumerate() {
            let path = dir.join(wal_name(g));
            let size = std::fs::metadata(&path)
                .map_err(|e| io_error("cannot stat", &path, e))?
                .len();
            if size < wal::HEADER_LEN as u64 && i + 1 == live.len() {
                // A crash (or a failed checkpoint) while the log was being created: its header
                // never landed, so it holds nothing. Start it again.
                fs::remove(&path)?;
                recovery.torn_bytes += size as usize;
                continue;
            }
            let (w, records, torn) = Wal::open(&path, durability, &faults)?;
            if w.generation() != g {
                return Err(EngineError::Corrupted(format!(
                    "{} claims generation {}",
                    wal_name(g),
                    w.generation()
                )));
            }
            if torn > 0 && i + 1 < live.len() {
                return Err(EngineError::Corrupted(format!(
                    "{} is cut short but later logs exist",
                    wal_name(g)
                )));
            }
            recovery.torn_bytes += torn;
            log.extend(records);
            current = Some(w);
        }
        let wal = match current {
            Some(w) => w,
            None => {
                let g = live.last().copied().unwrap_or(generation);
                let w = Wal::create(&dir.join(wal_name(g)), g, durability, &faults)?;
                fs::sync_dir(dir)?;
                w
            }
        };
        recovery.log_records = log.len();
        let old = snapshots
            .iter()
            .filter(|&&g| g < generation)
            .map(|&g| snapshot_name(g));
        let old_wals = wals
            .iter()
            .filter(|&&g| g < generation)
            .map(|&g| wal_name(g));
        let leftovers: Vec<String> = old.chain(old_wals).chain(temps).collect();
        for name in &leftovers {
            fs::remove(&dir.join(name))?;
        }
        if !leftovers.is_empty() {
            fs::sync_dir(dir)?;
        }
        recovery.removed_files = leftovers;
        recovery.seconds = started.elapsed().as_secs_f64();
        let delay = match durability {
            Durability::Fsync => None,
            Durability::Buffered => Some(FLUSH_EVERY),
        };
        let syncer = Some(syncer::Syncer::start(wal.file().try_clone()?, delay)?);
        let store = Store {
            dir: dir.to_owned(),
            _lock: lock,
            wal,
            faults,
            syncer,
            recovery,
            broken: None,
        };
        Ok(Opened {
            store,
            state,
            indexes,
            log,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    pub fn durability(&self) -> Durability {
        self.wal.durability()
    }

    pub fn generation(&self) -> u64 {
        self.wal.generation()
    }

    /// Bytes in the current log (what a reopen would replay).
    pub fn log_bytes(&self) -> u64 {
        self.wal.len()
    }

    pub fn faults(&self) -> &Arc<Faults> {
        &self.faults
    }

    fn check_writable(&self) -> Result<()> {
        match &self.broken {
            Some(why) => Err(EngineError::io(format!(
                "the store refuses writes: {why}; reopen it"
            ))),
            None => Ok(()),
        }
    }

    /// Appends operations as one log write. With fsync durability it returns once they are on
    /// disk; if it fails, none of them is in the log.
    pub fn append(&mut self, payloads: &[&[u8]]) -> Result<()> {
        self.check_writable()?;
        self.wal.append(payloads)?;
        if self.durability() == Durability::Buffered {
            self.request_sync();
        }
        Ok(())
    }

    /// Writes operations and starts their fsync on the store's fsync thread, so the caller can
    /// index them meanwhile; [`Store::settle_deferred`] with the returned ticket waits for the
    /// disk. Until then they are not acknowledged; if the fsync fails they leave the log.
    pub fn append_deferred(&mut self, payloads: &[&[u8]]) -> Result<u64> {
        self.check_writable()?;
        self.wal.append_deferred(payloads)?;
        Ok(self.request_sync())
    }

    pub fn settle_deferred(&mut self, ticket: u64) -> Result<()> {
        // Buffered appends are acknowledged without waiting for the disk.
        let outcome = match (self.durability(), &self.syncer) {
            (Durability::Fsync, Some(s)) => Some(s.wait(ticket)),
            _ => None,
        };
        self.wal.settle_deferred(outcome)
    }

    fn request_sync(&self) -> u64 {
        self.syncer.as_ref().map_or(0, |s| s.request())
    }

    /// Forces buffered appends to disk.
    pub fn sync(&mut self) -> Result<()> {
        self.wal.sync()
    }

    /// Writes a snapshot of `indexes` and `state` and starts a new, empty log; the previous
    /// generation's files are removed (so forgotten data leaves the folder). The caller must
    /// keep writers out for the duration; readers of the indexes may continue.
    pub fn checkpoint(&mut self, indexes: &[(&str, &HybridIndex)], state: &[u8]) -> Result<()> {
        self.check_writable()?;
        self.wal.finish_deferred()?;
        for (i, (name, _)) in indexes.iter().enumerate() {
            check_section_name(name)?;
            // Two sections of one name make a snapshot that no open accepts, and the checkpoint
            // would remove the generation before it.
            if indexes[..i].iter().any(|(n, _)| n == name) {
                return Err(EngineError::InvalidArgument(format!(
                    "index name {name:?} appears twice in one checkpoint"
                )));
            }
        }
        let old = self.wal.generation();
        let next = old + 1;
        let tmp = self.dir.join(format!("snapshot-{next:016x}.tmp"));
        let written = write_snapshot(&tmp, next, indexes, state, &self.faults)
            .and_then(|()| fs::rename(&tmp, &self.dir.join(snapshot_name(next))))
            .and_then(|()| fs::sync_dir(&self.dir));
        if let Err(e) = written {
            let _ = fs::remove(&tmp);
            return Err(e);
        }
        // From here the new snapshot is the truth: appends must go to the new log, or a reopen
        // would skip them. If it cannot be started, refuse writes rather than lose them.
        let durability = self.wal.durability();
        let path = self.dir.join(wal_name(next));
        let started = Wal::create(&path, next, durability, &self.faults).and_then(|w| {
            fs::sync_dir(&self.dir)?;
            Ok(w)
        });
        match started {
            Ok(w) => self.wal = w,
            Err(e) => {
                let _ = fs::remove(&path);
                self.broken = Some(format!("a checkpoint could not start its new log ({e})"));
                return Err(e);
            }
        }
        if let Some(s) = &self.syncer {
            s.replace(self.wal.file().try_clone()?);
        }
        fs::remove(&self.dir.join(wal_name(old)))?;
        fs::remove(&self.dir.join(snapshot_name(old)))?;
        fs::sync_dir(&self.dir)
    }

    /// Flushes and closes (also done on drop).
    pub fn close(mut self) -> Result<()> {
        self.syncer.take();
        self.wal.finish_deferred()?;
        self.wal.sync()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.syncer.take();
        let _ = self.wal.sync();
    }
}

fn write_snapshot(
    path: &Path,
    generation: u64,
    indexes: &[(&str, &HybridIndex)],
    state: &[u8],
    faults: &Arc<Faults>,
) -> Result<()> {
    let mut w = snapshot::Writer::create(path, generation, faults)?;
    w.section(STATE_SECTION, Part::Bytes(state))?;
    for (name, index) in indexes {
        let (blocks, vectors, links) = index.image();
        for part in ImageBlocks::NAMES {
            let block = blocks.get(part).expect("a known block");
            w.section(&format!("{name}.{part}"), Part::Bytes(block))?;
        }
        w.section(&format!("{name}.vectors"), Part::F32(vectors))?;
        w.section(&format!("{name}.links"), Part::U32(links))?;
    }
    w.finish()
}

type Loaded = (Option<Vec<u8>>, Vec<(String, HybridIndex)>);

fn load_snapshot(path: &Path, generation: u64, faults: &Arc<Faults>) -> Result<Loaded> {
    let what = path.display().to_string();
    let (claimed, sections) = snapshot::read(path, faults)?;
    if claimed != generation {
        return Err(EngineError::Corrupted(format!(
            "{what} claims generation {claimed}"
        )));
    }
    let mut state = None;
    let mut parts: Vec<IndexParts> = Vec::new();
    for (name, body) in sections {
        if name == STATE_SECTION {
            match body {
                Body::Bytes(b) => state = Some(b),
                _ => return Err(EngineError::Corrupted(format!("{what}: bad state section"))),
            }
            continue;
        }
        let unexpected = || EngineError::Corrupted(format!("{what}: unexpected section {name:?}"));
        let (index, part) = name.rsplit_once('.').ok_or_else(unexpected)?;
        let at = match parts.iter().position(|p| p.name == index) {
            Some(i) => i,
            None => {
                parts.push(IndexParts {
                    name: index.to_owned(),
                    ..Default::default()
                });
                parts.len() - 1
            }
        };
        let slot = &mut parts[at];
        match (part, body) {
            ("vectors", Body::F32(v)) if slot.vectors.is_none() => slot.vectors = Some(v),
            ("links", Body::U32(l)) if slot.links.is_none() => slot.links = Some(l),
            (block, Body::Bytes(b)) if !slot.seen.contains(&block.to_owned()) => {
                *slot.blocks.get_mut(block).ok_or_else(unexpected)? = b;
                slot.seen.push(block.to_owned());
            }
            _ => return Err(unexpected()),
        }
    }
    let mut indexes = Vec::new();
    for p in parts {
        let (Some(vectors), Some(links), 4) = (p.vectors, p.links, p.seen.len()) else {
            return Err(EngineError::Corrupted(format!(
                "{what}: index {:?} is incomplete",
                p.name
            )));
        };
        let index = HybridIndex::from_image(
            &p.blocks,
            vectors,
            links,
            &format!("{what} index {:?}", p.name),
        )?;
        indexes.push((p.name, index));
    }
    Ok((state, indexes))
}

/// The sections of one index found in a snapshot.
#[derive(Default)]
struct IndexParts {
    name: String,
    blocks: ImageBlocks,
    seen: Vec<String>,
    vectors: Option<Vec<f32>>,
    links: Option<Vec<u32>>,
}

/// How long buffered appends may wait for their fsync.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_never_issued_settles_instead_of_waiting_forever() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Durability::Fsync).unwrap().store;
        let ticket = store.append_deferred(&[b"op"]).unwrap();
        store.settle_deferred(ticket + 1000).unwrap();
        store.append_deferred(&[b"op"]).unwrap();
        store.settle_deferred(u64::MAX).unwrap();
        store.close().unwrap();
        let reopened = Store::open(dir.path(), Durability::Fsync).unwrap();
        assert_eq!(reopened.log, vec![b"op".to_vec(), b"op".to_vec()]);
    }

    #[test]
    fn a_checkpoint_naming_an_index_twice_is_refused_and_the_store_still_opens() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Durability::Fsync).unwrap().store;
        let idx = HybridIndex::new(crate::index::IndexConfig::default()).unwrap();
        store.append(&[b"op"]).unwrap();
        let twice = [("a", &idx), ("a", &idx)];
        assert!(matches!(
            store.checkpoint(&twice, b"state"),
            Err(EngineError::InvalidArgument(m)) if m.contains("twice")
        ));
        store.close().unwrap();
        let reopened = Store::open(dir.path(), Durability::Fsync).unwrap();
        assert_eq!(reopened.log, vec![b"op".to_vec()]);
    }
}
