//! Emission of [`NodeKind::Random`](crate::kernel::NodeKind::Random): one element of a
//! stateless random op at a flat index, by instantiating `kiln_rng`'s generic code over
//! [`ClifArith`] (design.md, Invariant 1) — the same Philox/ThreeFry rounds and the same
//! distribution mappings the interpreter's host fills execute, so the bits are equal.
//!
//! The recipe is the one at the top of `kiln_rng`:
//! - once per kernel call ([`setup`], emitted in the entry block): the seed's words, and for
//!   Philox TF's seed scrambling ([`scramble_seed`]);
//! - per Philox output group `g` (four `f32`/`u32` elements, two `f64` ones): the block
//!   `philox4x32_10(counter_add(counter, g), key)` mapped by [`uniform_group_f32`],
//!   [`normal_group_f32`], [`uniform_f64`] or [`box_muller_f64`]; truncated normals run TF's
//!   rejection loop over blocks `counter + 256 g + b` (`128 g` for `f64`), the one loop whose
//!   trip count depends on data;
//! - ThreeFry element `i` is [`kiln_rng::jax::bits_element`] of `(hi i, lo i)`, mapped per element.
//!
//! Sharing work: a Philox group's outputs are computed once and kept in a small per-node
//! stack cache keyed by the group number (loops visit elements in order, so the next
//! elements hit it). One-lane code caches one group; four-lane code reading four consecutive
//! elements caches sixteen (four groups computed in the four lanes at once) and loads its
//! four values from there. What is cached is a pure function of the group number, so hits
//! and misses never change a value. Four-lane reads of non-consecutive elements (e.g. a
//! transposed random op), or of four elements straddling two cached blocks, compute each
//! lane's group in that lane instead.

use super::arith::{vconst32, vconst64, ClifArith};
use super::lanes::Lanes;
use cranelift_codegen::ir::condcodes::IntCC as CIntCC;
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use kiln_ir::{DType, RandomAlg, RandomDist};
use kiln_math::{Arith, Widen};
use kiln_rng::tf_fill::MAX_BLOCKS_PER_GROUP;
use kiln_rng::{
    box_muller_f32, box_muller_f64, counter_add, normal_group_f32, philox4x32_10, truncated_block,
    truncated_normal_block_f64, truncated_step_f32, uniform_f64, uniform_group_f32, TruncatedGroup,
    TRUNCATED_BLOCKS_PER_GROUP_F32, TRUNCATED_BLOCKS_PER_GROUP_F64,
};
use kiln_rng::{lane_bits, pick_float, pick_word, seed_stream, Stream};

/// The stream of a random node: its key and base counter, or ThreeFry key.
type SeedSetup = Stream<Value>;

/// A cache of consecutive elements of one random node: `2^shift` values of type `ty` in a
/// stack slot, holding block `key` (elements `key << shift ..`); `key` starts at -1.
#[derive(Debug, Clone, Copy)]
struct GroupCache {
    key: Variable,
    slot: StackSlot,
    shift: u32,
    ty: Type,
}

impl GroupCache {
    /// Declares the cache (call in the entry block, which dominates every use).
    fn new(b: &mut FunctionBuilder, shift: u32, ty: Type) -> Self {
        let key = b.declare_var(types::I64);
        let none = b.ins().iconst(types::I64, -1);
        b.def_var(key, none);
        let bytes = ty.bytes() << shift;
        let slot =
            b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 4));
        GroupCache {
            key,
            slot,
            shift,
            ty,
        }
    }

    /// The `load_ty` value(s) at element `pos` (`I64`): on a miss, `fill(b, block)` stores
    /// the block's `2^shift` values into the slot first (element `k` at byte `k · size`).
    fn get(
        &self,
        b: &mut FunctionBuilder,
        pos: Value,
        load_ty: Type,
        fill: impl FnOnce(&mut FunctionBuilder, Value),
    ) -> Value {
        let block = b.ins().ushr_imm_s(pos, i64::from(self.shift));
        let cur = b.use_var(self.key);
        let hit = b.ins().icmp(CIntCC::Equal, cur, block);
        let miss = b.create_block();
        let join = b.create_block();
        b.ins().brif(hit, join, &[], miss, &[]);
        b.switch_to_block(miss);
        fill(b, block);
        b.def_var(self.key, block);
        b.ins().jump(join, &[]);
        b.switch_to_block(join);
        let k = b.ins().band_imm_s(pos, (1i64 << self.shift) - 1);
        let off = b.ins().imul_imm_s(k, i64::from(self.ty.bytes()));
        let base = b.ins().stack_addr(types::I64, self.slot, 0);
        let addr = b.ins().iadd(base, off);
        b.ins()
            .load(load_ty, MemFlagsData::new().with_notrap(), addr, 0)
    }

    /// Stores `v` as element `k` of the block.
    fn put(&self, b: &mut FunctionBuilder, k: u32, v: Value) {
        let off = (k * self.ty.bytes()) as i32;
        b.ins().stack_store(types::I64, v, self.slot, off);
    }
}

