//! Ops resolved once for their operand types ([`PlannedOp`]), for callers that run the same
//! op on new values many times: a compiled cluster's matrix products and convolutions
//! (every call of the executable), a loop body's steps.
//!
//! [`Interpreter::eval`] checks the typing rule, and for a product works out how each
//! operand is seen as matrices, on every call — for a recurrent cell's `[2,6]×[6,18]` that
//! costs more than the multiply-adds. [`Interpreter::plan`] does both once;
//! [`Interpreter::run_planned`] then only compares the operands' types with the planned
//! ones and runs the op. Both paths compute with the same code ([`eval_checked`] and
//! [`dot::DotPlan`]), so their bits are the same.

use crate::{dot, eval_checked, hw, runs_inline, InterpError, Interpreter};
use kiln_ir::typecheck::infer;
use kiln_ir::{DType, Op, Tensor, TensorType};

/// One op with its operand and result types, checked once (see the module doc).
#[derive(Debug, Clone)]
pub struct PlannedOp {
    op: Op,
    args: Vec<TensorType>,
    result: TensorType,
    /// A float `dot_general`'s operand layouts.
    dot: Option<dot::DotPlan>,
}

impl PlannedOp {
    /// The op.
    pub fn op(&self) -> &Op {
        &self.op
    }

    /// The result type.
    pub fn result(&self) -> &TensorType {
        &self.result
    }
}

impl Interpreter {
    /// `op` on operands of types `args` giving `result`, checked against the op's typing
    /// rule now so that [`Interpreter::run_planned`] need not. Ops that run regions
    /// (clusters, loops, conditionals) are not planned: they are an error here.
    pub fn plan(
        &self,
        op: &Op,
        args: &[&TensorType],
        result: &TensorType,
    ) -> Result<PlannedOp, InterpError> {
        let err = |message: String| InterpError::Op {
            op: op.name(),
            message,
        };
        if let Op::Cluster(_) | Op::While(_) | Op::Conditional(_) = op {
            return Err(err("an op that runs regions cannot be planned".into()));
        }
        infer(op, args, Some(result)).map_err(err)?;
        if !result.is_addressable() {
            return Err(InterpError::OutOfMemory {
                ty: result.clone(),
                bytes: usize::MAX,
            });
        }
        let dot = match (op, args) {
            (Op::DotGeneral(d), [a, b]) if matches!(a.dtype, DType::F32 | DType::F64) => {
                Some(dot::DotPlan::new(&a.shape, &b.shape, d))
            }
            _ => None,
        };
        Ok(PlannedOp {
            op: op.clone(),
            args: args.iter().map(|&t| t.clone()).collect(),
            result: result.clone(),
            dot,
        })
    }

    /// Runs a planned op on `args`, which must have the planned types (an error naming the
    /// operand otherwise); the same result as [`Interpreter::eval`] of the op.
    pub fn run_planned(&self, p: &PlannedOp, args: &[&Tensor]) -> Result<Tensor, InterpError> {
        let err = |message: String| InterpError::Op {
            op: p.op.name(),
            message,
        };
        check_operands(p, args).map_err(err)?;
        let result = &p.result;
        let bytes = result.num_elements() * result.dtype.size_bytes();
        hw::check_allocation(bytes).map_err(|bytes| InterpError::OutOfMemory {
            ty: result.clone(),
            bytes,
        })?;
        let compute = || match &p.dot {
            Some(d) => d.run(args[0], args[1]),
            None => eval_checked(&p.op, args, result),
        };
        let buffer = if runs_inline(&p.op, args, result) {
            compute()
        } else {
            self.pool.install(compute)
        }
        .map_err(err)?;
        Tensor::new(result.shape.clone(), buffer).map_err(|e| err(e.to_string()))
    }

    /// [`Interpreter::run_planned`] with the result written into `out`: in place, without
    /// an allocation, for a matrix product whose `out` already has the planned result type
    /// (the product of an earlier run, as a loop body's cluster reuses it); any other op, or
    /// an `out` of another type, gets a new tensor. The bits are `run_planned`'s.
    pub fn run_planned_into(
        &self,
        p: &PlannedOp,
        args: &[&Tensor],
        out: &mut Tensor,
    ) -> Result<(), InterpError> {
        let result = &p.result;
        let reusable =
            out.dtype() == result.dtype && kiln_ir::same_shape(out.shape(), &result.shape);
        let Some(d) = p.dot.as_ref().filter(|_| reusable) else {
            *out = self.run_planned(p, args)?;
            return Ok(());
        };
        let err = |message: String| InterpError::Op {
            op: p.op.name(),
            message,
        };
        check_operands(p, args).map_err(err)?;
        let buffer = out.data_mut();
        let mut compute = || d.run_into(args[0], args[1], buffer);
        if runs_inline(&p.op, args, result) {
            compute()
        } else {
            self.pool.install(compute)
        }
        .map_err(err)
    }
}

