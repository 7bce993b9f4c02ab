//! The windowed ops (`convolution`, `reduce_window`, `select_and_scatter`): `.kir` text
//! round trips (defaults left out), typing rules as XLA's shape inference, the verifier's
//! and parser's errors name what is wrong, and the tracer records them.

use kiln_ir::{
    parse_func, print_func, trace, verify_func, CompareDir, ConvDims, Convolution, DType,
    ReduceKind, TensorType, Tracer, WindowDim,
};

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

/// The verifier's (or parser's) messages for `%y = {body} : {ty}` over `%x: f32[1,5,5,2]`,
/// `%w: f32[3,3,2,4]`, `%v: f32[]` and `%s: f32[1,2,2,2]`.
fn errors(body: &str, ty: &str) -> Vec<String> {
    let src = format!(
        "func @f(%x: f32[1,5,5,2], %w: f32[3,3,2,4], %v: f32[], %s: f32[1,2,2,2]) -> {ty} {{\n  %y = {body} : {ty}\n  return %y\n}}\n"
    );
    match parse_func(&src, "t.kir") {
        Ok(f) => verify_func(&f).iter().map(|d| d.render("t.kir")).collect(),
        Err(e) => vec![e.to_string()],
    }
}

fn one_error(body: &str, ty: &str) -> String {
    let e = errors(body, ty);
    assert_eq!(e.len(), 1, "{e:?}");
    e[0].clone()
}

/// NHWC input, HWIO kernel, NHWC result (`dim_labels=b01f_01io->b01f`).
const NHWC: &str = "lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2]";

#[test]
fn window_output_sizes_follow_xla() {
    let w = |size, stride, low, high, lhs_dilate, rhs_dilate| WindowDim {
        size,
        stride,
        low,
        high,
        lhs_dilate,
        rhs_dilate,
        reversal: false,
    };
    // (padded - dilated window) / stride + 1.
    assert_eq!(w(3, 1, 0, 0, 1, 1).output_size(5), Ok(3));
    assert_eq!(w(3, 2, 1, 1, 1, 1).output_size(5), Ok(3));
    assert_eq!(w(2, 2, 0, 0, 1, 1).output_size(5), Ok(2));
    // Base dilation 2 turns 5 into 9 elements; window dilation 2 makes 3 span 5.
    assert_eq!(w(3, 1, 0, 0, 2, 1).output_size(5), Ok(7));
    assert_eq!(w(3, 1, 0, 0, 1, 2).output_size(5), Ok(1));
    // Negative padding removes elements; a window that does not fit gives none.
    assert_eq!(w(2, 1, -1, -1, 1, 1).output_size(5), Ok(2));
    assert_eq!(w(4, 1, -1, -1, 1, 1).output_size(5), Ok(0));
    assert_eq!(w(1, 1, 0, 0, 1, 1).output_size(0), Ok(0));
    assert_eq!(w(1, 1, 1, 1, 1, 1).output_size(0), Ok(2));
    assert!(w(0, 1, 0, 0, 1, 1).output_size(5).is_err());
    assert!(w(1, 0, 0, 0, 1, 1).output_size(5).is_err());
    // Where window elements land: padding and dilation holes are None.
    let d = w(3, 2, 1, 0, 2, 1);
    let got: Vec<Option<usize>> = (0..3).map(|k| d.source(0, k, 3)).collect();
    assert_eq!(got, [None, Some(0), None]);
    let got: Vec<Option<usize>> = (0..3).map(|k| d.source(2, k, 3)).collect();
    assert_eq!(got, [None, Some(2), None]);
}

#[test]
fn convolution_round_trips_with_and_without_defaults() {
    let text = round_trip(&format!(
        "func @f(%x: f32[1,5,5,2], %w: f32[3,3,2,4]) -> f32[1,5,5,4] {{\n  %y = convolution %x, %w, {NHWC}, size=[3, 3], low=[1, 1], high=[1, 1] : f32[1,5,5,4]\n  return %y\n}}\n"
    ));
    assert!(
        text.contains(&format!(
            "%y = convolution %x, %w, {NHWC}, size=[3, 3], low=[1, 1], high=[1, 1] : f32[1,5,5,4]"
        )),
        "{text}"
    );
    // Every attribute given, with defaults spelled out: they are left out when printed.
    let text = round_trip(
        "func @f(%x: f32[2,4,7], %w: f32[4,2,2]) -> f32[2,4,7] {\n  %y = convolution %x, %w, lhs_dims=[0, 1, 2], rhs_dims=[1, 0, 2], out_dims=[0, 1, 2], size=[2], stride=[2], low=[-1], high=[3], lhs_dilate=[2], rhs_dilate=[1], reversal=[1], feature_groups=2, batch_groups=1 : f32[2,4,7]\n  return %y\n}\n",
    );
    assert!(
        text.contains("size=[2], stride=[2], low=[-1], high=[3], lhs_dilate=[2], reversal=[1], feature_groups=2 : f32[2,4,7]"),
        "{text}"
    );
    // Batch groups (the weight gradient of a grouped convolution) and 3-D.
    round_trip(
        "func @f(%x: f32[4,3,5,5,5], %w: f32[3,2,2,2,2]) -> f32[2,2,4,4,4] {\n  %y = convolution %x, %w, lhs_dims=[0, 1, 2, 3, 4], rhs_dims=[0, 1, 2, 3, 4], out_dims=[0, 1, 2, 3, 4], size=[2, 2, 2], batch_groups=2 : f32[2,2,4,4,4]\n  return %y\n}\n",
    );
}

