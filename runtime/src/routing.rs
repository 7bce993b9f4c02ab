//! One cluster node's run: the compile policy decides, the in-memory and persistent
//! caches or the backend supply the executable, and the fallback (the cluster's region on
//! the interpreter) answers whenever there is none or it fails.

use crate::backend::{Backend, CompileFailure, Executable};
use crate::executor::{lock, Runtime, State, MATH_CAP_REASON};
use crate::keys::{content_key, key_text};
use crate::persistent::{cache_key, Lookup};
use crate::plan::ClusterPlan;
use crate::policy::{compiled, decide, Action, Outcome};
use crate::stats::{human, ClusterStats};
use crate::values::{Slot, Values};
use crate::RuntimeError;
use kiln_flags::vlog;
use kiln_ir::{Cluster, DType, Tensor, TensorType, Value};
use std::sync::Arc;
use std::time::Instant;

impl Runtime {
    /// One execution of cluster node `c` (planned as `plan`) whose operands are `args`.
    pub(crate) fn run_cluster(
        &self,
        plan: &ClusterPlan,
        c: &Cluster,
        args: &[Value],
        vals: &mut Values<'_>,
    ) -> Result<Vec<Slot>, RuntimeError> {
        let (id, signature) = (&plan.id, &plan.signature);
        let Some(exe) = self.route(plan, c) else {
            return self.fallback(id, c, &vals.on_host(args)?);
        };
        let failure = match &self.inner.memory {
            Some(_) => {
                let inputs = match vals.on_device(args) {
                    Ok(inputs) => inputs,
                    Err(e) => {
                        // A copy that failed (device memory is full) is not the
                        // executable's fault: this run falls back, the next may not.
                        tracing::error!(target: "xla_compilation_cache", "{id}: {e}; running the fallback");
                        return self.fallback(id, c, &vals.on_host(args)?);
                    }
                };
                match exe.run_on_device(&inputs).and_then(|outs| {
                    check_outputs(c, outs.iter().map(|d| (d.ty().dtype, &d.ty().shape[..])))?;
                    Ok(outs)
                }) {
                    Ok(outs) => {
                        self.record_compiled_run(id);
                        return Ok(outs.into_iter().map(Slot::device).collect());
                    }
                    Err(e) => e,
                }
            }
            None => {
                let inputs = vals.on_host(args)?;
                match exe.run(&inputs).and_then(|outs| {
                    check_outputs(c, outs.iter().map(|t| (t.dtype(), t.shape())))?;
                    Ok(outs)
                }) {
                    Ok(outs) => {
                        self.record_compiled_run(id);
                        return Ok(outs.into_iter().map(Slot::host).collect());
                    }
                    Err(e) => e,
                }
            }
        };
        tracing::error!(target: "xla_compilation_cache", "compiled {id} failed at run time ({failure}); using the fallback for this signature from now on");
        {
            let mut st = lock(&self.inner.state);
            if let Some(inst) = st
                .clusters
                .entry(id.clone())
                .or_default()
                .instances
                .get_mut(&**signature)
            {
                inst.state = crate::policy::InstanceState::FallbackForever;
            }
        }
        self.fallback(id, c, &vals.on_host(args)?)
    }

