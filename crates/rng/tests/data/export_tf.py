"""Exports TensorFlow normal and truncated-normal values for kiln-rng's tf_generated test.

Run with TensorFlow installed (CPU build):  python3 export_tf.py > tf_normals.txt

Each case is one line:  <kind> <seed...> <shape> : <hex bit patterns>
  kind  stateless_normal | stateless_truncated_normal   seed: two int64 (seed=[s0, s1])
        generator_normal | generator_truncated_normal    seed: one int64 (from_seed(s)),
        followed by the number of earlier draws of shape [7] (float32) on the same generator;
        each kind also with the suffix _f64 (dtype=tf.float64)
  shape comma-separated dims
The values are written as bit patterns so that the test compares bits: float32 as 8 hex
digits, float64 (kinds ending in _f64) as 16.
"""
import tensorflow as tf

SHAPES = [[7], [3, 5], [1000]]
STATELESS_SEEDS = [(0, 0), (1, 2), (-1, 5), (42, -7), (2**31 - 1, -(2**31)),
                   (2**62 + 12345, -(2**63)), (-123456789012, 987654321098)]
GEN_SEEDS = [0, 1, -1, 1234, 2**40 + 3, -(2**62)]


def hexes(t):
    if t.dtype == tf.float64:
        bits = tf.bitcast(t, tf.uint64).numpy().reshape(-1)
        return " ".join("%016x" % int(b) for b in bits)
    bits = tf.bitcast(t, tf.uint32).numpy().reshape(-1)
    return " ".join("%08x" % int(b) for b in bits)


DTYPES = [(tf.float32, ""), (tf.float64, "_f64")]


def shape_str(shape):
    return ",".join(str(d) for d in shape)


print("# TF %s, %s" % (tf.__version__, tf.sysconfig.get_build_info().get("cpu_compiler", "")))
for dtype, suffix in DTYPES:
    for s0, s1 in STATELESS_SEEDS:
        for shape in SHAPES:
            seed = tf.constant([s0, s1], dtype=tf.int64)
            n = tf.random.stateless_normal(shape, seed=seed, dtype=dtype)
            print("stateless_normal%s %d %d %s : %s" % (suffix, s0, s1, shape_str(shape), hexes(n)))
            t = tf.random.stateless_truncated_normal(shape, seed=seed, dtype=dtype)
            print("stateless_truncated_normal%s %d %d %s : %s"
                  % (suffix, s0, s1, shape_str(shape), hexes(t)))
    for s in GEN_SEEDS:
        for shape in SHAPES:
            for kind in ["normal", "truncated_normal"]:
                for before in [0, 2]:
                    g = tf.random.Generator.from_seed(s)
                    for _ in range(before):
                        g.normal([7])
                    v = getattr(g, kind)(shape, dtype=dtype)
                    print("generator_%s%s %d %d %s : %s"
                          % (kind, suffix, s, before, shape_str(shape), hexes(v)))
