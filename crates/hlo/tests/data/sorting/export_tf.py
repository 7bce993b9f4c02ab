"""Exports TensorFlow's `tf.argmax` / `tf.argmin` under `jit_compile=True` (TF's own
`minmax_func` reducer: `>=` / `<=` then the smaller index on ties, so a NaN loses to the
element after it), `tf.math.top_k`, stateless random bits (`rng-bit-generator`), Cholesky factors and triangular solves, and divisions (TensorFlow's XLA:CPU keeps a division by
a broadcast a division, where JAX's makes it a product by the reciprocal; both make a
division by a constant one), in the format of export.py (`NAME.hlo`, `NAME.ref`). The
references are the jitted function's results.

Run from the repository root with TensorFlow installed (2.x):
    python crates/hlo/tests/data/sorting/export_tf.py
"""
import os
import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
nan = np.nan
x = np.array([[1, 3, 3, 0, nan], [nan, 2, 5, 5, 1], [-1, -1, -2, 7, 7],
              [nan, nan, nan, nan, nan], [2, nan, -1, nan, 0], [-0.0, 0.0, -np.inf, np.inf, 0.0]],
             np.float32)
rng = np.random.default_rng(7)
dv_a = rng.uniform(0.1, 10, (16, 33)).astype(np.float32)
dv_c = rng.uniform(0.5, 9, (16, 1)).astype(np.float32)
dv_b = rng.uniform(0.5, 9, (16, 33)).astype(np.float32)
spd = rng.standard_normal((2, 5, 5)).astype(np.float32)
spd = (spd @ np.transpose(spd, (0, 2, 1)) + 5 * np.eye(5, dtype=np.float32)).astype(np.float32)
ints = np.array([[3, -7, 3, 9, 9], [0, 0, 0, 0, 0], [-2, 5, -9, 5, -9]], np.int32)

cases = {
    "tf_argmax_argmin": (lambda a: (tf.argmax(a, axis=1, output_type=tf.int32),
                                    tf.argmin(a, axis=1, output_type=tf.int32),
                                    tf.argmax(a, axis=0)), [x]),
    "tf_argmax_int": (lambda a: (tf.argmax(a, axis=1, output_type=tf.int32),
                                 tf.argmin(a, axis=0, output_type=tf.int32)), [ints]),
    # top_k: a stable descending sort (TOTALORDER), a slice and `set-dimension-size`.
    "tf_top_k": (lambda a: tuple(tf.math.top_k(a, k=3)), [x]),
    "tf_division_forms": (lambda a, c, s, b: (
        a / c, a / s, a / 3.0, a / b, 1.0 / c, tf.nn.softmax(a, axis=1),
        tf.cast(tf.nn.softmax(tf.cast(a, tf.float16), axis=1), tf.float32),
        tf.cast(tf.cast(a, tf.float16) / tf.cast(c, tf.float16), tf.float32)),
        [dv_a, dv_c, np.float32(3.3), dv_b]),
    # Stateless random ops: `rng-bit-generator` (Philox, a u64[3] state) with 32-bit words
    # (f32 uniform, raw u32) and 64-bit ones (int64 uniform), odd counts.
    "tf_random_bits": (lambda seed: (
        tf.random.stateless_uniform([3, 5], seed),
        tf.random.stateless_uniform([2, 5], seed, minval=None, maxval=None, dtype=tf.uint32),
        tf.random.stateless_uniform([7], seed, minval=-(2**40), maxval=2**40, dtype=tf.int64)),
        [np.array([3, -4], np.int64)]),
    # Cholesky and triangular solves (XLA's `cholesky`, `triangular-solve`): a batch of
    # positive definite matrices, lower and upper, transposed, and a Gaussian process's
    # log likelihood through `cholesky_solve`.
    "tf_cholesky_solve": (lambda a, b: (
        tf.linalg.cholesky(a),
        tf.linalg.triangular_solve(tf.linalg.cholesky(a), b, lower=True),
        tf.linalg.triangular_solve(tf.linalg.cholesky(a), b, lower=True, adjoint=True),
        tf.linalg.triangular_solve(tf.linalg.matrix_transpose(tf.linalg.cholesky(a)), b, lower=False),
        tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b),
        tf.reduce_sum(tf.linalg.triangular_solve(tf.linalg.cholesky(a), b) ** 2) / 2
        + tf.reduce_sum(tf.math.log(tf.linalg.diag_part(tf.linalg.cholesky(a))))),
        [spd, rng.standard_normal((2, 5, 3)).astype(np.float32)]),
}


def line(kind, a):
    a = np.asarray(a)
    shape = ",".join(map(str, a.shape)) or "-"
    if a.dtype == np.float32:
        vals = " ".join("%08x" % v for v in a.view(np.uint32).ravel())
        return "%s f32 %s %s" % (kind, shape, vals)
    names = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.bool_): "bool",
             np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64"}
    vals = " ".join(str(int(v)) for v in a.ravel())
    return "%s %s %s %s" % (kind, names[a.dtype], shape, vals)


for name, (fn, args) in cases.items():
    f = tf.function(fn, jit_compile=True)
    consts = [tf.constant(a) for a in args]
    text = f.experimental_get_compiler_ir(*consts)(stage="hlo")
    outs = [o.numpy() for o in f(*consts)]
    with open(os.path.join(HERE, name + ".hlo"), "w") as fh:
        fh.write(text)
    with open(os.path.join(HERE, name + ".ref"), "w") as fh:
        for a in args:
            fh.write(line("in", a) + "\n")
        for o in outs:
            fh.write(line("out", o) + "\n")
    print(name, [o.tolist() for o in outs])
