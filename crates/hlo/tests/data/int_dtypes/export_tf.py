"""Exports small TensorFlow programs over uint8, int8, int16, uint16 and uint64 as XLA HLO
text in TensorFlow's printing style (`%names`, typed operands), with their inputs and
TensorFlow's own outputs as .npy (tests/int_dtypes.rs compares Kiln with them).

    /tmp/tfenv/bin/python crates/hlo/tests/data/int_dtypes/export_tf.py

writes tf_NAME.hlo, tf_NAME.in<k>.npy and tf_NAME.out<k>.npy beside this script and
TF_VERSION. The HLO is what `tf.function(jit_compile=True)
.experimental_get_compiler_ir(*args)(stage='hlo')` prints. The generated files are
committed: `cargo test` needs no Python.
"""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.dirname(os.path.abspath(__file__))


def image(pixels, x):
    """uint8 pixels to floats and back (saturating), an int16 sum, uint16 and uint64
    arithmetic, and tf.bitcast of f32 to uint8 (a new minor dimension of 4)."""
    f = tf.cast(pixels, tf.float32) * 1.5 - 20.0
    return (
        tf.cast(f, tf.uint8),
        tf.reduce_sum(tf.cast(pixels, tf.int16), axis=1),
        tf.cast(pixels, tf.uint16) * tf.constant(300, tf.uint16),
        tf.bitwise.left_shift(tf.cast(pixels, tf.uint64), tf.constant(56, tf.uint64)),
        tf.bitcast(x, tf.uint8),
        tf.cast(tf.cast(x, tf.int8), tf.int32),
    )


def programs(rng):
    return {
        "image": (
            image,
            [
                rng.integers(0, 256, (3, 4)).astype(np.uint8),
                np.array([1.0, -2.5, 200.0, -300.0], np.float32),
            ],
        ),
    }


def main():
    for name, (fn, args) in programs(np.random.default_rng(3)).items():
        jit = tf.function(fn, jit_compile=True)
        text = jit.experimental_get_compiler_ir(*args)(stage="hlo")
        with open(os.path.join(OUT, f"tf_{name}.hlo"), "w") as out:
            out.write(text)
        for k, a in enumerate(args):
            np.save(os.path.join(OUT, f"tf_{name}.in{k}.npy"), np.asarray(a))
        outs = tf.nest.flatten(jit(*args))
        for k, o in enumerate(outs):
            np.save(os.path.join(OUT, f"tf_{name}.out{k}.npy"), o.numpy())
        print(f"tf_{name}: {len(args)} inputs, {len(outs)} outputs")
    with open(os.path.join(OUT, "TF_VERSION"), "w") as out:
        out.write(f"tensorflow {tf.__version__}, numpy {np.__version__}\n")


if __name__ == "__main__":
    main()
