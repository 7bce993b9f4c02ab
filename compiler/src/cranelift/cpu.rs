//! The CPU backend's entry point: [`compile_cluster`] lowers a cluster to kernel IR, emits
//! each kernel with Cranelift and returns a [`CpuExecutable`] the runtime calls with host
//! tensors. Results never depend on [`CpuOptions::threads`]: threads split rows (and long
//! pointwise rows into column ranges), and every element is computed the same way.

use super::emit::{emit_kernel, kernel_signature};
use super::executable::assemble;
pub use super::executable::CpuExecutable;
pub use super::options::{CpuCompileError, CpuOptions};
use super::plan::{plan_kernel, TargetFacts};
use super::schedule::{function_list, Part};
use crate::kernel::{print_program, Kernel, Program, MAX_MATH_OPS};
use crate::lower::{lower_cluster, LowerError};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Signature;
use cranelift_codegen::isa::{TargetFrontendConfig, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc};
use kiln_ir::Cluster;
use rayon::prelude::*;

/// Host features the generated code may rely on.
pub(super) fn make_isa(
    opts: &CpuOptions,
) -> Result<(cranelift_codegen::isa::OwnedTargetIsa, bool), String> {
    let mut fb = settings::builder();
    let level = if opts.opt_level == 0 { "none" } else { "speed" };
    fb.set("opt_level", level).map_err(|e| e.to_string())?;
    fb.set("is_pic", "false").map_err(|e| e.to_string())?;
    // Cranelift's IR verifier runs between its passes and took a third of a cluster's
    // compile time in release builds (callgrind on flax_cnn's cluster: 31M of 96M
    // instructions). Test builds (debug assertions) keep it, so every kernel the tests
    // emit is verified; release builds skip it, as Wasmtime does by default.
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    fb.set("enable_verifier", verify)
        .map_err(|e| e.to_string())?;
    // Kernel frames hold staging and column blocks of up to hundreds of KiB: touch each
    // page on entry, top down, so a thread short of stack faults on its guard page (Rust
    // reports a stack overflow) instead of moving the stack pointer past it into whatever
    // memory lies below.
    fb.set("enable_probestack", "true")
        .map_err(|e| e.to_string())?;
    fb.set("probestack_strategy", "inline")
        .map_err(|e| e.to_string())?;
    let ib = cranelift_native::builder().map_err(|e| e.to_string())?;
    let isa = ib
        .finish(settings::Flags::new(fb))
        .map_err(|e| e.to_string())?;
    // Vector floor/ceil/nearest and i32x4 multiply need SSE4.1; without it, scalar code.
    let sse41 = isa
        .isa_flags()
        .iter()
        .any(|f| f.name == "has_sse41" && f.as_bool() == Some(true));
    let vector_ok = sse41 || !cfg!(target_arch = "x86_64");
    Ok((isa, vector_ok))
}

/// A JIT module for `isa` (libcalls resolved from the process, e.g. `floorf` on hosts
/// without SSE4.1).
pub(super) fn new_module(isa: cranelift_codegen::isa::OwnedTargetIsa) -> JITModule {
    let builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    JITModule::new(builder)
}

/// Compiles a cluster for this CPU.
pub fn compile_cluster(
    cluster: &Cluster,
    opts: &CpuOptions,
) -> Result<CpuExecutable, CpuCompileError> {
    let program = lower_cluster(cluster)
        .map_err(|LowerError::Unsupported(r)| CpuCompileError::Unsupported(r))?;
    compile_program(program, opts)
}

/// What the target offers kernels compiled with `opts` (`vector`: 128-bit vector code).
fn target_facts(opts: &CpuOptions, vector: bool) -> TargetFacts {
    TargetFacts {
        vector,
        block_math: opts.block_math(),
        sixteen_lanes: opts.block_math() && super::host::sixteen_lane_calls(),
    }
}

