//! Every flag parses into its field, in every form the syntax allows.

use std::path::{Path, PathBuf};

use crate::{AutoJit, Flags, FlagsError, Kind, Source, Sources, Variable, FLAGS};

pub(crate) fn tf(text: &str) -> Result<Flags, FlagsError> {
    Flags::from_sources(&Sources {
        tf_xla_flags: Some(text.to_string()),
        ..Sources::default()
    })
}

pub(crate) fn xla(text: &str) -> Result<Flags, FlagsError> {
    Flags::from_sources(&Sources {
        xla_flags: Some(text.to_string()),
        ..Sources::default()
    })
}

/// Flags from the variable `name` belongs to.
fn in_home(name: &str, text: &str) -> Result<Flags, FlagsError> {
    match crate::find_flag(name).map(|s| s.home()) {
        Some(Variable::XlaFlags) => xla(text),
        _ => tf(text),
    }
}

/// A file under the temp dir with a name no other test (or test run) uses.
pub(crate) fn temp_file(tag: &str, contents: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("kiln-flags-{}-{n}-{tag}.flags", std::process::id()));
    std::fs::write(&path, contents).expect("write temp flag file");
    path
}

#[test]
fn nothing_set_gives_the_defaults() {
    assert_eq!(
        Flags::from_sources(&Sources::default()).unwrap(),
        Flags::default()
    );
    let blank = Sources {
        tf_xla_flags: Some("  ".into()),
        xla_flags: Some(String::new()),
        tf_deterministic_ops: Some(String::new()),
        tf_cpp_vmodule: Some(" ".into()),
        tf_cpp_min_log_level: Some(String::new()),
        mixed_precision: Variable::MIXED_PRECISION
            .into_iter()
            .map(|v| (v, " ".to_string()))
            .collect(),
    };
    assert_eq!(Flags::from_sources(&blank).unwrap(), Flags::default());
}

#[test]
fn every_flag_accepts_a_valid_value_of_its_kind_and_rejects_an_invalid_one() {
    for spec in FLAGS.iter().filter(|s| s.is_flag()) {
        let (valid, shown, invalid) = match spec.kind() {
            Kind::Bool => ("false", "false", "yes"),
            Kind::Int { max, .. } if max < 10 => ("1", "1", "10"),
            Kind::Int { min: 128, .. } => ("256", "256", "64"),
            Kind::Int { .. } => ("7", "7", "seven"),
            Kind::AutoJit => ("fusible", "fusible", "3"),
            Kind::Path => ("/tmp/kiln", "/tmp/kiln", ""),
            Kind::Names => ("cse,dce", "cse,dce", "cse,,dce"),
            Kind::Choice(choices) => (choices[1], choices[1], "f32"),
            Kind::VModule => unreachable!("TF_CPP_VMODULE is not a --flag"),
        };
        let flags = in_home(spec.name, &format!("--{}={valid}", spec.name)).unwrap();
        assert_eq!(spec.current(&flags), shown, "{}", spec.name);
        assert_eq!(
            flags.provenance.source(spec.name),
            Source::Variable(spec.home()),
            "{}",
            spec.name
        );
        let error = in_home(spec.name, &format!("--{}={invalid}", spec.name)).unwrap_err();
        assert!(
            matches!(error, FlagsError::BadValue { name, .. } if name == spec.name),
            "{}",
            spec.name
        );
    }
}

#[test]
fn auto_jit_levels() {
    for (text, level) in [
        ("-1", AutoJit::Off),
        ("0", AutoJit::ManualOnly),
        ("1", AutoJit::On),
        ("2", AutoJit::OnAggressive),
        ("fusible", AutoJit::Fusible),
        ("single-gpu(2)", AutoJit::SingleGpu(2)),
    ] {
        assert_eq!(
            tf(&format!("--tf_xla_auto_jit={text}")).unwrap().auto_jit,
            level,
            "{text}"
        );
    }
}

#[test]
fn clustering_sizes_and_fuel() {
    let flags =
        tf("--tf_xla_min_cluster_size=0 --tf_xla_max_cluster_size=16 --tf_xla_clustering_fuel=0")
            .unwrap();
    assert_eq!(flags.min_cluster_size, 0);
    assert_eq!(flags.max_cluster_size, Some(16));
    assert_eq!(flags.clustering_fuel, Some(0));
    assert!(
        tf("--tf_xla_max_cluster_size=0").is_err(),
        "a cluster holds at least one op"
    );
    assert!(tf("--tf_xla_min_cluster_size=-1").is_err());
    assert_eq!(
        tf("--tf_xla_clustering_fuel=9223372036854775807")
            .unwrap()
            .clustering_fuel,
        Some(i64::MAX as u64)
    );
}

