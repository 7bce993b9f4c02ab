//! The only module that touches CUDA: a GPU context through cudarc, behind a probe.
//!
//! cudarc (with `dynamic-loading`) *panics* when `libcuda` is missing, so [`Gpu::open`]
//! first `dlopen`s each library name cudarc would try and returns
//! [`DriverError::NoGpu`] when none loads; cudarc is touched only after that. Every cudarc
//! error is turned into [`DriverError::Cuda`]; nothing here panics without a GPU.

mod blas;

use crate::gemm::GemmPlan;
use blas::{gemm_error, gemm_half, gemm_typed};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use kiln_ir::DType;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

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
    let mut unique: Vec<&String> = Vec::new();
    for n in &names {
        if !unique.contains(&n) {
            unique.push(n);
        }
    }
    let shown: Vec<&str> = unique
        .iter()
        .filter(|n| n.starts_with("libcuda.so"))
        .map(|n| n.as_str())
        .take(2)
        .collect();
    let shown = if shown.is_empty() {
        unique.iter().take(2).map(|n| n.as_str()).collect()
    } else {
        shown
    };
    Err(DriverError::NoGpu(format!(
        "libcuda not found (tried {} and {} other names)",
        shown.join(", "),
        unique.len().saturating_sub(shown.len())
    )))
}

