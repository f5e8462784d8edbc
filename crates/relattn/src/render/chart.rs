//! Curves on axes: the lecture pictures that are not heatmaps (RoPE's kernel against distance, T5's staircase of
//! buckets, ALiBi's slope per head, one pair of q turning), with the figures' title and subtitle, axis labels,
//! a legend and, where a series has them, a label at each point; on any plotters backend (the CLI's SVG and
//! PNG, the page's canvas and SVG exports).

use super::figure::{header, printable, short, Ink};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

/// One curve: its points (x, y) in order, joined by a line; `markers` draws each point; `labels` (empty, or one
/// per point) are written beside the points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Series {
    pub label: String,
    pub points: Vec<[f32; 2]>,
    pub markers: bool,
    #[serde(default)]
    pub labels: Vec<String>,
}

/// The curves of a picture; `equal_axes`: one unit is as long on x as on y (a pair of q turning on its circle).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(export, export_to = "protocol.d.ts"))]
pub struct Chart {
    pub series: Vec<Series>,
    pub equal_axes: bool,
}

/// What a chart figure shows.
pub struct ChartFigure<'a> {
    pub chart: &'a Chart,
    pub title: &'a str,
    /// Formula and options, under the title.
    pub subtitle: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub ink: Ink,
    /// The size of tick labels, axis titles, the legend and point labels, in pixels (12 on the page's figures;
    /// larger on a slide).
    pub text_px: u32,
}

/// The series' colours, in order: Okabe and Ito's palette for colour-blind readers (blue, vermillion, bluish
/// green, reddish purple, orange, sky blue), readable on the light and the dark theme.
pub const SERIES_COLOURS: [RGBColor; 6] =
    [RGBColor(0, 114, 178), RGBColor(213, 94, 0), RGBColor(0, 158, 115), RGBColor(204, 121, 167), RGBColor(230, 159, 0), RGBColor(86, 180, 233)];

/// The ranges (x, y) the points span, each widened by 5 % (and to ±0.5 around a single value), so that no point
/// sits on the frame; with `equal_axes` both become one square around the origin.
fn ranges(chart: &Chart) -> ((f32, f32), (f32, f32)) {
    let points = || chart.series.iter().flat_map(|s| s.points.iter()).filter(|p| p[0].is_finite() && p[1].is_finite());
    let span = |k: usize| {
        let (lo, hi) = points().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), p| (lo.min(p[k]), hi.max(p[k])));
        if lo > hi {
            return (0.0, 1.0);
        }
        let pad = if hi > lo { (hi - lo) * 0.05 } else { 0.5 };
        (lo - pad, hi + pad)
    };
    if chart.equal_axes {
        let r = points().map(|p| p[0].abs().max(p[1].abs())).fold(0.0f32, f32::max).max(1e-6) * 1.1;
        return ((-r, r), (-r, r));
    }
    (span(0), span(1))
}

/// The chart's margins around the plot and its axes' label areas (plotters' ChartBuilder), in pixels.
const MARGIN: u32 = 12;
const MARGIN_RIGHT: u32 = 20;
fn x_label_area(px: u32) -> u32 {
    3 * px + 16
}
fn y_label_area(px: u32) -> u32 {
    6 * px + 16
}

/// The room (width, height) the margins and the axes' labels take around a plot of text `px`.
fn axes_room(px: u32) -> (u32, u32) {
    (MARGIN + MARGIN_RIGHT + y_label_area(px), 2 * MARGIN + x_label_area(px))
}

/// A legend's rows, `LEGEND_ROW` × the text size apart; its text starts `LEGEND_TEXT_X` pixels in, after the line.
const LEGEND_ROW: u32 = 2;
const LEGEND_TEXT_X: u32 = 36;

/// An equal-axes chart in `size`: the side of its square plot, and whether the legend (`legend`: its width and
/// height) goes beside the plot (true) or under it, whichever leaves the larger square.
fn equal_axes_split(size: (u32, u32), px: u32, legend: (u32, u32)) -> (u32, bool) {
    let (room_x, room_y) = axes_room(px);
    let side = |w: u32, h: u32| w.saturating_sub(room_x).min(h.saturating_sub(room_y));
    let beside = side(size.0.saturating_sub(legend.0), size.1);
    let under = side(size.0, size.1.saturating_sub(legend.1));
    if beside >= under {
        (beside, true)
    } else {
        (under, false)
    }
}

