//! The generic functions have no data-dependent control flow: an [`Arith`] that records every
//! operation it is asked for sees the same sequence for any input. That is what lets the
//! Cranelift and PTX backends emit them as straight-line (SIMD) code.

use kiln_math::recording::RecordingArith as CountingArith;
use kiln_math::{Arith, ScalarF32, ScalarF64};

type Unary<A> = fn(&mut A, <A as Arith>::F) -> <A as Arith>::F;

/// The unary functions, as generic instantiations for `A`.
fn unary<A: Arith>() -> Vec<(&'static str, Unary<A>)> {
    vec![
        ("exp", kiln_math::exp::<A>),
        ("expm1", kiln_math::expm1::<A>),
        ("log", kiln_math::log::<A>),
        ("log1p", kiln_math::log1p::<A>),
        ("tanh", kiln_math::tanh::<A>),
        ("logistic", kiln_math::logistic::<A>),
        ("erf", kiln_math::erf::<A>),
        ("sin", kiln_math::sin::<A>),
        ("cos", kiln_math::cos::<A>),
        ("rsqrt", kiln_math::rsqrt::<A>),
        ("tan", kiln_math::tan::<A>),
        ("cbrt", kiln_math::cbrt::<A>),
        ("atan", kiln_math::atan::<A>),
        ("round_afz", kiln_math::round_afz::<A>),
    ]
}

/// The f32 functions whose shared definition uses `fma` (the f32 `exp` and what calls it,
/// and the f32 Cody–Waite reduction of `sin` and `cos`): exactly rounded on every backend,
/// but slow where a host lacks FMA, so the list is kept deliberate. Every other function,
/// and every f64 one, must trace without it.
const F32_FMA: &[&str] = &["exp", "tanh", "erf", "sin", "cos", "tan"];

/// The f64 functions that use `fma`: glibc's double `log` and `sincos` as its FMA build
/// computes them (TensorFlow's f64 Box–Muller), where the fusions are part of the result.
const F64_FMA: &[&str] = &["log_glibc", "sincos_glibc"];

/// Traces `f` on each input and asserts they are all identical and contain no `fma` (unless
/// `name` is an f32 function of [`F32_FMA`]).
fn assert_same_trace<S: Copy, X: Copy + std::fmt::Debug>(
    name: &str,
    inner: S,
    inputs: &[X],
    mut run: impl FnMut(&mut CountingArith<S>, X),
) {
    let mut first: Option<Vec<String>> = None;
    for &x in inputs {
        let mut a = CountingArith::new(inner);
        run(&mut a, x);
        assert!(!a.trace.is_empty(), "{name}: empty trace");
        let inner_is = |t: &str| std::any::type_name::<S>().ends_with(t);
        let fma_allowed = (inner_is("ScalarF32") && F32_FMA.contains(&name))
            || (inner_is("ScalarF64") && F64_FMA.contains(&name));
        let uses_fma = a.trace.iter().any(|op| op == "fma");
        assert!(fma_allowed || !uses_fma, "{name} uses fma");
        assert_eq!(
            uses_fma, fma_allowed,
            "{name}: F32_FMA/F64_FMA is out of date"
        );
        match &first {
            None => {
                let format = std::any::type_name::<S>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("?");
                println!(
                    "{format} {name}: {} operations, constants included",
                    a.trace.len()
                );
                first = Some(a.trace)
            }
            Some(t) => assert!(*t == a.trace, "{name}: trace for {x:?} differs"),
        }
    }
}

#[test]
fn exp_trace_is_input_independent() {
    assert_same_trace(
        "exp",
        ScalarF32,
        &[0.5f32, 1e30, f32::NAN, -1e30],
        |a, x| {
            kiln_math::exp(a, x);
        },
    );
}

#[test]
fn every_function_traces_identically_f32() {
    let inputs = [
        0.5f32,
        1e30,
        f32::NAN,
        -1e30,
        0.0,
        -0.0,
        1e-45,
        -2.5,
        88.8,
        f32::INFINITY,
        3.0e38,
    ];
    for (name, f) in unary::<CountingArith<ScalarF32>>() {
        assert_same_trace(name, ScalarF32, &inputs, |a, x| {
            f(a, x);
        });
    }
    let pairs = [
        (2.0f32, 3.0f32),
        (-2.0, 0.5),
        (f32::NAN, 0.0),
        (0.0, -1.0),
        (1e-40, 1e10),
    ];
    assert_same_trace("pow", ScalarF32, &pairs, |a, (x, y)| {
        kiln_math::pow(a, x, y);
    });
    assert_same_trace("atan2", ScalarF32, &pairs, |a, (y, x)| {
        kiln_math::atan2(a, y, x);
    });
}

#[test]
fn every_function_traces_identically_f64() {
    let inputs = [
        0.5f64,
        1e300,
        f64::NAN,
        -1e300,
        0.0,
        -0.0,
        5e-324,
        -2.5,
        709.9,
        f64::INFINITY,
    ];
    for (name, f) in unary::<CountingArith<ScalarF64>>() {
        assert_same_trace(name, ScalarF64, &inputs, |a, x| {
            f(a, x);
        });
    }
    let pairs = [
        (2.0f64, 3.0f64),
        (-2.0, 0.5),
        (f64::NAN, 0.0),
        (0.0, -1.0),
        (1e-310, 1e10),
    ];
    assert_same_trace("atan2", ScalarF64, &pairs, |a, (y, x)| {
        kiln_math::atan2(a, y, x);
    });
    assert_same_trace("pow", ScalarF64, &pairs, |a, (x, y)| {
        kiln_math::pow(a, x, y);
    });
}

#[test]
fn glibc_f64_functions_trace_identically() {
    let inputs = [
        0.5f64,
        1.0,
        1.01,
        0.3,
        2.0,
        5.5,
        1e8,
        1e300,
        f64::NAN,
        -1e300,
        0.0,
        -0.0,
        5e-324,
        -2.5,
        f64::INFINITY,
    ];
    assert_same_trace("log_glibc", ScalarF64, &inputs, |a, x| {
        kiln_math::log_glibc(a, x);
    });
    assert_same_trace("sincos_glibc", ScalarF64, &inputs, |a, x| {
        kiln_math::sincos_glibc(a, x);
    });
}
