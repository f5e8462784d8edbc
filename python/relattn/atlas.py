"""The head atlas: every self-attention layer and head of a Hugging Face model, summarised by position.

:func:`atlas` runs the model once per prompt with a hook on every self-attention module of the families
:func:`relattn.capture` supports (T5's encoder and decoder). Each hook takes what its module reads, exactly as
:func:`relattn.capture` does, and hands it to relattn's core, which projects it and summarises every head a block of
query rows at a time (``relattn_core::atlas``: no (layers, heads, n, n) array is ever held); the forward stops after the
last layer's attention, the hooks are removed whatever happens and the model is left as it was. The metrics and
their formulas are in docs/src/atlas.md and in :data:`METRICS`; the file :meth:`Atlas.save` writes is read by
the page and by ``relattn atlas render``.
"""

import warnings

import numpy as _np

from . import _relattn
from ._errors import refuse as _refuse
from .capture import (FAMILIES, Capture, _as_eval, _check_inputs, _held, _input_device, _Inputs, _key_mask, _layer_of, _parts, _precision_note,
                      _Stop, _token_types, _tokens, json_member, write_npz)

#: The metrics of every (layer, head), in the order of :attr:`Atlas.metrics`' first axis (the core's names).
METRICS = tuple(_relattn.atlas_metrics())
#: The token scores, measured on the repeated random sequence.
_TOKEN_SCORES = ("duplicate_token", "induction")
#: The atlas file's format version.
VERSION = 1


class _Located(Exception):
    """Raised instead of running the model: which module a layer's capture would have waited for."""

    def __init__(self, module):
        super().__init__()
        self.module = module


def _locate(module, _run):
    raise _Located(module)


class Atlas:
    """Every (layer, head) of a model summarised by position: ``description`` (the file's JSON: model, family,
    layers, prompts, metrics, …), ``arrays`` (``metrics`` and ``metrics_std`` (M, L, H), ``profile`` and
    ``term`` (L, H, 2N − 1), ``kv_head`` (L, H), RoPE's ``band_q`` and ``band_k`` (L, H, P)) and ``captures``
    (row of ``description["layers"]`` → :class:`relattn.Capture`, the layers asked for whole)."""

    def __init__(self, description, arrays, captures=None):
        self.description, self.arrays, self.captures = description, dict(arrays), dict(captures or {})

    def metric(self, name, std=False):
        """One metric (L, H): its mean over the prompts, or with ``std`` its standard deviation."""
        if name not in METRICS:
            raise _refuse("metric", repr(name), ", ".join(METRICS))
        return self.arrays["metrics_std" if std else "metrics"][METRICS.index(name)]

    def offsets(self):
        """The offsets j − i of ``profile`` and ``term``'s last axis: −(N − 1) .. N − 1."""
        n = self.description["offsets"]
        return _np.arange(-(n - 1), n)

    def sinks(self, threshold=0.3):
        """The share of heads whose first-token score is above ``threshold`` (Gu et al. 2025's 0.3), per layer."""
        return (self.metric("first_token") > threshold).mean(axis=1)

    def save(self, path):
        """Writes the atlas to ``path`` (.npz, docs/src/atlas.md's format): nothing half-written, as
        :meth:`relattn.Capture.save`."""
        return write_npz(path, self.members())

    def html(self, metric="first_token", order="head", width=1200):
        """The atlas as one self-contained HTML page (the grid of layer × head tiles coloured by ``metric``, with
        tooltips; what ``relattn atlas render --out x.html`` writes and the page exports): a str."""
        import io

        buf = io.BytesIO()
        _np.savez(buf, **self.members())
        return _relattn.atlas_html(buf.getvalue(), metric, order, width)

    def members(self):
        """The file's members: ``atlas`` (the description as UTF-8 JSON), the arrays, the held layers' captures."""
        members = {"atlas": json_member(self.description), **self.arrays}
        for row, cap in self.captures.items():
            members.update({f"layer{row}.{name}": a for name, a in cap.members().items()})
        return members

    def __repr__(self):
        d = self.description
        m, layers, heads = self.arrays["metrics"].shape
        return f"Atlas({d['model']}: {layers} layers × {heads} heads, {len(d['prompts'])} prompts, {m} metrics)"


