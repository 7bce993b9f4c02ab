//! kiln-flags: the one place Kiln reads the environment variables that steer XLA.
//!
//! [`Flags::from_env`] reads `TF_XLA_FLAGS`, `XLA_FLAGS`, `TF_DETERMINISTIC_OPS`,
//! `TF_CPP_VMODULE`, `TF_CPP_MIN_LOG_LEVEL` and the automatic mixed precision rewrite's
//! variables ([`Variable::MIXED_PRECISION`]) once, strictly, into a typed [`Flags`] value that
//! the rest of Kiln receives as an argument. Nothing else in Kiln reads these variables, so a
//! test can build any configuration with [`Flags::from_sources`] or `Flags { .., ..Default }`
//! without touching the process environment.
//!
//! Every flag is declared once, in [`FLAGS`]; the parser, `kiln flags`
//! ([`render_flags_table`]) and `docs/flags.md` ([`render_flags_markdown`]) all come from that
//! table.
//!
//! **Invariant:** this crate knows nothing about graphs, backends or devices. It parses and
//! describes settings; acting on them is the job of the crates that receive [`Flags`].
//! Its only side effects are reading a flag file that a variable names, and
//! [`init_logging`], which the CLI calls once.

#![warn(missing_docs)]

mod error;
pub mod files;
pub mod logging;
mod mixed_precision;
mod parse;
mod provenance;
mod render;
mod spec;
mod values;
mod vmodule;

#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_flags;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The most threads `--xla_cpu_num_threads` (and `kiln run --threads`) may ask for: above
/// any machine's core count, below the thousands of threads that take seconds just to start.
pub const MAX_CPU_THREADS: usize = 1024;

pub use error::{FlagsError, Location, Malformed, Suggestion, VModuleProblem};
pub use logging::{init_logging, logger_builder};
pub use mixed_precision::{AmpDtype, AmpLevel, ListEdit, MixedPrecision};
pub use provenance::{Origin, Provenance, Source, Variable};
pub use render::{render_flags_markdown, render_flags_table, source_text};
pub use spec::{find_flag, Effect, FlagSpec, FLAGS};
pub use values::{AutoJit, Kind};
pub use vmodule::VModule;

/// Lets [`vlog!`] reach `tracing` without every caller depending on it.
#[doc(hidden)]
pub mod __private {
    pub use tracing;
}

/// The raw text of every variable Kiln reads; `None` when the variable is not set.
///
/// [`Flags::from_env`] fills this from the process environment; tests fill it by hand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// `TF_XLA_FLAGS`.
    pub tf_xla_flags: Option<String>,
    /// `XLA_FLAGS`.
    pub xla_flags: Option<String>,
    /// `TF_DETERMINISTIC_OPS`.
    pub tf_deterministic_ops: Option<String>,
    /// `TF_CPP_VMODULE`.
    pub tf_cpp_vmodule: Option<String>,
    /// `TF_CPP_MIN_LOG_LEVEL`.
    pub tf_cpp_min_log_level: Option<String>,
    /// The automatic mixed precision rewrite's variables ([`Variable::MIXED_PRECISION`]),
    /// each holding one value.
    pub mixed_precision: BTreeMap<Variable, String>,
}

impl Sources {
    /// Sets the variable named `name` (`TF_XLA_FLAGS`, `TF_ENABLE_AUTO_MIXED_PRECISION`, …);
    /// an error naming the variables Kiln reads when it reads no variable of that name.
    pub fn set(&mut self, name: &str, value: impl Into<String>) -> Result<(), String> {
        let variable = Variable::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Variable::ALL.iter().map(|v| v.name()).collect();
            format!(
                "Kiln reads no variable `{name}`; it reads {}",
                known.join(", ")
            )
        })?;
        let value: String = value.into();
        match variable {
            Variable::TfXlaFlags => self.tf_xla_flags = Some(value),
            Variable::XlaFlags => self.xla_flags = Some(value),
            Variable::TfDeterministicOps => self.tf_deterministic_ops = Some(value),
            Variable::TfCppVmodule => self.tf_cpp_vmodule = Some(value),
            Variable::TfCppMinLogLevel => self.tf_cpp_min_log_level = Some(value),
            other => {
                self.mixed_precision.insert(other, value);
            }
        }
        Ok(())
    }
}

