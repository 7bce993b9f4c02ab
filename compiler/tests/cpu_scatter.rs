//! `scatter` compiled (each result element gathers the updates aimed at it, in the updates'
//! row-major order) vs the interpreter bit for bit at 1, 2 and 7 threads: embedding
//! gradients with duplicate ids, general forms over shapes with dimensions 1-9, every
//! combiner, out-of-range and negative indices (the whole window skipped, as XLA does),
//! and the forms that stay on the interpreter.

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

/// An index for a window of `size` in a dimension of `n`: mostly in range, else out of
/// range (negative, past the end, or an `i32` extreme).
fn index(r: &mut Rng, n: usize, size: usize) -> i64 {
    match r.below(6) {
        0 => [i32::MIN as i64, i32::MAX as i64, -1][r.below(3)],
        1 => (n - size + 1 + r.below(3)) as i64,
        _ => r.below(n - size + 1) as i64,
    }
}

fn indices(dt: DType, shape: Vec<usize>, values: &[i64]) -> Tensor {
    let data = match dt {
        DType::I32 => Buffer::I32(values.iter().map(|&v| v as i32).collect()),
        DType::I64 => Buffer::I64(values.to_vec().into()),
        _ => Buffer::U32(values.iter().map(|&v| v as u32).collect()),
    };
    Tensor::new(shape, data).expect("sizes match")
}

#[test]
fn embedding_gradients_sum_duplicates_in_order() {
    let mut r = Rng(0x5ca_0038);
    for case in 0..30 {
        let (v, d) = (1 + r.below(9), 1 + r.below(9));
        let batch: Vec<usize> = (0..1 + r.below(2)).map(|_| 1 + r.below(7)).collect();
        let b = batch.len();
        let it = [DType::I32, DType::I64, DType::U32][case % 3];
        let src = format!(
            "func @f(%t: f32[{v},{d}], %i: {it}[{}], %u: f32[{},{d}]) -> f32[{v},{d}] {{\n  %y = scatter %t, %i, %u, update_window_dims=[{b}], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim={b}, combine=add : f32[{v},{d}]\n  %z = mul %y, %y : f32[{v},{d}]\n  return %z\n}}",
            dims(&batch), dims(&batch),
        );
        let c = cluster(&src);
        let n: usize = batch.iter().product();
        // Few distinct ids: many duplicates.
        let ids: Vec<i64> = (0..n).map(|_| index(&mut r, v.min(3), 1)).collect();
        let tys = c.body.param_types();
        let t = random_tensor(&tys[0], &mut r);
        let u = random_tensor(&tys[2], &mut r);
        check_with_inputs(&c, &[t, indices(it, batch.clone(), &ids), u]);
    }
}

#[test]
fn general_scatters_match_the_interpreter() {
    let mut r = Rng(0x6e5_0038);
    for case in 0..60 {
        let s: Vec<usize> = (0..1 + r.below(3)).map(|_| 1 + r.below(9)).collect();
        let rank = s.len();
        let mut map: Vec<usize> = (0..rank).filter(|_| r.below(2) == 0).collect();
        if map.is_empty() {
            map.push(r.below(rank));
        }
        if map.len() > 1 && r.below(2) == 0 {
            map.reverse();
        }
        let inserted: Vec<usize> = {
            let mut v: Vec<usize> = map.iter().copied().filter(|_| r.below(2) == 0).collect();
            v.sort();
            v
        };
        let size: Vec<usize> = (0..rank)
            .map(|k| match inserted.contains(&k) {
                true => 1,
                false => 1 + r.below(s[k]),
            })
            .collect();
        let window: Vec<usize> = (0..rank).filter(|k| !inserted.contains(k)).collect();
        let batch: Vec<usize> = (0..r.below(3)).map(|_| 1 + r.below(4)).collect();
        let nb = batch.len();
        let mut ishape = batch.clone();
        ishape.push(map.len());
        let mut ushape = batch.clone();
        ushape.extend(window.iter().map(|&k| size[k]));
        let uwd: Vec<usize> = (nb..nb + window.len()).collect();
        let (dt, combine) = [
            ("f32", "add"),
            ("f32", "max"),
            ("f64", "replace"),
            ("f32", "mul"),
            ("i32", "add"),
            ("u32", "min"),
            ("bool", "or"),
            ("i64", "and"),
            ("f16", "add"),
            ("bf16", "add"),
        ][case % 10];
        let it = ["i32", "i64", "u32"][case % 3];
        let src = format!(
            "func @f(%a: {dt}[{}], %i: {it}[{}], %u: {dt}[{}]) -> {dt}[{}] {{\n  %y = scatter %a, %i, %u, update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim={nb}, combine={combine} : {dt}[{}]\n  return %y\n}}",
            dims(&s), dims(&ishape), dims(&ushape), dims(&s), list(&uwd), list(&inserted), list(&map), dims(&s),
        );
        let c = cluster(&src);
        let n: usize = ishape.iter().product();
        let ids: Vec<i64> = (0..n)
            .map(|p| {
                let k = map[p % map.len()];
                index(&mut r, s[k], size[k])
            })
            .collect();
        let tys = c.body.param_types();
        let a = random_tensor(&tys[0], &mut r);
        let u = random_tensor(&tys[2], &mut r);
        let idt = [DType::I32, DType::I64, DType::U32][case % 3];
        check_with_inputs(&c, &[a, indices(idt, ishape.clone(), &ids), u]);
    }
}

