"""Exports JAX programs with control flow (while, conditional) as XLA HLO text, with their
inputs and JAX's own outputs as .npy, for tests/control_flow.rs.

    python3 -m venv /tmp/jax && /tmp/jax/bin/pip install jax numpy
    /tmp/jax/bin/python crates/hlo/tests/data/control/export.py

writes NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy beside this script (outputs in the
order of the ROOT tuple, flattened). The generated files are committed: `cargo test` needs
no Python. The HLO is what `jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()`
prints, as a user would get it: `lax.fori_loop` and `lax.scan` become `while` (the carried
tuple flattened by Kiln), `lax.cond` and `lax.switch` become `conditional` with
`branch_computations`.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = os.path.dirname(os.path.abspath(__file__))


def fori(x):
    """A fori_loop whose body reads the loop counter."""

    def body(i, s):
        return s * 0.5 + jnp.sin(s) + i.astype(jnp.float32)

    return lax.fori_loop(0, 5, body, x)


def gru_scan(xs, h0, wz, uz, wr, ur, wh, uh):
    """A hand-written GRU cell scanned over time (lax.scan): final state and every state."""

    def cell(h, x):
        z = jax.nn.sigmoid(x @ wz + h @ uz)
        r = jax.nn.sigmoid(x @ wr + h @ ur)
        c = jnp.tanh(x @ wh + (r * h) @ uh)
        h = (1.0 - z) * h + z * c
        return h, h

    return lax.scan(cell, h0, xs)


def cond(x, y):
    """lax.cond on a data-dependent predicate, two operands, two results."""
    return lax.cond(
        jnp.sum(x) > 0,
        lambda a, b: (a * b, jnp.exp(a)),
        lambda a, b: (a - b, jnp.tanh(b)),
        x,
        y,
    )


def switch(i, x):
    """lax.switch over three branches; JAX clamps the index into range itself."""
    return lax.switch(
        i,
        [lambda v: v + 1.0, lambda v: v * v, lambda v: jnp.cos(v)],
        x,
    )


def nested(x):
    """A loop whose body holds a cond and an inner loop."""

    def inner(j, s):
        return s + 0.25 * j.astype(jnp.float32)

    def body(i, s):
        s = lax.cond(i % 2 == 0, lambda v: v * 1.5, lambda v: v - 1.0, s)
        return lax.fori_loop(0, 3, inner, s)

    return lax.fori_loop(0, 4, body, x)


def programs(rng):
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {
        "fori": (fori, [f(2, 3)]),
        "gru_scan": (
            gru_scan,
            [f(5, 2, 3), f(2, 4), f(3, 4), f(4, 4), f(3, 4), f(4, 4), f(3, 4), f(4, 4)],
        ),
        "cond_true": (cond, [np.abs(f(4)), f(4)]),
        "cond_false": (cond, [-np.abs(f(4)), f(4)]),
        "switch_1": (switch, [np.int32(1), f(3)]),
        "switch_clamped": (switch, [np.int32(7), f(3)]),
        "nested": (nested, [f(3)]),
    }


def main():
    for name, (fn, args) in programs(np.random.default_rng(1)).items():
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
