//! The 16-bit float dtypes `f16` and `bf16` in the `.kir` text (issue 37): types and
//! literals print and parse back to the same bits, decimal literals round once to nearest
//! even, and a literal that rounds to infinity is an error unless written `inf`.

use kiln_ir::{bf16, f16, parse_func, print_func, verify_func, DType, Op, Scalar};

fn constant(lit: &str, d: &str) -> Result<Scalar, String> {
    let src = format!("func @f() -> {d}[] {{\n  %c = constant {lit} : {d}[]\n  return %c\n}}\n");
    let f = parse_func(&src, "t.kir").map_err(|e| e.to_string())?;
    let Op::Constant(c) = &f.insts[0].op else {
        panic!("the first instruction is the constant")
    };
    assert_eq!(
        print_func(&parse_func(&print_func(&f), "p").unwrap()),
        print_func(&f)
    );
    Ok(c.data().get(0))
}

#[test]
fn half_types_and_literals_round_trip() {
    for d in [DType::F16, DType::Bf16] {
        let src = format!(
            "func @f(%x: {d}[4]) -> {d}[4] {{\n  %c = constant [0.1, -2.5, inf, nan] : {d}[4]\n  %y = add %x, %c : {d}[4]\n  return %y\n}}\n"
        );
        let f = parse_func(&src, "t.kir").unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(verify_func(&f).is_empty(), "{d}: {:?}", verify_func(&f));
        assert_eq!(print_func(&f), src, "{d}: prints as written");
    }
}

#[test]
fn decimal_literals_round_once_to_nearest_even() {
    assert_eq!(
        constant("0.1", "f16"),
        Ok(Scalar::F16(f16::from_bits(0x2e66)))
    );
    assert_eq!(
        constant("0.1", "bf16"),
        Ok(Scalar::Bf16(bf16::from_bits(0x3dcd)))
    );
    // 1 + 2^-11 is halfway between 1 and the next f16: ties go to even (1.0); a hair above
    // rounds up.
    assert_eq!(constant("1.00048828125", "f16"), Ok(Scalar::F16(f16::ONE)));
    assert_eq!(
        constant("1.00048828126", "f16"),
        Ok(Scalar::F16(f16::from_bits(0x3c01)))
    );
    // bf16: 1 + 2^-8 ties to 1.0; a hair above rounds up (once, not through f32).
    assert_eq!(constant("1.00390625", "bf16"), Ok(Scalar::Bf16(bf16::ONE)));
    assert_eq!(
        constant("1.003906251", "bf16"),
        Ok(Scalar::Bf16(bf16::from_bits(0x3f81)))
    );
    assert_eq!(constant("65504", "f16"), Ok(Scalar::F16(f16::MAX)));
    assert_eq!(constant("65519", "f16"), Ok(Scalar::F16(f16::MAX)));
    assert_eq!(
        constant("-inf", "bf16"),
        Ok(Scalar::Bf16(bf16::NEG_INFINITY))
    );
    assert_eq!(constant("1e-8", "f16"), Ok(Scalar::F16(f16::ZERO)));
}

#[test]
fn literals_that_round_to_infinity_are_range_errors() {
    for (lit, d) in [
        ("65520", "f16"),
        ("-1e5", "f16"),
        ("3.4e38", "bf16"),
        ("1e39", "bf16"),
    ] {
        assert_eq!(
            constant(lit, d),
            Err(format!("t.kir:2:17: '{lit}' is out of range for {d}")),
            "{lit}"
        );
    }
    assert_eq!(
        constant("-nan", "f16"),
        Err("t.kir:2:17: '-nan' is not a valid f16 literal: NaN has no sign, write 'nan'".into())
    );
    assert_eq!(
        constant("x", "bf16"),
        Err("t.kir:2:17: 'x' is not a valid bf16 literal".into())
    );
}

#[test]
fn half_floats_take_float_ops_and_not_integer_ones() {
    let ok = "func @f(%x: bf16[3]) -> bf16[3] {\n  %y = exp %x : bf16[3]\n  return %y\n}\n";
    assert!(verify_func(&parse_func(ok, "t.kir").unwrap()).is_empty());
    let bad = "func @f(%x: f16[3]) -> f16[3] {\n  %y = popcnt %x : f16[3]\n  return %y\n}\n";
    let err = parse_func(bad, "t.kir")
        .map_or_else(|e| e.to_string(), |f| format!("{:?}", verify_func(&f)));
    assert!(err.contains("not defined for f16"), "{err}");
}
