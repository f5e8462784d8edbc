//! Position schemes: which row of a relative table each (query, key) pair reads, one module per scheme.
//!
//! - [`table`]: distances j − i, the rows a table covers ([`RelTable`]) and what lies beyond them ([`Edge`]);
//! - [`shaw`]: Shaw et al. 2018's gather of `Q Tᵀ`, value buckets and the materialized (Lq, Lk, d_head) tensors;
//! - [`music`]: the Music Transformer's skew (Huang et al. 2018), masked and unmasked.
//!
//! [`Method`] names the schemes; its methods are the one place that says what each scheme is made of (the
//! distances its table covers, the tables a scenario gives it, whether it has a value term, whether its
//! relative logits come from the skew), and [`relative_logits`] computes each scheme's relative term, so the
//! rest of the crate asks rather than matches.

pub mod music;
pub mod shaw;
pub mod table;

use crate::core::matmul::matmul;
use crate::error::{Error, Result};
use music::SkewSteps;
use ndarray::{s, Array2, ArrayView2, Zip};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use table::{distance, Edge, QueryRows, RelTable};

/// Which relative attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Shaw, Uszkoreit & Vaswani 2018: tables w^K, w^V of 2k+1 rows indexed by clip(j − i, k) + k.
    Shaw,
    /// Huang et al. 2018: a table E_r of relative embeddings, turned into absolute positions by the skew.
    Music,
}

impl Method {
    /// Every scheme.
    pub const ALL: [Method; 2] = [Method::Shaw, Method::Music];

    /// The relative table of this scheme with clipping distance k: Shaw's 2k+1 rows for −k..=k (clipped
    /// beyond); the Music Transformer's k+1 rows for −k..=0 (causal) or 2k+1 for −k..=k, `edge` beyond.
    pub fn table(self, clip: usize, causal: bool, edge: Edge) -> RelTable {
        match (self, causal) {
            (Method::Shaw, _) => RelTable::shaw(clip),
            (Method::Music, true) => RelTable::music_causal(clip + 1, edge),
            (Method::Music, false) => RelTable::music_bidirectional(2 * clip + 1, edge),
        }
    }

    /// Rows of [`Method::table`] in checked 64-bit arithmetic (`None` past u64): what memory estimates count.
    pub fn table_rows(self, clip: u64, causal: bool) -> Option<u64> {
        match (self, causal) {
            (Method::Music, true) => clip.checked_add(1),
            _ => clip.checked_mul(2)?.checked_add(1),
        }
    }

    /// [`Method::table_rows`] as a formula of k: "2k+1", or "k+1" for the causal Music Transformer.
    pub fn rows_formula(self, causal: bool) -> &'static str {
        match (self, causal) {
            (Method::Music, true) => "k+1",
            _ => "2k+1",
        }
    }

    /// The scheme's tables under the names a scenario file gives them: the logits' table (Shaw's w^K as
    /// `rel_k`, the Music Transformer's `e_r`) and the values' table, if the scheme has one (Shaw's `rel_v`).
    pub fn table_names(self) -> (&'static str, Option<&'static str>) {
        match self {
            Method::Shaw => ("rel_k", Some("rel_v")),
            Method::Music => ("e_r", None),
        }
    }

    /// Whether the scheme can add a value term (Shaw's a^V: w^V at clip(j − i), weighted into the output).
    pub fn has_value_term(self) -> bool {
        self.table_names().1.is_some()
    }

    /// Whether its relative logits come from the skew (Q·E_rᵀ padded, reshaped and sliced: the Music
    /// Transformer), whose steps a trace keeps.
    pub fn skews(self) -> bool {
        self == Method::Music
    }

    /// Columns of the product Q·E_rᵀ the skew starts from for n queries (E_r cut or padded to the sequence: n
    /// causal, 2n − 1 bidirectional), `None` past u64; 0 for a scheme without the skew.
    pub fn skew_columns(self, n: u64, causal: bool) -> Option<u64> {
        match (self.skews(), causal) {
            (false, _) => Some(0),
            (true, true) => Some(n),
            (true, false) => Some(n.checked_mul(2)?.saturating_sub(1)),
        }
    }

    /// Whether its relative logits are 0 above the diagonal: the masked skew leaves the next row's values
    /// there, masked anyway, and shown as 0 (the causal Music Transformer).
    pub fn zeroes_above_diagonal(self, causal: bool) -> bool {
        self.skews() && causal
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "shaw" => Ok(Method::Shaw),
            "music" => Ok(Method::Music),
            _ => Err(Error::invalid("method", format!("'{s}'"), "shaw, music")),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Shaw => "shaw",
            Method::Music => "music",
        })
    }
}

/// The relative logits S (rows, Lk) of the query rows `rows` of `q` (Lq, d_head) against Lk keys, with the
/// scheme's table (R, d_head) laid out as `layout` ([`Method::table`]), each scheme its own way: Shaw's gather
/// of `q · T[row]`; the Music Transformer's skew (its steps into `skew`), or the gather for a cached decoding
/// step (Lq < Lk: the skew needs a square (L, L) product); with `materialized`, the seeds' (rows, Lk, d_head)
/// tensor of table rows. Every way gives the same numbers.
#[allow(clippy::too_many_arguments)]
pub fn relative_logits(
    method: Method,
    materialized: bool,
    causal: bool,
    q: ArrayView2<f32>,
    table: ArrayView2<f32>,
    layout: RelTable,
    lk: usize,
    rows: Range<usize>,
    skew: Option<&mut Option<SkewSteps>>,
) -> Array2<f32> {
    let lq = q.nrows();
    let block = QueryRows { first: rows.start, lq };
    let q_rows = q.slice(s![rows.clone(), ..]);
    let mut rel = if materialized {
        shaw::relative_logits_materialized(q_rows, table, layout, lk, block)
    } else if !method.skews() || lq != lk {
        shaw::relative_logits(q_rows, table, layout, lk, block)
    } else {
        let padded = music::table_for_length(table, layout, lq, causal);
        let read = music::qer_rows(lq, causal, rows.clone());
        let qer = matmul(q.slice(s![read.clone(), ..]), padded.t());
        let steps = music::skew_rows(qer.view(), read.start, causal, rows);
        let sliced = steps.sliced.clone();
        if let Some(kept) = skew {
            *kept = Some(steps);
        }
        sliced
    };
    if method.zeroes_above_diagonal(causal) {
        Zip::indexed(&mut rel).for_each(|(i, j), s| {
            if distance(block.query(i), j, lq, lk) > 0 {
                *s = 0.0;
            }
        });
    }
    rel
}
