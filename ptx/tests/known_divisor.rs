//! The arithmetic behind the emitter's division by a pinned divisor (`known_div`), on plain
//! `f32`: with `y = RN(1/b)`, `q = RN(a y)`, `r = fma(-b, q, a)`, `RN(q + r y)` is `a / b`
//! correctly rounded whenever `a`'s exponent field lies in the range the emitter derives
//! from `b` (Markstein's theorem). Checked here over every 257th `f32` dividend for divisors
//! that stress it (all-ones significands, the ends of the accepted range, random ones).
//! The emitted PTX itself is checked against `div.rn` in `emitter.rs`
//! (`division_by_a_row_invariant_divisor_matches_div_rn_everywhere`).

/// `(1/b, lowest accepted exponent field, how many)`, as `Emitter::known_divisor` computes.
fn bounds(b: f32) -> (f32, u32, u32) {
    let eb = (b.to_bits() >> 23) & 0xff;
    let lo = (eb as i32 - 124).max(27) as u32;
    let hi = (eb + 126).min(254);
    let width = if (2..=252).contains(&eb) {
        hi - lo + 1
    } else {
        0
    };
    (1.0 / b, lo, width)
}

#[test]
fn the_short_division_is_correctly_rounded_wherever_it_is_taken() {
    let mut divisors = vec![
        1.0f32,
        1.5,
        3.0,
        -3.0,
        0.1,
        f32::from_bits(0x3fff_ffff),
        f32::from_bits(0x3f80_0001),
        f32::from_bits(0x0100_0000),
        f32::from_bits(0x7e7f_ffff),
        f32::from_bits(0x0133_3333),
    ];
    let mut s = 0x243f_6a88_85a3_08d3u64;
    for _ in 0..6 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        divisors.push(f32::from_bits((s >> 32) as u32));
    }
    let (mut taken, mut wrong) = (0u64, Vec::new());
    for &b in &divisors {
        let (y, lo, width) = bounds(b);
        for a_bits in (0..=u32::MAX).step_by(257) {
            if ((a_bits >> 23) & 0xff).wrapping_sub(lo) >= width {
                continue;
            }
            let a = f32::from_bits(a_bits);
            let q = a * y;
            let r = (-b).mul_add(q, a);
            let got = r.mul_add(y, q);
            taken += 1;
            if got.to_bits() != (a / b).to_bits() && wrong.len() < 5 {
                wrong.push(format!("{a:e} / {b:e}: {got:e}, want {:e}", a / b));
            }
        }
    }
    println!("{taken} divisions on the short path");
    assert!(taken > 100_000_000, "too few cases: {taken}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
