//! `while` and `conditional` on the interpreter: hand-computed loops and branches, XLA's
//! rule for an index out of range, results that do not depend on the thread count, and
//! ill-typed calls that are errors, not panics.

use kiln_interp::Interpreter;
use kiln_ir::{parse_func, Buffer, Func, Op, Tensor, TensorType};

fn func(src: &str) -> Func {
    let f = parse_func(src, "t.kir").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        kiln_ir::verify_func(&f).is_empty(),
        "{:?}",
        kiln_ir::verify_func(&f)
    );
    f
}

fn i32s(v: i32) -> Tensor {
    Tensor::new(vec![], Buffer::I32(vec![v].into())).unwrap()
}

/// Fibonacci by a loop carrying (i, a, b): fib(n) for n = 0, 1, 10, 30.
#[test]
fn a_loop_carries_its_values() {
    let f = func(
        "func @fib(%n: i32[]) -> i32[] {
  %zero = constant 0 : i32[]
  %one = constant 1 : i32[]
  %i, %m, %a, %b = while %zero, %n, %zero, %one -> (i32[], i32[], i32[], i32[])
    cond(%i: i32[], %n: i32[], %a: i32[], %b: i32[]) {
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %n: i32[], %a: i32[], %b: i32[]) {
      %one = constant 1 : i32[]
      %i1 = add %i, %one : i32[]
      %s = add %a, %b : i32[]
      yield %i1, %n, %b, %s
    }
  return %a
}
",
    );
    let interp = Interpreter::new(1).unwrap();
    for (n, want) in [(0, 0), (1, 1), (10, 55), (30, 832_040)] {
        let got = interp.run(&f, &[i32s(n)]).unwrap();
        assert_eq!(got[0].data(), &Buffer::I32(vec![want].into()), "fib({n})");
    }
}

const SWITCH: &str = "func @s(%k: i32[], %x: f32[3]) -> f32[3] {
  %y = conditional %k, %x, %x, %x -> f32[3]
    branch(%a: f32[3]) {
      %r = neg %a : f32[3]
      yield %r
    }
    branch(%a: f32[3]) {
      %r = add %a, %a : f32[3]
      yield %r
    }
    branch(%a: f32[3]) {
      %r = mul %a, %a : f32[3]
      yield %r
    }
  return %y
}
";

/// Index 0 and 1 run their branches; -1, 3 and i32::MIN..MAX run the last (XLA's rule).
#[test]
fn an_index_out_of_range_runs_the_last_branch() {
    let f = func(SWITCH);
    let x = Tensor::from_f32(vec![3], vec![1.0, -2.0, 3.0]).unwrap();
    let interp = Interpreter::new(1).unwrap();
    let run = |k: i32| {
        let out = interp.run(&f, &[i32s(k), x.clone()]).unwrap();
        out[0].as_f32().unwrap().to_vec()
    };
    assert_eq!(run(0), [-1.0, 2.0, -3.0]);
    assert_eq!(run(1), [2.0, -4.0, 6.0]);
    for k in [2, 3, -1, i32::MIN, i32::MAX] {
        assert_eq!(run(k), [1.0, 4.0, 9.0], "index {k}");
    }
}

/// A loop of reductions and transcendental ops over a large vector: the same bits on 1, 2
/// and 7 threads.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let f = func(
        "func @f(%x: f32[100000]) -> (f32[100000], f32[]) {
  %zero = constant 0 : i32[]
  %s0 = constant 0.0 : f32[]
  %i, %y, %s = while %zero, %x, %s0 -> (i32[], f32[100000], f32[])
    cond(%i: i32[], %v: f32[100000], %s: f32[]) {
      %four = constant 4 : i32[]
      %go = compare %i, %four, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %v: f32[100000], %s: f32[]) {
      %one = constant 1 : i32[]
      %i1 = add %i, %one : i32[]
      %t = tanh %v : f32[100000]
      %e = exp %t : f32[100000]
      %sum = reduce_sum %e, axes=[0] : f32[]
      %s1 = add %s, %sum : f32[]
      yield %i1, %e, %s1
    }
  return %y, %s
}
",
    );
    let x = Tensor::from_f32(
        vec![100_000],
        (0..100_000).map(|i| (i as f32 * 0.37).sin()).collect(),
    )
    .unwrap();
    let bits = |threads: usize| -> Vec<Vec<u32>> {
        Interpreter::new(threads)
            .unwrap()
            .run(&f, std::slice::from_ref(&x))
            .unwrap()
            .iter()
            .map(|t| t.as_f32().unwrap().iter().map(|v| v.to_bits()).collect())
            .collect()
    };
    let one = bits(1);
    assert_eq!(one, bits(2));
    assert_eq!(one, bits(7));
}

/// `eval_all` checks the operand and result types against the typing rule first.
#[test]
fn ill_typed_calls_are_errors() {
    let f = func(SWITCH);
    let op: &Op = &f.insts[0].op;
    let interp = Interpreter::new(1).unwrap();
    let x = Tensor::from_f32(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
    let k = i32s(1);
    let f32x3 = TensorType::new(kiln_ir::DType::F32, vec![3]);
    let e = interp
        .eval_all(op, &[&x, &x], std::slice::from_ref(&f32x3))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "conditional: the selector must be a bool[] predicate or an i32[] index, got f32[3]"
    );
    let e = interp
        .eval_all(op, &[&k, &x, &x, &x], &[f32x3.clone(), f32x3.clone()])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "conditional: produces 1 results of other types than the 2 asked for"
    );
    let got = interp
        .eval_all(op, &[&k, &x, &x, &x], std::slice::from_ref(&f32x3))
        .unwrap();
    assert_eq!(got[0].as_f32().unwrap(), [2.0, 4.0, 6.0]);
    // The one-result entry point takes a one-result conditional too.
    let got = interp.eval(op, &[&k, &x, &x, &x], &f32x3).unwrap();
    assert_eq!(got.as_f32().unwrap(), [2.0, 4.0, 6.0]);
}
