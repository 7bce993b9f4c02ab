//! The vector loops of [`super::sum_row`] and [`super::sum_into_lanes`]: whole blocks of 32
//! summands folded into the 32 lane accumulators, on 256-bit vectors where the CPU has AVX2
//! and F16C (four accumulators, lane `l` in vector `l / 8`) and on 512-bit ones where it
//! also has AVX-512F (two, lane `l` in vector `l / 16`) — the same additions in the same
//! order at either width, so the same bits as the rule one element at a time.

use super::{SquareRounding, SumRow, LANES};
use kiln_math::float16::Half;

/// The vector form of `row`'s summands ([`avx2::load`]'s `FORM`), and the value they
/// subtract.
#[cfg(target_arch = "x86_64")]
fn form(row: SumRow) -> (u8, *const u8, f32) {
    match row {
        SumRow::F32(xs) => (0, xs.as_ptr().cast(), 0.0),
        SumRow::ShiftedSquare(xs, c) => (1, xs.as_ptr().cast(), c),
        SumRow::Half(Half::Bf16, xs) => (2, xs.as_ptr().cast(), 0.0),
        SumRow::Half(Half::F16, xs) => (3, xs.as_ptr().cast(), 0.0),
        SumRow::HalfShiftedSquare { h, xs, c, rounded } => {
            // `c`'s NaN, like the row's, a `bf16`: the five-instruction rounding.
            let fits = crate::half_block::nan_fits_bf16(c);
            let f = match (h, rounded) {
                (Half::Bf16, SquareRounding::Both) if fits => 8,
                (Half::Bf16, SquareRounding::Both) => 4,
                (Half::F16, SquareRounding::Both) => 5,
                (Half::Bf16, SquareRounding::Neither) => 6,
                (Half::F16, SquareRounding::Neither) => 7,
                (Half::Bf16, SquareRounding::Difference) if fits => 9,
                (Half::Bf16, SquareRounding::Difference) => 10,
                (Half::F16, SquareRounding::Difference) => 11,
            };
            (f, xs.as_ptr().cast(), c)
        }
    }
}

/// The size in bytes of one of `row`'s elements.
#[cfg(target_arch = "x86_64")]
fn element_bytes(row: SumRow) -> usize {
    match row {
        SumRow::F32(_) | SumRow::ShiftedSquare(..) => 4,
        SumRow::Half(..) | SumRow::HalfShiftedSquare { .. } => 2,
    }
}

/// Folds up to `blocks` blocks of 32 summands of `row` from `i0` into `p` on AVX2; returns
/// how many it folded (none without AVX2 and F16C; for an `f16` row, those before the first
/// block holding an infinity or a NaN).
#[cfg(target_arch = "x86_64")]
pub(super) fn vector_blocks(p: &mut [f32; LANES], row: SumRow, i0: usize, blocks: usize) -> usize {
    if blocks == 0 || !avx2_f16c() {
        return 0;
    }
    let (f, src, c) = form(row);
    // SAFETY: AVX2 and F16C are present (AVX-512F where `avx512f` says so); the blocks read,
    // `i0..i0 + 32 * blocks`, lie inside the row.
    unsafe {
        let src = src.add(i0 * element_bytes(row));
        dispatch_blocks(avx512f(), f, p, src, c, blocks)
    }
}

/// `avx512::blocks` (`wide`) or `avx2::blocks` of form `f`.
///
/// # Safety
/// The CPU has AVX2 and F16C, and AVX-512F when `wide`; `src` holds `32 * blocks`
/// elements of the form's type.
#[cfg(target_arch = "x86_64")]
unsafe fn dispatch_blocks(
    wide: bool,
    f: u8,
    p: &mut [f32; LANES],
    src: *const u8,
    c: f32,
    blocks: usize,
) -> usize {
    macro_rules! by_form {
        ($m:ident) => {
            match f {
                0 => $m::blocks::<0>(p, src, c, blocks),
                1 => $m::blocks::<1>(p, src, c, blocks),
                2 => $m::blocks::<2>(p, src, c, blocks),
                3 => $m::blocks::<3>(p, src, c, blocks),
                4 => $m::blocks::<4>(p, src, c, blocks),
                5 => $m::blocks::<5>(p, src, c, blocks),
                6 => $m::blocks::<6>(p, src, c, blocks),
                7 => $m::blocks::<7>(p, src, c, blocks),
                8 => $m::blocks::<8>(p, src, c, blocks),
                9 => $m::blocks::<9>(p, src, c, blocks),
                10 => $m::blocks::<10>(p, src, c, blocks),
                _ => $m::blocks::<11>(p, src, c, blocks),
            }
        };
    }
    // SAFETY: the caller's contract.
    unsafe {
        if wide {
            by_form!(avx512)
        } else {
            by_form!(avx2)
        }
    }
}

