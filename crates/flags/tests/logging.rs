//! The logger end to end, in its own process because it installs the global `log` logger:
//! `tracing` events (no subscriber installed) must come out through it, filtered by
//! `TF_CPP_VMODULE`, `TF_CPP_MIN_LOG_LEVEL` and `RUST_LOG`, in TensorFlow's compact format.

use std::io::Write;
use std::sync::{Arc, Mutex};

use kiln_flags::logging::{CPU_COMPILER, MARK_FOR_COMPILATION_PASS, XLA_COMPILATION_CACHE};
use kiln_flags::{init_logging, logger_builder, vlog, Flags, Sources};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `I 12:00:01.123 target] message`: letter, space, 12-char time, space, rest.
fn split_line(line: &str) -> (char, &str, &str) {
    let letter = line.chars().next().unwrap();
    let time = &line[2..14];
    assert!(
        time.as_bytes().iter().enumerate().all(|(i, b)| match i {
            2 | 5 => *b == b':',
            8 => *b == b'.',
            _ => b.is_ascii_digit(),
        }),
        "bad time in {line:?}"
    );
    (letter, time, &line[15..])
}

#[test]
fn tracing_events_reach_the_tf_style_logger_through_the_filters() {
    let flags = Flags::from_sources(&Sources {
        tf_cpp_vmodule: Some("mark_for_compilation_pass=2".into()),
        ..Sources::default()
    })
    .unwrap();
    let captured = Captured::default();
    logger_builder(&flags, Some("cpu_compiler=debug"))
        .target(env_logger::Target::Pipe(Box::new(captured.clone())))
        .try_init()
        .expect("first logger in this process");

    vlog!(flags, MARK_FOR_COMPILATION_PASS, 2, "Built {} clusters", 3);
    vlog!(
        &flags,
        MARK_FOR_COMPILATION_PASS,
        3,
        "too verbose for level 2"
    );
    vlog!(
        flags,
        XLA_COMPILATION_CACHE,
        1,
        "not named in TF_CPP_VMODULE"
    );
    tracing::info!(target: "xla_compilation_cache", "INFO is hidden at TF_CPP_MIN_LOG_LEVEL=1");
    tracing::warn!(target: "device_executable_persistor", "ignoring a corrupt entry");
    tracing::debug!(target: CPU_COMPILER, "enabled by RUST_LOG");
    tracing::error!(target: "mark_for_compilation_pass", code = 7, "an error");

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<(char, &str, &str)> = text.lines().map(split_line).collect();
    let got: Vec<(char, &str)> = lines
        .iter()
        .map(|(letter, _, rest)| (*letter, *rest))
        .collect();
    assert_eq!(
        got,
        [
            ('I', "mark_for_compilation_pass] Built 3 clusters vlog=2"),
            ('W', "device_executable_persistor] ignoring a corrupt entry"),
            ('D', "cpu_compiler] enabled by RUST_LOG"),
            ('E', "mark_for_compilation_pass] an error code=7"),
        ],
        "captured:\n{text}"
    );

    // The CLI may call it again (or after an embedder installed a logger): no panic.
    init_logging(&flags);
    init_logging(&Flags::default());
}
