//! Integer `dot_general`: wrapping sums of wrapping products, exact modulo 2^bits.

use super::{DotPlan, PAR_FLOPS};
use crate::scalar::MulAdd;
use kiln_ir::{Buffer, DType};
use rayon::prelude::*;

/// An integer `dot_general` (XLA's on `s8`…`u64` operands: `jax.lax.dot` with
/// `preferred_element_type=jnp.int32`, a quantised layer's product): each result element
/// is the sum of the products in the operands' dtype, both wrapping — exact modulo
/// 2^bits, so every order gives the same bits (and no GEMM is needed for determinism).
fn int_dot<T: MulAdd>(x: &[T], y: &[T], plan: &DotPlan) -> Vec<T> {
    let a = plan.lhs.matrices(x);
    let b = plan.rhs.matrices(y);
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let mut out = vec![T::default(); a.batch * m * n];
    if m * n == 0 {
        return out;
    }
    // Row `r` of the output (over all batches): `a`'s row times `b`, accumulated along the
    // row so that `b`'s rows are read in order.
    let row = |(r, o): (usize, &mut [T])| {
        let (bi, i) = (r / m, r % m);
        let a_row = bi * a.batch_stride + i * a.row_stride;
        let b_mat = bi * b.batch_stride;
        for l in 0..k {
            let v = a.data[a_row + l * a.col_stride];
            let b_row = b_mat + l * b.row_stride;
            if b.col_stride == 1 {
                // Contiguous (the usual layout): a loop the compiler vectorises.
                for (acc, &w) in o.iter_mut().zip(&b.data[b_row..b_row + n]) {
                    *acc = acc.mul_add(v, w);
                }
            } else {
                for (j, acc) in o.iter_mut().enumerate() {
                    *acc = acc.mul_add(v, b.data[b_row + j * b.col_stride]);
                }
            }
        }
    };
    if a.batch * m * n * k < PAR_FLOPS {
        out.chunks_mut(n).enumerate().for_each(row);
    } else {
        out.par_chunks_mut(n).enumerate().for_each(row);
    }
    out
}

