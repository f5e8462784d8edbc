//! Parameters mode's messages: a [`Request`] (the layer's options, a preset or a scenario file) computed into
//! a trace, whose [`Info`] and stages (each a [`StageMeta`] and a [`Cut`] with its numbers) come back; exact
//! cells, a table row's readers, the trace as a file and every scheme side by side on request. The wasm
//! checks every request field (src/app/request.rs); the same [`LayerOptions`] come back in [`Info`], resolved
//! (a preset's, or a file's sizes), so the page writes its controls from what was computed. Adding a control
//! means adding its option to [`LayerOptions`] (src/options.rs) and its element to www/index.html.

use super::{Colormaps, LayerSource, WorkerError};
use crate::files::capture::CaptureInfo;
use crate::options::{LayerOptions, Unknown};
use crate::render::Chart;
use relattn_core::layer::stage_meta::StageMeta;
use relattn_core::stage::PairLabels;
use serde::{Deserialize, Serialize};

/// Where to compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum BackendChoice {
    /// WebGPU when it is usable, else the CPU.
    #[default]
    Auto,
    /// WebGPU; the CPU with the reason when it cannot.
    Webgpu,
    Cpu,
}

/// What to compute: the wasm's `compute` reads it (refusing a missing field, a wrong type or a field that is
/// not one of [`Request`]'s or [`LayerOptions`]', naming it), with a scenario file's bytes beside it.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Request {
    #[serde(default)]
    pub backend: BackendChoice,
    /// The name of the scenario file whose bytes come with the request (for its errors), if any.
    #[serde(default)]
    pub file_name: String,
    /// The layer's options, as the command line and Python take them; with a preset the page sends the
    /// preset alone.
    pub options: LayerOptions,
    /// A sentence's tokens: when given, n is their number and x has one seeded embedding per distinct
    /// token ([`relattn_core::layer::scenario::token_embeddings`]), so repeated tokens have equal content and differ
    /// only by their relative positions.
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub tokens: Vec<String>,
    /// The file's first request: a captured layer's file then brings all its options (those it does not carry
    /// at their defaults), not the page's controls, which still hold the previous layer's; later requests with
    /// the same file take the controls' options over the file's.
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub new_file: bool,
    /// The file is a head atlas and this is its captured row shown stage by stage (`Atlas::capture`); the
    /// file's other rows and summaries are not used.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub atlas_row: Option<u32>,
    #[serde(flatten)]
    #[cfg_attr(test, ts(skip))]
    pub unknown: Unknown,
}

/// Which of the page's scheme options a position scheme reads (the controls that follow the method select):
/// the wasm's `scheme_options(method)`, from the scheme's own predicates ([`relattn_core::positions::Method`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SchemeOptions {
    /// `clip` (k) sizes its table of vectors (Shaw's w^K and w^V, the Music Transformer's E_r).
    pub clip: bool,
    /// `rel_v`: it can add a value term (Shaw's a^V).
    pub rel_v: bool,
    /// `per_head`: it reads a learned table per pair (Shaw's, E_r, T5's biases), which can be one per head.
    pub per_head: bool,
    /// Its models learn that table per head (T5's relative_attention_bias: buckets × heads; DeBERTa's K_r and Q_r,
    /// projected by each head's columns): choosing the method
    /// ticks per-head tables, which choosing another unticks.
    pub tables_per_head: bool,
    /// `rope_base`, `rope_fraction`, `rope_scale`, `rope_layout`: it rotates q and k (RoPE).
    pub rope: bool,
    /// `t5_buckets`, `t5_max_distance`: it sorts j − i into buckets (T5).
    pub buckets: bool,
    /// `position_buckets`, `max_relative_positions`, `deberta_terms`: DeBERTa's disentangled terms.
    pub deberta: bool,
    /// `max_position`, `bert_terms`: BERT's relative_key and relative_key_query.
    pub bert: bool,
    /// `segments`: Transformer-XL's segment term (its clamp is `clip`).
    pub xl: bool,
    /// `edge`: its table of vectors is read past its rows by the skew (the Music Transformer).
    pub edge: bool,
    /// `positions_in_x`: its positions are vectors added to x (absolute), which a captured layer's x holds.
    pub positions: bool,
}

/// A named duration in milliseconds.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Timing {
    pub name: String,
    pub ms: f64,
}

