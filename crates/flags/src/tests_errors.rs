//! Every error, with its exact message: these are what a user reads before anything runs.

use crate::tests_flags::{temp_file, tf, xla};
use crate::{Flags, FlagsError, Malformed, Sources, Variable};

fn message(result: Result<Flags, FlagsError>) -> String {
    result.expect_err("expected an error").to_string()
}

#[test]
fn unknown_flag_names_the_closest_one() {
    assert_eq!(
        message(tf("--tf_xla_auto_jt=1")),
        "TF_XLA_FLAGS: unknown flag `--tf_xla_auto_jt`; did you mean `--tf_xla_auto_jit`?"
    );
    assert_eq!(
        message(xla("--xla_dump=/tmp")),
        "XLA_FLAGS: unknown flag `--xla_dump`; did you mean `--xla_dump_to`?"
    );
    assert_eq!(
        message(tf("--xla_gpu_autotune_levle=2")),
        "TF_XLA_FLAGS: unknown flag `--xla_gpu_autotune_levle`; did you mean `--xla_gpu_autotune_level` (an XLA_FLAGS flag)?"
    );
    assert_eq!(
        message(tf("--frobnicate")),
        "TF_XLA_FLAGS: unknown flag `--frobnicate`; run `kiln flags` to list the accepted flags."
    );
    // The single-value variables are not `--flags`.
    assert!(matches!(
        tf("--TF_DETERMINISTIC_OPS=1"),
        Err(FlagsError::UnknownFlag { .. })
    ));
}

#[test]
fn a_flag_in_the_other_variable() {
    assert_eq!(
        message(tf("--xla_gpu_autotune_level=2")),
        "TF_XLA_FLAGS: `--xla_gpu_autotune_level` is an XLA_FLAGS flag, not TF_XLA_FLAGS; move it to XLA_FLAGS."
    );
    assert_eq!(
        message(xla("--tf_xla_auto_jit=2")),
        "XLA_FLAGS: `--tf_xla_auto_jit` is a TF_XLA_FLAGS flag, not XLA_FLAGS; move it to TF_XLA_FLAGS."
    );
    assert!(matches!(
        xla("--tf_xla_persistent_cache_directory=/c"),
        Err(FlagsError::WrongVariable {
            belongs: Variable::TfXlaFlags,
            ..
        })
    ));
}

#[test]
fn bad_values_list_the_accepted_ones() {
    let cases = [
        (tf("--tf_xla_auto_jit=3"), "TF_XLA_FLAGS: bad value `3` for `--tf_xla_auto_jit`; expected `-1`, `0`, `1`, `2`, `fusible` or `single-gpu(N)` with N = 0, 1 or 2."),
        (tf("--tf_xla_enable_lazy_compilation=no"), "TF_XLA_FLAGS: bad value `no` for `--tf_xla_enable_lazy_compilation`; expected `true`, `false`, `1` or `0`."),
        (tf("--tf_xla_min_cluster_size=four"), "TF_XLA_FLAGS: bad value `four` for `--tf_xla_min_cluster_size`; expected a non-negative integer."),
        (tf("--tf_xla_max_cluster_size=0"), "TF_XLA_FLAGS: bad value `0` for `--tf_xla_max_cluster_size`; expected a positive integer."),
        (tf("--tf_xla_async_io_level=2"), "TF_XLA_FLAGS: bad value `2` for `--tf_xla_async_io_level`; expected an integer from 0 to 1."),
        (xla("--xla_gpu_autotune_level=7"), "XLA_FLAGS: bad value `7` for `--xla_gpu_autotune_level`; expected an integer from 0 to 4."),
        (xla("--xla_multiheap_size_constraint_per_heap=-5"), "XLA_FLAGS: bad value `-5` for `--xla_multiheap_size_constraint_per_heap`; expected an integer of at least -1."),
        (xla("--xla_dump_to="), "XLA_FLAGS: bad value `` for `--xla_dump_to`; expected a non-empty path."),
        (xla("--xla_dump_to=\"\""), "XLA_FLAGS: bad value `` for `--xla_dump_to`; expected a non-empty path."),
    ];
    for (result, want) in cases {
        assert_eq!(message(result), want);
    }
}

#[test]
fn a_bare_non_boolean_needs_a_value() {
    assert_eq!(
        message(tf("--tf_xla_min_cluster_size")),
        "TF_XLA_FLAGS: `--tf_xla_min_cluster_size` needs a value; expected a non-negative integer, written `--tf_xla_min_cluster_size=VALUE`."
    );
}

#[test]
fn stray_tokens_are_errors_not_a_silent_stop() {
    assert_eq!(
        message(tf("--tf_xla_auto_jit=1 fusible")),
        "TF_XLA_FLAGS: `fusible` is not a flag; write flags as `--name=value`, separated by spaces or commas."
    );
    assert_eq!(
        message(tf("-tf_xla_auto_jit=1")),
        "TF_XLA_FLAGS: `-tf_xla_auto_jit=1` is not a flag; write flags as `--name=value`, separated by spaces or commas."
    );
    assert_eq!(
        message(tf("--=1")),
        "TF_XLA_FLAGS: `--=1` has no flag name; write flags as `--name=value`."
    );
    assert_eq!(
        message(xla("--xla_dump_to=\"/tmp/a b")),
        "XLA_FLAGS: the \" quote in `--xla_dump_to=\"/tmp/a b` is never closed; close it on the same line (a value cannot contain its own quote character)."
    );
    assert!(matches!(
        tf("--tf_xla_auto_jit=1 -- x"),
        Err(FlagsError::MalformedToken {
            problem: Malformed::EmptyName,
            ..
        })
    ));
}

