//! Labelled figures: title, formula and shape, axes with tokens or indices, the cells (vectors with their values,
//! or a raster) and a colorbar, on any plotters backend; saved as SVG or PNG by the command line.

use super::colormap::{value_range, Lut, Palette};
use super::raster::rgb_pooled;
use ndarray::ArrayView2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use relattn_core::stage::Scale;
use std::ops::Range;

/// A value as short text for a cell or a tooltip: integers as such, others with 3 significant digits.
pub fn short(v: f32) -> String {
    if !v.is_finite() {
        return if v < 0.0 { "−∞".into() } else { format!("{v}") };
    }
    if v == v.round() && v.abs() < 1e6 {
        return format!("{}", v as i64);
    }
    // Three significant digits, a tie rounded away from zero as the page's tooltips (JavaScript's toFixed and
    // toExponential) round it: ALiBi's slope 2⁻⁵ reads 0.0313 on every slide and in every tooltip.
    let (a, v) = (v.abs(), v as f64);
    if (0.01..1000.0).contains(&a) {
        let digits = (2 - a.log10().floor() as i32).max(0);
        format!("{:.*}", digits as usize, away(v, digits))
    } else {
        let e = (v.abs().log10().floor()) as i32;
        let m = away(v / 10f64.powi(e), 2);
        let (m, e) = if m.abs() >= 10.0 { (m / 10.0, e + 1) } else { (m, e) };
        format!("{m:.2}e{e}")
    }
}

/// The texts of a figure's cell values, row-major (the page's cellTexts, www/js/shared/figure-core.js, writes
/// its own the same way): all with one number of decimals, three significant digits of the largest |value|, so
/// that one small value does not need an exponent where the others do not (a −9.72e-3 among values near 1 made
/// every text too long for its cell, and a slide wrote none); exactly 0 as "0", integers as they are, and
/// [`short`] for each value when the largest is below 0.001 or from 10⁶ (masked −∞ as "−∞").
pub fn cell_texts(values: ArrayView2<f32>) -> Vec<String> {
    let finite = || values.iter().copied().filter(|v| v.is_finite());
    let largest = finite().fold(0f32, |m, v| m.max(v.abs()));
    let integers = finite().all(|v| v == v.round());
    let decimals = match largest {
        _ if largest >= 1e6 => None,
        _ if integers => Some(0),
        _ if largest < 1e-3 => None,
        _ => Some((2 - largest.log10().floor() as i32).max(0)),
    };
    let text = |v: f32| match decimals {
        Some(d) if v.is_finite() && v != 0.0 => {
            let t = format!("{:.*}", d as usize, away(v as f64, d));
            // A value that rounds to zero has no sign.
            let unsigned = t.trim_start_matches('-');
            if unsigned.chars().all(|c| c == '0' || c == '.') {
                unsigned.to_string()
            } else {
                t
            }
        }
        Some(_) if v == 0.0 => "0".into(),
        _ => short(v),
    };
    values.iter().map(|&v| text(v)).collect()
}

/// `x` rounded to `digits` decimals, a tie away from zero (as JavaScript's toFixed rounds it).
fn away(x: f64, digits: i32) -> f64 {
    (x * 10f64.powi(digits)).round() / 10f64.powi(digits)
}

/// What a figure shows.
pub struct Figure<'a> {
    pub matrix: ArrayView2<'a, f32>,
    pub title: String,
    /// Formula and shape, under the title.
    pub subtitle: String,
    pub x_desc: String,
    pub y_desc: String,
    /// Tick labels for columns and rows (tokens); indices when `None`.
    pub x_labels: Option<Vec<String>>,
    pub y_labels: Option<Vec<String>>,
    pub scale: Scale,
    /// Colormaps; `Palette::default()` is the CLI's.
    pub palette: Palette,
    /// Background and text colours; [`Ink::LIGHT`] is the CLI's, the page follows its theme.
    pub ink: Ink,
    /// The colour range, when it is not the matrix's own ([`value_range`]): a zoomed window of a stage keeps
    /// the whole stage's colours.
    pub range: Option<(f32, f32)>,
    /// Every text size and the room around it, times this (1: the figures' own 12 px labels and 20 px title;
    /// larger on a slide for a larger screen).
    pub text_scale: f32,
}

impl<'a> Figure<'a> {
    /// A figure as the command line draws it: indices on the axes, the default colormaps, [`Ink::LIGHT`], the
    /// matrix's own colour range, text at its own size.
    pub fn plain(matrix: ArrayView2<'a, f32>, title: String, subtitle: String, x_desc: &str, y_desc: &str, scale: Scale) -> Figure<'a> {
        Figure {
            matrix,
            title,
            subtitle,
            x_desc: x_desc.into(),
            y_desc: y_desc.into(),
            x_labels: None,
            y_labels: None,
            scale,
            palette: Palette::default(),
            ink: Ink::LIGHT,
            range: None,
            text_scale: 1.0,
        }
    }
}

/// The colours of a figure around its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ink {
    pub background: RGBColor,
    /// Title, ticks and axis labels.
    pub text: RGBColor,
    /// The subtitle.
    pub muted: RGBColor,
}

