"""A Llama-sized layer captured and shown: d_model 4096, 32 heads, 8 K/V heads, n 2048, on this machine's cores.

Builds a one-layer Llama from a config (random weights, a small MLP and vocabulary: only the attention is
Llama-sized; nothing downloaded), captures its layer 0 with relattn.capture, holds it on demand and computes one
head's attention weights, timing each step and reading the process's peak RSS after each. Also runs the
module's own eager forward on the same input (its (32, 2048, 2048) probabilities included) for the memory and
time a whole-trace approach costs, and checks relattn's head against it.

    target/pyvenv/bin/python bench/capture_llama.py [--n 2048] [--threads 2]
"""

import argparse
import resource
import time

import numpy as np
import torch
import transformers

import relattn


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, intermediate_size=256, num_hidden_layers=1,
                                      vocab_size=256, max_position_embeddings=8192, rope_parameters={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 1024, "rope_theta": 500000.0},
                                      attn_implementation="eager", initializer_range=0.05)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 256, (1, args.n))
    rows = [("model built (weights in memory)", 0.0, peak_mib())]

    t = time.perf_counter()
    cap = relattn.capture(model, 0, input_ids=ids)
    rows.append(("relattn.capture (the forward up to the layer's input)", time.perf_counter() - t, peak_mib()))
    t = time.perf_counter()
    held = cap.on_demand()
    rows.append(("capture.on_demand() (relattn's fused forward of the layer)", time.perf_counter() - t, peak_mib()))
    t = time.perf_counter()
    w = held.stage("weights", 0, 5)
    rows.append(("capture.stage('weights', head=5) ((n, n) of one head)", time.perf_counter() - t, peak_mib()))
    t = time.perf_counter()
    held.stage("rotated_q", 0, 5)
    rows.append(("capture.stage('rotated_q', head=5)", time.perf_counter() - t, peak_mib()))

    seen = {}
    attn = model.model.layers[0].self_attn
    hook = attn.register_forward_hook(lambda m, a, out: seen.update(p=out[1][0, 5].numpy()))
    t = time.perf_counter()
    with torch.no_grad():
        model(input_ids=ids, output_attentions=True)
    hook.remove()
    rows.append(("the model's eager forward with output_attentions (every head's (n, n))", time.perf_counter() - t, peak_mib()))
    err = float(np.abs(w - seen["p"]).max())

    print(f"Llama-sized layer: d_model 4096, 32 heads, 8 K/V heads, llama3 rotary, n {args.n}, {args.threads} threads")
    print("| step | seconds | process peak RSS (MiB) |\n|---|---:|---:|")
    for name, s, mib in rows:
        print(f"| {name} | {s:.2f} | {mib:.0f} |")
    print(f"head 5's weights: max |relattn − model| = {err:.1e}")


if __name__ == "__main__":
    main()
