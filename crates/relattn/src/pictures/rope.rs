//! RoPE's pictures: one pair of q turning with position, the kernel against distance for several bases and
//! fractions, and which components the two pair layouts turn together.
//!
//! ```text
//! (q'_a, q'_b) at position m = R(φ_mp) (r, 0),   φ_mp = m θ_p / s,   θ_p = base^(−2p/d_rot)
//! κ(d) = (Σ_p 2 cos(d θ_p / s) + d_head − d_rot) / d_head
//! interleaved: pair of component c = ⌊c/2⌋;   half: c mod d_rot/2;   c ≥ d_rot: not rotated (−1)
//! ```

use super::{Inputs, Picture, Text};
use crate::render::{Chart, Series};
use ndarray::Array2;
use relattn_core::positions::rope::{PairLayout, Rope, RopeTable};
use relattn_core::stage::{Scale, StageText};

pub const TURN: Text = Text {
    name: "rope_pair_turn",
    text: StageText::new(
        "A pair of q turning",
        "(q'_a, q'_b) at position m = R(φ_mp) (r, 0), φ_mp = m θ_p / s: the three fastest pairs at radii 1, 3/4, 1/2",
        r"\begin{pmatrix} q'_a \\ q'_b \end{pmatrix} = \begin{pmatrix} \cos\varphi_{mp} & -\sin\varphi_{mp} \\ \sin\varphi_{mp} & \cos\varphi_{mp} \end{pmatrix} \begin{pmatrix} r \\ 0 \end{pmatrix}, \quad \varphi_{mp} = \frac{m\,\theta_p}{s}",
        "Each dot is the same pair of q one position later: the fastest pair turns θ_0/s radians a step (1 by default, round the circle in 6.3 positions), each next pair base^(−2/d_rot) times slower. Lengths never change: RoPE only turns, and a key turned the same way keeps its angle to the query, so q'·k' depends on j − i alone.",
    )
    .on("component a of the pair", "component b of the pair"),
};

pub const KERNELS: Text = Text {
    name: "rope_kernel_curves",
    text: StageText::new(
        "RoPE's kernel against distance",
        "κ(d) = (Σ_p 2 cos(d θ_p / s) + d_head − d_rot) / d_head, θ_p = base^(−2p/d_rot)",
        r"\kappa(d) = \frac{1}{d_h}\Bigl(\sum_p 2 \cos\bigl(d\,\theta_p / s\bigr) + d_h - d_{rot}\Bigr), \quad \theta_p = \text{base}^{-2p/d_{rot}}",
        "Every curve is 1 at d = 0 and falls as the pairs drift out of step: a small base falls and ripples within a few positions (short reach), a large one stays high far longer; rotating only a fraction of the components leaves a floor of (d_head − d_rot)/d_head that no distance removes.",
    )
    .on("distance d = j − i", "κ(d)"),
};

pub const LAYOUTS: Text = Text {
    name: "rope_layouts",
    text: StageText::new(
        "RoPE's two pair layouts",
        "pair of component c: interleaved ⌊c/2⌋, half c mod (d_rot/2); −1: not rotated (c ≥ d_rot)",
        r"p(c) = \begin{cases} \lfloor c/2 \rfloor & \text{interleaved } (2p,\ 2p+1) \\ c \bmod d_{rot}/2 & \text{half } (p,\ p + d_{rot}/2) \\ -1 & c \ge d_{rot} \text{ (not rotated)} \end{cases}",
        "Equal numbers turn together. The paper and GPT-J pair neighbours (2p, 2p + 1); GPT-NeoX, Llama and Mistral pair c with c + d_rot/2. The maths is the same, but weights trained with one layout give wrong attention with the other: the subtitle of every slide says which this layer uses.",
    )
    .on("component c of q (d_head)", "layout"),
};

/// The pairs shown turning: the three fastest (fewer when d_rot/2 is smaller).
const TURNING_PAIRS: usize = 3;

