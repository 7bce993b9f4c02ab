//! PTX for [`NodeKind::Random`](kiln_compiler::kernel::NodeKind::Random): one element of a
//! stateless random op at a flat index, by instantiating `kiln_rng`'s generic code over
//! [`PtxArith`] (design.md, Invariant 1) — the same Philox/ThreeFry rounds and distribution
//! mappings the interpreter's host fills execute, so the bits are equal.
//!
//! The recipe is the one at the top of `kiln_rng`:
//! - the stream ([`stream`]): the seed's words and, for `alg=philox`, TF's seed scrambling
//!   ([`scramble_seed`]); `alg=philox_state` takes key and counter as they are;
//! - a Philox element ([`element`]) computes its own output group's block,
//!   `philox4x32_10(counter_add(counter, g), key)`, and keeps its lane: `f32`/`u32` groups
//!   are four elements (a uniform or bits maps one word, a normal one Box–Muller pair, as
//!   [`uniform_group_f32`]/[`normal_group_f32`] do per element), `f64` groups two
//!   ([`uniform_f64`] on words (0, 1) or (2, 3), [`box_muller_f64`] on the block);
//! - truncated normals run TF's rejection loop as a real PTX loop over blocks
//!   `counter + 256 g + b` (`128 g` for `f64`), `b < MAX_BLOCKS_PER_GROUP` (the host's bound);
//! - a ThreeFry element `i` is [`kiln_rng::jax::bits_element`] of `(hi i, lo i)`, mapped per element.
//!
//! No thread shares work with another, so nothing here depends on the launch shape.

use crate::arith::{Double, PtxArith, Single};
use crate::module::{Body, Reg, RegClass};
use kiln_ir::{DType, RandomAlg, RandomDist};
use kiln_math::{Arith, FloatCC, Format, IntCC, Widen};
use kiln_rng::tf_fill::MAX_BLOCKS_PER_GROUP;
use kiln_rng::{
    box_muller_f32, box_muller_f64, counter_add, philox4x32_10, truncated_block,
    truncated_normal_block_f64, truncated_step_f32, uniform_f32, uniform_f64, TruncatedGroup,
    TRUNCATED_BLOCKS_PER_GROUP_F32, TRUNCATED_BLOCKS_PER_GROUP_F64,
};
use kiln_rng::{lane_bits, pick_float, pick_word};

/// Whether a random op of `dist`/`alg` producing `dt` has PTX: every combination the IR
/// defines ([`RandomDist::produces`]).
pub fn supported(dist: RandomDist, alg: RandomAlg, dt: DType) -> bool {
    dist.produces(alg, dt)
}

/// The number of `i64` seed elements `alg` takes.
pub fn seed_len(alg: RandomAlg) -> usize {
    kiln_compiler::kernel::seed_kind(alg).seed_len()
}

/// A random op's stream, in `.b32` registers.
pub type Stream = kiln_rng::Stream<Reg>;

fn a32(b: &mut Body) -> Wide32<'_> {
    Wide32 { body: b }
}

fn a64(b: &mut Body) -> PtxArith<'_, Double> {
    PtxArith::new(b)
}

/// `(low word, high word)` of a `.b64` register.
fn words(b: &mut Body, x: Reg) -> (Reg, Reg) {
    let lo = b.def(RegClass::B32, "cvt.u32.u64", &[&x]);
    let t = b.def(RegClass::B64, "shr.u64", &[&x, &32]);
    let hi = b.def(RegClass::B32, "cvt.u32.u64", &[&t]);
    (lo, hi)
}

/// The stream of `alg` for the `i64` seed elements `seed` (`.b64` registers).
pub fn stream(b: &mut Body, alg: RandomAlg, seed: &[Reg]) -> Result<Stream, String> {
    let want = seed_len(alg);
    if seed.len() != want {
        return Err(format!(
            "alg={} needs {want} seed elements, got {}",
            alg.name(),
            seed.len()
        ));
    }
    // Each element as `[lo, hi]`, in order: TF's `[lo s0, hi s0, lo s1, hi s1]`.
    let mut w = Vec::with_capacity(2 * want);
    for &s in seed {
        let (lo, hi) = words(b, s);
        w.push(lo);
        w.push(hi);
    }
    kiln_rng::seed_stream(&mut a32(b), kiln_compiler::kernel::seed_kind(alg), &w)
}

/// The value (dtype `dt`) of element `index` (a `.b64` register) of the random op `dist` on
/// stream `st`.
pub fn element(
    b: &mut Body,
    st: &Stream,
    dist: RandomDist,
    dt: DType,
    index: Reg,
) -> Result<Reg, String> {
    match *st {
        Stream::Threefry { key } => threefry(b, key, dist, dt, index),
        Stream::Philox { key, counter } => match dt {
            DType::F32 | DType::U32 => Ok(philox_32(b, key, counter, dist, index)),
            DType::F64 => Ok(philox_f64(b, key, counter, dist, index)),
            _ => Err(format!("{} cannot produce {dt}", dist.name())),
        },
    }
}

