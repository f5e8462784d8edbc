//! The "compare schemes" view: one input — the options shown, with their sentence — under every position
//! scheme, and for the (batch, head) shown each scheme's attention weights and its attention by distance
//! ([`relattn_core::attention::by_distance`]), or its position term and that term's mean by distance ([`Compared`]).
//! A scheme's position term is the stage [`Method::term_stage`] names: the relative logits (Shaw's a^K term, the
//! Music Transformer's, ALiBi's and T5's bias, DeBERTa's c2p + p2c before the scale), RoPE's kernel; absolute
//! positions, with none in attention, show how alike their vectors are. Every scheme gets the same x, W_q, W_k, W_v
//! and W_o (they are drawn from the seed by name, whatever the scheme) and its own position parameters from the
//! same seed; Shaw's and the Music Transformer's tables have the options' k. Computed on the CPU, the head shown
//! alone (its columns of the projections, its stage in blocks of query rows; no whole trace, no output), so S
//! schemes cost about S / h forward passes.

use super::request::Inputs;
use super::session::{CellMask, Cutting, Made};
use crate::options::LayerOptions;
use crate::pictures;
use crate::protocol::{Compared, Request, SchemeView};
use crate::render::Palette;
use ndarray::{Array3, ArrayView2};
use relattn_core::attention::by_distance;
use relattn_core::error::{check_index, Error, Result};
use relattn_core::layer::forward;
use relattn_core::layer::on_demand::Layer;
use relattn_core::layer::scenario::Scenario;
use relattn_core::positions::table::Reach;
use relattn_core::positions::Method;
use relattn_core::stage::Stage;
use std::ops::Range;

/// The longest sequence the comparison takes (a head per scheme in a row).
pub const MAX_COMPARE_N: usize = 2048;

/// The schemes the comparison of `request` shows, in [`Method::ALL`]'s order: every one, BERT relative's when the
/// sequence fits its max_position (its table has no row past it: its panel is left out rather than the comparison
/// refused). A preset's or a file's options are refused, naming "compare" (the page sends the options it shows).
pub fn schemes(request: &Request) -> Result<Vec<Method>> {
    if request.options.preset.as_deref().is_some_and(|p| !p.is_empty()) || !request.file_name.is_empty() {
        let why = "the options shown, not a preset or a file (a file's tables belong to one scheme)";
        return Err(Error::invalid("compare", "a preset or a file", why));
    }
    let bert = Request { options: LayerOptions { method: Some(Method::BertRelative), ..request.options.clone() }, ..request.clone() };
    let bert_fits = Inputs::resolve(&bert, None).is_ok_and(|i| i.cfg.scheme().check_length(i.spec.n).is_ok());
    Ok(Method::ALL.into_iter().filter(|method| *method != Method::BertRelative || bert_fits).collect())
}

/// The comparison of the request's options for (batch, head), coloured with `palette`: one [`SchemeView`] per
/// scheme of [`schemes`] — its weights or its position term (`what`) — its values kept when they are at most
/// [`super::session::VALUES_CELLS`], the keys a causal layer masks grey. Errors name the field: "compare",
/// "n" past [`MAX_COMPARE_N`], "batch index", "head", or an option.
pub fn compare(request: &Request, batch: usize, head: usize, what: Compared, palette: Palette) -> Result<Vec<SchemeView>> {
    schemes(request)?.into_iter().map(|method| view(request, method, batch, head, what, palette)).collect()
}

/// The views of schemes `range` of [`schemes`] alone: a pool's share of the comparison (each scheme's view is its
/// own, whichever worker computes it). Errors as [`compare`]'s, and "schemes" for a range past them.
pub fn compare_range(request: &Request, range: Range<usize>, batch: usize, head: usize, what: Compared, palette: Palette) -> Result<Vec<SchemeView>> {
    let all = schemes(request)?;
    let given = format!("{}..{}", range.start, range.end);
    let chosen = all.get(range).ok_or_else(|| Error::invalid("schemes", given, format!("a range within 0..{}", all.len())))?;
    chosen.iter().map(|&method| view(request, method, batch, head, what, palette)).collect()
}