    /// What the policy says to run for `c` now: its executable (compiling it, or taking it
    /// from a cache, if the policy says so), or `None` for the fallback path. Starts an
    /// asynchronous compile when the policy asks for one.
    fn route(&self, plan: &ClusterPlan, c: &Cluster) -> Option<Arc<dyn Executable>> {
        let inner = &self.inner;
        let backend = inner.backend.clone()?;
        let (id, signature) = (&plan.id, &plan.signature);
        let content = plan.content.as_deref()?;
        let (action, known) = {
            let mut st = lock(&inner.state);
            let rec = st.clusters.entry(id.clone()).or_default();
            let facts = rec.facts;
            let inst = rec.instances.entry(signature.clone()).or_default();
            let action = decide(&inner.opts.policy, &facts, inst);
            let known = (action == Action::RunCompiled)
                .then(|| st.memory.get(content).cloned())
                .flatten();
            (action, known)
        };
        match action {
            Action::Fallback => None,
            // A body this instance has not compiled (a function re-traced under the same
            // names): compile it now rather than run the fallback forever.
            Action::RunCompiled => {
                known.or_else(|| self.obtain(id, signature, c, &backend, content))
            }
            Action::CompileAndRun => self.obtain(id, signature, c, &backend, content),
            Action::StartAsyncCompile => {
                let me = self.clone();
                let (c2, backend2) = (c.clone(), backend.clone());
                let (id2, sig2) = (id.clone(), signature.clone());
                let content = content.to_string();
                lock(&inner.state).in_flight += 1;
                let job: Box<dyn FnOnce() + Send> = Box::new(move || {
                    me.obtain(&id2, &sig2, &c2, &backend2, &content);
                    let mut st = lock(&me.inner.state);
                    st.in_flight -= 1;
                    me.inner.idle.notify_all();
                });
                match &inner.pool {
                    Some(pool) => {
                        if pool.send(job).is_err() {
                            lock(&inner.state).in_flight -= 1;
                        }
                    }
                    None => job(),
                }
                None
            }
        }
    }

    /// The fallback path: the cluster's region, op by op, on the interpreter.
    fn fallback(
        &self,
        id: &Arc<str>,
        c: &Cluster,
        inputs: &[&Tensor],
    ) -> Result<Vec<Slot>, RuntimeError> {
        let out = self.inner.interp.run_refs(&c.body, inputs)?.0;
        lock(&self.inner.state)
            .clusters
            .entry(id.clone())
            .or_default()
            .stats
            .fallback_runs += 1;
        Ok(out.into_iter().map(Slot::host).collect())
    }

    fn record_compiled_run(&self, id: &Arc<str>) {
        let mut st = lock(&self.inner.state);
        let rec = st.clusters.entry(id.clone()).or_default();
        rec.stats.compiled_runs += 1;
        rec.facts.compiled_runs += 1;
    }

