//! The "compare schemes" view: one input — the options shown, with their sentence — under every position
//! scheme, and for the (batch, head) shown each scheme's attention weights and its attention by distance
//! ([`crate::attention::by_distance`]). Every scheme gets the same x, W_q, W_k, W_v and W_o (they are drawn
//! from the seed by name, whatever the scheme) and its own position parameters from the same seed; Shaw's and
//! the Music Transformer's tables have the options' k. Computed on the CPU, a head at a time in blocks of
//! query rows (no whole trace), so six schemes cost about six forward passes.

use super::request::{read_request, Inputs};
use super::session::{Cutting, Made};
use super::{palette, to_js, to_value};
use crate::attention::by_distance;
use crate::error::{check_index, Error};
use crate::layer::forward;
use crate::layer::on_demand::Layer;
use crate::layer::options::LayerOptions;
use crate::layer::scenario::Scenario;
use crate::positions::Method;
use crate::protocol::{Request, SchemeView};
use crate::stage::Stage;
use wasm_bindgen::prelude::*;

/// The longest sequence the comparison takes (six layers in a row, each a few seconds at this n).
pub const MAX_COMPARE_N: usize = 2048;

/// Computes the comparison of the request's options (a preset's or a file's are refused: the page sends the
/// options it shows) for (batch, head). Returns an array of `{ method, label, meta, cut, profile, rgba,
/// values }` in [`Method::ALL`]'s order: `rgba` a Uint8ClampedArray of `cut.raster_rows × cut.raster_cols` pixels, `values`
/// the weights (a Float32Array, row-major) when they are at most [`super::session::VALUES_CELLS`], else null. Errors name the
/// field: "n" past [`MAX_COMPARE_N`], "batch index", "head", or an option.
#[wasm_bindgen]
pub fn compare_schemes(request: JsValue, batch: usize, head: usize) -> Result<JsValue, JsValue> {
    let request: Request = read_request(request)?;
    if request.options.preset.as_deref().is_some_and(|p| !p.is_empty()) || !request.file_name.is_empty() {
        let why = "the options shown, not a preset or a file (a file's tables belong to one scheme)";
        return Err(to_js(Error::invalid("compare", "a preset or a file", why)));
    }
    let out = js_sys::Array::new();
    for method in Method::ALL {
        let request = Request { options: LayerOptions { method: Some(method), ..request.options.clone() }, ..request.clone() };
        let Inputs { cfg, spec, arrays, per_head, .. } = Inputs::resolve(&request, None)?;
        if spec.n > MAX_COMPARE_N {
            return Err(to_js(Error::invalid("n", spec.n, format!("1..={MAX_COMPARE_N} to compare the six schemes"))));
        }
        check_index("head", head, cfg.heads).map_err(to_js)?;
        check_index("batch index", batch, spec.batch).map_err(to_js)?;
        let sc = Scenario::build(&cfg, &spec, arrays, per_head).map_err(to_js)?;
        let (projections, output) = forward::forward_projected(&cfg, &sc).map_err(to_js)?;
        let layer = Layer::new(&cfg, sc, projections, output).map_err(to_js)?;
        let weights = layer.stage(Stage::Weights, batch, head).map_err(to_js)?;
        // Cut as the page cuts a stage: pooled to a raster, coloured, its values kept when they are few enough.
        let mut cutting = Cutting::new(Stage::Weights, weights.dim());
        cutting.add(0, weights.view());
        let Made { cut, values, rgba } = cutting.finish(palette());
        let profile = by_distance(weights.view()).into_iter().map(|v| v as f32).collect();
        let values = cut.has_values.then_some(values);
        let view = SchemeView { method: method.to_string(), label: method.label().into(), meta: layer.meta(Stage::Weights), cut, profile, rgba, values };
        // The serialized fields, and the pixels and weights beside them as typed arrays.
        let item = to_value(&view)?;
        js_sys::Reflect::set(&item, &"rgba".into(), &js_sys::Uint8ClampedArray::from(view.rgba.as_slice()))?;
        let values = view.values.as_deref().map_or(JsValue::NULL, |v| js_sys::Float32Array::from(v).into());
        js_sys::Reflect::set(&item, &"values".into(), &values)?;
        out.push(&item);
    }
    Ok(out.into())
}
