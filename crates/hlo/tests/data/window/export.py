"""Exports JAX (and one TensorFlow) programs built on XLA's windowed ops -- convolution,
reduce-window, select-and-scatter -- as HLO text, with inputs and the framework's own
outputs as .npy.

    /tmp/jaxenv/bin/python crates/hlo/tests/data/window/export.py        # JAX programs
    /tmp/tfenv/bin/python crates/hlo/tests/data/window/export.py --tf    # the TF program

(a venv with `pip install jax flax numpy`, resp. `pip install tensorflow-cpu`) writes
NAME.hlo, NAME.in<k>.npy and NAME.out<k>.npy (outputs in the order of the ROOT tuple,
flattened) beside this file; tests/window.rs imports each program, runs it on Kiln's
interpreter and compares. The generated files are committed: `cargo test` needs no Python.
JAX's text is `jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()` (JAX's printing
style); TensorFlow's is `experimental_get_compiler_ir(*args)(stage='hlo')` (its style).
"""

import os
import sys

import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))


def save(name, text, args, outs):
    with open(os.path.join(OUT, name + ".hlo"), "w") as out:
        out.write(text)
    for k, a in enumerate(args):
        np.save(os.path.join(OUT, f"{name}.in{k}.npy"), np.asarray(a))
    for k, o in enumerate(outs):
        np.save(os.path.join(OUT, f"{name}.out{k}.npy"), np.asarray(o))
    print(f"{name}: {len(args)} inputs, {len(outs)} outputs")


