//! Scheduling of one kernel function, decided before any Cranelift code exists: a
//! [`KernelPlan`] says whether the kernel has a vector form and at which width, which loop
//! nest runs it, whether a reduction accumulates in vectors or in host calls, which host
//! functions it imports, which nodes are computed once per row instead of per element
//! (pinned), and which are staged through block-math windows. [`crate::cranelift::emit`]
//! renders a plan and decides none of this; `TF_CPP_VMODULE=cpu_compiler=2` logs each plan
//! (its [`Display`](std::fmt::Display) form).
//!
//! Files: this one (the plan and the loop form), `vector_form` (which kernels vectorise),
//! `staging` (pinned and staged nodes), `sums` (which sums accumulate in host calls). What it does not decide: how work is split into
//! tasks and row blocks ([`crate::cranelift::schedule`], whose column tiles and function
//! parts it reads), or anything the kernel-IR passes already fixed.

mod staging;
mod sums;
mod vector_form;

use super::host::HostImports;
use super::schedule::{column_tile, Part};
use crate::kernel::{Kernel, NodeKind, Program};
use kiln_ir::DType;
use std::fmt;

pub use staging::{Pins, StagedBinary, StagedBlock, StagedNode, StagedSource, WINDOW};
pub use sums::{HostSum, HOST_SUM_MIN_LEN};
pub use vector_form::lane_dtype;

/// What the target offers a kernel, fixed for a whole compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetFacts {
    /// 128-bit vector code is available (SSE4.1 on x86-64).
    pub vector: bool,
    /// Block math runs in host calls ([`crate::cranelift::cpu::CpuOptions`]' wide math on a
    /// CPU whose interpreter build is 256 bits wide).
    pub block_math: bool,
    /// The host's block-math loops run sixteen `f32` lanes (AVX-512F): a rounding of one
    /// binary op's result is then one `half_binary` call (without it, the call's loop
    /// would be scalar, slower than emitted four-lane code and an eight-lane rounding).
    pub sixteen_lanes: bool,
}

/// How one function of a kernel runs: every decision the emitter renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPlan {
    /// Lanes of the kernel's vector form: 4 (32-bit lanes) or 2 (`f64` lanes); `None` when
    /// it runs one lane at a time.
    pub vector: Option<u32>,
    /// The loop nest.
    pub form: LoopForm,
    /// Whether the reduction's lane accumulators are vectors (the vector form, and the
    /// reduced dtype has lanes at its width).
    pub vector_acc: bool,
    /// Whether the reduction is one host extremum call per kept point (a float max or min
    /// of a row read with unit stride; see `host::host_extremum`).
    pub extremum: bool,
    /// How a float sum's accumulation runs in host calls, if it does ([`HostSum`]).
    pub host_sum: Option<HostSum>,
    /// The host functions the function imports.
    pub calls: HostImports,
    /// Nodes computed once per row, outside the loop over one variable.
    pub pinned: Option<Pins>,
    /// Nodes staged through block-math windows, operands before users.
    pub staged: Vec<StagedNode>,
    /// Stores (by index) packed into their `f16` buffer a window at a time
    /// ([`staging::packed_stores`]).
    pub packed: Vec<usize>,
    /// Nodes used only as seeds of random nodes: evaluated once, as scalars, whatever the
    /// lanes (so they do not keep the kernel from vectorising).
    pub seed_only: Vec<usize>,
    /// Vectors per iteration of the pointwise inner loop ([`LoopForm::Rows`]): two
    /// (independent work for the out-of-order core) when the inner dimension holds at least
    /// [`UNROLL_MIN_VECTORS`] vectors, else one ([`inner_copies`]).
    pub inner_copies: i64,
}

/// The fewest vectors an inner dimension holds for its loop to run two per iteration.
pub const UNROLL_MIN_VECTORS: usize = 16;

/// Vectors per inner-loop iteration for an inner dimension of `extent` elements at `vector`
/// lanes. A short row (a recurrent cell's 12 gate values) would run a two-vector body at
/// most a few times, while that body doubles the function's code — and Cranelift's compile
/// time, which grows faster than the code (a GRU step's kernel: 5235 CLIF instructions and
/// 8–12 ms to compile with the second copy).
pub fn inner_copies(extent: usize, vector: Option<u32>) -> i64 {
    match vector {
        Some(w) if extent >= UNROLL_MIN_VECTORS * w as usize => 2,
        _ => 1,
    }
}

