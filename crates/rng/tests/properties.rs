//! Property tests of the generic building blocks.

use kiln_math::{ScalarF32, ScalarF64};
use kiln_rng::{counter_add, philox4x32_10, stateless_normal, threefry2x32_20, PhiloxRandom};
use proptest::prelude::*;

fn words(v: u128) -> [u32; 4] {
    [
        v as u32,
        (v >> 32) as u32,
        (v >> 64) as u32,
        (v >> 96) as u32,
    ]
}

proptest! {
    #[test]
    fn counter_add_is_128_bit_addition(c in any::<u128>(), g in any::<u64>()) {
        let want = words(c.wrapping_add(u128::from(g)));
        prop_assert_eq!(counter_add(&mut ScalarF32, words(c), g as u32, (g >> 32) as u32), want);
        let wide = counter_add(&mut ScalarF64, words(c).map(u64::from), g & 0xffff_ffff, g >> 32);
        prop_assert_eq!(wide, want.map(u64::from));
    }

    #[test]
    fn generators_agree_in_both_word_widths(c in any::<[u32; 4]>(), k in any::<[u32; 2]>()) {
        let narrow = philox4x32_10(&mut ScalarF32, c, k);
        let wide = philox4x32_10(&mut ScalarF64, c.map(u64::from), k.map(u64::from));
        prop_assert_eq!(wide, narrow.map(u64::from));
        let narrow = threefry2x32_20(&mut ScalarF32, [c[0], c[1]], k);
        let wide = threefry2x32_20(&mut ScalarF64, [c[0], c[1]].map(u64::from), k.map(u64::from));
        prop_assert_eq!(wide, narrow.map(u64::from));
    }

    #[test]
    fn block_is_philox_of_the_offset_counter(c in any::<[u32; 4]>(), k in any::<[u32; 2]>(), g in any::<u64>()) {
        let p = PhiloxRandom::new(c, k);
        let ctr = words(p.counter_u128().wrapping_add(u128::from(g)));
        prop_assert_eq!(p.block(g), philox4x32_10(&mut ScalarF32, ctr, k));
    }

    #[test]
    fn stateless_outputs_are_prefix_stable(s0 in any::<i64>(), s1 in any::<i64>(), n in 0usize..600) {
        let long = stateless_normal(&[600], [s0, s1]).unwrap();
        let short = stateless_normal(&[n], [s0, s1]).unwrap();
        prop_assert_eq!(&long[..n], &short[..]);
        prop_assert!(long.iter().all(|x| x.is_finite()));
    }
}
