//! A sliding window's picture, beside any scheme's: how far back the last query reaches through stacked layers.
//! One layer of window w lets a query read the w − 1 keys before it; the next layer reads keys that have each read
//! w − 1 more, so after ℓ layers the information of every key at i − j ≤ ℓ·(w − 1) can have reached query i
//! (causal; a bidirectional window reaches as far on either side):
//!
//! ```text
//! reach(ℓ) = ℓ·(w − 1)          reached(ℓ, d) = 1 if d ≤ reach(ℓ), else 0      d = i − j ≥ 0, ℓ = 1 … L
//! ```

use super::{Inputs, Picture, Text};
use ndarray::Array2;
use relattn_core::stage::{Scale, StageText};

pub const REACH: Text = Text {
    name: "window_reach",
    text: StageText::new(
        "A sliding window's reach, layer by layer",
        "after ℓ layers of window w, query i has read keys at i − j ≤ ℓ·(w − 1): one cell per layer ℓ and distance back d",
        r"\operatorname{reach}(\ell) = \ell\,(w - 1): \quad \text{key } j \text{ reaches query } i \text{ after } \ell \text{ layers iff } i - j \le \ell\,(w - 1)",
        "Each layer attends to w keys only, yet every layer lets information hop w − 1 positions further back: the lit band widens by w − 1 a layer. Mistral 7B's 32 layers of window 4096 reach about 131 000 tokens back, though no single layer looks past 4095.",
    )
    .on("distance back d = i − j", "layer ℓ"),
};

/// The layers drawn: enough to show the band widening.
const LAYERS: usize = 8;
/// The most columns: wider windows are drawn in bins of distances (each cell the first distance of its bin).
const COLUMNS: usize = 128;

/// The window's picture of a layer with a window (none without one).
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let Some(w) = inputs.config.window else { return Vec::new() };
    let widest = LAYERS * w.saturating_sub(1) + w;
    let bin = widest.div_ceil(COLUMNS).max(1);
    let columns = widest.div_ceil(bin);
    let values = Array2::from_shape_fn((LAYERS, columns), |(l, c)| if c * bin <= (l + 1) * (w - 1) { 1.0 } else { 0.0 });
    let x_labels = (0..columns).map(|c| (c * bin).to_string()).collect();
    let y_labels = (1..=LAYERS).map(|l| l.to_string()).collect();
    vec![REACH.heatmap(Scale::Sequential, values, x_labels, y_labels)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array3;
    use relattn_core::attention::Config;

    /// The band against the definition, counted by hand: after layer ℓ the distances 0 ..= ℓ·(w − 1) are lit,
    /// binned when the window is wide; no window, no picture.
    #[test]
    fn the_band_widens_by_w_minus_1_a_layer() {
        let tables = Array3::zeros((1, 0, 4));
        for (w, bin) in [(3usize, 1usize), (4096, 288)] {
            let cfg = Config { window: Some(w), causal: true, ..Config::default() };
            let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 8, d_model: 16, d_head: 8 };
            let pictures = pictures(&inputs);
            let super::super::Body::Heatmap { values, x_labels, .. } = &pictures[0].body else { panic!("a heatmap") };
            assert_eq!(x_labels[1], bin.to_string(), "w {w}: bins of {bin}");
            for l in 0..LAYERS {
                let lit = values.row(l).iter().filter(|&&v| v == 1.0).count();
                // Distances 0 ..= (l + 1)(w − 1), in bins of `bin` starting at 0.
                assert_eq!(lit, (l + 1) * (w - 1) / bin + 1, "w {w}, layer {}", l + 1);
            }
        }
        let none = Config::default();
        assert!(pictures(&Inputs { config: &none, tables: &tables, rope: None, positions: None, n: 8, d_model: 16, d_head: 8 }).is_empty());
    }
}
