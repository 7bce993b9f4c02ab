//! The LAPACK custom calls JAX emits on the CPU for `jnp.linalg` (jaxlib's typed-FFI
//! kernels, `api_version=API_VERSION_TYPED_FFI`), as Kiln ops:
//!
//! - `lapack_{s,d}getrf_ffi(a)` → `(lu, pivots, info)`, LU with partial pivoting
//!   (`solve`, `inv`, `det`, `slogdet`, `lax.linalg.lu`): Kiln's `lu`, one per result;
//! - `lapack_{s,d}potrf_ffi(a)`, `uplo` `L`/`U` → `(factor, info)` (`cholesky`):
//!   Kiln's `cholesky`, the triangle it does not write taken from `a` as LAPACK leaves it,
//!   and `info` from the factor's diagonal;
//! - `lapack_{s,d}trsm_ffi(a, b)`, `side`, `uplo`, `trans_x`, `diag` → `x`: Kiln's
//!   `triangular_solve`;
//! - `lapack_{s,d}geqrf_ffi(a)` → `(a, tau)` and `lapack_{s,d}orgqr_ffi(a, tau)` → `q`
//!   (`jnp.linalg.qr`): Kiln's `geqrf` (one per result) and `householder_product`;
//! - `lapack_{s,d}syevd_ffi(a)`, `mode` `V`/`N`, `uplo` → `(vectors, values, info)`
//!   (`jnp.linalg.eigh`, `eigvalsh`): Kiln's `eigh`, one per result, and `info` 0 (a
//!   matrix with a NaN or an infinity is NaN in both results, which is what JAX makes of
//!   a nonzero `info`);
//! - `lapack_{s,d}gesdd_ffi(a)`, `mode` `A`/`S`/`N` → `(a, s, u, vt, info)`
//!   (`jnp.linalg.svd`, `pinv`, `lstsq`, `matrix_rank`, `norm(ord=2)`): the operand (which
//!   LAPACK overwrites and JAX does not read), Kiln's `svd` for the three factors (square
//!   `U` and `Vᵀ` for `A` and `N`, whose declared shapes are the square ones) and `info` 0.
//!
//! The options are LAPACK's characters as numbers in `backend_config={uplo = 76 : ui8, …}`
//! (`L` 76, `U` 85, `N` 78, `T` 84, `C` 67, `R` 82). Matrices are the logical `[..., m, n]`
//! of the operand's shape (the call's column-major layout constraint changes where elements
//! live, not which matrix it is); leading dimensions are the batch. Any other target, the
//! complex kernels among them, is an unsupported op naming its target.

use crate::ast::Instruction;
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Problem, Tree};
use kiln_ir::{
    BinaryOp, Buffer, CompareDir, DType, Op, ReduceKind, Scalar, Tensor, TensorType,
    TriangularSolve, Value,
};

/// The attributes the three calls read or may carry without changing what they compute.
const READS: &[&str] = &[
    "custom_call_target",
    "api_version",
    "backend_config",
    "operand_layout_constraints",
    "output_to_operand_aliasing",
];

