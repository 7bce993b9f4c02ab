//! Shape ops, constants and iota: hand-computed small cases for every dtype class, plus
//! larger cases (parallel, tiled and odometer paths) against naive index arithmetic.

mod common;
use common::*;
use kiln_ir::{DType, Op, Scalar, Tensor};

/// Row-major multi-index of flat index `i` in `shape`.
fn unflatten(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        idx[k] = i % shape[k];
        i /= shape[k];
    }
    idx
}

fn flatten(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (i, d)| acc * d + i)
}

fn seq(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn constant() {
    let c = i64s(&[2], &[7, -7]);
    assert_bits(
        &eval(Op::Constant(c.clone().into()), &[], DType::I64, &[2]),
        &c,
    );
    let s = Tensor::splat(Scalar::Bool(true), vec![2, 2]);
    assert_bits(
        &eval(Op::Constant(s.clone().into()), &[], DType::Bool, &[2, 2]),
        &s,
    );
}

#[test]
fn iota() {
    let r = eval(Op::Iota { dim: 1 }, &[], DType::I32, &[2, 3]);
    assert_bits(&r, &i32s(&[2, 3], &[0, 1, 2, 0, 1, 2]));
    let r = eval(Op::Iota { dim: 0 }, &[], DType::F32, &[3, 2]);
    assert_bits(&r, &f32s(&[3, 2], &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]));
    let r = eval(Op::Iota { dim: 0 }, &[], DType::F64, &[2]);
    assert_bits(&r, &f64s(&[2], &[0.0, 1.0]));
    let r = eval(Op::Iota { dim: 1 }, &[], DType::I64, &[1, 2, 2]);
    assert_bits(&r, &i64s(&[1, 2, 2], &[0, 0, 1, 1]));
    let r = eval(Op::Iota { dim: 0 }, &[], DType::U32, &[3]);
    assert_bits(&r, &u32s(&[3], &[0, 1, 2]));
    let r = eval(Op::Iota { dim: 0 }, &[], DType::U32, &[0, 3]);
    assert_eq!(r.num_elements(), 0);
}

#[test]
fn broadcast_in_dim() {
    let bc = |a: &Tensor, dims: Vec<usize>, out: &[usize]| {
        eval(Op::BroadcastInDim { dims }, &[a], a.dtype(), out)
    };
    let r = bc(&f32s(&[2], &[1.0, 2.0]), vec![0], &[2, 3]);
    assert_bits(&r, &f32s(&[2, 3], &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]));
    let r = bc(&i32s(&[2], &[1, 2]), vec![1], &[3, 2]);
    assert_bits(&r, &i32s(&[3, 2], &[1, 2, 1, 2, 1, 2]));
    let r = bc(&bools(&[], &[true]), vec![], &[2, 2]);
    assert_bits(&r, &bools(&[2, 2], &[true; 4]));
    // a size-1 operand dimension broadcasts too
    let r = bc(&u32s(&[1, 2], &[5, 6]), vec![0, 2], &[2, 2, 2]);
    assert_bits(&r, &u32s(&[2, 2, 2], &[5, 6, 5, 6, 5, 6, 5, 6]));
    let r = bc(&f64s(&[2, 1], &[1.0, 2.0]), vec![0, 1], &[2, 3]);
    assert_bits(&r, &f64s(&[2, 3], &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]));
    let r = bc(&i64s(&[2], &[-1, 1]), vec![1], &[2, 2, 1]);
    assert_bits(&r, &i64s(&[2, 2, 1], &[-1, 1, -1, 1]));
}

#[test]
fn broadcast_large_against_naive() {
    // [37, 1, 53] -> [37, 300, 4, 53] with dims [0, 1, 3]: runs, fills and parallel rows.
    let (ashape, out, dims) = ([37usize, 1, 53], [37usize, 300, 4, 53], [0usize, 1, 3]);
    let a = seq(ashape.iter().product());
    let r = eval(
        Op::BroadcastInDim {
            dims: dims.to_vec(),
        },
        &[&f32s(&ashape, &a)],
        DType::F32,
        &out,
    );
    for (i, &v) in r.as_f32().unwrap().iter().enumerate() {
        let o = unflatten(i, &out);
        let ai: Vec<usize> = (0..3)
            .map(|k| if ashape[k] == 1 { 0 } else { o[dims[k]] })
            .collect();
        assert_eq!(v, a[flatten(&ai, &ashape)], "at {o:?}");
    }
}

