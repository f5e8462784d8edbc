//! A head atlas drawn: every layer × head of a model as a tile, the head's attention by offset j − i over the
//! scheme's position term, the tile coloured by a metric ([`crate::files::atlas::Metric`]). [`AtlasView`] is
//! what the picture is drawn from (made of an [`Atlas`] once: by the page's worker, by the command line);
//! [`draw_grid`] draws it on any plotters backend (the page's canvas and SVG, the CLI's SVG and PNG) and says
//! where each tile is; [`html`] wraps its SVG in one self-contained page with tooltips; [`head_chart`] is one
//! head's profile at full size.

use super::chart::{Chart, Series};
use super::colormap::{Lut, Palette};
use super::figure::{capped, printable, short, Ink};
use crate::files::atlas::{Atlas, Metric};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use relattn_core::stage::Scale;
use serde::{Deserialize, Serialize};

/// The axis of a profile: the key's offset from the query.
pub const OFFSET_AXIS: &str = "offset j − i (key − query)";
/// What a profile measures.
pub const PROFILE_AXIS: &str = "mean attention weight";
/// The faint curve under each profile.
pub const PRIOR_LABEL: &str = "the scheme's position term, rescaled to the profile's range";
/// Points of each curve a tile draws (the offsets pooled into this many bins).
pub const TILE_POINTS: usize = 48;
/// Most characters of the model's and the family's names in the title (the rest cut with "…").
pub const MAX_NAME_CHARS: usize = 80;
/// Most points of [`head_chart`]'s curves (the offsets pooled into at most this many bins).
pub const CHART_POINTS: usize = 1024;

/// How the tiles of a row are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub enum Order {
    /// Head 0, 1, … .
    #[default]
    Head,
    /// By the metric shown, highest first.
    Metric,
    /// Grouped by K/V head, heads in order within a group.
    KvHead,
}

/// One metric as the picture shows it: its name, title and description ([`Metric`]), per tile its mean, its
/// standard deviation over the prompts and the value that colours the tile, and the colour range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct MetricView {
    pub name: String,
    pub title: String,
    pub description: String,
    /// L × H, row-major; NaN where the prompts gave none.
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    /// What colours the tile (the entropy as a share of the uniform entropy; else the mean).
    pub shown: Vec<f32>,
    /// The colours' range [lo, hi]: 0 … 1 for shares, 0 … the largest for the mean distance.
    pub range: [f32; 2],
}

/// One row of the atlas as the picture labels it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct RowView {
    /// "decoder layer 3".
    pub title: String,
    /// Its scheme, as the file names it.
    pub method: String,
    /// Whether the atlas holds its whole capture (its stages open with a click).
    pub captured: bool,
    /// How to capture it when it is not: `relattn.capture(model, layer=…)` or `relattn.atlas(..., layers=[…])`.
    pub how_to_capture: String,
}

/// Everything the atlas's picture is drawn from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct AtlasView {
    /// "tiny-llama (llama): 2 layers × 4 heads, 3 prompts".
    pub title: String,
    /// The prompts and the notes, in one line.
    pub subtitle: String,
    pub rows: Vec<RowView>,
    pub heads: usize,
    /// L × H: the K/V head of each tile.
    pub kv_head: Vec<u32>,
    /// The metrics that colour tiles, in [`Metric::ALL`]'s order ([`Atlas::tile_metrics`]).
    pub metrics: Vec<MetricView>,
    /// L × H × 2 × [`TILE_POINTS`]: each tile's profile then its prior, pooled over the row's offsets and scaled
    /// to 0 … 1 of the tile's height (the profile's own peak at 1); NaN where no query sees the offsets.
    pub curves: Vec<f32>,
    /// L × H: each tile's tooltip, line by line.
    pub tips: Vec<Vec<String>>,
    /// The axis and the curves, as [`OFFSET_AXIS`], [`PROFILE_AXIS`], [`PRIOR_LABEL`] say.
    pub offset_axis: String,
    pub profile_axis: String,
    pub prior_label: String,
}

/// Where a tile was drawn, in the backend's pixels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct TileRect {
    pub row: usize,
    pub head: usize,
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

/// One head's profile at full size ([`head_chart`]): a chart figure's title, subtitle, axes and curves.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct HeadChart {
    pub title: String,
    pub subtitle: String,
    pub x_axis: String,
    pub y_axis: String,
    pub chart: Chart,
}

