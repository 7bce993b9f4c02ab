//! The kernel-IR → PTX emitter: one PTX module per lowered cluster ([`Program`]), one
//! `.entry` per [`Kernel`](kiln_compiler::kernel::Kernel), and a [`KernelLaunch`] per entry
//! telling a runtime how to call it.
//!
//! [`emit_program`] first schedules (`crate::schedule`: thread mapping, suggested launch,
//! vector groups, unrolling, row fusion and its prefetches, index width, values computed
//! once per thread, point or row), then renders each scheduled kernel: `state.rs` (the
//! emitter's state, register helpers), `ops.rs` (the op tables), `nodes.rs` (a node's
//! value at a point), `loops.rs` (loop skeletons), `memory.rs` (addresses, loads,
//! stores), `kernel.rs` (an entry per kernel), `reduce.rs` (the canonical reduction),
//! `rows.rs` (the row-fused entry). The renderer decides nothing the schedule decides.
//!
//! # Semantics (bit for bit those of `kiln_interp` and the Cranelift backend)
//!
//! - Float math goes through [`PtxArith`](crate::PtxArith) (exactly-rounded `.rn` forms
//!   only), transcendentals through the generic `kiln_math` functions instantiated over it
//!   (design.md, Invariant 1); never `.approx`, never `.ftz`, never a contraction ptxas
//!   could make on its own.
//! - Integers wrap; integer division follows XLA (`x / 0 = -1`, `x % 0 = x`, `MIN / -1 =
//!   MIN`, `MIN % -1 = 0`) through a safe divisor and selects, so no division is undefined.
//! - `convert` follows `kiln_interp` (Rust `as`): float → int truncates and saturates, NaN →
//!   0; int → float and f64 → f32 round to nearest even; int ↔ int wraps; `!= 0` to bool.
//! - Reductions follow the canonical order of Invariant 2 exactly: one *warp per kept point*;
//!   lane `l` folds elements `l, l + 32, …` of a chunk (≤ 4096 elements) in index order into
//!   its accumulator, then the tree `p[j] = op(p[j], p[j + s])`, `s = 16 … 1`, is a
//!   `shfl.sync.down` by `s` (lane `j < s` receives lane `j + s`'s partial — exactly the
//!   tree). Longer sequences: each chunk's result (lane 0, broadcast with `shfl.sync.idx`)
//!   is folded into lane `c mod 32` of a second accumulator set, which gets the same tree.
//!   No atomics, nothing that depends on the launch shape.
//!
//! # Row fusion (one warp per row)
//!
//! When the kernel IR's [`kiln_compiler::kernel::row_fusion`] says that every kernel of a
//! program iterates over the same leading (row) dimension and reads each scratch buffer only within
//! its own row (softmax, log-softmax, layer norm), and each warp's row of every temporary
//! fits in [`FUSED_SMEM`] bytes of shared memory, the program becomes ONE entry
//! ([`Mapping::WarpPerRow`]): each warp owns one row at a time (a grid-stride loop over
//! rows, [`Mapping::WarpPerRow::warps`] warps per block) and runs all kernels for that row
//! in program order. Temporaries live in a kernel-scope static `.shared` array, one slab per
//! warp, instead of global memory; inputs and outputs stay global. A pointwise kernel's row
//! is covered lane-strided (lane `l` takes row points `l, l + 32, …`); a reduction kernel's
//! kept points of the row are reduced one after another by the whole warp with exactly the
//! canonical order above (the same emission code), lane 0 storing the result (and any
//! fused epilogue) — the broadcast to the row is the following `bar.warp.sync` and shared
//! loads. Every kernel step ends with `bar.warp.sync -1` (memory ordering among the warp's
//! lanes), so a kernel reads other lanes' shared writes only after they are complete, and
//! the next row overwrites the slab only after every lane finished reading it. Warps whose
//! index in the block is ≥ `warps` (a larger block than suggested) do nothing, so any block
//! (a multiple of 32) and any grid are correct. The values computed are the multi-kernel
//! emission's bit for bit: same nodes, same reduction order, only the temporaries move.
//!
//! # Launch contract
//!
//! Every entry takes one `.u64` global pointer per [`KernelLaunch::params`] entry, in that
//! order, and nothing else (shapes are baked in). Every kernel is a grid-stride loop, so any
//! grid size is correct; [`KernelLaunch::grid`] is a suggestion. `block` must be a multiple
//! of 32 for [`Mapping::WarpPerPoint`] and [`Mapping::WarpPerRow`] kernels (whole warps take
//! part in the shuffles). Fill kernels ([`PtxProgram::fills`], one per [`Program::fills`]
//! entry) run first, then kernels in program order — or, for a row-fused program, its one
//! entry, which reads no temporaries from global memory (they are not parameters);
//! [`Program::dots`] (matrix products) are not emitted here:
//! the runtime runs each before kernel `before` (cuBLAS / the GEMM routine).
//! Bool buffers hold one byte per element (0 or 1), like host buffers.
//!
//! # Index arithmetic and vectorised pointwise kernels
//!
//! - **32-bit indices.** When every buffer, iteration space and reduction of a program has
//!   fewer than 2^31 elements and interval arithmetic over the loop variables' ranges shows
//!   that every index expression — each intermediate included — stays in `i32`
//!   (`narrow_indices`), coordinates and index maps are computed in `.u32`/`.s32`
//!   (`div.u32`/`rem.u32`, no 64-bit division) and widened only to form a byte address
//!   (`mul.wide.s32`) or to hand an index to the random-number counter math, which stays
//!   `kiln_rng`'s 64-bit code. Otherwise everything is 64-bit, as before; the values are
//!   the same either way. A narrow pointwise loop counter is `.b32`: the thread's start and
//!   the grid stride are first clamped to the loop's end, so `i + stride` cannot overflow.
//! - **Vectorised pointwise kernels.** A [`Mapping::Pointwise`] kernel (not row-fused)
//!   whose stores are all of 4-byte dtypes (`f32`/`i32`/`u32`), and which loads no buffer it
//!   stores, handles four consecutive points per thread in a grid-stride loop over the
//!   `points / 4` groups: each load whose offset is the point's linear index plus a
//!   multiple of 4 (4-byte dtype) is one `ld.global.v4` per group, each store one
//!   `st.global.v4` (16-byte aligned: buffers are allocated 256-byte aligned). The store
//!   values are evaluated lane by lane with exactly the scalar loop's nodes (the same
//!   [`PtxArith`](crate::PtxArith) / `kiln_math` sequence, the lane's own coordinates), so
//!   bits cannot change; other loads (broadcasts, transposes, slices, …) stay scalar
//!   loads per lane. The last `points % 4` points are a scalar grid-stride tail starting at the first point
//!   after the groups, so every point is computed exactly once for any launch.
//!   [`Mapping::WarpPerPoint`] and [`Mapping::WarpPerRow`] entries are not vectorised.
//!
//! Float `rem` is the exact `fmod` of `crate::fmod`: a data-dependent PTX loop (long
//! division on the significands), the one place a kernel's element code branches.