impl Ink {
    /// Dark text on white.
    pub const LIGHT: Ink = Ink { background: RGBColor(255, 255, 255), text: RGBColor(0, 0, 0), muted: RGBColor(70, 70, 70) };
    /// Light text on the dark theme's panel colour (www/style.css --panel).
    pub const DARK: Ink = Ink { background: RGBColor(32, 32, 39), text: RGBColor(232, 232, 236), muted: RGBColor(168, 168, 179) };
}

/// Whether [`draw`] paints the cells or leaves the plot area for the caller to blit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Cells {
    Paint,
    Leave,
}

/// Width of the colorbar and its tick labels, in pixels (the rest of the figure's width is the chart's).
const COLORBAR_WIDTH: u32 = 84;

/// The smallest cell (width, height in pixels) that gets its value written in it; the page's figures
/// (www/js/page/figures.js `VALUE_CELL`) use the same.
pub const VALUE_CELL: (i32, i32) = (26, 14);

/// What ends every row label: the gap between it and the y axis's line.
const Y_LABEL_GAP: &str = "\u{a0}\u{a0}";

/// Most cells drawn as vector rectangles; larger matrices are painted as one image.
pub const MAX_VECTOR_CELLS: usize = 64 * 64;
/// Largest matrix side that gets its values written in the cells.
const MAX_TEXT_SIDE: usize = 16;

/// Most characters of any text drawn (a title, a subtitle, an axis title, a legend): the rest is cut with "…"
/// by [`printable`] before anything is measured, so fitting a text measures at most this many characters.
pub const MAX_TEXT_CHARS: usize = 1024;
/// Most characters of a heatmap's tick label (a token): the tooltip has the whole token.
pub const MAX_LABEL_CHARS: usize = 64;
/// Largest share of a heatmap's width its row labels may take; longer ones are cut with "…".
const ROW_LABEL_SHARE: f32 = 0.25;

/// `s` in at most `max` characters, the last of them "…" when it had more (linear in `max`, whatever `s`'s
/// length).
pub fn capped(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) => format!("{}…", s.chars().take(max.saturating_sub(1)).collect::<String>()),
    }
}

/// `s` as drawn: at most [`MAX_TEXT_CHARS`] characters ([`capped`]), every control character (C0, DEL, C1)
/// replaced by a visible stand-in: U+2400 + c for C0 ("␁"), "␡" for DEL, U+FFFD for C1 and for the
/// bidirectional controls (U+200E, U+200F, U+061C, U+202A–U+202E, U+2066–U+2069), which would reorder the
/// text around them (a right-to-left override shows a token reversed). XML 1.0 has no way to write C0
/// controls other than tab and line breaks, so an SVG holding one is invalid; and none of them draws as
/// anything on a canvas or bitmap.
pub fn printable(s: &str) -> String {
    capped(s, MAX_TEXT_CHARS)
        .chars()
        .map(|c| match c as u32 {
            0..=0x1f => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            0x7f => '\u{2421}',
            0x200e | 0x200f | 0x061c | 0x202a..=0x202e | 0x2066..=0x2069 => '\u{fffd}',
            _ if c.is_control() => '\u{fffd}',
            _ => c,
        })
        .collect()
}

