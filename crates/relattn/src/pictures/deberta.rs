//! DeBERTa's picture: the bucket map, the signed bucket each distance δ = i − j reads (its table row r less S),
//! beside the same layer without buckets (δ clipped to ±P), where its exact and log parts end written on it. The
//! core's [`Deberta::row`] gives every point (the formula is [`deberta::ROW_FORMULA`]):
//!
//! ```text
//! m = position_buckets / 2, P = max_relative_positions, S = position_buckets (P without buckets)
//! r(δ) − S = δ                               |δ| ≤ m          exact: one row per distance
//!          = ±(⌈ln(|δ|/m) / ln((P − 1)/m) · (m − 1)⌉ + m)    m < |δ| ≤ P − 1: log steps, reaching ±(S − 1) at P − 1
//!          = S − 1 or −S                     beyond           the table's edge rows
//! ```
//!
//! Where it differs from T5's staircase ([`super::t5`]): the sign is kept (bucket(−δ) = −bucket(δ): keys before and
//! after the query read rows mirrored about the middle row S of one table, where T5 gives each side a half of its
//! buckets of its own, both counting up with |d|, and a causal layer all of them), the exact part reaches |δ| = m,
//! and the log steps are rounded up (T5's down).

use super::{Inputs, Picture, Text};
use crate::render::{Chart, Series};
use relattn_core::positions::deberta::{self, Deberta, Terms};
use relattn_core::stage::StageText;

pub const BUCKETS: Text = Text {
    name: "deberta_buckets",
    text: StageText::new(
        "DeBERTa's log buckets: the row of i − j",
        deberta::ROW_FORMULA,
        deberta::ROW_TEX,
        "Mirrored about the middle row S, where T5 gives each side its own half of its buckets: one row per distance up to |δ| = m = buckets/2, then log steps rounded up (T5 rounds down) to max_relative_positions − 1, then the edge rows. Without buckets the line runs on to ±P.",
    )
    .on("δ = i − j (query − key)", "bucket: table row r − S"),
};

/// The distances drawn: to 1.5 × max_relative_positions either side (at most 8192), so that the edge rows show.
fn reach(d: &Deberta) -> isize {
    (d.max_relative_positions * 3 / 2).clamp(8, 8192) as isize
}

/// The signed bucket a pair at δ reads under `d`: its table row less the span.
fn read(d: &Deberta, delta: isize) -> f32 {
    (d.row(delta) as isize - d.span() as isize) as f32
}

/// DeBERTa's picture of a layer.
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let d = inputs.config.deberta;
    let r = reach(&d);
    let curve = |d: &Deberta, label: String| Series { label, points: (-r..=r).map(|x| [x as f32, read(d, x)]).collect(), markers: false, labels: vec![] };
    let p = d.max_relative_positions;
    let mut series = Vec::new();
    if d.position_buckets > 0 {
        let m = d.position_buckets / 2;
        let mut map = curve(&d, format!("log buckets, m {m}, P {p} (this layer)"));
        // Where the exact part ends (m) and where the log steps reach the table's edge (−(P − 1), on the side the
        // legend leaves free), written there.
        let bounds = [(m as isize, format!("δ = m = {m}")), (1 - p as isize, format!("δ = −(P − 1) = −{}", p - 1))];
        map.labels = map.points.iter().map(|q| bounds.iter().find(|(x, _)| *x as f32 == q[0]).map(|(_, t)| t.clone()).unwrap_or_default()).collect();
        // The straight line first, under the layer's map.
        series.push(curve(&Deberta { position_buckets: 0, ..d }, format!("no buckets: δ clipped to ±{p}")));
        series.push(map);
    } else {
        series.push(curve(&d, format!("no buckets: δ clipped to ±{p} (this layer)")));
    }
    vec![BUCKETS.curves(Chart { series, equal_axes: false })]
}

