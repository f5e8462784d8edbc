#!/usr/bin/env python3
"""Compare relattn's native forward of RoPE, ALiBi and T5's bucketed bias with the PyTorch layers people use.

The peers are what Hugging Face's models do for each scheme, written for speed (hidden 512, 8 heads, batch
1, bidirectional, 2 threads):

    Q, K, V = x W + b, split into heads (1, h, n, d_h)
    rope:  Q, K rotated by Llama's rotary embedding (rotate_half: the half-split layout, base 10000), then
           z = scaled_dot_product_attention(Q, K, V)
    alibi: bias[h, i, j] = −m_h |j − i| (BLOOM's slopes), z = scaled_dot_product_attention(Q, K, V, attn_mask=bias)
    t5:    bias[h, i, j] = table[bucket(j − i), h] gathered each forward (32 buckets, max_distance 128; the
           bucket matrix computed once, as T5 does per forward), z = scaled_dot_product_attention(Q, K, V,
           attn_mask=bias)
    output = concat_h(z) W_o + b_o

relattn runs `relattn bench --method {rope,alibi,t5}` on the same tensors (its fused forward: no (n, n) array),
and Shaw's fused forward (k 16, no a^V) on them too, the reference of issue #24's "within 1.25× of Shaw".
Each side's time is its median after a warm-up, its memory its own VmHWM, the outputs are compared, and the
sgemm peak (torch.mm, 2 threads) is measured in the same run. Prints a markdown table and writes it, with
the machine and date, to bench/results/compare_schemes.md.

Usage (from the repository root):
    python3 bench/compare_schemes.py                      # n = 512 2048 4096
    python3 bench/compare_schemes.py --sizes 1024
"""

import datetime
import os
import subprocess
import sys
import tempfile
import time

from compare_seed import arguments, ensure, failure, last_json, machine, relattn_binary, run_measured
from compare_torch import fmt, vm_hwm_mib, worker_compare, worker_peak

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(HERE, "results", "compare_schemes.md")
HIDDEN, HEADS, THREADS = 512, 8, 2
BUCKETS, MAX_DISTANCE = 32, 128
SCHEMES = ["rope", "alibi", "t5"]
TOLERANCE = 1e-4


def default_reps(n):
    return 10 if n <= 1024 else 5 if n <= 2048 else 3


def alibi_slopes(h):
    """Press et al.'s slopes (BLOOM's build_alibi_tensor)."""
    import math
    power = 2 ** math.floor(math.log2(h))
    base = 2.0 ** (-8.0 / power)
    slopes = [base ** (i + 1) for i in range(power)]
    extra = 2.0 ** (-4.0 / power)
    slopes += [extra ** (2 * i + 1) for i in range(h - power)]
    return slopes


def t5_buckets(torch, n):
    """Hugging Face's T5Attention._relative_position_bucket for j − i, bidirectional."""
    import math
    pos = torch.arange(n)
    rel = pos[None, :] - pos[:, None]
    half = BUCKETS // 2
    out = (rel > 0).long() * half
    rel = rel.abs()
    exact = half // 2
    large = exact + (torch.log(rel.float() / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)).long()
    large = torch.minimum(large, torch.full_like(large, half - 1))
    return out + torch.where(rel < exact, rel, large)


# -------------------------------------------------------------------------------------------- workers

def worker_export(args):
    """The scenario .npz: x (1, n, 512) ~ N(0, 1), Xavier-uniform weights, biases in ±0.1; ALiBi's slopes;
    T5's table (B, h) ~ N(0, 1)."""
    import numpy as np
    rng = np.random.default_rng(0)

    def xavier(shape):
        bound = (6.0 / (shape[-2] + shape[-1])) ** 0.5
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    arrays = {"x": rng.standard_normal((1, args.n, HIDDEN)).astype(np.float32)}
    for name in "qkvo":
        arrays["w_" + name] = xavier((HIDDEN, HIDDEN))
        arrays["b_" + name] = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
    if args.scheme == "alibi":
        arrays["alibi_slopes"] = np.array(alibi_slopes(HEADS), dtype=np.float32)
    if args.scheme == "t5":
        arrays["t5_bias"] = rng.standard_normal((BUCKETS, HEADS)).astype(np.float32)
    np.savez(args.npz, **arrays)


