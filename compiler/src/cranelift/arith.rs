//! [`Arith`] over Cranelift values (design.md, Invariant 1): `kiln_math`'s generic functions
//! instantiated with [`ClifArith`] append the same IEEE operations to the function being
//! built that the interpreter executes on plain `f32`/`f64` values.
//!
//! One lane (`F32`, `F64`) or one 128-bit vector (`F32X4`, `F64X2`); integers have the
//! float's width (`I32`, `I32X4`, `I64`, `I64X2`). Masks are `I8` 0/1 in scalar code and
//! all-ones lanes in vector code. x86-64 has no four-lane `umulhi`: it is two widening
//! multiplies (`pmuludq`) and a shuffle; two-lane `umulhi` and the `f64x2` ↔ `i64x2`
//! conversions (AVX-512 only) go lane by lane; `rotl` is two shifts and an or. `fma` (the f32 `exp`'s polynomial) is
//! `vfmadd` when the host has FMA and Cranelift's exact libcalls otherwise: the same bits.

use cranelift_codegen::ir::condcodes::{FloatCC as CFloatCC, IntCC as CIntCC};
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use kiln_math::{Arith, FloatCC, Format, IntCC};

/// Cranelift code for one lane or four. `F64 = true` computes in binary64 (scalar only).
pub struct ClifArith<'a, 'b, const F64: bool> {
    /// The function being built.
    pub b: &'a mut FunctionBuilder<'b>,
    /// Four lanes (`F32X4`) instead of one.
    pub vector: bool,
}

impl<const F64: bool> ClifArith<'_, '_, F64> {
    /// The float type of a value.
    pub fn ft(&self) -> Type {
        match (F64, self.vector) {
            (true, false) => types::F64,
            (true, true) => types::F64X2,
            (false, false) => types::F32,
            (false, true) => types::F32X4,
        }
    }
    /// The integer type of the float's width.
    pub fn ut(&self) -> Type {
        match (F64, self.vector) {
            (true, false) => types::I64,
            (true, true) => types::I64X2,
            (false, false) => types::I32,
            (false, true) => types::I32X4,
        }
    }
    /// Lanes of a vector value (4 × 32 or 2 × 64 bits).
    fn lanes(&self) -> u8 {
        if F64 {
            2
        } else {
            4
        }
    }
    fn lane_ut(&self) -> Type {
        if F64 {
            types::I64
        } else {
            types::I32
        }
    }
    fn bits_flags() -> MemFlagsData {
        MemFlagsData::new().with_endianness(Endianness::Little)
    }
    /// Applies a scalar integer operation lane by lane (for ops x86 lacks on vectors).
    fn per_lane(
        &mut self,
        a: Value,
        c: Value,
        op: impl Fn(&mut FunctionBuilder, Value, Value) -> Value,
    ) -> Value {
        if !self.vector {
            return op(self.b, a, c);
        }
        let mut r = a;
        for l in 0..self.lanes() {
            let x = self.b.ins().extractlane(a, l);
            let y = self.b.ins().extractlane(c, l);
            let z = op(self.b, x, y);
            r = self.b.ins().insertlane(r, z, l);
        }
        r
    }
    /// A conversion lane by lane (x86-64 has no `f64x2` ↔ `i64x2` conversions before
    /// AVX-512): `to` is the vector result type, `op` converts one lane.
    fn convert_lanes(
        &mut self,
        a: Value,
        to: Type,
        op: impl Fn(&mut FunctionBuilder, Type, Value) -> Value,
    ) -> Value {
        if !self.vector {
            return op(self.b, to, a);
        }
        let lane = to.lane_type();
        let mut r: Option<Value> = None;
        for l in 0..self.lanes() {
            let x = self.b.ins().extractlane(a, l);
            let z = op(self.b, lane, x);
            r = Some(match r {
                None => self.b.ins().splat(to, z),
                Some(r) => self.b.ins().insertlane(r, z, l),
            });
        }
        r.expect("vectors have lanes")
    }
}

/// Which of [`float_min_max`]'s two operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinMax {
    /// XLA's `min`: `min(-0, +0) = -0`.
    Min,
    /// XLA's `max`: `max(-0, +0) = +0`.
    Max,
}

