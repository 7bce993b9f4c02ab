//! [`Arith`] over eight `f32` lanes of one 256-bit register: [`F32x8`], for the
//! interpreter's block-math loops on CPUs with AVX-512.
//!
//! Why explicit vectors when [`crate::ScalarF32`] auto-vectorises: with AVX-512 enabled, LLVM
//! vectorises those loops 512 bits wide, and Rust has no per-function way to ask for 256
//! (`--xla_cpu_prefer_vector_width`'s default, as in XLA). Compiled for AVX2 alone they get
//! 256-bit vectors but only 16 registers, and the constants of `exp` or `erf` are reloaded in
//! every iteration. These intrinsics stay 256 bits wide while the AVX-512VL encoding gives
//! them 32 registers and mask registers: `exp` runs about a quarter faster, close to the
//! 512-bit build (`cargo run -p kiln-interp --release --example staged_exp`).
//!
//! Every method is one or a few exactly-rounded IEEE operations per lane, the same ones the
//! scalar implementation performs, so each lane's result has the scalar bits (tested against
//! [`crate::ScalarF32`] for every function and primitive below). Methods are
//! `#[inline(always)]`; for good code they must be inlined into a function compiled with
//! [`F32x8::FEATURES`] (`#[target_feature]`), as the interpreter's loops are.

use core::arch::x86_64::*;

use crate::arith::{Arith, FloatCC, Format, IntCC};
use crate::ScalarF32;

/// [`Arith`] over `__m256` (eight `f32`), `__m256i` (eight 32-bit integers) and `__mmask8`
/// masks. A value exists only on a CPU with [`F32x8::FEATURES`]: that is what makes its
/// methods safe to call.
#[derive(Debug, Clone, Copy)]
pub struct F32x8(());

impl F32x8 {
    /// The target features the methods use, for the `#[target_feature]` of the loops that
    /// call them.
    pub const FEATURES: &'static str = "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw";

    /// The implementation, if this CPU has [`F32x8::FEATURES`].
    pub fn new() -> Option<F32x8> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw");
        has.then_some(F32x8(()))
    }
}

/// `-0.0` in every lane: the sign bits.
#[inline(always)]
fn signs() -> __m256 {
    // SAFETY (here and in every method below): an `F32x8` exists only on a CPU with the
    // features these intrinsics need (`F32x8::new`).
    unsafe { _mm256_set1_ps(-0.0) }
}

/// A shift count for `_mm256_s*l_epi32`: constant after inlining, so LLVM emits the
/// immediate form.
#[inline(always)]
fn count(n: u32) -> __m128i {
    unsafe { _mm_cvtsi32_si128(n as i32) }
}

/// `op` on each pair of 32-bit lanes.
#[inline(always)]
fn lane_by_lane(a: __m256i, b: __m256i, op: impl Fn(u32, u32) -> u32) -> __m256i {
    // SAFETY: `__m256i` and `[u32; 8]` are 32 bytes with no invalid bit patterns.
    let (a, b) = unsafe {
        (
            core::mem::transmute::<__m256i, [u32; 8]>(a),
            core::mem::transmute::<__m256i, [u32; 8]>(b),
        )
    };
    let r: [u32; 8] = core::array::from_fn(|l| op(a[l], b[l]));
    unsafe { core::mem::transmute::<[u32; 8], __m256i>(r) }
}

impl Arith for F32x8 {
    type F = __m256;
    type U = __m256i;
    type M = __mmask8;

    const FORMAT: Format = Format::F32;

    #[inline(always)]
    fn fconst(&mut self, v: f64) -> __m256 {
        let r = v as f32;
        debug_assert!(v.is_nan() || r as f64 == v, "constant {v} not exact");
        unsafe { _mm256_set1_ps(r) }
    }
    #[inline(always)]
    fn uconst(&mut self, v: u64) -> __m256i {
        unsafe { _mm256_set1_epi32(v as u32 as i32) }
    }

