//! The row-fused entry (module doc of [`crate::emit`], "Row fusion"): every kernel of the
//! program for one row at a time, one warp per row, temporaries in a shared slab.

use super::state::{Emitter, FusedRow, R};
use super::types::param_name;
use crate::module::{Kernel as PtxKernel, Reg, RegClass};
use crate::program::{entry_name, KernelLaunch};
use crate::schedule::{Prefetch, RowPlan, StepWork, LANES};
use kiln_compiler::kernel::analysis::buffer_slot;
use kiln_compiler::kernel::BufRef;

/// The kernel-scope `.shared` array of a row-fused entry.
const SMEM: &str = "row_smem";

impl<'a> Emitter<'a> {
    /// The row-fused entry of the whole program as `plan` says (module doc, "Row fusion"):
    /// `self` starts on kernel 0; every kernel is emitted in order inside one loop over rows.
    pub(super) fn fused(mut self, plan: &RowPlan) -> R<(PtxKernel, KernelLaunch)> {
        let p = self.p;
        let mut bufs = Vec::new();
        for k in &p.kernels {
            self.switch_to(k, vec![None; k.nodes.len()]);
            bufs.extend(self.kernel_buffers()?);
        }
        bufs.retain(|b| !matches!(b, BufRef::Temp(_)));
        bufs.sort_by_key(|&b| buffer_slot(p, b));
        bufs.dedup();
        let names: Vec<String> = bufs.iter().map(|&b| param_name(b)).collect();
        let entry = entry_name(&p.name, "rows");
        let (rows, slab, warps) = (plan.layout.rows, plan.layout.slab, plan.layout.warps);
        self.b
            .directive(&format!(".shared .align 8 .b8 {SMEM}[{}]", slab * warps));
        self.b.comment(&format!(
            "{entry}: kernels k0..k{} of cluster {} fused, one warp per row of {rows}; \
             temporaries in shared memory, {slab} bytes per warp, {warps} warps per block",
            p.kernels.len() - 1,
            p.name
        ));
        for (&buf, name) in bufs.iter().zip(&names) {
            let r = self.b.global_pointer_param(name);
            self.bases.push((buf, r));
        }
        // Random streams are set up once per thread, per kernel, before the row loop.
        let mut streams = Vec::with_capacity(p.kernels.len());
        for (k, step) in p.kernels.iter().zip(&plan.steps) {
            self.switch_to(k, vec![None; k.nodes.len()]);
            if k.points() > 0 {
                self.hoist_random_streams(&step.hoisted)?;
            }
            streams.push(std::mem::take(&mut self.streams));
        }
        let ctaid = self.def(RegClass::B32, "mov.u32", &[&"%ctaid.x"]);
        let ntid = self.def(RegClass::B32, "mov.u32", &[&"%ntid.x"]);
        let tid = self.def(RegClass::B32, "mov.u32", &[&"%tid.x"]);
        let nctaid = self.def(RegClass::B32, "mov.u32", &[&"%nctaid.x"]);
        // Working warps per block: the block's, at most `warps` (the others idle).
        let bw = self.def(RegClass::B32, "shr.u32", &[&ntid, &"5"]);
        let bw = self.def(RegClass::B32, "min.u32", &[&bw, &warps]);
        let bw = self.def(RegClass::B32, "max.u32", &[&bw, &1]); // never a zero stride
        let lane32 = self.def(RegClass::B32, "and.b32", &[&tid, &"31"]);
        let lane = self.def(RegClass::B64, "cvt.u64.u32", &[&lane32]);
        let wib = self.def(RegClass::B32, "shr.u32", &[&tid, &"5"]);
        let idle = self.def(RegClass::Pred, "setp.ge.u32", &[&wib, &warps]);
        let done_all = self.b.label("idle");
        self.emit(&format!("@{idle} bra"), &[&done_all]);
        let first = self.def(RegClass::B64, "mul.wide.u32", &[&ctaid, &bw]);
        let wib64 = self.def(RegClass::B64, "cvt.u64.u32", &[&wib]);
        let first = self.def(RegClass::B64, "add.s64", &[&first, &wib64]);
        let step = self.def(RegClass::B64, "mul.wide.u32", &[&nctaid, &bw]);
        let smem = self.def(RegClass::B64, "mov.u64", &[&SMEM]);
        let own = self.def(RegClass::B64, "mul.lo.s64", &[&wib64, &slab]);
        let own = self.def(RegClass::B64, "add.s64", &[&smem, &own]);
        let (row, top, done) = self.loop_begin("row", first, &rows);
        self.prefetch_next_row(&plan.prefetch, row, step, rows, lane)?;
        self.fused = Some(FusedRow {
            temps: plan.layout.temps.clone(),
            row,
            slab: own,
        });
        let steps = p.kernels.iter().zip(streams).zip(&plan.steps);
        for (i, ((k, st), kstep)) in steps.enumerate() {
            self.switch_to(k, st);
            let per_row = kstep.per_row;
            self.b
                .comment(&format!("kernel k{i} ({}) for this row", k.name));
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&row, &per_row]);
            let end = self.def(RegClass::B64, "add.s64", &[&start, &per_row]);
            match &kstep.work {
                StepWork::Reduce(red) => {
                    // The row's kept points, one after another, each by the whole warp.
                    let (w, ptop, pdone) = self.loop_begin("kept", start, &end);
                    self.reduce_point(w, red, lane, lane32)?;
                    self.loop_end(w, &1, ptop, pdone);
                }
                StepWork::Points {
                    pinned,
                    batch,
                    column,
                } => {
                    // Values that depend on the row only (its max, its sum, …): once per
                    // row, before the step's loops.
                    if per_row > 0 {
                        let row_vars = self.unravel_in_row(start, start, row);
                        self.pin(pinned, &row_vars)?;
                    }
                    let first = self.def(RegClass::B64, "add.s64", &[&start, &lane]);
                    let mut j = first;
                    if let Some(unroll) = *batch {
                        // `unroll` of the lane's points at a time, every value before any
                        // store (`j < end - span` signed: `end - span` may be negative).
                        let (jm, top, done) =
                            self.unrolled_loop_begin("points", first, &end, unroll);
                        let mut points = Vec::with_capacity(unroll as usize);
                        for u in 0..unroll {
                            let ju = self.def(RegClass::B64, "add.s64", &[&jm, &(u * LANES)]);
                            let vars = self.unravel_in_row(ju, start, row);
                            points.push((ju, vars));
                        }
                        self.stores_batch(&points, *column)?;
                        self.loop_end(jm, &(unroll * LANES), top, done);
                        j = jm;
                    }
                    let (j, ptop, pdone) = self.loop_begin("point", j, &end);
                    let vars = self.unravel_in_row(j, start, row);
                    self.stores(j, &vars)?;
                    self.loop_end(j, &LANES, ptop, pdone);
                    self.pinned.iter_mut().for_each(|p| *p = None);
                }
            }
            // Other lanes' shared writes become visible (and reads complete) here.
            self.emit("bar.warp.sync", &[&"-1"]);
        }
        self.fused = None;
        self.loop_end(row, &step, top, done);
        self.b.place(&done_all);
        let launch = KernelLaunch {
            entry,
            kernel: 0,
            params: bufs,
            mapping: plan.mapping,
            block: plan.block,
            grid: plan.grid,
        };
        Ok(self.finish(names, launch))
    }

    /// Prefetches into L2 the rows that this warp's next row (`row + step`, when there is
    /// one) reads of each of `inputs` (the schedule's), one 128-byte line per lane per 4 KiB
    /// of its covered bytes.
    fn prefetch_next_row(
        &mut self,
        inputs: &[Prefetch],
        row: Reg,
        step: Reg,
        rows: u64,
        lane: Reg,
    ) -> R<()> {
        if inputs.is_empty() {
            return Ok(());
        }
        let next = self.def(RegClass::B64, "add.s64", &[&row, &step]);
        let last = self.def(RegClass::Pred, "setp.ge.u64", &[&next, &rows]);
        let skip = self.b.label("prefetch_skip");
        self.emit(&format!("@{last} bra"), &[&skip]);
        let line = self.def(RegClass::B64, "shl.b64", &[&lane, &7]);
        for &Prefetch {
            buf,
            row_bytes,
            covered,
        } in inputs
        {
            let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
                return self.malformed(format!("buffer {buf:?} is not a parameter"));
            };
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&next, &row_bytes]);
            let off = self.def(RegClass::B64, "add.s64", &[&start, &line]);
            let addr = self.def(RegClass::B64, "add.s64", &[&base, &off]);
            for m in 0..covered.div_ceil(LANES * 128) {
                let at = m * LANES * 128;
                let op = format!("[{addr}+{at}]");
                if at + LANES * 128 <= row_bytes {
                    self.emit("prefetch.global.L2", &[&op]);
                } else {
                    let inside =
                        self.def(RegClass::Pred, "setp.lt.u64", &[&line, &(row_bytes - at)]);
                    self.emit(&format!("@{inside} prefetch.global.L2"), &[&op]);
                }
            }
        }
        self.b.place(&skip);
        Ok(())
    }
}
