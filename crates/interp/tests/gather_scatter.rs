//! `gather` and `scatter`: hand-computed cases (embedding lookups, `take_along_axis`,
//! batching dimensions, out-of-range indices, duplicate indices, every combiner), the
//! canonical order of duplicate updates, thread-count independence, and random dimension
//! numbers against a transcription of the StableHLO spec's formulas, element by element.

mod common;
use common::*;
use kiln_interp::Interpreter;
use kiln_ir::typecheck::infer;
use kiln_ir::{Buffer, DType, GatherDims, Op, ScatterCombine, ScatterDims, Tensor, TensorType};
use kiln_testkit::{first_difference, random_tensor, Rng};

fn gather_op(d: GatherDims) -> Op {
    Op::Gather(Box::new(d))
}

fn scatter_op(d: ScatterDims, combine: ScatterCombine) -> Op {
    Op::Scatter {
        dims: Box::new(d),
        combine,
    }
}

/// Runs `op` on `args` with the result type its typing rule gives.
fn run(op: &Op, args: &[&Tensor]) -> Tensor {
    let tys: Vec<TensorType> = args.iter().map(|a| a.ty()).collect();
    let refs: Vec<&TensorType> = tys.iter().collect();
    let ty = infer(op, &refs, None).unwrap_or_else(|e| panic!("{e}"));
    eval_ty(op.clone(), args, ty).expect("eval")
}

/// Rows along dimension 0 picked by scalar indices (`table[ids]`).
fn rows(idx_rank: usize, rank: usize, slice_sizes: Vec<usize>) -> GatherDims {
    GatherDims {
        offset_dims: (idx_rank..idx_rank + rank - 1).collect(),
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: idx_rank,
        slice_sizes,
        ..GatherDims::default()
    }
}

/// Updates of whole rows along dimension 0 at scalar indices (`x.at[ids].op(u)`).
fn at_rows(idx_rank: usize, rank: usize) -> ScatterDims {
    ScatterDims {
        update_window_dims: (idx_rank..idx_rank + rank - 1).collect(),
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: idx_rank,
        ..ScatterDims::default()
    }
}

fn seq(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    f32s(shape, &(0..n).map(|i| i as f32).collect::<Vec<_>>())
}

#[test]
fn embedding_lookup_takes_rows() {
    let table = seq(&[5, 3]);
    let ids = i32s(&[2, 2], &[4, 0, 2, 2]);
    let got = run(&gather_op(rows(2, 2, vec![1, 3])), &[&table, &ids]);
    let want = f32s(
        &[2, 2, 3],
        &[12., 13., 14., 0., 1., 2., 6., 7., 8., 6., 7., 8.],
    );
    assert_bits(&got, &want);
}

#[test]
fn out_of_range_starts_clamp_as_xla_does() {
    // Rows: -3 -> 0 and 7 -> 4, for every index dtype (u32's largest value too).
    let table = seq(&[5, 2]);
    let want = f32s(&[3, 2], &[0., 1., 8., 9., 8., 9.]);
    for ids in [
        i32s(&[3], &[-3, 7, i32::MAX]),
        i64s(&[3], &[i64::MIN, 7, i64::MAX]),
        u32s(&[3], &[0, 5, u32::MAX]),
    ] {
        let got = run(&gather_op(rows(1, 2, vec![1, 2])), &[&table, &ids]);
        assert_bits(&got, &want);
    }
    // Windows of 3 in a vector of 6: each start is clamped to [0, 3].
    let v = seq(&[6]);
    let ids = i64s(&[4, 1], &[-1, 2, 5, i64::MAX]);
    let d = GatherDims {
        offset_dims: vec![1],
        collapsed_slice_dims: vec![],
        start_index_map: vec![0],
        index_vector_dim: 1,
        slice_sizes: vec![3],
        ..GatherDims::default()
    };
    let want = f32s(&[4, 3], &[0., 1., 2., 2., 3., 4., 3., 4., 5., 3., 4., 5.]);
    assert_bits(&run(&gather_op(d), &[&v, &ids]), &want);
}

