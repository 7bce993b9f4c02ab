//! A compiled cluster ([`CpuExecutable`]): the kernel functions in JIT memory and how they
//! run — tasks split across threads, row-blocked and row-pipelined schedules, matrix
//! products and random fills through the interpreter. Which tasks and schedules is decided
//! in `schedule`; this file only carries the decisions out.

use super::options::{CpuCompileError, CpuOptions};
use super::schedule::{
    block_task, function_list, kernel_tasks, outputs_covered, partial_tasks, row_blocking,
    row_pipeline, row_step, split_chunks, Part, RowPipeline, Task,
};
use crate::kernel::analysis::{buffer_slot, buffer_slots};
use crate::kernel::{print_program, shared_temps, BufRef, Kernel, Program};
use cranelift_jit::JITModule;
use kiln_ir::{Buffer, Tensor};
use rayon::prelude::*;

type KernelFn = unsafe extern "C" fn(*const *mut u8, i64, i64, i64, i64);

/// A compiled cluster: kernel functions in JIT memory plus what is needed to launch them.
pub struct CpuExecutable {
    pub(super) program: Program,
    fns: Vec<KernelFn>,
    /// Per kernel, the partials function of a split reduction (see `schedule::split_chunks`).
    partial_fns: Vec<Option<KernelFn>>,
    module: Option<JITModule>,
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
    pub(super) opts: CpuOptions,
    /// Row-blocked schedule (leading extent, rows per block), when the program allows it.
    blocking: Option<(usize, usize)>,
    /// Rows of a block run one by one, the last kernel of each with the first of the next
    /// ([`RowPipeline`]), when the program has that form (only with `blocking`).
    pipeline: Option<RowPipeline>,
    /// Rows of a block run this many at a time, every kernel on them before the next
    /// (`schedule::row_step`; only with `blocking`, and without `pipeline`, which runs rows
    /// one at a time with its own pairing).
    row_step: Option<usize>,
    /// Whether every element of every output is stored by some kernel, so outputs need no
    /// clearing before the kernels run (see `schedule::outputs_covered`).
    outputs_covered: bool,
    /// Per scratch buffer, the output whose storage it uses instead of its own
    /// ([`shared_temps`]): no allocation, and the output's lines are in cache when the
    /// kernel that turns the scratch values into the output runs.
    shared: Vec<Option<usize>>,
    /// The interpreter whose GEMM computes `dot_general` steps (same threads as kernels).
    interp: Option<kiln_interp::Interpreter>,
    /// Per product step, the op planned once for its operand types (`None` where the
    /// interpreter refused to plan it: that step then goes through `eval`, which reports).
    dot_plans: Vec<Option<kiln_interp::PlannedOp>>,
    /// Each kernel's machine code (alignment, bytes) when it has no relocations.
    pub(super) code: Vec<Option<(u32, Vec<u8>)>>,
    /// Per kernel, its tasks ([`kernel_tasks`]), worked out once: a loop body's cluster
    /// runs on every iteration, and a `Vec` of tasks per kernel per run was a
    /// measurable part of its cost.
    tasks: Vec<Vec<Task>>,
    /// Full-size temporaries of a finished run, kept for the next one (cleared before it
    /// uses them) when small ([`SPARE_TEMP_BYTES`]): a run that finds them taken (another
    /// thread runs this cluster) makes its own. No `malloc` per temporary per run.
    spare_temps: std::sync::Mutex<Vec<Tensor>>,
    /// The pool a whole run moves onto ([`CpuExecutable::run`]) when it would otherwise
    /// hand work to it at least [`HOP_MIN`] times.
    home: Option<std::sync::Arc<rayon::ThreadPool>>,
}

/// Hand-offs to the pool (parallel kernels, GEMM and convolution steps) from which a run
/// moves onto the pool as a whole. From a thread outside it, each `install` wakes a pool
/// thread and puts the caller to sleep until the work is done — a futex round trip per
/// step, 5–10 µs each on this 2-core VM (DenseNet-121's ~300 steps: a tenth of its time,
/// at one thread as at two). From a pool thread, the same `install` is a plain call.
const HOP_MIN: usize = 4;

