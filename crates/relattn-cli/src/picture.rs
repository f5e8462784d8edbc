//! `relattn picture`: one of the lecture's pictures of the layer's scheme (src/pictures: RoPE's turning pair,
//! kernels and layouts, ALiBi's slopes and bias, T5's staircase and bias, DeBERTa's log buckets, Transformer-XL's
//! rel_shift beside the skew, how alike absolute positions are), as .svg or .png, 16 : 9 by default; titled with a
//! captured layer's model and layer, the scheme's options under the formula.

use crate::args::LayerArgs;
use crate::files::write_atomic;
use crate::render::parse_size;
use crate::Stop;
use relattn::pictures::{self, Body};
use relattn::render::{self, ChartFigure, Figure};
use relattn::Error;
use std::path::Path;

/// Draws picture `name` of the layer `args` describe into `out`, `size` ("WxH") pixels.
pub fn run(args: &LayerArgs, name: &str, size: &str, out: &Path) -> Result<(), Stop> {
    let size = parse_size(size)?;
    let (cfg, sc, _, capture) = args.scenario(false, 1, |_, _| Some(render::figure_bytes(size)))?;
    let rope = sc.rope_table(&cfg);
    let (_, n, d_model) = sc.dims();
    let inputs = pictures::Inputs { config: &cfg, tables: &sc.rel_k, rope: rope.as_ref(), positions: sc.positions.as_ref(), n, d_model, d_head: sc.d_head };
    let all = pictures::of(&inputs);
    let names: Vec<&str> = all.iter().map(|p| p.meta.name).collect();
    let Some(picture) = all.iter().find(|p| p.meta.name == name) else {
        let allowed = match names.as_slice() {
            [] => format!(
                "a picture of a RoPE, ALiBi, T5, DeBERTa, Transformer-XL or absolute layer, or of a layer with a window ({} layers have none)",
                cfg.method.label()
            ),
            _ => format!("one of {} ({}'s pictures)", names.join(", "), cfg.method.label()),
        };
        return Err(Error::invalid("name", format!("'{name}'"), allowed).into());
    };
    let meta = &picture.meta;
    let title = capture.map_or(meta.title.to_string(), |c| format!("{} — {}", meta.title, c.title()));
    let subtitle = format!("{} · {}", meta.formula, pictures::stated(&inputs));
    match &picture.body {
        Body::Heatmap { values, x_labels, y_labels } => {
            let labels = |l: &Vec<String>| (!l.is_empty()).then(|| l.clone());
            let fig = Figure {
                x_labels: labels(x_labels),
                y_labels: labels(y_labels),
                ..Figure::plain(values.view(), title, subtitle, meta.x_axis, meta.y_axis, meta.scale)
            };
            write_atomic(out, |tmp| render::save(&fig, tmp, size))?;
        }
        Body::Curves(chart) => {
            let fig = ChartFigure { chart, title: &title, subtitle: &subtitle, x_desc: meta.x_axis, y_desc: meta.y_axis, ink: render::Ink::LIGHT, text_px: 14 };
            write_atomic(out, |tmp| render::save_chart(&fig, tmp, size))?;
        }
    }
    Ok(())
}
