//! `while` and `conditional` in the executor: their regions run through
//! [`Runtime::execute`] like any function, so the clusters that `mark_for_compilation`
//! formed inside a loop body or a branch go through the compile policy and the caches and
//! run compiled — compiled once, then reused on every iteration — and what is not clustered
//! runs on the interpreter op by op, as at the top level.
//!
//! Semantics are the interpreter's (`kiln_interp`'s control module, the reference): the
//! condition runs on the carried values and yields one `bool[]`; the body maps carried
//! values to carried values; a conditional's first operand selects the branch (a
//! predicate, or an index whose out-of-range values run the last branch) and the other
//! operands are handed out to the branches in order.
//!
//! Cluster ids inside a region carry the path to it, `graph/%w.body/cluster_0` (the
//! control op's first result, then `cond`, `body` or `branchK`), so two loops' clusters
//! never share a policy record even when their regions have the same name.

use crate::executor::Runtime;
use crate::plan::Plan;
use crate::values::{Arg, Placed};
use crate::RuntimeError;
use kiln_ir::{Func, Inst, Op, Scalar, Tensor};

impl Runtime {
    /// Runs the `while` or `conditional` `inst` of `f` (run under `scope`) on its operands.
    pub(crate) fn run_control(
        &self,
        scope: &str,
        f: &Func,
        inst: &Inst,
        operands: &[&Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let at = match inst.results.first() {
            Some(&r) => format!("{scope}/%{}", f.value(r).name),
            None => format!("{scope}/%?"),
        };
        match &inst.op {
            Op::While(w) => {
                // Planned once for every iteration: last uses, cluster ids and cache keys.
                let cond = self.plan(&format!("{at}.cond"), &w.cond);
                let body = self.plan(&format!("{at}.body"), &w.body);
                // `None` until the body first runs: the operands are read in place. From
                // then on the carried values are the loop's own and go to the body by
                // value, so it updates them in place and passes the unchanged ones
                // through without copies.
                let mut carried: Option<Vec<Tensor>> = None;
                loop {
                    let args: Vec<Arg> = match &carried {
                        Some(c) => c.iter().map(Arg::Host).collect(),
                        None => operands.iter().map(|&t| Arg::Host(t)).collect(),
                    };
                    let go = self.run_region(&w.cond, &cond, args)?;
                    if !is_true(&go)? {
                        break;
                    }
                    let args = match carried.take() {
                        Some(c) => c.into_iter().map(Arg::Owned).collect(),
                        None => operands.iter().map(|&t| Arg::Host(t)).collect(),
                    };
                    carried = Some(self.run_region(&w.body, &body, args)?);
                }
                Ok(carried.unwrap_or_else(|| operands.iter().map(|&t| t.clone()).collect()))
            }
            Op::Conditional(c) => {
                let selector = operands
                    .first()
                    .filter(|t| t.num_elements() == 1)
                    .map(|t| t.data().get(0))
                    .ok_or_else(|| invalid("conditional", "the selector is not a scalar"))?;
                let k = c.branch_index(selector);
                let range = c.operand_ranges()[k].clone();
                let args = operands
                    .get(range)
                    .ok_or_else(|| invalid("conditional", "too few operands for the branches"))?;
                let (g, scope) = (&c.branches[k], format!("{at}.branch{k}"));
                let args = args.iter().map(|&t| Arg::Host(t)).collect();
                self.run_region(g, &self.plan(&scope, g), args)
            }
            other => Err(invalid(other.name(), "is not a control-flow op")),
        }
    }

    /// One run of region `g` (planned as `plan`) on host values; its results on the host.
    fn run_region(
        &self,
        g: &Func,
        plan: &Plan,
        args: Vec<Arg<'_>>,
    ) -> Result<Vec<Tensor>, RuntimeError> {
        self.execute_planned(g, plan, args, false)?
            .into_iter()
            .map(|p| match p {
                Placed::Host(t) => Ok(t),
                Placed::Device(_) => Err(invalid(&g.name, "a region left a result on the device")),
            })
            .collect()
    }
}

/// The one `bool` a `while`'s condition yields.
fn is_true(go: &[Tensor]) -> Result<bool, RuntimeError> {
    match go {
        [t] if t.num_elements() == 1 => match t.data().get(0) {
            Scalar::Bool(b) => Ok(b),
            other => Err(invalid(
                "while",
                &format!("cond yields {other:?}, not a bool"),
            )),
        },
        _ => Err(invalid("while", "cond must yield one bool[]")),
    }
}

fn invalid(what: &str, message: &str) -> RuntimeError {
    RuntimeError::Invalid(format!("{what}: {message}"))
}
