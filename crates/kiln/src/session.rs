//! A [`Session`]: the compiler options and the runtime built from one set of flags — what
//! `Function` and `kiln run` use to turn a graph into results (clustering, then the runtime
//! with its compile policy and caches).

use crate::KilnError;
use kiln_flags::Flags;
use kiln_ir::{Func, Tensor};
use kiln_runtime::{Backend, Runtime, RuntimeOptions};
use std::sync::Arc;

/// Compiler options plus a runtime, from one `Flags` value.
#[derive(Clone, Debug)]
pub struct Session {
    compiler: kiln_compiler::Options,
    runtime: Runtime,
}

impl Session {
    /// A session for the flags in effect (environment plus programmatic switches).
    pub fn from_env() -> Result<Session, KilnError> {
        Session::new(&crate::config::flags()?)
    }

    /// A session for the given flags.
    pub fn new(flags: &Flags) -> Result<Session, KilnError> {
        let opts = RuntimeOptions::from_flags(flags)?;
        let runtime = Runtime::new(default_backend(flags), opts)?;
        Ok(Session {
            compiler: kiln_compiler::Options::from_flags(flags),
            runtime,
        })
    }

    /// Runs the pass pipeline (including auto-clustering) over a traced or parsed graph.
    pub fn prepare(&self, f: &mut Func) -> Result<(), KilnError> {
        kiln_compiler::run_pipeline(f, &self.compiler)?;
        Ok(())
    }

    /// Runs a prepared graph.
    pub fn run(&self, f: &Func, args: &[Tensor]) -> Result<Vec<Tensor>, KilnError> {
        Ok(self.runtime.run(f, args)?)
    }

    /// The runtime (statistics, waiting for background compiles).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// The code generator for this machine: Cranelift for the CPU.
fn default_backend(flags: &Flags) -> Option<Arc<dyn Backend>> {
    Some(Arc::new(kiln_runtime::CpuBackend::new(flags)))
}
