"""Picks, for each of the six schemes, the seed whose run has the lowest validation NLL (train/results/), and
writes everything relattn ships from the runs:

- models/chorales-{music,shaw,rope,alibi,t5,absolute}.safetensors: the picked run's weights under relattn's
  names, the config (and the training figures) as JSON in the metadata key `config`;
- models/chorales-test.json: the tokenised test split (BWV numbers, titles, bars, tokens);
- tests/fixtures/chorales-{method}.safetensors: PyTorch's logits for a short and a long (2 × context) test
  sequence and one layer's q, k, v and attention weights, for the runtime's tests;
  tests/fixtures/chorales-subset.json: three test pieces, whose NLL is in the fixtures' metadata;
- models/results.json (every finished seed's figures, each scheme's mean ± standard deviation over its
  seeds, which seed ships), docs/src/img/models-loss.png, docs/src/img/models-length.png: the figures of docs/src/models.md.

    train/.venv/bin/python train/export.py [--methods music shaw]   # schemes with no finished run are skipped
"""
import argparse
import glob
import json
import os
import platform

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

import chorales
import train
from model import Decoder

ROOT = os.path.dirname(train.HERE)
METHODS = ("music", "shaw", "rope", "alibi", "t5", "absolute")
FIXTURE_LAYER = 1
SPLIT_RULE = "by the integer BWV number: mod 10 = 0 test, 1 valid, else train (all chorales of a cantata together)"


def finished(method, vocab, results=None):
    """Every finished run of `method` (results/<method>-seed<k>.json, train/results by default) trained by the
    recipe (train.config with its seed and this vocabulary), by seed. A run of another recipe (a trial run of 3
    steps, another size) is left out, saying which file and what differs; a file that is not a run's JSON is
    refused, naming it."""
    runs = []
    for path in sorted(glob.glob(os.path.join(results or os.path.join(train.HERE, "results"), f"{method}-seed*.json"))):
        try:
            with open(path) as f:
                run = json.load(f)
            recipe = dict(train.config(method, vocab), seed=run["seed"])
            trained = {k: run["config"].get(k) for k in recipe}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}: not a finished run's figures ({type(e).__name__}: {e}); train/train.py writes them") from None
        differ = sorted(k for k in recipe if trained[k] != recipe[k])
        if differ:
            print(f"{method}: {path} left out: not the recipe ({', '.join(f'{k} {trained[k]} instead of {recipe[k]}' for k in differ)})", flush=True)
            continue
        runs.append(run)
    return sorted(runs, key=lambda r: r["seed"])


def weights_path(name):
    """Where train.py keeps a finished run's best weights (committed with its figures)."""
    return os.path.join(train.HERE, "results", f"{name}.pt")


def load(name):
    run = torch.load(weights_path(name), weights_only=False)
    model = Decoder(run["config"])
    model.load_state_dict(run["state"])
    return model.eval(), run


def spread(values):
    """Mean and sample standard deviation (0 for one value)."""
    v = np.array(values, dtype=np.float64)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0, "n": len(v)}


def over_seeds(runs, windows):
    """Every finished seed's figures, and their mean ± standard deviation."""
    seeds = {str(r["seed"]): {k: r[k] for k in ("valid_nll", "nll_by_window", "finished", "machine")} |
             {k: r["config"][k] for k in ("train_seconds", "best_step", "steps_run", "stopped")} for r in runs}
    return {"seeds": seeds, "valid_nll_over_seeds": spread([r["valid_nll"] for r in runs]),
            "nll_by_window_over_seeds": {w: spread([r["nll_by_window"][w] for r in runs]) for w in windows}}


def data_file(pieces, lo, hi, split):
    return {"split": split, "split_rule": SPLIT_RULE, "pitch_min": lo, "vocab": chorales.vocab_names(lo, hi),
            "steps_per_quarter": chorales.STEPS_PER_QUARTER,
            "pieces": [{"bwv": p["bwv"], "title": p["title"], "time_signature": p["time_signature"], "bars": p["bars"],
                        "tokens": chorales.tokens(p, lo)} for p in pieces]}


