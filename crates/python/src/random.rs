//! `kiln.random`'s Rust side: TensorFlow's stateless ops and `tf.random.Generator`
//! (Philox), JAX's key API (ThreeFry), all from `kiln-rng` — the streams the compiled and
//! interpreted random ops produce, so the values equal the frameworks' bit for bit.

use crate::arrays::buffer_to_py;
use crate::errors::{guard, rng_to_py, ArgumentError};
use kiln::Buffer;
use kiln_rng::{jax, SeedDtype};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Mutex;

/// A float draw: which distribution, in which width.
fn float_draw(
    dist: &str,
    dtype: &str,
    mut f32s: impl FnMut(&str) -> kiln_rng::Result<Vec<f32>>,
    mut f64s: impl FnMut(&str) -> kiln_rng::Result<Vec<f64>>,
) -> PyResult<Buffer> {
    if !matches!(dist, "uniform" | "normal" | "truncated_normal") {
        return Err(ArgumentError::new_err(format!(
            "unknown distribution '{dist}'; expected uniform, normal or truncated_normal"
        )));
    }
    match dtype {
        "float32" => Ok(Buffer::F32(f32s(dist).map_err(rng_to_py)?.into())),
        "float64" => Ok(Buffer::F64(f64s(dist).map_err(rng_to_py)?.into())),
        _ => Err(ArgumentError::new_err(format!(
            "{dist}: dtype {dtype} is not supported; expected float32 or float64"
        ))),
    }
}

/// `tf.random.stateless_{uniform,normal,truncated_normal}(shape, seed, dtype)`.
#[pyfunction]
pub fn tf_stateless<'py>(
    py: Python<'py>,
    dist: &str,
    shape: Vec<usize>,
    seed: (i64, i64),
    dtype: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(|| {
        let s = [seed.0, seed.1];
        let sh = shape.as_slice();
        let data = float_draw(
            dist,
            dtype,
            |d| match d {
                "uniform" => kiln_rng::stateless_uniform(sh, s),
                "normal" => kiln_rng::stateless_normal(sh, s),
                _ => kiln_rng::stateless_truncated_normal(sh, s),
            },
            |d| match d {
                "uniform" => kiln_rng::stateless_uniform_f64(sh, s),
                "normal" => kiln_rng::stateless_normal_f64(sh, s),
                _ => kiln_rng::stateless_truncated_normal_f64(sh, s),
            },
        )?;
        buffer_to_py(py, sh, data)
    })
}

/// Integers in `[minval, maxval)`, or full-range words when both bounds are `None`.
fn int_draw(
    dtype: &str,
    bounds: Option<(i64, i64)>,
    i32s: impl FnOnce(i32, i32) -> kiln_rng::Result<Vec<i32>>,
    i64s: impl FnOnce(i64, i64) -> kiln_rng::Result<Vec<i64>>,
    u32s: impl FnOnce() -> kiln_rng::Result<Vec<u32>>,
    u64s: impl FnOnce() -> kiln_rng::Result<Vec<u64>>,
) -> PyResult<Buffer> {
    let narrow = |v: i64| {
        i32::try_from(v)
            .map_err(|_| ArgumentError::new_err(format!("bound {v} does not fit in int32")))
    };
    Ok(match (dtype, bounds) {
        ("int32", Some((lo, hi))) => Buffer::I32(i32s(narrow(lo)?, narrow(hi)?).map_err(rng_to_py)?.into()),
        ("int64", Some((lo, hi))) => Buffer::I64(i64s(lo, hi).map_err(rng_to_py)?.into()),
        ("uint32", None) => Buffer::U32(u32s().map_err(rng_to_py)?.into()),
        ("uint64", None) => Buffer::U64(u64s().map_err(rng_to_py)?.into()),
        ("int32", None) => Buffer::I32(u32s().map_err(rng_to_py)?.into_iter().map(|u| u as i32).collect()),
        ("int64", None) => Buffer::I64(u64s().map_err(rng_to_py)?.into_iter().map(|u| u as i64).collect()),
        (d, Some(_)) => {
            return Err(ArgumentError::new_err(format!(
                "integers in [minval, maxval): dtype {d} is not supported; expected int32 or int64"
            )))
        }
        (d, None) => {
            return Err(ArgumentError::new_err(format!(
                "full-range integers: dtype {d} is not supported; expected int32, int64, uint32 or uint64"
            )))
        }
    })
}

