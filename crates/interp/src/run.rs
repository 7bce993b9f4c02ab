//! [`Interpreter::run`]: a function's instructions in order, each intermediate freed right
//! after its last use, so memory stays bounded by the widest point of the program rather
//! than its length.
//!
//! Deliberately not here: reordering instructions to lower the peak, or computing in place.
//! The only buffer reuse is `reshape` of a dying value, which moves the buffer, and
//! `dynamic_update_slice` of one, which writes the update into it.

use crate::{InterpError, Interpreter};
use kiln_ir::{Func, Inst, Op, Tensor, TensorType};

/// When the executor may free a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastUse {
    /// No instruction reads it and it is not returned: freed as soon as it is defined.
    Unused,
    /// Last read by the instruction at this index: freed right after it runs.
    Inst(usize),
    /// Returned by the function: kept to the end.
    Returned,
}

/// The [`LastUse`] of every value of `f`, indexed by value number.
pub fn last_uses(f: &Func) -> Vec<LastUse> {
    let mut uses = vec![LastUse::Unused; f.num_values()];
    for (i, inst) in f.insts.iter().enumerate() {
        for a in &inst.args {
            if let Some(u) = uses.get_mut(a.0 as usize) {
                *u = LastUse::Inst(i);
            }
        }
    }
    for r in &f.results {
        if let Some(u) = uses.get_mut(r.0 as usize) {
            *u = LastUse::Returned;
        }
    }
    uses
}

/// Memory statistics of one [`Interpreter::run_with_stats`] call. Arguments are the
/// caller's and not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Most intermediate and result tensors alive at once.
    pub peak_live_values: usize,
    /// Most bytes of intermediate and result tensors alive at once.
    pub peak_live_bytes: usize,
}

/// A value held by the executor: a borrowed tensor (an argument, or a constant of the
/// function, read in place rather than copied per run) or a computed one.
enum Slot<'a> {
    Arg(&'a Tensor),
    Owned(Tensor),
}

impl Slot<'_> {
    fn tensor(&self) -> &Tensor {
        match self {
            Slot::Arg(t) => t,
            Slot::Owned(t) => t,
        }
    }
}

fn bytes(t: &Tensor) -> usize {
    t.num_elements() * t.dtype().size_bytes()
}

/// Live-set bookkeeping: the slots plus running and peak totals.
struct Live<'a> {
    slots: Vec<Option<Slot<'a>>>,
    stats: RunStats,
    values: usize,
    bytes: usize,
}

impl<'a> Live<'a> {
    fn insert(&mut self, v: usize, t: Tensor) {
        self.values += 1;
        self.bytes += bytes(&t);
        self.stats.peak_live_values = self.stats.peak_live_values.max(self.values);
        self.stats.peak_live_bytes = self.stats.peak_live_bytes.max(self.bytes);
        self.slots[v] = Some(Slot::Owned(t));
    }

    fn take(&mut self, v: usize) -> Option<Slot<'a>> {
        let slot = self.slots.get_mut(v)?.take()?;
        if let Slot::Owned(t) = &slot {
            self.values -= 1;
            self.bytes -= bytes(t);
        }
        Some(slot)
    }
}

impl Interpreter {
    /// Runs `f` on `args` and returns its results in order.
    ///
    /// Arguments are checked against the parameters (count, dtype and shape); errors name
    /// the parameter, the expected and the actual type. An op that fails names the value it
    /// was computing.
    pub fn run(&self, f: &Func, args: &[Tensor]) -> Result<Vec<Tensor>, InterpError> {
        self.run_with_stats(f, args).map(|(results, _)| results)
    }

    /// [`Interpreter::run`], also reporting how much memory the intermediates took at peak.
    pub fn run_with_stats(
        &self,
        f: &Func,
        args: &[Tensor],
    ) -> Result<(Vec<Tensor>, RunStats), InterpError> {
        let refs: Vec<&Tensor> = args.iter().collect();
        self.run_refs(f, &refs)
    }

