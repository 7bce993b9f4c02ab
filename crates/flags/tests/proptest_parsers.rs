//! Both flag parsers (`TF_XLA_FLAGS`, `XLA_FLAGS`) and the single-value parsers, fed random
//! and near-valid text: never a panic, always `Ok` or a typed error with a message.

use std::sync::atomic::{AtomicUsize, Ordering};

use kiln_flags::{
    render_flags_table, FlagSpec, Flags, FlagsError, Kind, Sources, VModule, Variable, FLAGS,
};
use proptest::prelude::*;

fn parse(tf_xla_flags: Option<String>, xla_flags: Option<String>) -> Result<Flags, FlagsError> {
    Flags::from_sources(&Sources {
        tf_xla_flags,
        xla_flags,
        ..Sources::default()
    })
}

/// An `Ok` must hold values inside the documented ranges and render; an error must explain.
fn check(result: Result<Flags, FlagsError>) {
    match result {
        Ok(flags) => {
            assert!(flags.autotune_level <= 4);
            assert!(flags.backend_optimization_level <= 3);
            assert!(flags.async_io_level <= 1);
            assert!(flags.multiheap_size_constraint_per_heap >= -1);
            assert!(flags.max_cluster_size != Some(0));
            assert!(!render_flags_table(&flags).is_empty());
        }
        Err(error) => assert!(error.to_string().ends_with(['.', '?']), "{error}"),
    }
}

/// Flag names as written and as users get them wrong.
fn name() -> impl Strategy<Value = String> {
    let known: Vec<String> = FLAGS.iter().map(|s| s.name.to_string()).collect();
    prop_oneof![
        4 => proptest::sample::select(known.clone()),
        1 => (proptest::sample::select(known), 0usize..30, "[a-z_A-Z-]").prop_map(|(n, at, c)| {
            let mut chars: Vec<char> = n.chars().collect();
            let at = at.min(chars.len());
            chars.insert(at, c.chars().next().unwrap_or('x'));
            chars.into_iter().collect()
        }),
        1 => "[a-z_]{0,12}",
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "",
            "0",
            "1",
            "2",
            "4",
            "-1",
            "-2",
            "true",
            "false",
            "TRUE",
            "yes",
            "fusible",
            "single-gpu(1)",
            "single-gpu(9)",
            "/tmp/k",
            "9223372036854775807",
            "99999999999999999999",
            "\"/tmp/a b\"",
            "'x'",
            "\"",
            "'",
            "a,b",
            "#x",
        ])
        .prop_map(str::to_string),
        "\\PC{0,8}",
    ]
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (name(), proptest::option::of(value())).prop_map(|(n, v)| match v {
            Some(v) => format!("--{n}={v}"),
            None => format!("--{n}"),
        }),
        1 => (name(), value()).prop_map(|(n, v)| format!("-{n}={v}")),
        1 => "\\PC{0,6}",
    ]
}

fn separator() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![" ", ",", "\t", "\n", ", ", " # c\n", ",,"])
}

fn near_valid() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((token(), separator()), 0..6),
        any::<bool>(),
    )
        .prop_map(|(parts, lead)| {
            let mut text = if lead {
                String::from(" ")
            } else {
                String::new()
            };
            for (token, separator) in parts {
                text += &token;
                text += separator;
            }
            text
        })
}

/// A valid `--flag=value` token for a flag row, with the value `kiln flags` should then show.
fn valid_token() -> impl Strategy<Value = (&'static FlagSpec, String, String)> {
    let flags: Vec<&'static FlagSpec> = FLAGS.iter().filter(|s| s.is_flag()).collect();
    (proptest::sample::select(flags), 0i64..5, any::<bool>()).prop_map(|(spec, n, bare)| {
        let (written, shown) = match spec.kind() {
            Kind::Bool if bare => (String::new(), "true".to_string()),
            Kind::Bool => (format!("={}", n % 2), (n % 2 == 1).to_string()),
            // Up to 4 values from max(min, 1): inside every integer range in the table.
            Kind::Int { min, max } => {
                let lo = min.max(1);
                let v = lo + n % (max - lo + 1).min(4);
                (format!("={v}"), v.to_string())
            }
            Kind::AutoJit => {
                let v = ["-1", "0", "1", "2", "fusible"][n as usize];
                (format!("={v}"), v.to_string())
            }
            // One directory for every path, so the two cache names never disagree.
            Kind::Path => ("=\"/tmp/k k\"".to_string(), "/tmp/k k".to_string()),
            Kind::Names => {
                let v = ["cse", "dce", "simplify", "cse,dce", "mark_for_compilation"][n as usize];
                (format!("={v}"), v.to_string())
            }
            Kind::Choice(choices) => {
                let v = choices[n as usize % choices.len()];
                (format!("={v}"), v.to_string())
            }
            Kind::VModule => unreachable!("not a --flag"),
        };
        (spec, format!("--{}{written}", spec.name), shown)
    })
}

fn temp_file(contents: &str) -> std::path::PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("kiln-flags-prop-{}-{n}.flags", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        // Prefixed with `-` so that random text is parsed as flags, not opened as a file path;
        // the file form is covered below.
        check(parse(Some(format!("-{text}")), None));
        check(parse(None, Some(format!("-{text}"))));
        check(parse(Some(format!("--{text}")), Some(format!("--{text}"))));
    }

    #[test]
    fn near_valid_flag_strings_never_panic(tf in near_valid(), xla in near_valid()) {
        let dashed = |t: String| if t.trim_start().starts_with('-') || t.trim().is_empty() { t } else { format!("--{t}") };
        check(parse(Some(dashed(tf.clone())), None));
        check(parse(None, Some(dashed(xla.clone()))));
        check(parse(Some(dashed(tf)), Some(dashed(xla))));
    }

    #[test]
    fn valid_flags_always_parse_and_the_last_value_wins(
        tokens in prop::collection::vec((valid_token(), separator()), 1..8)
    ) {
        let mut tf = String::new();
        let mut xla = String::new();
        for ((spec, token, _), separator) in &tokens {
            let text = if spec.home() == Variable::XlaFlags { &mut xla } else { &mut tf };
            *text += token;
            *text += separator;
        }
        let flags = parse(Some(tf), Some(xla)).unwrap();
        for (i, ((spec, _, shown), _)) in tokens.iter().enumerate() {
            if tokens[i + 1..].iter().all(|((later, _, _), _)| later.name != spec.name) {
                prop_assert_eq!(&spec.current(&flags), shown, "{}", spec.name);
            }
        }
    }

    #[test]
    fn flag_files_with_any_contents_never_panic(contents in prop_oneof![near_valid(), any::<String>()]) {
        let path = temp_file(&contents);
        check(parse(Some(path.display().to_string()), None));
        check(parse(None, Some(path.display().to_string())));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn single_value_variables_never_panic(text in "\\PC{0,12}") {
        for sources in [
            Sources { tf_deterministic_ops: Some(text.clone()), ..Sources::default() },
            Sources { tf_cpp_min_log_level: Some(text.clone()), ..Sources::default() },
            Sources { tf_cpp_vmodule: Some(text.clone()), ..Sources::default() },
        ] {
            check(Flags::from_sources(&sources));
        }
    }

    #[test]
    fn vmodule_round_trips_what_it_accepts(text in "([a-z_]{0,6}(=[0-9]{0,3})?[, ]{0,2}){0,4}") {
        if let Ok(vmodule) = VModule::parse(&text) {
            prop_assert_eq!(VModule::parse(&vmodule.to_string()).unwrap(), vmodule);
        }
    }
}