/// `tf.random.stateless_uniform(shape, seed, minval, maxval, dtype=int)`; both bounds `None`
/// gives full-range integers (`minval=None, maxval=None`).
#[pyfunction]
#[pyo3(signature = (shape, seed, dtype, bounds=None))]
pub fn tf_stateless_int<'py>(
    py: Python<'py>,
    shape: Vec<usize>,
    seed: (i64, i64),
    dtype: &str,
    bounds: Option<(i64, i64)>,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(|| {
        let s = [seed.0, seed.1];
        let sh = shape.as_slice();
        let data = int_draw(
            dtype,
            bounds,
            |lo, hi| kiln_rng::stateless_uniform_int(sh, s, lo, hi),
            |lo, hi| kiln_rng::stateless_uniform_int64(sh, s, lo, hi),
            || kiln_rng::stateless_bits(sh, s),
            || kiln_rng::stateless_bits_u64(sh, s),
        )?;
        buffer_to_py(py, sh, data)
    })
}

fn seed_dtype(dtype: &str) -> PyResult<SeedDtype> {
    match dtype {
        "int32" => Ok(SeedDtype::I32),
        "int64" => Ok(SeedDtype::I64),
        d => Err(ArgumentError::new_err(format!(
            "seed dtype {d} is not supported; expected int32 or int64"
        ))),
    }
}

/// `tf.random.experimental.stateless_split(seed, num)`.
#[pyfunction]
pub fn tf_stateless_split(seed: (i64, i64), num: usize, dtype: &str) -> PyResult<Vec<(i64, i64)>> {
    guard(|| {
        let seeds = kiln_rng::stateless_split([seed.0, seed.1], num, seed_dtype(dtype)?)
            .map_err(rng_to_py)?;
        Ok(seeds.into_iter().map(|[a, b]| (a, b)).collect())
    })
}

/// `tf.random.experimental.stateless_fold_in(seed, data)`.
#[pyfunction]
pub fn tf_stateless_fold_in(seed: (i64, i64), data: i64, dtype: &str) -> PyResult<(i64, i64)> {
    guard(|| {
        let [a, b] = kiln_rng::stateless_fold_in([seed.0, seed.1], data, seed_dtype(dtype)?)
            .map_err(rng_to_py)?;
        Ok((a, b))
    })
}

/// `tf.random.Generator`: Philox state `[counter_lo, counter_hi, key]`, advanced by each
/// draw exactly as TensorFlow advances it.
#[pyclass(module = "kiln._kiln", name = "TfGenerator", frozen)]
pub struct TfGenerator {
    inner: Mutex<kiln_rng::Generator>,
}

impl TfGenerator {
    fn with<T>(&self, f: impl FnOnce(&mut kiln_rng::Generator) -> PyResult<T>) -> PyResult<T> {
        // A poisoned lock only means an earlier draw panicked; the state is still a state.
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }
}

#[pymethods]
impl TfGenerator {
    /// `tf.random.Generator.from_seed(seed)` (any integer that fits in 128 bits).
    #[staticmethod]
    fn from_seed(seed: i128) -> TfGenerator {
        TfGenerator {
            inner: Mutex::new(kiln_rng::Generator::from_seed(seed)),
        }
    }

    /// `tf.random.Generator(state=[counter_lo, counter_hi, key], alg="philox")`.
    #[staticmethod]
    fn from_state(state: (i64, i64, i64)) -> TfGenerator {
        let s = [state.0 as u64, state.1 as u64, state.2 as u64];
        TfGenerator {
            inner: Mutex::new(kiln_rng::Generator::from_state(s)),
        }
    }

    /// The state `[counter_lo, counter_hi, key]` as TF's `int64` variable holds it.
    #[getter]
    fn state(&self) -> PyResult<(i64, i64, i64)> {
        self.with(|g| {
            let [a, b, c] = g.state();
            Ok((a, b, c))
        })
    }

    /// `reset_from_seed(seed)`.
    fn reset_from_seed(&self, seed: i128) -> PyResult<()> {
        self.with(|g| {
            g.reset_from_seed(seed);
            Ok(())
        })
    }

