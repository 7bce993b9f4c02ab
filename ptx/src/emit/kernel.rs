//! One kernel as an entry of its own: its parameters, random streams, and the pointwise
//! grid-stride loop (with four-point vector groups where the schedule says) or the
//! reduction's warp loop.

use super::state::{Emitter, R};
use super::types::{class, mem_type, param_name, vec4};
use crate::module::{Kernel as PtxKernel, Reg, RegClass};
use crate::program::KernelLaunch;
use crate::schedule::{KernelPlan, Work};
use kiln_compiler::kernel::NodeKind;

impl<'a> Emitter<'a> {
    /// Kernel `index` (or fill `index`) rendered as entry `entry` the way `plan` says, and
    /// its launch description.
    pub(super) fn kernel(
        mut self,
        entry: String,
        index: usize,
        plan: &KernelPlan,
    ) -> R<(PtxKernel, KernelLaunch)> {
        let k = self.k;
        let bufs = self.kernel_buffers()?;
        let names: Vec<String> = bufs.iter().map(|&b| param_name(b)).collect();
        self.b.comment(&format!(
            "{entry}: kernel {} of cluster {}",
            k.name, self.p.name
        ));
        for (&buf, name) in bufs.iter().zip(&names) {
            let r = self.b.global_pointer_param(name);
            self.bases.push((buf, r));
        }
        let points = plan.points;
        if points > 0 {
            self.hoist_random_streams(&plan.hoisted)?;
            match &plan.work {
                Work::Pointwise { vector } => self.pointwise(points, vector.as_deref())?,
                Work::Reduction(red) => self.reduction(points, red)?,
            }
        }
        let launch = KernelLaunch {
            entry,
            kernel: index,
            params: bufs,
            mapping: plan.mapping,
            block: plan.block,
            grid: plan.grid,
        };
        Ok(self.finish(names, launch))
    }

    /// A grid-stride loop over the points, one thread per point, storing every output; or,
    /// with `vector` loads (the schedule's), one per four points (`ld`/`st.global.v4`)
    /// and a grid-stride tail over the last `points % 4`.
    fn pointwise(&mut self, points: u64, vector: Option<&[(usize, i64)]>) -> R<()> {
        let (gid, stride, _) = self.thread_ids();
        let mut tail = 0;
        if let Some(loads) = vector {
            self.vector_groups(points, (gid, stride), loads)?;
            tail = points - points % 4;
        }
        let (i, step, top, done) = self.grid_loop("point", (gid, stride), tail, points);
        let vars = self.unravel(i);
        self.stores(i, &vars)?;
        self.loop_end(i, &step, top, done);
        Ok(())
    }

    /// The vectorised main loop: a grid-stride loop over the `points / 4` full groups;
    /// each thread loads four lanes of each of `loads` with one `ld.global.v4`, evaluates
    /// the store values lane by lane exactly as the scalar loop does (the same nodes, with
    /// the lane's coordinates), and stores them with one `st.global.v4` per store.
    fn vector_groups(&mut self, points: u64, ids: (Reg, Reg), loads: &[(usize, i64)]) -> R<()> {
        let k = self.k;
        self.b.comment(&format!(
            "four points per thread: {} vector load(s), {} vector store(s)",
            loads.len(),
            k.stores.len()
        ));
        let (g, step, top, done) = self.grid_loop("group", ids, 0, points / 4);
        let ic = g.class;
        let shl = if ic == RegClass::B32 {
            "shl.b32"
        } else {
            "shl.b64"
        };
        let i4 = self.def(ic, shl, &[&g, &2]);
        let i4 = self.narrowed(i4);
        self.vec_loads = vec![None; k.nodes.len()];
        for &(n, c) in loads {
            let NodeKind::Load { buf, .. } = k.nodes[n].kind else {
                unreachable!("vector_loads lists loads")
            };
            let dt = k.nodes[n].dtype;
            let at = if c == 0 {
                i4
            } else {
                let cst = self.imm_idx(c);
                let add = self.iop("add", "s");
                self.def(self.ic(), &add, &[&i4, &cst])
            };
            let addr = self.address(buf, at, dt)?;
            let lanes = [0; 4].map(|_| self.b.reg(class(dt)));
            self.emit(
                &format!("ld.global.v4.{}", mem_type(dt)),
                &[&vec4(&lanes), &format!("[{addr}]")],
            );
            self.vec_loads[n] = Some(lanes);
        }
        let mut values = vec![[i4; 4]; k.stores.len()];
        for lane in 0..4 {
            let i = if lane == 0 {
                i4
            } else {
                let add = self.iop("add", "s");
                self.def(self.ic(), &add, &[&i4, &lane])
            };
            let vars = self.unravel(i);
            self.memo.iter_mut().for_each(|m| *m = None);
            self.lane = lane;
            for (s, v) in k.stores.iter().zip(&mut values) {
                v[lane] = self.node(s.value, &vars)?;
            }
        }
        self.vec_loads.clear();
        self.memo.iter_mut().for_each(|m| *m = None);
        for (s, v) in k.stores.iter().zip(&values) {
            let dt = self.buf_dtype(s.buf)?;
            let addr = self.address(s.buf, i4, dt)?;
            self.emit(
                &format!("st.global.v4.{}", mem_type(dt)),
                &[&format!("[{addr}]"), &vec4(v)],
            );
        }
        self.loop_end(g, &step, top, done);
        Ok(())
    }
}
