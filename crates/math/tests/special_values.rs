//! Exact special values (C99 Annex F): infinities, NaN, signed zeros, thresholds; for both
//! formats, plus the C99 table of `pow` special cases.

/// `a` and `b` are the same value: bitwise for numbers (so the sign of zero counts), any NaN
/// for NaN.
fn same<T: Into<f64> + Copy>(a: T, b: T) -> bool {
    let (a, b) = (a.into(), b.into());
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

macro_rules! check {
    ($f:expr, $x:expr, $want:expr) => {{
        let got = $f($x);
        assert!(
            same(got, $want),
            "{}({:?}) = {:?}, want {:?}",
            stringify!($f),
            $x,
            got,
            $want
        );
    }};
}

macro_rules! special_values {
    ($test:ident, $m:ident, $t:ty) => {
        #[test]
        fn $test() {
            use kiln_math::$m::*;
            const INF: $t = <$t>::INFINITY;
            const NAN: $t = <$t>::NAN;
            const MIN_SUB: $t = <$t>::from_bits(1);

            check!(exp, -INF, 0.0);
            check!(exp, INF, INF);
            check!(exp, NAN, NAN);
            check!(exp, 0.0, 1.0);
            check!(exp, -0.0, 1.0);
            check!(exp, 1000.0, INF);
            check!(exp, -1000.0, 0.0);
            check!(exp, <$t>::MAX.ln(), <$t>::MAX.ln().exp());
            // Gradual underflow: the smallest results are subnormal, not flushed.
            let x = (MIN_SUB as f64).ln() as $t;
            assert!(
                exp(x) > 0.0 && exp(x) < <$t>::MIN_POSITIVE,
                "exp({x:?}) = {:?}",
                exp(x)
            );

            check!(expm1, -INF, -1.0);
            check!(expm1, INF, INF);
            check!(expm1, NAN, NAN);
            check!(expm1, 0.0, 0.0);
            check!(expm1, -0.0, -0.0);
            check!(expm1, MIN_SUB, MIN_SUB);
            check!(expm1, -MIN_SUB, -MIN_SUB);
            check!(expm1, -1000.0, -1.0);
            check!(expm1, 1000.0, INF);

            check!(log, 0.0, -INF);
            check!(log, -0.0, -INF);
            check!(log, -1.0, NAN);
            check!(log, -INF, NAN);
            check!(log, -MIN_SUB, NAN);
            check!(log, INF, INF);
            check!(log, NAN, NAN);
            check!(log, 1.0, 0.0);
            check!(log, MIN_SUB, (MIN_SUB as f64).ln() as $t);

            check!(log1p, -1.0, -INF);
            check!(log1p, -2.0, NAN);
            check!(log1p, -INF, NAN);
            check!(log1p, INF, INF);
            check!(log1p, NAN, NAN);
            check!(log1p, 0.0, 0.0);
            check!(log1p, -0.0, -0.0);
            check!(log1p, MIN_SUB, MIN_SUB);
            check!(log1p, -MIN_SUB, -MIN_SUB);
            check!(log1p, <$t>::MAX, (<$t>::MAX as f64).ln_1p() as $t);

            check!(tanh, INF, 1.0);
            check!(tanh, -INF, -1.0);
            check!(tanh, NAN, NAN);
            check!(tanh, 0.0, 0.0);
            check!(tanh, -0.0, -0.0);
            check!(tanh, MIN_SUB, MIN_SUB);
            check!(tanh, -MIN_SUB, -MIN_SUB);
            check!(tanh, 30.0, 1.0);
            check!(tanh, -30.0, -1.0);

            check!(logistic, -INF, 0.0);
            check!(logistic, INF, 1.0);
            check!(logistic, NAN, NAN);
            check!(logistic, 0.0, 0.5);
            check!(logistic, -0.0, 0.5);
            // Large negative x: e^x, accurate relative to the result, into the subnormals.
            let x: $t = -80.0;
            assert_eq!(logistic(x), exp(x));
            let x = (MIN_SUB as f64).ln() as $t + 1.0;
            assert!(logistic(x) > 0.0, "logistic({x:?}) = 0");

            check!(erf, INF, 1.0);
            check!(erf, -INF, -1.0);
            check!(erf, NAN, NAN);
            check!(erf, 0.0, 0.0);
            check!(erf, -0.0, -0.0);
            check!(erf, 10.0, 1.0);
            check!(erf, -10.0, -1.0);

            check!(sin, INF, NAN);
            check!(sin, -INF, NAN);
            check!(sin, NAN, NAN);
            check!(sin, 0.0, 0.0);
            check!(sin, -0.0, -0.0);
            check!(sin, MIN_SUB, MIN_SUB);
            check!(sin, -MIN_SUB, -MIN_SUB);
            check!(cos, INF, NAN);
            check!(cos, -INF, NAN);
            check!(cos, NAN, NAN);
            check!(cos, 0.0, 1.0);
            check!(cos, -0.0, 1.0);
            for x in [<$t>::MAX, -<$t>::MAX, 1e30, 1e22, 1e10, 12345.678] {
                let (s, c) = ((x as f64).sin() as $t, (x as f64).cos() as $t);
                assert!(
                    (sin(x) - s).abs() <= s.abs() * 4.0 * <$t>::EPSILON,
                    "sin({x:?})"
                );
                assert!(
                    (cos(x) - c).abs() <= c.abs() * 4.0 * <$t>::EPSILON,
                    "cos({x:?})"
                );
            }

            check!(rsqrt, 0.0, INF);
            check!(rsqrt, -0.0, -INF);
            check!(rsqrt, -1.0, NAN);
            check!(rsqrt, -INF, NAN);
            check!(rsqrt, INF, 0.0);
            check!(rsqrt, NAN, NAN);
            check!(rsqrt, 4.0, 0.5);
        }
    };
}

special_values!(special_values_f32, f32s, f32);
special_values!(special_values_f64, f64s, f64);

macro_rules! pow_table {
    ($test:ident, $m:ident, $t:ty) => {
        /// C99 F.9.4.4, case by case, plus ordinary signed results.
        #[test]
        fn $test() {
            use kiln_math::$m::pow;
            const INF: $t = <$t>::INFINITY;
            const NAN: $t = <$t>::NAN;
            let cases: &[($t, $t, $t)] = &[
                // pow(x, ±0) = 1 for any x, even NaN.
                (NAN, 0.0, 1.0),
                (NAN, -0.0, 1.0),
                (-INF, 0.0, 1.0),
                (0.0, 0.0, 1.0),
                (-3.0, -0.0, 1.0),
                // pow(+1, y) = 1 for any y, even NaN.
                (1.0, NAN, 1.0),
                (1.0, INF, 1.0),
                (1.0, -INF, 1.0),
                (1.0, 12345.5, 1.0),
                // NaN otherwise propagates.
                (NAN, 1.0, NAN),
                (2.0, NAN, NAN),
                (-1.0, NAN, NAN),
                // pow(±0, y): odd negative y -> ±inf, other negative y -> +inf,
                // odd positive y -> ±0, other positive y -> +0.
                (0.0, -3.0, INF),
                (-0.0, -3.0, -INF),
                (-0.0, -2.0, INF),
                (-0.0, -0.5, INF),
                (-0.0, -INF, INF),
                (0.0, 3.0, 0.0),
                (-0.0, 3.0, -0.0),
                (-0.0, 2.0, 0.0),
                (-0.0, 0.5, 0.0),
                (-0.0, INF, 0.0),
                // pow(-1, ±inf) = 1.
                (-1.0, INF, 1.0),
                (-1.0, -INF, 1.0),
                // pow(x, -inf): +inf for |x| < 1, +0 for |x| > 1; pow(x, +inf) the reverse.
                (0.5, -INF, INF),
                (-0.5, -INF, INF),
                (2.0, -INF, 0.0),
                (-2.0, -INF, 0.0),
                (0.5, INF, 0.0),
                (-0.5, INF, 0.0),
                (2.0, INF, INF),
                (-2.0, INF, INF),
                // pow(-inf, y): negative odd -> -0, negative other -> +0, positive odd ->
                // -inf, positive other -> +inf.
                (-INF, -3.0, -0.0),
                (-INF, -2.0, 0.0),
                (-INF, -0.5, 0.0),
                (-INF, 3.0, -INF),
                (-INF, 2.0, INF),
                (-INF, 0.5, INF),
                // pow(+inf, y): +0 for y < 0, +inf for y > 0.
                (INF, -1.0, 0.0),
                (INF, 0.5, INF),
                // Finite negative x: integer y gives a signed result, otherwise NaN.
                (-2.0, 3.0, -8.0),
                (-2.0, 2.0, 4.0),
                (-2.0, -1.0, -0.5),
                (-2.0, 0.5, NAN),
                (-8.0, 1.0 / 3.0, NAN),
                (-1.0, 1e30, 1.0),
                (-3.0, 1e30, INF),
                // Overflow and underflow keep the sign for odd y.
                (-10.0, 1001.0, -INF),
                (-10.0, -1001.0, -0.0),
                (10.0, -1000.0, 0.0),
                // Exact cases.
                (2.0, 10.0, 1024.0),
                (4.0, 0.5, 2.0),
                (10.0, 2.0, 100.0),
            ];
            for &(x, y, want) in cases {
                let got = pow(x, y);
                assert!(
                    same(got, want),
                    "pow({x:?}, {y:?}) = {got:?}, want {want:?}"
                );
            }
        }
    };
}

pow_table!(pow_special_cases_f32, f32s, f32);
pow_table!(pow_special_cases_f64, f64s, f64);

/// `sincos` shares `sin`'s and `cos`'s reduction and returns their exact bits: on special
/// values, across the quadrants and on huge arguments (Payne–Hanek), in both formats.
macro_rules! sincos_is_sin_and_cos {
    ($test:ident, $m:ident, $t:ty) => {
        #[test]
        fn $test() {
            use kiln_math::$m::{cos, sin, sincos};
            let specials: [$t; 8] = [
                0.0,
                -0.0,
                <$t>::INFINITY,
                -<$t>::INFINITY,
                <$t>::NAN,
                <$t>::MIN_POSITIVE,
                <$t>::MAX,
                -<$t>::MAX,
            ];
            let sweep = (0..20_000).map(|i| (i as $t - 10_000.0) * 0.0137);
            let huge = (0..2_000).map(|i| (1.0 + i as $t * 1e-3) * (10.0 as $t).powi(i % 38));
            for x in specials.into_iter().chain(sweep).chain(huge) {
                let (s, c) = sincos(x);
                assert!(
                    same(s, sin(x)),
                    "sincos({x:?}).0 = {s:?}, sin = {:?}",
                    sin(x)
                );
                assert!(
                    same(c, cos(x)),
                    "sincos({x:?}).1 = {c:?}, cos = {:?}",
                    cos(x)
                );
            }
        }
    };
}

sincos_is_sin_and_cos!(sincos_is_sin_and_cos_f32, f32s, f32);
sincos_is_sin_and_cos!(sincos_is_sin_and_cos_f64, f64s, f64);
