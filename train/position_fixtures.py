"""Fixtures for the position schemes from the reference implementations people trust (offline, like train/).

Writes tests/fixtures/positions.json, which tests/positions.rs checks relattn against to 1e-5:
- T5's buckets: Hugging Face transformers' T5Attention._relative_position_bucket, both directions, several
  (num_buckets, max_distance), every distance in -600..600;
- ALiBi's slopes: BLOOM's build_alibi_tensor (transformers), 1 to 64 heads (powers of two and not);
- RoPE: Llama's rotary embedding and apply_rotary_pos_emb (half-split; base 10000 and 500000; linear scaling),
  GPT-NeoX's (half-split, partial rotary_pct) and GPT-J's (interleaved, partial rotary_dim), on fixed
  random q of 24 positions.

Run with the training environment: train/.venv/bin/python train/position_fixtures.py (make fixtures).
"""

import json
import pathlib

import numpy as np
import torch
import transformers
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.gpt_neox import modeling_gpt_neox as neox
from transformers.models.gptj import modeling_gptj as gptj
from transformers.models.llama import modeling_llama as llama
from transformers.models.t5.modeling_t5 import T5Attention

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "positions.json"
N = 24


def t5_cases():
    d = torch.arange(-600, 601)
    cases = []
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (16, 40), (8, 20), (64, 256), (6, 9)):
            b = T5Attention._relative_position_bucket(d, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
            cases.append(dict(causal=not bidirectional, buckets=num_buckets, max_distance=max_distance, distances=d.tolist(), bucket=b.tolist()))
    return cases


def alibi_cases():
    cases = []
    for heads in list(range(1, 17)) + [20, 24, 32, 40, 64]:
        mask = torch.ones(1, 3)
        alibi = build_alibi_tensor(mask, heads, torch.float32)  # (heads, 1, 3): slope · key position
        cases.append(dict(heads=heads, slopes=alibi[:, 0, 1].tolist()))
    return cases


def rope_cases():
    rng = np.random.default_rng(7)
    cases = []
    positions = torch.arange(N)[None, :]

    def llama_case(d_head, base, scale):
        params = {"rope_type": "default", "rope_theta": base} if scale == 1.0 else {"rope_type": "linear", "factor": scale, "rope_theta": base}
        config = llama.LlamaConfig(hidden_size=d_head * 2, num_attention_heads=2, head_dim=d_head, rope_parameters=params)
        x = torch.tensor(rng.standard_normal((1, 1, N, d_head)), dtype=torch.float32)
        cos, sin = llama.LlamaRotaryEmbedding(config)(x, positions)
        rotated, _ = llama.apply_rotary_pos_emb(x, x, cos, sin)
        return dict(source=f"llama base {base} scale {scale}", layout="half", base=base, fraction=1.0, scale=scale, x=x[0, 0].tolist(), rotated=rotated[0, 0].tolist())

    def neox_case(d_head, pct):
        config = neox.GPTNeoXConfig(hidden_size=d_head * 2, num_attention_heads=2, rotary_pct=pct)
        x = torch.tensor(rng.standard_normal((1, 1, N, d_head)), dtype=torch.float32)
        cos, sin = neox.GPTNeoXRotaryEmbedding(config)(x, positions)
        rotated, _ = neox.apply_rotary_pos_emb(x, x, cos, sin)
        return dict(source=f"gpt-neox rotary_pct {pct}", layout="half", base=10000.0, fraction=pct, scale=1.0, x=x[0, 0].tolist(), rotated=rotated[0, 0].tolist())

    def gptj_case(d_head, rotary_dim):
        x = torch.tensor(rng.standard_normal((1, N, 1, d_head)), dtype=torch.float32)  # GPT-J: (b, n, heads, d)
        sincos = gptj.create_sinusoidal_positions(N, rotary_dim)[positions]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        rot = gptj.apply_rotary_pos_emb(x[..., :rotary_dim], sin, cos)
        rotated = torch.cat([rot, x[..., rotary_dim:]], dim=-1)
        return dict(source=f"gpt-j rotary_dim {rotary_dim}", layout="interleaved", base=10000.0, fraction=rotary_dim / d_head, scale=1.0, x=x[0, :, 0].tolist(), rotated=rotated[0, :, 0].tolist())

    cases.append(llama_case(16, 10000.0, 1.0))
    cases.append(llama_case(32, 500000.0, 1.0))
    cases.append(llama_case(16, 10000.0, 4.0))
    cases.append(neox_case(32, 0.25))
    cases.append(gptj_case(16, 16))
    cases.append(gptj_case(32, 8))
    return cases


def main():
    fixtures = dict(transformers=transformers.__version__, torch=torch.__version__, t5=t5_cases(), alibi=alibi_cases(), rope=rope_cases())
    OUT.write_text(json.dumps(fixtures, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
