//! The kernel-IR → PTX emitter: one PTX module per lowered cluster ([`Program`]), one
//! `.entry` per [`Kernel`], and a [`KernelLaunch`] per entry telling a runtime how to call it.
//!
//! # Semantics (bit for bit those of `kiln_interp` and the Cranelift backend)
//!
//! - Float math goes through [`PtxArith`] (exactly-rounded `.rn` forms only), transcendentals
//!   through the generic `kiln_math` functions instantiated over it (design.md, Invariant 1);
//!   never `.approx`, never `.ftz`, never a contraction ptxas could make on its own.
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
//! When the kernel IR's [`kiln_compiler::kernel::row_fusion`] says that every kernel of a program
//! iterates over the same leading (row) dimension and reads each scratch buffer only within
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
//!   [`PtxArith`] / `kiln_math` sequence, the lane's own coordinates), so bits cannot
//!   change; other loads (broadcasts, transposes, slices, …) stay scalar loads per lane.
//!   The last `points % 4` points are a scalar grid-stride tail starting at the first point
//!   after the groups, so every point is computed exactly once for any launch.
//!   [`Mapping::WarpPerPoint`] and [`Mapping::WarpPerRow`] entries are not vectorised.
//!
//! Float `rem` is the exact `fmod` of [`crate::fmod`]: a data-dependent PTX loop (long
//! division on the significands), the one place a kernel's element code branches.

use crate::arith::{Double, PtxArith, PtxFloat, Single};
use crate::module::{emit_module, Body, Kernel as PtxKernel, Label, Reg, RegClass, Target};
use crate::random;
use crate::MathFn;
use kiln_compiler::kernel::{
    buf_dtype, BufRef, IExpr, Kernel, Node, NodeKind, Program, RandomFill, Store, MAX_MATH_OPS,
};
use kiln_compiler::lower::{RED_ZONE, STACK_SEGMENT};
use kiln_ir::{BinaryOp, CompareDir, DType, ReduceKind, UnaryOp};
use kiln_math::{Arith, FloatCC};
use std::fmt::Display;

/// Length of a canonical-order chunk (Invariant 2).
const CHUNK: u64 = kiln_compiler::kernel::CHUNK as u64;
/// Lane accumulators of the canonical order: one warp (a reduction maps lane `l` to the
/// warp's thread `l`).
const LANES: u64 = kiln_compiler::kernel::LANES as u64;
const _: () = assert!(LANES == 32, "the canonical lanes are one warp's threads");
/// Most bytes of a row [`Emitter::prefetch_next_row`] prefetches per input.
const PREFETCH_ROW_BYTES: u64 = 32 << 10;
/// Elements per lane a reduction loop (and a row-fused pointwise loop) evaluates before
/// folding (storing) them, so that many loads are in flight per warp.
const UNROLL: u64 = 8;
/// [`UNROLL`] for a reduction whose value is a plain load (a max or sum of a buffer).
const LOAD_UNROLL: u64 = 32;
/// Points each thread of a pointwise launch covers (one vector group of four, or four
/// grid-stride steps): a grid of one thread per point would leave three quarters of the
/// blocks of a vectorised kernel with nothing to do.
pub const POINTS_PER_THREAD: u64 = 4;
/// Threads per block in the suggested launch.
const BLOCK: u32 = 256;
/// The most blocks the suggested launch uses (the loops cover the rest).
const MAX_GRID: u64 = 1 << 16;
/// Row fusion: the most static shared memory per block for the warps' row temporaries
/// (the static `.shared` limit); larger rows fall back to one entry per kernel.
pub const FUSED_SMEM: u64 = 48 * 1024;
/// Row fusion: the most warps (rows in flight) per block.
const FUSED_WARPS: u64 = 8;
/// The kernel-scope `.shared` array of a row-fused entry.
const SMEM: &str = "row_smem";

/// Why a program could not be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The emitter has no PTX for this (op, dtype) or structure: use the fallback path.
    #[error("kernel {kernel}: unsupported for PTX: {reason}")]
    Unsupported {
        /// The kernel's name (`k0`, …).
        kernel: String,
        /// What is not supported, naming op and dtype.
        reason: String,
    },
    /// The kernel IR is malformed (an operand out of range, mismatched dtypes): a bug in
    /// whatever built it.
    #[error("kernel {kernel}: malformed kernel IR: {reason}")]
    Malformed {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
}

/// How a kernel's threads map onto its iteration space (also stored in the GPU cache entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mapping {
    /// One thread per point, grid-stride loop over `points` (row-major linear index).
    Pointwise {
        /// Number of iteration points.
        points: u64,
    },
    /// One warp (32 lanes) per kept point, each reducing `len` elements in canonical order;
    /// a grid-stride loop over warps.
    WarpPerPoint {
        /// Number of kept points (outputs of the reduction).
        points: u64,
        /// Reduced elements per point.
        len: u64,
    },
    /// Row fusion: one entry for the whole program, one warp per row at a time (a
    /// grid-stride loop over rows) running every kernel of the program for that row, the
    /// temporaries in static shared memory (one slab per warp).
    WarpPerRow {
        /// Number of rows (the program's common leading dimension).
        rows: u64,
        /// Warps per block the shared memory holds slabs for: blocks of more than
        /// `32 * warps` threads are correct, the extra warps idle.
        warps: u32,
    },
}

/// How to launch one emitted entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLaunch {
    /// The `.entry` symbol in [`PtxProgram::text`].
    pub entry: String,
    /// Index of the kernel in [`Program::kernels`] (launch in this order); for a launch in
    /// [`PtxProgram::fills`], the index of the fill in [`Program::fills`].
    pub kernel: usize,
    /// The entry's parameters, in order: one device pointer to each buffer.
    pub params: Vec<BufRef>,
    /// Thread mapping.
    pub mapping: Mapping,
    /// Suggested threads per block (x); always a multiple of 32.
    pub block: u32,
    /// Suggested blocks (x); any value ≥ 1 is correct.
    pub grid: u32,
}

/// A cluster's PTX module and how to launch its kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxProgram {
    /// The cluster name.
    pub name: String,
    /// The target the text declares.
    pub target: Target,
    /// The PTX module text (one `.entry` per kernel).
    pub text: String,
    /// One launch per random fill, in [`Program::fills`] order ([`KernelLaunch::kernel`] is
    /// the fill's index there): run them before [`PtxProgram::kernels`].
    pub fills: Vec<KernelLaunch>,
    /// One launch per kernel, in [`Program::kernels`] order; or, for a row-fused program,
    /// exactly one launch ([`Mapping::WarpPerRow`], [`KernelLaunch::kernel`] 0) that runs
    /// every kernel.
    pub kernels: Vec<KernelLaunch>,
}

impl PtxProgram {
    /// A one-line summary for `TF_CPP_VMODULE=nvptx_compiler=2` logging (as XLA logs PTX
    /// sizes): cluster, kernel count, PTX bytes and target. The caller logs it (this crate
    /// reads no flags).
    pub fn size_summary(&self) -> String {
        format!(
            "{}: {} kernel(s), {} bytes of PTX for sm_{}",
            self.name,
            self.fills.len() + self.kernels.len(),
            self.text.len(),
            self.target.sm
        )
    }
}

/// Kept points below which [`gpu_program`] splits a reduction longer than one canonical
/// chunk in two kernels: with fewer, one warp per point leaves most of the GPU idle.
pub const SPLIT_BELOW_POINTS: usize = 2048;

/// The program a GPU runs for the lowered cluster `p`: `p` with its long reductions over
/// few kept points split in two kernels
/// ([`kiln_compiler::kernel::split_long_reductions`]), so the chunks of the canonical
/// order run in parallel. Emit and launch this program, not `p` (it may have more kernels
/// and scratch buffers).
pub fn gpu_program(p: &Program) -> Program {
    kiln_compiler::kernel::split_long_reductions(p, SPLIT_BELOW_POINTS)
}

/// Emits every kernel of `p` into one module for `target`, and each of its random fills
/// ([`Program::fills`]) as a pointwise kernel over the fill's output.
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
        let entry = entry_name(&p.name, &k.name);
        let (kernel, launch) = Emitter::new(p, k, narrow).kernel(entry, i)?;
        entries.push(kernel);
        fills.push(launch);
    }
    let mut launches = Vec::with_capacity(p.kernels.len());
    if let Some(layout) = row_layout(p) {
        // Falls back to one entry per kernel on any refusal (which then reports it).
        if let Ok((kernel, launch)) = Emitter::new(p, &p.kernels[0], narrow).fused(layout) {
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
        let entry = entry_name(&p.name, &k.name);
        let (kernel, launch) = Emitter::new(p, k, narrow).kernel(entry, i)?;
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

/// Where a row-fused entry keeps each warp's row of every temporary.
#[derive(Debug, Clone)]
struct RowLayout {
    /// The common leading dimension.
    rows: u64,
    /// Per temporary: (byte offset in a warp's slab, elements per row).
    temps: Vec<(u64, u64)>,
    /// Bytes per warp (a multiple of 8).
    slab: u64,
    /// Warps per block.
    warps: u64,
}

/// The shared-memory layout of `p` as one row-fused entry, or `None` when it is not
/// row-fusable ([`kiln_compiler::kernel::row_fusion`]), its rows of temporaries do not fit [`FUSED_SMEM`], a
/// temporary is not exactly one kernel point per element, or a kernel reads an output
/// (written by another lane or row: global memory the fused entry does not order).
fn row_layout(p: &Program) -> Option<RowLayout> {
    let rows = kiln_compiler::kernel::row_fusion(p)?;
    let rows = rows as u64;
    for k in &p.kernels {
        let points = k
            .space
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))?;
        for s in &k.stores {
            if let BufRef::Temp(t) = s.buf {
                if p.temps.get(t)?.num_elements() as u64 != points {
                    return None;
                }
            }
        }
        let reads_output = k.nodes.iter().any(|n| {
            matches!(
                n.kind,
                NodeKind::Load {
                    buf: BufRef::Output(_),
                    ..
                }
            )
        });
        if reads_output || k.space.first().map(|&d| d as u64) != Some(rows) {
            return None;
        }
    }
    let mut temps = Vec::with_capacity(p.temps.len());
    let mut slab = 0u64;
    for t in &p.temps {
        let n = t.num_elements() as u64;
        if !n.is_multiple_of(rows) {
            return None;
        }
        let row = n / rows;
        temps.push((slab, row));
        slab = slab.checked_add(row.checked_mul(u64::from(elem_bytes(t.dtype)))?)?;
        slab = slab.next_multiple_of(8);
    }
    let slab = slab.max(8);
    let warps = (FUSED_SMEM / slab).min(FUSED_WARPS);
    (warps > 0).then_some(RowLayout {
        rows,
        temps,
        slab,
        warps,
    })
}

/// A row-fused entry's per-row state while it emits: the row index and this warp's slab.
#[derive(Debug, Clone)]
struct FusedRow {
    layout: RowLayout,
    /// The current row (`.b64`).
    row: Reg,
    /// The shared address of this warp's slab (`.b64`).
    slab: Reg,
}

/// Fill `i` as a kernel: a pointwise loop over the flat output, each point loading the seed
/// elements and storing the random node at its index (named `fill<i>`; kernels are `k<n>`).
fn fill_kernel(p: &Program, i: usize, f: &RandomFill) -> Result<Kernel, EmitError> {
    let name = format!("fill{i}");
    let malformed = |reason: String| EmitError::Malformed {
        kernel: name.clone(),
        reason,
    };
    let Some(out) = p.outputs.get(f.out) else {
        return Err(malformed(format!("output {} does not exist", f.out)));
    };
    let (seed_dt, seed_len) = match f.seed {
        BufRef::Input(s) if s < p.inputs.len() => (p.inputs[s].dtype, p.inputs[s].num_elements()),
        BufRef::Const(s) if s < p.consts.len() => (p.consts[s].dtype(), p.consts[s].num_elements()),
        b => {
            return Err(malformed(format!(
                "seed buffer {b:?} is not an input or constant"
            )))
        }
    };
    let want = random::seed_len(f.alg);
    if seed_dt != DType::I64 || seed_len != want {
        return Err(malformed(format!(
            "alg={} needs an i64[{want}] seed, got {seed_dt} with {seed_len} elements",
            f.alg.name()
        )));
    }
    let mut nodes: Vec<Node> = (0..want)
        .map(|k| Node {
            kind: NodeKind::Load {
                buf: f.seed,
                offset: IExpr::Const(k as i64),
            },
            dtype: DType::I64,
        })
        .collect();
    let n = out.num_elements();
    let (space, index) = if n == 1 {
        (Vec::new(), IExpr::Const(0))
    } else {
        (vec![n], IExpr::Var(0))
    };
    nodes.push(Node {
        kind: NodeKind::Random {
            dist: f.dist,
            alg: f.alg,
            seed: (0..want).collect(),
            index,
        },
        dtype: out.dtype,
    });
    Ok(Kernel {
        name,
        space,
        stores: vec![Store {
            buf: BufRef::Output(f.out),
            value: nodes.len() - 1,
        }],
        nodes,
        reduce: None,
    })
}