@torch.no_grad()
def per_position(model, seqs, width):
    """Mean NLL at each position 1..width−1 over every non-overlapping window of exactly `width` tokens."""
    ws = [s[i:i + width] for s in seqs for i in range(0, len(s) - width + 1, width)]
    total = np.zeros(width - 1)
    for i in range(0, len(ws), 8):
        x = torch.tensor(ws[i:i + 8])
        logits = model(x)[:, :-1].double()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none")
        total += nll.reshape(len(x), -1).sum(0).numpy()
    return total / len(ws), len(ws)


def main(methods):
    data, (lo, hi), seqs = train.dataset()
    path = os.path.join(ROOT, "models", "results.json")
    try:
        with open(path) as f:
            previous = json.load(f).get("models", {})
    except FileNotFoundError:
        previous = {}
    except ValueError as e:
        raise SystemExit(f"{path}: not the figures export.py writes ({e}); restore it from git (git checkout {path})") from None
    # Every method's runs first: a method that cannot be exported stops the export before any file is written.
    runs_of = {method: finished(method, hi - lo + 2) for method in methods}
    for method, runs in runs_of.items():
        best = min(runs, key=lambda r: r["valid_nll"], default=None)
        if best is None or os.path.exists(weights_path(best["name"])) or method in previous:
            continue
        shipped = os.path.join(ROOT, "models", f"chorales-{method}.safetensors")
        if os.path.exists(shipped):
            raise SystemExit(f"{method}: the weights of {best['name']} are not in train/results/, and {path}, which records which seed "
                             f"{shipped} is, is missing or has no {method}: restore it (git checkout {path}), or train {best['name']} again")
        raise SystemExit(f"{method}: the weights of {best['name']} are not in train/results/ and no model of it ships: train it again")
    test_pieces = [p for p in data["pieces"] if p["split"] == "test"]
    os.makedirs(os.path.join(ROOT, "models"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "tests", "fixtures"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "docs", "src", "img"), exist_ok=True)
    with open(os.path.join(ROOT, "models", "chorales-test.json"), "w") as f:
        json.dump(data_file(test_pieces, lo, hi, "test"), f, ensure_ascii=False, separators=(",", ":"))
    subset = test_pieces[:3]
    with open(os.path.join(ROOT, "tests", "fixtures", "chorales-subset.json"), "w") as f:
        json.dump(data_file(subset, lo, hi, "test"), f, ensure_ascii=False, separators=(",", ":"))
    subset_seqs = [chorales.tokens(p, lo) for p in subset]
    long_seq = next(s for s in seqs["test"] if len(s) >= 4 * train.CONTEXT)

    results = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
               "pieces": {s: len(v) for s, v in seqs.items()}, "tokens": {s: sum(map(len, v)) for s, v in seqs.items()},
               "skipped": len(data["skipped"]), "pitch_range": [lo, hi], "selection": "the seed with the lowest valid NLL ships",
               "models": {m: r for m, r in previous.items() if m in METHODS}}  # runs not exported now stay as they were
    for method in methods:
        runs = runs_of[method]
        if not runs:
            print(f"{method}: no finished run in train/results/, skipped", flush=True)
            continue
        best = min(runs, key=lambda r: r["valid_nll"])
        windows = sorted(best["nll_by_window"], key=int)
        if not os.path.exists(weights_path(best["name"])):
            # Runs finished before train.py kept the weights in train/results/ (2026-11-25): the shipped files are
            # the only copy of the shipped run's; a better run whose weights were lost cannot ship until trained again.
            shipped = previous[method]  # checked above
            lost = {}
            if shipped["shipped_seed"] != best["seed"]:
                lost = {"best_seed_lost": best["seed"]}
                print(f"{method}: {best['name']} has the lowest valid NLL, but its weights were lost with the session that trained it: "
                      f"seed {shipped['shipped_seed']} still ships (delete train/results/{best['name']}.json and train it again to ship it)", flush=True)
            results["models"][method] = {k: v for k, v in shipped.items() if k != "best_seed_lost"} | over_seeds(runs, windows) | lost
            print(f"{method}: seed {shipped['shipped_seed']} ships (its files are kept); figures over {len(runs)} seeds updated", flush=True)
            continue
        model, run = load(best["name"])
        cfg = dict(run["config"])
        ctx = cfg["context"]
        curve, count = per_position(model, seqs["test"], 4 * ctx)
        params = sum(p.numel() for n, p in model.named_parameters())
        test = best["nll_by_window"][str(ctx)]
        cfg.update(name=f"chorales-{method}", valid_nll=best["valid_nll"], test_nll=test, parameters=params,
                   command=f"train/.venv/bin/python train/train.py --method {method} --seed {best['seed']}", torch=torch.__version__,
                   data="music21 corpus, Bach chorales, four parts; see train/chorales.py")
        save_file(model.tensors(), os.path.join(ROOT, "models", f"chorales-{method}.safetensors"), metadata={"config": json.dumps(cfg)})

        short = torch.tensor([seqs["test"][0][:64]])
        rec = {}
        logits_short = model(short, record_layer=FIXTURE_LAYER, record=rec)
        long = torch.tensor([long_seq[:2 * ctx]])
        sub_total, sub_count = train.nll_sum(model, subset_seqs, ctx)
        fixture = {"tokens_short": short[0], "logits_short": logits_short[0], "tokens_long": long[0], "logits_long": model(long)[0],
                   "q": rec["q"][0], "k": rec["k"][0], "v": rec["v"][0], "weights": rec["weights"][0]}
        save_file({k: v.detach().contiguous() for k, v in fixture.items()}, os.path.join(ROOT, "tests", "fixtures", f"chorales-{method}.safetensors"),
                  metadata={"layer": str(FIXTURE_LAYER), "subset_nll": repr(sub_total / sub_count), "subset_tokens": str(sub_count)})
        results["models"][method] = {
            "shipped_seed": best["seed"], "valid_nll": best["valid_nll"], "test_nll": test, "nll_by_window": best["nll_by_window"],
            "parameters": params, "steps": cfg["steps"], "log": run["log"], "per_position_4L": curve.tolist(), "windows_4L": count,
            **over_seeds(runs, windows)}
        print(f"{method}: seed {best['seed']} of {len(runs)}: valid {best['valid_nll']:.4f} test {test:.4f} nats/token; "
              f"windows {best['nll_by_window']}; {params} parameters", flush=True)
    train.write_json_atomic(results, path)
    plots(results)


