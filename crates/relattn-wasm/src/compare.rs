//! The "compare schemes" view's exports: [`relattn::app::compare`] behind a JavaScript request, its rasters and
//! weights as typed arrays, and its shares for the worker's pool (www/js/worker/pool.js).

use super::pool::ranges;
use super::session::read_request;
use super::{choice_arg, palette, to_js, to_value};
use relattn::app::compare::{compare, compare_range, schemes};
use relattn::app::pool::split;
use relattn::protocol::Compared;
use wasm_bindgen::prelude::*;

/// The comparison of the request's options for (batch, head) ([`relattn::app::compare::compare`]), of the weights
/// or the position terms (`what`: "weights" or "term", [`Compared`]); with `from` and `to`, of those schemes alone
/// ([`compare_range`]: a pool's share). An array of `{ method, label, meta, cut, profile, rgba, values }` in
/// `Method::ALL`'s order, `rgba` a Uint8ClampedArray of `cut.raster_rows × cut.raster_cols` pixels, `values` the
/// weights (a Float32Array, row-major) or null.
#[wasm_bindgen]
pub fn compare_schemes(request: JsValue, batch: usize, head: usize, what: JsValue, from: Option<usize>, to: Option<usize>) -> Result<JsValue, JsValue> {
    let request = read_request(request)?;
    let what: Compared = choice_arg(what, "what", "weights, term")?;
    let views = match (from, to) {
        (Some(a), Some(b)) => compare_range(&request, a..b, batch, head, what, palette()),
        _ => compare(&request, batch, head, what, palette()),
    };
    let out = js_sys::Array::new();
    for view in views.map_err(to_js)? {
        // The serialized fields, and the pixels and weights beside them as typed arrays.
        let item = to_value(&view)?;
        js_sys::Reflect::set(&item, &"rgba".into(), &js_sys::Uint8ClampedArray::from(view.rgba.as_slice()))?;
        let values = view.values.as_deref().map_or(JsValue::NULL, |v| js_sys::Float32Array::from(v).into());
        js_sys::Reflect::set(&item, &"values".into(), &values)?;
        out.push(&item);
    }
    Ok(out.into())
}

/// The schemes `workers` workers compute of the comparison of the request's options, `[[a, b], …]` (the lead the
/// first; as many as have any): contiguous ranges of its schemes, as even as they go.
#[wasm_bindgen]
pub fn compare_shares(request: JsValue, workers: usize) -> Result<JsValue, JsValue> {
    let request = read_request(request)?;
    let count = schemes(&request).map_err(to_js)?.len();
    ranges(&split(count, workers, 1))
}