#[test]
fn reshape() {
    let a = i32s(&[2, 3], &[1, 2, 3, 4, 5, 6]);
    let r = eval(Op::Reshape, &[&a], DType::I32, &[3, 1, 2]);
    assert_bits(&r, &i32s(&[3, 1, 2], &[1, 2, 3, 4, 5, 6]));
    let r = eval(Op::Reshape, &[&bools(&[1], &[true])], DType::Bool, &[]);
    assert_bits(&r, &bools(&[], &[true]));
}

#[test]
fn transpose() {
    let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let r = eval(
        Op::Transpose { perm: vec![1, 0] },
        &[&a],
        DType::F32,
        &[3, 2],
    );
    assert_bits(&r, &f32s(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
    let b = i64s(&[2, 2, 2], &[0, 1, 2, 3, 4, 5, 6, 7]);
    let r = eval(
        Op::Transpose {
            perm: vec![2, 0, 1],
        },
        &[&b],
        DType::I64,
        &[2, 2, 2],
    );
    assert_bits(&r, &i64s(&[2, 2, 2], &[0, 2, 4, 6, 1, 3, 5, 7]));
    let c = bools(&[1, 2], &[true, false]);
    let r = eval(
        Op::Transpose { perm: vec![1, 0] },
        &[&c],
        DType::Bool,
        &[2, 1],
    );
    assert_bits(&r, &bools(&[2, 1], &[true, false]));
}

#[test]
fn transpose_large_against_naive() {
    let shapes: [(&[usize], &[usize]); 4] = [
        (&[300, 517], &[1, 0]),
        (&[7, 65, 130], &[2, 0, 1]),
        (&[3, 40, 50, 60], &[0, 3, 1, 2]),
        (&[40, 3, 2, 500], &[1, 0, 3, 2]),
    ];
    for (shape, perm) in shapes {
        let n: usize = shape.iter().product();
        let a = seq(n);
        let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let r = eval(
            Op::Transpose {
                perm: perm.to_vec(),
            },
            &[&f32s(shape, &a)],
            DType::F32,
            &out,
        );
        for (i, &v) in r.as_f32().unwrap().iter().enumerate() {
            let o = unflatten(i, &out);
            let mut ai = vec![0; shape.len()];
            for (k, &p) in perm.iter().enumerate() {
                ai[p] = o[k];
            }
            assert_eq!(v, a[flatten(&ai, shape)], "{shape:?} {perm:?} at {o:?}");
        }
    }
}

#[test]
fn slice() {
    let a = i32s(&[3, 4], &(0..12).collect::<Vec<_>>());
    let op = Op::Slice {
        start: vec![1, 0],
        limit: vec![3, 4],
        stride: vec![1, 2],
    };
    assert_bits(
        &eval(op, &[&a], DType::I32, &[2, 2]),
        &i32s(&[2, 2], &[4, 6, 8, 10]),
    );
    let b = f64s(&[5], &[0.0, 1.0, 2.0, 3.0, 4.0]);
    let op = Op::Slice {
        start: vec![1],
        limit: vec![5],
        stride: vec![3],
    };
    assert_bits(&eval(op, &[&b], DType::F64, &[2]), &f64s(&[2], &[1.0, 4.0]));
    let c = bools(&[3], &[true, false, true]);
    let op = Op::Slice {
        start: vec![2],
        limit: vec![2],
        stride: vec![1],
    };
    assert_eq!(eval(op, &[&c], DType::Bool, &[0]).num_elements(), 0);
}

#[test]
fn slice_large_against_naive() {
    let shape = [50, 70, 90];
    let (start, limit, stride): ([usize; 3], [usize; 3], [usize; 3]) =
        ([3, 0, 5], [50, 70, 88], [2, 1, 3]);
    let a = seq(shape.iter().product());
    let out: Vec<usize> = (0..3)
        .map(|k| (limit[k] - start[k]).div_ceil(stride[k]))
        .collect();
    let op = Op::Slice {
        start: start.to_vec(),
        limit: limit.to_vec(),
        stride: stride.to_vec(),
    };
    let r = eval(op, &[&f32s(&shape, &a)], DType::F32, &out);
    for (i, &v) in r.as_f32().unwrap().iter().enumerate() {
        let o = unflatten(i, &out);
        let ai: Vec<usize> = (0..3).map(|k| start[k] + o[k] * stride[k]).collect();
        assert_eq!(v, a[flatten(&ai, &shape)]);
    }
}

#[test]
fn concat() {
    let a = f32s(&[2, 1], &[1.0, 2.0]);
    let b = f32s(&[2, 2], &[3.0, 4.0, 5.0, 6.0]);
    let r = eval(Op::Concat { axis: 1 }, &[&a, &b], DType::F32, &[2, 3]);
    assert_bits(&r, &f32s(&[2, 3], &[1.0, 3.0, 4.0, 2.0, 5.0, 6.0]));
    let r = eval(
        Op::Concat { axis: 0 },
        &[&u32s(&[1], &[1]), &u32s(&[0], &[]), &u32s(&[2], &[2, 3])],
        DType::U32,
        &[3],
    );
    assert_bits(&r, &u32s(&[3], &[1, 2, 3]));
    let r = eval(
        Op::Concat { axis: 0 },
        &[&bools(&[1], &[true])],
        DType::Bool,
        &[1],
    );
    assert_bits(&r, &bools(&[1], &[true]));
    let r = eval(
        Op::Concat { axis: 0 },
        &[&i64s(&[1, 2], &[1, 2]), &i64s(&[1, 2], &[3, 4])],
        DType::I64,
        &[2, 2],
    );
    assert_bits(&r, &i64s(&[2, 2], &[1, 2, 3, 4]));
}

#[test]
fn concat_large_against_naive() {
    let (rows, w1, w2) = (1000, 70, 130);
    let a = seq(rows * w1);
    let b: Vec<f32> = seq(rows * w2).iter().map(|x| -x).collect();
    let r = eval(
        Op::Concat { axis: 1 },
        &[&f32s(&[rows, w1], &a), &f32s(&[rows, w2], &b)],
        DType::F32,
        &[rows, w1 + w2],
    );
    let v = r.as_f32().unwrap();
    for i in 0..rows {
        for j in 0..w1 + w2 {
            let want = if j < w1 {
                a[i * w1 + j]
            } else {
                b[i * w2 + j - w1]
            };
            assert_eq!(v[i * (w1 + w2) + j], want);
        }
    }
}

#[test]
fn pad() {
    let a = i32s(&[2, 2], &[1, 2, 3, 4]);
    let op = Op::Pad {
        low: vec![1, 0],
        high: vec![0, 1],
    };
    let r = eval(op, &[&a, &i32s(&[], &[9])], DType::I32, &[3, 3]);
    assert_bits(&r, &i32s(&[3, 3], &[9, 9, 9, 1, 2, 9, 3, 4, 9]));
    let op = Op::Pad {
        low: vec![2],
        high: vec![1],
    };
    let r = eval(
        op.clone(),
        &[&f32s(&[1], &[1.0]), &f32s(&[], &[-0.0])],
        DType::F32,
        &[4],
    );
    assert_bits(&r, &f32s(&[4], &[-0.0, -0.0, 1.0, -0.0]));
    let r = eval(
        op,
        &[&bools(&[1], &[true]), &bools(&[], &[false])],
        DType::Bool,
        &[4],
    );
    assert_bits(&r, &bools(&[4], &[false, false, true, false]));
    let op = Op::Pad {
        low: vec![],
        high: vec![],
    };
    let r = eval(
        op,
        &[&f64s(&[], &[2.0]), &f64s(&[], &[0.0])],
        DType::F64,
        &[],
    );
    assert_bits(&r, &f64s(&[], &[2.0]));
    let op = Op::Pad {
        low: vec![1],
        high: vec![0],
    };
    let r = eval(op, &[&u32s(&[0], &[]), &u32s(&[], &[3])], DType::U32, &[1]);
    assert_bits(&r, &u32s(&[1], &[3]));
    let r = eval(
        Op::Pad {
            low: vec![0],
            high: vec![1],
        },
        &[&i64s(&[1], &[5]), &i64s(&[], &[0])],
        DType::I64,
        &[2],
    );
    assert_bits(&r, &i64s(&[2], &[5, 0]));
}

#[test]
fn ill_typed_calls_are_errors_not_panics() {
    let a = f32s(&[2, 3], &seq(6));
    // wrong declared result shape
    let e = eval_ty(
        Op::Transpose { perm: vec![1, 0] },
        &[&a],
        kiln_ir::TensorType::new(DType::F32, vec![2, 3]),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "transpose: declared result type f32[2,3] but the op produces f32[3,2]"
    );
    // wrong operand count
    let e = eval_ty(Op::Select, &[&a], a.ty()).unwrap_err();
    assert_eq!(e.to_string(), "select: expects 3 operands, got 1");
}
