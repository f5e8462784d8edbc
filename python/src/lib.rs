//! relattn for Python (`relattn._relattn`, wrapped by `relattn/__init__.py`): the crate's layer behind two
//! calls, with the command line's options as keyword arguments ([`LayerOptions`]) and arrays in and out as NumPy.
//!
//! - `trace(options, tensors)`: every intermediate, as a dict named as the CLI's .npz ([`Trace::arrays`]);
//! - `attention(options, tensors)`: the layer's output (b, n, d_model) alone, by the fused forward;
//! - `layer(options, tensors)`: the layer held on demand, any stage of any (batch, head) computed when asked;
//! - `model_trace(...)`: a trained model's layer on a window of a Bach chorale, as `relattn model trace`;
//! - `figures(...)`: one (batch, head)'s stages with their metadata, for the notebook widget;
//! - `presets()`, `methods()`, `stages()`: the names the options take.
//!
//! Errors are `relattn.RelattnError` (a `ValueError`) with the message the CLI prints and the attributes
//! `field` (the option or array at fault) and `kind`. The GIL is released while the layer computes.

use ndarray::ArrayD;
use numpy::{IntoPyArray, PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use relattn::error::Error;
use relattn::layer::forward::{self, Sizes, DEFAULT_MEMORY_LIMIT};
use relattn::layer::on_demand::{block_bytes, stage_work_bytes, Layer};
use relattn::layer::presets::NAMES as PRESETS;
use relattn::layer::scenario::{Arrays, Scenario, NAMES};
use relattn::layer::stage_meta::StageMeta;
use relattn::layer::trace::{Named, Trace};
use relattn::options::{LayerOptions, Limits, Resolved};
use relattn::positions::Method;
use relattn::protocol::{Cut, NotebookFigure};
use relattn::render::value_range;
use relattn::stage::Stage;
use relattn::trained::chorales::Chorales;
use relattn::trained::heads::{describe, distance_distribution, Meter};
use relattn::trained::transformer::Transformer;
use relattn::Backend;

create_exception!(_relattn, RelattnError, PyValueError, "A refused option or array: `field` names it, `kind` says how (invalid, shape, ...).");

/// The crate's error as a RelattnError with its field and kind; an interruption (Ctrl-C during a computation)
/// as KeyboardInterrupt.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    if e == Error::Interrupted {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err("relattn stopped its computation");
    }
    let err = RelattnError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("field", e.field());
    let _ = value.setattr("kind", e.kind().name());
    err
}

/// A refusal of `field` in the options themselves.
fn refuse(py: Python<'_>, field: &str, given: impl std::fmt::Display, allowed: impl std::fmt::Display) -> PyErr {
    py_err(py, Error::invalid(field, given, allowed))
}

/// A keyword's value as JSON, as the page's requests carry it: None leaves the option unset; a bool, an integer,
/// a float (NumPy's scalars too) or a string as it is, a dict of those by string keys as an object
/// (`logit_scale={"factor": 0.0625}`); anything else refused by name.
fn json_of(py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<serde_json::Value>> {
    use pyo3::types::{PyBool, PyFloat, PyString};
    Ok(Some(if value.is_none() {
        return Ok(None);
    } else if value.is_instance_of::<PyBool>() {
        value.extract::<bool>()?.into()
    } else if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = serde_json::Map::new();
        for (key, v) in dict.iter() {
            let Ok(key) = key.extract::<String>() else {
                return Err(refuse(py, name, value.repr().map(|r| r.to_string()).unwrap_or_default(), "a dict with string keys"));
            };
            object.extend(json_of(py, name, &v)?.map(|v| (key, v)));
        }
        object.into()
    } else if value.is_instance_of::<PyString>() {
        value.extract::<String>()?.into()
    } else if let (false, Ok(i)) = (value.is_instance_of::<PyFloat>(), value.extract::<i64>()) {
        i.into()
    } else if let Ok(f) = value.extract::<f64>() {
        match option_help(name) {
            // JSON has no NaN or ∞ (serde_json would make it null: unset, the default taken without a word).
            Some(help) if !f.is_finite() => {
                let given = if f.is_nan() { "NaN (not a number)".to_string() } else { format!("{}∞", if f < 0.0 { "−" } else { "" }) };
                return Err(refuse(py, name, given, format!("a finite number: {help}")));
            }
            _ => f.into(), // an unknown keyword's: refused by name as an unknown option
        }
    } else {
        let given = value.repr().map(|r| r.to_string()).unwrap_or_default();
        return Err(refuse(py, name, given, "a number, True or False, a string, or a dict of those"));
    }))
}

