//! Canonical-order reductions (Invariant 2): lane-striped partials over [`LANES`]
//! accumulators, chunks of [`CHUNK`], the pairwise [`TREE`]; a split reduction's chunk
//! partials and their combination; host extremum calls for rows of a float max or min.

use super::{Emitter, Source};
use crate::cranelift::host::SumCode;
use crate::cranelift::lanes::Lanes;
use crate::cranelift::plan::{HostSum, WINDOW};
use crate::kernel::{CHUNK, LANES, TREE};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::Variable;
use kiln_ir::ReduceKind;

impl Emitter<'_, '_, '_> {
    /// The canonical reduction (Invariant 2) of node `value` over sequence positions
    /// `0..len` (variable `vars.len() - 1`), with vector accumulators if `vector` (the
    /// plan's `vector_acc`); returns the scalar result.
    pub(super) fn canon(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
        vector: bool,
    ) -> Result<Value, String> {
        let dt = self.ve.dtype(value);
        if len <= CHUNK {
            return self.canon_chunk(
                kind,
                len,
                &Source::Dag {
                    value,
                    vars: vars.to_vec(),
                },
                None,
                vector,
            );
        }
        let chunks = len.div_ceil(CHUNK);
        if chunks > CHUNK {
            return Err("reduction longer than 2^24".into());
        }
        // Chunk partials into a stack buffer, then their canonical combination: the same
        // two steps a split reduction runs on several threads.
        let size = self.ve.scalar_type(dt).bytes();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (chunks as u32) * size,
            4,
        ));
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let zero = self.b.ins().iconst(types::I64, 0);
        let all = self.b.ins().iconst(types::I64, chunks as i64);
        self.partials(kind, len, value, vars, vector, zero, base, zero, all)?;
        self.combine_partials(kind, len, value, zero, base, vector)
    }

    /// A float max or min of a unit-stride load over the whole sequence as one host call
    /// ([`super::host::HostCalls::extremum`], the interpreter's 256-bit loop), where the
    /// plan says so: both are exact and order-free, so the result has the canonical
    /// order's bits.
    pub(super) fn host_extremum(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
    ) -> Result<Value, String> {
        let call = self
            .ve
            .calls
            .extremum
            .ok_or("a host extremum without its import")?;
        let index = crate::cranelift::host::EXTREMA
            .iter()
            .position(|&e| e == kind)
            .ok_or_else(|| format!("{} has no host extremum", kind.name()))?;
        let dt = self.ve.dtype(value);
        let row = self
            .ve
            .unit_stride_address(self.b, value, vars)?
            .ok_or_else(|| format!("host extremum of v{value}, not a unit-stride load"))?;
        let kind = self.b.ins().iconst(types::I32, index as i64);
        let n = self.b.ins().iconst(types::I64, len as i64);
        let r = call.call(self.b, dt == kiln_ir::DType::F64, &[kind, row, n]);
        r.first()
            .copied()
            .ok_or_else(|| "the host extremum returned nothing".into())
    }

    /// The partials buffer of a split reduction: argument `slot` of `args`.
    pub(super) fn partials_buffer(&mut self, args: Value, slot: usize) -> Value {
        self.b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    }

    /// Writes the canonical partial of chunks `c0..c1` of row `r`'s sequence (the chunks of
    /// [`Emitter::canon`], each reduced exactly as there) to `base[r * chunks + c]`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn partials(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
        vector: bool,
        r: Value,
        base: Value,
        c0: Value,
        c1: Value,
    ) -> Result<(), String> {
        let dt = self.ve.dtype(value);
        let chunks = len.div_ceil(CHUNK);
        let full = len / CHUNK;
        let size = i64::from(self.ve.scalar_type(dt).bytes());
        let src = Source::Dag {
            value,
            vars: vars.to_vec(),
        };
        let row_base = self.b.ins().imul_imm_s(r, chunks as i64 * size);
        let row_base = self.b.ins().iadd(base, row_base);
        // Full chunks c0 .. min(c1, full).
        let full_v = self.b.ins().iconst(types::I64, full as i64);
        let end = self.b.ins().smin(c1, full_v);
        self.range_loop(c0, end, |s, cv| {
            let start = s.b.ins().imul_imm_s(cv, CHUNK as i64);
            let part = s.canon_chunk(kind, CHUNK, &src, Some(start), vector)?;
            let off = s.b.ins().imul_imm_s(cv, size);
            let addr = s.b.ins().iadd(row_base, off);
            s.b.ins().store(MemFlagsData::trusted(), part, addr, 0);
            Ok(s.b.ins().iadd_imm_s(cv, 1))
        })?;
        // The partial last chunk (static length), when this call's range includes it.
        if !len.is_multiple_of(CHUNK) {
            let last = self.b.create_block();
            let done = self.b.create_block();
            let has = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, c1, full as i64);
            self.b.ins().brif(has, last, &[], done, &[]);
            self.b.switch_to_block(last);
            let start = self.b.ins().iconst(types::I64, (full * CHUNK) as i64);
            let part = self.canon_chunk(kind, len % CHUNK, &src, Some(start), vector)?;
            self.b.ins().store(
                MemFlagsData::trusted(),
                part,
                row_base,
                (full as i64 * size) as i32,
            );
            self.b.ins().jump(done, &[]);
            self.b.switch_to_block(done);
        }
        Ok(())
    }

    /// Row `r`'s result from its chunk partials at `base` (see [`Emitter::partials`]): the
    /// same final combination as [`Emitter::canon`].
    pub(super) fn combine_partials(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        r: Value,
        base: Value,
        vector: bool,
    ) -> Result<Value, String> {
        let dt = self.ve.dtype(value);
        let st = self.ve.scalar_type(dt);
        let chunks = len.div_ceil(CHUNK);
        let row_base = self
            .b
            .ins()
            .imul_imm_s(r, chunks as i64 * i64::from(st.bytes()));
        let row_base = self.b.ins().iadd(base, row_base);
        let src = Source::Mem {
            base: row_base,
            ty: st,
        };
        self.canon_chunk(kind, chunks, &src, None, vector)
    }

    /// One element (`Lanes::One`) or four consecutive ones of the sequence at `j`.
    pub(super) fn element(
        &mut self,
        src: &Source,
        j: Value,
        lanes: Lanes,
    ) -> Result<Value, String> {
        match src {
            Source::Dag { value, vars } => {
                let mut vars = vars.clone();
                let last = vars.len() - 1;
                vars[last] = j;
                self.ve.reset();
                self.ve.node(self.b, *value, &vars, lanes)
            }
            Source::Mem { base, ty } => {
                let off = self.b.ins().imul_imm_s(j, i64::from(ty.bytes()));
                let addr = self.b.ins().iadd(*base, off);
                let t = match lanes {
                    Lanes::One => *ty,
                    Lanes::Vector => ty.by(self.ve.width).unwrap_or(*ty),
                };
                Ok(self.b.ins().load(t, MemFlagsData::trusted(), addr, 0))
            }
        }
    }

    /// Stages the window of `count` sequence positions from `j0` when `src` is the DAG and
    /// the kernel stages nodes (see [`Emitter::stage`]).
    pub(super) fn stage_source(
        &mut self,
        src: &Source,
        j0: Value,
        count: usize,
        vector: bool,
    ) -> Result<(), String> {
        let Source::Dag { vars, .. } = src else {
            return Ok(());
        };
        if !self.ve.staging() {
            return Ok(());
        }
        let mut at = vars.clone();
        let last = at.len() - 1;
        at[last] = j0;
        let count = self.b.ins().iconst(types::I64, count as i64);
        self.stage(&at, count, vector)
    }

    /// The canonical reduction of `len ≤ 4096` elements starting at `base` (or 0).
    pub(super) fn canon_chunk(
        &mut self,
        kind: ReduceKind,
        len: usize,
        src: &Source,
        base: Option<Value>,
        vector: bool,
    ) -> Result<Value, String> {
        let dt_ty = match src {
            Source::Dag { value, .. } => self.ve.scalar_type(self.ve.dtype(*value)),
            Source::Mem { ty, .. } => *ty,
        };
        let dt = match src {
            Source::Dag { value, .. } => self.ve.dtype(*value),
            Source::Mem { .. } => self.ve.dtype_of_type(dt_ty),
        };
        let base = match base {
            Some(b) => b,
            None => self.b.ins().iconst(types::I64, 0),
        };
        if let (Source::Dag { vars, .. }, Some(sum)) = (src, self.ve.host_sum) {
            if !matches!(sum, HostSum::Block(_)) {
                return self.host_row_sum(sum, len, vars, base);
            }
        }
        let (naccs, lanes) = if vector {
            (LANES / self.ve.width as usize, Lanes::Vector)
        } else {
            (LANES, Lanes::One)
        };
        let id = self.ve.identity(self.b, dt, kind, lanes)?;
        let accs: Vec<Variable> = (0..naccs)
            .map(|_| {
                let t = self.b.func.dfg.value_type(id);
                let v = self.b.declare_var(t);
                self.b.def_var(v, id);
                v
            })
            .collect();
        let step = if vector { self.ve.width as usize } else { 1 };
        let blocks = len / LANES;
        // With staged nodes, whole windows of WINDOW / LANES blocks first (one block-math
        // call per node and window), then one window holding the rest: the last blocks and
        // the tail. Without, every block in one loop. The elements, and so the order of
        // the accumulation, are the same either way.
        let staged = matches!(src, Source::Dag { .. }) && self.ve.staging();
        let per_window = WINDOW / LANES;
        let (windows, rest_blocks) = if staged {
            (blocks / per_window, blocks % per_window)
        } else {
            (0, blocks)
        };
        let acc = |s: &mut Self, j0: Value| -> Result<(), String> {
            for (a, &acc) in accs.iter().enumerate() {
                let delta = (a * step) as i64;
                let j = s.b.ins().iadd_imm_s(j0, delta);
                s.ve.set_step(Some((j, j0, delta)));
                let x = s.element(src, j, lanes)?;
                let cur = s.b.use_var(acc);
                let y = s.ve.combine(s.b, dt, kind, cur, x);
                s.b.def_var(acc, y);
            }
            s.ve.set_step(None);
            Ok(())
        };
        // A staged summand's whole windows folded into the lanes by host calls: the lanes
        // live in a stack block meanwhile.
        let lanes_block = match self.ve.host_sum {
            Some(HostSum::Block(h)) if windows > 0 => Some((h, self.spill_lanes(&accs, step)?)),
            _ => None,
        };
        if windows > 0 {
            self.counted_loop(windows, |s, w| {
                let j0 = s.b.ins().imul_imm_s(w, WINDOW as i64);
                let j0 = s.b.ins().iadd(j0, base);
                s.stage_source(src, j0, WINDOW, vector)?;
                match lanes_block {
                    Some((h, slot)) => s.fold_window(h, slot)?,
                    None => s.counted_loop(per_window, |s, blk| {
                        let jb = s.b.ins().imul_imm_s(blk, LANES as i64);
                        let jb = s.b.ins().iadd(jb, j0);
                        acc(s, jb)
                    })?,
                }
                s.ve.end_window();
                Ok(())
            })?;
        }
        if let Some((_, slot)) = lanes_block {
            self.reload_lanes(&accs, step, slot);
        }
        let r0 = self.b.ins().iadd_imm_s(base, (windows * WINDOW) as i64);
        let rest = rest_blocks * LANES + len % LANES;
        if rest > 0 {
            self.stage_source(src, r0, rest, vector)?;
        }
        if rest_blocks > 0 {
            self.counted_loop(rest_blocks, |s, blk| {
                let jb = s.b.ins().imul_imm_s(blk, LANES as i64);
                let jb = s.b.ins().iadd(jb, r0);
                acc(s, jb)
            })?;
        }
        // Tail: element l of the last partial block goes to lane l.
        let tail = len % LANES;
        let t0 = self.b.ins().iadd_imm_s(r0, (rest_blocks * LANES) as i64);
        // Whole vectors where four tail lanes exist, lane by lane for the rest.
        let whole = if vector { tail / step * step } else { 0 };
        for (a, l) in (0..whole).step_by(step).enumerate() {
            let j = self.b.ins().iadd_imm_s(t0, l as i64);
            let x = self.element(src, j, Lanes::Vector)?;
            let cur = self.b.use_var(accs[a]);
            let y = self.ve.combine(self.b, dt, kind, cur, x);
            self.b.def_var(accs[a], y);
        }
        for l in whole..tail {
            let j = self.b.ins().iadd_imm_s(t0, l as i64);
            let (acc, lane) = (accs[l / step], l % step);
            let x = self.element(src, j, Lanes::One)?;
            let cur = self.b.use_var(acc);
            if vector {
                let c = self.b.ins().extractlane(cur, lane as u8);
                let y = self.ve.combine(self.b, dt, kind, c, x);
                let v = self.b.ins().insertlane(cur, y, lane as u8);
                self.b.def_var(acc, v);
            } else {
                let y = self.ve.combine(self.b, dt, kind, cur, x);
                self.b.def_var(acc, y);
            }
        }
        self.ve.end_window();
        // The pairwise tree p[j] = op(p[j], p[j + s]), s = 16 … 1, over the 32 lanes: lane
        // j is lane j % step of accumulator j / step, so the steps s ≥ step combine whole
        // accumulators (s / step apart) and the rest lanes of accumulator 0.
        let mut p: Vec<Value> = accs.iter().map(|&a| self.b.use_var(a)).collect();
        if vector {
            let tree = TREE;
            for s in tree.iter().filter(|&&s| s >= step).map(|s| s / step) {
                for j in 0..s {
                    p[j] = self.ve.combine(self.b, dt, kind, p[j], p[j + s]);
                }
            }
            let v = p[0];
            let mut q: Vec<Value> = (0..step as u8)
                .map(|l| self.b.ins().extractlane(v, l))
                .collect();
            for &s in tree.iter().filter(|&&s| s < step) {
                for j in 0..s {
                    q[j] = self.ve.combine(self.b, dt, kind, q[j], q[j + s]);
                }
            }
            Ok(q[0])
        } else {
            for s in TREE {
                for j in 0..s {
                    p[j] = self.ve.combine(self.b, dt, kind, p[j], p[j + s]);
                }
            }
            Ok(p[0])
        }
    }

    /// A chunk's sum by one host call ([`HostSum::Row`], [`HostSum::ShiftedSquare`]): the
    /// `len` summands from sequence position `base` of the row at `vars`.
    fn host_row_sum(
        &mut self,
        sum: HostSum,
        len: usize,
        vars: &[Value],
        base: Value,
    ) -> Result<Value, String> {
        let call = self.ve.calls.sum.ok_or("a host sum without its import")?;
        let mut at = vars.to_vec();
        let last = at.len() - 1;
        at[last] = base;
        let (x, code, c) = match sum {
            HostSum::Row(x) => {
                let code = SumCode::row(self.ve.dtype(x))
                    .ok_or_else(|| format!("a host sum of v{x}'s row, not of floats"))?;
                (x, code, None)
            }
            HostSum::ShiftedSquare {
                x,
                c,
                round,
                square_rounded,
            } => {
                let code = SumCode::shifted_square(self.ve.dtype(x), round, square_rounded)
                    .ok_or_else(|| format!("a host sum of v{x}'s shifted squares"))?;
                (x, code, Some(c))
            }
            HostSum::Block(n) => return Err(format!("v{n}'s block summed as a row")),
        };
        let row = self
            .ve
            .unit_stride_address(self.b, x, &at)?
            .ok_or_else(|| format!("a host sum of v{x}, not a unit-stride load"))?;
        self.ve.reset();
        let c = match c {
            Some(c) => self.ve.node(self.b, c, &at, Lanes::One)?,
            None => self.b.ins().f32const(0.0),
        };
        self.ve.reset();
        let code = self.b.ins().iconst(types::I32, code as i64);
        let acc = self.b.ins().iconst(types::I64, 0);
        let n = self.b.ins().iconst(types::I64, len as i64);
        let r = call.call(self.b, false, &[code, row, c, acc, n]);
        r.first()
            .copied()
            .ok_or_else(|| "the host sum returned nothing".into())
    }

    /// Stores the lane accumulators `accs` (`step` lanes each, lane `l` of the canonical
    /// order at element `l`) into a new stack block of 32 `f32`s; returns it.
    fn spill_lanes(&mut self, accs: &[Variable], step: usize) -> Result<StackSlot, String> {
        if accs.len() * step != LANES {
            return Err(format!("{} accumulators of {step} lanes", accs.len()));
        }
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (LANES * 4) as u32,
            4,
        ));
        for (a, &acc) in accs.iter().enumerate() {
            let v = self.b.use_var(acc);
            self.b
                .ins()
                .stack_store(types::I64, v, slot, (a * step * 4) as i32);
        }
        Ok(slot)
    }

    /// Loads the lane accumulators back from [`Emitter::spill_lanes`]' block.
    fn reload_lanes(&mut self, accs: &[Variable], step: usize, slot: StackSlot) {
        for (a, &acc) in accs.iter().enumerate() {
            let cur = self.b.use_var(acc);
            let t = self.b.func.dfg.value_type(cur);
            let v = self
                .b
                .ins()
                .stack_load(types::I64, t, slot, (a * step * 4) as i32);
            self.b.def_var(acc, v);
        }
    }

    /// Folds staged node `h`'s block (this window's [`WINDOW`] summands) into the lanes at
    /// `slot` with one host call ([`HostSum::Block`]).
    fn fold_window(&mut self, h: usize, slot: StackSlot) -> Result<(), String> {
        let call = self.ve.calls.sum.ok_or("a host sum without its import")?;
        let block = self
            .ve
            .ready_block(h)
            .ok_or_else(|| format!("v{h}'s block is not ready for the host sum"))?;
        let code = self.b.ins().iconst(types::I32, SumCode::IntoLanes as i64);
        let c = self.b.ins().f32const(0.0);
        let lanes = self.b.ins().stack_addr(types::I64, slot, 0);
        let n = self.b.ins().iconst(types::I64, WINDOW as i64);
        call.call(self.b, false, &[code, block, c, lanes, n]);
        Ok(())
    }
}
