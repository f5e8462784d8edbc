"""Trains one chorale decoder (music, shaw or absolute) and keeps its weights and loss curve in train/runs/.

    train/.venv/bin/python train/train.py --method music   # same data, size, steps and seed for all three

The three models differ only in `method` (and Shaw's clip). Every number here is written into the model's
metadata by export.py, so MODELS.md and the shipped files can be checked against each other.
"""
import argparse
import math
import os
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
         "batch": 16, "steps": 1200, "lr": 1e-3, "warmup": 100, "weight_decay": 0.01, "seed": 0}


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
        for i in range(0, len(ws), 32):
            x = torch.tensor(ws[i:i + 32])
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


def train(method, steps=None, out_dir=None):
    _, (lo, hi), seqs = dataset()
    cfg = config(method, vocab=hi - lo + 2)
    if steps:
        cfg["steps"] = steps
    torch.manual_seed(cfg["seed"])
    torch.set_num_threads(int(os.environ.get("TRAIN_THREADS", "2")))
    rng = np.random.default_rng(cfg["seed"])
    model = Decoder(cfg)
    decay = [p for p in model.parameters() if p.ndim == 2]
    rest = [p for p in model.parameters() if p.ndim != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(0.9, 0.98))
    sched = lambda s: min(1.0, (s + 1) / cfg["warmup"]) * 0.5 * (1 + math.cos(math.pi * min(s, cfg["steps"]) / cfg["steps"]))
    log = {"train": [], "valid": []}
    t0, running = time.time(), []
    data = batches(seqs["train"], (lo, hi), cfg, rng)
    for step in range(cfg["steps"]):
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
        if (step + 1) % 50 == 0 or step + 1 == cfg["steps"]:
            log["train"].append([step + 1, float(np.mean(running))])
            running = []
        if (step + 1) % 250 == 0 or step + 1 == cfg["steps"]:
            v = evaluate(model, seqs["valid"], cfg["context"])
            log["valid"].append([step + 1, v])
            print(f"{method} step {step + 1}: train {log['train'][-1][1]:.4f} valid {v:.4f} ({time.time() - t0:.0f} s)", flush=True)
    cfg["train_seconds"] = round(time.time() - t0, 1)
    out_dir = out_dir or os.path.join(HERE, "runs")
    os.makedirs(out_dir, exist_ok=True)
    torch.save({"config": cfg, "state": model.state_dict(), "log": log, "pitch_range": [lo, hi]},
               os.path.join(out_dir, f"{method}.pt"))
    return model


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    # rope, alibi and t5 train here; relattn's trained-model runtime (src/trained/) loads music, shaw and absolute.
    ap.add_argument("--method", choices=["music", "shaw", "absolute", "rope", "alibi", "t5"], required=True)
    ap.add_argument("--steps", type=int, help=f"optimizer steps (default {HYPER['steps']})")
    args = ap.parse_args()
    train(args.method, args.steps)
