#!/usr/bin/env python3
"""Compare the seed's PyTorch relation-aware attention with relattn's native CLI on the same tensors.

The seed (a notebook dump) is NOT copied into the project: its ``In [27]:`` cell, which defines
``RelativePosition``, ``RelationAwareAttentionHead`` and ``RelationAwareMultiHeadAttention``, is cut out of
the seed file at run time and exec'd.

For every n in --sizes (hidden 512, 8 heads, clipping distance k = 16, batch 1, one forward):

1. ``export`` worker: torch.manual_seed(0), builds ``RelationAwareMultiHeadAttention(512, 8, 16, n)``'s
   parameters and x = torch.rand(1, n, 512) and writes them as relattn's scenario .npz (x, w_q/w_k/w_v with
   head h in columns h*64:(h+1)*64, b_q/b_k/b_v, w_o = fc.weight.T, b_o, rel_k, rel_v).
2. ``seed`` worker (a separate process): rebuilds the module with the same seed, checks its parameters and x
   equal the exported ones, times ``module(x, x, x)`` under torch.no_grad() (median after a warm-up) with
   torch.set_num_threads(2), and saves its output.
3. relattn: ``relattn bench --tensors in.npz --heads 8 --clip 16 --reps R --threads 2 --save-output out.npy``
   (falls back to ``relattn compute ... --out trace.npz --json`` when ``bench`` does not exist yet).
4. Peak RSS of each measured process comes from os.wait4 on that very child (its own ru_maxrss), so every
   measurement is isolated from the others and from this driver.
5. Compares the outputs (max|a - b| / max|b|, b = seed) and prints a markdown table, also written to
   bench/results/compare_seed.md with the machine and date.

Usage (from the repository root):
    python3 bench/compare_seed.py                      # n = 128 512 1024 2048 4096
    python3 bench/compare_seed.py --sizes 128 512
Missing numpy / torch are installed from PyPI with pip.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SEED = os.path.join(ROOT, "..", "shared", "seeds", "003_ceeeb7d1d2a754b5.txt")
DEFAULT_OUT = os.path.join(HERE, "results", "compare_seed.md")
HIDDEN, HEADS, CLIP, THREADS = 512, 8, 16, 2
SEED_CELL = "In [27]:"
SEED_NAMES = ("RelativePosition", "RelationAwareAttentionHead", "RelationAwareMultiHeadAttention")
TOLERANCE = 1e-4
TIMED_OUT = -1000


# ----------------------------------------------------------------------------------------------- set-up

def ensure(module, pip_name=None):
    """Installs `pip_name` (default: module) from PyPI with pip when `module` cannot be found; returns its
    version. Does not import it (the driver stays small; only the workers import torch)."""
    import importlib
    import importlib.metadata
    import importlib.util
    pkg = pip_name or module
    if importlib.util.find_spec(module) is None:
        print(f"[setup] {module} is missing; pip install {pkg} (torch is large, this can take minutes)", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "pip", "install", pkg])
        importlib.invalidate_caches()
    return importlib.metadata.version(pkg)


def default_reps(n):
    """Timed repetitions (after one warm-up) per size; fewer for big n."""
    return 10 if n <= 512 else 5 if n <= 1024 else 3 if n <= 2048 else 1


# ------------------------------------------------------------------------------------- the seed's code

def extract_cell(path, marker=SEED_CELL):
    """Source text of the notebook cell headed by `marker` in a notebook dump."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == marker)
    except StopIteration:
        raise SystemExit(f"error: {path}: no line '{marker}' (the cell that defines the seed's modules)")
    body = []
    for line in lines[start + 1:]:
        if re.match(r"^(In|Out) ?\[\s*\d*\s*\]:", line.strip()):
            break
        body.append(line)
    src = "\n".join(body).rstrip() + "\n"
    # A dump may carry the cell's printed output after its code: cut at the first line that does not compile.
    while True:
        try:
            compile(src, path, "exec")
            return src
        except SyntaxError as e:
            if not e.lineno or e.lineno <= 1:
                raise
            src = "\n".join(src.splitlines()[: e.lineno - 1]).rstrip() + "\n"


