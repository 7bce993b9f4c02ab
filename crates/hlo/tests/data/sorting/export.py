"""Exports the HLO text and reference outputs of the sorting / argmax / elementwise tests.

Run from the repository root with JAX installed (any recent 0.x):
    python crates/hlo/tests/data/sorting/export.py [NAME ...]   # every case, or these
Writes, next to this script, for each case NAME: NAME.hlo (JAX's printing style:
`jax.jit(f).lower(*args).as_text(dialect='hlo')`) and NAME.ref with the inputs and JAX's
outputs, one per line: `in|out DTYPE SHAPE VALUES` (SHAPE like `4,7` or `-` for a scalar;
f32 values as their bit patterns in hex, so NaNs and -0 survive). `cargo test -p kiln-hlo`
reads them; it never runs Python.
"""
import os
import numpy as np
import jax, jax.numpy as jnp

jax.config.update("jax_enable_x64", False)
HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(34)

nan = np.float32(np.nan)
x = rng.standard_normal((4, 7)).astype(np.float32)
x[0, 3] = nan; x[1, 1] = x[1, 4] = 2.5; x[2, 0] = -0.0; x[2, 5] = 0.0; x[3, 2] = nan
x[3, 6] = -nan; x[0, 0] = np.inf; x[1, 6] = -np.inf
ints = rng.integers(-50, 50, (4, 7)).astype(np.int32); ints[:, 2] = ints[:, 5]
shifts = np.array([0, 1, 5, 31, 32, 33, -1, 100], np.int32)
words = np.array([1, -8, 0x12345678, -1, 7, 3, -2**31, 255], np.int32)
u = rng.integers(0, 2**32, (8,), dtype=np.uint64).astype(np.uint32)
f = np.concatenate([rng.uniform(-10, 10, 12), [0.5, -0.5, 1.5, -2.5, 0.0, -0.0, 1e30, -1e-30]]).astype(np.float32)
g = np.concatenate([rng.uniform(-10, 10, 12), [1.0, -1.0, 0.0, -0.0, 0.0, 3.0, -1e30, 2.0]]).astype(np.float32)

# reduce_precision: signed zeros, infinities, NaNs with payloads (quiet and signalling, both
# signs), subnormals, the f16 range's edges (65504, 65520: rounds to inf; 2^-14 and below),
# rounding ties and random values over many magnitudes.
rp_bits = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fc12345, 0x7f800001,
           0xffa00001, 0x00000001, 0x807fffff, 0x00800000, 0x38800000, 0x387fffff, 0x33800000,
           0x477fe000, 0x477ff000, 0x477fefff, 0x7f7fffff, 0x3f808000, 0x3f818000, 0x3f80c000,
           0x3f804000, 0x3fc00000, 0x40490fdb]
rp = np.concatenate([np.array(rp_bits, np.uint32).view(np.float32),
                     (rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40)).astype(np.float32)])
rp_half = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 1e-7, -3e-5, 6.1035e-5, 0.1, 1.0 + 2**-9, 3.0e38, 1e-39], np.float32),
                          rng.standard_normal(24).astype(np.float32) * 100])

# Division by a broadcast, a scalar, a constant (XLA:CPU multiplies by the reciprocal) and
# by a computed array (a correctly rounded division).
dv_a = rng.uniform(0.1, 10, (16, 33)).astype(np.float32)
dv_c = rng.uniform(0.5, 9, (16, 1)).astype(np.float32)
dv_b = rng.uniform(0.5, 9, (16, 33)).astype(np.float32)

# bf16 results converted to f32 (XLA:CPU computes the last op in f32), and the same on f16
# (rounded) and a bf16 result kept in bf16 (rounded).
bb_x = rng.uniform(1, 2, (64,)).astype(np.float32)
bb_y = (rng.uniform(1, 2, (64,)) * 1e-3).astype(np.float32)
bb_z = rng.uniform(1, 2, (64,)).astype(np.float32)
bb_a = rng.uniform(-1, 1, (8, 48)).astype(np.float32)
bb_b = rng.uniform(-1, 1, (48, 5)).astype(np.float32)
bb_img = rng.uniform(-1, 1, (1, 6, 6, 3)).astype(np.float32)
bb_w = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)
bb_c = rng.uniform(0.5, 9, (8, 1)).astype(np.float32)


