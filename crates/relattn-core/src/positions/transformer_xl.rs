//! Transformer-XL's relative attention (Dai et al. 2019) as XLNet computes it (Yang et al. 2019; Hugging Face's
//! `XLNetRelativeAttention.rel_attn_core`, the content stream): global biases u and v added to the query, a
//! sinusoid R of the relative position projected per head by W_R, the `rel_shift` that moves the position term from
//! relative to absolute columns, and XLNet's segment term. With δ(i, j) = i − j (query minus key, the paper's
//! direction: the opposite of relattn's d = j − i), k the clamp (`clip`, XLNet's `clamp_len`) and per head:
//!
//! ```text
//! R[δ]     = [sin(δ·f_0) … sin(δ·f_{D/2−1}) | cos(δ·f_0) … cos(δ·f_{D/2−1})],  f_m = 10000^(−2m/D)   (D = d_model, float32;
//!            an odd D, which no XLNet has, ⌈D/2⌉ sines and ⌊D/2⌋ cosines)
//! r_δ      = R[clamp(δ, lo, k)] W_R                 (d_head): lo = −k bidirectional ("bi"), 0 causal ("uni")
//! AC_ij    = (q_i + u) · k_j                        content, with the global content bias u (r_w_bias)
//! BD_ij    = (q_i + v) · r_{δ(i, j)}                position, with the global position bias v (r_r_bias)
//! EF_ij    = (q_i + s) · seg[i, j]                  seg = seg_embed[0] in the same segment, seg_embed[1] across (r_s_bias s)
//! e_ij     = (AC_ij + BD_ij + EF_ij) / √d_head      (−∞ where masked; no EF without segments)
//! ```
//!
//! XLNet computes BD for the positions pos_seq = Lk, Lk − 1, …, −Lq + 1 (bidirectional: Lk + Lq columns) or Lk, …, 0
//! (causal: Lk + 1), clamped to ±k, as `BD_rel = (Q + v) R_posᵀ` (Lq, W), column c the position Lk − c, then
//! `rel_shift`: the same memory read as (W, Lq), its first row dropped, read again as (Lq, W − 1), the first Lk columns
//! kept. Cell (i, j) of the result is element f = Lq + i·(W − 1) + j of BD_rel read row-major: row ⌊f / W⌋, column f mod W
//! ([`rel_shift_source`]); for every visible pair that is row i, column Lq − i + j, the position Lk − Lq + i − j = δ(i, j)
//! of query i aligned to the last keys. Beside the Music Transformer's skew (positions::music) the difference is the
//! padding column: the skew pads a zero column and drops the row it fills; XLNet computes one position more (Lk, column 0,
//! never read) and drops the first Lq values instead, with no padding. Bidirectionally every cell lands in its own row (no
//! leftovers, no mask needed); causal, cells above the diagonal hold the next row's values, which the mask removes.
//!
//! relattn keeps a head's numbers as one table (the `rel_k` stage), (P + 5, d_head): rows 0..P the projected sinusoids
//! r_δ for δ = k, k − 1, …, lo (P = k + 1 causal, 2k + 1 bidirectional; row k − clamp(δ) is δ's, XLNet's descending
//! order), then u, v, s, seg_embed[0], seg_embed[1]. Scenario files give `xl_w_r` (d_model, heads·d_head), `xl_u`,
//! `xl_v`, `xl_s` (heads, d_head), `xl_seg_embed` (2, heads, d_head) and `segment_ids` (b, n) (see docs/src/files.md);
//! [`table`] makes the head's table from them.

use crate::core::matmul::matmul;
use crate::error::{Error, Result};
use crate::stage::{PairLabels, Stage, StageText, LOGITS_TITLE};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis};

/// The rows of a head's table after the sinusoids: u, v, s, seg_embed[0] (same segment), seg_embed[1] (other).
pub const BIAS_ROWS: usize = 5;

