//! `config::enable_op_determinism()` (process-wide, hence its own test binary) and
//! generators: unseeded ones are refused with TensorFlow's messages, naming the op; seeded
//! ones are unaffected.

use kiln::{config, Buffer, DType, Function, Generator, KilnError, Tensor};
use kiln_rng::RngError;

fn unit() -> Tensor {
    Tensor::new(Vec::<usize>::new(), Buffer::I32(vec![0].into())).unwrap()
}

#[test]
fn enable_op_determinism_refuses_unseeded_generators() {
    // An unseeded generator made before determinism is switched on.
    let early = Generator::from_non_deterministic_state().unwrap();
    config::enable_op_determinism();

    // Creating one now is TF's error.
    let e = Generator::from_non_deterministic_state().unwrap_err();
    assert!(
        matches!(&e, KilnError::Rng(r) if **r == RngError::NonDeterministicState),
        "{e}"
    );

    // Eager draws from the early one name the op.
    let before = early.state();
    let e = early.uniform(&[3], DType::F32).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "Generator.uniform: Random ops require a seed to be set when determinism is enabled."
        ),
        "{e}"
    );
    assert_eq!(early.state(), before);

    // So do traced draws, in a Function built from the flags in effect: an error, no panic.
    let g = early.clone();
    let f = Function::new("f", move |a| g.in_trace(&a[0]).bits(&[2])).unwrap();
    let e = f.call(&[unit()]).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "random_bits (Generator): Random ops require a seed to be set when determinism is enabled."
        ),
        "{e}"
    );
    assert_eq!(early.state(), before);

    // Seeded generators work as before: TF's Generator.from_seed(1).normal([2,3]).
    let g = Generator::from_seed(1);
    let gf = g.clone();
    let f = Function::new("f", move |a| gf.in_trace(&a[0]).normal(&[2, 3], DType::F32)).unwrap();
    let out = f.call(&[unit()]).unwrap();
    // Bit-exact against the eager generator; within 1 ulp of the printed TF values (one of
    // them differs in the last bit: TF's glibc `logf`/`sincosf`, see kiln-rng's tf_oracle).
    let eager = kiln_rng::Generator::from_seed(1).normal(&[2, 3]).unwrap();
    let Buffer::F32(got) = out[0].data() else {
        panic!("f32 output expected");
    };
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        eager.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    let want = [
        0.438_422_74,
        -0.534_398_44,
        -0.077_102_62,
        1.565_804_6,
        -0.101_234_5,
        -0.274_497_6f32,
    ];
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.to_bits() as i64 - w.to_bits() as i64).abs() <= 1,
            "{g} vs TF {w}"
        );
    }
    assert_eq!(g.state(), [1537, 0, 0]);
}
