//! The page's figures: a [`FigureSpec`] (serde) describes one — title, subtitle, axes, colour scale, labels,
//! shape — and its values come beside it as an f32 slice. [`draw_frame`] draws the frame on a canvas and
//! leaves the cells to the page (it blits the worker's raster); [`draw_svg`] draws the whole figure as SVG.
//! Both run in the page's own wasm instance: their text is measured with the DOM ([`Measured`]), which the worker has not.

use super::measure::Measured;
use super::{ink, js_error, palette, to_js, to_value};
use ndarray::{Array2, ArrayView2, CowArray, Ix2};
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use relattn::error::{Error, ErrorKind};
use relattn::positions::table::Reach;
use relattn::render::{self, Cells, Chart, ChartFigure, Figure};
use relattn::stage::Scale;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// What a figure shows besides its values.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    pub title: String,
    pub subtitle: String,
    pub x_axis: String,
    pub y_axis: String,
    pub scale: Scale,
    /// Labels of the columns and rows; empty: indices.
    #[serde(default)]
    pub x_labels: Vec<String>,
    #[serde(default)]
    pub y_labels: Vec<String>,
    pub rows: usize,
    pub cols: usize,
    /// The colour range [lo, hi] when it is not the values' own (a zoomed window keeps its stage's colours).
    #[serde(default)]
    pub range: Option<[f32; 2]>,
    /// Every text size times this (1 when absent; larger on a slide for a larger screen), within 0.5 … 8.
    #[serde(default)]
    pub text_scale: Option<f32>,
}

/// Cells to colour: their shape, scale and colour range; with `masked_above`, the cells above the diagonal of
/// the stage they are a window of (row `origin[0] + i`, column `origin[1] + j`, j > i) are grey, as the
/// worker's rasters have them (keys after the query get no weight); with `masked_window` w, those at |j − i| ≥ w too.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsSpec {
    pub rows: usize,
    pub cols: usize,
    pub scale: Scale,
    pub range: [f32; 2],
    #[serde(default)]
    pub masked_above: bool,
    #[serde(default)]
    pub masked_window: Option<usize>,
    /// With `masked_chunk` c, the cells outside the query's chunk of c positions too.
    #[serde(default)]
    pub masked_chunk: Option<usize>,
    #[serde(default)]
    pub origin: [usize; 2],
}

/// The plot area in pixels: columns `x0..x1`, rows `y0..y1`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Area {
    pub x0: i32,
    pub x1: i32,
    pub y0: i32,
    pub y1: i32,
}

/// An SVG figure: its text, whether its cells are painted in it, and its plot area.
#[derive(Clone, Debug, Serialize)]
pub struct Svg {
    pub svg: String,
    /// Up to [`render::MAX_VECTOR_CELLS`] cells are vector rectangles; larger matrices are left out (plotters-svg
    /// has no bitmap encoder in wasm and a rectangle per pixel would be megabytes): the caller puts the cells'
    /// raster (one pixel per cell) in `area` as an `<image>`.
    pub painted: bool,
    pub area: Area,
}

impl FigureSpec {
    fn parse(spec: JsValue) -> Result<FigureSpec, JsValue> {
        serde_wasm_bindgen::from_value(spec).map_err(|e| js_error("figure", ErrorKind::Invalid, &format!("invalid figure: {e}")))
    }

    /// The figure's cells: `values` (rows × cols, row-major), or none at all with a `range` (a stage sent
    /// without its values: the frame is drawn around the cells, which the caller blits).
    fn cells<'a>(&self, values: &'a [f32], zero: &'a Array2<f32>) -> Result<CowArray<'a, f32, Ix2>, JsValue> {
        if values.is_empty() && self.range.is_some() {
            return Ok(zero.broadcast((self.rows, self.cols)).expect("a 1 × 1 array broadcasts to any shape").into());
        }
        Ok(matrix(values, self.rows, self.cols)?.into())
    }

    fn figure<'a>(&self, m: ArrayView2<'a, f32>) -> Figure<'a> {
        let labels = |l: &Vec<String>| if l.is_empty() { None } else { Some(l.clone()) };
        Figure {
            matrix: m,
            title: self.title.clone(),
            subtitle: self.subtitle.clone(),
            x_desc: self.x_axis.clone(),
            y_desc: self.y_axis.clone(),
            x_labels: labels(&self.x_labels),
            y_labels: labels(&self.y_labels),
            scale: self.scale,
            palette: palette(),
            ink: ink(),
            range: self.range.map(|[lo, hi]| (lo, hi)),
            text_scale: self.text_scale.unwrap_or(1.0),
        }
    }
}

/// `values` (rows × cols, row-major) as a matrix, or an error naming `values`.
fn matrix(values: &[f32], rows: usize, cols: usize) -> Result<Array2<f32>, JsValue> {
    Array2::from_shape_vec((rows, cols), values.to_vec())
        .map_err(|_| to_js(Error::invalid("values", format!("{} values", values.len()), format!("{rows} × {cols} values"))))
}

/// A drawing failure on `target` ("canvas" or "svg").
fn draw_error(target: &str, reason: impl ToString) -> JsValue {
    to_js(Error::Write { path: target.into(), reason: reason.to_string() })
}

