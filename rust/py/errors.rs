//! The one place where engine errors become Python exceptions.
//!
//! The classes are defined statically in `trimem/errors.py` (where a class can have two bases:
//! a dimension mistake is both a `TrimemError` and a `ValueError`) and imported here by name;
//! `to_py_err` maps each engine error to exactly one of them.

use pyo3::prelude::*;
use trimem_engine::EngineError;

pyo3::import_exception!(trimem.errors, InvalidArgumentError);
pyo3::import_exception!(trimem.errors, ArgumentTypeError);
pyo3::import_exception!(trimem.errors, DimensionError);
pyo3::import_exception!(trimem.errors, DTypeError);
pyo3::import_exception!(trimem.errors, InvalidVectorError);
pyo3::import_exception!(trimem.errors, InvalidTimeRangeError);
pyo3::import_exception!(trimem.errors, InvalidNameError);
pyo3::import_exception!(trimem.errors, TextTooLongError);
pyo3::import_exception!(trimem.errors, DuplicateIdError);
pyo3::import_exception!(trimem.errors, UnknownIdError);
pyo3::import_exception!(trimem.errors, StoreIOError);
pyo3::import_exception!(trimem.errors, StoreCorruptedError);
pyo3::import_exception!(trimem.errors, StoreLockedError);
pyo3::import_exception!(trimem.errors, StoreVersionError);
pyo3::import_exception!(trimem.errors, StoreClosedError);

pub fn to_py_err(e: EngineError) -> PyErr {
    use EngineError::*;
    let msg = e.to_string();
    match e {
        Dimension { .. } => DimensionError::new_err(msg),
        NonFinite { .. } | ZeroVector { .. } => InvalidVectorError::new_err(msg),
        LengthMismatch { .. } | InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        DuplicateId(_) | DuplicateInBatch { .. } => DuplicateIdError::new_err(msg),
        UnknownId(_) => UnknownIdError::new_err(msg),
        InvalidTimeRange { .. } => InvalidTimeRangeError::new_err(msg),
        InvalidName { .. } => InvalidNameError::new_err(msg),
        TextTooLong { .. } => TextTooLongError::new_err(msg),
        // OSError(errno, strerror) sets `.errno` and `.strerror`, as the os module's own errors do.
        // A failure without an OS error behind it still gets a number a handler can test.
        Io { errno, .. } => {
            StoreIOError::new_err((errno.unwrap_or(trimem_engine::error::EIO), msg))
        }
        Closed => StoreClosedError::new_err(msg),
        Corrupted(_) => StoreCorruptedError::new_err(msg),
        Locked { .. } => StoreLockedError::new_err(msg),
        FormatVersion { .. } => StoreVersionError::new_err(msg),
    }
}
