//! Scalar and container arguments, converted with trimem's errors.
//!
//! PyO3's own extraction raises a bare `TypeError` for a wrong type and an `OverflowError` for
//! an int outside the Rust type, and names the argument only in a note. Every binding takes its
//! arguments through [`FromArg`] instead, so a wrong type is an `ArgumentTypeError` and a value
//! out of range an `InvalidArgumentError`, each naming the argument in its message. Arrays and
//! id lists go through `convert`, which knows their dtypes.
//!
//! A binding marks each argument `#[pyo3(from_py_with = arg::NAME)]`. PyO3 hands an extractor
//! the object but not the argument's name, so [`arg`] has one extractor per argument name,
//! generic over the parameter's Rust type. Extraction is PyO3's own on the success path; only
//! a failure costs more.

use std::ffi::OsStr;
use std::fmt::{self, Display};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PySequence, PyString, PyTuple};

use super::errors::{ArgumentTypeError, InvalidArgumentError};
use super::index::HybridIndex;

/// A Rust value converted from one Python argument; `name` is what error messages call it.
pub trait FromArg<'a, 'py>: Sized {
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self>;
}

/// `name[i]`: an element of a list or pair argument, as messages call it.
struct Item<'n>(&'n dyn Display, usize);

impl Display for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string())
}

/// `obj` as a message shows it: its repr, cut short (a hostile argument may be a 1 MB string,
/// or an int too long for `repr` at all).
fn shown(obj: &Bound<'_, PyAny>) -> String {
    const MAX_CHARS: usize = 60;
    match obj.repr() {
        Ok(r) => {
            let r = r.to_string_lossy();
            if r.chars().count() > MAX_CHARS {
                format!("{}...", r.chars().take(MAX_CHARS - 3).collect::<String>())
            } else {
                r.into_owned()
            }
        }
        Err(_) => format!("a {}", type_name(obj)),
    }
}

fn wrong_type(obj: &Bound<'_, PyAny>, name: &dyn Display, expected: &str) -> PyErr {
    ArgumentTypeError::new_err(format!("{name} must be {expected}, got {}", type_name(obj)))
}

/// The trimem error for a failed PyO3 extraction of a number: a value out of the Rust type's
/// range (`OverflowError`) is an invalid argument, anything else that is not a number a type
/// error.
fn number_error(
    obj: &Bound<'_, PyAny>,
    name: &dyn Display,
    e: PyErr,
    expected: &str,
    range: &str,
) -> PyErr {
    let py = obj.py();
    if e.is_instance_of::<PyOverflowError>(py) {
        InvalidArgumentError::new_err(format!(
            "{name} must be {expected} {range}, got {}",
            shown(obj)
        ))
    } else if e.is_instance_of::<PyTypeError>(py) {
        wrong_type(obj, name, expected)
    } else {
        InvalidArgumentError::new_err(format!("{name}: {e}"))
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl<'a, 'py> FromArg<'a, 'py> for $t {
            #[inline]
            fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
                obj.extract::<$t>().map_err(|e| {
                    let range = format!("from {} to {}", <$t>::MIN, <$t>::MAX);
                    number_error(obj, name, e, "an integer", &range)
                })
            }
        }
    )*};
}

integers!(u32, u64, usize, i64);

impl<'a, 'py> FromArg<'a, 'py> for f64 {
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        obj.extract::<f64>()
            .map_err(|e| number_error(obj, name, e, "a number", "within float range"))
    }
}

impl<'a, 'py> FromArg<'a, 'py> for f32 {
    /// A finite number beyond float32 would silently become an infinity.
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        let v = f64::from_arg(obj, name)?;
        let x = v as f32;
        if v.is_finite() && !x.is_finite() {
            return Err(InvalidArgumentError::new_err(format!(
                "{name}={} is beyond the float32 range (about ±3.4e38)",
                shown(obj)
            )));
        }
        Ok(x)
    }
}

impl<'a, 'py> FromArg<'a, 'py> for bool {
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        obj.extract::<bool>()
            .map_err(|_| wrong_type(obj, name, "True or False"))
    }
}

impl<'a, 'py> FromArg<'a, 'py> for &'a str {
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        let s = obj
            .cast::<PyString>()
            .map_err(|_| wrong_type(obj, name, "a string"))?;
        s.to_str().map_err(|_| {
            InvalidArgumentError::new_err(format!(
                "{name} holds a lone surrogate (a code point from U+D800 to U+DFFF), which is not \
                 text and has no UTF-8 form"
            ))
        })
    }
}

impl<'a, 'py> FromArg<'a, 'py> for String {
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        <&str>::from_arg(obj, name).map(str::to_owned)
    }
}

impl<'a, 'py> FromArg<'a, 'py> for PathBuf {
    /// A str, bytes or `os.PathLike`, as `open` takes.
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        let py = obj.py();
        let fspath = py
            .import("os")?
            .getattr("fspath")?
            .call1((obj,))
            .map_err(|_| wrong_type(obj, name, "a str, bytes or os.PathLike"))?;
        let path = match fspath.cast::<PyBytes>() {
            Ok(b) => PathBuf::from(OsStr::from_bytes(b.as_bytes())),
            Err(_) => fspath.extract::<PathBuf>().map_err(|e| {
                InvalidArgumentError::new_err(format!("{name} is not a usable file name: {e}"))
            })?,
        };
        if path.as_os_str().as_bytes().contains(&0) {
            return Err(InvalidArgumentError::new_err(format!(
                "{name} holds a NUL character, which no file name can"
            )));
        }
        Ok(path)
    }
}