/// The longest start of `t` that, followed by "…", is at most `room` pixels wide (`width` measures), of
/// `min` characters at least; `t` itself when it fits. Found by bisection: about log₂ of `t`'s length
/// measurements, each of at most its length.
fn cut_to(t: &str, room: u32, min: usize, width: impl Fn(&str) -> u32) -> String {
    if width(t) <= room {
        return t.to_string();
    }
    // ends[k]: the byte end of the first k characters.
    let ends: Vec<usize> = t.char_indices().map(|(i, _)| i).chain(std::iter::once(t.len())).collect();
    let cut = |k: usize| format!("{}…", t[..ends[k]].trim_end());
    let (mut lo, mut hi) = (min.min(ends.len() - 1), ends.len() - 1); // lo: shown whatever; answer in lo..hi
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if width(&cut(mid)) <= room {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo + 1 < ends.len() - 1 && width(&cut(lo + 1)) <= room {
        lo += 1;
    }
    cut(lo)
}

/// Draws `fig` on `root`; returns the plot area's pixel ranges (x, y) in backend coordinates. Every text
/// (title, subtitle, axis titles, labels) is drawn [`printable`].
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure, cells: Cells) -> Result<(Range<i32>, Range<i32>), String> {
    let printable_all = |l: &Option<Vec<String>>| l.as_ref().map(|l| l.iter().map(|t| printable(&capped(t, MAX_LABEL_CHARS))).collect::<Vec<_>>());
    let fig = &Figure {
        matrix: fig.matrix,
        title: printable(&fig.title),
        subtitle: printable(&fig.subtitle),
        x_desc: printable(&fig.x_desc),
        y_desc: printable(&fig.y_desc),
        x_labels: printable_all(&fig.x_labels),
        y_labels: printable_all(&fig.y_labels),
        scale: fig.scale,
        palette: fig.palette,
        ink: fig.ink,
        range: fig.range,
        text_scale: fig.text_scale,
    };
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    // A size of the figure's own (text, or the room around it) at its text scale.
    let k = fig.text_scale.clamp(0.5, 8.0);
    let px = |size: u32| (size as f32 * k).round() as u32;
    let (rows, cols) = fig.matrix.dim();
    let range = fig.range.unwrap_or_else(|| value_range(fig.matrix, fig.scale));
    let lut = Lut::with_palette(fig.scale, fig.palette);
    let ink = fig.ink;
    root.fill(&ink.background).map_err(err)?;
    // No title and no subtitle: a slide states them above the figure.
    let body = if fig.title.is_empty() && fig.subtitle.is_empty() { root.clone() } else { header(root, &fig.title, &fig.subtitle, ink, k)? };
    let (w, _) = body.dim_in_pixel();
    let (main, bar) = body.split_horizontally(w.saturating_sub(px(COLORBAR_WIDTH)));

    let label = |labels: &Option<Vec<String>>, i: i32| match labels {
        Some(l) => l.get(i as usize).cloned().unwrap_or_default(),
        None => i.to_string(),
    };
    // Room for the longest row label (tokens can be long) beside the axis title.
    // Labels are measured in the figure's own font (not counted in characters), so none overlaps its
    // neighbour or the axis title.
    let label_font = ("sans-serif", px(12)).into_font();
    let label_style = TextStyle::from(label_font.clone());
    let text_w = |t: &str| main.estimate_text_size(t, &label_style).map_or(7 * t.chars().count() as u32, |(w, _)| w);
    // Row labels take at most a share of the width (an 80-character token squeezed the cells to nothing).
    let row_room = (w as f32 * ROW_LABEL_SHARE) as u32;
    let y_labels = fig.y_labels.as_ref().map(|l| l.iter().map(|t| cut_to(t, row_room, 1, text_w)).collect::<Vec<_>>());
    let widest = |labels: &Option<Vec<String>>, count: usize| match labels {
        Some(l) => l.iter().map(|t| text_w(&format!("{t}{Y_LABEL_GAP}"))).max().unwrap_or(0),
        None => text_w(&format!("{}{Y_LABEL_GAP}", count.saturating_sub(1))),
    };
    // The chart's axes in half cells (integer coordinates: plotters formats those), columns 0..2·cols and rows
    // 0..2·rows, row 0 at the top: cell (i, j) spans (2j, 2(rows − 1 − i)) to 2 more each way. Ticks at `x_keys`
    // and `y_keys` alone: the room their labels take does not depend on them, so a first chart without any
    // measures the plot for the second's.
    let y_label_room = (px(36) + widest(&y_labels, rows)).max(px(56));
    let chart_with = |x_keys: Vec<i32>, y_keys: Vec<i32>| {
        ChartBuilder::on(&main)
            .margin(px(8))
            .x_label_area_size(px(40))
            .y_label_area_size(y_label_room)
            .build_cartesian_2d((0..2 * cols as i32).with_key_points(x_keys), (0..2 * rows as i32).with_key_points(y_keys))
    };
    // Every `step`-th row and column is labelled, a 1-2-5 step that leaves each label room (12 px text:
    // 18 px a row; a column: its widest label, measured, and 6 px between); tokens are cut to that room with
    // an ellipsis (two characters at least: the tooltip has the whole token), never overlapping.
    let (plot_w, plot_h) = chart_with(Vec::new(), Vec::new()).map_err(err)?.plotting_area().dim_in_pixel();
    let (x_first, x_step, x_shown) = column_labels(fig.x_labels.as_deref(), cols, plot_w, &text_w);
    let y_step = tick_step(rows, plot_h as usize / px(18) as usize);
    // Ticks at the centres of the labelled rows and columns only: no empty label is drawn (an SVG held ~1000
    // empty <text> elements, one per unlabelled row and column).
    let centre = |k: usize| 2 * k as i32 + 1;
    let x_keys = (x_first..cols).step_by(x_step).map(centre).collect();
    let y_keys = (0..rows).step_by(y_step).map(|i| centre(rows - 1 - i)).collect();
    let mut chart = chart_with(x_keys, y_keys).map_err(err)?;
    let x_fmt = |v: &i32| x_shown.get((*v as usize / 2).saturating_sub(x_first) / x_step).cloned().unwrap_or_default();
    // Row labels end at the axis (no tick marks): two no-break spaces keep them off its line (SVG keeps them
    // too, where it would collapse plain spaces).
    let y_fmt = |v: &i32| format!("{}{Y_LABEL_GAP}", label(&y_labels, rows as i32 - 1 - v / 2));
    chart
        .configure_mesh()
        .disable_mesh()
        // No tick marks (thousands of them would merge into a bar).
        .set_all_tick_mark_size(0)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(&fig.x_desc)
        .y_desc(&fig.y_desc)
        .label_style(label_font.clone().color(&ink.text))
        .axis_desc_style(("sans-serif", px(12)).into_font().color(&ink.text))
        .axis_style(ink.text)
        .draw()
        .map_err(err)?;
    let (xs, ys) = chart.plotting_area().get_pixel_range();

    if cells == Cells::Paint {
        if rows * cols <= MAX_VECTOR_CELLS {
            let rect = |i: usize, j: usize, c: [u8; 3]| {
                let (x, y) = (2 * j as i32, 2 * (rows - 1 - i) as i32);
                Rectangle::new([(x, y), (x + 2, y + 2)], RGBColor(c[0], c[1], c[2]).filled())
            };
            chart.draw_series(fig.matrix.indexed_iter().map(|((i, j), &v)| rect(i, j, lut.color(v, range)))).map_err(err)?;
        } else {
            let (w, h) = ((xs.end - xs.start) as usize, (ys.end - ys.start) as usize);
            let buf = rgb_pooled(fig.matrix, fig.scale, range, &lut, w, h);
            let img = BitMapElement::with_owned_buffer((xs.start, ys.start), (w as u32, h as u32), buf).ok_or("bitmap size")?;
            root.draw(&img).map_err(err)?;
        }
        let (cell_w, cell_h) = ((xs.end - xs.start) / cols as i32, (ys.end - ys.start) / rows as i32);
        if rows <= MAX_TEXT_SIDE && cols <= MAX_TEXT_SIDE && cell_w >= VALUE_CELL.0 && cell_h >= VALUE_CELL.1 {
            let texts = cell_texts(fig.matrix);
            // As large as the cell takes its longest text (about 0.6 em a character), as the page sizes them.
            let longest = texts.iter().map(|t| t.chars().count()).max().unwrap_or(1) as f32;
            let size = ((cell_h as f32 * 0.45).min(cell_w as f32 * 0.85 / (0.6 * longest + 0.2)).floor() as i32).min((16.0 * k).round() as i32);
            if size >= 8 {
                chart
                    .draw_series(fig.matrix.indexed_iter().zip(texts).map(|(((i, j), &v), text)| {
                        let c = lut.color(v, range);
                        let dark = 0.299 * c[0] as f32 + 0.587 * c[1] as f32 + 0.114 * c[2] as f32 > 140.0;
                        let style = ("sans-serif", size).into_font().color(if dark { &BLACK } else { &WHITE }).pos(Pos::new(HPos::Center, VPos::Center));
                        Text::new(text, (centre(j), centre(rows - 1 - i)), style)
                    }))
                    .map_err(err)?;
            }
        }
    }
    draw_colorbar(&bar, range, &lut, ink, k).map_err(err)?;
    Ok((xs, ys))
}