#[test]
fn compile_policy_booleans() {
    let flags = tf("--tf_xla_enable_lazy_compilation=false --tf_xla_always_defer_compilation=1 --tf_xla_async_compilation=TRUE").unwrap();
    assert!(!flags.lazy_compilation);
    assert!(flags.always_defer_compilation);
    assert!(flags.async_compilation);
    let flags = tf(
        "--tf_xla_cpu_global_jit=0 --tf_xla_clustering_debug --tf_xla_deterministic_cluster_names",
    )
    .unwrap();
    assert!(!flags.cpu_global_jit);
    assert!(flags.clustering_debug);
    assert!(flags.deterministic_cluster_names);
}

#[test]
fn a_comment_in_a_variable_ends_at_its_line() {
    let flags = tf("--tf_xla_auto_jit=2 # aggressive\n--tf_xla_min_cluster_size=6").unwrap();
    assert_eq!(
        (flags.auto_jit, flags.min_cluster_size),
        (AutoJit::OnAggressive, 6)
    );
}

#[test]
fn the_guides_comma_form() {
    let flags = tf("--tf_xla_auto_jit=1,--tf_xla_always_defer_compilation=true").unwrap();
    assert_eq!(flags.auto_jit, AutoJit::On);
    assert!(flags.always_defer_compilation);
    let flags = tf("--tf_xla_auto_jit=2, --tf_xla_min_cluster_size=8,").unwrap();
    assert_eq!(
        (flags.auto_jit, flags.min_cluster_size),
        (AutoJit::OnAggressive, 8)
    );
}

