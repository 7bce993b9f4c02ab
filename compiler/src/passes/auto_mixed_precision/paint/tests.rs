use super::*;
use kiln_flags::MixedPrecision;
use kiln_ir::parse_func;

/// The names of the first results of the instructions painted in `which`.
fn names(f: &Func, which: &[bool]) -> Vec<String> {
    f.insts
        .iter()
        .zip(which)
        .filter(|(_, &w)| w)
        .map(|(inst, _)| f.value(inst.results[0]).name.clone())
        .collect()
}

fn painted(text: &str, lists: &AmpLists) -> (Vec<String>, Vec<String>) {
    let f = parse_func(text, "t.kir").unwrap();
    let p = paint(&f, lists);
    (names(&f, &p.allow), names(&f, &p.deny))
}

use crate::passes::auto_mixed_precision::tests::MLP;

#[test]
fn the_guides_mlp_runs_its_dots_in_half_and_its_log_softmax_in_f32() {
    let (allow, deny) = painted(MLP, &AmpLists::defaults());
    // Pass 1 paints the dots; pass 3 the add and relu between them; pass 4 the bias
    // broadcast, a clear op feeding an ALLOW add.
    assert_eq!(allow, ["h", "bb1", "a", "r", "o"]);
    // exp and reduce_sum are denied, and what they reach through infer and clear ops that
    // lead to an infer or deny op: the log, its broadcast and the final sub.
    assert_eq!(deny, ["e", "s", "ls", "lsb", "y"]);
}

#[test]
fn deny_reaches_forward_through_infer_and_clear_but_not_past_the_last_infer() {
    // TF's comment: deny -> infer -> clear -> infer -> clear -> allow -> infer becomes
    // deny -> deny -> deny -> deny -> clear -> allow -> infer; pass 4 then paints the clear
    // op before the allow op ALLOW.
    let text = "
func @f(%x: f32[4,4], %w: f32[4,4]) -> f32[4,4] {
  %e = exp %x : f32[4,4]
  %a = add %e, %e : f32[4,4]
  %n = neg %a : f32[4,4]
  %m = mul %n, %n : f32[4,4]
  %t = transpose %m, perm=[1,0] : f32[4,4]
  %d = dot_general %t, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %s = sub %d, %d : f32[4,4]
  return %s
}";
    let (allow, deny) = painted(text, &AmpLists::defaults());
    assert_eq!(deny, ["e", "a", "n", "m"]);
    assert_eq!(allow, ["t", "d"]);
}

#[test]
fn infer_ops_turn_allow_only_between_allow_ops() {
    let text = "
func @f(%x: f32[4,4], %w: f32[4,4]) -> f32[4,4] {
  %d1 = dot_general %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %t = tanh %d1 : f32[4,4]
  %d2 = dot_general %t, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %u = tanh %d2 : f32[4,4]
  %v = sin %u : f32[4,4]
  return %v
}";
    let (allow, deny) = painted(text, &AmpLists::defaults());
    assert_eq!(allow, ["d1", "t", "d2"], "the last tanh feeds no allow op");
    assert!(deny.is_empty());
}

#[test]
fn clear_ops_join_allow_ops_either_way_but_never_through_other_ops() {
    let text = "
func @f(%x: f32[4,4], %w: f32[4,4]) -> f32[16] {
  %t = transpose %x, perm=[1,0] : f32[4,4]
  %d = dot_general %t, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %r = reshape %d : f32[16]
  %n = neg %r : f32[16]
  %c = cos %n : f32[16]
  %a = abs %c : f32[16]
  return %a
}";
    let (allow, _) = painted(text, &AmpLists::defaults());
    assert_eq!(
        allow,
        ["t", "d", "r", "n"],
        "cos is on no list: abs stays f32"
    );
}

#[test]
fn a_convert_to_f32_used_only_by_allow_ops_converts_to_the_target_directly() {
    let text = "
func @f(%i: i32[4,4], %w: f32[4,4]) -> (f32[4,4], f32[4,4]) {
  %c = convert %i : f32[4,4]
  %d = dot_general %c, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %k = convert %i : f32[4,4]
  %e = dot_general %k, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  return %d, %k
}";
    let (allow, _) = painted(text, &AmpLists::defaults());
    assert_eq!(
        allow,
        ["c", "d", "e"],
        "%k is also returned, so it stays f32"
    );
}

#[test]
fn ops_that_are_not_all_f32_are_skipped_with_a_reason() {
    let text = "
func @f(%x: f64[4,4], %w: f64[4,4]) -> f64[4,4] {
  %d = dot_general %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f64[4,4]
  return %d
}";
    let f = parse_func(text, "t.kir").unwrap();
    let p = paint(&f, &AmpLists::defaults());
    assert!(!p.allow.contains(&true));
    assert_eq!(p.log.len(), 1);
    assert!(p.log[0]
        .1
        .starts_with("Skipping dot_general node %d because it cannot run"));
}

#[test]
fn the_lists_steer_the_colouring() {
    let text = "
func @f(%x: f32[4,4], %w: f32[4,4]) -> f32[4,4] {
  %e = exp %x : f32[4,4]
  %d = dot_general %e, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  %s = sin %d : f32[4,4]
  %d2 = dot_general %s, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,4]
  return %d2
}";
    let (allow, deny) = painted(text, &AmpLists::defaults());
    assert_eq!(
        (allow, deny),
        (vec!["d".into(), "d2".into()], vec!["e".to_string()])
    );

    let mut mp = MixedPrecision::default();
    mp.allow.remove = vec!["dot_general".into()];
    let (allow, _) = painted(text, &AmpLists::from_settings(&mp).unwrap());
    assert!(allow.is_empty());

    let mut mp = MixedPrecision::default();
    mp.allow.add = vec!["exp".into()];
    mp.clear.add = vec!["sin".into()];
    let (allow, _) = painted(text, &AmpLists::from_settings(&mp).unwrap());
    assert_eq!(allow, ["e", "d", "s", "d2"]);

    let mut mp = MixedPrecision::default();
    mp.infer.add = vec!["sin".into()];
    mp.deny.add = vec!["dot_general".into()];
    let (allow, deny) = painted(text, &AmpLists::from_settings(&mp).unwrap());
    // An op on both the allow and deny lists is painted both, as in TF, and the rewrite
    // converts it; the infer op between the two dots is denied.
    assert_eq!(allow, ["d", "d2"]);
    assert_eq!(deny, ["e", "d", "s", "d2"]);
}

#[test]
fn decisions_are_logged_as_tf_logs_them() {
    let f = parse_func(MLP, "t.kir").unwrap();
    let p = paint(&f, &AmpLists::defaults());
    let first = &p.log[0];
    assert_eq!(
        (first.0, first.1.as_str()),
        (
            2,
            "Painting dot_general node %h ALLOW because its op dot_general is on the allowlist"
        )
    );
    assert!(p.log.iter().any(|(_, l)| l == "Painting exp node %e DENY"));
    assert!(p
        .log
        .iter()
        .any(|(_, l)| l == "Painting broadcast_in_dim node %bb1 ALLOW"));
}