/// Draws a figure's title and subtitle across the whole width of `root` and returns the area below them.
/// A title too wide for its line at 20 px shrinks (to 12 px), then is cut with an ellipsis: never clipped at
/// the edges. The subtitle (formula, shape, a zoomed window's rows and columns) takes as many lines as the
/// width needs (three at most, the last cut with an ellipsis), never clipped mid-word at the figure's edge.
///
/// Sizes are times `scale` (the figure's text scale).
pub(super) fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    ink: Ink,
    scale: f32,
) -> Result<DrawingArea<DB, Shift>, String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let title_room = root.dim_in_pixel().0.saturating_sub(16);
    // fit_title picks 12 … 20 px; drawn times the scale.
    let scaled = |px: u32| (px as f32 * scale).round() as u32;
    let title_width = |t: &str, px: u32| root.estimate_text_size(t, &("sans-serif", scaled(px)).into_font().color(&ink.text)).map_or(0, |(w, _)| w);
    let (title, px) = fit_title(title, title_room, title_width);
    let body = root.titled(&title, ("sans-serif", scaled(px)).into_font().color(&ink.text)).map_err(err)?;
    let sub_font = ("sans-serif", scaled(14)).into_font().color(&ink.muted);
    let room = body.dim_in_pixel().0.saturating_sub(24);
    let width = |t: &str| body.estimate_text_size(t, &sub_font).map_or(0, |(w, _)| w);
    let lines = wrap_to(subtitle, room, 3, width);
    let line = scaled(22);
    let (sub, body) = body.split_vertically(line * lines.len().max(1) as u32);
    for (k, text) in lines.iter().enumerate() {
        sub.draw_text(text, &sub_font, (12, 2 + (line as usize * k) as i32)).map_err(err)?;
    }
    Ok(body)
}