/// Everything a random node's elements share, set up once per kernel call.
#[derive(Debug, Clone, Copy)]
pub struct RandomState {
    seed: SeedSetup,
    /// Philox: one output group, for one-lane reads.
    one: Option<GroupCache>,
    /// Philox `f32`/`u32`: four output groups, for four-lane reads of consecutive elements.
    four: Option<GroupCache>,
}

/// Where a random node is read: one flat index (`I64`), or four (`I32X4`, below 2^30) with,
/// when they are consecutive, the first as `I64`.
pub enum At {
    /// One element.
    One(Value),
    /// Four elements.
    Four {
        /// The four indices.
        lanes: Value,
        /// The first index, if the four are `first .. first + 4`.
        first: Option<Value>,
    },
}

/// Emits, at the current position (the entry block), what every element of a random node
/// (generator `alg`, element dtype `dt`, seed elements `seed` as `I64` values) shares: the
/// seed words, TF's scrambling, and the node's group caches.
pub fn setup(
    b: &mut FunctionBuilder,
    alg: RandomAlg,
    dt: DType,
    seed: &[Value],
) -> Result<RandomState, String> {
    let kind = crate::kernel::seed_kind(alg);
    if seed.len() != kind.seed_len() {
        return Err(format!(
            "alg={} needs {} seed elements, got {}",
            alg.name(),
            kind.seed_len(),
            seed.len()
        ));
    }
    // Each element as `[lo, hi]` words, in order: TF's `[lo s0, hi s0, lo s1, hi s1]`.
    let mut words = Vec::with_capacity(2 * seed.len());
    for &s in seed {
        words.push(b.ins().ireduce(types::I32, s));
        let hi = b.ins().ushr_imm_s(s, 32);
        words.push(b.ins().ireduce(types::I32, hi));
    }
    let seed = seed_stream(&mut arith32(b, Lanes::One), kind, &words)?;
    if let Stream::Threefry { .. } = seed {
        return Ok(RandomState {
            seed,
            one: None,
            four: None,
        });
    }
    let (one, four) = match dt {
        DType::F32 => (
            GroupCache::new(b, 2, types::F32),
            Some(GroupCache::new(b, 4, types::F32)),
        ),
        DType::U32 => (
            GroupCache::new(b, 2, types::I32),
            Some(GroupCache::new(b, 4, types::I32)),
        ),
        DType::F64 => (GroupCache::new(b, 1, types::F64), None),
        _ => return Err(format!("alg={} cannot produce {dt}", alg.name())),
    };
    Ok(RandomState {
        seed,
        one: Some(one),
        four,
    })
}