/// XLA's float `min`/`max` (NaN if either operand is NaN, -0 < +0), exactly as the
/// interpreter computes it (`kiln_interp`'s `fmax`/`fmin`): the hardware operation in both
/// operand orders (`maxps a, b` returns `b` on ties and NaN; Cranelift selects it from the
/// `bitselect(fcmp lt ..)` pattern), which differ only for ±0, where `and` (max) or `or`
/// (min) of the bits picks the right zero; then the default NaN where either operand is NaN.
/// Five instructions on four lanes, where Cranelift's own `fmax` (IEEE 754-2019 `maximum`,
/// the same values) takes eight with a longer dependency chain — the chain a max
/// reduction's accumulators wait on.
pub fn float_min_max(b: &mut FunctionBuilder, op: MinMax, x: Value, y: Value) -> Value {
    let t = b.func.dfg.value_type(x);
    if !t.is_vector() {
        // One lane: Cranelift's sequence (a tail or a final combination, never a loop body).
        return match op {
            MinMax::Min => b.ins().fmin(x, y),
            MinMax::Max => b.ins().fmax(x, y),
        };
    }
    let bits = MemFlagsData::new().with_endianness(Endianness::Little);
    // `hw(p, q)`: `minps p, q` = `p < q ? p : q`, or `maxps p, q` = `q < p ? p : q`.
    let hw = |b: &mut FunctionBuilder, p: Value, q: Value| {
        let c = match op {
            MinMax::Min => b.ins().fcmp(CFloatCC::LessThan, p, q),
            MinMax::Max => b.ins().fcmp(CFloatCC::LessThan, q, p),
        };
        let c = b.ins().bitcast(t, bits, c);
        b.ins().bitselect(c, p, q)
    };
    let m1 = hw(b, x, y);
    let m2 = hw(b, y, x);
    let r = match op {
        MinMax::Min => b.ins().bor(m1, m2),
        MinMax::Max => b.ins().band(m1, m2),
    };
    let nan = b.ins().fcmp(CFloatCC::Unordered, x, y);
    let nan = b.ins().bitcast(t, bits, nan);
    let default_nan = if t.lane_type() == types::F64 {
        vconst64(b, t, f64::NAN.to_bits())
    } else {
        vconst32(b, t, f32::NAN.to_bits())
    };
    b.ins().bitselect(nan, default_nan, r)
}

/// A four-lane constant of one 32-bit pattern: one constant-pool load that x86 can fold
/// into the instruction using it, where `splat` of a scalar would be two instructions per
/// use (Cranelift rematerialises constants inside loops).
pub fn vconst32(b: &mut FunctionBuilder, t: Type, bits: u32) -> Value {
    let bytes: Vec<u8> = (0..4).flat_map(|_| bits.to_le_bytes()).collect();
    let k = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(t, k)
}

/// A two-lane constant of one 64-bit pattern (see [`vconst32`]).
pub fn vconst64(b: &mut FunctionBuilder, t: Type, bits: u64) -> Value {
    let bytes: Vec<u8> = (0..2).flat_map(|_| bits.to_le_bytes()).collect();
    let k = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(t, k)
}

/// The high words of the four unsigned 32 × 32-bit lane products (x86-64 has no `i32x4`
/// `umulhi`): the exact 64-bit products of lanes 0, 1 and of lanes 2, 3 as two `i64x2`
/// multiplies of zero-extended lanes (Cranelift lowers that pattern to `pmuludq`), then one
/// shuffle gathering the high word of each product.
fn umulhi_i32x4(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    let xl = b.ins().uwiden_low(x);
    let yl = b.ins().uwiden_low(y);
    let lo = b.ins().imul(xl, yl);
    let xh = b.ins().uwiden_high(x);
    let yh = b.ins().uwiden_high(y);
    let hi = b.ins().imul(xh, yh);
    let lo = b.ins().bitcast(types::I8X16, flags, lo);
    let hi = b.ins().bitcast(types::I8X16, flags, hi);
    // Little-endian: the high word of 64-bit lane k is bytes 8k + 4 .. 8k + 8; bytes 16..32
    // index the second operand.
    let mask: Vec<u8> = [4u8, 12, 20, 28]
        .iter()
        .flat_map(|&start| start..start + 4)
        .collect();
    let mask = b.func.dfg.immediates.push(ConstantData::from(mask));
    let r = b.ins().shuffle(lo, hi, mask);
    b.ins().bitcast(types::I32X4, flags, r)
}

