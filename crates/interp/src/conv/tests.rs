//! The fast float paths against the direct loop over many shapes: every spatial size 1–9,
//! odd and even kernels, strides, padding (negative too), lhs/rhs dilation, reversal,
//! feature groups, depthwise, batch groups and every assignment of dimension roles; and
//! their bits at 1, 2 and 7 threads.
//!
//! Tolerance of the GEMM path: it sums the same terms in another order (and may fuse), so
//! each element is compared with the direct loop within `(K + 2)·ε·Σ|x·w|`, where `K` is the
//! number of terms and `Σ|x·w|` is the direct convolution of `|x|` and `|w|` (the classic
//! bound of a recursive sum). The depthwise loop promises the direct loop's bits.

use super::{convolution, direct};
use kiln_ir::{typecheck, Buffer, ConvDims, Convolution, DType, Op, Tensor, TensorType, WindowDim};
use kiln_testkit::{first_difference, random_tensor, Rng};

/// A random convolution with `r` spatial dimensions of sizes 1–9, random roles and groups,
/// with operands of `dtype`; `None` when the drawn window does not fit.
fn random_case(
    rng: &mut Rng,
    r: usize,
    dtype: DType,
) -> Option<(Convolution, Tensor, Tensor, Vec<usize>)> {
    let rank = r + 2;
    let roles = |rng: &mut Rng| {
        let mut p: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            p.swap(i, rng.below(i + 1));
        }
        p
    };
    let (lhs_roles, rhs_roles, out_roles) = (roles(rng), roles(rng), roles(rng));
    let dims = ConvDims::from_roles(&lhs_roles, &rhs_roles, &out_roles)?;
    let window: Vec<WindowDim> = (0..r)
        .map(|_| WindowDim {
            size: [1, 3, 5, 2][rng.below(4)],
            stride: 1 + rng.below(3),
            low: rng.below(4) as i64 - 1,
            high: rng.below(4) as i64 - 1,
            lhs_dilate: 1 + rng.below(2),
            rhs_dilate: 1 + rng.below(2),
            reversal: rng.below(2) == 1,
        })
        .collect();
    let cg = 1 + rng.below(4);
    let (fg, bg) = match rng.below(4) {
        0 => (1 + rng.below(3), 1),
        1 => (2 + rng.below(6), 1), // depthwise when cg == 1 below
        2 => (1, 1 + rng.below(3)),
        _ => (1, 1),
    };
    let cg = if rng.below(2) == 0 && bg == 1 { 1 } else { cg };
    let out_features = fg.max(bg) * (1 + rng.below(5));
    let batch = bg * (1 + rng.below(2));
    let mut xs = vec![0; rank];
    let mut ws = vec![0; rank];
    xs[dims.lhs_batch] = batch;
    xs[dims.lhs_feature] = if bg > 1 { cg } else { cg * fg };
    ws[dims.rhs_input] = cg;
    ws[dims.rhs_output] = out_features;
    for i in 0..r {
        xs[dims.lhs_spatial[i]] = 1 + rng.below(9);
        ws[dims.rhs_spatial[i]] = window[i].size;
    }
    let c = Convolution {
        dims,
        window,
        feature_groups: fg,
        batch_groups: bg,
    };
    let (xt, wt) = (TensorType::new(dtype, xs), TensorType::new(dtype, ws));
    let out = typecheck::infer(&Op::Convolution(Box::new(c.clone())), &[&xt, &wt], None).ok()?;
    let finite = |t: Tensor| finite_values(t);
    Some((
        c,
        finite(random_tensor(&xt, rng)),
        finite(random_tensor(&wt, rng)),
        out.shape,
    ))
}

/// `t` with every infinity or NaN replaced by 1.5 (the GEMM path multiplies holes by the
/// weight, which the direct loop skips: equal only for finite weights).
fn finite_values(t: Tensor) -> Tensor {
    let data = match t.data() {
        Buffer::F32(v) => Buffer::F32(
            v.iter()
                .map(|&x| if x.is_finite() { x } else { 1.5 })
                .collect(),
        ),
        Buffer::F64(v) => Buffer::F64(
            v.iter()
                .map(|&x| if x.is_finite() { x } else { 1.5 })
                .collect(),
        ),
        other => other.clone(),
    };
    Tensor::new(t.shape().to_vec(), data).expect("same size")
}

