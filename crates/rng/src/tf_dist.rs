//! TensorFlow's distributions over Philox words (`tensorflow/core/lib/random/
//! random_distributions.h`), written once over [`Arith`].
//!
//! Every function is straight-line code over exactly rounded primitives, so all backends
//! produce the same bits. The `f32` Box–Muller is TF's bit for bit: TF's CPU kernel calls
//! glibc's `logf` and `sincosf`, and `kiln_math::{logf_glibc, sincosf_glibc_below_120}` are
//! those functions (binary64 inside, over [`Widen`]). The `f64` Box–Muller is TF's bit for
//! bit too: TF's `BoxMullerDouble` calls glibc's double `log` and (on Linux) `sincos`, and
//! `kiln_math::{log_glibc, sincos_glibc}` are those functions.
//! Functions named `*_f32` need an `F32`-format `A`, `*_f64` an `F64`-format one (words then
//! live in the low halves of the 64-bit integers, see [`crate::philox4x32_10`]).
//!
//! Not here: the one data-dependent loop TF has, the rejection loop of the truncated normal.
//! [`truncated_step_f32`] (built on [`truncated_normal_pair_f32`]) and [`truncated_block`]
//! are its straight-line body; the caller loops (see their docs).

use kiln_math::{Arith, FloatCC, IntCC, Widen};

use crate::philox::{counter_add, philox4x32_10};
use crate::words::{wconst, wrap32};

/// TF's Box–Muller clamp: `u1` below this is raised to it before `log`.
pub const BOX_MULLER_EPSILON_F32: f32 = 1.0e-7;
/// TF's Box–Muller clamp for `f64`.
pub const BOX_MULLER_EPSILON_F64: f64 = 1.0e-7;
/// TF's truncation bound: truncated normals keep `|z| < 2`.
pub const TRUNCATE_VALUE: f64 = 2.0;
/// Philox blocks reserved per output group of a truncated normal (TF's
/// `kReservedSamplesPerOutput`); group `g` starts reading at block `counter + 256 g`
/// (`f32`, 4 outputs per group) or `counter + 128 g` (`f64`, 2 outputs per group).
pub const TRUNCATED_BLOCKS_PER_GROUP_F32: u64 = 256;
/// See [`TRUNCATED_BLOCKS_PER_GROUP_F32`].
pub const TRUNCATED_BLOCKS_PER_GROUP_F64: u64 = 128;

/// `2π` as C's `2 * M_PI` (a double), which TF multiplies a float by before rounding.
const TWO_PI: f64 = 2.0 * std::f64::consts::PI;

/// TF's `Uint32ToFloat`: `bits(0x3f800000 | (x & 0x7fffff)) - 1.0`, uniform in `[0, 1)`.
#[inline(always)]
pub fn uniform_f32<A: Arith>(a: &mut A, x: A::U) -> A::F {
    mantissa_to_unit(a, x, 0x7f_ffff)
}

/// `bits(0x3f800000 | (x & mask)) - 1.0`.
#[inline(always)]
fn mantissa_to_unit<A: Arith>(a: &mut A, x: A::U, mask: u32) -> A::F {
    let m = wconst(a, mask);
    let man = a.and(x, m);
    let one_bits = wconst(a, 0x3f80_0000);
    let b = a.or(man, one_bits);
    let f = a.from_bits(b);
    let one = a.fconst(1.0);
    a.sub(f, one)
}

/// TF's `Uint64ToDouble(x0, x1)`: `bits(0x3ff0… | (x0 & 0xfffff) << 32 | x1) - 1.0`
/// (`x0` gives the high 20 mantissa bits). Needs an `F64`-format `A`.
#[inline(always)]
pub fn uniform_f64<A: Arith>(a: &mut A, x0: A::U, x1: A::U) -> A::F {
    let m = a.uconst(0xf_ffff);
    let hi = a.and(x0, m);
    let hi = a.shl(hi, 32);
    let lo = wrap32(a, x1);
    let man = a.or(hi, lo);
    let one_bits = a.uconst(0x3ff0_0000_0000_0000);
    let b = a.or(man, one_bits);
    let f = a.from_bits(b);
    let one = a.fconst(1.0);
    a.sub(f, one)
}

