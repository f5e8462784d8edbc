//! Parameters mode's exports: [`compute`] reads the page's request and computes its layer
//! ([`relattn::app::session::compute`], on WebGPU or the CPU as [`super::backend::WebGpu`] decides), and
//! [`Session`] is the app's session behind JavaScript values: its info and timings as plain objects, the
//! selected stage's values and pixels through pointers into the wasm memory (`new Float32Array(memory.buffer,
//! ptr, len)`), no copy.

use super::backend::WebGpu;
use super::{choice_arg, from_request, palette, to_js, to_value};
use relattn::app::session;
use relattn::error::Error;
use relattn::layer::trace::Trace;
use relattn::options::LayerOptions;
use relattn::protocol::{HeadScale, Request};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The page's [`Request`] ([`from_request`]), an option of the wrong type refused by its own name: the first
/// key of `options` that does not deserialize alone (as Python's keywords are refused).
pub fn read_request(value: JsValue) -> Result<Request, JsValue> {
    from_request(value.clone(), "request").map_err(|whole| {
        let options = js_sys::Reflect::get(&value, &"options".into()).unwrap_or(JsValue::UNDEFINED);
        let keys = if options.is_object() { js_sys::Object::keys(options.unchecked_ref::<js_sys::Object>()).to_vec() } else { Vec::new() };
        let refused = |key: &JsValue| {
            let one = js_sys::Object::new();
            let v = js_sys::Reflect::get(&options, key).ok()?;
            js_sys::Reflect::set(&one, key, &v).ok()?;
            let e = serde_wasm_bindgen::from_value::<LayerOptions>(one.into()).err()?;
            let given = js_sys::JSON::stringify(&v).ok().and_then(|s| s.as_string()).unwrap_or_else(|| "this value".into());
            Some(to_js(Error::invalid(&key.as_string()?, given, e)))
        };
        keys.iter().find_map(refused).unwrap_or(whole)
    })
}

/// Computes the layer of a [`Request`] (a plain object; `file`: a scenario file's bytes, named by
/// `request.file_name`) where `request.backend` says. Throws an `Error` with `field` and `kind` for bad input.
#[wasm_bindgen]
pub async fn compute(request: JsValue, file: Option<Vec<u8>>) -> Result<Session, JsValue> {
    let request = read_request(request)?;
    session::compute(&WebGpu, &request, file).await.map(Session).map_err(to_js)
}

/// One computed layer and the (batch, head) selected ([`session::Session`]).
#[wasm_bindgen]
pub struct Session(pub(super) session::Session);

impl Session {
    /// The trace, when it was computed whole.
    pub fn trace(&self) -> Option<&Trace> {
        self.0.trace()
    }
}