/// A 2-D convolution with window `wd` in both spatial dimensions and no batch groups.
fn conv2d(dims: &ConvDims, wd: &WindowDim, feature_groups: usize) -> Convolution {
    Convolution {
        dims: dims.clone(),
        window: vec![wd.clone(), wd.clone()],
        feature_groups,
        batch_groups: 1,
    }
}

/// `f32` operand types of shapes `xs` and `ws` and the shape of `c`'s result on them
/// (`None` when the typing rule rejects them).
fn f32_case(
    c: &Convolution,
    xs: &[usize],
    ws: &[usize],
) -> Option<(TensorType, TensorType, Vec<usize>)> {
    let (xt, wt) = (
        TensorType::new(DType::F32, xs.to_vec()),
        TensorType::new(DType::F32, ws.to_vec()),
    );
    let out = typecheck::infer(&Op::Convolution(Box::new(c.clone())), &[&xt, &wt], None).ok()?;
    Some((xt, wt, out.shape))
}

fn abs(t: &Tensor) -> Tensor {
    let data = match t.data() {
        Buffer::F32(v) => Buffer::F32(v.iter().map(|x| x.abs()).collect()),
        Buffer::F64(v) => Buffer::F64(v.iter().map(|x| x.abs()).collect()),
        other => other.clone(),
    };
    Tensor::new(t.shape().to_vec(), data).expect("same size")
}

fn as_f64(b: &Buffer) -> Vec<f64> {
    match b {
        Buffer::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Buffer::F64(v) => v.to_vec(),
        _ => unreachable!("float cases only"),
    }
}

/// Checks the fast path against the direct loop on one case (see the module doc).
fn check(c: &Convolution, x: &Tensor, w: &Tensor, out: &[usize]) -> Result<(), String> {
    let fast = convolution(x, w, c, out)?;
    let reference = direct(x, w, c, out)?;
    if super::depthwise::applies(&super::Plan::new(x.shape(), w.shape(), c, out)) {
        let t = |b: Buffer| Tensor::new(out.to_vec(), b).expect("sizes");
        return match first_difference(&[t(fast)], &[t(reference)]) {
            None => Ok(()),
            Some(d) => Err(format!("depthwise not bit-identical: {d}")),
        };
    }
    let eps = match x.dtype() {
        DType::F32 => f64::from(f32::EPSILON),
        _ => f64::EPSILON,
    };
    let terms = w.shape().iter().product::<usize>() / w.shape()[c.dims.rhs_output];
    let bound = as_f64(&direct(&abs(x), &abs(w), c, out)?);
    let (fast, reference) = (as_f64(&fast), as_f64(&reference));
    for i in 0..fast.len() {
        let tol = (terms + 2) as f64 * eps * bound[i] + f64::MIN_POSITIVE;
        if (fast[i] - reference[i]).abs() > tol {
            return Err(format!(
                "element {i}: fast {} direct {} (tolerance {tol})",
                fast[i], reference[i]
            ));
        }
    }
    Ok(())
}

#[test]
fn fast_paths_agree_with_the_direct_loop() {
    let mut rng = Rng(38);
    let mut checked = [0usize; 2];
    for case in 0..1500 {
        let r = [1, 2, 2, 3][case % 4];
        let dtype = [DType::F32, DType::F64][case % 2];
        let Some((c, x, w, out)) = random_case(&mut rng, r, dtype) else {
            continue;
        };
        let depthwise =
            super::depthwise::applies(&super::Plan::new(x.shape(), w.shape(), &c, &out));
        checked[usize::from(depthwise)] += 1;
        if let Err(e) = check(&c, &x, &w, &out) {
            panic!(
                "case {case}: {c:?} lhs {:?} rhs {:?}: {e}",
                x.shape(),
                w.shape()
            );
        }
    }
    // Both paths were exercised many times.
    assert!(checked.iter().all(|&n| n > 100), "{checked:?}");
}

