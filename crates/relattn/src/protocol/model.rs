//! Model mode's messages: a window of a test piece (or an opening chord) run on a trained model, one head's
//! weights and the layer's attention by distance, the next-token prediction, sampling with the key/value
//! cache, the NLL of every position under the six models and their heads side by side. The wasm's
//! `ModelSession` (src/app/model.rs) reads the requests and answers the data structs here.

use super::{BackendChoice, BackendShown, BackendUsed, Colormaps, Unknown, WorkerError};
use crate::trained::heads::{Landmark, Meter};
use crate::trained::transformer::ModelConfig;
use relattn_core::positions::Method;
use serde::{Deserialize, Serialize};

/// A window of a test piece, or an opening chord, as the page's controls give it. Numbers are f64 (NaN for an
/// empty box), each checked by the wasm with its name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelWindow {
    /// The piece's BWV number as in [`PieceInfo::bwv`] ("10.7"; "BWV 10.7" also works; "" with an opening).
    pub piece: String,
    /// First token of the window: a multiple of 4 (windows start on a 16th-note step, as the training crops
    /// did), at most the piece's length − 4.
    pub start: f64,
    /// Tokens in the window, T: 2..=min(the piece's length − start, CONTEXTS_PER_WINDOW × context).
    pub length: f64,
    /// Semitones added to every pitch of the window: within the window's [`WindowInfo::transpose_min`]..=
    /// [`WindowInfo::transpose_max`], which keep every pitch in the vocabulary (MIDI `pitch_min`..=
    /// `pitch_min` + vocab − 2).
    pub transpose: f64,
    /// An opening chord instead of a piece: four names of the vocabulary, soprano to bass ("C5 G4 E4 C3",
    /// [`crate::trained::chorales::Chorales::chord`]). Given (not empty), the window is that one step (4
    /// tokens: `piece`, `start` and `length` are not read; `transpose` is), for sampling a new piece from
    /// nothing but a chord.
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub opening: Option<String>,
}

/// A window and where to run it: the wasm's `run` and `nll_by_position` read it (refusing a missing field, a
/// wrong type or a field it does not name).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelRequest {
    #[serde(flatten)]
    pub window: ModelWindow,
    /// Where to compute, as Parameters mode's request spells it ([`BackendChoice`]): "auto" (WebGPU when
    /// usable, not a software adapter), "webgpu" or "cpu"; read by the wasm, which refuses another naming
    /// field "backend".
    #[cfg_attr(test, ts(type = "BackendChoice"))]
    pub backend: String,
    #[serde(flatten)]
    #[cfg_attr(test, ts(skip))]
    pub unknown: Unknown,
}

/// `start_sampling`'s request.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SampleRequest {
    /// Tokens to draw after the window, 1..=MAX_STEPS (src/app/model.rs).
    pub steps: f64,
    /// Softmax temperature, 0..=100 (0: always the most likely token).
    pub temperature: f64,
    /// Draw only from the `top_k` most likely tokens, 0..=vocab (0: every token).
    pub top_k: f64,
    /// Draw only from the fewest most likely tokens whose probabilities reach `top_p`, (0, 1] (1: every token).
    pub top_p: f64,
    /// Seed of the ChaCha8 stream, 0..=2³²−1.
    pub seed: f64,
    #[serde(flatten)]
    #[cfg_attr(test, ts(skip))]
    pub unknown: Unknown,
}

/// One piece of the data file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct PieceInfo {
    /// Catalogue number, e.g. "10.7".
    pub bwv: String,
    pub title: String,
    /// The first time signature, e.g. "4/4".
    pub time_signature: String,
    /// Steps (16ths) where a bar line falls.
    pub bars: Vec<usize>,
    /// Tokens (4 per step).
    pub length: usize,
    /// The transpositions (semitones) that keep every pitch of the whole piece in the vocabulary; a window
    /// may allow more ([`WindowInfo`]).
    pub transpose_min: i32,
    pub transpose_max: i32,
}

