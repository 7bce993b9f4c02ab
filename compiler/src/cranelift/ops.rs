//! Elementwise op semantics in Cranelift: the same rules as `kiln_interp`'s elementwise and
//! convert kernels (XLA's), for one lane or four.

use super::arith::ClifArith;
use super::lanes::Lanes;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{BinaryOp, DType, UnaryOp};
use kiln_math::{Arith, DivOp};

/// Runs `$body` with `$a` a [`ClifArith`] of one lane or a vector, in binary64 (64-bit
/// integers) when `$wide`, else binary32 (32-bit integers).
macro_rules! with_arith {
    ($b:expr, $wide:expr, $lanes:expr, |$a:ident| $body:expr) => {
        if $wide {
            let $a = &mut ClifArith::<true> {
                b: $b,
                vector: $lanes == Lanes::Vector,
            };
            $body
        } else {
            let $a = &mut ClifArith::<false> {
                b: $b,
                vector: $lanes == Lanes::Vector,
            };
            $body
        }
    };
}

/// The error of an op lowering never hands to a backend (`kiln_ir::Op::has_compiled_code`).
fn not_compiled(op: &str) -> String {
    format!("{op}: no compiled code for this op yet")
}

/// The error of arithmetic on a 16-bit float reaching the backend: the kernel pass
/// `compute_halves_in_f32` runs it in `f32` and rounds (`crate::kernel::half`).
fn half_arith(op: &str, dt: DType) -> String {
    format!("{op} on {dt}: computed in f32 by the kernel pass compute_halves_in_f32")
}

/// A unary op on a value of dtype `dt`.
pub fn unary(
    b: &mut FunctionBuilder,
    u: UnaryOp,
    dt: DType,
    x: Value,
    lanes: Lanes,
) -> Result<Value, String> {
    use UnaryOp::*;
    if dt.is_half() {
        return Err(half_arith(u.name(), dt));
    }
    if dt.is_float() {
        return Ok(with_arith!(b, dt == DType::F64, lanes, |a| match u {
            Neg => a.neg(x),
            Abs => a.abs(x),
            Exp => kiln_math::exp(a, x),
            Expm1 => kiln_math::expm1(a, x),
            Log => kiln_math::log(a, x),
            Log1p => kiln_math::log1p(a, x),
            Tanh => kiln_math::tanh(a, x),
            Logistic => kiln_math::logistic(a, x),
            Sqrt => a.sqrt(x),
            Rsqrt => kiln_math::rsqrt(a, x),
            Sin => kiln_math::sin(a, x),
            Cos => kiln_math::cos(a, x),
            Erf => kiln_math::erf(a, x),
            Floor => a.floor(x),
            Ceil => a.ceil(x),
            Round => a.round_even(x),
            Sign => kiln_math::float_sign(a, x),
            Not => return Err(format!("not is not defined for {dt}")),
            Tan | Cbrt | RoundAfz | Popcnt | Clz => return Err(not_compiled(u.name())),
        }));
    }
    if dt == DType::Bool {
        return match (u, lanes) {
            (Not, Lanes::One) => Ok(b.ins().bxor_imm_s(x, 1)),
            (Not, Lanes::Vector) => Ok(b.ins().bnot(x)),
            _ => Err(format!("{} is not defined for bool", u.name())),
        };
    }
    let signed = dt != DType::U32;
    Ok(match u {
        Neg => b.ins().ineg(x),
        Abs if signed => b.ins().iabs(x),
        Abs => x,
        Not => b.ins().bnot(x),
        Sign => with_arith!(b, dt == DType::I64, lanes, |a| kiln_math::int_sign(
            a, signed, x
        )),
        _ => return Err(format!("{} is not defined for {dt}", u.name())),
    })
}

/// A binary op on two values of dtype `dt`.
pub fn binary(
    b: &mut FunctionBuilder,
    op: BinaryOp,
    dt: DType,
    x: Value,
    y: Value,
    lanes: Lanes,
) -> Result<Value, String> {
    use BinaryOp::*;
    if dt.is_half() {
        return Err(half_arith(op.name(), dt));
    }
    if dt.is_float() {
        return with_arith!(b, dt == DType::F64, lanes, |a| Ok(match op {
            Add => a.add(x, y),
            Sub => a.sub(x, y),
            Mul => a.mul(x, y),
            Div => a.div(x, y),
            Pow => kiln_math::pow(a, x, y),
            Max => a.max(x, y),
            Min => a.min(x, y),
            Rem | And | Or | Xor => return Err(format!("{} is not compiled for {dt}", op.name())),
            Atan2 | ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => {
                return Err(not_compiled(op.name()));
            }
        }));
    }
    let signed = matches!(dt, DType::I32 | DType::I64);
    Ok(match op {
        Add => b.ins().iadd(x, y),
        Sub => b.ins().isub(x, y),
        Mul => b.ins().imul(x, y),
        And => b.ins().band(x, y),
        Or => b.ins().bor(x, y),
        Xor => b.ins().bxor(x, y),
        Max if signed => b.ins().smax(x, y),
        Min if signed => b.ins().smin(x, y),
        Max => b.ins().umax(x, y),
        Min => b.ins().umin(x, y),
        Div | Rem if lanes == Lanes::Vector => return Err("vector integer division".into()),
        Div | Rem => {
            let op = if op == Div { DivOp::Div } else { DivOp::Rem };
            with_arith!(b, dt == DType::I64, lanes, |a| kiln_math::xla_div(
                a, op, signed, x, y
            ))
        }
        Pow | Atan2 | ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => {
            return Err(not_compiled(op.name()))
        }
    })
}

