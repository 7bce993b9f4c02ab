//! Shared helpers of the CPU backend tests: build a cluster from `.kir` text, make inputs,
//! and compare compiled output with the interpreter bit for bit.

#![allow(dead_code)]

use kiln_compiler::cpu::{compile_cluster, CpuCompileError, CpuOptions};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Cluster, DType, Tensor};

pub use kiln_testkit::{cluster, random_tensor, same_bits as same, Rng};

/// Compiles `c` and checks it against the interpreter for 1, 2 and 7 threads.
pub fn check_cluster(c: &Cluster, seed: u64) {
    let mut r = Rng(seed | 1);
    let inputs: Vec<Tensor> = c
        .body
        .param_types()
        .iter()
        .map(|t| random_tensor(t, &mut r))
        .collect();
    check_with_inputs(c, &inputs);
}

/// Like [`check_cluster`], but float inputs are ordinary finite values in [-10, 10]: a NaN
/// or infinity anywhere in a long reduction makes both results NaN (or infinite) and would
/// hide a wrong summation order.
#[allow(dead_code)] // not every test binary uses it
pub fn check_cluster_finite(c: &Cluster, seed: u64) {
    let mut r = Rng(seed | 1);
    let inputs: Vec<Tensor> = c
        .body
        .param_types()
        .iter()
        .map(|t| {
            let n = t.num_elements();
            let mut value = || ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0) as f32;
            let data = match t.dtype {
                DType::F32 => Buffer::F32((0..n).map(|_| value()).collect()),
                DType::F64 => {
                    Buffer::F64((0..n).map(|_| f64::from(value()) * 1.000_000_1).collect())
                }
                _ => return random_tensor(t, &mut r),
            };
            Tensor::new(t.shape.clone(), data).expect("sizes match")
        })
        .collect();
    check_with_inputs(c, &inputs);
}

/// Like [`check_cluster`] with given inputs.
pub fn check_with_inputs(c: &Cluster, inputs: &[Tensor]) {
    let want = Interpreter::new(1)
        .expect("pool")
        .run(&c.body, inputs)
        .expect("interpreter runs");
    let refs: Vec<&Tensor> = inputs.iter().collect();
    // Block math (`wide_math`, the default) at every thread count, and 512 bits wide
    // (`math_512`, AVX-512 where the CPU has it) at 3; all math emitted by Cranelift at 1
    // and 7.
    for (threads, wide_math, math_512) in [
        (1, true, false),
        (2, true, false),
        (7, true, false),
        (3, true, true),
        (1, false, false),
        (7, false, false),
    ] {
        let opts = CpuOptions {
            threads,
            opt_level: 2,
            dump_to: None,
            wide_math,
            math_512,
            ..Default::default()
        };
        let exe = match compile_cluster(c, &opts) {
            Ok(e) => e,
            Err(e) => panic!("{e}\n{}", kiln_ir::print_func(&c.body)),
        };
        // Also through the persistent-cache bytes (machine code reloaded, not recompiled).
        let exe = if threads == 2 {
            kiln_compiler::cpu::CpuExecutable::from_bytes(&exe.to_bytes(), &opts)
                .expect("reloads from bytes")
        } else {
            exe
        };
        let got = exe.run(&refs).expect("compiled run");
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let n = g.num_elements();
            assert_eq!(g.ty(), w.ty());
            if let Some(bad) = (0..n).find(|&k| !same(g.data().get(k), w.data().get(k))) {
                panic!(
                    "output {i} differs ({threads} threads, wide_math {wide_math}, math_512 {math_512}) at element {bad}: compiled {} vs interpreter {}\n{}\n{}",
                    g.data().get(bad),
                    w.data().get(bad),
                    kiln_ir::print_func(&c.body),
                    exe.kernel_ir_text()
                );
            }
        }
    }
}

/// Compiles `src` expecting `Unsupported`.
pub fn expect_unsupported(src: &str) -> String {
    match compile_cluster(&cluster(src), &CpuOptions::default()) {
        Err(CpuCompileError::Unsupported(r)) => r,
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("expected Unsupported, compiled"),
    }
}

/// Batch norm's training statistics over `f32[300,130]` (layer norm over the batch axis):
/// two reductions down the columns, the mean reshaped and broadcast into the second, and
/// `rsqrt(var + eps)` broadcast into the output.
pub const BATCH_NORM: &str = "func @f(%x: f32[300,130]) -> f32[300,130] {
  %s = reduce_sum %x, axes=[0] : f32[130]
  %n = constant 300.0 : f32[130]
  %mean = div %s, %n : f32[130]
  %mr = reshape %mean : f32[1,130]
  %mb = broadcast_in_dim %mr, dims=[0,1] : f32[300,130]
  %d = sub %x, %mb : f32[300,130]
  %d2 = mul %d, %d : f32[300,130]
  %ss = reduce_sum %d2, axes=[0] : f32[130]
  %var = div %ss, %n : f32[130]
  %eps = constant 1e-5 : f32[130]
  %ve = add %var, %eps : f32[130]
  %r = rsqrt %ve : f32[130]
  %rb = broadcast_in_dim %r, dims=[1] : f32[300,130]
  %y = mul %d, %rb : f32[300,130]
  return %y
}";
