//! An [`Arith`] that records the operations it performs, for tests that check generic code
//! (math, random numbers) is straight-line: same trace for every input, no `fma`.

use crate::{Arith, FloatCC, Format, IntCC, ScalarF32, ScalarF64};

/// Computes like `S` and records each operation (with its constant operands) in `trace`.
///
/// Tests use it to prove a generic function is straight-line code: its trace is the same for
/// every input (no data-dependent control flow), and it contains no `fma`.
pub struct RecordingArith<S> {
    inner: S,
    /// The operations so far, one entry per call (`add`, `fconst 1.5e0`, `shl 3`, …).
    pub trace: Vec<String>,
}

impl<S> RecordingArith<S> {
    /// Wraps `inner` with an empty trace.
    pub fn new(inner: S) -> Self {
        RecordingArith {
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
        impl Arith for RecordingArith<$s> {
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
                sdiv(a: Self::U, b: Self::U) -> Self::U;
                udiv(a: Self::U, b: Self::U) -> Self::U;
                srem(a: Self::U, b: Self::U) -> Self::U;
                urem(a: Self::U, b: Self::U) -> Self::U;
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

impl crate::Widen for RecordingArith<ScalarF32> {
    type D = f64;

    fn dconst(&mut self, v: f64) -> f64 {
        self.trace.push(format!("dconst {v:e}"));
        v
    }
    traced! {
        dadd(a: f64, b: f64) -> f64;
        dmul(a: f64, b: f64) -> f64;
        dfma(a: f64, b: f64, c: f64) -> f64;
        dselect(m: bool, a: f64, b: f64) -> f64;
        widen(a: f32) -> f64;
        narrow(a: f64) -> f32;
        sint_to_d(a: u32) -> f64;
        d_to_sint(a: f64) -> u32;
    }
}
