//! `Interpreter::run` on parsed `.kir` functions: results, argument checking with exact
//! messages, error context, and bounded memory through last-use freeing.

mod common;
use common::*;
use kiln_interp::{InterpError, Interpreter};
use kiln_ir::{parse_func, DType, TensorType};

const SOFTMAX: &str = "\
// row-wise softmax, as in design.md
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
";

#[test]
fn softmax_matches_f64_by_hand() {
    let f = parse_func(SOFTMAX, "softmax.kir").unwrap();
    let x: Vec<f32> = (0..32).map(|i| ((i * 7) % 11) as f32 * 0.5 - 2.0).collect();
    let out = Interpreter::new(2)
        .unwrap()
        .run(&f, &[f32s(&[4, 8], &x)])
        .unwrap();
    assert_eq!(out.len(), 1);
    let y = out[0].as_f32().unwrap();
    for r in 0..4 {
        let row: Vec<f64> = x[r * 8..(r + 1) * 8].iter().map(|&v| v as f64).collect();
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..8 {
            let want = (row[c] - m).exp() / s;
            let got = y[r * 8 + c] as f64;
            assert!((got - want).abs() < 1e-6, "[{r},{c}] {got} vs {want}");
        }
        let total: f64 = y[r * 8..(r + 1) * 8].iter().map(|&v| v as f64).sum();
        assert!((total - 1.0).abs() < 1e-6);
    }
}

#[test]
fn several_results_including_a_parameter_and_a_repeat() {
    let f = parse_func(
        "func @f(%x: i32[2], %y: i32[2]) -> (i32[2], i32[2], i32[2], i32[]) {\n\
           %s = add %x, %y : i32[2]\n\
           %t = reduce_sum %s, axes=[0] : i32[]\n\
           return %s, %x, %s, %t\n\
         }\n",
        "f.kir",
    )
    .unwrap();
    let out = Interpreter::new(1)
        .unwrap()
        .run(&f, &[i32s(&[2], &[1, 2]), i32s(&[2], &[10, 20])])
        .unwrap();
    assert_bits(&out[0], &i32s(&[2], &[11, 22]));
    assert_bits(&out[1], &i32s(&[2], &[1, 2]));
    assert_bits(&out[2], &i32s(&[2], &[11, 22]));
    assert_bits(&out[3], &i32s(&[], &[33]));
}

#[test]
fn argument_count_mismatch() {
    let f = parse_func(SOFTMAX, "softmax.kir").unwrap();
    let e = Interpreter::new(1).unwrap().run(&f, &[]).unwrap_err();
    assert_eq!(e.to_string(), "@softmax takes 1 argument, got 0");
    assert_eq!(
        e,
        InterpError::ArgCount {
            func: "softmax".into(),
            expected: 1,
            got: 0
        }
    );
}

#[test]
fn argument_type_mismatch_names_the_parameter() {
    let f = parse_func(SOFTMAX, "softmax.kir").unwrap();
    let interp = Interpreter::new(1).unwrap();
    let e = interp.run(&f, &[f32s(&[4, 4], &[0.0; 16])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "@softmax: argument 0 (%x) must be f32[4,8], got f32[4,4]"
    );
    let e = interp.run(&f, &[i32s(&[4, 8], &[0; 32])]).unwrap_err();
    assert_eq!(
        e,
        InterpError::ArgType {
            func: "softmax".into(),
            index: 0,
            param: "x".into(),
            expected: TensorType::new(DType::F32, vec![4, 8]),
            got: TensorType::new(DType::I32, vec![4, 8]),
        }
    );
    assert_eq!(
        e.to_string(),
        "@softmax: argument 0 (%x) must be f32[4,8], got i32[4,8]"
    );
}

#[test]
fn op_errors_name_the_value() {
    // Built by hand: the parser's verifier would reject this ill-typed instruction.
    let mut f = kiln_ir::Func::new("bad");
    let x = f.add_param(Some("x"), TensorType::new(DType::I32, vec![2]));
    let r = f.push_named(
        kiln_ir::Op::Unary(kiln_ir::UnaryOp::Exp),
        vec![x],
        TensorType::new(DType::I32, vec![2]),
        Some("e"),
        None,
    );
    f.results.push(r);
    let e = Interpreter::new(1)
        .unwrap()
        .run(&f, &[i32s(&[2], &[1, 2])])
        .unwrap_err();
    assert_eq!(e.to_string(), "@bad: %e = exp: not defined for i32");
}

#[test]
fn a_result_too_large_to_allocate_is_an_error_not_an_abort() {
    // 2^51 bytes: past the x86-64 address space, so no overcommit policy grants it.
    let f = parse_func(
        "func @f(%x: f32[2]) -> f32[2,281474976710656] {
  %y = broadcast_in_dim %x, dims=[0] : f32[2,281474976710656]
  return %y
}",
        "huge.kir",
    )
    .unwrap();
    let e = Interpreter::new(1)
        .unwrap()
        .run(&f, &[f32s(&[2], &[1.0, 2.0])])
        .unwrap_err();
    let InterpError::At { source, .. } = &e else {
        panic!("{e:?}");
    };
    assert!(
        matches!(**source, InterpError::OutOfMemory { bytes, .. } if bytes == 1 << 51),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "@f: %y = out of memory: cannot allocate 2251799813685248 bytes for a result of type f32[2,281474976710656]"
    );
}