def jax_programs(rng):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from jax import lax

    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    conv = lax.conv_general_dilated

    def conv_nhwc(x, w):
        """Strided 'SAME' convolution, NHWC input, HWIO kernel."""
        return conv(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def conv_nchw_dilated(x, w):
        """NCHW / OIHW with explicit padding, lhs (base) and rhs (window) dilation."""
        return conv(x, w, (1, 2), ((1, 2), (0, 1)), lhs_dilation=(2, 1),
                    rhs_dilation=(1, 2), dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def conv_negative_padding(x, w):
        """Negative padding removes input rows and columns; odd layouts (CHWN, IOHW...)."""
        return conv(x, w, (1, 1), ((-1, 1), (2, -2)),
                    dimension_numbers=("CHWN", "HWOI", "WCNH"))

    def conv_grouped(x, w):
        """Two feature groups."""
        return conv(x, w, (1, 1), "VALID", feature_group_count=2,
                    dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def conv_depthwise(x, w):
        """Depthwise: one group per input feature, two outputs each."""
        return conv(x, w, (1, 1), "SAME", feature_group_count=3,
                    dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def conv_1d(x, w):
        return conv(x, w, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))

    def conv_3d(x, w):
        return conv(x, w, (1, 2, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))

    def conv_grad(x, w):
        """jax.grad of a strided convolution: input gradient (lhs dilation) and weight
        gradient (the batch as the contracted feature dimension)."""
        def loss(x, w):
            y = conv(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return jnp.sum(jnp.tanh(y))
        return jax.grad(loss, argnums=(0, 1))(x, w)

    def conv_grouped_grad(x, w):
        """The weight gradient of a grouped convolution uses batch_group_count."""
        def loss(x, w):
            y = conv(x, w, (1, 1), "SAME", feature_group_count=2,
                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return jnp.sum(y * y)
        return jax.grad(loss, argnums=(0, 1))(x, w)

    def pools(x):
        """Max pooling (VALID and SAME), average pooling with padding, min pooling."""
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        ms = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        av = nn.avg_pool(x, (2, 2), strides=(1, 1), padding="SAME")
        mn = lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 1, 1), (1, 1, 1, 1), "VALID")
        return mx, ms, av, mn

    def reduce_window_dilated(x):
        """Base and window dilation, uneven and negative padding, a non-identity init
        (padding and dilation holes do not take part: XLA's CPU result)."""
        a = lax.reduce_window(x, 1.5, lax.add, (2, 2), (1, 2), ((1, 2), (-1, 1)),
                              base_dilation=(2, 1), window_dilation=(1, 2))
        b = lax.reduce_window(x, -jnp.inf, lax.max, (3, 1), (2, 1), ((2, 0), (0, 0)),
                              window_dilation=(2, 1))
        p = lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID")
        return a, b, p

    def cumulative(x):
        """Cumulative sums, maxima and products along each axis."""
        return (jnp.cumsum(x, axis=1), lax.cummax(x, axis=0), jnp.cumprod(x, axis=1),
                lax.cumsum(x, axis=0, reverse=True))

    def max_pool_grad(x, t):
        """jax.grad of a max pool: select-and-scatter."""
        def loss(x):
            y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
            return jnp.sum(y * t)
        return jax.grad(loss)(x)

    def max_pool_grad_overlapping(x, t):
        """Overlapping windows (3x3, stride 2, padded): several windows pick one element."""
        def loss(x):
            y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                  ((0, 0), (1, 1), (1, 1), (0, 0)))
            return jnp.sum(y * t)
        return jax.grad(loss)(x)

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(8, (3, 3))(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            x = nn.Conv(8, (3, 3), feature_group_count=2, strides=(2, 2))(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(10)(x)

    cnn = CNN()
    images = f(4, 16, 16, 3)
    labels = np.arange(4) % 10
    params = cnn.init(jax.random.PRNGKey(0), images)
    leaves, tree = jax.tree_util.tree_flatten(params)

    def cnn_forward(x, *leaves):
        return cnn.apply(jax.tree_util.tree_unflatten(tree, leaves), x)

    def cnn_grad(x, *leaves):
        """A training step's gradient: cross-entropy through the Flax CNN."""
        def loss(leaves):
            logits = cnn_forward(x, *leaves)
            onehot = jax.nn.one_hot(labels, 10)
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * onehot, axis=-1))
        return jax.grad(loss)(list(leaves))

    weights = [np.asarray(l) for l in leaves]
    return {
        "conv_nhwc": (conv_nhwc, [f(2, 7, 7, 3), f(3, 3, 3, 4)]),
        "conv_nchw_dilated": (conv_nchw_dilated, [f(1, 2, 5, 6), f(3, 2, 2, 3)]),
        "conv_negative_padding": (conv_negative_padding, [f(2, 5, 6, 2), f(3, 2, 3, 2)]),
        "conv_grouped": (conv_grouped, [f(1, 6, 6, 4), f(3, 3, 2, 6)]),
        "conv_depthwise": (conv_depthwise, [f(2, 5, 5, 3), f(3, 3, 1, 6)]),
        "conv_1d": (conv_1d, [f(2, 9, 3), f(3, 3, 5)]),
        "conv_3d": (conv_3d, [f(1, 4, 5, 4, 2), f(2, 3, 2, 2, 3)]),
        "conv_grad": (conv_grad, [f(2, 7, 7, 3), f(3, 3, 3, 4)]),
        "conv_grouped_grad": (conv_grouped_grad, [f(2, 5, 5, 4), f(3, 3, 2, 6)]),
        "pools": (pools, [f(2, 7, 6, 3)]),
        "reduce_window_dilated": (reduce_window_dilated, [f(5, 6)]),
        "cumulative": (cumulative, [f(3, 6)]),
        "max_pool_grad": (max_pool_grad, [f(2, 5, 5, 3), f(2, 3, 3, 3)]),
        "max_pool_grad_overlapping": (max_pool_grad_overlapping,
                                      [np.round(f(1, 6, 6, 2)), f(1, 3, 3, 2)]),
        "cnn_forward": (cnn_forward, [images] + weights),
        "cnn_grad": (cnn_grad, [images] + weights),
    }


def export_jax():
    import jax

    for name, (fn, args) in jax_programs(np.random.default_rng(0)).items():
        text = jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()
        outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        save(name, text, args, outs)
    with open(os.path.join(OUT, "VERSION"), "w") as out:
        out.write(f"jax {jax.__version__}, numpy {np.__version__}\n")


def export_tf():
    import tensorflow as tf

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)

    @tf.function(jit_compile=True)
    def tf_conv_pool_grad(x, w):
        """Keras-style conv + max pool forward, and both gradients (TF's printing style)."""
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.relu(tf.nn.conv2d(x, w, strides=1, padding="SAME"))
            p = tf.nn.max_pool2d(y, 2, 2, "VALID")
            a = tf.nn.avg_pool2d(y, 3, 2, "SAME")
            loss = tf.reduce_sum(p * p) + tf.reduce_sum(a * a)
        gx, gw = tape.gradient(loss, [x, w])
        return p, a, gx, gw

    text = tf_conv_pool_grad.experimental_get_compiler_ir(x, w)(stage="hlo")
    outs = [o.numpy() for o in tf_conv_pool_grad(x, w)]
    save("tf_conv_pool_grad", text, [x, w], outs)
    with open(os.path.join(OUT, "VERSION_TF"), "w") as out:
        out.write(f"tensorflow {tf.__version__}, numpy {np.__version__}\n")


if __name__ == "__main__":
    if "--tf" in sys.argv:
        export_tf()
    else:
        export_jax()
