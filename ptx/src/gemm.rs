//! `dot_general` as one cuBLAS `gemm` / `gemmStridedBatched` call: a pure mapping from
//! shapes and [`DotDims`] to gemm parameters, testable without a GPU.
//!
//! # The mapping
//!
//! As in the interpreter (`kiln_interp`'s `dot`), each operand is seen as `[batch, rows,
//! cols]` — the left one as `[batch, M, K]` (batch, free, contracting dimensions), the right
//! one as `[batch, K, N]` — when each group of dimensions collapses into one stride of the
//! operand's row-major layout. The result is `[batch, M, N]` row-major, exactly XLA's
//! `[batch…, lhs free…, rhs free…]`.
//!
//! cuBLAS is column-major, so the row-major trick is used: a row-major `C[M,N]` is a
//! column-major `Cᵀ[N,M]`, and `Cᵀ = Bᵀ·Aᵀ`. The gemm's `A` is therefore the *right* operand
//! and its `B` the *left* one; `m = N`, `n = M`, `k = K`. An operand whose rows or columns
//! have unit stride maps to `op = N` or `op = T` with the other stride as its leading
//! dimension; batches use each operand's batch stride (the batch dimensions need not lead,
//! only collapse). Anything else (a group that does not collapse, a matrix with neither unit
//! row nor unit column stride, a size beyond `i32`) is refused with a reason: the cluster
//! then runs on the fallback path instead of the GPU gathering a transposed copy.

use kiln_ir::{row_major_strides, DType, DotDims};

/// One cuBLAS call in column-major terms: for each batch `p < batch`,
/// `C_p = op_a(A_p) · op_b(B_p)` where `A_p = rhs + p·stride_a`, `B_p = lhs + p·stride_b`,
/// `C_p = out + p·stride_c` (element offsets), `X(r, c)` of a column-major matrix is at
/// `r + c·ld`, and `op(X)` is `Xᵀ` when the `trans` flag is set. `alpha = 1`, `beta = 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPlan {
    /// The result's dtype: `f32` (sgemm, or `cublasGemmEx` for 16-bit operands) or `f64`
    /// (dgemm).
    pub dtype: DType,
    /// The operands' dtype: `dtype`, or `f16`/`bf16` with an `f32` result —
    /// `cublasGemmEx` with `CUBLAS_COMPUTE_32F`, each product of the exact widenings
    /// accumulated in `f32` as the interpreter's GEMM does on the widened operands (up to
    /// the order of the sum, as every GPU product); cuBLAS runs it on tensor cores where the
    /// GPU has them. (`kiln_compiler::kernel::gemm_reads_16_bit_operands` makes such steps.)
    pub operands: DType,
    /// Transpose the gemm's `A` (the right operand).
    pub trans_a: bool,
    /// Transpose the gemm's `B` (the left operand).
    pub trans_b: bool,
    /// Rows of `op(A)` and of `C`: the dot's `N`.
    pub m: i32,
    /// Columns of `op(B)` and of `C`: the dot's `M`.
    pub n: i32,
    /// The contraction length `K`.
    pub k: i32,
    /// Leading dimension of `A` (the right operand).
    pub lda: i32,
    /// Leading dimension of `B` (the left operand).
    pub ldb: i32,
    /// Leading dimension of `C`.
    pub ldc: i32,
    /// Number of products (1: a plain gemm).
    pub batch: i32,
    /// Element stride between batches of `A` (the right operand).
    pub stride_a: i64,
    /// Element stride between batches of `B` (the left operand).
    pub stride_b: i64,
    /// Element stride between batches of `C`.
    pub stride_c: i64,
}

/// How a `dot_general` runs on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DotPlan {
    /// Elements of the (row-major) output.
    pub out_elems: usize,
    /// The gemm, or `None` when the output is empty or `K = 0` (the output is all zeros).
    pub gemm: Option<GemmPlan>,
}

/// An operand seen as `[batch, rows, cols]`: sizes and element strides.
#[derive(Debug, Clone, Copy)]
struct View {
    batch: usize,
    batch_stride: usize,
    rows: usize,
    row_stride: usize,
    cols: usize,
    col_stride: usize,
}

