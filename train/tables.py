"""docs/src/models.md's tables from models/results.json (written by export.py): each scheme's shipped run and its
seeds' mean ± standard deviation, and the NLL by window length; and the figures the chapter's text states about
the runs (how the validation NLL moved over the last 2000 steps, early stops, times by seed and threads), from
the runs' own logs (train/results/*.json). python/tests/test_train.py checks docs/src/models.md against `run_figures`.
Needs no torch.

    python3 train/tables.py
"""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ("music", "shaw", "rope", "alibi", "t5", "absolute")


def spread(s):
    return f"{s['mean']:.4f} ± {s['std']:.4f} ({s['n']})" if s["n"] > 1 else f"{s['mean']:.4f} (1)"


def run_figures(results=None):
    """What the runs' logs say, as docs/src/models.md states it: the validation NLL's fall from step 6000 to 7000 and from
    7000 to 8000 (lowest, highest; negative is a rise) with the runs that rose, the runs stopped early, and the
    training minutes of each seed (lowest, highest) with the threads the runs had."""
    runs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(results or os.path.join(ROOT, "train", "results"), "*-seed*.json")))]
    fall = {}
    for r in runs:
        v = dict((step, nll) for step, nll in r["log"]["valid"])
        fall[r["name"]] = (round(v[6000] - v[7000], 4), round(v[7000] - v[8000], 4))
    minutes = {}
    for r in runs:
        m = minutes.setdefault(r["seed"], {"minutes": [], "threads": set()})
        m["minutes"].append(round(r["config"]["train_seconds"] / 60))
        m["threads"].add(r["config"]["threads"])
    return {
        "runs": len(runs),
        "fall_6000_7000": (min(a for a, _ in fall.values()), max(a for a, _ in fall.values())),
        "fall_7000_8000": (min(b for _, b in fall.values()), max(b for _, b in fall.values())),
        "rose_7000_8000": sorted(name for name, (_, b) in fall.items() if b < 0),
        "stopped_early": sorted(r["name"] for r in runs if r["config"]["stopped"] != "step budget"),
        "minutes_by_seed": {seed: (min(m["minutes"]), max(m["minutes"]), sorted(m["threads"])) for seed, m in sorted(minutes.items())},
    }


def main():
    with open(os.path.join(ROOT, "models", "results.json")) as f:
        models = json.load(f)["models"]
    present = [m for m in ORDER if m in models]
    print("| model | seeds run | shipped seed | valid NLL | test NLL | valid over seeds (n) | test over seeds (n) | best step | train time (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in present:
        r = models[m]
        if "seeds" not in r:
            print(f"| {m} | 1 (old recipe) | {r['seed']} | {r['valid_nll']:.4f} | {r['test_nll']:.4f} | – | – | {r['steps']} | {r['train_seconds']} |")
            continue
        s = r["seeds"][str(r["shipped_seed"])]
        test = r["nll_by_window_over_seeds"]["256"]
        print(f"| {m} | {', '.join(sorted(r['seeds']))} | {r['shipped_seed']} | {r['valid_nll']:.4f} | {r['test_nll']:.4f} | "
              f"{spread(r['valid_nll_over_seeds'])} | {spread(test)} | {s['best_step']} | {s['train_seconds']} |")
    print()
    windows = ("256", "512", "1024", "2048")
    print("| model | " + " | ".join(windows) + " |")
    print("|---|" + "---|" * len(windows))
    for m in present:
        by = models[m]["nll_by_window"]
        print(f"| {m} | " + " | ".join(f"{by[w]:.4f}" if w in by else "–" for w in windows) + " |")
    print()
    print("The runs' logs (docs/src/models.md's text):", json.dumps(run_figures(), indent=1))


if __name__ == "__main__":
    main()
