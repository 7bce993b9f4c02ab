//! Kiln's reference interpreter: the semantics of every op of [`kiln_ir::Op`], the fallback
//! path that users run on when a cluster is not compiled, and the oracle the compiled
//! backends are tested against.
//!
//! Semantics follow XLA (see each module): float `max`/`min` propagate NaN, integer ops
//! wrap, integer division by zero gives -1 and remainder by zero the dividend, reductions
//! use the canonical order of [`reduce`] (design.md, Invariant 2) and transcendental
//! functions come from `kiln_math` (Invariant 1). Results never depend on the thread count.
//!
//! It is built to be fast, not a strawman: each op dispatches on op and dtype once and runs
//! a monomorphised loop over slices, large tensors are split across the interpreter's own
//! thread pool, and `dot_general` calls a tuned GEMM.
//!
//! **Invariant:** this crate reads no environment variables and never runs on rayon's global
//! pool; the caller says how many threads to use, and gets the process's pool of that many
//! ([`shared_pool`]).

#![warn(missing_docs)]

mod bitcast;
mod control;
mod conv;
mod convert;
mod dot;
mod elementwise;
mod error;
mod extremum;
mod float16;
mod gather;
mod half_binary;
mod half_block;
mod hw;
mod linalg;
mod movement;
mod par;
mod planned;
mod random;
pub mod reduce;
mod run;
mod scalar;
mod scatter;
mod shape;
mod sorting;
mod sums;
mod window;
mod xla_elementwise;
#[cfg(target_arch = "x86_64")]
mod ymm;

pub use conv::direct_convolution;
pub use elementwise::{
    math_f32, math_f64, math_shifted_f32, math_shifted_f64, scalar_f32, scalar_f64,
    scalar_shifted_f32, scalar_shifted_f64, MATH_OPS, SCALAR_OPS, SHIFTED_SCALAR_OPS,
};
pub use error::InterpError;
pub use extremum::{extremum_f32, extremum_f64, scalar_extremum_f32, scalar_extremum_f64};
pub use half_binary::{binary_round_block, binary_round_pack_block, HalfOperand, HALF_BINARY_OPS};
pub use half_block::{pack_f16_block, round_half_block, widen_f16_block};
/// A zero-filled host buffer allocated the way the interpreter allocates its outputs (large
/// ones on transparent huge pages, as numpy does): use it for large inputs that ops will
/// stream through, so that they read as fast as the interpreter's own results.
pub use hw::{
    check_allocation, filled_buffers, prefers_512_bit_vectors, retain_freed_memory, wide_simd,
    widest_simd, with_512_bit_vectors, zeroed_buffer,
};
pub use planned::PlannedOp;
pub use reduce::canonical_reduce_ref;
pub use run::{last_uses, LastUse, RunStats};
pub use sums::{sum_into_lanes, sum_row, SquareRounding, SumRow};

use kiln_ir::typecheck::infer;
use kiln_ir::{Op, Tensor, TensorType, UnaryOp};
use std::sync::{Arc, Mutex, Weak};

