//! The host driver shared by all fills: fixed-size parallel tasks, SIMD-friendly batches.
//!
//! Output is cut into tasks of a fixed number of groups (never depending on the thread
//! count), each task into batches of [`LANES`] groups whose generator words are computed
//! structure-of-arrays, so the per-lane loops over the generic straight-line code
//! auto-vectorise. On x86-64 with AVX2 and FMA the batch loops are compiled a second time for them
//! and chosen at run time; both versions execute the same IEEE operations, so the bits are
//! identical.

// Lane loops index several structure-of-arrays buffers by lane; plain index loops are
// what LLVM vectorises most reliably.
#![allow(clippy::needless_range_loop)]

use kiln_math::ScalarF32;
use rayon::prelude::*;

use crate::philox::{philox4x32_10, split_u128, PhiloxRandom};
use crate::threefry::threefry2x32_20;

/// Groups per SIMD batch.
pub(crate) const LANES: usize = 64;
/// Groups per parallel task (a multiple of [`LANES`]).
const GROUPS_PER_TASK: usize = 64 * LANES;

/// Calls `f(first_group, chunk)` for consecutive chunks of `out` of `per_group * GROUPS_PER_TASK`
/// elements, in parallel.
pub(crate) fn par_groups<T: Send>(
    out: &mut [T],
    per_group: usize,
    f: impl Fn(u64, &mut [T]) + Sync + Send,
) {
    let task = per_group * GROUPS_PER_TASK;
    if out.len() <= task {
        f(0, out);
        return;
    }
    out.par_chunks_mut(task)
        .enumerate()
        .for_each(|(t, chunk)| f((t * GROUPS_PER_TASK) as u64, chunk));
}

/// Runs `f` compiled with AVX2 and FMA where the CPU has them (same bits, wider vectors:
/// `fma` is exactly rounded either way, but without the `fma` feature each one is a call to
/// the C library's `fmaf`, which also stops the loop from vectorising).
#[inline(always)]
pub(crate) fn with_best_simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { with_avx2_fma(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn with_avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Philox words of blocks `counter + stride · (g0 + l)` for `l < LANES`,
/// structure-of-arrays.
#[inline(always)]
pub(crate) fn philox_lanes(gen: &PhiloxRandom, g0: u64, stride: u32, w: &mut [[u32; LANES]; 4]) {
    let step = u128::from(stride);
    let base = gen.counter_u128().wrapping_add(u128::from(g0) * step);
    let c = split_u128(base);
    let key = gen.key;
    if u64::from(c[0]) + u64::from(stride) * LANES as u64 <= 1 << 32 {
        // Common case: only word 0 varies within the batch (a vectorisable loop).
        for l in 0..LANES {
            let c0 = c[0] + stride * l as u32;
            let b = philox4x32_10(&mut ScalarF32, [c0, c[1], c[2], c[3]], key);
            for (wi, bi) in w.iter_mut().zip(b) {
                wi[l] = bi;
            }
        }
    } else {
        for l in 0..LANES {
            let cl = split_u128(base.wrapping_add(l as u128 * step));
            let b = philox4x32_10(&mut ScalarF32, cl, key);
            for (wi, bi) in w.iter_mut().zip(b) {
                wi[l] = bi;
            }
        }
    }
}

/// Fills `out` with `per_group` outputs per Philox block: group `g` (elements
/// `per_group*g ..`) is `map(block(counter + g))`; a trailing partial group is truncated.
///
/// `map` gets the SoA words of [`LANES`] consecutive blocks and writes `per_group * LANES`
/// values in output order.
pub(crate) fn fill_philox<T: Copy + Default + Send>(
    gen: &PhiloxRandom,
    out: &mut [T],
    per_group: usize,
    map: impl Fn(&[[u32; LANES]; 4], &mut [T]) + Sync + Send,
) {
    par_groups(out, per_group, |g0, chunk| {
        with_best_simd(
            #[inline(always)]
            || {
                let mut w = [[0u32; LANES]; 4];
                let mut buf = vec![T::default(); per_group * LANES];
                for (i, sub) in chunk.chunks_mut(per_group * LANES).enumerate() {
                    philox_lanes(gen, g0 + (i * LANES) as u64, 1, &mut w);
                    if sub.len() == buf.len() {
                        map(&w, sub);
                    } else {
                        map(&w, &mut buf);
                        sub.copy_from_slice(&buf[..sub.len()]);
                    }
                }
            },
        )
    });
}

/// Fills `out[i]` with `map(threefry(key, (hi(i), lo(i))))` for the 64-bit flat index `i`
/// (JAX's partitionable counters), batch by batch.
pub(crate) fn fill_threefry<T: Copy + Default + Send>(
    key: [u32; 2],
    out: &mut [T],
    map: impl Fn(&[[u32; LANES]; 2], &mut [T]) + Sync + Send,
) {
    par_groups(out, 1, |i0, chunk| {
        with_best_simd(
            #[inline(always)]
            || {
                let mut w = [[0u32; LANES]; 2];
                let mut buf = [T::default(); LANES];
                for (b, sub) in chunk.chunks_mut(LANES).enumerate() {
                    let first = i0 + (b * LANES) as u64;
                    let (hi, lo) = ((first >> 32) as u32, first as u32);
                    if u64::from(lo) + LANES as u64 <= 1 << 32 {
                        for l in 0..LANES {
                            let r = threefry2x32_20(&mut ScalarF32, [hi, lo + l as u32], key);
                            w[0][l] = r[0];
                            w[1][l] = r[1];
                        }
                    } else {
                        for l in 0..LANES {
                            let i = first.wrapping_add(l as u64);
                            let r =
                                threefry2x32_20(&mut ScalarF32, [(i >> 32) as u32, i as u32], key);
                            w[0][l] = r[0];
                            w[1][l] = r[1];
                        }
                    }
                    if sub.len() == LANES {
                        map(&w, sub);
                    } else {
                        map(&w, &mut buf);
                        sub.copy_from_slice(&buf[..sub.len()]);
                    }
                }
            },
        )
    });
}
