//! XLA's windowed reductions: `reduce_window` and `select_and_scatter`, and the window
//! taps they share with `convolution` ([`crate::conv`]).
//!
//! A window element falls either on an operand element or on padding / a dilation hole;
//! as XLA's CPU compiler and evaluator do, only the elements on the operand take part.
//!
//! # Order (the contract)
//!
//! - `reduce_window`: each result element is `init`, then combined with the window's
//!   elements one after another in row-major order of the window:
//!   `acc = op(acc, x_k)`. Sequential, so it cannot depend on the thread count.
//! - `select_and_scatter`: the result starts at `init` everywhere; windows are visited in
//!   row-major order of `source`; in each, the first element on the operand is selected and
//!   every later one `c` replaces the selected `s` unless `s select c` holds (with `ge`, the
//!   first maximum wins); then `result[s] = scatter(result[s], source[window])`. A window
//!   with no element on the operand scatters nothing. One thread, in that order.

use crate::movement::next_index;
use crate::scalar::{fmax, fmin, for_computed_dtype, Elem, Float, Int};
use crate::shape::slice_of;
use kiln_ir::{row_major_strides, Buffer, CompareDir, ReduceKind, Tensor, WindowDim};

/// Where the window elements of each window position fall along one dimension.
struct DimTaps {
    /// `pairs[start[o]..start[o + 1]]` are position `o`'s taps.
    start: Vec<usize>,
    /// `(window element, operand index)`, window elements increasing.
    pairs: Vec<(usize, usize)>,
}

impl DimTaps {
    fn new(w: &WindowDim, n: usize, positions: usize) -> DimTaps {
        let mut start = Vec::with_capacity(positions + 1);
        let mut pairs = Vec::new();
        for o in 0..positions {
            start.push(pairs.len());
            pairs.extend((0..w.size).filter_map(|k| Some((k, w.source(o, k, n)?))));
        }
        start.push(pairs.len());
        DimTaps { start, pairs }
    }

    fn at(&self, o: usize) -> &[(usize, usize)] {
        &self.pairs[self.start[o]..self.start[o + 1]]
    }
}

/// The taps of a window over several dimensions of an operand: for a window position, the
/// window elements that fall on operand elements, with their offsets. Built once per op (an
/// index map per dimension), then read for every position without allocating.
pub(crate) struct Taps {
    dims: Vec<DimTaps>,
    /// Element stride in the operand of each windowed dimension.
    operand_strides: Vec<usize>,
    /// Row-major strides over the window's sizes.
    window_strides: Vec<usize>,
}

impl Taps {
    /// Taps of `window` over dimensions of sizes `sizes` and strides `strides` (in the
    /// operand), with `positions[d]` window positions along dimension `d`.
    pub(crate) fn new(
        window: &[WindowDim],
        sizes: &[usize],
        strides: &[usize],
        positions: &[usize],
    ) -> Taps {
        let window_sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
        Taps {
            dims: (0..window.len())
                .map(|d| DimTaps::new(&window[d], sizes[d], positions[d]))
                .collect(),
            operand_strides: strides.to_vec(),
            window_strides: row_major_strides(&window_sizes),
        }
    }

    /// Fills `out` with `(window element, operand offset)` for every element of the window
    /// at `pos` that falls on the operand, in row-major order of the window; the window
    /// element is its row-major index. `counter` is scratch of one entry per dimension.
    pub(crate) fn collect(
        &self,
        pos: &[usize],
        counter: &mut [usize],
        out: &mut Vec<(usize, usize)>,
    ) {
        out.clear();
        let r = self.dims.len();
        if (0..r).any(|d| self.dims[d].at(pos[d]).is_empty()) {
            return;
        }
        counter.fill(0);
        loop {
            let (mut k, mut off) = (0, 0);
            for d in 0..r {
                let (kd, i) = self.dims[d].at(pos[d])[counter[d]];
                k += kd * self.window_strides[d];
                off += i * self.operand_strides[d];
            }
            out.push((k, off));
            let mut d = r;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                counter[d] += 1;
                if counter[d] < self.dims[d].at(pos[d]).len() {
                    break;
                }
                counter[d] = 0;
            }
        }
    }
}

/// Element types the windowed ops combine and compare: XLA's semantics per dtype.
pub(crate) trait Combine: Elem + PartialOrd {
    /// `kind`'s combining function (float max/min NaN-propagating, integers wrapping, bool
    /// max/min as or/and).
    fn combiner(kind: ReduceKind) -> fn(Self, Self) -> Self;
}

