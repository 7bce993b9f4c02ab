//! Rounding `f32` values to `f16` precision a block at a time, for compiled kernels' staged
//! roundings (`kiln_compiler`'s block math): F16C's `vcvtps2ph` (round to nearest even)
//! then `vcvtph2ps`, eight lanes per pair, where the CPU has F16C; `kiln_math::float16`'s
//! rule elsewhere and for the last few elements. The two give the same bits — the rule is
//! the specification (the interpreter runs it), and the tests below hold F16C to it on every
//! class of input: every sign, exponent and top mantissa bits, with each pattern of the
//! bits where `f16` rounds, ties, overflow to infinity, subnormal results and NaN payloads.
//! Cranelift 0.135 cannot emit F16C (its x64 backend lowers no `f16` conversions), so a
//! kernel reaches it through a call.

use kiln_math::float16::{round_f32, Half};

/// `out[i] = round_f32(src[i], F16)` for every `i`, in place when `src` is `None`
/// (`src`, when given, is as long as `out`).
pub fn round_f16_block(src: Option<&[f32]>, out: &mut [f32]) {
    if let Some(s) = src {
        if s.len() != out.len() {
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("f16c") {
        // SAFETY: the CPU has AVX and F16C; the pointers cover `out.len()` elements.
        unsafe { round_f16_f16c(src.map(<[f32]>::as_ptr), out) };
        return;
    }
    round_with_rule(src, out, 0);
}

/// The rule on elements `from..` (`src` as for [`round_f16_block`]).
fn round_with_rule(src: Option<&[f32]>, out: &mut [f32], from: usize) {
    match src {
        Some(s) => {
            for (o, &x) in out[from..].iter_mut().zip(&s[from..]) {
                *o = round_f32(x, Half::F16);
            }
        }
        None => {
            for o in &mut out[from..] {
                *o = round_f32(*o, Half::F16);
            }
        }
    }
}

/// [`round_f16_block`] with F16C: `src` (or `out` itself when `None`) holds `out.len()`
/// elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn round_f16_f16c(src: Option<*const f32>, out: &mut [f32]) {
    use std::arch::x86_64::{
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps,
        _MM_FROUND_TO_NEAREST_INT,
    };
    let n = out.len();
    let dst = out.as_mut_ptr();
    let from = src.unwrap_or(dst as *const f32);
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
    // SAFETY: `from` covers `n` elements (`src`'s length is `out`'s, checked by the caller).
    let src = src.map(|p| unsafe { std::slice::from_raw_parts(p, n) });
    round_with_rule(src, out, i);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// F16C and the rule agree on every sign, exponent and top 7 mantissa bits, each with
    /// 32 patterns of the low 16 bits: all 8 values of the bits `f16` keeps last or rounds
    /// at for normal results (13–15), each with no sticky bits, the lowest, the highest and
    /// one in the middle; the high half's own patterns cover where subnormal results round.
    /// Then 2^20 random bit patterns, in place and out of place, at lengths with tails.
    #[test]
    fn f16c_rounds_as_the_rule_does() {
        let lows: Vec<u32> = (0..8u32)
            .flat_map(|b| [0, 1, 0x0fff, 0x0800].map(|s| (b << 13) | s))
            .collect();
        let mut x: Vec<f32> = Vec::with_capacity(65536 * lows.len());
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
        let want: Vec<u32> = x
            .iter()
            .map(|&v| round_f32(v, Half::F16).to_bits())
            .collect();
        let mut out = vec![0.0f32; x.len()];
        round_f16_block(Some(&x), &mut out);
        let first_bad = |got: &[f32]| got.iter().zip(&want).position(|(g, w)| g.to_bits() != *w);
        if let Some(i) = first_bad(&out) {
            panic!(
                "{:#010x}: got {:#010x}, the rule {:#010x}",
                x[i].to_bits(),
                out[i].to_bits(),
                want[i]
            );
        }
        let mut inplace = x.clone();
        round_f16_block(None, &mut inplace);
        assert_eq!(first_bad(&inplace), None);
        for n in [0, 1, 7, 8, 9, 23, 513] {
            let mut part = vec![0.0f32; n];
            round_f16_block(Some(&x[..n]), &mut part);
            assert!(
                part.iter().zip(&want).all(|(g, w)| g.to_bits() == *w),
                "n = {n}"
            );
        }
    }
}
