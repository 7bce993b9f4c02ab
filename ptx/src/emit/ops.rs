//! The op tables: each kernel-IR op as PTX instructions for each dtype (floats through
//! [`PtxArith`] and `kiln_math`, integers and bools as one or a few instructions; XLA's
//! integer division and `sign` are `kiln_math`'s over [`PtxArith`]), `convert`'s instructions,
//! constants, and a reduction's identity and combine.

use super::state::Emitter;
use super::types::{class, int_types};
use crate::arith::{Double, PtxArith, PtxFloat, Single};
use crate::kernels::MathFn;
use crate::module::{Body, Reg, RegClass};
use crate::program::EmitError;
use kiln_ir::{BinaryOp, CompareDir, DType, ReduceKind, UnaryOp};
use kiln_math::{Arith, ConvertPrims, DivOp, Num};

/// Integer binary ops that are one instruction: `(op, opcode)` with `{s}` the typed suffix
/// (`s32`/`u32`/`s64`) and `{b}` the bit suffix.
const INT_BINARY: [(BinaryOp, &str); 8] = [
    (BinaryOp::Add, "add.{s}"),
    (BinaryOp::Sub, "sub.{s}"),
    (BinaryOp::Mul, "mul.lo.{s}"),
    (BinaryOp::Max, "max.{s}"),
    (BinaryOp::Min, "min.{s}"),
    (BinaryOp::And, "and.{b}"),
    (BinaryOp::Or, "or.{b}"),
    (BinaryOp::Xor, "xor.{b}"),
];

/// Bool binary ops on predicates.
const BOOL_BINARY: [(BinaryOp, &str); 3] = [
    (BinaryOp::And, "and.pred"),
    (BinaryOp::Or, "or.pred"),
    (BinaryOp::Xor, "xor.pred"),
];

/// `setp` conditions: floats (unordered only for `ne`, as Rust's `!=`), integers.
const COMPARE: [(CompareDir, &str, &str); 6] = [
    (CompareDir::Lt, "lt", "lt"),
    (CompareDir::Le, "le", "le"),
    (CompareDir::Gt, "gt", "gt"),
    (CompareDir::Ge, "ge", "ge"),
    (CompareDir::Eq, "eq", "eq"),
    (CompareDir::Ne, "neu", "ne"),
];

/// Unary ops computed by a generic `kiln_math` function.
const MATH_UNARY: [(UnaryOp, MathFn); 10] = [
    (UnaryOp::Exp, MathFn::Exp),
    (UnaryOp::Expm1, MathFn::Expm1),
    (UnaryOp::Log, MathFn::Log),
    (UnaryOp::Log1p, MathFn::Log1p),
    (UnaryOp::Tanh, MathFn::Tanh),
    (UnaryOp::Logistic, MathFn::Logistic),
    (UnaryOp::Erf, MathFn::Erf),
    (UnaryOp::Sin, MathFn::Sin),
    (UnaryOp::Cos, MathFn::Cos),
    (UnaryOp::Rsqrt, MathFn::Rsqrt),
];

/// Float unary ops over [`PtxArith`]; `None` where the op is not defined on floats.
fn float_unary<T: PtxFloat>(b: &mut Body, u: UnaryOp, x: Reg) -> Option<Reg> {
    if let Some(&(_, f)) = MATH_UNARY.iter().find(|(op, _)| *op == u) {
        return Some(f.apply(&mut PtxArith::<T>::new(b), x, x));
    }
    let a = &mut PtxArith::<T>::new(b);
    Some(match u {
        UnaryOp::Neg => a.neg(x),
        UnaryOp::Abs => a.abs(x),
        UnaryOp::Sqrt => a.sqrt(x),
        UnaryOp::Floor => a.floor(x),
        UnaryOp::Ceil => a.ceil(x),
        UnaryOp::Round => a.round_even(x),
        UnaryOp::Sign => kiln_math::float_sign(a, x),
        _ => return None,
    })
}

/// Float binary ops over [`PtxArith`] (`rem`: the exact `fmod` loop of [`crate::fmod`]);
/// `None` where not defined.
fn float_binary<T: PtxFloat>(b: &mut Body, op: BinaryOp, x: Reg, y: Reg) -> Option<Reg> {
    if op == BinaryOp::Rem {
        return crate::fmod::emit_fmod(b, x, y);
    }
    let a = &mut PtxArith::<T>::new(b);
    Some(match op {
        BinaryOp::Add => a.add(x, y),
        BinaryOp::Sub => a.sub(x, y),
        BinaryOp::Mul => a.mul(x, y),
        BinaryOp::Div => a.div(x, y),
        BinaryOp::Max => a.max(x, y),
        BinaryOp::Min => a.min(x, y),
        BinaryOp::Pow => kiln_math::pow(a, x, y),
        // Integer-only ops, and those without compiled code yet (`Op::has_compiled_code`).
        _ => return None,
    })
}

