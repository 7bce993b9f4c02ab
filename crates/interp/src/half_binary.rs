//! One `f32` binary op and the rounding of its result to a 16-bit float, a block at a time:
//! what a compiled kernel's staged `convert(x op y)` to `f16`/`bf16` computes in one pass
//! (`kiln_compiler`'s block math), where it would otherwise compute `x op y` in emitted
//! four-lane code, store the window, and round it in a second pass. Operands are `f32`
//! blocks (16-bit values held exactly, or any `f32`), rows of a 16-bit buffer (widened
//! as they are read), or one value for the whole block.
//!
//! The op is one IEEE operation, or XLA's maximum or minimum, on the two `f32`s in the
//! order given (the interpreter's `a op b`; which NaN an op on NaNs returns is not
//! promised, `docs/determinism.md`), and the rounding is [`crate::round_half_block`]'s — `kiln_math::float16`'s rule. Sixteen
//! lanes in one pass where the CPU has AVX-512F and BW; elsewhere, and for the last few elements,
//! the op element by element and then [`crate::round_half_block`] over them. All give the
//! same bits, which the tests below check against the rule over every class of input.

use kiln_ir::BinaryOp;
use kiln_math::float16::{pack, round_f32, to_f32, Half};
use kiln_math::ScalarF32;
use std::mem::MaybeUninit;

#[cfg(target_arch = "x86_64")]
mod pairs;

/// The binary ops [`binary_round_block`] applies: the IEEE operations, and XLA's maximum and
/// minimum (the interpreter's: NaN when either operand is, `max(-0, +0) = +0`), whose `f32`
/// result a 16-bit op rounds once (XLA's semantics: compute in `f32`, round the result).
pub const HALF_BINARY_OPS: [BinaryOp; 6] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Max,
    BinaryOp::Min,
];

