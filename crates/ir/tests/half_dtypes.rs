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

/// The tracer's `bf16` boundary: a `bf16` result of float math cast to `f32` is that op on
/// `f32` operands (XLA:CPU's `convert(op_bf16(...))`), products included; an `f16` one, a
/// cast to another type and a `bf16` op kept as `bf16` are rounded as usual; `mean` of a
/// 16-bit tensor sums and divides in `f32`.
#[test]
fn tracer_casts_bf16_math_to_f32_as_xla_cpu_computes_it() {
    use kiln_ir::{trace, TensorType};
    let ty = |d: DType, s: &[usize]| TensorType::new(d, s.to_vec());
    let ops_of = |f: &kiln_ir::Func| {
        let out: Vec<(String, DType)> = f
            .insts
            .iter()
            .map(|i| (i.op.name().to_string(), f.ty(i.results[0]).dtype))
            .collect();
        out
    };
    // bf16: the product and the tanh are recomputed in f32 (the bf16 ones stay, unused).
    let f = trace(
        "b",
        &[ty(DType::Bf16, &[2, 3]), ty(DType::Bf16, &[3, 4])],
        |a| {
            vec![
                a[0].matmul(&a[1]).cast(DType::F32),
                a[0].tanh().cast(DType::F32),
                (&a[0] * &a[0]).cast(DType::F64),
            ]
        },
    )
    .unwrap();
    let ops = ops_of(&f);
    assert!(ops.contains(&("dot_general".into(), DType::F32)), "{ops:?}");
    assert!(ops.contains(&("tanh".into(), DType::F32)), "{ops:?}");
    let results: Vec<&str> = f
        .results
        .iter()
        .map(|&r| f.def_inst(r).unwrap().op.name())
        .collect();
    assert_eq!(
        results,
        ["dot_general", "tanh", "convert"],
        "{}",
        print_func(&f)
    );
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    // f16: rounded, then converted.
    let g = trace("h", &[ty(DType::F16, &[4])], |a| {
        a[0].tanh().cast(DType::F32)
    })
    .unwrap();
    let r = g.results[0];
    assert_eq!(g.def_inst(r).unwrap().op, Op::Convert, "{}", print_func(&g));
    // mean: widened, summed and divided in f32, rounded once.
    let m = trace("m", &[ty(DType::Bf16, &[4, 8])], |a| a[0].mean(&[1])).unwrap();
    let ops = ops_of(&m);
    assert!(ops.contains(&("reduce_sum".into(), DType::F32)), "{ops:?}");
    assert!(ops.contains(&("div".into(), DType::F32)), "{ops:?}");
    assert_eq!(m.ty(m.results[0]).dtype, DType::Bf16);
}