mod half;
mod kernel;
mod loops;
mod memory;
mod nodes;
mod ops;
mod reduce;
mod rows;
mod state;
mod types;

pub use crate::program::{entry_name, EmitError, KernelLaunch, Mapping, PtxProgram};
pub use crate::schedule::{
    gpu_program, grid_for, FUSED_SMEM, MAX_GRID, POINTS_PER_THREAD, SPLIT_BELOW_POINTS,
};

use crate::module::{emit_module, Target};
use crate::schedule::{fill_kernel, narrow_indices, plan_kernel, plan_rows};
use kiln_compiler::kernel::{Program, MAX_MATH_OPS};
use state::Emitter;

/// Emits every kernel of `p` into one module for `target`, and each of its random fills
/// ([`Program::fills`]) as a pointwise kernel over the fill's output: each scheduled
/// (`crate::schedule`), then rendered.
pub fn emit_program(p: &Program, target: Target) -> Result<PtxProgram, EmitError> {
    kiln_compiler::kernel::verify_program(p).map_err(|e| EmitError::Malformed {
        kernel: e.at,
        reason: e.reason,
    })?;
    if let Some(k) = p.kernels.iter().find(|k| k.math_ops() > MAX_MATH_OPS) {
        return Err(EmitError::Unsupported {
            kernel: k.name.clone(),
            reason: format!(
                "{} transcendental ops (at most {MAX_MATH_OPS} are emitted per kernel)",
                k.math_ops()
            ),
        });
    }
    let mut entries = Vec::with_capacity(p.fills.len() + p.kernels.len());
    let mut fills = Vec::with_capacity(p.fills.len());
    let fill_kernels = p
        .fills
        .iter()
        .enumerate()
        .map(|(i, f)| fill_kernel(p, i, f))
        .collect::<Result<Vec<_>, _>>()?;
    let narrow = narrow_indices(p, &fill_kernels);
    for (i, k) in fill_kernels.iter().enumerate() {
        let plan = plan_kernel(p, k)?;
        let entry = entry_name(&p.name, &k.name);
        let (kernel, launch) = Emitter::new(p, k, narrow).kernel(entry, i, &plan)?;
        entries.push(kernel);
        fills.push(launch);
    }
    let mut launches = Vec::with_capacity(p.kernels.len());
    if let Some(rows) = plan_rows(p) {
        // Falls back to one entry per kernel on any refusal (which then reports it).
        if let Ok((kernel, launch)) = Emitter::new(p, &p.kernels[0], narrow).fused(&rows) {
            entries.push(kernel);
            launches.push(launch);
            return Ok(PtxProgram {
                name: p.name.clone(),
                target,
                text: emit_module(target, &entries),
                fills,
                kernels: launches,
            });
        }
    }
    for (i, k) in p.kernels.iter().enumerate() {
        let plan = plan_kernel(p, k)?;
        let entry = entry_name(&p.name, &k.name);
        let (kernel, launch) = Emitter::new(p, k, narrow).kernel(entry, i, &plan)?;
        entries.push(kernel);
        launches.push(launch);
    }
    Ok(PtxProgram {
        name: p.name.clone(),
        target,
        text: emit_module(target, &entries),
        fills,
        kernels: launches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_compiler::kernel::{BufRef, IExpr, Kernel, Node, NodeKind, Store};
    use kiln_ir::{BinaryOp, DType};

    /// `out0[i] = in0[offset(i)] * 2` over `space`, reading an input of `len` elements.
    fn scale(space: Vec<usize>, len: usize, offset: IExpr) -> Program {
        let f32_of = |n: usize| kiln_ir::TensorType {
            dtype: DType::F32,
            shape: vec![n],
        };
        let points = space.iter().product();
        let node = |kind| Node {
            kind,
            dtype: DType::F32,
        };
        Program {
            name: "t".into(),
            inputs: vec![f32_of(len)],
            outputs: vec![f32_of(points)],
            temps: vec![],
            consts: vec![],
            kernels: vec![Kernel {
                name: "k0".into(),
                space,
                nodes: vec![
                    node(NodeKind::Load {
                        buf: BufRef::Input(0),
                        offset,
                    }),
                    node(NodeKind::Const(2.0f32.to_bits() as u64)),
                    node(NodeKind::Binary(BinaryOp::Mul, 0, 1)),
                ],
                reduce: None,
                stores: vec![Store {
                    buf: BufRef::Output(0),
                    value: 2,
                }],
            }],
            dots: vec![],
            fills: vec![],
        }
    }

    fn linear2(cols: i64) -> IExpr {
        IExpr::sum(IExpr::scaled(IExpr::Var(0), cols), IExpr::Var(1))
    }

    #[test]
    fn index_width_is_32_bits_only_when_everything_fits() {
        let small = scale(vec![1000, 37], 37_000, linear2(37));
        assert!(narrow_indices(&small, &[]));
        // More than 2^31 points (and elements): 64-bit.
        let big = scale(
            vec![1 << 16, (1 << 15) + 1],
            1 << 31,
            linear2((1 << 15) + 1),
        );
        assert!(!narrow_indices(&big, &[]));
        // Exactly 2^31 - 1 elements still fit; 2^31 does not.
        let edge = scale(vec![(1 << 31) - 1], (1 << 31) - 1, IExpr::Var(0));
        assert!(narrow_indices(&edge, &[]));
        let over = scale(vec![(1 << 31) - 1], 1 << 31, IExpr::Var(0));
        assert!(!narrow_indices(&over, &[]));
        // Small buffers, but an intermediate index value beyond i32: 64-bit.
        let wide_tmp = IExpr::quot(IExpr::scaled(IExpr::Var(0), 1 << 24), 1 << 24);
        assert!(!narrow_indices(&scale(vec![1000], 1000, wide_tmp), &[]));
        // A 64-bit program's text divides in 64 bits; a narrow one never does.
        let text = |p: &Program| emit_program(p, Target::from_sm(80).unwrap()).unwrap().text;
        let big = text(&big);
        assert!(big.contains("div.u64") && big.contains("rem.u64"), "{big}");
        let small = text(&small);
        assert!(
            !small.contains("div.u64") && !small.contains("rem.u64"),
            "{small}"
        );
        assert!(small.contains("div.u32") && small.contains("mul.wide.s32"));
        // The 32-bit loop counters start and step from values clamped to the loop's end.
        assert!(small.contains("min.u64") && small.contains("setp.ge.u32"));
    }
}
