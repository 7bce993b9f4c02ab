//! [`Arith`] over PTX virtual registers: each primitive appends its instruction(s) to a
//! [`Body`], so a generic `kiln_math` function instantiated with [`PtxArith`] emits the same
//! sequence of IEEE operations the interpreter executes (design.md, Invariant 1).
//!
//! Only exactly-rounded forms are emitted: `add/sub/mul` carry an explicit `.rn`, which also
//! keeps ptxas from contracting a `mul` and an `add` into an `fma` (PTX ISA: only "mul/add
//! sequences with no rounding modifiers may be optimized to use fused-multiply-add");
//! `div.rn`, `sqrt.rn`, `fma.rn`;
//! `cvt.rmi/rpi/rzi/rni` for floor/ceil/trunc/round-even. Never `.approx`, never `.ftz`
//! (subnormals are kept). Targets are sm_80 or newer (`min.NaN`/`max.NaN`).

use crate::module::{Body, Reg, RegClass};
use kiln_math::{Arith, FloatCC, Format, IntCC};
use std::marker::PhantomData;

/// A float format's PTX spellings (implemented by [`Single`] and [`Double`]).
pub trait PtxFloat {
    /// The [`Format`] this is.
    const FORMAT: Format;
    /// Float registers.
    const F: RegClass;
    /// Same-width integer registers.
    const U: RegClass;
    /// `f32` or `f64`: the suffix of float instructions.
    const FT: &'static str;
    /// `b32` or `b64`: the suffix of bitwise instructions.
    const BT: &'static str;
    /// `u32` or `u64`.
    const UT: &'static str;
    /// `s32` or `s64`.
    const ST: &'static str;
    /// The PTX immediate for the float `v` (`0f3F800000`, `0d3FF0000000000000`).
    fn float_literal(v: f64) -> String;
}

/// IEEE binary32: `.f32` values, `.b32` integers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Single;

/// IEEE binary64: `.f64` values, `.b64` integers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Double;

impl PtxFloat for Single {
    const FORMAT: Format = Format::F32;
    const F: RegClass = RegClass::F32;
    const U: RegClass = RegClass::B32;
    const FT: &'static str = "f32";
    const BT: &'static str = "b32";
    const UT: &'static str = "u32";
    const ST: &'static str = "s32";
    fn float_literal(v: f64) -> String {
        let r = v as f32;
        debug_assert!(v.is_nan() || r as f64 == v, "constant {v} not exact in f32");
        format!("0f{:08X}", r.to_bits())
    }
}

impl PtxFloat for Double {
    const FORMAT: Format = Format::F64;
    const F: RegClass = RegClass::F64;
    const U: RegClass = RegClass::B64;
    const FT: &'static str = "f64";
    const BT: &'static str = "b64";
    const UT: &'static str = "u64";
    const ST: &'static str = "s64";
    fn float_literal(v: f64) -> String {
        format!("0d{:016X}", v.to_bits())
    }
}

/// [`Arith`] that appends PTX instructions to a [`Body`]; `T` is [`Single`] or [`Double`].
pub struct PtxArith<'b, T> {
    body: &'b mut Body,
    format: PhantomData<T>,
}

impl<'b, T: PtxFloat> PtxArith<'b, T> {
    /// Emits into `body`.
    pub fn new(body: &'b mut Body) -> Self {
        PtxArith {
            body,
            format: PhantomData,
        }
    }

    fn f(&mut self, op: &str, srcs: &[&dyn std::fmt::Display]) -> Reg {
        self.body.def(T::F, &format!("{op}.{}", T::FT), srcs)
    }
    fn u(&mut self, op: &str, ty: &str, srcs: &[&dyn std::fmt::Display]) -> Reg {
        self.body.def(T::U, &format!("{op}.{ty}"), srcs)
    }
    fn p(&mut self, op: &str, srcs: &[&dyn std::fmt::Display]) -> Reg {
        self.body.def(RegClass::Pred, op, srcs)
    }

    /// Both operands' bits combined with `bit_op` (`or`: -0 wins, `and`: +0 wins): the result
    /// of min/max when `a == b`, where only ±0 can differ.
    fn zeros_combined(&mut self, bit_op: &str, a: Reg, b: Reg) -> Reg {
        let (ab, bb) = (self.to_bits(a), self.to_bits(b));
        let c = self.u(bit_op, T::BT, &[&ab, &bb]);
        self.from_bits(c)
    }

