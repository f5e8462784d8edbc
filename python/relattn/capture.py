"""Capture one self-attention layer of a Hugging Face ``transformers`` model as relattn's layer.

:func:`capture` runs the model once on the given inputs, up to the layer asked for, and takes what that layer's
self-attention module reads: its input hidden states (after the layer norm before it), its projections with
their biases and its position scheme's own parameters as the model computes them. The result, a
:class:`Capture`, gives relattn's trace of the layer (every stage, as :func:`relattn.trace`), whose weights
equal the module's own attention probabilities (``output_attentions=True``, eager attention) and whose output
equals the module's (python/tests/test_capture.py proves it for every family on tiny random models).

Families, and what each one's capture takes from the model:

- **T5, mT5, Flan-T5** (``t5``, ``mt5``): T5's bias per bucket and head (``relative_attention_bias``, owned by
  the stack's first layer and shared by every layer), T5's buckets and maximum distance, logits not scaled by
  1/√d_head (T5 folds it into W_q's initialisation); the encoder bidirectional, the decoder's self-attention
  causal (``part="decoder"``). **UMT5** (``umt5``): the same with a bias table in every layer. Cross-attention
  has no position term and is not a self-attention layer: refused.
- **Llama, Mistral, Qwen2, Gemma** (``llama``, ``mistral``, ``qwen2``, ``gemma``): rotary in the half-split
  layout with the model's own cos and sin (whatever its ``rope_scaling``: linear, dynamic NTK, YaRN, Llama 3,
  with the attention scaling they carry), grouped K/V heads (``num_key_value_heads``), Qwen2's biases.
- **GPT-NeoX, Pythia** (``gpt_neox``): rotary, half-split, on the first ``rotary_pct`` of each head; Q, K and V
  from one fused projection, split per head as the model does.
- **GPT-J** (``gptj``): rotary, interleaved (``rotate_every_two``), on the first ``rotary_dim`` components.
- **GPT-2, OPT, BERT** (``gpt2``, ``opt``, ``bert``): learned absolute positions, which the model adds to the token
  embedding before its first layer: every layer's x already holds them, so the capture's x is the attention's
  own input and its ``positions`` (the model's table, rows 0..n: GPT-2's ``wpe``, OPT's ``embed_positions``
  past its offset of 2, BERT's ``position_embeddings``) are shown, not added again (``positions_in_x``).
  GPT-2's Conv1D weights are stored (in, out) and its Q, K, V fused; OPT multiplies q by 1/√d_head before the
  product, the same logits; BERT's attention output is the dense projection before its residual and layer norm.
- **BERT with relative positions** (``bert`` whose ``position_embedding_type`` is ``relative_key`` or
  ``relative_key_query``, transformers 4.x: 5.x removed them): no absolute positions in x; each layer's own
  ``distance_embedding`` (2P − 1, d_head), P = ``max_position_embeddings``, shared by its heads and read at
  i − j + P − 1 (method ``bert_relative``, ``bert_terms`` key or key_query); at most P tokens, as the model.
- **BLOOM** (``bloom``): ALiBi's slopes as the model builds them. BLOOM adds slope × key position (m_h·j) to
  the logits where the paper adds −m_h·(i − j) = m_h·(j − i); the two differ by m_h·i, the same for every key
  of a query, which the softmax takes away: the weights are equal, the logits differ by a constant per row.
  BLOOM's attention module also adds its residual to its output; the capture's output is the attention alone.
- **Falcon** (``falcon``): with ALiBi (Falcon-RW), BLOOM's slopes scaled by 1/√d_head, as Falcon adds them:
  transformers folds m_h·j/√d_head into the attention mask, and its eager path adds (q·k + m_h·j)/√d_head on top,
  so eager attention applies the bias twice (slopes 2·m_h/√d_head) where SDPA applies it once; the capture takes
  the slopes of the path the model runs, read off the module's own inputs; with rotary (Falcon 7B/40B),
  half-split, the model's cos and sin. Its three fused Q/K/V layouts (one K/V head per query head, one shared
  K/V head (``multi_query``), grouped K/V heads (``new_decoder_architecture``)) are split as the model splits them.
- **DeepSeek-V2, V3** (``deepseek_v2``, ``deepseek_v3``): multi-head latent attention, whose x is the module's
  latents side by side, [c_Q | c_KV | k_R], with W_q, W_k, W_v reading their own column ranges; heads of
  ``qk_nope_head_dim + qk_rope_head_dim`` query/key components (the rotary ones first) and ``v_head_dim`` values.
- **DeBERTa-v2, v3** (``deberta-v2``): disentangled attention, bidirectional: content to position (c2p) and
  position to content (p2c) terms of the relative embeddings E (the encoder's ``rel_embeddings``, layer-normed
  where ``norm_rel_ebd`` says so, as the module is given them), projected per head by the key and query
  projections (``share_att_key``) or by ``pos_key_proj`` and ``pos_query_proj``, with their biases:
  ``deberta_k_r`` and ``deberta_q_r`` (heads, 2S, d_head); δ = i − j log-bucketed (``position_buckets``,
  ``max_relative_positions``) or clipped, logits scaled by 1/√(d_head·(1 + terms)). The output is the attention's
  dense projection, before the residual and the layer norm. DeBERTa masks padded queries too (their rows get
  uniform weights over every key, outputs the model discards); relattn's key mask leaves them attending.
- **XLNet** (``xlnet``): Transformer-XL's relative attention, the content stream of a layer (its query stream g,
  XLNet's pretraining with ``target_mapping``, and memories ``mems`` are refused by name): the biases u, v, s
  (``xl_u``, ``xl_v``, ``xl_s``: ``r_w_bias``, ``r_r_bias``, ``r_s_bias``), W_R (``xl_w_r``: ``r``), the segment
  embeddings (``xl_seg_embed``) and, with ``token_type_ids``, the segment ids (``segment_ids``); relattn makes the
  sinusoids itself (XLNet's ``relative_positional_encoding``), clamped at ``clamp_len`` (``clip``; n without it);
  ``attn_type`` "uni" is causal, "bi" not. q, k, v and o have no biases; the output is ``o``'s projection before
  the residual and the layer norm. XLNet lets a padded query attend to itself (outputs the model discards);
  relattn's key mask leaves it attending to the tokens.
- **MPT** (``mpt``): ALiBi with the slopes MPT's module adds, read off its input (transformers builds them with
  ``alibi_bias_max`` 8 whatever the config says), added as m_h·(j − (L − 1)) for the model's longest length L; it differs from the paper's m_h·(j − i) by a constant per row: equal weights. Q, K and V
  are the fused projection's three thirds.
"""

import contextlib
import threading
import weakref

import numpy as _np

from ._errors import refuse as _refuse

#: The model types (``model.config.model_type``) :func:`capture` knows.
FAMILIES = ("t5", "mt5", "umt5", "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2", "phi3", "gpt_oss",
            "llama4_text", "modernbert", "deepseek_v2", "deepseek_v3", "gpt_neox", "gptj", "bloom", "falcon", "mpt", "gpt2", "opt", "bert", "deberta-v2", "xlnet")


class _Stop(Exception):
    """Raised by the capture's hook once it has what the layer reads: the rest of the forward is not run."""


class Capture:
    """One self-attention layer of a model, as relattn's layer: ``options`` (relattn's keyword options),
    ``arrays`` (the layer's tensors by relattn's names), ``tokens`` (the model's tokens, when a tokenizer was
    given), ``model`` (its name), ``family`` (its model type), ``layer``, ``part`` ("encoder" or "decoder"
    for T5, else "decoder") and ``notes`` (what the family does that relattn's reader should know)."""

    def __init__(self, *, model, family, layer, part, options, arrays, tokens, notes):
        self.model, self.family, self.layer, self.part = model, family, layer, part
        self.options, self.arrays, self.tokens, self.notes = dict(options), dict(arrays), tokens, tuple(notes)
        self._held = None

    def on_demand(self):
        """The layer held on demand (a :class:`relattn.Layer`), made once: for a model's layer at a length whose
        whole trace would not fit (``capture.stage(...)`` reads it)."""
        from . import layer

        if self._held is None:
            self._held = layer(**self.options, **self.arrays)
        return self._held

    def stage(self, name, head=0, batch=0):
        """One stage of one (batch, head), computed on demand (:meth:`on_demand`): memory O(n·d_model) beside it."""
        return self.on_demand().stage(name, batch, head)

    def trace(self, threads=None):
        """Every stage of the layer, as :func:`relattn.trace` gives them."""
        from . import trace

        return trace(**self.options, **self.arrays, threads=threads)

    def attention(self, threads=None):
        """The layer's output (b, n, d_model) alone, by relattn's fused forward."""
        from . import attention

        return attention(**self.options, **self.arrays, threads=threads)

    def title(self):
        """The layer in one line: "meta-llama/Llama-3.2-1B, decoder layer 3" (as the command line and the page title it)."""
        return f"{self.model}, {self.part} layer {self.layer}"

    def description(self):
        """What ``save`` writes beside the arrays (docs/src/capture.md): the options, the model, its family, the
        part, the layer, the tokens and the notes."""
        return {"options": self.options, "model": self.model, "family": self.family, "part": self.part, "layer": self.layer,
                "tokens": self.tokens or [], "notes": list(self.notes)}

    def save(self, path):
        """Writes the layer to ``path`` (.npz): its arrays by relattn's names and its description (the member
        ``capture``, JSON as uint8), which ``relattn compute --tensors``, ``relattn render --tensors`` and the
        page read; written as :func:`write_npz` writes (nothing half-written)."""
        return write_npz(path, self.members())

    def members(self):
        """The file's members: the arrays by relattn's names and ``capture``, the description as UTF-8 JSON."""
        return {**self.arrays, "capture": json_member(self.description())}

    def __repr__(self):
        b, n, d = self.arrays["x"].shape
        out = self.arrays["w_o"].shape[1] if "w_o" in self.arrays else d
        # A layer whose x is not the model's width (DeepSeek's latents) says both.
        width = f"d_model {d}" if out == d else f"x of {d} (the latents), d_model {out}"
        return f"Capture({self.model}, {self.part} layer {self.layer}: {self.options['method']}, {self.options['heads']} heads, batch {b}, n {n}, {width})"


