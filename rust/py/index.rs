//! `HybridIndex`, `Hits` and `StoredRecord` for Python. State sits behind `Arc<RwLock<…>>`;
//! every long call releases the GIL, so searches from many threads run while one thread writes.

use std::sync::Arc;

use numpy::{PyArray1, PyUntypedArrayMethods, ToPyArray};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict};
use trimem_engine::{
    Batch, DedupParams, Filter, FusionParams, HybridIndex as Engine, IndexConfig, Metric, Mode,
    SearchParams, Tokenizer, TokenizerOptions,
};

use super::args::arg;
use super::errors::{to_py_err, InvalidArgumentError};
use super::{convert, locks};

/// A hybrid BM25 + HNSW index with time, namespace and session filters.
///
/// >>> import numpy as np, trimem
/// >>> idx = trimem.HybridIndex(dim=4)
/// >>> idx.add(ids=[1, 2], texts=["node on 8080", "nginx on 443"],
/// ...         vectors=np.eye(4, dtype=np.float32)[:2], timestamps=[0, 1], namespaces=["u1", "u1"])
/// >>> idx.search(text="8080", namespace="u1", k=1).ids.tolist()
/// [1]
#[pyclass(frozen, module = "trimem._core")]
pub struct HybridIndex {
    inner: Arc<RwLock<Engine>>,
    config: IndexConfig,
    tokenizer: Tokenizer,
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl HybridIndex {
    /// Wraps an engine index (one loaded from a snapshot).
    pub(super) fn from_engine(engine: Engine) -> Self {
        let config = engine.config().clone();
        HybridIndex {
            tokenizer: Tokenizer::new(config.tokenizer),
            inner: Arc::new(RwLock::new(engine)),
            config,
        }
    }

    pub(super) fn shared(&self) -> Arc<RwLock<Engine>> {
        self.inner.clone()
    }

    /// Runs `f` under the read lock (see `locks`: never waits holding the GIL).
    fn read<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&Engine) -> R + Send) -> R {
        locks::read(py, &self.inner, f)
    }
}