/// Scheme `method`'s view of the request's options ([`compare`]).
fn view(request: &Request, method: Method, batch: usize, head: usize, what: Compared, palette: Palette) -> Result<SchemeView> {
    let request = Request { options: LayerOptions { method: Some(method), ..request.options.clone() }, ..request.clone() };
    let Inputs { cfg, spec, arrays, per_head, .. } = Inputs::resolve(&request, None)?;
    if spec.n > MAX_COMPARE_N {
        return Err(Error::invalid("n", spec.n, format!("1..={MAX_COMPARE_N} to compare the schemes")));
    }
    check_index("head", head, cfg.heads)?;
    check_index("batch index", batch, spec.batch)?;
    let sc = Scenario::build(&cfg, &spec, arrays, per_head)?;
    // One head's stage is shown: that head's columns of the projections alone, and no output (zeros, never
    // read) — 1/h of the forward's work.
    let projections = forward::project_heads(&cfg, &sc, head..head + 1)?;
    let output = Array3::zeros((spec.batch, spec.n, sc.d_out()));
    let layer = Layer::new(&cfg, sc, projections, output)?;
    let causal = cfg.causal;
    let (matrix, meta, masked) = match (what, method.term_stage()) {
        (Compared::Weights, _) => (layer.stage(Stage::Weights, batch, head)?, layer.meta(Stage::Weights), causal),
        (Compared::Term, Some(stage)) => (layer.stage(stage, batch, head)?, layer.meta(stage), causal && stage.masked_when_causal()),
        (Compared::Term, None) => {
            // Absolute positions have no term in attention: how alike their vectors are stands in.
            let rope = layer.rope_table();
            let (_, n, d_model) = layer.scenario.dims();
            let inputs = pictures::Inputs {
                config: &cfg,
                tables: &layer.scenario.rel_k,
                rope,
                positions: layer.scenario.positions.as_ref(),
                n,
                d_model,
                d_head: layer.scenario.d_head,
            };
            let picture = pictures::of(&inputs).into_iter().next().expect("absolute positions draw their similarity");
            let pictures::Body::Heatmap { values, .. } = picture.body else { unreachable!("the similarity is a heatmap") };
            (values, picture.meta, false)
        }
    };
    // Cut as the page cuts a stage: pooled to a raster, coloured, its values kept when they are few enough.
    let mut cutting =
        Cutting::new(meta.scale, matrix.dim()).masked(masked.then_some(CellMask { reach: Reach { causal: true, ..Reach::default() }, keys: None }));
    cutting.add(0, matrix.view());
    let Made { cut, values, rgba } = cutting.finish(palette);
    let profile = match what {
        Compared::Weights => by_distance(matrix.view()).into_iter().map(|v| v as f32).collect(),
        Compared::Term => mean_by_distance(matrix.view(), masked),
    };
    let values = cut.has_values.then_some(values);
    Ok(SchemeView { method: method.to_string(), label: method.label().into(), meta, cut, profile, rgba, values })
}

