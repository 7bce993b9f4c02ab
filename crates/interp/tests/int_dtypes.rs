//! The integer dtypes beyond i32/i64/u32 (`i8 i16 u8 u16 u64`, issue 34): `convert` between
//! every pair of dtypes on edge values against an independent reference of XLA's rules,
//! wrapping arithmetic, XLA's division and shift rules, bit counts, reductions, `sort`,
//! `iota` and `bitcast_convert`, with exact expected values.

mod common;
use common::*;
use kiln_ir::{
    BinaryOp, Buffer, CompareDir, DType, Op, ReduceKind, Scalar, SortOrder, Tensor, UnaryOp,
};

const NEW_INTS: [DType; 5] = [DType::I8, DType::I16, DType::U8, DType::U16, DType::U64];

/// A rank-1 tensor of integer dtype `d` (each value must be in `d`'s range).
fn ints(d: DType, v: &[i128]) -> Tensor {
    let s: Vec<Scalar> = v
        .iter()
        .map(|&x| Scalar::from_int(d, x).unwrap_or_else(|| panic!("{x} is not a {d}")))
        .collect();
    t(&[v.len()], Buffer::from_scalars(d, &s).unwrap())
}

fn min_max(d: DType) -> (i128, i128) {
    d.int_range().unwrap()
}

fn bin(op: BinaryOp, a: &Tensor, b: &Tensor) -> Tensor {
    eval(Op::Binary(op), &[a, b], a.dtype(), a.shape())
}

/// Edge values of dtype `d`: its extremes, -1, 0, 1, NaN, ±inf, ±0.5 and the 2^k
/// boundaries of every integer width (those `d` can hold).
fn edge_values(d: DType) -> Vec<Scalar> {
    let mut ints: Vec<i128> = vec![0, 1, -1, 7, -7];
    for k in [7, 8, 15, 16, 31, 32, 53, 63, 64] {
        let p = 1i128 << k;
        ints.extend([p - 1, p, p + 1, -p - 1, -p, -p + 1]);
    }
    match d {
        DType::Bool => vec![Scalar::Bool(false), Scalar::Bool(true)],
        DType::F32 | DType::F64 => {
            let mut f: Vec<f64> = ints.iter().map(|&x| x as f64).collect();
            f.extend([0.5, -0.5, 1.5, -1.5, 255.9, -128.9, 1e30, -1e30, -0.0]);
            f.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.999_999_9]);
            f.into_iter()
                .map(|x| match d {
                    DType::F32 => Scalar::F32(x as f32),
                    _ => Scalar::F64(x),
                })
                .collect()
        }
        _ => {
            let (lo, hi) = min_max(d);
            ints.extend([lo, hi]);
            ints.retain(|&x| (lo..=hi).contains(&x));
            ints.into_iter()
                .map(|x| Scalar::from_int(d, x).unwrap())
                .collect()
        }
    }
}

/// XLA's `convert` of one value, computed without Rust's `as` between the two types:
/// integers wrap modulo 2^bits, floats truncate toward zero and saturate (NaN -> 0),
/// integers round to the nearest float (ties to even), to bool is `x != 0`.
fn reference(s: Scalar, to: DType) -> Scalar {
    if to == DType::Bool {
        return Scalar::Bool(s.to_f64() != 0.0 || s.to_f64().is_nan());
    }
    let int_value: Option<i128> = match s {
        Scalar::Bool(b) => Some(i128::from(b)),
        Scalar::F32(_) | Scalar::F64(_) => None,
        s => s.to_int(),
    };
    match (to, int_value) {
        (DType::F64, Some(v)) => Scalar::F64(round_to_float(v, 53)),
        (DType::F32, Some(v)) => Scalar::F32(round_to_float(v, 24) as f32),
        (DType::F64, None) => Scalar::F64(s.to_f64()),
        (DType::F32, None) => match s {
            Scalar::F64(x) => Scalar::F32(x as f32),
            other => other,
        },
        (d, Some(v)) => {
            let bits = d.bits();
            let wrapped = v.rem_euclid(1i128 << bits);
            let (lo, _) = min_max(d);
            let v = if lo < 0 && wrapped >= 1i128 << (bits - 1) {
                wrapped - (1i128 << bits)
            } else {
                wrapped
            };
            Scalar::from_int(d, v).unwrap()
        }
        (d, None) => {
            let x = s.to_f64();
            let (lo, hi) = min_max(d);
            let v = if x.is_nan() {
                0
            } else if x <= lo as f64 {
                lo
            } else if x >= hi as f64 {
                hi
            } else {
                x.trunc() as i128
            };
            Scalar::from_int(d, v).unwrap()
        }
    }
}