/// The value of a random node of distribution `dist` and dtype `dt` at `at`.
pub fn emit(
    b: &mut FunctionBuilder,
    st: &RandomState,
    dist: RandomDist,
    dt: DType,
    at: At,
) -> Result<Value, String> {
    if matches!(at, At::Four { .. }) && !matches!(dt, DType::F32 | DType::U32) {
        return Err(format!("{} of {dt} has no four-lane form", dist.name()));
    }
    let (key, counter) = match st.seed {
        Stream::Threefry { key } => {
            return match at {
                At::One(i) => threefry(b, key, dist, dt, i, Lanes::One),
                At::Four { lanes, .. } => threefry(b, key, dist, dt, lanes, Lanes::Vector),
            }
        }
        Stream::Philox { key, counter } => (key, counter),
    };
    let cache = |c: Option<GroupCache>| c.ok_or_else(|| format!("{} has no cache", dist.name()));
    match at {
        At::One(i) => {
            let c = cache(st.one)?;
            Ok(c.get(b, i, c.ty, |b, group| {
                let values: Vec<Value> = if dt == DType::F64 {
                    group_f64(b, key, counter, dist, group).to_vec()
                } else {
                    group_32(b, key, counter, dist, group, Lanes::One).to_vec()
                };
                for (k, v) in values.into_iter().enumerate() {
                    c.put(b, k as u32, v);
                }
            }))
        }
        At::Four {
            lanes,
            first: Some(first),
        } => {
            // Consecutive elements within one cached block of 16: load them from the cache;
            // straddling two blocks (first % 16 > 12): each lane computes its own group.
            let c = cache(st.four)?;
            let vty = c.ty.by(4).ok_or("no vector type")?;
            let result = b.declare_var(vty);
            let within = b.create_block();
            let straddle = b.create_block();
            let done = b.create_block();
            let k = b.ins().band_imm_s(first, 15);
            let fits = b.ins().icmp_imm_s(CIntCC::UnsignedLessThanOrEqual, k, 12);
            b.ins().brif(fits, within, &[], straddle, &[]);
            b.switch_to_block(within);
            let v = c.get(b, first, vty, |b, block| {
                // Groups 4·block + l in lane l; output j of group l is element 4l + j.
                let g0 = b.ins().ishl_imm_s(block, 2);
                let g0 = b.ins().ireduce(types::I32, g0);
                let g0 = b.ins().splat(types::I32X4, g0);
                let steps = lane_steps(b);
                let groups = b.ins().iadd(g0, steps);
                let key = widen_all(b, key, Lanes::Vector);
                let counter = widen_all(b, counter, Lanes::Vector);
                let out = group_32(b, key, counter, dist, groups, Lanes::Vector);
                for (j, o) in out.into_iter().enumerate() {
                    for l in 0..4u8 {
                        let x = b.ins().extractlane(o, l);
                        c.put(b, 4 * u32::from(l) + j as u32, x);
                    }
                }
            });
            b.def_var(result, v);
            b.ins().jump(done, &[]);
            b.switch_to_block(straddle);
            let v = philox_32_lanes(b, key, counter, dist, lanes);
            b.def_var(result, v);
            b.ins().jump(done, &[]);
            b.switch_to_block(done);
            Ok(b.use_var(result))
        }
        At::Four { lanes, first: None } => Ok(philox_32_lanes(b, key, counter, dist, lanes)),
    }
}

/// `[0, 1, 2, 3]` as `I32X4`.
fn lane_steps(b: &mut FunctionBuilder) -> Value {
    let bytes: Vec<u8> = (0..4u32).flat_map(|l| l.to_le_bytes()).collect();
    let k = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(types::I32X4, k)
}

/// `v` as a value of the lanes' width (scalars are splatted for four lanes).
fn widen(b: &mut FunctionBuilder, v: Value, lanes: Lanes) -> Value {
    match lanes {
        Lanes::One => v,
        Lanes::Vector => b.ins().splat(types::I32X4, v),
    }
}

fn widen_all<const N: usize>(b: &mut FunctionBuilder, v: [Value; N], lanes: Lanes) -> [Value; N] {
    v.map(|x| widen(b, x, lanes))
}

/// The group of an element (`index >> shift`, in the index's type) and its lane in the group
/// (`index & (2^shift - 1)`, a 32-bit word of the lanes' width).
fn group_and_lane(
    b: &mut FunctionBuilder,
    index: Value,
    shift: u32,
    lanes: Lanes,
) -> (Value, Value) {
    let group = b.ins().ushr_imm_s(index, i64::from(shift));
    let mask = (1u32 << shift) - 1;
    let lane = match lanes {
        Lanes::One => {
            let l = b.ins().band_imm_s(index, i64::from(mask));
            b.ins().ireduce(types::I32, l)
        }
        Lanes::Vector => {
            let a = &mut arith32(b, lanes);
            let m = a.uconst(u64::from(mask));
            a.and(index, m)
        }
    };
    (group, lane)
}

