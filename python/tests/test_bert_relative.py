"""BERT's relative positions (method bert_relative) against Hugging Face's own ``BertSelfAttention``.

transformers 5 removed ``position_embedding_type="relative_key"`` and ``"relative_key_query"`` (its BertSelfAttention
has no ``distance_embedding``): the module is transformers 4.57's, installed apart in target/hf4 (``make test-python``:
transformers, huggingface_hub and tokenizers of that release, nothing else) and run in a subprocess with that folder
first on its path, beside the torch of the tests' environment. Tiny random layers, both types, attention peaked by
large weights, a padded key; relattn's probabilities and context (the heads before any output projection) within
1e-5, and negative controls (the distance table turned around, the other type) that must miss.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relattn

HF4 = Path(__file__).resolve().parents[2] / "target" / "hf4"

# Run by the subprocess under transformers 4.x: one BertSelfAttention per type, its weights and results to an .npz.
MODULE = r"""
import sys
import numpy as np
import torch
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfAttention

kind, n, width, heads, p, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
torch.manual_seed(7)
config = BertConfig(hidden_size=width, num_attention_heads=heads, max_position_embeddings=p, position_embedding_type=kind,
                    attention_probs_dropout_prob=0.0)
module = BertSelfAttention(config, position_embedding_type=kind).eval()
assert module.distance_embedding.weight.shape == (2 * p - 1, width // heads)
with torch.no_grad():
    for weight in module.parameters():
        weight.normal_(0.0, 0.6)  # large weights: peaked attention
x = torch.randn(2, n, width)
keep = torch.ones(2, n)
keep[1, -2:] = 0  # the second sequence's last two keys are padding
additive = (1.0 - keep)[:, None, None, :] * torch.finfo(torch.float32).min  # BertModel's extended mask
with torch.no_grad():
    context, probabilities = module(x, attention_mask=additive)
t = lambda a: a.detach().numpy()
np.savez(out, x=t(x), key_mask=t(keep), w_q=t(module.query.weight.T), b_q=t(module.query.bias), w_k=t(module.key.weight.T),
         b_k=t(module.key.bias), w_v=t(module.value.weight.T), b_v=t(module.value.bias),
         distance_embedding=t(module.distance_embedding.weight), probabilities=t(probabilities), context=t(context))
"""

# Run by the subprocess under transformers 4.x: relattn.capture of a tiny BertModel's layer 1 against the model's own
# probabilities (output_attentions, eager) and the attention's dense output; prints what it measured as JSON.
CAPTURE = r"""
import json, sys
import numpy as np
import torch
import transformers
import relattn

kind = sys.argv[1]
torch.manual_seed(3)
config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=48,
                                 max_position_embeddings=10, position_embedding_type=kind, initializer_range=0.3, attn_implementation="eager")
model = transformers.BertModel(config).eval()
ids = torch.randint(1, 50, (2, 10), generator=torch.Generator().manual_seed(0))
mask = torch.ones(2, 10, dtype=torch.long)
mask[1, 7:] = 0
cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
seen = {}
attention = model.encoder.layer[1].attention
hook = attention.self.register_forward_hook(lambda m, a, out: seen.update(context=out[0]))
with torch.no_grad():
    outputs = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    dense = attention.output.dense(seen["context"]).numpy()
hook.remove()
probabilities = outputs.attentions[1].numpy()
t = cap.trace()
keep = mask.numpy().astype(bool)
weights = max(float(np.abs(t["weights"][b][..., keep[b]] - probabilities[b][..., keep[b]]).max()) for b in range(2))
table = np.asarray(attention.self.distance_embedding.weight.detach())
turned = relattn.trace(**dict(cap.arrays, distance_embedding=table[::-1].copy()), **cap.options)
try:
    relattn.capture(model, 1, input_ids=torch.ones(1, 11, dtype=torch.long))
    too_long = None
except relattn.RelattnError as e:
    too_long = e.field
print(json.dumps({"options": cap.options, "weights": weights, "output": float(np.abs(t["output"] - dense).max()),
                  "attention": float(np.abs(cap.attention() - dense).max()), "peak": float(probabilities.max(-1).mean()),
                  "turned": float(np.abs(turned["output"] - dense).max()), "notes": cap.notes, "too_long": too_long}))
