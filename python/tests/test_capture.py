"""relattn.capture against the models themselves: for every family, on tiny models built from configs with random
weights (nothing downloaded), relattn's weights equal the attention module's own probabilities (eager
attention, output_attentions=True) within 1e-5 and its output the module's output."""

import numpy as np
import pytest

import relattn

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import test_xlnet  # noqa: E402  (its run() records XLNet's rel_attn_core; after the skips: it imports torch)

TOL = 1e-5
VOCAB, N = 64, 9


def inputs(seed=0, batch=2, n=N, pad=3):
    """Token ids (batch, n) and a mask whose second sequence ends in `pad` padding tokens (right padding)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, n), generator=g)
    mask = torch.ones(batch, n, dtype=torch.long)
    if batch > 1 and pad:
        mask[1, n - pad:] = 0
    return ids, mask


def build(cls, seed=0, **config):
    """A model of `cls` (a transformers model class) from its config with random weights, eager attention. The
    weights are drawn wider than a model's initialisation (std 0.3, or T5's factor 3) so that the attention is
    far from uniform and a wrong step shows (a swapped rotary layout moves some weight by 0.7 or more)."""
    torch.manual_seed(seed)
    config_class = cls.config_class
    wide = {"initializer_factor": 3.0} if "T5" in cls.__name__ else {"initializer_range": 0.3}
    model = cls(config_class(**wide, **config, attn_implementation="eager"))
    return model.eval()


def module_io(model, module, run):
    """The attention module's (args, kwargs) and output when `run()` calls the model."""
    seen = {}
    pre = module.register_forward_pre_hook(lambda m, a, k: seen.update(args=a, kwargs=k), with_kwargs=True)
    post = module.register_forward_hook(lambda m, a, out: seen.update(out=out[0] if isinstance(out, tuple) else out))
    try:
        with torch.no_grad():
            outputs = run()
    finally:
        pre.remove()
        post.remove()
    return seen, outputs


def rel(got, want):
    """max |got − want| / max(1, max |want|)."""
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)) / max(1.0, float(np.max(np.abs(want)))))


def check(cap, probabilities, output):
    """The capture's trace against the module's probabilities (b, h, n, n) and output (b, n, d_model); the
    attention is far from uniform (some query puts more than half its weight on one key it shares with others)."""
    t = cap.trace()
    assert float(probabilities[:, :, 2:].max()) > 0.5
    assert t["weights"].shape == tuple(probabilities.shape)
    assert rel(t["weights"], probabilities.numpy()) <= TOL, rel(t["weights"], probabilities.numpy())
    assert rel(t["output"], output.numpy()) <= TOL, rel(t["output"], output.numpy())
    assert rel(cap.attention(), output.numpy()) <= TOL


