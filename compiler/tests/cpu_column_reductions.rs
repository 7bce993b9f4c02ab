//! Reductions down columns (the sequence steps through memory with a stride, the kept
//! points sit side by side): the CPU backend computes a tile of points at once, one per
//! vector lane (`schedule::column_tile`). Each must still give the interpreter's bits at 1,
//! 2, 3 and 7 threads — across chunk boundaries (sequences longer than 4096), tile and row
//! boundaries, vector remainders, every dtype with a vector form and without one.

mod common;
use common::*;

fn check(src: &str, seed: u64) {
    let c = cluster(src);
    check_cluster(&c, seed);
    check_cluster_finite(&c, seed);
}

#[test]
fn sum_over_two_chunks_with_a_partial_vector() {
    // 5000 = one whole chunk and 904 elements; 37 points = 9 vectors and one point.
    check(
        "func @f(%x: f32[5000,37]) -> f32[37] {
  %s = reduce_sum %x, axes=[0] : f32[37]
  %c = constant 0.5 : f32[37]
  %y = mul %s, %c : f32[37]
  return %y
}",
        1,
    );
}

#[test]
fn max_and_min_down_the_middle_axis() {
    // Kept points [3, 6]: tiles end at each row of 6; 4100 = a chunk and 4 elements.
    check(
        "func @f(%x: f32[3,4100,6]) -> (f32[3,6], f32[3,6]) {
  %m = reduce_max %x, axes=[1] : f32[3,6]
  %n = reduce_min %x, axes=[1] : f32[3,6]
  return %m, %n
}",
        2,
    );
}

#[test]
fn tiles_cross_kept_rows() {
    // 300 points per kept row: a tile ends at the end of each of the 9 rows.
    check(
        "func @f(%x: f32[9,7,300]) -> f32[9,300] {
  %s = reduce_sum %x, axes=[1] : f32[9,300]
  return %s
}",
        3,
    );
}

#[test]
fn batch_norm_statistics() {
    // Layer norm over the batch axis: the mean feeds the variance's reduced value (a load
    // broadcast along the sequence); 130 points are tiles of 64, 64 and 2 (single points);
    // 300 rows are 37 blocks of 8 in flight and 4 more.
    check(BATCH_NORM, 4);
}

#[test]
fn f64_products_with_math_in_the_reduced_value() {
    // Two-lane vectors; the chunked path with three chunks. Factors near 1 keep the
    // product finite, so a wrong order shows in its last bits.
    check(
        "func @f(%x: f64[9000,9]) -> f64[9] {
  %e = tanh %x : f64[9000,9]
  %c = constant 0.001 : f64[9000,9]
  %m = mul %e, %c : f64[9000,9]
  %one = constant 1.0 : f64[9000,9]
  %a = add %m, %one : f64[9000,9]
  %p = reduce_prod %a, axes=[0] : f64[9]
  return %p
}",
        5,
    );
}

#[test]
fn integer_and_bool_reductions() {
    // i32 sums and products wrap; bool max / min are "any" / "all" (scalar lanes).
    check(
        "func @f(%x: i32[40,10], %y: f32[33,12], %z: f32[33,12]) -> (i32[10], i32[10], bool[12], bool[12]) {
  %s = reduce_sum %x, axes=[0] : i32[10]
  %p = reduce_prod %x, axes=[0] : i32[10]
  %c = compare %y, %z, dir=lt : bool[33,12]
  %any = reduce_max %c, axes=[0] : bool[12]
  %all = reduce_min %c, axes=[0] : bool[12]
  return %s, %p, %any, %all
}",
        6,
    );
}

#[test]
fn empty_and_single_element_columns() {
    check(
        "func @f(%x: f32[1,40], %y: f32[2,0,8]) -> (f32[40], f32[2,8]) {
  %s = reduce_sum %x, axes=[0] : f32[40]
  %m = reduce_max %y, axes=[1] : f32[2,8]
  return %s, %m
}",
        7,
    );
}

/// Whether the CPU compiles `src`'s one reduction kernel split across chunks (it then has a
/// `_partials` function).
fn split(src: &str) -> bool {
    let dir = std::env::temp_dir().join(format!(
        "kiln-colsplit-{}-{}",
        std::process::id(),
        src.len()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 2,
        dump_to: Some(dir.clone()),
        ..kiln_compiler::cpu::CpuOptions::default()
    };
    kiln_compiler::cpu::compile_cluster(&cluster(src), &opts).expect("compiles");
    let partials = dir.join("cluster_t.k0_partials.clif").exists();
    std::fs::remove_dir_all(&dir).ok();
    partials
}

#[test]
fn few_long_columns_split_and_eight_or_more_run_as_one_tile() {
    // 20000 rows: five chunks. Four columns are split across chunks; twelve (and ten, three
    // vectors of points or two and two single points) are one tile reading each row once.
    for (cols, splits) in [(4usize, true), (10, false), (12, false)] {
        let src = format!(
            "func @f(%x: f32[20000,{cols}]) -> f32[{cols}] {{
  %s = reduce_sum %x, axes=[0] : f32[{cols}]
  return %s
}}"
        );
        assert_eq!(split(&src), splits, "{cols} columns");
        check(&src, cols as u64);
    }
}
