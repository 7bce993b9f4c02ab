"""Exports small TensorFlow programs built on gather and scatter as XLA HLO text, in
TensorFlow's printing style (`%names`, typed operands, signed computation headers), with
their inputs and TensorFlow's own outputs as .npy (tests/indexing.rs compares Kiln with
them).

    /tmp/tfenv/bin/python crates/hlo/tests/data/indexing/export_tf.py

writes tf_NAME.hlo, tf_NAME.in<k>.npy and tf_NAME.out<k>.npy beside this script and
TF_VERSION. The HLO is what `tf.function(jit_compile=True)
.experimental_get_compiler_ir(*args)(stage='hlo')` prints. The generated files are
committed: `cargo test` needs no Python.
"""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.dirname(os.path.abspath(__file__))


def lookup(table, ids):
    """tf.gather of rows, and tf.gather_nd of single elements."""
    pairs = tf.stack([ids[0] % 4, ids[1] % 3], axis=-1)
    return tf.gather(table, ids), tf.gather_nd(table, pairs)


def lookup_grad(table, ids, ct):
    """The gradient of tf.gather taken densely (an unsorted segment sum: scatter-add)."""
    with tf.GradientTape() as tape:
        tape.watch(table)
        y = tf.gather(table, ids)
    return tf.convert_to_tensor(tape.gradient(y, table, output_gradients=ct))


def scatter_nd(x, ids, u):
    """tensor_scatter_nd_update / _add / _max with duplicate indices."""
    i = tf.expand_dims(ids, -1)
    return (
        tf.tensor_scatter_nd_update(x, i, u),
        tf.tensor_scatter_nd_add(x, i, u),
        tf.tensor_scatter_nd_max(x, i, u),
    )


def programs(rng):
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    return {
        "lookup": (lookup, [f(4, 3), np.array([[3, 0, 2], [1, 1, 2]], np.int32)]),
        "lookup_grad": (
            lookup_grad,
            [f(5, 2), np.array([4, 0, 4, 2, 4], np.int32), f(5, 2)],
        ),
        "scatter_nd": (
            scatter_nd,
            [f(5, 2), np.array([3, 1, 3], np.int32), f(3, 2)],
        ),
    }


def main():
    for name, (fn, args) in programs(np.random.default_rng(11)).items():
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
