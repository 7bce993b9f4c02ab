//! The float `max`/`min` of a whole row ([`extremum_f32`]), alone or fused with an
//! elementwise op over another row ([`scalar_extremum_f32`]): exact and order-free, so any
//! evaluation order gives the canonical order's bits (see [`crate::reduce`]).

use crate::hw::simd;
use crate::scalar::{fmax, fmin, Float};
use kiln_ir::ReduceKind;

/// The float max or min of `src` (`kind` `Max` or `Min`; `None` for the others), with
/// XLA's semantics (NaN if any element is NaN, -0 < +0; `-inf` / `+inf` when empty). Both
/// are exact and order-free, so the result has the bits of any evaluation order — the
/// canonical one included — and compiled kernels hand a whole row to it: 32 accumulators
/// that the AVX2 build (see `hw`) keeps in four 8-lane registers.
pub fn extremum_f32(kind: ReduceKind, src: &[f32]) -> Option<f32> {
    extremum(kind, src, f32::NEG_INFINITY, f32::INFINITY)
}

/// The `f64` version of [`extremum_f32`].
pub fn extremum_f64(kind: ReduceKind, src: &[f64]) -> Option<f64> {
    extremum(kind, src, f64::NEG_INFINITY, f64::INFINITY)
}

fn extremum<T: Float>(kind: ReduceKind, src: &[T], neg_inf: T, inf: T) -> Option<T> {
    match kind {
        ReduceKind::Max => Some(simd!({
            quick_extremum(src, neg_inf, |a, x| if a > x { a } else { x })
                .unwrap_or_else(|| fold_lanes(src, neg_inf, fmax::<T>))
        })),
        ReduceKind::Min => Some(simd!({
            quick_extremum(src, inf, |a, x| if a < x { a } else { x })
                .unwrap_or_else(|| fold_lanes(src, inf, fmin::<T>))
        })),
        ReduceKind::Sum | ReduceKind::Prod => None,
    }
}

/// [`crate::scalar_f32`] and [`extremum_f32`] in one pass: `out[i] = op(src[i], c)` (or
/// `op(out[i], c)` in place when `src` is `None`) while reducing `other` by `kind`, which
/// is returned. Bit for bit the two separate calls (each element of `out` is the same one
/// IEEE operation; the extremum is exact and order-free), but the two loops overlap: a
/// division is bound by the divider and a max over a row fresh from memory by loads, so
/// together they take little more than the slower of the two (the row-pipelined schedule
/// of compiled softmax: a row's division with the next row's max). `None`, with nothing
/// written, for an op outside [`crate::SCALAR_OPS`], a `kind` other than max or min, or
/// `src` and `out` of different lengths.
pub fn scalar_extremum_f32(
    op: kiln_ir::BinaryOp,
    src: Option<&[f32]>,
    c: f32,
    out: &mut [f32],
    kind: ReduceKind,
    other: &[f32],
) -> Option<f32> {
    scalar_extremum(
        op,
        src,
        c,
        out,
        kind,
        other,
        f32::NEG_INFINITY,
        f32::INFINITY,
    )
}

/// The `f64` version of [`scalar_extremum_f32`].
pub fn scalar_extremum_f64(
    op: kiln_ir::BinaryOp,
    src: Option<&[f64]>,
    c: f64,
    out: &mut [f64],
    kind: ReduceKind,
    other: &[f64],
) -> Option<f64> {
    scalar_extremum(
        op,
        src,
        c,
        out,
        kind,
        other,
        f64::NEG_INFINITY,
        f64::INFINITY,
    )
}

#[allow(clippy::too_many_arguments)]
fn scalar_extremum<T: Float>(
    op: kiln_ir::BinaryOp,
    src: Option<&[T]>,
    c: T,
    out: &mut [T],
    kind: ReduceKind,
    other: &[T],
    neg_inf: T,
    inf: T,
) -> Option<T> {
    if op != kiln_ir::BinaryOp::Div || src.is_some_and(|s| s.len() != out.len()) {
        return None;
    }
    let div = move |x: T| x / c;
    let quick = match kind {
        ReduceKind::Max => simd!(quick_extremum_with(
            src,
            out,
            div,
            other,
            neg_inf,
            |a, x| {
                if a > x {
                    a
                } else {
                    x
                }
            }
        )),
        ReduceKind::Min => simd!(quick_extremum_with(src, out, div, other, inf, |a, x| {
            if a < x {
                a
            } else {
                x
            }
        })),
        ReduceKind::Sum | ReduceKind::Prod => return None,
    };
    // The exact fold for the rare rows the quick one cannot decide (see `quick_extremum`).
    quick.or_else(|| extremum(kind, other, neg_inf, inf))
}

