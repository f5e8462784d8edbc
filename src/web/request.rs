//! What the page asks for, checked: a [`Request`] (src/protocol/, from a plain JavaScript object) and the
//! [`Settings`] it carries, checked into a [`Config`] and a [`Spec`] with errors that name the control; the
//! page's size limits and the memory budget that decides how a layer is held.

use crate::attention::Config;

use crate::error::{Bytes, Error, ErrorKind};
use crate::layer::forward;
use crate::layer::on_demand;
use crate::layer::presets;
use crate::layer::scenario::{self, Arrays, Scenario, Spec};
use crate::positions::rope::Rope;
use crate::positions::t5::{Buckets, MAX_BUCKETS, MAX_DISTANCE};
use crate::positions::Method;
use crate::protocol::{BackendChoice, Request, Settings, Unknown};
use crate::stage::Stage;
use serde::Deserialize;
use wasm_bindgen::JsValue;

use super::session::{RASTER_SIDE, VALUES_CELLS};
use super::{js_error, to_js};

/// Largest sequence length the page accepts.
pub const MAX_N: usize = 8192;
/// Largest d_model the page accepts.
pub const MAX_D_MODEL: usize = 4096;
/// Most heads.
pub const MAX_HEADS: usize = 64;
/// Largest batch of a generated scenario.
pub const MAX_BATCH: usize = 16;
/// Memory one layer may take in the browser, by [`page_bytes`] (1.5 GiB: wasm32 has at most 4 GiB in all,
/// and the worker holds the layer shown while it computes the next one).
pub const MEMORY_LIMIT: u64 = 3 << 29;

/// The largest whole trace the page computes ([`page_bytes`] of [`Holding::Whole`]): past it, a layer's stages
/// are computed for the (batch, head) shown when it is shown ([`Holding::OnDemand`]), so the wasm memory
/// (which never shrinks) stays small.
pub const WHOLE_LIMIT: u64 = 256 << 20;

/// How the page holds a layer's stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holding {
    /// Every stage of every (batch, head), computed at once, on the backend asked for.
    Whole,
    /// The layer's forward pass on the backend asked for; the stages of the (batch, head) shown computed when
    /// shown, on the CPU ([`crate::layer::on_demand::Layer`]).
    OnDemand,
}

impl BackendChoice {
    /// The choice named `name` (as a [`Request`]'s `backend` spells it: "auto", "webgpu" or "cpu"), or an
    /// error naming field "backend".
    pub fn named(name: &str) -> Result<BackendChoice, JsValue> {
        use serde::de::IntoDeserializer;
        let parsed: Result<BackendChoice, serde::de::value::Error> = BackendChoice::deserialize(name.into_deserializer());
        parsed.map_err(|e| js_error("backend", ErrorKind::Invalid, &format!("invalid backend: {e}")))
    }
}

impl Settings {
    /// The settings that describe a resolved computation.
    pub fn of(cfg: &Config, spec: &Spec, per_head: bool, tokens: &[String]) -> Settings {
        Settings {
            method: cfg.method.to_string(),
            n: spec.n as f64,
            d_model: spec.d_model as f64,
            heads: cfg.heads as f64,
            clip: cfg.clip as f64,
            seed: spec.seed as f64,
            batch_size: spec.batch as f64,
            causal: cfg.causal,
            rel_v: cfg.rel_v,
            per_head,
            relative_only: !cfg.content,
            tokens: tokens.to_vec(),
            rope_base: cfg.rope.base as f64,
            rope_fraction: cfg.rope.fraction as f64,
            rope_layout: cfg.rope.layout.to_string(),
            rope_scale: cfg.rope.scale as f64,
            t5_buckets: cfg.buckets.count as f64,
            t5_max_distance: cfg.buckets.max_distance as f64,
            unknown: Unknown::new(),
        }
    }

    /// The layer's Config and the scenario's Spec, each number checked against its range (with tokens, n
    /// is their number and the batch is 1).
    pub fn check(&self) -> Result<(Config, Spec), JsValue> {
        let method: Method = self.method.parse().map_err(to_js)?;
        if self.tokens.len() > MAX_N {
            return Err(to_js(Error::invalid("tokens", format!("{} tokens", self.tokens.len()), format!("at most {MAX_N} tokens (n)"))));
        }
        let sentence = !self.tokens.is_empty();
        let n = if sentence { self.tokens.len() } else { whole("n", self.n, 1, MAX_N)? };
        let d_model = whole("d_model", self.d_model, 1, MAX_D_MODEL)?;
        let heads = whole("heads", self.heads, 1, MAX_HEADS)?;
        if d_model % heads != 0 {
            return Err(to_js(Error::invalid("heads", heads, format!("a divisor of d_model = {d_model} (1..={MAX_HEADS})"))));
        }
        let clip = whole("clip", self.clip, 0, MAX_N)?;
        let seed = whole("seed", self.seed, 0, u32::MAX as usize)? as u64;
        let batch = if sentence { 1 } else { whole("batch_size", self.batch_size, 1, MAX_BATCH)? };
        // RoPE's numbers are ranged by the scheme's check (in Scenario::build), naming the option.
        let rope = Rope {
            base: self.rope_base as f32,
            fraction: self.rope_fraction as f32,
            layout: self.rope_layout.parse().map_err(to_js)?,
            scale: self.rope_scale as f32,
        };
        let buckets = Buckets {
            count: whole("t5_buckets", self.t5_buckets, 2, MAX_BUCKETS)?,
            max_distance: whole("t5_max_distance", self.t5_max_distance, 1, MAX_DISTANCE)?,
        };
        let cfg = Config { method, heads, clip, causal: self.causal, rel_v: self.rel_v, content: !self.relative_only, rope, buckets, ..Config::default() };
        Ok((cfg, Spec { n, d_model, batch, seed }))
    }
}

