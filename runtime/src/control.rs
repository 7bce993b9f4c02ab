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
    /// Runs the `while` or `conditional` `inst` on its operands; `regions` are its regions'
    /// plans ([`Plan::regions`]).
    pub(crate) fn run_control(
        &self,
        inst: &Inst,
        regions: &[Plan],
        operands: &[&Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        match (&inst.op, regions) {
            (Op::While(w), [cond, body]) => {
                // `None` until the body first runs: the operands are read in place. From
                // then on the carried values are the loop's own and go to the body by
                // value, so it updates them in place and passes the unchanged ones
                // through without copies.
                let mut carried: Option<Vec<Tensor>> = None;
                loop {
                    // A condition of integer and boolean scalar ops is evaluated on the
                    // carried scalars directly (the interpreter's results); any other runs
                    // as a region.
                    let scalar = cond.scalar_cond.as_ref().and_then(|s| {
                        s.eval(|i| match &carried {
                            Some(c) => c.get(i),
                            None => operands.get(i).copied(),
                        })
                    });
                    let go = match scalar {
                        Some(go) => go,
                        None => {
                            let args: Vec<Arg> = match &carried {
                                Some(c) => c.iter().map(Arg::Host).collect(),
                                None => operands.iter().map(|&t| Arg::Host(t)).collect(),
                            };
                            is_true(&self.run_region(&w.cond, cond, args)?)?
                        }
                    };
                    if !go {
                        break;
                    }
                    let args = match carried.take() {
                        Some(c) => c.into_iter().map(Arg::Owned).collect(),
                        None => operands.iter().map(|&t| Arg::Host(t)).collect(),
                    };
                    carried = Some(self.run_region(&w.body, body, args)?);
                }
                Ok(carried.unwrap_or_else(|| operands.iter().map(|&t| t.clone()).collect()))
            }
            (Op::Conditional(c), branches) => {
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
                let (g, plan) = (c.branches.get(k), branches.get(k));
                let (Some(g), Some(plan)) = (g, plan) else {
                    return Err(invalid("conditional", "a branch has no plan"));
                };
                let args = args.iter().map(|&t| Arg::Host(t)).collect();
                self.run_region(g, plan, args)
            }
            (other, _) => Err(invalid(other.name(), "is not planned as a control-flow op")),
        }
    }

    /// One run of region `g` (planned as `plan`) on host values; its results on the host.
    fn run_region(
        &self,
        g: &Func,
        plan: &Plan,
        args: Vec<Arg<'_>>,
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let results = self.execute_planned(g, plan, args, false)?;
        // Sized once (a collected `Result` grows by reallocation).
        let mut on_host = Vec::with_capacity(results.len());
        for p in results {
            match p {
                Placed::Host(t) => on_host.push(t),
                Placed::Device(_) => {
                    return Err(invalid(&g.name, "a region left a result on the device"))
                }
            }
        }
        Ok(on_host)
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

#[cfg(test)]
mod tests {
    use crate::executor::{Runtime, RuntimeOptions};
    use kiln_ir::{parse_func, Tensor};

    /// A scan: step `i` writes `x[i]·x[i] + h` into row `i` of the carried sequence `%ys`
    /// (dynamic_update_slice of a carried value, in place from the second iteration on) and
    /// passes `%x` through unchanged.
    const SCAN: &str = "func @scan(%x: f32[5,3], %ys: f32[5,3]) -> (f32[5,3], f32[5,3], i32[]) {
  %zero = constant 0 : i32[]
  %h0 = constant 0.5 : f32[1,3]
  %i, %h, %xs, %out = while %zero, %h0, %x, %ys -> (i32[], f32[1,3], f32[5,3], f32[5,3])
    cond(%i: i32[], %h: f32[1,3], %xs: f32[5,3], %out: f32[5,3]) {
      %n = constant 5 : i32[]
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %h: f32[1,3], %xs: f32[5,3], %out: f32[5,3]) {
      %c0 = constant 0 : i32[]
      %row = dynamic_slice %xs, %i, %c0, sizes=[1, 3] : f32[1,3]
      %t = mul %row, %row : f32[1,3]
      %h1 = add %t, %h : f32[1,3]
      %out1 = dynamic_update_slice %out, %h1, %i, %c0 : f32[5,3]
      %one = constant 1 : i32[]
      %i1 = add %i, %one : i32[]
      yield %i1, %h1, %xs, %out1
    }
  return %out, %xs, %i
}
";

    fn runtime() -> Runtime {
        let opts = RuntimeOptions {
            policy: crate::policy::PolicyConfig::default(),
            threads: 1,
            async_workers: 1,
            persistent: None,
            flags: kiln_flags::Flags::default(),
        };
        Runtime::new(None, opts).unwrap()
    }

    /// The loop's results equal the interpreter's (the reference, which copies on every
    /// update) bit for bit, and the caller's tensors are never written: the first iteration
    /// reads them in place, so only the loop's own copies are updated in place.
    #[test]
    fn a_scan_updates_its_carried_sequence_in_place_with_the_reference_bits() {
        let f = parse_func(SCAN, "scan.kir").unwrap();
        let x: Vec<f32> = (0..15).map(|i| i as f32 * 0.37 - 2.0).collect();
        let x = Tensor::from_f32([5, 3], x).unwrap();
        let ys = Tensor::from_f32([5, 3], vec![-0.0; 15]).unwrap();
        let (x0, ys0) = (x.clone(), ys.clone());
        let want = kiln_interp::Interpreter::new(1)
            .unwrap()
            .run(&f, &[x.clone(), ys.clone()])
            .unwrap();
        let rt = runtime();
        for call in 0..3 {
            let got = rt.run(&f, &[x.clone(), ys.clone()]).unwrap();
            assert_eq!(got.len(), want.len());
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.bit_eq(w), "call {call}, result {k}: {g:?} vs {w:?}");
            }
            let borrowed = rt.run_refs(&f, &[&x, &ys]).unwrap();
            assert!(
                borrowed[0].bit_eq(&want[0]),
                "call {call}, borrowed arguments"
            );
            assert!(
                x.bit_eq(&x0) && ys.bit_eq(&ys0),
                "the caller's tensors changed"
            );
        }
        // Row i is x[i]·x[i] plus the previous row (0.5 before the first).
        let (out, xv) = (want[0].as_f32().unwrap(), x0.as_f32().unwrap());
        let mut h = [0.5f32; 3];
        for i in 0..5 {
            for j in 0..3 {
                h[j] += xv[i * 3 + j] * xv[i * 3 + j];
                assert_eq!(
                    out[i * 3 + j].to_bits(),
                    h[j].to_bits(),
                    "row {i}, column {j}"
                );
            }
        }
    }

    /// A loop whose body holds a conditional, planned once ([`Runtime::plan_func`]): the
    /// loop's regions and the branches inside its body are planned with the function, and
    /// every call gives the interpreter's bits.
    #[test]
    fn a_planned_loop_with_a_conditional_in_its_body_runs_as_the_reference() {
        let src = "func @alt(%x: f32[4]) -> (f32[4], i32[]) {
  %zero = constant 0 : i32[]
  %i, %y = while %zero, %x -> (i32[], f32[4])
    cond(%ci: i32[], %cy: f32[4]) {
      %n = constant 5 : i32[]
      %go = compare %ci, %n, dir=lt : bool[]
      yield %go
    }
    body(%bi: i32[], %by: f32[4]) {
      %two = constant 2 : i32[]
      %k = rem %bi, %two : i32[]
      %z = conditional %k, %by, %by -> f32[4]
        branch(%a: f32[4]) {
          %t = tanh %a : f32[4]
          yield %t
        }
        branch(%a: f32[4]) {
          %s = sin %a : f32[4]
          yield %s
        }
      %one = constant 1 : i32[]
      %i1 = add %bi, %one : i32[]
      yield %i1, %z
    }
  return %y, %i
}
";
        let f = std::sync::Arc::new(parse_func(src, "alt.kir").unwrap());
        let x = Tensor::from_f32([4], vec![0.5, -1.75, 3.0, f32::NAN]).unwrap();
        let want = kiln_interp::Interpreter::new(1)
            .unwrap()
            .run(&f, std::slice::from_ref(&x))
            .unwrap();
        let rt = runtime();
        let p = rt.plan_func(f.clone());
        let w = f
            .insts
            .iter()
            .position(|i| matches!(i.op, kiln_ir::Op::While(_)));
        let regions = &p.plan.regions[w.unwrap()];
        assert_eq!(regions.len(), 2, "the loop's cond and body are planned");
        // `i < 5`: evaluated on the carried counter, not run as a region.
        assert!(regions[0].scalar_cond.is_some(), "a scalar condition");
        assert!(regions[1].scalar_cond.is_none());
        let branches = regions[1].regions.iter().map(Vec::len).max();
        assert_eq!(branches, Some(2), "the body's conditional is planned");
        for call in 0..3 {
            let got = rt.run_planned(&p, &[&x]).unwrap();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.bit_eq(w), "call {call}, result {k}: {g:?} vs {w:?}");
            }
        }
    }

    /// A loop whose condition is false at once returns its operands unchanged.
    #[test]
    fn a_loop_that_never_runs_returns_its_operands() {
        let src = SCAN.replace("%n = constant 5", "%n = constant 0");
        let f = parse_func(&src, "scan0.kir").unwrap();
        let x = Tensor::from_f32([5, 3], vec![1.5; 15]).unwrap();
        let ys = Tensor::from_f32([5, 3], vec![-0.0; 15]).unwrap();
        let got = runtime().run(&f, &[x.clone(), ys.clone()]).unwrap();
        assert!(got[0].bit_eq(&ys) && got[1].bit_eq(&x));
    }
}