#[wasm_bindgen]
impl Session {
    /// The [`relattn::protocol::Info`]: `{ preset, preset_description, options, tokens, stages, backend,
    /// stage_times, on_demand }`.
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_value(self.0.info())
    }

    /// `[{ name, ms }]`: building the scenario, the layer, and cutting the stages of the head shown.
    pub fn timings(&self) -> Result<JsValue, JsValue> {
        to_value(&self.0.timings())
    }

    /// The whole trace as an .npz (uncompressed), under the CLI's names; a layer computed on demand is refused
    /// (field "export").
    pub fn npz(&self) -> Result<Vec<u8>, JsValue> {
        self.0.npz().map_err(to_js)
    }

    /// The (batch, head) to show for the one asked, each clamped into this layer's range, as a
    /// [`relattn::protocol::Shown`]. JS numbers arrive as i32 (NaN as 0).
    pub fn shown_for(&self, batch: i32, head: i32) -> Result<JsValue, JsValue> {
        to_value(&self.0.shown_for(batch, head))
    }

    /// Selects stage `i` of (batch, head) in the colormaps set ([`super::set_colormaps`]), the stages
    /// `head_scale` picks ("bias", "all" or "each", [`HeadScale`]) coloured over every head's range; returns
    /// the [`relattn::protocol::Cut`] `{ rows, cols, raster_rows, raster_cols, lo, hi, has_values,
    /// heads_shared, own_scale }`; read the values and pixels through the pointers below.
    pub fn select(&mut self, i: usize, batch: usize, head: usize, head_scale: JsValue) -> Result<JsValue, JsValue> {
        self.0.set_head_scale(choice_arg::<HeadScale>(head_scale, "head_scale", "bias, all, each")?);
        to_value(&self.0.cut(i, batch, head, palette()).map_err(to_js)?)
    }

    /// Whether the stages of (batch, head) are cut already in the colormaps set with `head_scale` (which it sets,
    /// as [`Session::select`] does): when not, for a layer a pool computed, its helpers cut them
    /// ([`Session::begin_parts`]).
    pub fn is_cut(&mut self, batch: usize, head: usize, head_scale: JsValue) -> Result<bool, JsValue> {
        self.0.set_head_scale(choice_arg::<HeadScale>(head_scale, "head_scale", "bias, all, each")?);
        Ok(self.0.is_cut(batch, head, palette()))
    }

    /// Starts gathering the stages of (batch, head) from the pool's shares (the lead's [`Session::add_rows`], then
    /// the helpers' cuts, [`Session::add_part`], in row order); the next [`Session::select`] of them colours them instead of computing them.
    pub fn begin_parts(&mut self, batch: usize, head: usize) -> Result<(), JsValue> {
        self.0.begin_parts(batch, head).map_err(to_js)
    }

    /// The lead's own query rows `a..b` of the (batch, head) begun, cut here, before every helper's part
    /// ([`session::Session::add_rows`]).
    pub fn add_rows(&mut self, a: usize, b: usize) -> Result<(), JsValue> {
        self.0.add_rows(a..b).map_err(to_js)
    }

    /// Drops the cuts begun ([`session::Session::drop_parts`]): a share failed or was superseded.
    pub fn drop_parts(&mut self) {
        self.0.drop_parts();
    }

    /// A helper's cut of stage `k` ([`relattn::protocol::CutPartView`]'s fields).
    pub fn add_part(&mut self, k: usize, pooled: Vec<f32>, first_row: usize, lo: f32, hi: f32, values: Option<Vec<f32>>) -> Result<(), JsValue> {
        self.0.add_part(k, session::CutPart { pooled, first_row, bounds: (lo, hi), values }).map_err(to_js)
    }

    /// The values of stage `i` of (batch, head) in rows `r0..r0 + rows`, columns `c0..c0 + cols`, row-major (at
    /// most [`session::VALUES_CELLS`]). Errors name "stage", "batch index", "head" or "cells".
    #[allow(clippy::too_many_arguments)]
    pub fn cells(&self, i: usize, batch: usize, head: usize, r0: usize, c0: usize, rows: usize, cols: usize) -> Result<Vec<f32>, JsValue> {
        self.0.read_cells(i, batch, head, r0..r0.saturating_add(rows), c0..c0.saturating_add(cols)).map_err(to_js)
    }

    /// Reverse linking: the keys of each query that read row `row` of the relative tables, `[lo_0, hi_0, …]`
    /// ([`session::Session::table_readers`]). The error names "row".
    pub fn table_readers(&self, row: usize) -> Result<Vec<u32>, JsValue> {
        self.0.table_readers(row).map_err(to_js)
    }

    /// The lecture's pictures of the layer's scheme, in the colormaps set: an array of
    /// [`relattn::protocol::PictureView`], `rgba` a Uint8ClampedArray and `values` a Float32Array or null.
    pub fn pictures(&self) -> Result<JsValue, JsValue> {
        let out = js_sys::Array::new();
        for view in self.0.pictures(palette()) {
            // The serialized fields, and the pixels and values beside them as typed arrays.
            let item = to_value(&view)?;
            js_sys::Reflect::set(&item, &"rgba".into(), &js_sys::Uint8ClampedArray::from(view.rgba.as_slice()))?;
            let values = view.values.as_deref().map_or(JsValue::NULL, |v| js_sys::Float32Array::from(v).into());
            js_sys::Reflect::set(&item, &"values".into(), &values)?;
            out.push(&item);
        }
        Ok(out.into())
    }

    pub fn values_ptr(&self) -> *const f32 {
        self.0.selected().map_or(std::ptr::null(), |(v, _)| v.as_ptr())
    }
    pub fn values_len(&self) -> usize {
        self.0.selected().map_or(0, |(v, _)| v.len())
    }
    pub fn rgba_ptr(&self) -> *const u8 {
        self.0.selected().map_or(std::ptr::null(), |(_, p)| p.as_ptr())
    }
    pub fn rgba_len(&self) -> usize {
        self.0.selected().map_or(0, |(_, p)| p.len())
    }
}
