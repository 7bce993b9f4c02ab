"""Times the ops of `interp_vs_numpy` with numpy on inputs of the same size and prints one
JSON object {op: median milliseconds}. Exits with status 2 (and a message on stderr) when
numpy is not installed; the Rust side then shows Kiln's numbers alone."""

import json
import sys
import time

try:
    import numpy as np
except ImportError:
    print("numpy is not installed", file=sys.stderr)
    sys.exit(2)

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
N = 4096

rng = np.random.default_rng(0)
a = rng.uniform(-5.0, 5.0, size=(N, N)).astype(np.float32)
b = rng.uniform(-5.0, 5.0, size=(N, N)).astype(np.float32)
v = rng.uniform(-5.0, 5.0, size=(N,)).astype(np.float32)
pos = np.abs(a)
lhs = rng.uniform(-1.0, 1.0, size=(256, 784)).astype(np.float32)
rhs = rng.uniform(-1.0, 1.0, size=(784, 512)).astype(np.float32)

OPS = {
    "add": lambda: np.add(a, b),
    "mul": lambda: np.multiply(a, b),
    "max": lambda: np.maximum(a, b),
    "exp": lambda: np.exp(a),
    "tanh": lambda: np.tanh(a),
    # numpy has no fused logistic; this is what numpy users write.
    "logistic": lambda: 1.0 / (1.0 + np.exp(-a)),
    "sin": lambda: np.sin(a),
    "cos": lambda: np.cos(a),
    "sqrt": lambda: np.sqrt(pos),
    "reduce_sum (all)": lambda: np.sum(a),
    "reduce_max (rows)": lambda: np.max(a, axis=1),
    "reduce_sum (cols)": lambda: np.sum(a, axis=0),
    "transpose": lambda: np.ascontiguousarray(a.T),
    "broadcast": lambda: np.broadcast_to(v, (N, N)).copy(),
    "matmul 256x784x512": lambda: lhs @ rhs,
}


def median_ms(f):
    f()
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


print(json.dumps({name: median_ms(f) for name, f in OPS.items()}))
