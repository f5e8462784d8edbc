//! Rotary position embeddings (RoPE; Su et al. 2021, "RoFormer"): rotate each pair of components of q and k by an angle proportional to the position, so
//! that q_i · k_j depends on the positions only through j − i. With d_rot = the rotated components of d_head ([`Rope::fraction`]), p = 0 .. d_rot/2 − 1
//! and the position m divided by the scale s (linear position interpolation, [`Rope::scale`]):
//!
//! ```text
//! θ_p      = base^(−2p / d_rot)                                   frequencies (base 10000)
//! φ_mp     = (m / s) · θ_p                                        the angle table (position × pair)
//! (x_a, x_b) → (x_a cos φ − x_b sin φ,  x_b cos φ + x_a sin φ)     pair p of row m; components past d_rot unrotated
//! q'_i · k'_j = Σ_p Re[(q_ia + i q_ib)(k_ja − i k_jb) e^{−i (j − i) θ_p / s}] + unrotated part
//! ```
//!
//! Pair (a, b) of p: (2p, 2p + 1) *interleaved* (the paper, GPT-J), (p, p + d_rot/2) *half-split* (GPT-NeoX, Llama): the same weights give different numbers.

use crate::error::{Error, Result};
use crate::stage::{PairLabels, Stage, StageText, COMPONENT_AXIS, KEY_AXIS, LOGITS_TITLE, QUERY_AXIS};
use ndarray::{Array1, Array2, ArrayView2};
use std::f64::consts::{PI, TAU};
use std::str::FromStr;

/// Which components form a rotated pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum PairLayout {
    /// (2p, 2p + 1): the paper, GPT-J, Mesh-TensorFlow.
    Interleaved,
    /// (p, p + d_rot/2): GPT-NeoX, Llama, Mistral, Qwen (Hugging Face's `rotate_half`).
    Half,
}

/// RoPE's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rope {
    /// θ_p = base^(−2p/d_rot): 10000 in the paper, Llama 1–2, GPT-NeoX.
    pub base: f32,
    /// The rotated share of d_head (GPT-NeoX's `rotary_pct`, 0.25 in NeoX-20B; 1 elsewhere).
    pub fraction: f32,
    pub layout: PairLayout,
    /// Positions are divided by this (linear position interpolation, as Hugging Face's `rope_scaling = {"type": "linear"}`:
    /// 2 stretches a model to twice its context).
    pub scale: f32,
}

impl Default for Rope {
    fn default() -> Self {
        Rope { base: 10000.0, fraction: 1.0, layout: PairLayout::Interleaved, scale: 1.0 }
    }
}

/// The allowed ranges of the options, as messages say them.
pub const BASE_RANGE: (f32, f32) = (1.0, 1e9);
pub const SCALE_RANGE: (f32, f32) = (0.01, 1000.0);

impl Rope {
    /// d_rot: `fraction · d_head` rounded down (GPT-NeoX: `int(d_head · rotary_pct)`), which [`Rope::check`]
    /// requires to be even; an odd count is taken down to even here so that no pair is half outside.
    pub fn rotated_dims(&self, d_head: usize) -> usize {
        self.rotated_components(d_head) & !1
    }

    /// `⌊fraction · d_head⌋`, before it is made even.
    fn rotated_components(&self, d_head: usize) -> usize {
        (d_head as f32 * self.fraction) as usize
    }

    /// Refuses options outside their ranges, naming the option; `d_head` must leave at least one pair.
    pub fn check(&self, d_head: usize) -> Result<()> {
        let finite_in = |name: &str, v: f32, (lo, hi): (f32, f32), open_low: bool| {
            let ok = v.is_finite() && if open_low { v > lo } else { v >= lo } && v <= hi;
            let low = if open_low { format!("above {lo}") } else { format!("from {lo}") };
            if ok {
                Ok(())
            } else {
                Err(Error::invalid(name, v.to_string(), format!("{low} to {hi}")))
            }
        };
        finite_in("rope_base", self.base, BASE_RANGE, true)?;
        finite_in("rope_scale", self.scale, SCALE_RANGE, false)?;
        finite_in("rope_fraction", self.fraction, (0.0, 1.0), true)?;
        if d_head < 2 {
            return Err(Error::invalid("heads", format!("d_head = d_model / heads = {d_head}"), "a d_head of 2 or more: RoPE rotates pairs of components"));
        }
        if self.rotated_dims(d_head) < 2 {
            let least = 2.0 / d_head as f32;
            return Err(Error::invalid("rope_fraction", self.fraction.to_string(), format!("at least {least} so that d_head {d_head} has a rotated pair")));
        }
        let rotated = self.rotated_components(d_head);
        if !rotated.is_multiple_of(2) {
            let given = format!("{} ({rotated} of d_head {d_head}'s components, an odd number)", self.fraction);
            return Err(Error::invalid("rope_fraction", given, "a fraction that rotates an even number of components (whole pairs)"));
        }
        Ok(())
    }

