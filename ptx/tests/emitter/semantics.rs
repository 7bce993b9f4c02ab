//! Every op, conversion, index map and reduction, random and example clusters against the
//! interpreter bit for bit; errors that are reported, not panics; launch descriptions.

use crate::cases::{
    binary_cases, convert_cases, example_clusters, index_map_cases, random_cases, reduction_cases,
    unary_cases,
};
use crate::common::programs::{cluster, first_difference, random_tensor, simulate, Launch};
use crate::common::Rng;
use crate::{check, check_all, interpret, sm80};
use kiln_compiler::lower::lower_cluster;
use kiln_ir::Tensor;
use kiln_ptx::emit::{emit_program, EmitError};

#[test]
fn elementwise_ops_match_the_interpreter_bit_for_bit() {
    let mut cases = unary_cases();
    cases.extend(binary_cases());
    check_all(&cases, 120);
}

#[test]
fn conversions_match_the_interpreter_bit_for_bit() {
    check_all(&convert_cases(), 36);
}

#[test]
fn index_maps_match_the_interpreter_bit_for_bit() {
    let cases = index_map_cases();
    let n = cases.len();
    check_all(&cases, n);
}

#[test]
fn reductions_match_the_interpreter_bit_for_bit() {
    check_all(&reduction_cases(), 200);
}

#[test]
fn random_clusters_match_the_interpreter_bit_for_bit() {
    check_all(&random_cases(150), 140);
}

#[test]
fn example_programs_match_the_interpreter_bit_for_bit() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (i, (label, c)) in example_clusters().iter().enumerate() {
        match check(label, c, 77 + i as u64) {
            Ok(true) => checked += 1,
            Ok(false) => {}
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked >= 4, "only {checked} example clusters checked");
}

/// The simulator comparison can fail: a tree with the wrong shuffle distance (a different
/// association order) is caught.
#[test]
fn a_wrong_reduction_order_is_detected() {
    let c = cluster(
        "func @f(%x: f32[4,1000]) -> f32[4] {\n  %y = reduce_sum %x, axes=[1] : f32[4]\n  return %y\n}",
    )
    .expect("valid");
    let mut r = Rng(5);
    let x = random_tensor(&c.body.param_types()[0], &mut r);
    // Finite values of mixed magnitude, so association changes the bits.
    let data: Vec<f32> = (0..4000)
        .map(|k| {
            let v = x.data().get(k).to_f64() as f32;
            if v.is_finite() {
                v * (1.0 + (k % 7) as f32 * 1e3)
            } else {
                1.0
            }
        })
        .collect();
    let x = Tensor::from_f32(vec![4, 1000], data).expect("shape");
    let want = interpret(&c, std::slice::from_ref(&x)).expect("runs");
    let p = lower_cluster(&c).expect("lowers");
    let mut ptx = emit_program(&p, sm80()).expect("emits");
    let good = simulate(&p, &ptx, std::slice::from_ref(&x), Launch::Suggested).expect("runs");
    assert_eq!(first_difference(&good, &want), None);
    assert!(ptx.text.contains(", 16, 31, -1;"), "{}", ptx.text);
    ptx.text = ptx.text.replacen(", 16, 31, -1;", ", 8, 31, -1;", 1);
    let bad = simulate(&p, &ptx, &[x], Launch::Suggested).expect("runs");
    assert!(
        first_difference(&bad, &want).is_some(),
        "a different tree gave the same bits"
    );
}

