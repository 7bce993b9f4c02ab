//! The passes, one per file. Each is `run(&mut Func, &Options) -> Result<bool, CompileError>`
//! returning whether it changed the graph.

pub mod cse;
pub mod dce;
pub mod mark_for_compilation;
pub mod simplify;
