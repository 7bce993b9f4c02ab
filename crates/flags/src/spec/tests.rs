//! The flag table's own invariants.

use super::*;

#[test]
fn names_are_unique_and_every_row_has_a_home() {
    for (i, spec) in FLAGS.iter().enumerate() {
        assert!(!spec.variables.is_empty(), "{}", spec.name);
        assert!(
            FLAGS[..i].iter().all(|other| other.name != spec.name),
            "duplicate {}",
            spec.name
        );
        assert!(find_flag(spec.name).is_some());
        assert!(!spec.help.is_empty());
    }
}

#[test]
fn the_default_column_matches_flags_default() {
    let flags = Flags::default();
    for spec in FLAGS {
        assert_eq!(spec.current(&flags), spec.default, "{}", spec.name);
    }
}

#[test]
fn numeric_and_path_defaults_parse_back_to_themselves() {
    for spec in FLAGS
        .iter()
        .filter(|s| !matches!(s.default, "unset" | "unbounded" | "none"))
    {
        let mut flags = Flags::default();
        flags.parse_and_set_for_test(spec, spec.default);
        assert_eq!(spec.current(&flags), spec.default, "{}", spec.name);
    }
}

#[test]
fn linked_rows_share_their_field_both_ways() {
    for spec in FLAGS {
        for other in spec.linked {
            let other = find_flag(other).expect("linked row exists");
            assert!(
                other.linked.contains(&spec.name),
                "{} -> {}",
                spec.name,
                other.name
            );
            let mut flags = Flags::default();
            flags.parse_and_set_for_test(spec, "/some/dir");
            assert_eq!(other.current(&flags), "/some/dir");
        }
    }
}

#[test]
fn the_guides_flags_all_exist() {
    for name in [
        "tf_xla_auto_jit",
        "tf_xla_min_cluster_size",
        "tf_xla_max_cluster_size",
        "tf_xla_enable_lazy_compilation",
        "tf_xla_always_defer_compilation",
        "tf_xla_async_compilation",
        "tf_xla_cpu_global_jit",
        "tf_xla_clustering_debug",
        "tf_xla_deterministic_cluster_names",
        "tf_xla_persistent_cache_directory",
        "xla_gpu_persistent_cache_dir",
        "tf_xla_async_io_level",
        "tf_xla_clustering_fuel",
        "xla_gpu_autotune_level",
        "xla_backend_optimization_level",
        "xla_gpu_disable_ptxas_optimizations",
        "xla_multiheap_size_constraint_per_heap",
        "xla_dump_to",
        "xla_disable_hlo_passes",
        "xla_gpu_deterministic_ops",
        "xla_cpu_num_threads",
    ] {
        assert!(find_flag(name).is_some_and(FlagSpec::is_flag), "{name}");
    }
}

impl Flags {
    fn parse_and_set_for_test(&mut self, spec: &FlagSpec, value: &str) {
        spec.parse_and_set(self, Some(value))
            .unwrap_or_else(|e| panic!("{}={value}: {e:?}", spec.name));
    }
}
