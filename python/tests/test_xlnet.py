"""Transformer-XL's relative attention (relattn's method transformer_xl) against Hugging Face's own: XLNet's
XLNetRelativeAttention.rel_attn_core (the content stream), on tiny random XLNet models built from configs (nothing
downloaded). relattn is given the tensors the module holds and the hidden states it is called with — W_q, W_k, W_v, W_o,
W_R, u, v, s, the segment embeddings and the token types — and makes the sinusoids and rel_shift itself; its weights
equal the module's probabilities and its output the module's attention output (o's projection, before the residual and
the layer norm) within 1e-5. Negative controls break the position term and must miss."""

import numpy as np
import pytest

import relattn

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-5
VOCAB = 64


def xlnet(attn_type="bi", clamp_len=-1, seed=0):
    """A tiny random XLNetModel (two layers, four heads of 8), its weights drawn wide (std 0.3: far from uniform
    attention) and u, v, s and the segment embeddings too (XLNet initialises them at a scale of its own)."""
    torch.manual_seed(seed)
    config = transformers.XLNetConfig(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=48, attn_type=attn_type, clamp_len=clamp_len,
                                      dropout=0.0, initializer_range=0.3)
    model = transformers.XLNetModel(config).eval()
    with torch.no_grad():
        for layer in model.layer:
            a = layer.rel_attn
            for p in (a.r_w_bias, a.r_r_bias, a.r_s_bias, a.seg_embed):
                p.normal_(0.0, 0.5)
    return model


def run(model, layer, ids, mask, types):
    """The module's hidden states h (batch, n, d_model), its attention output (batch, n, d_model) and probabilities
    (batch, heads, n, n) when the model runs on (ids, mask, types): rel_attn_core's attn_vec projected by o, as
    post_attention does before the residual."""
    attn = model.layer[layer].rel_attn
    seen = {}
    core = attn.rel_attn_core

    def recording(*args, **kwargs):
        out = core(*args, **kwargs)
        seen.setdefault("vec", out[0] if isinstance(out, tuple) else out)
        return out

    def hidden(_module, args, _kwargs):
        seen.setdefault("h", args[0])

    pre = attn.register_forward_pre_hook(hidden, with_kwargs=True)
    attn.rel_attn_core = recording
    # transformers' XLNet cannot add a padding mask to its causal one ("uni") for a batch of more than one: no mask
    # without padding.
    mask = mask if bool((mask == 0).any()) else None
    try:
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=mask, token_type_ids=types, output_attentions=True)
    finally:
        pre.remove()
        del attn.rel_attn_core
    output = torch.einsum("ibnd,hnd->bih", seen["vec"], attn.o).detach()
    return seen["h"].permute(1, 0, 2), output, out.attentions[layer]


def tensors(model, layer, h, types):
    """The layer's tensors under relattn's scenario names."""
    a = model.layer[layer].rel_attn
    d, heads, dh = a.q.shape
    flat = lambda w: w.detach().reshape(d, heads * dh).numpy()  # noqa: E731
    given = dict(x=h.numpy(), w_q=flat(a.q), w_k=flat(a.k), w_v=flat(a.v), w_o=flat(a.o).T.copy(), xl_w_r=flat(a.r),
                 xl_u=a.r_w_bias.detach().numpy(), xl_v=a.r_r_bias.detach().numpy(), xl_s=a.r_s_bias.detach().numpy(),
                 xl_seg_embed=a.seg_embed.detach().numpy())
    if types is not None:
        given["segment_ids"] = types.numpy().astype(np.float32)
    return given


def rel(got, want):
    """max |got − want| / max(1, max |want|)."""
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)) / max(1.0, float(np.max(np.abs(want)))))


def inputs(n=11, pad=0, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (2, n), generator=g)
    mask = torch.ones(2, n, dtype=torch.long)
    if pad:
        mask[1, n - pad:] = 0
    types = torch.zeros(2, n, dtype=torch.long)
    types[:, n // 2:] = 1
    types[0, -1] = 2  # XLNet's tokenizer gives <cls> a type of its own
    return ids, mask, types


SETTINGS = {
    "bi": dict(attn_type="bi"),
    "bi-clamped": dict(attn_type="bi", clamp_len=3),
    "uni": dict(attn_type="uni"),
    "uni-clamped": dict(attn_type="uni", clamp_len=4),
}


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("segmented", [True, False])
def test_rel_attn_core_equals_relattn(name, segmented):
    """The module's probabilities and output equal relattn's on the same tensors, bidirectional and causal, clamped
    or not, with the segment term (token types) and without; the attention is peaked."""
    settings = SETTINGS[name]
    model = xlnet(**settings)
    ids, mask, types = inputs()
    types = types if segmented else None
    h, output, probabilities = run(model, 1, ids, mask, types)
    clamp = settings.get("clamp_len", -1)
    options = dict(method="transformer_xl", heads=4, causal=settings["attn_type"] == "uni", clip=clamp if clamp > 0 else ids.shape[1],
                   segments=3 if segmented else 0)
    t = relattn.trace(**tensors(model, 1, h, types), **options)
    assert float(probabilities.max()) > 0.5
    assert rel(t["weights"], probabilities.numpy()) <= TOL, rel(t["weights"], probabilities.numpy())
    assert rel(t["output"], output.numpy()) <= TOL, rel(t["output"], output.numpy())
    assert ("ef" in t) == segmented and "bd" in t and "bd_relative" in t
    # Negative controls: the position term broken (W_R zeroed: no BD; the bias v alone kept), or read in the Music
    # Transformer's direction (W_R's sinusoids of −δ: the sines flip), must miss the module by far.
    d = 32
    broken = {"no W_R": dict(xl_w_r=np.zeros((d, 32), np.float32)),
              "mirrored": dict(xl_w_r=np.concatenate([-tensors(model, 1, h, types)["xl_w_r"][: d // 2], tensors(model, 1, h, types)["xl_w_r"][d // 2:]]))}
    for what, change in broken.items():
        w = relattn.trace(**{**tensors(model, 1, h, types), **change}, **options)["weights"]
        assert rel(w, probabilities.numpy()) > 0.02, (what, rel(w, probabilities.numpy()))


def test_padded_keys_equal_the_module_on_the_tokens():
    """With padding: XLNet lets a padded query attend to itself, relattn masks the padded keys for every query; every
    unpadded query's probabilities and output equal the module's, and the padded keys get no weight."""
    model = xlnet("bi")
    ids, mask, types = inputs(pad=4)
    h, output, probabilities = run(model, 0, ids, mask, types)
    given = {**tensors(model, 0, h, types), "key_mask": mask.numpy().astype(np.float32)}
    t = relattn.trace(**given, method="transformer_xl", heads=4, clip=ids.shape[1], segments=3)
    kept = mask.numpy().astype(bool)
    for b in range(2):
        rows = kept[b]
        assert rel(t["weights"][b][:, rows], probabilities[b].numpy()[:, rows]) <= TOL
        assert rel(t["output"][b][rows], output[b].numpy()[rows]) <= TOL
        assert float(np.abs(t["weights"][b][:, :, ~rows]).max(initial=0.0)) == 0.0
