"""relattn.atlas against plain NumPy definitions of its metrics (docs/src/atlas.md), computed from each model's own
attention probabilities (eager attention, output_attentions=True), for every family relattn.capture supports,
on the tiny random models test_capture.py builds; the file written and read back; refusals by name; the model
left as it was."""

import copy

import numpy as np
import pytest

import relattn
from relattn.atlas import _induction_ids
from test_capture import DECODERS, SEQ2SEQ, VOCAB, build

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 2e-4
N = 10


def definitions(a, causal, tokens=None, window=None, chunk=None):
    """The metrics of every head of one sequence's probabilities ``a`` (H, n, n), by their definitions, and the
    profile by offset (H, 2n − 1); every position a token; a sliding window hides keys at |j − i| ≥ window, chunks
    the keys of other chunks."""
    h, n, _ = a.shape
    a = a.astype(np.float64)
    i, j = np.indices((n, n))
    visible = ((j <= i) if causal else np.ones((n, n), bool)) & (np.abs(j - i) < (window or n)) & (j // (chunk or n) == i // (chunk or n))
    out = {}
    out["mean_distance"] = (a * np.abs(i - j)).sum(-1).mean(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["entropy"] = -np.where(a > 0, a * np.log(a), 0.0).sum(-1).mean(-1)
    out["uniform_entropy"] = np.full(h, np.log(visible.sum(-1)).mean())
    out["previous_token"] = a[:, np.arange(1, n), np.arange(n - 1)].mean(-1)
    out["first_token"] = a[:, 1:, 0].mean(-1)
    if tokens is not None:
        # TransformerLens's detect_head patterns (error measure "mul"): sum(A * P) / sum(A).
        dup = (tokens[None, :] == tokens[:, None]) & (j < i)
        ind = np.zeros((n, n), bool)
        ind[:, 1:] = tokens[None, :-1] == tokens[:, None]
        ind &= j <= i
        out["duplicate_token"] = (a * dup).sum((-1, -2)) / a.sum((-1, -2))
        out["induction"] = (a * ind).sum((-1, -2)) / a.sum((-1, -2))
    if (a[:, visible] > 0).all():
        s = np.where(visible, np.log(np.where(visible, a, 1.0)), 0.0)
        s = np.where(visible, s - (s.sum(-1, keepdims=True) / visible.sum(-1, keepdims=True)), 0.0)
        d = j - i
        by_offset = sum(s[:, d == k].sum(-1) ** 2 / (visible & (d == k)).sum() for k in range(-(n - 1), n) if (visible & (d == k)).any())
        out["offset_share"] = by_offset / (s ** 2).sum((-1, -2))
    profile = np.full((h, 2 * n - 1), np.nan)
    for k in range(-(n - 1), n):
        cells = visible & (j - i == k)
        if cells.any():
            profile[:, k + n - 1] = a[:, cells].mean(-1)
    return out, profile


def decoder_model(name, layers=2):
    spec = dict(DECODERS[name])
    cls = getattr(transformers, spec.pop("cls"))
    key = {"gptj": "n_layer", "bloom": "n_layer", "gpt2": "n_layer", "mpt": "n_layers"}.get(name, "num_hidden_layers")
    return build(cls, vocab_size=VOCAB, **{key: layers}, **spec)


def t5_model(family):
    cls = getattr(transformers, SEQ2SEQ[family][0])
    return build(cls, vocab_size=VOCAB, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2, num_decoder_layers=2,
                 relative_attention_num_buckets=8, relative_attention_max_distance=12, decoder_start_token_id=0, pad_token_id=0)


def prompts(seed=3, count=2):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (count, N), generator=g)


def probabilities(model, ids, t5):
    """Each self-attention layer's probabilities (1, H, n, n) in the atlas's order (T5: encoder, then decoder)."""
    with torch.no_grad():
        if t5:
            out = model(input_ids=ids, decoder_input_ids=model._shift_right(ids), output_attentions=True)
            return list(out.encoder_attentions) + list(out.decoder_attentions)
        return list(model(input_ids=ids, output_attentions=True).attentions)


def check_against_definitions(model, t5=False, causal_of=lambda row: True):
    ids = prompts()
    # The model's own probabilities from a copy run in the atlas's order (each prompt, then the repeated
    # sequence): a dynamic rotary embedding keeps the longest length it has seen.
    twin = copy.deepcopy(model)
    at = relattn.atlas(model, ids, induction_length=16, seed=5)
    per = [probabilities(twin, ids[p:p + 1], t5) for p in range(ids.shape[0])]
    rep = _induction_ids(model, 16, 5)
    rep_probs = probabilities(twin, rep, t5)
    layers = at.description["layers"]
    assert len(layers) == len(per[0])
    peaked, shares = 0.0, 0
    for row, layer in enumerate(layers):
        causal = layer["causal"]
        assert causal == causal_of(layer)
        window, chunk = layer.get("window"), layer.get("chunk")
        got = [definitions(p[row][0].numpy(), causal, window=window, chunk=chunk) for p in per]
        read = model._shift_right(rep) if t5 and layer["part"] == "decoder" else rep  # the ids the layer reads
        tok, _ = definitions(rep_probs[row][0].numpy(), causal, read[0].numpy(), window, chunk)
        peaked = max(peaked, float(per[0][row][0].max()))
        shares += "offset_share" in got[0][0]
        for name in got[0][0]:
            want = np.mean([g[0][name] for g in got], axis=0)
            np.testing.assert_allclose(at.metric(name)[row], want, atol=TOL, rtol=TOL, err_msg=f"{layer} {name}")
            if name != "uniform_entropy":
                np.testing.assert_allclose(at.metric(name, std=True)[row], np.std([g[0][name] for g in got], axis=0), atol=TOL, err_msg=name)
        for name in ("duplicate_token", "induction"):
            np.testing.assert_allclose(at.metric(name)[row], tok[name], atol=TOL, rtol=TOL, err_msg=f"{layer} {name}")
        np.testing.assert_allclose(at.arrays["profile"][row], np.mean([g[1] for g in got], axis=0), atol=TOL, err_msg=f"{layer} profile")
    assert peaked > 0.5, "attention peaked enough for a wrong step to show"
    assert shares > 0 or t5, "offset_share checked on some layer (T5's peaked tiny models underflow: its share is checked in Rust)"
    return at


@pytest.mark.parametrize("name", list(DECODERS))
def test_every_decoder_family_matches_the_definitions_on_its_own_probabilities(name):
    model = decoder_model(name)
    # EmbeddingGemma's layers (Gemma 3 with use_bidirectional_attention) are the one bidirectional decoder.
    bidirectional = getattr(model.config, "use_bidirectional_attention", False)
    at = check_against_definitions(model, causal_of=lambda layer: not bidirectional)
    assert at.description["family"] == model.config.model_type
    kv = at.description["layers"][0]["kv_heads"]
    assert sorted(set(at.arrays["kv_head"][0].astype(int))) == list(range(kv))


@pytest.mark.parametrize("family", list(SEQ2SEQ))
def test_t5_encoder_and_decoder_match_the_definitions(family):
    model = t5_model(family)
    at = check_against_definitions(model, t5=True, causal_of=lambda layer: layer["part"] == "decoder")
    assert [(l["part"], l["layer"]) for l in at.description["layers"]] == [("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1)]
    # T5's position term is its bias per bucket: by offset, the table's value at that offset's bucket.
    assert np.isfinite(at.arrays["term"][0][:, N - 1]).all()


def test_bert_matches_the_definitions():
    model = build(transformers.BertModel, vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=2,
                  max_position_embeddings=64)
    check_against_definitions(model, causal_of=lambda layer: False)


def test_alibi_term_is_the_slope_line_and_rope_has_bands():
    bloom = decoder_model("bloom")
    at = relattn.atlas(bloom, prompts(count=1))
    offsets = at.offsets()
    term = at.arrays["term"][0]
    slopes = relattn.capture(bloom, 0, input_ids=prompts(count=1)).arrays["alibi_slopes"]
    back = offsets <= 0
    np.testing.assert_allclose(term[:, back], slopes[:, None] * offsets[None, back], atol=1e-5)
    assert np.isnan(term[:, ~back]).all(), "a causal layer sees no key after the query"
    llama = decoder_model("llama")
    at = relattn.atlas(llama, prompts(count=1))
    assert at.arrays["band_q"].shape == (2, 4, 4) and (at.arrays["band_q"] > 0).all()


def test_the_file_reads_back_with_its_captured_layer(tmp_path):
    model = decoder_model("llama", layers=3)
    at = relattn.atlas(model, prompts(), layers=[2])
    path = at.save(tmp_path / "tiny.atlas.npz")
    back = relattn.load_atlas(path)
    assert back.description == at.description and back.description["captured"] == [2]
    for name, a in at.arrays.items():
        np.testing.assert_array_equal(back.arrays[name], a)
    cap = back.captures[2]
    ids = prompts()[:1]
    want = relattn.capture(model, 2, input_ids=ids)
    np.testing.assert_array_equal(cap.arrays["x"], want.arrays["x"])
    # The held layer's weights are the model's own probabilities.
    with torch.no_grad():
        probs = model(input_ids=ids, output_attentions=True).attentions[2]
    np.testing.assert_allclose(cap.trace()["weights"], probs.numpy(), atol=1e-5)


def test_refusals_name_the_argument_and_the_model_is_left_as_it_was():
    model = decoder_model("llama")
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    hooks = sum(len(m._forward_pre_hooks) for m in model.modules())
    cases = [
        ("prompts", lambda: relattn.atlas(model, 42)),
        ("tokenizer", lambda: relattn.atlas(model, ["a string"])),
        ("layers", lambda: relattn.atlas(model, prompts(), layers=[7])),
        ("induction_length", lambda: relattn.atlas(model, prompts(), induction_length=2)),
        ("input_ids", lambda: relattn.atlas(model, torch.full((1, 4), VOCAB + 3))),
        ("model", lambda: relattn.atlas(torch.nn.Linear(2, 2), prompts())),
    ]
    for field, call in cases:
        with pytest.raises(relattn.RelattnError) as e:
            call()
        assert e.value.field == field, (field, str(e.value))
    at = relattn.atlas(model, prompts())
    assert any("training mode" in note for note in at.description["notes"])
    assert model.training and all(m.training for m in model.modules())
    assert sum(len(m._forward_pre_hooks) for m in model.modules()) == hooks
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_the_committed_atlas_fixture_is_what_atlas_writes_today():
    # tests/fixtures/atlas-tiny-llama.atlas.npz (the page's and the CLI's tests open it), made by make_atlas_fixture.py.
    import make_atlas_fixture

    fresh, kept = make_atlas_fixture.atlas(), relattn.load_atlas(make_atlas_fixture.OUT)
    assert kept.description == fresh.description
    for name, a in fresh.arrays.items():
        np.testing.assert_allclose(kept.arrays[name], a, atol=1e-5, err_msg=name)
    assert sorted(kept.captures) == [1, 2]


def test_the_atlas_as_a_self_contained_page_and_in_a_notebook(tmp_path):
    import make_atlas_fixture

    at = relattn.load_atlas(make_atlas_fixture.OUT)
    page = at.html(metric="previous_token", order="kv_head")
    assert page.startswith("<!doctype html>") and "tiny-llama" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page, "no external resource"
    assert page.count("<rect") >= 32, "a tile for each of the 4 × 8 heads"
    with pytest.raises(relattn.RelattnError) as e:
        at.html(metric="nonsense")
    assert e.value.field == "metric"
    with pytest.raises(relattn.RelattnError) as e:
        at.html(order="sideways")
    assert e.value.field == "order"
    shown = relattn.show_atlas(str(make_atlas_fixture.OUT))
    assert shown.data.startswith('<iframe class="relattn-atlas" srcdoc="&lt;!doctype html&gt;')


def test_a_bfloat16_model_is_summarised_as_it_runs():
    model = decoder_model("llama").to(torch.bfloat16)
    ids = prompts()
    at = relattn.atlas(model, ids)
    with torch.no_grad():
        probs = [model(input_ids=ids[p:p + 1], output_attentions=True).attentions for p in range(2)]
    for row in range(2):
        want = np.mean([definitions(p[row][0].float().numpy(), True)[0]["previous_token"] for p in probs], axis=0)
        np.testing.assert_allclose(at.metric("previous_token")[row], want, atol=0.02)
    assert any("bfloat16" in note for note in at.description["notes"])
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
