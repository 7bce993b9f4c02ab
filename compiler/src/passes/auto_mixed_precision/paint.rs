//! The colouring: which instructions of a function change from f32 to the target type.
//!
//! TensorFlow's algorithm (`AutoMixedPrecisionImpl::Optimize`), pass for pass, over the
//! graph whose nodes are instructions and whose edges are f32 values:
//! 1. paint ALLOW every allow-list op that can run in the target type;
//! 2. paint DENY every deny-list op and everything it reaches forward through infer and
//!    clear ops that lie upstream of an infer or deny op;
//! 3. paint ALLOW the infer and clear ops that are both downstream and upstream of allow
//!    ops (so two allow ops are not separated by a pair of casts);
//! 4. paint ALLOW the clear ops connected to an ALLOW op through clear ops, either way;
//! 5. paint ALLOW an existing `convert` to f32 whose every user is ALLOW (it then converts
//!    to the target type directly, instead of being followed by a cast).
//!
//! TF's passes for Tensor Lists and for loops' `NextIteration`/`Merge` colour matching have no
//! counterpart: Kiln has no Tensor Lists, and a `while` carries its values through a closed
//! region that is coloured on its own, its operands and results staying f32. A node
//! "can run in the target type" (TF's `SupportsF16` and `IsFloat32`) when the op is one whose
//! f32 operands and results all share one type ([`changes_type`]) and they are all f32.

use super::lists::{AmpLists, ListKind};
use kiln_ir::{DType, Func, Op, ValueDef};

/// Whether an op's f32 operands and results form one type that can change together: the
/// elementwise, shape, reduction, contraction and window ops. Not: constants and `iota`
/// (their values would change), `convert` and `bitcast_convert` (two types; step 5 handles
/// `convert`), random ops (their streams are defined in f32), `sort` (operands of several
/// types), `scatter` (an update combiner of any kind), clusters and control flow.
pub fn changes_type(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::Select
            | Op::ArgReduce { .. }
            | Op::BroadcastInDim { .. }
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Concat { .. }
            | Op::Pad { .. }
            | Op::PadGeneral { .. }
            | Op::Reduce { .. }
            | Op::DotGeneral(_)
            | Op::Reverse { .. }
            | Op::DynamicSlice { .. }
            | Op::DynamicUpdateSlice
            | Op::Gather(_)
            | Op::Convolution(_)
            | Op::ReduceWindow { .. }
            | Op::SelectAndScatter { .. }
    )
}

/// The result of the colouring.
#[derive(Debug, Default)]
pub struct Painting {
    /// Per instruction: whether it changes to the target type.
    pub allow: Vec<bool>,
    /// Per instruction: whether it was painted DENY (for logs and tests).
    pub deny: Vec<bool>,
    /// TF's `VLOG` lines, with their levels.
    pub log: Vec<(i32, String)>,
}

/// The f32 dataflow between a function's instructions.
struct TypeGraph<'f> {
    f: &'f Func,
    lists: &'f AmpLists,
    /// Per instruction, the instructions using its f32 results.
    outputs: Vec<Vec<usize>>,
    /// Per instruction, the instructions defining its f32 operands.
    inputs: Vec<Vec<usize>>,
    /// Per instruction: it can run in the target type.
    convertible: Vec<bool>,
    /// Per instruction: one of its f32 results is a result of the function.
    returned: Vec<bool>,
}

#[derive(Clone, Copy)]
enum Direction {
    Inputs,
    Outputs,
    Both,
}

/// Colours `f` with `lists`.
pub fn paint(f: &Func, lists: &AmpLists) -> Painting {
    let g = TypeGraph::new(f, lists);
    let n = f.insts.len();
    let mut p = Painting {
        allow: vec![false; n],
        deny: vec![false; n],
        log: Vec::new(),
    };
    g.add_allowlist_ops(&mut p);
    if !p.allow.contains(&true) {
        return p;
    }
    g.propagate_deny(&mut p);
    g.add_between_allow(&mut p);
    g.propagate_allow_through_clear(&mut p);
    g.allow_casts_to_allow_users(&mut p);
    p
}