/// Runs `$e` with `$a` the [`PtxArith`] of an integer dtype's width: [`Double`] for `i64`,
/// [`Single`] for `i32`/`u32` (its `U` registers are the dtype's).
macro_rules! int_arith {
    ($body:expr, $dt:expr, |$a:ident| $e:expr) => {
        if $dt == DType::I64 {
            let $a = &mut PtxArith::<Double>::new($body);
            $e
        } else {
            let $a = &mut PtxArith::<Single>::new($body);
            $e
        }
    };
}

impl<'a> Emitter<'a> {
    /// A register holding the constant with `bits` in dtype `dt`.
    pub(super) fn constant(&mut self, dt: DType, bits: u64) -> Reg {
        match dt {
            DType::F32 => {
                let lit = format!("0f{:08X}", bits as u32);
                self.def(RegClass::F32, "mov.f32", &[&lit])
            }
            DType::F64 => {
                let lit = format!("0d{bits:016X}");
                self.def(RegClass::F64, "mov.f64", &[&lit])
            }
            DType::I32 | DType::U32 => self.def(
                RegClass::B32,
                "mov.b32",
                &[&format!("0x{:08X}", bits as u32)],
            ),
            DType::I64 => self.def(RegClass::B64, "mov.b64", &[&format!("0x{bits:016X}")]),
            DType::Bool => {
                let w = self.def(RegClass::B32, "mov.b32", &[&u32::from(bits != 0)]);
                self.def(RegClass::Pred, "setp.ne.u32", &[&w, &0])
            }
            // Never emitted: `verify_program` refuses these dtypes (no compiled code yet).
            DType::U64
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::F16
            | DType::Bf16 => self.constant(DType::U32, 0),
        }
    }

    pub(super) fn unary(&mut self, u: UnaryOp, dt: DType, x: Reg) -> Option<Reg> {
        if dt.is_half() {
            // Computed in f32 by the kernel pass `compute_halves_in_f32`.
            return None;
        }
        match dt {
            DType::F32 => float_unary::<Single>(&mut self.b, u, x),
            DType::F64 => float_unary::<Double>(&mut self.b, u, x),
            DType::Bool => (u == UnaryOp::Not).then(|| self.def(RegClass::Pred, "not.pred", &[&x])),
            DType::U64
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::F16
            | DType::Bf16 => None, // not compiled yet
            DType::I32 | DType::U32 | DType::I64 => {
                let (s, bt) = int_types(dt);
                let c = class(dt);
                let signed = dt != DType::U32;
                // `neg` exists only for signed types; two's complement makes it the same.
                let neg = if dt == DType::I64 {
                    "neg.s64"
                } else {
                    "neg.s32"
                };
                Some(match u {
                    UnaryOp::Neg => self.def(c, neg, &[&x]),
                    UnaryOp::Abs if signed => {
                        // Wrapping: |MIN| = MIN.
                        let n = self.def(c, neg, &[&x]);
                        let lt = self.def(RegClass::Pred, &format!("setp.lt.{s}"), &[&x, &0]);
                        self.def(c, &format!("selp.{bt}"), &[&n, &x, &lt])
                    }
                    UnaryOp::Abs => x,
                    UnaryOp::Not => self.def(c, &format!("not.{bt}"), &[&x]),
                    UnaryOp::Sign => {
                        int_arith!(&mut self.b, dt, |a| kiln_math::int_sign(a, signed, x))
                    }
                    _ => return None,
                })
            }
        }
    }

