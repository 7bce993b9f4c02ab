//! Single-precision `logf` and `sincosf` exactly as glibc ≥ 2.28 computes them on x86-64:
//! the table-driven algorithms of Szabolcs Nagy / Wilco Dijkstra (Arm optimized-routines,
//! glibc's `sysdeps/ieee754/flt-32/e_logf.c` and `s_sincosf.c`), evaluated in binary64 and
//! rounded once, over [`Widen`] so every backend computes the same bits.
//!
//! Why: TensorFlow's CPU Box–Muller calls the C library's `logf` and `sincosf`; to reproduce
//! its normals bit for bit, Kiln needs the same functions, not merely accurate ones.
//!
//! glibc on x86-64 selects, at load time, a build of these files compiled with `-mfma
//! -mavx2` when the CPU has FMA (every x86-64 CPU since 2013), and GCC contracts each
//! `a * b + c` whose product has no other use into one fused multiply-add. The operations
//! below are that build's: the same reduction, table entries, polynomial, association and
//! fusions (`dfma` exactly where the compiled code has `vfmadd`). The constants are the
//! published ones (`e_logf_data.c`, `s_sincosf_data.c`, written here as bit patterns).
//! Checked against the machine's glibc over all 2^32 inputs:
//! `cargo run --release -p kiln-math --example glibc_exact`.
//!
//! Branches become selects: every input runs the same operations (the `logf` subnormal
//! rescale, the `sincosf` reductions) and the results are chosen per lane.

use crate::arith::{Arith, IntCC};
use crate::widen::Widen;

/// `logf`'s `1/c` for the 16 subintervals of `[0x1.66p-1, 0x1.66p0]` (`__logf_data.tab`).
static LOGF_INVC: [f64; 16] = [
    f64::from_bits(0x3ff661ec79f8f3be),
    f64::from_bits(0x3ff571ed4aaf883d),
    f64::from_bits(0x3ff49539f0f010b0),
    f64::from_bits(0x3ff3c995b0b80385),
    f64::from_bits(0x3ff30d190c8864a5),
    f64::from_bits(0x3ff25e227b0b8ea0),
    f64::from_bits(0x3ff1bb4a4a1a343f),
    f64::from_bits(0x3ff12358f08ae5ba),
    f64::from_bits(0x3ff0953f419900a7),
    f64::from_bits(0x3ff0000000000000),
    f64::from_bits(0x3fee608cfd9a47ac),
    f64::from_bits(0x3feca4b31f026aa0),
    f64::from_bits(0x3feb2036576afce6),
    f64::from_bits(0x3fe9c2d163a1aa2d),
    f64::from_bits(0x3fe886e6037841ed),
    f64::from_bits(0x3fe767dcf5534862),
];
/// `logf`'s `log(c)` per subinterval.
static LOGF_LOGC: [f64; 16] = [
    f64::from_bits(0xbfd57bf7808caade),
    f64::from_bits(0xbfd2bef0a7c06ddb),
    f64::from_bits(0xbfd01eae7f513a67),
    f64::from_bits(0xbfcb31d8a68224e9),
    f64::from_bits(0xbfc6574f0ac07758),
    f64::from_bits(0xbfc1aa2bc79c8100),
    f64::from_bits(0xbfba4e76ce8c0e5e),
    f64::from_bits(0xbfb1973c5a611ccc),
    f64::from_bits(0xbfa252f438e10c1e),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0x3faaa5aa5df25984),
    f64::from_bits(0x3fbc5e53aa362eb4),
    f64::from_bits(0x3fc526e57720db08),
    f64::from_bits(0x3fcbc2860d224770),
    f64::from_bits(0x3fd1058bc8a07ee1),
    f64::from_bits(0x3fd4043057b6ee09),
];
/// `ln 2` (`0x1.62e42fefa39efp-1`).
const LOGF_LN2: f64 = f64::from_bits(0x3fe62e42fefa39ef);
/// `log1p(r) ≈ r + A0 r² + A1 r³ + A2 r⁴`: `-0x1.00ea348b88334p-2`, `0x1.5575b0be00b6ap-2`,
/// `-0x1.ffffef20a4123p-2`.
const LOGF_A: [f64; 3] = [
    f64::from_bits(0xbfd00ea348b88334),
    f64::from_bits(0x3fd5575b0be00b6a),
    f64::from_bits(0xbfdffffef20a4123),
];

/// glibc's `logf(x)` for every `f32` (NaN payloads aside): `-inf` at `±0`, NaN below zero.
#[inline(always)]
pub fn logf_glibc<A: Widen>(a: &mut A, x: A::F) -> A::F {
    let y = logf_core(a, x);
    let ix = a.to_bits(x);
    log_specials(a, x, ix, 0x7f80_0000, y)
}

