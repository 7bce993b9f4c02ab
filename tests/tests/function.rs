//! `Function`: one trace per signature, reused across calls; new shapes and new static
//! values retrace; Rust control flow is baked in at trace time.

use kiln::{DType, Function, Static, Tensor, Tracer};

fn vec_f32(n: usize, f: impl Fn(usize) -> f32) -> Tensor {
    Tensor::from_f32([n], (0..n).map(f).collect()).unwrap()
}

#[test]
fn traced_once_called_many_times_retraced_on_new_shape() {
    let f = Function::new("scale_add", |a: &[Tracer]| (&(&a[0] * 2.0) + &a[1]).tanh()).unwrap();
    let x = vec_f32(8, |i| i as f32 * 0.1);
    let y = vec_f32(8, |_| 0.5);
    let mut first = None;
    for _ in 0..100 {
        let out = f.call(&[x.clone(), y.clone()]).unwrap();
        let first = first.get_or_insert_with(|| out[0].clone());
        assert!(out[0].bit_eq(first));
    }
    assert_eq!(
        f.trace_count(),
        1,
        "100 calls with one signature trace once"
    );
    let out = f.call(&[vec_f32(3, |_| 1.0), vec_f32(3, |_| 0.0)]).unwrap();
    assert_eq!(f.trace_count(), 2, "a new shape retraces");
    assert_eq!(out[0].shape(), &[3]);
    assert_eq!(out[0].as_f32().unwrap()[0], kiln_math_tanh(2.0));
    f.call(&[x.clone(), y.clone()]).unwrap();
    assert_eq!(f.trace_count(), 2, "the first signature is still cached");
}

fn kiln_math_tanh(x: f32) -> f32 {
    // The interpreter computes tanh with Kiln's own math, not the platform's; compare with
    // the value the function itself gives for the same input instead of libm.
    let f = Function::new("t", |a: &[Tracer]| a[0].tanh()).unwrap();
    f.call(&[Tensor::scalar_f32(x)]).unwrap()[0]
        .as_f32()
        .unwrap()[0]
}

#[test]
fn static_arguments_are_part_of_the_signature_and_control_flow_is_baked_in() {
    let f = Function::with_static("power", |a: &[Tracer], s: &[Static]| {
        let n = s[0].as_f64().unwrap() as usize;
        let mut y = a[0].clone();
        for _ in 1..n {
            y = &y * &a[0];
        }
        y
    })
    .unwrap();
    let x = vec_f32(4, |i| i as f32);
    let cube = f
        .call_static(std::slice::from_ref(&x), &[Static::Int(3)])
        .unwrap();
    assert_eq!(cube[0].as_f32().unwrap(), &[0.0, 1.0, 8.0, 27.0]);
    f.call_static(std::slice::from_ref(&x), &[Static::Int(3)])
        .unwrap();
    assert_eq!(f.trace_count(), 1);
    let sq = f.call_static(&[x], &[Static::Int(2)]).unwrap();
    assert_eq!(sq[0].as_f32().unwrap(), &[0.0, 1.0, 4.0, 9.0]);
    assert_eq!(f.trace_count(), 2, "a new static value retraces");
}

#[test]
fn placed_calls_take_static_arguments_as_part_of_the_signature() {
    let s = kiln::Session::from_env().unwrap();
    let f = Function::with_session("scale", s.clone(), |a: &[Tracer], st: &[Static]| {
        &a[0] * st[0].as_f64().unwrap()
    })
    .unwrap();
    let x = vec_f32(4, |i| i as f32);
    let placed = s.place(&x).unwrap();
    for k in [2, 3, 2] {
        let out = f
            .call_placed_static(std::slice::from_ref(&placed), &[Static::Int(k)])
            .unwrap();
        let host = f
            .call_static(std::slice::from_ref(&x), &[Static::Int(k)])
            .unwrap();
        let got = s.fetch(&out[0]).unwrap();
        assert!(got.bit_eq(&host[0]), "static {k}");
        assert_eq!(got.as_f32().unwrap()[3], 3.0 * k as f32);
    }
    assert_eq!(
        f.trace_count(),
        2,
        "one trace per static value, placed or not"
    );
}

