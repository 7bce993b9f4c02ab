//! Canonical `f32` sums (design.md's Invariant 2, [`crate::reduce`]) for compiled kernels'
//! host calls: a row of a buffer summed in one call (its `f32`s, the exact widenings of
//! its 16-bit floats, or the squares of its differences from one value), and a block of
//! summands folded into a caller's 32 lane accumulators.
//!
//! Each is the canonical order itself — element `i` into lane `i mod 32` in index order,
//! then the fixed tree; chunks of [`CHUNK`] reduced so and their partials combined the same
//! way — on 256-bit vectors where the CPU has AVX2 (the 32 lanes are four accumulators), so
//! a kernel's emitted four-lane loop and these calls give the same bits.
//! The summand is computed exactly as the kernel's nodes compute it: the widening is exact,
//! and `(x - c)²` is the IEEE subtraction, then the IEEE product (never fused).

use crate::reduce::{CHUNK, LANES, TREE};
use kiln_math::float16::{to_f32, Half};

/// A row [`sum_row`] sums.
#[derive(Debug, Clone, Copy)]
pub enum SumRow<'a> {
    /// The `f32`s themselves.
    F32(&'a [f32]),
    /// The exact `f32` of each 16-bit float of this format.
    Half(Half, &'a [u16]),
    /// `(x - c) * (x - c)` of each `x`, with this `c` (a variance's summand).
    ShiftedSquare(&'a [f32], f32),
}

/// The canonical sum (identity `+0.0`) of the summands of `row`, in index order.
pub fn sum_row(row: SumRow) -> f32 {
    let n = match row {
        SumRow::F32(xs) | SumRow::ShiftedSquare(xs, _) => xs.len(),
        SumRow::Half(_, xs) => xs.len(),
    };
    if n <= CHUNK {
        if let Some(r) = whole_blocks(row, n) {
            return r;
        }
        let mut p = [0f32; LANES];
        accumulate(&mut p, row, 0, n);
        return tree(p, n);
    }
    let partials: Vec<f32> = (0..n)
        .step_by(CHUNK)
        .map(|c0| {
            let mut p = [0f32; LANES];
            accumulate(&mut p, row, c0, (c0 + CHUNK).min(n));
            tree(p, (n - c0).min(CHUNK))
        })
        .collect();
    sum_row(SumRow::F32(&partials))
}

/// Folds `xs` into the lane accumulators `acc`: `acc[i mod 32] += xs[i]` in index order —
/// one window of a canonical sum whose first element is at a multiple of 32 in its chunk.
pub fn sum_into_lanes(acc: &mut [f32; LANES], xs: &[f32]) {
    accumulate(acc, SumRow::F32(xs), 0, xs.len());
}

/// `p[(i - i0) mod 32] += summand(i)` for `i` in `i0..i1`, in index order: whole blocks of 32
/// on 256-bit vectors where the CPU has AVX2 (four vectors hold the 32 lanes, lane `l` in
/// vector `l / 8`), the rest one by one.
fn accumulate(p: &mut [f32; LANES], row: SumRow, i0: usize, i1: usize) {
    let done = i0 + vector_blocks(p, row, i0, (i1 - i0) / LANES) * LANES;
    for i in done..i1 {
        p[(i - i0) % LANES] += summand(row, i);
    }
}

/// Summand `i` of `row`: the same operations as the vector loop's.
#[inline(always)]
fn summand(row: SumRow, i: usize) -> f32 {
    match row {
        SumRow::F32(xs) => xs[i],
        SumRow::Half(h, xs) => to_f32(xs[i], h),
        SumRow::ShiftedSquare(xs, c) => {
            let d = xs[i] - c;
            d * d
        }
    }
}

/// Folds up to `blocks` blocks of 32 summands of `row` from `i0` into `p` on AVX2; returns
/// how many it folded (none without AVX2 and F16C; for an `f16` row, those before the first
/// block holding an infinity or a NaN).
#[cfg(target_arch = "x86_64")]
fn vector_blocks(p: &mut [f32; LANES], row: SumRow, i0: usize, blocks: usize) -> usize {
    if blocks == 0 || !avx2_f16c() {
        return 0;
    }
    let end = i0 + blocks * LANES;
    // SAFETY: AVX2 and F16C are present; every block read lies in `i0..end`, inside the row.
    unsafe {
        match row {
            SumRow::F32(xs) => avx2::blocks::<0>(p, xs[i0..end].as_ptr().cast(), 0.0, blocks),
            SumRow::ShiftedSquare(xs, c) => {
                avx2::blocks::<1>(p, xs[i0..end].as_ptr().cast(), c, blocks)
            }
            SumRow::Half(Half::Bf16, xs) => {
                avx2::blocks::<2>(p, xs[i0..end].as_ptr().cast(), 0.0, blocks)
            }
            SumRow::Half(Half::F16, xs) => {
                avx2::blocks::<3>(p, xs[i0..end].as_ptr().cast(), 0.0, blocks)
            }
        }
    }
}

/// Whether the CPU runs the [`avx2`] loops (AVX2 and F16C).
#[cfg(target_arch = "x86_64")]
fn avx2_f16c() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("f16c")
}

/// The canonical sum of a row of `n ≤ CHUNK` summands when `n` is a positive multiple of 32
/// and every block is folded on AVX2 ([`vector_blocks`]' conditions), the tree in vectors
/// too; `None` otherwise.
#[cfg(target_arch = "x86_64")]
fn whole_blocks(row: SumRow, n: usize) -> Option<f32> {
    if n == 0 || !n.is_multiple_of(LANES) || !avx2_f16c() {
        return None;
    }
    let blocks = n / LANES;
    // SAFETY: AVX2 and F16C are present; the row holds `n` summands.
    unsafe {
        match row {
            SumRow::F32(xs) => avx2::chunk::<0>(xs.as_ptr().cast(), 0.0, blocks),
            SumRow::ShiftedSquare(xs, c) => avx2::chunk::<1>(xs.as_ptr().cast(), c, blocks),
            SumRow::Half(Half::Bf16, xs) => avx2::chunk::<2>(xs.as_ptr().cast(), 0.0, blocks),
            SumRow::Half(Half::F16, xs) => avx2::chunk::<3>(xs.as_ptr().cast(), 0.0, blocks),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn whole_blocks(_: SumRow, _: usize) -> Option<f32> {
    None
}

#[cfg(not(target_arch = "x86_64"))]
fn vector_blocks(_: &mut [f32; LANES], _: SumRow, _: usize, _: usize) -> usize {
    0
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::LANES;
    use std::arch::x86_64::*;

    /// The 32 summands of block `b` at `src` as four vectors, by `FORM`: 0 `f32`s, 1
    /// `(x - c)²` of `f32`s, 2 `bf16`s widened by a shift, 3 `f16`s widened by F16C.
    #[inline(always)]
    unsafe fn load<const FORM: u8>(src: *const u8, c: __m256, b: usize) -> [__m256; 4] {
        let mut v = [_mm256_setzero_ps(); 4];
        for (k, v) in v.iter_mut().enumerate() {
            let i = b * LANES + k * 8;
            *v = match FORM {
                0 => _mm256_loadu_ps(src.cast::<f32>().add(i)),
                1 => {
                    let d = _mm256_sub_ps(_mm256_loadu_ps(src.cast::<f32>().add(i)), c);
                    _mm256_mul_ps(d, d)
                }
                2 => {
                    let h = _mm_loadu_si128(src.cast::<u16>().add(i).cast());
                    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
                }
                _ => _mm256_cvtph_ps(_mm_loadu_si128(src.cast::<u16>().add(i).cast())),
            };
        }
        v
    }

    /// Whether block `b` of `f16`s at `src` holds an infinity or a NaN (exponent all ones).
    #[inline(always)]
    unsafe fn any_nan_f16(src: *const u8, b: usize) -> bool {
        let exp = _mm_set1_epi16(0x7c00);
        let mut hit = _mm_setzero_si128();
        for k in 0..4 {
            let h = _mm_loadu_si128(src.cast::<u16>().add(b * LANES + k * 8).cast());
            hit = _mm_or_si128(hit, _mm_cmpeq_epi16(_mm_and_si128(h, exp), exp));
        }
        _mm_movemask_epi8(hit) != 0
    }

    /// `acc` (lane `l` in vector `l / 8`) plus `summand(32 b + l)` for `b < blocks`, lane by
    /// lane in block order; returns the blocks folded: all, or for `f16`s (`FORM` 3) those
    /// before the first holding an infinity or a NaN (its widening is left to the rule:
    /// `vcvtph2ps` would quiet a signalling NaN).
    #[inline(always)]
    unsafe fn fold<const FORM: u8>(
        acc: &mut [__m256; 4],
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> usize {
        let c = _mm256_set1_ps(c);
        for b in 0..blocks {
            if FORM == 3 && any_nan_f16(src, b) {
                return b;
            }
            let v = load::<FORM>(src, c, b);
            for k in 0..4 {
                acc[k] = _mm256_add_ps(acc[k], v[k]);
            }
        }
        blocks
    }

    /// [`fold`] into the lanes `p`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn blocks<const FORM: u8>(
        p: &mut [f32; LANES],
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> usize {
        let mut acc = [_mm256_setzero_ps(); 4];
        for (k, a) in acc.iter_mut().enumerate() {
            *a = _mm256_loadu_ps(p.as_ptr().add(k * 8));
        }
        let done = fold::<FORM>(&mut acc, src, c, blocks);
        for (k, a) in acc.iter().enumerate() {
            _mm256_storeu_ps(p.as_mut_ptr().add(k * 8), *a);
        }
        done
    }

    /// The canonical sum of `blocks` whole blocks (at most a chunk): [`fold`] from `+0.0`,
    /// then the tree in the vectors — `s = 16` adds vectors 2 and 3 to 0 and 1, `s = 8`
    /// vector 1 to 0, `s = 4` the high half to the low, `s = 2` and `1` within it, each
    /// `p[j] + p[j + s]` as the tree has it. `None` when [`fold`] stops early.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn chunk<const FORM: u8>(
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> Option<f32> {
        let mut acc = [_mm256_setzero_ps(); 4];
        if fold::<FORM>(&mut acc, src, c, blocks) != blocks {
            return None;
        }
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
        let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        let r = _mm_add_ss(q, _mm_shuffle_ps::<1>(q, q));
        Some(_mm_cvtss_f32(r))
    }
}

/// The canonical tree over the lanes of a sequence of `len` elements.
fn tree(mut p: [f32; LANES], len: usize) -> f32 {
    let mut live = len.min(LANES);
    for s in TREE {
        // Lanes at or past `live` hold `+0.0`, and `x + 0.0 = x` for every lane value
        // (a lane that started at `+0.0` is never `-0.0`): skipping them changes nothing.
        for j in 0..s.min(live.saturating_sub(s)) {
            p[j] += p[j + s];
        }
        live = live.min(s);
    }
    p[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical_reduce_ref;

    fn reference(xs: &[f32]) -> f32 {
        canonical_reduce_ref(xs, 0.0f32, |a, b| a + b)
    }

    /// Values whose sums depend on the order: magnitudes over many binades, signed zeros,
    /// subnormals.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                match i % 11 {
                    0 => -0.0,
                    1 => f32::from_bits(s & 0x807f_ffff), // subnormal
                    _ => {
                        let m = (s >> 9) as f32 / (1u32 << 23) as f32 - 0.5;
                        m * 2f32.powi((s % 40) as i32 - 20)
                    }
                }
            })
            .collect()
    }

    const LENGTHS: [usize; 14] = [
        0, 1, 5, 31, 32, 33, 63, 100, 511, 512, 1024, 4095, 4097, 9001,
    ];

    #[test]
    fn f32_rows_are_the_canonical_sum() {
        for (t, &n) in LENGTHS.iter().enumerate() {
            let xs = values(n, t as u32);
            let got = sum_row(SumRow::F32(&xs));
            assert_eq!(got.to_bits(), reference(&xs).to_bits(), "n={n}");
        }
        // A sum of negative zeros is +0.0, as XLA's.
        assert_eq!(sum_row(SumRow::F32(&[-0.0; 40])).to_bits(), 0);
    }

    #[test]
    fn half_rows_sum_their_exact_widenings() {
        for h in [Half::Bf16, Half::F16] {
            for (t, &n) in LENGTHS.iter().enumerate() {
                let bits: Vec<u16> = values(n, 7 + t as u32)
                    .iter()
                    .enumerate()
                    // Finite patterns of every exponent (no NaN: its payload is not
                    // promised), infinities excluded so the sums stay finite.
                    .map(|(i, x)| (x.to_bits() as u16 ^ (i as u16).wrapping_mul(40503)) & 0xbbff)
                    .collect();
                let wide: Vec<f32> = bits.iter().map(|&b| to_f32(b, h)).collect();
                let got = sum_row(SumRow::Half(h, &bits));
                assert_eq!(got.to_bits(), reference(&wide).to_bits(), "{h:?} n={n}");
            }
        }
    }

    #[test]
    fn shifted_squares_are_rounded_twice_then_summed() {
        for (t, &n) in LENGTHS.iter().enumerate() {
            let xs = values(n, 99 + t as u32);
            let c = 0.3125 + t as f32 * 1e-3;
            let squares: Vec<f32> = xs.iter().map(|&x| (x - c) * (x - c)).collect();
            let got = sum_row(SumRow::ShiftedSquare(&xs, c));
            assert_eq!(got.to_bits(), reference(&squares).to_bits(), "n={n}");
        }
    }

    #[test]
    fn windows_fold_into_the_lanes_of_the_canonical_order() {
        // A chunk of 1536 elements summed as three windows of 512 into one set of lanes,
        // then the tree: the canonical sum of the chunk.
        let xs = values(1536, 3);
        let mut p = [0f32; LANES];
        for w in xs.chunks(512) {
            sum_into_lanes(&mut p, w);
        }
        assert_eq!(tree(p, xs.len()).to_bits(), reference(&xs).to_bits());
        // Lanes that already hold values keep accumulating in index order.
        let mut q = [1.5f32; LANES];
        sum_into_lanes(&mut q, &xs[..64]);
        for (l, &v) in q.iter().enumerate() {
            assert_eq!(
                v.to_bits(),
                (1.5f32 + xs[l] + xs[l + 32]).to_bits(),
                "lane {l}"
            );
        }
    }

    #[test]
    fn infinities_and_nans_propagate() {
        let mut xs = values(700, 5);
        xs[300] = f32::INFINITY;
        assert_eq!(sum_row(SumRow::F32(&xs)), f32::INFINITY);
        xs[301] = f32::NEG_INFINITY;
        assert!(sum_row(SumRow::F32(&xs)).is_nan());
        // An f16 row whose later blocks hold an infinity and a signalling NaN: the blocks
        // from the first of them on are widened by the rule, so the bits are the
        // reference's, NaN payload included.
        let mut h: Vec<u16> = (0..300u16).map(|i| i.wrapping_mul(331) & 0x3bff).collect();
        let wide = |h: &[u16]| -> Vec<f32> { h.iter().map(|&b| to_f32(b, Half::F16)).collect() };
        h[100] = 0x7c00;
        let got = sum_row(SumRow::Half(Half::F16, &h));
        assert_eq!(got.to_bits(), reference(&wide(&h)).to_bits());
        h[100] = 0x3c00;
        h[250] = 0x7d01;
        let got = sum_row(SumRow::Half(Half::F16, &h));
        assert!(got.is_nan());
        assert_eq!(got.to_bits(), reference(&wide(&h)).to_bits());
        let bits = vec![0x7fc0u16; 40];
        assert!(sum_row(SumRow::Half(Half::Bf16, &bits)).is_nan());
        assert!(sum_row(SumRow::Half(Half::F16, &[0x7e00; 3])).is_nan());
    }
}
