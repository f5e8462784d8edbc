"""Tests of the Python package (make test-python builds the wheel into target/pyvenv and runs these).

The command line's .npz is the reference for trace(): the same crate computes both, so every array must be
equal bit for bit. RELATTN_BIN names the relattn binary (the Makefile sets it).
"""

import os
import subprocess
import threading
import time
import pathlib

import numpy as np
import pytest

import relattn

HERE = pathlib.Path(__file__).resolve().parent
BIN = os.environ.get("RELATTN_BIN", str(HERE.parent.parent / "target" / "debug" / "relattn"))


def cli_npz(tmp_path, *args):
    out = tmp_path / "trace.npz"
    subprocess.run([BIN, "compute", *args, "--out", str(out)], check=True, capture_output=True)
    return np.load(out)


@pytest.mark.parametrize("method, extra", [
    ("shaw", ["--clip", "3"]),
    ("music", ["--clip", "4", "--causal"]),
    ("rope", ["--rope-layout", "half", "--rope-fraction", "0.5"]),
    ("alibi", ["--causal"]),
    ("t5", ["--t5-buckets", "8", "--t5-max-distance", "20"]),
    ("absolute", []),
    ("deberta", ["--position-buckets", "6", "--max-relative-positions", "12", "--deberta-terms", "both"]),
    ("bert_relative", ["--max-position", "11", "--bert-terms", "key_query"]),
    ("transformer_xl", ["--clip", "12", "--segments", "2"]),
])
def test_trace_is_the_cli_npz(tmp_path, method, extra):
    want = cli_npz(tmp_path, "--method", method, "--n", "11", "--d-model", "24", "--heads", "3", "--seed", "5", *extra)
    options = dict(method=method, n=11, d_model=24, heads=3, seed=5)
    flags = iter(extra)
    for flag in flags:
        name = flag[2:].replace("-", "_")
        options[name] = True if name == "causal" else next(flags)
    for name in ("clip", "t5_buckets", "t5_max_distance", "position_buckets", "max_relative_positions", "max_position", "segments"):
        if name in options:
            options[name] = int(options[name])
    if "rope_fraction" in options:
        options["rope_fraction"] = float(options["rope_fraction"])
    got = relattn.trace(**options)
    assert sorted(got) == sorted(want.files)
    for name in want.files:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_given_arrays_and_attention_equal_the_trace():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 10, 16)).astype(np.float32)
    w_q = rng.standard_normal((16, 16))  # float64 is read as float32
    t = relattn.trace(x, w_q=w_q, method="alibi", heads=4, causal=True)
    np.testing.assert_array_equal(t["x"], x)
    out = relattn.attention(x, w_q=w_q, method="alibi", heads=4, causal=True)
    assert out.shape == (2, 10, 16) and out.dtype == np.float32
    np.testing.assert_allclose(out, t["output"], rtol=1e-5, atol=1e-6)
    # A layer's slopes come from the paper; the stage shows every head's.
    np.testing.assert_allclose(t["slopes"][:, 0], [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8])


def test_errors_name_the_field():
    cases = [
        (dict(n=0), "n"),
        (dict(heads=5, d_model=16), "heads"),
        (dict(clip=-1), "clip"),
        (dict(method="relative"), "method"),
        (dict(rope_base=0.5, method="rope"), "rope_base"),
        (dict(t5_buckets=7, method="t5"), "t5_buckets"),
        (dict(colour="red"), "option"),
        (dict(n="twelve"), "n"),
        (dict(preset="nope"), "preset"),
        (dict(w_q=np.zeros((3, 3), np.float32)), "w_q"),
        (dict(x=np.array([["a"]])), "x"),
    ]
    for options, field in cases:
        with pytest.raises(relattn.RelattnError) as e:
            relattn.trace(**options)
        assert e.value.field == field, (options, e.value.field, str(e.value))
        assert isinstance(e.value, ValueError)
    with pytest.raises(relattn.RelattnError) as e:
        relattn.trace(n=11, x=np.full((4, 8), np.nan, np.float32))
    assert e.value.field == "x" and "NaN" in str(e.value)
    # Past the memory budget: refused before computing, naming what to reduce.
    with pytest.raises(relattn.RelattnError) as e:
        relattn.trace(n=8192, d_model=512, heads=8)
    assert e.value.kind == "too_large"


def test_numpy_inputs_are_read_without_a_copy():
    x = np.ones((5, 8), np.float32)
    _, arrays = relattn._split(x, {})
    assert np.shares_memory(arrays["x"], x)


class _Tensor:
    """A stand-in for a torch tensor of the fixture's numbers: what from_seed_module reads of one."""

    def __init__(self, a):
        self.a = a

    def detach(self):
        return self

    def cpu(self):
        return self

    def __array__(self, dtype=None, copy=None):
        return self.a


