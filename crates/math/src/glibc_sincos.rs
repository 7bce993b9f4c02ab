//! Double-precision `sincos` exactly as glibc ≥ 2.28 computes it on x86-64 with FMA, for
//! `|x| < 0x1.921fbp26` (= 105414336): the IBM Accurate Mathematical Library's algorithm
//! (glibc's `sysdeps/ieee754/dbl-64/s_sin.c` and `s_sincos.c`: a Taylor polynomial near
//! zero, otherwise `sin`/`cos` of the nearest multiple of 1/128 from `__sincostab` corrected
//! by short polynomials, after a three-part Cody–Waite reduction by π/2), over [`Arith`] so
//! every backend computes the same bits.
//!
//! Why: TensorFlow's CPU `BoxMullerDouble` calls the C library's `sincos` (on Linux) for
//! angles in `[0, 2π)`; to reproduce its `f64` normals bit for bit Kiln needs that function.
//!
//! glibc on x86-64 selects at load time a build compiled with `-mfma -mavx2`
//! (`__sincos_fma`) on CPUs with FMA and AVX2, and GCC contracts each `a * b + c` whose
//! product has no other use into one fused multiply-add. The operations below are that
//! build's, read off its machine code (the contractions of `do_sin`, `do_cos`, `TAYLOR_SIN`
//! and `reduce_sincos`). Constants are `usncs.h`'s and `s_sin.c`'s; the table is checked
//! against the library's own. Checked against the machine's glibc:
//! `cargo run --release -p kiln-math --example glibc_exact_f64`.
//!
//! Not here: glibc's `__branred` (the Payne–Hanek reduction for `|x| ≥ 0x1.921fbp26`);
//! such inputs give NaN (as do infinities and NaN, like glibc), a clear refusal rather than
//! a wrong value. glibc's separate `sin` and `cos` entry points are not here either: for
//! `0.855469 ≤ |x| < 2.426265` `sin` reduces differently from `sincos` (`do_cos(π/2 - |x|,
//! hp1)` rather than the renormalised pair), so its bits are not assumed to be `sincos`'s.
//! Needs an `F64`-format [`Arith`].

use crate::arith::{Arith, FloatCC, Format, IntCC};
use crate::glibc_sincostab::{CCS, CS, SN, SSN};

/// The first `|x|` (as the top 32 bits of its pattern) that [`sincos_glibc`] refuses.
pub const SINCOS_GLIBC_LIMIT: f64 = f64::from_bits(0x4199_21fb_0000_0000);

/// `1.5 · 2^45`: `big + |x|` rounds `|x|` to a multiple of 1/128, the table index.
const BIG: f64 = f64::from_bits(0x42c8000000000000);
/// `π/2 = HP0 + HP1`.
const HP0: f64 = f64::from_bits(0x3ff921fb54442d18);
const HP1: f64 = f64::from_bits(0x3c91a62633145c07);
/// `π/2` in three parts for the reduction: `MP1 + MP2` (exact products with small `n`),
/// then `PP3 + PP4`.
const MP1: f64 = f64::from_bits(0x3ff921fb58000000);
const MP2: f64 = f64::from_bits(0xbe4dde973c000000);
const PP3: f64 = f64::from_bits(0xbc8cb3b398000000);
const PP4: f64 = f64::from_bits(0xbacd747f23e32ed7);
/// `2/π`, and `1.5 · 2^52` (adding it rounds to an integer held in the low bits).
const HPINV: f64 = f64::from_bits(0x3fe45f306dc9c883);
const TOINT: f64 = f64::from_bits(0x4338000000000000);
/// Taylor coefficients `s1..s5` of `sin` (`usncs.h`).
const S: [f64; 5] = [
    f64::from_bits(0xbfc5555555555555),
    f64::from_bits(0x3f81111111110ece),
    f64::from_bits(0xbf2a01a019db08b8),
    f64::from_bits(0x3ec71de27b9a7ed9),
    f64::from_bits(0xbe5addffc2fcdf59),
];
/// `sn3`, `sn5`: the sine correction polynomial around a table point.
const SN3: f64 = f64::from_bits(0xbfc5555555555515);
const SN5: f64 = f64::from_bits(0x3f811110e829872f);
/// `cs2` (0.5 once rounded), `cs4`, `cs6`: the cosine correction polynomial.
const CS2: f64 = 0.5;
const CS4: f64 = f64::from_bits(0xbfa5555555555535);
const CS6: f64 = f64::from_bits(0x3f56c16bedd9e239);