#[test]
fn batched_scatter_takes_the_batch_coordinate() {
    // `x.at[jnp.arange(4)[:, None], ids].add(u)` as JAX lowers it with batching dims.
    let src = "func @f(%a: f32[4,10], %i: i32[4,5,1], %u: f32[4,5]) -> f32[4,10] {
  %y = scatter %a, %i, %u, update_window_dims=[], inserted_window_dims=[1], scatter_dims_to_operand_dims=[1], index_vector_dim=2, input_batching_dims=[0], scatter_indices_batching_dims=[0], combine=add : f32[4,10]
  return %y
}";
    let c = cluster(src);
    let mut r = Rng(9);
    let ids: Vec<i64> = (0..20).map(|_| index(&mut r, 10, 1)).collect();
    let tys = c.body.param_types();
    let a = random_tensor(&tys[0], &mut r);
    let u = random_tensor(&tys[2], &mut r);
    check_with_inputs(&c, &[a, indices(DType::I32, vec![4, 5, 1], &ids), u]);
}

#[test]
fn a_batched_scatter_walks_only_its_own_row() {
    // The cross-entropy gradient of `optax.softmax_cross_entropy_with_integer_labels`: 600
    // rows, one label each. The batch dimension tied to the operand's rows is not unrolled,
    // so 600 index vectors compile (more than MAX_SCATTER_UPDATES), with duplicates within
    // a row summed in order and labels out of range skipped.
    let src = "func @f(%a: f32[600,10], %i: i32[600,3,1], %u: f32[600,3]) -> f32[600,10] {
  %y = scatter %a, %i, %u, update_window_dims=[], inserted_window_dims=[1], scatter_dims_to_operand_dims=[1], index_vector_dim=2, input_batching_dims=[0], scatter_indices_batching_dims=[0], combine=add : f32[600,10]
  return %y
}";
    let c = cluster(src);
    let mut r = Rng(0x7ab1e);
    let ids: Vec<i64> = (0..1800).map(|_| index(&mut r, 4, 1)).collect();
    let tys = c.body.param_types();
    let a = random_tensor(&tys[0], &mut r);
    let u = random_tensor(&tys[2], &mut r);
    check_with_inputs(&c, &[a, indices(DType::I32, vec![600, 3, 1], &ids), u]);
}

#[test]
fn too_many_index_vectors_or_a_leading_window_stay_on_the_interpreter() {
    let many = "func @f(%a: f32[10,4], %i: i32[300,1], %u: f32[300,4]) -> f32[10,4] {
  %y = scatter %a, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add : f32[10,4]
  return %y
}";
    assert!(expect_unsupported(many).contains("300 index vectors"));
    let leading = "func @f(%a: f32[10,4], %i: i32[3,1], %u: f32[4,3]) -> f32[10,4] {
  %y = scatter %a, %i, %u, update_window_dims=[0], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add : f32[10,4]
  return %y
}";
    assert!(expect_unsupported(leading).contains("window dimension before a batch"));
}

#[test]
fn a_large_table_stays_on_the_interpreter() {
    // 200 ids into a 2000 x 64 table: 200 x 128000 steps walked, where the interpreter
    // adds 200 rows.
    let src = "func @f(%a: f32[2000,64], %i: i32[200,1], %u: f32[200,64]) -> f32[2000,64] {
  %y = scatter %a, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add : f32[2000,64]
  return %y
}";
    assert!(expect_unsupported(src).contains("the interpreter touches each update once"));
}
