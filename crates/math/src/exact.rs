//! Error-free transformations and double-float ("df") arithmetic without `fma`: a value is
//! an unevaluated sum `hi + lo` with `|lo| <= ulp(hi) / 2`, giving about twice the format's
//! precision. Products use Dekker's algorithm with a Veltkamp split (Dekker 1971; Muller et
//! al., *Handbook of Floating-Point Arithmetic*, ch. 4), so they are exact on every backend,
//! FMA or not. Callers keep operands well inside the range where the split cannot overflow
//! (`|x| < 2^(emax - mantissa_bits/2 - 1)`).

use crate::arith::Arith;
use crate::bits::{c, pick};

/// `(s, e)` with `s = fl(x + y)` and `s + e = x + y` exactly (Knuth's TwoSum, any order).
#[inline(always)]
pub(crate) fn two_sum<A: Arith>(a: &mut A, x: A::F, y: A::F) -> (A::F, A::F) {
    let s = a.add(x, y);
    let bb = a.sub(s, x);
    let sb = a.sub(s, bb);
    let ex = a.sub(x, sb);
    let ey = a.sub(y, bb);
    (s, a.add(ex, ey))
}

/// TwoSum when `|x| >= |y|` (or `x == 0`): Dekker's FastTwoSum, three operations.
#[inline(always)]
pub(crate) fn fast_two_sum<A: Arith>(a: &mut A, x: A::F, y: A::F) -> (A::F, A::F) {
    let s = a.add(x, y);
    let t = a.sub(s, x);
    (s, a.sub(y, t))
}

/// Veltkamp split of `x` into two halves of at most `p/2` bits each, `hi + lo = x`.
#[inline(always)]
pub(crate) fn split<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::F) {
    let k = c(a, pick::<A, f64>(4097.0, 134_217_729.0)); // 2^ceil(p/2) + 1
    let t = a.mul(x, k);
    let d = a.sub(t, x);
    let hi = a.sub(t, d);
    (hi, a.sub(x, hi))
}

/// `(p, e)` with `p = fl(x * y)` and `p + e = x * y` exactly (Dekker's TwoProduct).
#[inline(always)]
pub(crate) fn two_prod<A: Arith>(a: &mut A, x: A::F, y: A::F) -> (A::F, A::F) {
    let p = a.mul(x, y);
    let (xh, xl) = split(a, x);
    let (yh, yl) = split(a, y);
    let hh = a.mul(xh, yh);
    let t = a.sub(hh, p);
    let hl = a.mul(xh, yl);
    let t = a.add(t, hl);
    let lh = a.mul(xl, yh);
    let t = a.add(t, lh);
    let ll = a.mul(xl, yl);
    (p, a.add(t, ll))
}

/// A double-float `hi + lo`.
pub(crate) type Df<F> = (F, F);

/// `x + y` in double-float (the "sloppy" sum: exact enough unless `x ≈ -y`).
#[inline(always)]
pub(crate) fn df_add<A: Arith>(a: &mut A, x: Df<A::F>, y: Df<A::F>) -> Df<A::F> {
    let (s, e) = two_sum(a, x.0, y.0);
    let l = a.add(x.1, y.1);
    let e = a.add(e, l);
    fast_two_sum(a, s, e)
}

/// `x + y` for a double-float `x` and a float `y`.
#[inline(always)]
pub(crate) fn df_add_f<A: Arith>(a: &mut A, x: Df<A::F>, y: A::F) -> Df<A::F> {
    let (s, e) = two_sum(a, x.0, y);
    let e = a.add(e, x.1);
    fast_two_sum(a, s, e)
}

/// `x * y` in double-float.
#[inline(always)]
pub(crate) fn df_mul<A: Arith>(a: &mut A, x: Df<A::F>, y: Df<A::F>) -> Df<A::F> {
    let (p, e) = two_prod(a, x.0, y.0);
    let t1 = a.mul(x.0, y.1);
    let t2 = a.mul(x.1, y.0);
    let t = a.add(t1, t2);
    let e = a.add(e, t);
    fast_two_sum(a, p, e)
}

/// `x * y` for a double-float `x` and a float `y`.
#[inline(always)]
pub(crate) fn df_mul_f<A: Arith>(a: &mut A, x: Df<A::F>, y: A::F) -> Df<A::F> {
    let (p, e) = two_prod(a, x.0, y);
    let t = a.mul(x.1, y);
    let e = a.add(e, t);
    fast_two_sum(a, p, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScalarF32, ScalarF64};

    #[test]
    fn two_prod_is_exact() {
        let a = &mut ScalarF32;
        for (x, y) in [
            (1.1f32, 3.3f32),
            (-7.77e10, 1.0e-7),
            (0.1, 0.1),
            (16777215.0, 3.0),
        ] {
            let (p, e) = two_prod(a, x, y);
            assert_eq!(p as f64 + e as f64, x as f64 * y as f64, "{x} {y}");
        }
        let d = &mut ScalarF64;
        let (p, e) = two_prod(d, 0.1, 0.3);
        assert_eq!(p, 0.1 * 0.3);
        assert_ne!(e, 0.0);
    }

    #[test]
    fn two_sum_is_exact() {
        let a = &mut ScalarF32;
        for (x, y) in [
            (1.0f32, 1e-9f32),
            (1e-9, 1.0),
            (3.0, -2.9999998),
            (1e30, -1e22),
        ] {
            let (s, e) = two_sum(a, x, y);
            assert_eq!(s as f64 + e as f64, x as f64 + y as f64, "{x} {y}");
        }
    }
}
