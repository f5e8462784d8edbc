//! DeBERTa's disentangled attention (He et al. 2021; DeBERTa-v2 and v3 as Hugging Face's `DisentangledSelfAttention`
//! computes it): content and position are kept apart, and each query–key pair adds what its content says about the
//! other's relative position. With δ(i, j) = i − j (query minus key, DeBERTa's direction: the opposite of relattn's
//! d = j − i), S the attention span and K_r, Q_r a head's projected relative embeddings:
//!
//! ```text
//! bucket(δ) = δ                                                        |δ| ≤ m, m = position_buckets / 2
//!           = sign(δ)·(⌈ln(|δ|/m) / ln((max_relative_positions − 1)/m) · (m − 1)⌉ + m)    |δ| > m   (float32, as torch)
//!           = δ                                                        position_buckets = 0 (no buckets)
//! S       = position_buckets if > 0, else max_relative_positions      (the table has 2S rows)
//! r(i, j) = clamp(bucket(δ(i, j)) + S, 0, 2S − 1)
//! c2p_ij  = q_i · K_r[r(i, j)]          content of the query, position of the key   (K_r = E W_k + b_k)
//! p2c_ij  = k_j · Q_r[r(i, j)]          position of the query, content of the key   (Q_r = E W_q + b_q)
//! e_ij    = (q_i · k_j + c2p_ij + p2c_ij) / √(d_head · (1 + terms))                 terms: 2 with c2p and p2c
//! ```
//!
//! Hugging Face gathers p2c at −bucket(δ(j, i)) and transposes; the bucket is odd (bucket(−δ) = −bucket(δ)), so that
//! is the row r(i, j) again: both terms of a pair read the *same* row of their tables. That is why relattn keeps a
//! head's two tables as one (2S, 2·d_head) table, row r = [K_r[r] | Q_r[r]] (the `rel_k` stage; `deberta_k_r` and
//! `deberta_q_r` in scenario files, each (2S, d_head) or (heads, 2S, d_head)): the bucket stage's r picks one row,
//! whose left half the query reads and whose right half the key reads. The tables are kept projected, per head,
//! rather than as E with the projections: what a head reads is then on the screen as it is, as Shaw's w^K is, and
//! a captured model's E, layer norm, shared or separate projections and biases are all folded into them once.
//!
//! For Lq queries against Lk keys (a cached step) the queries are aligned to the last keys, as in every relattn scheme.

use crate::core::matmul::matmul;
use crate::error::{Error, Result};
use crate::positions::table::{distance, QueryRows};
use crate::stage::{PairLabels, Stage, StageText, LOGITS_TITLE};
use ndarray::{s, Array2, ArrayView2};
use std::str::FromStr;

/// Which position terms a layer adds (Hugging Face's `pos_att_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum Terms {
    /// c2p and p2c ("c2p|p2c": DeBERTa-v2 and v3).
    Both,
    /// Content to position alone.
    C2p,
    /// Position to content alone.
    P2c,
}

impl Terms {
    pub fn c2p(self) -> bool {
        self != Terms::P2c
    }

    pub fn p2c(self) -> bool {
        self != Terms::C2p
    }

    /// The number of position terms: the scale is 1/√(d_head · (1 + this)).
    pub fn count(self) -> usize {
        self.c2p() as usize + self.p2c() as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Terms::Both => "both",
            Terms::C2p => "c2p",
            Terms::P2c => "p2c",
        }
    }
}

impl FromStr for Terms {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "both" | "c2p|p2c" | "p2c|c2p" => Ok(Terms::Both),
            "c2p" => Ok(Terms::C2p),
            "p2c" => Ok(Terms::P2c),
            _ => Err(Error::invalid("deberta_terms", format!("'{s}'"), "both (c2p|p2c), c2p, p2c")),
        }
    }
}

impl std::fmt::Display for Terms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// DeBERTa's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deberta {
    /// Log buckets of δ: 256 in DeBERTa-v3; 0 for none (DeBERTa-v2-xlarge's plain clipping at ±max_relative_positions).
    pub position_buckets: usize,
    /// The largest distance the buckets reach (512 in DeBERTa-v3), and the span itself without buckets.
    pub max_relative_positions: usize,
    pub terms: Terms,
}

impl Default for Deberta {
    fn default() -> Self {
        Deberta { position_buckets: 256, max_relative_positions: 512, terms: Terms::Both }
    }
}

