//! `gather` and `scatter`: `.kir` text round trips, the typing rule's errors (each naming
//! the attribute and what is wrong), the parser's errors for their attributes, and the
//! tracer methods.

use kiln_ir::{
    parse_func, print_func, trace, verify_func, DType, GatherDims, ScatterCombine, ScatterDims,
    TensorType, Tracer,
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

/// The parser's or verifier's messages for `%y = {body} : {ty}` with parameters
/// `%x: f32[5,4]`, `%i: i32[3,1]`, `%u: f32[3,4]`.
fn errors(body: &str, ty: &str) -> Vec<String> {
    let src = format!(
        "func @f(%x: f32[5,4], %i: i32[3,1], %u: f32[3,4]) -> {ty} {{\n  %y = {body} : {ty}\n  return %y\n}}\n"
    );
    match parse_func(&src, "t.kir") {
        Ok(f) => verify_func(&f).iter().map(|d| d.render("t.kir")).collect(),
        Err(e) => vec![e.to_string()],
    }
}

/// `errors` for a gather of `%x` at `%i` (an embedding lookup) with `attrs` changed.
fn gather_errors(attrs: &str, ty: &str) -> Vec<String> {
    errors(&format!("gather %x, %i, {attrs}"), ty)
}

const LOOKUP: &str = "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]";
const ADD_ROWS: &str = "update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1";

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

fn i32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::I32, shape.to_vec())
}

#[test]
fn gather_round_trips_with_and_without_batching_dims() {
    let text = round_trip(&format!(
        "func @f(%x: f32[5,4], %i: i32[3,1]) -> f32[3,4] {{\n  %y = gather %x, %i, {LOOKUP} : f32[3,4]\n  return %y\n}}\n"
    ));
    assert!(
        text.contains(&format!("%y = gather %x, %i, {LOOKUP} : f32[3,4]")),
        "{text}"
    );
    // take_along_axis as JAX writes it: the rows are a batching pair.
    let text = round_trip(
        "func @f(%x: f32[3,5], %i: i64[3,2,1]) -> f32[3,2] {\n  %y = gather %x, %i, offset_dims=[], collapsed_slice_dims=[1], start_index_map=[1], index_vector_dim=2, slice_sizes=[1, 1], operand_batching_dims=[0], start_indices_batching_dims=[0] : f32[3,2]\n  return %y\n}\n",
    );
    assert!(
        text.contains("operand_batching_dims=[0], start_indices_batching_dims=[0] : f32[3,2]"),
        "{text}"
    );
}

#[test]
fn scatter_round_trips_with_every_combiner() {
    for c in ScatterCombine::ALL {
        let ty = match c {
            ScatterCombine::And | ScatterCombine::Or => "i32",
            _ => "f32",
        };
        let text = round_trip(&format!(
            "func @f(%x: {ty}[5,4], %i: u32[3,1], %u: {ty}[3,4]) -> {ty}[5,4] {{\n  %y = scatter %x, %i, %u, {ADD_ROWS}, combine={} : {ty}[5,4]\n  return %y\n}}\n",
            c.name()
        ));
        assert!(
            text.contains(&format!("{ADD_ROWS}, combine={} : {ty}[5,4]", c.name())),
            "{text}"
        );
    }
    round_trip(
        "func @f(%x: f32[2,5], %i: i32[2,3], %u: f32[2,3]) -> f32[2,5] {\n  %y = scatter %x, %i, %u, update_window_dims=[], inserted_window_dims=[1], scatter_dims_to_operand_dims=[1], index_vector_dim=2, input_batching_dims=[0], scatter_indices_batching_dims=[0], combine=max : f32[2,5]\n  return %y\n}\n",
    );
}

#[test]
fn gather_result_types_follow_offset_dims_and_the_batch_dims() {
    // Offsets first, then the batch dimension: the slice's rows are result dimension 0.
    let t = |attrs: &str, idx: &str, ty: &str| {
        let src = format!(
            "func @f(%x: f32[5,4], %i: {idx}) -> {ty} {{\n  %y = gather %x, %i, {attrs} : {ty}\n  return %y\n}}\n"
        );
        let f = parse_func(&src, "t.kir").unwrap();
        verify_func(&f)
            .iter()
            .map(|d| d.render("t.kir"))
            .collect::<Vec<_>>()
    };
    assert!(t("offset_dims=[0], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]", "i32[3,1]", "f32[4,3]").is_empty());
    // Two-element index vectors in dimension 0, a 2x2 window.
    assert!(t("offset_dims=[1, 2], collapsed_slice_dims=[], start_index_map=[1, 0], index_vector_dim=0, slice_sizes=[2, 2]", "i32[2,6]", "f32[6,2,2]").is_empty());
    // A scalar index per row: index_vector_dim is the rank.
    assert!(t("offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=2, slice_sizes=[1, 4]", "u32[2,3]", "f32[2,3,4]").is_empty());
    assert!(t("offset_dims=[0, 1], collapsed_slice_dims=[], start_index_map=[], index_vector_dim=0, slice_sizes=[5, 4]", "i32[0]", "f32[5,4]").is_empty());
}

