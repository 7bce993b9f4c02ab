//! `dot_general`: exact small products, general dimension numbers against a naive
//! f64-accumulated reference (with a tolerance: the GEMM may associate differently), and
//! bit-identical results for 1, 2 and 7 threads.

mod common;
use common::*;
use kiln_interp::Interpreter;
use kiln_ir::typecheck::infer;
use kiln_ir::{DotDims, Op, Tensor};

fn dims(lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]) -> DotDims {
    DotDims {
        lhs_batch: lb.to_vec(),
        rhs_batch: rb.to_vec(),
        lhs_contract: lc.to_vec(),
        rhs_contract: rc.to_vec(),
    }
}

fn dot_on(interp: &Interpreter, a: &Tensor, b: &Tensor, d: &DotDims) -> Tensor {
    let op = Op::DotGeneral(d.clone());
    let ty = infer(&op, &[&a.ty(), &b.ty()], None).expect("well-typed");
    interp.eval(&op, &[a, b], &ty).expect("dot")
}

fn dot(a: &Tensor, b: &Tensor, d: &DotDims) -> Tensor {
    dot_on(&Interpreter::new(2).unwrap(), a, b, d)
}

/// Naive dot_general with f64 accumulation, by explicit index enumeration.
fn naive(a: &[f64], ashape: &[usize], b: &[f64], bshape: &[usize], d: &DotDims) -> Vec<f64> {
    let free = |rank: usize, batch: &[usize], con: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|i| !batch.contains(i) && !con.contains(i))
            .collect()
    };
    let lf = free(ashape.len(), &d.lhs_batch, &d.lhs_contract);
    let rf = free(bshape.len(), &d.rhs_batch, &d.rhs_contract);
    let out_dims: Vec<usize> = d
        .lhs_batch
        .iter()
        .map(|&i| ashape[i])
        .chain(lf.iter().map(|&i| ashape[i]))
        .chain(rf.iter().map(|&i| bshape[i]))
        .collect();
    let con_dims: Vec<usize> = d.lhs_contract.iter().map(|&i| ashape[i]).collect();
    let unflat = |mut k: usize, dims: &[usize]| {
        let mut idx = vec![0; dims.len()];
        for j in (0..dims.len()).rev() {
            idx[j] = k % dims[j];
            k /= dims[j];
        }
        idx
    };
    let flat =
        |idx: &[usize], shape: &[usize]| idx.iter().zip(shape).fold(0, |acc, (i, s)| acc * s + i);
    let n_out: usize = out_dims.iter().product();
    let n_con: usize = con_dims.iter().product();
    (0..n_out)
        .map(|o| {
            let oi = unflat(o, &out_dims);
            let nb = d.lhs_batch.len();
            let mut ai = vec![0; ashape.len()];
            let mut bi = vec![0; bshape.len()];
            for (k, (&l, &r)) in d.lhs_batch.iter().zip(&d.rhs_batch).enumerate() {
                ai[l] = oi[k];
                bi[r] = oi[k];
            }
            for (k, &l) in lf.iter().enumerate() {
                ai[l] = oi[nb + k];
            }
            for (k, &r) in rf.iter().enumerate() {
                bi[r] = oi[nb + lf.len() + k];
            }
            (0..n_con)
                .map(|c| {
                    let ci = unflat(c, &con_dims);
                    for (k, (&l, &r)) in d.lhs_contract.iter().zip(&d.rhs_contract).enumerate() {
                        ai[l] = ci[k];
                        bi[r] = ci[k];
                    }
                    a[flat(&ai, ashape)] * b[flat(&bi, bshape)]
                })
                .sum()
        })
        .collect()
}