/// The largest span S accepted (tables of 2S rows).
pub const MAX_SPAN: usize = 1 << 16;

impl Deberta {
    /// The attention span S: position_buckets when bucketing, else max_relative_positions. The table has 2S rows.
    pub fn span(&self) -> usize {
        if self.position_buckets > 0 {
            self.position_buckets
        } else {
            self.max_relative_positions
        }
    }

    /// Rows of each table: 2S.
    pub fn rows(&self) -> usize {
        2 * self.span()
    }

    /// Refuses options outside their ranges, naming them: position_buckets 0 or 2 to [`MAX_SPAN`];
    /// max_relative_positions 1 to [`MAX_SPAN`] without buckets, above position_buckets/2 + 1 with them (its log
    /// must be above the exact buckets').
    pub fn check(&self) -> Result<()> {
        let b = self.position_buckets;
        if b == 1 || b > MAX_SPAN {
            return Err(Error::invalid("position_buckets", b, format!("0 (no buckets) or 2 to {MAX_SPAN}")));
        }
        let least = if b > 0 { b / 2 + 2 } else { 1 };
        if self.max_relative_positions < least || self.max_relative_positions > MAX_SPAN {
            return Err(Error::invalid("max_relative_positions", self.max_relative_positions, self.max_range()));
        }
        Ok(())
    }

    /// The max_relative_positions allowed with these buckets, as messages say it.
    pub fn max_range(&self) -> String {
        match self.position_buckets {
            0 => format!("1 to {MAX_SPAN}"),
            b => format!("{} to {MAX_SPAN} (above position_buckets / 2 + 1)", b / 2 + 2),
        }
    }

    /// bucket(δ) of δ = i − j: Hugging Face's `make_log_bucket_position` in float32 as torch computes it (so the
    /// buckets are its buckets), or δ itself without buckets.
    pub fn bucket(&self, delta: isize) -> isize {
        if self.position_buckets == 0 {
            return delta;
        }
        let mid = (self.position_buckets / 2) as isize;
        if delta.abs() <= mid {
            return delta;
        }
        let c = ((self.max_relative_positions - 1) as f64 / mid as f64) as f32;
        let log = ((delta.abs() as f32 / mid as f32).ln() / c.ln() * (mid - 1) as f32).ceil() + mid as f32;
        delta.signum() * log as isize
    }

    /// The table row r = clamp(bucket(δ) + S, 0, 2S − 1) a pair at δ = i − j reads.
    pub fn row(&self, delta: isize) -> usize {
        let span = self.span() as isize;
        self.bucket(delta).saturating_add(span).clamp(0, 2 * span - 1) as usize
    }
}

/// A head's table (2S, 2·d_head) as (K_r, Q_r), each (2S, d_head).
pub fn split(table: ArrayView2<f32>) -> (ArrayView2<f32>, ArrayView2<f32>) {
    let dh = table.ncols() / 2;
    (table.slice_move(s![.., ..dh]), table.slice_move(s![.., dh..]))
}

/// The (rows, Lk) matrix of rows r(i, j) of the query rows `block` (queries aligned to the last keys).
fn rows_of(d: &Deberta, count: usize, lk: usize, block: QueryRows) -> Array2<usize> {
    Array2::from_shape_fn((count, lk), |(i, j)| d.row(-distance(block.query(i), j, block.lq, lk)))
}