/// `x · 2^shift` as `(low word, high word)` of the lanes' width (`x` from
/// [`group_and_lane`]; four-lane values are below 2^30, so their product fits 64 bits).
fn words_of(b: &mut FunctionBuilder, x: Value, shift: u32, lanes: Lanes) -> (Value, Value) {
    match lanes {
        Lanes::One => {
            let t = b.ins().ishl_imm_s(x, i64::from(shift));
            let lo = b.ins().ireduce(types::I32, t);
            let hi = b.ins().ushr_imm_s(t, 32);
            let hi = b.ins().ireduce(types::I32, hi);
            (lo, hi)
        }
        Lanes::Vector => {
            let a = &mut arith32(b, lanes);
            let lo = a.shl(x, shift);
            let hi = if shift == 0 {
                a.uconst(0)
            } else {
                a.lshr(x, 32 - shift)
            };
            (lo, hi)
        }
    }
}

/// The four outputs of Philox group `group` (`I64` for one lane, `I32X4` — each lane its
/// own group, below 2^28 — for four): `f32` uniform, normal or truncated normal, or `u32`
/// bits. `key` and `counter` are of the lanes' width.
fn group_32(
    b: &mut FunctionBuilder,
    key: [Value; 2],
    counter: [Value; 4],
    dist: RandomDist,
    group: Value,
    lanes: Lanes,
) -> [Value; 4] {
    if dist == RandomDist::TruncatedNormal {
        let shift = TRUNCATED_BLOCKS_PER_GROUP_F32.trailing_zeros();
        let (lo, hi) = words_of(b, group, shift, lanes);
        let first = counter_add(&mut arith32(b, lanes), counter, lo, hi);
        return truncated_loop_f32(b, key, first, lanes);
    }
    let (lo, hi) = words_of(b, group, 0, lanes);
    let a = &mut arith32(b, lanes);
    let c = counter_add(a, counter, lo, hi);
    let w = philox4x32_10(a, c, key);
    match dist {
        RandomDist::Bits => w,
        RandomDist::Normal => normal_group_f32(a, w),
        _ => uniform_group_f32(a, w),
    }
}

/// Four `f32`/`u32` elements at arbitrary indices (`I32X4`): each lane computes its own
/// group and keeps its element's output.
fn philox_32_lanes(
    b: &mut FunctionBuilder,
    key: [Value; 2],
    counter: [Value; 4],
    dist: RandomDist,
    index: Value,
) -> Value {
    let lanes = Lanes::Vector;
    let key = widen_all(b, key, lanes);
    let counter = widen_all(b, counter, lanes);
    let (group, lane) = group_and_lane(b, index, 2, lanes);
    if dist == RandomDist::Normal {
        // Only the element's Box–Muller pair: elements 0, 1 of a group are (r sin θ,
        // r cos θ) of words (0, 1); elements 2, 3 of words (2, 3).
        let (lo, hi) = words_of(b, group, 0, lanes);
        let a = &mut arith32(b, lanes);
        let c = counter_add(a, counter, lo, hi);
        let w = philox4x32_10(a, c, key);
        let (odd, high) = lane_bits(a, lane);
        let x0 = a.select_u(high, w[2], w[0]);
        let x1 = a.select_u(high, w[3], w[1]);
        let (s, c) = box_muller_f32(a, x0, x1);
        return a.select(odd, c, s);
    }
    let out = group_32(b, key, counter, dist, group, lanes);
    let a = &mut arith32(b, lanes);
    match dist {
        RandomDist::Bits => pick_word(a, lane, out),
        _ => pick_float(a, lane, out),
    }
}

/// TF's truncated-normal loop for `f32`: blocks `first + b`, `b = 0, 1, …`, each offering
/// its two Box–Muller pairs, until the group (every lane's, for four lanes) holds four
/// values or `MAX_BLOCKS_PER_GROUP` blocks were read (the interpreter's bound).
fn truncated_loop_f32(
    b: &mut FunctionBuilder,
    key: [Value; 2],
    first: [Value; 4],
    lanes: Lanes,
) -> [Value; 4] {
    let (ft, ut) = match lanes {
        Lanes::One => (types::F32, types::I32),
        Lanes::Vector => (types::F32X4, types::I32X4),
    };
    let TruncatedGroup { values, count } = TruncatedGroup::<_, 4>::new(&mut arith32(b, lanes));
    let vars = GroupVars::new(b, ft, ut, values, count);
    let loop_ = RejectionLoop::start(b);
    let (values, count) = vars.read(b);
    let full = TruncatedGroup::<_, 4> { values, count }.is_full(&mut arith32(b, lanes));
    let all_full = match lanes {
        Lanes::One => full,
        Lanes::Vector => b.ins().vall_true(full),
    };
    let blk = loop_.test(b, all_full);
    let lo = b.ins().ireduce(types::I32, blk);
    let lo = widen(b, lo, lanes);
    let (values, count) = {
        let mut group = TruncatedGroup::<_, 4> { values, count };
        truncated_step_f32(&mut arith32(b, lanes), &mut group, key, first, lo);
        (group.values, group.count)
    };
    vars.write(b, values, count);
    loop_.finish(b);
    vars.read(b).0
}