/// What option `name` allows, as its help says it (the command line's `--help`: its range and default), for a
/// refused NaN or ∞; None for a name that is not an option.
fn option_help(name: &str) -> Option<String> {
    use clap::Args;
    let cmd = LayerOptions::augment_args(clap::Command::new("options"));
    let arg = cmd.get_arguments().find(|a| a.get_id() == name)?;
    Some(arg.get_help().map_or_else(|| name.to_string(), |h| h.to_string()))
}

/// Reads the keyword options into [`LayerOptions`] by serde, as the page's requests are read; a value of the
/// wrong type is refused naming its keyword (an unknown keyword is refused by [`LayerOptions::resolve`]).
fn options(py: Python<'_>, kwargs: &Bound<'_, PyDict>) -> PyResult<LayerOptions> {
    let mut given = serde_json::Map::new();
    for (key, value) in kwargs.iter() {
        let name: String = key.extract()?;
        if name == THREADS {
            continue; // not a layer's option: how many threads compute it (threads_of)
        }
        if let Some(v) = json_of(py, &name, &value)? {
            given.insert(name, v);
        }
    }
    serde_json::from_value(given.clone().into()).map_err(|whole| {
        // The keyword at fault: the first one refused alone.
        let one = |(k, v): (&String, &serde_json::Value)| {
            serde_json::from_value::<LayerOptions>(serde_json::json!({ k: v })).err().map(|e| (k.clone(), v.to_string(), e))
        };
        match given.iter().find_map(one) {
            Some((name, v, e)) => refuse(py, &name, v, e),
            None => refuse(py, "option", "these options", whole),
        }
    })
}

/// The given arrays (float32 or float64, any layout: read once into the layer's own arrays), by the names of
/// a scenario file.
fn arrays(py: Python<'_>, tensors: &Bound<'_, PyDict>) -> PyResult<Arrays> {
    let mut out = Arrays::new();
    for (key, value) in tensors.iter() {
        let name: String = key.extract()?;
        if !NAMES.contains(&name.as_str()) {
            return Err(refuse(py, "array name", format!("'{name}'"), NAMES.join(", ")));
        }
        let a: ArrayD<f32> = if let Ok(a) = value.extract::<PyReadonlyArrayDyn<f32>>() {
            a.as_array().to_owned()
        } else if let Ok(a) = value.extract::<PyReadonlyArrayDyn<f64>>() {
            a.as_array().mapv(|v| v as f32)
        } else {
            let dtype = value.getattr("dtype").map(|d| d.to_string()).unwrap_or_else(|_| "not an array".into());
            return Err(refuse(py, &name, dtype, "a float32 or float64 array"));
        };
        out.insert(name, a);
    }
    Ok(out)
}

/// The scenario of the options and tensors, within the CLI's default memory budget with or without a whole
/// trace, plus the `extra` bytes the caller needs for these sizes.
fn scenario(
    py: Python<'_>,
    kwargs: &Bound<'_, PyDict>,
    tensors: &Bound<'_, PyDict>,
    trace: bool,
    extra: impl Fn(&relattn::Config, &Sizes) -> Option<u64>,
) -> PyResult<(relattn::Config, Scenario, usize)> {
    let threads = threads_of(py, kwargs)?;
    let Resolved { config, spec, mut arrays, per_head_tables } = options(py, kwargs)?.resolve(&Limits::NONE).map_err(|e| py_err(py, e))?;
    arrays.extend(self::arrays(py, tensors)?);
    let spec = relattn::layer::scenario::sizes_of(&arrays, &spec).map_err(|e| py_err(py, e))?;
    // The options' own ranges first (T5's buckets, RoPE's pairs, heads dividing d_model), then the memory they need.
    let widths = relattn::layer::scenario::check_config(&config, &spec, &arrays).map_err(|e| py_err(py, e))?;
    let sizes = Sizes {
        batch: spec.batch,
        n: spec.n,
        d_model: spec.d_model,
        per_head_tables,
        trace,
        parallel: threads,
        widths: widths.own(spec.d_model, config.heads),
    };
    forward::check_budget(&config, &sizes, extra, DEFAULT_MEMORY_LIMIT).map_err(|e| py_err(py, e))?;
    let sc = compute(py, threads, || Scenario::build(&config, &spec, arrays, per_head_tables)).map_err(|e| py_err(py, e))?;
    Ok((config, sc, threads))
}

