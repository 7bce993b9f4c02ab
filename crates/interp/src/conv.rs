//! `convolution`: XLA's `ConvGeneralDilated`, for any dimension roles, any number of
//! spatial dimensions, padding (negative too), lhs/rhs dilation, kernel reversal, and
//! feature or batch groups.
//!
//! # Semantics and order (the contract)
//!
//! With `G` feature groups, input features and output features are split into `G`
//! consecutive groups: output feature `o` reads the input features of group
//! `o / (O / G)` against kernel input features `0..C/G`. With `B` batch groups, output
//! feature `o` reads input batch `(o / (O / B)) * (N / B) + b` for output batch `b`.
//! (StableHLO's definition by splitting and concatenating.)
//!
//! Each result element is a sum of products in the operand dtype: for each of the kernel's
//! window elements (row-major order of the window) and, within one, each of the group's
//! input features.
//!
//! - **Floats: as `dot_general`, the GEMM's order, deterministic per machine** (design.md,
//!   Invariant 2). The terms are gathered into matrices (im2col, `conv/gemm.rs`) and summed
//!   by the same GEMM as `dot_general`, whose microkernel (FMA or not) depends on the CPU; a
//!   window element on padding or a dilation hole is a `+0` term (so an infinite or NaN
//!   weight there gives NaN, as in XLA:CPU's Eigen convolution). Depthwise convolutions
//!   (one input feature per group, `conv/depthwise.rs`) keep the direct order below.
//! - **Integers, and the reference** ([`direct_convolution`]): one multiply and one add per
//!   term (never fused), starting from `+0`, in the order above, window elements on padding
//!   or dilation holes skipped (as XLA's evaluator does).
//!
//! Either way every result element is computed by one thread, with the same operations at
//! every split of the output, so the result does not depend on the thread count.

use crate::movement::next_index;
use crate::scalar::{Elem, MulAdd};
use crate::shape::slice_of;
use crate::window::Taps;
use kiln_ir::{row_major_strides, Buffer, Convolution, DType, Tensor};

mod depthwise;
mod gemm;
#[cfg(test)]
mod tests;

/// `convolution` of `lhs` with `rhs` into a result of `out_shape`: floats through the GEMM
/// or the depthwise loop, integers through the direct loop.
pub(crate) fn convolution(
    lhs: &Tensor,
    rhs: &Tensor,
    c: &Convolution,
    out_shape: &[usize],
) -> Result<Buffer, String> {
    fn fast<T: MulAdd + crate::dot::Gemm + Send + Sync>(
        lhs: &Tensor,
        rhs: &Tensor,
        c: &Convolution,
        out_shape: &[usize],
    ) -> Result<Buffer, String> {
        let x = slice_of::<T>(lhs.data())?;
        let w = slice_of::<T>(rhs.data())?;
        let plan = Plan::new(lhs.shape(), rhs.shape(), c, out_shape);
        let rows = if depthwise::applies(&plan) {
            depthwise::rows(&plan, x, w)
        } else if let Some(rows) = gemm::pointwise(&plan, x, w) {
            rows
        } else {
            gemm::rows(&plan, x, w)
        };
        Ok(T::into_buffer(plan.place(rows)))
    }
    match lhs.dtype() {
        DType::F32 => fast::<f32>(lhs, rhs, c, out_shape),
        DType::F64 => fast::<f64>(lhs, rhs, c, out_shape),
        _ => direct(lhs, rhs, c, out_shape),
    }
}

/// `convolution` by the direct loop for every dtype: one multiply and one add per term in
/// the documented order (see the module doc). The reference the fast float paths are
/// tested and measured against; `out_shape` must be the result shape of the typing rule.
pub fn direct_convolution(
    lhs: &Tensor,
    rhs: &Tensor,
    c: &Convolution,
    out_shape: &[usize],
) -> Result<Tensor, String> {
    let data = direct(lhs, rhs, c, out_shape)?;
    Tensor::new(out_shape.to_vec(), data).map_err(|e| e.to_string())
}

fn direct(
    lhs: &Tensor,
    rhs: &Tensor,
    c: &Convolution,
    out_shape: &[usize],
) -> Result<Buffer, String> {
    fn run<T: MulAdd>(
        lhs: &Tensor,
        rhs: &Tensor,
        c: &Convolution,
        out_shape: &[usize],
    ) -> Result<Buffer, String> {
        let x = slice_of::<T>(lhs.data())?;
        let w = slice_of::<T>(rhs.data())?;
        Ok(T::into_buffer(
            Plan::new(lhs.shape(), rhs.shape(), c, out_shape).run(x, w),
        ))
    }
    match lhs.dtype() {
        DType::F32 => run::<f32>(lhs, rhs, c, out_shape),
        DType::F64 => run::<f64>(lhs, rhs, c, out_shape),
        DType::I32 => run::<i32>(lhs, rhs, c, out_shape),
        DType::I64 => run::<i64>(lhs, rhs, c, out_shape),
        DType::U32 => run::<u32>(lhs, rhs, c, out_shape),
        DType::U64 => run::<u64>(lhs, rhs, c, out_shape),
        DType::I8 => run::<i8>(lhs, rhs, c, out_shape),
        DType::U8 => run::<u8>(lhs, rhs, c, out_shape),
        DType::I16 => run::<i16>(lhs, rhs, c, out_shape),
        DType::U16 => run::<u16>(lhs, rhs, c, out_shape),
        DType::Bool => Err("convolution of bool".into()),
        d @ (DType::F16 | DType::Bf16) => Err(crate::float16::computed_in_f32(d)),
    }
}

