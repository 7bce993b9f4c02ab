//! XLA's `Sort` and JAX's argmax / argmin `Reduce`, one result per instruction
//! ([`kiln_ir::Op::Sort`], [`kiln_ir::Op::ArgReduce`]).
//!
//! `sort` is a stable merge sort of each line along the dimension (Kiln's own, so that a
//! comparison that is not a strict weak order — IEEE with NaNs — still gives one defined
//! result: the merge's). `reduce_argmax` folds the reduced elements in row-major order,
//! starting from the initial pair, with JAX's reducer as XLA's CPU backend calls it
//! (accumulator first). Both run on the calling thread in one fixed order and involve no
//! arithmetic, so their results never depend on the thread count.

use crate::movement::next_index;
use crate::scalar::{for_computed_dtype, for_dtype, Elem};
use crate::shape::slice_of;
use kiln_ir::sorting::sorts_before;
use kiln_ir::{row_major_strides, ArgKind, Buffer, CompareDir, SortOrder, Tensor};

/// `sort`: all operands sorted together along `dim` (see [`kiln_ir::Op::Sort`]); returns
/// operand `output`, sorted.
pub(crate) fn sort(
    args: &[&Tensor],
    dim: usize,
    keys: usize,
    dir: CompareDir,
    order: SortOrder,
    output: usize,
) -> Result<Buffer, String> {
    let shape = args[0].shape();
    // Each element's keys, one per key operand, next to each other.
    let total: usize = shape.iter().product();
    let mut key = Vec::with_capacity(total * keys);
    for e in 0..total {
        key.extend(args[..keys].iter().map(|t| order.key(t.data().get(e))));
    }
    let before =
        |a: usize, b: usize| sorts_before(&key[a * keys..][..keys], &key[b * keys..][..keys], dir);
    let n = shape[dim];
    let stride = row_major_strides(shape)[dim];
    // Source element of every output element.
    let mut from = vec![0usize; total];
    let mut line = Vec::with_capacity(n);
    let mut scratch = Vec::with_capacity(n);
    if n > 0 {
        for outer in 0..total / (n * stride) {
            for inner in 0..stride {
                let base = outer * n * stride + inner;
                line.clear();
                line.extend((0..n).map(|i| base + i * stride));
                merge_sort(&mut line, &mut scratch, &before);
                for (i, &src) in line.iter().enumerate() {
                    from[base + i * stride] = src;
                }
            }
        }
    }
    let out = args[output];
    for_dtype!(out.dtype(), T => {
        let src = slice_of::<T>(out.data())?;
        Ok(T::into_buffer(from.iter().map(|&i| src[i]).collect()))
    })
}

/// Stable merge sort of `v` by `before` (bottom-up, so it needs no recursion).
fn merge_sort(
    v: &mut Vec<usize>,
    scratch: &mut Vec<usize>,
    before: &impl Fn(usize, usize) -> bool,
) {
    let n = v.len();
    let mut width = 1;
    while width < n {
        scratch.clear();
        for lo in (0..n).step_by(2 * width) {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j) = (lo, mid);
            while i < mid && j < hi {
                // Take from the right only when strictly before: stability.
                if before(v[j], v[i]) {
                    scratch.push(v[j]);
                    j += 1;
                } else {
                    scratch.push(v[i]);
                    i += 1;
                }
            }
            scratch.extend_from_slice(&v[i..mid]);
            scratch.extend_from_slice(&v[j..hi]);
        }
        std::mem::swap(v, scratch);
        width *= 2;
    }
}

