//! Rebuilding a function instruction by instruction, with old values mapped to new ones.
//! Passes use it instead of editing `Func` in place, so a rewrite is always a valid SSA
//! function in definition order.

use kiln_ir::{Func, Inst, Op, TensorType, Value};

/// Copies a function into a new one, remapping values; names are preserved.
pub struct Rewriter<'a> {
    old: &'a Func,
    new: Func,
    map: Vec<Option<Value>>,
    /// Next candidate for a name of a value a pass introduces.
    next_name: usize,
}

impl<'a> Rewriter<'a> {
    /// A new function with `old`'s name and parameters.
    pub fn new(old: &'a Func) -> Rewriter<'a> {
        let mut new = Func::new(old.name.clone());
        let mut map = vec![None; old.num_values()];
        for &p in &old.params {
            let v = new.add_param(Some(&old.value(p).name), old.ty(p).clone());
            map[p.0 as usize] = Some(v);
        }
        Rewriter {
            old,
            new,
            map,
            next_name: 0,
        }
    }

    /// The new value standing for an old one.
    pub fn get(&self, old: Value) -> Value {
        self.map[old.0 as usize].expect("operands are mapped before their uses")
    }

    /// The function built so far.
    pub fn built(&self) -> &Func {
        &self.new
    }

    /// Makes each of `old` stand for the new value at the same position (an instruction of
    /// several results merged with an equal earlier one).
    pub fn alias_all(&mut self, old: &[Value], new: &[Value]) {
        for (&o, &n) in old.iter().zip(new) {
            self.alias(o, n);
        }
    }

    /// Makes `old` stand for an existing new value (the old instruction is dropped).
    pub fn alias(&mut self, old: Value, new: Value) {
        self.map[old.0 as usize] = Some(new);
    }

    /// Copies an instruction with remapped operands, keeping its result names.
    pub fn copy(&mut self, inst: &Inst) {
        let args = inst.args.iter().map(|&a| self.get(a)).collect();
        self.push_like(inst, inst.op.clone(), args);
    }

    /// Emits `op` over new `args` in place of `inst` (same result names and types).
    pub fn push_like(&mut self, inst: &Inst, op: Op, args: Vec<Value>) {
        let types = inst
            .results
            .iter()
            .map(|&r| self.old.ty(r).clone())
            .collect();
        self.push_retyped(inst, op, args, types);
    }

    /// Emits `op` over new `args` in place of `inst`: its results keep their names and take
    /// `types` (a pass that changes a value's type, as the mixed precision rewrite does).
    pub fn push_retyped(&mut self, inst: &Inst, op: Op, args: Vec<Value>, types: Vec<TensorType>) {
        if inst.results.len() != 1 {
            // A `while` or `conditional`: every result keeps its name.
            let names: Vec<String> = inst
                .results
                .iter()
                .map(|&r| self.old.value(r).name.clone())
                .collect();
            let vs = self.new.push_multi(op, args, types, &names, inst.loc);
            self.new.insts.last_mut().expect("just pushed").scope = inst.scope;
            for (&r, v) in inst.results.iter().zip(vs) {
                self.map[r.0 as usize] = Some(v);
            }
            return;
        }
        let r = inst.results[0];
        let ty = types.into_iter().next().expect("one type per result");
        let v = self
            .new
            .push_named(op, args, ty, Some(&self.old.value(r).name), inst.loc);
        self.new.insts.last_mut().expect("just pushed").scope = inst.scope;
        self.map[r.0 as usize] = Some(v);
    }

    /// Emits a fresh instruction (for values a pass introduces); returns its result. Its
    /// name is used by neither function: the old function's values are copied in later with
    /// their own names, so a name that is only fresh in the new one could collide.
    pub fn push_new(&mut self, op: Op, args: Vec<Value>, ty: TensorType) -> Value {
        let name = loop {
            let n = self.next_name.to_string();
            self.next_name += 1;
            if self.old.lookup(&n).is_none() && self.new.lookup(&n).is_none() {
                break n;
            }
        };
        self.new.push_named(op, args, ty, Some(&name), None)
    }

    /// Like [`Rewriter::push_new`], named `base` when that name is fresh in both functions,
    /// else `base_1`, `base_2`, ….
    pub fn push_new_named(
        &mut self,
        op: Op,
        args: Vec<Value>,
        ty: TensorType,
        base: &str,
    ) -> Value {
        let taken = |n: &str| self.old.lookup(n).is_some() || self.new.lookup(n).is_some();
        let mut name = base.to_string();
        let mut k = 0;
        while taken(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.new.push_named(op, args, ty, Some(&name), None)
    }

    /// The new function, returning the mapped results of the old one.
    pub fn finish(mut self) -> Func {
        self.new.results = self.old.results.iter().map(|&r| self.get(r)).collect();
        self.new
    }
}
