//! Python bindings: argument conversion, GIL release and result packing. No engine logic.

use pyo3::prelude::*;

use args::arg;

mod args;
mod convert;
mod errors;
mod index;
mod locks;
mod store;

/// `"release"` or `"debug"`: how this extension was compiled (never benchmark a debug build).
#[pyfunction]
fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The dot-product kernel this CPU uses (`"avx512f"`, `"avx2+fma"` or `"portable"`).
#[pyfunction]
fn simd_kernel() -> &'static str {
    trimem_engine::distance::kernel_name()
}

/// Terms of `text` as the index sees them.
#[pyfunction]
#[pyo3(signature = (text, *, stem = false, stopwords = false))]
fn tokenize(
    py: Python<'_>,
    #[pyo3(from_py_with = arg::text)] text: &str,
    #[pyo3(from_py_with = arg::stem)] stem: bool,
    #[pyo3(from_py_with = arg::stopwords)] stopwords: bool,
) -> Vec<String> {
    let tokenizer =
        trimem_engine::Tokenizer::new(trimem_engine::TokenizerOptions { stem, stopwords });
    py.detach(|| tokenizer.tokenize(text))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add_function(wrap_pyfunction!(simd_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_class::<index::HybridIndex>()?;
    m.add_class::<index::Hits>()?;
    m.add_class::<index::StoredRecord>()?;
    m.add_class::<store::Store>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