impl<'a, 'py> FromArg<'a, 'py> for &'a [u8] {
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        obj.cast::<PyBytes>()
            .map(|b| b.as_bytes())
            .map_err(|_| wrong_type(obj, name, "bytes"))
    }
}

impl<'a, 'py> FromArg<'a, 'py> for Vec<u8> {
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(b.as_bytes().to_vec());
        }
        obj.cast::<PyByteArray>()
            .map(|b| b.to_vec())
            .map_err(|_| wrong_type(obj, name, "bytes"))
    }
}

impl<'a, 'py, T: FromArg<'a, 'py>> FromArg<'a, 'py> for Option<T> {
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        if obj.is_none() {
            Ok(None)
        } else {
            T::from_arg(obj, name).map(Some)
        }
    }
}

impl<'a, 'py, T> FromArg<'a, 'py> for Vec<T>
where
    T: for<'b> FromArg<'b, 'py>,
{
    /// A list, tuple or other sequence; a str or bytes (a sequence too) is almost always a
    /// bug and refused. Items are read one by one rather than preallocated from `len()`, which
    /// a hostile sequence may report as anything.
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        let refuse = || wrong_type(obj, name, "a list");
        if obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyBytes>()
            || obj.is_instance_of::<PyByteArray>()
        {
            return Err(refuse());
        }
        let seq = obj.cast::<PySequence>().map_err(|_| refuse())?;
        let mut out = Vec::new();
        for (i, item) in seq.try_iter()?.enumerate() {
            out.push(T::from_arg(&item?, &Item(name, i))?);
        }
        Ok(out)
    }
}

impl<'a, 'py, A, B> FromArg<'a, 'py> for (A, B)
where
    A: for<'b> FromArg<'b, 'py>,
    B: for<'b> FromArg<'b, 'py>,
{
    /// A tuple or list of exactly two items.
    #[inline]
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        let (a, b) = if let Ok(t) = obj.cast::<PyTuple>() {
            if t.len() != 2 {
                return Err(wrong_type(obj, name, "a pair (a, b)"));
            }
            (t.get_item(0)?, t.get_item(1)?)
        } else if let Ok(l) = obj.cast::<PyList>() {
            if l.len() != 2 {
                return Err(wrong_type(obj, name, "a pair (a, b)"));
            }
            (l.get_item(0)?, l.get_item(1)?)
        } else {
            return Err(wrong_type(obj, name, "a pair (a, b)"));
        };
        Ok((
            A::from_arg(&a, &Item(name, 0))?,
            B::from_arg(&b, &Item(name, 1))?,
        ))
    }
}

impl<'a, 'py> FromArg<'a, 'py> for PyRef<'py, HybridIndex> {
    fn from_arg(obj: &'a Bound<'py, PyAny>, name: &dyn Display) -> PyResult<Self> {
        obj.cast::<HybridIndex>()
            .map(|i| i.borrow())
            .map_err(|_| wrong_type(obj, name, "a HybridIndex"))
    }
}

/// A count that must be at least 1. Past the machine's word it means "as many as there are":
/// the engine caps result sizes and beams at the record count anyway.
fn positive(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    let at_least_one = |got: String| {
        InvalidArgumentError::new_err(format!("{name} must be at least 1, got {got}"))
    };
    match obj.extract::<i64>() {
        Ok(v) if v >= 1 => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        Ok(v) => Err(at_least_one(v.to_string())),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            if obj.gt(0)? {
                Ok(usize::MAX)
            } else {
                Err(at_least_one(shown(obj)))
            }
        }
        Err(e) => Err(number_error(obj, &name, e, "an integer", "")),
    }
}

/// One extractor per argument name, for `#[pyo3(from_py_with = arg::NAME)]`.
pub mod arg {
    use super::*;

    macro_rules! named {
        ($($name:ident)*) => {$(
            #[inline]
            pub fn $name<'a, 'py, T: FromArg<'a, 'py>>(obj: &'a Bound<'py, PyAny>) -> PyResult<T> {
                T::from_arg(obj, &stringify!($name))
            }
        )*};
    }

    named! {
        after_bytes at b decay_from_use decay_weight dedup dim durability ef_construction
        exact_threshold half_life id importance_weight indexes k1 kind m max_text_bytes metric
        min_bm25 min_cosine missing_ok mode name namespace now partition_by_namespace path payload
        payloads reinforce reinforce_cap reinforce_step rrf_k seed session sessions share state stem
        stopwords term text threads ticket time_range times upsert weights
    }

    /// Result count of a search.
    pub fn k(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
        positive(obj, "k")
    }

    /// Beam width of the graph walk.
    pub fn ef(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
        positive(obj, "ef")
    }

    /// Candidates per leg before fusion (`None`: the default for the mode).
    pub fn window(obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        if obj.is_none() {
            Ok(None)
        } else {
            positive(obj, "window").map(Some)
        }
    }
}
