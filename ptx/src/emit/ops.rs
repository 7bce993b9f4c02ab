//! The op tables: each kernel-IR op as PTX instructions for each dtype (floats through
//! [`PtxArith`] and `kiln_math`, integers and bools as one or a few instructions), XLA's
//! integer division and `convert` rules, constants, and a reduction's identity and combine.

use super::state::Emitter;
use super::types::{class, int_imm, int_types};
use crate::arith::{Double, PtxArith, PtxFloat, Single};
use crate::kernels::MathFn;
use crate::module::{Body, Reg, RegClass};
use crate::program::EmitError;
use kiln_ir::{BinaryOp, CompareDir, DType, ReduceKind, UnaryOp};
use kiln_math::{Arith, FloatCC};

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
        UnaryOp::Sign => {
            // ±0 and NaN pass through, everything else becomes ±1 (kiln_interp's fsign).
            let zero = a.fconst(0.0);
            let one = a.fconst(1.0);
            let m_one = a.fconst(-1.0);
            let gt = a.fcmp(FloatCC::Gt, x, zero);
            let lt = a.fcmp(FloatCC::Lt, x, zero);
            let r = a.select(lt, m_one, x);
            a.select(gt, one, r)
        }
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
            DType::U64 | DType::I8 | DType::U8 | DType::I16 | DType::U16 => {
                self.constant(DType::U32, 0)
            }
        }
    }

    pub(super) fn unary(&mut self, u: UnaryOp, dt: DType, x: Reg) -> Option<Reg> {
        match dt {
            DType::F32 => float_unary::<Single>(&mut self.b, u, x),
            DType::F64 => float_unary::<Double>(&mut self.b, u, x),
            DType::Bool => (u == UnaryOp::Not).then(|| self.def(RegClass::Pred, "not.pred", &[&x])),
            DType::U64 | DType::I8 | DType::U8 | DType::I16 | DType::U16 => None, // not compiled yet
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
                        let one = int_imm(dt, 1);
                        let zero = int_imm(dt, 0);
                        if signed {
                            let m_one = int_imm(dt, -1);
                            let gt = self.def(RegClass::Pred, &format!("setp.gt.{s}"), &[&x, &0]);
                            let lt = self.def(RegClass::Pred, &format!("setp.lt.{s}"), &[&x, &0]);
                            let r = self.def(c, &format!("selp.{bt}"), &[&m_one, &zero, &lt]);
                            self.def(c, &format!("selp.{bt}"), &[&one, &r, &gt])
                        } else {
                            let nz = self.def(RegClass::Pred, &format!("setp.ne.{s}"), &[&x, &0]);
                            self.def(c, &format!("selp.{bt}"), &[&one, &zero, &nz])
                        }
                    }
                    _ => return None,
                })
            }
        }
    }

    /// A binary op on two values of `dt`; `None` where it is not defined for `dt`.
    pub(super) fn binary_op(&mut self, op: BinaryOp, dt: DType, x: Reg, y: Reg) -> Option<Reg> {
        match dt {
            DType::F32 => float_binary::<Single>(&mut self.b, op, x, y),
            DType::F64 => float_binary::<Double>(&mut self.b, op, x, y),
            DType::Bool => {
                let &(_, opcode) = BOOL_BINARY.iter().find(|(o, _)| *o == op)?;
                Some(self.def(RegClass::Pred, opcode, &[&x, &y]))
            }
            DType::U64 | DType::I8 | DType::U8 | DType::I16 | DType::U16 => None, // not compiled yet
            DType::I32 | DType::U32 | DType::I64 => {
                let (s, bt) = int_types(dt);
                if let Some(&(_, pattern)) = INT_BINARY.iter().find(|(o, _)| *o == op) {
                    let opcode = pattern.replace("{s}", s).replace("{b}", bt);
                    return Some(self.def(class(dt), &opcode, &[&x, &y]));
                }
                match op {
                    BinaryOp::Div | BinaryOp::Rem => {
                        Some(self.int_div(op == BinaryOp::Div, dt, x, y))
                    }
                    _ => None,
                }
            }
        }
    }

    /// XLA's integer division and remainder: divide by a safe divisor, then select the
    /// defined results for `y == 0` and (signed) `y == -1`.
    fn int_div(&mut self, div: bool, dt: DType, x: Reg, y: Reg) -> Reg {
        let (s, bt) = int_types(dt);
        let c = class(dt);
        let selp = format!("selp.{bt}");
        let (zero, one, m_one) = (int_imm(dt, 0), int_imm(dt, 1), int_imm(dt, -1));
        let is_zero = self.def(RegClass::Pred, &format!("setp.eq.{s}"), &[&y, &zero]);
        if dt == DType::U32 {
            let d = self.def(c, &selp, &[&one, &y, &is_zero]);
            return if div {
                let q = self.def(c, "div.u32", &[&x, &d]);
                self.def(c, &selp, &[&m_one, &q, &is_zero])
            } else {
                let r = self.def(c, "rem.u32", &[&x, &d]);
                self.def(c, &selp, &[&x, &r, &is_zero])
            };
        }
        let is_m_one = self.def(RegClass::Pred, &format!("setp.eq.{s}"), &[&y, &m_one]);
        let unsafe_d = self.def(RegClass::Pred, "or.pred", &[&is_zero, &is_m_one]);
        let d = self.def(c, &selp, &[&one, &y, &unsafe_d]);
        if div {
            let q = self.def(c, &format!("div.{s}"), &[&x, &d]);
            let neg = self.def(c, &format!("neg.{s}"), &[&x]);
            let q = self.def(c, &selp, &[&neg, &q, &is_m_one]);
            self.def(c, &selp, &[&m_one, &q, &is_zero])
        } else {
            let r = self.def(c, &format!("rem.{s}"), &[&x, &d]);
            let r = self.def(c, &selp, &[&zero, &r, &is_m_one]);
            self.def(c, &selp, &[&x, &r, &is_zero])
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
            DType::U64 | DType::I8 | DType::U8 | DType::I16 | DType::U16 => (icc, "u64", x, y),
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

    /// `convert` with `kiln_interp`'s rules (Rust `as`), one table row per dtype pair.
    pub(super) fn convert(&mut self, x: Reg, from: DType, to: DType) -> Reg {
        use DType::*;
        let fname = |d: DType| if d == F64 { "f64" } else { "f32" };
        match (from, to) {
            _ if from == to => x,
            (I32, U32) | (U32, I32) => x,
            (F32, F64) => self.def(RegClass::F64, "cvt.f64.f32", &[&x]),
            (F64, F32) => self.def(RegClass::F32, "cvt.rn.f32.f64", &[&x]),
            (F32 | F64, I32 | I64 | U32) => {
                // Truncating and saturating (PTX clamps by default); NaN -> 0 explicitly.
                let (s, bt) = int_types(to);
                let i = self.def(class(to), &format!("cvt.rzi.{s}.{}", fname(from)), &[&x]);
                let nan = self.def(
                    RegClass::Pred,
                    &format!("setp.nan.{}", fname(from)),
                    &[&x, &x],
                );
                self.def(class(to), &format!("selp.{bt}"), &[&0, &i, &nan])
            }
            (F32 | F64, Bool) => {
                // x != 0, so NaN -> true.
                let z = self.constant(from, 0);
                self.def(
                    RegClass::Pred,
                    &format!("setp.neu.{}", fname(from)),
                    &[&x, &z],
                )
            }
            (I32 | I64 | U32, F32 | F64) => {
                let s = int_types(from).0;
                self.def(class(to), &format!("cvt.rn.{}.{s}", fname(to)), &[&x])
            }
            (I32, I64) => self.def(RegClass::B64, "cvt.s64.s32", &[&x]),
            (U32, I64) => self.def(RegClass::B64, "cvt.u64.u32", &[&x]),
            (I64, I32 | U32) => self.def(RegClass::B32, "cvt.u32.u64", &[&x]),
            (I32 | I64 | U32, Bool) => {
                let s = int_types(from).0;
                self.def(RegClass::Pred, &format!("setp.ne.{s}"), &[&x, &0])
            }
            (Bool, F32) => self.def(
                RegClass::F32,
                "selp.f32",
                &[&"0f3F800000", &"0f00000000", &x],
            ),
            (Bool, F64) => self.def(
                RegClass::F64,
                "selp.f64",
                &[&"0d3FF0000000000000", &"0d0000000000000000", &x],
            ),
            (Bool, I32 | U32) => self.def(RegClass::B32, "selp.u32", &[&1, &0, &x]),
            (Bool, I64) => self.def(RegClass::B64, "selp.u64", &[&1, &0, &x]),
            // Same-dtype pairs are the first arm; listed so that the match is exhaustive.
            (F32, F32) | (F64, F64) | (I32, I32) | (I64, I64) | (U32, U32) | (Bool, Bool) => x,
            // Never emitted: `verify_program` refuses these dtypes (no compiled code yet).
            (U64 | I8 | U8 | I16 | U16, _) | (_, U64 | I8 | U8 | I16 | U16) => x,
        }
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