/// A whole-number argument `field` (a Python or NumPy int; a float, a bool or a string refused by name): beyond
/// i64 it saturates, so that the range check it meets next names the field with its real range.
fn whole_arg(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    let given = || v.repr().map(|r| r.to_string()).unwrap_or_default();
    if v.is_instance_of::<pyo3::types::PyBool>() || v.is_instance_of::<pyo3::types::PyFloat>() {
        return Err(refuse(py, field, given(), "a whole number"));
    }
    let int = v.call_method0("__index__").map_err(|_| refuse(py, field, given(), "a whole number"))?;
    Ok(int.extract::<i64>().unwrap_or_else(|_| if int.gt(0).unwrap_or(false) { i64::MAX } else { i64::MIN }))
}

/// An index argument `field` (a batch element, a head) as usize: negative refused by name; beyond usize it
/// saturates, for the index check to name its range.
fn index_arg(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<usize> {
    let i = whole_arg(py, field, v)?;
    usize::try_from(i).map_err(|_| refuse(py, field, i, "0 or more"))
}

/// The keyword that sets how many threads compute a call (beside the layer's options).
const THREADS: &str = "threads";
/// Most threads a call may ask for.
const MAX_THREADS: i64 = 256;

/// Threads by default: one a core.
fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The `threads` keyword of `kwargs` (None or absent: one a core), a whole number 1..=256, refused by name.
fn threads_of(py: Python<'_>, kwargs: &Bound<'_, PyDict>) -> PyResult<usize> {
    threads(py, kwargs.get_item(THREADS)?.as_ref())
}

/// A `threads` value (None: one a core), a whole number 1..=256, refused by name.
fn threads(py: Python<'_>, v: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(rayon_threads()) };
    let given = || v.repr().map(|r| r.to_string()).unwrap_or_default();
    match v.extract::<i64>() {
        Ok(n) if !v.is_instance_of::<pyo3::types::PyBool>() && (1..=MAX_THREADS).contains(&n) => Ok(n as usize),
        _ => Err(refuse(py, THREADS, given(), format!("a whole number in 1..={MAX_THREADS} (default: one a core)"))),
    }
}

/// Runs `f` inside this module's rayon pool of `threads` threads (made once for each count asked), the GIL
/// released. Called from outside a pool, each of the layer's parallel steps would be handed to the global pool
/// and waited for (1.4× the time at n 2048 on 2 cores); inside, the calling thread is one of the workers, as in
/// the command line. Meanwhile the calling thread looks for Ctrl-C every 50 ms: on one it asks the computation
/// to stop ([`relattn::core::cancel`]: every relattn computation running then stops at its next head, tile or
/// block) and returns [`Error::Interrupted`], which [`py_err`] raises as KeyboardInterrupt.
fn compute<T: Send>(py: Python<'_>, threads: usize, f: impl FnOnce() -> relattn::Result<T> + Send) -> relattn::Result<T> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    static POOLS: Mutex<Option<HashMap<usize, Arc<rayon::ThreadPool>>>> = Mutex::new(None);
    let pool = {
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        let pools = pools.get_or_insert_with(HashMap::new);
        match pools.get(&threads) {
            Some(p) => Some(p.clone()),
            None => rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok().map(|p| pools.entry(threads).or_insert(Arc::new(p)).clone()),
        }
    };
    py.detach(|| {
        std::thread::scope(|scope| {
            let (done, result) = std::sync::mpsc::channel();
            scope.spawn(move || {
                let r = match pool {
                    Some(pool) => pool.install(f),
                    None => f(),
                };
                let _ = done.send(r);
            });
            let mut interrupted = false;
            loop {
                match result.recv_timeout(std::time::Duration::from_millis(50)) {
                    Ok(r) if interrupted => {
                        relattn::core::cancel::clear();
                        return r.and(Err(Error::Interrupted));
                    }
                    Ok(r) => return r,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if !interrupted && Python::attach(|py| py.check_signals()).is_err() {
                            interrupted = true;
                            relattn::core::cancel::request();
                        }
                    }
                    // The computation panicked: the scope re-raises its panic when it ends.
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Error::Interrupted),
                }
            }
        })
    })
}

