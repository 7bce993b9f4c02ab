//! Reductions in the canonical order (Invariant 2): one warp per kept point, lane `l`
//! folding elements `l, l + 32, …` of each chunk, the `shfl.sync.down` tree, and chunk
//! partials folded into lane `chunk mod 32` of a second accumulator.

use super::state::{Emitter, R};
use super::types::class;
use crate::module::{Reg, RegClass};
use crate::schedule::{ReducePlan, CHUNK, LANES};
use kiln_ir::{DType, ReduceKind};
use std::fmt::Display;

impl<'a> Emitter<'a> {
    /// One warp per kept point: the canonical reduction, then lane 0 stores.
    pub(super) fn reduction(&mut self, points: u64, red: &ReducePlan) -> R<()> {
        let (gid, stride, tid) = self.thread_ids();
        let lane32 = self.def(RegClass::B32, "and.b32", &[&tid, &"31"]);
        let lane = self.def(RegClass::B64, "cvt.u64.u32", &[&lane32]);
        let warp = self.def(RegClass::B64, "shr.u64", &[&gid, &"5"]);
        let wstride = self.def(RegClass::B64, "shr.u64", &[&stride, &"5"]);
        let (w, top, done) = self.loop_begin("warp", warp, &points);
        self.reduce_point(w, red, lane, lane32)?;
        self.loop_end(w, &wstride, top, done);
        Ok(())
    }

