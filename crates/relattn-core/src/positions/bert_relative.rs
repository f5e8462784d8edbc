//! BERT's relative positions (Hugging Face's `BertSelfAttention` with `position_embedding_type` "relative_key" or
//! "relative_key_query", transformers 4.x): one learned table of distance vectors, `distance_embedding`, of 2P − 1
//! rows (P = `max_position_embeddings`), shared by every head and read unprojected. With δ(i, j) = i − j (query
//! minus key, Hugging Face's direction: the opposite of relattn's d = j − i):
//!
//! ```text
//! r(i, j)  = δ(i, j) + P − 1                       in 0..=2P − 2: no clipping, so every position < P (n ≤ P)
//! a_ij     = A[r(i, j)]                            A = distance_embedding (2P − 1, d_head)
//! query term  q_i · a_ij = (Q Aᵀ)[i, r(i, j)]      "relative_key": Shaw et al. 2018's a^K
//! key term    k_j · a_ij = (K Aᵀ)[j, r(i, j)]      "relative_key_query" adds it (Huang et al. 2020, method 4)
//! e_ij     = (q_i · k_j + q_i · a_ij [+ k_j · a_ij]) / √d_head
//! ```
//!
//! The query term is Shaw's term with the table's rows in the other order (row r holds δ = r − (P − 1), Shaw's row
//! r holds d = r − k) and k = P − 1 so wide that no pair is clipped: it is computed by Shaw's gather
//! ([`shaw::relative_logits`]) on the table read backwards. The key term is DeBERTa's p2c with the same table
//! for Q_r: what key j's content says about a query δ before it. Each term is its own stage (`c2p` the query term,
//! `p2c` the key term, the names DeBERTa's terms have) beside their sum, `relative_logits`.
//!
//! Hugging Face looks up `distance_embedding` at δ + P − 1 and has no row for |δ| ≥ P: a sequence longer than P
//! fails there, and relattn refuses it naming `max_position` ([`BertRelative::check_length`]). For Lq queries
//! against Lk keys (a cached step) the queries are aligned to the last keys, as Hugging Face's `use_cache` does.

use crate::error::{Error, Result};
use crate::positions::shaw;
use crate::positions::table::{distance, Edge, QueryRows, RelTable};
use crate::stage::{PairLabels, Stage, StageText, LOGITS_TITLE};
use ndarray::{s, Array2, ArrayView2};
use std::str::FromStr;

/// Which of BERT's relative position types (Hugging Face's `position_embedding_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum BertTerms {
    /// "relative_key": the query term q_i · a_ij alone.
    Key,
    /// "relative_key_query": the query term and the key term k_j · a_ij.
    KeyQuery,
}

impl BertTerms {
    /// Whether the layer adds the key term k_j · a_ij.
    pub fn key_term(self) -> bool {
        self == BertTerms::KeyQuery
    }

    pub fn name(self) -> &'static str {
        match self {
            BertTerms::Key => "key",
            BertTerms::KeyQuery => "key_query",
        }
    }
}

impl FromStr for BertTerms {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "key" | "relative_key" => Ok(BertTerms::Key),
            "key_query" | "relative_key_query" => Ok(BertTerms::KeyQuery),
            _ => Err(Error::invalid("bert_terms", format!("'{s}'"), "key (relative_key), key_query (relative_key_query)")),
        }
    }
}

impl std::fmt::Display for BertTerms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// BERT's relative options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BertRelative {
    /// P, Hugging Face's `max_position_embeddings` (512 in BERT): the table has 2P − 1 rows and sequences at most P
    /// positions.
    pub max_position: usize,
    pub terms: BertTerms,
}

impl Default for BertRelative {
    fn default() -> Self {
        BertRelative { max_position: 512, terms: BertTerms::Key }
    }
}

/// The largest P accepted (tables of 2P − 1 rows).
pub const MAX_POSITION: usize = 1 << 16;

impl BertRelative {
    /// Rows of the table: 2P − 1.
    pub fn rows(&self) -> usize {
        2 * self.max_position - 1
    }

    /// Refuses a P outside 1 to [`MAX_POSITION`], naming `max_position`.
    pub fn check(&self) -> Result<()> {
        if self.max_position == 0 || self.max_position > MAX_POSITION {
            return Err(Error::invalid("max_position", self.max_position, format!("1 to {MAX_POSITION}")));
        }
        Ok(())
    }

