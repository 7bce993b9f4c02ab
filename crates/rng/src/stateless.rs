//! TensorFlow's stateless random ops (`tf.random.stateless_*`) with the Philox algorithm.
//!
//! A seed `[s0, s1]` is scrambled into a key and counter by one Philox block
//! ([`stateless_key_counter`], TF's `GenerateKey`/`StatelessRandomGetKeyCounter`); the op's
//! distribution then reads blocks `counter + g`. `int32` seeds are sign-extended to 64 bits
//! first, as TF does, so passing them as `i64` gives TF's values.

use kiln_math::{Arith, ScalarF32};

use crate::error::{alloc_output, Result};
use crate::philox::{philox4x32_10, PhiloxRandom};
use crate::tf_fill;

/// Key TF's seed scrambling runs Philox with.
pub const STATELESS_SCRAMBLE_KEY: [u32; 2] = [0x3ec8_f720, 0x0246_1e29];

/// TF's seed scrambling, generic: `seed` is `[lo s0, hi s0, lo s1, hi s1]`; returns
/// `(key, counter)` = `((m0, m1), (0, 0, m2, m3))` for `m = philox(seed, SCRAMBLE_KEY)`.
///
/// For compiled kernels whose seed is a runtime tensor; [`stateless_key_counter`] is the host
/// version.
#[inline(always)]
pub fn scramble_seed<A: Arith>(a: &mut A, seed: [A::U; 4]) -> ([A::U; 2], [A::U; 4]) {
    let k0 = a.uconst(u64::from(STATELESS_SCRAMBLE_KEY[0]));
    let k1 = a.uconst(u64::from(STATELESS_SCRAMBLE_KEY[1]));
    let m = philox4x32_10(a, seed, [k0, k1]);
    let zero = a.uconst(0);
    ([m[0], m[1]], [zero, zero, m[2], m[3]])
}

/// The Philox stream of the stateless ops for `seed` (TF's `GenerateKey`).
pub fn stateless_key_counter(seed: [i64; 2]) -> PhiloxRandom {
    let (s0, s1) = (seed[0] as u64, seed[1] as u64);
    let words = [s0 as u32, (s0 >> 32) as u32, s1 as u32, (s1 >> 32) as u32];
    let (key, counter) = scramble_seed(&mut ScalarF32, words);
    PhiloxRandom::new(counter, key)
}

/// `tf.random.stateless_uniform(shape, seed)` (`float32`, `[0, 1)`).
pub fn stateless_uniform(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_uniform_f32(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_uniform(shape, seed, dtype=tf.float64)`.
pub fn stateless_uniform_f64(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f64>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_uniform_f64(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_normal(shape, seed)` (`float32`, mean 0, stddev 1).
pub fn stateless_normal(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_normal_f32(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_normal(shape, seed, dtype=tf.float64)`.
pub fn stateless_normal_f64(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f64>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_normal_f64(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_truncated_normal(shape, seed)` (`float32`, `|z| < 2`).
pub fn stateless_truncated_normal(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f32>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_truncated_normal_f32(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_truncated_normal(shape, seed, dtype=tf.float64)`.
pub fn stateless_truncated_normal_f64(shape: &[usize], seed: [i64; 2]) -> Result<Vec<f64>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_truncated_normal_f64(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// `tf.random.stateless_uniform(shape, seed, minval, maxval, dtype=tf.int32)`.
pub fn stateless_uniform_int(
    shape: &[usize],
    seed: [i64; 2],
    minval: i32,
    maxval: i32,
) -> Result<Vec<i32>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_uniform_i32(&stateless_key_counter(seed), &mut out, minval, maxval)?;
    Ok(out)
}

/// `tf.random.stateless_uniform(shape, seed, minval, maxval, dtype=tf.int64)`.
pub fn stateless_uniform_int64(
    shape: &[usize],
    seed: [i64; 2],
    minval: i64,
    maxval: i64,
) -> Result<Vec<i64>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_uniform_i64(&stateless_key_counter(seed), &mut out, minval, maxval)?;
    Ok(out)
}

/// Full-range 32-bit words: `tf.random.stateless_uniform(shape, seed, minval=None,
/// maxval=None, dtype=tf.uint32)` (reinterpret as `i32` for `dtype=tf.int32`).
pub fn stateless_bits(shape: &[usize], seed: [i64; 2]) -> Result<Vec<u32>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_bits_u32(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// Full-range 64-bit integers (`dtype=tf.uint64`; reinterpret as `i64` for `tf.int64`).
pub fn stateless_bits_u64(shape: &[usize], seed: [i64; 2]) -> Result<Vec<u64>> {
    let mut out = alloc_output(shape)?;
    tf_fill::fill_bits_u64(&stateless_key_counter(seed), &mut out);
    Ok(out)
}

/// The integer type of a seed tensor, which decides what `stateless_split`/`fold_in` draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeedDtype {
    /// `int32` seeds (what `tf.constant([1, 2])` is): new seeds are full-range `int32`.
    I32,
    /// `int64` seeds: new seeds are full-range `int64`.
    I64,
}

/// `tf.random.experimental.stateless_split(seed, num)`: `num` new seeds, drawn as
/// `stateless_uniform(shape=[num, 2], seed, minval=None, maxval=None, dtype=seed.dtype)`.
/// `int32` results are returned sign-extended.
pub fn stateless_split(seed: [i64; 2], num: usize, dtype: SeedDtype) -> Result<Vec<[i64; 2]>> {
    let flat = full_int_of_dtype(&[num, 2], seed, dtype)?;
    Ok(flat.chunks_exact(2).map(|p| [p[0], p[1]]).collect())
}

/// `tf.random.experimental.stateless_fold_in(seed, data)`: `[stateless_uniform(shape=[],
/// seed, minval=None, maxval=None, dtype=data.dtype), data]`; `dtype` is the dtype of
/// `data` (`I32` for a Python int).
pub fn stateless_fold_in(seed: [i64; 2], data: i64, dtype: SeedDtype) -> Result<[i64; 2]> {
    let first = full_int_of_dtype(&[], seed, dtype)?;
    let data = match dtype {
        SeedDtype::I32 => i64::from(data as i32),
        SeedDtype::I64 => data,
    };
    Ok([first[0], data])
}

/// Full-range integers of `dtype`, sign-extended to `i64`.
fn full_int_of_dtype(shape: &[usize], seed: [i64; 2], dtype: SeedDtype) -> Result<Vec<i64>> {
    Ok(match dtype {
        SeedDtype::I32 => stateless_bits(shape, seed)?
            .into_iter()
            .map(|w| i64::from(w as i32))
            .collect(),
        SeedDtype::I64 => stateless_bits_u64(shape, seed)?
            .into_iter()
            .map(|w| w as i64)
            .collect(),
    })
}
