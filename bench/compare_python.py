#!/usr/bin/env python3
"""relattn.attention from Python against `relattn bench` on the same tensors (issue #26's speed goal: within
10 % at n 2048). Both run the fused forward with 2 threads; Python's time is the median of its calls (the
arrays read once from NumPy, the output handed back as a NumPy array), the CLI's its own median per forward.

Run after `make test-python` (its target/pyvenv has the wheel):
    target/pyvenv/bin/python bench/compare_python.py [--sizes 512 2048] [--method shaw]
Writes bench/results/compare_python.md with the machine and date.
"""

import argparse
import datetime
import json
import os
import subprocess
import tempfile
import time

import numpy as np

import relattn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HIDDEN, HEADS, THREADS = 512, 8, 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--method", default="shaw")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--relattn", default=os.path.join(ROOT, "target", "release", "relattn"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "compare_python.md"))
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(THREADS)
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        arrays = {"x": rng.standard_normal((1, n, HIDDEN)).astype(np.float32)}
        for name in "qkvo":
            arrays["w_" + name] = rng.uniform(-0.07, 0.07, (HIDDEN, HIDDEN)).astype(np.float32)
        npz = os.path.join(tempfile.mkdtemp(prefix="compare_python_"), "in.npz")
        np.savez(npz, **arrays)
        options = dict(method=args.method, heads=HEADS, clip=16, relative_values=False)
        relattn.attention(**arrays, **options)  # warm-up
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            relattn.attention(**arrays, **options)
            times.append((time.perf_counter() - start) * 1e3)
        py_ms = sorted(times)[len(times) // 2]
        cmd = [args.relattn, "bench", "--tensors", npz, "--method", args.method, "--heads", str(HEADS), "--clip", "16", "--relative-values", "false",
               "--threads", str(THREADS), "--reps", str(args.reps)]
        cli = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        rows.append((n, py_ms, cli["ms_per_forward"]))
        print(f"n {n}: Python {py_ms:.2f} ms, CLI {cli['ms_per_forward']:.2f} ms", flush=True)
    table = ["| n | Python ms | relattn bench ms | Python / CLI |", "|---:|---:|---:|---:|"]
    table += [f"| {n} | {p:.2f} | {c:.2f} | {p / c:.2f}× |" for n, p, c in rows]
    text = "\n".join(table)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(f"# relattn.attention (Python) vs relattn bench\n\n{stamp}, {os.cpu_count()} CPUs; method {args.method}, hidden {HIDDEN}, "
                f"{HEADS} heads, k 16, no a^V, batch 1, {THREADS} threads each, median of {args.reps}. "
                f"`target/pyvenv/bin/python bench/compare_python.py`\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
