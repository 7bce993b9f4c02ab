//! A loaded GPU executable ([`GpuExe`]): the module's entries, the constants on the
//! device, one gemm per dot; one run allocates its buffers and enqueues the random fills,
//! then dots and kernels in program order on the one stream.

use super::entry::{buf_exists, GpuEntry, LaunchRecord};
use super::memory::{buffer_bytes, drv, type_bytes, GpuMemory, GpuTensor};
use crate::backend::{DeviceTensor, Executable};
use kiln_compiler::kernel::{buf_dtype, BufRef, Contraction, Program};
use kiln_ir::{Tensor, TensorType};
use kiln_ptx::driver::{DeviceBuffer, Gpu, GpuKernel};
use kiln_ptx::{plan_dot, GemmPlan};
use std::sync::Arc;

/// A loaded GPU executable.
pub(super) struct GpuExe {
    gpu: Arc<Gpu>,
    pub(super) entry: GpuEntry,
    pub(super) kernels: Vec<GpuKernel>,
    /// The random fills' entries (launched first, in order).
    pub(super) fill_kernels: Vec<GpuKernel>,
    /// Per dot: its gemm (`None`: the output stays zero).
    gemms: Vec<Option<GemmPlan>>,
    consts: Vec<DeviceBuffer>,
}

fn shape_of(p: &Program, b: BufRef) -> Vec<usize> {
    match b {
        BufRef::Input(i) => p.inputs[i].shape.clone(),
        BufRef::Output(i) => p.outputs[i].shape.clone(),
        BufRef::Temp(i) => p.temps[i].shape.clone(),
        BufRef::Const(i) => p.consts[i].shape().to_vec(),
    }
}

/// Every dot of `p` as a gemm plan, or why one cannot be.
pub(super) fn plan_dots(p: &Program) -> Result<Vec<Option<GemmPlan>>, String> {
    p.dots
        .iter()
        .map(|d| {
            if !buf_exists(p, d.lhs) || !buf_exists(p, d.rhs) || d.out >= p.temps.len() {
                return Err("a dot names a missing buffer".to_string());
            }
            let dims = match &d.op {
                Contraction::Dot(dims) => dims,
                Contraction::Convolution(_) => {
                    return Err(
                        "convolution: no GPU code for batch-grouped convolutions yet (runs on \
                         the CPU)"
                            .to_string(),
                    )
                }
            };
            let dt = p.temps[d.out].dtype;
            let operands = buf_dtype(p, d.lhs);
            if buf_dtype(p, d.rhs) != operands {
                return Err("dot_general: operands of two dtypes".to_string());
            }
            plan_dot(operands, dt, &shape_of(p, d.lhs), &shape_of(p, d.rhs), dims)
                .and_then(|plan| {
                    if plan.out_elems * dt.size_bytes() != type_bytes(&p.temps[d.out]) {
                        Err("a dot's output buffer has the wrong size".to_string())
                    } else {
                        Ok(plan.gemm)
                    }
                })
                .map_err(|e| format!("dot_general: {e}"))
        })
        .collect()
}

impl GpuExe {
    pub(super) fn new(gpu: Arc<Gpu>, entry: GpuEntry) -> Result<GpuExe, String> {
        let gemms = plan_dots(&entry.program)?;
        if !entry.program.dots.is_empty() {
            gpu.cublas().map_err(drv)?;
        }
        let names: Vec<String> = entry
            .fills
            .iter()
            .chain(&entry.launches)
            .map(|l| l.entry.clone())
            .collect();
        let mut fill_kernels = gpu
            .load_module(&entry.image, entry.is_ptx, &names)
            .map_err(drv)?;
        if fill_kernels.len() != names.len() {
            return Err("the module's entries do not match the launches".into());
        }
        let kernels = fill_kernels.split_off(entry.fills.len());
        let consts = entry
            .program
            .consts
            .iter()
            .map(|c| gpu.upload(&buffer_bytes(c.data())))
            .collect::<Result<Vec<_>, _>>()
            .map_err(drv)?;
        Ok(GpuExe {
            gpu,
            entry,
            kernels,
            fill_kernels,
            gemms,
            consts,
        })
    }

    fn check_arity(&self, n: usize) -> Result<(), String> {
        let p = &self.entry.program;
        if n != p.inputs.len() {
            return Err(format!(
                "{} takes {} inputs, got {n}",
                p.name,
                p.inputs.len()
            ));
        }
        Ok(())
    }

