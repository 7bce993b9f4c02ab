//! One HLO instruction -> Kiln instructions. Each HLO op that maps onto Kiln's ops is
//! lowered here (a few as short compositions: `clamp`, `is-finite`, negative `pad`,
//! `broadcast` with unordered dimensions); anything else is an "unsupported HLO op" naming
//! the op, its place and the instruction. An attribute an op does not read, and that is not
//! known to be harmless to ignore, is refused by name rather than silently dropped.

use crate::ast::{Instruction, Operands};
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported, unsupported_op, Ctx, Lowered, Problem, Tree};
use crate::literal;
use kiln_ir::{
    BinaryOp, CompareDir, DType, DotDims, Op, Scalar, Tensor, TensorType, UnaryOp, Value,
};
use std::sync::Arc;

/// Attributes that never change the values an instruction computes.
pub(crate) const HARMLESS: &[&str] = &[
    "metadata",
    "sharding",
    "frontend_attributes",
    "backend_config",
    "parameter_replication",
    "precision_config",
    "operand_precision",
    "statistics",
    "origin",
    "control-predecessors",
    "result_accuracy",
    "output_to_operand_aliasing",
    "schedule",
    "execution_thread",
    "inferred_dimension",
];

fn unary(opcode: &str) -> Option<UnaryOp> {
    use UnaryOp::*;
    Some(match opcode {
        "abs" => Abs,
        "negate" => Neg,
        "exponential" => Exp,
        "exponential-minus-one" => Expm1,
        "log" => Log,
        "log-plus-one" => Log1p,
        "tanh" => Tanh,
        "logistic" => Logistic,
        "sqrt" => Sqrt,
        "rsqrt" => Rsqrt,
        "sine" => Sin,
        "cosine" => Cos,
        "erf" => Erf,
        "floor" => Floor,
        "ceil" => Ceil,
        "round-nearest-even" => Round,
        "sign" => Sign,
        "not" => Not,
        "tan" => Tan,
        "cbrt" => Cbrt,
        "round-nearest-afz" => RoundAfz,
        "popcnt" => Popcnt,
        "count-leading-zeros" => Clz,
        _ => return None,
    })
}

fn binary(opcode: &str) -> Option<BinaryOp> {
    use BinaryOp::*;
    Some(match opcode {
        "add" => Add,
        "subtract" => Sub,
        "multiply" => Mul,
        "divide" => Div,
        "remainder" => Rem,
        "power" => Pow,
        "maximum" => Max,
        "minimum" => Min,
        "and" => And,
        "or" => Or,
        "xor" => Xor,
        "atan2" => Atan2,
        "shift-left" => ShiftLeft,
        "shift-right-logical" => ShiftRightLogical,
        "shift-right-arithmetic" => ShiftRightArithmetic,
        _ => return None,
    })
}

