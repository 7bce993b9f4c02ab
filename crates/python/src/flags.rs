//! `kiln.flags()` and `kiln.enable_op_determinism()`.

use crate::errors::guard;
use crate::program::session_flags;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Every flag with its value in effect, default, source and whether this build acts on it:
/// `{"tf_xla_auto_jit": {"value": "1", "default": "1", "source": "default", "effect": …}}`.
/// `variables` as for `Session`: `None` reads the environment.
#[pyfunction]
#[pyo3(signature = (variables=None))]
pub fn flags<'py>(
    py: Python<'py>,
    variables: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let flags = session_flags(variables)?;
        let out = PyDict::new(py);
        for spec in kiln_flags::FLAGS {
            let d = PyDict::new(py);
            d.set_item("value", spec.current(&flags))?;
            d.set_item("default", spec.default)?;
            d.set_item("source", kiln_flags::source_text(spec, &flags))?;
            d.set_item("effect", spec.effect.summary())?;
            d.set_item(
                "variables",
                spec.variables.iter().map(|v| v.name()).collect::<Vec<_>>(),
            )?;
            out.set_item(spec.name, d)?;
        }
        Ok(out)
    })
}

/// The `kiln flags` table as text.
#[pyfunction]
#[pyo3(signature = (variables=None))]
pub fn flags_table(variables: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    guard(|| Ok(kiln_flags::render_flags_table(&session_flags(variables)?)))
}

/// Turns on op determinism for this process (`tf.config.experimental.enable_op_determinism`):
/// sessions made afterwards refuse unseeded random ops and give thread-count-independent bits.
#[pyfunction]
pub fn enable_op_determinism() {
    kiln::config::enable_op_determinism();
}
