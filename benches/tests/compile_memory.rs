//! Compile cost is linear in program length: a 5,000-op reshape/transpose chain (issue 32:
//! such chains needed 957 MB to compile at 24 ops and more than 4 GB at 28) lowers and
//! compiles for this CPU and for PTX within a fixed memory cap, and computes the
//! interpreter's bits.
//!
//! The cap is measured, not assumed: this test binary's global allocator counts the bytes
//! in use and their peak (`kiln_benches::counting_alloc`).

use kiln_benches::counting_alloc::{peak_during, Counting};
use kiln_benches::programs::{view_chain, Chain};

#[global_allocator]
static ALLOC: Counting = Counting;

/// The allocator counts every thread's bytes, so the tests of this binary measure one at a
/// time: each holds this lock (run in parallel, one test's allocations showed up in the
/// other's peak).
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

fn cluster(ops: usize, chain: Chain) -> kiln_ir::Cluster {
    let body = kiln_ir::parse_func(&view_chain(ops, chain), "chain.kir").expect("parses");
    assert!(kiln_ir::verify_func(&body).is_empty());
    kiln_ir::Cluster {
        name: "chain".into(),
        body,
    }
}

#[test]
fn a_5000_op_view_chain_compiles_in_bounded_memory_with_the_interpreters_bits() {
    let _one_at_a_time = measuring();
    for chain in [Chain::SplitMerge, Chain::Misaligned] {
        check_5000(chain);
    }
}

fn check_5000(chain: Chain) {
    const CAP: usize = 256 << 20;
    let c = cluster(5000, chain);
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 2,
        ..Default::default()
    };
    let (exe, cpu_peak) = peak_during(|| kiln_compiler::cpu::compile_cluster(&c, &opts));
    let exe = exe.expect("compiles");
    assert!(
        cpu_peak < CAP,
        "{chain:?}: CPU compile peaked at {cpu_peak} bytes"
    );
    let (ptx, ptx_peak) = peak_during(|| {
        let p = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
        kiln_ptx::gpu_program(&p)
            .and_then(|gpu| kiln_ptx::emit_program(&gpu, kiln_ptx::Target::from_sm(90).unwrap()))
    });
    ptx.expect("emits PTX");
    assert!(
        ptx_peak < CAP,
        "{chain:?}: PTX emission peaked at {ptx_peak} bytes"
    );
    let x: Vec<f32> = (0..16 * 64).map(|i| i as f32 * 0.5 - 7.0).collect();
    let x = kiln_ir::Tensor::new(vec![16, 64], kiln_ir::Buffer::F32(x.into())).unwrap();
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&c.body, std::slice::from_ref(&x))
        .unwrap();
    let got = exe.run(&[&x]).expect("runs");
    assert_eq!(got[0].data(), want[0].data());
}

#[test]
fn compile_memory_grows_linearly_with_chain_length() {
    let _one_at_a_time = measuring();
    // Four times the chain takes less than six times the memory (it was geometric: 10 MB
    // at 8 ops, 172 MB at 20). The misaligned chain is the one that does not simplify.
    let peak = |ops| {
        let c = cluster(ops, Chain::Misaligned);
        peak_during(|| kiln_compiler::lower::lower_cluster(&c).expect("lowers")).1
    };
    let (small, large) = (peak(400), peak(1600));
    assert!(
        large < 6 * small,
        "400 ops: {small} bytes, 1600 ops: {large} bytes"
    );
}
