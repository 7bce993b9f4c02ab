//! Argument reduction modulo π/2 for every finite `|x| >= 1/2`, branch-free: a Payne–Hanek
//! reduction (Payne & Hanek 1983; Muller, *Elementary Functions*, ch. 11) in integer
//! arithmetic.
//!
//! `|x| = m 2^e` with an integer significand `m`. Only a window of the bits of 2/π matters:
//! bits weighted above the window give multiples of 4 quadrants, bits below it less than
//! `2^-89` (f32) / `2^-188` (f64) of a quadrant. The window position depends on `e`. Its
//! whole-word part is chosen with a barrel shifter of selects over the 2/π table (one stage
//! per bit of the word index), its whole-byte part with a barrel shift of the selected
//! words, and the remaining 0-7 bits go into `m` (an exact scaling). Multiplying `m` by the
//! 4-word window (`imul`/`umulhi`) gives the quadrant in two integer bits and the fraction in
//! fixed point, which becomes a double-float and is multiplied by π/2. The code is
//! straight-line: every exponent runs the same instructions.
//!
//! Below 2^20, [`reduce_pio2_medium`] (Cody–Waite) reduces in a sixth of the operations.
//! Branch-free code evaluates both and selects, so alone it would only add work; it pays
//! because block loops check a block's arguments first and, when all are below 2^20, run
//! `sin_medium`/`cos_medium`, which leave Payne–Hanek out (the interpreter's loops, and so
//! compiled CPU kernels' block math).
//!
//! Not here: `|x| < 1/2` (callers use `r = x`), infinities and NaN (callers select NaN).

use crate::arith::{Arith, Format, IntCC};
use crate::bits::{bit_set, c, ic, pick, pow2i, round_product, round_small};
use crate::exact::{df_add_f, df_mul, fast_two_sum, two_sum, Df};

/// Bits of 2/π, most significant first: `0.a2f9836e...` (1344 bits, generated with mpmath;
/// the first 96 agree with fdlibm's `ipio2` table).
#[rustfmt::skip]
const TWO_OVER_PI: [u64; 21] = [
    0xa2f9836e4e441529, 0xfc2757d1f534ddc0, 0xdb6295993c439041,
    0xfe5163abdebbc561, 0xb7246e3a424dd2e0, 0x06492eea09d1921c,
    0xfe1deb1cb129a73e, 0xe88235f52ebb4484, 0xe99c7026b45f7e41,
    0x3991d639835339f4, 0x9c845f8bbdf9283b, 0x1ff897ffde05980f,
    0xef2f118b5a0a6d1f, 0x6d367ecf27cb09b7, 0x4f463f669e5fea2d,
    0x7527bac7ebe5f17b, 0x3d0739f78a5292ea, 0x6bfb5fb11f8d5d08,
    0x56033046fc7b6bab, 0xf0cfbc209af4361d, 0xa9e391615ee61b08,
];

/// Word `i` (in the format's word size) of 2/π preceded by one zero word: the zero word lets
/// the window start before the binary point for small exponents.
fn table_word(bits: u32, i: usize) -> u64 {
    if i == 0 || i > TWO_OVER_PI.len() * (64 / bits as usize) {
        return 0; // also past the end: only reached by indices no finite input produces
    }
    match bits {
        64 => TWO_OVER_PI[i - 1],
        _ => {
            let w = TWO_OVER_PI[(i - 1) / 2];
            if (i - 1).is_multiple_of(2) {
                w >> 32
            } else {
                w & 0xffff_ffff
            }
        }
    }
}

