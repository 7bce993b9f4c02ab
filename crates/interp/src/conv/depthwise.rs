//! Depthwise float `convolution` (every feature group has one input feature; MobileNet's
//! and EfficientNet's 3×3 and 5×5 layers) as a direct loop over output positions with the
//! output features innermost: for each window element that falls on the operand, in
//! row-major order of the window, `acc[o] = acc[o] + x[o / m] · w[o]` for all `o` at once
//! (`m` the channel multiplier). Each output element gets exactly the direct loop's
//! operations in its order (one multiply and one add, from `+0`, holes skipped), so the
//! bits are those of `conv.rs`'s loop, at every vector width and thread count.
//!
//! The rule, by measurement: every depthwise convolution takes this loop. im2col gives a
//! GEMM per group with one output column and `K` the window's size, a copy of every window
//! for a handful of multiply-adds: on 1×56×56×144 with a 3×3 kernel (MobileNetV2's), one
//! thread of the 2-core Zen 5, 87 ms through the GEMM against 8.7 ms here (20 ms for the
//! scalar direct loop); on the corpus' 1×16×16×16, 428 µs against 50 µs
//! (`--example conv_speed`, with `applies` forced off for the GEMM column).

use super::{MulAdd, Plan};
use crate::hw::{simd, zeroed};

/// Output positions per task.
const POSITIONS_PER_TASK: usize = 32;

/// Whether `p` is depthwise: feature groups of one input feature each, no batch groups.
pub(super) fn applies(p: &Plan) -> bool {
    p.c.feature_groups > 1 && p.group_inputs == 1 && p.c.batch_groups == 1
}

/// The convolution as `[batch, spatial…, feature]` rows (see `gemm::rows`).
pub(super) fn rows<T: MulAdd>(p: &Plan, x: &[T], w: &[T]) -> Vec<T> {
    let d = &p.c.dims;
    let o_count = p.features;
    let mut out = zeroed(p.batch * p.positions.iter().product::<usize>() * o_count);
    if out.is_empty() {
        return out;
    }
    // The kernel as `[window, O]`, reversal applied.
    let ro = p.rhs_strides[d.rhs_output];
    let kernel: Vec<T> = p
        .kernel_offsets
        .iter()
        .flat_map(|&off| (0..o_count).map(move |o| w[o * ro + off]))
        .collect();
    crate::par::for_chunks(
        &mut out,
        o_count * POSITIONS_PER_TASK,
        || {
            let r = p.positions.len();
            (vec![0; r], vec![0; r], Vec::new())
        },
        |(pos, counter, list), (task, block)| {
            let first = task * POSITIONS_PER_TASK;
            simd!(block_rows(p, x, &kernel, first, block, pos, counter, list))
        },
    );
    out
}

/// The output rows from output position `first` on (batch-major), filling `block`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_rows<T: MulAdd>(
    p: &Plan,
    x: &[T],
    kernel: &[T],
    first: usize,
    block: &mut [T],
    pos: &mut [usize],
    counter: &mut [usize],
    list: &mut Vec<(usize, usize)>,
) {
    let d = &p.c.dims;
    let o_count = p.features;
    let (lf, lb) = (p.lhs_strides[d.lhs_feature], p.lhs_strides[d.lhs_batch]);
    let mult = p.per_feature_group;
    let spatial: usize = p.positions.iter().product();
    for (r, row) in block.chunks_exact_mut(o_count).enumerate() {
        let (b, mut rest) = ((first + r) / spatial, (first + r) % spatial);
        for i in (0..pos.len()).rev() {
            pos[i] = rest % p.positions[i];
            rest /= p.positions[i];
        }
        p.taps.collect(pos, counter, list);
        for &(tap, off) in list.iter() {
            let wk = &kernel[tap * o_count..(tap + 1) * o_count];
            let base = b * lb + off;
            if mult == 1 && lf == 1 {
                accumulate(row, &x[base..base + o_count], wk);
            } else {
                for (o, acc) in row.iter_mut().enumerate() {
                    *acc = acc.mul_add(x[base + (o / mult) * lf], wk[o]);
                }
            }
        }
    }
}

/// `acc[o] = acc[o] + x[o] · w[o]`, rounded twice (vectorised, never fused).
#[inline(always)]
fn accumulate<T: MulAdd>(acc: &mut [T], x: &[T], w: &[T]) {
    for ((a, &xv), &wv) in acc.iter_mut().zip(x).zip(w) {
        *a = a.mul_add(xv, wv);
    }
}
