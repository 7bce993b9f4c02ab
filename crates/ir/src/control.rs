//! Control flow: `while` and `conditional`, the ops that hold regions of their own.
//!
//! A region is a [`Func`]: closed (it reads only its parameters, as XLA's computations do),
//! with its own value names, so passes, the verifier, the printer and the interpreter treat
//! it as a function. Loop-carried values and branch operands are flattened: where XLA passes
//! one tuple, Kiln passes its leaves. Both ops have as many results as values they carry or
//! yield; their typing rules are here, and [`crate::typecheck::infer`] dispatches to them.
//!
//! Deliberately not here: implicit capture of enclosing values (a region that needs a value
//! takes it as a parameter, as in XLA) and any bound on the number of iterations (XLA has
//! none either).

use crate::dtype::{DType, TensorType};
use crate::func::Func;
use crate::op::Op;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The regions of a `while`: `cond` maps the carried values to a `bool[]`, `body` maps them
/// to their next values. The loop's results are the carried values once `cond` is false.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct While {
    /// Carried values -> `bool[]`: whether to run `body` once more.
    pub cond: Func,
    /// Carried values -> carried values (same types, same order).
    pub body: Func,
}

/// The branches of a `conditional`. The first operand selects the branch: a `bool[]`
/// predicate with two branches (true runs branch 0, false branch 1, as XLA's
/// `true_computation` / `false_computation`), or an `i32[]` index with one or more branches
/// (an index out of range runs the last branch, as XLA does). The remaining operands are
/// handed out in order, each branch taking as many as it has parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conditional {
    /// The branches; all yield values of the same types.
    pub branches: Vec<Func>,
}

impl Conditional {
    /// The positions, among the instruction's operands, of each branch's operands (the
    /// selector is operand 0, so the first range starts at 1).
    pub fn operand_ranges(&self) -> Vec<Range<usize>> {
        let mut start = 1;
        self.branches
            .iter()
            .map(|b| {
                let r = start..start + b.params.len();
                start = r.end;
                r
            })
            .collect()
    }

    /// The branch a selector value runs: `true` is branch 0 and `false` branch 1; an index
    /// outside `0..n` runs the last branch (XLA's rule).
    pub fn branch_index(&self, selector: crate::Scalar) -> usize {
        // `last` is 0 for a conditional without branches, which the typing rule refuses.
        let n = self.branches.len();
        let last = n.saturating_sub(1);
        match selector {
            crate::Scalar::Bool(true) => 0,
            crate::Scalar::Bool(false) => 1,
            crate::Scalar::I32(i) => usize::try_from(i).ok().filter(|&i| i < n).unwrap_or(last),
            _ => last,
        }
    }
}

