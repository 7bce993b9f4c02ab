//! `log1p` and `erf_inv` for `f32` exactly as XLA:CPU (jaxlib 0.10.2, x86-64 with FMA)
//! computes them, so that JAX's `normal` and `truncated_normal` come out bit for bit.
//!
//! Where the arithmetic comes from: XLA expands `erf_inv` into Giles' polynomial
//! (`xla/hlo/builder/lib/math.cc`, `ErfInv32`) around a `log-plus-one`; XLA:CPU lowers
//! `log-plus-one` to its `xla.log1p.f32` intrinsic (a Padé form near 0, else its own
//! Cephes-style `log(1 + x)`); and XLA:CPU compiles with `AllowFPOpFusion = Fast`, so LLVM
//! contracts every `fmul` whose only use is an `fadd`/`fsub` into an FMA. Each `fma` below is
//! one read off the machine code of `jax.jit(jax.lax.erf_inv)` and `jax.random.normal`
//! (`XLA_FLAGS=--xla_dump_to=…` gives the `.ll` and `.o` files); each plain `mul` + `add` pair
//! is one LLVM left unfused because the product has a second use. On a CPU without FMA,
//! XLA's own results differ from these (and from themselves on an FMA machine).
//!
//! Written once over [`Arith`]: the interpreter, the Cranelift kernels and PTX instantiate
//! the same operations, and every backend renders [`Arith::fma`] as a true fused op.

use kiln_math::{Arith, FloatCC};

use crate::words::wconst;

/// An `f32` constant from its bit pattern (XLA's constants, as the dumped LLVM IR gives them).
#[inline(always)]
fn fbits<A: Arith>(a: &mut A, bits: u32) -> A::F {
    a.fconst(f64::from(f32::from_bits(bits)))
}

/// `p = fma(p, x, c)` for each `c` in turn (Horner's rule with every step fused).
#[inline(always)]
fn horner_fma<A: Arith>(a: &mut A, mut p: A::F, x: A::F, coeffs: &[u32]) -> A::F {
    for &c in coeffs {
        let c = fbits(a, c);
        p = a.fma(p, x, c);
    }
    p
}

/// XLA:CPU's `log` of `f32` (its polynomial approximation: range reduction to a mantissa
/// `m ∈ [√½, √2)`, a degree-8 polynomial in `m − 1`, `ln 2` split in two parts).
/// `log(0) = −∞`, `log(+∞) = +∞`, `log(x < 0)` and `log(NaN)` are NaN; subnormals are
/// treated as the smallest normal.
#[inline(always)]
pub fn log_f32<A: Arith>(a: &mut A, t: A::F) -> A::F {
    let zero = a.fconst(0.0);
    let one = a.fconst(1.0);
    let min_normal = fbits(a, 0x0080_0000);
    let is_normal = a.fcmp(FloatCC::Gt, t, min_normal);
    let tm = a.select(is_normal, t, min_normal);
    let bits = a.to_bits(tm);
    // Exponent + 1 and the mantissa scaled into [0.5, 1).
    let biased = a.lshr(bits, 23);
    let bias = wconst(a, 127);
    let e = a.isub(biased, bias);
    let e = a.sint_to_f(e);
    let e1 = a.add(e, one);
    let mant_mask = wconst(a, 0x807f_ffff);
    let half_bits = wconst(a, 0x3f00_0000);
    let m = a.and(bits, mant_mask);
    let m = a.or(m, half_bits);
    let m = a.from_bits(m);
    let sqrt_half = fbits(a, 0x3f35_04f3);
    let small = a.fcmp(FloatCC::Lt, m, sqrt_half);
    let m_or_0 = a.select(small, m, zero);
    let minus_one = a.fconst(-1.0);
    let xr = a.add(m, minus_one);
    let xr = a.add(xr, m_or_0);
    let one_or_0 = a.select(small, one, zero);
    let e = a.sub(e1, one_or_0);
    let x2 = a.mul(xr, xr);
    let x3 = a.mul(x2, xr);
    // The degree-8 polynomial, split in three interleaved Horner chains as XLA writes it.
    let c0 = fbits(a, 0x3d90_21bb);
    let p1 = horner_fma(a, c0, xr, &[0xbdeb_d1b8, 0x3def_251a]);
    let c1 = fbits(a, 0xbdfe_5d4f);
    let p2 = horner_fma(a, c1, xr, &[0x3e11_e9bf, 0xbe2a_ae50]);
    let c2 = fbits(a, 0x3e4c_ceac);
    let p3 = horner_fma(a, c2, xr, &[0xbe7f_fffc, 0x3eaa_aaaa]);
    let q = a.fma(p1, x3, p2);
    let q = a.fma(q, x3, p3);
    let ln2_lo = fbits(a, 0xb95e_8083);
    let e_lo = a.mul(e, ln2_lo);
    let r = a.fma(q, x3, e_lo);
    let nx2 = a.neg(x2);
    let half = a.fconst(0.5);
    let s = a.fma(nx2, half, xr);
    let sr = a.add(s, r);
    let ln2_hi = fbits(a, 0x3f31_8000);
    let y = a.fma(e, ln2_hi, sr);
    // Special values, in XLA's order: NaN below 0 (and for NaN), −∞ at 0, +∞ at +∞.
    // XLA's NaN is all ones.
    let positive = a.fcmp(FloatCC::Gt, t, zero);
    let nan_bits = wconst(a, 0xffff_ffff);
    let nan = a.from_bits(nan_bits);
    let y = a.select(positive, y, nan);
    let inf = a.fconst(f64::INFINITY);
    let is_inf = a.fcmp(FloatCC::Eq, t, inf);
    let y = a.select(is_inf, inf, y);
    let is_zero = a.fcmp(FloatCC::Eq, t, zero);
    let ninf = a.fconst(f64::NEG_INFINITY);
    a.select(is_zero, ninf, y)
}

