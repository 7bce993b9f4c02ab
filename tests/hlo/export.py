"""Exports real programs from Flax/JAX and Keras/TensorFlow as XLA HLO text, with their inputs
and the framework's own outputs as .npy: the corpus that tests/tests/hlo_corpus.rs runs.

    pip install jax flax optax tensorflow-cpu      # one environment with all four, or two:
    python tests/hlo/export.py                     # every framework importable here
    python tests/hlo/export.py jax                 # only the JAX/Flax programs
    python tests/hlo/export.py tf                  # only the Keras/TensorFlow programs
    python tests/hlo/export.py tf NAME ...         # only these programs

For each program NAME it writes the folder tests/hlo/corpus/NAME/ with model.hlo, in<k>.npy
(the entry computation's parameters, in order) and ref<k>.npy (the ROOT tuple, flattened):
the layout `kiln bench --programs DIR` reads. The generated files are committed, so
`cargo test` needs no Python.

The programs are framework code a user would write — Flax `linen` modules, optax optimizers,
`keras.applications` and `keras.layers` — not code written for Kiln. Every model's parameters
are arguments of the exported function (JAX: `model.apply(params, x)` under `jax.jit` with
`keep_unused=True`; Keras: `model.stateless_call(trainable, non_trainable, x)`), so the HLO
holds no weights as constants and the files stay small. Shapes are small on purpose.

The HLO is what a user gets from the documented entry points:
`jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()` (JAX's printing style) and
`tf.function(f, jit_compile=True).experimental_get_compiler_ir(*args)(stage='hlo')`
(TensorFlow's). The outputs are what the same jitted function returns on this machine's CPU.
"""

