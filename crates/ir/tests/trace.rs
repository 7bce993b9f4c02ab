use kiln_ir::{print_func, trace, verify_func, DType, TensorType, Tracer};

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

#[test]
fn traces_arithmetic_with_explicit_broadcasts() {
    let f = trace("f", &[f32t(&[4, 8]), f32t(&[8])], |a: &[Tracer]| {
        (&(&a[0] * 2.0) + &a[1]).tanh()
    })
    .unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    assert!(
        text.contains("broadcast_in_dim %1, dims=[1] : f32[4,8]"),
        "{text}"
    );
    assert!(text.contains("constant 2.0 : f32[]"), "{text}");
    assert!(text.contains("tanh"), "{text}");
}

#[test]
fn shape_error_names_op_and_both_shapes() {
    let e = trace("f", &[f32t(&[4, 8]), f32t(&[3])], |a: &[Tracer]| {
        &a[0] + &a[1]
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "add: cannot broadcast f32[4,8] and f32[3] to a common shape"
    );
}

#[test]
fn first_error_wins_and_poison_propagates() {
    let e = trace("f", &[f32t(&[4, 8]), f32t(&[5, 3])], |a: &[Tracer]| {
        a[0].matmul(&a[1]).exp().sum(&[0])
    })
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "dot_general: lhs dimension 1 (size 8) and rhs dimension 0 (size 5) must match"
        ),
        "{e}"
    );
}

#[test]
fn dtype_error_at_trace_time() {
    let e = trace(
        "f",
        &[TensorType::new(DType::I32, vec![4])],
        |a: &[Tracer]| a[0].exp(),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "exp: not defined for i32 (operands: i32[4])");
}

#[test]
fn softmax_and_layer_norm_trace_and_verify() {
    let f = trace("f", &[f32t(&[4, 8])], |a: &[Tracer]| {
        (a[0].softmax(1), a[0].layer_norm(1, 1e-5), a[0].gelu())
    })
    .unwrap();
    assert!(verify_func(&f).is_empty(), "{:?}", verify_func(&f));
    assert_eq!(f.result_types(), vec![f32t(&[4, 8]); 3]);
}

#[test]
fn matmul_shapes() {
    let f = trace(
        "f",
        &[f32t(&[2, 3, 4]), f32t(&[4, 5]), f32t(&[2, 4, 6])],
        |a: &[Tracer]| (a[0].matmul(&a[1]), a[0].matmul(&a[2])),
    )
    .unwrap();
    assert_eq!(f.result_types(), vec![f32t(&[2, 3, 5]), f32t(&[2, 3, 6])]);
}

#[test]
fn jit_scope_marks_ops_and_round_trips() {
    let f = trace("f", &[f32t(&[4])], |a: &[Tracer]| {
        let y = a[0].exp();
        let z = a[0].jit_scope(|| (&y * 2.0).tanh());
        z.sin()
    })
    .unwrap();
    let scoped: Vec<Option<u32>> = f.insts.iter().map(|i| i.scope).collect();
    assert_eq!(scoped, vec![None, Some(0), Some(0), Some(0), Some(0), None]);
    let text = print_func(&f);
    assert!(text.contains("tanh %4, jit_scope=0 : f32[4]"), "{text}");
    let again = kiln_ir::parse_func(&text, "t").unwrap();
    assert_eq!(print_func(&again), text);
}