// SAFETY: after `finalize_definitions` the JIT memory is immutable executable code; the
// kernels share no state and write only the buffers passed to each call.
unsafe impl Send for CpuExecutable {}
// SAFETY: as above; `run` takes `&self` and touches nothing shared mutably.
unsafe impl Sync for CpuExecutable {}

impl Drop for CpuExecutable {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `fns` point into this module and die with `self`.
            unsafe { m.free_memory() };
        }
    }
}

/// Finalizes a module whose kernels are defined and wraps it in an executable.
pub(super) fn assemble(
    program: Program,
    mut module: JITModule,
    ids: &[cranelift_module::FuncId],
    code: Vec<Option<(u32, Vec<u8>)>>,
    opts: &CpuOptions,
) -> Result<CpuExecutable, CpuCompileError> {
    let failed = CpuCompileError::Failed;
    module
        .finalize_definitions()
        .map_err(|e| failed(e.to_string()))?;
    let all: Vec<KernelFn> = ids
        .iter()
        .map(|&id| {
            let ptr = module.get_finalized_function(id);
            // SAFETY: the function was emitted with `kernel_signature`.
            unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) }
        })
        .collect();
    let list = function_list(&program);
    if list.len() != all.len() {
        return Err(failed(
            "function count differs from the function list".into(),
        ));
    }
    let fns = all[..program.kernels.len()].to_vec();
    let mut partial_fns = vec![None; program.kernels.len()];
    for (&(i, part), &f) in list.iter().zip(&all) {
        if let Part::Partials { .. } = part {
            partial_fns[i] = Some(f);
        }
    }
    let pool = if opts.threads > 1 {
        Some(kiln_interp::shared_pool(opts.threads).map_err(|e| failed(e.to_string()))?)
    } else {
        None
    };
    let blocking = row_blocking(&program);
    let pipeline = row_pipeline(&program, opts.block_math());
    let row_step = row_step(&program);
    let outputs_covered = outputs_covered(&program);
    let shared = shared_temps(&program);
    let interp = if program.dots.is_empty() && program.fills.is_empty() {
        None
    } else {
        Some(kiln_interp::Interpreter::new(opts.threads).map_err(|e| failed(e.to_string()))?)
    };
    let dot_plans = match &interp {
        Some(interp) => program
            .dots
            .iter()
            .map(|d| plan_dot(interp, &program, d))
            .collect(),
        None => Vec::new(),
    };
    // A kernel over nothing has no tasks (and no extent to divide its work by).
    let tasks: Vec<Vec<Task>> = (program.kernels.iter())
        .map(|k| match k.points() {
            0 => Vec::new(),
            _ => kernel_tasks(k),
        })
        .collect();
    let ty = |b: BufRef| match b {
        BufRef::Input(i) => program.inputs.get(i).cloned(),
        BufRef::Output(i) => program.outputs.get(i).cloned(),
        BufRef::Temp(i) => program.temps.get(i).cloned(),
        BufRef::Const(i) => program.consts.get(i).map(|c| c.ty()),
    };
    let parallel_dots = (program.dots.iter())
        .filter(|d| match (ty(d.lhs), ty(d.rhs), program.temps.get(d.out)) {
            (Some(a), Some(b), Some(out)) => {
                let op = d.op.to_op();
                kiln_interp::contraction_is_parallel(&op, &a.shape, b.num_elements(), out)
            }
            _ => false,
        })
        .count();
    let hops = parallel_dots
        + match &pool {
            Some(_) => tasks.iter().filter(|t| t.len() > 1).count(),
            None => 0,
        };
    let home = match (&pool, &interp) {
        _ if hops < HOP_MIN => None,
        (Some(pool), _) => Some(pool.clone()),
        (None, Some(_)) => {
            Some(kiln_interp::shared_pool(opts.threads).map_err(|e| failed(e.to_string()))?)
        }
        (None, None) => None,
    };
    Ok(CpuExecutable {
        home,
        tasks,
        spare_temps: std::sync::Mutex::new(Vec::new()),
        program,
        fns,
        partial_fns,
        module: Some(module),
        pool,
        opts: opts.clone(),
        blocking,
        pipeline,
        row_step,
        outputs_covered,
        shared,
        interp,
        dot_plans,
        code,
    })
}