#[test]
fn convolution_typing_errors_name_the_rule() {
    let conv = |attrs: &str| format!("convolution %x, %w, {attrs}");
    assert_eq!(
        one_error(&conv(&format!("{NHWC}, size=[3, 3]")), "f32[1,3,3,5]"),
        "t.kir:2:3: '%y = convolution': declared result type f32[1,3,3,5] but the op produces f32[1,3,3,4] (operands: f32[1,5,5,2], f32[3,3,2,4])"
    );
    assert!(
        one_error(&conv(&format!("{NHWC}, size=[2, 3]")), "f32[1,3,3,4]")
            .contains("window dimension 0 has size 2, the kernel's spatial dimension 3")
    );
    assert!(one_error(
        &conv("lhs_dims=[0, 3, 1, 1], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3]"),
        "f32[1,3,3,4]"
    )
    .contains("lhs_dims=[0, 3, 1, 1] must name each of the 4 dimensions once"));
    assert!(one_error(
        &conv(&format!("{NHWC}, size=[3, 3], feature_groups=2")),
        "f32[1,3,3,4]"
    )
    .contains("2 input features in 2 group(s) need a kernel of 1 input features, it has 2"));
    assert!(one_error(
        &conv(&format!("{NHWC}, size=[3, 3], batch_groups=3")),
        "f32[1,3,3,4]"
    )
    .contains("4 output features do not split into 3 groups"));
    assert!(one_error(
        &conv(&format!("{NHWC}, size=[3, 3], stride=[0, 1]")),
        "f32[1,3,3,4]"
    )
    .contains(
        "window dimension 0: size 3, stride 0, lhs_dilate 1 and rhs_dilate 1 must be at least 1"
    ));
    assert!(
        one_error(&conv(&format!("{NHWC}, size=[3]")), "f32[1,3,3,4]")
            .contains("2 spatial dimensions need operands of rank 4 and 2 window dimensions")
    );
    assert_eq!(
        one_error(
            &conv(&format!("{NHWC}, size=[3, 3], stride=[1]")),
            "f32[1,3,3,4]"
        ),
        "t.kir:2:8: 'stride' has 1 entries, 'size' has 2"
    );
    assert_eq!(
        one_error(
            &conv("lhs_dims=[0], rhs_dims=[2, 3], out_dims=[0, 3], size=[]"),
            "f32[1,3,3,4]"
        ),
        "t.kir:2:8: lhs_dims, rhs_dims and out_dims need at least two entries each"
    );
    assert_eq!(
        one_error(
            &conv(&format!("{NHWC}, size=[3, 3], reversal=[2, 0]")),
            "f32[1,3,3,4]"
        ),
        "t.kir:2:8: reversal=[2, 0] must hold 0 or 1"
    );
    assert_eq!(
        one_error(&conv("size=[3, 3]"), "f32[1,3,3,4]"),
        "t.kir:2:8: 'convolution' needs the attribute 'lhs_dims'"
    );
}