#[test]
fn unsupported_nodes_are_errors_not_panics() {
    // A reduction of bool by sum is not defined; a malformed operand is reported.
    let c = cluster(
        "func @f(%x: f32[8]) -> f32[] {\n  %y = reduce_sum %x, axes=[0] : f32[]\n  return %y\n}",
    )
    .expect("valid");
    let mut p = lower_cluster(&c).expect("lowers");
    let good = p.clone();
    if let Some(red) = &mut p.kernels[0].reduce {
        red.value = 999;
    }
    match emit_program(&p, sm80()) {
        Err(EmitError::Malformed { kernel, reason }) => {
            assert_eq!(kernel, "k0");
            assert!(reason.contains("999"), "{reason}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    let mut p = good;
    p.kernels[0].nodes[0].dtype = kiln_ir::DType::Bool;
    assert!(emit_program(&p, sm80()).is_err());
}

/// `func @f(%v0: ty) -> ty` applying `ops` one after the other.
fn chain(ty: &str, ops: impl Iterator<Item = &'static str>) -> String {
    let mut src = format!("func @f(%v0: {ty}) -> {ty} {{\n");
    let mut n = 0;
    for op in ops {
        src += &format!("  %v{} = {op} %v{n} : {ty}\n", n + 1);
        n += 1;
    }
    src + &format!("  return %v{n}\n}}")
}

#[test]
fn chains_thousands_of_ops_deep_emit_without_overflowing_the_stack() {
    // The emitter recurses once per op along the chain; a test thread has 2 MiB of stack.
    let c = cluster(&chain("f32[5]", (0..6000).map(|i| ["neg", "abs"][i % 2]))).expect("valid");
    assert_eq!(check("6000-op chain", &c, 3), Ok(true));
}

#[test]
fn kernels_with_too_many_transcendental_ops_are_refused() {
    let ops = ["sin", "exp", "tanh"];
    let c = cluster(&chain("f32[4]", (0..300).map(|i| ops[i % 3]))).expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    assert_eq!(p.kernels[0].math_ops(), 300);
    match emit_program(&p, sm80()) {
        Err(EmitError::Unsupported { kernel, reason }) => {
            assert_eq!(kernel, "k0");
            assert_eq!(
                reason,
                "300 transcendental ops (at most 256 are emitted per kernel)"
            );
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // 256 are still emitted.
    let c = cluster(&chain("f32[4]", (0..256).map(|i| ops[i % 3]))).expect("valid");
    assert!(emit_program(&lower_cluster(&c).expect("lowers"), sm80()).is_ok());
    // `pow` counts as one.
    let pow = cluster(
        "func @f(%x: f32[4], %y: f32[4]) -> f32[4] {\n  %a = pow %x, %y : f32[4]\n  %b = exp %a : f32[4]\n  return %b\n}",
    )
    .expect("valid");
    assert_eq!(
        lower_cluster(&pow).expect("lowers").kernels[0].math_ops(),
        2
    );
}

#[test]
fn launch_descriptions_list_parameters_in_buffer_order() {
    let c = cluster(
        // Column maxima: not row-fusable (kernels over [8] and [4,8]), one entry each.
        "func @f(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[8]) {\n  %m = reduce_max %x, axes=[0] : f32[8]\n  %mb = broadcast_in_dim %m, dims=[1] : f32[4,8]\n  %d = sub %x, %mb : f32[4,8]\n  %s = add %m, %b : f32[8]\n  return %d, %s\n}",
    )
    .expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    let ptx = emit_program(&p, sm80()).expect("emits");
    assert_eq!(ptx.kernels.len(), p.kernels.len());
    for (i, k) in ptx.kernels.iter().enumerate() {
        assert_eq!(k.kernel, i);
        assert!(ptx.text.contains(&format!(".visible .entry {}(", k.entry)));
        assert_eq!(k.block % 32, 0);
        assert!(k.grid >= 1);
        let slots: Vec<usize> = k
            .params
            .iter()
            .map(|b| match *b {
                kiln_compiler::kernel::BufRef::Input(i) => i,
                kiln_compiler::kernel::BufRef::Output(i) => 10 + i,
                kiln_compiler::kernel::BufRef::Temp(i) => 20 + i,
                kiln_compiler::kernel::BufRef::Const(i) => 30 + i,
            })
            .collect();
        let mut sorted = slots.clone();
        sorted.sort_unstable();
        assert_eq!(slots, sorted);
    }
    assert!(matches!(
        ptx.kernels[0].mapping,
        kiln_ptx::Mapping::WarpPerPoint { points: 8, len: 4 }
    ));
}
