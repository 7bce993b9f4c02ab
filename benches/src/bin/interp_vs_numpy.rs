//! Times the reference interpreter op by op on 16M-element f32 inputs (4096×4096), with as
//! many threads as cores and with one, and compares with numpy on the same ops and sizes
//! (`benches/numpy_ops.py`, run in the same process tree). The target is an interpreter
//! within 1.5× of numpy per op.
//!
//! Usage: `cargo run -p kiln-benches --release --bin interp_vs_numpy [REPS]` (default 7;
//! each number is the median of REPS runs after one warm-up).

use kiln_interp::{zeroed_buffer, Interpreter};
use kiln_ir::{BinaryOp, Buffer, DType, DotDims, Op, ReduceKind, Tensor, TensorType, UnaryOp};
use std::process::Command;
use std::time::Instant;

const N: usize = 4096;

/// One benchmarked op: its row name (shared with numpy_ops.py), the op, operand indices into
/// the input table, and the result type.
struct Case {
    name: &'static str,
    op: Op,
    args: Vec<usize>,
    result: TensorType,
}

fn uniform(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// Inputs live in buffers allocated as the interpreter allocates its own results (and as
/// numpy allocates its arrays: large ones on huge pages), so both sides read alike.
fn tensor(shape: &[usize], data: Vec<f32>) -> Tensor {
    let mut buf = zeroed_buffer(DType::F32, data.len());
    if let Buffer::F32(v) = &mut buf {
        v.copy_from_slice(&data);
    }
    Tensor::new(shape.to_vec(), buf).expect("shape matches data")
}

fn cases() -> (Vec<Tensor>, Vec<Case>) {
    let a = tensor(&[N, N], uniform(N * N, -5.0, 5.0, 1));
    let b = tensor(&[N, N], uniform(N * N, -5.0, 5.0, 2));
    let v = tensor(&[N], uniform(N, -5.0, 5.0, 3));
    let lhs = tensor(&[256, 784], uniform(256 * 784, -1.0, 1.0, 4));
    let rhs = tensor(&[784, 512], uniform(784 * 512, -1.0, 1.0, 5));
    let pos = tensor(&[N, N], uniform(N * N, 0.0, 5.0, 6));
    let inputs = vec![a, b, v, lhs, rhs, pos];
    let (a, b, v, lhs, rhs, pos) = (0, 1, 2, 3, 4, 5);
    let sq = TensorType::new(DType::F32, [N, N]);
    let row = TensorType::new(DType::F32, [N]);
    let case = |name, op, args: &[usize], result: &TensorType| Case {
        name,
        op,
        args: args.to_vec(),
        result: result.clone(),
    };
    let cases = vec![
        case("add", Op::Binary(BinaryOp::Add), &[a, b], &sq),
        case("mul", Op::Binary(BinaryOp::Mul), &[a, b], &sq),
        case("max", Op::Binary(BinaryOp::Max), &[a, b], &sq),
        case("exp", Op::Unary(UnaryOp::Exp), &[a], &sq),
        case("tanh", Op::Unary(UnaryOp::Tanh), &[a], &sq),
        case("logistic", Op::Unary(UnaryOp::Logistic), &[a], &sq),
        case("sin", Op::Unary(UnaryOp::Sin), &[a], &sq),
        case("cos", Op::Unary(UnaryOp::Cos), &[a], &sq),
        case("sqrt", Op::Unary(UnaryOp::Sqrt), &[pos], &sq),
        case(
            "reduce_sum (all)",
            Op::Reduce {
                kind: ReduceKind::Sum,
                axes: vec![0, 1],
            },
            &[a],
            &TensorType::scalar(DType::F32),
        ),
        case(
            "reduce_max (rows)",
            Op::Reduce {
                kind: ReduceKind::Max,
                axes: vec![1],
            },
            &[a],
            &row,
        ),
        case(
            "reduce_sum (cols)",
            Op::Reduce {
                kind: ReduceKind::Sum,
                axes: vec![0],
            },
            &[a],
            &row,
        ),
        case("transpose", Op::Transpose { perm: vec![1, 0] }, &[a], &sq),
        case("broadcast", Op::BroadcastInDim { dims: vec![1] }, &[v], &sq),
        case(
            "matmul 256x784x512",
            Op::DotGeneral(DotDims {
                lhs_contract: vec![1],
                rhs_contract: vec![0],
                ..DotDims::default()
            }),
            &[lhs, rhs],
            &TensorType::new(DType::F32, [256, 512]),
        ),
    ];
    (inputs, cases)
}

/// Median wall time in milliseconds of `reps` runs after one warm-up.
fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn time_kiln(interp: &Interpreter, inputs: &[Tensor], case: &Case, reps: usize) -> f64 {
    let args: Vec<&Tensor> = case.args.iter().map(|&i| &inputs[i]).collect();
    median_ms(reps, || {
        let out = interp
            .eval(&case.op, &args, &case.result)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        std::hint::black_box(out);
    })
}

/// Runs numpy_ops.py; `Err` says why there are no numpy numbers.
fn numpy_times(reps: usize) -> Result<Vec<(String, f64)>, String> {
    // From the workspace root (how cargo runs it), else where this crate was built.
    let local = std::path::Path::new("benches/numpy_ops.py");
    let script = if local.exists() {
        local
    } else {
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/numpy_ops.py"))
    };
    let out = Command::new("python3")
        .arg(script)
        .arg(reps.to_string())
        .output()
        .map_err(|e| format!("python3 could not be started ({e})"))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(msg
            .lines()
            .last()
            .unwrap_or("numpy_ops.py failed")
            .to_string());
    }
    parse_flat_json(&String::from_utf8_lossy(&out.stdout))
        .ok_or_else(|| "numpy_ops.py printed something unexpected".to_string())
}