/// What `ModelSession::info` (src/app/model.rs) says about the model and its data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelInfo {
    /// The file name given to `ModelSession::load`.
    pub name: String,
    /// Its position scheme ([`Method::name`]; the shipped models are [`crate::trained::MODELS`]).
    pub kind: Method,
    /// layers, d_model, heads, d_ff, vocab, context, clip, rel_v, edge, method.
    pub config: ModelConfig,
    /// Trained parameters, counted in the loaded tensors.
    pub parameters: usize,
    /// Mean NLL per predicted token (nats) on the test and validation splits in windows of `context`, as
    /// measured by the training script (the file's metadata); null when the file does not say.
    pub test_nll: Option<f64>,
    pub valid_nll: Option<f64>,
    /// Longest window: CONTEXTS_PER_WINDOW × context (src/app/model.rs).
    pub max_length: usize,
    /// Most tokens one sampling may draw, MAX_STEPS.
    pub max_steps: usize,
    /// The sampler's defaults ([`crate::trained::transformer::DEFAULT_TOP_K`], `DEFAULT_TOP_P`), as the CLI's.
    pub top_k: usize,
    pub top_p: f32,
    /// The voices in token order: soprano, alto, tenor, bass.
    pub voices: Vec<String>,
    /// Display name of each token ("rest", "A1", …), indexed by token.
    pub vocab: Vec<String>,
    /// MIDI pitch of token 1 (token p − pitch_min + 1 is MIDI pitch p; token 0 is a rest).
    pub pitch_min: u8,
    /// Steps per quarter note (4: 16ths).
    pub steps_per_quarter: usize,
    /// "test": the split the pieces come from.
    pub split: String,
    pub pieces: Vec<PieceInfo>,
}

/// One token where the piano roll draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Note {
    pub token: u32,
    /// 0..4: index into [`ModelInfo::voices`], the token's position in the piece mod 4.
    pub voice: usize,
    /// The 16th-note step in the piece: position in the piece div 4 (sampled tokens continue past its end).
    pub step: usize,
    /// MIDI pitch, null for a rest.
    pub midi: Option<u8>,
}

/// The negative log-likelihood of each predicted token of a window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct PositionNll {
    /// T − 1 values, nats: `values[t] = −ln p(token t + 1 | tokens 0..=t)`, t = 0..T−1.
    pub values: Vec<f64>,
    /// Their mean (what `relattn model eval` averages over windows).
    pub mean: f64,
    /// Milliseconds of the forward pass (and, for `ModelSession::run`, of keeping the weights).
    pub ms: f64,
    /// Where the forward pass ran (and, when not on the GPU asked for, why).
    pub backend: BackendUsed,
}

/// What `ModelSession::run` computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct WindowInfo {
    /// The piece's BWV number ("" for an opening chord).
    pub piece: String,
    /// The opening chord the window is, as given ([`ModelWindow::opening`]); null for a piece's window.
    pub opening: Option<String>,
    pub start: usize,
    /// T.
    pub length: usize,
    pub transpose: i32,
    /// The transpositions this window allows (keeping every pitch in the vocabulary).
    pub transpose_min: i32,
    pub transpose_max: i32,
    /// The T tokens after transposition, in order.
    pub notes: Vec<Note>,
    pub nll: PositionNll,
    /// The attention maps kept: layers × heads, each (T, T).
    pub layers: usize,
    pub heads: usize,
    /// The piece's meter in 16th-note steps, which names distances ([`crate::trained::heads`]).
    pub meter: Meter,
}

/// Attention by distance of one head over the current window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct DistanceProfile {
    pub layer: usize,
    pub head: usize,
    /// d = j − i for d = −(T−1)..=0 (causal: a query sees only keys at or before it).
    #[cfg_attr(test, ts(type = "number[]"))]
    pub distances: Vec<i64>,
    /// `mean_weight[d] = (1 / (T − |d|)) Σ_{i ≥ |d|} α[i, i + d]`: the mean weight over the T − |d| queries
    /// that have a key at distance d (unbiased by how many queries reach that far; not a distribution).
    pub mean_weight: Vec<f64>,
    /// `distribution[d] = (1 / T) Σ_{i ≥ |d|} α[i, i + d]`: each query's weights as a distribution over
    /// distances (its softmax row, 0 at distances before the window), averaged over all T queries; sums
    /// to 1 over d ([`crate::trained::heads::distance_distribution`]).
    pub distribution: Vec<f64>,
    /// What the head does, in one line, from `distribution` ([`crate::trained::heads::describe`]): "98 % on the predicted
    /// voice, one 16th back".
    pub description: String,
    /// The distances the charts mark, each named by what it reaches relative to the predicted token
    /// ([`crate::trained::heads::landmarks`]: one 16th, one beat and one bar back in the piece's meter).
    pub landmarks: Vec<Landmark>,
}

