//! The executor: runs a clustered function. Plain ops run on the interpreter; every cluster
//! node goes through the compile policy and the caches, and runs compiled or on the
//! fallback path. Intermediates are freed after their last use. A compile or a compiled run
//! that fails is logged and answered by the fallback, so the user always gets a result.

use crate::backend::{Backend, DeviceMemory, Executable};
use crate::persistent::PersistentCache;
use crate::plan::{Frame, Plan, PlannedFunc};
use crate::policy::{ClusterFacts, Instance, PolicyConfig};
use crate::stats::{ClusterStats, TransferStats};
pub use crate::values::Placed;
use crate::values::{Arg, Slot, Transfers, Values};
use crate::RuntimeError;
use kiln_flags::Flags;
use kiln_interp::{Interpreter, LastUse};
use kiln_ir::{Func, Op, Tensor, TensorType};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

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
pub(crate) struct ClusterRecord {
    pub(crate) facts: ClusterFacts,
    /// Per shape signature (shared with the plans that name it: no copy per call).
    pub(crate) instances: HashMap<Arc<str>, Instance>,
    pub(crate) stats: ClusterStats,
    /// The cluster's fallback past the transcendental-op cap was reported (once).
    pub(crate) warned_math_cap: bool,
}

/// In the reason a backend gives for refusing a kernel past
/// `kiln_compiler::kernel::MAX_MATH_OPS` ("300 transcendental ops (at most 256 are
/// compiled per kernel)"): that fallback is a silent performance cliff, so it is a warning.
pub(crate) const MATH_CAP_REASON: &str = "transcendental ops (at most";

#[derive(Default)]
pub(crate) struct State {
    /// Per cluster id (shared with the plans that name it: no copy per call).
    pub(crate) clusters: BTreeMap<Arc<str>, ClusterRecord>,
    /// Executables by content key (cluster text + backend).
    pub(crate) memory: HashMap<String, Arc<dyn Executable>>,
    /// Content keys already computed, by cluster id: each with the body it was computed
    /// for. Printing and hashing a body costs microseconds on every call; comparing it with
    /// the remembered body costs far less, and a different body (a re-traced function
    /// under the same name) still gets its own key. Bodies are compared bit for bit
    /// ([`Func::bit_eq`]): a body whose constant is `-0.0` where the remembered one has
    /// `0.0` computes other bits, and a NaN constant must still match itself.
    pub(crate) content_keys: HashMap<String, Vec<(Func, String)>>,
    pub(crate) in_flight: usize,
    pub(crate) total_compile_time: Duration,
}

pub(crate) struct Inner {
    pub(crate) interp: Interpreter,
    pub(crate) backend: Option<Arc<dyn Backend>>,
    /// The backend's device memory, when it has its own.
    pub(crate) memory: Option<Arc<dyn DeviceMemory>>,
    pub(crate) opts: RuntimeOptions,
    pub(crate) state: Mutex<State>,
    pub(crate) transfers: Transfers,
    pub(crate) idle: Condvar,
    pub(crate) pool: Option<std::sync::mpsc::SyncSender<Box<dyn FnOnce() + Send>>>,
}