/// Every intermediate of the layer: a dict of NumPy arrays named as the CLI's .npz.
#[pyfunction]
fn trace<'py>(py: Python<'py>, kwargs: &Bound<'py, PyDict>, tensors: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let (config, sc, threads) = scenario(py, kwargs, tensors, true, |_, _| Some(0))?;
    let t = compute(py, threads, || forward::trace(&config, &sc)).map_err(|e| py_err(py, e))?;
    arrays_of(py, &t)
}

/// A layer held on demand (`relattn.Layer`): its forward pass computed once, fused (no (n, n) array), and any
/// stage of any (batch, head) computed when asked, a block of query rows at a time: O(n·d_model) memory beside
/// the stage asked, for layers whose whole trace would not fit (a Llama layer at n 2048 has 32 heads of
/// (2048, 2048) per stage).
#[pyclass(module = "relattn._relattn", name = "Layer", frozen)]
struct PyLayer {
    layer: Layer,
    threads: usize,
}

#[pymethods]
impl PyLayer {
    /// Stage `stage` of (batch, head) (0 each by default; whole numbers, refused by name) as a 2-D array (a
    /// table's or a scheme's stage as it is).
    #[pyo3(signature = (stage, batch=None, head=None))]
    fn stage<'py>(
        &self,
        py: Python<'py>,
        stage: &str,
        batch: Option<&Bound<'py, PyAny>>,
        head: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let index = |field: &str, v: Option<&Bound<'py, PyAny>>| v.map_or(Ok(0), |v| index_arg(py, field, v));
        let (batch, head) = (index("batch index", batch)?, index("head", head)?);
        let stage: Stage = stage.parse().map_err(|e| py_err(py, e))?;
        let m = compute(py, self.threads, || self.layer.stage(stage, batch, head)).map_err(|e| py_err(py, e))?;
        Ok(m.into_dyn().into_pyarray(py))
    }

    /// The stages this layer has, in pipeline order.
    fn stages(&self) -> Vec<&'static str> {
        self.layer.stages().into_iter().map(Stage::name).collect()
    }

    /// The layer's output (b, n, d_model).
    fn output<'py>(&self, py: Python<'py>) -> Bound<'py, PyArrayDyn<f32>> {
        self.layer.output.clone().into_dyn().into_pyarray(py)
    }

    /// (batch, heads, n).
    fn dims(&self) -> (usize, usize, usize) {
        self.layer.dims()
    }
}

