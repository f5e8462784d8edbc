"""Writes tests/fixtures/atlas-tiny-llama.atlas.npz: relattn.atlas of a tiny Llama with random weights (4 layers,
8 query heads over 2 K/V heads, d_model 64) over three short English prompts (a word-level vocabulary of its
own), layers 1 and 2 held whole. The page's and the command line's tests open it; python/tests/test_atlas.py
checks that relattn.atlas still writes what it holds. Run from the repository root with the test environment:
target/pyvenv/bin/python python/tests/make_atlas_fixture.py
"""

import pathlib

import torch
import transformers

import relattn

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "atlas-tiny-llama.atlas.npz"
WORDS = ("<s> the a cat dog sat on mat and ran to house big small red blue it was in of then saw bird tree under over "
         "near far quick slow day night").split()
PROMPTS = ("<s> the cat sat on the mat and the dog sat on the red mat",
           "<s> a big dog ran to the house then it saw a bird in the tree",
           "<s> the quick red bird was near the small tree in the day and far in the night")


class Words:
    """A word-level tokenizer of WORDS: what relattn.atlas asks of a tokenizer."""

    def __call__(self, text, return_tensors="pt"):
        ids = torch.tensor([[WORDS.index(w) for w in text.split()]])
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def convert_ids_to_tokens(self, ids):
        return [WORDS[i] for i in ids]


def model():
    """The tiny Llama, seeded; wide weights (std 0.3) so that its heads differ."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(WORDS), hidden_size=64, intermediate_size=96, num_attention_heads=8, num_key_value_heads=2,
                                      num_hidden_layers=4, initializer_range=0.3, attn_implementation="eager", name_or_path="tiny-llama")
    return transformers.LlamaForCausalLM(config).eval()


def atlas():
    return relattn.atlas(model(), list(PROMPTS), tokenizer=Words(), layers=[1, 2], induction_length=32)


if __name__ == "__main__":
    print(atlas().save(OUT))
