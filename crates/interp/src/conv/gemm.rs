//! Float `convolution` as matrix products (im2col): for each group (feature group or batch
//! group), the windows of a tile of output positions are gathered into a
//! `[positions, window·C/G]` matrix — a padding or dilation hole as `+0` — and multiplied by
//! the kernel laid out as `[window·C/G, O/G]` through `dot.rs`'s GEMM. The columns of both
//! run over the window's elements in row-major order and, within one, over the group's
//! input features, so the terms are the direct loop's; their summation order is the
//! GEMM's.
//!
//! Threads: one GEMM call per tile of output rows (and of output features when there are
//! too few row tiles to keep the pool busy). Every call sums the whole `K` for its
//! elements with the same microkernel, so the bits do not depend on the split or on the
//! thread count; they are deterministic per machine as `dot_general`'s are (design.md,
//! Invariant 2). The gathered tile is bounded ([`SCRATCH_BYTES`]), whatever the size of
//! the convolution.
//!
//! What this does not do: integer convolutions (the direct loop in `conv.rs`) and
//! depthwise ones (`depthwise.rs`, where a GEMM would have one output column).

use super::Plan;
use crate::dot::{transpose, Gemm, Matrices, OutPtr, BLOCK};
use crate::hw::zeroed;
use rayon::prelude::*;
use std::borrow::Cow;

/// The most bytes one task's gathered windows take (a few tiles stay in L2/L3 at once).
const SCRATCH_BYTES: usize = 1 << 20;

/// Below this many multiply-adds the convolution runs as one task per group.
const PAR_FLOPS: usize = 1 << 20;

/// One GEMM call: output rows `row..row + rows` and the group's output features
/// `col..col + cols` of group `group`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Task {
    group: usize,
    row: usize,
    rows: usize,
    col: usize,
    cols: usize,
}

/// The convolution as `[batch, spatial…, feature]` rows (one row of `plan.features` per
/// output position).
pub(super) fn rows<T: Gemm>(p: &Plan, x: &[T], w: &[T]) -> Vec<T> {
    let spatial: usize = p.positions.iter().product();
    let m = p.batch * spatial;
    let groups = p.c.feature_groups.max(p.c.batch_groups);
    let n = p.features / groups;
    let k = p.kernel_offsets.len() * p.group_inputs;
    let mut out = zeroed(m * p.features);
    if out.is_empty() || k == 0 {
        return out; // a sum of nothing: zeros
    }
    let kernel = KernelMatrices::new(p, w, groups, n);
    let out_ptr = OutPtr(out.as_mut_ptr());
    let tasks = tasks(groups, m, n, k, std::mem::size_of::<T>());
    let run = |scratch: &mut Scratch<T>, t: &Task| {
        let (lists, counter, pos, a, at) = scratch_parts(scratch, p);
        gather_windows(p, x, t, k, n, lists, counter, pos, a);
        // A window matrix the GEMM packs is handed over column-major (a copy its packing
        // reads with `memcpy`, see `dot/transpose.rs`); the same values, so the same bits.
        let (a, (rsa, csa)) = if crate::dot::packs(t.rows, k, t.cols) && t.rows > 1 && k > 1 {
            transpose::transpose_into(a, t.rows, k, k, at);
            (&at[..], (1, t.rows))
        } else {
            (&a[..], (k, 1))
        };
        let b = kernel.from(t.group, t.col);
        let c_off = t.row * p.features + t.group * n + t.col;
        // SAFETY: `a` holds `t.rows × k` elements (strides `rsa`, `csa`), `b` is the group's
        // `k × n` kernel matrix (row stride `kernel.row_stride`, in bounds of the kernel
        // operand or of its copy) from column `t.col`, `t.col + t.cols <= n`;
        // the output block (rows `t.row..t.row + t.rows` of `m`, columns
        // `group·n + col..+cols` of `features`, row stride `features`) lies inside `out`,
        // and tasks write disjoint blocks, so no element is written twice and nothing reads
        // `out` until every task is done.
        unsafe {
            T::gemm(
                (t.rows, k, t.cols),
                a.as_ptr(),
                rsa as isize,
                csa as isize,
                b.as_ptr(),
                kernel.row_stride as isize,
                1,
                out_ptr.get().add(c_off),
                p.features as isize,
            )
        }
    };
    if tasks.len() == 1 || rayon::current_thread_index().is_none() {
        // One task, or a convolution small enough to run on the calling thread (see
        // `runs_inline` in lib.rs): every task here, one after another.
        let mut scratch = Scratch::default();
        tasks.iter().for_each(|t| run(&mut scratch, t));
    } else {
        tasks.par_iter().for_each_init(Scratch::default, run);
    }
    out
}