#[pymethods]
impl HybridIndex {
    #[new]
    #[pyo3(signature = (dim, *, metric = "cosine", m = 16, ef_construction = 200, stem = false,
                        stopwords = false, k1 = 1.2, b = 0.75, seed = 42, max_text_bytes = 1_048_576,
                        threads = 0, exact_threshold = 1000, partition_by_namespace = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        #[pyo3(from_py_with = arg::dim)] dim: usize,
        #[pyo3(from_py_with = arg::metric)] metric: &str,
        #[pyo3(from_py_with = arg::m)] m: usize,
        #[pyo3(from_py_with = arg::ef_construction)] ef_construction: usize,
        #[pyo3(from_py_with = arg::stem)] stem: bool,
        #[pyo3(from_py_with = arg::stopwords)] stopwords: bool,
        #[pyo3(from_py_with = arg::k1)] k1: f32,
        #[pyo3(from_py_with = arg::b)] b: f32,
        #[pyo3(from_py_with = arg::seed)] seed: u64,
        #[pyo3(from_py_with = arg::max_text_bytes)] max_text_bytes: usize,
        #[pyo3(from_py_with = arg::threads)] threads: usize,
        #[pyo3(from_py_with = arg::exact_threshold)] exact_threshold: usize,
        #[pyo3(from_py_with = arg::partition_by_namespace)] partition_by_namespace: bool,
    ) -> PyResult<Self> {
        let config = IndexConfig {
            dim,
            metric: Metric::parse(metric).map_err(to_py_err)?,
            m,
            ef_construction,
            tokenizer: TokenizerOptions { stem, stopwords },
            bm25: trimem_engine::bm25::Bm25Params { k1, b },
            seed,
            max_text_bytes,
            threads,
            exact_threshold,
            partition_by_namespace,
        };
        let engine = Engine::new(config.clone()).map_err(to_py_err)?;
        Ok(HybridIndex {
            tokenizer: Tokenizer::new(config.tokenizer),
            inner: Arc::new(RwLock::new(engine)),
            config,
        })
    }

    #[getter]
    fn dim(&self) -> usize {
        self.config.dim
    }

    #[getter]
    fn metric(&self) -> &'static str {
        self.config.metric.name()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.read(py, |e| e.len())
    }

    /// Anything that is not an id (a negative int, a string) is simply not in the index, as
    /// `"a" in range(3)` is False.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> bool {
        match key.extract::<u64>() {
            Ok(id) => self.read(py, |e| e.contains(id)),
            Err(_) => false,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "HybridIndex(dim={}, metric={:?}, m={}, ef_construction={}, records={})",
            self.config.dim,
            self.config.metric.name(),
            self.config.m,
            self.config.ef_construction,
            self.read(py, |e| e.len())
        )
    }

    /// Adds records; all-or-nothing. An existing id raises `DuplicateIdError` unless `upsert`.
    /// With `dedup=(min_jaccard, min_cosine)` a near-duplicate of a record in its namespace
    /// (or earlier in the batch) is not inserted but reinforces that record; the call then
    /// returns, per row, the id it duplicated (None where the row was inserted). With
    /// `reinforce=False` a duplicate is only reported, not counted as a mention (a caller
    /// whose write may still fail counts it with `mention` once the write is durable).
    #[pyo3(signature = (ids, texts, timestamps, namespaces, vectors = None, *, sessions = None,
                        payloads = None, importance = None, upsert = false, dedup = None,
                        reinforce = true))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        timestamps: &Bound<'_, PyAny>,
        namespaces: &Bound<'_, PyAny>,
        vectors: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = arg::sessions)] sessions: Option<Vec<Option<String>>>,
        #[pyo3(from_py_with = arg::payloads)] payloads: Option<Vec<Vec<u8>>>,
        importance: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = arg::upsert)] upsert: bool,
        #[pyo3(from_py_with = arg::dedup)] dedup: Option<(f32, f32)>,
        #[pyo3(from_py_with = arg::reinforce)] reinforce: bool,
    ) -> PyResult<Option<Vec<Option<u64>>>> {
        let dedup = match dedup {
            Some((j, c)) if (0.0..=1.0).contains(&j) && (-1.0..=1.0).contains(&c) => {
                Some(DedupParams {
                    min_jaccard: j,
                    min_cosine: c,
                    reinforce,
                    ..DedupParams::default()
                })
            }
            Some((j, c)) => {
                return Err(InvalidArgumentError::new_err(format!(
                    "dedup must be (min_jaccard in [0, 1], min_cosine in [-1, 1]), got ({j}, {c})"
                )))
            }
            None => None,
        };
        let ids = convert::ids(ids)?;
        let texts = convert::strings(texts, "texts")?;
        let timestamps = convert::timestamps(timestamps)?;
        let namespaces = convert::strings(namespaces, "namespaces")?;
        let importance = importance
            .map(|i| convert::floats(i, "importance"))
            .transpose()?;
        let vectors = vectors
            .map(|v| convert::vectors_2d(v, self.config.dim))
            .transpose()?;
        let vec_slice: Option<std::borrow::Cow<[f32]>> = match &vectors {
            Some(v) => Some(match v.as_slice() {
                Ok(s) => std::borrow::Cow::Borrowed(s),
                Err(_) => std::borrow::Cow::Owned(v.as_array().iter().copied().collect()),
            }),
            None => None,
        };
        if let Some(v) = &vectors {
            if v.shape()[0] != ids.len() {
                return Err(InvalidArgumentError::new_err(format!(
                    "length mismatch: vectors has {} rows but ids has {}",
                    v.shape()[0],
                    ids.len()
                )));
            }
        }
        let batch = Batch {
            ids: &ids,
            texts: &texts,
            vectors: vec_slice.as_deref(),
            timestamps: &timestamps,
            namespaces: &namespaces,
            sessions: sessions.as_deref(),
            payloads: payloads.as_deref(),
            importance: importance.as_deref(),
        };
        let (config, tokenizer, inner) = (&self.config, &self.tokenizer, &self.inner);
        let duplicates = py
            .detach(|| {
                let prepared = trimem_engine::Prepared::new(config, tokenizer, &batch, upsert)?;
                inner.write().apply_dedup(prepared, dedup.as_ref())
            })
            .map_err(to_py_err)?;
        Ok(dedup.map(|_| duplicates))
    }

    /// Counts one use (a recall returned them) of each record: accesses + 1, last use `at`
    /// (µs). Unknown ids are skipped; returns how many were found.
    fn touch(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = arg::at)] at: i64,
    ) -> PyResult<usize> {
        let ids = convert::ids(ids)?;
        let inner = &self.inner;
        Ok(py.detach(|| inner.write().touch(&ids, at)))
    }

    /// Counts one mention (the record was seen again) of each record: mentions + 1, last use
    /// `at` (µs). Unknown ids are skipped; returns how many were found.
    fn mention(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = arg::at)] at: i64,
    ) -> PyResult<usize> {
        let ids = convert::ids(ids)?;
        let inner = &self.inner;
        Ok(py.detach(|| inner.write().mention(&ids, at)))
    }

    /// Columns of the matching records as numpy arrays (keys: ids, timestamps, importance,
    /// accesses, mentions, last_access, bytes), for bulk policies and statistics.
    #[pyo3(signature = (*, namespace = None, session = None, time_range = None))]
    fn columns<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arg::namespace)] namespace: Option<String>,
        #[pyo3(from_py_with = arg::session)] session: Option<String>,
        #[pyo3(from_py_with = arg::time_range)] time_range: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let filter = Filter {
            namespace,
            session,
            time_range,
            ids: None,
        };
        let c = self.read(py, |e| e.columns(&filter)).map_err(to_py_err)?;
        let d = PyDict::new(py);
        d.set_item("ids", PyArray1::from_vec(py, c.ids))?;
        d.set_item("timestamps", PyArray1::from_vec(py, c.timestamps))?;
        d.set_item("importance", PyArray1::from_vec(py, c.importance))?;
        d.set_item("accesses", PyArray1::from_vec(py, c.accesses))?;
        d.set_item("mentions", PyArray1::from_vec(py, c.mentions))?;
        d.set_item("last_access", PyArray1::from_vec(py, c.last_access))?;
        d.set_item("bytes", PyArray1::from_vec(py, c.text_bytes))?;
        Ok(d)
    }

    /// Deletes records by id and returns how many went. Unknown ids raise `UnknownIdError`
    /// (and nothing is deleted) unless `missing_ok`.
    #[pyo3(signature = (ids, *, missing_ok = false))]
    fn delete(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = arg::missing_ok)] missing_ok: bool,
    ) -> PyResult<usize> {
        let ids = convert::ids(ids)?;
        let inner = &self.inner;
        py.detach(|| inner.write().delete(&ids, missing_ok))
            .map_err(to_py_err)
    }

    /// Sets the importance of existing records (used by the importance term of `search`).
    fn set_importance(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let ids = convert::ids(ids)?;
        let values = convert::floats(values, "values")?;
        let inner = &self.inner;
        py.detach(|| inner.write().set_importance(&ids, &values))
            .map_err(to_py_err)
    }

    /// The stored record, or `None` (vectors come back normalised under the cosine metric).
    fn get(&self, py: Python<'_>, #[pyo3(from_py_with = arg::id)] id: u64) -> Option<StoredRecord> {
        self.read(py, |e| with_usage(e, id)).map(StoredRecord::from)
    }

    /// Records for many ids at once, `None` where an id is unknown.
    fn get_many(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Option<StoredRecord>>> {
        let ids = convert::ids(ids)?;
        let found: Vec<_> = self.read(py, |e| ids.iter().map(|&id| with_usage(e, id)).collect());
        Ok(found
            .into_iter()
            .map(|r| r.map(StoredRecord::from))
            .collect())
    }

    /// For each id, the ids written just before and after it in its session (`None` at a
    /// session's edge, for a record without a session or an unknown id), looking at most
    /// `steps` records of its namespace each way in time order.
    #[pyo3(signature = (ids, *, steps = 64))]
    fn session_neighbours(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        steps: usize,
    ) -> PyResult<Vec<(Option<u64>, Option<u64>)>> {
        let ids = convert::ids(ids)?;
        Ok(self.read(py, |e| e.session_neighbours(&ids, steps)))
    }

    /// Ids as a uint64 array: all of them, or those a namespace / session / time range matches.
    #[pyo3(signature = (*, namespace = None, session = None, time_range = None))]
    fn ids<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arg::namespace)] namespace: Option<String>,
        #[pyo3(from_py_with = arg::session)] session: Option<String>,
        #[pyo3(from_py_with = arg::time_range)] time_range: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let ids = if namespace.is_none() && session.is_none() && time_range.is_none() {
            self.read(py, |e| e.ids())
        } else {
            let filter = Filter {
                namespace,
                session,
                time_range,
                ids: None,
            };
            self.read(py, |e| e.matching_ids(&filter))
                .map_err(to_py_err)?
        };
        Ok(PyArray1::from_vec(py, ids))
    }

    /// Lucene BM25 score of record `id` for `text` (0 when no term matches).
    fn bm25_score(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::text)] text: &str,
        #[pyo3(from_py_with = arg::id)] id: u64,
    ) -> PyResult<f32> {
        self.read(py, |e| e.bm25_score(text, id)).map_err(to_py_err)
    }

    /// Number of live records containing `term` (a token as `tokenize` returns it).
    fn doc_freq(&self, py: Python<'_>, #[pyo3(from_py_with = arg::term)] term: &str) -> usize {
        self.read(py, |e| e.doc_freq(term))
    }

    /// `share` of the BM25 score a record of average length holding each known term of `text`
    /// once would get (the keyword floor of `Memory`'s searches); with `unseen`, terms no
    /// record holds count too (the floor of a match on the whole request).
    #[pyo3(signature = (text, share, *, unseen = false))]
    fn bm25_floor(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::text)] text: &str,
        #[pyo3(from_py_with = arg::share)] share: f32,
        unseen: bool,
    ) -> f32 {
        self.read(py, |e| e.bm25_floor(text, share, unseen))
    }

    /// Counts, tombstones and bytes used.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.read(py, |e| e.stats());
        let d = PyDict::new(py);
        d.set_item("records", s.records)?;
        d.set_item("vectors", s.vectors)?;
        d.set_item("tombstones", s.free_slots)?;
        d.set_item("namespaces", s.namespaces)?;
        d.set_item("vocabulary", s.vocabulary)?;
        d.set_item("avgdl", s.avgdl)?;
        d.set_item("text_bytes", s.text_bytes)?;
        d.set_item("payload_bytes", s.payload_bytes)?;
        d.set_item("vector_index_bytes", s.vector_index_bytes)?;
        d.set_item("bm25_bytes", s.bm25_bytes)?;
        d.set_item(
            "bytes",
            s.text_bytes + s.payload_bytes + s.vector_index_bytes + s.bm25_bytes,
        )?;
        d.set_item("dim", s.dim)?;
        d.set_item("metric", s.metric)?;
        d.set_item("simd", s.kernel)?;
        d.set_item("sketch_simd", s.sketch_kernel)?;
        Ok(d)
    }

    /// Hybrid search in one call with the GIL released. See the README for every parameter.
    #[pyo3(signature = (text = None, vector = None, *, k = 10, time_range = None, namespace = None,
                        session = None, ids = None, mode = "hybrid", ef = 64, rrf_k = 60.0, weights = None,
                        window = None, min_bm25 = None, min_cosine = None, half_life = None, now = None,
                        decay_weight = 0.0005, importance_weight = 0.0, reinforce_step = 0.1,
                        reinforce_cap = 0.5, decay_from_use = true))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::text)] text: Option<&str>,
        vector: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = arg::k)] k: usize,
        #[pyo3(from_py_with = arg::time_range)] time_range: Option<(i64, i64)>,
        #[pyo3(from_py_with = arg::namespace)] namespace: Option<String>,
        #[pyo3(from_py_with = arg::session)] session: Option<String>,
        ids: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = arg::mode)] mode: &str,
        #[pyo3(from_py_with = arg::ef)] ef: usize,
        #[pyo3(from_py_with = arg::rrf_k)] rrf_k: f32,
        #[pyo3(from_py_with = arg::weights)] weights: Option<(f32, f32)>,
        #[pyo3(from_py_with = arg::window)] window: Option<usize>,
        #[pyo3(from_py_with = arg::min_bm25)] min_bm25: Option<f32>,
        #[pyo3(from_py_with = arg::min_cosine)] min_cosine: Option<f32>,
        #[pyo3(from_py_with = arg::half_life)] half_life: Option<f64>,
        #[pyo3(from_py_with = arg::now)] now: Option<i64>,
        #[pyo3(from_py_with = arg::decay_weight)] decay_weight: f32,
        #[pyo3(from_py_with = arg::importance_weight)] importance_weight: f32,
        #[pyo3(from_py_with = arg::reinforce_step)] reinforce_step: f32,
        #[pyo3(from_py_with = arg::reinforce_cap)] reinforce_cap: f32,
        #[pyo3(from_py_with = arg::decay_from_use)] decay_from_use: bool,
    ) -> PyResult<Hits> {
        if !(reinforce_step.is_finite()
            && reinforce_cap.is_finite()
            && reinforce_step >= 0.0
            && reinforce_cap >= 0.0)
        {
            return Err(InvalidArgumentError::new_err(format!(
                "reinforce_step and reinforce_cap must be finite and >= 0, got {reinforce_step} and {reinforce_cap}"
            )));
        }
        let params = SearchParams {
            k,
            mode: Mode::parse(mode).map_err(to_py_err)?,
            ef,
            window,
            fusion: FusionParams {
                rrf_k,
                weights: weights.unwrap_or((1.0, 1.0)),
                half_life,
                now: now.unwrap_or_else(now_micros),
                decay_weight,
                importance_weight,
                reinforce_step,
                reinforce_cap,
                decay_from_use,
            },
            min_bm25,
            min_cosine,
            filter: Filter {
                time_range,
                namespace,
                session,
                ids: ids.map(convert::ids).transpose()?,
            },
        };
        let vector = vector.map(convert::vector_1d).transpose()?;
        let inner = &self.inner;
        let result = py
            .detach(|| inner.read().search(text, vector.as_deref(), &params))
            .map_err(to_py_err)?;
        Ok(Hits::new(result))
    }
}

