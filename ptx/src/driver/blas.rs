//! cuBLAS calls: one `gemm` per product step, its buffers checked against the plan first.

use super::{without_panic, DeviceBuffer, DriverError};
use crate::gemm::GemmPlan;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::CudaStream;
use kiln_ir::DType;
use std::ffi::c_void;
use std::sync::Arc;

pub(super) fn gemm_typed<T>(
    blas: &CudaBlas,
    plan: &GemmPlan,
    (alpha, beta): (T, T),
    a: &DeviceBuffer,
    b: &DeviceBuffer,
    c: &mut DeviceBuffer,
) -> Result<(), DriverError>
where
    CudaBlas: Gemm<T>,
{
    let size = std::mem::size_of::<T>();
    check_fits(plan, (size, size), a, b, c)?;
    let err = gemm_error;
    // SAFETY: the buffers hold `T` values written by the host or by earlier kernels of the
    // same dtype; the lengths were checked above (`transmute` re-checks them).
    let av =
        unsafe { a.slice.transmute::<T>(a.len / size) }.ok_or_else(|| err("left view".into()))?;
    let bv =
        unsafe { b.slice.transmute::<T>(b.len / size) }.ok_or_else(|| err("right view".into()))?;
    let c_len = c.len / size;
    let mut cv =
        unsafe { c.slice.transmute_mut::<T>(c_len) }.ok_or_else(|| err("output view".into()))?;
    let cfg = GemmConfig {
        transa: op(plan.trans_a),
        transb: op(plan.trans_b),
        m: plan.m,
        n: plan.n,
        k: plan.k,
        alpha,
        lda: plan.lda,
        ldb: plan.ldb,
        beta,
        ldc: plan.ldc,
    };
    // SAFETY: every element the call touches lies inside the views (checked above against
    // `GemmPlan::extents` and the output size); the output does not alias the operands
    // (it is a scratch buffer of its own).
    // A missing cuBLAS symbol panics inside cudarc; it becomes this call's error.
    let r = without_panic(|| unsafe {
        if plan.batch == 1 {
            blas.gemm(cfg, &av, &bv, &mut cv)
        } else {
            blas.gemm_strided_batched(
                StridedBatchedConfig {
                    gemm: cfg,
                    batch_size: plan.batch,
                    stride_a: plan.stride_a,
                    stride_b: plan.stride_b,
                    stride_c: plan.stride_c,
                },
                &av,
                &bv,
                &mut cv,
            )
        }
    })
    .map_err(|why| err(format!("libcublas is unusable: {why}")))?;
    r.map_err(|e| err(format!("{e:?}")))
}

/// A failed cuBLAS call.
pub(super) fn gemm_error(message: String) -> DriverError {
    DriverError::Cuda {
        step: "calling cuBLAS".into(),
        message,
    }
}

/// cuBLAS's transpose flag.
fn op(transpose: bool) -> cudarc::cublas::sys::cublasOperation_t {
    if transpose {
        cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T
    } else {
        cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N
    }
}

/// Whether every element `plan` touches lies inside the buffers, for operand and result
/// elements of `sizes` bytes.
fn check_fits(
    plan: &GemmPlan,
    (size, c_size): (usize, usize),
    a: &DeviceBuffer,
    b: &DeviceBuffer,
    c: &DeviceBuffer,
) -> Result<(), DriverError> {
    let (need_a, need_b) = plan.extents();
    let need_c = plan.batch.max(0) as usize * plan.m.max(0) as usize * plan.n.max(0) as usize;
    if need_a * size > a.len || need_b * size > b.len || need_c * c_size > c.len {
        return Err(gemm_error(format!(
            "gemm {plan:?} does not fit its buffers ({}, {}, {} bytes)",
            a.len, b.len, c.len
        )));
    }
    Ok(())
}

/// A product of 16-bit (`f16`/`bf16`) operands into `f32`: `cublasGemmStridedBatchedEx`
/// (GemmEx's batched form) with `CUBLAS_COMPUTE_32F` — the exact products
/// accumulated in `f32`, what the interpreter's GEMM computes on the widened operands (up to
/// the order of the sum, as every GPU product). cuBLAS picks tensor cores for these types
/// where the GPU has them. `alpha = 1`, `beta = 0`, passed as `f32` as the compute type
/// requires.
pub(super) fn gemm_half(
    blas: &CudaBlas,
    stream: &Arc<CudaStream>,
    plan: &GemmPlan,
    a: &DeviceBuffer,
    b: &DeviceBuffer,
    c: &mut DeviceBuffer,
) -> Result<(), DriverError> {
    use cudarc::cublas::{result, sys};
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    let ty = match (plan.operands, plan.dtype) {
        (DType::F16, DType::F32) => sys::cudaDataType_t::CUDA_R_16F,
        (DType::Bf16, DType::F32) => sys::cudaDataType_t::CUDA_R_16BF,
        (x, y) => return Err(gemm_error(format!("no 16-bit gemm of {x} into {y}"))),
    };
    let c_ty = sys::cudaDataType_t::CUDA_R_32F;
    check_fits(plan, (2, 4), a, b, c)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let alpha = (&alpha as *const f32).cast::<c_void>();
    let beta = (&beta as *const f32).cast::<c_void>();
    let compute = sys::cublasComputeType_t::CUBLAS_COMPUTE_32F;
    let algo = sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
    let handle = *blas.handle();
    let (ap, _a_done) = a.slice.device_ptr(stream);
    let (bp, _b_done) = b.slice.device_ptr(stream);
    let (cp, _c_done) = c.slice.device_ptr_mut(stream);
    let (ap, bp) = (ap as *const c_void, bp as *const c_void);
    let cp = cp as *mut c_void;
    let p = *plan;
    // SAFETY: the handle is bound to `stream`, on which the buffers are used; every element
    // the call touches lies inside them (`check_fits`, for 2-byte operands and a 4-byte
    // result); `alpha` and `beta` point at live `f32`s (`CUBLAS_COMPUTE_32F`'s scale type);
    // the output does not alias the operands (it is a scratch buffer of its own). A missing
    // cuBLAS symbol panics inside cudarc; it becomes this call's error. One strided-batched
    // call serves a single product too (`batch` 1, strides unused).
    let r = without_panic(|| unsafe {
        result::gemm_strided_batched_ex(
            handle,
            op(p.trans_a),
            op(p.trans_b),
            p.m,
            p.n,
            p.k,
            alpha,
            ap,
            ty,
            p.lda,
            p.stride_a,
            bp,
            ty,
            p.ldb,
            p.stride_b,
            beta,
            cp,
            c_ty,
            p.ldc,
            p.stride_c,
            p.batch,
            compute,
            algo,
        )
    })
    .map_err(|why| gemm_error(format!("libcublas is unusable: {why}")))?;
    r.map_err(|e| gemm_error(format!("{e:?}")))
}
