//! What the executor works out once per function and then reuses on every run of it: when
//! each value dies, and each cluster node's id, shape signature and in-memory cache key.
//!
//! A top-level function gets its plan at each run (as before, once per call). A `while`
//! loop builds its condition's and body's plans once when it starts (`control.rs`), so an
//! iteration neither recomputes last uses nor formats, prints, hashes or compares the
//! body's clusters: a 5-step recurrent layer's clusters are resolved once, not five times.
//!
//! Deliberately not cached here: the policy's decision. It is asked on every run, so the
//! lazy rule (fallback twice, then compile), a failure that sends a signature to the
//! fallback for good, and the megamorphic counts behave exactly as at the top level.

use crate::executor::{lock, Runtime};
use crate::routing::remembered_content_key;
use kiln_interp::{last_uses, LastUse};
use kiln_ir::{Func, Op};

/// A function's run plan (see the module doc).
pub(crate) struct Plan {
    /// The scope the function runs under: its name, or a region's path (`control.rs`).
    pub(crate) scope: String,
    /// When each value can be freed, by value number.
    pub(crate) uses: Vec<LastUse>,
    /// Per instruction: a cluster node's routing facts; `None` for every other op.
    pub(crate) clusters: Vec<Option<ClusterPlan>>,
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
    /// The plan of `f` run under `scope` (its name, or a region's path, `control.rs`).
    pub(crate) fn plan(&self, scope: &str, f: &Func) -> Plan {
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
        Plan {
            scope: scope.to_string(),
            uses: last_uses(f),
            clusters,
        }
    }
}
