//! Reductions (`reduce_sum`, `reduce_max`, `reduce_min`, `reduce_prod`) in the canonical
//! order of design.md's Invariant 2.
//!
//! # The canonical order (the contract every backend reproduces)
//!
//! For one output element, the reduced elements, taken in row-major order over the reduced
//! axes, form a sequence `x_0 … x_{n-1}`. Its result is `canonical(x)`:
//!
//! - if `n ≤ C` (`C` = [`CHUNK`] = 4096): [`LANES`] = 32 lane accumulators start at the
//!   identity; element `i` is folded into lane `i mod 32`, in index order
//!   (`p[i mod 32] = op(p[i mod 32], x_i)`); then a fixed pairwise tree:
//!   for `s` in `[16, 8, 4, 2, 1]`, for `j < s`: `p[j] = op(p[j], p[j + s])`; the result is
//!   `p[0]`;
//! - if `n > C`: split `x` into consecutive chunks of `C` elements (the last may be shorter),
//!   reduce each chunk by the rule above, and apply `canonical` to the sequence of chunk
//!   results (recursively, so any `n` works).
//!
//! Identities: [`ReduceKind::identity`] (XLA's init values: sum `+0.0`, so a sum of `-0.0`s
//! is `+0.0` as in XLA; product `1`; max `-inf` / the type's minimum / `false`; min `+inf` /
//! the type's maximum / `true`). An empty reduction gives the identity. Float max/min are XLA's (NaN-propagating,
//! `max(-0, +0) = +0`, `min(-0, +0) = -0`). NaN payloads are not part of the contract.
//!
//! [`canonical_reduce_ref`] is the literal transcription of this definition, used by tests.
//!
//! # How the interpreter computes it
//!
//! The order depends only on `n`, so the fast paths below are free to vectorise and thread:
//!
//! - the reduced axes innermost and contiguous (`[outer, n]`): per output, a `[T; 32]`
//!   accumulator array updated from 32-element slices (32 independent accumulators, which
//!   LLVM vectorises), then the tree; outputs are split across the pool, and a long 1-D
//!   reduction is split on chunk boundaries (chunks of `C` are independent by definition);
//! - the reduced axes in the middle or outermost (`[pre, n, post]`): 32 accumulator *rows*
//!   of a block of the kept inner dimension (row `i` goes to accumulator row `i mod 32`,
//!   vectorised along the contiguous kept dimension), then the tree over rows; `pre` and the
//!   column blocks are split across the pool;
//! - any other layout is first transposed to `[kept…, reduced…]` (both in their original
//!   order, so the sequence per output is unchanged), then reduced as the first case.
//!
//! Lanes that received no element hold the identity, and `op(x, identity) = x`, so the tree
//! may skip them; this changes no result. Nothing depends on the thread count.
//!
//! Deliberately not here: Kahan or pairwise-over-everything summation. The order above is
//! the one every backend can compute at full speed.

use crate::hw::simd;
use crate::par::{BLOCK, PAR_MIN};
use crate::scalar::{fmax, fmin, Elem, Float, Int};
use crate::shape::{gather, View};
use kiln_ir::{row_major_strides, Buffer, ReduceKind, Scalar};
use rayon::prelude::*;

/// Number of lane accumulators of the canonical order.
pub const LANES: usize = 32;

/// Chunk length of the canonical order: longer sequences are reduced chunk by chunk.
pub const CHUNK: usize = 4096;

/// Strides of the final pairwise tree over the lanes, in order: `p[j] = op(p[j], p[j + s])`
/// for each `s`, for `j < s`. Every backend runs exactly these steps.
pub const TREE: [usize; 5] = [16, 8, 4, 2, 1];

// The tree halves the lanes down to one.
const _: () = assert!(TREE[0] * 2 == LANES && TREE[TREE.len() - 1] == 1);

/// Bytes of the 32 accumulator rows of an outer-axis reduction: they stay in L2 while the
/// reduced rows stream past, and each row is read in runs long enough to prefetch well.
const ACC_BYTES: usize = 256 << 10;

/// The canonical reduction of `xs`, written as literally as possible. Slow; the reference
/// the fast paths are tested against.
pub fn canonical_reduce_ref<T: Copy>(xs: &[T], identity: T, op: impl Fn(T, T) -> T + Copy) -> T {
    if xs.len() > CHUNK {
        let partials: Vec<T> = xs
            .chunks(CHUNK)
            .map(|c| canonical_reduce_ref(c, identity, op))
            .collect();
        return canonical_reduce_ref(&partials, identity, op);
    }
    let mut p = [identity; LANES];
    for (i, &x) in xs.iter().enumerate() {
        p[i % LANES] = op(p[i % LANES], x);
    }
    for s in TREE {
        for j in 0..s {
            p[j] = op(p[j], p[j + s]);
        }
    }
    p[0]
}

