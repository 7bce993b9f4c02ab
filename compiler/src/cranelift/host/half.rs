//! The 16-bit float side of block math: staged roundings to `f16`/`bf16`, staged widenings
//! of 16-bit loads, packed `f16` stores (all through the `f32` block-math function, at op
//! indices past `kiln_interp::MATH_OPS`), and one binary op with the rounding of its
//! result (`x op y` then `convert` to 16 bits) in one call ([`HostCalls::half_binary`]).
//!
//! [`HostCalls::half_binary`]: super::HostCalls::half_binary

use super::{block_parts, math_block, with_block};
use crate::kernel::{Kernel, NodeKind};
use kiln_interp::{HalfOperand, HALF_BINARY_OPS};
use kiln_ir::{BinaryOp, DType};
use kiln_math::float16::Half;

/// The index past `kiln_interp::MATH_OPS` that asks the `f32` block-math function
/// ([`kiln_math_block_f32`](super::kiln_math_block_f32)) to round each element to `to`'s precision instead
/// (`kiln_interp::round_half_block`: F16C for `f16`, the rule on eight lanes for `bf16`,
/// the same bits as the rule the interpreter runs): a staged `convert` to a 16-bit float
/// ([`half_rounding`]).
pub fn round_half_op(to: Half) -> usize {
    kiln_interp::MATH_OPS.len()
        + match to {
            Half::F16 => 0,
            Half::Bf16 => 1,
        }
}

/// The index past `kiln_interp::MATH_OPS` (after the [`round_half_op`]s) that asks the
/// `f32` block-math function ([`kiln_math_block_f32`](super::kiln_math_block_f32)) to widen `n` `f16` values at `src`
/// (16-bit elements, not `f32`) to their `f32`s (`kiln_interp::widen_f16_block`: F16C,
/// the rule's bits): a staged load of an `f16` buffer ([`staged_f16_load`]).
pub fn widen_f16_op() -> usize {
    kiln_interp::MATH_OPS.len() + 2
}

/// The index past `kiln_interp::MATH_OPS` (after [`widen_f16_op`]) that asks the `f32`
/// block-math function ([`kiln_math_block_f32`](super::kiln_math_block_f32)) to pack `n` `f32` values at `src` (each an
/// `f16` value exactly) into `f16` bits at `dst` (16-bit elements, not `f32`):
/// `kiln_interp::pack_f16_block` (F16C, the rule's bits), a staged store to an `f16` buffer
/// (`crate::cranelift::plan::packed_stores`).
pub fn pack_f16_op() -> usize {
    kiln_interp::MATH_OPS.len() + 3
}

/// [`math_block`] of `f32`, with the [`round_half_op`]s, [`widen_f16_op`] and
/// [`pack_f16_op`] too.
pub(super) fn math_block_f32(op: u32, src: *const f32, dst: *mut f32, n: i64) {
    if op as usize == widen_f16_op() {
        // SAFETY: the emitted caller passes `n` `f16` elements at `src` (a row of an input
        // or scratch buffer) and `n` writable `f32` ones at `dst` (its staging block).
        if let Some((src, out)) = unsafe { block_parts(src as *const u16, dst, n) } {
            kiln_interp::widen_f16_block(src, out);
        }
        return;
    }
    if op as usize == pack_f16_op() {
        // SAFETY: the emitted caller passes `n` `f32` elements at `src` (its staging block)
        // and `n` writable `f16` ones at `dst` (the stored positions of an output the
        // kernel alone writes and does not read).
        if let Some((src, out)) = unsafe { block_parts(src, dst as *mut u16, n) } {
            kiln_interp::pack_f16_block(src, out);
        }
        return;
    }
    for to in [Half::F16, Half::Bf16] {
        if op as usize == round_half_op(to) {
            with_block(src, dst, n, |src, out| {
                kiln_interp::round_half_block(to, src, out);
                true
            });
            return;
        }
    }
    math_block(op, src, dst, n, kiln_interp::math_f32);
}

/// The 16-bit format node `n` of `k` rounds an `f32` value to, if it is a `convert` from
/// `f32` to `f16` or `bf16` (in the kernel's registers, `kiln_math::float16::round_to`),
/// which block math does a window at a time ([`round_half_op`]).
pub fn half_rounding(k: &Kernel, n: usize) -> Option<Half> {
    let node = &k.nodes[n];
    match node.kind {
        NodeKind::Convert(a) if k.nodes[a].dtype == kiln_ir::DType::F32 => match node.dtype {
            kiln_ir::DType::F16 => Some(Half::F16),
            kiln_ir::DType::Bf16 => Some(Half::Bf16),
            _ => None,
        },
        _ => None,
    }
}

