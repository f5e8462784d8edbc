#!/usr/bin/env python3
"""relattn's GPU path (wgpu on Vulkan) on a real GPU, against relattn's CPU forward on the same machine and
against the PyTorch layers of compare_schemes.py run on CUDA, for every scheme at n 1024–16384, causal and not.

The layer is compare_schemes.py's (hidden 512, 8 heads, batch 1; Shaw and the Music Transformer with clip 16,
RoPE in the half layout, T5 with 32 buckets up to 128 and a table per head, DeBERTa as Hugging Face's own module,
bidirectional only), on the same tensors for every side (its worker_export). Each side runs in this process's order — relattn GPU, relattn CPU, PyTorch CUDA — for
`--rounds` rounds, and keeps its best repetition over all rounds:
    relattn gpu:  `relattn bench --backend gpu` (a warm-up forward, then --reps timed ones; each forward waits for
                  the GPU and reads the output back, as the page and the CLI do)
    relattn cpu:  `relattn bench --backend cpu --threads T` (the fused forward, every core by default)
    torch cuda:   peer_forward of compare_schemes.py with every tensor on the GPU, float32 (TF32 off), timed
                  between torch.cuda.synchronize() calls after a warm-up; ALiBi's and T5's bias built in the
                  forward as one layer does
    baseline:     with --baseline BINARY, a second relattn (e.g. the previous commit's) on the GPU, first in each
                  round, so that a change is timed against it on the same card in the same run (above n 8192 its
                  forward takes seconds: one repetition, first round only)
Outputs are compared (relattn's GPU output against PyTorch's); a side that fails (a size past the device's
limits, memory) is reported, not fatal. Writes a markdown table with the machine, GPU and date to --out.

Usage (from the repository root, on the GPU machine, with a release build of relattn):
    python3 bench/gpu_bench.py --relattn target/release/relattn --out bench/results/gpu_bench.md
    python3 bench/gpu_bench.py --sizes 1024 --schemes rope --causal true
    python3 bench/gpu_bench.py --relattn new/relattn --baseline old/relattn --sizes 1024 4096 16384
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_schemes import CAUSAL_SCHEMES, HEADS, HIDDEN, SCHEMES, fixed_tensors, load_tensors, peer_forward, scheme_flags, worker_export
from compare_seed import machine

SIZES = [1024, 2048, 4096, 8192, 16384]


def reps_for(n):
    return 10 if n <= 2048 else 5 if n <= 4096 else 3 if n <= 8192 else 2


def relattn_side(binary, backend, scheme, npz, causal, reps, out, threads, timeout):
    """One `relattn bench` run: its JSON, or {"error": …}."""
    cmd = [binary, "bench", "--method", scheme, "--tensors", npz, "--heads", str(HEADS), "--reps", str(reps), "--causal", causal,
           "--backend", backend, "--save-output", out, "--max-memory-mb", "200000"] + scheme_flags(scheme)
    if threads:
        cmd += ["--threads", str(threads)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def torch_side(torch, device, npz, scheme, causal, reps):
    """PyTorch's layer on `device` (CUDA): best ms and the output (numpy), or {"error": …}."""

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    try:
        t = load_tensors(torch, npz, device)
        n = t["x"].shape[1]
        fixed = {k: v.to(device) for k, v in fixed_tensors(torch, t, scheme, n, causal).items()}
        times = []
        with torch.inference_mode():
            out = peer_forward(torch, t, scheme, fixed, causal)
            sync()
            for _ in range(reps):
                sync()
                start = time.perf_counter()
                out = peer_forward(torch, t, scheme, fixed, causal)
                sync()
                times.append((time.perf_counter() - start) * 1e3)
        result = {"ms_min": min(times), "output": out.float().cpu().numpy()}
    except RuntimeError as e:  # CUDA out of memory and the like
        result = {"error": str(e).splitlines()[0][:160]}
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return result


def rel_err(got, want):
    import numpy as np
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1.0))


def flops(n, causal):
    """Useful flops of one forward, as `relattn bench` counts them: the four projections and 4·n²·d of
    attention (n(n + 1)/2 pairs causal); the small relative products left out."""
    pairs = n * (n + 1) / 2 if causal else n * n
    return 4 * 2 * n * HIDDEN * HIDDEN + 4 * pairs * HIDDEN