/// The largest element count, iteration space or reduction length (exclusive) for which
/// index arithmetic is done in 32 bits.
const NARROW_LIMIT: u64 = 1 << 31;

/// Whether every index computation of `p` (its kernels and the `fills` kernels) can be done
/// in 32-bit arithmetic with exactly the 64-bit results: every buffer, iteration space and
/// reduction has fewer than 2^31 elements, and every index expression's value — each
/// intermediate included, bounded by interval arithmetic over the loop variables' ranges —
/// lies in `i32` (division operands non-negative, constants `i32`). Otherwise 64-bit.
fn narrow_indices(p: &Program, fills: &[Kernel]) -> bool {
    let small = |n: usize| (n as u64) < NARROW_LIMIT;
    let bufs_ok = p.inputs.iter().all(|t| small(t.num_elements()))
        && p.outputs.iter().all(|t| small(t.num_elements()))
        && p.temps.iter().all(|t| small(t.num_elements()))
        && p.consts.iter().all(|c| small(c.num_elements()));
    bufs_ok && p.kernels.iter().chain(fills).all(kernel_fits_i32)
}

/// [`narrow_indices`] for one kernel.
fn kernel_fits_i32(k: &Kernel) -> bool {
    let Some(points) = k
        .space
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
    else {
        return false;
    };
    let len = k.reduce.as_ref().map_or(1, |r| r.len as u64);
    if points >= NARROW_LIMIT || len >= NARROW_LIMIT {
        return false;
    }
    // Each loop variable's range: kept coordinates, then the reduction's position.
    let mut vars: Vec<(i128, i128)> = k
        .space
        .iter()
        .map(|&d| (0, (d as i128 - 1).max(0)))
        .collect();
    vars.push((0, (len as i128 - 1).max(0)));
    k.nodes.iter().all(|n| match &n.kind {
        NodeKind::Load { offset: e, .. }
        | NodeKind::Index(e)
        | NodeKind::Random { index: e, .. } => iexpr_range(e, &vars).is_some(),
        NodeKind::InRange { e, lo, hi } => {
            iexpr_range(e, &vars).is_some() && fits_i32(*lo as i128) && fits_i32(*hi as i128)
        }
        _ => true,
    })
}

fn fits_i32(v: i128) -> bool {
    i32::try_from(v).is_ok()
}

/// The range `[lo, hi]` of `e`'s value over the loop variables' ranges `vars`, or `None`
/// when it or an intermediate value may leave `i32` (or a division operand may be
/// negative): then 32-bit arithmetic could differ from 64-bit.
fn iexpr_range(e: &IExpr, vars: &[(i128, i128)]) -> Option<(i128, i128)> {
    let (lo, hi) = match e {
        IExpr::Var(v) => *vars.get(*v)?,
        IExpr::Const(c) => (*c as i128, *c as i128),
        IExpr::Add(x, y) => {
            let (a, b) = (iexpr_range(x, vars)?, iexpr_range(y, vars)?);
            (a.0 + b.0, a.1 + b.1)
        }
        IExpr::Mul(x, c) => {
            let (a, c) = (iexpr_range(x, vars)?, *c as i128);
            if !fits_i32(c) {
                return None;
            }
            let (x, y) = (a.0 * c, a.1 * c);
            (x.min(y), x.max(y))
        }
        IExpr::Div(x, c) | IExpr::Rem(x, c) => {
            let (a, c) = (iexpr_range(x, vars)?, *c as i128);
            if a.0 < 0 || c <= 0 || !fits_i32(c) {
                return None;
            }
            if matches!(e, IExpr::Div(..)) {
                (a.0 / c, a.1 / c)
            } else {
                (0, a.1.min(c - 1))
            }
        }
        IExpr::Clamp(x, lo, hi) => {
            let (a, lo, hi) = (iexpr_range(x, vars)?, *lo as i128, *hi as i128);
            if !fits_i32(lo) || !fits_i32(hi) {
                return None;
            }
            (a.0.min(hi).max(lo), a.1.min(hi).max(lo))
        }
    };
    (fits_i32(lo) && fits_i32(hi)).then_some((lo, hi))
}

/// `e` as `Σ coeff[v] · Var(v) + c` when it is affine (no division, remainder or clamp).
fn affine(e: &IExpr, nvars: usize) -> Option<(Vec<i128>, i128)> {
    Some(match e {
        IExpr::Var(v) => {
            let mut c = vec![0; nvars];
            *c.get_mut(*v)? = 1;
            (c, 0)
        }
        IExpr::Const(k) => (vec![0; nvars], *k as i128),
        IExpr::Add(x, y) => {
            let (mut a, ac) = affine(x, nvars)?;
            let (b, bc) = affine(y, nvars)?;
            a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
            (a, ac + bc)
        }
        IExpr::Mul(x, k) => {
            let (a, ac) = affine(x, nvars)?;
            let k = *k as i128;
            (a.into_iter().map(|a| a * k).collect(), ac * k)
        }
        IExpr::Div(..) | IExpr::Rem(..) | IExpr::Clamp(..) => return None,
    })
}

/// The constant `c` when `e` is the row-major linear index of the point in `space` plus
/// `c` (the reduction variable unused).
fn contiguous_offset(e: &IExpr, space: &[usize]) -> Option<i128> {
    let (coeffs, c) = affine(e, space.len() + 1)?;
    let mut stride = 1i128;
    for (d, &size) in space.iter().enumerate().rev() {
        if coeffs[d] != stride && size != 1 {
            return None;
        }
        stride *= size as i128;
    }
    (coeffs[space.len()] == 0).then_some(c)
}

/// A vector operand `{%f1, %f2, %f3, %f4}`.
fn vec4(r: &[Reg; 4]) -> String {
    format!("{{{}, {}, {}, {}}}", r[0], r[1], r[2], r[3])
}

/// A PTX identifier `<cluster>_<kernel>` (anything outside `[A-Za-z0-9_]` becomes `_`).
pub fn entry_name(cluster: &str, kernel: &str) -> String {
    let raw = format!("{cluster}_{kernel}");
    let mut s: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        s.insert(0, '_');
    }
    s
}

/// Position of a buffer in the fixed parameter order: inputs, outputs, temps, constants.
fn slot(p: &Program, b: BufRef) -> usize {
    match b {
        BufRef::Input(i) => i,
        BufRef::Output(i) => p.inputs.len() + i,
        BufRef::Temp(i) => p.inputs.len() + p.outputs.len() + i,
        BufRef::Const(i) => p.inputs.len() + p.outputs.len() + p.temps.len() + i,
    }
}

fn param_name(b: BufRef) -> String {
    match b {
        BufRef::Input(i) => format!("in{i}"),
        BufRef::Output(i) => format!("out{i}"),
        BufRef::Temp(i) => format!("tmp{i}"),
        BufRef::Const(i) => format!("cst{i}"),
    }
}

/// The register class holding a dtype.
fn class(dt: DType) -> RegClass {
    match dt {
        DType::F32 => RegClass::F32,
        DType::F64 => RegClass::F64,
        DType::I32 | DType::U32 => RegClass::B32,
        DType::I64 => RegClass::B64,
        DType::Bool => RegClass::Pred,
    }
}

/// Bytes per element in memory (bool: one byte).
fn elem_bytes(dt: DType) -> u32 {
    match dt {
        DType::F32 | DType::I32 | DType::U32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    }
}

/// The `ld`/`st` type suffix.
fn mem_type(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 | DType::U32 => "u32",
        DType::I64 => "u64",
        DType::Bool => "u8",
    }
}

/// The typed suffix of integer arithmetic (`s32`, `u32`, `s64`) and the bit suffix.
fn int_types(dt: DType) -> (&'static str, &'static str) {
    match dt {
        DType::I32 => ("s32", "b32"),
        DType::U32 => ("u32", "b32"),
        _ => ("s64", "b64"),
    }
}

/// A `b32`/`b64` hexadecimal immediate of `v` in the width of `dt`.
fn int_imm(dt: DType, v: i64) -> String {
    match dt {
        DType::I64 => format!("0x{:016X}", v as u64),
        _ => format!("0x{:08X}", v as u32),
    }
}

/// Integer binary ops that are one instruction: `(op, opcode)` with `{s}` the typed suffix
/// (`s32`/`u32`/`s64`) and `{b}` the bit suffix.
const INT_BINARY: [(BinaryOp, &str); 8] = [
    (BinaryOp::Add, "add.{s}"),
    (BinaryOp::Sub, "sub.{s}"),
    (BinaryOp::Mul, "mul.lo.{s}"),
    (BinaryOp::Max, "max.{s}"),
    (BinaryOp::Min, "min.{s}"),
    (BinaryOp::And, "and.{b}"),
    (BinaryOp::Or, "or.{b}"),
    (BinaryOp::Xor, "xor.{b}"),
];

/// Bool binary ops on predicates.
const BOOL_BINARY: [(BinaryOp, &str); 3] = [
    (BinaryOp::And, "and.pred"),
    (BinaryOp::Or, "or.pred"),
    (BinaryOp::Xor, "xor.pred"),
];

/// `setp` conditions: floats (unordered only for `ne`, as Rust's `!=`), integers.
const COMPARE: [(CompareDir, &str, &str); 6] = [
    (CompareDir::Lt, "lt", "lt"),
    (CompareDir::Le, "le", "le"),
    (CompareDir::Gt, "gt", "gt"),
    (CompareDir::Ge, "ge", "ge"),
    (CompareDir::Eq, "eq", "eq"),
    (CompareDir::Ne, "neu", "ne"),
];

/// Unary ops computed by a generic `kiln_math` function.
const MATH_UNARY: [(UnaryOp, MathFn); 10] = [
    (UnaryOp::Exp, MathFn::Exp),
    (UnaryOp::Expm1, MathFn::Expm1),
    (UnaryOp::Log, MathFn::Log),
    (UnaryOp::Log1p, MathFn::Log1p),
    (UnaryOp::Tanh, MathFn::Tanh),
    (UnaryOp::Logistic, MathFn::Logistic),
    (UnaryOp::Erf, MathFn::Erf),
    (UnaryOp::Sin, MathFn::Sin),
    (UnaryOp::Cos, MathFn::Cos),
    (UnaryOp::Rsqrt, MathFn::Rsqrt),
];

/// Float unary ops over [`PtxArith`]; `None` where the op is not defined on floats.
fn float_unary<T: PtxFloat>(b: &mut Body, u: UnaryOp, x: Reg) -> Option<Reg> {
    if let Some(&(_, f)) = MATH_UNARY.iter().find(|(op, _)| *op == u) {
        return Some(f.apply(&mut PtxArith::<T>::new(b), x, x));
    }
    let a = &mut PtxArith::<T>::new(b);
    Some(match u {
        UnaryOp::Neg => a.neg(x),
        UnaryOp::Abs => a.abs(x),
        UnaryOp::Sqrt => a.sqrt(x),
        UnaryOp::Floor => a.floor(x),
        UnaryOp::Ceil => a.ceil(x),
        UnaryOp::Round => a.round_even(x),
        UnaryOp::Sign => {
            // ±0 and NaN pass through, everything else becomes ±1 (kiln_interp's fsign).
            let zero = a.fconst(0.0);
            let one = a.fconst(1.0);
            let m_one = a.fconst(-1.0);
            let gt = a.fcmp(FloatCC::Gt, x, zero);
            let lt = a.fcmp(FloatCC::Lt, x, zero);
            let r = a.select(lt, m_one, x);
            a.select(gt, one, r)
        }
        _ => return None,
    })
}

