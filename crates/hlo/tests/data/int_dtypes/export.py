"""Exports small JAX programs over the integer dtypes uint8, int8, int16, uint16 and uint64
as XLA HLO text, with their inputs and JAX's own outputs as .npy (tests/int_dtypes.rs
imports each, runs it on Kiln's interpreter and compares bit for bit).

    /tmp/jaxenv/bin/python crates/hlo/tests/data/int_dtypes/export.py

writes NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy beside this script (outputs in the
order of the ROOT tuple, flattened) and JAX_VERSION. 64-bit types are on
(`jax_enable_x64`), as JAX needs for uint64. The HLO is what
`jax.jit(f, keep_unused=True).lower(*args).compiler_ir('hlo').as_hlo_text()` prints. The
generated files are committed: `cargo test` needs no Python.
"""

import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = os.path.dirname(os.path.abspath(__file__))


def casts(x, i):
    """XLA's convert: float -> int truncates and saturates (NaN -> 0); int -> int wraps."""
    return (
        x.astype(jnp.uint8),
        x.astype(jnp.int8),
        x.astype(jnp.int16),
        x.astype(jnp.uint16),
        x.astype(jnp.uint64),
        i.astype(jnp.uint8),
        i.astype(jnp.int8),
        i.astype(jnp.uint16),
        i.astype(jnp.uint64).astype(jnp.float32),
        i.astype(jnp.int16).astype(jnp.float64),
        (i.astype(jnp.uint8) != 0),
    )


def arithmetic(a, b, c, d):
    """Wrapping add/mul, XLA's division (x/0, MIN/-1), shifts by >= the width, bit
    counts, and reductions that wrap (uint8 a, b; int8 c, d)."""
    return (
        a + b,
        a * b,
        lax.div(a, b),
        lax.rem(a, b),
        c - d,
        lax.div(c, d),
        lax.rem(c, d),
        lax.shift_left(a, b),
        lax.shift_right_logical(c, d),
        lax.shift_right_arithmetic(c, d),
        lax.population_count(c),
        lax.clz(a),
        jnp.sum(a, dtype=jnp.uint8),
        jnp.max(c),
        jnp.minimum(c, d),
    )


def sixteen(x, y):
    """int16 and uint16: sort, argsort, a wrapping cumulative product and compare."""
    return (
        jnp.sort(x),
        jnp.argsort(x),
        jnp.sort(y)[::-1],
        jnp.prod(x, dtype=jnp.int16),
        x < y.astype(jnp.int16),
        jnp.where(x > 0, y, jnp.uint16(7)),
    )


def threefry(seed):
    """JAX's Threefry: the key's data, 64-bit random bits built from 32-bit halves, and
    floats made from them."""
    key = jax.random.PRNGKey(seed)
    k1, k2 = jax.random.split(key)
    return (
        jax.random.key_data(k1),
        jax.random.bits(k2, (5,), dtype=jnp.uint64),
        jax.random.bits(k1, (3,), dtype=jnp.uint8),
        jax.random.uniform(k2, (4,), dtype=jnp.float64),
    )


def bitcasts(x, b, w):
    """bitcast_convert: f32 -> u8[..,4] (a new minor dimension, little-endian), u8[..,4]
    -> f32, u64 -> u32[..,2], i16 <-> u16."""
    return (
        lax.bitcast_convert_type(x, jnp.uint8),
        lax.bitcast_convert_type(b, jnp.float32),
        lax.bitcast_convert_type(w, jnp.uint32),
        lax.bitcast_convert_type(lax.bitcast_convert_type(w, jnp.int16), jnp.uint16),
    )


def programs():
    special = [np.nan, np.inf, -np.inf, -1.5, -0.5, 0.0, 0.99, 127.5, 128.0, 255.9, 300.7,
               -129.0, 65535.5, 70000.0, -40000.0, 1e20]
    return {
        "casts": (
            casts,
            [
                np.array(special, np.float32),
                np.array([-1, 0, 255, 256, -129, 65535, 65536, 2**31 - 1, -2**31, 1 << 40,
                          -(1 << 63), (1 << 63) - 1, 7, -7, 32768, -32769], np.int64),
            ],
        ),
        "arithmetic": (
            arithmetic,
            [
                np.array([250, 7, 0, 255, 128, 9], np.uint8),
                np.array([10, 0, 3, 255, 8, 9], np.uint8),
                np.array([-128, 7, -7, 127, -1, 64], np.int8),
                np.array([-1, 0, 2, 8, 9, -2], np.int8),
            ],
        ),
        "sixteen": (
            sixteen,
            [
                np.array([5, -32768, 32767, -1, 0, 5, 300], np.int16),
                np.array([65535, 0, 1, 32768, 5, 7, 300], np.uint16),
            ],
        ),
        "threefry": (threefry, [np.array(42, np.int64)]),
        "bitcasts": (
            bitcasts,
            [
                np.array([1.0, -2.5, np.nan], np.float32),
                np.array([[0, 0, 128, 63], [0, 0, 32, 192]], np.uint8),
                np.array([0x0123456789ABCDEF, 2**64 - 1], np.uint64),
            ],
        ),
    }


def main():
    for name, (fn, args) in programs().items():
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
