//! Loop skeletons: thread and grid indices, grid-stride, lane-strided and unrolled loops,
//! and a linear index unravelled into loop variables.

use super::state::Emitter;
use crate::module::{Label, Reg, RegClass};
use crate::schedule::{LANES, NARROW_LIMIT};
use std::fmt::Display;

impl<'a> Emitter<'a> {
    /// `%ctaid.x * %ntid.x + %tid.x` and `%ntid.x * %nctaid.x` (64-bit), and `%tid.x`.
    pub(super) fn thread_ids(&mut self) -> (Reg, Reg, Reg) {
        let ctaid = self.def(RegClass::B32, "mov.u32", &[&"%ctaid.x"]);
        let ntid = self.def(RegClass::B32, "mov.u32", &[&"%ntid.x"]);
        let tid = self.def(RegClass::B32, "mov.u32", &[&"%tid.x"]);
        let nctaid = self.def(RegClass::B32, "mov.u32", &[&"%nctaid.x"]);
        let start = self.def(RegClass::B64, "mul.wide.u32", &[&ctaid, &ntid]);
        let tid64 = self.def(RegClass::B64, "cvt.u64.u32", &[&tid]);
        let gid = self.def(RegClass::B64, "add.s64", &[&start, &tid64]);
        let stride = self.def(RegClass::B64, "mul.wide.u32", &[&ntid, &nctaid]);
        (gid, stride, tid)
    }

    /// Opens `for (i = start; i < end; i += step)` over a fresh counter of `start`'s class
    /// (`.b64`, or `.b32` for a narrow pointwise loop; unsigned compare); returns the
    /// counter and the labels for [`Emitter::loop_end`].
    pub(super) fn loop_begin(
        &mut self,
        stem: &str,
        start: Reg,
        end: &dyn Display,
    ) -> (Reg, Label, Label) {
        let w = if start.class == RegClass::B32 { 32 } else { 64 };
        let i = self.b.reg(start.class);
        self.emit(&format!("mov.u{w}"), &[&i, &start]);
        let top = self.b.label(stem);
        let done = self.b.label(&format!("{stem}_end"));
        self.b.place(&top);
        let past = self.def(RegClass::Pred, &format!("setp.ge.u{w}"), &[&i, end]);
        self.emit(&format!("@{past} bra"), &[&done]);
        (i, top, done)
    }

    /// Opens the main loop of a lane-strided loop unrolled `unroll` deep: `for (j = first;
    /// j + (unroll - 1) * 32 < end; j += unroll * 32)` over a `.b64` counter, compared
    /// signed (`end - span` may be negative). Close it with [`Emitter::loop_end`]; the
    /// counter is where the one-at-a-time rest loop starts.
    pub(super) fn unrolled_loop_begin(
        &mut self,
        stem: &str,
        first: Reg,
        end: &Reg,
        unroll: u64,
    ) -> (Reg, Label, Label) {
        let main_end = self.def(RegClass::B64, "sub.s64", &[end, &((unroll - 1) * LANES)]);
        let j = self.b.reg(RegClass::B64);
        self.emit("mov.u64", &[&j, &first]);
        let top = self.b.label(stem);
        let done = self.b.label(&format!("{stem}_end"));
        self.b.place(&top);
        let past = self.def(RegClass::Pred, "setp.ge.s64", &[&j, &main_end]);
        self.emit(&format!("@{past} bra"), &[&done]);
        (j, top, done)
    }

    pub(super) fn loop_end(&mut self, i: Reg, step: &dyn Display, top: Label, done: Label) {
        let add = if i.class == RegClass::B32 {
            "add.u32"
        } else {
            "add.s64"
        };
        self.emit(add, &[&i, &i, step]);
        self.emit("bra", &[&top]);
        self.b.place(&done);
    }