#[test]
fn every_spatial_size_one_to_nine_with_odd_kernels() {
    // NHWC / HWIO / NHWC, the layout of the corpus' Flax models, 3x3 and 5x5, 'SAME'-like
    // and 'VALID' padding, strides 1 and 2.
    let mut rng = Rng(9);
    let dims = ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).expect("roles");
    for size in 1..=9 {
        for k in [1, 3, 5] {
            for (stride, pad) in [(1, 0), (1, (k / 2) as i64), (2, (k / 2) as i64)] {
                for groups in [1, 4] {
                    let wd = WindowDim {
                        stride,
                        low: pad,
                        high: pad,
                        ..WindowDim::new(k)
                    };
                    let c = conv2d(&dims, &wd, groups);
                    let Some((xt, wt, out)) =
                        f32_case(&c, &[2, size, size, 4], &[k, k, 4 / groups, 8])
                    else {
                        continue;
                    };
                    let x = finite_values(random_tensor(&xt, &mut rng));
                    let w = finite_values(random_tensor(&wt, &mut rng));
                    check(&c, &x, &w, &out).unwrap_or_else(|e| panic!("{size} {k} {stride}: {e}"));
                }
            }
        }
    }
}

/// Runs `f` on a pool of `threads` threads.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    crate::shared_pool(threads).expect("pool").install(f)
}

#[test]
fn bits_do_not_depend_on_the_thread_count() {
    // Large enough to split into many GEMM calls (rows and, for the late layer, columns);
    // special values included (the paths are compared with themselves).
    let mut rng = Rng(5);
    let nhwc = ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).expect("roles");
    let nchw = ConvDims::from_roles(&[0, 1, 2, 3], &[1, 0, 2, 3], &[0, 1, 2, 3]).expect("roles");
    let same = |k: usize, stride| WindowDim {
        stride,
        low: (k / 2) as i64,
        high: (k / 2) as i64,
        ..WindowDim::new(k)
    };
    let cases = [
        // (dims, lhs, rhs, window, feature groups)
        (nhwc.clone(), [2, 28, 28, 16], [3, 3, 16, 32], same(3, 1), 1),
        (
            nhwc.clone(),
            [1, 7, 7, 320],
            [1, 1, 320, 1280],
            same(1, 1),
            1,
        ),
        (nhwc.clone(), [2, 30, 30, 24], [3, 3, 1, 24], same(3, 2), 24),
        (nchw, [2, 8, 20, 20], [16, 4, 5, 5], same(5, 1), 2),
    ];
    for (dims, xs, ws, wd, groups) in cases {
        let c = conv2d(&dims, &wd, groups);
        let (xt, wt, out) = f32_case(&c, &xs, &ws).expect("typed");
        let (x, w) = (random_tensor(&xt, &mut rng), random_tensor(&wt, &mut rng));
        let run = |threads| {
            let b = on_threads(threads, || convolution(&x, &w, &c, &out)).expect("runs");
            Tensor::new(out.clone(), b).expect("sizes")
        };
        let one = run(1);
        for threads in [2, 7] {
            assert_eq!(
                first_difference(&[run(threads)], std::slice::from_ref(&one)),
                None,
                "{xs:?} at {threads} threads"
            );
        }
    }
}

