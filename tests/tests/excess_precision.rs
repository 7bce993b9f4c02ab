//! `--xla_allow_excess_precision=true` through the whole library: the rewrite runs before
//! clustering, so compiled and fallback runs agree bit for bit at any thread count, and a
//! chain of 16-bit ops rounds once (closer to the exact result than rounding after each op).

use kiln_ir::{bf16, f16, parse_func, Buffer, DType, Func, Tensor};
use kiln_testkit::{first_difference, Rng};

/// GELU (tanh form) and layer norm in dtype `DT`, on odd shapes.
const GELU: &str = "
func @gelu(%x: DT[37,129]) -> DT[37,129] {
  %c3 = constant 0.044715 : DT[37,129]
  %x2 = mul %x, %x : DT[37,129]
  %x3 = mul %x2, %x : DT[37,129]
  %t0 = mul %x3, %c3 : DT[37,129]
  %t1 = add %x, %t0 : DT[37,129]
  %k = constant 0.7978845608 : DT[37,129]
  %t2 = mul %t1, %k : DT[37,129]
  %th = tanh %t2 : DT[37,129]
  %one = constant 1.0 : DT[37,129]
  %t3 = add %th, %one : DT[37,129]
  %half = constant 0.5 : DT[37,129]
  %hx = mul %x, %half : DT[37,129]
  %y = mul %hx, %t3 : DT[37,129]
  return %y
}";

const LAYERNORM: &str = "
func @layernorm(%x: DT[23,67], %gamma: DT[67], %beta: DT[67]) -> DT[23,67] {
  %s = reduce_sum %x, axes=[1] : DT[23]
  %n = constant 0.014925373 : DT[23]
  %mean = mul %s, %n : DT[23]
  %mb = broadcast_in_dim %mean, dims=[0] : DT[23,67]
  %d = sub %x, %mb : DT[23,67]
  %d2 = mul %d, %d : DT[23,67]
  %ss = reduce_sum %d2, axes=[1] : DT[23]
  %var = mul %ss, %n : DT[23]
  %eps = constant 1e-5 : DT[23]
  %ve = add %var, %eps : DT[23]
  %r = rsqrt %ve : DT[23]
  %rb = broadcast_in_dim %r, dims=[0] : DT[23,67]
  %xn = mul %d, %rb : DT[23,67]
  %gb = broadcast_in_dim %gamma, dims=[1] : DT[23,67]
  %bb = broadcast_in_dim %beta, dims=[1] : DT[23,67]
  %g = mul %xn, %gb : DT[23,67]
  %y = add %g, %bb : DT[23,67]
  return %y
}";

fn program(text: &str, dtype: DType) -> Func {
    parse_func(&text.replace("DT", dtype.name()), "excess_precision.kir").unwrap()
}

fn session(excess: bool, threads: usize, compiled: bool) -> kiln::Session {
    let tf = if compiled {
        "--tf_xla_enable_lazy_compilation=false --tf_xla_auto_jit=2 --tf_xla_min_cluster_size=1"
    } else {
        "--tf_xla_auto_jit=0"
    };
    let sources = kiln_flags::Sources {
        tf_xla_flags: Some(tf.to_string()),
        xla_flags: Some(format!(
            "--xla_allow_excess_precision={excess} --xla_cpu_num_threads={threads}"
        )),
        ..Default::default()
    };
    let flags = kiln_flags::Flags::from_sources(&sources).unwrap();
    kiln::Session::with_device(&flags, kiln::Device::Cpu).unwrap()
}

fn run(s: &kiln::Session, f: &Func, inputs: &[Tensor]) -> Vec<Tensor> {
    let mut g = f.clone();
    s.prepare(&mut g).unwrap();
    s.run(&g, inputs).unwrap()
}

