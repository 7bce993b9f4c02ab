//! Float remainder (`rem` on `f32`/`f64`): the exact `fmod(x, y)` that the interpreter
//! computes with Rust's `%` (C's `fmod`), emitted as PTX integer code.
//!
//! `fmod` is exact — the result is `x - n y` for the integer `n = trunc(x / y)`, always
//! representable — so any exact algorithm gives the interpreter's bits. This one is musl's
//! `fmodf`/`fmod` (long division on the integer significands, one bit per step, then
//! renormalisation), written with branches: unlike the straight-line `kiln_math` functions
//! it runs a data-dependent number of steps (up to the exponent difference, 277 for f32 and
//! 2098 for f64), which a select-based formulation would always pay in full.
//!
//! Special cases, as C's `fmod`: `y = ±0`, `y` NaN or `x` infinite or NaN give NaN;
//! `|x| < |y|` gives `x`; `|x| = |y|` (and every exact multiple) gives `±0` with `x`'s sign.

use crate::module::{Body, Label, Reg, RegClass};

/// The formats `fmod` is emitted for: significand bits, exponent mask and register classes.
struct Format {
    /// Stored significand bits (23 or 52).
    mant: u32,
    /// Exponent field mask after shifting (0xff or 0x7ff).
    exp_mask: u32,
    /// Total bits (32 or 64).
    bits: u32,
    /// The float register class.
    float: RegClass,
    /// The same-width integer class.
    int: RegClass,
}

const F32: Format = Format {
    mant: 23,
    exp_mask: 0xff,
    bits: 32,
    float: RegClass::F32,
    int: RegClass::B32,
};

const F64: Format = Format {
    mant: 52,
    exp_mask: 0x7ff,
    bits: 64,
    float: RegClass::F64,
    int: RegClass::B64,
};

/// Appends `fmod(x, y)` for two float registers of one class (`F32` or `F64`); returns the
/// result register (same class). `None` for other classes.
pub(crate) fn emit_fmod(b: &mut Body, x: Reg, y: Reg) -> Option<Reg> {
    let f = match x.class {
        RegClass::F32 => &F32,
        RegClass::F64 => &F64,
        _ => return None,
    };
    Some(Fmod { b, f }.emit(x, y))
}

struct Fmod<'a> {
    b: &'a mut Body,
    f: &'a Format,
}

