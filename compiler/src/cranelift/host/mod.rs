//! Host functions compiled kernels call: the float remainder and block math (transcendental
//! ops, of an operand or of the operand minus one value per block, and division by one value
//! per block).
//!
//! Kernels reach them through a [`HostTable`] ([`host_table`]), whose address the
//! executable passes in the argument slot after the partials buffer ([`host_slot`]); the
//! entry block loads the function pointers it needs and the loops call them indirectly. The machine code therefore
//! has no relocations and is reused from the persistent cache as bytes, although the
//! functions' addresses change from process to process.

mod half;
mod sums;

pub use half::{
    half_binary, half_binary_code, half_rounding, held, kernel_has_half_binary, pack_f16_op,
    round_half_op, sixteen_lane_calls, staged_f16_load, widen_f16_op, HalfBinary,
    HalfBinaryOperand,
};
pub use sums::{kernel_has_host_sum, SumCode};

use crate::kernel::{Kernel, NodeKind, Program};
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{BinaryOp, UnaryOp};

/// The functions of a host table ([`host_table`]), in field order.
#[repr(C)]
pub(super) struct HostTable {
    fmodf: extern "C" fn(f32, f32) -> f32,
    fmod: extern "C" fn(f64, f64) -> f64,
    math_f32: extern "C" fn(u32, *const f32, *mut f32, i64),
    math_f64: extern "C" fn(u32, *const f64, *mut f64, i64),
    scalar_f32: extern "C" fn(u32, *const f32, f32, *mut f32, i64),
    scalar_f64: extern "C" fn(u32, *const f64, f64, *mut f64, i64),
    shifted_f32: extern "C" fn(u32, *const f32, f32, *mut f32, i64),
    shifted_f64: extern "C" fn(u32, *const f64, f64, *mut f64, i64),
    extremum_f32: extern "C" fn(u32, *const f32, i64) -> f32,
    extremum_f64: extern "C" fn(u32, *const f64, i64) -> f64,
    shifted_scalar_f32: extern "C" fn(u32, *const f32, f32, f32, *mut f32, i64),
    shifted_scalar_f64: extern "C" fn(u32, *const f64, f64, f64, *mut f64, i64),
    half_binary: extern "C" fn(u32, *const f32, *const f32, f32, f32, *mut f32, i64),
    sum: extern "C" fn(u32, *const u8, f32, *mut f32, i64) -> f32,
}

/// The table of `W512 = false`: block math runs on the interpreter's 256-bit build.
static HOST_TABLE: HostTable = host_table::<false>();

/// The table of `W512 = true` (`--xla_cpu_prefer_vector_width=512`): block math runs on the
/// interpreter's 512-bit build where the CPU has AVX-512 ([`kiln_interp::widest_simd`]).
/// The same machine code calls either table; only the functions' speed differs.
static HOST_TABLE_512: HostTable = host_table::<true>();

/// Every kernel's host calls go through one of these two tables.
const fn host_table<const W512: bool>() -> HostTable {
    HostTable {
        fmodf: kiln_fmodf,
        fmod: kiln_fmod,
        math_f32: kiln_math_block_f32::<W512>,
        math_f64: kiln_math_block_f64::<W512>,
        scalar_f32: kiln_scalar_block_f32::<W512>,
        scalar_f64: kiln_scalar_block_f64::<W512>,
        shifted_f32: kiln_shifted_block_f32::<W512>,
        shifted_f64: kiln_shifted_block_f64::<W512>,
        extremum_f32: kiln_extremum_f32::<W512>,
        extremum_f64: kiln_extremum_f64::<W512>,
        shifted_scalar_f32: kiln_shifted_scalar_block_f32::<W512>,
        shifted_scalar_f64: kiln_shifted_scalar_block_f64::<W512>,
        half_binary: half::kiln_half_binary_block,
        sum: sums::kiln_sum::<W512>,
    }
}

/// The address of the table for block math 512 bits wide (`w512`) or 256, for the
/// argument array.
pub(super) fn host_table_ptr(w512: bool) -> *mut u8 {
    let t: &'static HostTable = if w512 { &HOST_TABLE_512 } else { &HOST_TABLE };
    t as *const HostTable as *mut u8
}