/// A whole number in `lo..=hi`, or an error naming `field`.
pub fn whole(field: &str, v: f64, lo: usize, hi: usize) -> Result<usize, JsValue> {
    if !v.is_finite() || v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
        let given = if v.is_finite() { format!("{v}") } else { "nothing (not a number)".into() };
        return Err(to_js(Error::invalid(field, given, format!("a whole number in {lo}..={hi}"))));
    }
    Ok(v as usize)
}

/// A request resolved: what its trace is computed from.
pub struct Inputs {
    pub cfg: Config,
    pub spec: Spec,
    pub arrays: Arrays,
    pub per_head: bool,
    /// The preset's name, or "".
    pub preset: String,
    /// The sentence x was built from, if any.
    pub tokens: Vec<String>,
}

impl Inputs {
    /// A preset (the settings are then not used), a scenario file's bytes (.npz or .npy, README "Scenario
    /// files": its x sets n, d_model and the batch) or the settings alone (x from their tokens, if any).
    pub fn resolve(request: &Request, file: Option<&[u8]>) -> Result<Inputs, JsValue> {
        if let Some(bytes) = file {
            let arrays = scenario::read_arrays(bytes, &request.file_name).map_err(to_js)?;
            let (cfg, spec) = request.settings.check()?;
            // x fixes the sizes: the controls' n, d_model and batch are not used (nor checked against it).
            let spec = scenario::sizes_of(&arrays, &spec).map_err(to_js)?;
            return Ok(Inputs { cfg, spec, arrays, per_head: request.settings.per_head, preset: String::new(), tokens: Vec::new() });
        }
        if !request.preset.is_empty() {
            let p = presets::preset(&request.preset).map_err(to_js)?;
            let (cfg, spec, arrays) = (p.config, p.spec, p.arrays);
            return Ok(Inputs { cfg, spec, arrays, per_head: p.per_head_tables, preset: request.preset.clone(), tokens: Vec::new() });
        }
        let (cfg, spec) = request.settings.check()?;
        let tokens = request.settings.tokens.clone();
        let mut arrays = Arrays::new();
        if !tokens.is_empty() {
            arrays.insert("x".into(), scenario::token_embeddings(&tokens, spec.d_model, spec.seed).into_dyn());
        }
        Ok(Inputs { cfg, spec, arrays, per_head: request.settings.per_head, preset: String::new(), tokens })
    }

    /// The scenario and how its stages are held ([`holding`]), after checking that it fits [`MEMORY_LIMIT`]
    /// (on either backend the stages are held in the wasm memory).
    pub fn scenario(&mut self) -> Result<(Scenario, Holding), JsValue> {
        let holding = page_budget(&self.cfg, &self.spec, self.per_head)?;
        let sc = Scenario::build(&self.cfg, &self.spec, std::mem::take(&mut self.arrays), self.per_head).map_err(to_js)?;
        Ok((sc, holding))
    }
}

/// How a layer's stages are held, and the bytes that takes at its peak in this module's wasm memory ([`page_bytes`]):
/// whole when that fits [`WHOLE_LIMIT`], else on demand; `None` past u64.
pub fn holding(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Option<(Holding, u64)> {
    match whole_bytes(cfg, spec, per_head_tables) {
        Some(b) if b <= WHOLE_LIMIT => Some((Holding::Whole, b)),
        _ => Some((Holding::OnDemand, on_demand_bytes(cfg, spec, per_head_tables)?)),
    }
}

/// Bytes a layer takes at its peak in this module's wasm memory, held as [`holding`] says, or `None` past u64.
pub fn page_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Option<u64> {
    holding(cfg, spec, per_head_tables).map(|(_, b)| b)
}

/// Bytes a whole trace takes at its peak in this module's wasm memory, or `None` past u64.
/// [`forward::estimate_bytes`] plus what the page adds, measured in chromium with [`super::memory_bytes`]
/// (README "Reliability"): the per-head traces and their stacked copies coexist while the trace is
/// assembled, the distance and row matrices are i64, the value buckets have 2k+1 columns (k up to 4096), and
/// [`super::Session::select`] holds a stage three times (the cut, its values, its pixels).
fn whole_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Option<u64> {
    let (b, n, h) = (spec.batch as u64, spec.n as u64, cfg.heads.max(1) as u64);
    let sizes = |trace| forward::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace, parallel: 1 };
    let with_trace = forward::estimate_bytes(cfg, &sizes(true))?;
    let stored = forward::trace_bytes(cfg, &sizes(true))?;
    let rows = cfg.table_rows() as u64;
    let buckets = if cfg.has_rel_v() { n.checked_mul(rows)? } else { 0 };
    // The skew's padded rows take up to 2n columns.
    let widest = if cfg.scheme().skews() { 2 * n } else { n }.max(rows);
    let extra = buckets.checked_mul(2 * b * h + 1)?.checked_mul(4)?.checked_add(16 * n * n)?.checked_add(n.checked_mul(widest)?.checked_mul(12)?)?;
    with_trace.checked_add(stored)?.checked_add(extra)
}

