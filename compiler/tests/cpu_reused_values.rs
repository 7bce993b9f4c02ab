//! Expensive values that broadcasts reuse are computed once into scratch buffers (batch
//! norm's mean and `rsqrt(var + eps)` per feature, in the reduction kernels' epilogues;
//! parameter math in a kernel of its own), not once per element of their readers. The
//! same scalar operations run on the same values, so results keep the interpreter's bits.

mod common;
use common::*;
use kiln_compiler::lower::lower_cluster;

fn check(src: &str, seed: u64) {
    let c = cluster(src);
    check_cluster(&c, seed);
    check_cluster_finite(&c, seed);
}

/// How many kernels the cluster lowers to, and how many scratch buffers they use.
fn shape_of(src: &str) -> (usize, usize) {
    let p = lower_cluster(&cluster(src)).expect("lowers");
    (p.kernels.len(), p.temps.len())
}

#[test]
fn batch_norm_statistics_once_per_feature() {
    // Two reductions whose epilogues store the mean and rsqrt(var + eps), and the output.
    assert_eq!(shape_of(BATCH_NORM), (3, 2));
    check(BATCH_NORM, 1);
}

#[test]
fn inference_batch_norm_parameter_math() {
    let src = "func @f(%x: f64[50,24], %var: f64[24], %g: f64[24], %m: f64[24], %b: f64[24]) -> f64[50,24] {
  %eps = constant 1e-3 : f64[24]
  %ve = add %var, %eps : f64[24]
  %r = rsqrt %ve : f64[24]
  %scale = mul %r, %g : f64[24]
  %ms = mul %m, %scale : f64[24]
  %shift = sub %b, %ms : f64[24]
  %sb = broadcast_in_dim %scale, dims=[1] : f64[50,24]
  %hb = broadcast_in_dim %shift, dims=[1] : f64[50,24]
  %xs = mul %x, %sb : f64[50,24]
  %y = add %xs, %hb : f64[50,24]
  return %y
}";
    // The scale in a kernel over the 24 features, then the output kernel.
    assert_eq!(shape_of(src), (2, 1));
    check(src, 2);
}

#[test]
fn layer_norm_rows_keep_their_fusion() {
    // Each row's `rsqrt(var + eps)` is reused along the row: computed in the variance
    // kernel's epilogue, and the program still runs row by row.
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/layernorm.kir"
    ))
    .expect("examples/layernorm.kir");
    let p = lower_cluster(&cluster(&src)).expect("lowers");
    assert!(
        kiln_compiler::kernel::row_fusion(&p).is_some(),
        "{}",
        kiln_compiler::kernel::print_program(&p)
    );
    check(&src, 3);
}

#[test]
fn nested_reused_values_and_an_output() {
    // `a` is reused and is an output; `b = exp(a) * 2` reads it and is reused too; the
    // integer quotient `q` is reused along the other axis.
    let src =
        "func @f(%x: f32[40,9], %k: i32[40], %x2: i32[40,9]) -> (f32[9], f32[40,9], i32[40,9]) {
  %s = reduce_sum %x, axes=[0] : f32[9]
  %n = constant 40.0 : f32[9]
  %a = div %s, %n : f32[9]
  %ab = broadcast_in_dim %a, dims=[1] : f32[40,9]
  %e = exp %a : f32[9]
  %two = constant 2.0 : f32[9]
  %b = mul %e, %two : f32[9]
  %bb = broadcast_in_dim %b, dims=[1] : f32[40,9]
  %u = sub %x, %ab : f32[40,9]
  %y = mul %u, %bb : f32[40,9]
  %three = constant 3 : i32[40]
  %q = div %k, %three : i32[40]
  %qb = broadcast_in_dim %q, dims=[0] : i32[40,9]
  %z = add %x2, %qb : i32[40,9]
  return %a, %y, %z
}";
    check(src, 4);
}

#[test]
fn softmax_scaled_per_column_stays_row_fused() {
    let src = "func @f(%x: f32[64,40], %t: f32[40]) -> f32[64,40] {
  %m = reduce_max %x, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,40]
  %d = sub %x, %mb : f32[64,40]
  %e = exp %d : f32[64,40]
  %s = reduce_sum %e, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,40]
  %y = div %e, %sb : f32[64,40]
  %w = exp %t : f32[40]
  %wb = broadcast_in_dim %w, dims=[1] : f32[64,40]
  %z = mul %y, %wb : f32[64,40]
  return %z
}";
    let p = lower_cluster(&cluster(src)).expect("lowers");
    assert!(kiln_compiler::kernel::row_fusion(&p).is_some());
    check(src, 5);
}
