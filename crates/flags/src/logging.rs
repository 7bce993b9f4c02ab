//! Logging the way TensorFlow users expect: `TF_CPP_VMODULE` and `TF_CPP_MIN_LOG_LEVEL`.
//!
//! Library code emits `tracing` events whose target is a TensorFlow module name (the
//! constants below) and, for verbose output, a `vlog = N` field; [`vlog!`](crate::vlog)
//! does both and skips formatting when the level is off. The CLI calls [`init_logging`] once.
//! No `tracing` subscriber is installed: `tracing`'s `log` feature forwards events to the
//! `log` logger installed here, keeping their target.
//!
//! Output goes to stderr as `I 12:00:01.123 mark_for_compilation_pass] message vlog=2`
//! (severity letter, UTC time of day, target).

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use log::LevelFilter;

use crate::Flags;

/// Clustering decisions, refusals with their reasons, and (`=2`) TF's clustering summary.
pub const MARK_FOR_COMPILATION_PASS: &str = "mark_for_compilation_pass";
/// Each compile's time and the running total (`=1`), lazy/megamorphic decisions.
pub const XLA_COMPILATION_CACHE: &str = "xla_compilation_cache";
/// Persistent cache reads, writes and rejected entries.
pub const DEVICE_EXECUTABLE_PERSISTOR: &str = "device_executable_persistor";
/// CPU code generation (Cranelift): kernel sizes and compile times.
pub const CPU_COMPILER: &str = "cpu_compiler";
/// GPU code generation: PTX and cubin sizes (`=2`), as in XLA.
pub const NVPTX_COMPILER: &str = "nvptx_compiler";
/// Host ↔ device copies made by the executor (`=2`), XLA's transfer manager.
pub const TRANSFER_MANAGER: &str = "transfer_manager";

/// The automatic mixed precision rewrite: TensorFlow's `Converted N/M nodes` summary at INFO,
/// and (`=2`) every painting decision, (`=1`) every type change and cast.
pub const AUTO_MIXED_PRECISION: &str = "auto_mixed_precision";

/// Every log target Kiln uses, with what it logs; for `TF_CPP_VMODULE` and `docs/flags.md`.
pub static LOG_TARGETS: &[(&str, &str)] = &[
    (MARK_FOR_COMPILATION_PASS, "clustering decisions and refusals with their reasons; at 2, TensorFlow's `*** Clustering info for graph of size N` summary"),
    (XLA_COMPILATION_CACHE, "at 1, each compile's time and the accumulated total; lazy, deferred and megamorphic decisions"),
    (DEVICE_EXECUTABLE_PERSISTOR, "persistent cache reads, writes, and entries ignored as corrupt or foreign"),
    (CPU_COMPILER, "CPU code generation with Cranelift: kernel sizes and compile times; at 2, each kernel function's plan (vector width, loop form, staged and pinned nodes)"),
    (NVPTX_COMPILER, "at 2, the size of each PTX and cubin, as in XLA"),
    (AUTO_MIXED_PRECISION, "the mixed precision rewrite: at 1, each op changed to f16/bf16 and each cast inserted; at 2, each op painted ALLOW or DENY and why"),
    (TRANSFER_MANAGER, "at 2, each host ↔ device copy the executor makes (value, type, bytes, direction)"),
];

/// Emits a verbose log event if `TF_CPP_VMODULE` turns `level` on for `module`:
/// `vlog!(flags, "mark_for_compilation_pass", 2, "Built {} clusters", n)`.
///
/// The check comes first, so the arguments are not formatted when the level is off. The event
/// is `tracing::info!(target: module, vlog = level, …)`; `module` must be a constant (a
/// literal or one of the target constants in [`crate::logging`]).
#[macro_export]
macro_rules! vlog {
    ($flags:expr, $module:expr, $level:expr, $($arg:tt)+) => {{
        let level: i32 = $level;
        if $flags.vmodule.enabled($module, level) {
            $crate::__private::tracing::info!(target: $module, vlog = level, $($arg)+);
        }
    }};
}

