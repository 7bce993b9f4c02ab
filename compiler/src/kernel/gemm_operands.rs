//! 16-bit GEMM operands, for a backend whose GEMM reads `f16`/`bf16` and accumulates in
//! `f32` (the GPU: cuBLAS's `cublasGemmEx`, on tensor cores).
//!
//! A 16-bit `dot_general` or `convolution` reaches the kernel IR as the `f32` product of
//! its operands' exact widenings (`half::contractions_in_f32`), and a product JAX asks for
//! in `f32` from 16-bit operands (`preferred_element_type`) as the same: a kernel per
//! operand computes `tmp[i] = convert(src[i]) : f32` over every element (`src` of `tmp`'s
//! shape), and the product step reads `tmp`. Widening is exact, so reading `src` itself
//! with a GEMM that widens as it multiplies gives the same product:
//! [`gemm_reads_16_bit_operands`] points the step at `src` (an input, a scratch buffer, or
//! a constant the lowering kept 16-bit, `LowerOptions::widen_16_bit_constants`) and drops
//! the widening kernel and its scratch buffer when nothing else reads them. The product's
//! `f32` result and the rounding after it stay as they were.

use super::analysis::is_point_position;
use super::{BufRef, Kernel, NodeKind, Program};
use kiln_ir::DType;

/// How one operand of a product step becomes a 16-bit buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    /// Read `src`, the buffer of the operand's shape that kernel `kernel` only widens into
    /// the operand.
    Redirect { src: BufRef, kernel: usize },
    /// Kernel `kernel` stores its last node's 16-bit operand into scratch buffer `t`,
    /// which becomes 16-bit, instead of that node, the `convert` widening it.
    Narrow { t: usize, kernel: usize },
}

/// Points every product step's operands that widening kernels compute at 16-bit buffers
/// (module doc), then drops the kernels and scratch buffers nothing reads any more; whether
/// anything changed.
pub fn gemm_reads_16_bit_operands(p: &mut Program) -> bool {
    // Kernels that only widened an operand now read in 16 bits, by name.
    let mut widening: Vec<String> = Vec::new();
    let mut changed = false;
    for j in 0..p.dots.len() {
        let (lhs, rhs) = (p.dots[j].lhs, p.dots[j].rhs);
        let (Some((l, dl)), Some((r, dr))) = (change(p, lhs), change(p, rhs)) else {
            continue;
        };
        if dl != dr || (lhs == rhs && matches!(l, Change::Narrow { .. })) {
            continue;
        }
        changed = true;
        for (c, right) in [(l, false), (r, true)] {
            match c {
                Change::Redirect { src, kernel } => {
                    widening.push(p.kernels[kernel].name.clone());
                    let d = &mut p.dots[j];
                    *(if right { &mut d.rhs } else { &mut d.lhs }) = src;
                }
                Change::Narrow { t, kernel } => {
                    let k = &mut p.kernels[kernel];
                    let Some(NodeKind::Convert(x)) = k.nodes.pop().map(|n| n.kind) else {
                        unreachable!("checked by `change`")
                    };
                    for s in k.stores.iter_mut().filter(|s| s.buf == BufRef::Temp(t)) {
                        s.value = x;
                    }
                    p.temps[t].dtype = dl;
                }
            }
        }
    }
    if !changed {
        return false;
    }
    // The redirected widening kernels whose scratch buffers nothing reads now go (last
    // first, so the indices still to visit hold).
    for k in (0..p.kernels.len()).rev() {
        let kernel = &p.kernels[k];
        let unread = kernel.stores.iter().all(|s| match s.buf {
            BufRef::Temp(t) => !read_by_kernels(p, t) && !read_by_dots(p, t),
            _ => false,
        });
        if unread && widening.contains(&kernel.name) {
            p.replace_kernels(k..k + 1, Vec::new());
        }
    }
    super::epilogue::prune_temps(p);
    true
}