/// A combining function with its identity; `op` is a closure so every use is monomorphised.
#[derive(Clone, Copy)]
struct Monoid<T, F> {
    id: T,
    op: F,
}

/// Reduces `a` (of `shape`) over `axes` with `kind`.
pub(crate) fn reduce(
    kind: ReduceKind,
    a: &Buffer,
    shape: &[usize],
    axes: &[usize],
) -> Result<Buffer, String> {
    let id = kind
        .identity(a.dtype())
        .ok_or_else(|| format!("{} is not defined for {}", kind.name(), a.dtype()))?;
    Ok(match (a, id) {
        (Buffer::F32(v), Scalar::F32(id)) => Buffer::F32(reduce_float(kind, id, v, shape, axes)),
        (Buffer::F64(v), Scalar::F64(id)) => Buffer::F64(reduce_float(kind, id, v, shape, axes)),
        (Buffer::I32(v), Scalar::I32(id)) => Buffer::I32(reduce_int(kind, id, v, shape, axes)),
        (Buffer::I64(v), Scalar::I64(id)) => Buffer::I64(reduce_int(kind, id, v, shape, axes)),
        (Buffer::U32(v), Scalar::U32(id)) => Buffer::U32(reduce_int(kind, id, v, shape, axes)),
        (Buffer::Bool(v), Scalar::Bool(id)) => Buffer::Bool(match kind {
            ReduceKind::Max => reduce_with(v, shape, axes, monoid(id, |a: bool, b| a | b)),
            _ => reduce_with(v, shape, axes, monoid(id, |a: bool, b| a & b)),
        }),
        (a, id) => unreachable!("identity {id:?} for a {} buffer", a.dtype()),
    })
}

fn monoid<T, F: Fn(T, T) -> T>(id: T, op: F) -> Monoid<T, F> {
    Monoid { id, op }
}

fn reduce_float<T: Float>(
    kind: ReduceKind,
    id: T,
    v: &[T],
    shape: &[usize],
    axes: &[usize],
) -> Vec<T> {
    match kind {
        ReduceKind::Sum => reduce_with(v, shape, axes, monoid(id, |a: T, b| a + b)),
        ReduceKind::Prod => reduce_with(v, shape, axes, monoid(id, |a: T, b| a * b)),
        ReduceKind::Max => reduce_with(v, shape, axes, monoid(id, fmax::<T>)),
        ReduceKind::Min => reduce_with(v, shape, axes, monoid(id, fmin::<T>)),
    }
}

fn reduce_int<T: Int>(kind: ReduceKind, id: T, v: &[T], shape: &[usize], axes: &[usize]) -> Vec<T> {
    match kind {
        ReduceKind::Sum => reduce_with(v, shape, axes, monoid(id, T::add)),
        ReduceKind::Prod => reduce_with(v, shape, axes, monoid(id, T::mul)),
        ReduceKind::Max => reduce_with(v, shape, axes, monoid(id, Ord::max)),
        ReduceKind::Min => reduce_with(v, shape, axes, monoid(id, Ord::min)),
    }
}

/// The memory layout of a reduction after dropping size-1 dimensions and merging
/// neighbours of the same kind (kept or reduced).
#[derive(Debug, PartialEq)]
enum Plan {
    /// Every output is one element of the input, combined with the identity only.
    Copy,
    /// `[outer, n]`, reducing the contiguous inner `n`.
    Inner { outer: usize, n: usize },
    /// `[pre, n, post]`, reducing the middle `n`.
    Outer { pre: usize, n: usize, post: usize },
    /// Anything else: transpose to `[kept…, reduced…]` first.
    Transpose,
}

fn plan(shape: &[usize], axes: &[usize]) -> Plan {
    // (size, reduced?) groups
    let mut groups: Vec<(usize, bool)> = Vec::new();
    for (i, &d) in shape.iter().enumerate() {
        let red = axes.contains(&i);
        if d == 1 {
            continue;
        }
        match groups.last_mut() {
            Some((size, r)) if *r == red => *size *= d,
            _ => groups.push((d, red)),
        }
    }
    match groups.as_slice() {
        [] | [(_, false)] => Plan::Copy,
        [(n, true)] => Plan::Inner { outer: 1, n: *n },
        [(outer, false), (n, true)] => Plan::Inner {
            outer: *outer,
            n: *n,
        },
        // A narrow kept inner dimension is cheaper to transpose than to stream as rows.
        [(n, true), (post, false)] if *post >= 16 => Plan::Outer {
            pre: 1,
            n: *n,
            post: *post,
        },
        [(pre, false), (n, true), (post, false)] if *post >= 16 => Plan::Outer {
            pre: *pre,
            n: *n,
            post: *post,
        },
        _ => Plan::Transpose,
    }
}