/// Parses `{"name": number, ...}` (names without quotes or commas inside, as ours are).
fn parse_flat_json(s: &str) -> Option<Vec<(String, f64)>> {
    let body = s.trim().strip_prefix('{')?.strip_suffix('}')?;
    body.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once(':')?;
            let k = k.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn main() {
    // As the `kiln` binary does: freed large buffers are reused, not unmapped (see
    // `kiln_interp::retain_freed_memory`), so no mode pays for fresh pages per call.
    kiln_interp::retain_freed_memory();
    let reps = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7usize);
    let all = Interpreter::new(0).expect("thread pool");
    let one = Interpreter::new(1).expect("thread pool");
    let (inputs, cases) = cases();
    let kiln: Vec<(f64, f64)> = cases
        .iter()
        .map(|c| {
            (
                time_kiln(&all, &inputs, c, reps),
                time_kiln(&one, &inputs, c, reps),
            )
        })
        .collect();
    drop(inputs);
    let numpy = numpy_times(reps);
    if let Err(why) = &numpy {
        println!("numpy is missing ({why}); showing Kiln's numbers only\n");
    }
    let cores = all.threads();
    println!(
        "{:<20} {:>14} {:>14} {:>10} {:>8}",
        "op",
        format!("kiln ms ({cores}t)"),
        "kiln ms (1t)",
        "numpy ms",
        "ratio"
    );
    for (c, (k_all, k_one)) in cases.iter().zip(&kiln) {
        let np = numpy
            .as_ref()
            .ok()
            .and_then(|t| t.iter().find(|(n, _)| n == c.name).map(|(_, ms)| *ms));
        let (np_s, ratio) = match np {
            Some(ms) => (format!("{ms:.2}"), format!("{:.2}", k_all / ms)),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "{:<20} {:>14.2} {:>14.2} {:>10} {:>8}",
            c.name, k_all, k_one, np_s, ratio
        );
    }
    println!("\nratio = kiln ({cores} threads) / numpy; target ≤ 1.5");
}
