//! `trimem._core`: the Python extension module. Everything here is binding glue; the engine
//! lives in the `trimem-engine` crate (`rust/engine`).

use pyo3::prelude::*;

mod py;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py::register(m)
}
