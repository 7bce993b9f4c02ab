//! `kiln random` against the library: the CLI's eager generator draws are the draws a traced
//! function makes, call after call.

use kiln::config::Flags;
use kiln::{Buffer, DType, Function, Generator, Session, Tensor, Tracer};
use kiln_rng::Generator as Eager;

fn bits(t: &Tensor) -> Vec<u64> {
    match t.data() {
        Buffer::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Buffer::U32(v) => v.iter().map(|&x| u64::from(x)).collect(),
        other => panic!("unexpected buffer {other:?}"),
    }
}

fn session() -> Session {
    Session::new(&Flags::default()).unwrap()
}

/// A dummy argument: traced draws need a value of the trace to name it.
fn unit() -> Tensor {
    Tensor::new(Vec::<usize>::new(), Buffer::I32(vec![0].into())).unwrap()
}

/// A draw kind, recorded in a trace.
#[derive(Clone, Copy, Debug)]
enum Draw {
    Uniform(DType),
    Normal(DType),
    TruncatedNormal(DType),
    Bits,
}

impl Draw {
    fn traced(self, g: &Generator, anchor: &Tracer, shape: &[usize]) -> Tracer {
        let t = g.in_trace(anchor);
        match self {
            Draw::Uniform(d) => t.uniform(shape, d),
            Draw::Normal(d) => t.normal(shape, d),
            Draw::TruncatedNormal(d) => t.truncated_normal(shape, d),
            Draw::Bits => t.bits(shape),
        }
    }
}

/// `kiln random --generator-seed S --calls K` prints the K eager draws; a traced function
/// called K times gives the same values.
#[test]
fn cli_generator_calls_equal_function_calls() {
    for (dist, draw, seed) in [
        ("normal", Draw::Normal(DType::F32), 1234),
        ("uniform", Draw::Uniform(DType::F32), 1234),
        ("truncated-normal", Draw::TruncatedNormal(DType::F32), 1234),
        ("bits", Draw::Bits, 1234),
        // Negative seeds set every state word (TF's `create_rng_state`).
        ("normal", Draw::Normal(DType::F32), -5),
    ] {
        let seed_arg = seed.to_string();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args([
                "random",
                "--generator-seed",
                &seed_arg,
                "--calls",
                "3",
                "--dist",
                dist,
            ])
            .args(["--shape", "2,3"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");

        let g = Generator::from_seed(seed);
        let gf = g.clone();
        let f = Function::with_session("cli", session(), move |a, _| {
            draw.traced(&gf, &a[0], &[2, 3])
        })
        .unwrap();
        for line in lines {
            let items = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(", ");
            let printed: Vec<u64> = match draw {
                Draw::Bits => items.map(|s| s.parse::<u64>().unwrap()).collect(),
                _ => items
                    .map(|s| u64::from(s.parse::<f32>().unwrap().to_bits()))
                    .collect(),
            };
            assert_eq!(
                bits(&f.call(&[unit()]).unwrap()[0]),
                printed,
                "{dist} {seed}"
            );
        }
        let mut eager = Eager::from_seed(seed);
        eager.read_and_skip(3 * 6);
        assert_eq!(g.state(), eager.state());
    }
}