/// The group `index >> shift` (`.b64`) and the lane `index & (2^shift - 1)` (`.b32`).
fn group_and_lane(b: &mut Body, index: Reg, shift: u32) -> (Reg, Reg) {
    let group = b.def(RegClass::B64, "shr.u64", &[&index, &shift]);
    let l = b.def(RegClass::B64, "and.b64", &[&index, &((1u32 << shift) - 1)]);
    let lane = b.def(RegClass::B32, "cvt.u32.u64", &[&l]);
    (group, lane)
}

/// The first counter of group `group` (`.b64`) when groups are `2^shift` blocks apart.
fn group_counter(b: &mut Body, counter: [Reg; 4], group: Reg, shift: u32) -> [Reg; 4] {
    let g = if shift == 0 {
        group
    } else {
        b.def(RegClass::B64, "shl.b64", &[&group, &shift])
    };
    let (lo, hi) = words(b, g);
    counter_add(&mut a32(b), counter, lo, hi)
}

/// An `f32` or `u32` element of a Philox stream: group `index / 4`, lane `index % 4`.
fn philox_32(b: &mut Body, key: [Reg; 2], counter: [Reg; 4], dist: RandomDist, index: Reg) -> Reg {
    let (group, lane) = group_and_lane(b, index, 2);
    if dist == RandomDist::TruncatedNormal {
        let shift = TRUNCATED_BLOCKS_PER_GROUP_F32.trailing_zeros();
        let first = group_counter(b, counter, group, shift);
        let values = truncated_f32(b, key, first);
        return pick_float(&mut a32(b), lane, values);
    }
    let c = group_counter(b, counter, group, 0);
    let a = &mut a32(b);
    let w = philox4x32_10(a, c, key);
    match dist {
        RandomDist::Bits => pick_word(a, lane, w),
        RandomDist::Normal => {
            // `normal_group_f32`'s outputs 0, 1 are (r sin θ, r cos θ) of words (0, 1), and
            // outputs 2, 3 those of words (2, 3): only the element's pair is computed.
            let (odd, high) = lane_bits(a, lane);
            let x0 = a.select_u(high, w[2], w[0]);
            let x1 = a.select_u(high, w[3], w[1]);
            let (s, c) = box_muller_f32(a, x0, x1);
            a.select(odd, c, s)
        }
        // `uniform_group_f32` maps each word alone: map the element's word.
        _ => {
            let x = pick_word(a, lane, w);
            uniform_f32(a, x)
        }
    }
}

/// The four words of a block zero-extended to `.b64` (the `f64` arithmetic's words).
fn wide<const N: usize>(b: &mut Body, w: [Reg; N]) -> [Reg; N] {
    w.map(|x| b.def(RegClass::B64, "cvt.u64.u32", &[&x]))
}

/// An `f64` element of a Philox stream: group `index / 2`, lane `index % 2`.
fn philox_f64(b: &mut Body, key: [Reg; 2], counter: [Reg; 4], dist: RandomDist, index: Reg) -> Reg {
    let (group, lane) = group_and_lane(b, index, 1);
    let odd = {
        let a = &mut a32(b);
        let zero = a.uconst(0);
        a.icmp(IntCC::Ne, lane, zero)
    };
    if dist == RandomDist::TruncatedNormal {
        let shift = TRUNCATED_BLOCKS_PER_GROUP_F64.trailing_zeros();
        let first = group_counter(b, counter, group, shift);
        let [z0, z1] = truncated_f64(b, key, first);
        return a64(b).select(odd, z1, z0);
    }
    let c = group_counter(b, counter, group, 0);
    let w = philox4x32_10(&mut a32(b), c, key);
    if dist == RandomDist::Normal {
        let w = wide(b, w);
        let a = &mut a64(b);
        let (z0, z1) = box_muller_f64(a, w);
        return a.select(odd, z1, z0);
    }
    // Uniform (bits have no f64 form): words (0, 1) for lane 0, (2, 3) for lane 1.
    let (x0, x1) = {
        let a = &mut a32(b);
        (a.select_u(odd, w[2], w[0]), a.select_u(odd, w[3], w[1]))
    };
    let [x0, x1] = wide(b, [x0, x1]);
    uniform_f64(&mut a64(b), x0, x1)
}

/// The `mov` of a register's class.
fn mov_op(class: RegClass) -> &'static str {
    match class {
        RegClass::Pred => "mov.pred",
        RegClass::B32 => "mov.b32",
        RegClass::B64 => "mov.b64",
        RegClass::F32 => "mov.f32",
        RegClass::F64 => "mov.f64",
    }
}