fn reduce_with<T, F>(v: &[T], shape: &[usize], axes: &[usize], m: Monoid<T, F>) -> Vec<T>
where
    T: Elem,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    let n_out: usize = (0..shape.len())
        .filter(|i| !axes.contains(i))
        .map(|i| shape[i])
        .product();
    let n_red: usize = axes.iter().map(|&a| shape[a]).product();
    if n_out == 0 {
        return Vec::new();
    }
    if n_red == 0 {
        return vec![m.id; n_out];
    }
    match plan(shape, axes) {
        // One element per output: `op(identity, x)`, which is `x` except for a sum's `-0.0`
        // (`+0.0 + -0.0 = +0.0`).
        Plan::Copy => v.iter().map(|&x| (m.op)(m.id, x)).collect(),
        Plan::Inner { outer, n } => reduce_inner(v, outer, n, m),
        Plan::Outer { pre, n, post } => reduce_outer(v, pre, n, post, m),
        Plan::Transpose => {
            let strides = row_major_strides(shape);
            let order: Vec<usize> = (0..shape.len())
                .filter(|i| !axes.contains(i))
                .chain((0..shape.len()).filter(|i| axes.contains(i)))
                .collect();
            let view = View {
                dims: order.iter().map(|&i| shape[i]).collect(),
                strides: order.iter().map(|&i| strides[i]).collect(),
                base: 0,
            };
            reduce_inner(&gather(v, &view), n_out, n_red, m)
        }
    }
}

/// `[outer, n]` -> `[outer]`.
fn reduce_inner<T, F>(v: &[T], outer: usize, n: usize, m: Monoid<T, F>) -> Vec<T>
where
    T: Elem,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    if outer == 1 {
        return vec![reduce_contiguous(v, m)];
    }
    let mut out = vec![m.id; outer];
    let rows = |first: usize, o: &mut [T]| {
        for (k, o) in o.iter_mut().enumerate() {
            let r = first + k;
            *o = reduce_contiguous(&v[r * n..(r + 1) * n], m);
        }
    };
    if outer * n < PAR_MIN {
        rows(0, &mut out);
    } else {
        let per_task = BLOCK.div_ceil(n).max(1);
        out.par_chunks_mut(per_task)
            .enumerate()
            .for_each(|(t, o)| rows(t * per_task, o));
    }
    out
}

/// `canonical(xs)` for a contiguous sequence; chunks of a long one are reduced in parallel.
fn reduce_contiguous<T, F>(xs: &[T], m: Monoid<T, F>) -> T
where
    T: Elem,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    if xs.len() <= CHUNK {
        return simd!(reduce_chunk(xs, m));
    }
    let partials: Vec<T> = if xs.len() >= PAR_MIN {
        xs.par_chunks(CHUNK)
            .map(|c| simd!(reduce_chunk(c, m)))
            .collect()
    } else {
        xs.chunks(CHUNK)
            .map(|c| simd!(reduce_chunk(c, m)))
            .collect()
    };
    reduce_contiguous(&partials, m)
}

/// `canonical(xs)` for `xs.len() ≤ CHUNK`.
#[inline(always)]
fn reduce_chunk<T, F>(xs: &[T], m: Monoid<T, F>) -> T
where
    T: Elem,
    F: Fn(T, T) -> T + Copy,
{
    let op = m.op;
    let mut p = [m.id; LANES];
    let mut blocks = xs.chunks_exact(LANES);
    for block in &mut blocks {
        for (acc, &x) in p.iter_mut().zip(block) {
            *acc = op(*acc, x);
        }
    }
    for (acc, &x) in p.iter_mut().zip(blocks.remainder()) {
        *acc = op(*acc, x);
    }
    let mut live = xs.len().min(LANES);
    for s in TREE {
        // Lanes at or past `live` hold the identity: combining with them changes nothing.
        for j in 0..s.min(live.saturating_sub(s)) {
            p[j] = op(p[j], p[j + s]);
        }
        live = live.min(s);
    }
    p[0]
}