#[test]
fn dtype_is_part_of_the_signature() {
    let f = Function::new("neg", |a: &[Tracer]| -&a[0]).unwrap();
    f.call(&[vec_f32(2, |_| 1.0)]).unwrap();
    let i = Tensor::new([2], kiln::Buffer::I32(vec![1, -2].into())).unwrap();
    let out = f.call(&[i]).unwrap();
    assert_eq!(out[0].dtype(), DType::I32);
    assert_eq!(f.trace_count(), 2);
}

#[test]
fn trace_errors_name_the_op_and_both_shapes() {
    let f = Function::new("bad", |a: &[Tracer]| &a[0] + &a[1]).unwrap();
    let e = f
        .call(&[vec_f32(4, |_| 0.0), vec_f32(3, |_| 0.0)])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "trace error: add: cannot broadcast f32[4] and f32[3] to a common shape"
    );
    assert_eq!(f.trace_count(), 0, "a failed trace is not cached");
}

#[test]
fn multiple_outputs() {
    let f = Function::new("stats", |a: &[Tracer]| {
        (a[0].sum(&[0]), a[0].reduce_max(&[0]))
    })
    .unwrap();
    let out = f.call(&[vec_f32(5, |i| i as f32)]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[10.0]);
    assert_eq!(out[1].as_f32().unwrap(), &[4.0]);
}

#[test]
fn jit_compile_marks_the_whole_function_even_with_auto_jit_off() {
    use kiln::config::Flags;
    let sig = kiln::Signature {
        tensors: vec![kiln::TensorType::new(DType::F32, vec![8])],
        statics: vec![],
    };
    let clusters = |f: &Function| {
        let g = f.prepared_graph(&sig).unwrap();
        g.insts
            .iter()
            .filter(|i| matches!(i.op, kiln_ir::Op::Cluster(_)))
            .count()
    };
    for (auto_jit, jit_compile, expected) in [
        (kiln_flags::AutoJit::ManualOnly, false, 0),
        (kiln_flags::AutoJit::ManualOnly, true, 1),
        (kiln_flags::AutoJit::Off, true, 0),
    ] {
        let flags = Flags {
            auto_jit,
            ..Flags::default()
        };
        let session = kiln::Session::new(&flags).unwrap();
        // Two ops: below the minimum cluster size of 4, which a manual scope is exempt from.
        let f = Function::with_session("two", session, |a: &[Tracer], _: &[Static]| {
            a[0].exp().sin()
        })
        .unwrap()
        .jit_compile(jit_compile);
        assert_eq!(
            clusters(&f),
            expected,
            "auto_jit={auto_jit:?} jit_compile={jit_compile}"
        );
        let out = f.call(&[vec_f32(8, |i| i as f32)]).unwrap();
        assert_eq!(out[0].shape(), &[8]);
    }
}

#[test]
fn a_static_zero_and_minus_zero_trace_and_run_different_graphs() {
    // Both traces are named after the function, so their clusters share ids; the runtime
    // must still tell `exp(x) / 0.0` from `exp(x) / -0.0` once both are compiled.
    let f = Function::with_static("over_zero", |a: &[Tracer], s: &[Static]| {
        let z = s[0].as_f64().unwrap();
        (&(&a[0].exp() / z).tanh() + &a[0]).tanh()
    })
    .unwrap();
    let x = vec_f32(16, |i| i as f32 * 0.125 - 1.0);
    for _ in 0..6 {
        for (z, sign) in [(0.0, 1.0f32), (-0.0, -1.0)] {
            let out = f.call_static(std::slice::from_ref(&x), &[Static::float(z)]);
            let out = out.unwrap();
            let want: Vec<f32> = x
                .as_f32()
                .unwrap()
                .iter()
                .map(|&v| kiln_math_tanh(sign + v))
                .collect();
            assert_eq!(out[0].as_f32().unwrap(), &want[..], "static {z:?}");
        }
    }
    assert_eq!(f.trace_count(), 2);
}
