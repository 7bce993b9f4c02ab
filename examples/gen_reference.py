#!/usr/bin/env python3
"""Generates the inputs and numpy reference outputs of the example programs.

Run from the repository root: `python3 examples/gen_reference.py`. Writes
examples/data/<example>/<param>.npy (float32 inputs) and expected.npy (the output computed
in float64 by numpy, rounded to float32). Tests read only these files; numpy is not needed
to run them.
"""
import os
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def layernorm(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def mlp_forward(x, w1, b1, w2, b2):
    return softmax(np.maximum(x @ w1 + b1, 0.0) @ w2 + b2)


def main():
    rng = np.random.default_rng(20261122)
    f32 = lambda *shape, scale=1.0: (rng.standard_normal(shape) * scale).astype(np.float32)
    examples = {
        "softmax": (softmax, {"x": f32(16, 64, scale=3.0)}),
        "gelu": (gelu, {"x": f32(16, 64, scale=2.0)}),
        "layernorm": (layernorm, {"x": f32(16, 64, scale=2.0), "gamma": f32(64), "beta": f32(64)}),
        "mlp_forward": (
            mlp_forward,
            {"x": f32(8, 64), "w1": f32(64, 32, scale=0.2), "b1": f32(32, scale=0.1),
             "w2": f32(32, 10, scale=0.2), "b2": f32(10, scale=0.1)},
        ),
    }
    for name, (fn, inputs) in examples.items():
        out_dir = os.path.join(ROOT, name)
        os.makedirs(out_dir, exist_ok=True)
        for param, value in inputs.items():
            np.save(os.path.join(out_dir, f"{param}.npy"), value)
        expected = fn(*(v.astype(np.float64) for v in inputs.values()))
        np.save(os.path.join(out_dir, "expected.npy"), expected.astype(np.float32))
        print(f"{name}: {expected.shape}")


if __name__ == "__main__":
    main()