    /// θ_p for p in 0..d_rot/2, computed as Hugging Face does in f32: `1 / base^(2p / d_rot)`.
    pub fn frequencies(&self, d_head: usize) -> Array1<f32> {
        let d_rot = self.rotated_dims(d_head);
        Array1::from_shape_fn(d_rot / 2, |p| 1.0 / self.base.powf((2 * p) as f32 / d_rot as f32))
    }

    /// The angle table φ (positions, d_rot/2) for positions `first .. first + count` (negative for queries
    /// before the first key, when there are more queries than keys). As Hugging Face's linear scaling, the
    /// frequency is divided by the scale: φ = m · (θ_p / s).
    pub fn angles(&self, first: isize, count: usize, d_head: usize) -> Array2<f32> {
        let theta = self.frequencies(d_head);
        Array2::from_shape_fn((count, theta.len()), |(m, p)| (first + m as isize) as f32 * (theta[p] / self.scale))
    }

    /// The components (a, b) of pair p.
    pub fn pair(&self, p: usize, d_rot: usize) -> (usize, usize) {
        match self.layout {
            PairLayout::Interleaved => (2 * p, 2 * p + 1),
            PairLayout::Half => (p, p + d_rot / 2),
        }
    }

    /// cos φ and sin φ of [`Rope::angles`] for positions `first .. first + count`: what [`Rope::rotate`] turns
    /// by, and what the GPU's rope.wgsl is given, so that both backends rotate by the same numbers. Hugging
    /// Face takes cos and sin of the f32 angle in f32; f64 then rounded is as close.
    pub fn table(&self, first: isize, count: usize, d_head: usize) -> RopeTable {
        let angles = self.angles(first, count, d_head);
        RopeTable { rope: *self, first, cos: angles.mapv(|a| (a as f64).cos() as f32), sin: angles.mapv(|a| (a as f64).sin() as f32), angles, given: false }
    }

    /// x (rows, d_head) with row r at position `first + r`, each pair rotated by its angle.
    pub fn rotate(&self, x: ArrayView2<f32>, first: isize) -> Array2<f32> {
        self.table(first, x.nrows(), x.ncols()).rotate(x, first)
    }
}

/// The cos and sin of a range of positions, computed once and used for every head of a layer (and for both
/// its queries and keys): made from [`Rope`]'s options ([`Rope::table`]), or a model's own
/// ([`RopeTable::given`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RopeTable {
    pub rope: Rope,
    /// The position of row 0.
    pub first: isize,
    /// (positions, d_rot/2) each.
    pub cos: Array2<f32>,
    pub sin: Array2<f32>,
    /// φ (positions, d_rot/2): the angles cos and sin are of (the `rope_angles` stage).
    pub angles: Array2<f32>,
    /// A model's own table ([`RopeTable::given`]), not made from the options.
    pub given: bool,
}

impl RopeTable {
    /// A model's own cos and sin (positions 0 .. n, d_rot/2) as Hugging Face's rotary embedding gives them
    /// (its `cos[..., :d_rot/2]`, whatever its `rope_scaling`: linear, dynamic NTK, YaRN, Llama 3, with the
    /// attention scaling they carry), rotating pairs as `rope` says (its layout and fraction; its base and
    /// scale are not used). The angles are read back as atan2(sin, cos) unwrapped along the positions (each
    /// step between neighbours taken within ±π: every frequency turns at most θ_0 = 1 radian a position).
    pub fn given(rope: Rope, cos: Array2<f32>, sin: Array2<f32>) -> RopeTable {
        let mut angles = Array2::zeros(cos.dim());
        for p in 0..cos.ncols() {
            let mut last = 0f64;
            for m in 0..cos.nrows() {
                let wrapped = (sin[[m, p]] as f64).atan2(cos[[m, p]] as f64);
                let step = (wrapped - last + PI).rem_euclid(TAU) - PI;
                last = if m == 0 { wrapped } else { last + step };
                angles[[m, p]] = last as f32;
            }
        }
        RopeTable { rope, first: 0, cos, sin, angles, given: true }
    }