class _Obj:
    pass


def test_the_seed_module_gives_its_own_output():
    """relattn.from_seed_module on the seed notebook's RelationAwareMultiHeadAttention (its parameters, input
    and output saved by make_seed_fixture.py, torch not needed here) equals the module's output."""
    f = np.load(HERE / "fixtures" / "seed003.npz")
    hidden, heads, k, n = (int(v) for v in f["config"])
    module = _Obj()
    module.attention_heads = []
    for h in range(heads):
        head = _Obj()
        for part in ("query_weights", "key_weights", "value_weights"):
            lin = _Obj()
            lin.weight = _Tensor(f[f"param.attention_heads.{h}.{part}.weight"])
            lin.bias = _Tensor(f[f"param.attention_heads.{h}.{part}.bias"])
            setattr(head, part, lin)
        module.attention_heads.append(head)
    for side in ("k", "v"):
        rp = _Obj()
        rp.k = k
        rp.position_embeddings = _Tensor(f[f"param.relative_position_{side}.position_embeddings"])
        setattr(module, f"relative_position_{side}", rp)
    module.fc = _Obj()
    module.fc.weight, module.fc.bias = _Tensor(f["param.fc.weight"]), _Tensor(f["param.fc.bias"])
    t = relattn.from_seed_module(module, f["x"], mask=f["mask"])
    np.testing.assert_allclose(t["output"], f["output"], rtol=1e-5, atol=1e-5)
    assert t["weights"].shape == (2, heads, n, n)
    assert np.all(t["weights"][1, :, :, -2:] == 0)  # the padding keys
    # An input of another width is refused as x (not blamed on heads).
    with pytest.raises(relattn.RelattnError) as e:
        relattn.from_seed_module(module, f["x"][..., :-1])
    assert e.value.field == "x" and f"(…, {hidden})" in str(e.value)


def test_the_gil_is_released_while_computing():
    done = threading.Event()
    result = {}

    def work():
        result["out"] = relattn.attention(n=4096, d_model=256, heads=4, method="t5")
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    ticks = 0
    start = time.perf_counter()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    elapsed = time.perf_counter() - start
    # Python ran beside the computation: about one tick a millisecond, not one tick in all.
    assert ticks > 0.25 * elapsed * 1000 and ticks > 5, (ticks, elapsed)
    assert result["out"].shape == (1, 4096, 256)


def test_every_option_is_taken():
    """Each name in relattn.OPTIONS is an option trace() reads (an unknown one is refused as 'option')."""
    values = dict(preset="seed004", method="shaw", heads=3, clip=2, causal=False, relative_values=True, per_head_tables=False, relative_only=False,
                  logit_scale={"factor": 0.3}, window=3, chunk=4, softcap=30.0, norm_eps=1e-6, edge="zero", implementation="efficient", n=4, d_model=15, batch_size=2, seed=0,
                  rope_base=10000.0, rope_fraction=1.0, rope_layout="half", rope_scale=1.0, t5_buckets=32, t5_max_distance=128, position_buckets=256, max_relative_positions=512,
                  deberta_terms="both", max_position=512, bert_terms="key", segments=0, positions_in_x=False)
    assert sorted(values) == sorted(relattn.OPTIONS)
    relattn.trace(**values)


def test_names():
    assert relattn.methods() == ["absolute", "shaw", "music", "rope", "alibi", "t5", "deberta", "bert_relative", "transformer_xl"]
    assert "seed004" in relattn.presets() and "rope_kernel" in relattn.stages()
    assert "rope_base" in relattn.OPTIONS
    seed004 = relattn.trace(preset="seed004")
    np.testing.assert_array_equal(seed004["relative_logits"][0, 0, 0], [44, 23, 18, 18])


def test_model_trace_is_the_cli_npz(tmp_path):
    """A trained model's head on a window of BWV 10.7, from the packaged model and test split: the arrays of
    `relattn model trace`, and its refusals by name."""
    root = HERE.parent.parent
    out = tmp_path / "model.npz"
    subprocess.run([BIN, "model", "trace", "--model", str(root / "models" / "chorales-music.safetensors"), "--data", str(root / "models" / "chorales-test.json"),
                    "--piece", "10.7", "--start", "8", "--length", "40", "--layer", "1", "--head", "2", "--out", str(out)], check=True, capture_output=True)
    want = np.load(out)
    got = relattn.model_trace("music", piece="10.7", start=8, length=40, layer=1, head=2)
    assert sorted(got) == sorted(want.files)
    for name in want.files:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    for kwargs, field in [(dict(layer=3), "layer"), (dict(head=-1), "head"), (dict(start=5000), "start"), (dict(length=0), "length")]:
        with pytest.raises(relattn.RelattnError) as e:
            relattn.model_trace("shaw", piece="10.7", **kwargs)
        assert e.value.field == field
    with pytest.raises(relattn.RelattnError) as e:
        relattn.model_trace("absolute", piece="999.9")
    assert e.value.field == "piece"