def load(path):
    """An :class:`Atlas` read back from a file :meth:`Atlas.save` wrote."""
    import json

    with _np.load(path, allow_pickle=False) as f:
        names = list(f.keys())
        if "atlas" not in names:
            raise _refuse("path", repr(str(path)), "an atlas file (relattn.atlas(...).save): it has no member 'atlas'")
        description = json.loads(bytes(f["atlas"]).decode("utf-8"))
        arrays = {k: f[k] for k in names if k != "atlas" and not k.startswith("layer")}
        captures = {}
        for row in description.get("captured", []):
            prefix = f"layer{row}."
            members = {k[len(prefix):]: f[k] for k in names if k.startswith(prefix)}
            about = json.loads(bytes(members.pop("capture")).decode("utf-8"))
            captures[row] = Capture(model=about["model"], family=about["family"], layer=about["layer"], part=about["part"], options=about["options"],
                                    arrays=members, tokens=about["tokens"] or None, notes=about["notes"])
    return Atlas(description, arrays, captures)


def _prompt_inputs(model, prompts, attention_mask, tokenizer):
    """The prompts as a list of (input_ids (1, n), attention_mask or None, extra keywords): each row of a (batch,
    n) tensor (with ``attention_mask``'s row), each tensor of a list, each string of a list (or one string) as
    ``tokenizer`` encodes it."""
    import torch

    if isinstance(prompts, str):
        prompts = [prompts]
    if isinstance(prompts, torch.Tensor):
        _check_inputs(model, prompts, attention_mask)
        rows = [(prompts[b:b + 1], None if attention_mask is None else attention_mask[b:b + 1]) for b in range(prompts.shape[0])]
        return [(ids, mask, {}) for ids, mask in rows]
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise _refuse("prompts", type(prompts).__name__, "token ids (a (batch, n) tensor), a list of them, or strings with tokenizer=")
    if attention_mask is not None:
        raise _refuse("attention_mask", "a mask beside a list of prompts", "None (a list's prompts are unpadded), or one (batch, n) tensor of prompts")
    out = []
    for k, p in enumerate(prompts):
        if isinstance(p, str):
            if tokenizer is None:
                raise _refuse("tokenizer", "None", f"the model's tokenizer, to encode prompt {k} (a string)")
            enc = tokenizer(p, return_tensors="pt")
            ids = enc["input_ids"]
            extra = _token_types(model, enc.get("token_type_ids"), ids, model.config.model_type)
            _check_inputs(model, ids, enc.get("attention_mask"))
            out.append((ids, enc.get("attention_mask"), extra))
        elif isinstance(p, torch.Tensor):
            ids = p if p.dim() == 2 else p.reshape(1, -1)
            _check_inputs(model, ids, None)
            out.extend((ids[b:b + 1], None, {}) for b in range(ids.shape[0]))
        else:
            raise _refuse(f"prompts[{k}]", type(p).__name__, "a string (with tokenizer=) or a tensor of token ids")
    return out


