use super::*;
use kiln_interp::Interpreter;
use kiln_ir::{ConvDims, DType, WindowDim};
use kiln_testkit::Rng;

/// A random convolution: layouts, padding (negative too), strides, both dilations,
/// reversal, every spatial size 1–9 reachable; `None` when the window does not fit.
fn random_conv(r: &mut Rng, dtype: DType) -> Option<Func> {
    let k = 1 + r.below(2);
    let perm = |r: &mut Rng, n: usize| {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, r.below(i + 1));
        }
        p
    };
    let (lp, rp, op) = (perm(r, k + 2), perm(r, k + 2), perm(r, k + 2));
    let dims = ConvDims {
        lhs_batch: lp[0],
        lhs_feature: lp[1],
        lhs_spatial: lp[2..].to_vec(),
        rhs_input: rp[0],
        rhs_output: rp[1],
        rhs_spatial: rp[2..].to_vec(),
        out_batch: op[0],
        out_feature: op[1],
        out_spatial: op[2..].to_vec(),
    };
    let window: Vec<WindowDim> = (0..k)
        .map(|_| WindowDim {
            stride: 1 + r.below(3),
            low: r.below(4) as i64 - 1,
            high: r.below(4) as i64 - 1,
            lhs_dilate: 1 + r.below(2),
            rhs_dilate: 1 + r.below(2),
            reversal: r.below(3) == 0,
            ..WindowDim::new(1 + r.below(3))
        })
        .collect();
    let groups = [1, 1, 2, 3][r.below(4)];
    let (n, cin, cout) = (
        1 + r.below(3),
        groups * (1 + r.below(3)),
        groups * (1 + r.below(3)),
    );
    let mut xs = vec![0; k + 2];
    xs[dims.lhs_batch] = n;
    xs[dims.lhs_feature] = cin;
    let mut ws = vec![0; k + 2];
    ws[dims.rhs_input] = cin / groups;
    ws[dims.rhs_output] = cout;
    for s in 0..k {
        xs[dims.lhs_spatial[s]] = 1 + r.below(9);
        ws[dims.rhs_spatial[s]] = window[s].size;
    }
    let c = Convolution {
        dims,
        window,
        feature_groups: groups,
        batch_groups: 1,
    };
    let (xt, wt) = (TensorType::new(dtype, xs), TensorType::new(dtype, ws));
    let op = Op::Convolution(Box::new(c));
    let out = infer(&op, &[&xt, &wt], None).ok()?;
    if out.num_elements() == 0 {
        return None;
    }
    let mut f = Func::new("f");
    let x = f.add_param(Some("x"), xt);
    let w = f.add_param(Some("w"), wt);
    let y = f.push(op, vec![x, w], out, None);
    f.results = vec![y];
    Some(f)
}

/// Small integer inputs: the interpreter runs the convolution and its rewrite, which agree to
/// rounding (the sums' order is the GEMM's in both, so usually bit for bit).
#[test]
fn random_convolutions_and_their_gemm_forms_agree() {
    let interp = Interpreter::new(1).expect("pool");
    let mut r = Rng(0xc0_4e);
    let (mut checked, mut same_bits, mut grouped) = (0, 0, 0);
    for case in 0..300 {
        let dtype = [DType::F32, DType::F64, DType::F16][case % 3];
        let Some(f) = random_conv(&mut r, dtype) else {
            continue;
        };
        let g = convolutions_as_gemm(&f).expect("a convolution to rewrite");
        assert!(!g.insts.iter().any(|i| matches!(i.op, Op::Convolution(_))));
        assert!(
            kiln_ir::verify_func(&g).is_empty(),
            "{}",
            kiln_ir::print_func(&g)
        );
        let inputs: Vec<Tensor> = f
            .param_types()
            .iter()
            .map(|t| {
                let ints = (0..t.num_elements())
                    .map(|_| r.below(9) as i32 - 4)
                    .collect();
                let v = Tensor::new(t.shape.clone(), kiln_ir::Buffer::I32(ints)).expect("sizes");
                interp
                    .eval(&Op::Convert, &[&v], t)
                    .expect("small integers convert")
            })
            .collect();
        let want = interp.run(&f, &inputs).expect("runs");
        let got = interp.run(&g, &inputs).expect("runs");
        assert_eq!(got[0].ty(), want[0].ty());
        let (a, b) = (got[0].data(), want[0].data());
        let wide = |t: &Tensor| {
            let ty = t.ty().with_dtype(DType::F64);
            match interp
                .eval(&Op::Convert, &[t], &ty)
                .expect("converts")
                .data()
            {
                kiln_ir::Buffer::F64(v) => v.to_vec(),
                _ => unreachable!("an f64 conversion"),
            }
        };
        let (ga, wa) = (wide(&got[0]), wide(&want[0]));
        let mut exact = true;
        for i in 0..got[0].num_elements() {
            let (x, y) = (ga[i], wa[i]);
            exact &= a.get(i).same_bits(b.get(i));
            // Small integer inputs: every partial sum is exact in f32/f64 (and the f16 result
            // is rounded once from the exact sum), so the two agree exactly in value.
            assert!(
                x == y,
                "case {case}: element {i}: {x} vs {y}\n{}\n{}",
                kiln_ir::print_func(&f),
                kiln_ir::print_func(&g)
            );
        }
        checked += 1;
        same_bits += usize::from(exact);
        grouped +=
            usize::from(matches!(&f.insts[0].op, Op::Convolution(c) if c.feature_groups > 1));
    }
    assert!(checked >= 150, "only {checked} convolutions fit");
    assert!(grouped >= 50, "only {grouped} grouped convolutions");
    assert_eq!(same_bits, checked);
}

#[test]
fn batch_grouped_convolutions_are_left_alone() {
    let src = "func @f(%x: f32[4,5,5,2], %w: f32[3,3,2,6]) -> f32[2,3,3,6] {
  %y = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], batch_groups=2 : f32[2,3,3,6]
  return %y
}";
    let f = kiln_ir::parse_func(src, "t.kir").expect("parses");
    assert!(convolutions_as_gemm(&f).is_none());
}
