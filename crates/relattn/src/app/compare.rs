//! The "compare schemes" view: one input — the options shown, with their sentence — under every position
//! scheme, and for the (batch, head) shown each scheme's attention weights and its attention by distance
//! ([`crate::attention::by_distance`]). Every scheme gets the same x, W_q, W_k, W_v and W_o (they are drawn
//! from the seed by name, whatever the scheme) and its own position parameters from the same seed; Shaw's and
//! the Music Transformer's tables have the options' k. Computed on the CPU, a head at a time in blocks of
//! query rows (no whole trace), so six schemes cost about six forward passes.

use super::request::Inputs;
use super::session::{Cutting, Made};
use crate::attention::by_distance;
use crate::error::{check_index, Error, Result};
use crate::layer::forward;
use crate::layer::on_demand::Layer;
use crate::layer::options::LayerOptions;
use crate::layer::scenario::Scenario;
use crate::positions::Method;
use crate::protocol::{Request, SchemeView};
use crate::render::Palette;
use crate::stage::Stage;

/// The longest sequence the comparison takes (six layers in a row, each a few seconds at this n).
pub const MAX_COMPARE_N: usize = 2048;

/// The comparison of the request's options (a preset's or a file's are refused: the page sends the options it
/// shows) for (batch, head), coloured with `palette`: one [`SchemeView`] per scheme in [`Method::ALL`]'s
/// order, its weights' values kept when they are at most [`super::session::VALUES_CELLS`]. Errors name the
/// field: "compare", "n" past [`MAX_COMPARE_N`], "batch index", "head", or an option.
pub fn compare(request: &Request, batch: usize, head: usize, palette: Palette) -> Result<Vec<SchemeView>> {
    if request.options.preset.as_deref().is_some_and(|p| !p.is_empty()) || !request.file_name.is_empty() {
        let why = "the options shown, not a preset or a file (a file's tables belong to one scheme)";
        return Err(Error::invalid("compare", "a preset or a file", why));
    }
    Method::ALL
        .into_iter()
        .map(|method| {
            let request = Request { options: LayerOptions { method: Some(method), ..request.options.clone() }, ..request.clone() };
            let Inputs { cfg, spec, arrays, per_head, .. } = Inputs::resolve(&request, None)?;
            if spec.n > MAX_COMPARE_N {
                return Err(Error::invalid("n", spec.n, format!("1..={MAX_COMPARE_N} to compare the six schemes")));
            }
            check_index("head", head, cfg.heads)?;
            check_index("batch index", batch, spec.batch)?;
            let sc = Scenario::build(&cfg, &spec, arrays, per_head)?;
            let (projections, output) = forward::forward_projected(&cfg, &sc)?;
            let layer = Layer::new(&cfg, sc, projections, output)?;
            let weights = layer.stage(Stage::Weights, batch, head)?;
            // Cut as the page cuts a stage: pooled to a raster, coloured, its values kept when they are few enough.
            let mut cutting = Cutting::new(Stage::Weights.scale(), weights.dim());
            cutting.add(0, weights.view());
            let Made { cut, values, rgba } = cutting.finish(palette);
            let profile = by_distance(weights.view()).into_iter().map(|v| v as f32).collect();
            let values = cut.has_values.then_some(values);
            Ok(SchemeView { method: method.to_string(), label: method.label().into(), meta: layer.meta(Stage::Weights), cut, profile, rgba, values })
        })
        .collect()
}