/// `avx512::chunk` (`wide`) or `avx2::chunk` of form `f`.
///
/// # Safety
/// As [`dispatch_blocks`].
#[cfg(target_arch = "x86_64")]
unsafe fn dispatch_chunk(wide: bool, f: u8, src: *const u8, c: f32, blocks: usize) -> Option<f32> {
    macro_rules! by_form {
        ($m:ident) => {
            match f {
                0 => $m::chunk::<0>(src, c, blocks),
                1 => $m::chunk::<1>(src, c, blocks),
                2 => $m::chunk::<2>(src, c, blocks),
                3 => $m::chunk::<3>(src, c, blocks),
                4 => $m::chunk::<4>(src, c, blocks),
                5 => $m::chunk::<5>(src, c, blocks),
                6 => $m::chunk::<6>(src, c, blocks),
                7 => $m::chunk::<7>(src, c, blocks),
                8 => $m::chunk::<8>(src, c, blocks),
                9 => $m::chunk::<9>(src, c, blocks),
                10 => $m::chunk::<10>(src, c, blocks),
                _ => $m::chunk::<11>(src, c, blocks),
            }
        };
    }
    // SAFETY: the caller's contract.
    unsafe {
        if wide {
            by_form!(avx512)
        } else {
            by_form!(avx2)
        }
    }
}

