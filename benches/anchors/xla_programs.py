#!/usr/bin/env python3
"""Anchors for `kiln bench --programs DIR --compare FILE`: XLA:CPU (through jaxlib) on the
same program folders. Each folder of DIR holds model.hlo (XLA HLO text), in<i>.npy and
optionally ref<i>.npy and tolerance.txt (the layout of tests/hlo/corpus; see
`kiln bench --help`). For each folder this script

  - compiles model.hlo's text for the CPU: HLO text -> HloModule (jaxlib's
    hlo_module_from_text) -> StableHLO -> the CPU client's compile_and_load, timed as
    compile_ms (from the text to a loaded executable);
  - runs it once on the inputs: first_call_ms is compile_ms plus that first run (inputs put
    on the device, outputs waited for), the time from the text to the first result;
  - checks the outputs against ref<i>.npy with the folder's tolerance (the rule Kiln uses:
    |xla - ref| <= tol * (|ref| + the output's largest |ref|), default 1e-5; `unchecked K`
    outputs only by type), and stops with an error naming the program if they differ;
  - times repeated calls (each waited for) for --budget seconds, keeping the median. The
    inputs are put on the device once, before the first run, as jax.jit users hold
    jax.Arrays; Kiln's calls take host tensors every time (on the CPU the same memory).

It writes a JSON array of records {workload: the folder's name, size: "program",
mode: "xla", median_ms, min_ms, max_ms, first_call_ms, compile_ms, reps}, the format of
benches/anchors/xla_anchor.py, which `kiln bench --compare` reads. Folders with model.kir
instead of model.hlo are skipped with a note (XLA does not read Kiln's text).

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax      # jax 0.10
    /tmp/jaxenv/bin/python benches/anchors/xla_programs.py tests/hlo/corpus \\
        --out benches/anchors/programs-epyc2.json
    cargo run --release -- bench --programs tests/hlo/corpus \\
        --compare benches/anchors/programs-epyc2.json

A trivial module is compiled first, untimed, so that XLA's one-time start-up (LLVM's
initialisation, the thread pool) is not charged to the first program.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

TRIVIAL = """HloModule warmup
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
"""


def parse_tolerance(path):
    """tolerance.txt: one relative tolerance, optional `unchecked K ...` lines, # comments."""
    rel, unchecked = None, []
    if not os.path.exists(path):
        return 1e-5, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            if line.startswith("unchecked"):
                unchecked += [int(k) for k in line[len("unchecked"):].replace(",", " ").split()]
            elif rel is None:
                rel = float(line)
            else:
                raise SystemExit(f"{path}:{n}: a second tolerance")
    if rel is None:
        raise SystemExit(f"{path}: no tolerance given")
    return rel, unchecked


def numbered(folder, stem):
    out = []
    while os.path.exists(os.path.join(folder, f"{stem}{len(out)}.npy")):
        out.append(np.load(os.path.join(folder, f"{stem}{len(out)}.npy")))
    return out