    /// The relative kernel: the logit of the pair q = k = (1, …, 1) at each distance d = j − i in `distances`,
    /// divided by d_head: `(Σ_p 2 (cos φ_0p cos φ_|d|p + sin φ_0p sin φ_|d|p) + (d_head − d_rot)) / d_head`,
    /// which is `(Σ_p 2 cos(d θ_p / s) + d_head − d_rot) / d_head` for a table made from the options: 1 at
    /// d = 0 and, for every (q, k), a function of d alone. Its decay with |d| is the long-distance decay of Su
    /// et al.'s §3.4.3. The table must hold positions 0 and every |d|.
    pub fn kernel(&self, distances: impl Iterator<Item = isize>, d_head: usize) -> Array1<f32> {
        let unrotated = (d_head - 2 * self.cos.ncols()) as f64;
        let row = |position: usize| (position as isize - self.first) as usize;
        let (c0, s0) = (self.cos.row(row(0)), self.sin.row(row(0)));
        distances
            .map(|d| {
                let (c, s) = (self.cos.row(row(d.unsigned_abs())), self.sin.row(row(d.unsigned_abs())));
                let rotated: f64 = (0..c.len()).map(|p| 2.0 * (c0[p] as f64 * c[p] as f64 + s0[p] as f64 * s[p] as f64)).sum();
                ((rotated + unrotated) / d_head as f64) as f32
            })
            .collect()
    }

    /// Whether the table holds positions `first .. first + count` for heads of width `d_head`.
    pub fn covers(&self, first: isize, count: usize, d_head: usize) -> bool {
        first >= self.first && first + count as isize <= self.first + self.cos.nrows() as isize && self.cos.ncols() == self.rope.rotated_dims(d_head) / 2
    }

    /// x (rows, d_head) with row r at position `first + r`, each pair rotated; the table must cover them.
    pub fn rotate(&self, x: ArrayView2<f32>, first: isize) -> Array2<f32> {
        let d_rot = self.rope.rotated_dims(x.ncols());
        let from = (first - self.first) as usize;
        let rows = from..from + x.nrows();
        let mut out = x.to_owned();
        let (cos, sin) = (self.cos.slice(ndarray::s![rows.clone(), ..]), self.sin.slice(ndarray::s![rows, ..]));
        for ((mut row, cos), sin) in out.outer_iter_mut().zip(cos.outer_iter()).zip(sin.outer_iter()) {
            for (p, (&cos, &sin)) in cos.iter().zip(sin.iter()).enumerate() {
                let (a, b) = self.rope.pair(p, d_rot);
                let (xa, xb) = (row[a], row[b]);
                row[a] = xa * cos - xb * sin;
                row[b] = xb * cos + xa * sin;
            }
        }
        out
    }
}

impl FromStr for PairLayout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "interleaved" => Ok(PairLayout::Interleaved),
            "half" => Ok(PairLayout::Half),
            _ => Err(Error::invalid("rope_layout", format!("'{s}'"), "interleaved, half")),
        }
    }
}

impl std::fmt::Display for PairLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PairLayout::Interleaved => "interleaved",
            PairLayout::Half => "half",
        })
    }
}