def json_member(value):
    """``value`` as a file's JSON member: its UTF-8 JSON as a uint8 array (as the crate reads descriptions)."""
    import json

    return _np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=_np.uint8)


def write_npz(path, members):
    """Writes ``members`` (name → array) to ``path`` (.npz, in an existing folder; a str, bytes or os.PathLike
    name, refused by name otherwise): to a temporary file beside it, renamed over it once complete, so that a
    refused or interrupted save leaves nothing half-written; the file keeps the mode of the one it replaces, or
    gets what open() would give it. Returns the path as a str."""
    import os
    import tempfile

    try:
        path = os.fsdecode(os.fspath(path))  # a str, bytes or os.PathLike path
    except TypeError:
        raise _refuse("path", type(path).__name__, "a file name (str, bytes or a pathlib.Path) ending in .npz") from None
    if not path.endswith(".npz"):
        raise _refuse("path", repr(path), "a file name ending in .npz")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _refuse("path", repr(path), "a file in an existing folder")
    fd, tmp = tempfile.mkstemp(suffix=".npz.part", dir=folder)
    try:
        # mkstemp's file is 0600: the file keeps the mode of the one it replaces, or a new one gets what
        # open() would give it (0666 less the umask).
        os.chmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as f:
            _np.savez(f, **members)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _umask():
    """The process's umask: read from /proc where Linux gives it, else set and put back at once."""
    import os

    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path):
    """The permission bits a save gives ``path``: those of the regular file it replaces, else 0666 & ~umask."""
    import os
    import stat

    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    return 0o666 & ~_umask()


def _np32(t):
    """A tensor's values as a float32 NumPy array (refusing half precision and GPU tensors by name elsewhere)."""
    return t.detach().to("cpu").float().numpy().astype(_np.float32, copy=False)


def _linear(lin, rows=None):
    """(W, b) of an ``nn.Linear`` as relattn multiplies them, x W + b: its weight (out, in) transposed (by torch,
    whose transposing copy is about 3× NumPy's), rows ``rows`` of the output only (a fused projection's part),
    the bias or None."""
    w = lin.weight.detach()
    b = lin.bias.detach() if lin.bias is not None else None
    if rows is not None:
        w, b = w[rows], (b[rows] if b is not None else None)
    return _np32(w.t().contiguous()), (_np32(b) if b is not None else None)


def _layer_arrays(args, kwargs, projections, **own):
    """A layer's arrays by relattn's names: ``x`` (what the attention module reads, from its ``args`` and
    ``kwargs``), ``w_q`` … ``w_o`` of its four ``projections`` ((W, b) of Q, K, V and the output), the family's
    ``own`` arrays (its rotary, slopes, positions …), and the biases the module has."""
    arrays = {"x": _np32(_hidden(args, kwargs)), **{f"w_{part}": w for part, (w, _) in zip("qkvo", projections)}, **own}
    arrays.update({f"b_{part}": b for part, (_, b) in zip("qkvo", projections) if b is not None})
    return arrays


def _rotary_arrays(cos, sin, pairs=None):
    """RoPE's ``rope_cos`` and ``rope_sin`` of positions 0..n from the cos and sin the module is given (the same for
    every sequence), their first ``pairs`` columns (every one when None)."""
    return {"rope_cos": _np32(_same_for_the_batch(cos, "position_ids")[:, :pairs]),
            "rope_sin": _np32(_same_for_the_batch(sin, "position_ids")[:, :pairs])}


def _fused_parts(lin, heads, head_dim, parts):
    """Q, K and V of a fused projection whose output is laid out per head as (heads, parts, head_dim) — GPT-NeoX's
    ``query_key_value`` viewed as (…, heads, 3·head_dim) and chunked, BLOOM's as (…, heads, 3, head_dim): the
    same layout — as three (W, b)."""
    import torch

    index = torch.arange(heads * parts * head_dim).view(heads, parts, head_dim)
    return [_linear(lin, index[:, p, :].reshape(-1)) for p in range(parts)]


def _layers(model, *paths):
    """The first of ``paths`` (dotted attribute paths to a layer list) the model has."""
    for path in paths:
        obj = model
        try:
            for name in path.split("."):
                obj = getattr(obj, name)
        except AttributeError:
            continue
        return obj
    raise _refuse("model", type(model).__name__, f"a model with its layers at one of {', '.join(paths)}")


def _pick(layers, layer, what):
    """Layer ``layer`` of ``layers``, refused by name when out of range."""
    if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer < len(layers):
        raise _refuse("layer", repr(layer), f"0 to {len(layers) - 1} ({len(layers)} {what} layers)")
    return layers[layer]


def _run_to(module, run):
    """Runs ``run()`` until ``module`` is called; returns its (args, kwargs)."""
    import torch

    seen = {}
    me = threading.get_ident()

    def hook(_module, args, kwargs):
        if threading.get_ident() != me:  # another thread's forward through the same module: not this capture's
            return None
        seen["args"], seen["kwargs"] = args, kwargs
        raise _Stop

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            run()
    except _Stop:
        pass
    finally:
        handle.remove()
    if "args" not in seen:
        raise _refuse("layer", "not reached", "a layer the model's forward runs on these inputs")
    return seen["args"], seen["kwargs"]


def _hidden(args, kwargs):
    """The hidden states an attention module was called with."""
    return kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]


def _same_for_the_batch(t, name):
    """Row 0 of a per-batch table (positions of every sequence), refusing one that differs across the batch."""
    import torch

    if t.shape[0] > 1 and not torch.equal(t, t[:1].expand_as(t)):
        raise _refuse(name, "positions that differ across the batch (left padding?)", "the same positions 0..n for every sequence (right padding)")
    return t[0]


def _input_device(model):
    """Where the model reads its token ids: its input embedding's device (its first parameter's without one; the
    CPU for a model with no parameters)."""
    try:
        return model.get_input_embeddings().weight.device
    except (AttributeError, NotImplementedError, TypeError):
        first = next(iter(model.parameters()), None)
        return None if first is None else first.device


def _check_device(t, field, model):
    """Refuses an input tensor that is neither on the CPU nor on the model's input device, by ``field``."""
    device = _input_device(model)
    if t.device.type != "cpu" and t.device != device:
        raise _refuse(field, f"on {t.device}", f"a tensor on the CPU or on the model's input device ({device})")


def _check_ids(model, ids, field, vocab):
    """Refuses token ids that are not a (batch, n) integer tensor (on the CPU or the model's input device) with
    batch, n ≥ 1 and every id in 0..vocab − 1, by ``field``."""
    import torch

    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in (torch.int64, torch.int32):
        given = f"shape {tuple(ids.shape)}, {ids.dtype}" if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise _refuse(field, given, "a (batch, n) integer tensor, as a tokenizer's return_tensors='pt' gives")
    _check_device(ids, field, model)
    if 0 in ids.shape:
        raise _refuse(field, f"shape {tuple(ids.shape)}", "(batch, n) with batch ≥ 1 and n ≥ 1")
    lo, hi = int(ids.min()), int(ids.max())
    if vocab is not None and (lo < 0 or hi >= vocab):
        raise _refuse(field, f"ids from {lo} to {hi}", f"ids in 0..={vocab - 1} (the model's vocabulary of {vocab})")


def _check_mask(model, mask, ids, field, ids_field):
    """Refuses a padding mask that is not a tensor of ``ids``' shape holding 0 and 1 only, by ``field``."""
    import torch

    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(ids.shape):
        shape = f"shape {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise _refuse(field, shape, f"a tensor of {ids_field}' shape {tuple(ids.shape)} (1 = token, 0 = padding)")
    _check_device(mask, field, model)
    if mask.is_complex() or not bool(((mask == 0) | (mask == 1)).all()):
        bad = mask[~((mask == 0) | (mask == 1))].flatten()[0].item() if not mask.is_complex() else "complex values"
        raise _refuse(field, f"a value {bad}", "0 (padding) and 1 (token) only")