fn view(
    which: &str,
    shape: &[usize],
    batch: &[usize],
    rows: &[usize],
    cols: &[usize],
) -> Result<View, String> {
    let strides = row_major_strides(shape);
    let group = |axes: &[usize], what: &str| {
        kiln_ir::collapse_axes(shape, &strides, axes).ok_or_else(|| {
            format!(
                "the {which} operand's {what} dimensions {axes:?} of shape {shape:?} are not \
                 contiguous in memory (cuBLAS would need a transposed copy)"
            )
        })
    };
    let (b, bs) = group(batch, "batch")?;
    let (r, rs) = group(
        rows,
        if which == "left" {
            "free"
        } else {
            "contracting"
        },
    )?;
    let (c, cs) = group(
        cols,
        if which == "left" {
            "contracting"
        } else {
            "free"
        },
    )?;
    Ok(View {
        batch: b,
        batch_stride: bs,
        rows: r,
        row_stride: rs,
        cols: c,
        col_stride: cs,
    })
}

fn free_dims(rank: usize, batch: &[usize], contract: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|i| !batch.contains(i) && !contract.contains(i))
        .collect()
}

/// A column-major description of a matrix that, transposed or not, yields `op(X)(r, c) =
/// element (r, c) of the wanted `R×C` matrix` whose element `(r, c)` is at `r·rs + c·cs`:
/// `(transpose, ld)`.
fn as_column_major(r: usize, rs: usize, c: usize, cs: usize) -> Option<(bool, usize)> {
    // No transpose: X is R×C column-major, X(r, c) = r + c·ld, so rs must be 1.
    if r == 1 || rs == 1 {
        let ld = if c > 1 { cs } else { r.max(1) };
        if ld >= r.max(1) {
            return Some((false, ld));
        }
    }
    // Transpose: X is C×R column-major, op(X)(r, c) = X(c, r) = c + r·ld, so cs must be 1.
    if c == 1 || cs == 1 {
        let ld = if r > 1 { rs } else { c.max(1) };
        if ld >= c.max(1) {
            return Some((true, ld));
        }
    }
    None
}

fn to_i32(v: usize, what: &str) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{what} = {v} exceeds cuBLAS's 32-bit sizes"))
}

fn to_i64(v: usize, what: &str) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{what} = {v} exceeds 64 bits"))
}