/// A product step planned once for its operand types ([`kiln_interp::PlannedOp`]).
fn plan_dot(
    interp: &kiln_interp::Interpreter,
    p: &Program,
    d: &crate::kernel::DotCall,
) -> Option<kiln_interp::PlannedOp> {
    let ty = |b: BufRef| match b {
        BufRef::Input(i) => p.inputs.get(i).cloned(),
        BufRef::Temp(i) => p.temps.get(i).cloned(),
        BufRef::Const(i) => p.consts.get(i).map(|c| c.ty()),
        _ => None,
    };
    let (a, b) = (ty(d.lhs)?, ty(d.rhs)?);
    interp
        .plan(&d.op.to_op(), &[&a, &b], p.temps.get(d.out)?)
        .ok()
}

/// Calls a kernel function on one task.
fn call(f: KernelFn, args: Args, (r0, r1, c0, c1): Task) {
    // SAFETY: `args` covers every buffer of the program with its declared size; tasks of one
    // kernel write disjoint elements; the kernel was compiled for this program.
    unsafe { f(args.0, r0, r1, c0, c1) }
}

/// Buffer pointers handed to kernels; they are only dereferenced inside the kernels.
#[derive(Clone, Copy)]
struct Args(*const *mut u8);

/// The interpreter's fused scalar-op-and-extremum loop over one element type.
type ScalarExtremum<T> =
    fn(kiln_ir::BinaryOp, Option<&[T]>, T, &mut [T], kiln_ir::ReduceKind, &[T]) -> Option<T>;

/// [`CpuExecutable::fused_rows`] for elements of type `T`.
///
/// # Safety
/// `slot` gives the buffers of a program whose [`RowPipeline`] is `pl`, with rows `r` and
/// `r + 1` inside them (see the caller).
unsafe fn fused_row<T: Copy>(
    pl: &RowPipeline,
    r: usize,
    slot: impl Fn(BufRef) -> *mut u8,
    f: ScalarExtremum<T>,
) -> bool {
    let (n, m) = (pl.tail_len, pl.head_len);
    // SAFETY: as the caller promises.
    unsafe {
        let src = (slot(pl.tail_src) as *const T).add(r * n);
        let dst = (slot(pl.tail_dst) as *mut T).add(r * n);
        let c = *(slot(pl.tail_scalar) as *const T).add(r);
        let other = std::slice::from_raw_parts((slot(pl.head_src) as *const T).add((r + 1) * m), m);
        let out = std::slice::from_raw_parts_mut(dst, n);
        let src = (!std::ptr::eq(src, dst)).then(|| std::slice::from_raw_parts(src, n));
        match f(pl.op, src, c, out, pl.kind, other) {
            Some(v) => {
                *(slot(pl.head_dst) as *mut T).add(r + 1) = v;
                true
            }
            None => false,
        }
    }
}

impl Args {
    /// Pointer `i`.
    fn get(self, i: usize) -> *mut u8 {
        // SAFETY: callers pass an index inside the pointer array `self` was made from.
        unsafe { *self.0.add(i) }
    }

    /// A copy of the first `n` pointers.
    fn to_vec(self, n: usize) -> Vec<*mut u8> {
        // SAFETY: callers pass the length of the pointer array `self` was made from.
        unsafe { std::slice::from_raw_parts(self.0, n) }.to_vec()
    }
}
// SAFETY: tasks of one kernel write disjoint elements; inputs are only read.
unsafe impl Send for Args {}
// SAFETY: as above.
unsafe impl Sync for Args {}

