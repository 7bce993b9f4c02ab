//! HLO AST -> Kiln module: the driver. The entry computation becomes `@main`; `call` and
//! `fusion` are inlined; tuples and `get-tuple-element` disappear into trees of Kiln values
//! (the ROOT tuple, flattened, is the function's results). Every instruction reachable from
//! a ROOT is converted in dependency order; one that cannot be is reported and poisons what
//! depends on it, so a single run lists every unsupported op. The result is verified.

use crate::ast::{Computation, HloModule, Instruction, Operands, Shape};
use crate::error::{Diagnostic, ErrorKind, HloError, Pos, AT};
use crate::literal;
use kiln_ir::{Func, Loc, Module, Op, TensorType, Value};
use std::collections::HashMap;

/// Calls (`call`, `fusion`) and control-flow regions nested deeper than this are refused.
const MAX_CALL_DEPTH: usize = 64;

/// The Kiln values of an HLO value: an array, or a tuple of them.
#[derive(Debug, Clone)]
pub(crate) enum Tree {
    Leaf(Value),
    Tuple(Vec<Tree>),
}

impl Tree {
    pub(crate) fn leaves(&self, out: &mut Vec<Value>) {
        match self {
            Tree::Leaf(v) => out.push(*v),
            Tree::Tuple(items) => items.iter().for_each(|t| t.leaves(out)),
        }
    }
}

/// A problem with one instruction, before it gets the file name.
pub(crate) struct Problem {
    pub(crate) pos: Pos,
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

pub(crate) type Lowered = Result<Tree, Problem>;

pub(crate) fn invalid(pos: Pos, message: impl Into<String>) -> Problem {
    Problem {
        pos,
        kind: ErrorKind::Invalid,
        message: message.into(),
    }
}

pub(crate) fn unsupported(pos: Pos, message: impl Into<String>) -> Problem {
    Problem {
        pos,
        kind: ErrorKind::Unsupported,
        message: message.into(),
    }
}

/// `unsupported HLO op 'gather' at file:l:c in %name` (see [`Diagnostic`]'s `Display`).
pub(crate) fn unsupported_op(inst: &Instruction, detail: &str) -> Problem {
    unsupported(
        inst.opcode_pos,
        format!(
            "unsupported HLO op '{}'{detail} {AT} in %{}",
            inst.opcode, inst.name
        ),
    )
}

pub(crate) struct Ctx<'m> {
    pub(crate) m: &'m HloModule,
    pub(crate) f: Func,
    file: &'m str,
    problems: Vec<Problem>,
    /// Computations being converted, innermost last (cycle and depth check).
    active: Vec<usize>,
    /// Next suffix to try per name, so that inlining a computation many times stays linear.
    suffix: HashMap<String, u32>,
    /// The reciprocals `1 / c` of divisions imported as products (`ops.rs`), of `f`.
    pub(crate) reciprocals: std::collections::HashSet<Value>,
    /// Whether a division by a computed broadcast becomes a product by its reciprocal, as
    /// JAX's XLA:CPU computes it; TensorFlow's keeps it a division (`ops.rs`,
    /// [`divides_by_broadcast_reciprocal`]).
    pub(crate) broadcast_reciprocal: bool,
}

/// Whether the XLA that compiles `m` computes `A / Broadcast(B)` as `A * Broadcast(1/B)`.
/// Measured on this machine: jaxlib 0.10's XLA:CPU does (`jax.jit(...).lower(...).compile()
/// .as_text()` shows the product, and the results are its bits); TensorFlow 2.21's does not
/// (`stage='optimized_hlo'` keeps the `divide`, the results are the quotient's bits). Both
/// turn a division by a constant into a product. TensorFlow's HLO is recognised by what
/// `tf.function(jit_compile=True)` prints: module names `a_inference_…` and operands printed
/// with their types (JAX prints bare names).
pub(crate) fn divides_by_broadcast_reciprocal(m: &HloModule) -> bool {
    let typed_operands = m.computations.iter().any(|c| {
        c.instructions
            .iter()
            .any(|i| i.operand_refs().iter().any(|o| o.shape.is_some()))
    });
    !(m.name.starts_with("a_inference_") || typed_operands)
}

