//! Functions: parameters, a list of instructions in SSA form, and results.

use crate::dtype::TensorType;
use crate::op::Op;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// A value: a function parameter or an instruction result. Indexes [`Func::value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Value(pub u32);

/// An instruction. Indexes [`Func::insts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InstId(pub u32);

/// A position in a `.kir` source file, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// Line number.
    pub line: u32,
    /// Column number (in characters).
    pub col: u32,
}

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueDef {
    /// The function's n-th parameter.
    Param(usize),
    /// Result `index` of an instruction.
    Inst(InstId, usize),
}

/// What the function knows about a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueData {
    /// The value's type.
    pub ty: TensorType,
    /// The name printed after `%` (unique within the function).
    pub name: String,
    /// The definition.
    pub def: ValueDef,
}

/// An op applied to operands, producing result values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inst {
    /// The operation and its attributes.
    pub op: Op,
    /// Operands, in order.
    pub args: Vec<Value>,
    /// Results (one for every op but clusters).
    pub results: Vec<Value>,
    /// Source position when parsed from text.
    pub loc: Option<Loc>,
    /// Manual compilation scope (`jit_scope=N` in text, `jit_scope` in the tracer): the op is
    /// marked for compilation even when auto-clustering is off, and only joins clusters of
    /// the same scope, like TensorFlow's `_XlaCompile` / `_XlaScope` attributes.
    pub scope: Option<u32>,
}

/// A function: typed parameters, instructions in definition order (every operand is defined
/// before its use), and the returned values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Func {
    /// The name printed after `@`.
    pub name: String,
    /// Parameter values, in order.
    pub params: Vec<Value>,
    /// Instructions in definition order.
    pub insts: Vec<Inst>,
    /// Returned values, in order.
    pub results: Vec<Value>,
    values: Vec<ValueData>,
    #[serde(skip)]
    names: HashMap<String, Value>,
    next_auto_name: u32,
}

impl Func {
    /// Equality with constants compared bit for bit, so two functions that compute
    /// different bits are never equal (derived `==` compares constants as floats, where
    /// `0.0 == -0.0` and a NaN constant makes a function unequal to itself). Everything
    /// else, names and source positions included, is compared as by `==`.
    pub fn bit_eq(&self, other: &Func) -> bool {
        self.name == other.name
            && self.params == other.params
            && self.results == other.results
            && self.values == other.values
            && self.next_auto_name == other.next_auto_name
            && self.insts.len() == other.insts.len()
            && self.insts.iter().zip(&other.insts).all(|(a, b)| {
                let ops = match (&a.op, &b.op) {
                    (Op::Constant(x), Op::Constant(y)) => Arc::ptr_eq(x, y) || x.bit_eq(y),
                    (Op::Cluster(x), Op::Cluster(y)) => x.name == y.name && x.body.bit_eq(&y.body),
                    (x @ (Op::While(_) | Op::Conditional(_)), y) => {
                        let (rx, ry) = (x.regions(), y.regions());
                        x.name() == y.name()
                            && rx.len() == ry.len()
                            && rx.iter().zip(&ry).all(|(a, b)| a.bit_eq(b))
                    }
                    (x, y) => x == y,
                };
                ops && a.args == b.args
                    && a.results == b.results
                    && a.loc == b.loc
                    && a.scope == b.scope
            })
    }

    /// An empty function.
    pub fn new(name: impl Into<String>) -> Func {
        Func {
            name: name.into(),
            params: Vec::new(),
            insts: Vec::new(),
            results: Vec::new(),
            values: Vec::new(),
            names: HashMap::new(),
            next_auto_name: 0,
        }
    }

