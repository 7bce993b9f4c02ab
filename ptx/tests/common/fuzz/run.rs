//! Runs one fuzzed function on every backend and compares with the interpreter, bit for bit
//! (NaN equals NaN): compiled CPU code at 1, 2 and 7 threads (and at 7 with all math
//! emitted by Cranelift), and the emitted PTX in the simulator (the lowered program and the
//! GPU's split form, two launch shapes each; one for big programs). Matrix products are
//! compared bit for bit too: the CPU backend calls the interpreter's GEMM, and the simulator
//! runs them through it (`common::programs::simulate`).

use super::recipe::{build, Recipe};
use crate::common::programs::{cluster, random_tensor, same, simulate, Launch};
use crate::common::Rng;
use kiln_compiler::cpu::{compile_cluster, CpuCompileError, CpuOptions};
use kiln_compiler::kernel::Program;
use kiln_compiler::lower::{lower_cluster, LowerError};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Cluster, DType, Tensor, TensorType};
use kiln_ptx::emit::{emit_program, gpu_program, EmitError, Mapping, PtxProgram};
use kiln_ptx::Target;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A backend compared with the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Compiled CPU code run on this many threads.
    Cpu(usize),
    /// Compiled CPU code on this many threads with every math function emitted by
    /// Cranelift (`wide_math` off: no block math through the interpreter's build).
    CpuEmittedMath(usize),
    /// The emitted PTX, run by the simulator.
    Ptx,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Cpu(t) => write!(
                f,
                "compiled CPU, {t} thread{}",
                if *t == 1 { "" } else { "s" }
            ),
            Backend::CpuEmittedMath(t) => write!(f, "compiled CPU, math emitted, {t} threads"),
            Backend::Ptx => f.write_str("PTX simulator"),
        }
    }
}

/// Every backend, in the order they are tried.
pub const ALL: [Backend; 5] = [
    Backend::Cpu(1),
    Backend::Cpu(2),
    Backend::Cpu(7),
    Backend::CpuEmittedMath(7),
    Backend::Ptx,
];

/// How a backend failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    /// Ran, and returned other bits than the interpreter.
    Mismatch,
    /// Refused with an error that is not `Unsupported` (a failed compile, a run error, an
    /// invalid simulated launch or write count).
    Error,
    /// Panicked.
    Panic,
}

/// A backend disagreeing with the interpreter.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Which backend.
    pub backend: Backend,
    /// How.
    pub kind: FailKind,
    /// The first differing element, or the error.
    pub detail: String,
}

impl Failure {
    /// The same failure, for the shrinker: same backend, same kind.
    pub fn same_way(&self, other: &Failure) -> bool {
        self.backend == other.backend && self.kind == other.kind
    }
}

/// What ran for one program.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The interpreter refused the program (nothing compared).
    pub interp_refused: Option<String>,
    /// CPU code was compiled and compared.
    pub cpu: bool,
    /// Why the CPU backend skipped (`Unsupported`).
    pub cpu_skip: Option<String>,
    /// PTX was emitted and simulated.
    pub ptx: bool,
    /// Why PTX was skipped (lowering or emitter `Unsupported`, or the simulator refused).
    pub ptx_skip: Option<String>,
    /// Forms of the lowered program worth counting (split for the GPU, row-fused, with
    /// matrix products, a kernel over more than one CPU task's elements).
    pub forms: Vec<&'static str>,
    /// Seconds spent compiling and running CPU code, and emitting and simulating PTX.
    pub seconds: [f64; 2],
}

/// Elements of work above which the CPU backend splits a kernel into several tasks
/// (`compiler/src/cranelift/schedule.rs`, `TASK_ELEMS`).
const CPU_TASK_ELEMS: usize = 1 << 15;

/// Programs whose buffers all have at most this many elements are simulated under two
/// launch shapes (the suggested one and a small fixed grid); larger ones under one.
const SIMULATE_TWICE_UP_TO: usize = 4096;

/// The most lane-steps ([`sim_work`]) a simulated program may take; larger ones are skipped
/// (the simulator runs some 10^6 lane-steps a second in the test profile).
const SIM_WORK_BUDGET: u64 = 120_000;

/// About how many lane-steps simulating `ptx` takes: a lane per point, a warp per reduced
/// point (each lane its share of the elements), a warp per fused row.
fn sim_work(p: &Program, ptx: &PtxProgram) -> u64 {
    let row_elems = |rows: u64| {
        let all: u64 = p
            .kernels
            .iter()
            .map(|k| (k.points() * k.reduce.as_ref().map_or(1, |r| r.len.max(1))) as u64)
            .sum();
        all / rows.max(1)
    };
    ptx.fills
        .iter()
        .chain(&ptx.kernels)
        .map(|k| match k.mapping {
            Mapping::Pointwise { points } => points,
            Mapping::WarpPerPoint { points, len } => points * len.max(32),
            Mapping::WarpPerRow { rows, .. } => rows * row_elems(rows).max(32),
        })
        .sum()
}