#[test]
fn gather_typing_errors_name_the_attribute() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0, 1], index_vector_dim=1, slice_sizes=[1, 4]",
            "f32[3,4]",
            "start_index_map=[0, 1] needs one entry per index vector element (1)",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=3, slice_sizes=[1, 4]",
            "f32[3,4]",
            "index_vector_dim=3 is out of range for indices i32[3,1]",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[2], index_vector_dim=1, slice_sizes=[1, 4]",
            "f32[3,4]",
            "start_index_map=[2] must be distinct dimensions below rank 2",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 5]",
            "f32[3,5]",
            "slice_sizes=[1, 5]: dimension 1 takes 5 elements of 4",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1]",
            "f32[3,4]",
            "slice_sizes=[1] needs 2 entries for f32[5,4]",
        ),
        (
            "offset_dims=[0, 1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[2, 4]",
            "f32[3,4]",
            "slice_sizes=[2, 4]: collapsed or batching dimension 0 must have size 1",
        ),
        (
            "offset_dims=[1, 0], collapsed_slice_dims=[], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]",
            "f32[1,4,3]",
            "offset_dims=[1, 0] must be increasing dimensions below rank 3",
        ),
        (
            "offset_dims=[], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]",
            "f32[3]",
            "offset_dims=[] needs one entry per slice dimension left in the result (1)",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[1, 0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 1]",
            "f32[3]",
            "collapsed_slice_dims=[1, 0] must be increasing dimensions below rank 2",
        ),
        (
            "offset_dims=[], collapsed_slice_dims=[1], start_index_map=[1], index_vector_dim=1, slice_sizes=[1, 1], operand_batching_dims=[0], start_indices_batching_dims=[0]",
            "f32[3]",
            "operand dimension 0 (size 5) and indices dimension 0 (size 3) are paired as batching dimensions but differ",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4], operand_batching_dims=[0], start_indices_batching_dims=[0]",
            "f32[3,4]",
            "dimension 0 is in both collapsed_slice_dims and operand_batching_dims",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4], operand_batching_dims=[1]",
            "f32[3,4]",
            "operand_batching_dims=[1] and start_indices_batching_dims=[] must pair up",
        ),
        (
            "offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]",
            "f32[3,5]",
            "declared result type f32[3,5] but the op produces f32[3,4]",
        ),
    ];
    for (attrs, ty, want) in cases {
        let got = gather_errors(attrs, ty);
        let want = format!("t.kir:2:3: '%y = gather': {want} (operands: f32[5,4], i32[3,1])");
        assert_eq!(got, [want], "{attrs}");
    }
    // Float indices.
    assert_eq!(
        errors(&format!("gather %x, %u, {LOOKUP}"), "f32[3,4]"),
        ["t.kir:2:3: '%y = gather': the indices must be integers (i32, i64 or u32), got f32[3,4] (operands: f32[5,4], f32[3,4])"]
    );
}

#[test]
fn scatter_typing_errors_name_the_attribute() {
    let s = |attrs: &str, upd: &str| errors(&format!("scatter %x, %i, {upd}, {attrs}"), "f32[5,4]");
    let with = |what: &str| {
        format!("t.kir:2:3: '%y = scatter': {what} (operands: f32[5,4], i32[3,1], f32[3,4])")
    };
    assert!(s(&format!("{ADD_ROWS}, combine=add"), "%u").is_empty());
    assert_eq!(
        s(&format!("{ADD_ROWS}, combine=and"), "%u"),
        [with("combine=and: not defined for f32")]
    );
    assert_eq!(
        s("update_window_dims=[0], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add", "%u"),
        [with("the updates f32[3,4] do not fit: their dimensions must be the batch dimensions of the indices i32[3,1], with window dimensions of f32[5,4] (at most its size) at update_window_dims=[0]")]
    );
    assert_eq!(
        s("update_window_dims=[1], inserted_window_dims=[], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add", "%u"),
        [with("update_window_dims=[1] needs one entry per operand dimension neither inserted nor batching (2)")]
    );
    assert_eq!(
        s("update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0, 1], index_vector_dim=1, combine=add", "%u"),
        [with("scatter_dims_to_operand_dims=[0, 1] needs one entry per index vector element (1)")]
    );
    assert_eq!(
        s("update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, input_batching_dims=[1], scatter_indices_batching_dims=[1], combine=add", "%u"),
        [with("scatter_indices_batching_dims=[1] names index_vector_dim=1")]
    );
    let updates_i = errors(
        &format!("scatter %x, %i, %i, {ADD_ROWS}, combine=add"),
        "f32[5,4]",
    );
    assert_eq!(
        updates_i,
        ["t.kir:2:3: '%y = scatter': the updates i32[3,1] must have the dtype of f32[5,4] (operands: f32[5,4], i32[3,1], i32[3,1])"]
    );
}