/// [`quick_extremum`] of `other` with `out[i] = f(src[i])` (or `f(out[i])`) in the same
/// loop, 32 elements of each per step; the longer of the two finishes alone.
#[inline(always)]
fn quick_extremum_with<T: Float>(
    src: Option<&[T]>,
    out: &mut [T],
    f: impl Fn(T) -> T + Copy,
    other: &[T],
    id: T,
    pick: impl Fn(T, T) -> T + Copy,
) -> Option<T> {
    let steps = out.len().min(other.len()) / 32;
    let (both, rest) = out.split_at_mut(steps * 32);
    let (pair, other_rest) = other.split_at(steps * 32);
    let start = ([id; 32], [T::ZERO; 32]);
    let (acc, probe) = match src {
        Some(src) => {
            let (src, src_rest) = src.split_at(steps * 32);
            for (o, &s) in rest.iter_mut().zip(src_rest) {
                *o = f(s);
            }
            paired_steps(start, both, Some(src), f, pair, pick)
        }
        None => {
            for o in rest.iter_mut() {
                *o = f(*o);
            }
            paired_steps(start, both, None, f, pair, pick)
        }
    };
    quick_finish(acc, probe, other_rest, id, pick)
}

/// The paired loop of [`quick_extremum_with`] over whole steps of 32: accumulators in and
/// out by value (in registers; updated in place across several loops, LLVM keeps them in
/// memory and turns the selects into masked stores).
#[inline(always)]
fn paired_steps<T: Float>(
    (mut acc, mut probe): ([T; 32], [T; 32]),
    out: &mut [T],
    src: Option<&[T]>,
    f: impl Fn(T) -> T + Copy,
    other: &[T],
    pick: impl Fn(T, T) -> T + Copy,
) -> ([T; 32], [T; 32]) {
    for (i, (o, x)) in out
        .chunks_exact_mut(32)
        .zip(other.chunks_exact(32))
        .enumerate()
    {
        acc = lanes(&acc, x, pick);
        probe = lanes(&probe, x, |p, x| p + x * T::ZERO);
        let y = match src {
            Some(s) => mapped(&s[i * 32..], f),
            None => mapped(o, f),
        };
        o.copy_from_slice(&y);
    }
    (acc, probe)
}

/// The end of [`quick_extremum`] from accumulators that have seen part of the sequence:
/// `rest` folded in, then the lanes.
#[inline(always)]
fn quick_finish<T: Float>(
    mut acc: [T; 32],
    mut probe: [T; 32],
    rest: &[T],
    id: T,
    pick: impl Fn(T, T) -> T + Copy,
) -> Option<T> {
    let mut chunks = rest.chunks_exact(32);
    for c in &mut chunks {
        acc = lanes(&acc, c, pick);
        probe = lanes(&probe, c, |p, x| p + x * T::ZERO);
    }
    for ((a, p), &x) in acc.iter_mut().zip(probe.iter_mut()).zip(chunks.remainder()) {
        *a = pick(*a, x);
        *p = *p + x * T::ZERO;
    }
    let finite = probe.into_iter().fold(T::ZERO, |s, p| s + p) == T::ZERO;
    let r = acc.into_iter().fold(id, pick);
    (finite && r != T::ZERO).then_some(r)
}

/// The extremum by the bare hardware comparison (`pick`: one `maxps`/`minps`), exact when
/// every element is finite and the result is not zero: it then has a single value, and
/// only ±0 have two encodings of one value. `None` otherwise (an infinity or NaN — found by
/// a running sum of `0 · x`, which is NaN from the first non-finite element on — or a zero
/// result); the caller then folds with XLA's `max`/`min`.
#[inline(always)]
fn quick_extremum<T: Float>(src: &[T], id: T, pick: impl Fn(T, T) -> T + Copy) -> Option<T> {
    quick_finish([id; 32], [T::ZERO; 32], src, id, pick)
}