/// "DeBERTa: 256 log buckets up to 512 (tables of 512 rows), c2p + p2c, bidirectional".
pub fn stated(inputs: &Inputs, masking: &str) -> String {
    let d = inputs.config.deberta;
    let rows = match d.position_buckets {
        0 => format!("δ = i − j clipped to ±{} (tables of {} rows)", d.max_relative_positions, d.rows()),
        b => format!("{b} log buckets up to {} (tables of {} rows)", d.max_relative_positions, d.rows()),
    };
    let terms = match d.terms {
        Terms::Both => "c2p + p2c",
        Terms::C2p => "c2p only",
        Terms::P2c => "p2c only",
    };
    format!("DeBERTa: {rows}, {terms}, {masking}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use relattn_core::attention::Config;
    use relattn_core::positions::Method;

    fn drawn(d: Deberta) -> (Chart, String) {
        let cfg = Config { method: Method::Deberta, deberta: d, heads: 2, ..Config::default() };
        let tables = ndarray::Array3::zeros((1, d.rows(), 2 * 8));
        let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 8, d_model: 16, d_head: 8 };
        let pictures = pictures(&inputs);
        assert_eq!(pictures.len(), 1);
        let super::super::Body::Curves(chart) = &pictures[0].body else { panic!("curves") };
        (chart.clone(), stated(&inputs, "bidirectional"))
    }

    /// DeBERTa-v3's map (256 buckets, P 512), every point the core's row of δ less S: exact inside ±m, odd and
    /// below the line beyond it up to ±(P − 1), then the edge rows; the straight line beside it is δ clipped to
    /// ±P (rows 0 … 2P − 1); the bounds are written on the map.
    #[test]
    fn the_map_is_the_cores_row_of_each_distance() {
        let d = Deberta::default();
        let (chart, stated) = drawn(d);
        let [straight, map] = &chart.series[..] else { panic!("two series: {:?}", chart.series.len()) };
        assert!(map.label.ends_with("(this layer)"));
        assert_eq!(map.points.len(), 2 * 768 + 1);
        let (m, p) = (128isize, 512isize);
        for pt in &map.points {
            let delta = pt[0] as isize;
            assert_eq!(pt[1], (d.row(delta) as isize - 256) as f32, "δ {delta}");
            let b = pt[1] as isize;
            if delta.abs() <= m {
                assert_eq!(b, delta, "exact at δ {delta}");
            } else if delta.abs() < p {
                assert!(b.abs() > m && b.abs() <= delta.abs(), "log steps at δ {delta}: {b}");
                assert_eq!(map.points.iter().find(|q| q[0] as isize == -delta).unwrap()[1] as isize, -b, "odd at δ {delta}");
            } else if delta >= p {
                assert_eq!(b, 255, "the last row at δ {delta}");
            } else if delta <= -p - 16 {
                assert_eq!(b, -256, "the first row at δ {delta}");
            }
        }
        assert!(map.points.windows(2).all(|w| w[1][1] >= w[0][1]), "never decreasing");
        for pt in &straight.points {
            assert_eq!(pt[1] as isize, (pt[0] as isize).clamp(-p, p - 1), "δ {}", pt[0]);
        }
        let labelled: Vec<(isize, &str)> =
            map.points.iter().zip(&map.labels).filter(|(_, t)| !t.is_empty()).map(|(q, t)| (q[0] as isize, t.as_str())).collect();
        assert_eq!(labelled, [(-(p - 1), "δ = −(P − 1) = −511"), (m, "δ = m = 128")]);
        assert_eq!(stated, "DeBERTa: 256 log buckets up to 512 (tables of 512 rows), c2p + p2c, bidirectional");
    }

    /// Without buckets the layer's own line is the only one: δ clipped to ±P, drawn to 1.5 P.
    #[test]
    fn without_buckets_the_line_is_clipped() {
        let d = Deberta { position_buckets: 0, max_relative_positions: 6, terms: Terms::C2p };
        let (chart, stated) = drawn(d);
        assert_eq!(chart.series.len(), 1);
        let points: Vec<[f32; 2]> = chart.series[0].points.clone();
        assert_eq!(points.len(), 2 * 9 + 1);
        assert!(points.iter().all(|q| q[1] as isize == (q[0] as isize).clamp(-6, 5)));
        assert_eq!(stated, "DeBERTa: δ = i − j clipped to ±6 (tables of 12 rows), c2p only, bidirectional");
    }
}
