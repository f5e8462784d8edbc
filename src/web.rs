//! The browser's entry points: a [`Session`] holds one trace and hands the page one stage of one
//! (batch, head) at a time, as f32 values and an RGBA raster that JavaScript reads straight out of the
//! wasm memory (`new Float32Array(memory.buffer, ptr, len)`), with no copy. [`draw_frame`] draws a
//! figure's frame (title, formula and shape, axes, colorbar) on a canvas and returns the plot area, where
//! the page blits the cells itself.
//!
//! Errors reach JavaScript as an `Error` whose `field` property names the offending control.

use crate::attention::{Config, Method};
use crate::error::{Bytes, Error};
use crate::model;
use crate::presets;
use crate::render::{self, Cells, Colormap, Figure, Palette};
use crate::scenario::{self, Arrays, Scenario, Spec};
use crate::timing::now_ms;
use crate::trace::{Scale, Stage, Trace};
use ndarray::Array2;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::prelude::*;

mod backend;

/// Largest sequence length the page accepts.
pub const MAX_N: usize = 4096;
/// Largest d_model the page accepts.
pub const MAX_D_MODEL: usize = 4096;
/// Most heads.
pub const MAX_HEADS: usize = 64;
/// Memory one trace may take in the browser, by [`page_bytes`] (1.5 GiB: wasm32 has at most 4 GiB in all,
/// and the worker holds the trace shown while it computes the next one).
pub const MEMORY_LIMIT: u64 = 3 << 29;

#[wasm_bindgen(start)]
pub fn start() {
    // A panic aborts the wasm instance: console_error_panic_hook logs it with its message, and the global
    // scope's `relattnPanicked(message)` is called, when it has one, before the abort: the worker and the
    // page replace this instance from there, whether the panic is in a call they can catch or in an async
    // future (whose promise then never settles).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            console_error_panic_hook::hook(info);
            let global = js_sys::global();
            if let Ok(f) = js_sys::Reflect::get(&global, &"relattnPanicked".into()).and_then(|f| f.dyn_into::<js_sys::Function>()) {
                let _ = f.call1(&global, &info.to_string().into());
            }
        }));
    });
}

/// Test hook, not a feature: panics on purpose, so the e2e test (tests/e2e/reliability.test.mjs) can
/// check that a panic in the worker or in the page's own instance is reported and the page recovers. The
/// page never calls it; the test sends the worker a `{ kind: 'debug-panic' }` message, or calls it in the
/// page, from the browser's devtools protocol.
#[wasm_bindgen]
pub fn debug_panic() {
    panic!("debug_panic(): a panic on purpose (test hook)");
}

/// Test hook, not a feature: panics inside an async future after an await, where a panic in [`compute`]
/// would happen (its promise never settles). The test sends the worker `{ kind: 'debug-panic-async' }`.
#[wasm_bindgen]
pub async fn debug_panic_async() {
    let _ = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL)).await;
    panic!("debug_panic_async(): a panic on purpose inside an async future (test hook)");
}

/// Bytes of wasm linear memory this instance has (it only grows): for checking the memory budget.
#[wasm_bindgen]
pub fn memory_bytes() -> f64 {
    wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64
}

thread_local! {
    /// The colormaps of this module instance (the page and the worker each set theirs).
    static PALETTE: std::cell::Cell<Palette> = std::cell::Cell::new(Palette::default());
}

fn palette() -> Palette {
    PALETTE.with(|p| p.get())
}

/// Picks the colormaps used from now on by [`Session::select`], [`Session::svg`] and [`draw_frame`]:
/// `sequential` viridis or cividis, `diverging` red_blue or purple_green.
#[wasm_bindgen]
pub fn set_colormaps(sequential: &str, diverging: &str) -> Result<(), JsValue> {
    let pick = |field: &str, name: &str, allowed: [Colormap; 2]| {
        Colormap::from_name(name)
            .filter(|c| allowed.contains(c))
            .ok_or_else(|| to_js(Error::invalid(field, format!("'{name}'"), allowed.map(Colormap::name).join(", "))))
    };
    let sequential = pick("sequential", sequential, [Colormap::Viridis, Colormap::Cividis])?;
    let diverging = pick("diverging", diverging, [Colormap::RedBlue, Colormap::PurpleGreen])?;
    PALETTE.with(|p| p.set(Palette { sequential, diverging }));
    Ok(())
}

/// An error as a JavaScript `Error` with a `field` property.
fn js_error(field: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    let _ = js_sys::Reflect::set(&e, &"field".into(), &field.into());
    e.into()
}

fn to_js(e: Error) -> JsValue {
    js_error(e.field(), &e.to_string())
}

/// A whole number in `lo..=hi`, or an error naming `field`.
fn whole(field: &str, v: f64, lo: usize, hi: usize) -> Result<usize, JsValue> {
    if !v.is_finite() || v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
        let given = if v.is_finite() { format!("{v}") } else { "nothing (not a number)".into() };
        return Err(to_js(Error::invalid(field, given, format!("a whole number in {lo}..={hi}"))));
    }
    Ok(v as usize)
}

