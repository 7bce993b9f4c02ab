//! Process-wide configuration at the API edge: the flags in effect (from the environment,
//! read by `kiln-flags`) plus programmatic switches such as
//! [`enable_op_determinism`]. Everything below this crate receives a `Flags` value
//! explicitly.

use crate::KilnError;
pub use kiln_flags::Flags;
use std::sync::atomic::{AtomicBool, Ordering};

static OP_DETERMINISM: AtomicBool = AtomicBool::new(false);

/// Turns on deterministic execution for this process, like
/// `tf.config.experimental.enable_op_determinism()`: same inputs on the same hardware give
/// bit-identical outputs, independent of the thread count.
pub fn enable_op_determinism() {
    OP_DETERMINISM.store(true, Ordering::SeqCst);
}

/// The flags in effect: the environment (`TF_XLA_FLAGS`, `XLA_FLAGS`,
/// `TF_DETERMINISTIC_OPS`, `TF_CPP_VMODULE`, `TF_CPP_MIN_LOG_LEVEL`) plus programmatic
/// switches. Errors name the bad flag.
pub fn flags() -> Result<Flags, KilnError> {
    Ok(with_switches(Flags::from_env()?))
}

/// The flags given by these variable texts (instead of the process environment) plus the
/// programmatic switches: what a binding uses when its caller overrides a variable for one
/// session (`kiln.jit(f, tf_xla_flags=…)` in Python). Errors name the bad flag.
pub fn flags_from_sources(sources: &kiln_flags::Sources) -> Result<Flags, KilnError> {
    Ok(with_switches(Flags::from_sources(sources)?))
}

fn with_switches(mut flags: Flags) -> Flags {
    if OP_DETERMINISM.load(Ordering::SeqCst) {
        flags.enable_op_determinism();
    }
    flags
}
