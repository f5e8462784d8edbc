//! What the page asks for, checked: a [`Request`] (src/protocol/) and the [`LayerOptions`] it carries,
//! resolved within the page's [`LIMITS`] into a [`Config`] and a [`Spec`] with errors that name the control;
//! the memory budget that decides how a layer is held.

use crate::files::capture::CaptureInfo;
use crate::options::{LayerOptions, Limits, Resolved};
use crate::protocol::{BackendChoice, Request, SchemeOptions};
use relattn_core::attention::Config;
use relattn_core::error::{Bytes, Error, Result};
use relattn_core::layer::forward;
use relattn_core::layer::on_demand;
use relattn_core::layer::scenario::{self, Arrays, Scenario, Spec, Widths};
use relattn_core::positions::Method;
use relattn_core::stage::Stage;
use serde::Deserialize;

use super::session::{RASTER_SIDE, VALUES_CELLS};

/// Largest sequence length the page accepts.
pub const MAX_N: usize = 8192;

/// The largest options the page takes: n 8192, d_model 4096, 64 heads, k up to n, a batch of 16 generated
/// sequences, seeds up to 2³² − 1.
pub const LIMITS: Limits = Limits { n: MAX_N, d_model: 4096, heads: 64, clip: MAX_N, batch_size: 16, seed: u32::MAX as u64 };
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
    /// shown, on the CPU ([`relattn_core::layer::on_demand::Layer`]).
    OnDemand,
}

impl BackendChoice {
    /// The choice named `name` (as a [`Request`]'s `backend` spells it: "auto", "webgpu" or "cpu"), or an
    /// error naming field "backend".
    pub fn named(name: &str) -> Result<BackendChoice> {
        use serde::de::IntoDeserializer;
        let parsed: std::result::Result<BackendChoice, serde::de::value::Error> = BackendChoice::deserialize(name.into_deserializer());
        parsed.map_err(|_| Error::invalid("backend", format!("'{name}'"), "auto, webgpu, cpu"))
    }
}

/// The options `method` reads ([`SchemeOptions`], from the scheme's own predicates): the controls that follow
/// the method select.
pub fn scheme_options(m: Method) -> SchemeOptions {
    // Which controls follow the method: the options it reads (Method::reads_option, one place).
    let reads = |option| m.reads_option(option);
    SchemeOptions {
        clip: reads("clip"),
        rel_v: reads("relative_values"),
        per_head: reads("per_head_tables"),
        tables_per_head: m.buckets() || m.disentangles() || m.shifts(),
        rope: reads("rope_base"),
        buckets: reads("t5_buckets"),
        deberta: reads("position_buckets"),
        bert: reads("max_position"),
        xl: reads("segments"),
        edge: reads("edge"),
        positions: reads("positions_in_x"),
    }
}

/// A request resolved: what its trace is computed from.
pub struct Inputs {
    pub cfg: Config,
    pub spec: Spec,
    pub arrays: Arrays,
    pub per_head: bool,
    /// The preset's name, or "".
    pub preset: String,
    /// The tokens that label the positions: the sentence x was built from, or a captured layer's (its first
    /// sequence's); else none.
    pub tokens: Vec<String>,
    /// The description of a captured layer's file, if the file is one.
    pub capture: Option<CaptureInfo>,
}