/// `f32(f64(2π) · u)` for `u = uniform_f32(x)`, rounded once from the exact product as C's
/// `2.0f * M_PI * u` is (the product is formed in double, then converted).
///
/// In binary32 only: `2π = P_hi + P_lo`, `u = u_h + u_l` split on its bits, `u · P_hi` as an
/// exact two-float product (Dekker, every partial product fits 24 bits), plus `u · P_lo`.
/// Equal to TF's value for all 2^23 inputs (checked exhaustively in the tests).
#[inline(always)]
pub fn two_pi_times_uniform_f32<A: Arith>(a: &mut A, x: A::U) -> A::F {
    let p_hi = TWO_PI as f32;
    let p_lo = (TWO_PI - f64::from(p_hi)) as f32;
    let p_hi1 = f32::from_bits(p_hi.to_bits() & !0xfff);
    let p_hi2 = p_hi - p_hi1;
    let u = uniform_f32(a, x);
    let uh = mantissa_to_unit(a, x, 0x7f_f000);
    let ul = mantissa_to_unit(a, x, 0xfff);
    let ph = a.fconst(f64::from(p_hi));
    let ph1 = a.fconst(f64::from(p_hi1));
    let ph2 = a.fconst(f64::from(p_hi2));
    let pl = a.fconst(f64::from(p_lo));
    let p = a.mul(u, ph);
    let t = a.mul(uh, ph1);
    let e = a.sub(t, p);
    let t = a.mul(uh, ph2);
    let e = a.add(e, t);
    let t = a.mul(ul, ph1);
    let e = a.add(e, t);
    let t = a.mul(ul, ph2);
    let e = a.add(e, t);
    let t = a.mul(u, pl);
    let corr = a.add(e, t);
    a.add(p, corr)
}

/// TF's `BoxMullerFloat(x0, x1)`: two standard normals `(r sin θ, r cos θ)` with
/// `r = sqrt(-2 logf(max(u(x0), 1e-7)))` in single precision, `θ = (float)(2π · (double)
/// u(x1))` (C's `2.0f * M_PI * u`), and glibc's `logf` and `sincosf`.
#[inline(always)]
pub fn box_muller_f32<A: Widen>(a: &mut A, x0: A::U, x1: A::U) -> (A::F, A::F) {
    let u1 = uniform_f32(a, x0);
    let eps = a.fconst(f64::from(BOX_MULLER_EPSILON_F32));
    let u1 = a.raise_to(u1, eps);
    let u2 = uniform_f32(a, x1);
    let u2 = a.widen(u2);
    let two_pi = a.dconst(TWO_PI);
    let v1 = a.dmul(two_pi, u2);
    let v1 = a.narrow(v1);
    let l = kiln_math::logf_glibc_normal(a, u1);
    let m2 = a.fconst(-2.0);
    let l = a.mul(m2, l);
    let r = a.sqrt(l);
    let (s, c) = kiln_math::sincosf_glibc_below_120(a, v1);
    let z0 = a.mul(s, r);
    let z1 = a.mul(c, r);
    (z0, z1)
}

