//! Shape ops: `broadcast_in_dim`, `transpose`, `slice`, `concat`, `pad`, and `iota`.
//!
//! `broadcast_in_dim`, `transpose` and `slice` are one kernel, [`gather`]: the output is
//! written in row-major order and output index `(i_0, …)` reads input element
//! `base + Σ i_k·stride_k` (stride 0 for a broadcast dimension). The view is first
//! simplified (size-1 dimensions dropped, mergeable neighbours merged) so that the innermost
//! loop is as long as possible, then the inner loop is chosen once per op: a contiguous copy,
//! a fill, a cache-blocked 2-D transpose, or a plain strided loop. No per-element division.
//! `reshape` and `constant` need no kernel (the buffer is reused or cloned).

use crate::hw::{with_capacity_advised, zeroed};
use crate::par::{collect_in, fill1, Slot, BLOCK, PAR_MIN};
use crate::scalar::{for_dtype, Elem};
use kiln_ir::{row_major_strides, Buffer, DType, Tensor, TensorType};
use std::mem::MaybeUninit;

/// Side of the square tiles of the blocked transpose: two 32×32 tiles of f64 fit in L1.
const TILE: usize = 32;

/// A strided view of an input buffer, read in row-major order of `dims`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct View {
    /// Output dimensions.
    pub dims: Vec<usize>,
    /// Input stride (in elements) of each output dimension; 0 repeats.
    pub strides: Vec<usize>,
    /// Input offset of the first output element.
    pub base: usize,
}

impl View {
    /// Drops size-1 dimensions and merges neighbours `k, k+1` whose strides chain
    /// (`stride_k == stride_{k+1}·dim_{k+1}`, which also merges two broadcast dimensions).
    /// The result has rank ≥ 1 unless the view is empty.
    fn simplify(&self) -> View {
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: Vec<usize> = Vec::new();
        for (&d, &s) in self.dims.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        if dims.is_empty() {
            dims.push(1);
            strides.push(0);
        }
        View {
            dims,
            strides,
            base: self.base,
        }
    }
}

/// Materialises `view` of `inp`, splitting the outermost dimension across the pool.
pub(crate) fn gather<T: Elem>(inp: &[T], view: &View) -> Vec<T> {
    let n: usize = view.dims.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let v = view.simplify();
    let row = n / v.dims[0];
    let mut rows_per_task = BLOCK.div_ceil(row).max(1);
    if v.strides[0] == 1 {
        // A transpose whose input rows are read across the task's rows: whole tiles per
        // task, so each input cache line is used completely while it is cached.
        rows_per_task = rows_per_task.max(8 * TILE);
    }
    let parallel = n >= PAR_MIN && v.dims[0] >= 2;
    let fill = |first: usize, chunk: &mut [MaybeUninit<T>]| {
        let mut sub = v.clone();
        sub.dims[0] = chunk.len() / row;
        sub.base += first / row * v.strides[0];
        gather_into(chunk, inp, &sub);
    };
    // SAFETY: `gather_into` writes every element of its output (each chunk is whole rows).
    unsafe { collect_in(n, rows_per_task * row, parallel, fill) }
}

/// Odometer over some dimensions: yields the input offset of each index tuple in row-major
/// order, advancing with additions only.
struct Odometer<'a> {
    dims: &'a [usize],
    strides: &'a [usize],
    idx: Vec<usize>,
    off: usize,
}

impl<'a> Odometer<'a> {
    fn new(dims: &'a [usize], strides: &'a [usize], base: usize) -> Self {
        Odometer {
            dims,
            strides,
            idx: vec![0; dims.len()],
            off: base,
        }
    }

    /// Moves to the next index tuple (wrapping to the first after the last).
    fn advance(&mut self) {
        for k in (0..self.dims.len()).rev() {
            self.idx[k] += 1;
            self.off += self.strides[k];
            if self.idx[k] < self.dims[k] {
                return;
            }
            self.off -= self.strides[k] * self.dims[k];
            self.idx[k] = 0;
        }
    }
}

