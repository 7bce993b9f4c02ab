//! Rounding `f32` values to a 16-bit float's precision a block at a time, for compiled
//! kernels' staged roundings (`kiln_compiler`'s block math). Sixteen lanes at a time where
//! the CPU has AVX-512F (`vcvtps2ph`/`vcvtph2ps` on 512-bit registers for `f16`, the rule
//! written out on sixteen lanes for `bf16`), then eight: to `f16` F16C's `vcvtps2ph`
//! (round to nearest even) then `vcvtph2ps` where the CPU has F16C, to `bf16`
//! `kiln_math::float16`'s rule itself on eight lanes ([`kiln_math::F32x8`]) where the CPU
//! has its features. Elsewhere, and for the last few elements, the rule one
//! element at a time. All give the same bits — the rule is the specification (the
//! interpreter runs it), and the tests below hold F16C and the vector build to it on every
//! class of input: every sign, exponent and top mantissa bits, with each pattern of the
//! bits where the format rounds, ties, overflow to infinity, subnormal results and NaN
//! payloads. Cranelift 0.135 cannot emit F16C (its x64 backend lowers no `f16`
//! conversions), and its vectors are four lanes wide, so a kernel reaches these through a
//! call.

use kiln_math::float16::{round_f32, to_f32, Half};

/// `out[i] = round_f32(src[i], to)` for every `i`, in place when `src` is `None` (`src`,
/// when given, is as long as `out`; otherwise nothing is written).
pub fn round_half_block(to: Half, src: Option<&[f32]>, out: &mut [f32]) {
    if src.is_some_and(|s| s.len() != out.len()) {
        return;
    }
    let done = fast(to, src.map(<[f32]>::as_ptr), out);
    match src {
        Some(s) => {
            for (o, &x) in out[done..].iter_mut().zip(&s[done..]) {
                *o = round_f32(x, to);
            }
        }
        None => {
            for o in &mut out[done..] {
                *o = round_f32(*o, to);
            }
        }
    }
}

/// The elements `0..done` rounded by a vector loop (`src`, or `out` itself when `None`,
/// holds `out.len()` elements); `done` is 0 without one for `to` on this CPU.
#[cfg(target_arch = "x86_64")]
fn fast(to: Half, src: Option<*const f32>, out: &mut [f32]) -> usize {
    let n = out.len();
    let dst = out.as_mut_ptr();
    let from = src.unwrap_or(dst as *const f32);
    // Sixteen lanes first where the CPU has AVX-512F; the eight-lane loops take what is
    // left of whole vectors of eight (each position is read before it is written, so
    // continuing in place after the wide loop is safe).
    let wide = if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F; `from` and `dst` cover `n` elements.
        unsafe { round_x16(to, from, dst, n) }
    } else {
        0
    };
    // SAFETY (both arms): `wide <= n`, so the pointers cover the `n - wide` elements after.
    let (from, dst) = unsafe { (from.add(wide), dst.add(wide)) };
    wide + match to {
        Half::F16
            if std::arch::is_x86_feature_detected!("avx")
                && std::arch::is_x86_feature_detected!("f16c") =>
        {
            // SAFETY: the CPU has AVX and F16C; `from` and `dst` cover `n - wide` elements.
            unsafe { f16c(from, dst, n - wide) }
        }
        _ => match kiln_math::F32x8::new() {
            // SAFETY: `y` exists, so the CPU has its features; the pointers cover `n - wide`.
            Some(y) => unsafe { rule_x8(y, to, from, dst, n - wide) },
            None => 0,
        },
    }
}

