//! `kiln flags` and `docs/flags.md`, both generated from [`FLAGS`].

use std::fmt::Write;

use crate::logging::LOG_TARGETS;
use crate::provenance::{Source, Variable};
use crate::spec::{Effect, FlagSpec, FLAGS};
use crate::Flags;

/// The groups both outputs use, in order: the two flag variables, then the rest.
fn groups() -> [(&'static str, Vec<&'static FlagSpec>); 3] {
    let home = |variable: Variable| {
        FLAGS
            .iter()
            .filter(|s| s.is_flag() && s.home() == variable)
            .collect()
    };
    [
        ("TF_XLA_FLAGS", home(Variable::TfXlaFlags)),
        ("XLA_FLAGS", home(Variable::XlaFlags)),
        (
            "Other variables",
            FLAGS.iter().filter(|s| !s.is_flag()).collect(),
        ),
    ]
}

/// Where `spec`'s value came from, for humans: `TF_XLA_FLAGS`, `file f (via XLA_FLAGS)`,
/// `XLA_FLAGS as --xla_gpu_persistent_cache_dir`, `default`, `set in code`.
pub fn source_text(spec: &FlagSpec, flags: &Flags) -> String {
    match flags.provenance.origin(spec.name) {
        Some(origin) if origin.via != spec.name => format!("{} as --{}", origin.source, origin.via),
        Some(origin) => origin.source.to_string(),
        // A value that differs from the default without a recorded origin was set in code,
        // e.g. `Flags { min_cluster_size: 2, ..Flags::default() }`.
        None if spec.current(flags) != spec.default => Source::Programmatic.to_string(),
        None => Source::Default.to_string(),
    }
}

/// The most characters a cell of the `kiln flags` table shows; a longer value (a flag can
/// hold a value of any length) is cut, and says how long it was.
pub const MAX_CELL_CHARS: usize = 80;

/// `text`, or when it is longer than [`MAX_CELL_CHARS`] its start, an ellipsis and its
/// length: `/very/long/pa… (70000 chars)`.
fn shorten(text: &str) -> String {
    let n = text.chars().count();
    if n <= MAX_CELL_CHARS {
        return text.to_string();
    }
    let suffix = format!("… ({n} chars)");
    let keep = MAX_CELL_CHARS - suffix.chars().count();
    text.chars().take(keep).collect::<String>() + &suffix
}