/// The loop nest of a kernel function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopForm {
    /// A column reduction in tiles of kept points, one per vector lane
    /// ([`column_tile`]).
    Columns {
        /// Points per tile.
        tile: usize,
    },
    /// One kept point per row, its whole sequence reduced in the canonical order.
    Reduce,
    /// A split reduction's chunk partials ([`Part::Partials`]).
    Partials {
        /// Argument slot of the partials buffer.
        slot: usize,
    },
    /// A split reduction's combination of its partials ([`Part::Combine`]).
    Combine {
        /// Argument slot of the partials buffer.
        slot: usize,
    },
    /// A kernel of one point.
    Point,
    /// Pointwise rows: the innermost dimension in the inner loop (in staging windows when
    /// nodes are staged).
    Rows,
}

/// The plan of function `part` of kernel `k` of `p` on a target with `facts`.
pub fn plan_kernel(p: &Program, k: &Kernel, part: Part, facts: TargetFacts) -> KernelPlan {
    let calls = host_imports(k, facts);
    let seed_only = vector_form::seed_only(k);
    let vector = facts
        .vector
        .then(|| vector_form::vector_width(p, k, &seed_only))
        .flatten();
    let rank = k.space.len();
    let mut plan = KernelPlan {
        vector,
        form: LoopForm::Point,
        vector_acc: false,
        extremum: false,
        host_sum: None,
        calls,
        pinned: None,
        staged: Vec::new(),
        packed: Vec::new(),
        seed_only: (0..k.nodes.len()).filter(|&n| seed_only[n]).collect(),
        inner_copies: inner_copies(k.space.last().copied().unwrap_or(1), vector),
    };
    let Some(red) = &k.reduce else {
        if rank > 0 {
            plan.form = LoopForm::Rows;
            let var = rank - 1;
            let roots: Vec<usize> = k.stores.iter().map(|s| s.value).collect();
            plan.pinned = Some(staging::pins(k, var, vector));
            plan.staged = staging::staged_nodes(k, &calls, &roots, var, vector, true);
            let wide = facts.block_math && super::host::host_windows(k);
            plan.packed = staging::packed_stores(p, k, &plan.staged, wide);
            // The packing call is a block-math op.
            plan.calls.math |= !plan.packed.is_empty();
        }
        return only_used_shifted_scalar(k, plan);
    };
    let dt = k.nodes[red.value].dtype;
    plan.vector_acc = vector.is_some_and(|w| lane_dtype(w, dt));
    plan.form = match (part, column_tile(k)) {
        (Part::Whole, Some(tile)) => LoopForm::Columns { tile },
        (Part::Partials { slot }, _) => LoopForm::Partials { slot },
        (Part::Combine { slot }, _) => {
            // The partials are reloaded from memory: vector loads of `f32` only.
            plan.vector_acc &= dt == DType::F32;
            LoopForm::Combine { slot }
        }
        (Part::Whole, None) => LoopForm::Reduce,
    };
    if matches!(plan.form, LoopForm::Reduce) {
        let unit_stride = matches!(&k.nodes[red.value].kind,
            NodeKind::Load { offset, .. } if offset.coefficient(rank) == Some(1));
        // `calls.extremum`: a float max or min long enough for the call.
        plan.extremum = calls.extremum && unit_stride;
    }
    if matches!(plan.form, LoopForm::Reduce | LoopForm::Partials { .. }) && red.len > 0 {
        plan.pinned = Some(staging::pins(k, rank, vector));
        // A row the host sum reads needs nothing staged; a staged summand's block it folds.
        plan.host_sum = calls.sum.then(|| sums::row_sum(k, rank)).flatten();
        if plan.host_sum.is_none() {
            plan.staged = staging::staged_nodes(k, &calls, &[red.value], rank, vector, false);
            plan.host_sum = calls
                .sum
                .then(|| sums::block_sum(k, &plan.staged))
                .flatten();
        }
    }
    only_used_shifted_scalar(k, plan)
}

/// `plan` importing the shifted scalar and the 16-bit binary functions only when a staged
/// node calls them: the kernel-wide tests (`host::kernel_has_shifted_scalar`,
/// `host::kernel_has_half_binary`) also see nodes that are not staged, such as layer
/// norm's `d * d`, whose second operand varies along the loop.
fn only_used_shifted_scalar(k: &Kernel, mut plan: KernelPlan) -> KernelPlan {
    plan.calls.shifted_scalar = plan
        .staged
        .iter()
        .any(|s| s.shift.is_some() && matches!(k.nodes[s.node].kind, NodeKind::Binary(..)));
    plan.calls.half_binary = plan.staged.iter().any(|s| s.binary.is_some());
    plan.calls.sum = plan.host_sum.is_some();
    plan
}