/// Whether node `n` of `k` is a load of an `f16` buffer, which block math widens a window
/// at a time where the load has unit stride along the window: F16C eight or sixteen lanes
/// per instruction, where the emitted rule takes about seventeen vector operations per four
/// lanes (`bf16` widens by one shift and stays emitted; a [`half_binary`] call reads either
/// format's row itself).
pub fn staged_f16_load(k: &Kernel, n: usize) -> bool {
    let node = &k.nodes[n];
    node.dtype == DType::F16 && matches!(node.kind, NodeKind::Load { .. })
}

/// Whether this CPU runs `kiln_interp::binary_round_block` sixteen lanes at a time
/// (AVX-512F and BW), the condition for planning [`half_binary`] calls.
pub fn sixteen_lane_calls() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A rounding of one binary op's result to a 16-bit float (`convert(x op y)`), which one
/// [`HostCalls::half_binary`] call computes a window at a time.
///
/// [`HostCalls::half_binary`]: super::HostCalls::half_binary
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalfBinary {
    /// The op (one of `kiln_interp::HALF_BINARY_OPS`).
    pub op: BinaryOp,
    /// The format the result is rounded to.
    pub to: Half,
    /// `x`, an `f32` node.
    pub lhs: usize,
    /// `y`, an `f32` node.
    pub rhs: usize,
}

/// Node `n` of `k` as a [`HalfBinary`], if it rounds (`half_rounding`) the `f32` result of
/// an op of `kiln_interp::HALF_BINARY_OPS`.
pub fn half_binary(k: &Kernel, n: usize) -> Option<HalfBinary> {
    let to = half_rounding(k, n)?;
    let NodeKind::Convert(a) = k.nodes[n].kind else {
        return None;
    };
    match k.nodes[a].kind {
        NodeKind::Binary(op, lhs, rhs) if HALF_BINARY_OPS.contains(&op) => {
            Some(HalfBinary { op, to, lhs, rhs })
        }
        _ => None,
    }
}

/// The node whose value `x` is: `v` for an exact widening `convert(v)` of a 16-bit float
/// `v` to `f32` (a 16-bit value is held exactly in its `f32`, in registers and in staged
/// blocks), else `x` itself.
pub fn held(k: &Kernel, x: usize) -> usize {
    match k.nodes[x].kind {
        NodeKind::Convert(v)
            if k.nodes[x].dtype == DType::F32
                && matches!(k.nodes[v].dtype, DType::F16 | DType::Bf16) =>
        {
            v
        }
        _ => x,
    }
}

/// Whether kernel `k` has a [`half_binary`] node.
pub fn kernel_has_half_binary(k: &Kernel) -> bool {
    (0..k.nodes.len()).any(|n| half_binary(k, n).is_some())
}

/// How a [`HostCalls::half_binary`] call reads one operand.
///
/// [`HostCalls::half_binary`]: super::HostCalls::half_binary
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfBinaryOperand {
    /// An `f32` block (a staged node's).
    Block,
    /// A `bf16` node's staged block: `f32`s each a `bf16` value's, low half clear
    /// (`kiln_interp::HalfOperand::Bf16Block`).
    Bf16Block,
    /// One value for the whole window.
    Value,
    /// A row of 16-bit floats of this format (a load's), widened as it is read.
    Row(Half),
}

impl HalfBinaryOperand {
    /// Its two bits in a [`half_binary_code`].
    fn bits(self) -> u32 {
        match self {
            HalfBinaryOperand::Block | HalfBinaryOperand::Bf16Block => 0,
            HalfBinaryOperand::Value => 1,
            HalfBinaryOperand::Row(Half::Bf16) => 2,
            HalfBinaryOperand::Row(Half::F16) => 3,
        }
    }
}