/// `|x| mod π/2` for finite `|x| >= 1/2`: `(r, q)` with `|x| = q π/2 + r.0 + r.1`,
/// `|r| <= π/4`, and `q mod 4` in the low two bits of `q`.
#[inline(always)]
pub(crate) fn reduce_pio2<A: Arith>(a: &mut A, ax: A::F) -> (Df<A::F>, A::U) {
    let w = A::FORMAT.bits();
    let mb = A::FORMAT.mantissa_bits();
    let bytes_per_word = w / 8;
    let xb = a.to_bits(ax);
    // ee = e + offset (e the unbiased exponent), with the offset chosen so that ee >= 0 for
    // e >= -1 and (offset + mb) is a multiple of 8, i.e. D = (offset + mb) / 8 whole bytes.
    let ef = a.lshr(xb, mb);
    let offset = pick::<A, i64>(1, 4);
    let bias_off = ic(a, offset - A::FORMAT.exponent_bias() as i64);
    let ee = a.iadd(ef, bias_off);
    // |x| = M 2^(8 (j - D)) with ee = 8 j + t and the integer M = m 2^t < 2^(mb + 8), m the
    // significand; the window starts at byte j of the table. M is formed by an exact scaling
    // and conversion rather than a variable shift, which SSE2 cannot vectorise.
    let j = a.lshr(ee, 3);
    let j8 = a.shl(j, 3);
    let top = ic(a, mb as i64 + offset);
    let scale_exp = a.isub(top, j8);
    let scale = pow2i(a, scale_exp);
    let big_m = a.mul(ax, scale);
    let big_m = a.f_to_sint(big_m);

    // Coarse selection by word: five consecutive table words starting at word j / bpw.
    let word_shift = bytes_per_word.trailing_zeros();
    let wi = a.lshr(j, word_shift);
    let byte_mask = ic(a, bytes_per_word as i64 - 1);
    let byte = a.and(j, byte_mask);
    // A barrel shifter over the table, one stage per bit of the word index (a chain of
    // equality tests would be turned into a switch by LLVM, which stops the interpreter's
    // loops from vectorising; a select tree per word needs more selects).
    let index_bits = pick::<A, u32>(3, 5); // word index <= 4 (f32) / 16 (f64)
    let zero = a.uconst(0);
    let mut words = [zero; 40];
    let mut len = 5 + (1usize << index_bits) - 1;
    for (i, v) in words.iter_mut().take(len).enumerate() {
        *v = a.uconst(table_word(w, i));
    }
    for bit in 0..index_bits {
        let shift = 1usize << bit;
        let on = bit_set(a, wi, shift as u64);
        len -= shift;
        for i in 0..len {
            words[i] = a.select_u(on, words[i + shift], words[i]);
        }
    }
    let mut win = [words[0], words[1], words[2], words[3], words[4]];
    // Fine selection by byte: shift the five words left by 8 * byte bits.
    let mut stage = 1u32;
    while stage < bytes_per_word {
        let s = 8 * stage;
        let on = bit_set(a, byte, stage as u64);
        for k in 0..5 {
            let hi = a.shl(win[k], s);
            let shifted = if k + 1 < 5 {
                let lo = a.lshr(win[k + 1], w - s);
                a.or(hi, lo)
            } else {
                hi
            };
            win[k] = a.select_u(on, shifted, win[k]);
        }
        stage *= 2;
    }

    // P = M * window mod 2^(4w). Its lowest word, lo(M * W3), is never needed: nothing is
    // added to it, so it carries nothing into the words above.
    let hi3 = a.umulhi(big_m, win[3]);
    let lo2 = a.imul(big_m, win[2]);
    let hi2 = a.umulhi(big_m, win[2]);
    let lo1 = a.imul(big_m, win[1]);
    let hi1 = a.umulhi(big_m, win[1]);
    let lo0 = a.imul(big_m, win[0]);
    let one = a.uconst(1);
    let p2 = a.iadd(lo2, hi3);
    let c2 = a.icmp(IntCC::Ult, p2, lo2);
    let c2 = a.select_u(c2, one, zero);
    let s1 = a.iadd(lo1, hi2);
    let ca = a.icmp(IntCC::Ult, s1, lo1);
    let ca = a.select_u(ca, one, zero);
    let p1 = a.iadd(s1, c2);
    let cb = a.icmp(IntCC::Ult, p1, s1);
    let cb = a.select_u(cb, one, zero);
    let p0 = a.iadd(lo0, hi1);
    let p0 = a.iadd(p0, ca);
    let p0 = a.iadd(p0, cb);

    // The quadrant sits in bits w-8, w-7 of p0 (higher bits are multiples of 4); round it to
    // nearest and keep the fraction as a signed fixed-point number in [-1/2, 1/2).
    let half_q = a.uconst(1u64 << (w - 9));
    let qr = a.iadd(p0, half_q);
    let q = a.lshr(qr, w - 8);
    let f0a = a.shl(p0, 8);
    let f0b = a.lshr(p1, w - 8);
    let f0 = a.or(f0a, f0b);
    let f1a = a.shl(p1, 8);
    let f1b = a.lshr(p2, w - 8);
    let f1 = a.or(f1a, f1b);

    // Four half-words, each exact in the format, summed as a double-float.
    let hw = w / 2;
    let low = a.uconst((1u64 << hw) - 1);
    let ca = a.ashr(f0, hw);
    let cb = a.and(f0, low);
    let cc = a.lshr(f1, hw);
    let cd = a.and(f1, low);
    let mut parts = [
        a.sint_to_f(ca),
        a.sint_to_f(cb),
        a.sint_to_f(cc),
        a.sint_to_f(cd),
    ];
    for (i, p) in parts.iter_mut().enumerate() {
        let scale = c(a, (2f64).powi(-((i as i32 + 1) * hw as i32)));
        *p = a.mul(*p, scale);
    }
    // |parts[0]| >= 2^-hw > parts[1] unless parts[0] == 0, as fast_two_sum needs.
    let mut frac = fast_two_sum(a, parts[0], parts[1]);
    frac = df_add_f(a, frac, parts[2]);
    frac = df_add_f(a, frac, parts[3]);

    let pio2 = pick::<A, (f64, f64)>(
        (
            std::f32::consts::FRAC_PI_2 as f64,
            -4.371_138_828_673_793e-8,
        ),
        (std::f64::consts::FRAC_PI_2, 6.123_233_995_736_766e-17),
    );
    let pio2 = (c(a, pio2.0), c(a, pio2.1));
    (df_mul(a, frac, pio2), q)
}