/// `v` rounded to a float with a `mantissa`-bit significand, ties to even, as an f64.
fn round_to_float(v: i128, mantissa: u32) -> f64 {
    let mag = v.unsigned_abs();
    let width = 128 - mag.leading_zeros();
    let rounded = if width <= mantissa {
        mag
    } else {
        let drop = width - mantissa;
        let (q, r, half) = (mag >> drop, mag & ((1 << drop) - 1), 1u128 << (drop - 1));
        let q = if r > half || (r == half && q & 1 == 1) {
            q + 1
        } else {
            q
        };
        q << drop
    };
    let f = rounded as f64; // exact: at most `mantissa` significant bits
    if v < 0 {
        -f
    } else {
        f
    }
}

#[test]
fn convert_between_every_pair_of_dtypes_follows_xla_on_edge_values() {
    let mut checked = 0;
    // f16 and bf16 have their own conversion tests (half_dtypes.rs).
    let dtypes = DType::ALL.into_iter().filter(|d| !d.is_half());
    for from in dtypes.clone() {
        let values = edge_values(from);
        let a = t(
            &[values.len()],
            Buffer::from_scalars(from, &values).unwrap(),
        );
        for to in dtypes.clone() {
            let got = eval(Op::Convert, &[&a], to, a.shape());
            for (i, &s) in values.iter().enumerate() {
                let want = reference(s, to);
                let g = got.data().get(i);
                let same = g.same_bits(want) || (g.to_f64().is_nan() && want.to_f64().is_nan());
                assert!(
                    same,
                    "convert {s:?} : {from} -> {to}: got {g:?}, want {want:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 3000, "{checked}");
}

#[test]
fn convert_hand_computed_cases() {
    let f = |v: f32, to: DType| {
        eval(Op::Convert, &[&f32s(&[1], &[v])], to, &[1])
            .data()
            .get(0)
    };
    assert_eq!(f(300.7, DType::U8), Scalar::U8(255));
    assert_eq!(f(-1.5, DType::U8), Scalar::U8(0));
    assert_eq!(f(-200.0, DType::I8), Scalar::I8(-128));
    assert_eq!(f(f32::NAN, DType::I16), Scalar::I16(0));
    assert_eq!(f(f32::INFINITY, DType::U64), Scalar::U64(u64::MAX));
    assert_eq!(f(-2.9, DType::I16), Scalar::I16(-2));
    let i = |a: Tensor, to: DType| eval(Op::Convert, &[&a], to, a.shape());
    assert_bits(
        &i(ints(DType::I8, &[-128, -1]), DType::U8),
        &ints(DType::U8, &[128, 255]),
    );
    assert_bits(
        &i(ints(DType::U16, &[65535, 256]), DType::I8),
        &ints(DType::I8, &[-1, 0]),
    );
    assert_bits(
        &i(ints(DType::I16, &[-1]), DType::U64),
        &ints(DType::U64, &[u64::MAX.into()]),
    );
    let big = (1i128 << 53) + 1;
    assert_bits(
        &i(ints(DType::U64, &[big]), DType::F64),
        &f64s(&[1], &[(1u64 << 53) as f64]),
    );
    assert_bits(
        &i(ints(DType::U64, &[u64::MAX.into()]), DType::F32),
        &f32s(&[1], &[18446744073709551616.0]),
    );
    assert_bits(
        &i(ints(DType::U8, &[0, 2]), DType::Bool),
        &bools(&[2], &[false, true]),
    );
    assert_bits(
        &i(bools(&[2], &[true, false]), DType::I16),
        &ints(DType::I16, &[1, 0]),
    );
}

#[test]
fn arithmetic_wraps_in_every_new_dtype() {
    for d in NEW_INTS {
        let (lo, hi) = min_max(d);
        let wrap = |v: i128| {
            if v > hi {
                v - (hi - lo + 1)
            } else if v < lo {
                v + (hi - lo + 1)
            } else {
                v
            }
        };
        let a = ints(d, &[hi, lo, 3, hi]);
        let b = ints(d, &[1, hi.min(1), 2, 2]);
        let want = |f: fn(i128, i128) -> i128| {
            let (x, y) = ([hi, lo, 3, hi], [1, hi.min(1), 2, 2]);
            ints(d, &(0..4).map(|k| wrap(f(x[k], y[k]))).collect::<Vec<_>>())
        };
        assert_bits(&bin(BinaryOp::Add, &a, &b), &want(|x, y| x + y));
        assert_bits(&bin(BinaryOp::Sub, &a, &b), &want(|x, y| x - y));
        // hi * 2 wraps once: 2·hi - 2^bits = -2 (signed) or 2^bits - 2 (unsigned).
        let m = bin(BinaryOp::Mul, &a, &b);
        assert_eq!(
            m.data().get(3).to_int(),
            Some(if lo < 0 { -2 } else { hi - 1 }),
            "{d}"
        );
        let neg = eval(Op::Unary(UnaryOp::Neg), &[&ints(d, &[1])], d, &[1]);
        assert_eq!(
            neg.data().get(0).to_int(),
            Some(if lo < 0 { -1 } else { hi }),
            "{d}"
        );
        assert_bits(&bin(BinaryOp::Max, &a, &b), &want(|x, y| x.max(y)));
        assert_bits(&bin(BinaryOp::Min, &a, &b), &want(|x, y| x.min(y)));
    }
}

#[test]
fn division_follows_xla_in_every_new_dtype() {
    for d in NEW_INTS {
        let (lo, hi) = min_max(d);
        if lo < 0 {
            let a = ints(d, &[7, -7, lo, lo, -7]);
            let b = ints(d, &[0, 2, -1, 0, -2]);
            assert_bits(&bin(BinaryOp::Div, &a, &b), &ints(d, &[-1, -3, lo, -1, 3]));
            assert_bits(&bin(BinaryOp::Rem, &a, &b), &ints(d, &[7, -1, 0, lo, -1]));
        } else {
            let a = ints(d, &[7, hi, 9]);
            let b = ints(d, &[0, 2, hi]);
            assert_bits(&bin(BinaryOp::Div, &a, &b), &ints(d, &[hi, hi / 2, 0]));
            assert_bits(&bin(BinaryOp::Rem, &a, &b), &ints(d, &[7, 1, 9]));
        }
    }
}

#[test]
fn shifts_by_the_width_or_more_give_zero_or_the_sign_fill() {
    for d in NEW_INTS {
        let bits = i128::from(d.bits());
        let (lo, hi) = min_max(d);
        let top = if lo < 0 { lo } else { (hi >> 1) + 1 }; // only the top bit set
        let a = ints(d, &[1, top, top, 5]);
        let n = ints(d, &[bits - 1, 1, bits, bits + 3]);
        let shl = bin(BinaryOp::ShiftLeft, &a, &n);
        assert_bits(&shl, &ints(d, &[top, 0, 0, 0]));
        let srl = bin(BinaryOp::ShiftRightLogical, &a, &n);
        assert_bits(&srl, &ints(d, &[0, 1 << (bits - 2), 0, 0]));
        let fill = if lo < 0 { -1 } else { hi };
        let sra = bin(BinaryOp::ShiftRightArithmetic, &a, &n);
        let half = if lo < 0 {
            top >> 1
        } else {
            hi ^ ((1 << (bits - 2)) - 1)
        };
        assert_bits(&sra, &ints(d, &[0, half, fill, 0]));
        if lo < 0 {
            // A negative amount is a huge unsigned one.
            let neg = bin(BinaryOp::ShiftLeft, &ints(d, &[3]), &ints(d, &[-1]));
            assert_bits(&neg, &ints(d, &[0]));
        }
    }
}

#[test]
fn popcnt_and_clz_count_within_the_width() {
    for d in NEW_INTS {
        let bits = i128::from(d.bits());
        let (lo, hi) = min_max(d);
        let all_ones = if lo < 0 { -1 } else { hi };
        let a = ints(d, &[0, 1, all_ones, 6]);
        let p = eval(Op::Unary(UnaryOp::Popcnt), &[&a], d, &[4]);
        assert_bits(&p, &ints(d, &[0, 1, bits, 2]));
        let c = eval(Op::Unary(UnaryOp::Clz), &[&a], d, &[4]);
        assert_bits(&c, &ints(d, &[bits, bits - 1, 0, bits - 3]));
    }
}

#[test]
fn reductions_wrap_and_use_the_dtype_extremes_as_identities() {
    for d in NEW_INTS {
        let (lo, hi) = min_max(d);
        let a = ints(d, &[hi, 2, lo, 5, hi, 1]);
        let red = |kind, a: &Tensor, shape: &[usize]| {
            let op = Op::Reduce {
                kind,
                axes: vec![1],
            };
            eval(op, &[a], d, shape)
        };
        let m = t(&[2, 3], a.data().clone());
        // [hi + 2 + lo, 5 + hi + 1] wrapped: hi + lo + 2 is 1 (signed) or hi + 2 ≡ 1 (unsigned).
        let wrap = |v: i128| if v > hi { v - (hi - lo + 1) } else { v };
        let sum = red(ReduceKind::Sum, &m, &[2]);
        assert_bits(&sum, &ints(d, &[wrap(hi + 2 + lo), wrap(hi + 6)]));
        assert_bits(&red(ReduceKind::Max, &m, &[2]), &ints(d, &[hi, hi]));
        assert_bits(&red(ReduceKind::Min, &m, &[2]), &ints(d, &[lo, 1]));
        let empty = t(&[2, 0], Buffer::zeros(d, 0));
        assert_bits(&red(ReduceKind::Max, &empty, &[2]), &ints(d, &[lo, lo]));
        assert_bits(&red(ReduceKind::Min, &empty, &[2]), &ints(d, &[hi, hi]));
        assert_bits(&red(ReduceKind::Prod, &empty, &[2]), &ints(d, &[1, 1]));
    }
}

#[test]
fn sort_orders_u8_and_i16_by_value() {
    let sort = |k: &Tensor, v: &Tensor, output: usize| {
        let op = Op::Sort {
            dim: 0,
            keys: 1,
            dir: CompareDir::Lt,
            order: SortOrder::Canonical,
            output,
        };
        let dt = if output == 0 { k.dtype() } else { v.dtype() };
        eval(op, &[k, v], dt, k.shape())
    };
    let idx = ints(DType::I32, &[0, 1, 2, 3, 4]);
    let u = ints(DType::U8, &[200, 3, 255, 0, 3]);
    assert_bits(&sort(&u, &idx, 0), &ints(DType::U8, &[0, 3, 3, 200, 255]));
    assert_bits(&sort(&u, &idx, 1), &ints(DType::I32, &[3, 1, 4, 0, 2]));
    let s = ints(DType::I16, &[5, -32768, 32767, -1, 0]);
    assert_bits(
        &sort(&s, &idx, 0),
        &ints(DType::I16, &[-32768, -1, 0, 5, 32767]),
    );
    let big = ints(DType::U64, &[u64::MAX.into(), 1 << 63, 0]);
    let idx3 = ints(DType::I32, &[0, 1, 2]);
    assert_bits(&sort(&big, &idx3, 1), &ints(DType::I32, &[2, 1, 0]));
}

#[test]
fn compare_select_iota_and_indices_take_every_new_dtype() {
    for d in NEW_INTS {
        let (lo, hi) = min_max(d);
        let a = ints(d, &[lo, hi, 0]);
        let b = ints(d, &[hi, lo, 0]);
        let lt = eval(Op::Compare(CompareDir::Lt), &[&a, &b], DType::Bool, &[3]);
        assert_bits(&lt, &bools(&[3], &[true, false, false]));
        let p = bools(&[3], &[true, false, true]);
        let sel = eval(Op::Select, &[&p, &a, &b], d, &[3]);
        assert_bits(&sel, &ints(d, &[lo, lo, 0]));
        let iota = eval(Op::Iota { dim: 0 }, &[], d, &[4]);
        assert_bits(&iota, &ints(d, &[0, 1, 2, 3]));
        // A start index of this dtype, clamped as XLA does.
        let x = f32s(&[4], &[1.0, 2.0, 3.0, 4.0]);
        let start = t(
            &[],
            Buffer::from_scalars(d, &[Scalar::from_int(d, hi).unwrap()]).unwrap(),
        );
        let ds = eval(
            Op::DynamicSlice { sizes: vec![2] },
            &[&x, &start],
            DType::F32,
            &[2],
        );
        assert_bits(&ds, &f32s(&[2], &[3.0, 4.0]));
    }
}

#[test]
fn bitcast_convert_changes_width_little_endian() {
    let x = f32s(&[2], &[1.0, -2.5]);
    let bytes = eval(Op::BitcastConvert, &[&x], DType::U8, &[2, 4]);
    assert_bits(
        &bytes,
        &t(
            &[2, 4],
            Buffer::U8(vec![0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0].into()),
        ),
    );
    assert_bits(&eval(Op::BitcastConvert, &[&bytes], DType::F32, &[2]), &x);
    let halves = eval(
        Op::BitcastConvert,
        &[&ints(DType::U64, &[1 << 32 | 7])],
        DType::U32,
        &[1, 2],
    );
    assert_bits(&halves, &t(&[1, 2], Buffer::U32(vec![7, 1].into())));
    let s = eval(
        Op::BitcastConvert,
        &[&ints(DType::U16, &[0xffff])],
        DType::I16,
        &[1],
    );
    assert_bits(&s, &ints(DType::I16, &[-1]));
}
