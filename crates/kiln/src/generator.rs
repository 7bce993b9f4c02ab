//! [`Generator`]: `tf.random.Generator` (Philox) as a shared handle, usable eagerly and
//! inside a traced [`crate::Function`].
//!
//! As in TensorFlow, where the generator is a resource variable that a `tf.function`
//! captures, the state is *lifted out of the graph*: each draw traced through
//! [`Generator::in_trace`] becomes an `i64[3]` parameter of the traced function
//! (`random_* %state<k>, alg=philox_state`), not a constant. On every call the `Function`
//! reads the generator's current state for each draw, in trace order, feeds it, and advances
//! the generator exactly as the eager draw would (`RngReadAndSkip`: the 128-bit counter moves
//! by 256 × the number of elements drawn). So K calls of a function that draws
//! `g.normal([N])` give the same K arrays, bit for bit, as K eager draws, leave the same
//! state, and trace once.

use crate::error::KilnError;
use kiln_ir::{Buffer, DType, RandomAlg, RandomDist, Scalar, Tensor, TensorType, Tracer};
use kiln_rng::RngError;
use std::sync::{Arc, Mutex, MutexGuard};

/// The shared state behind a [`Generator`] handle (what a traced draw captures).
#[derive(Debug)]
pub(crate) struct GeneratorCell {
    state: Mutex<kiln_rng::Generator>,
    /// False for `from_non_deterministic_state`: draws are refused under op determinism.
    seeded: bool,
}

impl GeneratorCell {
    /// The state, even if another thread panicked while holding it (a plain `Copy` value:
    /// nothing can be half-updated).
    pub(crate) fn lock(&self) -> MutexGuard<'_, kiln_rng::Generator> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn seeded(&self) -> bool {
        self.seeded
    }
}

/// `tf.random.Generator` with the Philox algorithm: a seedable, serialisable random stream
/// shared by every clone of the handle (clones are the same generator, as Python references
/// to one `tf.random.Generator` are).
///
/// Eager draws ([`Generator::normal`], …) return tensors; inside a traced function, draw
/// through [`Generator::in_trace`]:
///
/// ```
/// use kiln::{DType, Function, Generator, Tensor};
/// let g = Generator::from_seed(1);
/// let g2 = g.clone();
/// let f = Function::new("noise", move |a| &a[0] + &g2.in_trace(&a[0]).normal(&[3], DType::F32))
///     .unwrap();
/// let x = Tensor::from_f32([3], vec![0.0; 3]).unwrap();
/// let first = f.call(std::slice::from_ref(&x)).unwrap();
/// let second = f.call(std::slice::from_ref(&x)).unwrap();
/// assert_ne!(first, second); // the stream continues: not frozen at trace time
/// assert_eq!(f.trace_count(), 1);
/// assert_eq!(g.state(), [1 + 2 * 3 * 256, 0, 0]); // advanced as two eager draws would
/// ```
#[derive(Debug, Clone)]
pub struct Generator {
    cell: Arc<GeneratorCell>,
}

impl Generator {
    fn new(g: kiln_rng::Generator, seeded: bool) -> Generator {
        Generator {
            cell: Arc::new(GeneratorCell {
                state: Mutex::new(g),
                seeded,
            }),
        }
    }

    /// `Generator.from_seed(seed)`: state `[seed, 0, 0]` (wider seeds fill the high words).
    pub fn from_seed(seed: i128) -> Generator {
        Generator::new(kiln_rng::Generator::from_seed(seed), true)
    }

    /// `Generator(state=[counter_lo, counter_hi, key])`.
    pub fn from_state(state: [i64; 3]) -> Generator {
        Generator::new(
            kiln_rng::Generator::from_state(state.map(|w| w as u64)),
            true,
        )
    }

    /// A handle on a saved generator (e.g. deserialised from [`Generator::snapshot`]): it
    /// continues that stream.
    pub fn from_rng(g: kiln_rng::Generator) -> Generator {
        Generator::new(g, true)
    }

    /// `Generator.from_non_deterministic_state()`: a state from OS entropy. With op
    /// determinism enabled (`TF_DETERMINISTIC_OPS=1`, [`crate::config::enable_op_determinism`])
    /// this is TF's error `"from_non_deterministic_state" cannot be called when determinism
    /// is enabled`.
    pub fn from_non_deterministic_state() -> Result<Generator, KilnError> {
        let deterministic = crate::config::flags()?.deterministic_ops;
        Generator::from_non_deterministic_state_with(deterministic)
    }

