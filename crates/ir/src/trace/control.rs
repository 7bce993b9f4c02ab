//! Tracer methods of control flow (`lax.while_loop`, `lax.cond`, `lax.switch`): each region
//! is traced as a function of its own over fresh parameters, then recorded as one
//! instruction of several results. Unlike Rust control flow, which runs once at trace time,
//! these stay in the graph and run as often as the data says.

use super::{trace, TraceError, Tracer};
use crate::control::{Conditional, While};
use crate::dtype::TensorType;
use crate::func::Func;
use crate::op::Op;
use std::rc::Rc;

/// One branch of [`Tracer::switch`]: the traced closure over the branch's operands.
pub type Branch<'a> = Box<dyn FnOnce(&[Tracer]) -> Vec<Tracer> + 'a>;

impl Tracer {
    /// `lax.while_loop(cond, body, init)`: carries `init` (this value first, then `rest`)
    /// while `cond` of the carried values is true, `body` giving their next values (same
    /// types, same order); returns the final values. A closure must use only the values it
    /// is given (a region reads nothing else); a value from outside is carried instead.
    pub fn while_loop(
        &self,
        rest: &[&Tracer],
        cond: impl FnOnce(&[Tracer]) -> Tracer,
        body: impl FnOnce(&[Tracer]) -> Vec<Tracer>,
    ) -> Vec<Tracer> {
        let mut init = vec![self];
        init.extend_from_slice(rest);
        let Some(types) = self.types_of(&init) else {
            return vec![self.poisoned(); init.len()];
        };
        let regions =
            trace("cond", &types, cond).and_then(|c| Ok((c, trace("body", &types, body)?)));
        match regions {
            Ok((cond, body)) => {
                self.record_control(Op::While(Box::new(While { cond, body })), &init)
            }
            Err(e) => vec![self.region_failed("while", e); init.len()],
        }
    }

    /// `lax.cond(self, on_true, on_false, *operands)`: `self` is a `bool[]` predicate; the
    /// branch it selects runs on `operands` and its values are returned. Both branches
    /// must return values of the same types.
    pub fn cond(
        &self,
        operands: &[&Tracer],
        on_true: impl FnOnce(&[Tracer]) -> Vec<Tracer>,
        on_false: impl FnOnce(&[Tracer]) -> Vec<Tracer>,
    ) -> Vec<Tracer> {
        let branches: Vec<Branch<'_>> = vec![Box::new(on_true), Box::new(on_false)];
        self.switch(operands, branches)
    }

    /// `lax.switch(self, branches, *operands)` without JAX's clamp: `self` is an `i32[]`
    /// index (an index out of range runs the last branch, XLA's rule) or a `bool[]`
    /// predicate over two branches (true runs the first). Every branch gets `operands`.
    pub fn switch(&self, operands: &[&Tracer], branches: Vec<Branch<'_>>) -> Vec<Tracer> {
        let Some(types) = self.types_of(operands) else {
            return vec![self.poisoned()];
        };
        let traced: Result<Vec<Func>, TraceError> = branches
            .into_iter()
            .map(|b| trace("branch", &types, b))
            .collect();
        let branches = match traced {
            Ok(b) => b,
            Err(e) => return vec![self.region_failed("conditional", e)],
        };
        let n = branches.len();
        let mut args = vec![self];
        for _ in 0..n {
            args.extend_from_slice(operands);
        }
        self.record_control(Op::Conditional(Box::new(Conditional { branches })), &args)
    }

    /// The types of `values`, or `None` if one is poisoned or from another trace (the
    /// error is recorded).
    fn types_of(&self, values: &[&Tracer]) -> Option<Vec<TensorType>> {
        let mut types = Vec::with_capacity(values.len());
        for v in values {
            if !Rc::ptr_eq(&v.rec, &self.rec) {
                self.fail("control flow", "operands come from different traces".into());
                return None;
            }
            types.push(v.value.as_ref()?.1.clone());
        }
        Some(types)
    }

    /// A region's own trace failed: the error, named by the op, poisons this trace.
    fn region_failed(&self, op: &str, e: TraceError) -> Tracer {
        self.fail(op, format!("in a region: {e}"))
    }

    /// Records a `while` or `conditional` over `args` (typed by [`Self::types_of`]).
    fn record_control(&self, op: Op, args: &[&Tracer]) -> Vec<Tracer> {
        let name = op.name();
        let Some(types) = self.types_of(args) else {
            return vec![self.poisoned()];
        };
        let refs: Vec<&TensorType> = types.iter().collect();
        let results = match op.control_results(&refs) {
            Some(Ok(r)) => r,
            Some(Err(e)) => return vec![self.fail(name, e)],
            None => return vec![self.fail(name, "not a control-flow op".into())],
        };
        let vals = args
            .iter()
            .filter_map(|a| a.value.as_ref().map(|v| v.0))
            .collect();
        let mut rec = self.rec.borrow_mut();
        let scope = rec.scope;
        let vs = rec.func.push_multi(op, vals, results.clone(), &[], None);
        rec.func.insts.last_mut().expect("just pushed").scope = scope;
        drop(rec);
        vs.into_iter()
            .zip(results)
            .map(|(v, ty)| Tracer {
                rec: self.rec.clone(),
                value: Some((v, ty)),
            })
            .collect()
    }
}
