//! What the executor works out once per function and then reuses on every run of it: when
//! each value dies, and each cluster node's id, shape signature and in-memory cache key.
//!
//! A top-level function run through [`Runtime::run`] gets its plan at each call; one
//! planned once with [`Runtime::plan_func`] ([`PlannedFunc`]: what `Session`, `Function`
//! and `kiln run --repeat` hold) keeps it for every call, which saves the formatting of
//! cluster ids and signatures, the comparison of each cluster body for its cache key and
//! the last-use walk — most of a small program's per-call cost.
//!
//! The regions of `while` and `conditional` are planned with the function that holds them
//! ([`Plan::regions`]), so a planned function plans its loops once for all its calls (a
//! function run by [`Runtime::run`], once per call): an iteration neither recomputes last
//! uses nor formats, prints, hashes or compares the body's clusters. Regions also plan
//! their plain ops ([`kiln_interp::PlannedOp`]): each is checked against its typing rule
//! once, not on every iteration.
//!
//! Deliberately not cached here: the policy's decision. It is asked on every run, so the
//! lazy rule (fallback twice, then compile), a failure that sends a signature to the
//! fallback for good, and the megamorphic counts behave exactly as at the top level.

use crate::executor::{lock, Inner, Runtime};
use crate::routing::remembered_content_key;
use crate::scalar_cond::ScalarCond;
use crate::values::Slot;
use kiln_interp::{last_uses, LastUse, PlannedOp};
use kiln_ir::{Func, Inst, Op, Tensor};
use std::sync::{Arc, Mutex, Weak};

/// A function planned once for the runtime that made it ([`Runtime::plan_func`]) and run
/// with [`Runtime::run_planned`] as often as needed: the function is shared, not copied,
/// and cannot change under its plan. Run on another runtime, it is planned again per call
/// (the same results, at [`Runtime::run`]'s cost).
pub struct PlannedFunc {
    pub(crate) func: Arc<Func>,
    pub(crate) plan: Plan,
    /// The runtime whose backend the cache keys name.
    pub(crate) owner: Weak<Inner>,
}

impl PlannedFunc {
    /// The function this plan runs.
    pub fn func(&self) -> &Arc<Func> {
        &self.func
    }
}

impl std::fmt::Debug for PlannedFunc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlannedFunc(@{})", self.func.name)
    }
}

/// A function's run plan (see the module doc).
pub(crate) struct Plan {
    /// When each value can be freed, by value number.
    pub(crate) uses: Vec<LastUse>,
    /// Per instruction: a cluster node's routing facts; `None` for every other op.
    pub(crate) clusters: Vec<Option<ClusterPlan>>,
    /// Per instruction: a plain one-result op planned for its operand types, where the
    /// function is a region or planned once ([`Runtime::plan_func`]); empty for a function
    /// planned per call ([`Runtime::run`]), where planning its ops would cost what it saves.
    pub(crate) ops: Vec<Option<PlannedOp>>,
    /// Per instruction: a `while`'s condition and body, or a `conditional`'s branches in
    /// order, planned with the function (empty for every other op): a function planned
    /// once plans its loops and branches once, not on every call.
    pub(crate) regions: Vec<Vec<Plan>>,
    /// For a `while`'s condition made only of integer and boolean scalar ops, those ops
    /// evaluated directly on the carried scalars ([`ScalarCond`]); `None` otherwise.
    pub(crate) scalar_cond: Option<ScalarCond>,
    /// The value tables of a finished run, kept for the next ([`Frame`]).
    pub(crate) spare: Mutex<Option<Frame>>,
}

/// The per-value tables of one run ([`crate::values::Values`]), emptied when the run ends
/// and kept by its plan for the next run: a loop body runs once per iteration, and
/// allocating and freeing two tables of a slot per value on each was a tenth of a small
/// recurrent network's time. A run that finds them taken (the same plan running on
/// another thread) makes its own.
#[derive(Default)]
pub(crate) struct Frame {
    pub(crate) slots: Vec<Slot>,
    /// Always all `None` here (the references are the run's, see `Values::borrowed`).
    pub(crate) borrowed: Vec<Option<&'static Tensor>>,
}

