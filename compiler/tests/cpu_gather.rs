//! The ops whose positions are run-time data — `gather` (embedding lookups, dynamic-slice
//! forms, the general form with batching dimensions), `dynamic_slice`,
//! `dynamic_update_slice` — compiled vs the interpreter bit for bit at 1, 2 and 7 threads,
//! over shapes with every dimension 1-9 and indices in range, out of range, negative and
//! at the integer extremes (clamped as XLA clamps starts).

mod common;
use common::*;
use kiln_ir::{Buffer, DType, Tensor};

fn dims(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn list(v: &[usize]) -> String {
    format!("[{}]", dims(v))
}

/// A random shape of rank 1-3, every dimension 1-9.
fn shape(r: &mut Rng) -> Vec<usize> {
    (0..1 + r.below(3)).map(|_| 1 + r.below(9)).collect()
}

/// An index for a dimension of `n` positions: mostly in range, else a little outside
/// (negative or past the end) or an extreme of `i32`.
fn index(r: &mut Rng, n: usize) -> i64 {
    match r.below(8) {
        0 => [i32::MIN as i64, i32::MAX as i64, -1][r.below(3)],
        1 | 2 => r.below(n + 7) as i64 - 3,
        _ => r.below(n) as i64,
    }
}

/// A tensor of `dt` (`i32`, `i64` or `u32`) holding `values` (a `u32` wraps negatives).
fn indices(dt: DType, shape: Vec<usize>, values: &[i64]) -> Tensor {
    let data = match dt {
        DType::I32 => Buffer::I32(values.iter().map(|&v| v as i32).collect()),
        DType::I64 => Buffer::I64(values.to_vec().into()),
        _ => Buffer::U32(values.iter().map(|&v| v as u32).collect()),
    };
    Tensor::new(shape, data).expect("sizes match")
}

const INDEX_DTYPES: [DType; 3] = [DType::I32, DType::I64, DType::U32];

#[test]
fn embedding_lookups_match_the_interpreter() {
    let mut r = Rng(0xe3b_0038);
    for case in 0..30 {
        let (v, d) = (1 + r.below(9), 1 + r.below(9));
        let batch: Vec<usize> = (0..1 + r.below(2)).map(|_| 1 + r.below(9)).collect();
        let it = INDEX_DTYPES[case % 3];
        let dt = ["f32", "i32", "f64"][case % 3];
        let b = batch.len();
        let src = format!(
            "func @f(%t: {dt}[{v},{d}], %i: {it}[{}]) -> {dt}[{},{d}] {{\n  %y = gather %t, %i, offset_dims=[{b}], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim={b}, slice_sizes=[1,{d}] : {dt}[{},{d}]\n  %z = add %y, %y : {dt}[{},{d}]\n  return %z\n}}",
            dims(&batch), dims(&batch), dims(&batch), dims(&batch),
        );
        let c = cluster(&src);
        let n: usize = batch.iter().product();
        let ids: Vec<i64> = (0..n).map(|_| index(&mut r, v)).collect();
        let table = random_tensor(&c.body.param_types()[0], &mut r);
        check_with_inputs(&c, &[table, indices(it, batch.clone(), &ids)]);
    }
}

#[test]
fn general_gathers_match_the_interpreter() {
    let mut r = Rng(0x9a7_0038);
    for case in 0..40 {
        let s = shape(&mut r);
        let rank = s.len();
        let sizes: Vec<usize> = s.iter().map(|&n| 1 + r.below(n)).collect();
        // Index-vector entries start a random set of dimensions, in a random order.
        let mut map: Vec<usize> = (0..rank).filter(|_| r.below(2) == 0).collect();
        if map.is_empty() {
            map.push(r.below(rank));
        }
        if map.len() > 1 && r.below(2) == 0 {
            map.reverse();
        }
        let collapsed: Vec<usize> = (0..rank)
            .filter(|&k| sizes[k] == 1 && r.below(2) == 0)
            .collect();
        let window: Vec<usize> = (0..rank).filter(|k| !collapsed.contains(k)).collect();
        // Indices: 0-2 batch dimensions, the index vector at a random position (or, for a
        // one-entry vector, possibly implicit after the last dimension).
        let mut ishape: Vec<usize> = (0..r.below(3)).map(|_| 1 + r.below(5)).collect();
        let ivd = if map.len() == 1 && r.below(2) == 0 {
            ishape.len()
        } else {
            let at = r.below(ishape.len() + 1);
            ishape.insert(at, map.len());
            at
        };
        let batch: Vec<usize> = (0..ishape.len()).filter(|&k| k != ivd).collect();
        let out_rank = window.len() + batch.len();
        // Offset dimensions: a random increasing choice of result positions.
        let mut offset_dims: Vec<usize> = (0..out_rank).collect();
        while offset_dims.len() > window.len() {
            offset_dims.remove(r.below(offset_dims.len()));
        }
        let (mut w, mut b) = (window.iter(), batch.iter());
        let out: Vec<usize> = (0..out_rank)
            .map(|i| match offset_dims.contains(&i) {
                true => sizes[*w.next().expect("window dim")],
                false => ishape[*b.next().expect("batch dim")],
            })
            .collect();
        let it = INDEX_DTYPES[case % 3];
        let src = format!(
            "func @f(%a: f32[{}], %i: {it}[{}]) -> f32[{}] {{\n  %y = gather %a, %i, offset_dims={}, collapsed_slice_dims={}, start_index_map={}, index_vector_dim={ivd}, slice_sizes={} : f32[{}]\n  return %y\n}}",
            dims(&s), dims(&ishape), dims(&out), list(&offset_dims), list(&collapsed), list(&map), list(&sizes), dims(&out),
        );
        let c = cluster(&src);
        // Entry j of every index vector aims at operand dimension map[j].
        let strides = kiln_ir::row_major_strides(&ishape);
        let n: usize = ishape.iter().product();
        let ids: Vec<i64> = (0..n)
            .map(|p| {
                let j = if ivd < ishape.len() {
                    p / strides[ivd] % ishape[ivd]
                } else {
                    0
                };
                index(&mut r, s[map[j]] - sizes[map[j]] + 1)
            })
            .collect();
        let a = random_tensor(&c.body.param_types()[0], &mut r);
        check_with_inputs(&c, &[a, indices(it, ishape.clone(), &ids)]);
    }
}

#[test]
fn batched_gather_takes_the_batch_coordinate() {
    // `jnp.take_along_axis`-like: operand dimension 0 paired with indices dimension 0.
    let src = "func @f(%a: f32[3,7,5], %i: i32[3,4,1]) -> f32[3,4,5] {
  %y = gather %a, %i, offset_dims=[2], collapsed_slice_dims=[1], start_index_map=[1], index_vector_dim=2, slice_sizes=[1,1,5], operand_batching_dims=[0], start_indices_batching_dims=[0] : f32[3,4,5]
  return %y
}";
    let c = cluster(src);
    let mut r = Rng(7);
    let ids: Vec<i64> = (0..12).map(|_| index(&mut r, 7)).collect();
    let a = random_tensor(&c.body.param_types()[0], &mut r);
    check_with_inputs(&c, &[a, indices(DType::I32, vec![3, 4, 1], &ids)]);
}