/// glibc's special inputs of `logf` and `log`, applied to `y`, the value for positive
/// finite `x` (bits `ix`; `inf_bits` those of `+inf` in `x`'s format), in glibc's order of
/// precedence (the last select wins): negative or NaN → NaN (`(x - x) / (x - x)`), `+inf` →
/// `+inf`, `±0` → `-inf`.
#[inline(always)]
pub(crate) fn log_specials<A: Arith>(a: &mut A, x: A::F, ix: A::U, inf_bits: u64, y: A::F) -> A::F {
    let d = a.sub(x, x);
    let nan = a.div(d, d);
    let inf_bits = a.uconst(inf_bits);
    let above = a.icmp(IntCC::Ugt, ix, inf_bits);
    let y = a.select(above, nan, y);
    let is_inf = a.icmp(IntCC::Eq, ix, inf_bits);
    let y = a.select(is_inf, x, y);
    let twice = a.shl(ix, 1);
    let zero = a.uconst(0);
    let is_zero = a.icmp(IntCC::Eq, twice, zero);
    let minf = a.fconst(f64::NEG_INFINITY);
    a.select(is_zero, minf, y)
}

/// glibc's `logf` for positive finite normal `x` (the value for anything else is
/// unspecified): no subnormal rescale, no special cases.
#[inline(always)]
pub fn logf_glibc_normal<A: Widen>(a: &mut A, x: A::F) -> A::F {
    let ix = a.to_bits(x);
    logf_reduced(a, ix)
}

/// The finite positive path, subnormals rescaled by `2^23` first.
#[inline(always)]
fn logf_core<A: Widen>(a: &mut A, x: A::F) -> A::F {
    let ix = a.to_bits(x);
    let scale = a.fconst(8_388_608.0); // 2^23
    let xs = a.mul(x, scale);
    let ixs = a.to_bits(xs);
    let e23 = a.uconst(23 << 23);
    let ixs = a.isub(ixs, e23);
    let min_normal = a.uconst(0x0080_0000);
    let sub = a.icmp(IntCC::Ult, ix, min_normal);
    let ix = a.select_u(sub, ixs, ix);
    logf_reduced(a, ix)
}

/// `x = 2^k z` with `z` in `[0x3f330000, 2 · 0x3f330000)` (bits), `log x = log1p(z/c - 1) +
/// log c + k ln 2`; `ix` the bits of a positive normal (or rescaled subnormal) `x`.
#[inline(always)]
fn logf_reduced<A: Widen>(a: &mut A, ix: A::U) -> A::F {
    let off = a.uconst(0x3f33_0000);
    let tmp = a.isub(ix, off);
    let i = a.lshr(tmp, 23 - 4);
    let fifteen = a.uconst(15);
    let i = a.and(i, fifteen);
    let k = a.ashr(tmp, 23);
    let expo = a.uconst(0x1ff << 23);
    let hi = a.and(tmp, expo);
    let iz = a.isub(ix, hi);
    let invc = a.dtable(&LOGF_INVC, i);
    let logc = a.dtable(&LOGF_LOGC, i);
    let zf = a.from_bits(iz);
    let z = a.widen(zf);
    let m1 = a.dconst(-1.0);
    let r = a.dfma(z, invc, m1);
    let kd = a.sint_to_d(k);
    let ln2 = a.dconst(LOGF_LN2);
    let y0 = a.dfma(kd, ln2, logc);
    let r2 = a.dmul(r, r);
    let [a0, a1, a2] = LOGF_A.map(|c| a.dconst(c));
    let y = a.dfma(a1, r, a2);
    let y = a.dfma(a0, r2, y);
    let t = a.dadd(y0, r);
    let y = a.dfma(y, r2, t);
    a.narrow(y)
}

/// `2/π · 2^24` (`hpi_inv` of the table, pre-scaled: x86-64 has no `TOINT_INTRINSICS`).
const HPI_INV: f64 = f64::from_bits(0x41645f306dc9c883);
/// `π/2` (`0x1.921fb54442d18p0`).
const HPI: f64 = f64::from_bits(0x3ff921fb54442d18);
/// `π · 2^-64` (`pi64`), the scale of the large reduction's 2.62 fixed point.
const PI64: f64 = f64::from_bits(0x3c1921fb54442d18);
/// Cosine polynomial `c0..c4` (first table entry; the second is its negation).
const COS_C: [f64; 5] = [
    1.0,
    f64::from_bits(0xbfdffffffd0c621c),
    f64::from_bits(0x3fa55553e1068f19),
    f64::from_bits(0xbf56c087e89a359d),
    f64::from_bits(0x3ef99343027bf8c3),
];
/// Sine polynomial `s1..s3`.
const SIN_S: [f64; 3] = [
    f64::from_bits(0xbfc555545995a603),
    f64::from_bits(0x3f81107605230bc4),
    f64::from_bits(0xbf2994eb3774cf24),
];
/// 4/π to 192 bits, 8 new bits per entry (`__inv_pio4`).
#[rustfmt::skip]
static INV_PIO4: [u32; 24] = [
    0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd,
    0xf534ddc0, 0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43,
    0x993c4390, 0x3c439041,
];

