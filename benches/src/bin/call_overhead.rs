//! Per-call cost of small programs, and where it goes.
//!
//! Each program runs many times through a [`Runtime`], planned once
//! ([`Runtime::plan_func`], what `Session::run_planned`, `Function` and `kiln run --repeat`
//! use; the MLP also planned per call, as [`Runtime::run`] does); the table gives the
//! median time per call over batches of calls. The
//! rows build on each other, so differences between them say where the time goes:
//!
//! - `empty`: a program that returns its argument — the executor's fixed cost (argument
//!   checks, value slots, the result);
//! - `one op, interpreted`: one `tanh` on `f32[16]` without a compiler — plus one
//!   interpreter op (typing check, allocation, the op on the calling thread);
//! - `one cluster, compiled`: `tanh(x * 2 + 1)` on `f32[16]`, one compiled cluster; the row
//!   below it runs the cluster's executable alone, so the difference is the routing (plan,
//!   policy, cache lookup, statistics);
//! - `MLP 8x64 -> 32 -> 10`: issue 38's example (two products and a fused bias + relu), the
//!   same way, then its products alone: planned once as compiled clusters run them
//!   ([`Interpreter::run_planned`]) and through [`Interpreter::eval`] as plain ops do;
//! - `pool hand-off`: one empty task handed to the interpreter's pool from outside and waited
//!   for — what small ops skip by running on the calling thread (`runs_inline`).
//!
//! The breakdown at the end splits the compiled MLP's time into those parts.
//!
//! `cargo run --release -p kiln-benches --bin call_overhead [-- --threads N]`

use kiln_compiler::{run_pipeline, Options};
use kiln_flags::Flags;
use kiln_interp::Interpreter;
use kiln_ir::{parse_func, Buffer, Func, Op, Tensor};
use kiln_runtime::{Backend, CpuBackend, Executable, Runtime, RuntimeOptions};
use std::sync::Arc;
use std::time::Instant;

const EMPTY: &str = "func @main(%x: f32[16]) -> f32[16] {\n  return %x\n}\n";

const ONE_OP: &str = "func @main(%x: f32[16]) -> f32[16] {
  %y = tanh %x : f32[16]
  return %y
}
";

const CLUSTER: &str = "func @main(%x: f32[16]) -> f32[16] {
  %two = constant 2.0 : f32[]
  %one = constant 1.0 : f32[]
  %t = broadcast_in_dim %two, dims=[] : f32[16]
  %o = broadcast_in_dim %one, dims=[] : f32[16]
  %a = mul %x, %t : f32[16]
  %b = add %a, %o : f32[16]
  %y = tanh %b : f32[16]
  return %y
}
";

const MLP: &str =
    "func @main(%x: f32[8,64], %w: f32[64,32], %b: f32[32], %w2: f32[32,10]) -> f32[8,10] {
  %h = dot_general %x, %w, lhs_contract=[1], rhs_contract=[0] : f32[8,32]
  %bb = broadcast_in_dim %b, dims=[1] : f32[8,32]
  %hb = add %h, %bb : f32[8,32]
  %zero = constant 0.0 : f32[]
  %zb = broadcast_in_dim %zero, dims=[] : f32[8,32]
  %r = max %hb, %zb : f32[8,32]
  %o = dot_general %r, %w2, lhs_contract=[1], rhs_contract=[0] : f32[8,10]
  return %o
}
";