#[test]
fn kernels_read_in_place_give_the_bits_of_copied_ones() {
    // One convolution with its kernel as HWIO (read in place by the GEMM) and as OIHW (copied
    // into the GEMM's layout): the same values at the same positions of the GEMM's operand,
    // so the same bits, at 1 and 3 threads.
    let mut rng = Rng(17);
    let hwio = ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).expect("roles");
    let oihw = ConvDims::from_roles(&[0, 3, 1, 2], &[1, 0, 2, 3], &[0, 3, 1, 2]).expect("roles");
    for (size, k, cin, cout, groups, stride, reversal) in [
        (9, 3, 4, 8, 1, 1, false),
        (7, 1, 64, 96, 1, 1, false),
        (8, 3, 8, 12, 2, 2, false),
        (5, 5, 3, 5, 1, 1, false),
        (6, 3, 4, 6, 1, 1, true),
        (30, 3, 16, 40, 1, 1, false),
    ] {
        let wd = WindowDim {
            stride,
            low: (k / 2) as i64,
            high: (k / 2) as i64,
            reversal,
            ..WindowDim::new(k)
        };
        let (c_hwio, c_oihw) = (conv2d(&hwio, &wd, groups), conv2d(&oihw, &wd, groups));
        let cg = cin / groups;
        let (xt, wt, out) =
            f32_case(&c_hwio, &[2, size, size, cin], &[k, k, cg, cout]).expect("typed");
        // Finite values: with infinities and NaNs most sums of a long window are NaN.
        let x = finite_values(random_tensor(&xt, &mut rng));
        let w = finite_values(random_tensor(&wt, &mut rng));
        let Buffer::F32(wv) = w.data() else {
            unreachable!("f32 kernel")
        };
        // OIHW[o, i, h, v] = HWIO[h, v, i, o].
        let mut permuted = vec![0f32; wv.len()];
        for h in 0..k {
            for v in 0..k {
                for i in 0..cg {
                    for o in 0..cout {
                        permuted[((o * cg + i) * k + h) * k + v] =
                            wv[((h * k + v) * cg + i) * cout + o];
                    }
                }
            }
        }
        let w2 = Tensor::new(vec![cout, cg, k, k], Buffer::F32(permuted.into())).expect("size");
        let plan = |w: &Tensor, c| super::Plan::new(x.shape(), w.shape(), c, &out);
        let reads_in_place = |w: &Tensor, c| {
            let p = plan(w, c);
            let Buffer::F32(v) = w.data() else {
                unreachable!("f32 kernel")
            };
            let n = p.features / groups;
            matches!(
                super::gemm::KernelMatrices::new(&p, v.as_slice(), groups, n).data,
                std::borrow::Cow::Borrowed(_)
            )
        };
        assert_eq!(reads_in_place(&w, &c_hwio), !reversal, "HWIO {size} {k}");
        assert!(!reads_in_place(&w2, &c_oihw), "OIHW {size} {k}");
        let want = on_threads(1, || convolution(&x, &w2, &c_oihw, &out)).expect("runs");
        let want = Tensor::new(out.clone(), want).expect("sizes");
        for threads in [1, 3] {
            let got = on_threads(threads, || convolution(&x, &w, &c_hwio, &out)).expect("runs");
            let got = Tensor::new(out.clone(), got).expect("sizes");
            assert_eq!(
                first_difference(&[got], std::slice::from_ref(&want)),
                None,
                "{size} {k} {cin}->{cout} groups {groups} at {threads} threads"
            );
        }
    }
}

#[test]
fn pointwise_convolutions_are_products_with_the_window_paths_bits() {
    // 1×1 convolutions over NHWC inputs run as one product on the input in place; their
    // bits are the window path's (HWIO and OIHW kernels, 1 and 3 threads).
    // NCHW inputs (positions not evenly spaced rows), strides, padding and groups are left
    // to the window path.
    let mut rng = Rng(23);
    let nhwc_hwio =
        ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).expect("roles");
    let nhwc_oihw =
        ConvDims::from_roles(&[0, 3, 1, 2], &[1, 0, 2, 3], &[0, 3, 1, 2]).expect("roles");
    let nchw = ConvDims::from_roles(&[0, 1, 2, 3], &[1, 0, 2, 3], &[0, 1, 2, 3]).expect("roles");
    let cases = [
        // (dims, lhs shape, rhs shape, stride, low padding, groups, takes the product)
        (&nhwc_hwio, [2, 7, 7, 64], [1, 1, 64, 96], 1, 0, 1, true),
        (&nhwc_hwio, [1, 9, 5, 3], [1, 1, 3, 5], 1, 0, 1, true),
        (&nhwc_hwio, [3, 14, 14, 320], [1, 1, 320, 40], 1, 0, 1, true),
        (&nhwc_oihw, [2, 8, 8, 24], [144, 24, 1, 1], 1, 0, 1, true),
        (&nchw, [2, 6, 8, 8], [12, 6, 1, 1], 1, 0, 1, false),
        (&nchw, [2, 1, 8, 8], [12, 1, 1, 1], 1, 0, 1, true),
        (&nhwc_hwio, [2, 8, 8, 16], [1, 1, 16, 32], 2, 0, 1, false),
        (&nhwc_hwio, [2, 8, 8, 16], [1, 1, 16, 32], 1, 1, 1, false),
        (&nhwc_hwio, [2, 8, 8, 16], [1, 1, 8, 32], 1, 0, 2, false),
    ];
    for (dims, xs, ws, stride, low, groups, product) in cases {
        let wd = WindowDim {
            stride,
            low,
            ..WindowDim::new(1)
        };
        let c = conv2d(dims, &wd, groups);
        let (xt, wt, out) = f32_case(&c, &xs, &ws).expect("typed");
        let (x, w) = (
            finite_values(random_tensor(&xt, &mut rng)),
            finite_values(random_tensor(&wt, &mut rng)),
        );
        let (Buffer::F32(xv), Buffer::F32(wv)) = (x.data(), w.data()) else {
            unreachable!("f32 operands")
        };
        let plan = super::Plan::new(x.shape(), w.shape(), &c, &out);
        let want = on_threads(1, || super::gemm::rows(&plan, xv, wv));
        for threads in [1, 3] {
            let got = on_threads(threads, || super::gemm::pointwise(&plan, xv, wv));
            assert_eq!(got.is_some(), product, "{xs:?} {ws:?}");
            let Some(got) = got else { continue };
            let t = |v: Vec<f32>| Tensor::new(vec![v.len()], Buffer::F32(v.into())).expect("size");
            assert_eq!(
                first_difference(&[t(got)], &[t(want.clone())]),
                None,
                "{xs:?} {ws:?} at {threads} threads"
            );
        }
    }
}

