//! The block functions compiled kernels call (`math_*`, `math_shifted_*`, `scalar_*`,
//! `extremum_*`) give the same bits 512 bits wide (`with_512_bit_vectors`, on a CPU with
//! AVX-512) as 256 bits wide, for every op, at every length around the vector widths, on
//! special values and on random bit patterns of every exponent.

use kiln_interp::{
    extremum_f32, extremum_f64, math_f32, math_f64, math_shifted_f32, math_shifted_f64, scalar_f32,
    scalar_f64, scalar_shifted_f32, scalar_shifted_f64, with_512_bit_vectors, MATH_OPS, SCALAR_OPS,
    SHIFTED_SCALAR_OPS,
};
use kiln_ir::ReduceKind;

/// Lengths on both sides of the 8-, 16- and 32-lane boundaries, and a long block.
const LENGTHS: [usize; 12] = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 67, 1029];

/// A deterministic 64-bit generator (SplitMix64).
struct Bits(u64);

impl Bits {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` inputs: specials first, then values of every magnitude (random bit patterns with
/// the exponent field narrowed to a third of the range so math ops see ordinary
/// arguments too).
fn inputs_f32(n: usize, seed: u64) -> Vec<f32> {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        1e-45,
        88.72,
        -103.9,
        1e30,
    ];
    let mut g = Bits(seed);
    (0..n)
        .map(|i| match specials.get(i) {
            Some(&s) => s,
            None if i % 2 == 0 => f32::from_bits(g.next() as u32),
            None => (g.next() >> 11) as f32 / (1u64 << 53) as f32 * 40.0 - 20.0,
        })
        .collect()
}

fn inputs_f64(n: usize, seed: u64) -> Vec<f64> {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        5e-324,
        709.7,
        -745.1,
        1e300,
    ];
    let mut g = Bits(seed);
    (0..n)
        .map(|i| match specials.get(i) {
            Some(&s) => s,
            None if i % 2 == 0 => f64::from_bits(g.next()),
            None => (g.next() >> 11) as f64 / (1u64 << 53) as f64 * 40.0 - 20.0,
        })
        .collect()
}

/// Equal bits, or both NaN (payloads are not part of the contract).
fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Runs `f` at 256 bits and at 512 and asserts the outputs agree element by element.
fn check<T: Copy + Default + std::fmt::Debug>(
    what: &str,
    src: &[T],
    same: fn(T, T) -> bool,
    f: impl Fn(&mut [T]),
) {
    let mut narrow = vec![T::default(); src.len()];
    let mut wide = vec![T::default(); src.len()];
    f(&mut narrow);
    with_512_bit_vectors(|| f(&mut wide));
    for (i, (&a, &b)) in narrow.iter().zip(&wide).enumerate() {
        assert!(
            same(a, b),
            "{what}, length {}: element {i} ({:?}) is {a:?} at 256 bits, {b:?} at 512",
            src.len(),
            src[i]
        );
    }
}

/// Whether the 512-bit build runs here; says why not when it does not.
fn has_avx512() -> bool {
    let yes = kiln_interp::widest_simd();
    if !yes {
        println!(
            "skipped: this CPU lacks AVX-512 (F, VL, DQ, BW); both widths run the 256-bit build"
        );
    }
    yes
}

#[test]
fn math_and_shifted_math_agree_at_both_widths() {
    if !has_avx512() {
        return;
    }
    for (k, &op) in MATH_OPS.iter().enumerate() {
        for n in LENGTHS {
            let seed = (k * 1000 + n) as u64;
            let x = inputs_f32(n, seed);
            check(&format!("{op:?} f32"), &x, same32, |o| {
                assert!(math_f32(op, Some(&x), o));
            });
            check(&format!("{op:?} f32 shifted"), &x, same32, |o| {
                assert!(math_shifted_f32(op, Some(&x), 0.75, o));
            });
            let x = inputs_f64(n, seed);
            check(&format!("{op:?} f64"), &x, same64, |o| {
                assert!(math_f64(op, Some(&x), o));
            });
            check(&format!("{op:?} f64 shifted"), &x, same64, |o| {
                assert!(math_shifted_f64(op, Some(&x), -1.5, o));
            });
        }
    }
}

#[test]
fn in_place_math_agrees_at_both_widths() {
    if !has_avx512() {
        return;
    }
    for &op in &MATH_OPS {
        let x = inputs_f32(1029, 7);
        check(&format!("{op:?} f32 in place"), &x, same32, |o| {
            o.copy_from_slice(&x);
            assert!(math_f32(op, None, o));
        });
    }
}

#[test]
fn division_by_one_value_agrees_at_both_widths() {
    if !has_avx512() {
        return;
    }
    for &op in &SCALAR_OPS {
        for n in LENGTHS {
            for c in [3.0, -0.0, 1e-40, f64::INFINITY] {
                let x = inputs_f32(n, n as u64);
                check(&format!("{op:?} f32 by {c}"), &x, same32, |o| {
                    assert!(scalar_f32(op, Some(&x), c as f32, o));
                });
                let x = inputs_f64(n, n as u64 + 1);
                check(&format!("{op:?} f64 by {c}"), &x, same64, |o| {
                    assert!(scalar_f64(op, Some(&x), c, o));
                });
            }
        }
    }
}

#[test]
fn shifted_products_and_quotients_agree_at_both_widths() {
    if !has_avx512() {
        return;
    }
    for &op in &SHIFTED_SCALAR_OPS {
        for n in LENGTHS {
            for (c, d) in [
                (0.5, 3.0),
                (-0.0, 1e-40),
                (f64::INFINITY, -2.0),
                (1e-40, 0.0),
            ] {
                let x = inputs_f32(n, n as u64);
                check(&format!("{op:?} f32 of x - {c} by {d}"), &x, same32, |o| {
                    assert!(scalar_shifted_f32(op, Some(&x), c as f32, d as f32, o));
                });
                let x = inputs_f64(n, n as u64 + 1);
                check(&format!("{op:?} f64 of x - {c} by {d}"), &x, same64, |o| {
                    assert!(scalar_shifted_f64(op, Some(&x), c, d, o));
                });
            }
        }
    }
}

#[test]
fn extrema_agree_at_both_widths() {
    if !has_avx512() {
        return;
    }
    for kind in [ReduceKind::Max, ReduceKind::Min] {
        for n in LENGTHS {
            // Finite values (the quick path), then with the specials (the exact fold).
            for skip in [12, 0] {
                let x = &inputs_f32(n + skip, n as u64)[skip.min(n + skip)..];
                let narrow = extremum_f32(kind, x).expect("a float extremum");
                let wide = with_512_bit_vectors(|| extremum_f32(kind, x)).expect("extremum");
                assert!(
                    same32(narrow, wide),
                    "{kind:?} f32 of {n}: {narrow} vs {wide}"
                );
                let x = &inputs_f64(n + skip, n as u64)[skip.min(n + skip)..];
                let narrow = extremum_f64(kind, x).expect("a float extremum");
                let wide = with_512_bit_vectors(|| extremum_f64(kind, x)).expect("extremum");
                assert!(
                    same64(narrow, wide),
                    "{kind:?} f64 of {n}: {narrow} vs {wide}"
                );
            }
        }
    }
}

#[test]
fn the_width_is_restored_after_the_closure_and_after_a_panic() {
    // Nothing observable but speed depends on the setting, so this checks the guard:
    // a panic inside must not leave later calls on this thread 512 bits wide (which would
    // be harmless for the bits but would silently ignore the flag).
    let r = std::panic::catch_unwind(|| with_512_bit_vectors(|| panic!("inside")));
    assert!(r.is_err());
    assert!(!kiln_interp::prefers_512_bit_vectors());
    with_512_bit_vectors(|| {
        assert!(kiln_interp::prefers_512_bit_vectors());
        with_512_bit_vectors(|| assert!(kiln_interp::prefers_512_bit_vectors()));
        assert!(kiln_interp::prefers_512_bit_vectors());
    });
    assert!(!kiln_interp::prefers_512_bit_vectors());
}
