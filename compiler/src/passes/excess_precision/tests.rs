use super::*;
use kiln_flags::Flags;
use kiln_ir::{parse_func, print_func, verify_func};

fn options(on: bool) -> Options {
    Options::from_flags(&Flags {
        allow_excess_precision: on,
        ..Flags::default()
    })
}

/// The rewrite then `dce`, as the pipeline runs them; the printed result.
fn rewritten(src: &str) -> String {
    let mut f = parse_func(src, "t.kir").unwrap();
    assert!(run(&mut f, &options(true)).unwrap());
    assert!(verify_func(&f).is_empty(), "{}", print_func(&f));
    crate::passes::dce::run(&mut f, &options(true)).unwrap();
    print_func(&f)
}

/// Instructions of `text` (one per line) that are `convert`s to a 16-bit type.
fn roundings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("= convert ") && (l.contains(": f16[") || l.contains(": bf16[")))
        .collect()
}

const CHAIN: &str = "
func @f(%x: f16[4,8]) -> f16[4,8] {
  %c = constant 1.5 : f16[4,8]
  %m = mul %x, %c : f16[4,8]
  %t = tanh %m : f16[4,8]
  %a = add %t, %x : f16[4,8]
  return %a
}";

#[test]
fn off_by_default_and_when_unset() {
    let mut f = parse_func(CHAIN, "t.kir").unwrap();
    let before = print_func(&f);
    assert!(!Flags::default().allow_excess_precision);
    assert!(!run(&mut f, &options(false)).unwrap());
    assert_eq!(print_func(&f), before);
}

#[test]
fn a_pointwise_chain_computes_in_f32_and_rounds_once() {
    let out = rewritten(CHAIN);
    assert_eq!(
        roundings(&out),
        ["  %a_f16 = convert %a : f16[4,8]"],
        "{out}"
    );
    for op in ["mul", "tanh", "add"] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("= {op} ")))
            .unwrap();
        assert!(line.ends_with(": f32[4,8]"), "{line}");
    }
    assert!(out.contains("return %a_f16"), "{out}");
}

#[test]
fn every_16_bit_user_of_a_value_still_sees_it_rounded() {
    // %t feeds a product (which takes 16 bits) and a pointwise op (which takes f32).
    let out = rewritten(
        "
func @f(%x: bf16[4,4], %w: bf16[4,4]) -> (bf16[4,4], bf16[4,4]) {
  %t = tanh %x : bf16[4,4]
  %d = dot_general %t, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : bf16[4,4]
  %n = neg %t : bf16[4,4]
  return %d, %n
}",
    );
    assert!(out.contains("%t_bf16 = convert %t : bf16[4,4]"), "{out}");
    assert!(out.contains("dot_general %t_bf16, %w"), "{out}");
    assert!(out.contains("%n = neg %t : f32[4,4]"), "{out}");
}

#[test]
fn data_movement_and_reductions_carry_the_unrounded_values() {
    // Layer norm's mean: reduce, broadcast back, subtract; rounded only at the result.
    let out = rewritten(
        "
func @f(%x: f16[4,8]) -> f16[4,8] {
  %s = reduce_sum %x, axes=[1] : f16[4]
  %n = constant 0.125 : f16[4]
  %m = mul %s, %n : f16[4]
  %b = broadcast_in_dim %m, dims=[0] : f16[4,8]
  %d = sub %x, %b : f16[4,8]
  return %d
}",
    );
    assert_eq!(
        roundings(&out),
        ["  %d_f16 = convert %d : f16[4,8]"],
        "{out}"
    );
    assert!(
        out.contains("%b = broadcast_in_dim %m, dims=[0] : f32[4,8]"),
        "{out}"
    );
    assert!(
        out.contains("reduce_sum %x_f32, axes=[1] : f32[4]"),
        "{out}"
    );
}

#[test]
fn moves_of_rounded_values_stay_16_bit() {
    // Nothing computed: a transpose of a parameter has nothing unrounded to keep.
    let src = "
func @f(%x: f16[4,8]) -> f16[8,4] {
  %t = transpose %x, perm=[1,0] : f16[8,4]
  return %t
}";
    let mut f = parse_func(src, "t.kir").unwrap();
    let before = print_func(&f);
    run(&mut f, &options(true)).unwrap();
    assert_eq!(print_func(&f), before);
}

#[test]
fn a_round_trip_through_16_bits_is_dropped() {
    // AMP's casts: f32 -> f16 -> (pointwise) -> f32 keeps the f32 value throughout.
    let out = rewritten(
        "
func @f(%x: f32[4]) -> f32[4] {
  %h = convert %x : f16[4]
  %e = exp %h : f16[4]
  %y = convert %e : f32[4]
  return %y
}",
    );
    assert!(roundings(&out).is_empty(), "{out}");
    assert!(out.contains("%e = exp %x : f32[4]"), "{out}");
    assert!(out.contains("return %e"), "{out}");
}

#[test]
fn comparisons_and_selects_use_the_unrounded_values() {
    let out = rewritten(
        "
func @f(%x: f16[4], %y: f16[4]) -> f16[4] {
  %a = mul %x, %y : f16[4]
  %p = compare %a, %y, dir=gt : bool[4]
  %s = select %p, %a, %x : f16[4]
  return %s
}",
    );
    assert!(out.contains("compare %a, %y_f32, dir=gt"), "{out}");
    assert!(out.contains("%s = select %p, %a, %x_f32 : f32[4]"), "{out}");
    assert_eq!(roundings(&out), ["  %s_f16 = convert %s : f16[4]"], "{out}");
}

#[test]
fn loop_bodies_are_rewritten_on_their_own() {
    let src = "
func @f(%x: f16[4], %n: i32[]) -> f16[4] {
  %zero = constant 0 : i32[]
  %i1, %n1, %x1 = while %zero, %n, %x -> (i32[], i32[], f16[4])
    cond(%i: i32[], %n: i32[], %b: f16[4]) {
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %n: i32[], %b: f16[4]) {
      %e = exp %b : f16[4]
      %m = neg %e : f16[4]
      %one = constant 1 : i32[]
      %next = add %i, %one : i32[]
      yield %next, %n, %m
    }
  return %x1
}";
    let mut f = parse_func(src, "t.kir").unwrap();
    assert!(run(&mut f, &options(true)).unwrap());
    let out = print_func(&f);
    assert!(out.contains("%e = exp %b_f32 : f32[4]"), "{out}");
    assert!(out.contains("%m = neg %e : f32[4]"), "{out}");
    assert!(out.contains("yield %next, %n, %m_f16"), "{out}");
}
