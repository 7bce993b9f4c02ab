//! The windowed ops (`convolution`, `reduce_window`, `select_and_scatter`) on
//! hand-computed cases: padding (negative too), lhs/rhs dilation, reversal, groups, empty
//! windows and windows that fall entirely on padding, ties in the selection, NaN, integer
//! and bool dtypes; and results independent of the thread count. (Real JAX and TF programs
//! are compared in kiln-hlo's tests/window.rs.)

mod common;
use common::*;
use kiln_interp::Interpreter;
use kiln_ir::{
    CompareDir, ConvDims, Convolution, DType, Op, ReduceKind, Tensor, TensorType, WindowDim,
};

fn win(size: usize) -> WindowDim {
    WindowDim::new(size)
}

/// A 1-D convolution, NWC input and WIO kernel.
fn conv1d(window: WindowDim, groups: (usize, usize)) -> Op {
    Op::Convolution(Box::new(Convolution {
        dims: ConvDims::from_roles(&[0, 2, 1], &[1, 2, 0], &[0, 2, 1]).unwrap(),
        window: vec![window],
        feature_groups: groups.0,
        batch_groups: groups.1,
    }))
}

fn run_f32(op: Op, args: &[&Tensor], shape: &[usize]) -> Vec<f32> {
    eval(op, args, DType::F32, shape).as_f32().unwrap().to_vec()
}

#[test]
fn convolution_padding_dilation_and_reversal_by_hand() {
    let x = f32s(&[1, 5, 1], &[1., 2., 3., 4., 5.]);
    let w = f32s(&[3, 1, 1], &[1., 0., -1.]);
    // 'SAME': out[i] = x[i-1] - x[i+1], zeros outside.
    let same = WindowDim {
        low: 1,
        high: 1,
        ..win(3)
    };
    let op = conv1d(same.clone(), (1, 1));
    assert_eq!(run_f32(op, &[&x, &w], &[1, 5, 1]), [-2., -2., -2., -2., 4.]);
    // A reversed kernel is [-1, 0, 1].
    let op = conv1d(
        WindowDim {
            reversal: true,
            ..same
        },
        (1, 1),
    );
    assert_eq!(run_f32(op, &[&x, &w], &[1, 5, 1]), [2., 2., 2., 2., -4.]);
    // Base dilation: x becomes [1, _, 2, _, 3, _, 4, _, 5].
    let op = conv1d(
        WindowDim {
            lhs_dilate: 2,
            ..win(3)
        },
        (1, 1),
    );
    assert_eq!(
        run_f32(op, &[&x, &w], &[1, 7, 1]),
        [-1., 0., -1., 0., -1., 0., -1.]
    );
    // Window dilation: the three taps are 2 apart, one window fits.
    let op = conv1d(
        WindowDim {
            rhs_dilate: 2,
            ..win(3)
        },
        (1, 1),
    );
    assert_eq!(run_f32(op, &[&x, &w], &[1, 1, 1]), [-4.]);
    // Negative padding crops; stride 2.
    let w1 = f32s(&[1, 1, 1], &[2.]);
    let op = conv1d(
        WindowDim {
            low: -1,
            high: -1,
            ..win(1)
        },
        (1, 1),
    );
    assert_eq!(run_f32(op, &[&x, &w1], &[1, 3, 1]), [4., 6., 8.]);
    let op = conv1d(
        WindowDim {
            stride: 2,
            ..win(1)
        },
        (1, 1),
    );
    assert_eq!(run_f32(op, &[&x, &w1], &[1, 3, 1]), [2., 6., 10.]);
    // A window larger than the input: no output positions.
    let op = conv1d(win(3), (1, 1));
    let short = f32s(&[1, 2, 1], &[1., 2.]);
    assert_eq!(run_f32(op, &[&short, &w], &[1, 0, 1]), Vec::<f32>::new());
}

