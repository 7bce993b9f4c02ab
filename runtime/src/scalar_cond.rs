//! A `while` condition made only of integer and boolean scalar ops — a counter compared with
//! a bound (`jax.lax.fori_loop`'s `i < n`), TensorFlow's `Less(i, n) && Less(t, max)` —
//! evaluated on the carried scalars directly, without the executor's per-run tables or
//! a tensor per op. A loop checks its condition once per iteration; through the executor
//! and the interpreter such a condition cost about as much as a small loop body's compiled
//! cluster (keras_bigru: twelve conditions of three ops a call, a fifth of its time).
//!
//! The semantics are the interpreter's: integers wrap at their width (two's complement),
//! compare by value (signed or unsigned by dtype), `and`/`or`/`xor`/`not` are logical on
//! `bool` and bitwise on integers, `max`/`min` by value. Anything else — a float, a
//! tensor with elements other than one, another op, a region — makes [`ScalarCond::new`]
//! return `None`, and the condition runs as any region does. [`ScalarCond::eval`] also
//! returns `None` (the caller then runs the region) when an operand is not the rank-0
//! value of the dtype the condition was planned for.

use kiln_ir::{BinaryOp, CompareDir, DType, Func, Op, Scalar, Tensor, UnaryOp};

/// A condition's ops over scalar registers: one per scalar parameter, then one per op.
#[derive(Debug, Clone)]
pub(crate) struct ScalarCond {
    /// Per scalar parameter: (its position, its register, its dtype).
    params: Vec<(usize, usize, DType)>,
    /// The ops in order, each writing its own register.
    steps: Vec<Step>,
    /// The register holding the `bool` the condition yields.
    result: usize,
    /// How many registers: one per parameter read and per op, numbered in that order.
    registers: usize,
}

/// Registers kept on the stack by [`ScalarCond::eval`] (more go to the heap).
const STACK_REGISTERS: usize = 32;

/// One op of a [`ScalarCond`]: its result register, its dtype and what it computes.
#[derive(Debug, Clone)]
struct Step {
    out: usize,
    dtype: DType,
    kind: StepKind,
}

#[derive(Debug, Clone)]
enum StepKind {
    Constant(i128),
    Compare(CompareDir, usize, usize),
    Binary(BinaryOp, usize, usize),
    Not(usize),
}

/// Whether the scalar registers hold values of `dt` exactly (`i128` holds every integer).
fn integral(dt: DType) -> bool {
    dt == DType::Bool || dt.is_int()
}

/// `v` wrapped to `dt`'s width, as the interpreter's wrapping integer ops leave it.
fn wrap(v: i128, dt: DType) -> i128 {
    match dt {
        DType::Bool => v & 1,
        DType::I8 => i128::from(v as i8),
        DType::I16 => i128::from(v as i16),
        DType::I32 => i128::from(v as i32),
        DType::U8 => i128::from(v as u8),
        DType::U16 => i128::from(v as u16),
        DType::U32 => i128::from(v as u32),
        DType::U64 => i128::from(v as u64),
        _ => i128::from(v as i64),
    }
}

/// The register value of a scalar element, `None` for a float.
fn value(s: Scalar) -> Option<i128> {
    Some(match s {
        Scalar::Bool(b) => i128::from(b),
        Scalar::I8(v) => v.into(),
        Scalar::I16(v) => v.into(),
        Scalar::I32(v) => v.into(),
        Scalar::I64(v) => v.into(),
        Scalar::U8(v) => v.into(),
        Scalar::U16(v) => v.into(),
        Scalar::U32(v) => v.into(),
        Scalar::U64(v) => v.into(),
        _ => return None,
    })
}

