"""The persistent compile cache (`TF_XLA_FLAGS=--xla_gpu_persistent_cache_dir=…`) is
written by one Python process and reused by a second, which compiles nothing."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, os, sys
import numpy as np
import jax.numpy as jnp
import kiln
f = kiln.jit(lambda x, w: jnp.tanh(x @ w) * jnp.exp(-x.sum(1, keepdims=True)))
x = np.linspace(-1, 1, 96, dtype=np.float32).reshape(8, 12)
w = np.linspace(0, 1, 48, dtype=np.float32).reshape(12, 4)
out = f(x, w)
stats = f.stats()
print(json.dumps({
    "compiles": sum(s["compiles"] for s in stats.values()),
    "disk_hits": sum(s["disk_hits"] for s in stats.values()),
    "compiled_runs": sum(s["compiled_runs"] for s in stats.values()),
    "out": out.tobytes().hex(),
}))
"""


def run_process(cache_dir):
    env = dict(os.environ)
    env["TF_XLA_FLAGS"] = f"--xla_gpu_persistent_cache_dir={cache_dir} --tf_xla_enable_lazy_compilation=false"
    env["JAX_PLATFORMS"] = "cpu"
    env["KILN_DEVICE"] = "cpu"
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_second_process_loads_from_disk(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    first = run_process(cache)
    assert first["compiles"] >= 1 and first["disk_hits"] == 0 and first["compiled_runs"] >= 1
    assert any(cache.iterdir()), "the first process wrote no entry"
    second = run_process(cache)
    assert second["compiles"] == 0 and second["disk_hits"] == first["compiles"]
    assert second["out"] == first["out"]


def test_op_determinism_is_reported_as_set_in_code():
    code = "import kiln; kiln.enable_op_determinism(); print(kiln.flags()['TF_DETERMINISTIC_OPS']['value'], '|', kiln.flags()['TF_DETERMINISTIC_OPS']['source'])"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "true | set in code"
