//! Times one real program ([`crate::program_dir::Program`]) the way the built-in workloads
//! are timed: a `fallback` mode (clusters formed, never compiled) and a `cpu` mode (the
//! user's flags and compile policy) run interleaved, summarised by [`crate::stats`].
//!
//! Before anything is timed the answers are checked: the fallback's against the program's
//! `ref<i>.npy` within its tolerance, and the compiled run's against the fallback's bit for
//! bit, both on the first result and after the policy has compiled.
//!
//! Each mode's `first_call_ms` is the time to the first result from the program's text in a
//! fresh [`kiln::Session`]: import, verification, passes and clustering, and the run (in the
//! `cpu` mode with `--tf_xla_enable_lazy_compilation=false`, so every cluster compiles at
//! that first call: `compile_ms` and the cluster counts are that session's). That is what
//! XLA's compile + first run is compared with (`benches/anchors/xla_programs.py`).

use crate::harness::WARM_CALLS;
use crate::probe::Bandwidth;
use crate::program_dir::{import, Program};
use crate::reference::check_bits;
use crate::report::Record;
use crate::stats::summarize;
use crate::BenchError;
use kiln::{Device, PlannedFunc, Session};
use kiln_flags::{AmpDtype, Flags};
use kiln_ir::Tensor;
use std::time::{Duration, Instant};

/// The `size` of every program record (programs have one size: their own). Anchors for
/// programs carry it too.
pub const PROGRAM_SIZE: &str = "program";

/// The committed programs the default `kiln bench` also times under the mixed precision
/// rewrite (f16 and bf16): the MLP and the transformer the mixed precision issue names.
pub const DEFAULT_AMP_PROGRAMS: &[&str] = &["flax_mlp", "flax_transformer"];

/// How long to time each program.
#[derive(Debug, Clone, Copy)]
pub struct ProgramBudget {
    /// Wall time the warm repetitions aim for (both modes together).
    pub budget: Duration,
    /// Fewest and most warm repetitions per mode.
    pub reps: (usize, usize),
}

impl Default for ProgramBudget {
    /// One second and 5 to 1000 repetitions: real programs run for microseconds to a few
    /// milliseconds, so the median settles in far fewer seconds than the large built-in
    /// workloads need, and 17 of them fit in the default run's time.
    fn default() -> ProgramBudget {
        ProgramBudget {
            budget: Duration::from_secs(1),
            reps: (5, 1000),
        }
    }
}

/// One mode's first result in a fresh session.
struct First {
    ms: f64,
    outputs: Vec<Tensor>,
    stats: Counts,
}

/// What a session's runtime counted over its clusters.
#[derive(Default, Clone, Copy)]
struct Counts {
    compile_ms: f64,
    clusters: usize,
    compiled_clusters: usize,
    compile_failures: u64,
    compiles: u64,
    cache_hits: u64,
    compiled_runs: u64,
}

fn counts(s: &Session) -> Counts {
    let stats = s.runtime().stats();
    Counts {
        // `0.0 +`: an empty float sum is -0.0, printed "-0.00".
        compile_ms: 0.0
            + stats
                .values()
                .map(|c| c.compile_time.as_secs_f64() * 1e3)
                .sum::<f64>(),
        clusters: stats.len(),
        compiled_clusters: stats.values().filter(|c| c.compiled_runs > 0).count(),
        compile_failures: stats.values().map(|c| c.compile_failures).sum(),
        compiles: stats.values().map(|c| c.compiles).sum(),
        cache_hits: stats.values().map(|c| c.memory_hits + c.disk_hits).sum(),
        compiled_runs: stats.values().map(|c| c.compiled_runs).sum(),
    }
}

/// The fallback mode's flags: clusters are formed as the user's flags say, never compiled.
fn fallback_flags(flags: &Flags) -> Flags {
    let mut f = flags.clone();
    f.always_defer_compilation = true;
    f
}