/// Search results, best first, as parallel numpy arrays. Each column is built on first access
/// (a caller reading only `ids` pays for one array, not thirteen) and then kept.
#[pyclass(frozen, module = "trimem._core")]
pub struct Hits {
    hits: Vec<trimem_engine::Hit>,
    /// Which path the vector leg took: "graph", "sketch", "exact", "graph+exact" or "none".
    #[pyo3(get)]
    plan: &'static str,
    columns: [PyOnceLock<Py<PyAny>>; COLUMNS],
}

/// The columns of [`Hits`], in their slots of `Hits::columns`.
#[derive(Clone, Copy)]
enum Column {
    Ids,
    Scores,
    Bm25Scores,
    VectorScores,
    Bm25Ranks,
    VectorRanks,
    Decay,
    Importance,
    BaseImportance,
    Accesses,
    Mentions,
    LastAccess,
    Timestamps,
}

const COLUMNS: usize = Column::Timestamps as usize + 1;

impl Hits {
    fn new(r: trimem_engine::SearchResult) -> Self {
        Hits {
            hits: r.hits,
            plan: r.plan.name(),
            columns: std::array::from_fn(|_| PyOnceLock::new()),
        }
    }

    /// Column `c`, built from `f` over the hits the first time it is asked for.
    fn column<'py, T: numpy::Element>(
        &self,
        py: Python<'py>,
        c: Column,
        f: impl Fn(&trimem_engine::Hit) -> T,
    ) -> Bound<'py, PyAny> {
        self.columns[c as usize]
            .get_or_init(py, || {
                self.hits
                    .iter()
                    .map(f)
                    .collect::<Vec<T>>()
                    .to_pyarray(py)
                    .into_any()
                    .unbind()
            })
            .bind(py)
            .clone()
    }
}

