//! The head atlas in the browser: the worker opens an atlas file ([`open_atlas`]: read and checked, its
//! picture's data and one head's chart on request; a captured row's stages go through `compute` with
//! `request.atlas_row`), and the page's own instance draws the grid from that data ([`draw_atlas`] on a canvas,
//! [`atlas_svg`], [`atlas_html`]: src/render/atlas.rs, as the command line draws it).

use super::{ink, js_error, palette, to_js, to_value};
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use relattn::app::request::MEMORY_LIMIT;
use relattn::error::ErrorKind;
use relattn::files::atlas::{self, Atlas};
use relattn::render::atlas::{self as picture, AtlasView, GridSpec};
use wasm_bindgen::prelude::*;

/// Whether the .npz `bytes` is a head atlas (it has a member `atlas`).
#[wasm_bindgen]
pub fn is_atlas(bytes: &[u8]) -> bool {
    atlas::is_atlas(bytes)
}

/// An atlas read and checked, held by the worker.
#[wasm_bindgen]
pub struct OpenAtlas(Atlas);

/// Reads the atlas `bytes` (named `file_name` in messages) within the page's memory limit. Throws an `Error`
/// with `field` and `kind` for a file that is not a sound atlas.
#[wasm_bindgen]
pub fn open_atlas(bytes: &[u8], file_name: &str) -> Result<OpenAtlas, JsValue> {
    Atlas::read(bytes, file_name, MEMORY_LIMIT).map(OpenAtlas).map_err(to_js)
}

#[wasm_bindgen]
impl OpenAtlas {
    /// Its picture's data: an `AtlasView`.
    pub fn view(&self) -> Result<JsValue, JsValue> {
        to_value(&AtlasView::of(&self.0))
    }

    /// Row `row`, head `head`'s profile at full size: a `HeadChart`.
    pub fn head_chart(&self, row: usize, head: usize) -> Result<JsValue, JsValue> {
        to_value(&picture::head_chart(&self.0, row, head).map_err(to_js)?)
    }
}

/// The picture's data and the grid's spec, its metric one of the atlas's (else an error with field "metric").
fn read(view: JsValue, spec: JsValue) -> Result<(AtlasView, GridSpec), JsValue> {
    let invalid = |what: &str, e: serde_wasm_bindgen::Error| js_error(what, ErrorKind::Invalid, &format!("invalid {what}: {e}"));
    let view: AtlasView = serde_wasm_bindgen::from_value(view).map_err(|e| invalid("atlas", e))?;
    let spec: GridSpec = serde_wasm_bindgen::from_value(spec).map_err(|e| invalid("grid", e))?;
    view.metric(&spec.metric).map_err(to_js)?;
    Ok((view, spec))
}

fn drawing(reason: String) -> JsValue {
    to_js(relattn::Error::Write { path: "atlas".into(), reason })
}

/// The grid's height in pixels for `spec` (a `GridSpec`: metric, order, width, height, text_scale).
#[wasm_bindgen]
pub fn atlas_height(view: JsValue, spec: JsValue) -> Result<u32, JsValue> {
    let (view, spec) = read(view, spec)?;
    Ok(picture::grid_height(&view, &spec))
}

/// Draws the grid of `view` (an `AtlasView`) on `canvas` (sized by the caller: `atlas_height`) in the page's
/// theme and colormap; returns its tiles' rectangles (`TileRect[]`).
#[wasm_bindgen]
pub fn draw_atlas(canvas: web_sys::HtmlCanvasElement, view: JsValue, spec: JsValue) -> Result<JsValue, JsValue> {
    let (view, spec) = read(view, spec)?;
    let root = CanvasBackend::with_canvas_object(canvas).ok_or_else(|| drawing("no 2-D context".into()))?.into_drawing_area();
    let tiles = picture::draw_grid(&root, &view, &spec, ink(), palette()).map_err(drawing)?;
    root.present().map_err(|e| drawing(e.to_string()))?;
    to_value(&tiles)
}

/// The grid as SVG text (light ink, for a file; the page's colormap).
#[wasm_bindgen]
pub fn atlas_svg(view: JsValue, spec: JsValue) -> Result<String, JsValue> {
    let (view, spec) = read(view, spec)?;
    picture::grid_svg(&view, &spec, relattn::render::Ink::LIGHT, palette()).map(|(svg, _)| svg).map_err(drawing)
}

/// The atlas as one self-contained HTML page: the command line's `--out x.html`, the same file (viridis,
/// whatever the page's colormap).
#[wasm_bindgen]
pub fn atlas_html(view: JsValue, spec: JsValue) -> Result<String, JsValue> {
    let (view, spec) = read(view, spec)?;
    picture::html(&view, &spec).map_err(drawing)
}
