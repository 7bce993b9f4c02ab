//! Kernel IR: the backend-neutral form of a compiled cluster (design.md, "Kernel IR").
//!
//! A [`Program`] is a list of [`Kernel`]s run in order. Each kernel is a loop nest over an
//! iteration space (`space`, the kept dimensions, size-1 dimensions already dropped) and,
//! optionally, one [`Reduction`] over an inner sequence in the canonical order of
//! Invariant 2. Values are a scalar expression DAG ([`Node`]); loads address buffers through
//! index expressions ([`IExpr`]) over the loop variables, so broadcast, transpose, reshape,
//! slice, concat, pad and iota are index arithmetic, never copies. Stores write node values
//! at the row-major position of the iteration point.
//!
//! Deliberately not here: anything about machine code, vector widths or threads; a backend
//! decides those, and no choice it makes may change a result.

pub mod analysis;
mod collapse;
mod epilogue;
mod gemm_operands;
pub mod half;
mod indices;
pub mod narrow;
mod parse;
pub mod pipeline;
mod print;
mod share;
mod split;
mod tile;
mod verify;

use kiln_ir::{
    BinaryOp, CompareDir, DType, RandomAlg, RandomDist, ReduceKind, Tensor, TensorType, UnaryOp,
};
use serde::{Deserialize, Serialize};

pub use analysis::operands;
pub use collapse::{collapse_leading_dims, flatten_kernel};
pub use epilogue::fuse_epilogues;
pub use gemm_operands::gemm_reads_16_bit_operands;
pub use indices::simplify_indices;
/// The canonical reduction order (design.md, Invariant 2), defined once by the reference
/// semantics: [`LANES`] lane accumulators, chunks of [`CHUNK`], the pairwise [`TREE`].
pub use kiln_interp::reduce::{CHUNK, LANES, TREE};
pub use parse::{parse_program, KirParseError};
pub use print::print_program;
pub use share::shared_temps;
pub use split::split_long_reductions;
pub use tile::tile_rows;
pub use verify::{verify_program, VerifyError};

/// An index into [`Kernel::nodes`].
pub type NodeId = usize;

/// A buffer a kernel reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BufRef {
    /// The n-th cluster input (read only).
    Input(usize),
    /// The n-th cluster output.
    Output(usize),
    /// The n-th scratch buffer ([`Program::temps`]), written by an earlier kernel.
    Temp(usize),
    /// The n-th non-splat constant ([`Program::consts`]).
    Const(usize),
}

/// Integer index arithmetic over loop variables (`i64`, never overflowing for valid shapes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IExpr {
    /// Loop variable `v`: `v < space.len()` is a kept coordinate, `v == space.len()` the
    /// linear position in a reduction's sequence.
    Var(usize),
    /// A constant.
    Const(i64),
    /// Sum.
    Add(Box<IExpr>, Box<IExpr>),
    /// Product with a constant.
    Mul(Box<IExpr>, i64),
    /// Quotient by a positive constant (operands are never negative).
    Div(Box<IExpr>, i64),
    /// Remainder by a positive constant.
    Rem(Box<IExpr>, i64),
    /// Clamped into `[lo, hi]` (keeps the unselected arm of a concat/pad load in bounds).
    Clamp(Box<IExpr>, i64, i64),
    /// A data-dependent position: the integer element of `buf` (`i32`, `i64` or `u32`) at
    /// element offset `at`, widened to `i64` (`u32` without sign) and clamped into
    /// `[lo, hi]` — a `gather`'s or `dynamic_slice`'s start index, clamped as XLA clamps
    /// starts, so every address formed with it stays in bounds whatever the data. `buf` is
    /// an input, a constant or a scratch buffer an earlier kernel wrote, never one the
    /// kernel itself stores (`verify_program` checks it). Printed `load(BUF[at], lo, hi)`.
    Load {
        /// The buffer of indices.
        buf: BufRef,
        /// Element offset of the index in `buf`.
        at: Box<IExpr>,
        /// Inclusive lower bound of the result.
        lo: i64,
        /// Inclusive upper bound of the result.
        hi: i64,
    },
}

