//! Operands copied into the layout `matrixmultiply` packs fastest.
//!
//! `matrixmultiply` packs the left operand into panels of 16 rows stored column by column,
//! and the right one into panels of 16 columns stored row by row. It copies a panel's
//! column (row) with one `memcpy` when the operand is column-major (row-major), and element
//! by element through both strides otherwise. A row-major left operand — every dense
//! layer's `x·W` — takes that slow path, once per GEMM call that reads it: for the MLP's
//! 256×784 · 784×512 split into four column tiles, the strided packing took half as long as
//! the microkernel. Copying such an operand once, transposed, before the calls makes every
//! packing a `memcpy`.
//!
//! **Bits:** packing moves values, it computes nothing, and the K loop and microkernel are
//! the same whatever the operand's strides; a product gives the same bits with or without
//! the copy (`tests` in `dot.rs` compares them).

use super::OutPtr;
use rayon::prelude::*;

/// Rows at a time one task of [`transpose`] copies (a multiple of the vector block's 8).
const TASK_ROWS: usize = 64;

/// `dst[l·rows + i] = src[i·rs + l]` for `i < rows`, `l < cols`: the `rows × cols` matrix
/// at `src` (row stride `rs`, unit column stride) copied column-major into a new vector,
/// in tasks of [`TASK_ROWS`] rows spread over the pool when there are several.
///
/// Panics when `src` is too short (a caller's bug, never the user's input).
pub(crate) fn transposed<T: Copy + Send + Sync + 'static>(
    src: &[T],
    rows: usize,
    cols: usize,
    rs: usize,
) -> Vec<T> {
    let len = rows * cols;
    if len == 0 {
        return Vec::new();
    }
    assert!(src.len() >= (rows - 1) * rs + cols);
    let mut data: Vec<T> = Vec::with_capacity(len);
    let dst = OutPtr(data.as_mut_ptr());
    let task = |r0: usize| {
        let r1 = (r0 + TASK_ROWS).min(rows);
        // SAFETY: the assertion bounds every `src[i·rs + l]` read; `dst` has capacity for
        // `rows·cols` elements and each task writes `dst[l·rows + i]` for its own rows i
        // only, so tasks write disjoint elements and nothing reads them meanwhile.
        unsafe { transpose_rows(src.as_ptr(), r0..r1, rows, cols, rs, dst.get()) }
    };
    let starts = (0..rows).step_by(TASK_ROWS);
    // Spread over the pool only from inside one: an op the interpreter runs on the calling
    // thread (`runs_inline` in lib.rs) must not reach the global pool.
    if rows > TASK_ROWS
        && rayon::current_thread_index().is_some()
        && rayon::current_num_threads() > 1
    {
        starts.collect::<Vec<_>>().into_par_iter().for_each(task);
    } else {
        starts.for_each(task);
    }
    // SAFETY: the tasks above wrote every element `l·rows + i` (i < rows, l < cols).
    unsafe { data.set_len(len) };
    data
}

/// [`transposed`] into `dst` (its contents replaced, its allocation reused), on this
/// thread: a task's copy of its own operand.
pub(crate) fn transpose_into<T: Copy + 'static>(
    src: &[T],
    rows: usize,
    cols: usize,
    rs: usize,
    dst: &mut Vec<T>,
) {
    let len = rows * cols;
    dst.clear();
    if len == 0 {
        return;
    }
    assert!(src.len() >= (rows - 1) * rs + cols);
    dst.reserve(len);
    // SAFETY: as in `transposed`, one task for all rows; `dst` has capacity for `len`.
    unsafe {
        transpose_rows(src.as_ptr(), 0..rows, rows, cols, rs, dst.as_mut_ptr());
        dst.set_len(len);
    }
}