/// Converts a parsed module.
pub(crate) fn convert_module(m: &HloModule, file: &str) -> Result<Module, HloError> {
    let mut cx = Ctx {
        m,
        f: Func::new("main"),
        file,
        problems: Vec::new(),
        active: Vec::new(),
        suffix: HashMap::new(),
        reciprocals: Default::default(),
        broadcast_reciprocal: divides_by_broadcast_reciprocal(m),
    };
    let params = cx.entry_params();
    if let Some(params) = params {
        if let Some(root) = cx.computation(m.entry, params) {
            let mut results = Vec::new();
            root.leaves(&mut results);
            cx.f.results = results;
        }
    }
    cx.finish()
}

impl<'m> Ctx<'m> {
    fn finish(self) -> Result<Module, HloError> {
        let mut problems = self.problems;
        if problems.is_empty() {
            let module = Module {
                funcs: vec![self.f],
            };
            let diags = kiln_ir::verify_module(&module);
            if diags.is_empty() {
                return Ok(module);
            }
            problems = diags
                .into_iter()
                .map(|d| Problem {
                    // A problem with no instruction (a parameter, the results): the
                    // entry computation's place.
                    pos: d.loc.map_or(self.m.entry().pos, |l| Pos {
                        line: l.line,
                        col: l.col,
                    }),
                    kind: ErrorKind::Invalid,
                    message: format!("the HLO does not type-check: {}", d.message),
                })
                .collect();
        }
        // An inlined computation reports its problems once, in source order.
        problems.sort_by(|a, b| (a.pos, &a.message).cmp(&(b.pos, &b.message)));
        problems.dedup_by(|a, b| a.pos == b.pos && a.message == b.message);
        Err(HloError {
            diagnostics: problems
                .into_iter()
                .map(|p| Diagnostic {
                    file: self.file.to_string(),
                    pos: p.pos,
                    kind: p.kind,
                    message: p.message,
                })
                .collect(),
        })
    }

    /// A fresh Kiln value name from an HLO name: characters outside `[A-Za-z0-9_.]` become
    /// `_`, and a name already taken gets a `_N` suffix.
    pub(crate) fn fresh_name(&mut self, hlo_name: &str) -> String {
        let mut base: String = hlo_name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() {
            base.push('v');
        }
        if self.f.lookup(&base).is_none() {
            return base;
        }
        let next = self.suffix.entry(base.clone()).or_insert(1);
        loop {
            let candidate = format!("{base}_{next}");
            *next += 1;
            if self.f.lookup(&candidate).is_none() {
                return candidate;
            }
        }
    }

    /// Appends a Kiln instruction for HLO instruction `inst`, named after it.
    pub(crate) fn emit(
        &mut self,
        inst: &Instruction,
        op: Op,
        args: Vec<Value>,
        ty: TensorType,
    ) -> Value {
        let name = self.fresh_name(&inst.name);
        let loc = Loc {
            line: inst.pos.line,
            col: inst.pos.col,
        };
        self.f.push_named(op, args, ty, Some(&name), Some(loc))
    }

    /// The Kiln type of an instruction's declared (array) shape.
    pub(crate) fn out_type(&self, inst: &Instruction) -> Result<TensorType, Problem> {
        match &inst.shape {
            Shape::Array(a) => literal::array_type(a)
                .map_err(|m| unsupported(inst.pos, format!("{m} in %{}", inst.name))),
            Shape::Tuple(_) => Err(invalid(
                inst.pos,
                format!(
                    "'{}' cannot produce a tuple (in %{})",
                    inst.opcode, inst.name
                ),
            )),
        }
    }

