"""The notebook widget (anywidget): a layer's stages drawn as the relattn page draws them.

Everything it needs is inside the package: the page's own wasm module and its JavaScript glue
(``relattn/static/``, copied from www/pkg when the wheel is built) go to the browser when its first widget asks
(a custom message answered with a binary buffer and a string), so it works offline and behind a firewall (no
CDN), and a saved notebook keeps only the figures, not the 2 MB module once per widget. The stages' values
travel as one binary buffer of float32, not as JSON.
"""

import pathlib

import anywidget
import traitlets

from . import _relattn
from ._errors import refuse as _refuse

_HERE = pathlib.Path(__file__).resolve().parent


class Figures(anywidget.AnyWidget):
    """The stages of one (batch, head): heatmaps with a tooltip (the cell's exact value), a pinned pair
    outlined in every (query, key) view, and a PNG of any figure."""

    #: widget.js with the page's figure core bundled in (``make widget``).
    _esm = _HERE / "static" / "widget.js"
    #: The stages' metadata, shapes, colour ranges and offsets (JSON, from the crate).
    stages = traitlets.Unicode("[]").tag(sync=True)
    #: Their values, float32 little-endian, concatenated.
    values = traitlets.Bytes().tag(sync=True)
    #: Labels of the positions (a sentence's tokens), or empty.
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    #: The pair (i, j) pinned, or empty; set by a click in the notebook, readable here.
    pinned = traitlets.List(traitlets.Int()).tag(sync=True)


def _static(name):
    path = _HERE / "static" / name
    if not path.exists():
        raise _refuse("package", f"{path} missing", "a relattn built whole, with the widget's files: `make wheel` in the repository, then pip install the wheel")
    return path


def _send_wasm(widget, content, buffers):
    """Answers a widget's request for the page's wasm and glue (widget.js ``load``)."""
    if isinstance(content, dict) and content.get("type") == "wasm?":
        widget.send({"type": "wasm", "glue": _static("relattn.js").read_text(encoding="utf-8")}, [_static("relattn_bg.wasm").read_bytes()])


def widget(meta, values, tokens=()):
    """A :class:`Figures` widget of figures as the crate packs them (``meta``: JSON, ``values``: bytes); it asks
    for the page's wasm and glue from the package when drawn."""
    for name in ("relattn.js", "relattn_bg.wasm"):
        _static(name)  # refused now, by name, rather than when the browser asks
    w = Figures(stages=meta, values=values, tokens=list(tokens))
    w.on_msg(_send_wasm)
    return w


def figures(options, arrays, batch=0, head=0, stages=(), tokens=(), caption=""):
    """A :class:`Figures` widget of the layer that ``options`` and ``arrays`` describe, each title followed by
    ``caption`` when given (a captured layer's model and layer)."""
    meta, values = _relattn.figures(options, arrays, batch, head, list(stages), caption, len(tokens))
    return widget(meta, values, tokens)
