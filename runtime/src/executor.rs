//! The executor: runs a clustered function. Plain ops run on the interpreter; every cluster
//! node goes through the compile policy and the caches, and runs compiled or on the
//! fallback path. Intermediates are freed after their last use. A compile or a compiled run
//! that fails is logged and answered by the fallback, so the user always gets a result.

use crate::backend::{Backend, CompileFailure, DeviceMemory, Executable};
use crate::keys::{content_key, key_text};
use crate::persistent::{cache_key, Lookup, PersistentCache};
use crate::policy::{compiled, decide, Action, ClusterFacts, Instance, Outcome, PolicyConfig};
use crate::stats::{human, ClusterStats, TransferStats};
pub use crate::values::Placed;
use crate::values::{Arg, Slot, Transfers, Values};
use crate::RuntimeError;
use kiln_flags::{vlog, Flags};
use kiln_interp::{last_uses, Interpreter, LastUse};
use kiln_ir::{Cluster, Func, Op, Tensor, TensorType, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How the runtime is set up; [`RuntimeOptions::from_flags`] gives TF's behaviour.
#[derive(Clone)]
pub struct RuntimeOptions {
    /// When to compile.
    pub policy: PolicyConfig,
    /// Threads for the interpreter.
    pub threads: usize,
    /// Background compile threads for `--tf_xla_async_compilation`.
    pub async_workers: usize,
    /// The validated persistent cache, if one is configured.
    pub persistent: Option<PersistentCache>,
    /// The flags (logging, determinism).
    pub flags: Flags,
}

impl RuntimeOptions {
    /// Options from the flags; validates the persistent cache directory if one is set.
    pub fn from_flags(flags: &Flags) -> Result<RuntimeOptions, RuntimeError> {
        // The flag parser enforces this; flags built in code must too.
        if flags.cpu_num_threads > kiln_flags::MAX_CPU_THREADS {
            return Err(RuntimeError::Invalid(format!(
                "--xla_cpu_num_threads={}: at most {} threads",
                flags.cpu_num_threads,
                kiln_flags::MAX_CPU_THREADS
            )));
        }
        let persistent = match &flags.persistent_cache_dir {
            Some(dir) => Some(PersistentCache::open(dir)?),
            None => None,
        };
        Ok(RuntimeOptions {
            policy: PolicyConfig::from_flags(flags),
            threads: flags.cpu_threads(),
            async_workers: 1,
            persistent,
            flags: flags.clone(),
        })
    }
}

/// Per-cluster bookkeeping.
#[derive(Default)]
struct ClusterRecord {
    facts: ClusterFacts,
    instances: HashMap<String, Instance>,
    stats: ClusterStats,
    /// The cluster's fallback past the transcendental-op cap was reported (once).
    warned_math_cap: bool,
}

/// In the reason a backend gives for refusing a kernel past
/// `kiln_compiler::kernel::MAX_MATH_OPS` ("300 transcendental ops (at most 256 are
/// compiled per kernel)"): that fallback is a silent performance cliff, so it is a warning.
const MATH_CAP_REASON: &str = "transcendental ops (at most";

#[derive(Default)]
struct State {
    clusters: BTreeMap<String, ClusterRecord>,
    /// Executables by content key (cluster text + backend).
    memory: HashMap<String, Arc<dyn Executable>>,
    /// Content keys already computed, by cluster id: each with the body it was computed
    /// for. Printing and hashing a body costs microseconds on every call; comparing it with
    /// the remembered body costs far less, and a different body (a re-traced function
    /// under the same name) still gets its own key. Bodies are compared bit for bit
    /// ([`Func::bit_eq`]): a body whose constant is `-0.0` where the remembered one has
    /// `0.0` computes other bits, and a NaN constant must still match itself.
    content_keys: HashMap<String, Vec<(Func, String)>>,
    in_flight: usize,
    total_compile_time: Duration,
}

struct Inner {
    interp: Interpreter,
    backend: Option<Arc<dyn Backend>>,
    /// The backend's device memory, when it has its own.
    memory: Option<Arc<dyn DeviceMemory>>,
    opts: RuntimeOptions,
    state: Mutex<State>,
    transfers: Transfers,
    idle: Condvar,
    pool: Option<std::sync::mpsc::SyncSender<Box<dyn FnOnce() + Send>>>,
}

/// Runs clustered functions with lazy / async / deferred compilation and caching.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = self.inner.backend.as_ref().map(|b| b.name().to_string());
        write!(f, "Runtime(backend: {backend:?})")
    }
}