def load_seed(path):
    """Namespace after exec'ing the seed cell; checks it defines the three classes."""
    src = extract_cell(path)
    ns = {"__name__": "seed003"}
    exec(compile(src, os.path.abspath(path) + f" [{SEED_CELL}]", "exec"), ns)
    missing = [name for name in SEED_NAMES if name not in ns]
    if missing:
        raise SystemExit(f"error: {path}: cell {SEED_CELL} does not define {', '.join(missing)}")
    return ns


def build(ns, n, seq_len):
    """torch.manual_seed(0); the seed module (built for `seq_len`) and x = torch.rand(1, n, 512)."""
    import torch
    torch.manual_seed(0)
    module = ns["RelationAwareMultiHeadAttention"](HIDDEN, HEADS, CLIP, seq_len)
    module.eval()
    x = torch.rand(1, n, HIDDEN)
    return module, x


def scenario_arrays(module, x):
    """The module's parameters and x in relattn's scenario layout (float32)."""
    import numpy as np

    def a(t):
        return t.detach().cpu().numpy().astype(np.float32)

    heads = module.attention_heads
    out = {"x": a(x)}
    for name, attr in (("q", "query_weights"), ("k", "key_weights"), ("v", "value_weights")):
        out["w_" + name] = np.ascontiguousarray(np.concatenate([a(getattr(h, attr).weight).T for h in heads], axis=1))
        out["b_" + name] = np.concatenate([a(getattr(h, attr).bias) for h in heads])
    out["w_o"] = np.ascontiguousarray(a(module.fc.weight).T)
    out["b_o"] = a(module.fc.bias)
    out["rel_k"] = a(module.relative_position_k.position_embeddings)
    out["rel_v"] = a(module.relative_position_v.position_embeddings)
    return out


# -------------------------------------------------------------------------------------------- workers

def worker_export(args):
    """Writes the scenario .npz. The module's parameters do not depend on seq_len (it only sizes the
    (n, n, 64) bias tensors built in __init__, which draw no random numbers), so it is built for seq_len 1
    to keep this step small; the seed worker checks the parameters it builds for n equal these."""
    import numpy as np
    ns = load_seed(args.seed_file)
    module, x = build(ns, args.n, 1)
    np.savez(args.npz, **scenario_arrays(module, x))


