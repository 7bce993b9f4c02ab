//! JAX's ThreeFry PRNG in its current default, partitionable mode
//! (`jax_threefry_partitionable=True`, the default since JAX 0.5).
//!
//! A key is two 32-bit words. `random_bits(key, shape)` gives element `i` (row-major flat
//! index, as a 64-bit integer) the word `b0 ^ b1` of `threefry(key, (hi(i), lo(i)))`;
//! `split(key, n)[i]` and `fold_in(key, i)` are both `threefry(key, (0, i))`. Distributions
//! follow `jax.random`: uniform from the *high* 23 bits, normal as `√2 · erfinv(u)`.
//!
//! What is verified: the block function (Random123 vectors), `uniform(PRNGKey(0), ())`
//! = 0.947667, and `normal`/`truncated_normal` bit for bit against JAX 0.10.2 on CPU
//! (`tests/jax_oracle.rs`, values from `tests/data/export_jax.py`). The normal draws use
//! XLA's `ErfInv32` with XLA:CPU's `log1p` and its FMA contractions ([`crate::xla_cpu`]), so
//! they match JAX run on an x86-64 CPU with FMA (or aarch64); JAX on an x86-64 CPU without
//! FMA rounds differently.

use kiln_math::{Arith, ScalarF32};

use crate::batch::{fill_threefry, LANES};
use crate::error::{alloc_output, Result};
use crate::threefry::threefry2x32_20;
use crate::words::wconst;

/// A JAX PRNG key (`jax.random.key_data(key)`): two 32-bit words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct JaxKey(pub [u32; 2]);

/// `jax.random.PRNGKey(seed)` = `[seed >> 32, seed & 0xffffffff]` (with 64-bit seeds, i.e.
/// `jax_enable_x64`; for seeds that fit in `i32` without x64, pass them sign-extended only
/// if non-negative — JAX then zero-extends: `PRNGKey(-1)` is `[0, 0xffffffff]`).
pub fn prng_key(seed: i64) -> JaxKey {
    let s = seed as u64;
    JaxKey([(s >> 32) as u32, s as u32])
}

/// The key a threefry IR op uses for its `i64[2]` seed: the low 32 bits of each element.
pub fn key_from_seed_pair(seed: [i64; 2]) -> JaxKey {
    JaxKey([seed[0] as u32, seed[1] as u32])
}

/// `jax.random.fold_in(key, data)`: `threefry(key, (0, data))`.
pub fn fold_in(key: JaxKey, data: u32) -> JaxKey {
    JaxKey(threefry2x32_20(&mut ScalarF32, [0, data], key.0))
}

/// `jax.random.split(key, num)`: key `i` is `threefry(key, (hi(i), lo(i)))`.
pub fn split(key: JaxKey, num: usize) -> Result<Vec<JaxKey>> {
    let mut keys = Vec::new();
    keys.try_reserve_exact(num)
        .map_err(|_| crate::RngError::Allocation { elements: num })?;
    keys.extend((0..num as u64).map(|i| {
        JaxKey(threefry2x32_20(
            &mut ScalarF32,
            [(i >> 32) as u32, i as u32],
            key.0,
        ))
    }));
    Ok(keys)
}

/// The 32 random bits of flat element `(hi, lo)`: `b0 ^ b1` of `threefry(key, (hi, lo))`.
#[inline(always)]
pub fn bits_element<A: Arith>(a: &mut A, key: [A::U; 2], hi: A::U, lo: A::U) -> A::U {
    let b = threefry2x32_20(a, [hi, lo], key);
    a.xor(b[0], b[1])
}

/// JAX's `uniform` in `[0, 1)` (`f32`): `bits(bits >> 9 | 0x3f800000) - 1`.
#[inline(always)]
pub fn uniform_from_bits_f32<A: Arith>(a: &mut A, bits: A::U) -> A::F {
    let m = a.lshr(bits, 9);
    let one_bits = wconst(a, 0x3f80_0000);
    let b = a.or(m, one_bits);
    let f = a.from_bits(b);
    let one = a.fconst(1.0);
    a.sub(f, one)
}

/// JAX's `uniform(minval, maxval)`: `max(minval, u * (maxval - minval) + minval)`, the
/// multiply-add fused as XLA:CPU fuses it.
#[inline(always)]
pub fn uniform_in<A: Arith>(a: &mut A, bits: A::U, minval: A::F, maxval: A::F) -> A::F {
    let u = uniform_from_bits_f32(a, bits);
    let span = a.sub(maxval, minval);
    let t = a.fma(u, span, minval);
    a.max(minval, t)
}

