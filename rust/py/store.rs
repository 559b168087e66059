//! `Store`: the engine's durable folder store for Python. The Python layer encodes its
//! operations; the engine logs them (CRC32C, fsync), snapshots whole indexes and recovers.

use std::path::PathBuf;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
#[cfg(feature = "fault-injection")]
use trimem_engine::store::fs::FaultKind;
use trimem_engine::store::{Durability, Store as Engine};
use trimem_engine::EngineError;

use super::args::arg;
use super::errors::to_py_err;
use super::index::HybridIndex;
use super::locks;

/// A store folder: write-ahead log + snapshots, one writer process at a time.
///
/// >>> import tempfile, trimem
/// >>> d = tempfile.mkdtemp()
/// >>> s = trimem._core.Store(d)
/// >>> s.append(b"an operation"); s.close()
/// >>> trimem._core.Store(d).take_log()
/// [b'an operation']
#[pyclass(frozen, module = "trimem._core")]
pub struct Store {
    inner: Mutex<Option<Engine>>,
    /// What the snapshot and log held at open, until the caller takes it.
    loaded: Mutex<Loaded>,
    path: PathBuf,
}

#[derive(Default)]
struct Loaded {
    state: Option<Vec<u8>>,
    indexes: Vec<(String, trimem_engine::HybridIndex)>,
    log: Vec<Vec<u8>>,
}

fn closed() -> PyErr {
    to_py_err(EngineError::Closed)
}

impl Store {
    /// Runs `f` on the open store (see `locks`: a checkpoint holds the store for seconds and
    /// nobody may wait for it while holding the GIL).
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Engine) -> Result<T, EngineError> + Send,
    ) -> PyResult<T> {
        let out = locks::locked(py, &self.inner, |g| match g.as_mut() {
            Some(store) => f(store).map_err(Some),
            None => Err(None),
        });
        out.map_err(|e| e.map_or_else(closed, to_py_err))
    }
}

