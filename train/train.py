"""Trains one chorale decoder (one of six position schemes, one seed) and writes, as soon as it ends, its best
weights to train/results/<method>-seed<seed>.pt and its figures (valid NLL, test NLL at 256…2048 tokens, loss
curves, time, machine) to train/results/<method>-seed<seed>.json: commit both at once (train/runs/ is not kept, and
export.py can ship only a run whose weights it has). A finished run's files are never replaced: a run whose
results exist is refused before it starts, naming them (--results DIR writes a trial run elsewhere). A run is
resumable: it checkpoints every CHECKPOINT_EVERY steps to <results>/../runs/<name>.ckpt and continues from there
when started again on the same machine; a checkpoint that cannot be read, or of another config, is refused.

    train/.venv/bin/python train/train.py --method music --seed 1   # same data, size, budget and recipe for all

The six models differ only in `method` (and each scheme's own options below). Every number here is written into
the model's metadata by export.py, so docs/src/models.md and the shipped files can be checked against each other.
"""
import argparse
import json
import math
import os
import platform
import time

import numpy as np
import torch
import torch.nn.functional as F

import chorales
from model import Decoder

HERE = os.path.dirname(os.path.abspath(__file__))
CONTEXT = 256  # training crops: 64 sixteenths = 4 bars of 4/4, four voices per step
SHAW_CLIP = 64  # one 4/4 bar back (16 steps × 4 voices): same voice, previous step/beat/bar all distinct
HYPER = {"layers": 3, "d_model": 128, "heads": 4, "d_ff": 512, "dropout": 0.1, "context": CONTEXT,
         "batch": 16, "steps": 8000, "lr": 1e-3, "warmup": 200, "weight_decay": 0.01, "seed": 0}
# Early stopping: valid NLL (256-token windows) every EVAL_EVERY steps. An evaluation that beats the best so far by
# MIN_IMPROVEMENT or more becomes the best and its weights are kept (smaller gains are not counted); the run stops
# once PATIENCE evaluations in a row brought none, or at the step budget (where the cosine schedule reaches 0).
EVAL_EVERY, PATIENCE, MIN_IMPROVEMENT, CHECKPOINT_EVERY = 250, 8, 1e-3, 250


def config(method, vocab):
    clip = {"music": CONTEXT - 1, "shaw": SHAW_CLIP}.get(method, 0)
    # T5's buckets: 32 (causal: all on the keys before the query), log-spaced up to one window back.
    return dict(HYPER, method=method, vocab=vocab, clip=clip, rel_v=method == "shaw", t5_buckets=32, t5_max_distance=CONTEXT,
                edge="zero", positions="sinusoidal" if method == "absolute" else "relative")


def dataset():
    """The parsed corpus, its token range and each split's sequences (untransposed)."""
    data = chorales.load_all(os.path.join(HERE, "data", "chorales.json"))
    pieces = data["pieces"]
    lo, hi = chorales.pitch_range(pieces)
    seqs = {s: [chorales.tokens(p, lo) for p in pieces if p["split"] == s] for s in ("train", "valid", "test")}
    return data, (lo, hi), seqs


def windows(seq, window):
    """Consecutive windows of `window` tokens (the last may be shorter); each predicts its tokens 1.."""
    return [seq[s:s + window] for s in range(0, len(seq), window) if len(seq[s:s + window]) >= 2]