/// The largest number of segments a generated layer is cut into.
pub const MAX_SEGMENTS: usize = 1 << 16;

/// Transformer-XL's options (method transformer_xl) besides the clamp k (`clip`) and the mask (`causal`: XLNet's
/// attn_type "uni", else "bi").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransformerXl {
    /// XLNet's segment term EF: 0 for none (no token_type_ids); otherwise the positions carry segment ids (a
    /// scenario's `segment_ids`, or n positions cut into this many equal runs, position p in segment ⌊p·segments/n⌋).
    pub segments: usize,
}

impl TransformerXl {
    /// Refuses `segments` beyond [`MAX_SEGMENTS`], by name.
    pub fn check(&self) -> Result<()> {
        if self.segments > MAX_SEGMENTS {
            return Err(Error::invalid("segments", self.segments, format!("0 (no segment term) to {MAX_SEGMENTS}")));
        }
        Ok(())
    }

    /// The segment ids of a generated layer of n positions: ⌊p·segments/n⌋; `None` without segments.
    pub fn generated_ids(&self, n: usize) -> Option<Array1<u32>> {
        (self.segments > 0).then(|| Array1::from_shape_fn(n, |p| (p * self.segments / n.max(1)) as u32))
    }
}

/// Rows of the sinusoid part: k + 1 causal (δ = k … 0), 2k + 1 bidirectional (δ = k … −k).
pub fn positions(k: usize, causal: bool) -> usize {
    if causal {
        k + 1
    } else {
        2 * k + 1
    }
}

/// The table row of δ = i − j: k − clamp(δ, lo, k), lo = 0 causal, −k bidirectional.
pub fn row(k: usize, causal: bool, delta: isize) -> usize {
    let k = k as isize;
    let lo = if causal { 0 } else { -k };
    (k - delta.clamp(lo, k)) as usize
}

/// The keys of query i (of Lq, against Lk) that read row r of the sinusoids: one range, since the row never decreases
/// with j; none for the bias rows.
pub fn readers(k: usize, causal: bool, r: usize, i: usize, lq: usize, lk: usize) -> std::ops::Range<usize> {
    let reads = |j: usize| row(k, causal, -crate::positions::table::distance(i, j, lq, lk)) == r;
    match (0..lk).position(reads) {
        Some(lo) => lo..(lo..lk).find(|&j| !reads(j)).unwrap_or(lk),
        None => 0..0,
    }
}

/// XLNet's sinusoid of position `pos` for d_model `d`: ⌈d/2⌉ sines of pos·f_m, then ⌊d/2⌋ cosines, f_m =
/// 1/10000^(2m/d), in float32 as torch computes them. XLNet's d_model is even (d/2 of each); for an odd one, which no
/// XLNet has, the last cosine is left out so that R has d_model columns.
pub fn sinusoid(pos: isize, d: usize) -> Array1<f32> {
    let sines = d.div_ceil(2);
    let inv = |m: usize| 1.0f32 / 10000f32.powf((2 * m) as f32 / d as f32);
    Array1::from_shape_fn(d, |c| if c < sines { (pos as f32 * inv(c)).sin() } else { (pos as f32 * inv(c - sines)).cos() })
}

/// A head's table (P + [`BIAS_ROWS`], d_head): the sinusoids of δ = k … lo projected by the head's columns of W_R
/// (`w_r` (d_model, d_head)), then u, v, s and the two segment embeddings (`seg` (2, d_head)).
pub fn table(w_r: ArrayView2<f32>, u: ArrayView1<f32>, v: ArrayView1<f32>, s: ArrayView1<f32>, seg: ArrayView2<f32>, k: usize, causal: bool) -> Array2<f32> {
    let (d, dh) = w_r.dim();
    let p = positions(k, causal);
    let mut r = Array2::zeros((p, d));
    for (row, mut out) in r.outer_iter_mut().enumerate() {
        out.assign(&sinusoid(k as isize - row as isize, d)); // one sinusoid a row (per element it was O(P·d²))
    }
    let mut out = Array2::zeros((p + BIAS_ROWS, dh));
    out.slice_mut(s![..p, ..]).assign(&matmul(r.view(), w_r));
    for (row, vector) in [u, v, s, seg.row(0), seg.row(1)].into_iter().enumerate() {
        out.row_mut(p + row).assign(&vector);
    }
    out
}