/// Fresh registers holding copies of `init`: the values a loop carries.
fn carried<const N: usize>(b: &mut Body, init: [Reg; N]) -> [Reg; N] {
    init.map(|x| {
        let r = b.reg(x.class);
        b.emit(mov_op(x.class), &[&r, &x]);
        r
    })
}

/// Copies `src` into the carried registers `dst`.
fn assign(b: &mut Body, dst: &[Reg], src: &[Reg]) {
    for (d, s) in dst.iter().zip(src) {
        b.emit(mov_op(d.class), &[d, s]);
    }
}

/// The block loop of a truncated normal:
/// `blk = 0; head: if full || blk >= MAX { exit } …body… blk += 1; goto head; exit:`.
/// `full` emits the loop test from the carried state; `body` emits one block's work for
/// block number `blk` (`.b32`) and stores the new state into the carried registers.
fn rejection_loop(
    b: &mut Body,
    full: impl FnOnce(&mut Body) -> Reg,
    body: impl FnOnce(&mut Body, Reg),
) {
    let blk = b.def(RegClass::B32, "mov.b32", &[&0]);
    let head = b.label("trunc");
    let exit = b.label("trunc_end");
    b.place(&head);
    let full = full(b);
    let bound = b.def(
        RegClass::Pred,
        "setp.ge.u32",
        &[&blk, &MAX_BLOCKS_PER_GROUP],
    );
    let stop = b.def(RegClass::Pred, "or.pred", &[&full, &bound]);
    b.emit(&format!("@{stop} bra"), &[&exit]);
    body(b, blk);
    b.emit("add.u32", &[&blk, &blk, &1]);
    b.emit("bra", &[&head]);
    b.place(&exit);
}

/// TF's truncated-normal group for `f32`: blocks `first + b`, `b = 0, 1, …`, each offering
/// its two Box–Muller pairs, until the group holds four values or `MAX_BLOCKS_PER_GROUP`
/// blocks were read (the interpreter's bound).
fn truncated_f32(b: &mut Body, key: [Reg; 2], first: [Reg; 4]) -> [Reg; 4] {
    let TruncatedGroup { values, count } = TruncatedGroup::<_, 4>::new(&mut a32(b));
    let values = carried(b, values);
    let [count] = carried(b, [count]);
    rejection_loop(
        b,
        |b| TruncatedGroup::<_, 4> { values, count }.is_full(&mut a32(b)),
        |b, blk| {
            let mut g = TruncatedGroup::<_, 4> { values, count };
            truncated_step_f32(&mut a32(b), &mut g, key, first, blk);
            let (new_values, new_count) = (g.values, g.count);
            assign(b, &values, &new_values);
            assign(b, &[count], &[new_count]);
        },
    );
    values
}

/// TF's truncated-normal group for `f64`: blocks `first + b` until two values are accepted
/// or `MAX_BLOCKS_PER_GROUP` blocks were read.
fn truncated_f64(b: &mut Body, key: [Reg; 2], first: [Reg; 4]) -> [Reg; 2] {
    let TruncatedGroup { values, count } = TruncatedGroup::<_, 2>::new(&mut a64(b));
    let values = carried(b, values);
    let [count] = carried(b, [count]);
    rejection_loop(
        b,
        |b| TruncatedGroup::<_, 2> { values, count }.is_full(&mut a64(b)),
        |b, blk| {
            let w = truncated_block(&mut a32(b), key, first, blk);
            let w = wide(b, w);
            let a = &mut a64(b);
            let mut g = TruncatedGroup::<_, 2> { values, count };
            truncated_normal_block_f64(a, &mut g, w);
            let (new_values, new_count) = (g.values, g.count);
            assign(b, &values, &new_values);
            assign(b, &[count], &[new_count]);
        },
    );
    values
}

/// JAX's ThreeFry stream: element `i` maps the bits of `threefry(key, (hi i, lo i))`.
fn threefry(
    b: &mut Body,
    key: [Reg; 2],
    dist: RandomDist,
    dt: DType,
    index: Reg,
) -> Result<Reg, String> {
    let (lo, hi) = words(b, index);
    let a = &mut a32(b);
    kiln_compiler::kernel::threefry_element(a, dist, dt, key, hi, lo)
}

/// The 32-bit arithmetic of the random ops: [`PtxArith`]`<Single>`'s instructions, plus the
/// binary64 operations of [`Widen`] (TF's Box–Muller calls glibc's `logf`/`sincosf`, which
/// evaluate in double) as `.f64` registers: `add.rn`, `mul.rn`, `fma.rn`, `selp`,
/// `cvt.f64.f32` (exact), `cvt.rn.f32.f64`, `cvt.rn.f64.s32` (exact), `cvt.rzi.s32.f64`.
struct Wide32<'b> {
    body: &'b mut Body,
}

