//! The flag table: every flag and variable Kiln reads, declared exactly once.
//!
//! The parser, `kiln flags` ([`crate::render_flags_table`]) and `docs/flags.md`
//! ([`crate::render_flags_markdown`]) are all driven by [`FLAGS`]; a row's accessor functions
//! tie it to its field of [`Flags`], so a flag cannot be parsed into one field and shown from
//! another.

use std::path::{Path, PathBuf};

use crate::mixed_precision::{AmpDtype, AmpLevel};
use crate::provenance::Variable;
use crate::values::{parse_bool, parse_int, AutoJit, Kind};
use crate::vmodule::VModule;
use crate::Flags;

/// Whether this build acts on a flag. Flags Kiln does not act on yet are still accepted, so
/// scripts written for XLA keep working, but `kiln flags` and `docs/flags.md` say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The flag changes what Kiln does.
    Acts,
    /// The flag acts when Kiln runs on an NVIDIA GPU; on CPU it is accepted and ignored.
    GpuOnly,
    /// Accepted and parsed, but nothing in this build reads it yet; the text says why.
    NotYet(&'static str),
}

impl Effect {
    /// A few words for table cells.
    pub fn summary(self) -> &'static str {
        match self {
            Effect::Acts => "acts",
            Effect::GpuOnly => "acts on GPU only",
            Effect::NotYet(_) => "no effect yet",
        }
    }
}

/// One row of the flag table.
#[derive(Clone, Copy, Debug)]
pub struct FlagSpec {
    /// The name: `tf_xla_auto_jit` (written `--tf_xla_auto_jit=…`) for a flag, or the
    /// variable's own name (`TF_DETERMINISTIC_OPS`) for a variable that holds one value.
    pub name: &'static str,
    /// The variables the flag may be written in; the first is its home, named in errors.
    pub variables: &'static [Variable],
    /// The default, exactly as [`FlagSpec::current`] prints it for `Flags::default()`.
    pub default: &'static str,
    /// What the flag does, for `docs/flags.md`.
    pub help: &'static str,
    /// Whether this build acts on it.
    pub effect: Effect,
    /// Other rows that set the same field; giving them different values is an error.
    pub linked: &'static [&'static str],
    pub(crate) access: Access,
}

/// How a row reads and writes its field of [`Flags`]; the variant fixes the value type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access {
    Bool {
        get: fn(&Flags) -> bool,
        set: fn(&mut Flags, bool),
    },
    Int {
        min: i64,
        max: i64,
        get: fn(&Flags) -> i64,
        set: fn(&mut Flags, i64),
    },
    /// An integer limit whose absence (`None`) means "unbounded".
    Limit {
        min: i64,
        max: i64,
        get: fn(&Flags) -> Option<i64>,
        set: fn(&mut Flags, i64),
    },
    AutoJit {
        get: fn(&Flags) -> AutoJit,
        set: fn(&mut Flags, AutoJit),
    },
    Path {
        get: fn(&Flags) -> Option<&Path>,
        set: fn(&mut Flags, PathBuf),
    },
    VModule {
        get: fn(&Flags) -> &VModule,
        set: fn(&mut Flags, VModule),
    },
    Names {
        get: fn(&Flags) -> &[String],
        set: fn(&mut Flags, Vec<String>),
    },
    /// One of a fixed set of words.
    Choice {
        choices: &'static [&'static str],
        get: fn(&Flags) -> &'static str,
        set: fn(&mut Flags, &'static str),
    },
}

/// Why a value could not be applied; the caller adds the location and flag name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueProblem {
    Missing,
    Bad,
}

impl FlagSpec {
    /// The value type.
    pub fn kind(&self) -> Kind {
        match self.access {
            Access::Bool { .. } => Kind::Bool,
            Access::Int { min, max, .. } | Access::Limit { min, max, .. } => Kind::Int { min, max },
            Access::AutoJit { .. } => Kind::AutoJit,
            Access::Path { .. } => Kind::Path,
            Access::VModule { .. } => Kind::VModule,
            Access::Names { .. } => Kind::Names,
            Access::Choice { choices, .. } => Kind::Choice(choices),
        }
    }

