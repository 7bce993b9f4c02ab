//! `TF_CPP_VMODULE`: per-module verbose logging levels, as in TensorFlow.
//!
//! `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1` turns on `VLOG(n)`
//! output for `n <= level` in the named modules. Kiln's modules are `tracing` targets with
//! TensorFlow's module names (see [`crate::logging::LOG_TARGETS`]). Names match exactly; unlike
//! newer TensorFlow there are no `*` patterns.

use std::fmt;

use crate::error::{FlagsError, VModuleProblem};

/// Parsed `TF_CPP_VMODULE`: a verbosity level per module name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VModule {
    /// One entry per module, in first-mention order; a repeated module keeps its last level.
    entries: Vec<(String, i32)>,
}

impl VModule {
    /// Parses `module=level,module=level`. Spaces around names and levels are ignored, and so
    /// are empty entries (a trailing comma); anything else malformed is an error.
    pub fn parse(text: &str) -> Result<VModule, FlagsError> {
        let mut vmodule = VModule::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = |problem| FlagsError::BadVModule {
                entry: entry.to_string(),
                problem,
            };
            let (module, level) = entry
                .split_once('=')
                .ok_or_else(|| bad(VModuleProblem::MissingLevel))?;
            let (module, level) = (module.trim(), level.trim());
            if module.is_empty() {
                return Err(bad(VModuleProblem::EmptyModule));
            }
            let level = crate::values::parse_int(level, 0, i64::from(i32::MAX))
                .ok_or_else(|| bad(VModuleProblem::BadLevel))?;
            // In range by the check above, so the conversion cannot fail.
            vmodule.set(module, i32::try_from(level).unwrap_or(i32::MAX));
        }
        Ok(vmodule)
    }

    /// Sets `module`'s level, replacing an earlier one.
    pub fn set(&mut self, module: &str, level: i32) {
        match self.entries.iter_mut().find(|(name, _)| name == module) {
            Some(entry) => entry.1 = level,
            None => self.entries.push((module.to_string(), level)),
        }
    }

    /// The verbosity level of `module`: its `TF_CPP_VMODULE` level, or 0 when not named.
    pub fn level(&self, module: &str) -> i32 {
        self.entries
            .iter()
            .find(|(name, _)| name == module)
            .map_or(0, |(_, level)| *level)
    }

    /// Whether `VLOG(level)` in `module` is on: `level <= self.level(module)`. As in
    /// TensorFlow, level 0 is always on (it is plain INFO, subject to `TF_CPP_MIN_LOG_LEVEL`).
    pub fn enabled(&self, module: &str, level: i32) -> bool {
        level <= self.level(module)
    }

    /// The named modules and their levels.
    pub fn entries(&self) -> impl Iterator<Item = (&str, i32)> {
        self.entries
            .iter()
            .map(|(name, level)| (name.as_str(), *level))
    }

    /// Whether no module is named.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Display for VModule {
    /// Prints the canonical `module=level,…` form, which [`VModule::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (module, level)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{module}={level}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_guides_examples() {
        let v = VModule::parse("mark_for_compilation_pass=2,xla_compilation_cache=1").unwrap();
        assert_eq!(v.level("mark_for_compilation_pass"), 2);
        assert_eq!(v.level("xla_compilation_cache"), 1);
        assert_eq!(v.level("nvptx_compiler"), 0);
        assert!(v.enabled("mark_for_compilation_pass", 2));
        assert!(!v.enabled("mark_for_compilation_pass", 3));
        assert!(v.enabled("nvptx_compiler", 0));
        assert!(!v.enabled("nvptx_compiler", 1));
        assert_eq!(
            v.to_string(),
            "mark_for_compilation_pass=2,xla_compilation_cache=1"
        );
    }

    #[test]
    fn tolerates_spaces_empty_entries_and_repeats() {
        let v = VModule::parse(" a = 1 ,, b=3, a=2 ,").unwrap();
        assert_eq!(v.entries().collect::<Vec<_>>(), vec![("a", 2), ("b", 3)]);
        assert!(VModule::parse("").unwrap().is_empty());
        assert!(VModule::parse(" , ").unwrap().is_empty());
    }

    #[test]
    fn names_match_exactly() {
        let v = VModule::parse("mark_for_compilation=2").unwrap();
        assert_eq!(v.level("mark_for_compilation_pass"), 0);
    }

    #[test]
    fn malformed_entries_are_errors_that_say_what_to_write() {
        let cases = [
            (
                "mark_for_compilation_pass",
                "TF_CPP_VMODULE: `mark_for_compilation_pass` has no `=level`; write comma-separated `module=level` entries, e.g. `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`.",
            ),
            (
                "a=1,=2",
                "TF_CPP_VMODULE: `=2` has no module name before `=`; write comma-separated `module=level` entries, e.g. `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`.",
            ),
            (
                "a=two",
                "TF_CPP_VMODULE: `a=two` has a level that is not a non-negative integer; write comma-separated `module=level` entries, e.g. `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`.",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(VModule::parse(text).unwrap_err().to_string(), message);
        }
        for text in ["a=-1", "a=", "a=1=2", "a=99999999999"] {
            assert!(matches!(
                VModule::parse(text),
                Err(FlagsError::BadVModule {
                    problem: VModuleProblem::BadLevel,
                    ..
                })
            ));
        }
    }
}