/// `v` over `lo..=hi` at `bins` points: the mean of the finite values in each of `bins` equal spans (NaN for a
/// span with none) when there are at least as many offsets as bins; else read between the offsets, linearly
/// (NaN beside a NaN), so that a short profile is drawn as lines between its offsets, not as steps.
fn pooled(v: &[f32], lo: usize, hi: usize, bins: usize) -> Vec<f32> {
    let span = hi + 1 - lo;
    if span < bins {
        return (0..bins)
            .map(|b| {
                let t = if bins > 1 { b as f32 * (span - 1) as f32 / (bins - 1) as f32 } else { 0.0 };
                let (k, f) = (t.floor() as usize, t.fract());
                let (a, z) = (v[lo + k], v[lo + (k + 1).min(span - 1)]);
                if f == 0.0 {
                    a
                } else {
                    a + (z - a) * f
                }
            })
            .collect();
    }
    (0..bins)
        .map(|b| {
            let (a, z) = (lo + b * span / bins, lo + (b + 1) * span / bins);
            let (sum, count) = v[a..z].iter().filter(|x| x.is_finite()).fold((0.0f64, 0u32), |(s, c), &x| (s + x as f64, c + 1));
            if count == 0 {
                f32::NAN
            } else {
                (sum / count as f64) as f32
            }
        })
        .collect()
}

/// The prior drawn under a profile: the term's finite values mapped linearly onto 0 … `peak` (its lowest at 0,
/// its highest at `peak`); a constant term (no position term) at 0.
fn rescaled(term: &[f32], peak: f32) -> Vec<f32> {
    let (lo, hi) = term.iter().filter(|x| x.is_finite()).fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    term.iter()
        .map(|&t| {
            if !t.is_finite() {
                f32::NAN
            } else if hi > lo {
                (t - lo) / (hi - lo) * peak
            } else {
                0.0
            }
        })
        .collect()
}

/// The offsets (as indices d + N − 1) where row `c` has a finite profile for some head: lo..=hi.
fn seen_offsets(atlas: &Atlas, c: usize) -> (usize, usize) {
    let (_, h, n) = atlas.dims();
    let seen = |d: usize| (0..h).any(|head| atlas.profile[[c, head, d]].is_finite());
    let lo = (0..2 * n - 1).find(|&d| seen(d));
    match lo {
        Some(lo) => (lo, (lo..2 * n - 1).rev().find(|&d| seen(d)).unwrap_or(lo)),
        None => (0, 2 * n - 2),
    }
}

/// A tooltip's lines for row `c`, head `h`: the layer, head and K/V head, each metric's mean ± std, and
/// whether a click opens its stages.
pub fn tile_tip(atlas: &Atlas, c: usize, h: usize) -> Vec<String> {
    let layer = &atlas.info.layers[c];
    let mut lines = vec![format!("{}, head {h} · K/V head {} ({})", layer.title(), atlas.kv_head[[c, h]], layer.method)];
    for m in Metric::ALL {
        let Some((mean, std)) = atlas.metric(m, c, h) else { continue };
        let relative = match (m, atlas.shown(m, c, h)) {
            (Metric::Entropy, Some(share)) => format!(" nats ({} of uniform)", short(share)),
            (Metric::Entropy | Metric::UniformEntropy, _) => " nats".into(),
            _ => String::new(),
        };
        lines.push(format!("{}: {} ± {}{relative}", m.title(), short(mean), short(std)));
    }
    lines.push(if atlas.is_captured(c) { "captured: in the page, a click opens this head's stages".into() } else { how_to_capture(atlas, c) });
    lines
}

/// What a row not captured needs to be: `relattn.capture` of its layer (and part, for T5's decoder), or the
/// atlas again with the row (the atlas's rows, not the layers' numbers: T5's decoder rows follow the encoder's).
fn how_to_capture(atlas: &Atlas, c: usize) -> String {
    let layer = &atlas.info.layers[c];
    let part = if layer.part == "decoder" && atlas.info.layers.iter().any(|l| l.part == "encoder") { ", part=\"decoder\"" } else { "" };
    format!(
        "{} is not captured in this atlas: capture it with relattn.capture(model, layer={}{part}, …) or relattn.atlas(..., layers=[{c}])",
        layer.title(),
        layer.layer,
    )
}

