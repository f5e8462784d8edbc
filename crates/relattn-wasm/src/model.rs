//! Model mode's exports: [`ModelSession`], the app's [`ChoraleSession`] behind JavaScript values (requests read
//! as plain objects, answers written as plain objects, the selected map's values and pixels through pointers
//! into the wasm memory), computing on WebGPU or the CPU as [`WebGpu`] decides; and the names of the shipped
//! models and of distances in a meter.

use super::backend::WebGpu;
use super::session::Session;
use super::{from_request, palette, to_js, to_value};
use relattn::app::model::ChoraleSession;
use relattn::protocol::{ModelRequest, SampleRequest};
use relattn::trained::chorales::VOICES;
use relattn::trained::heads::{self, Meter};
use std::cell::Ref;
use wasm_bindgen::prelude::*;

/// The shipped models' kinds: the names of [`relattn::trained::MODELS`], in its order (the comparisons').
#[wasm_bindgen]
pub fn model_kinds() -> Vec<String> {
    relattn::trained::MODELS.map(|m| m.name().to_string()).to_vec()
}

/// A trained chorale model, the test pieces, the window last run and the map last selected
/// ([`ChoraleSession`]: every method takes `&self`, so the worker may call one while another's promise is
/// pending).
#[wasm_bindgen]
pub struct ModelSession(ChoraleSession);

impl ModelSession {
    /// The map last selected by [`ModelSession::weights`]: (T, T) f32 values, row-major.
    pub fn values(&self) -> Ref<'_, [f32]> {
        self.0.values()
    }

    /// The current window's tokens followed by the tokens sampled so far.
    pub fn tokens(&self) -> Vec<u32> {
        self.0.tokens()
    }
}

#[wasm_bindgen]
impl ModelSession {
    /// A model from its safetensors file's bytes (`name`: the file's name) and the chorale data file's bytes
    /// ([`ChoraleSession::load`]).
    pub fn load(model: &[u8], name: &str, data: &[u8]) -> Result<ModelSession, JsValue> {
        ChoraleSession::load(model, name, data).map(ModelSession).map_err(to_js)
    }

    /// The [`relattn::protocol::ModelInfo`].
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_value(self.0.info())
    }

    /// Runs a [`ModelRequest`] `{ window, backend }` ([`ChoraleSession::run`]); returns the
    /// [`relattn::protocol::WindowInfo`]. Errors name "request" or the window's field.
    pub async fn run(&self, request: JsValue) -> Result<JsValue, JsValue> {
        let r: ModelRequest = from_request(request, "request")?;
        to_value(&self.0.run(&WebGpu, &r).await.map_err(to_js)?)
    }

    /// The [`relattn::protocol::PositionNll`] of another window ([`ChoraleSession::nll_by_position`]).
    pub async fn nll_by_position(&self, request: JsValue) -> Result<JsValue, JsValue> {
        let r: ModelRequest = from_request(request, "request")?;
        to_value(&self.0.nll_by_position(&WebGpu, &r).await.map_err(to_js)?)
    }

    /// Selects head `head` of layer `layer` of the current window in the colormaps set
    /// ([`ChoraleSession::weights`]); returns the [`relattn::protocol::Cut`]. Read the map without a copy:
    /// `new Float32Array(memory.buffer, values_ptr(), values_len())`, `new Uint8ClampedArray(memory.buffer,
    /// rgba_ptr(), rgba_len())`.
    pub fn weights(&self, layer: usize, head: usize, raster_side: usize) -> Result<JsValue, JsValue> {
        to_value(&self.0.weights(layer, head, raster_side, palette()).map_err(to_js)?)
    }

    pub fn values_ptr(&self) -> *const f32 {
        self.0.values().as_ptr()
    }
    pub fn values_len(&self) -> usize {
        self.0.values().len()
    }
    pub fn rgba_ptr(&self) -> *const u8 {
        self.0.rgba().as_ptr()
    }
    pub fn rgba_len(&self) -> usize {
        self.0.rgba().len()
    }

    /// The [`relattn::protocol::DistanceProfile`] of head `head` of layer `layer` over the current window.
    pub fn distance_profile(&self, layer: usize, head: usize) -> Result<JsValue, JsValue> {
        to_value(&self.0.distance_profile(layer, head).map_err(to_js)?)
    }

    /// What head `head` of layer `layer` does over the current window, in one line.
    pub fn head_description(&self, layer: usize, head: usize) -> Result<String, JsValue> {
        self.0.head_description(layer, head).map_err(to_js)
    }

    /// The [`relattn::protocol::Prediction`] at `position` of the current window: the `top` most likely next tokens.
    pub fn predict(&self, position: usize, top: usize) -> Result<JsValue, JsValue> {
        to_value(&self.0.predict(position, top).map_err(to_js)?)
    }

    /// Every stage of layer `layer` on the current window's hidden states, as a [`Session`]
    /// ([`ChoraleSession::trace`]).
    pub async fn trace(&self, layer: usize, backend: String) -> Result<Session, JsValue> {
        self.0.trace(&WebGpu, layer, &backend).await.map(Session).map_err(to_js)
    }

    /// Starts sampling after the current window (a [`SampleRequest`] `{ steps, temperature, seed, top_k,
    /// top_p }`, [`ChoraleSession::start_sampling`]); returns the [`relattn::protocol::SamplingInfo`].
    pub fn start_sampling(&self, request: JsValue) -> Result<JsValue, JsValue> {
        let r: SampleRequest = from_request(request, "request")?;
        to_value(&self.0.start_sampling(&r).map_err(to_js)?)
    }

    /// Draws up to `count` more tokens of the sampling started last; returns them as [`relattn::protocol::Sampled`].
    pub fn next_tokens(&self, count: usize) -> Result<JsValue, JsValue> {
        to_value(&self.0.next_tokens(count).map_err(to_js)?)
    }

    /// A standard MIDI file (♩ = `bpm`) of the current window followed by the tokens sampled so far.
    pub fn midi(&self, bpm: u32) -> Result<Vec<u8>, JsValue> {
        self.0.midi(bpm).map_err(to_js)
    }
}

/// What the key at distance `d` = j − i reaches for a query whose predicted token (i + 1) is in voice
/// `predicted_voice` (0..4), in a meter of `beat` and `bar` steps ([`relattn::protocol::WindowInfo::meter`]): the
/// page's roll tooltip and selected-note sentence name distances with it ([`heads::name_key`]), as the charts do.
#[wasm_bindgen]
pub fn name_key(d: i32, predicted_voice: u32, beat: u32, bar: u32) -> String {
    let meter = Meter { beat: beat.max(1) as i64, bar: bar.max(1) as i64 };
    heads::name_key(d as i64, (predicted_voice % VOICES.len() as u32) as usize, meter)
}

/// What the key at distance `d` reaches relative to the predicted token, whatever voice is predicted
/// ([`heads::name_distance`]): the distance charts' tooltip.
#[wasm_bindgen]
pub fn name_distance(d: i32, beat: u32, bar: u32) -> String {
    heads::name_distance(d as i64, Meter { beat: beat.max(1) as i64, bar: bar.max(1) as i64 })
}
