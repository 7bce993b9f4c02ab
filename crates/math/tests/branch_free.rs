//! The generic functions have no data-dependent control flow: an [`Arith`] that records every
//! operation it is asked for sees the same sequence for any input. That is what lets the
//! Cranelift and PTX backends emit them as straight-line (SIMD) code.

use kiln_math::{Arith, FloatCC, Format, IntCC, ScalarF32, ScalarF64};

/// Computes like `S` and records each operation (with its constant operands) in `trace`.
struct CountingArith<S> {
    inner: S,
    trace: Vec<String>,
}

impl<S> CountingArith<S> {
    fn new(inner: S) -> Self {
        CountingArith {
            inner,
            trace: Vec::new(),
        }
    }
}

macro_rules! traced {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            fn $name(&mut self, $($arg: $ty),*) -> $ret {
                self.trace.push(stringify!($name).to_string());
                self.inner.$name($($arg),*)
            }
        )*
    };
}

macro_rules! counting_arith {
    ($s:ty) => {
        impl Arith for CountingArith<$s> {
            type F = <$s as Arith>::F;
            type U = <$s as Arith>::U;
            type M = bool;
            const FORMAT: Format = <$s as Arith>::FORMAT;

            fn fconst(&mut self, v: f64) -> Self::F {
                self.trace.push(format!("fconst {v:e}"));
                self.inner.fconst(v)
            }
            fn uconst(&mut self, v: u64) -> Self::U {
                self.trace.push(format!("uconst {v:#x}"));
                self.inner.uconst(v)
            }
            fn fcmp(&mut self, cc: FloatCC, a: Self::F, b: Self::F) -> bool {
                self.trace.push(format!("fcmp {cc:?}"));
                self.inner.fcmp(cc, a, b)
            }
            fn icmp(&mut self, cc: IntCC, a: Self::U, b: Self::U) -> bool {
                self.trace.push(format!("icmp {cc:?}"));
                self.inner.icmp(cc, a, b)
            }
            fn shl(&mut self, a: Self::U, n: u32) -> Self::U {
                self.trace.push(format!("shl {n}"));
                self.inner.shl(a, n)
            }
            fn lshr(&mut self, a: Self::U, n: u32) -> Self::U {
                self.trace.push(format!("lshr {n}"));
                self.inner.lshr(a, n)
            }
            fn ashr(&mut self, a: Self::U, n: u32) -> Self::U {
                self.trace.push(format!("ashr {n}"));
                self.inner.ashr(a, n)
            }
            fn rotl(&mut self, a: Self::U, n: u32) -> Self::U {
                self.trace.push(format!("rotl {n}"));
                self.inner.rotl(a, n)
            }
            traced! {
                add(a: Self::F, b: Self::F) -> Self::F;
                sub(a: Self::F, b: Self::F) -> Self::F;
                mul(a: Self::F, b: Self::F) -> Self::F;
                div(a: Self::F, b: Self::F) -> Self::F;
                fma(a: Self::F, b: Self::F, c: Self::F) -> Self::F;
                sqrt(a: Self::F) -> Self::F;
                neg(a: Self::F) -> Self::F;
                abs(a: Self::F) -> Self::F;
                min(a: Self::F, b: Self::F) -> Self::F;
                max(a: Self::F, b: Self::F) -> Self::F;
                floor(a: Self::F) -> Self::F;
                ceil(a: Self::F) -> Self::F;
                trunc(a: Self::F) -> Self::F;
                round_even(a: Self::F) -> Self::F;
                select(m: bool, a: Self::F, b: Self::F) -> Self::F;
                to_bits(a: Self::F) -> Self::U;
                from_bits(a: Self::U) -> Self::F;
                f_to_sint(a: Self::F) -> Self::U;
                sint_to_f(a: Self::U) -> Self::F;
                uint_to_f(a: Self::U) -> Self::F;
                iadd(a: Self::U, b: Self::U) -> Self::U;
                isub(a: Self::U, b: Self::U) -> Self::U;
                imul(a: Self::U, b: Self::U) -> Self::U;
                umulhi(a: Self::U, b: Self::U) -> Self::U;
                and(a: Self::U, b: Self::U) -> Self::U;
                or(a: Self::U, b: Self::U) -> Self::U;
                xor(a: Self::U, b: Self::U) -> Self::U;
                not(a: Self::U) -> Self::U;
                select_u(m: bool, a: Self::U, b: Self::U) -> Self::U;
                mand(a: bool, b: bool) -> bool;
                mor(a: bool, b: bool) -> bool;
                mnot(a: bool) -> bool;
            }
        }
    };
}

counting_arith!(ScalarF32);
counting_arith!(ScalarF64);

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
    ]
}

/// Traces `f` on each input and asserts they are all identical and contain no `fma`.
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
        assert!(!a.trace.iter().any(|op| op == "fma"), "{name} uses fma");
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
    assert_same_trace("pow", ScalarF64, &pairs, |a, (x, y)| {
        kiln_math::pow(a, x, y);
    });
}
