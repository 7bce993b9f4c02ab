//! Rewrites a function so that each planned cluster becomes one `cluster` instruction whose
//! region holds the member ops. Inputs (values the members use but do not define) become the
//! region's parameters; outputs (member values used outside, or returned) become its results.
//! The new instruction order is a topological order of the contracted graph, stable with
//! respect to the original order (ties broken by the earliest original instruction).

use kiln_ir::{Cluster, Func, Op, Value, ValueDef};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// One cluster chosen by `mark_for_compilation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPlan {
    /// `cluster_<n>` or `cluster_<fingerprint>_<n>`.
    pub name: String,
    /// Indices of its instructions, ascending.
    pub insts: Vec<usize>,
    /// True if any member came from a manual `jit_scope`.
    pub manual: bool,
}

/// A unit of the contracted graph: one cluster or one unclustered instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Unit {
    Cluster(usize),
    Inst(usize),
}

/// The function with every plan turned into a `cluster` instruction.
pub fn form_clusters(f: &Func, plans: &[ClusterPlan]) -> Func {
    let n = f.insts.len();
    let mut unit_of: Vec<Unit> = (0..n).map(Unit::Inst).collect();
    for (c, p) in plans.iter().enumerate() {
        for &i in &p.insts {
            unit_of[i] = Unit::Cluster(c);
        }
    }
    let def_unit = |v: Value| match f.value(v).def {
        ValueDef::Inst(i, _) => Some(unit_of[i.0 as usize]),
        ValueDef::Param(_) => None,
    };
    // Inputs and outputs of each cluster, in first-use / definition order.
    let mut inputs: Vec<Vec<Value>> = vec![Vec::new(); plans.len()];
    let mut outputs: Vec<Vec<Value>> = vec![Vec::new(); plans.len()];
    let mut used_outside = vec![false; f.num_values()];
    for (i, inst) in f.insts.iter().enumerate() {
        for &a in &inst.args {
            if def_unit(a) != Some(unit_of[i]) {
                used_outside[a.0 as usize] = true;
                if let Unit::Cluster(c) = unit_of[i] {
                    if !inputs[c].contains(&a) {
                        inputs[c].push(a);
                    }
                }
            }
        }
    }
    for &r in &f.results {
        used_outside[r.0 as usize] = true;
    }
    for (c, p) in plans.iter().enumerate() {
        for &i in &p.insts {
            outputs[c].extend(
                f.insts[i]
                    .results
                    .iter()
                    .filter(|r| used_outside[r.0 as usize]),
            );
        }
    }
    // Kahn's algorithm over units, smallest original index first.
    let first = |u: Unit| match u {
        Unit::Inst(i) => i,
        Unit::Cluster(c) => plans[c].insts[0],
    };
    let mut deps: HashMap<Unit, Vec<Unit>> = HashMap::new();
    let mut indegree: HashMap<Unit, usize> = HashMap::new();
    for (i, inst) in f.insts.iter().enumerate() {
        let u = unit_of[i];
        indegree.entry(u).or_insert(0);
        for &a in &inst.args {
            if let Some(d) = def_unit(a) {
                if d != u {
                    let succ = deps.entry(d).or_default();
                    if !succ.contains(&u) {
                        succ.push(u);
                        *indegree.entry(u).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = BinaryHeap::new();
    let key = |u: Unit| match u {
        Unit::Inst(i) => (first(u), i),
        Unit::Cluster(c) => (first(u), n + c),
    };
    let from_key = |k: usize| {
        if k < n {
            Unit::Inst(k)
        } else {
            Unit::Cluster(k - n)
        }
    };
    for (&u, &d) in &indegree {
        if d == 0 {
            ready.push(Reverse(key(u)));
        }
    }
    let mut out = Func::new(f.name.clone());
    let mut map: Vec<Option<Value>> = vec![None; f.num_values()];
    for &p in &f.params {
        map[p.0 as usize] = Some(out.add_param(Some(&f.value(p).name), f.ty(p).clone()));
    }
    let get = |map: &Vec<Option<Value>>, v: Value| map[v.0 as usize].expect("topological order");
    while let Some(Reverse((_, k))) = ready.pop() {
        let u = from_key(k);
        match u {
            Unit::Inst(i) => {
                let inst = &f.insts[i];
                let args = inst.args.iter().map(|&a| get(&map, a)).collect();
                // Every result: a `while` or `conditional` has several.
                let types = inst.results.iter().map(|&r| f.ty(r).clone()).collect();
                let names: Vec<String> = inst
                    .results
                    .iter()
                    .map(|&r| f.value(r).name.clone())
                    .collect();
                let vs = out.push_multi(inst.op.clone(), args, types, &names, inst.loc);
                out.insts.last_mut().expect("just pushed").scope = inst.scope;
                for (&r, v) in inst.results.iter().zip(vs) {
                    map[r.0 as usize] = Some(v);
                }
            }
            Unit::Cluster(c) => {
                let body = cluster_body(f, &plans[c], &inputs[c], &outputs[c]);
                let args = inputs[c].iter().map(|&a| get(&map, a)).collect();
                let types = outputs[c].iter().map(|&o| f.ty(o).clone()).collect();
                let names: Vec<String> = outputs[c]
                    .iter()
                    .map(|&o| f.value(o).name.clone())
                    .collect();
                let op = Op::Cluster(Box::new(Cluster {
                    name: plans[c].name.clone(),
                    body,
                }));
                let vs = out.push_multi(op, args, types, &names, None);
                for (&o, v) in outputs[c].iter().zip(vs) {
                    map[o.0 as usize] = Some(v);
                }
            }
        }
        for &s in deps.get(&u).map(Vec::as_slice).unwrap_or(&[]) {
            let d = indegree.get_mut(&s).expect("every unit has an indegree");
            *d -= 1;
            if *d == 0 {
                ready.push(Reverse(key(s)));
            }
        }
    }
    out.results = f.results.iter().map(|&r| get(&map, r)).collect();
    out
}

/// The region of one cluster: parameters named after its inputs, its members in order,
/// yielding its outputs.
fn cluster_body(f: &Func, plan: &ClusterPlan, inputs: &[Value], outputs: &[Value]) -> Func {
    let mut body = Func::new(plan.name.clone());
    let mut map: HashMap<Value, Value> = HashMap::new();
    for &a in inputs {
        map.insert(a, body.add_param(Some(&f.value(a).name), f.ty(a).clone()));
    }
    for &i in &plan.insts {
        let inst = &f.insts[i];
        let args = inst.args.iter().map(|a| map[a]).collect();
        let r = inst.results[0];
        let v = body.push_named(
            inst.op.clone(),
            args,
            f.ty(r).clone(),
            Some(&f.value(r).name),
            inst.loc,
        );
        body.insts.last_mut().expect("just pushed").scope = inst.scope;
        map.insert(r, v);
    }
    body.results = outputs.iter().map(|o| map[o]).collect();
    body
}
