//! The built-in workloads of `kiln bench`, traced with `kiln_ir::trace` as user code would
//! be, and their deterministic inputs.

use kiln_ir::{trace, Buffer, DType, Func, RandomAlg, RandomDist, Tensor, TensorType};

/// Every workload name, in the order the table shows them.
pub const WORKLOADS: &[&str] = &[
    "bias_relu",
    "bias_relu_f16",
    "bias_relu_bf16",
    "narrow",
    "narrow_bias",
    "chain",
    "gelu",
    "gelu_f16",
    "gelu_bf16",
    "gelu_f64",
    "softmax",
    "layernorm",
    "layernorm_f16",
    "layernorm_bf16",
    "batchnorm",
    "sum",
    "mlp",
    "mlp_f16",
    "mlp_bf16",
    "frozen_dense",
    "rng_normal",
    "dropout",
    "many_small",
    "varying_shapes",
];

/// The problem size: `medium` is 16M elements / 4096×1024 rows, as the issue fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1M elements, 256×1024 rows, MLP batch 64.
    Small,
    /// 16M elements, 4096×1024 rows, MLP batch 256.
    Medium,
    /// 64M elements, 16384×1024 rows, MLP batch 1024.
    Large,
}

impl Size {
    /// Parses `small|medium|large`.
    pub fn parse(s: &str) -> Result<Size, String> {
        match s {
            "small" => Ok(Size::Small),
            "medium" => Ok(Size::Medium),
            "large" => Ok(Size::Large),
            _ => Err(format!("unknown size '{s}' (sizes: small, medium, large)")),
        }
    }

    /// The name used in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Size::Small => "small",
            Size::Medium => "medium",
            Size::Large => "large",
        }
    }

    /// Elements of the 1-D workloads.
    pub fn elements(self) -> usize {
        match self {
            Size::Small => 1 << 20,
            Size::Medium => 1 << 24,
            Size::Large => 1 << 26,
        }
    }

    /// `[rows, cols]` of the row-wise workloads (softmax, layer norm).
    pub fn rows(self) -> [usize; 2] {
        match self {
            Size::Small => [256, 1024],
            Size::Medium => [4096, 1024],
            Size::Large => [16384, 1024],
        }
    }

    /// The MLP batch.
    pub fn batch(self) -> usize {
        match self {
            Size::Small => 64,
            Size::Medium => 256,
            Size::Large => 1024,
        }
    }
}

/// How compiled output must agree with the fallback's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Agreement {
    /// Bit for bit (design.md Invariants 1 and 2: elementwise ops and reductions).
    Exact,
    /// Within a relative tolerance (matrix products call a GEMM; design.md exempts them).
    Close(f32),
}

/// One call of a graph workload: the (clustered) function and its arguments.
#[derive(Debug, Clone)]
pub struct Call {
    /// The function after `run_pipeline`.
    pub func: Func,
    /// Its arguments.
    pub args: Vec<Tensor>,
}

/// What a workload runs.
#[derive(Debug, Clone)]
pub enum Body {
    /// The same graph every call.
    Graph(Call),
    /// A sequence of calls whose shapes change every few calls; one repetition runs them all.
    Sequence(Vec<Call>),
}

/// A built workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Its name (one of [`WORKLOADS`]).
    pub name: &'static str,
    /// What runs.
    pub body: Body,
    /// Bytes one repetition must at least read and write (inputs + outputs).
    pub bytes: usize,
    /// How compiled output must agree with the fallback.
    pub agreement: Agreement,
}

/// Deterministic inputs: xorshift values in [-4, 4) scaled by `scale`.
pub fn input(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (((s >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0) * scale
        })
        .collect();
    Tensor::from_f32(shape.to_vec(), v).expect("length matches shape")
}