impl AtlasView {
    /// The picture's data of `atlas`.
    pub fn of(atlas: &Atlas) -> AtlasView {
        let (l, h, _) = atlas.dims();
        let info = &atlas.info;
        let rows = info
            .layers
            .iter()
            .enumerate()
            .map(|(c, layer)| RowView {
                title: layer.title(),
                method: layer.method.clone(),
                captured: atlas.is_captured(c),
                how_to_capture: how_to_capture(atlas, c),
            })
            .collect();
        let tiles = || (0..l).flat_map(|c| (0..h).map(move |head| (c, head)));
        let metrics = atlas
            .tile_metrics()
            .into_iter()
            .map(|m| {
                let (mean, std): (Vec<f32>, Vec<f32>) = tiles().map(|(c, head)| atlas.metric(m, c, head).expect("a tile metric")).unzip();
                let shown: Vec<f32> = tiles().map(|(c, head)| atlas.shown(m, c, head).expect("a tile metric")).collect();
                let top = shown.iter().filter(|v| v.is_finite()).fold(0.0f32, |a, &b| a.max(b));
                let range = if m == Metric::MeanDistance { [0.0, top.max(1.0)] } else { [0.0, 1.0] };
                MetricView { name: m.name().into(), title: m.title().into(), description: m.description().into(), mean, std, shown, range }
            })
            .collect();
        let mut curves = Vec::with_capacity(l * h * 2 * TILE_POINTS);
        for c in 0..l {
            let (lo, hi) = seen_offsets(atlas, c);
            for head in 0..h {
                let profile = pooled(atlas.profile_of(c, head).as_slice().expect("standard layout"), lo, hi, TILE_POINTS);
                let prior = rescaled(&pooled(atlas.term_of(c, head).as_slice().expect("standard layout"), lo, hi, TILE_POINTS), 1.0);
                let peak = profile.iter().filter(|v| v.is_finite()).fold(0.0f32, |a, &b| a.max(b));
                curves.extend(profile.iter().map(|&v| if peak > 0.0 { v / peak } else { v }));
                curves.extend(prior);
            }
        }
        let prompts = info.prompts.len();
        AtlasView {
            title: format!(
                "{} ({}): {l} layers × {h} heads, {prompts} prompt{}",
                capped(&info.model, MAX_NAME_CHARS),
                capped(&info.family, MAX_NAME_CHARS),
                if prompts == 1 { "" } else { "s" }
            ),
            subtitle: [format!("offsets up to ±{}", info.offsets.saturating_sub(1))]
                .into_iter()
                .chain(info.notes.iter().cloned())
                .collect::<Vec<_>>()
                .join(" · "),
            rows,
            heads: h,
            kv_head: atlas.kv_head.iter().map(|&k| k as u32).collect(),
            metrics,
            curves,
            tips: tiles().map(|(c, head)| tile_tip(atlas, c, head)).collect(),
            offset_axis: OFFSET_AXIS.into(),
            profile_axis: PROFILE_AXIS.into(),
            prior_label: PRIOR_LABEL.into(),
        }
    }

    /// The metric named `name`, or an error naming field "metric" with the atlas's own.
    pub fn metric(&self, name: &str) -> relattn_core::error::Result<&MetricView> {
        self.metrics.iter().find(|m| m.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.metrics.iter().map(|m| m.name.as_str()).collect();
            relattn_core::error::Error::invalid("metric", format!("'{name}'"), format!("one of this atlas's: {}", names.join(", ")))
        })
    }

    /// The heads of row `c` in the order `order` shows them, each with its group (its K/V head when grouped,
    /// else 0).
    pub fn ordered(&self, c: usize, order: Order, metric: &MetricView) -> Vec<(usize, u32)> {
        let h = self.heads;
        let mut heads: Vec<usize> = (0..h).collect();
        match order {
            Order::Head => {}
            Order::Metric => heads.sort_by(|&a, &b| metric.shown[c * h + b].total_cmp(&metric.shown[c * h + a]).then(a.cmp(&b))),
            Order::KvHead => heads.sort_by_key(|&head| (self.kv_head[c * h + head], head)),
        }
        heads.into_iter().map(|head| (head, if order == Order::KvHead { self.kv_head[c * h + head] } else { 0 })).collect()
    }
}

/// What the grid shows: the metric that colours it, the order of each row's tiles, its ink, and its size
/// (width, and height when fixed: a slide, the command line's --size; else as tall as its rows need).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    pub metric: String,
    pub order: Order,
    pub width: u32,
    #[serde(default)]
    pub height: Option<u32>,
    /// Every text size times this (1 on the page; larger on a slide), within 0.5 … 4.
    #[serde(default = "one")]
    pub text_scale: f32,
}