/// What RoPE says in the stages it shapes: its angles, its relative kernel, the rotated queries and keys, and
/// the logits of the rotated vectors (it adds no term of its own).
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RopeAngles => StageText::new(
            "Rotation angles φ",
            "φ_mp = (m / s) · base^(−2p / d_rot)",
            r"\varphi_{mp} = \frac{m}{s}\,\theta_p, \qquad \theta_p = \text{base}^{-2p / d_{rot}}",
            "Each column is one frequency: the first pairs turn fast with the position, the last ones barely move. A row is the rotation applied to that position's q and k.",
        )
        .on("pair p (frequency θ_p)", "position m"),
        Stage::RopeKernel => StageText::new(
            "RoPE's relative kernel",
            "κ(j − i): the logit of q = k = (1, …, 1) at that distance, (Σ_p 2 cos(d θ_p / s) + d_head − d_rot) / d_head",
            r"\kappa(j - i) = \frac{1}{d_h}\Bigl(\sum_p 2 \cos\bigl((j - i)\,\theta_p / s\bigr) + d_h - d_{rot}\Bigr), \quad q = k = \mathbf{1}",
            "The logit q = k = (1, …, 1) would give at each pair: 1 on the diagonal, oscillating and shrinking as |j − i| grows. Every diagonal holds one value: that is what makes RoPE relative.",
        ),
        Stage::RotatedQ => StageText::new(
            "Rotated queries q'",
            "q'_i = R(φ_i) q_i: each pair turned by its angle",
            r"q'_i = R(\varphi_i)\, q_i",
            "Q after rotation: row i is q_i with each pair turned by position i's angles. The vectors keep their lengths; only their directions move.",
        )
        .on(COMPONENT_AXIS, QUERY_AXIS),
        Stage::RotatedK => StageText::new(
            "Rotated keys k'",
            "k'_j = R(φ_j) k_j: each pair turned by its angle",
            r"k'_j = R(\varphi_j)\, k_j",
            "K after rotation by each key's position. Because both sides turn, q'_i · k'_j depends on the positions only through j − i.",
        )
        .on(COMPONENT_AXIS, KEY_AXIS),
        Stage::ContentLogits => StageText::new(
            "Logits of rotated Q and K",
            "q'_i · k'_j = q_i · R(φ_j − φ_i) k_j",
            r"q'_i \cdot k'_j = q_i^{\top} R(\varphi_j - \varphi_i)\, k_j",
            "Content and position in one product: the dot products of rotated vectors. Move both tokens by the same amount and this cell does not change.",
        ),
        Stage::Logits => StageText::new(
            LOGITS_TITLE,
            "q'_i·k'_j / √d_head, −∞ where masked",
            r"e_{ij} = \frac{q'_i \cdot k'_j}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            "The rotated products scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
        ),
        _ => return None,
    })
}

