use kiln_ir::{parse_func, print_func, verify_func};

const SOFTMAX: &str = r#"
// comments start with two slashes
func @softmax(%x: f32[4,8]) -> f32[4,8] {
  %m  = reduce_max %x, axes=[1] : f32[4]
  %mb = broadcast_in_dim %m, dims=[0] : f32[4,8]
  %d  = sub %x, %mb : f32[4,8]
  %e  = exp %d : f32[4,8]
  %s  = reduce_sum %e, axes=[1] : f32[4]
  %sb = broadcast_in_dim %s, dims=[0] : f32[4,8]
  %y  = div %e, %sb : f32[4,8]
  return %y
}
"#;

#[test]
fn design_example_parses_verifies_and_round_trips() {
    let f = parse_func(SOFTMAX, "softmax.kir").unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    let again = print_func(&parse_func(&text, "printed").unwrap());
    assert_eq!(text, again);
    assert!(text.contains("  %m = reduce_max %x, axes=[1] : f32[4]\n"));
}

#[test]
fn unknown_op_suggests() {
    let src = "func @f(%x: f32[4]) -> f32[4] {\n  %y = expp %x : f32[4]\n  return %y\n}\n";
    let e = parse_func(src, "model.kir").unwrap_err();
    assert_eq!(
        e.to_string(),
        "model.kir:2:8: unknown op 'expp' (did you mean 'exp'?)"
    );
}

#[test]
fn constants_round_trip() {
    let src = "func @f() -> (f32[2,2], i32[3], f32[], bool[2], f64[3]) {\n  %a = constant [[1.5, -2.0], [inf, 1e-7]] : f32[2,2]\n  %b = constant [1, 2, 3] : i32[3]\n  %c = constant -0.0 : f32[]\n  %d = constant [true, false] : bool[2]\n  %e = constant nan : f64[3]\n  return %a, %b, %c, %d, %e\n}\n";
    let f = parse_func(src, "c.kir").unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    let text = print_func(&f);
    assert_eq!(text, print_func(&parse_func(&text, "p").unwrap()));
    assert!(
        text.contains("constant [[1.5, -2.0], [inf, 1e-7]] : f32[2,2]"),
        "{text}"
    );
    assert!(text.contains("constant -0.0 : f32[]"), "{text}");
}
