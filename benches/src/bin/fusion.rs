//! Fused (Cranelift-compiled cluster) vs fallback (interpreter, op by op) on the issue's
//! workloads, with a memory-bandwidth probe in the same run:
//!
//! `cargo run -p kiln-benches --release --bin fusion`
//!
//! Each workload is written as `.kir`, run through the pass pipeline (so
//! `mark_for_compilation` forms the cluster), and the cluster is compiled with
//! `kiln_compiler::cpu`. Reported: median ms of fallback and compiled, speed-up, the
//! bandwidth bound (bytes the cluster must move / measured copy bandwidth) and the share
//! of it reached, and the median compile time per cluster.

use kiln_compiler::cpu::{compile_cluster, CpuOptions};
use kiln_compiler::{run_pipeline, Options};
use kiln_interp::{zeroed_buffer, Interpreter};
use kiln_ir::{parse_func, Buffer, Cluster, DType, Op, Tensor};
use std::time::Instant;

const REPS: usize = 11;

fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut buf = zeroed_buffer(DType::F32, n);
    if let Buffer::F32(v) = &mut buf {
        let mut s = seed | 1;
        for x in v.iter_mut() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *x = ((s >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0;
        }
    }
    Tensor::new(shape.to_vec(), buf).expect("sizes match")
}

/// The single cluster `mark_for_compilation` forms from `src`.
fn cluster_of(src: &str) -> Cluster {
    let mut f = parse_func(src, "bench.kir").expect("workload parses");
    run_pipeline(&mut f, &Options::default()).expect("pipeline runs");
    f.insts
        .iter()
        .find_map(|i| match &i.op {
            Op::Cluster(c) => Some((**c).clone()),
            _ => None,
        })
        .expect("the workload forms a cluster")
}

