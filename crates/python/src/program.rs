//! `Session` (flags + a Kiln runtime with its caches) and `Program` (one module's entry
//! function, parsed or imported, verified and prepared once, run many times).

use crate::arrays::{numpy_name, tensor_from_py, tensor_to_py};
use crate::errors::{guard, guard_detached, hlo_to_py, to_py, ArgumentError, InternalError};
use kiln::{Func, Tensor, TensorType};
use kiln_flags::{Sources, Variable};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// The variables a session's flags come from, by name (what `Session(variables)` reads).
pub const FLAG_VARIABLES: &[Variable] = &Variable::ALL;

/// The flags for a session: the environment when `variables` is `None`, else the given
/// variable texts (a missing or `None` entry is an unset variable). The process-wide
/// switches (`enable_op_determinism`) apply either way.
pub fn session_flags(variables: Option<&Bound<'_, PyDict>>) -> PyResult<kiln::config::Flags> {
    let Some(vars) = variables else {
        return kiln::config::flags().map_err(to_py);
    };
    let get = |v: Variable| -> PyResult<Option<String>> {
        match vars.get_item(v.name())? {
            Some(x) if !x.is_none() => Ok(Some(x.extract()?)),
            _ => Ok(None),
        }
    };
    // Every variable Kiln reads, the mixed precision rewrite's included.
    let mut sources = Sources::default();
    for v in Variable::ALL {
        if let Some(text) = get(v)? {
            sources
                .set(v.name(), text)
                .map_err(ArgumentError::new_err)?;
        }
    }
    kiln::config::flags_from_sources(&sources).map_err(to_py)
}

/// A Kiln session: the flags in effect, the device, and one runtime whose caches and
/// statistics every program run through it shares.
#[pyclass(module = "kiln._kiln", frozen)]
pub struct Session {
    inner: kiln::Session,
}

#[pymethods]
impl Session {
    /// A session whose flags come from the environment (`variables=None`) or from the
    /// given variable texts (`{"TF_XLA_FLAGS": "--tf_xla_auto_jit=1", …}`).
    #[new]
    #[pyo3(signature = (variables=None))]
    fn new(variables: Option<&Bound<'_, PyDict>>) -> PyResult<Session> {
        guard(|| {
            let flags = session_flags(variables)?;
            kiln_flags::init_logging(&flags);
            let inner = kiln::Session::new(&flags).map_err(to_py)?;
            Ok(Session { inner })
        })
    }

    /// Whether clusters compile for a GPU.
    #[getter]
    fn on_gpu(&self) -> bool {
        self.inner.on_gpu()
    }

    /// Per-cluster statistics: `{cluster: {"compiles": n, "compile_time_s": t, …}}`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let out = PyDict::new(py);
            for (cluster, s) in self.inner.runtime().stats() {
                let d = PyDict::new(py);
                d.set_item("compiles", s.compiles)?;
                d.set_item("compile_time_s", s.compile_time.as_secs_f64())?;
                d.set_item("compile_failures", s.compile_failures)?;
                d.set_item("compiled_runs", s.compiled_runs)?;
                d.set_item("fallback_runs", s.fallback_runs)?;
                d.set_item("memory_hits", s.memory_hits)?;
                d.set_item("disk_hits", s.disk_hits)?;
                d.set_item("load_time_s", s.load_time.as_secs_f64())?;
                out.set_item(cluster, d)?;
            }
            Ok(out)
        })
    }

    /// Waits for background compiles (`--tf_xla_async_compilation`) to finish.
    fn wait_for_compiles(&self, py: Python<'_>) {
        let rt = self.inner.runtime().clone();
        py.detach(move || rt.wait_for_compiles());
    }
}

/// One program: the entry function of an HLO module or `.kir` file, verified and prepared
/// (passes, auto-clustering) for a session.
#[pyclass(module = "kiln._kiln", frozen)]
pub struct Program {
    session: kiln::Session,
    imported: Func,
    /// The prepared function, planned once for every call (`Session::plan`).
    planned: kiln::PlannedFunc,
}

