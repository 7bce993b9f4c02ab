"""Exports small JAX programs as XLA HLO text, with inputs and JAX's own outputs as .npy.

    python3 -m venv /tmp/jax && /tmp/jax/bin/pip install jax numpy
    /tmp/jax/bin/python crates/hlo/tests/data/export.py

writes crates/hlo/tests/data/real/NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy (outputs in
the order of the ROOT tuple, flattened), which tests/real.rs imports, runs on Kiln's
interpreter and compares. The generated files are committed: `cargo test` needs no Python.
The HLO is what `jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()` prints, as a
user would get it.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "real")


def mlp(x, w1, b1, w2, b2):
    """A two-layer MLP forward pass: logits and their mean (a tuple result)."""
    h = jax.nn.relu(x @ w1 + b1)
    y = jnp.tanh(h @ w2 + b2)
    return y, jnp.mean(y)


def mlp_grad(x, t, w1, b1, w2, b2):
    """The gradient of a squared-error loss through the MLP (jax.grad)."""

    def loss(params):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - t) ** 2)

    return jax.grad(loss)((w1, b1, w2, b2))


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layer_norm(x, g, b):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def reductions(x):
    """Reductions whose init is not the identity."""
    s = lax.reduce(x, np.float32(3.0), lax.add, (1,))
    m = jnp.max(x, axis=0, initial=0.25)
    p = lax.reduce(x, np.float32(-1.0), lax.min, (0, 1))
    return s, m, p


def batched_dot(a, b):
    """einsum with a batch dimension, and a logistic on top."""
    return jax.nn.sigmoid(jnp.einsum("bij,bjk->bik", a, b))


def programs(rng):
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {
        "mlp": (mlp, [f(4, 8), f(8, 16), f(16), f(16, 3), f(3)]),
        "mlp_grad": (mlp_grad, [f(4, 8), f(4, 3), f(8, 16), f(16), f(16, 3), f(3)]),
        "softmax": (softmax, [f(4, 8)]),
        "layer_norm": (layer_norm, [f(4, 8), f(8), f(8)]),
        "reductions": (reductions, [f(3, 5)]),
        "batched_dot": (batched_dot, [f(2, 3, 4), f(2, 4, 5)]),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (fn, args) in programs(np.random.default_rng(0)).items():
        text = jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()
        with open(os.path.join(OUT, name + ".hlo"), "w") as out:
            out.write(text)
        for k, a in enumerate(args):
            np.save(os.path.join(OUT, f"{name}.in{k}.npy"), np.asarray(a))
        outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        for k, o in enumerate(outs):
            np.save(os.path.join(OUT, f"{name}.out{k}.npy"), np.asarray(o))
        print(f"{name}: {len(args)} inputs, {len(outs)} outputs")
    with open(os.path.join(OUT, "VERSION"), "w") as out:
        out.write(f"jax {jax.__version__}, numpy {np.__version__}\n")


if __name__ == "__main__":
    main()
