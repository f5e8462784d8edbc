"""relattn: relative-position self-attention with every intermediate, from NumPy and PyTorch.

The same Rust crate as the relattn command line and page (its book: docs/ in the repository), as a Python module. Two calls,
with the command line's options as keyword arguments (``--rope-base`` is ``rope_base=``):

>>> import relattn
>>> t = relattn.trace(method="music", n=12, d_model=64, heads=2, clip=11, causal=True)
>>> t["weights"].shape                   # every stage, named as relattn compute's .npz
(1, 2, 12, 12)
>>> out = relattn.attention(x, method="rope", heads=8, w_q=wq, w_k=wk, w_v=wv, w_o=wo)

Arrays are given by the names of a scenario file (``x``, ``w_q`` … ``b_o``, ``rel_k``, ``rel_v``, ``e_r``,
``alibi_slopes``, ``t5_bias``, ``rope_cos``, ``rope_sin``, ``key_mask``), as NumPy arrays or anything ``numpy.asarray`` reads without a
copy (a CPU PyTorch tensor); what is not given is generated from ``seed``. :func:`capture` takes a layer of a
Hugging Face ``transformers`` model (T5, Llama, Mistral, Qwen2, Gemma, GPT-NeoX, GPT-J, BLOOM) with these names. A refused option or array raises
:class:`RelattnError` (a ``ValueError``) whose ``field`` names it, with the allowed range in the message.
"""

import numpy as _np

from . import _relattn
from ._relattn import Layer, RelattnError
from .atlas import Atlas, atlas, show_atlas
from .atlas import load as load_atlas
from .capture import FAMILIES, Capture, capture

__all__ = ["trace", "attention", "layer", "Layer", "capture", "Capture", "FAMILIES", "atlas", "Atlas", "load_atlas", "show_atlas", "show", "show_model", "model_trace", "MODELS", "RelattnError", "presets", "methods", "stages", "OPTIONS", "ARRAYS", "from_seed_module"]

#: The keyword options of :func:`trace` and :func:`attention` (the command line's, with underscores).
OPTIONS = tuple(_relattn.option_names())
#: The array names they take.
ARRAYS = tuple(_relattn.array_names())


def presets():
    """The presets' names (the ``preset`` option)."""
    return list(_relattn.presets())


def methods():
    """The position schemes (the ``method`` option): absolute, shaw, music, rope, alibi, t5."""
    return list(_relattn.methods())


def stages():
    """Every stage's name, in pipeline order (the keys :func:`trace` may return, besides x, q, k, v, heads)."""
    return list(_relattn.stages())


def _split(x, kwargs):
    """(options, arrays): the keyword arguments that name arrays become arrays (read with numpy.asarray:
    no copy for a float32 CPU tensor or array), the rest stay options."""
    arrays = {}
    if x is not None:
        arrays["x"] = x
    for name in ARRAYS:
        if name in kwargs:
            arrays[name] = kwargs.pop(name)
    for name, a in arrays.items():
        try:
            if hasattr(a, "detach"):  # a PyTorch tensor: its data, without autograd, on the CPU
                a = a.detach().cpu()
                if str(getattr(a, "dtype", "")) in ("torch.float16", "torch.bfloat16"):  # NumPy has no bfloat16: widened as float16 is
                    a = a.float()
            a = _np.asarray(a)
        except Exception as e:  # a meta, sparse or nested tensor, an object NumPy cannot read
            from ._errors import refuse as _refuse

            raise _refuse(name, f"{type(a).__name__} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
                          "a dense float array or CPU tensor with data (NumPy, or torch's .to_dense() of a sparse one)") from None
        # Integers, booleans (a 0/1 key mask) and half floats as float32; anything else goes as it is, to be
        # refused by name.
        arrays[name] = a.astype(_np.float32) if a.dtype.kind in "iub" or a.dtype == _np.float16 else a
    return kwargs, arrays


