//! The hybrid index: records + BM25 + HNSW behind one search call.
//!
//! Writes are split in two: [`Prepared::new`] validates and tokenises a batch without touching
//! the index (callers run it outside their write lock), then [`HybridIndex::apply`] checks ids
//! and inserts. A batch either lands whole or not at all.

use foldhash::{HashSet, HashSetExt};

use crate::arena::MAX_FIELD_BYTES;
use crate::bm25::{Bm25, Bm25Params};
use crate::dedup::{exact_jaccard, fingerprint, DedupParams, Fingerprint};
use crate::error::{EngineError, Result};
use crate::filter::{Filter, Resolved, SlotBits};
use crate::fusion::{fuse, FusionParams, Hit};
use crate::hnsw::{Hnsw, HnswParams};
use crate::records::{validate_name, Order, Record, Records, Use};
use crate::store::codec::{Dec, Enc};
use crate::tokenize::{Tokenizer, TokenizerOptions};

/// The encoded parts of an index image (see [`HybridIndex::image`]).
#[derive(Clone, Debug, Default)]
pub struct ImageBlocks {
    pub config: Vec<u8>,
    pub records: Vec<u8>,
    pub bm25: Vec<u8>,
    pub graph: Vec<u8>,
}

impl ImageBlocks {
    pub const NAMES: [&'static str; 4] = ["config", "records", "bm25", "graph"];

    pub fn get(&self, name: &str) -> Option<&Vec<u8>> {
        match name {
            "config" => Some(&self.config),
            "records" => Some(&self.records),
            "bm25" => Some(&self.bm25),
            "graph" => Some(&self.graph),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Vec<u8>> {
        match name {
            "config" => Some(&mut self.config),
            "records" => Some(&mut self.records),
            "bm25" => Some(&mut self.bm25),
            "graph" => Some(&mut self.graph),
            _ => None,
        }
    }
}

/// Version of the index image inside snapshots.
/// 2: use counts (accesses, mentions, last access) and dedup fingerprints per record.
const IMAGE_VERSION: u32 = 2;

/// BM25 postings (~6 ns each) from which a hybrid search offers its BM25 leg to the helper
/// thread ([`crate::overlap`]) while it runs the vector leg: under this the leg takes a few
/// microseconds, about what posting it costs.
const PARALLEL_LEGS_POSTINGS: usize = 1024;

/// Most build threads a caller may ask for: each is an OS thread.
const MAX_THREADS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Cosine similarity: vectors are normalised on the way in.
    Cosine,
    /// Raw inner product.
    InnerProduct,
}

impl Metric {
    pub fn parse(s: &str) -> Result<Metric> {
        match s {
            "cosine" => Ok(Metric::Cosine),
            "ip" | "dot" | "inner_product" => Ok(Metric::InnerProduct),
            other => Err(EngineError::InvalidArgument(format!(
                "unknown metric {other:?}: use \"cosine\" or \"ip\""
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::InnerProduct => "ip",
        }
    }
}

#[derive(Clone, Debug)]
pub struct IndexConfig {
    pub dim: usize,
    pub metric: Metric,
    pub m: usize,
    pub ef_construction: usize,
    pub tokenizer: TokenizerOptions,
    pub bm25: Bm25Params,
    pub seed: u64,
    pub max_text_bytes: usize,
    /// Threads for batch graph insertion and for running a hybrid search's two legs at once
    /// (0 = all cores, 1 = never in parallel).
    pub threads: usize,
    /// A filtered vector search scans exactly when at most this many records match (and also
    /// when matches are too sparse for the graph); with sign sketches (cosine, 128+ dims) it
    /// scans those up to half the records. 0 turns scanning off, to test the graph.
    pub exact_threshold: usize,
    /// One graph per namespace (tenant): a search in one namespace walks only that namespace's
    /// graph, as fast as an unfiltered search of a store that size; a search across all
    /// namespaces visits every graph (slower with many namespaces).
    pub partition_by_namespace: bool,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            dim: 0,
            metric: Metric::Cosine,
            m: 16,
            ef_construction: 200,
            tokenizer: TokenizerOptions::default(),
            bm25: Bm25Params::default(),
            seed: 42,
            max_text_bytes: 1 << 20,
            threads: 0,
            exact_threshold: 1000,
            partition_by_namespace: false,
        }
    }
}

/// The fewest dimensions for which the graph keeps sign sketches.
pub const SKETCH_MIN_DIM: usize = 128;

impl IndexConfig {
    fn hnsw_params(&self) -> HnswParams {
        // Sign sketches estimate angles, so they serve cosine; under inner product a vector's
        // norm matters as much as its direction. Under 128 dims a sketch has too few bits
        // (64 dims, tight clusters: recall@10 0.975 against the walk's 0.992), and vectors are
        // cheap enough to score exactly anyway. Elsewhere filtered searches walk the graph.
        let sign_sketches = self.metric == Metric::Cosine && self.dim >= SKETCH_MIN_DIM;
        HnswParams {
            m: self.m,
            ef_construction: self.ef_construction,
            seed: self.seed,
            sign_sketches,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(EngineError::InvalidArgument(m));
        if self.dim > 65_536 {
            return bad(format!("dim={} is too large (at most 65536)", self.dim));
        }
        if !(2..=128).contains(&self.m) {
            return bad(format!("m={} must be between 2 and 128", self.m));
        }
        if self.ef_construction == 0 || self.ef_construction > 10_000 {
            return bad(format!(
                "ef_construction={} must be between 1 and 10000",
                self.ef_construction
            ));
        }
        if !(self.bm25.k1.is_finite() && self.bm25.k1 >= 0.0) {
            return bad(format!("k1={} must be a finite number >= 0", self.bm25.k1));
        }
        if !(0.0..=1.0).contains(&self.bm25.b) {
            return bad(format!("b={} must be between 0 and 1", self.bm25.b));
        }
        if self.max_text_bytes == 0 {
            return bad("max_text_bytes must be positive".into());
        }
        if self.threads > MAX_THREADS {
            return bad(format!(
                "threads={} is too many (at most {MAX_THREADS}; 0 means one per core)",
                self.threads
            ));
        }
        Ok(())
    }
}

/// A batch of new records, borrowed from the caller. `vectors` is row-major `n × dim`.
pub struct Batch<'a> {
    pub ids: &'a [u64],
    pub texts: &'a [String],
    pub vectors: Option<&'a [f32]>,
    pub timestamps: &'a [i64],
    pub namespaces: &'a [String],
    pub sessions: Option<&'a [Option<String>]>,
    pub payloads: Option<&'a [Vec<u8>]>,
    pub importance: Option<&'a [f32]>,
}

/// A validated, tokenised batch, ready for [`HybridIndex::apply`].
pub struct Prepared {
    records: Vec<Record>,
    terms: Vec<Vec<String>>,
    prints: Vec<Fingerprint>,
    upsert: bool,
}

impl Prepared {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn new(
        config: &IndexConfig,
        tokenizer: &Tokenizer,
        b: &Batch,
        upsert: bool,
    ) -> Result<Self> {
        let n = b.ids.len();
        let check = |what: &'static str, got: usize| {
            if got == n {
                Ok(())
            } else {
                Err(EngineError::LengthMismatch {
                    what,
                    expected: n,
                    got,
                })
            }
        };
        check("texts", b.texts.len())?;
        check("timestamps", b.timestamps.len())?;
        check("namespaces", b.namespaces.len())?;
        if let Some(s) = b.sessions {
            check("sessions", s.len())?;
        }
        if let Some(p) = b.payloads {
            check("payloads", p.len())?;
        }
        if let Some(imp) = b.importance {
            check("importance", imp.len())?;
            if let Some(row) = imp.iter().position(|x| !x.is_finite()) {
                return Err(EngineError::InvalidArgument(format!(
                    "importance at row {row} is not a finite number"
                )));
            }
        }
        if let Some(v) = b.vectors {
            if config.dim == 0 {
                return Err(EngineError::InvalidArgument(
                    "this index was created with dim=0 (keyword only) and takes no vectors".into(),
                ));
            }
            if v.len() != n * config.dim {
                let got = v.len().checked_div(n).unwrap_or(v.len());
                return Err(EngineError::Dimension {
                    expected: config.dim,
                    got,
                });
            }
        }
        let text_limit = config.max_text_bytes.min(MAX_FIELD_BYTES);
        let mut seen = HashSet::with_capacity(n);
        for (row, &id) in b.ids.iter().enumerate() {
            if !seen.insert(id) {
                return Err(EngineError::DuplicateInBatch { id, row });
            }
            let text = &b.texts[row];
            if text.len() > text_limit {
                return Err(EngineError::TextTooLong {
                    row,
                    bytes: text.len(),
                    limit: text_limit,
                });
            }
            if let Some(p) = b.payloads.map(|p| &p[row]) {
                if p.len() > MAX_FIELD_BYTES {
                    return Err(EngineError::InvalidArgument(format!(
                        "payload at row {row} has {} bytes, over the limit of {MAX_FIELD_BYTES}",
                        p.len()
                    )));
                }
            }
            validate_name("namespace", &b.namespaces[row])?;
            if let Some(Some(s)) = b.sessions.map(|s| &s[row]) {
                validate_name("session", s)?;
            }
        }
        let mut records = Vec::with_capacity(n);
        for row in 0..n {
            let vector = match b.vectors {
                Some(v) => Some(prepare_vector(
                    config.metric,
                    &v[row * config.dim..(row + 1) * config.dim],
                    row,
                )?),
                None => None,
            };
            records.push(Record {
                id: b.ids[row],
                namespace: b.namespaces[row].clone(),
                session: b.sessions.and_then(|s| s[row].clone()),
                timestamp: b.timestamps[row],
                text: b.texts[row].clone(),
                payload: b.payloads.map(|p| p[row].clone()).unwrap_or_default(),
                importance: b.importance.map_or(0.0, |imp| imp[row]),
                vector,
            });
        }
        let terms: Vec<Vec<String>> = records
            .iter()
            .map(|r| tokenizer.tokenize(&r.text))
            .collect();
        let prints = terms.iter().map(|t| fingerprint(t)).collect();
        Ok(Prepared {
            records,
            terms,
            prints,
            upsert,
        })
    }
}

/// Checks a vector and normalises it for the cosine metric.
pub fn prepare_vector(metric: Metric, v: &[f32], row: usize) -> Result<Vec<f32>> {
    if v.iter().any(|x| !x.is_finite()) {
        return Err(EngineError::NonFinite { row });
    }
    match metric {
        Metric::InnerProduct => Ok(v.to_vec()),
        Metric::Cosine => {
            let norm = v
                .iter()
                .map(|&x| (x as f64) * (x as f64))
                .sum::<f64>()
                .sqrt();
            if norm == 0.0 || !norm.is_finite() {
                return Err(EngineError::ZeroVector { row });
            }
            Ok(v.iter().map(|&x| (x as f64 / norm) as f32).collect())
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Hybrid,
    Bm25,
    Vector,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        match s {
            "hybrid" => Ok(Mode::Hybrid),
            "bm25" => Ok(Mode::Bm25),
            "vector" => Ok(Mode::Vector),
            other => Err(EngineError::InvalidArgument(format!(
                "unknown mode {other:?}: use \"hybrid\", \"bm25\" or \"vector\""
            ))),
        }
    }
}

/// Which path the vector leg took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// No vector leg ran.
    None,
    /// HNSW traversal, with the filter checked on the way.
    Graph,
    /// Exact scan over the records that match the filter.
    Exact,
    /// The graph found fewer hits than the filter allows, so an exact scan completed them.
    GraphThenExact,
    /// Scan of the matching records' sign sketches, the best candidates scored exactly.
    Sketch,
}

impl Plan {
    pub fn name(self) -> &'static str {
        match self {
            Plan::None => "none",
            Plan::Graph => "graph",
            Plan::Exact => "exact",
            Plan::GraphThenExact => "graph+exact",
            Plan::Sketch => "sketch",
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchParams {
    pub k: usize,
    pub mode: Mode,
    pub ef: usize,
    /// Candidates taken from each leg before fusion (default `max(50, 5·k)` in hybrid mode).
    pub window: Option<usize>,
    pub fusion: FusionParams,
    pub min_bm25: Option<f32>,
    pub min_cosine: Option<f32>,
    pub filter: Filter,
}

impl Default for SearchParams {
    fn default() -> Self {
        SearchParams {
            k: 10,
            mode: Mode::Hybrid,
            ef: 64,
            window: None,
            fusion: FusionParams::default(),
            min_bm25: None,
            min_cosine: None,
            filter: Filter::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub plan: Plan,
}

#[derive(Clone, Debug)]
pub struct Stats {
    pub records: usize,
    pub vectors: usize,
    pub free_slots: usize,
    pub namespaces: usize,
    pub vocabulary: usize,
    pub avgdl: f64,
    pub text_bytes: usize,
    pub payload_bytes: usize,
    pub vector_index_bytes: usize,
    pub bm25_bytes: usize,
    pub dim: usize,
    pub metric: &'static str,
    pub kernel: &'static str,
    /// The sign-sketch scan's kernel, when the graph keeps sketches (cosine).
    pub sketch_kernel: Option<&'static str>,
}

pub struct HybridIndex {
    config: IndexConfig,
    tokenizer: Tokenizer,
    records: Records,
    bm25: Bm25,
    hnsw: Hnsw,
}

impl HybridIndex {
    pub fn new(config: IndexConfig) -> Result<Self> {
        config.validate()?;
        let hnsw = Hnsw::new(config.dim, config.hnsw_params());
        Ok(HybridIndex {
            tokenizer: Tokenizer::new(config.tokenizer),
            bm25: Bm25::new(config.bm25),
            records: Records::default(),
            hnsw,
            config,
        })
    }

    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.records.slot(id).is_some()
    }

    pub fn prepare(&self, batch: &Batch, upsert: bool) -> Result<Prepared> {
        Prepared::new(&self.config, &self.tokenizer, batch, upsert)
    }

    /// Inserts a prepared batch; fails without changing anything if an id exists (unless the
    /// batch was prepared with `upsert`).
    pub fn apply(&mut self, batch: Prepared) -> Result<()> {
        self.apply_dedup(batch, None).map(|_| ())
    }

    /// [`HybridIndex::apply`], and with `dedup` a record that near-duplicates one already in
    /// its namespace (or earlier in the batch) is not inserted: the existing record is
    /// reinforced instead (one more mention, last use at the newcomer's time). Returns, per
    /// record, the id of the record it duplicated. Deterministic for a given index state, so
    /// replaying a log repeats the same decisions.
    pub fn apply_dedup(
        &mut self,
        batch: Prepared,
        dedup: Option<&DedupParams>,
    ) -> Result<Vec<Option<u64>>> {
        if !batch.upsert {
            if let Some(r) = batch.records.iter().find(|r| self.contains(r.id)) {
                return Err(EngineError::DuplicateId(r.id));
            }
        } else {
            let existing: Vec<u64> = batch
                .records
                .iter()
                .map(|r| r.id)
                .filter(|&id| self.contains(id))
                .collect();
            self.delete(&existing, false)?;
        }
        let mut staged = Vec::new();
        let mut duplicates = vec![None; batch.records.len()];
        let dedup = dedup.filter(|_| !batch.upsert);
        for (row, (r, terms)) in batch.records.iter().zip(&batch.terms).enumerate() {
            let fp = batch.prints[row];
            if let Some(p) = dedup {
                if let Some(dup) = self.duplicate_of(r, terms, fp, p) {
                    if p.reinforce {
                        self.records.count_use(dup, Use::Mention, r.timestamp);
                    }
                    duplicates[row] = Some(self.records.ids[dup as usize]);
                    continue;
                }
            }
            let slot = self.records.insert(r, fp);
            self.bm25.add(slot, terms);
            if let Some(v) = &r.vector {
                let partition = if self.config.partition_by_namespace {
                    self.records.namespace[slot as usize]
                } else {
                    0
                };
                self.hnsw.stage(slot, v, partition);
                staged.push(slot);
            }
        }
        let threads = match self.config.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
        self.hnsw.link_all(&staged, threads);
        Ok(duplicates)
    }

    /// The record `r` near-duplicates in its namespace: the same normalised text, or a SimHash
    /// candidate whose token sets overlap by `min_jaccard` and, when both have vectors, whose
    /// cosine reaches `min_cosine`.
    fn duplicate_of(
        &self,
        r: &Record,
        terms: &[String],
        fp: Fingerprint,
        p: &DedupParams,
    ) -> Option<u32> {
        let rec = &self.records;
        let ns = rec.namespaces.get(&r.namespace)?;
        // Records without a vector (or a newcomer without one) are judged on their text alone.
        let cosine_ok = |slot: u32| match &r.vector {
            Some(v) => self
                .hnsw
                .similarity(v, slot)
                .is_none_or(|sim| sim >= p.min_cosine),
            None => true,
        };
        // The hashes and sketches only pick candidates: two tokens can share a sketch bit (and a
        // hash can be made to collide), so a candidate they accept is confirmed on its stored
        // text, tokenised again; texts whose tokens differ are never merged.
        let mut own: Option<HashSet<&str>> = None;
        let mut same_enough = |slot: u32, min: f32| {
            let own = own.get_or_insert_with(|| terms.iter().map(String::as_str).collect());
            let theirs = self.tokenizer.tokenize(rec.text(slot));
            exact_jaccard(own, &theirs.iter().map(String::as_str).collect()) >= min
        };
        if let Some(slot) = rec.dedup.exact(ns, fp) {
            let stored = &rec.prints[slot as usize];
            if rec.alive[slot as usize]
                && stored.exact == fp.exact
                && stored.set == fp.set
                && cosine_ok(slot)
                && self.tokenizer.tokenize(rec.text(slot)) == terms
            {
                return Some(slot);
            }
        }
        let live = |s: u32, sim: u64| {
            rec.alive[s as usize]
                && rec.namespace[s as usize] == ns
                && rec.prints[s as usize].sim == sim
        };
        rec.dedup
            .candidates(ns, fp, p, live)
            .into_iter()
            .find(|&slot| {
                rec.prints[slot as usize].jaccard(&fp) >= p.min_jaccard
                    && cosine_ok(slot)
                    && same_enough(slot, p.min_jaccard)
            })
    }

    /// Counts a use of each record (a recall returned it): one more access, last use at `at`
    /// (µs). Unknown ids are skipped (a use may arrive after a forget); returns how many were
    /// found.
    pub fn touch(&mut self, ids: &[u64], at: i64) -> usize {
        self.count_uses(ids, Use::Access, at)
    }

    /// Counts one mention (the record was seen again, as a duplicate does) of each record:
    /// mentions + 1, last use `at` (µs). Unknown ids are skipped; returns how many were found.
    /// Dedup counts mentions itself; this restores them elsewhere (an imported export).
    pub fn mention(&mut self, ids: &[u64], at: i64) -> usize {
        self.count_uses(ids, Use::Mention, at)
    }

    fn count_uses(&mut self, ids: &[u64], kind: Use, at: i64) -> usize {
        let mut n = 0;
        for &id in ids {
            if let Some(slot) = self.records.slot(id) {
                self.records.count_use(slot, kind, at);
                n += 1;
            }
        }
        n
    }

    /// (accesses, mentions, last access) of a record.
    pub fn usage(&self, id: u64) -> Option<(u32, u32, i64)> {
        let s = self.records.slot(id)? as usize;
        Some((
            self.records.accesses[s],
            self.records.mentions[s],
            self.records.last_access[s],
        ))
    }

    /// The per-record columns of the records a filter matches, for policies computed in bulk
    /// (retention, statistics, point-in-time views) without fetching records one by one.
    pub fn columns(&self, filter: &Filter) -> Result<Columns> {
        filter.validate()?;
        let mut c = Columns::default();
        let Some(r) = Resolved::new(&self.records, filter) else {
            return Ok(c);
        };
        let rec = &self.records;
        for s in r.matching(Order::Time) {
            let s = s as usize;
            c.ids.push(rec.ids[s]);
            c.timestamps.push(rec.timestamps[s]);
            c.importance.push(rec.importance[s]);
            c.accesses.push(rec.accesses[s]);
            c.mentions.push(rec.mentions[s]);
            c.last_access.push(rec.last_access[s]);
            c.text_bytes
                .push((rec.text(s as u32).len() + rec.payload(s as u32).len()) as u64);
        }
        Ok(c)
    }

    /// Validates, tokenises and inserts in one step.
    pub fn add(&mut self, batch: &Batch, upsert: bool) -> Result<()> {
        let prepared = self.prepare(batch, upsert)?;
        self.apply(prepared)
    }

    /// Deletes records by id. Unknown ids fail the whole call unless `missing_ok`.
    /// Returns how many records were deleted.
    pub fn delete(&mut self, ids: &[u64], missing_ok: bool) -> Result<usize> {
        if !missing_ok {
            if let Some(&id) = ids.iter().find(|&&id| !self.contains(id)) {
                return Err(EngineError::UnknownId(id));
            }
        }
        let mut n = 0;
        for &id in ids {
            let Some(slot) = self.records.slot(id) else {
                continue;
            };
            let terms = self.tokenizer.tokenize(self.records.text(slot));
            self.bm25.remove(slot, &terms);
            self.hnsw.remove(slot);
            self.records.remove(slot);
            n += 1;
        }
        Ok(n)
    }

    /// The index as parts for a snapshot: four encoded blocks, plus the vectors and level-0
    /// links as raw arrays (written without copying). Blocks are encoded in parallel.
    pub fn image(&self) -> (ImageBlocks, &[f32], &[u32]) {
        let mut config = Enc::default();
        let c = &self.config;
        config.u32(IMAGE_VERSION);
        config.u64(c.dim as u64);
        config.u8(matches!(c.metric, Metric::InnerProduct) as u8);
        config.u64(c.m as u64);
        config.u64(c.ef_construction as u64);
        config.bool(c.tokenizer.stem);
        config.bool(c.tokenizer.stopwords);
        config.f32(c.bm25.k1);
        config.f32(c.bm25.b);
        config.u64(c.seed);
        config.u64(c.max_text_bytes as u64);
        config.u64(c.exact_threshold as u64);
        config.bool(c.partition_by_namespace);
        let encode = |f: &dyn Fn(&mut Enc)| {
            let mut e = Enc::default();
            f(&mut e);
            e.buf
        };
        let (records, (bm25, graph)) = rayon::join(
            || encode(&|e| self.records.encode(e)),
            || {
                rayon::join(
                    || encode(&|e| self.bm25.encode(e, &self.records.alive)),
                    || encode(&|e| self.hnsw.encode(e)),
                )
            },
        );
        let (vectors, links) = self.hnsw.raw_parts();
        (
            ImageBlocks {
                config: config.buf,
                records,
                bm25,
                graph,
            },
            vectors,
            links,
        )
    }

    /// Rebuilds an index from [`HybridIndex::image`] parts, validating all of it. The record
    /// table, the BM25 index and the graph decode in parallel.
    pub fn from_image(
        blocks: &ImageBlocks,
        vectors: Vec<f32>,
        links: Vec<u32>,
        what: &str,
    ) -> Result<HybridIndex> {
        let mut d = Dec::new(&blocks.config, what);
        let version = d.u32()?;
        if version > IMAGE_VERSION {
            return Err(EngineError::FormatVersion {
                path: what.to_owned(),
                found: version,
                supported: IMAGE_VERSION,
            });
        }
        let config = IndexConfig {
            dim: d.u64()? as usize,
            metric: if d.u8()? == 1 {
                Metric::InnerProduct
            } else {
                Metric::Cosine
            },
            m: d.u64()? as usize,
            ef_construction: d.u64()? as usize,
            tokenizer: TokenizerOptions {
                stem: d.bool()?,
                stopwords: d.bool()?,
            },
            bm25: Bm25Params {
                k1: d.f32()?,
                b: d.f32()?,
            },
            seed: d.u64()?,
            max_text_bytes: d.u64()? as usize,
            threads: 0,
            exact_threshold: d.u64()? as usize,
            partition_by_namespace: d.bool()?,
        };
        d.finish()?;
        config
            .validate()
            .map_err(|e| d.error(format!("bad index settings: {e}")))?;
        let params = config.hnsw_params();
        let (records, (bm25, hnsw)) = rayon::join(
            || {
                let mut d = Dec::new(&blocks.records, what);
                let r = Records::decode(&mut d, version)?;
                d.finish().map(|()| r)
            },
            || {
                rayon::join(
                    || {
                        let mut d = Dec::new(&blocks.bm25, what);
                        let b = Bm25::decode(&mut d, config.bm25)?;
                        d.finish().map(|()| b)
                    },
                    || {
                        let mut d = Dec::new(&blocks.graph, what);
                        let h = Hnsw::decode(&mut d, config.dim, params, vectors, links)?;
                        d.finish().map(|()| h)
                    },
                )
            },
        );
        let (records, (bm25, indexed), hnsw) = (records?, bm25?, hnsw?);
        let cap = records.capacity();
        let mismatch = |why: &str| EngineError::Corrupted(format!("{what}: {why}"));
        if indexed.len() > cap
            || (0..cap).any(|s| records.alive[s] != indexed.get(s).is_some_and(|&x| x))
        {
            return Err(mismatch(
                "the BM25 index and the records disagree on which slots hold documents",
            ));
        }
        if hnsw.capacity() > cap
            || (0..hnsw.capacity() as u32).any(|s| hnsw.contains(s) && !records.alive[s as usize])
        {
            return Err(mismatch("graph nodes without records"));
        }
        let wrong_partition = |s: u32| {
            let want = if config.partition_by_namespace {
                records.namespace[s as usize]
            } else {
                0
            };
            hnsw.contains(s) && hnsw.partition(s) != want
        };
        if (0..hnsw.capacity() as u32).any(wrong_partition) {
            return Err(mismatch("graph partitions disagree with the namespaces"));
        }
        Ok(HybridIndex {
            tokenizer: Tokenizer::new(config.tokenizer),
            records,
            bm25,
            hnsw,
            config,
        })
    }

    pub fn get(&self, id: u64) -> Option<Record> {
        let slot = self.records.slot(id)?;
        let vector = self
            .hnsw
            .contains(slot)
            .then(|| self.hnsw.vector(slot).to_vec());
        Some(self.records.record(slot, vector))
    }

    /// Ids of the records a filter matches (in time order when it names a namespace or a
    /// time range, else in slot order): what "forget this session" or "this user's
    /// episodes" reads.
    pub fn matching_ids(&self, filter: &Filter) -> Result<Vec<u64>> {
        filter.validate()?;
        let Some(r) = Resolved::new(&self.records, filter) else {
            return Ok(Vec::new());
        };
        Ok(r.matching(Order::Time)
            .map(|s| self.records.ids[s as usize])
            .collect())
    }

    /// For each id, the ids written just before and after it in its session, looking at most
    /// `steps` records of its namespace each way in time order (see
    /// [`Records::session_neighbours`]); `(None, None)` for an unknown id or a record without
    /// a session.
    pub fn session_neighbours(&self, ids: &[u64], steps: usize) -> Vec<(Option<u64>, Option<u64>)> {
        let id_of = |s: Option<u32>| s.map(|s| self.records.ids[s as usize]);
        ids.iter()
            .map(|&id| match self.records.slot(id) {
                Some(slot) => {
                    let (p, n) = self.records.session_neighbours(slot, steps);
                    (id_of(p), id_of(n))
                }
                None => (None, None),
            })
            .collect()
    }

    /// Ids of all records, in slot order.
    pub fn ids(&self) -> Vec<u64> {
        self.records
            .all_slots()
            .map(|s| self.records.ids[s as usize])
            .collect()
    }

    /// Sets records' importance. Fails without changing anything on an unknown id.
    pub fn set_importance(&mut self, ids: &[u64], values: &[f32]) -> Result<()> {
        if ids.len() != values.len() {
            return Err(EngineError::LengthMismatch {
                what: "values",
                expected: ids.len(),
                got: values.len(),
            });
        }
        let mut slots = Vec::with_capacity(ids.len());
        for (&id, v) in ids.iter().zip(values) {
            if !v.is_finite() {
                return Err(EngineError::InvalidArgument(format!(
                    "importance for id {id} is not a finite number"
                )));
            }
            slots.push(self.records.slot(id).ok_or(EngineError::UnknownId(id))?);
        }
        for (slot, &v) in slots.into_iter().zip(values) {
            self.records.importance[slot as usize] = v;
        }
        Ok(())
    }

    /// BM25 score of record `id` for `text` (a reference for tests and explanations).
    pub fn bm25_score(&self, text: &str, id: u64) -> Result<f32> {
        let slot = self.records.slot(id).ok_or(EngineError::UnknownId(id))?;
        let q = self.tokenizer.tokenize(text);
        let d = self.tokenizer.tokenize(self.records.text(slot));
        Ok(self.bm25.score(&q, slot, &d))
    }

    pub fn doc_freq(&self, term: &str) -> usize {
        self.bm25.doc_freq(term)
    }

    /// `share` of the BM25 score a record of average length holding each known term of `text`
    /// once would get: `share · Σ idf / (1 + k1)` over the distinct terms. A floor relative to
    /// the query's own idf mass means the same in a tiny index and a huge one. With `unseen`,
    /// terms no record holds count too (at the idf of a term in no record): the floor of a match
    /// on the whole request, which a request mostly about what was never stored cannot reach.
    pub fn bm25_floor(&self, text: &str, share: f32, unseen: bool) -> f32 {
        if self.records.is_empty() || !share.is_finite() || share <= 0.0 {
            return 0.0;
        }
        let mut terms = self.tokenizer.tokenize(text);
        terms.sort_unstable();
        terms.dedup();
        let mass: f64 = terms
            .iter()
            .map(|t| self.bm25.doc_freq(t))
            .filter(|&df| unseen || df > 0)
            .map(|df| self.bm25.idf(df))
            .sum();
        (f64::from(share) * mass / (1.0 + f64::from(self.config.bm25.k1))) as f32
    }

    pub fn stats(&self) -> Stats {
        Stats {
            records: self.records.len(),
            vectors: self.hnsw.len(),
            free_slots: self.records.free_slots(),
            namespaces: self.records.namespaces.len(),
            vocabulary: self.bm25.vocabulary_size(),
            avgdl: self.bm25.avgdl(),
            text_bytes: self.records.text_bytes(),
            payload_bytes: self.records.payload_bytes(),
            vector_index_bytes: self.hnsw.memory_bytes(),
            bm25_bytes: self.bm25.memory_bytes(),
            dim: self.config.dim,
            metric: self.config.metric.name(),
            kernel: crate::distance::kernel_name(),
            sketch_kernel: self.hnsw.has_sketches().then(crate::sketch::kernel_name),
        }
    }

    /// `p` with its sizes capped by what the index holds: no search returns more records than
    /// exist, so a caller's `k=10**9` costs what `k=len` costs instead of an allocation the
    /// process cannot survive.
    fn clamped(&self, p: &SearchParams) -> SearchParams {
        let cap = self.records.len().max(1);
        SearchParams {
            k: p.k.min(cap),
            ef: p.ef.min(cap),
            window: p.window.map(|w| w.min(cap)),
            ..p.clone()
        }
    }

    fn check_search(
        &self,
        text: Option<&str>,
        vector: Option<&[f32]>,
        p: &SearchParams,
    ) -> Result<()> {
        let bad = |m: String| Err(EngineError::InvalidArgument(m));
        if p.k == 0 {
            return bad("k must be at least 1".into());
        }
        if p.ef == 0 {
            return bad("ef must be at least 1".into());
        }
        if p.window == Some(0) {
            return bad("window must be at least 1".into());
        }
        let f = &p.fusion;
        if !(f.rrf_k.is_finite() && f.rrf_k >= 0.0) {
            return bad(format!("rrf_k={} must be a finite number >= 0", f.rrf_k));
        }
        if ![
            f.weights.0,
            f.weights.1,
            f.decay_weight,
            f.importance_weight,
        ]
        .iter()
        .all(|w| w.is_finite())
        {
            return bad("weights must be finite numbers".into());
        }
        if f.half_life.is_some_and(|h| !(h.is_finite() && h > 0.0)) {
            return bad("half_life must be a positive number of microseconds".into());
        }
        p.filter.validate()?;
        match (p.mode, text, vector) {
            (Mode::Bm25, None, _) => bad("mode \"bm25\" needs a query text".into()),
            (Mode::Vector, _, None) => bad("mode \"vector\" needs a query vector".into()),
            (Mode::Hybrid, None, None) => {
                bad("a search needs a query text, a vector or both".into())
            }
            _ => Ok(()),
        }?;
        if let Some(v) = vector {
            if v.len() != self.config.dim {
                return Err(EngineError::Dimension {
                    expected: self.config.dim,
                    got: v.len(),
                });
            }
        }
        Ok(())
    }

    /// The whole hot path: both legs with the filter applied inside them, then fusion.
    pub fn search(
        &self,
        text: Option<&str>,
        vector: Option<&[f32]>,
        p: &SearchParams,
    ) -> Result<SearchResult> {
        self.check_search(text, vector, p)?;
        let clamped = self.clamped(p);
        let p = &clamped;
        let query_vec = match vector {
            Some(v) if p.mode != Mode::Bm25 => Some(prepare_vector(self.config.metric, v, 0)?),
            _ => None,
        };
        let Some(filter) = Resolved::new(&self.records, &p.filter) else {
            return Ok(SearchResult {
                hits: Vec::new(),
                plan: Plan::None,
            });
        };
        let use_text = text.filter(|_| p.mode != Mode::Vector);
        let both = use_text.is_some() && query_vec.is_some();
        let window = p
            .window
            .unwrap_or(if both { (5 * p.k).max(50) } else { p.k });

        let plan = self.plan(
            &filter,
            query_vec.is_some().then(|| sketch_rescore(p.ef, window)),
        );
        let terms = use_text.map(|t| self.bm25.query(&self.tokenizer.tokenize(t)));
        let bm25_leg = || match &terms {
            Some(terms) => {
                let ids = &self.records.ids;
                self.bm25.search(
                    terms,
                    window,
                    p.min_bm25.unwrap_or(f32::MIN),
                    |s| filter.allows(s),
                    |s| ids[s as usize],
                )
            }
            None => Vec::new(),
        };
        let vector_leg = || match &query_vec {
            Some(q) => self.vector_leg(q, window, p.ef, &filter, &plan),
            None => (Vec::new(), Plan::None),
        };
        // The legs overlap on two cores when the BM25 leg is worth handing over; the caller
        // never waits for the helper to wake (it runs a leg the helper has not started itself).
        let parallel = query_vec.is_some()
            && self.config.threads != 1
            && terms
                .as_ref()
                .is_some_and(|q| self.bm25.postings_to_read(q) >= PARALLEL_LEGS_POSTINGS);
        let ((mut vec_hits, plan), bm25_hits) = if parallel {
            crate::overlap::join(vector_leg, bm25_leg)
        } else {
            (vector_leg(), bm25_leg())
        };
        if let Some(floor) = p.min_cosine {
            vec_hits.retain(|&(sim, _)| sim >= floor);
        }
        let hits = fuse(&bm25_hits, &vec_hits, &p.fusion, p.k, &self.records);
        Ok(SearchResult { hits, plan })
    }

    /// `rescore` is how many candidates a sketch scan would score exactly (`None`: no vector
    /// leg).
    fn plan(&self, filter: &Resolved, rescore: Option<usize>) -> LegPlan {
        let vector_leg = rescore.is_some();
        // With one graph per namespace, a namespace filter picks the graph and is no filter at
        // all inside it; what restricts is time or session, relative to the namespace's size.
        let partition = if self.config.partition_by_namespace {
            filter.namespace()
        } else {
            None
        };
        let restricts = match partition {
            Some(_) => filter.restricts_within_namespace(),
            None => filter.restricts(),
        };
        let population = match partition {
            Some(ns) => self.records.namespaces.count(ns),
            None => self.records.len(),
        };
        if !restricts {
            return LegPlan {
                estimate: population,
                population,
                scan: None,
                two_hop: false,
                partition,
                restricts,
                bits: None,
            };
        }
        let threshold = self.config.exact_threshold;
        // Inside one namespace's graph, count what also matches time and session exactly when
        // the namespace is small enough (its records are one ordered range), else estimate.
        // The count stops once it decides both questions (exact scan? two-hop?): past half the
        // namespace the walk is plain and the beam is not widened, so the rest does not matter.
        const COUNT_WITHIN: usize = 20_000;
        let (mut estimate, few, counted) = match partition {
            Some(_) if population <= COUNT_WITHIN => {
                let counted = filter.count_up_to(threshold.max(population / 2));
                (counted, counted <= threshold, true)
            }
            _ => {
                let estimate = filter.estimate();
                (
                    estimate,
                    vector_leg
                        && estimate <= threshold.saturating_mul(2)
                        && filter.count_up_to(threshold) <= threshold,
                    false,
                )
            }
        };
        // Under a few percent the allowed nodes are too sparse for the two-hop walk (recall@10
        // measured 0.79 at 2 % and 0.86 at 5 %, 100k × 384 seed-1 data) and the graph needs a
        // beam so wide that reading every match is cheaper: scan, up to a bound on its cost.
        const TWO_HOP_MIN_SHARE: f64 = 0.08;
        const SPARSE_SCAN_MAX: usize = 50_000;
        let share = |n: usize| n as f64 / population.max(1) as f64;
        // Near that line a sampled estimate sends some queries of one window size each way (a
        // 10 % window read as under 8 % by 6 % of queries, which then scanned 3× longer): count
        // exactly there, with the bitmap the two-hop walk or the scan reads anyway.
        let mut bits = None;
        if vector_leg
            && !few
            && !counted
            && (0.5 * TWO_HOP_MIN_SHARE..2.0 * TWO_HOP_MIN_SHARE).contains(&share(estimate))
        {
            let b = filter.bitmap();
            estimate = b.count();
            bits = Some(b);
        }
        let sparse =
            threshold > 0 && share(estimate) < TWO_HOP_MIN_SHARE && estimate <= SPARSE_SCAN_MAX;
        // With sketches, anything from a few thousand matches to half the records is scanned
        // (at 100k × 384 faster than the walk at 10, 30 and 50 %: 0.44×, 0.72×, 0.84× its
        // time), up to a bound on the scan's cost (~1 ms); fewer matches than twice the
        // candidates to re-score are scored exactly, which is then as cheap.
        const SKETCH_MAX_SHARE: f64 = 0.5;
        const SKETCH_SCAN_MAX: usize = 100_000;
        let sketchable = threshold > 0
            && self.hnsw.has_sketches()
            && share(estimate) <= SKETCH_MAX_SHARE
            && estimate <= SKETCH_SCAN_MAX;
        let scan = match rescore {
            None => None,
            Some(_) if few => Some(Scan::Exact),
            Some(r) if sketchable && estimate > 2 * r => Some(Scan::Sketch(r)),
            Some(_) if sketchable || sparse => Some(Scan::Exact),
            Some(_) => None,
        };
        LegPlan {
            estimate,
            population,
            scan,
            two_hop: estimate * 2 < population,
            partition,
            restricts,
            bits,
        }
    }

    /// Vector leg: exact scan when few records match the filter, a sketch scan when up to half
    /// of them do (and the graph keeps sketches), otherwise the graph with the filter checked
    /// during traversal (two-hop expansion when the filter is selective), completed by an
    /// exact scan if the graph could not fill the window.
    fn vector_leg(
        &self,
        q: &[f32],
        window: usize,
        ef: usize,
        filter: &Resolved,
        plan: &LegPlan,
    ) -> (Vec<(f32, u32)>, Plan) {
        if self.hnsw.is_empty() {
            return (Vec::new(), Plan::None);
        }
        match plan.scan {
            Some(Scan::Exact) => {
                return (
                    self.exact(q, window, filter, plan.estimate, plan.bits.as_ref()),
                    Plan::Exact,
                )
            }
            Some(Scan::Sketch(rescore)) => {
                let slots = self.matching_slots(filter, plan.estimate, plan.bits.as_ref());
                let ids = &self.records.ids;
                return (
                    self.hnsw
                        .sketch_scan(q, window, &slots, rescore, |s| ids[s as usize]),
                    Plan::Sketch,
                );
            }
            None => {}
        }
        // The bitmap is built here when the planner did not need it, so that it overlaps the
        // BM25 leg when the legs run in parallel.
        let built;
        let bits = match &plan.bits {
            Some(b) => Some(b),
            None if plan.two_hop => {
                built = filter.bitmap();
                Some(&built)
            }
            None => None,
        };
        let mut ef = ef.max(window);
        if plan.two_hop {
            // A selective filter leaves fewer allowed nodes near the query; a wider beam keeps
            // recall (√ growth, capped at 4×, measured on synthetic clustered data).
            let share = plan.estimate.max(1) as f64 / plan.population.max(1) as f64;
            ef = (ef as f64 * (0.1 / share).sqrt().clamp(1.0, 4.0)) as usize;
        }
        let ids = &self.records.ids;
        let search = |partition: u32| {
            // Deleted records are out of the graph, so with no restriction there is nothing to
            // check. Within a namespace's graph the namespace is still checked: a link left by
            // a deleted node whose slot another namespace reused may point across.
            // One walk per kind of check, so that the bitmap test (most of a selective walk's
            // checks) is inlined rather than a call that also carries the full filter.
            match (plan.restricts || plan.partition.is_some(), bits) {
                (true, Some(b)) => self.hnsw.search(
                    q,
                    window,
                    ef,
                    Some(&|s| b.contains(s)),
                    plan.two_hop,
                    partition,
                ),
                (true, None) => self.hnsw.search(
                    q,
                    window,
                    ef,
                    Some(&|s| filter.allows(s)),
                    plan.two_hop,
                    partition,
                ),
                (false, _) => {
                    self.hnsw
                        .search(q, window, ef, None::<&fn(u32) -> bool>, false, partition)
                }
            }
        };
        let mut hits = match (self.config.partition_by_namespace, plan.partition) {
            (false, _) => search(0),
            (true, Some(ns)) => search(ns),
            // No namespace named: every namespace's graph, merged.
            (true, None) => self
                .hnsw
                .partitions()
                .into_iter()
                .flat_map(search)
                .collect(),
        };
        // The graph orders ties by slot; results must not depend on insertion order.
        hits.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(ids[a.1 as usize].cmp(&ids[b.1 as usize]))
        });
        hits.dedup_by_key(|h| h.1); // merged graphs could reach a node twice through a stale link
        hits.truncate(window);
        // A graph can leave a node unreachable; the exact scan guarantees a full answer.
        if hits.len() >= window
            || (!plan.restricts && hits.len() >= plan.population.min(self.hnsw.len()))
        {
            return (hits, Plan::Graph);
        }
        (
            self.exact(q, window, filter, plan.estimate, bits),
            Plan::GraphThenExact,
        )
    }

    /// Exact top-`window` over the matches; `bits` is the filter's bitmap when the graph walk
    /// built one already.
    fn exact(
        &self,
        q: &[f32],
        window: usize,
        filter: &Resolved,
        estimate: usize,
        bits: Option<&SlotBits>,
    ) -> Vec<(f32, u32)> {
        let slots = self.matching_slots(filter, estimate, bits);
        let ids = &self.records.ids;
        self.hnsw.exact(q, window, &slots, |s| ids[s as usize])
    }

    /// The slots the filter allows that have a vector, in increasing order.
    fn matching_slots(
        &self,
        filter: &Resolved,
        estimate: usize,
        bits: Option<&SlotBits>,
    ) -> Vec<u32> {
        // Slot order reads the vectors front to back, which the memory system likes. Past about
        // one match in a hundred slots, one vectorised pass over the columns lists them in that
        // order more cheaply than walking the time index and sorting.
        match bits {
            Some(b) => b.ones_within(self.hnsw.in_graph()),
            None if estimate.saturating_mul(128) >= self.records.capacity() => {
                filter.bitmap().ones_within(self.hnsw.in_graph())
            }
            None => {
                let mut slots: Vec<u32> = filter
                    .matching(Order::Any)
                    .filter(|&s| self.hnsw.contains(s))
                    .collect();
                slots.sort_unstable();
                slots
            }
        }
    }
}

/// Per-record columns of [`HybridIndex::columns`], aligned by position.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns {
    pub ids: Vec<u64>,
    pub timestamps: Vec<i64>,
    pub importance: Vec<f32>,
    pub accesses: Vec<u32>,
    pub mentions: Vec<u32>,
    pub last_access: Vec<i64>,
    /// Text plus payload bytes.
    pub text_bytes: Vec<u64>,
}

#[derive(Clone, Copy)]
enum Scan {
    /// Every match scored exactly.
    Exact,
    /// Every match's sketch estimated, this many of them scored exactly.
    Sketch(usize),
}

/// Candidates a sketch scan scores exactly: 4·ef, and at least 4× the leg's window. At a 10 %
/// window of 100k × 384 (seed-1 data, not the benchmark's): recall@10 0.985 on the synthetic
/// mixture (0.991 at 6·ef, 0.994 at 8·ef; the graph walk 0.990) and 0.9995 on MiniLM
/// embeddings (the walk 0.961), each further multiple costing ~8 % of the search.
fn sketch_rescore(ef: usize, window: usize) -> usize {
    4 * ef.max(window)
}

/// How one search runs its legs under its filter.
struct LegPlan {
    estimate: usize,
    /// Records the search ranges over: the namespace's with one graph per namespace, else all.
    population: usize,
    /// Whether the vector leg scans the matches instead of walking the graph.
    scan: Option<Scan>,
    two_hop: bool,
    /// The namespace whose graph the search walks (one graph per namespace only).
    partition: Option<u32>,
    /// Whether nodes must be checked against the filter during the walk.
    restricts: bool,
    /// The filter's bitmap, when the planner built it to count exactly.
    bits: Option<SlotBits>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Seeded coordinates uniform in [-0.5, 0.5) (xorshift), `n` vectors of `dim`.
    pub(crate) fn vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed | 1;
        (0..n * dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    fn add(idx: &mut HybridIndex, ids: std::ops::Range<u64>, vecs: &[f32]) -> Result<()> {
        let n = ids.end - ids.start;
        let ids: Vec<u64> = ids.collect();
        let texts = vec!["t".to_owned(); n as usize];
        let ns = vec!["a".to_owned(); n as usize];
        let ts = vec![0i64; n as usize];
        idx.add(
            &Batch {
                ids: &ids,
                texts: &texts,
                vectors: Some(vecs),
                timestamps: &ts,
                namespaces: &ns,
                sessions: None,
                payloads: None,
                importance: None,
            },
            false,
        )
    }

    #[test]
    fn freed_slots_are_reused_safely() {
        let dim = 8;
        let mut idx = HybridIndex::new(IndexConfig {
            dim,
            threads: 1,
            ..Default::default()
        })
        .unwrap();
        let v = vectors(1500, dim, 3);
        add(&mut idx, 0..1000, &v[..1000 * dim]).unwrap();
        let odd: Vec<u64> = (0..1000).step_by(2).collect();
        idx.delete(&odd, false).unwrap();
        add(&mut idx, 1000..1500, &v[1000 * dim..]).unwrap();
        assert_eq!(idx.len(), 1000);
        let p = SearchParams {
            k: 1,
            mode: Mode::Vector,
            ..Default::default()
        };
        for id in [1001u64, 1200, 1499] {
            let q = &v[id as usize * dim..(id as usize + 1) * dim];
            assert_eq!(idx.search(None, Some(q), &p).unwrap().hits[0].id, id);
        }
    }

    #[test]
    fn parallel_legs_answer_as_sequential_ones() {
        // Every record holds the query's word, so its BM25 leg is long enough to get a thread.
        let dim = 8;
        let n = PARALLEL_LEGS_POSTINGS as u64 + 500;
        let v = vectors(n as usize, dim, 5);
        let build = |threads| {
            let mut idx = HybridIndex::new(IndexConfig {
                dim,
                threads,
                ..Default::default()
            })
            .unwrap();
            // Batches under 256 records link on one thread, so both graphs come out the same.
            for a in (0..n).step_by(255) {
                let b = (a + 255).min(n);
                add(&mut idx, a..b, &v[a as usize * dim..b as usize * dim]).unwrap();
            }
            idx
        };
        let (one, two) = (build(1), build(2));
        assert!(
            two.bm25
                .postings_to_read(&two.bm25.query(&["t".to_owned()]))
                >= PARALLEL_LEGS_POSTINGS
        );
        let p = SearchParams {
            k: 10,
            ..Default::default()
        };
        for q in 0..20 {
            let qv = &v[q * dim..(q + 1) * dim];
            let a = one.search(Some("t"), Some(qv), &p).unwrap().hits;
            let b = two.search(Some("t"), Some(qv), &p).unwrap().hits;
            assert_eq!(a, b, "query {q}");
        }
    }

    #[test]
    fn vector_ties_go_to_the_smaller_id() {
        let mut idx = HybridIndex::new(IndexConfig {
            dim: 2,
            ..Default::default()
        })
        .unwrap();
        for id in [50u64, 7, 30] {
            add(&mut idx, id..id + 1, &[1.0, 0.0]).unwrap();
        }
        let p = SearchParams {
            k: 3,
            mode: Mode::Vector,
            ..Default::default()
        };
        let hits = idx.search(None, Some(&[1.0, 0.0]), &p).unwrap().hits;
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [7, 30, 50]);
    }

    #[test]
    fn a_payload_over_4_gib_is_refused_not_a_panic() {
        let mut idx = HybridIndex::new(IndexConfig::default()).unwrap();
        // Zeroed allocations are mapped lazily: this costs address space, not memory.
        let payloads = vec![vec![0u8; MAX_FIELD_BYTES + 1]];
        let b = Batch {
            ids: &[1],
            texts: &["x".to_owned()],
            vectors: None,
            timestamps: &[0],
            namespaces: &["a".to_owned()],
            sessions: None,
            payloads: Some(&payloads),
            importance: None,
        };
        assert!(matches!(
            idx.add(&b, false),
            Err(EngineError::InvalidArgument(m)) if m.contains("payload at row 0")
        ));
        assert!(idx.is_empty());
    }

    #[test]
    fn sizes_at_their_extremes_answer() {
        let dim = 8;
        let mut idx = HybridIndex::new(IndexConfig {
            dim,
            exact_threshold: usize::MAX,
            max_text_bytes: usize::MAX,
            ..Default::default()
        })
        .unwrap();
        add(&mut idx, 0..300, &vectors(300, dim, 9)).unwrap();
        let q = vectors(1, dim, 10);
        for (lo, hi) in [(i64::MIN, i64::MAX), (0, 1), (i64::MAX - 1, i64::MAX)] {
            let p = SearchParams {
                k: usize::MAX,
                ef: usize::MAX,
                window: Some(usize::MAX),
                filter: Filter {
                    time_range: Some((lo, hi)),
                    namespace: Some("a".into()),
                    session: None,
                    ids: None,
                },
                fusion: FusionParams {
                    now: i64::MIN,
                    half_life: Some(f64::MIN_POSITIVE),
                    ..Default::default()
                },
                ..Default::default()
            };
            let hits = idx.search(Some("t"), Some(&q), &p).unwrap().hits;
            assert!(hits.len() <= 300);
        }
    }

    #[test]
    fn duplicate_in_batch_changes_nothing() {
        let mut idx = HybridIndex::new(IndexConfig {
            dim: 2,
            ..Default::default()
        })
        .unwrap();
        let ids = [1u64, 2, 1];
        let texts = vec!["x".to_owned(); 3];
        let ns = vec!["a".to_owned(); 3];
        let b = Batch {
            ids: &ids,
            texts: &texts,
            vectors: None,
            timestamps: &[0, 0, 0],
            namespaces: &ns,
            sessions: None,
            payloads: None,
            importance: None,
        };
        assert_eq!(
            idx.add(&b, false),
            Err(EngineError::DuplicateInBatch { id: 1, row: 2 })
        );
        assert!(idx.is_empty());
    }

    /// Dedups `texts` one at a time into a fresh index: which earlier id each duplicated.
    fn dedup_each(texts: &[&str]) -> Vec<Option<u64>> {
        let mut idx = HybridIndex::new(IndexConfig {
            dim: 2,
            ..Default::default()
        })
        .unwrap();
        let ns = ["a".to_owned()];
        texts
            .iter()
            .zip(1u64..)
            .map(|(t, id)| {
                let text = [(*t).to_owned()];
                let b = Batch {
                    ids: &[id],
                    texts: &text,
                    vectors: None,
                    timestamps: &[0],
                    namespaces: &ns,
                    sessions: None,
                    payloads: None,
                    importance: None,
                };
                let prepared = idx.prepare(&b, false).unwrap();
                idx.apply_dedup(prepared, Some(&DedupParams::default()))
                    .unwrap()[0]
            })
            .collect()
    }

    #[test]
    fn a_sketch_collision_never_merges_different_texts() {
        // "9" and "12" share a bit of the 256-bit sketch, which therefore reads Jaccard 1.0.
        let tok = Tokenizer::new(TokenizerOptions::default());
        let print = |t: &str| fingerprint(&tok.tokenize(t));
        let (a, b) = (
            print("allocated space episode 9"),
            print("allocated space episode 12"),
        );
        assert_eq!(a.jaccard(&b), 1.0);
        assert_eq!(
            dedup_each(&["allocated space episode 9", "allocated space episode 12"]),
            [None, None]
        );
        // The exact check keeps what the sketch is for: a re-worded copy is still merged.
        assert_eq!(
            dedup_each(&[
                "Deployed the billing service to staging after lunch today",
                "deployed the billing service to staging, after lunch today!",
            ]),
            [None, Some(1)]
        );
    }
}
