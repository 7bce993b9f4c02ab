//! The GPU backend against the interpreter, on a real GPU. Without one every test prints
//! exactly why it skipped ("skipped: no GPU (…)") and passes, unless `KILN_REQUIRE_GPU=1`
//! makes it fail; the pure pieces (gemm mapping,
//! launch candidates, cache entries) are unit-tested on the CPU in `kiln_ptx::gemm` and
//! `kiln_runtime::gpu`.

use kiln_flags::Flags;
use kiln_interp::Interpreter;
use kiln_ir::{parse_module, Cluster, Tensor};
use kiln_runtime::{synth_input, Backend, CompileFailure, GpuBackend};

fn backend(level: u8) -> Option<GpuBackend> {
    let flags = Flags {
        autotune_level: level,
        ..Flags::default()
    };
    match GpuBackend::open(&flags) {
        Ok(b) => Some(b),
        Err(e) => {
            kiln_testkit::skip_unless_required("KILN_REQUIRE_GPU", e);
            None
        }
    }
}

fn cluster(src: &str) -> Cluster {
    let m = parse_module(src, "test.kir").expect("test source parses");
    Cluster {
        name: "cluster_0".into(),
        body: m.entry().expect("one function").clone(),
    }
}

fn inputs(c: &Cluster) -> Vec<Tensor> {
    c.body
        .param_types()
        .iter()
        .enumerate()
        .map(|(i, t)| synth_input(t, i + 1))
        .collect()
}

fn reference(c: &Cluster, ins: &[Tensor]) -> Vec<Tensor> {
    let refs: Vec<&Tensor> = ins.iter().collect();
    Interpreter::new(1)
        .unwrap()
        .run_refs(&c.body, &refs)
        .unwrap()
        .0
}

/// Compiles `src`, runs it on synthesized inputs, and compares with the interpreter: bit for
/// bit, or within `tol` (relative) when the cluster has a dot.
fn check(b: &GpuBackend, src: &str, tol: Option<f64>) {
    let c = cluster(src);
    let exe = match b.compile(&c) {
        Ok(e) => e,
        Err(CompileFailure::Unsupported(why)) => panic!("unsupported on the GPU: {why}\n{src}"),
        Err(e) => panic!("{e}\n{src}"),
    };
    let ins = inputs(&c);
    let refs: Vec<&Tensor> = ins.iter().collect();
    let got = exe.run(&refs).unwrap();
    let want = reference(&c, &ins);
    compare(&got, &want, tol, src);
    // The persistent form reloads without a PTX JIT and gives the same bits.
    let bytes = exe.to_bytes().expect("GPU executables serialise");
    let again = b.load(&c, &bytes).unwrap().run(&refs).unwrap();
    compare(&again, &got, None, src);
}

fn compare(got: &[Tensor], want: &[Tensor], tol: Option<f64>, src: &str) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.ty(), w.ty(), "{src}");
        match tol {
            None => {
                for i in 0..g.num_elements() {
                    let (x, y) = (g.data().get(i), w.data().get(i));
                    assert!(
                        x.same_bits(y) || (x.to_f64().is_nan() && y.to_f64().is_nan()),
                        "element {i}: gpu {x:?} vs interpreter {y:?}\n{src}"
                    );
                }
            }
            Some(tol) => {
                for i in 0..g.num_elements() {
                    let (x, y) = (g.data().get(i).to_f64(), w.data().get(i).to_f64());
                    assert!(
                        (x - y).abs() <= tol * (1.0 + y.abs()),
                        "element {i}: gpu {x} vs interpreter {y}\n{src}"
                    );
                }
            }
        }
    }
}

const POINTWISE: &str = "func @f(%x: f32[1000], %y: f32[1000]) -> f32[1000] {
  %a = mul %x, %y : f32[1000]
  %b = tanh %a : f32[1000]
  %c = exp %b : f32[1000]
  %d = add %c, %x : f32[1000]
  return %d
}";

const BROADCAST_TRANSPOSE: &str = "func @f(%x: f32[33,17], %v: f32[33]) -> f32[17,33] {
  %vb = broadcast_in_dim %v, dims=[0] : f32[33,17]
  %s = sub %x, %vb : f32[33,17]
  %t = transpose %s, perm=[1,0] : f32[17,33]
  %e = erf %t : f32[17,33]
  return %e
}";

const SOFTMAX: &str = "func @softmax(%x: f32[7,129]) -> f32[7,129] {
  %m  = reduce_max %x, axes=[1] : f32[7]
  %mb = broadcast_in_dim %m, dims=[0] : f32[7,129]
  %d  = sub %x, %mb : f32[7,129]
  %e  = exp %d : f32[7,129]
  %s  = reduce_sum %e, axes=[1] : f32[7]
  %sb = broadcast_in_dim %s, dims=[0] : f32[7,129]
  %y  = div %e, %sb : f32[7,129]
  return %y
}";