    /// A binary op on two values of `dt`; `None` where it is not defined for `dt`.
    pub(super) fn binary_op(&mut self, op: BinaryOp, dt: DType, x: Reg, y: Reg) -> Option<Reg> {
        if dt.is_half() {
            return None;
        }
        match dt {
            DType::F32 => float_binary::<Single>(&mut self.b, op, x, y),
            DType::F64 => float_binary::<Double>(&mut self.b, op, x, y),
            DType::Bool => {
                let &(_, opcode) = BOOL_BINARY.iter().find(|(o, _)| *o == op)?;
                Some(self.def(RegClass::Pred, opcode, &[&x, &y]))
            }
            DType::U64
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::F16
            | DType::Bf16 => None, // not compiled yet
            DType::I32 | DType::U32 | DType::I64 => {
                let (s, bt) = int_types(dt);
                if let Some(&(_, pattern)) = INT_BINARY.iter().find(|(o, _)| *o == op) {
                    let opcode = pattern.replace("{s}", s).replace("{b}", bt);
                    return Some(self.def(class(dt), &opcode, &[&x, &y]));
                }
                match op {
                    BinaryOp::Div | BinaryOp::Rem => {
                        let op = if op == BinaryOp::Div {
                            DivOp::Div
                        } else {
                            DivOp::Rem
                        };
                        let signed = dt != DType::U32;
                        Some(int_arith!(&mut self.b, dt, |a| kiln_math::xla_div(
                            a, op, signed, x, y
                        )))
                    }
                    _ => None,
                }
            }
        }
    }

    pub(super) fn compare(&mut self, d: CompareDir, dt: DType, x: Reg, y: Reg) -> Reg {
        let &(_, fcc, icc) = COMPARE
            .iter()
            .find(|(c, _, _)| *c == d)
            .expect("every direction is in the table");
        let (cc, ty, x, y) = match dt {
            DType::F32 => (fcc, "f32", x, y),
            DType::F64 => (fcc, "f64", x, y),
            DType::I32 | DType::U32 | DType::I64 => (icc, int_types(dt).0, x, y),
            // Never emitted: `verify_program` refuses these dtypes (no compiled code yet).
            DType::U64
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::F16
            | DType::Bf16 => (icc, "u64", x, y),
            DType::Bool => {
                // false < true: compare as 0/1.
                let a = self.def(RegClass::B32, "selp.u32", &[&1, &0, &x]);
                let b = self.def(RegClass::B32, "selp.u32", &[&1, &0, &y]);
                (icc, "u32", a, b)
            }
        };
        self.def(RegClass::Pred, &format!("setp.{cc}.{ty}"), &[&x, &y])
    }

    pub(super) fn select(&mut self, dt: DType, p: Reg, x: Reg, y: Reg) -> Reg {
        let op = match class(dt) {
            RegClass::F32 => "selp.f32",
            RegClass::F64 => "selp.f64",
            RegClass::B32 => "selp.b32",
            RegClass::B64 => "selp.b64",
            RegClass::Pred => {
                let a = self.def(RegClass::Pred, "and.pred", &[&p, &x]);
                let np = self.def(RegClass::Pred, "not.pred", &[&p]);
                let b = self.def(RegClass::Pred, "and.pred", &[&np, &y]);
                return self.def(RegClass::Pred, "or.pred", &[&a, &b]);
            }
        };
        self.def(class(dt), op, &[&x, &y, &p])
    }

    /// `convert` with XLA's rules ([`kiln_math::convert`]); `None` for a dtype without
    /// compiled conversions.
    pub(super) fn convert(&mut self, x: Reg, from: DType, to: DType) -> Option<Reg> {
        kiln_math::convert(&mut PtxConvert(self), x, from, to)
    }

    /// The identity of a reduction (`kiln_interp`'s: sum of floats starts at -0).
    pub(super) fn identity(&mut self, dt: DType, kind: ReduceKind) -> Result<Reg, EmitError> {
        let id = kind.identity(dt).ok_or_else(|| EmitError::Unsupported {
            kernel: self.k.name.clone(),
            reason: format!("{} of {dt}", kind.name()),
        })?;
        Ok(self.constant(dt, id.bits()))
    }

    /// `op(a, x)` of a reduction.
    pub(super) fn combine(&mut self, dt: DType, kind: ReduceKind, a: Reg, x: Reg) -> Reg {
        let op = match kind {
            ReduceKind::Sum => BinaryOp::Add,
            ReduceKind::Prod => BinaryOp::Mul,
            ReduceKind::Max => BinaryOp::Max,
            ReduceKind::Min => BinaryOp::Min,
        };
        let r = match dt {
            DType::Bool => Some(self.def(
                RegClass::Pred,
                if kind == ReduceKind::Max {
                    "or.pred"
                } else {
                    "and.pred"
                },
                &[&a, &x],
            )),
            _ => self.binary_op(op, dt, a, x),
        };
        r.expect("every reduction of a non-bool dtype has a binary op")
    }