impl Inputs {
    /// The request's options within the page's [`LIMITS`] (a preset's, when it names one), with a scenario
    /// file's bytes (.npz or .npy, docs/src/files.md "Scenario files": its x sets n, d_model and the batch) or the
    /// sentence's tokens (x one seeded vector per distinct token; n their number, the batch 1), or a captured row
    /// of a head atlas's file ([`Request::atlas_row`]: read as a capture file of that layer). A captured
    /// layer's file brings its options: on the file's first request ([`Request::new_file`]) with the others at
    /// their defaults (the page then shows them in its controls), afterwards under the request's.
    pub fn resolve(request: &Request, file: Option<&[u8]>) -> Result<Inputs> {
        let sentence = if file.is_some() { Vec::new() } else { request.tokens.clone() };
        if sentence.len() > MAX_N {
            return Err(Error::invalid("tokens", format!("{} tokens", sentence.len()), format!("at most {MAX_N} tokens (n)")));
        }
        let read = |bytes: &[u8]| match request.atlas_row {
            Some(row) => crate::files::atlas::Atlas::read(bytes, &request.file_name, MEMORY_LIMIT)?.capture(row as usize).cloned(),
            None => crate::files::read_arrays(bytes, &request.file_name, MEMORY_LIMIT),
        };
        let file = file.map(read).transpose()?.unwrap_or_default();
        // A new capture's options are the file's and every one it does not carry is its default, not the
        // request's: the page's controls still hold the previous file's options (a T5 capture's logit scale
        // "none" kept for a Llama capture opened next). Only how the same numbers are computed (implementation)
        // and the keys to refuse come from that first request; later ones change the file's options as the
        // controls say.
        let mut options: LayerOptions = match &file.capture {
            Some(c) if request.new_file => c.options.over(&LayerOptions {
                implementation: request.options.implementation,
                unknown: request.options.unknown.clone(),
                ..LayerOptions::default()
            }),
            Some(c) => c.options.over(&request.options),
            None => request.options.clone(),
        };
        if !sentence.is_empty() {
            (options.n, options.batch_size) = (Some(sentence.len() as f64), Some(1.0));
        }
        let Resolved { config: cfg, spec, mut arrays, per_head_tables: per_head } = options.resolve(&LIMITS)?;
        let preset = options.preset.unwrap_or_default();
        let given_file = !file.arrays.is_empty() || file.capture.is_some();
        arrays.extend(file.arrays);
        // x fixes the sizes: the controls' n, d_model and batch are not used (nor checked against it).
        let spec = if given_file { scenario::sizes_of(&arrays, &spec)? } else { spec };
        if !sentence.is_empty() {
            arrays.insert("x".into(), scenario::token_embeddings(&sentence, spec.d_model, spec.seed).into_dyn());
        }
        let tokens = match &file.capture {
            Some(c) => c.tokens.first().cloned().unwrap_or_default(),
            None => sentence,
        };
        Ok(Inputs { cfg, spec, arrays, per_head, preset, tokens, capture: file.capture })
    }

    /// The scenario and how its stages are held ([`holding`]), after checking that it fits [`MEMORY_LIMIT`]
    /// (on either backend the stages are held in the wasm memory).
    pub fn scenario(&mut self) -> Result<(Scenario, Holding)> {
        let holding = self.holding()?;
        let sc = Scenario::build(&self.cfg, &self.spec, std::mem::take(&mut self.arrays), self.per_head)?;
        Ok((sc, holding))
    }

    /// How the scenario's stages are held ([`holding`]), after checking that it fits [`MEMORY_LIMIT`], before it
    /// is built.
    pub fn holding(&self) -> Result<Holding> {
        // The widths the file's arrays give (heads of their own width, DeepSeek's values and output) count too.
        let widths = scenario::check_config(&self.cfg, &self.spec, &self.arrays)?;
        page_budget(&self.cfg, &self.spec, self.per_head, widths.own(self.spec.d_model, self.cfg.heads))
    }
}

/// How a layer's stages are held, and the bytes that takes at its peak in this module's wasm memory ([`page_bytes`]):
/// whole when that fits [`WHOLE_LIMIT`], else on demand; `None` past u64. `widths`: what a file's arrays give
/// ([`scenario::check_config`]), `None` for a generated layer.
pub fn holding(cfg: &Config, spec: &Spec, per_head_tables: bool, widths: Option<Widths>) -> Option<(Holding, u64)> {
    match whole_bytes(cfg, spec, per_head_tables, widths) {
        Some(b) if b <= WHOLE_LIMIT => Some((Holding::Whole, b)),
        _ => Some((Holding::OnDemand, on_demand_bytes(cfg, spec, per_head_tables, widths)?)),
    }
}

/// Bytes a layer takes at its peak in this module's wasm memory, held as [`holding`] says, or `None` past u64.
pub fn page_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool, widths: Option<Widths>) -> Option<u64> {
    holding(cfg, spec, per_head_tables, widths).map(|(_, b)| b)
}

