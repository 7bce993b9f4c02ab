//! Stateless random ops: TensorFlow's `stateless_*` streams (Philox) and JAX's (ThreeFry),
//! computed by `kiln-rng`, whose generic code the compiled backends will emit too.

use kiln_ir::{Buffer, DType, RandomAlg, RandomDist, TensorType};
use kiln_rng::{jax, Generator};

/// Fills a tensor of type `result` from an `i64[2]` seed, or from an `i64[3]` generator
/// state with `alg=philox_state`.
pub fn random(
    dist: RandomDist,
    alg: RandomAlg,
    seed: &Buffer,
    result: &TensorType,
) -> Result<Buffer, String> {
    if alg == RandomAlg::PhiloxState {
        return from_generator_state(dist, seed, result);
    }
    let Buffer::I64(s) = seed else {
        return Err("the seed must be i64[2]".into());
    };
    let [s0, s1] = s[..] else {
        return Err("the seed must be i64[2]".into());
    };
    let shape = &result.shape;
    let seed = [s0, s1];
    let e = |e: kiln_rng::RngError| e.to_string();
    Ok(match (alg, dist, result.dtype) {
        (RandomAlg::Philox, RandomDist::Uniform, DType::F32) => {
            Buffer::F32(kiln_rng::stateless_uniform(shape, seed).map_err(e)?.into())
        }
        (RandomAlg::Philox, RandomDist::Uniform, DType::F64) => Buffer::F64(
            kiln_rng::stateless_uniform_f64(shape, seed)
                .map_err(e)?
                .into(),
        ),
        (RandomAlg::Philox, RandomDist::Normal, DType::F32) => {
            Buffer::F32(kiln_rng::stateless_normal(shape, seed).map_err(e)?.into())
        }
        (RandomAlg::Philox, RandomDist::Normal, DType::F64) => Buffer::F64(
            kiln_rng::stateless_normal_f64(shape, seed)
                .map_err(e)?
                .into(),
        ),
        (RandomAlg::Philox, RandomDist::TruncatedNormal, DType::F32) => Buffer::F32(
            kiln_rng::stateless_truncated_normal(shape, seed)
                .map_err(e)?
                .into(),
        ),
        (RandomAlg::Philox, RandomDist::TruncatedNormal, DType::F64) => Buffer::F64(
            kiln_rng::stateless_truncated_normal_f64(shape, seed)
                .map_err(e)?
                .into(),
        ),
        (RandomAlg::Philox, RandomDist::Bits, DType::U32) => {
            Buffer::U32(kiln_rng::stateless_bits(shape, seed).map_err(e)?.into())
        }
        (RandomAlg::Threefry, dist, dt) => {
            let key = jax::key_from_seed_pair(seed);
            match (dist, dt) {
                (RandomDist::Uniform, DType::F32) => {
                    Buffer::F32(jax::uniform(key, shape).map_err(e)?.into())
                }
                (RandomDist::Normal, DType::F32) => {
                    Buffer::F32(jax::normal(key, shape).map_err(e)?.into())
                }
                (RandomDist::TruncatedNormal, DType::F32) => {
                    Buffer::F32(jax::truncated_normal(key, shape).map_err(e)?.into())
                }
                (RandomDist::Bits, DType::U32) => {
                    Buffer::U32(jax::random_bits(key, shape).map_err(e)?.into())
                }
                _ => {
                    return Err(format!(
                        "{} with alg=threefry cannot produce {result}",
                        dist.name()
                    ))
                }
            }
        }
        (_, dist, _) => {
            return Err(format!(
                "{} with alg=philox cannot produce {result}",
                dist.name()
            ))
        }
    })
}

/// `alg=philox_state`: exactly what `tf.random.Generator` (and [`Generator`]) in state
/// `[counter_lo, counter_hi, key]` draws — the key and counter used as they are, as TF's
/// `StatelessRandom*V2` ops do after `RngReadAndSkip`. The state is an input and is not
/// advanced here: the caller (a `kiln::Function` feeding a generator) advances it.
fn from_generator_state(
    dist: RandomDist,
    state: &Buffer,
    result: &TensorType,
) -> Result<Buffer, String> {
    let bad = || "the generator state must be i64[3] ([counter_lo, counter_hi, key])".to_string();
    let Buffer::I64(s) = state else {
        return Err(bad());
    };
    let [c0, c1, k] = s[..] else {
        return Err(bad());
    };
    // A copy in this state: its own advance is thrown away.
    let mut g = Generator::from_state([c0 as u64, c1 as u64, k as u64]);
    let shape = &result.shape;
    let e = |e: kiln_rng::RngError| e.to_string();
    Ok(match (dist, result.dtype) {
        (RandomDist::Uniform, DType::F32) => Buffer::F32(g.uniform(shape).map_err(e)?.into()),
        (RandomDist::Uniform, DType::F64) => Buffer::F64(g.uniform_f64(shape).map_err(e)?.into()),
        (RandomDist::Normal, DType::F32) => Buffer::F32(g.normal(shape).map_err(e)?.into()),
        (RandomDist::Normal, DType::F64) => Buffer::F64(g.normal_f64(shape).map_err(e)?.into()),
        (RandomDist::TruncatedNormal, DType::F32) => {
            Buffer::F32(g.truncated_normal(shape).map_err(e)?.into())
        }
        (RandomDist::TruncatedNormal, DType::F64) => {
            Buffer::F64(g.truncated_normal_f64(shape).map_err(e)?.into())
        }
        (RandomDist::Bits, DType::U32) => Buffer::U32(g.bits(shape).map_err(e)?.into()),
        _ => {
            return Err(format!(
                "{} with alg=philox_state cannot produce {result}",
                dist.name()
            ))
        }
    })
}