/// A box in pixels: left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bounds {
    l: f32,
    t: f32,
    r: f32,
    b: f32,
}

impl Bounds {
    fn overlaps(&self, o: &Bounds) -> bool {
        self.l < o.r && o.l < self.r && self.t < o.b && o.t < self.b
    }

    fn within(&self, o: &Bounds) -> bool {
        self.l >= o.l && self.r <= o.r && self.t >= o.t && self.b <= o.b
    }

    /// Whether the segment from `a` to `b` passes through the box (Liang and Barsky's clipping).
    fn crossed_by(&self, a: (f32, f32), b: (f32, f32)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f32, 1.0f32);
        for (p, q) in [(-dx, a.0 - self.l), (dx, self.r - a.0), (-dy, a.1 - self.t), (dy, self.b - a.1)] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else if p < 0.0 {
                t0 = t0.max(q / p);
            } else {
                t1 = t1.min(q / p);
            }
        }
        t0 <= t1
    }
}

/// A point's markers' radius (plotters' Circle), in pixels.
const DOT_RADIUS: u32 = 4;

/// A point (or a size) in pixels.
type Pixel = (f32, f32);

fn pixel((x, y): (i32, i32)) -> Pixel {
    (x as f32, y as f32)
}

/// Where the point labels go, in pixels: each label (its point and its width and height) beside its point, in
/// one of eight directions at one of two distances, chosen in this order: its box inside `room` (the plot and
/// the margins above and right of it), covering no dot and no label placed before it; then nearer its own point
/// than any other dot; then crossing the fewest lines (`segments`); then nearest, in the direction pointing
/// away from the room's centre first.
fn place_labels(room: Bounds, dots: &[Pixel], segments: &[[Pixel; 2]], labels: &[(Pixel, Pixel)]) -> Vec<Bounds> {
    let centre = ((room.l + room.r) / 2.0, (room.t + room.b) / 2.0);
    let r = DOT_RADIUS as f32 + 1.0;
    let dot = |&(x, y): &(f32, f32)| Bounds { l: x - r, t: y - r, r: x + r, b: y + r };
    let boxes: Vec<Bounds> = dots.iter().map(dot).collect();
    // How far a box is from a point.
    let off = |b: &Bounds, &(x, y): &(f32, f32)| (b.l - x).max(x - b.r).max(0.0).hypot((b.t - y).max(y - b.b).max(0.0));
    let mut placed: Vec<Bounds> = Vec::new();
    for &((x, y), (w, h)) in labels {
        let away = (y - centre.1).atan2(x - centre.0);
        let mut best = (f32::INFINITY, Bounds { l: x, t: y, r: x + w, b: y + h });
        for ring in 0..2 {
            let gap = r + 2.0 + ring as f32 * h * 0.75;
            for (sx, sy) in [(1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1)] {
                let (sx, sy) = (sx as f32, sy as f32);
                let g = if sx != 0.0 && sy != 0.0 { gap * std::f32::consts::FRAC_1_SQRT_2 } else { gap };
                let (cx, cy) = (x + sx * (w / 2.0 + g), y + sy * (h / 2.0 + g));
                let b = Bounds { l: cx - w / 2.0, t: cy - h / 2.0, r: cx + w / 2.0, b: cy + h / 2.0 };
                let covers = boxes.iter().chain(&placed).filter(|o| o.overlaps(&b)).count() + usize::from(!b.within(&room));
                let own = off(&b, &(x, y));
                let nearer = dots.iter().filter(|&&d| d != (x, y) && off(&b, &d) < own).count();
                let crossed = segments.iter().filter(|[a, e]| b.crossed_by(*a, *e)).count();
                let turn = (sy.atan2(sx) - away).rem_euclid(std::f32::consts::TAU);
                let turn = turn.min(std::f32::consts::TAU - turn) / std::f32::consts::FRAC_PI_4;
                let cost = 1000.0 * covers as f32 + 100.0 * nearer as f32 + 10.0 * crossed as f32 + turn + 8.0 * ring as f32;
                if cost < best.0 {
                    best = (cost, b);
                }
            }
        }
        placed.push(best.1);
    }
    placed
}