def peer_forward(torch, t, scheme, fixed):
    """The PyTorch layer of this file's docstring; `fixed` holds what a model computes once (RoPE's cos and
    sin, ALiBi's distances, T5's bucket matrix)."""
    F = torch.nn.functional
    x = t["x"]
    b, n, d = x.shape
    dh = d // HEADS

    def heads(w, bias):
        return torch.addmm(bias, x.view(n * b, d), w).view(b, n, HEADS, dh).transpose(1, 2)

    q, k, v = heads(t["w_q"], t["b_q"]), heads(t["w_k"], t["b_k"]), heads(t["w_v"], t["b_v"])
    mask = None
    if scheme == "rope":
        cos, sin = fixed

        def rotate_half(a):
            a1, a2 = a[..., : dh // 2], a[..., dh // 2:]
            return torch.cat((-a2, a1), dim=-1)

        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    elif scheme == "alibi":
        mask = fixed * t["alibi_slopes"].view(1, HEADS, 1, 1).neg()
    else:
        mask = t["t5_bias"][fixed].permute(2, 0, 1).unsqueeze(0)
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return torch.addmm(t["b_o"], z.transpose(1, 2).reshape(b * n, d), t["w_o"]).view(b, n, d)


def worker_torch(args):
    """Times the peer's forward; prints one JSON line."""
    import json
    import numpy as np
    import torch
    torch.set_num_threads(THREADS)
    with np.load(args.npz) as f:
        t = {name: torch.from_numpy(f[name]) for name in f.files}
    n, dh = t["x"].shape[1], HIDDEN // HEADS
    pos = torch.arange(n)
    if args.scheme == "rope":
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dh, 2, dtype=torch.float) / dh))
        freqs = pos[:, None].float() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        fixed = (emb.cos(), emb.sin())
    elif args.scheme == "alibi":
        fixed = (pos[None, :] - pos[:, None]).abs().float()
    else:
        fixed = t5_buckets(torch, n)
    times = []
    with torch.inference_mode():
        out = peer_forward(torch, t, args.scheme, fixed)
        for _ in range(args.reps):
            start = time.perf_counter()
            out = peer_forward(torch, t, args.scheme, fixed)
            times.append((time.perf_counter() - start) * 1e3)
    np.save(args.save_output, out.numpy().astype(np.float32))
    times.sort()
    print(json.dumps({"ms_per_forward": times[len(times) // 2], "peak_rss_mib": vm_hwm_mib()}))


# ------------------------------------------------------------------------------------------------ main

def shaw_ms(n, reps, binary, work, env, timeout):
    """relattn's Shaw forward (k 16, no a^V) on the tensors RoPE was measured on (x and the weights alone)."""
    npz = os.path.join(work, f"in_rope_{n}.npz")
    cmd = [binary, "bench", "--method", "shaw", "--tensors", npz, "--heads", str(HEADS), "--clip", "16", "--relative-values", "false", "--reps", str(reps),
           "--threads", str(THREADS), "--max-memory-mb", "20000"]
    rc, out, err, _, _ = run_measured(cmd, timeout, env)
    info = last_json(out) if rc == 0 else None
    return info["ms_per_forward"] if info else None


def measure(scheme, n, reps, binary, me, work, env, timeout):
    npz = os.path.join(work, f"in_{scheme}_{n}.npz")
    rc, _, err, _, _ = run_measured(me + ["--worker", "export", "--scheme", scheme, "--n", str(n), "--npz", npz], timeout, env)
    if rc != 0:
        raise SystemExit(f"error: exporting {scheme} n = {n} failed:\n{err}")
    torch_out, rel_out = os.path.join(work, "torch_out.npy"), os.path.join(work, "relattn_out.npy")
    row = {"scheme": scheme, "n": n, "torch_ms": None, "rel_ms": None, "torch_mib": None, "rel_mib": None, "gflops": None, "err": None,
           "torch_fail": None, "rel_fail": None}
    print(f"[{scheme} n={n}] torch ({reps} reps)...", file=sys.stderr, flush=True)
    rc, out, err, _, _ = run_measured(me + ["--worker", "torch", "--scheme", scheme, "--npz", npz, "--save-output", torch_out,
                                            "--reps", str(reps)], timeout, env)
    info = last_json(out) if rc == 0 else None
    if info:
        row["torch_ms"], row["torch_mib"] = info["ms_per_forward"], info["peak_rss_mib"]
    else:
        row["torch_fail"] = failure(rc, err)
    print(f"[{scheme} n={n}] relattn ({reps} reps)...", file=sys.stderr, flush=True)
    cmd = [binary, "bench", "--method", scheme, "--tensors", npz, "--heads", str(HEADS), "--reps", str(reps), "--threads", str(THREADS),
           "--save-output", rel_out, "--max-memory-mb", "20000", "--t5-buckets", str(BUCKETS), "--t5-max-distance", str(MAX_DISTANCE),
           "--rope-layout", "half"]
    if scheme == "t5":
        cmd.append("--per-head-tables")
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


def table(rows, peak_gflops):
    lines = ["| scheme | n | torch ms | relattn ms | speed-up | relattn / Shaw | relattn GFLOP/s | % of sgemm peak | torch peak MiB | "
             "relattn peak MiB | max rel. error |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        vs_shaw = r["rel_ms"] / r["shaw_ms"] if r["rel_ms"] and r.get("shaw_ms") else None
        speed = r["torch_ms"] / r["rel_ms"] if r["torch_ms"] and r["rel_ms"] else None
        pct = 100 * r["gflops"] / peak_gflops if r["gflops"] else None
        err = "—" if r["err"] is None else f"{r['err']:.1e}" + ("" if r["err"] <= TOLERANCE else " FAIL")
        torch_ms = fmt(r["torch_ms"], ".2f") if r["torch_ms"] is not None else r["torch_fail"]
        rel_ms = fmt(r["rel_ms"], ".2f") if r["rel_ms"] is not None else r["rel_fail"]
        lines.append(f"| {r['scheme']} | {r['n']} | {torch_ms} | {rel_ms} | {fmt(speed, '.2f', '×')} | {fmt(vs_shaw, '.2f', '×')} | {fmt(r['gflops'], '.1f')} | "
                     f"{fmt(pct, '.0f', '%')} | {fmt(r['torch_mib'], '.0f')} | {fmt(r['rel_mib'], '.0f')} | {err} |")
    return "\n".join(lines)


def main():
    ap = arguments(__doc__, [512, 2048, 4096], "10/5/3", DEFAULT_OUT, ["export", "peak", "torch", "compare"])
    ap.add_argument("--scheme", choices=SCHEMES, help="(worker) the scheme")
    ap.add_argument("--outputs", nargs=2, help="(worker) relattn's and torch's outputs")
    args = ap.parse_args()
    if args.worker:
        {"export": worker_export, "peak": worker_peak, "torch": worker_torch, "compare": worker_compare}[args.worker](args)
        return

    ensure("numpy")
    torch_version = ensure("torch")
    default_binary = os.path.abspath(args.relattn) == os.path.join(ROOT, "target", "release", "relattn")
    binary = relattn_binary(args.relattn, default_binary and not args.no_build)
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))
    work = args.keep or tempfile.mkdtemp(prefix="compare_schemes_")
    os.makedirs(work, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__)]
    rc, out, err, _, _ = run_measured(me + ["--worker", "peak"], args.timeout, env)
    if rc != 0:
        raise SystemExit(f"error: measuring the sgemm peak failed:\n{err}")
    peak_gflops = last_json(out)["gflop_per_s"]
    rows = []
    for n in args.sizes:
        reps = args.reps or default_reps(n)
        at_n = [measure(scheme, n, reps, binary, me, work, env, args.timeout) for scheme in SCHEMES]
        shaw = shaw_ms(n, reps, binary, work, env, args.timeout)
        for r in at_n:
            r["shaw_ms"] = shaw
        rows.extend(at_n)
    text = table(rows, peak_gflops)
    print(text)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(f"# relattn vs PyTorch layers of RoPE, ALiBi and T5\n\n{stamp}, {machine()}; torch {torch_version}, {version}; "
                f"{THREADS} threads each; hidden {HIDDEN}, {HEADS} heads, batch 1, bidirectional; sgemm peak {peak_gflops:.1f} GFLOP/s "
                f"(torch.mm, {THREADS} threads, same run). `python3 bench/compare_schemes.py`\n\n{text}\n")
    print(f"[written] {args.out}", file=sys.stderr)
    if any(r["err"] is not None and r["err"] > TOLERANCE for r in rows):
        raise SystemExit("error: an output differs from the peer's by more than the tolerance")


if __name__ == "__main__":
    main()
