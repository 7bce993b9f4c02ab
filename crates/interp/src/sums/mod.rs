//! Canonical `f32` sums (design.md's Invariant 2, [`crate::reduce`]) for compiled kernels'
//! host calls: a row of a buffer summed in one call (its `f32`s, the exact widenings of
//! its 16-bit floats, or the squares of its differences from one value — of `f32`s, or of
//! 16-bit floats with or without each op's rounding), and a block of summands folded into
//! a caller's 32 lane accumulators.
//!
//! Each is the canonical order itself — element `i` into lane `i mod 32` in index order,
//! then the fixed tree; chunks of [`CHUNK`] reduced so and their partials combined the same
//! way — on 512-bit vectors where the CPU has AVX-512F, else 256-bit ones where it has AVX2
//! (`simd`: the 32 lanes are two or four accumulators), so a kernel's emitted four-lane loop
//! and these calls give the same bits. (Sixteen lanes whatever
//! `--xla_cpu_prefer_vector_width` says, as the 16-bit roundings' `crate::half_binary`.)
//! The summand is computed exactly as the kernel's nodes compute it: the widening is exact,
//! and `(x - c)²` is the IEEE subtraction, then the IEEE product (never fused), each
//! rounded to the 16-bit format by `kiln_math::float16`'s rule where the kernel rounds it.

use crate::reduce::{CHUNK, LANES, TREE};
use kiln_math::float16::{round_f32, to_f32, Half};
use simd::{vector_blocks, whole_blocks};

mod simd;

