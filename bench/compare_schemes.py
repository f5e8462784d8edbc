#!/usr/bin/env python3
"""Compare relattn's fused forward of every scheme with the PyTorch layer people use for it, causal and not.

The peers are what Hugging Face's models (and a performance-minded PyTorch user) do for each scheme, written for
speed (hidden 512, 8 heads, batch 1, 2 threads):

    Q, K, V = x W + b, split into heads (1, h, n, d_h)
    shaw:     S = (Q w^Kᵀ).gather(clip(j − i, 16) + 16) each forward (the gather layer, keys only), then
              z = scaled_dot_product_attention(Q, K, V, attn_mask = S / sqrt(d_h) [+ the causal −∞])
    music:    the same gather layer with the Music Transformer's table E_r (distances −16..0 causal, −16..16
              not; farther ones read a zero column, tensor2tensor's edge)
    rope:     Q, K rotated by Llama's rotary embedding (rotate_half, base 10000; cos and sin made once), then
              z = scaled_dot_product_attention(Q, K, V, is_causal)  — PyTorch's flash CPU kernel
    alibi:    bias[h, i, j] = −m_h |j − i| (BLOOM's slopes) [+ the causal −∞] as SDPA's attn_mask
    t5:       bias[h, i, j] = table[bucket(j − i), h] (32 buckets, max_distance 128, causal buckets when causal)
              [+ the causal −∞] as SDPA's attn_mask
    absolute: x + the sinusoids (made once), then z = scaled_dot_product_attention(Q, K, V, is_causal)
    deberta:  Hugging Face's own DisentangledSelfAttention (DeBERTa-v3's: c2p and p2c, 256 log buckets up to 512,
              share_att_key; eager, the module has no SDPA path) on the same weights, given the 512 relative
              embeddings; relattn reads their projections per head (deberta_k_r, deberta_q_r). Bidirectional only.
    bert_relative: Hugging Face's own BertSelfAttention with position_embedding_type relative_key_query (transformers
              4.57 from target/hf4: 5.x removed it; eager, its SDPA class falls back to eager for relative positions)
              on the same weights and distance_embedding, max_position_embeddings = n. Bidirectional only.
    transformer_xl: Hugging Face's own XLNetRelativeAttention (the layer of a one-layer XLNetModel, clamp_len 128,
              bi_data False) by its own steps: q, k, v and r = R W_R by its einsums, R the model's own
              relative_positional_encoding (attn_type "bi", or "uni" when causal, with the model's causal mask),
              rel_attn_core (the content stream: u, v, rel_shift; no segments), then its o projection without
              post_attention's residual and layer norm. XLNet's q, k, v, o have no bias: the scenario's are zero;
              relattn reads W_R, u and v (xl_w_r, xl_u, xl_v) and clamps at --clip 128.
    output  = concat_h(z) W_o + b_o

ALiBi's and T5's bias is timed twice: built in each forward, as one layer does ("torch"), and built once
beforehand, as a model that shares it across its layers does ("torch, bias once": only SDPA with it is timed).

relattn runs `relattn bench --method … [--causal]` on the same tensors (its fused forward: no (n, n) array).
The sides are run interleaved, each in its own process (`--rounds` rounds of: every peer, then relattn), and
each keeps its best repetition over all rounds (the host is shared: a side's best is its least disturbed run).
Each side's memory is its own VmHWM; the outputs are compared; the sgemm peak (torch.mm, 2 threads) is
measured in the same run, before and after the rows, and the larger kept. "% of peak" counts the useful flops
only: the projections, 4·n²·d for attention (n(n + 1)/2 pairs when causal) and the small relative products,
as `relattn bench` reports them. Prints a markdown table and writes it, with the machine and date, to
bench/results/compare_schemes.md.

Usage (from the repository root):
    python3 bench/compare_schemes.py                                  # n = 512 2048 4096 8192, both masks
    python3 bench/compare_schemes.py --sizes 2048 --schemes rope --causal false
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
HIDDEN, HEADS, THREADS, CLIP = 512, 8, 2, 16
BUCKETS, MAX_DISTANCE = 32, 128
DEBERTA_BUCKETS, DEBERTA_MAX = 256, 512
# Transformer-XL's clamp_len k, both sides (not XLNet's −1, unclamped: before 57ebfb2 relattn made its tables of 2k + 1
# sinusoids in O(k·d_model²) a head before timing, 503 s at k 8192, n 64)
XL_CLIP = 128
SCHEMES = ["shaw", "music", "rope", "alibi", "t5", "absolute", "deberta", "bert_relative", "transformer_xl"]
CAUSAL_SCHEMES = [s for s in SCHEMES if s not in ("deberta", "bert_relative")]  # encoders' attention: no causal row
HF4 = os.path.join(ROOT, "target", "hf4")  # transformers 4.x for BERT's relative positions (make deps-hf4)
BIAS_SCHEMES = ["alibi", "t5"]
TOLERANCE = 1e-4


def default_reps(n):
    return 10 if n <= 1024 else 4 if n <= 2048 else 2 if n <= 4096 else 1


def alibi_slopes(h):
    """Press et al.'s slopes (BLOOM's build_alibi_tensor)."""
    import math
    power = 2 ** math.floor(math.log2(h))
    base = 2.0 ** (-8.0 / power)
    slopes = [base ** (i + 1) for i in range(power)]
    extra = 2.0 ** (-4.0 / power)
    slopes += [extra ** (2 * i + 1) for i in range(h - power)]
    return slopes


def t5_buckets(torch, n, causal):
    """Hugging Face's T5Attention._relative_position_bucket for j − i (bidirectional, or causal: the past
    only, every bucket for it)."""
    import math
    pos = torch.arange(n)
    rel = pos[None, :] - pos[:, None]
    if causal:
        buckets, out, rel = BUCKETS, torch.zeros_like(rel), -torch.clamp(rel, max=0)
    else:
        buckets = BUCKETS // 2
        out, rel = (rel > 0).long() * buckets, rel.abs()
    exact = buckets // 2
    large = exact + (torch.log(rel.float().clamp(min=1) / exact) / math.log(MAX_DISTANCE / exact) * (buckets - exact)).long()
    large = torch.minimum(large, torch.full_like(large, buckets - 1))
    return out + torch.where(rel < exact, rel, large)


def sinusoids(torch, n, d):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i + 1] = cos(…): relattn's absolute positions."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    angle = pos / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()


# -------------------------------------------------------------------------------------------- workers

def worker_export(args):
    """The scenario .npz: x (1, n, 512) ~ N(0, 1), Xavier-uniform weights, biases in ±0.1; Shaw's w^K
    (33, 64) and the Music Transformer's E_r (17 rows causal, 33 not) Xavier-uniform; ALiBi's slopes; T5's
    table (B, h) ~ N(0, 1); DeBERTa's relative embeddings E (512, 512) ~ N(0, 1) and their projections by the key and
    query weights, per head (h, 512, 64); BERT's distance table (2n − 1, 64) Xavier-uniform; Transformer-XL's W_R
    (512, 512) Xavier-uniform and u, v (h, 64) in ±0.1, its biases b_q, b_k, b_v, b_o zero (XLNet has none)."""
    import numpy as np
    rng = np.random.default_rng(0)

    def xavier(shape):
        bound = (6.0 / (shape[-2] + shape[-1])) ** 0.5
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    arrays = {"x": rng.standard_normal((1, args.n, HIDDEN)).astype(np.float32)}
    for name in "qkvo":
        arrays["w_" + name] = xavier((HIDDEN, HIDDEN))
        arrays["b_" + name] = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
    if args.scheme == "shaw":
        arrays["rel_k"] = xavier((2 * CLIP + 1, HIDDEN // HEADS))
    if args.scheme == "music":
        arrays["e_r"] = xavier((CLIP + 1 if args.causal == "true" else 2 * CLIP + 1, HIDDEN // HEADS))
    if args.scheme == "alibi":
        arrays["alibi_slopes"] = np.array(alibi_slopes(HEADS), dtype=np.float32)
    if args.scheme == "t5":
        arrays["t5_bias"] = rng.standard_normal((BUCKETS, HEADS)).astype(np.float32)
    if args.scheme == "deberta":
        e = rng.standard_normal((2 * DEBERTA_BUCKETS, HIDDEN)).astype(np.float32)
        per_head = lambda a: np.ascontiguousarray(a.reshape(2 * DEBERTA_BUCKETS, HEADS, HIDDEN // HEADS).transpose(1, 0, 2))  # noqa: E731
        np.savez(peer_only(args.npz), deberta_rel_embeddings=e)
        arrays["deberta_k_r"] = per_head(e @ arrays["w_k"] + arrays["b_k"])
        arrays["deberta_q_r"] = per_head(e @ arrays["w_q"] + arrays["b_q"])
    if args.scheme == "bert_relative":
        arrays["distance_embedding"] = xavier((2 * args.n - 1, HIDDEN // HEADS))
    if args.scheme == "transformer_xl":
        arrays.update({"b_" + name: np.zeros(HIDDEN, np.float32) for name in "qkvo"})
        arrays["xl_w_r"] = xavier((HIDDEN, HIDDEN))
        arrays["xl_u"], arrays["xl_v"] = (rng.uniform(-0.1, 0.1, (HEADS, HIDDEN // HEADS)).astype(np.float32) for _ in "uv")
    np.savez(args.npz, **arrays)


def peer_only(npz):
    """The file beside a scenario .npz holding what only the peer reads (DeBERTa's relative embeddings: relattn is
    given their projections and refuses names it does not know)."""
    return npz[: -len(".npz")] + ".peer.npz"


def load_tensors(torch, npz, device="cpu"):
    """The scenario's arrays and the peer's own, as tensors on `device`."""
    import numpy as np
    t = {}
    for path in (npz, peer_only(npz)):
        if os.path.exists(path):
            with np.load(path) as f:
                t.update({name: torch.from_numpy(f[name]).to(device) for name in f.files})
    return t


def fixed_tensors(torch, t, scheme, n, causal):
    """What a model computes once for every layer and forward: RoPE's cos and sin, ALiBi's distances, T5's
    bucket matrix, Shaw's index, the sinusoids; and the causal mask (0 or −∞ above the diagonal)."""
    dh = HIDDEN // HEADS
    pos = torch.arange(n)
    above = torch.full((n, n), float("-inf")).triu(1) if causal else torch.zeros(n, n)
    if scheme == "rope":
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dh, 2, dtype=torch.float) / dh))
        emb = torch.cat((pos[:, None].float() * inv_freq,) * 2, dim=-1)
        return {"cos": emb.cos(), "sin": emb.sin()}
    if scheme == "alibi":
        return {"distance": (pos[None, :] - pos[:, None]).abs().float(), "above": above}
    if scheme == "t5":
        return {"buckets": t5_buckets(torch, n, causal), "above": above}
    if scheme == "deberta":
        return {"module": deberta_module(torch, t), "mask": torch.ones(1, 1, n, n, dtype=torch.bool)}
    if scheme == "bert_relative":
        return {"module": bert_module(torch, t, n)}
    if scheme == "transformer_xl":
        return xlnet_fixed(torch, t, n, causal)
    if scheme == "shaw":
        return {"index": (pos[None, :] - pos[:, None]).clamp(-CLIP, CLIP) + CLIP, "above": above}
    if scheme == "music":
        d = pos[None, :] - pos[:, None]
        rows = CLIP + 1 if causal else 2 * CLIP + 1
        inside = (d >= -CLIP) & (d <= (0 if causal else CLIP))
        return {"index": torch.where(inside, d + CLIP, torch.full_like(d, rows)), "above": above}
    return {"pe": sinusoids(torch, n, HIDDEN)}


