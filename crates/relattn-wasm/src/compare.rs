//! The "compare schemes" view's export: [`relattn::app::compare`] behind a JavaScript request, its rasters and
//! weights as typed arrays.

use super::session::read_request;
use super::{choice_arg, palette, to_js, to_value};
use relattn::app::compare::compare;
use relattn::protocol::Compared;
use wasm_bindgen::prelude::*;

/// The comparison of the request's options for (batch, head) ([`compare`]), of the weights or the position
/// terms (`what`: "weights" or "term", [`Compared`]): an array of `{ method, label, meta, cut, profile, rgba, values }` in `Method::ALL`'s order, `rgba` a Uint8ClampedArray of
/// `cut.raster_rows × cut.raster_cols` pixels, `values` the weights (a Float32Array, row-major) or null.
#[wasm_bindgen]
pub fn compare_schemes(request: JsValue, batch: usize, head: usize, what: JsValue) -> Result<JsValue, JsValue> {
    let request = read_request(request)?;
    let what: Compared = choice_arg(what, "what", "weights, term")?;
    let out = js_sys::Array::new();
    for view in compare(&request, batch, head, what, palette()).map_err(to_js)? {
        // The serialized fields, and the pixels and weights beside them as typed arrays.
        let item = to_value(&view)?;
        js_sys::Reflect::set(&item, &"rgba".into(), &js_sys::Uint8ClampedArray::from(view.rgba.as_slice()))?;
        let values = view.values.as_deref().map_or(JsValue::NULL, |v| js_sys::Float32Array::from(v).into());
        js_sys::Reflect::set(&item, &"values".into(), &values)?;
        out.push(&item);
    }
    Ok(out.into())
}