#[test]
fn quoted_values_keep_spaces_and_commas() {
    let flags = xla(r#"--xla_dump_to="/tmp/a b" --xla_gpu_autotune_level='2'"#).unwrap();
    assert_eq!(flags.dump_to.as_deref(), Some(Path::new("/tmp/a b")));
    assert_eq!(flags.autotune_level, 2);
    let flags = xla("--xla_dump_to='/tmp/x, --y'").unwrap();
    assert_eq!(flags.dump_to.as_deref(), Some(Path::new("/tmp/x, --y")));
    let flags = xla("--xla_dump_to=/tmp/x,y").unwrap();
    assert_eq!(flags.dump_to.as_deref(), Some(Path::new("/tmp/x,y")));
}

#[test]
fn the_last_of_a_repeated_flag_wins() {
    let flags = tf("--tf_xla_min_cluster_size=2 --tf_xla_min_cluster_size=6").unwrap();
    assert_eq!(flags.min_cluster_size, 6);
    let flags = tf("--tf_xla_persistent_cache_directory=/a --tf_xla_persistent_cache_directory=/b")
        .unwrap();
    assert_eq!(flags.persistent_cache_dir.as_deref(), Some(Path::new("/b")));
}

#[test]
fn persistent_cache_dir_from_either_name_and_either_variable() {
    for flags in [
        tf("--tf_xla_persistent_cache_directory=/c").unwrap(),
        tf("--xla_gpu_persistent_cache_dir=/c").unwrap(),
        xla("--xla_gpu_persistent_cache_dir=/c").unwrap(),
    ] {
        assert_eq!(flags.persistent_cache_dir.as_deref(), Some(Path::new("/c")));
        assert!(flags
            .provenance
            .origin("tf_xla_persistent_cache_directory")
            .is_some());
        assert!(flags
            .provenance
            .origin("xla_gpu_persistent_cache_dir")
            .is_some());
    }
    let both_same = Flags::from_sources(&Sources {
        tf_xla_flags: Some("--tf_xla_persistent_cache_directory=/c".into()),
        xla_flags: Some("--xla_gpu_persistent_cache_dir=/c".into()),
        ..Sources::default()
    });
    assert_eq!(
        both_same.unwrap().persistent_cache_dir.as_deref(),
        Some(Path::new("/c"))
    );
}

#[test]
fn xla_compiler_flags() {
    let flags = xla(
        "--xla_gpu_autotune_level=0 --xla_backend_optimization_level=0 --xla_gpu_disable_ptxas_optimizations \
         --xla_multiheap_size_constraint_per_heap=1048576 --xla_cpu_num_threads=3",
    )
    .unwrap();
    assert_eq!(flags.autotune_level, 0);
    assert_eq!(flags.backend_optimization_level, 0);
    assert!(flags.disable_ptxas_optimizations);
    assert_eq!(flags.multiheap_size_constraint_per_heap, 1 << 20);
    assert_eq!(flags.cpu_num_threads, 3);
    assert_eq!(flags.cpu_threads(), 3);
    assert!(Flags::default().cpu_threads() >= 1);
    assert!(xla("--xla_gpu_autotune_level=5").is_err());
    assert!(xla("--xla_backend_optimization_level=4").is_err());
    assert!(xla("--xla_multiheap_size_constraint_per_heap=-2").is_err());
    let passes = |v: &str| xla(&format!("--xla_disable_hlo_passes={v}")).map(|f| f.disabled_passes);
    assert_eq!(passes("cse,dce").unwrap(), ["cse", "dce"]);
    // The default as `kiln flags` shows it, and the empty list, name no pass.
    assert_eq!(passes("none").unwrap(), Vec::<String>::new());
    assert_eq!(passes("").unwrap(), Vec::<String>::new());
    assert!(passes("cse,,dce").is_err());
    // Thousands of threads take seconds to start and cannot help on any machine.
    assert_eq!(
        xla("--xla_cpu_num_threads=1024").unwrap().cpu_num_threads,
        1024
    );
    assert!(xla("--xla_cpu_num_threads=1025").is_err());
    assert!(xla("--xla_cpu_num_threads=4294967296").is_err());
    assert_eq!(tf("--tf_xla_async_io_level=1").unwrap().async_io_level, 1);
    assert!(tf("--tf_xla_async_io_level=2").is_err());
}

#[test]
fn determinism_from_every_source() {
    let det = |value: &str| {
        Flags::from_sources(&Sources {
            tf_deterministic_ops: Some(value.to_string()),
            ..Sources::default()
        })
    };
    for (value, want) in [
        ("1", true),
        ("true", true),
        ("TRUE", true),
        (" 1 ", true),
        ("0", false),
        ("false", false),
    ] {
        let flags = det(value).unwrap();
        assert_eq!(flags.deterministic_ops, want, "{value:?}");
        assert_eq!(
            flags.provenance.source("TF_DETERMINISTIC_OPS"),
            Source::Variable(Variable::TfDeterministicOps)
        );
    }
    let flags = xla("--xla_gpu_deterministic_ops=true").unwrap();
    assert!(flags.gpu_deterministic_ops && flags.deterministic_ops);
    assert_eq!(
        flags.provenance.origin("TF_DETERMINISTIC_OPS").unwrap().via,
        "xla_gpu_deterministic_ops"
    );
    // XLA's flag turns determinism on even when TF_DETERMINISTIC_OPS says 0: either suffices.
    let flags = Flags::from_sources(&Sources {
        tf_deterministic_ops: Some("0".into()),
        xla_flags: Some("--xla_gpu_deterministic_ops".into()),
        ..Sources::default()
    })
    .unwrap();
    assert!(flags.deterministic_ops);
    let mut flags = Flags::default();
    flags.enable_op_determinism();
    assert!(flags.deterministic_ops);
    assert_eq!(
        flags.provenance.source("TF_DETERMINISTIC_OPS"),
        Source::Programmatic
    );
}

#[test]
fn logging_variables() {
    let flags = Flags::from_sources(&Sources {
        tf_cpp_vmodule: Some("mark_for_compilation_pass=2,xla_compilation_cache=1".into()),
        tf_cpp_min_log_level: Some("3".into()),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(flags.vmodule.level("mark_for_compilation_pass"), 2);
    assert_eq!(flags.vmodule.level("xla_compilation_cache"), 1);
    assert_eq!(flags.min_log_level, 3);
    assert_eq!(
        flags.provenance.source("TF_CPP_VMODULE"),
        Source::Variable(Variable::TfCppVmodule)
    );
    for level in 0..=3u8 {
        let flags = Flags::from_sources(&Sources {
            tf_cpp_min_log_level: Some(level.to_string()),
            ..Sources::default()
        });
        assert_eq!(flags.unwrap().min_log_level, level);
    }
}

#[test]
fn flag_file_with_comments_quotes_and_several_lines() {
    let path = temp_file(
        "good",
        "# Kiln flags for the benchmark\n\n--tf_xla_auto_jit=fusible   # XLA Lite\n--tf_xla_min_cluster_size=8,--tf_xla_async_compilation\n  --tf_xla_persistent_cache_directory=\"/tmp/kiln cache\"\n",
    );
    let flags = tf(&format!("  {}  ", path.display())).unwrap();
    assert_eq!(flags.auto_jit, AutoJit::Fusible);
    assert_eq!(flags.min_cluster_size, 8);
    assert!(flags.async_compilation);
    assert_eq!(
        flags.persistent_cache_dir.as_deref(),
        Some(Path::new("/tmp/kiln cache"))
    );
    let from_file = Source::FlagFile {
        variable: Variable::TfXlaFlags,
        path: path.clone(),
    };
    assert_eq!(flags.provenance.source("tf_xla_auto_jit"), from_file);
    std::fs::remove_file(&path).ok();
}

#[test]
fn flag_file_for_xla_flags_and_an_empty_file() {
    let path = temp_file("xla", "--xla_gpu_autotune_level=1\n");
    assert_eq!(xla(&path.display().to_string()).unwrap().autotune_level, 1);
    std::fs::remove_file(&path).ok();
    let empty = temp_file("empty", "# nothing here\n");
    assert_eq!(tf(&empty.display().to_string()).unwrap(), Flags::default());
    std::fs::remove_file(&empty).ok();
}

fn with_variables(pairs: &[(&str, &str)]) -> Result<Flags, FlagsError> {
    let mut sources = Sources::default();
    for (name, value) in pairs {
        sources.set(name, *value).unwrap();
    }
    Flags::from_sources(&sources)
}

#[test]
fn mixed_precision_is_off_until_either_variable_turns_it_on() {
    assert!(!Flags::default().mixed_precision.enabled());
    for name in [
        "TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE",
        "TF_ENABLE_AUTO_MIXED_PRECISION",
    ] {
        let flags = with_variables(&[(name, "1")]).unwrap();
        assert!(flags.mixed_precision.enabled(), "{name}");
        assert_eq!(
            flags.provenance.source(name),
            Source::Variable(Variable::from_name(name).unwrap())
        );
        let off = with_variables(&[(name, "false")]).unwrap();
        assert!(!off.mixed_precision.enabled(), "{name}");
    }
}

#[test]
fn mixed_precision_lists_path_and_dtype_are_read() {
    let flags = with_variables(&[
        ("TF_ENABLE_AUTO_MIXED_PRECISION", "true"),
        (
            "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD",
            "tanh, exp",
        ),
        (
            "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_REMOVE",
            "reduce_sum",
        ),
        ("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_ADD", "sin"),
        (
            "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE",
            "none",
        ),
        ("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH", "/tmp/amp"),
        ("TF_XLA_FLAGS", "--kiln_amp_dtype=bf16"),
    ])
    .unwrap();
    let mp = &flags.mixed_precision;
    assert_eq!(mp.allow.add, ["tanh", "exp"]);
    assert_eq!(mp.deny.remove, ["reduce_sum"]);
    assert_eq!(mp.clear.add, ["sin"]);
    assert!(mp.infer.remove.is_empty());
    assert_eq!(mp.log_path.as_deref(), Some(Path::new("/tmp/amp")));
    assert_eq!(mp.dtype, crate::AmpDtype::Bf16);
    assert_eq!(
        flags
            .provenance
            .source("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH"),
        Source::Variable(Variable::AmpLogPath)
    );
}

#[test]
fn bad_mixed_precision_values_are_errors_naming_the_variable() {
    let message = |pairs: &[(&str, &str)]| with_variables(pairs).unwrap_err().to_string();
    assert_eq!(
        message(&[("TF_ENABLE_AUTO_MIXED_PRECISION", "yes")]),
        "TF_ENABLE_AUTO_MIXED_PRECISION: bad value `yes`; expected `true`, `false`, `1` or `0`."
    );
    assert_eq!(
        message(&[("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD", "exp,,log")]),
        "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD: bad value `exp,,log`; expected comma-separated names."
    );
    assert_eq!(
        message(&[("TF_XLA_FLAGS", "--kiln_amp_dtype=fp16")]),
        "TF_XLA_FLAGS: bad value `fp16` for `--kiln_amp_dtype`; expected one of `f16`, `bf16`."
    );
    let mut sources = Sources::default();
    let err = sources.set("TF_ENABLE_AMP", "1").unwrap_err();
    assert!(
        err.starts_with(
            "Kiln reads no variable `TF_ENABLE_AMP`; it reads TF_DETERMINISTIC_OPS, TF_XLA_FLAGS"
        ),
        "{err}"
    );
}