/// The attributes an op reads and its operand count (`None`: any).
fn signature(opcode: &str) -> Option<(&'static [&'static str], Option<usize>)> {
    if unary(opcode).is_some() {
        return Some((&[], Some(1)));
    }
    if binary(opcode).is_some() {
        return Some((&[], Some(2)));
    }
    Some(match opcode {
        "compare" => (&["direction", "type", "comparison_type"], Some(2)),
        "select" | "clamp" => (&[], Some(3)),
        "convert" | "bitcast-convert" | "is-finite" | "reshape" | "bitcast" | "copy"
        | "opt-barrier" => (&[], Some(1)),
        "constant" | "parameter" => (&[], Some(0)),
        "iota" => (&["iota_dimension"], Some(0)),
        "broadcast" | "transpose" | "reverse" => (&["dimensions"], Some(1)),
        "concatenate" => (&["dimensions"], None),
        "slice" => (&["slice"], Some(1)),
        "dynamic-slice" => (&["dynamic_slice_sizes"], None),
        "dynamic-update-slice" => (&[], None),
        "pad" => (&["padding"], Some(2)),
        "set-dimension-size" => (&["dimensions"], Some(2)),
        "gather" => (crate::indexing::GATHER_ATTRS, Some(2)),
        "scatter" => (crate::indexing::SCATTER_ATTRS, None),
        "reduce" => (&["dimensions", "to_apply"], None),
        "convolution" => (
            &[
                "window",
                "dim_labels",
                "feature_group_count",
                "batch_group_count",
            ],
            Some(2),
        ),
        "reduce-window" => (&["window", "to_apply"], None),
        "select-and-scatter" => (&["window", "select", "scatter"], Some(3)),
        "sort" => (&["dimensions", "is_stable", "to_apply"], None),
        "topk" => (&["k", "largest"], Some(1)),
        "reduce-precision" => (&["exponent_bits", "mantissa_bits"], Some(1)),
        "rng-bit-generator" => (&["algorithm"], Some(1)),
        "cholesky" => (&["lower"], Some(1)),
        "triangular-solve" => (
            &["left_side", "lower", "unit_diagonal", "transpose_a"],
            Some(2),
        ),
        "dot" => (
            &[
                "lhs_batch_dims",
                "rhs_batch_dims",
                "lhs_contracting_dims",
                "rhs_contracting_dims",
                "algorithm",
            ],
            Some(2),
        ),
        "tuple" => (&[], None),
        "get-tuple-element" => (&["index"], Some(1)),
        "call" => (&["to_apply"], None),
        "fusion" => (&["calls", "kind"], None),
        "while" => (&["condition", "body"], None),
        "conditional" => (
            &[
                "branch_computations",
                "true_computation",
                "false_computation",
            ],
            None,
        ),
        _ => return None,
    })
}

