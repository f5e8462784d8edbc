//! The page ⇄ worker protocol, defined once: every message the page (www/js/page/worker-client.js, the Model mode modules of www/js/page/model/) and the worker
//! (www/worker.js, www/js/worker/model.js) exchange, [`ToWorker`] and [`FromWorker`], each with a `kind`, and the wasm API's request and answer structs that
//! those messages carry. Which message answers which: docs/src/architecture.md, "The page ⇄ worker messages".
//!
//! A newer compute request supersedes one still waiting in the worker; the page drops any answer whose id is not its newest. Typed arrays (the fields typed
//! `Float32Array`, `Uint8ClampedArray`, …) are built by the worker from views into the wasm memory and transferred, never copied again: their Rust types say
//! what they hold. The JavaScript types are generated from these structs by ts-rs into `www/js/types/protocol.d.ts` (`make protocol`; `make check` fails when
//! it is not current), and `www/js/shared/protocol.js`, type-checked against them, builds every message.

pub mod atlas;
pub mod layer_view;
pub mod model;
pub mod pool;

use serde::{Deserialize, Serialize};

pub use atlas::*;
pub use layer_view::*;
pub use model::*;
pub use pool::*;

pub use crate::options::Unknown;

/// A request the page fills: the keys it carried that its struct (or a struct inside it) does not name, which
/// the wasm refuses (crates/relattn-wasm/src/lib.rs `from_request`) so that a control Rust does not know is never silently ignored.
pub trait Strict {
    fn unknown_fields(&self) -> Vec<&str>;
}

impl Strict for Request {
    fn unknown_fields(&self) -> Vec<&str> {
        self.unknown.keys().chain(self.options.unknown.keys()).map(String::as_str).collect()
    }
}

impl Strict for ModelRequest {
    fn unknown_fields(&self) -> Vec<&str> {
        self.unknown.keys().map(String::as_str).collect()
    }
}

impl Strict for SampleRequest {
    fn unknown_fields(&self) -> Vec<&str> {
        self.unknown.keys().map(String::as_str).collect()
    }
}

/// The colormap names of [`crate::render::Colormap`] the stages are coloured with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Colormaps {
    pub sequential: String,
    pub diverging: String,
}

/// Why a request was refused (or lost). The page decides by `field` and `kind`, never by the message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct WorkerError {
    /// The control to show it under ("general" when none).
    pub field: String,
    /// An [`relattn_core::error::ErrorKind`] by name ("invalid", "shape", "non_finite", "file", "write", "too_large",
    /// "overflow", "gpu"), or "stale" (asked of a result no longer held, or of none), "internal" (any other
    /// exception) or "fatal" (the worker's wasm aborted, or was restarted before answering).
    pub kind: String,
    pub message: String,
}

/// Every message from the page to the worker (one at a time: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum ToWorker {
    Compute(ComputeRequest),
    Export(ExportRequest),
    Cells(CellsRequest),
    Readers(ReadersRequest),
    Schemes(SchemesRequest),
    Model(ModelMessage),
    ModelSample(SampleMessage),
    ModelStop(ModelStop),
    ModelNll(NllRequest),
    ModelCompare(CompareRequest),
    AtlasHead(AtlasHeadRequest),
    /// Test hooks (tests/e2e/reliability.test.mjs, backend.test.mjs; the page never sends them): a panic in
    /// the wasm, sync or inside an async future.
    DebugPanic,
    DebugPanicAsync,
    /// Destroys the GPU device.
    DebugLoseGpu,
    /// Rebuilds the GPU context with `kernel`'s WGSL broken.
    DebugBreakPipeline {
        kernel: String,
    },
    /// Pretends the device allows only `bytes` per storage buffer binding.
    DebugGpuLimit {
        bytes: f64,
    },
}

