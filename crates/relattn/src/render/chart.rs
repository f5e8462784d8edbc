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
    // Equal axes: the plot is a square (its axes' label areas beside it) on the left, its legend to its right.
    let (area, legend) = if fig.chart.equal_axes {
        let side = (h + 4 * px).min(w);
        let (area, rest) = body.split_horizontally(side);
        (area, Some(rest))
    } else {
        (body, None)
    };
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(3 * px + 16)
        .y_label_area_size(6 * px + 16)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let label_font = ("sans-serif", px).into_font().color(&ink.text);
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
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled()))).map_err(err)?;
        }
        let label_style = ("sans-serif", px).into_font().color(&ink.text).pos(Pos::new(HPos::Left, VPos::Bottom));
        for (p, text) in points.iter().zip(&s.labels) {
            chart.plotting_area().draw(&(EmptyElement::at(*p) + Text::new(printable(text), (6, -4), label_style.clone()))).map_err(err)?;
        }
    }
    if let Some(legend) = legend {
        for (k, s) in fig.chart.series.iter().enumerate() {
            let colour = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            let y = 24 + (k as u32 * px * 2) as i32;
            legend.draw(&PathElement::new(vec![(4, y), (28, y)], colour.stroke_width(3))).map_err(err)?;
            let style = ("sans-serif", px).into_font().color(&ink.text).pos(Pos::new(HPos::Left, VPos::Center));
            legend.draw(&Text::new(printable(&s.label), (36, y), style)).map_err(err)?;
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