#[test]
fn reduce_window_round_trips_and_checks_its_operands() {
    let text = round_trip(
        "func @f(%x: f32[1,5,5,2], %v: f32[]) -> f32[1,2,2,2] {\n  %y = reduce_window %x, %v, kind=max, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,2,2,2]\n  return %y\n}\n",
    );
    assert!(
        text.contains(
            "reduce_window %x, %v, kind=max, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,2,2,2]"
        ),
        "{text}"
    );
    // A cumulative sum: the window covers everything before each element.
    round_trip(
        "func @f(%x: i32[6], %v: i32[]) -> i32[6] {\n  %y = reduce_window %x, %v, kind=sum, size=[6], low=[5], high=[0] : i32[6]\n  return %y\n}\n",
    );
    let rw = "reduce_window %x, %v, kind=sum, size=[1, 2, 2, 1], stride=[1, 2, 2, 1]";
    assert!(one_error(rw, "f32[1,2,2,3]")
        .contains("declared result type f32[1,2,2,3] but the op produces f32[1,2,2,2]"));
    assert!(one_error(
        "reduce_window %x, %s, kind=sum, size=[1, 1, 1, 1]",
        "f32[1,5,5,2]"
    )
    .contains("the init value must be a f32[] scalar, got f32[1,2,2,2]"));
    assert!(
        one_error("reduce_window %x, %v, kind=sum, size=[1, 1]", "f32[1,5]")
            .contains("the window has 2 dimensions, the operand 4")
    );
    assert!(one_error(
        "reduce_window %x, %v, kind=sum, size=[1, 1, 1, 1], reversal=[0, 1, 0, 0]",
        "f32[1,5,5,2]"
    )
    .contains("window reversal is only defined for convolution"));
    assert_eq!(
        one_error(
            "reduce_window %x, %v, kind=avg, size=[1, 1, 1, 1]",
            "f32[1,5,5,2]"
        ),
        "t.kir:2:30: unknown 'kind=avg' (expected sum, max, min or prod)"
    );
}

#[test]
fn select_and_scatter_round_trips_and_checks_its_source() {
    let text = round_trip(
        "func @f(%x: f32[1,5,5,2], %s: f32[1,2,2,2], %v: f32[]) -> f32[1,5,5,2] {\n  %y = select_and_scatter %x, %s, %v, select=ge, scatter=sum, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,5,5,2]\n  return %y\n}\n",
    );
    assert!(text.contains("select_and_scatter %x, %s, %v, select=ge, scatter=sum, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,5,5,2]"), "{text}");
    assert!(one_error(
        "select_and_scatter %x, %s, %v, select=ge, scatter=sum, size=[1, 2, 2, 1]",
        "f32[1,5,5,2]"
    )
    .contains(
        "the source must have one element per window position (f32[1,4,4,2]), got f32[1,2,2,2]"
    ));
    assert_eq!(
        one_error(
            "select_and_scatter %x, %s, %v, select=big, scatter=sum, size=[1, 2, 2, 1]",
            "f32[1,5,5,2]"
        ),
        "t.kir:2:39: unknown comparison 'select=big' (expected one of lt, le, gt, ge, eq, ne)"
    );
    assert!(one_error(
        "select_and_scatter %x, %s, %v, select=ge, size=[1, 2, 2, 1]",
        "f32[1,5,5,2]"
    )
    .contains("'select_and_scatter' needs the attribute 'scatter'"));
}

#[test]
fn tracer_records_the_windowed_ops() {
    let window: Vec<WindowDim> = [1, 2, 2, 1]
        .iter()
        .map(|&s| WindowDim {
            stride: s,
            ..WindowDim::new(s)
        })
        .collect();
    let f = trace(
        "f",
        &[
            TensorType::new(DType::F32, [1, 4, 4, 2]),
            TensorType::new(DType::F32, [3, 3, 2, 2]),
        ],
        |a: &[Tracer]| {
            let conv = Convolution {
                dims: ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).unwrap(),
                window: vec![
                    WindowDim {
                        low: 1,
                        high: 1,
                        ..WindowDim::new(3)
                    };
                    2
                ],
                feature_groups: 1,
                batch_groups: 1,
            };
            let y = a[0].convolution(&a[1], conv);
            let p = y.reduce_window(ReduceKind::Max, f64::NEG_INFINITY, &window);
            y.select_and_scatter(&p, CompareDir::Ge, ReduceKind::Sum, 0.0, &window)
        },
    )
    .unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    for want in [
        "convolution %0, %1, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[1, 1], high=[1, 1] : f32[1,4,4,2]",
        "kind=max, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,2,2,2]",
        "select=ge, scatter=sum, size=[1, 2, 2, 1], stride=[1, 2, 2, 1] : f32[1,4,4,2]",
    ] {
        assert!(text.contains(want), "{text}");
    }
    let e = trace(
        "f",
        &[TensorType::new(DType::F32, [4])],
        |a: &[Tracer]| a[0].reduce_window(ReduceKind::Sum, 0.0, &[WindowDim::new(5)]),
    )
    .unwrap();
    // A window larger than the operand has no positions.
    assert!(print_func(&e).contains(": f32[0]"), "{}", print_func(&e));
}