    /// [`Generator::from_non_deterministic_state`] with the determinism setting given (e.g.
    /// a [`crate::Session`]'s).
    pub fn from_non_deterministic_state_with(deterministic: bool) -> Result<Generator, KilnError> {
        let g = kiln_rng::Generator::from_non_deterministic_state(deterministic)?;
        Ok(Generator::new(g, false))
    }

    /// Whether the stream came from a seed or a given state (not from OS entropy).
    pub fn is_seeded(&self) -> bool {
        self.cell.seeded
    }

    /// True if both handles share one generator.
    pub fn same_as(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }

    /// `Generator.reset_from_seed(seed)`. Traced functions keep their traces and continue
    /// from the new state on their next call.
    pub fn reset_from_seed(&self, seed: i128) {
        *self.cell.lock() = kiln_rng::Generator::from_seed(seed);
    }

    /// `Generator.reset(state)` from a saved generator ([`Generator::snapshot`]), as restoring
    /// a `tf.train.Checkpoint` of the generator does.
    pub fn restore(&self, saved: kiln_rng::Generator) {
        *self.cell.lock() = saved;
    }

    /// The current state as a serialisable value (serde): save it to continue the stream
    /// later with [`Generator::restore`] or [`Generator::from_rng`].
    pub fn snapshot(&self) -> kiln_rng::Generator {
        *self.cell.lock()
    }

    /// `Generator.state`: `[counter_lo, counter_hi, key]` as TF prints it.
    pub fn state(&self) -> [i64; 3] {
        self.cell.lock().state()
    }

    /// Refuses an eager draw from an unseeded generator while op determinism is on.
    fn check_eager(&self, op: &str) -> Result<(), KilnError> {
        if !self.cell.seeded {
            let deterministic = crate::config::flags()?.deterministic_ops;
            kiln_rng::require_seeded(op, false, deterministic)?;
        }
        Ok(())
    }

    fn draw(
        &self,
        op: &str,
        shape: &[usize],
        f: impl FnOnce(&mut kiln_rng::Generator) -> Result<Buffer, RngError>,
    ) -> Result<Tensor, KilnError> {
        self.check_eager(op)?;
        let data = f(&mut self.cell.lock())?;
        Tensor::new(shape.to_vec(), data).map_err(|e| KilnError::Invalid(format!("{op}: {e}")))
    }

    /// `Generator.normal(shape, dtype)` (`f32` or `f64`), eagerly.
    pub fn normal(&self, shape: &[usize], dtype: DType) -> Result<Tensor, KilnError> {
        float_only("Generator.normal", dtype, ())?;
        self.draw("Generator.normal", shape, |g| match dtype {
            DType::F32 => g.normal(shape).map(|v| Buffer::F32(v.into())),
            _ => g.normal_f64(shape).map(|v| Buffer::F64(v.into())),
        })
    }

    /// `Generator.uniform(shape, dtype)` in `[0, 1)` (`f32` or `f64`), eagerly.
    pub fn uniform(&self, shape: &[usize], dtype: DType) -> Result<Tensor, KilnError> {
        float_only("Generator.uniform", dtype, ())?;
        self.draw("Generator.uniform", shape, |g| match dtype {
            DType::F32 => g.uniform(shape).map(|v| Buffer::F32(v.into())),
            _ => g.uniform_f64(shape).map(|v| Buffer::F64(v.into())),
        })
    }

    /// `Generator.truncated_normal(shape, dtype)` (`f32` or `f64`), eagerly.
    pub fn truncated_normal(&self, shape: &[usize], dtype: DType) -> Result<Tensor, KilnError> {
        float_only("Generator.truncated_normal", dtype, ())?;
        self.draw("Generator.truncated_normal", shape, |g| match dtype {
            DType::F32 => g.truncated_normal(shape).map(|v| Buffer::F32(v.into())),
            _ => g.truncated_normal_f64(shape).map(|v| Buffer::F64(v.into())),
        })
    }

    /// `Generator.uniform(shape, minval, maxval, dtype=tf.int32)`, eagerly. An empty range is
    /// an error and leaves the state unchanged.
    pub fn uniform_int(
        &self,
        shape: &[usize],
        minval: i32,
        maxval: i32,
    ) -> Result<Tensor, KilnError> {
        self.draw("Generator.uniform", shape, |g| {
            g.uniform_int(shape, minval, maxval)
                .map(|v| Buffer::I32(v.into()))
        })
    }