/// Rounds whole vectors of sixteen with AVX-512F: `vcvtps2ph` then `vcvtph2ps` for `f16`
/// (the instructions F16C has, on 512-bit registers), and for `bf16`
/// `kiln_math::float16`'s rule written out on sixteen lanes — round the low 16 bits to
/// nearest even (`+ 0x7fff + odd`, the carry moving on into the exponent), a NaN keeping
/// its top bits with the quiet bit set. Returns how many elements it rounded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn round_x16(to: Half, from: *const f32, dst: *mut f32, n: usize) -> usize {
    use std::arch::x86_64::{_mm512_loadu_ps, _mm512_storeu_ps};
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n`; each vector is loaded before the same positions are stored.
        unsafe {
            let x = _mm512_loadu_ps(from.add(i));
            _mm512_storeu_ps(dst.add(i), round_zmm(to, x));
        }
        i += 16;
    }
    i
}

/// Sixteen lanes rounded to `to`'s precision ([`round_x16`]'s vector step, shared with
/// `crate::half_binary`): `vcvtps2ph` then `vcvtph2ps` for `f16`; for `bf16` the rule —
/// the low 16 bits rounded to nearest even (`+ 0x7fff + odd`, the carry moving on into the
/// exponent), a NaN keeping its top bits with the quiet bit set — in six instructions.
/// (`vcvtneps2bf16`, AVX512-BF16, flushes subnormal inputs to zero, so it would need a
/// check and a second path for them; with the check it was slower than the seven
/// instructions these were then.)
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn round_zmm(
    to: Half,
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{
        _mm512_and_si512, _mm512_castsi512_ps, _mm512_cvtph_ps, _mm512_cvtps_ph, _mm512_set1_epi32,
        _MM_FROUND_TO_NEAREST_INT,
    };
    match to {
        Half::F16 => _mm512_cvtph_ps(_mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)),
        Half::Bf16 => _mm512_castsi512_ps(_mm512_and_si512(
            round_bf16_high_zmm::<false>(x),
            _mm512_set1_epi32(0xffff_0000u32 as i32),
        )),
    }
}

/// The `bf16` rounding of sixteen lanes in their high halves, the low halves left as the
/// sum made them: [`round_zmm`]'s steps to `bf16` (or with `ARITH`
/// [`round_bf16_arith_zmm`]'s) but the last, the `and` that clears the low halves — for a
/// caller that keeps only the high halves (packing them) and would clear them again.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn round_bf16_high_zmm<const ARITH: bool>(
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{
        _mm512_add_epi32, _mm512_castps_si512, _mm512_cmp_ps_mask, _mm512_mask_add_epi32,
        _mm512_mask_mov_epi32, _mm512_or_si512, _mm512_set1_epi32, _mm512_test_epi32_mask,
        _CMP_ORD_Q,
    };
    let b = _mm512_castps_si512(x);
    // The bias picked by a test of the bit above the low half (`0x8000` where it is set,
    // `0x7fff` where not): one instruction fewer than shifting it out.
    let odd = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x1_0000));
    if ARITH {
        // `b + 0x7fff + odd` as `b + 0x7fff`, or `b + 0x8000` where the bit above the low
        // half is set: the same sum, both adds from `b` (a shorter chain than shifting
        // `odd` out).
        let r = _mm512_add_epi32(b, _mm512_set1_epi32(0x7fff));
        _mm512_mask_add_epi32(r, odd, b, _mm512_set1_epi32(0x8000))
    } else {
        // The rule: the bias `0x7fff + odd` added to the bits of every ordered lane (a NaN
        // keeps its bits, with the quiet bit set). The same bits as the rule's `r`/`q`
        // blend, one masked add instead of four instructions of NaN handling (17% faster a
        // pass).
        let bias = _mm512_mask_mov_epi32(_mm512_set1_epi32(0x7fff), odd, _mm512_set1_epi32(0x8000));
        let ordered = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(x, x);
        let quiet = _mm512_or_si512(b, _mm512_set1_epi32(0x0040_0000));
        _mm512_mask_add_epi32(quiet, ordered, b, bias)
    }
}

/// [`round_zmm`] to `bf16` in four instructions for the result of an IEEE add, subtract,
/// multiply or divide whose operands' NaNs have their low 16 bits clear (`bf16` values and
/// the rounded results of such ops; [`nan_fits_bf16`] says it of a value): the rule's bits for
/// every such result. A result that is not a NaN takes the rule's path (`0x7fff + odd` added,
/// the low half cleared). A NaN result is one of the operands' NaNs quieted or the default
/// NaN `0xffc0_0000` — x86's rule for these ops — so its low half is clear and its quiet bit
/// set: the bias then carries nothing out of the low half and the result keeps its bits,
/// which is what the rule gives a quiet NaN (its bits, the low half cleared). Two
/// instructions fewer than [`round_zmm`]'s NaN handling (a compare and an or).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn round_bf16_arith_zmm(
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{_mm512_and_si512, _mm512_castsi512_ps, _mm512_set1_epi32};
    _mm512_castsi512_ps(_mm512_and_si512(
        round_bf16_high_zmm::<true>(x),
        _mm512_set1_epi32(0xffff_0000u32 as i32),
    ))
}

/// Whether `v` may be an operand of the ops whose results [`round_bf16_arith_zmm`] rounds:
/// not a NaN, or a NaN whose low 16 bits are clear (every `bf16` value's `f32`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn nan_fits_bf16(v: f32) -> bool {
    !v.is_nan() || v.to_bits() & 0xffff == 0
}

#[cfg(not(target_arch = "x86_64"))]
fn fast(_: Half, _: Option<*const f32>, _: &mut [f32]) -> usize {
    0
}

/// F16C over whole vectors of eight: returns how many elements it rounded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16c(from: *const f32, dst: *mut f32, n: usize) -> usize {
    use std::arch::x86_64::{
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps,
        _MM_FROUND_TO_NEAREST_INT,
    };
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n`; each vector is loaded before the same positions are stored.
        unsafe {
            let x = _mm256_loadu_ps(from.add(i));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    i
}