def trace(x=None, **options):
    """Every intermediate of one layer, as a dict of NumPy arrays named as ``relattn compute``'s .npz.

    ``x`` (n, d_model) or (b, n, d_model) and any other array by name; options as the command line's
    (``method``, ``n``, ``d_model``, ``heads``, ``clip``, ``seed``, ``causal``, ``relative_values``, ``preset``,
    ``rope_base``, ``t5_buckets``, …: :data:`OPTIONS`); ``threads``: how many threads compute it (1 to 256;
    default one a core), a keyword every function here takes. The GIL is released while it computes.
    """
    options, arrays = _split(x, options)
    return _relattn.trace(options, arrays)


def attention(x=None, **options):
    """The layer's output (b, n, d_model) alone, by the fused forward (no (n, n) array): the arguments of
    :func:`trace`."""
    options, arrays = _split(x, options)
    return _relattn.attention(options, arrays)


def layer(x=None, **options):
    """The layer held on demand, a :class:`Layer`: its forward pass computed once (fused: no (n, n) array) and
    ``layer.stage(name, batch, head)`` computing any stage of any (batch, head) when asked, a block of query rows
    at a time. For layers whose whole :func:`trace` would not fit in memory (a Llama layer at n 2048: 32 heads of
    (2048, 2048) per stage). The arguments of :func:`trace`; ``layer.stages()``, ``layer.output()``,
    ``layer.dims()`` (batch, heads, n).
    """
    options, arrays = _split(x, options)
    return _relattn.layer(options, arrays)


def from_seed_module(module, x, mask=None):
    """The trace of a Shaw-style PyTorch module on input ``x`` (b, n, hidden): the seed notebook's
    ``RelationAwareMultiHeadAttention`` (``attention_heads[h].query_weights`` … and a shared
    ``relative_position_k/v.position_embeddings`` table of 2k + 1 rows, ``fc``), or any module with those
    attributes. Its weights are read without a copy where the layout allows; ``trace(...)["output"]`` equals
    ``module(x, x, x, mask)``.
    """
    heads = module.attention_heads
    h = len(heads)

    def cat(name, part):
        return _np.concatenate([_np.asarray(getattr(getattr(head, name), part).detach().cpu()) for head in heads], axis=0)

    arrays = {
        # nn.Linear keeps (out, in) and computes x Wᵀ + b; relattn computes x W + b: W = weightᵀ.
        "w_q": cat("query_weights", "weight").T, "w_k": cat("key_weights", "weight").T, "w_v": cat("value_weights", "weight").T,
        "b_q": cat("query_weights", "bias"), "b_k": cat("key_weights", "bias"), "b_v": cat("value_weights", "bias"),
        "w_o": _np.asarray(module.fc.weight.detach().cpu()).T, "b_o": _np.asarray(module.fc.bias.detach().cpu()),
        "rel_k": module.relative_position_k.position_embeddings, "rel_v": module.relative_position_v.position_embeddings,
    }
    width = arrays["w_q"].shape[0]  # the module's input width, d_model
    shape = tuple(getattr(x, "shape", None) or _np.shape(x))
    if not shape or shape[-1] != width:
        from ._errors import refuse as _refuse

        raise _refuse("x", f"shape {shape}", f"(…, {width}): the module's input width d_model")
    if mask is not None:
        arrays["key_mask"] = mask
    return trace(x, method="shaw", heads=h, clip=module.relative_position_k.k, **arrays)


def show(x=None, *, stages=(), batch=0, head=0, tokens=(), **options):
    """The stages of one (batch, head) of a layer as a notebook widget, drawn as the relattn page draws them
    (heatmaps with their formulas and axes, a tooltip with each cell's value, a pinned pair outlined in every
    (query, key) view, a PNG of any figure). The arguments of :func:`trace`, or a :class:`Capture` (its layer,
    titled with its model, part and layer, its tokens on the axes); ``stages`` picks some by name (all by
    default); ``tokens`` label the positions. Needs ``anywidget`` (``pip install anywidget``).
    """
    from .widget import figures

    caption = ""
    if isinstance(x, Capture):
        cap, x = x, None
        options = {**cap.options, **cap.arrays, **options}
        tokens = tokens or (cap.tokens[batch] if cap.tokens and batch < len(cap.tokens) else ())
        caption = cap.title()
    if isinstance(stages, str):  # one stage by its name
        stages = [stages]
    options, arrays = _split(x, options)
    return figures(options, arrays, batch=batch, head=head, stages=stages, tokens=tokens, caption=caption)