/// The f32 arguments below which `sin` and `cos` reduce with `reduce_pio2_medium`
/// (`2^20`); at and above it with `reduce_pio2`.
pub const TRIG_MEDIUM_F32: f32 = 1_048_576.0;

/// [`TRIG_MEDIUM_F32`] for f64 (also `2^20`).
pub const TRIG_MEDIUM_F64: f64 = 1_048_576.0;

/// `|x| mod π/2` for `1/2 <= |x| < 2^20` ([`TRIG_MEDIUM_F32`], [`TRIG_MEDIUM_F64`]): a
/// Cody–Waite reduction (Cody & Waite 1980; Muller, *Elementary Functions*, ch. 11), a small
/// fraction of [`reduce_pio2`]'s operations. Returns `(r, q)` as [`reduce_pio2`] does,
/// except that `|r|` may exceed π/4 slightly: `k` is rounded from `|x|` times the rounded
/// 2/π (by up to 2^-5 for f32, 2^-32 for f64). In both formats `k < 2^20 · 2/π`, the
/// error left in `r.0 + r.1` is far below an ulp of `r` even for the arguments closest to
/// a multiple of π/2, and the f32 functions stay within 1 ulp of the correctly rounded
/// result on all 2^32 inputs (`cargo run -p kiln-math --release --example exhaustive sin
/// cos`).
#[inline(always)]
pub(crate) fn reduce_pio2_medium<A: Arith>(a: &mut A, ax: A::F) -> (Df<A::F>, A::U) {
    if A::FORMAT == Format::F32 {
        medium_f32(a, ax)
    } else {
        medium_f64(a, ax)
    }
}