/// A 1×1 convolution — every window dimension of size 1 with stride 1 and no padding or
/// dilation, one group — whose output positions are evenly spaced rows of the input (an
/// `NHWC` operand): the product of the input read in place as `[positions, C]` and the
/// kernel, through `dot.rs` (no window gathering). `None` for any other convolution.
///
/// **Bits:** [`rows`] would multiply the same `[positions, C]` matrix (its window matrix of
/// a 1×1 window is the input's rows) by the same kernel matrix with the same GEMM, whose
/// result does not depend on the split into calls.
pub(super) fn pointwise<T: Gemm + Send + Sync>(p: &Plan, x: &[T], w: &[T]) -> Option<Vec<T>> {
    let c = p.c;
    let one_by_one = c.window.iter().all(|wd| {
        wd.size == 1 && wd.stride == 1 && wd.low == 0 && wd.high == 0 && wd.lhs_dilate == 1
    });
    if !one_by_one || c.feature_groups != 1 || c.batch_groups != 1 {
        return None;
    }
    let d = &c.dims;
    // The output rows (batch, then the spatial positions in window order) as one stride of
    // the input; the positions are the input's spatial sizes here.
    let shape: Vec<usize> = std::iter::once(p.batch)
        .chain(p.positions.iter().copied())
        .collect();
    let strides: Vec<usize> = std::iter::once(p.lhs_strides[d.lhs_batch])
        .chain(d.lhs_spatial.iter().map(|&i| p.lhs_strides[i]))
        .collect();
    let axes: Vec<usize> = (0..shape.len()).collect();
    let (m, row_stride) = kiln_ir::collapse_axes(&shape, &strides, &axes)?;
    let (k, n) = (p.group_inputs, p.features);
    let mut out = zeroed(m * n);
    if out.is_empty() || k == 0 {
        return Some(out); // a sum of nothing: zeros
    }
    let a = Matrices::one(x, (m, k), (row_stride, p.lhs_strides[d.lhs_feature]));
    let kernel = KernelMatrices::new(p, w, 1, n);
    let b = Matrices::one(&kernel.data, (k, n), (kernel.row_stride, 1));
    crate::dot::product(&a, &b, &mut out);
    Some(out)
}

/// Per-task scratch: the gathered window matrix and the tap walker's buffers.
struct Scratch<T> {
    a: Vec<T>,
    /// `a` column-major, when the GEMM packs it.
    at: Vec<T>,
    list: Vec<(usize, usize)>,
    counter: Vec<usize>,
    pos: Vec<usize>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            a: Vec::new(),
            at: Vec::new(),
            list: Vec::new(),
            counter: Vec::new(),
            pos: Vec::new(),
        }
    }
}

type Parts<'s, T> = (
    &'s mut Vec<(usize, usize)>,
    &'s mut [usize],
    &'s mut [usize],
    &'s mut Vec<T>,
    &'s mut Vec<T>,
);

fn scratch_parts<'s, T>(s: &'s mut Scratch<T>, p: &Plan) -> Parts<'s, T> {
    s.counter.resize(p.positions.len(), 0);
    s.pos.resize(p.positions.len(), 0);
    (&mut s.list, &mut s.counter, &mut s.pos, &mut s.a, &mut s.at)
}

/// The kernel of each group as a row-major `[window·C/G, O/G]` matrix (reversal applied):
/// in place when the operand is already laid out so (TensorFlow's and Keras' `HWIO`
/// kernels: output features innermost, each window element's `C/G × O` block after the
/// previous one), else copied, the groups one after the other. Either way the GEMM gets the
/// same values at the same positions, so the bits do not depend on which.
pub(super) struct KernelMatrices<'a, T: Clone> {
    pub(super) data: Cow<'a, [T]>,
    /// Elements between rows `l` and `l + 1` of a group's matrix.
    row_stride: usize,
    /// Elements between group `q`'s matrix and group `q + 1`'s.
    group_stride: usize,
}