    /// min or max: `op` handles NaN (`min.NaN.f32`, sm_80+; for f64, which has no `.NaN`
    /// form, a select of `a + b` when unordered), then equal operands get `zeros_combined`.
    fn min_max(&mut self, op: &str, zero_bits: &str, a: Reg, b: Reg) -> Reg {
        let r = if T::FORMAT == Format::F32 {
            self.f(&format!("{op}.NaN"), &[&a, &b])
        } else {
            let r = self.f(op, &[&a, &b]);
            let unordered = self.fcmp(FloatCC::Unordered, a, b);
            let nan = self.add(a, b);
            self.select(unordered, nan, r)
        };
        let eq = self.fcmp(FloatCC::Eq, a, b);
        let zeros = self.zeros_combined(zero_bits, a, b);
        self.select(eq, zeros, r)
    }
}

/// The `setp` comparison for each [`FloatCC`]: ordered except `neu`; `num`/`nan` test NaN.
fn float_cc(cc: FloatCC) -> &'static str {
    match cc {
        FloatCC::Lt => "lt",
        FloatCC::Le => "le",
        FloatCC::Gt => "gt",
        FloatCC::Ge => "ge",
        FloatCC::Eq => "eq",
        FloatCC::Ne => "neu",
        FloatCC::Ordered => "num",
        FloatCC::Unordered => "nan",
    }
}

/// The `setp` comparison for each [`IntCC`], and whether it is signed.
fn int_cc(cc: IntCC) -> (&'static str, bool) {
    match cc {
        IntCC::Eq => ("eq", false),
        IntCC::Ne => ("ne", false),
        IntCC::Slt => ("lt", true),
        IntCC::Sle => ("le", true),
        IntCC::Sgt => ("gt", true),
        IntCC::Sge => ("ge", true),
        IntCC::Ult => ("lt", false),
        IntCC::Ule => ("le", false),
        IntCC::Ugt => ("gt", false),
        IntCC::Uge => ("ge", false),
    }
}