impl Ctx<'_> {
    /// `custom-call(…), custom_call_target="…"`: the LAPACK kernels above; any other target
    /// is unsupported.
    pub(crate) fn custom_call(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let target = match inst.attr("custom_call_target").map(|a| &a.value) {
            Some(AttrValue::Str(t)) => t.clone(),
            _ => {
                let msg = format!("custom-call %{} needs custom_call_target=\"…\"", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        let kind = match target.as_str() {
            "lapack_sgetrf_ffi" | "lapack_dgetrf_ffi" => 0,
            "lapack_spotrf_ffi" | "lapack_dpotrf_ffi" => 1,
            "lapack_strsm_ffi" | "lapack_dtrsm_ffi" => 2,
            "lapack_sgeqrf_ffi" | "lapack_dgeqrf_ffi" => 3,
            "lapack_sorgqr_ffi" | "lapack_dorgqr_ffi" => 4,
            "lapack_ssyevd_ffi" | "lapack_dsyevd_ffi" => 5,
            "lapack_sgesdd_ffi" | "lapack_dgesdd_ffi" => 6,
            _ => {
                let detail = format!(" (target \"{}\")", target.escape_debug());
                return Err(unsupported_op(inst, &detail));
            }
        };
        if let Some(a) = inst.attrs.iter().find(|a| {
            !READS.contains(&a.name.as_str()) && !crate::ops::HARMLESS.contains(&a.name.as_str())
        }) {
            let msg = format!(
                "unsupported attribute '{}' of custom-call \"{target}\" in %{}",
                a.name, inst.name
            );
            return Err(crate::convert::unsupported(a.pos, msg));
        }
        let arity = if kind == 2 || kind == 4 { 2 } else { 1 };
        if args.len() != arity {
            let msg = format!(
                "custom-call \"{target}\" takes {arity} operand(s), %{} has {}",
                inst.name,
                args.len()
            );
            return Err(invalid(inst.opcode_pos, msg));
        }
        match kind {
            0 => self.getrf(inst, args),
            1 => self.potrf(inst, args),
            2 => self.trsm(inst, args),
            3 => self.geqrf(inst, args),
            4 => self.orgqr(inst, args),
            5 => self.syevd(inst, args),
            _ => self.gesdd(inst, args),
        }
    }

    /// LAPACK option `key` of `backend_config={key = N : ui8, …}`, as its character.
    fn lapack_option(&self, inst: &Instruction, key: &str, allowed: &[u8]) -> Result<u8, Problem> {
        let config = match inst.attr("backend_config").map(|a| &a.value) {
            Some(AttrValue::Raw(s)) | Some(AttrValue::Str(s)) => s.as_str(),
            _ => "",
        };
        let found = config
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .filter_map(|entry| entry.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.split(':').next()?.trim().parse::<u8>().ok());
        match found {
            Some(c) if allowed.contains(&c) => Ok(c),
            _ => {
                let names: Vec<String> = allowed
                    .iter()
                    .map(|&c| format!("{c} ('{}')", c as char))
                    .collect();
                let msg = format!(
                    "%{} needs backend_config {{{key} = N : ui8}} with N one of {}",
                    inst.name,
                    names.join(", ")
                );
                Err(invalid(inst.pos, msg))
            }
        }
    }

    /// The operand's type, checked to be `f32` or `f64` matrices by `check`.
    fn matrix_type(
        &self,
        inst: &Instruction,
        a: Value,
        check: impl Fn(&TensorType) -> Result<TensorType, String>,
    ) -> Result<TensorType, Problem> {
        let ty = self.f.ty(a).clone();
        check(&ty).map_err(|m| invalid(inst.pos, format!("%{}: {m}", inst.name)))?;
        Ok(ty)
    }

    /// `getrf`: `(lu output=0, lu output=1, lu output=2)`.
    fn getrf(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.matrix_type(inst, a, |t| kiln_ir::linalg::lu(t, 0))?;
        let outs = self.each_output(inst, a, 3, |output| {
            (Op::Lu { output }, kiln_ir::linalg::lu(&ty, output))
        });
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// `potrf`: the factor in the triangle `uplo` names and `a` in the other, and `info`:
    /// 0 when every diagonal element of the factor is positive, else `j + 1` for the first
    /// `j` that is not (LAPACK's failing leading minor where a pivot is zero; Kiln's
    /// `cholesky` makes the whole matrix NaN when it takes the root of a negative, which
    /// gives 1 where LAPACK names the minor — JAX reads only whether it is 0).
    fn potrf(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.matrix_type(inst, a, kiln_ir::linalg::cholesky)?;
        let lower = self.lapack_option(inst, "uplo", b"LU")? == b'L';
        let factor = self.emit_tmp(inst, "chol", Op::Cholesky { lower }, vec![a], ty.clone());
        let r = ty.rank();
        let (n, dtype) = (ty.shape[r - 1], ty.dtype);
        let index = TensorType::new(DType::I32, ty.shape.clone());
        let rows = self.emit_tmp(inst, "row", Op::Iota { dim: r - 2 }, vec![], index.clone());
        let cols = self.emit_tmp(inst, "col", Op::Iota { dim: r - 1 }, vec![], index);
        let pred = ty.with_dtype(DType::Bool);
        let keep = if lower {
            CompareDir::Ge
        } else {
            CompareDir::Le
        };
        let tri = self.emit_tmp(
            inst,
            "tri",
            Op::Compare(keep),
            vec![rows, cols],
            pred.clone(),
        );
        let out = self.emit_tmp(inst, "out", Op::Select, vec![tri, factor, a], ty.clone());
        // The diagonal: the minimum of each row with everything off it +inf (a NaN stays).
        let eye = self.emit_tmp(
            inst,
            "eye",
            Op::Compare(CompareDir::Eq),
            vec![rows, cols],
            pred,
        );
        let inf = self.scalar(inst, float(dtype, f64::INFINITY), &ty);
        let off = self.emit_tmp(inst, "off", Op::Select, vec![eye, factor, inf], ty.clone());
        let batch = ty.shape[..r - 2].to_vec();
        let diag_ty = TensorType::new(dtype, [batch.clone(), vec![n]].concat());
        let min = |axes| Op::Reduce {
            kind: ReduceKind::Min,
            axes,
        };
        let diag = self.emit_tmp(inst, "diag", min(vec![r - 1]), vec![off], diag_ty.clone());
        let zero = self.scalar(inst, float(dtype, 0.0), &diag_ty);
        let ok_ty = diag_ty.with_dtype(DType::Bool);
        let ok = self.emit_tmp(
            inst,
            "ok",
            Op::Compare(CompareDir::Gt),
            vec![diag, zero],
            ok_ty,
        );
        // `j + 1` where the diagonal fails, `n + 1` where it holds; the least of them.
        let idx_ty = diag_ty.with_dtype(DType::I32);
        let j = self.emit_tmp(inst, "j", Op::Iota { dim: r - 2 }, vec![], idx_ty.clone());
        let one = self.scalar(inst, Scalar::I32(1), &idx_ty);
        let j1 = self.emit_tmp(
            inst,
            "j1",
            Op::Binary(BinaryOp::Add),
            vec![j, one],
            idx_ty.clone(),
        );
        let n1 = i32::try_from(n + 1).map_err(|_| {
            invalid(
                inst.pos,
                format!("%{}: {n} rows is too many for LAPACK", inst.name),
            )
        })?;
        let none = self.scalar(inst, Scalar::I32(n1), &idx_ty);
        let idx = self.emit_tmp(inst, "idx", Op::Select, vec![ok, none, j1], idx_ty);
        let info_ty = TensorType::new(DType::I32, batch);
        let first = self.emit_tmp(inst, "first", min(vec![r - 2]), vec![idx], info_ty.clone());
        let n_v = self.scalar(inst, Scalar::I32(n1 - 1), &info_ty);
        let bad_ty = info_ty.with_dtype(DType::Bool);
        let dir = CompareDir::Le;
        let bad = self.emit_tmp(inst, "bad", Op::Compare(dir), vec![first, n_v], bad_ty);
        let zero_i = self.scalar(inst, Scalar::I32(0), &info_ty);
        let info = self.emit_tmp(inst, "info", Op::Select, vec![bad, first, zero_i], info_ty);
        self.check_tree(inst, Tree::Tuple(vec![Tree::Leaf(out), Tree::Leaf(info)]))
    }

    /// `trsm`: `triangular_solve` with LAPACK's options (alpha is 1 in the typed-FFI call).
    fn trsm(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, b) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let o = TriangularSolve {
            left_side: self.lapack_option(inst, "side", b"LR")? == b'L',
            lower: self.lapack_option(inst, "uplo", b"LU")? == b'L',
            transpose_a: self.lapack_option(inst, "trans_x", b"NTC")? != b'N',
            unit_diagonal: self.lapack_option(inst, "diag", b"NU")? == b'U',
        };
        let (aty, bty) = (self.f.ty(a).clone(), self.f.ty(b).clone());
        let ty = kiln_ir::linalg::triangular_solve(&o, &aty, &bty)
            .map_err(|m| invalid(inst.pos, format!("%{}: {m}", inst.name)))?;
        let x = self.emit(inst, Op::TriangularSolve(o), vec![a, b], ty);
        self.check_tree(inst, Tree::Leaf(x))
    }

    /// `geqrf`: `(geqrf output=0, geqrf output=1)`.
    fn geqrf(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.matrix_type(inst, a, |t| kiln_ir::linalg::geqrf(t, 0))?;
        let outs = self.each_output(inst, a, 2, |output| {
            (Op::Geqrf { output }, kiln_ir::linalg::geqrf(&ty, output))
        });
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// `orgqr`: `householder_product`.
    fn orgqr(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, tau) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let (aty, tty) = (self.f.ty(a).clone(), self.f.ty(tau).clone());
        let ty = kiln_ir::linalg::householder_product(&aty, &tty)
            .map_err(|m| invalid(inst.pos, format!("%{}: {m}", inst.name)))?;
        let q = self.emit(inst, Op::HouseholderProduct, vec![a, tau], ty);
        self.check_tree(inst, Tree::Leaf(q))
    }

    /// `syevd`: `(eigh output=0, eigh output=1, 0)`; `mode` `V` and `N` alike (the vectors
    /// of `N` are not read).
    fn syevd(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.matrix_type(inst, a, |t| kiln_ir::linalg::eigh(t, 0))?;
        self.lapack_option(inst, "mode", b"VN")?;
        let lower = self.lapack_option(inst, "uplo", b"LU")? == b'L';
        let mut outs = self.each_output(inst, a, 2, |output| {
            (
                Op::Eigh { lower, output },
                kiln_ir::linalg::eigh(&ty, output),
            )
        });
        let info_ty = TensorType::new(DType::I32, ty.shape[..ty.rank() - 2].to_vec());
        outs.push(Tree::Leaf(self.scalar(inst, Scalar::I32(0), &info_ty)));
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// `gesdd`: `(a, svd output=0, svd output=1, svd output=2, 0)`.
    fn gesdd(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.matrix_type(inst, a, |t| kiln_ir::linalg::svd(t, true, 0))?;
        let full_matrices = self.lapack_option(inst, "mode", b"ASN")? != b'S';
        let mut outs = vec![Tree::Leaf(a)];
        outs.extend(self.each_output(inst, a, 3, |output| {
            let op = Op::Svd {
                full_matrices,
                output,
            };
            (op, kiln_ir::linalg::svd(&ty, full_matrices, output))
        }));
        let info_ty = TensorType::new(DType::I32, ty.shape[..ty.rank() - 2].to_vec());
        outs.push(Tree::Leaf(self.scalar(inst, Scalar::I32(0), &info_ty)));
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// Results `0..count` of a one-operand op with an `output` attribute: `op(j)` gives
    /// the op of result `j` and its type (typed before, on the operand's checked type).
    fn each_output(
        &mut self,
        inst: &Instruction,
        a: Value,
        count: usize,
        op: impl Fn(usize) -> (Op, Result<TensorType, String>),
    ) -> Vec<Tree> {
        (0..count)
            .map(|output| {
                let (op, ty) = op(output);
                let ty = ty.expect("the operand's type was checked");
                Tree::Leaf(self.emit_tmp(inst, &output.to_string(), op, vec![a], ty))
            })
            .collect()
    }

    /// The constant `s` broadcast to `ty`'s shape.
    fn scalar(&mut self, inst: &Instruction, s: Scalar, ty: &TensorType) -> Value {
        let t = Tensor::new(vec![], Buffer::splat(s, 1)).expect("one element, no dimensions");
        let c = self.constant(inst, t);
        self.splat(inst, c, ty)
    }
}

/// `v` as a scalar of the float dtype `dtype` (`f32` or `f64`).
fn float(dtype: DType, v: f64) -> Scalar {
    match dtype {
        DType::F64 => Scalar::F64(v),
        _ => Scalar::F32(v as f32),
    }
}