impl IExpr {
    /// `a + b`, folding constants.
    ///
    /// Also folds digits back together, for `x ≥ 0` (index expressions are never negative):
    /// `(x / (n·q))·(n·q) + ((x / q) % n)·q` is `(x / q)·q`, and with `q = 1`,
    /// `(x / n)·n + x % n` is `x` — what a reshape that splits a dimension followed by one
    /// that merges it back (or the row-major position of split coordinates) produces.
    pub fn sum(a: IExpr, b: IExpr) -> IExpr {
        if let (Some((x, p)), Some((y, q, n))) = (a.as_floor_multiple(), b.as_digit()) {
            if x == y && p == n * q {
                return IExpr::scaled(IExpr::quot(x.clone(), q), q);
            }
        }
        // `((x / q) % n)·q + x % q` is `x % (n·q)` (two digits of one number), either way round.
        for (hi, lo) in [(&a, &b), (&b, &a)] {
            if let (Some((x, q, n)), IExpr::Rem(y, r)) = (hi.as_digit(), lo) {
                if q > 1 && *r == q && x == y.as_ref() {
                    return IExpr::modulo(x.clone(), n * q);
                }
            }
        }
        match (a, b) {
            (IExpr::Const(0), e) | (e, IExpr::Const(0)) => e,
            (IExpr::Const(x), IExpr::Const(y)) => IExpr::Const(x + y),
            // `clamp(x, l, h) + c` is `clamp(x + c, l + c, h + c)`, which a clamp around it
            // folds into ([`IExpr::clamp`]): a concat's piece inside another concat.
            (IExpr::Clamp(x, l, h), IExpr::Const(c)) | (IExpr::Const(c), IExpr::Clamp(x, l, h)) => {
                IExpr::clamp(IExpr::sum(*x, IExpr::Const(c)), l + c, h + c)
            }
            // `(x + c) + d` is `x + (c + d)`.
            (IExpr::Add(x, c), IExpr::Const(d)) if matches!(*c, IExpr::Const(_)) => {
                let IExpr::Const(c) = *c else { unreachable!() };
                IExpr::sum(*x, IExpr::Const(c + d))
            }
            (a, b) => IExpr::Add(Box::new(a), Box::new(b)),
        }
    }

    /// `(x / p)·p` as `(x, p)`, `p ≥ 2`.
    fn as_floor_multiple(&self) -> Option<(&IExpr, i64)> {
        match self {
            IExpr::Mul(d, p) => match d.as_ref() {
                IExpr::Div(x, q) if q == p => Some((x, *p)),
                _ => None,
            },
            _ => None,
        }
    }