def _induction_ids(model, length, seed):
    """The repeated random sequence the token scores are measured on: ``length // 2`` ids drawn uniformly from
    the vocabulary (seeded), twice."""
    import torch

    from .capture import _vocab

    vocab = _vocab(model) or 2
    half = torch.randint(0, vocab, (1, length // 2), generator=torch.Generator().manual_seed(seed))
    return torch.cat([half, half], dim=1)


def _run(model, family, parts, located, inputs, threads, keep):
    """One forward over ``inputs`` with a hook on every located module: each summarises its layer's heads
    (the core's ``atlas``) as it is reached, and the forward stops after the last. Returns per row of
    ``located`` (summaries, options, the widths of W_q and W_k) and the captures of the rows in ``keep``."""
    import threading

    import torch

    me = threading.get_ident()
    index = {id(module): row for row, (_, _, module) in enumerate(located)}
    got, captures = {}, {}

    def hook(module, args, kwargs):
        if threading.get_ident() != me:
            return None
        row = index[id(module)]
        part, layer, _ = located[row]
        ids, mask, options, arrays, notes = _layer_of(model, family, layer, part, inputs, lambda _m, _r: (args, kwargs))
        if mask is not None:
            arrays["key_mask"] = _key_mask(mask)
        summaries = _relattn.atlas({**options, "threads": threads}, arrays, _np.ascontiguousarray(ids.cpu().numpy().astype(_np.int64)))
        widths = {"q": arrays["w_q"].shape[1], "k": arrays["w_k"].shape[1]}
        got[row] = (summaries, options, widths)
        if row in keep:
            captures[row] = (options, dict(arrays), notes, ids)
        if len(got) == len(located):
            raise _Stop
        return None

    handles = [module.register_forward_pre_hook(hook, with_kwargs=True) for _, _, module in located]
    try:
        with torch.no_grad():
            if family in ("t5", "mt5", "umt5") and "decoder" in parts:
                model(input_ids=inputs.input_ids, attention_mask=inputs.attention_mask, decoder_input_ids=inputs.decoder_input_ids)
            elif family in ("t5", "mt5", "umt5"):
                (model.encoder if hasattr(model, "encoder") else model)(input_ids=inputs.input_ids, attention_mask=inputs.attention_mask)
            else:
                model(input_ids=inputs.input_ids, attention_mask=inputs.attention_mask, **inputs.extra)
    except _Stop:
        pass
    finally:
        for h in handles:
            h.remove()
    if len(got) != len(located):
        missing = [f"{located[r][0]} layer {located[r][1]}" for r in range(len(located)) if r not in got]
        raise _refuse("model", f"a forward that never reached {', '.join(missing)}", "a model whose forward runs every self-attention layer")
    return got, captures


def _locate_layers(model, family, parts, inputs):
    """(part, layer, attention module) of every self-attention layer, in forward order."""
    from ._relattn import RelattnError

    located = []
    for part in parts:
        layer = 0
        while True:
            try:
                _layer_of(model, family, layer, part, inputs, _locate)
            except _Located as found:
                located.append((part, layer, found.module))
                layer += 1
                continue
            except RelattnError as e:
                if e.field == "layer" and layer > 0:
                    break
                raise
    return located


def atlas(model, prompts, *, attention_mask=None, tokenizer=None, layers=(), induction_length=64, seed=0, threads=None):
    """Every self-attention layer and head of ``model`` summarised by position over ``prompts``, an :class:`Atlas`.

    ``model``: a ``transformers`` model of one of :data:`relattn.FAMILIES`, in any floating type on any device
    (as :func:`relattn.capture`: each layer's tensors are read as float32 on the CPU). ``prompts``: token ids, a (batch, n) tensor whose rows are the prompts (with
    ``attention_mask``: 1 token, 0 padding), a list of such tensors, or strings (a list, or one) with
    ``tokenizer``. T5's decoder reads each prompt shifted right (``model._shift_right``), as in teacher forcing.
    ``layers``: rows of the atlas (the forward order of its layers: T5's encoder first) whose whole capture the
    atlas keeps, on the first prompt (for the page's click through to a head's stages). The duplicate-token and
    induction scores are measured on a repeated random sequence of ``induction_length`` tokens (``seed``).
    ``threads``: the core's threads (default: one a core).
    """
    config = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family not in FAMILIES:
        raise _refuse("model", f"model type {family!r}" if family else type(model).__name__, f"a transformers model of type {', '.join(FAMILIES)}")
    if isinstance(induction_length, bool) or not isinstance(induction_length, int) or not 4 <= induction_length <= 4096:
        raise _refuse("induction_length", repr(induction_length), "a whole number from 4 to 4096 (two copies of half as many random tokens)")
    runs = _prompt_inputs(model, prompts, attention_mask, tokenizer)
    parts = _parts(family)
    t5 = family in ("t5", "mt5", "umt5")
    if t5 and not hasattr(model, "decoder"):
        parts = ("encoder",)

    def inputs_of(ids, mask, extra):
        dec = model._shift_right(ids) if t5 and "decoder" in parts else None
        return _Inputs(ids, mask, dec, None, extra).to(device)

    device = _input_device(model)
    first = inputs_of(*runs[0])
    with _held(model), _as_eval(model) as training:
        located = _locate_layers(model, family, parts, first)
        keep = set(layers)
        bad = [r for r in keep if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < len(located)]
        if bad:
            raise _refuse("layers", repr(bad[0]), f"rows 0 to {len(located) - 1} of the atlas ({len(located)} self-attention layers)")
        per_prompt, captures = [], {}
        for k, run in enumerate(runs):
            got, caught = _run(model, family, parts, located, inputs_of(*run), threads, keep if k == 0 else set())
            per_prompt.append(got)
            captures.update(caught)
        ids = _induction_ids(model, induction_length, seed)
        induction, _ = _run(model, family, parts, located, inputs_of(ids, None, {}), threads, set())
    return _assemble(model, family, located, runs, per_prompt, induction, captures, tokenizer, training, induction_length, seed)


def _assemble(model, family, located, runs, per_prompt, induction, captures, tokenizer, training, induction_length, seed):
    """The :class:`Atlas` of the per-prompt summaries: the metrics' mean and spread over the prompts, the
    profile and term summed over the prompts by offset (each prompt's offsets centred on 0), the token scores
    of the induction run."""
    width = max(run[0].shape[1] for run in runs)
    heads = per_prompt[0][0][0]["metrics"].shape[1]
    n_layers = len(located)
    metrics = _np.stack([_np.stack([got[r][0]["metrics"][0] for r in range(n_layers)]) for got in per_prompt])  # (P, L, H, M)
    token_rows = [METRICS.index(m) for m in _TOKEN_SCORES]
    with warnings.catch_warnings():  # a metric undefined in every prompt stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, std = _np.nanmean(metrics, axis=0), _np.nanstd(metrics, axis=0)
    measured = _np.stack([induction[r][0]["metrics"][0] for r in range(n_layers)])
    mean[..., token_rows] = measured[..., token_rows]
    std[..., token_rows] = 0.0
    sums = {name: _np.zeros((n_layers, heads, 2 * width - 1)) for name in ("offset_weight", "offset_queries", "offset_term")}
    for got in per_prompt:
        for r in range(n_layers):
            s = got[r][0]
            n = (s["offset_weight"].shape[-1] + 1) // 2
            for name in sums:
                sums[name][r, :, width - n:width + n - 1] += s[name][0]
    with _np.errstate(invalid="ignore", divide="ignore"):
        seen = sums["offset_queries"]
        profile = _np.where(seen > 0, sums["offset_weight"] / seen, _np.nan)
        term = _np.where(seen > 0, sums["offset_term"] / seen, _np.nan)
    arrays = {"metrics": _np.moveaxis(mean, -1, 0).astype(_np.float32), "metrics_std": _np.moveaxis(std, -1, 0).astype(_np.float32),
              "profile": profile.astype(_np.float32), "term": term.astype(_np.float32)}
    kv_heads, layer_rows = [], []
    for r, (part, layer, _) in enumerate(located):
        summary, options, widths = per_prompt[0][r]
        kv = widths["k"] // (widths["q"] // options["heads"])
        kv_heads.append(kv)
        layer_rows.append({"part": part, "layer": layer, "method": options["method"], "heads": options["heads"], "kv_heads": kv,
                           "causal": bool(options.get("causal", False)), **{k: options[k] for k in ("window", "chunk") if options.get(k)}})
    arrays["kv_head"] = _np.array([[h // (heads // kv) for h in range(heads)] for kv in kv_heads], dtype=_np.float32)
    bands = max(got[r][0]["band_q"].shape[-1] for got in per_prompt for r in range(n_layers))
    if bands:
        for name in ("band_q", "band_k"):
            out = _np.full((n_layers, heads, bands), _np.nan)
            for r in range(n_layers):
                per = [got[r][0][name][0] for got in per_prompt if got[r][0][name].shape[-1] == bands]
                if per:
                    out[r] = _np.mean(per, axis=0)
            arrays[name] = out.astype(_np.float32)
    name = getattr(model.config, "name_or_path", "") or type(model).__name__
    notes = ["duplicate_token and induction are measured on a repeated random sequence, not on the prompts."]
    if family in ("t5", "mt5", "umt5") and any(p == "decoder" for p, _, _ in located):
        notes.append("T5's decoder read each prompt shifted right (teacher forcing).")
    precision = _precision_note(model)
    if precision:
        notes.append(precision)
    if training:
        notes.append("The model was in training mode: summarised as eval() computes (dropout off); the model is left in training mode.")
    prompts = [{"n": int(ids.shape[1]), "tokens": _tokens(tokenizer, ids)[0] if tokenizer is not None else None} for ids, _, _ in runs]
    description = {"format": "relattn atlas", "version": VERSION, "model": name, "family": family, "layers": layer_rows, "metrics": list(METRICS),
                   "prompts": prompts, "induction": {"n": induction_length // 2 * 2, "seed": seed}, "offsets": width,
                   "captured": sorted(captures), "notes": notes}
    held = {}
    for row, (options, arrays_of, cap_notes, ids) in captures.items():
        part, layer, _ = located[row]
        tokens = None if tokenizer is None else _tokens(tokenizer, ids)
        held[row] = Capture(model=name, family=family, layer=layer, part=part, options=options, arrays=arrays_of, tokens=tokens, notes=cap_notes)
    return Atlas(description, arrays, held)


def show_atlas(atlas, metric="first_token", order="head", width=1200):
    """Shows an :class:`Atlas` (or the path of an atlas file) in a notebook: its self-contained HTML page
    (:meth:`Atlas.html`) in a frame of its own, tooltips working; returns the IPython display object."""
    import html as _html

    from IPython.display import HTML

    if not isinstance(atlas, Atlas):
        atlas = load(atlas)
    page = atlas.html(metric, order, width)
    heads, layers = atlas.arrays["metrics"].shape[2], atlas.arrays["metrics"].shape[1]
    height = 160 + layers * max(60, width // max(heads, 1) * 3 // 5)
    frame = f'<iframe class="relattn-atlas" srcdoc="{_html.escape(page, quote=True)}" style="width: 100%; height: {height}px; border: 0"></iframe>'
    with warnings.catch_warnings():  # IPython suggests IFrame, which needs a file or a server: srcdoc needs neither
        warnings.simplefilter("ignore", UserWarning)
        return HTML(frame)
