//! `kiln random`: values from TensorFlow's stateless ops and `tf.random.Generator` (Philox)
//! or JAX's key API (ThreeFry), printed so other systems can compare them exactly.

use kiln::{npy, Buffer, KilnError, Tensor};
use kiln_rng::{jax, Generator};
use std::path::PathBuf;
use std::process::ExitCode;

/// Counter-based generator.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Alg {
    /// Philox4x32-10, TensorFlow's stream (`tf.random.stateless_*`, `tf.random.Generator`).
    Philox,
    /// ThreeFry2x32-20, JAX's stream (`jax.random`, partitionable mode).
    Threefry,
}

/// Distribution.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Dist {
    /// Uniform in [0, 1).
    Uniform,
    /// Standard normal.
    Normal,
    /// Standard normal truncated to (-2, 2).
    TruncatedNormal,
    /// Raw 32-bit words.
    Bits,
}

/// Output format.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    /// One flat JSON array per call, row-major; floats round-trip exactly.
    Json,
    /// A .npy file (needs --output).
    Npy,
}

/// Arguments of `kiln random`.
#[derive(clap::Args)]
pub struct RandomArgs {
    /// Generator.
    #[arg(long, value_enum, default_value = "philox")]
    alg: Alg,
    /// Distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    dist: Dist,
    /// Shape, comma-separated (`2,3`); empty for a scalar.
    #[arg(long, default_value = "")]
    shape: String,
    /// Stateless seed `A,B` (TF's `seed=[A, B]`; for threefry, the JAX key words).
    #[arg(long, conflicts_with = "generator_seed")]
    seed: Option<String>,
    /// `tf.random.Generator.from_seed(S)` (philox only; may be negative).
    #[arg(long, allow_negative_numbers = true)]
    generator_seed: Option<i128>,
    /// Sampling calls on the generator (one array per call).
    #[arg(long, default_value_t = 1, requires = "generator_seed")]
    calls: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Write to this file instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
}

fn invalid(msg: impl Into<String>) -> KilnError {
    KilnError::Invalid(msg.into())
}

fn parse_list<T: std::str::FromStr>(flag: &str, text: &str) -> Result<Vec<T>, KilnError> {
    // Empty is the empty list (a scalar's shape); otherwise every entry must be a number,
    // so `2,,3` is a typo to report rather than the shape [2, 3].
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|s| match s.trim() {
            "" => Err(invalid(format!("--{flag} '{text}': empty entry"))),
            s => s
                .parse()
                .map_err(|_| invalid(format!("--{flag} '{text}': '{s}' is not a valid number"))),
        })
        .collect()
}

/// Samples and prints (or writes) the values.
pub fn random(a: RandomArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let shape: Vec<usize> = parse_list("shape", &a.shape)?;
    let rng = |e: kiln_rng::RngError| invalid(e.to_string());
    let calls: Vec<Buffer> = match (a.alg, &a.seed, a.generator_seed) {
        (_, Some(seed), _) => {
            let s: Vec<i64> = parse_list("seed", seed)?;
            let [s0, s1] = s[..] else {
                return Err(invalid(format!("--seed '{seed}': expected two integers A,B")));
            };
            vec![match a.alg {
                Alg::Philox => match a.dist {
                    Dist::Uniform => Buffer::F32(kiln_rng::stateless_uniform(&shape, [s0, s1]).map_err(rng)?.into()),
                    Dist::Normal => Buffer::F32(kiln_rng::stateless_normal(&shape, [s0, s1]).map_err(rng)?.into()),
                    Dist::TruncatedNormal => {
                        Buffer::F32(kiln_rng::stateless_truncated_normal(&shape, [s0, s1]).map_err(rng)?.into())
                    }
                    Dist::Bits => Buffer::U32(kiln_rng::stateless_bits(&shape, [s0, s1]).map_err(rng)?.into()),
                },
                Alg::Threefry => {
                    let key = jax::key_from_seed_pair([s0, s1]);
                    match a.dist {
                        Dist::Uniform => Buffer::F32(jax::uniform(key, &shape).map_err(rng)?.into()),
                        Dist::Normal => Buffer::F32(jax::normal(key, &shape).map_err(rng)?.into()),
                        Dist::TruncatedNormal => Buffer::F32(jax::truncated_normal(key, &shape).map_err(rng)?.into()),
                        Dist::Bits => Buffer::U32(jax::random_bits(key, &shape).map_err(rng)?.into()),
                    }
                }
            }]
        }
        (Alg::Philox, None, Some(s)) => {
            let mut g = Generator::from_seed(s);
            (0..a.calls)
                .map(|_| {
                    Ok(match a.dist {
                        Dist::Uniform => Buffer::F32(g.uniform(&shape).map_err(rng)?.into()),
                        Dist::Normal => Buffer::F32(g.normal(&shape).map_err(rng)?.into()),
                        Dist::TruncatedNormal => Buffer::F32(g.truncated_normal(&shape).map_err(rng)?.into()),
                        Dist::Bits => Buffer::U32(g.bits(&shape).map_err(rng)?.into()),
                    })
                })
                .collect::<Result<_, KilnError>>()?
        }
        (Alg::Threefry, None, Some(_)) => {
            return Err(invalid("--generator-seed uses tf.random.Generator, which is Philox; use --alg philox, or --seed A,B for a JAX key"))
        }
        (_, None, None) => {
            // Unseeded random numbers are an error under op determinism, as in TensorFlow.
            kiln_rng::require_seeded("kiln random", false, flags.deterministic_ops).map_err(rng)?;
            return Err(invalid("give --seed A,B (stateless) or --generator-seed S (tf.random.Generator)"));
        }
    };
    match a.format {
        Format::Json => {
            let text: Vec<String> = calls.iter().map(json_array).collect();
            let text = text.join("\n") + "\n";
            match &a.output {
                Some(p) => {
                    std::fs::write(p, text).map_err(|e| invalid(format!("{}: {e}", p.display())))?
                }
                None => print!("{text}"),
            }
        }
        Format::Npy => {
            let path = a
                .output
                .ok_or_else(|| invalid("--format npy needs --output FILE"))?;
            if calls.len() != 1 {
                return Err(invalid(
                    "--format npy writes one call; use --calls 1 or --format json",
                ));
            }
            let data = calls.into_iter().next().expect("one call");
            let t = Tensor::new(shape, data).map_err(|e| invalid(e.to_string()))?;
            npy::write_npy(&path, &t)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `[v0, v1, …]`: f32 in the shortest form that parses back to the same bits; u32 decimal.
fn json_array(b: &Buffer) -> String {
    let items: Vec<String> = match b {
        Buffer::F32(v) => v.iter().map(|x| format!("{x:?}")).collect(),
        Buffer::U32(v) => v.iter().map(|x| x.to_string()).collect(),
        other => (0..other.len()).map(|i| other.get(i).to_string()).collect(),
    };
    format!("[{}]", items.join(", "))
}
