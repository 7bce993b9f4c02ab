//! Elementwise op semantics in Cranelift: the same rules as `kiln_interp`'s elementwise and
//! convert kernels (XLA's), for one lane or four.

use super::arith::ClifArith;
use super::lanes::{select, Lanes};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{BinaryOp, DType, UnaryOp};
use kiln_math::Arith;

fn ty(b: &FunctionBuilder, v: Value) -> Type {
    b.func.dfg.value_type(v)
}

/// A constant of the type of `like` (splatted for vectors).
fn int_like(b: &mut FunctionBuilder, like: Value, v: i64) -> Value {
    let t = ty(b, like);
    let lane = t.lane_type();
    let v = if lane == types::I32 {
        i64::from(v as u32)
    } else {
        v
    };
    if t.is_vector() && lane == types::I64 {
        return super::arith::vconst64(b, t, v as u64);
    }
    if t.is_vector() {
        return super::arith::vconst32(b, t, v as u32);
    }
    b.ins().iconst(lane, v)
}

/// Applies a float function over [`ClifArith`] in the format of `dt`.
macro_rules! fmath {
    ($b:expr, $dt:expr, $lanes:expr, |$a:ident| $body:expr) => {
        if $dt == DType::F64 {
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

/// A unary op on a value of dtype `dt`.
pub fn unary(
    b: &mut FunctionBuilder,
    u: UnaryOp,
    dt: DType,
    x: Value,
    lanes: Lanes,
) -> Result<Value, String> {
    use UnaryOp::*;
    if dt.is_float() {
        return Ok(fmath!(b, dt, lanes, |a| match u {
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
            Sign => {
                let zero = a.fconst(0.0);
                let one = a.fconst(1.0);
                let m_one = a.fconst(-1.0);
                let gt = a.fcmp(kiln_math::FloatCC::Gt, x, zero);
                let lt = a.fcmp(kiln_math::FloatCC::Lt, x, zero);
                let r = a.select(lt, m_one, x);
                a.select(gt, one, r)
            }
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
        Sign => {
            let zero = int_like(b, x, 0);
            let one = int_like(b, x, 1);
            if signed {
                let m_one = int_like(b, x, -1);
                let gt = b.ins().icmp(IntCC::SignedGreaterThan, x, zero);
                let lt = b.ins().icmp(IntCC::SignedLessThan, x, zero);
                let r = select(b, lt, m_one, zero, lanes);
                select(b, gt, one, r, lanes)
            } else {
                let nz = b.ins().icmp(IntCC::NotEqual, x, zero);
                select(b, nz, one, zero, lanes)
            }
        }
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
    if dt.is_float() {
        return fmath!(b, dt, lanes, |a| Ok(match op {
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
        Div | Rem => int_div(b, op == Div, signed, x, y),
        Pow | Atan2 | ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => {
            return Err(not_compiled(op.name()))
        }
    })
}

/// XLA's integer division: `x / 0 = -1`, `x % 0 = x`, `MIN / -1 = MIN`, `MIN % -1 = 0`,
/// computed without trapping by dividing by a safe divisor and selecting.
fn int_div(b: &mut FunctionBuilder, div: bool, signed: bool, x: Value, y: Value) -> Value {
    let zero = int_like(b, y, 0);
    let one = int_like(b, y, 1);
    let is_zero = b.ins().icmp(IntCC::Equal, y, zero);
    if !signed {
        let d = b.ins().select(is_zero, one, y);
        return if div {
            let q = b.ins().udiv(x, d);
            let all = int_like(b, y, -1);
            b.ins().select(is_zero, all, q)
        } else {
            let r = b.ins().urem(x, d);
            b.ins().select(is_zero, x, r)
        };
    }
    let m_one = int_like(b, y, -1);
    let is_m_one = b.ins().icmp(IntCC::Equal, y, m_one);
    let unsafe_d = b.ins().bor(is_zero, is_m_one);
    let d = b.ins().select(unsafe_d, one, y);
    if div {
        let q = b.ins().sdiv(x, d);
        let neg = b.ins().ineg(x);
        let q = b.ins().select(is_m_one, neg, q);
        b.ins().select(is_zero, m_one, q)
    } else {
        let r = b.ins().srem(x, d);
        let r = b.ins().select(is_m_one, zero, r);
        b.ins().select(is_zero, x, r)
    }
}

/// `convert` with XLA's rules (see `kiln_interp`'s convert module).
pub fn convert(
    b: &mut FunctionBuilder,
    x: Value,
    from: DType,
    to: DType,
    lanes: Lanes,
) -> Result<Value, String> {
    use DType::*;
    if from == to {
        return Ok(x);
    }
    if lanes == Lanes::Vector {
        return Ok(match (from, to) {
            (F32, I32) => b.ins().fcvt_to_sint_sat(types::I32X4, x),
            (I32, F32) => b.ins().fcvt_from_sint(types::F32X4, x),
            (I32, U32) | (U32, I32) => x,
            _ => return Err(format!("vector convert {from} -> {to}")),
        });
    }
    let ft = |d: DType| if d == F64 { types::F64 } else { types::F32 };
    let it = |d: DType| if d == I64 { types::I64 } else { types::I32 };
    Ok(match (from, to) {
        (F32, F64) => b.ins().fpromote(types::F64, x),
        (F64, F32) => b.ins().fdemote(types::F32, x),
        (F32 | F64, I32 | I64) => b.ins().fcvt_to_sint_sat(it(to), x),
        (F32 | F64, U32) => b.ins().fcvt_to_uint_sat(types::I32, x),
        (F32 | F64, Bool) => {
            let z = if from == F64 {
                b.ins().f64const(0.0)
            } else {
                b.ins().f32const(0.0)
            };
            b.ins().fcmp(FloatCC::NotEqual, x, z)
        }
        (I32 | I64, F32 | F64) => b.ins().fcvt_from_sint(ft(to), x),
        (U32, F32 | F64) => b.ins().fcvt_from_uint(ft(to), x),
        (I32, I64) => b.ins().sextend(types::I64, x),
        (U32, I64) => b.ins().uextend(types::I64, x),
        (I64, I32 | U32) => b.ins().ireduce(types::I32, x),
        (I32, U32) | (U32, I32) => x,
        (I32 | I64 | U32, Bool) => b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
        (Bool, F32 | F64) => {
            let w = b.ins().uextend(types::I32, x);
            b.ins().fcvt_from_uint(ft(to), w)
        }
        (Bool, I32 | U32 | I64) => b.ins().uextend(it(to), x),
        _ => return Err(format!("convert {from} -> {to}")),
    })
}