/// An operand of [`binary_round_block`].
#[derive(Debug, Clone, Copy)]
pub enum HalfOperand<'a> {
    /// One `f32` per element, as long as the result.
    Block(&'a [f32]),
    /// [`HalfOperand::Block`] whose every element is a `bf16` value's `f32`, its low 16 bits
    /// clear (NaNs included): a `bf16` node's staged block, every value of which a load
    /// widened or the rule rounded. The same operand; a `bf16` result of it rounds in four
    /// instructions (`crate::half_block::round_bf16_arith_zmm`).
    Bf16Block(&'a [f32]),
    /// One 16-bit float of this format per element (its exact `f32` is the operand), as
    /// long as the result.
    Half(Half, &'a [u16]),
    /// One 16-bit float `x` of this format per element and one value `c`: the operand is
    /// `x - c` (the IEEE subtraction of the exact widening) rounded to the format — a
    /// 16-bit `x - mean`, computed by the same pass as the op that reads it.
    ShiftedHalf(Half, &'a [u16], f32),
    /// The same value at every element.
    Value(f32),
}

impl HalfOperand<'_> {
    /// Its length, `None` for a value.
    fn len(&self) -> Option<usize> {
        match self {
            HalfOperand::Block(s) | HalfOperand::Bf16Block(s) => Some(s.len()),
            HalfOperand::Half(_, s) | HalfOperand::ShiftedHalf(_, s, _) => Some(s.len()),
            HalfOperand::Value(_) => None,
        }
    }

    /// Its `f32` at element `i`.
    fn at(&self, i: usize) -> f32 {
        match *self {
            HalfOperand::Block(s) | HalfOperand::Bf16Block(s) => s[i],
            HalfOperand::Half(h, s) => to_f32(s[i], h),
            HalfOperand::ShiftedHalf(h, s, c) => round_f32(to_f32(s[i], h) - c, h),
            HalfOperand::Value(v) => v,
        }
    }
}

/// `out[i] = round_f32(a[i] op b[i], to)` for every `i`, `op` one of [`HALF_BINARY_OPS`].
/// Returns false, writing nothing, for another op, an operand whose length is not `out`'s,
/// or two values (one value for the whole block is not staged).
pub fn binary_round_block(
    op: BinaryOp,
    to: Half,
    a: HalfOperand,
    b: HalfOperand,
    out: &mut [f32],
) -> bool {
    let n = out.len();
    let Some(code) = op_code(op, &a, &b, n) else {
        return false;
    };
    let done = fast(code, to, a, b, Out::F32(out.as_mut_ptr()), n);
    for (i, o) in out.iter_mut().enumerate().skip(done) {
        *o = apply(op, a.at(i), b.at(i));
    }
    crate::round_half_block(to, None, &mut out[done..]);
    true
}

/// [`binary_round_block`] with each result packed into its 16-bit bits (`to`'s format):
/// what a staged binary rounding whose only use is a store to a 16-bit buffer writes
/// there directly. The bits are the rule's rounding, then its packing (the rounded value
/// is exact in `to`, NaNs keeping the quiet, truncated payload the rounding gives them).
/// Returns false, writing nothing, as [`binary_round_block`] does.
pub fn binary_round_pack_block(
    op: BinaryOp,
    to: Half,
    a: HalfOperand,
    b: HalfOperand,
    out: &mut [u16],
) -> bool {
    // SAFETY: `MaybeUninit<u16>` has `u16`'s layout, and only `u16`s are written through it.
    let slots = unsafe { &mut *(out as *mut [u16] as *mut [MaybeUninit<u16>]) };
    binary_round_pack_into(op, to, a, b, slots)
}

/// [`binary_round_pack_block`] into uninitialised slots (the interpreter's fresh outputs):
/// every slot is written when it returns true, none when it returns false.
pub(crate) fn binary_round_pack_into(
    op: BinaryOp,
    to: Half,
    a: HalfOperand,
    b: HalfOperand,
    out: &mut [MaybeUninit<u16>],
) -> bool {
    let n = out.len();
    let Some(code) = op_code(op, &a, &b, n) else {
        return false;
    };
    let done = fast(code, to, a, b, Out::Packed(out.as_mut_ptr() as *mut u16), n);
    for (i, o) in out.iter_mut().enumerate().skip(done) {
        let r = round_f32(apply(op, a.at(i), b.at(i)), to);
        o.write(pack(&mut ScalarF32, r, to) as u16);
    }
    true
}

/// `f32`s rounded to `to` and packed, into uninitialised slots as long as `src` (every one
/// written): the rule's rounding then its packing, what narrowing a computed `f32` result
/// to its 16-bit dtype stores. Computed as `x * 1` rounded ([`binary_round_pack_into`],
/// sixteen lanes): `x * 1` is `x` for every `x` (subnormals included) but a signalling NaN,
/// which it quiets — as the rounding itself does, so the bits are the rule's.
pub(crate) fn round_pack_into(to: Half, src: &[f32], out: &mut [MaybeUninit<u16>]) {
    let n = src.len().min(out.len());
    let (src, out) = (&src[..n], &mut out[..n]);
    let one = HalfOperand::Value(1.0);
    if !binary_round_pack_into(BinaryOp::Mul, to, HalfOperand::Block(src), one, out) {
        // Unreachable (`mul` is an op of the table, the lengths are equal); the rule then.
        for (o, &x) in out.iter_mut().zip(src) {
            o.write(kiln_math::float16::from_f32(x, to));
        }
    }
}

/// `op`'s index in [`HALF_BINARY_OPS`], if it is one and the operands suit a block of `n`
/// results: each as long as the block or a value, not both values.
fn op_code(op: BinaryOp, a: &HalfOperand, b: &HalfOperand, n: usize) -> Option<usize> {
    let ok = |x: &HalfOperand| x.len().is_none_or(|l| l == n);
    if !ok(a) || !ok(b) || a.len().is_none() && b.len().is_none() {
        return None;
    }
    HALF_BINARY_OPS.iter().position(|&o| o == op)
}

/// The interpreter's `a op b` for the ops of [`HALF_BINARY_OPS`].
#[inline]
pub(crate) fn apply(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => crate::scalar::fmax(a, b),
        _ => crate::scalar::fmin(a, b),
    }
}

/// An operand for the vector loop: its kind ([`BLOCK`], [`VALUE`], [`BF16_ROW`],
/// [`F16_ROW`]), its elements (null for a value) and its value.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Operand {
    kind: u8,
    ptr: *const u8,
    value: f32,
    /// Whether every NaN among its elements (or its value) has its low 16 bits clear.
    fits: bool,
}

