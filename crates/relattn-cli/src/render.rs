//! `relattn render`: one stage of one (batch, head) as a labelled heatmap, .svg or .png.

use crate::args::LayerArgs;
use crate::files::write_atomic;
use crate::report::{peak_rss_mib, summary};
use crate::{say, Stop};
use relattn::positions::table;
use relattn::render::{self, Figure};
use relattn::{Error, Stage};
use std::path::Path;
use std::time::Instant;

/// What to draw: the stage, the (batch, head), the tokens that label the axes (else a captured layer's own),
/// the figure's size ("WxH").
pub struct Drawn<'a> {
    pub stage: Stage,
    pub batch: usize,
    pub head: usize,
    pub tokens: Option<&'a str>,
    pub size: &'a str,
}

/// Draws `what` of the layer `args` describe into `out`; with `json`, prints the layer's summary.
pub fn run(args: &LayerArgs, what: Drawn, out: &Path, json: bool, start: Instant) -> Result<(), Stop> {
    let Drawn { stage, batch, head, tokens, size } = what;
    let size = parse_size(size)?;
    let (layer, estimate, capture) = args.on_demand(render::figure_bytes(size))?;
    let m = layer.stage(stage, batch, head)?;
    let (_, _, n) = layer.dims();
    let captured = capture.as_ref().and_then(|c| c.tokens.get(batch)).cloned();
    let tokens: Option<Vec<String>> = tokens.map(|s| s.split_whitespace().map(String::from).collect()).or(captured);
    if let Some(tok) = &tokens {
        if tok.len() != n {
            return Err(Error::invalid("tokens", format!("{} tokens", tok.len()), format!("exactly n = {n} tokens")).into());
        }
    }
    let positional = |len: usize| tokens.clone().filter(|_| len == n);
    let (rows, cols) = m.dim();
    let meta = layer.meta(stage);
    let title = match (meta.per_head, &capture) {
        (true, Some(c)) => format!("{} — head {head} — {}", meta.title, c.title()),
        (true, None) => format!("{} — head {head}", meta.title),
        (false, Some(c)) => format!("{} — {}", meta.title, c.title()),
        (false, None) => meta.title.into(),
    };
    // Query rows that see no key (all padding) are said, as the page says them.
    let unattended = match (&layer.scenario.key_mask, meta.rows_are_queries) {
        (Some(mask), true) => table::unattended_note(&table::unattended_rows(layer.config.causal, &mask.row(batch).to_vec())),
        _ => String::new(),
    };
    let subtitle = format!("{}   shape ({rows}, {cols}){}", meta.formula, if unattended.is_empty() { String::new() } else { format!(" · {unattended}") });
    let fig = Figure {
        x_labels: if meta.pairs { positional(cols) } else { None },
        y_labels: if meta.rows_are_queries { positional(rows) } else { None },
        ..Figure::plain(m.view(), title, subtitle, meta.x_axis, meta.y_axis, meta.scale)
    };
    write_atomic(out, |tmp| render::save(&fig, tmp, size))?;
    if json {
        let d_model = layer.output.dim().2;
        let unread = args.options.unread(layer.config.method);
        let mut s = summary(&layer.config, layer.dims(), d_model, &layer.stages(), out, start.elapsed().as_secs_f64() * 1e3, &unread);
        s["estimate_bytes"] = estimate.into();
        s["peak_rss_mib"] = peak_rss_mib().into();
        say(s)?;
    }
    Ok(())
}

pub fn parse_size(s: &str) -> relattn::Result<(u32, u32)> {
    let bad = || Error::invalid("size", format!("'{s}'"), "WIDTHxHEIGHT, each 200..=8000 pixels");
    let (w, h) = s.split_once('x').ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}
