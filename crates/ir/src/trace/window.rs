//! Tracer methods of the windowed ops (`convolution`, `reduce_window`,
//! `select_and_scatter`), kept apart from the arithmetic ones in [`super`].

use super::Tracer;
use crate::op::{CompareDir, Op, ReduceKind};
use crate::window::{Convolution, WindowDim};

impl Tracer {
    /// XLA's general convolution of `self` (the input) with `kernel`
    /// (`lax.conv_general_dilated`); `conv` says which dimension plays which role.
    pub fn convolution(&self, kernel: &Tracer, conv: Convolution) -> Tracer {
        self.record(Op::Convolution(Box::new(conv)), &[self, kernel], None)
    }

    /// Each window's elements combined with `kind`, starting from `init` (a scalar of this
    /// dtype): `lax.reduce_window` with add / max / min / mul (pooling, cumulative sums).
    pub fn reduce_window(&self, kind: ReduceKind, init: f64, window: &[WindowDim]) -> Tracer {
        let v = self.scalar_like(init);
        let op = Op::ReduceWindow {
            kind,
            window: window.to_vec(),
        };
        self.record(op, &[self, &v], None)
    }

    /// XLA's `SelectAndScatter` (the gradient of a max pool): in each window the element
    /// chosen by `select` receives that window's `source` value, combined with `scatter`
    /// into a result of this type that starts at `init` everywhere.
    pub fn select_and_scatter(
        &self,
        source: &Tracer,
        select: CompareDir,
        scatter: ReduceKind,
        init: f64,
        window: &[WindowDim],
    ) -> Tracer {
        let v = self.scalar_like(init);
        let op = Op::SelectAndScatter {
            select,
            scatter,
            window: window.to_vec(),
        };
        self.record(op, &[self, source, &v], None)
    }
}