/// Draws `fig` on `root`: title and subtitle as a heatmap figure's (none when both are empty: a slide states
/// them above the figure), then the axes, the curves and the legend.
pub fn draw_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &ChartFigure) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let ink = fig.ink;
    root.fill(&ink.background).map_err(err)?;
    let body = if fig.title.is_empty() && fig.subtitle.is_empty() {
        root.clone()
    } else {
        header(root, &printable(fig.title), &printable(fig.subtitle), ink, fig.text_px as f32 / 12.0)?
    };
    let ((x0, x1), (y0, y1)) = ranges(fig.chart);
    let px = fig.text_px;
    let (w, h) = body.dim_in_pixel();
    let label_font = ("sans-serif", px).into_font().color(&ink.text);
    // Equal axes: the plot is a square (its axes beside it), its legend to its right or under it, whichever
    // leaves the larger square.
    let (area, legend) = if fig.chart.equal_axes {
        let widest = fig.chart.series.iter().map(|s| body.estimate_text_size(&printable(&s.label), &label_font).map_or(0, |(w, _)| w)).max().unwrap_or(0);
        let legend = (widest + LEGEND_TEXT_X + 8, fig.chart.series.len() as u32 * LEGEND_ROW * px + 8);
        let (side, beside) = equal_axes_split((w, h), px, legend);
        let (room_x, room_y) = axes_room(px);
        let (area, rest) = if beside { body.split_horizontally(side + room_x) } else { body.split_vertically(side + room_y) };
        let area = if beside { area.split_vertically(side + room_y).0 } else { area.split_horizontally(side + room_x).0 };
        (area, Some(rest))
    } else {
        (body, None)
    };
    let mut chart = ChartBuilder::on(&area)
        .margin(MARGIN)
        .margin_right(MARGIN_RIGHT)
        .x_label_area_size(x_label_area(px))
        .y_label_area_size(y_label_area(px))
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(ink.muted.mix(0.12))
        .bold_line_style(ink.muted.mix(0.3))
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .x_desc(printable(fig.x_desc))
        .y_desc(printable(fig.y_desc))
        .label_style(label_font.clone())
        .axis_desc_style(label_font.clone())
        .axis_style(ink.text)
        .draw()
        .map_err(err)?;
    for (k, s) in fig.chart.series.iter().enumerate() {
        let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
        let points: Vec<(f32, f32)> = s.points.iter().map(|p| (p[0], p[1])).collect();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(2)))
            .map_err(err)?
            .label(printable(&s.label))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)));
        if s.markers {
            chart.draw_series(points.iter().map(|&p| Circle::new(p, DOT_RADIUS, colour.filled()))).map_err(err)?;
        }
    }
    // The point labels, each beside its point where it covers no dot and no other label (place_labels).
    let dots: Vec<(f32, f32)> =
        fig.chart.series.iter().filter(|s| s.markers).flat_map(|s| &s.points).map(|p| pixel(chart.backend_coord(&(p[0], p[1])))).collect();
    let segments: Vec<[(f32, f32); 2]> =
        fig.chart.series.iter().flat_map(|s| s.points.windows(2).map(|w| [w[0], w[1]].map(|p| pixel(chart.backend_coord(&(p[0], p[1])))))).collect();
    let ((xs, ys), (ax, ay)) = (chart.plotting_area().get_pixel_range(), area.get_pixel_range());
    let room = Bounds { l: xs.start as f32, t: ay.start as f32, r: ax.end as f32, b: ys.end as f32 };
    let mut wanted = Vec::new();
    for s in &fig.chart.series {
        for (p, text) in s.points.iter().zip(&s.labels).filter(|(_, t)| !t.is_empty()) {
            let text = printable(text);
            let (tw, th) = area.estimate_text_size(&text, &label_font).map_err(err)?;
            wanted.push((text, pixel(chart.backend_coord(&(p[0], p[1]))), (tw as f32, th as f32)));
        }
    }
    let placed = place_labels(room, &dots, &segments, &wanted.iter().map(|(_, at, size)| (*at, *size)).collect::<Vec<_>>());
    let label_style = label_font.pos(Pos::new(HPos::Left, VPos::Top));
    let (bx, by) = area.get_base_pixel();
    for ((text, _, _), b) in wanted.iter().zip(&placed) {
        area.draw(&Text::new(text.as_str(), (b.l.round() as i32 - bx, b.t.round() as i32 - by), label_style.clone())).map_err(err)?;
    }
    if let Some(legend) = legend {
        for (k, s) in fig.chart.series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            let y = (px + 8 + k as u32 * px * LEGEND_ROW) as i32;
            legend.draw(&PathElement::new(vec![(4, y), (28, y)], colour.stroke_width(3))).map_err(err)?;
            let style = label_font.pos(Pos::new(HPos::Left, VPos::Center));
            legend.draw(&Text::new(printable(&s.label), (LEGEND_TEXT_X as i32, y), style)).map_err(err)?;
        }
    } else if fig.chart.series.len() > 1 || fig.chart.series.iter().any(|s| !s.label.is_empty()) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(ink.background.mix(0.85))
            .border_style(ink.muted)
            .label_font(label_font)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// Writes a chart figure to an .svg or .png file of `size` pixels.
