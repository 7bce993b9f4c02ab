//! [`Function`]: the `tf.function` / `jax.jit` analogue. It wraps a Rust closure over
//! symbolic tensors, traces it once per input signature, and runs the traced graph.

use crate::error::KilnError;
use crate::generator::GeneratorCell;
use crate::session::Session;
use kiln_ir::{trace_captured, Buffer, Func, Tensor, TensorType, TraceOutputs, Tracer};
use kiln_runtime::{Placed, PlannedFunc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A static (non-tensor) argument. Its *value* is part of the signature, so a new value
/// retraces, as Python scalars do for `tf.function`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Static {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// A float, compared by its bits.
    FloatBits(u64),
}

impl Static {
    /// A float static argument.
    pub fn float(x: f64) -> Static {
        Static::FloatBits(x.to_bits())
    }

    /// The value as f64 if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Static::Int(i) => Some(*i as f64),
            Static::FloatBits(b) => Some(f64::from_bits(*b)),
            _ => None,
        }
    }
}

/// What one trace is keyed by: tensor argument types and static argument values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Dtype and shape of each tensor argument.
    pub tensors: Vec<TensorType>,
    /// Value of each static argument.
    pub statics: Vec<Static>,
}

type Body = dyn Fn(&[Tracer], &[Static]) -> Vec<Tracer> + Send + Sync;

/// A traced function with one graph per input signature.
pub struct Function {
    name: String,
    body: Box<Body>,
    traces: Mutex<HashMap<Signature, Traced>>,
    trace_count: AtomicUsize,
    session: Session,
    jit_compile: bool,
}

/// One signature's graphs: as traced, and after the pass pipeline (clustered), with the
/// generator states the graph reads (its parameters after the declared ones).
#[derive(Clone)]
struct Traced {
    graph: Arc<Func>,
    prepared: Arc<Func>,
    /// `prepared` planned once for this function's session (no plan per call).
    planned: Arc<PlannedFunc>,
    states: Arc<[StateInput]>,
}

/// One traced generator draw: which generator, and how many elements it consumes (TF's
/// `RngReadAndSkip` delta).
struct StateInput {
    cell: Arc<GeneratorCell>,
    advance: u64,
}

/// Reads the state of every draw, in trace order, advancing each generator as the eager
/// draws would; the state tensors are the graph's trailing inputs. All generators involved
/// are locked together (in address order, so concurrent calls cannot deadlock), so one call's
/// draws take one contiguous piece of each stream, as a sequence of eager draws does.
fn read_states(states: &[StateInput]) -> Vec<Tensor> {
    let mut cells: Vec<&Arc<GeneratorCell>> = states.iter().map(|s| &s.cell).collect();
    cells.sort_by_key(|c| Arc::as_ptr(c) as usize);
    cells.dedup_by(|a, b| Arc::ptr_eq(a, b));
    let mut guards: Vec<_> = cells.iter().map(|c| c.lock()).collect();
    states
        .iter()
        .map(|s| {
            let k = cells
                .iter()
                .position(|c| Arc::ptr_eq(c, &s.cell))
                .expect("every draw's generator is among the locked ones");
            let g = &mut guards[k];
            let before = g.state();
            g.read_and_skip(s.advance);
            Tensor::new([3], Buffer::I64(before.to_vec().into()))
                .expect("three words for shape [3]")
        })
        .collect()
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function(@{}, {} traces)", self.name, self.trace_count())
    }
}

impl Function {
    /// Wraps a closure over tensor arguments.
    pub fn new<O: TraceOutputs>(
        name: &str,
        f: impl Fn(&[Tracer]) -> O + Send + Sync + 'static,
    ) -> Result<Function, KilnError> {
        Function::with_static(name, move |t: &[Tracer], _: &[Static]| f(t))
    }

    /// Wraps a closure over tensor arguments and static arguments. Uses the flags in effect
    /// (`TF_XLA_FLAGS`, `XLA_FLAGS`, …); see [`Function::with_session`] to choose.
    pub fn with_static<O: TraceOutputs>(
        name: &str,
        f: impl Fn(&[Tracer], &[Static]) -> O + Send + Sync + 'static,
    ) -> Result<Function, KilnError> {
        Function::with_session(name, Session::from_env()?, f)
    }

    /// Wraps a closure running in a given session (flags, runtime and its caches).
    pub fn with_session<O: TraceOutputs>(
        name: &str,
        session: Session,
        f: impl Fn(&[Tracer], &[Static]) -> O + Send + Sync + 'static,
    ) -> Result<Function, KilnError> {
        Ok(Function {
            name: name.to_string(),
            body: Box::new(move |t, s| f(t, s).into_tracers()),
            traces: Mutex::new(HashMap::new()),
            trace_count: AtomicUsize::new(0),
            session,
            jit_compile: false,
        })
    }