/// Runs clustered functions with lazy / async / deferred compilation and caching.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
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
            .map(|(k, r)| (k.to_string(), r.stats))
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
        on_host(self.execute(&f.name, f, args, false)?)
    }

    /// [`Runtime::run_refs`] of a function planned beforehand ([`Runtime::plan_func`]):
    /// what a caller that runs one function many times uses, without the per-call plan.
    pub fn run_planned(
        &self,
        p: &PlannedFunc,
        args: &[&Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let args: Vec<Arg> = args.iter().map(|&t| Arg::Host(t)).collect();
        on_host(self.execute_planned_func(p, args, false)?)
    }

    /// [`Runtime::run_placed`] of a function planned beforehand ([`Runtime::plan_func`]).
    pub fn run_planned_placed(
        &self,
        p: &PlannedFunc,
        args: &[Placed],
    ) -> Result<Vec<Placed>, RuntimeError> {
        self.execute_planned_func(p, placed_args(args), true)
    }

    /// Runs `p` with its own plan when this runtime made it, else planned for this call.
    fn execute_planned_func(
        &self,
        p: &PlannedFunc,
        args: Vec<Arg<'_>>,
        keep_on_device: bool,
    ) -> Result<Vec<Placed>, RuntimeError> {
        match self.owns(p) {
            true => self.execute_planned(&p.func, &p.plan, args, keep_on_device),
            false => self.execute(&p.func.name, &p.func, args, keep_on_device),
        }
    }

    /// Runs `f` on arguments that may already be in the backend's device memory (see
    /// [`Runtime::place`]) and leaves results that a compiled cluster produced there, like
    /// JAX arrays committed to a device: nothing crosses the bus that the graph does not
    /// read on the host. [`Runtime::fetch`] copies a result back; [`Runtime::synchronize`]
    /// waits for the device.
    pub fn run_placed(&self, f: &Func, args: &[Placed]) -> Result<Vec<Placed>, RuntimeError> {
        self.execute(&f.name, f, placed_args(args), true)
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
        args: Vec<Arg<'_>>,
        keep_on_device: bool,
    ) -> Result<Vec<Placed>, RuntimeError> {
        self.execute_planned(f, &self.plan(scope, f, false), args, keep_on_device)
    }

    /// [`Runtime::execute`] with `f`'s plan made beforehand (a loop's regions are planned
    /// once for all their iterations). Arguments given as [`Arg::Owned`] are the run's own:
    /// a `dynamic_update_slice` at the last use of one writes into it in place, and one
    /// returned as it is moves out without a copy.
    pub(crate) fn execute_planned(
        &self,
        f: &Func,
        plan: &Plan,
        args: Vec<Arg<'_>>,
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
        for (i, (&p, a)) in f.params.iter().zip(&args).enumerate() {
            let want = f.ty(p);
            let same = match a {
                Arg::Host(t) => {
                    t.dtype() == want.dtype && kiln_ir::same_shape(t.shape(), &want.shape)
                }
                Arg::Owned(t) => {
                    t.dtype() == want.dtype && kiln_ir::same_shape(t.shape(), &want.shape)
                }
                Arg::Device(d) => {
                    if self.inner.memory.is_none() {
                        return Err(RuntimeError::Invalid(format!(
                            "@{}: argument {i} (%{}) is a device value, but the runtime has no device backend",
                            f.name,
                            f.value(p).name
                        )));
                    }
                    d.ty() == want
                }
            };
            if !same {
                return Err(RuntimeError::Invalid(format!(
                    "@{}: argument {i} (%{}) must be {want}, got {}",
                    f.name,
                    f.value(p).name,
                    a.ty(),
                )));
            }
        }
        let Frame {
            mut slots,
            borrowed,
        } = plan.take_frame(f.num_values());
        // The spare table, its (all `None`) references now this run's: reused in place.
        let mut borrowed: Vec<Option<&Tensor>> = borrowed.into_iter().map(|_| None).collect();
        // The parameters given as device values (returned as they are); none on the host.
        let mut given_on_device = Vec::new();
        for (k, (&p, a)) in f.params.iter().zip(args).enumerate() {
            let v = p.0 as usize;
            match a {
                Arg::Host(t) => borrowed[v] = Some(t),
                Arg::Owned(t) => slots[v].host = Some(t),
                Arg::Device(d) => {
                    slots[v].device = Some(d.clone());
                    given_on_device.push((k, d));
                }
            }
        }
        let uses = &plan.uses;
        let mut vals = Values {
            f,
            borrowed,
            slots,
            memory: self.inner.memory.as_ref(),
            transfers: &self.inner.transfers,
        };
        for (i, inst) in f.insts.iter().enumerate() {
            match (&inst.op, plan.clusters.get(i)) {
                (Op::Cluster(c), Some(Some(cp))) => {
                    let outs = self.run_cluster(cp, c, &inst.args, &mut vals)?;
                    vals.set_results(&inst.results, uses, outs);
                }
                (Op::Cluster(c), _) => {
                    return Err(RuntimeError::Invalid(format!(
                        "@{}: cluster @{} has no plan",
                        f.name, c.name
                    )))
                }
                // Regions run here, not in the interpreter, so their clusters run compiled.
                (Op::While(_) | Op::Conditional(_), _) => {
                    let operands = vals.on_host(&inst.args)?;
                    let regions = plan.regions.get(i).map_or(&[][..], Vec::as_slice);
                    let outs = self.run_control(inst, regions, &operands)?;
                    vals.set_results(&inst.results, uses, outs.into_iter().map(Slot::host));
                }
                // Read in place from the function (a frozen graph's weights are not copied
                // per call); a slot of its own only if a device copy is made.
                (Op::Constant(t), _) => {
                    vals.borrowed[inst.results[0].0 as usize] = Some(&**t);
                }
                // Any other op on the interpreter.
                (op, _) => {
                    let r = inst.results[0];
                    let at = |e| {
                        RuntimeError::Interp(kiln_interp::InterpError::At {
                            func: f.name.clone(),
                            value: f.value(r).name.clone(),
                            source: Box::new(e),
                        })
                    };
                    if let Some(t) = self.update_in_place(inst, i, uses, &mut vals)? {
                        vals.set_results(&inst.results, uses, [Slot::host(t)]);
                    } else {
                        let operands = vals.on_host(&inst.args)?;
                        let interp = &self.inner.interp;
                        match &inst.results[..] {
                            [r] => {
                                let t = match plan.ops.get(i).and_then(Option::as_ref) {
                                    Some(p) => interp.run_planned(p, &operands),
                                    None => interp.eval(op, &operands, f.ty(*r)),
                                }
                                .map_err(at)?;
                                vals.set_results(&inst.results, uses, [Slot::host(t)]);
                            }
                            rs => {
                                let types: Vec<TensorType> =
                                    rs.iter().map(|&v| f.ty(v).clone()).collect();
                                let ts = interp.eval_all(op, &operands, &types).map_err(at)?;
                                vals.set_results(rs, uses, ts.into_iter().map(Slot::host));
                            }
                        }
                    }
                }
            }
            for a in &inst.args {
                if uses[a.0 as usize] == LastUse::Inst(i) {
                    vals.slots[a.0 as usize] = Slot::default();
                }
            }
        }
        if !keep_on_device && vals.memory.is_some() {
            // The graph's outputs go back to the host (a boundary copy for device values).
            vals.on_host(&f.results)?;
        }
        // Sized once (a collected `Result` grows by reallocation).
        let mut results = Vec::with_capacity(f.results.len());
        for (k, &r) in f.results.iter().enumerate() {
            results.push(take_result(
                &mut vals,
                k,
                r,
                &given_on_device,
                keep_on_device,
            )?);
        }
        let Values {
            mut slots,
            borrowed,
            ..
        } = vals;
        slots.fill_with(Slot::default);
        plan.keep_frame(Frame {
            slots,
            borrowed: borrowed.into_iter().map(|_| None).collect(),
        });
        Ok(results)
    }

    /// `dynamic_update_slice` of a host value that dies here and that this run owns (it
    /// computed it, or was given it as [`Arg::Owned`]): the update is written into that
    /// buffer, which becomes the result — no copy of the whole operand. A loop's carried
    /// sequence (`ys = ys.at[t].set(h)`) is updated in place on every iteration. `None`
    /// when the op or its operand does not qualify (it then runs as usual).
    fn update_in_place(
        &self,
        inst: &kiln_ir::Inst,
        i: usize,
        uses: &[LastUse],
        vals: &mut Values<'_>,
    ) -> Result<Option<Tensor>, RuntimeError> {
        let (Op::DynamicUpdateSlice, [target, rest @ ..]) = (&inst.op, &inst.args[..]) else {
            return Ok(None);
        };
        let v = target.0 as usize;
        let owned = uses[v] == LastUse::Inst(i)
            && vals.borrowed[v].is_none()
            && vals.slots[v].host.is_some()
            && !rest.contains(target);
        let Some(mut t) = owned.then(|| vals.slots[v].host.take()).flatten() else {
            return Ok(None);
        };
        vals.slots[v].device = None;
        let others = vals.on_host(rest)?;
        self.inner
            .interp
            .update_slice_in_place(&mut t, &others)
            .map_err(|e| {
                RuntimeError::Interp(kiln_interp::InterpError::At {
                    func: vals.f.name.clone(),
                    value: vals.f.value(inst.results[0]).name.clone(),
                    source: Box::new(e),
                })
            })?;
        Ok(Some(t))
    }
}