/// The code of a [`HostCalls::half_binary`] call: the op's index in
/// `kiln_interp::HALF_BINARY_OPS` (bits 0–2), `bf16` (bit 3, [`CODE_BF16`]), how the call
/// reads each operand ([`HalfBinaryOperand`]: bits 4–5 the first, bits 6–7 the second),
/// whether it writes the results' 16-bit bits ([`CODE_PACKED`]: into the stored buffer)
/// instead of their `f32`s, whether the first operand, a row, is read shifted
/// ([`CODE_SHIFTED`]: the row's widening minus the call's `shift`, rounded to the row's
/// format — [`StagedSource::ShiftedRow`](crate::cranelift::plan::StagedSource::ShiftedRow)),
/// and whether the first and the second operand, blocks, hold `bf16` values
/// ([`CODE_LHS_BF16`], [`CODE_RHS_BF16`]: [`HalfBinaryOperand::Bf16Block`]).
///
/// [`HostCalls::half_binary`]: super::HostCalls::half_binary
pub fn half_binary_code(
    b: HalfBinary,
    lhs: HalfBinaryOperand,
    rhs: HalfBinaryOperand,
    packed: bool,
    shifted: bool,
) -> Option<u32> {
    let op = HALF_BINARY_OPS.iter().position(|&o| o == b.op)? as u32;
    let to = u32::from(b.to == Half::Bf16);
    if shifted && !matches!(lhs, HalfBinaryOperand::Row(_)) {
        return None;
    }
    let flag = |on: bool, bit: u32| if on { bit } else { 0 };
    Some(
        op | flag(to == 1, CODE_BF16)
            | lhs.bits() << CODE_LHS_SHIFT
            | rhs.bits() << CODE_RHS_SHIFT
            | flag(packed, CODE_PACKED)
            | flag(shifted, CODE_SHIFTED)
            | flag(lhs == HalfBinaryOperand::Bf16Block, CODE_LHS_BF16)
            | flag(rhs == HalfBinaryOperand::Bf16Block, CODE_RHS_BF16),
    )
}

/// [`half_binary_code`]'s fields: the op's index (bits 0–2), the result's format (`bf16`
/// when set), where each operand's two bits start, and the flags.
const CODE_OP: u32 = 7;
const CODE_BF16: u32 = 1 << 3;
const CODE_LHS_SHIFT: u32 = 4;
const CODE_RHS_SHIFT: u32 = 6;
const CODE_PACKED: u32 = 1 << 8;
const CODE_SHIFTED: u32 = 1 << 9;
const CODE_LHS_BF16: u32 = 1 << 10;
const CODE_RHS_BF16: u32 = 1 << 11;

/// One binary op and the rounding of its result, a window at a time
/// ([`super::HostCalls::half_binary`]): `dst[i] = round(a[i] op b[i])` for `i < n`, where
/// `code` ([`half_binary_code`]) names the op, the format, and how each operand is read (an
/// `f32` block, a 16-bit row — the first one possibly minus `shift`, rounded — or the value
/// `c`); `kiln_interp::binary_round_block`, the
/// interpreter's `op` and the rule's rounding, so the bits of the nodes. `dst` is the
/// node's own block, or the stored buffer's positions for a packed result
/// (`kiln_interp::binary_round_pack_block`), apart from the operands.
pub(super) extern "C" fn kiln_half_binary_block(
    code: u32,
    a: *const f32,
    b: *const f32,
    c: f32,
    shift: f32,
    dst: *mut f32,
    n: i64,
) {
    let Some(&op) = HALF_BINARY_OPS.get((code & CODE_OP) as usize) else {
        return;
    };
    let to = if code & CODE_BF16 != 0 {
        Half::Bf16
    } else {
        Half::F16
    };
    let Ok(n) = usize::try_from(n) else {
        return;
    };
    if dst.is_null() || n == 0 {
        return;
    }
    let packed = code & CODE_PACKED != 0;
    // A row may share a packed output's storage (a scratch buffer placed in the output,
    // `kernel::share`): the call then reads a copy of it, so no slice it reads is written
    // through another. The operands are built once, from their final pointers (building
    // them and then replacing one moved them through the stack, a 16-byte load of fields
    // just written one by one: a store-forwarding stall, a tenth of a `bf16` layer norm).
    let out = packed.then_some(dst as *const u16);
    let shift = (code & CODE_SHIFTED != 0).then_some(shift);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let x = operand(
        a,
        (code >> CODE_LHS_SHIFT) & 3,
        code & CODE_LHS_BF16 != 0,
        c,
        shift,
        n,
        out,
        &mut xs,
    );
    let y = operand(
        b,
        (code >> CODE_RHS_SHIFT) & 3,
        code & CODE_RHS_BF16 != 0,
        c,
        None,
        n,
        out,
        &mut ys,
    );
    let (Some(x), Some(y)) = (x, y) else {
        return;
    };
    if packed {
        // SAFETY: `n` writable 16-bit elements at `dst` (the stored positions of an output
        // the kernel alone writes and does not load), no longer read through the operands.
        let out = unsafe { std::slice::from_raw_parts_mut(dst as *mut u16, n) };
        kiln_interp::binary_round_pack_block(op, to, x, y, out);
        return;
    }
    // SAFETY: `n` writable elements at `dst` (the node's staging block), disjoint from the
    // operands.
    let out = unsafe { std::slice::from_raw_parts_mut(dst, n) };
    kiln_interp::binary_round_block(op, to, x, y, out);
}

