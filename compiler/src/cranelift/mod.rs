//! The Cranelift CPU backend: kernel IR -> machine code through `cranelift-jit`.
//!
//! `arith` implements `kiln_math::Arith` over Cranelift values (Invariant 1), `ops` the
//! elementwise semantics, `values` the DAG at one iteration point, `random` stateless random
//! elements (`kiln_rng`'s generic Philox/ThreeFry code), `emit` the loops and the
//! canonical-order reductions (Invariant 2), `host` the host functions kernels call (float
//! remainder, block math), and `cpu` the public entry point.
//!
//! Deliberately not here: lowering decisions (see [`crate::lower`]) and GEMM.

mod arith;
mod cache;
pub mod cpu;
mod emit;
mod host;
mod ops;
mod random;
mod schedule;
mod values;
