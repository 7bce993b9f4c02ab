//! One test per binary op, `compare`, `select` and `convert`, covering every dtype their
//! typing rules allow and XLA's edge semantics, with exact expected values.

mod common;
use common::*;
use kiln_ir::{BinaryOp, CompareDir, DType, Op, Tensor};

fn bin(op: BinaryOp, a: &Tensor, b: &Tensor) -> Tensor {
    eval(Op::Binary(op), &[a, b], a.dtype(), a.shape())
}

const INF: f32 = f32::INFINITY;
const NAN: f32 = f32::NAN;

#[test]
fn add() {
    let r = bin(
        BinaryOp::Add,
        &f32s(&[3], &[1.5, -0.0, INF]),
        &f32s(&[3], &[2.0, -0.0, -INF]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!(v[0], 3.5);
    assert_eq!(v[1].to_bits(), (-0.0f32).to_bits());
    assert!(v[2].is_nan());
    assert_bits(
        &bin(BinaryOp::Add, &f64s(&[1], &[0.1]), &f64s(&[1], &[0.2])),
        &f64s(&[1], &[0.1 + 0.2]),
    );
    assert_bits(
        &bin(BinaryOp::Add, &i32s(&[1], &[i32::MAX]), &i32s(&[1], &[1])),
        &i32s(&[1], &[i32::MIN]),
    );
    assert_bits(
        &bin(BinaryOp::Add, &i64s(&[1], &[i64::MAX]), &i64s(&[1], &[2])),
        &i64s(&[1], &[i64::MIN + 1]),
    );
    assert_bits(
        &bin(BinaryOp::Add, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[2])),
        &u32s(&[1], &[1]),
    );
}

#[test]
fn sub() {
    assert_bits(
        &bin(
            BinaryOp::Sub,
            &f32s(&[2], &[1.0, 0.0]),
            &f32s(&[2], &[3.0, 0.0]),
        ),
        &f32s(&[2], &[-2.0, 0.0]),
    );
    assert_bits(
        &bin(BinaryOp::Sub, &f64s(&[1], &[-0.0]), &f64s(&[1], &[0.0])),
        &f64s(&[1], &[-0.0]),
    );
    assert_bits(
        &bin(BinaryOp::Sub, &i32s(&[1], &[i32::MIN]), &i32s(&[1], &[1])),
        &i32s(&[1], &[i32::MAX]),
    );
    assert_bits(
        &bin(BinaryOp::Sub, &i64s(&[1], &[5]), &i64s(&[1], &[7])),
        &i64s(&[1], &[-2]),
    );
    assert_bits(
        &bin(BinaryOp::Sub, &u32s(&[1], &[0]), &u32s(&[1], &[1])),
        &u32s(&[1], &[u32::MAX]),
    );
}

#[test]
fn mul() {
    assert_bits(
        &bin(
            BinaryOp::Mul,
            &f32s(&[2], &[1.5, -0.0]),
            &f32s(&[2], &[2.0, 5.0]),
        ),
        &f32s(&[2], &[3.0, -0.0]),
    );
    assert_bits(
        &bin(BinaryOp::Mul, &f64s(&[1], &[1e300]), &f64s(&[1], &[1e10])),
        &f64s(&[1], &[f64::INFINITY]),
    );
    assert_bits(
        &bin(BinaryOp::Mul, &i32s(&[1], &[65536]), &i32s(&[1], &[65536])),
        &i32s(&[1], &[0]),
    );
    assert_bits(
        &bin(BinaryOp::Mul, &i64s(&[1], &[-3]), &i64s(&[1], &[4])),
        &i64s(&[1], &[-12]),
    );
    assert_bits(
        &bin(BinaryOp::Mul, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[2])),
        &u32s(&[1], &[u32::MAX - 1]),
    );
}

