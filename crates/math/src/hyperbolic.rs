//! `tanh` and `logistic`, both on top of [`exp`].
//!
//! Both work on `|x|` and put the sign back at the end, so odd symmetry and signed zeros come
//! out exactly.

use crate::arith::{Arith, FloatCC};
use crate::bits::scale_pow2;
use crate::bits::{abs_and_sign, c, cmp_c, flip_sign, pick, poly};
use crate::exact::fast_two_sum;
use crate::exp::{exp, exp_reduced};

/// Below this `|x|` (= log(3)/2), `tanh` uses the odd polynomial; above it
/// `1 - 2/(e^2|x| + 1)` is at least 1/2, so its subtraction cannot cancel.
const TANH_SPLIT: f64 = 0.549_306_144_334_054_9;

/// `P` in `tanh(x) = x + x^3 P(x^2)` on `|x| <= log(3)/2`: weighted least-squares fits with
/// Lawson iterations (near-minimax in relative error), computed with mpmath. Relative error
/// with the coefficients as rounded: 4.7e-9 (f32), 8.9e-18 (f64).
const TANH_F32: &[f64] = &[
    -0.333_333_182_216_03,
    0.133_326_083_497_383_17,
    -0.053_854_624_460_271_17,
    0.021_081_172_929_016_213,
    -0.006_287_646_254_305_787,
];

const TANH_F64: &[f64] = &[
    -0.333_333_333_333_333,
    0.133_333_333_333_269_85,
    -0.053_968_253_963_969_8,
    0.021_869_488_391_811_267,
    -0.008_863_232_698_739_095,
    0.003_592_093_012_490_077_7,
    -0.001_455_549_175_236_072,
    0.000_588_470_589_395_412_7,
    -0.000_233_448_217_765_170_6,
    8.341_241_121_919_484e-5,
    -1.955_424_428_373_925_3e-5,
];

/// Hyperbolic tangent: `x + x^3 P(x^2)` for `|x| < log(3)/2`, else `1 - 2 / (e^2|x| + 1)`;
/// both computed, one selected. `tanh(±inf) = ±1`, `tanh(±0) = ±0`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 1.25
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn tanh<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let (ax, sign) = abs_and_sign(a, x);
    let z = a.mul(ax, ax);
    let p = poly(a, z, pick::<A, _>(TANH_F32, TANH_F64));
    let t = a.mul(z, p);
    let t = a.mul(ax, t);
    let y_small = a.add(ax, t);
    let two_ax = a.add(ax, ax);
    let e = exp(a, two_ax);
    let one = c(a, 1.0);
    let d = a.add(e, one);
    let two = c(a, 2.0);
    let q = a.div(two, d);
    let y_big = a.sub(one, q);
    let small = cmp_c(a, FloatCC::Lt, ax, TANH_SPLIT);
    let y = a.select(small, y_small, y_big);
    flip_sign(a, y, sign)
}

/// The logistic sigmoid `1 / (1 + e^-x)`. With `e^-|x| = 2^k (1 + t)` kept unevaluated,
/// `x < 0` gives `2^k (1 + t) / (1 + e^-|x|)`: accurate relative to the result down into
/// the subnormal range, instead of rounding to 0 once `e^-x` overflows. Numerator and
/// denominator are exact double-float sums, so only the quotient's rounding and the error of
/// `t` remain. `logistic(-inf) = 0`, `logistic(+inf) = 1`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 1.12
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn logistic<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let ax = a.abs(x);
    let nax = a.neg(ax);
    let (t, k) = exp_reduced(a, nax);
    let one = c(a, 1.0);
    let (nh, nl) = fast_two_sum(a, one, t); // 1 + t exactly
                                            // e = e^-|x| <= 1 and d + dl = 1 + e (the parts of e below d's precision go to dl).
    let eh = scale_pow2(a, nh, k);
    let el = scale_pow2(a, nl, k);
    let (d, dl) = fast_two_sum(a, one, eh);
    let dl = a.add(dl, el);
    // x < 0: (nh + nl) / (d + dl), scaled by 2^k at the end (one rounding into subnormals);
    // x >= 0: 1 / (d + dl).
    let negative = cmp_c(a, FloatCC::Lt, x, 0.0);
    let num_h = a.select(negative, nh, one);
    let zero = c(a, 0.0);
    let num_l = a.select(negative, nl, zero);
    let q = a.div(num_h, d);
    let qdl = a.mul(q, dl);
    let r = a.sub(num_l, qdl);
    let r = a.div(r, d);
    let y = a.add(q, r);
    let zero_i = a.uconst(0);
    let k = a.select_u(negative, k, zero_i);
    scale_pow2(a, y, k)
}
