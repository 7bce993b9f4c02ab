//! The only module that touches CUDA: a GPU context through cudarc, behind a probe.
//!
//! cudarc (with `dynamic-loading`) *panics* when `libcuda` is missing, so [`Gpu::open`]
//! first `dlopen`s each library name cudarc would try and returns
//! [`DriverError::NoGpu`] when none loads; cudarc is touched only after that. Every cudarc
//! error is turned into [`DriverError::Cuda`]; nothing here panics without a GPU.

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

/// Why the GPU could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// No usable GPU: `libcuda` is missing or has no device. Callers fall back to the CPU.
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// A CUDA call failed; the message names the step.
    #[error("CUDA error while {step}: {message}")]
    Cuda {
        /// What we were doing ("loading module", "launching kiln_exp_f32", …).
        step: String,
        /// The driver's error.
        message: String,
    },
}

fn cuda<T, E: std::fmt::Debug>(step: &str, r: Result<T, E>) -> Result<T, DriverError> {
    r.map_err(|e| DriverError::Cuda {
        step: step.to_string(),
        message: format!("{e:?}"),
    })
}

/// Returns the name of the first `libcuda` that loads (the names cudarc itself tries), or
/// [`DriverError::NoGpu`] listing them.
pub fn probe_libcuda() -> Result<String, DriverError> {
    let names: Vec<String> = ["cuda", "nvcuda"]
        .iter()
        .flat_map(|l| cudarc::get_lib_name_candidates(l))
        .collect();
    for name in &names {
        // SAFETY: loading the CUDA driver runs its initialisers, which is what cudarc does
        // next anyway; the handle is dropped (cudarc keeps its own).
        if unsafe { libloading::Library::new(name) }.is_ok() {
            return Ok(name.clone());
        }
    }
    Err(DriverError::NoGpu(format!(
        "libcuda not found (tried {})",
        names.join(", ")
    )))
}

/// A CUDA context and stream on one device.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (u32, u32),
}

/// A kernel loaded from PTX, ready to launch on its [`Gpu`].
pub struct GpuKernel {
    function: CudaFunction,
    name: String,
}

impl Gpu {
    /// Opens device `ordinal` (probing for `libcuda` first).
    pub fn open(ordinal: usize) -> Result<Gpu, DriverError> {
        probe_libcuda()?;
        // Last resort, after the probe: cudarc panics on a driver that lacks a symbol it
        // resolves (older than the `cuda-11040` API level); report that as "no GPU".
        std::panic::catch_unwind(|| Gpu::open_probed(ordinal)).unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(DriverError::NoGpu(format!(
                "the CUDA driver is unusable: {why}"
            )))
        })
    }

    fn open_probed(ordinal: usize) -> Result<Gpu, DriverError> {
        let count = cuda("counting devices", CudaContext::device_count())
            .map_err(|e| DriverError::NoGpu(e.to_string()))?;
        if count as usize <= ordinal {
            return Err(DriverError::NoGpu(format!(
                "device {ordinal} requested, {count} present"
            )));
        }
        let ctx = cuda("creating context", CudaContext::new(ordinal))?;
        let name = cuda("reading device name", ctx.name())?;
        let (major, minor) = cuda("reading compute capability", ctx.compute_capability())?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            name,
            compute_capability: (major as u32, minor as u32),
        })
    }

    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `(major, minor)`, e.g. `(9, 0)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The compute capability as `major * 10 + minor` (the `sm_XX` number).
    pub fn sm(&self) -> u32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }

    /// JIT-compiles PTX text (the driver assembles it for this device) and looks up `kernel`.
    pub fn load(&self, ptx: &str, kernel: &str) -> Result<GpuKernel, DriverError> {
        let module = cuda(
            "loading PTX module",
            self.ctx.load_module(Ptx::from_src(ptx)),
        )?;
        let function = cuda(&format!("finding {kernel}"), module.load_function(kernel))?;
        Ok(GpuKernel {
            function,
            name: kernel.to_string(),
        })
    }

    /// Runs an elementwise kernel with signature `(in_0, …, in_k, out, n)` (all `.u64`) over
    /// `inputs` (equal lengths) and returns the output.
    pub fn run_elementwise<T>(
        &self,
        kernel: &GpuKernel,
        inputs: &[&[T]],
    ) -> Result<Vec<T>, DriverError>
    where
        T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Default + Clone,
    {
        let n = inputs.first().map_or(0, |x| x.len());
        if inputs.iter().any(|x| x.len() != n) {
            return Err(DriverError::Cuda {
                step: format!("launching {}", kernel.name),
                message: "inputs differ in length".into(),
            });
        }
        let device_inputs: Vec<CudaSlice<T>> = inputs
            .iter()
            .map(|x| cuda("copying inputs to the device", self.stream.clone_htod(*x)))
            .collect::<Result<_, _>>()?;
        let mut out = cuda("allocating output", self.stream.alloc_zeros::<T>(n.max(1)))?;
        let count = n as u64;
        // A grid-stride loop covers n with any grid; a bounded grid keeps launches cheap.
        let blocks = n.div_ceil(256).clamp(1, 65_535) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(&kernel.function);
        for x in &device_inputs {
            launch.arg(x);
        }
        launch.arg(&mut out);
        launch.arg(&count);
        // SAFETY: the kernel was generated with exactly these parameters (input pointers,
        // output pointer, u64 count) and reads/writes only indices below `count`.
        cuda(&format!("launching {}", kernel.name), unsafe {
            launch.launch(cfg)
        })?;
        let mut host = cuda("copying the output back", self.stream.clone_dtoh(&out))?;
        cuda("synchronising", self.stream.synchronize())?;
        host.truncate(n);
        Ok(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On any machine: either a GPU opens, or the reason says why not; never a panic.
    #[test]
    fn open_never_panics() {
        match Gpu::open(0) {
            Ok(gpu) => assert!(gpu.sm() >= 10 && !gpu.name().is_empty()),
            Err(DriverError::NoGpu(reason)) => assert!(!reason.is_empty()),
            Err(e) => panic!("a GPU is present but unusable: {e}"),
        }
    }

    #[test]
    fn probe_names_what_it_tried() {
        if let Err(DriverError::NoGpu(reason)) = probe_libcuda() {
            assert!(reason.contains("libcuda.so"), "{reason}");
        }
    }
}
