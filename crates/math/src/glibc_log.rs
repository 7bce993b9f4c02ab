//! Double-precision `log` exactly as glibc ≥ 2.28 computes it on x86-64 with FMA: the
//! table-driven algorithm of Szabolcs Nagy (Arm optimized-routines, glibc's
//! `sysdeps/ieee754/dbl-64/e_log.c` and `e_log_data.c`), over [`Arith`] so every backend
//! computes the same bits.
//!
//! Why: TensorFlow's CPU `BoxMullerDouble` calls the C library's `log`; to reproduce its
//! `f64` normals bit for bit Kiln needs the same function, not merely an accurate one.
//!
//! glibc on x86-64 selects at load time a build of `e_log.c` compiled with `-mfma -mavx2`
//! (`__ieee754_log_fma`) on CPUs with FMA and AVX2, and GCC contracts each `a * b + c` whose
//! product has no other use into one fused multiply-add. The operations below are that
//! build's, read off its machine code: the same reduction, table entries, polynomials,
//! association and fusions (`fma` exactly where the compiled code has `vfmadd`/`vfnmadd`).
//! The constants are the published ones (written here as bit patterns, checked against the
//! library's own table). Checked against the machine's glibc:
//! `cargo run --release -p kiln-math --example glibc_exact_f64`.
//!
//! Branches become selects: every input runs both paths (near 1 and the table path) and the
//! subnormal rescale, and the result is chosen per lane. Needs an `F64`-format [`Arith`].

use crate::arith::{Arith, Format, IntCC};

/// `ln 2` split for `k ln 2` (`__log_data.ln2hi`, `ln2lo`).
const LN2_HI: f64 = f64::from_bits(0x3fe62e42fefa3800);
const LN2_LO: f64 = f64::from_bits(0x3d2ef35793c76730);
/// `log1p(r) - r ≈ A0 r² + … + A4 r⁶` on the table path (`__log_data.poly`).
const A: [f64; 5] = [
    f64::from_bits(0xbfe0000000000001),
    f64::from_bits(0x3fd555555551305b),
    f64::from_bits(0xbfcfffffffeb4590),
    f64::from_bits(0x3fc999b324f10111),
    f64::from_bits(0xbfc55575e506c89f),
];
/// `log1p(r) ≈ r + B0 r² + … + B10 r¹²` for `x` near 1 (`__log_data.poly1`).
const B: [f64; 11] = [
    f64::from_bits(0xbfe0000000000000),
    f64::from_bits(0x3fd5555555555577),
    f64::from_bits(0xbfcffffffffffdcb),
    f64::from_bits(0x3fc999999995dd0c),
    f64::from_bits(0xbfc55555556745a7),
    f64::from_bits(0x3fc24924a344de30),
    f64::from_bits(0xbfbfffffa4423d65),
    f64::from_bits(0x3fbc7184282ad6ca),
    f64::from_bits(0xbfb999eb43b068ff),
    f64::from_bits(0x3fb78182f7afd085),
    f64::from_bits(0xbfb5521375d145cd),
];
/// Bits of `1 - 2^-4`: inputs in `[1 - 2^-4, 1 + 0x1.09p-4)` take the near-1 path.
const NEAR_ONE_LO: u64 = 0x3fee000000000000;
/// Width (in bit patterns) of the near-1 interval.
const NEAR_ONE_WIDTH: u64 = 0x3ff1090000000000 - NEAR_ONE_LO;
/// Bits of the start of the reduction interval `[OFF, 2 OFF)` (`0x1.6p-1`).
const OFF: u64 = 0x3fe6000000000000;