/// Where a trace (or a trained model's pass) was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct BackendUsed {
    /// Whether the GPU computed it (else the CPU).
    pub on_gpu: bool,
    /// "CPU (wasm)" or "WebGPU: <adapter>".
    pub name: String,
    /// Why the GPU asked for (Auto or WebGPU) was not used; empty when it was, or when the CPU was asked for.
    pub note: String,
    /// Computed on the CPU only because WebGPU was still being set up (Auto does not wait for it): once the
    /// set-up ends the worker says `gpu-settled` ([`super::FromWorker::GpuSettled`]) and the page asks for this
    /// view again, computed where the finished set-up decides.
    pub provisional: bool,
}

/// Where a computation ran, as the page's footer shows it: the [`BackendUsed`] of a computation asked to run
/// on `mode`, with the browser's name for its adapter (it names it better than wgpu's AdapterInfo does).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct BackendShown {
    pub mode: BackendChoice,
    pub on_gpu: bool,
    pub name: String,
    pub note: String,
    pub provisional: bool,
}

/// Everything the page needs to know about a trace besides its numbers.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Info {
    /// The preset's name, or "".
    pub preset: String,
    /// The preset's one-line description, or "".
    pub preset_description: String,
    /// The options the trace was computed with, every one set (a preset's own, or the sizes of a file's x).
    pub options: LayerOptions,
    /// The tokens that label the positions: the sentence x was built from, or a captured layer's; else none.
    pub tokens: Vec<String>,
    /// What a captured layer's file says of it (its model, part, layer, tokens and notes), if it is one.
    pub capture: Option<CaptureInfo>,
    /// A captured layer in one line ([`CaptureInfo::title`]: "t5-small, encoder layer 1"), a trained model's
    /// layer ("Music Transformer chorale model, layer 1"), or "".
    pub capture_title: String,
    /// What an exported figure's title names after the stage's: the captured or trained layer ([`Info::capture_title`]),
    /// else the scheme ([`relattn_core::Method::label`]: "T5 buckets", not the option's "t5").
    pub heading: String,
    /// The scheme's options in one line, stated on every slide of the scheme ([`crate::pictures::stated`]).
    pub stated: String,
    /// The trace's stages in pipeline order, with their titles, formulas and axes.
    pub stages: Vec<StageMeta>,
    /// How the tooltip names a pair's parts in this layer's scheme.
    pub pair: PairLabels,
    pub backend: BackendUsed,
    /// Milliseconds of each compute stage ([`relattn_core::timing::StageTimes::named`]): on the CPU head stages
    /// summed over heads and the logits in their three parts; on the GPU each stage submitted alone and
    /// waited for; none for a layer held on demand (its forward pass ran fused).
    pub stage_times: Vec<Timing>,
    /// For each batch element, what a figure whose rows are queries says of the rows that see no key (every key
    /// they may attend to is padding: weights 0, where Hugging Face's softmax spreads such a row evenly), or ""
    /// ([`relattn_core::positions::table::unattended_note`]); empty without a key mask.
    pub unattended: Vec<String>,
    /// The stages of the (batch, head) shown are computed when it is selected, on the CPU (the whole trace
    /// would not fit WHOLE_LIMIT, src/app/request.rs); `backend` is where the layer's forward pass ran.
    pub on_demand: bool,
}

/// Which stages of a (batch, head) are coloured over one range for every head, so that heads can be compared
/// by colour: the bias stages alone (ALiBi's and T5's term, T5's table per head: the default), every stage
/// that differs by head, or none. A layer held on demand shares its tables and its bias of j − i alone (read
/// from every head's first and last rows); other stages of it keep each head's range ([`Cut::own_scale`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum HeadScale {
    #[default]
    Bias,
    All,
    Each,
}

/// A stage of the (batch, head) selected: its shape and colour range (values and pixels behind the pointers).
#[derive(Clone, Copy, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Cut {
    pub rows: usize,
    pub cols: usize,
    /// The raster's shape: (rows, cols), or pooled to at most RASTER_SIDE a side (src/app/session.rs).
    pub raster_rows: usize,
    pub raster_cols: usize,
    /// The colour range: values at or below `lo` get the map's first colour, at or above `hi` its last.
    pub lo: f32,
    pub hi: f32,
    /// The values come with the raster (at most VALUES_CELLS, src/app/session.rs); otherwise ask for the
    /// cells needed with a [`CellsRequest`].
    pub has_values: bool,
    /// `lo` … `hi` is every head's range ([`HeadScale`]), not this head's alone.
    pub heads_shared: bool,
    /// `lo` … `hi` is this head's range alone, where the head scale asked for every head's (a layer held on
    /// demand, whose range over heads would compute every head) or where heads differ by design (a bias stage
    /// with each head its own scale): the page says so, as heads that look alike may not be.
    pub own_scale: bool,
}

