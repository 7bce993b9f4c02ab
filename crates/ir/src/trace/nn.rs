//! Tracer methods of common neural-network building blocks (`relu`, `gelu`, `softmax`,
//! `layer_norm`), composed from the primitive ops as `jax.nn` composes them.

use super::Tracer;

impl Tracer {
    /// Rectified linear unit `max(x, 0)`.
    pub fn relu(&self) -> Tracer {
        self.maximum(&self.scalar_like(0.0))
    }

    /// GELU, tanh approximation (as `jax.nn.gelu(approximate=True)`).
    pub fn gelu(&self) -> Tracer {
        let x3 = &(self * self) * self;
        let inner = &(self + &(&x3 * 0.044715)) * 0.797_884_560_802_865_4;
        &(self * 0.5) * &(&inner.tanh() + 1.0)
    }

    /// Softmax along `axis`, stabilised by subtracting the maximum.
    pub fn softmax(&self, axis: usize) -> Tracer {
        let m = self.keepdims(&self.reduce_max(&[axis]), &[axis]);
        let e = (self - &m).exp();
        let s = self.keepdims(&e.sum(&[axis]), &[axis]);
        &e / &s
    }

    /// Log-softmax along `axis`.
    pub fn log_softmax(&self, axis: usize) -> Tracer {
        let m = self.keepdims(&self.reduce_max(&[axis]), &[axis]);
        let d = self - &m;
        let s = self.keepdims(&d.exp().sum(&[axis]), &[axis]);
        &d - &s.log()
    }

    /// Layer normalisation over `axis` (no scale/offset): `(x - mean) / sqrt(var + eps)`.
    pub fn layer_norm(&self, axis: usize, eps: f64) -> Tracer {
        let mean = self.keepdims(&self.mean(&[axis]), &[axis]);
        let d = self - &mean;
        let var = self.keepdims(&(&d * &d).mean(&[axis]), &[axis]);
        &d * &(&var + eps).rsqrt()
    }
}