    /// `uniform` / `normal` / `truncated_normal` of a float dtype.
    fn draw<'py>(
        &self,
        py: Python<'py>,
        dist: &str,
        shape: Vec<usize>,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let data = self.with(|g| {
                let g = std::cell::RefCell::new(g);
                float_draw(
                    dist,
                    dtype,
                    |d| match d {
                        "uniform" => g.borrow_mut().uniform(&shape),
                        "normal" => g.borrow_mut().normal(&shape),
                        _ => g.borrow_mut().truncated_normal(&shape),
                    },
                    |d| match d {
                        "uniform" => g.borrow_mut().uniform_f64(&shape),
                        "normal" => g.borrow_mut().normal_f64(&shape),
                        _ => g.borrow_mut().truncated_normal_f64(&shape),
                    },
                )
            })?;
            buffer_to_py(py, &shape, data)
        })
    }

    /// `uniform(shape, minval, maxval, dtype=int)`, or `uniform_full_int` when `bounds` is
    /// `None`.
    #[pyo3(signature = (shape, dtype, bounds=None))]
    fn draw_int<'py>(
        &self,
        py: Python<'py>,
        shape: Vec<usize>,
        dtype: &str,
        bounds: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let data = self.with(|g| {
                let g = std::cell::RefCell::new(g);
                int_draw(
                    dtype,
                    bounds,
                    |lo, hi| g.borrow_mut().uniform_int(&shape, lo, hi),
                    |lo, hi| g.borrow_mut().uniform_int64(&shape, lo, hi),
                    || g.borrow_mut().bits(&shape),
                    || g.borrow_mut().bits_u64(&shape),
                )
            })?;
            buffer_to_py(py, &shape, data)
        })
    }

    /// `split(count)`: `count` new generators; this one advances.
    fn split(&self, count: usize) -> PyResult<Vec<TfGenerator>> {
        guard(|| {
            let gens = self.with(|g| g.split(count).map_err(rng_to_py))?;
            Ok(gens
                .into_iter()
                .map(|g| TfGenerator {
                    inner: Mutex::new(g),
                })
                .collect())
        })
    }
}

/// `jax.random.key_data(jax.random.PRNGKey(seed))`.
#[pyfunction]
pub fn jax_prng_key(seed: i64) -> (u32, u32) {
    let k = jax::prng_key(seed);
    (k.0[0], k.0[1])
}

/// `jax.random.split(key, num)`.
#[pyfunction]
pub fn jax_split(key: (u32, u32), num: usize) -> PyResult<Vec<(u32, u32)>> {
    guard(|| {
        let keys = jax::split(jax::JaxKey([key.0, key.1]), num).map_err(rng_to_py)?;
        Ok(keys.into_iter().map(|k| (k.0[0], k.0[1])).collect())
    })
}

/// `jax.random.fold_in(key, data)`.
#[pyfunction]
pub fn jax_fold_in(key: (u32, u32), data: u32) -> (u32, u32) {
    let k = jax::fold_in(jax::JaxKey([key.0, key.1]), data);
    (k.0[0], k.0[1])
}

/// `jax.random.{uniform,normal,truncated_normal(-2, 2),bits}(key, shape)` (float32; bits
/// uint32); `bounds` = `(minval, maxval)` of a uniform draw (default `(0, 1)`).
#[pyfunction]
#[pyo3(signature = (dist, key, shape, bounds=None))]
pub fn jax_draw<'py>(
    py: Python<'py>,
    dist: &str,
    key: (u32, u32),
    shape: Vec<usize>,
    bounds: Option<(f32, f32)>,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(|| {
        let k = jax::JaxKey([key.0, key.1]);
        let sh = shape.as_slice();
        if bounds.is_some() && dist != "uniform" {
            return Err(ArgumentError::new_err(format!(
                "bounds are for the uniform distribution, not '{dist}'"
            )));
        }
        let data = match dist {
            "uniform" => Buffer::F32(
                match bounds {
                    Some((lo, hi)) => jax::uniform_range(k, sh, lo, hi),
                    None => jax::uniform(k, sh),
                }
                .map_err(rng_to_py)?
                .into(),
            ),
            "normal" => Buffer::F32(jax::normal(k, sh).map_err(rng_to_py)?.into()),
            "truncated_normal" => {
                Buffer::F32(jax::truncated_normal(k, sh).map_err(rng_to_py)?.into())
            }
            "bits" => Buffer::U32(jax::random_bits(k, sh).map_err(rng_to_py)?.into()),
            d => {
                return Err(ArgumentError::new_err(format!(
                    "unknown distribution '{d}'; expected uniform, normal, truncated_normal or bits"
                )))
            }
        };
        buffer_to_py(py, sh, data)
    })
}
