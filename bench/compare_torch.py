#!/usr/bin/env python3
"""Compare relattn's native forward with an efficient PyTorch layer of the same attention, on the same tensors.

The peer is the layer a performance-minded PyTorch user would write for Shaw et al.'s relation-aware
attention (hidden 512, 8 heads, clipping distance k = 16, batch 1, one shared table of 2k+1 rows):

    Q, K, V = x W_q + b_q, x W_k + b_k, x W_v + b_v            split into heads (1, h, n, d_h)
    P       = Q w^Kᵀ                                           (1, h, n, 2k+1)
    S       = P.gather(-1, clip(j - i, k) + k)                 (1, h, n, n)  the relative logits
    without a^V: z = scaled_dot_product_attention(Q, K, V, attn_mask = S / sqrt(d_h))
    with a^V:    α = softmax((Q Kᵀ + S) / sqrt(d_h));  z = α V + B w^V,
                 B = zeros(1, h, n, 2k+1).scatter_add_(-1, clip(j - i, k) + k, α)
    output  = concat_h(z) W_o + b_o

For every n in --sizes, without and with a^V:
1. ``export`` worker: numpy (seed 0) writes x ~ N(0, 1), Xavier-uniform weights and tables, small biases, as
   relattn's scenario .npz.
2. ``torch`` worker (its own process): times the peer's forward under torch.inference_mode() with
   torch.set_num_threads(2) (median after a warm-up) and saves its output.
3. relattn: ``relattn bench --tensors in.npz --heads 8 --clip 16 [--relative-values false] --threads 2 --save-output``.
4. The outputs are compared in a child (max |a − b| / max |b|, b = torch). Each side's peak memory is its
   own VmHWM (/proc/self/status: the resident high-water mark of the process's own image; a forked child's
   ru_maxrss would count the driver's memory at the fork).
5. The machine's sgemm peak (bench/peak_matmul.py's torch.mm, 2 threads) is measured in the same run, so
   "% of peak" is relattn's GFLOP/s (counted flops, see `relattn bench`) over it.

Prints a markdown table and writes it, with the machine and date, to bench/results/compare_torch.md.

Usage (from the repository root):
    python3 bench/compare_torch.py                       # n = 256 512 1024 2048 4096 8192
    python3 bench/compare_torch.py --sizes 512 2048
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

from compare_seed import arguments, ensure, failure, last_json, load_output, machine, relattn_binary, run_measured
from peak_matmul import peak

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(HERE, "results", "compare_torch.md")
HIDDEN, HEADS, CLIP, THREADS = 512, 8, 16, 2
TOLERANCE = 1e-4


def default_reps(n):
    """Timed repetitions (after one warm-up) per size; fewer for big n."""
    return 20 if n <= 512 else 10 if n <= 1024 else 5 if n <= 2048 else 3 if n <= 4096 else 2


# -------------------------------------------------------------------------------------------- workers

def worker_export(args):
    """The scenario .npz for n: x (1, n, 512) ~ N(0, 1); w_q, w_k, w_v, w_o (512, 512) and the tables
    (2k+1, 64) Xavier-uniform; biases uniform in ±0.1. w^V only with --rel-v (relattn refuses a table it
    would not use); the other arrays are the same either way."""
    import numpy as np
    rng = np.random.default_rng(0)
    rows, dh = 2 * CLIP + 1, HIDDEN // HEADS

    def xavier(shape):
        bound = (6.0 / (shape[-2] + shape[-1])) ** 0.5
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    arrays = {"x": rng.standard_normal((1, args.n, HIDDEN)).astype(np.float32)}
    for name in "qkvo":
        arrays["w_" + name] = xavier((HIDDEN, HIDDEN))
        arrays["b_" + name] = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
    arrays["rel_k"] = xavier((rows, dh))
    rel_v = xavier((rows, dh))
    if args.rel_v:
        arrays["rel_v"] = rel_v
    np.savez(args.npz, **arrays)


def peer_forward(torch, t, rel_index, rel_v):
    """The efficient PyTorch layer of this file's docstring; `t` holds the scenario's tensors, `rel_index`
    is the (n, n) long tensor clip(j − i, k) + k."""
    F = torch.nn.functional
    x = t["x"]
    b, n, d = x.shape
    dh = d // HEADS

    def heads(w, bias):
        return torch.addmm(bias, x.view(n * b, d), w).view(b, n, HEADS, dh).transpose(1, 2)

    q, k, v = heads(t["w_q"], t["b_q"]), heads(t["w_k"], t["b_k"]), heads(t["w_v"], t["b_v"])
    index = rel_index.expand(b, HEADS, n, n)
    relative = torch.matmul(q, t["rel_k"].t()).gather(-1, index)
    scale = dh ** -0.5
    if not rel_v:
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=relative.mul_(scale))
    else:
        logits = torch.matmul(q, k.transpose(-1, -2)).add_(relative).mul_(scale)
        weights = torch.softmax(logits, dim=-1)
        buckets = torch.zeros(b, HEADS, n, t["rel_v"].shape[0]).scatter_add_(-1, index, weights)
        z = torch.matmul(weights, v).add_(torch.matmul(buckets, t["rel_v"]))
    return torch.addmm(t["b_o"], z.transpose(1, 2).reshape(b * n, d), t["w_o"]).view(b, n, d)


def worker_peak(args):
    """Prints the sgemm peak as one JSON line (in a child: the driver stays small, so the children it forks
    start with a small resident set and their peak RSS is their own)."""
    import json
    print(json.dumps({"gflop_per_s": peak(THREADS)}))


def worker_torch(args):
    """Times the peer's forward for n; prints one JSON line."""
    import json
    import numpy as np
    import torch
    torch.set_num_threads(THREADS)
    with np.load(args.npz) as f:
        t = {name: torch.from_numpy(f[name]) for name in f.files}
    n = t["x"].shape[1]
    pos = torch.arange(n)
    rel_index = (pos[None, :] - pos[:, None]).clamp(-CLIP, CLIP) + CLIP
    times = []
    with torch.inference_mode():
        out = peer_forward(torch, t, rel_index, args.rel_v)  # warm-up
        for _ in range(args.reps):
            start = time.perf_counter()
            out = peer_forward(torch, t, rel_index, args.rel_v)
            times.append((time.perf_counter() - start) * 1e3)
    np.save(args.save_output, out.numpy().astype(np.float32))
    times.sort()
    print(json.dumps({"ms_per_forward": times[len(times) // 2], "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "peak_rss_mib": vm_hwm_mib()}))


def vm_hwm_mib():
    """This process's resident high-water mark in MiB (what `relattn bench` reports as peak_rss_mib)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def worker_compare(args):
    """Prints max |relattn − torch| / max |torch| of the two saved outputs (relattn's, torch's) as one JSON
    line."""
    import json
    import numpy as np
    a, b = load_output(args.outputs[0]), np.load(args.outputs[1])
    print(json.dumps({"error": float(np.abs(a - b).max() / np.abs(b).max())}))


# ------------------------------------------------------------------------------------------------ main

def fmt(v, spec, unit=""):
    return "—" if v is None else format(v, spec) + unit


def table(rows, peak_gflops):
    lines = ["| n | a^V | torch ms | relattn ms | speed-up | relattn GFLOP/s | % of sgemm peak | torch peak MiB | "
             "relattn peak MiB | max rel. error |",
             "|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        speed = r["torch_ms"] / r["rel_ms"] if r["torch_ms"] and r["rel_ms"] else None
        pct = 100 * r["gflops"] / peak_gflops if r["gflops"] else None
        err = "—" if r["err"] is None else f"{r['err']:.1e}" + ("" if r["err"] <= TOLERANCE else " FAIL")
        torch_ms = fmt(r["torch_ms"], ".2f") if r["torch_ms"] is not None else r["torch_fail"]
        rel_ms = fmt(r["rel_ms"], ".2f") if r["rel_ms"] is not None else r["rel_fail"]
        lines.append(f"| {r['n']} | {'on' if r['rel_v'] else 'off'} | {torch_ms} | {rel_ms} | {fmt(speed, '.2f', '×')} | "
                     f"{fmt(r['gflops'], '.1f')} | {fmt(pct, '.0f', '%')} | {fmt(r['torch_mib'], '.0f')} | "
                     f"{fmt(r['rel_mib'], '.0f')} | {err} |")
    return "\n".join(lines)


def measure(n, rel_v, reps, binary, me, work, env, timeout):
    """One row: the peer and relattn on the same exported tensors (the driver imports neither numpy nor
    torch, so that it stays small)."""
    flag = ["--rel-v"] if rel_v else []
    npz = os.path.join(work, f"in_{n}_{'rel_v' if rel_v else 'no_rel_v'}.npz")
    rc, _, err, _, _ = run_measured(me + ["--worker", "export", "--n", str(n), "--npz", npz, *flag], timeout, env)
    if rc != 0:
        raise SystemExit(f"error: exporting n = {n} failed:\n{err}")
    torch_out, rel_out = os.path.join(work, "torch_out.npy"), os.path.join(work, "relattn_out.npy")
    row = {"n": n, "rel_v": rel_v, "torch_ms": None, "rel_ms": None, "torch_mib": None, "rel_mib": None, "gflops": None,
           "err": None, "torch_fail": None, "rel_fail": None}
    print(f"[n={n} a^V {'on' if rel_v else 'off'}] torch ({reps} reps)...", file=sys.stderr, flush=True)
    rc, out, err, _, _ = run_measured(
        me + ["--worker", "torch", "--npz", npz, "--save-output", torch_out, "--reps", str(reps), *flag], timeout, env)
    info = last_json(out) if rc == 0 else None
    if info:
        row["torch_ms"], row["torch_mib"] = info["ms_per_forward"], info["peak_rss_mib"]
    else:
        row["torch_fail"] = failure(rc, err)
    print(f"[n={n} a^V {'on' if rel_v else 'off'}] relattn ({reps} reps)...", file=sys.stderr, flush=True)
    cmd = [binary, "bench", "--tensors", npz, "--heads", str(HEADS), "--clip", str(CLIP), "--reps", str(reps),
           "--threads", str(THREADS), "--save-output", rel_out, "--max-memory-mb", "20000"]
    if not rel_v:
        cmd += ["--relative-values", "false"]
    rc, out, err, _, _ = run_measured(cmd, timeout, env)
    info = last_json(out) if rc == 0 else None
    if info:
        row["rel_ms"], row["gflops"], row["rel_mib"] = info["ms_per_forward"], info["gflop_per_s"], info["peak_rss_mib"]
    else:
        row["rel_fail"] = failure(rc, err)
    if row["torch_ms"] is not None and row["rel_ms"] is not None:
        rc, out, err, _, _ = run_measured(me + ["--worker", "compare", "--outputs", rel_out, torch_out], timeout, env)
        row["err"] = last_json(out)["error"] if rc == 0 else None
    return row


def main():
    ap = arguments(__doc__, [256, 512, 1024, 2048, 4096, 8192], "20/10/5/3/2", DEFAULT_OUT, ["export", "peak", "torch", "compare"])
    ap.add_argument("--rel-v", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--outputs", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        {"export": worker_export, "peak": worker_peak, "torch": worker_torch, "compare": worker_compare}[args.worker](args)
        return

    ensure("numpy")
    torch_version = ensure("torch")
    default_binary = os.path.abspath(args.relattn) == os.path.join(ROOT, "target", "release", "relattn")
    binary = relattn_binary(args.relattn, default_binary and not args.no_build)
    if os.getloadavg()[0] > 0.5:
        print(f"[warning] 1-minute load average is {os.getloadavg()[0]:.2f}: other work on this machine will "
              "perturb the timings", file=sys.stderr)
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))
    work = args.keep or tempfile.mkdtemp(prefix="compare_torch_")
    os.makedirs(work, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__)]
    print("[setup] the sgemm peak (torch.mm, 2 threads)...", file=sys.stderr, flush=True)
    rc, out, err, _, _ = run_measured(me + ["--worker", "peak"], args.timeout, env)
    if rc != 0:
        raise SystemExit(f"error: measuring the sgemm peak failed:\n{err}")
    peak_gflops = last_json(out)["gflop_per_s"]
    rows = [measure(n, rel_v, args.reps or default_reps(n), binary, me, work, env, args.timeout)
            for n in args.sizes for rel_v in (False, True)]
    text = table(rows, peak_gflops)
    print(text)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(f"# relattn vs an efficient PyTorch layer\n\n{stamp}, {machine()}; torch {torch_version}, {version}; "
                f"{THREADS} threads each; hidden {HIDDEN}, {HEADS} heads, k {CLIP}, batch 1; sgemm peak "
                f"{peak_gflops:.1f} GFLOP/s (torch.mm, {THREADS} threads, same run). `python3 bench/compare_torch.py`\n\n"
                f"{text}\n")
    print(f"[written] {args.out}", file=sys.stderr)
    if any(r["err"] is not None and r["err"] > TOLERANCE for r in rows):
        raise SystemExit("error: an output differs from the peer's by more than the tolerance")


if __name__ == "__main__":
    main()