/// Result `k` of a run (value `r`): an argument returned as it was given (an owned one
/// moves out of its slot), else its computed value, moved out unless returned again.
fn take_result(
    vals: &mut Values<'_>,
    k: usize,
    r: kiln_ir::Value,
    given_on_device: &[(usize, Arc<dyn crate::backend::DeviceTensor>)],
    keep_on_device: bool,
) -> Result<Placed, RuntimeError> {
    let f = vals.f;
    if let Some(p) = f.params.iter().position(|&q| q == r) {
        // An argument returned as it is: as it was given (an owned one moves
        // out of its slot below).
        if let Some((_, d)) = given_on_device.iter().find(|(k, _)| *k == p) {
            return Ok(Placed::Device(d.clone()));
        }
        if let Some(t) = vals.borrowed[r.0 as usize] {
            return Ok(Placed::Host(t.clone()));
        }
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
}

/// A run's arguments as the caller placed them.
fn placed_args(args: &[Placed]) -> Vec<Arg<'_>> {
    args.iter()
        .map(|p| match p {
            Placed::Host(t) => Arg::Host(t),
            Placed::Device(d) => Arg::Device(d.clone()),
        })
        .collect()
}

/// A run's results, all on the host (a run that was not asked to keep them on the device).
fn on_host(results: Vec<Placed>) -> Result<Vec<Tensor>, RuntimeError> {
    results
        .into_iter()
        .map(|p| match p {
            Placed::Host(t) => Ok(t),
            Placed::Device(_) => Err(RuntimeError::Invalid(
                "a result was left on the device".to_string(),
            )),
        })
        .collect()
}

pub(crate) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
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