    /// The entry computation's parameters, in `parameter(N)` order, as Kiln parameters.
    fn entry_params(&mut self) -> Option<Vec<Tree>> {
        let comp = self.m.entry();
        let mut by_number: Vec<Option<&Instruction>> = Vec::new();
        let mut ok = true;
        for inst in &comp.instructions {
            if let Operands::Parameter(n) = inst.operands {
                let n = match usize::try_from(n) {
                    Ok(n) if n < comp.instructions.len() => n,
                    _ => {
                        let msg = format!(
                            "parameter({n}) of %{}: there are only {} instructions",
                            inst.name,
                            comp.instructions.len()
                        );
                        self.problems.push(invalid(inst.pos, msg));
                        ok = false;
                        continue;
                    }
                };
                if by_number.len() <= n {
                    by_number.resize(n + 1, None);
                }
                if by_number[n].is_some() {
                    self.problems.push(invalid(
                        inst.pos,
                        format!("parameter({n}) is declared twice"),
                    ));
                    ok = false;
                }
                by_number[n] = Some(inst);
            }
        }
        let mut trees = Vec::new();
        for (n, inst) in by_number.iter().enumerate() {
            let Some(inst) = inst else {
                self.problems.push(invalid(
                    comp.pos,
                    format!("the entry computation has no parameter({n})"),
                ));
                ok = false;
                continue;
            };
            match self.param_tree(&inst.shape, &inst.name) {
                Ok(t) => trees.push(t),
                Err(m) => {
                    self.problems
                        .push(unsupported(inst.pos, format!("{m} in %{}", inst.name)));
                    ok = false;
                }
            }
        }
        ok.then_some(trees)
    }

    fn param_tree(&mut self, shape: &Shape, name: &str) -> Result<Tree, String> {
        match shape {
            Shape::Array(a) => {
                let ty = literal::array_type(a)?;
                let name = self.fresh_name(name);
                Ok(Tree::Leaf(self.f.add_param(Some(&name), ty)))
            }
            Shape::Tuple(items) => Ok(Tree::Tuple(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.param_tree(s, &format!("{name}.{i}")))
                    .collect::<Result<_, _>>()?,
            )),
        }
    }

    /// Converts computation `ci` with its parameters bound to `params`; its ROOT's tree, or
    /// `None` when a problem was reported.
    pub(crate) fn computation(&mut self, ci: usize, params: Vec<Tree>) -> Option<Tree> {
        let comp: &'m Computation = &self.m.computations[ci];
        let order = match order(comp) {
            Ok(o) => o,
            Err(p) => {
                self.problems.push(p);
                return None;
            }
        };
        self.active.push(ci);
        let mut values: Vec<Option<Tree>> = vec![None; comp.instructions.len()];
        for (i, operand_ids) in order {
            let inst = &comp.instructions[i];
            let args: Option<Vec<Tree>> = operand_ids.iter().map(|&k| values[k].clone()).collect();
            let Some(args) = args else {
                continue; // an operand failed and was reported
            };
            let lowered = match inst.operands {
                Operands::Parameter(n) => match usize::try_from(n).ok().and_then(|n| params.get(n))
                {
                    Some(t) => self.check_tree(inst, t.clone()),
                    None => Err(invalid(
                        inst.pos,
                        format!(
                            "parameter({n}) of %{}: the computation is called with {} operands",
                            comp.name,
                            params.len()
                        ),
                    )),
                },
                _ => self.lower(inst, args),
            };
            match lowered {
                Ok(t) => values[i] = Some(t),
                // An empty message: a callee's problems are already reported.
                Err(p) if p.message.is_empty() => {}
                Err(p) => self.problems.push(p),
            }
        }
        self.active.pop();
        values[comp.root].take()
    }

    /// Inlines the computation named by attribute `attr` of `inst` (`call`, `fusion`).
    pub(crate) fn inline(&mut self, inst: &Instruction, callee: &str, args: Vec<Tree>) -> Lowered {
        let ci = self.callee(inst, callee)?;
        match self.computation(ci, args) {
            Some(t) => self.check_tree(inst, t),
            // The callee's problems are reported; this instruction is poisoned silently.
            None => Err(Problem {
                pos: inst.pos,
                kind: ErrorKind::Invalid,
                message: String::new(),
            }),
        }
    }

    /// The index of computation `callee`, which `inst` calls (inlined, or as a region of
    /// control flow): an error if it is unknown, already being converted (recursion) or
    /// nested too deep.
    pub(crate) fn callee(&self, inst: &Instruction, callee: &str) -> Result<usize, Problem> {
        let Some((ci, _)) = self.m.computation(callee) else {
            return Err(invalid(
                inst.pos,
                format!("%{} calls unknown computation '{callee}'", inst.name),
            ));
        };
        if self.active.contains(&ci) {
            return Err(invalid(
                inst.pos,
                format!("%{} calls '{callee}' recursively", inst.name),
            ));
        }
        if self.active.len() >= MAX_CALL_DEPTH {
            return Err(unsupported(
                inst.pos,
                format!(
                    "calls nested deeper than {MAX_CALL_DEPTH} at %{}",
                    inst.name
                ),
            ));
        }
        Ok(ci)
    }

    /// The declared shape of instruction `name` of the computation being converted.
    pub(crate) fn declared_shape(&self, name: &str) -> Option<&'m Shape> {
        let m: &'m HloModule = self.m;
        let comp = &m.computations[*self.active.last()?];
        comp.instructions
            .iter()
            .find(|i| i.name == name)
            .map(|i| &i.shape)
    }

    /// `t`, if its types are those `inst` declares.
    pub(crate) fn check_tree(&self, inst: &Instruction, t: Tree) -> Lowered {
        let mut declared = Vec::new();
        literal::leaf_types(&inst.shape, &mut declared)
            .map_err(|m| unsupported(inst.pos, format!("{m} in %{}", inst.name)))?;
        let mut leaves = Vec::new();
        t.leaves(&mut leaves);
        let actual: Vec<TensorType> = leaves.iter().map(|v| self.f.ty(*v).clone()).collect();
        if actual != declared || !same_structure(&t, &inst.shape) {
            let shown: Vec<String> = actual.iter().map(|t| t.to_string()).collect();
            return Err(invalid(
                inst.pos,
                format!(
                    "%{} is declared {} but its value is ({})",
                    inst.name,
                    inst.shape,
                    shown.join(", ")
                ),
            ));
        }
        Ok(t)
    }
}

