//! Compiled kernels probe their stack frames: a kernel whose frame is larger than what is
//! left of its thread's stack must fault on the guard page, which Rust reports as a stack
//! overflow, rather than move the stack pointer past the guard into other memory (where
//! it would silently overwrite whatever is mapped there).
//!
//! The overflow aborts the process, so the parent test runs the child test in a copy of
//! this test binary and reads its stderr.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};

/// Set in the child process only.
const CHILD: &str = "KILN_STACK_PROBE_CHILD";

/// A column sum over 2048 points: tiles of 512 points keep 32 lane accumulators each on
/// the stack, a 64 KiB block in the kernel's frame.
const COLUMN_SUM: &str = "func @f(%x: f32[64,2048]) -> f32[2048] {
  %s = reduce_sum %x, axes=[0] : f32[2048]
  return %s
}";

/// Runs the column sum, single-threaded (kernels run on the calling thread), on a thread
/// with `stack` bytes of stack; returns whether it finished.
fn run_on_stack(stack: usize) -> bool {
    let c = cluster(COLUMN_SUM);
    let opts = CpuOptions {
        threads: 1,
        ..CpuOptions::default()
    };
    let exe = compile_cluster(&c, &opts).expect("compiles");
    let x = random_tensor(&c.body.param_types()[0], &mut Rng(7));
    std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(stack)
        .spawn(move || exe.run(&[&x]).map(|out| out.len()))
        .expect("spawns")
        .join()
        .map(|r| r == Ok(1))
        .unwrap_or(false)
}

/// The child's half: a 32 KiB stack cannot hold the kernel's frame. Returns without doing
/// anything unless run by [`a_frame_larger_than_the_stack_hits_the_guard_page`].
#[test]
fn child_runs_a_column_sum_on_a_small_stack() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let finished = run_on_stack(32 << 10);
    // Reaching this line means the frame did not fault: report it, so the parent fails.
    println!("kernel returned without a stack overflow (finished: {finished})");
}

#[test]
fn a_frame_larger_than_the_stack_hits_the_guard_page() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "child_runs_a_column_sum_on_a_small_stack",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("runs the child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the child finished:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("thread 'small-stack'")
                && l.ends_with("has overflowed its stack")),
        "the child did not stop on its guard page ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn the_same_kernel_runs_on_an_ordinary_stack() {
    // The probes only touch the frame's pages: with room for it, the kernel runs.
    assert!(run_on_stack(1 << 20));
}