/// How `operand` of a product step becomes a 16-bit buffer, and its dtype: `None` unless
/// one kernel writes it (scratch buffer `t`, `f32`), with no reduction, storing as its last
/// node the `convert` to `f32` of a 16-bit node that nothing else uses.
fn change(p: &Program, operand: BufRef) -> Option<(Change, DType)> {
    let BufRef::Temp(t) = operand else {
        return None;
    };
    let ty = p.temps.get(t)?;
    if ty.dtype != DType::F32 {
        return None;
    }
    let mut writers = (p.kernels.iter().enumerate())
        .filter(|(_, k)| k.stores.iter().any(|s| s.buf == BufRef::Temp(t)));
    let (kernel, k): (usize, &Kernel) = writers.next()?;
    if writers.next().is_some() || k.reduce.is_some() || k.points() != ty.num_elements() {
        return None;
    }
    let store = k.stores.iter().find(|s| s.buf == BufRef::Temp(t))?;
    let NodeKind::Convert(x) = k.nodes.get(store.value)?.kind else {
        return None;
    };
    let half = k.nodes.get(x)?.dtype;
    if !half.is_half() {
        return None;
    }
    // A plain widening of a whole 16-bit buffer of the operand's shape at the same
    // positions: read that buffer.
    if let NodeKind::Load { buf, ref offset } = k.nodes[x].kind {
        let src_type = match buf {
            BufRef::Input(i) => p.inputs.get(i).cloned(),
            BufRef::Temp(i) => p.temps.get(i).cloned(),
            BufRef::Const(i) => p.consts.get(i).map(|c| c.ty()),
            BufRef::Output(_) => None,
        };
        // The same shape too: a product step reads its operand by the buffer's shape.
        if src_type.is_some_and(|s| s.dtype == half && s.shape == ty.shape)
            && is_point_position(offset, &k.space)
        {
            return Some((Change::Redirect { src: buf, kernel }, half));
        }
    }
    // Otherwise the kernel stores the 16-bit values, when the `convert` is its last node,
    // used by this one store only, and only this step reads `t`, once.
    let last = store.value + 1 == k.nodes.len();
    let one_store = k.stores.iter().filter(|s| s.value == store.value).count() == 1
        && k.stores.iter().filter(|s| s.buf == BufRef::Temp(t)).count() == 1;
    let reads = p
        .dots
        .iter()
        .map(|d| usize::from(d.lhs == operand) + usize::from(d.rhs == operand))
        .sum::<usize>();
    (last && one_store && reads == 1 && !read_by_kernels(p, t))
        .then_some((Change::Narrow { t, kernel }, half))
}

/// Whether a kernel reads scratch buffer `t` (a value or an index).
fn read_by_kernels(p: &Program, t: usize) -> bool {
    let buf = BufRef::Temp(t);
    p.kernels.iter().any(|k| {
        k.nodes
            .iter()
            .any(|n| matches!(n.kind, NodeKind::Load { buf: b, .. } if b == buf))
            || k.index_loads().iter().any(|(b, _)| *b == buf)
    })
}