/// The label step for `count` indices with room for `room` labels: 1, 2, 5, 10, 20, 50, … the smallest that fits.
fn tick_step(count: usize, room: usize) -> usize {
    let need = count.div_ceil(room.max(1)).max(1);
    let mut p = 1;
    loop {
        if let Some(m) = [1, 2, 5].into_iter().find(|m| m * p >= need) {
            return m * p;
        }
        p *= 10;
    }
}

/// A vertical colorbar with value ticks, its text and room times `scale`.
fn draw_colorbar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (lo, hi): (f32, f32),
    lut: &Lut,
    ink: Ink,
    scale: f32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let px = |size: u32| (size as f32 * scale).round() as u32;
    let mut chart = ChartBuilder::on(area)
        .margin_top(px(8))
        .margin_bottom(px(48))
        .margin_right(4)
        .y_label_area_size(px(50))
        .build_cartesian_2d(0f64..1f64, lo as f64..hi as f64)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(7)
        // Ticks are sums of steps: snap float residue such as −5.55e−17 to the 0 it stands for.
        .y_label_formatter(&|v| short(if v.abs() < (hi - lo) as f64 * 1e-6 { 0.0 } else { *v as f32 }))
        .label_style(("sans-serif", px(12)).into_font().color(&ink.text))
        .axis_style(ink.text)
        .draw()?;
    let steps = 128;
    let step = (hi - lo) as f64 / steps as f64;
    chart.draw_series((0..steps).map(|s| {
        let v0 = lo as f64 + s as f64 * step;
        let c = lut.color((v0 + step / 2.0) as f32, (lo, hi));
        Rectangle::new([(0.0, v0), (1.0, v0 + step)], RGBColor(c[0], c[1], c[2]).filled())
    }))?;
    Ok(())
}

/// Bytes [`save`] needs beyond the matrix, at most: a width × height RGB bitmap and its encoding (PNG), or
/// the SVG text, which is smaller.
#[cfg(not(target_arch = "wasm32"))]
pub fn figure_bytes((w, h): (u32, u32)) -> u64 {
    8 * w as u64 * h as u64
}

/// Writes a figure to an .svg or .png file of `size` pixels.
#[cfg(not(target_arch = "wasm32"))]
pub fn save(fig: &Figure, path: &std::path::Path, size: (u32, u32)) -> relattn_core::error::Result<()> {
    let file_err = |reason: String| relattn_core::error::Error::Write { path: path.display().to_string(), reason };
    register_fonts();
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw(&root, fig, Cells::Paint).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw(&root, fig, Cells::Paint).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        other => Err(relattn_core::error::Error::invalid("out", format!("extension {:?}", other.unwrap_or("")), ".svg or .png")),
    }
}

/// The column labels of a figure `plot_w` pixels wide: the first labelled column, every `step`-th of the `cols`
/// columns from it (a 1-2-5 step leaving each label its measured width, `px`, and 6 px between), and those labels
/// — indices as they are, tokens cut with an ellipsis to their slot (two characters and the ellipsis at least
/// decide the step; the tooltip has the whole token; [`cut_to`], in time linear in the token's length) — so that
/// no two overlap. Labels that count up by one (distances −2047 … 2047) are labelled at the multiples of the
/// step, 0 among them, not from the first column (−2047, −1847, …).
fn column_labels(tokens: Option<&[String]>, cols: usize, plot_w: u32, px: &impl Fn(&str) -> u32) -> (usize, usize, Vec<String>) {
    let cut = |t: &str, chars: usize| format!("{}…", t.chars().take(chars).collect::<String>());
    let counting = tokens.and_then(|l| {
        let first: i64 = l.first()?.parse().ok()?;
        l.iter().enumerate().all(|(c, t)| t.parse::<i64>().ok() == Some(first + c as i64)).then_some(first)
    });
    let need = match tokens {
        // Numbers counting up by one: the widest has the most digits, at an end (digits are as wide as each
        // other). Measuring 4095 distances one by one kept the page's main thread 0.6 s (#51 item 5).
        Some(l) if counting.is_some() => [l.first(), l.last()].into_iter().flatten().map(|t| px(t)).max().unwrap_or(0),
        Some(l) => l.iter().map(|t| if t.chars().count() > 2 { px(t).min(px(&cut(t, 2))) } else { px(t) }).max().unwrap_or(0),
        None => px(&cols.saturating_sub(1).to_string()),
    };
    let step = tick_step(cols, plot_w as usize / (need as usize + 6).max(1));
    let slot = (plot_w as usize * step / cols.max(1)).saturating_sub(6) as u32;
    let first = counting.map_or(0, |v| (-v).rem_euclid(step as i64) as usize).min(cols.saturating_sub(1));
    let shown = (first..cols)
        .step_by(step)
        .map(|c| match tokens {
            None => c.to_string(),
            Some(l) => {
                let t = l.get(c).map_or("", String::as_str);
                cut_to(t, slot, 1, px)
            }
        })
        .collect();
    (first, step, shown)
}

