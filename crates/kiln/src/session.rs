//! A [`Session`]: the compiler options and the runtime built from one set of flags — what
//! `Function` and `kiln run` use to turn a graph into results (clustering, then the runtime
//! with its compile policy and caches).

use crate::KilnError;
use kiln_flags::Flags;
use kiln_ir::{Func, Tensor};
use kiln_runtime::{Backend, GpuBackend, Placed, PlannedFunc, Runtime, RuntimeOptions};
use std::sync::{Arc, OnceLock};

/// Where clusters are compiled for: `--device` on `kiln run` / `kiln bench`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    /// The GPU when one opens, else the CPU (with one log line saying why).
    #[default]
    Auto,
    /// The CPU (Cranelift), even when a GPU is present.
    Cpu,
    /// The GPU; an error when there is none.
    Gpu,
}

impl std::str::FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Device, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "gpu" => Ok(Device::Gpu),
            _ => Err(format!("unknown device `{s}`; expected cpu, gpu or auto")),
        }
    }
}

impl Device {
    /// The environment variable that picks the device when no `--device` / explicit
    /// [`Session::with_device`] says otherwise (like `JAX_PLATFORMS`): `cpu`, `gpu` or `auto`.
    pub const ENV: &'static str = "KILN_DEVICE";

    /// [`Device::ENV`] when it is set and not empty, else [`Device::Auto`]; a value that is
    /// not a device is an error naming the variable.
    pub fn from_env() -> Result<Device, KilnError> {
        match std::env::var(Device::ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse()
                .map_err(|e| KilnError::Invalid(format!("{}={v:?}: {e}", Device::ENV))),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(Device::Auto),
            Err(std::env::VarError::NotUnicode(v)) => Err(KilnError::Invalid(format!(
                "{}={v:?}: not UTF-8; expected cpu, gpu or auto",
                Device::ENV
            ))),
        }
    }
}

/// The error for [`Device::Gpu`] when no GPU opens, saying why.
pub fn gpu_required_error(why: &str) -> KilnError {
    KilnError::Invalid(format!(
        "--device gpu (or {}=gpu): {why}; use --device cpu or --device auto",
        Device::ENV
    ))
}

/// GPU 0, opened once per process (opening is slow, and the fallback line is logged once).
fn process_gpu() -> &'static Result<Arc<kiln_ptx::driver::Gpu>, String> {
    static GPU: OnceLock<Result<Arc<kiln_ptx::driver::Gpu>, String>> = OnceLock::new();
    GPU.get_or_init(|| {
        let opened = kiln_ptx::driver::Gpu::open(0)
            .map_err(|e| e.to_string())
            .and_then(|g| {
                kiln_ptx::Target::from_sm(g.sm())
                    .map(|_| Arc::new(g))
                    .map_err(|e| format!("no GPU backend for this device: {e}"))
            });
        opened
    })
}

/// GPU 0 of this process (opened on first call), or why there is none.
pub fn open_gpu() -> Result<Arc<kiln_ptx::driver::Gpu>, String> {
    process_gpu().clone()
}

/// Whether a usable GPU is present (opens it on first call), or why not.
pub fn gpu_available() -> Result<String, String> {
    process_gpu()
        .as_ref()
        .map(|g| format!("{} (sm_{})", g.name(), g.sm()))
        .map_err(Clone::clone)
}

/// Compiler options plus a runtime, from one `Flags` value.
#[derive(Clone, Debug)]
pub struct Session {
    compiler: kiln_compiler::Options,
    runtime: Runtime,
    deterministic_ops: bool,
}

impl Session {
    /// A session for the flags in effect (environment plus programmatic switches).
    pub fn from_env() -> Result<Session, KilnError> {
        Session::new(&crate::config::flags()?)
    }

    /// A session for the given flags on the device `KILN_DEVICE` names, by default the GPU
    /// when one opens (else the CPU); see [`Device::from_env`].
    pub fn new(flags: &Flags) -> Result<Session, KilnError> {
        Session::with_device(flags, Device::from_env()?)
    }

