//! The Cranelift CPU backend: kernel IR -> machine code through `cranelift-jit`.
//!
//! Its shape is every backend's: [`cpu::CpuOptions`], [`cpu::CpuCompileError`], one entry
//! point ([`cpu::compile_program`], or [`cpu::compile_cluster`] from a cluster) and the
//! compiled artifact [`cpu::CpuExecutable`]. What it asks of the kernel IR it states as data
//! ([`CPU_CAPS`], run by [`crate::kernel::pipeline`]).
//!
//! Files: `options` (options and errors), `cpu` (the entry point: codegen of every kernel
//! function), `executable` (running the functions), `cache` (its bytes for the persistent
//! cache); `schedule` decides what runs where (tasks, row blocking, split reductions),
//! `plan` how each kernel function runs (vector width, loop form, host calls, pinned and
//! staged nodes), all before any code exists; `emit` renders a plan: each kernel's loops
//! and canonical-order reductions (Invariant 2), `values` the DAG at one iteration point, `lanes` lane widths, `arith` `kiln_math::Arith`
//! over Cranelift values (Invariant 1), `ops` the elementwise semantics, `random`
//! stateless random elements (`kiln_rng`'s generic Philox/ThreeFry code), `host` the host
//! functions kernels call (float remainder, block math).
//!
//! Deliberately not here: lowering decisions (see [`crate::lower`]) and GEMM.

mod arith;
mod cache;
pub mod cpu;
mod emit;
mod executable;
mod host;
mod lanes;
mod ops;
mod options;
mod plan;
mod random;
mod schedule;
mod values;

pub use schedule::CPU_CAPS;
