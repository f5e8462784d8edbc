"""Writes a capture of each of today's families (#49) for tests/e2e/captures.test.mjs: the tiny random models of
python/tests/test_capture.py (nothing downloaded), layer 1 of each saved as the page opens it (<name>.npz), and
what the model itself computed for that layer (expected.json: each family's attention probabilities of batch 0,
head 1, the last query's row, and the stages its capture has beside every layer's).

    target/pyvenv/bin/python tests/e2e/captures.py <directory>
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))

from test_capture import decoder, modernbert  # noqa: E402  (the families' tiny models, as pytest builds them)

#: Each new family of #49 and the stage its layer adds (None: its stages are RoPE's).
FAMILIES = {"qwen3": None, "qwen3_moe": None, "gemma2": None, "gemma3": None, "gemma3-bidirectional": None, "olmo2": None, "phi3": None,
            "gpt_oss": "sink_share", "llama4": None, "llama4-chunked": None, "llama4-nope": None, "modernbert": None, "deepseek_v3": None, "deepseek_v2-lite": None}


def main(out):
    expected = {}
    for name, stage in FAMILIES.items():
        _, cap, probabilities, _ = modernbert(1) if name == "modernbert" else decoder(name)
        cap.save(os.path.join(out, f"{name}.npz"))
        n = probabilities.shape[-1]
        expected[name] = {"title": cap.title(), "family": cap.family, "row": probabilities[0, 1, n - 1].tolist(), "stage": stage,
                          "window": cap.options.get("window"), "chunk": cap.options.get("chunk")}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
