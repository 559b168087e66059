//! Python → Rust argument conversion with typed errors for wrong dtypes and shapes.
//! Arrays of the right dtype are borrowed without copying.

use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PySequence, PyString};

use super::errors::{DTypeError, DimensionError, InvalidArgumentError};

fn describe(obj: &Bound<'_, PyAny>) -> String {
    match obj.cast::<PyUntypedArray>() {
        Ok(a) => format!("an array of dtype {} and shape {:?}", a.dtype(), a.shape()),
        Err(_) => format!(
            "a {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ),
    }
}

/// A 2-D float32 array of `dim` columns, borrowed.
pub fn vectors_2d<'py>(
    obj: &Bound<'py, PyAny>,
    dim: usize,
) -> PyResult<PyReadonlyArray2<'py, f32>> {
    let py = obj.py();
    if let Ok(a) = obj.extract::<PyReadonlyArray2<'py, f32>>() {
        let cols = a.shape()[1];
        if cols != dim {
            return Err(DimensionError::new_err(format!(
                "vector dimension mismatch: the index expects {dim} values per vector, got {cols}"
            )));
        }
        return Ok(a);
    }
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        if a.ndim() == 1 && a.dtype().is_equiv_to(&numpy::dtype::<f32>(py)) {
            return Err(DTypeError::new_err(format!(
                "vectors must be a 2-D array (n, {dim}); got shape {:?} — use v.reshape(1, -1) for one vector",
                a.shape()
            )));
        }
    }
    Err(DTypeError::new_err(format!(
        "vectors must be a 2-D numpy float32 array of shape (n, {dim}); got {} — use np.asarray(v, dtype=np.float32)",
        describe(obj)
    )))
}

/// A 1-D float32 query vector, copied (it is small).
pub fn vector_1d(obj: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray2<'_, f32>>() {
        if a.shape()[0] == 1 {
            return Ok(a.as_array().iter().copied().collect());
        }
    }
    Err(DTypeError::new_err(format!(
        "a query vector must be a 1-D numpy float32 array; got {} — use np.asarray(v, dtype=np.float32)",
        describe(obj)
    )))
}

/// uint64 ids: a numpy uint64 array (borrowed) or a sequence of non-negative ints.
pub fn ids(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, u64>>() {
        return Ok(a.as_array().to_vec());
    }
    if obj.cast::<PyArrayDyn<u64>>().is_err() && obj.cast::<PyUntypedArray>().is_ok() {
        let a = obj.cast::<PyUntypedArray>()?;
        let int_kind = a.dtype().kind() == b'i' || a.dtype().kind() == b'u';
        if !(int_kind && a.ndim() == 1) {
            return Err(DTypeError::new_err(format!(
                "ids must be a 1-D numpy uint64 array or a list of ints; got {}",
                describe(obj)
            )));
        }
    }
    if obj.is_instance_of::<PyString>() {
        return Err(DTypeError::new_err("ids must be integers, not a string"));
    }
    obj.extract::<Vec<u64>>().map_err(|_| {
        DTypeError::new_err(format!(
            "ids must be non-negative integers below 2**64 (a numpy uint64 array or a list of ints); got {}",
            describe(obj)
        ))
    })
}

/// int64 timestamps (microseconds since the epoch): a numpy int64 array or a list of ints.
pub fn timestamps(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, i64>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        if a.dtype().kind() != b'i' && a.dtype().kind() != b'u' || a.ndim() != 1 {
            return Err(DTypeError::new_err(format!(
                "timestamps must be a 1-D numpy int64 array of microseconds since the epoch; got {}",
                describe(obj)
            )));
        }
    }
    obj.extract::<Vec<i64>>().map_err(|_| {
        DTypeError::new_err(format!(
            "timestamps must be int64 microseconds since the epoch; got {}",
            describe(obj)
        ))
    })
}

/// float32 values (importance): a numpy array or a list of numbers.
pub fn floats(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<f32>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f64>>() {
        return Ok(a.as_array().iter().map(|&x| x as f32).collect());
    }
    obj.extract::<Vec<f32>>().map_err(|_| {
        InvalidArgumentError::new_err(format!(
            "{what} must be a sequence of numbers; got {}",
            describe(obj)
        ))
    })
}

/// A list of strings (texts, namespaces); a bare string is refused, it is almost always a bug.
pub fn strings(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() {
        return Err(InvalidArgumentError::new_err(format!(
            "{what} must be a list of strings, not a single string"
        )));
    }
    obj.extract::<Vec<String>>()
        .map_err(|_| InvalidArgumentError::new_err(bad_strings(obj, what)))
}

/// Why `obj` is not a list of strings, naming the first item that is not one.
fn bad_strings(obj: &Bound<'_, PyAny>, what: &str) -> String {
    let items = obj
        .cast::<PySequence>()
        .ok()
        .and_then(|s| s.try_iter().ok());
    for (i, item) in items.into_iter().flatten().enumerate() {
        let Ok(item) = item else { break };
        match item.cast::<PyString>() {
            Err(_) => return format!("{what}[{i}] must be a string; got {}", describe(&item)),
            Ok(s) if s.to_str().is_err() => {
                return format!(
                    "{what}[{i}] holds a lone surrogate (a code point from U+D800 to U+DFFF), \
                     which is not text and has no UTF-8 form"
                )
            }
            Ok(_) => {}
        }
    }
    format!("{what} must be a list of strings; got {}", describe(obj))
}