/// [`Operand`] kinds ([`SHIFTED_ROW`]: a row of the result's format, minus the value,
/// rounded to that format; first operands only).
#[cfg(target_arch = "x86_64")]
const BLOCK: u8 = 0;
#[cfg(target_arch = "x86_64")]
const VALUE: u8 = 1;
#[cfg(target_arch = "x86_64")]
const BF16_ROW: u8 = 2;
#[cfg(target_arch = "x86_64")]
const F16_ROW: u8 = 3;
#[cfg(target_arch = "x86_64")]
const SHIFTED_ROW: u8 = 4;

/// Where the vector loop writes `n` results: `f32`s, or their 16-bit bits.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Out {
    F32(*mut f32),
    Packed(*mut u16),
}

/// The elements `0..done` of `n` computed by the sixteen-lane loop (0 without AVX-512F and BW, and
/// for a shifted row that is the second operand or of a format other than the result's).
#[cfg(target_arch = "x86_64")]
fn fast(code: usize, to: Half, a: HalfOperand, b: HalfOperand, out: Out, n: usize) -> usize {
    if !std::arch::is_x86_feature_detected!("avx512f")
        || !std::arch::is_x86_feature_detected!("avx512bw")
    {
        return 0;
    }
    match (a, b) {
        (HalfOperand::ShiftedHalf(h, ..), _) if h != to => return 0,
        (_, HalfOperand::ShiftedHalf(..)) => return 0,
        _ => {}
    }
    let parts = |x: HalfOperand| {
        // `bf16` rows, shifted rows (the rounded difference of one, `c`'s NaN fitting),
        // `bf16` blocks and values whose NaNs are `bf16`s fit; `f32` blocks (whose NaNs may
        // be any `f32`'s) and `f16` rows (whose widened NaNs keep payload bits in the low
        // half) do not.
        let fits = crate::half_block::nan_fits_bf16;
        let (kind, ptr, value, fits) = match x {
            HalfOperand::ShiftedHalf(_, s, c) => (SHIFTED_ROW, s.as_ptr() as *const u8, c, fits(c)),
            HalfOperand::Block(s) => (BLOCK, s.as_ptr() as *const u8, 0.0, false),
            HalfOperand::Bf16Block(s) => (BLOCK, s.as_ptr() as *const u8, 0.0, true),
            HalfOperand::Half(Half::Bf16, s) => (BF16_ROW, s.as_ptr() as *const u8, 0.0, true),
            HalfOperand::Half(Half::F16, s) => (F16_ROW, s.as_ptr() as *const u8, 0.0, false),
            HalfOperand::Value(v) => (VALUE, std::ptr::null(), v, fits(v)),
        };
        Operand {
            kind,
            ptr,
            value,
            fits,
        }
    };
    let (a, b) = (parts(a), parts(b));
    let (dst, packed) = match out {
        Out::F32(p) => (p as *mut u8, false),
        Out::Packed(p) => (p as *mut u8, true),
    };
    // SAFETY (every arm): the CPU has AVX-512F and BW; each operand that is not a value covers `n`
    // elements of its kind (the callers checked the lengths), `dst` `n` results.
    unsafe {
        match (to, packed) {
            (Half::F16, false) => by_op::<false, false>(code, a, b, dst, n),
            (Half::Bf16, false) => by_op::<true, false>(code, a, b, dst, n),
            (Half::F16, true) => by_op::<false, true>(code, a, b, dst, n),
            (Half::Bf16, true) => by_op::<true, true>(code, a, b, dst, n),
        }
    }
}

