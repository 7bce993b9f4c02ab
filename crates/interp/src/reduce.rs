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
        (Buffer::F32(v), Scalar::F32(id)) => {
            Buffer::F32(reduce_float(kind, id, v, shape, axes).into())
        }
        (Buffer::F64(v), Scalar::F64(id)) => {
            Buffer::F64(reduce_float(kind, id, v, shape, axes).into())
        }
        (Buffer::I32(v), Scalar::I32(id)) => {
            Buffer::I32(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::I64(v), Scalar::I64(id)) => {
            Buffer::I64(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::U32(v), Scalar::U32(id)) => {
            Buffer::U32(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::U64(v), Scalar::U64(id)) => {
            Buffer::U64(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::I8(v), Scalar::I8(id)) => Buffer::I8(reduce_int(kind, id, v, shape, axes).into()),
        (Buffer::U8(v), Scalar::U8(id)) => Buffer::U8(reduce_int(kind, id, v, shape, axes).into()),
        (Buffer::I16(v), Scalar::I16(id)) => {
            Buffer::I16(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::U16(v), Scalar::U16(id)) => {
            Buffer::U16(reduce_int(kind, id, v, shape, axes).into())
        }
        (Buffer::Bool(v), Scalar::Bool(id)) => Buffer::Bool(match kind {
            ReduceKind::Max => reduce_with(v, shape, axes, monoid(id, |a: bool, b| a | b)).into(),
            _ => reduce_with(v, shape, axes, monoid(id, |a: bool, b| a & b)).into(),
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

#[cfg(test)]
mod tests {
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
                &Buffer::F32(xs.clone().into()),
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