/// Whether a product step reads scratch buffer `t`.
fn read_by_dots(p: &Program, t: usize) -> bool {
    let buf = BufRef::Temp(t);
    p.dots.iter().any(|d| d.lhs == buf || d.rhs == buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::lowered;

    fn operand_dtypes(p: &Program) -> Vec<(DType, DType)> {
        let dt = |b| super::super::buf_dtype(p, b);
        p.dots.iter().map(|d| (dt(d.lhs), dt(d.rhs))).collect()
    }

    #[test]
    fn plain_widenings_are_read_from_the_16_bit_inputs() {
        let mut p = lowered(
            "func @f(%a: bf16[3,20,10], %w: bf16[3,30,10]) -> bf16[3,20,30] {
  %d = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : bf16[3,20,30]
  return %d
}",
        );
        assert_eq!(p.kernels.len(), 3, "two widenings and the rounding");
        assert!(gemm_reads_16_bit_operands(&mut p));
        super::super::verify_program(&p).unwrap();
        assert_eq!(p.kernels.len(), 1);
        assert_eq!(p.temps.len(), 1);
        assert_eq!(
            (p.dots[0].lhs, p.dots[0].rhs),
            (BufRef::Input(0), BufRef::Input(1))
        );
        assert_eq!(p.dots[0].before, 0);
        assert_eq!(p.temps[p.dots[0].out].dtype, DType::F32);
        // Nothing left to change.
        assert!(!gemm_reads_16_bit_operands(&mut p));
    }

    #[test]
    fn an_operand_used_twice_and_a_gathered_operand() {
        // `x · xᵀ` reads one widening twice; both sides read the input.
        let mut p = lowered(
            "func @f(%x: f16[4,6]) -> f16[4,4] {
  %y = dot_general %x, %x, lhs_contract=[1], rhs_contract=[1] : f16[4,4]
  return %y
}",
        );
        assert!(gemm_reads_16_bit_operands(&mut p));
        assert_eq!(operand_dtypes(&p), [(DType::F16, DType::F16)]);
        assert_eq!(
            (p.dots[0].lhs, p.dots[0].rhs),
            (BufRef::Input(0), BufRef::Input(0))
        );
        // A transposed operand is gathered by its kernel: stored in 16 bits instead.
        let mut p = lowered(
            "func @f(%a: f16[6,5], %w: f16[6,3]) -> f16[5,3] {
  %t = transpose %a, perm=[1, 0] : f16[5,6]
  %y = dot_general %t, %w, lhs_contract=[1], rhs_contract=[0] : f16[5,3]
  return %y
}",
        );
        let before = p.kernels.len();
        assert!(gemm_reads_16_bit_operands(&mut p));
        super::super::verify_program(&p).unwrap();
        assert_eq!(operand_dtypes(&p), [(DType::F16, DType::F16)]);
        assert!(p.kernels.len() < before);
    }

    #[test]
    fn a_reshaped_operand_is_stored_in_16_bits_not_read_through_another_shape() {
        // The widening reads `%a` at the point's position, but `%a` is [2,3] and the
        // operand [3,2]: a product step reads a buffer by its own shape, so the step keeps
        // its scratch buffer, now 16-bit (found by the shape fuzz: a redirect here changed
        // the operand's rank).
        let mut p = lowered(
            "func @f(%a: f16[2,3], %w: f16[2,4]) -> f16[3,4] {
  %r = reshape %a : f16[3,2]
  %y = dot_general %r, %w, lhs_contract=[1], rhs_contract=[0] : f16[3,4]
  return %y
}",
        );
        assert!(gemm_reads_16_bit_operands(&mut p));
        super::super::verify_program(&p).unwrap();
        let d = &p.dots[0];
        let BufRef::Temp(t) = d.lhs else {
            panic!("the reshaped operand is read directly: {:?}", d.lhs)
        };
        assert_eq!(p.temps[t].shape, [3, 2]);
        assert_eq!(operand_dtypes(&p), [(DType::F16, DType::F16)]);
        assert_eq!(d.rhs, BufRef::Input(1));
    }

    #[test]
    fn a_step_with_an_f32_operand_is_left_alone() {
        // A frozen weight is widened once at lowering, an f32 constant: the step stays an
        // f32 product, and its other operand keeps its widening (one dtype per GEMM).
        let mut p = lowered(
            "func @f(%a: f16[2,3]) -> f16[2,2] {
  %w = constant [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] : f16[3,2]
  %y = dot_general %a, %w, lhs_contract=[1], rhs_contract=[0] : f16[2,2]
  return %y
}",
        );
        let unchanged = p.clone();
        assert!(!gemm_reads_16_bit_operands(&mut p));
        assert_eq!(p, unchanged);
        assert_eq!(operand_dtypes(&p), [(DType::F32, DType::F32)]);
    }

    #[test]
    fn a_constant_kept_16_bit_is_read_as_it_is() {
        // Lowered for a GEMM of 16-bit operands, the constant is converted by a kernel
        // like any operand, and the step then reads the constant itself.
        let c = kiln_ir::Cluster {
            name: "c".into(),
            body: kiln_ir::parse_func(
                "func @f(%a: f16[2,3]) -> f16[2,2] {
  %w = constant [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] : f16[3,2]
  %y = dot_general %a, %w, lhs_contract=[1], rhs_contract=[0] : f16[2,2]
  return %y
}",
                "test.kir",
            )
            .unwrap(),
        };
        let opts = crate::lower::LowerOptions {
            widen_16_bit_constants: false,
        };
        let mut p = crate::lower::lower_cluster_with(&c, &opts).unwrap();
        assert!(gemm_reads_16_bit_operands(&mut p));
        super::super::verify_program(&p).unwrap();
        assert_eq!(operand_dtypes(&p), [(DType::F16, DType::F16)]);
        assert!(matches!(p.dots[0].rhs, BufRef::Const(_)), "{:?}", p.dots[0]);
        assert_eq!(p.kernels.len(), 1, "only the rounding epilogue");
    }
}
