//! XLA's `scatter` with one canonical order.
//!
//! The result starts as a copy of the operand; then every update element, in the row-major
//! order of the updates, is combined into the element it is aimed at:
//! `out[t] = combine(out[t], update)` (or `out[t] = update` for `replace`). So duplicate
//! indices combine in one order every time — a float sum of duplicates is
//! `((x + u0) + u1) + …` with `u0, u1, …` in the updates' row-major order — on one thread,
//! whatever the thread count (XLA on GPU and TF's segment sums make no such promise).
//!
//! An update whose window does not lie inside the operand — some start below 0 or
//! `start + window size` past the dimension — is skipped as a whole, as XLA does.

use crate::gather::{starts, Walk};
use crate::scalar::{fmax, fmin, Elem, Float, Int};
use kiln_ir::indexing::{window_dims, ScatterCombine, ScatterDims};
use kiln_ir::{row_major_strides, Buffer, Tensor};

/// `scatter %a, %indices, %updates`: see the module documentation.
pub(crate) fn scatter(
    a: &Tensor,
    idx: &Tensor,
    upd: &Tensor,
    d: &ScatterDims,
    combine: ScatterCombine,
) -> Result<Buffer, String> {
    let shape = a.shape();
    let rank = shape.len();
    let s = starts(
        idx,
        d.index_vector_dim,
        &d.scatter_dims_to_operand_dims,
        &d.input_batching_dims,
        &d.scatter_indices_batching_dims,
        rank,
    )?;
    let window = window_dims(rank, &d.inserted_window_dims, &d.input_batching_dims);
    // The window's size along each operand dimension: an update dimension's size, or 1.
    let mut size = vec![1usize; rank];
    for (&k, &u) in window.iter().zip(&d.update_window_dims) {
        size[k] = upd.shape()[u];
    }
    let strides = row_major_strides(shape);
    // Each batch position's first target element, if its whole window lies inside `a`.
    let bases: Vec<Option<usize>> = (0..s.batch_shape.iter().product())
        .map(|g| {
            let row = &s.starts[g * rank..(g + 1) * rank];
            let inside = (0..rank)
                .all(|k| row[k] >= 0 && row[k] as i128 + size[k] as i128 <= shape[k] as i128);
            inside.then(|| (0..rank).map(|k| row[k] as usize * strides[k]).sum())
        })
        .collect();
    let walk = Walk::new(
        upd.shape(),
        &d.update_window_dims,
        &window,
        shape,
        &s.batch_shape,
    );
    let plan = Plan { bases, walk };
    let data = (a.data(), upd.data());
    let undefined = || {
        format!(
            "combine={} is not defined for {}",
            combine.name(),
            a.dtype()
        )
    };
    let c = combine;
    Ok(match data {
        (Buffer::F32(x), Buffer::F32(u)) => plan.run(x, u, float_fn(c).ok_or_else(undefined)?),
        (Buffer::F64(x), Buffer::F64(u)) => plan.run(x, u, float_fn(c).ok_or_else(undefined)?),
        (Buffer::I32(x), Buffer::I32(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::I64(x), Buffer::I64(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::U32(x), Buffer::U32(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::U64(x), Buffer::U64(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::I8(x), Buffer::I8(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::U8(x), Buffer::U8(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::I16(x), Buffer::I16(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::U16(x), Buffer::U16(u)) => plan.run(x, u, int_fn(c).ok_or_else(undefined)?),
        (Buffer::Bool(x), Buffer::Bool(u)) => plan.run(x, u, bool_fn(c).ok_or_else(undefined)?),
        _ => {
            return Err(format!(
                "the updates ({}) and the operand ({}) differ in dtype",
                upd.dtype(),
                a.dtype()
            ))
        }
    })
}

/// The targets of a scatter: each batch position's base (or `None`: skipped) and the walk
/// over the updates.
struct Plan {
    bases: Vec<Option<usize>>,
    walk: Walk,
}

impl Plan {
    /// Combines every update into a copy of `x`, in the updates' row-major order.
    fn run<T: Elem>(mut self, x: &[T], upd: &[T], f: fn(T, T) -> T) -> Buffer {
        let mut out = x.to_vec();
        for &u in upd {
            if let Some(base) = self.bases[self.walk.batch] {
                let t = &mut out[base + self.walk.offset];
                *t = f(*t, u);
            }
            self.walk.advance();
        }
        T::into_buffer(out)
    }
}

/// `replace` for any dtype.
fn replace<T>(_current: T, update: T) -> T {
    update
}

/// The combiner on floats: the elementwise ops' semantics (NaN-propagating max/min).
fn float_fn<T: Float>(c: ScatterCombine) -> Option<fn(T, T) -> T> {
    use ScatterCombine::*;
    Some(match c {
        Replace => replace,
        Add => |a, b| a + b,
        Mul => |a, b| a * b,
        Max => fmax::<T>,
        Min => fmin::<T>,
        And | Or => return None,
    })
}

/// The combiner on integers: wrapping `add`/`mul`, as the elementwise ops.
fn int_fn<T: Int>(c: ScatterCombine) -> Option<fn(T, T) -> T> {
    use ScatterCombine::*;
    Some(match c {
        Replace => replace,
        Add => T::add,
        Mul => T::mul,
        Max => Ord::max,
        Min => Ord::min,
        And => T::and,
        Or => T::or,
    })
}

/// The combiner on bools: logical `and`/`or` (the typing rule allows nothing else).
fn bool_fn(c: ScatterCombine) -> Option<fn(bool, bool) -> bool> {
    use ScatterCombine::*;
    Some(match c {
        Replace => replace,
        And => |a, b| a & b,
        Or => |a, b| a | b,
        Add | Mul | Max | Min => return None,
    })
}
