#!/usr/bin/env python3
"""This machine's measured single-precision matmul peak: the best GFLOP/s of torch.mm (MKL/oneDNN)
on square float32 matrices, with 1 and 2 threads. docs/src/benchmarks.md compares relattn's figures to it.

    python3 bench/peak_matmul.py            # installs torch when missing (see bench/requirements.txt)
"""
import subprocess
import sys
import time


def ensure_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-r", "bench/requirements.txt"])


def peak(threads, verbose=False):
    """The best GFLOP/s of torch.mm on square float32 matrices (n 512, 1024, 2048) with `threads` threads."""
    ensure_torch()
    import torch

    torch.set_num_threads(threads)
    best = 0.0
    for n in (512, 1024, 2048):
        a, b = torch.rand(n, n), torch.rand(n, n)
        torch.mm(a, b)
        reps = max(3, int(2e10 / (2 * n**3)))
        start = time.perf_counter()
        for _ in range(reps):
            torch.mm(a, b)
        seconds = (time.perf_counter() - start) / reps
        gflops = 2 * n**3 / seconds / 1e9
        best = max(best, gflops)
        if verbose:
            print(f"threads {threads}  n {n:5d}  {seconds * 1e3:8.2f} ms  {gflops:7.1f} GFLOP/s")
    return best


def main():
    for threads in (1, 2):
        print(f"threads {threads}  peak {peak(threads, verbose=True):.1f} GFLOP/s")


if __name__ == "__main__":
    main()