impl Wide32<'_> {
    fn s(&mut self) -> PtxArith<'_, Single> {
        PtxArith::new(self.body)
    }
    fn d(&mut self, op: &str, srcs: &[&dyn std::fmt::Display]) -> Reg {
        self.body.def(RegClass::F64, op, srcs)
    }
}

/// Delegates [`Arith`] methods to [`PtxArith`]`<Single>`.
macro_rules! single {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            fn $name(&mut self, $($arg: $ty),*) -> $ret {
                self.s().$name($($arg),*)
            }
        )*
    };
}

impl Arith for Wide32<'_> {
    type F = Reg;
    type U = Reg;
    type M = Reg;
    const FORMAT: Format = Format::F32;

    single! {
        fconst(v: f64) -> Reg;
        uconst(v: u64) -> Reg;
        add(a: Reg, b: Reg) -> Reg;
        sub(a: Reg, b: Reg) -> Reg;
        mul(a: Reg, b: Reg) -> Reg;
        div(a: Reg, b: Reg) -> Reg;
        fma(a: Reg, b: Reg, c: Reg) -> Reg;
        sqrt(a: Reg) -> Reg;
        neg(a: Reg) -> Reg;
        abs(a: Reg) -> Reg;
        min(a: Reg, b: Reg) -> Reg;
        max(a: Reg, b: Reg) -> Reg;
        floor(a: Reg) -> Reg;
        ceil(a: Reg) -> Reg;
        trunc(a: Reg) -> Reg;
        round_even(a: Reg) -> Reg;
        fcmp(cc: FloatCC, a: Reg, b: Reg) -> Reg;
        select(m: Reg, a: Reg, b: Reg) -> Reg;
        raise_to(x: Reg, lo: Reg) -> Reg;
        lower_to(x: Reg, hi: Reg) -> Reg;
        to_bits(a: Reg) -> Reg;
        from_bits(a: Reg) -> Reg;
        f_to_sint(a: Reg) -> Reg;
        sint_to_f(a: Reg) -> Reg;
        uint_to_f(a: Reg) -> Reg;
        iadd(a: Reg, b: Reg) -> Reg;
        isub(a: Reg, b: Reg) -> Reg;
        sdiv(a: Reg, b: Reg) -> Reg;
        udiv(a: Reg, b: Reg) -> Reg;
        srem(a: Reg, b: Reg) -> Reg;
        urem(a: Reg, b: Reg) -> Reg;
        imul(a: Reg, b: Reg) -> Reg;
        umulhi(a: Reg, b: Reg) -> Reg;
        and(a: Reg, b: Reg) -> Reg;
        or(a: Reg, b: Reg) -> Reg;
        xor(a: Reg, b: Reg) -> Reg;
        not(a: Reg) -> Reg;
        shl(a: Reg, n: u32) -> Reg;
        lshr(a: Reg, n: u32) -> Reg;
        ashr(a: Reg, n: u32) -> Reg;
        rotl(a: Reg, n: u32) -> Reg;
        icmp(cc: IntCC, a: Reg, b: Reg) -> Reg;
        select_u(m: Reg, a: Reg, b: Reg) -> Reg;
        mand(a: Reg, b: Reg) -> Reg;
        mor(a: Reg, b: Reg) -> Reg;
        mnot(a: Reg) -> Reg;
    }
}

impl Widen for Wide32<'_> {
    type D = Reg;

    fn dconst(&mut self, v: f64) -> Reg {
        self.d("mov.f64", &[&format!("0d{:016X}", v.to_bits())])
    }
    fn dadd(&mut self, a: Reg, b: Reg) -> Reg {
        self.d("add.rn.f64", &[&a, &b])
    }
    fn dmul(&mut self, a: Reg, b: Reg) -> Reg {
        self.d("mul.rn.f64", &[&a, &b])
    }
    fn dfma(&mut self, a: Reg, b: Reg, c: Reg) -> Reg {
        self.d("fma.rn.f64", &[&a, &b, &c])
    }
    fn dselect(&mut self, m: Reg, a: Reg, b: Reg) -> Reg {
        self.d("selp.f64", &[&a, &b, &m])
    }
    fn widen(&mut self, a: Reg) -> Reg {
        self.d("cvt.f64.f32", &[&a])
    }
    fn narrow(&mut self, a: Reg) -> Reg {
        self.body.def(RegClass::F32, "cvt.rn.f32.f64", &[&a])
    }
    fn sint_to_d(&mut self, a: Reg) -> Reg {
        self.d("cvt.rn.f64.s32", &[&a])
    }
    fn d_to_sint(&mut self, a: Reg) -> Reg {
        self.body.def(RegClass::B32, "cvt.rzi.s32.f64", &[&a])
    }
}