/// A stage of the (batch, head) shown, as the page gets it: its metadata (the page spells none of it), its
/// cut and its numbers.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct StageView {
    #[serde(flatten)]
    pub meta: StageMeta,
    #[serde(flatten)]
    pub cut: Cut,
    /// rows × cols, row-major; null past VALUES_CELLS.
    #[cfg_attr(test, ts(type = "Float32Array | null"))]
    pub values: Option<Vec<f32>>,
    /// raster_rows × raster_cols pixels, the cells as coloured.
    #[cfg_attr(test, ts(type = "Uint8ClampedArray"))]
    pub rgba: Vec<u8>,
}

/// A lecture picture of the layer's scheme ([`crate::pictures`]), shown, presented and exported after the
/// stages as a stage is: a heatmap (its cut, values, pixels and labels, as a [`StageView`]'s) or curves
/// (`chart`; its cut is 0 × 0).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct PictureView {
    #[serde(flatten)]
    pub meta: StageMeta,
    #[serde(flatten)]
    pub cut: Cut,
    /// Labels of a heatmap's columns and rows (distances, heads, layouts); empty: indices.
    pub x_labels: Vec<String>,
    pub y_labels: Vec<String>,
    /// The curves, or null for a heatmap.
    pub chart: Option<Chart>,
    /// rows × cols, row-major; null for curves (set by the wasm beside the serialized fields).
    #[serde(skip_serializing)]
    #[cfg_attr(test, ts(type = "Float32Array | null"))]
    pub values: Option<Vec<f32>>,
    /// raster_rows × raster_cols pixels (set by the wasm beside the serialized fields).
    #[serde(skip_serializing)]
    #[cfg_attr(test, ts(type = "Uint8ClampedArray"))]
    pub rgba: Vec<u8>,
}

/// One scheme of the "compare schemes" view (crates/relattn-wasm/src/compare.rs), its raster and weights beside it.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SchemeView {
    pub method: String,
    pub label: String,
    /// The weights stage's metadata for this scheme's layer.
    pub meta: StageMeta,
    pub cut: Cut,
    /// By distance d = k − (rows − 1): the weights' share of the attention at d averaged over the queries, or
    /// the term's mean over the pairs at d (its unmasked ones).
    pub profile: Vec<f32>,
    /// cut.raster_rows × cut.raster_cols pixels (set by the wasm beside the serialized fields).
    #[serde(skip)]
    #[cfg_attr(test, ts(type = "Uint8ClampedArray"))]
    pub rgba: Vec<u8>,
    /// The weights, row-major; null past VALUES_CELLS (set by the wasm beside the serialized fields).
    #[serde(skip)]
    #[cfg_attr(test, ts(type = "Float32Array | null"))]
    pub values: Option<Vec<f32>>,
}

/// A scenario file picked or dropped on the page: computes from its tensors instead of generated ones.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ScenarioFile {
    /// The page's pick number (part of the worker's cache key).
    pub id: u32,
    /// The .npz / .npy bytes.
    #[cfg_attr(test, ts(type = "ArrayBuffer"))]
    pub bytes: Vec<u8>,
}

/// page → worker: compute (or reuse the cached session for) `request`, then send the stages of (batch, head).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ComputeRequest {
    /// The page's id of these settings; only the newest is shown.
    pub id: u32,
    /// Passed to the wasm's `compute` untouched.
    pub request: Request,
    /// Computes from this file (its x sets n, d_model and the batch; `request.file_name` names it).
    #[cfg_attr(test, ts(optional))]
    pub file: Option<ScenarioFile>,
    /// Computes one layer of a trained model instead (Model mode's "stages of this head"), on
    /// `request.backend`.
    #[cfg_attr(test, ts(optional))]
    pub model: Option<LayerSource>,
    /// The batch element and head shown (clamped to the trace's).
    pub batch: f64,
    pub head: f64,
    pub colormaps: Colormaps,
    /// Which stages share one colour range across heads.
    #[serde(default)]
    pub head_scale: HeadScale,
    /// How many workers compute a layer held on demand on the CPU, each its own wasm instance (the page's
    /// Workers control; [`crate::app::pool`]); 1 (or none given): the worker alone.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub workers: Option<u32>,
}

/// page → worker: the session shown, exported as the CLI's trace .npz.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ExportRequest {
    pub id: u32,
}