/// From the text to the first result in a fresh session with `flags`.
fn first_result(p: &Program, flags: &Flags) -> Result<First, BenchError> {
    let t = Instant::now();
    let module = import(&p.source, &p.model)?;
    let mut func = module
        .entry()
        .cloned()
        .ok_or_else(|| BenchError::Invalid(format!("{}: no function", p.model.display())))?;
    let session = Session::with_device(flags, Device::Cpu)?;
    session.prepare(&mut func)?;
    let outputs = session.run(&func, &p.inputs)?;
    session.runtime().wait_for_compiles();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(First {
        ms,
        outputs,
        stats: counts(&session),
    })
}

/// A session with its prepared function, planned once as `Function`, `kiln.jit` and
/// `kiln run --repeat` plan it, for the warm repetitions.
struct Mode {
    name: &'static str,
    session: Session,
    func: PlannedFunc,
    samples: Vec<f64>,
}

impl Mode {
    fn new(name: &'static str, p: &Program, flags: &Flags) -> Result<Mode, BenchError> {
        let session = Session::with_device(flags, Device::Cpu)?;
        let mut func = p.func.clone();
        session.prepare(&mut func)?;
        let func = session.plan(std::sync::Arc::new(func));
        Ok(Mode {
            name,
            session,
            func,
            samples: Vec::new(),
        })
    }

    /// One timed call: milliseconds and the outputs.
    fn call(&self, inputs: &[Tensor]) -> Result<(f64, Vec<Tensor>), BenchError> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let t = Instant::now();
        let out = self.session.run_planned(&self.func, &refs)?;
        Ok((t.elapsed().as_secs_f64() * 1e3, out))
    }
}

fn mismatch(name: &str, mode: &str, detail: String) -> BenchError {
    BenchError::Mismatch {
        workload: name.into(),
        mode: mode.into(),
        detail,
    }
}

/// The record name of program `program` timed with TensorFlow's automatic mixed precision
/// rewrite converting to `dtype` (`kiln bench --amp`): `flax_mlp+amp_f16`.
pub fn amp_name(program: &str, dtype: AmpDtype) -> String {
    format!("{program}{AMP_MARK}{}", dtype.name())
}

const AMP_MARK: &str = "+amp_";

/// The program and dtype name an [`amp_name`] names; `None` for a plain program's name.
pub fn amp_variant(name: &str) -> Option<(&str, &str)> {
    name.rsplit_once(AMP_MARK)
}

/// `flags` with the automatic mixed precision rewrite on, converting to `dtype`.
fn amp_flags(flags: &Flags, dtype: AmpDtype) -> Flags {
    let mut f = flags.clone();
    f.mixed_precision.graph_rewrite = true;
    f.mixed_precision.dtype = dtype;
    f
}

/// How far `outputs` are from the program's references: the largest relative error
/// ([`crate::Tolerance::check`]'s measure), an error when beyond the program's tolerance.
/// Under the mixed precision rewrite the outputs are the program's f32 outputs computed
/// partly in 16 bits, so the error is measured, not bounded: float outputs with no limit,
/// other outputs (an argmax that rounding can move) not compared.
fn ref_error(p: &Program, outputs: &[Tensor], amp: bool) -> Result<Option<f64>, String> {
    if p.refs.is_empty() {
        return Ok(None);
    }
    let tolerance = if amp {
        let mut t = p.tolerance.clone();
        t.rel = f64::INFINITY;
        t.unchecked
            .extend((0..p.refs.len()).filter(|&k| !p.refs[k].dtype().is_float()));
        t
    } else {
        p.tolerance.clone()
    };
    tolerance
        .check(outputs, &p.refs)
        .map(Some)
        .map_err(|e| format!("against ref<i>.npy: {e}"))
}