/// XLA:CPU's `log1p` of `f32`: for `|x| < 0.41421357` a Padé form
/// `x + (−x²/2 + x³·P(x)/Q(x))`, else [`log_f32`]`(1 + x)`.
#[inline(always)]
pub fn log1p_f32<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let x2 = a.mul(x, x);
    // P and Q start from `x·0 + c`, which XLA leaves unfused: `c` for every finite `x`.
    let q0 = a.fconst(1.0);
    let q = horner_fma(
        a,
        q0,
        x,
        &[
            0x4171_01ad,
            0x42a6_185b,
            0x435d_c32d,
            0x439a_8ca3,
            0x4358_6d8a,
            0x4270_7982,
        ],
    );
    let p0 = a.fconst(f64::from(4.527e-5f32));
    let p = horner_fma(
        a,
        p0,
        x,
        &[
            0x3eff_40c5,
            0x40d2_84fa,
            0x41ef_4b9c,
            0x4273_cc76,
            0x4264_73ad,
            0x41a0_5101,
        ],
    );
    let r = a.div(p, q);
    let x3 = a.mul(x, x2);
    let v = a.mul(x3, r);
    let minus_half = a.fconst(-0.5);
    let v = a.fma(x2, minus_half, v);
    let near = a.add(x, v);
    let one = a.fconst(1.0);
    let t = a.add(x, one);
    let far = log_f32(a, t);
    let ax = a.abs(x);
    let cut = fbits(a, 0x3ed4_13cd);
    let is_near = a.fcmp(FloatCC::Lt, ax, cut);
    a.select(is_near, near, far)
}

/// XLA's `ErfInv32` (Giles' single-precision approximation) as XLA:CPU evaluates it: the
/// polynomial in Horner form with every step an FMA, around [`log1p_f32`].
#[inline(always)]
pub fn erf_inv_f32<A: Arith>(a: &mut A, x: A::F) -> A::F {
    // Coefficients for w < 5 and w ≥ 5, highest degree first (XLA's, digit for digit).
    const LT5: [u32; 9] = [
        0x32f1_6588,
        0x34b8_4b36,
        0xb66c_7357,
        0xb693_5ac1,
        0x3965_32db,
        0xbaa4_5408,
        0xbb88_e4ef,
        0x3e7c_8f63,
        0x3fc0_2e2f,
    ];
    const GE5: [u32; 9] = [
        0xb951_f09b,
        0x38d3_b56b,
        0x3ab0_dc72,
        0xbb70_bde7,
        0x3bbc_127b,
        0xbbf9_c5d7,
        0x3c1a_a57e,
        0x3f80_36db,
        0x4035_4f7e,
    ];
    let nx = a.neg(x);
    let y = a.mul(x, nx);
    let l = log1p_f32(a, y);
    let w = a.neg(l);
    let five = a.fconst(5.0);
    let lt = a.fcmp(FloatCC::Lt, w, five);
    let c25 = a.fconst(-2.5);
    let w_lt = a.add(w, c25);
    let sw = a.sqrt(w);
    let c3 = a.fconst(-3.0);
    let w_ge = a.add(sw, c3);
    let w = a.select(lt, w_lt, w_ge);
    let coeff = |a: &mut A, i: usize| {
        let p = fbits(a, LT5[i]);
        let q = fbits(a, GE5[i]);
        a.select(lt, p, q)
    };
    let mut p = coeff(a, 0);
    for i in 1..9 {
        let ci = coeff(a, i);
        p = a.fma(p, w, ci);
    }
    let result = a.mul(p, x);
    let ax = a.abs(x);
    let one = a.fconst(1.0);
    let edge = a.fcmp(FloatCC::Eq, ax, one);
    // XLA's `MaxValue` of a float type is +inf.
    let big = a.fconst(f64::INFINITY);
    let inf = a.mul(x, big);
    a.select(edge, inf, result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::ScalarF32;

    #[test]
    fn log_special_values() {
        let a = &mut ScalarF32;
        assert_eq!(log_f32(a, 0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(a, f32::INFINITY), f32::INFINITY);
        assert_eq!(log_f32(a, -1.0).to_bits(), u32::MAX);
        assert_eq!(log_f32(a, f32::NAN).to_bits(), u32::MAX);
        assert_eq!(log_f32(a, -0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(a, 1.0), 0.0);
    }

    #[test]
    fn log_and_log1p_are_within_2_ulp_of_the_true_values() {
        let a = &mut ScalarF32;
        let ulp_diff = |x: f32, y: f64| {
            let r = y as f32;
            (x.to_bits() as i64 - r.to_bits() as i64).abs()
        };
        let mut t = 1e-30f32;
        while t < 1e30 {
            assert!(ulp_diff(log_f32(a, t), f64::from(t).ln()) <= 2, "log {t}");
            t *= 1.37;
        }
        let mut x = -0.999f32;
        while x < 3.0 {
            let want = f64::from(x).ln_1p();
            assert!(ulp_diff(log1p_f32(a, x), want) <= 2, "log1p {x}");
            x += 0.0137;
        }
    }

    #[test]
    fn erf_inv_edges() {
        let a = &mut ScalarF32;
        assert_eq!(erf_inv_f32(a, 1.0), f32::INFINITY);
        assert_eq!(erf_inv_f32(a, -1.0), f32::NEG_INFINITY);
        assert_eq!(erf_inv_f32(a, 0.0), 0.0);
    }
}