    /// Information about a value.
    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.0 as usize]
    }

    /// The type of a value.
    pub fn ty(&self, v: Value) -> &TensorType {
        &self.values[v.0 as usize].ty
    }

    /// The instruction with this id.
    pub fn inst(&self, i: InstId) -> &Inst {
        &self.insts[i.0 as usize]
    }

    /// Number of values (parameters and results of all instructions).
    pub fn num_values(&self) -> usize {
        self.values.len()
    }

    /// Looks a value up by its name (without `%`).
    pub fn lookup(&self, name: &str) -> Option<Value> {
        self.names.get(name).copied()
    }

    /// Parameter types, in order.
    pub fn param_types(&self) -> Vec<TensorType> {
        self.params.iter().map(|&p| self.ty(p).clone()).collect()
    }

    /// Result types, in order.
    pub fn result_types(&self) -> Vec<TensorType> {
        self.results.iter().map(|&r| self.ty(r).clone()).collect()
    }

    /// Adds a parameter. `name: None` picks a fresh numeric name.
    pub fn add_param(&mut self, name: Option<&str>, ty: TensorType) -> Value {
        let v = self.new_value(name, ty, ValueDef::Param(self.params.len()));
        self.params.push(v);
        v
    }

    /// Appends an instruction with one result of type `ty` and returns the result.
    /// The caller is responsible for types being right; the verifier checks them.
    pub fn push(&mut self, op: Op, args: Vec<Value>, ty: TensorType, loc: Option<Loc>) -> Value {
        self.push_named(op, args, ty, None, loc)
    }

    /// Like [`Func::push`], naming the result (`None` picks a fresh numeric name).
    pub fn push_named(
        &mut self,
        op: Op,
        args: Vec<Value>,
        ty: TensorType,
        name: Option<&str>,
        loc: Option<Loc>,
    ) -> Value {
        let id = InstId(self.insts.len() as u32);
        let v = self.new_value(name, ty, ValueDef::Inst(id, 0));
        self.insts.push(Inst {
            op,
            args,
            results: vec![v],
            loc,
            scope: None,
        });
        v
    }

    /// Appends an instruction with several results (a cluster), named `names` (an empty name
    /// picks a fresh one), and returns the results.
    pub fn push_multi(
        &mut self,
        op: Op,
        args: Vec<Value>,
        types: Vec<TensorType>,
        names: &[String],
        loc: Option<Loc>,
    ) -> Vec<Value> {
        let id = InstId(self.insts.len() as u32);
        let results: Vec<Value> = types
            .into_iter()
            .enumerate()
            .map(|(k, ty)| {
                let name = names.get(k).filter(|n| !n.is_empty()).map(String::as_str);
                self.new_value(name, ty, ValueDef::Inst(id, k))
            })
            .collect();
        self.insts.push(Inst {
            op,
            args,
            results: results.clone(),
            loc,
            scope: None,
        });
        results
    }

    /// The instruction that defines `v`, if it is not a parameter.
    pub fn def_inst(&self, v: Value) -> Option<&Inst> {
        match self.value(v).def {
            ValueDef::Inst(i, _) => Some(self.inst(i)),
            ValueDef::Param(_) => None,
        }
    }

    /// For every value, how many times it is used as an operand or result.
    pub fn use_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.values.len()];
        for inst in &self.insts {
            for a in &inst.args {
                counts[a.0 as usize] += 1;
            }
        }
        for r in &self.results {
            counts[r.0 as usize] += 1;
        }
        counts
    }

    fn new_value(&mut self, name: Option<&str>, ty: TensorType, def: ValueDef) -> Value {
        let v = Value(self.values.len() as u32);
        let name = match name {
            Some(n) => n.to_string(),
            None => self.fresh_name(),
        };
        // A duplicate name is kept as written; the verifier reports it.
        self.names.entry(name.clone()).or_insert(v);
        self.values.push(ValueData { ty, name, def });
        v
    }

    fn fresh_name(&mut self) -> String {
        loop {
            let n = self.next_auto_name.to_string();
            self.next_auto_name += 1;
            if !self.names.contains_key(&n) {
                return n;
            }
        }
    }

    /// A copy named `_` whose values are named `%v0`, `%v1`, … in definition order
    /// (parameters, then each instruction's results): two functions that differ only in
    /// names print the same text. Cache keys are built from it, so structurally equal
    /// clusters (a bidirectional RNN's two loop bodies) compile once.
    pub fn with_positional_names(&self) -> Func {
        let mut f = self.clone();
        f.name = "_".into();
        // Values no instruction defines any more (left by rewrites) are not printed; they
        // get distinct names all the same.
        for (i, d) in f.values.iter_mut().enumerate() {
            d.name = format!("unused{i}");
        }
        let defined = f
            .params
            .iter()
            .chain(f.insts.iter().flat_map(|i| &i.results))
            .map(|v| v.0 as usize)
            .collect::<Vec<_>>();
        for (k, v) in defined.into_iter().enumerate() {
            f.values[v].name = format!("v{k}");
        }
        f.reindex_names();
        f
    }

    /// Rebuilds the name index after deserialisation (it is not serialised).
    pub fn reindex_names(&mut self) {
        self.names = self
            .values
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), Value(i as u32)))
            .collect();
    }
}

/// A `.kir` file: one or more functions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Module {
    /// Functions in file order.
    pub funcs: Vec<Func>,
}

impl Module {
    /// The function named `name`.
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }

    /// The entry function: `@main` if present, otherwise the first.
    pub fn entry(&self) -> Option<&Func> {
        self.func("main").or(self.funcs.first())
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_func;

    /// Positional names follow definition order, whatever the original names were, and
    /// the renamed function still parses back as the same computation.
    #[test]
    fn positional_names_follow_definition_order() {
        let f = parse_func(
            "func @g(%b: f32[2], %a: f32[2]) -> f32[2] {\n  %v1 = add %b, %a : f32[2]\n  %v0 = mul %v1, %b : f32[2]\n  return %v0\n}\n",
            "a.kir",
        )
        .unwrap();
        let text = crate::print_func(&f.with_positional_names());
        assert_eq!(
            text,
            "func @_(%v0: f32[2], %v1: f32[2]) -> f32[2] {\n  %v2 = add %v0, %v1 : f32[2]\n  %v3 = mul %v2, %v0 : f32[2]\n  return %v3\n}\n"
        );
        assert!(parse_func(&text, "b.kir").is_ok());
    }

    /// Clones share their constants; a re-parsed copy has its own, compared bit for bit.
    #[test]
    fn bit_eq_shares_cloned_constants_and_compares_others_by_bits() {
        let src = |z: &str| {
            format!("func @f(%x: f32[2]) -> f32[2] {{\n  %c = constant [1.0, {z}] : f32[2]\n  %y = mul %x, %c : f32[2]\n  return %y\n}}\n")
        };
        let f = parse_func(&src("0.0"), "a.kir").unwrap();
        let g = f.clone();
        let constant = |f: &super::Func| match &f.insts[0].op {
            crate::Op::Constant(t) => t.clone(),
            op => panic!("{op:?}"),
        };
        assert!(std::sync::Arc::ptr_eq(&constant(&f), &constant(&g)));
        assert!(f.bit_eq(&g));
        assert!(f.bit_eq(&parse_func(&src("0.0"), "a.kir").unwrap()));
        let minus = parse_func(&src("-0.0"), "a.kir").unwrap();
        assert!(f == minus, "float equality cannot tell 0.0 from -0.0");
        assert!(!f.bit_eq(&minus));
        let nan = parse_func(&src("nan"), "a.kir").unwrap();
        assert!(nan != nan.clone(), "float equality: NaN is not itself");
        assert!(nan.bit_eq(&nan.clone()));
    }
}