def deberta_module(torch, t):
    """Hugging Face's DisentangledSelfAttention (DeBERTa-v3's settings) holding the file's W_q, W_k, W_v."""
    from transformers.models.deberta_v2.configuration_deberta_v2 import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention
    config = DebertaV2Config(hidden_size=HIDDEN, num_attention_heads=HEADS, relative_attention=True, position_buckets=DEBERTA_BUCKETS,
                             max_relative_positions=DEBERTA_MAX, pos_att_type=["p2c", "c2p"], share_att_key=True,
                             attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
    module = DisentangledSelfAttention(config).eval()
    with torch.no_grad():
        for name in "qkv":
            proj = getattr(module, {"q": "query_proj", "k": "key_proj", "v": "value_proj"}[name])
            proj.weight.copy_(t["w_" + name].t())
            proj.bias.copy_(t["b_" + name])
    return module


def bert_module(torch, t, n):
    """Hugging Face's BertSelfAttention (transformers 4.x, relative_key_query, max_position_embeddings n) holding the
    file's W_q, W_k, W_v and distance_embedding."""
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertSelfAttention
    config = BertConfig(hidden_size=HIDDEN, num_attention_heads=HEADS, max_position_embeddings=n, position_embedding_type="relative_key_query",
                        attention_probs_dropout_prob=0.0)
    module = BertSelfAttention(config, position_embedding_type="relative_key_query").eval()
    with torch.no_grad():
        for name in "qkv":
            proj = getattr(module, {"q": "query", "k": "key", "v": "value"}[name])
            proj.weight.copy_(t["w_" + name].t())
            proj.bias.copy_(t["b_" + name])
        module.distance_embedding.weight.copy_(t["distance_embedding"])
    return module


def xlnet_fixed(torch, t, n, causal):
    """A one-layer XLNetModel (clamp_len XL_CLIP, attn_type "bi", or "uni" causal) whose XLNetRelativeAttention holds
    the file's W_q, W_k, W_v, W_o, W_R, u and v: the module, the model's own relative_positional_encoding (W, 1, 512)
    and, causal, the content stream's mask as XLNetModel makes it (1 above the diagonal, (n, n, 1, 1))."""
    from transformers import XLNetConfig, XLNetModel
    config = XLNetConfig(vocab_size=8, d_model=HIDDEN, n_layer=1, n_head=HEADS, d_inner=4, attn_type="uni" if causal else "bi",
                         clamp_len=XL_CLIP, bi_data=False, dropout=0.0)
    model = XLNetModel(config).eval()
    module = model.layer[0].rel_attn
    per_head = lambda w: w.reshape(HIDDEN, HEADS, HIDDEN // HEADS)  # noqa: E731  (d_model, h·d_head) → XLNet's (d_model, h, d_head)
    with torch.no_grad():
        for name in "qkv":
            getattr(module, name).copy_(per_head(t["w_" + name]))
        module.o.copy_(per_head(t["w_o"].t()))
        module.r.copy_(per_head(t["xl_w_r"]))
        module.r_w_bias.copy_(t["xl_u"])
        module.r_r_bias.copy_(t["xl_v"])
        pos_emb = model.relative_positional_encoding(n, n, bsz=1)
    fixed = {"module": module, "pos_emb": pos_emb}
    if causal:
        fixed["mask"] = model.create_mask(n, 0)[:, :, None, None]
    return fixed


def xlnet_forward(torch, t, fixed):
    """XLNetRelativeAttention.forward's content stream (g None) without post_attention's residual and layer norm."""
    m, h = fixed["module"], t["x"].transpose(0, 1)  # XLNet is sequence-first: (n, b, d_model)
    q = torch.einsum("ibh,hnd->ibnd", h, m.q)
    k = torch.einsum("ibh,hnd->ibnd", h, m.k)
    v = torch.einsum("ibh,hnd->ibnd", h, m.v)
    r = torch.einsum("ibh,hnd->ibnd", fixed["pos_emb"], m.r)
    z = m.rel_attn_core(q, k, v, r, seg_mat=None, attn_mask=fixed.get("mask"))
    return torch.einsum("ibnd,hnd->ibh", z, m.o).transpose(0, 1)


def bias(torch, t, scheme, fixed):
    """ALiBi's or T5's (1, h, n, n) bias with the causal −∞, as one layer builds it in its forward."""
    if scheme == "alibi":
        b = fixed["distance"] * t["alibi_slopes"].view(HEADS, 1, 1).neg()
    else:
        b = t["t5_bias"][fixed["buckets"]].permute(2, 0, 1)
    return b.add_(fixed["above"]).unsqueeze(0)


def peer_forward(torch, t, scheme, fixed, causal, bias_once=None):
    """The PyTorch layer of this file's docstring; `bias_once`: ALiBi's or T5's bias built beforehand."""
    F = torch.nn.functional
    x = t["x"]
    b, n, d = x.shape
    dh = d // HEADS
    if scheme == "absolute":
        x = x + fixed["pe"]
    if scheme == "transformer_xl":
        return xlnet_forward(torch, t, fixed)
    if scheme in ("deberta", "bert_relative"):
        if scheme == "deberta":
            z = fixed["module"](x, fixed["mask"], rel_embeddings=t["deberta_rel_embeddings"])
        else:
            z = fixed["module"](x)
        z = z[0] if isinstance(z, tuple) else z
        return torch.addmm(t["b_o"], z.reshape(b * n, d), t["w_o"]).view(b, n, d)

    def heads(w, b_):
        return torch.addmm(b_, x.reshape(n * b, d), w).view(b, n, HEADS, dh).transpose(1, 2)

    q, k, v = heads(t["w_q"], t["b_q"]), heads(t["w_k"], t["b_k"]), heads(t["w_v"], t["b_v"])
    mask, is_causal = None, False
    if scheme == "rope":
        def rotate_half(a):
            return torch.cat((-a[..., dh // 2:], a[..., : dh // 2]), dim=-1)

        cos, sin = fixed["cos"], fixed["sin"]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        is_causal = causal
    elif scheme == "absolute":
        is_causal = causal
    elif scheme in ("shaw", "music"):
        index = fixed["index"].expand(b, HEADS, n, n)
        rel = torch.matmul(q, t["rel_k" if scheme == "shaw" else "e_r"].t())
        if scheme == "music":
            rel = F.pad(rel, (0, 1))  # the zero column that distances past the table read
        mask = rel.gather(-1, index).mul_(dh ** -0.5).add_(fixed["above"])
    else:
        mask = bias_once if bias_once is not None else bias(torch, t, scheme, fixed)
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    return torch.addmm(t["b_o"], z.transpose(1, 2).reshape(b * n, d), t["w_o"]).view(b, n, d)


def worker_torch(args):
    """Times the peer's forward (its best repetition after a warm-up); prints one JSON line."""
    import json
    import numpy as np
    import torch
    torch.set_num_threads(THREADS)
    t = load_tensors(torch, args.npz)
    n = t["x"].shape[1]
    causal = args.causal == "true"
    fixed = fixed_tensors(torch, t, args.scheme, n, causal)
    times = []
    with torch.inference_mode():
        once = bias(torch, t, args.scheme, fixed) if args.bias_once else None
        out = peer_forward(torch, t, args.scheme, fixed, causal, once)
        for _ in range(args.reps):
            start = time.perf_counter()
            out = peer_forward(torch, t, args.scheme, fixed, causal, once)
            times.append((time.perf_counter() - start) * 1e3)
    np.save(args.save_output, out.numpy().astype(np.float32))
    print(json.dumps({"ms_min": min(times), "peak_rss_mib": vm_hwm_mib()}))


# ------------------------------------------------------------------------------------------------ main

def scheme_flags(scheme):
    """`relattn bench`'s flags for the layer this file's peers compute (one spelling for every bench script)."""
    return {"shaw": ["--clip", str(CLIP), "--relative-values", "false"], "music": ["--clip", str(CLIP)], "rope": ["--rope-layout", "half"],
            "t5": ["--per-head-tables", "--t5-buckets", str(BUCKETS), "--t5-max-distance", str(MAX_DISTANCE)],
            "deberta": ["--per-head-tables", "--position-buckets", str(DEBERTA_BUCKETS), "--max-relative-positions", str(DEBERTA_MAX)],
            "bert_relative": ["--bert-terms", "key_query"], "transformer_xl": ["--clip", str(XL_CLIP)]}.get(scheme, [])


def relattn_cmd(binary, scheme, npz, causal, reps, out, n):
    # BERT's table covers the sequence: max_position n (the other schemes do not read it).
    return [binary, "bench", "--method", scheme, "--tensors", npz, "--heads", str(HEADS), "--reps", str(reps), "--threads", str(THREADS),
            "--causal", causal, "--save-output", out, "--max-memory-mb", "20000", "--max-position", str(n)] + scheme_flags(scheme)


def measure(scheme, n, causal, reps, rounds, binary, me, work, env, timeout):
    """One row: every peer and relattn, interleaved over `rounds`, each side's best repetition kept."""
    # The Music Transformer's table has fewer rows when causal; the other schemes' files serve both masks.
    npz = os.path.join(work, f"in_{scheme}_{n}" + (f"_{causal}" if scheme == "music" else "") + ".npz")
    if not os.path.exists(npz):
        rc, _, err, _, _ = run_measured(me + ["--worker", "export", "--scheme", scheme, "--n", str(n), "--npz", npz, "--causal", causal], timeout, env)
        if rc != 0:
            raise SystemExit(f"error: exporting {scheme} n = {n} failed:\n{err}")
    sides = {"torch": me + ["--worker", "torch", "--scheme", scheme, "--npz", npz, "--causal", causal, "--reps", str(reps)]}
    if scheme in BIAS_SCHEMES:
        sides["once"] = sides["torch"] + ["--bias-once"]
    rel_out = os.path.join(work, "relattn_out.npy")
    sides["relattn"] = relattn_cmd(binary, scheme, npz, causal, reps, rel_out, n)
    # BERT's peer needs transformers 4.x, first on the torch worker's path.
    peer_env = dict(env, PYTHONPATH=HF4) if scheme == "bert_relative" else env
    row = {"scheme": scheme, "n": n, "causal": causal, "gflops": None, "err": None}
    for side in sides:
        row[side] = {"ms": None, "mib": None, "fail": None}
    for r in range(rounds):
        for side, cmd in sides.items():
            out = os.path.join(work, f"{side}_out.npy")
            print(f"[{scheme} n={n} causal {causal}] {side}, round {r + 1} of {rounds} ({reps} reps)...", file=sys.stderr, flush=True)
            rc, stdout, err, _, _ = run_measured(cmd if side == "relattn" else cmd + ["--save-output", out], timeout, env if side == "relattn" else peer_env)
            info = last_json(stdout) if rc == 0 else None
            s = row[side]
            if not info:
                s["fail"] = failure(rc, err)
                continue
            if s["ms"] is None or info["ms_min"] < s["ms"]:
                s["ms"] = info["ms_min"]
                if side == "relattn":
                    row["gflops"] = info["gflop_per_s"] * info["ms_per_forward"] / info["ms_min"]
            s["mib"] = max(s["mib"] or 0, info["peak_rss_mib"])
    if row["torch"]["ms"] is not None and row["relattn"]["ms"] is not None:
        rc, out, err, _, _ = run_measured(me + ["--worker", "compare", "--outputs", rel_out, os.path.join(work, "torch_out.npy")], timeout, env)
        row["err"] = last_json(out)["error"] if rc == 0 else None
    return row


def table(rows, peak_gflops):
    lines = ["| scheme | causal | n | torch ms | torch, bias once ms | relattn ms | speed-up | vs bias once | relattn GFLOP/s | % of sgemm peak | "
             "torch peak MiB | relattn peak MiB | max rel. error |", "|---|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ms = {side: r[side]["ms"] if side in r else None for side in ("torch", "once", "relattn")}
        shown = {side: (fmt(ms[side], ".2f") if ms[side] is not None else r[side]["fail"]) if side in r else "—" for side in ms}
        speed = ms["torch"] / ms["relattn"] if ms["torch"] and ms["relattn"] else None
        vs_once = ms["once"] / ms["relattn"] if ms["once"] and ms["relattn"] else None
        pct = 100 * r["gflops"] / peak_gflops if r["gflops"] else None
        err = "—" if r["err"] is None else f"{r['err']:.1e}" + ("" if r["err"] <= TOLERANCE else " FAIL")
        lines.append(f"| {r['scheme']} | {'yes' if r['causal'] == 'true' else 'no'} | {r['n']} | {shown['torch']} | {shown['once']} | {shown['relattn']} | "
                     f"{fmt(speed, '.2f', '×')} | {fmt(vs_once, '.2f', '×')} | {fmt(r['gflops'], '.1f')} | {fmt(pct, '.0f', '%')} | "
                     f"{fmt(r['torch']['mib'], '.0f')} | {fmt(r['relattn']['mib'], '.0f')} | {err} |")
    return "\n".join(lines)


def measure_peak(me, env, timeout):
    rc, out, err, _, _ = run_measured(me + ["--worker", "peak"], timeout, env)
    if rc != 0:
        raise SystemExit(f"error: measuring the sgemm peak failed:\n{err}")
    return last_json(out)["gflop_per_s"]


def main():
    ap = arguments(__doc__, [512, 2048, 4096, 8192], "10/4/2/1", DEFAULT_OUT, ["export", "peak", "torch", "compare"])
    ap.add_argument("--schemes", nargs="+", choices=SCHEMES, default=SCHEMES, help="schemes to measure (default: all)")
    ap.add_argument("--causal", nargs="+", choices=["false", "true"], default=["false", "true"], help="masks to measure (default: both)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every side (default: %(default)s)")
    ap.add_argument("--scheme", choices=SCHEMES, help="(worker) the scheme")
    ap.add_argument("--bias-once", action="store_true", help="(worker) build the bias before timing")
    ap.add_argument("--outputs", nargs=2, help="(worker) relattn's and torch's outputs")
    args = ap.parse_args()
    if args.worker:
        if args.worker in ("torch", "export"):
            args.causal = args.causal[0]
        {"export": worker_export, "peak": worker_peak, "torch": worker_torch, "compare": worker_compare}[args.worker](args)
        return

    ensure("numpy")
    torch_version = ensure("torch")
    if {"deberta", "transformer_xl"} & set(args.schemes):
        torch_version += f", transformers {ensure('transformers')}"
    default_binary = os.path.abspath(args.relattn) == os.path.join(ROOT, "target", "release", "relattn")
    binary = relattn_binary(args.relattn, default_binary and not args.no_build)
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))
    work = args.keep or tempfile.mkdtemp(prefix="compare_schemes_")
    os.makedirs(work, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__)]
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    peaks = [measure_peak(me, env, args.timeout)]
    rows = [measure(scheme, n, causal, args.reps or default_reps(n), args.rounds, binary, me, work, env, args.timeout)
            for n in args.sizes for causal in args.causal for scheme in args.schemes if causal == "false" or scheme in CAUSAL_SCHEMES]
    peaks.append(measure_peak(me, env, args.timeout))
    text = table(rows, max(peaks))
    print(text)
    ended = datetime.datetime.now().strftime("%H:%M")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    isa = last_json(subprocess.run([binary, "bench", "--n", "8"], capture_output=True, text=True).stdout).get("isa")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(f"# relattn vs the PyTorch layers of each scheme\n\n{started}–{ended}, {machine()}; torch {torch_version}, {version} "
                f"(kernels: {isa}); {THREADS} threads each; hidden {HIDDEN}, {HEADS} heads, batch 1; {args.rounds} interleaved rounds, "
                f"each side's best; sgemm peak {max(peaks):.1f} GFLOP/s (torch.mm, {THREADS} threads, best of "
                f"{', '.join(f'{p:.1f}' for p in peaks)} measured before and after). `python3 bench/compare_schemes.py`\n\n{text}\n")
    print(f"[written] {args.out}", file=sys.stderr)
    if any(r["err"] is not None and r["err"] > TOLERANCE for r in rows):
        raise SystemExit("error: an output differs from the peer's by more than the tolerance")


if __name__ == "__main__":
    main()
