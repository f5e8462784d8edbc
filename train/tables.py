"""MODELS.md's tables from models/results.json (written by export.py): each scheme's shipped run and its
seeds' mean ± standard deviation, and the NLL by window length. Needs no torch.

    python3 train/tables.py
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ("music", "shaw", "rope", "alibi", "t5", "absolute")


def spread(s):
    return f"{s['mean']:.4f} ± {s['std']:.4f} ({s['n']})" if s["n"] > 1 else f"{s['mean']:.4f} (1)"


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


if __name__ == "__main__":
    main()