@torch.no_grad()
def nll_sum(model, seqs, window):
    """(Σ −log p(token | earlier tokens of its window), number of predicted tokens), in nats."""
    model.eval()
    total, count = 0.0, 0
    by_len = {}
    for seq in seqs:
        for w in windows(seq, window):
            by_len.setdefault(len(w), []).append(w)
    for length, ws in sorted(by_len.items()):
        chunk = max(1, 8192 // length)  # 32 windows of 256 tokens, 4 of 2048: the (B, H, T, T) logits stay small
        for i in range(0, len(ws), chunk):
            x = torch.tensor(ws[i:i + chunk])
            logits = model(x)[:, :-1].double()
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
            count += x[:, 1:].numel()
    return total, count


def evaluate(model, seqs, window):
    total, count = nll_sum(model, seqs, window)
    return total / count


def batches(seqs, pitch_range, cfg, rng):
    """Endless batches of step-aligned crops of `context` tokens, pieces drawn in proportion to their length,
    each transposed by a uniform −3..+3 semitones (rests stay rests)."""
    lengths = np.array([len(s) for s in seqs], dtype=np.float64)
    vocab_hi = cfg["vocab"] - 1
    while True:
        x = np.zeros((cfg["batch"], cfg["context"]), dtype=np.int64)
        mask = np.zeros_like(x, dtype=bool)
        for b in range(cfg["batch"]):
            seq = np.array(seqs[rng.choice(len(seqs), p=lengths / lengths.sum())])
            steps = (len(seq) - cfg["context"]) // 4
            start = 4 * rng.integers(0, steps + 1) if steps > 0 else 0
            crop = seq[start:start + cfg["context"]]
            shift = rng.integers(-chorales.MAX_TRANSPOSE, chorales.MAX_TRANSPOSE + 1)
            crop = np.where(crop == chorales.REST, crop, np.clip(crop + shift, 1, vocab_hi))
            x[b, :len(crop)], mask[b, :len(crop)] = crop, True
        yield torch.from_numpy(x), torch.from_numpy(mask)


def run_name(method, seed):
    return f"{method}-seed{seed}"


def save_atomic(obj, path):
    torch.save(obj, path + ".tmp")
    os.replace(path + ".tmp", path)


def write_json_atomic(obj, path):
    """`obj` as JSON at `path`, written to a temporary file beside it and renamed over it once complete."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def refuse_finished(results, name):
    """Stops before training when `results` already holds a finished run of `name` (its .pt or .json)."""
    done = [p for p in (os.path.join(results, name + ext) for ext in (".pt", ".json")) if os.path.exists(p)]
    if done:
        raise SystemExit(f"{' and '.join(done)}: a finished run of {name}, not replaced. To train it again, move "
                         f"{'them' if len(done) > 1 else 'it'} away first; for a trial run, pass --results DIR (another folder).")


def at_least(low):
    """An argparse type: a whole number of `low` or more."""
    def whole(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"got {text}; allowed: a whole number of {low} or more")
        return value
    return whole


def test_figures(model, seqs, ctx):
    """Test NLL at windows of 1, 2, 4 and 8 training lengths (256 … 2048 tokens) and valid NLL at 256."""
    return {"valid_nll": evaluate(model, seqs["valid"], ctx),
            "nll_by_window": {str(m * ctx): evaluate(model, seqs["test"], m * ctx) for m in (1, 2, 4, 8)}}


def train(method, seed=0, steps=None, results=None):
    """One run, resumable: a checkpoint every CHECKPOINT_EVERY steps in <results>/../runs/<name>.ckpt; at the end
    the best weights (lowest valid NLL) in <results>/<name>.pt and the run's figures in <results>/<name>.json
    (results: train/results by default). Refused before anything is loaded when those files exist."""
    name = run_name(method, seed)
    results = results or os.path.join(HERE, "results")
    refuse_finished(results, name)
    runs = os.path.join(os.path.dirname(os.path.abspath(results)), "runs")
    _, (lo, hi), seqs = dataset()
    cfg = config(method, vocab=hi - lo + 2)
    cfg["seed"] = seed
    if steps is not None:
        cfg["steps"] = steps
    os.makedirs(runs, exist_ok=True)
    os.makedirs(results, exist_ok=True)
    ckpt_path = os.path.join(runs, name + ".ckpt")
    torch.set_num_threads(int(os.environ.get("TRAIN_THREADS", "2")))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = Decoder(cfg)
    decay = [p for p in model.parameters() if p.ndim == 2]
    rest = [p for p in model.parameters() if p.ndim != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(0.9, 0.98))
    sched = lambda s: min(1.0, (s + 1) / cfg["warmup"]) * 0.5 * (1 + math.cos(math.pi * min(s, cfg["steps"]) / cfg["steps"]))
    state = {"step": 0, "seconds": 0.0, "log": {"train": [], "valid": []}, "best": None, "best_valid": math.inf, "best_step": 0,
             "stopped": "step budget"}
    if os.path.exists(ckpt_path):
        try:
            ck = torch.load(ckpt_path, weights_only=False)
            keys = {"config", "model", "opt", "torch_rng", "numpy_rng", "state"} - set(ck if isinstance(ck, dict) else ())
            if keys:
                raise ValueError(f"not a checkpoint of train.py (missing {', '.join(sorted(keys))})")
        except Exception as e:
            raise SystemExit(f"{ckpt_path} cannot be read ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                             f"delete it to start {name} afresh") from None
        if ck["config"] != cfg:
            raise SystemExit(f"{ckpt_path} was made with another config; delete it to start {name} afresh")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        torch.set_rng_state(ck["torch_rng"])
        rng.bit_generator.state = ck["numpy_rng"]
        state = ck["state"]
        print(f"{name}: resumed at step {state['step']}", flush=True)
    t0, running = time.time() - state["seconds"], []
    data = batches(seqs["train"], (lo, hi), cfg, rng)
    step = state["step"]
    while step < cfg["steps"]:
        model.train()
        x, mask = next(data)
        for g in opt.param_groups:
            g["lr"] = cfg["lr"] * sched(step)
        logits = model(x)[:, :-1]
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), x[:, 1:].reshape(-1), reduction="none")
        keep = mask[:, 1:].reshape(-1).float()
        loss = (loss * keep).sum() / keep.sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running.append(loss.item())
        step += 1
        if step % 50 == 0 or step % EVAL_EVERY == 0 or step == cfg["steps"]:
            state["log"]["train"].append([step, float(np.mean(running))])
            running = []
        if step % EVAL_EVERY == 0 or step == cfg["steps"]:
            v = evaluate(model, seqs["valid"], cfg["context"])
            state["log"]["valid"].append([step, v])
            if v < state["best_valid"] - MIN_IMPROVEMENT:
                state["best_valid"], state["best_step"] = v, step
                state["best"] = {k: t.clone() for k, t in model.state_dict().items()}
            print(f"{name} step {step}: train {state['log']['train'][-1][1]:.4f} valid {v:.4f} "
                  f"(best {state['best_valid']:.4f} at {state['best_step']}; {time.time() - t0:.0f} s)", flush=True)
            if step - state["best_step"] >= PATIENCE * EVAL_EVERY:
                state["stopped"] = f"early: no valid improvement of {MIN_IMPROVEMENT} in {PATIENCE * EVAL_EVERY} steps"
        state["step"] = step
        if step % CHECKPOINT_EVERY == 0 or step == cfg["steps"] or state["stopped"] != "step budget":
            state["seconds"] = time.time() - t0
            save_atomic({"config": cfg, "model": model.state_dict(), "opt": opt.state_dict(), "torch_rng": torch.get_rng_state(),
                         "numpy_rng": rng.bit_generator.state, "state": state}, ckpt_path)
        if state["stopped"] != "step budget":
            break
    cfg.update(train_seconds=round(time.time() - t0, 1), best_step=state["best_step"], stopped=state["stopped"],
               steps_run=step, threads=torch.get_num_threads())
    model.load_state_dict(state["best"])
    model.eval()
    figures = test_figures(model, seqs, cfg["context"])
    save_atomic({"config": cfg, "state": model.state_dict(), "log": state["log"], "pitch_range": [lo, hi]},
                os.path.join(results, name + ".pt"))
    write_json_atomic({"name": name, "method": method, "seed": seed, "config": cfg, **figures, "log": state["log"],
                       "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
                       "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, os.path.join(results, name + ".json"))
    print(f"{name}: done at step {step} ({state['stopped']}); best valid {state['best_valid']:.4f} at {state['best_step']}; "
          f"test {figures['nll_by_window']}", flush=True)
    return model


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--method", choices=["music", "shaw", "absolute", "rope", "alibi", "t5"], required=True)
    ap.add_argument("--seed", type=at_least(0), default=0, help="weights' initialisation and the batches' draws (default 0)")
    ap.add_argument("--steps", type=at_least(1), help=f"optimizer step budget, 1 or more (default {HYPER['steps']})")
    ap.add_argument("--results", help="folder for the run's .pt and .json (default train/results; its checkpoints go to "
                    "the folder's sibling runs/): a trial run goes elsewhere, never over a finished run")
    args = ap.parse_args()
    train(args.method, args.seed, args.steps, args.results)
