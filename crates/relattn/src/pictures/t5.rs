//! T5's pictures: the staircase of buckets against distance (exact, then logarithmic, then capped), masked and
//! not, and the bias of every bucket for every head, with its values.
//!
//! ```text
//! B' = B/2 a side (bidirectional; keys after the query use the upper half) or B (causal: d > 0 reads bucket 0)
//! E = B'/2 exact buckets;  D = max_distance
//! bucket(d) = |d|                                              |d| < E
//!           = min(E + ⌊ln(|d|/E) / ln(D/E) · (B' − E)⌋, B' − 1)  otherwise (capped at the last bucket)
//! ```

use super::{Inputs, Picture, Text};
use crate::render::{Chart, Series};
use ndarray::Array2;
use relattn_core::positions::t5;
use relattn_core::stage::{Scale, StageText};

pub const STAIRCASE: Text = Text {
    name: "t5_staircase",
    text: StageText::new(
        "T5's buckets: the staircase",
        t5::BUCKET_FORMULA,
        t5::BUCKET_TEX,
        "Three parts: one bucket per distance up to E, then steps that widen logarithmically, then flat from the max distance on, where every farther key shares the last bucket. Bidirectional, keys after the query (d > 0) climb their own half of the buckets; causal, they all read bucket 0 and are masked anyway.",
    )
    .on("distance d = j − i", "bucket"),
};

pub const BIAS_BY_BUCKET: Text = Text {
    name: "t5_bias_by_bucket",
    text: StageText::new(
        "T5's bias per bucket and head",
        "b_h[r]: one learned scalar per head h and bucket r, added after the scale",
        r"b_{h}[r] \in \mathbb{R}, \quad r = 0, \dots, B - 1: \text{ added to } e_{ij} \text{ at } r = \operatorname{bucket}(j - i)",
        "The whole of T5's position signal: one number per bucket and head, on one colour scale across heads, its value written in each cell when it fits. A head that prefers near keys has large values in the first buckets; a random layer's values are noise.",
    )
    .on("bucket r", "head h"),
};

/// The distances the staircase is drawn over: to 1.5 × max distance either side (at most 8192), so that the cap shows.
fn reach(max_distance: usize) -> isize {
    (max_distance * 3 / 2).clamp(8, 8192) as isize
}

/// T5's pictures of a layer.
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let buckets = inputs.config.buckets;
    let r = reach(buckets.max_distance);
    // Each masking whose bucket count the layer's options allow (a causal count may be odd).
    let series = [(false, "bidirectional"), (true, "causal")]
        .into_iter()
        .filter(|(causal, _)| buckets.check(*causal).is_ok())
        .map(|(causal, label)| Series {
            label: format!("{label}{}", if causal == inputs.config.causal { " (this layer)" } else { "" }),
            points: (-r..=r).map(|d| [d as f32, buckets.bucket(d, causal) as f32]).collect(),
            markers: false,
            labels: vec![],
        })
        .collect();
    // The table (1 or h, B, 1) as (heads, B).
    let (h, b, _) = inputs.tables.dim();
    let table = Array2::from_shape_fn((h, b), |(head, bucket)| inputs.tables[[head, bucket, 0]]);
    // One table shared by the layer's heads is one row for all of them.
    let heads = if h == 1 && inputs.config.heads > 1 { vec![format!("all {}", inputs.config.heads)] } else { super::index_labels(0..h as isize) };
    vec![STAIRCASE.curves(Chart { series, equal_axes: false }), BIAS_BY_BUCKET.heatmap(Scale::Diverging, table, super::index_labels(0..b as isize), heads)]
}

/// "T5: 32 buckets (16 a side, 8 exact), max distance 128, bidirectional".
pub fn stated(inputs: &Inputs) -> String {
    let (b, causal) = (inputs.config.buckets, inputs.config.causal);
    let per_side = if causal { b.count } else { b.count / 2 };
    let side = if causal { format!("{per_side} for keys before the query") } else { format!("{per_side} a side") };
    format!("T5: {} buckets ({side}, {} exact), max distance {}, {}", b.count, per_side / 2, b.max_distance, if causal { "causal" } else { "bidirectional" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use relattn_core::positions::t5::Buckets;

    /// The staircase against T5's definition written out in f64 (exact, logarithmic, capped) for both maskings.
    #[test]
    fn the_staircase_is_the_bucket_definition() {
        let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::T5, heads: 2, ..Default::default() };
        let tables = ndarray::Array3::from_shape_fn((2, 32, 1), |(h, r, _)| (h * 100 + r) as f32);
        let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 8, d_model: 16, d_head: 16 / cfg.heads };
        let pics = pictures(&inputs);
        let super::super::Body::Curves(c) = &pics[0].body else { panic!("curves") };
        let reference = |d: i64, causal: bool| -> f64 {
            let per_side = if causal { 32.0 } else { 16.0 };
            let exact = per_side / 2.0;
            let (offset, n) = if causal { (0.0, (-d).max(0) as f64) } else { (if d > 0 { per_side } else { 0.0 }, d.abs() as f64) };
            if n < exact {
                return offset + n;
            }
            offset + (exact + ((n / exact).ln() / (128.0 / exact).ln() * (per_side - exact)).floor()).min(per_side - 1.0)
        };
        for (s, causal) in c.series.iter().zip([false, true]) {
            assert_eq!(s.points.len(), 2 * 192 + 1);
            for p in &s.points {
                assert_eq!(p[1] as f64, reference(p[0] as i64, causal), "d {} causal {causal}", p[0]);
            }
        }
        assert!(c.series[0].label.contains("this layer"));
        let super::super::Body::Heatmap { values, .. } = &pics[1].body else { panic!("heatmap") };
        assert_eq!((values.dim(), values[[1, 3]]), ((2, 32), 103.0));
        assert_eq!(stated(&inputs), "T5: 32 buckets (16 a side, 8 exact), max distance 128, bidirectional");
        // Rows labelled by head; one table shared by 8 heads is one row for all of them.
        let super::super::Body::Heatmap { y_labels, .. } = &pics[1].body else { panic!("heatmap") };
        assert_eq!(y_labels, &["0", "1"]);
        let (shared, eight) = (tables.slice(ndarray::s![..1, .., ..]).to_owned(), relattn_core::attention::Config { heads: 8, ..cfg });
        let super::super::Body::Heatmap { y_labels, .. } = &pictures(&Inputs { config: &eight, tables: &shared, ..inputs })[1].body else { panic!("heatmap") };
        assert_eq!(y_labels, &["all 8"]);
        // An odd count is causal only: one curve.
        let odd = relattn_core::attention::Config { buckets: Buckets { count: 7, max_distance: 20 }, causal: true, ..cfg };
        let inputs = Inputs { config: &odd, ..inputs };
        let super::super::Body::Curves(c) = &pictures(&inputs)[0].body else { panic!("curves") };
        assert_eq!(c.series.len(), 1);
    }
}