/// Every setting Kiln takes from the environment, typed. See [`FLAGS`] (or `docs/flags.md`)
/// for what each one does and whether this build acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flags {
    /// `--tf_xla_auto_jit`: the auto-clustering level. Default [`AutoJit::On`].
    pub auto_jit: AutoJit,
    /// `--tf_xla_cpu_global_jit`: whether auto-clustering applies to CPU devices. Default true.
    pub cpu_global_jit: bool,
    /// `--tf_xla_min_cluster_size`: smaller auto-clusters are dropped. Default 4.
    pub min_cluster_size: usize,
    /// `--tf_xla_max_cluster_size`: the largest cluster, in ops; `None` is unbounded.
    pub max_cluster_size: Option<usize>,
    /// `--tf_xla_clustering_fuel`: how many ops may become candidates; `None` is unbounded.
    pub clustering_fuel: Option<u64>,
    /// `--tf_xla_enable_lazy_compilation`: run the fallback twice before compiling. Default true.
    pub lazy_compilation: bool,
    /// `--tf_xla_always_defer_compilation`: never compile. Default false.
    pub always_defer_compilation: bool,
    /// `--tf_xla_async_compilation`: compile in the background. Default false.
    pub async_compilation: bool,
    /// `--tf_xla_persistent_cache_directory` / `--xla_gpu_persistent_cache_dir`. Only parsed
    /// here; the runtime checks that the directory is usable.
    pub persistent_cache_dir: Option<PathBuf>,
    /// `--tf_xla_clustering_debug`: dump the graph around clustering. Default false.
    pub clustering_debug: bool,
    /// `--tf_xla_deterministic_cluster_names`: fingerprint-based cluster names. Default false.
    pub deterministic_cluster_names: bool,
    /// `--tf_xla_async_io_level`: 0 or 1. Not acted on yet.
    pub async_io_level: u8,
    /// `--xla_gpu_autotune_level`: 0–4, default 4. GPU launch-config autotuning.
    pub autotune_level: u8,
    /// `--xla_backend_optimization_level`: 0–3, default 3.
    pub backend_optimization_level: u8,
    /// `--xla_gpu_disable_ptxas_optimizations`: GPU only. Default false.
    pub disable_ptxas_optimizations: bool,
    /// `--xla_multiheap_size_constraint_per_heap`: -1 is one heap. Not acted on yet.
    pub multiheap_size_constraint_per_heap: i64,
    /// `--xla_dump_to`: the dump directory, if any.
    pub dump_to: Option<PathBuf>,
    /// `--xla_disable_hlo_passes`: graph passes to skip, by name.
    pub disabled_passes: Vec<String>,
    /// `--xla_gpu_deterministic_ops` exactly as written; it is folded into
    /// [`Flags::deterministic_ops`], which is what the rest of Kiln should consult.
    pub gpu_deterministic_ops: bool,
    /// `--xla_cpu_num_threads`: 0 means the number of cores; see [`Flags::cpu_threads`].
    pub cpu_num_threads: usize,
    /// `--xla_cpu_prefer_vector_width`: 256 (XLA's default) lets compiled CPU kernels run
    /// transcendental math 256 bits wide, 512 runs it 512 bits wide on a CPU with AVX-512;
    /// 128 keeps every instruction in Cranelift's code.
    pub cpu_prefer_vector_width: i64,
    /// `--xla_allow_excess_precision`: 16-bit float (`f16`/`bf16`) values computed inside a
    /// program stay in `f32` between ops and are rounded where they leave for an op that
    /// stores or consumes 16 bits (the `excess_precision` pass). Kiln's default is false:
    /// XLA:CPU rounds after every op (XLA's own default, true, acts only on its GPU and
    /// oneDNN paths).
    pub allow_excess_precision: bool,
    /// Op determinism: `TF_DETERMINISTIC_OPS`, `--xla_gpu_deterministic_ops` or
    /// [`Flags::enable_op_determinism`].
    pub deterministic_ops: bool,
    /// `TF_CPP_VMODULE`: verbose-logging level per module.
    pub vmodule: VModule,
    /// `TF_CPP_MIN_LOG_LEVEL`: 0 shows INFO; 1 (Kiln's default) hides INFO; 2 hides WARNING
    /// too; 3 hides ERROR too.
    pub min_log_level: u8,
    /// TensorFlow's automatic mixed precision graph rewrite: `TF_ENABLE_AUTO_MIXED_PRECISION*`,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_*` and `--kiln_amp_dtype`. Off by default.
    pub mixed_precision: MixedPrecision,
    /// Where each non-default value came from, for `kiln flags`.
    pub provenance: Provenance,
}

impl Default for Flags {
    /// TensorFlow's defaults, except the deliberate differences documented in `docs/flags.md`:
    /// auto-clustering is on (`1`) on every device, CPU included.
    fn default() -> Flags {
        Flags {
            auto_jit: AutoJit::On,
            cpu_global_jit: true,
            min_cluster_size: 4,
            max_cluster_size: None,
            clustering_fuel: None,
            lazy_compilation: true,
            always_defer_compilation: false,
            async_compilation: false,
            persistent_cache_dir: None,
            clustering_debug: false,
            deterministic_cluster_names: false,
            async_io_level: 0,
            autotune_level: 4,
            backend_optimization_level: 3,
            disable_ptxas_optimizations: false,
            multiheap_size_constraint_per_heap: -1,
            dump_to: None,
            disabled_passes: Vec::new(),
            gpu_deterministic_ops: false,
            cpu_num_threads: 0,
            cpu_prefer_vector_width: 256,
            allow_excess_precision: false,
            deterministic_ops: false,
            vmodule: VModule::default(),
            min_log_level: 1,
            mixed_precision: MixedPrecision::default(),
            provenance: Provenance::default(),
        }
    }
}