    /// Refuses `n` positions (queries or keys) past P, naming `max_position`: the table has no row for |i − j| ≥ P.
    pub fn check_length(&self, n: usize) -> Result<()> {
        if n > self.max_position {
            let allowed = format!("at least the {n} positions of the sequence (the table's 2P − 1 rows hold |i − j| < P; no clipping)");
            return Err(Error::invalid("max_position", self.max_position, allowed));
        }
        Ok(())
    }

    /// The table's rows by δ = i − j: row r holds δ = r − (P − 1); nothing beyond (never reached: n ≤ P). Read
    /// by relattn's d = j − i it is the same range, rows in the other order.
    pub fn layout(&self) -> RelTable {
        let p = self.max_position as isize;
        RelTable { min: 1 - p, max: p - 1, edge: Edge::Zero }
    }

    /// The row r = δ + P − 1 of a pair at δ = i − j, `None` past the table.
    pub fn row(&self, delta: isize) -> Option<usize> {
        self.layout().row(delta)
    }
}

/// The two terms of the query rows `q` (rows, d_head) of `block` against every key `k` (Lk, d_head) with the
/// table A (2P − 1, d_head): (query term, key term), each (rows, Lk), the key term when the layer has it. The
/// query term is Shaw's gather of Q·Aᵀ on A read backwards (`materialized`: Shaw's (rows, Lk, d_head) gather);
/// the key term, for each key j, the block's consecutive rows A[r(i0, j) .. r(i0, j) + rows] times k_j (O(rows·Lk·d_head),
/// where the whole K·Aᵀ (Lk, 2P − 1) would be O(Lk·P·d_head) for every block of a layer held on demand;
/// `materialized`: a dot per cell). Both ways give the same numbers.
pub fn relative_terms(
    b: &BertRelative,
    q: ArrayView2<f32>,
    k: ArrayView2<f32>,
    table: ArrayView2<f32>,
    block: QueryRows,
    materialized: bool,
) -> (Array2<f32>, Option<Array2<f32>>) {
    let (count, lk) = (q.nrows(), k.nrows());
    // Row x of the reversed table is A[2P − 2 − x]: Shaw's row of d = j − i, x = d + P − 1, is A's row of δ = −d.
    let backwards = table.slice(s![..;-1, ..]);
    let layout = b.layout();
    let query =
        if materialized { shaw::relative_logits_materialized(q, backwards, layout, lk, block) } else { shaw::relative_logits(q, backwards, layout, lk, block) };
    let row = |i: usize, j: usize| b.row(-distance(block.query(i), j, block.lq, lk)).expect("n ≤ max_position: checked");
    let key = b.terms.key_term().then(|| {
        if materialized {
            Array2::from_shape_fn((count, lk), |(i, j)| k.row(j).dot(&table.row(row(i, j))))
        } else {
            // Queries i0, i0 + 1, … meet key j at rows r(i0, j), r(i0, j) + 1, …
            let mut key = Array2::zeros((count, lk));
            for (j, mut column) in key.columns_mut().into_iter().enumerate() {
                let from = row(0, j);
                column.assign(&table.slice(s![from..from + count, ..]).dot(&k.row(j)));
            }
            key
        }
    });
    (query, key)
}

/// The keys of query i (of Lq, against Lk) that read table row r (δ = r − (P − 1)): the one key at j = i − δ, if
/// any. The layout read by d = j − i has the rows in the other order, row 2P − 2 − r.
pub fn readers(b: &BertRelative, r: usize, i: usize, lq: usize, lk: usize) -> std::ops::Range<usize> {
    let layout = b.layout();
    match layout.rows().checked_sub(1 + r) {
        Some(by_d) => layout.readers(by_d, i, lq, lk),
        None => 0..0,
    }
}

