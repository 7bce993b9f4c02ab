"""Exports small JAX programs over float16 and bfloat16 as XLA HLO text, with their inputs
and JAX's own (XLA:CPU's) outputs as .npy (tests/half_dtypes.rs imports each, runs it on
Kiln's interpreter and compares).

    /tmp/jaxenv/bin/python crates/hlo/tests/data/half_dtypes/export.py

writes NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy beside this script (outputs in the
order of the ROOT tuple, flattened) and JAX_VERSION. float16 arrays are saved as numpy
writes them (`<f2`), bfloat16 ones as ml_dtypes' descriptor (`<V2`: two raw bytes; load
them back with `np.load(p).view(ml_dtypes.bfloat16)`). 64-bit types are on
(`jax_enable_x64`) for the f64 conversions. The generated files are committed: `cargo test`
needs no Python.
"""

import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = os.path.dirname(os.path.abspath(__file__))


def elementwise(a, b):
    """Each op computes in f32 and rounds its result once (XLA:CPU)."""
    return (
        a + b,
        a - b,
        a * b,
        a / b,
        jnp.maximum(a, b),
        jnp.minimum(a, b),
        -a,
        jnp.abs(a),
        jnp.exp(a),
        jnp.log(jnp.abs(a)),
        jnp.tanh(a),
        jax.nn.sigmoid(a),
        jnp.sqrt(jnp.abs(a)),
        lax.rsqrt(jnp.abs(b)),
        jnp.sin(a),
        jnp.cos(b),
        jnp.floor(a),
        jnp.ceil(b),
        lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN),
        jnp.sign(b),
        a < b,
        a == b,
        jnp.where(a > b, a, b),
        a * b + a,
    )


def conversions(a, x, d, i):
    """convert: f32 and f64 to the 16-bit format round to nearest even (f64 -> bf16 through
    f32), 16-bit floats to f32/f64/ints/the other format, ints to 16-bit floats."""
    t = a.dtype
    return (
        x.astype(t),
        d.astype(t),
        i.astype(t),
        a.astype(jnp.float32),
        a.astype(jnp.float64),
        a.astype(jnp.int32),
        a.astype(jnp.uint8),
        a.astype(jnp.bfloat16 if t == jnp.float16 else jnp.float16),
        a != 0,
    )


def reductions(x):
    """Reductions and windows whose region is 16-bit add / max (XLA:CPU's own order)."""
    zero = jnp.zeros((), x.dtype)
    return (
        lax.reduce(x, zero, lax.add, (1,)),
        lax.reduce(x, jnp.array(-jnp.inf, x.dtype), lax.max, (0,)),
        jnp.sum(x, axis=0),
        jnp.mean(x, axis=1),
        lax.reduce_window(x, jnp.array(-jnp.inf, x.dtype), lax.max, (2, 2), (1, 1), "VALID"),
        jnp.sort(x, axis=1),
        jnp.argmax(x, axis=1),
    )


def products(a, b, k):
    """dot_general and convolution on 16-bit operands (f32 accumulation), also with an f32
    result (`preferred_element_type`)."""
    img = a.reshape(1, 1, 8, 16)
    return (
        a @ b,
        lax.dot(a, b, preferred_element_type=jnp.float32),
        lax.conv(img, k, (1, 1), "SAME"),
    )


def layer(x, w, g):
    """A dense layer, GELU and a layer norm, all in the 16-bit dtype."""
    h = jax.nn.gelu(x @ w, approximate=True)
    m = jnp.mean(h, axis=-1, keepdims=True)
    v = jnp.mean((h - m) ** 2, axis=-1, keepdims=True)
    return ((h - m) * lax.rsqrt(v + 1e-5) * g, jax.nn.softmax(h, axis=-1))


def traced(x, a, b):
    """Kiln's tracer's compositions (`crates/ir/src/trace/nn.rs`, `Tracer::mean`), written in
    jax as the tracer writes them: `jnp.mean` (f32 sum and division, one rounding), layer
    norm with `lax.rsqrt`, softmax, the tanh GELU in the tracer's order of operations, and
    `bf16` math converted straight to f32 (`tests/half_dtypes.rs`, `tracer_composes_as_jax`)."""
    m = jnp.mean(x, axis=1, keepdims=True)
    d = x - m
    v = jnp.mean(d * d, axis=1, keepdims=True)
    x3 = x * x * x
    inner = (x + x3 * 0.044715) * 0.7978845608028654
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    return (
        jnp.mean(x, axis=1),
        d * lax.rsqrt(v + 1e-5),
        e / jnp.sum(e, axis=1, keepdims=True),
        (x * 0.5) * (jnp.tanh(inner) + 1.0),
        (a * b).astype(jnp.float32),
        jnp.tanh(a).astype(jnp.float32),
    )


def programs(t, name):
    r = np.random.default_rng(37 if t == np.float16 else 38)
    # No bfloat16 subnormals (below 1.2e-38): XLA:CPU runs with denormals flushed to zero
    # (FTZ/DAZ), Kiln keeps them (IEEE), so they would differ by design. float16's
    # subnormals (6e-8) are normal f32 values and agree.
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 65504.0, 1e-7, 6e-8, 0.1, -2.5,
               3.3e38, 1e-30, 7.0, -126.75]
    n = 64
    with np.errstate(over="ignore"):  # 3.3e38 overflows float16 to inf on purpose
        a = np.concatenate([np.array(special), r.normal(0, 3, n - len(special))]).astype(t)
        b = np.concatenate([np.array(special[::-1]), r.normal(0, 3, n - len(special))]).astype(t)
    x32 = np.concatenate([np.array(special, np.float32),
                          r.normal(0, 100, n - len(special)).astype(np.float32),
                          (np.float32(1) + np.arange(16, dtype=np.float32) * 2**-12)])
    d64 = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, 0.1, 1e300, -1e-300, 65519.9,
                    3.3e38, np.nan], np.float64)
    ints = np.array([0, 1, -1, 2049, 65519, 65520, 2**24 + 3, 2**30 + 2**22 + 1], np.int32)
    mat = r.normal(0, 1, (8, 16)).astype(t)
    mat2 = r.normal(0, 1, (16, 12)).astype(t)
    kern = r.normal(0, 0.5, (4, 1, 3, 3)).astype(t)
    red = r.normal(0, 2, (24, 40)).astype(t)
    return {
        f"elementwise_{name}": (elementwise, [a, b]),
        f"conversions_{name}": (conversions, [a, x32, d64, ints]),
        f"reductions_{name}": (reductions, [red]),
        f"products_{name}": (products, [mat, mat2, kern]),
        f"layer_{name}": (layer, [mat, mat2, r.normal(1, 0.1, (12,)).astype(t)]),
        f"traced_{name}": (traced, [r.normal(0.5, 2, (23, 67)).astype(t), a, b]),
    }


def main():
    progs = {}
    progs.update(programs(np.float16, "f16"))
    progs.update(programs(ml_dtypes.bfloat16, "bf16"))
    for name, (fn, args) in progs.items():
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
        out.write(f"jax {jax.__version__}, ml_dtypes {ml_dtypes.__version__}, "
                  f"numpy {np.__version__}\n")


if __name__ == "__main__":
    main()
