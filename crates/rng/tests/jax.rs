//! JAX (ThreeFry, partitionable mode) checks.

use kiln_rng::jax::{self, JaxKey};

#[test]
fn uniform_of_prng_key_0_matches_jax() {
    // jax.random.uniform(jax.random.PRNGKey(0), ()) == 0.947667 (oracles/tf_rng_examples.md).
    let key = jax::prng_key(0);
    assert_eq!(key, JaxKey([0, 0]));
    let u = jax::uniform(key, &[]).unwrap();
    assert_eq!(u.len(), 1);
    assert!((u[0] - 0.947667).abs() < 5e-7, "{}", u[0]);
    // Bits: threefry([0,0], (0,0)) = (0x6b200159, 0x99ba4efe), xored; uniform uses the
    // high 23 bits.
    let bits = jax::random_bits(key, &[]).unwrap();
    assert_eq!(bits, [0x6b20_0159 ^ 0x99ba_4efe]);
    assert_eq!(u[0], f32::from_bits(0x3f80_0000 | (bits[0] >> 9)) - 1.0);
}

#[test]
fn prng_key_splits_the_seed_into_high_and_low_words() {
    assert_eq!(
        jax::prng_key(0x1234_5678_9abc_def0),
        JaxKey([0x1234_5678, 0x9abc_def0])
    );
    assert_eq!(jax::prng_key(-1), JaxKey([u32::MAX, u32::MAX]));
}

#[test]
fn split_and_fold_in_agree_in_partitionable_mode() {
    let key = jax::prng_key(42);
    let keys = jax::split(key, 4).unwrap();
    assert!(jax::split(key, usize::MAX).is_err());
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(*k, jax::fold_in(key, i as u32));
    }
    assert_ne!(keys[0], keys[1]);
}

#[test]
fn bits_are_independent_of_shape_and_batching() {
    let key = jax::prng_key(7);
    let flat = jax::random_bits(key, &[1000]).unwrap();
    let shaped = jax::random_bits(key, &[10, 100]).unwrap();
    assert_eq!(flat, shaped);
    let prefix = jax::random_bits(key, &[37]).unwrap();
    assert_eq!(prefix[..], flat[..37]);
}

#[test]
fn normal_and_truncated_normal_are_sane() {
    let key = jax::prng_key(3);
    let z = jax::normal(key, &[100_000]).unwrap();
    let mean = z.iter().map(|&x| f64::from(x)).sum::<f64>() / z.len() as f64;
    let var = z.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / z.len() as f64;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
        "{mean} {var}"
    );
    assert!(z.iter().all(|x| x.is_finite()));
    let t = jax::truncated_normal(key, &[100_000]).unwrap();
    assert!(t.iter().all(|&x| x > -2.0 && x < 2.0));
    let var = t.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / t.len() as f64;
    assert!((var - 0.774).abs() < 0.02, "{var}"); // variance of N(0,1) truncated to (-2, 2)
}

#[test]
fn erf_inv_inverts_erf() {
    let a = &mut kiln_math::ScalarF32;
    for x in [-0.999f32, -0.5, -1e-3, 0.0, 0.25, 0.9, 0.99999] {
        let y = jax::erf_inv_f32(a, x);
        let back = kiln_math::f32s::erf(y);
        assert!(
            (back - x).abs() <= 2e-6 * (1.0 + x.abs() * 10.0),
            "{x} -> {y} -> {back}"
        );
    }
    assert_eq!(jax::erf_inv_f32(a, 1.0), f32::INFINITY);
    assert_eq!(jax::erf_inv_f32(a, -1.0), f32::NEG_INFINITY);
}

#[test]
fn truncated_bounds_are_erf_of_the_bounds() {
    let s = std::f32::consts::SQRT_2;
    let [lo, hi] = jax::TRUNCATED_ERF_BOUNDS_F32;
    assert_eq!(kiln_math::f32s::erf(-2.0 / s).to_bits(), lo.to_bits());
    assert_eq!(kiln_math::f32s::erf(2.0 / s).to_bits(), hi.to_bits());
}

#[test]
fn uniform_range_fuses_the_scale_and_shift() {
    // maxval - minval = 7 makes `u * 7` inexact: XLA:CPU's fused multiply-add rounds once.
    let key = jax::prng_key(11);
    let u = jax::uniform(key, &[4096]).unwrap();
    let r = jax::uniform_range(key, &[4096], -3.0, 4.0).unwrap();
    let mut unfused_differs = false;
    for (&u, &r) in u.iter().zip(&r) {
        assert_eq!(r.to_bits(), u.mul_add(7.0, -3.0).max(-3.0).to_bits());
        unfused_differs |= (u * 7.0 - 3.0).max(-3.0) != r;
    }
    assert!(unfused_differs, "the case does not tell fused from unfused");
    assert_eq!(jax::uniform_range(key, &[4096], 0.0, 1.0).unwrap(), u);
}