fn pseudo(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

#[test]
fn matmul_exact() {
    let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = f32s(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    let r = dot(&a, &b, &dims(&[], &[], &[1], &[0]));
    assert_bits(&r, &f32s(&[2, 2], &[58.0, 64.0, 139.0, 154.0]));
    let a = f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let r = dot(&a, &a, &dims(&[], &[], &[0], &[0])); // Aᵀ·A
    assert_bits(&r, &f64s(&[2, 2], &[10.0, 14.0, 14.0, 20.0]));
    // vector dot product: no free dimensions
    let v = f32s(&[3], &[1.0, 2.0, 3.0]);
    assert_bits(
        &dot(&v, &v, &dims(&[], &[], &[0], &[0])),
        &f32s(&[], &[14.0]),
    );
}

#[test]
fn empty_contraction_and_empty_result() {
    let a = f32s(&[2, 0], &[]);
    let b = f32s(&[0, 3], &[]);
    assert_bits(
        &dot(&a, &b, &dims(&[], &[], &[1], &[0])),
        &f32s(&[2, 3], &[0.0; 6]),
    );
    let c = f32s(&[0, 4], &[]);
    let e = f32s(&[4, 2], &[0.0; 8]);
    assert_eq!(dot(&c, &e, &dims(&[], &[], &[1], &[0])).num_elements(), 0);
}

#[test]
fn general_dimension_numbers_match_naive() {
    type Case = (&'static [usize], &'static [usize], DotDims);
    let cases: Vec<Case> = vec![
        // batched matmul
        (&[3, 5, 7], &[3, 7, 4], dims(&[0], &[0], &[2], &[1])),
        // transposed lhs (contract dim 0: strided, no copy)
        (&[7, 5], &[7, 4], dims(&[], &[], &[0], &[0])),
        // batch dimension not leading on either side (needs a copy)
        (&[5, 3, 7], &[7, 4, 3], dims(&[1], &[2], &[2], &[0])),
        // two contracting dims in swapped order, two free dims per side
        (&[2, 3, 4, 5], &[5, 6, 4], dims(&[], &[], &[3, 2], &[0, 2])),
        // two batch dims
        (
            &[2, 3, 4, 5],
            &[2, 3, 5, 2],
            dims(&[0, 1], &[0, 1], &[3], &[2]),
        ),
        // size-1 dimensions everywhere
        (&[1, 4, 1], &[1, 1, 3], dims(&[0], &[0], &[2], &[1])),
    ];
    for (k, (ashape, bshape, d)) in cases.into_iter().enumerate() {
        let x = pseudo(ashape.iter().product(), k as u32);
        let y = pseudo(bshape.iter().product(), 100 + k as u32);
        let want = naive(
            &x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            ashape,
            &y.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            bshape,
            &d,
        );
        let got = dot(&f32s(ashape, &x), &f32s(bshape, &y), &d);
        let g = got.as_f32().unwrap();
        assert_eq!(g.len(), want.len(), "case {k}");
        for (i, (&gv, &wv)) in g.iter().zip(&want).enumerate() {
            assert!(
                (gv as f64 - wv).abs() <= 1e-5 * (1.0 + wv.abs()),
                "case {k} [{i}]: {gv} vs {wv}"
            );
        }
        // f64 too
        let got = dot(
            &f64s(ashape, &x.iter().map(|&v| v as f64).collect::<Vec<_>>()),
            &f64s(bshape, &y.iter().map(|&v| v as f64).collect::<Vec<_>>()),
            &d,
        );
        for (i, &wv) in want.iter().enumerate() {
            let gv = got.data().get(i).to_f64();
            assert!(
                (gv - wv).abs() <= 1e-12 * (1.0 + wv.abs()),
                "f64 case {k} [{i}]"
            );
        }
    }
}

#[test]
fn bit_identical_for_1_2_and_7_threads() {
    let cases: Vec<(Vec<usize>, Vec<usize>, DotDims)> = vec![
        (vec![300, 200], vec![200, 150], dims(&[], &[], &[1], &[0])),
        (
            vec![3, 130, 90],
            vec![3, 90, 70],
            dims(&[0], &[0], &[2], &[1]),
        ),
        (vec![200, 257], vec![130, 200], dims(&[], &[], &[0], &[1])),
    ];
    for (ashape, bshape, d) in cases {
        let a = f32s(&ashape, &pseudo(ashape.iter().product(), 1));
        let b = f32s(&bshape, &pseudo(bshape.iter().product(), 2));
        let results: Vec<Tensor> = [1, 2, 7]
            .iter()
            .map(|&t| dot_on(&Interpreter::new(t).unwrap(), &a, &b, &d))
            .collect();
        assert!(results[0].bit_eq(&results[1]) && results[0].bit_eq(&results[2]));
    }
}