/// XLA's `ErfInv32` as XLA:CPU evaluates it (see [`crate::xla_cpu`]).
pub use crate::xla_cpu::erf_inv_f32;

/// `√2` rounded to `f32`, as JAX's `np.array(np.sqrt(2), dtype)`.
const SQRT2_F32: f32 = std::f32::consts::SQRT_2;

/// JAX's `normal` (`f32`): `√2 · erfinv(uniform(bits, nextafter(-1, 0), 1))`.
#[inline(always)]
pub fn normal_from_bits_f32<A: Arith>(a: &mut A, bits: A::U) -> A::F {
    let lo = a.fconst(f64::from(-1.0f32 + f32::EPSILON / 2.0));
    let hi = a.fconst(1.0);
    let u = uniform_in(a, bits, lo, hi);
    let e = erf_inv_f32(a, u);
    let s = a.fconst(f64::from(SQRT2_F32));
    a.mul(s, e)
}

/// `erf(∓2/√2)` in `f32` as XLA folds them into JAX's `truncated_normal(key, -2, 2)`
/// (`∓0.954499722`; `kiln_math::erf` agrees, see the tests).
pub const TRUNCATED_ERF_BOUNDS_F32: [f32; 2] =
    [f32::from_bits(0xbf74_5a18), f32::from_bits(0x3f74_5a18)];

/// JAX's `truncated_normal(key, -2, 2)` (`f32`): `√2 · erfinv(uniform(erf(-2/√2),
/// erf(2/√2)))`, clipped to the open interval `(-2, 2)`.
#[inline(always)]
pub fn truncated_normal_from_bits_f32<A: Arith>(a: &mut A, bits: A::U) -> A::F {
    let s = a.fconst(f64::from(SQRT2_F32));
    let ea = a.fconst(f64::from(TRUNCATED_ERF_BOUNDS_F32[0]));
    let eb = a.fconst(f64::from(TRUNCATED_ERF_BOUNDS_F32[1]));
    let u = uniform_in(a, bits, ea, eb);
    let e = erf_inv_f32(a, u);
    let out = a.mul(s, e);
    let lo = a.fconst(f64::from(f32::from_bits(0xbfff_ffff))); // nextafter(-2, +inf)
    let hi = a.fconst(f64::from(f32::from_bits(0x3fff_ffff))); // nextafter(2, -inf)
    let out = a.max(out, lo);
    a.min(out, hi)
}

/// `jax.random.bits(key, shape)` (`uint32`).
pub fn random_bits(key: JaxKey, shape: &[usize]) -> Result<Vec<u32>> {
    let mut out = alloc_output(shape)?;
    fill_threefry(key.0, &mut out, |w, o: &mut [u32]| {
        for l in 0..LANES {
            o[l] = w[0][l] ^ w[1][l];
        }
    });
    Ok(out)
}

/// Fills `out` with `f(bits of element i)`.
fn map_bits(key: JaxKey, out: &mut [f32], f: impl Fn(u32) -> f32 + Sync + Send) {
    fill_threefry(
        key.0,
        out,
        #[inline(always)]
        |w, o| {
            for l in 0..LANES {
                o[l] = f(w[0][l] ^ w[1][l]);
            }
        },
    );
}

/// `jax.random.uniform(key, shape)` (`float32`, `[0, 1)`).
pub fn uniform(key: JaxKey, shape: &[usize]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    map_bits(key, &mut out, |b| uniform_from_bits_f32(&mut ScalarF32, b));
    Ok(out)
}

/// `jax.random.uniform(key, shape, minval=minval, maxval=maxval)` (`float32`): as
/// [`uniform_in`], the multiply-add fused as XLA:CPU fuses it.
pub fn uniform_range(key: JaxKey, shape: &[usize], minval: f32, maxval: f32) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    map_bits(key, &mut out, |b| {
        uniform_in(&mut ScalarF32, b, minval, maxval)
    });
    Ok(out)
}

/// `jax.random.normal(key, shape)` (`float32`); see the module docs for exactness.
pub fn normal(key: JaxKey, shape: &[usize]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    map_bits(key, &mut out, |b| normal_from_bits_f32(&mut ScalarF32, b));
    Ok(out)
}

/// `jax.random.truncated_normal(key, -2, 2, shape)` (`float32`); see the module docs.
pub fn truncated_normal(key: JaxKey, shape: &[usize]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    map_bits(key, &mut out, |b| {
        truncated_normal_from_bits_f32(&mut ScalarF32, b)
    });
    Ok(out)
}