/// Float binary ops over [`PtxArith`] (`rem`: the exact `fmod` loop of [`crate::fmod`]);
/// `None` where not defined.
fn float_binary<T: PtxFloat>(b: &mut Body, op: BinaryOp, x: Reg, y: Reg) -> Option<Reg> {
    if op == BinaryOp::Rem {
        return crate::fmod::emit_fmod(b, x, y);
    }
    let a = &mut PtxArith::<T>::new(b);
    Some(match op {
        BinaryOp::Add => a.add(x, y),
        BinaryOp::Sub => a.sub(x, y),
        BinaryOp::Mul => a.mul(x, y),
        BinaryOp::Div => a.div(x, y),
        BinaryOp::Max => a.max(x, y),
        BinaryOp::Min => a.min(x, y),
        BinaryOp::Pow => kiln_math::pow(a, x, y),
        // `None` also for the ops lowering never hands to a backend (`Op::has_compiled_code`).
        _ => return None,
    })
}

/// One kernel's emission state.
struct Emitter<'a> {
    p: &'a Program,
    k: &'a Kernel,
    b: Body,
    bases: Vec<(BufRef, Reg)>,
    memo: Vec<Option<Reg>>,
    reduce_result: Option<Reg>,
    /// Per random node: its stream, set up once before the kernel's loop when its seed is
    /// loop-invariant (as the kernel IR promises; otherwise it is set up per element).
    streams: Vec<Option<random::Stream>>,
    /// Set while emitting a row-fused entry: temporaries are this warp's shared slab.
    fused: Option<FusedRow>,
    /// Index arithmetic in 32 bits ([`narrow_indices`]): loop variables and index
    /// expressions are `.b32`, widened only to form addresses (and random counters).
    narrow: bool,
    /// In a vectorised pointwise group: per load node, the four lanes' values of its
    /// `ld.global.v4`, and the lane being evaluated.
    vec_loads: Vec<Option<[Reg; 4]>>,
    lane: usize,
    /// Per node: a register holding its value for the whole current loop (in a row-fused
    /// pointwise step, the values that depend on the row only, such as the row's max or
    /// `rsqrt(var + eps)`), computed once before the loop; consulted before `memo`, which
    /// is reset per point.
    pinned: Vec<Option<Reg>>,
    /// Set while emitting one position of an unrolled loop body: `(var, delta)`, loop
    /// variable `var` is `delta` past its value at the body's first position. A load whose
    /// offset is affine in `var` then reuses the address computed at the first position
    /// ([`Emitter::disp_base`]) with `delta` times its stride as an immediate displacement.
    disp: Option<(usize, i64)>,
    /// Per load node: its address at the first position of the current unrolled body.
    disp_base: Vec<Option<Reg>>,
}

type R<T> = Result<T, EmitError>;

impl<'a> Emitter<'a> {
    fn new(p: &'a Program, k: &'a Kernel, narrow: bool) -> Self {
        Emitter {
            p,
            k,
            b: Body::new(),
            bases: Vec::new(),
            memo: vec![None; k.nodes.len()],
            reduce_result: None,
            streams: vec![None; k.nodes.len()],
            fused: None,
            narrow,
            vec_loads: Vec::new(),
            lane: 0,
            pinned: vec![None; k.nodes.len()],
            disp: None,
            disp_base: vec![None; k.nodes.len()],
        }
    }

    /// Makes `k` the kernel being emitted (row fusion), with its random streams.
    fn switch_to(&mut self, k: &'a Kernel, streams: Vec<Option<random::Stream>>) {
        self.k = k;
        self.memo = vec![None; k.nodes.len()];
        self.pinned = vec![None; k.nodes.len()];
        self.disp_base = vec![None; k.nodes.len()];
        self.streams = streams;
    }

    fn unsupported<T>(&self, reason: impl Into<String>) -> R<T> {
        Err(EmitError::Unsupported {
            kernel: self.k.name.clone(),
            reason: reason.into(),
        })
    }

    fn malformed<T>(&self, reason: impl Into<String>) -> R<T> {
        Err(EmitError::Malformed {
            kernel: self.k.name.clone(),
            reason: reason.into(),
        })
    }

    fn def(&mut self, class: RegClass, op: &str, srcs: &[&dyn Display]) -> Reg {
        self.b.def(class, op, srcs)
    }

    fn emit(&mut self, op: &str, ops: &[&dyn Display]) {
        self.b.emit(op, ops)
    }

    fn imm64(&mut self, v: u64) -> Reg {
        self.def(RegClass::B64, "mov.u64", &[&v])
    }

    /// The class of index registers: `.b32` when [`Emitter::narrow`], else `.b64`.
    fn ic(&self) -> RegClass {
        if self.narrow {
            RegClass::B32
        } else {
            RegClass::B64
        }
    }

    /// An index-typed opcode: `op.s32`/`op.u32` when narrow, `op.s64`/`op.u64` otherwise
    /// (`ty` is `"s"` or `"u"`).
    fn iop(&self, op: &str, ty: &str) -> String {
        format!("{op}.{ty}{}", if self.narrow { 32 } else { 64 })
    }

    /// The index constant `v` (an `i32` when narrow: [`narrow_indices`] checked it).
    fn imm_idx(&mut self, v: i64) -> Reg {
        if self.narrow {
            self.def(RegClass::B32, "mov.u32", &[&(v as i32 as u32)])
        } else {
            self.imm64(v as u64)
        }
    }

    /// A `.b64` loop counter or linear index as an index register (`cvt.u32.u64` when
    /// narrow: the value is below 2^31).
    fn narrowed(&mut self, r: Reg) -> Reg {
        if self.narrow && r.class == RegClass::B64 {
            self.def(RegClass::B32, "cvt.u32.u64", &[&r])
        } else {
            r
        }
    }

    /// An index register as a `.b64` with the same (signed) value.
    fn widen(&mut self, r: Reg) -> Reg {
        if r.class == RegClass::B32 {
            self.def(RegClass::B64, "cvt.s64.s32", &[&r])
        } else {
            r
        }
    }

    /// The dtype of a buffer, checking that it exists.
    fn buf_dtype(&self, b: BufRef) -> R<DType> {
        let ok = match b {
            BufRef::Input(i) => i < self.p.inputs.len(),
            BufRef::Output(i) => i < self.p.outputs.len(),
            BufRef::Temp(i) => i < self.p.temps.len(),
            BufRef::Const(i) => i < self.p.consts.len(),
        };
        if !ok {
            return self.malformed(format!("buffer {b:?} does not exist"));
        }
        Ok(buf_dtype(self.p, b))
    }

    /// The buffers the kernel touches (stores, then loads, unsorted), checked: each exists
    /// and every store writes a writable buffer of its value's dtype.
    fn kernel_buffers(&self) -> R<Vec<BufRef>> {
        let k = self.k;
        let mut bufs: Vec<BufRef> = k.stores.iter().map(|s| s.buf).collect();
        for n in &k.nodes {
            if let NodeKind::Load { buf, .. } = n.kind {
                bufs.push(buf);
            }
        }
        for &b in &bufs {
            self.buf_dtype(b)?;
        }
        for s in &k.stores {
            if matches!(s.buf, BufRef::Input(_) | BufRef::Const(_)) {
                return self.malformed(format!("store to read-only buffer {:?}", s.buf));
            }
            let (want, got) = (self.buf_dtype(s.buf)?, self.dtype(s.value)?);
            if want != got {
                return self.malformed(format!("store of {got} into a {want} buffer"));
            }
        }
        Ok(bufs)
    }

    /// The emitted kernel and its launch description.
    fn kernel(mut self, entry: String, index: usize) -> R<(PtxKernel, KernelLaunch)> {
        let k = self.k;
        let mut bufs = self.kernel_buffers()?;
        bufs.sort_by_key(|&b| slot(self.p, b));
        bufs.dedup();
        let names: Vec<String> = bufs.iter().map(|&b| param_name(b)).collect();
        self.b.comment(&format!(
            "{entry}: kernel {} of cluster {}",
            k.name, self.p.name
        ));
        for (&buf, name) in bufs.iter().zip(&names) {
            let r = self.b.global_pointer_param(name);
            self.bases.push((buf, r));
        }
        let points = k
            .space
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
        let Some(points) = points else {
            return self.unsupported("iteration space overflows u64");
        };
        if points > 0 {
            self.hoist_random_streams()?;
        }
        let (mapping, grid) = match &k.reduce {
            None => {
                if points > 0 {
                    self.pointwise(points)?;
                }
                (
                    Mapping::Pointwise { points },
                    points.div_ceil(u64::from(BLOCK) * POINTS_PER_THREAD),
                )
            }
            Some(red) => {
                let len = red.len as u64;
                if len > CHUNK * CHUNK {
                    return self
                        .unsupported(format!("reduction over {len} elements (more than 2^24)"));
                }
                if points > 0 {
                    self.reduction(points, red.kind, len, red.value)?;
                }
                let warps = u64::from(BLOCK) / LANES;
                (
                    Mapping::WarpPerPoint { points, len },
                    points.div_ceil(warps),
                )
            }
        };
        let launch = KernelLaunch {
            entry: entry.clone(),
            kernel: index,
            params: bufs,
            mapping,
            block: BLOCK,
            grid: grid.clamp(1, MAX_GRID) as u32,
        };
        Ok(self.finish(names, launch))
    }

    /// Sets up, before the kernel's loop, the stream (seed loads and scrambling) of every
    /// supported random node whose seed is loop-invariant: once per thread, not per element.
    fn hoist_random_streams(&mut self) -> R<()> {
        let k = self.k;
        if !k.has_random() {
            return Ok(());
        }
        let zero = self.imm_idx(0);
        let vars = vec![zero; k.space.len() + 1];
        for (n, node) in k.nodes.iter().enumerate() {
            let NodeKind::Random {
                dist, alg, seed, ..
            } = &node.kind
            else {
                continue;
            };
            if !random::supported(*dist, *alg, node.dtype)
                || !seed.iter().all(|&s| s < n && self.invariant(s, 0))
            {
                continue;
            }
            let words = self.seed_words(n, seed, &vars)?;
            if let Ok(st) = random::stream(&mut self.b, *alg, &words) {
                self.streams[n] = Some(st);
            }
        }
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(())
    }

    /// Whether node `n` uses no loop variable and no reduction result (`depth` bounds the
    /// walk; deeper DAGs are treated as variant, which only costs speed).
    fn invariant(&self, n: usize, depth: u32) -> bool {
        self.uses_only_vars_below(n, 0, depth)
    }