impl Plan {
    /// Empty tables for a run of a function with `n` values: the spare ones when free.
    pub(crate) fn take_frame(&self, n: usize) -> Frame {
        let spare = self.spare.try_lock().ok().and_then(|mut s| s.take());
        match spare {
            Some(f) if f.slots.len() == n && f.borrowed.len() == n => f,
            _ => Frame {
                slots: (0..n).map(|_| Slot::default()).collect(),
                borrowed: vec![None; n],
            },
        }
    }

    /// Keeps a run's tables for the next run; `slots` must be emptied already.
    pub(crate) fn keep_frame(&self, f: Frame) {
        if let Ok(mut spare) = self.spare.try_lock() {
            *spare = Some(f);
        }
    }
}

/// A cluster node's identity for the policy and the caches.
pub(crate) struct ClusterPlan {
    /// `scope/cluster_N`: the key of its policy record and statistics.
    pub(crate) id: Arc<str>,
    /// Its parameter types, `f32[2,6],f32[3,6]`: the policy's shape instance.
    pub(crate) signature: Arc<str>,
    /// Its in-memory cache key on the runtime's backend; `None` without a backend.
    pub(crate) content: Option<String>,
}

impl Runtime {
    /// `f` planned for repeated runs on this runtime (see [`PlannedFunc`]).
    pub fn plan_func(&self, f: Arc<Func>) -> PlannedFunc {
        PlannedFunc {
            plan: self.plan(&f.name, &f, true),
            func: f,
            owner: Arc::downgrade(&self.inner),
        }
    }

    /// Whether `p` was planned by this runtime (its cache keys name this backend).
    pub(crate) fn owns(&self, p: &PlannedFunc) -> bool {
        std::ptr::eq(p.owner.as_ptr(), Arc::as_ptr(&self.inner))
    }

    /// The plan of `f` run under `scope` (its name, or a region's path, `control.rs`);
    /// `plan_ops` also plans its plain ops (for a region, or a function, run many times).
    pub(crate) fn plan(&self, scope: &str, f: &Func, plan_ops: bool) -> Plan {
        let backend = self.inner.backend.as_ref().map(|b| b.name());
        let clusters = f
            .insts
            .iter()
            .map(|inst| {
                let Op::Cluster(c) = &inst.op else {
                    return None;
                };
                let id = format!("{scope}/{}", c.name);
                let signature: Vec<String> =
                    c.body.param_types().iter().map(|t| t.to_string()).collect();
                let content = backend
                    .map(|name| remembered_content_key(&mut lock(&self.inner.state), &id, c, name));
                Some(ClusterPlan {
                    id: id.into(),
                    signature: signature.join(",").into(),
                    content,
                })
            })
            .collect();
        let ops = match plan_ops {
            true => f.insts.iter().map(|inst| self.plan_op(f, inst)).collect(),
            false => Vec::new(),
        };
        let regions = f
            .insts
            .iter()
            .map(|inst| self.plan_regions(scope, f, inst))
            .collect();
        Plan {
            uses: last_uses(f),
            clusters,
            ops,
            regions,
            scalar_cond: None,
            spare: Mutex::new(None),
        }
    }