fn same_structure(t: &Tree, s: &Shape) -> bool {
    match (t, s) {
        (Tree::Leaf(_), Shape::Array(_)) => true,
        (Tree::Tuple(ts), Shape::Tuple(ss)) => {
            ts.len() == ss.len() && ts.iter().zip(ss).all(|(t, s)| same_structure(t, s))
        }
        _ => false,
    }
}

/// The instructions reachable from the ROOT, each after its operands, with the indices of
/// its operands. Iterative, so a long chain does not overflow the stack.
type Order = Vec<(usize, Vec<usize>)>;

fn order(comp: &Computation) -> Result<Order, Problem> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, inst) in comp.instructions.iter().enumerate() {
        if index.insert(inst.name.as_str(), i).is_some() {
            return Err(invalid(
                inst.pos,
                format!("'{}' is defined twice", inst.name),
            ));
        }
    }
    let mut operand_ids: Vec<Vec<usize>> = Vec::with_capacity(comp.instructions.len());
    for inst in &comp.instructions {
        let mut ids = Vec::new();
        for op in inst.operand_refs() {
            match index.get(op.name.as_str()) {
                Some(&k) => ids.push(k),
                None => {
                    return Err(invalid(
                        op.pos,
                        format!(
                            "%{} uses '{}', which is not defined in %{}",
                            inst.name, op.name, comp.name
                        ),
                    ))
                }
            }
        }
        operand_ids.push(ids);
    }
    // 0: unvisited, 1: on the stack, 2: done.
    let mut state = vec![0u8; comp.instructions.len()];
    let mut out = Vec::new();
    let mut stack = vec![(comp.root, 0usize)];
    state[comp.root] = 1;
    while let Some(&mut (i, ref mut next)) = stack.last_mut() {
        if let Some(&k) = operand_ids[i].get(*next) {
            *next += 1;
            match state[k] {
                0 => {
                    state[k] = 1;
                    stack.push((k, 0));
                }
                1 => {
                    let inst = &comp.instructions[k];
                    return Err(invalid(
                        inst.pos,
                        format!("%{} depends on itself", inst.name),
                    ));
                }
                _ => {}
            }
        } else {
            state[i] = 2;
            out.push((i, std::mem::take(&mut operand_ids[i])));
            stack.pop();
        }
    }
    Ok(out)
}
