//! `kiln._kiln`: the Rust extension under the Python package `kiln` (see `python/kiln/`).
//!
//! It exposes Kiln's library as a few plain classes and functions — `Session`, `Program`,
//! the random streams, the flags — and leaves pytrees, retrace keys and calling JAX or
//! TensorFlow to the pure-Python layer. Every entry point catches panics
//! ([`errors::guard`]), raises `kiln.KilnError` subclasses carrying Kiln's message, and
//! releases the GIL while Kiln compiles or runs.
//!
//! The crate is built by maturin (`pip install ./crates/python`), outside the Cargo
//! workspace: see `Cargo.toml` for why.

mod arrays;
mod errors;
mod flags;
mod program;
mod random;

use pyo3::prelude::*;

/// Bytes of input array elements this process has copied into Kiln rather than borrowed
/// (C-contiguous, aligned arrays of a numeric dtype are borrowed and add nothing).
#[pyfunction]
fn copied_in_bytes() -> u64 {
    arrays::copied_in_bytes()
}

#[pymodule]
fn _kiln(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<program::Session>()?;
    m.add_class::<program::Program>()?;
    m.add_class::<arrays::HostBuffer>()?;
    m.add_class::<random::TfGenerator>()?;
    m.add_function(wrap_pyfunction!(flags::flags, m)?)?;
    m.add_function(wrap_pyfunction!(flags::flags_table, m)?)?;
    m.add_function(wrap_pyfunction!(flags::enable_op_determinism, m)?)?;
    m.add_function(wrap_pyfunction!(random::tf_stateless, m)?)?;
    m.add_function(wrap_pyfunction!(random::tf_stateless_int, m)?)?;
    m.add_function(wrap_pyfunction!(random::tf_stateless_split, m)?)?;
    m.add_function(wrap_pyfunction!(random::tf_stateless_fold_in, m)?)?;
    m.add_function(wrap_pyfunction!(random::jax_prng_key, m)?)?;
    m.add_function(wrap_pyfunction!(random::jax_split, m)?)?;
    m.add_function(wrap_pyfunction!(random::jax_fold_in, m)?)?;
    m.add_function(wrap_pyfunction!(random::jax_draw, m)?)?;
    m.add_function(wrap_pyfunction!(copied_in_bytes, m)?)?;
    let variables: Vec<&str> = program::FLAG_VARIABLES.iter().map(|v| v.name()).collect();
    m.add("FLAG_VARIABLES", variables)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