/// Bytes a trace takes at its peak in this module's wasm memory, or `None` past u64. [`model::estimate_bytes`]
/// plus what the page adds, measured in chromium with [`memory_bytes`] (README "Reliability"): the per-head
/// traces and their stacked copies coexist while the trace is assembled, the distance and row matrices are
/// i64, the value buckets have 2k+1 columns (k up to 4096), and [`Session::select`] holds a stage three times
/// (the cut, its values, its pixels).
pub fn page_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Option<u64> {
    let (b, n, h) = (spec.batch as u64, spec.n as u64, cfg.heads.max(1) as u64);
    let sizes = |trace| model::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace, parallel: 1 };
    let with_trace = model::estimate_bytes(cfg, &sizes(true))?;
    let stored = with_trace - model::estimate_bytes(cfg, &sizes(false))?;
    let rows = cfg.table_rows() as u64;
    let buckets = if cfg.has_rel_v() { n.checked_mul(rows)? } else { 0 };
    let widest = if cfg.method == Method::Music { 2 * n } else { n }.max(rows);
    let extra = buckets.checked_mul(2 * b * h + 1)?.checked_mul(4)?.checked_add(16 * n * n)?.checked_add(n.checked_mul(widest)?.checked_mul(12)?)?;
    with_trace.checked_add(stored)?.checked_add(extra)
}

/// Refuses a trace whose [`page_bytes`] exceed [`MEMORY_LIMIT`], before any of it is allocated: the message
/// has the estimate, the limit and the largest n that would fit with these heads (field "n").
fn page_budget(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Result<(), JsValue> {
    let fits = |n: usize| page_bytes(cfg, &Spec { n, ..*spec }, per_head_tables).is_some_and(|b| b <= MEMORY_LIMIT);
    if fits(spec.n) {
        return Ok(());
    }
    let lo = model::largest_fitting(0, spec.n, fits); // 0: no n fits
    let hint = if lo >= 1 {
        format!("use n ≤ {lo} with {} head(s){}", cfg.heads, if cfg.heads > 1 { ", or fewer heads" } else { "" })
    } else {
        "use fewer heads or a smaller batch".into()
    };
    let needs = page_bytes(cfg, spec, per_head_tables).map_or("more than 16 EiB".into(), |b| format!("about {}", Bytes(b)));
    let message = format!(
        "too large for the page: this trace (n = {}, batch = {}, d_model = {}, heads = {}) needs {needs} of memory, but the page's limit is {}; {hint}",
        spec.n,
        spec.batch,
        spec.d_model,
        cfg.heads,
        Bytes(MEMORY_LIMIT)
    );
    Err(js_error("n", &message))
}

/// One trace and the stage last selected.
#[wasm_bindgen]
pub struct Session {
    trace: Trace,
    stages: Vec<Stage>,
    preset: String,
    seed: u64,
    per_head_tables: bool,
    d_model: usize,
    values: Vec<f32>,
    rgba: Vec<u8>,
    rows: usize,
    cols: usize,
    range: (f32, f32),
    timings: Vec<(String, f64)>,
    /// Milliseconds of each compute stage ([`crate::timing::StageTimes::named`]), head stages summed over
    /// heads; empty where only totals are known (the GPU path).
    stage_times: Vec<(&'static str, f64)>,
    /// Where the trace was computed, for the footer: "CPU (wasm)" or "WebGPU: <adapter>".
    backend: String,
    /// Why a GPU that was asked for (Auto or WebGPU) was not used for this trace; empty when it was, or
    /// when the CPU was asked for.
    backend_note: String,
}

/// What a trace is computed from: a preset, the controls, or a scenario file, resolved.
pub(crate) struct Inputs {
    cfg: Config,
    spec: Spec,
    arrays: Arrays,
    per_head: bool,
    preset: String,
}

impl Inputs {
    /// A preset (when `preset` is not empty; the other parameters are then ignored) or the controls.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn of(
        preset: &str,
        method: &str,
        n: f64,
        d_model: f64,
        heads: f64,
        clip: f64,
        causal: bool,
        rel_v: bool,
        per_head_tables: bool,
        seed: f64,
    ) -> Result<Inputs, JsValue> {
        if !preset.is_empty() {
            let p = presets::preset(preset).map_err(to_js)?;
            return Ok(Inputs { cfg: p.config, spec: p.spec, arrays: p.arrays, per_head: p.per_head_tables, preset: preset.into() });
        }
        let (cfg, spec) = custom(method, n, d_model, heads, clip, causal, rel_v, seed)?;
        Ok(Inputs { cfg, spec, arrays: Arrays::new(), per_head: per_head_tables, preset: String::new() })
    }

    /// A scenario file's bytes (see [`Session::from_tensors`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn of_file(
        bytes: &[u8],
        file_name: &str,
        method: &str,
        n: f64,
        d_model: f64,
        heads: f64,
        clip: f64,
        causal: bool,
        rel_v: bool,
        per_head_tables: bool,
        seed: f64,
    ) -> Result<Inputs, JsValue> {
        let arrays = scenario::read_arrays(bytes, file_name).map_err(to_js)?;
        let (cfg, spec) = custom(method, n, d_model, heads, clip, causal, rel_v, seed)?;
        // x fixes the sizes: the controls' n and d_model are not used (nor checked against it).
        let spec = scenario::sizes_of(&arrays, &spec).map_err(to_js)?;
        Ok(Inputs { cfg, spec, arrays, per_head: per_head_tables, preset: String::new() })
    }

    /// The scenario, after checking that its trace fits [`MEMORY_LIMIT`] (on either backend the trace is
    /// held in the wasm memory).
    pub(crate) fn scenario(&mut self) -> Result<Scenario, JsValue> {
        page_budget(&self.cfg, &self.spec, self.per_head)?;
        Scenario::build(&self.cfg, &self.spec, std::mem::take(&mut self.arrays), self.per_head).map_err(to_js)
    }
}