/// Maps `dot_general(lhs, rhs)` to one cuBLAS call, or says why it cannot.
pub fn plan_dot(
    operands: DType,
    dtype: DType,
    lhs: &[usize],
    rhs: &[usize],
    d: &DotDims,
) -> Result<DotPlan, String> {
    match (operands, dtype) {
        (DType::F32, DType::F32)
        | (DType::F64, DType::F64)
        | (DType::F16 | DType::Bf16, DType::F32) => {}
        _ => {
            return Err(format!(
                "dot_general of {operands} operands into {dtype}: cuBLAS is used for f32 and \
                 f64 products, and for f16 and bf16 operands into f32"
            ))
        }
    }
    let in_range = |axes: &[usize], rank: usize| axes.iter().all(|&a| a < rank);
    if d.lhs_batch.len() != d.rhs_batch.len()
        || d.lhs_contract.len() != d.rhs_contract.len()
        || !in_range(&d.lhs_batch, lhs.len())
        || !in_range(&d.lhs_contract, lhs.len())
        || !in_range(&d.rhs_batch, rhs.len())
        || !in_range(&d.rhs_contract, rhs.len())
    {
        return Err(format!(
            "malformed dot dimensions {d:?} for shapes {lhs:?} and {rhs:?}"
        ));
    }
    let sizes_match =
        |a: &[usize], b: &[usize]| a.iter().zip(b).all(|(&x, &y)| lhs.get(x) == rhs.get(y));
    if !sizes_match(&d.lhs_batch, &d.rhs_batch) || !sizes_match(&d.lhs_contract, &d.rhs_contract) {
        return Err(format!(
            "dot dimensions {d:?} pair axes of different sizes in {lhs:?} and {rhs:?}"
        ));
    }
    let lhs_free = free_dims(lhs.len(), &d.lhs_batch, &d.lhs_contract);
    let rhs_free = free_dims(rhs.len(), &d.rhs_batch, &d.rhs_contract);
    let a = view("left", lhs, &d.lhs_batch, &lhs_free, &d.lhs_contract)?;
    let b = view("right", rhs, &d.rhs_batch, &d.rhs_contract, &rhs_free)?;
    let (batch, m, k, n) = (a.batch, a.rows, a.cols, b.cols);
    let out_elems = batch * m * n;
    if out_elems == 0 || k == 0 {
        return Ok(DotPlan {
            out_elems,
            gemm: None,
        });
    }
    // op(A') = Bᵀ (N×K): element (j, l) of Bᵀ is at j·col_stride + l·row_stride of B.
    let (trans_a, lda) = as_column_major(n, b.col_stride, k, b.row_stride).ok_or_else(|| {
        format!(
            "the right operand {rhs:?} has neither unit contracting nor unit free stride \
             under {d:?}"
        )
    })?;
    // op(B') = Aᵀ (K×M): element (l, i) of Aᵀ is at l·col_stride + i·row_stride of A.
    let (trans_b, ldb) = as_column_major(k, a.col_stride, m, a.row_stride).ok_or_else(|| {
        format!(
            "the left operand {lhs:?} has neither unit contracting nor unit free stride \
             under {d:?}"
        )
    })?;
    let single = batch == 1;
    Ok(DotPlan {
        out_elems,
        gemm: Some(GemmPlan {
            dtype,
            operands,
            trans_a,
            trans_b,
            m: to_i32(n, "N")?,
            n: to_i32(m, "M")?,
            k: to_i32(k, "K")?,
            lda: to_i32(lda, "lda")?,
            ldb: to_i32(ldb, "ldb")?,
            ldc: to_i32(n, "ldc")?,
            batch: to_i32(batch, "batch")?,
            stride_a: if single {
                0
            } else {
                to_i64(b.batch_stride, "stride")?
            },
            stride_b: if single {
                0
            } else {
                to_i64(a.batch_stride, "stride")?
            },
            stride_c: if single { 0 } else { to_i64(m * n, "stride")? },
        }),
    })
}

impl GemmPlan {
    /// The highest element index (plus one) the call reads of the gemm's `A` (the right
    /// operand) and `B` (the left operand): both must lie inside the buffers.
    pub fn extents(&self) -> (usize, usize) {
        let ext = |trans: bool, rows: i32, cols: i32, ld: i32, stride: i64| {
            // Stored matrix: op(X) is rows×cols, X itself cols×rows when transposed.
            let (sr, sc) = if trans { (cols, rows) } else { (rows, cols) };
            let last = (sr as i64 - 1) + (sc as i64 - 1) * ld as i64;
            (last + (self.batch as i64 - 1) * stride + 1) as usize
        };
        (
            ext(self.trans_a, self.m, self.k, self.lda, self.stride_a),
            ext(self.trans_b, self.k, self.n, self.ldb, self.stride_b),
        )
    }

