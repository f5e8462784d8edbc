//! The pictures a lecture on a position scheme needs beside the trace's stages, one module per scheme that has
//! some: RoPE (one pair of q turning with position, the kernel against distance for several bases and fractions,
//! the two pair layouts), ALiBi (slope against head, every head's bias on one scale), T5 (bucket against
//! distance, the staircase; the bias per bucket of every head), DeBERTa (its signed log buckets against distance,
//! beside T5's staircase), Transformer-XL (its rel_shift step by step beside the Music Transformer's skew,
//! [`shifts`]) and absolute positions (how alike the position vectors are). Each is a heatmap or curves ([`Body`]) with the metadata of a stage ([`StageMeta`]: title,
//! formula, TeX, what to notice, axes), so the page shows, presents, links and exports it as it does a stage;
//! they are drawn from the layer's options and tables (a captured layer's own), never from its input. A layer with
//! a sliding window has one more, its reach through stacked layers ([`window`]).
//! [`stated`] says the scheme's options in one line, for every slide of the scheme.

pub mod absolute;
pub mod alibi;
pub mod deberta;
pub mod rope;
pub mod shifts;
pub mod t5;
pub mod window;

use crate::render::short;
use crate::render::Chart;
use ndarray::{Array2, Array3};
use relattn_core::attention::{Config, LogitScale};
use relattn_core::layer::stage_meta::StageMeta;
use relattn_core::positions::rope::RopeTable;
use relattn_core::positions::Method;
use relattn_core::stage::{Scale, StageText};

/// What a picture is drawn from: the layer's options and its scheme's tables.
pub struct Inputs<'a> {
    pub config: &'a Config,
    /// The scheme's table (1 or h, R, width): ALiBi's slopes (h, 1, 1), T5's bias per bucket (1 or h, B, 1).
    pub tables: &'a Array3<f32>,
    /// RoPE's cos and sin of positions 0 .. n (the options', or a model's own).
    pub rope: Option<&'a RopeTable>,
    /// A model's own absolute position vectors (n, d_model); `None`: the sinusoids.
    pub positions: Option<&'a Array2<f32>>,
    pub n: usize,
    pub d_model: usize,
    /// Each head's width (d_model / heads, or a captured model's own).
    pub d_head: usize,
}

/// A heatmap (with labels for its columns and rows; empty: indices) or curves.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Heatmap { values: Array2<f32>, x_labels: Vec<String>, y_labels: Vec<String> },
    Curves(Chart),
}

/// One picture: what is said about it and what it shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Picture {
    pub meta: StageMeta,
    pub body: Body,
}

/// What a scheme's module says about one of its pictures.
pub struct Text {
    /// The picture's name in links (`?present=`) and exported files.
    pub name: &'static str,
    /// Its title, formulas, what to notice and (always) its axes: a stage's kind of text.
    pub text: StageText,
}

impl Text {
    /// The picture's [`StageMeta`]: a picture covers every head and batch element, and its cells are not pairs.
    fn meta(&self, scale: Scale) -> StageMeta {
        let StageText { title, formula, tex, notice, axes } = self.text;
        let (x_axis, y_axis) = axes.unwrap_or_default();
        StageMeta {
            name: self.name,
            title,
            formula,
            tex,
            notice,
            x_axis,
            y_axis,
            pairs: false,
            rows_are_queries: false,
            masked_above: false,
            masked_window: None,
            masked_chunk: None,
            per_head: false,
            per_batch: false,
            scale,
        }
    }

    pub fn heatmap(&self, scale: Scale, values: Array2<f32>, x_labels: Vec<String>, y_labels: Vec<String>) -> Picture {
        Picture { meta: self.meta(scale), body: Body::Heatmap { values, x_labels, y_labels } }
    }

    pub fn curves(&self, chart: Chart) -> Picture {
        Picture { meta: self.meta(Scale::Sequential), body: Body::Curves(chart) }
    }
}

/// The pictures of the layer's scheme, in the order a lecture shows them (none for Shaw's, BERT's and the Music
/// Transformer's, whose stages are their pictures; Transformer-XL's rel_shift beside the skew), then its sliding
/// window's reach when it has one.
pub fn of(inputs: &Inputs) -> Vec<Picture> {
    let mut pictures = match inputs.config.method {
        Method::Rope => rope::pictures(inputs),
        Method::Alibi => alibi::pictures(inputs),
        Method::T5 => t5::pictures(inputs),
        Method::Deberta => deberta::pictures(inputs),
        Method::Absolute => absolute::pictures(inputs),
        Method::TransformerXl => shifts::pictures(inputs),
        Method::Shaw | Method::Music | Method::BertRelative => Vec::new(),
    };
    pictures.extend(window::pictures(inputs));
    pictures
}