    /// The whole warp reduces kept point `w` (linear index) in canonical order as `red`
    /// says; lane 0 evaluates and writes the stores (the epilogue).
    pub(super) fn reduce_point(
        &mut self,
        w: Reg,
        red: &ReducePlan,
        lane: Reg,
        lane32: Reg,
    ) -> R<()> {
        let (kind, len) = (red.kind, red.len);
        let dt = self.dtype(red.value)?;
        let mut vars = self.unravel(w);
        let seq = vars.len() - 1;
        // Values that depend on the kept point only (a row's mean in a variance): once.
        self.pin(&red.pinned, &vars)?;
        self.b.comment(&format!(
            "canonical {} over {len} elements: 32 lanes, tree 16..1",
            kind.name()
        ));
        let result = if len <= CHUNK {
            let start = self.imm64(0);
            self.chunk(red, dt, &mut vars, seq, lane, start, &len)?
        } else {
            // Chunk partials folded into lane (chunk mod 32), then the same tree.
            let acc = self.b.reg(class(dt));
            let id = self.identity(dt, kind)?;
            self.mov(dt, acc, id);
            let zero = self.imm64(0);
            let chunks = len.div_ceil(CHUNK);
            let (c, ctop, cdone) = self.loop_begin("chunk", zero, &chunks);
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&c, &CHUNK]);
            let full_end = self.def(RegClass::B64, "add.s64", &[&start, &CHUNK]);
            let end = self.def(RegClass::B64, "min.u64", &[&full_end, &len]);
            let part = self.chunk(red, dt, &mut vars, seq, lane, start, &end)?;
            let part = self.shuffle(dt, "idx", part, 0);
            let cl = self.def(RegClass::B64, "and.b64", &[&c, &"31"]);
            let mine = self.def(RegClass::Pred, "setp.eq.u64", &[&cl, &lane]);
            let folded = self.combine(dt, kind, acc, part);
            self.guarded_mov(mine, dt, acc, folded);
            self.loop_end(c, &1, ctop, cdone);
            self.tree(kind, dt, acc)
        };
        let not_lane0 = self.def(RegClass::Pred, "setp.ne.u32", &[&lane32, &0]);
        let skip = self.b.label("store_skip");
        self.emit(&format!("@{not_lane0} bra"), &[&skip]);
        self.reduce_result = Some(result);
        let zero = self.imm_idx(0);
        vars[seq] = zero;
        self.stores(w, &vars)?;
        self.reduce_result = None;
        self.pinned.iter_mut().for_each(|p| *p = None);
        self.b.place(&skip);
        Ok(())
    }

    /// The canonical reduction of the elements `start..end` (≤ 4096 of them) of `red`'s
    /// node: lane `l` folds `start + l, start + l + 32, …`, then the shuffle tree. The
    /// result is valid in lane 0.
    #[allow(clippy::too_many_arguments)] // the reduction's context, spelled out
    fn chunk(
        &mut self,
        red: &ReducePlan,
        dt: DType,
        vars: &mut [Reg],
        seq: usize,
        lane: Reg,
        start: Reg,
        end: &dyn Display,
    ) -> R<Reg> {
        let (kind, value, unroll) = (red.kind, red.value, red.unroll);
        let acc = self.b.reg(class(dt));
        let id = self.identity(dt, kind)?;
        self.mov(dt, acc, id);
        let first = self.def(RegClass::B64, "add.s64", &[&start, &lane]);
        // Unrolled: `unroll` of the lane's elements (j, j + 32, …) are evaluated before any
        // is folded, so their loads are in flight together; the folds stay in index order.
        // `j < end - span` is a signed compare (`end - span` may be negative).
        let end64 = self.def(RegClass::B64, "mov.u64", &[end]);
        let (j, top, done) = self.unrolled_loop_begin("lanes", first, &end64, unroll);
        let mut xs = Vec::with_capacity(unroll as usize);
        for u in 0..unroll {
            let ju = self.def(RegClass::B64, "add.s64", &[&j, &(u * LANES)]);
            vars[seq] = self.narrowed(ju);
            self.set_disp(seq, (u * LANES) as i64);
            self.memo.iter_mut().for_each(|m| *m = None);
            xs.push(self.node(value, vars)?);
        }
        self.clear_disp();
        for x in xs {
            let y = self.combine(dt, kind, acc, x);
            self.mov(dt, acc, y);
        }
        self.loop_end(j, &(unroll * LANES), top, done);
        // The rest (fewer than unroll per lane), one at a time.
        let (j, top, done) = self.loop_begin("lane", j, &end64);
        vars[seq] = self.narrowed(j);
        self.memo.iter_mut().for_each(|m| *m = None);
        let x = self.node(value, vars)?;
        let y = self.combine(dt, kind, acc, x);
        self.mov(dt, acc, y);
        self.loop_end(j, &LANES, top, done);
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(self.tree(kind, dt, acc))
    }

    /// `p[j] = op(p[j], p[j + s])` for `s = 16 … 1`, lane `j` holding `p[j]`.
    fn tree(&mut self, kind: ReduceKind, dt: DType, acc: Reg) -> Reg {
        let mut p = acc;
        for s in kiln_compiler::kernel::TREE {
            let other = self.shuffle(dt, "down", p, s as u32);
            p = self.combine(dt, kind, p, other);
        }
        p
    }

    /// `shfl.sync.<mode>.b32` of a value of any dtype (64-bit values in two halves,
    /// predicates as 0/1) across the whole warp.
    fn shuffle(&mut self, dt: DType, mode: &str, v: Reg, b: u32) -> Reg {
        let op = format!("shfl.sync.{mode}.b32");
        let sh = |e: &mut Self, class: RegClass, x: Reg| e.def(class, &op, &[&x, &b, &"31", &"-1"]);
        match class(dt) {
            RegClass::F32 | RegClass::B32 => sh(self, class(dt), v),
            RegClass::F64 | RegClass::B64 => {
                let lo = self.b.reg(RegClass::B32);
                let hi = self.b.reg(RegClass::B32);
                self.emit("mov.b64", &[&format!("{{{lo}, {hi}}}"), &v]);
                let lo2 = sh(self, RegClass::B32, lo);
                let hi2 = sh(self, RegClass::B32, hi);
                self.def(class(dt), "mov.b64", &[&format!("{{{lo2}, {hi2}}}")])
            }
            RegClass::Pred => {
                let w = self.def(RegClass::B32, "selp.u32", &[&1, &0, &v]);
                let w2 = sh(self, RegClass::B32, w);
                self.def(RegClass::Pred, "setp.ne.u32", &[&w2, &0])
            }
        }
    }
}