#[test]
fn malformed_attributes_are_errors_with_a_position() {
    // (instruction, the text the error points at, message)
    let cases: &[(&str, &str, &str)] = &[
        (
            "gather %x, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], slice_sizes=[1, 4]",
            "gather",
            "'gather' needs the attribute 'index_vector_dim'",
        ),
        (
            "gather %x, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[-1], index_vector_dim=1, slice_sizes=[1, 4]",
            "-1",
            "expected a non-negative integer, found '-1'",
        ),
        (
            "gather %x, %i, offset_dims=1, collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4]",
            "offset_dims",
            "attribute 'offset_dims' must be a list like [0, 1]",
        ),
        (
            "gather %x, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=[1], slice_sizes=[1, 4]",
            "index_vector_dim",
            "attribute 'index_vector_dim' must be a non-negative integer",
        ),
        (
            "gather %x, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1, 4], combine=add",
            "combine",
            "'gather' has no attribute 'combine'",
        ),
        (
            "scatter %x, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=sub",
            "combine",
            "unknown combiner 'combine=sub' (expected replace, add, mul, max, min, and, or)",
        ),
        (
            "scatter %x, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1",
            "scatter",
            "'scatter' needs the attribute 'combine'",
        ),
        (
            "scatter %x, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add, input_batching_dims=[0], input_batching_dims=[1]",
            "input_batching_dims=[1]",
            "attribute 'input_batching_dims' is given twice",
        ),
    ];
    for (body, at, message) in cases {
        let ty = if body.starts_with("gather") {
            "f32[3,4]"
        } else {
            "f32[5,4]"
        };
        // The instruction starts at column 8 of line 2.
        let col = 8 + body.find(at).unwrap();
        assert_eq!(
            errors(body, ty),
            [format!("t.kir:2:{col}: {message}")],
            "{body}"
        );
    }
}

#[test]
fn tracer_records_gathers_and_scatters() {
    let f = trace("f", &[f32t(&[5, 4]), i32t(&[2, 3])], |a: &[Tracer]| {
        let rows = a[0].take_rows(&a[1]);
        let grad = a[0].add_rows(&a[1], &rows);
        (rows, grad)
    })
    .unwrap();
    assert!(verify_func(&f).is_empty());
    let text = print_func(&f);
    assert!(
        text.contains("gather %0, %1, offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=2, slice_sizes=[1, 4] : f32[2,3,4]"),
        "{text}"
    );
    assert!(
        text.contains("scatter %0, %1, %2, update_window_dims=[2], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=2, combine=add : f32[5,4]"),
        "{text}"
    );
    let e = trace("f", &[f32t(&[5, 4]), f32t(&[2])], |a: &[Tracer]| {
        a[0].take_rows(&a[1])
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "gather: the indices must be integers (i32, i64 or u32), got f32[2] (operands: f32[5,4] and f32[2])"
    );
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
        ..ScatterDims::default()
    };
    let f = trace(
        "f",
        &[f32t(&[6]), i32t(&[3]), f32t(&[3])],
        |a: &[Tracer]| a[0].scatter(&a[1], &a[2], dims.clone(), ScatterCombine::Replace),
    )
    .unwrap();
    assert!(print_func(&f).contains("combine=replace : f32[6]"));
    let g = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        slice_sizes: vec![1],
        ..GatherDims::default()
    };
    let f = trace("f", &[f32t(&[6]), i32t(&[3])], |a: &[Tracer]| {
        a[0].gather(&a[1], g.clone())
    })
    .unwrap();
    assert!(verify_func(&f).is_empty());
}
