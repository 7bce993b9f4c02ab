//! End-to-end smoke tests of the CPU backend on the benchmark workloads' shapes (small).

mod common;
use common::*;

#[test]
fn pointwise_chain_matches_interpreter() {
    let c = cluster(
        "func @f(%x: f32[7,37]) -> f32[7,37] {
  %a = constant 1.5 : f32[7,37]
  %b = constant 0.25 : f32[7,37]
  %h = constant 0.5 : f32[7,37]
  %m = mul %x, %a : f32[7,37]
  %s = add %m, %b : f32[7,37]
  %t = tanh %s : f32[7,37]
  %u = mul %t, %h : f32[7,37]
  %y = add %u, %x : f32[7,37]
  return %y
}",
    );
    check_cluster(&c, 1);
}

#[test]
fn softmax_rows_match_interpreter() {
    let c = cluster(
        "func @softmax(%x: f32[5,1000]) -> f32[5,1000] {
  %m  = reduce_max %x, axes=[1] : f32[5]
  %mb = broadcast_in_dim %m, dims=[0] : f32[5,1000]
  %d  = sub %x, %mb : f32[5,1000]
  %e  = exp %d : f32[5,1000]
  %s  = reduce_sum %e, axes=[1] : f32[5]
  %sb = broadcast_in_dim %s, dims=[0] : f32[5,1000]
  %y  = div %e, %sb : f32[5,1000]
  return %y
}",
    );
    check_cluster(&c, 2);
}
