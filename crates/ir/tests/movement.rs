//! The data-movement ops (`reverse`, `dynamic_slice`, `dynamic_update_slice`, the general
//! `pad`, `gather`, `scatter`): `.kir` text round trips, the verifier's errors name the op
//! and what is wrong, and the tracer records them.

use kiln_ir::{parse_func, print_func, trace, verify_func, DType, TensorType, Tracer};

/// Parses, verifies (no errors), prints, and checks the printed text reads back to itself.
fn round_trip(src: &str) -> String {
    let f = parse_func(src, "t.kir").unwrap_or_else(|e| panic!("{e}\n{src}"));
    let diags = verify_func(&f);
    assert!(diags.is_empty(), "{diags:?}");
    let text = print_func(&f);
    let again = parse_func(&text, "printed").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(text, print_func(&again));
    assert_eq!(f, again);
    text
}

/// The verifier's messages for a function whose body is `body` (params `%x: f32[4,6]`,
/// `%i: i32[]`, `%j: i64[]`), returning `%y : ty`.
fn errors(body: &str, ty: &str) -> Vec<String> {
    let src = format!(
        "func @f(%x: f32[4,6], %i: i32[], %j: i64[]) -> {ty} {{\n  %y = {body} : {ty}\n  return %y\n}}\n"
    );
    match parse_func(&src, "t.kir") {
        Ok(f) => verify_func(&f).iter().map(|d| d.render("t.kir")).collect(),
        Err(e) => vec![e.to_string()],
    }
}

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

#[test]
fn reverse_round_trips_and_checks_its_dims() {
    let text = round_trip(
        "func @f(%x: f32[4,6]) -> f32[4,6] {\n  %y = reverse %x, dims=[0, 1] : f32[4,6]\n  return %y\n}\n",
    );
    assert!(
        text.contains("%y = reverse %x, dims=[0, 1] : f32[4,6]"),
        "{text}"
    );
    assert_eq!(
        errors("reverse %x, dims=[1, 1]", "f32[4,6]"),
        ["t.kir:2:3: '%y = reverse': dims=[1, 1] must be distinct dimensions below rank 2 (operands: f32[4,6])"]
    );
    assert_eq!(
        errors("reverse %x, dims=[2]", "f32[4,6]"),
        ["t.kir:2:3: '%y = reverse': dims=[2] must be distinct dimensions below rank 2 (operands: f32[4,6])"]
    );
    assert_eq!(
        errors("reverse %x, dims=[0]", "f32[6,4]"),
        ["t.kir:2:3: '%y = reverse': declared result type f32[6,4] but the op produces f32[4,6] (operands: f32[4,6])"]
    );
    assert_eq!(
        errors("reverse %x", "f32[4,6]"),
        ["t.kir:2:8: 'reverse' needs the attribute 'dims'"]
    );
}

#[test]
fn tracer_records_reverse() {
    let f = trace("f", &[f32t(&[2, 3])], |a: &[Tracer]| a[0].reverse(&[1])).unwrap();
    assert!(verify_func(&f).is_empty());
    assert!(
        print_func(&f).contains("reverse %0, dims=[1] : f32[2,3]"),
        "{}",
        print_func(&f)
    );
    let e = trace("f", &[f32t(&[2, 3])], |a: &[Tracer]| a[0].reverse(&[3])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reverse: dims=[3] must be distinct dimensions below rank 2 (operands: f32[2,3])"
    );
}

#[test]
fn dynamic_slice_round_trips_and_checks_its_operands() {
    let text = round_trip(
        "func @f(%x: f32[4,6], %i: i32[], %j: i64[]) -> (f32[2,3], f32[4,6]) {\n  \
         %y = dynamic_slice %x, %i, %j, sizes=[2, 3] : f32[2,3]\n  \
         %z = dynamic_update_slice %x, %y, %j, %i : f32[4,6]\n  \
         return %y, %z\n}\n",
    );
    assert!(
        text.contains("%y = dynamic_slice %x, %i, %j, sizes=[2, 3] : f32[2,3]"),
        "{text}"
    );
    assert!(
        text.contains("%z = dynamic_update_slice %x, %y, %j, %i : f32[4,6]"),
        "{text}"
    );
    let e = |body: &str, ty: &str| errors(body, ty).join("\n");
    assert_eq!(
        e("dynamic_slice %x, %i, sizes=[2, 3]", "f32[2,3]"),
        "t.kir:2:3: '%y = dynamic_slice': needs one start index per dimension of f32[4,6] (2), got 1 (operands: f32[4,6], i32[])"
    );
    assert_eq!(
        e("dynamic_slice %x, %i, %x, sizes=[2, 3]", "f32[2,3]"),
        "t.kir:2:3: '%y = dynamic_slice': start index 1 must be an integer scalar (i32, i64 or u32), got f32[4,6] (operands: f32[4,6], i32[], f32[4,6])"
    );
    assert_eq!(
        e("dynamic_slice %x, %i, %j, sizes=[5, 3]", "f32[5,3]"),
        "t.kir:2:3: '%y = dynamic_slice': sizes=[5, 3]: dimension 0 takes 5 elements of 4 (operands: f32[4,6], i32[], i64[])"
    );
    assert_eq!(
        e("dynamic_slice %x, %i, %j, sizes=[2]", "f32[2]"),
        "t.kir:2:3: '%y = dynamic_slice': sizes=[2] needs 2 entries for f32[4,6] (operands: f32[4,6], i32[], i64[])"
    );
    assert_eq!(
        e("dynamic_update_slice %x, %i, %j", "f32[4,6]"),
        "t.kir:2:3: '%y = dynamic_update_slice': the update i32[] must have the dtype and rank of f32[4,6] and fit inside it (operands: f32[4,6], i32[], i64[])"
    );
    assert_eq!(
        e("dynamic_update_slice %x, %x, %j", "f32[4,6]"),
        "t.kir:2:3: '%y = dynamic_update_slice': needs one start index per dimension of f32[4,6] (2), got 1 (operands: f32[4,6], f32[4,6], i64[])"
    );
    assert_eq!(
        e("dynamic_update_slice %x", "f32[4,6]"),
        "t.kir:2:3: '%y = dynamic_update_slice': needs an operand, an update and the start indices (operands: f32[4,6])"
    );
}