    /// An executable for `c`: from memory, from the persistent cache, or compiled now.
    /// Records the outcome in the policy state. `None` means use the fallback.
    fn obtain(
        &self,
        id: &Arc<str>,
        signature: &Arc<str>,
        c: &Cluster,
        backend: &Arc<dyn Backend>,
        content: &str,
    ) -> Option<Arc<dyn Executable>> {
        let inner = &self.inner;
        let flags = &inner.opts.flags;
        let record = |outcome: Outcome,
                      exe: Option<&Arc<dyn Executable>>,
                      update: &dyn Fn(&mut ClusterStats)| {
            let mut st = lock(&inner.state);
            if let Some(exe) = exe {
                st.memory.insert(content.to_string(), exe.clone());
            }
            let rec = st.clusters.entry(id.clone()).or_default();
            update(&mut rec.stats);
            let mut facts = rec.facts;
            let inst = rec.instances.entry(signature.clone()).or_default();
            compiled(&inner.opts.policy, &mut facts, inst, outcome);
            rec.facts = facts;
        };
        // (The lock is released before `record` takes it again.)
        let in_memory = lock(&inner.state).memory.get(content).cloned();
        if let Some(exe) = in_memory {
            record(Outcome::CacheHit, None, &|s| s.memory_hits += 1);
            return Some(exe);
        }
        let disk_key = cache_key(&key_text(&c.body), backend.name(), &backend.target_key());
        if let Some(disk) = &inner.opts.persistent {
            let start_load = Instant::now();
            match disk.get(&disk_key.0, &disk_key.1, backend.name()) {
                Lookup::Hit(bytes) => match backend.load(c, &bytes) {
                    Ok(exe) => {
                        let took = start_load.elapsed();
                        vlog!(
                            flags,
                            "xla_compilation_cache",
                            1,
                            "loaded {id} from the persistent cache ({})",
                            disk.dir().display()
                        );
                        record(Outcome::CacheHit, Some(&exe), &|s| {
                            s.disk_hits += 1;
                            s.load_time += took;
                        });
                        return Some(exe);
                    }
                    Err(e) => {
                        tracing::warn!(target: "xla_compilation_cache", "persistent cache entry {} for {id} cannot be loaded ({e}); recompiling and rewriting it", disk_key.0)
                    }
                },
                Lookup::Corrupt(why) => {
                    tracing::warn!(target: "xla_compilation_cache", "ignoring persistent cache entry {} for {id}: {why}; recompiling and rewriting it", disk_key.0)
                }
                Lookup::Miss => {}
            }
        }
        let start = Instant::now();
        let result = backend.compile(c);
        let took = start.elapsed();
        match result {
            Ok(exe) => {
                let (count, cumulative, total) = {
                    let mut st = lock(&inner.state);
                    st.total_compile_time += took;
                    let total = st.total_compile_time;
                    let rec = st.clusters.entry(id.clone()).or_default();
                    (rec.stats.compiles + 1, rec.stats.compile_time + took, total)
                };
                vlog!(
                    flags,
                    "xla_compilation_cache",
                    1,
                    "compiled {id} {count} times, compile time: {} us, cumulative: {} us ({} / {})",
                    took.as_micros(),
                    cumulative.as_micros(),
                    human(cumulative),
                    human(total)
                );
                if let (Some(disk), Some(bytes)) = (&inner.opts.persistent, exe.to_bytes()) {
                    if let Err(e) = disk.put(&disk_key.0, &disk_key.1, backend.name(), bytes) {
                        tracing::warn!(target: "xla_compilation_cache", "cannot write persistent cache entry for {id}: {e}");
                    }
                }
                record(Outcome::Compiled(took), Some(&exe), &|s| {
                    s.compiles += 1;
                    s.compile_time += took;
                });
                Some(exe)
            }
            Err(failure) => {
                match &failure {
                    CompileFailure::Unsupported(why) => {
                        vlog!(
                            flags,
                            "xla_compilation_cache",
                            1,
                            "{id} for [{signature}] runs on the fallback: {why}"
                        );
                        // Once per cluster, whatever its signatures.
                        let first = why.contains(MATH_CAP_REASON) && {
                            let mut st = lock(&inner.state);
                            let rec = st.clusters.entry(id.clone()).or_default();
                            !std::mem::replace(&mut rec.warned_math_cap, true)
                        };
                        if first {
                            tracing::warn!(target: "xla_compilation_cache", "{id} runs on the fallback, not compiled: {why}");
                        }
                    }
                    CompileFailure::Failed(why) => {
                        tracing::error!(target: "xla_compilation_cache", "compiling {id} for [{signature}] failed: {why}; using the fallback for this signature")
                    }
                }
                record(Outcome::Failed, None, &|s| s.compile_failures += 1);
                None
            }
        }
    }
}

/// Checks that a compiled run returned the cluster's result types, given as dtype and
/// shape of each output (no type is built unless one is wrong).
fn check_outputs<'t>(
    c: &Cluster,
    got: impl ExactSizeIterator<Item = (DType, &'t [usize])>,
) -> Result<(), String> {
    let want = &c.body.results;
    if got.len() != want.len() {
        return Err(format!(
            "it returned {} outputs, the cluster has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, ((dtype, shape), &r)) in got.zip(want).enumerate() {
        let w = c.body.ty(r);
        if dtype != w.dtype || !kiln_ir::same_shape(shape, &w.shape) {
            let g = TensorType::new(dtype, shape.to_vec());
            return Err(format!("output {i} is {g}, the cluster's result is {w}"));
        }
    }
    Ok(())
}

/// The in-memory cache key: the cluster's full text (shapes included) and the backend.
/// Bodies remembered per cluster id in [`State::content_keys`] (the oldest is forgotten).
const MAX_BODIES_PER_ID: usize = 4;

/// [`content_key`] of `c`, remembered per cluster id with the body it belongs to.
pub(crate) fn remembered_content_key(
    st: &mut State,
    id: &str,
    c: &Cluster,
    backend: &str,
) -> String {
    if let Some(known) = st.content_keys.get(id) {
        if let Some((_, key)) = known.iter().find(|(body, _)| body.bit_eq(&c.body)) {
            return key.clone();
        }
    }
    let key = content_key(c, backend);
    let known = st.content_keys.entry(id.to_string()).or_default();
    if known.len() >= MAX_BODIES_PER_ID {
        known.remove(0);
    }
    known.push((c.body.clone(), key.clone()));
    key
}