#[test]
fn dynamic_slices_match_the_interpreter() {
    let mut r = Rng(0xd5_0038);
    for case in 0..40 {
        let s = shape(&mut r);
        let sizes: Vec<usize> = s.iter().map(|&n| 1 + r.below(n)).collect();
        let it = INDEX_DTYPES[case % 3];
        let params: Vec<String> = (0..s.len()).map(|k| format!("%i{k}: {it}[]")).collect();
        let args: Vec<String> = (0..s.len()).map(|k| format!("%i{k}")).collect();
        let src = format!(
            "func @f(%a: f32[{}], {}) -> f32[{}] {{\n  %y = dynamic_slice %a, {}, sizes={} : f32[{}]\n  %z = mul %y, %y : f32[{}]\n  return %z\n}}",
            dims(&s), params.join(", "), dims(&sizes), args.join(", "), list(&sizes), dims(&sizes), dims(&sizes),
        );
        let c = cluster(&src);
        let mut inputs = vec![random_tensor(&c.body.param_types()[0], &mut r)];
        for k in 0..s.len() {
            inputs.push(indices(it, vec![], &[index(&mut r, s[k] - sizes[k] + 1)]));
        }
        check_with_inputs(&c, &inputs);
    }
}

#[test]
fn dynamic_update_slices_match_the_interpreter() {
    let mut r = Rng(0xd05_0038);
    for case in 0..40 {
        let s = shape(&mut r);
        let us: Vec<usize> = s.iter().map(|&n| 1 + r.below(n)).collect();
        let it = INDEX_DTYPES[case % 3];
        let dt = ["f32", "i64", "bool", "u32"][case % 4];
        let params: Vec<String> = (0..s.len()).map(|k| format!("%i{k}: {it}[]")).collect();
        let args: Vec<String> = (0..s.len()).map(|k| format!("%i{k}")).collect();
        let src = format!(
            "func @f(%a: {dt}[{}], %u: {dt}[{}], {}) -> {dt}[{}] {{\n  %y = dynamic_update_slice %a, %u, {} : {dt}[{}]\n  return %y\n}}",
            dims(&s), dims(&us), params.join(", "), dims(&s), args.join(", "), dims(&s),
        );
        let c = cluster(&src);
        let tys = c.body.param_types();
        let mut inputs = vec![
            random_tensor(&tys[0], &mut r),
            random_tensor(&tys[1], &mut r),
        ];
        for k in 0..s.len() {
            inputs.push(indices(it, vec![], &[index(&mut r, s[k] - us[k] + 1)]));
        }
        check_with_inputs(&c, &inputs);
    }
}

#[test]
fn computed_and_constant_indices_compile() {
    // Indices computed in the cluster are computed once into a scratch buffer; a constant
    // index vector is read in place, a splat one folded.
    let src = "func @f(%t: f32[9,4], %i: i32[5], %k: i32[]) -> (f32[5,4], f32[2,4]) {
  %one = constant 1 : i32[5]
  %j = add %i, %one : i32[5]
  %y = gather %t, %j, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1,4] : f32[5,4]
  %c = constant [3, -2] : i32[2]
  %z = gather %t, %c, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1,4] : f32[2,4]
  %two = constant 2 : i32[]
  %kk = mul %k, %two : i32[]
  %zero = constant 0 : i32[]
  %w = dynamic_slice %z, %kk, %zero, sizes=[2,4] : f32[2,4]
  return %y, %w
}";
    let c = cluster(src);
    let mut r = Rng(11);
    let t = random_tensor(&c.body.param_types()[0], &mut r);
    let ids = indices(DType::I32, vec![5], &[0, 8, -4, 100, 3]);
    check_with_inputs(&c, &[t, ids, indices(DType::I32, vec![], &[1])]);
}
