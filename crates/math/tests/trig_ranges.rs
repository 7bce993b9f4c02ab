//! `sin_medium` / `cos_medium`: the bits of `sin` / `cos` for every f32 argument below
//! `TRIG_MEDIUM_F32` in magnitude (what lets a block loop skip the Payne–Hanek reduction
//! after checking its arguments), and `sin` itself for f64.

use kiln_math::{f32s, f64s, TRIG_MEDIUM_F32, TRIG_MEDIUM_F64};

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Every `stride`-th f32 bit pattern below the limit, both signs, and the edges: the
/// limit's predecessor, the reduction thresholds (3/4, 1/2) and multiples of π/2.
fn admitted(stride: u32) -> Vec<f32> {
    let top = TRIG_MEDIUM_F32.to_bits();
    let mut xs: Vec<f32> = (0..top)
        .step_by(stride as usize)
        .map(f32::from_bits)
        .collect();
    xs.extend([
        f32::from_bits(top - 1),
        0.75,
        f32::from_bits(0.75f32.to_bits() - 1),
        0.5,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::NAN,
    ]);
    for k in [1.0f32, 2.0, 3.0, 1e3, 1e5, 6e5] {
        let m = k * std::f32::consts::FRAC_PI_2;
        xs.extend([
            m,
            f32::from_bits(m.to_bits() + 1),
            f32::from_bits(m.to_bits() - 1),
        ]);
    }
    let neg: Vec<f32> = xs.iter().map(|x| -x).collect();
    xs.extend(neg);
    xs
}

#[test]
fn f32_medium_versions_have_the_full_functions_bits() {
    let xs = admitted(1009);
    assert!(xs.len() > 2_000_000);
    for &x in &xs {
        assert!(
            same32(f32s::sin_medium(x), f32s::sin(x)),
            "sin({x:e}): {:e} vs {:e}",
            f32s::sin_medium(x),
            f32s::sin(x)
        );
        assert!(
            same32(f32s::cos_medium(x), f32s::cos(x)),
            "cos({x:e}): {:e} vs {:e}",
            f32s::cos_medium(x),
            f32s::cos(x)
        );
    }
}

#[test]
fn f32_medium_reduction_stays_accurate_up_to_the_limit() {
    // Against f64's sin and cos (themselves within 1 ulp in f64): within 1 ulp of f32, also
    // at the largest admitted arguments, where the Cody–Waite reduction's `k` is largest.
    let top = TRIG_MEDIUM_F32.to_bits();
    let ulps = |got: f32, want: f64| {
        let want = want as f32;
        (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs()
    };
    for b in (top - 200_000..top).chain(top..top + 1000) {
        let x = f32::from_bits(b);
        let (s, c) = (f64::from(x).sin(), f64::from(x).cos());
        assert!(
            ulps(f32s::sin(x), s) <= 1,
            "sin({x:e}) = {:e}",
            f32s::sin(x)
        );
        assert!(
            ulps(f32s::cos(x), c) <= 1,
            "cos({x:e}) = {:e}",
            f32s::cos(x)
        );
    }
}

/// f64 arguments: a log-uniform sweep of magnitudes below the limit, both signs, and the
/// neighbours of multiples of π/2 and of the limit.
fn admitted64() -> Vec<f64> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut xs: Vec<f64> = (0..400_000)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let m = 1.0 + (s >> 12) as f64 / (1u64 << 52) as f64;
            let x = m * 2f64.powi((s % 22) as i32 - 2);
            if s & (1 << 40) != 0 {
                -x
            } else {
                x
            }
        })
        .filter(|x| x.abs() < TRIG_MEDIUM_F64)
        .collect();
    for k in [1.0f64, 2.0, 3.0, 355.0, 1e3, 1e5, 6e5] {
        let m = k * std::f64::consts::FRAC_PI_2;
        xs.extend([m, m.next_up(), m.next_down(), -m]);
    }
    xs.extend([
        TRIG_MEDIUM_F64.next_down(),
        0.75,
        0.75f64.next_down(),
        f64::NAN,
    ]);
    xs
}

#[test]
fn f64_medium_versions_have_the_full_functions_bits() {
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    for x in admitted64() {
        assert!(same(f64s::sin_medium(x), f64s::sin(x)), "sin({x:e})");
        assert!(same(f64s::cos_medium(x), f64s::cos(x)), "cos({x:e})");
    }
}

#[test]
fn f64_medium_reduction_stays_accurate_up_to_the_limit() {
    // Against std (within 1 ulp): within 2 ulp, i.e. within about 1 ulp of the exact value,
    // over the last 2^20 doubles below the limit and the first above it.
    let ulps = |a: f64, b: f64| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
    let top = TRIG_MEDIUM_F64.to_bits();
    for b in (top - (1 << 20)..top).step_by(7).chain(top..top + 1000) {
        let x = f64::from_bits(b);
        assert!(
            ulps(f64s::sin(x), x.sin()) <= 2,
            "sin({x:e}) = {:e}",
            f64s::sin(x)
        );
        assert!(
            ulps(f64s::cos(x), x.cos()) <= 2,
            "cos({x:e}) = {:e}",
            f64s::cos(x)
        );
    }
}