#[test]
fn convolution_feature_and_batch_groups_by_hand() {
    // Two feature groups: output feature o reads input feature o (one per group).
    let x = f32s(&[1, 1, 2], &[3., 5.]);
    let w = f32s(&[1, 1, 2], &[10., 100.]);
    assert_eq!(
        run_f32(conv1d(win(1), (2, 1)), &[&x, &w], &[1, 1, 2]),
        [30., 500.]
    );
    // Two batch groups: output feature o reads batch o, and the result has batch 1.
    let x = f32s(&[2, 1, 1], &[3., 5.]);
    let w = f32s(&[1, 1, 2], &[10., 100.]);
    assert_eq!(
        run_f32(conv1d(win(1), (1, 2)), &[&x, &w], &[1, 1, 2]),
        [30., 500.]
    );
    // Integers wrap instead of overflowing.
    let x = i32s(&[1, 2, 1], &[i32::MAX, 1]);
    let w = i32s(&[2, 1, 1], &[1, 1]);
    let y = eval(conv1d(win(2), (1, 1)), &[&x, &w], DType::I32, &[1, 1, 1]);
    assert_eq!(y, i32s(&[1, 1, 1], &[i32::MIN]));
}

#[test]
fn a_reversed_window_is_a_reversed_kernel() {
    // 2-D, NCHW / OIHW, feature groups, padding and dilation: flipping the kernel with
    // `reverse` gives the same bits as `reversal`.
    let mut rng = kiln_testkit::Rng(7);
    let x = kiln_testkit::random_tensor(&TensorType::new(DType::F32, [2, 4, 6, 5]), &mut rng);
    let w = kiln_testkit::random_tensor(&TensorType::new(DType::F32, [6, 2, 3, 2]), &mut rng);
    let window = |reversal| {
        vec![
            WindowDim {
                stride: 2,
                low: 1,
                high: 2,
                lhs_dilate: 2,
                reversal,
                ..win(3)
            },
            WindowDim {
                low: -1,
                rhs_dilate: 2,
                reversal,
                ..win(2)
            },
        ]
    };
    let conv = |reversal| {
        Op::Convolution(Box::new(Convolution {
            dims: ConvDims::from_roles(&[0, 1, 2, 3], &[1, 0, 2, 3], &[0, 1, 2, 3]).unwrap(),
            window: window(reversal),
            feature_groups: 2,
            batch_groups: 1,
        }))
    };
    let ty = TensorType::new(DType::F32, [2, 6, 6, 2]);
    let flipped = Interpreter::new(1)
        .unwrap()
        .eval(&Op::Reverse { dims: vec![2, 3] }, &[&w], &w.ty())
        .unwrap();
    let a = eval_ty(conv(true), &[&x, &w], ty.clone()).unwrap();
    let b = eval_ty(conv(false), &[&x, &flipped], ty.clone()).unwrap();
    assert_eq!(
        kiln_testkit::first_difference(std::slice::from_ref(&a), &[b]),
        None
    );
    // And one thread gives the bits of several.
    for threads in [1, 3, 5] {
        let c = Interpreter::new(threads)
            .unwrap()
            .eval(&conv(true), &[&x, &w], &ty)
            .unwrap();
        assert_eq!(
            kiln_testkit::first_difference(&[c], std::slice::from_ref(&a)),
            None
        );
    }
}

fn reduce_window(kind: ReduceKind, window: Vec<WindowDim>) -> Op {
    Op::ReduceWindow { kind, window }
}