impl ScalarCond {
    /// The scalar form of condition `g`, when every op of it has one (see the module doc).
    pub(crate) fn new(g: &Func) -> Option<ScalarCond> {
        let scalar = |v: kiln_ir::Value| {
            let t = g.ty(v);
            (t.shape.is_empty() && integral(t.dtype)).then_some(t.dtype)
        };
        // Per value of the region, its register once known (a scalar parameter or an op's
        // result).
        let mut reg_of: Vec<Option<usize>> = vec![None; g.num_values()];
        let mut params = Vec::new();
        for (i, &p) in g.params.iter().enumerate() {
            if let Some(dt) = scalar(p) {
                reg_of[p.0 as usize] = Some(params.len());
                params.push((i, params.len(), dt));
            }
        }
        let mut steps = Vec::with_capacity(g.insts.len());
        for inst in &g.insts {
            let [out] = inst.results[..] else {
                return None;
            };
            let dtype = scalar(out)?;
            let reg = |i: usize| reg_of[inst.args.get(i)?.0 as usize];
            let kind = match (&inst.op, inst.args.len()) {
                (Op::Constant(t), 0) if t.num_elements() == 1 => {
                    StepKind::Constant(value(t.data().get(0))?)
                }
                (Op::Compare(dir), 2) => StepKind::Compare(*dir, reg(0)?, reg(1)?),
                (Op::Binary(op), 2) if Self::binary(*op) => StepKind::Binary(*op, reg(0)?, reg(1)?),
                (Op::Unary(UnaryOp::Not), 1) => StepKind::Not(reg(0)?),
                _ => return None,
            };
            let out_reg = params.len() + steps.len();
            reg_of[out.0 as usize] = Some(out_reg);
            steps.push(Step {
                out: out_reg,
                dtype,
                kind,
            });
        }
        let [result] = g.results[..] else {
            return None;
        };
        let result_reg = reg_of[result.0 as usize].filter(|_| g.ty(result).dtype == DType::Bool)?;
        // A condition that is only a parameter is left to the region: no op to save.
        (!steps.is_empty()).then_some(ScalarCond {
            registers: params.len() + steps.len(),
            params,
            steps,
            result: result_reg,
        })
    }

    /// The binary ops a [`ScalarCond`] evaluates.
    fn binary(op: BinaryOp) -> bool {
        use BinaryOp::*;
        matches!(op, Add | Sub | Mul | Max | Min | And | Or | Xor)
    }