/// `kiln_math::float16::round_to` on eight lanes over whole vectors: returns how many
/// elements it rounded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw")]
unsafe fn rule_x8(
    mut y: kiln_math::F32x8,
    to: Half,
    from: *const f32,
    dst: *mut f32,
    n: usize,
) -> usize {
    use std::arch::x86_64::{_mm256_loadu_ps, _mm256_storeu_ps};
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: as in `f16c`.
        unsafe {
            let x = _mm256_loadu_ps(from.add(i));
            let r = kiln_math::float16::round_to(&mut y, x, to);
            _mm256_storeu_ps(dst.add(i), r);
        }
        i += 8;
    }
    i
}

/// `out[i] = to_f32(src[i], F16)` for every `i` (the exact `f32` of each `f16`; nothing is
/// written unless `src` is as long as `out`): what a compiled kernel's staged load of an
/// `f16` buffer computes a window at a time. F16C's `vcvtph2ps` eight lanes at a time where
/// the CPU has it — exact for every finite and infinite input; a vector holding a NaN is
/// widened by the rule instead, which keeps a signalling NaN signalling as data movement
/// must (the interpreter's `to_f32`; `vcvtph2ps` would quiet it) — the rule elsewhere and
/// for the last few elements.
pub fn widen_f16_block(src: &[u16], out: &mut [f32]) {
    if src.len() != out.len() {
        return;
    }
    let done = widen_fast(src, out);
    for (o, &h) in out[done..].iter_mut().zip(&src[done..]) {
        *o = to_f32(h, Half::F16);
    }
}

#[cfg(target_arch = "x86_64")]
fn widen_fast(src: &[u16], out: &mut [f32]) -> usize {
    // Sixteen lanes first where the CPU has AVX-512F, then eight.
    let wide = if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (and so AVX2); `src` and `out` have the same length.
        unsafe { widen_x16(src, out) }
    } else {
        0
    };
    let (src, out) = (&src[wide..], &mut out[wide..]);
    wide + if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU has AVX2 and F16C; `src` and `out` have the same length.
        unsafe { widen_f16c(src, out) }
    } else {
        0
    }
}

/// [`widen_f16c`] sixteen lanes at a time (`vcvtph2ps` to a 512-bit register).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2")]
unsafe fn widen_x16(src: &[u16], out: &mut [f32]) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpgt_epi16, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_set1_epi16, _mm512_cvtph_ps, _mm512_storeu_ps,
    };
    let n = out.len().min(src.len());
    let (from, dst) = (src.as_ptr(), out.as_mut_ptr());
    let abs = _mm256_set1_epi16(0x7fff);
    let inf = _mm256_set1_epi16(0x7c00);
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n` for both slices.
        unsafe {
            let h = _mm256_loadu_si256(from.add(i) as *const __m256i);
            let nan = _mm256_cmpgt_epi16(_mm256_and_si256(h, abs), inf);
            if _mm256_movemask_epi8(nan) == 0 {
                _mm512_storeu_ps(dst.add(i), _mm512_cvtph_ps(h));
            } else {
                widen_by_rule(from, dst, i..i + 16);
            }
        }
        i += 16;
    }
    i
}

#[cfg(not(target_arch = "x86_64"))]
fn widen_fast(_: &[u16], _: &mut [f32]) -> usize {
    0
}

/// F16C over whole vectors of eight (the rule for a vector with a NaN): returns how many
/// elements it widened.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn widen_f16c(src: &[u16], out: &mut [f32]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_and_si128, _mm_cmpgt_epi16,
        _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi16,
    };
    let n = out.len().min(src.len());
    let (from, dst) = (src.as_ptr(), out.as_mut_ptr());
    let abs = _mm_set1_epi16(0x7fff);
    let inf = _mm_set1_epi16(0x7c00);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` for both slices.
        unsafe {
            let h = _mm_loadu_si128(from.add(i) as *const __m128i);
            // A magnitude above infinity's is a NaN (signed compare: magnitudes < 2^15).
            let nan = _mm_cmpgt_epi16(_mm_and_si128(h, abs), inf);
            if _mm_movemask_epi8(nan) == 0 {
                _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
            } else {
                widen_by_rule(from, dst, i..i + 8);
            }
        }
        i += 8;
    }
    i
}