#[wasm_bindgen]
impl Session {
    /// Computes a trace. With a non-empty `preset` the other parameters are ignored. Throws an `Error`
    /// whose `field` names the bad parameter.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        preset: &str,
        method: &str,
        n: f64,
        d_model: f64,
        heads: f64,
        clip: f64,
        causal: bool,
        rel_v: bool,
        per_head_tables: bool,
        seed: f64,
    ) -> Result<Session, JsValue> {
        let t0 = now_ms();
        Session::build(Inputs::of(preset, method, n, d_model, heads, clip, causal, rel_v, per_head_tables, seed)?, t0)
    }

    /// Computes a trace from a scenario file's bytes (.npz or .npy, README "Scenario files"); the
    /// other parameters as in the constructor (n and d_model are used only when the file has no `x`).
    /// Errors about the file itself have `field` "file"; shape errors name the array.
    #[allow(clippy::too_many_arguments)]
    pub fn from_tensors(
        bytes: &[u8],
        file_name: &str,
        method: &str,
        n: f64,
        d_model: f64,
        heads: f64,
        clip: f64,
        causal: bool,
        rel_v: bool,
        per_head_tables: bool,
        seed: f64,
    ) -> Result<Session, JsValue> {
        let t0 = now_ms();
        Session::build(Inputs::of_file(bytes, file_name, method, n, d_model, heads, clip, causal, rel_v, per_head_tables, seed)?, t0)
    }

    /// The trace on the CPU.
    fn build(mut inp: Inputs, t0: f64) -> Result<Session, JsValue> {
        let sc = inp.scenario()?;
        let t1 = now_ms();
        let (trace, times) = model::trace_timed(&inp.cfg, &sc).map_err(to_js)?;
        let t2 = now_ms();
        let mut s = Session::assemble(trace, &inp, &sc, vec![("scenario".into(), t1 - t0), ("trace".into(), t2 - t1)], backend::CPU.into(), String::new());
        s.stage_times = times.named();
        Ok(s)
    }

    /// A session around a trace computed on either backend.
    fn assemble(trace: Trace, inp: &Inputs, sc: &Scenario, timings: Vec<(String, f64)>, backend: String, backend_note: String) -> Session {
        let stages = trace.stages();
        Session {
            trace,
            stages,
            preset: inp.preset.clone(),
            seed: inp.spec.seed,
            per_head_tables: inp.per_head,
            d_model: sc.dims().2,
            values: Vec::new(),
            rgba: Vec::new(),
            rows: 0,
            cols: 0,
            range: (0.0, 1.0),
            timings,
            stage_times: Vec::new(),
            backend,
            backend_note,
        }
    }

    /// Where this trace was computed: "CPU (wasm)" or "WebGPU: <adapter>".
    pub fn backend(&self) -> String {
        self.backend.clone()
    }
    /// Why the GPU asked for was not used ("" when it was, or when the CPU was asked for).
    pub fn backend_note(&self) -> String {
        self.backend_note.clone()
    }

    /// The whole trace as an .npz (uncompressed), under the CLI's names (`relattn compute --out`).
    pub fn npz(&self) -> Result<Vec<u8>, JsValue> {
        let mut out = std::io::Cursor::new(Vec::new());
        self.trace.write_npz(&mut out).map_err(to_js)?;
        Ok(out.into_inner())
    }

    pub fn preset(&self) -> String {
        self.preset.clone()
    }
    pub fn method(&self) -> String {
        self.trace.config.method.to_string()
    }
    pub fn batch(&self) -> usize {
        self.trace.dims().0
    }
    pub fn heads(&self) -> usize {
        self.trace.dims().1
    }
    pub fn n(&self) -> usize {
        self.trace.dims().2
    }
    pub fn d_model(&self) -> usize {
        self.d_model
    }
    pub fn clip(&self) -> usize {
        self.trace.config.clip
    }
    pub fn causal(&self) -> bool {
        self.trace.config.causal
    }
    pub fn rel_v(&self) -> bool {
        self.trace.config.rel_v
    }
    pub fn per_head_tables(&self) -> bool {
        self.per_head_tables
    }
    pub fn seed(&self) -> f64 {
        self.seed as f64
    }

    /// How many stages this trace has.
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }
    fn stage_at(&self, i: usize) -> Result<Stage, JsValue> {
        self.stages.get(i).copied().ok_or_else(|| to_js(Error::invalid("stage", i, format!("0..{}", self.stages.len()))))
    }
    pub fn stage_name(&self, i: usize) -> Result<String, JsValue> {
        Ok(self.stage_at(i)?.name().into())
    }
    pub fn stage_title(&self, i: usize) -> Result<String, JsValue> {
        Ok(self.stage_at(i)?.title(self.trace.config.method).into())
    }
    pub fn stage_formula(&self, i: usize) -> Result<String, JsValue> {
        Ok(self.stage_at(i)?.formula(self.trace.config.method).into())
    }
    /// Whether the stage uses the sequential colormap (else diverging, centred on 0).
    pub fn stage_sequential(&self, i: usize) -> Result<bool, JsValue> {
        Ok(self.stage_at(i)?.scale() == Scale::Sequential)
    }

    /// Cuts stage `i` of (batch, head) and colours it; read it through the pointers below.
    pub fn select(&mut self, i: usize, batch: usize, head: usize) -> Result<(), JsValue> {
        let t0 = now_ms();
        let stage = self.stage_at(i)?;
        let m: Array2<f32> = self.trace.stage(stage, batch, head).map_err(to_js)?;
        let (rgba, range) = render::rgba_with(m.view(), stage.scale(), palette());
        (self.rows, self.cols) = m.dim();
        self.range = range;
        self.values = m.as_standard_layout().iter().copied().collect();
        self.rgba = rgba;
        let ms = now_ms() - t0;
        match self.timings.iter_mut().find(|(name, _)| name == stage.name()) {
            Some(t) => t.1 = ms,
            None => self.timings.push((stage.name().into(), ms)),
        }
        Ok(())
    }
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Lower end of the colour range of the selected stage.
    pub fn lo(&self) -> f32 {
        self.range.0
    }
    pub fn hi(&self) -> f32 {
        self.range.1
    }
    pub fn values_ptr(&self) -> *const f32 {
        self.values.as_ptr()
    }
    pub fn values_len(&self) -> usize {
        self.values.len()
    }
    pub fn rgba_ptr(&self) -> *const u8 {
        self.rgba.as_ptr()
    }
    pub fn rgba_len(&self) -> usize {
        self.rgba.len()
    }

    /// The parts of logit (i, j) of (batch, head): `{ i, j, distance, row, content, relative, logit, weight }`;
    /// `row` is the table row used (−1: a zero vector).
    pub fn tooltip(&self, batch: usize, head: usize, i: usize, j: usize) -> Result<JsValue, JsValue> {
        let (b, h, n) = self.trace.dims();
        whole("batch index", batch as f64, 0, b - 1)?;
        whole("head", head as f64, 0, h - 1)?;
        whole("i", i as f64, 0, n - 1)?;
        whole("j", j as f64, 0, n - 1)?;
        let o = js_sys::Object::new();
        let set = |k: &str, v: f64| {
            let _ = js_sys::Reflect::set(&o, &k.into(), &v.into());
        };
        set("i", i as f64);
        set("j", j as f64);
        set("distance", j as f64 - i as f64);
        set("row", self.trace.rel_index[[i, j]] as f64);
        set("content", self.trace.content_logits[[batch, head, i, j]] as f64);
        set("relative", self.trace.relative_logits[[batch, head, i, j]] as f64);
        set("logit", self.trace.logits[[batch, head, i, j]] as f64);
        set("weight", self.trace.weights[[batch, head, i, j]] as f64);
        Ok(o.into())
    }

    /// `[{ name, ms }]`: building the scenario, the trace, and cutting and colouring each selected stage.
    pub fn timings(&self) -> JsValue {
        let arr = js_sys::Array::new();
        for (name, ms) in &self.timings {
            let o = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&o, &"name".into(), &name.into());
            let _ = js_sys::Reflect::set(&o, &"ms".into(), &(*ms).into());
            arr.push(&o);
        }
        arr.into()
    }

    /// `[{ name, ms }]` of each compute stage (projections, content_logits, relative_logits, scale_mask,
    /// logits = their sum, softmax, values, output), head stages summed over heads (CPU time); empty on
    /// the GPU, where the page has only the total.
    pub fn stage_times(&self) -> JsValue {
        let arr = js_sys::Array::new();
        for (name, ms) in &self.stage_times {
            let o = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&o, &"name".into(), &(*name).into());
            let _ = js_sys::Reflect::set(&o, &"ms".into(), &(*ms).into());
            arr.push(&o);
        }
        arr.into()
    }
}