    /// `((x / q) % n)·q` as `(x, q, n)`, and `x % n` as `(x, 1, n)`.
    fn as_digit(&self) -> Option<(&IExpr, i64, i64)> {
        match self {
            IExpr::Rem(x, n) => Some((x, 1, *n)),
            IExpr::Mul(r, q) => match r.as_ref() {
                IExpr::Rem(d, n) => match d.as_ref() {
                    IExpr::Div(x, q2) if q2 == q => Some((x, *q, *n)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// `a * c`, folding constants.
    pub fn scaled(a: IExpr, c: i64) -> IExpr {
        match (a, c) {
            (_, 0) => IExpr::Const(0),
            (e, 1) => e,
            (IExpr::Const(x), c) => IExpr::Const(x * c),
            (a, c) => IExpr::Mul(Box::new(a), c),
        }
    }

    /// `a / c` for `c > 0`, folding constants.
    pub fn quot(a: IExpr, c: i64) -> IExpr {
        match (a, c) {
            (e, 1) => e,
            (IExpr::Const(x), c) => IExpr::Const(x / c),
            (a, c) => IExpr::Div(Box::new(a), c),
        }
    }

    /// `a % c` for `c > 0`, folding constants.
    pub fn modulo(a: IExpr, c: i64) -> IExpr {
        match (a, c) {
            (_, 1) => IExpr::Const(0),
            (IExpr::Const(x), c) => IExpr::Const(x % c),
            (a, c) => IExpr::Rem(Box::new(a), c),
        }
    }

    /// `a` clamped into `[lo, hi]`, folding constants and clamps of clamps: clamping into
    /// `[l, h]` and then into `[lo, hi]` is clamping into their intersection when they
    /// meet, and the nearer bound of `[lo, hi]` when they do not (a concat of concats
    /// nests one clamp per level otherwise: DenseNet's 24th layer had 24).
    pub fn clamp(a: IExpr, lo: i64, hi: i64) -> IExpr {
        match a {
            IExpr::Const(x) => IExpr::Const(x.clamp(lo, hi)),
            IExpr::Clamp(_, _, h) if h < lo => IExpr::Const(lo),
            IExpr::Clamp(_, l, _) if l > hi => IExpr::Const(hi),
            IExpr::Clamp(x, l, h) => IExpr::clamp(*x, lo.max(l), hi.min(h)),
            a => IExpr::Clamp(Box::new(a), lo, hi),
        }
    }

    /// The number of nodes of the expression tree.
    pub fn size(&self) -> usize {
        1 + match self {
            IExpr::Var(_) | IExpr::Const(_) => 0,
            IExpr::Add(a, b) => a.size() + b.size(),
            IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
                a.size()
            }
            IExpr::Load { at, .. } => at.size(),
        }
    }

    /// How the expression changes when variable `v` grows by one, if it is linear in `v`
    /// (`Some(0)`: it does not depend on `v`). Backends use it to pick contiguous, splat or
    /// gathered vector loads.
    pub fn coefficient(&self, v: usize) -> Option<i64> {
        match self {
            IExpr::Var(w) => Some(i64::from(*w == v)),
            IExpr::Const(_) => Some(0),
            IExpr::Add(a, b) => Some(a.coefficient(v)? + b.coefficient(v)?),
            IExpr::Mul(a, c) => Some(a.coefficient(v)? * c),
            IExpr::Div(a, _)
            | IExpr::Rem(a, _)
            | IExpr::Clamp(a, _, _)
            | IExpr::Load { at: a, .. } => (a.coefficient(v)? == 0).then_some(0),
        }
    }

    /// The value at the given variable values (for tests and the reference evaluator), with
    /// `load(buf, offset)` the raw integer element a [`IExpr::Load`] reads.
    pub fn eval_with(&self, vars: &[i64], load: &dyn Fn(BufRef, i64) -> i64) -> i64 {
        let e = |a: &IExpr| a.eval_with(vars, load);
        match self {
            IExpr::Var(v) => vars[*v],
            IExpr::Const(c) => *c,
            IExpr::Add(a, b) => e(a) + e(b),
            IExpr::Mul(a, c) => e(a) * c,
            IExpr::Div(a, c) => e(a) / c,
            IExpr::Rem(a, c) => e(a) % c,
            IExpr::Clamp(a, lo, hi) => e(a).clamp(*lo, *hi),
            IExpr::Load { buf, at, lo, hi } => load(*buf, e(at)).clamp(*lo, *hi),
        }
    }

    /// [`IExpr::eval_with`] for an expression without loads (a load reads as 0).
    pub fn eval(&self, vars: &[i64]) -> i64 {
        self.eval_with(vars, &|_, _| 0)
    }

    /// Every [`IExpr::Load`] in `self` (outermost first): its buffer and offset.
    pub fn loads(&self) -> Vec<(BufRef, &IExpr)> {
        let mut out = Vec::new();
        self.collect_loads(&mut out);
        out
    }

    /// Calls `f` on the buffer of every [`IExpr::Load`] in `self` (to renumber buffers).
    pub fn for_each_load_buf(&mut self, f: &mut dyn FnMut(&mut BufRef)) {
        match self {
            IExpr::Var(_) | IExpr::Const(_) => {}
            IExpr::Add(a, b) => {
                a.for_each_load_buf(f);
                b.for_each_load_buf(f);
            }
            IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
                a.for_each_load_buf(f)
            }
            IExpr::Load { buf, at, .. } => {
                f(buf);
                at.for_each_load_buf(f);
            }
        }
    }

    fn collect_loads<'e>(&'e self, out: &mut Vec<(BufRef, &'e IExpr)>) {
        match self {
            IExpr::Var(_) | IExpr::Const(_) => {}
            IExpr::Add(a, b) => {
                a.collect_loads(out);
                b.collect_loads(out);
            }
            IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
                a.collect_loads(out)
            }
            IExpr::Load { buf, at, .. } => {
                out.push((*buf, at));
                at.collect_loads(out);
            }
        }
    }
}

/// One scalar operation of a kernel's expression DAG. Operands are earlier nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeKind {
    /// The element of `buf` at element offset `offset`.
    Load {
        /// The buffer.
        buf: BufRef,
        /// Element offset (row-major position in the buffer).
        offset: IExpr,
    },
    /// A constant, as the bits of the value in its dtype (bool: 0 or 1).
    Const(u64),
    /// An index value (iota), converted to the node's dtype.
    Index(IExpr),
    /// `lo <= e < hi` (bool): picks the arm of a concat or pad.
    InRange {
        /// The index tested.
        e: IExpr,
        /// Inclusive lower bound.
        lo: i64,
        /// Exclusive upper bound.
        hi: i64,
    },
    /// An elementwise unary op on the operand's dtype.
    Unary(UnaryOp, NodeId),
    /// An elementwise binary op (both operands of the node's dtype).
    Binary(BinaryOp, NodeId, NodeId),
    /// A comparison (bool result) of two operands of one dtype.
    Compare(CompareDir, NodeId, NodeId),
    /// `pred ? a : b`.
    Select(NodeId, NodeId, NodeId),
    /// A dtype conversion with XLA's rules (those of `kiln_interp`).
    Convert(NodeId),
    /// The result of the kernel's reduction for the current kept coordinates.
    ReduceResult,
    /// Element `index` (flat, row-major) of the stateless random op `dist`/`alg` whose seed
    /// elements are `seed` (the `i64[2]` seed, or the `i64[3]` generator state
    /// `[counter_lo, counter_hi, key]` of `alg=philox_state`): the node's dtype is the op's
    /// element type. The seed nodes are
    /// loop-invariant (they use no loop variable and no reduction result), so a backend
    /// scrambles the seed once per kernel call; the value is that of `kiln_rng`'s generic
    /// code for the element (design.md, "Random numbers"), e.g. Philox group `index / 4`,
    /// word `index % 4` for `f32` outputs.
    Random {
        /// The distribution.
        dist: RandomDist,
        /// The generator.
        alg: RandomAlg,
        /// The `i64` seed elements, in order.
        seed: Vec<NodeId>,
        /// The flat row-major position of the element in the random op's shape.
        index: IExpr,
    },
}

/// A DAG node: an operation and the dtype it produces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Node {
    /// The operation.
    pub kind: NodeKind,
    /// The result dtype.
    pub dtype: DType,
}