    /// [`Interpreter::run_with_stats`] over borrowed arguments (also how cluster regions
    /// run, so their operands are not copied).
    pub fn run_refs<'a>(
        &self,
        f: &'a Func,
        args: &[&'a Tensor],
    ) -> Result<(Vec<Tensor>, RunStats), InterpError> {
        check_args(f, args)?;
        let uses = last_uses(f);
        let mut live = Live {
            slots: (0..f.num_values()).map(|_| None).collect(),
            stats: RunStats::default(),
            values: 0,
            bytes: 0,
        };
        for (&p, a) in f.params.iter().zip(args) {
            live.slots[p.0 as usize] = Some(Slot::Arg(a));
        }
        for (i, inst) in f.insts.iter().enumerate() {
            if let (Op::Constant(t), [r]) = (&inst.op, &inst.results[..]) {
                // Borrowed from the function: a frozen graph's weights are not copied per
                // run (and, like arguments, not counted as intermediates).
                live.slots[r.0 as usize] = Some(Slot::Arg(t));
                if uses[r.0 as usize] == LastUse::Unused {
                    live.take(r.0 as usize);
                }
                continue;
            }
            let name = inst.results.first().map(|&r| f.value(r).name.clone());
            let at = |e: InterpError| InterpError::At {
                func: f.name.clone(),
                value: name.clone().unwrap_or_default(),
                source: Box::new(e),
            };
            let outs = self.exec_inst(f, inst, i, &uses, &mut live).map_err(at)?;
            for (&r, t) in inst.results.iter().zip(outs) {
                live.insert(r.0 as usize, t);
            }
            for a in &inst.args {
                if uses[a.0 as usize] == LastUse::Inst(i) {
                    live.take(a.0 as usize);
                }
            }
            for r in &inst.results {
                if uses[r.0 as usize] == LastUse::Unused {
                    live.take(r.0 as usize);
                }
            }
        }
        let stats = live.stats;
        let mut results = Vec::with_capacity(f.results.len());
        for (k, r) in f.results.iter().enumerate() {
            let again = f.results[k + 1..].contains(r);
            let v = r.0 as usize;
            let t = if again {
                live.slots
                    .get(v)
                    .and_then(|s| s.as_ref())
                    .map(|s| s.tensor().clone())
            } else {
                live.take(v).map(|s| match s {
                    Slot::Owned(t) => t,
                    Slot::Arg(t) => t.clone(),
                })
            };
            let t = t.ok_or_else(|| op_error("return", "returned value is not defined"))?;
            results.push(t);
        }
        Ok((results, stats))
    }

    /// The results of instruction `i`: a cluster runs its region op by op (the fallback
    /// path), anything else is one [`Interpreter::eval`].
    fn exec_inst(
        &self,
        f: &Func,
        inst: &Inst,
        i: usize,
        uses: &[LastUse],
        live: &mut Live<'_>,
    ) -> Result<Vec<Tensor>, InterpError> {
        if let Op::Cluster(c) = &inst.op {
            let operands = operands(inst, live)?;
            let (outs, inner) = self.run_refs(&c.body, &operands)?;
            if outs.len() != inst.results.len() {
                return Err(op_error(
                    "cluster",
                    &format!(
                        "@{} yields {} values for {} results",
                        c.name,
                        outs.len(),
                        inst.results.len()
                    ),
                ));
            }
            // The region's intermediates were alive on top of everything alive here.
            live.stats.peak_live_values =
                (live.stats.peak_live_values).max(live.values + inner.peak_live_values);
            live.stats.peak_live_bytes =
                (live.stats.peak_live_bytes).max(live.bytes + inner.peak_live_bytes);
            return Ok(outs);
        }
        if let Op::While(_) | Op::Conditional(_) = &inst.op {
            let operands = operands(inst, live)?;
            let types: Vec<TensorType> = inst.results.iter().map(|&r| f.ty(r).clone()).collect();
            return self.eval_all(&inst.op, &operands, &types);
        }
        let [result] = inst.results[..] else {
            return Err(op_error(inst.op.name(), "expects exactly one result"));
        };
        let ty = f.ty(result);
        if let Some(t) = self.reshape_in_place(&inst.op, &inst.args, ty, i, uses, live) {
            return Ok(vec![t]);
        }
        if let Some(t) = self.update_in_place(&inst.op, &inst.args, i, uses, live)? {
            return Ok(vec![t]);
        }
        let operands = operands(inst, live)?;
        Ok(vec![self.eval(&inst.op, &operands, ty)?])
    }