def test_every_packaged_model_loads_by_its_name():
    """relattn.MODELS (the Rust library's list) names the six shipped models, each packaged and loadable by
    name: a causal head whose rows are distributions."""
    assert relattn.MODELS == ("music", "shaw", "rope", "alibi", "t5", "absolute")
    for name in relattn.MODELS:
        w = relattn.model_trace(name, piece="10.7", length=16, layer=0, head=0)["weights"]
        assert w.shape[-2:] == (16, 16), name
        np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-5, err_msg=name)
        assert np.all(np.triu(w.reshape(16, 16), 1) == 0), name


def test_widgets_carry_the_stages_and_values():
    """relattn.show and relattn.show_model build their widgets' data in Python (the drawing is
    tests/e2e/notebook.test.mjs's): the stages asked for, their values as float32 equal to the trace's."""
    import json

    w = relattn.show(method="shaw", n=6, d_model=8, heads=2, head=1, stages=["rel_index", "weights"])
    stages = json.loads(w.stages)
    assert [s["meta"]["name"] for s in stages] == ["rel_index", "weights"]
    values = np.frombuffer(w.values, dtype="<f4")
    t = relattn.trace(method="shaw", n=6, d_model=8, heads=2)
    weights = stages[1]
    np.testing.assert_array_equal(values[weights["offset"]:weights["offset"] + 36].reshape(6, 6), t["weights"][0, 1])
    with pytest.raises(relattn.RelattnError) as e:
        relattn.show(n=6, stages=["no_such_stage"])
    assert e.value.field == "stage"
    m = relattn.show_model("music", piece="10.7", length=32)
    figures = json.loads(m.stages)
    assert len(figures) == 3 * 4 and figures[5]["title"] == "layer 1, head 1" and figures[5]["meta"]["name"] == "weights"
    assert all("%" in f["formula"] or "spread" in f["formula"] for f in figures), [f["formula"] for f in figures]
    # A relative table carries its rows' readers (the page's, from Rust): seed 004's w^K row 2 (distance 0) is
    # read by the 4 pairs of the diagonal.
    seed = json.loads(relattn.show(preset="seed004", stages=["rel_k", "weights"]).stages)
    runs = seed[0]["readers"][2]
    assert sum(hi - lo for lo, hi in zip(runs[::2], runs[1::2])) == 4 and seed[1]["readers"] == []


def test_a_widget_keeps_no_wasm_in_its_state():
    """The page's wasm and glue go to the browser on request (a custom message), never into the widget's saved state."""
    from relattn.widget import _send_wasm

    w = relattn.show(method="rope", n=6, d_model=8, heads=2, stages=["weights"])
    state = w.get_state()
    assert not any(isinstance(v, (bytes, memoryview)) and len(v) > 100_000 for v in state.values()), {k: type(v) for k, v in state.items()}
    sent = []

    class Fake:
        def send(self, content, buffers):
            sent.append((content, buffers))

    _send_wasm(Fake(), {"type": "other"}, [])
    assert sent == []
    _send_wasm(Fake(), {"type": "wasm?"}, [])
    (content, [wasm]), = sent
    assert content["type"] == "wasm" and "export" in content["glue"] and wasm[:4] == b"\0asm"


def test_threads_is_a_keyword_of_every_call():
    """threads= picks the pool (the same numbers from 1 thread and 2); a bad count is refused by name."""
    one = relattn.trace(method="t5", n=40, d_model=16, heads=4, threads=1)
    two = relattn.trace(method="t5", n=40, d_model=16, heads=4, threads=2)
    np.testing.assert_array_equal(one["output"], two["output"])
    np.testing.assert_array_equal(relattn.attention(method="rope", n=9, heads=2, threads=1), relattn.attention(method="rope", n=9, heads=2))
    assert relattn.layer(method="alibi", n=9, heads=2, threads=1).stage("weights", 0, 1).shape == (9, 9)
    for bad in (0, 257, 1.5, "2", True):
        with pytest.raises(relattn.RelattnError) as e:
            relattn.trace(n=4, threads=bad)
        assert e.value.field == "threads", bad
    assert relattn.model_trace("music", piece="10.7", length=8, threads=1)["weights"].shape[-1] == 8


def test_the_wheel_carries_a_release_wasm_and_the_models():
    """make wheel brings in the page's wasm built without the test hooks, the widget and the models."""
    import pathlib

    static = pathlib.Path(relattn.__file__).parent / "static"
    glue = (static / "relattn.js").read_text()
    assert "debug_panic" not in glue and "export function draw_frame" in glue
    assert (static / "widget.js").stat().st_size > 1000
    assert {f"chorales-{m}.safetensors" for m in relattn.MODELS} <= {p.name for p in (static.parent / "models").iterdir()}