/// A reduction stage: `value` (which may use the sequence variable `Var(space.len())`) is
/// combined over `len` positions in the canonical order of Invariant 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reduction {
    /// The combining function.
    pub kind: ReduceKind,
    /// Number of reduced elements per kept point.
    pub len: usize,
    /// The node reduced (evaluated once per sequence position).
    pub value: NodeId,
}

/// A write of a node's value to the row-major position of the iteration point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Store {
    /// The buffer written (an output or a temp).
    pub buf: BufRef,
    /// The value stored.
    pub value: NodeId,
}

/// One loop nest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// Name, unique in its program (`k0`, `k1`, …).
    pub name: String,
    /// Extents of the kept loop variables, outermost first; none is 1.
    pub space: Vec<usize>,
    /// The scalar DAG, in definition order.
    pub nodes: Vec<Node>,
    /// The optional reduction stage; its result is [`NodeKind::ReduceResult`].
    pub reduce: Option<Reduction>,
    /// What the kernel writes.
    pub stores: Vec<Store>,
}

/// The most transcendental ops ([`Kernel::math_ops`]) one kernel may have; backends refuse
/// a kernel with more, so it runs on the fallback. Each such op is a block-math call with a
/// window of stack, or hundreds of inline instructions: a chain of thousands in one cluster
/// would overflow a thread's stack or take minutes to compile (a 12000-op chain emitted
/// 564 MB of PTX; 1000 chained `pow`s took 25 s in Cranelift).
pub const MAX_MATH_OPS: usize = 256;

