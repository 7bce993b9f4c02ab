//! `gather` and `scatter` from HLO: programs exported from JAX (its printing style) and
//! TensorFlow (`%names`, typed operands) by the scripts in `tests/data/indexing`, imported,
//! run on Kiln's interpreter and compared **bit for bit** with the frameworks' outputs —
//! gathers copy elements, and scatters combine duplicates in the updates' order, which is
//! the order XLA's CPU backend uses too. Then the scatter combiners recognised from
//! `to_apply`, and the errors for what Kiln does not take.

use kiln_hlo::import;
use kiln_interp::Interpreter;
use kiln_ir::{Op, ScatterCombine, Tensor};
use kiln_testkit::{first_difference, numbered_npys};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/indexing")
}

/// Imports `NAME.hlo`, runs it at 1 and 4 threads on the frameworks' inputs, and checks
/// both runs give the frameworks' outputs, bit for bit. Returns the imported entry's ops.
fn check(name: &str) -> Vec<Op> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = import(&text, &format!("{name}.hlo")).unwrap_or_else(|e| panic!("{e}"));
    kiln_ir::parse_module(&kiln_ir::print_module(&module), "printed.kir").unwrap();
    let f = module.entry().unwrap();
    let inputs = numbered_npys(&dir(), name, "in");
    let expected = numbered_npys(&dir(), name, "out");
    assert!(
        !inputs.is_empty() && !expected.is_empty(),
        "{name}: no .npy"
    );
    for threads in [1, 4] {
        let got: Vec<Tensor> = Interpreter::new(threads)
            .unwrap()
            .run(f, &inputs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(first_difference(&got, &expected), None, "{name}");
    }
    f.insts.iter().map(|i| i.op.clone()).collect()
}

fn combiners(ops: &[Op]) -> Vec<ScatterCombine> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Scatter { combine, .. } => Some(*combine),
            _ => None,
        })
        .collect()
}

fn gathers(ops: &[Op]) -> usize {
    ops.iter().filter(|op| matches!(op, Op::Gather(_))).count()
}

#[test]
fn jax_embedding_lookup_with_out_of_range_ids() {
    assert_eq!(gathers(&check("embedding")), 1);
}

#[test]
fn jax_embedding_gradient_sums_duplicate_ids() {
    assert_eq!(combiners(&check("embedding_grad")), [ScatterCombine::Add]);
}

#[test]
fn jax_take_along_axis_and_its_gradient_use_batching_dims() {
    let ops = check("take_along");
    assert!(ops.iter().any(
        |op| matches!(op, Op::Gather(d) if d.operand_batching_dims == [0] && d.start_indices_batching_dims == [0])
    ));
    let ops = check("take_along_grad");
    assert!(ops.iter().any(|op| matches!(op, Op::Scatter { dims, combine: ScatterCombine::Add } if dims.input_batching_dims == [0])));
}

#[test]
fn jax_at_set_add_max_min_multiply() {
    assert_eq!(
        combiners(&check("at_updates")),
        [
            ScatterCombine::Replace,
            ScatterCombine::Add,
            ScatterCombine::Max,
            ScatterCombine::Min,
            ScatterCombine::Mul
        ]
    );
}

#[test]
fn jax_windows_with_clamped_starts_and_a_vmapped_lookup() {
    assert_eq!(gathers(&check("windows")), 1);
    assert_eq!(gathers(&check("vmapped")), 1);
}

#[test]
fn jax_scatter_skips_windows_partly_out_of_range() {
    // Starts -1 and 4 put a 2-element window partly outside f32[5]: XLA skips both whole.
    assert_eq!(combiners(&check("scatter_windows")), [ScatterCombine::Add]);
    let x = &numbered_npys(&dir(), "scatter_windows", "in")[0];
    let out = &numbered_npys(&dir(), "scatter_windows", "out")[0];
    assert_eq!(x.as_f32().unwrap()[..2], out.as_f32().unwrap()[..2]);
}