/// The two terms of the query rows `q` (rows, d_head) of `block` against every key `k` (Lk, d_head), with the head's
/// table (2S, 2·d_head) ([`split`]): (c2p, p2c), each (rows, Lk) when the layer has it, unscaled. `materialized`: each
/// cell the dot product of its two vectors (the (rows, Lk, d_head) gather's way); otherwise the efficient way, the
/// small products Q·K_rᵀ (rows, 2S) and K·Q_rᵀ (Lk, 2S) gathered at r(i, j) — but p2c a dot a cell when the block
/// has fewer than 2S/4 rows (a layer held on demand goes by blocks of rows: K·Q_rᵀ for each would be O(Lk·S·d_head)
/// a block, over 300 s for the page at n 8192 with 8192 buckets). Both give the same numbers.
pub fn relative_terms(
    d: &Deberta,
    q: ArrayView2<f32>,
    k: ArrayView2<f32>,
    table: ArrayView2<f32>,
    block: QueryRows,
    materialized: bool,
) -> (Option<Array2<f32>>, Option<Array2<f32>>) {
    let (k_r, q_r) = split(table);
    let (count, lk) = (q.nrows(), k.nrows());
    let r = rows_of(d, count, lk, block);
    let dot = |a: ndarray::ArrayView1<f32>, b: ndarray::ArrayView1<f32>| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let c2p = d.terms.c2p().then(|| {
        if materialized {
            Array2::from_shape_fn((count, lk), |(i, j)| dot(q.row(i), k_r.row(r[[i, j]])))
        } else {
            let p = matmul(q, k_r.t()); // (rows, 2S)
            Array2::from_shape_fn((count, lk), |(i, j)| p[[i, r[[i, j]]]])
        }
    });
    let p2c = d.terms.p2c().then(|| {
        if materialized || q_r.nrows() > 4 * count {
            Array2::from_shape_fn((count, lk), |(i, j)| dot(k.row(j), q_r.row(r[[i, j]])))
        } else {
            let g = matmul(k, q_r.t()); // (Lk, 2S)
            Array2::from_shape_fn((count, lk), |(i, j)| g[[j, r[[i, j]]]])
        }
    });
    (c2p, p2c)
}

/// The keys of query i (of Lq, against Lk) that read table row r: one range, since r(i, j) never increases with j.
pub fn readers(d: &Deberta, r: usize, i: usize, lq: usize, lk: usize) -> std::ops::Range<usize> {
    let reads = |j: usize| d.row(-distance(i, j, lq, lk)) == r;
    match (0..lk).position(reads) {
        Some(lo) => lo..(lo..lk).find(|&j| !reads(j)).unwrap_or(lk),
        None => 0..0,
    }
}

/// The bucket and row of δ as every view of DeBERTa writes it.
pub const ROW_FORMULA: &str = "r = clamp(bucket(i − j) + S, 0, 2S − 1); bucket(δ) = δ for |δ| ≤ m, else sign(δ)·(⌈ln(|δ|/m) / ln((P − 1)/m) · (m − 1)⌉ + m); m = buckets/2, P = max_relative_positions, S = buckets (or P without buckets)";
/// [`ROW_FORMULA`] in TeX.
pub const ROW_TEX: &str = r"\begin{gathered} r_{ij} = \operatorname{clamp}\bigl(\operatorname{bucket}(i - j) + S,\ 0,\ 2S - 1\bigr) \\ \operatorname{bucket}(\delta) = \begin{cases} \delta & |\delta| \le m \\ \operatorname{sign}(\delta)\Bigl(\Bigl\lceil \frac{\ln(|\delta| / m)}{\ln((P - 1) / m)}\,(m - 1) \Bigr\rceil + m\Bigr) & |\delta| > m \end{cases} \quad m = \tfrac{\text{buckets}}{2},\ P = \text{max relative positions} \end{gathered}";