/// [`x16`] for the op (`code`, its index in [`HALF_BINARY_OPS`]).
///
/// # Safety
/// As [`x16`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn by_op<const BF16: bool, const PACK: bool>(
    code: usize,
    a: Operand,
    b: Operand,
    dst: *mut u8,
    n: usize,
) -> usize {
    // SAFETY (each arm): the caller's contract.
    unsafe {
        match code {
            0 => by_lhs::<0, BF16, PACK>(a, b, dst, n),
            1 => by_lhs::<1, BF16, PACK>(a, b, dst, n),
            2 => by_lhs::<2, BF16, PACK>(a, b, dst, n),
            3 => by_lhs::<3, BF16, PACK>(a, b, dst, n),
            4 => by_lhs::<4, BF16, PACK>(a, b, dst, n),
            _ => by_lhs::<5, BF16, PACK>(a, b, dst, n),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn fast(_: usize, _: Half, _: HalfOperand, _: HalfOperand, _: Out, _: usize) -> usize {
    0
}

/// [`x16`] for the first operand's kind.
///
/// # Safety
/// As [`x16`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn by_lhs<const OP: usize, const BF16: bool, const PACK: bool>(
    a: Operand,
    b: Operand,
    dst: *mut u8,
    n: usize,
) -> usize {
    // SAFETY (each arm): the caller's contract.
    unsafe {
        match a.kind {
            BLOCK => by_rhs::<OP, BF16, PACK, BLOCK>(a, b, dst, n),
            VALUE => by_rhs::<OP, BF16, PACK, VALUE>(a, b, dst, n),
            BF16_ROW => by_rhs::<OP, BF16, PACK, BF16_ROW>(a, b, dst, n),
            SHIFTED_ROW => by_rhs::<OP, BF16, PACK, SHIFTED_ROW>(a, b, dst, n),
            _ => by_rhs::<OP, BF16, PACK, F16_ROW>(a, b, dst, n),
        }
    }
}

/// [`x16`] for the second operand's kind.
///
/// # Safety
/// As [`x16`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn by_rhs<const OP: usize, const BF16: bool, const PACK: bool, const A: u8>(
    a: Operand,
    b: Operand,
    dst: *mut u8,
    n: usize,
) -> usize {
    // SAFETY (each arm): the caller's contract.
    unsafe {
        match b.kind {
            BLOCK => x16::<OP, BF16, PACK, A, BLOCK>(a, b, dst, n),
            VALUE if A == VALUE => 0,
            VALUE => x16::<OP, BF16, PACK, A, VALUE>(a, b, dst, n),
            BF16_ROW => x16::<OP, BF16, PACK, A, BF16_ROW>(a, b, dst, n),
            _ => x16::<OP, BF16, PACK, A, F16_ROW>(a, b, dst, n),
        }
    }
}

/// Sixteen `f32`s of operand `x` (of kind `K`) from element `i`: a block's, a 16-bit row's
/// widened (`bf16` by a shift; `f16` by `vcvtph2ps`, exact for every value but a
/// signalling NaN, which it quiets — a NaN either way, and an op's NaN is not promised),
/// the value's splat `v`, or (a shifted row, of `bf16`s when `BF16`, else `f16`s) the
/// row's widening minus `v`, rounded to the row's format.
///
/// # Safety
/// The CPU has AVX-512F and BW; `x` covers elements `i..i + 16` unless it is a value.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn load16<const K: u8, const BF16: bool, const ARITH: bool>(
    x: Operand,
    v: std::arch::x86_64::__m512,
    i: usize,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_castsi512_ps, _mm512_cvtepu16_epi32, _mm512_cvtph_ps,
        _mm512_loadu_ps, _mm512_slli_epi32, _mm512_sub_ps,
    };
    // SAFETY: the caller's contract.
    unsafe {
        match K {
            BLOCK => _mm512_loadu_ps((x.ptr as *const f32).add(i)),
            VALUE => v,
            SHIFTED_ROW => {
                let (row, to) = if BF16 {
                    (load16::<BF16_ROW, BF16, ARITH>(x, v, i), Half::Bf16)
                } else {
                    (load16::<F16_ROW, BF16, ARITH>(x, v, i), Half::F16)
                };
                round::<BF16, ARITH>(to, _mm512_sub_ps(row, v))
            }
            BF16_ROW => {
                let h = _mm256_loadu_si256((x.ptr as *const u16).add(i) as *const __m256i);
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
            }
            _ => _mm512_cvtph_ps(_mm256_loadu_si256(
                (x.ptr as *const u16).add(i) as *const __m256i
            )),
        }
    }
}