/// `text` in at most `max_lines` lines of at most `room` pixels (`width` measures a line), breaking between
/// words; what does not fit ends the last line with "…" ([`cut_to`]). Each line is measured as it grows, at
/// most as wide as `room`; callers pass texts of at most [`MAX_TEXT_CHARS`] ([`printable`]).
fn wrap_to(text: &str, room: u32, max_lines: usize, width: impl Fn(&str) -> u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut words = text.split(' ').peekable();
    while let Some(word) = words.next() {
        let full = lines.len() >= max_lines;
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}")) <= room => {
                line.push(' ');
                line.push_str(word);
            }
            Some(line) if full => {
                // Out of lines: cut the last one to fit with an ellipsis.
                let rest: Vec<&str> = std::iter::once(word).chain(words.by_ref()).collect();
                let cut = cut_to(&format!("{line} {}", rest.join(" ")), room, 0, &width);
                *line = if cut.ends_with('…') { cut } else { format!("{}…", cut.trim_end()) };
                break;
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The title and its size in pixels: at 20 px when it fits `room`, else at the largest size down to 12 px that
/// fits, else at 12 px cut with an ellipsis ([`wrap_to`]); `width(text, px)` measures.
fn fit_title(title: &str, room: u32, width: impl Fn(&str, u32) -> u32) -> (String, u32) {
    match (12..=20).rev().find(|&px| width(title, px) <= room) {
        Some(px) => (title.to_string(), px),
        None => (wrap_to(title, room, 1, |t| width(t, 12)).into_iter().next().unwrap_or_default(), 12),
    }
}

/// Native text needs a font: DejaVu Sans, embedded.
#[cfg(not(target_arch = "wasm32"))]
pub(super) fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_labels_never_overlap_and_cut_words_with_an_ellipsis() {
        // A width like a proportional font's: 'w' and 'm' wide, 'i' narrow.
        let px = |t: &str| {
            t.chars()
                .map(|c| match c {
                    'w' | 'm' => 10,
                    'i' | 'l' => 3,
                    '…' => 9,
                    _ => 7,
                })
                .sum::<u32>()
        };
        let words: Vec<String> = "the wombat swims while mice swim in willow woods".split(' ').map(String::from).collect();
        for plot_w in [60, 120, 250, 400, 900] {
            let (_, step, shown) = column_labels(Some(&words), words.len(), plot_w, &px);
            let slot = plot_w as usize * step / words.len();
            for (k, t) in shown.iter().enumerate() {
                assert!(px(t) as usize <= slot.saturating_sub(6) || t.chars().count() <= 2, "{plot_w} px: '{t}' in a slot of {slot}");
                let whole = &words[k * step];
                assert!(t == whole || (t.ends_with('…') && whole.starts_with(t.trim_end_matches('…'))), "{t} of {whole}");
            }
        }
        // Wide enough: every word whole.
        let (_, step, shown) = column_labels(Some(&words), words.len(), 900, &px);
        assert_eq!((step, shown), (1, words.clone()));
        // Indices keep their digits.
        assert_eq!(column_labels(None, 12, 600, &px).2[..3], ["0", "1", "2"]);
        // Distances −2047 … 0 (ALiBi's bias by head at n 2048): round labels, 0 among them (#51 item 9).
        let distances: Vec<String> = (-2047..=0).map(|d: i64| d.to_string()).collect();
        let (first, step, shown) = column_labels(Some(&distances), distances.len(), 900, &px);
        assert!(step > 1 && shown.iter().all(|t| t.parse::<i64>().unwrap() % step as i64 == 0), "{step}: {shown:?}");
        assert_eq!((shown.last().map(String::as_str), &distances[first]), (Some("0"), &shown[0]));
    }

    #[test]
    fn subtitles_wrap_between_words_and_end_with_an_ellipsis() {
        let width = |t: &str| 10 * t.chars().count() as u32; // 10 px a character
        assert_eq!(wrap_to("a bb ccc", 100, 2, width), ["a bb ccc"]);
        assert_eq!(wrap_to("aaaa bbbb cccc", 90, 2, width), ["aaaa bbbb", "cccc"]);
        assert_eq!(wrap_to("aaaa bbbb cccc dddd eeee", 90, 2, width), ["aaaa bbbb", "cccc ddd…"]);
    }

    #[test]
    fn titles_shrink_then_end_with_an_ellipsis() {
        let width = |t: &str, px: u32| px * t.chars().count() as u32 / 2; // half the size a character
        assert_eq!(fit_title("Attention weights", 200, width), ("Attention weights".into(), 20));
        let long = "Rotation angles φ — LlamaForCausalLM, decoder layer 1";
        assert_eq!(fit_title(long, 400, width), (long.into(), 15));
        let (cut, px) = fit_title(long, 200, width);
        assert!(px == 12 && cut.ends_with('…') && width(&cut, 12) <= 200, "{cut}");
    }

    /// At n = 4096 the axes carry a few round indices (multiples of one 1-2-5 step), not merged labels.
    #[test]
    fn a_large_figure_has_round_readable_ticks() {
        let m = ndarray::Array2::<f32>::zeros((4096, 4096));
        let fig = Figure::plain(m.view(), "t".into(), String::new(), "key j", "query i", Scale::Sequential);
        register_fonts();
        let mut svg = String::new();
        {
            let root = plotters::prelude::SVGBackend::with_string(&mut svg, (470, 430)).into_drawing_area();
            draw(&root, &fig, Cells::Leave).unwrap();
        }
        let ticks: Vec<u64> = svg.split("<text").filter_map(|t| t.split('>').nth(1)?.split('<').next()?.trim().parse().ok()).collect();
        assert!(ticks.len() >= 6 && ticks.len() <= 40, "{} ticks: {ticks:?}", ticks.len());
        // The axes' indices (the colorbar of this constant matrix adds its 0 and 1).
        assert!(ticks.iter().all(|t| t % 500 == 0 || *t == 1), "{ticks:?}");
    }

    /// Every text of a figure holds some (#51 item 12: an SVG held ~1000 empty <text>, one per unlabelled row and
    /// column), and a one-row figure has its row's label (#51 item 8: T5's table of one row had none).
    #[test]
    fn every_text_drawn_holds_text_and_a_single_row_is_labelled() {
        register_fonts();
        for (rows, cols) in [(200, 300), (1, 32)] {
            let m = ndarray::Array2::<f32>::zeros((rows, cols));
            let mut fig = Figure::plain(m.view(), "t".into(), "s".into(), "bucket r", "head h", Scale::Diverging);
            fig.y_labels = Some((0..rows).map(|i| format!("row {i}")).collect());
            let mut svg = String::new();
            {
                let root = plotters::prelude::SVGBackend::with_string(&mut svg, (940, 540)).into_drawing_area();
                draw(&root, &fig, Cells::Leave).unwrap();
            }
            let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
            assert!(texts.iter().all(|t| !t.is_empty()), "{rows} × {cols}: {} empty of {}", texts.iter().filter(|t| t.is_empty()).count(), texts.len());
            assert!(texts.contains(&"row 0") && texts.contains(&"0") && texts.contains(&"bucket r"), "{texts:?}");
        }
    }

    #[test]
    fn tick_steps_are_round_and_fit() {
        assert_eq!(tick_step(12, 24), 1);
        assert_eq!(tick_step(100, 24), 5);
        assert_eq!(tick_step(4096, 16), 500);
        assert_eq!(tick_step(4096, 0), 5000);
        for (count, room) in [(1, 1), (37, 7), (4096, 20), (2048, 13)] {
            let s = tick_step(count, room);
            assert!(count.div_ceil(s) <= room.max(1), "{count} in {room}: step {s}");
        }
    }

    /// Fitting a text measures O(its length) characters in all, not O(length²): a 64,000-character token
    /// or subtitle, measured by a width that counts what it is given.
    #[test]
    fn texts_are_fitted_in_linear_time() {
        let measured = std::cell::Cell::new(0usize);
        let px = |t: &str| {
            let n = t.chars().count();
            measured.set(measured.get() + n);
            7 * n as u32
        };
        let long = "w".repeat(64_000);
        let (_, _, shown) = column_labels(Some(&[long.clone(), "a".into()]), 2, 400, &px);
        assert!(shown[0].ends_with('…') && px(&shown[0]) <= 200, "{}", shown[0]);
        assert!(measured.get() <= 64_000 * 40, "{} characters measured", measured.get());
        measured.set(0);
        let lines = wrap_to(&format!("a b {long}"), 400, 1, px);
        assert!(lines[0].ends_with('…') && px(&lines[0]) <= 400, "{lines:?}");
        assert!(measured.get() <= 64_000 * 40, "{} characters measured", measured.get());
        measured.set(0);
        let lines = wrap_to(&"ab ".repeat(20_000), 400, 3, px);
        assert_eq!(lines.len(), 3);
        assert!(measured.get() <= 60_000 * 40, "{} characters measured", measured.get());
        assert_eq!(cut_to("abcdef", 7 * 4, 1, |t: &str| 7 * t.chars().count() as u32), "abc…");
        assert_eq!(cut_to("abcdef", 0, 1, |t: &str| 7 * t.chars().count() as u32), "a…");
    }

    /// What is drawn of a text is capped, and a long row label leaves the cells most of the width.
    #[test]
    fn long_tokens_are_cut_and_leave_the_cells_their_room() {
        register_fonts();
        let m = ndarray::Array2::<f32>::zeros((2, 2));
        let svg_of = |token: String| {
            let mut fig = Figure::plain(m.view(), token.clone(), token.clone(), "key j", "query i", Scale::Sequential);
            (fig.x_labels, fig.y_labels) = (Some(vec![token.clone(), "b".into()]), Some(vec![token, "b".into()]));
            let mut svg = String::new();
            let start = std::time::Instant::now();
            let (xs, _) = {
                let root = plotters::prelude::SVGBackend::with_string(&mut svg, (900, 760)).into_drawing_area();
                draw(&root, &fig, Cells::Leave).unwrap()
            };
            (svg, xs, start.elapsed())
        };
        let (svg, _, took) = svg_of("x".repeat(64_000));
        assert!(took.as_secs_f64() < 5.0, "{took:?}");
        assert!(!svg.contains(&"x".repeat(MAX_TEXT_CHARS + 1)), "more than {MAX_TEXT_CHARS} characters drawn");
        let (_, xs, _) = svg_of("y".repeat(80));
        assert!(xs.end - xs.start >= 400, "the cells got {} px of 900", xs.end - xs.start);
    }

    #[test]
    fn bidirectional_controls_get_stand_ins() {
        for c in ['\u{202e}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}'] {
            assert_eq!(printable(&format!("ab{c}cd")), "ab\u{fffd}cd", "{:x}", c as u32);
        }
        assert_eq!(printable("a\u{1}b"), "a\u{2401}b");
        assert_eq!(printable(&"é".repeat(MAX_TEXT_CHARS + 5)).chars().count(), MAX_TEXT_CHARS);
    }

    /// One value that needs an exponent on its own (−9.72e-3) takes the others' decimals: no text is longer for
    /// it (#51 item 7).
    #[test]
    fn cell_values_share_their_decimals() {
        let texts = |v: &[f32]| cell_texts(ndarray::ArrayView2::from_shape((1, v.len()), v).unwrap());
        assert_eq!(texts(&[0.5, -9.72e-3, 1.25, 0.0]), ["0.50", "-0.01", "1.25", "0"]);
        assert_eq!(texts(&[12.5, -0.004]), ["12.5", "0.0"]);
        assert_eq!(texts(&[-9.72e-3, 3.0e-3]), ["-0.00972", "0.00300"]);
        assert_eq!(texts(&[3.0, -7.0, f32::NEG_INFINITY]), ["3", "-7", "−∞"]);
        assert_eq!(texts(&[2.5e-4, 0.0]), ["2.50e-4", "0"]);
        assert_eq!(texts(&[2.5e7, 1.5]), ["2.50e7", "1.50"]);
    }

    /// A 4 × 4 figure whose values need an exponent alone writes all sixteen, each inside its cell.
    #[test]
    fn a_small_value_leaves_every_value_written() {
        register_fonts();
        let mut m = ndarray::Array2::<f32>::from_shape_fn((4, 4), |(i, j)| 0.25 * (i as f32 - j as f32));
        m[[1, 2]] = -9.72e-3;
        let fig = Figure::plain(m.view(), "t".into(), String::new(), "key j", "query i", Scale::Diverging);
        let mut svg = String::new();
        {
            let root = plotters::prelude::SVGBackend::with_string(&mut svg, (470, 430)).into_drawing_area();
            draw(&root, &fig, Cells::Paint).unwrap();
        }
        let written: Vec<&str> = svg.split("<text").filter_map(|t| Some(t.split('>').nth(1)?.split('<').next()?.trim())).collect();
        for t in cell_texts(m.view()) {
            assert!(written.contains(&t.as_str()), "{t} not written: {written:?}");
        }
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(44.0), "44");
        assert_eq!(short(0.1234), "0.123");
        assert_eq!(short(12.345), "12.3");
        assert_eq!(short(f32::NEG_INFINITY), "−∞");
        // Ties away from zero, as the page's fmt (JavaScript) says them.
        assert_eq!((short(0.03125), short(-0.03125)), ("0.0313".into(), "-0.0313".into()));
        assert_eq!(
            (short(3.90625e-3), short(-9.72e-3), short(12345.6), short(9.999e-3)),
            ("3.91e-3".into(), "-9.72e-3".into(), "1.23e4".into(), "1.00e-2".into())
        );
    }
}