#[test]
fn two_cache_names_with_different_directories_conflict() {
    assert_eq!(
        message(Flags::from_sources(&Sources {
            tf_xla_flags: Some("--tf_xla_persistent_cache_directory=/a".into()),
            xla_flags: Some("--xla_gpu_persistent_cache_dir=/b".into()),
            ..Sources::default()
        })),
        "`--tf_xla_persistent_cache_directory=/a` in TF_XLA_FLAGS and `--xla_gpu_persistent_cache_dir=/b` in XLA_FLAGS set the same thing to different values; keep one of them, or give both the same value."
    );
    assert!(matches!(
        tf("--xla_gpu_persistent_cache_dir=/a --tf_xla_persistent_cache_directory=/b"),
        Err(FlagsError::Conflict { .. })
    ));
}

#[test]
fn errors_in_a_flag_file_name_the_file_and_line() {
    let path = temp_file(
        "bad",
        "# comment\n--tf_xla_auto_jit=1\n\n--tf_xla_min_cluster_size=x\n",
    );
    assert_eq!(
        message(tf(&path.display().to_string())),
        format!(
            "{}:4 (flag file named by TF_XLA_FLAGS): bad value `x` for `--tf_xla_min_cluster_size`; expected a non-negative integer.",
            path.display()
        )
    );
    std::fs::remove_file(&path).ok();
    let path = temp_file("quote", "--xla_dump_to='/tmp\n'\n");
    assert!(
        message(xla(&path.display().to_string())).starts_with(&format!(
            "{}:1 (flag file named by XLA_FLAGS): the ' quote",
            path.display()
        ))
    );
    std::fs::remove_file(&path).ok();
}

#[test]
fn an_unreadable_flag_file() {
    let missing =
        std::env::temp_dir().join(format!("kiln-flags-{}-does-not-exist", std::process::id()));
    let error = tf(&missing.display().to_string()).unwrap_err();
    let FlagsError::UnreadableFile {
        variable,
        path,
        source,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!((*variable, path), (Variable::TfXlaFlags, &missing));
    assert_eq!(
        error.to_string(),
        format!(
            "TF_XLA_FLAGS does not start with `-`, so it names a flag file, but `{}` could not be read: {source}.",
            missing.display()
        )
    );
    // A typo like a missing dash is reported the same way, which is why the message says why
    // the value was taken for a file name.
    assert!(matches!(
        tf("tf_xla_auto_jit=1"),
        Err(FlagsError::UnreadableFile { .. })
    ));
    // A directory is not a readable file either.
    assert!(matches!(
        xla(&std::env::temp_dir().display().to_string()),
        Err(FlagsError::UnreadableFile { .. })
    ));
    // Nor is a device (refused before reading: it could be endless), a FIFO (refused at
    // once: opening it would wait for a writer), a file past the limit, or binary data.
    if std::path::Path::new("/dev/zero").exists() {
        assert_eq!(
            message(tf("/dev/zero")),
            "TF_XLA_FLAGS does not start with `-`, so it names a flag file, but `/dev/zero` could not be read: not a regular file (a character device)."
        );
    }
    let big = std::env::temp_dir().join(format!("kiln-flags-{}-big", std::process::id()));
    std::fs::write(&big, vec![b' '; (1 << 20) + 1]).unwrap();
    let error = message(tf(&big.display().to_string()));
    std::fs::remove_file(&big).unwrap();
    assert!(
        error.ends_with("could not be read: larger than 1 MiB."),
        "{error}"
    );
    #[cfg(unix)]
    {
        let fifo = std::env::temp_dir().join(format!("kiln-flags-{}-fifo", std::process::id()));
        let path = std::ffi::CString::new(fifo.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let error = message(tf(&fifo.display().to_string()));
        std::fs::remove_file(&fifo).unwrap();
        assert!(
            error.ends_with("could not be read: not a regular file (a FIFO)."),
            "{error}"
        );
    }
    let binary = std::env::temp_dir().join(format!("kiln-flags-{}-binary", std::process::id()));
    std::fs::write(&binary, b"--xla_cpu_num_threads=2 \xff\xfe").unwrap();
    let error = message(xla(&binary.display().to_string()));
    std::fs::remove_file(&binary).unwrap();
    assert!(
        error.ends_with("could not be read: not UTF-8 text."),
        "{error}"
    );
}

#[test]
fn bad_single_value_variables() {
    let with = |sources: Sources| message(Flags::from_sources(&sources));
    assert_eq!(
        with(Sources { tf_deterministic_ops: Some("yes".into()), ..Sources::default() }),
        "TF_DETERMINISTIC_OPS: bad value `yes`; expected `1`, `true`, `0` or `false` (letter case is ignored)."
    );
    assert_eq!(
        with(Sources { tf_cpp_min_log_level: Some("4".into()), ..Sources::default() }),
        "TF_CPP_MIN_LOG_LEVEL: bad value `4`; expected 0 (show everything), 1 (hide INFO), 2 (hide INFO and WARNING) or 3 (hide everything)."
    );
    assert_eq!(
        with(Sources { tf_cpp_vmodule: Some("mark_for_compilation_pass".into()), ..Sources::default() }),
        "TF_CPP_VMODULE: `mark_for_compilation_pass` has no `=level`; write comma-separated `module=level` entries, e.g. `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`."
    );
}

#[test]
fn not_unicode_names_the_variable() {
    let error = FlagsError::NotUnicode {
        variable: Variable::XlaFlags,
    };
    assert_eq!(
        error.to_string(),
        "XLA_FLAGS is not valid UTF-8; Kiln reads its variables as UTF-8 text."
    );
}