/// Whether the CPU runs the [`avx512`] loops (AVX-512F, beside [`avx2_f16c`]).
#[cfg(target_arch = "x86_64")]
fn avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
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
pub(super) fn whole_blocks(row: SumRow, n: usize) -> Option<f32> {
    if n == 0 || !n.is_multiple_of(LANES) || !avx2_f16c() {
        return None;
    }
    let (f, src, c) = form(row);
    // SAFETY: AVX2 and F16C are present (AVX-512F where `avx512f` says so); the row holds
    // `n` summands.
    unsafe { dispatch_chunk(avx512f(), f, src, c, n / LANES) }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn whole_blocks(_: SumRow, _: usize) -> Option<f32> {
    None
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn vector_blocks(_: &mut [f32; LANES], _: SumRow, _: usize, _: usize) -> usize {
    0
}

/// What form `f`'s summands are (the table both widths' `load` read): the elements
/// ([`F32S`], [`BF16S`], [`F16S`]), and for a shifted square `(x - c)²` the roundings of the
/// difference and of the square (0 none, 1 `bf16` by the rule, 2 `f16`, 3 `bf16` without the
/// rule's NaN handling — see `avx2::load`).
#[cfg(target_arch = "x86_64")]
const fn summand(f: u8) -> (u8, Option<(u8, u8)>) {
    match f {
        0 => (F32S, None),
        1 => (F32S, Some((0, 0))),
        2 => (BF16S, None),
        3 => (F16S, None),
        4 => (BF16S, Some((1, 1))),
        5 => (F16S, Some((2, 2))),
        6 => (BF16S, Some((0, 0))),
        7 => (F16S, Some((0, 0))),
        8 => (BF16S, Some((3, 3))),
        9 => (BF16S, Some((3, 0))),
        10 => (BF16S, Some((1, 0))),
        _ => (F16S, Some((2, 0))),
    }
}

/// [`summand`]'s elements: `f32`s, `bf16`s, `f16`s.
#[cfg(target_arch = "x86_64")]
const F32S: u8 = 0;
#[cfg(target_arch = "x86_64")]
const BF16S: u8 = 1;
#[cfg(target_arch = "x86_64")]
const F16S: u8 = 2;

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{summand, BF16S, F32S, LANES};
    use std::arch::x86_64::*;

    /// The 32 summands of block `b` at `src` as four vectors, by `FORM`: 0 `f32`s, 1
    /// `(x - c)²` of `f32`s, 2 `bf16`s widened by a shift, 3 `f16`s widened by F16C, 4 and
    /// 5 `(x - c)²` of `bf16`s and `f16`s with the difference and the square each rounded
    /// to the format, 6 and 7 the same without the roundings, 8 form 4 where `c` is not a
    /// NaN or is one whose low half is clear, rounded without the rule's NaN handling (every
    /// NaN the subtraction and the square make is then an operand's or the default one,
    /// its low half clear: `crate::half_block::round_bf16_arith_zmm`); 9, 10 and 11 forms 8,
    /// 4 and 5 with only the difference rounded, the square `f32`
    /// ([`SquareRounding::Difference`](super::SquareRounding)). (F16C quiets a
    /// signalling NaN as it widens it; the subtraction that follows quiets it anyway, so
    /// forms 5 and 7 need no check for NaNs.)
    #[inline(always)]
    unsafe fn load<const FORM: u8>(src: *const u8, c: __m256, b: usize) -> [__m256; 4] {
        let mut v = [_mm256_setzero_ps(); 4];
        for (k, v) in v.iter_mut().enumerate() {
            let i = b * LANES + k * 8;
            let bf16 = || {
                let h = _mm_loadu_si128(src.cast::<u16>().add(i).cast());
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
            };
            let f16 = || _mm256_cvtph_ps(_mm_loadu_si128(src.cast::<u16>().add(i).cast()));
            let (elements, rounds) = summand(FORM);
            let x = match elements {
                F32S => _mm256_loadu_ps(src.cast::<f32>().add(i)),
                BF16S => bf16(),
                _ => f16(),
            };
            *v = match rounds {
                Some((r, s)) => square(x, c, r, s),
                None => x,
            };
        }
        v
    }

    /// `(x - c)²`, the difference rounded by [`round`]`(r)` and the square by
    /// [`round`]`(s)` (constants where `load` inlines this).
    #[inline(always)]
    unsafe fn square(x: __m256, c: __m256, r: u8, s: u8) -> __m256 {
        let d = round(r, _mm256_sub_ps(x, c));
        round(s, _mm256_mul_ps(d, d))
    }

    /// Eight lanes as they are (`r` 0), or rounded to the precision of `bf16` (1, or 3 for
    /// results of ops on values whose NaNs are `bf16`s) or `f16` (2). `bf16`: the rule
    /// (`crate::half_block::round_zmm`'s steps on 256 bits; 3 `round_bf16_arith_zmm`'s) —
    /// the low 16 bits rounded to nearest even, a NaN keeping its top bits with the quiet
    /// bit set.
    /// `f16`: F16C's `vcvtps2ph` (round to nearest even) then `vcvtph2ps`, the rule's bits
    /// (`crate::half_block`'s F16C rounding).
    #[inline(always)]
    unsafe fn round(r: u8, x: __m256) -> __m256 {
        match r {
            0 => x,
            1 => {
                let b = _mm256_castps_si256(x);
                let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(1));
                let r = _mm256_add_epi32(_mm256_add_epi32(b, odd), _mm256_set1_epi32(0x7fff));
                let ordered = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_ORD_Q>(x, x));
                let quiet = _mm256_or_si256(b, _mm256_set1_epi32(0x0040_0000));
                let r = _mm256_blendv_epi8(quiet, r, ordered);
                let high = _mm256_set1_epi32(0xffff_0000u32 as i32);
                _mm256_castsi256_ps(_mm256_and_si256(r, high))
            }
            3 => {
                let b = _mm256_castps_si256(x);
                let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(1));
                let r = _mm256_add_epi32(_mm256_add_epi32(b, odd), _mm256_set1_epi32(0x7fff));
                let high = _mm256_set1_epi32(0xffff_0000u32 as i32);
                _mm256_castsi256_ps(_mm256_and_si256(r, high))
            }
            _ => _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)),
        }
    }

    /// Whether block `b` of `f16`s at `src` holds an infinity or a NaN (exponent all ones).
    #[inline(always)]
    pub(super) unsafe fn any_nan_f16(src: *const u8, b: usize) -> bool {
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

/// The [`avx2`] loops on 512-bit vectors: the 32 lanes are two accumulators (lane `l` in
/// vector `l / 16`), the same additions in the same order, so the same bits.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{summand, BF16S, F32S, LANES};
    use std::arch::x86_64::*;

    /// Whether `FORM`'s summands come as even and odd elements ([`load`]): its elements
    /// are `bf16`s.
    const fn even_odd(form: u8) -> bool {
        summand(form).0 == BF16S
    }

    /// The 32 summands of block `b` at `src` as two vectors, by `FORM` (`avx2::load`'s):
    /// summands 0–15 and 16–31, or where [`even_odd`] says so the even summands and the
    /// odd ones — read as one 64-byte vector, whose elements' `f32`s are the `bf16`s
    /// shifted into the high half (`w << 16` the even elements', `w & 0xffff_0000` the odd
    /// ones'), with no shuffle.
    #[inline(always)]
    unsafe fn load<const FORM: u8>(src: *const u8, c: __m512, b: usize) -> [__m512; 2] {
        if even_odd(FORM) {
            let w = _mm512_loadu_si512(src.cast::<u16>().add(b * LANES).cast());
            let even = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(w));
            let odd = _mm512_castsi512_ps(_mm512_and_si512(
                w,
                _mm512_set1_epi32(0xffff_0000u32 as i32),
            ));
            return match summand(FORM).1 {
                Some((r, s)) => [square(even, c, r, s), square(odd, c, r, s)],
                None => [even, odd],
            };
        }
        let mut v = [_mm512_setzero_ps(); 2];
        for (k, v) in v.iter_mut().enumerate() {
            let i = b * LANES + k * 16;
            // `f32`s or `f16`s (`bf16`s are read even and odd above).
            let (elements, rounds) = summand(FORM);
            let x = if elements == F32S {
                _mm512_loadu_ps(src.cast::<f32>().add(i))
            } else {
                _mm512_cvtph_ps(_mm256_loadu_si256(src.cast::<u16>().add(i).cast()))
            };
            *v = match rounds {
                Some((r, s)) => square(x, c, r, s),
                None => x,
            };
        }
        v
    }

    /// `(x - c)²`, the difference rounded by `r` and the square by `s`: each as it is (0) or
    /// rounded to `bf16` (1; 3 by `crate::half_block::round_bf16_arith_zmm`) or `f16` (2)
    /// by `crate::half_block::round_zmm` (constants where `load` inlines this).
    #[inline(always)]
    unsafe fn square(x: __m512, c: __m512, r: u8, s: u8) -> __m512 {
        #[inline(always)]
        unsafe fn round(r: u8, x: __m512) -> __m512 {
            match r {
                0 => x,
                1 => crate::half_block::round_zmm(kiln_math::float16::Half::Bf16, x),
                3 => crate::half_block::round_bf16_arith_zmm(x),
                _ => crate::half_block::round_zmm(kiln_math::float16::Half::F16, x),
            }
        }
        let d = round(r, _mm512_sub_ps(x, c));
        round(s, _mm512_mul_ps(d, d))
    }

    /// The 32 lanes (lane `l` in vector `l / 16`) as even lanes and odd ones, the
    /// accumulators [`fold`] keeps for a form [`even_odd`] says is read so.
    #[inline(always)]
    unsafe fn to_even_odd(v: [__m512; 2]) -> [__m512; 2] {
        let even: [i32; 16] = std::array::from_fn(|j| 2 * j as i32);
        let odd: [i32; 16] = std::array::from_fn(|j| 2 * j as i32 + 1);
        let pick = |idx: [i32; 16]| {
            _mm512_permutex2var_ps(v[0], _mm512_loadu_si512(idx.as_ptr().cast()), v[1])
        };
        [pick(even), pick(odd)]
    }

    /// [`to_even_odd`] undone: lane `l` back in vector `l / 16`.
    #[inline(always)]
    unsafe fn from_even_odd(v: [__m512; 2]) -> [__m512; 2] {
        // Lane `l`: the even vector's element `l / 2` (index `l / 2`) or the odd one's
        // (index `16 + l / 2`), for `l` from `16 h`.
        let lanes = |h: i32| -> [i32; 16] {
            std::array::from_fn(|k| (8 * h + k as i32 / 2) + if k % 2 == 1 { 16 } else { 0 })
        };
        let pick = |idx: [i32; 16]| {
            _mm512_permutex2var_ps(v[0], _mm512_loadu_si512(idx.as_ptr().cast()), v[1])
        };
        [pick(lanes(0)), pick(lanes(1))]
    }

    /// `avx2::fold` on two accumulators (even and odd lanes where [`even_odd`] says so).
    #[inline(always)]
    unsafe fn fold<const FORM: u8>(
        acc: &mut [__m512; 2],
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> usize {
        let c = _mm512_set1_ps(c);
        for b in 0..blocks {
            if FORM == 3 && super::avx2::any_nan_f16(src, b) {
                return b;
            }
            let v = load::<FORM>(src, c, b);
            acc[0] = _mm512_add_ps(acc[0], v[0]);
            acc[1] = _mm512_add_ps(acc[1], v[1]);
        }
        blocks
    }

    /// `avx2::blocks` on 512-bit vectors.
    #[target_feature(enable = "avx2,f16c,avx512f")]
    pub(super) unsafe fn blocks<const FORM: u8>(
        p: &mut [f32; LANES],
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> usize {
        let mut acc = [
            _mm512_loadu_ps(p.as_ptr()),
            _mm512_loadu_ps(p.as_ptr().add(16)),
        ];
        if even_odd(FORM) {
            acc = to_even_odd(acc);
        }
        let done = fold::<FORM>(&mut acc, src, c, blocks);
        if even_odd(FORM) {
            acc = from_even_odd(acc);
        }
        _mm512_storeu_ps(p.as_mut_ptr(), acc[0]);
        _mm512_storeu_ps(p.as_mut_ptr().add(16), acc[1]);
        done
    }

    /// `avx2::chunk` on 512-bit vectors: the tree's `s = 16` adds vector 1 to 0, `s = 8`
    /// the high half of that to the low, then as `avx2::chunk`.
    #[target_feature(enable = "avx2,f16c,avx512f")]
    pub(super) unsafe fn chunk<const FORM: u8>(
        src: *const u8,
        c: f32,
        blocks: usize,
    ) -> Option<f32> {
        let mut acc = [_mm512_setzero_ps(); 2];
        if fold::<FORM>(&mut acc, src, c, blocks) != blocks {
            return None;
        }
        if even_odd(FORM) {
            acc = from_even_odd(acc);
        }
        let w = _mm512_add_ps(acc[0], acc[1]);
        let v = _mm256_add_ps(
            _mm512_castps512_ps256(w),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(w))),
        );
        let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        let r = _mm_add_ss(q, _mm_shuffle_ps::<1>(q, q));
        Some(_mm_cvtss_f32(r))
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The 256-bit and 512-bit loops give the same bits for every form, whole chunks and
    /// blocks folded into lanes that already hold values (the 512-bit ones only where the
    /// CPU has AVX-512F; the dispatch takes them there, so the tests above check them
    /// against the reference and this one checks the 256-bit ones too).
    #[test]
    fn both_vector_widths_give_the_same_bits() {
        if !avx2_f16c() {
            return;
        }
        let all: Vec<u16> = (0..=u16::MAX).map(|i| i.wrapping_mul(40503)).collect();
        let f: Vec<f32> = (0..4096)
            .map(|i| ((i * 7919) % 1000) as f32 * 0.37 - 150.0)
            .collect();
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
        // A different value in every lane: a lane fold into the wrong lane shows.
        let first: [f32; LANES] = std::array::from_fn(|l| 0.5 + 1e3 * l as f32);
        for start in [0usize, 4096, 20_000, 61_000] {
            let h = &all[start..start + 4096];
            let rows = [
                SumRow::F32(&f),
                SumRow::ShiftedSquare(&f, 0.25),
                SumRow::Half(Half::Bf16, h),
                SumRow::Half(Half::F16, h),
                SumRow::HalfShiftedSquare {
                    h: Half::Bf16,
                    xs: h,
                    c: 0.75,
                    rounded: SquareRounding::Both,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::Bf16,
                    xs: h,
                    c: f32::from_bits(0x7fbf_ffff),
                    rounded: SquareRounding::Both,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::F16,
                    xs: h,
                    c: -3.0,
                    rounded: SquareRounding::Both,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::Bf16,
                    xs: h,
                    c: 1e-3,
                    rounded: SquareRounding::Neither,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::F16,
                    xs: h,
                    c: 2.0,
                    rounded: SquareRounding::Neither,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::Bf16,
                    xs: h,
                    c: 0.375,
                    rounded: SquareRounding::Difference,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::Bf16,
                    xs: h,
                    c: f32::from_bits(0xffbf_0001),
                    rounded: SquareRounding::Difference,
                },
                SumRow::HalfShiftedSquare {
                    h: Half::F16,
                    xs: h,
                    c: -0.5,
                    rounded: SquareRounding::Difference,
                },
            ];
            for row in rows {
                let (form, src, c) = form(row);
                let blocks = 4096 / LANES;
                // SAFETY: the CPU has AVX2 and F16C (AVX-512F checked); each row holds
                // 4096 elements.
                unsafe {
                    let narrow = dispatch_chunk(false, form, src, c, blocks);
                    let mut p = first;
                    let done = dispatch_blocks(false, form, &mut p, src, c, blocks);
                    if avx512f() {
                        let wide = dispatch_chunk(true, form, src, c, blocks);
                        match (narrow, wide) {
                            (Some(a), Some(b)) => assert!(same(a, b), "form {form}: {a} {b}"),
                            (a, b) => assert_eq!(a.is_some(), b.is_some(), "form {form}"),
                        }
                        let mut q = first;
                        let done512 = dispatch_blocks(true, form, &mut q, src, c, blocks);
                        assert_eq!(done, done512, "form {form}");
                        for l in 0..LANES {
                            assert!(same(p[l], q[l]), "form {form} lane {l}");
                        }
                    }
                }
            }
        }
    }

    /// Blocks folded into lanes that hold different values land in their own lanes, in
    /// order, at both widths (the `bf16` forms' even and odd accumulators mapped back):
    /// each lane `l` is its start plus the summands `32 b + l`, one by one, on finite rows.
    #[test]
    fn blocks_fold_into_their_own_lanes() {
        if !avx2_f16c() {
            return;
        }
        // Finite 16-bit patterns of every sign and of exponents up to 2^60 or so.
        let bits: Vec<u16> = (0..1024u16)
            .map(|i| i.wrapping_mul(40503) & 0xbbff)
            .collect();
        let f: Vec<f32> = bits.iter().map(|&b| f32::from(b) * 0.37 - 9e3).collect();
        let first: [f32; LANES] = std::array::from_fn(|l| 0.5 + 1e3 * l as f32);
        for h in [Half::Bf16, Half::F16] {
            let mut rows = vec![SumRow::Half(h, &bits)];
            for rounded in [
                SquareRounding::Both,
                SquareRounding::Difference,
                SquareRounding::Neither,
            ] {
                rows.push(SumRow::HalfShiftedSquare {
                    h,
                    xs: &bits,
                    c: 0.75,
                    rounded,
                });
            }
            rows.extend([SumRow::F32(&f), SumRow::ShiftedSquare(&f, 0.25)]);
            for row in rows {
                let mut want = first;
                for i in 0..bits.len() {
                    want[i % LANES] += super::super::summand(row, i);
                }
                let (form, src, c) = form(row);
                for wide in [false, true] {
                    if wide && !avx512f() {
                        continue;
                    }
                    let mut p = first;
                    // SAFETY: the CPU has AVX2 and F16C (and AVX-512F when `wide`); each
                    // row holds 1024 elements, 32 blocks.
                    let done = unsafe { dispatch_blocks(wide, form, &mut p, src, c, 32) };
                    assert_eq!(done, 32, "form {form}");
                    for l in 0..LANES {
                        assert_eq!(p[l].to_bits(), want[l].to_bits(), "form {form} lane {l}");
                    }
                }
            }
        }
    }
}
