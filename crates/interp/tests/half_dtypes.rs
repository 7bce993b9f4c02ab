//! `f16` and `bf16` on the interpreter (issue 37), beyond the JAX programs of
//! `crates/hlo/tests/half_dtypes.rs`: reductions and products accumulate in `f32` (a 16-bit
//! accumulator would stall), data movement keeps the 16 bits (a signalling NaN stays
//! signalling), `bitcast_convert` sees the stored bits, and `iota` rounds once.

mod common;
use common::*;
use kiln_ir::{bf16, f16, Buffer, CompareDir, DType, DotDims, Op, ReduceKind, SortOrder, Tensor};

fn halves(v: &[f32]) -> Tensor {
    t(
        &[v.len()],
        Buffer::F16(v.iter().map(|&x| f16::from_f32(x)).collect()),
    )
}

fn bits(t: &Tensor) -> Vec<u16> {
    match t.data() {
        Buffer::F16(v) => v.iter().map(|x| x.to_bits()).collect(),
        Buffer::Bf16(v) => v.iter().map(|x| x.to_bits()).collect(),
        b => panic!("{:?} is not 16-bit float", b.dtype()),
    }
}

#[test]
fn a_sum_accumulates_in_f32_and_rounds_once() {
    // 4097 ones: an f16 accumulator stops at 2048 (2048 + 1 rounds back to 2048); in f32
    // the sum is 4097, rounded once to f16's 4096.
    let ones = halves(&vec![1.0; 4097]);
    let sum = eval(
        Op::Reduce {
            kind: ReduceKind::Sum,
            axes: vec![0],
        },
        &[&ones],
        DType::F16,
        &[],
    );
    assert_eq!(bits(&sum), [f16::from_f32(4096.0).to_bits()]);
    let b = t(&[3000], Buffer::Bf16(vec![bf16::ONE; 3000].into()));
    let sum = eval(
        Op::Reduce {
            kind: ReduceKind::Sum,
            axes: vec![0],
        },
        &[&b],
        DType::Bf16,
        &[],
    );
    // A bf16 accumulator stalls at 256; 3000 is halfway between bf16's 2992 and 3008 (ties
    // to even: 3008).
    assert_eq!(bits(&sum), [bf16::from_f32(3000.0).to_bits()]);
}

#[test]
fn dot_general_accumulates_in_f32() {
    // [2048, 1, 1] . [1, 1, 1]: an f16 accumulator gives 2048; f32 gives 2050, an f16 value.
    let a = t(&[1, 3], halves(&[2048.0, 1.0, 1.0]).into_data());
    let b = t(&[3, 1], halves(&[1.0, 1.0, 1.0]).into_data());
    let dims = DotDims {
        lhs_contract: vec![1],
        rhs_contract: vec![0],
        ..DotDims::default()
    };
    let c = eval(Op::DotGeneral(dims), &[&a, &b], DType::F16, &[1, 1]);
    assert_eq!(bits(&c), [f16::from_f32(2050.0).to_bits()]);
}

#[test]
fn data_movement_keeps_the_sixteen_bits() {
    let snan = f16::from_bits(0x7d01);
    let a = t(
        &[2, 2],
        Buffer::F16(vec![snan, f16::NEG_ZERO, f16::ONE, f16::MIN_POSITIVE_SUBNORMAL].into()),
    );
    let tr = eval(
        Op::Transpose { perm: vec![1, 0] },
        &[&a],
        DType::F16,
        &[2, 2],
    );
    assert_eq!(bits(&tr), [0x7d01, 0x3c00, 0x8000, 0x0001]);
    let p = bools(&[2, 2], &[true, false, true, false]);
    let s = eval(Op::Select, &[&p, &a, &tr], DType::F16, &[2, 2]);
    assert_eq!(bits(&s), [0x7d01, 0x3c00, 0x3c00, 0x0001]);
    let u = eval(Op::BitcastConvert, &[&a], DType::U16, &[2, 2]);
    assert_eq!(
        u.data(),
        &Buffer::U16(vec![0x7d01, 0x8000, 0x3c00, 0x0001].into())
    );
    let bytes = eval(Op::BitcastConvert, &[&a], DType::U8, &[2, 2, 2]);
    assert_eq!(
        bytes.data().get(0),
        kiln_ir::Scalar::U8(0x01),
        "little-endian"
    );
}

#[test]
fn sort_and_compare_order_by_value() {
    let a = halves(&[2.5, -0.0, f32::NAN, -1.0, 0.0, f32::INFINITY]);
    let sorted = eval(
        Op::Sort {
            dim: 0,
            keys: 1,
            dir: CompareDir::Lt,
            order: SortOrder::Total,
            output: 0,
        },
        &[&a],
        DType::F16,
        &[6],
    );
    let want: Vec<u16> = [-1.0, -0.0, 0.0, 2.5, f32::INFINITY]
        .iter()
        .map(|&x| f16::from_f32(x).to_bits())
        .collect();
    assert_eq!(bits(&sorted)[..5], want[..]);
    assert!(f16::from_bits(bits(&sorted)[5]).is_nan());
    let b = halves(&[2.5, 0.0, 1.0, -1.0, 0.0, 65504.0]);
    let lt = eval(Op::Compare(CompareDir::Lt), &[&a, &b], DType::Bool, &[6]);
    assert_bits(
        &lt,
        &bools(&[6], &[false, false, false, false, false, false]),
    );
    let eq = eval(Op::Compare(CompareDir::Eq), &[&a, &b], DType::Bool, &[6]);
    assert_bits(&eq, &bools(&[6], &[true, true, false, true, true, false]));
}

#[test]
fn iota_rounds_each_index_once() {
    let i = eval(Op::Iota { dim: 0 }, &[], DType::Bf16, &[300]);
    // 257 is halfway between bf16's 256 and 258: ties to even (256); 259 -> 260.
    assert_eq!(bits(&i)[257], bf16::from_f32(256.0).to_bits());
    assert_eq!(bits(&i)[259], bf16::from_f32(260.0).to_bits());
}

#[test]
fn elementwise_results_round_once_per_op() {
    // 1 + 2^-11 (exact in f32) is halfway between f16's 1 and 1 + 2^-10: ties to even.
    let a = halves(&[1.0, 1.0]);
    let b = halves(&[2f32.powi(-11), 3.0 * 2f32.powi(-12)]);
    let s = eval(
        Op::Binary(kiln_ir::BinaryOp::Add),
        &[&a, &b],
        DType::F16,
        &[2],
    );
    assert_eq!(bits(&s), [0x3c00, 0x3c01]);
    let e = eval(
        Op::Unary(kiln_ir::UnaryOp::Exp),
        &[&halves(&[12.0])],
        DType::F16,
        &[1],
    );
    assert_eq!(bits(&e), [0x7c00], "exp(12) = 162755 overflows f16 to inf");
}