/// page → worker: values of stage `stage` of (batch, head) in rows r0..r0+rows, columns c0..c0+cols (at most
/// VALUES_CELLS), from the session that sent result `result` (refused as stale when it is no longer held).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CellsRequest {
    pub id: u32,
    pub result: u32,
    pub stage: String,
    pub batch: usize,
    pub head: usize,
    pub r0: usize,
    pub c0: usize,
    pub rows: usize,
    pub cols: usize,
}

/// page → worker: the pairs (i, j) that read row `row` of the relative tables, from the session that sent
/// result `result` (refused as stale when it is no longer held).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ReadersRequest {
    pub id: u32,
    pub result: u32,
    pub row: usize,
}

/// What the "compare schemes" view shows of each scheme: its attention weights, or its position term (the
/// relative logits, ALiBi's and T5's bias, RoPE's kernel; for absolute positions how alike the position vectors
/// are, since attention has no term of theirs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum Compared {
    #[default]
    Weights,
    Term,
}

/// page → worker: the "compare schemes" view of these options (those of the result shown) for (batch, head).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SchemesRequest {
    pub id: u32,
    pub options: LayerOptions,
    pub tokens: Vec<String>,
    pub batch: usize,
    pub head: usize,
    pub what: Compared,
    /// How many workers share its schemes (the Workers control, as [`ComputeRequest::workers`]); 1 (or none
    /// given): the worker alone.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub workers: Option<u32>,
}

/// worker → page: what the compute of request `id` is doing now (the busy line says it).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ProgressMessage {
    pub id: u32,
    pub text: String,
}

/// The batch element and head the stages are cut from.
#[derive(Clone, Copy, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Shown {
    pub batch: usize,
    pub head: usize,
}

/// worker → page: the stages of a compute request.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ResultMessage {
    pub id: u32,
    pub ok: bool,
    /// The trace's [`Info`], its stages sent as `stages`.
    #[cfg_attr(test, ts(type = "Omit<Info, \"stages\">"))]
    pub info: Info,
    pub shown: Shown,
    /// In pipeline order.
    pub stages: Vec<StageView>,
    /// The lecture's pictures of the layer's scheme, after the stages.
    pub pictures: Vec<PictureView>,
    /// Building the scenario, the trace (or the forward pass, for a layer held on demand), cutting the stages
    /// of the head shown.
    pub timings: Vec<Timing>,
    pub backend: BackendShown,
    /// Bytes of the worker's wasm memory after cutting the stages (it only grows).
    pub memory: f64,
}

/// worker → page: a compute request refused ('error'), or the worker's wasm aborted ('fatal': a panic, an
/// allocation failure; it answers nothing more, and `id` is the compute request in flight, 0 when none;
/// `error.kind` is "fatal", its field "file" when that request computed from a file).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ErrorMessage {
    pub id: u32,
    pub ok: bool,
    pub error: WorkerError,
}

/// worker → page: the answer to an [`ExportRequest`].
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ExportReply {
    pub id: u32,
    pub ok: bool,
    /// The file's bytes, when ok.
    #[cfg_attr(test, ts(optional, type = "Uint8Array"))]
    pub data: Option<Vec<u8>>,
    #[cfg_attr(test, ts(optional))]
    pub error: Option<WorkerError>,
}

/// worker → page: the answer to a [`CellsRequest`].
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CellsReply {
    pub id: u32,
    pub ok: bool,
    /// rows × cols, row-major, when ok.
    #[cfg_attr(test, ts(optional, type = "Float32Array"))]
    pub values: Option<Vec<f32>>,
    #[cfg_attr(test, ts(optional))]
    pub error: Option<WorkerError>,
}

/// worker → page: the answer to a [`ReadersRequest`].
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ReadersReply {
    pub id: u32,
    pub ok: bool,
    /// One range of keys per query i, lo..hi, as [lo_0, hi_0, lo_1, hi_1, …]
    /// ([`relattn_core::positions::table::RelTable::readers`]), when ok.
    #[cfg_attr(test, ts(optional, type = "Uint32Array"))]
    pub runs: Option<Vec<u32>>,
    #[cfg_attr(test, ts(optional))]
    pub error: Option<WorkerError>,
}

/// worker → page: the answer to a [`SchemesRequest`]: one view per scheme in `Method::ALL`'s order.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SchemesReply {
    pub id: u32,
    pub ok: bool,
    #[cfg_attr(test, ts(optional))]
    pub schemes: Option<Vec<SchemeView>>,
    #[cfg_attr(test, ts(optional))]
    pub error: Option<WorkerError>,
}
