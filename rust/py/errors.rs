//! The one place where engine errors become Python exceptions.
//!
//! The hierarchy is built at import time so that classes can have two bases (a dimension
//! mistake is both a `TrimemError` and a `ValueError`, as callers expect).

use pyo3::exceptions::{PyException, PyLookupError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use trimem_engine::EngineError;

/// Exception classes in creation order: (name, parent in this table or None, extra builtin
/// base, docstring).
const CLASSES: [(&str, Option<usize>, Builtin, &str); 15] = [
    ("TrimemError", None, Builtin::Exception, "Root of every error trimem raises."),
    ("InvalidArgumentError", Some(0), Builtin::Value, "An argument is outside its domain; nothing was changed."),
    ("DimensionError", Some(1), Builtin::Value, "A vector's length differs from the index dimension."),
    ("DTypeError", Some(1), Builtin::Value, "An array has the wrong dtype or shape (vectors are float32, ids uint64, timestamps int64)."),
    ("InvalidVectorError", Some(1), Builtin::Value, "A vector holds NaN or infinity, or is all zeros under the cosine metric."),
    ("InvalidTimeRangeError", Some(1), Builtin::Value, "A time range whose start is after its end."),
    ("InvalidNameError", Some(1), Builtin::Value, "A namespace or session name that is empty, too long or has control characters."),
    ("TextTooLongError", Some(1), Builtin::Value, "A text over the index's byte limit."),
    ("DuplicateIdError", Some(1), Builtin::Value, "An id that already exists was added without upsert=True."),
    ("UnknownIdError", Some(0), Builtin::Lookup, "An id that is not in the index."),
    ("StoreError", Some(0), Builtin::Exception, "A problem with the folder store."),
    ("StoreIOError", Some(10), Builtin::OS, "A file operation of the store failed (full disk, failing fsync, ...); the write did not happen."),
    ("StoreCorruptedError", Some(10), Builtin::Exception, "Committed store data failed its checksum: damage, not a torn tail. Restore from a backup."),
    ("StoreLockedError", Some(10), Builtin::Exception, "Another process has the store open for writing; one writer at a time."),
    ("StoreVersionError", Some(10), Builtin::Exception, "A store file written by a newer trimem."),
];

#[derive(Clone, Copy)]
enum Builtin {
    Exception,
    Value,
    Lookup,
    OS,
}

pub const INVALID_ARGUMENT: usize = 1;
pub const DIMENSION: usize = 2;
pub const DTYPE: usize = 3;
const INVALID_VECTOR: usize = 4;
const INVALID_TIME_RANGE: usize = 5;
const INVALID_NAME: usize = 6;
const TEXT_TOO_LONG: usize = 7;
const DUPLICATE_ID: usize = 8;
const UNKNOWN_ID: usize = 9;
const STORE_IO: usize = 11;
const STORE_CORRUPTED: usize = 12;
const STORE_LOCKED: usize = 13;
const STORE_VERSION: usize = 14;

static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn types(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    TYPES.get_or_try_init(py, || {
        let type_fn = py.import("builtins")?.getattr("type")?;
        let mut made: Vec<Py<PyType>> = Vec::with_capacity(CLASSES.len());
        for (name, parent, builtin, doc) in CLASSES {
            let builtin = match builtin {
                Builtin::Exception => py.get_type::<PyException>(),
                Builtin::Value => py.get_type::<PyValueError>(),
                Builtin::Lookup => py.get_type::<PyLookupError>(),
                Builtin::OS => py.get_type::<PyOSError>(),
            };
            let bases = match parent {
                Some(p) if made[p].bind(py).is_subclass(&builtin)? => {
                    PyTuple::new(py, [made[p].bind(py).clone()])?
                }
                Some(p) => PyTuple::new(py, [made[p].bind(py).clone(), builtin])?,
                None => PyTuple::new(py, [builtin])?,
            };
            let ns = PyDict::new(py);
            ns.set_item("__doc__", doc)?;
            ns.set_item("__module__", "trimem.errors")?;
            let cls = type_fn.call1((name, bases, ns))?.cast_into::<PyType>()?;
            made.push(cls.unbind());
        }
        Ok(made)
    })
}

/// Raises the exception at `index` of the table with `msg`.
pub fn error(py: Python<'_>, index: usize, msg: impl Into<String>) -> PyErr {
    match types(py) {
        Ok(t) => PyErr::from_type(t[index].bind(py).clone(), msg.into()),
        Err(e) => e,
    }
}

pub fn to_py_err(e: EngineError) -> PyErr {
    use EngineError::*;
    let index = match &e {
        Dimension { .. } => DIMENSION,
        NonFinite { .. } | ZeroVector { .. } => INVALID_VECTOR,
        LengthMismatch { .. } | InvalidArgument(_) => INVALID_ARGUMENT,
        DuplicateId(_) | DuplicateInBatch { .. } => DUPLICATE_ID,
        UnknownId(_) => UNKNOWN_ID,
        InvalidTimeRange { .. } => INVALID_TIME_RANGE,
        InvalidName { .. } => INVALID_NAME,
        TextTooLong { .. } => TEXT_TOO_LONG,
        Io(_) => STORE_IO,
        Corrupted(_) => STORE_CORRUPTED,
        Locked(_) => STORE_LOCKED,
        FormatVersion { .. } => STORE_VERSION,
    };
    Python::attach(|py| error(py, index, e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for ((name, ..), cls) in CLASSES.iter().zip(types(py)?) {
        m.add(*name, cls.bind(py))?;
    }
    Ok(())
}
