//! Shared by the test binaries: one kernel per [`Arith`] primitive, and input generators.
#![allow(dead_code)] // each test binary uses a different part

pub mod programs;
pub mod sim;

use kiln_math::{Arith, FloatCC, IntCC};
use kiln_ptx::ptxas::Ptxas;
use std::path::PathBuf;

/// One [`Arith`] primitive as a function of two floats (integer ops act on the bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Sqrt,
    Neg,
    Abs,
    Min,
    Max,
    Floor,
    Ceil,
    Trunc,
    RoundEven,
    Cmp(FloatCC),
    FToSint,
    SintToF,
    UintToF,
    Iadd,
    Isub,
    Imul,
    Umulhi,
    And,
    Or,
    Xor,
    Not,
    Shl,
    Lshr,
    Ashr,
    Rotl,
    Rotl0,
    Icmp(IntCC),
    Masks,
}

/// Every primitive, each comparison direction included.
pub fn all_prims() -> Vec<Prim> {
    use Prim::*;
    let mut v = vec![
        Add, Sub, Mul, Div, Fma, Sqrt, Neg, Abs, Min, Max, Floor, Ceil, Trunc, RoundEven, FToSint,
        SintToF, UintToF, Iadd, Isub, Imul, Umulhi, And, Or, Xor, Not, Shl, Lshr, Ashr, Rotl,
        Rotl0, Masks,
    ];
    for cc in [
        FloatCC::Lt,
        FloatCC::Le,
        FloatCC::Gt,
        FloatCC::Ge,
        FloatCC::Eq,
        FloatCC::Ne,
        FloatCC::Ordered,
        FloatCC::Unordered,
    ] {
        v.push(Cmp(cc));
    }
    for cc in [
        IntCC::Eq,
        IntCC::Ne,
        IntCC::Slt,
        IntCC::Sle,
        IntCC::Sgt,
        IntCC::Sge,
        IntCC::Ult,
        IntCC::Ule,
        IntCC::Ugt,
        IntCC::Uge,
    ] {
        v.push(Icmp(cc));
    }
    v
}

impl Prim {
    /// A symbol-safe name.
    pub fn name(self) -> String {
        format!("{self:?}").replace(['(', ')'], "_").to_lowercase()
    }

    /// True when the result is an integer (compare all bits, NaN patterns included).
    pub fn integer_result(self) -> bool {
        use Prim::*;
        matches!(
            self,
            FToSint
                | Iadd
                | Isub
                | Imul
                | Umulhi
                | And
                | Or
                | Xor
                | Not
                | Shl
                | Lshr
                | Ashr
                | Rotl
                | Rotl0
                | Icmp(_)
                | Masks
        )
    }

    /// `prim(x, y)` over any [`Arith`].
    pub fn apply<A: Arith>(self, a: &mut A, x: A::F, y: A::F) -> A::F {
        use Prim::*;
        let (xb, yb) = (a.to_bits(x), a.to_bits(y));
        let int = |a: &mut A, u: A::U| a.from_bits(u);
        match self {
            Add => a.add(x, y),
            Sub => a.sub(x, y),
            Mul => a.mul(x, y),
            Div => a.div(x, y),
            Fma => a.fma(x, y, x),
            Sqrt => a.sqrt(x),
            Neg => a.neg(x),
            Abs => a.abs(x),
            Min => a.min(x, y),
            Max => a.max(x, y),
            Floor => a.floor(x),
            Ceil => a.ceil(x),
            Trunc => a.trunc(x),
            RoundEven => a.round_even(x),
            Cmp(cc) => {
                let m = a.fcmp(cc, x, y);
                let (one, zero) = (a.fconst(1.0), a.fconst(0.0));
                a.select(m, one, zero)
            }
            FToSint => {
                let r = a.f_to_sint(x);
                int(a, r)
            }
            SintToF => a.sint_to_f(xb),
            UintToF => a.uint_to_f(xb),
            Iadd => {
                let r = a.iadd(xb, yb);
                int(a, r)
            }
            Isub => {
                let r = a.isub(xb, yb);
                int(a, r)
            }
            Imul => {
                let r = a.imul(xb, yb);
                int(a, r)
            }
            Umulhi => {
                let r = a.umulhi(xb, yb);
                int(a, r)
            }
            And => {
                let r = a.and(xb, yb);
                int(a, r)
            }
            Or => {
                let r = a.or(xb, yb);
                int(a, r)
            }
            Xor => {
                let r = a.xor(xb, yb);
                int(a, r)
            }
            Not => {
                let r = a.not(xb);
                int(a, r)
            }
            Shl => {
                let r = a.shl(xb, 3);
                int(a, r)
            }
            Lshr => {
                let r = a.lshr(xb, 5);
                int(a, r)
            }
            Ashr => {
                let r = a.ashr(xb, 5);
                int(a, r)
            }
            Rotl => {
                let r = a.rotl(xb, 7);
                int(a, r)
            }
            Rotl0 => {
                let r = a.rotl(xb, 0);
                int(a, r)
            }
            Icmp(cc) => {
                let m = a.icmp(cc, xb, yb);
                let (one, zero) = (a.uconst(1), a.uconst(0));
                let r = a.select_u(m, one, zero);
                int(a, r)
            }
            Masks => {
                // (x < y) & !(x == y) | unordered, as 0/1 bits: exercises mand/mor/mnot.
                let lt = a.fcmp(FloatCC::Lt, x, y);
                let eq = a.fcmp(FloatCC::Eq, x, y);
                let ne = a.mnot(eq);
                let m = a.mand(lt, ne);
                let un = a.fcmp(FloatCC::Unordered, x, y);
                let m = a.mor(m, un);
                let (one, zero) = (a.uconst(1), a.uconst(0));
                let r = a.select_u(m, one, zero);
                int(a, r)
            }
        }
    }
}