fn buffer_ptr(b: &Buffer) -> *mut u8 {
    match b {
        Buffer::F32(v) => v.as_ptr() as *mut u8,
        Buffer::F64(v) => v.as_ptr() as *mut u8,
        Buffer::I32(v) => v.as_ptr() as *mut u8,
        Buffer::I64(v) => v.as_ptr() as *mut u8,
        Buffer::U32(v) => v.as_ptr() as *mut u8,
        Buffer::Bool(v) => v.as_ptr() as *mut u8,
        Buffer::U64(v) => v.as_ptr() as *mut u8,
        Buffer::I8(v) => v.as_ptr() as *mut u8,
        Buffer::U8(v) => v.as_ptr() as *mut u8,
        Buffer::I16(v) => v.as_ptr() as *mut u8,
        Buffer::U16(v) => v.as_ptr() as *mut u8,
        Buffer::F16(v) => v.as_ptr() as *mut u8,
        Buffer::Bf16(v) => v.as_ptr() as *mut u8,
    }
}

/// Temporaries are kept for the next run up to this many bytes in all: below it, a
/// `malloc` per temporary per run costs as much as the kernels (a loop body's cluster);
/// above it, clearing a kept buffer costs more than fresh zeroed pages, and the memory
/// would stay held between calls.
const SPARE_TEMP_BYTES: usize = 256 << 10;

/// Sets every element of `b` to zero (`false`), in place.
fn clear(b: &mut Buffer) {
    macro_rules! clear {
        ($($V:ident $t:ident),*) => {
            match b {
                $(Buffer::$V(v) => v.as_mut_slice().fill(<$t>::default()),)*
            }
        };
    }
    use kiln_ir::{bf16, f16};
    kiln_ir::for_each_dtype!(clear)
}

