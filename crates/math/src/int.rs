//! XLA's integer division and remainder, and `sign` of integers and floats: the rules every
//! backend shares, written once over [`Arith`].
//!
//! The integers are [`Arith::U`], read as two's-complement signed or as unsigned as the
//! `signed` argument says: `i32`/`u32` in an `F32`-format arithmetic, `i64` in an `F64`-format
//! one. Everything is straight-line code: no data-dependent branch, so a vector arithmetic
//! computes it lane by lane with the same results.
//!
//! Not here: the interpreter's own definition (`kiln_interp`'s elementwise kernels, in Rust
//! wrapping operations), which the tests below check these functions against.

use crate::arith::{Arith, FloatCC, IntCC};

/// Division or remainder: which result of [`xla_div`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DivOp {
    /// The quotient, rounded toward zero.
    Div,
    /// The remainder, with the dividend's sign.
    Rem,
}

/// XLA's integer `x / y` or `x % y`: `x / 0` is -1 (all ones, also unsigned), `x % 0 = x`,
/// and for signed integers `MIN / -1 = MIN` (wrapping), `MIN % -1 = 0`.
///
/// Never traps: the division primitive gets a safe divisor (1 where `y` is 0 or, signed, -1)
/// and the defined results are selected afterwards.
#[inline(always)]
pub fn xla_div<A: Arith>(a: &mut A, op: DivOp, signed: bool, x: A::U, y: A::U) -> A::U {
    let zero = a.uconst(0);
    let one = a.uconst(1);
    let all_ones = a.uconst(u64::MAX);
    let is_zero = a.icmp(IntCC::Eq, y, zero);
    if !signed {
        let d = a.select_u(is_zero, one, y);
        return match op {
            DivOp::Div => {
                let q = a.udiv(x, d);
                a.select_u(is_zero, all_ones, q)
            }
            DivOp::Rem => {
                let r = a.urem(x, d);
                a.select_u(is_zero, x, r)
            }
        };
    }
    let is_m_one = a.icmp(IntCC::Eq, y, all_ones);
    let unsafe_d = a.mor(is_zero, is_m_one);
    let d = a.select_u(unsafe_d, one, y);
    match op {
        DivOp::Div => {
            let q = a.sdiv(x, d);
            // x / -1 = -x, wrapping (MIN stays MIN).
            let neg = a.isub(zero, x);
            let q = a.select_u(is_m_one, neg, q);
            a.select_u(is_zero, all_ones, q)
        }
        DivOp::Rem => {
            let r = a.srem(x, d);
            let r = a.select_u(is_m_one, zero, r);
            a.select_u(is_zero, x, r)
        }
    }
}

/// `sign` of an integer: -1, 0 or 1 (`(x > 0) - (x < 0)`); unsigned: 0 or 1.
#[inline(always)]
pub fn int_sign<A: Arith>(a: &mut A, signed: bool, x: A::U) -> A::U {
    let zero = a.uconst(0);
    let one = a.uconst(1);
    if !signed {
        let nz = a.icmp(IntCC::Ne, x, zero);
        return a.select_u(nz, one, zero);
    }
    let m_one = a.uconst(u64::MAX);
    let gt = a.icmp(IntCC::Sgt, x, zero);
    let lt = a.icmp(IntCC::Slt, x, zero);
    let r = a.select_u(lt, m_one, zero);
    a.select_u(gt, one, r)
}