/// glibc's `sincosf(y)` = `(sin y, cos y)` for every `f32` (NaN for infinities and NaN).
#[inline(always)]
pub fn sincosf_glibc<A: Widen>(a: &mut A, y: A::F) -> (A::F, A::F) {
    sincosf_impl(a, y, true)
}

/// glibc's `sincosf(y)` for `|y| < 120` (not NaN): the large-argument reduction left out.
/// Box–Muller's angles `2π u` are in `[0, 2π)`.
#[inline(always)]
pub fn sincosf_glibc_below_120<A: Widen>(a: &mut A, y: A::F) -> (A::F, A::F) {
    sincosf_impl(a, y, false)
}

#[inline(always)]
fn sincosf_impl<A: Widen>(a: &mut A, y: A::F, large: bool) -> (A::F, A::F) {
    let xi = a.to_bits(y);
    let top = a.lshr(xi, 20);
    let m = a.uconst(0x7ff);
    let top = a.and(top, m);
    let below = |a: &mut A, t: u64| {
        let t = a.uconst(t);
        a.icmp(IntCC::Ult, top, t)
    };
    let small = below(a, 0x3f4); // |y| < 0.75 (abstop12 of (float) π/4)
    let tiny = below(a, 0x398); // |y| < 2^-12
    let x = a.widen(y);
    // reduce_fast: n = ((int)(x · 2/π · 2^24) + 2^23) >> 24, r = x - n π/2 (one fma).
    let (xm, medium) = if large {
        let medium = below(a, 0x42f); // |y| < 120
        let zero = a.dconst(0.0);
        (a.dselect(medium, x, zero), Some(medium))
    } else {
        (x, None)
    };
    let hpi_inv = a.dconst(HPI_INV);
    let r = a.dmul(xm, hpi_inv);
    let ri = a.d_to_sint(r);
    let half = a.uconst(0x80_0000);
    let ri = a.iadd(ri, half);
    let n = a.ashr(ri, 24);
    let nd = a.sint_to_d(n);
    let mhpi = a.dconst(-HPI);
    let mut xr = a.dfma(nd, mhpi, x);
    // Quadrant for the swap (`n`) and for the signs (`n`, plus the sign bit when large).
    let (mut n_swap, mut q) = (n, n);
    if let Some(medium) = medium {
        let (xl, nl) = reduce_large(a, xi);
        let sign = a.lshr(xi, 31);
        let ql = a.iadd(nl, sign);
        xr = a.dselect(medium, xr, xl);
        n_swap = a.select_u(medium, n, nl);
        q = a.select_u(medium, n, ql);
    }
    let zero = a.uconst(0);
    xr = a.dselect(small, x, xr);
    n_swap = a.select_u(small, zero, n_swap);
    q = a.select_u(small, zero, q);
    // sign[q & 3] = {1, -1, -1, 1}; the second table (q & 2) negates the cosine polynomial.
    let q1 = a.lshr(q, 1);
    let qx = a.xor(q, q1);
    let one = a.uconst(1);
    let qx = a.and(qx, one);
    let neg = a.icmp(IntCC::Ne, qx, zero);
    let p1 = a.dconst(1.0);
    let m1 = a.dconst(-1.0);
    let s = a.dselect(neg, m1, p1);
    let xs = a.dmul(xr, s);
    let x2 = a.dmul(xr, xr);
    let (sp, cp) = sincosf_poly(a, xs, x2);
    let two = a.uconst(2);
    let q2 = a.and(q, two);
    let flip = a.shl(q2, 30);
    let cb = a.to_bits(cp);
    let cb = a.xor(cb, flip);
    let cp = a.from_bits(cb);
    let odd = a.and(n_swap, one);
    let odd = a.icmp(IntCC::Ne, odd, zero);
    let sin = a.select(odd, cp, sp);
    let cos = a.select(odd, sp, cp);
    // |y| < 2^-12: (y, 1).
    let onef = a.fconst(1.0);
    let sin = a.select(tiny, y, sin);
    let cos = a.select(tiny, onef, cos);
    if !large {
        return (sin, cos);
    }
    let inf = a.uconst(0x7f8);
    let finite = a.icmp(IntCC::Ult, top, inf);
    let nan = a.sub(y, y);
    (a.select(finite, sin, nan), a.select(finite, cos, nan))
}