#[test]
fn div() {
    let r = bin(
        BinaryOp::Div,
        &f32s(&[4], &[1.0, -1.0, 0.0, 7.0]),
        &f32s(&[4], &[0.0, 0.0, 0.0, 2.0]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!((v[0], v[1], v[3]), (INF, -INF, 3.5));
    assert!(v[2].is_nan());
    assert_bits(
        &bin(BinaryOp::Div, &f64s(&[1], &[1.0]), &f64s(&[1], &[-0.0])),
        &f64s(&[1], &[f64::NEG_INFINITY]),
    );
    let r = bin(
        BinaryOp::Div,
        &i32s(&[5], &[7, -7, 7, i32::MIN, -7]),
        &i32s(&[5], &[2, 2, 0, -1, 0]),
    );
    assert_bits(&r, &i32s(&[5], &[3, -3, -1, i32::MIN, -1]));
    let r = bin(
        BinaryOp::Div,
        &i64s(&[2], &[i64::MIN, 9]),
        &i64s(&[2], &[-1, 0]),
    );
    assert_bits(&r, &i64s(&[2], &[i64::MIN, -1]));
    let r = bin(BinaryOp::Div, &u32s(&[2], &[9, 9]), &u32s(&[2], &[2, 0]));
    assert_bits(&r, &u32s(&[2], &[4, u32::MAX]));
}

#[test]
fn rem() {
    let r = bin(
        BinaryOp::Rem,
        &f32s(&[4], &[5.5, -5.5, 1.0, INF]),
        &f32s(&[4], &[2.0, 2.0, 0.0, 1.0]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!((v[0], v[1]), (1.5, -1.5));
    assert!(v[2].is_nan() && v[3].is_nan());
    assert_bits(
        &bin(BinaryOp::Rem, &f64s(&[1], &[-0.0]), &f64s(&[1], &[3.0])),
        &f64s(&[1], &[-0.0]),
    );
    let r = bin(
        BinaryOp::Rem,
        &i32s(&[4], &[7, -7, 7, i32::MIN]),
        &i32s(&[4], &[3, 3, 0, -1]),
    );
    assert_bits(&r, &i32s(&[4], &[1, -1, 7, 0]));
    let r = bin(
        BinaryOp::Rem,
        &i64s(&[2], &[i64::MIN, -9]),
        &i64s(&[2], &[-1, 0]),
    );
    assert_bits(&r, &i64s(&[2], &[0, -9]));
    let r = bin(BinaryOp::Rem, &u32s(&[2], &[9, 9]), &u32s(&[2], &[4, 0]));
    assert_bits(&r, &u32s(&[2], &[1, 9]));
}

#[test]
fn pow() {
    let r = bin(
        BinaryOp::Pow,
        &f32s(&[4], &[2.0, 9.0, 5.0, 1.0]),
        &f32s(&[4], &[10.0, 0.5, 0.0, NAN]),
    );
    assert_eq!(&r.as_f32().unwrap()[..3], &[1024.0, 3.0, 1.0]);
    assert_eq!(r.as_f32().unwrap()[3], 1.0, "pow(1, nan) = 1 as in C");
    assert_bits(
        &bin(BinaryOp::Pow, &f64s(&[1], &[2.0]), &f64s(&[1], &[-2.0])),
        &f64s(&[1], &[0.25]),
    );
}

#[test]
fn max() {
    let r = bin(
        BinaryOp::Max,
        &f32s(&[5], &[1.0, -0.0, 0.0, NAN, 3.0]),
        &f32s(&[5], &[2.0, 0.0, -0.0, 1.0, NAN]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!(v[0], 2.0);
    assert_eq!(v[1].to_bits(), 0.0f32.to_bits());
    assert_eq!(v[2].to_bits(), 0.0f32.to_bits());
    assert!(v[3].is_nan() && v[4].is_nan());
    assert_bits(
        &bin(
            BinaryOp::Max,
            &f64s(&[1], &[-INF as f64]),
            &f64s(&[1], &[-1.0]),
        ),
        &f64s(&[1], &[-1.0]),
    );
    assert_bits(
        &bin(BinaryOp::Max, &i32s(&[2], &[-1, 5]), &i32s(&[2], &[1, 2])),
        &i32s(&[2], &[1, 5]),
    );
    assert_bits(
        &bin(BinaryOp::Max, &i64s(&[1], &[i64::MIN]), &i64s(&[1], &[0])),
        &i64s(&[1], &[0]),
    );
    assert_bits(
        &bin(BinaryOp::Max, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[1])),
        &u32s(&[1], &[u32::MAX]),
    );
}

#[test]
fn min() {
    let r = bin(
        BinaryOp::Min,
        &f32s(&[5], &[1.0, -0.0, 0.0, NAN, 3.0]),
        &f32s(&[5], &[2.0, 0.0, -0.0, 1.0, NAN]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!(v[0], 1.0);
    assert_eq!(v[1].to_bits(), (-0.0f32).to_bits());
    assert_eq!(v[2].to_bits(), (-0.0f32).to_bits());
    assert!(v[3].is_nan() && v[4].is_nan());
    assert_bits(
        &bin(
            BinaryOp::Min,
            &f64s(&[1], &[INF as f64]),
            &f64s(&[1], &[-1.0]),
        ),
        &f64s(&[1], &[-1.0]),
    );
    assert_bits(
        &bin(BinaryOp::Min, &i32s(&[2], &[-1, 5]), &i32s(&[2], &[1, 2])),
        &i32s(&[2], &[-1, 2]),
    );
    assert_bits(
        &bin(BinaryOp::Min, &i64s(&[1], &[i64::MIN]), &i64s(&[1], &[0])),
        &i64s(&[1], &[i64::MIN]),
    );
    assert_bits(
        &bin(BinaryOp::Min, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[1])),
        &u32s(&[1], &[1]),
    );
}

#[test]
fn and_or_xor() {
    let (p, q) = (
        bools(&[4], &[false, false, true, true]),
        bools(&[4], &[false, true, false, true]),
    );
    assert_bits(
        &bin(BinaryOp::And, &p, &q),
        &bools(&[4], &[false, false, false, true]),
    );
    assert_bits(
        &bin(BinaryOp::Or, &p, &q),
        &bools(&[4], &[false, true, true, true]),
    );
    assert_bits(
        &bin(BinaryOp::Xor, &p, &q),
        &bools(&[4], &[false, true, true, false]),
    );
    let (a, b) = (i32s(&[1], &[0b1100]), i32s(&[1], &[0b1010]));
    assert_bits(&bin(BinaryOp::And, &a, &b), &i32s(&[1], &[0b1000]));
    assert_bits(&bin(BinaryOp::Or, &a, &b), &i32s(&[1], &[0b1110]));
    assert_bits(&bin(BinaryOp::Xor, &a, &b), &i32s(&[1], &[0b0110]));
    assert_bits(
        &bin(BinaryOp::Xor, &i64s(&[1], &[-1]), &i64s(&[1], &[1])),
        &i64s(&[1], &[-2]),
    );
    assert_bits(
        &bin(BinaryOp::And, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[7])),
        &u32s(&[1], &[7]),
    );
}

#[test]
fn compare() {
    let cmp = |dir, a: &Tensor, b: &Tensor| eval(Op::Compare(dir), &[a, b], DType::Bool, a.shape());
    use CompareDir::*;
    // floats: NaN compares unordered (only `ne` is true); -0 == +0.
    let (a, b) = (f32s(&[3], &[1.0, NAN, -0.0]), f32s(&[3], &[2.0, NAN, 0.0]));
    let want = [
        (Lt, [true, false, false]),
        (Le, [true, false, true]),
        (Gt, [false, false, false]),
        (Ge, [false, false, true]),
        (Eq, [false, false, true]),
        (Ne, [true, true, false]),
    ];
    for (dir, w) in want {
        assert_bits(&cmp(dir, &a, &b), &bools(&[3], &w));
    }
    assert_bits(
        &cmp(Lt, &f64s(&[1], &[-INF as f64]), &f64s(&[1], &[0.0])),
        &bools(&[1], &[true]),
    );
    // integers by their signedness
    assert_bits(
        &cmp(Lt, &i32s(&[1], &[-1]), &i32s(&[1], &[1])),
        &bools(&[1], &[true]),
    );
    assert_bits(
        &cmp(Lt, &u32s(&[1], &[u32::MAX]), &u32s(&[1], &[1])),
        &bools(&[1], &[false]),
    );
    assert_bits(
        &cmp(Ge, &i64s(&[1], &[i64::MIN]), &i64s(&[1], &[0])),
        &bools(&[1], &[false]),
    );
    // bool: false < true
    assert_bits(
        &cmp(
            Lt,
            &bools(&[2], &[false, true]),
            &bools(&[2], &[true, true]),
        ),
        &bools(&[2], &[true, false]),
    );
}

#[test]
fn select() {
    let p = bools(&[3], &[true, false, true]);
    let sel = |a: &Tensor, b: &Tensor| eval(Op::Select, &[&p, a, b], a.dtype(), a.shape());
    assert_bits(
        &sel(&f32s(&[3], &[1.0, 2.0, 3.0]), &f32s(&[3], &[4.0, 5.0, 6.0])),
        &f32s(&[3], &[1.0, 5.0, 3.0]),
    );
    assert_bits(
        &sel(&f64s(&[3], &[1.0, 2.0, 3.0]), &f64s(&[3], &[4.0, 5.0, 6.0])),
        &f64s(&[3], &[1.0, 5.0, 3.0]),
    );
    assert_bits(
        &sel(&i32s(&[3], &[1, 2, 3]), &i32s(&[3], &[4, 5, 6])),
        &i32s(&[3], &[1, 5, 3]),
    );
    assert_bits(
        &sel(&i64s(&[3], &[1, 2, 3]), &i64s(&[3], &[4, 5, 6])),
        &i64s(&[3], &[1, 5, 3]),
    );
    assert_bits(
        &sel(&u32s(&[3], &[1, 2, 3]), &u32s(&[3], &[4, 5, 6])),
        &u32s(&[3], &[1, 5, 3]),
    );
    assert_bits(
        &sel(&bools(&[3], &[true; 3]), &bools(&[3], &[false; 3])),
        &bools(&[3], &[true, false, true]),
    );
}

#[test]
fn convert() {
    let conv = |a: &Tensor, to: DType| eval(Op::Convert, &[a], to, a.shape());
    // float -> int: toward zero, saturating, NaN -> 0
    let x = f32s(&[6], &[2.7, -2.7, 1e20, -1e20, NAN, -0.0]);
    assert_bits(
        &conv(&x, DType::I32),
        &i32s(&[6], &[2, -2, i32::MAX, i32::MIN, 0, 0]),
    );
    assert_bits(
        &conv(&x, DType::I64),
        &i64s(&[6], &[2, -2, i64::MAX, i64::MIN, 0, 0]),
    );
    assert_bits(
        &conv(&x, DType::U32),
        &u32s(&[6], &[2, 0, u32::MAX, 0, 0, 0]),
    );
    // to bool is x != 0 (NaN -> true)
    assert_bits(
        &conv(&x, DType::Bool),
        &bools(&[6], &[true, true, true, true, true, false]),
    );
    // int -> float rounds to nearest even
    let big = i32s(&[2], &[16_777_217, 16_777_219]);
    assert_bits(
        &conv(&big, DType::F32),
        &f32s(&[2], &[16_777_216.0, 16_777_220.0]),
    );
    assert_bits(
        &conv(&i64s(&[1], &[(1 << 53) + 1]), DType::F64),
        &f64s(&[1], &[(1u64 << 53) as f64]),
    );
    assert_bits(
        &conv(&u32s(&[1], &[u32::MAX]), DType::F32),
        &f32s(&[1], &[4_294_967_296.0]),
    );
    // f64 -> f32 rounds to nearest even; f32 -> f64 exact
    let d = f64s(&[3], &[1.0 + f64::EPSILON, 1e300, 0.1]);
    assert_bits(&conv(&d, DType::F32), &f32s(&[3], &[1.0, INF, 0.1f32]));
    assert_bits(
        &conv(&f32s(&[1], &[0.1]), DType::F64),
        &f64s(&[1], &[0.1f32 as f64]),
    );
    // int <-> int wraps
    assert_bits(
        &conv(&i32s(&[2], &[-1, 5]), DType::U32),
        &u32s(&[2], &[u32::MAX, 5]),
    );
    assert_bits(
        &conv(&i64s(&[1], &[1 << 32 | 7]), DType::I32),
        &i32s(&[1], &[7]),
    );
    assert_bits(
        &conv(&u32s(&[1], &[u32::MAX]), DType::I64),
        &i64s(&[1], &[u32::MAX as i64]),
    );
    assert_bits(&conv(&i32s(&[1], &[-1]), DType::I64), &i64s(&[1], &[-1]));
    // from bool: 0 / 1
    let b = bools(&[2], &[false, true]);
    assert_bits(&conv(&b, DType::F32), &f32s(&[2], &[0.0, 1.0]));
    assert_bits(&conv(&b, DType::F64), &f64s(&[2], &[0.0, 1.0]));
    assert_bits(&conv(&b, DType::I32), &i32s(&[2], &[0, 1]));
    assert_bits(&conv(&b, DType::I64), &i64s(&[2], &[0, 1]));
    assert_bits(&conv(&b, DType::U32), &u32s(&[2], &[0, 1]));
    assert_bits(&conv(&i32s(&[2], &[0, -3]), DType::Bool), &b);
    // same dtype: unchanged
    assert_bits(&conv(&b, DType::Bool), &b);
}

#[test]
fn large_binary_ops_are_exact_across_blocks() {
    let n = 300_001;
    let a: Vec<i32> = (0..n as i32).collect();
    let b: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
    let r = bin(BinaryOp::Div, &i32s(&[n], &a), &i32s(&[n], &b));
    let got = match r.data() {
        kiln_ir::Buffer::I32(v) => v.clone(),
        _ => unreachable!(),
    };
    for i in 0..n {
        let want = if b[i] == 0 { -1 } else { a[i] / b[i] };
        assert_eq!(got[i], want, "element {i}");
    }
}