/// glibc's `sincos(x)` = `(sin x, cos x)` for `|x| <` [`SINCOS_GLIBC_LIMIT`]; NaN for
/// larger `|x|`, infinities and NaN (see the module documentation).
#[inline(always)]
pub fn sincos_glibc<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::F) {
    debug_assert_eq!(A::FORMAT, Format::F64);
    let ix = a.to_bits(x);
    let hi = a.lshr(ix, 32);
    let mask = a.uconst(0x7fff_ffff);
    let k = a.and(hi, mask);
    let below = |a: &mut A, t: u64| {
        let t = a.uconst(t);
        a.icmp(IntCC::Ult, k, t)
    };
    let tiny = below(a, 0x3e40_0000); // |x| < 2^-27: (x, 1)
    let small = below(a, 0x3feb_6000); // |x| < 0.855469: (do_sin(x, 0), do_cos(x, 0))
    let mid = below(a, 0x4003_68fd); // |x| < 2.426265: π/2 - |x| in two parts
    let medium = below(a, 0x4199_21fb); // reduce_sincos
    let ax = a.abs(x);
    // π/2 - |x| = a_mid + da_mid.
    let [hp0, hp1] = [HP0, HP1].map(|c| a.fconst(c));
    let y = a.sub(hp0, ax);
    let a_mid = a.add(y, hp1);
    let t = a.sub(y, a_mid);
    let da_mid = a.add(t, hp1);
    // x = n π/2 + (b + db), negated in quadrants 1 and 2 as sincos does.
    let (b, db, n) = reduce_sincos(a, x);
    let one = a.uconst(1);
    let nm1 = a.isub(n, one);
    let flip = a.icmp(IntCC::Ule, nm1, one);
    let nb = a.neg(b);
    let ndb = a.neg(db);
    let b = a.select(flip, nb, b);
    let db = a.select(flip, ndb, db);
    // One (A, DA) per lane: x itself, the mid-range pair, or the reduced pair.
    let zero = a.fconst(0.0);
    let arg = a.select(mid, a_mid, b);
    let darg = a.select(mid, da_mid, db);
    let arg = a.select(small, x, arg);
    let darg = a.select(small, zero, darg);
    let point = table_point(a, arg);
    let s = do_sin(a, arg, darg, &point);
    let c = do_cos(a, arg, darg, &point);
    // Quadrant: the cosine is negated for n & 2 and the pair swapped for n & 1 (reduced);
    // the mid range swaps and gives the sine x's sign; the small range neither.
    let zero_u = a.uconst(0);
    let two = a.uconst(2);
    let n2 = a.and(n, two);
    let neg_c = a.icmp(IntCC::Ne, n2, zero_u);
    let n1 = a.and(n, one);
    let odd = a.icmp(IntCC::Ne, n1, zero_u);
    let not_mid = a.mnot(mid);
    let neg_c = a.mand(neg_c, not_mid);
    let swap = a.mor(odd, mid);
    let not_small = a.mnot(small);
    let swap = a.mand(swap, not_small);
    let nc = a.neg(c);
    let c = a.select(neg_c, nc, c);
    let sin = a.select(swap, c, s);
    let cos = a.select(swap, s, c);
    let signed = copysign(a, sin, x);
    let mid_only = a.mand(mid, not_small);
    let sin = a.select(mid_only, signed, sin);
    // |x| < 2^-27, and the refusals.
    let onef = a.fconst(1.0);
    let sin = a.select(tiny, x, sin);
    let cos = a.select(tiny, onef, cos);
    let t = a.sub(x, x);
    let nan = a.div(t, t);
    let refuse = a.mnot(medium);
    let nan_or = |a: &mut A, v| a.select(refuse, nan, v);
    let sin = nan_or(a, sin);
    let cos = nan_or(a, cos);
    (sin, cos)
}

/// `reduce_sincos`: `x - n π/2 = b + db` for `|x| <` [`SINCOS_GLIBC_LIMIT`], with `n mod 4`.
#[inline(always)]
fn reduce_sincos<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::F, A::U) {
    let [hpinv, toint] = [HPINV, TOINT].map(|c| a.fconst(c));
    let t = a.fma(x, hpinv, toint);
    let xn = a.sub(t, toint);
    let tb = a.to_bits(t);
    let three = a.uconst(3);
    let n = a.and(tb, three);
    let mxn = a.neg(xn);
    let [mp1, mp2, pp3, pp4] = [MP1, MP2, PP3, PP4].map(|c| a.fconst(c));
    let y = a.fma(mxn, mp1, x);
    let y = a.fma(mxn, mp2, y);
    let t2 = a.fma(mxn, pp3, y);
    let d = a.sub(y, t2);
    let db = a.fma(mxn, pp3, d);
    let b = a.fma(mxn, pp4, t2);
    let d = a.sub(t2, b);
    let e = a.fma(mxn, pp4, d);
    let db = a.add(db, e);
    (b, db, n)
}

/// The table point nearest `|x|` (`u - big`, a multiple of 1/128): `|x|` minus it, and
/// its `__sincostab` row. `do_sin` and `do_cos` of the same `x` share it.
struct TablePoint<A: Arith> {
    rest: A::F,
    sn: A::F,
    ssn: A::F,
    cs: A::F,
    ccs: A::F,
}

