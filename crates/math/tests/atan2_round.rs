//! `atan2` against the machine's libm on random pairs (every binade of both signs for each
//! coordinate) and at C99's special cases; `round_afz` bit for bit against `f32::round` /
//! `f64::round` (an exact operation, so any correct implementation agrees).

mod common;

use common::{ulp32, ulp64};
use kiln_math::{f32s, f64s};

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A finite f32 with a random sign, a random exponent (subnormals included) and a
    /// random significand.
    fn f32(&mut self) -> f32 {
        let r = self.next();
        f32::from_bits((r as u32 & 0x807f_ffff) | ((r >> 32) as u32 % 255) << 23)
    }
    fn f64(&mut self) -> f64 {
        let r = self.next();
        let e = (self.next() % 2047) << 52;
        f64::from_bits((r & 0x800f_ffff_ffff_ffff) | e)
    }
}

#[test]
fn atan2_f32_within_2_ulp_of_libm() {
    let mut rng = Rng(11);
    let mut worst = (0u64, 0.0f32, 0.0f32);
    for i in 0..2_000_000u32 {
        let (y, x) = match i % 4 {
            // Mostly nearby magnitudes, where the quotient is neither tiny nor huge.
            0 | 1 => {
                let x = rng.f32();
                let k = (rng.next() % 64) as i32 - 32;
                let y = x * 2f32.powi(k) * (rng.next() % 1000) as f32 / 997.0;
                (if rng.next() & 1 == 1 { -y } else { y }, x)
            }
            _ => (rng.f32(), rng.f32()),
        };
        let want = (y as f64).atan2(x as f64) as f32;
        let d = ulp32(f32s::atan2(y, x), want);
        if d > worst.0 {
            worst = (d, y, x);
        }
    }
    println!(
        "f32 atan2: max {} ulp (worst y = {:e}, x = {:e})",
        worst.0, worst.1, worst.2
    );
    assert!(worst.0 <= 2, "{worst:?}");
}

#[test]
fn atan2_f64_within_2_ulp_of_libm() {
    let mut rng = Rng(12);
    let mut worst = (0u64, 0.0f64, 0.0f64);
    for i in 0..1_000_000u32 {
        let (y, x) = if i % 2 == 0 {
            let x = rng.f64();
            let y = x * (rng.next() % 100_000) as f64 / 99_991.0;
            (y, x)
        } else {
            (rng.f64(), rng.f64())
        };
        let d = ulp64(f64s::atan2(y, x), y.atan2(x));
        if d > worst.0 {
            worst = (d, y, x);
        }
    }
    println!(
        "f64 atan2: max {} ulp vs libm (worst y = {:e}, x = {:e})",
        worst.0, worst.1, worst.2
    );
    assert!(worst.0 <= 2, "{worst:?}");
}

#[test]
fn atan2_special_cases_are_c99s_bit_for_bit() {
    let inf = f64::INFINITY;
    let cases = [
        (0.0, 0.0),
        (-0.0, 0.0),
        (0.0, -0.0),
        (-0.0, -0.0),
        (0.0, -3.0),
        (-0.0, -3.0),
        (0.0, 3.0),
        (2.0, 0.0),
        (-2.0, -0.0),
        (inf, inf),
        (-inf, inf),
        (inf, -inf),
        (-inf, -inf),
        (5.0, inf),
        (-5.0, -inf),
        (inf, 5.0),
        (-inf, -5.0),
        (1.0, 1.0),
        (-1.0, -1.0),
        (1e300, 1e-300),
        (1e-300, -1e300),
    ];
    for (y, x) in cases {
        let want = f64::atan2(y, x);
        let got = f64s::atan2(y, x);
        assert_eq!(got.to_bits(), want.to_bits(), "atan2({y:e}, {x:e})");
        let want = (y as f32).atan2(x as f32);
        let got = f32s::atan2(y as f32, x as f32);
        assert!(ulp32(got, want) <= 1 && got.is_sign_negative() == want.is_sign_negative());
    }
    assert!(f32s::atan2(f32::NAN, 1.0).is_nan());
    assert!(f64s::atan2(1.0, f64::NAN).is_nan());
}

#[test]
fn round_afz_is_c_round_bit_for_bit() {
    let mut rng = Rng(13);
    let mut values: Vec<f32> = vec![0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.3, 8388607.5];
    values.extend((0..1_000_000).map(|_| rng.f32()));
    values.extend((0..200_000).map(|i| (i as f32 - 100_000.0) / 64.0));
    for x in values {
        assert_eq!(f32s::round_afz(x).to_bits(), x.round().to_bits(), "{x:e}");
        let y = x as f64 * 1.000_000_1;
        assert_eq!(f64s::round_afz(y).to_bits(), y.round().to_bits(), "{y:e}");
    }
    for x in [f64::INFINITY, f64::NEG_INFINITY, 4503599627370495.5] {
        assert_eq!(f64s::round_afz(x).to_bits(), x.round().to_bits());
    }
    assert!(f32s::round_afz(f32::NAN).is_nan());
}
