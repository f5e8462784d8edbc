"""The head atlas at scale (#48 item 4): relattn.atlas over a Llama-3.2-1B-shaped model with random weights (16
layers, 32 query heads over 8 K/V heads, d_model 2048, d_ff 8192, vocabulary 128256) and 8 prompts of 512
random tokens, beside the model's own eager forward with output_attentions=True over the same prompts (what a
viewer built on output_attentions needs first) and beside its forward alone (the floor: the atlas runs it too),
each side in a fresh process that builds the same seeded model,
the sides interleaved, best of each kept. Memory: the peak resident size (VmHWM) less the resident size once
the model is built. Prints a Markdown table for docs/src/benchmarks.md.

    target/pyvenv/bin/python bench/atlas_bench.py [--rounds 2] [--prompts 8] [--n 512] [--layers 16]

relattn must be installed with a release build of its extension (make wheel, then pip install the wheel).
"""

import argparse
import json
import platform
import subprocess
import sys
import time


#: relattn.atlas; the model's eager forward with output_attentions=True; the same forward without them (the floor).
SIDES = ("atlas", "eager", "forward")


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def side(which, prompts, n, layers):
    """One side in this process: build the model, run it, print {seconds, beyond_weights_bytes}."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=8,
                                      num_hidden_layers=layers, max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
                                      attn_implementation="eager", name_or_path="llama-3.2-1b-shaped (random)")
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, config.vocab_size, (prompts, n), generator=torch.Generator().manual_seed(1))
    with open("/proc/self/clear_refs", "w") as f:  # the peak resident size starts again from here
        f.write("5")
    weights = status("VmRSS")
    start = time.perf_counter()
    if which == "atlas":
        import relattn

        relattn.atlas(model, ids)
    else:
        with torch.no_grad():
            for p in range(prompts):
                model.model(input_ids=ids[p:p + 1], output_attentions=which == "eager")
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "beyond_weights": status("VmHWM") - weights, "threads": torch.get_num_threads()}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--side", choices=SIDES)
    a = ap.parse_args()
    if a.side:
        side(a.side, a.prompts, a.n, a.layers)
        return
    best = {}
    for r in range(a.rounds):
        for which in SIDES:
            out = subprocess.run([sys.executable, __file__, "--side", which, "--prompts", str(a.prompts), "--n", str(a.n), "--layers", str(a.layers)],
                                 check=True, capture_output=True, text=True)
            got = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"round {r} {which}: {got['seconds']:.1f} s, {got['beyond_weights'] / 2**20:.0f} MiB beyond the weights", file=sys.stderr)
            if which not in best or got["seconds"] < best[which]["seconds"]:
                best[which] = got
    cpu = platform.processor() or platform.machine()
    print(f"| {a.layers} layers × 32 heads (8 K/V), d_model 2048; {a.prompts} prompts × {a.n} tokens | relattn.atlas | "
          f"{best['atlas']['seconds']:.1f} s | {best['atlas']['beyond_weights'] / 2**20:.0f} MiB |")
    print(f"| same, the model's eager forward with output_attentions=True | transformers | {best['eager']['seconds']:.1f} s | "
          f"{best['eager']['beyond_weights'] / 2**20:.0f} MiB |")
    print(f"| same, the model's forward alone (no attentions returned) | transformers | {best['forward']['seconds']:.1f} s | "
          f"{best['forward']['beyond_weights'] / 2**20:.0f} MiB |")
    print(f"ratio atlas / eager: {best['atlas']['seconds'] / best['eager']['seconds']:.2f}, atlas / forward: "
          f"{best['atlas']['seconds'] / best['forward']['seconds']:.2f} ({best['atlas']['threads']} threads, {cpu})", file=sys.stderr)


if __name__ == "__main__":
    main()