fn float_combiner<T: Float>(kind: ReduceKind) -> fn(T, T) -> T {
    match kind {
        ReduceKind::Sum => |a, b| a + b,
        ReduceKind::Prod => |a, b| a * b,
        ReduceKind::Max => fmax,
        ReduceKind::Min => fmin,
    }
}

fn int_combiner<T: Int>(kind: ReduceKind) -> fn(T, T) -> T {
    match kind {
        ReduceKind::Sum => Int::add,
        ReduceKind::Prod => Int::mul,
        ReduceKind::Max => Ord::max,
        ReduceKind::Min => Ord::min,
    }
}

impl Combine for f32 {
    fn combiner(kind: ReduceKind) -> fn(f32, f32) -> f32 {
        float_combiner(kind)
    }
}
impl Combine for f64 {
    fn combiner(kind: ReduceKind) -> fn(f64, f64) -> f64 {
        float_combiner(kind)
    }
}
macro_rules! int_combine {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn combiner(kind: ReduceKind) -> fn($t, $t) -> $t {
                int_combiner(kind)
            }
        }
    )*};
}
int_combine!(i8, i16, i32, i64, u8, u16, u32, u64);
impl Combine for bool {
    /// Sum and product of bool are refused by the typing rule; max is or, min is and.
    fn combiner(kind: ReduceKind) -> fn(bool, bool) -> bool {
        match kind {
            ReduceKind::Max | ReduceKind::Sum => |a, b| a | b,
            ReduceKind::Min | ReduceKind::Prod => |a, b| a & b,
        }
    }
}

/// The single element of a scalar tensor of type `T`.
fn scalar<T: Elem>(t: &Tensor) -> Result<T, String> {
    slice_of::<T>(t.data())?
        .first()
        .copied()
        .ok_or_else(|| format!("the init value must be a scalar, got {}", t.ty()))
}

/// `reduce_window`: each window of `a` combined with `kind`, starting from `init`.
pub(crate) fn reduce_window(
    kind: ReduceKind,
    a: &Tensor,
    init: &Tensor,
    window: &[WindowDim],
    out_shape: &[usize],
) -> Result<Buffer, String> {
    for_computed_dtype!(a.dtype(), T => {
        let x = slice_of::<T>(a.data())?;
        let init = scalar::<T>(init)?;
        let op = T::combiner(kind);
        // Trailing dimensions the window leaves alone (pooling's channels): one run of
        // `inner` contiguous elements per window position, each element folded over the
        // same taps in the same order as it would be alone — the same bits, without
        // walking the taps once per channel.
        let lead = window.len() - window.iter().rev().take_while(|w| w.is_identity()).count();
        let inner: usize = out_shape[lead..].iter().product();
        let strides = row_major_strides(a.shape());
        let taps = Taps::new(&window[..lead], &a.shape()[..lead], &strides[..lead], &out_shape[..lead]);
        let n: usize = out_shape[..lead].iter().product();
        let mut out = Vec::with_capacity(n * inner);
        let (mut pos, mut counter, mut list) = (vec![0; lead], vec![0; lead], Vec::new());
        for _ in 0..n {
            taps.collect(&pos, &mut counter, &mut list);
            let row = out.len();
            out.resize(row + inner, init);
            let acc = &mut out[row..];
            for &(_, off) in &list {
                for (a, &v) in acc.iter_mut().zip(&x[off..off + inner]) {
                    *a = op(*a, v);
                }
            }
            next_index(&mut pos, &out_shape[..lead]);
        }
        Ok(T::into_buffer(out))
    })
}