/// A row [`sum_row`] sums.
#[derive(Debug, Clone, Copy)]
pub enum SumRow<'a> {
    /// The `f32`s themselves.
    F32(&'a [f32]),
    /// The exact `f32` of each 16-bit float of this format.
    Half(Half, &'a [u16]),
    /// `(x - c) * (x - c)` of each `x`, with this `c` (a variance's summand).
    ShiftedSquare(&'a [f32], f32),
    /// `(x - c) * (x - c)` of the exact `f32` of each 16-bit float `x` of this format, with
    /// this `c`, the ops [`SquareRounding`] says rounded to the format.
    HalfShiftedSquare {
        /// The format of `xs`, and of the roundings.
        h: Half,
        /// The 16-bit floats.
        xs: &'a [u16],
        /// The value subtracted.
        c: f32,
        /// Which ops' results are rounded to `h`.
        rounded: SquareRounding,
    },
}

/// Which ops of a 16-bit shifted square `(x - c)²` are rounded to the 16-bit format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SquareRounding {
    /// Neither: both in `f32` (`--xla_allow_excess_precision`).
    Neither,
    /// The difference; the square is `f32` — a `bf16` square converted straight to `f32`,
    /// as XLA:CPU computes `jnp.mean(d * d)` (`kiln_ir::Op::bf16_result_computed_in_f32`).
    Difference,
    /// The difference, then the square (every op's result 16-bit: Kiln's default).
    Both,
}

impl SquareRounding {
    /// Whether the difference is rounded.
    pub fn difference(self) -> bool {
        self != SquareRounding::Neither
    }
    /// Whether the square is rounded.
    pub fn square(self) -> bool {
        self == SquareRounding::Both
    }
}

/// The canonical sum (identity `+0.0`) of the summands of `row`, in index order.
pub fn sum_row(row: SumRow) -> f32 {
    let n = match row {
        SumRow::F32(xs) | SumRow::ShiftedSquare(xs, _) => xs.len(),
        SumRow::Half(_, xs) | SumRow::HalfShiftedSquare { xs, .. } => xs.len(),
    };
    if n <= CHUNK {
        if let Some(r) = whole_blocks(row, n) {
            return r;
        }
        let mut p = [0f32; LANES];
        accumulate(&mut p, row, 0, n);
        return tree(p, n);
    }
    let partials: Vec<f32> = (0..n)
        .step_by(CHUNK)
        .map(|c0| {
            let mut p = [0f32; LANES];
            accumulate(&mut p, row, c0, (c0 + CHUNK).min(n));
            tree(p, (n - c0).min(CHUNK))
        })
        .collect();
    sum_row(SumRow::F32(&partials))
}

/// Folds `xs` into the lane accumulators `acc`: `acc[i mod 32] += xs[i]` in index order —
/// one window of a canonical sum whose first element is at a multiple of 32 in its chunk.
pub fn sum_into_lanes(acc: &mut [f32; LANES], xs: &[f32]) {
    accumulate(acc, SumRow::F32(xs), 0, xs.len());
}

/// `p[(i - i0) mod 32] += summand(i)` for `i` in `i0..i1`, in index order: whole blocks of 32
/// in vectors (`simd`), the rest one by one.
fn accumulate(p: &mut [f32; LANES], row: SumRow, i0: usize, i1: usize) {
    let done = i0 + vector_blocks(p, row, i0, (i1 - i0) / LANES) * LANES;
    for i in done..i1 {
        p[(i - i0) % LANES] += summand(row, i);
    }
}

/// Summand `i` of `row`: the same operations as the vector loop's.
#[inline(always)]
fn summand(row: SumRow, i: usize) -> f32 {
    match row {
        SumRow::F32(xs) => xs[i],
        SumRow::Half(h, xs) => to_f32(xs[i], h),
        SumRow::ShiftedSquare(xs, c) => {
            let d = xs[i] - c;
            d * d
        }
        SumRow::HalfShiftedSquare { h, xs, c, rounded } => {
            let round = |v: f32, r: bool| if r { round_f32(v, h) } else { v };
            let d = round(to_f32(xs[i], h) - c, rounded.difference());
            round(d * d, rounded.square())
        }
    }
}

/// The canonical tree over the lanes of a sequence of `len` elements.
fn tree(mut p: [f32; LANES], len: usize) -> f32 {
    let mut live = len.min(LANES);
    for s in TREE {
        // Lanes at or past `live` hold `+0.0`, and `x + 0.0 = x` for every lane value
        // (a lane that started at `+0.0` is never `-0.0`): skipping them changes nothing.
        for j in 0..s.min(live.saturating_sub(s)) {
            p[j] += p[j + s];
        }
        live = live.min(s);
    }
    p[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical_reduce_ref;

    fn reference(xs: &[f32]) -> f32 {
        canonical_reduce_ref(xs, 0.0f32, |a, b| a + b)
    }

    /// Values whose sums depend on the order: magnitudes over many binades, signed zeros,
    /// subnormals.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                match i % 11 {
                    0 => -0.0,
                    1 => f32::from_bits(s & 0x807f_ffff), // subnormal
                    _ => {
                        let m = (s >> 9) as f32 / (1u32 << 23) as f32 - 0.5;
                        m * 2f32.powi((s % 40) as i32 - 20)
                    }
                }
            })
            .collect()
    }

    const LENGTHS: [usize; 14] = [
        0, 1, 5, 31, 32, 33, 63, 100, 511, 512, 1024, 4095, 4097, 9001,
    ];

    #[test]
    fn f32_rows_are_the_canonical_sum() {
        for (t, &n) in LENGTHS.iter().enumerate() {
            let xs = values(n, t as u32);
            let got = sum_row(SumRow::F32(&xs));
            assert_eq!(got.to_bits(), reference(&xs).to_bits(), "n={n}");
        }
        // A sum of negative zeros is +0.0, as XLA's.
        assert_eq!(sum_row(SumRow::F32(&[-0.0; 40])).to_bits(), 0);
    }

    #[test]
    fn half_rows_sum_their_exact_widenings() {
        for h in [Half::Bf16, Half::F16] {
            for (t, &n) in LENGTHS.iter().enumerate() {
                let bits: Vec<u16> = values(n, 7 + t as u32)
                    .iter()
                    .enumerate()
                    // Finite patterns of every exponent (no NaN: its payload is not
                    // promised), infinities excluded so the sums stay finite.
                    .map(|(i, x)| (x.to_bits() as u16 ^ (i as u16).wrapping_mul(40503)) & 0xbbff)
                    .collect();
                let wide: Vec<f32> = bits.iter().map(|&b| to_f32(b, h)).collect();
                let got = sum_row(SumRow::Half(h, &bits));
                assert_eq!(got.to_bits(), reference(&wide).to_bits(), "{h:?} n={n}");
            }
        }
    }

    #[test]
    fn shifted_squares_are_rounded_twice_then_summed() {
        for (t, &n) in LENGTHS.iter().enumerate() {
            let xs = values(n, 99 + t as u32);
            let c = 0.3125 + t as f32 * 1e-3;
            let squares: Vec<f32> = xs.iter().map(|&x| (x - c) * (x - c)).collect();
            let got = sum_row(SumRow::ShiftedSquare(&xs, c));
            assert_eq!(got.to_bits(), reference(&squares).to_bits(), "n={n}");
        }
    }

    const ROUNDINGS: [SquareRounding; 3] = [
        SquareRounding::Both,
        SquareRounding::Difference,
        SquareRounding::Neither,
    ];

    #[test]
    fn half_shifted_squares_are_the_rule_then_the_canonical_sum() {
        // Every 16-bit pattern of both formats somewhere in the rows (NaNs with payloads,
        // signalling ones too, infinities, subnormals), shifted by values that make the
        // differences round, tie, overflow and underflow; each summand by the rule.
        let all: Vec<u16> = (0..=u16::MAX).map(|i| i.wrapping_mul(40503)).collect();
        for h in [Half::Bf16, Half::F16] {
            for rounded in ROUNDINGS {
                let round = |v: f32, r: bool| if r { round_f32(v, h) } else { v };
                for (t, &c) in [0.3125f32, -1.0e-3, 3.0e4, 1.0e-40, 0.0].iter().enumerate() {
                    let lengths = LENGTHS.iter().copied().chain([all.len()]);
                    for (u, n) in lengths.enumerate() {
                        let start = (t * 7919 + u * 104_729) % (all.len() - n.min(all.len()) + 1);
                        let xs = &all[start..start + n];
                        let squares: Vec<f32> = xs
                            .iter()
                            .map(|&x| {
                                let d = round(to_f32(x, h) - c, rounded.difference());
                                round(d * d, rounded.square())
                            })
                            .collect();
                        let row = SumRow::HalfShiftedSquare { h, xs, c, rounded };
                        let got = sum_row(row);
                        let want = reference(&squares);
                        // Which NaN a sum of several returns is not promised
                        // (docs/determinism.md); one NaN's bits are, below.
                        assert!(
                            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                            "{h:?} rounded={rounded:?} c={c} n={n}: {got} {want}"
                        );
                        // The same summands folded into the lanes window by window (96
                        // elements: each starts at a multiple of 32, at lane 0).
                        if n <= CHUNK {
                            let mut p = [0f32; LANES];
                            for w in (0..n).step_by(96) {
                                let part = SumRow::HalfShiftedSquare {
                                    h,
                                    xs: &xs[w..(w + 96).min(n)],
                                    c,
                                    rounded,
                                };
                                accumulate(&mut p, part, 0, (n - w).min(96));
                            }
                            let t = tree(p, n);
                            assert!(
                                t.to_bits() == want.to_bits() || t.is_nan() && want.is_nan(),
                                "windows n={n}"
                            );
                        }
                    }
                }
            }
        }
        // One NaN in a finite row, signalling with a payload: its bits come through.
        for h in [Half::Bf16, Half::F16] {
            for rounded in ROUNDINGS {
                let mut xs: Vec<u16> = (0..700u16).map(|i| i.wrapping_mul(331) & 0x3bff).collect();
                xs[333] = match h {
                    Half::Bf16 => 0xff81,
                    Half::F16 => 0xfd01,
                };
                let squares: Vec<f32> = xs
                    .iter()
                    .map(|&x| {
                        let round = |v: f32, r: bool| if r { round_f32(v, h) } else { v };
                        let d = round(to_f32(x, h) - 0.5, rounded.difference());
                        round(d * d, rounded.square())
                    })
                    .collect();
                let got = sum_row(SumRow::HalfShiftedSquare {
                    h,
                    xs: &xs,
                    c: 0.5,
                    rounded,
                });
                assert!(got.is_nan());
                assert_eq!(
                    got.to_bits(),
                    reference(&squares).to_bits(),
                    "{h:?} {rounded:?}"
                );
            }
        }
        // A NaN shift on a finite row: every summand is that NaN, quieted, its low half
        // cleared when rounded — a `bf16`'s NaN (the five-instruction rounding) and one with
        // payload bits in the low half (the rule's NaN handling) alike.
        for c in [f32::from_bits(0xff90_0000), f32::from_bits(0x7fbf_ffff)] {
            for rounded in ROUNDINGS {
                let xs: Vec<u16> = (0..700u16).map(|i| i.wrapping_mul(331) & 0x3f7f).collect();
                let round = |v: f32, r: bool| if r { round_f32(v, Half::Bf16) } else { v };
                let squares: Vec<f32> = xs
                    .iter()
                    .map(|&x| {
                        let d = round(to_f32(x, Half::Bf16) - c, rounded.difference());
                        round(d * d, rounded.square())
                    })
                    .collect();
                let h = Half::Bf16;
                let got = sum_row(SumRow::HalfShiftedSquare {
                    h,
                    xs: &xs,
                    c,
                    rounded,
                });
                let want = reference(&squares);
                assert!(got.is_nan());
                assert_eq!(got.to_bits(), want.to_bits(), "{c} {rounded:?}");
            }
        }
        // Finite rows: the sums are numbers, and rounding changes them.
        let xs: Vec<u16> = (0..1024u16).map(|i| 0x3f80 + (i % 97)).collect();
        let row = |rounded| SumRow::HalfShiftedSquare {
            h: Half::Bf16,
            xs: &xs,
            c: 1.1,
            rounded,
        };
        let [r, d, e] = ROUNDINGS.map(|r| sum_row(row(r)));
        assert!(
            r.is_finite() && d.is_finite() && e.is_finite(),
            "{r} {d} {e}"
        );
        assert!(r != e && d != e && r != d, "{r} {d} {e}");
    }

    #[test]
    fn windows_fold_into_the_lanes_of_the_canonical_order() {
        // A chunk of 1536 elements summed as three windows of 512 into one set of lanes,
        // then the tree: the canonical sum of the chunk.
        let xs = values(1536, 3);
        let mut p = [0f32; LANES];
        for w in xs.chunks(512) {
            sum_into_lanes(&mut p, w);
        }
        assert_eq!(tree(p, xs.len()).to_bits(), reference(&xs).to_bits());
        // Lanes that already hold values keep accumulating in index order.
        let mut q = [1.5f32; LANES];
        sum_into_lanes(&mut q, &xs[..64]);
        for (l, &v) in q.iter().enumerate() {
            assert_eq!(
                v.to_bits(),
                (1.5f32 + xs[l] + xs[l + 32]).to_bits(),
                "lane {l}"
            );
        }
    }

    #[test]
    fn infinities_and_nans_propagate() {
        let mut xs = values(700, 5);
        xs[300] = f32::INFINITY;
        assert_eq!(sum_row(SumRow::F32(&xs)), f32::INFINITY);
        xs[301] = f32::NEG_INFINITY;
        assert!(sum_row(SumRow::F32(&xs)).is_nan());
        // An f16 row whose later blocks hold an infinity and a signalling NaN: the blocks
        // from the first of them on are widened by the rule, so the bits are the
        // reference's, NaN payload included.
        let mut h: Vec<u16> = (0..300u16).map(|i| i.wrapping_mul(331) & 0x3bff).collect();
        let wide = |h: &[u16]| -> Vec<f32> { h.iter().map(|&b| to_f32(b, Half::F16)).collect() };
        h[100] = 0x7c00;
        let got = sum_row(SumRow::Half(Half::F16, &h));
        assert_eq!(got.to_bits(), reference(&wide(&h)).to_bits());
        h[100] = 0x3c00;
        h[250] = 0x7d01;
        let got = sum_row(SumRow::Half(Half::F16, &h));
        assert!(got.is_nan());
        assert_eq!(got.to_bits(), reference(&wide(&h)).to_bits());
        let bits = vec![0x7fc0u16; 40];
        assert!(sum_row(SumRow::Half(Half::Bf16, &bits)).is_nan());
        assert!(sum_row(SumRow::Half(Half::F16, &[0x7e00; 3])).is_nan());
    }
}