/// A term's mean by distance: `out[d + n − 1]` is the mean of `m[i, j]` over the pairs with j − i = d, for d in
/// −(n − 1)..=n − 1 of a square (n, n) term; with `masked`, pairs after the query (d > 0) count for nothing and
/// their means are 0.
pub fn mean_by_distance(m: ArrayView2<f32>, masked: bool) -> Vec<f32> {
    let n = m.nrows();
    let (mut sum, mut count) = (vec![0.0f64; 2 * n - 1], vec![0usize; 2 * n - 1]);
    for ((i, j), &v) in m.indexed_iter() {
        if masked && j > i {
            continue;
        }
        let k = j + n - 1 - i;
        sum[k] += v as f64;
        count[k] += 1;
    }
    sum.iter().zip(&count).map(|(s, &c)| if c == 0 { 0.0 } else { (s / c as f64) as f32 }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each scheme's weights and position term, computed from the head shown alone, are the ones of its whole
    /// layer (every head projected, the forward run) bit for bit: for every scheme, bidirectional and causal, on
    /// batch element 1, head 2.
    #[test]
    fn a_schemes_head_alone_is_its_whole_layers() {
        for causal in [false, true] {
            let options = LayerOptions {
                n: Some(40.0),
                d_model: Some(24.0),
                heads: Some(3.0),
                clip: Some(4.0),
                batch_size: Some(2.0),
                causal: Some(causal),
                ..LayerOptions::default()
            };
            let request: Request = serde_json::from_value(serde_json::json!({ "backend": "cpu", "options": options })).unwrap();
            let (batch, head) = (1, 2);
            for what in [Compared::Weights, Compared::Term] {
                let views = compare(&request, batch, head, what, Palette::default()).unwrap();
                assert_eq!(views.len(), Method::ALL.len());
                for (view, method) in views.iter().zip(Method::ALL) {
                    let Some(stage) = (match what {
                        Compared::Weights => Some(Stage::Weights),
                        Compared::Term => method.term_stage(),
                    }) else {
                        continue; // absolute positions' term is their picture, the same code either way
                    };
                    let request = Request { options: LayerOptions { method: Some(method), ..request.options.clone() }, ..request.clone() };
                    let Inputs { cfg, spec, arrays, per_head, .. } = Inputs::resolve(&request, None).unwrap();
                    let sc = Scenario::build(&cfg, &spec, arrays, per_head).unwrap();
                    let (projections, output) = forward::forward_projected(&cfg, &sc).unwrap();
                    let whole = Layer::new(&cfg, sc, projections, output).unwrap().stage(stage, batch, head).unwrap();
                    let got = view.values.as_ref().expect("a small stage keeps its values");
                    assert_eq!(got, &whole.iter().copied().collect::<Vec<_>>(), "{method} {what:?} causal {causal}");
                }
            }
        }
    }

    /// A pool's shares of a comparison (ranges of its schemes, as the page's workers take them) are its views bit
    /// for bit, in order; a range past the schemes is refused by name.
    #[test]
    fn a_comparisons_shares_are_its_views() {
        let options = LayerOptions { n: Some(20.0), d_model: Some(16.0), heads: Some(2.0), clip: Some(3.0), ..LayerOptions::default() };
        let request: Request = serde_json::from_value(serde_json::json!({ "backend": "cpu", "options": options })).unwrap();
        let whole = compare(&request, 0, 1, Compared::Weights, Palette::default()).unwrap();
        let count = schemes(&request).unwrap().len();
        for parts in [2, 3, 4] {
            let shares = super::super::pool::split(count, parts, 1);
            let views: Vec<SchemeView> =
                shares.into_iter().flat_map(|r| compare_range(&request, r, 0, 1, Compared::Weights, Palette::default()).unwrap()).collect();
            let key = |v: &SchemeView| (v.method.clone(), v.values.clone(), v.rgba.clone(), v.profile.clone());
            assert_eq!(views.iter().map(key).collect::<Vec<_>>(), whole.iter().map(key).collect::<Vec<_>>(), "{parts} shares");
        }
        let past = compare_range(&request, count - 1..count + 1, 0, 1, Compared::Weights, Palette::default());
        assert_eq!(past.err().unwrap().field(), "schemes");
    }

    /// The mean of each diagonal, against the definition written out (m[i, j] = 10 i + j: d = −1 holds 10 and 21);
    /// masked diagonals are 0.
    #[test]
    fn mean_by_distance_is_each_diagonals_mean() {
        let m = ndarray::Array2::from_shape_fn((3, 3), |(i, j)| (10 * i + j) as f32);
        assert_eq!(mean_by_distance(m.view(), false), [20.0, 15.5, 11.0, 6.5, 2.0]);
        assert_eq!(mean_by_distance(m.view(), true), [20.0, 15.5, 11.0, 0.0, 0.0]);
    }
}