/// Bytes a layer held on demand takes at its peak in this module's wasm memory, or `None` past u64: the
/// forward pass ([`forward::estimate_bytes`] without a trace, its projections and output kept), one block of a
/// head's stages ([`on_demand::block_bytes`]) and the cuts of every stage of the head shown (a pooled copy and
/// its pixels, [`RASTER_SIDE`]² each, and the values of those of at most [`VALUES_CELLS`] cells, twice: made
/// and sent).
fn on_demand_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Option<u64> {
    let sizes = forward::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace: false, parallel: 1 };
    let forward = forward::estimate_bytes(cfg, &sizes)?;
    let block = on_demand::block_bytes(cfg, spec.n, spec.d_model / cfg.heads.max(1))?;
    let stages = Stage::ALL.len() as u64;
    let raster = (RASTER_SIDE * RASTER_SIDE) as u64;
    let values = (spec.n as u64).checked_mul(spec.n as u64)?.min(VALUES_CELLS as u64);
    let cuts = stages.checked_mul(raster.checked_mul(8)?.checked_add(values.checked_mul(8)?)?)?;
    forward.checked_add(block)?.checked_add(cuts)
}

/// The most (query, key) pairs, Σ over batch and heads (b·h·n²), one request computes in the page: n 8192
/// with 8 heads (about 5 s for the forward pass in the wasm build on 2 cores). Memory bounds the rest; this
/// bounds the time, so that no setting or file (whose x sets n and the batch) keeps the worker busy for minutes.
pub const MAX_PAIRS: u64 = 8 * 8192 * 8192;

/// b·h·n², or `None` past u64.
fn pairs(cfg: &Config, spec: &Spec) -> Option<u64> {
    (spec.batch as u64).checked_mul(cfg.heads as u64)?.checked_mul((spec.n as u64).checked_mul(spec.n as u64)?)
}

/// Refuses a layer whose [`page_bytes`] exceed [`MEMORY_LIMIT`] or whose pairs exceed [`MAX_PAIRS`], before any
/// of it is allocated: the message has the estimate, the limit and the largest n that would fit with these heads
/// (field "n", kind too_large). Returns how it is held.
fn page_budget(cfg: &Config, spec: &Spec, per_head_tables: bool) -> Result<Holding, JsValue> {
    let held = holding(cfg, spec, per_head_tables);
    let work = pairs(cfg, spec);
    let fits = |n: usize| {
        let spec = Spec { n, ..*spec };
        page_bytes(cfg, &spec, per_head_tables).is_some_and(|b| b <= MEMORY_LIMIT) && pairs(cfg, &spec).is_some_and(|p| p <= MAX_PAIRS)
    };
    if let (Some((holding, bytes)), Some(work)) = (held, work) {
        if bytes <= MEMORY_LIMIT && work <= MAX_PAIRS {
            return Ok(holding);
        }
    }
    let lo = forward::largest_fitting(0, spec.n, fits); // 0: no n fits
    let hint = if lo >= 1 {
        format!("use n ≤ {lo} with {} head(s){}", cfg.heads, if cfg.heads > 1 { ", or fewer heads" } else { "" })
    } else {
        "use fewer heads or a smaller batch".into()
    };
    let layer = format!("this layer (n = {}, batch = {}, d_model = {}, heads = {})", spec.n, spec.batch, spec.d_model, cfg.heads);
    let message = match held {
        Some((_, bytes)) if bytes <= MEMORY_LIMIT => format!(
            "too large for the page: {layer} has {} (query, key) pairs (batch × heads × n²), but the page computes at most {MAX_PAIRS} (n 8192 with 8 heads); {hint}",
            work.map_or("more than 2⁶⁴".into(), |w| w.to_string())
        ),
        held => format!(
            "too large for the page: {layer} needs {} of memory, but the page's limit is {}; {hint}",
            held.map_or("more than 16 EiB".into(), |(_, b)| format!("about {}", Bytes(b))),
            Bytes(MEMORY_LIMIT)
        ),
    };
    Err(js_error("n", ErrorKind::TooLarge, &message))
}