/// Bytes a whole trace takes at its peak in this module's wasm memory, or `None` past u64.
/// [`forward::estimate_bytes`] plus what the page adds, measured in chromium with [`super::memory_bytes`]
/// (docs/src/reliability.md): the per-head traces and their stacked copies coexist while the trace is
/// assembled, the distance and row matrices are i64, the value buckets have 2k+1 columns (k up to 4096), and
/// [`super::Session::select`] holds a stage three times (the cut, its values, its pixels).
fn whole_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool, widths: Option<Widths>) -> Option<u64> {
    let (b, n, h) = (spec.batch as u64, spec.n as u64, cfg.heads.max(1) as u64);
    let sizes = |trace| forward::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace, parallel: 1, widths };
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
fn on_demand_bytes(cfg: &Config, spec: &Spec, per_head_tables: bool, widths: Option<Widths>) -> Option<u64> {
    let sizes = forward::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace: false, parallel: 1, widths };
    let forward = forward::estimate_bytes(cfg, &sizes)?;
    let Widths { d_head, d_v, .. } = widths.unwrap_or(Widths::of_model(spec.d_model, cfg.heads));
    let block = on_demand::block_bytes(cfg, spec.n, d_head.max(d_v))?;
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
fn page_budget(cfg: &Config, spec: &Spec, per_head_tables: bool, widths: Option<Widths>) -> Result<Holding> {
    let held = holding(cfg, spec, per_head_tables, widths);
    let work = pairs(cfg, spec);
    let fits = |n: usize| {
        let spec = Spec { n, ..*spec };
        page_bytes(cfg, &spec, per_head_tables, widths).is_some_and(|b| b <= MEMORY_LIMIT) && pairs(cfg, &spec).is_some_and(|p| p <= MAX_PAIRS)
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
    let needs = match held {
        Some((_, bytes)) if bytes <= MEMORY_LIMIT => format!(
            "has {} (query, key) pairs (batch × heads × n²), but the page computes at most {MAX_PAIRS} (n 8192 with 8 heads)",
            work.map_or("more than 2⁶⁴".into(), |w| w.to_string())
        ),
        held => format!(
            "needs {} of memory, but the page's limit is {}",
            held.map_or("more than 16 EiB".into(), |(_, b)| format!("about {}", Bytes(b))),
            Bytes(MEMORY_LIMIT)
        ),
    };
    Err(Error::TooLargeForPage { layer, needs, hint })
}

#[cfg(test)]
mod tests {
    use super::*;
    use relattn_core::attention::LogitScale;

    /// A capture file of x (1, 4, 8) whose description carries `options` (JSON).
    fn capture_file(options: &str) -> Vec<u8> {
        let json = format!(r#"{{"options": {options}, "model": "m", "family": "f", "part": "decoder", "layer": 0}}"#);
        let mut w = ndarray_npy::NpzWriter::new(std::io::Cursor::new(Vec::new()));
        w.add_array("x", &ndarray::Array3::<f32>::zeros((1, 4, 8))).unwrap();
        w.add_array("capture", &ndarray::Array1::from(json.into_bytes())).unwrap();
        w.finish().unwrap().into_inner()
    }

    /// The page's controls after a T5 capture (logit scale none, T5) sent with a Llama capture's file: the
    /// file's options, the others their defaults.
    #[test]
    fn a_capture_resets_the_options_it_does_not_carry() {
        let mut request: Request = serde_json::from_value(serde_json::json!({ "file_name": "llama.npz", "options": {}, "new_file": true })).unwrap();
        request.options =
            LayerOptions { method: Some(Method::T5), logit_scale: Some(LogitScale::None), causal: Some(false), clip: Some(7.0), ..LayerOptions::default() };
        let file = capture_file(r#"{"method": "rope", "heads": 2, "causal": true}"#);
        let inputs = Inputs::resolve(&request, Some(&file)).unwrap();
        let default = Config::default();
        assert_eq!((inputs.cfg.method, inputs.cfg.heads, inputs.cfg.causal), (Method::Rope, 2, true));
        assert_eq!((inputs.cfg.logit_scale, inputs.cfg.clip), (default.logit_scale, default.clip));
        // Once the controls show the file's options, a control changed by hand changes the layer.
        request.new_file = false;
        request.options = LayerOptions { logit_scale: Some(LogitScale::None), ..LayerOptions::default() };
        let inputs = Inputs::resolve(&request, Some(&file)).unwrap();
        assert_eq!((inputs.cfg.method, inputs.cfg.heads, inputs.cfg.logit_scale), (Method::Rope, 2, LogitScale::None));
    }

    /// A captured row of a head atlas computes as its capture file would; a row not captured is refused by name.
    #[test]
    fn an_atlas_row_is_read_as_its_capture() {
        use crate::files::atlas::tests::{atlas_bytes, description};
        let file = atlas_bytes(&description(2), |_| {});
        let mut request: Request =
            serde_json::from_value(serde_json::json!({ "file_name": "t.atlas.npz", "options": {}, "new_file": true, "atlas_row": 1 })).unwrap();
        let inputs = Inputs::resolve(&request, Some(&file)).unwrap();
        assert_eq!((inputs.cfg.method, inputs.cfg.heads, inputs.spec.n), (Method::Rope, 4, 5));
        assert_eq!(inputs.capture.unwrap().title(), "tiny-llama, decoder layer 1");
        request.atlas_row = Some(0);
        assert_eq!(Inputs::resolve(&request, Some(&file)).err().unwrap().field(), "atlas row");
    }
}