const LAYERNORM: &str = "func @ln(%x: f32[5,300], %g: f32[300]) -> f32[5,300] {
  %s = reduce_sum %x, axes=[1] : f32[5]
  %n = constant 300.0 : f32[5]
  %m = div %s, %n : f32[5]
  %mb = broadcast_in_dim %m, dims=[0] : f32[5,300]
  %d = sub %x, %mb : f32[5,300]
  %q = mul %d, %d : f32[5,300]
  %v = reduce_sum %q, axes=[1] : f32[5]
  %vm = div %v, %n : f32[5]
  %eps = constant 0.00001 : f32[5]
  %ve = add %vm, %eps : f32[5]
  %r = rsqrt %ve : f32[5]
  %rb = broadcast_in_dim %r, dims=[0] : f32[5,300]
  %y = mul %d, %rb : f32[5,300]
  %gb = broadcast_in_dim %g, dims=[1] : f32[5,300]
  %z = mul %y, %gb : f32[5,300]
  return %z
}";

#[test]
fn gpu_pointwise_broadcast_transpose_softmax_layernorm_bit_for_bit() {
    let Some(b) = backend(0) else { return };
    for src in [POINTWISE, BROADCAST_TRANSPOSE, SOFTMAX, LAYERNORM] {
        check(&b, src, None);
    }
}

#[test]
fn gpu_reductions_over_odd_and_long_rows_bit_for_bit() {
    let Some(b) = backend(0) else { return };
    for (rows, len) in [
        (3, 1),
        (5, 31),
        (4, 33),
        (2, 4095),
        (3, 4097),
        (2, 10001),
        (1, 70001),
    ] {
        for (op, dt) in [
            ("reduce_sum", "f32"),
            ("reduce_max", "f32"),
            ("reduce_sum", "f64"),
        ] {
            let src = format!(
                "func @r(%x: {dt}[{rows},{len}]) -> {dt}[{rows}] {{
  %e = abs %x : {dt}[{rows},{len}]
  %s = {op} %e, axes=[1] : {dt}[{rows}]
  return %s
}}"
            );
            check(&b, &src, None);
        }
    }
}

#[test]
fn gpu_dot_with_epilogue_within_tolerance() {
    let Some(b) = backend(0) else { return };
    let plain = "func @mm(%a: f32[64,96], %w: f32[96,48], %bias: f32[48]) -> f32[64,48] {
  %d = dot_general %a, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[64,48]
  %bb = broadcast_in_dim %bias, dims=[1] : f32[64,48]
  %y = add %d, %bb : f32[64,48]
  %z = tanh %y : f32[64,48]
  return %z
}";
    check(&b, plain, Some(1e-4));
    let batched_t = "func @bmm(%a: f64[3,20,10], %w: f64[3,30,10]) -> f64[3,20,30] {
  %d = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : f64[3,20,30]
  %z = exp %d : f64[3,20,30]
  return %z
}";
    check(&b, batched_t, Some(1e-10));
    // 16-bit products: cublasGemmEx, accumulated in f32 and rounded once (one 16-bit ulp
    // apart from the interpreter at most, before the epilogue's own rounding).
    check(&b, HALF_DOT, Some(4e-3));
    check(&b, &HALF_DOT.replace("f16", "bf16"), Some(3e-2));
    check(&b, HALF_BATCHED_DOT, Some(3e-2));
    check(&b, HALF_CONV, Some(4e-3));
}

/// An `f16` product with a bias and `tanh` epilogue.
const HALF_DOT: &str = "func @mm(%a: f16[64,96], %w: f16[96,48], %bias: f16[48]) -> f16[64,48] {
  %d = dot_general %a, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f16[64,48]
  %bb = broadcast_in_dim %bias, dims=[1] : f16[64,48]
  %y = add %d, %bb : f16[64,48]
  %z = tanh %y : f16[64,48]
  return %z
}";

/// A batched `bf16` product with a transposed right operand.
const HALF_BATCHED_DOT: &str = "func @bmm(%a: bf16[3,20,10], %w: bf16[3,30,10]) -> bf16[3,20,30] {
  %d = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : bf16[3,20,30]
  %z = tanh %d : bf16[3,20,30]
  return %z
}";

/// An `f16` convolution (im2col kernel + a 16-bit GEMM) with a `tanh` epilogue.
const HALF_CONV: &str = "func @f(%x: f16[2,6,6,4], %w: f16[3,3,4,8]) -> f16[2,4,4,8] {
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3] : f16[2,4,4,8]
  %y = tanh %c : f16[2,4,4,8]
  return %y
}";

#[test]
fn gpu_autotune_levels_one_and_four() {
    for level in [1, 4] {
        let Some(b) = backend(level) else { return };
        for src in [SOFTMAX, POINTWISE, LAYERNORM] {
            check(&b, src, None);
            // The chosen blocks are in the entry and survive the round trip.
            let c = cluster(src);
            let exe = b.compile(&c).unwrap();
            let entry = kiln_runtime::GpuEntry::from_bytes(&exe.to_bytes().unwrap()).unwrap();
            for l in &entry.launches {
                assert!(l.block >= 32 && l.block <= 1024, "{l:?}");
            }
        }
    }
}