#[test]
fn window_matrices_copied_for_packing_keep_the_gemm_bits() {
    // A 3×3 'SAME' convolution large enough for `matrixmultiply` (its window matrices are
    // handed over column-major) against one library GEMM on the row-major window matrix
    // built here, at 1 and 3 threads.
    use crate::dot::Gemm;
    let mut rng = Rng(29);
    // 384 × 144 × 32: above `PAR_FLOPS`, so several tasks at 3 threads.
    let (b, h, wd, cin, cout) = (2, 16, 12, 16, 32);
    let dims = ConvDims::from_roles(&[0, 3, 1, 2], &[2, 3, 0, 1], &[0, 3, 1, 2]).expect("roles");
    let window = WindowDim {
        low: 1,
        high: 1,
        ..WindowDim::new(3)
    };
    let c = conv2d(&dims, &window, 1);
    let (xt, wt, out) = f32_case(&c, &[b, h, wd, cin], &[3, 3, cin, cout]).expect("typed");
    let (x, w) = (
        finite_values(random_tensor(&xt, &mut rng)),
        finite_values(random_tensor(&wt, &mut rng)),
    );
    let (Buffer::F32(xv), Buffer::F32(wv)) = (x.data(), w.data()) else {
        unreachable!("f32 operands")
    };
    let (m, k) = (b * h * wd, 9 * cin);
    assert!(crate::dot::packs(m, k, cout));
    let mut a = vec![0f32; m * k];
    for (r, row) in a.chunks_exact_mut(k).enumerate() {
        let (bi, y, xi) = (r / (h * wd), r / wd % h, r % wd);
        for tap in 0..9 {
            let (sy, sx) = (y + tap / 3, xi + tap % 3); // padded coordinates
            if (1..=h).contains(&sy) && (1..=wd).contains(&sx) {
                let src = ((bi * h + sy - 1) * wd + sx - 1) * cin;
                row[tap * cin..(tap + 1) * cin].copy_from_slice(&xv[src..src + cin]);
            }
        }
    }
    let mut want = vec![0f32; m * cout];
    // SAFETY: dense row-major operands of the sizes the strides address.
    unsafe {
        f32::library_gemm(
            (m, k, cout),
            a.as_ptr(),
            k as isize,
            1,
            wv.as_ptr(),
            cout as isize,
            1,
            want.as_mut_ptr(),
            cout as isize,
        )
    };
    let want = Tensor::new(out.clone(), Buffer::F32(want.into())).expect("sizes");
    for threads in [1, 3] {
        let got = on_threads(threads, || convolution(&x, &w, &c, &out)).expect("runs");
        let got = Tensor::new(out.clone(), got).expect("sizes");
        assert_eq!(
            first_difference(&[got], std::slice::from_ref(&want)),
            None,
            "{threads} threads"
        );
    }
}