impl Kernel {
    /// The transcendental ops ([`UnaryOp::is_transcendental`], and `pow`): each
    /// is dozens to hundreds of instructions, where other nodes are one or a few.
    pub fn math_ops(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| match n.kind {
                NodeKind::Unary(op, _) => op.is_transcendental(),
                NodeKind::Binary(op, _, _) => op == kiln_ir::BinaryOp::Pow,
                _ => false,
            })
            .count()
    }

    /// Number of kept iteration points.
    pub fn points(&self) -> usize {
        self.space.iter().product()
    }

    /// The buffers and offsets of every data-dependent position ([`IExpr::Load`]) in the
    /// kernel's index expressions.
    pub fn index_loads(&self) -> Vec<(BufRef, &IExpr)> {
        self.nodes
            .iter()
            .filter_map(|n| analysis::index_expr(&n.kind))
            .flat_map(IExpr::loads)
            .collect()
    }

    /// Whether any node draws random numbers.
    pub fn has_random(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| matches!(n.kind, NodeKind::Random { .. }))
    }
}

/// A lowered cluster: kernels run in order over the cluster's buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// The cluster name (`cluster_3`).
    pub name: String,
    /// Types of the inputs.
    pub inputs: Vec<TensorType>,
    /// Types of the outputs.
    pub outputs: Vec<TensorType>,
    /// Types of scratch buffers between kernels.
    pub temps: Vec<TensorType>,
    /// Non-splat constants, addressed by [`BufRef::Const`]: the function's own tensors,
    /// shared (not copied), so a frozen graph's weights exist once in memory.
    pub consts: Vec<std::sync::Arc<Tensor>>,
    /// The kernels, in execution order.
    pub kernels: Vec<Kernel>,
    /// Matrix products, each run (through the interpreter's GEMM) before kernel `before`.
    pub dots: Vec<DotCall>,
    /// Random ops that are whole cluster outputs, filled before any kernel runs.
    pub fills: Vec<RandomFill>,
}

impl Program {
    /// Replaces kernels `range` by `with`, keeping every matrix product where it was in the
    /// run order: a dot that ran before a kernel after `range` still runs before that
    /// kernel, and one that ran before the first replaced kernel runs before the first of
    /// `with`. Every rewrite that adds or removes kernels goes through here; a dot's
    /// position is an index into [`Program::kernels`], and shifting the kernels under it
    /// without moving it would run the dot before its operands exist.
    ///
    /// A dot positioned strictly inside `range` has no place in `with` that this method
    /// could know: the caller must not replace such a range (checked).
    /// Returns the kernels replaced.
    pub fn replace_kernels(
        &mut self,
        range: std::ops::Range<usize>,
        with: Vec<Kernel>,
    ) -> Vec<Kernel> {
        assert!(
            !self
                .dots
                .iter()
                .any(|d| d.before > range.start && d.before < range.end),
            "a dot runs between the kernels being replaced"
        );
        let (removed, added) = (range.len(), with.len());
        for d in &mut self.dots {
            // (`before > start` as well: a dot right at an empty range stays before `with`.)
            if d.before >= range.end && d.before > range.start {
                d.before = d.before - removed + added;
            }
        }
        self.kernels.splice(range, with).collect()
    }
}