/// `[pre, n, post]` -> `[pre, post]`.
fn reduce_outer<T, F>(v: &[T], pre: usize, n: usize, post: usize, m: Monoid<T, F>) -> Vec<T>
where
    T: Elem,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    let mut out = vec![m.id; pre * post];
    // Columns are independent, so the block width changes speed, never results: as wide as
    // the accumulator budget allows, narrower when needed to give every thread work.
    let max_width = (ACC_BYTES / (LANES * std::mem::size_of::<T>())).max(64);
    let blocks_per_row = rayon::current_num_threads().div_ceil(pre);
    let width = post
        .div_ceil(blocks_per_row)
        .next_multiple_of(64)
        .clamp(64, max_width);
    let block = |p: usize, cb: usize, o: &mut [T]| {
        let cols = Cols {
            base: p * n * post + cb * width,
            stride: post,
            width: o.len(),
        };
        reduce_rows(v, cols, n, m, o);
    };
    if pre * n * post < PAR_MIN {
        for (p, row) in out.chunks_mut(post).enumerate() {
            for (cb, o) in row.chunks_mut(width).enumerate() {
                block(p, cb, o);
            }
        }
    } else {
        out.par_chunks_mut(post).enumerate().for_each(|(p, row)| {
            row.par_chunks_mut(width)
                .enumerate()
                .for_each(|(cb, o)| block(p, cb, o))
        });
    }
    out
}

/// A block of `width` columns of rows that start `stride` apart: row `i` is
/// `v[base + i·stride ..][..width]`.
#[derive(Clone, Copy)]
struct Cols {
    base: usize,
    stride: usize,
    width: usize,
}

/// Column-wise `canonical` of `n` rows of `cols`, written to `out` (`width` elements).
fn reduce_rows<T, F>(v: &[T], cols: Cols, n: usize, m: Monoid<T, F>, out: &mut [T])
where
    T: Elem,
    F: Fn(T, T) -> T + Copy + Send + Sync,
{
    if n <= CHUNK {
        return simd!(reduce_rows_chunk(v, cols, n, m, out));
    }
    // Chunk results form a new [chunks, width] matrix, reduced the same way.
    let w = cols.width;
    let chunks = n.div_ceil(CHUNK);
    let mut partials = vec![m.id; chunks * w];
    let chunk = |k: usize, o: &mut [T]| {
        let rows = CHUNK.min(n - k * CHUNK);
        let sub = Cols {
            base: cols.base + k * CHUNK * cols.stride,
            ..cols
        };
        simd!(reduce_rows_chunk(v, sub, rows, m, o));
    };
    if n * w >= PAR_MIN {
        partials
            .par_chunks_mut(w)
            .enumerate()
            .for_each(|(k, o)| chunk(k, o));
    } else {
        for (k, o) in partials.chunks_mut(w).enumerate() {
            chunk(k, o);
        }
    }
    let next = Cols {
        base: 0,
        stride: w,
        width: w,
    };
    reduce_rows(&partials, next, chunks, m, out);
}

/// [`reduce_rows`] for `n ≤ CHUNK`: 32 accumulator rows, then the tree over rows.
#[inline(always)]
fn reduce_rows_chunk<T, F>(v: &[T], cols: Cols, n: usize, m: Monoid<T, F>, out: &mut [T])
where
    T: Elem,
    F: Fn(T, T) -> T + Copy,
{
    let op = m.op;
    let w = cols.width;
    let live_rows = n.min(LANES);
    let mut acc = vec![m.id; live_rows * w];
    for i in 0..n {
        let src = &v[cols.base + i * cols.stride..][..w];
        let dst = &mut acc[(i % LANES) * w..][..w];
        for (a, &x) in dst.iter_mut().zip(src) {
            *a = op(*a, x);
        }
    }
    let mut live = live_rows;
    for s in TREE {
        for j in 0..s.min(live.saturating_sub(s)) {
            let (lo, hi) = acc.split_at_mut((j + s) * w);
            for (a, &b) in lo[j * w..][..w].iter_mut().zip(&hi[..w]) {
                *a = op(*a, b);
            }
        }
        live = live.min(s);
    }
    out.copy_from_slice(&acc[..w]);
}

/// The float max or min of `src` (`kind` `Max` or `Min`; `None` for the others), with
/// XLA's semantics (NaN if any element is NaN, -0 < +0; `-inf` / `+inf` when empty). Both
/// are exact and order-free, so the result has the bits of any evaluation order — the
/// canonical one included — and compiled kernels hand a whole row to it: 32 accumulators
/// that the AVX2 build (see [`crate::hw`]) keeps in four 8-lane registers.
pub fn extremum_f32(kind: ReduceKind, src: &[f32]) -> Option<f32> {
    extremum(kind, src, f32::NEG_INFINITY, f32::INFINITY)
}