    /// A session compiling for `device`. [`Device::Gpu`] without a usable GPU is an error
    /// naming why; [`Device::Auto`] then falls back to the CPU, logging one line per process.
    pub fn with_device(flags: &Flags, device: Device) -> Result<Session, KilnError> {
        let opts = RuntimeOptions::from_flags(flags)?;
        let (backend, gpu): (Arc<dyn Backend>, bool) = match device {
            Device::Cpu => (cpu_backend(flags), false),
            Device::Gpu => match process_gpu() {
                Ok(g) => (Arc::new(GpuBackend::with_gpu(g.clone(), flags)), true),
                Err(why) => return Err(gpu_required_error(why)),
            },
            Device::Auto => match process_gpu() {
                Ok(g) => (Arc::new(GpuBackend::with_gpu(g.clone(), flags)), true),
                Err(why) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        tracing::warn!(target: "kiln", "kiln: {why}; running on CPU");
                    });
                    (cpu_backend(flags), false)
                }
            },
        };
        let runtime = Runtime::new(Some(backend), opts)?;
        let mut compiler = kiln_compiler::Options::from_flags(flags);
        compiler.gpu = gpu;
        Ok(Session {
            compiler,
            runtime,
            deterministic_ops: flags.deterministic_ops,
        })
    }

    /// Whether this session compiles for a GPU.
    pub fn on_gpu(&self) -> bool {
        self.compiler.gpu
    }

    /// Runs the pass pipeline (including auto-clustering) over a traced or parsed graph.
    pub fn prepare(&self, f: &mut Func) -> Result<(), KilnError> {
        kiln_compiler::run_pipeline(f, &self.compiler)?;
        Ok(())
    }

    /// Runs a prepared graph.
    pub fn run(&self, f: &Func, args: &[Tensor]) -> Result<Vec<Tensor>, KilnError> {
        Ok(self.runtime.run(f, args)?)
    }

    /// Runs a prepared graph on borrowed arguments.
    pub fn run_refs(&self, f: &Func, args: &[&Tensor]) -> Result<Vec<Tensor>, KilnError> {
        Ok(self.runtime.run_refs(f, args)?)
    }

    /// A prepared graph planned once for repeated runs in this session
    /// ([`Session::run_planned`]): cluster ids, signatures and cache keys are worked out
    /// here, not on every call.
    pub fn plan(&self, f: Arc<Func>) -> PlannedFunc {
        self.runtime.plan_func(f)
    }

    /// Runs a graph planned by [`Session::plan`] on borrowed arguments.
    pub fn run_planned(&self, p: &PlannedFunc, args: &[&Tensor]) -> Result<Vec<Tensor>, KilnError> {
        Ok(self.runtime.run_planned(p, args)?)
    }

    /// `t` on this session's device (one host → device copy), or on the host when the
    /// session runs on the CPU: `jax.device_put`. Pass it to [`crate::Function::call_placed`]
    /// as often as needed; it is not copied again.
    pub fn place(&self, t: &Tensor) -> Result<Placed, KilnError> {
        Ok(self.runtime.place(t)?)
    }

    /// `p` on the host (one device → host copy for a device value).
    pub fn fetch(&self, p: &Placed) -> Result<Tensor, KilnError> {
        Ok(self.runtime.fetch(p)?)
    }

    /// Waits until the device has finished all work enqueued so far
    /// (`block_until_ready`); a no-op on the CPU.
    pub fn synchronize(&self) -> Result<(), KilnError> {
        Ok(self.runtime.synchronize()?)
    }

    /// Whether op determinism is on for this session (`TF_DETERMINISTIC_OPS`,
    /// `config::enable_op_determinism`): unseeded random ops are then errors.
    pub fn deterministic_ops(&self) -> bool {
        self.deterministic_ops
    }

    /// The runtime (statistics, waiting for background compiles).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// Cranelift for this machine's CPU.
fn cpu_backend(flags: &Flags) -> Arc<dyn Backend> {
    Arc::new(kiln_runtime::CpuBackend::new(flags))
}
