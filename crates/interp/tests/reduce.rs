//! Reductions: hand-computed cases for every kind and dtype class, and property tests that
//! the interpreter's fast paths compute exactly the canonical order of
//! `kiln_interp::canonical_reduce_ref` (bit for bit, NaN payloads aside) for random shapes,
//! axes and values, independently of the thread count (1, 2 and 7 threads).

mod common;
use common::*;
use kiln_interp::reduce::{CHUNK, LANES};
use kiln_interp::{canonical_reduce_ref, Interpreter};
use kiln_ir::{Buffer, DType, Op, ReduceKind, Tensor, TensorType};
use proptest::prelude::*;
use std::sync::LazyLock;

fn red(kind: ReduceKind, a: &Tensor, axes: &[usize]) -> Tensor {
    let shape: Vec<usize> = (0..a.shape().len())
        .filter(|i| !axes.contains(i))
        .map(|i| a.shape()[i])
        .collect();
    eval(
        Op::Reduce {
            kind,
            axes: axes.to_vec(),
        },
        &[a],
        a.dtype(),
        &shape,
    )
}

#[test]
fn reduce_sum() {
    let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_bits(&red(ReduceKind::Sum, &a, &[1]), &f32s(&[2], &[6.0, 15.0]));
    assert_bits(
        &red(ReduceKind::Sum, &a, &[0]),
        &f32s(&[3], &[5.0, 7.0, 9.0]),
    );
    assert_bits(&red(ReduceKind::Sum, &a, &[0, 1]), &f32s(&[], &[21.0]));
    assert_bits(&red(ReduceKind::Sum, &a, &[]), &a);
    // XLA's init value +0.0: a sum of -0.0s is +0.0 (as in XLA, TF and JAX), and so is an
    // empty sum (everywhere); one element over a size-1 axis, too.
    assert_bits(
        &red(ReduceKind::Sum, &f32s(&[3], &[-0.0; 3]), &[0]),
        &f32s(&[], &[0.0]),
    );
    assert_bits(
        &red(ReduceKind::Sum, &f64s(&[2, 0], &[]), &[1]),
        &f64s(&[2], &[0.0, 0.0]),
    );
    assert_bits(
        &red(ReduceKind::Sum, &f32s(&[2, 1], &[-0.0, -2.0]), &[1]),
        &f32s(&[2], &[0.0, -2.0]),
    );
    assert_bits(
        &red(ReduceKind::Sum, &i32s(&[2], &[i32::MAX, 1]), &[0]),
        &i32s(&[], &[i32::MIN]),
    );
    assert_bits(
        &red(ReduceKind::Sum, &i64s(&[0], &[]), &[0]),
        &i64s(&[], &[0]),
    );
    assert_bits(
        &red(ReduceKind::Sum, &u32s(&[2], &[u32::MAX, 2]), &[0]),
        &u32s(&[], &[1]),
    );
}

#[test]
fn reduce_prod() {
    let a = f64s(&[2, 2], &[2.0, 3.0, -1.0, 0.5]);
    assert_bits(&red(ReduceKind::Prod, &a, &[1]), &f64s(&[2], &[6.0, -0.5]));
    assert_bits(
        &red(ReduceKind::Prod, &f32s(&[0], &[]), &[0]),
        &f32s(&[], &[1.0]),
    );
    assert_bits(
        &red(ReduceKind::Prod, &i32s(&[3], &[65536, 65536, 3]), &[0]),
        &i32s(&[], &[0]),
    );
    assert_bits(
        &red(ReduceKind::Prod, &i64s(&[2], &[-3, 4]), &[0]),
        &i64s(&[], &[-12]),
    );
    assert_bits(
        &red(ReduceKind::Prod, &u32s(&[0], &[]), &[0]),
        &u32s(&[], &[1]),
    );
}

#[test]
fn reduce_max() {
    let a = f32s(&[2, 3], &[1.0, f32::NAN, 3.0, -0.0, 0.0, -1.0]);
    let r = red(ReduceKind::Max, &a, &[1]);
    assert!(r.as_f32().unwrap()[0].is_nan());
    assert_eq!(r.as_f32().unwrap()[1].to_bits(), 0.0f32.to_bits());
    assert_bits(
        &red(ReduceKind::Max, &f32s(&[2], &[-0.0, -0.0]), &[0]),
        &f32s(&[], &[-0.0]),
    );
    assert_bits(
        &red(ReduceKind::Max, &f64s(&[0], &[]), &[0]),
        &f64s(&[], &[f64::NEG_INFINITY]),
    );
    assert_bits(
        &red(ReduceKind::Max, &i32s(&[0], &[]), &[0]),
        &i32s(&[], &[i32::MIN]),
    );
    assert_bits(
        &red(ReduceKind::Max, &i64s(&[3], &[-5, 9, 2]), &[0]),
        &i64s(&[], &[9]),
    );
    assert_bits(
        &red(ReduceKind::Max, &u32s(&[2], &[7, u32::MAX]), &[0]),
        &u32s(&[], &[u32::MAX]),
    );
    assert_bits(
        &red(
            ReduceKind::Max,
            &bools(&[2, 2], &[false, true, false, false]),
            &[1],
        ),
        &bools(&[2], &[true, false]),
    );
    assert_bits(
        &red(ReduceKind::Max, &bools(&[0], &[]), &[0]),
        &bools(&[], &[false]),
    );
}

