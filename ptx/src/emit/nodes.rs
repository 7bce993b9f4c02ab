//! A node's value at a point: the expression DAG rendered through the op tables, index
//! expressions, random streams (hoisted where the schedule says) and values pinned for a
//! whole loop.

use super::state::{Emitter, R};
use super::types::{class, mem_type};
use crate::module::{Reg, RegClass};
use crate::random;
use kiln_compiler::kernel::half::half_of;
use kiln_compiler::kernel::{BufRef, IExpr, NodeKind};
use kiln_compiler::lower::{RED_ZONE, STACK_SEGMENT};
use kiln_ir::DType;

impl<'a> Emitter<'a> {
    /// Sets up, before the kernel's loop, the stream (seed loads and scrambling) of each
    /// `hoisted` random node (the schedule's: its seed is loop-invariant): once per thread,
    /// not per element.
    pub(super) fn hoist_random_streams(&mut self, hoisted: &[usize]) -> R<()> {
        let k = self.k;
        if !k.has_random() {
            return Ok(());
        }
        let zero = self.imm_idx(0);
        let vars = vec![zero; k.space.len() + 1];
        for &n in hoisted {
            let Some(NodeKind::Random { alg, seed, .. }) = k.nodes.get(n).map(|node| &node.kind)
            else {
                continue;
            };
            let words = self.seed_words(n, seed, &vars)?;
            if let Ok(st) = random::stream(&mut self.b, *alg, &words) {
                self.streams[n] = Some(st);
            }
        }
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(())
    }

    /// Evaluates each of `nodes` (the schedule's loop invariants, in node order) at `vars`
    /// into [`Emitter::pinned`], for the whole loop that follows.
    pub(super) fn pin(&mut self, nodes: &[usize], vars: &[Reg]) -> R<()> {
        for &n in nodes {
            self.memo.iter_mut().for_each(|m| *m = None);
            let r = self.node(n, vars)?;
            if let Some(p) = self.pinned.get_mut(n) {
                *p = Some(r);
            }
        }
        self.memo.iter_mut().for_each(|m| *m = None);
        Ok(())
    }

    /// The `i64` seed elements of random node `n`, as registers.
    fn seed_words(&mut self, n: usize, seed: &[usize], vars: &[Reg]) -> R<Vec<Reg>> {
        let mut words = Vec::with_capacity(seed.len());
        for &s in seed {
            let (r, sdt) = self.operand(n, s, vars)?;
            if sdt != DType::I64 {
                return self.malformed(format!("random seed element of {sdt}"));
            }
            words.push(r);
        }
        Ok(words)
    }