impl<T: PtxFloat> Arith for PtxArith<'_, T> {
    type F = Reg;
    type U = Reg;
    type M = Reg;

    const FORMAT: Format = T::FORMAT;

    fn fconst(&mut self, v: f64) -> Reg {
        self.f("mov", &[&T::float_literal(v)])
    }
    fn uconst(&mut self, v: u64) -> Reg {
        let v = if T::FORMAT == Format::F32 {
            v & 0xffff_ffff
        } else {
            v
        };
        self.u("mov", T::BT, &[&format!("0x{v:X}")])
    }

    fn add(&mut self, a: Reg, b: Reg) -> Reg {
        self.f("add.rn", &[&a, &b])
    }
    fn sub(&mut self, a: Reg, b: Reg) -> Reg {
        self.f("sub.rn", &[&a, &b])
    }
    fn mul(&mut self, a: Reg, b: Reg) -> Reg {
        self.f("mul.rn", &[&a, &b])
    }
    fn div(&mut self, a: Reg, b: Reg) -> Reg {
        self.f("div.rn", &[&a, &b])
    }
    fn fma(&mut self, a: Reg, b: Reg, c: Reg) -> Reg {
        self.f("fma.rn", &[&a, &b, &c])
    }
    fn sqrt(&mut self, a: Reg) -> Reg {
        self.f("sqrt.rn", &[&a])
    }
    fn neg(&mut self, a: Reg) -> Reg {
        self.f("neg", &[&a])
    }
    fn abs(&mut self, a: Reg) -> Reg {
        self.f("abs", &[&a])
    }
    fn min(&mut self, a: Reg, b: Reg) -> Reg {
        self.min_max("min", "or", a, b)
    }
    fn max(&mut self, a: Reg, b: Reg) -> Reg {
        self.min_max("max", "and", a, b)
    }
    fn floor(&mut self, a: Reg) -> Reg {
        self.f(&format!("cvt.rmi.{}", T::FT), &[&a])
    }
    fn ceil(&mut self, a: Reg) -> Reg {
        self.f(&format!("cvt.rpi.{}", T::FT), &[&a])
    }
    fn trunc(&mut self, a: Reg) -> Reg {
        self.f(&format!("cvt.rzi.{}", T::FT), &[&a])
    }
    fn round_even(&mut self, a: Reg) -> Reg {
        self.f(&format!("cvt.rni.{}", T::FT), &[&a])
    }
    fn fcmp(&mut self, cc: FloatCC, a: Reg, b: Reg) -> Reg {
        self.p(&format!("setp.{}.{}", float_cc(cc), T::FT), &[&a, &b])
    }
    fn select(&mut self, m: Reg, a: Reg, b: Reg) -> Reg {
        self.f("selp", &[&a, &b, &m])
    }

    fn to_bits(&mut self, a: Reg) -> Reg {
        self.u("mov", T::BT, &[&a])
    }
    fn from_bits(&mut self, a: Reg) -> Reg {
        self.body.def(T::F, &format!("mov.{}", T::BT), &[&a])
    }
    fn f_to_sint(&mut self, a: Reg) -> Reg {
        // PTX float-to-integer conversions clamp to the integer range by default (the ISA
        // calls `.sat` redundant there). NaN is mapped to 0 explicitly rather than trusting
        // the hardware's choice: two instructions buy the trait's rule on every GPU.
        let i = self.u(&format!("cvt.rzi.{}", T::ST), T::FT, &[&a]);
        let nan = self.fcmp(FloatCC::Unordered, a, a);
        let zero = self.uconst(0);
        self.select_u(nan, zero, i)
    }
    fn sint_to_f(&mut self, a: Reg) -> Reg {
        self.body
            .def(T::F, &format!("cvt.rn.{}.{}", T::FT, T::ST), &[&a])
    }
    fn uint_to_f(&mut self, a: Reg) -> Reg {
        self.body
            .def(T::F, &format!("cvt.rn.{}.{}", T::FT, T::UT), &[&a])
    }

    fn iadd(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("add", T::ST, &[&a, &b])
    }
    fn isub(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("sub", T::ST, &[&a, &b])
    }
    fn sdiv(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("div", T::ST, &[&a, &b])
    }
    fn udiv(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("div", T::UT, &[&a, &b])
    }
    fn srem(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("rem", T::ST, &[&a, &b])
    }
    fn urem(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("rem", T::UT, &[&a, &b])
    }
    fn imul(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("mul.lo", T::UT, &[&a, &b])
    }
    fn umulhi(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("mul.hi", T::UT, &[&a, &b])
    }
    fn and(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("and", T::BT, &[&a, &b])
    }
    fn or(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("or", T::BT, &[&a, &b])
    }
    fn xor(&mut self, a: Reg, b: Reg) -> Reg {
        self.u("xor", T::BT, &[&a, &b])
    }
    fn not(&mut self, a: Reg) -> Reg {
        self.u("not", T::BT, &[&a])
    }
    fn shl(&mut self, a: Reg, n: u32) -> Reg {
        self.u("shl", T::BT, &[&a, &n])
    }
    fn lshr(&mut self, a: Reg, n: u32) -> Reg {
        self.u("shr", T::UT, &[&a, &n])
    }
    fn ashr(&mut self, a: Reg, n: u32) -> Reg {
        self.u("shr", T::ST, &[&a, &n])
    }
    fn rotl(&mut self, a: Reg, n: u32) -> Reg {
        if T::FORMAT == Format::F32 {
            // Funnel shift of {a:a}: a rotate in one instruction.
            self.u("shf.l.wrap", T::BT, &[&a, &a, &n])
        } else {
            // PTX clamps shift amounts to the width, so n = 0 gives `a | 0`.
            let hi = self.shl(a, n);
            let lo = self.u("shr", T::UT, &[&a, &(64 - n)]);
            self.or(hi, lo)
        }
    }
    fn icmp(&mut self, cc: IntCC, a: Reg, b: Reg) -> Reg {
        let (op, signed) = int_cc(cc);
        let ty = if signed { T::ST } else { T::UT };
        self.p(&format!("setp.{op}.{ty}"), &[&a, &b])
    }
    fn select_u(&mut self, m: Reg, a: Reg, b: Reg) -> Reg {
        self.u("selp", T::BT, &[&a, &b, &m])
    }

    fn mand(&mut self, a: Reg, b: Reg) -> Reg {
        self.p("and.pred", &[&a, &b])
    }
    fn mor(&mut self, a: Reg, b: Reg) -> Reg {
        self.p("or.pred", &[&a, &b])
    }
    fn mnot(&mut self, a: Reg) -> Reg {
        self.p("not.pred", &[&a])
    }
}