/// The four words of a Philox block zero-extended to `I64` (the `f64` arithmetic's words).
fn wide(b: &mut FunctionBuilder, w: [Value; 4]) -> [Value; 4] {
    w.map(|x| b.ins().uextend(types::I64, x))
}

/// Scalar 32-bit arithmetic (`vector = false`) or four lanes.
fn arith32<'a, 'b>(b: &'a mut FunctionBuilder<'b>, lanes: Lanes) -> ClifArith<'a, 'b, false> {
    ClifArith {
        b,
        vector: lanes == Lanes::Vector,
    }
}

/// Scalar binary64 arithmetic.
fn arith64<'a, 'b>(b: &'a mut FunctionBuilder<'b>) -> ClifArith<'a, 'b, true> {
    ClifArith { b, vector: false }
}

/// The two `f64` outputs of Philox group `group` (`I64`): uniform, normal or truncated
/// normal. Words are computed in 32-bit arithmetic and zero-extended, as the interpreter's
/// fills do.
fn group_f64(
    b: &mut FunctionBuilder,
    key: [Value; 2],
    counter: [Value; 4],
    dist: RandomDist,
    group: Value,
) -> [Value; 2] {
    let lanes = Lanes::One;
    if dist == RandomDist::TruncatedNormal {
        let shift = TRUNCATED_BLOCKS_PER_GROUP_F64.trailing_zeros();
        let (lo, hi) = words_of(b, group, shift, lanes);
        let first = counter_add(&mut arith32(b, lanes), counter, lo, hi);
        return truncated_loop_f64(b, key, first);
    }
    let (lo, hi) = words_of(b, group, 0, lanes);
    let w = {
        let a = &mut arith32(b, lanes);
        let c = counter_add(a, counter, lo, hi);
        philox4x32_10(a, c, key)
    };
    let w = wide(b, w);
    let a = &mut arith64(b);
    match dist {
        RandomDist::Normal => {
            let (z0, z1) = box_muller_f64(a, w);
            [z0, z1]
        }
        // Uniform (bits have no f64 form; typing rules them out): words (0, 1) and (2, 3).
        _ => [uniform_f64(a, w[0], w[1]), uniform_f64(a, w[2], w[3])],
    }
}

/// TF's truncated-normal loop for `f64`: blocks `first + b` until two values are accepted
/// or `MAX_BLOCKS_PER_GROUP` blocks were read.
fn truncated_loop_f64(b: &mut FunctionBuilder, key: [Value; 2], first: [Value; 4]) -> [Value; 2] {
    let TruncatedGroup { values, count } = TruncatedGroup::<_, 2>::new(&mut arith64(b));
    let vars = GroupVars::new(b, types::F64, types::I64, values, count);
    let loop_ = RejectionLoop::start(b);
    let (values, count) = vars.read(b);
    let full = TruncatedGroup::<_, 2> { values, count }.is_full(&mut arith64(b));
    let blk = loop_.test(b, full);
    let lo = b.ins().ireduce(types::I32, blk);
    let w = truncated_block(&mut arith32(b, Lanes::One), key, first, lo);
    let w = wide(b, w);
    let (values, count) = {
        let a = &mut arith64(b);
        let mut group = TruncatedGroup::<_, 2> { values, count };
        truncated_normal_block_f64(a, &mut group, w);
        (group.values, group.count)
    };
    vars.write(b, values, count);
    loop_.finish(b);
    vars.read(b).0
}

/// JAX's ThreeFry stream: element `i` maps the bits of `threefry(key, (hi i, lo i))`.
fn threefry(
    b: &mut FunctionBuilder,
    key: [Value; 2],
    dist: RandomDist,
    dt: DType,
    index: Value,
    lanes: Lanes,
) -> Result<Value, String> {
    let key = widen_all(b, key, lanes);
    let (lo, hi) = words_of(b, index, 0, lanes);
    let a = &mut arith32(b, lanes);
    crate::kernel::threefry_element(a, dist, dt, key, hi, lo)
}