impl Op {
    /// The regions the op holds, in text order: a cluster's body, a `while`'s condition and
    /// body, a `conditional`'s branches; none for every other op.
    pub fn regions(&self) -> Vec<&Func> {
        match self {
            Op::Cluster(c) => vec![&c.body],
            Op::While(w) => vec![&w.cond, &w.body],
            Op::Conditional(c) => c.branches.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// [`Op::regions`], mutably (for passes that rewrite inside regions).
    pub fn regions_mut(&mut self) -> Vec<&mut Func> {
        match self {
            Op::Cluster(c) => vec![&mut c.body],
            Op::While(w) => vec![&mut w.cond, &mut w.body],
            Op::Conditional(c) => c.branches.iter_mut().collect(),
            _ => Vec::new(),
        }
    }

    /// The result types of a control-flow op (`while`, `conditional`) applied to operands of
    /// types `args`, or what is wrong; `None` for every other op.
    pub fn control_results(&self, args: &[&TensorType]) -> Option<Result<Vec<TensorType>, String>> {
        match self {
            Op::While(w) => Some(while_results(w, args)),
            Op::Conditional(c) => Some(conditional_results(c, args)),
            _ => None,
        }
    }
}

/// What the op's one result is, for [`crate::typecheck::infer`] (whose callers type one
/// result; the verifier checks every result of a multi-result op through
/// [`Op::control_results`]).
pub(crate) fn one_result(op: &Op, args: &[&TensorType]) -> Result<TensorType, String> {
    match op.control_results(args) {
        Some(Ok(types)) => match &types[..] {
            [one] => Ok(one.clone()),
            many => Err(format!("has {} results, not one", many.len())),
        },
        Some(Err(e)) => Err(e),
        None => Err(format!("'{}' is not a control-flow op", op.name())),
    }
}

/// `while %a, … cond(…) {…} body(…) {…}`: `cond` takes the carried types and yields one
/// `bool[]`; `body` takes and yields the carried types; the results are the carried types.
fn while_results(w: &While, args: &[&TensorType]) -> Result<Vec<TensorType>, String> {
    if args.is_empty() {
        return Err("carries no value (a loop needs at least one operand)".into());
    }
    let carried: Vec<TensorType> = args.iter().map(|&t| t.clone()).collect();
    params_match("cond", &w.cond, args)?;
    params_match("body", &w.body, args)?;
    let cond = w.cond.result_types();
    if cond != [TensorType::scalar(DType::Bool)] {
        return Err(format!(
            "cond must yield one bool[], it yields ({})",
            show(&cond)
        ));
    }
    let next = w.body.result_types();
    if next != carried {
        return Err(format!(
            "body must yield the carried types ({}), it yields ({})",
            show(&carried),
            show(&next)
        ));
    }
    Ok(carried)
}

/// `conditional %sel, %a, … branch(…) {…} …`: `%sel` is `bool[]` (two branches) or `i32[]`
/// (one or more); each branch's parameters match its share of the operands; every branch
/// yields the same types, which are the results.
fn conditional_results(c: &Conditional, args: &[&TensorType]) -> Result<Vec<TensorType>, String> {
    let Some((sel, operands)) = args.split_first() else {
        return Err("needs a predicate or branch index operand".into());
    };
    let n = c.branches.len();
    match (sel.dtype, sel.rank()) {
        (DType::Bool, 0) if n == 2 => {}
        (DType::Bool, 0) => {
            return Err(format!(
                "a bool[] predicate selects between 2 branches, there are {n}"
            ))
        }
        (DType::I32, 0) if n >= 1 => {}
        (DType::I32, 0) => return Err("an i32[] index needs at least one branch".into()),
        _ => {
            return Err(format!(
                "the selector must be a bool[] predicate or an i32[] index, got {sel}"
            ))
        }
    }
    let wanted: usize = c.branches.iter().map(|b| b.params.len()).sum();
    if wanted != operands.len() {
        return Err(format!(
            "the branches take {wanted} operands in all, there are {} after the selector",
            operands.len()
        ));
    }
    let mut results: Option<Vec<TensorType>> = None;
    for (k, (b, range)) in c.branches.iter().zip(c.operand_ranges()).enumerate() {
        params_match(&format!("branch {k}"), b, &args[range])?;
        let yields = b.result_types();
        match &results {
            None => results = Some(yields),
            Some(first) if *first != yields => {
                return Err(format!(
                    "branch {k} yields ({}) but branch 0 yields ({})",
                    show(&yields),
                    show(first)
                ))
            }
            Some(_) => {}
        }
    }
    let results = results.unwrap_or_default();
    if results.is_empty() {
        return Err("the branches yield nothing".into());
    }
    Ok(results)
}

/// An error unless region `what`'s parameter types are `args`.
fn params_match(what: &str, region: &Func, args: &[&TensorType]) -> Result<(), String> {
    let params = region.param_types();
    if params.len() != args.len() {
        return Err(format!(
            "{what} has {} parameters for {} operands",
            params.len(),
            args.len()
        ));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        if p != *a {
            return Err(format!(
                "{what}: operand {i} is {a} but the parameter is {p}"
            ));
        }
    }
    Ok(())
}

fn show(types: &[TensorType]) -> String {
    types
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;

    fn region(params: &[TensorType], yields: &[usize]) -> Func {
        let mut f = Func::new("r");
        let ps: Vec<_> = params
            .iter()
            .map(|t| f.add_param(None, t.clone()))
            .collect();
        f.results = yields.iter().map(|&i| ps[i]).collect();
        f
    }

    fn t(d: DType, s: &[usize]) -> TensorType {
        TensorType::new(d, s.to_vec())
    }

    #[test]
    fn an_index_out_of_range_runs_the_last_branch() {
        let c = Conditional {
            branches: vec![region(&[], &[]), region(&[], &[]), region(&[], &[])],
        };
        let picks: Vec<usize> = [-1, 0, 1, 2, 3, i32::MAX, i32::MIN]
            .into_iter()
            .map(|i| c.branch_index(Scalar::I32(i)))
            .collect();
        assert_eq!(picks, [2, 0, 1, 2, 2, 2, 2]);
        assert_eq!(c.branch_index(Scalar::Bool(true)), 0);
        assert_eq!(c.branch_index(Scalar::Bool(false)), 1);
    }

    #[test]
    fn operands_are_shared_out_by_parameter_count() {
        let f = t(DType::F32, &[2]);
        let c = Conditional {
            branches: vec![
                region(&[f.clone(), f.clone()], &[0]),
                region(&[], &[]),
                region(std::slice::from_ref(&f), &[0]),
            ],
        };
        assert_eq!(c.operand_ranges(), [1..3, 3..3, 3..4]);
    }

    #[test]
    fn a_cond_that_yields_no_bool_is_a_typing_error() {
        let i = t(DType::I32, &[]);
        let w = While {
            cond: region(std::slice::from_ref(&i), &[0]),
            body: region(std::slice::from_ref(&i), &[0]),
        };
        let e = while_results(&w, &[&i]).unwrap_err();
        assert_eq!(e, "cond must yield one bool[], it yields (i32[])");
    }
}