/// A head's table split: (r (P, d_head), u, v, s, seg (2, d_head)).
pub struct Parts<'a> {
    pub r: ArrayView2<'a, f32>,
    pub u: ArrayView1<'a, f32>,
    pub v: ArrayView1<'a, f32>,
    pub s: ArrayView1<'a, f32>,
    pub seg: ArrayView2<'a, f32>,
}

/// The parts of a head's table (P + [`BIAS_ROWS`], d_head).
pub fn split(table: ArrayView2<'_, f32>) -> Parts<'_> {
    let p = table.nrows() - BIAS_ROWS;
    let at = |r: usize| table.index_axis_move(Axis(0), p + r);
    Parts { r: table.slice_move(s![..p, ..]), u: at(0), v: at(1), s: at(2), seg: table.slice_move(s![p + 3..p + 5, ..]) }
}

/// `q` (rows, d_head) with `bias` added to every row: q + u, q + v, q + s.
pub fn biased(q: ArrayView2<f32>, bias: ArrayView1<f32>) -> Array2<f32> {
    &q + &bias
}

/// Columns W of BD_rel for Lq queries against Lk keys: Lk + Lq bidirectional, Lk + 1 causal.
pub fn width(lq: usize, lk: usize, causal: bool) -> usize {
    if causal {
        lk + 1
    } else {
        lk + lq
    }
}

/// Where `rel_shift` reads cell (i, j): element f = Lq + i·(W − 1) + j of BD_rel (Lq, W) read row-major, its (row,
/// column). Past the last row (a causal leftover of the last query) it is `None`: the value of a row that does not
/// exist, masked.
pub fn rel_shift_source(lq: usize, w: usize, i: usize, j: usize) -> Option<(usize, usize)> {
    let f = lq + i * (w - 1) + j;
    (f / w < lq).then_some((f / w, f % w))
}

/// The steps of `rel_shift` on BD_rel (Lq, W), whole, for pictures beside [`crate::positions::music::SkewSteps`].
#[derive(Clone, Debug, PartialEq)]
pub struct RelShiftSteps {
    /// BD_rel (Lq, W): column c the position Lk − c.
    pub relative: Array2<f32>,
    /// The same memory read as (W, Lq).
    pub reshaped: Array2<f32>,
    /// Its first row dropped: (W − 1, Lq) (the first Lq values, position Lk's column and what follows it).
    pub dropped: Array2<f32>,
    /// The same memory read again as (Lq, W − 1).
    pub reread: Array2<f32>,
    /// Its first Lk columns: BD at absolute positions (i, j).
    pub shifted: Array2<f32>,
}

/// `rel_shift` of `relative` (Lq, W) for Lk keys, each step kept (XLNet's `rel_shift_bnij`).
pub fn rel_shift(relative: ArrayView2<f32>, lk: usize) -> RelShiftSteps {
    let (lq, w) = relative.dim();
    let flat: Vec<f32> = relative.iter().copied().collect();
    let reshaped = Array2::from_shape_vec((w, lq), flat.clone()).expect("W·Lq values");
    let dropped = reshaped.slice(s![1.., ..]).to_owned();
    let reread = Array2::from_shape_vec((lq, w - 1), flat[lq..].to_vec()).expect("(W − 1)·Lq values");
    let shifted = reread.slice(s![.., ..lk]).to_owned();
    RelShiftSteps { relative: relative.to_owned(), reshaped, dropped, reread, shifted }
}

/// BD_rel's rows `rows` (of Lq queries against Lk keys): (q_i + v) · r at the positions Lk − c clamped, (rows, W).
pub fn bd_relative(parts: &Parts, q: ArrayView2<f32>, rows: std::ops::Range<usize>, lk: usize, k: usize, causal: bool) -> Array2<f32> {
    let lq = q.nrows();
    let w = width(lq, lk, causal);
    let p = matmul(biased(q.slice(s![rows, ..]), parts.v).view(), parts.r.t()); // (rows, P)
    Array2::from_shape_fn((p.nrows(), w), |(i, c)| p[[i, row(k, causal, lk as isize - c as isize)]])
}

/// A head's position and segment terms for the query rows `rows`: BD_rel (rows, W), BD after `rel_shift`
/// (rows, Lk; causal, the leftovers above the diagonal kept as XLNet leaves them) and EF (rows, Lk) with segments.
pub struct Terms {
    pub bd_relative: Array2<f32>,
    pub bd: Array2<f32>,
    pub ef: Option<Array2<f32>>,
}

/// [`Terms`] of the query rows `rows` of `q` (Lq, d_head) against Lk keys, with the head's `table` and the segment ids
/// of the keys (`segments`, Lk; query i's is key i + Lk − Lq's). `materialized`: BD a dot per cell with its row of r
/// (the gather's way), else BD_rel's rows read through [`rel_shift_source`] (the rows it reads: `rows` and the next).
#[allow(clippy::too_many_arguments)]
pub fn terms(
    table: ArrayView2<f32>,
    q: ArrayView2<f32>,
    lk: usize,
    rows: std::ops::Range<usize>,
    segments: Option<ArrayView1<u32>>,
    k: usize,
    causal: bool,
    materialized: bool,
) -> Terms {
    let parts = split(table);
    let lq = q.nrows();
    let w = width(lq, lk, causal);
    let read = rows.start..(rows.end + 1).min(lq);
    let rel = bd_relative(&parts, q, read.clone(), lk, k, causal);
    let bd = if materialized {
        let qv = biased(q.slice(s![rows.clone(), ..]), parts.v);
        Array2::from_shape_fn((rows.len(), lk), |(t, j)| {
            let i = rows.start + t;
            match rel_shift_source(lq, w, i, j) {
                // The visible pairs' cell by definition; a leftover (causal, j past the query) as rel_shift moves it.
                Some((r, c)) if r == i => qv.row(t).dot(&parts.r.row(row(k, causal, lk as isize - c as isize))),
                Some((r, c)) => rel[[r - read.start, c]],
                None => 0.0,
            }
        })
    } else {
        Array2::from_shape_fn((rows.len(), lk), |(t, j)| rel_shift_source(lq, w, rows.start + t, j).map_or(0.0, |(r, c)| rel[[r - read.start, c]]))
    };
    let ef = segments.map(|ids| {
        let qs = biased(q.slice(s![rows.clone(), ..]), parts.s);
        let e = matmul(qs.view(), parts.seg.t()); // (rows, 2): same, other
        Array2::from_shape_fn((rows.len(), lk), |(t, j)| e[[t, (ids[rows.start + t + lk - lq] != ids[j]) as usize]])
    });
    Terms { bd_relative: rel.slice(s![..rows.len(), ..]).to_owned(), bd, ef }
}

/// What Transformer-XL says in the stages it shapes.
pub fn describe(stage: Stage, causal: bool) -> Option<StageText> {
    Some(match stage {
        Stage::RelIndex => StageText::new(
            "Row of r for i − j (clamped)",
            "k − clamp(i − j, lo, k): lo = −k bidirectional, 0 causal",
            r"\text{row}_{ij} = k - \operatorname{clamp}(i - j,\ \text{lo},\ k), \quad \text{lo} = -k \text{ (bi)},\ 0 \text{ (uni)}",
            "Transformer-XL measures δ = i − j (query minus key) and reads the projected sinusoid of δ, clamped at k (XLNet's clamp_len). The rows run from δ = k down, XLNet's order.",
        ),
        Stage::RelK => StageText::new(
            "Projected sinusoids r = R W_R, then u, v, s, seg",
            "rows δ = k … lo: R[δ] W_R; then u, v, s, seg_embed[same], seg_embed[other]",
            r"r_\delta = R[\delta]\,W^R_h \ (\delta = k, \dots, \text{lo}), \quad u,\ v,\ s,\ \text{seg}_{=},\ \text{seg}_{\neq} \in \mathbb{R}^{d_h}",
            "The fixed sinusoids R of each distance, projected by this head's W_R: a smooth family of vectors, not a learned row per distance. The last five rows are the head's global biases u, v, s and its two segment embeddings.",
        )
        .on("component (d_head)", "row: δ = k … lo, then u, v, s, seg₌, seg≠"),
        Stage::ContentLogits => StageText::new(
            "AC = (q_i + u) · k_j",
            "AC_ij = (q_i + u) · k_j",
            r"\text{AC}_{ij} = (q_i + u) \cdot k_j",
            "The content term with the global content bias u: u · k_j is the same for every query, so a key that is salient to u is salient to all.",
        ),
        Stage::XlBdRelative => StageText::new(
            "BD before rel_shift",
            "BD_rel[i, c] = (q_i + v) · r at position Lk − c",
            r"\text{BD}^{rel}_{ic} = (q_i + v) \cdot r_{L_k - c}",
            "Every query against every position Lk, Lk − 1, …: the right numbers in the wrong place, as the skew's Q E_rᵀ. Column 0 (position Lk) is never read: it stands where the skew puts its zero column.",
        )
        .on("column c (position Lk − c)", crate::stage::QUERY_AXIS),
        Stage::XlBd => StageText::new(
            "BD after rel_shift",
            if causal {
                "rel_shift(BD_rel)[i, j] = (q_i + v) · r_{i − j}; above the diagonal the next row's values (masked)"
            } else {
                "rel_shift(BD_rel)[i, j] = (q_i + v) · r_{i − j}"
            },
            r"\text{BD}_{ij} = \operatorname{rel\_shift}\bigl(\text{BD}^{rel}\bigr)[i, j] = (q_i + v) \cdot r_{i - j}",
            if causal {
                "BD_rel read as (W, Lq), its first row dropped and read back as (Lq, W − 1): each row slides one cell, and cell (i, j) holds distance i − j. Above the diagonal are the next row's values: the causal mask removes them."
            } else {
                "BD_rel read as (W, Lq), its first row dropped and read back as (Lq, W − 1): each row slides one cell, and cell (i, j) holds distance i − j. With Lk + Lq positions every cell lands in its own row: no leftovers, no mask needed."
            },
        ),
        Stage::XlEf => StageText::new(
            "EF: segment term (q_i + s) · seg",
            "EF_ij = (q_i + s) · seg_embed[segment i ≠ segment j]",
            r"\text{EF}_{ij} = (q_i + s) \cdot \text{seg}_{[\sigma_i \ne \sigma_j]}",
            "XLNet's segment term: one of two values per query, same segment or not. In one segment it is a constant per row, which the softmax ignores.",
        ),
        Stage::RelativeLogits => StageText::new(
            "Position and segment terms BD + EF",
            "BD_ij + EF_ij, added before the scale (0 above the diagonal when causal)",
            r"\text{BD}_{ij} + \text{EF}_{ij}",
            "The position term after rel_shift plus the segment term, when the layer has segments.",
        ),
        Stage::Logits => StageText::new(
            LOGITS_TITLE,
            "(AC_ij + BD_ij + EF_ij) / √d_head, −∞ where masked",
            r"e_{ij} = \frac{\text{AC}_{ij} + \text{BD}_{ij} + \text{EF}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            "Content, position and segment terms added, then scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: AC, BD + EF and the row of r.
pub fn pair_labels() -> PairLabels {
    PairLabels {
        content: "AC = (q + u)·k = {}",
        relative: Some("BD + EF = {}"),
        row: Some("row of r for i − j = {}".into()),
        masked: "masked (j > i): rel_shift leaves the next row's value here, the mask removes it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(rows: usize, cols: usize) -> Array2<f32> {
        Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 7 + j * 3) % 11) as f32 - 5.0)
    }

    /// rel_shift's steps, read as XLNet's reshapes do, put position Lk − Lq + i − j at (i, j) for every visible pair,
    /// bidirectional and causal, square and not.
    #[test]
    fn rel_shift_puts_each_distance_in_place() {
        for (lq, lk) in [(1, 1), (3, 3), (5, 5), (2, 6), (4, 7)] {
            for causal in [false, true] {
                let w = width(lq, lk, causal);
                // Cell (i, c) holds 1000·i + position (Lk − c): the shift must bring row i's position of (i, j).
                let rel = Array2::from_shape_fn((lq, w), |(i, c)| (1000 * i) as f32 + (lk as f32 - c as f32));
                let steps = rel_shift(rel.view(), lk);
                assert_eq!(steps.reshaped.dim(), (w, lq));
                assert_eq!(steps.dropped.dim(), (w - 1, lq));
                for i in 0..lq {
                    for j in 0..lk {
                        let delta = (lk - lq + i) as f32 - j as f32;
                        let visible = !causal || delta >= 0.0;
                        if visible {
                            assert_eq!(steps.shifted[[i, j]], (1000 * i) as f32 + delta, "lq {lq} lk {lk} causal {causal} ({i}, {j})");
                        }
                        if let Some((r, c)) = rel_shift_source(lq, w, i, j) {
                            assert_eq!(steps.shifted[[i, j]], rel[[r, c]], "source of ({i}, {j})");
                        }
                    }
                }
            }
        }
    }

    /// Rows are k − clamp(δ): the sinusoids of δ = k … lo in XLNet's descending order.
    #[test]
    fn rows_clamp_at_k() {
        assert_eq!((row(3, false, 3), row(3, false, 0), row(3, false, -3), row(3, false, -9), row(3, false, 9)), (0, 3, 6, 6, 0));
        assert_eq!((row(3, true, -2), row(3, true, 0), row(3, true, 2)), (3, 3, 1));
        assert_eq!((positions(3, true), positions(3, false)), (4, 7));
    }

    /// XLNet's sinusoid: sines then cosines; position 0 gives zeros then ones; an odd d_model one sine more.
    #[test]
    fn sinusoid_halves() {
        let r = sinusoid(0, 6);
        assert_eq!(r.to_vec(), vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let r = sinusoid(2, 4);
        assert!((r[0] - 2f32.sin()).abs() < 1e-6 && (r[1] - (2.0f32 / 100.0).sin()).abs() < 1e-6 && (r[2] - 2f32.cos()).abs() < 1e-6);
        assert_eq!(sinusoid(0, 5).to_vec(), vec![0.0, 0.0, 0.0, 1.0, 1.0]);
    }

    /// The efficient BD (rel_shift of BD_rel) equals the materialized one on the visible pairs, for row blocks too.
    #[test]
    fn efficient_and_materialized_bd_agree() {
        let (lq, lk, dh, k) = (5, 5, 3, 2);
        for causal in [false, true] {
            let t = ramp(positions(k, causal) + BIAS_ROWS, dh);
            let q = ramp(lq, dh).mapv(|x| x * 0.1);
            for rows in [0..lq, 1..3, 4..5] {
                let a = terms(t.view(), q.view(), lk, rows.clone(), None, k, causal, false);
                let b = terms(t.view(), q.view(), lk, rows.clone(), None, k, causal, true);
                assert!((&a.bd - &b.bd).iter().all(|x| x.abs() < 1e-5), "{causal} {rows:?}");
            }
        }
    }
}