fn inputs(f: &Func) -> Vec<Tensor> {
    f.param_types()
        .iter()
        .map(|t| {
            let data = (0..t.num_elements())
                .map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0)
                .collect();
            Tensor::new(t.shape.clone(), Buffer::F32(data)).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// Median µs per call of `call`, over 15 batches sized to about 20 ms each.
fn per_call(mut call: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed().as_secs_f64() < 0.02 {
        call();
        n += 1;
    }
    let mut times: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                call();
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn flags(threads: usize) -> Flags {
    Flags {
        lazy_compilation: false,
        min_cluster_size: 1,
        cpu_num_threads: threads,
        ..Flags::default()
    }
}

fn runtime(threads: usize, compile: bool) -> Runtime {
    let flags = flags(threads);
    let mut opts = RuntimeOptions::from_flags(&flags).unwrap_or_else(|e| panic!("{e}"));
    opts.threads = threads;
    let backend = compile.then(|| Arc::new(CpuBackend::new(&flags)) as _);
    Runtime::new(backend, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn program(src: &str, cluster: bool) -> Func {
    let mut f = parse_func(src, "bench.kir").unwrap_or_else(|e| panic!("{e}"));
    if cluster {
        let flags = Flags {
            min_cluster_size: 1,
            ..Flags::default()
        };
        run_pipeline(&mut f, &Options::from_flags(&flags)).unwrap_or_else(|e| panic!("{e}"));
    }
    f
}

fn print_row(name: &str, mode: &str, us: f64) {
    println!("| {name} | {mode} | {us:.2} |");
}

/// How a row calls the runtime.
#[derive(Clone, Copy, PartialEq)]
enum How {
    /// [`Runtime::run`]: the function is planned on every call.
    PlanPerCall,
    /// [`Runtime::run_planned`]: planned once ([`Runtime::plan_func`]), as `Session`,
    /// `Function` and `kiln run --repeat` run it.
    Planned,
}

/// Times `f` through `rt`; prints and returns µs per call.
fn row(name: &str, rt: &Runtime, f: &Func, how: How) -> f64 {
    let args = inputs(f);
    let refs: Vec<&Tensor> = args.iter().collect();
    let planned = rt.plan_func(Arc::new(f.clone()));
    let call = || match how {
        How::PlanPerCall => rt.run_refs(f, &refs),
        How::Planned => rt.run_planned(&planned, &refs),
    };
    call().unwrap_or_else(|e| panic!("{name}: {e}"));
    let us = per_call(|| {
        std::hint::black_box(call().unwrap_or_else(|e| panic!("{e}")));
    });
    let stats = rt.stats();
    let compiled: u64 = stats.values().map(|s| s.compiled_runs).sum();
    let failures: u64 = stats.values().map(|s| s.compile_failures).sum();
    assert_eq!(failures, 0, "{name}: a cluster failed to compile");
    let mode = match (stats.is_empty(), compiled > 0) {
        (true, _) => "no clusters",
        (false, true) => "compiled",
        (false, false) => "fallback",
    };
    let mode = match how {
        How::PlanPerCall => format!("{mode}, planned per call"),
        How::Planned => format!("{mode}, planned once"),
    };
    print_row(name, &mode, us);
    us
}

/// Times the executable of `f`'s only cluster alone (no runtime); prints and returns µs.
fn executable_row(name: &str, threads: usize, f: &Func) -> f64 {
    let clusters: Vec<_> = f
        .insts
        .iter()
        .filter_map(|i| match &i.op {
            Op::Cluster(c) => Some(c),
            _ => None,
        })
        .collect();
    let [c] = clusters[..] else {
        panic!("{name}: expected one cluster, got {}", clusters.len())
    };
    let exe: Arc<dyn Executable> = CpuBackend::new(&flags(threads))
        .compile(c)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let args = inputs(&c.body);
    let refs: Vec<&Tensor> = args.iter().collect();
    let us = per_call(|| {
        std::hint::black_box(exe.run(&refs).unwrap_or_else(|e| panic!("{e}")));
    });
    print_row(name, "executable alone", us);
    us
}

/// Times the MLP's product `index` (0 or 1) planned and through `eval`; returns both.
fn gemm_rows(interp: &Interpreter, m: &Func, index: usize) -> (f64, f64) {
    let ins = inputs(m);
    let dot = m
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::DotGeneral(_)))
        .nth(index)
        .unwrap_or_else(|| panic!("no product {index}"));
    let args: Vec<Tensor> = dot
        .args
        .iter()
        .map(|&v| {
            let p = m.params.iter().position(|&q| q == v);
            p.map(|p| ins[p].clone())
                .unwrap_or_else(|| Tensor::zeros(m.ty(v)))
        })
        .collect();
    let refs: Vec<&Tensor> = args.iter().collect();
    let ty = m.ty(dot.results[0]).clone();
    let arg_types: Vec<_> = args.iter().map(Tensor::ty).collect();
    let type_refs: Vec<_> = arg_types.iter().collect();
    let plan = interp
        .plan(&dot.op, &type_refs, &ty)
        .unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (&arg_types[0].shape, &arg_types[1].shape);
    let name = format!("GEMM {}x{}x{}", a[0], a[1], b[1]);
    let planned = per_call(|| {
        std::hint::black_box(interp.run_planned(&plan, &refs).unwrap());
    });
    print_row(&name, "planned (compiled clusters)", planned);
    let eval = per_call(|| {
        std::hint::black_box(interp.eval(&dot.op, &refs, &ty).unwrap());
    });
    print_row(&name, "Interpreter::eval (plain ops)", eval);
    (planned, eval)
}

fn main() {
    let mut threads = 2usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--threads", Some(n)) => {
                threads = n.parse().unwrap_or_else(|_| panic!("--threads {n}"))
            }
            _ => panic!("usage: call_overhead [--threads N]"),
        }
    }
    println!("| program (threads {threads}) | how | µs per call (median) |");
    println!("|---|---|---|");
    let plain = runtime(threads, false);
    let compiled = runtime(threads, true);
    let once = How::Planned;
    let empty = row("empty", &plain, &program(EMPTY, false), once);
    let one_op = row("one op, interpreted", &plain, &program(ONE_OP, false), once);
    let cluster = program(CLUSTER, true);
    let one_cluster = row("one cluster", &compiled, &cluster, once);
    let one_exe = executable_row("one cluster", threads, &cluster);
    row("one cluster", &plain, &cluster, once);
    let mlp = program(MLP, true);
    let mlp_total = row("MLP 8x64 -> 32 -> 10", &compiled, &mlp, once);
    let mlp_per_call = row("MLP 8x64 -> 32 -> 10", &compiled, &mlp, How::PlanPerCall);
    let mlp_exe = executable_row("MLP 8x64 -> 32 -> 10", threads, &mlp);
    row("MLP 8x64 -> 32 -> 10", &plain, &mlp, once);
    let interp = Interpreter::new(threads).unwrap_or_else(|e| panic!("{e}"));
    let m = program(MLP, false);
    let (g1, _) = gemm_rows(&interp, &m, 0);
    let (g2, _) = gemm_rows(&interp, &m, 1);
    let pool = kiln_interp::shared_pool(threads).unwrap_or_else(|e| panic!("{e}"));
    let handoff = per_call(|| pool.install(|| std::hint::black_box(())));
    print_row("pool hand-off", "one empty task", handoff);
    println!();
    let routing = one_cluster - one_exe - empty;
    println!("Where the compiled MLP's {mlp_total:.2} µs (planned once) go:");
    println!("- executor fixed cost (the empty program): {empty:.2} µs");
    println!(
        "- routing one cluster (policy, cache, statistics): {routing:.2} µs (one cluster through the runtime minus its executable and the fixed cost, {one_cluster:.2} - {one_exe:.2} - {empty:.2})"
    );
    println!(
        "- the executable: {mlp_exe:.2} µs, of which the two products {:.2} µs ({g1:.2} + {g2:.2}) and kernels, buffers and checks {:.2} µs",
        g1 + g2,
        mlp_exe - g1 - g2
    );
    println!(
        "- the rest of the runtime (values, the cluster's operands and results): {:.2} µs",
        mlp_total - mlp_exe - empty - routing
    );
    println!(
        "- planning per call (Runtime::run without a plan_func): {:.2} µs more ({mlp_per_call:.2})",
        mlp_per_call - mlp_total
    );
    println!("- for scale: one interpreted op {:.2} µs beyond the empty program; a pool hand-off {handoff:.2} µs, which no small op or product pays (they run on the calling thread)", one_op - empty);
}