/// `select_and_scatter`: each `source` value goes to the element its window selects.
pub(crate) fn select_and_scatter(
    select: CompareDir,
    scatter: ReduceKind,
    args: &[&Tensor],
    window: &[WindowDim],
) -> Result<Buffer, String> {
    let (a, source) = (args[0], args[1]);
    for_computed_dtype!(a.dtype(), T => {
        let x = slice_of::<T>(a.data())?;
        let src = slice_of::<T>(source.data())?;
        let mut out = vec![scalar::<T>(args[2])?; x.len()];
        let op = T::combiner(scatter);
        let positions = source.shape();
        let taps = Taps::new(window, a.shape(), &row_major_strides(a.shape()), positions);
        let r = positions.len();
        let (mut pos, mut counter, mut list) = (vec![0; r], vec![0; r], Vec::new());
        for &s in src {
            taps.collect(&pos, &mut counter, &mut list);
            if let Some((&(_, first), rest)) = list.split_first() {
                let mut chosen = first;
                for &(_, off) in rest {
                    if !select.holds(x[chosen], x[off]) {
                        chosen = off;
                    }
                }
                out[chosen] = op(out[chosen], s);
            }
            next_index(&mut pos, positions);
        }
        Ok(T::into_buffer(out))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_skip_padding_and_holes_in_row_major_order() {
        // A 2x3 window over a [3, 4] operand (row strides 4, 1): dimension 0 padded by one
        // before, dimension 1 dilated by 2 (holes between elements).
        let window = [
            WindowDim {
                low: 1,
                ..WindowDim::new(2)
            },
            WindowDim {
                lhs_dilate: 2,
                ..WindowDim::new(3)
            },
        ];
        let taps = Taps::new(&window, &[3, 4], &[4, 1], &[3, 5]);
        let (mut counter, mut out) = (vec![0; 2], Vec::new());
        // Position (0, 0): row -1 is padding; in row 0, window columns 0 and 2 fall on
        // operand columns 0 and 1 (column 1 is a hole).
        taps.collect(&[0, 0], &mut counter, &mut out);
        assert_eq!(out, [(3, 0), (5, 1)]);
        // Position (2, 1): rows 1 and 2, window column 1 only (operand column 1).
        taps.collect(&[2, 1], &mut counter, &mut out);
        assert_eq!(out, [(1, 5), (4, 9)]);
        // Scalars: one window element, at offset 0.
        let taps = Taps::new(&[], &[], &[], &[]);
        taps.collect(&[], &mut [], &mut out);
        assert_eq!(out, [(0, 0)]);
    }

    /// The reduction over all window dimensions' taps, one output element at a time (the
    /// definition `reduce_window` folds trailing identity dimensions out of).
    fn reference(
        x: &[f32],
        shape: &[usize],
        window: &[WindowDim],
        out_shape: &[usize],
    ) -> Vec<f32> {
        let taps = Taps::new(window, shape, &row_major_strides(shape), out_shape);
        let n: usize = out_shape.iter().product();
        let (mut pos, mut counter, mut list) =
            (vec![0; shape.len()], vec![0; shape.len()], Vec::new());
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            taps.collect(&pos, &mut counter, &mut list);
            out.push(list.iter().fold(-0.0f32, |acc, &(_, off)| acc + x[off]));
            next_index(&mut pos, out_shape);
        }
        out
    }

    #[test]
    fn trailing_identity_dimensions_give_the_same_bits_at_every_size() {
        // Pooling-like windows over [n, h, w, c] with sizes 1-9: the spatial dimensions
        // windowed (padding, strides, dilation), the trailing ones (c, or w and c) left alone.
        let (mut seed, mut checked) = (7u64, 0);
        let mut next = |m: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % m
        };
        for case in 0..300 {
            let shape: Vec<usize> = (0..4).map(|_| 1 + next(9)).collect();
            let alone = 1 + case % 2; // trailing dimensions left alone
            let window: Vec<WindowDim> = (0..4)
                .map(|d| match d {
                    d if d >= 4 - alone => WindowDim::new(1),
                    0 => WindowDim::new(1 + next(2)),
                    _ => WindowDim {
                        stride: 1 + next(3),
                        low: next(3) as i64 - 1,
                        high: next(2) as i64,
                        rhs_dilate: 1 + next(2),
                        ..WindowDim::new(1 + next(3))
                    },
                })
                .collect();
            let Ok(out_shape) = window
                .iter()
                .zip(&shape)
                .map(|(w, &n)| w.output_size(n))
                .collect::<Result<Vec<usize>, String>>()
            else {
                continue;
            };
            let n: usize = shape.iter().product();
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919 % 997) as f32 - 498.0) * 0.37)
                .collect();
            let a = Tensor::new(shape.clone(), Buffer::F32(x.clone().into())).unwrap();
            let init = Tensor::new(Vec::<usize>::new(), Buffer::F32(vec![-0.0].into())).unwrap();
            let got = reduce_window(ReduceKind::Sum, &a, &init, &window, &out_shape).unwrap();
            let Buffer::F32(got) = got else { panic!("f32") };
            let want = reference(&x, &shape, &window, &out_shape);
            assert_eq!(got.len(), want.len(), "case {case}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "case {case} {shape:?} {window:?} [{i}]"
                );
            }
            checked += 1;
        }
        assert!(
            checked >= 200,
            "only {checked} of 300 windows fit their operands"
        );
    }
}