    /// Whether node `n` uses no loop variable `>= allowed` and no reduction result
    /// (`allowed = 0`: [`Emitter::invariant`]; `1`: it depends on the row only).
    fn uses_only_vars_below(&self, n: usize, allowed: usize, depth: u32) -> bool {
        fn no_var(e: &IExpr, allowed: usize) -> bool {
            match e {
                IExpr::Var(v) => *v < allowed,
                IExpr::Const(_) => true,
                IExpr::Add(a, b) => no_var(a, allowed) && no_var(b, allowed),
                IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
                    no_var(a, allowed)
                }
            }
        }
        let no_var = |e: &IExpr| no_var(e, allowed);
        let Some(node) = self.k.nodes.get(n) else {
            return false;
        };
        let ops_ok = |ops: &[usize]| {
            depth < 64
                && ops
                    .iter()
                    .all(|&o| o < n && self.uses_only_vars_below(o, allowed, depth + 1))
        };
        match &node.kind {
            NodeKind::Load { offset, .. } => no_var(offset),
            NodeKind::Const(_) => true,
            NodeKind::Index(e) | NodeKind::InRange { e, .. } => no_var(e),
            NodeKind::Unary(_, a) | NodeKind::Convert(a) => ops_ok(&[*a]),
            NodeKind::Binary(_, a, b) | NodeKind::Compare(_, a, b) => ops_ok(&[*a, *b]),
            NodeKind::Select(p, a, b) => ops_ok(&[*p, *a, *b]),
            NodeKind::Random { seed, index, .. } => no_var(index) && ops_ok(seed),
            NodeKind::ReduceResult => false,
        }
    }

    /// The `i64` seed elements of random node `n`, as registers.
    fn seed_words(&mut self, n: usize, seed: &[usize], vars: &[Reg]) -> R<Vec<Reg>> {
        let mut words = Vec::with_capacity(seed.len());
        for &s in seed {
            let (r, sdt) = self.operand(n, s, vars)?;
            if sdt != DType::I64 {
                return self.malformed(format!("random seed element of {sdt}"));
            }
            words.push(r);
        }
        Ok(words)
    }

    /// `%ctaid.x * %ntid.x + %tid.x` and `%ntid.x * %nctaid.x` (64-bit), and `%tid.x`.
    fn thread_ids(&mut self) -> (Reg, Reg, Reg) {
        let ctaid = self.def(RegClass::B32, "mov.u32", &[&"%ctaid.x"]);
        let ntid = self.def(RegClass::B32, "mov.u32", &[&"%ntid.x"]);
        let tid = self.def(RegClass::B32, "mov.u32", &[&"%tid.x"]);
        let nctaid = self.def(RegClass::B32, "mov.u32", &[&"%nctaid.x"]);
        let start = self.def(RegClass::B64, "mul.wide.u32", &[&ctaid, &ntid]);
        let tid64 = self.def(RegClass::B64, "cvt.u64.u32", &[&tid]);
        let gid = self.def(RegClass::B64, "add.s64", &[&start, &tid64]);
        let stride = self.def(RegClass::B64, "mul.wide.u32", &[&ntid, &nctaid]);
        (gid, stride, tid)
    }

    /// Opens `for (i = start; i < end; i += step)` over a fresh counter of `start`'s class
    /// (`.b64`, or `.b32` for a narrow pointwise loop; unsigned compare); returns the
    /// counter and the labels for [`Emitter::loop_end`].
    fn loop_begin(&mut self, stem: &str, start: Reg, end: &dyn Display) -> (Reg, Label, Label) {
        let w = if start.class == RegClass::B32 { 32 } else { 64 };
        let i = self.b.reg(start.class);
        self.emit(&format!("mov.u{w}"), &[&i, &start]);
        let top = self.b.label(stem);
        let done = self.b.label(&format!("{stem}_end"));
        self.b.place(&top);
        let past = self.def(RegClass::Pred, &format!("setp.ge.u{w}"), &[&i, end]);
        self.emit(&format!("@{past} bra"), &[&done]);
        (i, top, done)
    }

    /// Opens the main loop of a lane-strided loop unrolled `unroll` deep: `for (j = first;
    /// j + (unroll - 1) * 32 < end; j += unroll * 32)` over a `.b64` counter, compared
    /// signed (`end - span` may be negative). Close it with [`Emitter::loop_end`]; the
    /// counter is where the one-at-a-time rest loop starts.
    fn unrolled_loop_begin(
        &mut self,
        stem: &str,
        first: Reg,
        end: &Reg,
        unroll: u64,
    ) -> (Reg, Label, Label) {
        let main_end = self.def(RegClass::B64, "sub.s64", &[end, &((unroll - 1) * LANES)]);
        let j = self.b.reg(RegClass::B64);
        self.emit("mov.u64", &[&j, &first]);
        let top = self.b.label(stem);
        let done = self.b.label(&format!("{stem}_end"));
        self.b.place(&top);
        let past = self.def(RegClass::Pred, "setp.ge.s64", &[&j, &main_end]);
        self.emit(&format!("@{past} bra"), &[&done]);
        (j, top, done)
    }

    fn loop_end(&mut self, i: Reg, step: &dyn Display, top: Label, done: Label) {
        let add = if i.class == RegClass::B32 {
            "add.u32"
        } else {
            "add.s64"
        };
        self.emit(add, &[&i, &i, step]);
        self.emit("bra", &[&top]);
        self.b.place(&done);
    }

    /// Opens a grid-stride loop `for (i = offset + gid; i < end; i += stride)`. Narrow: a
    /// `.b32` counter, with `gid` and `stride` first clamped to `end` (a thread past the
    /// end leaves at once either way; a stride ≥ `end` ends the loop after one step either
    /// way), so neither the start (`≤ offset + end`) nor `i + stride` (`i < end`, `stride ≤
    /// end`) overflows 32 bits (`offset ≤ end < 2^31`). Returns the counter, the step and
    /// the labels for [`Emitter::loop_end`].
    fn grid_loop(
        &mut self,
        stem: &str,
        (gid, stride): (Reg, Reg),
        offset: u64,
        end: u64,
    ) -> (Reg, Reg, Label, Label) {
        let (start, step) = if self.narrow {
            debug_assert!(offset <= end && end < NARROW_LIMIT);
            let g = self.def(RegClass::B64, "min.u64", &[&gid, &end]);
            let g = self.def(RegClass::B32, "cvt.u32.u64", &[&g]);
            let s = self.def(RegClass::B64, "min.u64", &[&stride, &end.max(1)]);
            let s = self.def(RegClass::B32, "cvt.u32.u64", &[&s]);
            let g = if offset > 0 {
                self.def(RegClass::B32, "add.u32", &[&g, &offset])
            } else {
                g
            };
            (g, s)
        } else if offset > 0 {
            (self.def(RegClass::B64, "add.s64", &[&gid, &offset]), stride)
        } else {
            (gid, stride)
        };
        let (i, top, done) = self.loop_begin(stem, start, &end);
        (i, step, top, done)
    }

    /// The row-major coordinates of linear point `i` in the kernel's space, plus one slot
    /// (the reduction's sequence variable, or an unused 0) at the end.
    fn unravel(&mut self, i: Reg) -> Vec<Reg> {
        let zero = self.imm_idx(0);
        let mut vars = vec![zero; self.k.space.len() + 1];
        let rest = self.narrowed(i);
        self.unravel_from(rest, 0, &mut vars);
        vars
    }

    /// The loop variables of point `j` of a row-fused step's current row, whose first
    /// point is `start`: variable 0 is the row, the others come from `j - start` (so a
    /// two-dimensional step needs no division at all).
    fn unravel_in_row(&mut self, j: Reg, start: Reg, row: Reg) -> Vec<Reg> {
        let zero = self.imm_idx(0);
        let mut vars = vec![zero; self.k.space.len() + 1];
        let local = self.def(RegClass::B64, "sub.s64", &[&j, &start]);
        let local = self.narrowed(local);
        vars[0] = self.narrowed(row);
        if vars.len() > 2 {
            self.unravel_from(local, 1, &mut vars);
        }
        vars
    }

    /// Sets `vars[from..space.len()]` to the coordinates of the row-major index `rest`
    /// within dimensions `from..` of the kernel's space (`vars[from]` takes the rest).
    fn unravel_from(&mut self, mut rest: Reg, from: usize, vars: &mut [Reg]) {
        let space = &self.k.space;
        for d in (from..space.len()).rev() {
            let size = space[d] as u64;
            if d == from {
                vars[d] = rest;
            } else {
                vars[d] = self.div_rem_imm(false, rest, size);
                rest = self.div_rem_imm(true, rest, size);
            }
        }
    }

    /// `x / c` (`div`) or `x % c` of a non-negative index, unsigned; a shift or a mask when
    /// `c` is a power of two (`ptxas` keeps a general division for `div.u32` by 1024).
    fn div_rem_imm(&mut self, div: bool, x: Reg, c: u64) -> Reg {
        let ic = self.ic();
        let w = if self.narrow { 32 } else { 64 };
        match (c.is_power_of_two(), div) {
            (true, true) => self.def(ic, &format!("shr.u{w}"), &[&x, &c.trailing_zeros()]),
            (true, false) => self.def(ic, &format!("and.b{w}"), &[&x, &(c - 1)]),
            (false, true) => self.def(ic, &self.iop("div", "u"), &[&x, &c]),
            (false, false) => self.def(ic, &self.iop("rem", "u"), &[&x, &c]),
        }
    }

    /// A grid-stride loop over the points, one thread per point, storing every output; or,
    /// when [`Emitter::vector_loads`] allows it, one per four points (`ld`/`st.global.v4`)
    /// and a grid-stride tail over the last `points % 4`.
    fn pointwise(&mut self, points: u64) -> R<()> {
        let (gid, stride, _) = self.thread_ids();
        let mut tail = 0;
        if let Some(loads) = self.vector_loads()? {
            self.vector_groups(points, (gid, stride), &loads)?;
            tail = points - points % 4;
        }
        let (i, step, top, done) = self.grid_loop("point", (gid, stride), tail, points);
        let vars = self.unravel(i);
        self.stores(i, &vars)?;
        self.loop_end(i, &step, top, done);
        Ok(())
    }

    /// Whether this pointwise kernel is vectorised, and then its loads that read four
    /// consecutive elements with one `ld.global.v4` per group of four points: `(node,
    /// c)` for each 4-byte load at the point's linear index plus `c`, a multiple of 4 (so
    /// the group's address is 16-byte aligned: buffers are allocated 256-byte aligned).
    /// Vectorised: every store (always at the linear index) is of a 4-byte dtype, and no
    /// buffer is both loaded and stored. Other loads (broadcasts, transposes, …) stay
    /// scalar, one per point.
    fn vector_loads(&self) -> R<Option<Vec<(usize, i64)>>> {
        let k = self.k;
        let four = |dt: DType| elem_bytes(dt) == 4;
        if k.reduce.is_some() || self.fused.is_some() || k.stores.is_empty() {
            return Ok(None);
        }
        // A float `rem` is a data-dependent loop (`crate::fmod`): four copies of it per
        // group would only grow the code; such kernels stay one point per iteration.
        let float_rem = |n: &Node| {
            matches!(n.kind, NodeKind::Binary(BinaryOp::Rem, _, _)) && n.dtype.is_float()
        };
        if k.nodes.iter().any(float_rem) {
            return Ok(None);
        }
        for s in &k.stores {
            if !four(self.buf_dtype(s.buf)?) {
                return Ok(None);
            }
        }
        let mut loads = Vec::new();
        for (n, node) in k.nodes.iter().enumerate() {
            let NodeKind::Load { buf, offset } = &node.kind else {
                continue;
            };
            if k.stores.iter().any(|s| s.buf == *buf) {
                return Ok(None);
            }
            if let Some(c) = contiguous_offset(offset, &k.space) {
                if four(node.dtype) && c % 4 == 0 {
                    loads.push((n, c as i64));
                }
            }
        }
        Ok(Some(loads))
    }

    /// The vectorised main loop: a grid-stride loop over the `points / 4` full groups;
    /// each thread loads four lanes of each of `loads` with one `ld.global.v4`, evaluates
    /// the store values lane by lane exactly as the scalar loop does (the same nodes, with
    /// the lane's coordinates), and stores them with one `st.global.v4` per store.
    fn vector_groups(&mut self, points: u64, ids: (Reg, Reg), loads: &[(usize, i64)]) -> R<()> {
        let k = self.k;
        self.b.comment(&format!(
            "four points per thread: {} vector load(s), {} vector store(s)",
            loads.len(),
            k.stores.len()
        ));
        let (g, step, top, done) = self.grid_loop("group", ids, 0, points / 4);
        let ic = g.class;
        let shl = if ic == RegClass::B32 {
            "shl.b32"
        } else {
            "shl.b64"
        };
        let i4 = self.def(ic, shl, &[&g, &2]);
        let i4 = self.narrowed(i4);
        self.vec_loads = vec![None; k.nodes.len()];
        for &(n, c) in loads {
            let NodeKind::Load { buf, .. } = k.nodes[n].kind else {
                unreachable!("vector_loads lists loads")
            };
            let dt = k.nodes[n].dtype;
            let at = if c == 0 {
                i4
            } else {
                let cst = self.imm_idx(c);
                let add = self.iop("add", "s");
                self.def(self.ic(), &add, &[&i4, &cst])
            };
            let addr = self.address(buf, at, dt)?;
            let lanes = [0; 4].map(|_| self.b.reg(class(dt)));
            self.emit(
                &format!("ld.global.v4.{}", mem_type(dt)),
                &[&vec4(&lanes), &format!("[{addr}]")],
            );
            self.vec_loads[n] = Some(lanes);
        }
        let mut values = vec![[i4; 4]; k.stores.len()];
        for lane in 0..4 {
            let i = if lane == 0 {
                i4
            } else {
                let add = self.iop("add", "s");
                self.def(self.ic(), &add, &[&i4, &lane])
            };
            let vars = self.unravel(i);
            self.memo.iter_mut().for_each(|m| *m = None);
            self.lane = lane;
            for (s, v) in k.stores.iter().zip(&mut values) {
                v[lane] = self.node(s.value, &vars)?;
            }
        }
        self.vec_loads.clear();
        self.memo.iter_mut().for_each(|m| *m = None);
        for (s, v) in k.stores.iter().zip(&values) {
            let dt = self.buf_dtype(s.buf)?;
            let addr = self.address(s.buf, i4, dt)?;
            self.emit(
                &format!("st.global.v4.{}", mem_type(dt)),
                &[&format!("[{addr}]"), &vec4(v)],
            );
        }
        self.loop_end(g, &step, top, done);
        Ok(())
    }

    /// Evaluates and writes every store at the point with linear index `i`.
    fn stores(&mut self, i: Reg, vars: &[Reg]) -> R<()> {
        self.memo.iter_mut().for_each(|m| *m = None);
        for s in &self.k.stores {
            let v = self.node(s.value, vars)?;
            self.store(s.buf, i, v)?;
        }
        Ok(())
    }

    /// Writes `v` to element `i` of `buf` (bool as one byte).
    fn store(&mut self, buf: BufRef, i: Reg, v: Reg) -> R<()> {
        let dt = self.buf_dtype(buf)?;
        let addr = self.address(buf, i, dt)?;
        self.store_to(buf, dt, &format!("[{addr}]"), v);
        Ok(())
    }

    /// `st` of `v` (of `buf`'s dtype `dt`, bool as one byte) to the address operand `m`.
    fn store_to(&mut self, buf: BufRef, dt: DType, m: &str, v: Reg) {
        let src = if dt == DType::Bool {
            self.def(RegClass::B32, "selp.u32", &[&1, &0, &v])
        } else {
            v
        };
        self.emit(
            &format!("st.{}.{}", self.space(buf), mem_type(dt)),
            &[&m, &src],
        );
    }

    /// [`Emitter::stores`] for several points: every point's store values first, then all
    /// the stores, so the points' loads are in flight together. Only for a kernel that
    /// loads no buffer it stores ([`Emitter::loads_a_stored_buffer`]). Point `u` of
    /// `points` must be `u * LANES` past the first, and, when `var` is given, so must loop
    /// variable `var` (the other variables equal): the later points' loads affine in it and
    /// all their stores then add an immediate to the first point's addresses.
    fn stores_batch(&mut self, points: &[(Reg, Vec<Reg>)], var: Option<usize>) -> R<()> {
        let mut values = Vec::with_capacity(points.len() * self.k.stores.len());
        for (u, (_, vars)) in points.iter().enumerate() {
            if let Some(var) = var {
                self.set_disp(var, u as i64 * LANES as i64);
            }
            self.memo.iter_mut().for_each(|m| *m = None);
            for s in &self.k.stores {
                values.push(self.node(s.value, vars)?);
            }
        }
        self.clear_disp();
        self.memo.iter_mut().for_each(|m| *m = None);
        let mut values = values.into_iter();
        let mut first: Vec<Option<Reg>> = vec![None; self.k.stores.len()];
        for (u, (i, _)) in points.iter().enumerate() {
            for (si, s) in self.k.stores.iter().enumerate() {
                let Some(v) = values.next() else {
                    return self.malformed("a store without a value");
                };
                let dt = self.buf_dtype(s.buf)?;
                let m = match first[si] {
                    Some(base) => {
                        format!("[{base}+{}]", u as u64 * LANES * u64::from(elem_bytes(dt)))
                    }
                    None => {
                        let addr = self.address(s.buf, *i, dt)?;
                        first[si] = Some(addr);
                        format!("[{addr}]")
                    }
                };
                self.store_to(s.buf, dt, &m, v);
            }
        }
        Ok(())
    }

    /// Evaluates every node the stores use that depends on loop variable 0 (the row) only,
    /// at `vars` (a point of the row), into [`Emitter::pinned`]. Such a node reads an
    /// input, a constant or an earlier step's row of a temporary (complete: steps end with
    /// `bar.warp.sync`), so its value is the same at every point of the row: a layer
    /// norm's `rsqrt(var + eps)` is computed once per row, not per element.
    fn pin_row_invariants(&mut self, vars: &[Reg]) -> R<()> {
        let roots: Vec<usize> = self.k.stores.iter().map(|s| s.value).collect();
        self.pin_invariants(&roots, 1, vars)
    }

    /// Pins (into [`Emitter::pinned`], evaluated at `vars`) every node that `roots` use and
    /// that uses only loop variables below `allowed`: its value is the same for every point
    /// the loop visits while those variables stay fixed. Constants stay immediates and
    /// random nodes keep their per-point streams.
    fn pin_invariants(&mut self, roots: &[usize], allowed: usize, vars: &[Reg]) -> R<()> {
        let k = self.k;
        let mut used = vec![false; k.nodes.len()];
        let mut stack: Vec<usize> = roots.to_vec();
        while let Some(n) = stack.pop() {
            if n >= used.len() || std::mem::replace(&mut used[n], true) {
                continue;
            }
            stack.extend(kiln_compiler::kernel::operands(&k.nodes[n].kind));
        }
        for (n, node) in k.nodes.iter().enumerate() {
            let pinnable = !matches!(node.kind, NodeKind::Const(_) | NodeKind::Random { .. });
            if used[n] && pinnable && self.uses_only_vars_below(n, allowed, 0) {
                self.memo.iter_mut().for_each(|m| *m = None);
                let r = self.node(n, vars)?;
                self.pinned[n] = Some(r);
            }
        }
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(())
    }

    /// Whether the current kernel loads a buffer it also stores.
    fn loads_a_stored_buffer(&self) -> bool {
        let k = self.k;
        k.nodes.iter().any(|n| match n.kind {
            NodeKind::Load { buf, .. } => k.stores.iter().any(|s| s.buf == buf),
            _ => false,
        })
    }

    /// Starts position `delta` (0 for the first) of an unrolled body in which loop variable
    /// `var` steps by one per unit of `delta` ([`Emitter::disp`]).
    fn set_disp(&mut self, var: usize, delta: i64) {
        if delta == 0 {
            self.disp_base.iter_mut().for_each(|a| *a = None);
        }
        self.disp = Some((var, delta));
    }

    /// Leaves the unrolled body: every load computes its own address again.
    fn clear_disp(&mut self) {
        self.disp = None;
        self.disp_base.iter_mut().for_each(|a| *a = None);
    }

    /// The `[address]` operand of load node `n` (element `offset` of `buf`). Under a
    /// displacement `(var, delta)` with `offset` affine in the variables and increasing in
    /// `var`: at `delta = 0` the address is computed and kept; later positions add `delta`
    /// times the stride in bytes to it as an immediate, exact because the position is a
    /// valid point of the loop (its index arithmetic does not wrap, see
    /// [`narrow_indices`]). `ptxas` cannot fold the 32-bit index arithmetic that way itself.
    fn load_operand(
        &mut self,
        n: usize,
        buf: BufRef,
        offset: &IExpr,
        dt: DType,
        vars: &[Reg],
    ) -> R<String> {
        if let Some((var, delta)) = self.disp {
            let stride = affine(offset, vars.len()).map(|(coeffs, _)| coeffs[var]);
            let bytes = stride.map(|s| s * i128::from(elem_bytes(dt)) * i128::from(delta));
            match (delta, stride, bytes, self.disp_base[n]) {
                (0, Some(s), _, _) if s > 0 => {
                    let off = self.iexpr(offset, vars)?;
                    let addr = self.address(buf, off, dt)?;
                    self.disp_base[n] = Some(addr);
                    return Ok(format!("[{addr}]"));
                }
                (_, Some(s), Some(b), Some(base)) if s > 0 && b <= i128::from(i32::MAX) => {
                    return Ok(format!("[{base}+{b}]"));
                }
                _ => {}
            }
        }
        let off = self.iexpr(offset, vars)?;
        let addr = self.address(buf, off, dt)?;
        Ok(format!("[{addr}]"))
    }

    /// The address of element `index` (a `.b64` or a narrow `.b32` index) of `buf`.
    fn address(&mut self, buf: BufRef, index: Reg, dt: DType) -> R<Reg> {
        let bytes = elem_bytes(dt);
        let shared = matches!(buf, BufRef::Temp(_)) && self.fused.is_some();
        if index.class == RegClass::B32 && !shared {
            // Widened only here, in the multiply that forms the byte offset.
            let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
                return self.malformed(format!("buffer {buf:?} is not a parameter"));
            };
            let off = if bytes == 1 {
                self.def(RegClass::B64, "cvt.s64.s32", &[&index])
            } else {
                self.def(RegClass::B64, "mul.wide.s32", &[&index, &bytes])
            };
            return Ok(self.def(RegClass::B64, "add.s64", &[&base, &off]));
        }
        let index = self.widen(index);
        if let (BufRef::Temp(t), Some(f)) = (buf, &self.fused) {
            // Row-fused: element `index` of the temporary is element `index - row * n` of
            // this warp's row of it (row_fusion proved it lies in the row).
            let ((offset, per_row), row, slab) = (f.layout.temps[t], f.row, f.slab);
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&row, &per_row]);
            let local = self.def(RegClass::B64, "sub.s64", &[&index, &start]);
            let base = self.def(RegClass::B64, "add.s64", &[&slab, &offset]);
            return Ok(if bytes == 1 {
                self.def(RegClass::B64, "add.s64", &[&base, &local])
            } else {
                self.b.element_address(base, local, bytes)
            });
        }
        let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
            return self.malformed(format!("buffer {buf:?} is not a parameter"));
        };
        Ok(if bytes == 1 {
            self.def(RegClass::B64, "add.s64", &[&base, &index])
        } else {
            self.b.element_address(base, index, bytes)
        })
    }

    /// One warp per kept point: the canonical reduction, then lane 0 stores.
    fn reduction(&mut self, points: u64, kind: ReduceKind, len: u64, value: usize) -> R<()> {
        let dt = self.dtype(value)?;
        if dt == DType::Bool && matches!(kind, ReduceKind::Sum | ReduceKind::Prod) {
            return self.unsupported(format!("{} of bool", kind.name()));
        }
        let (gid, stride, tid) = self.thread_ids();
        let lane32 = self.def(RegClass::B32, "and.b32", &[&tid, &"31"]);
        let lane = self.def(RegClass::B64, "cvt.u64.u32", &[&lane32]);
        let warp = self.def(RegClass::B64, "shr.u64", &[&gid, &"5"]);
        let wstride = self.def(RegClass::B64, "shr.u64", &[&stride, &"5"]);
        let (w, top, done) = self.loop_begin("warp", warp, &points);
        self.reduce_point(w, kind, len, value, lane, lane32)?;
        self.loop_end(w, &wstride, top, done);
        Ok(())
    }

    /// The whole warp reduces kept point `w` (linear index) in canonical order; lane 0
    /// evaluates and writes the stores (the epilogue).
    fn reduce_point(
        &mut self,
        w: Reg,
        kind: ReduceKind,
        len: u64,
        value: usize,
        lane: Reg,
        lane32: Reg,
    ) -> R<()> {
        let dt = self.dtype(value)?;
        let mut vars = self.unravel(w);
        let seq = vars.len() - 1;
        // Values that depend on the kept point only (a row's mean in a variance): once.
        self.pin_invariants(&[value], seq, &vars)?;
        self.b.comment(&format!(
            "canonical {} over {len} elements: 32 lanes, tree 16..1",
            kind.name()
        ));
        let result = if len <= CHUNK {
            let start = self.imm64(0);
            self.chunk(kind, dt, value, &mut vars, seq, lane, start, &len)?
        } else {
            // Chunk partials folded into lane (chunk mod 32), then the same tree.
            let acc = self.b.reg(class(dt));
            let id = self.identity(dt, kind)?;
            self.mov(dt, acc, id);
            let zero = self.imm64(0);
            let chunks = len.div_ceil(CHUNK);
            let (c, ctop, cdone) = self.loop_begin("chunk", zero, &chunks);
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&c, &CHUNK]);
            let full_end = self.def(RegClass::B64, "add.s64", &[&start, &CHUNK]);
            let end = self.def(RegClass::B64, "min.u64", &[&full_end, &len]);
            let part = self.chunk(kind, dt, value, &mut vars, seq, lane, start, &end)?;
            let part = self.shuffle(dt, "idx", part, 0);
            let cl = self.def(RegClass::B64, "and.b64", &[&c, &"31"]);
            let mine = self.def(RegClass::Pred, "setp.eq.u64", &[&cl, &lane]);
            let folded = self.combine(dt, kind, acc, part);
            self.guarded_mov(mine, dt, acc, folded);
            self.loop_end(c, &1, ctop, cdone);
            self.tree(kind, dt, acc)
        };
        let not_lane0 = self.def(RegClass::Pred, "setp.ne.u32", &[&lane32, &0]);
        let skip = self.b.label("store_skip");
        self.emit(&format!("@{not_lane0} bra"), &[&skip]);
        self.reduce_result = Some(result);
        let zero = self.imm_idx(0);
        vars[seq] = zero;
        self.stores(w, &vars)?;
        self.reduce_result = None;
        self.pinned.iter_mut().for_each(|p| *p = None);
        self.b.place(&skip);
        Ok(())
    }

    /// The row-fused entry of the whole program (module doc, "Row fusion"): `self` starts
    /// on kernel 0; every kernel is emitted in order inside one loop over rows.
    fn fused(mut self, layout: RowLayout) -> R<(PtxKernel, KernelLaunch)> {
        let p = self.p;
        let mut bufs = Vec::new();
        for k in &p.kernels {
            self.switch_to(k, vec![None; k.nodes.len()]);
            bufs.extend(self.kernel_buffers()?);
            if let Some(red) = &k.reduce {
                let dt = self.dtype(red.value)?;
                if dt == DType::Bool && matches!(red.kind, ReduceKind::Sum | ReduceKind::Prod) {
                    return self.unsupported(format!("{} of bool", red.kind.name()));
                }
                if red.len as u64 > CHUNK * CHUNK {
                    return self.unsupported("reduction over more than 2^24 elements");
                }
            }
        }
        bufs.retain(|b| !matches!(b, BufRef::Temp(_)));
        bufs.sort_by_key(|&b| slot(p, b));
        bufs.dedup();
        let names: Vec<String> = bufs.iter().map(|&b| param_name(b)).collect();
        let entry = entry_name(&p.name, "rows");
        let RowLayout {
            rows, slab, warps, ..
        } = layout;
        self.b
            .directive(&format!(".shared .align 8 .b8 {SMEM}[{}]", slab * warps));
        self.b.comment(&format!(
            "{entry}: kernels k0..k{} of cluster {} fused, one warp per row of {rows}; \
             temporaries in shared memory, {slab} bytes per warp, {warps} warps per block",
            p.kernels.len() - 1,
            p.name
        ));
        for (&buf, name) in bufs.iter().zip(&names) {
            let r = self.b.global_pointer_param(name);
            self.bases.push((buf, r));
        }
        // Random streams are set up once per thread, per kernel, before the row loop.
        let mut streams = Vec::with_capacity(p.kernels.len());
        for k in &p.kernels {
            self.switch_to(k, vec![None; k.nodes.len()]);
            if k.points() > 0 {
                self.hoist_random_streams()?;
            }
            streams.push(std::mem::take(&mut self.streams));
        }
        let ctaid = self.def(RegClass::B32, "mov.u32", &[&"%ctaid.x"]);
        let ntid = self.def(RegClass::B32, "mov.u32", &[&"%ntid.x"]);
        let tid = self.def(RegClass::B32, "mov.u32", &[&"%tid.x"]);
        let nctaid = self.def(RegClass::B32, "mov.u32", &[&"%nctaid.x"]);
        // Working warps per block: the block's, at most `warps` (the others idle).
        let bw = self.def(RegClass::B32, "shr.u32", &[&ntid, &"5"]);
        let bw = self.def(RegClass::B32, "min.u32", &[&bw, &warps]);
        let bw = self.def(RegClass::B32, "max.u32", &[&bw, &1]); // never a zero stride
        let lane32 = self.def(RegClass::B32, "and.b32", &[&tid, &"31"]);
        let lane = self.def(RegClass::B64, "cvt.u64.u32", &[&lane32]);
        let wib = self.def(RegClass::B32, "shr.u32", &[&tid, &"5"]);
        let idle = self.def(RegClass::Pred, "setp.ge.u32", &[&wib, &warps]);
        let done_all = self.b.label("idle");
        self.emit(&format!("@{idle} bra"), &[&done_all]);
        let first = self.def(RegClass::B64, "mul.wide.u32", &[&ctaid, &bw]);
        let wib64 = self.def(RegClass::B64, "cvt.u64.u32", &[&wib]);
        let first = self.def(RegClass::B64, "add.s64", &[&first, &wib64]);
        let step = self.def(RegClass::B64, "mul.wide.u32", &[&nctaid, &bw]);
        let smem = self.def(RegClass::B64, "mov.u64", &[&SMEM]);
        let own = self.def(RegClass::B64, "mul.lo.s64", &[&wib64, &slab]);
        let own = self.def(RegClass::B64, "add.s64", &[&smem, &own]);
        let (row, top, done) = self.loop_begin("row", first, &rows);
        self.prefetch_next_row(row, step, rows, lane)?;
        self.fused = Some(FusedRow {
            layout,
            row,
            slab: own,
        });
        for ((i, k), st) in p.kernels.iter().enumerate().zip(streams) {
            self.switch_to(k, st);
            let per_row = k.points() as u64 / rows;
            self.b
                .comment(&format!("kernel k{i} ({}) for this row", k.name));
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&row, &per_row]);
            let end = self.def(RegClass::B64, "add.s64", &[&start, &per_row]);
            match &k.reduce {
                Some(red) => {
                    // The row's kept points, one after another, each by the whole warp.
                    let (w, ptop, pdone) = self.loop_begin("kept", start, &end);
                    self.reduce_point(w, red.kind, red.len as u64, red.value, lane, lane32)?;
                    self.loop_end(w, &1, ptop, pdone);
                }
                None => {
                    // Values that depend on the row only (its max, its sum, …): once per
                    // row, before the step's loops.
                    if per_row > 0 {
                        let row_vars = self.unravel_in_row(start, start, row);
                        self.pin_row_invariants(&row_vars)?;
                    }
                    let first = self.def(RegClass::B64, "add.s64", &[&start, &lane]);
                    let mut j = first;
                    if !self.loads_a_stored_buffer() {
                        // UNROLL of the lane's points at a time, every value before any
                        // store, so their loads are in flight together (`j < end - span`
                        // signed: `end - span` may be negative).
                        let (jm, top, done) =
                            self.unrolled_loop_begin("points", first, &end, UNROLL);
                        let mut points = Vec::with_capacity(UNROLL as usize);
                        for u in 0..UNROLL {
                            let ju = self.def(RegClass::B64, "add.s64", &[&jm, &(u * LANES)]);
                            let vars = self.unravel_in_row(ju, start, row);
                            points.push((ju, vars));
                        }
                        // In a two-dimensional step the column is the only variable that
                        // moves with the point.
                        let column = (k.space.len() == 2).then_some(1);
                        self.stores_batch(&points, column)?;
                        self.loop_end(jm, &(UNROLL * LANES), top, done);
                        j = jm;
                    }
                    let (j, ptop, pdone) = self.loop_begin("point", j, &end);
                    let vars = self.unravel_in_row(j, start, row);
                    self.stores(j, &vars)?;
                    self.loop_end(j, &LANES, ptop, pdone);
                    self.pinned.iter_mut().for_each(|p| *p = None);
                }
            }
            // Other lanes' shared writes become visible (and reads complete) here.
            self.emit("bar.warp.sync", &[&"-1"]);
        }
        self.fused = None;
        self.loop_end(row, &step, top, done);
        self.b.place(&done_all);
        let launch = KernelLaunch {
            entry: entry.clone(),
            kernel: 0,
            params: bufs,
            mapping: Mapping::WarpPerRow {
                rows,
                warps: warps as u32,
            },
            block: (warps * LANES) as u32,
            grid: rows.div_ceil(warps).clamp(1, MAX_GRID) as u32,
        };
        Ok(self.finish(names, launch))
    }

    /// Prefetches into L2 the rows that this warp's next row (`row + step`, when there is
    /// one) reads of each input read row by row, one 128-byte line per lane per 4 KiB (at
    /// most [`PREFETCH_ROW_BYTES`] of each). When a launch gives a warp several rows (the
    /// autotuner tries smaller grids), their DRAM reads then overlap this row's arithmetic
    /// instead of all warps reading, then all computing, then all writing in step.
    fn prefetch_next_row(&mut self, row: Reg, step: Reg, rows: u64, lane: Reg) -> R<()> {
        let p = self.p;
        let mut rows_of: Vec<(BufRef, u64)> = Vec::new();
        for n in p.kernels.iter().flat_map(|k| &k.nodes) {
            let NodeKind::Load {
                buf: buf @ BufRef::Input(i),
                offset,
            } = &n.kind
            else {
                continue;
            };
            let t = &p.inputs[*i];
            let per_row = t.num_elements() as u64 / rows;
            let row_major = per_row > 0
                && per_row * rows == t.num_elements() as u64
                && offset.coefficient(0) == Some(per_row as i64);
            if row_major && !rows_of.iter().any(|(b, _)| b == buf) {
                rows_of.push((*buf, per_row * u64::from(elem_bytes(t.dtype))));
            }
        }
        if rows_of.is_empty() {
            return Ok(());
        }
        let next = self.def(RegClass::B64, "add.s64", &[&row, &step]);
        let last = self.def(RegClass::Pred, "setp.ge.u64", &[&next, &rows]);
        let skip = self.b.label("prefetch_skip");
        self.emit(&format!("@{last} bra"), &[&skip]);
        let line = self.def(RegClass::B64, "shl.b64", &[&lane, &7]);
        for (buf, row_bytes) in rows_of {
            let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
                return self.malformed(format!("buffer {buf:?} is not a parameter"));
            };
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&next, &row_bytes]);
            let off = self.def(RegClass::B64, "add.s64", &[&start, &line]);
            let addr = self.def(RegClass::B64, "add.s64", &[&base, &off]);
            let covered = row_bytes.min(PREFETCH_ROW_BYTES);
            for m in 0..covered.div_ceil(LANES * 128) {
                let at = m * LANES * 128;
                let op = format!("[{addr}+{at}]");
                if at + LANES * 128 <= row_bytes {
                    self.emit("prefetch.global.L2", &[&op]);
                } else {
                    let inside =
                        self.def(RegClass::Pred, "setp.lt.u64", &[&line, &(row_bytes - at)]);
                    self.emit(&format!("@{inside} prefetch.global.L2"), &[&op]);
                }
            }
        }
        self.b.place(&skip);
        Ok(())
    }

    /// The emitted entry (named as `launch` says, with parameters `names`) and its launch.
    fn finish(self, names: Vec<String>, launch: KernelLaunch) -> (PtxKernel, KernelLaunch) {
        let kernel = PtxKernel {
            name: launch.entry.clone(),
            params: names,
            body: self.b,
        };
        (kernel, launch)
    }

    /// The state space of `buf`'s accesses: a row-fused entry's temporaries are shared.
    fn space(&self, buf: BufRef) -> &'static str {
        match (buf, &self.fused) {
            (BufRef::Temp(_), Some(_)) => "shared",
            _ => "global",
        }
    }

    /// The canonical reduction of the elements `start..end` (≤ 4096 of them) of node
    /// `value`: lane `l` folds `start + l, start + l + 32, …`, then the shuffle tree. The
    /// result is valid in lane 0.
    #[allow(clippy::too_many_arguments)] // the reduction's context, spelled out
    fn chunk(
        &mut self,
        kind: ReduceKind,
        dt: DType,
        value: usize,
        vars: &mut [Reg],
        seq: usize,
        lane: Reg,
        start: Reg,
        end: &dyn Display,
    ) -> R<Reg> {
        let acc = self.b.reg(class(dt));
        let id = self.identity(dt, kind)?;
        self.mov(dt, acc, id);
        let first = self.def(RegClass::B64, "add.s64", &[&start, &lane]);
        // A plain load costs a register and nothing else: many more of them in flight.
        let plain_load = matches!(
            self.k.nodes.get(value).map(|n| &n.kind),
            Some(NodeKind::Load { .. })
        );
        let unroll = if plain_load { LOAD_UNROLL } else { UNROLL };
        // Unrolled: `unroll` of the lane's elements (j, j + 32, …) are evaluated before any
        // is folded, so their loads are in flight together; the folds stay in index order.
        // `j < end - span` is a signed compare (`end - span` may be negative).
        let end64 = self.def(RegClass::B64, "mov.u64", &[end]);
        let (j, top, done) = self.unrolled_loop_begin("lanes", first, &end64, unroll);
        let mut xs = Vec::with_capacity(unroll as usize);
        for u in 0..unroll {
            let ju = self.def(RegClass::B64, "add.s64", &[&j, &(u * LANES)]);
            vars[seq] = self.narrowed(ju);
            self.set_disp(seq, (u * LANES) as i64);
            self.memo.iter_mut().for_each(|m| *m = None);
            xs.push(self.node(value, vars)?);
        }
        self.clear_disp();
        for x in xs {
            let y = self.combine(dt, kind, acc, x);
            self.mov(dt, acc, y);
        }
        self.loop_end(j, &(unroll * LANES), top, done);
        // The rest (fewer than unroll per lane), one at a time.
        let (j, top, done) = self.loop_begin("lane", j, &end64);
        vars[seq] = self.narrowed(j);
        self.memo.iter_mut().for_each(|m| *m = None);
        let x = self.node(value, vars)?;
        let y = self.combine(dt, kind, acc, x);
        self.mov(dt, acc, y);
        self.loop_end(j, &LANES, top, done);
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(self.tree(kind, dt, acc))
    }

    /// `p[j] = op(p[j], p[j + s])` for `s = 16 … 1`, lane `j` holding `p[j]`.
    fn tree(&mut self, kind: ReduceKind, dt: DType, acc: Reg) -> Reg {
        let mut p = acc;
        for s in kiln_compiler::kernel::TREE {
            let other = self.shuffle(dt, "down", p, s as u32);
            p = self.combine(dt, kind, p, other);
        }
        p
    }

    /// `shfl.sync.<mode>.b32` of a value of any dtype (64-bit values in two halves,
    /// predicates as 0/1) across the whole warp.
    fn shuffle(&mut self, dt: DType, mode: &str, v: Reg, b: u32) -> Reg {
        let op = format!("shfl.sync.{mode}.b32");
        let sh = |e: &mut Self, class: RegClass, x: Reg| e.def(class, &op, &[&x, &b, &"31", &"-1"]);
        match class(dt) {
            RegClass::F32 | RegClass::B32 => sh(self, class(dt), v),
            RegClass::F64 | RegClass::B64 => {
                let lo = self.b.reg(RegClass::B32);
                let hi = self.b.reg(RegClass::B32);
                self.emit("mov.b64", &[&format!("{{{lo}, {hi}}}"), &v]);
                let lo2 = sh(self, RegClass::B32, lo);
                let hi2 = sh(self, RegClass::B32, hi);
                self.def(class(dt), "mov.b64", &[&format!("{{{lo2}, {hi2}}}")])
            }
            RegClass::Pred => {
                let w = self.def(RegClass::B32, "selp.u32", &[&1, &0, &v]);
                let w2 = sh(self, RegClass::B32, w);
                self.def(RegClass::Pred, "setp.ne.u32", &[&w2, &0])
            }
        }
    }

    fn mov_op(dt: DType) -> &'static str {
        match class(dt) {
            RegClass::F32 => "mov.f32",
            RegClass::F64 => "mov.f64",
            RegClass::B32 => "mov.b32",
            RegClass::B64 => "mov.b64",
            RegClass::Pred => "mov.pred",
        }
    }

    fn mov(&mut self, dt: DType, d: Reg, s: Reg) {
        self.emit(Self::mov_op(dt), &[&d, &s]);
    }

    fn guarded_mov(&mut self, p: Reg, dt: DType, d: Reg, s: Reg) {
        self.emit(&format!("@{p} {}", Self::mov_op(dt)), &[&d, &s]);
    }

    /// The identity of a reduction (`kiln_interp`'s: sum of floats starts at -0).
    fn identity(&mut self, dt: DType, kind: ReduceKind) -> Result<Reg, EmitError> {
        let id = kind.identity(dt).ok_or_else(|| EmitError::Unsupported {
            kernel: self.k.name.clone(),
            reason: format!("{} of {dt}", kind.name()),
        })?;
        Ok(self.constant(dt, id.bits()))
    }

    /// `op(a, x)` of a reduction.
    fn combine(&mut self, dt: DType, kind: ReduceKind, a: Reg, x: Reg) -> Reg {
        let op = match kind {
            ReduceKind::Sum => BinaryOp::Add,
            ReduceKind::Prod => BinaryOp::Mul,
            ReduceKind::Max => BinaryOp::Max,
            ReduceKind::Min => BinaryOp::Min,
        };
        let r = match dt {
            DType::Bool => Some(self.def(
                RegClass::Pred,
                if kind == ReduceKind::Max {
                    "or.pred"
                } else {
                    "and.pred"
                },
                &[&a, &x],
            )),
            _ => self.binary_op(op, dt, a, x),
        };
        r.expect("every reduction of a non-bool dtype has a binary op")
    }

    /// The dtype of node `n`, checking that it exists.
    fn dtype(&self, n: usize) -> R<DType> {
        match self.k.nodes.get(n) {
            Some(node) => Ok(node.dtype),
            None => self.malformed(format!("node {n} does not exist")),
        }
    }

    /// Operand `a` of node `n`: an earlier node (so evaluation terminates).
    fn operand(&mut self, n: usize, a: usize, vars: &[Reg]) -> R<(Reg, DType)> {
        if a >= n {
            return self.malformed(format!("node {n} uses a later node {a}"));
        }
        let dt = self.dtype(a)?;
        // One level of recursion per node along a dependency chain: grown on demand, so a
        // chain of thousands of ops emits instead of overflowing the thread's stack.
        let r = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.node(a, vars))?;
        Ok((r, dt))
    }

    /// The value of node `n` at the point `vars`.
    fn node(&mut self, n: usize, vars: &[Reg]) -> R<Reg> {
        let Some(node) = self.k.nodes.get(n) else {
            return self.malformed(format!("node {n} does not exist"));
        };
        if let Some(r) = self.pinned[n].or(self.memo[n]) {
            return Ok(r);
        }
        let dt = node.dtype;
        let v = match &node.kind {
            NodeKind::Load { buf, offset } => {
                let bdt = self.buf_dtype(*buf)?;
                if bdt != dt {
                    return self.malformed(format!("load of {bdt} buffer as {dt}"));
                }
                if let Some(lanes) = self.vec_loads.get(n).copied().flatten() {
                    self.memo[n] = Some(lanes[self.lane]);
                    return Ok(lanes[self.lane]);
                }
                let m = self.load_operand(n, *buf, offset, dt, vars)?;
                let ld = format!("ld.{}.{}", self.space(*buf), mem_type(dt));
                if dt == DType::Bool {
                    let byte = self.def(RegClass::B32, &ld, &[&m]);
                    self.def(RegClass::Pred, "setp.ne.u32", &[&byte, &0])
                } else {
                    self.def(class(dt), &ld, &[&m])
                }
            }
            NodeKind::Const(bits) => self.constant(dt, *bits),
            NodeKind::Index(e) if self.narrow => {
                let x = self.iexpr(e, vars)?;
                match dt {
                    DType::F32 => self.def(RegClass::F32, "cvt.rn.f32.s32", &[&x]),
                    DType::F64 => self.def(RegClass::F64, "cvt.rn.f64.s32", &[&x]),
                    DType::I32 | DType::U32 => x,
                    DType::I64 => self.def(RegClass::B64, "cvt.s64.s32", &[&x]),
                    DType::Bool => self.def(RegClass::Pred, "setp.ne.s32", &[&x, &0]),
                }
            }
            NodeKind::Index(e) => {
                let x = self.iexpr(e, vars)?;
                match dt {
                    DType::F32 => self.def(RegClass::F32, "cvt.rn.f32.s64", &[&x]),
                    DType::F64 => self.def(RegClass::F64, "cvt.rn.f64.s64", &[&x]),
                    DType::I32 | DType::U32 => self.def(RegClass::B32, "cvt.u32.u64", &[&x]),
                    DType::I64 => x,
                    DType::Bool => self.def(RegClass::Pred, "setp.ne.s64", &[&x, &0]),
                }
            }
            NodeKind::InRange { e, lo, hi } => {
                let x = self.iexpr(e, vars)?;
                let (ge, lt) = (self.iop("setp.ge", "s"), self.iop("setp.lt", "s"));
                let a = self.def(RegClass::Pred, &ge, &[&x, lo]);
                let c = self.def(RegClass::Pred, &lt, &[&x, hi]);
                self.def(RegClass::Pred, "and.pred", &[&a, &c])
            }
            NodeKind::Unary(u, a) => {
                let (x, adt) = self.operand(n, *a, vars)?;
                if adt != dt {
                    return self.malformed(format!("{} of {adt} typed {dt}", u.name()));
                }
                match self.unary(*u, dt, x) {
                    Some(r) => r,
                    None => return self.unsupported(format!("{} on {dt}", u.name())),
                }
            }
            NodeKind::Binary(op, x, y) => {
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if xdt != dt || ydt != dt {
                    return self.malformed(format!("{} of {xdt}, {ydt} typed {dt}", op.name()));
                }
                match self.binary_op(*op, dt, x, y) {
                    Some(r) => r,
                    None => return self.unsupported(format!("{} on {dt}", op.name())),
                }
            }
            NodeKind::Compare(d, x, y) => {
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if xdt != ydt || dt != DType::Bool {
                    return self.malformed(format!("compare of {xdt}, {ydt} typed {dt}"));
                }
                self.compare(*d, xdt, x, y)
            }
            NodeKind::Select(p, x, y) => {
                let (p, pdt) = self.operand(n, *p, vars)?;
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if pdt != DType::Bool || xdt != dt || ydt != dt {
                    return self.malformed(format!("select of {pdt}, {xdt}, {ydt} typed {dt}"));
                }
                self.select(dt, p, x, y)
            }
            NodeKind::Convert(a) => {
                let (x, from) = self.operand(n, *a, vars)?;
                self.convert(x, from, dt)
            }
            NodeKind::Random {
                dist,
                alg,
                seed,
                index,
            } => {
                if !random::supported(*dist, *alg, dt) {
                    return self.unsupported(format!(
                        "{} (alg={}) producing {dt}",
                        dist.name(),
                        alg.name()
                    ));
                }
                let st = match self.streams[n] {
                    Some(st) => st,
                    None => {
                        let words = self.seed_words(n, seed, vars)?;
                        match random::stream(&mut self.b, *alg, &words) {
                            Ok(st) => st,
                            Err(e) => return self.malformed(e),
                        }
                    }
                };
                // The counter math is kiln_rng's, on the 64-bit index.
                let i = self.iexpr(index, vars)?;
                let i = self.widen(i);
                match random::element(&mut self.b, &st, *dist, dt, i) {
                    Ok(r) => r,
                    Err(e) => return self.unsupported(e),
                }
            }
            NodeKind::ReduceResult => match self.reduce_result {
                Some(r) => r,
                None => return self.malformed("reduce_result outside a reduction's epilogue"),
            },
        };
        self.memo[n] = Some(v);
        Ok(v)
    }

    /// A register holding the constant with `bits` in dtype `dt`.
    fn constant(&mut self, dt: DType, bits: u64) -> Reg {
        match dt {
            DType::F32 => {
                let lit = format!("0f{:08X}", bits as u32);
                self.def(RegClass::F32, "mov.f32", &[&lit])
            }
            DType::F64 => {
                let lit = format!("0d{bits:016X}");
                self.def(RegClass::F64, "mov.f64", &[&lit])
            }
            DType::I32 | DType::U32 => self.def(
                RegClass::B32,
                "mov.b32",
                &[&format!("0x{:08X}", bits as u32)],
            ),
            DType::I64 => self.def(RegClass::B64, "mov.b64", &[&format!("0x{bits:016X}")]),
            DType::Bool => {
                let w = self.def(RegClass::B32, "mov.b32", &[&u32::from(bits != 0)]);
                self.def(RegClass::Pred, "setp.ne.u32", &[&w, &0])
            }
        }
    }

    /// An index expression as an index register: `.b64` (`i64` arithmetic), or `.b32`
    /// (`i32`) when narrow — [`narrow_indices`] proved every value fits, so the results are
    /// the same. `Div`/`Rem` operands are never negative, as the kernel IR promises.
    fn iexpr(&mut self, e: &IExpr, vars: &[Reg]) -> R<Reg> {
        Ok(match e {
            IExpr::Var(v) => match vars.get(*v) {
                Some(&r) => r,
                None => return self.malformed(format!("loop variable {v} does not exist")),
            },
            IExpr::Const(c) => self.imm_idx(*c),
            IExpr::Add(x, y) => {
                let x = self.iexpr(x, vars)?;
                let y = self.iexpr(y, vars)?;
                let op = self.iop("add", "s");
                self.def(self.ic(), &op, &[&x, &y])
            }
            IExpr::Mul(x, c) => {
                let x = self.iexpr(x, vars)?;
                let op = self.iop("mul.lo", "s");
                self.def(self.ic(), &op, &[&x, c])
            }
            IExpr::Div(x, c) | IExpr::Rem(x, c) => {
                if *c <= 0 {
                    return self.malformed(format!("index division by {c}"));
                }
                let x = self.iexpr(x, vars)?;
                self.div_rem_imm(matches!(e, IExpr::Div(..)), x, *c as u64)
            }
            IExpr::Clamp(x, lo, hi) => {
                let x = self.iexpr(x, vars)?;
                let (min, max) = (self.iop("min", "s"), self.iop("max", "s"));
                let x = self.def(self.ic(), &min, &[&x, hi]);
                self.def(self.ic(), &max, &[&x, lo])
            }
        })
    }

    fn unary(&mut self, u: UnaryOp, dt: DType, x: Reg) -> Option<Reg> {
        match dt {
            DType::F32 => float_unary::<Single>(&mut self.b, u, x),
            DType::F64 => float_unary::<Double>(&mut self.b, u, x),
            DType::Bool => (u == UnaryOp::Not).then(|| self.def(RegClass::Pred, "not.pred", &[&x])),
            DType::I32 | DType::U32 | DType::I64 => {
                let (s, bt) = int_types(dt);
                let c = class(dt);
                let signed = dt != DType::U32;
                // `neg` exists only for signed types; two's complement makes it the same.
                let neg = if dt == DType::I64 {
                    "neg.s64"
                } else {
                    "neg.s32"
                };
                Some(match u {
                    UnaryOp::Neg => self.def(c, neg, &[&x]),
                    UnaryOp::Abs if signed => {
                        // Wrapping: |MIN| = MIN.
                        let n = self.def(c, neg, &[&x]);
                        let lt = self.def(RegClass::Pred, &format!("setp.lt.{s}"), &[&x, &0]);
                        self.def(c, &format!("selp.{bt}"), &[&n, &x, &lt])
                    }
                    UnaryOp::Abs => x,
                    UnaryOp::Not => self.def(c, &format!("not.{bt}"), &[&x]),
                    UnaryOp::Sign => {
                        let one = int_imm(dt, 1);
                        let zero = int_imm(dt, 0);
                        if signed {
                            let m_one = int_imm(dt, -1);
                            let gt = self.def(RegClass::Pred, &format!("setp.gt.{s}"), &[&x, &0]);
                            let lt = self.def(RegClass::Pred, &format!("setp.lt.{s}"), &[&x, &0]);
                            let r = self.def(c, &format!("selp.{bt}"), &[&m_one, &zero, &lt]);
                            self.def(c, &format!("selp.{bt}"), &[&one, &r, &gt])
                        } else {
                            let nz = self.def(RegClass::Pred, &format!("setp.ne.{s}"), &[&x, &0]);
                            self.def(c, &format!("selp.{bt}"), &[&one, &zero, &nz])
                        }
                    }
                    _ => return None,
                })
            }
        }
    }

    /// A binary op on two values of `dt`; `None` where it is not defined for `dt`.
    fn binary_op(&mut self, op: BinaryOp, dt: DType, x: Reg, y: Reg) -> Option<Reg> {
        match dt {
            DType::F32 => float_binary::<Single>(&mut self.b, op, x, y),
            DType::F64 => float_binary::<Double>(&mut self.b, op, x, y),
            DType::Bool => {
                let &(_, opcode) = BOOL_BINARY.iter().find(|(o, _)| *o == op)?;
                Some(self.def(RegClass::Pred, opcode, &[&x, &y]))
            }
            DType::I32 | DType::U32 | DType::I64 => {
                let (s, bt) = int_types(dt);
                if let Some(&(_, pattern)) = INT_BINARY.iter().find(|(o, _)| *o == op) {
                    let opcode = pattern.replace("{s}", s).replace("{b}", bt);
                    return Some(self.def(class(dt), &opcode, &[&x, &y]));
                }
                match op {
                    BinaryOp::Div | BinaryOp::Rem => {
                        Some(self.int_div(op == BinaryOp::Div, dt, x, y))
                    }
                    _ => None,
                }
            }
        }
    }

    /// XLA's integer division and remainder: divide by a safe divisor, then select the
    /// defined results for `y == 0` and (signed) `y == -1`.
    fn int_div(&mut self, div: bool, dt: DType, x: Reg, y: Reg) -> Reg {
        let (s, bt) = int_types(dt);
        let c = class(dt);
        let selp = format!("selp.{bt}");
        let (zero, one, m_one) = (int_imm(dt, 0), int_imm(dt, 1), int_imm(dt, -1));
        let is_zero = self.def(RegClass::Pred, &format!("setp.eq.{s}"), &[&y, &zero]);
        if dt == DType::U32 {
            let d = self.def(c, &selp, &[&one, &y, &is_zero]);
            return if div {
                let q = self.def(c, "div.u32", &[&x, &d]);
                self.def(c, &selp, &[&m_one, &q, &is_zero])
            } else {
                let r = self.def(c, "rem.u32", &[&x, &d]);
                self.def(c, &selp, &[&x, &r, &is_zero])
            };
        }
        let is_m_one = self.def(RegClass::Pred, &format!("setp.eq.{s}"), &[&y, &m_one]);
        let unsafe_d = self.def(RegClass::Pred, "or.pred", &[&is_zero, &is_m_one]);
        let d = self.def(c, &selp, &[&one, &y, &unsafe_d]);
        if div {
            let q = self.def(c, &format!("div.{s}"), &[&x, &d]);
            let neg = self.def(c, &format!("neg.{s}"), &[&x]);
            let q = self.def(c, &selp, &[&neg, &q, &is_m_one]);
            self.def(c, &selp, &[&m_one, &q, &is_zero])
        } else {
            let r = self.def(c, &format!("rem.{s}"), &[&x, &d]);
            let r = self.def(c, &selp, &[&zero, &r, &is_m_one]);
            self.def(c, &selp, &[&x, &r, &is_zero])
        }
    }

    fn compare(&mut self, d: CompareDir, dt: DType, x: Reg, y: Reg) -> Reg {
        let &(_, fcc, icc) = COMPARE
            .iter()
            .find(|(c, _, _)| *c == d)
            .expect("every direction is in the table");
        let (cc, ty, x, y) = match dt {
            DType::F32 => (fcc, "f32", x, y),
            DType::F64 => (fcc, "f64", x, y),
            DType::I32 | DType::U32 | DType::I64 => (icc, int_types(dt).0, x, y),
            DType::Bool => {
                // false < true: compare as 0/1.
                let a = self.def(RegClass::B32, "selp.u32", &[&1, &0, &x]);
                let b = self.def(RegClass::B32, "selp.u32", &[&1, &0, &y]);
                (icc, "u32", a, b)
            }
        };
        self.def(RegClass::Pred, &format!("setp.{cc}.{ty}"), &[&x, &y])
    }

    fn select(&mut self, dt: DType, p: Reg, x: Reg, y: Reg) -> Reg {
        let op = match class(dt) {
            RegClass::F32 => "selp.f32",
            RegClass::F64 => "selp.f64",
            RegClass::B32 => "selp.b32",
            RegClass::B64 => "selp.b64",
            RegClass::Pred => {
                let a = self.def(RegClass::Pred, "and.pred", &[&p, &x]);
                let np = self.def(RegClass::Pred, "not.pred", &[&p]);
                let b = self.def(RegClass::Pred, "and.pred", &[&np, &y]);
                return self.def(RegClass::Pred, "or.pred", &[&a, &b]);
            }
        };
        self.def(class(dt), op, &[&x, &y, &p])
    }

    /// `convert` with `kiln_interp`'s rules (Rust `as`), one table row per dtype pair.
    fn convert(&mut self, x: Reg, from: DType, to: DType) -> Reg {
        use DType::*;
        let fname = |d: DType| if d == F64 { "f64" } else { "f32" };
        match (from, to) {
            _ if from == to => x,
            (I32, U32) | (U32, I32) => x,
            (F32, F64) => self.def(RegClass::F64, "cvt.f64.f32", &[&x]),
            (F64, F32) => self.def(RegClass::F32, "cvt.rn.f32.f64", &[&x]),
            (F32 | F64, I32 | I64 | U32) => {
                // Truncating and saturating (PTX clamps by default); NaN -> 0 explicitly.
                let (s, bt) = int_types(to);
                let i = self.def(class(to), &format!("cvt.rzi.{s}.{}", fname(from)), &[&x]);
                let nan = self.def(
                    RegClass::Pred,
                    &format!("setp.nan.{}", fname(from)),
                    &[&x, &x],
                );
                self.def(class(to), &format!("selp.{bt}"), &[&0, &i, &nan])
            }
            (F32 | F64, Bool) => {
                // x != 0, so NaN -> true.
                let z = self.constant(from, 0);
                self.def(
                    RegClass::Pred,
                    &format!("setp.neu.{}", fname(from)),
                    &[&x, &z],
                )
            }
            (I32 | I64 | U32, F32 | F64) => {
                let s = int_types(from).0;
                self.def(class(to), &format!("cvt.rn.{}.{s}", fname(to)), &[&x])
            }
            (I32, I64) => self.def(RegClass::B64, "cvt.s64.s32", &[&x]),
            (U32, I64) => self.def(RegClass::B64, "cvt.u64.u32", &[&x]),
            (I64, I32 | U32) => self.def(RegClass::B32, "cvt.u32.u64", &[&x]),
            (I32 | I64 | U32, Bool) => {
                let s = int_types(from).0;
                self.def(RegClass::Pred, &format!("setp.ne.{s}"), &[&x, &0])
            }
            (Bool, F32) => self.def(
                RegClass::F32,
                "selp.f32",
                &[&"0f3F800000", &"0f00000000", &x],
            ),
            (Bool, F64) => self.def(
                RegClass::F64,
                "selp.f64",
                &[&"0d3FF0000000000000", &"0d0000000000000000", &x],
            ),
            (Bool, I32 | U32) => self.def(RegClass::B32, "selp.u32", &[&1, &0, &x]),
            (Bool, I64) => self.def(RegClass::B64, "selp.u64", &[&1, &0, &x]),
            // Same-dtype pairs are the first arm; listed so that the match is exhaustive.
            (F32, F32) | (F64, F64) | (I32, I32) | (I64, I64) | (U32, U32) | (Bool, Bool) => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn contiguity_is_the_linear_index_plus_a_constant() {
        let space = [5, 7];
        assert_eq!(contiguous_offset(&linear2(7), &space), Some(0));
        let plus8 = IExpr::sum(linear2(7), IExpr::Const(8));
        assert_eq!(contiguous_offset(&plus8, &space), Some(8));
        // A transpose (column-major) and a broadcast (row only) are not contiguous.
        let transposed = IExpr::sum(IExpr::scaled(IExpr::Var(1), 5), IExpr::Var(0));
        assert_eq!(contiguous_offset(&transposed, &space), None);
        assert_eq!(contiguous_offset(&IExpr::Var(0), &space), None);
        // Division (reshape-like maps) is not recognised: scalar, which is only slower.
        assert_eq!(contiguous_offset(&IExpr::quot(linear2(7), 2), &space), None);
    }

    #[test]
    fn entry_names_are_ptx_identifiers() {
        assert_eq!(entry_name("cluster_0", "k1"), "cluster_0_k1");
        assert_eq!(entry_name("1x.y", "k"), "_1x_y_k");
    }
}
