"""Exports small JAX programs built on gather and scatter as XLA HLO text, with their
inputs and JAX's own outputs as .npy (tests/indexing.rs compares Kiln with them).

    /tmp/jaxenv/bin/python crates/hlo/tests/data/indexing/export_jax.py

writes NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy beside this script (outputs in the
order of the ROOT tuple, flattened) and JAX_VERSION. The HLO is what
`jax.jit(f, keep_unused=True).lower(*args).compiler_ir('hlo').as_hlo_text()` prints
(`keep_unused`: every input stays a parameter, numbered as the .npy files are). The
generated files are committed: `cargo test` needs no Python.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))


def embedding(table, ids):
    """An embedding lookup; some ids are out of range (XLA clamps them)."""
    return table[ids]


def embedding_grad(table, ids, ct):
    """The gradient of an embedding lookup: scatter-add of rows, with duplicate ids."""
    _, vjp = jax.vjp(lambda t: t[ids], table)
    return vjp(ct)[0]


def take_along(x, idx):
    """take_along_axis: gather with a batching pair (operand_batching_dims)."""
    return jnp.take_along_axis(x, idx, axis=1)


def take_along_grad(x, idx, ct):
    """Its gradient: scatter-add with a batching pair (input_batching_dims)."""
    _, vjp = jax.vjp(lambda x: jnp.take_along_axis(x, idx, axis=1), x)
    return vjp(ct)[0]


def at_updates(x, i, u):
    """.at[].set / .add / .max / .min / .mul with duplicate and out-of-range indices
    (dropped, as JAX's default mode for updates)."""
    return (
        x.at[i].set(u),
        x.at[i].add(u),
        x.at[i].max(u),
        x.at[i].min(u),
        x.at[i].multiply(u),
    )


def windows(x, starts):
    """lax.gather of 2x3 windows at (row, col) starts, some out of range (clamped)."""
    dn = jax.lax.GatherDimensionNumbers(
        offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1)
    )
    return jax.lax.gather(
        x, starts, dn, slice_sizes=(2, 3), mode=jax.lax.GatherScatterMode.CLIP
    )


def scatter_windows(x, starts, u):
    """lax.scatter_add of 2-element windows, some partly out of range: XLA skips such a
    window whole (PROMISE_IN_BOUNDS: the scatter exactly as XLA defines it, no masking)."""
    dn = jax.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,)
    )
    mode = jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS
    return jax.lax.scatter_add(x, starts, u, dn, mode=mode)


def vmapped(x, i):
    """vmap of a row lookup: JAX writes the batch as a batching pair."""
    return jax.vmap(lambda x, i: x[i])(x, i)


def programs(rng):
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {
        "embedding": (embedding, [f(10, 4), np.array([[1, 9, 3], [12, -13, 0]], np.int32)]),
        "embedding_grad": (
            embedding_grad,
            [f(6, 3), np.array([[1, 4, 1], [1, 0, 4]], np.int32), f(2, 3, 3)],
        ),
        "take_along": (take_along, [f(3, 5), np.array([[4, 0], [1, 1], [2, 3]], np.int32)]),
        "take_along_grad": (
            take_along_grad,
            [f(3, 5), np.array([[4, 4, 0], [1, 1, 1], [2, 3, 2]], np.int32), f(3, 3)],
        ),
        "at_updates": (
            at_updates,
            [f(6), np.array([1, 3, 1, 9, 1, 0], np.int32), f(6)],
        ),
        "windows": (windows, [f(4, 5), np.array([[0, 0], [3, 4], [-1, 2], [1, 1]], np.int32)]),
        "scatter_windows": (
            scatter_windows,
            [f(5), np.array([[-1], [3], [4], [2]], np.int32), f(4, 2)],
        ),
        "vmapped": (vmapped, [f(2, 5, 3), np.array([[1, 4], [0, 0]], np.int32)]),
    }


def main():
    for name, (fn, args) in programs(np.random.default_rng(7)).items():
        jit = jax.jit(fn, keep_unused=True)
        text = jit.lower(*args).compiler_ir("hlo").as_hlo_text()
        with open(os.path.join(OUT, name + ".hlo"), "w") as out:
            out.write(text)
        for k, a in enumerate(args):
            np.save(os.path.join(OUT, f"{name}.in{k}.npy"), np.asarray(a))
        outs = jax.tree_util.tree_leaves(jit(*args))
        for k, o in enumerate(outs):
            np.save(os.path.join(OUT, f"{name}.out{k}.npy"), np.asarray(o))
        print(f"{name}: {len(args)} inputs, {len(outs)} outputs")
    with open(os.path.join(OUT, "JAX_VERSION"), "w") as out:
        out.write(f"jax {jax.__version__}, numpy {np.__version__}\n")


if __name__ == "__main__":
    main()
