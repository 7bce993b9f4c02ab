//! What the executor works out once per function and then reuses on every run of it: when
//! each value dies, and each cluster node's id, shape signature and in-memory cache key.
//!
//! A top-level function gets its plan at each run (as before, once per call). A `while`
//! loop builds its condition's and body's plans once when it starts (`control.rs`), so an
//! iteration neither recomputes last uses nor formats, prints, hashes or compares the
//! body's clusters: a 5-step recurrent layer's clusters are resolved once, not five times.
//!
//! A loop's regions also plan their plain ops ([`kiln_interp::PlannedOp`]): each is
//! checked against its typing rule once, not on every iteration.
//!
//! Deliberately not cached here: the policy's decision. It is asked on every run, so the
//! lazy rule (fallback twice, then compile), a failure that sends a signature to the
//! fallback for good, and the megamorphic counts behave exactly as at the top level.

use crate::executor::{lock, Runtime};
use crate::routing::remembered_content_key;
use kiln_interp::{last_uses, LastUse, PlannedOp};
use kiln_ir::{Func, Op};

/// A function's run plan (see the module doc).
pub(crate) struct Plan {
    /// The scope the function runs under: its name, or a region's path (`control.rs`).
    pub(crate) scope: String,
    /// When each value can be freed, by value number.
    pub(crate) uses: Vec<LastUse>,
    /// Per instruction: a cluster node's routing facts; `None` for every other op.
    pub(crate) clusters: Vec<Option<ClusterPlan>>,
    /// Per instruction: a plain one-result op planned for its operand types, where the
    /// function is a loop's region (empty otherwise: a top-level function is planned per
    /// call, where planning its ops would cost what it saves).
    pub(crate) ops: Vec<Option<PlannedOp>>,
}

/// A cluster node's identity for the policy and the caches.
pub(crate) struct ClusterPlan {
    /// `scope/cluster_N`: the key of its policy record and statistics.
    pub(crate) id: String,
    /// Its parameter types, `f32[2,6],f32[3,6]`: the policy's shape instance.
    pub(crate) signature: String,
    /// Its in-memory cache key on the runtime's backend; `None` without a backend.
    pub(crate) content: Option<String>,
}

impl Runtime {
    /// The plan of `f` run under `scope` (its name, or a region's path, `control.rs`);
    /// `plan_ops` also plans its plain ops (for a region run many times).
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
                    id,
                    signature: signature.join(","),
                    content,
                })
            })
            .collect();
        let ops = match plan_ops {
            true => f.insts.iter().map(|inst| self.plan_op(f, inst)).collect(),
            false => Vec::new(),
        };
        Plan {
            scope: scope.to_string(),
            uses: last_uses(f),
            clusters,
            ops,
        }
    }

    /// `inst` planned for the interpreter, when it is a plain op with one result (`None`
    /// for the others, and where the interpreter refuses: those run through `eval`, which
    /// reports the error where it happens).
    fn plan_op(&self, f: &Func, inst: &kiln_ir::Inst) -> Option<PlannedOp> {
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