/// The scheme's options in one line, as every slide of the scheme states them: "RoPE: base 10000, rotated
/// fraction 1 (d_rot 64 of d_head 64), interleaved pairs (2p, 2p + 1), positions ÷ 1".
pub fn stated(inputs: &Inputs) -> String {
    let cfg = inputs.config;
    let masking = if cfg.causal { "causal" } else { "bidirectional" };
    let scheme = scheme_stated(inputs, masking);
    // What a captured model adds to its scheme: a window, a scale of its own, a cap.
    let window = cfg.window.map(|w| format!("window {w} (|j − i| < {w})"));
    let chunk = cfg.chunk.map(|c| format!("chunks of {c} (⌊j / {c}⌋ = ⌊i / {c}⌋)"));
    let scale = match cfg.logit_scale {
        LogitScale::Factor(f) => Some(format!("logits × {} (the model's scale)", short(f))),
        _ => None,
    };
    let cap = cfg.softcap.map(|c| format!("soft-capped at ±{}", short(c)));
    [Some(scheme), window, chunk, scale, cap].into_iter().flatten().collect::<Vec<_>>().join(", ")
}

/// The scheme's own options, as [`stated`] begins.
fn scheme_stated(inputs: &Inputs, masking: &str) -> String {
    let cfg = inputs.config;
    match cfg.method {
        Method::Shaw => {
            let values = if cfg.rel_v { "a^K and a^V" } else { "a^K only" };
            format!("Shaw et al. 2018: clip k = {} (tables of 2k + 1 = {} rows), {values}, {masking}", cfg.clip, 2 * cfg.clip + 1)
        }
        Method::Music => format!(
            "Music Transformer: k = {} (E_r of {} rows), {masking}, beyond it: {}",
            cfg.clip,
            if cfg.causal { cfg.clip + 1 } else { 2 * cfg.clip + 1 },
            match cfg.edge {
                relattn_core::positions::table::Edge::Clip => "the edge row",
                relattn_core::positions::table::Edge::Zero => "zeros",
            }
        ),
        Method::Rope => rope::stated(inputs),
        Method::Alibi => alibi::stated(inputs),
        Method::T5 => t5::stated(inputs),
        Method::Deberta => deberta::stated(inputs, masking),
        Method::BertRelative => {
            let b = cfg.bert;
            let terms = match b.terms {
                relattn_core::positions::bert_relative::BertTerms::Key => "relative_key (q·a)",
                relattn_core::positions::bert_relative::BertTerms::KeyQuery => "relative_key_query (q·a + k·a)",
            };
            format!("BERT {terms}: max_position P = {} (a table of 2P − 1 = {} rows, no clipping), {masking}", b.max_position, b.rows())
        }
        Method::Absolute => absolute::stated(inputs),
        Method::TransformerXl => {
            let k = cfg.clip;
            let segments = match cfg.xl.segments {
                0 => "no segment term".to_string(),
                1 => "one segment (EF constant per row)".to_string(),
                s => format!("{s} segments (EF)"),
            };
            let rows = relattn_core::positions::transformer_xl::positions(k, cfg.causal);
            format!("Transformer-XL: R W_R for i − j clamped at {k} ({rows} rows of r), biases u and v, {segments}, {masking}")
        }
    }
}

/// Indices `from..to` as labels.
fn index_labels(range: std::ops::Range<isize>) -> Vec<String> {
    range.map(|i| i.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use relattn_core::layer::scenario::{Scenario, Spec};

    /// Every picture any scheme draws.
    const NAMES: [&str; 10] = [
        rope::TURN.name,
        rope::KERNELS.name,
        rope::LAYOUTS.name,
        alibi::SLOPES.name,
        alibi::BIAS_BY_HEAD.name,
        t5::STAIRCASE.name,
        t5::BIAS_BY_BUCKET.name,
        deberta::BUCKETS.name,
        shifts::SHIFTS.name,
        absolute::SIMILARITY.name,
    ];

    /// Every scheme's pictures have distinct names from [`NAMES`], say what to notice, and have finite numbers (NaN
    /// where a cell holds nothing).
    #[test]
    fn every_picture_is_named_described_and_finite() {
        let mut seen = Vec::new();
        for method in Method::ALL {
            for causal in [false, true] {
                let cfg = Config { method, causal, heads: 4, ..Config::default() };
                let spec = Spec { n: 12, d_model: 32, ..Spec::default() };
                let sc = Scenario::build(&cfg, &spec, Default::default(), true).unwrap();
                let rope = sc.rope_table(&cfg);
                let inputs = Inputs { config: &cfg, tables: &sc.rel_k, rope: rope.as_ref(), positions: None, n: 12, d_model: 32, d_head: 32 / cfg.heads };
                assert!(stated(&inputs).len() > 20, "{method}");
                for p in of(&inputs) {
                    assert!(NAMES.contains(&p.meta.name), "{}", p.meta.name);
                    assert!(p.meta.notice.len() > 60 && p.meta.notice.ends_with('.'), "{}", p.meta.name);
                    match &p.body {
                        Body::Heatmap { values, x_labels, y_labels } => {
                            // Finite, or NaN where a cell holds nothing (drawn grey: the skew's padding).
                            assert!(values.iter().all(|v| v.is_finite() || v.is_nan()) && values.iter().any(|v| v.is_finite()), "{}", p.meta.name);
                            assert!(x_labels.is_empty() || x_labels.len() == values.ncols());
                            assert!(y_labels.is_empty() || y_labels.len() == values.nrows());
                        }
                        Body::Curves(c) => {
                            assert!(c.series.iter().all(|s| !s.points.is_empty() && s.points.iter().all(|p| p[0].is_finite() && p[1].is_finite())))
                        }
                    }
                    seen.push(p.meta.name);
                }
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), NAMES.len(), "every picture drawn by some scheme: {seen:?}");
    }
}