def _vocab(model):
    """The number of rows of the model's input embedding (its ids' range), or None when it has none to read."""
    try:
        emb = model.get_input_embeddings()
        return int(emb.num_embeddings)
    except (AttributeError, NotImplementedError, TypeError):
        size = getattr(getattr(model, "config", None), "vocab_size", None)
        return size if isinstance(size, int) else None


def _check_inputs(model, input_ids, attention_mask):
    """Refuses what relattn cannot take from the model or the inputs, by name: a parameter not loaded (on the meta
    device: found wherever it is) or not floating point (a quantized model), the ids and the mask. The model may
    be in any floating type on any device: only the captured layer's tensors are read, as float32 on the CPU."""
    params = list(model.parameters())
    unloaded = sorted({p.device.type for p in params if p.device.type == "meta"})
    if unloaded:
        raise _refuse("model", "parameters on the meta device (not loaded)", "a model whose parameters are loaded, on the CPU or a GPU")
    dtypes = sorted({str(p.dtype) for p in params if not p.dtype.is_floating_point})
    if dtypes:
        raise _refuse("model", f"parameters in {', '.join(dtypes)}", "floating-point parameters (float32, bfloat16, float16): a quantized model is not captured")
    _check_ids(model, input_ids, "input_ids", _vocab(model))
    _check_mask(model, attention_mask, input_ids, "attention_mask", "input_ids")


def _precision_note(model):
    """What relattn's reader should know of a model not in float32 on the CPU, or None."""
    params = list(model.parameters())
    dtypes = sorted({str(p.dtype).replace("torch.", "") for p in params})
    devices = sorted({str(p.device) for p in params})
    if dtypes == ["float32"] and devices == ["cpu"]:
        return None
    return (f"The model runs in {', '.join(dtypes)} on {', '.join(devices)}; the layer's tensors were read as float32 on the CPU and relattn "
            f"computes in float32: its weights differ from the module's by the module's own rounding.")


def _key_mask(mask):
    return None if mask is None else _np32(mask)


def _t5(model, layer, part, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, reach):
    """T5, mT5, UMT5: the encoder's or the decoder's self-attention of block ``layer``."""
    config = model.config
    stack = getattr(model, part, None) if part == "decoder" or hasattr(model, "encoder") else model
    if stack is None:
        raise _refuse("part", "'decoder'", "'encoder': this model has no decoder")
    blocks = stack.block
    attn = _pick(blocks, layer, part).layer[0].SelfAttention
    if part == "encoder":
        ids, mask = input_ids, attention_mask
        args, kwargs = reach(attn, lambda: stack(input_ids=input_ids, attention_mask=attention_mask))
    else:
        if decoder_input_ids is None:
            raise _refuse("decoder_input_ids", "None", "the decoder's (batch, n) token ids, for part='decoder'")
        _check_ids(model, decoder_input_ids, "decoder_input_ids", _vocab(model))
        _check_mask(model, decoder_attention_mask, decoder_input_ids, "decoder_attention_mask", "decoder_input_ids")
        ids, mask = decoder_input_ids, decoder_attention_mask
        args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                                                   decoder_attention_mask=decoder_attention_mask))
    owner = attn if config.model_type == "umt5" else blocks[0].layer[0].SelfAttention
    arrays = _layer_arrays(args, kwargs, (_linear(attn.q), _linear(attn.k), _linear(attn.v), _linear(attn.o)),
                           t5_bias=_np32(owner.relative_attention_bias.weight))
    options = {"method": "t5", "heads": config.num_heads, "causal": part == "decoder", "logit_scale": "none",
               "t5_buckets": config.relative_attention_num_buckets, "t5_max_distance": config.relative_attention_max_distance}
    notes = ["T5's logits are not scaled by 1/√d_head: its initialisation of W_q carries the factor.",
             "The bias per bucket and head is owned by the stack's first layer and shared by every layer." if config.model_type != "umt5"
             else "UMT5: every layer has a bias table of its own.",
             "The decoder's self-attention is causal and sorts only j − i ≤ 0 into buckets." if part == "decoder"
             else "The encoder is bidirectional: half the buckets for keys before the query, half after."]
    return ids, mask, options, arrays, notes


#: What each rotary family's attention module holds besides o_proj and the rotary: its projections (q_proj, k_proj
#: and v_proj, or Phi-3's fused qkv_proj), its q/k norms (Qwen3's and Gemma 3's per head, OLMo 2's over the whole
#: projection), gpt-oss's sinks.
_ROTARY_EXTRAS = {"qwen3": ("q_norm", "k_norm"), "qwen3_moe": ("q_norm", "k_norm"), "gemma3_text": ("q_norm", "k_norm"),
                  "olmo2": ("q_norm", "k_norm"), "gpt_oss": ("sinks",)}
_PROJECTIONS = {"phi3": ("qkv_proj",)}


def _norm(norm, family):
    """An RMS norm's γ as relattn multiplies it (Gemma 3's module multiplies by 1 + its weight) and its ε."""
    weight = norm.weight.detach().float()
    eps = getattr(norm, "variance_epsilon", None)
    return _np32(1.0 + weight if family == "gemma3_text" else weight), float(norm.eps if eps is None else eps)


def _rotary(model, layer, input_ids, attention_mask, extra, reach):
    """Llama, Mistral, Qwen2 and 3, Gemma 1 to 3, OLMo 2, Phi-3, gpt-oss: half-split rotary (on the first rotary_dim
    components, Phi-3's partial rotary) with the model's own cos and sin, grouped K/V heads, heads of the model's
    width; the q/k norms, sliding windows, soft-capping, logit scale and sinks each family has."""
    config = model.config
    family = config.model_type
    layers = _layers(model, "model.layers", "layers")
    attn = _pick(layers, layer, "decoder").self_attn
    heads, kv_heads, head_dim = config.num_attention_heads, config.num_key_value_heads, attn.head_dim
    # A module holding more than its family's parts computes something relattn's layer does not (a model of a
    # newer family relabelled as this one: Qwen3's q_norm and k_norm under "qwen2"): refused, not captured wrong.
    known = (*_PROJECTIONS.get(family, ("q_proj", "k_proj", "v_proj")), "o_proj", "rotary_emb", *_ROTARY_EXTRAS.get(family, ()))
    held = [name for name, _ in attn.named_children()] + [name for name, _ in attn.named_parameters(recurse=False)]
    unknown = sorted(name for name in held if name not in known)
    if unknown:
        raise _refuse("model", f"an attention module with {', '.join(unknown)} (a {family} config holding another family's layer?)",
                      f"a {family} attention module: {', '.join(known)}")
    # Mistral's and Phi-3's models mask a window for every layer when their config has one; the others say it per layer.
    window = config.sliding_window if family in ("mistral", "phi3") else getattr(attn, "sliding_window", None)
    causal = bool(getattr(attn, "is_causal", True))
    # A bidirectional window is Gemma 3's (EmbeddingGemma: keys at |j − i| < window, _bidirectional_window_overlay);
    # another family's would be a mask relattn has not checked against its model.
    if window is not None and not causal and family != "gemma3_text":
        raise _refuse("model", f"a bidirectional layer with a sliding window of {window}", "a causal sliding window, or Gemma 3's bidirectional one")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    cos, sin = kwargs["position_embeddings"]
    # The rotated components: every one, or the first rotary_dim (cos's width: Phi-3's partial_rotary_factor);
    # gpt-oss's cos has one column per pair (the others' repeat it for both halves).
    rotated = min(cos.shape[-1] * (2 if family == "gpt_oss" else 1), head_dim)
    half = rotated // 2
    if family == "phi3":
        # One projection, its output [Q (heads·head_dim) | K (kv·head_dim) | V (kv·head_dim)].
        q_end, k_end = heads * head_dim, (heads + kv_heads) * head_dim
        qkv = [_linear(attn.qkv_proj, slice(a, b)) for a, b in ((0, q_end), (q_end, k_end), (k_end, None))]
    else:
        qkv = [_linear(attn.q_proj), _linear(attn.k_proj), _linear(attn.v_proj)]
    arrays = _layer_arrays(args, kwargs, (*qkv, _linear(attn.o_proj)), **_rotary_arrays(cos, sin, half))
    options = {"method": "rope", "heads": heads, "causal": causal, "rope_layout": "half"}
    if rotated < head_dim:
        options["rope_fraction"] = rotated / head_dim
    scaling = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    notes = [f"Rotary in the half-split layout (rotate_half) with the model's own cos and sin (rope type '{scaling.get('rope_type', 'default')}')"
             + (f", on the first {rotated} of each head's {head_dim} components." if rotated < head_dim else "."),
             f"{kv_heads} K/V heads for {heads} query heads: each K/V head serves {heads // kv_heads} query heads." if kv_heads < heads
             else "One K/V head per query head."]
    if heads * head_dim != config.hidden_size:
        notes.append(f"Heads of {head_dim} components: {heads} × {head_dim} = {heads * head_dim}, not the model's width {config.hidden_size}.")
    if abs(attn.scaling - head_dim ** -0.5) > 1e-9 * head_dim ** -0.5:
        options["logit_scale"] = {"factor": float(attn.scaling)}
        notes.append(f"Logits scaled by {attn.scaling:.6g} (query_pre_attn_scalar^−½), not 1/√head_dim = {head_dim ** -0.5:.6g}.")
    if hasattr(attn, "q_norm"):
        (arrays["q_norm"], eps), (arrays["k_norm"], _) = _norm(attn.q_norm, family), _norm(attn.k_norm, family)
        options["norm_eps"] = eps
        per_head = arrays["q_norm"].shape[0] == head_dim
        notes.append("q and k RMS-normed " + ("per head" if per_head else "over the whole projection (every head at once)")
                     + " before the rotary" + (" (γ = 1 + the module's weight)." if family == "gemma3_text" else "."))
    if window is not None:
        # Keys at i − j < window (sliding_window_overlay), or |j − i| < window bidirectional (Gemma 3's overlay).
        options["window"] = int(window)
        notes.append(f"A sliding window of {window}: each query sees itself and the {window - 1} keys before it (farther keys masked)." if causal
                     else f"A bidirectional sliding window of {window}: each query sees the keys within {window - 1} positions on either side (farther keys masked).")
    if getattr(attn, "attn_logit_softcapping", None) is not None:
        options["softcap"] = float(attn.attn_logit_softcapping)
        notes.append(f"Logits soft-capped: {attn.attn_logit_softcapping:g}·tanh(e / {attn.attn_logit_softcapping:g}) before the mask.")
    if family == "gpt_oss":
        arrays["sinks"] = _np32(attn.sinks)
        notes.append("Each head's learned sink logit takes a share of the softmax and adds no value: a row's weights sum to less than 1.")
    return input_ids, attention_mask, options, arrays, notes


