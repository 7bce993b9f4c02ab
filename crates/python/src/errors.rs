//! Kiln's errors as Python exceptions, and the boundary guard: every entry point runs inside
//! [`guard`], so a Rust panic becomes `kiln.InternalError` instead of crossing into Python.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(
    _kiln,
    KilnError,
    PyException,
    "Base class of every error Kiln raises; the message is Kiln's."
);
create_exception!(
    _kiln,
    ParseError,
    KilnError,
    "A `.kir` or HLO text did not parse or verify; the message names file, line and column."
);
create_exception!(
    _kiln,
    UnsupportedError,
    KilnError,
    "Valid HLO that Kiln cannot express; the message names the op and where it is."
);
create_exception!(
    _kiln,
    FlagsError,
    KilnError,
    "`TF_XLA_FLAGS`, `XLA_FLAGS` or another steering variable is invalid; names the flag."
);
create_exception!(
    _kiln,
    ArgumentError,
    KilnError,
    "An argument does not fit: wrong count, dtype or shape, or not an array."
);
create_exception!(
    _kiln,
    RandomError,
    KilnError,
    "A random-number request was refused (unseeded under op determinism, bad range, too large)."
);
create_exception!(
    _kiln,
    ExecutionError,
    KilnError,
    "Compiling or running the program failed."
);
create_exception!(
    _kiln,
    InternalError,
    KilnError,
    "A bug in Kiln (a Rust panic caught at the Python boundary); please report it."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KilnError", py.get_type::<KilnError>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("FlagsError", py.get_type::<FlagsError>())?;
    m.add("ArgumentError", py.get_type::<ArgumentError>())?;
    m.add("RandomError", py.get_type::<RandomError>())?;
    m.add("ExecutionError", py.get_type::<ExecutionError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}

/// The Python exception for a Kiln error, carrying its message.
pub fn to_py(e: kiln::KilnError) -> PyErr {
    let msg = e.to_string();
    match e {
        kiln::KilnError::Flags(_) => FlagsError::new_err(msg),
        kiln::KilnError::Parse(_) | kiln::KilnError::Verify(_) => ParseError::new_err(msg),
        kiln::KilnError::Rng(_) => RandomError::new_err(msg),
        kiln::KilnError::Invalid(_) => ArgumentError::new_err(msg),
        _ => ExecutionError::new_err(msg),
    }
}

/// The Python exception for a random-number error.
pub fn rng_to_py(e: kiln_rng::RngError) -> PyErr {
    RandomError::new_err(e.to_string())
}

/// The Python exception for an HLO import error: `UnsupportedError` when any of its
/// diagnostics is an op (attribute, dtype) Kiln does not have, else `ParseError`. Every
/// diagnostic is one line of the message, as `kiln import` prints them.
pub fn hlo_to_py(e: kiln_hlo::HloError, file: &str) -> PyErr {
    let n = e.diagnostics.len();
    let mut msg = e.to_string();
    if n > 1 {
        msg += &format!("\n{file}: {n} errors");
    }
    let unsupported = e
        .diagnostics
        .iter()
        .any(|d| d.kind == kiln_hlo::ErrorKind::Unsupported);
    if unsupported {
        UnsupportedError::new_err(msg)
    } else {
        ParseError::new_err(msg)
    }
}

/// Runs `f`, turning a panic into `kiln.InternalError` with the panic's message.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| Err(panic_error(&*payload)))
}

/// [`guard`] for work that runs without the GIL: the panic's message is kept as a string
/// and the exception is made once the GIL is held again.
pub fn guard_detached<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(&*payload))
}

/// `kiln.InternalError` for a panic payload.
pub fn panic_error(payload: &(dyn std::any::Any + Send)) -> PyErr {
    InternalError::new_err(panic_message(payload))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    format!("internal error in Kiln (a Rust panic, caught at the Python boundary): {what}")
}