#[pymethods]
impl Hits {
    fn __len__(&self) -> usize {
        self.hits.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Hits(ids={:?}, plan={:?})",
            self.hits.iter().map(|h| h.id).collect::<Vec<_>>(),
            self.plan
        )
    }

    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Ids, |x| x.id)
    }

    /// Final scores (fused relevance plus any decay and importance terms).
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Scores, |x| x.score)
    }

    /// Raw BM25 scores, NaN where the BM25 leg did not return the record.
    #[getter]
    fn bm25_scores<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Bm25Scores, |x| x.bm25.map_or(f32::NAN, |b| b.1))
    }

    /// Similarities (cosine, or inner product), NaN where the vector leg missed the record.
    #[getter]
    fn vector_scores<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::VectorScores, |x| {
            x.vector.map_or(f32::NAN, |v| v.1)
        })
    }

    /// 1-based ranks in the BM25 leg, 0 where absent.
    #[getter]
    fn bm25_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Bm25Ranks, |x| x.bm25.map_or(0u32, |b| b.0))
    }

    #[getter]
    fn vector_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::VectorRanks, |x| x.vector.map_or(0u32, |v| v.0))
    }

    /// Decay factors 0.5^(age / half_life) (1 when decay is off).
    #[getter]
    fn decay<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Decay, |x| x.decay)
    }

    /// Effective importance: base plus reinforcement from use, at most 1.
    #[getter]
    fn importance<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Importance, |x| x.importance)
    }

    #[getter]
    fn base_importance<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::BaseImportance, |x| x.base_importance)
    }

    /// Times each record was recalled (touched) and seen again (deduplicated into it).
    #[getter]
    fn accesses<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Accesses, |x| x.accesses)
    }

    #[getter]
    fn mentions<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Mentions, |x| x.mentions)
    }

    /// Last use, µs (0: never).
    #[getter]
    fn last_access<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::LastAccess, |x| x.last_access)
    }

    #[getter]
    fn timestamps<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.column(py, Column::Timestamps, |x| x.timestamp)
    }
}