/// glibc's `log(x)` for every `f64` (NaN payloads aside): `-inf` at `±0`, `+inf` at `+inf`,
/// NaN below zero and for NaN.
#[inline(always)]
pub fn log_glibc<A: Arith>(a: &mut A, x: A::F) -> A::F {
    debug_assert_eq!(A::FORMAT, Format::F64);
    let near = log_near_one(a, x);
    let ix = a.to_bits(x);
    // Subnormals: rescale by 2^52 and take 52 off the exponent field.
    let scale = a.fconst(4_503_599_627_370_496.0); // 2^52
    let xs = a.mul(x, scale);
    let ixs = a.to_bits(xs);
    let e52 = a.uconst(52 << 52);
    let ixs = a.isub(ixs, e52);
    let min_normal = a.uconst(0x0010_0000_0000_0000);
    let sub = a.icmp(IntCC::Ult, ix, min_normal);
    let iy = a.select_u(sub, ixs, ix);
    let y = log_table_path(a, iy);
    let lo = a.uconst(NEAR_ONE_LO);
    let d = a.isub(ix, lo);
    let width = a.uconst(NEAR_ONE_WIDTH);
    let is_near = a.icmp(IntCC::Ult, d, width);
    let y = a.select(is_near, near, y);
    crate::glibc::log_specials(a, x, ix, 0x7ff0_0000_0000_0000, y)
}

/// `x = 2^k z` with `z` in `[OFF, 2 OFF)`, `log x = k ln 2 + log c + log1p(z/c - 1)` with
/// `hi + lo` carrying the sum's rounding error; `ix` the bits of a positive normal (or
/// rescaled subnormal) `x`.
#[inline(always)]
fn log_table_path<A: Arith>(a: &mut A, ix: A::U) -> A::F {
    let off = a.uconst(OFF);
    let tmp = a.isub(ix, off);
    let i = a.lshr(tmp, 52 - 7);
    let k = a.ashr(tmp, 52);
    let expo = a.uconst(0xfff << 52);
    let top = a.and(tmp, expo);
    let iz = a.isub(ix, top);
    let invc = a.ftable(&LOG_INVC, i);
    let logc = a.ftable(&LOG_LOGC, i);
    let z = a.from_bits(iz);
    let m1 = a.fconst(-1.0);
    let r = a.fma(z, invc, m1);
    let kd = a.sint_to_f(k);
    let [ln2_hi, ln2_lo] = [LN2_HI, LN2_LO].map(|c| a.fconst(c));
    let w = a.fma(kd, ln2_hi, logc);
    let hi = a.add(r, w);
    let t = a.sub(w, hi);
    let t = a.add(t, r);
    let lo = a.fma(kd, ln2_lo, t);
    let r2 = a.mul(r, r);
    let [a0, a1, a2, a3, a4] = A.map(|c| a.fconst(c));
    let p1 = a.fma(r, a2, a1);
    let r3 = a.mul(r, r2);
    let p2 = a.fma(r, a4, a3);
    let lo = a.fma(r2, a0, lo);
    let p = a.fma(p2, r2, p1);
    let y = a.fma(r3, p, lo);
    a.add(y, hi)
}

/// The path for `x` in `[1 - 2^-4, 1 + 0x1.09p-4)`: `r = x - 1`, `log1p(r)` by a degree-12
/// polynomial with `r + B0 r²` in extra precision (`rhi` = `r` rounded to 26 bits).
#[inline(always)]
fn log_near_one<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let one = a.fconst(1.0);
    let r = a.sub(x, one);
    let [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10] = B.map(|c| a.fconst(c));
    let t1 = a.fma(r, b2, b1);
    let t2 = a.fma(r, b5, b4);
    let t3 = a.fma(r, b8, b7);
    let r2 = a.mul(r, r);
    let t1 = a.fma(r2, b3, t1);
    let t2 = a.fma(r2, b6, t2);
    let r3 = a.mul(r, r2);
    let t3 = a.fma(r2, b9, t3);
    let t3 = a.fma(r3, b10, t3);
    let p = a.fma(t3, r3, t2);
    let p = a.fma(p, r3, t1);
    // rhi = r + w - w with w = r 2^27, both steps fused as GCC fuses them.
    let two27 = a.fconst(134_217_728.0);
    let m_two27 = a.fconst(-134_217_728.0);
    let t = a.fma(r, two27, r);
    let rhi = a.fma(m_two27, r, t);
    let rhi2 = a.mul(rhi, rhi);
    let rlo = a.sub(r, rhi);
    let hi = a.fma(rhi2, b0, r);
    let t = a.sub(r, hi);
    let lo = a.fma(rhi2, b0, t);
    let s = a.add(r, rhi);
    let b0rlo = a.mul(b0, rlo);
    let lo = a.fma(b0rlo, s, lo);
    let y = a.fma(p, r3, lo);
    a.add(hi, y)
}