/// Draws a figure's frame on `canvas` (title, subtitle, axes with labels or indices, colorbar) and leaves
/// the cells to the caller; the spec's `range`, or else `values`, set the colour range (`values` may be empty
/// with a `range`). Returns the plot [`Area`] in canvas pixels.
#[wasm_bindgen]
pub fn draw_frame(canvas: web_sys::HtmlCanvasElement, spec: JsValue, values: &[f32]) -> Result<JsValue, JsValue> {
    let spec = FigureSpec::parse(spec)?;
    let zero = Array2::zeros((1, 1));
    let m = spec.cells(values, &zero)?;
    let root = Measured(CanvasBackend::with_canvas_object(canvas).ok_or_else(|| draw_error("canvas", "no 2-D context"))?).into_drawing_area();
    let (x, y) = render::draw(&root, &spec.figure(m.view()), Cells::Leave).map_err(|e| draw_error("canvas", e))?;
    root.present().map_err(|e| draw_error("canvas", e))?;
    to_value(&Area { x0: x.start, x1: x.end, y0: y.start, y1: y.end })
}

/// The figure as SVG text of width × height, drawn by `render::draw` on plotters' SVG backend: an [`Svg`].
#[wasm_bindgen]
pub fn draw_svg(spec: JsValue, values: &[f32], width: u32, height: u32) -> Result<JsValue, JsValue> {
    let spec = FigureSpec::parse(spec)?;
    let zero = Array2::zeros((1, 1));
    let m = spec.cells(values, &zero)?;
    let painted = spec.rows * spec.cols <= render::MAX_VECTOR_CELLS && !values.is_empty();
    let mut svg = String::new();
    let (x, y) = {
        let root = Measured(SVGBackend::with_string(&mut svg, (width, height))).into_drawing_area();
        let r = render::draw(&root, &spec.figure(m.view()), if painted { Cells::Paint } else { Cells::Leave }).map_err(|e| draw_error("svg", e))?;
        root.present().map_err(|e| draw_error("svg", e))?;
        r
    };
    to_value(&Svg { svg, painted, area: Area { x0: x.start, x1: x.end, y0: y.start, y1: y.end } })
}

/// `values` ([`CellsSpec`]'s rows × cols, row-major) as RGBA pixels over the spec's colour range: the page's
/// zoomed window of a stage, coloured like the whole stage.
#[wasm_bindgen]
pub fn colour(spec: JsValue, values: &[f32]) -> Result<Vec<u8>, JsValue> {
    let spec: CellsSpec = serde_wasm_bindgen::from_value(spec).map_err(|e| js_error("cells", ErrorKind::Invalid, &format!("invalid cells: {e}")))?;
    let mut m = matrix(values, spec.rows, spec.cols)?;
    let reach = Reach { causal: spec.masked_above, window: spec.masked_window, chunk: spec.masked_chunk };
    if reach.causal || reach.window.is_some() {
        let [r0, c0] = spec.origin;
        // As masked logits are: −∞, which the colours grey.
        m.indexed_iter_mut().filter(|((i, j), _)| !reach.sees(r0 + i, c0 + j)).for_each(|(_, v)| *v = f32::NEG_INFINITY);
    }
    let [lo, hi] = spec.range;
    Ok(render::rgba_in_range(m.view(), spec.scale, palette(), (lo, hi)))
}

/// What a chart figure shows: a picture's curves ([`Chart`]) with its title, subtitle and axes; `text_px`, the
/// size of its ticks, axis titles, legend and point labels (12 on the page, larger on a slide).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartSpec {
    pub title: String,
    pub subtitle: String,
    pub x_axis: String,
    pub y_axis: String,
    pub chart: Chart,
    pub text_px: u32,
}

impl ChartSpec {
    fn parse(spec: JsValue) -> Result<ChartSpec, JsValue> {
        serde_wasm_bindgen::from_value(spec).map_err(|e| js_error("chart", ErrorKind::Invalid, &format!("invalid chart: {e}")))
    }

    fn figure(&self) -> ChartFigure<'_> {
        ChartFigure {
            chart: &self.chart,
            title: &self.title,
            subtitle: &self.subtitle,
            x_desc: &self.x_axis,
            y_desc: &self.y_axis,
            ink: ink(),
            text_px: self.text_px.clamp(8, 64),
        }
    }
}

/// Draws a chart figure ([`ChartSpec`]) on `canvas`.
#[wasm_bindgen]
pub fn draw_chart(canvas: web_sys::HtmlCanvasElement, spec: JsValue) -> Result<(), JsValue> {
    let spec = ChartSpec::parse(spec)?;
    let root = Measured(CanvasBackend::with_canvas_object(canvas).ok_or_else(|| draw_error("canvas", "no 2-D context"))?).into_drawing_area();
    render::draw_chart(&root, &spec.figure()).map_err(|e| draw_error("canvas", e))?;
    root.present().map_err(|e| draw_error("canvas", e))
}

/// A chart figure ([`ChartSpec`]) as SVG text of width × height.
#[wasm_bindgen]
pub fn chart_svg(spec: JsValue, width: u32, height: u32) -> Result<String, JsValue> {
    let spec = ChartSpec::parse(spec)?;
    let mut svg = String::new();
    {
        let root = Measured(SVGBackend::with_string(&mut svg, (width, height))).into_drawing_area();
        render::draw_chart(&root, &spec.figure()).map_err(|e| draw_error("svg", e))?;
        root.present().map_err(|e| draw_error("svg", e))?;
    }
    Ok(svg)
}