/// f32, in `fma`s (f32 functions may use `fma`: f32 `exp` does). `π/2 = P1 - n1 - n2` to
/// within 2^-76, each part an f32 (`P1` is π/2 rounded up).
/// - `t1 = |x| - k P1` is exact in one `fma`: both are multiples of 2^-24 (`|x| >= 1/2`,
///   `P1` in [1, 2)) and the difference is below 1 in magnitude, so it has at most 24
///   significant bits;
/// - `k n1` is exact as `ph + pe` (`pe` by `fma`), so `t1 + k n1` is exact as a TwoSum;
/// - rounded are only `k n2` and the sum of the three low terms, each below 2^-25.
#[inline(always)]
fn medium_f32<A: Arith>(a: &mut A, ax: A::F) -> (Df<A::F>, A::U) {
    let two_over_pi = c(a, 0.636_619_746_685_028_1);
    let (k, q) = round_product(a, ax, two_over_pi);
    let neg_p1 = c(a, -1.570_796_370_506_286_6);
    let t1 = a.fma(k, neg_p1, ax);
    let n1 = c(a, 4.371_138_828_673_793e-8);
    let n2 = c(a, 1.715_124_510_005_881_9e-15);
    // r = |x| - k π/2 = t1 + k n1 + k n2.
    let ph = a.mul(k, n1);
    let neg_ph = a.neg(ph);
    let pe = a.fma(k, n1, neg_ph);
    let (sh, sl) = two_sum(a, t1, ph);
    let m2 = a.mul(k, n2);
    let low = a.add(pe, m2);
    let low = a.add(sl, low);
    (fast_two_sum(a, sh, low), q)
}

/// f64, without `fma` (no f64 function uses it: it is slow where a host lacks FMA), as
/// fdlibm's `__rem_pio2` for medium arguments but branch-free: π/2 in three 33-bit parts
/// `P1 + P2 + P3` and the f64 rest `P3t` (fdlibm's `pio2_1`, `pio2_2`, `pio2_3`, `pio2_3t`).
/// With `k < 2^20`, `k Pi` is exact; `|x| - k P1` is exact (Sterbenz: the two are within a
/// factor of 2); the next two subtractions are TwoSums; only `k P3t` and the sum of the low
/// terms are rounded.
#[inline(always)]
fn medium_f64<A: Arith>(a: &mut A, ax: A::F) -> (Df<A::F>, A::U) {
    let two_over_pi = c(a, std::f64::consts::FRAC_2_PI);
    let t = a.mul(ax, two_over_pi);
    let (k, q) = round_small(a, t);
    let neg_p1 = c(a, -1.570_796_326_734_125_6);
    let m1 = a.mul(k, neg_p1);
    let t1 = a.add(ax, m1);
    let neg_p2 = c(a, -6.077_100_506_303_966e-11);
    let m2 = a.mul(k, neg_p2);
    let (s2, e2) = two_sum(a, t1, m2);
    let neg_p3 = c(a, -2.022_266_248_711_166_5e-21);
    let m3 = a.mul(k, neg_p3);
    let (s3, e3) = two_sum(a, s2, m3);
    let neg_p3t = c(a, -8.478_427_660_368_9e-32);
    let m4 = a.mul(k, neg_p3t);
    let low = a.add(e3, m4);
    let low = a.add(e2, low);
    (fast_two_sum(a, s3, low), q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_starts_like_fdlibm_ipio2() {
        // fdlibm's ipio2 holds 24-bit chunks: 0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1.
        assert_eq!(TWO_OVER_PI[0] >> 40, 0xA2F983);
        assert_eq!((TWO_OVER_PI[0] >> 16) & 0xff_ffff, 0x6E4E44);
        assert_eq!(table_word(32, 1), 0xa2f9836e);
        assert_eq!(table_word(32, 2), 0x4e441529);
        assert_eq!(table_word(64, 2), 0xfc2757d1f534ddc0);
    }
}