fn one() -> f32 {
    1.0
}

/// The grid's geometry: where the tiles start, their size and the gaps.
struct Layout {
    top: i32,
    left: i32,
    tile: (i32, i32),
    gap: i32,
    group_gap: i32,
    height: u32,
}

/// Pixels of the title, subtitle and metric line above the tiles, and of the colour bar under them, at text scale 1.
const HEADER: i32 = 84;
const FOOTER: i32 = 46;
/// The row labels' width at text scale 1.
const LABELS: i32 = 150;

fn layout(view: &AtlasView, spec: &GridSpec, order: Order) -> Layout {
    let k = spec.text_scale.clamp(0.5, 4.0);
    let px = |v: i32| (v as f32 * k).round() as i32;
    let (l, h) = (view.rows.len().max(1) as i32, view.heads.max(1) as i32);
    let groups = if order == Order::KvHead { view.kv_head.iter().max().map_or(1, |&m| m as i32 + 1) } else { 1 };
    let (gap, group_gap) = (2, if groups > 1 { 8 } else { 0 });
    let (top, left) = (px(HEADER), px(LABELS));
    let room_w = spec.width as i32 - left - 12 - gap * (h - 1) - group_gap * (groups - 1);
    let tw = (room_w / h).max(6);
    // As tall as 0.62 of the width (12 … 90 pixels); with a fixed height (a slide), the rows fill it, each tile
    // at most square.
    let th = match spec.height {
        None => ((tw as f32 * 0.62) as i32).clamp(12, 90),
        Some(height) => ((height as i32 - top - px(FOOTER)) / l - gap).min(tw).max(6),
    };
    let height = spec.height.unwrap_or((top + l * (th + gap) + px(FOOTER)) as u32);
    Layout { top, left, tile: (tw, th), gap, group_gap, height }
}

/// The grid's height for `spec` (its own when fixed).
pub fn grid_height(view: &AtlasView, spec: &GridSpec) -> u32 {
    layout(view, spec, spec.order).height
}