/// The process's worker pool of `threads` threads (0: one per available core), shared by
/// every [`Interpreter`] and every compiled executable that asks for the same count, as XLA
/// runs everything on one intra-op pool. A program that alternates fallback ops and
/// compiled clusters then stays on the same warm threads, and a model with many clusters
/// starts `threads` workers, not `threads` per cluster. The pool ends when the last user
/// drops it.
pub fn shared_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, InterpError> {
    static POOLS: Mutex<Vec<(usize, Weak<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let threads = match threads {
        // Asked of the OS (affinity, cgroups), never of an environment variable.
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // A poisoned registry still holds valid weak pointers: a panic cannot leave it torn.
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    pools.retain(|(_, p)| p.strong_count() > 0);
    if let Some(pool) = pools
        .iter()
        .find(|(n, _)| *n == threads)
        .and_then(|(_, p)| p.upgrade())
    {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("kiln-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| InterpError::ThreadPool {
            threads,
            reason: e.to_string(),
        })?;
    pools.push((threads, Arc::downgrade(&pool)));
    Ok(pool)
}

/// The interpreter: evaluates ops and functions on host tensors, on the process's pool of
/// its thread count ([`shared_pool`]).
#[derive(Debug)]
pub struct Interpreter {
    pool: Arc<rayon::ThreadPool>,
}

impl Interpreter {
    /// An interpreter running on `threads` threads; 0 means one per available core.
    pub fn new(threads: usize) -> Result<Interpreter, InterpError> {
        Ok(Interpreter {
            pool: shared_pool(threads)?,
        })
    }

    /// Number of threads in the pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Evaluates one op on `args`, producing a tensor of type `result`.
    ///
    /// The operand types and `result` are checked against the op's typing rule first, so an
    /// ill-typed call is an error, never a panic.
    pub fn eval(
        &self,
        op: &Op,
        args: &[&Tensor],
        result: &TensorType,
    ) -> Result<Tensor, InterpError> {
        let err = |message: String| InterpError::Op {
            op: op.name(),
            message,
        };
        let types: Vec<TensorType> = args.iter().map(|t| t.ty()).collect();
        let type_refs: Vec<&TensorType> = types.iter().collect();
        infer(op, &type_refs, Some(result)).map_err(err)?;
        if let Op::Cluster(c) = op {
            // A one-result cluster (the typing rule checked that): its region, op by op.
            let (mut outs, _) = self.run_refs(&c.body, args)?;
            return outs
                .pop()
                .ok_or_else(|| err("the region yields nothing".into()));
        }
        if let Op::While(_) | Op::Conditional(_) = op {
            // A one-result loop or conditional (the typing rule checked that).
            let mut outs = self.eval_all(op, args, std::slice::from_ref(result))?;
            return outs
                .pop()
                .ok_or_else(|| err("the op yields nothing".into()));
        }
        // The typing rule does not bound sizes; an unaddressable type is too large anyway.
        let bytes = match result.is_addressable() {
            true => result.num_elements() * result.dtype.size_bytes(),
            false => usize::MAX,
        };
        hw::check_allocation(bytes).map_err(|bytes| InterpError::OutOfMemory {
            ty: result.clone(),
            bytes,
        })?;
        let buffer = if runs_inline(op, args, result) {
            eval_checked(op, args, result)
        } else {
            self.pool.install(|| eval_checked(op, args, result))
        }
        .map_err(err)?;
        Tensor::new(result.shape.clone(), buffer).map_err(|e| err(e.to_string()))
    }
}

impl Interpreter {
    /// `dynamic_update_slice` of `target` written into `target` itself: for a caller that
    /// owns the operand and will not read it again (a loop's carried sequence updated at
    /// step `t`), the result of [`Interpreter::eval`] on `[target, args…]` without copying
    /// the operand. `args` are the update and the start indices; they are checked by the
    /// op's typing rule first, so a bad call is an error and leaves `target` unchanged.
    pub fn update_slice_in_place(
        &self,
        target: &mut Tensor,
        args: &[&Tensor],
    ) -> Result<(), InterpError> {
        let op = Op::DynamicUpdateSlice;
        let err = |message: String| InterpError::Op {
            op: op.name(),
            message,
        };
        let result = target.ty();
        let types: Vec<TensorType> = args.iter().map(|t| t.ty()).collect();
        let type_refs: Vec<&TensorType> = std::iter::once(&result).chain(&types).collect();
        infer(&op, &type_refs, Some(&result)).map_err(err)?;
        movement::dynamic_update_slice_in_place(target, args).map_err(err)
    }
}

/// Whether `op` runs on the calling thread instead of in the pool. Handing an op to the
/// pool from outside it wakes a worker and blocks the caller on a latch (tens of µs on a
/// loaded machine), more than a small op costs — the per-call cost of small programs. Only
/// ops whose every parallel path is gated below these sizes qualify (elementwise,
/// movement and reductions below [`par::PAR_MIN`] elements, random numbers below one
/// task of `kiln_rng`'s, products and convolutions below [`dot::PAR_FLOPS`] multiply-adds,
/// whose parallel loops run serially off the pool, see [`par::for_chunks`]), and ops whose
/// code has no parallel path at all (gather, scatter, windows, sort, dynamic slices, …) at
/// any size, so running them here never reaches another pool. The result is the same either way: no op's bits depend
/// on the thread that computes them.
fn runs_inline(op: &Op, args: &[&Tensor], result: &TensorType) -> bool {
    if rayon::current_thread_index().is_some() {
        return false; // already on a pool's thread: `install` is a plain call (or needed)
    }
    let elements = args.iter().map(|a| a.data().len()).sum::<usize>() + result.num_elements();
    match op {
        Op::Unary(_)
        | Op::Binary(_)
        | Op::Compare(_)
        | Op::Select
        | Op::Convert
        | Op::BroadcastInDim { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::Slice { .. }
        | Op::Concat { .. }
        | Op::Pad { .. }
        | Op::Constant(_)
        | Op::Iota { .. }
        | Op::Reduce { .. }
        | Op::CompareTotalOrder(_)
        | Op::BitcastConvert => elements < par::PAR_MIN,
        // Serial at every size (no parallel path): the pool would only add the hand-off.
        Op::Reverse { .. }
        | Op::DynamicSlice { .. }
        | Op::DynamicUpdateSlice
        | Op::PadGeneral { .. }
        | Op::Gather(_)
        | Op::Scatter { .. }
        | Op::ReduceWindow { .. }
        | Op::SelectAndScatter { .. }
        | Op::Sort { .. }
        | Op::ArgReduce { .. }
        | Op::Cholesky { .. }
        | Op::TriangularSolve(_)
        | Op::Lu { .. }
        | Op::Geqrf { .. }
        | Op::HouseholderProduct
        | Op::Eigh { .. }
        | Op::Svd { .. } => true,
        Op::Random { .. } => result.num_elements() <= 4096,
        Op::Convolution(_) | Op::DotGeneral(_) => {
            !contraction_is_parallel(op, args[0].shape(), args[1].data().len(), result)
        }
        _ => false,
    }
}

/// Whether a matrix product or convolution (`op`) with a left operand of shape `lhs`, a
/// right one of `rhs_elements` elements and result type `result` runs on the pool's
/// threads (enough multiply-adds), rather than on the calling thread; false for other ops.
/// A caller that runs many such steps moves onto the pool once instead of handing each
/// over (the compiled CPU executable).
pub fn contraction_is_parallel(
    op: &Op,
    lhs: &[usize],
    rhs_elements: usize,
    result: &TensorType,
) -> bool {
    let flops = match op {
        Op::Convolution(c) => {
            // Multiply-adds: each output element sums the kernel's window times the
            // input features of its group.
            let features = result.shape.get(c.dims.out_feature).copied().unwrap_or(1);
            let per_output = rhs_elements / features.max(1);
            result.num_elements().saturating_mul(per_output)
        }
        Op::DotGeneral(d) => {
            let contracted: usize = d.lhs_contract.iter().map(|&i| lhs[i]).product();
            result.num_elements().saturating_mul(contracted)
        }
        _ => return false,
    };
    flops >= dot::PAR_FLOPS
}

/// Evaluates a well-typed op; the result buffer has `result`'s dtype and element count.
fn eval_checked(op: &Op, args: &[&Tensor], result: &TensorType) -> Result<kiln_ir::Buffer, String> {
    if let Some(out) = float16::eval_in_f32(op, args, result, eval_checked) {
        return out;
    }
    let data = |i: usize| args[i].data();
    Ok(match op {
        Op::Constant(t) => hw::copy_buffer(t.data()),
        Op::Iota { dim } => shape::iota(result, *dim)?,
        Op::Unary(u) if UnaryOp::INTERPRETED.contains(u) => xla_elementwise::unary(*u, data(0))?,
        Op::Unary(u) => elementwise::unary(*u, data(0))?,
        Op::Binary(b) if xla_elementwise::handles_binary(*b, args[0].dtype()) => {
            xla_elementwise::binary(*b, data(0), data(1))?
        }
        Op::Binary(b) => elementwise::binary(*b, data(0), data(1))?,
        Op::Compare(dir) => elementwise::compare(*dir, data(0), data(1))?,
        Op::CompareTotalOrder(dir) => xla_elementwise::compare_total_order(*dir, data(0), data(1))?,
        Op::BitcastConvert => bitcast::bitcast_convert(data(0), result.dtype)?,
        Op::Sort {
            dim,
            keys,
            dir,
            order,
            output,
        } => sorting::sort(args, *dim, *keys, *dir, *order, *output)?,
        Op::ArgReduce { kind, axes, output } => sorting::arg_reduce(args, *kind, axes, *output)?,
        Op::Cholesky { lower } => linalg::cholesky(args[0], *lower)?,
        Op::Lu { output } => linalg::lu(args[0], *output)?,
        Op::Geqrf { output } => linalg::geqrf(args[0], *output)?,
        Op::HouseholderProduct => linalg::householder_product(args[0], args[1])?,
        Op::Eigh { lower, output } => linalg::eigh(args[0], *lower, *output)?,
        Op::Svd {
            full_matrices,
            output,
        } => linalg::svd(args[0], *full_matrices, *output)?,
        Op::TriangularSolve(o) => linalg::triangular_solve(args[0], args[1], o)?,
        Op::Select => elementwise::select(data(0), data(1), data(2))?,
        Op::Convert => convert::convert(data(0), result.dtype)?,
        Op::BroadcastInDim { dims } => shape::broadcast_in_dim(args[0], dims, &result.shape)?,
        Op::Reshape => hw::copy_buffer(data(0)),
        Op::Transpose { perm } => shape::transpose(args[0], perm)?,
        Op::Slice { start, stride, .. } => shape::slice(args[0], start, stride, &result.shape)?,
        Op::Concat { axis } => shape::concat(args, *axis, result)?,
        Op::Pad { low, .. } => shape::pad(args[0], args[1], low, result)?,
        // Regions run through `Interpreter::run_refs` (see `eval`), never as one kernel.
        Op::Cluster(c) => return Err(format!("@{} is a region, not a kernel", c.name)),
        Op::While(_) | Op::Conditional(_) => {
            return Err(format!("{} runs regions, not a kernel", op.name()))
        }
        Op::Random { dist, alg } => random::random(*dist, *alg, data(0), result)?,
        Op::Reduce { kind, axes } => reduce::reduce(*kind, data(0), args[0].shape(), axes)?,
        Op::DotGeneral(d) => dot::dot_general(args[0], args[1], d)?,
        Op::Reverse { dims } => movement::reverse(args[0], dims)?,
        Op::DynamicSlice { sizes } => movement::dynamic_slice(args, sizes)?,
        Op::DynamicUpdateSlice => movement::dynamic_update_slice(args)?,
        Op::PadGeneral { low, interior, .. } => {
            movement::pad_general(args[0], args[1], low, interior, &result.shape)?
        }
        Op::Convolution(c) => conv::convolution(args[0], args[1], c, &result.shape)?,
        Op::ReduceWindow { kind, window } => {
            window::reduce_window(*kind, args[0], args[1], window, &result.shape)?
        }
        Op::SelectAndScatter {
            select,
            scatter,
            window,
        } => window::select_and_scatter(*select, *scatter, args, window)?,
        Op::Gather(d) => gather::gather(args[0], args[1], d, &result.shape)?,
        Op::Scatter { dims, combine } => {
            scatter::scatter(args[0], args[1], args[2], dims, *combine)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pool_per_thread_count_while_in_use() {
        // Counts no other test here asks for.
        let a = shared_pool(11).unwrap();
        let b = shared_pool(11).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 11);
        let c = shared_pool(13).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.current_num_threads(), 13);
        let interp = Interpreter::new(11).unwrap();
        assert!(Arc::ptr_eq(&a, &interp.pool));
        assert_eq!(interp.threads(), 11);
        // Dropped by every user: the next caller gets a new pool.
        let weak = Arc::downgrade(&c);
        drop(c);
        assert!(weak.upgrade().is_none());
        assert_eq!(shared_pool(13).unwrap().current_num_threads(), 13);
    }

    #[test]
    fn zero_threads_means_one_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(shared_pool(0).unwrap().current_num_threads(), cores);
    }
}