/// The host functions kernel `k` imports: the float remainder if it has one; with block
/// math, for windows long enough to pay (`host::host_windows`), each block-math function
/// one of its nodes can use, and the extremum for a long float max or min.
fn host_imports(k: &Kernel, facts: TargetFacts) -> HostImports {
    use super::host::{
        host_extremum, host_windows, kernel_has_float_rem, kernel_has_half_binary,
        kernel_has_host_sum, kernel_has_math, kernel_has_scalar_op, kernel_has_shifted_math,
        kernel_has_shifted_scalar,
    };
    let wide = facts.block_math && host_windows(k);
    HostImports {
        fmod: kernel_has_float_rem(k),
        math: wide && kernel_has_math(k),
        scalar: wide && kernel_has_scalar_op(k),
        shifted: wide && kernel_has_shifted_math(k),
        extremum: wide && host_extremum(k),
        shifted_scalar: wide && kernel_has_shifted_scalar(k),
        half_binary: wide && facts.sixteen_lanes && kernel_has_half_binary(k),
        sum: wide && kernel_has_host_sum(k),
    }
}

impl fmt::Display for LoopForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopForm::Columns { tile } => write!(f, "columns tile={tile}"),
            LoopForm::Reduce => f.write_str("reduce"),
            LoopForm::Partials { slot } => write!(f, "partials slot={slot}"),
            LoopForm::Combine { slot } => write!(f, "combine slot={slot}"),
            LoopForm::Point => f.write_str("point"),
            LoopForm::Rows => f.write_str("rows"),
        }
    }
}

/// `[a,b,c]`.
fn list(items: impl IntoIterator<Item = usize>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

impl fmt::Display for KernelPlan {
    /// One line: `vector=4 form=rows calls=[math] staged=[3,5] half_binary=[5] packed=[0]
    /// pinned@1=[2]`; parts that
    /// say nothing (no accumulators, no calls, nothing staged or pinned) are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.vector {
            Some(w) => write!(f, "vector={w}")?,
            None => f.write_str("vector=none")?,
        }
        write!(f, " form={}", self.form)?;
        if self.vector_acc {
            f.write_str(" acc=vector")?;
        }
        if self.extremum {
            f.write_str(" extremum")?;
        }
        match self.host_sum {
            Some(HostSum::Row(x)) => write!(f, " sum=row({x})")?,
            Some(HostSum::ShiftedSquare {
                x, c, round: None, ..
            }) => write!(f, " sum=square({x},{c})")?,
            Some(HostSum::ShiftedSquare {
                x,
                c,
                round: Some(h),
                square_rounded,
            }) => {
                let h = match h {
                    kiln_math::float16::Half::Bf16 => "bf16",
                    kiln_math::float16::Half::F16 => "f16",
                };
                // `-diff`: the difference rounded, the square not.
                let only = if square_rounded { "" } else { "-diff" };
                write!(f, " sum=square({x},{c},{h}{only})")?
            }
            Some(HostSum::Block(n)) => write!(f, " sum=block({n})")?,
            None => {}
        }
        let calls = self.calls.names();
        if !calls.is_empty() {
            write!(f, " calls=[{}]", calls.join(","))?;
        }
        if !self.staged.is_empty() {
            write!(f, " staged={}", list(self.staged.iter().map(|s| s.node)))?;
        }
        let binary = self.staged.iter().filter(|s| s.binary.is_some());
        if binary.clone().next().is_some() {
            write!(f, " half_binary={}", list(binary.map(|s| s.node)))?;
        }
        if !self.packed.is_empty() {
            write!(f, " packed={}", list(self.packed.iter().copied()))?;
        }
        if let Some(p) = self.pinned.as_ref().filter(|p| !p.nodes.is_empty()) {
            write!(f, " pinned@{}={}", p.var, list(p.nodes.iter().copied()))?;
        }
        if !self.seed_only.is_empty() {
            write!(f, " seed_only={}", list(self.seed_only.iter().copied()))?;
        }
        if self.form == LoopForm::Rows && self.vector.is_some() && self.inner_copies != 2 {
            write!(f, " copies={}", self.inner_copies)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