    /// Evaluates the call literally on host slices (column-major, as cuBLAS defines it), in
    /// `f64`: the reference the tests compare the mapping against.
    pub fn reference(&self, a: &[f64], b: &[f64]) -> Vec<f64> {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        let at = |x: &[f64], trans: bool, ld: i32, off: usize, r: usize, c: usize| {
            let ld = ld as usize;
            if trans {
                x[off + c + r * ld]
            } else {
                x[off + r + c * ld]
            }
        };
        let mut out = vec![0.0; self.batch as usize * m * n];
        for p in 0..self.batch as usize {
            let (oa, ob) = (p * self.stride_a as usize, p * self.stride_b as usize);
            let oc = p * self.stride_c as usize;
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0;
                    for l in 0..k {
                        s += at(a, self.trans_a, self.lda, oa, i, l)
                            * at(b, self.trans_b, self.ldb, ob, l, j);
                    }
                    out[oc + i + j * self.ldc as usize] = s;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_interp::Interpreter;
    use kiln_ir::{Buffer, Op, Tensor, TensorType};

    fn dims(lb: &[usize], rb: &[usize], lc: &[usize], rc: &[usize]) -> DotDims {
        DotDims {
            lhs_batch: lb.to_vec(),
            rhs_batch: rb.to_vec(),
            lhs_contract: lc.to_vec(),
            rhs_contract: rc.to_vec(),
        }
    }

    /// Small integers: every product and sum is exact in f64, so the comparison is exact.
    fn data(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as u64 * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect()
    }

    fn out_shape(lhs: &[usize], rhs: &[usize], d: &DotDims) -> Vec<usize> {
        let mut s: Vec<usize> = d.lhs_batch.iter().map(|&a| lhs[a]).collect();
        s.extend(
            free_dims(lhs.len(), &d.lhs_batch, &d.lhs_contract)
                .iter()
                .map(|&a| lhs[a]),
        );
        s.extend(
            free_dims(rhs.len(), &d.rhs_batch, &d.rhs_contract)
                .iter()
                .map(|&a| rhs[a]),
        );
        s
    }

    /// The plan, evaluated literally, equals the interpreter's `dot_general`.
    fn check(lhs: &[usize], rhs: &[usize], d: DotDims) {
        let x = data(lhs.iter().product(), 1);
        let y = data(rhs.iter().product(), 2);
        let shape = out_shape(lhs, rhs, &d);
        let interp = Interpreter::new(1).unwrap();
        let tx = Tensor::new(lhs.to_vec(), Buffer::F64(x.clone().into())).unwrap();
        let ty = Tensor::new(rhs.to_vec(), Buffer::F64(y.clone().into())).unwrap();
        let want = interp
            .eval(
                &Op::DotGeneral(d.clone()),
                &[&tx, &ty],
                &TensorType::new(DType::F64, shape.clone()),
            )
            .unwrap();
        let plan = plan_dot(DType::F64, DType::F64, lhs, rhs, &d)
            .unwrap_or_else(|e| panic!("{lhs:?} x {rhs:?} {d:?}: {e}"));
        assert_eq!(plan.out_elems, shape.iter().product::<usize>());
        let got = match plan.gemm {
            Some(g) => {
                let (ea, eb) = g.extents();
                assert!(ea <= y.len() && eb <= x.len(), "{g:?} reads out of bounds");
                g.reference(&y, &x)
            }
            None => vec![0.0; plan.out_elems],
        };
        let Buffer::F64(want) = want.data() else {
            panic!("f64 expected")
        };
        assert_eq!(&got, want, "{lhs:?} x {rhs:?} {d:?}: {plan:?}");
    }

    #[test]
    fn plain_matmul_and_transposed_operands() {
        check(&[3, 4], &[4, 5], dims(&[], &[], &[1], &[0]));
        check(&[4, 3], &[4, 5], dims(&[], &[], &[0], &[0])); // lhsᵀ
        check(&[3, 4], &[5, 4], dims(&[], &[], &[1], &[1])); // rhsᵀ
        check(&[4, 3], &[5, 4], dims(&[], &[], &[0], &[1])); // both
    }

    #[test]
    fn vectors_outer_products_and_unit_sizes() {
        check(&[4], &[4], dims(&[], &[], &[0], &[0]));
        check(&[3, 4], &[4], dims(&[], &[], &[1], &[0]));
        check(&[4], &[4, 5], dims(&[], &[], &[0], &[0]));
        check(&[3], &[5], dims(&[], &[], &[], &[])); // outer product, K = 1
        check(&[1, 4], &[4, 1], dims(&[], &[], &[1], &[0]));
        check(&[3, 1], &[1, 5], dims(&[], &[], &[1], &[0]));
        check(&[1, 1], &[1, 1], dims(&[], &[], &[1], &[0]));
    }

    #[test]
    fn batched_leading_and_middle_batch_dims() {
        check(&[2, 3, 4], &[2, 4, 5], dims(&[0], &[0], &[2], &[1]));
        check(&[2, 3, 4], &[2, 5, 4], dims(&[0], &[0], &[2], &[2]));
        // Batch in the middle of the left operand: collapses with stride K, still one call.
        check(&[3, 2, 4], &[2, 4, 5], dims(&[1], &[0], &[2], &[1]));
        // Two batch dims and two contracting dims that collapse.
        check(
            &[2, 3, 4, 2, 3],
            &[2, 3, 2, 3, 5],
            dims(&[0, 1], &[0, 1], &[3, 4], &[2, 3]),
        );
    }

    #[test]
    fn empty_and_zero_contraction() {
        let p = plan_dot(
            DType::F32,
            DType::F32,
            &[0, 4],
            &[4, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap();
        assert_eq!(
            p,
            DotPlan {
                out_elems: 0,
                gemm: None
            }
        );
        let p = plan_dot(
            DType::F32,
            DType::F32,
            &[3, 0],
            &[0, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap();
        assert_eq!(
            p,
            DotPlan {
                out_elems: 15,
                gemm: None
            }
        );
        check(&[3, 0], &[0, 5], dims(&[], &[], &[1], &[0]));
    }

    #[test]
    fn unmappable_dots_are_refused_with_a_reason() {
        let e = plan_dot(
            DType::I32,
            DType::I32,
            &[3, 4],
            &[4, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap_err();
        assert!(e.contains("cuBLAS is used for f32 and f64"), "{e}");
        // 16-bit operands only into f32.
        let e = plan_dot(
            DType::F16,
            DType::F16,
            &[3, 4],
            &[4, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap_err();
        assert!(e.contains("f16 and bf16 operands into f32"), "{e}");
        // Contracting dims in swapped order do not collapse.
        let e = plan_dot(
            DType::F32,
            DType::F32,
            &[2, 3, 4],
            &[4, 3, 5],
            &dims(&[], &[], &[2, 1], &[0, 1]),
        )
        .unwrap_err();
        assert!(e.contains("not contiguous"), "{e}");
        // The left operand's free dims are split by its contracting dim.
        let e = plan_dot(
            DType::F32,
            DType::F32,
            &[2, 4, 3],
            &[4, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap_err();
        assert!(e.contains("not contiguous"), "{e}");
        let e = plan_dot(
            DType::F32,
            DType::F32,
            &[3, 4],
            &[5, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap_err();
        assert!(e.contains("different sizes"), "{e}");
    }

    /// Products of 16-bit operands into `f32` map like `f32` ones (the same shapes, strides
    /// and leading dimensions), with their operand dtype, which picks `cublasGemmEx`.
    #[test]
    fn half_operand_plans_keep_their_dtype() {
        let d = dims(&[0], &[0], &[2], &[1]);
        let f32_plan = plan_dot(DType::F32, DType::F32, &[2, 3, 4], &[2, 4, 5], &d).unwrap();
        for dt in [DType::F16, DType::Bf16] {
            let p = plan_dot(dt, DType::F32, &[2, 3, 4], &[2, 4, 5], &d).unwrap();
            let g = p.gemm.unwrap();
            assert_eq!((g.operands, g.dtype), (dt, DType::F32));
            assert_eq!(
                GemmPlan {
                    operands: DType::F32,
                    ..g
                },
                f32_plan.gemm.unwrap()
            );
            assert_eq!(p.out_elems, 30);
        }
    }

    #[test]
    fn sgemm_plan_matches_its_dtype() {
        let p = plan_dot(
            DType::F32,
            DType::F32,
            &[3, 4],
            &[4, 5],
            &dims(&[], &[], &[1], &[0]),
        )
        .unwrap();
        let g = p.gemm.unwrap();
        assert_eq!(
            (g.dtype, g.m, g.n, g.k, g.ldc, g.batch),
            (DType::F32, 5, 3, 4, 5, 1)
        );
        assert!(!g.trans_a && !g.trans_b);
    }
}