#[inline(always)]
fn table_point<A: Arith>(a: &mut A, x: A::F) -> TablePoint<A> {
    let ax = a.abs(x);
    let big = a.fconst(BIG);
    let u = a.add(ax, big);
    let ub = a.to_bits(u);
    let p = a.sub(u, big);
    let rest = a.sub(ax, p);
    let m = a.uconst(127);
    let i = a.and(ub, m);
    TablePoint {
        rest,
        sn: a.ftable(&SN, i),
        ssn: a.ftable(&SSN, i),
        cs: a.ftable(&CS, i),
        ccs: a.ftable(&CCS, i),
    }
}

/// `do_sin(x, dx)`: `sin(x + dx)` for `|x| < 0.855469`; `point` is `x`'s table point.
#[inline(always)]
fn do_sin<A: Arith>(a: &mut A, x: A::F, dx: A::F, point: &TablePoint<A>) -> A::F {
    // TAYLOR_SIN for |x| < 0.126: x + ((P(x²) x - dx/2) x² + dx).
    let xx = a.mul(x, x);
    let [s1, s2, s3, s4, s5] = S.map(|c| a.fconst(c));
    let p = a.fma(xx, s5, s4);
    let p = a.fma(xx, p, s3);
    let p = a.fma(xx, p, s2);
    let p = a.fma(xx, p, s1);
    let half = a.fconst(0.5);
    let h = a.mul(dx, half);
    let mh = a.neg(h);
    let t = a.fma(p, x, mh);
    let t = a.fma(xx, t, dx);
    let taylor = a.add(x, t);
    // Table point plus correction: sin(p + X) = sn cos X + cs sin X, in extra precision.
    let (xr, sn, ssn, cs, ccs) = (point.rest, point.sn, point.ssn, point.cs, point.ccs);
    let zero = a.fconst(0.0);
    let nonpos = a.fcmp(FloatCC::Le, x, zero);
    let ndx = a.neg(dx);
    let dx = a.select(nonpos, ndx, dx);
    let xx = a.mul(xr, xr);
    let [sn3, sn5, cs2, cs4, cs6] = [SN3, SN5, CS2, CS4, CS6].map(|c| a.fconst(c));
    let x3 = a.mul(xr, xx);
    let q = a.fma(xx, sn5, sn3);
    let q = a.fma(x3, q, dx);
    let s = a.add(q, xr);
    let q = a.fma(xx, cs6, cs4);
    let q = a.fma(q, xx, cs2);
    let q = a.mul(xx, q);
    let c = a.fma(dx, xr, q);
    let cor = a.fma(s, ccs, ssn);
    let mc = a.neg(c);
    let cor = a.fma(mc, sn, cor);
    let cor = a.fma(s, cs, cor);
    let r = a.add(cor, sn);
    let r = copysign(a, r, x);
    let ax = a.abs(x);
    let lim = a.fconst(f64::from_bits(0x3fc020c49ba5e354)); // 0.126
    let near0 = a.fcmp(FloatCC::Lt, ax, lim);
    a.select(near0, taylor, r)
}

/// `do_cos(x, dx)`: `cos(x + dx)` for `|x| < 0.855469`; `point` is `x`'s table point.
#[inline(always)]
fn do_cos<A: Arith>(a: &mut A, x: A::F, dx: A::F, point: &TablePoint<A>) -> A::F {
    let (xr, sn, ssn, cs, ccs) = (point.rest, point.sn, point.ssn, point.cs, point.ccs);
    let zero = a.fconst(0.0);
    let neg = a.fcmp(FloatCC::Lt, x, zero);
    let ndx = a.neg(dx);
    let dx = a.select(neg, ndx, dx);
    let xr = a.add(dx, xr);
    let xx = a.mul(xr, xr);
    let [sn3, sn5, cs2, cs4, cs6] = [SN3, SN5, CS2, CS4, CS6].map(|c| a.fconst(c));
    let x3 = a.mul(xr, xx);
    let q = a.fma(xx, sn5, sn3);
    let s = a.fma(x3, q, xr);
    let q = a.fma(xx, cs6, cs4);
    let q = a.fma(q, xx, cs2);
    let c = a.mul(xx, q);
    let ms = a.neg(s);
    let cor = a.fma(ms, ssn, ccs);
    let mc = a.neg(c);
    let cor = a.fma(mc, cs, cor);
    let cor = a.fma(ms, sn, cor);
    a.add(cor, cs)
}

/// `|v|` with the sign of `s`.
#[inline(always)]
fn copysign<A: Arith>(a: &mut A, v: A::F, s: A::F) -> A::F {
    let vb = a.to_bits(v);
    let sb = a.to_bits(s);
    let mag = a.uconst(0x7fff_ffff_ffff_ffff);
    let sign = a.uconst(0x8000_0000_0000_0000);
    let vb = a.and(vb, mag);
    let sb = a.and(sb, sign);
    let b = a.or(vb, sb);
    a.from_bits(b)
}