/// The `f64` version of [`extremum_f32`].
pub fn extremum_f64(kind: ReduceKind, src: &[f64]) -> Option<f64> {
    extremum(kind, src, f64::NEG_INFINITY, f64::INFINITY)
}

fn extremum<T: Float>(kind: ReduceKind, src: &[T], neg_inf: T, inf: T) -> Option<T> {
    match kind {
        ReduceKind::Max => Some(simd!({
            quick_extremum(src, neg_inf, |a, x| if a > x { a } else { x })
                .unwrap_or_else(|| fold_lanes(src, neg_inf, fmax::<T>))
        })),
        ReduceKind::Min => Some(simd!({
            quick_extremum(src, inf, |a, x| if a < x { a } else { x })
                .unwrap_or_else(|| fold_lanes(src, inf, fmin::<T>))
        })),
        ReduceKind::Sum | ReduceKind::Prod => None,
    }
}

/// [`crate::scalar_f32`] and [`extremum_f32`] in one pass: `out[i] = op(src[i], c)` (or
/// `op(out[i], c)` in place when `src` is `None`) while reducing `other` by `kind`, which
/// is returned. Bit for bit the two separate calls (each element of `out` is the same one
/// IEEE operation; the extremum is exact and order-free), but the two loops overlap: a
/// division is bound by the divider and a max over a row fresh from memory by loads, so
/// together they take little more than the slower of the two (the row-pipelined schedule
/// of compiled softmax: a row's division with the next row's max). `None`, with nothing
/// written, for an op outside [`crate::SCALAR_OPS`], a `kind` other than max or min, or
/// `src` and `out` of different lengths.
pub fn scalar_extremum_f32(
    op: kiln_ir::BinaryOp,
    src: Option<&[f32]>,
    c: f32,
    out: &mut [f32],
    kind: ReduceKind,
    other: &[f32],
) -> Option<f32> {
    scalar_extremum(
        op,
        src,
        c,
        out,
        kind,
        other,
        f32::NEG_INFINITY,
        f32::INFINITY,
    )
}

/// The `f64` version of [`scalar_extremum_f32`].
pub fn scalar_extremum_f64(
    op: kiln_ir::BinaryOp,
    src: Option<&[f64]>,
    c: f64,
    out: &mut [f64],
    kind: ReduceKind,
    other: &[f64],
) -> Option<f64> {
    scalar_extremum(
        op,
        src,
        c,
        out,
        kind,
        other,
        f64::NEG_INFINITY,
        f64::INFINITY,
    )
}

#[allow(clippy::too_many_arguments)]
fn scalar_extremum<T: Float>(
    op: kiln_ir::BinaryOp,
    src: Option<&[T]>,
    c: T,
    out: &mut [T],
    kind: ReduceKind,
    other: &[T],
    neg_inf: T,
    inf: T,
) -> Option<T> {
    if op != kiln_ir::BinaryOp::Div || src.is_some_and(|s| s.len() != out.len()) {
        return None;
    }
    let div = move |x: T| x / c;
    let quick = match kind {
        ReduceKind::Max => simd!(quick_extremum_with(
            src,
            out,
            div,
            other,
            neg_inf,
            |a, x| {
                if a > x {
                    a
                } else {
                    x
                }
            }
        )),
        ReduceKind::Min => simd!(quick_extremum_with(src, out, div, other, inf, |a, x| {
            if a < x {
                a
            } else {
                x
            }
        })),
        ReduceKind::Sum | ReduceKind::Prod => return None,
    };
    // The exact fold for the rare rows the quick one cannot decide (see `quick_extremum`).
    quick.or_else(|| extremum(kind, other, neg_inf, inf))
}

