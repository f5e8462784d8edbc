"""Writes python/tests/fixtures/seed003.npz: the seed notebook's RelationAwareMultiHeadAttention
(../shared/seeds/003_*.txt, its classes as written there), small, with its parameters, an input, a key mask
and the module's own output, so that the tests check relattn.from_seed_module against the module without
needing torch. Offline, like train/: train/.venv/bin/python python/tests/make_seed_fixture.py
"""

import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "seed003.npz"


class RelativePosition(nn.Module):
    def __init__(self, d_a, k):
        super().__init__()
        self.d_a = d_a
        self.k = k
        self.position_embeddings = nn.Parameter(torch.empty((2 * k + 1, d_a)))
        nn.init.xavier_uniform_(self.position_embeddings)

    def forward(self, length_query, length_key):
        indices_query = torch.arange(length_query)
        indices_key = torch.arange(length_key)
        distance_matrix = indices_key.unsqueeze(0) - indices_query.unsqueeze(1)
        distance_matrix_clipped = torch.clamp(distance_matrix, -self.k, self.k)
        final_matrix = distance_matrix_clipped + self.k
        return self.position_embeddings[final_matrix.to(torch.long)]


class RelationAwareAttentionHead(nn.Module):
    def __init__(self, hidden_size, head_dim, k_bias_matrix, v_bias_matrix):
        super().__init__()
        self.head_dim = head_dim
        self.query_weights = nn.Linear(hidden_size, head_dim)
        self.key_weights = nn.Linear(hidden_size, head_dim)
        self.value_weights = nn.Linear(hidden_size, head_dim)
        self.k_bias_matrix = k_bias_matrix
        self.v_bias_matrix = v_bias_matrix

    def forward(self, query, key, value, mask=None):
        query = self.query_weights(query)
        key = self.key_weights(key)
        value = self.value_weights(value)
        attn_1 = torch.matmul(query, key.transpose(1, 2))
        attn_2 = torch.matmul(query.permute(1, 0, 2), self.k_bias_matrix.transpose(1, 2)).transpose(0, 1)
        att_scores = (attn_1 + attn_2) / self.head_dim ** 0.5
        if mask is not None:
            mask = mask.to(torch.int)
            att_scores = att_scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        att_weights = F.softmax(att_scores, dim=-1)
        values_1 = torch.matmul(att_weights, value)
        values_2 = torch.matmul(att_weights.permute(1, 0, 2), self.v_bias_matrix).transpose(0, 1)
        return values_1 + values_2


class RelationAwareMultiHeadAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, k, seq_len):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.relative_position_k = RelativePosition(self.head_dim, k)
        self.relative_position_v = RelativePosition(self.head_dim, k)
        self.k_bias_matrix = self.relative_position_k(seq_len, seq_len)
        self.v_bias_matrix = self.relative_position_v(seq_len, seq_len)
        self.attention_heads = nn.ModuleList([RelationAwareAttentionHead(self.hidden_size, self.head_dim, self.k_bias_matrix, self.v_bias_matrix)
                                              for _ in range(self.num_heads)])
        self.fc = nn.Linear(hidden_size, hidden_size)

    def forward(self, query, key, value, mask=None):
        outputs = [head(query, key, value, mask=mask) for head in self.attention_heads]
        return self.fc(torch.cat(outputs, dim=-1))


def main():
    torch.manual_seed(42)
    hidden, heads, k, n, batch = 32, 4, 3, 9, 2
    module = RelationAwareMultiHeadAttention(hidden, heads, k, n)
    x = torch.randn(batch, n, hidden)
    mask = torch.ones(batch, n)
    mask[1, -2:] = 0  # the second sequence ends with two padding keys
    with torch.no_grad():
        out = module(x, x, x, mask)
    arrays = {f"param.{name}": p.detach().numpy() for name, p in module.named_parameters()}
    arrays.update(x=x.numpy(), mask=mask.numpy(), output=out.numpy(), config=np.array([hidden, heads, k, n]))
    np.savez(OUT, **arrays)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
