//! Parsing and verifying scale linearly with the number of functions.
//!
//! A duplicate-name check that scanned every earlier function made a module of n functions
//! cost O(n²): 100,000 small functions took 50 s to `kiln check` where 10,000 took 0.3 s.
//! The bound is a ratio measured side by side in one run, not an absolute time, so a slow
//! or busy machine does not fail it: ten times the functions must cost less than twenty
//! times the time (linear is about ten; the quadratic check was over two hundred). The
//! parser also used to hold the whole file as characters and then as tokens (some thirty
//! times its size); faulting in that memory alone made 10x the functions cost 17-19x the
//! time, so it now reads tokens as it goes.

use kiln_ir::{parse_module, verify_module};
use std::time::{Duration, Instant};

/// `n` small functions, each with a parameter, two instructions and a result.
fn module_text(n: usize) -> String {
    let mut s = String::with_capacity(n * 120);
    for i in 0..n {
        s += &format!(
            "func @f{i}(%x: f32[4]) -> f32[4] {{\n  %e = exp %x : f32[4]\n  %y = add %e, %x : f32[4]\n  return %y\n}}\n"
        );
    }
    s
}

/// The shortest of `runs` parse + verify times of `src`, checking the result each time.
fn parse_and_verify(src: &str, n: usize, runs: usize) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            let m = parse_module(src, "many.kir").expect("parses");
            let diags = verify_module(&m);
            let took = start.elapsed();
            assert!(diags.is_empty(), "{:?}", &diags[..diags.len().min(3)]);
            assert_eq!(m.funcs.len(), n);
            took
        })
        .min()
        .expect("at least one run")
}

#[test]
fn parse_and_verify_are_linear_in_the_number_of_functions() {
    let (small, large) = (module_text(10_000), module_text(100_000));
    // Warm up (page faults, allocator), then take the best of a few runs of each.
    parse_and_verify(&small, 10_000, 1);
    let t_small = parse_and_verify(&small, 10_000, 5);
    let t_large = parse_and_verify(&large, 100_000, 2);
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-6);
    eprintln!("10,000 functions: {t_small:?}; 100,000: {t_large:?} ({ratio:.1}x)");
    assert!(
        ratio < 20.0,
        "100,000 functions took {t_large:?}, {ratio:.1}x the {t_small:?} of 10,000 (linear: ~10x)"
    );
}

#[test]
fn a_function_defined_twice_is_still_an_error() {
    let src = module_text(3) + &module_text(2);
    let e = parse_module(&src, "twice.kir").unwrap_err();
    assert_eq!(
        e.to_string(),
        "twice.kir:16:1: function '@f0' is defined twice"
    );
}

#[test]
fn a_cluster_result_named_twice_is_still_an_error() {
    let src = "func @f(%x: f32[4]) -> f32[4] {\n  %a, %b, %a = cluster @c(%x) -> (f32[4], f32[4], f32[4]) {\n    %e = exp %x : f32[4]\n    yield %e, %e, %e\n  }\n  return %a\n}\n";
    let e = parse_module(src, "c.kir").unwrap_err();
    assert_eq!(e.to_string(), "c.kir:2:11: '%a' is defined twice");
}