/// Everything about one convolution that does not depend on the data: sizes, strides and
/// index maps, computed once.
struct Plan<'a> {
    c: &'a Convolution,
    out_shape: &'a [usize],
    /// Output batch, output features, input features per group.
    batch: usize,
    features: usize,
    group_inputs: usize,
    /// Output features per feature group and per batch group.
    per_feature_group: usize,
    per_batch_group: usize,
    lhs_strides: Vec<usize>,
    rhs_strides: Vec<usize>,
    /// The kernel's spatial offset of each window element (row-major), reversal applied.
    kernel_offsets: Vec<usize>,
    taps: Taps,
    /// Output spatial sizes, in window order.
    positions: Vec<usize>,
}

impl<'a> Plan<'a> {
    fn new(xs: &[usize], ws: &[usize], c: &'a Convolution, out_shape: &'a [usize]) -> Plan<'a> {
        let d = &c.dims;
        let lhs_strides = row_major_strides(xs);
        let rhs_strides = row_major_strides(ws);
        let features = ws[d.rhs_output];
        let sizes: Vec<usize> = d.lhs_spatial.iter().map(|&i| xs[i]).collect();
        let strides: Vec<usize> = d.lhs_spatial.iter().map(|&i| lhs_strides[i]).collect();
        let positions: Vec<usize> = d.out_spatial.iter().map(|&i| out_shape[i]).collect();
        let window_sizes: Vec<usize> = c.window.iter().map(|w| w.size).collect();
        let mut kernel_offsets = Vec::new();
        let mut k = vec![0; window_sizes.len()];
        for _ in 0..window_sizes.iter().product::<usize>() {
            kernel_offsets.push(
                c.window
                    .iter()
                    .enumerate()
                    .map(|(i, wd)| {
                        let at = if wd.reversal {
                            wd.size - 1 - k[i]
                        } else {
                            k[i]
                        };
                        at * rhs_strides[d.rhs_spatial[i]]
                    })
                    .sum(),
            );
            next_index(&mut k, &window_sizes);
        }
        Plan {
            c,
            out_shape,
            batch: out_shape[d.out_batch],
            features,
            group_inputs: ws[d.rhs_input],
            per_feature_group: (features / c.feature_groups).max(1),
            per_batch_group: (features / c.batch_groups).max(1),
            taps: Taps::new(&c.window, &sizes, &strides, &positions),
            lhs_strides,
            rhs_strides,
            kernel_offsets,
            positions,
        }
    }

    /// The result: first as `[batch, spatial…, feature]` (one contiguous row of features
    /// per position, computed in parallel), then placed at the result's dimension roles.
    fn run<T: MulAdd>(&self, x: &[T], w: &[T]) -> Vec<T> {
        let total: usize = self.out_shape.iter().product();
        if total == 0 {
            return Vec::new();
        }
        let spatial: usize = self.positions.iter().product();
        let mut rows = vec![T::default(); total];
        crate::par::for_chunks(
            &mut rows,
            self.features,
            || {
                (
                    vec![0; self.positions.len()],
                    vec![0; self.positions.len()],
                    Vec::new(),
                )
            },
            |(pos, counter, list), (p, row)| {
                let b = p / spatial;
                let mut rest = p % spatial;
                for i in (0..pos.len()).rev() {
                    pos[i] = rest % self.positions[i];
                    rest /= self.positions[i];
                }
                self.taps.collect(pos, counter, list);
                self.row(x, w, b, list, row);
            },
        );
        self.place(rows)
    }

    /// The output features of output batch `b` at the position whose taps are `list`.
    fn row<T: MulAdd>(&self, x: &[T], w: &[T], b: usize, list: &[(usize, usize)], row: &mut [T]) {
        let d = &self.c.dims;
        let (lf, ri) = (
            self.lhs_strides[d.lhs_feature],
            self.rhs_strides[d.rhs_input],
        );
        for (o, out) in row.iter_mut().enumerate() {
            let group = o / self.per_feature_group;
            let batch = (o / self.per_batch_group) * self.batch + b;
            let lhs_base = batch * self.lhs_strides[d.lhs_batch] + group * self.group_inputs * lf;
            let rhs_base = o * self.rhs_strides[d.rhs_output];
            let mut acc = T::default();
            for &(k, off) in list {
                let (l0, r0) = (lhs_base + off, rhs_base + self.kernel_offsets[k]);
                for i in 0..self.group_inputs {
                    acc = acc.mul_add(x[l0 + i * lf], w[r0 + i * ri]);
                }
            }
            *out = acc;
        }
    }

    /// `rows` (`[batch, spatial…, feature]`) at the result's dimension roles.
    fn place<T: Elem>(&self, rows: Vec<T>) -> Vec<T> {
        let d = &self.c.dims;
        let r = self.positions.len();
        if d.out_batch == 0
            && d.out_feature == r + 1
            && d.out_spatial.iter().enumerate().all(|(i, &s)| s == i + 1)
        {
            return rows; // the result is `[batch, spatial…, feature]` already
        }
        let strides = row_major_strides(self.out_shape);
        let mut out = vec![T::default(); rows.len()];
        let mut pos = vec![0; self.positions.len()];
        let mut chunks = rows.chunks(self.features);
        for b in 0..self.batch {
            for _ in 0..self.positions.iter().product::<usize>() {
                let base = b * strides[d.out_batch]
                    + (0..pos.len())
                        .map(|i| pos[i] * strides[d.out_spatial[i]])
                        .sum::<usize>();
                let row = chunks.next().unwrap_or_default();
                for (o, &v) in row.iter().enumerate() {
                    out[base + o * strides[d.out_feature]] = v;
                }
                next_index(&mut pos, &self.positions);
            }
        }
        out
    }
}