/// TF's `BoxMullerDouble(x0, x1, x2, x3)`: two `f64` standard normals from four words,
/// `(r sin θ, r cos θ)` with `r = sqrt(-2 log(max(u(x0, x1), 1e-7)))`, `θ = 2π u(x2, x3)`
/// (C's `2 * M_PI * u`, in `[0, 2π)`) and glibc's `log` and `sincos`. Needs an `F64`-format
/// `A`.
#[inline(always)]
pub fn box_muller_f64<A: Arith>(a: &mut A, x: [A::U; 4]) -> (A::F, A::F) {
    let u1 = uniform_f64(a, x[0], x[1]);
    let eps = a.fconst(BOX_MULLER_EPSILON_F64);
    let small = a.fcmp(FloatCC::Lt, u1, eps);
    let u1 = a.select(small, eps, u1);
    let u2 = uniform_f64(a, x[2], x[3]);
    let two_pi = a.fconst(TWO_PI);
    let v1 = a.mul(two_pi, u2);
    let l = kiln_math::log_glibc(a, u1);
    let m2 = a.fconst(-2.0);
    let l = a.mul(m2, l);
    let r = a.sqrt(l);
    let (s, c) = kiln_math::sincos_glibc(a, v1);
    let z0 = a.mul(s, r);
    let z1 = a.mul(c, r);
    (z0, z1)
}

/// TF's `NormalDistribution<float>` on one Philox block: `[z0, z1]` from words 0, 1 and
/// `[z2, z3]` from words 2, 3.
#[inline(always)]
pub fn normal_group_f32<A: Widen>(a: &mut A, block: [A::U; 4]) -> [A::F; 4] {
    let (z0, z1) = box_muller_f32(a, block[0], block[1]);
    let (z2, z3) = box_muller_f32(a, block[2], block[3]);
    [z0, z1, z2, z3]
}

/// TF's `UniformDistribution<float>` on one Philox block: four uniforms in `[0, 1)`.
#[inline(always)]
pub fn uniform_group_f32<A: Arith>(a: &mut A, block: [A::U; 4]) -> [A::F; 4] {
    block.map(|x| uniform_f32(a, x))
}

/// The partial state of one truncated-normal output group: the values accepted so far and
/// their count (`N` = 4 for `f32`, 2 for `f64`).
#[derive(Debug, Clone, Copy)]
pub struct TruncatedGroup<A: Arith, const N: usize> {
    /// Accepted values; slots at and above `count` are unspecified.
    pub values: [A::F; N],
    /// How many slots are filled (0 ..= N).
    pub count: A::U,
}

impl<A: Arith, const N: usize> TruncatedGroup<A, N> {
    /// The empty group.
    #[inline(always)]
    pub fn new(a: &mut A) -> Self {
        let z = a.fconst(0.0);
        let count = a.uconst(0);
        TruncatedGroup {
            values: [z; N],
            count,
        }
    }

    /// Whether the group is complete (`count == N`): the caller's loop condition.
    #[inline(always)]
    pub fn is_full(&self, a: &mut A) -> A::M {
        let n = a.uconst(N as u64);
        a.icmp(IntCC::Uge, self.count, n)
    }

    /// Offers one candidate: kept in the next free slot if `|z| < 2` and the group is not full.
    #[inline(always)]
    pub fn offer(&mut self, a: &mut A, z: A::F) {
        let az = a.abs(z);
        let bound = a.fconst(TRUNCATE_VALUE);
        let inside = a.fcmp(FloatCC::Lt, az, bound);
        for (j, slot) in self.values.iter_mut().enumerate() {
            let jc = a.uconst(j as u64);
            let here = a.icmp(IntCC::Eq, self.count, jc);
            let take = a.mand(inside, here);
            *slot = a.select(take, z, *slot);
        }
        let full = self.is_full(a);
        let room = a.mnot(full);
        let grow = a.mand(inside, room);
        let one = a.uconst(1);
        let next = a.iadd(self.count, one);
        self.count = a.select_u(grow, next, self.count);
    }
}

/// One iteration of TF's `TruncatedNormalDistribution<float>` loop: Box–Muller on two
/// consecutive words, then each of the two candidates is offered in order.
///
/// The caller's loop (the only data-dependent control flow of the Philox distributions):
/// for output group `g`, read blocks `counter + 256 g + i` for `i = 0, 1, …` and feed words
/// `(w0, w1)` then `(w2, w3)` of each block, stopping as soon as [`TruncatedGroup::is_full`].
/// Stopping after `(w0, w1)` or only after the whole block gives the same values (offers to
/// a full group are ignored), so a backend may test once per block.
#[inline(always)]
pub fn truncated_normal_pair_f32<A: Widen>(
    a: &mut A,
    group: &mut TruncatedGroup<A, 4>,
    x0: A::U,
    x1: A::U,
) {
    let (z0, z1) = box_muller_f32(a, x0, x1);
    group.offer(a, z0);
    group.offer(a, z1);
}

