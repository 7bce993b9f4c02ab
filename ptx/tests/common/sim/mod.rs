//! A reference simulator for the PTX subset kiln emits, with each instruction's semantics
//! written from the PTX ISA manual (rounding by the host's IEEE arithmetic). It checks the
//! *emitter* without a GPU — operand order, types, register flow, the min/max and rotate
//! legalisations, index arithmetic, and the warp-level reduction — not the hardware;
//! `gpu_math` checks the hardware.
//!
//! Two ways to run: [`Program::run`] executes a math kernel as one thread; [`Program::launch`]
//! executes an entry of the kernel-IR emitter over a whole grid: every thread has its own
//! registers and `%ctaid/%ntid/%tid/%nctaid`, threads are grouped in warps of 32, and
//! `shfl.sync` is a warp-wide rendezvous (every lane of the full mask must reach the *same*
//! `shfl` instruction, else the launch fails, as it would hang or be undefined on hardware).
//! Memory is byte-addressed and little-endian; every store is recorded, so a test can check
//! that each output element was written exactly once (no races, no gaps). Every access is
//! bounds-checked and naturally aligned; a vector access (`ld/st.global.v4.T {a, b, c, d}`,
//! lanes at increasing addresses) must be aligned to the whole vector (16 bytes for 4-byte
//! `T`), as on hardware.
//!
//! Shared memory (kernel-scope `.shared .align A .b8 name[N]` arrays; `mov` of the name gives
//! its offset in the shared window, from 0) is fresh per block and bounds-, alignment- and
//! initialisation-checked. `bar.warp.sync -1` is a warp-wide rendezvous like `shfl.sync`,
//! and the only thing that orders shared memory between lanes: each access is checked
//! against the byte's last writer and readers, and a write and another access by two
//! different lanes with no `bar.warp.sync` between them (or by two different warps: no
//! `bar.sync` is simulated) is a data race that fails the launch — whatever order the
//! simulator happens to run the lanes in.
//!
//! Files: `program.rs` (parsing, and one-thread runs of math kernels), `launch.rs` (a grid
//! of warps), `thread.rs` (one thread's state, shuffle lanes), `memory.rs` (global and
//! shared memory with the race detector), `exec.rs` (each instruction's semantics).

mod exec;
mod launch;
mod memory;
mod program;
mod thread;

pub use memory::Memory;
pub use program::Program;