    /// Whether the row is a `--flag` inside `TF_XLA_FLAGS`/`XLA_FLAGS` (rather than a
    /// variable of its own).
    pub fn is_flag(&self) -> bool {
        self.variables.iter().any(|v| v.holds_flags())
    }

    /// Whether the flag may be written in `variable`.
    pub fn accepts(&self, variable: Variable) -> bool {
        self.variables.contains(&variable)
    }

    /// The variable the flag belongs to.
    pub fn home(&self) -> Variable {
        self.variables[0]
    }

    /// How a user writes it: `--name` for a flag, `NAME` for a variable of its own.
    pub fn spelling(&self) -> String {
        if self.is_flag() {
            format!("--{}", self.name)
        } else {
            self.name.to_string()
        }
    }

    /// The value in effect in `flags`, printed the way the flag is written (`unbounded` and
    /// `unset` stand for an absent limit or path).
    pub fn current(&self, flags: &Flags) -> String {
        match self.access {
            Access::Bool { get, .. } => get(flags).to_string(),
            Access::Int { get, .. } => get(flags).to_string(),
            Access::Limit { get, .. } => {
                get(flags).map_or("unbounded".to_string(), |n| n.to_string())
            }
            Access::AutoJit { get, .. } => get(flags).to_string(),
            Access::Path { get, .. } => {
                get(flags).map_or("unset".to_string(), |p| p.display().to_string())
            }
            Access::Names { get, .. } => {
                let names = get(flags);
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(",")
                }
            }
            Access::Choice { get, .. } => get(flags).to_string(),
            Access::VModule { get, .. } => {
                let vmodule = get(flags);
                if vmodule.is_empty() {
                    "none".to_string()
                } else {
                    vmodule.to_string()
                }
            }
        }
    }

    /// Parses `value` (`None` for a bare `--flag`) and stores it in `flags`.
    pub(crate) fn parse_and_set(
        &self,
        flags: &mut Flags,
        value: Option<&str>,
    ) -> Result<(), ValueProblem> {
        let bad = ValueProblem::Bad;
        match (self.access, value) {
            // A bare boolean flag means `true`, as in TensorFlow.
            (Access::Bool { set, .. }, None) => set(flags, true),
            (_, None) => return Err(ValueProblem::Missing),
            (Access::Bool { set, .. }, Some(v)) => set(flags, parse_bool(v).ok_or(bad)?),
            (Access::Int { min, max, set, .. } | Access::Limit { min, max, set, .. }, Some(v)) => {
                set(flags, parse_int(v, min, max).ok_or(bad)?)
            }
            (Access::AutoJit { set, .. }, Some(v)) => set(flags, AutoJit::parse(v).ok_or(bad)?),
            (Access::Path { set, .. }, Some(v)) => {
                if v.is_empty() {
                    return Err(bad);
                }
                set(flags, PathBuf::from(v))
            }
            (Access::VModule { set, .. }, Some(v)) => {
                set(flags, VModule::parse(v).map_err(|_| bad)?)
            }
            // `none` (what `kiln flags` shows as the default) and the empty list: no names.
            (Access::Names { set, .. }, Some(v)) if matches!(v.trim(), "" | "none") => {
                set(flags, Vec::new())
            }
            (Access::Names { set, .. }, Some(v)) => {
                let names: Vec<String> = v.split(',').map(|n| n.trim().to_string()).collect();
                let valid = |n: &String| {
                    !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                };
                if !names.iter().all(valid) {
                    return Err(bad);
                }
                set(flags, names)
            }
            (Access::Choice { choices, set, .. }, Some(v)) => set(
                flags,
                choices
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(v))
                    .ok_or(bad)?,
            ),
        }
        Ok(())
    }
}

/// Looks a row up by its exact name (`tf_xla_auto_jit`, `TF_DETERMINISTIC_OPS`).
pub fn find_flag(name: &str) -> Option<&'static FlagSpec> {
    FLAGS.iter().find(|spec| spec.name == name)
}

