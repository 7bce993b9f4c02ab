//! Compile time and peak compile memory as a function of program length, on the
//! reshape/transpose chains of `kiln_benches::programs::view_chain` (issue 32's, which
//! simplifies to the identity, and a misaligned one, which does not): lowering to
//! kernel IR, CPU code (Cranelift) and PTX. Linear growth is the goal; before index
//! expressions were bounded, 24 ops took 957 MB and 28 ops more than 4 GB.
//!
//! `cargo run --release -p kiln-benches --bin compile_cost [-- LENGTHS…]`

use kiln_benches::counting_alloc::{peak_during, Counting};
use kiln_benches::programs::{view_chain, Chain};
use std::time::Instant;

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let lengths: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap_or_else(|_| panic!("not a length: {a}")))
        .collect();
    let lengths = if lengths.is_empty() {
        vec![8, 16, 24, 28, 64, 256, 1000, 5000]
    } else {
        lengths
    };
    let target = kiln_ptx::Target::from_sm(90).expect("sm_90 is a target");
    let opts = kiln_compiler::cpu::CpuOptions::default();
    println!(
        "| chain | ops | kernels | lower ms | lower MB | CPU compile ms | CPU MB | PTX ms | PTX MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (chain, n) in [Chain::SplitMerge, Chain::Misaligned]
        .into_iter()
        .flat_map(|c| lengths.iter().map(move |&n| (c, n)))
    {
        let body = kiln_ir::parse_func(&view_chain(n, chain), "chain.kir").expect("parses");
        let c = kiln_ir::Cluster {
            name: "chain".into(),
            body,
        };
        let timed = |f: &dyn Fn() -> usize| {
            let t = Instant::now();
            let (out, peak) = peak_during(f);
            (out, t.elapsed().as_secs_f64() * 1e3, peak as f64 / 1e6)
        };
        let (kernels, lower_ms, lower_mb) = timed(&|| {
            kiln_compiler::lower::lower_cluster(&c)
                .expect("lowers")
                .kernels
                .len()
        });
        let (_, cpu_ms, cpu_mb) = timed(&|| {
            kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
            0
        });
        let (_, ptx_ms, ptx_mb) = timed(&|| {
            let p = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
            kiln_ptx::emit_program(&kiln_ptx::gpu_program(&p).expect("verifies"), target)
                .expect("emits");
            0
        });
        println!(
            "| {chain:?} | {n} | {kernels} | {lower_ms:.1} | {lower_mb:.1} | {cpu_ms:.1} | {cpu_mb:.1} | {ptx_ms:.1} | {ptx_mb:.1} |"
        );
    }
}