/// Runs `f` with the interpreter's loops 512 bits wide when `W512` (see
/// [`kiln_interp::with_512_bit_vectors`]).
#[inline(always)]
fn at_width<const W512: bool, R>(f: impl FnOnce() -> R) -> R {
    if W512 {
        kiln_interp::with_512_bit_vectors(f)
    } else {
        f()
    }
}

/// The argument slot holding [`host_table_ptr`]: after every buffer and the partials buffer.
pub fn host_slot(p: &Program) -> usize {
    crate::kernel::analysis::buffer_slots(p) + 1
}

/// Float `rem` for compiled kernels: Rust's `%`, the interpreter's operation (the exact
/// remainder, C's `fmodf`), so compiled and fallback results agree bit for bit.
extern "C" fn kiln_fmodf(x: f32, y: f32) -> f32 {
    x % y
}

/// The `f64` version of [`kiln_fmodf`].
extern "C" fn kiln_fmod(x: f64, y: f64) -> f64 {
    x % y
}

/// Block math ([`super::cpu::CpuOptions::wide_math`]): `dst[i] = MATH_OPS[op](src[i])` for
/// `i < n`, with the interpreter's own AVX2 build of `kiln_math` — the fallback's operation,
/// so the bits are the fallback's; or, for a [`round_half_op`], `src[i]` rounded to 16 bits. `src` and `dst` are equal (in place) or do not overlap.
/// 512 bits wide when `W512` ([`host_table`]).
extern "C" fn kiln_math_block_f32<const W512: bool>(
    op: u32,
    src: *const f32,
    dst: *mut f32,
    n: i64,
) {
    at_width::<W512, _>(|| half::math_block_f32(op, src, dst, n));
}

/// The `f64` version of [`kiln_math_block_f32`].
extern "C" fn kiln_math_block_f64<const W512: bool>(
    op: u32,
    src: *const f64,
    dst: *mut f64,
    n: i64,
) {
    at_width::<W512, _>(|| math_block(op, src, dst, n, kiln_interp::math_f64));
}

fn math_block<T>(
    op: u32,
    src: *const T,
    dst: *mut T,
    n: i64,
    f: fn(kiln_ir::UnaryOp, Option<&[T]>, &mut [T]) -> bool,
) {
    let Some(&op) = kiln_interp::MATH_OPS.get(op as usize) else {
        return;
    };
    with_block(src, dst, n, |src, out| f(op, src, out));
}