/// One candidate for the next token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Candidate {
    pub token: u32,
    /// The vocabulary's name of the token ("rest", "C4", …).
    pub name: String,
    /// MIDI pitch, null for a rest.
    pub midi: Option<u8>,
    /// softmax(logits)[token] at temperature 1.
    pub probability: f64,
    /// 1 for the most likely token.
    pub rank: usize,
}

/// The next-token distribution at one position of the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Prediction {
    /// t: the distribution of token t + 1 given tokens 0..=t (row t of the logits).
    pub position: usize,
    /// The `top` most likely tokens, most likely first (ties: lower token first).
    pub candidates: Vec<Candidate>,
    /// The window's token t + 1 with its probability and rank; null at the last position.
    pub actual: Option<Candidate>,
}

/// What `ModelSession::start_sampling` set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SamplingInfo {
    /// Tokens of the prime (the current window, transposed), fed through the key/value cache.
    pub prime: usize,
    /// Tokens to draw.
    pub steps: usize,
    /// Milliseconds of feeding the prime.
    pub ms: f64,
}

/// Tokens drawn by one `ModelSession::next_tokens`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Sampled {
    /// The new tokens, continuing the window (steps past its end).
    pub notes: Vec<Note>,
    /// Tokens drawn so far, these included.
    pub drawn: usize,
    /// Tokens still to draw (0: done).
    pub remaining: usize,
    /// Milliseconds this call took.
    pub ms: f64,
}

/// One layer of a trained model on a window, shown as Parameters mode's stages (Model mode's "stages of this
/// head").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct LayerSource {
    pub kind: Method,
    pub window: ModelWindow,
    pub layer: usize,
}

/// What a [`ModelMessage`] asks for beside the prediction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Parts {
    /// The model's info, the window and every head's tile.
    pub window: bool,
    /// The head's weights and its layer's distance profiles.
    pub head: bool,
}

/// page → worker: run `window` on model `model` (reusing the window last run on that model when it is the
/// same), then answer what `parts` asks for, for head (layer, head) and the note at `position`.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelMessage {
    /// Only the newest is shown.
    pub id: u32,
    pub model: Method,
    pub window: ModelWindow,
    pub layer: usize,
    pub head: usize,
    /// The selected token of the window (its prediction is answered).
    pub position: usize,
    pub parts: Parts,
    /// The tiles' colormap.
    pub colormaps: Colormaps,
    /// Where to run the window (the page's backend, as a compute request's).
    pub backend: BackendChoice,
}

/// One tile of the model view: head (layer, head)'s (T, T) weights as pixels, pooled to size × size.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Tile {
    pub layer: usize,
    pub head: usize,
    pub size: usize,
    #[cfg_attr(test, ts(type = "Uint8ClampedArray"))]
    pub rgba: Vec<u8>,
    /// What the head does, in one line ([`DistanceProfile::description`]).
    pub description: String,
}