    /// Device buffers for one run over `inputs`: outputs and scratch left unfilled, except
    /// the result of a dot with K = 0, which is zero-filled.
    pub(super) fn buffers<'a>(&self, inputs: Vec<&'a DeviceBuffer>) -> Result<Buffers<'a>, String> {
        let p = &self.entry.program;
        self.check_arity(inputs.len())?;
        for (i, (b, want)) in inputs.iter().zip(&p.inputs).enumerate() {
            if b.len() != type_bytes(want) {
                return Err(format!(
                    "{}: input {i} must be {want} ({} bytes), got a {}-byte buffer",
                    p.name,
                    type_bytes(want),
                    b.len()
                ));
            }
        }
        // Every launch and gemm writes its whole output, so only the result of a dot with
        // nothing to multiply (K = 0) needs the zero fill.
        let zero_dot = |i: usize| {
            p.dots
                .iter()
                .zip(&self.gemms)
                .any(|(d, g)| d.out == i && g.is_none())
        };
        let alloc = |t: &TensorType, zero: bool| {
            let bytes = type_bytes(t);
            if zero {
                self.gpu.alloc(bytes).map(Some)
            } else {
                self.gpu.alloc_uninit(bytes).map(Some)
            }
        };
        Ok(Buffers {
            inputs,
            outputs: (p.outputs.iter().map(|t| alloc(t, false)))
                .collect::<Result<_, _>>()
                .map_err(drv)?,
            temps: (p
                .temps
                .iter()
                .enumerate()
                .map(|(i, t)| alloc(t, zero_dot(i))))
            .collect::<Result<_, _>>()
            .map_err(drv)?,
        })
    }

    fn buf<'a>(&'a self, bufs: &'a Buffers, b: BufRef) -> Result<&'a DeviceBuffer, String> {
        let missing = || format!("buffer {b:?} is not available");
        match b {
            BufRef::Input(i) => bufs.inputs.get(i).copied().ok_or_else(missing),
            BufRef::Output(i) => bufs
                .outputs
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(missing),
            BufRef::Temp(i) => bufs
                .temps
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(missing),
            BufRef::Const(i) => self.consts.get(i).ok_or_else(missing),
        }
    }

    fn run_dot(&self, bufs: &mut Buffers, i: usize) -> Result<(), String> {
        let d = &self.entry.program.dots[i];
        let Some(plan) = &self.gemms[i] else {
            return Ok(()); // empty output or K = 0: `buffers` zero-filled it
        };
        let mut out = bufs.temps[d.out]
            .take()
            .ok_or_else(|| "a dot's output buffer is missing".to_string())?;
        let r = (|| {
            let lhs = self.buf(bufs, d.lhs)?;
            let rhs = self.buf(bufs, d.rhs)?;
            self.gpu.gemm(plan, rhs, lhs, &mut out).map_err(drv)
        })();
        bufs.temps[d.out] = Some(out);
        r
    }

    pub(super) fn launch(
        &self,
        bufs: &Buffers,
        k: usize,
        block: u32,
        grid: u32,
    ) -> Result<(), String> {
        self.launch_entry(bufs, &self.entry.launches[k], &self.kernels[k], block, grid)
    }

    /// Launches random fill `i` with its recorded block and grid.
    fn launch_fill(&self, bufs: &Buffers, i: usize) -> Result<(), String> {
        let l = &self.entry.fills[i];
        self.launch_entry(bufs, l, &self.fill_kernels[i], l.block, l.grid)
    }

    fn launch_entry(
        &self,
        bufs: &Buffers,
        l: &LaunchRecord,
        kernel: &GpuKernel,
        block: u32,
        grid: u32,
    ) -> Result<(), String> {
        let args = l
            .params
            .iter()
            .map(|&b| self.buf(bufs, b))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: the entry was emitted with exactly these parameters (one pointer per
        // buffer, in this order; `GpuEntry::from_bytes` checked they exist), each buffer has
        // its program type's size, the emitted code indexes only within those types, and
        // warp-per-point blocks are multiples of 32 (`block_candidates`, `from_bytes`).
        unsafe { self.gpu.launch(kernel, grid, block, &args) }.map_err(drv)
    }

    /// Enqueues the whole program with launch `configs` (block, grid per kernel).
    fn enqueue(&self, bufs: &mut Buffers, configs: &[(u32, u32)]) -> Result<(), String> {
        let p = &self.entry.program;
        for i in 0..self.entry.fills.len() {
            self.launch_fill(bufs, i)?;
        }
        // One launch per kernel, or one row-fused launch (whose program has no dots).
        for (k, &(block, grid)) in configs.iter().enumerate().take(p.kernels.len()) {
            for i in (0..p.dots.len()).filter(|&i| p.dots[i].before == k) {
                self.run_dot(bufs, i)?;
            }
            self.launch(bufs, k, block, grid)?;
        }
        for i in (0..p.dots.len()).filter(|&i| p.dots[i].before >= p.kernels.len()) {
            self.run_dot(bufs, i)?;
        }
        Ok(())
    }

    /// Enqueues the program on device `inputs` with launch `configs`; the outputs stay on
    /// the device (nothing is copied and nothing waits).
    pub(super) fn run_device(
        &self,
        inputs: Vec<&DeviceBuffer>,
        configs: &[(u32, u32)],
    ) -> Result<Vec<DeviceBuffer>, String> {
        if configs.len() != self.entry.launches.len() {
            return Err("one launch configuration per launch is required".into());
        }
        let mut bufs = self.buffers(inputs)?;
        self.enqueue(&mut bufs, configs)?;
        bufs.outputs
            .into_iter()
            .map(|b| b.ok_or_else(|| "an output buffer is missing".to_string()))
            .collect()
    }

    /// One run on host tensors: inputs copied in, outputs copied back (tuning and tests;
    /// the executor keeps values on the device through [`Executable::run_on_device`]).
    pub(super) fn run_with(
        &self,
        inputs: &[&Tensor],
        configs: &[(u32, u32)],
    ) -> Result<Vec<Tensor>, String> {
        let p = &self.entry.program;
        self.check_arity(inputs.len())?;
        let mem = GpuMemory {
            gpu: self.gpu.clone(),
        };
        let mut ins = Vec::with_capacity(inputs.len());
        for (i, (t, want)) in inputs.iter().zip(&p.inputs).enumerate() {
            if t.ty() != *want {
                return Err(format!(
                    "{}: input {i} must be {want}, got {}",
                    p.name,
                    t.ty()
                ));
            }
            ins.push(mem.upload_tensor(t)?);
        }
        let outs = self.run_device(ins.iter().map(|t| &t.buf).collect(), configs)?;
        outs.into_iter()
            .zip(&p.outputs)
            .map(|(buf, t)| mem.download_tensor(&GpuTensor { ty: t.clone(), buf }))
            .collect()
    }

    pub(super) fn configs(&self) -> Vec<(u32, u32)> {
        self.entry
            .launches
            .iter()
            .map(|l| (l.block, l.grid))
            .collect()
    }
}