import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def save(name, hlo, inputs, outputs):
    """Writes NAME/model.hlo, NAME/in<k>.npy and NAME/ref<k>.npy (a tolerance.txt there,
    written by hand, is kept)."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f == "model.hlo" or (f.endswith(".npy") and f.startswith(("in", "ref"))):
            os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "model.hlo"), "w") as out:
        out.write(hlo)
    # np.array(order="C"), not np.ascontiguousarray: that one makes a scalar shape (1,).
    for k, a in enumerate(inputs):
        np.save(os.path.join(folder, f"in{k}.npy"), np.array(a, order="C"))
    for k, a in enumerate(outputs):
        np.save(os.path.join(folder, f"ref{k}.npy"), np.array(a, order="C"))
    size = sum(np.asarray(a).nbytes for a in list(inputs) + list(outputs)) + len(hlo)
    print(f"{name}: {len(inputs)} inputs, {len(outputs)} outputs, {size / 1024:.0f} KiB")


# --------------------------------------------------------------------------------------------
# JAX / Flax / optax
# --------------------------------------------------------------------------------------------


def export_jax():
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    from jax import lax

    jax.config.update("jax_platforms", "cpu")
    key = jax.random.PRNGKey(0)

    def export(name, fn, *args):
        if ONLY and name not in ONLY:
            return
        jitted = jax.jit(fn, keep_unused=True)
        hlo = jitted.lower(*args).compiler_ir("hlo").as_hlo_text()
        out = jitted(*args)
        ins = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
        outs = [np.asarray(a) for a in jax.tree_util.tree_leaves(out)]
        save(name, hlo, ins, outs)

    def normal(seed, *shape):
        return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float32)

    # An MLP classifier: Dense-relu-Dense-log_softmax.
    class MLP(nn.Module):
        hidden: int = 32
        classes: int = 10

        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(self.hidden)(x))
            return nn.log_softmax(nn.Dense(self.classes)(x))

    mlp = MLP()
    x = normal(1, 4, 12)
    params = mlp.init(key, x)
    export("flax_mlp", lambda p, x: mlp.apply(p, x), params, x)

    # One SGD-with-momentum training step of the MLP (optax), cross-entropy loss.
    labels = jnp.array([3, 0, 9, 3], jnp.int32)
    sgd = optax.sgd(0.1, momentum=0.9)

    def sgd_step(p, state, x, y):
        def loss(p):
            logits = mlp.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        l, g = jax.value_and_grad(loss)(p)
        updates, state = sgd.update(g, state, p)
        return optax.apply_updates(p, updates), state, l

    export("flax_mlp_sgd_step", sgd_step, params, sgd.init(params), x, labels)

    # A CNN with batch norm (inference), max and average pooling.
    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(8, (3, 3))(x)
            x = nn.BatchNorm(use_running_average=True)(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            x = nn.Conv(16, (3, 3), strides=(2, 2), padding="VALID")(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, (2, 2), strides=(1, 1), padding="SAME")
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(10)(x)

    cnn = CNN()
    img = normal(2, 2, 12, 12, 3)
    cnn_vars = cnn.init(key, img)
    # Batch statistics that are not the identity, so the normalisation does something.
    stats = cnn_vars["batch_stats"]["BatchNorm_0"]
    cnn_vars["batch_stats"]["BatchNorm_0"] = {
        "mean": normal(3, *stats["mean"].shape) * 0.1,
        "var": jnp.abs(normal(4, *stats["var"].shape)) + 0.5,
    }
    export("flax_cnn", lambda v, x: cnn.apply(v, x), cnn_vars, img)

    # One Adam training step of a small CNN: conv and max-pool gradients, the labels' gather.
    class SmallCNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(4, (3, 3))(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(5)(x)

    small = SmallCNN()
    img8 = normal(5, 2, 8, 8, 2)
    small_params = small.init(key, img8)
    adam = optax.adam(1e-2)
    img_labels = jnp.array([1, 4], jnp.int32)

    def adam_step(p, state, x, y):
        def loss(p):
            logits = small.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        l, g = jax.value_and_grad(loss)(p)
        updates, state = adam.update(g, state, p)
        return optax.apply_updates(p, updates), state, l

    export("flax_cnn_adam_step", adam_step, small_params, adam.init(small_params), img8, img_labels)

    # A depthwise-separable block and its gradient (feature groups; the weight gradient of a
    # grouped convolution is a batch-grouped one).
    class Depthwise(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3, 3), feature_group_count=4, padding="SAME")(x)
            x = nn.swish(x)
            return nn.Conv(6, (1, 1))(x)

    dw = Depthwise()
    img4 = normal(6, 2, 6, 6, 4)
    dw_params = dw.init(key, img4)

    def dw_grad(p, x):
        return jax.grad(lambda p: jnp.sum(dw.apply(p, x) ** 2))(p)

    export("flax_depthwise", lambda p, x: dw.apply(p, x), dw_params, img4)
    export("flax_depthwise_grad", dw_grad, dw_params, img4)

    # A transformer encoder block over token embeddings.
    class Encoder(nn.Module):
        vocab: int = 20
        dim: int = 16

        @nn.compact
        def __call__(self, tokens):
            x = nn.Embed(self.vocab, self.dim)(tokens)
            pos = self.param("pos", nn.initializers.normal(0.02), (tokens.shape[1], self.dim))
            x = x + pos
            h = nn.LayerNorm()(x)
            h = nn.MultiHeadDotProductAttention(num_heads=2)(h, h)
            x = x + h
            h = nn.LayerNorm()(x)
            h = nn.Dense(32)(h)
            h = nn.gelu(h)
            x = x + nn.Dense(self.dim)(h)
            return nn.Dense(self.vocab)(nn.LayerNorm()(x))

    enc = Encoder()
    tokens = jnp.array([[1, 5, 7, 7, 19, 0], [3, 3, 2, 11, 4, 8]], jnp.int32)
    enc_params = enc.init(key, tokens)
    export("flax_transformer", lambda p, t: enc.apply(p, t), enc_params, tokens)

    # One AdamW step of the encoder as a language model: the embedding's gradient is a
    # scatter-add with repeated tokens.
    adamw = optax.adamw(1e-3)
    targets = jnp.roll(tokens, -1, axis=1)

    def lm_step(p, state, t, y):
        def loss(p):
            logits = enc.apply(p, t)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        l, g = jax.value_and_grad(loss)(p)
        updates, state = adamw.update(g, state, p)
        return optax.apply_updates(p, updates), state, l

    export("flax_transformer_adamw_step", lm_step, enc_params, adamw.init(enc_params), tokens, targets)

    # The gradient of an embedding lookup alone (duplicate indices add up).
    embed = nn.Embed(10, 4)
    ids = jnp.array([[1, 2, 1], [9, 1, 0]], jnp.int32)
    embed_params = embed.init(key, ids)
    weights = normal(7, 2, 3, 4)
    export(
        "flax_embedding_grad",
        lambda p, ids, w: jax.grad(lambda p: jnp.sum(embed.apply(p, ids) * w))(p),
        embed_params,
        ids,
        weights,
    )

    # An LSTM scanned over time (flax.linen.RNN: a while loop in HLO).
    lstm = nn.RNN(nn.LSTMCell(8))
    seq = normal(8, 2, 5, 3)
    lstm_params = lstm.init(key, seq)
    export("flax_lstm", lambda p, x: lstm.apply(p, x), lstm_params, seq)

    # A bidirectional GRU (the backward direction reverses the sequence).
    bigru = nn.Bidirectional(nn.RNN(nn.GRUCell(6)), nn.RNN(nn.GRUCell(6)))
    bigru_params = bigru.init(key, seq)
    export("flax_bigru", lambda p, x: bigru.apply(p, x), bigru_params, seq)

    # Predictions and their ranking: argmax, sort and argsort of a classifier's scores.
    def rank(p, x):
        logits = mlp.apply(p, x)
        return jnp.argmax(logits, axis=-1), jnp.sort(logits, axis=-1), jnp.argsort(-logits, axis=-1)

    export("flax_mlp_rank", rank, params, x)

    # Cumulative sums and control flow a model may hold: cond and switch on data.
    def control(x, i):
        c = jnp.cumsum(x, axis=1)
        y = lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, c)
        z = lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], y)
        return lax.fori_loop(0, 3, lambda k, v: v * 0.5 + jnp.float32(k), z)

    export("jax_control", control, normal(9, 3, 4), jnp.array(1, jnp.int32))

    # Linear algebra as jnp.linalg and jax.scipy run it on the CPU: LAPACK custom calls
    # (getrf, potrf, trsm) around the HLO that pivots, solves and masks.
    def linalg(a, b, s, r):
        spd = s @ jnp.swapaxes(s, -1, -2) + 5.0 * jnp.eye(5)
        chol = jnp.linalg.cholesky(spd)
        sign, logdet = jnp.linalg.slogdet(a)
        lu, piv, perm = lax.linalg.lu(r)
        indefinite = jnp.linalg.cholesky(spd - 100.0 * jnp.eye(5))
        singular = jnp.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
        # Positive semidefinite: the second pivot is exactly zero (LAPACK's info = 2).
        semidefinite = jnp.linalg.cholesky(jnp.ones((2, 2)) + 0.0 * a[0, :2, :2])
        return (
            jnp.linalg.solve(a, b),
            jnp.linalg.inv(a),
            jnp.linalg.det(a),
            sign,
            logdet,
            chol,
            jax.scipy.linalg.cho_solve((chol, True), b),
            lax.linalg.triangular_solve(chol, b, left_side=True, lower=True, transpose_a=True),
            lax.linalg.triangular_solve(chol, jnp.swapaxes(b, -1, -2), lower=True, unit_diagonal=True),
            jax.scipy.linalg.solve_triangular(jnp.swapaxes(chol, -1, -2), b, lower=False),
            lu,
            piv,
            perm,
            indefinite,
            jnp.linalg.det(singular),
            semidefinite,
        )

    export("jax_linalg", linalg, normal(10, 2, 5, 5) + 3.0 * jnp.eye(5), normal(11, 2, 5, 3),
           normal(12, 2, 5, 5), normal(13, 2, 4, 6))

    # QR, symmetric eigendecompositions and SVDs (LAPACK geqrf, orgqr, syevd, gesdd) as
    # programs use them. QR follows LAPACK's sign convention, so Q and R compare directly; an
    # eigenvector's sign is the implementation's choice, so the eigenvectors appear
    # through what does not depend on it.
    def decomp(a, w, s):
        q, r = jnp.linalg.qr(a)
        qc, rc = jnp.linalg.qr(a, mode="complete")
        qw, rw = jnp.linalg.qr(jnp.swapaxes(a, -1, -2))
        ortho = jax.nn.initializers.orthogonal()(jax.random.key(3), (6, 4))
        spd = s @ jnp.swapaxes(s, -1, -2) + 0.5 * jnp.eye(4)
        evals, evecs = jnp.linalg.eigh(spd)
        sqrtm = (evecs * jnp.sqrt(evals)[..., None, :]) @ jnp.swapaxes(evecs, -1, -2)
        # PCA of the rows of w: variances and the data projected and back.
        centred = w - w.mean(axis=0)
        var, pcs = jnp.linalg.eigh(centred.T @ centred / (w.shape[0] - 1))
        top = pcs[:, -2:]
        # SVD (gesdd): singular values, the vectors through sign-free products, pinv,
        # lstsq, matrix_rank and the spectral norm.
        u, sv, vt = jnp.linalg.svd(a, full_matrices=False)
        uf, _, vtf = jnp.linalg.svd(a)
        return (
            q, r, qc, rc, qw, rw,
            jnp.linalg.qr(a, mode="r"),
            ortho,
            evals,
            jnp.abs(evecs),
            sqrtm,
            jnp.linalg.eigvalsh(spd, UPLO="U"),
            var,
            centred @ top @ top.T,
            jnp.linalg.svd(a, compute_uv=False),
            jnp.abs(u),
            jnp.abs(vt),
            (u * sv[..., None, :]) @ vt,
            uf[..., :, :3] * sv[..., None, :] @ vtf,
            jnp.linalg.pinv(w[:5]),
            jnp.linalg.lstsq(w[:6], a[0, :, 0].repeat(2)[:6])[0],
            jnp.linalg.matrix_rank(s),
            jnp.linalg.norm(w, ord=2),
            jnp.linalg.svd(jnp.swapaxes(s, -1, -2)[0, :2], compute_uv=False),
        )

    export("jax_decomp", decomp, normal(14, 2, 5, 3), normal(15, 16, 3), normal(16, 3, 4, 4))

    # Int8 inference as quantisation libraries write it: symmetric per-row (activations)
    # and per-column (weights) scales, an int8 x int8 -> int32 product, dequantised;
    # and a confusion matrix as an int32 product of one-hot matrices.
    def quantize(v, axis):
        scale = jnp.max(jnp.abs(v), axis=axis, keepdims=True) / 127.0
        return jnp.clip(jnp.round(v / scale), -127, 127).astype(jnp.int8), scale

    def qdense(v, w, b):
        qv, sv = quantize(v, 1)
        qw, sw = quantize(w, 0)
        acc = lax.dot(qv, qw, preferred_element_type=jnp.int32)
        return acc, acc.astype(jnp.float32) * sv * sw + b

    def quant(x, w1, b1, w2, b2, labels):
        acc1, h = qdense(x, w1, b1)
        acc2, logits = qdense(jax.nn.gelu(h), w2, b2)
        pred = jnp.argmax(logits, axis=-1)
        confusion = jnp.dot(jax.nn.one_hot(labels, 10, dtype=jnp.int32).T,
                            jax.nn.one_hot(pred, 10, dtype=jnp.int32))
        return acc1, acc2, logits, jax.nn.log_softmax(logits), confusion

    export("jax_quant", quant, normal(17, 16, 24), normal(18, 24, 32) * 0.2, normal(19, 32) * 0.1,
           normal(20, 32, 10) * 0.2, normal(21, 10) * 0.1,
           jax.random.randint(jax.random.PRNGKey(22), (16,), 0, 10))


# --------------------------------------------------------------------------------------------
# TensorFlow / Keras
# --------------------------------------------------------------------------------------------


def export_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)

    def export(name, fn, args):
        """`fn` takes a flat list of tensors; the HLO's parameters are that list."""
        args = [tf.convert_to_tensor(a) for a in args]
        jitted = tf.function(lambda *a: fn(list(a)), jit_compile=True)
        if ONLY and name not in ONLY:
            return
        hlo = jitted.experimental_get_compiler_ir(*args)(stage="hlo")
        out = tf.nest.flatten(jitted(*args))
        save(name, hlo, [a.numpy() for a in args], [o.numpy() for o in out])

    def stateless(model, x_spec):
        """The model's forward pass as a function of (trainable..., non-trainable..., x)."""
        nt = len(model.trainable_variables)
        nn_ = len(model.non_trainable_variables)

        def fn(a):
            out, _ = model.stateless_call(a[:nt], a[nt : nt + nn_], a[nt + nn_], training=False)
            return out

        values = [v.numpy() for v in model.trainable_variables + model.non_trainable_variables]
        return fn, values

    rng = np.random.default_rng(0)

    # keras.applications.MobileNetV2 (alpha 0.35, 10 classes) on 32x32 images: depthwise
    # convolutions, batch norm, relu6, global average pooling.
    mobilenet = keras.applications.MobileNetV2(
        input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10
    )
    fn, values = stateless(mobilenet, None)
    # Batch statistics that are not the identity.
    for v, val in zip(mobilenet.non_trainable_variables, values[len(mobilenet.trainable_variables) :]):
        if "moving_variance" in v.path:
            val[...] = rng.uniform(0.5, 1.5, val.shape)
        elif "moving_mean" in v.path:
            val[...] = rng.normal(0, 0.1, val.shape)
    img = rng.standard_normal((1, 32, 32, 3)).astype(np.float32)
    export("keras_mobilenet_v2", fn, values + [img])

    # A Keras CNN and one SGD training step of it (GradientTape inside the jitted function).
    cnn = keras.Sequential(
        [
            keras.Input((8, 8, 2)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
        ]
    )
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    n = len(cnn.trainable_variables)

    def train_step(a):
        weights, x, y = a[:n], a[n], a[n + 1]
        with tf.GradientTape() as tape:
            tape.watch(weights)
            logits, _ = cnn.stateless_call(weights, [], x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, weights)
        return [w - 0.1 * g for w, g in zip(weights, grads)] + [loss]

    x = rng.standard_normal((2, 8, 8, 2)).astype(np.float32)
    y = np.array([1, 3], np.int32)
    export("keras_cnn_sgd_step", train_step, [v.numpy() for v in cnn.trainable_variables] + [x, y])

    # A bidirectional GRU over a sequence, then a dense head (TF's while loops).
    gru = keras.Sequential(
        [
            keras.Input((5, 4)),
            keras.layers.Bidirectional(keras.layers.GRU(6)),
            keras.layers.Dense(3),
        ]
    )
    fn, values = stateless(gru, None)
    seq = rng.standard_normal((2, 5, 4)).astype(np.float32)
    export("keras_bigru", fn, values + [seq])

    # A transformer block from Keras layers over an embedding.
    tokens_in = keras.Input((6,), dtype="int32")
    h = keras.layers.Embedding(20, 16)(tokens_in)
    a = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(h, h)
    h = keras.layers.LayerNormalization()(h + a)
    f = keras.layers.Dense(32, activation="gelu")(h)
    h = keras.layers.LayerNormalization()(h + keras.layers.Dense(16)(f))
    out = keras.layers.Dense(20)(keras.layers.GlobalAveragePooling1D()(h))
    transformer = keras.Model(tokens_in, out)
    fn, values = stateless(transformer, None)
    tokens = np.array([[1, 5, 7, 7, 19, 0], [3, 3, 2, 11, 4, 8]], np.int32)
    export("keras_transformer", fn, values + [tokens])

    # An MLP training step with dropout (training=True): Keras' seeded dropout draws its mask
    # through TF's stateless random ops (`rng-bit-generator`, Philox) and advances its seed
    # generator's state, returned with the new weights and the loss.
    drop = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dropout(0.3, seed=3),
            keras.layers.Dense(4),
        ]
    )
    nt, nn_ = len(drop.trainable_variables), len(drop.non_trainable_variables)

    def dropout_step(a):
        weights, state, x, y = a[:nt], a[nt : nt + nn_], a[nt + nn_], a[nt + nn_ + 1]
        with tf.GradientTape() as tape:
            tape.watch(weights)
            logits, new_state = drop.stateless_call(weights, state, x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, weights)
        return [w - 0.1 * g for w, g in zip(weights, grads)] + list(new_state) + [loss]

    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = np.array([0, 3, 1, 2, 2, 0, 1, 3], np.int32)
    values = [v.numpy() for v in drop.trainable_variables + drop.non_trainable_variables]
    export("keras_dropout_sgd_step", dropout_step, values + [x, y])


# Program names given after the framework (`python tests/hlo/export.py tf NAME…`): only
# those are written (every model is still built, so the random initialisations stay the same).
ONLY = set()


def main():
    which = [a for a in sys.argv[1:] if a in ("jax", "tf")] or ["jax", "tf"]
    ONLY.update(a for a in sys.argv[1:] if a not in ("jax", "tf"))
    for name in which:
        {"jax": export_jax, "tf": export_tf}[name]()


if __name__ == "__main__":
    main()