    /// The plans of `inst`'s regions (see [`Plan::regions`]), each run under its path
    /// (`scope/%w.cond`, `scope/%w.body`, `scope/%c.branchK`).
    fn plan_regions(&self, scope: &str, f: &Func, inst: &Inst) -> Vec<Plan> {
        let at = match inst.results.first() {
            Some(&r) => format!("{scope}/%{}", f.value(r).name),
            None => format!("{scope}/%?"),
        };
        match &inst.op {
            Op::While(w) => {
                let mut cond = self.plan(&format!("{at}.cond"), &w.cond, true);
                cond.scalar_cond = ScalarCond::new(&w.cond);
                vec![cond, self.plan(&format!("{at}.body"), &w.body, true)]
            }
            Op::Conditional(c) => (c.branches.iter().enumerate())
                .map(|(k, g)| self.plan(&format!("{at}.branch{k}"), g, true))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `inst` planned for the interpreter, when it is a plain op with one result (`None`
    /// for the others, and where the interpreter refuses: those run through `eval`, which
    /// reports the error where it happens).
    fn plan_op(&self, f: &Func, inst: &Inst) -> Option<PlannedOp> {
        if let Op::Cluster(_) | Op::While(_) | Op::Conditional(_) | Op::Constant(_) = inst.op {
            return None;
        }
        let [r] = inst.results[..] else {
            return None;
        };
        let args: Vec<&kiln_ir::TensorType> = inst.args.iter().map(|&a| f.ty(a)).collect();
        self.inner.interp.plan(&inst.op, &args, f.ty(r)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CpuBackend, RuntimeOptions};
    use kiln_ir::Tensor;

    fn compiling_runtime() -> Runtime {
        let flags = kiln_flags::Flags {
            lazy_compilation: false,
            min_cluster_size: 1,
            ..kiln_flags::Flags::default()
        };
        let opts = RuntimeOptions::from_flags(&flags).unwrap();
        Runtime::new(Some(Arc::new(CpuBackend::new(&flags))), opts).unwrap()
    }

    fn clustered() -> Arc<Func> {
        let mut f = kiln_ir::parse_func(
            "func @f(%x: f32[5], %w: f32[5]) -> f32[5] {\n  %a = mul %x, %w : f32[5]\n  %y = tanh %a : f32[5]\n  return %y\n}\n",
            "f.kir",
        )
        .unwrap();
        let flags = kiln_flags::Flags {
            min_cluster_size: 1,
            ..kiln_flags::Flags::default()
        };
        kiln_compiler::run_pipeline(&mut f, &kiln_compiler::Options::from_flags(&flags)).unwrap();
        assert!(
            f.insts.iter().any(|i| matches!(i.op, Op::Cluster(_))),
            "{f:?}"
        );
        Arc::new(f)
    }

    /// A function planned once runs compiled and gives the bits a per-call plan gives;
    /// its cluster keeps the id and statistics a per-call plan would use.
    #[test]
    fn planned_once_runs_as_planned_per_call() {
        let (rt, f) = (compiling_runtime(), clustered());
        let x = Tensor::from_f32([5], vec![0.5, -1.25, 3.0, -0.0, f32::NAN]).unwrap();
        let w = Tensor::from_f32([5], vec![2.0, 0.75, -1.5, 1.0, 1.0]).unwrap();
        let want = rt.run(&f, &[x.clone(), w.clone()]).unwrap();
        let p = rt.plan_func(f.clone());
        for _ in 0..3 {
            let got = rt.run_planned(&p, &[&x, &w]).unwrap();
            assert!(got[0].bit_eq(&want[0]), "{got:?} vs {want:?}");
        }
        let stats = rt.stats();
        assert_eq!(stats.len(), 1, "{stats:?}");
        let s = stats.values().next().unwrap();
        assert_eq!((s.compiles, s.compiled_runs), (1, 4), "{s:?}");
        // A bad argument is still refused, naming the function.
        let short = Tensor::from_f32([4], vec![0.0; 4]).unwrap();
        let e = rt.run_planned(&p, &[&short, &w]).unwrap_err().to_string();
        assert!(e.contains("@f: argument 0 (%x) must be f32[5]"), "{e}");
    }

    /// A plan made by one runtime, run on another, is planned there per call: same bits,
    /// and the other runtime's caches and statistics are its own.
    #[test]
    fn a_plan_from_another_runtime_is_planned_again() {
        let (a, b, f) = (compiling_runtime(), compiling_runtime(), clustered());
        let x = Tensor::from_f32([5], vec![1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let p = a.plan_func(f.clone());
        assert!(a.owns(&p) && !b.owns(&p));
        let got = b.run_planned(&p, &[&x, &x]).unwrap();
        let want = a.run_planned(&p, &[&x, &x]).unwrap();
        assert!(got[0].bit_eq(&want[0]));
        let compiled = |rt: &Runtime| rt.stats().values().map(|s| s.compiled_runs).sum::<u64>();
        assert_eq!((compiled(&a), compiled(&b)), (1, 1));
    }
}