/// The operand of a [`kiln_half_binary_block`] call at `p` read as `bits` says
/// ([`HalfBinaryOperand::bits`]; the value `c`; a block of `bf16` values when `bf16`), `n`
/// elements: a row minus `shift`, rounded,
/// when there is one (a row's only), and a row overlapping the `n` 16-bit elements at `out`
/// read from a copy in `buf`. `None` for a null pointer or a shift of another operand.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn operand<'a>(
    p: *const f32,
    bits: u32,
    bf16: bool,
    c: f32,
    shift: Option<f32>,
    n: usize,
    out: Option<*const u16>,
    buf: &'a mut Vec<u16>,
) -> Option<HalfOperand<'a>> {
    if bits == 1 {
        return shift.is_none().then_some(HalfOperand::Value(c));
    }
    if p.is_null() {
        return None;
    }
    if bits == 0 {
        // SAFETY: the emitted caller passes a block operand as `n` readable elements (a
        // staged node's block in the current window), never `dst`'s.
        let block = unsafe { std::slice::from_raw_parts(p, n) };
        return shift.is_none().then_some(match bf16 {
            true => HalfOperand::Bf16Block(block),
            false => HalfOperand::Block(block),
        });
    }
    let h = if bits == 2 { Half::Bf16 } else { Half::F16 };
    // SAFETY: the emitted caller passes a row operand as `n` readable 16-bit elements (a
    // load's positions in the current window).
    let mut row = unsafe { std::slice::from_raw_parts(p as *const u16, n) };
    if let Some(o) = out {
        let (lo, hi) = (o as usize, o as usize + 2 * n);
        let at = row.as_ptr() as usize;
        if at < hi && lo < at + 2 * n {
            buf.extend_from_slice(row);
            row = buf;
        }
    }
    Some(match shift {
        Some(s) => HalfOperand::ShiftedHalf(h, row, s),
        None => HalfOperand::Half(h, row),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of `bf16` values (every pattern's `f32`), read as such (code bits 10 and 11:
    /// the four-instruction rounding), give the bits they give read as `f32` blocks — the
    /// rule's, NaNs included wherever one operand is a NaN.
    #[test]
    fn bf16_blocks_give_the_bits_of_f32_blocks() {
        use HalfBinaryOperand::{Bf16Block, Block};
        let xs: Vec<f32> = (0..=u16::MAX)
            .map(|h| f32::from_bits(u32::from(h) << 16))
            .collect();
        let mut ys = xs.clone();
        ys.rotate_left(4099);
        let n = xs.len();
        for op in HALF_BINARY_OPS {
            let b = HalfBinary {
                op,
                to: Half::Bf16,
                lhs: 0,
                rhs: 1,
            };
            let plain = half_binary_code(b, Block, Block, false, false).unwrap();
            let held = half_binary_code(b, Bf16Block, Bf16Block, false, false).unwrap();
            assert_eq!(held, plain | CODE_LHS_BF16 | CODE_RHS_BF16);
            let lhs_only = half_binary_code(b, Bf16Block, Block, false, false).unwrap();
            let run = |code: u32| {
                let mut out = vec![0f32; n];
                let (a, y) = (xs.as_ptr(), ys.as_ptr());
                kiln_half_binary_block(code, a, y, 0.0, 0.0, out.as_mut_ptr(), n as i64);
                out
            };
            let (want, got, half) = (run(plain), run(held), run(lhs_only));
            for i in 0..n {
                if xs[i].is_nan() && ys[i].is_nan() {
                    continue;
                }
                let w = want[i].to_bits();
                assert_eq!(got[i].to_bits(), w, "{op:?} at {i}");
                assert_eq!(half[i].to_bits(), w, "{op:?} at {i}");
            }
        }
    }
}
