//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011),
//! written once over [`Arith`], and [`PhiloxRandom`], TensorFlow's host-side generator state.
//!
//! [`philox4x32_10`] is straight-line code (ten unrolled rounds of multiplies, xors and key
//! bumps); the interpreter, the Cranelift JIT and the PTX emitter instantiate it and emit the
//! same rounds. It reproduces the Random123 known-answer vectors (`tests/kat.rs`).

use kiln_math::{Arith, ScalarF32};
use serde::{Deserialize, Serialize};

use crate::words::{wadd, wadd_carry, wconst, wmul_hilo};

/// Philox round multiplier for counter word 0.
pub const PHILOX_M0: u32 = 0xD251_1F53;
/// Philox round multiplier for counter word 2.
pub const PHILOX_M1: u32 = 0xCD9E_8D57;
/// Key bump (golden ratio) for key word 0.
pub const PHILOX_W0: u32 = 0x9E37_79B9;
/// Key bump (sqrt(3) - 1) for key word 1.
pub const PHILOX_W1: u32 = 0xBB67_AE85;

/// One Philox4x32-10 block: four 32-bit output words for a 128-bit counter and 64-bit key.
///
/// Words are 32-bit values held in [`Arith::U`] (for an `F64`-format `A`, in the low half of
/// each 64-bit integer; results are masked to 32 bits). Word 0 is the least significant word
/// of the counter, as in Random123 and TensorFlow.
#[inline(always)]
pub fn philox4x32_10<A: Arith>(a: &mut A, counter: [A::U; 4], key: [A::U; 2]) -> [A::U; 4] {
    let m0 = wconst(a, PHILOX_M0);
    let m1 = wconst(a, PHILOX_M1);
    let w0 = wconst(a, PHILOX_W0);
    let w1 = wconst(a, PHILOX_W1);
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k[0] = wadd(a, k[0], w0);
            k[1] = wadd(a, k[1], w1);
        }
        let (hi0, lo0) = wmul_hilo(a, m0, c[0]);
        let (hi1, lo1) = wmul_hilo(a, m1, c[2]);
        let t0 = a.xor(hi1, c[1]);
        let t0 = a.xor(t0, k[0]);
        let t2 = a.xor(hi0, c[3]);
        let t2 = a.xor(t2, k[1]);
        c = [t0, lo1, t2, lo0];
    }
    c
}

/// `counter + (hi·2^32 + lo)` as 128-bit integers (words least significant first), wrapping.
///
/// This is how output group `g` finds its block: `counter_add(base, g_lo, g_hi)`.
#[inline(always)]
pub fn counter_add<A: Arith>(a: &mut A, counter: [A::U; 4], lo: A::U, hi: A::U) -> [A::U; 4] {
    let (c0, k0) = wadd_carry(a, counter[0], lo);
    let (t1, ka) = wadd_carry(a, counter[1], hi);
    let (c1, kb) = wadd_carry(a, t1, k0);
    let k1 = a.or(ka, kb);
    let (c2, k2) = wadd_carry(a, counter[2], k1);
    let c3 = wadd(a, counter[3], k2);
    [c0, c1, c2, c3]
}

/// TensorFlow's `random::PhiloxRandom`: a 128-bit counter and a 64-bit key.
///
/// The host-side view of a Philox stream; the block for output group `g` is
/// [`PhiloxRandom::block`]`(g)`, i.e. Philox of `counter + g`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PhiloxRandom {
    /// Counter words, least significant first.
    pub counter: [u32; 4],
    /// Key words, low word first.
    pub key: [u32; 2],
}

impl PhiloxRandom {
    /// A stream with this counter and key.
    pub const fn new(counter: [u32; 4], key: [u32; 2]) -> Self {
        PhiloxRandom { counter, key }
    }

    /// The counter as one 128-bit integer.
    pub fn counter_u128(&self) -> u128 {
        let c = self.counter;
        u128::from(c[0])
            | (u128::from(c[1]) << 32)
            | (u128::from(c[2]) << 64)
            | (u128::from(c[3]) << 96)
    }

    /// The key as one 64-bit integer (`key[0] | key[1] << 32`).
    pub fn key_u64(&self) -> u64 {
        u64::from(self.key[0]) | (u64::from(self.key[1]) << 32)
    }

    /// The four words of block `counter + g` (128-bit wrapping add).
    #[inline]
    pub fn block(&self, g: u64) -> [u32; 4] {
        let c = split_u128(self.counter_u128().wrapping_add(u128::from(g)));
        philox4x32_10(&mut ScalarF32, c, self.key)
    }

    /// TensorFlow's `PhiloxRandom::Skip(count)`: advances the counter by `count` blocks.
    ///
    /// Reproduces TF bit for bit, including its carry quirk: when the low word overflows and
    /// the high half of `count` is `0xffff_ffff`, the carry into word 1 is lost.
    pub fn skip(&mut self, count: u64) {
        let count_lo = count as u32;
        let mut count_hi = (count >> 32) as u32;
        let c = &mut self.counter;
        c[0] = c[0].wrapping_add(count_lo);
        if c[0] < count_lo {
            count_hi = count_hi.wrapping_add(1);
        }
        c[1] = c[1].wrapping_add(count_hi);
        if c[1] < count_hi {
            c[2] = c[2].wrapping_add(1);
            if c[2] == 0 {
                c[3] = c[3].wrapping_add(1);
            }
        }
    }
}

/// A 128-bit integer as four words, least significant first.
pub(crate) fn split_u128(v: u128) -> [u32; 4] {
    [
        v as u32,
        (v >> 32) as u32,
        (v >> 64) as u32,
        (v >> 96) as u32,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::ScalarF64;

    #[test]
    fn counter_add_carries_like_u128() {
        let cases: [(u128, u64); 5] = [
            (0, 5),
            (0xffff_ffff, 1),
            (0xffff_ffff_ffff_ffff, 1),
            (u128::MAX, 2),
            (0x1234_5678_ffff_fff0_ffff_ffff_ffff_fff0, u64::MAX),
        ];
        for (c, g) in cases {
            let want = split_u128(c.wrapping_add(u128::from(g)));
            let got = counter_add(&mut ScalarF32, split_u128(c), g as u32, (g >> 32) as u32);
            assert_eq!(got, want, "{c:#x} + {g:#x}");
            let wide = split_u128(c).map(u64::from);
            let got64 = counter_add(&mut ScalarF64, wide, g & 0xffff_ffff, g >> 32);
            assert_eq!(got64, want.map(u64::from));
        }
    }

    #[test]
    fn f64_format_words_match_f32_format() {
        let c = [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344];
        let k = [0xa409_3822, 0x299f_31d0];
        let narrow = philox4x32_10(&mut ScalarF32, c, k);
        let wide = philox4x32_10(&mut ScalarF64, c.map(u64::from), k.map(u64::from));
        assert_eq!(wide, narrow.map(u64::from));
    }

    #[test]
    fn skip_adds_to_the_128_bit_counter() {
        let mut p = PhiloxRandom::new([0xffff_fff0, 0xffff_ffff, 7, 0], [0, 0]);
        p.skip(0x20);
        assert_eq!(p.counter, [0x10, 0, 8, 0]);
        let mut q = PhiloxRandom::new([1, 0, 0, 0], [0, 0]);
        q.skip(1536);
        assert_eq!(q.counter_u128(), 1537);
    }
}
