//! The integer dtypes `i8 i16 u8 u16 u64` in the `.kir` text (issue 34): every dtype's
//! type and literals (its extremes, -1, 0) print and parse back to the same bits, and a
//! literal out of its dtype's range is an error naming the value, the dtype and the place.

use kiln_ir::{parse_func, print_func, verify_func, DType, Op, Scalar};

/// `%c = constant [MIN, -1 (signed), 0, MAX] : T[n]` for integer dtype `d`.
fn extremes(d: DType) -> (String, Vec<i128>) {
    let (lo, hi) = d.int_range().unwrap();
    let values: Vec<i128> = [lo, -1, 0, hi]
        .into_iter()
        .filter(|v| (lo..=hi).contains(v))
        .collect();
    let list: Vec<String> = values.iter().map(i128::to_string).collect();
    let n = values.len();
    let src = format!(
        "func @f(%x: {d}[{n}]) -> {d}[{n}] {{\n  %c = constant [{}] : {d}[{n}]\n  %y = add %x, %c : {d}[{n}]\n  return %y\n}}\n",
        list.join(", ")
    );
    (src, values)
}

#[test]
fn every_integer_dtype_round_trips_types_and_extreme_literals() {
    for d in DType::ALL.into_iter().filter(|d| d.is_int()) {
        let (src, values) = extremes(d);
        let f = parse_func(&src, "t.kir").unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(verify_func(&f).is_empty(), "{d}: {:?}", verify_func(&f));
        let Op::Constant(c) = &f.insts[0].op else {
            panic!("{d}: the first instruction is the constant")
        };
        let got: Vec<Option<i128>> = (0..c.num_elements())
            .map(|i| c.data().get(i).to_int())
            .collect();
        assert_eq!(
            got,
            values.iter().map(|&v| Some(v)).collect::<Vec<_>>(),
            "{d}"
        );
        assert_eq!(c.dtype(), d);
        let text = print_func(&f);
        assert_eq!(text, src, "{d}: prints as written");
        assert_eq!(print_func(&parse_func(&text, "p").unwrap()), text, "{d}");
    }
}

#[test]
fn a_splat_of_a_narrow_dtype_and_a_scalar_u64() {
    let src = "func @f() -> (u8[3], u64[]) {\n  %a = constant 255 : u8[3]\n  %b = constant 18446744073709551615 : u64[]\n  return %a, %b\n}\n";
    let f = parse_func(src, "t.kir").unwrap();
    let Op::Constant(b) = &f.insts[1].op else {
        panic!()
    };
    assert_eq!(b.data().get(0), Scalar::U64(u64::MAX));
    assert_eq!(print_func(&f), src);
}

#[test]
fn out_of_range_literals_name_the_value_the_dtype_and_the_place() {
    let cases = [
        ("256", "u8", "t.kir:2:17: '256' is out of range for u8 (0 to 255)"),
        ("-129", "i8", "t.kir:2:17: '-129' is out of range for i8 (-128 to 127)"),
        ("-1", "u16", "t.kir:2:17: '-1' is out of range for u16 (0 to 65535)"),
        ("32768", "i16", "t.kir:2:17: '32768' is out of range for i16 (-32768 to 32767)"),
        (
            "18446744073709551616",
            "u64",
            "t.kir:2:17: '18446744073709551616' is out of range for u64 (0 to 18446744073709551615)",
        ),
        ("1.5", "u8", "t.kir:2:17: '1.5' is not a valid u8 literal"),
        ("true", "i8", "t.kir:2:17: 'true' is not a valid i8 literal"),
    ];
    for (lit, d, want) in cases {
        let src =
            format!("func @f() -> {d}[] {{\n  %c = constant {lit} : {d}[]\n  return %c\n}}\n");
        let e = parse_func(&src, "t.kir").unwrap_err().to_string();
        assert_eq!(e, want, "{lit} : {d}");
    }
    // Inside a list, the position is the element's.
    let src = "func @f() -> u8[3] {\n  %c = constant [1, 2, 300] : u8[3]\n  return %c\n}\n";
    let e = parse_func(src, "t.kir").unwrap_err().to_string();
    assert_eq!(e, "t.kir:2:24: '300' is out of range for u8 (0 to 255)");
}

#[test]
fn typing_rules_take_the_new_integers_where_they_take_i32() {
    let src = "func @f(%a: u8[4], %b: u8[4], %n: i16[], %t: f32[4,3]) -> (u8[4], i16[4], bool[4], u8[4], f32[2,3], u8[4,3,4], u64[]) {
  %s = shift_left %a, %b : u8[4]
  %c = convert %a : i16[4]
  %p = compare %a, %b, dir=lt : bool[4]
  %m = popcnt %a : u8[4]
  %d = dynamic_slice %t, %n, %n, sizes=[2, 3] : f32[2,3]
  %w = bitcast_convert %t : u8[4,3,4]
  %r = reduce_sum %c, axes=[0] : i16[]
  %z = convert %r : u64[]
  return %s, %c, %p, %m, %d, %w, %z
}
";
    let f = parse_func(src, "t.kir").unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    // Float-only ops still refuse them, by name.
    let bad = "func @f(%a: u8[4]) -> u8[4] {\n  %e = exp %a : u8[4]\n  return %e\n}\n";
    let diags = verify_func(&parse_func(bad, "t.kir").unwrap());
    assert_eq!(diags.len(), 1);
    assert!(format!("{diags:?}").contains("u8"), "{diags:?}");
}

#[test]
fn the_tracer_records_the_new_dtypes_and_xla_bitcast_shapes() {
    use kiln_ir::{trace, TensorType, Tracer};
    let f = trace(
        "f",
        &[TensorType::new(DType::F32, [3])],
        |a: &[Tracer]| {
            let bytes = a[0].bitcast_convert(DType::U8);
            let back = bytes.bitcast_convert(DType::F32);
            let q = a[0].cast(DType::I16);
            let q = &q + &q.scalar_like(-32768.0);
            (bytes, back, q)
        },
    )
    .unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    let text = print_func(&f);
    assert!(text.contains("bitcast_convert %0 : u8[3,4]"), "{text}");
    assert!(text.contains(": f32[3]\n"), "{text}");
    assert!(text.contains("constant -32768 : i16[]"), "{text}");
    // A weakly typed literal outside the dtype's range is an error, not a wrap.
    let e = trace("f", &[TensorType::new(DType::U8, [2])], |a: &[Tracer]| {
        &a[0] + &a[0].scalar_like(256.0)
    })
    .unwrap_err();
    assert!(e.to_string().contains("256 is out of range for u8"), "{e}");
}
