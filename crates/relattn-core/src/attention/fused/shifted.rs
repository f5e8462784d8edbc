//! Transformer-XL's terms in the fused forward ([`crate::positions::transformer_xl`]), read by index instead of through
//! `rel_shift` (which only moves BD_rel's numbers into place): for a visible pair, rel_shift's cell (i, j) is
//! `(q_i + v) · r[row(i − j)]`. Per head, u·k_j for every key (Lk) and EF's two values per query (Lq, 2); per block of
//! queries, the product of its queries (+ v) with the rows of r they reach:
//!
//! ```text
//! e_ij += u · k_j                                  (with the content term: AC = q_i·k_j + u·k_j)
//!       + BD_block[i − i0, row(δ_ij) − row_lo]     BD_block = (Q[i0..i1] + v) r[row_lo..=row_hi]ᵀ, (BQ, ≤ BQ + Lk)
//!       + EF[i, segment_i ≠ segment_j]             EF = (Q + s) seg_embedᵀ (Lq, 2), with segments
//! ```
//!
//! O(Lk + 2·Lq + BQ·(BQ + Lk)) floats beyond the others': O(n·d) for any clamp k, where a whole (Lq, 2k + 1) product
//! would be O(n²) once k reaches n.

use crate::attention::{Config, HeadInput};
use crate::core::matmul::matmul;
use crate::positions::table::distance;
use crate::positions::transformer_xl::{self, biased, split};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2};
use std::ops::Range;

/// A head's per-key and per-query parts.
pub(super) struct Shifted<'a> {
    /// u · k_j (Lk), with the content term; empty without it.
    u_k: Array1<f32>,
    /// EF's two values per query (Lq, 2) and the keys' segment ids, with segments.
    ef: Option<(Array2<f32>, ArrayView1<'a, u32>)>,
    /// The sinusoid rows r (P, d_head) and v.
    r: ArrayView2<'a, f32>,
    v: ArrayView1<'a, f32>,
    k: usize,
    causal: bool,
    lq: usize,
    lk: usize,
}

/// One block of queries' BD products: rows `rows` of r against queries `queries`.
pub(super) struct ShiftedBlock {
    bd: Array2<f32>,
    first_row: usize,
    queries: Range<usize>,
}

impl<'a> Shifted<'a> {
    /// The parts of Transformer-XL's head `h`; `None` for another scheme.
    pub(super) fn new(cfg: &Config, h: &HeadInput<'a>) -> Option<Self> {
        if !cfg.method.shifts() {
            return None;
        }
        let parts = split(h.rel_k);
        let u_k = if cfg.content { h.k.dot(&parts.u) } else { Array1::zeros(0) };
        let ef = h.segments.filter(|_| cfg.xl.segments > 0).map(|ids| (matmul(biased(h.q, parts.s).view(), parts.seg.t()), ids));
        Some(Shifted { u_k, ef, r: parts.r, v: parts.v, k: cfg.clip, causal: cfg.causal, lq: h.q.nrows(), lk: h.k.nrows() })
    }

    fn row(&self, i: usize, j: usize) -> usize {
        transformer_xl::row(self.k, self.causal, -distance(i, j, self.lq, self.lk))
    }

    /// The BD products of the queries `queries` of `q`: the rows of r from the block's largest δ (its last query, key 0)
    /// to its smallest (its first query, the last key).
    pub(super) fn block(&self, q: ArrayView2<f32>, queries: Range<usize>) -> ShiftedBlock {
        let (first_row, last_row) = (self.row(queries.end - 1, 0), self.row(queries.start, self.lk - 1));
        let bd = matmul(biased(q.slice(s![queries.clone(), ..]), self.v).view(), self.r.slice(s![first_row..=last_row, ..]).t());
        ShiftedBlock { bd, first_row, queries }
    }

    /// u·k_j + BD_ij + EF_ij of one pair.
    #[inline(always)]
    pub(super) fn term(&self, b: &ShiftedBlock, i: usize, j: usize) -> f32 {
        let u_k = self.u_k.get(j).copied().unwrap_or(0.0);
        let bd = b.bd[[i - b.queries.start, self.row(i, j) - b.first_row]];
        let ef = self.ef.as_ref().map_or(0.0, |(ef, ids)| ef[[i, (ids[i + self.lk - self.lq] != ids[j]) as usize]]);
        u_k + bd + ef
    }

    /// `e += u·k_j + BD_ij + EF_ij` for query i's keys `keys` (e holds their logits).
    #[inline(always)]
    pub(super) fn add_logits(&self, b: &ShiftedBlock, e: &mut [f32], i: usize, keys: Range<usize>) {
        for (e, j) in e.iter_mut().zip(keys) {
            *e += self.term(b, i, j);
        }
    }
}
