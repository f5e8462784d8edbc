//! ALiBi's pictures: the slope of every head, and every head's bias against distance on one colour scale.
//!
//! ```text
//! m_h = 2^(−8(h+1)/H), h = 0 … H − 1 (the layer's own slopes when it was captured)
//! bias_h(d) = m_h · d causal (d = j − i ≤ 0),   −m_h · |d| bidirectional
//! ```

use super::{Inputs, Picture, Text};
use crate::render::{short, Chart, Series};
use ndarray::Array2;
use relattn_core::positions::alibi;
use relattn_core::stage::{Scale, StageText};

pub const SLOPES: Text = Text {
    name: "alibi_slope_by_head",
    text: StageText::new(
        "ALiBi's slope per head",
        "m_h = 2^(−8(h+1)/H), h = 0 … H − 1: a geometric sequence from 2^(−8/H) down to 2^(−8)",
        r"m_h = 2^{-8(h+1)/H}, \quad h = 0, \dots, H - 1",
        "Each head halves (for 8 heads) the slope of the one before: head 0 penalises every step of distance steeply and attends nearby, the last head barely at all and sees the whole context. Nothing here is learned; the values are written at the dots.",
    )
    .on("head h", "slope m_h"),
};

pub const BIAS_BY_HEAD: Text = Text {
    name: "alibi_bias_by_head",
    text: StageText::new(
        "Every head's ALiBi bias",
        "bias_h(d) = m_h · d (causal, d ≤ 0) or −m_h · |d| (bidirectional), d = j − i",
        r"b_h(d) = \begin{cases} m_h\, d & \text{causal},\ d = j - i \le 0 \\ -m_h\, |d| & \text{bidirectional} \end{cases}",
        "One row per head, one colour scale for all: the first head's bias falls off within a few positions while the last head's stays near 0 across the whole window. That spread of reaches is the point of the slopes.",
    )
    .on("distance d = j − i", "head h"),
};

/// The layer's slopes: its table (h, 1, 1).
fn slopes(inputs: &Inputs) -> Vec<f32> {
    inputs.tables.iter().copied().collect()
}

/// ALiBi's pictures of a layer.
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let m = slopes(inputs);
    let n = inputs.n as isize;
    let causal = inputs.config.causal;
    let own = Series {
        label: "this layer's slopes".into(),
        points: m.iter().enumerate().map(|(h, &s)| [h as f32, s]).collect(),
        markers: true,
        labels: m.iter().map(|&s| short(s)).collect(),
    };
    let mut series = vec![own];
    // Slopes given by a model that differ from the paper's rule are drawn against it.
    let rule = alibi::slopes(m.len());
    if rule.iter().zip(&m).any(|(a, b)| (a - b).abs() > 1e-6 * a.abs()) {
        series.push(Series {
            label: "the paper's 2^(−8(h+1)/H)".into(),
            points: rule.iter().enumerate().map(|(h, &s)| [h as f32, s]).collect(),
            markers: false,
            labels: vec![],
        });
    }
    let distances = if causal { 1 - n..1 } else { 1 - n..n };
    let bias = Array2::from_shape_fn((m.len(), distances.len()), |(h, c)| alibi::bias(m[h], distances.start + c as isize, causal));
    let heads = super::index_labels(0..m.len() as isize);
    vec![SLOPES.curves(Chart { series, equal_axes: false }), BIAS_BY_HEAD.heatmap(Scale::Diverging, bias, super::index_labels(distances), heads)]
}

/// "ALiBi: 8 heads, slopes 2^(−8(h+1)/8) = 0.500 … 3.91e-3, causal: m_h · (j − i)".
pub fn stated(inputs: &Inputs) -> String {
    let m = slopes(inputs);
    let h = m.len();
    let given = alibi::slopes(h).iter().zip(&m).any(|(a, b)| (a - b).abs() > 1e-6 * a.abs());
    let (first, last) = (m.first().copied().unwrap_or(0.0), m.last().copied().unwrap_or(0.0));
    let rule = if given { "the model's own slopes".to_string() } else { format!("slopes 2^(−8(h+1)/{h})") };
    let bias = if inputs.config.causal { "causal: m_h · (j − i)" } else { "bidirectional: −m_h · |j − i|" };
    format!("ALiBi: {h} heads, {rule} = {} … {}, {bias}", short(first), short(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bias picture is m_h·d or −m_h·|d| in f64 at every (head, distance); the slopes are the layer's.
    #[test]
    fn the_bias_is_every_heads_slope_times_the_distance() {
        for causal in [true, false] {
            let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::Alibi, heads: 8, causal, ..Default::default() };
            let tables = ndarray::Array3::from_shape_vec((8, 1, 1), alibi::slopes(8)).unwrap();
            let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 5, d_model: 16, d_head: 16 / cfg.heads };
            let pics = pictures(&inputs);
            let super::super::Body::Curves(c) = &pics[0].body else { panic!("curves") };
            assert_eq!(c.series.len(), 1, "the paper's slopes: no second curve");
            assert_eq!(c.series[0].labels[0], "0.500");
            let super::super::Body::Heatmap { values, x_labels, .. } = &pics[1].body else { panic!("heatmap") };
            assert_eq!(values.dim(), (8, if causal { 5 } else { 9 }));
            for ((h, c), v) in values.indexed_iter() {
                let d: f64 = x_labels[c].parse().unwrap();
                let m = 2f64.powf(-8.0 * (h + 1) as f64 / 8.0);
                let want = if causal { m * d } else { -m * d.abs() };
                assert!((*v as f64 - want).abs() < 1e-6, "head {h}, d {d}");
            }
            assert!(stated(&inputs).starts_with("ALiBi: 8 heads, slopes 2^(−8(h+1)/8) = 0.500 … 3.91e-3"), "{}", stated(&inputs));
        }
        // A model's own slopes are drawn against the paper's rule.
        let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::Alibi, heads: 2, ..Default::default() };
        let tables = ndarray::Array3::from_shape_vec((2, 1, 1), vec![0.3, 0.1]).unwrap();
        let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 4, d_model: 8, d_head: 8 / cfg.heads };
        let super::super::Body::Curves(c) = &pictures(&inputs)[0].body else { panic!("curves") };
        assert_eq!(c.series.len(), 2);
        assert!(stated(&inputs).contains("the model's own slopes"));
    }
}