// Range-checked by the parser before these run; saturating keeps them total on any platform.
fn to_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
fn to_u8(n: i64) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}
fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

const TF: &[Variable] = &[Variable::TfXlaFlags];
const AMP_LIST_HELP: &str = "Comma-separated Kiln op names (`dot_general`, `exp`, `reduce_sum`, …; see `docs/amp.md`) for TensorFlow's automatic mixed precision rewrite. Names are added first, then removed. An unknown op name is an error, with the closest name, when the rewrite runs.";
const AMP_OLD_LIST_HELP: &str = "The list's name before TensorFlow 2.4 (`WHITELIST` is `ALLOWLIST`, `GRAYLIST` is `INFERLIST`, `BLACKLIST` is `DENYLIST`), still read as TensorFlow reads it: applied after the new name's additions and removals, additions first.";
const XLA: &[Variable] = &[Variable::XlaFlags];
const MAX: i64 = i64::MAX;

/// Every flag and variable, grouped by variable, in the order `kiln flags` prints them.
pub static FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "tf_xla_auto_jit",
        variables: TF,
        default: "1",
        help: "Auto-clustering level. `-1`: no compilation at all, even of code that asked for it; `0`: compile only manually marked code (TensorFlow's default); `1`: auto-cluster the ops likely to gain (Kiln's default, on CPU and GPU alike); `2`: auto-cluster everything compilable; `fusible` (\"XLA Lite\"): only pointwise, reduction, shape and seeded random ops, so clusters are smaller; `single-gpu(N)`: level N for graphs that use exactly one GPU, 0 for others.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::AutoJit { get: |f| f.auto_jit, set: |f, v| f.auto_jit = v },
    },
    FlagSpec {
        name: "tf_xla_cpu_global_jit",
        variables: TF,
        default: "true",
        help: "Whether `--tf_xla_auto_jit` applies to CPU devices too. TensorFlow's default is `false`; Kiln's is `true` because it exists to compile on CPU as well. `false` limits auto-clustering to GPU devices; manually marked code still compiles.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.cpu_global_jit, set: |f, v| f.cpu_global_jit = v },
    },
    FlagSpec {
        name: "tf_xla_min_cluster_size",
        variables: TF,
        default: "4",
        help: "After clustering, drop auto-clusters with fewer ops than this (constants and identities count 0). Raise it when many tiny clusters cost more in overhead and compile time than they gain.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Int {
            min: 0,
            max: MAX,
            get: |f| to_i64(f.min_cluster_size),
            set: |f, v| f.min_cluster_size = to_usize(v),
        },
    },
    FlagSpec {
        name: "tf_xla_max_cluster_size",
        variables: TF,
        default: "unbounded",
        help: "Refuse a merge that would make a cluster larger than this many ops (every op counts). Lower it below the largest cluster (`TF_CPP_VMODULE=mark_for_compilation_pass=2` prints the sizes) when compiled clusters run out of memory or compile too long.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Limit {
            min: 1,
            max: MAX,
            get: |f| f.max_cluster_size.map(to_i64),
            set: |f, v| f.max_cluster_size = Some(to_usize(v)),
        },
    },
    FlagSpec {
        name: "tf_xla_clustering_fuel",
        variables: TF,
        default: "unbounded",
        help: "Mark at most this many ops as clustering candidates, then stop: bisect with it to find the op whose clustering causes a problem.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Limit {
            min: 0,
            max: MAX,
            get: |f| f.clustering_fuel.map(|n| i64::try_from(n).unwrap_or(MAX)),
            set: |f, v| f.clustering_fuel = Some(u64::try_from(v).unwrap_or(0)),
        },
    },
    FlagSpec {
        name: "tf_xla_enable_lazy_compilation",
        variables: TF,
        default: "true",
        help: "`true`: each new shape instance of a cluster runs the fallback (the interpreter) on its 1st and 2nd execution and compiles on the 3rd. `false`: compile on the first execution, with no fallback path; this takes precedence over `--tf_xla_async_compilation`.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.lazy_compilation, set: |f, v| f.lazy_compilation = v },
    },
    FlagSpec {
        name: "tf_xla_always_defer_compilation",
        variables: TF,
        default: "false",
        help: "`true`: never compile; every cluster runs on the fallback path. The guide's first experiment when compiled code runs out of memory or is slower than expected.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool {
            get: |f| f.always_defer_compilation,
            set: |f, v| f.always_defer_compilation = v,
        },
    },
    FlagSpec {
        name: "tf_xla_async_compilation",
        variables: TF,
        default: "false",
        help: "`true`: compile on a background thread while the fallback path serves executions, and switch to the compiled kernel once it is ready. Ignored when `--tf_xla_enable_lazy_compilation=false`.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.async_compilation, set: |f, v| f.async_compilation = v },
    },
    FlagSpec {
        name: "tf_xla_persistent_cache_directory",
        variables: TF,
        default: "unset",
        help: "Directory of the persistent compilation cache, for every backend; the same setting as `--xla_gpu_persistent_cache_dir`. It must exist, be readable and writable, and not be writable by other users (Kiln checks at start-up). Entries are read on demand.",
        effect: Effect::Acts,
        linked: &["xla_gpu_persistent_cache_dir"],
        access: Access::Path {
            get: |f| f.persistent_cache_dir.as_deref(),
            set: |f, v| f.persistent_cache_dir = Some(v),
        },
    },
    FlagSpec {
        name: "xla_gpu_persistent_cache_dir",
        variables: &[Variable::XlaFlags, Variable::TfXlaFlags],
        default: "unset",
        help: "The same setting as `--tf_xla_persistent_cache_directory`, accepted in TF_XLA_FLAGS too because the guide writes it there. Despite its name it caches CPU kernels as well as GPU kernels.",
        effect: Effect::Acts,
        linked: &["tf_xla_persistent_cache_directory"],
        access: Access::Path {
            get: |f| f.persistent_cache_dir.as_deref(),
            set: |f, v| f.persistent_cache_dir = Some(v),
        },
    },
    FlagSpec {
        name: "tf_xla_clustering_debug",
        variables: TF,
        default: "false",
        help: "`true`: dump the graph before and after clustering as `.kir` text, into `--xla_dump_to` when it is set and otherwise to the log (target `mark_for_compilation_pass`).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.clustering_debug, set: |f, v| f.clustering_debug = v },
    },
    FlagSpec {
        name: "tf_xla_deterministic_cluster_names",
        variables: TF,
        default: "false",
        help: "`true`: name clusters from a fingerprint of the graph instead of a process-wide counter, so cluster names, log lines and dump file names are the same from run to run.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool {
            get: |f| f.deterministic_cluster_names,
            set: |f, v| f.deterministic_cluster_names = v,
        },
    },
    FlagSpec {
        name: "tf_xla_async_io_level",
        variables: TF,
        default: "0",
        help: "AsyncIO. `1`: let consumers of a cluster's outputs start as soon as each output is ready instead of when all are; `0`: off.",
        effect: Effect::NotYet("Kiln's executor runs one node at a time, so there is no concurrent consumer to release early."),
        linked: &[],
        access: Access::Int { min: 0, max: 1, get: |f| i64::from(f.async_io_level), set: |f, v| f.async_io_level = to_u8(v) },
    },
    FlagSpec {
        name: "kiln_amp_dtype",
        variables: TF,
        default: "f16",
        help: "Kiln's own flag: the type the automatic mixed precision rewrite converts to, `f16` (TensorFlow's CUDA mode, the default) or `bf16` (TensorFlow's oneDNN mode, which TensorFlow turns on with the `auto_mixed_precision_onednn_bfloat16` rewriter option rather than a variable). Acts only when the rewrite is on.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Choice {
            choices: AmpDtype::NAMES,
            get: |f| f.mixed_precision.dtype.name(),
            set: |f, v| f.mixed_precision.dtype = AmpDtype::parse(v).unwrap_or_default(),
        },
    },
    FlagSpec {
        name: "xla_gpu_autotune_level",
        variables: XLA,
        default: "4",
        help: "GPU launch autotuning level: `0` uses the PTX emitter's suggested block size; `1`-`3` time block sizes 128/256/512/1024 per kernel on the first compile and keep the fastest (stored in the persistent cache entry); `4` also runs every candidate on synthesized inputs and rejects any whose outputs differ bitwise from the interpreter. cuBLAS GEMMs use cuBLAS's own heuristic.",
        effect: Effect::GpuOnly,
        linked: &[],
        access: Access::Int { min: 0, max: 4, get: |f| i64::from(f.autotune_level), set: |f, v| f.autotune_level = to_u8(v) },
    },
    FlagSpec {
        name: "xla_backend_optimization_level",
        variables: XLA,
        default: "3",
        help: "Code generator optimization level. `0` compiles CPU kernels with Cranelift's `opt_level=none` (the fastest compile); 1 to 3 use `speed`. Results are bit-identical at every level.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Int {
            min: 0,
            max: 3,
            get: |f| i64::from(f.backend_optimization_level),
            set: |f, v| f.backend_optimization_level = to_u8(v),
        },
    },
    FlagSpec {
        name: "xla_gpu_disable_ptxas_optimizations",
        variables: XLA,
        default: "false",
        help: "`true`: JIT-compile PTX without optimizations (the CUDA driver's `CU_JIT_OPTIMIZATION_LEVEL` 0), trading kernel speed for compile time.",
        effect: Effect::GpuOnly,
        linked: &[],
        access: Access::Bool {
            get: |f| f.disable_ptxas_optimizations,
            set: |f, v| f.disable_ptxas_optimizations = v,
        },
    },
    FlagSpec {
        name: "xla_multiheap_size_constraint_per_heap",
        variables: XLA,
        default: "-1",
        help: "`-1`: one allocation for a cluster's temporaries; `n`: several allocations of at most `n` bytes each, to work around memory fragmentation.",
        effect: Effect::NotYet("Kiln's runtime does not yet place a cluster's temporaries in one heap, so there is nothing to split."),
        linked: &[],
        access: Access::Int {
            min: -1,
            max: MAX,
            get: |f| f.multiheap_size_constraint_per_heap,
            set: |f, v| f.multiheap_size_constraint_per_heap = v,
        },
    },
    FlagSpec {
        name: "xla_dump_to",
        variables: XLA,
        default: "unset",
        help: "Directory to dump into: the graph after each pass and each cluster's kernel IR as text, with its CLIF and machine code on CPU (`.clif`, `.s`) or its PTX on GPU. Created if missing. On CPU, clusters of one name (a loop body's `cluster_0` beside the function's) are dumped as `cluster_0.*`, `cluster_0.1.*`, ….",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Path { get: |f| f.dump_to.as_deref(), set: |f, v| f.dump_to = Some(v) },
    },
    FlagSpec {
        name: "xla_disable_hlo_passes",
        variables: XLA,
        default: "none",
        help: "Comma-separated graph passes to skip (`auto_mixed_precision`, `simplify`, `cse`, `dce`, `mark_for_compilation`), to bisect a miscompile. An unknown pass name is an error when the pipeline runs.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.disabled_passes, set: |f, v| f.disabled_passes = v },
    },
    FlagSpec {
        name: "xla_gpu_deterministic_ops",
        variables: XLA,
        default: "false",
        help: "`true`: deterministic ops, exactly as `TF_DETERMINISTIC_OPS=1` (Kiln has one determinism setting for every backend).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.gpu_deterministic_ops, set: |f, v| f.gpu_deterministic_ops = v },
    },
    FlagSpec {
        name: "xla_cpu_num_threads",
        variables: XLA,
        default: "0",
        help: "Kiln's own flag: threads for compiled CPU kernels and the interpreter; `0` means the number of cores. Results do not depend on it, because every reduction has one fixed order.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Int {
            min: 0,
            max: crate::MAX_CPU_THREADS as i64,
            get: |f| to_i64(f.cpu_num_threads),
            set: |f, v| f.cpu_num_threads = to_usize(v),
        },
    },
    FlagSpec {
        name: "xla_cpu_prefer_vector_width",
        variables: XLA,
        default: "256",
        help: "Widest vectors compiled CPU kernels use. Cranelift emits 128-bit code; at `256` or more, on a CPU with AVX2 and FMA, a kernel hands its transcendental nodes (`exp`, `log`, `tanh`, `erf`, ...) in blocks to the interpreter's 256-bit build of the same `kiln_math` functions, so they run twice as wide; `512` (or more) runs those blocks on its 512-bit build on a CPU with AVX-512 (F, VL, DQ, BW), else 256; `128` keeps all the math in Cranelift's own code. Results are bit-identical at every width.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Int {
            min: 128,
            max: 512,
            get: |f| f.cpu_prefer_vector_width,
            set: |f, v| f.cpu_prefer_vector_width = v,
        },
    },
    FlagSpec {
        name: "xla_allow_excess_precision",
        variables: XLA,
        default: "false",
        help: "`true`: `f16`/`bf16` values computed inside a program stay in `f32` between ops (pointwise ops, data movement, reductions, conversions) and are rounded to 16 bits only where they are stored or consumed in 16 bits (results, products, convolutions, loops, gathers, ...), as XLA:GPU's `simplify-fp-conversions` does: faster, and more precise, but no longer each op's 16-bit result. Compiled and fallback stay bit-identical either way. Kiln's default is `false`, XLA:CPU's behaviour (it rounds after every op, but for a `bf16` op whose result is converted straight to `f32`, which XLA:CPU computes in `f32` and the HLO import does too: docs/ir.md; XLA's default `true` acts fully only on its GPU and oneDNN paths).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool {
            get: |f| f.allow_excess_precision,
            set: |f, v| f.allow_excess_precision = v,
        },
    },
    FlagSpec {
        name: "TF_DETERMINISTIC_OPS",
        variables: &[Variable::TfDeterministicOps],
        default: "false",
        help: "`1` or `true`: the same inputs on the same hardware give bit-identical outputs, whatever the thread count; random ops without a seed, and ops with no deterministic implementation, raise an error naming the op. Also turned on by `--xla_gpu_deterministic_ops=true` and `kiln::config::enable_op_determinism()`.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.deterministic_ops, set: |f, v| f.deterministic_ops = v },
    },
    FlagSpec {
        name: "TF_CPP_VMODULE",
        variables: &[Variable::TfCppVmodule],
        default: "none",
        help: "Verbose logging per module, `module=level,…`: shows the `VLOG(n)` messages with `n <= level` of the named modules (the log targets listed below) at INFO, whatever `TF_CPP_MIN_LOG_LEVEL` says.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::VModule { get: |f| &f.vmodule, set: |f, v| f.vmodule = v },
    },
    FlagSpec {
        name: "TF_CPP_MIN_LOG_LEVEL",
        variables: &[Variable::TfCppMinLogLevel],
        default: "1",
        help: "Hides log messages below a severity: `0` shows INFO, WARNING and ERROR; `1` hides INFO; `2` hides WARNING too; `3` hides ERROR too. Kiln's default is `1`, TensorFlow's `0`. `RUST_LOG` directives (env_logger syntax) are applied on top.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Int { min: 0, max: 3, get: |f| i64::from(f.min_log_level), set: |f, v| f.min_log_level = to_u8(v) },
    },
    FlagSpec {
        name: "TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE",
        variables: &[Variable::TfEnableAmpGraphRewrite],
        default: "false",
        help: "`1` or `true`: before clustering, TensorFlow's automatic mixed precision rewrite converts `dot_general` and `convolution` (and the ops its lists allow around them) from f32 to f16 (or `--kiln_amp_dtype=bf16`), inserting casts at the boundaries; `exp`, `pow`, `reduce_sum` and what follows them stay f32. Off by default. Loss scaling is not part of it (see `docs/amp.md`).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.mixed_precision.graph_rewrite, set: |f, v| f.mixed_precision.graph_rewrite = v },
    },
    FlagSpec {
        name: "TF_ENABLE_AUTO_MIXED_PRECISION",
        variables: &[Variable::TfEnableAmp],
        default: "false",
        help: "The older name of `TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE` (in NVIDIA's containers it also turned on loss scaling, which is an optimizer feature and not Kiln's); either variable turns the rewrite on.",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Bool { get: |f| f.mixed_precision.enable, set: |f, v| f.mixed_precision.enable = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD",
        variables: &[Variable::AmpAllowlistAdd],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.allow.add, set: |f, v| f.mixed_precision.allow.add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE",
        variables: &[Variable::AmpAllowlistRemove],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.allow.remove, set: |f, v| f.mixed_precision.allow.remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_ADD",
        variables: &[Variable::AmpInferlistAdd],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.infer.add, set: |f, v| f.mixed_precision.infer.add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE",
        variables: &[Variable::AmpInferlistRemove],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.infer.remove, set: |f, v| f.mixed_precision.infer.remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD",
        variables: &[Variable::AmpDenylistAdd],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.deny.add, set: |f, v| f.mixed_precision.deny.add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_REMOVE",
        variables: &[Variable::AmpDenylistRemove],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.deny.remove, set: |f, v| f.mixed_precision.deny.remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_ADD",
        variables: &[Variable::AmpClearlistAdd],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.clear.add, set: |f, v| f.mixed_precision.clear.add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE",
        variables: &[Variable::AmpClearlistRemove],
        default: "none",
        help: AMP_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.clear.remove, set: |f, v| f.mixed_precision.clear.remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH",
        variables: &[Variable::AmpLogPath],
        default: "unset",
        help: "A directory where the automatic mixed precision rewrite writes each function before (`graphdef_preop_<func>.kir`) and after (`graphdef_AutoMixedPrecision_<func>.kir`) the rewrite, the lists it used (`paintbuckets_AutoMixedPrecision_<func>.txt`) and TensorFlow's summary line (`summary_AutoMixedPrecision_<func>.txt`).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Path { get: |f| f.mixed_precision.log_path.as_deref(), set: |f, v| f.mixed_precision.log_path = Some(v) },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL",
        variables: &[Variable::AmpLevel],
        default: "DEFAULT",
        help: "How far the automatic mixed precision rewrite goes, as in TensorFlow (any case): `TREAT_INFER_AS_DENY` moves the infer list's ops to the deny list; `UNSAFE_FORCE_ALL` converts every f32 op that can run in f16, deny ops included (an error with `--kiln_amp_dtype=bf16`, as TensorFlow refuses it in its oneDNN mode); `TENSOR_CORES_ONLY` converts only the allow list's ops (in f16 mode; TensorFlow's bf16 lists ignore it).",
        effect: Effect::Acts,
        linked: &[],
        access: Access::Choice {
            choices: AmpLevel::NAMES,
            get: |f| f.mixed_precision.level.name(),
            set: |f, v| f.mixed_precision.level = AmpLevel::parse(v).unwrap_or_default(),
        },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_ADD",
        variables: &[Variable::AmpWhitelistAdd],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.allow.old_add, set: |f, v| f.mixed_precision.allow.old_add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_REMOVE",
        variables: &[Variable::AmpWhitelistRemove],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.allow.old_remove, set: |f, v| f.mixed_precision.allow.old_remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_ADD",
        variables: &[Variable::AmpGraylistAdd],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.infer.old_add, set: |f, v| f.mixed_precision.infer.old_add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_REMOVE",
        variables: &[Variable::AmpGraylistRemove],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.infer.old_remove, set: |f, v| f.mixed_precision.infer.old_remove = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_ADD",
        variables: &[Variable::AmpBlacklistAdd],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.deny.old_add, set: |f, v| f.mixed_precision.deny.old_add = v },
    },
    FlagSpec {
        name: "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_REMOVE",
        variables: &[Variable::AmpBlacklistRemove],
        default: "none",
        help: AMP_OLD_LIST_HELP,
        effect: Effect::Acts,
        linked: &[],
        access: Access::Names { get: |f| &f.mixed_precision.deny.old_remove, set: |f, v| f.mixed_precision.deny.old_remove = v },
    },
];

#[cfg(test)]
mod tests;