def test_every_entry_point_refuses_by_name():
    """Issue #41's Python cases, each a RelattnError naming its field (none a panic, an OverflowError, a raw
    torch or OS error, a blocked read or a wrong field)."""
    import json
    import tempfile

    torch = pytest.importorskip("torch")

    def field_of(f):
        with pytest.raises(relattn.RelattnError) as e:
            f()
        return e.value.field

    fifo = os.path.join(tempfile.mkdtemp(), "fifo")
    os.mkfifo(fifo)
    cases = [
        (lambda: relattn.trace(method="t5", t5_buckets=10**8), "t5_buckets"),  # the option's range before the memory it needs
        (lambda: relattn.model_trace("T5", piece="10.7"), "model"),
        (lambda: relattn.model_trace("/tmp", piece="10.7"), "model"),
        (lambda: relattn.model_trace(fifo, piece="10.7"), "model"),  # not read: a FIFO would block
        (lambda: relattn.model_trace("music", data="/dev/zero", piece="10.7"), "data"),  # not read: it never ends
        (lambda: relattn.model_trace(head=2**63, piece="10.7"), "head"),
        (lambda: relattn.model_trace(layer=1.5, piece="10.7"), "layer"),
        (lambda: relattn.show(batch=-1), "batch index"),
        (lambda: relattn.layer(n=4).stage("weights", -1, 0), "batch index"),
        (lambda: relattn.layer(n=4).stage("weights", 0, 2**63), "head"),
        (lambda: relattn.show(n=4, tokens=["a", "b"]), "tokens"),
        (lambda: relattn.show(method="t5", n=4096), "stages"),  # refused before the 4096² stages are computed
        (lambda: relattn.trace(torch.empty(4, 8, device="meta")), "x"),
        (lambda: relattn.trace(torch.eye(8).to_sparse()), "x"),
    ]
    for f, field in cases:
        assert field_of(f) == field
    # Refused by name, and said with the models' names.
    with pytest.raises(relattn.RelattnError, match="music"):
        relattn.model_trace("T5", piece="10.7")
    # One stage by its name; a reversed (negative-stride) array is read in its logical order.
    assert [s["meta"]["name"] for s in json.loads(relattn.show(n=4, stages="weights").stages)] == ["weights"]
    slopes = np.array([0.5, 0.25], np.float32)
    np.testing.assert_array_equal(relattn.attention(n=8, d_model=16, heads=2, method="alibi", alibi_slopes=slopes[::-1]),
                                  relattn.attention(n=8, d_model=16, heads=2, method="alibi", alibi_slopes=slopes[::-1].copy()))


def test_ctrl_c_stops_a_long_computation_within_a_second():
    """Ctrl-C (a KeyboardInterrupt for the main thread) during a computation of about ten seconds lands as
    KeyboardInterrupt within a second, not when the computation ends nor as a PanicException; the next call
    computes as usual. (#41 item 6: 52 s late at n 80000.)"""
    import _thread
    import signal

    # Ctrl-C reaches Python as KeyboardInterrupt through its SIGINT handler, which Python installs only when it
    # starts with SIGINT at its default: a test run started in the background of a non-interactive shell
    # inherits SIGINT ignored, and interrupt_main would then do nothing. Installed here, as in a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            relattn.attention(method="rope", n=60000, d_model=64, heads=1, threads=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    late = time.perf_counter() - start - 0.5
    timer.join()
    assert late < 1.0, f"KeyboardInterrupt {late:.2f} s after Ctrl-C"
    assert relattn.attention(method="rope", n=8, d_model=16, heads=2).shape == (1, 8, 16)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), np.float32("nan")])
@pytest.mark.parametrize("name", ["rope_base", "rope_scale", "rope_fraction", "n", "clip", "t5_max_distance"])
def test_a_non_finite_option_is_refused_by_name_in_every_entry_point(name, value):
    """Issue #52 item 7: NaN or ±∞ is no option's value (JSON would carry it as null, unset: the default taken
    without a word); every entry point that takes options refuses it naming the option and its range."""
    calls = [relattn.trace, relattn.attention, relattn.layer]
    try:
        import anywidget  # noqa: F401

        calls.append(relattn.show)
    except ImportError:
        pass
    for call in calls:
        with pytest.raises(relattn.RelattnError) as e:
            call(method="rope", heads=2, **{name: value})
        assert e.value.field == name, (call.__name__, e.value.field, str(e.value))
        assert "finite" in str(e.value)
    # An unknown keyword with NaN is still an unknown option.
    with pytest.raises(relattn.RelattnError) as e:
        relattn.trace(method="rope", heads=2, no_such_option=float("nan"))
    assert e.value.field == "option"