/// One run's device buffers (outputs and temps are `Option` so a dot can borrow its output
/// mutably while reading its operands).
pub(super) struct Buffers<'a> {
    inputs: Vec<&'a DeviceBuffer>,
    outputs: Vec<Option<DeviceBuffer>>,
    temps: Vec<Option<DeviceBuffer>>,
}

impl Executable for GpuExe {
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        self.run_with(inputs, &self.configs())
    }

    fn run_on_device(
        &self,
        inputs: &[&dyn DeviceTensor],
    ) -> Result<Vec<Arc<dyn DeviceTensor>>, String> {
        let p = &self.entry.program;
        let mut bufs = Vec::with_capacity(inputs.len());
        for (i, d) in inputs.iter().enumerate() {
            let t = GpuTensor::of(*d)?;
            if p.inputs.get(i) != Some(&t.ty) {
                return Err(format!(
                    "{}: input {i} is {}, the program expects {}",
                    p.name,
                    t.ty,
                    p.inputs
                        .get(i)
                        .map_or("nothing".to_string(), |w| w.to_string())
                ));
            }
            bufs.push(&t.buf);
        }
        let outs = self.run_device(bufs, &self.configs())?;
        Ok(outs
            .into_iter()
            .zip(&p.outputs)
            .map(|(buf, ty)| -> Arc<dyn DeviceTensor> {
                Arc::new(GpuTensor {
                    ty: ty.clone(),
                    buf,
                })
            })
            .collect())
    }

    fn to_bytes(&self) -> Option<Vec<u8>> {
        self.entry.to_bytes().ok()
    }
}