#[test]
fn reduce_min() {
    let a = f32s(&[2, 3], &[1.0, 2.0, f32::NAN, 0.0, -0.0, 5.0]);
    let r = red(ReduceKind::Min, &a, &[1]);
    assert!(r.as_f32().unwrap()[0].is_nan());
    assert_eq!(r.as_f32().unwrap()[1].to_bits(), (-0.0f32).to_bits());
    assert_bits(
        &red(ReduceKind::Min, &f64s(&[0], &[]), &[0]),
        &f64s(&[], &[f64::INFINITY]),
    );
    assert_bits(
        &red(ReduceKind::Min, &i32s(&[3], &[-5, 9, 2]), &[0]),
        &i32s(&[], &[-5]),
    );
    assert_bits(
        &red(ReduceKind::Min, &i64s(&[0], &[]), &[0]),
        &i64s(&[], &[i64::MAX]),
    );
    assert_bits(
        &red(ReduceKind::Min, &u32s(&[0], &[]), &[0]),
        &u32s(&[], &[u32::MAX]),
    );
    assert_bits(
        &red(
            ReduceKind::Min,
            &bools(&[2, 2], &[true, true, false, true]),
            &[1],
        ),
        &bools(&[2], &[true, false]),
    );
    assert_bits(
        &red(ReduceKind::Min, &bools(&[0], &[]), &[0]),
        &bools(&[], &[true]),
    );
}

#[test]
fn bool_sum_is_an_error() {
    let e = eval_ty(
        Op::Reduce {
            kind: ReduceKind::Sum,
            axes: vec![0],
        },
        &[&bools(&[1], &[true])],
        TensorType::scalar(DType::Bool),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "reduce_sum: cannot reduce_sum a bool tensor");
}

#[test]
fn canonical_order_is_the_documented_one() {
    assert_eq!((LANES, CHUNK), (32, 4096));
    // 2^24 + 1 + 1: lane-striped, the two ones land in different lanes and survive the
    // tree only as 2^24 + 2 when added to each other first.
    let mut xs = vec![0.0f32; 64];
    xs[0] = 16_777_216.0; // lane 0
    xs[1] = 1.0; // lane 1
    xs[33] = 1.0; // lane 1 again: lane 1 = 2
    let sum = |a: f32, b: f32| a + b;
    assert_eq!(canonical_reduce_ref(&xs, 0.0, sum), 16_777_218.0);
    let r = red(ReduceKind::Sum, &f32s(&[64], &xs), &[0]);
    assert_eq!(r.as_f32().unwrap()[0], 16_777_218.0);
    // Across chunks: the partials [2^24, 1, 1] sit in lanes 0, 1, 2 of the next level; the
    // tree adds lane 2 to lane 0 (s = 2), then lane 1 (s = 1), and each 1 rounds away.
    let mut ys = vec![0.0f32; 2 * CHUNK + 1];
    ys[0] = 16_777_216.0;
    ys[CHUNK] = 1.0;
    ys[2 * CHUNK] = 1.0;
    assert_eq!(
        canonical_reduce_ref(&ys, 0.0, sum),
        16_777_216.0 + 0.0 + 0.0
    );
}

// ---- property tests -------------------------------------------------------------------

static POOLS: LazyLock<[Interpreter; 3]> =
    LazyLock::new(|| [1, 2, 7].map(|t| Interpreter::new(t).expect("pool")));

/// Deterministic pseudo-random values with a given density of specials (NaN, ±0, ±inf).
fn values(n: usize, seed: u64, specials: u32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let r = (s >> 11) as u32;
            if r % 1000 < specials {
                [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY][(r / 1000 % 5) as usize]
            } else {
                // Magnitudes over many binades so that association matters.
                let mant = (r % 100_000) as f32 / 50_000.0 - 1.0;
                mant * [1.0, 1e-3, 1e3, 1e7][(r / 100_000 % 4) as usize]
            }
        })
        .collect()
}

fn xla_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_positive() || b.is_sign_positive() {
            0.0
        } else {
            -0.0
        }
    } else if a > b {
        a
    } else {
        b
    }
}

fn xla_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() || b.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else if a < b {
        a
    } else {
        b
    }
}

