//! Compiled executables and interpreters share the process's worker pool of their thread
//! count (`kiln_interp::shared_pool`): a model with many clusters starts `threads` workers,
//! not `threads` per cluster. Counted in OS threads (Linux `/proc/self/task`); this file
//! holds one test, so nothing else in its process starts threads meanwhile.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};

#[cfg(target_os = "linux")]
fn os_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn many_executables_start_one_pool_of_their_thread_count() {
    // An odd count no other code of this process asks for.
    const THREADS: usize = 5;
    let opts = CpuOptions {
        threads: THREADS,
        ..CpuOptions::default()
    };
    // Row-blocked softmax (runs on the pool) and a matrix product (its GEMM runs on an
    // interpreter inside the executable), each compiled four times as four clusters would be.
    let softmax = cluster(
        "func @softmax(%x: f32[64,1000]) -> f32[64,1000] {
  %m  = reduce_max %x, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,1000]
  %d  = sub %x, %mb : f32[64,1000]
  %e  = exp %d : f32[64,1000]
  %s  = reduce_sum %e, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,1000]
  %y  = div %e, %sb : f32[64,1000]
  return %y
}",
    );
    let dense = cluster(
        "func @dense(%x: f32[64,96], %w: f32[96,80]) -> f32[64,80] {
  %y = dot_general %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[64,80]
  %z = constant 0.0 : f32[64,80]
  %r = max %y, %z : f32[64,80]
  return %r
}",
    );
    let before = os_threads();
    let mut r = Rng(7);
    let mut alive = Vec::new();
    for c in [&softmax, &dense].iter().cycle().take(8) {
        let exe = compile_cluster(c, &opts).expect("compiles");
        let inputs: Vec<_> = c
            .body
            .param_types()
            .iter()
            .map(|t| random_tensor(t, &mut r))
            .collect();
        exe.run(&inputs.iter().collect::<Vec<_>>()).expect("runs");
        // A fallback interpreter of the same count joins the same pool.
        let interp = kiln_interp::Interpreter::new(THREADS).expect("interpreter");
        alive.push((exe, interp));
    }
    let started = os_threads() - before;
    assert_eq!(
        started, THREADS,
        "8 executables and 8 interpreters of {THREADS} threads started {started} threads"
    );
    drop(alive);
}
