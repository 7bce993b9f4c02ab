"""kiln.jit against jax.jit on the same functions, side by side in one run.

First call: a fresh jitted function's first call (trace, lower, and for JAX compile; Kiln's
default lazy policy answers it on the interpreter). Per call: the median of REPS calls after
WARMUP calls (by then Kiln has compiled its clusters), results copied to numpy for both.

    python benches/python/jit_vs_jax.py [--reps N] [--only NAME]...
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import kiln  # noqa: E402

WARMUP = 5


def workloads():
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def mlp(ws, x):
        for w in ws[:-1]:
            x = jax.nn.gelu(x @ w)
        return x @ ws[-1]

    def scan(xs):
        return jax.lax.scan(lambda c, v: (jnp.tanh(c * v + 1.0), c.sum()), jnp.ones(xs.shape[1:]), xs)

    def train_step():
        import flax.linen as nn
        import optax

        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(10)(nn.gelu(nn.Dense(128)(x)))

        model, opt = MLP(), optax.adam(1e-3)
        x, y = f32(256, 64), rng.integers(0, 10, 256).astype(np.int32)
        params = model.init(jax.random.PRNGKey(0), x)

        def step(params, opt_state, x, y):
            def loss_fn(p):
                return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

            loss, g = jax.value_and_grad(loss_fn)(params)
            u, opt_state = opt.update(g, opt_state, params)
            return optax.apply_updates(params, u), opt_state, loss

        return step, (params, opt.init(params), x, y)

    yield "pointwise 1M", lambda x: jnp.tanh(x) * jnp.exp(-x * x) + 1.0, (f32(1024, 1024),)
    yield "softmax 512x1024", lambda x: jax.nn.softmax(x, axis=-1), (f32(512, 1024),)
    yield "layer_norm 512x1024", layer_norm, (f32(512, 1024), f32(1024), f32(1024))
    yield "mlp 3x512, batch 256", mlp, ([f32(512, 512) * 0.05 for _ in range(3)], f32(256, 512))
    yield "lax.scan 64 steps", scan, (f32(64, 256) * 0.1,)
    step, args = train_step()
    yield "flax+optax train step", step, args


def to_numpy(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def timed(f, args, reps):
    t0 = time.perf_counter()
    to_numpy(f(*args))
    first = time.perf_counter() - t0
    for _ in range(WARMUP):
        to_numpy(f(*args))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        to_numpy(f(*args))
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", action="append", metavar="TEXT",
                    help="run only the workloads whose name contains TEXT (repeatable)")
    a = ap.parse_args()
    print(f"jax {jax.__version__} ({jax.devices()[0].platform}), kiln {kiln.__version__}; median of {a.reps} calls\n")
    print("| function | first call: jax.jit | kiln.jit | per call: jax.jit | kiln.jit | per call, kiln / jax |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, fn, args in workloads():
        if a.only and not any(t in name for t in a.only):
            continue
        jf, jc = timed(jax.jit(fn), args, a.reps)
        kf, kc = timed(kiln.jit(fn), args, a.reps)
        print(f"| {name} | {jf * 1e3:.1f} ms | {kf * 1e3:.1f} ms | {jc * 1e6:.0f} us | {kc * 1e6:.0f} us | {kc / jc:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