/// `reduce_argmax` / `reduce_argmin` (see [`kiln_ir::Op::ArgReduce`]): the folded values
/// (`output = 0`) or indices (`output = 1`).
pub(crate) fn arg_reduce(
    args: &[&Tensor],
    kind: ArgKind,
    axes: &[usize],
    output: usize,
) -> Result<Buffer, String> {
    let (x, i) = (args[0], args[1]);
    for_computed_dtype!(x.dtype(), V => {
        for_computed_dtype!(i.dtype(), I => {
            let (vals, idxs) = (slice_of::<V>(x.data())?, slice_of::<I>(i.data())?);
            let v0 = slice_of::<V>(args[2].data())?[0];
            let i0 = slice_of::<I>(args[3].data())?[0];
            let (v, ix) = fold(vals, idxs, (v0, i0), x.shape(), axes, kind);
            Ok(match output {
                0 => V::into_buffer(v),
                _ => I::into_buffer(ix),
            })
        })
    })
}

/// The fold over every kept position, in row-major order of the reduced dimensions.
fn fold<V: Elem + PartialOrd, I: Elem + PartialOrd>(
    vals: &[V],
    idxs: &[I],
    init: (V, I),
    shape: &[usize],
    axes: &[usize],
    kind: ArgKind,
) -> (Vec<V>, Vec<I>) {
    let strides = row_major_strides(shape);
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let kept_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let red_shape: Vec<usize> = axes.iter().map(|&d| shape[d]).collect();
    let outputs: usize = kept_shape.iter().product();
    let per_output: usize = red_shape.iter().product();
    let (mut out_v, mut out_i) = (Vec::with_capacity(outputs), Vec::with_capacity(outputs));
    let mut k_idx = vec![0; kept.len()];
    // Row-major order of the reduced dimensions taken in increasing dimension order.
    let mut sorted_axes = axes.to_vec();
    sorted_axes.sort_unstable();
    let red_sorted_shape: Vec<usize> = sorted_axes.iter().map(|&d| shape[d]).collect();
    for _ in 0..outputs {
        let base: usize = kept.iter().zip(&k_idx).map(|(&d, &k)| k * strides[d]).sum();
        let mut acc = init;
        let mut r_idx = vec![0; sorted_axes.len()];
        for _ in 0..per_output {
            let off: usize = sorted_axes
                .iter()
                .zip(&r_idx)
                .map(|(&d, &k)| k * strides[d])
                .sum();
            acc = kind.step(acc, (vals[base + off], idxs[base + off]));
            next_index(&mut r_idx, &red_sorted_shape);
        }
        out_v.push(acc.0);
        out_i.push(acc.1);
        next_index(&mut k_idx, &kept_shape);
    }
    (out_v, out_i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::Tensor;

    fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), Buffer::F32(v.to_vec().into())).unwrap()
    }
    fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
        Tensor::new(shape.to_vec(), Buffer::I32(v.to_vec().into())).unwrap()
    }

    #[test]
    fn argmax_takes_the_first_nan_and_the_first_of_ties() {
        let nan = f32::NAN;
        let x = f32s(
            &[3, 4],
            &[1.0, 3.0, 3.0, 2.0, 1.0, nan, 5.0, nan, -0.0, 0.0, -1.0, 0.0],
        );
        let i = i32s(&[3, 4], &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        let (x0, i0) = (f32s(&[], &[f32::NEG_INFINITY]), i32s(&[], &[0]));
        let args = [&x, &i, &x0, &i0];
        let idx = arg_reduce(&args, ArgKind::Max, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![1, 1, 0].into()));
        // argmin starts from +inf, as jnp.argmin; from -inf nothing would beat the start.
        let inf = f32s(&[], &[f32::INFINITY]);
        let idx = arg_reduce(&[&x, &i, &inf, &i0], ArgKind::Min, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![0, 1, 2].into()));
        let idx = arg_reduce(&args, ArgKind::Min, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![0, 1, 0].into()));
        let Buffer::F32(v) = arg_reduce(&args, ArgKind::Max, &[1], 0).unwrap() else {
            panic!()
        };
        assert!(v[0] == 3.0 && v[1].is_nan() && v[2] == 0.0);
        // Over both axes, row-major: the first NaN is element 5.
        let idx = arg_reduce(&args, ArgKind::Max, &[0, 1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![1].into()));
        // Over axis 0: column 3 is (2, nan, 0) -> the NaN's index 3 (its own index value).
        let idx = arg_reduce(&args, ArgKind::Max, &[0], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![0, 1, 2, 3].into()));
    }

    #[test]
    fn tensorflow_argmax_lets_a_nan_lose_to_the_next_element() {
        let nan = f32::NAN;
        let x = f32s(
            &[3, 4],
            &[1.0, 3.0, 3.0, 2.0, 1.0, nan, 5.0, nan, -0.0, 0.0, -1.0, 0.0],
        );
        let i = i32s(&[3, 4], &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        let i0 = i32s(&[], &[0]);
        let (ninf, inf) = (f32s(&[], &[f32::NEG_INFINITY]), f32s(&[], &[f32::INFINITY]));
        // Row 1 ends on a NaN, which nothing follows: it wins; -0 == 0 ties keep index 0.
        let idx = arg_reduce(&[&x, &i, &ninf, &i0], ArgKind::TfMax, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![1, 3, 0].into()));
        let idx = arg_reduce(&[&x, &i, &inf, &i0], ArgKind::TfMin, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![0, 3, 2].into()));
    }

    #[test]
    fn argmax_of_nothing_is_the_initial_pair() {
        let x = f32s(&[2, 0], &[]);
        let i = i32s(&[2, 0], &[]);
        let (x0, i0) = (f32s(&[], &[-7.0]), i32s(&[], &[9]));
        let idx = arg_reduce(&[&x, &i, &x0, &i0], ArgKind::Max, &[1], 1).unwrap();
        assert_eq!(idx, Buffer::I32(vec![9, 9].into()));
    }

    #[test]
    fn sort_is_stable_and_carries_the_other_operands() {
        let k = f32s(&[2, 4], &[3.0, 1.0, 3.0, 0.0, -0.0, 0.0, f32::NAN, -1.0]);
        let i = i32s(&[2, 4], &[0, 1, 2, 3, 0, 1, 2, 3]);
        let args = [&k, &i];
        let s = |dir, order| sort(&args, 1, 1, dir, order, 1).unwrap();
        assert_eq!(
            s(CompareDir::Lt, SortOrder::Canonical),
            Buffer::I32(vec![3, 1, 0, 2, 3, 0, 1, 2].into())
        );
        assert_eq!(
            s(CompareDir::Lt, SortOrder::Total),
            Buffer::I32(vec![3, 1, 0, 2, 3, 0, 1, 2].into())
        );
        assert_eq!(
            s(CompareDir::Gt, SortOrder::Total),
            Buffer::I32(vec![0, 2, 1, 3, 2, 1, 0, 3].into())
        );
        // Along dim 0: each column on its own.
        let d0 = sort(&args, 0, 1, CompareDir::Lt, SortOrder::Total, 0).unwrap();
        let Buffer::F32(v) = d0 else { panic!() };
        let bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
        assert_eq!(
            &bits[..4],
            &[0x8000_0000, 0, 3f32.to_bits(), (-1f32).to_bits()]
        );
        assert!(v[4] == 3.0 && v[5] == 1.0 && v[6].is_nan() && v[7] == 0.0);
    }

    #[test]
    fn sort_by_two_keys_is_lexicographic() {
        let a = i32s(&[6], &[2, 1, 2, 1, 0, 2]);
        let b = i32s(&[6], &[5, 9, 1, 3, 7, 1]);
        let i = i32s(&[6], &[0, 1, 2, 3, 4, 5]);
        let got = sort(&[&a, &b, &i], 0, 2, CompareDir::Lt, SortOrder::Ieee, 2).unwrap();
        assert_eq!(got, Buffer::I32(vec![4, 3, 1, 2, 5, 0].into()));
    }
}