    /// `Generator.uniform_full_int(shape, dtype=tf.uint32)`: raw 32-bit words, eagerly.
    pub fn bits(&self, shape: &[usize]) -> Result<Tensor, KilnError> {
        self.draw("Generator.uniform_full_int", shape, |g| {
            g.bits(shape).map(|v| Buffer::U32(v.into()))
        })
    }

    /// Draws from this generator inside the trace that `anchor` belongs to (any value of the
    /// traced function names the trace).
    pub fn in_trace<'a>(&'a self, anchor: &'a Tracer) -> TracedGenerator<'a> {
        TracedGenerator { gen: self, anchor }
    }
}

/// Checks a float dtype for the float distributions (the check runs before any state moves):
/// `f32` or `f64` (TF's streams; `f16`/`bf16` draws are a `convert` of `f32` ones).
fn float_only<T>(op: &str, dtype: DType, v: T) -> Result<T, KilnError> {
    if matches!(dtype, DType::F32 | DType::F64) {
        Ok(v)
    } else {
        Err(KilnError::Invalid(format!(
            "{op}: dtype {dtype} is not a float type (f32 or f64)"
        )))
    }
}

/// A [`Generator`] seen from inside a trace ([`Generator::in_trace`]): every draw reads the
/// generator's state as a new `i64[3]` input of the traced function (fed by the `Function`
/// on each call, which then advances the generator as the eager draw would) and records
/// `random_* %state, alg=philox_state`.
///
/// Draws that fail (a bad dtype, an empty integer range) poison the trace: the `Function`
/// returns a trace error naming the op.
#[derive(Debug, Clone, Copy)]
pub struct TracedGenerator<'a> {
    gen: &'a Generator,
    anchor: &'a Tracer,
}

impl TracedGenerator<'_> {
    /// The state input of one draw of `shape` by `reader`, or the trace's error.
    fn state(&self, reader: &str, shape: &[usize]) -> Result<Tracer, Tracer> {
        let n =
            kiln_rng::num_elements(shape).map_err(|e| self.anchor.error(reader, e.to_string()))?;
        Ok(self.anchor.capture(
            TensorType::new(DType::I64, vec![3]),
            reader,
            self.gen.cell.clone(),
            n as u64,
        ))
    }

    fn random(&self, dist: RandomDist, dtype: DType, shape: &[usize]) -> Tracer {
        let reader = format!("{} (Generator)", dist.name());
        match self.state(&reader, shape) {
            Ok(s) => s.random(dist, RandomAlg::PhiloxState, dtype, shape),
            Err(poisoned) => poisoned,
        }
    }

    /// `Generator.normal(shape, dtype)` (`f32` or `f64`).
    pub fn normal(&self, shape: &[usize], dtype: DType) -> Tracer {
        self.random(RandomDist::Normal, dtype, shape)
    }

    /// `Generator.uniform(shape, dtype)` in `[0, 1)` (`f32` or `f64`).
    pub fn uniform(&self, shape: &[usize], dtype: DType) -> Tracer {
        self.random(RandomDist::Uniform, dtype, shape)
    }

    /// `Generator.truncated_normal(shape, dtype)` (`f32` or `f64`).
    pub fn truncated_normal(&self, shape: &[usize], dtype: DType) -> Tracer {
        self.random(RandomDist::TruncatedNormal, dtype, shape)
    }

    /// `Generator.uniform_full_int(shape, dtype=tf.uint32)`: raw 32-bit words.
    pub fn bits(&self, shape: &[usize]) -> Tracer {
        self.random(RandomDist::Bits, DType::U32, shape)
    }

    /// `Generator.uniform(shape, minval, maxval, dtype=tf.int32)`: TF's
    /// `UniformDistribution<int32>`, `minval + (bits mod (maxval - minval))` with one 32-bit
    /// word per element, recorded as `random_bits`, `rem`, `convert` and `add` (wrapping, as
    /// TF's). An empty range is a trace error.
    pub fn uniform_int(&self, shape: &[usize], minval: i32, maxval: i32) -> Tracer {
        if minval >= maxval {
            let e = RngError::EmptyRange {
                op: "Generator.uniform",
                minval: minval.into(),
                maxval: maxval.into(),
            };
            return self.anchor.error("random_bits (Generator)", e.to_string());
        }
        let range = (maxval as u32).wrapping_sub(minval as u32);
        let bits = self.bits(shape);
        let range = bits.lift(Tensor::splat(Scalar::U32(range), Vec::new()));
        let offset = bits.rem(&range).cast(DType::I32);
        let minval = offset.lift(Tensor::splat(Scalar::I32(minval), Vec::new()));
        &offset + &minval
    }
}