impl<'a, T: Gemm> KernelMatrices<'a, T> {
    pub(super) fn new(p: &Plan, w: &'a [T], groups: usize, n: usize) -> KernelMatrices<'a, T> {
        let d = &p.c.dims;
        let (ro, ri) = (p.rhs_strides[d.rhs_output], p.rhs_strides[d.rhs_input]);
        let cg = p.group_inputs;
        // Element (tap, i, j) of group q is at `(q·n + j)·ro + i·ri + offset(tap)`: row
        // `l = tap·cg + i` is at `l·ri` when every tap's offset is `tap·cg·ri`.
        let in_place = ro == 1
            && p.kernel_offsets
                .iter()
                .enumerate()
                .all(|(tap, &off)| off == tap * cg * ri);
        if in_place {
            return KernelMatrices {
                data: Cow::Borrowed(w),
                row_stride: ri,
                group_stride: n,
            };
        }
        let k = p.kernel_offsets.len() * cg;
        let mut m = Vec::with_capacity(groups * k * n);
        for q in 0..groups {
            for &off in &p.kernel_offsets {
                for i in 0..cg {
                    m.extend((0..n).map(|j| w[(q * n + j) * ro + i * ri + off]));
                }
            }
        }
        KernelMatrices {
            data: Cow::Owned(m),
            row_stride: n,
            group_stride: k * n,
        }
    }

    /// Group `group`'s matrix from column `col` on.
    fn from(&self, group: usize, col: usize) -> &[T] {
        &self.data[group * self.group_stride + col..]
    }
}

/// Fills `a` with the task's `t.rows × k` window matrix: row `r` is output row `t.row + r`
/// (batch-major over the output positions), column `tap·C/G + i` its window element `tap`'s
/// input feature `i` of the group, `+0` where the window element falls outside the operand
/// or on a dilation hole.
#[allow(clippy::too_many_arguments)]
fn gather_windows<T: Gemm>(
    p: &Plan,
    x: &[T],
    t: &Task,
    k: usize,
    n: usize,
    list: &mut Vec<(usize, usize)>,
    counter: &mut [usize],
    pos: &mut [usize],
    a: &mut Vec<T>,
) {
    let d = &p.c.dims;
    let spatial: usize = p.positions.iter().product();
    let (lf, lb) = (p.lhs_strides[d.lhs_feature], p.lhs_strides[d.lhs_batch]);
    let cg = p.group_inputs;
    let o = t.group * n; // the group's first output feature
    let (feature_group, batch_group) = (o / p.per_feature_group, o / p.per_batch_group);
    a.clear();
    a.resize(t.rows * k, T::default());
    for (r, row) in a.chunks_exact_mut(k).enumerate() {
        let (b, mut rest) = ((t.row + r) / spatial, (t.row + r) % spatial);
        for i in (0..pos.len()).rev() {
            pos[i] = rest % p.positions[i];
            rest /= p.positions[i];
        }
        p.taps.collect(pos, counter, list);
        let base = (batch_group * p.batch + b) * lb + feature_group * cg * lf;
        for &(tap, off) in list.iter() {
            let dst = &mut row[tap * cg..(tap + 1) * cg];
            let src = base + off;
            if lf == 1 {
                dst.copy_from_slice(&x[src..src + cg]);
            } else {
                for (i, v) in dst.iter_mut().enumerate() {
                    *v = x[src + i * lf];
                }
            }
        }
    }
}

/// The GEMM calls: per group, tiles of output rows whose gathered windows fit
/// [`SCRATCH_BYTES`] (a multiple of [`BLOCK`] rows where that fits), and when that gives fewer than two
/// tasks per thread, the group's output features split too (multiples of [`BLOCK`]).
fn tasks(groups: usize, m: usize, n: usize, k: usize, elem_bytes: usize) -> Vec<Task> {
    let fit = (SCRATCH_BYTES / (k * elem_bytes)).max(1);
    let mut rb = match fit {
        f if f >= m => m,
        f if f >= BLOCK => f / BLOCK * BLOCK,
        f => f, // a huge window: fewer rows than a block, still bounded
    };
    let mut cb = n;
    let want = 2 * rayon::current_num_threads();
    if groups * m * n * k >= PAR_FLOPS && groups * m.div_ceil(rb) < want {
        let per_group = want.div_ceil(groups);
        if m >= n {
            rb = m.div_ceil(per_group).next_multiple_of(BLOCK).min(rb);
        } else {
            cb = n.div_ceil(per_group).next_multiple_of(BLOCK).min(n);
        }
    }
    let mut tasks = Vec::new();
    for group in 0..groups {
        for row in (0..m).step_by(rb.max(1)) {
            for col in (0..n).step_by(cb.max(1)) {
                tasks.push(Task {
                    group,
                    row,
                    rows: rb.min(m - row),
                    col,
                    cols: cb.min(n - col),
                });
            }
        }
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_cover_the_output_once_and_bound_the_scratch() {
        for (groups, m, n, k) in [
            (1, 12544, 32, 27),
            (1, 49, 960, 160),
            (2, 100, 70, 500),
            (3, 1, 5, 1 << 20),
            (1, 9, 64, 676 * 8),
        ] {
            let mut hit = vec![0u8; groups * m * n];
            for t in tasks(groups, m, n, k, 4) {
                assert!(t.rows * k * 4 <= SCRATCH_BYTES.max(k * 4));
                for i in t.row..t.row + t.rows {
                    for j in t.col..t.col + t.cols {
                        hit[(t.group * m + i) * n + j] += 1;
                    }
                }
            }
            assert!(hit.iter().all(|&h| h == 1), "{groups}x{m}x{n}x{k}");
        }
    }
}