/// `values` (rows × cols, row-major) as a matrix, or an error naming `values`.
fn matrix(values: &[f32], rows: usize, cols: usize) -> Result<Array2<f32>, JsValue> {
    Array2::from_shape_vec((rows, cols), values.to_vec()).map_err(|_| js_error("values", &format!("{} values do not fill {rows} × {cols}", values.len())))
}

/// The figure the page describes for a matrix; empty label lists mean indices.
#[allow(clippy::too_many_arguments)]
fn figure<'a>(
    m: &'a Array2<f32>,
    title: &str,
    subtitle: &str,
    x_desc: &str,
    y_desc: &str,
    sequential: bool,
    x_labels: Vec<String>,
    y_labels: Vec<String>,
) -> Figure<'a> {
    let labels = |l: Vec<String>| if l.is_empty() { None } else { Some(l) };
    Figure {
        matrix: m.view(),
        title: title.into(),
        subtitle: subtitle.into(),
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        x_labels: labels(x_labels),
        y_labels: labels(y_labels),
        scale: if sequential { Scale::Sequential } else { Scale::Diverging },
        palette: palette(),
    }
}

/// A figure as SVG text of width × height, drawn by `render::draw` on plotters' SVG backend; the
/// arguments as in [`draw_frame`]. Returns `{ svg, painted, area: [x0, x1, y0, y1] }`. Up to 64 × 64
/// cells are vector rectangles (`painted`); larger matrices are left out, because plotters-svg has no
/// bitmap encoder in wasm and a rectangle per pixel would be megabytes: the caller puts the cells'
/// raster (one pixel per cell) in `area` as an `<image>`. A free function, not a `Session` method: text
/// layout in plotters' wasm fonts measures with the DOM, which the page has and its worker has not.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn draw_svg(
    title: &str,
    subtitle: &str,
    x_desc: &str,
    y_desc: &str,
    values: &[f32],
    rows: usize,
    cols: usize,
    sequential: bool,
    x_labels: Vec<String>,
    y_labels: Vec<String>,
    width: u32,
    height: u32,
) -> Result<JsValue, JsValue> {
    let m = matrix(values, rows, cols)?;
    let fig = figure(&m, title, subtitle, x_desc, y_desc, sequential, x_labels, y_labels);
    let painted = rows * cols <= render::MAX_VECTOR_CELLS;
    let mut svg = String::new();
    let (x, y) = {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let r = render::draw(&root, &fig, if painted { Cells::Paint } else { Cells::Leave }).map_err(|e| js_error("svg", &e))?;
        root.present().map_err(|e| js_error("svg", &e.to_string()))?;
        r
    };
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &"svg".into(), &svg.into());
    let _ = js_sys::Reflect::set(&o, &"painted".into(), &painted.into());
    let area = js_sys::Array::of4(&x.start.into(), &x.end.into(), &y.start.into(), &y.end.into());
    let _ = js_sys::Reflect::set(&o, &"area".into(), &area);
    Ok(o.into())
}