/// Parses `.kir` text or imports HLO text (told apart by the `HloModule` header) and
/// returns its entry function, verified.
fn load_entry(text: &str, file: &str) -> PyResult<Func> {
    let module = if kiln_hlo::is_hlo(text) {
        kiln_hlo::import(text, file).map_err(|e| hlo_to_py(e, file))?
    } else {
        kiln::parse_module(text, file).map_err(|e| to_py(e.into()))?
    };
    let diags = kiln_ir::verify_module(&module);
    if !diags.is_empty() {
        let lines: Vec<String> = diags.iter().map(|d| d.render(file)).collect();
        return Err(to_py(kiln::KilnError::Verify(lines)));
    }
    module
        .entry()
        .cloned()
        .ok_or_else(|| crate::errors::ParseError::new_err(format!("{file}: no function")))
}

fn types_to_py<'py>(
    py: Python<'py>,
    f: &Func,
    values: &[kiln_ir::Value],
) -> PyResult<Bound<'py, PyList>> {
    let items = values
        .iter()
        .map(|&v| type_to_py(py, f.ty(v)))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn type_to_py<'py>(py: Python<'py>, t: &TensorType) -> PyResult<Bound<'py, PyTuple>> {
    let shape = PyTuple::new(py, &t.shape)?;
    PyTuple::new(
        py,
        [
            numpy_name(t.dtype).into_pyobject(py)?.into_any(),
            shape.into_any(),
        ],
    )
}

#[pymethods]
impl Program {
    /// Loads `text` (HLO or `.kir`; `file_name` names it in errors) and prepares its entry
    /// function for `session`.
    #[new]
    #[pyo3(signature = (session, text, file_name="<text>"))]
    fn new(py: Python<'_>, session: &Session, text: &str, file_name: &str) -> PyResult<Program> {
        guard(|| {
            let imported = load_entry(text, file_name)?;
            let session = session.inner.clone();
            let mut prepared = imported.clone();
            py.detach(|| guard_detached(|| session.prepare(&mut prepared)))
                .map_err(InternalError::new_err)?
                .map_err(to_py)?;
            let planned = session.plan(std::sync::Arc::new(prepared));
            Ok(Program {
                session,
                imported,
                planned,
            })
        })
    }

    /// The parameters' `(dtype, shape)`, in order.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        types_to_py(py, &self.imported, &self.imported.params)
    }

    /// The results' `(dtype, shape)`, in order.
    #[getter]
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        types_to_py(py, &self.imported, &self.imported.results)
    }

    /// The function as `.kir` text: after Kiln's passes and clustering (`clustered=True`,
    /// the clusters shown as nested regions), or as imported.
    #[pyo3(signature = (clustered=true))]
    fn as_kir(&self, clustered: bool) -> String {
        kiln::print_func(if clustered {
            self.planned.func()
        } else {
            &self.imported
        })
    }

    /// Runs the program on `args` (arrays, one per parameter, of the parameter's dtype and
    /// shape) and returns its results as `(bytearray, dtype, shape)` triples. The GIL is
    /// released while Kiln runs.
    fn run<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        guard(|| {
            let f = &self.imported;
            if args.len() != f.params.len() {
                return Err(ArgumentError::new_err(format!(
                    "@{} takes {} argument{}, got {}",
                    f.name,
                    f.params.len(),
                    if f.params.len() == 1 { "" } else { "s" },
                    args.len()
                )));
            }
            let mut tensors: Vec<Tensor> = Vec::with_capacity(args.len());
            for (i, (arg, &p)) in args.iter().zip(&f.params).enumerate() {
                let name = &f.value(p).name;
                let what = format!("argument {i} (%{name}) of @{}", f.name);
                let t = tensor_from_py(&arg, &what)?;
                let want = f.ty(p);
                if t.dtype() != want.dtype || t.shape() != want.shape.as_slice() {
                    return Err(ArgumentError::new_err(format!(
                        "{what} must be {}{:?}, got {}{:?}",
                        numpy_name(want.dtype),
                        want.shape,
                        numpy_name(t.dtype()),
                        t.shape()
                    )));
                }
                tensors.push(t);
            }
            let (session, planned) = (&self.session, &self.planned);
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let outs = py
                .detach(|| guard_detached(|| session.run_planned(planned, &refs)))
                .map_err(InternalError::new_err)?
                .map_err(to_py)?;
            outs.into_iter().map(|t| tensor_to_py(py, t)).collect()
        })
    }
}