#[test]
fn gpu_unsupported_dots_fall_back_at_compile_time() {
    let Some(b) = backend(0) else { return };
    let src = "func @mm(%a: i32[4,5], %w: i32[5,6]) -> i32[4,6] {
  %d = dot_general %a, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : i32[4,6]
  return %d
}";
    let Ok(m) = parse_module(src, "t.kir") else {
        eprintln!("skipped: integer dot_general is not in the IR");
        return;
    };
    let c = Cluster {
        name: "cluster_0".into(),
        body: m.entry().unwrap().clone(),
    };
    assert!(matches!(b.compile(&c), Err(CompileFailure::Unsupported(_))));
}

/// Runs everywhere: every source above parses, lowers to kernel IR, emits PTX for sm_90 and
/// maps its dots to gemms, so the GPU tests exercise the GPU and not a typo.
#[test]
fn gpu_test_sources_lower_and_emit_without_a_gpu() {
    let mut sources: Vec<String> = [POINTWISE, BROADCAST_TRANSPOSE, SOFTMAX, LAYERNORM]
        .iter()
        .map(|s| s.to_string())
        .collect();
    sources.push(
        "func @r(%x: f32[3,70001]) -> f32[3] {
  %e = abs %x : f32[3,70001]
  %s = reduce_max %e, axes=[1] : f32[3]
  return %s
}"
        .into(),
    );
    sources.push(
        "func @bmm(%a: f64[3,20,10], %w: f64[3,30,10]) -> f64[3,20,30] {
  %d = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : f64[3,20,30]
  %z = exp %d : f64[3,20,30]
  return %z
}"
        .into(),
    );
    let half_bf16_dot = HALF_DOT.replace("f16", "bf16");
    for src in [HALF_DOT, &half_bf16_dot, HALF_BATCHED_DOT] {
        sources.push(src.to_string());
    }
    for src in &sources {
        let c = cluster(src);
        let p = kiln_compiler::lower::lower_cluster(&c).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        let target = kiln_ptx::Target::from_sm(90).unwrap();
        let ptx = kiln_ptx::emit_program(&p, target).unwrap_or_else(|e| panic!("{e}\n{src}"));
        // One entry per kernel, or one fused entry for a row-blocked program.
        let fused = matches!(
            ptx.kernels.as_slice(),
            [l] if matches!(l.mapping, kiln_ptx::Mapping::WarpPerRow { .. })
        );
        assert!(fused || ptx.kernels.len() == p.kernels.len(), "{src}");
        for d in &p.dots {
            let shape = |b| match b {
                kiln_compiler::kernel::BufRef::Input(i) => p.inputs[i].shape.clone(),
                kiln_compiler::kernel::BufRef::Temp(i) => p.temps[i].shape.clone(),
                other => panic!("dot operand {other:?}"),
            };
            let kiln_compiler::kernel::Contraction::Dot(dims) = &d.op else {
                panic!("a convolution step in {src}");
            };
            let operands = kiln_compiler::kernel::buf_dtype(&p, d.lhs);
            let out = p.temps[d.out].dtype;
            kiln_ptx::plan_dot(operands, out, &shape(d.lhs), &shape(d.rhs), dims).unwrap();
        }
    }
}

/// A graph whose two compiled clusters meet on the device, around a dot on the host: the
/// GPU run equals the interpreter bit for bit and copies only at the boundaries (the same
/// counts as the mock device in `device_memory.rs`).
#[test]
fn gpu_graph_moves_data_once() {
    let Some(b) = backend(0) else { return };
    let flags = Flags::from_sources(&kiln_flags::Sources {
        tf_xla_flags: Some(
            "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2".into(),
        ),
        ..Default::default()
    })
    .unwrap();
    let src = "func @f(%x: f32[64,33]) -> f32[64,33] {
  %a = exp %x : f32[64,33]
  %b = tanh %a : f32[64,33]
  %c = sin %b : f32[64,33]
  %d = mul %c, %x : f32[64,33]
  return %d
}";
    let mut f = kiln_ir::parse_func(src, "t.kir").unwrap();
    kiln_compiler::run_pipeline(&mut f, &kiln_compiler::Options::from_flags(&flags)).unwrap();
    let opts = kiln_runtime::RuntimeOptions {
        policy: kiln_runtime::PolicyConfig::from_flags(&Flags {
            lazy_compilation: false,
            ..flags.clone()
        }),
        threads: 1,
        async_workers: 0,
        persistent: None,
        flags,
    };
    let rt = kiln_runtime::Runtime::new(Some(std::sync::Arc::new(b)), opts).unwrap();
    let x = synth_input(&f.param_types()[0], 1);
    let want = Interpreter::new(1)
        .unwrap()
        .run(&f, std::slice::from_ref(&x))
        .unwrap();
    let got = rt.run(&f, &[x]).unwrap();
    compare(&got, &want, None, src);
    assert!(rt.stats().values().all(|s| s.compiled_runs == 1));
    let t = rt.transfers();
    assert_eq!((t.uploads, t.downloads), (1, 1), "{t:?}");
}
