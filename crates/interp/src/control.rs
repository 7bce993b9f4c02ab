//! `while` and `conditional`: each region runs as a function of its own through
//! [`Interpreter::run_refs`], so its instructions get the same semantics, the same freeing
//! of intermediates and the same errors as a top-level function.
//!
//! Determinism: the regions run one after another in the order the loop or the selector
//! dictates; nothing here depends on the thread count (each op inside parallelises as it
//! always does, with results independent of it). No bound on the number of iterations is
//! imposed, as XLA imposes none.

use crate::{InterpError, Interpreter};
use kiln_ir::{Conditional, Op, Scalar, Tensor, TensorType, While};

impl Interpreter {
    /// Evaluates an op with any number of results: a `while`, a `conditional` or a cluster
    /// runs its regions; any other op is one [`Interpreter::eval`] with the one type of
    /// `results`. The operand types and `results` are checked against the op's typing rule
    /// first, so an ill-typed call is an error, never a panic.
    pub fn eval_all(
        &self,
        op: &Op,
        args: &[&Tensor],
        results: &[TensorType],
    ) -> Result<Vec<Tensor>, InterpError> {
        let err = |message: String| InterpError::Op {
            op: op.name(),
            message,
        };
        if let (false, [ty]) = (
            matches!(op, Op::While(_) | Op::Conditional(_) | Op::Cluster(_)),
            results,
        ) {
            // One [`Interpreter::eval`], which checks the types itself.
            return Ok(vec![self.eval(op, args, ty)?]);
        }
        let types: Vec<TensorType> = args.iter().map(|t| t.ty()).collect();
        let type_refs: Vec<&TensorType> = types.iter().collect();
        match op {
            Op::While(_) | Op::Conditional(_) => {
                let expected = match op.control_results(&type_refs) {
                    Some(r) => r.map_err(err)?,
                    None => return Err(err("not a control-flow op".into())),
                };
                if expected != results {
                    return Err(err(format!(
                        "produces {} results of other types than the {} asked for",
                        expected.len(),
                        results.len()
                    )));
                }
                match op {
                    Op::While(w) => self.run_while(w, args),
                    Op::Conditional(c) => self.run_conditional(c, args),
                    _ => Err(err("not a control-flow op".into())),
                }
            }
            Op::Cluster(c) => {
                kiln_ir::typecheck::cluster_operands(c, &type_refs).map_err(err)?;
                if c.body.result_types() != results {
                    return Err(err(format!(
                        "@{} yields other types than asked for",
                        c.name
                    )));
                }
                Ok(self.run_refs(&c.body, args)?.0)
            }
            _ => match results {
                [ty] => Ok(vec![self.eval(op, args, ty)?]),
                _ => Err(err(format!("has one result, not {}", results.len()))),
            },
        }
    }

    /// Runs `body` while `cond` yields true; the carried values start as `args`.
    fn run_while(&self, w: &While, args: &[&Tensor]) -> Result<Vec<Tensor>, InterpError> {
        // `None` until the body first runs: the operands are read in place, not copied.
        let mut carried: Option<Vec<Tensor>> = None;
        loop {
            let next = {
                let refs: Vec<&Tensor> = match &carried {
                    Some(c) => c.iter().collect(),
                    None => args.to_vec(),
                };
                let (go, _) = self.run_refs(&w.cond, &refs)?;
                if !is_true(&go)? {
                    break;
                }
                self.run_refs(&w.body, &refs)?.0
            };
            carried = Some(next);
        }
        Ok(carried.unwrap_or_else(|| args.iter().map(|&t| t.clone()).collect()))
    }

    /// Runs the branch the first operand selects on its share of the other operands.
    fn run_conditional(
        &self,
        c: &Conditional,
        args: &[&Tensor],
    ) -> Result<Vec<Tensor>, InterpError> {
        let selector = args
            .first()
            .filter(|t| t.num_elements() == 1)
            .map(|t| t.data().get(0))
            .ok_or_else(|| op_error("the selector is not a scalar"))?;
        let k = c.branch_index(selector);
        let range = c.operand_ranges()[k].clone();
        let operands = args
            .get(range)
            .ok_or_else(|| op_error("too few operands for the branches"))?;
        Ok(self.run_refs(&c.branches[k], operands)?.0)
    }
}

/// The one `bool` a `while`'s condition yields.
fn is_true(go: &[Tensor]) -> Result<bool, InterpError> {
    match go {
        [t] if t.num_elements() == 1 => match t.data().get(0) {
            Scalar::Bool(b) => Ok(b),
            other => Err(op_error(&format!("cond yields {other:?}, not a bool"))),
        },
        _ => Err(op_error("cond must yield one bool[]")),
    }
}

fn op_error(message: &str) -> InterpError {
    InterpError::Op {
        op: "while",
        message: message.to_string(),
    }
}