/// `convert` with XLA's rules ([`kiln_math::convert`]); on four lanes the pairs
/// [`convert_has_lanes`] lets through.
pub fn convert(
    b: &mut FunctionBuilder,
    x: Value,
    from: DType,
    to: DType,
    lanes: Lanes,
) -> Result<Value, String> {
    if lanes == Lanes::Vector && !convert_has_lanes(from, to) {
        return Err(format!("vector convert {from} -> {to}"));
    }
    if let Some(((a, z), round)) = crate::kernel::half::convert_steps(from, to) {
        // 16-bit floats: their f32 registers converted, then rounded once.
        let y = if a == z {
            x
        } else {
            convert(b, x, a, z, lanes)?
        };
        return Ok(match round {
            Some(h) => {
                let vector = lanes == Lanes::Vector;
                let arith = &mut ClifArith::<false> { b, vector };
                kiln_math::float16::round_to(arith, y, h)
            }
            None => y,
        });
    }
    if from.is_half() || to.is_half() {
        return Err(format!("convert {from} -> {to}: not compiled"));
    }
    kiln_math::convert(&mut ClifConvert { b, lanes }, x, from, to)
        .ok_or_else(|| format!("convert {from} -> {to}"))
}

/// Whether `convert` from `from` to `to` has a four-lane form: the plain pairs with one
/// vector instruction (f32 ↔ i32, i32 ↔ u32, and no change at all), and a 16-bit float
/// conversion whose `f32`-register step ([`crate::kernel::half::convert_steps`]) is one of
/// those (its rounding is lane-wise integer and float code). The vector plan
/// (`plan::vector_form`) asks this too, so a kernel vectorises exactly when its converts
/// can be emitted on four lanes.
pub fn convert_has_lanes(from: DType, to: DType) -> bool {
    use DType::*;
    let plain = |from: DType, to: DType| {
        from == to
            || matches!(
                (from, to),
                (F32, I32) | (I32, F32) | (I32, U32) | (U32, I32)
            )
    };
    match crate::kernel::half::convert_steps(from, to) {
        Some(((a, z), _)) => plain(a, z),
        None => !(from.is_half() || to.is_half()) && plain(from, to),
    }
}

/// The Cranelift instructions of [`kiln_math::convert`] (one lane, or four for the pairs
/// [`convert`] lets through).
struct ClifConvert<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    lanes: Lanes,
}

impl ClifConvert<'_, '_> {
    fn float_type(&self, d: DType) -> types::Type {
        match (d, self.lanes) {
            (DType::F64, _) => types::F64,
            (_, Lanes::Vector) => types::F32X4,
            _ => types::F32,
        }
    }
    fn int_type(&self, d: DType) -> types::Type {
        match (d, self.lanes) {
            (DType::I64, _) => types::I64,
            (_, Lanes::Vector) => types::I32X4,
            _ => types::I32,
        }
    }
}

impl kiln_math::ConvertPrims for ClifConvert<'_, '_> {
    type Ty = DType;
    type V = Value;
    // `fcvt_to_*_sat` gives 0 for NaN: `is_nan` and `zero_where` are never asked for.
    const FLOAT_TO_INT_NAN_IS_ZERO: bool = true;

    fn num(t: DType) -> Option<kiln_math::Num> {
        crate::kernel::convert_num(t)
    }
    fn float_resize(&mut self, x: Value, _from: DType, to: DType) -> Value {
        if to == DType::F64 {
            self.b.ins().fpromote(types::F64, x)
        } else {
            self.b.ins().fdemote(types::F32, x)
        }
    }
    fn float_to_int(&mut self, x: Value, _from: DType, to: DType) -> Value {
        let t = self.int_type(to);
        if to == DType::U32 {
            self.b.ins().fcvt_to_uint_sat(t, x)
        } else {
            self.b.ins().fcvt_to_sint_sat(t, x)
        }
    }
    fn is_nan(&mut self, x: Value, _from: DType) -> Value {
        self.b.ins().fcmp(FloatCC::Unordered, x, x)
    }
    fn zero_where(&mut self, nan: Value, i: Value, to: DType) -> Value {
        let lanes = self.lanes;
        let zero = with_arith!(self.b, to == DType::I64, lanes, |a| a.uconst(0));
        super::lanes::select(self.b, nan, zero, i, lanes)
    }
    fn int_to_float(&mut self, x: Value, from: DType, to: DType) -> Value {
        let t = self.float_type(to);
        if from == DType::U32 {
            self.b.ins().fcvt_from_uint(t, x)
        } else {
            self.b.ins().fcvt_from_sint(t, x)
        }
    }
    fn int_resize(&mut self, x: Value, from: DType, to: DType) -> Value {
        match (from, to) {
            (DType::I32, DType::I64) => self.b.ins().sextend(types::I64, x),
            (_, DType::I64) => self.b.ins().uextend(types::I64, x),
            _ => self.b.ins().ireduce(types::I32, x),
        }
    }
    fn nonzero(&mut self, x: Value, from: DType) -> Value {
        match from {
            DType::F64 => {
                let z = self.b.ins().f64const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            DType::F32 => {
                let z = self.b.ins().f32const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            _ => self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
        }
    }
    fn bool_to(&mut self, x: Value, to: DType) -> Value {
        if to.is_float() {
            let w = self.b.ins().uextend(types::I32, x);
            let t = self.float_type(to);
            self.b.ins().fcvt_from_uint(t, w)
        } else {
            let t = self.int_type(to);
            self.b.ins().uextend(t, x)
        }
    }
}