/// Every head of every batch element of the layer of the options and tensors summarised by position
/// ([`relattn::atlas`], from the layer's projections a block of query rows at a time): a dict of `metrics` (b, h,
/// M) by the names `atlas_metrics()` gives, `offset_weight`, `offset_queries` and `offset_term` (b, h, 2n − 1) at
/// offsets −(n − 1)..n − 1, `band_q` and `band_k` (b, h, P: RoPE's pairs, else P = 0). `tokens` (b, n) integer
/// ids, for the duplicate-token and induction scores (NaN without).
#[pyfunction]
#[pyo3(signature = (kwargs, tensors, tokens=None))]
fn atlas<'py>(
    py: Python<'py>,
    kwargs: &Bound<'py, PyDict>,
    tensors: &Bound<'py, PyDict>,
    tokens: Option<PyReadonlyArrayDyn<'py, i64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (config, sc, threads) = scenario(py, kwargs, tensors, false, |cfg, s| block_bytes(cfg, s.n, s.d_model / cfg.heads.max(1)))?;
    let (b, n, _) = sc.dims();
    let h = config.heads;
    let tokens = tokens.map(|t| t.as_array().to_owned());
    if let Some(t) = &tokens {
        if t.shape() != [b, n] {
            return Err(refuse(py, "tokens", format!("shape {:?}", t.shape()), format!("(batch, n) = ({b}, {n}), one id per position")));
        }
    }
    let heads = compute(py, threads, || {
        let layer = relattn::atlas::Projected::new(&config, sc)?;
        (0..b)
            .map(|bi| {
                let row = tokens.as_ref().map(|t| t.index_axis(ndarray::Axis(0), bi).iter().copied().collect::<Vec<i64>>());
                relattn::atlas::summarize(&layer, bi, row.as_deref())
            })
            .collect::<relattn::Result<Vec<_>>>()
    })
    .map_err(|e| py_err(py, e))?;
    let bands = heads[0][0].band_q.len();
    let width = 2 * n - 1;
    let gather = |len: usize, f: &dyn Fn(&relattn::atlas::HeadSummary) -> Vec<f64>| {
        ndarray::Array3::from_shape_vec((b, h, len), heads.iter().flatten().flat_map(f).collect()).expect("every head's length").into_dyn()
    };
    let out = PyDict::new(py);
    out.set_item("metrics", gather(relattn::atlas::METRICS.len(), &|s| s.metrics.to_vec()).into_pyarray(py))?;
    out.set_item("offset_weight", gather(width, &|s| s.offset_weight.clone()).into_pyarray(py))?;
    out.set_item("offset_queries", gather(width, &|s| s.offset_queries.iter().map(|&c| c as f64).collect()).into_pyarray(py))?;
    out.set_item("offset_term", gather(width, &|s| s.offset_term.clone()).into_pyarray(py))?;
    out.set_item("band_q", gather(bands, &|s| s.band_q.clone()).into_pyarray(py))?;
    out.set_item("band_k", gather(bands, &|s| s.band_k.clone()).into_pyarray(py))?;
    Ok(out)
}

/// An atlas file's bytes (`Atlas.save`'s .npz) as the self-contained HTML page `relattn atlas render --out x.html`
/// writes and the page exports: the grid of layer × head tiles coloured by `metric`, `order`ed (head, metric or
/// kv_head), `width` pixels wide (400..=8000), with tooltips; no external resource.
#[pyfunction]
#[pyo3(signature = (data, metric="first_token", order="head", width=1200))]
fn atlas_html(py: Python<'_>, data: &[u8], metric: &str, order: &str, width: i64) -> PyResult<String> {
    use relattn::render::atlas::{html, AtlasView, GridSpec, Order};
    let atlas = relattn::files::atlas::Atlas::read(data, "the atlas", DEFAULT_MEMORY_LIMIT).map_err(|e| py_err(py, e))?;
    let view = AtlasView::of(&atlas);
    view.metric(metric).map_err(|e| py_err(py, e))?;
    let order: Order = serde_json::from_value(serde_json::json!(order)).map_err(|e| refuse(py, "order", format!("'{order}'"), e))?;
    let width = relattn::error::in_range("width", width, 400..=8000, "pixels").map_err(|e| py_err(py, e))? as u32;
    html(&view, &GridSpec { metric: metric.into(), order, width, height: None, text_scale: 1.0 })
        .map_err(|e| refuse(py, "atlas", "a grid that cannot be drawn", e))
}

/// The names of the atlas's metrics, in the order of `atlas(...)['metrics']`' last axis.
#[pyfunction]
fn atlas_metrics() -> Vec<&'static str> {
    relattn::atlas::METRICS.to_vec()
}