#[test]
fn a_chain_of_50_ops_holds_two_buffers_not_50() {
    let n = 4 << 20;
    let mut src = format!("func @chain(%x: f32[{n}]) -> f32[{n}] {{\n  %v0 = neg %x : f32[{n}]\n");
    for i in 1..50 {
        let op = ["neg", "abs", "floor"][i % 3];
        src += &format!("  %v{i} = {op} %v{} : f32[{n}]\n", i - 1);
    }
    src += "  return %v49\n}\n";
    let f = parse_func(&src, "chain.kir").unwrap();
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 - 500.5).collect();
    let (out, stats) = Interpreter::new(2)
        .unwrap()
        .run_with_stats(&f, &[f32s(&[n], &x)])
        .unwrap();
    // At most the operand and the result of one instruction are alive at once.
    assert_eq!(stats.peak_live_values, 2);
    assert_eq!(stats.peak_live_bytes, 2 * n * 4);
    // neg, abs, floor, neg, abs, floor, …, ending with abs (i = 49): floor(|x|) then neg…
    let mut want = x[..4].to_vec();
    want.iter_mut().for_each(|v| *v = -*v);
    for i in 1..50 {
        for v in want.iter_mut() {
            *v = match i % 3 {
                0 => -*v,
                1 => v.abs(),
                _ => v.floor(),
            };
        }
    }
    assert_eq!(&out[0].as_f32().unwrap()[..4], &want[..]);
}

#[test]
fn reshape_of_a_dying_value_moves_its_buffer() {
    let f = parse_func(
        "func @r(%x: f32[1024,1024]) -> f32[1048576] {\n\
           %a = neg %x : f32[1024,1024]\n\
           %b = reshape %a : f32[1048576]\n\
           %c = abs %b : f32[1048576]\n\
           return %c\n\
         }\n",
        "r.kir",
    )
    .unwrap();
    let x = f32s(&[1024, 1024], &vec![-2.0; 1 << 20]);
    let (out, stats) = Interpreter::new(1)
        .unwrap()
        .run_with_stats(&f, &[x])
        .unwrap();
    assert_eq!(stats.peak_live_values, 2);
    assert_eq!(out[0].shape(), &[1 << 20]);
    assert!(out[0].as_f32().unwrap().iter().all(|&v| v == 2.0));
}

#[test]
fn unused_values_are_freed_at_once() {
    let f = parse_func(
        "func @u(%x: f32[4]) -> f32[4] {\n\
           %dead = exp %x : f32[4]\n\
           %y = neg %x : f32[4]\n\
           return %y\n\
         }\n",
        "u.kir",
    )
    .unwrap();
    let (out, stats) = Interpreter::new(1)
        .unwrap()
        .run_with_stats(&f, &[f32s(&[4], &[1.0, 2.0, 3.0, 4.0])])
        .unwrap();
    assert_eq!(stats.peak_live_values, 1);
    assert_bits(&out[0], &f32s(&[4], &[-1.0, -2.0, -3.0, -4.0]));
}

#[test]
fn constants_are_read_in_place_and_returned_as_copies() {
    // A constant is borrowed from the function, like an argument: not an intermediate of
    // the run (a frozen graph's weights are not copied per call). Returned, it is a copy,
    // twice if returned twice; its bits (here -0.0 and a NaN payload) are kept.
    let f = parse_func(
        "func @c(%x: f32[3]) -> (f32[3], f32[3], f32[3]) {\n\
           %w = constant [1.5, -0.0, nan] : f32[3]\n\
           %unused = constant 2.0 : f32[3]\n\
           %y = mul %x, %w : f32[3]\n\
           return %y, %w, %w\n\
         }\n",
        "c.kir",
    )
    .unwrap();
    let (out, stats) = Interpreter::new(1)
        .unwrap()
        .run_with_stats(&f, &[f32s(&[3], &[2.0, 3.0, 4.0])])
        .unwrap();
    assert_eq!(stats.peak_live_values, 1, "only %y is computed");
    assert_eq!(stats.peak_live_bytes, 12);
    let w = f32s(&[3], &[1.5, -0.0, f32::NAN]);
    assert_bits(&out[0], &f32s(&[3], &[3.0, -0.0, f32::NAN]));
    assert_bits(&out[1], &w);
    assert_bits(&out[2], &w);
}

const CLUSTERED: &str = "\
func @g(%x: f32[4], %y: f32[4]) -> (f32[4], f32[4]) {
  %s, %p = cluster @cluster_0(%x, %y) -> (f32[4], f32[4]) {
    %s = add %x, %y : f32[4]
    %p = mul %x, %y : f32[4]
    yield %s, %p
  }
  %r = sub %s, %p : f32[4]
  %q = cluster @cluster_1(%r) -> f32[4] {
    %q = neg %r : f32[4]
    yield %q
  }
  return %q, %s
}
";

#[test]
fn clusters_run_op_by_op_on_the_fallback_path() {
    let f = parse_func(CLUSTERED, "g.kir").unwrap();
    let x = f32s(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let y = f32s(&[4], &[0.5, 0.5, 2.0, -1.0]);
    let out = Interpreter::new(2).unwrap().run(&f, &[x, y]).unwrap();
    // q = -((x + y) - x·y), s = x + y
    assert_bits(&out[0], &f32s(&[4], &[-1.0, -1.5, 1.0, -7.0]));
    assert_bits(&out[1], &f32s(&[4], &[1.5, 2.5, 5.0, 3.0]));
    // A one-result cluster can also be evaluated as one op.
    let Some(inst) = f
        .insts
        .iter()
        .find(|i| i.op.name() == "cluster" && i.results.len() == 1)
    else {
        panic!("no one-result cluster")
    };
    let r = f32s(&[4], &[1.0, -2.0, 0.0, 3.0]);
    let q = Interpreter::new(1)
        .unwrap()
        .eval(&inst.op, &[&r], &TensorType::new(DType::F32, vec![4]))
        .unwrap();
    assert_bits(&q, &f32s(&[4], &[-1.0, 2.0, -0.0, -3.0]));
}
