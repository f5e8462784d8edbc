//! A computed trace, held in the worker's wasm memory: [`Session::info`] describes it (one serde struct),
//! [`Session::select`] cuts one stage of one (batch, head) for the page to read without a copy.

use super::request::{Inputs, Settings};
use super::{palette, to_js, to_value};
use crate::error::Error;
use crate::presets;
use crate::render;
use crate::stage::{Stage, StageMeta};
use crate::timing::{now_ms, StageTimes};
use crate::trace::Trace;
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// A named duration in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Timing {
    pub name: String,
    pub ms: f64,
}

/// Where a trace (or a trained model's pass) was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendUsed {
    /// Whether the GPU computed it (else the CPU).
    pub on_gpu: bool,
    /// "CPU (wasm)" or "WebGPU: <adapter>".
    pub name: String,
    /// Why the GPU asked for (Auto or WebGPU) was not used; empty when it was, or when the CPU was asked for.
    pub note: String,
}

/// Everything the page needs to know about a trace besides its numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    /// The preset's name, or "".
    pub preset: String,
    /// The preset's one-line description, or "".
    pub preset_description: String,
    /// The settings the trace was computed with (a preset's own, or the sizes of a file's x).
    pub settings: Settings,
    /// The trace's stages in pipeline order, with their titles, formulas and axes.
    pub stages: Vec<StageMeta>,
    pub backend: BackendUsed,
    /// Milliseconds of each compute stage ([`StageTimes::named`]): on the CPU head stages summed over heads
    /// and the logits in their three parts; on the GPU each stage submitted alone and waited for.
    pub stage_times: Vec<Timing>,
}

/// The most pixels a side of a stage's raster: larger stages are pooled ([`render::rgba_pooled`]); their
/// values stay whole (the tooltip reads the exact cell).
pub const RASTER_SIDE: usize = 512;

/// The stage last selected: its shape and colour range (values and pixels behind the pointers).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Cut {
    pub rows: usize,
    pub cols: usize,
    /// The raster's shape: (rows, cols), or pooled to at most [`RASTER_SIDE`] a side.
    pub raster_rows: usize,
    pub raster_cols: usize,
    /// The colour range: values at or below `lo` get the map's first colour, at or above `hi` its last.
    pub lo: f32,
    pub hi: f32,
}

/// One trace and the stage last selected.
#[wasm_bindgen]
pub struct Session {
    trace: Trace,
    stages: Vec<Stage>,
    info: Info,
    values: Vec<f32>,
    rgba: Vec<u8>,
    /// Building the scenario, computing the trace, and cutting each stage last selected.
    timings: Vec<Timing>,
}

impl Session {
    /// A session around a trace computed on either backend.
    pub fn new(trace: Trace, inputs: &Inputs, timings: Vec<Timing>, backend: BackendUsed, stage_times: &StageTimes) -> Session {
        let stages = trace.stages();
        let preset_description = if inputs.preset.is_empty() { "" } else { presets::preset(&inputs.preset).map(|p| p.description).unwrap_or("") };
        let (b, _, n) = trace.dims();
        let spec = crate::scenario::Spec { n, batch: b, d_model: trace.x.dim().2, ..inputs.spec };
        let info = Info {
            preset: inputs.preset.clone(),
            preset_description: preset_description.into(),
            settings: Settings::of(&trace.config, &spec, inputs.per_head, &inputs.tokens),
            stages: stages.iter().map(|&s| trace.meta(s)).collect(),
            backend,
            stage_times: stage_times.named().into_iter().map(|(name, ms)| Timing { name: name.into(), ms }).collect(),
        };
        Session { trace, stages, info, values: Vec::new(), rgba: Vec::new(), timings }
    }

    /// The trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// [`Session::select`] as a Rust value.
    pub fn cut(&mut self, i: usize, batch: usize, head: usize) -> Result<Cut, JsValue> {
        let t0 = now_ms();
        let stage = self.stages.get(i).copied().ok_or_else(|| to_js(Error::invalid("stage", i, format!("0..{}", self.stages.len()))))?;
        let m: Array2<f32> = self.trace.stage(stage, batch, head).map_err(to_js)?;
        let (rgba, (raster_rows, raster_cols), (lo, hi)) = render::rgba_pooled(m.view(), stage.scale(), palette(), RASTER_SIDE);
        let (rows, cols) = m.dim();
        self.values = m.as_standard_layout().iter().copied().collect();
        self.rgba = rgba;
        let ms = now_ms() - t0;
        match self.timings.iter_mut().find(|t| t.name == stage.name()) {
            Some(t) => t.ms = ms,
            None => self.timings.push(Timing { name: stage.name().into(), ms }),
        }
        Ok(Cut { rows, cols, raster_rows, raster_cols, lo, hi })
    }
}

#[wasm_bindgen]
impl Session {
    /// The [`Info`]: `{ preset, preset_description, settings, stages, backend, stage_times }`.
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_value(&self.info)
    }

    /// `[{ name, ms }]`: building the scenario, the trace, and cutting and colouring each selected stage.
    pub fn timings(&self) -> Result<JsValue, JsValue> {
        to_value(&self.timings)
    }

    /// The whole trace as an .npz (uncompressed), under the CLI's names (`relattn compute --out`).
    pub fn npz(&self) -> Result<Vec<u8>, JsValue> {
        let mut out = std::io::Cursor::new(Vec::new());
        self.trace.write_npz(&mut out).map_err(to_js)?;
        Ok(out.into_inner())
    }

    /// Cuts stage `i` (of [`Info::stages`]) of (batch, head) and colours it; returns the [`Cut`]
    /// `{ rows, cols, lo, hi }`; read the values and pixels through the pointers below.
    pub fn select(&mut self, i: usize, batch: usize, head: usize) -> Result<JsValue, JsValue> {
        to_value(&self.cut(i, batch, head)?)
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
}
