//! The 16-bit float variants of the built-in workloads (`gelu_f16`, `layernorm_bf16`,
//! `mlp_f16`, …): the same traced computation with `f16`/`bf16` inputs and results, so the
//! table can show each beside its `f32` row with the ratio f32 time / 16-bit time
//! (`crate::report`). Every elementwise op rounds its result to the 16-bit dtype and
//! reductions accumulate in `f32` (the interpreter's and the backends' rule); the MLP's
//! `dot_general`s run on the interpreter (16-bit GEMM operands are not compiled), their
//! epilogues compiled.

use crate::workloads::{input, Agreement, Body, Call, Size};
use kiln_ir::{trace, Buffer, DType, Func, Tensor, TensorType};

/// The `f32` workload `name` is a 16-bit variant of, and its dtype.
pub fn half_variant(name: &str) -> Option<(&str, DType)> {
    if let Some(base) = name.strip_suffix("_bf16") {
        Some((base, DType::Bf16))
    } else {
        name.strip_suffix("_f16").map(|base| (base, DType::F16))
    }
}

/// [`input`] rounded to `dt`.
fn half_input(dt: DType, shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let x = input(shape, seed, scale);
    let v = x.as_f32().expect("f32 input");
    let data = match dt {
        DType::F16 => Buffer::F16(v.iter().map(|&x| kiln_ir::f16::from_f32(x)).collect()),
        _ => Buffer::Bf16(v.iter().map(|&x| kiln_ir::bf16::from_f32(x)).collect()),
    };
    Tensor::new(shape.to_vec(), data).expect("length matches shape")
}

/// Builds the 16-bit variant `name` (of `bias_relu`, `gelu`, `layernorm` or `mlp`) at `size`: its body,
/// bytes per repetition (two per element) and agreement; `None` for another name.
pub fn build_half(name: &str, size: Size) -> Option<Result<(Body, usize, Agreement), String>> {
    let (base, dt) = half_variant(name)?;
    let ty = |shape: &[usize]| TensorType::new(dt, shape.to_vec());
    let n = size.elements();
    let [r, c] = size.rows();
    let (func, args, out, agreement): (Result<Func, _>, Vec<Tensor>, usize, Agreement) = match base
    {
        "bias_relu" => {
            let shapes: [&[usize]; 2] = [&[n / 1024, 1024], &[1024]];
            (
                trace(name, &[ty(shapes[0]), ty(shapes[1])], |a| {
                    (&a[0] + &a[1]).relu()
                }),
                vec![
                    half_input(dt, shapes[0], 12, 1.0),
                    half_input(dt, shapes[1], 13, 1.0),
                ],
                n,
                Agreement::Exact,
            )
        }
        "gelu" => (
            trace(name, &[ty(&[n])], |a| a[0].gelu()),
            vec![half_input(dt, &[n], 2, 1.0)],
            n,
            Agreement::Exact,
        ),
        "layernorm" => (
            trace(name, &[ty(&[r, c])], |a| a[0].layer_norm(1, 1e-5)),
            vec![half_input(dt, &[r, c], 4, 1.0)],
            r * c,
            Agreement::Exact,
        ),
        "mlp" => {
            let b = size.batch();
            let shapes: [&[usize]; 5] = [&[b, 784], &[784, 512], &[512], &[512, 10], &[10]];
            let tys: Vec<TensorType> = shapes.iter().map(|s| ty(s)).collect();
            let f = trace(name, &tys, |a| {
                let h = (&a[0].matmul(&a[1]) + &a[2]).relu();
                (&h.matmul(&a[3]) + &a[4]).softmax(1)
            });
            let scales = [0.25, 0.01, 0.01, 0.01, 0.01];
            let args = shapes
                .iter()
                .zip(scales)
                .enumerate()
                .map(|(i, (s, k))| half_input(dt, s, 6 + i as u64, k))
                .collect();
            // The products run on the interpreter in both modes; a 1-ulp difference of
            // an f32 partial can still move a 16-bit result by one ulp.
            (f, args, b * 10, Agreement::Close(1e-2))
        }
        _ => return None,
    };
    Some(
        func.map_err(|e| format!("tracing {name}: {e}"))
            .map(|func| {
                let elems: usize = args.iter().map(|t| t.num_elements()).sum::<usize>() + out;
                (Body::Graph(Call { func, args }), 2 * elems, agreement)
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_name_their_f32_workload() {
        assert_eq!(half_variant("gelu_bf16"), Some(("gelu", DType::Bf16)));
        assert_eq!(half_variant("mlp_f16"), Some(("mlp", DType::F16)));
        assert_eq!(half_variant("gelu_f64"), None);
        for name in ["bias_relu_bf16", "gelu_f16", "layernorm_bf16", "mlp_f16"] {
            let (body, bytes, _) = build_half(name, Size::Small).unwrap().unwrap();
            let Body::Graph(call) = body else {
                panic!("{name}")
            };
            assert!(call.args.iter().all(|t| t.dtype().is_half()), "{name}");
            assert!(bytes > 0);
        }
        assert!(build_half("softmax_f16", Size::Small).is_none());
    }
}