/// What RoPE's own stages say when the table is a model's (a captured layer's cos and sin, whatever its
/// scaling): the angles read back from it and the kernel computed from it; the other stages as [`describe`].
pub fn describe_given(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RopeAngles => StageText::new(
            "Rotation angles φ (the model's own)",
            "φ_mp = atan2(sin_mp, cos_mp) of the model's table, unwrapped along m",
            r"\varphi_{mp} = \operatorname{atan2}(\sin_{mp}, \cos_{mp}) \quad \text{(the model's own table)}",
            "The angles the model rotates by, read back from the cos and sin it computes, its rope scaling included (linear, dynamic NTK, YaRN, Llama 3): each column one frequency, fast to slow. Where the scaling bends a frequency, its column grows more slowly than the base alone would make it.",
        )
        .on("pair p (frequency θ_p)", "position m"),
        Stage::RopeKernel => StageText::new(
            "RoPE's relative kernel (the model's own)",
            "κ(j − i) = (Σ_p 2 (cos φ_0p cos φ_dp + sin φ_0p sin φ_dp) + d_head − d_rot) / d_head, from the model's cos and sin",
            r"\kappa(d) = \frac{1}{d_h}\Bigl(\sum_p 2\,(\cos\varphi_{0p}\cos\varphi_{dp} + \sin\varphi_{0p}\sin\varphi_{dp}) + d_h - d_{rot}\Bigr)",
            "The logit q = k = (1, …, 1) would give at each distance with the model's own table: one value along every diagonal, as for any rotary table. A YaRN model's attention factor scales it above 1 at d = 0.",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the logit of the rotated vectors, and no relative term.
pub fn pair_labels() -> PairLabels {
    PairLabels { content: "rotated q'·k' = {} (the positions are inside it)", relative: None, ..PairLabels::plain() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// RoPE's defining property: after rotation q'_i · k'_j depends on i and j only through j − i, for both
    /// layouts, partial rotation and a scale; and rotation keeps each row's norm.
    #[test]
    fn rotated_dot_products_depend_on_the_distance_only() {
        let dh = 8;
        let q = Array2::from_shape_fn((1, dh), |(_, c)| (c as f32 * 0.7).sin() + 0.3);
        let k = Array2::from_shape_fn((1, dh), |(_, c)| (c as f32 * 1.3).cos() - 0.2);
        for rope in [
            Rope::default(),
            Rope { layout: PairLayout::Half, ..Rope::default() },
            Rope { fraction: 0.5, base: 100.0, ..Rope::default() },
            Rope { scale: 4.0, layout: PairLayout::Half, ..Rope::default() },
        ] {
            let dot = |i: isize, j: isize| rope.rotate(q.view(), i).row(0).dot(&rope.rotate(k.view(), j).row(0));
            for (i, j, shift) in [(0, 3, 5), (7, 2, 11), (4, 4, 30)] {
                assert!((dot(i, j) - dot(i + shift, j + shift)).abs() < 1e-4, "{rope:?} ({i},{j})+{shift}");
            }
            let norm = |a: Array2<f32>| a.iter().map(|v| v * v).sum::<f32>();
            assert!((norm(rope.rotate(q.view(), 9)) - norm(q.clone())).abs() < 1e-4);
        }
    }

    #[test]
    fn layouts_pair_different_components() {
        let x = Array2::from_shape_fn((1, 4), |(_, c)| c as f32 + 1.0);
        let turn = |layout| Rope { base: 1.0 + f32::EPSILON, layout, ..Rope::default() }.rotate(x.view(), 1);
        // θ_p ≈ 1 for both pairs: interleaved rotates (1, 2) and (3, 4), half-split (1, 3) and (2, 4).
        let (c, s) = (1f32.cos(), 1f32.sin());
        let inter = turn(PairLayout::Interleaved);
        let half = turn(PairLayout::Half);
        assert!((inter[[0, 0]] - (c - 2.0 * s)).abs() < 1e-4 && (inter[[0, 1]] - (2.0 * c + s)).abs() < 1e-4);
        assert!((half[[0, 0]] - (c - 3.0 * s)).abs() < 1e-4 && (half[[0, 2]] - (3.0 * c + s)).abs() < 1e-4);
    }

    #[test]
    fn partial_rotation_leaves_the_rest() {
        let rope = Rope { fraction: 0.25, ..Rope::default() };
        assert_eq!(rope.rotated_dims(16), 4);
        assert_eq!(rope.rotated_dims(6), 0);
        assert_eq!(Rope { fraction: 0.5, ..Rope::default() }.rotated_dims(10), 4);
        let x = Array2::from_shape_fn((3, 16), |(r, c)| (r * 16 + c) as f32);
        let y = rope.rotate(x.view(), 2);
        assert_eq!(y.slice(ndarray::s![.., 4..]), x.slice(ndarray::s![.., 4..]));
        assert!(rope.check(6).is_err() && rope.check(16).is_ok());
        // 0.5 of 10 is 5 components: half a pair would be left; refused, as GPT-NeoX's code would misbehave.
        let half = Rope { fraction: 0.5, ..Rope::default() };
        assert!(half.check(10).unwrap_err().to_string().contains("an odd number") && half.check(12).is_ok());
        assert_eq!(Rope::default().check(1).unwrap_err().field(), "heads");
    }

    #[test]
    fn kernel_is_one_at_zero_and_decays() {
        let table = Rope::default().table(0, 1001, 64);
        let k = table.kernel([0isize, 1, 10, 100, -1000].into_iter(), 64);
        assert!((k[0] - 1.0).abs() < 1e-6);
        assert!(k[1] < k[0] && k[3].abs() < k[1] && k[4].abs() < 0.5);
    }

    /// A table given as a model's cos and sin rotates as the one made from the same options, and its angles
    /// read back unwrapped (past 2π) are the options' own.
    #[test]
    fn a_given_table_is_the_made_one() {
        let rope = Rope { base: 100.0, layout: PairLayout::Half, ..Rope::default() };
        let made = rope.table(0, 40, 8);
        let given = RopeTable::given(rope, made.cos.clone(), made.sin.clone());
        assert!(made.angles.iter().zip(&given.angles).all(|(a, b)| (a - b).abs() < 1e-4), "{:?}", given.angles);
        assert!(given.angles[[39, 0]] > 38.0);
        let x = Array2::from_shape_fn((40, 8), |(r, c)| ((r * 8 + c) as f32 * 0.37).sin());
        assert_eq!(made.rotate(x.view(), 0), given.rotate(x.view(), 0));
        let (a, b) = (made.kernel(-39..40, 8), given.kernel(-39..40, 8));
        assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-6));
    }

    #[test]
    fn options_are_ranged_by_name() {
        let bad = |r: Rope| r.check(16).unwrap_err().to_string();
        assert!(bad(Rope { base: 1.0, ..Rope::default() }).contains("rope_base"));
        assert!(bad(Rope { scale: f32::NAN, ..Rope::default() }).contains("rope_scale"));
        assert!(bad(Rope { fraction: 0.0, ..Rope::default() }).contains("rope_fraction"));
        assert!("sideways".parse::<PairLayout>().unwrap_err().to_string().contains("interleaved, half"));
    }
}