/// A `random_*` op that is a cluster output, computed by the same host fill as the
/// interpreter (`kiln_rng`'s vectorised, parallel fills: the same generic Philox/ThreeFry
/// code, so the same bits as a fused [`NodeKind::Random`] node) straight into its output.
/// A random op that feeds other ops is fused into their kernels instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomFill {
    /// The distribution.
    pub dist: kiln_ir::RandomDist,
    /// The generator.
    pub alg: kiln_ir::RandomAlg,
    /// The seed (or generator state): an input or a constant.
    pub seed: BufRef,
    /// The output written (its type is the op's).
    pub out: usize,
}

/// A contraction step: `out = dot_general(lhs, rhs)` or `out = convolution(lhs, rhs)`,
/// computed by the same routine as the interpreter (its GEMM, or its convolution built on
/// that GEMM), so the bits match it for the same thread count; its elementwise epilogue
/// (bias, activation, batch norm) is fused into the kernels that read `out`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DotCall {
    /// Runs before kernel number `before`.
    pub before: usize,
    /// Left operand (an input or a scratch buffer).
    pub lhs: BufRef,
    /// Right operand (an input or a scratch buffer).
    pub rhs: BufRef,
    /// The contraction and its dimension numbers.
    pub op: Contraction,
    /// The scratch buffer receiving the product.
    pub out: usize,
}

/// What a [`DotCall`] computes: the two ops the interpreter runs through its GEMM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Contraction {
    /// `dot_general` with these dimension numbers.
    Dot(kiln_ir::DotDims),
    /// A float `convolution` (im2col + the GEMM, or the depthwise loop).
    Convolution(Box<kiln_ir::Convolution>),
}

impl Contraction {
    /// The IR op this step evaluates.
    pub fn to_op(&self) -> kiln_ir::Op {
        match self {
            Contraction::Dot(d) => kiln_ir::Op::DotGeneral(d.clone()),
            Contraction::Convolution(c) => kiln_ir::Op::Convolution(c.clone()),
        }
    }
}

/// Row fusion: when every kernel iterates over the same leading dimension (`rows` ≥ 2) and
/// reads only its own row of every scratch buffer, the kernels can run row by row — all
/// of them for one row (or block of rows) before the next — so each row is read from memory
/// once and the scratch rows stay in cache (CPU) or shared memory (GPU). Softmax, layer
/// norm and log-softmax lower to such programs. Returns `rows`; `None` for programs with
/// matrix products or a single kernel. Backends add their own limits (block sizes, memory).
pub fn row_fusion(p: &Program) -> Option<usize> {
    if p.kernels.len() < 2 || !p.dots.is_empty() {
        return None;
    }
    let d0 = *p.kernels[0].space.first()?;
    if d0 < 2 || p.kernels.iter().any(|k| k.space.first() != Some(&d0)) {
        return None;
    }
    for k in &p.kernels {
        // A data-dependent position may read any row of a scratch buffer.
        if k.index_loads()
            .iter()
            .any(|(b, _)| matches!(b, BufRef::Temp(_)))
        {
            return None;
        }
        for n in &k.nodes {
            if let NodeKind::Load {
                buf: BufRef::Temp(t),
                offset,
            } = &n.kind
            {
                let row = p.temps[*t].num_elements() / d0;
                if offset.coefficient(0) != Some(row as i64) {
                    return None;
                }
                let (lo, hi) = range(&without_var0(offset), k)?;
                if lo < 0 || hi >= row as i64 {
                    return None;
                }
            }
        }
    }
    Some(d0)
}

/// `e` with loop variable 0 replaced by 0.
fn without_var0(e: &IExpr) -> IExpr {
    split::substitute(e, 0, &IExpr::Const(0))
}

