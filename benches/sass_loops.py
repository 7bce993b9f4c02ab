#!/usr/bin/env python3
"""SASS instructions per loop of a cubin: a static proxy for the issue cost of emitted PTX.

Usage (no GPU needed; ptxas from pip `nvidia-cuda-nvcc-cu12`, nvdisasm from pip
`nvidia-cuda-nvdisasm`):

    cargo run --release -- compile FILE.kir --target sm_90 --out /tmp/ptx
    ptxas -arch=sm_90 -O3 /tmp/ptx/cluster_0.ptx -o /tmp/k.cubin
    nvdisasm -c /tmp/k.cubin > /tmp/k.sass
    python3 benches/sass_loops.py /tmp/k.sass

Prints every loop (a backward branch to a label) with its length in instructions and its
most frequent opcodes. Divide a loop's length by the elements one trip handles (32 for a
plain-load reduction, 8 for other unrolled reductions and row steps) for instructions per
element.
"""
import re
import sys


def main(path):
    labels, ins = {}, []
    for line in open(path).read().split("\n"):
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if m:
            ins.append(m.group(2))
    print("instructions:", len(ins))
    for i, s in enumerate(ins):
        m = re.search(r"BRA `\((\.L_x_\d+)\)", s)
        if not m or labels.get(m.group(1), len(ins)) > i:
            continue
        body = ins[labels[m.group(1)] : i + 1]
        kinds = {}
        for b in body:
            op = re.sub(r"^@!?U?P\w+\s+", "", b).split()[0].split(".")[0]
            kinds[op] = kinds.get(op, 0) + 1
        top = sorted(kinds.items(), key=lambda x: -x[1])[:8]
        print(f"loop {m.group(1)}: {len(body)} instructions {top}")


if __name__ == "__main__":
    main(sys.argv[1])
