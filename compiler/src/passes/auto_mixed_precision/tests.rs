use super::*;
use kiln_flags::{Flags, MixedPrecision};
use kiln_ir::{parse_func, verify_func, Op};

/// The guide's example: an MLP whose head is a log-softmax.
pub(super) const MLP: &str = "
func @mlp(%x: f32[8,16], %w1: f32[16,32], %b1: f32[32], %w2: f32[32,10], %b2: f32[10]) -> f32[8,10] {
  %h = dot_general %x, %w1, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,32]
  %bb1 = broadcast_in_dim %b1, dims=[1] : f32[8,32]
  %a = add %h, %bb1 : f32[8,32]
  %zero = constant 0.0 : f32[8,32]
  %r = max %a, %zero : f32[8,32]
  %o = dot_general %r, %w2, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[8,10]
  %bb2 = broadcast_in_dim %b2, dims=[1] : f32[8,10]
  %z = add %o, %bb2 : f32[8,10]
  %m = reduce_max %z, axes=[1] : f32[8]
  %mb = broadcast_in_dim %m, dims=[0] : f32[8,10]
  %d = sub %z, %mb : f32[8,10]
  %e = exp %d : f32[8,10]
  %s = reduce_sum %e, axes=[1] : f32[8]
  %ls = log %s : f32[8]
  %lsb = broadcast_in_dim %ls, dims=[0] : f32[8,10]
  %y = sub %d, %lsb : f32[8,10]
  return %y
}";

fn options(mp: MixedPrecision) -> Options {
    Options::from_flags(&Flags {
        mixed_precision: mp,
        ..Flags::default()
    })
}

fn enabled() -> MixedPrecision {
    MixedPrecision {
        graph_rewrite: true,
        ..MixedPrecision::default()
    }
}

fn converts(f: &Func) -> Vec<String> {
    f.insts
        .iter()
        .filter(|i| matches!(i.op, Op::Convert))
        .map(|i| format!("%{}: {}", f.value(i.results[0]).name, f.ty(i.results[0])))
        .collect()
}

const TWO_USERS: &str = "
func @f(%x: f32[4,4], %w: f32[4,4]) -> (f32[4,4], f32[4,4]) {
  %d1 = dot_general %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %d2 = dot_general %w, %x, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %e1 = exp %d1 : f32[4,4]
  %e2 = exp %d1 : f32[4,4]
  return %e1, %d2
}";

#[test]
fn off_by_default() {
    let mut f = parse_func(TWO_USERS, "t.kir").unwrap();
    let before = print_func(&f);
    assert!(!run(&mut f, &Options::default()).unwrap());
    assert_eq!(print_func(&f), before);
}

#[test]
fn casts_are_made_once_per_value_and_direction_and_the_signature_stays() {
    let mut f = parse_func(TWO_USERS, "t.kir").unwrap();
    let signature = (f.param_types(), f.result_types());
    assert!(run(&mut f, &options(enabled())).unwrap());
    assert!(verify_func(&f).is_empty(), "{}", print_func(&f));
    assert_eq!((f.param_types(), f.result_types()), signature);
    // %x and %w once each to f16 although both dots use both; %d1 once back to f32 for
    // its two exps; %d2 back to f32 as a result.
    assert_eq!(
        converts(&f),
        [
            "%x_f16: f16[4,4]",
            "%w_f16: f16[4,4]",
            "%d1_f32: f32[4,4]",
            "%d2_f32: f32[4,4]"
        ]
    );
}

#[test]
fn the_summary_counts_as_tf_does() {
    let f = parse_func(TWO_USERS, "t.kir").unwrap();
    let p = paint::paint(&f, &AmpLists::defaults());
    let (_, converted) = cast::rewrite(&f, &p, DType::Bf16);
    assert_eq!(
        summary_line(&converted, AmpDtype::Bf16),
        "Converted 2/4 nodes to bfloat16 precision using 2 cast(s) to bfloat16 (excluding Const and Variable casts)"
    );
    assert_eq!(converted.casts_to_f32, 2);
    assert_eq!(converted.log[0], "Inserting cast to bf16 at parameter %x");
}

#[test]
fn casts_of_constants_are_not_counted() {
    let text = "
func @f(%x: f32[4,4]) -> f32[4,4] {
  %w = constant 0.5 : f32[4,4]
  %d = dot_general %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  return %d
}";
    let f = parse_func(text, "t.kir").unwrap();
    let (_, converted) = cast::rewrite(&f, &paint::paint(&f, &AmpLists::defaults()), DType::F16);
    assert_eq!(
        (converted.nodes, converted.of, converted.casts_to_target),
        (1, 2, 1)
    );
}

#[test]
fn an_unknown_op_name_fails_the_pass() {
    let mut mp = enabled();
    mp.infer.add = vec!["tahn".into()];
    let mut f = parse_func(TWO_USERS, "t.kir").unwrap();
    let err = run(&mut f, &options(mp)).unwrap_err().to_string();
    assert!(
        err.starts_with("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_ADD: unknown op `tahn`; did you mean `tanh`?"),
        "{err}"
    );
}