/// Every message from the worker to the page (one at a time: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum FromWorker {
    Progress(ProgressMessage),
    Result(ResultMessage),
    Error(ErrorMessage),
    Fatal(ErrorMessage),
    Export(ExportReply),
    Cells(CellsReply),
    Readers(ReadersReply),
    Schemes(SchemesReply),
    ModelResult(ModelResult),
    ModelSampled(ModelSampled),
    ModelNll(NllResult),
    ModelCompare(CompareResult),
    ModelError(ModelError),
    /// The file of a compute request is an atlas: its picture, not a result.
    Atlas(AtlasOpened),
    AtlasHead(AtlasHeadReply),
    /// WebGPU's one try (Auto's set-up, which the first views do not wait for) has ended, either way: a view
    /// computed while it ran ([`BackendUsed::provisional`]) is asked for again.
    GpuSettled,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the page spells it (www/js/shared/protocol.js) reads as the Rust message of its kind.
    #[test]
    fn messages_read_by_their_kind() {
        let m: ToWorker = serde_json::from_str(r#"{"kind":"model-stop","id":3}"#).unwrap();
        assert!(matches!(m, ToWorker::ModelStop(ModelStop { id: 3 })));
        let m: ToWorker = serde_json::from_str(r#"{"kind":"debug-gpu-limit","bytes":1024}"#).unwrap();
        assert!(matches!(m, ToWorker::DebugGpuLimit { bytes } if bytes == 1024.0));
        let sample = r#"{"kind":"model-sample","id":2,"model":"t5","window":{"piece":"10.7","start":0,"length":64,"transpose":0},
            "sampling":{"steps":32,"temperature":1,"top_k":0,"top_p":0.95,"seed":7},"backend":"cpu"}"#;
        let ToWorker::ModelSample(m) = serde_json::from_str(sample).unwrap() else { panic!("not a model-sample") };
        assert_eq!((m.model, m.backend, m.sampling.top_p, m.sampling.unknown.len()), (relattn_core::positions::Method::T5, BackendChoice::Cpu, 0.95, 0));
    }

    /// The wasm refuses a field a request does not name: the flattened map after the window's fields holds
    /// exactly the keys that are neither the window's nor the request's.
    #[test]
    fn a_model_request_keeps_the_keys_it_does_not_name() {
        let r: ModelRequest = serde_json::from_str(r#"{"piece":"10.7","start":4,"length":8,"transpose":-2,"backend":"auto"}"#).unwrap();
        assert_eq!((r.window.piece.as_str(), r.window.start, r.window.opening, r.unknown.len()), ("10.7", 4.0, None, 0));
        let r: ModelRequest =
            serde_json::from_str(r#"{"piece":"","opening":"C5 G4 E4 C3","start":0,"length":4,"transpose":0,"backend":"cpu","lenght":9}"#).unwrap();
        assert_eq!(r.window.opening.as_deref(), Some("C5 G4 E4 C3"));
        assert_eq!(r.unknown.keys().collect::<Vec<_>>(), ["lenght"]);
        assert!(serde_json::from_str::<ModelRequest>(r#"{"piece":"10.7","start":4,"transpose":0,"backend":"cpu"}"#).is_err(), "length is missing");
    }
}

/// One figure of the notebook widget (python/relattn/widget.js: `relattn.show`, `relattn.show_model`): a
/// stage's metadata and cut, the title and formula it is shown with, where its values start in the buffer of
/// every figure's values, and for a relative table the keys of each query that read each of its rows.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct NotebookFigure {
    pub meta: relattn_core::layer::stage_meta::StageMeta,
    pub cut: Cut,
    /// The stage's title and formula, or a trained model's head ("layer 1, head 2") and what it does.
    pub title: String,
    pub formula: String,
    /// Index of its first value in the values buffer (float32 little-endian, row-major, figures concatenated).
    pub offset: usize,
    /// For a relative table (w^K, E_r, T5's bias per bucket): per row, the keys of each query that read it,
    /// `[lo_0, hi_0, lo_1, hi_1, …]` ([`relattn_core::positions::Scheme::reader_runs`]); empty for other stages.
    pub readers: Vec<Vec<u32>>,
}