/// Values in [-2.5, 2.5) in `f`'s parameter types: no overflow to infinity (the
/// comparisons below would only see NaNs), and GELU's `1 + tanh` never cancels beyond
/// what f32 holds (near x = -4 it keeps only 3 significant digits of f32's tanh).
fn inputs(f: &Func, seed: u64) -> Vec<Tensor> {
    let mut rng = Rng(seed);
    f.param_types()
        .iter()
        .map(|t| {
            let n = t.num_elements();
            let mut v = || (rng.next() >> 40) as f32 / (1u64 << 24) as f32 * 5.0 - 2.5;
            let data = match t.dtype {
                DType::F16 => Buffer::F16((0..n).map(|_| f16::from_f32(v())).collect()),
                _ => Buffer::Bf16((0..n).map(|_| bf16::from_f32(v())).collect()),
            };
            Tensor::new(t.shape.clone(), data).unwrap()
        })
        .collect()
}

#[test]
fn compiled_and_fallback_agree_bit_for_bit_with_excess_precision() {
    for dtype in [DType::F16, DType::Bf16] {
        for (name, text) in [("gelu", GELU), ("layernorm", LAYERNORM)] {
            let f = program(text, dtype);
            let x = inputs(&f, 7);
            let fallback = run(&session(true, 1, false), &f, &x);
            for threads in [1, 2, 7] {
                let s = session(true, threads, true);
                let compiled = run(&s, &f, &x);
                if let Some(d) = first_difference(&compiled, &fallback) {
                    panic!("{name} {dtype:?} at {threads} threads: {d}");
                }
                let runs: u64 = s.runtime().stats().values().map(|c| c.compiled_runs).sum();
                assert!(runs > 0, "{name} {dtype:?}: nothing compiled");
            }
            // The rewrite changed the numbers: a chain rounds once instead of per op.
            let per_op = run(&session(false, 1, false), &f, &x);
            assert!(
                first_difference(&per_op, &fallback).is_some(),
                "{name} {dtype:?}: the flag changed nothing"
            );
        }
    }
}

/// The elements of an f16/bf16 tensor as f64.
fn values(t: &Tensor) -> Vec<f64> {
    match t.data() {
        Buffer::F16(v) => v.iter().map(|h| f64::from(h.to_f32())).collect(),
        Buffer::Bf16(v) => v.iter().map(|h| f64::from(h.to_f32())).collect(),
        other => panic!("not 16-bit: {:?}", other.dtype()),
    }
}

/// A constant of the program as the 16-bit value it parses to.
fn constant(c: f32, dtype: DType) -> f64 {
    f64::from(match dtype {
        DType::F16 => f16::from_f32(c).to_f32(),
        _ => bf16::from_f32(c).to_f32(),
    })
}

/// |got - exact| in units of the 16-bit format's spacing at `exact`.
fn ulps(got: f64, exact: f64, dtype: DType) -> f64 {
    let (mantissa, min_exp) = match dtype {
        DType::F16 => (10, -14),
        _ => (7, -126),
    };
    let e = exact.abs().log2().floor().max(f64::from(min_exp));
    (got - exact).abs() / 2f64.powf(e - f64::from(mantissa))
}

#[test]
fn a_16_bit_gelu_rounds_once_with_excess_precision() {
    for dtype in [DType::F16, DType::Bf16] {
        let f = program(GELU, dtype);
        let x = inputs(&f, 11);
        let c = |v| constant(v, dtype);
        let exact: Vec<f64> = values(&x[0])
            .iter()
            .map(|&x| {
                let t = ((x + x * x * x * c(0.044715)) * c(0.797_884_6)).tanh();
                x * c(0.5) * (t + 1.0)
            })
            .collect();
        let worst = |excess: bool| {
            let y = run(&session(excess, 2, true), &f, &x);
            values(&y[0])
                .iter()
                .zip(&exact)
                .filter(|(_, e)| e.is_finite())
                .map(|(&g, &e)| ulps(g, e, dtype))
                .fold(0.0, f64::max)
        };
        let (once, per_op) = (worst(true), worst(false));
        eprintln!("{dtype:?} GELU, worst error in units: {once} rounded once, {per_op} per op");
        // Rounded once from f32: half a unit, plus f32's own error (far below 1% of one).
        assert!(
            once <= 0.51,
            "{dtype:?}: {once} units with excess precision"
        );
        assert!(
            per_op > once,
            "{dtype:?}: rounding per op ({per_op}) is no worse than once ({once})"
        );
    }
}