#: The trained chorale models inside the package (docs/src/models.md), one per position scheme.
MODELS = tuple(_relattn.models())
_MODELS = __import__("pathlib").Path(__file__).resolve().parent / "models"


#: Most bytes a model or data file may have: the library's limit (relattn.files::MAX_FILE_BYTES), as the command
#: line's and the page's.
MAX_FILE_BYTES = _relattn.MAX_FILE_BYTES


def _read_file(path, field, wanted):
    """A file's bytes, checked before it is read: a regular file (not a directory, a FIFO or a device such as
    /dev/zero) of at most :data:`MAX_FILE_BYTES`; refused by ``field`` otherwise."""
    import os
    import stat

    from ._errors import refuse as _refuse

    try:
        st = os.stat(path)
    except OSError as e:
        raise _refuse(field, f"{str(path)!r} ({e.strerror})", wanted) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(field, f"{str(path)!r} (not a regular file)", wanted)
    if st.st_size > MAX_FILE_BYTES:
        raise _refuse(field, f"{str(path)!r} ({st.st_size} bytes)", f"{wanted} of at most {MAX_FILE_BYTES} bytes")
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)  # should it grow meanwhile
    if len(data) > MAX_FILE_BYTES:
        raise _refuse(field, f"{str(path)!r} (over {MAX_FILE_BYTES} bytes)", wanted)
    return data


def _model_files(model, data):
    """The model's and the data's (path, bytes): a name of MODELS (the packaged files) or a path, each checked
    before it is read (:func:`_read_file`)."""
    import pathlib

    from ._errors import refuse as _refuse

    model_path = _MODELS / f"chorales-{model}.safetensors" if model in MODELS else pathlib.Path(model)
    data_path = _MODELS / "chorales-test.json" if data is None else pathlib.Path(data)
    for packaged in (p for p in (model_path, data_path) if p.parent == _MODELS and not p.exists()):
        raise _refuse("package", f"{packaged} missing", "a relattn built whole, with its models: `make wheel` in the repository, then pip install the wheel")
    names = ", ".join(MODELS)
    model_bytes = _read_file(model_path, "model", f"a name of relattn.MODELS ({names}) or a .safetensors file")
    data_bytes = _read_file(data_path, "data", "a chorale data file (.json)")
    return (str(model_path), model_bytes), (str(data_path), data_bytes)


def model_trace(model="music", *, piece, start=0, length=None, layer=0, head=0, data=None, threads=None):
    """Every attention stage of one head of a trained chorale model, on the real hidden states of a window of a
    Bach chorale: the arrays of ``relattn model trace``. ``model``: a name of :data:`MODELS` or a .safetensors
    path; ``data``: the chorale data (default: the packaged test split); ``piece``: a BWV number ("10.7").
    """
    (model_name, model_bytes), (data_name, data_bytes) = _model_files(model, data)
    return _relattn.model_trace(model_bytes, model_name, data_bytes, data_name, str(piece), start, length, layer, head, threads)


def show_model(model="music", *, piece, start=0, length=64, data=None, threads=None):
    """Model mode in a cell: every head of every layer of a trained chorale model, its attention weights on the
    real hidden states of a window of a Bach chorale, each titled with what the head does (its attention by
    distance, named in the piece's meter: "99 % on the predicted voice, one 16th back"). ``model``, ``data``
    and ``piece`` as :func:`model_trace`'s; ``length`` tokens from ``start`` (64: four bars of 4/4).
    """
    from .widget import widget

    (model_name, model_bytes), (data_name, data_bytes) = _model_files(model, data)
    return widget(*_relattn.model_figures(model_bytes, model_name, data_bytes, data_name, str(piece), start, length, threads))
