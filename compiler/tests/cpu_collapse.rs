//! Programs whose kernels share leading dimensions, reached only through their row-major
//! position, loop over that position (`kernel::collapse_leading_dims`): a rank-3 or rank-4
//! softmax or layer norm runs row by row like a matrix one, and a pointwise kernel over a
//! narrow last dimension runs as one long vector loop. The compiled bits must stay the
//! interpreter's.

mod common;
use common::*;
use kiln_compiler::kernel::row_fusion;
use kiln_compiler::lower::lower_cluster;

fn check(src: &str, seed: u64) {
    let c = cluster(src);
    check_cluster(&c, seed);
    check_cluster_finite(&c, seed);
}

/// The kernels' spaces after lowering.
fn spaces(src: &str) -> Vec<Vec<usize>> {
    let p = lower_cluster(&cluster(src)).expect("lowers");
    p.kernels.iter().map(|k| k.space.clone()).collect()
}

#[test]
fn layer_norm_over_the_last_of_four_axes_is_row_fused() {
    let src = "func @f(%x: f32[2,3,7,300], %g: f32[300]) -> f32[2,3,7,300] {
  %s = reduce_sum %x, axes=[3] : f32[2,3,7]
  %n = constant 300.0 : f32[2,3,7]
  %mean = div %s, %n : f32[2,3,7]
  %mb = broadcast_in_dim %mean, dims=[0,1,2] : f32[2,3,7,300]
  %d = sub %x, %mb : f32[2,3,7,300]
  %d2 = mul %d, %d : f32[2,3,7,300]
  %ss = reduce_sum %d2, axes=[3] : f32[2,3,7]
  %var = div %ss, %n : f32[2,3,7]
  %eps = constant 1e-5 : f32[2,3,7]
  %ve = add %var, %eps : f32[2,3,7]
  %r = rsqrt %ve : f32[2,3,7]
  %rb = broadcast_in_dim %r, dims=[0,1,2] : f32[2,3,7,300]
  %y0 = mul %d, %rb : f32[2,3,7,300]
  %gb = broadcast_in_dim %g, dims=[3] : f32[2,3,7,300]
  %y = mul %y0, %gb : f32[2,3,7,300]
  return %y
}";
    let p = lower_cluster(&cluster(src)).expect("lowers");
    assert_eq!(row_fusion(&p), Some(42));
    check(src, 1);
}

#[test]
fn pointwise_over_a_narrow_last_axis_is_one_loop() {
    let src = "func @f(%x: f32[1001,3], %y: f32[1001,3]) -> f32[1001,3] {
  %a = mul %x, %y : f32[1001,3]
  %t = tanh %a : f32[1001,3]
  %z = add %t, %x : f32[1001,3]
  return %z
}";
    assert_eq!(spaces(src), vec![vec![3003]]);
    check(src, 2);
}

#[test]
fn only_the_collapsible_part_of_the_prefix_collapses() {
    // The bias varies along the third axis only: the first two collapse, the third stays.
    let src = "func @f(%x: f64[3,4,5,6], %b: f64[5]) -> f64[3,4,5,6] {
  %bb = broadcast_in_dim %b, dims=[2] : f64[3,4,5,6]
  %y = add %x, %bb : f64[3,4,5,6]
  %e = exp %y : f64[3,4,5,6]
  return %e
}";
    assert_eq!(spaces(src), vec![vec![12, 5, 6]]);
    check(src, 3);
}

#[test]
fn reductions_over_middle_axes_and_random_bits() {
    // The sum over axis 2 keeps [2,3,4] (collapsed to 24 points with a strided sequence);
    // the random bits index the whole collapsed space.
    let src = "func @f(%x: f32[2,3,50,4], %s: i64[2]) -> (f32[2,3,4], f32[2,3,4]) {
  %r = reduce_sum %x, axes=[2] : f32[2,3,4]
  %u = random_uniform %s, alg=philox : f32[2,3,4]
  %y = mul %r, %u : f32[2,3,4]
  return %r, %y
}";
    check(src, 4);
}

#[test]
fn narrow_kernels_with_broadcast_and_transposed_reads() {
    // The CPU loops over the points of these kernels in one dimension (their last
    // dimensions are narrower than a vector, or narrow with math): the bias and the
    // transposed operand are gathered per lane through `i0 / stride % extent`.
    let src =
        "func @f(%x: f32[1001,3], %b: f32[3], %t: f32[3,1001]) -> (f32[1001,3], f32[1001,3]) {
  %bb = broadcast_in_dim %b, dims=[1] : f32[1001,3]
  %a = add %x, %bb : f32[1001,3]
  %th = tanh %a : f32[1001,3]
  %tt = transpose %t, perm=[1,0] : f32[1001,3]
  %y = mul %th, %tt : f32[1001,3]
  %z = max %a, %tt : f32[1001,3]
  return %y, %z
}";
    check(src, 5);
    // Seven columns with `exp`, f64 and i32 operands, and an iota along the columns.
    let src = "func @f(%x: f64[333,7], %b: f64[7], %k: i32[333,7]) -> (f64[333,7], i32[333,7]) {
  %bb = broadcast_in_dim %b, dims=[1] : f64[333,7]
  %a = sub %x, %bb : f64[333,7]
  %e = exp %a : f64[333,7]
  %i = iota dim=1 : i32[333,7]
  %j = mul %k, %i : i32[333,7]
  return %e, %j
}";
    check(src, 6);
}

#[test]
fn narrow_kernels_with_random_bits() {
    // Dropout over a narrow last dimension: the random index is the flat position.
    let src = "func @f(%x: f32[513,3], %s: i64[2]) -> f32[513,3] {
  %u = random_uniform %s, alg=threefry : f32[513,3]
  %p = constant 0.5 : f32[513,3]
  %keep = compare %u, %p, dir=ge : bool[513,3]
  %z = constant 0.0 : f32[513,3]
  %e = exp %x : f32[513,3]
  %y = select %keep, %e, %z : f32[513,3]
  return %y
}";
    check(src, 7);
}