/// One iteration of TF's `TruncatedNormalDistribution<double>` loop: Box–Muller on four
/// consecutive words (one Philox block), candidates offered in order. Output group `g`
/// reads blocks `counter + 128 g + i`.
#[inline(always)]
pub fn truncated_normal_block_f64<A: Arith>(
    a: &mut A,
    group: &mut TruncatedGroup<A, 2>,
    block: [A::U; 4],
) {
    let (z0, z1) = box_muller_f64(a, block);
    group.offer(a, z0);
    group.offer(a, z1);
}

/// The Philox block a truncated-normal group reads in iteration `blk` of its loop: block
/// `first + blk` (`first` the group's first counter, `blk` a 32-bit block number) under `key`.
/// Needs an `F32`-format `A` (the words' arithmetic; `f64` groups widen the words after).
#[inline(always)]
pub fn truncated_block<A: Arith>(
    a: &mut A,
    key: [A::U; 2],
    first: [A::U; 4],
    blk: A::U,
) -> [A::U; 4] {
    let zero = a.uconst(0);
    let c = counter_add(a, first, blk, zero);
    philox4x32_10(a, c, key)
}

/// One iteration of the `f32` truncated-normal group loop: block `first + blk`
/// ([`truncated_block`]), its pairs `(w0, w1)` and `(w2, w3)` offered in order
/// ([`truncated_normal_pair_f32`]). The loop around it is the backend's.
#[inline(always)]
pub fn truncated_step_f32<A: Widen>(
    a: &mut A,
    group: &mut TruncatedGroup<A, 4>,
    key: [A::U; 2],
    first: [A::U; 4],
    blk: A::U,
) {
    let w = truncated_block(a, key, first, blk);
    truncated_normal_pair_f32(a, group, w[0], w[1]);
    truncated_normal_pair_f32(a, group, w[2], w[3]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::ScalarF32;

    /// What C computes for `2.0f * M_PI * u`.
    fn tf_two_pi_u(x: u32) -> f32 {
        let u = f32::from_bits(0x3f80_0000 | (x & 0x7f_ffff)) - 1.0;
        (TWO_PI * f64::from(u)) as f32
    }

    #[test]
    fn two_pi_times_uniform_is_exact_for_every_mantissa() {
        let mut bad = Vec::new();
        for x in 0..(1u32 << 23) {
            let got = two_pi_times_uniform_f32(&mut ScalarF32, x);
            if got.to_bits() != tf_two_pi_u(x).to_bits() {
                bad.push(x);
            }
        }
        assert!(
            bad.is_empty(),
            "{} mismatches, first {:?}",
            bad.len(),
            &bad[..bad.len().min(8)]
        );
    }

    #[test]
    fn uniform_f32_uses_the_low_23_bits() {
        let a = &mut ScalarF32;
        assert_eq!(uniform_f32(a, 0), 0.0);
        assert_eq!(uniform_f32(a, 0xff80_0000), 0.0);
        assert_eq!(uniform_f32(a, 0x7f_ffff), 1.0 - f32::EPSILON);
    }

    #[test]
    fn truncated_group_keeps_first_four_inside() {
        let a = &mut ScalarF32;
        let mut g = TruncatedGroup::<ScalarF32, 4>::new(a);
        for z in [0.5, 2.5, -1.0, -2.0, 1.5, 1.9, 0.1] {
            g.offer(a, z);
        }
        assert_eq!(g.values, [0.5, -1.0, 1.5, 1.9]);
        assert_eq!(g.count, 4);
    }
}