#[inline(always)]
fn fold_lanes<T: Float>(src: &[T], id: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let mut acc = [id; 32];
    let mut chunks = src.chunks_exact(32);
    for c in &mut chunks {
        // A new array per step (not updates in place), so the accumulators stay in
        // registers: updating in place, LLVM turns the select into masked stores.
        acc = lanes(&acc, c, f);
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a = f(*a, x);
    }
    acc.into_iter().fold(id, f)
}

/// `[f(acc[0], c[0]), ..., f(acc[31], c[31])]` as a new array. Not `std::array::from_fn`:
/// that is an ordinary `#[inline]` function, which LLVM leaves out of line — compiled for
/// the baseline target, not `with_simd`'s — once the loop has several `with_simd` callers.
/// `[f(c[0]), ..., f(c[31])]` as a new array (see [`lanes`]).
#[inline(always)]
fn mapped<T: Copy>(c: &[T], f: impl Fn(T) -> T) -> [T; 32] {
    let c: &[T; 32] = c[..32].try_into().expect("32 elements");
    let mut out = *c;
    for (o, &x) in out.iter_mut().zip(c) {
        *o = f(x);
    }
    out
}

#[inline(always)]
fn lanes<T: Copy>(acc: &[T; 32], c: &[T], f: impl Fn(T, T) -> T) -> [T; 32] {
    let mut out = *acc;
    for ((o, &a), &x) in out.iter_mut().zip(acc).zip(&c[..32]) {
        *o = f(a, x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremum_matches_the_reduction_for_every_order_of_specials() {
        let specials = [
            0.0f32,
            -0.0,
            1.5,
            -2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3e38,
            1e-40,
        ];
        let mut state = 7u64;
        for n in [0usize, 1, 5, 31, 32, 33, 100, 1000] {
            for trial in 0..20 {
                let v: Vec<f32> = (0..n)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        specials[(state >> 33) as usize % specials.len()]
                    })
                    .collect();
                let mut v = v;
                if trial % 5 == 4 && n > 0 {
                    v[(state >> 20) as usize % n] = f32::NAN;
                }
                for (kind, id) in [
                    (ReduceKind::Max, f32::NEG_INFINITY),
                    (ReduceKind::Min, f32::INFINITY),
                ] {
                    let f = if kind == ReduceKind::Max {
                        fmax::<f32>
                    } else {
                        fmin::<f32>
                    };
                    let want = v.iter().fold(id, |a, &b| f(a, b));
                    let got = extremum_f32(kind, &v).expect("max and min");
                    assert_eq!(got.to_bits(), want.to_bits(), "{kind:?} of {v:?}");
                }
            }
        }
        // Zero results: the sign depends on which zeros are present, not on their order.
        for n in [2usize, 33, 100] {
            for lead in [0.0f32, -0.0] {
                let mut v: Vec<f32> = (0..n)
                    .map(|i| if i % 3 == 0 { -0.0 } else { -2.0 })
                    .collect();
                v[n / 2] = lead;
                let max = v.iter().fold(f32::NEG_INFINITY, |a, &b| fmax(a, b));
                assert_eq!(
                    extremum_f32(ReduceKind::Max, &v).map(f32::to_bits),
                    Some(max.to_bits())
                );
                let w: Vec<f32> = v.iter().map(|x| -x).collect();
                let min = w.iter().fold(f32::INFINITY, |a, &b| fmin(a, b));
                assert_eq!(
                    extremum_f32(ReduceKind::Min, &w).map(f32::to_bits),
                    Some(min.to_bits())
                );
            }
        }
        assert_eq!(extremum_f32(ReduceKind::Sum, &[1.0]), None);
        let w = [1.0f64, -0.0, 0.0, -7.5];
        assert_eq!(extremum_f64(ReduceKind::Max, &w), Some(1.0));
        assert_eq!(
            extremum_f64(ReduceKind::Min, &w).map(f64::to_bits),
            Some((-7.5f64).to_bits())
        );
    }

    #[test]
    fn scalar_extremum_is_the_two_separate_calls_bit_for_bit() {
        use crate::{scalar_f32, scalar_f64};
        use kiln_ir::BinaryOp;
        let specials = [
            0.0f32,
            -0.0,
            1.5,
            -2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            3e38,
            1e-40,
            -7.25,
        ];
        let mut state = 11u64;
        let mut next = |ordinary: bool| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = (state >> 33) as usize;
            if ordinary || !pick.is_multiple_of(7) {
                (pick % 2001) as f32 * 0.37 - 370.0
            } else {
                specials[pick / 7 % specials.len()]
            }
        };
        // Lengths on both sides of a step of 32, equal and unequal in both directions (the
        // longer one finishes alone); rows with and without specials, and all-zero rows,
        // which the quick extremum cannot decide.
        let lengths = [0usize, 1, 7, 31, 32, 33, 64, 100, 257, 1024];
        for (i, &n) in lengths.iter().enumerate() {
            for &m in &lengths[i.saturating_sub(2)..(i + 3).min(lengths.len())] {
                for trial in 0..6 {
                    let src: Vec<f32> = (0..n).map(|_| next(trial % 2 == 0)).collect();
                    let other: Vec<f32> = match trial {
                        5 => vec![0.0; m],
                        _ => (0..m).map(|_| next(trial % 3 == 0)).collect(),
                    };
                    let c = next(false);
                    for kind in [ReduceKind::Max, ReduceKind::Min] {
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        let mut want = vec![0.0; n];
                        assert!(scalar_f32(BinaryOp::Div, Some(&src), c, &mut want));
                        let want_e = extremum_f32(kind, &other).map(f32::to_bits);
                        let mut out = vec![0.0; n];
                        let got = scalar_extremum_f32(
                            BinaryOp::Div,
                            Some(&src),
                            c,
                            &mut out,
                            kind,
                            &other,
                        );
                        let case = format!("{kind:?}, {n} and {m} elements, trial {trial}");
                        assert_eq!(got.map(f32::to_bits), want_e, "{case}");
                        assert_eq!(bits(&out), bits(&want), "{case}");
                        let mut inplace = src.clone();
                        let got =
                            scalar_extremum_f32(BinaryOp::Div, None, c, &mut inplace, kind, &other);
                        assert_eq!(got.map(f32::to_bits), want_e, "{case}, in place");
                        assert_eq!(bits(&inplace), bits(&want), "{case}, in place");
                        // f64: the same values widened.
                        let w = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
                        let (src, other) = (w(&src), w(&other));
                        let mut want = vec![0.0; n];
                        assert!(scalar_f64(BinaryOp::Div, Some(&src), c.into(), &mut want));
                        let mut out = vec![0.0; n];
                        let got = scalar_extremum_f64(
                            BinaryOp::Div,
                            Some(&src),
                            c.into(),
                            &mut out,
                            kind,
                            &other,
                        );
                        assert_eq!(
                            got.map(f64::to_bits),
                            extremum_f64(kind, &other).map(f64::to_bits),
                            "{case}, f64"
                        );
                        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&out), bits(&want), "{case}, f64");
                    }
                }
            }
        }
    }

    #[test]
    fn scalar_extremum_refuses_other_ops_kinds_and_lengths() {
        use kiln_ir::BinaryOp;
        let mut out = [5.0f32; 4];
        let other = [1.0f32, 2.0];
        let f = scalar_extremum_f32;
        assert_eq!(
            f(BinaryOp::Mul, None, 2.0, &mut out, ReduceKind::Max, &other),
            None
        );
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Sum, &other),
            None
        );
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Prod, &other),
            None
        );
        let short = [1.0f32; 3];
        assert_eq!(
            f(
                BinaryOp::Div,
                Some(&short),
                2.0,
                &mut out,
                ReduceKind::Max,
                &other
            ),
            None
        );
        assert_eq!(out, [5.0; 4], "nothing written");
        assert_eq!(
            f(BinaryOp::Div, None, 2.0, &mut out, ReduceKind::Max, &other),
            Some(2.0)
        );
        assert_eq!(out, [2.5; 4]);
    }
}