/// Inputs for `params`: from the recipe's seed, specials included unless it is finite-only.
pub fn inputs(params: &[TensorType], seed: u64, finite: bool) -> Vec<Tensor> {
    let mut r = Rng(seed | 1);
    params
        .iter()
        .map(|t| {
            let n = t.num_elements();
            let mut value = || ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0) as f32;
            let data = match (finite, t.dtype) {
                (true, DType::F32) => Buffer::F32((0..n).map(|_| value()).collect()),
                (true, DType::F64) => {
                    Buffer::F64((0..n).map(|_| f64::from(value()) * 1.000_000_1).collect())
                }
                (true, DType::F16) => {
                    Buffer::F16((0..n).map(|_| kiln_ir::f16::from_f32(value())).collect())
                }
                (true, DType::Bf16) => {
                    Buffer::Bf16((0..n).map(|_| kiln_ir::bf16::from_f32(value())).collect())
                }
                _ => return random_tensor(t, &mut r),
            };
            Tensor::new(t.shape.clone(), data).expect("sizes match")
        })
        .collect()
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The first element where `got` differs from the interpreter's `want`, described.
pub fn difference(got: &[Tensor], want: &[Tensor]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{} outputs, the interpreter has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.ty() != w.ty() {
            return Some(format!(
                "output {i} is {}, the interpreter's {}",
                g.ty(),
                w.ty()
            ));
        }
        let n = g.num_elements();
        let differs = |k: usize| !same(g.data().get(k), w.data().get(k));
        if let Some(k) = (0..n).find(|&k| differs(k)) {
            let bad = (0..n).filter(|&k| differs(k)).count();
            let mut index = Vec::new();
            let mut rest = k;
            for &d in w.shape().iter().rev() {
                index.push(rest % d);
                rest /= d;
            }
            index.reverse();
            return Some(format!(
                "output {i} ({}): {bad} of {n} elements differ; first at {index:?} (flat {k}): got {:?}, interpreter {:?}",
                w.ty(),
                g.data().get(k),
                w.data().get(k)
            ));
        }
    }
    None
}

fn sm80() -> Target {
    Target::from_sm(80).expect("sm_80 is in the table")
}

/// What one backend did.
enum Ran {
    /// Outputs to compare.
    Outputs(Vec<Tensor>),
    /// Skipped, and why.
    Skipped(String),
}

type CpuResult = Result<Ran, (FailKind, String)>;

/// Compiles and runs on the CPU at `threads`.
fn run_cpu(c: &Cluster, inputs: &[Tensor], threads: usize, wide_math: bool) -> CpuResult {
    let opts = CpuOptions {
        threads,
        wide_math,
        ..CpuOptions::default()
    };
    let exe = match catch_unwind(AssertUnwindSafe(|| compile_cluster(c, &opts))) {
        Ok(Ok(e)) => e,
        Ok(Err(CpuCompileError::Unsupported(r))) => return Ok(Ran::Skipped(r)),
        Ok(Err(e)) => return Err((FailKind::Error, e.to_string())),
        Err(p) => {
            return Err((
                FailKind::Panic,
                format!("compile panicked: {}", panic_text(p)),
            ))
        }
    };
    let refs: Vec<&Tensor> = inputs.iter().collect();
    match catch_unwind(AssertUnwindSafe(|| exe.run(&refs))) {
        Ok(Ok(out)) => Ok(Ran::Outputs(out)),
        Ok(Err(e)) => Err((FailKind::Error, format!("run failed: {e}"))),
        Err(p) => Err((FailKind::Panic, format!("run panicked: {}", panic_text(p)))),
    }
}

