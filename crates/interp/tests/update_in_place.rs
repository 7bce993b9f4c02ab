//! `Interpreter::update_slice_in_place` against `eval` of `dynamic_update_slice` (which
//! copies): the same bits for every shape, start (clamped ones included) and dtype class,
//! and a refused call leaves its target unchanged. Also `run`'s in-place path: a
//! `dynamic_update_slice` of a value that dies there.

mod common;
use common::*;
use kiln_interp::Interpreter;
use kiln_ir::{parse_func, DType, Op, Tensor};
use kiln_testkit::{random_tensor, Rng};

#[test]
fn in_place_updates_match_the_copying_op_bit_for_bit() {
    let interp = Interpreter::new(1).unwrap();
    let mut rng = Rng(0x38);
    for dtype in [DType::F32, DType::F64, DType::I32, DType::Bool] {
        for case in 0..60 {
            let rank = 1 + rng.below(3);
            let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
            let ushape: Vec<usize> = shape.iter().map(|&d| rng.below(d + 1)).collect();
            let target = random_tensor(&kiln_ir::TensorType::new(dtype, shape.clone()), &mut rng);
            let update = random_tensor(&kiln_ir::TensorType::new(dtype, ushape), &mut rng);
            // Starts from -2 to past the end: XLA clamps them.
            let starts: Vec<Tensor> = shape
                .iter()
                .map(|&d| i32s(&[], &[rng.below(d + 4) as i32 - 2]))
                .collect();
            let mut args: Vec<&Tensor> = vec![&target, &update];
            args.extend(&starts);
            let want = eval(Op::DynamicUpdateSlice, &args, dtype, &shape);
            let mut got = target.clone();
            interp.update_slice_in_place(&mut got, &args[1..]).unwrap();
            assert!(
                got.bit_eq(&want),
                "{dtype} case {case}: {got:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn a_refused_update_leaves_the_target_unchanged() {
    let interp = Interpreter::new(1).unwrap();
    let target = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let before = target.clone();
    let wrong_dtype = i32s(&[1, 3], &[7, 8, 9]);
    let zero = i32s(&[], &[0]);
    for args in [vec![&wrong_dtype, &zero, &zero], vec![&zero, &zero], vec![]] {
        let mut t = target.clone();
        let err = interp.update_slice_in_place(&mut t, &args).unwrap_err();
        assert!(err.to_string().contains("dynamic_update_slice"), "{err}");
        assert!(t.bit_eq(&before));
    }
}

/// In `run`, an update of a value computed in the function writes into it; an update of an
/// argument copies it (the caller's tensor is read in place, never written).
#[test]
fn run_updates_a_dying_value_in_place_and_never_an_argument() {
    let f = parse_func(
        "func @f(%a: f32[4], %u: f32[2], %i: i32[]) -> (f32[4], f32[4]) {
  %b = neg %a : f32[4]
  %c = dynamic_update_slice %b, %u, %i : f32[4]
  %d = dynamic_update_slice %a, %u, %i : f32[4]
  return %c, %d
}
",
        "f.kir",
    )
    .unwrap();
    let a = f32s(&[4], &[1.0, -2.0, 0.0, 4.5]);
    let u = f32s(&[2], &[9.0, -0.0]);
    let out = Interpreter::new(1)
        .unwrap()
        .run(&f, &[a.clone(), u, i32s(&[], &[1])])
        .unwrap();
    assert_bits(&out[0], &f32s(&[4], &[-1.0, 9.0, -0.0, -4.5]));
    assert_bits(&out[1], &f32s(&[4], &[1.0, 9.0, -0.0, 4.5]));
}