DECODERS = {
    "llama": dict(cls="LlamaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2),
    "llama-mha": dict(cls="LlamaModel", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=4),
    "llama-linear": dict(cls="LlamaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=1,
                         rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}),
    "llama-dynamic": dict(cls="LlamaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=4, rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}),
    "llama-yarn": dict(cls="LlamaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=32, rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0}),
    "llama3": dict(cls="LlamaForCausalLM", hidden_size=64, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                   rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 8, "rope_theta": 500000.0}),
    "mistral": dict(cls="MistralForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, sliding_window=None),
    "qwen2": dict(cls="Qwen2ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2),
    "gemma": dict(cls="GemmaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=1, head_dim=8),
    # Today's models (#49): heads wider than hidden / heads, q/k norms, windows, soft-capping, a scale of their own, sinks.
    "llama-wide-heads": dict(cls="LlamaForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16),
    "mistral-window": dict(cls="MistralForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, sliding_window=4),
    "qwen3": dict(cls="Qwen3ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16),
    "qwen3-window": dict(cls="Qwen3ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                         use_sliding_window=True, sliding_window=4, layer_types=["full_attention", "sliding_attention"]),
    "qwen3_moe": dict(cls="Qwen3MoeForCausalLM", hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8),
    "gemma2": dict(cls="Gemma2ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   query_pre_attn_scalar=24, attn_logit_softcapping=4.0, sliding_window=4, layer_types=["full_attention", "sliding_attention"]),
    "gemma3": dict(cls="Gemma3ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   query_pre_attn_scalar=12, sliding_window=5, layer_types=["full_attention", "sliding_attention"]),
    # EmbeddingGemma's layers: bidirectional, the sliding ones a window of |j − i| < 6 // 2 + 1 = 4 (the config halves it; every padded
    # query still sees a token).
    "gemma3-bidirectional": dict(cls="Gemma3ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                 query_pre_attn_scalar=12, sliding_window=6, use_bidirectional_attention=True, layer_types=["full_attention", "sliding_attention"]),
    "olmo2": dict(cls="Olmo2ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2),
    "phi3": dict(cls="Phi3ForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, eos_token_id=2, bos_token_id=1,
                 sliding_window=5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
    "llama4": dict(cls="Llama4ForCausalLM", hidden_size=32, intermediate_size=48, intermediate_size_mlp=48, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=8, num_local_experts=2, no_rope_layers=[1, 1], pad_token_id=0, bos_token_id=1, eos_token_id=2),
    # Chunks of 5 (0–4, 5–8): each query sees the keys of its own chunk up to itself (every padded query still a token).
    "llama4-chunked": dict(cls="Llama4ForCausalLM", hidden_size=32, intermediate_size=48, intermediate_size_mlp=48, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=8, num_local_experts=2, no_rope_layers=[1, 1], attention_chunk_size=5, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "llama4-nope": dict(cls="Llama4ForCausalLM", hidden_size=32, intermediate_size=48, intermediate_size_mlp=48, num_attention_heads=4, num_key_value_heads=2,
                        head_dim=8, num_local_experts=2, no_rope_layers=[1, 0], pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "gpt_oss": dict(cls="GptOssForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                    num_local_experts=2, num_experts_per_tok=1, sliding_window=4, layer_types=["full_attention", "sliding_attention"]),
    "gpt_neox": dict(cls="GPTNeoXForCausalLM", hidden_size=32, intermediate_size=48, num_attention_heads=4,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
    "gptj": dict(cls="GPTJForCausalLM", n_embd=32, n_head=4, rotary_dim=4, n_positions=64),
    "bloom": dict(cls="BloomForCausalLM", hidden_size=32, n_head=4),
    "falcon-alibi": dict(cls="FalconForCausalLM", hidden_size=32, num_attention_heads=4, alibi=True, multi_query=False, parallel_attn=False, bias=True),
    "falcon-multi-query": dict(cls="FalconForCausalLM", hidden_size=32, num_attention_heads=4, alibi=False, multi_query=True, parallel_attn=True),
    "falcon-grouped": dict(cls="FalconForCausalLM", hidden_size=32, num_attention_heads=4, alibi=False, new_decoder_architecture=True, num_kv_heads=2),
    "mpt": dict(cls="MptForCausalLM", d_model=32, n_heads=4, expansion_ratio=2, max_seq_len=64, attn_config={"alibi": True, "alibi_bias_max": 8}),
    "gpt2": dict(cls="GPT2LMHeadModel", n_embd=32, n_head=4, n_positions=64),
    "opt": dict(cls="OPTForCausalLM", hidden_size=32, ffn_dim=48, num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=64,
                pad_token_id=0),
}


def decoder(name):
    """DECODERS[name]'s (or DEEPSEEK[name]'s) model, the capture of its layer 1, and that layer's probabilities and output as
    the model computes them."""
    spec = dict(DECODERS[name] if name in DECODERS else DEEPSEEK[name])
    cls = getattr(transformers, spec.pop("cls"))
    layers = {"gptj": "n_layer", "bloom": "n_layer", "gpt2": "n_layer", "mpt": "n_layers"}.get(name, "num_hidden_layers")
    model = build(cls, vocab_size=VOCAB, **{layers: 2}, **spec)
    ids, mask = inputs()
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    family = cap.family
    path = {"gpt_neox": "gpt_neox.layers.1.attention", "gptj": "transformer.h.1.attn", "bloom": "transformer.h.1.self_attention",
            "gpt2": "transformer.h.1.attn", "opt": "model.decoder.layers.1.self_attn", "falcon": "transformer.h.1.self_attention",
            "mpt": "transformer.blocks.1.attn"}.get(family)
    base = model.model if hasattr(model, "model") else model
    module = model.get_submodule(path) if path else base.layers[1].self_attn
    seen, outputs = module_io(model, module, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    output = seen["out"]
    if family == "bloom":  # BLOOM's module adds the residual to its output
        output = output - (seen["kwargs"].get("residual") if "residual" in seen["kwargs"] else seen["args"][1])
    return model, cap, outputs.attentions[1], output


@pytest.mark.parametrize("name", list(DECODERS))
def test_decoder_layers_equal_the_model(name):
    model, cap, probabilities, output = decoder(name)
    family = cap.family
    check(cap, probabilities, output)
    want = {"bloom": "alibi", "mpt": "alibi", "gpt2": "absolute", "opt": "absolute", "falcon": "alibi" if getattr(model.config, "alibi", False) else "rope"}
    assert cap.options["method"] == want.get(family, "rope")
    assert cap.arrays["x"].shape == (2, N, model.config.hidden_size)


#: A negative control for each thing today's models add: the capture with it left out must miss the model's
#: probabilities (the tiny models make each one matter), so the equality above is not the feature's absence.
LEFT_OUT = [("mistral-window", "window"), ("qwen3", "q_norm"), ("qwen3", "k_norm"), ("qwen3-window", "window"), ("qwen3_moe", "k_norm"),
            ("gemma2", "softcap"), ("gemma2", "logit_scale"), ("gemma2", "window"), ("gemma3", "q_norm"), ("gemma3", "logit_scale"), ("gemma3", "window"), ("gemma3-bidirectional", "window"), ("olmo2", "q_norm"),
            ("olmo2", "k_norm"), ("phi3", "window"), ("llama4", "q_norm"), ("llama4-chunked", "chunk"), ("gpt_oss", "sinks"), ("gpt_oss", "window")]


@pytest.mark.parametrize("name, left_out", LEFT_OUT)
def test_each_thing_todays_models_add_changes_the_weights(name, left_out):
    model, cap, probabilities, output = decoder(name)
    options = {k: v for k, v in cap.options.items() if k != left_out}
    arrays = {k: v for k, v in cap.arrays.items() if k != left_out}
    assert len(options) + len(arrays) == len(cap.options) + len(cap.arrays) - 1, f"{name} has no {left_out}"
    without = relattn.Capture(model=cap.model, family=cap.family, layer=cap.layer, part=cap.part, options=options, arrays=arrays, tokens=None,
                              notes=cap.notes)
    assert rel(without.trace()["weights"], probabilities.numpy()) > 0.02


#: DeepSeek's multi-head latent attention (tiny: heads of 4 rotary + 8 other components, values of 6, latents of 20
#: and 12): V3 with its query latent and interleaved rotary, V3 half-split with YaRN's mscale (a logit scale of its
#: own), V2 without a query latent (q_proj) and its complex freqs_cis.
_MLA = dict(hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=12,
            qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=6, n_routed_experts=2, num_experts_per_tok=1, first_k_dense_replace=1,
            n_shared_experts=1, pad_token_id=0, bos_token_id=1, eos_token_id=2)
DEEPSEEK = {
    "deepseek_v3": dict(cls="DeepseekV3ForCausalLM", q_lora_rank=20, n_group=1, topk_group=1, **_MLA),
    "deepseek_v3-half-yarn": dict(cls="DeepseekV3ForCausalLM", q_lora_rank=20, n_group=1, topk_group=1, rope_interleave=False, max_position_embeddings=32,
                                  rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0, "original_max_position_embeddings": 8,
                                                   "mscale": 1.0, "mscale_all_dim": 1.0}, **_MLA),
    "deepseek_v2-lite": dict(cls="DeepseekV2ForCausalLM", q_lora_rank=None, **_MLA),
}


@pytest.mark.parametrize("name", list(DEEPSEEK))
def test_deepseek_latent_attention_equals_the_model(name):
    model, cap, probabilities, output = decoder(name)
    check(cap, probabilities, output)
    attn = model.model.layers[1].self_attn
    # x: the latents side by side, [c_Q (or x) | c_KV | k_R]; heads of 12 query/key and 6 value components.
    r_q = attn.q_lora_rank or model.config.hidden_size
    assert cap.arrays["x"].shape == (2, N, r_q + 12 + 4)
    assert cap.arrays["w_q"].shape == (r_q + 16, 4 * 12) and cap.arrays["w_v"].shape == (r_q + 16, 4 * 6)
    assert cap.arrays["w_o"].shape == (4 * 6, 32)
    t = cap.trace()
    assert t["v"].shape == (2, N, 24) and t["output"].shape == (2, N, 32)
    # The query latent is the module's own normed projection of the layer's input.
    seen, _ = module_io(model, attn, lambda: model(input_ids=inputs()[0], attention_mask=inputs()[1]))
    hidden = seen["args"][0] if seen["args"] else seen["kwargs"]["hidden_states"]
    with torch.no_grad():
        c_q = attn.q_a_layernorm(attn.q_a_proj(hidden)) if attn.q_lora_rank else hidden
    assert rel(cap.arrays["x"][..., :r_q], c_q.numpy()) <= TOL
    assert cap.options["rope_layout"] == ("half" if name == "deepseek_v3-half-yarn" else "interleaved")
    assert ("logit_scale" in cap.options) == (name == "deepseek_v3-half-yarn")


#: DeepSeek's negative controls: the rotary key k_R left out (its rows of W_k zeroed: no position term), the other
#: rotary layout, YaRN's logit scale left out: each must miss the model's probabilities.
@pytest.mark.parametrize("name, broken", [("deepseek_v3", "no rotary key"), ("deepseek_v3", "half-split"), ("deepseek_v3-half-yarn", "logit_scale"),
                                          ("deepseek_v2-lite", "no rotary key")])
def test_deepseek_position_term_matters(name, broken):
    model, cap, probabilities, _ = decoder(name)
    options, arrays = dict(cap.options), dict(cap.arrays)
    if broken == "no rotary key":
        arrays["w_k"] = arrays["w_k"].copy()
        arrays["w_k"][-4:] = 0.0
    elif broken == "half-split":
        options["rope_layout"] = "half"
    else:
        del options["logit_scale"]
    without = relattn.Capture(model=cap.model, family=cap.family, layer=cap.layer, part=cap.part, options=options, arrays=arrays, tokens=None, notes=cap.notes)
    assert rel(without.trace()["weights"], probabilities.numpy()) > 0.02


def test_heads_of_their_own_width_are_shown_as_the_model_has_them():
    """Llama with head_dim 16 in a width of 32, Qwen3's q/k norms: the arrays as relattn reads them, the notes say so."""
    _, cap, _, _ = decoder("llama-wide-heads")
    assert cap.arrays["w_q"].shape == (32, 64) and cap.arrays["w_o"].shape == (64, 32) and cap.arrays["w_k"].shape == (32, 32)
    assert any("not the model's width 32" in n for n in cap.notes)
    _, cap, _, _ = decoder("olmo2")
    assert cap.arrays["q_norm"].shape == (32,) and cap.arrays["k_norm"].shape == (16,)
    assert any("whole projection" in n for n in cap.notes)
    _, cap, _, _ = decoder("gemma2")
    assert cap.options["softcap"] == 4.0 and cap.options["logit_scale"] == {"factor": pytest.approx(24 ** -0.5)} and cap.options["window"] == 4


SEQ2SEQ = {
    "t5": ("T5ForConditionalGeneration", "T5EncoderModel"),
    "mt5": ("MT5ForConditionalGeneration", None),
    "umt5": ("UMT5ForConditionalGeneration", None),
}


@pytest.mark.parametrize("family", list(SEQ2SEQ))
@pytest.mark.parametrize("part", ["encoder", "decoder"])
def test_t5_layers_equal_the_model(family, part):
    cls = getattr(transformers, SEQ2SEQ[family][0])
    # mT5-small's shape: heads × d_kv (6 × 64) is not d_model (512); here 3 × 16 in 32.
    d_kv, heads = (16, 3) if family == "mt5" else (8, 4)
    model = build(cls, vocab_size=VOCAB, d_model=32, d_kv=d_kv, num_heads=heads, d_ff=48, num_layers=2, num_decoder_layers=2,
                  relative_attention_num_buckets=8, relative_attention_max_distance=12, decoder_start_token_id=0, pad_token_id=0)
    ids, mask = inputs(1)
    dec, dec_mask = inputs(2, n=7, pad=2)
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask, decoder_input_ids=dec, decoder_attention_mask=dec_mask, part=part)
    stack = getattr(model, part)
    seen, outputs = module_io(model, stack.block[1].layer[0].SelfAttention,
                              lambda: model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec, decoder_attention_mask=dec_mask, output_attentions=True))
    probabilities = (outputs.encoder_attentions if part == "encoder" else outputs.decoder_attentions)[1]
    check(cap, probabilities, seen["out"])
    assert cap.options["logit_scale"] == "none" and cap.options["causal"] == (part == "decoder")
    # T5 and mT5 share the first layer's table; UMT5's layer 1 has its own.
    owner = stack.block[1 if family == "umt5" else 0].layer[0].SelfAttention.relative_attention_bias.weight
    np.testing.assert_array_equal(cap.arrays["t5_bias"], owner.detach().numpy())


def test_learned_positions_are_shown_not_added_again():
    """GPT-2's and OPT's captures carry the model's position table (OPT's past its offset), in x already."""
    gpt2 = build(transformers.GPT2LMHeadModel, vocab_size=VOCAB, n_embd=32, n_head=4, n_layer=1, n_positions=64)
    ids, mask = inputs()
    cap = relattn.capture(gpt2, 0, input_ids=ids, attention_mask=mask)
    np.testing.assert_array_equal(cap.arrays["positions"], gpt2.transformer.wpe.weight[:N].detach().numpy())
    assert cap.options["positions_in_x"] is True
    t = cap.trace()
    np.testing.assert_array_equal(t["positions"], cap.arrays["positions"])
    assert "embedding" in relattn.show(cap, stages=["positions"]).stages
    opt = build(transformers.OPTForCausalLM, vocab_size=VOCAB, hidden_size=32, ffn_dim=48, num_attention_heads=4, num_hidden_layers=1,
                word_embed_proj_dim=32, max_position_embeddings=64, pad_token_id=0)
    cap = relattn.capture(opt, 0, input_ids=ids, attention_mask=mask)
    np.testing.assert_array_equal(cap.arrays["positions"], opt.model.decoder.embed_positions.weight[2:2 + N].detach().numpy())
    too_long = torch.randint(1, VOCAB, (1, 65))
    assert "64 positions" in refused("input_ids", lambda: relattn.capture(gpt2, 0, input_ids=too_long))


def test_bert_layers_equal_the_model():
    """BERT: bidirectional, its output the dense projection before the residual and layer norm."""
    model = build(transformers.BertModel, vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=2,
                  max_position_embeddings=64)
    ids, mask = inputs(4)
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    seen, outputs = module_io(model, model.encoder.layer[1].attention.output.dense, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    check(cap, outputs.attentions[1], seen["out"])
    assert cap.part == "encoder" and cap.options["causal"] is False


def modernbert(layer):
    """A tiny ModernBERT (layer 0 global, layer 1 local), the capture of `layer`, its probabilities and output."""
    model = build(transformers.ModernBertModel, vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=2,
                  global_attn_every_n_layers=2, local_attention=4, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)
    ids, mask = inputs(4, pad=2)
    cap = relattn.capture(model, layer, input_ids=ids, attention_mask=mask)
    seen, outputs = module_io(model, model.layers[layer].attn, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    return model, cap, outputs.attentions[layer], seen["out"]


@pytest.mark.parametrize("layer", [0, 1])
def test_modernbert_global_and_local_layers_equal_the_model(layer):
    """ModernBERT: bidirectional, fused Wqkv, layer 0 global, layer 1 local (|j − i| ≤ local_attention / 2) with its own
    rotary base; without its window the local layer misses the model."""
    _, cap, probabilities, output = modernbert(layer)
    check(cap, probabilities, output)
    assert cap.part == "encoder" and cap.options["causal"] is False and cap.options.get("window") == (3 if layer == 1 else None)
    if layer == 1:
        without = relattn.Capture(model=cap.model, family=cap.family, layer=1, part="encoder", tokens=None, notes=cap.notes, arrays=cap.arrays,
                                  options={k: v for k, v in cap.options.items() if k != "window"})
        assert rel(without.trace()["weights"], probabilities.numpy()) > 0.02


def test_t5_encoder_model_alone():
    model = build(transformers.T5EncoderModel, vocab_size=VOCAB, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2)
    ids, mask = inputs(3)
    cap = relattn.capture(model, 0, input_ids=ids, attention_mask=mask)
    seen, outputs = module_io(model, model.encoder.block[0].layer[0].SelfAttention, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    check(cap, outputs.attentions[0], seen["out"])


def test_tokens_label_the_positions():
    class Tok:
        def convert_ids_to_tokens(self, ids):
            return [f"t{i}" for i in ids]

    model = build(transformers.BloomForCausalLM, vocab_size=VOCAB, hidden_size=32, n_head=4, n_layer=1)
    ids, _ = inputs(batch=1)
    cap = relattn.capture(model, input_ids=ids, tokenizer=Tok())
    assert cap.tokens == [[f"t{i}" for i in ids[0].tolist()]]
    assert "alibi" in repr(cap) and len(cap.notes) == 2


def refused(field, fn):
    with pytest.raises(relattn.RelattnError) as e:
        fn()
    assert e.value.field == field, (e.value.field, str(e.value))
    return str(e.value)


def test_refusals_name_what_and_list_what_is_supported():
    model = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2)
    ids, mask = inputs()
    assert "0 to 1" in refused("layer", lambda: relattn.capture(model, 2, input_ids=ids))
    refused("layer", lambda: relattn.capture(model, -1, input_ids=ids))
    assert "'decoder'" in refused("part", lambda: relattn.capture(model, 0, input_ids=ids, part="encoder"))
    refused("input_ids", lambda: relattn.capture(model, 0, input_ids=ids[0]))
    refused("input_ids", lambda: relattn.capture(model, 0, input_ids=ids.float()))
    refused("attention_mask", lambda: relattn.capture(model, 0, input_ids=ids, attention_mask=mask[:, :3]))
    quantized = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4, num_hidden_layers=1)
    quantized.model.layers[0].self_attn.q_proj.weight = torch.nn.Parameter(torch.zeros(32, 32, dtype=torch.int8), requires_grad=False)
    assert "quantized" in refused("model", lambda: relattn.capture(quantized, 0, input_ids=ids))
    xglm = build(transformers.XGLMForCausalLM, vocab_size=VOCAB, d_model=32, attention_heads=4, num_layers=1, ffn_dim=48)
    assert "llama" in refused("model", lambda: relattn.capture(xglm, 0, input_ids=ids))
    clipped = build(transformers.MptForCausalLM, vocab_size=VOCAB, d_model=32, n_heads=4, n_layers=1, attn_config={"alibi": True, "clip_qkv": 6.0})
    assert "clip_qkv" in refused("model", lambda: relattn.capture(clipped, 0, input_ids=ids))
    refused("model", lambda: relattn.capture(object(), 0, input_ids=ids))
    t5 = build(transformers.T5ForConditionalGeneration, vocab_size=VOCAB, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=1)
    assert "cross-attention" in refused("part", lambda: relattn.capture(t5, 0, input_ids=ids, part="cross"))
    refused("decoder_input_ids", lambda: relattn.capture(t5, 0, input_ids=ids, part="decoder"))
    # Llama 4's chunks start after a sequence's left padding (relattn's at 0): refused past one chunk; its NoPE
    # layers' temperature acts only on long inputs: past floor_scale, refused.
    llama4 = dict(hidden_size=32, intermediate_size=48, intermediate_size_mlp=48, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  num_local_experts=2, num_hidden_layers=2, no_rope_layers=[1, 0], pad_token_id=0, bos_token_id=1, eos_token_id=2)
    chunked = build(transformers.Llama4ForCausalLM, vocab_size=VOCAB, attention_chunk_size=4, **llama4)
    left = torch.ones_like(ids)
    left[:, 0] = 0
    assert "attention_chunk_size = 4" in refused("attention_mask", lambda: relattn.capture(chunked, 0, input_ids=ids, attention_mask=left))
    tuned = build(transformers.Llama4ForCausalLM, vocab_size=VOCAB, floor_scale=4, **llama4)
    assert "floor_scale = 4" in refused("input_ids", lambda: relattn.capture(tuned, 1, input_ids=ids))
    # A Qwen3 relabelled qwen2 (its q/k norms would change the weights by 0.8): refused, not captured wrong.
    qwen3 = build(transformers.Qwen3ForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=1, head_dim=8)
    qwen3.config.model_type = "qwen2"
    assert "k_norm, q_norm" in refused("model", lambda: relattn.capture(qwen3, 0, input_ids=ids))


class Tok:
    """A tokenizer's one method the capture calls."""

    def convert_ids_to_tokens(self, ids):
        return [f"w{i}" for i in ids]


def test_position_ids_reach_the_model_and_its_cos_and_sin():
    """Positions 5 .. n + 4 (a continuation): the capture equals the module run with them; differing rows, a
    family without rotary and negative positions are refused by name."""
    model = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2)
    ids, mask = inputs()
    pos = torch.arange(5, 5 + N).unsqueeze(0)
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask, position_ids=pos)
    seen, outputs = module_io(model, model.model.layers[1].self_attn,
                              lambda: model(input_ids=ids, attention_mask=mask, position_ids=pos, output_attentions=True))
    check(cap, outputs.attentions[1], seen["out"])
    plain = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    assert not np.allclose(plain.arrays["rope_cos"], cap.arrays["rope_cos"])
    refused("position_ids", lambda: relattn.capture(model, 1, input_ids=ids, position_ids=torch.stack([pos[0], pos[0] + 1])))
    refused("position_ids", lambda: relattn.capture(model, 1, input_ids=ids, position_ids=pos - 6))
    refused("position_ids", lambda: relattn.capture(model, 1, input_ids=ids, position_ids=pos.float()))
    gpt2 = build(transformers.GPT2LMHeadModel, vocab_size=VOCAB, n_embd=32, n_head=4, n_layer=1, n_positions=64)
    assert "rotary" in refused("position_ids", lambda: relattn.capture(gpt2, 0, input_ids=ids, position_ids=pos))


def llama_capture(**kw):
    model = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2)
    ids, mask = inputs()
    return relattn.capture(model, 1, input_ids=ids, attention_mask=mask, tokenizer=Tok(), **kw)


def test_a_saved_capture_opens_in_the_command_line(tmp_path):
    """capture.save writes the layer and its description; relattn compute --tensors computes the same trace from
    it with no option given, and relattn render titles the figure with the model and labels it with the tokens."""
    import subprocess

    from test_relattn import BIN

    cap = llama_capture()
    path = cap.save(tmp_path / "llama-layer1.npz")
    with np.load(path) as f:
        assert "capture" in f.files and f["capture"].dtype == np.uint8
    out = tmp_path / "trace.npz"
    subprocess.run([BIN, "compute", "--tensors", path, "--out", out], check=True, capture_output=True)
    want = cap.trace()
    with np.load(out) as got:
        np.testing.assert_array_equal(got["weights"], want["weights"])
        np.testing.assert_array_equal(got["rope_angles"], want["rope_angles"])
    svg = tmp_path / "w.svg"
    subprocess.run([BIN, "render", "--tensors", path, "--stage", "weights", "--head", "1", "--batch-index", "1", "--out", svg], check=True, capture_output=True)
    text = svg.read_text()
    assert "decoder layer 1" in text and cap.tokens[1][0] in text
    # An option given beside the file replaces the file's.
    subprocess.run([BIN, "compute", "--tensors", path, "--causal", "false", "--out", out], check=True, capture_output=True)
    with np.load(out) as got:
        assert got["weights"][0, 0, 0, 1] > 0


def test_a_refused_save_writes_nothing(tmp_path):
    cap = llama_capture()
    refused("path", lambda: cap.save(tmp_path / "layer.txt"))
    assert "existing folder" in refused("path", lambda: cap.save(tmp_path / "missing" / "layer.npz"))
    assert list(tmp_path.iterdir()) == []


def test_show_draws_a_capture():
    """relattn.show(capture): the layer's stages titled with the model and layer, its tokens on the axes."""
    import json

    pytest.importorskip("anywidget")
    cap = llama_capture()
    w = relattn.show(cap, head=3, batch=1, stages=["rope_angles", "weights"])
    titles = [s["title"] for s in json.loads(w.stages)]
    assert len(titles) == 2 and all(t.endswith("— LlamaForCausalLM, decoder layer 1") for t in titles), titles
    assert w.tokens == cap.tokens[1]


def test_a_capture_held_on_demand_gives_the_traces_stages():
    """capture.stage computes one stage of one (batch, head) on demand: the whole trace's numbers."""
    cap = llama_capture()
    t = cap.trace()
    for name, batch, head in [("weights", 1, 3), ("rotated_k", 0, 2), ("rope_kernel", 0, 0), ("logits", 1, 0)]:
        got = cap.stage(name, head=head, batch=batch)
        want = t[name][batch, head] if t[name].ndim == 4 else t[name]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    held = cap.on_demand()
    assert held is cap.on_demand() and "weights" in held.stages() and held.dims() == (2, 4, N)
    np.testing.assert_allclose(held.output(), t["output"], rtol=1e-5, atol=1e-5)
    refused("stage", lambda: cap.stage("no_such_stage"))
    refused("head", lambda: cap.stage("weights", head=4))


def test_half_precision_arrays_are_widened_and_others_refused_by_name():
    """float16 and bfloat16 tensors (and float16 arrays) are read as float32; a complex array is refused by name."""
    x = torch.randn(5, 8)
    want = relattn.trace(x, method="rope", heads=2)["output"]
    for half in (x.half(), x.bfloat16(), x.half().numpy()):
        got = relattn.trace(half, method="rope", heads=2)["output"]
        np.testing.assert_allclose(got, relattn.trace(np.asarray(torch.as_tensor(half).float()), method="rope", heads=2)["output"])
        assert np.abs(got - want).max() < 0.05
    assert "float32" in refused("x", lambda: relattn.trace(np.ones((5, 8), np.complex64), method="rope", heads=2))


def test_falcon_alibi_as_each_attention_path_runs_it():
    """transformers' Falcon adds ALiBi twice under eager attention (folded into the mask, and in the module) and
    once under SDPA: each capture's output equals the module's own output on its path."""
    torch.manual_seed(0)
    ids, mask = inputs()
    outs = {}
    for path in ("eager", "sdpa"):
        config = transformers.FalconConfig(vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, alibi=True,
                                           multi_query=False, parallel_attn=False, bias=True, initializer_range=0.3, attn_implementation=path)
        torch.manual_seed(0)
        model = transformers.FalconForCausalLM(config).eval()
        cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
        seen, _ = module_io(model, model.transformer.h[1].self_attention, lambda: model(input_ids=ids, attention_mask=mask))
        assert rel(cap.attention(), seen["out"].numpy()) <= TOL, path
        outs[path] = cap.arrays["alibi_slopes"]
    np.testing.assert_allclose(outs["eager"], 2 * outs["sdpa"])


@pytest.mark.parametrize("bias_max", [4, 16])
def test_mpt_slopes_are_the_ones_the_module_adds(bias_max):
    """Issue #52 item 5: transformers builds MPT's ALiBi with alibi_bias_max 8 whatever the config says; the
    capture takes the slopes the module adds, so its output is the module's for any alibi_bias_max."""
    model = build(transformers.MptForCausalLM, vocab_size=VOCAB, d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=64,
                  attn_config={"alibi": True, "alibi_bias_max": bias_max})
    ids, mask = inputs()
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    seen, outputs = module_io(model, model.transformer.blocks[1].attn, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    check(cap, outputs.attentions[1], seen["out"])


def bert():
    return build(transformers.BertModel, vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=48,
                 max_position_embeddings=64, type_vocab_size=2)


def test_a_model_in_training_mode_is_captured_as_in_eval_and_left_as_it_was():
    """Issue #52 item 9: a model built from a config is in training mode (dropout on); the capture is the eval
    model's, the same twice, said in the notes, and every module's mode is put back."""
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=48,
                                     hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5, attn_implementation="eager")
    model = transformers.BertModel(config)
    model.encoder.layer[0].eval()  # a mix: the mode of each module is kept as it was
    modes = [m.training for m in model.modules()]
    assert model.training
    ids, mask = inputs()
    a = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    b = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    np.testing.assert_array_equal(a.arrays["x"], b.arrays["x"])
    assert [m.training for m in model.modules()] == modes
    assert any("training mode" in n for n in a.notes)
    model.eval()
    c = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    np.testing.assert_array_equal(a.arrays["x"], c.arrays["x"])
    assert not any("training mode" in n for n in c.notes)


def test_inputs_are_refused_at_capture_naming_their_field():
    """Issue #52 items 11 and 12: each refused by capture as a RelattnError naming its own field, never accepted
    to fail later under another name, never a raw IndexError, TypeError or AttributeError."""
    model = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2)
    ids, mask = inputs()
    for bad in (0.5, 2, float("nan")):
        m = mask.float()
        m[0, 1] = bad
        assert "0 (padding) and 1" in refused("attention_mask", lambda: relattn.capture(model, 0, input_ids=ids, attention_mask=m))
    for shape in ((1, 0), (0, 8)):
        refused("input_ids", lambda: relattn.capture(model, 0, input_ids=torch.zeros(shape, dtype=torch.long)))
    for value in (-1, VOCAB):
        bad_ids = ids.clone()
        bad_ids[1, 2] = value
        assert f"0..={VOCAB - 1}" in refused("input_ids", lambda: relattn.capture(model, 0, input_ids=bad_ids))

    class Bad:
        def __init__(self, give):
            self.give = give

        def convert_ids_to_tokens(self, ids):
            return self.give(ids)

    for give in (lambda ids: list(ids), lambda ids: None, lambda ids: [str(i) for i in ids][:-1], lambda ids: "".join(map(str, ids))):
        refused("tokenizer", lambda: relattn.capture(model, 0, input_ids=ids, tokenizer=Bad(give)))
    refused("tokenizer", lambda: relattn.capture(model, 0, input_ids=ids, tokenizer="gpt2"))

    t5 = build(transformers.T5ForConditionalGeneration, vocab_size=VOCAB, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=1)
    refused("decoder_input_ids", lambda: relattn.capture(t5, 0, input_ids=ids, decoder_input_ids=ids.float(), part="decoder"))
    refused("decoder_input_ids", lambda: relattn.capture(t5, 0, input_ids=ids, decoder_input_ids=ids[0], part="decoder"))
    refused("decoder_input_ids", lambda: relattn.capture(t5, 0, input_ids=ids, decoder_input_ids=ids + VOCAB, part="decoder"))
    refused("decoder_attention_mask", lambda: relattn.capture(t5, 0, input_ids=ids, decoder_input_ids=ids[:, :5],
                                                               decoder_attention_mask=mask, part="decoder"))
    half = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                 num_key_value_heads=2, num_hidden_layers=2)
    half.model.layers[1].to("meta")  # the first parameter (the embedding) stays on the CPU
    assert "meta" in refused("model", lambda: relattn.capture(half, 1, input_ids=ids))


def test_a_tokenizers_token_type_ids_are_taken():
    """Issue #52 item 12: **enc of a BERT tokenizer carries token_type_ids: BERT takes them (its segments are in
    x); a model without token types takes all-zero ones and refuses others by name."""
    model = bert().eval()
    ids, mask = inputs()
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask, token_type_ids=types)
    seen, outputs = module_io(model, model.encoder.layer[1].attention.self,
                              lambda: model(input_ids=ids, attention_mask=mask, token_type_ids=types, output_attentions=True))
    np.testing.assert_allclose(cap.arrays["x"], seen["args"][0].numpy() if seen["args"] else seen["kwargs"]["hidden_states"].numpy(), atol=1e-6)
    plain = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    assert np.abs(plain.arrays["x"] - cap.arrays["x"]).max() > 1e-3
    refused("token_type_ids", lambda: relattn.capture(model, 1, input_ids=ids, token_type_ids=types + 2))
    llama = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=1)
    relattn.capture(llama, 0, input_ids=ids, token_type_ids=torch.zeros_like(ids))
    refused("token_type_ids", lambda: relattn.capture(llama, 0, input_ids=ids, token_type_ids=types))
    refused("token_type_ids", lambda: relattn.capture(llama, 0, input_ids=ids, token_type_ids=types[:, :3]))


def test_two_threads_capture_one_model():
    """Issue #52 item 13: threads capturing the same model at once each get their own layer's capture (each
    thread's stop hook fired in the other's forward before)."""
    import threading

    model = build(transformers.LlamaForCausalLM, vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=4)
    ids, mask = inputs(n=64)
    want = {layer: relattn.capture(model, layer, input_ids=ids, attention_mask=mask).arrays["x"] for layer in range(4)}
    errors, got = [], {}
    start = threading.Barrier(8)

    def run(i):
        try:
            start.wait()
            for _ in range(3):
                layer = i % 4
                got.setdefault(i, []).append((layer, relattn.capture(model, layer, input_ids=ids, attention_mask=mask).arrays["x"]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for results in got.values():
        for layer, x in results:
            np.testing.assert_array_equal(x, want[layer])


def test_save_keeps_a_files_mode_and_gives_a_new_one_the_umasks(tmp_path):
    """Issue #52 items 14 and 12: a new file gets 0666 & ~umask (not mkstemp's 0600), a replaced file keeps its
    mode; a bytes path is a path, anything else is refused by name."""
    import os
    import stat

    cap = llama_capture()
    old = os.umask(0o027)
    try:
        new = cap.save(tmp_path / "new.npz")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o640
    kept = tmp_path / "kept.npz"
    kept.write_bytes(b"")
    os.chmod(kept, 0o644)
    cap.save(kept)
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o644
    os.chmod(kept, 0o600)
    cap.save(kept)
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert cap.save(os.fsencode(tmp_path / "b.npz")) == str(tmp_path / "b.npz")
    refused("path", lambda: cap.save(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.npz", "kept.npz", "new.npz"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["llama", "qwen3", "gpt_oss", "deepseek_v3", "bloom", "gpt2", "t5"])
def test_a_model_in_half_precision_is_read_as_float32_and_left_as_it_was(name, dtype):
    """A model in bfloat16 or float16 is captured without being converted: its layer's tensors are read as float32,
    relattn's weights equal the module's own half-precision probabilities within their rounding, the notes say so."""
    dtype = getattr(torch, dtype)
    if name == "t5":
        model = build(transformers.T5EncoderModel, vocab_size=VOCAB, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2,
                      relative_attention_num_buckets=8, relative_attention_max_distance=12)
    else:
        spec = dict(DECODERS[name] if name in DECODERS else DEEPSEEK[name])
        cls = getattr(transformers, spec.pop("cls"))
        layers = {"bloom": "n_layer", "gpt2": "n_layer"}.get(name, "num_hidden_layers")
        model = build(cls, vocab_size=VOCAB, **{layers: 2}, **spec)
    model = model.to(dtype)
    ids, mask = inputs()
    cap = relattn.capture(model, 1, input_ids=ids, attention_mask=mask)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    probabilities = (getattr(out, "encoder_attentions", None) or out.attentions)[1].float().numpy()
    weights = cap.trace()["weights"]
    keep = np.broadcast_to(mask.numpy()[:, None, :, None].astype(bool), weights.shape)  # padded query rows: relattn's own rule
    gap = float(np.abs(weights - probabilities)[keep].max())
    # bfloat16 keeps 8 significant bits, float16 11: T5's large logits (its tests' wide weights) lose the most.
    assert gap < (0.06 if dtype == torch.bfloat16 else 0.02), gap
    assert float(probabilities.max()) > 0.5
    assert all(p.dtype == dtype for p in model.parameters()), "the model is not converted"
    assert any(str(dtype).replace("torch.", "") in note for note in cap.notes)
    assert cap.arrays["x"].dtype == np.float32



#: DeBERTa-v2/v3 settings: log buckets (v3's kind, small) or plain clipping (buckets off), the relative tables
#: projected by the key and query projections (share_att_key) or by pos_key_proj / pos_query_proj, each set of
#: terms, E layer-normed or not.
DEBERTAS = {
    "v3-buckets-shared": dict(position_buckets=4, max_relative_positions=8, share_att_key=True, pos_att_type="c2p|p2c", norm_rel_ebd="layer_norm"),
    "buckets-separate": dict(position_buckets=6, max_relative_positions=12, share_att_key=False, pos_att_type="p2c|c2p"),
    "clipped-shared": dict(position_buckets=0, max_relative_positions=3, share_att_key=True, pos_att_type="c2p|p2c", norm_rel_ebd="layer_norm"),
    "clipped-separate": dict(position_buckets=-1, max_relative_positions=5, share_att_key=False, pos_att_type="c2p|p2c"),
    "c2p-only": dict(position_buckets=4, max_relative_positions=8, share_att_key=False, pos_att_type="c2p"),
    "p2c-only": dict(position_buckets=0, max_relative_positions=4, share_att_key=True, pos_att_type="p2c"),
}


def deberta(name, layer=1, pad=0):
    """A tiny random DebertaV2Model of setting `name` (positions in the embeddings off, as v3), the capture of `layer`, the
    module's probabilities and its output (the dense projection before the residual and layer norm)."""
    model = build(transformers.DebertaV2Model, vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=2,
                  max_position_embeddings=64, relative_attention=True, position_biased_input=False, **DEBERTAS[name])
    ids, mask = inputs(6, n=13, pad=pad)
    cap = relattn.capture(model, layer, input_ids=ids, attention_mask=mask)
    dense = model.encoder.layer[layer].attention.output.dense
    seen, outputs = module_io(model, dense, lambda: model(input_ids=ids, attention_mask=mask, output_attentions=True))
    return model, cap, outputs.attentions[layer], seen["out"]


@pytest.mark.parametrize("name", list(DEBERTAS))
def test_deberta_layers_equal_the_model(name):
    """DeBERTa's disentangled attention: relattn's weights equal the module's probabilities and its output the module's,
    within 1e-5, for buckets and plain clipping, shared and separate projections, c2p, p2c and both; its stages are
    there; without its position terms (the content alone, or either term left out) it misses the model by > 0.02."""
    model, cap, probabilities, output = deberta(name)
    check(cap, probabilities, output)
    settings = DEBERTAS[name]
    terms = [t for t in ("c2p", "p2c") if t in settings["pos_att_type"]]
    o = cap.options
    assert o["method"] == "deberta" and o["causal"] is False and cap.part == "encoder"
    assert o["position_buckets"] == max(settings["position_buckets"], 0) and o["max_relative_positions"] == settings["max_relative_positions"]
    assert o["deberta_terms"] == ("both" if len(terms) == 2 else terms[0])
    span = settings["position_buckets"] if settings["position_buckets"] > 0 else settings["max_relative_positions"]
    for t, table in (("c2p", "deberta_k_r"), ("p2c", "deberta_q_r")):
        assert (table in cap.arrays) == (t in terms)
        if t in terms:
            assert cap.arrays[table].shape == (4, 2 * span, 8)
    trace = cap.trace()
    for t in terms:
        assert trace[t].shape == (2, 4, 13, 13) and float(np.abs(trace[t]).max()) > 0
    np.testing.assert_allclose(trace["relative_logits"], sum(trace[t] for t in terms), rtol=1e-6, atol=1e-6)
    # Negative controls: the position terms left out (their tables zeroed: the content alone), and with both terms
    # each one left out, the scale kept.
    zero = lambda *names: {k: np.zeros_like(cap.arrays[k]) for k in names}  # noqa: E731
    controls = [zero(*(k for k in ("deberta_k_r", "deberta_q_r") if k in cap.arrays))]
    if len(terms) == 2:
        controls += [zero("deberta_k_r"), zero("deberta_q_r")]
    for tables in controls:
        without = relattn.Capture(model=cap.model, family=cap.family, layer=1, part="encoder", tokens=None, notes=cap.notes,
                                  arrays={**cap.arrays, **tables}, options=o)
        assert rel(without.trace()["weights"], probabilities.numpy()) > 0.02, (name, sorted(tables))


def test_deberta_padded_keys_equal_the_model_on_the_tokens():
    """With padding: DeBERTa masks padded queries too (uniform rows the model discards), relattn only the keys; every
    unpadded query's weights and output equal the module's."""
    model, cap, probabilities, output = deberta("v3-buckets-shared", layer=0, pad=4)
    unpadded_rows_equal(cap, probabilities, output)
    assert any("padded queries" in note for note in cap.notes)


def unpadded_rows_equal(cap, probabilities, output):
    """Every unpadded query's weights and output equal the module's (batch of 2), and no weight falls on a padded key."""
    t = cap.trace()
    kept = np.asarray(cap.arrays["key_mask"], bool)
    for b in range(2):
        rows = kept[b]
        assert rel(t["weights"][b][:, rows], probabilities[b].numpy()[:, rows]) <= TOL
        assert rel(t["output"][b][rows], output[b].numpy()[rows]) <= TOL
        assert float(np.abs(t["weights"][b][:, :, ~rows]).max(initial=0.0)) == 0.0


def xlnet(attn_type="bi", layer=1, pad=0, segmented=True, clamp_len=-1):
    """A tiny random XLNetModel (u, v, s and the segment embeddings drawn wide too), the capture of `layer`'s content
    stream with token types or without, the module's probabilities and its attention output (o's projection of
    rel_attn_core's attn_vec, as post_attention computes it before the residual)."""
    model = build(transformers.XLNetModel, vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=48, attn_type=attn_type, dropout=0.0, clamp_len=clamp_len)
    attn = model.layer[layer].rel_attn
    with torch.no_grad():
        for p in (attn.r_w_bias, attn.r_r_bias, attn.r_s_bias, attn.seg_embed):
            p.normal_(0.0, 0.5)
    ids, mask = inputs(7, n=11, pad=pad)
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    extra = {"token_type_ids": types} if segmented else {}
    cap = relattn.capture(model, layer, input_ids=ids, attention_mask=mask, **extra)
    _, output, probabilities = test_xlnet.run(model, layer, ids, mask, extra.get("token_type_ids"))
    return model, cap, probabilities, output


@pytest.mark.parametrize("attn_type, segmented, clamp_len", [("bi", True, -1), ("bi", False, 3), ("uni", True, 4), ("uni", False, -1)])
def test_xlnet_layers_equal_the_model(attn_type, segmented, clamp_len):
    """XLNet's content stream: relattn's weights equal rel_attn_core's probabilities and its output the module's within
    1e-5, bidirectional ("bi") and causal ("uni"), clamped or not, with the segment term or without; its stages (AC as
    the content logits, BD before and after rel_shift, EF) are there; without W_R (no position term) it misses by > 0.02."""
    model, cap, probabilities, output = xlnet(attn_type, segmented=segmented, clamp_len=clamp_len)
    check(cap, probabilities, output)
    o = cap.options
    assert o["method"] == "transformer_xl" and o["causal"] == (attn_type == "uni") and cap.part == "content"
    assert o["clip"] == (clamp_len if clamp_len > 0 else 11) and (o["segments"] > 0) == segmented
    assert ("segment_ids" in cap.arrays) == segmented and cap.arrays["xl_w_r"].shape == (32, 32) and cap.arrays["xl_seg_embed"].shape == (2, 4, 8)
    t = cap.trace()
    width = 12 if attn_type == "uni" else 22
    assert t["bd_relative"].shape == (2, 4, 11, width) and t["bd"].shape == (2, 4, 11, 11) and ("ef" in t) == segmented
    without = relattn.Capture(model=cap.model, family=cap.family, layer=1, part="content", tokens=None, notes=cap.notes,
                              arrays={**cap.arrays, "xl_w_r": np.zeros_like(cap.arrays["xl_w_r"])}, options=o)
    assert rel(without.trace()["weights"], probabilities.numpy()) > 0.02


def test_xlnet_padded_keys_equal_the_model_on_the_tokens():
    """With padding: XLNet lets a padded query attend to itself, relattn masks padded keys only; every unpadded query's
    weights and output equal the module's."""
    model, cap, probabilities, output = xlnet("bi", layer=0, pad=4)
    unpadded_rows_equal(cap, probabilities, output)
    assert any("padded query" in note for note in cap.notes)


def test_xlnet_query_stream_and_mems_are_refused_by_name():
    """XLNet's query stream (part "query"), memories (mems reaching the layer) and padding with attn_type "uni" in a batch
    (which transformers' XLNet cannot combine with its causal mask) are refused, naming them."""
    import importlib

    model = build(transformers.XLNetModel, vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=48, dropout=0.0)
    ids, mask = inputs(7, n=6, pad=0)
    with pytest.raises(relattn.RelattnError) as e:
        relattn.capture(model, 0, input_ids=ids, part="query")
    assert e.value.field == "part" and "content" in str(e.value)
    uni = build(transformers.XLNetModel, vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=48, dropout=0.0, attn_type="uni")
    _, padded = inputs(7, n=6, pad=2)
    with pytest.raises(relattn.RelattnError) as e:
        relattn.capture(uni, 0, input_ids=ids, attention_mask=padded)
    assert e.value.field == "attention_mask"
    module = importlib.import_module("relattn.capture")
    mems = [torch.zeros(3, 2, 32) for _ in range(2)]
    with pytest.raises(relattn.RelattnError) as e:
        module._xlnet(model, 0, ids, mask, {"mems": mems}, module._run_to)
    assert e.value.field == "mems"