impl Flags {
    /// Reads `TF_XLA_FLAGS`, `XLA_FLAGS`, `TF_DETERMINISTIC_OPS`, `TF_CPP_VMODULE`,
    /// `TF_CPP_MIN_LOG_LEVEL` and the mixed precision variables from the process environment. This is the only function in
    /// Kiln that reads them; call it once, at the edge, and pass the result down.
    pub fn from_env() -> Result<Flags, FlagsError> {
        let read = |variable: Variable| match std::env::var(variable.name()) {
            Ok(value) => Ok(Some(value)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(FlagsError::NotUnicode { variable }),
        };
        Flags::from_sources(&Sources {
            tf_xla_flags: read(Variable::TfXlaFlags)?,
            xla_flags: read(Variable::XlaFlags)?,
            tf_deterministic_ops: read(Variable::TfDeterministicOps)?,
            tf_cpp_vmodule: read(Variable::TfCppVmodule)?,
            tf_cpp_min_log_level: read(Variable::TfCppMinLogLevel)?,
            mixed_precision: Variable::MIXED_PRECISION
                .into_iter()
                .filter_map(|v| {
                    read(v)
                        .map(|value| value.map(|value| (v, value)))
                        .transpose()
                })
                .collect::<Result<_, _>>()?,
        })
    }

    /// Builds flags from the given variable texts. An unset or empty variable leaves its
    /// settings at their defaults, as in TensorFlow. Flag files are read from disk.
    pub fn from_sources(sources: &Sources) -> Result<Flags, FlagsError> {
        let mut flags = Flags::default();
        if let Some(value) = non_empty(&sources.tf_deterministic_ops) {
            flags.deterministic_ops =
                values::parse_bool(value).ok_or_else(|| FlagsError::BadDeterministicOps {
                    value: value.to_string(),
                })?;
            flags.record_variable(Variable::TfDeterministicOps);
        }
        if let Some(value) = &sources.tf_xla_flags {
            parse::apply_variable(&mut flags, Variable::TfXlaFlags, value)?;
        }
        if let Some(value) = &sources.xla_flags {
            parse::apply_variable(&mut flags, Variable::XlaFlags, value)?;
        }
        if let Some(value) = non_empty(&sources.tf_cpp_vmodule) {
            flags.vmodule = VModule::parse(value)?;
            flags.record_variable(Variable::TfCppVmodule);
        }
        if let Some(value) = non_empty(&sources.tf_cpp_min_log_level) {
            let level =
                values::parse_int(value, 0, 3).ok_or_else(|| FlagsError::BadMinLogLevel {
                    value: value.to_string(),
                })?;
            flags.min_log_level = u8::try_from(level).unwrap_or(1);
            flags.record_variable(Variable::TfCppMinLogLevel);
        }
        for (&variable, value) in &sources.mixed_precision {
            flags.apply_single_value(variable, value)?;
        }
        // Kiln has one determinism setting; XLA's GPU flag turns it on like TF_DETERMINISTIC_OPS.
        if flags.gpu_deterministic_ops && !flags.deterministic_ops {
            flags.deterministic_ops = true;
            if let Some(origin) = flags
                .provenance
                .origin("xla_gpu_deterministic_ops")
                .cloned()
            {
                flags.provenance.record("TF_DETERMINISTIC_OPS", origin);
            }
        }
        Ok(flags)
    }

    /// Turns op determinism on from code, like `tf.config.experimental.enable_op_determinism()`;
    /// `kiln::config::enable_op_determinism()` is built on this.
    pub fn enable_op_determinism(&mut self) {
        self.deterministic_ops = true;
        self.provenance.record(
            "TF_DETERMINISTIC_OPS",
            Origin {
                source: Source::Programmatic,
                via: "TF_DETERMINISTIC_OPS",
            },
        );
    }

    /// Threads for CPU kernels: `cpu_num_threads`, or the number of cores when it is 0.
    pub fn cpu_threads(&self) -> usize {
        match self.cpu_num_threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        }
    }

    /// Parses a variable that holds one value through its row of [`FLAGS`]; an unset or blank
    /// value leaves the default, as in TensorFlow.
    fn apply_single_value(&mut self, variable: Variable, value: &str) -> Result<(), FlagsError> {
        let value = value.trim();
        let spec = FLAGS.iter().find(|s| !s.is_flag() && s.home() == variable);
        let (Some(spec), false) = (spec, value.is_empty()) else {
            return Ok(());
        };
        spec.parse_and_set(self, Some(value))
            .map_err(|_| FlagsError::BadVariableValue {
                variable,
                value: value.to_string(),
                accepted: spec.kind().accepted(),
            })?;
        self.record_variable(variable);
        Ok(())
    }

    fn record_variable(&mut self, variable: Variable) {
        // The row of a single-value variable is named after the variable.
        let origin = Origin {
            source: Source::Variable(variable),
            via: variable.name(),
        };
        self.provenance.record(variable.name(), origin);
    }
}

/// The trimmed value, or `None` when unset or blank (TensorFlow treats both as unset).
fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}
