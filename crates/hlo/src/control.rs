//! HLO `while` and `conditional` -> Kiln's `while` and `conditional`, whose regions are
//! the called computations converted into functions of their own. Tuples are flattened:
//! a loop carries the leaves of its operand (nested tuples included), a branch takes the
//! leaves of its operand, and `get-tuple-element` / `tuple` inside the regions vanish as they
//! do everywhere else. The results are put back into the instruction's tuple shape.
//!
//! - `while(init), condition=%c, body=%b`: `%c` and `%b` take `init`'s shape; `%c` yields
//!   `pred[]`.
//! - `conditional(pred, t_op, f_op), true_computation=%t, false_computation=%f`: branch 0 is
//!   the true computation, as Kiln's `bool[]` predicate selects it.
//! - `conditional(index, op0, …), branch_computations={%b0, …}`: `s32[]` index; out of range
//!   runs the last branch (Kiln's rule, XLA's too).

use crate::ast::{Instruction, Shape};
use crate::attrs::AttrValue;
use crate::convert::{invalid, Ctx, Lowered, Problem, Tree};
use crate::error::ErrorKind;
use kiln_ir::{Conditional, DType, Func, Loc, Op, TensorType, Value, While};

impl Ctx<'_> {
    /// `while(init), condition=…, body=…`.
    pub(crate) fn while_loop(&mut self, inst: &Instruction, args: Vec<Tree>) -> Lowered {
        let [init] = &args[..] else {
            return Err(invalid(
                inst.opcode_pos,
                format!("'while' takes 1 operand, %{} has {}", inst.name, args.len()),
            ));
        };
        let cond = self.one_computation(inst, "condition")?;
        let body = self.one_computation(inst, "body")?;
        let cond = self.region(inst, &cond, "cond", std::slice::from_ref(init))?;
        let body = self.region(inst, &body, "body", std::slice::from_ref(init))?;
        let mut carried = Vec::new();
        init.leaves(&mut carried);
        let types = carried.iter().map(|&v| self.f.ty(v).clone()).collect();
        let op = Op::While(Box::new(While { cond, body }));
        let results = self.emit_multi(inst, op, carried, types);
        self.rebuild(inst, &results)
    }

    /// `conditional(selector, operands…)` with `true_computation`/`false_computation` or
    /// `branch_computations`.
    pub(crate) fn conditional(&mut self, inst: &Instruction, args: Vec<Tree>) -> Lowered {
        let names = match (
            inst.attr("branch_computations"),
            inst.attr("true_computation"),
            inst.attr("false_computation"),
        ) {
            (Some(a), None, None) => match &a.value {
                AttrValue::Computations(c) if !c.is_empty() => c.clone(),
                _ => {
                    return Err(invalid(
                        a.pos,
                        format!(
                            "branch_computations of %{} must name computations",
                            inst.name
                        ),
                    ))
                }
            },
            (None, Some(_), Some(_)) => vec![
                self.one_computation(inst, "true_computation")?,
                self.one_computation(inst, "false_computation")?,
            ],
            _ => {
                return Err(invalid(
                    inst.pos,
                    format!(
                        "conditional %{} needs branch_computations={{…}} or both \
                         true_computation= and false_computation=",
                        inst.name
                    ),
                ))
            }
        };
        let selector = self.leaf(inst, &args, 0)?;
        let want = match self.f.ty(selector).dtype {
            DType::Bool => 2,
            _ => names.len(),
        };
        if args.len() != names.len() + 1 || want != names.len() {
            return Err(invalid(
                inst.opcode_pos,
                format!(
                    "conditional %{} has {} branches and {} operands after the selector \
                     (one per branch; a pred selector has two branches)",
                    inst.name,
                    names.len(),
                    args.len() - 1
                ),
            ));
        }
        let mut branches = Vec::with_capacity(names.len());
        let mut operands = vec![selector];
        for (name, operand) in names.iter().zip(&args[1..]) {
            branches.push(self.region(inst, name, "branch", std::slice::from_ref(operand))?);
            operand.leaves(&mut operands);
        }
        let types = branches[0].result_types();
        let op = Op::Conditional(Box::new(Conditional { branches }));
        let results = self.emit_multi(inst, op, operands, types);
        self.rebuild(inst, &results)
    }

    /// The one computation attribute `attr` of `inst` names.
    fn one_computation(&self, inst: &Instruction, attr: &str) -> Result<String, Problem> {
        match inst.attr(attr).map(|a| &a.value) {
            Some(AttrValue::Computations(c)) if c.len() == 1 => Ok(c[0].clone()),
            _ => Err(invalid(
                inst.pos,
                format!(
                    "{} %{} needs {attr}=one computation",
                    inst.opcode, inst.name
                ),
            )),
        }
    }

    /// Computation `callee` as a region named `label`: one parameter per leaf of `like`
    /// (values of the enclosing function, whose types the parameters take), yielding the
    /// leaves of its ROOT.
    fn region(
        &mut self,
        inst: &Instruction,
        callee: &str,
        label: &str,
        like: &[Tree],
    ) -> Result<Func, Problem> {
        let ci = self.callee(inst, callee)?;
        let comp = &self.m.computations[ci];
        let param_names: Vec<String> = (0..like.len())
            .map(|n| {
                comp.instructions
                    .iter()
                    .find(|i| matches!(i.operands, crate::ast::Operands::Parameter(k) if k == n as u64))
                    .map_or_else(|| format!("arg{n}"), |i| i.name.clone())
            })
            .collect();
        let outer = std::mem::replace(&mut self.f, Func::new(label));
        let outer_reciprocals = std::mem::take(&mut self.reciprocals);
        let params: Vec<Tree> = like
            .iter()
            .zip(&param_names)
            .map(|(t, name)| self.param_like(&outer, t, name))
            .collect();
        let root = self.computation(ci, params);
        let mut region = std::mem::replace(&mut self.f, outer);
        self.reciprocals = outer_reciprocals;
        match root {
            Some(t) => {
                let mut results = Vec::new();
                t.leaves(&mut results);
                region.results = results;
                Ok(region)
            }
            // The computation's problems are reported; this instruction is poisoned silently.
            None => Err(Problem {
                pos: inst.pos,
                kind: ErrorKind::Invalid,
                message: String::new(),
            }),
        }
    }

    /// Parameters of the region being built with the structure of `t` and the types its
    /// leaves have in `outer`.
    fn param_like(&mut self, outer: &Func, t: &Tree, name: &str) -> Tree {
        match t {
            Tree::Leaf(v) => {
                let name = self.fresh_name(name);
                Tree::Leaf(self.f.add_param(Some(&name), outer.ty(*v).clone()))
            }
            Tree::Tuple(items) => Tree::Tuple(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.param_like(outer, item, &format!("{name}.{i}")))
                    .collect(),
            ),
        }
    }

    /// Appends a Kiln instruction of several results for `inst`: named after it, with
    /// `.k` suffixes when there are several.
    fn emit_multi(
        &mut self,
        inst: &Instruction,
        op: Op,
        args: Vec<Value>,
        types: Vec<TensorType>,
    ) -> Vec<Value> {
        let names: Vec<String> = match types.len() {
            1 => vec![self.fresh_name(&inst.name)],
            n => (0..n)
                .map(|k| self.fresh_name(&format!("{}.{k}", inst.name)))
                .collect(),
        };
        let loc = Loc {
            line: inst.pos.line,
            col: inst.pos.col,
        };
        self.f.push_multi(op, args, types, &names, Some(loc))
    }

    /// The flat `results` put back into `inst`'s declared shape, checked against it.
    fn rebuild(&self, inst: &Instruction, results: &[Value]) -> Lowered {
        fn build(shape: &Shape, next: &mut std::slice::Iter<'_, Value>) -> Option<Tree> {
            match shape {
                Shape::Array(_) => next.next().map(|&v| Tree::Leaf(v)),
                Shape::Tuple(items) => items
                    .iter()
                    .map(|s| build(s, next))
                    .collect::<Option<Vec<_>>>()
                    .map(Tree::Tuple),
            }
        }
        let mut next = results.iter();
        match build(&inst.shape, &mut next) {
            Some(t) if next.next().is_none() => self.check_tree(inst, t),
            _ => Err(invalid(
                inst.pos,
                format!(
                    "%{} is declared {} but produces {} values",
                    inst.name,
                    inst.shape,
                    results.len()
                ),
            )),
        }
    }
}