    /// The condition on the region's operands (`arg(i)` is operand `i`); `None` when an
    /// operand it reads is not a one-element tensor of its planned dtype.
    pub(crate) fn eval<'t>(&self, arg: impl Fn(usize) -> Option<&'t Tensor>) -> Option<bool> {
        let mut stack = [0i128; STACK_REGISTERS];
        let mut heap = Vec::new();
        let r: &mut [i128] = if self.registers <= STACK_REGISTERS {
            &mut stack[..self.registers]
        } else {
            heap.resize(self.registers, 0);
            &mut heap
        };
        for &(i, v, dt) in &self.params {
            let t = arg(i)?;
            if t.dtype() != dt || t.num_elements() != 1 {
                return None;
            }
            r[v] = value(t.data().get(0))?;
        }
        for s in &self.steps {
            r[s.out] = match s.kind {
                StepKind::Constant(c) => c,
                StepKind::Compare(dir, a, b) => i128::from(dir.holds(r[a], r[b])),
                StepKind::Binary(op, a, b) => {
                    let (a, b) = (r[a], r[b]);
                    wrap(
                        match op {
                            BinaryOp::Add => a + b,
                            BinaryOp::Sub => a - b,
                            // Exact in `i128` for operands of at most 64 bits.
                            BinaryOp::Mul => a * b,
                            BinaryOp::Max => a.max(b),
                            BinaryOp::Min => a.min(b),
                            BinaryOp::And => a & b,
                            BinaryOp::Or => a | b,
                            _ => a ^ b,
                        },
                        s.dtype,
                    )
                }
                // Logical for `bool` (its register is 0 or 1), bitwise for integers.
                StepKind::Not(a) => wrap(!r[a], s.dtype),
            };
        }
        Some(r[self.result] != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_interp::Interpreter;

    fn func(src: &str) -> Func {
        kiln_ir::parse_func(src, "cond.kir").expect("parses")
    }

    fn scalar(dt: DType, v: i64) -> Tensor {
        let t = Tensor::new(vec![], kiln_ir::Buffer::I64(vec![v].into())).expect("scalar");
        kiln_interp::Interpreter::new(1)
            .expect("pool")
            .eval(&Op::Convert, &[&t], &kiln_ir::TensorType::new(dt, vec![]))
            .expect("converts")
    }

    /// Conditions of every op and integer width against the interpreter on values around
    /// each width's limits (wrapping sums and products, signed against unsigned order).
    #[test]
    fn conditions_equal_the_interpreter() {
        let conds = [
            // TensorFlow's `Less(i, n) && Less(t, max)`, with a tensor carried beside.
            (
                "i32",
                "%a = compare %x, %y, dir=lt : bool[]
  %c = constant 5 : i32[]
  %b = compare %y, %c, dir=lt : bool[]
  %r = and %a, %b : bool[]",
            ),
            (
                "i32",
                "%s = add %x, %y : i32[]
  %p = mul %s, %x : i32[]
  %r = compare %p, %y, dir=ge : bool[]",
            ),
            (
                "u32",
                "%s = sub %x, %y : u32[]
  %r = compare %s, %x, dir=gt : bool[]",
            ),
            (
                "i64",
                "%m = max %x, %y : i64[]
  %n = min %x, %y : i64[]
  %d = xor %m, %n : i64[]
  %r = compare %d, %x, dir=ne : bool[]",
            ),
            (
                "u8",
                "%s = add %x, %y : u8[]
  %q = not %s : u8[]
  %r = compare %q, %y, dir=le : bool[]",
            ),
            (
                "i8",
                "%s = mul %x, %y : i8[]
  %o = or %s, %y : i8[]
  %a = and %o, %x : i8[]
  %e = compare %a, %x, dir=eq : bool[]
  %r = not %e : bool[]",
            ),
            (
                "u64",
                "%s = add %x, %y : u64[]
  %r = compare %s, %y, dir=lt : bool[]",
            ),
        ];
        let values: [i64; 12] = [
            0,
            1,
            -1,
            2,
            5,
            127,
            -128,
            255,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ];
        let interp = Interpreter::new(1).expect("pool");
        for (t, body) in conds {
            let src = format!(
                "func @cond(%x: {t}[], %y: {t}[], %z: f32[3]) -> bool[] {{\n  {body}\n  return %r\n}}"
            );
            let g = func(&src);
            let s = ScalarCond::new(&g).unwrap_or_else(|| panic!("scalar: {src}"));
            let dt = g.ty(g.params[0]).dtype;
            let z = Tensor::from_f32([3], vec![1.0, 2.0, 3.0]).expect("z");
            for &a in &values {
                for &b in &values {
                    let (x, y) = (scalar(dt, a), scalar(dt, b));
                    let args = [&x, &y, &z];
                    let (want, _) = interp.run_refs(&g, &args).expect("interpreter runs");
                    let want = matches!(want[0].data().get(0), Scalar::Bool(true));
                    let got = s.eval(|i| args.get(i).copied());
                    assert_eq!(got, Some(want), "{src}\n x={a} y={b}");
                }
            }
            // An operand of another dtype or shape: not evaluated here.
            let wrong = Tensor::from_f32([], vec![1.0]).expect("f32");
            assert_eq!(s.eval(|i| [&wrong, &wrong, &z].get(i).copied()), None);
        }
    }

    /// A condition with more registers than the stack holds: the same answer.
    #[test]
    fn long_conditions_use_the_heap() {
        let mut body = String::from("%s0 = add %x, %y : i32[]\n");
        for k in 1..40 {
            body += &format!("  %s{k} = add %s{}, %x : i32[]\n", k - 1);
        }
        let src = format!(
            "func @cond(%x: i32[], %y: i32[]) -> bool[] {{\n  {body}  %r = compare %s39, %y, dir=gt : bool[]\n  return %r\n}}"
        );
        let g = func(&src);
        let s = ScalarCond::new(&g).expect("scalar");
        assert!(s.registers > STACK_REGISTERS);
        let interp = Interpreter::new(1).expect("pool");
        for (a, b) in [(3, 5), (-3, 200), (i32::MAX as i64, 0), (60_000_000, -1)] {
            let (x, y) = (scalar(DType::I32, a), scalar(DType::I32, b));
            let (want, _) = interp.run_refs(&g, &[&x, &y]).expect("runs");
            let want = matches!(want[0].data().get(0), Scalar::Bool(true));
            assert_eq!(s.eval(|i| [&x, &y].get(i).copied()), Some(want), "{a} {b}");
        }
    }

    /// Floats, tensors and other ops keep the condition a region.
    #[test]
    fn other_conditions_stay_regions() {
        for src in [
            "func @c(%x: f32[], %y: f32[]) -> bool[] {\n  %r = compare %x, %y, dir=lt : bool[]\n  return %r\n}",
            "func @c(%x: i32[2], %y: i32[]) -> bool[] {\n  %s = slice %x, start=[0], limit=[1], stride=[1] : i32[1]\n  %q = reshape %s : i32[]\n  %r = compare %q, %y, dir=lt : bool[]\n  return %r\n}",
            "func @c(%x: i32[], %y: i32[]) -> bool[] {\n  %d = div %x, %y : i32[]\n  %r = compare %d, %y, dir=lt : bool[]\n  return %r\n}",
            "func @c(%x: bool[]) -> bool[] {\n  return %x\n}",
        ] {
            assert!(ScalarCond::new(&func(src)).is_none(), "{src}");
        }
    }
}