/// The layer of the options and tensors held on demand ([`PyLayer`]), within the memory budget of its forward
/// pass and one whole stage.
#[pyfunction]
fn layer(py: Python<'_>, kwargs: &Bound<'_, PyDict>, tensors: &Bound<'_, PyDict>) -> PyResult<PyLayer> {
    let (config, sc, threads) = scenario(py, kwargs, tensors, false, stage_work_bytes)?;
    let layer = compute(py, threads, || {
        let (projections, output) = forward::forward_projected(&config, &sc)?;
        Layer::new(&config, sc, projections, output)
    })
    .map_err(|e| py_err(py, e))?;
    Ok(PyLayer { layer, threads })
}

/// The layer's output (b, n, d_model), by the fused forward: no (n, n) array.
#[pyfunction]
fn attention<'py>(py: Python<'py>, kwargs: &Bound<'py, PyDict>, tensors: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let (config, sc, threads) = scenario(py, kwargs, tensors, false, |_, _| Some(0))?;
    let out = compute(py, threads, || forward::forward(&config, &sc)).map_err(|e| py_err(py, e))?;
    Ok(out.into_dyn().into_pyarray(py))
}

/// Every stage of head `head` of layer `layer` of a trained model on a window of a piece, as a dict named as
/// `relattn model trace`'s .npz: the model's safetensors and the chorale data's JSON as bytes (their names for
/// messages), the piece's BWV number, the window's `start` and `length` (None: the model's context).
#[pyfunction]
#[pyo3(signature = (model, model_name, data, data_name, piece, start, length, layer, head, threads=None))]
#[allow(clippy::too_many_arguments)]
fn model_trace<'py>(
    py: Python<'py>,
    model: &[u8],
    model_name: &str,
    data: &[u8],
    data_name: &str,
    piece: &str,
    start: &Bound<'py, PyAny>,
    length: Option<Bound<'py, PyAny>>,
    layer: &Bound<'py, PyAny>,
    head: &Bound<'py, PyAny>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let threads = self::threads(py, threads.as_ref())?;
    let (start, layer, head) = (whole_arg(py, "start", start)?, whole_arg(py, "layer", layer)?, whole_arg(py, "head", head)?);
    let length = length.filter(|l| !l.is_none()).map(|l| whole_arg(py, "length", &l)).transpose()?;
    let err = |e| py_err(py, e);
    let model = Transformer::load(model, model_name).map_err(err)?;
    let data = Chorales::parse(data, data_name).map_err(err)?;
    let tokens = &data.piece(piece).map_err(err)?.tokens;
    let t = compute(py, threads, || pollster::block_on(model.window_trace(&mut Backend::Cpu, tokens, start, length, layer, head))).map_err(err)?;
    arrays_of(py, &t)
}

/// Model mode's view of a window, for `relattn.show_model`: every head of every layer's attention weights on
/// the real hidden states, each titled with what the head does (`heads::describe`, from its attention by
/// distance, in the piece's meter), as `figures` gives them (JSON, values).
#[pyfunction]
#[pyo3(signature = (model, model_name, data, data_name, piece, start, length, threads=None))]
#[allow(clippy::too_many_arguments)]
fn model_figures<'py>(
    py: Python<'py>,
    model: &[u8],
    model_name: &str,
    data: &[u8],
    data_name: &str,
    piece: &str,
    start: &Bound<'py, PyAny>,
    length: Option<Bound<'py, PyAny>>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let threads = self::threads(py, threads.as_ref())?;
    let start = whole_arg(py, "start", start)?;
    let length = length.filter(|l| !l.is_none()).map(|l| whole_arg(py, "length", &l)).transpose()?;
    let err = |e| py_err(py, e);
    let model = Transformer::load(model, model_name).map_err(err)?;
    let data = Chorales::parse(data, data_name).map_err(err)?;
    let p = data.piece(piece).map_err(err)?;
    let meter = Meter::of(&p.time_signature, data.steps_per_quarter);
    let mut packed = Packed::default();
    for layer in 0..model.config.layers {
        // One trace a layer (all its heads); the window's checks are the CLI's.
        let t =
            compute(py, threads, || pollster::block_on(model.window_trace_layer(&mut Backend::Cpu, &p.tokens, start, length, layer as i64))).map_err(err)?;
        for head in 0..model.config.heads {
            let w = t.stage(Stage::Weights, 0, head).map_err(err)?;
            let what = describe(&distance_distribution(w.view()), meter);
            packed.push(t.meta(Stage::Weights), (format!("layer {layer}, head {head}"), what), w.view(), Vec::new());
        }
    }
    packed.finish(py)
}