#[test]
fn take_along_axis_uses_a_batching_pair() {
    // x[i, idx[i, j]], as JAX writes take_along_axis(x, idx, axis=1).
    let x = seq(&[3, 5]);
    let idx = i32s(&[3, 2, 1], &[4, 0, 1, 1, -7, 9]);
    let d = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: vec![1],
        start_index_map: vec![1],
        index_vector_dim: 2,
        slice_sizes: vec![1, 1],
        operand_batching_dims: vec![0],
        start_indices_batching_dims: vec![0],
    };
    let want = f32s(&[3, 2], &[4., 0., 6., 6., 10., 14.]);
    assert_bits(&run(&gather_op(d), &[&x, &idx]), &want);
}

#[test]
fn index_vectors_along_dimension_0_with_a_permuted_start_map() {
    // Index vector (col, row) in dimension 0 of the indices; 2x2 windows, offsets last.
    let x = seq(&[4, 5]);
    let idx = i32s(&[2, 2], &[3, 0, 1, 9]);
    let d = GatherDims {
        offset_dims: vec![1, 2],
        collapsed_slice_dims: vec![],
        start_index_map: vec![1, 0],
        index_vector_dim: 0,
        slice_sizes: vec![2, 2],
        ..GatherDims::default()
    };
    // Starts (row 1, col 3) and (row 3 clamped to 2, col 0).
    let want = f32s(&[2, 2, 2], &[8., 9., 13., 14., 10., 11., 15., 16.]);
    assert_bits(&run(&gather_op(d), &[&x, &idx]), &want);
}

#[test]
fn empty_gathers_and_a_gather_of_everything() {
    let x = seq(&[4, 2]);
    let none = i32s(&[0], &[]);
    let got = run(&gather_op(rows(1, 2, vec![1, 2])), &[&x, &none]);
    assert_eq!(got.shape(), &[0, 2]);
    let d = GatherDims {
        offset_dims: vec![0, 1],
        start_index_map: vec![],
        index_vector_dim: 0,
        slice_sizes: vec![4, 2],
        ..GatherDims::default()
    };
    assert_bits(&run(&gather_op(d), &[&x, &none]), &x);
}

#[test]
fn scatter_add_sums_duplicate_rows() {
    // The gradient of an embedding lookup: rows 1 and 3, row 1 twice.
    let x = f32s(&[5, 2], &[0.0; 10]);
    let ids = i32s(&[3], &[1, 3, 1]);
    let u = f32s(&[3, 2], &[1., 2., 3., 4., 5., 6.]);
    let got = run(
        &scatter_op(at_rows(1, 2), ScatterCombine::Add),
        &[&x, &ids, &u],
    );
    let want = f32s(&[5, 2], &[0., 0., 6., 8., 0., 0., 3., 4., 0., 0.]);
    assert_bits(&got, &want);
}

#[test]
fn every_combiner_on_duplicate_indices() {
    let x = f32s(&[4], &[10., 10., 10., 10.]);
    let ids = i32s(&[4], &[2, 0, 2, 2]);
    let u = f32s(&[4], &[3., -1., 20., 5.]);
    let cases = [
        // Replace: the last update in row-major order wins.
        (ScatterCombine::Replace, [-1., 10., 5., 10.]),
        (ScatterCombine::Add, [9., 10., 38., 10.]),
        (ScatterCombine::Mul, [-10., 10., 3000., 10.]),
        (ScatterCombine::Max, [10., 10., 20., 10.]),
        (ScatterCombine::Min, [-1., 10., 3., 10.]),
    ];
    for (c, want) in cases {
        let got = run(&scatter_op(at_rows(1, 1), c), &[&x, &ids, &u]);
        assert_bits(&got, &f32s(&[4], &want));
    }
    // Integers wrap; bools and integers take and/or.
    let xi = i32s(&[2], &[i32::MAX, 6]);
    let ui = i32s(&[2], &[1, 3]);
    let ids = i32s(&[2], &[0, 1]);
    let add = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::Add),
        &[&xi, &ids, &ui],
    );
    assert_bits(&add, &i32s(&[2], &[i32::MIN, 9]));
    let and = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::And),
        &[&xi, &ids, &ui],
    );
    assert_bits(&and, &i32s(&[2], &[1, 2]));
    let xb = bools(&[3], &[true, false, false]);
    let ub = bools(&[3], &[false, true, false]);
    let ids = u32s(&[3], &[0, 1, 1]);
    let or = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::Or),
        &[&xb, &ids, &ub],
    );
    assert_bits(&or, &bools(&[3], &[true, true, false]));
    let and = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::And),
        &[&xb, &ids, &ub],
    );
    assert_bits(&and, &bools(&[3], &[false, false, false]));
    // NaN propagates through max, and -0 < +0 for min.
    let x = f32s(&[2], &[0.0, 1.0]);
    let ids = i32s(&[2], &[0, 1]);
    let u = f32s(&[2], &[-0.0, f32::NAN]);
    let min = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::Min),
        &[&x, &ids, &u],
    );
    assert_eq!(min.as_f32().unwrap()[0].to_bits(), (-0.0f32).to_bits());
    let max = run(
        &scatter_op(at_rows(1, 1), ScatterCombine::Max),
        &[&x, &ids, &u],
    );
    assert!(max.as_f32().unwrap()[1].is_nan());
}