/// The plan of each kernel function of `exe` compiled with `opts` on this CPU, one line
/// each (`cluster_0_k0: vector=4 form=reduce ...`, as `TF_CPP_VMODULE=cpu_compiler=2` logs
/// them): what its code does, for tests and tools.
pub fn plan_lines(exe: &CpuExecutable, opts: &CpuOptions) -> Result<Vec<String>, CpuCompileError> {
    let (_, vector) = make_isa(opts).map_err(CpuCompileError::Failed)?;
    let facts = target_facts(opts, vector);
    let p = exe.program();
    Ok(function_list(p)
        .into_iter()
        .map(|(i, part)| {
            let plan = plan_kernel(p, &p.kernels[i], part, facts);
            format!("{}: {plan}", function_name(p, i, part))
        })
        .collect())
}

/// Compiles an already lowered program.
pub fn compile_program(
    program: Program,
    opts: &CpuOptions,
) -> Result<CpuExecutable, CpuCompileError> {
    let failed = CpuCompileError::Failed;
    if opts.threads == 0 {
        return Err(failed("threads must be at least 1".into()));
    }
    let mut program = program;
    crate::kernel::pipeline::run_target_passes(&mut program, &super::schedule::CPU_CAPS)
        .map_err(|e| failed(e.to_string()))?;
    if program
        .kernels
        .iter()
        .any(|k| k.points() > i32::MAX as usize / 2)
        || program
            .inputs
            .iter()
            .chain(&program.outputs)
            .any(|t| t.num_elements() > i32::MAX as usize / 2)
    {
        return Err(CpuCompileError::Unsupported(
            "tensors of 2^30 or more elements".into(),
        ));
    }
    if let Some(n) = program
        .kernels
        .iter()
        .map(Kernel::math_ops)
        .max()
        .filter(|&n| n > MAX_MATH_OPS)
    {
        return Err(CpuCompileError::Unsupported(format!(
            "a kernel with {n} transcendental ops (at most {MAX_MATH_OPS} are compiled \
             per kernel)"
        )));
    }
    let (isa, vector_ok) = make_isa(opts).map_err(failed)?;
    let facts = target_facts(opts, vector_ok);
    let mut module = new_module(isa);
    let sig = kernel_signature(module.isa().default_call_conv());
    let list = function_list(&program);
    let mut ids = Vec::with_capacity(list.len());
    for &(i, part) in &list {
        let name = function_name(&program, i, part);
        let id = module
            .declare_function(&name, Linkage::Local, &sig)
            .map_err(|e| failed(e.to_string()))?;
        ids.push(id);
    }
    let job = CompileJob {
        program: &program,
        isa: module.isa(),
        config: module.target_config(),
        sig: &sig,
        facts,
        opts,
    };
    // Functions compile independently (Cranelift's per-function pipeline), on the shared
    // pool of `threads` threads the kernels run on; they are defined below in list order,
    // so the module and its code are the same whichever thread compiled what.
    let compile = |f: usize| {
        let (i, part) = list[f];
        job.compile(i, part, ids[f])
    };
    let compiled: Vec<_> = if opts.threads > 1 && list.len() > 1 {
        let pool = kiln_interp::shared_pool(opts.threads).map_err(|e| failed(e.to_string()))?;
        pool.install(|| {
            (0..list.len())
                .into_par_iter()
                .with_max_len(1)
                .map(compile)
                .collect()
        })
    } else {
        (0..list.len()).map(compile).collect()
    };
    let mut code = Vec::with_capacity(list.len());
    let mut dumps = Vec::new();
    for (c, &id) in compiled.into_iter().zip(&ids) {
        let c = c.map_err(failed)?;
        module
            .define_function_bytes(id, c.alignment, &c.bytes, &c.relocs)
            .map_err(|e| failed(format!("{}: {e}", c.kernel)))?;
        if let Some(d) = c.dump {
            dumps.push(d);
        }
        // Code without relocations (no libcalls) can be cached and reloaded as bytes.
        code.push(c.relocs.is_empty().then_some((c.alignment as u32, c.bytes)));
    }
    if let Some(dir) = &opts.dump_to {
        write_dumps(dir, &program, &dumps);
    }
    assemble(program, module, &ids, code, opts)
}

/// What every function of one program is compiled with.
struct CompileJob<'a> {
    program: &'a Program,
    isa: &'a dyn TargetIsa,
    config: TargetFrontendConfig,
    sig: &'a Signature,
    facts: TargetFacts,
    opts: &'a CpuOptions,
}