impl Runtime {
    /// A runtime compiling with `backend` (`None`: every cluster runs the fallback).
    pub fn new(
        backend: Option<Arc<dyn Backend>>,
        opts: RuntimeOptions,
    ) -> Result<Runtime, RuntimeError> {
        let interp = Interpreter::new(opts.threads)?;
        let pool = (opts.policy.asynchronous && opts.async_workers > 0)
            .then(|| start_pool(opts.async_workers));
        Ok(Runtime {
            inner: Arc::new(Inner {
                interp,
                memory: backend.as_ref().and_then(|b| b.memory()),
                backend,
                transfers: Transfers::new(opts.flags.clone()),
                opts,
                state: Mutex::new(State::default()),
                idle: Condvar::new(),
                pool,
            }),
        })
    }

    /// The interpreter the fallback path uses.
    pub fn interpreter(&self) -> &Interpreter {
        &self.inner.interp
    }

    /// Statistics per cluster, keyed `<function>/<cluster>`.
    pub fn stats(&self) -> BTreeMap<String, ClusterStats> {
        lock(&self.inner.state)
            .clusters
            .iter()
            .map(|(k, r)| (k.clone(), r.stats))
            .collect()
    }

    /// Blocks until no background compile is running (tests, benchmarks, shutdown).
    pub fn wait_for_compiles(&self) {
        let mut st = lock(&self.inner.state);
        while st.in_flight > 0 {
            st = self.inner.idle.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Runs `f` (possibly containing cluster nodes) on `args`.
    pub fn run(&self, f: &Func, args: &[Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
        let refs: Vec<&Tensor> = args.iter().collect();
        self.run_refs(f, &refs)
    }

    /// Host ↔ device copies made so far (all zero without a device backend).
    pub fn transfers(&self) -> TransferStats {
        self.inner.transfers.stats()
    }

    /// [`Runtime::run`] on borrowed arguments (e.g. the caller's tensors followed by state
    /// inputs it adds, without copying the caller's).
    ///
    /// With a device backend ([`Backend::memory`]), compiled clusters leave their outputs on
    /// the device and the next compiled cluster reads them there; a value is copied to the
    /// host only when a plain op, a fallback cluster or the caller needs it, and a graph
    /// input only when a compiled cluster reads it — each at most once per run.
    pub fn run_refs(&self, f: &Func, args: &[&Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
        let args: Vec<Arg> = args.iter().map(|&t| Arg::Host(t)).collect();
        self.execute(&f.name, f, &args, false)?
            .into_iter()
            .map(|p| match p {
                Placed::Host(t) => Ok(t),
                Placed::Device(_) => Err(RuntimeError::Invalid(
                    "a result was left on the device".to_string(),
                )),
            })
            .collect()
    }

    /// Runs `f` on arguments that may already be in the backend's device memory (see
    /// [`Runtime::place`]) and leaves results that a compiled cluster produced there, like
    /// JAX arrays committed to a device: nothing crosses the bus that the graph does not
    /// read on the host. [`Runtime::fetch`] copies a result back; [`Runtime::synchronize`]
    /// waits for the device.
    pub fn run_placed(&self, f: &Func, args: &[Placed]) -> Result<Vec<Placed>, RuntimeError> {
        let args: Vec<Arg> = args
            .iter()
            .map(|p| match p {
                Placed::Host(t) => Arg::Host(t),
                Placed::Device(d) => Arg::Device(d.clone()),
            })
            .collect();
        self.execute(&f.name, f, &args, true)
    }

    /// `t` in the backend's device memory (one counted copy), or on the host when the
    /// backend has none (`jax.device_put`).
    pub fn place(&self, t: &Tensor) -> Result<Placed, RuntimeError> {
        let Some(mem) = &self.inner.memory else {
            return Ok(Placed::Host(t.clone()));
        };
        let d = mem.upload(t).map_err(|e| {
            RuntimeError::Invalid(format!("copying a {} to the device failed: {e}", t.ty()))
        })?;
        self.inner
            .transfers
            .count("a placed argument", d.ty(), true);
        Ok(Placed::Device(d))
    }

    /// `p` on the host (one counted copy for a device value).
    pub fn fetch(&self, p: &Placed) -> Result<Tensor, RuntimeError> {
        match p {
            Placed::Host(t) => Ok(t.clone()),
            Placed::Device(d) => {
                let mem = self.inner.memory.as_ref().ok_or_else(|| {
                    RuntimeError::Invalid("a device value, but the backend has no device".into())
                })?;
                let t = mem.download(d.as_ref()).map_err(|e| {
                    RuntimeError::Invalid(format!(
                        "copying a {} back from the device failed: {e}",
                        d.ty()
                    ))
                })?;
                self.inner
                    .transfers
                    .count("a fetched result", d.ty(), false);
                Ok(t)
            }
        }
    }

    /// Waits until the device has finished everything enqueued (a no-op on the host).
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        match &self.inner.memory {
            Some(mem) => mem
                .synchronize()
                .map_err(|e| RuntimeError::Invalid(format!("synchronising the device: {e}"))),
            None => Ok(()),
        }
    }

    /// Runs `f`; `scope` names it in cluster ids (`scope/cluster_0`): the function's name,
    /// or for a region of a `while` / `conditional` the path to it (see `control.rs`).
    pub(crate) fn execute(
        &self,
        scope: &str,
        f: &Func,
        args: &[Arg<'_>],
        keep_on_device: bool,
    ) -> Result<Vec<Placed>, RuntimeError> {
        let n = f.params.len();
        if args.len() != n {
            return Err(RuntimeError::Invalid(format!(
                "@{} takes {n} arguments, got {}",
                f.name,
                args.len()
            )));
        }
        let mut slots: Vec<Slot> = (0..f.num_values()).map(|_| Slot::default()).collect();
        for (i, (&p, a)) in f.params.iter().zip(args).enumerate() {
            let ty = match a {
                Arg::Host(t) => t.ty(),
                Arg::Device(d) => {
                    if self.inner.memory.is_none() {
                        return Err(RuntimeError::Invalid(format!(
                            "@{}: argument {i} (%{}) is a device value, but the runtime has no device backend",
                            f.name,
                            f.value(p).name
                        )));
                    }
                    slots[p.0 as usize].device = Some(d.clone());
                    d.ty().clone()
                }
            };
            if *f.ty(p) != ty {
                return Err(RuntimeError::Invalid(format!(
                    "@{}: argument {i} (%{}) must be {}, got {ty}",
                    f.name,
                    f.value(p).name,
                    f.ty(p),
                )));
            }
        }
        let uses = last_uses(f);
        let mut borrowed: Vec<Option<&Tensor>> = vec![None; f.num_values()];
        for (&p, a) in f.params.iter().zip(args) {
            if let Arg::Host(t) = a {
                borrowed[p.0 as usize] = Some(*t);
            }
        }
        let mut vals = Values {
            f,
            borrowed,
            slots,
            memory: self.inner.memory.as_ref(),
            transfers: &self.inner.transfers,
        };
        for (i, inst) in f.insts.iter().enumerate() {
            let outs = match &inst.op {
                Op::Cluster(c) => self.run_cluster(scope, c, &inst.args, &mut vals)?,
                // Regions run here, not in the interpreter, so their clusters run compiled.
                Op::While(_) | Op::Conditional(_) => {
                    let operands = vals.on_host(&inst.args)?;
                    let outs = self.run_control(scope, f, inst, &operands)?;
                    outs.into_iter().map(Slot::host).collect()
                }
                // Read in place from the function (a frozen graph's weights are not copied
                // per call); a slot of its own only if a device copy is made.
                Op::Constant(t) => {
                    vals.borrowed[inst.results[0].0 as usize] = Some(&**t);
                    vec![Slot::default()]
                }
                // Any other op on the interpreter.
                op => {
                    let r = inst.results[0];
                    let operands = vals.on_host(&inst.args)?;
                    let types: Vec<TensorType> =
                        inst.results.iter().map(|&v| f.ty(v).clone()).collect();
                    let ts = self
                        .inner
                        .interp
                        .eval_all(op, &operands, &types)
                        .map_err(|e| {
                            RuntimeError::Interp(kiln_interp::InterpError::At {
                                func: f.name.clone(),
                                value: f.value(r).name.clone(),
                                source: Box::new(e),
                            })
                        })?;
                    ts.into_iter().map(Slot::host).collect()
                }
            };
            for (&r, t) in inst.results.iter().zip(outs) {
                if uses[r.0 as usize] != LastUse::Unused {
                    vals.slots[r.0 as usize] = t;
                }
            }
            for a in &inst.args {
                if uses[a.0 as usize] == LastUse::Inst(i) {
                    vals.slots[a.0 as usize] = Slot::default();
                }
            }
        }
        if !keep_on_device {
            // The graph's outputs go back to the host (a boundary copy for device values).
            vals.on_host(&f.results)?;
        }
        f.results
            .iter()
            .enumerate()
            .map(|(k, &r)| {
                if let Some(p) = f.params.iter().position(|&q| q == r) {
                    return Ok(match &args[p] {
                        Arg::Host(t) => Placed::Host((*t).clone()),
                        Arg::Device(d) => Placed::Device(d.clone()),
                    });
                }
                let again = f.results[k + 1..].contains(&r);
                let slot = &mut vals.slots[r.0 as usize];
                if keep_on_device {
                    if let Some(d) = &slot.device {
                        return Ok(Placed::Device(d.clone()));
                    }
                }
                let t = match vals.borrowed[r.0 as usize] {
                    Some(t) => Some(t.clone()),
                    None if again => slot.host.clone(),
                    None => slot.host.take(),
                };
                t.map(Placed::Host).ok_or_else(|| {
                    RuntimeError::Invalid(format!("returned %{} was not computed", f.value(r).name))
                })
            })
            .collect()
    }

    /// One execution of a cluster node whose operands are `args`.
    fn run_cluster(
        &self,
        graph: &str,
        c: &Cluster,
        args: &[Value],
        vals: &mut Values<'_>,
    ) -> Result<Vec<Slot>, RuntimeError> {
        let id = format!("{graph}/{}", c.name);
        let signature: Vec<String> = c.body.param_types().iter().map(|t| t.to_string()).collect();
        let signature = signature.join(",");
        let Some(exe) = self.route(&id, &signature, c) else {
            return self.fallback(&id, c, &vals.on_host(args)?);
        };
        let failure = match &self.inner.memory {
            Some(_) => {
                let inputs = match vals.on_device(args) {
                    Ok(inputs) => inputs,
                    Err(e) => {
                        // A copy that failed (device memory is full) is not the
                        // executable's fault: this run falls back, the next may not.
                        tracing::error!(target: "xla_compilation_cache", "{id}: {e}; running the fallback");
                        return self.fallback(&id, c, &vals.on_host(args)?);
                    }
                };
                match exe.run_on_device(&inputs).and_then(|outs| {
                    check_outputs(c, &outs.iter().map(|d| d.ty().clone()).collect::<Vec<_>>())?;
                    Ok(outs)
                }) {
                    Ok(outs) => {
                        self.record_compiled_run(&id);
                        return Ok(outs.into_iter().map(Slot::device).collect());
                    }
                    Err(e) => e,
                }
            }
            None => {
                let inputs = vals.on_host(args)?;
                match exe.run(&inputs).and_then(|outs| {
                    check_outputs(c, &outs.iter().map(Tensor::ty).collect::<Vec<_>>())?;
                    Ok(outs)
                }) {
                    Ok(outs) => {
                        self.record_compiled_run(&id);
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
                .get_mut(&signature)
            {
                inst.state = crate::policy::InstanceState::FallbackForever;
            }
        }
        self.fallback(&id, c, &vals.on_host(args)?)
    }

    /// What the policy says to run for `c` now: its executable (compiling it, or taking it
    /// from a cache, if the policy says so), or `None` for the fallback path. Starts an
    /// asynchronous compile when the policy asks for one.
    fn route(&self, id: &str, signature: &str, c: &Cluster) -> Option<Arc<dyn Executable>> {
        let inner = &self.inner;
        let backend = inner.backend.clone()?;
        let (content, action) = {
            let mut st = lock(&inner.state);
            let content = remembered_content_key(&mut st, id, c, backend.name());
            let rec = st.clusters.entry(id.to_string()).or_default();
            let facts = rec.facts;
            let inst = rec.instances.entry(signature.to_string()).or_default();
            (content, decide(&inner.opts.policy, &facts, inst))
        };
        match action {
            Action::Fallback => None,
            Action::RunCompiled => {
                let known = lock(&inner.state).memory.get(&content).cloned();
                // A body this instance has not compiled (a function re-traced under the
                // same names): compile it now rather than run the fallback forever.
                known.or_else(|| self.obtain(id, signature, c, &backend, &content))
            }
            Action::CompileAndRun => self.obtain(id, signature, c, &backend, &content),
            Action::StartAsyncCompile => {
                let me = self.clone();
                let (c2, backend2) = (c.clone(), backend.clone());
                let (id2, sig2) = (id.to_string(), signature.to_string());
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
        id: &str,
        c: &Cluster,
        inputs: &[&Tensor],
    ) -> Result<Vec<Slot>, RuntimeError> {
        let out = self.inner.interp.run_refs(&c.body, inputs)?.0;
        lock(&self.inner.state)
            .clusters
            .entry(id.to_string())
            .or_default()
            .stats
            .fallback_runs += 1;
        Ok(out.into_iter().map(Slot::host).collect())
    }

    fn record_compiled_run(&self, id: &str) {
        let mut st = lock(&self.inner.state);
        let rec = st.clusters.entry(id.to_string()).or_default();
        rec.stats.compiled_runs += 1;
        rec.facts.compiled_runs += 1;
    }

    /// An executable for `c`: from memory, from the persistent cache, or compiled now.
    /// Records the outcome in the policy state. `None` means use the fallback.
    fn obtain(
        &self,
        id: &str,
        signature: &str,
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
            let rec = st.clusters.entry(id.to_string()).or_default();
            update(&mut rec.stats);
            let mut facts = rec.facts;
            let inst = rec.instances.entry(signature.to_string()).or_default();
            compiled(&inner.opts.policy, &mut facts, inst, outcome);
            rec.facts = facts;
        };
        if let Some(exe) = lock(&inner.state).memory.get(content).cloned() {
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
                    let rec = st.clusters.entry(id.to_string()).or_default();
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
                            let rec = st.clusters.entry(id.to_string()).or_default();
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

/// Checks that a compiled run returned the cluster's result types.
fn check_outputs(c: &Cluster, got: &[TensorType]) -> Result<(), String> {
    let want = &c.body.results;
    if got.len() != want.len() {
        return Err(format!(
            "it returned {} outputs, the cluster has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, &r)) in got.iter().zip(want).enumerate() {
        let w = c.body.ty(r);
        if g != w {
            return Err(format!("output {i} is {g}, the cluster's result is {w}"));
        }
    }
    Ok(())
}

/// The in-memory cache key: the cluster's full text (shapes included) and the backend.
/// Bodies remembered per cluster id in [`State::content_keys`] (the oldest is forgotten).
const MAX_BODIES_PER_ID: usize = 4;

/// [`content_key`] of `c`, remembered per cluster id with the body it belongs to.
fn remembered_content_key(st: &mut State, id: &str, c: &Cluster, backend: &str) -> String {
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

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A bounded pool of compile threads fed through a channel (jobs queue beyond its size).
fn start_pool(workers: usize) -> std::sync::mpsc::SyncSender<Box<dyn FnOnce() + Send>> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Box<dyn FnOnce() + Send>>(1024);
    let rx = Arc::new(Mutex::new(rx));
    for i in 0..workers {
        let rx = rx.clone();
        let _ = std::thread::Builder::new()
            .name(format!("kiln-compile-{i}"))
            .spawn(move || loop {
                let job = match rx.lock() {
                    Ok(r) => r.recv(),
                    Err(_) => return,
                };
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            });
    }
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Top-level constants are read in place from the function; returned, each result is
    /// its own copy with the constant's bits.
    #[test]
    fn constants_outside_clusters_are_read_in_place_and_returned() {
        let f = kiln_ir::parse_func(
            "func @c(%x: f32[3]) -> (f32[3], f32[3], f32[3], f32[3]) {\n  %w = constant [1.5, -0.0, nan] : f32[3]\n  %unused = constant 2.0 : f32[3]\n  %y = mul %x, %w : f32[3]\n  %z = add %y, %w : f32[3]\n  return %y, %w, %z, %w\n}\n",
            "c.kir",
        )
        .unwrap();
        let opts = RuntimeOptions {
            policy: crate::policy::PolicyConfig::default(),
            threads: 1,
            async_workers: 1,
            persistent: None,
            flags: kiln_flags::Flags::default(),
        };
        let rt = Runtime::new(None, opts).unwrap();
        let x = Tensor::from_f32([3], vec![2.0, 3.0, 4.0]).unwrap();
        let out = rt.run(&f, &[x]).unwrap();
        let w = Tensor::from_f32([3], vec![1.5, -0.0, f32::NAN]).unwrap();
        let want = [
            Tensor::from_f32([3], vec![3.0, -0.0, f32::NAN]).unwrap(),
            w.clone(),
            Tensor::from_f32([3], vec![4.5, -0.0, f32::NAN]).unwrap(),
            w,
        ];
        assert_eq!(out.len(), 4);
        for (k, (got, want)) in out.iter().zip(&want).enumerate() {
            assert!(got.bit_eq(want), "result {k}: {got:?} vs {want:?}");
        }
    }
}