/// How many positions the turning pairs are drawn at: the fastest pair, at 1 radian a step, about twice round.
const TURN_POSITIONS: usize = 12;

/// The fastest pair's dots are numbered up to here (one turn); the others' last dot says how far they got.
const NUMBERED: usize = 7;

/// The distances the kernels are drawn to: the layer's n − 1, at least 64, at most 4096.
fn kernel_reach(n: usize) -> usize {
    n.saturating_sub(1).clamp(64, 4096)
}

/// RoPE's pictures of a layer (its table of positions 0 .. n: the options', or a model's own).
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let Some(table) = inputs.rope else { return Vec::new() };
    let d_head = inputs.d_head;
    vec![turn(table, inputs.n), kernels(table, inputs, d_head), layouts(&table.rope, d_head)]
}

fn turn(table: &RopeTable, n: usize) -> Picture {
    let pairs = table.cos.ncols();
    let positions = n.min(TURN_POSITIONS).min(table.cos.nrows());
    let series = (0..pairs.min(TURNING_PAIRS))
        .zip([1.0f32, 0.75, 0.5])
        .map(|(p, r)| {
            let points: Vec<[f32; 2]> = (0..positions).map(|m| [r * table.cos[[m, p]], r * table.sin[[m, p]]]).collect();
            let labels =
                (0..positions).map(|m| if (p == 0 && m < NUMBERED) || (p > 0 && m + 1 == positions) { format!("m={m}") } else { String::new() }).collect();
            let theta = if positions > 1 { table.angles[[1, p]] - table.angles[[0, p]] } else { 0.0 };
            Series { label: format!("pair {p} (r = {r}): {} rad a step", crate::render::short(theta)), points, markers: true, labels }
        })
        .collect();
    TURN.curves(Chart { series, equal_axes: true })
}

fn kernels(table: &RopeTable, inputs: &Inputs, d_head: usize) -> Picture {
    let own = table.rope;
    let curve = |label: String, k: ndarray::Array1<f32>| Series {
        label,
        points: k.iter().enumerate().map(|(d, &v)| [d as f32, v]).collect(),
        markers: false,
        labels: vec![],
    };
    let reach = kernel_reach(inputs.n);
    let of_options = |rope: Rope| rope.table(0, reach + 1, d_head).kernel(0..=reach as isize, d_head);
    let mut series = vec![if table.given {
        curve("this layer (the model's own table)".into(), table.kernel(0..inputs.n as isize, d_head))
    } else {
        curve(format!("this layer: base {}, fraction {}", own.base, own.fraction), of_options(own))
    }];
    // The same layer with a smaller and a larger base, and with a quarter of its components rotated.
    let variants = [Rope { base: 100.0, ..own }, Rope { base: 1e6, ..own }, Rope { fraction: own.fraction / 4.0, ..own }];
    for rope in variants.into_iter().filter(|r| *r != own && r.check(d_head).is_ok()) {
        series.push(curve(format!("base {}, fraction {}", rope.base, rope.fraction), of_options(rope)));
    }
    KERNELS.curves(Chart { series, equal_axes: false })
}

fn layouts(rope: &Rope, d_head: usize) -> Picture {
    let d_rot = rope.rotated_dims(d_head);
    let layouts = [PairLayout::Interleaved, PairLayout::Half];
    let mut values = Array2::from_elem((2, d_head), -1.0f32);
    for (row, layout) in layouts.into_iter().enumerate() {
        let r = Rope { layout, ..*rope };
        for p in 0..d_rot / 2 {
            let (a, b) = r.pair(p, d_rot);
            values[[row, a]] = p as f32;
            values[[row, b]] = p as f32;
        }
    }
    let mark = |layout: PairLayout| if layout == rope.layout { " ← this layer" } else { "" };
    let y_labels = vec![format!("interleaved{}", mark(PairLayout::Interleaved)), format!("half{}", mark(PairLayout::Half))];
    LAYOUTS.heatmap(Scale::Sequential, values, super::index_labels(0..d_head as isize), y_labels)
}