def _llama4(model, layer, input_ids, attention_mask, extra, reach):
    """Llama 4 (text): interleaved rotary from the model's freqs_cis on its RoPE layers, none on its NoPE layers;
    an L2 norm of q and k after the rotary (which keeps each head's norm: the same as relattn's norm before it, with
    γ = 1); grouped K/V heads; its chunked layers' chunks of attention_chunk_size (relattn's `chunk`). The NoPE
    layers' attention temperature acts only from floor_scale tokens on: longer inputs are refused by name."""
    config = model.config
    attn = _pick(_layers(model, "model.layers", "layers"), layer, "decoder").self_attn
    heads, kv_heads, head_dim = config.num_attention_heads, config.num_key_value_heads, attn.head_dim
    unknown = sorted(name for name, _ in attn.named_children() if name not in ("q_proj", "k_proj", "v_proj", "o_proj", "qk_norm"))
    if unknown:
        raise _refuse("model", f"an attention module with {', '.join(unknown)}", "a llama4_text attention module: q_proj, k_proj, v_proj, o_proj, qk_norm")
    n = input_ids.shape[1]
    layer_types = getattr(config, "layer_types", None) or []
    chunk = config.attention_chunk_size if layer < len(layer_types) and layer_types[layer] == "chunked_attention" else None
    # The model's chunks start after each sequence's left padding, relattn's at position 0: the same chunks for
    # right padding, or for inputs that fit in one chunk.
    if chunk is not None and n > chunk and attention_mask is not None and bool((attention_mask[:, 0] == 0).any()):
        raise _refuse("attention_mask", f"left padding with {n} tokens, past attention_chunk_size = {chunk}",
                      "right padding, or at most attention_chunk_size tokens (relattn's chunks start at position 0)")
    if not attn.use_rope and attn.attn_temperature_tuning and n >= attn.floor_scale:
        raise _refuse("input_ids", f"{n} tokens", f"fewer than floor_scale = {attn.floor_scale} (past it the NoPE layer scales q by position, which relattn does not)")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    arrays = _layer_arrays(args, kwargs, (_linear(attn.q_proj), _linear(attn.k_proj), _linear(attn.v_proj), _linear(attn.o_proj)))
    options = {"method": "rope", "heads": heads, "causal": True, "rope_layout": "interleaved"}
    if attn.use_rope:
        freqs = _same_for_the_batch(kwargs["position_embeddings"], "position_ids")
        arrays["rope_cos"], arrays["rope_sin"] = _np32(freqs.real), _np32(freqs.imag)
        notes = ["A RoPE layer: rotary on interleaved pairs (2p, 2p + 1), the model's own freqs_cis as cos and sin."]
    else:
        # No position term: the identity rotation (every angle 0), so the stages show that nothing turns.
        arrays["rope_cos"], arrays["rope_sin"] = _np.ones((n, head_dim // 2), _np.float32), _np.zeros((n, head_dim // 2), _np.float32)
        notes = ["A NoPE layer: no position term at all (shown as RoPE with every angle 0); only the causal mask orders the tokens."]
    if hasattr(attn, "qk_norm"):
        arrays["q_norm"] = arrays["k_norm"] = _np.ones(head_dim, _np.float32)
        options["norm_eps"] = float(attn.qk_norm.eps)
        notes.append("q and k L2-normed per head after the rotary (norms the rotation keeps: shown as RMS norms with γ = 1 before it).")
    if chunk is not None:
        options["chunk"] = int(chunk)
        notes.append(f"Chunked attention: each query sees the keys of its own chunk of {chunk} positions, up to itself.")
    notes.append(f"{kv_heads} K/V heads for {heads} query heads: each K/V head serves {heads // kv_heads} query heads.")
    return input_ids, attention_mask, options, arrays, notes


def _modernbert(model, layer, input_ids, attention_mask, extra, reach):
    """ModernBERT: bidirectional, half-split rotary with each layer's own cos and sin (global and local layers have
    their own bases), one fused Wqkv, local layers a window of |j − i| ≤ local_attention / 2."""
    config = model.config
    attn = _pick(_layers(model, "model.layers", "layers"), layer, "encoder").attn
    heads, head_dim = config.num_attention_heads, attn.head_dim
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    cos, sin = kwargs["position_embeddings"]
    half = head_dim // 2
    d = heads * head_dim
    qkv = [_linear(attn.Wqkv, slice(p * d, (p + 1) * d)) for p in range(3)]
    arrays = _layer_arrays(args, kwargs, (*qkv, _linear(attn.Wo)), **_rotary_arrays(cos, sin, half))
    options = {"method": "rope", "heads": heads, "causal": False, "rope_layout": "half"}
    local = config.layer_types[layer] == "sliding_attention"
    notes = ["Bidirectional; Q, K and V from one Wqkv, split in three along its output.",
             f"Rotary in the half-split layout with this layer's own cos and sin ({'local' if local else 'global'} layers have their own base)."]
    if local:
        # The model's mask: |i − j| ≤ sliding_window (local_attention / 2), relattn's window: |j − i| < window.
        options["window"] = int(config.sliding_window) + 1
        notes.append(f"A local layer: each query sees the keys within {config.sliding_window} positions on either side (farther keys masked).")
    return input_ids, attention_mask, options, arrays, notes


def _deberta(model, layer, input_ids, attention_mask, extra, reach):
    """DeBERTa-v2, v3: disentangled attention (c2p and p2c) of encoder layer ``layer``, its relative tables K_r and Q_r
    projected per head from the relative embeddings the module is given."""
    import torch

    config = model.config
    base = getattr(model, "deberta", model)
    block = _pick(base.encoder.layer, layer, "encoder").attention
    attn = block.self
    if not attn.relative_attention:
        raise _refuse("model", "relative_attention False", "a DeBERTa with relative_attention (its position terms)")
    kinds = [str(t).strip().lower() for t in attn.pos_att_type]
    terms = [t for t in ("c2p", "p2c") if t in kinds]
    if not terms or any(t not in ("c2p", "p2c") for t in kinds):
        raise _refuse("model", f"pos_att_type {'|'.join(kinds) or 'none'}", "c2p, p2c or c2p|p2c")
    heads, head_dim = attn.num_attention_heads, attn.attention_head_size
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    if kwargs.get("query_states") is not None:
        raise _refuse("model", "query_states given", "DeBERTa's self-attention (no enhanced mask decoder's query states)")
    span = attn.pos_ebd_size
    buckets = attn.position_buckets if attn.position_buckets > 0 else 0
    # E (2S, d_model) as the module reads it (the encoder's table, layer-normed where norm_rel_ebd says so), then each
    # projection the module applies to it, in the model's own precision, split per head: (heads, 2S, d_head).
    rel_embeddings = kwargs["rel_embeddings"][: 2 * span]
    per_head = lambda t: _np32(t.reshape(2 * span, heads, head_dim).permute(1, 0, 2))  # noqa: E731
    with torch.no_grad():
        key = attn.key_proj if attn.share_att_key else getattr(attn, "pos_key_proj", None)
        query = attn.query_proj if attn.share_att_key else getattr(attn, "pos_query_proj", None)
        own = {}
        if "c2p" in terms:
            own["deberta_k_r"] = per_head(key(rel_embeddings))
        if "p2c" in terms:
            own["deberta_q_r"] = per_head(query(rel_embeddings))
    arrays = _layer_arrays(args, kwargs, (_linear(attn.query_proj), _linear(attn.key_proj), _linear(attn.value_proj), _linear(block.output.dense)), **own)
    options = {"method": "deberta", "heads": heads, "causal": False, "position_buckets": buckets,
               "max_relative_positions": attn.max_relative_positions, "deberta_terms": "both" if len(terms) == 2 else terms[0]}
    shared = "the key and query projections (share_att_key)" if attn.share_att_key else "pos_key_proj and pos_query_proj"
    normed = " (layer-normed)" if "layer_norm" in getattr(base.encoder, "norm_rel_ebd", ()) else ""
    notes = [f"Disentangled attention: {' + '.join(terms)} of the {2 * span} relative embeddings{normed}, projected per head by {shared}.",
             (f"δ = i − j in {buckets} log buckets up to {attn.max_relative_positions}" if buckets else f"δ = i − j clipped at ±{attn.max_relative_positions}")
             + f"; logits scaled by 1/√({1 + len(terms)}·d_head).",
             "The output is the attention's dense projection, before DeBERTa adds the residual and normalises.",
             "DeBERTa masks padded queries as well as padded keys (their rows get uniform weights, outputs the model discards); relattn masks keys only."]
    if getattr(config, "position_biased_input", True):
        notes.append("This model also adds absolute positions to its embeddings (position_biased_input): x holds them.")
    return input_ids, attention_mask, options, arrays, notes


def _xlnet(model, layer, input_ids, attention_mask, extra, reach):
    """XLNet: the content stream of layer ``layer``'s XLNetRelativeAttention (Transformer-XL's rel_attn_core): its
    projections (d_model, heads, d_head) as relattn's (d_model, heads·d_head), W_R and the biases u, v, s, the
    segment embeddings, and the segment ids the model is given."""
    import torch

    config = model.config
    base = getattr(model, "transformer", model)
    attn = _pick(base.layer, layer, "layer").rel_attn
    if config.bi_data:
        raise _refuse("model", "bi_data True", "bi_data False (one direction of positions, as XLNet runs after pretraining)")
    if config.attn_type not in ("bi", "uni"):
        raise _refuse("model", f"attn_type {config.attn_type!r}", "'bi' or 'uni'")
    if config.attn_type == "uni" and config.same_length:
        raise _refuse("model", "same_length True with attn_type 'uni'", "same_length False (every query reaches back to the first token)")
    if config.attn_type == "uni" and attention_mask is not None and input_ids.shape[0] > 1:
        # transformers' XLNet adds the padding mask to its causal one in place, which fails for a batch of more than one.
        if not bool((attention_mask == 0).any()):
            attention_mask = None
        else:
            raise _refuse("attention_mask", "padding with attn_type 'uni' and a batch of more than one",
                          "no padding, or one sequence at a time (transformers' XLNet cannot combine its causal mask with a padding mask for a batch)")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    named = dict(zip(("h", "g", "attn_mask_h", "attn_mask_g", "r", "seg_mat"), args), **kwargs)
    if named.get("mems") is not None:
        raise _refuse("mems", "given", "none: the layer's keys are its own tokens (Transformer-XL's memories are not captured)")
    if named.get("g") is not None or named.get("target_mapping") is not None:
        raise _refuse("part", "the query stream g (target_mapping given)", "XLNet's content stream h: called without target_mapping")
    d, heads, head_dim = attn.q.shape
    h = named["h"]  # (n, batch, d_model): XLNet is sequence-first
    flat = lambda w: _np32(w.reshape(d, heads * head_dim))  # noqa: E731
    with torch.no_grad():
        arrays = {"x": _np32(h.permute(1, 0, 2)), "w_q": flat(attn.q), "w_k": flat(attn.k), "w_v": flat(attn.v), "w_o": flat(attn.o).T.copy(),
                  "xl_w_r": flat(attn.r), "xl_u": _np32(attn.r_w_bias), "xl_v": _np32(attn.r_r_bias), "xl_s": _np32(attn.r_s_bias),
                  "xl_seg_embed": _np32(attn.seg_embed)}
    n = h.shape[0]
    types = extra.get("token_type_ids")
    segments = 0
    if types is not None:
        arrays["segment_ids"] = types.detach().cpu().numpy().astype(_np.float32)
        segments = max(1, int(torch.unique(types).numel()))
    clamp = config.clamp_len if config.clamp_len > 0 else n
    options = {"method": "transformer_xl", "heads": heads, "causal": config.attn_type == "uni", "clip": clamp, "segments": segments}
    notes = [f"Transformer-XL's relative attention (XLNet's content stream): biases u, v{', s' if segments else ''}, sinusoids of i − j projected by W_R, "
             + (f"clamped at ±{config.clamp_len} (clamp_len)" if config.clamp_len > 0 else "unclamped (clip n)") + f", attn_type {config.attn_type!r}.",
             "With token_type_ids: XLNet's segment term EF (same segment or not)." if segments else "No token_type_ids: no segment term.",
             "The output is o's projection, before XLNet adds the residual and normalises.",
             "XLNet lets a padded query attend to itself (outputs the model discards); relattn masks padded keys only."]
    return input_ids, attention_mask, options, arrays, notes


def _deepseek(model, layer, input_ids, attention_mask, extra, reach):
    """DeepSeek-V2 and V3: multi-head latent attention. The module projects x to a query latent (q_a_proj, RMS-normed:
    c_Q; x itself without q_lora_rank) and a key/value latent (kv_a_proj_with_mqa: c_KV, RMS-normed, and one rotary
    key k_R shared by every head); per head q = c_Q W_UQ = [q_C | q_R], k = [c_KV W_UK | RoPE(k_R)], v = c_KV W_UV.
    Past the norms every step is linear in the latents, so relattn's x is the three side by side, [c_Q | c_KV | k_R],
    with W_q, W_k and W_v reading their own rows (zero elsewhere): Q, K, V, the weights and the output are the
    module's. Each head's rotary components are put first (relattn rotates the first rope_fraction of a head):
    q·k sums over the same pairs, so the logits are the module's."""
    import torch

    config = model.config
    family = config.model_type
    attn = _pick(_layers(model, "model.layers", "layers"), layer, "decoder").self_attn
    heads, rope, nope, d_v = attn.num_heads, attn.qk_rope_head_dim, attn.qk_nope_head_dim, attn.v_head_dim
    d_qk, r_kv = rope + nope, attn.kv_lora_rank
    parts = ("q_a_proj", "q_a_layernorm", "q_b_proj") if attn.q_lora_rank is not None else ("q_proj",)
    known = (*parts, "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj")
    unknown = sorted(name for name, _ in attn.named_children() if name not in known)
    if unknown:
        raise _refuse("model", f"an attention module with {', '.join(unknown)}", f"a {family} attention module: {', '.join(known)}")
    if getattr(attn, "num_key_value_groups", 1) != 1:
        raise _refuse("model", f"num_key_value_heads {config.num_key_value_heads} for {heads} heads",
                      "num_key_value_heads = num_attention_heads (every MLA head has its own key from the latent)")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    hidden = _hidden(args, kwargs)
    with torch.no_grad():
        c_q = attn.q_a_layernorm(attn.q_a_proj(hidden)) if attn.q_lora_rank is not None else hidden
        kv, k_r = torch.split(attn.kv_a_proj_with_mqa(hidden), [r_kv, rope], dim=-1)
        c_kv = attn.kv_a_layernorm(kv)
    r_q = c_q.shape[-1]
    width = r_q + r_kv + rope
    # Each head's components in relattn's order: the model's rotary ones (nope .. d_qk) first, then the others.
    order = _np.concatenate([_np.arange(nope, d_qk), _np.arange(nope)])
    up_q = _linear(attn.q_b_proj if attn.q_lora_rank is not None else attn.q_proj)[0].reshape(r_q, heads, d_qk)[:, :, order]
    up_kv = _linear(attn.kv_b_proj)[0].reshape(r_kv, heads, nope + d_v)
    w_q = _np.zeros((width, heads, d_qk), _np.float32)
    w_q[:r_q] = up_q
    w_k = _np.zeros((width, heads, d_qk), _np.float32)
    w_k[r_q:r_q + r_kv, :, rope:] = up_kv[:, :, :nope]
    w_k[r_q + r_kv:, :, :rope] = _np.eye(rope, dtype=_np.float32)[:, None, :]
    w_v = _np.zeros((width, heads, d_v), _np.float32)
    w_v[r_q:r_q + r_kv] = up_kv[:, :, nope:]
    w_o, b_o = _linear(attn.o_proj)
    arrays = {"x": _np.concatenate([_np32(c_q), _np32(c_kv), _np32(k_r)], axis=-1), "w_q": w_q.reshape(width, -1), "w_k": w_k.reshape(width, -1),
              "w_v": w_v.reshape(width, -1), "w_o": w_o}
    if b_o is not None:
        arrays["b_o"] = b_o
    interleaved = family == "deepseek_v2" or bool(getattr(config, "rope_interleave", False))
    if family == "deepseek_v2":
        freqs = _same_for_the_batch(kwargs["position_embeddings"], "position_ids")
        arrays["rope_cos"], arrays["rope_sin"] = _np32(freqs.real), _np32(freqs.imag)
    else:
        cos, sin = kwargs["position_embeddings"]
        arrays.update(_rotary_arrays(cos, sin, rope // 2))
    options = {"method": "rope", "heads": heads, "causal": True, "rope_layout": "interleaved" if interleaved else "half", "rope_fraction": rope / d_qk}
    if abs(attn.scaling - d_qk ** -0.5) > 1e-9 * d_qk ** -0.5:
        options["logit_scale"] = {"factor": float(attn.scaling)}
    q_latent = f"c_Q, the query latent ({r_q}: q_a_proj, RMS-normed)" if attn.q_lora_rank is not None else f"the layer's input ({r_q}: no query latent)"
    notes = [f"Multi-head latent attention: x is [{q_latent} | c_KV, the key/value latent ({r_kv}: RMS-normed) | k_R, the shared rotary key ({rope})], "
             f"each a column range of x; W_q reads c_Q, W_k c_KV and k_R, W_v c_KV (zero rows elsewhere).",
             f"Heads of {d_qk} query/key components ({rope} rotary, shown first; {nope} without position) and {d_v} value components; "
             f"every head's rotary key is k_R rotated.",
             "Rotary on interleaved pairs (2p, 2p + 1)" + (", the model's freqs_cis as cos and sin." if family == "deepseek_v2" else ", the model's own cos and sin.")
             if interleaved else "Rotary in the half-split layout with the model's own cos and sin."]
    if "logit_scale" in options:
        notes.append(f"Logits scaled by {attn.scaling:.6g} (YaRN's mscale² / √{d_qk}), not 1/√{d_qk} = {d_qk ** -0.5:.6g}.")
    return input_ids, attention_mask, options, arrays, notes


def _neox(model, layer, input_ids, attention_mask, extra, reach):
    """GPT-NeoX, Pythia: half-split rotary on the first rotary_ndims components; fused Q, K, V."""
    config = model.config
    attn = _pick(_layers(model, "gpt_neox.layers", "layers"), layer, "decoder").attention
    heads, head_dim = config.num_attention_heads, attn.head_size
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    cos, sin = kwargs["position_embeddings"]
    rot = attn.rotary_ndims
    arrays = _layer_arrays(args, kwargs, (*_fused_parts(attn.query_key_value, heads, head_dim, 3), _linear(attn.dense)),
                           **_rotary_arrays(cos, sin, rot // 2))
    options = {"method": "rope", "heads": heads, "causal": True, "rope_layout": "half", "rope_fraction": rot / head_dim}
    notes = [f"Rotary on the first {rot} of each head's {head_dim} components (rotary_pct), half-split; the rest pass unrotated.",
             "Q, K and V come from one fused projection, laid out per head as (q, k, v)."]
    return input_ids, attention_mask, options, arrays, notes


def _gptj(model, layer, input_ids, attention_mask, extra, reach):
    """GPT-J: interleaved rotary (rotate_every_two) on the first rotary_dim components."""
    config = model.config
    attn = _pick(_layers(model, "transformer.h", "h"), layer, "decoder").attn
    heads, head_dim = config.num_attention_heads, attn.head_dim
    if attn.rotary_dim is None:
        raise _refuse("model", "rotary_dim None", "a GPT-J config with rotary_dim set (64 in GPT-J-6B)")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    sin, cos = kwargs["position_embeddings"]  # GPT-J's order
    arrays = _layer_arrays(args, kwargs, (_linear(attn.q_proj), _linear(attn.k_proj), _linear(attn.v_proj), _linear(attn.out_proj)),
                           **_rotary_arrays(cos, sin))
    options = {"method": "rope", "heads": heads, "causal": True, "rope_layout": "interleaved", "rope_fraction": attn.rotary_dim / head_dim}
    notes = [f"Rotary on the first {attn.rotary_dim} of each head's {head_dim} components, interleaved pairs (2p, 2p + 1) as rotate_every_two."]
    return input_ids, attention_mask, options, arrays, notes


def _bloom(model, layer, input_ids, attention_mask, extra, reach):
    """BLOOM: ALiBi with the model's slopes; fused Q, K, V."""
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    config = model.config
    attn = _pick(_layers(model, "transformer.h", "h"), layer, "decoder").self_attention
    heads, head_dim = config.n_head, attn.head_dim
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    # The model's own slopes: its ALiBi tensor is slope × key position; position 1 of an unpadded pair gives the slope.
    slopes = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), heads, torch.float32)[:, 0, 1]
    arrays = _layer_arrays(args, kwargs, (*_fused_parts(attn.query_key_value, heads, head_dim, 3), _linear(attn.dense)),
                           alibi_slopes=_np32(slopes))
    options = {"method": "alibi", "heads": heads, "causal": True}
    notes = ["BLOOM adds m_h·j (slope × key position); relattn adds the paper's m_h·(j − i). They differ by m_h·i, "
             "the same for every key of query i, which the softmax takes away: equal weights, logits shifted per row.",
             "BLOOM's attention module adds the residual to its output; the output here is the attention alone."]
    return input_ids, attention_mask, options, arrays, notes


def _rows(lin, index):
    """(W, b) of the output rows ``index`` (a tensor of row numbers, flattened) of a fused ``nn.Linear``."""
    return _linear(lin, index.reshape(-1))


def _falcon(model, layer, input_ids, attention_mask, extra, reach):
    """Falcon: ALiBi (scaled with the logits) or half-split rotary; three fused Q/K/V layouts."""
    import math

    import torch
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor

    config = model.config
    attn = _pick(_layers(model, "transformer.h", "h"), layer, "decoder").self_attention
    heads, hd = attn.num_heads, attn.head_dim
    if attn.new_decoder_architecture:  # per K/V group: its query heads, then its key, then its value
        kv = attn.num_kv_heads
        idx = torch.arange(kv * (heads // kv + 2) * hd).view(kv, heads // kv + 2, hd)
        parts, layout = (idx[:, :-2], idx[:, -2], idx[:, -1]), f"{kv} K/V groups, each its {heads // kv} query heads, a key and a value"
    elif not attn.multi_query:  # per head: its query, key and value
        idx = torch.arange(heads * 3 * hd).view(heads, 3, hd)
        parts, layout = (idx[:, 0], idx[:, 1], idx[:, 2]), "per head: its query, key and value"
    else:  # every query head, then one key and one value shared by all
        idx = torch.arange((heads + 2) * hd).view(heads + 2, hd)
        parts, layout = (idx[:heads], idx[heads], idx[heads + 1]), "every query head, then one key and one value that all share"
    (w_q, b_q), (w_k, b_k), (w_v, b_v) = (_rows(attn.query_key_value, p) for p in parts)
    w_o, b_o = _linear(attn.dense)
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    arrays = _layer_arrays(args, kwargs, ((w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o)))
    notes = [f"Q, K and V come from one fused projection laid out {layout}."]
    if config.alibi:
        # BLOOM's slopes m_h; where Falcon adds m_h·j/√d_head: folded into a 4-D float mask (per head), and again in
        # the module's eager path ((q·k + alibi)/√d_head), not in its SDPA path.
        m = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), heads, torch.float32)[:, 0, 1]
        mask = kwargs.get("attention_mask")
        folded = mask is not None and mask.dim() == 4 and mask.shape[1] == heads
        eager = not (config._attn_implementation == "sdpa" and not kwargs.get("output_attentions", False))
        times = int(folded) + int(eager)
        arrays["alibi_slopes"] = _np32(times * m / math.sqrt(hd))
        options = {"method": "alibi", "heads": heads, "causal": True}
        notes.append(f"Falcon's slopes here are {times}·m_h/√d_head: BLOOM's m_h, scaled by 1/√d_head, added "
                     f"{'twice (folded into the mask, and again by the eager path)' if times == 2 else 'once'} as this model runs. "
                     "They differ from the paper's m_h·(j − i) by a constant per row, which the softmax takes away.")
    else:
        cos, sin = kwargs["position_embeddings"]
        arrays["rope_cos"] = _np32(_same_for_the_batch(cos, "position_ids")[:, : hd // 2])
        arrays["rope_sin"] = _np32(_same_for_the_batch(sin, "position_ids")[:, : hd // 2])
        options = {"method": "rope", "heads": heads, "causal": True, "rope_layout": "half"}
        notes.append("Rotary in the half-split layout with the model's own cos and sin.")
    return input_ids, attention_mask, options, arrays, notes


def _mpt(model, layer, input_ids, attention_mask, extra, reach):
    """MPT: ALiBi with MPT's slopes; Q, K, V the fused projection's thirds."""
    import torch
    config = model.config
    attn_config = config.attn_config
    attn = _pick(_layers(model, "transformer.blocks", "blocks"), layer, "decoder").attn
    heads, hd = attn.n_heads, attn.head_dim
    if not attn_config.alibi:
        raise _refuse("model", "an MPT config without ALiBi", "attn_config.alibi = True (MPT's ALiBi)")
    if attn.clip_qkv:
        raise _refuse("model", f"clip_qkv {attn.clip_qkv}", "an MPT config without clip_qkv (relattn does not clamp Q, K and V)")
    if abs(attn.softmax_scale - hd ** -0.5) > 1e-12:
        raise _refuse("model", f"softmax_scale {attn.softmax_scale}", f"1/√head_dim = {hd ** -0.5}")
    d = config.d_model
    (w_q, b_q), (w_k, b_k), (w_v, b_v) = (_linear(attn.Wqkv, torch.arange(p * d, (p + 1) * d)) for p in range(3))
    w_o, b_o = _linear(attn.out_proj)
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    # The slopes the module adds, read off its own input: transformers builds MPT's ALiBi with its default
    # alibi_bias_max (8), whatever the config says. Its bias at key column c is slope × (c − (L − 1)); the
    # module adds the last n columns; two neighbouring columns give the slope, and the bias must be that line.
    bias = kwargs.get("position_bias", args[1] if len(args) > 1 else None)
    n = input_ids.shape[1]
    if bias is None or bias.dim() != 3 or bias.shape[0] != heads or bias.shape[-1] < n:
        shape = None if bias is None else tuple(bias.shape)
        raise _refuse("input_ids", f"{n} tokens (the model's ALiBi bias: {shape})", f"at most the model's max_seq_len, {config.max_seq_len}, with ALiBi per head")
    row = bias[:, -1, -n:].float().cpu()
    slopes = (row[:, -1] - row[:, -2]) if n > 1 else torch.zeros(heads)
    line = slopes[:, None] * torch.arange(1 - n, 1, dtype=torch.float32)[None, :]
    if not torch.allclose(row, line, rtol=1e-5, atol=1e-6):
        raise _refuse("model", "an MPT ALiBi bias that is not slope × (j − (L − 1))", "MPT's ALiBi as transformers builds it")
    arrays = _layer_arrays(args, kwargs, ((w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o)), alibi_slopes=_np32(slopes))
    options = {"method": "alibi", "heads": heads, "causal": True}
    notes = ["MPT's slopes as the module adds them (transformers builds them with alibi_bias_max 8, whatever the config says); "
             "it adds m_h·(j − (L − 1)), which differs from the paper's "
             "m_h·(j − i) by a constant per row, which the softmax takes away.",
             "Q, K and V are the fused projection's three thirds."]
    return input_ids, attention_mask, options, arrays, notes


def _conv1d(conv, cols=None):
    """(W, b) of GPT-2's ``Conv1D``, which stores its weight (in, out) and computes x W + b as relattn does;
    columns ``cols`` only (a part of the fused projection)."""
    w, b = _np32(conv.weight), _np32(conv.bias)
    return (w, b) if cols is None else (w[:, cols].copy(), b[cols].copy())


def _absolute(model, layer, input_ids, attention_mask, extra, reach):
    """GPT-2, OPT, BERT: learned absolute positions, already in every layer's x."""
    config = model.config
    family = config.model_type
    n = input_ids.shape[1]
    if family == "gpt2":
        if getattr(config, "scale_attn_by_inverse_layer_idx", False):
            raise _refuse("model", "scale_attn_by_inverse_layer_idx", "a GPT-2 config without it (logits scaled by 1/√d_head alone)")
        base = getattr(model, "transformer", model)
        attn = _pick(base.h, layer, "decoder").attn
        d = config.n_embd
        (w_q, b_q), (w_k, b_k), (w_v, b_v) = (_conv1d(attn.c_attn, slice(p * d, (p + 1) * d)) for p in range(3))
        w_o, b_o = _conv1d(attn.c_proj)
        table, heads, causal = base.wpe.weight, config.n_head, True
        scale = "inv_sqrt_d_head" if config.scale_attn_weights else "none"
        notes = ["GPT-2's learned positions (wpe) were added to the token embeddings before layer 0: x holds them.",
                 "Q, K and V come from one Conv1D (weights stored (in, out)), split in three along its output."]
    elif family == "opt":
        decoder = getattr(model, "model", model).decoder
        attn = _pick(decoder.layers, layer, "decoder").self_attn
        (w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o) = (_linear(attn.q_proj), _linear(attn.k_proj), _linear(attn.v_proj), _linear(attn.out_proj))
        table, heads, causal, scale = decoder.embed_positions.weight[decoder.embed_positions.offset:], config.num_attention_heads, True, "inv_sqrt_d_head"
        notes = ["OPT's learned positions (embed_positions, rows past its offset of 2) were added before layer 0: x holds them.",
                 "OPT multiplies q by 1/√d_head before the product; relattn scales the product: the same logits."]
    else:
        kind = getattr(config, "position_embedding_type", "absolute")
        if kind in _BERT_TYPES:
            return _bert_relative(model, layer, input_ids, attention_mask, extra, reach)
        if kind != "absolute":
            raise _refuse("model", f"position_embedding_type {kind!r}", "'absolute', 'relative_key' or 'relative_key_query'")
        base = getattr(model, "bert", model)
        block = _pick(base.encoder.layer, layer, "encoder").attention
        attn = block.self
        (w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o) = (_linear(attn.query), _linear(attn.key), _linear(attn.value), _linear(block.output.dense))
        table, heads, causal, scale = base.embeddings.position_embeddings.weight, config.num_attention_heads, bool(config.is_decoder), "inv_sqrt_d_head"
        notes = ["BERT's learned positions were added with the token and segment embeddings, then layer-normed, before layer 0: x holds them.",
                 "The output is the attention's dense projection, before BERT adds the residual and normalises."]
    if heads * (w_q.shape[1] // heads) != w_q.shape[0]:
        raise _refuse("model", f"{heads} heads of width {w_q.shape[1] // heads} ≠ hidden size {w_q.shape[0]}", "heads × head width = hidden size")
    if n > table.shape[0]:
        raise _refuse("input_ids", f"{n} tokens", f"at most the model's {table.shape[0]} positions")
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    arrays = _layer_arrays(args, kwargs, ((w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o)), positions=_np32(table[:n]))
    options = {"method": "absolute", "heads": heads, "causal": causal, "positions_in_x": True, "logit_scale": scale}
    return input_ids, attention_mask, options, arrays, notes


#: BERT's relative position types and relattn's bert_terms for each.
_BERT_TYPES = {"relative_key": "key", "relative_key_query": "key_query"}


def _bert_relative(model, layer, input_ids, attention_mask, extra, reach):
    """BERT with relative_key or relative_key_query (transformers 4.x): the layer's distance_embedding, no absolute
    positions."""
    config = model.config
    kind = config.position_embedding_type
    base = getattr(model, "bert", model)
    block = _pick(base.encoder.layer, layer, "encoder").attention
    attn = block.self
    if not hasattr(attn, "distance_embedding"):
        raise _refuse("model", f"position_embedding_type {kind!r} without BertSelfAttention.distance_embedding",
                      "a transformers that computes it (4.x: transformers 5 removed BERT's relative positions)")
    heads, p, n = config.num_attention_heads, config.max_position_embeddings, input_ids.shape[1]
    if n > p:
        raise _refuse("input_ids", f"{n} tokens", f"at most the model's max_position_embeddings, {p} (its distance table has no row past ±{p - 1})")
    (w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o) = (_linear(attn.query), _linear(attn.key), _linear(attn.value), _linear(block.output.dense))
    args, kwargs = reach(attn, lambda: model(input_ids=input_ids, attention_mask=attention_mask, **extra))
    arrays = _layer_arrays(args, kwargs, ((w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o)), distance_embedding=_np32(attn.distance_embedding.weight))
    options = {"method": "bert_relative", "heads": heads, "causal": bool(config.is_decoder), "max_position": p, "bert_terms": _BERT_TYPES[kind]}
    notes = [f"BERT's {kind}: no absolute positions were added to the embeddings; each layer reads its own distance_embedding "
             f"({2 * p - 1} rows) at i − j + {p - 1}, shared by its heads.",
             "The output is the attention's dense projection, before BERT adds the residual and normalises."]
    return input_ids, attention_mask, options, arrays, notes


_LOCKS = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _held(model):
    """The model to this capture alone (a lock per model, made once): two threads capturing the same model run
    one after the other, so that neither's stop hook nor its eval() reaches the other's forward."""
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(model, threading.RLock())
    with lock:
        yield


@contextlib.contextmanager
def _as_eval(model):
    """The model in eval mode (dropout off) for the capture, every module's own training flag put back after,
    whatever happens: yields whether any module was in training mode."""
    modules = list(model.modules())
    flags = [m.training for m in modules]
    try:
        for m in modules:
            m.training = False
        yield any(flags)
    finally:
        for m, flag in zip(modules, flags):
            m.training = flag


def _token_types(model, token_type_ids, input_ids, family):
    """The model's forward's extra keyword: a tokenizer's ``token_type_ids`` passed through to a model that takes
    them (BERT's segments, GPT-2's), left out when all zero for one that does not (T5's, Llama's tokenizers give
    none, a BERT-style tokenizer zeros); refused by name otherwise."""
    import inspect

    import torch

    if token_type_ids is None:
        return {}
    if not isinstance(token_type_ids, torch.Tensor) or tuple(token_type_ids.shape) != tuple(input_ids.shape) or token_type_ids.dtype not in (torch.int64, torch.int32):
        given = f"shape {tuple(token_type_ids.shape)}, {token_type_ids.dtype}" if isinstance(token_type_ids, torch.Tensor) else type(token_type_ids).__name__
        raise _refuse("token_type_ids", given, f"an integer tensor of input_ids' shape {tuple(input_ids.shape)}, as a tokenizer gives")
    _check_device(token_type_ids, "token_type_ids", model)
    takes = family not in ("t5", "mt5", "umt5") and "token_type_ids" in inspect.signature(model.forward).parameters
    if not takes:
        if bool((token_type_ids == 0).all()):
            return {}
        raise _refuse("token_type_ids", "segments other than 0", f"all 0 or none: a {family} model has no token types")
    types = getattr(model.config, "type_vocab_size", None)
    lo, hi = int(token_type_ids.min()), int(token_type_ids.max())
    if isinstance(types, int) and (lo < 0 or hi >= types):
        raise _refuse("token_type_ids", f"types from {lo} to {hi}", f"0..={types - 1} (the model's type_vocab_size {types})")
    return {"token_type_ids": token_type_ids}


#: The families whose capture reads the model's own cos and sin (or freqs_cis), so that any positions the model is
#: given are the ones shown.
_OWN_ROTARY = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2", "phi3", "gpt_oss", "llama4_text",
               "modernbert", "deepseek_v2", "deepseek_v3")


def _position_ids(model, position_ids, input_ids, family):
    """The model's forward's ``position_ids``, passed through to a rotary family (whose capture reads the cos and sin
    they make): an integer tensor (batch, n) or (1, n) of positions ≥ 0, the same for every sequence."""
    import torch

    if position_ids is None:
        return {}
    if family not in _OWN_ROTARY:
        raise _refuse("position_ids", "given", f"none for a {family} model (given only to a rotary family, whose cos and sin they make: {', '.join(_OWN_ROTARY)})")
    n = input_ids.shape[1]
    if not isinstance(position_ids, torch.Tensor) or position_ids.dtype not in (torch.int64, torch.int32) or position_ids.dim() != 2 \
            or position_ids.shape[1] != n or position_ids.shape[0] not in (1, input_ids.shape[0]):
        given = f"shape {tuple(position_ids.shape)}, {position_ids.dtype}" if isinstance(position_ids, torch.Tensor) else type(position_ids).__name__
        raise _refuse("position_ids", given, f"an integer tensor (batch, {n}) or (1, {n})")
    _check_device(position_ids, "position_ids", model)
    if int(position_ids.min()) < 0:
        raise _refuse("position_ids", f"a position {int(position_ids.min())}", "positions ≥ 0")
    if not bool((position_ids == position_ids[:1]).all()):
        raise _refuse("position_ids", "positions that differ between sequences", "the same positions for every sequence (relattn's layer has one table of them)")
    return {"position_ids": position_ids}


def _tokens(tokenizer, ids):
    """Each sequence's tokens by ``tokenizer.convert_ids_to_tokens``: one string per position, refused by name
    otherwise (a capture file's tokens label its axes)."""
    tokens = []
    for row in ids:
        got = tokenizer.convert_ids_to_tokens(row.tolist())
        if not isinstance(got, (list, tuple)) or len(got) != len(row) or not all(isinstance(t, str) for t in got):
            what = (f"{len(got)} items" if isinstance(got, (list, tuple)) else type(got).__name__) + (
                f" ({', '.join(sorted({type(t).__name__ for t in got}))})" if isinstance(got, (list, tuple)) else "")
            raise _refuse("tokenizer", f"convert_ids_to_tokens giving {what} for {len(row)} ids", "one string per id")
        tokens.append(list(got))
    return tokens


_T5S = ("t5", "mt5", "umt5")

#: Each family's capture, but T5's (:func:`_t5`, which has two parts).
_FAMILY = {**{name: _rotary for name in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2", "phi3", "gpt_oss")},
           "llama4_text": _llama4, "modernbert": _modernbert, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek, "gpt_neox": _neox, "gptj": _gptj, "bloom": _bloom,
           "falcon": _falcon, "mpt": _mpt, "gpt2": _absolute, "opt": _absolute, "bert": _absolute, "deberta-v2": _deberta, "xlnet": _xlnet}


def _parts(family):
    """The parts with self-attention layers: T5's encoder and decoder, BERT's, ModernBERT's and DeBERTa's encoder, XLNet's
    content stream, the others' decoder."""
    if family == "xlnet":
        return ("content",)
    return ("encoder", "decoder") if family in _T5S else ("encoder",) if family in ("bert", "modernbert", "deberta-v2") else ("decoder",)


def _part(family, part):
    """The part asked for (None: the first), refused by name when the family has no such part."""
    parts = _parts(family)
    if part is None:
        return parts[0]
    if part not in parts:
        if family in _T5S:
            raise _refuse("part", repr(part), "'encoder' or 'decoder' (T5's cross-attention has no position term: it is not captured)")
        if family == "xlnet":
            raise _refuse("part", repr(part), "'content' (XLNet's query stream g, its pretraining's with target_mapping, is not captured)")
        raise _refuse("part", repr(part), f"'{parts[0]}' (a {family} model has no other)")
    return part


class _Inputs:
    """What the model's forward is given: the ids and mask, T5's decoder ids and mask, the extra keywords."""

    def __init__(self, input_ids, attention_mask, decoder_input_ids=None, decoder_attention_mask=None, extra=None):
        self.input_ids, self.attention_mask = input_ids, attention_mask
        self.decoder_input_ids, self.decoder_attention_mask = decoder_input_ids, decoder_attention_mask
        self.extra = extra or {}

    def to(self, device):
        """The same inputs on ``device`` (the model's input device), tensors moved, None kept."""
        on = (lambda t: None if t is None else t.to(device)) if device is not None else (lambda t: t)
        return _Inputs(on(self.input_ids), on(self.attention_mask), on(self.decoder_input_ids), on(self.decoder_attention_mask),
                       {k: on(v) for k, v in self.extra.items()})


def _layer_of(model, family, layer, part, inputs, reach):
    """Layer ``layer`` of ``part``: (ids, mask, options, arrays, notes), the module's inputs found by ``reach(attn,
    run)``, which returns the (args, kwargs) the attention module ``attn`` is called with when ``run()`` runs the
    model (:func:`_run_to` runs it to there; the atlas gives those of a forward already under way)."""
    if family in _T5S:
        return _t5(model, layer, part, inputs.input_ids, inputs.attention_mask, inputs.decoder_input_ids, inputs.decoder_attention_mask, reach)
    return _FAMILY[family](model, layer, inputs.input_ids, inputs.attention_mask, inputs.extra, reach)


def capture(model, layer=0, *, input_ids, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None, part=None, tokenizer=None,
            token_type_ids=None, position_ids=None):
    """One self-attention layer of a ``transformers`` model on its inputs, as a :class:`Capture`.

    ``model``: a model of one of :data:`FAMILIES` (its weights whatever they are: random from a config, or
    ``from_pretrained``), in any floating type on any device (the model is neither converted nor moved: the
    layer's tensors are read as float32 on the CPU; the inputs, on the CPU or the model's device, are moved to it). ``layer``: the block's index. ``input_ids`` (batch, n) and
    ``attention_mask`` (1 = token, 0 = padding: its padding keys get no weight); for T5 ``part`` is "encoder"
    (the default) or "decoder", which needs ``decoder_input_ids`` (and takes ``decoder_attention_mask``).
    ``tokenizer``: the model's tokenizer, whose tokens label the positions. ``token_type_ids`` (a tokenizer's,
    so that ``**enc`` can be passed) go to a model that takes them (BERT), and must be all 0 for one that does
    not. ``position_ids`` (batch or 1, n), the same for every sequence, go to a rotary family's model, whose cos and
    sin of those positions are shown. A model in training mode is captured as in eval mode (dropout off), said in the notes, and left as it
    was; two threads capturing one model take turns. Refusals are :class:`RelattnError` naming the argument and
    what is supported.
    """
    config = getattr(model, "config", None)
    family = getattr(config, "model_type", None)
    if family not in FAMILIES:
        raise _refuse("model", f"model type {family!r}" if family else type(model).__name__, f"a transformers model of type {', '.join(FAMILIES)}")
    _check_inputs(model, input_ids, attention_mask)
    extra = {**_token_types(model, token_type_ids, input_ids, family), **_position_ids(model, position_ids, input_ids, family)}
    if tokenizer is not None and not callable(getattr(tokenizer, "convert_ids_to_tokens", None)):
        raise _refuse("tokenizer", repr(tokenizer) if isinstance(tokenizer, str) else type(tokenizer).__name__,
                      "the model's tokenizer object (transformers.AutoTokenizer.from_pretrained(name)), with convert_ids_to_tokens")
    part = _part(family, part)
    inputs = _Inputs(input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, extra).to(_input_device(model))
    with _held(model), _as_eval(model) as training:
        ids, mask, options, arrays, notes = _layer_of(model, family, layer, part, inputs, _run_to)
    precision = _precision_note(model)
    if precision:
        notes = [*notes, precision]
    if training:
        notes = [*notes, "The model was in training mode: captured as eval() computes (dropout off); the model is left in training mode."]
    if mask is not None:
        arrays["key_mask"] = _key_mask(mask)
    tokens = None if tokenizer is None else _tokens(tokenizer, ids)
    name = getattr(config, "name_or_path", "") or type(model).__name__
    return Capture(model=name, family=family, layer=layer, part=part, options=options, arrays=arrays, tokens=tokens, notes=notes)