/// Draws the grid on `root`: the title, the metric and what it measures, the row labels (● a captured row),
/// one tile per head (its colour the metric's in the palette's sequential map, its profile over its faint
/// prior, its head's number), the colour bar; returns where each tile is. Every text is drawn [`printable`].
pub fn draw_grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &AtlasView,
    spec: &GridSpec,
    ink: Ink,
    palette: Palette,
) -> Result<Vec<TileRect>, String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let metric = view.metric(&spec.metric).map_err(|e| e.to_string())?;
    let at = layout(view, spec, spec.order);
    let k = spec.text_scale.clamp(0.5, 4.0);
    let font = |size: f32| ("sans-serif", (size * k).round() as u32).into_font();
    let (width, _) = root.dim_in_pixel();
    // Text at `size` cut to the room from x = `from` to the right edge, less 12 px.
    let fit_from = |text: &str, size: f32, from: i32| printable(&capped(text, ((width as f32 - from as f32 - 12.0) / (size * k * 0.55)).max(8.0) as usize));
    let fit = |text: &str, size: f32| fit_from(text, size, 12);
    root.fill(&ink.background).map_err(err)?;
    let left_top = Pos::new(HPos::Left, VPos::Top);
    root.draw(&Text::new(fit(&view.title, 20.0), (12, 8), font(20.0).style(FontStyle::Bold).color(&ink.text).pos(left_top))).map_err(err)?;
    root.draw(&Text::new(fit(&view.subtitle, 12.0), (12, (36.0 * k) as i32), font(12.0).color(&ink.muted).pos(left_top))).map_err(err)?;
    let line = format!("colour: {} — {}", metric.title, metric.description);
    root.draw(&Text::new(fit(&line, 12.0), (12, (56.0 * k) as i32), font(12.0).color(&ink.text).pos(left_top))).map_err(err)?;
    let lut = Lut::with_palette(Scale::Sequential, palette);
    let range = (metric.range[0], metric.range[1]);
    let (tw, th) = at.tile;
    let mut tiles = Vec::with_capacity(view.rows.len() * view.heads);
    // A row label every `labelled` rows when the rows are lower than its text (many layers on a slide's large text).
    let labelled = ((12.0 * k + 2.0) / (th + at.gap) as f32).ceil().max(1.0) as usize;
    for (c, row) in view.rows.iter().enumerate() {
        let y = at.top + c as i32 * (th + at.gap);
        if c % labelled == 0 {
            let label = format!("{}{}", row.title, if row.captured { " ●" } else { "" });
            let label_style = font(12.0).color(&ink.text).pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(printable(&capped(&label, 24)), (at.left - 8, y + th / 2), label_style)).map_err(err)?;
        }
        let (mut x, mut group) = (at.left, None);
        for (head, g) in view.ordered(c, spec.order, metric) {
            if group.is_some_and(|prev| prev != g) {
                x += at.group_gap;
            }
            group = Some(g);
            let tile = c * view.heads + head;
            let [r, gr, b] = lut.color(metric.shown[tile], range);
            let bg = RGBColor(r, gr, b);
            root.draw(&Rectangle::new([(x, y), (x + tw, y + th)], bg.filled())).map_err(err)?;
            // Dark ink on light tiles, light on dark (relative luminance).
            let light = 0.2126 * r as f32 + 0.7152 * gr as f32 + 0.0722 * b as f32 > 140.0;
            let pen = if light { RGBColor(20, 20, 20) } else { RGBColor(250, 250, 250) };
            let curve = |part: usize| &view.curves[(tile * 2 + part) * TILE_POINTS..(tile * 2 + part + 1) * TILE_POINTS];
            let point =
                |p: usize, v: f32| (x + 1 + (p as i32 * (tw - 2)) / (TILE_POINTS as i32 - 1).max(1), y + th - 2 - (v.clamp(0.0, 1.0) * (th - 4) as f32) as i32);
            for (part, style) in [(1, pen.mix(0.4).stroke_width(1)), (0, pen.stroke_width(if tw >= 40 { 2 } else { 1 }))] {
                let values = curve(part);
                let mut run = Vec::new();
                for (p, &v) in values.iter().enumerate().chain(std::iter::once((TILE_POINTS, &f32::NAN))) {
                    if v.is_finite() {
                        run.push(point(p, v));
                    } else if !run.is_empty() {
                        root.draw(&PathElement::new(std::mem::take(&mut run), style)).map_err(err)?;
                    }
                }
            }
            if tw as f32 >= 22.0 * k && th as f32 >= 14.0 * k {
                root.draw(&Text::new(format!("{head}"), (x + 2, y + 1), font(9.0).color(&pen).pos(left_top))).map_err(err)?;
            }
            tiles.push(TileRect { row: c, head, x, y, w: tw, h: th });
            x += tw + at.gap;
        }
    }
    // The colour bar: the metric's range in 32 steps, its ends labelled.
    let y = at.top + view.rows.len() as i32 * (th + at.gap) + (10.0 * k) as i32;
    let bar = (200.0 * k) as i32;
    for s in 0..32 {
        let v = range.0 + (range.1 - range.0) * (s as f32 + 0.5) / 32.0;
        let [r, g, b] = lut.color(v, range);
        let x = at.left + s * bar / 32;
        root.draw(&Rectangle::new([(x, y), (at.left + (s + 1) * bar / 32, y + (12.0 * k) as i32)], RGBColor(r, g, b).filled())).map_err(err)?;
    }
    let label =
        |text: String, x: i32, anchor: HPos| Text::new(text, (x, y + (6.0 * k) as i32), font(12.0).color(&ink.text).pos(Pos::new(anchor, VPos::Center)));
    root.draw(&label(short(range.0), at.left - 6, HPos::Right)).map_err(err)?;
    let legend = format!("{}   ● captured: a click opens its stages · tile: {} by {} over {}", short(range.1), PROFILE_AXIS, OFFSET_AXIS, PRIOR_LABEL);
    root.draw(&label(fit_from(&legend, 12.0, at.left + bar + 6), at.left + bar + 6, HPos::Left)).map_err(err)?;
    Ok(tiles)
}

/// The grid as SVG text (`spec`'s size; its height [`grid_height`]) and its tiles.
pub fn grid_svg(view: &AtlasView, spec: &GridSpec, ink: Ink, palette: Palette) -> Result<(String, Vec<TileRect>), String> {
    let mut svg = String::new();
    let height = grid_height(view, spec);
    let tiles = {
        let root = SVGBackend::with_string(&mut svg, (spec.width, height)).into_drawing_area();
        let tiles = draw_grid(&root, view, spec, ink, palette)?;
        root.present().map_err(|e| e.to_string())?;
        tiles
    };
    Ok((svg, tiles))
}