#[test]
fn tensorflow_gather_gather_nd_and_scatter_nd() {
    assert_eq!(gathers(&check("tf_lookup")), 2);
    assert_eq!(combiners(&check("tf_lookup_grad")), [ScatterCombine::Add]);
    assert_eq!(
        combiners(&check("tf_scatter_nd")),
        [
            ScatterCombine::Replace,
            ScatterCombine::Add,
            ScatterCombine::Max
        ]
    );
}

#[test]
fn every_exported_program_has_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".hlo").map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "at_updates",
            "embedding",
            "embedding_grad",
            "scatter_windows",
            "take_along",
            "take_along_grad",
            "tf_lookup",
            "tf_lookup_grad",
            "tf_scatter_nd",
            "vmapped",
            "windows"
        ]
    );
}

/// A scatter of `f32[4]` by `s32[2,1]` indices with update computation `comp` (named
/// `%c`), of `dtype`.
fn scatter_with(comp: &str, dtype: &str) -> String {
    format!(
        "HloModule t\n\n%c (a: {dtype}[], b: {dtype}[]) -> {dtype}[] {{\n{comp}\n}}\n\n\
         ENTRY %main (x: {dtype}[4], i: s32[2,1], u: {dtype}[2]) -> {dtype}[4] {{\n  \
         %x = {dtype}[4]{{0}} parameter(0)\n  %i = s32[2,1]{{1,0}} parameter(1)\n  \
         %u = {dtype}[2]{{0}} parameter(2)\n  \
         ROOT %s = {dtype}[4]{{0}} scatter({dtype}[4]{{0}} %x, s32[2,1]{{1,0}} %i, {dtype}[2]{{0}} %u), \
         update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, \
         index_vector_dim=1, indices_are_sorted=true, unique_indices=false, to_apply=%c\n}}\n"
    )
}

#[test]
fn update_computations_become_combiners() {
    let params = "  %a = DT[] parameter(0)\n  %b = DT[] parameter(1)\n";
    let cases = [
        ("f32", "add", ScatterCombine::Add),
        ("f32", "multiply", ScatterCombine::Mul),
        ("s32", "maximum", ScatterCombine::Max),
        ("u32", "minimum", ScatterCombine::Min),
        ("pred", "maximum", ScatterCombine::Or),
        ("pred", "minimum", ScatterCombine::And),
        ("pred", "and", ScatterCombine::And),
        ("s32", "or", ScatterCombine::Or),
    ];
    for (dt, op, want) in cases {
        // Either operand order.
        for (l, r) in [("a", "b"), ("b", "a")] {
            let comp =
                format!("{params}  ROOT %r = DT[] {op}(DT[] %{l}, DT[] %{r})").replace("DT", dt);
            let m = import(&scatter_with(&comp, dt), "t.hlo").unwrap_or_else(|e| panic!("{e}"));
            let ops: Vec<Op> = m
                .entry()
                .unwrap()
                .insts
                .iter()
                .map(|i| i.op.clone())
                .collect();
            assert_eq!(combiners(&ops), [want], "{dt} {op}");
        }
    }
    // JAX's .at[].set: the ROOT is the second parameter.
    let comp = "  %a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(1)";
    let m = import(&scatter_with(comp, "f32"), "t.hlo").unwrap();
    let ops: Vec<Op> = m
        .entry()
        .unwrap()
        .insts
        .iter()
        .map(|i| i.op.clone())
        .collect();
    assert_eq!(combiners(&ops), [ScatterCombine::Replace]);
}