    /// Marks every op of the function for compilation, like `tf.function(jit_compile=True)`:
    /// it compiles even with `--tf_xla_auto_jit=0` (only `--tf_xla_auto_jit=-1` stops it), as
    /// one manual scope, exempt from the minimum cluster size.
    pub fn jit_compile(mut self, on: bool) -> Function {
        self.jit_compile = on;
        self
    }

    /// The session this function runs in.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// How many times the closure has been traced (one per distinct signature).
    pub fn trace_count(&self) -> usize {
        self.trace_count.load(Ordering::Relaxed)
    }

    /// The traced graph for a signature, tracing it if this signature is new
    /// (`get_concrete_function` in TensorFlow). Draws from a [`crate::Generator`] add one
    /// `i64[3]` parameter each (`%state<k>`, after the declared ones), which
    /// [`Function::call`] feeds.
    pub fn graph(&self, sig: &Signature) -> Result<Arc<Func>, KilnError> {
        Ok(self.traced(sig)?.graph)
    }

    /// The graph for a signature after the pass pipeline: what actually runs, with its
    /// cluster nodes.
    pub fn prepared_graph(&self, sig: &Signature) -> Result<Arc<Func>, KilnError> {
        Ok(self.traced(sig)?.prepared)
    }

    fn traced(&self, sig: &Signature) -> Result<Traced, KilnError> {
        let mut traces = self.traces.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = traces.get(sig) {
            return Ok(t.clone());
        }
        let (func, captures) = trace_captured(&self.name, &sig.tensors, self.jit_compile, |t| {
            (self.body)(t, &sig.statics)
        })?;
        let mut states = Vec::with_capacity(captures.len());
        for (k, c) in captures.into_iter().enumerate() {
            let cell = c.source.downcast::<GeneratorCell>().map_err(|_| {
                KilnError::Invalid(format!(
                    "{}: reads external state Function cannot feed (only kiln::Generator's)",
                    c.reader
                ))
            })?;
            if c.param != sig.tensors.len() + k {
                return Err(KilnError::Invalid(format!(
                    "{}: generator state is parameter {} of @{}, expected {}",
                    c.reader,
                    c.param,
                    self.name,
                    sig.tensors.len() + k
                )));
            }
            // TF: "Random ops require a seed to be set when determinism is enabled."
            kiln_rng::require_seeded(&c.reader, cell.seeded(), self.session.deterministic_ops())?;
            states.push(StateInput {
                cell,
                advance: c.advance,
            });
        }
        self.trace_count.fetch_add(1, Ordering::Relaxed);
        let mut prepared = func.clone();
        self.session.prepare(&mut prepared)?;
        let prepared = Arc::new(prepared);
        let t = Traced {
            graph: Arc::new(func),
            planned: Arc::new(self.session.plan(prepared.clone())),
            prepared,
            states: states.into(),
        };
        traces.insert(sig.clone(), t.clone());
        Ok(t)
    }

    /// Calls the function on tensors.
    pub fn call(&self, args: &[Tensor]) -> Result<Vec<Tensor>, KilnError> {
        self.call_static(args, &[])
    }

    /// Calls the function on placed values ([`Session::place`], or the results of an
    /// earlier call) and leaves the results where the graph produced them: on a GPU,
    /// values computed by compiled clusters stay on the device, so a loop of calls (a
    /// training step feeding the next) copies nothing between calls, as with `jax.jit` on
    /// committed arrays. [`Session::fetch`] copies a result to the host.
    pub fn call_placed(&self, args: &[Placed]) -> Result<Vec<Placed>, KilnError> {
        self.call_placed_static(args, &[])
    }

    /// [`Function::call_placed`] with static arguments, which are part of the signature as in
    /// [`Function::call_static`] (`jax.jit` with `static_argnums` on committed arrays).
    pub fn call_placed_static(
        &self,
        args: &[Placed],
        statics: &[Static],
    ) -> Result<Vec<Placed>, KilnError> {
        let sig = Signature {
            tensors: args.iter().map(Placed::ty).collect(),
            statics: statics.to_vec(),
        };
        let t = self.traced(&sig)?;
        let mut all = args.to_vec();
        all.extend(read_states(&t.states).into_iter().map(Placed::Host));
        Ok(self
            .session
            .runtime()
            .run_planned_placed(&t.planned, &all)?)
    }

    /// Calls the function on tensors and static arguments.
    pub fn call_static(
        &self,
        args: &[Tensor],
        statics: &[Static],
    ) -> Result<Vec<Tensor>, KilnError> {
        let sig = Signature {
            tensors: args.iter().map(Tensor::ty).collect(),
            statics: statics.to_vec(),
        };
        let t = self.traced(&sig)?;
        // As TF's `RngReadAndSkip`, the generators advance when the call reads them, even if
        // a later op fails.
        let states = read_states(&t.states);
        let refs: Vec<&Tensor> = args.iter().chain(&states).collect();
        self.session.run_planned(&t.planned, &refs)
    }
}