impl Fmod<'_> {
    /// `.b32`/`.b64`, `.u32`/`.u64`, `.s32`/`.s64` suffixes of the integer width.
    fn b(&self) -> String {
        format!("b{}", self.f.bits)
    }
    fn u(&self) -> String {
        format!("u{}", self.f.bits)
    }
    fn s(&self) -> String {
        format!("s{}", self.f.bits)
    }
    /// An integer immediate of the format's width.
    fn imm(&self, v: u64) -> String {
        if self.f.bits == 32 {
            format!("0x{:08X}", v as u32)
        } else {
            format!("0x{v:016X}")
        }
    }
    /// Branches to `to` when `a <op> b` (`ty` the comparison type, e.g. `u32`).
    fn branch_if(
        &mut self,
        op: &str,
        ty: &str,
        a: &dyn std::fmt::Display,
        c: &dyn std::fmt::Display,
        to: &Label,
    ) {
        let p = self
            .b
            .def(RegClass::Pred, &format!("setp.{op}.{ty}"), &[a, c]);
        self.b.emit(&format!("@{p} bra"), &[to]);
    }

    /// The exponent field of `bits` as a 32-bit signed integer.
    fn exponent(&mut self, bits: Reg) -> Reg {
        let (mant, mask) = (self.f.mant, self.f.exp_mask);
        let shifted = self
            .b
            .def(self.f.int, &format!("shr.{}", self.u()), &[&bits, &mant]);
        let e = if self.f.bits == 32 {
            shifted
        } else {
            self.b.def(RegClass::B32, "cvt.u32.u64", &[&shifted])
        };
        self.b.def(RegClass::B32, "and.b32", &[&e, &mask])
    }

    /// Turns the bits `u` (sign cleared or not) with exponent field `e` into an integer
    /// significand with the implicit bit at position `mant`, adjusting `e` for subnormals
    /// (musl: `for (i = u << (bits - mant); i >> (bits - 1) == 0; e--, i <<= 1); u <<= 1 - e`).
    fn significand(&mut self, u: Reg, e: Reg) {
        let (b, s, f) = (self.b(), self.s(), self.f);
        let normal = self.b.label("fmod_normal");
        let done = self.b.label("fmod_sig");
        self.branch_if("ne", "u32", &e, &0, &normal);
        let i = self
            .b
            .def(f.int, &format!("shl.{b}"), &[&u, &(f.bits - f.mant)]);
        let top = self.b.label("fmod_sub");
        let found = self.b.label("fmod_sub_done");
        self.b.place(&top);
        self.branch_if("lt", &s, &i, &0, &found); // top bit set
        self.b.emit("sub.s32", &[&e, &e, &1]);
        self.b.emit(&format!("shl.{b}"), &[&i, &i, &1]);
        self.b.emit("bra", &[&top]);
        self.b.place(&found);
        let sh = self.b.def(RegClass::B32, "sub.s32", &[&1, &e]);
        self.b.emit(&format!("shl.{b}"), &[&u, &u, &sh]);
        self.b.emit("bra", &[&done]);
        self.b.place(&normal);
        let low = self.imm((1u64 << f.mant) - 1);
        let implicit = self.imm(1u64 << f.mant);
        self.b.emit(&format!("and.{b}"), &[&u, &u, &low]);
        self.b.emit(&format!("or.{b}"), &[&u, &u, &implicit]);
        self.b.place(&done);
    }

    /// One long-division step: `if ux >= uy { if ux == uy: result ±0; ux -= uy }`.
    fn subtract(&mut self, ux: Reg, uy: Reg, zero: &Label) {
        let (s, f) = (self.s(), self.f);
        let i = self.b.def(f.int, &format!("sub.{s}"), &[&ux, &uy]);
        let skip = self.b.label("fmod_keep");
        self.branch_if("lt", &s, &i, &0, &skip);
        self.branch_if("eq", &s, &i, &0, zero);
        self.b.emit(&format!("mov.{}", self.b()), &[&ux, &i]);
        self.b.place(&skip);
    }

    fn emit(mut self, x: Reg, y: Reg) -> Reg {
        let f = self.f;
        let (bt, u) = (self.b(), self.u());
        let res = self.b.reg(f.float);
        let nan = self.b.label("fmod_nan");
        let ret_x = self.b.label("fmod_x");
        let ret_zero = self.b.label("fmod_zero");
        let end = self.b.label("fmod_end");

        let ux = self.b.def(f.int, &format!("mov.{bt}"), &[&x]);
        let uy = self.b.def(f.int, &format!("mov.{bt}"), &[&y]);
        let sign = self.imm(1u64 << (f.bits - 1));
        let sx = self.b.def(f.int, &format!("and.{bt}"), &[&ux, &sign]);
        let ex = self.exponent(ux);
        let ey = self.exponent(uy);
        // y = ±0, y NaN, x infinite or NaN: NaN.
        let ux2 = self.b.def(f.int, &format!("shl.{bt}"), &[&ux, &1]);
        let uy2 = self.b.def(f.int, &format!("shl.{bt}"), &[&uy, &1]);
        self.branch_if("eq", &u, &uy2, &0, &nan);
        let inf2 = self.imm(u64::from(f.exp_mask) << (f.mant + 1));
        self.branch_if("gt", &u, &uy2, &inf2, &nan);
        self.branch_if("eq", "u32", &ex, &f.exp_mask, &nan);
        // |x| < |y|: x; |x| = |y|: ±0.
        self.branch_if("lt", &u, &ux2, &uy2, &ret_x);
        self.branch_if("eq", &u, &ux2, &uy2, &ret_zero);

        self.significand(ux, ex);
        self.significand(uy, ey);
        // x mod y, one bit per step: for (; ex > ey; ex--) { subtract; ux <<= 1 }.
        let top = self.b.label("fmod_loop");
        let last = self.b.label("fmod_last");
        self.b.place(&top);
        self.branch_if("le", "s32", &ex, &ey, &last);
        self.subtract(ux, uy, &ret_zero);
        self.b.emit(&format!("shl.{bt}"), &[&ux, &ux, &1]);
        self.b.emit("sub.s32", &[&ex, &ex, &1]);
        self.b.emit("bra", &[&top]);
        self.b.place(&last);
        self.subtract(ux, uy, &ret_zero);
        // Renormalise: for (; ux >> mant == 0; ux <<= 1, ex--).
        let norm = self.b.label("fmod_norm");
        let normed = self.b.label("fmod_normed");
        self.b.place(&norm);
        let hi = self.b.def(f.int, &format!("shr.{u}"), &[&ux, &f.mant]);
        self.branch_if("ne", &u, &hi, &0, &normed);
        self.b.emit(&format!("shl.{bt}"), &[&ux, &ux, &1]);
        self.b.emit("sub.s32", &[&ex, &ex, &1]);
        self.b.emit("bra", &[&norm]);
        self.b.place(&normed);
        // Scale back: a normal result gets its exponent field, a subnormal one is shifted.
        let subnormal = self.b.label("fmod_subnormal");
        let assemble = self.b.label("fmod_assemble");
        self.branch_if("le", "s32", &ex, &0, &subnormal);
        let implicit = self.imm(1u64 << f.mant);
        self.b.emit(&format!("sub.{u}"), &[&ux, &ux, &implicit]);
        let e_wide = if f.bits == 32 {
            ex
        } else {
            self.b.def(RegClass::B64, "cvt.u64.u32", &[&ex])
        };
        let field = self.b.def(f.int, &format!("shl.{bt}"), &[&e_wide, &f.mant]);
        self.b.emit(&format!("or.{bt}"), &[&ux, &ux, &field]);
        self.b.emit("bra", &[&assemble]);
        self.b.place(&subnormal);
        let sh = self.b.def(RegClass::B32, "sub.s32", &[&1, &ex]);
        self.b.emit(&format!("shr.{u}"), &[&ux, &ux, &sh]);
        self.b.place(&assemble);
        self.b.emit(&format!("or.{bt}"), &[&ux, &ux, &sx]);
        self.b.emit(&format!("mov.{bt}"), &[&res, &ux]);
        self.b.emit("bra", &[&end]);

        self.b.place(&nan);
        let quiet = if f.bits == 32 {
            "0f7FC00000".to_string()
        } else {
            "0d7FF8000000000000".to_string()
        };
        self.b.emit(&format!("mov.f{}", f.bits), &[&res, &quiet]);
        self.b.emit("bra", &[&end]);
        self.b.place(&ret_x);
        self.b.emit(&format!("mov.f{}", f.bits), &[&res, &x]);
        self.b.emit("bra", &[&end]);
        self.b.place(&ret_zero);
        self.b.emit(&format!("mov.{bt}"), &[&res, &sx]);
        self.b.place(&end);
        res
    }
}