/// Whole vectors of sixteen: both operands loaded (or splat), the op, the rounding
/// (`crate::half_block::round_zmm`), one store — of the sixteen `f32`s, or (`PACK`) of
/// their 16-bit bits: `vcvtps2ph` of the op's result for `f16` (round to nearest even,
/// once: the rounded value's bits, NaNs quieted as the rule quiets them), the rounded
/// `bf16`'s top halves. Returns how many elements it wrote.
///
/// # Safety
/// The CPU has AVX-512F and BW; an operand that is not a value covers `n` elements of its kind,
/// and `dst` `n` writable results (`f32`, or `u16` when `PACK`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn x16<const OP: usize, const BF16: bool, const PACK: bool, const A: u8, const B: u8>(
    a: Operand,
    b: Operand,
    dst: *mut u8,
    n: usize,
) -> usize {
    // Operands whose NaNs are `bf16`s ([`Operand::fits`]): every NaN the loop's ops make
    // has its low half clear, so the four-instruction rounding gives the rule's bits.
    let arith = BF16 && a.fits && b.fits;
    // SAFETY: the caller's contract.
    unsafe {
        if arith {
            x16_loop::<OP, BF16, PACK, A, B, true>(a, b, dst, n)
        } else {
            x16_loop::<OP, BF16, PACK, A, B, false>(a, b, dst, n)
        }
    }
}

/// `round_zmm` to `to`, or when `ARITH` (`bf16` results of ops on operands that
/// `crate::half_block::nan_fits_bf16`) `crate::half_block::round_bf16_arith_zmm`: the
/// same bits.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn round<const BF16: bool, const ARITH: bool>(
    to: Half,
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    // SAFETY: the caller's contract.
    unsafe {
        if BF16 && ARITH {
            crate::half_block::round_bf16_arith_zmm(x)
        } else {
            crate::half_block::round_zmm(to, x)
        }
    }
}

/// [`x16`]'s loop, rounding by [`round`]`::<BF16, ARITH>`.
///
/// # Safety
/// As [`x16`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn x16_loop<
    const OP: usize,
    const BF16: bool,
    const PACK: bool,
    const A: u8,
    const B: u8,
    const ARITH: bool,
