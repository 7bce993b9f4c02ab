//! The windowed ops lowered as unrolled folds — `reduce_window` (max and average pooling
//! with padding, strides and dilations, a cumulative sum, integer and bool windows) and
//! `select_and_scatter` (the max-pool gradient) — emitted as PTX and simulated, bit for
//! bit against the interpreter.

use crate::check_all;

/// The programs (also assembled by `assemble.rs`).
pub fn window_cases() -> Vec<(String, String)> {
    let cases = [
        ("max pool same padding", "func @f(%x: f32[2,7,7,3]) -> f32[2,4,4,3] {\n  %i = constant -inf : f32[]\n  %y = reduce_window %x, %i, kind=max, size=[1,3,3,1], stride=[1,2,2,1], low=[0,1,1,0], high=[0,1,1,0] : f32[2,4,4,3]\n  return %y\n}"),
        ("avg pool fused divide", "func @f(%x: f32[5,6]) -> f32[3,3] {\n  %z = constant 0.0 : f32[]\n  %s = reduce_window %x, %z, kind=sum, size=[2,2], stride=[2,2], high=[1,0] : f32[3,3]\n  %four = constant 4.0 : f32[3,3]\n  %a = div %s, %four : f32[3,3]\n  return %a\n}"),
        ("dilated window f64 min", "func @f(%x: f64[9,5]) -> f64[7,8] {\n  %i = constant inf : f64[]\n  %y = reduce_window %x, %i, kind=min, size=[2,2], stride=[1,1], low=[-1,1], high=[2,0], lhs_dilate=[1,2], rhs_dilate=[3,2] : f64[7,8]\n  return %y\n}"),
        ("cumulative sum", "func @f(%x: f32[3,9]) -> f32[3,9] {\n  %z = constant -0.0 : f32[]\n  %y = reduce_window %x, %z, kind=sum, size=[1,9], low=[0,8] : f32[3,9]\n  return %y\n}"),
        ("integer product window", "func @f(%x: i32[8]) -> i32[4] {\n  %i = constant 1 : i32[]\n  %y = reduce_window %x, %i, kind=prod, size=[3], stride=[2], low=[1] : i32[4]\n  return %y\n}"),
        ("bool any window", "func @f(%x: bool[6,4]) -> bool[5,4] {\n  %i = constant false : bool[]\n  %y = reduce_window %x, %i, kind=max, size=[2,1] : bool[5,4]\n  return %y\n}"),
        ("max pool gradient", "func @f(%x: f32[7,7], %s: f32[3,3]) -> f32[7,7] {\n  %z = constant 0.0 : f32[]\n  %y = select_and_scatter %x, %s, %z, select=ge, scatter=sum, size=[3,3], stride=[2,2] : f32[7,7]\n  return %y\n}"),
        ("max pool gradient padded", "func @f(%x: f32[2,5,5,2], %s: f32[2,3,3,2]) -> f32[2,5,5,2] {\n  %z = constant 0.0 : f32[]\n  %y = select_and_scatter %x, %s, %z, select=ge, scatter=sum, size=[1,2,2,1], stride=[1,2,2,1], high=[0,1,1,0] : f32[2,5,5,2]\n  return %y\n}"),
    ];
    cases
        .iter()
        .map(|(l, s)| (l.to_string(), s.to_string()))
        .collect()
}

#[test]
fn window_folds_match_the_interpreter_bit_for_bit() {
    let cases = window_cases();
    let n = cases.len();
    check_all(&cases, n);
}
