//! Data-movement ops defined as XLA defines them: `reverse`, `dynamic_slice`,
//! `dynamic_update_slice` and the general `pad` (negative edges, interior padding).
//!
//! Each output element is a copy of one input element (or the padding value), so the
//! results cannot depend on the thread count; the loops run on the calling thread.

use crate::scalar::{for_dtype, Elem};
use crate::shape::slice_of;
use kiln_ir::{row_major_strides, Buffer, Tensor};

/// Steps `idx` to the next multi-index of `shape` in row-major order (wrapping to zeros).
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) {
    for k in (0..shape.len()).rev() {
        idx[k] += 1;
        if idx[k] < shape[k] {
            return;
        }
        idx[k] = 0;
    }
}

/// `reverse`: element `i` along each dimension of `dims` comes from `n - 1 - i`.
pub(crate) fn reverse(a: &Tensor, dims: &[usize]) -> Result<Buffer, String> {
    for_dtype!(a.dtype(), T => {
        let src = slice_of::<T>(a.data())?;
        Ok(T::into_buffer(reverse_slice(src, a.shape(), dims)))
    })
}

fn reverse_slice<T: Elem>(src: &[T], shape: &[usize], dims: &[usize]) -> Vec<T> {
    let Some(last) = shape.len().checked_sub(1) else {
        return src.to_vec();
    };
    let len = shape[last];
    if src.is_empty() || len == 0 {
        return Vec::new();
    }
    let strides = row_major_strides(shape);
    let flip_last = dims.contains(&last);
    let mut out = Vec::with_capacity(src.len());
    let mut idx = vec![0; last];
    for _ in 0..src.len() / len {
        let off: usize = (0..last)
            .map(|k| {
                let i = if dims.contains(&k) {
                    shape[k] - 1 - idx[k]
                } else {
                    idx[k]
                };
                i * strides[k]
            })
            .sum();
        let row = &src[off..off + len];
        if flip_last {
            out.extend(row.iter().rev());
        } else {
            out.extend_from_slice(row);
        }
        next_index(&mut idx, &shape[..last]);
    }
    out
}

/// The value of a scalar integer tensor (a start index), widened to `i64`.
pub(crate) fn scalar_index(t: &Tensor) -> Result<i64, String> {
    let err = || format!("a start index must be an integer scalar, got {}", t.ty());
    match t.data() {
        Buffer::I32(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        Buffer::I64(v) => v.first().copied().ok_or_else(err),
        Buffer::U32(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        // Beyond i64::MAX clamps to the last start either way: saturate.
        Buffer::U64(v) => v
            .first()
            .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
            .ok_or_else(err),
        Buffer::I8(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        Buffer::U8(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        Buffer::I16(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        Buffer::U16(v) => v.first().map(|&x| i64::from(x)).ok_or_else(err),
        _ => Err(err()),
    }
}

/// Start indices clamped as XLA does: `clamp(start, 0, dim - size)` per dimension.
fn clamped_starts(idx: &[&Tensor], dims: &[usize], sizes: &[usize]) -> Result<Vec<usize>, String> {
    idx.iter()
        .zip(dims.iter().zip(sizes))
        .map(|(t, (&n, &s))| {
            let hi = i64::try_from(n - s).unwrap_or(i64::MAX);
            Ok(scalar_index(t)?.clamp(0, hi) as usize)
        })
        .collect()
}

/// `dynamic_slice`: the window of `sizes` at the clamped starts.
pub(crate) fn dynamic_slice(args: &[&Tensor], sizes: &[usize]) -> Result<Buffer, String> {
    let a = args[0];
    let start = clamped_starts(&args[1..], a.shape(), sizes)?;
    crate::shape::slice(a, &start, &vec![1; sizes.len()], sizes)
}

/// `dynamic_update_slice`: the operand with the window at the clamped starts replaced by
/// the update, one contiguous row at a time.
pub(crate) fn dynamic_update_slice(args: &[&Tensor]) -> Result<Buffer, String> {
    let (a, u) = (args[0], args[1]);
    let start = clamped_starts(&args[2..], a.shape(), u.shape())?;
    for_dtype!(a.dtype(), T => {
        let mut out = slice_of::<T>(a.data())?.to_vec();
        write_window(&mut out, a.shape(), slice_of::<T>(u.data())?, u.shape(), &start);
        Ok(T::into_buffer(out))
    })
}

/// [`dynamic_update_slice`] written into its operand `target` (`args`: the update, then
/// the start indices): the same elements, without copying the operand first.
pub(crate) fn dynamic_update_slice_in_place(
    target: &mut Tensor,
    args: &[&Tensor],
) -> Result<(), String> {
    let [u, starts @ ..] = args else {
        return Err("an update and start indices are needed".to_string());
    };
    let shape = target.shape().to_vec();
    let start = clamped_starts(starts, &shape, u.shape())?;
    let dtype = target.dtype();
    for_dtype!(dtype, T => {
        let upd = slice_of::<T>(u.data())?;
        let dst = T::slice_mut(target.data_mut())
            .ok_or_else(|| format!("unexpected operand dtype {dtype}"))?;
        write_window(dst, &shape, upd, u.shape(), &start);
        Ok(())
    })
}

/// Writes `upd` (of shape `ushape`) into `out` (of shape `shape`) at `start`.
fn write_window<T: Elem>(
    out: &mut [T],
    shape: &[usize],
    upd: &[T],
    ushape: &[usize],
    start: &[usize],
) {
    let Some(last) = shape.len().checked_sub(1) else {
        out.copy_from_slice(upd);
        return;
    };
    let len = ushape[last];
    if upd.is_empty() || len == 0 {
        return;
    }
    let strides = row_major_strides(shape);
    let mut idx = vec![0; last];
    for row in upd.chunks_exact(len) {
        let off: usize = (0..last)
            .map(|k| (idx[k] + start[k]) * strides[k])
            .sum::<usize>()
            + start[last];
        out[off..off + len].copy_from_slice(row);
        next_index(&mut idx, &ushape[..last]);
    }
}

/// XLA's general `pad`: the result is filled with the padding value, then operand element
/// `s` goes to `low + s * (interior + 1)` along each dimension when that lies inside the
/// result (negative edges cut elements off).
pub(crate) fn pad_general(
    a: &Tensor,
    value: &Tensor,
    low: &[i64],
    interior: &[usize],
    out: &[usize],
) -> Result<Buffer, String> {
    for_dtype!(a.dtype(), T => {
        let src = slice_of::<T>(a.data())?;
        let fill = *slice_of::<T>(value.data())?
            .first()
            .ok_or("padding value has no element")?;
        Ok(T::into_buffer(pad_slice(src, a.shape(), fill, low, interior, out)))
    })
}

fn pad_slice<T: Elem>(
    src: &[T],
    shape: &[usize],
    fill: T,
    low: &[i64],
    interior: &[usize],
    out: &[usize],
) -> Vec<T> {
    let n: usize = out.iter().product();
    let mut res = vec![fill; n];
    if n == 0 {
        return res;
    }
    let strides = row_major_strides(out);
    let mut idx = vec![0; shape.len()];
    'elements: for &x in src {
        let mut off = 0;
        for d in 0..shape.len() {
            let p = low[d] as i128 + idx[d] as i128 * (interior[d] as i128 + 1);
            if p < 0 || p >= out[d] as i128 {
                next_index(&mut idx, shape);
                continue 'elements;
            }
            off += p as usize * strides[d];
        }
        res[off] = x;
        next_index(&mut idx, shape);
    }
    res
}