/// "RoPE: base 10000, rotated fraction 1 (d_rot 64 of d_head 64), interleaved pairs (2p, 2p + 1), positions ÷ 1",
/// or the model's own table.
pub fn stated(inputs: &Inputs) -> String {
    let d_head = inputs.d_head;
    let rope = inputs.rope.map_or(inputs.config.rope, |t| t.rope);
    let d_rot = rope.rotated_dims(d_head);
    let layout = match rope.layout {
        PairLayout::Interleaved => "interleaved pairs (2p, 2p + 1)",
        PairLayout::Half => "half pairs (p, p + d_rot/2)",
    };
    if inputs.rope.is_some_and(|t| t.given) {
        return format!("RoPE: the model's own cos and sin (its scaling included), d_rot {d_rot} of d_head {d_head}, {layout}");
    }
    format!("RoPE: base {}, rotated fraction {} (d_rot {d_rot} of d_head {d_head}), {layout}, positions ÷ {}", rope.base, rope.fraction, rope.scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pictures against their definitions in f64: the dots lie on their circles at angle m·θ_p; the
    /// kernel is Σ cos / d_head; every component is in one pair of each layout, twice per pair.
    #[test]
    fn pictures_match_their_definitions() {
        let (n, d_head) = (10, 8);
        let rope = Rope { base: 10000.0, ..Rope::default() };
        let table = rope.table(0, n, d_head);
        let t = turn(&table, n);
        let super::super::Body::Curves(chart) = &t.body else { panic!("curves") };
        assert_eq!(chart.series.len(), 3, "pairs 0, 1, 2");
        for (s, (p, r)) in chart.series.iter().zip([(0usize, 1.0f64), (1, 0.75), (2, 0.5)]) {
            for (m, pt) in s.points.iter().enumerate() {
                let a = m as f64 * 10000f64.powf(-2.0 * p as f64 / 8.0);
                assert!((pt[0] as f64 - r * a.cos()).abs() < 1e-5 && (pt[1] as f64 - r * a.sin()).abs() < 1e-5, "pair {p} at {m}");
            }
        }
        let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::Rope, heads: 2, ..Default::default() };
        let tables = ndarray::Array3::zeros((1, 0, 1));
        let inputs = Inputs { config: &cfg, tables: &tables, rope: Some(&table), positions: None, n, d_model: 16, d_head: 16 / cfg.heads };
        let k = kernels(&table, &inputs, d_head);
        let super::super::Body::Curves(chart) = &k.body else { panic!("curves") };
        let own = &chart.series[0];
        assert_eq!(own.points.len(), 65, "to distance 64");
        for pt in &own.points {
            let d = pt[0] as f64;
            let want: f64 = (0..4).map(|p| 2.0 * (d * 10000f64.powf(-2.0 * p as f64 / 8.0)).cos()).sum::<f64>() / 8.0;
            assert!((pt[1] as f64 - want).abs() < 1e-5, "κ({d})");
        }
        // A quarter of 8 components is one pair: the floor of 6/8 is reached.
        let quarter = chart.series.iter().find(|s| s.label.contains("fraction 0.25")).expect("a quarter rotated");
        assert!(quarter.points.iter().all(|p| p[1] >= 0.75 - 0.25 - 1e-6));
        let l = layouts(&Rope { fraction: 0.5, ..rope }, d_head);
        let super::super::Body::Heatmap { values, y_labels, .. } = &l.body else { panic!("heatmap") };
        assert_eq!(values.row(0).to_vec(), [0.0, 0.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0]);
        assert_eq!(values.row(1).to_vec(), [0.0, 1.0, 0.0, 1.0, -1.0, -1.0, -1.0, -1.0]);
        assert!(y_labels[0].contains("this layer") && !y_labels[1].contains("this layer"));
        assert!(stated(&inputs).contains("base 10000, rotated fraction 1 (d_rot 8 of d_head 8), interleaved"));
    }
}