/// Writes the grid to an .svg, .png or .html ([`html`]) file, `spec`'s size, in the default colormap (viridis).
#[cfg(not(target_arch = "wasm32"))]
pub fn save_grid(view: &AtlasView, spec: &GridSpec, path: &std::path::Path) -> relattn_core::error::Result<()> {
    let file_err = |reason: String| relattn_core::error::Error::Write { path: path.display().to_string(), reason };
    super::figure::register_fonts();
    let size = (spec.width, grid_height(view, spec));
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw_grid(&root, view, spec, Ink::LIGHT, Palette::default()).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw_grid(&root, view, spec, Ink::LIGHT, Palette::default()).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        Some("html") => std::fs::write(path, html(view, spec).map_err(file_err)?).map_err(|e| file_err(e.to_string())),
        other => Err(relattn_core::error::Error::invalid("out", format!("extension {:?}", other.unwrap_or("")), ".svg, .png or .html")),
    }
}

/// `s` as JSON safe inside an HTML `<script>`: no `</` (nor `<!--`) can end or comment it.
fn script_json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("JSON serializes").replace('<', "\\u003c")
}

/// The inline script of [`html`]: a tooltip per tile from the data's tips, by the tiles' rectangles.
const TOOLTIP_JS: &str = r#"(() => {
  const data = JSON.parse(document.getElementById('atlas-data').textContent);
  const svg = document.querySelector('svg');
  const tip = document.getElementById('tip');
  svg.addEventListener('mousemove', (e) => {
    const box = svg.getBoundingClientRect();
    const [x, y] = [(e.clientX - box.left) * data.width / box.width, (e.clientY - box.top) * data.height / box.height];
    const t = data.tiles.find((r) => x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h);
    if (!t) { tip.hidden = true; return; }
    tip.replaceChildren(...data.tips[t.row * data.heads + t.head].map((line, k) => Object.assign(document.createElement(k ? 'div' : 'b'), { textContent: line })));
    tip.hidden = false;
    tip.style.left = `${Math.min(e.pageX + 14, window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8)}px`;
    tip.style.top = `${e.pageY + 14}px`;
  });
  svg.addEventListener('mouseleave', () => { tip.hidden = true; });
})();"#;

/// The atlas as one self-contained HTML page: the grid's SVG inline, its tiles, tips and metrics as inline
/// JSON, and a small inline script for the tooltips; no external resource (the SVG's namespace attribute,
/// which HTML does not need, is left out).
pub fn html(view: &AtlasView, spec: &GridSpec) -> Result<String, String> {
    let (svg, tiles) = grid_svg(view, spec, Ink::LIGHT, Palette::default())?;
    let svg = svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1);
    let metric = view.metric(&spec.metric).map_err(|e| e.to_string())?;
    let data = serde_json::json!({
        "title": view.title, "heads": view.heads, "width": spec.width, "height": grid_height(view, spec),
        "metric": {"name": metric.name, "title": metric.title, "mean": metric.mean, "std": metric.std},
        "tiles": tiles, "tips": view.tips,
    });
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n\
body {{ font: 14px system-ui, sans-serif; margin: 16px; color: #111; background: #fff; }}\n\
svg {{ max-width: 100%; height: auto; }}\n\
#tip {{ position: absolute; background: #fff; border: 1px solid #888; border-radius: 4px; padding: 6px 8px; font-size: 12px; box-shadow: 0 2px 6px rgba(0,0,0,.2); pointer-events: none; max-width: 420px; }}\n\
</style>\n</head>\n<body>\n{svg}\n<div id=\"tip\" hidden></div>\n<script type=\"application/json\" id=\"atlas-data\">{json}</script>\n<script>\n{TOOLTIP_JS}\n</script>\n</body>\n</html>\n",
        title = escape(&printable(&view.title)),
        json = script_json(&data),
    ))
}