/// `1/c` per subinterval (`__log_data.tab[i].invc`).
#[rustfmt::skip]
pub(crate) static LOG_INVC: [f64; 128] = [
    f64::from_bits(0x3ff734f0c3e0de9f), f64::from_bits(0x3ff713786a2ce91f), f64::from_bits(0x3ff6f26008fab5a0),
    f64::from_bits(0x3ff6d1a61f138c7d), f64::from_bits(0x3ff6b1490bc5b4d1), f64::from_bits(0x3ff69147332f0cba),
    f64::from_bits(0x3ff6719f18224223), f64::from_bits(0x3ff6524f99a51ed9), f64::from_bits(0x3ff63356aa8f24c4),
    f64::from_bits(0x3ff614b36b9ddc14), f64::from_bits(0x3ff5f66452c65c4c), f64::from_bits(0x3ff5d867b5912c4f),
    f64::from_bits(0x3ff5babccb5b90de), f64::from_bits(0x3ff59d61f2d91a78), f64::from_bits(0x3ff5805612465687),
    f64::from_bits(0x3ff56397cee76bd3), f64::from_bits(0x3ff54725e2a77f93), f64::from_bits(0x3ff52aff42064583),
    f64::from_bits(0x3ff50f22dbb2bddf), f64::from_bits(0x3ff4f38f4734ded7), f64::from_bits(0x3ff4d843cfde2840),
    f64::from_bits(0x3ff4bd3ec078a3c8), f64::from_bits(0x3ff4a27fc3e0258a), f64::from_bits(0x3ff4880524d48434),
    f64::from_bits(0x3ff46dce1b192d0b), f64::from_bits(0x3ff453d9d3391854), f64::from_bits(0x3ff43a2744b4845a),
    f64::from_bits(0x3ff420b54115f8fb), f64::from_bits(0x3ff40782da3ef4b1), f64::from_bits(0x3ff3ee8f5d57fe8f),
    f64::from_bits(0x3ff3d5d9a00b4ce9), f64::from_bits(0x3ff3bd60c010c12b), f64::from_bits(0x3ff3a5242b75dab8),
    f64::from_bits(0x3ff38d22cd9fd002), f64::from_bits(0x3ff3755bc5847a1c), f64::from_bits(0x3ff35dce49ad36e2),
    f64::from_bits(0x3ff34679984dd440), f64::from_bits(0x3ff32f5cceffcb24), f64::from_bits(0x3ff3187775a10d49),
    f64::from_bits(0x3ff301c8373e3990), f64::from_bits(0x3ff2eb4ebb95f841), f64::from_bits(0x3ff2d50a0219a9d1),
    f64::from_bits(0x3ff2bef9a8b7fd2a), f64::from_bits(0x3ff2a91c7a0c1bab), f64::from_bits(0x3ff293726014b530),
    f64::from_bits(0x3ff27dfa5757a1f5), f64::from_bits(0x3ff268b39b1d3bbf), f64::from_bits(0x3ff2539d838ff5bd),
    f64::from_bits(0x3ff23eb7aac9083b), f64::from_bits(0x3ff22a012ba940b6), f64::from_bits(0x3ff2157996cc4132),
    f64::from_bits(0x3ff201201dd2fc9b), f64::from_bits(0x3ff1ecf4494d480b), f64::from_bits(0x3ff1d8f5528f6569),
    f64::from_bits(0x3ff1c52311577e7c), f64::from_bits(0x3ff1b17c74cb26e9), f64::from_bits(0x3ff19e010c2c1ab6),
    f64::from_bits(0x3ff18ab07bb670bd), f64::from_bits(0x3ff1778a25efbcb6), f64::from_bits(0x3ff1648d354c31da),
    f64::from_bits(0x3ff151b990275fdd), f64::from_bits(0x3ff13f0ea432d24c), f64::from_bits(0x3ff12c8b7210f9da),
    f64::from_bits(0x3ff11a3028ecb531), f64::from_bits(0x3ff107fbda8434af), f64::from_bits(0x3ff0f5ee0f4e6bb3),
    f64::from_bits(0x3ff0e4065d2a9fce), f64::from_bits(0x3ff0d244632ca521), f64::from_bits(0x3ff0c0a77ce2981a),
    f64::from_bits(0x3ff0af2f83c636d1), f64::from_bits(0x3ff09ddb98a01339), f64::from_bits(0x3ff08cabaf52e7df),
    f64::from_bits(0x3ff07b9f2f4e28fb), f64::from_bits(0x3ff06ab58c358f19), f64::from_bits(0x3ff059eea5ecf92c),
    f64::from_bits(0x3ff04949cdd12c90), f64::from_bits(0x3ff038c6c6f0ada9), f64::from_bits(0x3ff02865137932a9),
    f64::from_bits(0x3ff0182427ea7348), f64::from_bits(0x3ff008040614b195), f64::from_bits(0x3fefe01ff726fa1a),
    f64::from_bits(0x3fefa11cc261ea74), f64::from_bits(0x3fef6310b081992e), f64::from_bits(0x3fef25f63ceeadcd),
    f64::from_bits(0x3feee9c8039113e7), f64::from_bits(0x3feeae8078cbb1ab), f64::from_bits(0x3fee741aa29d0c9b),
    f64::from_bits(0x3fee3a91830a99b5), f64::from_bits(0x3fee01e009609a56), f64::from_bits(0x3fedca01e577bb98),
    f64::from_bits(0x3fed92f20b7c9103), f64::from_bits(0x3fed5cac66fb5cce), f64::from_bits(0x3fed272caa5ede9d),
    f64::from_bits(0x3fecf26e3e6b2ccd), f64::from_bits(0x3fecbe6da2a77902), f64::from_bits(0x3fec8b266d37086d),
    f64::from_bits(0x3fec5894bd5d5804), f64::from_bits(0x3fec26b533bb9f8c), f64::from_bits(0x3febf583eeece73f),
    f64::from_bits(0x3febc4fd75db96c1), f64::from_bits(0x3feb951e0c864a28), f64::from_bits(0x3feb65e2c5ef3e2c),
    f64::from_bits(0x3feb374867c9888b), f64::from_bits(0x3feb094b211d304a), f64::from_bits(0x3feadbe885f2ef7e),
    f64::from_bits(0x3feaaf1d31603da2), f64::from_bits(0x3fea82e63fd358a7), f64::from_bits(0x3fea5740ef09738b),
    f64::from_bits(0x3fea2c2a90ab4b27), f64::from_bits(0x3fea01a01393f2d1), f64::from_bits(0x3fe9d79f24db3c1b),
    f64::from_bits(0x3fe9ae2505c7b190), f64::from_bits(0x3fe9852ef297ce2f), f64::from_bits(0x3fe95cbaeea44b75),
    f64::from_bits(0x3fe934c69de74838), f64::from_bits(0x3fe90d4f2f6752e6), f64::from_bits(0x3fe8e6528effd79d),
    f64::from_bits(0x3fe8bfce9fcc007c), f64::from_bits(0x3fe899c0dabec30e), f64::from_bits(0x3fe87427aa2317fb),
    f64::from_bits(0x3fe84f00acb39a08), f64::from_bits(0x3fe82a49e8653e55), f64::from_bits(0x3fe8060195f40260),
    f64::from_bits(0x3fe7e22563e0a329), f64::from_bits(0x3fe7beb377dcb5ad), f64::from_bits(0x3fe79baa679725c2),
    f64::from_bits(0x3fe77907f2170657), f64::from_bits(0x3fe756cadbd6130c),
];
/// `log(c)` per subinterval (`__log_data.tab[i].logc`).
#[rustfmt::skip]
pub(crate) static LOG_LOGC: [f64; 128] = [
    f64::from_bits(0xbfd7cc7f79e69000), f64::from_bits(0xbfd76feec20d0000), f64::from_bits(0xbfd713e31351e000),
    f64::from_bits(0xbfd6b85b38287800), f64::from_bits(0xbfd65d5590807800), f64::from_bits(0xbfd602d076180000),
    f64::from_bits(0xbfd5a8ca86909000), f64::from_bits(0xbfd54f4356035000), f64::from_bits(0xbfd4f637c36b4000),
    f64::from_bits(0xbfd49da7fda85000), f64::from_bits(0xbfd445923989a800), f64::from_bits(0xbfd3edf439b0b800),
    f64::from_bits(0xbfd396ce448f7000), f64::from_bits(0xbfd3401e17bda000), f64::from_bits(0xbfd2e9e2ef468000),
    f64::from_bits(0xbfd2941b3830e000), f64::from_bits(0xbfd23ec58cda8800), f64::from_bits(0xbfd1e9e129279000),
    f64::from_bits(0xbfd1956d2b48f800), f64::from_bits(0xbfd141679ab9f800), f64::from_bits(0xbfd0edd094ef9800),
    f64::from_bits(0xbfd09aa518db1000), f64::from_bits(0xbfd047e65263b800), f64::from_bits(0xbfcfeb224586f000),
    f64::from_bits(0xbfcf474a7517b000), f64::from_bits(0xbfcea4443d103000), f64::from_bits(0xbfce020d44e9b000),
    f64::from_bits(0xbfcd60a22977f000), f64::from_bits(0xbfccc00104959000), f64::from_bits(0xbfcc202956891000),
    f64::from_bits(0xbfcb81178d811000), f64::from_bits(0xbfcae2c9ccd3d000), f64::from_bits(0xbfca45402e129000),
    f64::from_bits(0xbfc9a877681df000), f64::from_bits(0xbfc90c6d69483000), f64::from_bits(0xbfc87120a645c000),
    f64::from_bits(0xbfc7d68fb4143000), f64::from_bits(0xbfc73cb83c627000), f64::from_bits(0xbfc6a39a9b376000),
    f64::from_bits(0xbfc60b3154b7a000), f64::from_bits(0xbfc5737d76243000), f64::from_bits(0xbfc4dc7b8fc23000),
    f64::from_bits(0xbfc4462c51d20000), f64::from_bits(0xbfc3b08abc830000), f64::from_bits(0xbfc31b996b490000),
    f64::from_bits(0xbfc2875490a44000), f64::from_bits(0xbfc1f3b9f879a000), f64::from_bits(0xbfc160c8252ca000),
    f64::from_bits(0xbfc0ce7f57f72000), f64::from_bits(0xbfc03cdc49fea000), f64::from_bits(0xbfbf57bdbc4b8000),
    f64::from_bits(0xbfbe370896404000), f64::from_bits(0xbfbd17983ef94000), f64::from_bits(0xbfbbf9674ed8a000),
    f64::from_bits(0xbfbadc79202f6000), f64::from_bits(0xbfb9c0c3e7288000), f64::from_bits(0xbfb8a646b372c000),
    f64::from_bits(0xbfb78d01b3ac0000), f64::from_bits(0xbfb674f145380000), f64::from_bits(0xbfb55e0e6d878000),
    f64::from_bits(0xbfb4485cdea1e000), f64::from_bits(0xbfb333d94d6aa000), f64::from_bits(0xbfb22079f8c56000),
    f64::from_bits(0xbfb10e4698622000), f64::from_bits(0xbfaffa6c6ad20000), f64::from_bits(0xbfadda8d4a774000),
    f64::from_bits(0xbfabbcece4850000), f64::from_bits(0xbfa9a1894012c000), f64::from_bits(0xbfa788583302c000),
    f64::from_bits(0xbfa5715e67d68000), f64::from_bits(0xbfa35c8a49658000), f64::from_bits(0xbfa149e364154000),
    f64::from_bits(0xbf9e72c082eb8000), f64::from_bits(0xbf9a55f152528000), f64::from_bits(0xbf963d62cf818000),
    f64::from_bits(0xbf9228fb8caa0000), f64::from_bits(0xbf8c317b20f90000), f64::from_bits(0xbf8419355daa0000),
    f64::from_bits(0xbf781203c2ec0000), f64::from_bits(0xbf60040979240000), f64::from_bits(0x3f6feff384900000),
    f64::from_bits(0x3f87dc41353d0000), f64::from_bits(0x3f93cea3c4c28000), f64::from_bits(0x3f9b9fc114890000),
    f64::from_bits(0x3fa1b0d8ce110000), f64::from_bits(0x3fa58a5bd001c000), f64::from_bits(0x3fa95c8340d88000),
    f64::from_bits(0x3fad276aef578000), f64::from_bits(0x3fb07598e598c000), f64::from_bits(0x3fb253f5e30d2000),
    f64::from_bits(0x3fb42edd8b380000), f64::from_bits(0x3fb606598757c000), f64::from_bits(0x3fb7da76356a0000),
    f64::from_bits(0x3fb9ab434e1c6000), f64::from_bits(0x3fbb78c7bb0d6000), f64::from_bits(0x3fbd431332e72000),
    f64::from_bits(0x3fbf0a3171de6000), f64::from_bits(0x3fc067152b914000), f64::from_bits(0x3fc147858292b000),
    f64::from_bits(0x3fc2266ecdca3000), f64::from_bits(0x3fc303d7a6c55000), f64::from_bits(0x3fc3dfc33c331000),
    f64::from_bits(0x3fc4ba366b7a8000), f64::from_bits(0x3fc5933928d1f000), f64::from_bits(0x3fc66acd2418f000),
    f64::from_bits(0x3fc740f8ec669000), f64::from_bits(0x3fc815c0f51af000), f64::from_bits(0x3fc8e92954f68000),
    f64::from_bits(0x3fc9bb3602f84000), f64::from_bits(0x3fca8bed1c2c0000), f64::from_bits(0x3fcb5b515c01d000),
    f64::from_bits(0x3fcc2967ccbcc000), f64::from_bits(0x3fccf635d5486000), f64::from_bits(0x3fcdc1bd3446c000),
    f64::from_bits(0x3fce8c01b8cfe000), f64::from_bits(0x3fcf5509c0179000), f64::from_bits(0x3fd00e6c121fb800),
    f64::from_bits(0x3fd071b80e93d000), f64::from_bits(0x3fd0d46b9e867000), f64::from_bits(0x3fd13687334bd000),
    f64::from_bits(0x3fd1980d67234800), f64::from_bits(0x3fd1f8ffe0cc8000), f64::from_bits(0x3fd2595fd7636800),
    f64::from_bits(0x3fd2b9300914a800), f64::from_bits(0x3fd3187210436000), f64::from_bits(0x3fd377266dec1800),
    f64::from_bits(0x3fd3d54ffbaf3000), f64::from_bits(0x3fd432eee32fe000),
];