/// Checks and times `p` (with the mixed precision rewrite to `amp` when given); returns its
/// `fallback` and `cpu` records, named `p.name` (or [`amp_name`]).
pub fn bench_program(
    p: &Program,
    amp: Option<AmpDtype>,
    budget: ProgramBudget,
    flags: &Flags,
    bw: Bandwidth,
) -> Result<Vec<Record>, BenchError> {
    let (name, flags) = match amp {
        Some(d) => (amp_name(&p.name, d), amp_flags(flags, d)),
        None => (p.name.clone(), flags.clone()),
    };
    let flags = &flags;
    let fb_flags = fallback_flags(flags);
    let mut eager = flags.clone();
    eager.lazy_compilation = false;
    eager.always_defer_compilation = false;
    let fb_first = first_result(p, &fb_flags)?;
    let cpu_first = first_result(p, &eager)?;
    let ref_error = ref_error(p, &fb_first.outputs, amp.is_some())
        .map_err(|e| mismatch(&name, "fallback", e))?;
    check_bits(&cpu_first.outputs, &fb_first.outputs)
        .map_err(|e| mismatch(&name, "cpu", format!("first call: {e}")))?;

    let mut modes = [
        Mode::new("fallback", p, &fb_flags)?,
        Mode::new("cpu", p, flags)?,
    ];
    // Warm up until the policy has compiled what it will (lazy: the third run compiles),
    // then check the compiled answer once more.
    let mut per_rep = 0.0;
    let mut warm = Vec::new();
    for m in &modes {
        for _ in 0..3 {
            m.call(&p.inputs)?;
        }
        m.session.runtime().wait_for_compiles();
        let (ms, out) = m.call(&p.inputs)?;
        per_rep += ms;
        warm.push(out);
    }
    check_bits(&warm[1], &warm[0]).map_err(|e| mismatch(&name, "cpu", e))?;
    // Each sample: the mode's timed call after `WARM_CALLS` untimed ones, as for the
    // built-in workloads (`crate::harness::WARM_CALLS`): the anchors time XLA in a loop of
    // its own, not after another mode's call.
    let per_rep = per_rep * (1 + WARM_CALLS) as f64;
    let reps = ((budget.budget.as_secs_f64() * 1e3 / per_rep.max(1e-3)) as usize)
        .clamp(budget.reps.0, budget.reps.1);
    for _ in 0..reps {
        for m in modes.iter_mut() {
            for _ in 0..WARM_CALLS {
                m.call(&p.inputs)?;
            }
            let (ms, _) = m.call(&p.inputs)?;
            m.samples.push(ms);
        }
    }
    let bytes: usize = p
        .inputs
        .iter()
        .chain(&fb_first.outputs)
        .map(|t| t.num_elements() * t.dtype().size_bytes())
        .sum();
    let fb_median = summarize(&modes[0].samples).map(|s| s.median_ms);
    let mut out = Vec::new();
    for (m, first) in modes.iter().zip([&fb_first, &cpu_first]) {
        let s = summarize(&m.samples).ok_or_else(|| BenchError::Invalid("no samples".into()))?;
        let warm = counts(&m.session);
        let gbps = bytes as f64 / (s.median_ms / 1e3) / 1e9;
        out.push(Record {
            workload: name.clone(),
            size: PROGRAM_SIZE.into(),
            mode: m.name.into(),
            median_ms: s.median_ms,
            min_ms: s.min_ms,
            max_ms: s.max_ms,
            reps: s.reps,
            first_call_ms: first.ms,
            compile_ms: first.stats.compile_ms,
            clusters: first.stats.clusters,
            compiled_clusters: first.stats.compiled_clusters,
            compile_failures: first.stats.compile_failures,
            compiles: first.stats.compiles,
            cache_hits: warm.cache_hits,
            compiled_runs: warm.compiled_runs,
            gbps,
            bw_pct: 100.0 * gbps * 1e9 / bw.best(),
            speedup: fb_median.map(|f| f / s.median_ms),
            pipelined_ms: None,
            pipelined_bw_pct: None,
            // The compiled outputs equal the fallback's bit for bit (checked above).
            ref_error,
            note: match amp {
                Some(d) => format!(
                    "TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE=1 --kiln_amp_dtype={}",
                    d.name()
                ),
                None => String::new(),
            },
        });
    }
    Ok(out)
}