def plots(results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"music": "tab:blue", "shaw": "tab:orange", "rope": "tab:green", "alibi": "tab:red", "t5": "tab:purple", "absolute": "tab:gray"}
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, r in results["models"].items():
        tr, va = np.array(r["log"]["train"]), np.array(r["log"]["valid"])
        ax.plot(tr[:, 0], tr[:, 1], color=colors[m], alpha=0.35, lw=1)
        ax.plot(va[:, 0], va[:, 1], color=colors[m], marker="o", ms=3, label=f"{m} (valid)")
    ax.set(xlabel="optimizer step", ylabel="NLL (nats / token)", title="Bach chorales: training (faint) and validation loss", ylim=(0.2, 2.5))
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "src", "img", "models-loss.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(7, 4))
    ctx = train.CONTEXT
    for m, r in results["models"].items():
        c = np.array(r["per_position_4L"])
        bins = 32
        pos = np.arange(1, len(c) + 1)
        n = len(c) // bins * bins
        ax.plot(pos[:n].reshape(-1, bins).mean(1), c[:n].reshape(-1, bins).mean(1), color=colors[m], label=m)
    for k, label in ((1, " trained length"), (2, " 2× trained")):
        ax.axvline(k * ctx, color="k", lw=0.6, ls="--")
        ax.text(k * ctx, ax.get_ylim()[1], label, va="top", fontsize=8)
    ax.set(xlabel="position in the window (tokens)", ylabel="NLL (nats / token), mean of 32 positions",
           title=f"Longer than trained: windows of {4 * ctx} tokens ({next(iter(results['models'].values()))['windows_4L']} test windows)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "src", "img", "models-length.png"), dpi=120)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    main(ap.parse_args().methods)