    #[inline(always)]
    fn add(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    fn fma(&mut self, a: __m256, b: __m256, c: __m256) -> __m256 {
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn sqrt(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_sqrt_ps(a) }
    }
    #[inline(always)]
    fn neg(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_xor_ps(a, signs()) }
    }
    #[inline(always)]
    fn abs(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_andnot_ps(signs(), a) }
    }
    #[inline(always)]
    fn min(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe {
            // `minps` returns its second operand for NaN and for equal operands; those
            // lanes are then fixed as the scalar version does: -0 from `or`, NaN from `+`.
            let r = _mm256_min_ps(a, b);
            let eq = _mm256_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
            let r = _mm256_mask_blend_ps(eq, r, _mm256_or_ps(a, b));
            let nan = _mm256_cmp_ps_mask::<_CMP_UNORD_Q>(a, b);
            _mm256_mask_blend_ps(nan, r, _mm256_add_ps(a, b))
        }
    }
    #[inline(always)]
    fn max(&mut self, a: __m256, b: __m256) -> __m256 {
        unsafe {
            let r = _mm256_max_ps(a, b);
            let eq = _mm256_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
            let r = _mm256_mask_blend_ps(eq, r, _mm256_and_ps(a, b));
            let nan = _mm256_cmp_ps_mask::<_CMP_UNORD_Q>(a, b);
            _mm256_mask_blend_ps(nan, r, _mm256_add_ps(a, b))
        }
    }
    #[inline(always)]
    fn raise_to(&mut self, x: __m256, lo: __m256) -> __m256 {
        // `maxps(lo, x)` is `lo > x ? lo : x`: the default's selection exactly, NaN included.
        unsafe { _mm256_max_ps(lo, x) }
    }
    #[inline(always)]
    fn lower_to(&mut self, x: __m256, hi: __m256) -> __m256 {
        unsafe { _mm256_min_ps(hi, x) }
    }
    #[inline(always)]
    fn floor(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn ceil(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn trunc(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn round_even(&mut self, a: __m256) -> __m256 {
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn fcmp(&mut self, cc: FloatCC, a: __m256, b: __m256) -> __mmask8 {
        unsafe {
            match cc {
                FloatCC::Lt => _mm256_cmp_ps_mask::<_CMP_LT_OQ>(a, b),
                FloatCC::Le => _mm256_cmp_ps_mask::<_CMP_LE_OQ>(a, b),
                FloatCC::Gt => _mm256_cmp_ps_mask::<_CMP_GT_OQ>(a, b),
                FloatCC::Ge => _mm256_cmp_ps_mask::<_CMP_GE_OQ>(a, b),
                FloatCC::Eq => _mm256_cmp_ps_mask::<_CMP_EQ_OQ>(a, b),
                FloatCC::Ne => _mm256_cmp_ps_mask::<_CMP_NEQ_UQ>(a, b),
                FloatCC::Ordered => _mm256_cmp_ps_mask::<_CMP_ORD_Q>(a, b),
                FloatCC::Unordered => _mm256_cmp_ps_mask::<_CMP_UNORD_Q>(a, b),
            }
        }
    }
    #[inline(always)]
    fn select(&mut self, m: __mmask8, a: __m256, b: __m256) -> __m256 {
        // `mask_blend(m, x, y)` takes `y` where `m` is set.
        unsafe { _mm256_mask_blend_ps(m, b, a) }
    }

    #[inline(always)]
    fn to_bits(&mut self, a: __m256) -> __m256i {
        unsafe { _mm256_castps_si256(a) }
    }
    #[inline(always)]
    fn from_bits(&mut self, a: __m256i) -> __m256 {
        unsafe { _mm256_castsi256_ps(a) }
    }
    #[inline(always)]
    fn f_to_sint(&mut self, a: __m256) -> __m256i {
        unsafe {
            // `cvttps2dq` gives i32::MIN for NaN and for every out-of-range lane; Rust's
            // `as` (the contract) saturates high lanes to i32::MAX and maps NaN to 0.
            let r = _mm256_cvttps_epi32(a);
            let high = _mm256_cmp_ps_mask::<_CMP_GE_OQ>(a, _mm256_set1_ps(2_147_483_648.0));
            let r = _mm256_mask_mov_epi32(r, high, _mm256_set1_epi32(i32::MAX));
            let nan = _mm256_cmp_ps_mask::<_CMP_UNORD_Q>(a, a);
            _mm256_mask_mov_epi32(r, nan, _mm256_setzero_si256())
        }
    }
    #[inline(always)]
    fn sint_to_f(&mut self, a: __m256i) -> __m256 {
        unsafe { _mm256_cvtepi32_ps(a) }
    }
    #[inline(always)]
    fn uint_to_f(&mut self, a: __m256i) -> __m256 {
        unsafe {
            // Both 16-bit halves convert exactly, and `hi * 2^16 + lo` rounds once.
            let hi = _mm256_cvtepi32_ps(_mm256_srli_epi32::<16>(a));
            let lo = _mm256_cvtepi32_ps(_mm256_and_si256(a, _mm256_set1_epi32(0xffff)));
            _mm256_fmadd_ps(hi, _mm256_set1_ps(65536.0), lo)
        }
    }

    #[inline(always)]
    fn iadd(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_add_epi32(a, b) }
    }
    #[inline(always)]
    fn isub(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_sub_epi32(a, b) }
    }
    // x86 has no integer division on vectors: the scalar primitive, lane by lane.
    #[inline(always)]
    fn sdiv(&mut self, a: __m256i, b: __m256i) -> __m256i {
        lane_by_lane(a, b, |x, y| ScalarF32.sdiv(x, y))
    }
    #[inline(always)]
    fn udiv(&mut self, a: __m256i, b: __m256i) -> __m256i {
        lane_by_lane(a, b, |x, y| ScalarF32.udiv(x, y))
    }
    #[inline(always)]
    fn srem(&mut self, a: __m256i, b: __m256i) -> __m256i {
        lane_by_lane(a, b, |x, y| ScalarF32.srem(x, y))
    }
    #[inline(always)]
    fn urem(&mut self, a: __m256i, b: __m256i) -> __m256i {
        lane_by_lane(a, b, |x, y| ScalarF32.urem(x, y))
    }
    #[inline(always)]
    fn imul(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_mullo_epi32(a, b) }
    }
    #[inline(always)]
    fn umulhi(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe {
            // 64-bit products of the even lanes, then of the odd lanes moved down; the high
            // halves are the odd 32-bit words of each product.
            let even = _mm256_mul_epu32(a, b);
            let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), _mm256_srli_epi64::<32>(b));
            _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(even), odd)
        }
    }
    #[inline(always)]
    fn and(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_and_si256(a, b) }
    }
    #[inline(always)]
    fn or(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_or_si256(a, b) }
    }
    #[inline(always)]
    fn xor(&mut self, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_xor_si256(a, b) }
    }
    #[inline(always)]
    fn not(&mut self, a: __m256i) -> __m256i {
        unsafe { _mm256_xor_si256(a, _mm256_set1_epi32(-1)) }
    }
    #[inline(always)]
    fn shl(&mut self, a: __m256i, n: u32) -> __m256i {
        unsafe { _mm256_sll_epi32(a, count(n)) }
    }
    #[inline(always)]
    fn lshr(&mut self, a: __m256i, n: u32) -> __m256i {
        unsafe { _mm256_srl_epi32(a, count(n)) }
    }
    #[inline(always)]
    fn ashr(&mut self, a: __m256i, n: u32) -> __m256i {
        unsafe { _mm256_sra_epi32(a, count(n)) }
    }
    #[inline(always)]
    fn rotl(&mut self, a: __m256i, n: u32) -> __m256i {
        // A logical shift by 32 gives 0, so `n = 0` returns `a`.
        unsafe {
            _mm256_or_si256(
                _mm256_sll_epi32(a, count(n)),
                _mm256_srl_epi32(a, count(32 - n)),
            )
        }
    }
    #[inline(always)]
    fn icmp(&mut self, cc: IntCC, a: __m256i, b: __m256i) -> __mmask8 {
        unsafe {
            match cc {
                IntCC::Eq => _mm256_cmpeq_epi32_mask(a, b),
                IntCC::Ne => _mm256_cmpneq_epi32_mask(a, b),
                IntCC::Slt => _mm256_cmplt_epi32_mask(a, b),
                IntCC::Sle => _mm256_cmple_epi32_mask(a, b),
                IntCC::Sgt => _mm256_cmpgt_epi32_mask(a, b),
                IntCC::Sge => _mm256_cmpge_epi32_mask(a, b),
                IntCC::Ult => _mm256_cmplt_epu32_mask(a, b),
                IntCC::Ule => _mm256_cmple_epu32_mask(a, b),
                IntCC::Ugt => _mm256_cmpgt_epu32_mask(a, b),
                IntCC::Uge => _mm256_cmpge_epu32_mask(a, b),
            }
        }
    }
    #[inline(always)]
    fn select_u(&mut self, m: __mmask8, a: __m256i, b: __m256i) -> __m256i {
        unsafe { _mm256_mask_blend_epi32(m, b, a) }
    }

    #[inline(always)]
    fn mand(&mut self, a: __mmask8, b: __mmask8) -> __mmask8 {
        a & b
    }
    #[inline(always)]
    fn mor(&mut self, a: __mmask8, b: __mmask8) -> __mmask8 {
        a | b
    }
    #[inline(always)]
    fn mnot(&mut self, a: __mmask8) -> __mmask8 {
        !a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScalarF32;

    fn vector(x: [f32; 8]) -> __m256 {
        // SAFETY: both are 32 bytes of plain data.
        unsafe { core::mem::transmute(x) }
    }
    fn lanes(v: __m256) -> [f32; 8] {
        unsafe { core::mem::transmute(v) }
    }
    fn ints(v: __m256i) -> [u32; 8] {
        unsafe { core::mem::transmute(v) }
    }
    fn int_vector(x: [u32; 8]) -> __m256i {
        unsafe { core::mem::transmute(x) }
    }
    fn mask_lanes(m: __mmask8) -> [bool; 8] {
        core::array::from_fn(|j| m >> j & 1 == 1)
    }

    /// Special values, every power of two's neighbourhood and pseudo-random bit patterns.
    fn inputs() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            f32::MAX,
            f32::MIN,
            88.72,
            89.5,
            -103.9,
            -104.5,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            4_294_967_040.0,
        ];
        for e in 0..=255u32 {
            for m in [0u32, 1, 0x40_0000, 0x7f_ffff] {
                v.push(f32::from_bits(e << 23 | m));
                v.push(f32::from_bits(0x8000_0000 | e << 23 | m));
            }
        }
        let mut s = 0x9e37_79b9_u32;
        for i in 0..40_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            // Half of them in the range where the functions do their work.
            v.push(if i % 2 == 0 {
                f32::from_bits(s)
            } else {
                (s as f32 / u32::MAX as f32 - 0.5) * 40.0
            });
        }
        while v.len() % 8 != 0 {
            v.push(0.25);
        }
        v
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Runs `check` when this CPU has the features, else says why it does not.
    fn on_this_cpu(check: impl FnOnce(F32x8)) {
        match F32x8::new() {
            Some(y) => check(y),
            None => eprintln!("skipped: this CPU lacks {}", F32x8::FEATURES),
        }
    }

    fn unary(
        name: &str,
        v: impl Fn(&mut F32x8, __m256) -> __m256,
        s: impl Fn(&mut ScalarF32, f32) -> f32,
    ) {
        on_this_cpu(|mut y| {
            for x in inputs().chunks(8) {
                let got = lanes(v(&mut y, vector(x.try_into().unwrap())));
                for j in 0..8 {
                    let want = s(&mut ScalarF32, x[j]);
                    assert!(
                        same(got[j], want),
                        "{name}({:e}): {:e} != {want:e}",
                        x[j],
                        got[j]
                    );
                }
            }
        });
    }

    fn binary(
        name: &str,
        v: impl Fn(&mut F32x8, __m256, __m256) -> __m256,
        s: impl Fn(&mut ScalarF32, f32, f32) -> f32,
    ) {
        on_this_cpu(|mut y| {
            let xs = inputs();
            // Each input against a shifted copy, and against itself (equal operands).
            for shift in [0, 1, 8, 4093] {
                for i in (0..xs.len()).step_by(8) {
                    let a: [f32; 8] = xs[i..i + 8].try_into().unwrap();
                    let b: [f32; 8] = core::array::from_fn(|j| xs[(i + j + shift) % xs.len()]);
                    let got = lanes(v(&mut y, vector(a), vector(b)));
                    for j in 0..8 {
                        let want = s(&mut ScalarF32, a[j], b[j]);
                        assert!(
                            same(got[j], want),
                            "{name}({:e}, {:e}): {:e} != {want:e}",
                            a[j],
                            b[j],
                            got[j]
                        );
                    }
                }
            }
        });
    }

    #[test]
    fn every_function_has_the_scalar_bits() {
        unary("exp", crate::exp, crate::exp);
        unary(
            "exp_finish(exp_start)",
            |a, x| {
                let (t, k) = crate::exp_start(a, x);
                crate::exp_finish(a, t, k)
            },
            crate::exp,
        );
        unary("expm1", crate::expm1, crate::expm1);
        unary("log", crate::log, crate::log);
        unary("log1p", crate::log1p, crate::log1p);
        unary("tanh", crate::tanh, crate::tanh);
        unary("logistic", crate::logistic, crate::logistic);
        unary("erf", crate::erf, crate::erf);
        unary("sin", crate::sin, crate::sin);
        unary("cos", crate::cos, crate::cos);
        unary("rsqrt", crate::rsqrt, crate::rsqrt);
        binary("pow", crate::pow, crate::pow);
    }

    #[test]
    fn float_primitives_have_the_scalar_bits() {
        unary("sqrt", |a, x| a.sqrt(x), |a, x| a.sqrt(x));
        unary("neg", |a, x| a.neg(x), |a, x| a.neg(x));
        unary("abs", |a, x| a.abs(x), |a, x| a.abs(x));
        unary("floor", |a, x| a.floor(x), |a, x| a.floor(x));
        unary("ceil", |a, x| a.ceil(x), |a, x| a.ceil(x));
        unary("trunc", |a, x| a.trunc(x), |a, x| a.trunc(x));
        unary("round_even", |a, x| a.round_even(x), |a, x| a.round_even(x));
        binary("add", |a, x, y| a.add(x, y), |a, x, y| a.add(x, y));
        binary("sub", |a, x, y| a.sub(x, y), |a, x, y| a.sub(x, y));
        binary("mul", |a, x, y| a.mul(x, y), |a, x, y| a.mul(x, y));
        binary("div", |a, x, y| a.div(x, y), |a, x, y| a.div(x, y));
        binary("fma", |a, x, y| a.fma(x, y, x), |a, x, y| a.fma(x, y, x));
        binary("min", |a, x, y| a.min(x, y), |a, x, y| a.min(x, y));
        binary("max", |a, x, y| a.max(x, y), |a, x, y| a.max(x, y));
        binary(
            "raise_to",
            |a, x, y| a.raise_to(x, y),
            |a, x, y| a.raise_to(x, y),
        );
        binary(
            "lower_to",
            |a, x, y| a.lower_to(x, y),
            |a, x, y| a.lower_to(x, y),
        );
        for cc in [
            FloatCC::Lt,
            FloatCC::Le,
            FloatCC::Gt,
            FloatCC::Ge,
            FloatCC::Eq,
            FloatCC::Ne,
            FloatCC::Ordered,
            FloatCC::Unordered,
        ] {
            // The comparison, read back through `select` of two constants.
            binary(
                &format!("{cc:?}"),
                |a, x, y| {
                    let m = a.fcmp(cc, x, y);
                    let (one, two) = (a.fconst(1.0), a.fconst(2.0));
                    a.select(m, one, two)
                },
                |a, x, y| if a.fcmp(cc, x, y) { 1.0 } else { 2.0 },
            );
        }
    }

    #[test]
    fn conversions_and_integer_primitives_have_the_scalar_bits() {
        let as_float = |u: u32| f32::from_bits(u);
        unary(
            "f_to_sint",
            |a, x| {
                let i = a.f_to_sint(x);
                a.from_bits(i)
            },
            |a, x| as_float(a.f_to_sint(x)),
        );
        unary(
            "sint_to_f",
            |a, x| {
                let i = a.to_bits(x);
                a.sint_to_f(i)
            },
            |a, x| a.sint_to_f(x.to_bits()),
        );
        unary(
            "uint_to_f",
            |a, x| {
                let i = a.to_bits(x);
                a.uint_to_f(i)
            },
            |a, x| a.uint_to_f(x.to_bits()),
        );
        // Integer operations on the inputs' bit patterns, compared as bits.
        type IntOp = fn(&mut F32x8, __m256i, __m256i) -> __m256i;
        type ScalarIntOp = fn(&mut ScalarF32, u32, u32) -> u32;
        use crate::{int_sign, xla_div, DivOp};
        let ops: [(&str, IntOp, ScalarIntOp); 13] = [
            ("iadd", |a, x, y| a.iadd(x, y), |a, x, y| a.iadd(x, y)),
            // The division primitives lane by lane, under XLA's selects (divisors 0 too).
            (
                "xla sdiv",
                |a, x, y| xla_div(a, DivOp::Div, true, x, y),
                |a, x, y| xla_div(a, DivOp::Div, true, x, y),
            ),
            (
                "xla srem",
                |a, x, y| xla_div(a, DivOp::Rem, true, x, y),
                |a, x, y| xla_div(a, DivOp::Rem, true, x, y),
            ),
            (
                "xla udiv",
                |a, x, y| xla_div(a, DivOp::Div, false, x, y),
                |a, x, y| xla_div(a, DivOp::Div, false, x, y),
            ),
            (
                "xla urem",
                |a, x, y| xla_div(a, DivOp::Rem, false, x, y),
                |a, x, y| xla_div(a, DivOp::Rem, false, x, y),
            ),
            (
                "sign",
                |a, x, _| int_sign(a, true, x),
                |a, x, _| int_sign(a, true, x),
            ),
            ("isub", |a, x, y| a.isub(x, y), |a, x, y| a.isub(x, y)),
            ("imul", |a, x, y| a.imul(x, y), |a, x, y| a.imul(x, y)),
            ("umulhi", |a, x, y| a.umulhi(x, y), |a, x, y| a.umulhi(x, y)),
            ("and", |a, x, y| a.and(x, y), |a, x, y| a.and(x, y)),
            ("or", |a, x, y| a.or(x, y), |a, x, y| a.or(x, y)),
            ("xor", |a, x, y| a.xor(x, y), |a, x, y| a.xor(x, y)),
            ("not", |a, x, _| a.not(x), |a, x, _| a.not(x)),
        ];
        for (name, v, s) in ops {
            binary(
                name,
                |a, x, y| {
                    let (i, j) = (a.to_bits(x), a.to_bits(y));
                    let r = v(a, i, j);
                    a.from_bits(r)
                },
                |a, x, y| as_float(s(a, x.to_bits(), y.to_bits())),
            );
        }
        for n in [0, 1, 7, 16, 23, 31] {
            binary(
                &format!("shifts by {n}"),
                |a, x, _| {
                    let i = a.to_bits(x);
                    let (l, r, s, t) = (a.shl(i, n), a.lshr(i, n), a.ashr(i, n), a.rotl(i, n));
                    let v = a.xor(l, r);
                    let v = a.iadd(v, s);
                    let v = a.isub(v, t);
                    a.from_bits(v)
                },
                |a, x, _| {
                    let i = x.to_bits();
                    let v = a.shl(i, n) ^ a.lshr(i, n);
                    as_float(v.wrapping_add(a.ashr(i, n)).wrapping_sub(a.rotl(i, n)))
                },
            );
        }
        on_this_cpu(|mut y| {
            let xs = inputs();
            for cc in [
                IntCC::Eq,
                IntCC::Ne,
                IntCC::Slt,
                IntCC::Sle,
                IntCC::Sgt,
                IntCC::Sge,
                IntCC::Ult,
                IntCC::Ule,
                IntCC::Ugt,
                IntCC::Uge,
            ] {
                for i in (0..xs.len() - 9).step_by(8) {
                    let a: [u32; 8] = core::array::from_fn(|j| xs[i + j].to_bits());
                    let b: [u32; 8] = core::array::from_fn(|j| xs[i + j + (j & 1)].to_bits());
                    let m = y.icmp(cc, int_vector(a), int_vector(b));
                    let picked = ints(y.select_u(m, int_vector(a), int_vector(b)));
                    for j in 0..8 {
                        let want = ScalarF32.icmp(cc, a[j], b[j]);
                        assert_eq!(mask_lanes(m)[j], want, "{cc:?}({:#x}, {:#x})", a[j], b[j]);
                        assert_eq!(picked[j], if want { a[j] } else { b[j] });
                    }
                    let (p, q) = (y.icmp(cc, int_vector(a), int_vector(b)), 0b0110_1001);
                    let masks = [y.mand(p, q), y.mor(p, q), y.mnot(p)];
                    let want = [p & q, p | q, !p];
                    assert_eq!(masks, want);
                }
            }
        });
    }
}