def bf16_boundary(x, y, z, a, b, img, w, c):
    f32, h, bf = jnp.float32, jnp.float16, jnp.bfloat16
    xb, yb, zb = x.astype(bf), y.astype(bf), z.astype(bf)
    conv = jax.lax.conv_general_dilated(img.astype(bf), w.astype(bf), (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return ((xb + yb).astype(f32), (xb * yb * zb).astype(f32), jnp.tanh(xb * yb).astype(f32),
            jnp.dot(a.astype(bf), b.astype(bf)).astype(f32), conv.astype(f32),
            (a.astype(bf) / c.astype(bf)).astype(f32), (xb / 3.0).astype(f32),
            (x.astype(h) + y.astype(h)).astype(f32), jnp.dot(a.astype(h), b.astype(h)).astype(f32),
            ((xb + yb) * zb).astype(f32),
            jax.lax.bitcast_convert_type((xb + yb) * zb, jnp.int16).astype(jnp.int32),
            x.astype(bf).astype(f32))


cases = {
    "argmax_rows": (lambda a: jnp.argmax(a, axis=1), [x]),
    "argmin_cols": (lambda a: jnp.argmin(a, axis=0), [x]),
    "argmax_int": (lambda a: jnp.argmax(a, axis=1), [ints]),
    "sort_rows": (lambda a: jnp.sort(a, axis=1), [x]),
    "argsort_cols": (lambda a: jnp.argsort(a, axis=0), [x]),
    "argsort_int_desc": (lambda a: jnp.argsort(-a, axis=1), [ints]),
    "lexsort_two_keys": (lambda a, b: jax.lax.sort((a, b, jnp.arange(7, dtype=jnp.int32) * jnp.ones((4, 1), jnp.int32)), dimension=1, num_keys=2), [ints % 3, x]),
    "shifts": (lambda a, b: (a << b, a >> b, jax.lax.shift_right_logical(a, b)), [words, shifts]),
    "bits_u32": (lambda a: (jax.lax.population_count(a), jax.lax.clz(a), a >> np.uint32(9), jax.lax.bitcast_convert_type((a >> np.uint32(9)) | np.uint32(0x3f800000), jnp.float32) - 1.0), [u]),
    "float_math": (lambda a, b: (jnp.arctan2(a, b), jnp.cbrt(a), jnp.tan(a), jax.lax.round(a, jax.lax.RoundingMethod.AWAY_FROM_ZERO), jnp.isfinite(a / b), jnp.clip(a, -1.0, 1.0), jax.lax.bitcast_convert_type(a, jnp.int32)), [f, g]),
    "top_k": (lambda a: jax.lax.top_k(a, 3), [x]),
    "top_k_int": (lambda a: jax.lax.top_k(a, 4), [ints]),
    "reduce_precision": (lambda a: tuple(jax.lax.reduce_precision(a, e, m) for e, m in [(5, 10), (8, 7), (4, 3), (2, 0), (8, 0), (11, 30), (8, 23), (6, 1)]), [rp]),
    "reduce_precision_half": (lambda a: (jax.lax.reduce_precision(a.astype(jnp.bfloat16), 5, 4).astype(jnp.float32), jax.lax.reduce_precision(a.astype(jnp.float16), 4, 3).astype(jnp.float32), jax.lax.reduce_precision(a.astype(jnp.float16), 5, 2).astype(jnp.float32)), [rp_half]),
    "division_forms": (lambda a, c, s, b: (a / c, a / s, a / 3.0, a / b, 1.0 / c, jax.nn.softmax(a.astype(jnp.float16), axis=1).astype(jnp.float32)), [dv_a, dv_c, np.float32(3.3), dv_b]),
    "bf16_boundary": (bf16_boundary, [bb_x, bb_y, bb_z, bb_a, bb_b, bb_img, bb_w, bb_c]),
    # lax.rng_bit_generator (Philox, a u64[2] state [key, counter]): 15 and 6 words, the
    # second key's counter wrapping past 2^64, rng_default (Philox on the CPU).
    "rng_bit_generator": (lambda k, j: (
        *jax.lax.rng_bit_generator(k, (3, 5), dtype=jnp.uint32, algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX),
        *jax.lax.rng_bit_generator(j, (6,), dtype=jnp.uint32, algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX),
        *jax.lax.rng_bit_generator(j, (2, 2), dtype=jnp.uint32, algorithm=jax.lax.RandomAlgorithm.RNG_DEFAULT)),
        [np.array([1, 2, 3, 4], np.uint32), np.array([0x9e3779b9, 7, 0xfffffffe, 0xffffffff], np.uint32)]),
    # jax.random.bits / uniform (shifts on u32) also need u64 (Threefry's counters): not
    # yet in Kiln, so not exported here.
}

JITTED = {"division_forms", "bf16_boundary", "rng_bit_generator"}


def line(kind, a):
    a = np.asarray(a)
    shape = ",".join(map(str, a.shape)) or "-"
    if a.dtype == np.float32:
        vals = " ".join("%08x" % v for v in a.view(np.uint32).ravel())
        return "%s f32 %s %s" % (kind, shape, vals)
    names = {np.dtype(np.int32): "i32", np.dtype(np.uint32): "u32", np.dtype(np.bool_): "bool"}
    vals = " ".join(str(int(v)) for v in a.ravel())
    return "%s %s %s %s" % (kind, names[a.dtype], shape, vals)

import sys
for name, (fn, args) in cases.items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]:
        continue
    text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    # The other cases' references are eager (op by op) results; a case in JITTED is
    # compared with the compiled module's, where XLA's simplifier rewrites across ops
    # (a division by a broadcast becomes a product by the reciprocal).
    out = jax.jit(fn)(*args) if name in JITTED else fn(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    with open(os.path.join(HERE, name + ".hlo"), "w") as fh:
        fh.write(text)
    with open(os.path.join(HERE, name + ".ref"), "w") as fh:
        for a in args:
            fh.write(line("in", a) + "\n")
        for o in outs:
            fh.write(line("out", o) + "\n")
    print(name, [np.asarray(o).shape for o in outs])