/// The controls' Config and Spec for a custom (not preset) trace.
#[allow(clippy::too_many_arguments)]
fn custom(method: &str, n: f64, d_model: f64, heads: f64, clip: f64, causal: bool, rel_v: bool, seed: f64) -> Result<(Config, Spec), JsValue> {
    let method: Method = method.parse().map_err(to_js)?;
    let n = whole("n", n, 1, MAX_N)?;
    let d_model = whole("d_model", d_model, 1, MAX_D_MODEL)?;
    let heads = whole("heads", heads, 1, MAX_HEADS)?;
    if d_model % heads != 0 {
        return Err(to_js(Error::invalid("heads", heads, format!("a divisor of d_model = {d_model} (1..={MAX_HEADS})"))));
    }
    let clip = whole("clip", clip, 0, MAX_N)?;
    let seed = whole("seed", seed, 0, u32::MAX as usize)? as u64;
    let cfg = Config { method, heads, clip, causal, rel_v, ..Config::default() };
    Ok((cfg, Spec { n, d_model, batch: 1, seed }))
}

/// Names of the presets.
#[wasm_bindgen]
pub fn preset_names() -> Vec<String> {
    presets::NAMES.iter().map(|s| s.to_string()).collect()
}

/// A preset's one-line description.
#[wasm_bindgen]
pub fn preset_description(name: &str) -> Result<String, JsValue> {
    Ok(presets::preset(name).map_err(to_js)?.description.into())
}

/// Draws a figure's frame on `canvas` (title, subtitle, axes with labels or indices, colorbar) and
/// leaves the cells to the caller; returns the plot area `[x0, x1, y0, y1]` in canvas pixels.
/// `values` (rows × cols, row-major) sets the axes and the colour range; empty labels mean indices.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn draw_frame(
    canvas: web_sys::HtmlCanvasElement,
    title: &str,
    subtitle: &str,
    x_desc: &str,
    y_desc: &str,
    values: &[f32],
    rows: usize,
    cols: usize,
    sequential: bool,
    x_labels: Vec<String>,
    y_labels: Vec<String>,
) -> Result<Vec<i32>, JsValue> {
    let m = matrix(values, rows, cols)?;
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or_else(|| js_error("canvas", "no 2-D context"))?;
    let root = backend.into_drawing_area();
    let fig = figure(&m, title, subtitle, x_desc, y_desc, sequential, x_labels, y_labels);
    let (x, y) = render::draw(&root, &fig, Cells::Leave).map_err(|e| js_error("canvas", &e))?;
    root.present().map_err(|e| js_error("canvas", &e.to_string()))?;
    Ok(vec![x.start, x.end, y.start, y.end])
}