/// [`int_dot`] of two buffers of one integer dtype.
pub(super) fn product(x: &Buffer, y: &Buffer, plan: &DotPlan) -> Result<Buffer, String> {
    fn run<T: MulAdd>(x: &Buffer, y: &Buffer, plan: &DotPlan) -> Result<Buffer, String> {
        let (Some(x), Some(y)) = (T::slice(x), T::slice(y)) else {
            return Err(format!(
                "operands must be of one dtype, got {} and {}",
                x.dtype(),
                y.dtype()
            ));
        };
        Ok(T::into_buffer(int_dot(x, y, plan)))
    }
    match x.dtype() {
        DType::I8 => run::<i8>(x, y, plan),
        DType::I16 => run::<i16>(x, y, plan),
        DType::I32 => run::<i32>(x, y, plan),
        DType::I64 => run::<i64>(x, y, plan),
        DType::U8 => run::<u8>(x, y, plan),
        DType::U16 => run::<u16>(x, y, plan),
        DType::U32 => run::<u32>(x, y, plan),
        DType::U64 => run::<u64>(x, y, plan),
        d => Err(format!("dot_general of {d} operands")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::free_dims;
    use kiln_ir::{DType, DotDims, Tensor};

    /// Integer products wrap in the operand dtype: every layout (batch dimensions first or
    /// not, contracting dimensions permuted, so operands are gathered), an outer product,
    /// an empty contraction and one large enough for the threads, against sums of products
    /// in `i128` reduced modulo 2^bits, at one and three threads.
    #[test]
    fn integer_products_wrap_like_exact_sums() {
        use kiln_ir::Scalar;
        let dims = |lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]| DotDims {
            lhs_batch: lb.to_vec(),
            rhs_batch: rb.to_vec(),
            lhs_contract: lc.to_vec(),
            rhs_contract: rc.to_vec(),
        };
        let cases = [
            (vec![2, 3, 4], vec![2, 4, 5], dims(&[0], &[0], &[2], &[1])),
            (vec![4, 2, 3], vec![5, 2, 4], dims(&[1], &[1], &[0], &[2])),
            (
                vec![3, 2, 4],
                vec![4, 5, 3],
                dims(&[], &[], &[0, 2], &[2, 0]),
            ),
            (vec![3, 4], vec![5, 4], dims(&[], &[], &[1], &[1])),
            (vec![3], vec![4], dims(&[], &[], &[], &[])),
            (vec![3, 0], vec![0, 2], dims(&[], &[], &[1], &[0])),
            (vec![40, 300], vec![300, 120], dims(&[], &[], &[1], &[0])),
        ];
        // Index of `shape`'s element at `idx` (row-major).
        let flat = |shape: &[usize], idx: &[usize]| {
            idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
        };
        let mut rng = kiln_testkit::Rng(5);
        for dtype in [
            DType::I8,
            DType::U8,
            DType::I16,
            DType::I32,
            DType::U32,
            DType::I64,
            DType::U64,
        ] {
            let bits = 8 * dtype.size_bytes() as u32;
            let wrap = |v: i128| {
                let m = v.rem_euclid(1i128 << bits);
                match dtype.is_signed_int() && m >= 1i128 << (bits - 1) {
                    true => m - (1i128 << bits),
                    false => m,
                }
            };
            for (xs, ys, d) in &cases {
                // Values over the whole range, so the products and sums wrap.
                let mut values = |n: usize| -> Vec<i128> {
                    (0..n).map(|_| wrap(i128::from(rng.next()))).collect()
                };
                let (x, y) = (values(xs.iter().product()), values(ys.iter().product()));
                let tensor = |shape: &[usize], v: &[i128]| {
                    let scalars: Vec<Scalar> = v
                        .iter()
                        .map(|&e| Scalar::from_int(dtype, e).unwrap())
                        .collect();
                    Tensor::new(
                        shape.to_vec(),
                        kiln_ir::Buffer::from_scalars(dtype, &scalars).unwrap(),
                    )
                    .unwrap()
                };
                let (a, b) = (tensor(xs, &x), tensor(ys, &y));
                let op = kiln_ir::Op::DotGeneral(d.clone());
                let ty = kiln_ir::typecheck::infer(&op, &[&a.ty(), &b.ty()], None).unwrap();
                // The reference: result index = (batch, lhs free, rhs free).
                let lf = free_dims(xs.len(), &d.lhs_batch, &d.lhs_contract);
                let rf = free_dims(ys.len(), &d.rhs_batch, &d.rhs_contract);
                let csizes: Vec<usize> = d.lhs_contract.iter().map(|&i| xs[i]).collect();
                let mut want = Vec::new();
                for r in 0..ty.num_elements() {
                    let mut idx = vec![0; ty.shape.len()];
                    let mut rem = r;
                    for (k, &n) in ty.shape.iter().enumerate().rev() {
                        idx[k] = rem % n;
                        rem /= n;
                    }
                    let nb = d.lhs_batch.len();
                    let mut sum = 0i128;
                    for c in 0..csizes.iter().product() {
                        let (mut li, mut ri) = (vec![0; xs.len()], vec![0; ys.len()]);
                        let mut rem = c;
                        for (k, &n) in csizes.iter().enumerate().rev() {
                            li[d.lhs_contract[k]] = rem % n;
                            ri[d.rhs_contract[k]] = rem % n;
                            rem /= n;
                        }
                        for (k, (&l, &rr)) in d.lhs_batch.iter().zip(&d.rhs_batch).enumerate() {
                            (li[l], ri[rr]) = (idx[k], idx[k]);
                        }
                        for (k, &l) in lf.iter().enumerate() {
                            li[l] = idx[nb + k];
                        }
                        for (k, &rr) in rf.iter().enumerate() {
                            ri[rr] = idx[nb + lf.len() + k];
                        }
                        // Modulo 2^128 (u64 products exceed i128), then 2^bits.
                        let term = x[flat(xs, &li)].wrapping_mul(y[flat(ys, &ri)]);
                        sum = sum.wrapping_add(term);
                    }
                    want.push(wrap(sum));
                }
                let want = tensor(&ty.shape, &want);
                for threads in [1, 3] {
                    let interp = crate::Interpreter::new(threads).unwrap();
                    let got = interp.eval(&op, &[&a, &b], &ty).unwrap();
                    assert!(
                        got.bit_eq(&want),
                        "{dtype} {xs:?}·{ys:?} {d:?}, {threads} threads"
                    );
                }
            }
        }
    }
}