#[test]
fn reduce_window_by_hand() {
    let x = f32s(&[4], &[1., 2., 3., 4.]);
    let zero = f32s(&[], &[0.]);
    // A cumulative sum: each window covers every element up to its own.
    let cumsum = WindowDim { low: 3, ..win(4) };
    let op = reduce_window(ReduceKind::Sum, vec![cumsum]);
    assert_eq!(run_f32(op, &[&x, &zero], &[4]), [1., 3., 6., 10.]);
    // Base dilation: [1, _, 2, _, 3, _, 4]; holes do not take part.
    let op = reduce_window(
        ReduceKind::Sum,
        vec![WindowDim {
            lhs_dilate: 2,
            ..win(2)
        }],
    );
    assert_eq!(run_f32(op, &[&x, &zero], &[6]), [1., 2., 2., 3., 3., 4.]);
    // Windows on padding only give the init value; the init is used once per window.
    let seven = f32s(&[], &[7.]);
    let op = reduce_window(
        ReduceKind::Sum,
        vec![WindowDim {
            low: 2,
            high: 1,
            ..win(2)
        }],
    );
    assert_eq!(
        run_f32(op, &[&x, &seven], &[6]),
        [7., 8., 10., 12., 14., 11.]
    );
    // Negative padding and a stride; max propagates NaN.
    let y = f32s(&[5], &[1., f32::NAN, 3., -4., 5.]);
    let ninf = f32s(&[], &[f32::NEG_INFINITY]);
    let op = reduce_window(
        ReduceKind::Max,
        vec![WindowDim {
            low: -1,
            high: -1,
            stride: 2,
            ..win(1)
        }],
    );
    let got = run_f32(op, &[&y, &ninf], &[2]);
    assert!(got[0].is_nan() && got[1] == -4.);
    // No window fits: an empty result.
    let op = reduce_window(ReduceKind::Sum, vec![win(5)]);
    assert_eq!(run_f32(op, &[&x, &zero], &[0]), Vec::<f32>::new());
    // 2-D max pool, and integer and bool dtypes.
    let m = i32s(&[2, 3], &[1, -5, 3, 4, 2, -6]);
    let op = reduce_window(ReduceKind::Min, vec![win(2), win(2)]);
    let got = eval(op, &[&m, &i32s(&[], &[0])], DType::I32, &[1, 2]);
    assert_eq!(got, i32s(&[1, 2], &[-5, -6]));
    let b = bools(&[3], &[false, true, false]);
    let op = reduce_window(ReduceKind::Max, vec![win(2)]);
    let got = eval(op, &[&b, &bools(&[], &[false])], DType::Bool, &[2]);
    assert_eq!(got, bools(&[2], &[true, true]));
    let op = reduce_window(ReduceKind::Prod, vec![win(2)]);
    let got = eval(
        op,
        &[&u32s(&[3], &[2, 3, 4]), &u32s(&[], &[1])],
        DType::U32,
        &[2],
    );
    assert_eq!(got, u32s(&[2], &[6, 12]));
}

fn select_and_scatter(select: CompareDir, window: WindowDim) -> Op {
    Op::SelectAndScatter {
        select,
        scatter: ReduceKind::Sum,
        window: vec![window],
    }
}

#[test]
fn select_and_scatter_by_hand() {
    let x = f32s(&[4], &[1., 5., 5., 2.]);
    let src = f32s(&[3], &[10., 20., 30.]);
    let zero = f32s(&[], &[0.]);
    // `ge` keeps the first of equal maxima, `gt` moves to the last; sums where windows
    // overlap.
    let op = select_and_scatter(CompareDir::Ge, win(2));
    assert_eq!(run_f32(op, &[&x, &src, &zero], &[4]), [0., 30., 30., 0.]);
    let op = select_and_scatter(CompareDir::Gt, win(2));
    assert_eq!(run_f32(op, &[&x, &src, &zero], &[4]), [0., 10., 50., 0.]);
    // `le` selects minima; the init value is where nothing was scattered.
    let op = select_and_scatter(CompareDir::Le, win(2));
    let one = f32s(&[], &[1.]);
    assert_eq!(run_f32(op, &[&x, &src, &one], &[4]), [11., 21., 1., 31.]);
    // A window on padding only scatters nothing; padding is never selected.
    let op = select_and_scatter(
        CompareDir::Ge,
        WindowDim {
            low: 1,
            high: 1,
            stride: 3,
            ..win(1)
        },
    );
    let src2 = f32s(&[2], &[10., 20.]);
    assert_eq!(run_f32(op, &[&x, &src2, &zero], &[4]), [0., 0., 20., 0.]);
    let pad_max = WindowDim { low: 1, ..win(2) };
    let op = select_and_scatter(CompareDir::Ge, pad_max);
    let neg = f32s(&[2], &[-3., -4.]);
    let src3 = f32s(&[2], &[7., 9.]);
    assert_eq!(run_f32(op, &[&neg, &src3, &zero], &[2]), [16., 0.]);
    // A source of the wrong shape is an error, not a panic.
    let op = select_and_scatter(CompareDir::Ge, win(2));
    let bad = f32s(&[2], &[1., 2.]);
    let err = eval_ty(op, &[&x, &bad, &zero], x.ty()).unwrap_err();
    assert!(
        err.to_string()
            .contains("the source must have one element per window position (f32[3])"),
        "{err}"
    );
}