#[test]
fn tracer_records_dynamic_slices() {
    let i32s = TensorType::scalar(DType::I32);
    let f = trace(
        "f",
        &[f32t(&[4, 6]), i32s.clone(), i32s],
        |a: &[Tracer]| {
            let w = a[0].dynamic_slice(&[&a[1], &a[2]], &[2, 2]);
            a[0].dynamic_update_slice(&-&w, &[&a[2], &a[1]])
        },
    )
    .unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    assert!(
        text.contains("dynamic_slice %0, %1, %2, sizes=[2, 2] : f32[2,2]"),
        "{text}"
    );
    assert!(
        text.contains("dynamic_update_slice %0, %4, %2, %1 : f32[4,6]"),
        "{text}"
    );
}

#[test]
fn general_pad_round_trips_and_the_plain_form_stays_plain() {
    let text = round_trip(
        "func @f(%x: f32[4,6], %v: f32[]) -> (f32[3,9], f32[4,6], f32[6,6]) {\n  \
         %y = pad %x, %v, low=[-1, 2], high=[0, -4], interior=[0, 1] : f32[3,9]\n  \
         %z = pad %x, %v, low=[1, -1], high=[-1, 1] : f32[4,6]\n  \
         %w = pad %x, %v, low=[1, 0], high=[1, 0] : f32[6,6]\n  \
         return %y, %z, %w\n}\n",
    );
    assert!(
        text.contains("%y = pad %x, %v, low=[-1, 2], high=[0, -4], interior=[0, 1] : f32[3,9]"),
        "{text}"
    );
    assert!(
        text.contains("%z = pad %x, %v, low=[1, -1], high=[-1, 1], interior=[0, 0] : f32[4,6]"),
        "{text}"
    );
    assert!(
        text.contains("%w = pad %x, %v, low=[1, 0], high=[1, 0] : f32[6,6]"),
        "{text}"
    );
    let f = parse_func(&text, "t.kir").unwrap();
    assert!(matches!(f.insts[2].op, kiln_ir::Op::Pad { .. }));
    assert!(matches!(f.insts[1].op, kiln_ir::Op::PadGeneral { .. }));
    assert_eq!(
        kiln_ir::Op::pad(vec![1], vec![0], vec![0]),
        kiln_ir::Op::Pad {
            low: vec![1],
            high: vec![0]
        }
    );
    let e = |body: &str, ty: &str| errors(body, ty).join("\n");
    let src = "func @f(%x: f32[4,6], %v: f32[]) -> f32[1,6] {\n  %y = pad %x, %v, low=[-3, 0], high=[-2, 0], interior=[0, 0] : f32[1,6]\n  return %y\n}\n";
    let f = parse_func(src, "t.kir").unwrap();
    assert_eq!(
        verify_func(&f)[0].render("t.kir"),
        "t.kir:2:3: '%y = pad': dimension 0: low -3 + size 4 with interior 0 + high -2 is negative (operands: f32[4,6], f32[])"
    );
    assert_eq!(
        e("pad %x, %i, low=[0, 0], high=[0, 0], interior=[1, 1]", "f32[7,11]"),
        "t.kir:2:3: '%y = pad': padding value must be a f32[] scalar, got i32[] (operands: f32[4,6], i32[])"
    );
    assert_eq!(
        e("pad %x, %x, low=[0, 0], high=[0, 0], interior=[1]", "f32[7,11]"),
        "t.kir:2:3: '%y = pad': padding value must be a f32[] scalar, got f32[4,6] (operands: f32[4,6], f32[4,6])"
    );
    let src = "func @f(%x: f32[4,6], %v: f32[]) -> f32[7,6] {\n  %y = pad %x, %v, low=[0, 0], high=[0, 0], interior=[1] : f32[7,6]\n  return %y\n}\n";
    let f = parse_func(src, "t.kir").unwrap();
    assert_eq!(
        verify_func(&f)[0].render("t.kir"),
        "t.kir:2:3: '%y = pad': low, high and interior need 2 entries for f32[4,6], got 2, 2 and 1 (operands: f32[4,6], f32[])"
    );
    assert_eq!(
        e("pad %x, %x, low=[0, 0], high=[0, x]", "f32[4,6]"),
        "t.kir:2:41: expected a non-negative integer, found 'x'"
    );
    assert_eq!(
        e(
            "pad %x, %x, low=[0, 0], high=[0, 0], interior=[-1, 0]",
            "f32[4,6]"
        ),
        "t.kir:2:55: expected a non-negative integer, found '-1'"
    );
}

#[test]
fn tracer_records_the_general_pad() {
    let f = trace("f", &[f32t(&[3])], |a: &[Tracer]| {
        let p = a[0].pad_general(&[-1], &[2], &[1], 0.0);
        let q = a[0].pad_general(&[1], &[0], &[0], 0.0);
        (p, q)
    })
    .unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    assert!(
        text.contains("low=[-1], high=[2], interior=[1] : f32[6]"),
        "{text}"
    );
    assert!(text.contains("low=[1], high=[0] : f32[4]"), "{text}");
}