/// `out[i]` = the `f16` bits of `src[i]` by `kiln_math::float16::pack` for every `i`
/// (nothing is written unless the lengths agree): what a compiled kernel's staged store to
/// an `f16` buffer computes a window at a time, from values it holds exactly. F16C's
/// `vcvtps2ph` (round to nearest even, which is `pack` for every non-NaN `f32`) eight lanes
/// at a time where the CPU has it; a vector holding a NaN goes through the rule, which keeps
/// a signalling NaN signalling (`vcvtps2ph` would quiet it).
pub fn pack_f16_block(src: &[f32], out: &mut [u16]) {
    if src.len() != out.len() {
        return;
    }
    let done = pack_fast(src, out);
    for (o, &x) in out[done..].iter_mut().zip(&src[done..]) {
        *o = pack_rule(x);
    }
}

fn pack_rule(x: f32) -> u16 {
    kiln_math::float16::pack(&mut kiln_math::ScalarF32, x, Half::F16) as u16
}

/// The vector loops' fallback for a vector holding a NaN: `dst[j]` = the `f32` of `f16`
/// `from[j]` by the rule, for `j` in `range`.
///
/// # Safety
/// Both pointers cover `range`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn widen_by_rule(from: *const u16, dst: *mut f32, range: std::ops::Range<usize>) {
    for j in range {
        // SAFETY: as the caller promises.
        unsafe { *dst.add(j) = to_f32(*from.add(j), Half::F16) }
    }
}

/// [`widen_by_rule`]'s mirror: `dst[j]` = the `f16` bits of `from[j]` by [`pack_rule`].
///
/// # Safety
/// Both pointers cover `range`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pack_by_rule(from: *const f32, dst: *mut u16, range: std::ops::Range<usize>) {
    for j in range {
        // SAFETY: as the caller promises.
        unsafe { *dst.add(j) = pack_rule(*from.add(j)) }
    }
}

#[cfg(target_arch = "x86_64")]
fn pack_fast(src: &[f32], out: &mut [u16]) -> usize {
    // Sixteen lanes first where the CPU has AVX-512F, then eight.
    let wide = if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (and so AVX2); `src` and `out` have the same length.
        unsafe { pack_x16(src, out) }
    } else {
        0
    };
    let (src, out) = (&src[wide..], &mut out[wide..]);
    wide + if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU has AVX2 and F16C; `src` and `out` have the same length.
        unsafe { pack_f16c(src, out) }
    } else {
        0
    }
}