/// Figures for the widget as `figures` and `model_figures` give them: a JSON list of [`NotebookFigure`]s (each
/// one's metadata, cut with the page's colour range ([`value_range`]), title, formula, offset into the values
/// and a table's readers), then the values, float32 little-endian.
#[derive(Default)]
struct Packed {
    list: Vec<NotebookFigure>,
    values: Vec<f32>,
}

impl Packed {
    /// Adds the matrix `m` of a stage under `meta`, shown with `title` and `formula`, its table rows read by
    /// `readers`.
    fn push(&mut self, meta: StageMeta, (title, formula): (String, String), m: ndarray::ArrayView2<f32>, readers: Vec<Vec<u32>>) {
        // Keys after the query (causal) or out of the window get no weight: out of the colour range, as the page's
        // cuts leave them.
        let reach = relattn::positions::table::Reach { causal: meta.masked_above, window: meta.masked_window, chunk: meta.masked_chunk };
        let (lo, hi) = if reach.causal || reach.window.is_some() {
            value_range(ndarray::Array2::from_shape_fn(m.dim(), |(i, j)| if reach.sees(i, j) { m[[i, j]] } else { f32::NEG_INFINITY }).view(), meta.scale)
        } else {
            value_range(m, meta.scale)
        };
        let (rows, cols) = m.dim();
        let cut = Cut { rows, cols, raster_rows: rows, raster_cols: cols, lo, hi, has_values: true, heads_shared: false, own_scale: false };
        self.list.push(NotebookFigure { meta, cut, title, formula, offset: self.values.len(), readers });
        self.values.extend(m.iter());
    }

    /// The JSON list and the values' bytes.
    fn finish(self, py: Python<'_>) -> PyResult<(String, Bound<'_, PyBytes>)> {
        let bytes: Vec<u8> = self.values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let list = serde_json::to_string(&self.list).map_err(|e| refuse(py, "figures", e, "figures that serialize"))?;
        Ok((list, PyBytes::new(py, &bytes)))
    }
}

/// A trace's arrays as a dict of NumPy arrays ([`Trace::arrays`]).
fn arrays_of<'py>(py: Python<'py>, t: &Trace) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (name, a) in t.arrays().map_err(|e| py_err(py, e))? {
        match a {
            Named::F32(a) => out.set_item(name, a.into_owned().into_pyarray(py))?,
            Named::I64(a) => out.set_item(name, a.to_owned().into_pyarray(py))?,
        }
    }
    Ok(out)
}

