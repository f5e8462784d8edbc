"""The figures of "Does the music hold together?" (docs/src/models.md) for Bach's test chorales and every shipped model at
the sampler's settings, each from `relattn model stats` (src/trained/music_stats.rs defines them), written to
models/music_figures.json and printed as docs/src/models.md's table. Needs relattn's release binary (`cargo build
--release`), not torch.

    python3 train/music_figures.py [--samples 16] [--length 512]
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "target", "release", "relattn")
METHODS = ("music", "shaw", "rope", "alibi", "t5", "absolute")
# (label, extra options): the default (a nucleus of 0.9), no truncation, a wider nucleus and a lower temperature.
SETTINGS = (("top-p 0.9 (the default)", []), ("no truncation", ["--top-p", "1"]), ("top-p 0.95", ["--top-p", "0.95"]),
            ("temperature 0.8", ["--temperature", "0.8"]))


def stats(args):
    out = subprocess.run([CLI, "model", "stats", "--json", *args], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def row(label, s):
    soprano = next(v for v in s["voices"] if v["voice"] == "soprano")
    parallels = s["parallel_fifths_per_100_changes"] + s["parallel_octaves_per_100_changes"]
    return (f"| {label} | {s['crossings_per_step']:.3f} | {parallels:.2f} | {s['key_fraction']:.3f} | "
            f"{s['chord_changes_per_step']:.3f} | {soprano['mean']:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--length", type=int, default=512)
    a = ap.parse_args()
    figures = {"bach": stats([]), "samples": a.samples, "length": a.length, "models": {}}
    rows = [row("Bach (the 34 test chorales)", figures["bach"])]
    for m in METHODS:
        path = os.path.join(ROOT, "models", f"chorales-{m}.safetensors")
        if not os.path.exists(path):
            continue
        figures["models"][m] = {}
        for label, extra in SETTINGS:
            s = stats(["--model", path, "--samples", str(a.samples), "--length", str(a.length), *extra])
            figures["models"][m][label] = s
            rows.append(row(f"{m}, {label}", s))
    with open(os.path.join(ROOT, "models", "music_figures.json"), "w") as f:
        json.dump(figures, f, indent=1)
    print("| | crossings / step | parallel 5ths + 8ves / 100 changes | key fraction | chord changes / step | soprano mean |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