    /// `reshape` of a value that dies here: moves its buffer instead of copying it.
    fn reshape_in_place(
        &self,
        op: &Op,
        args: &[kiln_ir::Value],
        ty: &TensorType,
        i: usize,
        uses: &[LastUse],
        live: &mut Live<'_>,
    ) -> Option<Tensor> {
        let [a] = args else { return None };
        let v = a.0 as usize;
        let owned = matches!(live.slots.get(v), Some(Some(Slot::Owned(t)))
            if t.dtype() == ty.dtype && t.num_elements() == ty.num_elements());
        if *op != Op::Reshape || uses[v] != LastUse::Inst(i) || !owned {
            return None;
        }
        match live.take(v)? {
            Slot::Owned(t) => t.reshaped(ty.shape.clone()).ok(),
            Slot::Arg(_) => None,
        }
    }
}

impl Interpreter {
    /// `dynamic_update_slice` of a computed value that dies here: the update is written
    /// into its buffer, which becomes the result, instead of into a copy.
    fn update_in_place(
        &self,
        op: &Op,
        args: &[kiln_ir::Value],
        i: usize,
        uses: &[LastUse],
        live: &mut Live<'_>,
    ) -> Result<Option<Tensor>, InterpError> {
        let (Op::DynamicUpdateSlice, [target, rest @ ..]) = (op, args) else {
            return Ok(None);
        };
        let v = target.0 as usize;
        let owned = matches!(live.slots.get(v), Some(Some(Slot::Owned(_))));
        if !owned || uses[v] != LastUse::Inst(i) || rest.contains(target) {
            return Ok(None);
        }
        let Some(Slot::Owned(mut t)) = live.take(v) else {
            return Ok(None);
        };
        let others = rest
            .iter()
            .map(|a| match live.slots.get(a.0 as usize) {
                Some(Some(s)) => Ok(s.tensor()),
                _ => Err(op_error(op.name(), "operand is not defined")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.update_slice_in_place(&mut t, &others)?;
        Ok(Some(t))
    }
}

/// The operand tensors of `inst`.
fn operands<'l>(inst: &Inst, live: &'l Live<'_>) -> Result<Vec<&'l Tensor>, InterpError> {
    inst.args
        .iter()
        .map(|a| match live.slots.get(a.0 as usize) {
            Some(Some(s)) => Ok(s.tensor()),
            _ => Err(op_error(inst.op.name(), "operand is not defined")),
        })
        .collect()
}

fn op_error(op: &'static str, message: &str) -> InterpError {
    InterpError::Op {
        op,
        message: message.to_string(),
    }
}

fn check_args(f: &Func, args: &[&Tensor]) -> Result<(), InterpError> {
    if args.len() != f.params.len() {
        return Err(InterpError::ArgCount {
            func: f.name.clone(),
            expected: f.params.len(),
            got: args.len(),
        });
    }
    for (index, (&p, a)) in f.params.iter().zip(args).enumerate() {
        let expected = f.ty(p);
        let got = a.ty();
        if *expected != got {
            return Err(InterpError::ArgType {
                func: f.name.clone(),
                index,
                param: f.value(p).name.clone(),
                expected: expected.clone(),
                got,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::parse_func;

    #[test]
    fn last_uses_of_a_small_function() {
        let f = parse_func(
            "func @f(%x: f32[4], %y: f32[4]) -> f32[4] {\n\
               %a = add %x, %x : f32[4]\n\
               %b = mul %a, %y : f32[4]\n\
               %dead = exp %a : f32[4]\n\
               %c = neg %b : f32[4]\n\
               return %c\n\
             }\n",
            "t.kir",
        )
        .unwrap();
        let u = last_uses(&f);
        let at = |name: &str| u[f.lookup(name).unwrap().0 as usize];
        assert_eq!(at("x"), LastUse::Inst(0));
        assert_eq!(at("y"), LastUse::Inst(1));
        assert_eq!(at("a"), LastUse::Inst(2));
        assert_eq!(at("b"), LastUse::Inst(3));
        assert_eq!(at("dead"), LastUse::Unused);
        assert_eq!(at("c"), LastUse::Returned);
    }
}