#[pymethods]
impl Store {
    #[new]
    #[pyo3(signature = (path, *, durability = "fsync"))]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = arg::path)] path: PathBuf,
        #[pyo3(from_py_with = arg::durability)] durability: &str,
    ) -> PyResult<Self> {
        let durability = Durability::parse(durability).map_err(to_py_err)?;
        let opened = py
            .detach(|| Engine::open(&path, durability))
            .map_err(to_py_err)?;
        let loaded = Loaded {
            state: opened.state,
            indexes: opened.indexes,
            log: opened.log,
        };
        Ok(Store {
            inner: Mutex::new(Some(opened.store)),
            loaded: Mutex::new(loaded),
            path,
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn durability(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.with(py, |s| Ok(s.durability().name()))
    }

    /// The snapshot generation the log continues.
    #[getter]
    fn generation(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |s| Ok(s.generation()))
    }

    /// Bytes in the current log: what a reopen would replay.
    #[getter]
    fn log_bytes(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |s| Ok(s.log_bytes()))
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        locks::locked(py, &self.inner, |g| g.is_none())
    }

    /// What opening found: generation, snapshot, log records, torn bytes cut, files removed.
    fn recovery<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, |s| Ok(s.recovery().clone()))?;
        let d = PyDict::new(py);
        d.set_item("generation", r.generation)?;
        d.set_item("snapshot", r.snapshot)?;
        d.set_item("log_records", r.log_records)?;
        d.set_item("torn_bytes", r.torn_bytes)?;
        d.set_item("removed_files", r.removed_files)?;
        d.set_item("seconds", r.seconds)?;
        Ok(d)
    }

    /// The caller's state blob from the snapshot (once; `None` without a snapshot).
    fn take_state<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.loaded
            .lock()
            .state
            .take()
            .map(|b| PyBytes::new(py, &b))
    }

    /// The index saved under `name` in the snapshot (once; `None` if there is none).
    fn take_index(&self, #[pyo3(from_py_with = arg::name)] name: &str) -> Option<HybridIndex> {
        let mut loaded = self.loaded.lock();
        let at = loaded.indexes.iter().position(|(n, _)| n == name)?;
        Some(HybridIndex::from_engine(loaded.indexes.swap_remove(at).1))
    }

    /// Log records written after the snapshot, oldest first (once).
    fn take_log<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        let log = std::mem::take(&mut self.loaded.lock().log);
        log.iter().map(|b| PyBytes::new(py, b)).collect()
    }

    /// Appends one operation; with fsync durability it is on disk when this returns.
    fn append(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::payload)] payload: &[u8],
    ) -> PyResult<()> {
        self.with(py, |s| s.append(&[payload]))
    }

    /// Appends operations in one write and (with fsync durability) one fsync.
    fn append_many(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::payloads)] payloads: Vec<Vec<u8>>,
    ) -> PyResult<()> {
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        self.with(py, |s| s.append(&refs))
    }

    /// Writes a snapshot of `indexes` (name → HybridIndex) and `state`, then starts a new log
    /// and removes the previous generation's files. Searches continue meanwhile; the caller
    /// keeps its own writers out.
    fn checkpoint(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::indexes)] indexes: Vec<(String, PyRef<'_, HybridIndex>)>,
        #[pyo3(from_py_with = arg::state)] state: &[u8],
    ) -> PyResult<()> {
        let shared: Vec<_> = indexes
            .iter()
            .map(|(n, i)| (n.clone(), i.shared()))
            .collect();
        py.detach(|| {
            let mut store = self.inner.lock();
            let store = store.as_mut().ok_or_else(closed)?;
            // Recursive: one index may be listed twice (the engine refuses that), and a plain
            // second read would wait behind a writer queued after the first.
            let guards: Vec<_> = shared
                .iter()
                .map(|(n, i)| (n.as_str(), i.read_recursive()))
                .collect();
            let parts: Vec<(&str, &trimem_engine::HybridIndex)> =
                guards.iter().map(|(n, g)| (*n, &**g)).collect();
            store.checkpoint(&parts, state).map_err(to_py_err)
        })
    }

    /// Writes operations and starts their fsync in the background; returns a ticket for
    /// `settle_deferred`, which waits for the disk (and, if the fsync failed, takes them back
    /// out of the log and raises). Lets a writer index while the disk syncs.
    fn append_deferred(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::payloads)] payloads: Vec<Vec<u8>>,
    ) -> PyResult<u64> {
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        self.with(py, |s| s.append_deferred(&refs))
    }

    fn settle_deferred(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::ticket)] ticket: u64,
    ) -> PyResult<()> {
        self.with(py, |s| s.settle_deferred(ticket))
    }

    /// Forces buffered appends to disk.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.sync())
    }

    /// Flushes, releases the writer lock and closes (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = locks::locked(py, &self.inner, Option::take);
        match store {
            Some(s) => py.detach(|| s.close()).map_err(to_py_err),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the store on leaving a `with` block (errors from the block propagate).
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// Testing hook, compiled only with the `fault-injection` feature (never in a release
    /// wheel): make the store's next writes fail like a full disk (`"disk_full"`), a short
    /// write (`"short_write"`) or a failing fsync (`"sync_fails"`), after `after_bytes` more
    /// bytes, `times` times in a row.
    #[cfg(feature = "fault-injection")]
    #[pyo3(signature = (kind, *, after_bytes = 0, times = 1))]
    fn inject_fault(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arg::kind)] kind: &str,
        #[pyo3(from_py_with = arg::after_bytes)] after_bytes: u64,
        #[pyo3(from_py_with = arg::times)] times: u32,
    ) -> PyResult<()> {
        let kind = FaultKind::parse(kind).map_err(to_py_err)?;
        self.with(py, |s| {
            s.faults().arm(kind, after_bytes, times);
            Ok(())
        })
    }

    #[cfg(feature = "fault-injection")]
    fn clear_faults(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| {
            s.faults().clear();
            Ok(())
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Store({:?}, closed={})",
            self.path.display().to_string(),
            self.closed(py)
        )
    }
}