/// [`pack_f16c`] sixteen lanes at a time (`vcvtps2ph` from a 512-bit register).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2")]
unsafe fn pack_x16(src: &[f32], out: &mut [u16]) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_storeu_si256, _mm512_cmp_ps_mask, _mm512_cvtps_ph, _mm512_loadu_ps,
        _CMP_UNORD_Q, _MM_FROUND_TO_NEAREST_INT,
    };
    let n = out.len().min(src.len());
    let (from, dst) = (src.as_ptr(), out.as_mut_ptr());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n` for both slices.
        unsafe {
            let x = _mm512_loadu_ps(from.add(i));
            if _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x) == 0 {
                let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, h);
            } else {
                pack_by_rule(from, dst, i..i + 16);
            }
        }
        i += 16;
    }
    i
}

#[cfg(not(target_arch = "x86_64"))]
fn pack_fast(_: &[f32], _: &mut [u16]) -> usize {
    0
}

/// F16C over whole vectors of eight (the rule for a vector with a NaN): returns how many
/// elements it packed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn pack_f16c(src: &[f32], out: &mut [u16]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm256_cmp_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_movemask_ps,
        _mm_storeu_si128, _CMP_UNORD_Q, _MM_FROUND_TO_NEAREST_INT,
    };
    let n = out.len().min(src.len());
    let (from, dst) = (src.as_ptr(), out.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` for both slices.
        unsafe {
            let x = _mm256_loadu_ps(from.add(i));
            if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)) == 0 {
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
                _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
            } else {
                pack_by_rule(from, dst, i..i + 8);
            }
        }
        i += 8;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `f16`, widened, packs back to its own bits (signalling NaNs included), in
    /// vectors that mix NaNs with ordinary values and at lengths with tails; random `f32`
    /// patterns (rounded when they are not `f16` values) pack as the rule does.
    #[test]
    fn packing_equals_the_rule() {
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let mut mixed = Vec::new();
        for h in (0x7c01..=0x7fffu16).step_by(13) {
            mixed.extend_from_slice(&[0x3c00, h, 0x0001, 0x8400, 0x7c00, 0xfc00, 0x0000, 0x8000]);
        }
        for bits in [&all, &mixed] {
            let x: Vec<f32> = bits.iter().map(|&h| to_f32(h, Half::F16)).collect();
            for n in [x.len(), 0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 513] {
                let mut out = vec![0u16; n];
                pack_f16_block(&x[..n], &mut out);
                assert_eq!(out, bits[..n], "round trip of {n}");
            }
            // The eight-lane loop alone over everything (`pack_f16_block` gives it only what
            // the sixteen-lane loop leaves).
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                let mut out = vec![0u16; x.len()];
                // SAFETY: the CPU has AVX2 and F16C.
                let done = unsafe { pack_f16c(&x, &mut out) };
                assert_eq!(done, x.len() / 8 * 8);
                assert_eq!(out[..done], bits[..done], "eight lanes");
            }
        }
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let x: Vec<f32> = (0..1 << 16)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                f32::from_bits(s as u32)
            })
            .collect();
        let mut out = vec![0u16; x.len()];
        pack_f16_block(&x, &mut out);
        for (&v, &h) in x.iter().zip(&out) {
            assert_eq!(h, pack_rule(v), "{:#010x}", v.to_bits());
        }
        let mut out = [7u16; 3];
        pack_f16_block(&[1.0; 2], &mut out);
        assert_eq!(out, [7; 3]);
    }

    /// Every `f16` bit pattern (signalling and quiet NaNs with every payload, subnormals,
    /// infinities), in vectors of eight that mix NaNs with ordinary values and at lengths
    /// with tails, widens to the rule's bits.
    #[test]
    fn widening_equals_the_rule_for_every_f16() {
        let all: Vec<u16> = (0..=u16::MAX).collect();
        // Each NaN also alone among ordinary values (the vector falls back to the rule).
        let mut mixed = Vec::new();
        for h in (0x7c01..=0x7fffu16).step_by(13) {
            mixed.extend_from_slice(&[0x3c00, h, 0x0001, 0x8400, 0x7c00, 0xfc00, 0x0000, 0x8000]);
        }
        for src in [&all, &mixed] {
            for n in [src.len(), 0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 513] {
                let src = &src[..n];
                let mut out = vec![0.0f32; n];
                widen_f16_block(src, &mut out);
                for (&h, o) in src.iter().zip(&out) {
                    assert_eq!(o.to_bits(), to_f32(h, Half::F16).to_bits(), "f16 {h:#06x}");
                }
            }
            // The eight-lane loop alone over everything, as in `packing_equals_the_rule`.
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                let mut out = vec![0.0f32; src.len()];
                // SAFETY: the CPU has AVX2 and F16C.
                let done = unsafe { widen_f16c(src, &mut out) };
                assert_eq!(done, src.len() / 8 * 8);
                for (&h, o) in src.iter().zip(&out[..done]) {
                    assert_eq!(
                        o.to_bits(),
                        to_f32(h, Half::F16).to_bits(),
                        "x8 f16 {h:#06x}"
                    );
                }
            }
        }
        // Lengths that differ: nothing written.
        let mut out = [7.0f32; 3];
        widen_f16_block(&[0x3c00; 2], &mut out);
        assert_eq!(out, [7.0; 3]);
    }

    /// The fast paths and the rule agree on every sign, exponent and top 7 mantissa bits,
    /// each with 32 patterns of the low 16 bits: all 8 values of bits 13–15 (where `f16`
    /// rounds normal results) each with no sticky bits, the lowest, the highest and one in
    /// the middle; the high half's own patterns cover where `bf16` and subnormal `f16`
    /// results round. Then 2^20 random bit patterns, in place and out of place, at lengths
    /// with tails.
    #[test]
    fn vector_roundings_equal_the_rule() {
        let lows: Vec<u32> = (0..8u32)
            .flat_map(|b| [0, 1, 0x0fff, 0x0800].map(|s| (b << 13) | s))
            .collect();
        let mut x: Vec<f32> = Vec::with_capacity(65536 * lows.len() + (1 << 20));
        for hi in 0..=0xffffu32 {
            for &lo in &lows {
                x.push(f32::from_bits((hi << 16) | lo));
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1 << 20 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            x.push(f32::from_bits(s as u32));
        }
        for to in [Half::F16, Half::Bf16] {
            let want: Vec<u32> = x.iter().map(|&v| round_f32(v, to).to_bits()).collect();
            let first_bad =
                |got: &[f32]| got.iter().zip(&want).position(|(g, w)| g.to_bits() != *w);
            let mut out = vec![0.0f32; x.len()];
            round_half_block(to, Some(&x), &mut out);
            if let Some(i) = first_bad(&out) {
                panic!(
                    "{to:?} of {:#010x}: got {:#010x}, the rule {:#010x}",
                    x[i].to_bits(),
                    out[i].to_bits(),
                    want[i]
                );
            }
            let mut inplace = x.clone();
            round_half_block(to, None, &mut inplace);
            assert_eq!(first_bad(&inplace), None, "{to:?} in place");
            for n in [0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 513, 520] {
                let mut part = vec![0.0f32; n];
                round_half_block(to, Some(&x[..n]), &mut part);
                assert_eq!(first_bad(&part), None, "{to:?}, n = {n}");
            }
            // Each vector loop on its own over everything (`round_half_block` gives the
            // eight-lane loops only what the sixteen-lane one leaves).
            #[cfg(target_arch = "x86_64")]
            for (name, tier) in vector_tiers(to) {
                let mut out = vec![0.0f32; x.len()];
                // Both pointers cover `x.len()` elements, as `Tier` requires.
                let done = tier(x.as_ptr(), out.as_mut_ptr(), x.len());
                let lanes = if name == "x16" { 16 } else { 8 };
                assert_eq!(done, x.len() / lanes * lanes, "{name}");
                assert_eq!(first_bad(&out[..done]), None, "{to:?} by {name}");
            }
        }
    }

    /// A vector loop: rounds whole vectors from the first pointer to the second, returning
    /// how many elements it rounded; both pointers must cover the count given (the tests
    /// pass their own vectors' lengths).
    #[cfg(target_arch = "x86_64")]
    type Tier = Box<dyn Fn(*const f32, *mut f32, usize) -> usize>;

    /// The vector loops this CPU can run for `to`, by name.
    #[cfg(target_arch = "x86_64")]
    fn vector_tiers(to: Half) -> Vec<(&'static str, Tier)> {
        let mut tiers: Vec<(&'static str, Tier)> = Vec::new();
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY (each closure): the CPU has the loop's features; the caller's pointers
            // cover `n` elements.
            tiers.push((
                "x16",
                Box::new(move |f, d, n| unsafe { round_x16(to, f, d, n) }),
            ));
        } else {
            eprintln!("no AVX-512F here: the sixteen-lane rounding is not tested");
        }
        if to == Half::F16 && std::arch::is_x86_feature_detected!("f16c") {
            tiers.push(("f16c", Box::new(|f, d, n| unsafe { f16c(f, d, n) })));
        }
        if let Some(y) = kiln_math::F32x8::new() {
            tiers.push((
                "x8",
                Box::new(move |f, d, n| unsafe { rule_x8(y, to, f, d, n) }),
            ));
        }
        tiers
    }
}