/// Defines an `extern "C" fn(op, src, c, dst, n)` host function over `value_block`:
/// `op` indexes the table `$ops`, `$f` is the interpreter's block function.
macro_rules! value_block_fn {
    ($(#[$doc:meta])* $name:ident, $t:ty, $ops:path, $f:path) => {
        $(#[$doc])*
        extern "C" fn $name<const W512: bool>(
            op: u32,
            src: *const $t,
            c: $t,
            dst: *mut $t,
            n: i64,
        ) {
            let op = $ops.get(op as usize).copied();
            at_width::<W512, _>(|| value_block(op, src, c, dst, n, $f));
        }
    };
}

value_block_fn!(
    /// Block math of a shifted operand ([`HostCalls::shifted`]): `dst[i] =
    /// MATH_OPS[op](src[i] - c)` for `i < n`, with the interpreter's own loop (its `sub`,
    /// then its `op`: the bits of the two nodes). `src` and `dst` as for
    /// [`kiln_math_block_f32`].
    kiln_shifted_block_f32,
    f32,
    kiln_interp::MATH_OPS,
    kiln_interp::math_shifted_f32
);
value_block_fn!(
    /// The `f64` version of [`kiln_shifted_block_f32`].
    kiln_shifted_block_f64,
    f64,
    kiln_interp::MATH_OPS,
    kiln_interp::math_shifted_f64
);
value_block_fn!(
    /// Block math with one operand per block ([`HostCalls::scalar`]): `dst[i] =
    /// SCALAR_OPS[op](src[i], c)` for `i < n`, with the interpreter's own loop (one IEEE
    /// operation per element, AVX2 where the CPU has it). `src` and `dst` as for
    /// [`kiln_math_block_f32`].
    kiln_scalar_block_f32,
    f32,
    kiln_interp::SCALAR_OPS,
    kiln_interp::scalar_f32
);
value_block_fn!(
    /// The `f64` version of [`kiln_scalar_block_f32`].
    kiln_scalar_block_f64,
    f64,
    kiln_interp::SCALAR_OPS,
    kiln_interp::scalar_f64
);

/// Defines an `extern "C" fn(op, src, c, d, dst, n)` host function of a shifted operand and
/// one second operand per block: `dst[i] = SHIFTED_SCALAR_OPS[op](src[i] - c, d)`.
macro_rules! shifted_scalar_fn {
    ($(#[$doc:meta])* $name:ident, $t:ty, $f:path) => {
        $(#[$doc])*
        extern "C" fn $name<const W512: bool>(
            op: u32,
            src: *const $t,
            c: $t,
            d: $t,
            dst: *mut $t,
            n: i64,
        ) {
            let Some(&op) = kiln_interp::SHIFTED_SCALAR_OPS.get(op as usize) else {
                return;
            };
            at_width::<W512, _>(|| with_block(src, dst, n, |src, out| $f(op, src, c, d, out)));
        }
    };
}

shifted_scalar_fn!(
    /// Block math of a shifted operand with one second operand per block
    /// ([`HostCalls::shifted_scalar`]): `dst[i] = SHIFTED_SCALAR_OPS[op](src[i] - c, d)` for
    /// `i < n`, with the interpreter's own loop (its `sub`, then its `mul` or `div`, each
    /// rounded: the bits of the two nodes). `src` and `dst` as for [`kiln_math_block_f32`].
    kiln_shifted_scalar_block_f32,
    f32,
    kiln_interp::scalar_shifted_f32
);
shifted_scalar_fn!(
    /// The `f64` version of [`kiln_shifted_scalar_block_f32`].
    kiln_shifted_scalar_block_f64,
    f64,
    kiln_interp::scalar_shifted_f64
);

/// The reductions [`HostCalls::extremum`] computes, by index.
pub const EXTREMA: [kiln_ir::ReduceKind; 2] = [kiln_ir::ReduceKind::Max, kiln_ir::ReduceKind::Min];

/// A whole sequence's float max or min ([`HostCalls::extremum`]): `EXTREMA[kind]` of the `n`
/// elements at `src`, by the interpreter's own 256-bit loop (`kiln_interp::extremum_f32`;
/// both are exact and order-free, so the bits are the canonical order's). The identity
/// (`-inf` / `+inf`) for `n ≤ 0`, NaN for an unknown `kind`.
extern "C" fn kiln_extremum_f32<const W512: bool>(kind: u32, src: *const f32, n: i64) -> f32 {
    at_width::<W512, _>(|| extremum(kind, src, n, kiln_interp::extremum_f32)).unwrap_or(f32::NAN)
}

/// The `f64` version of [`kiln_extremum_f32`].
extern "C" fn kiln_extremum_f64<const W512: bool>(kind: u32, src: *const f64, n: i64) -> f64 {
    at_width::<W512, _>(|| extremum(kind, src, n, kiln_interp::extremum_f64)).unwrap_or(f64::NAN)
}

fn extremum<T>(
    kind: u32,
    src: *const T,
    n: i64,
    f: fn(kiln_ir::ReduceKind, &[T]) -> Option<T>,
) -> Option<T> {
    let kind = *EXTREMA.get(kind as usize)?;
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || src.is_null() {
        return f(kind, &[]);
    }
    // SAFETY: the emitted caller passes `n` valid elements at `src` (one row of a buffer).
    f(kind, unsafe { std::slice::from_raw_parts(src, n) })
}

/// A block op with one value per block (`kiln_interp::scalar_f32`, `math_shifted_f32`, ...).
type ValueFn<Op, T> = fn(Op, Option<&[T]>, T, &mut [T]) -> bool;

/// Runs `f(op, src, c, dst)` over the block; `op` is the caller's index looked up in the
/// op's table (nothing done for `None`: an index no kernel emits).
fn value_block<Op, T>(op: Option<Op>, src: *const T, c: T, dst: *mut T, n: i64, f: ValueFn<Op, T>) {
    let Some(op) = op else {
        return;
    };
    with_block(src, dst, n, |src, out| f(op, src, c, out));
}

/// Runs `f` on the `n`-element blocks at `src` (`None` when it is `dst`: in place) and
/// `dst`; nothing for null pointers or `n ≤ 0`.
///
/// Nothing is prefetched: prefetching each window's rows one block ahead (from `exp(x -
/// max)`, for the next block's max pass) made softmax about 10% slower on a Zen 4 and left
/// layer norm unchanged, so it was removed.
fn with_block<T>(
    src: *const T,
    dst: *mut T,
    n: i64,
    f: impl FnOnce(Option<&[T]>, &mut [T]) -> bool,
) {
    let Ok(n) = usize::try_from(n) else {
        return;
    };
    if src.is_null() || dst.is_null() || n == 0 {
        return;
    }
    // SAFETY: the emitted caller passes `n` valid elements at `src` (a buffer or a staging
    // block) and `n` writable ones at `dst` (its staging block or the stored positions of
    // an output it alone writes); the two are the same block or disjoint.
    unsafe {
        let out = std::slice::from_raw_parts_mut(dst, n);
        if std::ptr::eq(src, dst) {
            f(None, out);
        } else {
            f(Some(std::slice::from_raw_parts(src, n)), out);
        }
    }
}

/// The `n`-element blocks at `src` and `dst` as slices (of different element types, so
/// never the same block); `None` for null pointers or `n ≤ 0`.
///
/// # Safety
/// `src` must hold `n` readable elements and `dst` `n` writable ones, not overlapping.
unsafe fn block_parts<'a, S, D>(
    src: *const S,
    dst: *mut D,
    n: i64,
) -> Option<(&'a [S], &'a mut [D])> {
    let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
    if src.is_null() || dst.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe {
        Some((
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        ))
    }
}

/// A pair of host functions (`f32`, `f64`) with their signatures, loaded in the entry block.
#[derive(Debug, Clone, Copy)]
pub struct HostFns {
    sigs: (SigRef, SigRef),
    ptrs: (Value, Value),
}

impl HostFns {
    /// Calls the `f32` function, or the `f64` one when `f64`; returns its results.
    pub fn call(&self, b: &mut FunctionBuilder, f64: bool, args: &[Value]) -> Vec<Value> {
        let (sig, ptr) = if f64 {
            (self.sigs.1, self.ptrs.1)
        } else {
            (self.sigs.0, self.ptrs.0)
        };
        let call = b.ins().call_indirect(sig, ptr, args);
        b.inst_results(call).to_vec()
    }
}

/// Host functions a kernel calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostCalls {
    /// The float remainder (`fn(x, y) -> x % y`), when the kernel has a float `rem` (see
    /// [`kernel_has_float_rem`]).
    pub fmod: Option<HostFns>,
    /// Block math (`fn(op, src, dst, n)`, `dst[i] = kiln_interp::MATH_OPS[op](src[i])`),
    /// when wide math is on and the kernel has such a node (see [`kernel_has_math`]).
    pub math: Option<HostFns>,
    /// Block math with one second operand (`fn(op, src, c, dst, n)`, `dst[i] =
    /// kiln_interp::SCALAR_OPS[op](src[i], c)`), when wide math is on and the kernel has
    /// such a node (see [`kernel_has_scalar_op`]).
    pub scalar: Option<HostFns>,
    /// Block math of a shifted operand (`fn(op, src, c, dst, n)`, `dst[i] =
    /// kiln_interp::MATH_OPS[op](src[i] - c)`), when wide math is on and a math node of
    /// the kernel reads a subtraction (see [`kernel_has_shifted_math`]).
    pub shifted: Option<HostFns>,
    /// A sequence's max or min (`fn(kind, src, n) -> value`, `kind` indexing [`EXTREMA`]),
    /// when wide math is on and the kernel reduces a float by max or min.
    pub extremum: Option<HostFns>,
    /// Block math of a shifted operand with one second operand (`fn(op, src, c, d, dst, n)`,
    /// `dst[i] = kiln_interp::SHIFTED_SCALAR_OPS[op](src[i] - c, d)`), when wide math is on
    /// and the kernel has such a node (see [`kernel_has_shifted_scalar`]).
    pub shifted_scalar: Option<HostFns>,
    /// One binary op and the rounding of its result to a 16-bit float (`fn(code, a, b, c,
    /// dst, n)`, `dst[i] = round(a[i] op b[i])` with either operand `c` instead, by
    /// `code`: [`half_binary_code`]), when wide math is on and the kernel rounds such an
    /// op ([`kernel_has_half_binary`]). `f32` only (both function slots are the one
    /// function).
    pub half_binary: Option<HostFns>,
    /// A float sum's accumulation (`fn(code, src, c, acc, n) -> sum`, by `code`: a
    /// [`SumCode`]), when wide math is on and the plan sums a row, a shifted square or a
    /// staged block so. `f32` only (both function slots are the one function).
    pub sum: Option<HostFns>,
}

/// Whether kernel `k` computes a float `rem`: a call to [`kiln_fmodf`]/[`kiln_fmod`],
/// because `fmod` is an exact remainder with a data-dependent loop, not straight-line
/// `kiln_math` code; the kernel runs it one lane at a time.
pub fn kernel_has_float_rem(k: &Kernel) -> bool {
    k.nodes
        .iter()
        .any(|n| matches!(n.kind, NodeKind::Binary(BinaryOp::Rem, _, _)) && n.dtype.is_float())
}

/// The index of `op` in `kiln_interp::MATH_OPS`: the ops block math applies.
pub fn math_op(op: UnaryOp) -> Option<usize> {
    kiln_interp::MATH_OPS.iter().position(|&m| m == op)
}

/// The index of `op` in `kiln_interp::SCALAR_OPS`.
pub fn scalar_op(op: BinaryOp) -> Option<usize> {
    kiln_interp::SCALAR_OPS.iter().position(|&m| m == op)
}

/// Whether kernel `k` has a float binary node of `kiln_interp::SCALAR_OPS` (staged when
/// its second operand is the same for a whole window).
pub fn kernel_has_scalar_op(k: &Kernel) -> bool {
    k.nodes.iter().any(|n| {
        matches!(n.kind, NodeKind::Binary(op, _, _) if scalar_op(op).is_some())
            && n.dtype.is_float()
    })
}

/// The index of `op` in `kiln_interp::SHIFTED_SCALAR_OPS`.
pub fn shifted_scalar_op(op: BinaryOp) -> Option<usize> {
    kiln_interp::SHIFTED_SCALAR_OPS
        .iter()
        .position(|&m| m == op)
}

/// Whether kernel `k` has a float node of `kiln_interp::SHIFTED_SCALAR_OPS` whose first
/// operand is a subtraction (staged as one shifted call when the subtrahend and the second
/// operand are the same for a whole window, [`crate::cranelift::plan::staged_nodes`]).
pub fn kernel_has_shifted_scalar(k: &Kernel) -> bool {
    k.nodes.iter().any(|n| match n.kind {
        NodeKind::Binary(op, a, _) => {
            shifted_scalar_op(op).is_some()
                && n.dtype.is_float()
                && matches!(k.nodes[a].kind, NodeKind::Binary(BinaryOp::Sub, _, _))
        }
        _ => false,
    })
}

/// Whether kernel `k` has a float block-math node whose operand is a subtraction (staged
/// as one shifted call when the subtrahend is the same for a whole window).
pub fn kernel_has_shifted_math(k: &Kernel) -> bool {
    k.nodes.iter().any(|n| match n.kind {
        NodeKind::Unary(op, a) => {
            math_op(op).is_some()
                && n.dtype.is_float()
                && matches!(k.nodes[a].kind, NodeKind::Binary(BinaryOp::Sub, _, _))
        }
        _ => false,
    })
}

/// Whether kernel `k` has a float node that block math can compute (a rounding to a 16-bit
/// float among them, [`half_rounding`], and a load of an `f16` buffer, [`staged_f16_load`]).
pub fn kernel_has_math(k: &Kernel) -> bool {
    k.nodes.iter().enumerate().any(|(i, n)| {
        matches!(n.kind, NodeKind::Unary(op, _) if math_op(op).is_some()) && n.dtype.is_float()
            || half_rounding(k, i).is_some()
            || staged_f16_load(k, i)
    })
}

/// The shortest sequence whose float max or min is one host call (`emit::Emitter::host_extremum`).
/// The call costs about as much as 60 elements of the inline loop, so short rows reduce
/// inline: a max over rows of 3 took 94 ms per 12M elements as host calls and 12 ms inline
/// (the fallback: 19 ms); rows of 16: 18.6 against 3.1 ms, of 64: 2.9 against 1.5 ms, of
/// 128: 1.7 against 1.2–1.5 ms; from 256 on the two are equal within noise (both stream
/// from memory), and a row-fused softmax's rows of 1024 are faster as calls.
const HOST_EXTREMUM_MIN_LEN: usize = 256;

/// Whether kernel `k`'s reduction is a float max or min over sequences long enough for one
/// host call ([`HOST_EXTREMUM_MIN_LEN`]), which it makes when wide math is on.
pub fn host_extremum(k: &Kernel) -> bool {
    k.reduce.as_ref().is_some_and(|r| {
        r.len >= HOST_EXTREMUM_MIN_LEN
            && EXTREMA.contains(&r.kind)
            && k.nodes.get(r.value).is_some_and(|n| n.dtype.is_float())
    })
}

/// Whether kernel `k`'s block math runs in host calls when wide math is on: its windows
/// are at least [`BLOCK_MATH_MIN_WINDOW`] elements.
pub fn host_windows(k: &Kernel) -> bool {
    window_len(k) >= BLOCK_MATH_MIN_WINDOW
}

/// The shortest window of elements that block math computes in host calls; kernels whose
/// windows are shorter emit their math inline (the same `kiln_math` functions over
/// Cranelift values, so the same bits). A call and its loop setup cost as much as a few
/// dozen elements: a softmax over rows of 10 took 7.6–7.8 ms per 4M elements with a call
/// per row for `exp` and one for the division, 6.1–6.7 ms inline; rows of 16: 4.9–6.5
/// against 4.0–4.5 ms; rows of 24 were even; from rows of 33 on the calls are faster
/// (3.1–3.4 against 3.5–3.9 ms, and 1.8–2.3 against 3.1–3.4 at 128).
const BLOCK_MATH_MIN_WINDOW: usize = 24;

/// The most elements one block-math call of kernel `k` can cover: a reduction's sequence,
/// a pointwise kernel's innermost extent (windows never cross rows), or the whole space of a
/// one-dimensional one.
fn window_len(k: &Kernel) -> usize {
    match &k.reduce {
        Some(r) => r.len,
        None => k.space.last().copied().unwrap_or(1),
    }
}

/// Which host functions a kernel function imports (decided by its plan,
/// `crate::cranelift::plan`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostImports {
    /// The float remainder ([`HostCalls::fmod`]).
    pub fmod: bool,
    /// Block math ([`HostCalls::math`]).
    pub math: bool,
    /// Block math with one value per block ([`HostCalls::scalar`]).
    pub scalar: bool,
    /// Block math of a shifted operand ([`HostCalls::shifted`]).
    pub shifted: bool,
    /// A sequence's max or min ([`HostCalls::extremum`]).
    pub extremum: bool,
    /// Block math of a shifted operand with one value per block
    /// ([`HostCalls::shifted_scalar`]).
    pub shifted_scalar: bool,
    /// One binary op and its 16-bit rounding ([`HostCalls::half_binary`]).
    pub half_binary: bool,
    /// A float sum's accumulation ([`HostCalls::sum`]).
    pub sum: bool,
}

impl HostImports {
    /// The names of the imported functions, in table order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.fmod, "fmod"),
            (self.math, "math"),
            (self.scalar, "scalar"),
            (self.shifted, "shifted"),
            (self.extremum, "extremum"),
            (self.shifted_scalar, "shifted_scalar"),
            (self.half_binary, "half_binary"),
            (self.sum, "sum"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// Loads, at the current position (the entry block), the host functions of `imports` from
/// the host table of `p`'s arguments `args`.
pub fn import(
    b: &mut FunctionBuilder,
    args: Value,
    p: &Program,
    imports: HostImports,
) -> HostCalls {
    let HostImports {
        fmod,
        math,
        scalar,
        shifted,
        extremum,
        shifted_scalar,
        half_binary,
        sum,
    } = imports;
    if imports == HostImports::default() {
        return HostCalls::default();
    }
    let call_conv = b.func.signature.call_conv;
    let table = b.ins().load(
        types::I64,
        MemFlagsData::trusted(),
        args,
        (host_slot(p) * 8) as i32,
    );
    // The `f32` and `f64` functions at table fields `field` and `field + 1`: parameters and
    // (optional) result of each.
    let pair =
        |b: &mut FunctionBuilder, field: i32, params: [&[Type]; 2], rets: [Option<Type>; 2]| {
            let mut fns = Vec::new();
            for (i, (ps, ret)) in params.iter().zip(rets).enumerate() {
                let mut sig = Signature::new(call_conv);
                sig.params.extend(ps.iter().map(|&t| AbiParam::new(t)));
                if let Some(r) = ret {
                    sig.returns.push(AbiParam::new(r));
                }
                let sig = b.import_signature(sig);
                let off = (field + i as i32) * 8;
                let ptr = b
                    .ins()
                    .load(types::I64, MemFlagsData::trusted(), table, off);
                fns.push((sig, ptr));
            }
            HostFns {
                sigs: (fns[0].0, fns[1].0),
                ptrs: (fns[0].1, fns[1].1),
            }
        };
    let block = [types::I32, types::I64, types::I64, types::I64];
    // (op, src, value, dst, n).
    let with_value_f32 = [types::I32, types::I64, types::F32, types::I64, types::I64];
    let mut with_value_f64 = with_value_f32;
    with_value_f64[2] = types::F64;
    // One `f32` function at table field `field`, in both slots.
    let single = |b: &mut FunctionBuilder, field: i32, params: &[Type], ret: Option<Type>| {
        let mut sig = Signature::new(call_conv);
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.extend(ret.map(AbiParam::new));
        let sig = b.import_signature(sig);
        let ptr = b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), table, field * 8);
        HostFns {
            sigs: (sig, sig),
            ptrs: (ptr, ptr),
        }
    };
    HostCalls {
        fmod: fmod.then(|| {
            pair(
                b,
                0,
                [&[types::F32, types::F32], &[types::F64, types::F64]],
                [Some(types::F32), Some(types::F64)],
            )
        }),
        math: math.then(|| pair(b, 2, [&block, &block], [None; 2])),
        scalar: scalar.then(|| pair(b, 4, [&with_value_f32, &with_value_f64], [None; 2])),
        shifted: shifted.then(|| pair(b, 6, [&with_value_f32, &with_value_f64], [None; 2])),
        extremum: extremum.then(|| {
            let seq = [types::I32, types::I64, types::I64];
            pair(b, 8, [&seq, &seq], [Some(types::F32), Some(types::F64)])
        }),
        shifted_scalar: shifted_scalar.then(|| {
            // (op, src, shift, value, dst, n).
            let f32s = [
                types::I32,
                types::I64,
                types::F32,
                types::F32,
                types::I64,
                types::I64,
            ];
            let mut f64s = f32s;
            f64s[2..4].fill(types::F64);
            pair(b, 10, [&f32s, &f64s], [None; 2])
        }),
        half_binary: half_binary.then(|| {
            // (code, a, b, value, shift, dst, n).
            let params = [
                types::I32,
                types::I64,
                types::I64,
                types::F32,
                types::F32,
                types::I64,
                types::I64,
            ];
            single(b, 12, &params, None)
        }),
        // (code, src, c, acc, n) -> sum.
        sum: sum.then(|| {
            let params = [types::I32, types::I64, types::F32, types::I64, types::I64];
            single(b, 13, &params, Some(types::F32))
        }),
    }
}