/// Installs the stderr logger for the CLI. Safe to call more than once: only the first call
/// installs anything. Reads `RUST_LOG` (env_logger syntax, applied on top of the flags),
/// which is fine here because this runs at the edge.
pub fn init_logging(flags: &Flags) {
    let rust_log = std::env::var("RUST_LOG").ok();
    // A second call (or a logger installed by an embedding program) wins; that is not an error.
    let _ = logger_builder(flags, rust_log.as_deref()).try_init();
}

/// The logger [`init_logging`] installs, not yet installed, so that a test or an embedding
/// program can redirect it with `.target(…)` first. Its filter enables:
/// - warnings and errors, or more or less, according to `TF_CPP_MIN_LOG_LEVEL`;
/// - INFO and above for every target that `TF_CPP_VMODULE` gives a level above 0 (a name also
///   covers targets that start with it, as env_logger matches by prefix);
/// - then every `rust_log` directive, which overrides the above for the targets it names.
pub fn logger_builder(flags: &Flags, rust_log: Option<&str>) -> env_logger::Builder {
    let mut builder = env_logger::Builder::new();
    builder.filter_level(min_level_filter(flags.min_log_level));
    for (module, level) in flags.vmodule.entries() {
        if level > 0 {
            builder.filter_module(module, LevelFilter::Info);
        }
    }
    if let Some(directives) = rust_log {
        builder.parse_filters(directives);
    }
    builder.format(|out, record| {
        writeln!(
            out,
            "{} {} {}] {}",
            severity_letter(record.level()),
            utc_time_of_day(SystemTime::now()),
            record.target(),
            record.args()
        )
    });
    builder
}

/// `TF_CPP_MIN_LOG_LEVEL` as a `log` filter: 0 INFO, 1 WARNING, 2 ERROR, 3 nothing.
fn min_level_filter(min_log_level: u8) -> LevelFilter {
    match min_log_level {
        0 => LevelFilter::Info,
        1 => LevelFilter::Warn,
        2 => LevelFilter::Error,
        _ => LevelFilter::Off,
    }
}

fn severity_letter(level: log::Level) -> char {
    match level {
        log::Level::Error => 'E',
        log::Level::Warn => 'W',
        log::Level::Info => 'I',
        log::Level::Debug => 'D',
        log::Level::Trace => 'T',
    }
}

/// `HH:MM:SS.mmm` in UTC; local time would need the time zone database, and a log line only
/// needs to order events and measure gaps.
fn utc_time_of_day(now: SystemTime) -> String {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        since_epoch.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn min_log_level_maps_to_tf_severities() {
        assert_eq!(min_level_filter(0), LevelFilter::Info);
        assert_eq!(min_level_filter(1), LevelFilter::Warn);
        assert_eq!(min_level_filter(2), LevelFilter::Error);
        assert_eq!(min_level_filter(3), LevelFilter::Off);
    }

    #[test]
    fn time_of_day_is_utc_with_millis() {
        let t = UNIX_EPOCH + Duration::from_millis(((12 * 60 + 1) * 60 + 1) * 1000 + 123);
        assert_eq!(utc_time_of_day(t), "12:01:01.123");
        assert_eq!(
            utc_time_of_day(UNIX_EPOCH + Duration::from_secs(86_400 * 3 + 59)),
            "00:00:59.000"
        );
    }

    #[test]
    fn log_targets_are_distinct_and_described() {
        for (i, (name, what)) in LOG_TARGETS.iter().enumerate() {
            assert!(!what.is_empty());
            assert!(LOG_TARGETS[..i].iter().all(|(other, _)| other != name));
        }
    }

    #[test]
    fn vlog_checks_the_level_before_formatting() {
        struct Loud;
        impl std::fmt::Display for Loud {
            fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                panic!("formatted although the level is off");
            }
        }
        let flags = Flags::default();
        // Off: the argument must not be formatted (formatting it would panic).
        crate::vlog!(flags, MARK_FOR_COMPILATION_PASS, 2, "{}", Loud);
        crate::vlog!(&flags, "xla_compilation_cache", 1, "{}", Loud);
    }
}