/// The browser benchmark's hooks (www/bench.html): a generated scenario whose forward pass (no trace kept)
/// and a side × side raster the page times with `performance.now()`.
#[wasm_bindgen]
pub struct Bench {
    cfg: Config,
    sc: Scenario,
    rgba: Vec<u8>,
}

#[wasm_bindgen]
impl Bench {
    #[wasm_bindgen(constructor)]
    pub fn new(method: &str, n: usize, d_model: usize, heads: usize, clip: usize) -> Result<Bench, JsValue> {
        let cfg = Config { method: method.parse().map_err(to_js)?, heads, clip, ..Config::default() };
        let spec = Spec { n, d_model, batch: 1, seed: 0 };
        let sizes = model::Sizes { batch: 1, n, d_model, per_head_tables: false, trace: false, parallel: 1 };
        model::check_budget(&cfg, &sizes, 0, MEMORY_LIMIT).map_err(to_js)?;
        let sc = Scenario::build(&cfg, &spec, Arrays::new(), false).map_err(to_js)?;
        Ok(Bench { cfg, sc, rgba: Vec::new() })
    }

    /// One forward pass.
    pub fn forward(&self) -> Result<(), JsValue> {
        model::forward(&self.cfg, &self.sc).map(drop).map_err(to_js)
    }

