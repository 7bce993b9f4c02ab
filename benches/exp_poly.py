"""Fits the polynomial of Kiln's f32 `exp` (crates/math/src/exp.rs, EXP_POLY_F32).

exp(r) = 1 + r + r^2 P(r) on |r| <= ln2/2, P of degree 4. The fit minimises the largest
error of r^2 P(r) relative to e^r (a Lawson-reweighted least squares on Chebyshev nodes,
which converges to the weighted minimax polynomial), then rounds the coefficients to f32
and reports the relative error they keep. Needs numpy only:

    python3 benches/exp_poly.py

The function built on it is checked on every f32 input by
`cargo run -p kiln-math --release --example exhaustive exp tanh erf`, and on a sample by the
accuracy test in crates/math/tests/accuracy.rs.
"""

import numpy as np

DEGREE = 4
NODES = 4000
# A hair beyond ln2/2: round-to-nearest k leaves |r| slightly above it at the ends.
HALF_LN2 = np.log(2) / 2 * 1.0005


def main():
    k = np.arange(NODES)
    r = HALF_LN2 * np.cos(np.pi * (k + 0.5) / NODES)
    small = np.abs(r) < 1e-3
    rs = np.where(small, 1.0, r)
    g = np.where(small, 0.5 + r / 6 + r * r / 24 + r**3 / 120 + r**4 / 720, (np.expm1(rs) - rs) / (rs * rs))
    w = r * r / np.exp(r)
    v = np.vander(r, DEGREE + 1, increasing=True)
    weights = np.ones(NODES) / NODES
    best = None
    for _ in range(300):
        sw = np.sqrt(weights)
        c, *_ = np.linalg.lstsq(v * (w * sw)[:, None], g * w * sw, rcond=None)
        err = np.abs((v @ c - g) * w)
        if best is None or err.max() < best[0]:
            best = (err.max(), c)
        weights = weights * err
        weights /= weights.sum()
    c32 = best[1].astype(np.float32)
    kept = np.abs((v @ c32.astype(np.float64) - g) * w).max()
    print(f"relative error 2^{np.log2(best[0]):.2f} (f64 coefficients), 2^{np.log2(kept):.2f} (f32)")
    for x in c32:
        print(f"    f32::from_bits({int(x.view(np.uint32)):#010x}) as f64,  // {float(x)!r}")


if __name__ == "__main__":
    main()