/// A truncated-normal group carried around the rejection loop in frontend variables.
struct GroupVars<const N: usize> {
    values: [Variable; N],
    count: Variable,
}

impl<const N: usize> GroupVars<N> {
    fn new(b: &mut FunctionBuilder, ft: Type, ut: Type, values: [Value; N], count: Value) -> Self {
        let values = values.map(|v| {
            let var = b.declare_var(ft);
            b.def_var(var, v);
            var
        });
        let c = b.declare_var(ut);
        b.def_var(c, count);
        GroupVars { values, count: c }
    }

    /// The current values and count.
    fn read(&self, b: &mut FunctionBuilder) -> ([Value; N], Value) {
        (self.values.map(|v| b.use_var(v)), b.use_var(self.count))
    }

    fn write(&self, b: &mut FunctionBuilder, values: [Value; N], count: Value) {
        for (var, v) in self.values.iter().zip(values) {
            b.def_var(*var, v);
        }
        b.def_var(self.count, count);
    }
}

/// The block loop of a truncated normal:
/// `head: if done || blk >= MAX { exit } else { body: …; blk += 1; head }`.
struct RejectionLoop {
    blk: Variable,
    head: cranelift_codegen::ir::Block,
    exit: cranelift_codegen::ir::Block,
}

impl RejectionLoop {
    /// Ends the current block with a jump to the loop head and continues there.
    fn start(b: &mut FunctionBuilder) -> Self {
        let blk = b.declare_var(types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(blk, zero);
        let head = b.create_block();
        let exit = b.create_block();
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        RejectionLoop { blk, head, exit }
    }

    /// Leaves the loop if `done` (an `I8` flag) or the block bound is reached; continues in
    /// the body and returns the block number.
    fn test(&self, b: &mut FunctionBuilder, done: Value) -> Value {
        let blk = b.use_var(self.blk);
        let bound = b.ins().icmp_imm_s(
            CIntCC::UnsignedGreaterThanOrEqual,
            blk,
            MAX_BLOCKS_PER_GROUP as i64,
        );
        let stop = b.ins().bor(done, bound);
        let body = b.create_block();
        b.ins().brif(stop, self.exit, &[], body, &[]);
        b.switch_to_block(body);
        blk
    }

    /// Ends the body (next block, back to the head) and continues after the loop.
    fn finish(self, b: &mut FunctionBuilder) {
        let blk = b.use_var(self.blk);
        let next = b.ins().iadd_imm_s(blk, 1);
        b.def_var(self.blk, next);
        b.ins().jump(self.head, &[]);
        b.switch_to_block(self.exit);
    }
}

/// Little-endian flags for vector bitcasts.
fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Bytes `8..16` of `x` (any 128-bit type `t`) moved to bytes `0..8`, as `t`.
fn high_half(b: &mut FunctionBuilder, x: Value, t: Type) -> Value {
    let bytes = b.ins().bitcast(types::I8X16, le(), x);
    let mask: Vec<u8> = (8u8..16).chain(8..16).collect();
    let mask = b.func.dfg.immediates.push(ConstantData::from(mask));
    let r = b.ins().shuffle(bytes, bytes, mask);
    b.ins().bitcast(t, le(), r)
}

/// Binary64 alongside the 32-bit arithmetic (glibc's `logf`/`sincosf`, which TF's
/// Box–Muller calls): one `F64` value for one lane (`[v, v]`, only the first is used), two
/// `F64X2` halves (lanes 0, 1 and 2, 3) for four.
impl Widen for ClifArith<'_, '_, false> {
    type D = [Value; 2];

