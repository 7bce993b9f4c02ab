//! Test-only helpers shared by every Kiln test crate (a dev-dependency, never a dependency
//! of the library): one bless rule for text goldens, one random generator with one list of
//! special values, one "same bits" rule, one way to make a cluster from `.kir` text.

mod golden;
mod npy;
mod values;

pub use golden::{bless, check_golden, diff};
pub use npy::{numbered_npys, read_npy};
pub use values::{f32_value, first_difference, random_tensor, same_bits, small_int, Rng};

use kiln_ir::{parse_func, Cluster};

/// A cluster whose region is the function in `src`, or why `src` is not a valid function
/// (the parser's or the verifier's errors).
pub fn try_cluster(src: &str) -> Result<Cluster, String> {
    let body = parse_func(src, "test.kir").map_err(|e| e.to_string())?;
    let errs = kiln_ir::verify_func(&body);
    if !errs.is_empty() {
        return Err(format!("{errs:?}"));
    }
    Ok(Cluster {
        name: "cluster_t".into(),
        body,
    })
}

/// A test whose resource is missing (a GPU, `ptxas`) skips with a message saying why, or,
/// when the environment variable `require` is set (`KILN_REQUIRE_GPU=1`,
/// `KILN_REQUIRE_PTXAS=1`: CI with `ptxas` installed, a session with a GPU lent), fails.
pub fn skip_unless_required(require: &str, why: impl std::fmt::Display) {
    let required = std::env::var_os(require).is_some_and(|v| !v.is_empty() && v != "0");
    if required {
        panic!("{require} is set but {why}");
    }
    eprintln!("skipped: {why}");
}

/// [`try_cluster`], panicking with the error and the source.
pub fn cluster(src: &str) -> Cluster {
    try_cluster(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}