#[test]
fn what_kiln_cannot_combine_is_refused_by_name() {
    let cases = [
        (
            "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %r = f32[] subtract(f32[] %a, f32[] %b)",
            "f32",
            "unsupported HLO op 'scatter' with update computation %c (Kiln combines with one plain add, multiply, maximum, minimum, and, or of the two parameters, or replaces with parameter 1) on f32 at t.hlo:13:23 in %s",
        ),
        (
            "  ROOT %a = f32[] parameter(0)\n  %b = f32[] parameter(1)",
            "f32",
            "unsupported HLO op 'scatter' with update computation %c (Kiln combines with one plain add, multiply, maximum, minimum, and, or of the two parameters, or replaces with parameter 1) on f32 at t.hlo:12:23 in %s",
        ),
        (
            "  %a = pred[] parameter(0)\n  %b = pred[] parameter(1)\n  ROOT %r = pred[] add(pred[] %a, pred[] %b)",
            "pred",
            "unsupported HLO op 'scatter' with update computation %c (Kiln combines with one plain add, multiply, maximum, minimum, and, or of the two parameters, or replaces with parameter 1) on bool at t.hlo:13:24 in %s",
        ),
        (
            "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %r = f32[] and(f32[] %a, f32[] %b)",
            "f32",
            "t.hlo:13:8: the HLO does not type-check: '%s = scatter': combine=and: not defined for f32 (operands: f32[4], i32[2,1], f32[2])",
        ),
    ];
    for (comp, dt, want) in cases {
        let err = import(&scatter_with(comp, dt), "t.hlo").unwrap_err();
        assert_eq!(err.to_string(), want);
    }
    // Variadic scatter (two operands and two updates at once).
    let text = "HloModule t\n\nc {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                p = f32[] parameter(2)\n  q = f32[] parameter(3)\n  ROOT t = (f32[], f32[]) tuple(b, q)\n}\n\n\
                ENTRY main {\n  x = f32[4] parameter(0)\n  i = s32[2,1] parameter(1)\n  \
                u = f32[2] parameter(2)\n  \
                ROOT s = (f32[4], f32[4]) scatter(x, x, i, u, u), update_window_dims={}, \
                inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=c\n}\n";
    assert_eq!(
        import(text, "t.hlo").unwrap_err().to_string(),
        "unsupported HLO op 'scatter' with 5 operands (variadic scatter) at t.hlo:15:29 in %s"
    );
}

#[test]
fn bad_dimension_numbers_are_errors_with_a_position() {
    let body = |attrs: &str| {
        format!(
            "HloModule t\n\nENTRY main {{\n  x = f32[5,4] parameter(0)\n  i = s32[3,1] parameter(1)\n  \
             ROOT g = f32[3,4] gather(x, i), {attrs}\n}}\n"
        )
    };
    let cases = [
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, slice_sizes={1,4}",
            "t.hlo:6:8: %g needs index_vector_dim=N",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=-1, slice_sizes={1,4}",
            "t.hlo:6:8: %g: -1 is negative",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}",
            "t.hlo:6:8: the HLO does not type-check: '%g = gather': slice_sizes=[1, 5]: dimension 1 takes 5 elements of 4 (operands: f32[5,4], i32[3,1])",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, mode=clip",
            "t.hlo:6:138: unsupported attribute 'mode' of 'gather' in %g",
        ),
    ];
    for (attrs, want) in cases {
        let err = import(&body(attrs), "t.hlo").unwrap_err();
        assert_eq!(err.to_string(), want, "{attrs}");
    }
    // Syntax errors in the attributes point at the token: (attributes, token, message).
    let syntax = [
        (
            "offset_dims=1, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}",
            "1, c",
            "expected '{', found '1'",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,a}",
            "a}",
            "expected an integer, found 'a'",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim={1}, slice_sizes={1,4}",
            "{1}, s",
            "expected an integer, found '{'",
        ),
        (
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=maybe",
            "indices_are_sorted",
            "indices_are_sorted= expects 'true' or 'false'",
        ),
    ];
    for (attrs, at, message) in syntax {
        let err = import(&body(attrs), "t.hlo").unwrap_err();
        // The attributes start at column 35 of line 6.
        let col = 35 + attrs.find(at).unwrap();
        assert_eq!(
            err.to_string(),
            format!("t.hlo:6:{col}: {message}"),
            "{attrs}"
        );
    }
}
