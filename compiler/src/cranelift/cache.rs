//! The bytes of a [`CpuExecutable`] for the persistent cache (issue 6): a header, then a
//! bincode payload with the kernel IR (launch metadata included) and each kernel's
//! finalized machine code. Code is only reused on a host with the same target and CPU
//! feature flags and the same optimisation level; otherwise, or for kernels whose code has
//! relocations (libcalls; host calls go through a table instead, see `host`), the kernel IR
//! is compiled again — never wrong code, at worst a millisecond of codegen.

use super::cpu::{compile_program, function_name, make_isa, new_module};
use super::emit::kernel_signature;
use super::executable::{assemble, CpuExecutable};
use super::options::CpuOptions;
use crate::kernel::Program;
use cranelift_module::{Linkage, Module};
use serde::{Deserialize, Serialize};

/// Header of every payload; bump the digit when the layout changes, or when the code for
/// the same kernel IR gets faster or safer (5: column reductions in tiles; 6: stack
/// probes; 8: a host-table entry for shifted scalar block math; 9: one for a binary op
/// rounded to 16 bits; A: one for a float sum's accumulation; B: 16-bit variances' sums in
/// it; C: the binary-rounding call's code with a third op bit, for maximum and minimum), so
/// entries compiled before are compiled again instead of reused.
const MAGIC: &[u8] = b"KILNCPUC";

#[derive(Serialize, Deserialize)]
struct Payload {
    /// Target triple and ISA flags the code was compiled for.
    host: String,
    /// `xla_backend_optimization_level` it was compiled with.
    opt_level: u8,
    /// Whether its kernels call block math ([`CpuOptions::wide_math`] on a host with it).
    wide_math: bool,
    program: Program,
    /// Per kernel: (alignment, bytes), when relocation-free.
    code: Vec<Option<(u32, Vec<u8>)>>,
}

/// What the machine code depends on: target triple and every ISA flag.
fn host_key(opts: &CpuOptions) -> Result<String, String> {
    let (isa, _) = make_isa(opts)?;
    let flags: Vec<String> = isa.isa_flags().iter().map(|f| f.to_string()).collect();
    Ok(format!("{} {}", isa.triple(), flags.join(",")))
}

/// Encodes an executable's parts.
fn encode(program: &Program, code: &[Option<(u32, Vec<u8>)>], opts: &CpuOptions) -> Vec<u8> {
    let payload = Payload {
        host: host_key(opts).unwrap_or_default(),
        opt_level: opts.opt_level,
        wide_math: opts.block_math(),
        program: program.clone(),
        code: code.to_vec(),
    };
    let mut out = MAGIC.to_vec();
    // Encoding plain data structures into a Vec cannot fail; an empty payload would only
    // make `decode` report a corrupt entry.
    out.extend(
        bincode::serde::encode_to_vec(&payload, bincode::config::standard()).unwrap_or_default(),
    );
    out
}

/// Decodes bytes written by [`encode`] into a runnable executable.
fn decode(bytes: &[u8], opts: &CpuOptions) -> Result<CpuExecutable, String> {
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| "not a Kiln CPU executable (bad header)".to_string())?;
    let (p, _): (Payload, usize) =
        bincode::serde::decode_from_slice(body, bincode::config::standard())
            .map_err(|e| format!("corrupt Kiln CPU executable: {e}"))?;
    let list = super::schedule::function_list(&p.program);
    if p.code.len() != list.len() {
        return Err("corrupt Kiln CPU executable: code and functions differ in number".into());
    }
    let reusable = p.opt_level == opts.opt_level
        && p.wide_math == opts.block_math()
        && p.host == host_key(opts)?
        && p.code.iter().all(Option::is_some);
    if !reusable {
        return compile_program(p.program, opts).map_err(|e| e.to_string());
    }
    let (isa, _) = make_isa(opts)?;
    let mut module = new_module(isa);
    let sig = kernel_signature(module.isa().default_call_conv());
    let mut ids = Vec::new();
    for (&(i, part), code) in list.iter().zip(&p.code) {
        let id = module
            .declare_function(&function_name(&p.program, i, part), Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        if let Some((align, bytes)) = code {
            module
                .define_function_bytes(id, u64::from(*align), bytes, &[])
                .map_err(|e| e.to_string())?;
        }
        ids.push(id);
    }
    assemble(p.program, module, &ids, p.code, opts).map_err(|e| e.to_string())
}

impl CpuExecutable {
    /// Serialises the executable for the persistent cache: the kernel IR, launch metadata
    /// and each kernel's finalized machine code (this module).
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(&self.program, &self.code, &self.opts)
    }

    /// Loads an executable written by [`CpuExecutable::to_bytes`]: machine code is defined
    /// with `define_function_bytes`, without running codegen, when it was produced for this
    /// host's CPU features and options; otherwise the kernel IR is compiled again.
    pub fn from_bytes(bytes: &[u8], opts: &CpuOptions) -> Result<CpuExecutable, String> {
        decode(bytes, opts)
    }
}