/// Copy bandwidth (read + write bytes per second) over `n` f32 with `threads` threads.
fn bandwidth(threads: usize, n: usize) -> f64 {
    let src = tensor(&[n], 7);
    let mut dst = zeroed_buffer(DType::F32, n);
    let (Some(s), Buffer::F32(d)) = (src.as_f32(), &mut dst) else {
        return f64::NAN;
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let chunk = n.div_ceil(threads * 8);
    let ms = median_ms(REPS, || {
        pool.install(|| {
            use rayon::prelude::*;
            d.par_chunks_mut(chunk)
                .zip(s.par_chunks(chunk))
                .for_each(|(d, s)| d.copy_from_slice(s));
        })
    });
    (2 * 4 * n) as f64 / (ms / 1e3)
}

fn main() {
    // As the `kiln` binary does: freed large buffers are reused, not unmapped (see
    // `kiln_interp::retain_freed_memory`), so no mode pays for fresh pages per call.
    kiln_interp::retain_freed_memory();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bw = bandwidth(threads, 1 << 24);
    println!("threads: {threads}; copy bandwidth: {:.1} GB/s", bw / 1e9);
    let n = 1 << 24;
    let (rows, cols) = (4096, 1024);
    let chain = format!(
        "func @chain(%x: f32[{n}]) -> f32[{n}] {{
  %a = constant 1.5 : f32[{n}]
  %b = constant 0.25 : f32[{n}]
  %h = constant 0.5 : f32[{n}]
  %m = mul %x, %a : f32[{n}]
  %s = add %m, %b : f32[{n}]
  %t = tanh %s : f32[{n}]
  %u = mul %t, %h : f32[{n}]
  %y = add %u, %x : f32[{n}]
  return %y
}}"
    );
    let gelu = format!(
        "func @gelu(%x: f32[{n}]) -> f32[{n}] {{
  %c = constant 0.044715 : f32[{n}]
  %k = constant 0.7978845608 : f32[{n}]
  %one = constant 1.0 : f32[{n}]
  %half = constant 0.5 : f32[{n}]
  %x2 = mul %x, %x : f32[{n}]
  %x3 = mul %x2, %x : f32[{n}]
  %cx3 = mul %c, %x3 : f32[{n}]
  %in = add %x, %cx3 : f32[{n}]
  %kin = mul %k, %in : f32[{n}]
  %t = tanh %kin : f32[{n}]
  %t1 = add %one, %t : f32[{n}]
  %hx = mul %half, %x : f32[{n}]
  %y = mul %hx, %t1 : f32[{n}]
  return %y
}}"
    );
    let softmax = format!(
        "func @softmax(%x: f32[{rows},{cols}]) -> f32[{rows},{cols}] {{
  %m  = reduce_max %x, axes=[1] : f32[{rows}]
  %mb = broadcast_in_dim %m, dims=[0] : f32[{rows},{cols}]
  %d  = sub %x, %mb : f32[{rows},{cols}]
  %e  = exp %d : f32[{rows},{cols}]
  %s  = reduce_sum %e, axes=[1] : f32[{rows}]
  %sb = broadcast_in_dim %s, dims=[0] : f32[{rows},{cols}]
  %y  = div %e, %sb : f32[{rows},{cols}]
  return %y
}}"
    );
    let layer_norm = format!(
        "func @layer_norm(%x: f32[{rows},{cols}]) -> f32[{rows},{cols}] {{
  %s = reduce_sum %x, axes=[1] : f32[{rows}]
  %n = constant {cols}.0 : f32[{rows}]
  %mean = div %s, %n : f32[{rows}]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[{rows},{cols}]
  %d = sub %x, %mb : f32[{rows},{cols}]
  %sq = mul %d, %d : f32[{rows},{cols}]
  %v = reduce_sum %sq, axes=[1] : f32[{rows}]
  %var = div %v, %n : f32[{rows}]
  %eps = constant 0.00001 : f32[{rows}]
  %ve = add %var, %eps : f32[{rows}]
  %r = rsqrt %ve : f32[{rows}]
  %rb = broadcast_in_dim %r, dims=[0] : f32[{rows},{cols}]
  %y = mul %d, %rb : f32[{rows},{cols}]
  return %y
}}"
    );
    let interp = Interpreter::new(threads).expect("interpreter pool");
    let opts = CpuOptions {
        threads,
        opt_level: 2,
        dump_to: None,
        wide_math: true,
        math_512: false,
        vmodule: Default::default(),
    };
    println!(
        "{:<12} {:>12} {:>12} {:>9} {:>12} {:>10} {:>12}",
        "workload",
        "fallback ms",
        "compiled ms",
        "speed-up",
        "bound ms",
        "% of bound",
        "compile ms"
    );
    let mut compile_times = Vec::new();
    let mut codegen_times = Vec::new();
    for (name, src, shape) in [
        ("chain", &chain, vec![n]),
        ("gelu", &gelu, vec![n]),
        ("softmax", &softmax, vec![rows, cols]),
        ("layer_norm", &layer_norm, vec![rows, cols]),
    ] {
        let c = cluster_of(src);
        let x = tensor(&shape, 11);
        let ct = median_ms(REPS, || {
            compile_cluster(&c, &opts).expect("compiles");
        });
        compile_times.push(ct);
        // Codegen alone, from the lowered kernel IR (excludes scanning the IR's full-size
        // splat constants during lowering).
        let program = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
        let cg = median_ms(REPS, || {
            kiln_compiler::cpu::compile_program(program.clone(), &opts).expect("compiles");
        });
        codegen_times.push(cg);
        let exe = compile_cluster(&c, &opts).expect("compiles");
        if std::env::args().any(|a| a == "--print-kernels") {
            eprintln!("{}", exe.kernel_ir_text());
        }
        let fallback = median_ms(REPS, || {
            interp.run_refs(&c.body, &[&x]).expect("fallback runs");
        });
        let compiled = median_ms(REPS, || {
            exe.run(&[&x]).expect("compiled runs");
        });
        // Bound: read the input once and write the output once.
        let bound = (2 * 4 * x.num_elements()) as f64 / bw * 1e3;
        println!(
            "{name:<12} {fallback:>12.2} {compiled:>12.2} {:>8.2}x {bound:>12.2} {:>9.0}% {ct:>12.2}",
            fallback / compiled,
            bound / compiled * 100.0
        );
    }
    compile_times.sort_by(f64::total_cmp);
    codegen_times.sort_by(f64::total_cmp);
    println!(
        "median compile time per cluster: {:.2} ms (codegen from kernel IR alone: {:.2} ms)",
        compile_times[compile_times.len() / 2],
        codegen_times[codegen_times.len() / 2]
    );
}