>(
    a: Operand,
    b: Operand,
    dst: *mut u8,
    n: usize,
) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_storeu_si256, _mm512_castps_si512, _mm512_castsi512_si256, _mm512_cvtps_ph,
        _mm512_permutexvar_epi16, _mm512_set1_ps, _mm512_set_epi16, _mm512_storeu_ps,
        _MM_FROUND_TO_NEAREST_INT,
    };
    let to = if BF16 { Half::Bf16 } else { Half::F16 };
    let (va, vb) = (_mm512_set1_ps(a.value), _mm512_set1_ps(b.value));
    // Word `2j + 1` (the high half of lane `j`) to word `j`, for `j < 16`.
    let high_halves = _mm512_set_epi16(
        31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27, 25, 23, 21, 19, 17,
        15, 13, 11, 9, 7, 5, 3, 1,
    );
    // Packed `bf16` results: 32 a step, one 64-byte store (`pairs`).
    let mut i = if BF16 && PACK {
        // SAFETY: the caller's contract (`dst` holds `u16`s).
        unsafe { pairs::bf16_pairs::<OP, A, B, ARITH>(a, b, dst as *mut u16, n) }
    } else {
        0
    };
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n`; operands and `dst` cover `n` elements.
        unsafe {
            let x = load16::<A, BF16, ARITH>(a, va, i);
            let y = load16::<B, BF16, ARITH>(b, vb, i);
            let r = op16::<OP>(x, y);
            if !PACK {
                let r = round::<BF16, ARITH>(to, r);
                _mm512_storeu_ps((dst as *mut f32).add(i), r);
            } else {
                let h = if BF16 {
                    let r = _mm512_castps_si512(round::<BF16, ARITH>(to, r));
                    // The high halves into the low 256 bits (`vpermw`), stored as one vector:
                    // `vpmovdw` to memory, the obvious choice, takes several times as long
                    // on AMD's cores.
                    _mm512_castsi512_si256(_mm512_permutexvar_epi16(high_halves, r))
                } else {
                    _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(r)
                };
                _mm256_storeu_si256((dst as *mut u16).add(i) as *mut __m256i, h);
            }
        }
        i += 16;
    }
    i
}

/// Op `OP` (its index in [`HALF_BINARY_OPS`]) on sixteen lanes, in `f32`.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn op16<const OP: usize>(
    x: std::arch::x86_64::__m512,
    y: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{_mm512_add_ps, _mm512_div_ps, _mm512_mul_ps, _mm512_sub_ps};
    // SAFETY: the caller's contract.
    unsafe {
        match OP {
            0 => _mm512_add_ps(x, y),
            1 => _mm512_sub_ps(x, y),
            2 => _mm512_mul_ps(x, y),
            3 => _mm512_div_ps(x, y),
            4 => extremum::<true>(x, y),
            _ => extremum::<false>(x, y),
        }
    }
}

/// XLA's maximum (`MAX`) or minimum of each lane, the interpreter's
/// (`crate::scalar::fmax`/`fmin`): the `and` (maximum) or `or` (minimum) of the two
/// orders' `vmaxps`/`vminps` (each returns its second operand on equal values, so ±0 meet
/// as `+0` in a maximum, `-0` in a minimum), and the canonical NaN where either lane is one.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn extremum<const MAX: bool>(
    x: std::arch::x86_64::__m512,
    y: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{
        _mm512_and_si512, _mm512_castps_si512, _mm512_castsi512_ps, _mm512_cmp_ps_mask,
        _mm512_mask_blend_ps, _mm512_max_ps, _mm512_min_ps, _mm512_or_si512, _mm512_set1_ps,
        _CMP_UNORD_Q,
    };
    let bits = _mm512_castps_si512;
    let r = if MAX {
        _mm512_and_si512(bits(_mm512_max_ps(x, y)), bits(_mm512_max_ps(y, x)))
    } else {
        _mm512_or_si512(bits(_mm512_min_ps(x, y)), bits(_mm512_min_ps(y, x)))
    };
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, y);
    _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(r), _mm512_set1_ps(f32::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::float16::round_f32;

    /// The rule, element by element: what every vector loop must equal.
    fn by_rule(op: BinaryOp, to: Half, a: f32, b: f32) -> f32 {
        round_f32(apply(op, a, b), to)
    }

    /// `f32` inputs of every class: each bf16 and f16 value's `f32` (NaNs with their
    /// payloads, signalling ones too, infinities, subnormals), then random bit patterns.
    fn inputs() -> Vec<f32> {
        let mut x: Vec<f32> = (0..=u16::MAX)
            .step_by(3)
            .map(|h| f32::from_bits(u32::from(h) << 16))
            .collect();
        x.extend(
            (0..=u16::MAX)
                .step_by(5)
                .map(|h| kiln_math::float16::to_f32(h, Half::F16)),
        );
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..1 << 15 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            x.push(f32::from_bits(s as u32));
        }
        x
    }

    /// Every op, format and operand form against the rule element by element, at lengths
    /// with tails; the second operand is the first rotated, so every class meets every
    /// other (NaN against NaN included: the first operand's wins).
    #[test]
    fn every_op_and_form_equals_the_rule() {
        let x = inputs();
        let mut y = x.clone();
        y.rotate_left(7919);
        let values = [
            1.5f32,
            -0.0,
            f32::NAN,
            f32::from_bits(0x7f80_0001),
            1e-40,
            f32::INFINITY,
        ];
        let rows: Vec<u16> = (0..=u16::MAX).collect();
        let mut rows2 = rows.clone();
        rows2.rotate_left(4099);
        let other_half = |h: Half| match h {
            Half::F16 => Half::Bf16,
            Half::Bf16 => Half::F16,
        };
        for op in HALF_BINARY_OPS {
            for to in [Half::F16, Half::Bf16] {
                let check = |a: HalfOperand, b: HalfOperand, n: usize, what: &str| {
                    let mut out = vec![0.0f32; n];
                    assert!(binary_round_block(op, to, a, b, &mut out));
                    for (i, o) in out.iter().enumerate() {
                        let at = |v: &HalfOperand| v.at(i);
                        let want = by_rule(op, to, at(&a), at(&b));
                        // Which NaN comes out of an op on two NaNs is not promised (and
                        // the compiler may swap a scalar op's operands): only that it is one.
                        let same = o.to_bits() == want.to_bits() || o.is_nan() && want.is_nan();
                        assert!(
                            same,
                            "{op:?} {to:?} {what} at {i}: {:#010x} {:#010x}",
                            at(&a).to_bits(),
                            at(&b).to_bits()
                        );
                    }
                    // Packed: the bits of the rule's rounding, then its packing.
                    let mut bits = vec![0u16; n];
                    assert!(binary_round_pack_block(op, to, a, b, &mut bits));
                    for (i, &h) in bits.iter().enumerate() {
                        let want = by_rule(op, to, a.at(i), b.at(i));
                        let want_bits = pack(&mut ScalarF32, want, to) as u16;
                        let got = to_f32(h, to);
                        assert!(
                            h == want_bits || got.is_nan() && want.is_nan(),
                            "packed {op:?} {to:?} {what} at {i}: {h:#06x}, the rule {want_bits:#06x}"
                        );
                    }
                };
                for n in [x.len(), 0, 1, 15, 16, 17, 31, 32, 33, 48, 63, 65, 512] {
                    let (a, b) = (&x[..n], &y[..n]);
                    check(HalfOperand::Block(a), HalfOperand::Block(b), n, "blocks");
                    check(HalfOperand::Block(a), HalfOperand::Block(a), n, "a, a");
                }
                for v in values {
                    let a = &x[..4099];
                    let b = HalfOperand::Value(v);
                    check(HalfOperand::Block(a), b, a.len(), "block, value");
                    check(b, HalfOperand::Block(a), a.len(), "value, block");
                }
                // Rows of 16-bit floats, widened as they are read: every pattern of both
                // formats (NaNs, subnormals, infinities) against blocks, values and rows.
                for h in [Half::F16, Half::Bf16] {
                    for n in [rows.len(), 1, 15, 16, 17, 33, 47, 64, 81] {
                        let r = HalfOperand::Half(h, &rows[..n]);
                        let r2 = HalfOperand::Half(h, &rows2[..n]);
                        let other = HalfOperand::Half(other_half(h), &rows2[..n]);
                        let blk = HalfOperand::Block(&x[..n]);
                        check(r, blk, n, "row, block");
                        check(blk, r, n, "block, row");
                        check(r, r2, n, "row, row");
                        check(r, other, n, "row, other row");
                        for v in values {
                            check(r, HalfOperand::Value(v), n, "row, value");
                            check(HalfOperand::Value(v), r, n, "value, row");
                        }
                        // A row minus a value, rounded to the row's format, as the first
                        // operand (sixteen lanes when that is the result's format) and as
                        // the second (the rule element by element).
                        for c in [0.3125f32, -7.0, 1e-40, f32::NAN, f32::INFINITY] {
                            let shifted = HalfOperand::ShiftedHalf(h, &rows[..n], c);
                            check(shifted, HalfOperand::Value(1.75), n, "shifted, value");
                            check(shifted, blk, n, "shifted, block");
                            check(shifted, r2, n, "shifted, row");
                            check(blk, shifted, n, "block, shifted");
                        }
                    }
                }
            }
        }
    }

    /// `bf16` results of `bf16` rows, shifted rows, blocks and values (the operands of the
    /// four-instruction rounding, and values that are not: NaNs with payload bits in the low
    /// half): the rule's exact bits, NaNs included, wherever at most one operand is a NaN
    /// (which of two NaNs comes out is not promised), unpacked and packed.
    #[test]
    fn bf16_roundings_keep_the_rules_nan_bits() {
        let to = Half::Bf16;
        let rows: Vec<u16> = (0..=u16::MAX).collect();
        let mut rows2 = rows.clone();
        rows2.rotate_left(4099);
        let widened: Vec<f32> = rows.iter().map(|&h| to_f32(h, to)).collect();
        let widened2: Vec<f32> = rows2.iter().map(|&h| to_f32(h, to)).collect();
        let values = [
            1.5f32,
            -0.0,
            1e-38,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f81_0000),
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xff80_0001),
            f32::from_bits(0x7fff_ffff),
        ];
        for op in HALF_BINARY_OPS {
            let check = |a: HalfOperand, b: HalfOperand, what: &str| {
                let n = rows.len();
                let mut out = vec![0.0f32; n];
                assert!(binary_round_block(op, to, a, b, &mut out));
                let mut bits = vec![0u16; n];
                assert!(binary_round_pack_block(op, to, a, b, &mut bits));
                for i in 0..n {
                    let (x, y) = (a.at(i), b.at(i));
                    if x.is_nan() && y.is_nan() {
                        continue;
                    }
                    let want = by_rule(op, to, x, y);
                    let (got, got_bits) = (out[i].to_bits(), bits[i]);
                    let want_bits = pack(&mut ScalarF32, want, to) as u16;
                    assert!(
                        got == want.to_bits() && got_bits == want_bits,
                        "{op:?} {what} at {i}: {:#010x} {:#010x} gave {got:#010x} \
                         ({got_bits:#06x}), the rule {:#010x}",
                        x.to_bits(),
                        y.to_bits(),
                        want.to_bits()
                    );
                }
            };
            let (r, r2) = (HalfOperand::Half(to, &rows), HalfOperand::Half(to, &rows2));
            check(r, r2, "row, row");
            // Blocks of `bf16` values: every pattern's `f32`.
            let (b, b2) = (
                HalfOperand::Bf16Block(&widened),
                HalfOperand::Bf16Block(&widened2),
            );
            check(b, b2, "bf16 block, bf16 block");
            check(b, r2, "bf16 block, row");
            check(r, b2, "row, bf16 block");
            for v in values {
                check(r, HalfOperand::Value(v), "row, value");
                check(HalfOperand::Value(v), r, "value, row");
                check(b, HalfOperand::Value(v), "bf16 block, value");
                check(HalfOperand::Value(v), b2, "value, bf16 block");
                let shifted = HalfOperand::ShiftedHalf(to, &rows, v);
                check(shifted, r2, "shifted, row");
                for w in values {
                    check(shifted, HalfOperand::Value(w), "shifted, value");
                }
            }
        }
    }

    /// Ops outside the table, lengths that differ and two values write nothing.
    #[test]
    fn refuses_what_it_does_not_compute() {
        let one = HalfOperand::Value(1.0);
        let (block, short, row) = ([1.0f32; 3], [1.0f32; 2], [0u16; 4]);
        let b = HalfOperand::Block(&block);
        let cases = [
            (BinaryOp::Pow, b, one),
            (BinaryOp::Add, HalfOperand::Block(&short), one),
            (BinaryOp::Add, one, one),
            (BinaryOp::Mul, HalfOperand::Half(Half::Bf16, &row), one),
        ];
        for (op, x, y) in cases {
            for to in [Half::F16, Half::Bf16] {
                let mut out = [7.0f32; 3];
                assert!(
                    !binary_round_block(op, to, x, y, &mut out),
                    "{op:?} {x:?} {y:?}"
                );
                assert_eq!(out, [7.0; 3]);
                let mut bits = [7u16; 3];
                assert!(
                    !binary_round_pack_block(op, to, x, y, &mut bits),
                    "{op:?} packed"
                );
                assert_eq!(bits, [7; 3]);
            }
        }
    }
}