def worker_seed(args):
    """Times the seed's forward for n; prints one JSON line."""
    import numpy as np
    import torch
    torch.set_num_threads(THREADS)
    ns = load_seed(args.seed_file)
    t0 = time.perf_counter()
    module, x = build(ns, args.n, args.n)
    build_s = time.perf_counter() - t0
    given = np.load(args.npz)
    mine = scenario_arrays(module, x)
    mismatch = [k for k in mine if not np.array_equal(mine[k], given[k])]
    if mismatch:
        raise SystemExit(f"error: the seed module built for n = {args.n} differs from the export in {mismatch}")
    times = []
    with torch.no_grad():
        out = module(x, x, x)  # warm-up
        for _ in range(args.reps):
            t = time.perf_counter()
            out = module(x, x, x)
            times.append((time.perf_counter() - t) * 1e3)
    np.save(args.save_output, out.numpy().astype(np.float32))
    times.sort()
    print(json.dumps({"ms_per_forward": times[len(times) // 2], "times_ms": times, "build_s": build_s,
                      "torch": torch.__version__, "threads": torch.get_num_threads()}))


# ------------------------------------------------------------------------------------ measuring children

def run_measured(cmd, timeout=None, env=None):
    """Runs `cmd`, returning (returncode, stdout, stderr, wall seconds, peak RSS in MiB of that child only).
    ru_maxrss is in KiB on Linux, bytes on macOS."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env)
        deadline = None if timeout is None else t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if deadline and time.perf_counter() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                status = None
                break
            time.sleep(0.05)
        p.returncode = TIMED_OUT if status is None else os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    scale = 1 if sys.platform == "darwin" else 1024
    return p.returncode, out, err, wall, ru.ru_maxrss * scale / 2**20


def failure(rc, err):
    """A short description of why a child failed."""
    if rc == TIMED_OUT:
        return "timed out"
    if rc < 0:
        sig = -rc
        return "killed (SIGKILL; out of memory?)" if sig == 9 else f"signal {sig}"
    if "MemoryError" in err or "out of memory" in err.lower() or "DefaultCPUAllocator" in err:
        return "out of memory"
    last = [l for l in err.strip().splitlines() if l.strip()]
    return f"exit {rc}: {last[-1][:120] if last else ''}"


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


# ------------------------------------------------------------------------------------------- relattn

def relattn_binary(path, build):
    """The binary; with `build` (the default binary), `cargo build --release` first, so it matches the sources
    (a no-op when up to date). A failed build is fatal only when there is no binary at all."""
    if build:
        print("[setup] cargo build --release", file=sys.stderr, flush=True)
        rc = subprocess.call(["cargo", "build", "--release", "--bin", "relattn"], cwd=ROOT)
        if rc != 0:
            if not os.path.exists(path):
                raise SystemExit("error: cargo build --release failed and there is no relattn binary")
            print(f"[warning] cargo build --release failed; using the existing {path}, which may be stale",
                  file=sys.stderr)
    elif not os.path.exists(path):
        raise SystemExit(f"error: {path} is missing (build it with `cargo build --release`)")
    return path


def load_output(path):
    """relattn's saved output: an .npy, or an .npz holding `output`."""
    import numpy as np
    a = np.load(path)
    if hasattr(a, "files"):
        with a:
            return a["output"] if "output" in a.files else a[a.files[0]]
    return a


def has_bench(binary):
    r = subprocess.run([binary, "bench", "--help"], capture_output=True, text=True)
    return r.returncode == 0 and "--save-output" in r.stdout


def run_relattn(binary, bench, npz, out_npy, reps, work, timeout):
    """Returns (ms per forward or None, peak MiB, error string or None, output array path, mode)."""
    common = ["--tensors", npz, "--heads", str(HEADS), "--clip", str(CLIP)]
    if bench:
        cmd = [binary, "bench", *common, "--reps", str(reps), "--threads", str(THREADS), "--save-output", out_npy]
    else:
        trace = os.path.join(work, "trace.npz")
        cmd = [binary, "compute", *common, "--out", trace, "--json", "--max-memory-mb", "20000"]
    rc, out, err, wall, rss = run_measured(cmd, timeout)
    if rc != 0:
        return None, rss, failure(rc, err), None, " ".join(cmd)
    info = last_json(out) or {}
    if bench:
        ms = info.get("ms_per_forward")
        return ms, rss, None if ms is not None else f"no ms_per_forward in: {out.strip()[:200]}", out_npy, " ".join(cmd)
    import numpy as np
    with np.load(trace) as t:
        np.save(out_npy, t["output"].astype(np.float32))
    os.remove(trace)
    return info.get("ms", wall * 1e3), rss, None, out_npy, " ".join(cmd)


# ---------------------------------------------------------------------------------------------- report

def machine():
    model, cores = platform.processor() or platform.machine(), os.cpu_count()
    try:
        txt = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in txt.splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "Model name":
                model = val.strip()
            elif key.strip() == "CPU(s)":
                cores = val.strip()
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        mem = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{model}, {cores} CPUs{mem}, {platform.system()} {platform.release()}"


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(rows):
    head = ("| n | seed ms | relattn ms | speed-up | seed peak MiB | relattn peak MiB | memory ratio | max rel. error |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        speed = r["seed_ms"] / r["rel_ms"] if r["seed_ms"] and r["rel_ms"] else None
        memr = r["seed_mib"] / r["rel_mib"] if r["seed_ms"] and r["rel_ms"] and r["rel_mib"] else None
        err = r["err"]
        err_s = "—" if err is None else f"{err:.2e}" + ("" if err <= TOLERANCE else " FAIL")
        seed_ms = fmt(r["seed_ms"], ".1f") if r["seed_ms"] is not None else r["seed_fail"] or "—"
        rel_ms = fmt(r["rel_ms"], ".2f") if r["rel_ms"] is not None else r["rel_fail"] or "—"
        lines.append(f"| {r['n']} | {seed_ms} | {rel_ms} | {fmt(speed, '.1f')}{'×' if speed else ''} | "
                     f"{fmt(r['seed_mib'], '.0f')} | {fmt(r['rel_mib'], '.0f')} | {fmt(memr, '.1f')}{'×' if memr else ''} | {err_s} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ main

def arguments(doc, sizes, reps_help, out, workers):
    """The options of a comparison script (this one and compare_torch.py): the public ones, then the internal
    ones of its isolated workers (`workers`: their names)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=sizes, help="sequence lengths n")
    ap.add_argument("--relattn", default=os.path.join(ROOT, "target", "release", "relattn"), help="relattn binary")
    ap.add_argument("--no-build", action="store_true", help="do not run cargo build --release first")
    ap.add_argument("--reps", type=int, default=None, help=f"timed repetitions for both (default: {reps_help} by n)")
    ap.add_argument("--out", default=out, help="markdown results file (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per measured process")
    ap.add_argument("--keep", metavar="DIR", help="keep the .npz/.npy files in DIR")
    ap.add_argument("--worker", choices=workers, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--npz", help=argparse.SUPPRESS)
    ap.add_argument("--save-output", help=argparse.SUPPRESS)
    return ap


def main():
    ap = arguments(__doc__, [128, 512, 1024, 2048, 4096], "10/5/3/1", DEFAULT_OUT, ["export", "seed"])
    ap.add_argument("--seed-file", default=DEFAULT_SEED, help="the seed notebook dump (default: %(default)s)")
    args = ap.parse_args()

    if args.worker:
        os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
        {"export": worker_export, "seed": worker_seed}[args.worker](args)
        return

    if not os.path.exists(args.seed_file):
        raise SystemExit(f"error: seed file {args.seed_file} not found (pass --seed-file)")
    ensure("numpy")
    torch_version = ensure("torch")
    import numpy as np
    default_binary = os.path.abspath(args.relattn) == os.path.join(ROOT, "target", "release", "relattn")
    binary = relattn_binary(args.relattn, default_binary and not args.no_build)
    bench = has_bench(binary)
    if not bench:
        print("[note] `relattn bench --save-output` is not available; using `relattn compute` (its time includes "
              "reading the .npz and writing the whole trace)", file=sys.stderr)

    load_start = os.getloadavg()[0]
    if load_start > 0.5:
        print(f"[warning] 1-minute load average is {load_start:.2f}: other work on this machine will perturb the "
              "timings", file=sys.stderr)
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))
    work = args.keep or tempfile.mkdtemp(prefix="compare_seed_")
    os.makedirs(work, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__), "--seed-file", args.seed_file]
    rows, commands = [], []
    try:
        for n in args.sizes:
            reps = args.reps or default_reps(n)
            npz = os.path.join(work, f"in_{n}.npz")
            seed_out = os.path.join(work, f"seed_out_{n}.npy")
            rel_out = os.path.join(work, f"relattn_out_{n}.npy")
            row = {"n": n, "seed_ms": None, "rel_ms": None, "seed_mib": None, "rel_mib": None, "err": None,
                   "seed_fail": None, "rel_fail": None}
            rc, out, err, _, _ = run_measured(me + ["--worker", "export", "--n", str(n), "--npz", npz], args.timeout, env)
            if rc != 0:
                raise SystemExit(f"error: exporting n = {n} failed:\n{err}")

            print(f"[n={n}] seed forward ({reps} reps)...", file=sys.stderr, flush=True)
            rc, out, err, wall, rss = run_measured(
                me + ["--worker", "seed", "--n", str(n), "--npz", npz, "--save-output", seed_out, "--reps", str(reps)],
                args.timeout, env)
            row["seed_mib"] = rss
            info = last_json(out) if rc == 0 else None
            if info:
                row["seed_ms"] = info["ms_per_forward"]
            else:
                row["seed_fail"] = failure(rc, err)
                print(f"[n={n}] seed failed: {row['seed_fail']}", file=sys.stderr)

            print(f"[n={n}] relattn ({reps} reps)...", file=sys.stderr, flush=True)
            ms, rss, fail, got, cmd = run_relattn(binary, bench, npz, rel_out, reps, work, args.timeout)
            if n == args.sizes[0]:
                commands.append(cmd.replace(work + os.sep, "").replace(ROOT + os.sep, ""))
            row.update(rel_ms=ms, rel_mib=rss, rel_fail=fail)
            if fail:
                print(f"[n={n}] relattn failed: {fail}", file=sys.stderr)

            if got and row["seed_ms"] is not None:
                a, b = load_output(got).astype(np.float64), np.load(seed_out).astype(np.float64)
                if a.shape != b.shape:
                    row["err"] = float("inf")
                    print(f"[n={n}] shapes differ: relattn {a.shape}, seed {b.shape}", file=sys.stderr)
                else:
                    row["err"] = float(np.abs(a - b).max() / np.abs(b).max())
            rows.append(row)
            print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
            if not args.keep:
                for p in (npz, seed_out, rel_out):
                    if os.path.exists(p):
                        os.remove(p)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    md = table(rows)
    load_end = os.getloadavg()[0]
    print(md)
    mode = ("`relattn bench` (ms_per_forward, median of its --reps)" if bench else
            "`relattn compute` (fallback: `bench` was not available; its time is ONE run that includes reading the "
            ".npz and computing and writing the whole trace, and its peak RSS includes the stored trace)")
    note = (f"# Seed 003 (PyTorch) vs relattn\n\n"
            f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}\n"
            f"- Machine: {machine()}\n"
            f"- Python {platform.python_version()}, torch {torch_version} ({THREADS} threads), numpy {np.__version__}\n"
            f"- Layer: hidden {HIDDEN}, {HEADS} heads, k = {CLIP}, batch 1, one forward; x = torch.rand(1, n, {HIDDEN}), "
            f"torch.manual_seed(0)\n"
            f"- Seed: `RelationAwareMultiHeadAttention(512, 8, 16, n)` from cell {SEED_CELL} of "
            f"`{os.path.relpath(args.seed_file, ROOT)}`, `module(x, x, x)` under `torch.no_grad()`\n"
            f"- relattn: {mode}, `--threads {THREADS}`; e.g. `{commands[0] if commands else ''}`\n"
            f"- Times: median of the timed repetitions after one warm-up (10 for n ≤ 512, 5 for 1024, 3 for 2048, "
            f"1 for 4096 unless --reps). Peak MiB: ru_maxrss of each measured process alone (the seed's includes "
            f"the Python interpreter and torch; its module holds two (n, n, 64) float32 bias tensors).\n"
            f"- Error: max|relattn − seed| / max|seed| (tolerance {TOLERANCE:g}).\n"
            f"- 1-minute load average at start / end: {load_start:.2f} / {load_end:.2f} (above ~0.5 on this "
            f"{os.cpu_count()}-CPU machine means other processes competed for the cores and the times are noisy).\n"
            f"- Reproduce: `python3 bench/compare_seed.py --sizes {' '.join(map(str, args.sizes))}`\n\n{md}\n")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(note)
    print(f"\nwritten to {os.path.relpath(args.out)}", file=sys.stderr)
    bad = [r["n"] for r in rows if r["err"] is not None and r["err"] > TOLERANCE]
    if bad:
        print(f"error: outputs differ beyond {TOLERANCE:g} for n = {bad}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