impl CpuExecutable {
    /// Runs the cluster: checks input types, allocates and returns the outputs.
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        match &self.home {
            Some(pool) if pool.current_thread_index().is_none() => {
                pool.install(|| self.run_here(inputs))
            }
            _ => self.run_here(inputs),
        }
    }

    /// [`CpuExecutable::run`] on the calling thread.
    fn run_here(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        let p = &self.program;
        if inputs.len() != p.inputs.len() {
            return Err(format!(
                "@{} takes {} inputs, got {}",
                p.name,
                p.inputs.len(),
                inputs.len()
            ));
        }
        for (i, (t, ty)) in inputs.iter().zip(&p.inputs).enumerate() {
            // Compared in place: building each input's type per call costs an allocation.
            if t.dtype() != ty.dtype || !kiln_ir::same_shape(t.shape(), &ty.shape) {
                return Err(format!(
                    "@{} input {i}: expected {ty}, got {}",
                    p.name,
                    t.ty()
                ));
            }
        }
        // Row-blocked programs keep their temporaries per block, never full size; shared
        // ones live in outputs.
        let temps = p
            .temps
            .iter()
            .zip(&self.shared)
            .filter(|(_, o)| self.blocking.is_none() && o.is_none())
            .map(|(t, _)| t);
        let bytes = (p.outputs.iter().chain(temps))
            .map(|t| t.num_elements() * t.dtype.size_bytes())
            .fold(0, usize::saturating_add);
        kiln_interp::check_allocation(bytes).map_err(|bytes| {
            format!(
                "@{}: out of memory: its outputs and temporaries need {bytes} bytes",
                p.name
            )
        })?;
        // Random outputs come whole from the host fill; their slots here are empty.
        let mut fills: Vec<Option<Tensor>> = vec![None; p.outputs.len()];
        for x in &p.fills {
            fills[x.out] = Some(self.run_fill(x, inputs)?);
        }
        let specs: Vec<_> = p
            .outputs
            .iter()
            .zip(&fills)
            .map(|(t, f)| (t.dtype, if f.is_some() { 0 } else { t.num_elements() }))
            .collect();
        let outputs = if self.outputs_covered {
            let mut result = Ok(());
            // SAFETY: `outputs_covered` proved that the kernels store every element of every
            // output; on an error the outputs are cleared before they are handed back.
            let bufs = unsafe {
                kiln_interp::filled_buffers(&specs, |outs| {
                    result = self.run_into(inputs, outs);
                    if result.is_err() {
                        for (&o, &(dt, n)) in outs.iter().zip(&specs) {
                            std::ptr::write_bytes(o, 0, n * dt.size_bytes());
                        }
                    }
                })
            };
            result.map(|()| bufs)
        } else {
            let bufs: Vec<Buffer> = specs
                .iter()
                .map(|&(dt, n)| kiln_interp::zeroed_buffer(dt, n))
                .collect();
            let outs: Vec<*mut u8> = bufs.iter().map(buffer_ptr).collect();
            self.run_into(inputs, &outs).map(|()| bufs)
        }?;
        outputs
            .into_iter()
            .zip(&p.outputs)
            .zip(fills)
            .map(|((b, t), fill)| match fill {
                Some(f) => Ok(f),
                None => Tensor::new(t.shape.clone(), b).map_err(|e| e.to_string()),
            })
            .collect()
    }

    /// Runs the kernels (and GEMM calls) with outputs at `outs`.
    fn run_into(&self, inputs: &[&Tensor], outs: &[*mut u8]) -> Result<(), String> {
        let p = &self.program;
        let blocked = self
            .blocking
            .filter(|_| p.kernels.iter().all(|k| k.points() > 0));
        // Row-blocked: scratch lives per block (see `run_blocked`), never full size.
        let mut temps: Vec<Tensor> = match blocked {
            Some(_) => Vec::new(),
            None => self.take_temps(),
        };
        let pointers = |temps: &[Tensor]| {
            let mut ptrs: Vec<*mut u8> = Vec::with_capacity(super::host::host_slot(p) + 1);
            ptrs.extend(inputs.iter().map(|t| buffer_ptr(t.data())));
            ptrs.extend(outs);
            match blocked {
                // Placeholders: each block points these slots at its own scratch.
                Some(_) => ptrs.extend(p.temps.iter().map(|_| std::ptr::null_mut::<u8>())),
                None => ptrs.extend(temps.iter().zip(&self.shared).map(|(t, o)| match o {
                    Some(o) => outs[*o],
                    None => buffer_ptr(t.data()),
                })),
            }
            ptrs.extend(p.consts.iter().map(|c| buffer_ptr(c.data())));
            debug_assert_eq!(ptrs.len(), buffer_slots(p));
            // The partials buffer of split reductions (set per kernel).
            ptrs.push(std::ptr::null_mut());
            ptrs.push(super::host::host_table_ptr(self.opts.math_512));
            debug_assert_eq!(ptrs.len(), super::host::host_slot(p) + 1);
            ptrs
        };
        let mut ptrs = pointers(&temps);
        if let Some((d0, per)) = blocked {
            self.run_blocked(&ptrs, d0, per);
        } else {
            for (i, (k, &f)) in p.kernels.iter().zip(&self.fns).enumerate() {
                for (j, d) in p.dots.iter().enumerate().filter(|(_, d)| d.before == i) {
                    self.run_dot(j, d, inputs, &mut temps)?;
                    // Only the product's own slot moved (a shared one points at its output).
                    if self.shared[d.out].is_none() {
                        ptrs[buffer_slot(p, BufRef::Temp(d.out))] = buffer_ptr(temps[d.out].data());
                    }
                }
                match (self.partial_fns[i], split_chunks(k)) {
                    (Some(pf), Some(chunks)) => {
                        // 8 bytes per partial covers every dtype; no clearing needed: each
                        // partial is written by exactly one task before it is read.
                        let mut partials: Vec<u64> = Vec::with_capacity(k.points() * chunks);
                        let last = buffer_slots(p);
                        ptrs[last] = partials.as_mut_ptr() as *mut u8;
                        let args = Args(ptrs.as_ptr());
                        let tasks = partial_tasks(k, chunks);
                        match &self.pool {
                            Some(pool) if tasks.len() > 1 => {
                                pool.install(|| tasks.par_iter().for_each(|&t| call(pf, args, t)))
                            }
                            _ => tasks.iter().for_each(|&t| call(pf, args, t)),
                        }
                        self.run_kernel(i, k, f, args);
                        ptrs[last] = std::ptr::null_mut();
                        drop(partials);
                    }
                    _ => self.run_kernel(i, k, f, Args(ptrs.as_ptr())),
                }
            }
        }
        let bytes = (temps.iter())
            .map(|t| t.num_elements() * t.dtype().size_bytes())
            .sum::<usize>();
        if blocked.is_none() && bytes <= SPARE_TEMP_BYTES {
            if let Ok(mut spare) = self.spare_temps.try_lock() {
                *spare = temps;
            }
        }
        Ok(())
    }

    /// The full-size temporaries of a run, zeroed: the previous run's when no other run
    /// holds them, else new ones. A product's buffer arrives with the product, before any
    /// kernel reads it: nothing to allocate (or clear) until then; a shared one is its
    /// output.
    fn take_temps(&self) -> Vec<Tensor> {
        let p = &self.program;
        let placeholder = |i: usize| p.dots.iter().any(|d| d.out == i) || self.shared[i].is_some();
        let spare = match self.spare_temps.try_lock() {
            Ok(mut spare) => std::mem::take(&mut *spare),
            Err(_) => Vec::new(),
        };
        if spare.len() == p.temps.len() {
            let mut temps = spare;
            for (i, t) in temps.iter_mut().enumerate() {
                if !placeholder(i) {
                    clear(t.data_mut());
                }
            }
            return temps;
        }
        (p.temps.iter().enumerate())
            .map(|(i, t)| match placeholder(i) {
                true => Tensor::zeros(&kiln_ir::TensorType::new(t.dtype, vec![0])),
                false => Tensor::zeros(t),
            })
            .collect()
    }

    /// A random output, computed by the interpreter's host fill.
    fn run_fill(
        &self,
        x: &crate::kernel::RandomFill,
        inputs: &[&Tensor],
    ) -> Result<Tensor, String> {
        let interp = self
            .interp
            .as_ref()
            .ok_or_else(|| "no thread pool for random fills".to_string())?;
        let seed = match x.seed {
            BufRef::Input(i) => inputs[i],
            BufRef::Const(i) => &*self.program.consts[i],
            other => return Err(format!("random fill seed {other:?}")),
        };
        let ty = &self.program.outputs[x.out];
        let t = interp
            .eval(
                &kiln_ir::Op::Random {
                    dist: x.dist,
                    alg: x.alg,
                },
                &[seed],
                ty,
            )
            .map_err(|e| e.to_string())?;
        if t.ty() != *ty {
            return Err(format!("random fill produced {}, expected {ty}", t.ty()));
        }
        Ok(t)
    }

    /// Runs every kernel on each block of leading rows in turn (blocks in parallel).
    ///
    /// Scratch buffers are block-local: `row_blocking` proved that every kernel touches only
    /// the rows of its own block in each scratch buffer, so a block's scratch is
    /// `(b1 - b0) × row` elements, reused from block to block by the worker that runs them
    /// (it stays in cache), and its slot in the argument array points `b0` rows *before*
    /// that storage so the kernels' global row offsets land in it. Nothing is read before
    /// the same block wrote it, so the scratch needs no clearing.
    fn run_blocked(&self, ptrs: &[*mut u8], d0: usize, per: usize) {
        let p = &self.program;
        let blocks: Vec<(usize, usize)> = (0..d0)
            .step_by(per)
            .map(|b| (b, (b + per).min(d0)))
            .collect();
        let first_temp = buffer_slot(p, BufRef::Temp(0));
        // Bytes of one leading row of each scratch buffer; `None` for those shared with an
        // output, whose slots point at the output itself (every row of it).
        let row_bytes: Vec<Option<usize>> = p
            .temps
            .iter()
            .zip(&self.shared)
            .map(|(t, o)| match o {
                Some(_) => None,
                None => Some(t.num_elements() / d0 * t.dtype.size_bytes()),
            })
            .collect();
        let base = Args(ptrs.as_ptr());
        let n = ptrs.len();
        let init = || -> (Vec<u64>, Vec<*mut u8>) {
            // u64 storage: 8-byte aligned for every dtype.
            let words = row_bytes
                .iter()
                .flatten()
                .map(|b| (b * per).div_ceil(8))
                .sum::<usize>();
            let mut args = base.to_vec(n);
            for (t, o) in self.shared.iter().enumerate() {
                if let Some(o) = *o {
                    args[first_temp + t] = args[buffer_slot(p, BufRef::Output(o))];
                }
            }
            (vec![0u64; words], args)
        };
        let block = |(scratch, args): &mut (Vec<u64>, Vec<*mut u8>), &(b0, b1): &(usize, usize)| {
            let mut at = scratch.as_mut_ptr() as *mut u8;
            for (t, &rb) in row_bytes.iter().enumerate() {
                let Some(rb) = rb else { continue };
                // Rebased so that global row b0 is the first row of the scratch; only
                // rows b0..b1 are ever dereferenced.
                args[first_temp + t] = at.wrapping_sub(b0 * rb);
                at = at.wrapping_add((rb * per).div_ceil(8) * 8);
            }
            let a = Args(args.as_ptr());
            match (&self.pipeline, self.row_step) {
                (Some(pl), _) => self.run_rows(pl, a, b0, b1),
                (None, Some(step)) => {
                    for r in (b0..b1).step_by(step) {
                        let r1 = (r + step).min(b1);
                        for (k, &f) in p.kernels.iter().zip(&self.fns) {
                            call(f, a, block_task(k, r, r1));
                        }
                    }
                }
                (None, None) => {
                    for (k, &f) in p.kernels.iter().zip(&self.fns) {
                        call(f, a, block_task(k, b0, b1));
                    }
                }
            }
        };
        match &self.pool {
            // One block (a small input) runs on the calling thread: waking the pool for it
            // costs more than the work.
            Some(pool) if blocks.len() > 1 => {
                pool.install(|| blocks.par_iter().for_each_init(init, block))
            }
            _ => {
                let mut state = init();
                blocks.iter().for_each(|b| block(&mut state, b))
            }
        }
    }

    /// Runs rows `b0..b1` one at a time (see [`RowPipeline`]): every kernel on row `r`, the
    /// last one fused with the first kernel of row `r + 1` when that row is in the block.
    fn run_rows(&self, pl: &RowPipeline, a: Args, b0: usize, b1: usize) {
        let (ks, fs) = (&self.program.kernels, &self.fns);
        let last = ks.len() - 1;
        call(fs[0], a, block_task(&ks[0], b0, b0 + 1));
        for r in b0..b1 {
            for (k, &f) in ks[1..last].iter().zip(&fs[1..last]) {
                call(f, a, block_task(k, r, r + 1));
            }
            let next = r + 1 < b1;
            if next && self.fused_rows(pl, a, r) {
                continue;
            }
            call(fs[last], a, block_task(&ks[last], r, r + 1));
            if next {
                call(fs[0], a, block_task(&ks[0], r + 1, r + 2));
            }
        }
    }

    /// The last kernel on row `r` and the first on row `r + 1`, in one host loop; `false`
    /// (nothing written) when the interpreter declines.
    fn fused_rows(&self, pl: &RowPipeline, a: Args, r: usize) -> bool {
        let slot = |b: BufRef| a.get(buffer_slot(&self.program, b));
        let at_width = |f: &mut dyn FnMut() -> bool| {
            if self.opts.math_512 {
                kiln_interp::with_512_bit_vectors(f)
            } else {
                f()
            }
        };
        // SAFETY: the pointers are the program's buffers (scratch rebased to this block);
        // row `r` of the last kernel's operands and output and row `r + 1` of the first
        // kernel's input lie inside them (`row_pipeline` checked the index maps), and the
        // result element `r + 1` of its scratch. The output row is the row operand itself
        // or disjoint from it (different buffers).
        unsafe {
            match pl.dtype {
                kiln_ir::DType::F32 => {
                    at_width(&mut || fused_row(pl, r, slot, kiln_interp::scalar_extremum_f32))
                }
                _ => at_width(&mut || fused_row(pl, r, slot, kiln_interp::scalar_extremum_f64)),
            }
        }
    }

    /// Runs one kernel over its whole iteration space.
    fn run_kernel(&self, i: usize, k: &Kernel, f: KernelFn, args: Args) {
        if k.points() == 0 {
            return;
        }
        let tasks = &self.tasks[i];
        match &self.pool {
            Some(pool) if tasks.len() > 1 => {
                pool.install(|| tasks.par_iter().for_each(|&t| call(f, args, t)))
            }
            _ => tasks.iter().for_each(|&t| call(f, args, t)),
        }
    }

    /// A matrix product or a convolution through the interpreter (the same GEMM routine,
    /// the same threads), into its temporary `temps[d.out]`: in place when that holds the
    /// product of an earlier run (kept by `take_temps`), else a new tensor.
    fn run_dot(
        &self,
        j: usize,
        d: &crate::kernel::DotCall,
        inputs: &[&Tensor],
        temps: &mut [Tensor],
    ) -> Result<(), String> {
        let interp = self
            .interp
            .as_ref()
            .ok_or_else(|| "no GEMM thread pool".to_string())?;
        let (before, rest) = temps.split_at_mut(d.out);
        let (out, after) = rest
            .split_first_mut()
            .ok_or_else(|| format!("product temporary {} does not exist", d.out))?;
        let operand = |b: BufRef| match b {
            BufRef::Input(i) => Ok(inputs[i]),
            BufRef::Temp(i) if i < d.out => Ok(&before[i]),
            BufRef::Temp(i) if i > d.out => Ok(&after[i - d.out - 1]),
            BufRef::Const(i) => Ok(&*self.program.consts[i]),
            other => Err(format!("dot operand {other:?}")),
        };
        let (a, b) = (operand(d.lhs)?, operand(d.rhs)?);
        match self.dot_plans.get(j).and_then(Option::as_ref) {
            Some(plan) => interp.run_planned_into(plan, &[a, b], out),
            None => interp
                .eval(&d.op.to_op(), &[a, b], &self.program.temps[d.out])
                .map(|t| *out = t),
        }
        .map_err(|e| e.to_string())
    }

    /// Whether kernels run block of rows by block of rows (see `schedule`).
    pub fn row_blocked(&self) -> bool {
        self.blocking.is_some()
    }

    /// Turns the row-blocked schedule off (or back on where the program allows it); for
    /// tests and benchmarks comparing schedules, which never differ in results.
    pub fn set_row_blocking(&mut self, on: bool) {
        self.blocking = if on {
            row_blocking(&self.program)
        } else {
            None
        };
    }

    /// How many rows of a block row-blocked runs take at a time, when fewer than the block
    /// (`schedule::row_step`).
    pub fn row_step(&self) -> Option<usize> {
        self.row_step
            .filter(|_| self.blocking.is_some() && self.pipeline.is_none())
    }

    /// Turns running a block's rows a few at a time off (or back on where the program allows
    /// it); for tests and benchmarks comparing schedules, which never differ in results.
    pub fn set_row_steps(&mut self, on: bool) {
        self.row_step = row_step(&self.program).filter(|_| on);
    }

    /// Whether row-blocked runs pipeline their rows (`RowPipeline`).
    pub fn row_pipelined(&self) -> bool {
        self.pipeline.is_some()
    }

    /// Turns row pipelining off (or back on where the program allows it); for tests and
    /// benchmarks comparing schedules, which never differ in results.
    pub fn set_row_pipelining(&mut self, on: bool) {
        self.pipeline = if on {
            row_pipeline(&self.program, self.opts.block_math())
        } else {
            None
        };
    }

    /// The kernel IR, as text (for dumps and cache keys).
    pub fn kernel_ir_text(&self) -> String {
        print_program(&self.program)
    }

    /// The lowered program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Threads a run uses.
    pub fn threads(&self) -> usize {
        self.opts.threads
    }

    /// Whether every kernel's machine code is available for [`CpuExecutable::to_bytes`].
    pub fn has_machine_code(&self) -> bool {
        self.code.iter().all(Option::is_some)
    }
}