/// The figures of one (batch, head) of a layer, for `relattn.show`: a JSON list of every stage's
/// metadata (`meta`: the page's StageMeta), shape, colour range (`lo`, `hi`, as the page's) and `offset`
/// into the values, and the values themselves (float32, row-major, concatenated). `stages` picks some by name
/// (empty: all), at most [`MAX_WIDGET_CELLS`] cells in all; `caption`, when not empty, follows each title (a
/// captured layer's model and layer); `tokens`: how many labels the widget was given (0, or n). The layer is
/// held on demand: only the stages asked are computed. Errors as `trace`'s, and "stage", "stages", "head",
/// "batch index", "tokens".
#[pyfunction]
#[pyo3(signature = (kwargs, tensors, batch, head, stages, caption, tokens))]
#[allow(clippy::too_many_arguments)]
fn figures<'py>(
    py: Python<'py>,
    kwargs: &Bound<'py, PyDict>,
    tensors: &Bound<'py, PyDict>,
    batch: &Bound<'py, PyAny>,
    head: &Bound<'py, PyAny>,
    stages: Vec<String>,
    caption: &str,
    tokens: usize,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let (batch, head) = (index_arg(py, "batch index", batch)?, index_arg(py, "head", head)?);
    // The layer on demand (as `layer` holds it): only the stages asked, of the (batch, head) asked, are computed.
    let PyLayer { layer, threads } = self::layer(py, kwargs, tensors)?;
    let (config, n) = (layer.config, layer.dims().2);
    if tokens != 0 && tokens != n {
        return Err(refuse(py, "tokens", format!("{tokens} tokens"), format!("exactly n = {n} tokens (one per position), or none")));
    }
    let wanted: Vec<Stage> = if stages.is_empty() {
        layer.stages()
    } else {
        stages.iter().map(|s| s.parse::<Stage>()).collect::<relattn::Result<_>>().map_err(|e| py_err(py, e))?
    };
    // The widget's message holds every value (its tooltips read them): bounded before anything is computed.
    let cells: u64 = wanted.iter().map(|&st| layer.shape(st)).map(|(r, c)| (r * c) as u64).sum();
    if cells > MAX_WIDGET_CELLS {
        let given = format!("{} stages of {cells} cells ({})", wanted.len(), relattn::error::Bytes(cells * 4));
        let allowed = format!("at most {MAX_WIDGET_CELLS} cells in one widget: fewer stages (stages=[...]) or a smaller n; relattn.layer(...).stage(...) gives any stage's numbers");
        return Err(refuse(py, "stages", given, allowed));
    }
    let mut packed = Packed::default();
    let scheme = config.scheme();
    for stage in wanted {
        let m = compute(py, threads, || layer.stage(stage, batch, head)).map_err(|e| py_err(py, e))?;
        let meta = layer.meta(stage);
        let readers = if stage == Stage::RelK { (0..m.nrows()).map(|row| scheme.reader_runs(row, n)).collect() } else { Vec::new() };
        let title = if caption.is_empty() { meta.title.to_string() } else { format!("{} — {caption}", meta.title) };
        packed.push(meta.clone(), (title, meta.formula.to_string()), m.view(), readers);
    }
    packed.finish(py)
}

/// Most cells one widget's figures hold: 2²⁴ (64 MiB of float32), sixteen 1024 × 1024 stages.
const MAX_WIDGET_CELLS: u64 = 1 << 24;

/// The presets' names.
#[pyfunction]
fn presets<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, PRESETS)
}

/// The position schemes' names (the `method` option).
#[pyfunction]
fn methods<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, Method::ALL.map(|m| m.to_string()))
}

/// The shipped chorale models' names (relattn's `trained::MODELS`), in the order docs/src/models.md lists them.
#[pyfunction]
fn models<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, relattn::trained::MODELS.map(Method::name))
}

/// Every stage's name, in pipeline order.
#[pyfunction]
fn stages<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, Stage::ALL.map(Stage::name))
}

/// The array names `trace` and `attention` take (a scenario file's).
#[pyfunction]
fn array_names<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, NAMES)
}

/// The options `trace` and `attention` take ([`LayerOptions::names`]).
#[pyfunction]
fn option_names<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, LayerOptions::names())
}

#[pymodule]
fn _relattn(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RelattnError", m.py().get_type::<RelattnError>())?;
    // The library's one limit on a file's size, read by the package's own file checks (relattn.MAX_FILE_BYTES).
    m.add("MAX_FILE_BYTES", relattn::files::MAX_FILE_BYTES)?;
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(attention, m)?)?;
    m.add_function(wrap_pyfunction!(layer, m)?)?;
    m.add_function(wrap_pyfunction!(atlas, m)?)?;
    m.add_function(wrap_pyfunction!(atlas_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(atlas_html, m)?)?;
    m.add_class::<PyLayer>()?;
    m.add_function(wrap_pyfunction!(figures, m)?)?;
    m.add_function(wrap_pyfunction!(model_trace, m)?)?;
    m.add_function(wrap_pyfunction!(model_figures, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(methods, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(stages, m)?)?;
    m.add_function(wrap_pyfunction!(option_names, m)?)?;
    m.add_function(wrap_pyfunction!(array_names, m)?)?;
    Ok(())
}