/// What DeBERTa says in the stages it shapes: the row of each pair, the two tables, each term, their sum and the
/// logits scaled by 1/√(3·d_head).
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RelIndex => StageText::new(
            "Table row of i − j (log buckets)",
            ROW_FORMULA,
            ROW_TEX,
            "DeBERTa measures δ = i − j (query minus key). Distances up to half the buckets get a row each; farther ones share log-spaced rows up to max_relative_positions, and beyond that the edge rows. Both terms of a pair read this one row.",
        ),
        Stage::RelK => StageText::new(
            "Relative tables K_r | Q_r",
            "row r: [K_r[r] | Q_r[r]], K_r = E W_k + b_k, Q_r = E W_q + b_q (this head's columns)",
            r"\bigl[\,K_r \;\big|\; Q_r\,\bigr], \qquad K_r = E\,W^K_h + b^K_h,\quad Q_r = E\,W^Q_h + b^Q_h \in \mathbb{R}^{2S \times d_h}",
            "The relative embeddings E (2S rows, one per bucket of i − j) projected by this head's key and query projections: the left half is what queries read (c2p), the right half what keys read (p2c).",
        )
        .on("component: K_r (d_head), then Q_r (d_head)", "table row r"),
        Stage::C2p => StageText::new(
            "Content → position c2p",
            "c2p_ij = q_i · K_r[r(i, j)]",
            r"\text{c2p}_{ij} = q_i \cdot K_r\bigl[r_{ij}\bigr] = \bigl(Q K_r^{\top}\bigr)\bigl[i,\ r_{ij}\bigr]",
            "What query i's content says about a key at distance i − j: one row of Q K_rᵀ spread along the diagonals, so within a row it changes only where the bucket changes.",
        ),
        Stage::P2c => StageText::new(
            "Position → content p2c",
            "p2c_ij = k_j · Q_r[r(i, j)]",
            r"\text{p2c}_{ij} = k_j \cdot Q_r\bigl[r_{ij}\bigr] = \bigl(K Q_r^{\top}\bigr)\bigl[j,\ r_{ij}\bigr]",
            "What key j's content says about a query at distance i − j: a column of K Q_rᵀ spread along the diagonals, so within a column it changes only where the bucket changes.",
        ),
        Stage::RelativeLogits => StageText::new(
            "Relative logits c2p + p2c",
            "c2p_ij + p2c_ij (the terms the layer has), added before the scale",
            r"\text{c2p}_{ij} + \text{p2c}_{ij}",
            "The two disentangled terms added: unlike Shaw's or T5's term, this one depends on both tokens' contents as well as on their distance.",
        ),
        Stage::Logits => StageText::new(
            LOGITS_TITLE,
            "(q_i·k_j + c2p_ij + p2c_ij) / √(d_head · (1 + terms)), −∞ where masked",
            r"e_{ij} = \frac{q_i \cdot k_j + \text{c2p}_{ij} + \text{p2c}_{ij}}{\sqrt{(1 + t)\,d_h}} \quad (t \text{ the position terms: 2 with both}; -\infty \text{ where masked})",
            "Content and both position terms added and scaled together by 1/√(3·d_head) rather than 1/√d_head (1/√(2·d_head) with one term): three terms of like size keep the logits' spread.",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: c2p + p2c, and the row.
pub fn pair_labels() -> PairLabels {
    PairLabels { relative: Some("c2p + p2c = {}"), row: Some("table row of i − j = {}".into()), ..PairLabels::plain() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DeBERTa-v3's buckets (256, 512): exact to ±128, then log-spaced; values of Hugging Face's
    /// make_log_bucket_position (transformers 5.24, float32).
    #[test]
    fn v3_buckets() {
        let d = Deberta::default();
        let at = |x: isize| d.bucket(x);
        assert_eq!((at(0), at(1), at(-5), at(127), at(128), at(-128)), (0, 1, -5, 127, 128, -128));
        assert_eq!((at(129), at(200), at(511), at(-511), at(2000)), (129, 169, 255, -255, 381));
        assert_eq!((d.row(0), d.row(-256), d.row(255), d.row(4000), d.row(-4000)), (256, 64, 448, 511, 0));
    }

    #[test]
    fn rows_never_decrease_with_delta_and_stay_in_the_table() {
        for d in [
            Deberta::default(),
            Deberta { position_buckets: 8, max_relative_positions: 20, terms: Terms::Both },
            Deberta { position_buckets: 0, max_relative_positions: 5, terms: Terms::C2p },
        ] {
            let mut last = 0;
            for delta in -700..700 {
                let r = d.row(delta);
                assert!(r >= last && r < d.rows(), "{d:?} δ {delta}");
                assert_eq!(d.bucket(-delta), -d.bucket(delta), "odd: {d:?} δ {delta}");
                last = r;
            }
        }
    }

    #[test]
    fn readers_are_the_keys_that_read_the_row() {
        let d = Deberta { position_buckets: 6, max_relative_positions: 12, terms: Terms::Both };
        for (lq, lk) in [(20, 20), (3, 20)] {
            for i in 0..lq {
                for r in 0..d.rows() {
                    let keys = readers(&d, r, i, lq, lk);
                    for j in 0..lk {
                        assert_eq!(keys.contains(&j), d.row(-distance(i, j, lq, lk)) == r, "i {i} r {r} j {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn options_are_ranged_by_name() {
        let with = |b, m| Deberta { position_buckets: b, max_relative_positions: m, terms: Terms::Both }.check();
        assert_eq!(with(1, 512).unwrap_err().field(), "position_buckets");
        assert_eq!(with(256, 129).unwrap_err().field(), "max_relative_positions");
        assert!(with(256, 130).is_ok() && with(0, 1).is_ok() && with(2, 3).is_ok());
        assert_eq!(with(0, 0).unwrap_err().field(), "max_relative_positions");
        assert_eq!("c2p|p2c".parse::<Terms>().unwrap(), Terms::Both);
        assert_eq!("x".parse::<Terms>().unwrap_err().field(), "deberta_terms");
    }
}
