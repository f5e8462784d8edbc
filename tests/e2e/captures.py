"""Writes a capture of each of today's families (#49) and of relative attention's own (#50) for
tests/e2e/captures.test.mjs: the tiny random models of python/tests/test_capture.py (nothing downloaded), layer 1 of
each saved as the page opens it (<name>.npz), and what the model itself computed for that layer (expected.json: each
family's attention probabilities of batch 0, head 1, the last query's row, and the stages its capture has beside
every layer's).

    target/pyvenv/bin/python tests/e2e/captures.py <directory>
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))

from test_bert_relative import hf4  # noqa: E402
from test_capture import deberta, decoder, modernbert, xlnet  # noqa: E402  (the families' tiny models, as pytest builds them)

#: Each new family of #49 and #50 and the stage its layer adds (None: its stages are RoPE's).
FAMILIES = {"qwen3": None, "qwen3_moe": None, "gemma2": None, "gemma3": None, "gemma3-bidirectional": None, "olmo2": None, "phi3": None,
            "gpt_oss": "sink_share", "llama4": None, "llama4-chunked": None, "llama4-nope": None, "modernbert": None, "deepseek_v3": None, "deepseek_v2-lite": None,
            "deberta-v3": "p2c", "xlnet": "bd", "bert-relative_key": "c2p", "bert-relative_key_query": "p2c"}

#: The families built by their own helper of test_capture.py (the rest by decoder()).
BUILDERS = {"modernbert": lambda: modernbert(1), "deberta-v3": lambda: deberta("v3-buckets-shared"), "xlnet": lambda: xlnet("bi")}

# BERT's relative positions need transformers 4.x (target/hf4, python/tests/test_bert_relative.py): a tiny BertModel of
# the type given captured in a subprocess, its capture saved to the path given, the model's own probabilities (batch 0,
# head 1, the last query's row) and the capture's title and options printed as JSON.
BERT = r"""
import json, sys
import torch
import transformers
import relattn

kind, path = sys.argv[1], sys.argv[2]
torch.manual_seed(3)
config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=48,
                                 max_position_embeddings=16, position_embedding_type=kind, initializer_range=0.3, attn_implementation="eager")
model = transformers.BertModel(config).eval()
ids = torch.randint(1, 50, (1, 12), generator=torch.Generator().manual_seed(0))
cap = relattn.capture(model, 1, input_ids=ids)
cap.save(path)
with torch.no_grad():
    probabilities = model(input_ids=ids, output_attentions=True).attentions[1]
print(json.dumps({"title": cap.title(), "family": cap.family, "row": probabilities[0, 1, -1].tolist(), "options": cap.options}))
"""


def main(out):
    expected = {}
    for name, stage in FAMILIES.items():
        path = os.path.join(out, f"{name}.npz")
        if name.startswith("bert-"):
            got = json.loads(hf4(BERT, name[len("bert-"):], path))
            expected[name] = {"title": got["title"], "family": got["family"], "row": got["row"], "stage": stage, "window": None, "chunk": None}
            continue
        _, cap, probabilities, _ = BUILDERS[name]() if name in BUILDERS else decoder(name)
        cap.save(path)
        n = probabilities.shape[-1]
        expected[name] = {"title": cap.title(), "family": cap.family, "row": probabilities[0, 1, n - 1].tolist(), "stage": stage,
                          "window": cap.options.get("window"), "chunk": cap.options.get("chunk")}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
