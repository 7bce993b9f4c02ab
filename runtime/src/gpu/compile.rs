//! [`GpuBackend`]: a cluster lowered, emitted as PTX, linked into a cubin by the driver,
//! loaded and autotuned; and an executable loaded back from its persistent entry.

use super::autotune::Tuner;
use super::entry::{GpuEntry, LaunchRecord, ENTRY_FORMAT};
use super::executable::{plan_dots, GpuExe};
use super::memory::GpuMemory;
use crate::backend::{Backend, CompileFailure, DeviceMemory, Executable};
use kiln_flags::{vlog, Flags};
use kiln_ir::Cluster;
use kiln_ptx::driver::{DriverError, Gpu};
use kiln_ptx::{compile_cluster, PtxArtifact, PtxOptions, Target};
use std::sync::Arc;
use std::time::Instant;

/// Compiles clusters for one NVIDIA GPU.
pub struct GpuBackend {
    gpu: Arc<Gpu>,
    flags: Flags,
    opt_level: Option<u32>,
    target: String,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuBackend({}, {})", self.gpu.name(), self.target)
    }
}

impl GpuBackend {
    /// Opens GPU 0. `Err` says why there is no usable GPU (no `libcuda`, no device, …);
    /// nothing panics on a machine without one.
    pub fn open(flags: &Flags) -> Result<GpuBackend, DriverError> {
        let gpu = Gpu::open(0)?;
        // The emitter must know the target, or every compile would be refused.
        Target::from_sm(gpu.sm()).map_err(|e| DriverError::NoGpu(e.to_string()))?;
        Ok(GpuBackend::with_gpu(Arc::new(gpu), flags))
    }

    /// A backend on an already opened GPU.
    pub fn with_gpu(gpu: Arc<Gpu>, flags: &Flags) -> GpuBackend {
        let opt_level = flags.disable_ptxas_optimizations.then_some(0);
        let target = target_key(
            gpu.sm(),
            gpu.driver_version(),
            opt_level,
            flags.autotune_level,
        );
        GpuBackend {
            gpu,
            flags: flags.clone(),
            opt_level,
            target,
        }
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// A one-line description: name and compute capability.
    pub fn describe(&self) -> String {
        format!("{} (sm_{})", self.gpu.name(), self.gpu.sm())
    }
}

/// The persistent-cache target key: what the cubin and the launch choices depend on.
pub fn target_key(sm: u32, driver: i32, opt_level: Option<u32>, autotune: u8) -> String {
    let jit = opt_level.map_or("default".to_string(), |l| l.to_string());
    format!("sm_{sm} driver={driver} jit_opt={jit} autotune={autotune}")
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        "gpu"
    }