#[test]
fn the_log_path_receives_the_graphs_the_lists_and_the_summary() {
    let dir = std::env::temp_dir().join(format!("kiln-amp-log-{}", std::process::id()));
    let mut mp = enabled();
    mp.log_path = Some(dir.clone());
    let mut f = parse_func(TWO_USERS, "t.kir").unwrap();
    let before = print_func(&f);
    run(&mut f, &options(mp)).unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read("graphdef_preop_f.kir"), before);
    assert_eq!(read("graphdef_AutoMixedPrecision_f.kir"), print_func(&f));
    assert!(read("paintbuckets_AutoMixedPrecision_f.txt").starts_with("AllowList:\n"));
    assert!(read("summary_AutoMixedPrecision_f.txt").starts_with("Converted 2/4 nodes to float16"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_log_path_is_an_error_naming_the_file() {
    let file = std::env::temp_dir().join(format!("kiln-amp-not-a-dir-{}", std::process::id()));
    std::fs::write(&file, "").unwrap();
    let mut mp = enabled();
    mp.log_path = Some(file.clone());
    let mut f = parse_func(TWO_USERS, "t.kir").unwrap();
    let err = run(&mut f, &options(mp)).unwrap_err().to_string();
    std::fs::remove_file(&file).unwrap();
    assert!(
        err.starts_with("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH: cannot write"),
        "{err}"
    );
}

#[test]
fn loop_bodies_are_rewritten_as_functions_of_their_own() {
    let text = "
func @f(%x: f32[4,4], %n: i32[]) -> f32[4,4] {
  %zero = constant 0 : i32[]
  %i1, %n1, %x1 = while %zero, %n, %x -> (i32[], i32[], f32[4,4])
    cond(%i: i32[], %n: i32[], %v: f32[4,4]) {
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %n: i32[], %v: f32[4,4]) {
      %d = dot_general %v, %v, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
      %one = constant 1 : i32[]
      %next = add %i, %one : i32[]
      yield %next, %n, %d
    }
  return %x1
}";
    let mut f = parse_func(text, "t.kir").unwrap();
    assert!(run(&mut f, &options(enabled())).unwrap());
    assert!(verify_func(&f).is_empty(), "{}", print_func(&f));
    let body = f.insts[1].op.regions()[1];
    // The carried value stays f32: the body converts it in and its product back out.
    assert_eq!(converts(body), ["%v_f16: f16[4,4]", "%d_f32: f32[4,4]"]);
    assert!(converts(&f).is_empty());
}

/// Uniform values in [-scale, scale) from the shared test generator.
fn uniform(ty: &kiln_ir::TensorType, scale: f32, r: &mut kiln_testkit::Rng) -> kiln_ir::Tensor {
    let data = (0..ty.num_elements())
        .map(|_| ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32 * scale)
        .collect();
    kiln_ir::Tensor::from_f32(ty.shape.clone(), data).unwrap()
}

/// The largest difference between the rewritten MLP's output and the f32 program's.
fn mlp_error(dtype: AmpDtype) -> f32 {
    let f = parse_func(MLP, "t.kir").unwrap();
    let mut amp = f.clone();
    let mp = MixedPrecision { dtype, ..enabled() };
    assert!(run(&mut amp, &options(mp)).unwrap());
    let mut r = kiln_testkit::Rng(0x5eed);
    // Weights scaled by 1/sqrt(fan-in), as initialisers do, so activations stay near 1.
    let scales = [1.0, 0.25, 0.1, 0.18, 0.1];
    let args: Vec<_> = f
        .param_types()
        .iter()
        .zip(scales)
        .map(|(ty, s)| uniform(ty, s, &mut r))
        .collect();
    let interp = kiln_interp::Interpreter::new(1).unwrap();
    let want = interp.run(&f, &args).unwrap();
    let got = interp.run(&amp, &args).unwrap();
    let (want, got) = (want[0].as_f32().unwrap(), got[0].as_f32().unwrap());
    want.iter()
        .zip(got)
        .map(|(w, g)| (w - g).abs())
        .fold(0.0, f32::max)
}

/// End to end: the rewritten MLP runs (its dots in f16 or bf16, accumulating in f32) and
/// its log-probabilities stay within 1e-3 (f16: 11 significant bits, inputs and hidden
/// activations rounded once each; 1.3e-4 measured) or 1e-2 (bf16: 8 bits; 1.1e-3 measured)
/// of the f32 program's, which are of order 1; and the half program does differ from the
/// f32 one.
#[test]
fn the_rewritten_mlp_stays_close_to_the_f32_result() {
    let f16 = mlp_error(AmpDtype::F16);
    let bf16 = mlp_error(AmpDtype::Bf16);
    assert!(f16 > 0.0 && f16 < 1e-3, "f16 error {f16}");
    assert!(bf16 > 0.0 && bf16 < 1e-2, "bf16 error {bf16}");
    assert!(f16 < bf16, "f16 {f16} should be closer than bf16 {bf16}");
}