    /// Colours a side × side matrix of signed values into RGBA; returns the pixels' address in wasm memory.
    pub fn raster(&mut self, side: usize) -> *const u8 {
        let m = Array2::from_shape_fn((side, side), |(i, j)| ((i * 31 + j * 17) % 101) as f32 - 50.0);
        self.rgba = render::rgba(m.view(), Scale::Diverging).0;
        self.rgba.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn get(o: &JsValue, k: &str) -> f64 {
        js_sys::Reflect::get(o, &k.into()).unwrap().as_f64().unwrap()
    }
    fn field(e: &JsValue) -> String {
        js_sys::Reflect::get(e, &"field".into()).unwrap().as_string().unwrap()
    }

    #[wasm_bindgen_test]
    fn seed004_relative_logits_match_the_seed() {
        let s = Session::new("seed004", "", 0.0, 0.0, 0.0, 0.0, false, false, false, 0.0).unwrap();
        assert_eq!((s.batch(), s.heads(), s.n(), s.clip()), (2, 3, 4, 2));
        let rel: Vec<f64> = (0..4).map(|j| get(&s.tooltip(0, 0, 0, j).unwrap(), "relative")).collect();
        assert_eq!(rel, vec![44.0, 23.0, 18.0, 18.0]);
        let t = s.tooltip(0, 0, 1, 0).unwrap();
        assert_eq!(get(&t, "relative"), -29.0);
        assert_eq!(get(&t, "row"), 1.0);
        assert_eq!(get(&s.tooltip(0, 0, 1, 1).unwrap(), "relative"), 129.0);
    }

    #[wasm_bindgen_test]
    fn select_exposes_values_and_pixels_in_memory() {
        let mut s = Session::new("", "music", 16.0, 32.0, 2.0, 4.0, true, false, false, 7.0).unwrap();
        let names: Vec<String> = (0..s.stage_count()).map(|i| s.stage_name(i).unwrap()).collect();
        assert!(names.iter().any(|n| n == "skew_padded"), "{names:?}");
        let w = names.iter().position(|n| n == "weights").unwrap();
        s.select(w, 0, 1).unwrap();
        assert_eq!((s.rows(), s.cols()), (16, 16));
        assert_eq!(s.values_len(), 256);
        assert_eq!(s.rgba_len(), 1024);
        let mem = wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>();
        let view = js_sys::Float32Array::new_with_byte_offset_and_length(&mem.buffer(), s.values_ptr() as u32, s.values_len() as u32);
        let row0: f32 = (0..16).map(|j| view.get_index(j)).sum();
        assert!((row0 - 1.0).abs() < 1e-5, "weights of row 0 sum to {row0}");
        assert!(view.get_index(1) == 0.0, "causal: key 1 is masked for query 0");
        assert!(s.timings().unchecked_into::<js_sys::Array>().length() >= 3);
        // The CPU trace's stages, timed with performance.now() (std's Instant panics in wasm).
        let stages: Vec<(String, f64)> = s
            .stage_times()
            .unchecked_into::<js_sys::Array>()
            .iter()
            .map(|o| (js_sys::Reflect::get(&o, &"name".into()).unwrap().as_string().unwrap(), get(&o, "ms")))
            .collect();
        let names: Vec<&str> = stages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]);
        assert!(stages.iter().all(|(_, ms)| ms.is_finite() && *ms >= 0.0), "{stages:?}");
    }

    #[wasm_bindgen_test]
    fn bad_input_names_the_field() {
        let bad = |n: f64, d: f64, h: f64, method: &str| Session::new("", method, n, d, h, 2.0, false, true, false, 0.0).err().map(|e| field(&e));
        assert_eq!(bad(0.0, 16.0, 1.0, "shaw").as_deref(), Some("n"));
        assert_eq!(bad(5000.0, 16.0, 1.0, "shaw").as_deref(), Some("n"));
        assert_eq!(bad(8.0, 16.0, 3.0, "shaw").as_deref(), Some("heads"));
        assert_eq!(bad(8.0, 16.0, 1.0, "rnn").as_deref(), Some("method"));
        assert_eq!(bad(f64::NAN, 16.0, 1.0, "shaw").as_deref(), Some("n"));
        let e = Session::new("seed999", "", 0.0, 0.0, 0.0, 0.0, false, false, false, 0.0).err().unwrap();
        assert_eq!(field(&e), "preset");
    }

    #[wasm_bindgen_test]
    fn exports_and_tensors() {
        let s = Session::new("seed004", "", 0.0, 0.0, 0.0, 0.0, false, false, false, 0.0).unwrap();
        assert!(s.npz().unwrap().starts_with(b"PK"));
        let values: Vec<f32> = (0..16).map(|v| v as f32 / 16.0).collect();
        let o = draw_svg("t", "f", "key j", "query i", &values, 4, 4, true, vec![], vec![], 470, 430).unwrap();
        let svg = js_sys::Reflect::get(&o, &"svg".into()).unwrap().as_string().unwrap();
        assert!(svg.contains("<svg") && svg.contains("<rect"), "{}", &svg[..200.min(svg.len())]);
        let e = Session::from_tensors(b"not a file", "bad.npz", "shaw", 4.0, 8.0, 1.0, 2.0, false, true, false, 0.0).err().unwrap();
        assert_eq!(field(&e), "file");
        assert!(set_colormaps("cividis", "purple_green").is_ok());
        assert_eq!(field(&set_colormaps("jet", "red_blue").err().unwrap()), "sequential");
        set_colormaps("viridis", "red_blue").unwrap();
    }

    /// The page's SVG (and the PNG rasterised from it) with tokens holding control characters: XML 1.0
    /// cannot carry C0 controls, so each is drawn as a visible stand-in and the SVG stays valid.
    #[wasm_bindgen_test]
    fn control_characters_in_labels_give_a_valid_svg() {
        let values: Vec<f32> = (0..4).map(|v| v as f32).collect();
        let labels = vec!["a\u{1}".to_string(), "b\u{1b}[31m".to_string()];
        let o = draw_svg("t\u{7}", "f", "key j", "query i", &values, 2, 2, true, labels.clone(), labels, 470, 430).unwrap();
        let svg = js_sys::Reflect::get(&o, &"svg".into()).unwrap().as_string().unwrap();
        let bad: Vec<char> = svg.chars().filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')).collect();
        assert!(bad.is_empty(), "control characters in the SVG: {bad:?}");
        assert!(svg.contains("a\u{2401}") && svg.contains("t\u{2407}"), "stand-ins missing");
    }

    /// A file's x with a size of 0 is the file's fault: field `x` (shown next to the file picker), not `n`
    /// or `heads`.
    #[wasm_bindgen_test]
    fn zero_sizes_from_a_file_name_x() {
        use ndarray_npy::WriteNpyExt;
        for shape in [[0, 4], [5, 0]] {
            let mut bytes = Vec::new();
            ndarray::Array2::<f32>::zeros(shape).write_npy(&mut bytes).unwrap();
            let e = Session::from_tensors(&bytes, "x.npy", "shaw", 8.0, 16.0, 2.0, 2.0, false, true, false, 0.0).err().unwrap();
            assert_eq!(field(&e), "x", "{shape:?}");
        }
    }

    #[wasm_bindgen_test]
    fn draw_frame_returns_the_plot_area() {
        let doc = web_sys::window().unwrap().document().unwrap();
        let canvas = doc.create_element("canvas").unwrap().unchecked_into::<web_sys::HtmlCanvasElement>();
        canvas.set_width(400);
        canvas.set_height(300);
        let values: Vec<f32> = (0..12).map(|v| v as f32 - 6.0).collect();
        let r = draw_frame(canvas, "t", "f", "j", "i", &values, 3, 4, false, vec![], vec![]).unwrap();
        assert_eq!(r.len(), 4);
        assert!(r[0] < r[1] && r[2] < r[3] && r[1] <= 400 && r[3] <= 300, "{r:?}");
        assert!(draw_frame(
            doc.create_element("canvas").unwrap().unchecked_into::<web_sys::HtmlCanvasElement>(),
            "",
            "",
            "",
            "",
            &values,
            5,
            5,
            false,
            vec![],
            vec![]
        )
        .is_err());
    }

    /// Property test over the whole control space through the wasm API: a thousand pseudo-random
    /// settings, valid and not (n 0, negative, fractional, NaN, ±∞, huge; clip negative; seed huge;
    /// unknown methods), give either a trace whose every stage can be cut and coloured, or an `Error`
    /// whose `field` names a control; never a panic (a panic would abort this test's wasm instance).
    #[wasm_bindgen_test]
    fn property_every_setting_gives_a_trace_or_a_named_error() {
        let state = std::cell::Cell::new(0x5eed_1234_abcd_0042_u64);
        let next = || {
            state.set(state.get().wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
            (state.get() >> 33) as usize
        };
        let weird = [0.0, -1.0, -3.5, 0.5, 2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e20, -1e20, 4097.0, 4294967296.0, 9007199254740993.0];
        let methods = ["shaw", "music", "", "Shaw", "rnn", "<img src=x onerror=alert(1)>"];
        let controls = ["method", "n", "d_model", "heads", "clip", "seed"];
        let (mut traces, mut errors, mut too_large) = (0, 0, 0);
        for case in 0..1000 {
            let pick = |valid: &[f64]| if next() % 4 == 0 { weird[next() % weird.len()] } else { valid[next() % valid.len()] };
            let method = if case % 10 == 9 { methods[next() % methods.len()] } else { methods[case % 2] };
            let n = pick(&[1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 24.0, 4096.0]);
            let d_model = pick(&[1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 48.0]);
            let heads = pick(&[1.0, 2.0, 3.0, 4.0, 8.0, 64.0]);
            let clip = pick(&[0.0, 1.0, 2.0, 3.0, 7.0, 100.0, 4096.0]);
            let seed = pick(&[0.0, 1.0, 42.0, 4294967295.0]);
            let (causal, rel_v, per_head) = (next() % 2 == 0, next() % 2 == 0, next() % 2 == 0);
            let label = format!(
                "case {case}: {method:?} n={n} d_model={d_model} heads={heads} clip={clip} seed={seed} causal={causal} rel_v={rel_v} per_head={per_head}"
            );
            // A large trace that fits the budget would be slow here, not wrong: those are left to the e2e test.
            if n > 64.0
                && n <= MAX_N as f64
                && d_model.fract() == 0.0
                && (1.0..=MAX_D_MODEL as f64).contains(&d_model)
                && (1.0..=MAX_HEADS as f64).contains(&heads)
                && heads.fract() == 0.0
                && (0.0..=MAX_N as f64).contains(&clip)
                && clip.fract() == 0.0
            {
                let cfg = Config {
                    method: if method == "music" { Method::Music } else { Method::Shaw },
                    heads: heads as usize,
                    clip: clip as usize,
                    causal,
                    rel_v,
                    ..Config::default()
                };
                if page_bytes(&cfg, &Spec { n: n as usize, d_model: d_model as usize, batch: 1, seed: 0 }, per_head).is_some_and(|b| b <= MEMORY_LIMIT) {
                    continue;
                }
            }
            match Session::new("", method, n, d_model, heads, clip, causal, rel_v, per_head, seed) {
                Ok(mut s) => {
                    traces += 1;
                    assert_eq!(s.n() as f64, n, "{label}");
                    for i in 0..s.stage_count() {
                        s.select(i, 0, s.heads() - 1).unwrap_or_else(|e| panic!("{label}: stage {i}: {e:?}"));
                        assert_eq!(s.values_len() * 4, s.rgba_len(), "{label}");
                    }
                    assert!(s.tooltip(0, s.heads() - 1, s.n() - 1, 0).is_ok(), "{label}");
                    assert!(s.tooltip(0, 0, s.n(), 0).is_err(), "{label}: out-of-range tooltip");
                }
                Err(e) => {
                    errors += 1;
                    let f = field(&e);
                    assert!(controls.contains(&f.as_str()), "{label}: error names {f:?}");
                    let message = js_sys::Reflect::get(&e, &"message".into()).unwrap().as_string().unwrap();
                    assert!(!message.is_empty(), "{label}");
                    if message.starts_with("too large") {
                        too_large += 1;
                        assert_eq!(f, "n", "{label}");
                        assert!(message.contains("GiB") && message.contains("limit"), "{label}: {message}");
                    }
                }
            }
        }
        assert!(traces >= 50 && errors >= 50 && too_large >= 1, "traces {traces}, errors {errors}, too large {too_large}");
    }

    #[wasm_bindgen_test]
    fn the_memory_budget_refuses_every_big_setting_before_allocating() {
        let before = memory_bytes();
        // The largest settings the controls allow, for both methods: refused with the estimate, the limit and a smaller n.
        for method in ["shaw", "music"] {
            let e = Session::new("", method, 4096.0, 4096.0, 64.0, 4096.0, false, true, true, 0.0).err().unwrap();
            assert_eq!(field(&e), "n");
            let m = js_sys::Reflect::get(&e, &"message".into()).unwrap().as_string().unwrap();
            assert!(m.contains("1.50 GiB") && m.contains("use n ≤"), "{m}");
            let e = Session::new("", method, 4096.0, 64.0, 8.0, 3.0, false, true, true, 0.0).err().unwrap();
            assert_eq!(field(&e), "n");
        }
        assert_eq!(memory_bytes(), before, "a refused trace allocated");
        // The estimate grows with every size, so the largest accepted n of each setting is below the limit.
        let cfg = Config { method: Method::Music, heads: 2, clip: 4096, rel_v: true, ..Config::default() };
        let mut last = 0;
        for n in [1, 16, 256, 1024, 4096] {
            let b = page_bytes(&cfg, &Spec { n, d_model: 64, batch: 1, seed: 0 }, true).unwrap();
            assert!(b > last);
            last = b;
        }
    }
}