    fn memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        Some(Arc::new(GpuMemory {
            gpu: self.gpu.clone(),
        }))
    }

    fn target_key(&self) -> String {
        self.target.clone()
    }

    fn compile(&self, cluster: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure> {
        let target = Target::from_sm(self.gpu.sm())
            .map_err(|e| CompileFailure::Unsupported(e.to_string()))?;
        let PtxArtifact { program, ptx } = compile_cluster(cluster, &PtxOptions { target })
            .map_err(|e| CompileFailure::Unsupported(e.to_string()))?;
        plan_dots(&program).map_err(CompileFailure::Unsupported)?;
        if !program.dots.is_empty() {
            self.gpu.cublas().map_err(|e| {
                CompileFailure::Unsupported(format!("dot_general needs cuBLAS: {e}"))
            })?;
        }
        vlog!(self.flags, "nvptx_compiler", 2, "{}", ptx.size_summary());
        let start = Instant::now();
        let cubin = self
            .gpu
            .link_ptx(&ptx.text, self.opt_level)
            .map_err(|e| CompileFailure::Failed(e.to_string()))?;
        vlog!(
            self.flags,
            "nvptx_compiler",
            2,
            "{}: PTX JIT (opt level {}) took {} us; cubin {} bytes",
            ptx.name,
            self.opt_level
                .map_or("default".to_string(), |l| l.to_string()),
            start.elapsed().as_micros(),
            cubin.len()
        );
        let record = |k: &kiln_ptx::KernelLaunch| LaunchRecord {
            entry: k.entry.clone(),
            params: k.params.clone(),
            mapping: k.mapping,
            block: k.block,
            grid: k.grid,
        };
        let fills = ptx.fills.iter().map(record).collect();
        let launches = ptx.kernels.iter().map(record).collect();
        let entry = GpuEntry {
            format: ENTRY_FORMAT,
            sm: self.gpu.sm(),
            is_ptx: false,
            image: cubin,
            program,
            fills,
            launches,
        };
        let mut exe = GpuExe::new(self.gpu.clone(), entry).map_err(CompileFailure::Failed)?;
        let tuner = Tuner {
            gpu: &self.gpu,
            flags: &self.flags,
        };
        tuner.autotune(cluster, &mut exe)?;
        Ok(Arc::new(exe))
    }

    fn load(&self, _cluster: &Cluster, bytes: &[u8]) -> Result<Arc<dyn Executable>, String> {
        let entry = GpuEntry::from_bytes(bytes)?;
        if entry.sm != self.gpu.sm() {
            return Err(format!(
                "the entry was built for sm_{}, this device is sm_{}",
                entry.sm,
                self.gpu.sm()
            ));
        }
        Ok(Arc::new(GpuExe::new(self.gpu.clone(), entry)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_key_names_what_the_code_depends_on() {
        assert_eq!(
            target_key(90, 12040, Some(0), 4),
            "sm_90 driver=12040 jit_opt=0 autotune=4"
        );
        assert_eq!(
            target_key(80, 11040, None, 0),
            "sm_80 driver=11040 jit_opt=default autotune=0"
        );
    }

    #[test]
    fn a_convolution_is_an_im2col_kernel_and_a_gemm() {
        // `convolutions_as_gemm`: the patches are gathered by a kernel, the product is one
        // cuBLAS GEMM (a depthwise one a batched GEMM), the epilogue a kernel; a batch-grouped convolution stays a
        // convolution step, which `plan_dots` refuses (-> CompileFailure::Unsupported -> the
        // CPU).
        let target = Target::from_sm(90).expect("sm_90");
        let c = kiln_testkit::cluster(
            "func @f(%x: f32[1,6,6,4], %w: f32[3,3,4,8]) -> f32[1,4,4,8] {
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3] : f32[1,4,4,8]
  %y = tanh %c : f32[1,4,4,8]
  return %y
}",
        );
        let PtxArtifact { program, .. } =
            compile_cluster(&c, &PtxOptions { target }).expect("compiles");
        let gemms = plan_dots(&program).expect("every product maps onto cuBLAS");
        assert_eq!(gemms.len(), 1);
        assert!(gemms[0].is_some());
        let grouped = kiln_testkit::cluster(
            "func @f(%x: f32[4,6,6,2], %w: f32[3,3,2,4]) -> f32[2,4,4,4] {
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], batch_groups=2 : f32[2,4,4,4]
  %y = tanh %c : f32[2,4,4,4]
  return %y
}",
        );
        let PtxArtifact { program, .. } =
            compile_cluster(&grouped, &PtxOptions { target }).expect("the epilogue compiles");
        let why = plan_dots(&program).expect_err("refused");
        assert!(why.contains("convolution"), "{why}");
    }

    #[test]
    fn sixteen_bit_products_read_their_operands_in_sixteen_bits() {
        // A 16-bit product or convolution is an f32 GEMM of exact widenings; on the GPU the
        // GEMM reads the 16-bit buffers themselves (`cublasGemmEx`, f32 accumulation), no
        // widening kernel runs, and the epilogue still rounds the f32 product once.
        let target = Target::from_sm(90).expect("sm_90");
        for dt in ["f16", "bf16"] {
            let conv = "func @f(%x: DT[2,6,6,4], %w: DT[3,3,4,8]) -> DT[2,4,4,8] {
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3] : DT[2,4,4,8]
  %y = tanh %c : DT[2,4,4,8]
  return %y
}";
            let dot = "func @f(%a: DT[3,20,10], %w: DT[3,30,10]) -> DT[3,20,30] {
  %d = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : DT[3,20,30]
  %z = tanh %d : DT[3,20,30]
  return %z
}";
            // (kernels, temps) on the GPU: the convolution's patch gather and kernel
            // relayout store 16-bit scratch buffers now; the dot's widenings are gone.
            for (src, kernels, temps) in [(conv, 3, 3), (dot, 1, 1)] {
                let c = kiln_testkit::cluster(&src.replace("DT", dt));
                let PtxArtifact { program, .. } =
                    compile_cluster(&c, &PtxOptions { target }).expect("compiles");
                let text = kiln_compiler::kernel::print_program(&program);
                assert_eq!(
                    (program.kernels.len(), program.temps.len()),
                    (kernels, temps),
                    "{text}"
                );
                let gemms = plan_dots(&program).expect("16-bit operands map onto cuBLAS");
                let g = gemms[0].expect("a gemm");
                assert_eq!((g.operands.name(), g.dtype.name()), (dt, "f32"), "{text}");
                assert!(text.contains(&format!("convert v0 : {dt}")), "{text}");
                let operand_temps = program.temps.iter().filter(|t| t.dtype.name() == dt);
                assert_eq!(operand_temps.count(), temps - 1, "{text}");
            }
        }
    }
}
