"""The decoder relattn runs (crates/relattn/src/trained/transformer/), in PyTorch, with relattn's conventions, so the trained
weights load with no conversion:

    x      = E[tokens] · √d_model  (+ sinusoidal positions, `absolute` only)           (T, d_model)
    layer  : x ← x + Attn(LN₁(x));   x ← x + gelu(LN₂(x) W₁ + b₁) W₂ + b₂
    logits = LN_f(x) · Eᵀ                                                               (T, vocab), tied

Attention is relattn's layer (src/layer/forward.rs, src/attention/mod.rs): Q = x W_q + b_q (W stored (in, out)), head h
reads columns h·d_head..(h+1)·d_head, logits = (Q Kᵀ + S) / √d_head with keys after the query masked,
α = softmax, z = α V (+ B w^V for Shaw), out = concat_h(z) W_o + b_o. The relative term S, distance d = j − i:
- `shaw`  (Shaw et al. 2018): S_ij = q_i · w^K[clip(d, k) + k]; value term Σ_j α_ij w^V[clip(d, k) + k],
  tables (heads, 2k+1, d_head);
- `music` (Huang et al. 2018): S_ij = q_i · E_r[d + R − 1] for d ≥ −(R − 1), 0 beyond (tensor2tensor's zero
  edge), E_r (heads, R, d_head) with rows for distances −(R−1)..0, computed by the skew (pad, reshape, slice);
- `absolute`: S = 0, sinusoidal positions added to the embeddings;
- `rope` (Su et al. 2021): q and k rotated by position before q·k, interleaved pairs (2p, 2p+1), base 10000,
  every component (relattn's `--method rope` defaults); S = 0;
- `alibi` (Press et al. 2022): m_h·(j − i) added after the 1/√d_head scale, the paper's slopes;
- `t5` (Raffel et al. 2020): a learned bias per head and causal bucket of j − i (Hugging Face's bucket function,
  `buckets` and `max_distance` of the config), added after the scale.
gelu is the tanh form; LayerNorm ε = 1e-5. Dropout (training only) is on the embeddings and residual branches.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LN_EPS = 1e-5


def sinusoid(length, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe.float()


def rope_rotate(x, base=10000.0):
    """(B, H, T, d) with row t at position t, pair (2p, 2p+1) turned by t · base^(−2p/d): relattn's
    `Rope::rotate` (interleaved, the whole head)."""
    t, d = x.shape[-2], x.shape[-1]
    theta = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d))
    angle = torch.arange(t, dtype=torch.float32, device=x.device)[:, None] * theta  # (T, d/2)
    cos, sin = angle.cos(), angle.sin()
    xa, xb = x[..., 0::2], x[..., 1::2]
    return torch.stack((xa * cos - xb * sin, xb * cos + xa * sin), dim=-1).flatten(-2)


def alibi_slopes(h):
    """Press et al.'s slopes for h heads (the largest power of two's, then every other slope of twice it)."""
    power = 2 ** math.floor(math.log2(h))
    slopes = [2.0 ** (-8.0 * k / power) for k in range(1, power + 1)]
    return torch.tensor(slopes + [2.0 ** (-4.0 * (2 * k - 1) / power) for k in range(1, h - power + 1)])


def t5_causal_bucket(d, buckets, max_distance):
    """Hugging Face's `_relative_position_bucket(d, bidirectional=False, …)` for distances d = j − i (a tensor)."""
    n = (-d).clamp(min=0)
    exact = buckets // 2
    large = exact + (torch.log(n.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (buckets - exact)).long()
    return torch.where(n < exact, n, large.clamp(max=buckets - 1))


def music_table_for_length(e_r, t):
    """The T rows (distances −(T−1)..0) that a length-T skew reads from E_r (H, R, d): relattn's
    `skew::table_for_length` with the zero edge."""
    r = e_r.shape[1]
    if t <= r:
        return e_r[:, r - t:]
    return torch.cat([e_r.new_zeros(e_r.shape[0], t - r, e_r.shape[2]), e_r], dim=1)


def skew(qer):
    """(B, H, T, T) with column c = distance c − (T−1) → (B, H, T, T) at absolute positions (j ≤ i valid)."""
    b, h, t, _ = qer.shape
    padded = F.pad(qer, (1, 0))
    return padded.reshape(b, h, t + 1, t)[:, :, 1:, :]


def shaw_rows(t, k, device):
    """(T, T) table rows clip(j − i, k) + k."""
    pos = torch.arange(t, device=device)
    return (pos[None, :] - pos[:, None]).clamp(-k, k) + k


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, h = cfg["d_model"], cfg["heads"]
        self.cfg, self.heads, self.d_head = cfg, h, d // h
        for name in ("q", "k", "v", "o"):
            setattr(self, f"w_{name}", nn.Parameter(torch.randn(d, d) * 0.02))
            setattr(self, f"b_{name}", nn.Parameter(torch.zeros(d)))
        with torch.no_grad():
            self.w_o.mul_(1 / math.sqrt(2 * cfg["layers"]))
        # Relative tables start at zero: rows a causal decoder never reads (Shaw's d > 0) stay exactly zero.
        if cfg["method"] == "shaw":
            rows = 2 * cfg["clip"] + 1
            self.rel_k = nn.Parameter(torch.zeros(h, rows, self.d_head))
            self.rel_v = nn.Parameter(torch.zeros(h, rows, self.d_head))
        elif cfg["method"] == "music":
            self.e_r = nn.Parameter(torch.zeros(h, cfg["clip"] + 1, self.d_head))
        elif cfg["method"] == "alibi":
            self.register_buffer("slopes", alibi_slopes(h), persistent=False)
        elif cfg["method"] == "t5":
            self.t5_bias = nn.Parameter(torch.zeros(h, cfg["t5_buckets"]))

    def forward(self, x, record=None):
        b, t, d = x.shape
        h, dh = self.heads, self.d_head
        split = lambda y: y.view(b, t, h, dh).transpose(1, 2)  # (B, H, T, dh)
        q, k, v = (split(x @ getattr(self, f"w_{n}") + getattr(self, f"b_{n}")) for n in "qkv")
        if record is not None:  # the projections, as relattn's trace names them (RoPE's rotated ones are its rotated_q/k)
            record.update(q=q.transpose(1, 2).reshape(b, t, d), k=k.transpose(1, 2).reshape(b, t, d), v=v.transpose(1, 2).reshape(b, t, d))
        method = self.cfg["method"]
        if method == "rope":
            q, k = rope_rotate(q), rope_rotate(k)
        logits = q @ k.transpose(-1, -2)
        if method == "shaw":
            rows = shaw_rows(t, self.cfg["clip"], x.device).expand(b, h, t, t)
            p = q @ self.rel_k.transpose(-1, -2)[None]  # (B, H, T, 2k+1)
            logits = logits + torch.gather(p, -1, rows)
        elif method == "music":
            table = music_table_for_length(self.e_r, t)  # (H, T, dh)
            logits = logits + skew(q @ table.transpose(-1, -2)[None])
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        logits = logits / math.sqrt(dh)
        if method in ("alibi", "t5"):
            pos = torch.arange(t, device=x.device)
            dist = pos[None, :] - pos[:, None]  # j − i
            if method == "alibi":
                logits = logits + self.slopes[:, None, None] * dist[None].float()
            else:
                logits = logits + self.t5_bias[:, t5_causal_bucket(dist, self.cfg["t5_buckets"], self.cfg["t5_max_distance"])]
        logits = logits.masked_fill(~causal, float("-inf"))
        weights = logits.softmax(-1)
        z = weights @ v
        if method == "shaw":
            buckets = x.new_zeros(b, h, t, 2 * self.cfg["clip"] + 1).scatter_add(-1, rows, weights)
            z = z + buckets @ self.rel_v[None]
        if record is not None:
            record.update(weights=weights)
        return z.transpose(1, 2).reshape(b, t, d) @ self.w_o + self.b_o


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, ff = cfg["d_model"], cfg["d_ff"]
        self.ln1 = nn.LayerNorm(d, eps=LN_EPS)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(d, eps=LN_EPS)
        self.w1 = nn.Parameter(torch.randn(d, ff) * 0.02)
        self.b1 = nn.Parameter(torch.zeros(ff))
        self.w2 = nn.Parameter(torch.randn(ff, d) * 0.02 / math.sqrt(2 * cfg["layers"]))
        self.b2 = nn.Parameter(torch.zeros(d))
        self.drop = nn.Dropout(cfg["dropout"])

    def forward(self, x, record=None):
        x = x + self.drop(self.attn(self.ln1(x), record))
        return x + self.drop(F.gelu(self.ln2(x) @ self.w1 + self.b1, approximate="tanh") @ self.w2 + self.b2)


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Parameter(torch.randn(cfg["vocab"], cfg["d_model"]) / math.sqrt(cfg["d_model"]))
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(cfg["d_model"], eps=LN_EPS)
        self.drop = nn.Dropout(cfg["dropout"])

    def forward(self, tokens, record_layer=None, record=None):
        """tokens (B, T) → logits (B, T, vocab); `record` gets layer `record_layer`'s q, k, v, weights."""
        x = self.embed[tokens] * math.sqrt(self.cfg["d_model"])
        if self.cfg["method"] == "absolute":
            x = x + sinusoid(tokens.shape[1], self.cfg["d_model"]).to(x.device)
        x = self.drop(x)
        for i, layer in enumerate(self.layers):
            x = layer(x, record if i == record_layer else None)
        return self.ln_f(x) @ self.embed.T

    def tensors(self):
        """The weights under relattn's names (crates/relattn/src/trained/transformer/): every array (in, out)."""
        out = {"embed": self.embed, "ln_f.weight": self.ln_f.weight, "ln_f.bias": self.ln_f.bias}
        for i, layer in enumerate(self.layers):
            p = f"layers.{i}."
            out.update({p + "ln1.weight": layer.ln1.weight, p + "ln1.bias": layer.ln1.bias,
                        p + "ln2.weight": layer.ln2.weight, p + "ln2.bias": layer.ln2.bias,
                        p + "ffn.w1": layer.w1, p + "ffn.b1": layer.b1, p + "ffn.w2": layer.w2, p + "ffn.b2": layer.b2})
            for n in ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o", "rel_k", "rel_v", "e_r", "t5_bias"):
                if hasattr(layer.attn, n):
                    out[p + "attn." + n] = getattr(layer.attn, n)
        return {k: v.detach().contiguous().float().cpu() for k, v in out.items()}
