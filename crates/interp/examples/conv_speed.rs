//! Interpreter `convolution`: the direct loop ([`kiln_interp::direct_convolution`], the
//! reference and the integer path) against the float path `Interpreter::eval` takes
//! (im2col + GEMM, or the depthwise loop), on MobileNet-like NHWC shapes and a 3×3 conv.
//!
//! `cargo run --release -p kiln-interp --example conv_speed [threads]` prints the median
//! time of each and the speed-up.

use kiln_interp::{direct_convolution, Interpreter};
use kiln_ir::{typecheck::infer, ConvDims, Convolution, DType, Op, TensorType, WindowDim};
use std::time::{Duration, Instant};

fn median(mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    let mut times: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() -> Result<(), String> {
    let threads = std::env::args()
        .nth(1)
        .map(|s| s.parse::<usize>().map_err(|e| format!("threads: {e}")))
        .transpose()?
        .unwrap_or(0);
    let interp = Interpreter::new(threads).map_err(|e| e.to_string())?;
    let nhwc = ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).ok_or("roles")?;
    let same = |k: usize, stride| WindowDim {
        stride,
        low: (k / 2) as i64,
        high: (k / 2) as i64,
        ..WindowDim::new(k)
    };
    // (name, input NHWC, kernel HWIO, window, feature groups)
    let cases = [
        (
            "depthwise 3x3, 56x56x144",
            [1, 56, 56, 144],
            [3, 3, 1, 144],
            same(3, 1),
            144,
        ),
        (
            "pointwise 1x1, 56x56 144->24",
            [1, 56, 56, 144],
            [1, 1, 144, 24],
            same(1, 1),
            1,
        ),
        (
            "3x3 conv, 28x28 64->64",
            [1, 28, 28, 64],
            [3, 3, 64, 64],
            same(3, 1),
            1,
        ),
        (
            "3x3 conv, batch 8 28x28 1->32",
            [8, 28, 28, 1],
            [3, 3, 1, 32],
            same(3, 1),
            1,
        ),
        (
            "corpus depthwise 16x16x16",
            [1, 16, 16, 16],
            [3, 3, 1, 16],
            same(3, 1),
            16,
        ),
        (
            "corpus pointwise 16x16 16->8",
            [1, 16, 16, 16],
            [1, 1, 16, 8],
            same(1, 1),
            1,
        ),
        (
            "corpus 3x3 s2, 32x32 3->16",
            [1, 32, 32, 3],
            [3, 3, 3, 16],
            same(3, 2),
            1,
        ),
    ];
    println!("threads: {}", interp.threads());
    println!(
        "{:<32} {:>12} {:>12} {:>8}",
        "shape", "direct", "fast", "speed-up"
    );
    let mut rng = kiln_testkit::Rng(1);
    for (name, xs, ws, wd, groups) in cases {
        let c = Convolution {
            dims: nhwc.clone(),
            window: vec![wd.clone(), wd],
            feature_groups: groups,
            batch_groups: 1,
        };
        let (xt, wt) = (
            TensorType::new(DType::F32, xs),
            TensorType::new(DType::F32, ws),
        );
        let op = Op::Convolution(Box::new(c.clone()));
        let out = infer(&op, &[&xt, &wt], None)?;
        let x = kiln_testkit::random_tensor(&xt, &mut rng);
        let w = kiln_testkit::random_tensor(&wt, &mut rng);
        let pool = kiln_interp::shared_pool(threads).map_err(|e| e.to_string())?;
        let direct = median(|| {
            pool.install(|| direct_convolution(&x, &w, &c, &out.shape))
                .expect("direct");
        });
        let fast = median(|| {
            interp.eval(&op, &[&x, &w], &out).expect("fast");
        });
        println!(
            "{name:<32} {:>10.1}us {:>10.1}us {:>7.1}x",
            direct.as_secs_f64() * 1e6,
            fast.as_secs_f64() * 1e6,
            direct.as_secs_f64() / fast.as_secs_f64()
        );
    }
    Ok(())
}