    fn dconst(&mut self, v: f64) -> [Value; 2] {
        let x = if self.vector {
            vconst64(self.b, types::F64X2, v.to_bits())
        } else {
            self.b.ins().f64const(v)
        };
        [x, x]
    }
    fn dadd(&mut self, a: [Value; 2], c: [Value; 2]) -> [Value; 2] {
        self.halves(a, c, |b, x, y| b.ins().fadd(x, y))
    }
    fn dmul(&mut self, a: [Value; 2], c: [Value; 2]) -> [Value; 2] {
        self.halves(a, c, |b, x, y| b.ins().fmul(x, y))
    }
    fn dfma(&mut self, a: [Value; 2], c: [Value; 2], d: [Value; 2]) -> [Value; 2] {
        if !self.vector {
            let r = self.b.ins().fma(a[0], c[0], d[0]);
            return [r, r];
        }
        [0, 1].map(|h| self.b.ins().fma(a[h], c[h], d[h]))
    }
    fn dselect(&mut self, m: Value, a: [Value; 2], c: [Value; 2]) -> [Value; 2] {
        if !self.vector {
            let r = self.b.ins().select(m, a[0], c[0]);
            return [r, r];
        }
        let lo = self.b.ins().swiden_low(m);
        let hi = self.b.ins().swiden_high(m);
        let w = [lo, hi].map(|w| self.b.ins().bitcast(types::F64X2, le(), w));
        [0, 1].map(|h| self.b.ins().bitselect(w[h], a[h], c[h]))
    }
    fn widen(&mut self, a: Value) -> [Value; 2] {
        if !self.vector {
            let r = self.b.ins().fpromote(types::F64, a);
            return [r, r];
        }
        let lo = self.b.ins().fvpromote_low(a);
        let h = high_half(self.b, a, types::F32X4);
        let hi = self.b.ins().fvpromote_low(h);
        [lo, hi]
    }
    fn narrow(&mut self, a: [Value; 2]) -> Value {
        if !self.vector {
            return self.b.ins().fdemote(types::F32, a[0]);
        }
        let lo = self.b.ins().fvdemote(a[0]);
        let hi = self.b.ins().fvdemote(a[1]);
        let lo = self.b.ins().bitcast(types::I8X16, le(), lo);
        let hi = self.b.ins().bitcast(types::I8X16, le(), hi);
        let mask: Vec<u8> = (0u8..8).chain(16..24).collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let r = self.b.ins().shuffle(lo, hi, mask);
        self.b.ins().bitcast(types::F32X4, le(), r)
    }
    fn sint_to_d(&mut self, a: Value) -> [Value; 2] {
        if !self.vector {
            let r = self.b.ins().fcvt_from_sint(types::F64, a);
            return [r, r];
        }
        // Exactly: bits(2^52 + 2^31 + a) = 0x4330_0000_8000_0000 + (a ^ 2^31), minus
        // 2^52 + 2^31 (two-lane i64 → f64 conversions are AVX-512 only).
        let flip = vconst32(self.b, types::I32X4, 0x8000_0000);
        let u = self.b.ins().bxor(a, flip);
        let magic = vconst64(self.b, types::I64X2, 0x4330_0000_0000_0000);
        let bias = vconst64(self.b, types::F64X2, (4_503_601_774_854_144.0f64).to_bits());
        let halves = [self.b.ins().uwiden_low(u), self.b.ins().uwiden_high(u)];
        halves.map(|w| {
            let w = self.b.ins().bor(w, magic);
            let d = self.b.ins().bitcast(types::F64X2, le(), w);
            self.b.ins().fsub(d, bias)
        })
    }
    fn d_to_sint(&mut self, a: [Value; 2]) -> Value {
        if !self.vector {
            return self.b.ins().fcvt_to_sint_sat(types::I32, a[0]);
        }
        // Lane by lane (x86-64 has no two-lane f64 → i32 conversion in Cranelift).
        let mut r = vconst32(self.b, types::I32X4, 0);
        for l in 0..4u8 {
            let x = self.b.ins().extractlane(a[usize::from(l / 2)], l % 2);
            let i = self.b.ins().fcvt_to_sint_sat(types::I32, x);
            r = self.b.ins().insertlane(r, i, l);
        }
        r
    }
}

impl ClifArith<'_, '_, false> {
    /// A binary operation on each `F64X2` half (four lanes) or the one `F64` (one lane).
    fn halves(
        &mut self,
        a: [Value; 2],
        c: [Value; 2],
        op: impl Fn(&mut FunctionBuilder, Value, Value) -> Value,
    ) -> [Value; 2] {
        if !self.vector {
            let r = op(self.b, a[0], c[0]);
            return [r, r];
        }
        [op(self.b, a[0], c[0]), op(self.b, a[1], c[1])]
    }
}