"""

TYPES = {"relative_key": "key", "relative_key_query": "key_query"}


def hf4(script, *args):
    """Runs `script` with transformers 4.x (target/hf4) first on the path; its standard output."""
    assert (HF4 / "transformers").is_dir(), f"{HF4} holds no transformers 4.x: make test-python installs it"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HF4), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def relattn_of(module, **options):
    """relattn's probabilities (b, h, n, n) and heads (b, n, h·d_head) on the module's weights and input."""
    arrays = {k: module[k] for k in ("x", "key_mask", "w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "distance_embedding")}
    arrays.update(options.pop("arrays", {}))
    t = relattn.trace(**arrays, method="bert_relative", **options)
    return t["weights"], t["heads"]


@pytest.mark.parametrize("kind", TYPES)
def test_bert_self_attention_of_transformers_4(tmp_path, kind):
    n, width, heads, p = 9, 16, 2, 12
    out = tmp_path / "module.npz"
    hf4(MODULE, kind, n, width, heads, p, out)
    module = dict(np.load(out))
    probabilities, context = module["probabilities"], module["context"]
    # Peaked: most rows give one key more than half their weight.
    assert (probabilities.max(-1) > 0.5).mean() > 0.5, probabilities.max(-1)
    options = dict(heads=heads, max_position=p, bert_terms=TYPES[kind])
    weights, got = relattn_of(module, **options)
    keep = module["key_mask"].astype(bool)
    for b in range(2):
        np.testing.assert_allclose(weights[b][..., keep[b]], probabilities[b][..., keep[b]], atol=1e-5, rtol=0)
    assert np.abs(weights[1][..., ~keep[1]]).max() == 0 and probabilities[1][..., ~keep[1]].max() < 1e-30
    np.testing.assert_allclose(got, context, atol=1e-5, rtol=0)
    # Negative controls: the table read the other way (Shaw's direction j − i), the other type.
    turned = module["distance_embedding"][::-1].copy()
    for control in (dict(options, arrays={"distance_embedding": turned}), dict(options, bert_terms="key_query" if kind == "relative_key" else "key")):
        weights, got = relattn_of(module, **control)
        assert np.abs(weights - probabilities).max() > 1e-2 and np.abs(got - context).max() > 1e-2, control.get("bert_terms")


def test_a_sequence_past_max_position_is_refused_by_name():
    with pytest.raises(relattn.RelattnError) as e:
        relattn.trace(method="bert_relative", n=13, d_model=8, heads=2, max_position=12)
    assert e.value.field == "max_position" and "at least the 13 positions" in str(e.value)


@pytest.mark.parametrize("kind", TYPES)
def test_capture_of_a_bert_with_relative_positions(kind):
    """relattn.capture of a transformers 4.x BertModel with relative_key or relative_key_query: options, weights and
    output equal to the model's within 1e-5; its table turned around (the negative control) misses; 11 tokens past
    max_position_embeddings 10 refused naming input_ids."""
    got = json.loads(hf4(CAPTURE, kind))
    assert got["options"]["method"] == "bert_relative" and got["options"]["bert_terms"] == TYPES[kind]
    assert got["options"]["max_position"] == 10 and got["options"]["causal"] is False
    assert got["peak"] > 0.4, got
    assert got["weights"] <= 1e-5 and got["output"] <= 1e-5 and got["attention"] <= 1e-5, got
    assert got["turned"] > 1e-2, got
    assert got["too_long"] == "input_ids"
    assert any("distance_embedding" in n for n in got["notes"])


def test_transformers_5_without_distance_embedding_is_refused_by_name():
    """transformers 5 keeps position_embedding_type in BertConfig but its BertSelfAttention has no distance_embedding:
    the capture refuses such a model naming it, rather than capturing a layer the model does not compute."""
    import torch
    import transformers

    config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=48,
                                     max_position_embeddings=10, position_embedding_type="relative_key", attn_implementation="eager")
    model = transformers.BertModel(config).eval()
    if hasattr(model.encoder.layer[1].attention.self, "distance_embedding"):
        pytest.skip(f"transformers {transformers.__version__} computes relative_key itself (the subprocess tests cover it)")
    with pytest.raises(relattn.RelattnError) as e:
        relattn.capture(model, 1, input_ids=torch.ones(1, 5, dtype=torch.long))
    assert e.value.field == "model" and "distance_embedding" in str(e.value)
