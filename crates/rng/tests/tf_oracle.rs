//! Every TensorFlow value in `shared/oracles/tf_rng_examples.md` (and the RNG guide's
//! `split` example), reproduced.
//!
//! Integers are compared exactly. Normals are compared as `f32` bit patterns against the
//! printed values (shortest round-trip decimal of the `f32`), exactly: TF's Box–Muller calls
//! glibc's `logf` and `sincosf`, and Kiln's are the same functions
//! (`kiln_math::{logf_glibc, sincosf_glibc}`). The one exception is the RNG guide's value,
//! printed by an older TF build (glibc before 2.28 had other `logf`/`sincosf`): within 1 ulp.
//! More TF values: `tests/tf_generated.rs`.

use kiln_rng::{stateless_normal, stateless_split, Generator, SeedDtype};

/// Distance in ulps between two finite `f32` of the same sign.
fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

/// Asserts every value bit-exact; returns how many were.
fn check(what: &str, got: &[f32], want: &[f32]) -> usize {
    check_within(what, got, want, 0)
}

/// Asserts every value within `tol` ulp; returns how many were bit-exact.
fn check_within(what: &str, got: &[f32], want: &[f32], tol: u32) -> usize {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut exact = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(ulps(g, w) <= tol, "{what}[{i}]: got {g:e}, want {w:e}");
        exact += usize::from(g.to_bits() == w.to_bits());
    }
    println!("{what}: {exact}/{} bit-exact", got.len());
    exact
}

#[test]
fn generator_from_seed_1_normal_2x3_and_state() {
    let mut g = Generator::from_seed(1);
    let v = g.normal(&[2, 3]).unwrap();
    let want = [
        0.43842274,
        -0.53439844,
        -0.07710262,
        1.5658046,
        -0.1012345,
        -0.2744976,
    ];
    check("from_seed(1).normal([2,3])", &v, &want);
    assert_eq!(g.state(), [1537, 0, 0]);
}

#[test]
fn generator_two_scalar_normals_and_reset() {
    let mut g = Generator::from_seed(1);
    let a = g.normal(&[]).unwrap();
    let b = g.normal(&[]).unwrap();
    check("two normal([])", &[a[0], b[0]], &[0.43842274, 1.6272374]);
    assert_eq!(g.state(), [513, 0, 0]);
    g.reset_from_seed(1);
    assert_eq!(g.normal(&[]).unwrap(), a);
}

#[test]
fn generator_from_seed_1234() {
    let mut g = Generator::from_seed(1234);
    assert_eq!(g.state(), [1234, 0, 0]);
    let v = g.normal(&[2, 3]).unwrap();
    let want = [
        0.9356609,
        1.0854305,
        -0.93788373,
        -0.5061547,
        1.3169702,
        0.7137579,
    ];
    check("from_seed(1234).normal([2,3])", &v, &want);
    assert_eq!(g.state(), [2770, 0, 0]);
}

#[test]
fn stateless_normal_seed_1_2() {
    let v = stateless_normal(&[2, 3], [1, 2]).unwrap();
    let want = [
        0.5441101, 0.20738031, 0.07356432, 0.04643455, -1.3015898, -0.9538565,
    ];
    check("stateless_normal([2,3], [1,2])", &v, &want);
}

#[test]
fn stateless_split_is_bit_exact() {
    let seeds = stateless_split([1, 2], 3, SeedDtype::I32).unwrap();
    assert_eq!(
        seeds,
        [
            [1105988140, 1738052849],
            [-335576002, 370444179],
            [10670227, -246211131]
        ]
    );
    let v = stateless_normal(&[3], seeds[0]).unwrap();
    check(
        "stateless_normal([3], split[0])",
        &v,
        &[-0.59835213, -0.9578608, 0.9002807],
    );
}

#[test]
fn generator_split_matches_the_guide() {
    // tf-random-number-generation.md, "Creating independent random-number streams" (printed
    // by an older TF build; its first value is 1 ulp above TF 2.21's 0.43842274).
    let mut g = Generator::from_seed(1);
    let first = g.normal(&[]).unwrap();
    check_within("guide: normal([])", &first, &[0.43842277], 1);
    let mut children = g.split(3).unwrap();
    let got: Vec<f32> = children
        .iter_mut()
        .map(|c| c.normal(&[]).unwrap()[0])
        .collect();
    check(
        "guide: split(3) children",
        &got,
        &[2.536413, 0.33186463, -0.07144657],
    );
    check(
        "guide: normal([]) after split",
        &g.normal(&[]).unwrap(),
        &[-0.79253083],
    );
}
