//! The data-movement ops compiled as index maps — `reverse`, the general `pad` (interior
//! padding, negative edges) — compared with the interpreter bit for bit at 1, 2 and 7
//! threads, over random shapes with every dimension 1-9, alone and fused with consumers.

mod common;
use common::*;

/// A random shape of rank 1-3, every dimension 1-9.
fn shape(r: &mut Rng) -> Vec<usize> {
    (0..1 + r.below(3)).map(|_| 1 + r.below(9)).collect()
}

fn dims(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    )
}

#[test]
fn reverse_matches_the_interpreter_over_random_shapes() {
    let mut r = Rng(0x5eed_0038);
    for case in 0..40 {
        let s = shape(&mut r);
        let rev: Vec<usize> = (0..s.len()).filter(|_| r.below(2) == 0).collect();
        let dt = ["f32", "i32", "f64", "bool"][case % 4];
        let t = format!("{dt}[{}]", dims(&s));
        let src = format!(
            "func @f(%x: {t}) -> {t} {{\n  %y = reverse %x, dims={} : {t}\n  return %y\n}}",
            list(&rev)
        );
        check_cluster(&cluster(&src), case as u64);
    }
}

#[test]
fn reverse_fuses_with_its_consumer_and_producer() {
    // `exp(reverse(x)) + reverse(y)` along the rows of a [7,9]: one kernel, reversed loads.
    let src = "func @f(%x: f32[7,9], %y: f32[7,9]) -> f32[7,9] {
  %e = exp %x : f32[7,9]
  %a = reverse %e, dims=[1] : f32[7,9]
  %b = reverse %y, dims=[0,1] : f32[7,9]
  %z = add %a, %b : f32[7,9]
  return %z
}";
    let c = cluster(src);
    check_cluster(&c, 3);
    let p = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
    assert_eq!(
        p.kernels.len(),
        1,
        "{}",
        kiln_compiler::kernel::print_program(&p)
    );
}

#[test]
fn general_pad_matches_the_interpreter_over_random_shapes() {
    let mut r = Rng(0x9ad_0038);
    let mut checked = 0;
    while checked < 40 {
        let s = shape(&mut r);
        let low: Vec<i64> = s.iter().map(|_| r.below(7) as i64 - 3).collect();
        let high: Vec<i64> = s.iter().map(|_| r.below(7) as i64 - 3).collect();
        let interior: Vec<usize> = s.iter().map(|_| r.below(3)).collect();
        let out: Vec<i64> = (0..s.len())
            .map(|d| low[d] + high[d] + s[d] as i64 + (s[d] as i64 - 1) * interior[d] as i64)
            .collect();
        if out.iter().any(|&n| n < 1) {
            continue;
        }
        let dt = ["f32", "i64", "u32", "bool"][checked % 4];
        let o = dims(&out.iter().map(|&n| n as usize).collect::<Vec<_>>());
        let src = format!(
            "func @f(%x: {dt}[{}], %v: {dt}[]) -> {dt}[{o}] {{\n  %y = pad %x, %v, low={}, high={}, interior={} : {dt}[{o}]\n  return %y\n}}",
            dims(&s),
            list(&low),
            list(&high),
            list(&interior),
        );
        check_cluster(&cluster(&src), checked as u64);
        checked += 1;
    }
}

#[test]
fn interior_pad_fuses_into_a_reduction() {
    // A strided transposed-convolution input: interior padding, then a row sum.
    let src = "func @f(%x: f32[5,6], %v: f32[]) -> f32[9] {
  %p = pad %x, %v, low=[1,-1], high=[-1,2], interior=[1,2] : f32[9,17]
  %s = reduce_sum %p, axes=[1] : f32[9]
  return %s
}";
    let c = cluster(src);
    check_cluster(&c, 5);
    let p = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
    assert_eq!(
        p.kernels.len(),
        1,
        "{}",
        kiln_compiler::kernel::print_program(&p)
    );
}