/// One stored record.
#[pyclass(frozen, get_all, module = "trimem._core")]
pub struct StoredRecord {
    id: u64,
    namespace: String,
    session: Option<String>,
    timestamp: i64,
    text: String,
    payload: Py<PyBytes>,
    importance: f32,
    vector: Option<Py<PyArray1<f32>>>,
    accesses: u32,
    mentions: u32,
    last_access: i64,
}

fn with_usage(
    e: &trimem_engine::HybridIndex,
    id: u64,
) -> Option<(trimem_engine::Record, (u32, u32, i64))> {
    Some((e.get(id)?, e.usage(id)?))
}

impl From<(trimem_engine::Record, (u32, u32, i64))> for StoredRecord {
    fn from(
        (r, (accesses, mentions, last_access)): (trimem_engine::Record, (u32, u32, i64)),
    ) -> Self {
        Python::attach(|py| StoredRecord {
            id: r.id,
            namespace: r.namespace,
            session: r.session,
            timestamp: r.timestamp,
            text: r.text,
            payload: PyBytes::new(py, &r.payload).unbind(),
            importance: r.importance,
            vector: r.vector.map(|v| PyArray1::from_vec(py, v).unbind()),
            accesses,
            mentions,
            last_access,
        })
    }
}

#[pymethods]
impl StoredRecord {
    fn __repr__(&self) -> String {
        format!(
            "StoredRecord(id={}, namespace={:?}, timestamp={}, text={:?})",
            self.id, self.namespace, self.timestamp, self.text
        )
    }
}
