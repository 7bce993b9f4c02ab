//! The CPU backend: clusters compiled to native code by Cranelift (`kiln_compiler::cpu`).

use crate::backend::{Backend, CompileFailure, Executable};
use kiln_compiler::cpu::{compile_cluster, CpuCompileError, CpuExecutable, CpuOptions};
use kiln_ir::{Cluster, Tensor};
use std::sync::Arc;

/// Compiles clusters for this machine's CPU.
#[derive(Debug, Clone)]
pub struct CpuBackend {
    opts: CpuOptions,
    target: String,
}

impl CpuBackend {
    /// A backend with the flags' thread count, optimisation level and dump directory.
    pub fn new(flags: &kiln_flags::Flags) -> CpuBackend {
        let opts = CpuOptions {
            threads: flags.cpu_threads(),
            opt_level: flags.backend_optimization_level,
            dump_to: flags.dump_to.clone(),
            wide_math: flags.cpu_prefer_vector_width >= 256,
            math_512: flags.cpu_prefer_vector_width >= 512,
            vmodule: flags.vmodule.clone(),
        };
        // Results do not depend on the thread count, so it is not part of the key.
        let target = format!(
            "{} {} opt_level={} wide_math={}",
            std::env::consts::ARCH,
            host_features(),
            u8::from(opts.opt_level > 0),
            u8::from(opts.wide_math && kiln_interp::wide_simd())
        );
        CpuBackend { opts, target }
    }
}

/// The host features code generation may depend on.
fn host_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut f = Vec::new();
        if std::arch::is_x86_feature_detected!("sse4.1") {
            f.push("sse4.1");
        }
        if std::arch::is_x86_feature_detected!("avx") {
            f.push("avx");
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            f.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("fma") {
            f.push("fma");
        }
        f.join(",")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        String::new()
    }
}

struct CpuExe(CpuExecutable);

impl Executable for CpuExe {
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        self.0.run(inputs)
    }
    fn to_bytes(&self) -> Option<Vec<u8>> {
        Some(self.0.to_bytes())
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn target_key(&self) -> String {
        self.target.clone()
    }

    fn compile(&self, cluster: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure> {
        match compile_cluster(cluster, &self.opts) {
            Ok(exe) => Ok(Arc::new(CpuExe(exe))),
            Err(CpuCompileError::Unsupported(why)) => Err(CompileFailure::Unsupported(why)),
            Err(CpuCompileError::Failed(why)) => Err(CompileFailure::Failed(why)),
        }
    }

    fn load(&self, _cluster: &Cluster, bytes: &[u8]) -> Result<Arc<dyn Executable>, String> {
        Ok(Arc::new(CpuExe(CpuExecutable::from_bytes(
            bytes, &self.opts,
        )?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefer_vector_width_sets_block_math_and_the_cache_key() {
        let mut flags = kiln_flags::Flags::default();
        let wide = CpuBackend::new(&flags);
        assert!(wide.opts.wide_math && !wide.opts.math_512);
        flags.cpu_prefer_vector_width = 512;
        let widest = CpuBackend::new(&flags);
        assert!(widest.opts.wide_math && widest.opts.math_512);
        // The machine code is the same at 256 and 512 (only the host functions it calls
        // differ), so the two share cache entries.
        assert_eq!(widest.target_key(), wide.target_key());
        flags.cpu_prefer_vector_width = 128;
        let narrow = CpuBackend::new(&flags);
        assert!(!narrow.opts.wide_math);
        // Code compiled one way is not reused the other way where the two differ.
        assert_eq!(
            wide.target_key() == narrow.target_key(),
            !kiln_interp::wide_simd()
        );
    }
}
