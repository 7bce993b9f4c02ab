//! Runs the workloads in every mode, interleaved, after checking each compiled answer
//! against the fallback's. Modes: `fallback` (a runtime that never compiles, i.e.
//! `--tf_xla_always_defer_compilation`), `cpu` (the Cranelift backend with the user's flags
//! and compile policy), and `gpu` (the runtime's GPU backend) when [`BenchOptions::gpu`] is
//! set; without a GPU it is reported as unavailable rather than faked.

use crate::probe::{probe, Bandwidth};
use crate::program_bench::{bench_program, ProgramBudget};
use crate::program_dir::Program;
pub use crate::report::BenchReport;
use crate::report::Record;
use crate::stats::summarize;
use crate::workloads::{build, Agreement, Body, Call, Size, Workload};
use crate::BenchError;
use kiln_compiler::{run_pipeline, Options};
use kiln_flags::{AmpDtype, Flags};
use kiln_ir::Tensor;
use kiln_runtime::{
    Backend, CpuBackend, GpuBackend, Placed, PolicyConfig, Runtime, RuntimeOptions,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Problem size.
    pub size: Size,
    /// Workload names, in order (see [`crate::parse_workloads`]).
    pub workloads: Vec<&'static str>,
    /// Wall time the warm repetitions of one workload aim for (all modes together).
    pub budget: Duration,
    /// Fewest and most warm repetitions per mode.
    pub reps: (usize, usize),
    /// Draw a progress bar on stderr (hidden anyway when stderr is not a terminal).
    pub progress: bool,
    /// Also run every workload in a `gpu` mode on this backend (`None`: no GPU).
    pub gpu: Option<Arc<GpuBackend>>,
    /// Real programs to check and time after the workloads (`kiln bench --programs`), on
    /// the CPU (fallback and compiled).
    pub programs: Vec<Program>,
    /// How long to time each program.
    pub program_budget: ProgramBudget,
    /// Also time programs with TensorFlow's automatic mixed precision rewrite to each of
    /// these types (`kiln bench --amp`), as rows `<program>+amp_<dtype>` beside the f32 row.
    pub amp: Vec<AmpDtype>,
    /// The programs [`BenchOptions::amp`] applies to; `None`: every program.
    pub amp_programs: Option<Vec<String>>,
}

impl BenchOptions {
    /// The defaults of `kiln bench` at `size` for all workloads.
    pub fn new(size: Size) -> BenchOptions {
        BenchOptions {
            size,
            workloads: crate::WORKLOADS.to_vec(),
            budget: Duration::from_secs(6),
            reps: (3, 25),
            progress: true,
            gpu: None,
            programs: Vec::new(),
            program_budget: ProgramBudget::default(),
            amp: Vec::new(),
            amp_programs: None,
        }
    }
}

impl BenchOptions {
    /// The mixed precision types program `p` is also timed with.
    fn amp_dtypes(&self, p: &Program) -> &[AmpDtype] {
        match &self.amp_programs {
            Some(names) if !names.contains(&p.name) => &[],
            _ => &self.amp,
        }
    }
}