fn fcc(cc: FloatCC) -> CFloatCC {
    match cc {
        FloatCC::Lt => CFloatCC::LessThan,
        FloatCC::Le => CFloatCC::LessThanOrEqual,
        FloatCC::Gt => CFloatCC::GreaterThan,
        FloatCC::Ge => CFloatCC::GreaterThanOrEqual,
        FloatCC::Eq => CFloatCC::Equal,
        FloatCC::Ne => CFloatCC::NotEqual,
        FloatCC::Ordered => CFloatCC::Ordered,
        FloatCC::Unordered => CFloatCC::Unordered,
    }
}

/// The Cranelift condition code of an [`IntCC`].
pub fn icc(cc: IntCC) -> CIntCC {
    match cc {
        IntCC::Eq => CIntCC::Equal,
        IntCC::Ne => CIntCC::NotEqual,
        IntCC::Slt => CIntCC::SignedLessThan,
        IntCC::Sle => CIntCC::SignedLessThanOrEqual,
        IntCC::Sgt => CIntCC::SignedGreaterThan,
        IntCC::Sge => CIntCC::SignedGreaterThanOrEqual,
        IntCC::Ult => CIntCC::UnsignedLessThan,
        IntCC::Ule => CIntCC::UnsignedLessThanOrEqual,
        IntCC::Ugt => CIntCC::UnsignedGreaterThan,
        IntCC::Uge => CIntCC::UnsignedGreaterThanOrEqual,
    }
}