    fn mov_op(dt: DType) -> &'static str {
        match class(dt) {
            RegClass::F32 => "mov.f32",
            RegClass::F64 => "mov.f64",
            RegClass::B32 => "mov.b32",
            RegClass::B64 => "mov.b64",
            RegClass::Pred => "mov.pred",
        }
    }

    pub(super) fn mov(&mut self, dt: DType, d: Reg, s: Reg) {
        self.emit(Self::mov_op(dt), &[&d, &s]);
    }

    pub(super) fn guarded_mov(&mut self, p: Reg, dt: DType, d: Reg, s: Reg) {
        self.emit(&format!("@{p} {}", Self::mov_op(dt)), &[&d, &s]);
    }
}

/// The PTX instructions of [`kiln_math::convert`].
struct PtxConvert<'e, 'a>(&'e mut Emitter<'a>);

/// `f32` or `f64`: a float dtype's instruction suffix.
fn float_suffix(d: DType) -> &'static str {
    if d == DType::F64 {
        "f64"
    } else {
        "f32"
    }
}

impl ConvertPrims for PtxConvert<'_, '_> {
    type Ty = DType;
    type V = Reg;
    // PTX float-to-integer conversions clamp to the integer range by default (the ISA calls
    // `.sat` redundant there); NaN is mapped to 0 by the rule's select, not left to the GPU.
    const FLOAT_TO_INT_NAN_IS_ZERO: bool = false;

    fn num(t: DType) -> Option<Num> {
        kiln_compiler::kernel::convert_num(t)
    }
    fn float_resize(&mut self, x: Reg, _from: DType, to: DType) -> Reg {
        if to == DType::F64 {
            self.0.def(RegClass::F64, "cvt.f64.f32", &[&x])
        } else {
            self.0.def(RegClass::F32, "cvt.rn.f32.f64", &[&x])
        }
    }
    fn float_to_int(&mut self, x: Reg, from: DType, to: DType) -> Reg {
        let s = int_types(to).0;
        let op = format!("cvt.rzi.{s}.{}", float_suffix(from));
        self.0.def(class(to), &op, &[&x])
    }
    fn is_nan(&mut self, x: Reg, from: DType) -> Reg {
        let op = format!("setp.nan.{}", float_suffix(from));
        self.0.def(RegClass::Pred, &op, &[&x, &x])
    }
    fn zero_where(&mut self, nan: Reg, i: Reg, to: DType) -> Reg {
        let op = format!("selp.{}", int_types(to).1);
        self.0.def(class(to), &op, &[&0, &i, &nan])
    }
    fn int_to_float(&mut self, x: Reg, from: DType, to: DType) -> Reg {
        let op = format!("cvt.rn.{}.{}", float_suffix(to), int_types(from).0);
        self.0.def(class(to), &op, &[&x])
    }
    fn int_resize(&mut self, x: Reg, from: DType, to: DType) -> Reg {
        match (from, to) {
            (DType::I32, DType::I64) => self.0.def(RegClass::B64, "cvt.s64.s32", &[&x]),
            (_, DType::I64) => self.0.def(RegClass::B64, "cvt.u64.u32", &[&x]),
            _ => self.0.def(RegClass::B32, "cvt.u32.u64", &[&x]),
        }
    }
    fn nonzero(&mut self, x: Reg, from: DType) -> Reg {
        if from.is_float() {
            // IEEE `!=` (unordered): NaN -> true.
            let z = self.0.constant(from, 0);
            let op = format!("setp.neu.{}", float_suffix(from));
            self.0.def(RegClass::Pred, &op, &[&x, &z])
        } else {
            let op = format!("setp.ne.{}", int_types(from).0);
            self.0.def(RegClass::Pred, &op, &[&x, &0])
        }
    }
    fn bool_to(&mut self, x: Reg, to: DType) -> Reg {
        match to {
            DType::F32 => self.0.def(
                RegClass::F32,
                "selp.f32",
                &[&"0f3F800000", &"0f00000000", &x],
            ),
            DType::F64 => self.0.def(
                RegClass::F64,
                "selp.f64",
                &[&"0d3FF0000000000000", &"0d0000000000000000", &x],
            ),
            DType::I64 => self.0.def(RegClass::B64, "selp.u64", &[&1, &0, &x]),
            _ => self.0.def(RegClass::B32, "selp.u32", &[&1, &0, &x]),
        }
    }
}