    /// Operand `a` of node `n`: an earlier node (so evaluation terminates).
    fn operand(&mut self, n: usize, a: usize, vars: &[Reg]) -> R<(Reg, DType)> {
        if a >= n {
            return self.malformed(format!("node {n} uses a later node {a}"));
        }
        let dt = self.dtype(a)?;
        // One level of recursion per node along a dependency chain: grown on demand, so a
        // chain of thousands of ops emits instead of overflowing the thread's stack.
        let r = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.node(a, vars))?;
        Ok((r, dt))
    }

    /// The value of node `n` at the point `vars`.
    pub(super) fn node(&mut self, n: usize, vars: &[Reg]) -> R<Reg> {
        let Some(node) = self.k.nodes.get(n) else {
            return self.malformed(format!("node {n} does not exist"));
        };
        if let Some(r) = self.pinned[n].or(self.memo[n]) {
            return Ok(r);
        }
        let dt = node.dtype;
        let v = match &node.kind {
            NodeKind::Load { buf, offset } => {
                let bdt = self.buf_dtype(*buf)?;
                if bdt != dt {
                    return self.malformed(format!("load of {bdt} buffer as {dt}"));
                }
                if let Some(lanes) = self.vec_loads.get(n).copied().flatten() {
                    self.memo[n] = Some(lanes[self.lane]);
                    return Ok(lanes[self.lane]);
                }
                let m = self.load_operand(n, *buf, offset, dt, vars)?;
                let ld = format!("ld.{}.{}", self.space(*buf), mem_type(dt));
                if dt == DType::Bool {
                    let byte = self.def(RegClass::B32, &ld, &[&m]);
                    self.def(RegClass::Pred, "setp.ne.u32", &[&byte, &0])
                } else if let Some(h) = half_of(dt) {
                    self.load_half(&ld, &m, h)
                } else {
                    self.def(class(dt), &ld, &[&m])
                }
            }
            NodeKind::Const(bits) => match self.half_constant(dt, *bits) {
                Some(r) => r,
                None => self.constant(dt, *bits),
            },
            NodeKind::Index(e) if self.narrow => {
                let x = self.iexpr(e, vars)?;
                match dt {
                    DType::F32 => self.def(RegClass::F32, "cvt.rn.f32.s32", &[&x]),
                    DType::F64 => self.def(RegClass::F64, "cvt.rn.f64.s32", &[&x]),
                    DType::I32 | DType::U32 => x,
                    DType::I64 => self.def(RegClass::B64, "cvt.s64.s32", &[&x]),
                    DType::Bool => self.def(RegClass::Pred, "setp.ne.s32", &[&x, &0]),
                    other => return self.unsupported(format!("dtype {other} is not compiled")),
                }
            }
            NodeKind::Index(e) => {
                let x = self.iexpr(e, vars)?;
                match dt {
                    DType::F32 => self.def(RegClass::F32, "cvt.rn.f32.s64", &[&x]),
                    DType::F64 => self.def(RegClass::F64, "cvt.rn.f64.s64", &[&x]),
                    DType::I32 | DType::U32 => self.def(RegClass::B32, "cvt.u32.u64", &[&x]),
                    DType::I64 => x,
                    DType::Bool => self.def(RegClass::Pred, "setp.ne.s64", &[&x, &0]),
                    other => return self.unsupported(format!("dtype {other} is not compiled")),
                }
            }
            NodeKind::InRange { e, lo, hi } => {
                let x = self.iexpr(e, vars)?;
                let (ge, lt) = (self.iop("setp.ge", "s"), self.iop("setp.lt", "s"));
                let a = self.def(RegClass::Pred, &ge, &[&x, lo]);
                let c = self.def(RegClass::Pred, &lt, &[&x, hi]);
                self.def(RegClass::Pred, "and.pred", &[&a, &c])
            }
            NodeKind::Unary(u, a) => {
                let (x, adt) = self.operand(n, *a, vars)?;
                if adt != dt {
                    return self.malformed(format!("{} of {adt} typed {dt}", u.name()));
                }
                match self.unary(*u, dt, x) {
                    Some(r) => r,
                    None => return self.unsupported(format!("{} on {dt}", u.name())),
                }
            }
            NodeKind::Binary(op, x, y) => {
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if xdt != dt || ydt != dt {
                    return self.malformed(format!("{} of {xdt}, {ydt} typed {dt}", op.name()));
                }
                match self.binary_op(*op, dt, x, y) {
                    Some(r) => r,
                    None => return self.unsupported(format!("{} on {dt}", op.name())),
                }
            }
            NodeKind::Compare(d, x, y) => {
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if xdt != ydt || dt != DType::Bool {
                    return self.malformed(format!("compare of {xdt}, {ydt} typed {dt}"));
                }
                self.compare(*d, xdt, x, y)
            }
            NodeKind::Select(p, x, y) => {
                let (p, pdt) = self.operand(n, *p, vars)?;
                let (x, xdt) = self.operand(n, *x, vars)?;
                let (y, ydt) = self.operand(n, *y, vars)?;
                if pdt != DType::Bool || xdt != dt || ydt != dt {
                    return self.malformed(format!("select of {pdt}, {xdt}, {ydt} typed {dt}"));
                }
                self.select(dt, p, x, y)
            }
            NodeKind::Convert(a) => {
                let (x, from) = self.operand(n, *a, vars)?;
                let r = match self.convert_half(x, from, dt) {
                    Some(r) => r,
                    None => self.convert(x, from, dt),
                };
                match r {
                    Some(r) => r,
                    None => return self.unsupported(format!("convert {from} -> {dt}")),
                }
            }
            NodeKind::Random {
                dist,
                alg,
                seed,
                index,
            } => {
                if !random::supported(*dist, *alg, dt) {
                    return self.unsupported(format!(
                        "{} (alg={}) producing {dt}",
                        dist.name(),
                        alg.name()
                    ));
                }
                let st = match self.streams[n] {
                    Some(st) => st,
                    None => {
                        let words = self.seed_words(n, seed, vars)?;
                        match random::stream(&mut self.b, *alg, &words) {
                            Ok(st) => st,
                            Err(e) => return self.malformed(e),
                        }
                    }
                };
                // The counter math is kiln_rng's, on the 64-bit index.
                let i = self.iexpr(index, vars)?;
                let i = self.widen(i);
                match random::element(&mut self.b, &st, *dist, dt, i) {
                    Ok(r) => r,
                    Err(e) => return self.unsupported(e),
                }
            }
            NodeKind::ReduceResult => match self.reduce_result {
                Some(r) => r,
                None => return self.malformed("reduce_result outside a reduction's epilogue"),
            },
        };
        self.memo[n] = Some(v);
        Ok(v)
    }

    /// An index expression as an index register: `.b64` (`i64` arithmetic), or `.b32`
    /// (`i32`) when narrow — `schedule::narrow_indices` proved every value fits, so the
    /// results are the same. `Div`/`Rem` operands are never negative, as the kernel IR promises.
    pub(super) fn iexpr(&mut self, e: &IExpr, vars: &[Reg]) -> R<Reg> {
        Ok(match e {
            IExpr::Var(v) => match vars.get(*v) {
                Some(&r) => r,
                None => return self.malformed(format!("loop variable {v} does not exist")),
            },
            IExpr::Const(c) => self.imm_idx(*c),
            IExpr::Add(x, y) => {
                let x = self.iexpr(x, vars)?;
                let y = self.iexpr(y, vars)?;
                let op = self.iop("add", "s");
                self.def(self.ic(), &op, &[&x, &y])
            }
            IExpr::Mul(x, c) => {
                let x = self.iexpr(x, vars)?;
                let op = self.iop("mul.lo", "s");
                self.def(self.ic(), &op, &[&x, c])
            }
            IExpr::Div(x, c) | IExpr::Rem(x, c) => {
                if *c <= 0 {
                    return self.malformed(format!("index division by {c}"));
                }
                let x = self.iexpr(x, vars)?;
                self.div_rem_imm(matches!(e, IExpr::Div(..)), x, *c as u64)
            }
            IExpr::Clamp(x, lo, hi) => {
                let x = self.iexpr(x, vars)?;
                let (min, max) = (self.iop("min", "s"), self.iop("max", "s"));
                let x = self.def(self.ic(), &min, &[&x, hi]);
                self.def(self.ic(), &max, &[&x, lo])
            }
            IExpr::Load { buf, at, lo, hi } => self.index_load(*buf, at, *lo, *hi, vars)?,
        })
    }

    /// A data-dependent position ([`IExpr::Load`]): the integer element of `buf` at `at`,
    /// widened to 64 bits as its dtype says, clamped into `[lo, hi]` in 64 bits (XLA's rule
    /// for start indices), then an index register (narrow: `[lo, hi]` fits `i32`, checked
    /// by `schedule::narrow_indices`).
    fn index_load(&mut self, buf: BufRef, at: &IExpr, lo: i64, hi: i64, vars: &[Reg]) -> R<Reg> {
        let dt = self.buf_dtype(buf)?;
        let at = self.iexpr(at, vars)?;
        let addr = self.address(buf, at, dt)?;
        let m = format!("[{addr}]");
        let ld = format!("ld.{}.{}", self.space(buf), mem_type(dt));
        let x = match dt {
            DType::I32 | DType::U32 => {
                let w = self.def(RegClass::B32, &ld, &[&m]);
                let cvt = if dt == DType::I32 {
                    "cvt.s64.s32"
                } else {
                    "cvt.u64.u32"
                };
                self.def(RegClass::B64, cvt, &[&w])
            }
            DType::I64 => self.def(RegClass::B64, &ld, &[&m]),
            other => return self.malformed(format!("an index load of dtype {other}")),
        };
        let x = self.def(RegClass::B64, "min.s64", &[&x, &hi]);
        let x = self.def(RegClass::B64, "max.s64", &[&x, &lo]);
        Ok(self.narrowed(x))
    }
}
