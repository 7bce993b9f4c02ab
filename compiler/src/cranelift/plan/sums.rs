//! Which float sums run their accumulation in host calls ([`HostSum`]) instead of the
//! emitted four-lane loop: the interpreter's canonical-order sum (`kiln_interp::sum_row`,
//! `kiln_interp::sum_into_lanes`) on its 256-bit build, the same order and so the same bits.

use super::staging::{StagedBlock, StagedNode};
use crate::cranelift::host::half_rounding;
use crate::cranelift::host::held;
use crate::kernel::analysis::{loop_variant, RandomNodes};
use crate::kernel::{Kernel, NodeKind};
use kiln_ir::{BinaryOp, DType, ReduceKind};
use kiln_math::float16::Half;

/// How a sum's summands reach a host call (`host::HostCalls::sum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostSum {
    /// The summand is this load, with unit stride along the sequence: its `f32`s, or the
    /// exact widenings of its 16-bit floats. One call per chunk reads the row.
    Row(usize),
    /// The summand is `(x - c) * (x - c)` (a variance's), `x` a float load with unit stride
    /// along the sequence (an `f32` one, or the exact widening of a 16-bit one) and `c` one
    /// value per row. One call per chunk reads `x`'s row.
    ShiftedSquare {
        /// The load.
        x: usize,
        /// The value subtracted.
        c: usize,
        /// The 16-bit format the difference is rounded to, and the square too when
        /// `square_rounded` (a 16-bit variance, every op's result rounded; a `bf16` one
        /// whose square is converted straight to `f32`, as XLA:CPU computes it, when not):
        /// `x` is a load of this format.
        round: Option<Half>,
        /// Whether the square is rounded to `round` too.
        square_rounded: bool,
    },
    /// The summand is held in this staged node's block: one call per window folds the block
    /// into the 32 lane accumulators.
    Block(usize),
}

/// The shortest sequence summed by host calls: a call costs about as much as a few dozen
/// elements of the emitted loop (the same threshold as the host extremum's).
pub const HOST_SUM_MIN_LEN: usize = 256;

/// The [`HostSum`] of kernel `k`'s reduction over its sequence variable `var`, before
/// staging (a row the call reads needs no staged node): an `f32` sum of at least
/// [`HOST_SUM_MIN_LEN`] elements whose summand is a row or a shifted square.
pub fn row_sum(k: &Kernel, var: usize) -> Option<HostSum> {
    let red = k.reduce.as_ref()?;
    if red.kind != ReduceKind::Sum || red.len < HOST_SUM_MIN_LEN {
        return None;
    }
    let value = red.value;
    if k.nodes[value].dtype != DType::F32 {
        return None;
    }
    let unit_row = |x: usize, dtypes: &[DType]| {
        matches!(&k.nodes[x].kind,
            NodeKind::Load { offset, .. } if offset.coefficient(var) == Some(1))
            && dtypes.contains(&k.nodes[x].dtype)
    };
    let h = held(k, value);
    if unit_row(h, &[DType::F32, DType::F16, DType::Bf16]) {
        return Some(HostSum::Row(h));
    }
    // A 16-bit variance's summand with every op rounded: `round(round(x - c)²)`, its `f32`;
    // or with the difference rounded and the square not, `round(x - c)²`.
    let (square, square_round) = match half_rounding(k, h) {
        Some(to) => match k.nodes[h].kind {
            NodeKind::Convert(m) => (m, Some(to)),
            _ => return None,
        },
        None => (value, None),
    };
    let NodeKind::Binary(BinaryOp::Mul, a, a2) = k.nodes[square].kind else {
        return None;
    };
    if a != a2 || k.nodes[a].dtype != DType::F32 {
        return None;
    }
    // The difference, rounded to the square's format when the square is rounded.
    let d = held(k, a);
    let round = half_rounding(k, d);
    if square_round.is_some() && round != square_round {
        return None;
    }
    let diff = match (round, &k.nodes[d].kind) {
        (Some(_), &NodeKind::Convert(m)) => m,
        _ => a,
    };
    let NodeKind::Binary(BinaryOp::Sub, x, c) = k.nodes[diff].kind else {
        return None;
    };
    let variant = loop_variant(&k.nodes, &|w| w == var, RandomNodes::Variant);
    let x = held(k, x);
    let row = match round {
        Some(Half::Bf16) => unit_row(x, &[DType::Bf16]),
        Some(Half::F16) => unit_row(x, &[DType::F16]),
        None => unit_row(x, &[DType::F32, DType::F16, DType::Bf16]),
    };
    let f32s = [diff, c].iter().all(|&n| k.nodes[n].dtype == DType::F32);
    let square_rounded = square_round.is_some();
    (row && f32s && !variant[c]).then_some(HostSum::ShiftedSquare {
        x,
        c,
        round,
        square_rounded,
    })
}

/// The [`HostSum`] of kernel `k`'s reduction once `staged` is known: an `f32` sum of at
/// least [`HOST_SUM_MIN_LEN`] elements whose summand is held in a staged node's stack block
/// (a softmax's `exp`, a 16-bit variance's rounded square).
pub fn block_sum(k: &Kernel, staged: &[StagedNode]) -> Option<HostSum> {
    let red = k.reduce.as_ref()?;
    if red.kind != ReduceKind::Sum
        || red.len < HOST_SUM_MIN_LEN
        || k.nodes[red.value].dtype != DType::F32
    {
        return None;
    }
    let h = held(k, red.value);
    let f32_block = |b: StagedBlock| match b {
        StagedBlock::Stack { bytes } => bytes as usize == super::WINDOW * 4,
        StagedBlock::Store(_) => false,
    };
    staged
        .iter()
        .any(|s| s.node == h && f32_block(s.block))
        .then_some(HostSum::Block(h))
}