/// What BERT's relative positions say in the stages they shape: the row of each pair, the table, each term, their
/// sum and the logits.
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RelIndex => StageText::new(
            "Table row i − j + P − 1",
            "r = i − j + P − 1, P = max_position (no clipping: n ≤ P)",
            r"r_{ij} = (i - j) + P - 1 \in [0,\ 2P - 2], \quad P = \text{max\_position}",
            "BERT measures δ = i − j (query minus key) and shifts it by P − 1: every distance has its own row, so each diagonal is one row, the next diagonal the next row, and no corner is flat (nothing is clipped); a sequence longer than P has no row and is refused.",
        ),
        Stage::RelK => StageText::new(
            "Distance embeddings A",
            "row r: the learned vector of δ = r − (P − 1) (Hugging Face's distance_embedding, 2P − 1 rows)",
            r"A = \bigl(a_{-(P-1)}, \dots, a_{P-1}\bigr) \in \mathbb{R}^{(2P - 1) \times d_h}, \qquad a_{ij} = A[\,i - j + P - 1\,]",
            "One learned vector per distance, shared by every head and read without a projection: Shaw's w^K with a row for each of the 2P − 1 distances (in the other order: row 0 is δ = −(P − 1), the key P − 1 after the query).",
        ),
        Stage::C2p => StageText::new(
            "Query term q_i · a_ij",
            "q_i · A[i − j + P − 1] = (Q Aᵀ)[i, r(i, j)]",
            r"q_i \cdot a_{ij} = \bigl(Q A^{\top}\bigr)\bigl[i,\ i - j + P - 1\bigr]",
            "relative_key's term, Shaw's a^K: what query i's content says about a key at distance i − j. One row of Q Aᵀ laid along the diagonals.",
        ),
        Stage::P2c => StageText::new(
            "Key term k_j · a_ij",
            "k_j · A[i − j + P − 1] = (K Aᵀ)[j, r(i, j)]",
            r"k_j \cdot a_{ij} = \bigl(K A^{\top}\bigr)\bigl[j,\ i - j + P - 1\bigr]",
            "relative_key_query adds it (Huang et al. 2020): what key j's content says about a query at distance i − j, from the same table: a column of K Aᵀ laid along the diagonals (DeBERTa's p2c without the projection).",
        ),
        Stage::RelativeLogits => StageText::new(
            "Relative logits",
            "q_i · a_ij (+ k_j · a_ij with relative_key_query), added before the scale",
            r"q_i \cdot a_{ij} \;\bigl(+\; k_j \cdot a_{ij}\bigr)",
            "The position terms the layer has, added: with relative_key, Shaw's term unclipped; with relative_key_query it also depends on the key's content.",
        ),
        Stage::Logits => StageText::new(
            LOGITS_TITLE,
            "(q_i·k_j + q_i·a_ij [+ k_j·a_ij]) / √d_head, −∞ where masked",
            r"e_{ij} = \frac{q_i \cdot k_j + q_i \cdot a_{ij} + k_j \cdot a_{ij}}{\sqrt{d_h}} \quad (k_j \cdot a_{ij} \text{ with relative\_key\_query}; -\infty \text{ where masked})",
            "Content and position terms added and scaled by 1/√d_head, as Shaw's: the key term adds no factor to the scale (unlike DeBERTa's).",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the terms and the row.
pub fn pair_labels() -> PairLabels {
    PairLabels { relative: Some("q·a (+ k·a) = {}"), row: Some("table row i − j + P − 1 = {}".into()), ..PairLabels::plain() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_the_shifted_distance() {
        let b = BertRelative { max_position: 4, terms: BertTerms::Key };
        assert_eq!(b.rows(), 7);
        assert_eq!((b.row(-3), b.row(0), b.row(3), b.row(4), b.row(-4)), (Some(0), Some(3), Some(6), None, None));
        for (lq, lk) in [(4, 4), (1, 4), (3, 2)] {
            for i in 0..lq {
                for r in 0..b.rows() + 1 {
                    let keys = readers(&b, r, i, lq, lk);
                    for j in 0..lk {
                        assert_eq!(keys.contains(&j), b.row(-distance(i, j, lq, lk)) == Some(r), "lq {lq} lk {lk} i {i} r {r} j {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn options_are_ranged_by_name() {
        let with = |p| BertRelative { max_position: p, terms: BertTerms::KeyQuery };
        assert_eq!(with(0).check().unwrap_err().field(), "max_position");
        assert_eq!(with(MAX_POSITION + 1).check().unwrap_err().field(), "max_position");
        assert!(with(1).check().is_ok() && with(MAX_POSITION).check().is_ok());
        assert!(with(8).check_length(8).is_ok());
        assert_eq!(with(8).check_length(9).unwrap_err().field(), "max_position");
        assert_eq!("relative_key_query".parse::<BertTerms>().unwrap(), BertTerms::KeyQuery);
        assert_eq!("key".parse::<BertTerms>().unwrap(), BertTerms::Key);
        assert_eq!("x".parse::<BertTerms>().unwrap_err().field(), "bert_terms");
    }
}