/// Runs the benchmark.
pub fn run_bench(opts: &BenchOptions, flags: &Flags) -> Result<BenchReport, BenchError> {
    let threads = flags.cpu_threads();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| BenchError::Invalid(format!("thread pool: {e}")))?;
    let bar = progress_bar(opts);
    bar.set_message("memory bandwidth probe");
    let bandwidth = probe(&pool, 1 << 24, 5);
    let mut report = BenchReport {
        bandwidth,
        threads,
        records: Vec::new(),
        notes: vec!["gpu: not available (no GPU backend/driver)".into()],
    };
    // The GPU's own bandwidth yardstick: a large device-to-device copy.
    let mut gpu_bw = 0.0;
    if let Some(g) = &opts.gpu {
        bar.set_message("GPU copy bandwidth probe");
        gpu_bw = g
            .gpu()
            .copy_bandwidth(1 << 28, 10)
            .map_err(|e| BenchError::Invalid(format!("GPU bandwidth probe: {e}")))?
            * 1e9;
        report.notes = vec![format!(
            "gpu: {}; device copy bandwidth {:.1} GB/s (the gpu rows' % column is relative to it); \
             arguments are placed on the device once (in copies covering twice the L2 cache, \
             used in turn, so inputs come from DRAM) and results left there, as with \
             jax.device_put and block_until_ready, so host<->device copies are not timed",
            g.describe(),
            gpu_bw / 1e9
        )];
    }
    for name in &opts.workloads {
        bar.set_message(format!("{name} ({})", opts.size.name()));
        let mut w = build(name, opts.size).map_err(BenchError::Invalid)?;
        cluster(&mut w, flags)?;
        let recs = bench_graph(&w, opts, flags, bandwidth, gpu_bw)?;
        report.records.extend(recs);
        bar.inc(1);
    }
    for p in &opts.programs {
        bar.set_message(p.name.clone());
        let recs = bench_program(p, None, opts.program_budget, flags, bandwidth)?;
        report.records.extend(recs);
        for &d in opts.amp_dtypes(p) {
            bar.set_message(crate::program_bench::amp_name(&p.name, d));
            let recs = bench_program(p, Some(d), opts.program_budget, flags, bandwidth)?;
            report.records.extend(recs);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(report)
}

fn progress_bar(opts: &BenchOptions) -> indicatif::ProgressBar {
    if !opts.progress {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new((opts.workloads.len() + opts.programs.len()) as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Runs the pass pipeline (and so auto-clustering) with the user's flags on every call.
fn cluster(w: &mut Workload, flags: &Flags) -> Result<(), BenchError> {
    let opts = Options::from_flags(flags);
    let calls: Vec<&mut Call> = match &mut w.body {
        Body::Graph(c) => vec![c],
        Body::Sequence(cs) => cs.iter_mut().collect(),
    };
    for c in calls {
        run_pipeline(&mut c.func, &opts)?;
    }
    Ok(())
}

fn calls_of(w: &Workload) -> Vec<&Call> {
    match &w.body {
        Body::Graph(c) => vec![c],
        Body::Sequence(cs) => cs.iter().collect(),
    }
}

/// The `gpu` mode's pipelined measurement ([`steady_state`]): how long the device is kept
/// busy before timing, so its clocks have left the idle state the host modes left it in.
const WARM: Duration = Duration::from_millis(20);
/// The device time each timed burst of rounds aims for.
const BURST: Duration = Duration::from_millis(2);
/// Timed bursts; the record keeps their median time per round.
const BURSTS: usize = 7;

/// Untimed rounds a `gpu` sample runs back to back (one wait) before its timed round: the
/// host modes before it leave the GPU idle long enough for its clocks to drop, and one
/// call at idle clocks measures the clock ramp, not the kernels (`jax.jit`'s per-call
/// anchors are taken in a warm loop too).
const WARM_ROUNDS: usize = 16;

/// Runs every call once; returns the wall time (ms) and each call's outputs. A mode with
/// placed arguments runs on them (after [`WARM_ROUNDS`] untimed rounds, each round on the
/// next copy of the arguments) and waits for the device before the clock stops; its outputs
/// stay where the graph left them.
fn run_once(m: &mut Mode, calls: &[&Call]) -> Result<(f64, Vec<Vec<Placed>>), BenchError> {
    let mut outs = Vec::with_capacity(calls.len());
    if !m.placed.is_empty() {
        for _ in 0..WARM_ROUNDS {
            m.round(calls)?;
        }
        m.rt.synchronize()?;
        let t = Instant::now();
        let i = m.next_copy();
        for (c, a) in calls.iter().zip(&m.placed[i]) {
            outs.push(m.rt.run_placed(&c.func, a)?);
        }
        m.rt.synchronize()?;
        return Ok((t.elapsed().as_secs_f64() * 1e3, outs));
    }
    let t = Instant::now();
    for c in calls {
        outs.push(
            m.rt.run(&c.func, &c.args)?
                .into_iter()
                .map(Placed::Host)
                .collect(),
        );
    }
    Ok((t.elapsed().as_secs_f64() * 1e3, outs))
}

/// Untimed calls of a host mode before each timed one (see `warm_sample`).
pub const WARM_CALLS: usize = 2;

/// One timed call of `m` right after [`WARM_CALLS`] untimed ones of the same mode (host
/// modes; a mode with placed arguments warms itself in [`run_once`]). Modes are
/// interleaved so that a busy machine's drift spreads over all of them, but then every
/// call would start with the caches full of the other mode's data: a fallback call streams
/// hundreds of MiB through the last-level cache. The anchors
/// (`benches/anchors/xla_anchor.py`) time `jax.jit` and `tf.function` in a loop of their
/// own, each call after the same function's calls, as a user's loop runs; this measures
/// Kiln's modes under the same condition. One untimed call was not enough (2-core Xeon,
/// layer norm 4096x1024, compiled: 1.03 ms per call in a loop of its own; after a fallback
/// call and one untimed call 1.22 ms, after two 1.01 ms).
fn warm_sample(m: &mut Mode, calls: &[&Call]) -> Result<f64, BenchError> {
    if m.placed.is_empty() {
        for _ in 0..WARM_CALLS {
            run_once(m, calls)?;
        }
    }
    Ok(run_once(m, calls)?.0)
}

/// Milliseconds per round of `m` (a mode with placed arguments) when rounds run back to
/// back and the host waits only at the end of each burst, as in a training loop: first the
/// device is kept busy for [`WARM`], then [`BURSTS`] bursts of as many rounds as fill
/// [`BURST`] (at least 16) are timed, each to its final wait.
fn steady_state(m: &mut Mode, calls: &[&Call]) -> Result<Vec<f64>, BenchError> {
    if m.placed.is_empty() {
        return Ok(Vec::new());
    }
    let t = Instant::now();
    let mut rounds = 0u32;
    while t.elapsed() < WARM {
        for _ in 0..16 {
            m.round(calls)?;
        }
        m.rt.synchronize()?;
        rounds += 16;
    }
    let per_round = t.elapsed() / rounds;
    let n = (BURST.as_secs_f64() / per_round.as_secs_f64().max(1e-9)).clamp(16.0, 4096.0) as u32;
    let mut out = Vec::with_capacity(BURSTS);
    for _ in 0..BURSTS {
        let t = Instant::now();
        for _ in 0..n {
            m.round(calls)?;
        }
        m.rt.synchronize()?;
        out.push(t.elapsed().as_secs_f64() * 1e3 / f64::from(n));
    }
    Ok(out)
}

struct Mode {
    name: &'static str,
    rt: Runtime,
    first_ms: f64,
    samples: Vec<f64>,
    /// Copies of every call's arguments, already in the device's memory (the `gpu` mode;
    /// empty for host modes): enough copies that together they are twice the device's L2
    /// cache, used in turn, so a round reads its inputs from DRAM as a training step reads
    /// fresh data, not from the L2 the previous round filled.
    placed: Vec<Vec<Vec<Placed>>>,
    /// The copy of [`Mode::placed`] the next round uses.
    next: usize,
    /// Milliseconds per round of each timed burst of [`steady_state`] (the `gpu` mode).
    pipelined: Vec<f64>,
}

impl Mode {
    /// A mode with no placed arguments (set [`Mode::placed`] for a device mode).
    fn new(name: &'static str, rt: Runtime) -> Mode {
        Mode {
            name,
            rt,
            first_ms: 0.0,
            samples: vec![],
            placed: Vec::new(),
            next: 0,
            pipelined: Vec::new(),
        }
    }

    /// The index of the next copy of the placed arguments.
    fn next_copy(&mut self) -> usize {
        let i = self.next % self.placed.len().max(1);
        self.next = i + 1;
        i
    }

    /// Enqueues every call once on the next copy of the arguments (no wait).
    fn round(&mut self, calls: &[&Call]) -> Result<(), BenchError> {
        let i = self.next_copy();
        for (c, a) in calls.iter().zip(&self.placed[i]) {
            self.rt.run_placed(&c.func, a)?;
        }
        Ok(())
    }
}

/// Copies of the arguments to place so that together they cover twice `l2` bytes (at least
/// one, at most 16).
fn argument_copies(calls: &[&Call], l2: usize) -> usize {
    let bytes: usize = calls
        .iter()
        .flat_map(|c| &c.args)
        .map(|t| t.num_elements() * t.ty().dtype.size_bytes())
        .sum();
    (2 * l2).div_ceil(bytes.max(1)).clamp(1, 16)
}

fn bench_graph(
    w: &Workload,
    opts: &BenchOptions,
    flags: &Flags,
    bw: Bandwidth,
    gpu_bw: f64,
) -> Result<Vec<Record>, BenchError> {
    let calls = calls_of(w);
    let mut fb_opts = RuntimeOptions::from_flags(flags)?;
    fb_opts.policy = PolicyConfig {
        compile: false,
        ..fb_opts.policy
    };
    let cpu_opts = RuntimeOptions::from_flags(flags)?;
    let backend = Arc::new(CpuBackend::new(flags));
    let mut modes = vec![
        Mode::new("fallback", Runtime::new(None, fb_opts)?),
        Mode::new("cpu", Runtime::new(Some(backend), cpu_opts)?),
    ];
    if let Some(g) = &opts.gpu {
        let gpu: Arc<dyn Backend> = g.clone();
        let rt = Runtime::new(Some(gpu), RuntimeOptions::from_flags(flags)?)?;
        let copies = argument_copies(&calls, g.gpu().l2_bytes());
        let placed = (0..copies)
            .map(|_| {
                calls
                    .iter()
                    .map(|c| c.args.iter().map(|t| rt.place(t)).collect())
                    .collect::<Result<Vec<Vec<Placed>>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut m = Mode::new("gpu", rt);
        m.placed = placed;
        modes.push(m);
    }
    // First call (the flags' policy decides whether it compiles), then warm up until the
    // policy has compiled what it will (lazy: the third run of each shape compiles).
    let mut answers = Vec::new();
    for m in modes.iter_mut() {
        let (ms, _) = run_once(m, &calls)?;
        m.first_ms = ms;
        for _ in 0..3 {
            run_once(m, &calls)?;
        }
        m.rt.wait_for_compiles();
        let (warm, outs) = run_once(m, &calls)?;
        let outs = outs
            .iter()
            .map(|call| call.iter().map(|p| m.rt.fetch(p)).collect())
            .collect::<Result<Vec<Vec<Tensor>>, _>>()?;
        answers.push((warm, outs));
    }
    for (m, outs) in modes[1..].iter().zip(answers[1..].iter().map(|a| &a.1)) {
        for (i, (want, got)) in answers[0].1.iter().zip(outs).enumerate() {
            check_agreement(w.name, m.name, w.agreement, want, got)
                .map_err(|e| annotate(e, i, calls.len()))?;
        }
    }
    // A host mode's sample costs 1 + WARM_CALLS calls (see `warm_sample`).
    let per_rep: f64 = (1 + WARM_CALLS) as f64 * answers.iter().map(|a| a.0).sum::<f64>().max(1e-3);
    let reps =
        ((opts.budget.as_secs_f64() * 1e3 / per_rep) as usize).clamp(opts.reps.0, opts.reps.1);
    for _ in 0..reps {
        for m in modes.iter_mut() {
            let ms = warm_sample(m, &calls)?;
            m.samples.push(ms);
        }
    }
    for m in modes.iter_mut() {
        m.pipelined = steady_state(m, &calls)?;
    }
    let fb_median = summarize(&modes[0].samples).map(|s| s.median_ms);
    let mut out = Vec::new();
    for m in &modes {
        let s = summarize(&m.samples).ok_or_else(|| BenchError::Invalid("no samples".into()))?;
        let stats = m.rt.stats();
        let gbps = w.bytes as f64 / (s.median_ms / 1e3) / 1e9;
        let pipelined_ms = summarize(&m.pipelined).map(|d| d.median_ms);
        out.push(Record {
            workload: w.name.into(),
            size: opts.size.name().into(),
            mode: m.name.into(),
            median_ms: s.median_ms,
            min_ms: s.min_ms,
            max_ms: s.max_ms,
            reps: s.reps,
            first_call_ms: m.first_ms,
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
            gbps,
            bw_pct: 100.0 * gbps * 1e9
                / if m.name == "gpu" {
                    gpu_bw.max(1.0)
                } else {
                    bw.best()
                },
            speedup: fb_median.map(|f| f / s.median_ms),
            pipelined_ms,
            pipelined_bw_pct: pipelined_ms
                .map(|d| 100.0 * w.bytes as f64 / (d / 1e3) / gpu_bw.max(1.0)),
            ref_error: None,
            note: String::new(),
        });
    }
    Ok(out)
}

fn annotate(e: BenchError, call: usize, calls: usize) -> BenchError {
    match e {
        BenchError::Mismatch {
            workload,
            mode,
            detail,
        } if calls > 1 => BenchError::Mismatch {
            workload,
            mode,
            detail: format!("call {call}: {detail}"),
        },
        e => e,
    }
}

/// Checks `got` (mode `mode`) against the fallback's `want`; a wrong answer is an error
/// naming the workload, the first differing element and both values.
pub fn check_agreement(
    workload: &str,
    mode: &str,
    agreement: Agreement,
    want: &[Tensor],
    got: &[Tensor],
) -> Result<(), BenchError> {
    let fail = |detail: String| BenchError::Mismatch {
        workload: workload.into(),
        mode: mode.into(),
        detail,
    };
    if want.len() != got.len() {
        return Err(fail(format!(
            "{} outputs, fallback gave {}",
            got.len(),
            want.len()
        )));
    }
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        if w.shape() != g.shape() {
            return Err(fail(format!(
                "output {k}: shape {:?}, fallback {:?}",
                g.shape(),
                w.shape()
            )));
        }
        let (Some(wv), Some(gv)) = (w.as_f32(), g.as_f32()) else {
            if w != g {
                return Err(fail(format!("output {k} differs")));
            }
            continue;
        };
        for (i, (a, b)) in wv.iter().zip(gv).enumerate() {
            let ok = match agreement {
                Agreement::Exact => a.to_bits() == b.to_bits(),
                Agreement::Close(tol) => (a - b).abs() <= tol * (1.0 + a.abs()),
            };
            if !ok {
                let how = match agreement {
                    Agreement::Exact => "not bit-identical to".to_string(),
                    Agreement::Close(t) => format!("beyond rel. tolerance {t} of"),
                };
                return Err(fail(format!(
                    "output {k} element {i}: {b:e} is {how} the fallback's {a:e}"
                )));
            }
        }
    }
    Ok(())
}