/// The reference: for each output, gather its reduced elements in row-major order over the
/// reduced axes and apply `canonical_reduce_ref`.
fn reference<T: Copy>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    id: T,
    op: impl Fn(T, T) -> T + Copy,
) -> Vec<T> {
    let kept: Vec<usize> = (0..shape.len()).filter(|i| !axes.contains(i)).collect();
    let mut reduced: Vec<usize> = axes.to_vec();
    reduced.sort_unstable();
    let strides = kiln_ir::row_major_strides(shape);
    let n_out: usize = kept.iter().map(|&i| shape[i]).product();
    let n_red: usize = reduced.iter().map(|&i| shape[i]).product();
    let offsets = |dims: &[usize], mut k: usize| -> usize {
        let mut off = 0;
        for &d in dims.iter().rev() {
            off += (k % shape[d]) * strides[d];
            k /= shape[d];
        }
        off
    };
    (0..n_out)
        .map(|o| {
            let base = offsets(&kept, o);
            let xs: Vec<T> = (0..n_red).map(|r| x[base + offsets(&reduced, r)]).collect();
            canonical_reduce_ref(&xs, id, op)
        })
        .collect()
}

fn same_f32(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// A shape of rank 1–4 with sizes that exercise lane and chunk boundaries, at most ~1.5M
/// elements.
fn shapes() -> impl Strategy<Value = Vec<usize>> {
    let small = prop_oneof![
        3 => 1..=5usize,
        2 => Just(1usize),
        1 => Just(0usize),
        2 => 31..=33usize,
        1 => 60..=70usize,
    ];
    let long = prop_oneof![
        Just(4095usize),
        Just(4096),
        Just(4097),
        Just(2 * 4096 * 4 + 3),
        Just(300_000),
    ];
    (
        prop::collection::vec(small, 0..=3),
        prop::option::of(long),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut dims, long, pos)| {
            if let Some(l) = long {
                let rest: usize = dims.iter().product::<usize>().max(1);
                dims.insert(pos.index(dims.len() + 1), l.min(1_500_000 / rest).max(1));
            }
            if dims.is_empty() {
                dims.push(1);
            }
            dims
        })
}

fn case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, ReduceKind, u64, u32)> {
    shapes().prop_flat_map(|shape| {
        let rank = shape.len();
        (
            Just(shape),
            Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
            0..=rank,
            prop::sample::select(ReduceKind::ALL.to_vec()),
            any::<u64>(),
            prop::sample::select(vec![0u32, 5, 200]),
        )
            .prop_map(|(shape, perm, k, kind, seed, sp)| {
                (shape, perm[..k].to_vec(), kind, seed, sp)
            })
    })
}

fn run_all(a: &Tensor, kind: ReduceKind, axes: &[usize]) -> Vec<Tensor> {
    let shape: Vec<usize> = (0..a.shape().len())
        .filter(|i| !axes.contains(i))
        .map(|i| a.shape()[i])
        .collect();
    let op = Op::Reduce {
        kind,
        axes: axes.to_vec(),
    };
    let ty = TensorType::new(a.dtype(), shape);
    POOLS
        .iter()
        .map(|p| p.eval(&op, &[a], &ty).expect("reduce"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn f32_reductions_match_the_canonical_order((shape, axes, kind, seed, sp) in case()) {
        let n: usize = shape.iter().product();
        let x = values(n, seed, sp);
        let want = match kind {
            ReduceKind::Sum => reference(&x, &shape, &axes, 0.0, |a, b| a + b),
            ReduceKind::Prod => reference(&x, &shape, &axes, 1.0, |a, b| a * b),
            ReduceKind::Max => reference(&x, &shape, &axes, f32::NEG_INFINITY, xla_max),
            ReduceKind::Min => reference(&x, &shape, &axes, f32::INFINITY, xla_min),
        };
        for got in run_all(&f32s(&shape, &x), kind, &axes) {
            prop_assert!(same_f32(got.as_f32().unwrap(), &want), "{kind:?} {shape:?} axes {axes:?}");
        }
    }

    #[test]
    fn i32_reductions_match_the_canonical_order((shape, axes, kind, seed, _sp) in case()) {
        let n: usize = shape.iter().product();
        let x: Vec<i32> = values(n, seed, 0).iter().map(|v| (v * 1000.0) as i32).collect();
        let want = match kind {
            ReduceKind::Sum => reference(&x, &shape, &axes, 0, i32::wrapping_add),
            ReduceKind::Prod => reference(&x, &shape, &axes, 1, i32::wrapping_mul),
            ReduceKind::Max => reference(&x, &shape, &axes, i32::MIN, i32::max),
            ReduceKind::Min => reference(&x, &shape, &axes, i32::MAX, i32::min),
        };
        for got in run_all(&i32s(&shape, &x), kind, &axes) {
            prop_assert_eq!(got.data(), &Buffer::I32(want.clone().into()));
        }
    }
}

#[test]
fn f64_sum_of_a_long_vector_matches_and_is_thread_independent() {
    let n = 1_000_003;
    let x: Vec<f64> = values(n, 42, 0)
        .iter()
        .map(|&v| f64::from(v) * 1e-3)
        .collect();
    let want = canonical_reduce_ref(&x, 0.0, |a, b| a + b);
    for got in run_all(&f64s(&[n], &x), ReduceKind::Sum, &[0]) {
        assert_eq!(got.data().get(0).to_f64().to_bits(), want.to_bits());
    }
}