/// `sincosf_poly` with the first table: `(sin-poly(x), cos-poly(x))` rounded to `f32`.
#[inline(always)]
fn sincosf_poly<A: Widen>(a: &mut A, x: A::D, x2: A::D) -> (A::F, A::F) {
    let [c0, c1, c2, c3, c4] = COS_C.map(|c| a.dconst(c));
    let [s1, s2, s3] = SIN_S.map(|c| a.dconst(c));
    let x4 = a.dmul(x2, x2);
    let x3 = a.dmul(x2, x);
    let cc2 = a.dfma(x2, c4, c3);
    let ss1 = a.dfma(x2, s3, s2);
    let cc1 = a.dfma(x2, c1, c0);
    let x5 = a.dmul(x3, x2);
    let x6 = a.dmul(x4, x2);
    let s = a.dfma(x3, s1, x);
    let c = a.dfma(x4, c2, cc1);
    let s = a.dfma(x5, ss1, s);
    let c = a.dfma(x6, cc2, c);
    (a.narrow(s), a.narrow(c))
}

/// `reduce_large`: `|y| mod π/2` for `|y| >= 120` from a 32 × 96-bit product with 4/π, in
/// 32-bit integer halves. Returns the remainder (binary64) and the quadrant (0..=3).
#[inline(always)]
fn reduce_large<A: Widen>(a: &mut A, xi: A::U) -> (A::D, A::U) {
    let idx = a.lshr(xi, 26);
    let fifteen = a.uconst(15);
    let idx = a.and(idx, fifteen);
    let man = a.uconst(0xff_ffff);
    let mut m = a.and(xi, man);
    let implicit = a.uconst(0x80_0000);
    m = a.or(m, implicit);
    // m <<= (xi >> 23) & 7, one select per bit of the shift.
    for bit in 0..3 {
        let b = a.uconst(1 << (23 + bit));
        let t = a.and(xi, b);
        let zero = a.uconst(0);
        let set = a.icmp(IntCC::Ne, t, zero);
        let shifted = a.shl(m, 1 << bit);
        m = a.select_u(set, shifted, m);
    }
    let w0 = utable(a, &INV_PIO4[0..16], idx);
    let w4 = utable(a, &INV_PIO4[4..20], idx);
    let w8 = utable(a, &INV_PIO4[8..24], idx);
    // res0 = lo(m w0) << 32 | hi(m w8), plus m w4 (64 bits).
    let h = a.imul(m, w0);
    let hi1 = a.umulhi(m, w4);
    let lo1 = a.imul(m, w4);
    let l = a.umulhi(m, w8);
    let lo = a.iadd(l, lo1);
    let carry = a.icmp(IntCC::Ult, lo, l);
    let one = a.uconst(1);
    let zero = a.uconst(0);
    let c = a.select_u(carry, one, zero);
    let hi = a.iadd(h, hi1);
    let hi = a.iadd(hi, c);
    // n = (res0 + 2^61) >> 62; res0 -= n << 62.
    let bias = a.uconst(1 << 29);
    let n = a.iadd(hi, bias);
    let n = a.lshr(n, 30);
    let nb = a.shl(n, 30);
    let hi = a.isub(hi, nb);
    // (double)(int64_t)res0 = hi · 2^32 + lo, rounded once.
    let hd = a.sint_to_d(hi);
    let flip = a.uconst(0x8000_0000);
    let lo_s = a.xor(lo, flip);
    let lo_d = a.sint_to_d(lo_s);
    let two31 = a.dconst(2_147_483_648.0);
    let lo_d = a.dadd(lo_d, two31);
    let two32 = a.dconst(4_294_967_296.0);
    let r = a.dfma(hd, two32, lo_d);
    let pi64 = a.dconst(PI64);
    (a.dmul(r, pi64), n)
}

/// `table[i]` (16 entries) by a tree of integer selects.
#[inline(always)]
fn utable<A: Arith>(a: &mut A, table: &[u32], i: A::U) -> A::U {
    let mut level: [A::U; 16] = std::array::from_fn(|j| a.uconst(u64::from(table[j])));
    let mut n = 16;
    let mut bit = 1u64;
    while n > 1 {
        let b = a.uconst(bit);
        let t = a.and(i, b);
        let zero = a.uconst(0);
        let set = a.icmp(IntCC::Ne, t, zero);
        for j in 0..n / 2 {
            level[j] = a.select_u(set, level[2 * j + 1], level[2 * j]);
        }
        n /= 2;
        bit <<= 1;
    }
    level[0]
}
