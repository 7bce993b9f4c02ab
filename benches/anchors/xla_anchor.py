#!/usr/bin/env python3
"""Anchors for `kiln bench --compare`: the same workloads as Kiln's built-in ones, run with
JAX (`jax.jit`) and TensorFlow (eager, `tf.function`, `tf.function(jit_compile=True)`) when
they are installed. Writes a JSON array of records {workload, size, mode, median_ms, min_ms,
max_ms, first_call_ms, compile_ms, reps} that `kiln bench --compare FILE` reads.

    pip install jax tensorflow-cpu
    python3 benches/anchors/xla_anchor.py --size medium --out anchors.json
    cargo run --release -- bench --compare anchors.json

Inputs are random (the timings do not depend on the values); shapes match Kiln's sizes.
Missing frameworks are skipped with a note on stderr.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

SIZES = {
    "small": dict(n=1 << 20, rows=(256, 1024), batch=64),
    "medium": dict(n=1 << 24, rows=(4096, 1024), batch=256),
    "large": dict(n=1 << 26, rows=(16384, 1024), batch=1024),
}
BASE_WORKLOADS = ["bias_relu", "chain", "gelu", "softmax", "layernorm", "sum", "mlp", "rng_normal"]
# The 16-bit variants of Kiln's `gelu_f16`, `layernorm_bf16`, ... rows: the same function on
# float16 / bfloat16 arguments (jax.jit only; each op's result is 16-bit, as in Kiln).
HALF = {"f16": "float16", "bf16": "bfloat16"}
HALF_BASES = ["bias_relu", "gelu", "layernorm", "mlp"]
WORKLOADS = BASE_WORKLOADS + [f"{b}_{h}" for b in HALF_BASES for h in HALF]


def split_half(name):
    """(base workload, 16-bit dtype name or None) of a workload name."""
    for h, dtype in HALF.items():
        if name.endswith("_" + h):
            return name[: -len(h) - 1], dtype
    return name, None


def inputs(name, sz, rng):
    f = lambda *s: rng.uniform(-4, 4, size=s).astype(np.float32)
    n, (r, c), b = sz["n"], sz["rows"], sz["batch"]
    if name in ("chain", "gelu", "sum"):
        return [f(n)]
    if name == "bias_relu":
        return [f(n // 1024, 1024), f(1024)]
    if name in ("softmax", "layernorm"):
        return [f(r, c)]
    if name == "mlp":
        return [f(b, 784) * 0.25, f(784, 512) * 0.01, f(512) * 0.01, f(512, 10) * 0.01,
                f(10) * 0.01]
    return []


def programs(np_like, nn):
    """The workloads over a numpy-like module (jax.numpy or tf.math-ish adaptor)."""
    def gelu(x):
        return 0.5 * x * (1.0 + np_like.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    def softmax(x):
        e = np_like.exp(x - np_like.max(x, axis=1, keepdims=True))
        return e / np_like.sum(e, axis=1, keepdims=True)

    def layernorm(x):
        # As Kiln's `layer_norm` and flax's LayerNorm: times the reciprocal square root.
        m = np_like.mean(x, axis=1, keepdims=True)
        d = x - m
        return d * np_like.rsqrt(np_like.mean(d * d, axis=1, keepdims=True) + 1e-5)

    def mlp(x, w1, b1, w2, b2):
        h = np_like.maximum(nn.matmul(x, w1) + b1, 0.0)
        return softmax(nn.matmul(h, w2) + b2)

    return {
        "bias_relu": lambda x, b: np_like.maximum(x + b, 0.0),
        "chain": lambda x: np_like.tanh(x * 1.5 + 0.25) * 0.5 + x,
        "gelu": gelu,
        "softmax": softmax,
        "layernorm": layernorm,
        "sum": lambda x: np_like.sum(x),
        "mlp": mlp,
    }


def timeit(fn, sync, budget_s, min_reps=3, max_reps=200):
    t = time.perf_counter()
    sync(fn())
    first = (time.perf_counter() - t) * 1e3
    sync(fn())
    samples = []
    start = time.perf_counter()
    while len(samples) < max_reps and (len(samples) < min_reps or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        sync(fn())
        samples.append((time.perf_counter() - t) * 1e3)
    return first, samples


def record(workload, size, mode, first, samples, compile_ms=None):
    return dict(workload=workload, size=size, mode=mode, median_ms=statistics.median(samples),
                min_ms=min(samples), max_ms=max(samples), first_call_ms=first,
                compile_ms=compile_ms, reps=len(samples))


def run_jax(size, sz, names, budget, out):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax not installed: skipping jax.jit", file=sys.stderr)
        return
    class JaxNp:
        """`jax.numpy`, with `lax.rsqrt` as `rsqrt`."""
        def __getattr__(self, name):
            return jax.lax.rsqrt if name == "rsqrt" else getattr(jnp, name)

    progs = programs(JaxNp(), jnp)
    rng = np.random.default_rng(0)
    # On a GPU the mode is `jax.jit@gpu`, and `kiln bench --device gpu --compare` sets it
    # beside Kiln's gpu rows; on the CPU it is plain `jax.jit` (beside the cpu rows).
    backend = jax.default_backend()
    mode = "jax.jit" if backend == "cpu" else f"jax.jit@{backend}"
    for name in names:
        if name == "rng_normal":
            key = jax.random.PRNGKey(42)
            f = jax.jit(lambda k: jax.random.normal(k, (sz["n"],), jnp.float32))
            args = [key]
        else:
            base, half = split_half(name)
            f = jax.jit(progs[base])
            dt = getattr(jnp, half) if half else None
            args = [jnp.asarray(a, dtype=dt) for a in inputs(base, sz, rng)]
        t = time.perf_counter()
        f.lower(*args).compile()
        compile_ms = (time.perf_counter() - t) * 1e3
        first, s = timeit(lambda: f(*args), lambda r: r.block_until_ready(), budget)
        out.append(record(name, size, mode, first, s, compile_ms))
        print(f"{mode} {name}: {statistics.median(s):.2f} ms", file=sys.stderr)


def run_tf(size, sz, names, budget, out):
    try:
        import tensorflow as tf
    except ImportError:
        print("tensorflow not installed: skipping tf modes", file=sys.stderr)
        return

    class TfNp:
        tanh, exp, sqrt, rsqrt, maximum = tf.tanh, tf.exp, tf.sqrt, tf.math.rsqrt, tf.maximum
        max = staticmethod(lambda x, axis=None, keepdims=False: tf.reduce_max(x, axis, keepdims))
        sum = staticmethod(lambda x, axis=None, keepdims=False: tf.reduce_sum(x, axis, keepdims))
        mean = staticmethod(lambda x, axis=None, keepdims=False: tf.reduce_mean(x, axis, keepdims))
        matmul = tf.matmul

    progs = programs(TfNp, TfNp)
    progs["rng_normal"] = lambda: tf.random.stateless_normal((sz["n"],), seed=[42, 7])
    rng = np.random.default_rng(0)
    for name in names:
        if split_half(name)[1]:
            print(f"{name}: 16-bit anchors are taken with jax.jit only", file=sys.stderr)
            continue
        args = [tf.constant(a) for a in inputs(name, sz, rng)]
        for mode, fn in (("tf.eager", progs[name]),
                         ("tf.function", tf.function(progs[name])),
                         ("tf.xla", tf.function(progs[name], jit_compile=True))):
            first, s = timeit(lambda: fn(*args), lambda r: r.numpy(), budget)
            out.append(record(name, size, mode, first, s))
            print(f"{mode} {name}: {statistics.median(s):.2f} ms", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="medium", choices=SIZES)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--budget", type=float, default=3.0, help="seconds of warm reps per mode")
    p.add_argument("--out", default="anchors.json")
    p.add_argument("--frameworks", default="jax,tf")
    a = p.parse_args()
    names = [w for w in a.workloads.split(",") if w]
    bad = [w for w in names if w not in WORKLOADS]
    if bad:
        sys.exit(f"unknown workload(s) {bad} (anchors exist for: {', '.join(WORKLOADS)})")
    out = []
    fw = a.frameworks.split(",")
    if "jax" in fw:
        run_jax(a.size, SIZES[a.size], names, a.budget, out)
    if "tf" in fw:
        run_tf(a.size, SIZES[a.size], names, a.budget, out)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {len(out)} records to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