/// Writes a simplified view into every element of `out` (row-major, `out.len()` = the
/// view's element count).
fn gather_into<T: Elem>(out: &mut [impl Slot<T>], inp: &[T], v: &View) {
    let last = v.dims.len() - 1;
    let (len, step) = (v.dims[last], v.strides[last]);
    if step > 1 {
        if let Some(p) = v.strides[..last].iter().position(|&s| s == 1) {
            return transpose_tiles(out, inp, v, p);
        }
    }
    let mut odo = Odometer::new(&v.dims[..last], &v.strides[..last], v.base);
    for run in out.chunks_exact_mut(len) {
        let off = odo.off;
        match step {
            1 => fill1(run, &inp[off..off + len], &|x| x),
            0 => run.iter_mut().for_each(|o| o.put(inp[off])),
            _ => {
                for (o, &x) in run.iter_mut().zip(inp[off..].iter().step_by(step)) {
                    o.put(x);
                }
            }
        }
        odo.advance();
    }
}

/// The case where output dimension `p` is contiguous in the input but the last output
/// dimension is not: copies `TILE`×`TILE` tiles of the (p, last) plane so that both the
/// reads and the writes of a tile stay in cache.
fn transpose_tiles<T: Elem>(out: &mut [impl Slot<T>], inp: &[T], v: &View, p: usize) {
    let r = v.dims.len();
    let last = r - 1;
    let out_strides = row_major_strides(&v.dims);
    let (dp, dl) = (v.dims[p], v.dims[last]);
    let (osp, isl) = (out_strides[p], v.strides[last]);
    // The remaining dimensions, iterated by an odometer that tracks both offsets.
    let rest: Vec<usize> = (0..last).filter(|&k| k != p).collect();
    let rest_dims: Vec<usize> = rest.iter().map(|&k| v.dims[k]).collect();
    let rest_in: Vec<usize> = rest.iter().map(|&k| v.strides[k]).collect();
    let rest_out: Vec<usize> = rest.iter().map(|&k| out_strides[k]).collect();
    let outer: usize = rest_dims.iter().product();
    let mut in_odo = Odometer::new(&rest_dims, &rest_in, v.base);
    let mut out_odo = Odometer::new(&rest_dims, &rest_out, 0);
    // The tile goes through a small local buffer: every cache line of the input and the
    // output is then touched in one burst, so power-of-two strides (which map all rows of a
    // tile to one cache set) cannot evict lines half-used.
    let mut tile = [T::default(); TILE * TILE];
    for _ in 0..outer {
        let (ib, ob) = (in_odo.off, out_odo.off);
        // Input rows (j) outermost: each input row is read in long contiguous runs.
        for j0 in (0..dl).step_by(TILE) {
            let nj = TILE.min(dl - j0);
            for i0 in (0..dp).step_by(TILE) {
                let ni = TILE.min(dp - i0);
                for j in 0..nj {
                    let src = &inp[ib + (j0 + j) * isl + i0..][..ni];
                    for (i, &x) in src.iter().enumerate() {
                        tile[i * TILE + j] = x;
                    }
                }
                for i in 0..ni {
                    let dst = &mut out[ob + (i0 + i) * osp + j0..][..nj];
                    fill1(dst, &tile[i * TILE..][..nj], &|x| x);
                }
            }
        }
        in_odo.advance();
        out_odo.advance();
    }
}

pub(crate) fn slice_of<T: Elem>(b: &Buffer) -> Result<&[T], String> {
    T::slice(b).ok_or_else(|| format!("unexpected operand dtype {}", b.dtype()))
}

/// Gathers `view` from a buffer of any dtype.
pub(crate) fn gather_buffer(a: &Buffer, view: &View) -> Result<Buffer, String> {
    for_dtype!(a.dtype(), T => Ok(T::into_buffer(gather(slice_of::<T>(a)?, view))))
}

/// `broadcast_in_dim`: operand dimension i becomes result dimension `dims[i]`.
pub(crate) fn broadcast_in_dim(
    a: &Tensor,
    dims: &[usize],
    out: &[usize],
) -> Result<Buffer, String> {
    let in_strides = row_major_strides(a.shape());
    let mut strides = vec![0; out.len()];
    for (i, &d) in dims.iter().enumerate() {
        if a.shape()[i] != 1 {
            strides[d] = in_strides[i];
        }
    }
    let view = View {
        dims: out.to_vec(),
        strides,
        base: 0,
    };
    gather_buffer(a.data(), &view)
}