/// Bounds of `e` over the kernel's loop ranges (interval arithmetic).
pub(super) fn range(e: &IExpr, k: &Kernel) -> Option<(i64, i64)> {
    Some(match e {
        IExpr::Var(v) => {
            let ext = match k.space.get(*v) {
                Some(&n) => n,
                None => k.reduce.as_ref()?.len,
            };
            (0, ext as i64 - 1)
        }
        IExpr::Const(c) => (*c, *c),
        IExpr::Add(a, b) => {
            let (a, b) = (range(a, k)?, range(b, k)?);
            (a.0 + b.0, a.1 + b.1)
        }
        IExpr::Mul(a, c) => {
            let (lo, hi) = range(a, k)?;
            let (x, y) = (lo * c, hi * c);
            (x.min(y), x.max(y))
        }
        IExpr::Div(a, c) => {
            let (lo, hi) = range(a, k)?;
            if lo < 0 {
                return None;
            }
            (lo / c, hi / c)
        }
        IExpr::Rem(a, c) => {
            let (lo, _) = range(a, k)?;
            if lo < 0 {
                return None;
            }
            (0, c - 1)
        }
        IExpr::Clamp(a, lo, hi) => {
            let (x, y) = range(a, k)?;
            (x.clamp(*lo, *hi), y.clamp(*lo, *hi))
        }
        IExpr::Load { lo, hi, .. } => (*lo, *hi),
    })
}

/// What `convert` knows a dtype as ([`kiln_math::convert`], XLA's rules written once for
/// both backends); `None` for a dtype without compiled conversions.
pub fn convert_num(dt: DType) -> Option<kiln_math::Num> {
    use kiln_math::Num;
    Some(match dt {
        DType::F32 => Num::F32,
        DType::F64 => Num::F64,
        DType::I32 => Num::I32,
        DType::I64 => Num::I64,
        DType::U32 => Num::U32,
        DType::Bool => Num::Bool,
        DType::U64 | DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::F16 | DType::Bf16 => {
            return None
        }
    })
}

/// How the seed elements of a random op with generator `alg` name its stream.
pub fn seed_kind(alg: kiln_ir::RandomAlg) -> kiln_rng::SeedKind {
    match alg {
        kiln_ir::RandomAlg::Philox => kiln_rng::SeedKind::Stateless,
        kiln_ir::RandomAlg::PhiloxState => kiln_rng::SeedKind::GeneratorState,
        kiln_ir::RandomAlg::Threefry => kiln_rng::SeedKind::Threefry,
    }
}

/// Element `(hi, lo)` of JAX's ThreeFry stream under `key`, as `dist` producing `dt`: the
/// raw bits, or one of `kiln_rng::jax`'s mappings. Written once over [`kiln_math::Arith`]
/// for every backend whose words and floats are one register type (Cranelift values, PTX
/// registers); the backend supplies the key and counter words.
pub fn threefry_element<A, T>(
    a: &mut A,
    dist: kiln_ir::RandomDist,
    dt: DType,
    key: [T; 2],
    hi: T,
    lo: T,
) -> Result<T, String>
where
    A: kiln_math::Arith<F = T, U = T>,
    T: Copy,
{
    use kiln_ir::RandomDist;
    use kiln_rng::jax;
    let bits = jax::bits_element(a, key, hi, lo);
    Ok(match (dist, dt) {
        (RandomDist::Bits, DType::U32) => bits,
        (RandomDist::Uniform, DType::F32) => jax::uniform_from_bits_f32(a, bits),
        (RandomDist::Normal, DType::F32) => jax::normal_from_bits_f32(a, bits),
        (RandomDist::TruncatedNormal, DType::F32) => jax::truncated_normal_from_bits_f32(a, bits),
        _ => {
            return Err(format!(
                "{} with alg=threefry cannot produce {dt}",
                dist.name()
            ))
        }
    })
}

/// The dtype of a buffer.
pub fn buf_dtype(p: &Program, b: BufRef) -> DType {
    match b {
        BufRef::Input(i) => p.inputs[i].dtype,
        BufRef::Output(i) => p.outputs[i].dtype,
        BufRef::Temp(i) => p.temps[i].dtype,
        BufRef::Const(i) => p.consts[i].dtype(),
    }
}