pub use kiln_testkit::Rng;

/// Special f32 values: zeros, infinities, NaNs, subnormal and normal extremes, integers and
/// halves, and the edges where the math functions switch formulas.
pub fn special_f32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        f32::INFINITY,
        f32::NAN,
        f32::from_bits(0x7fc0_0001),
        f32::from_bits(0x7f80_0001),
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::EPSILON,
        1.0,
        0.5,
        1.5,
        2.0,
        2.5,
        3.0,
        3.5,
        10.0,
        100.0,
        1e-7,
        1e-20,
        1e20,
        1e30,
        88.72283,
        88.72284,
        89.0,
        103.97,
        104.0,
        87.33655,
        9.0,
        15.0,
        std::f32::consts::LN_2,
        1.0986123,
        std::f32::consts::PI,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::FRAC_PI_4,
        105414.35,
        102_940.0,
        1e8,
        1.6777216e7,
        8388608.0,
        8388607.5,
        4294967296.0,
        2147483648.0,
        2147483520.0,
        0.25,
        0.75,
        0.875,
        1e-4,
        3e-3,
        0.9999999,
        1.0000001,
        -1.0 + 1e-7,
        5.9604645e-8,
        4.0,
        20.0,
        50.0,
        0.84375,
        1.25,
        2.857143,
        6.0,
    ];
    let neg: Vec<f32> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

/// `n` inputs: [`special_f32`], then every binade (both signs, evenly spread significands),
/// then random bit patterns.
pub fn f32_inputs(per_binade: u32, random: usize, seed: u64) -> Vec<f32> {
    let mut v = special_f32();
    let step = (1u32 << 23) / per_binade;
    let mut rng = Rng(seed);
    for sign in [0u32, 1] {
        for e in 0..=255u32 {
            for k in 0..per_binade {
                let m = k * step + (rng.next() as u32 % step);
                v.push(f32::from_bits(sign << 31 | e << 23 | m));
            }
        }
    }
    v.extend((0..random).map(|_| f32::from_bits(rng.next() as u32)));
    v
}

/// As [`f32_inputs`] for f64: specials (widened), every binade, random bit patterns.
pub fn f64_inputs(per_binade: u64, random: usize, seed: u64) -> Vec<f64> {
    let mut v: Vec<f64> = special_f32().into_iter().map(f64::from).collect();
    v.extend([
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::from_bits(1),
        709.782712893384,
        710.0,
        -745.2,
    ]);
    let step = (1u64 << 52) / per_binade;
    let mut rng = Rng(seed);
    for sign in [0u64, 1] {
        for e in 0..=2047u64 {
            for k in 0..per_binade {
                let m = k * step + rng.next() % step;
                v.push(f64::from_bits(sign << 63 | e << 52 | m));
            }
        }
    }
    v.extend((0..random).map(|_| f64::from_bits(rng.next())));
    v
}

/// Pairs for two-input functions: every pair of specials, then random x with y drawn from
/// random bits, small integers, halves and moderate values.
pub fn pairs<F: Copy>(
    specials: &[F],
    random: impl Fn(&mut Rng) -> F,
    y_kinds: impl Fn(&mut Rng) -> F,
    n: usize,
    seed: u64,
) -> (Vec<F>, Vec<F>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &x in specials {
        for &y in specials {
            xs.push(x);
            ys.push(y);
        }
    }
    let mut rng = Rng(seed);
    for _ in 0..n {
        xs.push(random(&mut rng));
        ys.push(y_kinds(&mut rng));
    }
    (xs, ys)
}

/// The test edge: the only place that reads the environment.
pub fn ptxas_or_skip() -> Option<Ptxas> {
    let explicit = std::env::var_os("KILN_PTXAS").map(PathBuf::from);
    match Ptxas::find(explicit.as_deref(), std::env::var_os("PATH").as_deref()) {
        Ok(p) => Some(p),
        Err(e) => {
            kiln_testkit::skip_unless_required("KILN_REQUIRE_PTXAS", e);
            None
        }
    }
}