macro_rules! impl_clif_arith {
    ($f64:literal, $format:expr) => {
        impl Arith for ClifArith<'_, '_, $f64> {
            type F = Value;
            type U = Value;
            type M = Value;
            const FORMAT: Format = $format;

            fn fconst(&mut self, v: f64) -> Value {
                if $f64 && self.vector {
                    vconst64(self.b, types::F64X2, v.to_bits())
                } else if $f64 {
                    self.b.ins().f64const(v)
                } else if self.vector {
                    vconst32(self.b, types::F32X4, (v as f32).to_bits())
                } else {
                    self.b.ins().f32const(v as f32)
                }
            }
            fn uconst(&mut self, v: u64) -> Value {
                if self.vector && !$f64 {
                    return vconst32(self.b, types::I32X4, v as u32);
                }
                if self.vector {
                    return vconst64(self.b, types::I64X2, v);
                }
                let t = self.lane_ut();
                let v = if $f64 { v as i64 } else { i64::from(v as u32) };
                self.b.ins().iconst(t, v)
            }
            fn add(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().fadd(a, b)
            }
            fn sub(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().fsub(a, b)
            }
            fn mul(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().fmul(a, b)
            }
            fn div(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().fdiv(a, b)
            }
            fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
                self.b.ins().fma(a, b, c)
            }
            fn sqrt(&mut self, a: Value) -> Value {
                self.b.ins().sqrt(a)
            }
            fn neg(&mut self, a: Value) -> Value {
                self.b.ins().fneg(a)
            }
            fn abs(&mut self, a: Value) -> Value {
                self.b.ins().fabs(a)
            }
            fn min(&mut self, a: Value, b: Value) -> Value {
                float_min_max(self.b, MinMax::Min, a, b)
            }
            fn max(&mut self, a: Value, b: Value) -> Value {
                float_min_max(self.b, MinMax::Max, a, b)
            }
            fn floor(&mut self, a: Value) -> Value {
                self.b.ins().floor(a)
            }
            fn ceil(&mut self, a: Value) -> Value {
                self.b.ins().ceil(a)
            }
            fn trunc(&mut self, a: Value) -> Value {
                self.b.ins().trunc(a)
            }
            fn round_even(&mut self, a: Value) -> Value {
                self.b.ins().nearest(a)
            }
            fn fcmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
                self.b.ins().fcmp(fcc(cc), a, b)
            }
            fn select(&mut self, m: Value, a: Value, b: Value) -> Value {
                if self.vector {
                    let t = self.ft();
                    let m = self.b.ins().bitcast(t, Self::bits_flags(), m);
                    self.b.ins().bitselect(m, a, b)
                } else {
                    self.b.ins().select(m, a, b)
                }
            }
            fn to_bits(&mut self, a: Value) -> Value {
                let t = self.ut();
                self.b.ins().bitcast(t, Self::bits_flags(), a)
            }
            fn from_bits(&mut self, a: Value) -> Value {
                let t = self.ft();
                self.b.ins().bitcast(t, Self::bits_flags(), a)
            }
            fn f_to_sint(&mut self, a: Value) -> Value {
                let t = self.ut();
                if $f64 {
                    return self.convert_lanes(a, t, |b, t, x| b.ins().fcvt_to_sint_sat(t, x));
                }
                self.b.ins().fcvt_to_sint_sat(t, a)
            }
            fn sint_to_f(&mut self, a: Value) -> Value {
                let t = self.ft();
                if $f64 {
                    return self.convert_lanes(a, t, |b, t, x| b.ins().fcvt_from_sint(t, x));
                }
                self.b.ins().fcvt_from_sint(t, a)
            }
            fn uint_to_f(&mut self, a: Value) -> Value {
                let t = self.ft();
                if $f64 {
                    return self.convert_lanes(a, t, |b, t, x| b.ins().fcvt_from_uint(t, x));
                }
                self.b.ins().fcvt_from_uint(t, a)
            }
            fn iadd(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().iadd(a, b)
            }
            fn isub(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().isub(a, b)
            }
            // x86 has no vector integer division: lane by lane (the elementwise ops refuse
            // vector division before it gets here; generic code may still ask).
            fn sdiv(&mut self, a: Value, b: Value) -> Value {
                self.per_lane(a, b, |fb, x, y| fb.ins().sdiv(x, y))
            }
            fn udiv(&mut self, a: Value, b: Value) -> Value {
                self.per_lane(a, b, |fb, x, y| fb.ins().udiv(x, y))
            }
            fn srem(&mut self, a: Value, b: Value) -> Value {
                self.per_lane(a, b, |fb, x, y| fb.ins().srem(x, y))
            }
            fn urem(&mut self, a: Value, b: Value) -> Value {
                self.per_lane(a, b, |fb, x, y| fb.ins().urem(x, y))
            }
            fn imul(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().imul(a, b)
            }
            fn umulhi(&mut self, a: Value, b: Value) -> Value {
                if self.vector && !$f64 {
                    return umulhi_i32x4(self.b, a, b);
                }
                self.per_lane(a, b, |fb, x, y| fb.ins().umulhi(x, y))
            }
            fn and(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().band(a, b)
            }
            fn or(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().bor(a, b)
            }
            fn xor(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().bxor(a, b)
            }
            fn not(&mut self, a: Value) -> Value {
                self.b.ins().bnot(a)
            }
            fn shl(&mut self, a: Value, n: u32) -> Value {
                self.b.ins().ishl_imm_s(a, i64::from(n))
            }
            fn lshr(&mut self, a: Value, n: u32) -> Value {
                self.b.ins().ushr_imm_s(a, i64::from(n))
            }
            fn ashr(&mut self, a: Value, n: u32) -> Value {
                self.b.ins().sshr_imm_s(a, i64::from(n))
            }
            fn rotl(&mut self, a: Value, n: u32) -> Value {
                let bits = if $f64 { 64 } else { 32 };
                if n == 0 {
                    return a;
                }
                let l = self.b.ins().ishl_imm_s(a, i64::from(n));
                let r = self.b.ins().ushr_imm_s(a, i64::from(bits - n));
                self.b.ins().bor(l, r)
            }
            fn icmp(&mut self, cc: IntCC, a: Value, b: Value) -> Value {
                self.b.ins().icmp(icc(cc), a, b)
            }
            fn select_u(&mut self, m: Value, a: Value, b: Value) -> Value {
                if self.vector {
                    self.b.ins().bitselect(m, a, b)
                } else {
                    self.b.ins().select(m, a, b)
                }
            }
            fn mand(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().band(a, b)
            }
            fn mor(&mut self, a: Value, b: Value) -> Value {
                self.b.ins().bor(a, b)
            }
            fn mnot(&mut self, a: Value) -> Value {
                // Scalar masks are 0/1 (`I8`), vector masks all-ones lanes.
                if self.vector {
                    self.b.ins().bnot(a)
                } else {
                    self.b.ins().bxor_imm_s(a, 1)
                }
            }
        }
    };
}

impl_clif_arith!(false, Format::F32);
impl_clif_arith!(true, Format::F64);
