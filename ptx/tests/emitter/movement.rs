//! The data-movement ops lowered as index maps — `reverse`, the general `pad`, and the
//! ones whose positions are run-time data (`gather`, `dynamic_slice`,
//! `dynamic_update_slice`: a clamped index load inside the address; `scatter`: each result
//! element walking the index vectors in order, no atomics) — emitted as PTX and
//! simulated, bit for bit against the interpreter, with indices in range, out of range,
//! negative and at the `i32` extremes.

use crate::common::programs::{cluster, random_tensor};
use crate::common::Rng;
use crate::{check_all, check_inputs};
use kiln_ir::{Buffer, Tensor};

/// The programs (also assembled by `assemble.rs`).
pub fn movement_cases() -> Vec<(String, String)> {
    let cases = [
        ("reverse", "func @f(%x: f32[5,7]) -> f32[5,7] {\n  %r = reverse %x, dims=[0,1] : f32[5,7]\n  %z = exp %r : f32[5,7]\n  return %z\n}"),
        ("reverse i64 one dim", "func @f(%x: i64[3,9]) -> i64[3,9] {\n  %r = reverse %x, dims=[1] : i64[3,9]\n  return %r\n}"),
        ("interior pad", "func @f(%x: f32[4,5], %v: f32[]) -> f32[6,10] {\n  %p = pad %x, %v, low=[1,-1], high=[-2,2], interior=[1,1] : f32[6,10]\n  return %p\n}"),
        ("interior pad into a sum", "func @f(%x: f64[3,4], %v: f64[]) -> f64[9] {\n  %p = pad %x, %v, low=[2,0], high=[2,1], interior=[2,2] : f64[11,11]\n  %s = reduce_sum %p, axes=[0] : f64[11]\n  %t = slice %s, start=[1], limit=[10], stride=[1] : f64[9]\n  return %t\n}"),
        ("dynamic_slice", "func @f(%x: f32[8,6], %i: i32[], %j: i64[]) -> f32[3,4] {\n  %y = dynamic_slice %x, %i, %j, sizes=[3,4] : f32[3,4]\n  return %y\n}"),
        ("dynamic_update_slice", "func @f(%x: f32[6,7], %u: f32[2,3], %i: i32[], %j: u32[]) -> f32[6,7] {\n  %y = dynamic_update_slice %x, %u, %i, %j : f32[6,7]\n  return %y\n}"),
        ("embedding lookup", "func @f(%t: f32[10,33], %i: i32[3,4]) -> f32[3,4,33] {\n  %y = gather %t, %i, offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=2, slice_sizes=[1,33] : f32[3,4,33]\n  return %y\n}"),
        ("embedding layer norm", "func @f(%t: f32[10,40], %i: i64[6]) -> f32[6,40] {\n  %e = gather %t, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1,40] : f32[6,40]\n  %s = reduce_sum %e, axes=[1] : f32[6]\n  %n = constant 40.0 : f32[6]\n  %m = div %s, %n : f32[6]\n  %mb = broadcast_in_dim %m, dims=[0] : f32[6,40]\n  %d = sub %e, %mb : f32[6,40]\n  %d2 = mul %d, %d : f32[6,40]\n  %v = reduce_sum %d2, axes=[1] : f32[6]\n  %w = div %v, %n : f32[6]\n  %r = rsqrt %w : f32[6]\n  %rb = broadcast_in_dim %r, dims=[0] : f32[6,40]\n  %y = mul %d, %rb : f32[6,40]\n  return %y\n}"),
        ("gather two-entry index vectors", "func @f(%a: f32[7,8,3], %i: u32[5,2]) -> f32[5,2,3,3] {\n  %y = gather %a, %i, offset_dims=[1,2,3], collapsed_slice_dims=[], start_index_map=[1,0], index_vector_dim=1, slice_sizes=[2,3,3] : f32[5,2,3,3]\n  return %y\n}"),
        ("scatter-add embedding gradient", "func @f(%t: f32[6,9], %i: i32[4,3], %u: f32[4,3,9]) -> f32[6,9] {\n  %y = scatter %t, %i, %u, update_window_dims=[2], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=2, combine=add : f32[6,9]\n  return %y\n}"),
        ("scatter max two-entry windows", "func @f(%a: f64[7,5], %i: u32[3,2], %u: f64[3,2,3]) -> f64[7,5] {\n  %y = scatter %a, %i, %u, update_window_dims=[1,2], inserted_window_dims=[], scatter_dims_to_operand_dims=[1,0], index_vector_dim=1, combine=max : f64[7,5]\n  return %y\n}"),
        ("scatter replace batched", "func @f(%a: i32[4,10], %i: i64[4,5,1], %u: i32[4,5]) -> i32[4,10] {\n  %y = scatter %a, %i, %u, update_window_dims=[], inserted_window_dims=[1], scatter_dims_to_operand_dims=[1], index_vector_dim=2, input_batching_dims=[0], scatter_indices_batching_dims=[0], combine=replace : i32[4,10]\n  return %y\n}"),
        ("gather computed indices", "func @f(%t: f32[9,4], %i: i32[5]) -> f32[5,4] {\n  %one = constant 1 : i32[5]\n  %j = add %i, %one : i32[5]\n  %y = gather %t, %j, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1,4] : f32[5,4]\n  return %y\n}"),
    ];
    cases
        .iter()
        .map(|(l, s)| (l.to_string(), s.to_string()))
        .collect()
}

#[test]
fn movement_index_maps_match_the_interpreter_bit_for_bit() {
    // Random inputs: indices are mostly small values beyond the dimensions, clamped.
    let cases = movement_cases();
    let n = cases.len();
    check_all(&cases, n);
}

#[test]
fn gathers_match_the_interpreter_with_every_kind_of_index() {
    let mut r = Rng(0x38);
    for (label, src) in movement_cases() {
        let c = cluster(&src).expect("valid");
        for round in 0..3 {
            let inputs: Vec<Tensor> = c
                .body
                .param_types()
                .iter()
                .map(|t| {
                    let n = t.num_elements();
                    let mut index = || match r.below(6) {
                        0 => [i32::MIN as i64, i32::MAX as i64, -1, -4][r.below(4)],
                        _ => r.below(11) as i64,
                    };
                    let data = match t.dtype {
                        kiln_ir::DType::I32 => {
                            Buffer::I32((0..n).map(|_| index() as i32).collect())
                        }
                        kiln_ir::DType::I64 => Buffer::I64((0..n).map(|_| index()).collect()),
                        kiln_ir::DType::U32 => {
                            Buffer::U32((0..n).map(|_| index() as u32).collect())
                        }
                        _ => return random_tensor(t, &mut r),
                    };
                    Tensor::new(t.shape.clone(), data).expect("sizes match")
                })
                .collect();
            let label = format!("{label} #{round}");
            assert_eq!(check_inputs(&label, &c, &inputs), Ok(true), "{label}");
        }
    }
}