#[test]
fn duplicates_combine_in_the_updates_row_major_order() {
    // ((0 + 1e8) + 1) - 1e8 + 1 = 1 in f32; any order that adds the ones first gives 0 or 2.
    let x = f32s(&[1], &[0.0]);
    let ids = i32s(&[2, 2], &[0, 0, 0, 0]);
    let u = f32s(&[2, 2], &[1e8, 1.0, -1e8, 1.0]);
    let got = run(
        &scatter_op(at_rows(2, 1), ScatterCombine::Add),
        &[&x, &ids, &u],
    );
    assert_bits(&got, &f32s(&[1], &[1.0]));
}

#[test]
fn updates_whose_window_leaves_the_operand_are_skipped_whole() {
    // Windows of 2 in a vector of 5: starts -1 and 4 are skipped, 3 and 2 land.
    let x = f32s(&[5], &[0.0; 5]);
    let ids = i64s(&[4, 1], &[-1, 3, 4, 2]);
    let u = f32s(&[4, 2], &[1., 2., 3., 4., 5., 6., 7., 8.]);
    let d = ScatterDims {
        update_window_dims: vec![1],
        inserted_window_dims: vec![],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
        ..ScatterDims::default()
    };
    let got = run(&scatter_op(d, ScatterCombine::Add), &[&x, &ids, &u]);
    assert_bits(&got, &f32s(&[5], &[0., 0., 7., 11., 4.]));
    // Rows out of range (negative, past the end, u32's largest) are skipped too.
    let x = seq(&[3, 2]);
    let ids = u32s(&[3], &[3, u32::MAX, 1]);
    let u = f32s(&[3, 2], &[9.; 6]);
    let got = run(
        &scatter_op(at_rows(1, 2), ScatterCombine::Replace),
        &[&x, &ids, &u],
    );
    assert_bits(&got, &f32s(&[3, 2], &[0., 1., 9., 9., 4., 5.]));
}

#[test]
fn scatter_with_a_batching_pair() {
    // x[i, idx[i, j]] += u[i, j] (the gradient of take_along_axis).
    let x = f32s(&[2, 4], &[0.0; 8]);
    let idx = i32s(&[2, 3], &[1, 1, 3, 0, 2, 9]);
    let u = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let d = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![1],
        scatter_dims_to_operand_dims: vec![1],
        index_vector_dim: 2,
        input_batching_dims: vec![0],
        scatter_indices_batching_dims: vec![0],
    };
    let got = run(&scatter_op(d, ScatterCombine::Add), &[&x, &idx, &u]);
    assert_bits(&got, &f32s(&[2, 4], &[0., 3., 0., 3., 4., 0., 5., 0.]));
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let mut r = Rng(0x5ca7);
    let table = random_tensor(&TensorType::new(DType::F32, vec![300, 64]), &mut r);
    let ids: Vec<i32> = (0..4096).map(|_| r.below(300) as i32).collect();
    let ids = i32s(&[4096], &ids);
    let u = random_tensor(&TensorType::new(DType::F32, vec![4096, 64]), &mut r);
    let g = gather_op(rows(1, 2, vec![1, 64]));
    let s = scatter_op(at_rows(1, 2), ScatterCombine::Add);
    let mut outs = Vec::new();
    for threads in [1, 3, 8] {
        let interp = Interpreter::new(threads).unwrap();
        let gt = TensorType::new(DType::F32, vec![4096, 64]);
        let st = table.ty();
        outs.push(vec![
            interp.eval(&g, &[&table, &ids], &gt).unwrap(),
            interp.eval(&s, &[&table, &ids, &u], &st).unwrap(),
        ]);
    }
    assert_eq!(first_difference(&outs[0], &outs[1]), None);
    assert_eq!(first_difference(&outs[0], &outs[2]), None);
}