/// The rows `rows` of [`transposed`]'s copy: `dst[l·total + i] = src[i·rs + l]` for
/// `i` in `rows`, `l < cols`, in 8×8 blocks of AVX shuffles where the CPU has AVX and the
/// elements are `f32`s, element by element otherwise and at the edges.
///
/// # Safety
/// `src[i·rs + l]` is readable and `dst[l·total + i]` writable for those `i` and `l`, and
/// nothing else accesses the written elements meanwhile.
unsafe fn transpose_rows<T: Copy + 'static>(
    src: *const T,
    rows: std::ops::Range<usize>,
    total: usize,
    cols: usize,
    rs: usize,
    dst: *mut T,
) {
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut vector_rows = rows.start..rows.start;
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
        && std::arch::is_x86_feature_detected!("avx")
    {
        vector_rows.end = rows.start + rows.len() / 8 * 8;
        // SAFETY: a sub-range of the caller's rows; `T` is `f32`; the CPU has AVX.
        unsafe {
            transpose_avx(
                src.cast::<f32>(),
                vector_rows.clone(),
                total,
                cols / 8 * 8,
                rs,
                dst.cast::<f32>(),
            )
        };
    }
    let vector_cols = if vector_rows.is_empty() {
        0
    } else {
        cols / 8 * 8
    };
    // The rest element by element: the vector rows' last columns, then the other rows.
    for i in rows {
        let from = if vector_rows.contains(&i) {
            vector_cols
        } else {
            0
        };
        for l in from..cols {
            // SAFETY: i in the caller's rows, l < cols.
            unsafe { *dst.add(l * total + i) = *src.add(i * rs + l) };
        }
    }
}

/// [`transpose_rows`] of `f32`s for `rows` (of a multiple of 8 rows) and the first `cols`
/// columns (a multiple of 8), in 8×8 blocks of AVX shuffles.
///
/// # Safety
/// The CPU has AVX; as [`transpose_rows`] for these rows and columns.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose_avx(
    src: *const f32,
    rows: std::ops::Range<usize>,
    total: usize,
    cols: usize,
    rs: usize,
    dst: *mut f32,
) {
    use std::arch::x86_64::*;
    // Walk 64 columns at a time so the 8 source rows and the 64 destination columns a
    // strip touches stay in L1 across its row blocks.
    for lb in (0..cols).step_by(64) {
        let lend = (lb + 64).min(cols);
        for i in rows.clone().step_by(8) {
            for l in (lb..lend).step_by(8) {
                // SAFETY (loads and stores): rows i..i + 8 and columns l..l + 8 are the
                // caller's.
                let r = |j: usize| unsafe { _mm256_loadu_ps(src.add((i + j) * rs + l)) };
                let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
                let (r4, r5, r6, r7) = (r(4), r(5), r(6), r(7));
                // Pairs of rows interleaved, then quadruples: each 128-bit half holds one
                // column's four rows (columns 0-3 in the low halves, 4-7 in the high).
                let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
                let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
                let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
                let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
                let q0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                let q1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                let q2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                let q3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                let q4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                let q5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                let q6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                let q7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                let w = |j: usize, v: __m256| unsafe {
                    _mm256_storeu_ps(dst.add((l + j) * total + i), v)
                };
                w(0, _mm256_permute2f128_ps::<0x20>(q0, q4));
                w(1, _mm256_permute2f128_ps::<0x20>(q1, q5));
                w(2, _mm256_permute2f128_ps::<0x20>(q2, q6));
                w(3, _mm256_permute2f128_ps::<0x20>(q3, q7));
                w(4, _mm256_permute2f128_ps::<0x31>(q0, q4));
                w(5, _mm256_permute2f128_ps::<0x31>(q1, q5));
                w(6, _mm256_permute2f128_ps::<0x31>(q2, q6));
                w(7, _mm256_permute2f128_ps::<0x31>(q3, q7));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_lands_transposed() {
        for (rows, cols, pad) in [
            (1, 1, 0),
            (1, 9, 0),
            (9, 1, 3),
            (8, 8, 0),
            (16, 24, 5),
            (17, 65, 0),
            (70, 129, 7),
            (256, 784, 0),
            (203, 37, 2),
        ] {
            let rs = cols + pad;
            let src: Vec<f32> = (0..rows * rs).map(|v| v as f32).collect();
            let dst = transposed(&src, rows, cols, rs);
            let src64: Vec<u64> = (0..(rows * rs) as u64).collect();
            let ints = transposed(&src64, rows, cols, rs);
            let mut reused = vec![7.0f32; 3];
            transpose_into(&src, rows, cols, rs, &mut reused);
            assert_eq!(reused, dst, "{rows}x{cols} into a reused vector");
            for i in 0..rows {
                for l in 0..cols {
                    let want = (i * rs + l) as f32;
                    assert_eq!(dst[l * rows + i], want, "{rows}x{cols}: ({i}, {l})");
                    assert_eq!(ints[l * rows + i], (i * rs + l) as u64, "u64 ({i}, {l})");
                }
            }
        }
    }
}