/// Lowers, emits and simulates: the lowered program and (where it differs) the GPU's form
/// with long reductions split, each under the suggested launch and a fixed small grid. Every
/// result must equal `want`.
fn run_ptx(
    c: &Cluster,
    inputs: &[Tensor],
    want: &[Tensor],
    forms: &mut Vec<&'static str>,
) -> Result<Option<String>, (FailKind, String)> {
    let emitted = catch_unwind(AssertUnwindSafe(|| {
        let p = match lower_cluster(c) {
            Ok(p) => p,
            Err(LowerError::Unsupported(r)) => return Ok(Err(format!("lowering: {r}"))),
        };
        let work = |k: &kiln_compiler::kernel::Kernel| {
            k.points() * k.reduce.as_ref().map_or(1, |r| r.len.max(1))
        };
        if p.kernels.iter().any(|k| work(k) > CPU_TASK_ELEMS) {
            forms.push("a kernel of several CPU tasks");
        }
        if !p.dots.is_empty() {
            forms.push("matrix products");
        }
        let split = gpu_program(&p).map_err(|e| (FailKind::Error, e.to_string()))?;
        if split != p {
            forms.push("split for the GPU");
        }
        let programs = if split == p { vec![p] } else { vec![p, split] };
        let mut out = Vec::new();
        for p in programs {
            match emit_program(&p, sm80()) {
                Ok(ptx) => out.push((p, ptx)),
                Err(EmitError::Unsupported { reason, .. }) => {
                    return Ok(Err(format!("emitter: {reason}")))
                }
                Err(e) => return Err((FailKind::Error, e.to_string())),
            }
        }
        Ok(Ok(out))
    }));
    let programs = match emitted {
        Ok(Ok(Ok(v))) => v,
        Ok(Ok(Err(skip))) => return Ok(Some(skip)),
        Ok(Err(e)) => return Err(e),
        Err(p) => {
            return Err((
                FailKind::Panic,
                format!("lowering or emission panicked: {}", panic_text(p)),
            ))
        }
    };
    if programs[0].1.kernels.len() == 1 && programs[0].0.kernels.len() > 1 {
        forms.push("row-fused");
    }
    if let Some(w) = programs
        .iter()
        .map(|(p, ptx)| sim_work(p, ptx))
        .find(|&w| w > SIM_WORK_BUDGET)
    {
        return Ok(Some(format!("too large to simulate ({w} lane-steps)")));
    }
    for (i, (p, ptx)) in programs.iter().enumerate() {
        let form = if i == 0 {
            "lowered"
        } else {
            "split for the GPU"
        };
        // Big programs under the suggested launch only: simulating them is what costs.
        let big = (p.inputs.iter().chain(&p.outputs).chain(&p.temps))
            .any(|t| t.num_elements() > SIMULATE_TWICE_UP_TO);
        let launches: &[Launch] = match big {
            true => &[Launch::Suggested],
            false => &[Launch::Suggested, Launch::Fixed(3, 64)],
        };
        for &launch in launches {
            let got = match catch_unwind(AssertUnwindSafe(|| simulate(p, ptx, inputs, launch))) {
                Ok(Ok(got)) => got,
                Ok(Err(e)) => {
                    return Err((FailKind::Error, format!("{form} program, {launch:?}: {e}")))
                }
                // The simulator has no semantics for something the emitter wrote.
                Err(e) => return Ok(Some(format!("simulator: {}", panic_text(e)))),
            };
            if let Some(d) = difference(&got, want) {
                return Err((
                    FailKind::Mismatch,
                    format!(
                        "{form} program, {launch:?}: {d}\n{}",
                        kiln_compiler::kernel::print_program(p)
                    ),
                ));
            }
        }
    }
    Ok(None)
}

/// Runs `src` on `inputs` with each of `backends`, stopping at the first that disagrees
/// with the interpreter.
pub fn check_text(src: &str, inputs: &[Tensor], backends: &[Backend]) -> Result<Report, Failure> {
    let mut report = Report::default();
    let c = cluster(src)
        .unwrap_or_else(|e| panic!("the generator wrote an invalid function: {e}\n{src}"));
    let want = match Interpreter::new(1).expect("pool").run(&c.body, inputs) {
        Ok(w) => w,
        Err(e) => {
            report.interp_refused = Some(e.to_string());
            return Ok(report);
        }
    };
    let fail = |backend, (kind, detail)| Failure {
        backend,
        kind,
        detail,
    };
    for &b in backends {
        let start = std::time::Instant::now();
        let slot = usize::from(b == Backend::Ptx);
        match b {
            // `Unsupported` does not depend on the thread count.
            Backend::Cpu(_) | Backend::CpuEmittedMath(_) if report.cpu_skip.is_some() => {}
            Backend::Cpu(t) | Backend::CpuEmittedMath(t) => {
                match run_cpu(&c, inputs, t, matches!(b, Backend::Cpu(_)))
                    .map_err(|e| fail(b, e))?
                {
                    Ran::Skipped(r) => {
                        report.cpu_skip = Some(r);
                    }
                    Ran::Outputs(got) => {
                        if let Some(d) = difference(&got, &want) {
                            return Err(fail(b, (FailKind::Mismatch, d)));
                        }
                        report.cpu = true;
                    }
                }
            }
            Backend::Ptx => {
                match run_ptx(&c, inputs, &want, &mut report.forms).map_err(|e| fail(b, e))? {
                    Some(skip) => report.ptx_skip = Some(skip),
                    None => report.ptx = true,
                }
            }
        }
        report.seconds[slot] += start.elapsed().as_secs_f64();
    }
    Ok(report)
}

/// Builds `r` and checks it on `backends`. `None` when the recipe does not build.
pub fn check_recipe(r: &Recipe, backends: &[Backend]) -> Option<Result<Report, Failure>> {
    let built = build(r).ok()?;
    let inputs = inputs(&built.params, r.seed, r.finite);
    Some(check_text(&built.text, &inputs, backends))
}