def check(name, got, refs, rel, unchecked):
    """Raises SystemExit naming the first output beyond the tolerance."""
    if len(got) != len(refs):
        raise SystemExit(f"{name}: {len(got)} outputs, {len(refs)} ref files")
    worst = 0.0
    for k, (g, w) in enumerate(zip(got, refs)):
        if g.dtype != w.dtype or g.shape != w.shape:
            raise SystemExit(f"{name} output {k}: {g.dtype}{g.shape}, ref {w.dtype}{w.shape}")
        if k in unchecked:
            continue
        if not np.issubdtype(w.dtype, np.floating):
            if not np.array_equal(g, w):
                raise SystemExit(f"{name} output {k} differs from ref{k}.npy")
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        # The largest |ref| over the numbers (NaNs skipped, as kiln's check: f64::max).
        scale = np.max(np.abs(w64), initial=0.0, where=~np.isnan(w64))
        err = np.abs(g64 - w64) / np.maximum(np.abs(w64) + scale, np.finfo(np.float64).tiny)
        err = np.where(np.isnan(g64) & np.isnan(w64), 0.0, err)
        bad = ~(err <= rel)
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise SystemExit(f"{name} output {k}[{i}]: xla {g64.ravel()[i]:e}, ref "
                             f"{w64.ravel()[i]:e} (relative error {err.ravel()[i]:.1e} > {rel:.1e})")
        worst = max(worst, float(err.max()) if err.size else 0.0)
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", help="one folder per program (e.g. tests/hlo/corpus)")
    p.add_argument("--out", default="programs.json")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of warm calls per program")
    p.add_argument("--min-reps", type=int, default=5)
    p.add_argument("--max-reps", type=int, default=1000)
    a = p.parse_args()

    import jax
    jax.config.update("jax_platforms", "cpu")
    # The inputs keep their dtypes (TensorFlow programs take s64 seeds and shapes).
    jax.config.update("jax_enable_x64", True)
    from jax._src.lib import _jax, xla_client
    from jaxlib import _hlo

    device = jax.devices("cpu")[0]
    client = device.client
    devices = xla_client.DeviceList((device,))

    def compile_text(text):
        module = _hlo.hlo_module_from_text(text)
        mlir = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        return client.compile_and_load(mlir, devices, xla_client.CompileOptions())

    compile_text(TRIVIAL)
    # jaxlib binds its LAPACK kernels (the custom calls of jnp.linalg: getrf, potrf, trsm,
    # geqrf, orgqr, syevd, gesdd) when JAX first lowers one; HLO text that calls them
    # crashes XLA before that.
    import jax.numpy as jnp
    eye = jnp.eye(2, dtype=jnp.float32)
    jax.block_until_ready((jnp.linalg.solve(eye, eye), jnp.linalg.cholesky(eye),
                           jnp.linalg.qr(eye), jnp.linalg.eigh(eye), jnp.linalg.svd(eye)))
    out = []
    for name in sorted(os.listdir(a.dir)):
        folder = os.path.join(a.dir, name)
        if not os.path.isdir(folder):
            raise SystemExit(f"{folder}: not a program folder")
        model = os.path.join(folder, "model.hlo")
        if not os.path.exists(model):
            print(f"{name}: no model.hlo (XLA reads HLO, not .kir): skipped", file=sys.stderr)
            continue
        with open(model) as f:
            text = f.read()
        inputs = numbered(folder, "in")
        refs = numbered(folder, "ref")
        rel, unchecked = parse_tolerance(os.path.join(folder, "tolerance.txt"))

        def call(exe, args):
            outs = exe.execute(args)
            for o in outs:
                o.block_until_ready()
            return outs

        t = time.perf_counter()
        exe = compile_text(text)
        compile_ms = (time.perf_counter() - t) * 1e3
        args = [jax.device_put(x, device) for x in inputs]
        outs = call(exe, args)
        first_ms = (time.perf_counter() - t) * 1e3
        got = [np.asarray(o) for o in outs]
        worst = check(name, got, refs, rel, unchecked) if refs else None
        call(exe, args)
        samples = []
        start = time.perf_counter()
        while len(samples) < a.max_reps and (
            len(samples) < a.min_reps or time.perf_counter() - start < a.budget
        ):
            t = time.perf_counter()
            call(exe, args)
            samples.append((time.perf_counter() - t) * 1e3)
        out.append(dict(workload=name, size="program", mode="xla",
                        median_ms=statistics.median(samples), min_ms=min(samples),
                        max_ms=max(samples), first_call_ms=first_ms, compile_ms=compile_ms,
                        reps=len(samples)))
        checked = "no refs" if worst is None else f"largest error vs ref {worst:.1e}"
        print(f"xla {name}: compile {compile_ms:.1f} ms, first {first_ms:.1f} ms, median "
              f"{statistics.median(samples):.3f} ms ({checked})", file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} records to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