/// Checks that `args` have the types `p` was planned for.
fn check_operands(p: &PlannedOp, args: &[&Tensor]) -> Result<(), String> {
    if args.len() != p.args.len() {
        return Err(format!(
            "planned for {} operands, got {}",
            p.args.len(),
            args.len()
        ));
    }
    for (i, (a, want)) in args.iter().zip(&p.args).enumerate() {
        if a.dtype() != want.dtype || !kiln_ir::same_shape(a.shape(), &want.shape) {
            return Err(format!("operand {i} was planned as {want}, got {}", a.ty()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::{Buffer, DotDims};
    use kiln_testkit::{random_tensor, Rng};

    fn dims(lhs_contract: Vec<usize>, rhs_contract: Vec<usize>) -> DotDims {
        DotDims {
            lhs_batch: vec![],
            rhs_batch: vec![],
            lhs_contract,
            rhs_contract,
        }
    }

    /// A planned product gives `eval`'s bits: row-major and transposed operands (in place
    /// and gathered layouts), small and library-sized, f32 and f64.
    #[test]
    fn planned_products_equal_eval_bit_for_bit() {
        let interp = Interpreter::new(2).unwrap();
        let mut rng = Rng(38);
        for dtype in [DType::F32, DType::F64] {
            for (m, k, n) in [
                (2, 6, 18),
                (8, 64, 32),
                (8, 32, 10),
                (5, 300, 7),
                (70, 90, 80),
            ] {
                for (lc, rc, ls, rs) in [
                    (1, 0, vec![m, k], vec![k, n]),
                    (0, 1, vec![k, m], vec![n, k]),
                ] {
                    let a = random_tensor(&TensorType::new(dtype, ls), &mut rng);
                    let b = random_tensor(&TensorType::new(dtype, rs), &mut rng);
                    let op = Op::DotGeneral(dims(vec![lc], vec![rc]));
                    let ty = TensorType::new(dtype, vec![m, n]);
                    let want = interp.eval(&op, &[&a, &b], &ty).unwrap();
                    let plan = interp.plan(&op, &[&a.ty(), &b.ty()], &ty).unwrap();
                    for _ in 0..2 {
                        let got = interp.run_planned(&plan, &[&a, &b]).unwrap();
                        assert!(got.bit_eq(&want), "{dtype} {m}x{k}x{n} contract {lc},{rc}");
                    }
                    // Into a reused buffer of other values (NaN), and into one of another
                    // shape (replaced): the same bits.
                    let nan = match dtype {
                        DType::F32 => kiln_ir::Scalar::F32(f32::NAN),
                        _ => kiln_ir::Scalar::F64(f64::NAN),
                    };
                    let mut out = Tensor::new(vec![m, n], Buffer::splat(nan, m * n)).unwrap();
                    let mut wrong = Tensor::zeros(&TensorType::new(dtype, vec![n, m + 1]));
                    for o in [&mut out, &mut wrong] {
                        interp.run_planned_into(&plan, &[&a, &b], o).unwrap();
                        assert!(o.bit_eq(&want), "into: {dtype} {m}x{k}x{n} {lc},{rc}");
                    }
                }
            }
        }
    }

    /// `run_planned_into` refuses operands of other types as `run_planned` does, and
    /// an op that is not a product is computed as a new tensor.
    #[test]
    fn run_planned_into_checks_operands_and_runs_other_ops() {
        let interp = Interpreter::new(1).unwrap();
        let a = Tensor::from_f32([2, 3], vec![1.0, -2.0, 0.5, 3.0, -0.0, 4.0]).unwrap();
        let op = Op::DotGeneral(dims(vec![1], vec![0]));
        let ty = TensorType::new(DType::F32, vec![2, 2]);
        let b = Tensor::from_f32([3, 2], vec![1.0; 6]).unwrap();
        let plan = interp.plan(&op, &[&a.ty(), &b.ty()], &ty).unwrap();
        let mut out = Tensor::zeros(&ty);
        let e = interp.run_planned_into(&plan, &[&a, &a], &mut out);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("operand 1 was planned as f32[3,2]"));
        let tanh = Op::Unary(kiln_ir::UnaryOp::Tanh);
        let plan = interp.plan(&tanh, &[&a.ty()], &a.ty()).unwrap();
        let want = interp.eval(&tanh, &[&a], &a.ty()).unwrap();
        interp.run_planned_into(&plan, &[&a], &mut out).unwrap();
        assert!(out.bit_eq(&want));
    }

    #[test]
    fn other_ops_run_planned_too() {
        let interp = Interpreter::new(1).unwrap();
        let x = Tensor::from_f32([3], vec![0.5, -2.0, f32::NAN]).unwrap();
        let op = Op::Unary(kiln_ir::UnaryOp::Tanh);
        let plan = interp.plan(&op, &[&x.ty()], &x.ty()).unwrap();
        let want = interp.eval(&op, &[&x], &x.ty()).unwrap();
        assert!(interp.run_planned(&plan, &[&x]).unwrap().bit_eq(&want));
        assert_eq!(plan.op(), &op);
        assert_eq!(plan.result(), &x.ty());
    }

    #[test]
    fn bad_plans_and_operands_are_errors() {
        let interp = Interpreter::new(1).unwrap();
        let f32_2x3 = TensorType::new(DType::F32, vec![2, 3]);
        let f32_3x4 = TensorType::new(DType::F32, vec![3, 4]);
        let op = Op::DotGeneral(dims(vec![1], vec![0]));
        // Ill-typed: the contracted extents differ.
        let e = interp
            .plan(
                &op,
                &[&f32_2x3, &f32_2x3],
                &TensorType::new(DType::F32, vec![2, 3]),
            )
            .unwrap_err();
        assert!(e.to_string().contains("dot_general"), "{e}");
        let plan = interp
            .plan(
                &op,
                &[&f32_2x3, &f32_3x4],
                &TensorType::new(DType::F32, vec![2, 4]),
            )
            .unwrap();
        let a = Tensor::zeros(&f32_2x3);
        let wrong = Tensor::new(vec![3, 4], Buffer::F64(vec![0.0; 12].into())).unwrap();
        let e = interp.run_planned(&plan, &[&a, &wrong]).unwrap_err();
        assert!(
            e.to_string().contains("operand 1 was planned as f32[3,4]"),
            "{e}"
        );
        let e = interp.run_planned(&plan, &[&a]).unwrap_err();
        assert!(
            e.to_string().contains("planned for 2 operands, got 1"),
            "{e}"
        );
    }
}