impl<'f> TypeGraph<'f> {
    fn new(f: &'f Func, lists: &'f AmpLists) -> TypeGraph<'f> {
        let n = f.insts.len();
        let mut outputs = vec![Vec::new(); n];
        let mut inputs = vec![Vec::new(); n];
        for (i, inst) in f.insts.iter().enumerate() {
            for &a in &inst.args {
                if let (ValueDef::Inst(p, _), DType::F32) = (f.value(a).def, f.ty(a).dtype) {
                    let p = p.0 as usize;
                    if !outputs[p].contains(&i) {
                        outputs[p].push(i);
                        inputs[i].push(p);
                    }
                }
            }
        }
        let mut returned = vec![false; n];
        for &r in &f.results {
            if let (ValueDef::Inst(p, _), DType::F32) = (f.value(r).def, f.ty(r).dtype) {
                returned[p.0 as usize] = true;
            }
        }
        let convertible = f
            .insts
            .iter()
            .map(|inst| {
                let types = inst
                    .args
                    .iter()
                    .chain(&inst.results)
                    .map(|&v| f.ty(v).dtype);
                let floats: Vec<DType> = types.filter(|d| d.is_float()).collect();
                changes_type(&inst.op)
                    && !floats.is_empty()
                    && floats.iter().all(|&d| d == DType::F32)
            })
            .collect();
        TypeGraph {
            f,
            lists,
            outputs,
            inputs,
            convertible,
            returned,
        }
    }

    fn on(&self, kind: ListKind, i: usize) -> bool {
        self.lists.contains(kind, self.f.insts[i].op.name())
    }

    /// `dot_general node %y`, as TF names a node in its logs.
    fn label(&self, i: usize) -> String {
        let inst = &self.f.insts[i];
        let name = inst
            .results
            .first()
            .map_or(String::new(), |&r| format!(" %{}", self.f.value(r).name));
        format!("{} node{name}", inst.op.name())
    }

    /// TF's `DfsTypeTraversal`: visits each node reachable from `root` at most once;
    /// `enter(i)` decides (and records) whether to go on through `i`.
    fn dfs(&self, root: usize, dir: Direction, mut enter: impl FnMut(usize) -> bool) {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            if !seen.insert(i) || !enter(i) {
                continue;
            }
            let (ins, outs) = match dir {
                Direction::Inputs => (&self.inputs[i][..], &[][..]),
                Direction::Outputs => (&[][..], &self.outputs[i][..]),
                Direction::Both => (&self.inputs[i][..], &self.outputs[i][..]),
            };
            stack.extend(ins.iter().chain(outs).rev());
        }
    }

    /// Pass 1 (with `UNSAFE_FORCE_ALL`, every op is treated as on the allow list: TF's
    /// `CanForceFP16` excludes constants and stateful ops, which [`changes_type`] excludes).
    fn add_allowlist_ops(&self, p: &mut Painting) {
        for i in 0..self.f.insts.len() {
            let forced = self.lists.force_all && self.convertible[i];
            if !forced && !self.on(ListKind::Allow, i) {
                continue;
            }
            if self.convertible[i] {
                p.allow[i] = true;
                let op = self.f.insts[i].op.name();
                p.log.push((
                    2,
                    format!(
                        "Painting {} ALLOW because its op {op} is on the allowlist",
                        self.label(i)
                    ),
                ));
            } else {
                p.log.push((
                    2,
                    format!("Skipping {} because it cannot run in the target type (its floats are not all f32, or its op has no single float type)", self.label(i)),
                ));
            }
        }
    }

    /// Pass 2: `PropagateDenyFwdThroughClearAndInfer` (skipped with `UNSAFE_FORCE_ALL`).
    fn propagate_deny(&self, p: &mut Painting) {
        if self.lists.force_all {
            return;
        }
        let n = self.f.insts.len();
        let mut upstream_of_deny_or_infer = vec![false; n];
        for root in 0..n {
            if !(self.on(ListKind::Deny, root) || self.on(ListKind::Infer, root)) {
                continue;
            }
            self.dfs(root, Direction::Inputs, |i| {
                let go =
                    i == root || (!upstream_of_deny_or_infer[i] && self.on(ListKind::Clear, i));
                upstream_of_deny_or_infer[i] |= go;
                go
            });
        }
        for root in 0..n {
            if p.deny[root] || !self.on(ListKind::Deny, root) {
                continue;
            }
            self.dfs(root, Direction::Outputs, |i| {
                let go = i == root || (!p.deny[i] && upstream_of_deny_or_infer[i]);
                if go && !p.deny[i] {
                    p.deny[i] = true;
                    p.log.push((2, format!("Painting {} DENY", self.label(i))));
                }
                go
            });
        }
    }

    /// Pass 3: `AddClearAndInferToAllowIfBetweenAllow`.
    fn add_between_allow(&self, p: &mut Painting) {
        let n = self.f.insts.len();
        let allow_root = |i: usize| self.on(ListKind::Allow, i) && self.convertible[i];
        let mut downstream_of_allow = vec![false; n];
        for root in (0..n).filter(|&i| allow_root(i)) {
            self.dfs(root, Direction::Outputs, |i| {
                let go = i == root
                    || (!downstream_of_allow[i]
                        && !self.on(ListKind::Allow, i)
                        && !p.deny[i]
                        && self.convertible[i]
                        && (self.on(ListKind::Clear, i) || self.on(ListKind::Infer, i)));
                downstream_of_allow[i] |= go;
                go
            });
        }
        let mut upstream_of_allow = vec![false; n];
        for root in (0..n).filter(|&i| allow_root(i)) {
            if upstream_of_allow[root] {
                continue;
            }
            self.dfs(root, Direction::Inputs, |i| {
                let go = i == root || (!upstream_of_allow[i] && downstream_of_allow[i]);
                if go {
                    upstream_of_allow[i] = true;
                    if !p.allow[i] {
                        p.allow[i] = true;
                        p.log.push((2, format!("Painting {} ALLOW", self.label(i))));
                    }
                }
                go
            });
        }
    }

    /// Pass 4: `PropagateAllowThroughClear`.
    fn propagate_allow_through_clear(&self, p: &mut Painting) {
        let n = self.f.insts.len();
        let mut clear_prop = vec![false; n];
        for root in 0..n {
            if clear_prop[root] || !p.allow[root] {
                continue;
            }
            self.dfs(root, Direction::Both, |i| {
                let go = i == root
                    || (!p.allow[i]
                        && !p.deny[i]
                        && self.convertible[i]
                        && self.on(ListKind::Clear, i));
                if go {
                    clear_prop[i] = true;
                    if !p.allow[i] {
                        p.allow[i] = true;
                        p.log.push((2, format!("Painting {} ALLOW", self.label(i))));
                    }
                }
                go
            });
        }
    }

    /// `MakeCastsAllowIfAllOutputsAllow`: a `convert` to f32 used only by ALLOW ops.
    fn allow_casts_to_allow_users(&self, p: &mut Painting) {
        for (i, inst) in self.f.insts.iter().enumerate() {
            let to_f32 = inst.results.len() == 1 && self.f.ty(inst.results[0]).dtype == DType::F32;
            if !matches!(inst.op, Op::Convert) || !to_f32 || self.returned[i] {
                continue;
            }
            let users = &self.outputs[i];
            if !users.is_empty() && users.iter().all(|&u| p.allow[u]) {
                p.allow[i] = true;
                p.log.push((
                    2,
                    format!(
                        "Painting {} ALLOW because all its users are ALLOW",
                        self.label(i)
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