def write_table(rows, args, started, gpu, adapter, torch_version, cpu):
    """The markdown table of the rows so far, written to --out (after each row: a run stopped early keeps them)."""

    def ms(v):
        return "—" if v is None else f"{v:.2f}" if v < 100 else f"{v:.0f}"

    def tflops(v, n, causal):
        return "—" if v is None else f"{flops(n, causal == 'true') / v / 1e9:.1f}"

    base = bool(args.baseline)
    lines = [
        "# relattn's GPU path on a real GPU (bench/gpu_bench.py)",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC; GPU: {gpu} (wgpu adapter: {adapter}); CPU: {cpu}; torch {torch_version}.",
        f"Hidden 512, 8 heads, batch 1, float32; best of {args.rounds} rounds × the reps by n (10 to 2); relattn CPU with "
        f"{args.threads or os.cpu_count()} threads up to n {args.cpu_max_n}. TFLOP/s counts the useful flops (projections, 4·n²·d, n(n+1)/2 pairs causal).",
        "",
        "| scheme | causal | n |" + (" baseline GPU ms | speed-up |" if base else "")
        + " relattn GPU ms | TFLOP/s | PyTorch CUDA ms | TFLOP/s | relattn CPU ms | GPU vs PyTorch | GPU vs CPU | max rel. diff | errors |",
        "|---|---|---:|" + ("---:|---:|" if base else "") + "---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for scheme, causal, n, best, err, errors in rows:
        g, t, c = best["gpu"], best["torch"], best["cpu"]
        ratio = lambda a, b: "—" if a is None or b is None else f"{b / a:.2f}×"
        before = f" {ms(best.get('base'))} | {ratio(g, best.get('base'))} |" if base else ""
        lines.append(f"| {scheme} | {causal} | {n} |{before} {ms(g)} | {tflops(g, n, causal)} | {ms(t)} | {tflops(t, n, causal)} | {ms(c)} | "
                     f"{ratio(g, t)} | {ratio(g, c)} | {'—' if err is None else f'{err:.1e}'} | {'; '.join(f'{k}: {v}' for k, v in errors.items())} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--relattn", default=os.path.join(os.path.dirname(HERE), "target", "release", "relattn"))
    ap.add_argument("--baseline", default=None, help="another relattn binary timed on the GPU in the same rounds (e.g. the previous commit's)")
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    # BERT relative has no GPU kernel (relattn refuses it by name on the GPU): not among the defaults.
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=[s for s in SCHEMES if s != "bert_relative"])
    ap.add_argument("--causal", nargs="+", choices=["false", "true"], default=["false", "true"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="relattn's CPU threads (default: every core)")
    ap.add_argument("--cpu-max-n", type=int, default=8192, help="largest n run on relattn's CPU side")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "gpu_bench.md"))
    ap.add_argument("--device", default="cuda", help="PyTorch's device (cpu: a smoke test of this script without a GPU)")
    args = ap.parse_args()
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "none (PyTorch on the CPU)"
    rows, adapter, cpu = [], None, machine()
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory() as work:
        for scheme in args.schemes:
            for causal in [c for c in args.causal if c == "false" or scheme in CAUSAL_SCHEMES]:
                for n in args.sizes:
                    npz = os.path.join(work, "s.npz")
                    worker_export(types.SimpleNamespace(n=n, scheme=scheme, causal=causal, npz=npz))
                    reps = reps_for(n)
                    best = {"base": None, "gpu": None, "cpu": None, "torch": None}
                    errors, outputs = {}, {}
                    for rnd in range(args.rounds):
                        sides = [("gpu", "gpu"), ("cpu", "cpu")] if n <= args.cpu_max_n else [("gpu", "gpu")]
                        if args.baseline and (n <= 8192 or rnd == 0):
                            sides.insert(0, ("base", "gpu"))
                        for side, backend in sides:
                            out = os.path.join(work, f"{side}.npy")
                            binary, side_reps = (args.baseline, reps if n <= 8192 else 1) if side == "base" else (args.relattn, reps)
                            r = relattn_side(binary, backend, scheme, npz, causal, side_reps, out, args.threads if side == "cpu" else 0, args.timeout)
                            if "error" in r:
                                errors[side] = r["error"]
                                continue
                            adapter = adapter or r.get("adapter")
                            best[side] = min(best[side] or r["ms_min"], r["ms_min"])
                            outputs[side] = np.load(out)[0]
                        r = torch_side(torch, device, npz, scheme, causal == "true", reps)
                        if "error" in r:
                            errors["torch"] = r["error"]
                        else:
                            best["torch"] = min(best["torch"] or r["ms_min"], r["ms_min"])
                            outputs["torch"] = r["output"][0]
                    err = rel_err(outputs["gpu"], outputs["torch"]) if "gpu" in outputs and "torch" in outputs else None
                    base_err = rel_err(outputs["base"], outputs["torch"]) if "base" in outputs and "torch" in outputs else None
                    rows.append((scheme, causal, n, best, err, errors))
                    print(json.dumps({"scheme": scheme, "causal": causal, "n": n, "ms": best, "rel_err": err, "baseline_rel_err": base_err, "errors": errors}), flush=True)
                    write_table(rows, args, started, gpu, adapter, torch.__version__, cpu)



if __name__ == "__main__":
    main()
