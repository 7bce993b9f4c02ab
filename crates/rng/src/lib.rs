//! Random numbers for Kiln: Philox4x32-10 and ThreeFry2x32-20 block functions and
//! TensorFlow's/JAX's distributions, written once over [`kiln_math::Arith`] (design.md,
//! Invariant 1), plus fast host fills, TF's stateless ops, `tf.random.Generator` and JAX's
//! key API on top.
//!
//! Layers, bottom up:
//! - generic straight-line code every backend instantiates: [`philox4x32_10`],
//!   [`counter_add`], [`scramble_seed`], [`threefry2x32_20`], TF's mappings
//!   ([`uniform_f32`], [`uniform_f64`], [`box_muller_f32`], [`box_muller_f64`],
//!   [`normal_group_f32`], [`TruncatedGroup`]) and JAX's ([`jax::bits_element`],
//!   [`jax::uniform_from_bits_f32`], [`jax::normal_from_bits_f32`], …);
//! - host fills over a [`PhiloxRandom`] stream ([`tf_fill`]), vectorised and parallel, with
//!   results independent of the thread count;
//! - the user-facing API: [`stateless_normal`] & co., [`Generator`], [`jax`].
//!
//! # Implementing `random_* %seed, alg=…` in a backend
//!
//! Philox (`alg=philox`, TF's `stateless_*` stream), output of `n` elements:
//! 1. once per kernel: `(key, ctr) = scramble_seed(a, [lo s0, hi s0, lo s1, hi s1])`
//!    (host: [`stateless_key_counter`]);
//! 2. per output group `g` (elements `4g .. 4g+4`, the last group truncated):
//!    `block = philox4x32_10(a, counter_add(a, ctr, lo g, hi g), key)`, then
//!    `random_bits` = the four words, `random_uniform` = [`uniform_group_f32`],
//!    `random_normal` = [`normal_group_f32`];
//! 3. `random_truncated_normal`: group `g` loops over blocks `ctr + 256 g + i` feeding
//!    [`truncated_normal_pair_f32`] until [`TruncatedGroup::is_full`] (the only loop with a
//!    data-dependent trip count);
//! 4. `f64` outputs: instantiate the same functions over an `F64`-format `Arith` (words live
//!    in the low halves of 64-bit integers); two outputs per group: [`uniform_f64`] on words
//!    (0, 1) and (2, 3), or [`box_muller_f64`] on the block.
//!
//! Philox on a generator state (`alg=philox_state`, an `i64[3]` `[c0, c1, k]` as
//! [`Generator`] keeps it): as `alg=philox` without step 1 — `key = (lo k, hi k)`,
//! `ctr = (lo c0, hi c0, lo c1, hi c1)` ([`Generator::philox`]).
//!
//! ThreeFry (`alg=threefry`, JAX's stream): the seed is the key (low 32 bits of each
//! element, [`jax::key_from_seed_pair`]); element `i` (flat, row-major) is
//! `jax::bits_element(a, key, hi i, lo i)` mapped by [`jax::uniform_from_bits_f32`],
//! [`jax::normal_from_bits_f32`] or [`jax::truncated_normal_from_bits_f32`].
//!
//! The interpreter can call the host functions ([`stateless_uniform`], [`tf_fill`],
//! [`jax::uniform`], …), which produce the same bits as the generic code above.
//!
//! This crate reads no environment and no global flags: determinism is a parameter
//! ([`require_seeded`], [`Generator::from_non_deterministic_state`]).

#![warn(missing_docs)]

mod batch;
mod error;
mod generator;
pub mod jax;
mod lanes;
mod philox;
mod seed;
mod stateless;
mod tf_dist;
pub mod tf_fill;
mod threefry;
mod words;
pub mod xla_cpu;

pub use error::{num_elements, require_seeded, Result, RngError};
pub use generator::Generator;
pub use lanes::{lane_bits, pick_float, pick_word};
pub use philox::{
    counter_add, philox4x32_10, PhiloxRandom, PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1,
};
pub use seed::{seed_stream, SeedKind, Stream};
pub use stateless::{
    scramble_seed, stateless_bits, stateless_bits_u64, stateless_fold_in, stateless_key_counter,
    stateless_normal, stateless_normal_f64, stateless_split, stateless_truncated_normal,
    stateless_truncated_normal_f64, stateless_uniform, stateless_uniform_f64,
    stateless_uniform_int, stateless_uniform_int64, SeedDtype, STATELESS_SCRAMBLE_KEY,
};
pub use tf_dist::{
    box_muller_f32, box_muller_f64, normal_group_f32, truncated_block, truncated_normal_block_f64,
    truncated_normal_pair_f32, truncated_step_f32, two_pi_times_uniform_f32, uniform_f32,
    uniform_f64, uniform_group_f32, TruncatedGroup, BOX_MULLER_EPSILON_F32, BOX_MULLER_EPSILON_F64,
    TRUNCATED_BLOCKS_PER_GROUP_F32, TRUNCATED_BLOCKS_PER_GROUP_F64, TRUNCATE_VALUE,
};
pub use threefry::{threefry2x32_20, THREEFRY_PARITY, THREEFRY_ROTATIONS};
