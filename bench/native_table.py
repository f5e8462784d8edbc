#!/usr/bin/env python3
"""relattn's native CPU forward across sizes, clips, thread counts and implementations, as a markdown table.

    cargo build --release && python3 bench/native_table.py [--quick]

Each row is one `relattn bench` run (median of its reps; d_model 512, 8 heads, batch 1, Shaw with a^V):
time per forward, GFLOP/s (projections, QKᵀ, αV and the small relative products), and peak RSS.
"""
import argparse
import json
import subprocess
import sys

RELATTN = "target/release/relattn"

ROWS = [
    # (implementation, n, clip, threads, reps)
    *[("efficient", n, k, 2, reps) for n, reps in ((512, 10), (1024, 5), (2048, 5), (4096, 3), (8192, 1)) for k in (16, 128)],
    *[("efficient", n, 16, 1, reps) for n, reps in ((128, 20), (512, 10), (1024, 5))],
    *[("materialized", n, k, 2, 3) for n in (512, 1024) for k in (16, 128)],
]


def run(impl, n, clip, threads, reps):
    cmd = [RELATTN, "bench", "--implementation", impl, "--n", str(n), "--d-model", "512", "--heads", "8",
           "--clip", str(clip), "--threads", str(threads), "--reps", str(reps)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only n ≤ 1024")
    args = ap.parse_args()
    print("| implementation | n | k | threads | ms / forward | GFLOP/s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for impl, n, clip, threads, reps in ROWS:
        if args.quick and n > 1024:
            continue
        r = run(impl, n, clip, threads, reps)
        if "error" in r:
            print(f"| {impl} | {n} | {clip} | {threads} | {r['error']} | | |")
        else:
            print(f"| {impl} | {n} | {clip} | {threads} | {r['ms_per_forward']:.1f} | {r['gflop_per_s']:.1f} | {r['peak_rss_mib']:.0f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