/// The table `kiln flags` prints: every flag with its value in effect, its default, where the
/// value came from and whether this build acts on it, then why the others do not act.
pub fn render_flags_table(flags: &Flags) -> String {
    let header = ["FLAG", "VALUE", "DEFAULT", "SOURCE", "EFFECT"];
    let rows: Vec<(usize, [String; 5])> = groups()
        .iter()
        .enumerate()
        .flat_map(|(group, (_, specs))| {
            specs.iter().map(move |spec| {
                let cells = [
                    spec.spelling(),
                    spec.current(flags),
                    spec.default.to_string(),
                    source_text(spec, flags),
                    spec.effect.summary().to_string(),
                ]
                .map(|cell| shorten(&cell));
                (group, cells)
            })
        })
        .collect();
    let mut widths = header.map(str::len);
    for (_, cells) in &rows {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // Padded by hand: a `{cell:<width$}` width of 65,536 or more panics in `fmt`.
    let line = |cells: &[&str]| -> String {
        let mut text = String::from(" ");
        for (cell, width) in cells.iter().zip(widths) {
            text.push(' ');
            text += cell;
            let pad = width.saturating_sub(cell.chars().count()) + 1;
            text.extend(std::iter::repeat_n(' ', pad));
        }
        text.trim_end().to_string() + "\n"
    };

    let mut out = String::from("Kiln flags: the value in effect, its default, where it came from, and whether this build acts on it.\n");
    let names = groups().map(|(name, _)| name);
    let mut current_group = usize::MAX;
    for (group, cells) in &rows {
        if *group != current_group {
            current_group = *group;
            let _ = write!(out, "\n{}\n", names[*group]);
            out += &line(&header);
        }
        out += &line(&cells.each_ref().map(String::as_str));
    }
    out += "\nAccepted but not acted on in this build:\n";
    for spec in FLAGS {
        if let Effect::NotYet(reason) = spec.effect {
            let _ = writeln!(out, "  {}: {reason}", spec.spelling());
        }
    }
    out += "\nWhat each flag does: docs/flags.md.\n";
    out
}

/// `docs/flags.md`: the syntax, every flag with its accepted values, default, effect in this
/// build and meaning, and the log targets. A test fails when the file is stale.
pub fn render_flags_markdown() -> String {
    let mut out = String::new();
    out += "# Kiln flags\n\n";
    out += "<!-- Generated from crates/flags/src/spec.rs; do not edit. Regenerate with `KILN_BLESS=1 cargo test -p kiln-flags`. -->\n\n";
    out += INTRO;
    for (title, specs) in groups() {
        let _ = write!(out, "\n## {title}\n\n");
        if title == "Other variables" {
            out += "Each of these variables holds a single value.\n\n";
        }
        out += "| Flag | Accepted values | Default | In this build | What it does |\n";
        out += "| --- | --- | --- | --- | --- |\n";
        for spec in specs {
            let also: Vec<&str> = spec.variables[1..].iter().map(|v| v.name()).collect();
            let name = if also.is_empty() {
                format!("`{}`", spec.spelling())
            } else {
                format!(
                    "`{}` (also accepted in {})",
                    spec.spelling(),
                    also.join(", ")
                )
            };
            let effect = match spec.effect {
                Effect::NotYet(reason) => format!("no effect yet: {reason}"),
                effect => effect.summary().to_string(),
            };
            let _ = writeln!(
                out,
                "| {name} | {} | `{}` | {effect} | {} |",
                spec.kind().accepted(),
                spec.default,
                spec.help
            );
        }
    }
    out += "\n## Log targets\n\n";
    out += "Kiln logs through `tracing` with TensorFlow's module names as targets. Name them in `TF_CPP_VMODULE` (`TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`), or in `RUST_LOG` with env_logger's syntax (`RUST_LOG=xla_compilation_cache=info`). Lines look like `I 12:00:01.123 xla_compilation_cache] message vlog=1`: severity, UTC time, target.\n\n";
    out += "| Target | What it logs |\n| --- | --- |\n";
    for (target, what) in LOG_TARGETS {
        let _ = writeln!(out, "| `{target}` | {what} |");
    }
    out += DIFFERENCES;
    out
}

const INTRO: &str = "Kiln reads the environment variables that steer TensorFlow XLA, once, at start-up, in one place (`crates/flags`). Run `kiln flags` to see every flag with the value in effect and where that value came from.

## Syntax

- `TF_XLA_FLAGS` and `XLA_FLAGS` hold flags written `--name=value`, separated by whitespace. A comma followed by another `--` flag also separates, as in the guide's `TF_XLA_FLAGS='--tf_xla_auto_jit=1,--tf_xla_always_defer_compilation=true'`; any other comma is part of the value.
- Quote a value that contains whitespace: `--xla_dump_to=\"/tmp/my dumps\"` (single quotes work too; a value cannot contain its own quote character).
- Booleans accept `true`, `false`, `1` and `0` (any letter case); a bare `--flag` means `true`.
- A `#` at the start of a token begins a comment that runs to the end of the line.
- As in TensorFlow, a value that does not start with `-` names a file holding flags in the same syntax, one or more per line; errors in it name the file and the line.
- A flag given twice keeps the last value. The two names of the persistent cache directory may both be given only with the same directory.
- An unset or empty variable leaves its settings at their defaults.

Unlike TensorFlow, which silently stops at a token it cannot read, Kiln refuses to start on any problem and says what to write instead: an unknown flag (naming the closest known one), a flag given to the wrong variable, a bad value (listing the accepted values), a stray token, or an unreadable flag file.
";

const DIFFERENCES: &str = "
## Differences from TensorFlow

- `--tf_xla_auto_jit` defaults to `1` on every device, CPU included, and `--tf_xla_cpu_global_jit` defaults to `true`: inside TensorFlow XLA is opt-in, but Kiln exists to compile. `--tf_xla_auto_jit=0` gives TensorFlow's default behaviour (only manually marked code compiles).
- `TF_CPP_MIN_LOG_LEVEL` defaults to `1` (INFO hidden); modules named in `TF_CPP_VMODULE` log at INFO whatever its value.
- The two persistent cache flags name one cache for every backend; its entries are read on demand, not all at start-up.
- `--xla_gpu_deterministic_ops=true` and `TF_DETERMINISTIC_OPS=1` are the same setting.
- `--xla_cpu_num_threads` is Kiln's own flag.
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sources;
    use std::path::Path;

    #[test]
    fn docs_flags_md_is_up_to_date() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/flags.md");
        let want = render_flags_markdown();
        if std::env::var_os("KILN_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &want).expect("write docs/flags.md");
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            let line = have.lines().zip(want.lines()).position(|(a, b)| a != b);
            let line = line.unwrap_or_else(|| have.lines().count().min(want.lines().count()));
            panic!(
                "docs/flags.md is stale (first difference at line {}):\n  have: {:?}\n  want: {:?}\nRegenerate it with `KILN_BLESS=1 cargo test -p kiln-flags`.",
                line + 1,
                have.lines().nth(line).unwrap_or("<end of file>"),
                want.lines().nth(line).unwrap_or("<end of file>"),
            );
        }
    }

    #[test]
    fn markdown_lists_every_flag_with_default_and_effect() {
        let md = render_flags_markdown();
        for spec in FLAGS {
            let row = md
                .lines()
                .find(|l| l.starts_with(&format!("| `{}`", spec.spelling())))
                .unwrap_or_else(|| panic!("no row for {}", spec.name));
            assert!(row.contains(&format!("| `{}` |", spec.default)), "{row}");
            assert!(row.contains(spec.effect.summary()), "{row}");
        }
        assert!(md.contains("`--xla_gpu_persistent_cache_dir` (also accepted in TF_XLA_FLAGS)"));
    }

    #[test]
    fn table_lists_every_flag_default_and_source() {
        let table = render_flags_table(&Flags::default());
        for spec in FLAGS {
            let row = table
                .lines()
                .find(|l| l.split_whitespace().next() == Some(spec.spelling().as_str()))
                .unwrap_or_else(|| panic!("no row for {}", spec.name));
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells[1], spec.default, "{row}");
            assert_eq!(cells[2], spec.default, "{row}");
            assert_eq!(cells[3], "default", "{row}");
        }
        assert!(table.contains("--tf_xla_async_io_level: Kiln's executor"));
    }

    /// Issue 32: a value of 65,535 characters or more made `{cell:<width$}` panic
    /// ("Formatting argument out of range"). Any length renders, cut to a cell's width.
    #[test]
    fn long_values_render_shortened_with_their_length() {
        for len in [80, 81, 65_534, 65_535, 65_536, 1 << 20] {
            let dir = "d".repeat(len - 1);
            let flags = Flags::from_sources(&Sources {
                xla_flags: Some(format!("--xla_dump_to=/{dir}")),
                ..Sources::default()
            })
            .unwrap();
            let table = render_flags_table(&flags);
            let row = table
                .lines()
                .find(|l| l.trim_start().starts_with("--xla_dump_to "))
                .unwrap();
            let value = row.split_whitespace().nth(1).unwrap();
            if len <= MAX_CELL_CHARS {
                assert_eq!(value, format!("/{dir}"));
            } else {
                assert!(value.starts_with("/ddd"), "{row}");
                assert!(value.ends_with('…'), "{row}");
                assert!(row.contains(&format!("… ({len} chars)")), "{row}");
            }
            assert!(
                table
                    .lines()
                    .all(|l| l.chars().count() < 6 * MAX_CELL_CHARS),
                "a line of the table is too long"
            );
        }
        assert_eq!(shorten("é".repeat(80).as_str()), "é".repeat(80));
        let cut = shorten(&"é".repeat(100));
        assert_eq!(cut.chars().count(), MAX_CELL_CHARS);
        assert!(cut.ends_with("é… (100 chars)"), "{cut}");
    }

    #[test]
    fn table_shows_values_in_effect_and_their_sources() {
        let mut flags = Flags::from_sources(&Sources {
            tf_xla_flags: Some(
                "--tf_xla_auto_jit=fusible --xla_gpu_persistent_cache_dir=/c".into(),
            ),
            xla_flags: Some("--xla_gpu_deterministic_ops".into()),
            ..Sources::default()
        })
        .unwrap();
        flags.min_cluster_size = 9;
        let table = render_flags_table(&flags);
        let row = |name: &str| {
            table
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{name} ")))
                .unwrap()
                .to_string()
        };
        assert!(row("--tf_xla_auto_jit").contains("fusible"));
        assert!(row("--tf_xla_auto_jit").contains(" TF_XLA_FLAGS "));
        assert!(row("--tf_xla_persistent_cache_directory")
            .contains("TF_XLA_FLAGS as --xla_gpu_persistent_cache_dir"));
        assert!(row("TF_DETERMINISTIC_OPS").contains("XLA_FLAGS as --xla_gpu_deterministic_ops"));
        assert!(row("--tf_xla_min_cluster_size").contains("set in code"));
        flags.enable_op_determinism();
        let table = render_flags_table(&flags);
        assert!(table
            .lines()
            .any(|l| l.trim_start().starts_with("TF_DETERMINISTIC_OPS ")
                && l.contains("set in code")));
    }
}