/// A CUDA context and stream on one device.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (u32, u32),
    driver_version: i32,
    /// cuBLAS, created on first use (`Err`: libcublas is missing or failed to start).
    blas: OnceLock<Result<Mutex<CudaBlas>, String>>,
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
        without_panic(|| Gpu::open_probed(ordinal)).unwrap_or_else(|why| {
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
        // SAFETY: everything Kiln enqueues on this context (copies, kernels, cuBLAS) goes
        // to this one stream, whose order already orders every use of a buffer before its
        // release; cudarc's per-buffer events only order work across streams, and cost two
        // event creations per allocation and a record per launch argument.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        keep_pool_memory(&ctx);
        let mut driver_version: std::ffi::c_int = 0;
        // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
        cuda("reading the driver version", unsafe {
            sys::cuDriverGetVersion(&mut driver_version).result()
        })?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            compute_capability: (major as u32, minor as u32),
            driver_version,
            blas: OnceLock::new(),
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

    /// The size of the device's L2 cache in bytes (0 when the driver does not say).
    pub fn l2_bytes(&self) -> usize {
        let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
        self.ctx
            .attribute(attr)
            .map_or(0, |b| usize::try_from(b).unwrap_or(0))
    }

    /// Enqueues a zero fill of `buf`: written through the L2 cache, a buffer twice its size
    /// evicts whatever an earlier launch left there, so the next launch reads from DRAM.
    pub fn overwrite(&self, buf: &mut DeviceBuffer) -> Result<(), DriverError> {
        cuda(
            "clearing device memory",
            self.stream.memset_zeros(&mut buf.slice),
        )
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

    /// The CUDA driver's version, e.g. `12040` for 12.4.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// JIT-compiles PTX to a cubin for this device through the driver's linker
    /// (`cuLinkCreate` / `cuLinkAddData(PTX)` / `cuLinkComplete`). `opt_level`: the
    /// `CU_JIT_OPTIMIZATION_LEVEL` (0–4); `None` leaves the driver's default (4). A failure
    /// carries the JIT's error log.
    pub fn link_ptx(&self, ptx: &str, opt_level: Option<u32>) -> Result<Vec<u8>, DriverError> {
        const LOG: usize = 16 * 1024;
        let step = "JIT-compiling PTX";
        cuda(step, self.ctx.bind_to_thread())?;
        let src = CString::new(ptx).map_err(|_| DriverError::Cuda {
            step: step.into(),
            message: "the PTX text contains a NUL byte".into(),
        })?;
        let name = CString::new("kiln.ptx").unwrap_or_default();
        let mut error_log = vec![0u8; LOG];
        let mut info_log = vec![0u8; LOG];
        let mut options = vec![
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        // Integer options travel *in* the pointer-sized value slot (the driver's convention).
        let mut values: Vec<*mut c_void> = vec![
            error_log.as_mut_ptr().cast(),
            LOG as *mut c_void,
            info_log.as_mut_ptr().cast(),
            LOG as *mut c_void,
        ];
        if let Some(level) = opt_level {
            options.push(sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL);
            values.push(level.min(4) as usize as *mut c_void);
        }
        let log = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).trim().to_string()
        };
        /// Destroys the link state (and the cubin it owns) on every path.
        struct Link(sys::CUlinkState);
        impl Drop for Link {
            fn drop(&mut self) {
                // SAFETY: the state came from a successful cuLinkCreate and is destroyed once.
                let _ = unsafe { sys::cuLinkDestroy(self.0) };
            }
        }
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: `options` and `values` have equal lengths; the log buffers they point to
        // (of the sizes given) and both vectors outlive the link state, which `Link` destroys
        // before they are dropped (it is declared after them).
        let created = unsafe {
            sys::cuLinkCreate_v2(
                options.len() as std::ffi::c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            )
        };
        cuda("creating the JIT linker", created.result())?;
        let link = Link(state);
        let fail = |what: &str, e: sys::CUresult| DriverError::Cuda {
            step: format!("{step} ({what})"),
            message: format!("{e:?}: {}", log(&error_log)),
        };
        // SAFETY: `src` is NUL-terminated and its length includes the NUL, as the driver
        // expects for PTX input; `name` is NUL-terminated; no per-input options.
        let added = unsafe {
            sys::cuLinkAddData_v2(
                link.0,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                src.as_ptr() as *mut c_void,
                src.as_bytes_with_nul().len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if added != sys::CUresult::CUDA_SUCCESS {
            return Err(fail("adding PTX", added));
        }
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size: usize = 0;
        // SAFETY: both out-pointers are valid; the cubin stays owned by the link state.
        let done = unsafe { sys::cuLinkComplete(link.0, &mut cubin, &mut size) };
        if done != sys::CUresult::CUDA_SUCCESS {
            return Err(fail("linking", done));
        }
        if cubin.is_null() || size == 0 {
            return Err(fail("linking produced no cubin", done));
        }
        // SAFETY: the driver returned `size` readable bytes at `cubin`, valid until the link
        // state is destroyed (after this copy).
        let image = unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec();
        drop(link);
        Ok(image)
    }

    /// Loads a module image — a cubin from [`Gpu::link_ptx`], or PTX text (`is_ptx`), which
    /// the driver then JIT-compiles with its default options — and looks up `entries`.
    pub fn load_module(
        &self,
        image: &[u8],
        is_ptx: bool,
        entries: &[String],
    ) -> Result<Vec<GpuKernel>, DriverError> {
        let ptx = if is_ptx {
            let text = std::str::from_utf8(image).map_err(|_| DriverError::Cuda {
                step: "loading PTX module".into(),
                message: "the PTX text is not UTF-8".into(),
            })?;
            if text.contains('\0') {
                return Err(DriverError::Cuda {
                    step: "loading PTX module".into(),
                    message: "the PTX text contains a NUL byte".into(),
                });
            }
            Ptx::from_src(text)
        } else {
            Ptx::from_binary(image.to_vec())
        };
        let module: Arc<CudaModule> = cuda("loading module", self.ctx.load_module(ptx))?;
        entries
            .iter()
            .map(|e| {
                if e.contains('\0') {
                    return Err(DriverError::Cuda {
                        step: format!("finding {e:?}"),
                        message: "a NUL byte in the entry name".into(),
                    });
                }
                let function = cuda(&format!("finding {e}"), module.load_function(e))?;
                Ok(GpuKernel {
                    function,
                    name: e.clone(),
                })
            })
            .collect()
    }

    /// A zero-filled device buffer of `bytes` bytes (at least one byte is allocated).
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, DriverError> {
        let slice = cuda(
            "allocating device memory",
            self.stream.alloc_zeros::<u8>(bytes.max(1)),
        )?;
        Ok(DeviceBuffer { slice, len: bytes })
    }

    /// A device buffer of `bytes` bytes with unspecified contents (at least one byte is
    /// allocated), for outputs and scratch that the launches write in full before anything
    /// reads them: skipping the zero fill saves one write pass over every result.
    pub fn alloc_uninit(&self, bytes: usize) -> Result<DeviceBuffer, DriverError> {
        // SAFETY: `u8` has no invalid bit patterns, and device memory is only ever read
        // back as bytes, so unwritten contents are garbage, never undefined behaviour.
        let slice = cuda("allocating device memory", unsafe {
            self.stream.alloc::<u8>(bytes.max(1))
        })?;
        Ok(DeviceBuffer { slice, len: bytes })
    }

    /// A device buffer holding a copy of `bytes` (enqueued on the stream).
    pub fn upload(&self, bytes: &[u8]) -> Result<DeviceBuffer, DriverError> {
        if bytes.is_empty() {
            return self.alloc(0);
        }
        let slice = cuda(
            "copying inputs to the device",
            self.stream.clone_htod(bytes),
        )?;
        Ok(DeviceBuffer {
            slice,
            len: bytes.len(),
        })
    }

    /// Copies `buf` into `out` (`out.len()` bytes, at most the buffer's length). Call
    /// [`Gpu::synchronize`] before reading `out`.
    pub fn download(&self, buf: &DeviceBuffer, out: &mut [u8]) -> Result<(), DriverError> {
        if out.is_empty() {
            return Ok(());
        }
        let view = buf
            .slice
            .try_slice(..out.len())
            .ok_or_else(|| DriverError::Cuda {
                step: "copying outputs back".into(),
                message: format!(
                    "{} bytes requested from a {}-byte buffer",
                    out.len(),
                    buf.len
                ),
            })?;
        cuda("copying outputs back", self.stream.memcpy_dtoh(&view, out))
    }

    /// Waits for everything enqueued on the stream.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        cuda("synchronising", self.stream.synchronize())
    }

    /// Enqueues `kernel` with `grid × block` threads (x only) and one device pointer per
    /// buffer in `args`.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters (one `.u64` global pointer each, in order)
    /// and every buffer must be large enough for what the kernel reads and writes; for
    /// warp-per-point kernels `block` must be a multiple of 32.
    pub unsafe fn launch(
        &self,
        kernel: &GpuKernel,
        grid: u32,
        block: u32,
        args: &[&DeviceBuffer],
    ) -> Result<(), DriverError> {
        let mut launch = self.stream.launch_builder(&kernel.function);
        for a in args {
            launch.arg(&a.slice);
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.max(1), 1, 1),
            block_dim: (block.max(1), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: forwarded from the caller's contract.
        match unsafe { launch.launch(cfg) } {
            Ok(_) => Ok(()),
            // The step names the kernel; formatted only on failure (launches are hot).
            Err(e) => cuda(&format!("launching {}", kernel.name), Err(e)),
        }
    }

    /// Whether cuBLAS can be used (libcublas loads and a handle starts); the reason if not.
    pub fn cublas(&self) -> Result<(), DriverError> {
        self.blas().map(|_| ())
    }

    fn blas(&self) -> Result<&Mutex<CudaBlas>, DriverError> {
        self.blas
            .get_or_init(|| {
                // SAFETY: only dlopens candidate library names, as cudarc does itself.
                if !unsafe { cudarc::cublas::sys::is_culib_present() } {
                    return Err(format!(
                        "libcublas not found (tried {})",
                        cudarc::get_lib_name_candidates("cublas").join(", ")
                    ));
                }
                // cudarc panics when the library lacks a symbol it resolves (an older
                // libcublas than the `cuda-XXXXX` API level): report it like a failed start.
                without_panic(|| CudaBlas::new(self.stream.clone()))
                    .map_err(|why| format!("libcublas is unusable: {why}"))?
                    .map(Mutex::new)
                    .map_err(|e| format!("{e:?}"))
            })
            .as_ref()
            .map_err(|e| DriverError::Cuda {
                step: "starting cuBLAS".into(),
                message: e.clone(),
            })
    }

    /// Enqueues one cuBLAS call described by `plan`: `a` is the gemm's `A` (the dot's right
    /// operand), `b` its `B` (the left operand), `c` the output. Bounds are checked against
    /// the buffers first, so a wrong plan is an error, never an out-of-bounds access.
    pub fn gemm(
        &self,
        plan: &GemmPlan,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        c: &mut DeviceBuffer,
    ) -> Result<(), DriverError> {
        let blas = self.blas()?;
        let blas = blas.lock().unwrap_or_else(|p| p.into_inner());
        match (plan.operands, plan.dtype) {
            (DType::F32, DType::F32) => gemm_typed::<f32>(&blas, plan, (1.0, 0.0), a, b, c),
            (DType::F64, DType::F64) => gemm_typed::<f64>(&blas, plan, (1.0, 0.0), a, b, c),
            (DType::F16 | DType::Bf16, DType::F32) => gemm_half(&blas, &self.stream, plan, a, b, c),
            (x, y) => Err(gemm_error(format!("no gemm of {x} operands into {y}"))),
        }
    }

    /// Milliseconds the work `f` enqueues takes on the device, measured with CUDA events.
    pub fn time_ms(
        &self,
        f: &mut dyn FnMut() -> Result<(), DriverError>,
    ) -> Result<f32, DriverError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = cuda("creating an event", self.ctx.new_event(flags))?;
        let end = cuda("creating an event", self.ctx.new_event(flags))?;
        cuda("recording an event", start.record(&self.stream))?;
        f()?;
        cuda("recording an event", end.record(&self.stream))?;
        cuda("timing", start.elapsed_ms(&end))
    }

    /// The device's copy bandwidth in GB/s: `reps` device-to-device copies of `bytes`,
    /// counting both the bytes read and the bytes written (as CUDA's bandwidthTest does).
    pub fn copy_bandwidth(&self, bytes: usize, reps: u32) -> Result<f64, DriverError> {
        let src = self.alloc(bytes)?;
        let mut dst = self.alloc(bytes)?;
        let copy = |dst: &mut DeviceBuffer| {
            cuda(
                "copying on the device",
                self.stream.memcpy_dtod(&src.slice, &mut dst.slice),
            )
        };
        copy(&mut dst)?; // warm-up
        let ms = self.time_ms(&mut || {
            for _ in 0..reps {
                copy(&mut dst)?;
            }
            Ok(())
        })?;
        let secs = f64::from(ms.max(1e-6)) / 1e3;
        Ok(2.0 * bytes.max(1) as f64 * f64::from(reps) / secs / 1e9)
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

/// Keeps freed device memory in the device's stream-ordered pool instead of returning it to
/// the driver at every synchronisation (the default release threshold is 0), so buffers of
/// one graph run are reused by the next, as XLA's BFC allocator does. cudarc allocates
/// with `cuMemAllocAsync` from this pool when the device supports it; without pool
/// support this is a no-op.
fn keep_pool_memory(ctx: &CudaContext) {
    if !ctx.has_async_alloc() {
        return;
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold: u64 = u64::MAX;
    // SAFETY: both calls write or read through valid pointers; the pool belongs to the
    // context's device, which outlives this call.
    let r = unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .and_then(|()| {
                sys::cuMemPoolSetAttribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut threshold as *mut u64).cast(),
                )
                .result()
            })
    };
    if let Err(e) = r {
        tracing::warn!(target: "nvptx_compiler", "freed device memory goes back to the driver at each synchronisation (setting the pool's release threshold failed: {e:?})");
    }
}

/// Device memory owned by one [`Gpu`]: `len` bytes (at least one is allocated).
pub struct DeviceBuffer {
    slice: CudaSlice<u8>,
    len: usize,
}

impl DeviceBuffer {
    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl GpuKernel {
    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The most threads per block this kernel can be launched with (registers permitting).
    pub fn max_threads_per_block(&self) -> Result<u32, DriverError> {
        cuda(
            "reading the kernel's thread limit",
            self.function.max_threads_per_block(),
        )
        .map(|n| n.max(0) as u32)
    }
}

/// Runs `f`, turning a panic (cudarc's reaction to a library that lacks a symbol) into its
/// message. Nothing `f` touches is used again after a panic except through `Result`s.
fn without_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into())
    })
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
    fn panics_become_their_messages() {
        assert_eq!(without_panic(|| 7), Ok(7));
        let owned = without_panic(|| -> u8 { panic!("missing symbol {}", "cublasLtCreate") });
        assert_eq!(owned, Err("missing symbol cublasLtCreate".to_string()));
        assert_eq!(
            without_panic(|| -> u8 { std::panic::panic_any(3u8) }),
            Err("unknown panic".to_string())
        );
        assert_eq!(
            without_panic(|| -> u8 { panic!("static") }),
            Err("static".to_string())
        );
    }

    #[test]
    fn probe_names_what_it_tried() {
        if let Err(DriverError::NoGpu(reason)) = probe_libcuda() {
            assert!(reason.contains("libcuda.so"), "{reason}");
        }
    }
}