/// One compiled function: its code and relocations, ready for `define_function_bytes`.
struct CompiledFunction {
    kernel: String,
    alignment: u64,
    bytes: Vec<u8>,
    relocs: Vec<ModuleReloc>,
    /// `--xla_dump_to`: (file stem, CLIF, machine code).
    dump: Option<(String, String, String)>,
}

impl CompileJob<'_> {
    /// Plans, emits and compiles function `(i, part)` of the function list (declared as
    /// `id`).
    fn compile(&self, i: usize, part: Part, id: FuncId) -> Result<CompiledFunction, String> {
        let (program, opts) = (self.program, self.opts);
        let k = &program.kernels[i];
        let name = function_name(program, i, part);
        let started = std::time::Instant::now();
        let mut ctx = cranelift_codegen::Context::new();
        ctx.set_disasm(opts.dump_to.is_some());
        ctx.func.signature = self.sig.clone();
        let plan = plan_kernel(program, k, part, self.facts);
        kiln_flags::vlog!(opts, kiln_flags::logging::CPU_COMPILER, 2, "{name}: {plan}");
        emit_kernel(program, k, &plan, &mut ctx.func, self.config)?;
        let clif = opts
            .dump_to
            .is_some()
            .then(|| ctx.func.display().to_string());
        let insts = ctx.func.dfg.num_insts();
        ctx.compile(self.isa, &mut ControlPlane::default())
            .map_err(|e| format!("{}: {:?}", k.name, e.inner))?;
        let c = ctx.compiled_code().ok_or("Cranelift returned no code")?;
        let relocs = c
            .buffer
            .relocs()
            .iter()
            .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
            .collect();
        let dump = clif.map(|clif| {
            let stem = match part {
                Part::Partials { .. } => format!("{}_partials", k.name),
                _ => k.name.clone(),
            };
            (stem, clif, c.vcode.clone().unwrap_or_default())
        });
        let out = CompiledFunction {
            kernel: k.name.clone(),
            alignment: u64::from(c.buffer.alignment),
            bytes: c.code_buffer().to_vec(),
            relocs,
            dump,
        };
        kiln_flags::vlog!(
            opts,
            kiln_flags::logging::CPU_COMPILER,
            1,
            "{name}: {insts} CLIF instructions, {} bytes of code in {} us",
            out.bytes.len(),
            started.elapsed().as_micros()
        );
        Ok(out)
    }
}

/// The symbol of function `(kernel, part)` of [`function_list`].
pub(super) fn function_name(p: &Program, kernel: usize, part: Part) -> String {
    let k = &p.kernels[kernel].name;
    match part {
        Part::Partials { .. } => format!("{}_{k}_partials", p.name),
        _ => format!("{}_{k}", p.name),
    }
}

fn write_dumps(dir: &std::path::Path, p: &Program, dumps: &[(String, String, String)]) {
    let write = |name: String, text: &str| {
        if let Err(e) = std::fs::write(dir.join(&name), text) {
            tracing::warn!("--xla_dump_to: cannot write {name}: {e}");
        }
    };
    let text = print_program(p);
    let stem = dump_stem(dir, &p.name, &text);
    write(format!("{stem}.kernel.txt"), &text);
    for (k, clif, asm) in dumps {
        write(format!("{stem}.{k}.clif"), clif);
        write(format!("{stem}.{k}.s"), asm);
    }
}

/// The file stem of a program's dumps in `dir`: its name, unless a different program of
/// that name was dumped there already (a loop body's `cluster_0` and the function's own
/// `cluster_0`), then `name.1`, `name.2`, …: the first whose `.kernel.txt` is free or holds
/// this program's text (a recompile of the same program overwrites its own dumps).
fn dump_stem(dir: &std::path::Path, name: &str, text: &str) -> String {
    for k in 0u32.. {
        let stem = match k {
            0 => name.to_string(),
            k => format!("{name}.{k}"),
        };
        match std::fs::read_to_string(dir.join(format!("{stem}.kernel.txt"))) {
            Ok(old) if old != text => continue,
            _ => return stem,
        }
    }
    name.to_string()
}