/// [`quick_extremum`] of `other` with `out[i] = f(src[i])` (or `f(out[i])`) in the same
/// loop, 32 elements of each per step; the longer of the two finishes alone.
#[inline(always)]
fn quick_extremum_with<T: Float>(
    src: Option<&[T]>,
    out: &mut [T],
    f: impl Fn(T) -> T + Copy,
    other: &[T],
    id: T,
    pick: impl Fn(T, T) -> T + Copy,
) -> Option<T> {
    let steps = out.len().min(other.len()) / 32;
    let (both, rest) = out.split_at_mut(steps * 32);
    let (pair, other_rest) = other.split_at(steps * 32);
    let start = ([id; 32], [T::ZERO; 32]);
    let (acc, probe) = match src {
        Some(src) => {
            let (src, src_rest) = src.split_at(steps * 32);
            for (o, &s) in rest.iter_mut().zip(src_rest) {
                *o = f(s);
            }
            paired_steps(start, both, Some(src), f, pair, pick)
        }
        None => {
            for o in rest.iter_mut() {
                *o = f(*o);
            }
            paired_steps(start, both, None, f, pair, pick)
        }
    };
    quick_finish(acc, probe, other_rest, id, pick)
}

/// The paired loop of [`quick_extremum_with`] over whole steps of 32: accumulators in and
/// out by value (in registers; updated in place across several loops, LLVM keeps them in
/// memory and turns the selects into masked stores).
#[inline(always)]
fn paired_steps<T: Float>(
    (mut acc, mut probe): ([T; 32], [T; 32]),
    out: &mut [T],
    src: Option<&[T]>,
    f: impl Fn(T) -> T + Copy,
    other: &[T],
    pick: impl Fn(T, T) -> T + Copy,
) -> ([T; 32], [T; 32]) {
    for (i, (o, x)) in out
        .chunks_exact_mut(32)
        .zip(other.chunks_exact(32))
        .enumerate()
    {
        acc = lanes(&acc, x, pick);
        probe = lanes(&probe, x, |p, x| p + x * T::ZERO);
        let y = match src {
            Some(s) => mapped(&s[i * 32..], f),
            None => mapped(o, f),
        };
        o.copy_from_slice(&y);
    }
    (acc, probe)
}

/// The end of [`quick_extremum`] from accumulators that have seen part of the sequence:
/// `rest` folded in, then the lanes.
#[inline(always)]
fn quick_finish<T: Float>(
    mut acc: [T; 32],
    mut probe: [T; 32],
    rest: &[T],
    id: T,
    pick: impl Fn(T, T) -> T + Copy,
) -> Option<T> {
    let mut chunks = rest.chunks_exact(32);
    for c in &mut chunks {
        acc = lanes(&acc, c, pick);
        probe = lanes(&probe, c, |p, x| p + x * T::ZERO);
    }
    for ((a, p), &x) in acc.iter_mut().zip(probe.iter_mut()).zip(chunks.remainder()) {
        *a = pick(*a, x);
        *p = *p + x * T::ZERO;
    }
    let finite = probe.into_iter().fold(T::ZERO, |s, p| s + p) == T::ZERO;
    let r = acc.into_iter().fold(id, pick);
    (finite && r != T::ZERO).then_some(r)
}

/// The extremum by the bare hardware comparison (`pick`: one `maxps`/`minps`), exact when
/// every element is finite and the result is not zero: it then has a single value, and
/// only ±0 have two encodings of one value. `None` otherwise (an infinity or NaN — found by
/// a running sum of `0 · x`, which is NaN from the first non-finite element on — or a zero
/// result); the caller then folds with XLA's `max`/`min`.
#[inline(always)]
fn quick_extremum<T: Float>(src: &[T], id: T, pick: impl Fn(T, T) -> T + Copy) -> Option<T> {
    quick_finish([id; 32], [T::ZERO; 32], src, id, pick)
}

#[inline(always)]
fn fold_lanes<T: Float>(src: &[T], id: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let mut acc = [id; 32];
    let mut chunks = src.chunks_exact(32);
    for c in &mut chunks {
        // A new array per step (not updates in place), so the accumulators stay in
        // registers: updating in place, LLVM turns the select into masked stores.
        acc = lanes(&acc, c, f);
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a = f(*a, x);
    }
    acc.into_iter().fold(id, f)
}

/// `[f(acc[0], c[0]), ..., f(acc[31], c[31])]` as a new array. Not `std::array::from_fn`:
/// that is an ordinary `#[inline]` function, which LLVM leaves out of line — compiled for
/// the baseline target, not `with_simd`'s — once the loop has several `with_simd` callers.
/// `[f(c[0]), ..., f(c[31])]` as a new array (see [`lanes`]).
#[inline(always)]
fn mapped<T: Copy>(c: &[T], f: impl Fn(T) -> T) -> [T; 32] {
    let c: &[T; 32] = c[..32].try_into().expect("32 elements");
    let mut out = *c;
    for (o, &x) in out.iter_mut().zip(c) {
        *o = f(x);
    }
    out
}