/// `sign` of a float: ±1 with the sign of `x`; ±0 and NaN are returned as they are.
#[inline(always)]
pub fn float_sign<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let zero = a.fconst(0.0);
    let one = a.fconst(1.0);
    let m_one = a.fconst(-1.0);
    let gt = a.fcmp(FloatCC::Gt, x, zero);
    let lt = a.fcmp(FloatCC::Lt, x, zero);
    let r = a.select(lt, m_one, x);
    a.select(gt, one, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScalarF32, ScalarF64};

    /// Edge values of 64 bits, each also read as 32 (low half).
    const EDGES: [u64; 12] = [
        0,
        1,
        2,
        3,
        7,
        u64::MAX,
        u64::MAX - 1,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        0x7fff_ffff_ffff_ffff,
        0x8000_0000_0000_0000,
    ];

    /// Edge values, then pseudo-random bits (xorshift), some with small divisors.
    fn pairs() -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = EDGES
            .iter()
            .flat_map(|&x| EDGES.iter().map(move |&y| (x, y)))
            .collect();
        let mut s = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for i in 0..20_000 {
            let x = next();
            let y = if i % 2 == 0 { next() } else { next() % 9 };
            v.push((x, y.wrapping_sub(4 * (i % 3))));
        }
        v
    }

    /// XLA's division in Rust's wrapping operations (the interpreter's definition).
    fn want_div(op: DivOp, x: i64, y: i64) -> i64 {
        match (op, y) {
            (DivOp::Div, 0) => -1,
            (DivOp::Rem, 0) => x,
            (DivOp::Div, _) => x.wrapping_div(y),
            (DivOp::Rem, _) => x.wrapping_rem(y),
        }
    }

    #[test]
    fn division_follows_xla_at_every_width() {
        for (x, y) in pairs() {
            for op in [DivOp::Div, DivOp::Rem] {
                let got = xla_div(&mut ScalarF64, op, true, x, y);
                assert_eq!(
                    got as i64,
                    want_div(op, x as i64, y as i64),
                    "i64 {op:?} {x} {y}"
                );
                let (x32, y32) = (x as u32, y as u32);
                let got = xla_div(&mut ScalarF32, op, true, x32, y32);
                let want = want_div(op, i64::from(x32 as i32), i64::from(y32 as i32));
                assert_eq!(got, want as i32 as u32, "i32 {op:?} {x32} {y32}");
                let got = xla_div(&mut ScalarF32, op, false, x32, y32);
                let want = match (op, y32) {
                    (DivOp::Div, 0) => u32::MAX,
                    (DivOp::Rem, 0) => x32,
                    (DivOp::Div, _) => x32 / y32,
                    (DivOp::Rem, _) => x32 % y32,
                };
                assert_eq!(got, want, "u32 {op:?} {x32} {y32}");
            }
        }
    }

    #[test]
    fn division_never_divides_by_zero_or_overflows() {
        // The scalar primitives answer 0 off their contract; a divisor of 1 instead of 0 or
        // -1 shows in x % 0 = x and MIN / -1 = MIN, which only the selects can give.
        for x in [0u32, 5, 0x8000_0000, u32::MAX] {
            assert_eq!(xla_div(&mut ScalarF32, DivOp::Rem, true, x, 0), x);
            assert_eq!(xla_div(&mut ScalarF32, DivOp::Rem, false, x, 0), x);
        }
        let min = 0x8000_0000u32;
        assert_eq!(
            xla_div(&mut ScalarF32, DivOp::Div, true, min, u32::MAX),
            min
        );
        assert_eq!(xla_div(&mut ScalarF32, DivOp::Rem, true, min, u32::MAX), 0);
    }

    #[test]
    fn integer_sign_is_the_difference_of_two_compares() {
        for (x, _) in pairs() {
            let want = i64::from(x as i64 > 0) - i64::from((x as i64) < 0);
            assert_eq!(int_sign(&mut ScalarF64, true, x) as i64, want, "i64 {x}");
            let x32 = x as u32;
            let want = i32::from(x32 as i32 > 0) - i32::from((x32 as i32) < 0);
            assert_eq!(
                int_sign(&mut ScalarF32, true, x32) as i32,
                want,
                "i32 {x32}"
            );
            assert_eq!(int_sign(&mut ScalarF32, false, x32), u32::from(x32 != 0));
        }
    }

    #[test]
    fn float_sign_keeps_zeros_and_nan() {
        for (bits, _) in pairs() {
            let x = f64::from_bits(bits);
            let got = float_sign(&mut ScalarF64, x);
            let want = if x == 0.0 || x.is_nan() {
                x
            } else {
                1f64.copysign(x)
            };
            assert_eq!(got.to_bits(), want.to_bits(), "f64 {x:e}");
            let x = f32::from_bits(bits as u32);
            let got = float_sign(&mut ScalarF32, x);
            let want = if x == 0.0 || x.is_nan() {
                x
            } else {
                1f32.copysign(x)
            };
            assert_eq!(got.to_bits(), want.to_bits(), "f32 {x:e}");
        }
        for x in [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-45,
            -1e-45,
        ] {
            let want = if x == 0.0 { x } else { 1f32.copysign(x) };
            assert_eq!(float_sign(&mut ScalarF32, x).to_bits(), want.to_bits());
        }
    }
}