/// `transpose`: result dimension i is operand dimension `perm[i]`.
pub(crate) fn transpose(a: &Tensor, perm: &[usize]) -> Result<Buffer, String> {
    let in_strides = row_major_strides(a.shape());
    let view = View {
        dims: perm.iter().map(|&p| a.shape()[p]).collect(),
        strides: perm.iter().map(|&p| in_strides[p]).collect(),
        base: 0,
    };
    gather_buffer(a.data(), &view)
}

/// `slice` with per-dimension start and stride; `out` is the result shape.
pub(crate) fn slice(
    a: &Tensor,
    start: &[usize],
    stride: &[usize],
    out: &[usize],
) -> Result<Buffer, String> {
    let in_strides = row_major_strides(a.shape());
    let view = View {
        dims: out.to_vec(),
        strides: in_strides.iter().zip(stride).map(|(s, t)| s * t).collect(),
        base: in_strides.iter().zip(start).map(|(s, i)| s * i).sum(),
    };
    gather_buffer(a.data(), &view)
}

/// `concat` along `axis`: each output "row" (fixed indices before `axis`) is the operands'
/// rows one after another.
pub(crate) fn concat(args: &[&Tensor], axis: usize, out: &TensorType) -> Result<Buffer, String> {
    for_dtype!(out.dtype, T => {
        let parts = args
            .iter()
            .map(|t| slice_of::<T>(t.data()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(T::into_buffer(concat_slices(&parts, args, axis, out)))
    })
}

fn concat_slices<T: Elem>(
    parts: &[&[T]],
    args: &[&Tensor],
    axis: usize,
    out: &TensorType,
) -> Vec<T> {
    let n = out.num_elements();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let runs: Vec<usize> = args.iter().map(|t| t.shape()[axis] * inner).collect();
    let row: usize = runs.iter().sum();
    if n == 0 {
        return Vec::new();
    }
    let fill = |first: usize, chunk: &mut [MaybeUninit<T>]| {
        let mut pos = 0;
        for r in first / row.max(1).. {
            if pos == chunk.len() {
                break;
            }
            for (part, &len) in parts.iter().zip(&runs) {
                fill1(
                    &mut chunk[pos..pos + len],
                    &part[r * len..(r + 1) * len],
                    &|x| x,
                );
                pos += len;
            }
        }
    };
    let rows_per_task = BLOCK.div_ceil(row.max(1)).max(1);
    // SAFETY: each chunk is whole rows, and a row is the runs of every part in turn.
    unsafe { collect_in(n, rows_per_task * row, n >= PAR_MIN, fill) }
}

/// `pad`: the result is filled with the padding value, then the operand is copied into the
/// interior one contiguous row at a time.
pub(crate) fn pad(
    a: &Tensor,
    value: &Tensor,
    low: &[usize],
    out: &TensorType,
) -> Result<Buffer, String> {
    for_dtype!(out.dtype, T => {
        let src = slice_of::<T>(a.data())?;
        let fill = *slice_of::<T>(value.data())?
            .first()
            .ok_or("padding value has no element")?;
        Ok(T::into_buffer(pad_slice(src, a.shape(), fill, low, &out.shape)))
    })
}

fn pad_slice<T: Elem>(src: &[T], shape: &[usize], fill: T, low: &[usize], out: &[usize]) -> Vec<T> {
    // One pass: the padding value written into uncleared memory.
    let n = out.iter().product();
    let mut res = with_capacity_advised(n);
    res.resize(n, fill);
    if src.is_empty() {
        return res;
    }
    if shape.is_empty() {
        res[0] = src[0];
        return res;
    }
    let out_strides = row_major_strides(out);
    let last = shape.len() - 1;
    let len = shape[last];
    let base: usize = low.iter().zip(&out_strides).map(|(l, s)| l * s).sum();
    let mut odo = Odometer::new(&shape[..last], &out_strides[..last], base);
    for row in src.chunks_exact(len) {
        res[odo.off..odo.off + len].copy_from_slice(row);
        odo.advance();
    }
    res
}

/// `iota`: each element is its index along `dim`.
pub(crate) fn iota(ty: &TensorType, dim: usize) -> Result<Buffer, String> {
    macro_rules! fill {
        ($t:ty, $variant:ident) => {
            Buffer::$variant(iota_slice(&ty.shape, dim, |i| i as $t).into())
        };
    }
    Ok(match ty.dtype {
        DType::F32 => fill!(f32, F32),
        DType::F64 => fill!(f64, F64),
        DType::I32 => fill!(i32, I32),
        DType::I64 => fill!(i64, I64),
        DType::U32 => fill!(u32, U32),
        DType::U64 => fill!(u64, U64),
        DType::I8 => fill!(i8, I8),
        DType::U8 => fill!(u8, U8),
        DType::I16 => fill!(i16, I16),
        DType::U16 => fill!(u16, U16),
        DType::Bool => return Err("iota is not defined for bool".into()),
        d @ (DType::F16 | DType::Bf16) => return Err(crate::float16::computed_in_f32(d)),
    })
}

fn iota_slice<T: Elem>(shape: &[usize], dim: usize, of: impl Fn(usize) -> T) -> Vec<T> {
    let inner: usize = shape[dim + 1..].iter().product();
    let mut res = zeroed(shape.iter().product());
    if inner == 0 {
        return res;
    }
    for (k, run) in res.chunks_exact_mut(inner).enumerate() {
        run.fill(of(k % shape[dim]));
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_merges_and_drops() {
        let v = View {
            dims: vec![2, 1, 3, 4],
            strides: vec![12, 99, 4, 1],
            base: 5,
        };
        let s = v.simplify();
        assert_eq!((s.dims, s.strides, s.base), (vec![24], vec![1], 5));
        let b = View {
            dims: vec![3, 4, 5],
            strides: vec![0, 0, 1],
            base: 0,
        }
        .simplify();
        assert_eq!((b.dims, b.strides), (vec![12, 5], vec![0, 1]));
    }

    /// `gather` writes uncleared memory: every element, for each kind of view (contiguous
    /// runs, broadcast, strided, tiled transpose), small and split across tasks; compared
    /// with the view's definition, element by element. The dropped block of sentinels is
    /// what the allocator most likely hands back.
    #[test]
    fn gather_writes_every_element_of_uncleared_memory() {
        for (rows, cols) in [(3, 5), (300, 257), (1024, 96)] {
            let inp: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            let views = [
                // Rows 1.. of the input: contiguous runs.
                (vec![rows - 1, cols], vec![cols, 1], cols),
                // Each row's first element broadcast along the row.
                (vec![rows, cols], vec![cols, 0], 0),
                // Every other column.
                (vec![rows, cols / 2], vec![cols, 2], 0),
                // The transpose.
                (vec![cols, rows], vec![1, cols], 0),
            ];
            for (dims, strides, base) in views {
                let v = View {
                    dims,
                    strides,
                    base,
                };
                let n: usize = v.dims.iter().product();
                drop(vec![f32::from_bits(0x7fa0_0001); 2 * n]);
                let got = gather(&inp, &v);
                let want: Vec<f32> = (0..n)
                    .map(|i| {
                        let (r, c) = (i / v.dims[1], i % v.dims[1]);
                        inp[v.base + r * v.strides[0] + c * v.strides[1]]
                    })
                    .collect();
                assert_eq!(got, want, "{rows}x{cols}, view {v:?}");
            }
        }
    }

    #[test]
    fn concat_writes_every_element_of_uncleared_memory() {
        for rows in [2, 700] {
            let a = Tensor::from_f32([rows, 3], (0..rows * 3).map(|i| i as f32).collect());
            let b = Tensor::from_f32([rows, 130], (0..rows * 130).map(|i| -(i as f32)).collect());
            let (a, b) = (a.unwrap(), b.unwrap());
            let ty = TensorType::new(DType::F32, vec![rows, 133]);
            drop(vec![f32::from_bits(0x7fa0_0001); 2 * rows * 133]);
            let got = concat(&[&a, &b], 1, &ty).unwrap();
            let (av, bv) = (a.as_f32().unwrap(), b.as_f32().unwrap());
            let want: Vec<f32> = (0..rows)
                .flat_map(|r| {
                    av[r * 3..][..3]
                        .iter()
                        .chain(&bv[r * 130..][..130])
                        .copied()
                })
                .collect();
            assert_eq!(got, Buffer::F32(want.into()), "{rows} rows");
        }
    }

    #[test]
    fn odometer_offsets() {
        let mut o = Odometer::new(&[2, 3], &[10, 1], 100);
        let mut seen = Vec::new();
        for _ in 0..7 {
            seen.push(o.off);
            o.advance();
        }
        assert_eq!(seen, vec![100, 101, 102, 110, 111, 112, 100]);
    }
}