    /// Opens a grid-stride loop `for (i = offset + gid; i < end; i += stride)`. Narrow: a
    /// `.b32` counter, with `gid` and `stride` first clamped to `end` (a thread past the
    /// end leaves at once either way; a stride ≥ `end` ends the loop after one step either
    /// way), so neither the start (`≤ offset + end`) nor `i + stride` (`i < end`, `stride ≤
    /// end`) overflows 32 bits (`offset ≤ end < 2^31`). Returns the counter, the step and
    /// the labels for [`Emitter::loop_end`].
    pub(super) fn grid_loop(
        &mut self,
        stem: &str,
        (gid, stride): (Reg, Reg),
        offset: u64,
        end: u64,
    ) -> (Reg, Reg, Label, Label) {
        let (start, step) = if self.narrow {
            debug_assert!(offset <= end && end < NARROW_LIMIT);
            let g = self.def(RegClass::B64, "min.u64", &[&gid, &end]);
            let g = self.def(RegClass::B32, "cvt.u32.u64", &[&g]);
            let s = self.def(RegClass::B64, "min.u64", &[&stride, &end.max(1)]);
            let s = self.def(RegClass::B32, "cvt.u32.u64", &[&s]);
            let g = if offset > 0 {
                self.def(RegClass::B32, "add.u32", &[&g, &offset])
            } else {
                g
            };
            (g, s)
        } else if offset > 0 {
            (self.def(RegClass::B64, "add.s64", &[&gid, &offset]), stride)
        } else {
            (gid, stride)
        };
        let (i, top, done) = self.loop_begin(stem, start, &end);
        (i, step, top, done)
    }

    /// The row-major coordinates of linear point `i` in the kernel's space, plus one slot
    /// (the reduction's sequence variable, or an unused 0) at the end.
    pub(super) fn unravel(&mut self, i: Reg) -> Vec<Reg> {
        let zero = self.imm_idx(0);
        let mut vars = vec![zero; self.k.space.len() + 1];
        let rest = self.narrowed(i);
        self.unravel_from(rest, 0, &mut vars);
        vars
    }

    /// The loop variables of point `j` of a row-fused step's current row, whose first
    /// point is `start`: variable 0 is the row, the others come from `j - start` (so a
    /// two-dimensional step needs no division at all).
    pub(super) fn unravel_in_row(&mut self, j: Reg, start: Reg, row: Reg) -> Vec<Reg> {
        let zero = self.imm_idx(0);
        let mut vars = vec![zero; self.k.space.len() + 1];
        let local = self.def(RegClass::B64, "sub.s64", &[&j, &start]);
        let local = self.narrowed(local);
        vars[0] = self.narrowed(row);
        if vars.len() > 2 {
            self.unravel_from(local, 1, &mut vars);
        }
        vars
    }

    /// Sets `vars[from..space.len()]` to the coordinates of the row-major index `rest`
    /// within dimensions `from..` of the kernel's space (`vars[from]` takes the rest).
    fn unravel_from(&mut self, mut rest: Reg, from: usize, vars: &mut [Reg]) {
        let space = &self.k.space;
        for d in (from..space.len()).rev() {
            let size = space[d] as u64;
            if d == from {
                vars[d] = rest;
            } else {
                vars[d] = self.div_rem_imm(false, rest, size);
                rest = self.div_rem_imm(true, rest, size);
            }
        }
    }

    /// `x / c` (`div`) or `x % c` of a non-negative index, unsigned; a shift or a mask when
    /// `c` is a power of two (`ptxas` keeps a general division for `div.u32` by 1024).
    pub(super) fn div_rem_imm(&mut self, div: bool, x: Reg, c: u64) -> Reg {
        let ic = self.ic();
        let w = if self.narrow { 32 } else { 64 };
        match (c.is_power_of_two(), div) {
            (true, true) => self.def(ic, &format!("shr.u{w}"), &[&x, &c.trailing_zeros()]),
            (true, false) => self.def(ic, &format!("and.b{w}"), &[&x, &(c - 1)]),
            (false, true) => self.def(ic, &self.iop("div", "u"), &[&x, &c]),
            (false, false) => self.def(ic, &self.iop("rem", "u"), &[&x, &c]),
        }
    }
}