#[cfg(not(target_arch = "wasm32"))]
pub fn save_chart(fig: &ChartFigure, path: &std::path::Path, size: (u32, u32)) -> relattn_core::error::Result<()> {
    let file_err = |reason: String| relattn_core::error::Error::Write { path: path.display().to_string(), reason };
    super::figure::register_fonts();
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw_chart(&root, fig).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw_chart(&root, fig).map_err(file_err)?;
            root.present().map_err(|e| file_err(e.to_string()))
        }
        other => Err(relattn_core::error::Error::invalid("out", format!("extension {:?}", other.unwrap_or("")), ".svg or .png")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<[f32; 2]>, equal_axes: bool) -> Chart {
        Chart { series: vec![Series { label: "s".into(), points, markers: true, labels: vec![] }], equal_axes }
    }

    #[test]
    fn ranges_hold_every_point_with_room_and_equal_axes_are_one_square() {
        let ((x0, x1), (y0, y1)) = ranges(&chart(vec![[0.0, 1.0], [10.0, -3.0]], false));
        assert!(x0 < 0.0 && x1 > 10.0 && y0 < -3.0 && y1 > 1.0);
        assert_eq!(ranges(&chart(vec![[2.0, 2.0]], false)), ((1.5, 2.5), (1.5, 2.5)));
        let (x, y) = ranges(&chart(vec![[1.0, 0.0], [0.0, -0.5]], true));
        assert_eq!(x, y);
        assert!(x.0 < -1.0 && x.1 > 1.0);
        // No finite point: a unit range, not NaN.
        assert_eq!(ranges(&chart(vec![[f32::NAN, 1.0]], false)), ((0.0, 1.0), (0.0, 1.0)));
    }

    #[test]
    fn an_equal_axes_legend_goes_where_the_square_is_larger() {
        let (room_x, room_y) = axes_room(12);
        // A wide figure: beside, the square as tall as the height allows.
        assert_eq!(equal_axes_split((1000, 500), 12, (250, 80)), (500 - room_y, true));
        // A square slide's: under, the square as wide as the width allows when the legend's rows leave the room.
        assert_eq!(equal_axes_split((500, 600), 12, (250, 80)), (500 - room_x, false));
    }

    #[test]
    fn a_label_goes_where_it_covers_no_dot_and_no_label() {
        let frame = Bounds { l: 0.0, t: 0.0, r: 400.0, b: 400.0 };
        // Right of the centre, its label would go right (away from the centre), where another dot is.
        let dots = [(300.0, 200.0), (330.0, 200.0)];
        let placed = place_labels(frame, &dots, &[], &[((300.0, 200.0), (40.0, 16.0)), ((330.0, 200.0), (40.0, 16.0))]);
        let free = |b: &Bounds, others: &[Bounds]| {
            b.within(&frame)
                && dots.iter().all(|&(x, y)| !b.overlaps(&Bounds { l: x - 5.0, t: y - 5.0, r: x + 5.0, b: y + 5.0 }))
                && others.iter().all(|o| !b.overlaps(o))
        };
        assert!(free(&placed[0], &[]) && free(&placed[1], &placed[..1]), "{placed:?}");
        // The second dot's right is free: its label is there, level with it.
        assert!(placed[1].l > 330.0 && (placed[1].t + placed[1].b) / 2.0 == 200.0, "{:?}", placed[1]);
        // A line through the free spot: the label goes around it.
        let line = [[(340.0, 150.0), (400.0, 250.0)]];
        let placed = place_labels(frame, &dots[1..], &line, &[((330.0, 200.0), (40.0, 16.0))]);
        assert!(!placed[0].crossed_by(line[0][0], line[0][1]) && free(&placed[0], &[]), "{:?}", placed[0]);
    }

    /// RoPE's turning pairs (rope.rs turn: 12 positions of the three fastest pairs, 1, 0.75, 0.5625 rad a step, at
    /// radii 1, 3/4, 1/2; the fastest labelled m=0 … m=6, the others at m=11) on square plots from a page's
    /// figure to a 4K slide: no label covers a dot or another label, or leaves the plot and its margins, and each is nearer its
    /// own point than any other.
    #[test]
    fn the_turning_pairs_labels_cover_no_dot() {
        for side in [300.0f32, 354.0, 530.0, 1100.0] {
            let scale = side / 2.2; // the equal axes span ±1.1
            let at = |x: f32, y: f32| (side / 2.0 + x * scale, side / 2.0 - y * scale);
            let (mut dots, mut segments, mut labels) = (vec![], vec![], vec![]);
            // "m=11" at 12 px (a page's figure, a 720p slide), growing with the slide beyond.
            let (w, h) = (28.0 * (side / 354.0).max(1.0), 14.0 * (side / 354.0).max(1.0));
            for (theta, r) in [(1.0f32, 1.0f32), (0.75, 0.75), (0.5625, 0.5)] {
                let points: Vec<(f32, f32)> = (0..12).map(|m| at(r * (m as f32 * theta).cos(), r * (m as f32 * theta).sin())).collect();
                segments.extend(points.windows(2).map(|p| [p[0], p[1]]));
                let numbered: Vec<usize> = if theta == 1.0 { (0..7).collect() } else { vec![11] };
                labels.extend(numbered.iter().map(|&m| (points[m], (w, h))));
                dots.extend(points);
            }
            // The plot and the chart's margins above it and right of it.
            let room = Bounds { l: 0.0, t: -(MARGIN as f32), r: side + MARGIN_RIGHT as f32, b: side };
            let placed = place_labels(room, &dots, &segments, &labels);
            for (k, b) in placed.iter().enumerate() {
                let r = DOT_RADIUS as f32;
                assert!(b.within(&room), "{side}: label {k} {b:?} leaves the plot");
                assert!(dots.iter().all(|&(x, y)| !b.overlaps(&Bounds { l: x - r, t: y - r, r: x + r, b: y + r })), "{side}: label {k} {b:?} covers a dot");
                assert!(placed.iter().enumerate().all(|(j, o)| j == k || !b.overlaps(o)), "{side}: label {k} {b:?} covers a label");
                let off = |&(x, y): &(f32, f32)| (b.l - x).max(x - b.r).max(0.0).hypot((b.t - y).max(y - b.b).max(0.0));
                let own = labels[k].0;
                assert!(dots.iter().all(|d| *d == own || off(d) > off(&own)), "{side}: label {k} {b:?} is nearer another dot than its own");
            }
        }
    }

    #[test]
    fn a_chart_is_drawn_as_svg_with_its_title_axes_legend_and_labels() {
        let mut c = chart(vec![[0.0, 1.0], [1.0, 0.5], [2.0, 0.25]], false);
        c.series[0].labels = vec!["1".into(), "1/2".into(), "1/4".into()];
        c.series.push(Series { label: "other".into(), points: vec![[0.0, 0.0], [2.0, 1.0]], markers: false, labels: vec![] });
        let fig = ChartFigure { chart: &c, title: "Slopes", subtitle: "m_h", x_desc: "head h", y_desc: "slope", ink: Ink::LIGHT, text_px: 12 };
        crate::render::figure::register_fonts();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (600, 400)).into_drawing_area();
            draw_chart(&root, &fig).unwrap();
            root.present().unwrap();
        }
        for text in ["Slopes", "m_h", "head h", "slope", "1/2", "1/4", "other"] {
            assert!(svg.contains(&format!(">\n{text}\n</text>")), "{text} missing");
        }
        // Each series in its colour (line and legend), markers on the first only.
        assert!(svg.matches("#0072B2").count() >= 2 && svg.matches("#D55E00").count() >= 2);
        assert_eq!(svg.matches("<circle").count(), 3);
    }
}