impl Ctx<'_> {
    /// Lowers one instruction whose operands are `args`.
    pub(crate) fn lower(&mut self, inst: &Instruction, args: Vec<Tree>) -> Lowered {
        let op = inst.opcode.as_str();
        if op == "custom-call" {
            return self.custom_call(inst, &args);
        }
        let Some((reads, arity)) = signature(op) else {
            let detail = match inst.attr("custom_call_target").map(|a| &a.value) {
                Some(AttrValue::Str(t)) => format!(" (target \"{}\")", t.escape_debug()),
                _ => String::new(),
            };
            return Err(unsupported_op(inst, &detail));
        };
        if op == "reduce" && args.len() != 2 && args.len() != 4 {
            let detail = format!(" with {} operands (variadic reduce)", args.len());
            return Err(unsupported_op(inst, &detail));
        }
        if let Some(n) = arity {
            if args.len() != n && !matches!(inst.operands, Operands::Literal(_)) {
                let msg = format!(
                    "'{op}' takes {n} operand(s), %{} has {}",
                    inst.name,
                    args.len()
                );
                return Err(invalid(inst.opcode_pos, msg));
            }
        }
        if let Some(a) = inst
            .attrs
            .iter()
            .find(|a| !reads.contains(&a.name.as_str()) && !HARMLESS.contains(&a.name.as_str()))
        {
            let msg = format!(
                "unsupported attribute '{}' of '{op}' in %{}",
                a.name, inst.name
            );
            return Err(unsupported(a.pos, msg));
        }
        if let Some(u) = unary(op) {
            let a = self.leaf(inst, &args, 0)?;
            let ty = self.out_type(inst)?;
            return Ok(Tree::Leaf(self.emit(inst, Op::Unary(u), vec![a], ty)));
        }
        if let Some(b) = binary(op) {
            let (a, c) = (self.leaf(inst, &args, 0)?, self.leaf(inst, &args, 1)?);
            let ty = self.out_type(inst)?;
            if b == BinaryOp::Div && self.divides_as_reciprocal(a, c, &ty) {
                return self.reciprocal_product(inst, a, c, ty);
            }
            return Ok(Tree::Leaf(self.emit(inst, Op::Binary(b), vec![a, c], ty)));
        }
        match op {
            "compare" => self.compare(inst, &args),
            "select" => {
                let ty = self.out_type(inst)?;
                let p = self.leaf(inst, &args, 0)?;
                let p = self.splat(inst, p, &ty.with_dtype(DType::Bool));
                let (a, b) = (self.leaf(inst, &args, 1)?, self.leaf(inst, &args, 2)?);
                Ok(Tree::Leaf(self.emit(inst, Op::Select, vec![p, a, b], ty)))
            }
            "clamp" => {
                // XLA: min(max(operand, lo), hi); lo and hi may be scalars.
                let ty = self.out_type(inst)?;
                let lo = self.leaf(inst, &args, 0)?;
                let x = self.leaf(inst, &args, 1)?;
                let hi = self.leaf(inst, &args, 2)?;
                let lo = self.splat(inst, lo, &ty);
                let hi = self.splat(inst, hi, &ty);
                let t = self.emit_tmp(
                    inst,
                    "lo",
                    Op::Binary(BinaryOp::Max),
                    vec![x, lo],
                    ty.clone(),
                );
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::Binary(BinaryOp::Min),
                    vec![t, hi],
                    ty,
                )))
            }
            "is-finite" => {
                // |x| < inf: false for ±inf and NaN.
                let ty = self.out_type(inst)?;
                let x = self.leaf(inst, &args, 0)?;
                let xty = self.f.ty(x).clone();
                let inf = match xty.dtype {
                    DType::F32 => Scalar::F32(f32::INFINITY),
                    DType::F64 => Scalar::F64(f64::INFINITY),
                    DType::F16 => Scalar::F16(kiln_ir::f16::INFINITY),
                    DType::Bf16 => Scalar::Bf16(kiln_ir::bf16::INFINITY),
                    d => {
                        return Err(invalid(
                            inst.opcode_pos,
                            format!("is-finite of {d} in %{}", inst.name),
                        ))
                    }
                };
                let abs = self.emit_tmp(inst, "abs", Op::Unary(UnaryOp::Abs), vec![x], xty.clone());
                let inf = self.constant(inst, Tensor::splat(inf, []));
                let inf = self.splat(inst, inf, &xty);
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::Compare(CompareDir::Lt),
                    vec![abs, inf],
                    ty,
                )))
            }
            "convert" => {
                let a = self.leaf(inst, &args, 0)?;
                let ty = self.out_type(inst)?;
                if let Some(v) = self.bf16_result_in_f32(inst, a, &ty) {
                    return Ok(Tree::Leaf(v));
                }
                Ok(Tree::Leaf(self.emit(inst, Op::Convert, vec![a], ty)))
            }
            "bitcast-convert" | "reshape" => {
                let a = self.leaf(inst, &args, 0)?;
                let ty = self.out_type(inst)?;
                let kop = match op {
                    "bitcast-convert" => Op::BitcastConvert,
                    _ => Op::Reshape,
                };
                Ok(Tree::Leaf(self.emit(inst, kop, vec![a], ty)))
            }
            "bitcast" => self.bitcast(inst, &args),
            "copy" | "opt-barrier" => {
                self.check_tree(inst, args.into_iter().next().unwrap_or(Tree::Tuple(vec![])))
            }
            "constant" => {
                let ty = self.out_type(inst)?;
                let Operands::Literal(lit) = &inst.operands else {
                    return Err(invalid(inst.pos, "constant without a literal"));
                };
                let t = literal::tensor(lit, &ty)
                    .map_err(|(pos, m)| invalid(pos, format!("{m} (in %{})", inst.name)))?;
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::Constant(Arc::new(t)),
                    vec![],
                    ty,
                )))
            }
            "iota" => {
                let ty = self.out_type(inst)?;
                let dim = self.int_attr(inst, "iota_dimension")?;
                Ok(Tree::Leaf(self.emit(inst, Op::Iota { dim }, vec![], ty)))
            }
            "broadcast" => self.broadcast(inst, &args),
            "reverse" => {
                let a = self.leaf(inst, &args, 0)?;
                let ty = self.out_type(inst)?;
                let dims = self.ints(inst, "dimensions")?;
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::Reverse { dims },
                    vec![a],
                    ty,
                )))
            }
            "transpose" => {
                let a = self.leaf(inst, &args, 0)?;
                let ty = self.out_type(inst)?;
                let perm = self.ints(inst, "dimensions")?;
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::Transpose { perm },
                    vec![a],
                    ty,
                )))
            }
            "slice" => {
                let a = self.leaf(inst, &args, 0)?;
                let ty = self.out_type(inst)?;
                let Some(AttrValue::Slice(dims)) = inst.attr("slice").map(|a| &a.value) else {
                    return Err(invalid(
                        inst.pos,
                        format!(
                            "slice %{} needs slice={{[start:limit:stride], …}}",
                            inst.name
                        ),
                    ));
                };
                let mut s = (Vec::new(), Vec::new(), Vec::new());
                for d in dims {
                    s.0.push(self.index(inst, d.start)?);
                    s.1.push(self.index(inst, d.limit)?);
                    s.2.push(self.index(inst, d.stride)?);
                }
                let kop = Op::Slice {
                    start: s.0,
                    limit: s.1,
                    stride: s.2,
                };
                Ok(Tree::Leaf(self.emit(inst, kop, vec![a], ty)))
            }
            "concatenate" => {
                let ty = self.out_type(inst)?;
                let vals = self.leaves(inst, &args)?;
                let axis = match self.ints(inst, "dimensions")?[..] {
                    [axis] => axis,
                    _ => {
                        return Err(invalid(
                            inst.pos,
                            format!("concatenate %{} needs dimensions={{axis}}", inst.name),
                        ))
                    }
                };
                Ok(Tree::Leaf(self.emit(inst, Op::Concat { axis }, vals, ty)))
            }
            "pad" => self.pad(inst, &args),
            "set-dimension-size" => self.set_dimension_size(inst, &args),
            "dynamic-slice" => {
                let ty = self.out_type(inst)?;
                let vals = self.leaves(inst, &args)?;
                let sizes = self.ints(inst, "dynamic_slice_sizes")?;
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::DynamicSlice { sizes },
                    vals,
                    ty,
                )))
            }
            "dynamic-update-slice" => {
                let ty = self.out_type(inst)?;
                let vals = self.leaves(inst, &args)?;
                Ok(Tree::Leaf(self.emit(
                    inst,
                    Op::DynamicUpdateSlice,
                    vals,
                    ty,
                )))
            }
            // Two inputs and two inits: JAX's or TensorFlow's argmax / argmin.
            "reduce" if args.len() == 4 => self.variadic_reduce(inst, &args),
            "reduce" => self.reduce(inst, &args),
            "convolution" => self.convolution(inst, &args),
            "reduce-window" => self.reduce_window(inst, &args),
            "select-and-scatter" => self.select_and_scatter(inst, &args),
            "gather" => self.gather(inst, &args),
            "scatter" => self.scatter(inst, &args),
            "sort" => self.sort(inst, &args),
            "topk" => self.top_k(inst, &args),
            "reduce-precision" => self.reduce_precision(inst, &args),
            "rng-bit-generator" => self.rng_bit_generator(inst, &args),
            "cholesky" => self.cholesky(inst, &args),
            "triangular-solve" => self.triangular_solve(inst, &args),
            "dot" => self.dot(inst, &args),
            "while" => self.while_loop(inst, args),
            "conditional" => self.conditional(inst, args),
            "tuple" => self.check_tree(inst, Tree::Tuple(args)),
            "get-tuple-element" => {
                let index = self.int_attr(inst, "index")?;
                match args.into_iter().next() {
                    Some(Tree::Tuple(items)) if index < items.len() => {
                        let t = items.into_iter().nth(index).unwrap_or(Tree::Tuple(vec![]));
                        self.check_tree(inst, t)
                    }
                    _ => Err(invalid(
                        inst.pos,
                        format!(
                            "%{}: index={index} is not an element of the operand",
                            inst.name
                        ),
                    )),
                }
            }
            "call" | "fusion" => {
                let attr = if op == "call" { "to_apply" } else { "calls" };
                match inst.attr(attr).map(|a| &a.value) {
                    Some(AttrValue::Computations(c)) if c.len() == 1 => {
                        self.inline(inst, &c[0], args)
                    }
                    _ => Err(invalid(
                        inst.pos,
                        format!("{op} %{} needs {attr}=one computation", inst.name),
                    )),
                }
            }
            _ => Err(unsupported_op(inst, "")),
        }
    }

    /// Operand `i`, which must be an array.
    pub(crate) fn leaf(
        &self,
        inst: &Instruction,
        args: &[Tree],
        i: usize,
    ) -> Result<Value, Problem> {
        match args.get(i) {
            Some(Tree::Leaf(v)) => Ok(*v),
            Some(Tree::Tuple(_)) => Err(invalid(
                inst.pos,
                format!("operand {i} of %{} is a tuple", inst.name),
            )),
            None => Err(invalid(
                inst.pos,
                format!("%{} has no operand {i}", inst.name),
            )),
        }
    }

    /// Every operand, each of which must be an array.
    pub(crate) fn leaves(&self, inst: &Instruction, args: &[Tree]) -> Result<Vec<Value>, Problem> {
        (0..args.len()).map(|i| self.leaf(inst, args, i)).collect()
    }

    /// An auxiliary instruction of `inst`, named `<inst>.<tag>`.
    pub(crate) fn emit_tmp(
        &mut self,
        inst: &Instruction,
        tag: &str,
        op: Op,
        args: Vec<Value>,
        ty: TensorType,
    ) -> Value {
        let name = self.fresh_name(&format!("{}.{tag}", inst.name));
        let loc = kiln_ir::Loc {
            line: inst.pos.line,
            col: inst.pos.col,
        };
        self.f.push_named(op, args, ty, Some(&name), Some(loc))
    }

    pub(crate) fn constant(&mut self, inst: &Instruction, t: Tensor) -> Value {
        let ty = t.ty();
        self.emit_tmp(inst, "c", Op::Constant(Arc::new(t)), vec![], ty)
    }

    /// `v` broadcast to `ty` when it is a scalar of another shape; `v` otherwise.
    pub(crate) fn splat(&mut self, inst: &Instruction, v: Value, ty: &TensorType) -> Value {
        let vty = self.f.ty(v).clone();
        if vty.rank() != 0 || vty.shape == ty.shape {
            return v;
        }
        let op = Op::BroadcastInDim { dims: vec![] };
        self.emit_tmp(inst, "b", op, vec![v], ty.with_dtype(vty.dtype))
    }

    /// A non-negative integer attribute.
    pub(crate) fn int_attr(&self, inst: &Instruction, name: &str) -> Result<usize, Problem> {
        match inst.attr(name).map(|a| &a.value) {
            Some(AttrValue::Int(v)) => self.index(inst, *v),
            _ => Err(invalid(inst.pos, format!("%{} needs {name}=N", inst.name))),
        }
    }

    /// A list of non-negative integers (empty when absent).
    pub(crate) fn ints(&self, inst: &Instruction, name: &str) -> Result<Vec<usize>, Problem> {
        match inst.attr(name).map(|a| &a.value) {
            Some(AttrValue::Ints(v)) => v.iter().map(|&x| self.index(inst, x)).collect(),
            None => Ok(Vec::new()),
            Some(_) => Err(invalid(
                inst.pos,
                format!("%{}: {name} must be a list like {{0,1}}", inst.name),
            )),
        }
    }

    pub(crate) fn index(&self, inst: &Instruction, v: i64) -> Result<usize, Problem> {
        usize::try_from(v)
            .map_err(|_| invalid(inst.pos, format!("%{}: {v} is negative", inst.name)))
    }

    fn compare(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let ty = self.out_type(inst)?;
        let (a, b) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let total = ["type", "comparison_type"].iter().any(|name| {
            matches!(inst.attr(name).map(|a| &a.value), Some(AttrValue::Word(t)) if t == "TOTALORDER")
        });
        let dir = match inst.attr("direction").map(|a| &a.value) {
            Some(AttrValue::Word(d)) => CompareDir::from_name(&d.to_ascii_lowercase()),
            _ => None,
        };
        let Some(dir) = dir else {
            return Err(invalid(
                inst.pos,
                format!("compare %{} needs direction=EQ|NE|LT|LE|GT|GE", inst.name),
            ));
        };
        let kop = match total {
            true => Op::CompareTotalOrder(dir),
            false => Op::Compare(dir),
        };
        Ok(Tree::Leaf(self.emit(inst, kop, vec![a, b], ty)))
    }

    fn dot(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let ty = self.out_type(inst)?;
        let (mut a, mut b) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        if ty.dtype == DType::Bool {
            return Err(unsupported_op(inst, " with a pred result"));
        }
        // A wider result type (`preferred_element_type`, an `s8` product into `s32`):
        // compute in it (XLA converts the operands; integer products and sums wrap).
        for v in [&mut a, &mut b] {
            let vty = self.f.ty(*v).clone();
            if vty.dtype != ty.dtype {
                *v = self.emit_tmp(inst, "cvt", Op::Convert, vec![*v], vty.with_dtype(ty.dtype));
            }
        }
        let dims = DotDims {
            lhs_batch: self.ints(inst, "lhs_batch_dims")?,
            rhs_batch: self.ints(inst, "rhs_batch_dims")?,
            lhs_contract: self.ints(inst, "lhs_contracting_dims")?,
            rhs_contract: self.ints(inst, "rhs_contracting_dims")?,
        };
        Ok(Tree::Leaf(self.emit(
            inst,
            Op::DotGeneral(dims),
            vec![a, b],
            ty,
        )))
    }

    /// Whether XLA's algebraic simplifier turns the float division `a / c` into a product
    /// by `1 / c`: when the divisor is a constant (`A / Const => A * (1/Const)`, a broadcast
    /// constant included) and, in JAX's XLA, also a computed broadcast (`A / Broadcast(B)
    /// => A * Broadcast(1/B)`; [`crate::convert::divides_by_broadcast_reciprocal`]), the
    /// dividend not a constant. XLA:CPU computes such divisions as those products — in
    /// JAX, a softmax's or a normalisation's division by its row sum — so its results differ
    /// from the correctly rounded quotient by up to an ulp; the import computes what XLA
    /// computes (checked bit for bit against jaxlib 0.10 and TensorFlow 2.21:
    /// `tests/sorting.rs`). An elementwise division of two computed values stays a
    /// division, as in XLA.
    fn divides_as_reciprocal(&self, a: Value, c: Value, ty: &TensorType) -> bool {
        let op = |v: Value| self.f.def_inst(v).map(|i| &i.op);
        let constant = |v: Value| match op(v) {
            Some(Op::Constant(_)) => true,
            Some(Op::BroadcastInDim { .. }) => {
                let src = self.f.def_inst(v).map(|i| i.args[0]);
                src.is_some_and(|s| matches!(op(s), Some(Op::Constant(_))))
            }
            _ => false,
        };
        ty.dtype.is_float()
            && !matches!(op(a), Some(Op::Constant(_)))
            && (constant(c)
                || self.broadcast_reciprocal && matches!(op(c), Some(Op::BroadcastInDim { .. })))
    }

    /// `a * (1 / c)`, the reciprocal computed (and rounded) in the result's type.
    fn reciprocal_product(
        &mut self,
        inst: &Instruction,
        a: Value,
        c: Value,
        ty: TensorType,
    ) -> Lowered {
        let one = match ty.dtype {
            DType::F64 => Scalar::F64(1.0),
            DType::F16 => Scalar::F16(kiln_ir::f16::ONE),
            DType::Bf16 => Scalar::Bf16(kiln_ir::bf16::ONE),
            _ => Scalar::F32(1.0),
        };
        let one = self.constant(inst, Tensor::splat(one, []));
        let one = self.splat(inst, one, &ty);
        let r = self.emit_tmp(
            inst,
            "recip",
            Op::Binary(BinaryOp::Div),
            vec![one, c],
            ty.clone(),
        );
        self.reciprocals.insert(r);
        Ok(Tree::Leaf(self.emit(
            inst,
            Op::Binary(BinaryOp::Mul),
            vec![a, r],
            ty,
        )))
    }
}
