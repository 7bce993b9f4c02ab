//! `while` and `conditional` in the IR: the text form round-trips, the parser's errors for
//! malformed regions, typing errors, and the tracer methods.

use kiln_ir::{parse_func, parse_module, print_func, trace, verify_func, DType, TensorType};

const LOOP: &str = "func @f(%n: i32[], %x: f32[3]) -> (i32[], f32[3]) {
  %zero = constant 0 : i32[]
  %i, %m, %y = while %zero, %n, %x -> (i32[], i32[], f32[3])
    cond(%i: i32[], %n: i32[], %v: f32[3]) {
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %n: i32[], %v: f32[3]) {
      %one = constant 1 : i32[]
      %i1 = add %i, %one : i32[]
      %p = compare %i1, %n, dir=eq : bool[]
      %w = conditional %p, %v, %v -> f32[3]
        branch(%a: f32[3]) {
          %b = exp %a : f32[3]
          yield %b
        }
        branch(%a: f32[3]) {
          %c = constant nan : f32[3]
          %b = add %a, %c : f32[3]
          yield %b
        }
      yield %i1, %n, %w
    }
  return %i, %y
}
";

#[test]
fn regions_print_as_parsed_and_round_trip() {
    let f = parse_func(LOOP, "loop.kir").unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    let text = print_func(&f);
    assert_eq!(text, LOOP, "the canonical text is what was written");
    let again = parse_func(&text, "printed.kir").unwrap();
    assert_eq!(print_func(&again), text);
    // Constants inside regions compare bit for bit (a NaN is itself).
    assert!(f.bit_eq(&again));
    assert!(f.bit_eq(&f.clone()));
    let other = parse_func(&LOOP.replace("constant nan", "constant 1.0"), "o.kir").unwrap();
    assert!(!f.bit_eq(&other));
}

fn parse_err(src: &str) -> String {
    parse_module(src, "t.kir").unwrap_err().to_string()
}

#[test]
fn malformed_regions_are_errors_at_their_place() {
    let no_body = "func @f(%x: i32[]) -> i32[] {\n  %y = while %x -> i32[]\n    cond(%i: i32[]) {\n      %t = constant true : bool[]\n      yield %t\n    }\n  return %y\n}\n";
    assert_eq!(
        parse_err(no_body),
        "t.kir:7:3: expected 'body', found 'return'"
    );
    let names = "func @f(%x: i32[]) -> i32[] {\n  %y, %z = while %x -> i32[]\n";
    assert_eq!(
        parse_err(names),
        "t.kir:2:12: 2 result names for 1 result types"
    );
    let undefined = "func @f(%x: i32[]) -> i32[] {\n  %y = conditional %p -> i32[]\n";
    assert_eq!(
        parse_err(undefined),
        "t.kir:2:20: use of undefined value '%p'"
    );
    // A region is closed: a value of the enclosing function is not visible inside.
    let closed = "func @f(%x: i32[]) -> i32[] {\n  %y = while %x -> i32[]\n    cond(%i: i32[]) {\n      %t = compare %i, %x, dir=lt : bool[]\n";
    assert_eq!(parse_err(closed), "t.kir:4:24: use of undefined value '%x'");
    let no_op = "func @f(%x: i32[]) -> (i32[], i32[]) {\n  %y, %z = neg %x : i32[]\n";
    assert_eq!(
        parse_err(no_op),
        "t.kir:2:7: only a cluster, while or conditional has several results"
    );
}

/// Deep nesting used to be one level of parser recursion per region: now an error.
#[test]
fn control_flow_nested_too_deeply_is_an_error() {
    let open = "%y = while %x -> i32[]\ncond(%x: i32[]) {\n";
    let src = format!("func @f(%x: i32[]) -> i32[] {{\n{}", open.repeat(100_000));
    assert_eq!(
        parse_err(&src),
        "t.kir:130:6: control flow nested more than 64 deep"
    );
}

#[test]
fn typing_errors_name_the_region() {
    let src = "func @f(%x: f32[2], %k: i32[]) -> f32[2] {
  %y = conditional %k, %x -> f32[2]
    branch(%a: f32[2]) {
      %b = exp %a : f32[3]
      yield %b
    }
  return %y
}
";
    let f = parse_func(src, "t.kir").unwrap();
    let shown: Vec<String> = verify_func(&f).iter().map(|d| d.render("t.kir")).collect();
    assert_eq!(
        shown,
        [
            "t.kir:2:3: '%y = conditional': declares results (f32[2]) but the op produces (f32[3])",
            "t.kir:4:7: '%b = exp': declared result type f32[3] but the op produces f32[2] (operands: f32[2]) (in branch 0 of '%y = conditional')",
        ]
    );
}

#[test]
fn the_tracer_records_loops_and_branches() {
    let i32s = TensorType::scalar(DType::I32);
    let f32s = TensorType::new(DType::F32, vec![4]);
    let f = trace("f", &[i32s.clone(), f32s.clone()], |a| {
        let zero = a[0].scalar_like(0.0);
        let out = zero.while_loop(
            &[&a[0], &a[1]],
            |c| c[0].lt(&c[1]),
            |b| {
                let one = b[0].scalar_like(1.0);
                vec![&b[0] + &one, b[1].clone(), b[2].exp()]
            },
        );
        let p = out[0].eq_elem(&a[0]);
        let r = p.cond(&[&out[2]], |t| vec![t[0].tanh()], |e| vec![-&e[0]]);
        r[0].clone()
    })
    .unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    let text = print_func(&f);
    assert_eq!(print_func(&parse_func(&text, "p").unwrap()), text);
    assert!(text.contains(" = while %"), "{text}");
    assert!(text.contains(" = conditional %"), "{text}");
    // A body that yields another type is a trace error naming the op.
    let e = trace("g", std::slice::from_ref(&f32s), |a| {
        let i = a[0].scalar_like(0.0);
        let out = a[0].while_loop(
            &[],
            |c| c[0].sum(&[0]).lt(&c[0].sum(&[0])),
            |b| vec![b[0].sum(&[0])],
        );
        let _ = i;
        out[0].clone()
    })
    .unwrap_err();
    assert_eq!(e.op, "while");
    assert!(
        e.message
            .contains("body must yield the carried types (f32[4]), it yields (f32[])"),
        "{e}"
    );
}
