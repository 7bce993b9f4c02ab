//! Per-call cost of small programs, and where it goes.
//!
//! Each row runs one small program many times through a [`Runtime`] (what `Session::run`
//! and `kiln run --repeat` use) and reports the median time per call over batches of calls:
//!
//! - `empty`: a program that returns its argument — the executor's fixed cost (argument
//!   checks, value slots, the result);
//! - `one op, interpreted`: one `tanh` on `f32[16]` without a compiler — plus one
//!   interpreter op (typing check, allocation, the op on the calling thread);
//! - `one cluster, compiled`: `tanh(x * 2 + 1)` on `f32[16]`, one compiled cluster — plus
//!   routing the cluster (policy, cache key) and the executable (buffers, kernel call);
//! - `GEMM 8x64x32 alone`: `Interpreter::eval` of that `dot_general`, the product every
//!   small dense layer runs (its flop cost at 50 GFLOP/s would be 0.66 µs);
//! - `MLP 8x64 -> 32 -> 10, compiled`: issue 38's example, two products and a fused
//!   bias + relu.
//!
//! Thread counts: the interpreter's pool has `--threads` threads (default 2); small ops and
//! small products run on the calling thread whatever the count (see `kiln_interp`'s
//! `runs_inline`), so the numbers should not depend on it.
//!
//! `cargo run --release -p kiln-benches --bin call_overhead [-- --threads N]`

use kiln_compiler::{run_pipeline, Options};
use kiln_flags::Flags;
use kiln_interp::Interpreter;
use kiln_ir::{parse_func, Buffer, Func, Tensor};
use kiln_runtime::{CpuBackend, Runtime, RuntimeOptions};
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

fn runtime(threads: usize, compile: bool) -> Runtime {
    let flags = Flags {
        lazy_compilation: false,
        min_cluster_size: 1,
        cpu_num_threads: threads,
        ..Flags::default()
    };
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

fn row(name: &str, rt: &Runtime, f: &Func) {
    let args = inputs(f);
    rt.run(f, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
    let us = per_call(|| {
        std::hint::black_box(rt.run(f, &args).unwrap_or_else(|e| panic!("{e}")));
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
    println!("| {name} | {mode} | {us:.2} |");
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
    println!("| program (threads {threads}) | clusters ran | µs per call (median) |");
    println!("|---|---|---|");
    let plain = runtime(threads, false);
    let compiled = runtime(threads, true);
    row("empty", &plain, &program(EMPTY, false));
    row("one op, interpreted", &plain, &program(ONE_OP, false));
    let cluster = program(CLUSTER, true);
    row("one cluster, compiled", &compiled, &cluster);
    row("one cluster, fallback", &plain, &cluster);
    let mlp = program(MLP, true);
    row("MLP 8x64 -> 32 -> 10, compiled", &compiled, &mlp);
    row("MLP 8x64 -> 32 -> 10, fallback", &plain, &mlp);
    // The product alone, through the interpreter as compiled clusters run it.
    let interp = Interpreter::new(threads).unwrap_or_else(|e| panic!("{e}"));
    let m = program(MLP, false);
    let ins = inputs(&m);
    let dot = &m.insts[0];
    let ty = m.ty(dot.results[0]).clone();
    let us = per_call(|| {
        std::hint::black_box(interp.eval(&dot.op, &[&ins[0], &ins[1]], &ty).unwrap());
    });
    println!("| GEMM 8x64x32 alone (Interpreter::eval) | - | {us:.2} |");
}
