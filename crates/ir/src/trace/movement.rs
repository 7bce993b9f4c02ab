//! Tracer methods of the data-movement ops (`reverse`, `dynamic_slice`, …), kept apart from
//! the arithmetic ones in [`super`].

use super::Tracer;
use crate::op::Op;

impl Tracer {
    /// Reverses the order of elements along each of `dims` (XLA's `Rev`, `jnp.flip`).
    pub fn reverse(&self, dims: &[usize]) -> Tracer {
        let op = Op::Reverse {
            dims: dims.to_vec(),
        };
        self.record(op, &[self], None)
    }

    /// The window of `sizes` starting at the scalar integer tracers `starts` (one per
    /// dimension), clamped into range as XLA does (`lax.dynamic_slice`).
    pub fn dynamic_slice(&self, starts: &[&Tracer], sizes: &[usize]) -> Tracer {
        let mut args = vec![self];
        args.extend_from_slice(starts);
        let op = Op::DynamicSlice {
            sizes: sizes.to_vec(),
        };
        self.record(op, &args, None)
    }

    /// `self` with the window at `starts` (clamped as XLA does) replaced by `update`
    /// (`lax.dynamic_update_slice`).
    pub fn dynamic_update_slice(&self, update: &Tracer, starts: &[&Tracer]) -> Tracer {
        let mut args = vec![self, update];
        args.extend_from_slice(starts);
        self.record(Op::DynamicUpdateSlice, &args, None)
    }

    /// XLA's full `Pad` with `value` (a scalar of this dtype): `interior` elements between
    /// neighbours, `low`/`high` at the edges, negative ones removing elements
    /// (`lax.pad`). Without interior or negative padding this is [`Tracer::pad`].
    pub fn pad_general(&self, low: &[i64], high: &[i64], interior: &[usize], value: f64) -> Tracer {
        let v = self.scalar_like(value);
        let op = Op::pad(low.to_vec(), high.to_vec(), interior.to_vec());
        self.record(op, &[self, &v], None)
    }
}