/// Row `c`, head `h`'s profile at full size: the mean weight by offset over the seen offsets (pooled to at most
/// [`CHART_POINTS`]) and the scheme's term rescaled to it, with the tile's tooltip as subtitle.
pub fn head_chart(atlas: &Atlas, c: usize, h: usize) -> relattn_core::error::Result<HeadChart> {
    let (l, heads, n) = atlas.dims();
    relattn_core::error::in_range("atlas row", c as i64, 0..=l - 1, "a row of the atlas")?;
    relattn_core::error::in_range("head", h as i64, 0..=heads - 1, "a head of the atlas")?;
    let (lo, hi) = seen_offsets(atlas, c);
    let bins = (hi + 1 - lo).min(CHART_POINTS);
    let profile = pooled(atlas.profile_of(c, h).as_slice().expect("standard layout"), lo, hi, bins);
    let peak = profile.iter().filter(|v| v.is_finite()).fold(0.0f32, |a, &b| a.max(b));
    let prior = rescaled(&pooled(atlas.term_of(c, h).as_slice().expect("standard layout"), lo, hi, bins), peak);
    // Each bin at the middle of its offsets.
    let offset = |b: usize| (lo as f32 + (b as f32 + 0.5) * (hi + 1 - lo) as f32 / bins as f32 - 0.5) - (n as f32 - 1.0);
    let series = |label: &str, v: &[f32]| Series {
        label: label.into(),
        points: v.iter().enumerate().filter(|(_, y)| y.is_finite()).map(|(b, &y)| [offset(b), y]).collect(),
        markers: false,
        labels: vec![],
    };
    let tip = tile_tip(atlas, c, h);
    Ok(HeadChart {
        title: tip[0].clone(),
        subtitle: tip[1..tip.len() - 1].join(" · "),
        x_axis: OFFSET_AXIS.into(),
        y_axis: PROFILE_AXIS.into(),
        chart: Chart { series: vec![series(PROFILE_AXIS, &profile), series(PRIOR_LABEL, &prior)], equal_axes: false },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::atlas::tests::{atlas_bytes, description};

    fn atlas() -> Atlas {
        Atlas::read(&atlas_bytes(&description(2), |_| {}), "t.atlas.npz", crate::files::MAX_FILE_BYTES).unwrap()
    }

    fn spec(metric: &str, order: Order) -> GridSpec {
        GridSpec { metric: metric.into(), order, width: 900, height: None, text_scale: 1.0 }
    }

    #[test]
    fn pooling_keeps_the_finite_means_and_rescaling_spans_the_peak() {
        let v = [1.0, 3.0, f32::NAN, f32::NAN, 5.0, 7.0];
        let p = pooled(&v, 0, 5, 3);
        assert_eq!((p[0], p[2]), (2.0, 6.0));
        assert!(p[1].is_nan());
        // More points than offsets: read linearly between them, NaN beside a NaN.
        assert_eq!(pooled(&v, 0, 1, 5), [1.0, 1.5, 2.0, 2.5, 3.0]);
        let between = pooled(&v, 1, 4, 7);
        assert_eq!((between[0], between[6]), (3.0, 5.0));
        assert!(between[1].is_nan() && between[5].is_nan());
        assert_eq!(rescaled(&[-2.0, 0.0, f32::NAN, 2.0], 0.5)[..2], [0.0, 0.25]);
        assert_eq!(rescaled(&[0.0, 0.0], 0.5), [0.0, 0.0], "no position term lies at 0");
    }

    #[test]
    fn the_view_has_every_tile_its_metrics_and_tips() {
        let a = atlas();
        let v = AtlasView::of(&a);
        assert_eq!((v.rows.len(), v.heads, v.tips.len(), v.kv_head.as_slice()), (2, 4, 8, [0, 0, 1, 1, 0, 0, 1, 1].as_slice()));
        assert_eq!(v.curves.len(), 8 * 2 * TILE_POINTS);
        assert!(v.rows[1].captured && !v.rows[0].captured);
        assert!(v.rows[0].how_to_capture.contains("relattn.capture(model, layer=0") && v.rows[0].how_to_capture.contains("layers=[0]"));
        let sink = v.metric("first_token").unwrap();
        assert_eq!((sink.title.as_str(), sink.range), ("sink (first token)", [0.0, 1.0]));
        assert!(v.metric("uniform_entropy").is_err(), "the uniform entropy colours no tile");
        assert!(v.tips[5][0].starts_with("decoder layer 1, head 1 · K/V head 0"), "{:?}", v.tips[5]);
        assert!(v.tips[5].iter().any(|t| t == "sink (first token): 0.100 ± 0.0100"), "{:?}", v.tips[5]);
        // Causal: the offsets after 0 are never seen, so the curves span −4 … 0 and end at the profile's peak.
        let first = &v.curves[..TILE_POINTS];
        assert_eq!(first[TILE_POINTS - 1], 1.0);
        assert!(first.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn orders_sort_by_the_metric_or_group_by_kv_head() {
        let mut v = AtlasView::of(&atlas());
        let m = v.metrics[0].clone();
        assert_eq!(v.ordered(0, Order::Head, &m).iter().map(|t| t.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
        // Metric 0's values rise with the head: highest first.
        assert_eq!(v.ordered(0, Order::Metric, &m).iter().map(|t| t.0).collect::<Vec<_>>(), [3, 2, 1, 0]);
        v.kv_head = vec![1, 0, 1, 0, 0, 0, 0, 0];
        assert_eq!(v.ordered(0, Order::KvHead, &m), [(1, 0), (3, 0), (0, 1), (2, 1)]);
    }

    #[test]
    fn the_grid_draws_every_tile_and_the_html_stands_alone() {
        let a = atlas();
        let v = AtlasView::of(&a);
        crate::render::figure::register_fonts();
        let (svg, tiles) = grid_svg(&v, &spec("previous_token", Order::KvHead), Ink::LIGHT, Palette::default()).unwrap();
        assert_eq!(tiles.len(), 8);
        assert!(tiles.windows(2).all(|t| t[0].row < t[1].row || t[0].x < t[1].x));
        for text in ["tiny-llama (llama): 2 layers × 4 heads, 1 prompt", "previous token", "decoder layer 1 ●"] {
            assert!(svg.contains(text), "{text} missing");
        }
        // A slide: the rows fill its height, every tile within it.
        let slide = GridSpec { width: 1600, height: Some(900), ..spec("first_token", Order::Head) };
        let (_, tiles) = grid_svg(&v, &slide, Ink::LIGHT, Palette::default()).unwrap();
        let bottom = tiles.iter().map(|t| t.y + t.h).max().unwrap();
        assert!(grid_height(&v, &slide) == 900 && bottom > 600 && bottom <= 900 - FOOTER, "{bottom}");
        // Rows lower than the slide's large text: a label every few rows, no head numbers (they would overlap).
        let low = GridSpec { width: 1280, height: Some(304), text_scale: 2.0, ..spec("first_token", Order::Head) };
        let (svg, tiles) = grid_svg(&v, &low, Ink::LIGHT, Palette::default()).unwrap();
        assert_eq!(tiles[0].h, 20, "tiles lower than 2 × 14 px, the head numbers' room");
        assert!(svg.contains("\ndecoder layer 0\n") && !svg.contains("decoder layer 1 ●"), "row 1 labelled over row 0's label");
        assert!(!svg.contains("\n3\n"), "a head number taller than its tile");
        let e = grid_svg(&v, &spec("sinkiness", Order::Head), Ink::LIGHT, Palette::default()).unwrap_err();
        assert!(e.contains("'sinkiness'") && e.contains("first_token"), "{e}");
        let page = html(&v, &spec("first_token", Order::Head)).unwrap();
        assert!(!page.contains("http:") && !page.contains("https:") && !page.contains(" src="), "an external resource");
        assert!(page.contains("<svg") && page.contains("id=\"atlas-data\"") && page.contains("captured: in the page, a click"));
        // A token that would end the script is escaped in the data.
        // A long model name is cut in the title.
        let mut long = a.clone();
        long.info.model = "m".repeat(16000);
        assert!(AtlasView::of(&long).title.starts_with(&format!("{}… (llama): 2 layers", "m".repeat(MAX_NAME_CHARS - 1))));
        let mut evil = v.clone();
        evil.tips[0][0] = "</script><script>alert(1)</script>".into();
        assert!(!html(&evil, &spec("first_token", Order::Head)).unwrap().contains("</script><script>alert"));
    }

    #[test]
    fn a_heads_chart_has_both_curves_on_the_seen_offsets() {
        let a = atlas();
        let c = head_chart(&a, 1, 2).unwrap();
        assert_eq!((c.x_axis.as_str(), c.chart.series.len()), (OFFSET_AXIS, 2));
        let xs: Vec<f32> = c.chart.series[0].points.iter().map(|p| p[0]).collect();
        assert_eq!(xs, [-4.0, -3.0, -2.0, -1.0, 0.0]);
        assert!(c.title.starts_with("decoder layer 1, head 2"));
        assert_eq!(head_chart(&a, 2, 0).unwrap_err().field(), "atlas row");
        assert_eq!(head_chart(&a, 0, 4).unwrap_err().field(), "head");
    }
}