/// The StableHLO spec's formulas, one element at a time, with the combiner evaluated by the
/// interpreter's elementwise op of the same name (so the two share only that).
mod spec {
    use super::*;

    /// The index vector of batch position `batch` (a multi-index over the indices' dims
    /// other than `ivd`): `k` values, read along `ivd` (or the one element when implicit).
    fn index_vector(idx: &Tensor, ivd: usize, batch: &[usize], k: usize) -> Vec<i64> {
        let shape = idx.shape();
        (0..k)
            .map(|j| {
                let mut full = Vec::new();
                let mut b = batch.iter();
                for d in 0..shape.len() {
                    full.push(if d == ivd { j } else { *b.next().unwrap() });
                }
                let flat = full.iter().zip(shape).fold(0, |acc, (i, n)| acc * n + i);
                match idx.data() {
                    Buffer::I32(v) => i64::from(v[flat]),
                    Buffer::I64(v) => v[flat],
                    Buffer::U32(v) => i64::from(v[flat]),
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    /// Multi-indices of `shape` in row-major order.
    pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut f| {
                let mut ix = vec![0; shape.len()];
                for d in (0..shape.len()).rev() {
                    ix[d] = f % shape[d];
                    f /= shape[d];
                }
                ix
            })
            .collect()
    }

    fn flat(ix: &[usize], shape: &[usize]) -> usize {
        ix.iter().zip(shape).fold(0, |acc, (i, n)| acc * n + i)
    }

    /// Spec: full_start_index + full_batching_index for the batch multi-index `batch`.
    #[allow(clippy::too_many_arguments)]
    fn start(
        a: &[usize],
        idx: &Tensor,
        ivd: usize,
        start_map: &[usize],
        batching: &[usize],
        idx_batching: &[usize],
        batch: &[usize],
    ) -> Vec<i64> {
        let iv = index_vector(idx, ivd, batch, start_map.len());
        let mut s = vec![0i64; a.len()];
        for (j, &d) in start_map.iter().enumerate() {
            s[d] = iv[j];
        }
        for (&od, &id) in batching.iter().zip(idx_batching) {
            s[od] = batch[if id < ivd { id } else { id - 1 }] as i64;
        }
        s
    }

    /// The window index of operand rank `rank` from the window entries `w`, with 0 at
    /// `skipped` dimensions.
    fn full_window(rank: usize, skipped: &[usize], w: &[usize]) -> Vec<usize> {
        let mut it = w.iter();
        (0..rank)
            .map(|d| match skipped.contains(&d) {
                true => 0,
                false => *it.next().unwrap(),
            })
            .collect()
    }

    pub fn gather(a: &Tensor, idx: &Tensor, d: &GatherDims, out: &[usize]) -> Vec<f32> {
        let src = a.as_f32().unwrap();
        let sh = a.shape();
        let skipped: Vec<usize> = [&d.collapsed_slice_dims[..], &d.operand_batching_dims].concat();
        indices(out)
            .into_iter()
            .map(|r| {
                let batch: Vec<usize> = (0..out.len())
                    .filter(|i| !d.offset_dims.contains(i))
                    .map(|i| r[i])
                    .collect();
                let mut s = start(
                    sh,
                    idx,
                    d.index_vector_dim,
                    &d.start_index_map,
                    &[],
                    &[],
                    &batch,
                );
                for &k in &d.start_index_map {
                    s[k] = s[k].clamp(0, (sh[k] - d.slice_sizes[k]) as i64);
                }
                let b = start(
                    sh,
                    idx,
                    d.index_vector_dim,
                    &[],
                    &d.operand_batching_dims,
                    &d.start_indices_batching_dims,
                    &batch,
                );
                let off: Vec<usize> = d.offset_dims.iter().map(|&i| r[i]).collect();
                let w = full_window(sh.len(), &skipped, &off);
                let ix: Vec<usize> = (0..sh.len())
                    .map(|k| (s[k] + b[k]) as usize + w[k])
                    .collect();
                src[flat(&ix, sh)]
            })
            .collect()
    }

    pub fn scatter(
        a: &Tensor,
        idx: &Tensor,
        u: &Tensor,
        d: &ScatterDims,
        c: ScatterCombine,
    ) -> Tensor {
        let sh = a.shape().to_vec();
        let mut out = a.as_f32().unwrap().to_vec();
        let upd = u.as_f32().unwrap();
        let skipped: Vec<usize> = [&d.inserted_window_dims[..], &d.input_batching_dims].concat();
        let us = u.shape();
        let mut size = vec![1usize; sh.len()];
        let window: Vec<usize> = (0..sh.len()).filter(|k| !skipped.contains(k)).collect();
        for (&k, &ud) in window.iter().zip(&d.update_window_dims) {
            size[k] = us[ud];
        }
        let interp = Interpreter::new(1).unwrap();
        let one = TensorType::new(DType::F32, vec![]);
        for (n, r) in indices(us).into_iter().enumerate() {
            let batch: Vec<usize> = (0..us.len())
                .filter(|i| !d.update_window_dims.contains(i))
                .map(|i| r[i])
                .collect();
            let s = start(
                &sh,
                idx,
                d.index_vector_dim,
                &d.scatter_dims_to_operand_dims,
                &d.input_batching_dims,
                &d.scatter_indices_batching_dims,
                &batch,
            );
            if (0..sh.len()).any(|k| s[k] < 0 || s[k] + size[k] as i64 > sh[k] as i64) {
                continue;
            }
            let win: Vec<usize> = d.update_window_dims.iter().map(|&i| r[i]).collect();
            let w = full_window(sh.len(), &skipped, &win);
            let ix: Vec<usize> = (0..sh.len()).map(|k| s[k] as usize + w[k]).collect();
            let t = flat(&ix, &sh);
            out[t] = match c.binary() {
                None => upd[n],
                Some(b) => {
                    let x = f32s(&[], &[out[t]]);
                    let y = f32s(&[], &[upd[n]]);
                    let z = interp.eval(&Op::Binary(b), &[&x, &y], &one).unwrap();
                    z.as_f32().unwrap()[0]
                }
            };
        }
        f32s(&sh, &out)
    }
}

/// Random valid dimension numbers: operand, indices and the pieces shared by gather and
/// scatter.
struct Config {
    operand: Vec<usize>,
    batching: Vec<usize>,
    collapsed: Vec<usize>,
    start_map: Vec<usize>,
    idx: Tensor,
    ivd: usize,
    idx_batching: Vec<usize>,
    /// The indices' batch dimension sizes, in order.
    batch: Vec<usize>,
}

fn shuffle(r: &mut Rng, v: &mut [usize]) {
    for i in (1..v.len()).rev() {
        v.swap(i, r.below(i + 1));
    }
}

fn config(r: &mut Rng) -> Config {
    let rank = 1 + r.below(3);
    let operand: Vec<usize> = (0..rank).map(|_| 1 + r.below(4)).collect();
    let mut dims: Vec<usize> = (0..rank).collect();
    shuffle(r, &mut dims);
    let nb = r.below(2).min(rank);
    let mut batching = dims[..nb].to_vec();
    let nc = r.below(rank - nb + 1);
    let mut collapsed = dims[nb..nb + nc].to_vec();
    batching.sort_unstable();
    collapsed.sort_unstable();
    let mut free: Vec<usize> = (0..rank).filter(|d| !batching.contains(d)).collect();
    shuffle(r, &mut free);
    let k = r.below(free.len() + 1);
    let start_map = free[..k].to_vec();
    // The indices' batch dimensions: free ones (sometimes empty) and the batching partners.
    let nfree = r.below(3);
    let mut batch: Vec<usize> = (0..nfree).map(|_| r.below(4)).collect();
    let mut partner_slots = Vec::new();
    for &od in &batching {
        let slot = r.below(batch.len() + 1);
        batch.insert(slot, operand[od]);
        for s in partner_slots.iter_mut() {
            if *s >= slot {
                *s += 1;
            }
        }
        partner_slots.push(slot);
    }
    let implicit = k == 1 && r.below(2) == 0;
    let ivd = if implicit {
        batch.len()
    } else {
        r.below(batch.len() + 1)
    };
    let mut shape = batch.clone();
    if !implicit {
        shape.insert(ivd, k);
    }
    let idx_batching = partner_slots
        .iter()
        .map(|&s| if !implicit && s >= ivd { s + 1 } else { s })
        .collect();
    let n: usize = shape.iter().product();
    let big = *operand.iter().max().unwrap() as i64 + 2;
    let vals: Vec<i64> = (0..n)
        .map(|_| (r.below((2 * big + 1) as usize) as i64) - big)
        .collect();
    let idx = match r.below(3) {
        0 => i32s(&shape, &vals.iter().map(|&v| v as i32).collect::<Vec<_>>()),
        1 => i64s(&shape, &vals),
        _ => u32s(&shape, &vals.iter().map(|&v| v as u32).collect::<Vec<_>>()),
    };
    Config {
        operand,
        batching,
        collapsed,
        start_map,
        idx,
        ivd,
        idx_batching,
        batch,
    }
}

/// `n` sorted positions among `0..total`.
fn positions(r: &mut Rng, n: usize, total: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..total).collect();
    shuffle(r, &mut all);
    let mut p = all[..n].to_vec();
    p.sort_unstable();
    p
}

#[test]
fn random_gathers_match_the_spec() {
    let mut r = Rng(0x6a7e);
    for case in 0..400 {
        let c = config(&mut r);
        let window: Vec<usize> = (0..c.operand.len())
            .filter(|d| !c.collapsed.contains(d) && !c.batching.contains(d))
            .collect();
        let slice_sizes = (0..c.operand.len())
            .map(|d| match window.contains(&d) {
                true => r.below(c.operand[d] + 1),
                false => 1,
            })
            .collect();
        let d = GatherDims {
            offset_dims: positions(&mut r, window.len(), window.len() + c.batch.len()),
            collapsed_slice_dims: c.collapsed.clone(),
            start_index_map: c.start_map.clone(),
            index_vector_dim: c.ivd,
            slice_sizes,
            operand_batching_dims: c.batching.clone(),
            start_indices_batching_dims: c.idx_batching.clone(),
        };
        let a = random_tensor(&TensorType::new(DType::F32, c.operand.clone()), &mut r);
        let op = gather_op(d.clone());
        let got = run(&op, &[&a, &c.idx]);
        let want = f32s(got.shape(), &spec::gather(&a, &c.idx, &d, got.shape()));
        assert_eq!(
            first_difference(&[got], &[want]),
            None,
            "case {case}: {d:?} on {:?} at {:?}",
            a.ty(),
            c.idx
        );
    }
}

#[test]
fn random_scatters_match_the_spec() {
    let mut r = Rng(0x5ca7);
    let combiners = [
        ScatterCombine::Replace,
        ScatterCombine::Add,
        ScatterCombine::Mul,
        ScatterCombine::Max,
        ScatterCombine::Min,
    ];
    for case in 0..400 {
        let c = config(&mut r);
        let window: Vec<usize> = (0..c.operand.len())
            .filter(|d| !c.collapsed.contains(d) && !c.batching.contains(d))
            .collect();
        let uw = positions(&mut r, window.len(), window.len() + c.batch.len());
        let (mut w, mut b) = (window.iter(), c.batch.iter());
        let ushape: Vec<usize> = (0..window.len() + c.batch.len())
            .map(|i| match uw.contains(&i) {
                true => r.below(c.operand[*w.next().unwrap()] + 1),
                false => *b.next().unwrap(),
            })
            .collect();
        let d = ScatterDims {
            update_window_dims: uw,
            inserted_window_dims: c.collapsed.clone(),
            scatter_dims_to_operand_dims: c.start_map.clone(),
            index_vector_dim: c.ivd,
            input_batching_dims: c.batching.clone(),
            scatter_indices_batching_dims: c.idx_batching.clone(),
        };
        let combine = combiners[r.below(combiners.len())];
        let a = random_tensor(&TensorType::new(DType::F32, c.operand.clone()), &mut r);
        let u = random_tensor(&TensorType::new(DType::F32, ushape), &mut r);
        let got = run(&scatter_op(d.clone(), combine), &[&a, &c.idx, &u]);
        let want = spec::scatter(&a, &c.idx, &u, &d, combine);
        assert_eq!(
            first_difference(&[got], &[want]),
            None,
            "case {case}: {combine:?} {d:?} on {:?} at {:?} with {:?}",
            a.ty(),
            c.idx,
            u.ty()
        );
    }
}
