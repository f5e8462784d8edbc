//! BERT's relative terms in the fused forward ([`crate::positions::bert_relative`]), a block of queries at a time. With no
//! clipping the table A has 2P − 1 ≥ 2·max(Lq, Lk) − 1 rows, so a whole (Lq, 2P − 1) product would be O(n²); the pairs
//! of a block of queries i0..i1 read only the W = (i1 − i0) + Lk − 1 consecutive rows r(i, j) = i − j + P − 1 (queries
//! aligned to the last keys), from w0 = r(i0, Lk − 1):
//!
//! ```text
//! e_ij += Query[i − i0, r(i, j) − w0]      Query = Q[i0..i1] A[w0 .. w0 + W]ᵀ, (rows, W): the query term q_i · a_ij
//!       + Key[j, i − i0]                   Key[j] = A[r(i0, j) .. r(i0, j) + rows] k_j, (Lk, rows): the key term
//!                                          k_j · a_ij (relative_key_query), the rows of A a key meets, consecutive
//! ```
//!
//! O(BQ·(BQ + 2·Lk)) floats a block beyond the others': O(n·d) for any max_position.

use crate::attention::{Config, HeadInput};
use crate::core::matmul::matmul;
use crate::positions::bert_relative::BertRelative;
use crate::positions::table::distance;
use crate::positions::Method;
use ndarray::{s, Array2, ArrayView2};
use std::ops::Range;

/// A head's table A (2P − 1, d_head) and keys, with the options.
pub(super) struct Banded<'a> {
    bert: BertRelative,
    a: ArrayView2<'a, f32>,
    k: ArrayView2<'a, f32>,
    lq: usize,
    lk: usize,
}

/// One block of queries' products: the query term's (rows, W) and the key term's (Lk, rows).
pub(super) struct BandedBlock {
    query: Array2<f32>,
    key: Option<Array2<f32>>,
    i0: usize,
    first_row: usize,
}

impl<'a> Banded<'a> {
    /// BERT's head `h` (its table A, every δ within it: checked); `None` for another scheme.
    pub(super) fn new(cfg: &Config, h: &HeadInput<'a>) -> Option<Self> {
        (cfg.method == Method::BertRelative).then(|| Banded { bert: cfg.bert, a: h.rel_k.reborrow(), k: h.k.reborrow(), lq: h.q.nrows(), lk: h.k.nrows() })
    }

    /// The row r(i, j) = i − j + P − 1 of query i and key j.
    #[inline(always)]
    fn row(&self, i: usize, j: usize) -> usize {
        self.bert.row(-distance(i, j, self.lq, self.lk)).expect("n ≤ max_position: checked")
    }

    /// The products of the queries `queries` of `q` (Lq, d_head).
    pub(super) fn block(&self, q: ArrayView2<f32>, queries: Range<usize>) -> BandedBlock {
        let (i0, i1) = (queries.start, queries.end);
        let first_row = self.row(i0, self.lk - 1);
        let last_row = self.row(i1 - 1, 0);
        let query = matmul(q.slice(s![i0..i1, ..]), self.a.slice(s![first_row..=last_row, ..]).t());
        let key = self.bert.terms.key_term().then(|| {
            let mut key = Array2::zeros((self.lk, i1 - i0));
            for (j, mut row) in key.outer_iter_mut().enumerate() {
                // Queries i0..i1 meet key j at rows r(i0, j), r(i0, j) + 1, …
                let from = self.row(i0, j);
                row.assign(&self.a.slice(s![from..from + (i1 - i0), ..]).dot(&self.k.row(j)));
            }
            key
        });
        BandedBlock { query, key, i0, first_row }
    }

    /// `e += query term + key term` for query i's keys `keys` (e holds their logits).
    #[inline(always)]
    pub(super) fn add_logits(&self, b: &BandedBlock, e: &mut [f32], i: usize, keys: Range<usize>) {
        for (e, j) in e.iter_mut().zip(keys) {
            *e += self.term(b, i, j);
        }
    }

    /// The query term and the key term of one pair of the block.
    #[inline(always)]
    pub(super) fn term(&self, b: &BandedBlock, i: usize, j: usize) -> f32 {
        let t = i - b.i0;
        b.query[[t, self.row(i, j) - b.first_row]] + b.key.as_ref().map_or(0.0, |key| key[[j, t]])
    }
}