/// worker → page: a [`ModelMessage`]'s answer. `info`, `window` and `tiles` only with parts.window (or when
/// the window was run again); `values`, `profiles`, `descriptions` and `landmarks` only with parts.head;
/// `prediction` always.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelResult {
    pub id: u32,
    pub model: Method,
    /// The window's key (model, window and backend: www/js/shared/protocol.js windowKey).
    pub key: String,
    pub layer: usize,
    pub head: usize,
    pub position: usize,
    #[cfg_attr(test, ts(optional))]
    pub info: Option<ModelInfo>,
    #[cfg_attr(test, ts(optional))]
    pub window: Option<WindowInfo>,
    #[cfg_attr(test, ts(optional))]
    pub tiles: Option<Vec<Tile>>,
    /// (T, T) weights of (layer, head), row-major: row i is query i's weights over keys 0..=i.
    #[cfg_attr(test, ts(optional, type = "Float32Array"))]
    pub values: Option<Vec<f32>>,
    /// Per head of `layer`: [`DistanceProfile::distribution`] over distances −(T−1)..=0.
    #[cfg_attr(test, ts(optional, type = "Float64Array[]"))]
    pub profiles: Option<Vec<Vec<f64>>>,
    /// Per head of `layer`: [`DistanceProfile::description`].
    #[cfg_attr(test, ts(optional))]
    pub descriptions: Option<Vec<String>>,
    /// The distances the charts mark.
    #[cfg_attr(test, ts(optional))]
    pub landmarks: Option<Vec<Landmark>>,
    pub prediction: Prediction,
    /// The worker's milliseconds for this answer (fetching and loading included).
    pub ms: f64,
    /// Where the window's forward pass ran ([`WindowInfo`]'s nll.backend).
    pub backend: BackendShown,
}

/// page → worker: continue the window of `model` (the worker runs it first when it is not its current one):
/// `sampling` says how many tokens and how, drawn 16 at a time.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SampleMessage {
    /// A newer sampling, or a [`ModelStop`] of this id, ends it.
    pub id: u32,
    pub model: Method,
    pub window: ModelWindow,
    /// Passed to the wasm's `start_sampling` untouched.
    pub sampling: SampleRequest,
    /// Where to run the window when it must be (the sampling itself runs on the CPU: the key/value cache's
    /// steps have no GPU path).
    pub backend: BackendChoice,
}

/// page → worker: stop the sampling `id`.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelStop {
    pub id: u32,
}

/// worker → page: a batch of sampled tokens.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelSampled {
    /// The sampling's id.
    pub id: u32,
    #[serde(flatten)]
    pub sampled: Sampled,
    /// The sampling ended before its last step (stopped, superseded, or its window was run again); no notes.
    #[cfg_attr(test, ts(optional))]
    pub ended: Option<bool>,
}

/// page → worker: the NLL of every position of the window (piece, start 0, `length`, no transposition) under
/// each of the six models, computed on `backend`.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct NllRequest {
    pub id: u32,
    pub piece: String,
    pub length: f64,
    pub backend: BackendChoice,
}

/// One model's NLLs ([`PositionNll`] without its backend).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct NllSeries {
    pub model: Method,
    pub values: Vec<f64>,
    pub mean: f64,
    pub ms: f64,
}

/// worker → page: the answer to an [`NllRequest`], one series per model.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct NllResult {
    pub id: u32,
    pub piece: String,
    pub length: f64,
    pub series: Vec<NllSeries>,
}

/// page → worker: the attention-by-distance profiles of every head of `layer` for the six models on one
/// window.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CompareRequest {
    pub id: u32,
    pub window: ModelWindow,
    pub layer: usize,
    pub backend: BackendChoice,
}

/// One model's heads of the compared layer.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CompareSeries {
    pub model: Method,
    /// One per head: [`DistanceProfile::distribution`] over distances −(T−1)..=0.
    #[cfg_attr(test, ts(type = "Float64Array[]"))]
    pub profiles: Vec<Vec<f64>>,
    pub descriptions: Vec<String>,
    pub landmarks: Vec<Landmark>,
}

/// worker → page: the answer to a [`CompareRequest`].
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CompareResult {
    pub id: u32,
    pub layer: usize,
    pub window: ModelWindow,
    pub series: Vec<CompareSeries>,
}

/// worker → page: a Model mode request refused (field "model" for a model or data file that could not be
/// fetched or loaded). `of` names the request: "model", "model-sample", "model-nll" or "model-compare". A
/// refused "model" whose model did load carries its `info` (the pieces, layers and heads to offer).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ModelError {
    pub id: u32,
    pub of: String,
    pub error: WorkerError,
    #[cfg_attr(test, ts(optional))]
    pub info: Option<ModelInfo>,
}