fn f32s(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// The type of a stateless random op's seed.
fn seed_type() -> TensorType {
    TensorType::new(DType::I64, vec![2])
}

/// A seed tensor `[s0, s1]`.
fn seed(s0: i64, s1: i64) -> Tensor {
    Tensor::new([2], Buffer::I64(vec![s0, s1].into())).expect("two elements")
}

fn bytes_of(args: &[Tensor], out_elems: usize) -> usize {
    4 * (args
        .iter()
        .map(|t| t.shape().iter().product::<usize>())
        .sum::<usize>()
        + out_elems)
}

/// Traces `name` at `size`; clustering is left to the caller (it takes the user's flags).
pub fn build(name: &str, size: Size) -> Result<Workload, String> {
    let n = size.elements();
    let [r, c] = size.rows();
    let one = |func: Result<Func, kiln_ir::TraceError>, args: Vec<Tensor>, out: usize| {
        let func = func.map_err(|e| format!("tracing {name}: {e}"))?;
        let bytes = bytes_of(&args, out);
        Ok::<_, String>((Body::Graph(Call { func, args }), bytes))
    };
    if let Some(half) = crate::half_workloads::build_half(name, size) {
        let (body, bytes, agreement) = half?;
        return Ok(Workload {
            name: WORKLOADS
                .iter()
                .find(|w| **w == name)
                .ok_or_else(|| unknown(name))?,
            body,
            bytes,
            agreement,
        });
    }
    let (body, bytes, agreement) = match name {
        "bias_relu" => {
            // `relu(x + b)` with a broadcast bias: little arithmetic per byte, so it shows
            // what a fused pointwise kernel gets of the memory bandwidth.
            let cols = 1024;
            let f = trace(
                "bias_relu",
                &[f32s(&[n / cols, cols]), f32s(&[cols])],
                |a| (&a[0] + &a[1]).relu(),
            );
            let args = vec![input(&[n / cols, cols], 12, 1.0), input(&[cols], 13, 1.0)];
            let (b, by) = one(f, args, n)?;
            (b, by, Agreement::Exact)
        }
        "narrow" => {
            // `tanh(x + b) * 0.5 + x` over points of 3 coordinates (a point cloud, RGB): a
            // last dimension narrower than a vector, with a broadcast bias.
            let rows = n / 4;
            let f = trace("narrow", &[f32s(&[rows, 3]), f32s(&[3])], |a| {
                let x = &a[0];
                &((x + &a[1]).tanh() * 0.5) + x
            });
            let args = vec![input(&[rows, 3], 15, 1.0), input(&[3], 16, 1.0)];
            let (b, by) = one(f, args, rows * 3)?;
            (b, by, Agreement::Exact)
        }
        "narrow_bias" => {
            // `relu(x + b)` over rows of 10 (a dense layer of ten units, a classifier's
            // logits): plain arithmetic over rows of two vectors and a remainder of two.
            let rows = n / 16;
            let f = trace("narrow_bias", &[f32s(&[rows, 10]), f32s(&[10])], |a| {
                (&a[0] + &a[1]).relu()
            });
            let args = vec![input(&[rows, 10], 17, 1.0), input(&[10], 18, 1.0)];
            let (b, by) = one(f, args, rows * 10)?;
            (b, by, Agreement::Exact)
        }
        "chain" => {
            let f = trace("chain", &[f32s(&[n])], |a| {
                let x = &a[0];
                &(&(x * 1.5 + 0.25).tanh() * 0.5) + x
            });
            let (b, by) = one(f, vec![input(&[n], 1, 1.0)], n)?;
            (b, by, Agreement::Exact)
        }
        "gelu" => {
            let f = trace("gelu", &[f32s(&[n])], |a| a[0].gelu());
            let (b, by) = one(f, vec![input(&[n], 2, 1.0)], n)?;
            (b, by, Agreement::Exact)
        }
        "gelu_f64" => {
            // Half the elements in f64: the same bytes as the f32 workloads.
            let m = n / 2;
            let f = trace("gelu_f64", &[TensorType::new(DType::F64, vec![m])], |a| {
                a[0].gelu()
            });
            let x = input(&[m], 2, 1.0);
            let x = x.as_f32().expect("f32 input").iter().map(|&v| f64::from(v));
            let x = Tensor::new(vec![m], Buffer::F64(x.collect())).expect("length matches");
            let (b, by) = one(f, vec![x], m)?;
            (b, 2 * by, Agreement::Exact)
        }
        "softmax" => {
            let f = trace("softmax", &[f32s(&[r, c])], |a| a[0].softmax(1));
            let (b, by) = one(f, vec![input(&[r, c], 3, 1.0)], r * c)?;
            (b, by, Agreement::Exact)
        }
        "layernorm" => {
            let f = trace("layernorm", &[f32s(&[r, c])], |a| a[0].layer_norm(1, 1e-5));
            let (b, by) = one(f, vec![input(&[r, c], 4, 1.0)], r * c)?;
            (b, by, Agreement::Exact)
        }
        "batchnorm" => {
            // Batch norm's training-mode statistics: mean and variance of each feature
            // over the batch axis, so both reductions run down the columns of the input.
            let f = trace("batchnorm", &[f32s(&[r, c])], |a| a[0].layer_norm(0, 1e-5));
            let (b, by) = one(f, vec![input(&[r, c], 14, 1.0)], r * c)?;
            (b, by, Agreement::Exact)
        }
        "sum" => {
            // One op is below --tf_xla_min_cluster_size (4), so mark it as a user would
            // (`jit_compile=True`): manual clusters are kept whatever their size.
            let f = trace("sum", &[f32s(&[n])], |a| a[0].jit_scope(|| a[0].sum(&[0])));
            let (b, by) = one(f, vec![input(&[n], 5, 1.0)], 1)?;
            (b, by, Agreement::Exact)
        }
        "mlp" => {
            let b = size.batch();
            let tys = [
                f32s(&[b, 784]),
                f32s(&[784, 512]),
                f32s(&[512]),
                f32s(&[512, 10]),
                f32s(&[10]),
            ];
            let f = trace("mlp", &tys, |a| {
                let h = (&a[0].matmul(&a[1]) + &a[2]).relu();
                (&h.matmul(&a[3]) + &a[4]).softmax(1)
            });
            let args = vec![
                input(&[b, 784], 6, 0.25),
                input(&[784, 512], 7, 0.01),
                input(&[512], 8, 0.01),
                input(&[512, 10], 9, 0.01),
                input(&[10], 10, 0.01),
            ];
            let (body, by) = one(f, args, b * 10)?;
            (body, by, Agreement::Close(1e-4))
        }
        "frozen_dense" => {
            // An inference layer of a frozen graph: the weights are constants baked into the
            // trace (a `tf.function` closing over `tf.constant`s, `jax.jit` over captured
            // arrays), 16 MiB of them at `medium`, and each call brings a batch of 16. What
            // a call costs beyond its arithmetic in proportion to the constants (comparing
            // them with the remembered body, copying them) shows here.
            let (b, k, m) = (16, 1024, size.batch() * 16);
            let w = input(&[k, m], 11, 0.01);
            let bias = input(&[m], 12, 0.01);
            let f = trace("frozen_dense", &[f32s(&[b, k])], move |a| {
                let w = a[0].lift(w.clone());
                (&a[0].matmul(&w) + &a[0].lift(bias.clone())).relu()
            });
            let args = vec![input(&[b, k], 13, 0.25)];
            let (body, by) = one(f, args, b * m)?;
            // The weights are read on every call too.
            (body, by + 4 * (k * m + m), Agreement::Close(1e-4))
        }
        "rng_normal" => {
            // `tf.random.stateless_normal((n,), seed=[42, 7])`: the fallback is the host fill
            // (`kiln_rng::stateless_normal`), the compiled kernel emits the same Philox and
            // Box–Muller code. One op is below the minimum cluster size, so it is marked as a
            // user would (`jit_compile=True`).
            let f = trace("rng_normal", &[seed_type()], |a| {
                a[0].jit_scope(|| {
                    a[0].random(RandomDist::Normal, RandomAlg::Philox, DType::F32, &[n])
                })
            });
            let (b, by) = one(f, vec![seed(42, 7)], n)?;
            (b, by, Agreement::Exact)
        }
        "dropout" => {
            // Dropout with keep probability 0.9: `random_uniform` + `compare` + `mul` +
            // `select`, auto-clustered into one kernel that never writes the random numbers.
            let f = trace("dropout", &[f32s(&[n]), seed_type()], |a| {
                let x = &a[0];
                let u = a[1].random(RandomDist::Uniform, RandomAlg::Philox, DType::F32, &[n]);
                let keep = u.ge(&u.scalar_like(0.1));
                keep.select(&(x * (1.0 / 0.9)), &x.scalar_like(0.0))
            });
            let (b, by) = one(f, vec![input(&[n], 11, 1.0), seed(1234, -5)], n)?;
            (b, by, Agreement::Exact)
        }
        "many_small" => {
            // 32 small 4-op chains, each in its own `jit_scope` (different manual scopes
            // never merge), so 32 clusters over small tensors: per-cluster dispatch cost
            // dominates. Auto-clustering alone would merge them into one.
            let k = 32;
            let tys: Vec<TensorType> = (0..k).map(|_| f32s(&[64, 64])).collect();
            let f = trace("many_small", &tys, |a| {
                a.iter()
                    .map(|x| x.jit_scope(|| (&(&(x * 1.5) + 0.25).tanh() * 0.5) - 1.0))
                    .collect::<Vec<_>>()
            });
            let args = (0..k)
                .map(|i| input(&[64, 64], 20 + i as u64, 1.0))
                .collect();
            let (b, by) = one(f, args, k * 64 * 64)?;
            (b, by, Agreement::Exact)
        }
        "varying_shapes" => {
            // Three row counts, each called 4 times in a row (so the lazy rule — two
            // fallback runs, compile on the third — is exercised on every shape change).
            let mut calls = Vec::new();
            let mut bytes = 0;
            for (i, rows) in [r / 4, r / 2, r].into_iter().enumerate() {
                let func = trace("varying", &[f32s(&[rows, c])], |a| {
                    let x = &a[0];
                    &(&(x * 1.5) + 0.25).tanh() * x
                })
                .map_err(|e| format!("tracing {name}: {e}"))?;
                let args = vec![input(&[rows, c], 30 + i as u64, 1.0)];
                for _ in 0..4 {
                    bytes += bytes_of(&args, rows * c);
                    calls.push(Call {
                        func: func.clone(),
                        args: args.clone(),
                    });
                }
            }
            (Body::Sequence(calls), bytes, Agreement::Exact)
        }
        _ => return Err(unknown(name)),
    };
    Ok(Workload {
        name: WORKLOADS.iter().find(|w| **w == name).expect("known"),
        body,
        bytes,
        agreement,
    })
}

fn unknown(name: &str) -> String {
    format!(
        "unknown workload '{name}' (workloads: {})",
        WORKLOADS.join(", ")
    )
}

/// Parses `--workloads a,b`: every name must be known; `None` means all.
pub fn parse_workloads(list: Option<&str>) -> Result<Vec<&'static str>, String> {
    let Some(list) = list else {
        return Ok(WORKLOADS.to_vec());
    };
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let w = WORKLOADS
            .iter()
            .find(|w| **w == name)
            .ok_or_else(|| unknown(name))?;
        if !out.contains(w) {
            out.push(*w);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no workload given (workloads: {})",
            WORKLOADS.join(", ")
        ));
    }
    Ok(out)
}