#[inline(always)]
fn lanes<T: Copy>(acc: &[T; 32], c: &[T], f: impl Fn(T, T) -> T) -> [T; 32] {
    let mut out = *acc;
    for ((o, &a), &x) in out.iter_mut().zip(acc).zip(&c[..32]) {
        *o = f(a, x);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn extremum_matches_the_reduction_for_every_order_of_specials() {
        let specials = [
            0.0f32,
            -0.0,
            1.5,
            -2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3e38,
            1e-40,
        ];
        let mut state = 7u64;
        for n in [0usize, 1, 5, 31, 32, 33, 100, 1000] {
            for trial in 0..20 {
                let v: Vec<f32> = (0..n)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        specials[(state >> 33) as usize % specials.len()]
                    })
                    .collect();
                let mut v = v;
                if trial % 5 == 4 && n > 0 {
                    v[(state >> 20) as usize % n] = f32::NAN;
                }
                for (kind, id) in [
                    (ReduceKind::Max, f32::NEG_INFINITY),
                    (ReduceKind::Min, f32::INFINITY),
                ] {
                    let f = if kind == ReduceKind::Max {
                        fmax::<f32>
                    } else {
                        fmin::<f32>
                    };
                    let want = v.iter().fold(id, |a, &b| f(a, b));
                    let got = extremum_f32(kind, &v).expect("max and min");
                    assert_eq!(got.to_bits(), want.to_bits(), "{kind:?} of {v:?}");
                }
            }
        }
        // Zero results: the sign depends on which zeros are present, not on their order.
        for n in [2usize, 33, 100] {
            for lead in [0.0f32, -0.0] {
                let mut v: Vec<f32> = (0..n)
                    .map(|i| if i % 3 == 0 { -0.0 } else { -2.0 })
                    .collect();
                v[n / 2] = lead;
                let max = v.iter().fold(f32::NEG_INFINITY, |a, &b| fmax(a, b));
                assert_eq!(
                    extremum_f32(ReduceKind::Max, &v).map(f32::to_bits),
                    Some(max.to_bits())
                );
                let w: Vec<f32> = v.iter().map(|x| -x).collect();
                let min = w.iter().fold(f32::INFINITY, |a, &b| fmin(a, b));
                assert_eq!(
                    extremum_f32(ReduceKind::Min, &w).map(f32::to_bits),
                    Some(min.to_bits())
                );
            }
        }
        assert_eq!(extremum_f32(ReduceKind::Sum, &[1.0]), None);
        let w = [1.0f64, -0.0, 0.0, -7.5];
        assert_eq!(extremum_f64(ReduceKind::Max, &w), Some(1.0));
        assert_eq!(
            extremum_f64(ReduceKind::Min, &w).map(f64::to_bits),
            Some((-7.5f64).to_bits())
        );
    }

    #[test]
    fn scalar_extremum_is_the_two_separate_calls_bit_for_bit() {
        use crate::{scalar_f32, scalar_f64};
        use kiln_ir::BinaryOp;
        let specials = [
            0.0f32,
            -0.0,
            1.5,
            -2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            3e38,
            1e-40,
            -7.25,
        ];
        let mut state = 11u64;
        let mut next = |ordinary: bool| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = (state >> 33) as usize;
            if ordinary || !pick.is_multiple_of(7) {
                (pick % 2001) as f32 * 0.37 - 370.0
            } else {
                specials[pick / 7 % specials.len()]
            }
        };
        // Lengths on both sides of a step of 32, equal and unequal in both directions (the
        // longer one finishes alone); rows with and without specials, and all-zero rows,
        // which the quick extremum cannot decide.
        let lengths = [0usize, 1, 7, 31, 32, 33, 64, 100, 257, 1024];
        for (i, &n) in lengths.iter().enumerate() {
            for &m in &lengths[i.saturating_sub(2)..(i + 3).min(lengths.len())] {
                for trial in 0..6 {
                    let src: Vec<f32> = (0..n).map(|_| next(trial % 2 == 0)).collect();
                    let other: Vec<f32> = match trial {
                        5 => vec![0.0; m],
                        _ => (0..m).map(|_| next(trial % 3 == 0)).collect(),
                    };
                    let c = next(false);
                    for kind in [ReduceKind::Max, ReduceKind::Min] {
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        let mut want = vec![0.0; n];
                        assert!(scalar_f32(BinaryOp::Div, Some(&src), c, &mut want));
                        let want_e = extremum_f32(kind, &other).map(f32::to_bits);
                        let mut out = vec![0.0; n];
                        let got = scalar_extremum_f32(
                            BinaryOp::Div,
                            Some(&src),
                            c,
                            &mut out,
                            kind,
                            &other,
                        );
                        let case = format!("{kind:?}, {n} and {m} elements, trial {trial}");
                        assert_eq!(got.map(f32::to_bits), want_e, "{case}");
                        assert_eq!(bits(&out), bits(&want), "{case}");
                        let mut inplace = src.clone();
                        let got =
                            scalar_extremum_f32(BinaryOp::Div, None, c, &mut inplace, kind, &other);
                        assert_eq!(got.map(f32::to_bits), want_e, "{case}, in place");
                        assert_eq!(bits(&inplace), bits(&want), "{case}, in place");
                        // f64: the same values widened.
                        let w = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
                        let (src, other) = (w(&src), w(&other));
                        let mut want = vec![0.0; n];
                        assert!(scalar_f64(BinaryOp::Div, Some(&src), c.into(), &mut want));
                        let mut out = vec![0.0; n];
                        let got = scalar_extremum_f64(
                            BinaryOp::Div,
                            Some(&src),
                            c.into(),
                            &mut out,
                            kind,
                            &other,
                        );
                        assert_eq!(
                            got.map(f64::to_bits),
                            extremum_f64(kind, &other).map(f64::to_bits),
                            "{case}, f64"
                        );
                        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&out), bits(&want), "{case}, f64");
                    }
                }
            }
        }
    }

    #[test]
    fn scalar_extremum_refuses_other_ops_kinds_and_lengths() {
        use kiln_ir::BinaryOp;
        let mut out = [5.0f32; 4];
        let other = [1.0f32, 2.0];
        let f = scalar_extremum_f32;
        assert_eq!(
            f(BinaryOp::Mul, None, 2.0, &mut out, ReduceKind::Max, &other),
            None
        );
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Sum, &other),
            None
        );
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Prod, &other),
            None
        );
        let short = [1.0f32; 3];
        assert_eq!(
            f(
                BinaryOp::Div,
                Some(&short),
                2.0,
                &mut out,
                ReduceKind::Max,
                &other
            ),
            None
        );
        assert_eq!(out, [5.0; 4], "nothing written");
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Max, &other),
            Some(2.0)
        );
        assert_eq!(out, [2.5; 4]);
    }

    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(&[4, 8], &[1]), Plan::Inner { outer: 4, n: 8 });
        assert_eq!(plan(&[1, 8, 1], &[1]), Plan::Inner { outer: 1, n: 8 });
        assert_eq!(
            plan(&[4, 8, 32], &[1]),
            Plan::Outer {
                pre: 4,
                n: 8,
                post: 32
            }
        );
        assert_eq!(plan(&[4, 8, 3], &[1]), Plan::Transpose);
        assert_eq!(plan(&[4, 8, 32], &[0, 2]), Plan::Transpose);
        assert_eq!(plan(&[4, 1], &[1]), Plan::Copy);
        assert_eq!(plan(&[2, 3, 4], &[1, 2]), Plan::Inner { outer: 2, n: 12 });
    }

    #[test]
    fn sums_of_negative_zeros_and_empty_sums_are_positive_zero_as_in_xla() {
        // XLA's reduce starts from init_value +0.0 (what tf.reduce_sum and jnp.sum pass).
        for xs in [vec![-0.0f32; 100], vec![-0.0f32], vec![]] {
            let r = reduce(
                ReduceKind::Sum,
                &Buffer::F32(xs.clone()),
                &[1, xs.len()],
                &[1],
            )
            .expect("sums");
            let Buffer::F32(r) = r else {
                panic!("f32 in, f32 out")
            };
            assert_eq!(r[0].to_bits(), 0.0f32.to_bits(), "{} -0.0s", xs.len());
            assert_eq!(canonical_reduce_ref(&xs, 0.0f32, |a, b| a + b).to_bits(), 0);
        }
    }

    #[test]
    fn order_is_lane_striped_then_tree() {
        // 1e8 + 1 - 1e8 differs by association; the lane order fixes which one we get.
        let mut xs = vec![0.0f32; 33];
        xs[0] = 1e8;
        xs[32] = 1.0; // lane 0 again: 1e8 + 1 rounds to 1e8
        xs[1] = -1e8; // lane 1
        let r = canonical_reduce_ref(&xs, 0.0, |a, b| a + b);
        assert_eq!(r, 0.0);
        assert_eq!(reduce_chunk(&xs, monoid(0.0f32, |a: f32, b| a + b)), 0.0);
    }
}
