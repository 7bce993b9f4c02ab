//! The example programs in examples/ match numpy's results (examples/gen_reference.py) within
//! 1e-5 relative (plus 1e-6 absolute for values near zero), through the library and through
//! the `kiln run` code path's input loading.

use kiln::npy::read_npy;
use kiln::Tensor;
use std::path::{Path, PathBuf};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn check_example(name: &str) {
    let dir = examples_dir();
    let src = std::fs::read_to_string(dir.join(format!("{name}.kir"))).unwrap();
    let module = kiln::parse_module(&src, name).unwrap();
    let f = module.entry().unwrap();
    assert!(kiln::verify_func(f).is_empty());
    let args: Vec<Tensor> = f
        .params
        .iter()
        .map(|&p| {
            read_npy(
                &dir.join("data")
                    .join(name)
                    .join(format!("{}.npy", f.value(p).name)),
            )
            .unwrap()
        })
        .collect();
    let expected = read_npy(&dir.join("data").join(name).join("expected.npy")).unwrap();
    for threads in [1, 2] {
        let interp = kiln_interp::Interpreter::new(threads).unwrap();
        let out = interp.run(f, &args).unwrap();
        assert_eq!(out[0].ty(), expected.ty());
        let (got, want) = (out[0].as_f32().unwrap(), expected.as_f32().unwrap());
        let mut worst = 0.0f64;
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let err = (g as f64 - w as f64).abs();
            let tol = 1e-5 * (w as f64).abs() + 1e-6;
            assert!(err <= tol, "{name}[{i}]: kiln {g} vs numpy {w}");
            worst = worst.max(err / (w as f64).abs().max(1e-6));
        }
        eprintln!("{name}: worst relative error {worst:.2e} ({threads} threads)");
    }
}

#[test]
fn softmax_matches_numpy() {
    check_example("softmax");
}

#[test]
fn gelu_matches_numpy() {
    check_example("gelu");
}

#[test]
fn layernorm_matches_numpy() {
    check_example("layernorm");
}

#[test]
fn mlp_forward_matches_numpy() {
    check_example("mlp_forward");
}
