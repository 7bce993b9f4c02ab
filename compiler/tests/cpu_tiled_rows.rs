//! Pointwise kernels over narrow rows (a last dimension under 16 that fills no whole
//! vector, no transcendental math) loop over groups of rows on the CPU, with each operand
//! that depends on the column alone read from a tile of repeated copies
//! (`kernel::tile_rows`). The compiled bits must stay the interpreter's, and the compiled
//! program's text shows which kernels were regrouped.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};
use kiln_compiler::kernel::print_program;

fn check(src: &str, seed: u64) {
    let c = cluster(src);
    check_cluster(&c, seed);
    check_cluster_finite(&c, seed);
}

/// The kernel text the CPU compiles for `src` (after its scheduling steps).
fn compiled_text(src: &str) -> String {
    let opts = CpuOptions {
        threads: 2,
        ..CpuOptions::default()
    };
    let exe = compile_cluster(&cluster(src), &opts).expect("compiles");
    print_program(exe.program())
}

#[test]
fn a_bias_over_five_columns_is_read_from_a_tile() {
    let src = "func @f(%x: f32[64,5], %b: f32[5]) -> f32[64,5] {
  %bb = broadcast_in_dim %b, dims=[1] : f32[64,5]
  %a = add %x, %bb : f32[64,5]
  %z = constant 0.0 : f32[64,5]
  %r = max %a, %z : f32[64,5]
  %y = mul %r, %x : f32[64,5]
  return %y
}";
    let text = compiled_text(src);
    // 16 rows of 5 per group: 80 elements, whole vectors.
    assert!(text.contains("kernel @k0_tile0 space=[80]"), "{text}");
    assert!(text.contains("kernel @k0 space=[4,80]"), "{text}");
    check(src, 1);
}

#[test]
fn two_views_of_one_bias_make_two_tiles() {
    // f64, ten columns: two slices of one parameter vector (every other element from 0 and
    // from 1) are two periodic reads of one buffer.
    let src = "func @f(%x: f64[40,10], %b: f64[20]) -> f64[40,10] {
  %b0 = slice %b, start=[0], limit=[20], stride=[2] : f64[10]
  %b1 = slice %b, start=[1], limit=[20], stride=[2] : f64[10]
  %bb = broadcast_in_dim %b0, dims=[1] : f64[40,10]
  %rb = broadcast_in_dim %b1, dims=[1] : f64[40,10]
  %a = add %x, %bb : f64[40,10]
  %y = sub %a, %rb : f64[40,10]
  return %y
}";
    let text = compiled_text(src);
    assert!(
        text.contains("k0_tile0") && text.contains("k0_tile1"),
        "{text}"
    );
    assert!(text.contains("kernel @k0 space=[5,80]"), "{text}");
    check(src, 2);
}

#[test]
fn integer_and_boolean_rows_and_random_bits() {
    let src = "func @f(%k: i32[48,6], %c: i32[6], %s: i64[2]) -> (i32[48,6], f32[48,6]) {
  %cb = broadcast_in_dim %c, dims=[1] : i32[48,6]
  %m = mul %k, %cb : i32[48,6]
  %g = compare %k, %cb, dir=gt : bool[48,6]
  %y = select %g, %m, %k : i32[48,6]
  %u = random_uniform %s, alg=philox : f32[48,6]
  %h = constant 0.5 : f32[48,6]
  %keep = compare %u, %h, dir=ge : bool[48,6]
  %z = constant 0.0 : f32[48,6]
  %d = select %keep, %u, %z : f32[48,6]
  return %y, %d
}";
    let text = compiled_text(src);
    assert!(text.contains("_tile0 space=["), "{text}");
    check(src, 3);
}

#[test]
fn a_tile_of_values_an_earlier_kernel_computed() {
    // Column sums (a column reduction into scratch), then every row divided by them: the
    // tile kernel reads the scratch after the reduction wrote it.
    let src = "func @f(%x: f32[96,7]) -> f32[96,7] {
  %s = reduce_sum %x, axes=[0] : f32[7]
  %sb = broadcast_in_dim %s, dims=[1] : f32[96,7]
  %y = div %x, %sb : f32[96,7]
  return %y
}";
    let text = compiled_text(src);
    let tile = text.find("_tile0").expect("a tile kernel");
    let reduction = text.find("reduce_sum").expect("the column sums");
    assert!(reduction < tile, "{text}");
    check(src, 4);
}

#[test]
fn gathered_operands_and_odd_row_counts_keep_their_rows() {
    // A per-row value broadcast along the columns is neither the position nor periodic.
    let src = "func @f(%x: f32[64,5], %r: f32[64]) -> f32[64,5] {
  %rb = broadcast_in_dim %r, dims=[0] : f32[64,5]
  %y = add %x, %rb : f32[64,5]
  return %y
}";
    let text = compiled_text(src);
    assert!(
        !text.contains("_tile") && text.contains("space=[64,5]"),
        "{text}"
    );
    check(src, 5);
    // 63 rows of 5: no group of whole vectors (a multiple of 4 rows) divides them.
    let src = "func @f(%x: f32[63,5], %b: f32[5]) -> f32[63,5] {
  %bb = broadcast_in_dim %b, dims=[1] : f32[63,5]
  %y = add %x, %bb : f32[63,5]
  return %y
}";
    let text = compiled_text(src);
    assert!(
        !text.contains("_tile") && text.contains("space=[63,5]"),
        "{text}"
    );
    check(src, 6);
}

#[test]
fn a_boolean_mask_over_the_columns() {
    // A tile of booleans (the mask's bytes repeated) selects per column.
    let src = "func @f(%x: f32[64,6], %m: bool[6]) -> f32[64,6] {
  %mb = broadcast_in_dim %m, dims=[1] : bool[64,6]
  %z = constant 0.0 : f32[64,6]
  %y = select %mb, %x, %z : f32[64,6]
  %w = mul %y, %x : f32[64,6]
  return %w
}";
    let text = compiled_text(src);
    assert!(
        text.contains("k0_tile0") && text.contains(": bool"),
        "{text}"
    );
    check(src, 7);
}
