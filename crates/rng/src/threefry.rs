//! ThreeFry2x32-20 (Salmon et al., SC 2011), written once over [`Arith`]: the block function
//! JAX's default PRNG is built on.
//!
//! Straight-line code: twenty add/rotate/xor rounds with a key injection after every four.
//! It reproduces the Random123 known-answer vectors (`tests/kat.rs`).

use kiln_math::Arith;

use crate::words::{wadd, wconst, wrotl};

/// Rotation amounts of ThreeFry-2x32, rounds 1–8 (then repeating).
pub const THREEFRY_ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
/// Key-schedule parity constant of ThreeFry-2x32.
pub const THREEFRY_PARITY: u32 = 0x1BD1_1BDA;

/// One ThreeFry2x32-20 block: two 32-bit output words for a 64-bit counter and key.
///
/// Words are 32-bit values held in [`Arith::U`] (masked for an `F64`-format `A`).
#[inline(always)]
pub fn threefry2x32_20<A: Arith>(a: &mut A, counter: [A::U; 2], key: [A::U; 2]) -> [A::U; 2] {
    let parity = wconst(a, THREEFRY_PARITY);
    let k2 = a.xor(key[0], key[1]);
    let k2 = a.xor(k2, parity);
    let ks = [key[0], key[1], k2];
    let mut x0 = wadd(a, counter[0], ks[0]);
    let mut x1 = wadd(a, counter[1], ks[1]);
    for group in 0..5usize {
        for r in 0..4 {
            x0 = wadd(a, x0, x1);
            x1 = wrotl(a, x1, THREEFRY_ROTATIONS[(group % 2) * 4 + r]);
            x1 = a.xor(x1, x0);
        }
        let i = group + 1;
        x0 = wadd(a, x0, ks[i % 3]);
        x1 = wadd(a, x1, ks[(i + 1) % 3]);
        let inj = wconst(a, i as u32);
        x1 = wadd(a, x1, inj);
    }
    [x0, x1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::{ScalarF32, ScalarF64};

    #[test]
    fn f64_format_words_match_f32_format() {
        let c = [0x243f_6a88, 0x85a3_08d3];
        let k = [0x1319_8a2e, 0x0370_7344];
        let narrow = threefry2x32_20(&mut ScalarF32, c, k);
        let wide = threefry2x32_20(&mut ScalarF64, c.map(u64::from), k.map(u64::from));
        assert_eq!(wide, narrow.map(u64::from));
        assert_eq!(narrow, [0xc492_3a9c, 0x483d_f7a0]);
    }
}
