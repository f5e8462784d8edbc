//! The pool's messages: the worker (www/worker.js, the lead) and its helpers (www/pool-worker.js, each its own wasm
//! instance) computing one layer held on demand together ([`crate::app::pool`]: heads, then query rows, split among
//! them). The lead sends [`ToHelper`], a helper answers [`FromHelper`], each naming the lead's `job`; the arrays
//! are row-major float32, copied (or transferred) with the message. A superseded request's helpers still busy are
//! stopped by the lead (terminated, and started afresh): they answer nothing.
//!
//! | the lead sends | a helper answers |
//! |---|---|
//! | `init` ([`InitJob`]: the lead's compiled wasm module), once, first | nothing |
//! | `share` ([`ShareJob`]: the request, and the heads it computes, if any) | `shared` ([`SharedReply`]) |
//! | `rows` ([`RowsJob`]: its rows of the heads' outputs) | `rows` ([`RowsReply`]: its output rows) |
//! | `cut` ([`CutJob`]: a (batch, head) and the head's projections) | `cut` ([`CutReply`]: each stage's cut of its query rows) |
//! | `compare` ([`CompareJob`]: a "compare schemes" request and a range of its schemes) | `compared` ([`ComparedReply`]: their views) |
//! | | `failed` ([`HelperFailed`]) instead, for any of them |

use super::{Compared, Request, ScenarioFile, SchemeView, WorkerError};
use crate::options::LayerOptions;
use serde::{Deserialize, Serialize};

/// Every message from the lead to a helper.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum ToHelper {
    Init(InitJob),
    Share(ShareJob),
    Rows(RowsJob),
    Cut(CutJob),
    Compare(CompareJob),
}

/// Every message from a helper to the lead.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum FromHelper {
    Shared(SharedReply),
    Rows(RowsReply),
    Cut(CutReply),
    Compared(ComparedReply),
    Failed(HelperFailed),
}

/// lead → helper, first: the lead's compiled wasm module, which the helper instantiates (no fetch, no compile; the
/// engine's optimised code of the module is shared). No answer.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct InitJob {
    #[cfg_attr(test, ts(type = "WebAssembly.Module"))]
    pub module: serde::de::IgnoredAny,
}

/// lead → helper: build the scenario of `request` (its scenario file's bytes in `file`), as the lead did, and
/// compute heads `heads[0]..heads[1]` of it (none: this helper only takes rows).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ShareJob {
    pub job: u32,
    pub request: Request,
    #[cfg_attr(test, ts(optional))]
    pub file: Option<ScenarioFile>,
    pub heads: Option<[u32; 2]>,
}

/// A helper's heads: their columns of Q and K (b, n, heads·d_head), of V and of their outputs z (b, n,
/// heads·d_v).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct HeadsView {
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub q: Vec<f32>,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub k: Vec<f32>,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub v: Vec<f32>,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub z: Vec<f32>,
}

/// helper → lead: the share is built; its heads' [`HeadsView`] when it was given heads.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct SharedReply {
    pub job: u32,
    pub part: Option<HeadsView>,
}

/// lead → helper: rows `rows[0]..rows[1]` of the heads' concatenated outputs (b, rows, h·d_v): its output rows,
/// and the query rows it cuts from now on.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct RowsJob {
    pub job: u32,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub concat: Vec<f32>,
    pub rows: [u32; 2],
}

/// helper → lead: its rows of the layer's output (b, rows, d_out).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct RowsReply {
    pub job: u32,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub output: Vec<f32>,
}

/// lead → helper: cut every stage of (batch, head) from its query rows, with that head's columns of the
/// projections: Q's and K's (b, n, d_head), V's (b, n, d_v).
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CutJob {
    pub job: u32,
    pub batch: u32,
    pub head: u32,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub q: Vec<f32>,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub k: Vec<f32>,
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub v: Vec<f32>,
}

/// One stage's cut of a helper's query rows ([`crate::app::session::CutPart`]): the pooled rows its rows fall in,
/// from pooled row `first_row` (row-major, the raster's columns wide; −∞ where its rows give none), the least and
/// greatest finite value, and its rows' values when the stage comes with its values.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CutPartView {
    #[cfg_attr(test, ts(type = "Float32Array"))]
    pub pooled: Vec<f32>,
    pub first_row: u32,
    pub lo: f32,
    pub hi: f32,
    #[cfg_attr(test, ts(type = "Float32Array | null"))]
    pub values: Option<Vec<f32>>,
}

/// helper → lead: every stage's [`CutPartView`], in the stages' order.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CutReply {
    pub job: u32,
    pub parts: Vec<CutPartView>,
}

/// lead → helper: schemes `schemes[0]..schemes[1]` of the comparison of `options` and `tokens` (a page's
/// [`super::SchemesRequest`]: [`crate::app::compare::compare_range`]), for (batch, head). Its share held, if any, stays.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct CompareJob {
    pub job: u32,
    pub options: LayerOptions,
    pub tokens: Vec<String>,
    pub batch: u32,
    pub head: u32,
    pub what: Compared,
    pub schemes: [u32; 2],
}

/// helper → lead: the views of its schemes, in order (each its rgba and values as typed arrays, as the page's).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct ComparedReply {
    pub job: u32,
    pub schemes: Vec<SchemeView>,
}

/// helper → lead: job `job` failed (`fatal`: the helper's wasm instance aborted, and the lead replaces it).
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct HelperFailed {
    pub job: u32,
    pub error: WorkerError,
    pub fatal: bool,
}
