//! Shaw, Uszkoreit & Vaswani 2018: the relative terms of relation-aware attention,
//!
//! ```text
//! e_ij = q_i · (k_j + a^K_ij) / sqrt(d_head)        a^K_ij = w^K[row(d_ij)]
//! z_i  = Σ_j α_ij (v_j + a^V_ij)                    a^V_ij = w^V[row(d_ij)]
//! ```
//!
//! in two ways that give the same numbers, both for any [`RelTable`] (so the Music Transformer's direct gather is the same code with its table):
//! - *efficient* (the default): `P = Q · w^Kᵀ` is only (Lq, R) with R = 2k+1 rows, and the relative logit of (i, j) is the gather `P[i, row(d_ij)]`;
//!   the value term sums the weights of each row into R buckets, `B[i, r] = Σ_{j: row(d_ij) = r} α_ij`, then takes `B · w^V`. Nothing of size Lq·Lk·d_head
//!   is built.
//! - *materialized* (the seeds' way, for reference and teaching): gather the (Lq, Lk, d_head) tensor `A[i, j] = w[row(d_ij)]`, contract it with Q or α.

use crate::core::matmul::matmul;
use crate::positions::logits_with_relative_term;
use crate::positions::table::{distance, Edge, QueryRows, RelTable};
use crate::stage::{PairLabels, Stage, StageText, QUERY_AXIS};
use ndarray::{s, Array2, Array3, ArrayView2, ArrayViewMut2, Zip};

/// Adds the relative logits `P[i, row(d_ij)]`, `P = Q · tableᵀ`, into `out` (rows, Lk) for the query rows
/// `rows` ([`QueryRows::all`]: every query). `q` is those rows' (rows, d_head), `table` is (R, d_head); a
/// pair outside a zero-edged table adds nothing.
pub fn add_relative_logits(mut out: ArrayViewMut2<f32>, q: ArrayView2<f32>, table: ArrayView2<f32>, layout: RelTable, rows: QueryRows) {
    let lk = out.ncols();
    let p = matmul(q, table.t()); // (rows, R)
    let last = layout.rows() - 1;
    for (i, (mut row, p_i)) in out.outer_iter_mut().zip(p.outer_iter()).enumerate() {
        let seg = layout.segments(rows.query(i), rows.lq, lk);
        if layout.edge == Edge::Clip {
            row.slice_mut(s![seg.left]).mapv_inplace(|v| v + p_i[0]);
            row.slice_mut(s![seg.right]).mapv_inplace(|v| v + p_i[last]);
        }
        let n = seg.mid.len();
        row.slice_mut(s![seg.mid]).zip_mut_with(&p_i.slice(s![seg.mid_row..seg.mid_row + n]), |v, p| *v += p);
    }
}

/// Relative logits (rows, Lk) of the query rows `rows` by the efficient gather of `Q · tableᵀ`.
pub fn relative_logits(q: ArrayView2<f32>, table: ArrayView2<f32>, layout: RelTable, lk: usize, rows: QueryRows) -> Array2<f32> {
    let mut out = Array2::zeros((q.nrows(), lk));
    add_relative_logits(out.view_mut(), q, table, layout, rows);
    out
}

/// The (count, Lk, d_head) tensor `A[i, j] = table[row(d_ij)]` of `count` query rows from `rows.first`
/// (zeros outside a zero-edged table). This is what the seeds build; it costs Lq·Lk·d_head floats.
pub fn gather_table(table: ArrayView2<f32>, layout: RelTable, rows: QueryRows, count: usize, lk: usize) -> Array3<f32> {
    let mut a = Array3::zeros((count, lk, table.ncols()));
    for i in 0..count {
        for j in 0..lk {
            if let Some(r) = layout.row(distance(rows.query(i), j, rows.lq, lk)) {
                a.slice_mut(s![i, j, ..]).assign(&table.row(r));
            }
        }
    }
    a
}

/// Relative logits (rows, Lk) of the query rows `rows` the materialized way: `S[i, j] = q_i · A[i, j]`.
pub fn relative_logits_materialized(q: ArrayView2<f32>, table: ArrayView2<f32>, layout: RelTable, lk: usize, rows: QueryRows) -> Array2<f32> {
    let a = gather_table(table, layout, rows, q.nrows(), lk);
    let mut out = Array2::zeros((q.nrows(), lk));
    Zip::from(out.rows_mut()).and(q.rows()).and(a.outer_iter()).for_each(|mut s_i, q_i, a_i| s_i.assign(&a_i.dot(&q_i)));
    out
}

/// Sums each query's weights into the table rows they read: `B[i, r] = Σ_{j: row(d_ij) = r} α_ij`, (rows, R),
/// for the weights (rows, Lk) of the query rows `rows`.
pub fn value_buckets(weights: ArrayView2<f32>, layout: RelTable, rows: QueryRows) -> Array2<f32> {
    let (count, lk) = weights.dim();
    let last = layout.rows() - 1;
    let mut buckets = Array2::zeros((count, layout.rows()));
    for (i, (w_i, mut b_i)) in weights.outer_iter().zip(buckets.outer_iter_mut()).enumerate() {
        let seg = layout.segments(rows.query(i), rows.lq, lk);
        if layout.edge == Edge::Clip {
            b_i[0] += w_i.slice(s![seg.left]).sum();
            b_i[last] += w_i.slice(s![seg.right]).sum();
        }
        let n = seg.mid.len();
        b_i.slice_mut(s![seg.mid_row..seg.mid_row + n]).zip_mut_with(&w_i.slice(s![seg.mid]), |b, w| *b += w);
    }
    buckets
}

/// The value term the materialized way: `Σ_j α_ij A[i, j]`, (rows, d_head), for the weights (rows, Lk) of
/// the query rows `rows`.
pub fn relative_values_materialized(weights: ArrayView2<f32>, table: ArrayView2<f32>, layout: RelTable, rows: QueryRows) -> Array2<f32> {
    let (count, lk) = weights.dim();
    let a = gather_table(table, layout, rows, count, lk);
    let mut out = Array2::zeros((count, table.ncols()));
    Zip::from(out.rows_mut()).and(weights.rows()).and(a.outer_iter()).for_each(|mut z_i, w_i, a_i| {
        z_i.assign(&a_i.t().dot(&w_i));
    });
    out
}

/// `B · table`: the value term from the buckets, (Lq, d_head).
pub fn relative_values(buckets: ArrayView2<f32>, table: ArrayView2<f32>) -> Array2<f32> {
    matmul(buckets, table)
}

/// What Shaw's method says in the stages it shapes: its clipped index, w^K and w^V, the gathered relative
/// logits, the logits they are added to, and the value term's buckets and output.
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RelIndex => StageText::new(
            "Table row clip(j − i, k) + k",
            "max(−k, min(k, j − i)) + k",
            r"r_{ij} = \operatorname{clip}(j - i,\, k) + k = \max\bigl(-k, \min(k,\, j - i)\bigr) + k",
            "Distances beyond ±k are clipped to the table's edge rows, so the band of distinct colours is 2k + 1 diagonals wide and the corners are flat: far apart is just 'far'.",
        ),
        Stage::RelK => StageText::new(
            "Relative key table w^K",
            "rows for distances −k … k",
            r"w^K = \bigl(w^K_{-k}, \dots, w^K_{k}\bigr), \qquad a^K_{ij} = w^K_{\operatorname{clip}(j - i,\, k)}",
            "2k + 1 learned vectors, one per clipped distance. Row r serves every (i, j) with clip(j − i, k) + k = r: one row, a whole diagonal.",
        ),
        Stage::RelV => StageText::new(
            "Relative value table w^V",
            "a^V_ij = w^V[clip(j − i, k) + k]",
            r"a^V_{ij} = w^V_{\operatorname{clip}(j - i,\, k)}",
            "The value-side table: the relative part of the output adds row clip(j − i, k) + k of it, weighted by α_ij. Same rows, same diagonals as w^K.",
        ),
        Stage::RelativeLogits => StageText::new(
            "Relative logits",
            "q_i · a^K_ij = (Q w^Kᵀ)[i, clip(j − i, k) + k]",
            r"q_i \cdot a^K_{ij} = \bigl(Q\, {w^K}^{\top}\bigr)\bigl[i,\ \operatorname{clip}(j - i,\, k) + k\bigr]",
            "Cell (i, j) is q_i · w^K[clip(j − i, k) + k]: in each row, keys beyond ±k all read an edge row, so both ends of every row are flat; only the 2k + 1 diagonals near the middle differ.",
        ),
        Stage::Logits => logits_with_relative_term(r"e_{ij} = \frac{q_i \cdot k_j + q_i \cdot a^K_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})"),
        Stage::ValueBuckets => StageText::new(
            "Weight per w^V row",
            "B[i, r] = Σ_{j: clip(j−i,k)+k = r} α_ij",
            r"B_{ir} = \sum_{j:\ \operatorname{clip}(j - i,\, k) + k \,=\, r} \alpha_{ij}",
            "Row i sums the weights of the keys that share a w^V row: the attention each distance (clipped) received from query i. Row sums are 1.",
        )
        .on("w^V row r", QUERY_AXIS),
        Stage::OutputRelative => StageText::new(
            "Output, relative part",
            "Σ_j α_ij a^V_ij = B w^V",
            r"\sum_j \alpha_{ij}\, a^V_{ij} = (B\, w^V)_i",
            "Σ α a^V = B w^V: what the attended distances carry, computed from the small bucket matrix, not an (L, L, d) tensor.",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the relative term and the clipped row of k.
pub fn pair_labels(k: usize) -> PairLabels {
    PairLabels { row: Some(format!("table row clip(j − i, {k}) + {k} = {{}}")), ..PairLabels::plain() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr2, Array, Axis};

    /// Seed 004: x = arange(120).reshape(2, 3, 4, 5) used as queries, its integer table, k = 2.
    #[test]
    fn seed_004_relation_key_logits() {
        let table = arr2(&[[-7., 4., 5., -4., 6.], [-1., -2., -6., -3., 6.], [6., -3., 2., 5., 7.], [-3., 6., 2., 3., 1.], [-9., 5., 8., -1., 0.]]);
        let x = Array::range(0., 120., 1.).into_shape_with_order((6, 4, 5)).unwrap();
        let first = relative_logits(x.index_axis(Axis(0), 0), table.view(), RelTable::shaw(2), 4, QueryRows::all(4));
        assert_eq!(first, arr2(&[[44., 23., 18., 18.], [-29., 129., 68., 33.], [66., -59., 214., 113.], [86., 86., -89., 299.]]));
        let last = relative_logits(x.index_axis(Axis(0), 5), table.view(), RelTable::shaw(2), 4, QueryRows::all(4));
        assert_eq!(last, arr2(&[[1744., 923., 318., 318.], [-629., 1829., 968., 333.], [466., -659., 1914., 1013.], [486., 486., -689., 1999.]]));
        let m = relative_logits_materialized(x.index_axis(Axis(0), 5), table.view(), RelTable::shaw(2), 4, QueryRows::all(4));
        assert_eq!(m, last);
    }

    #[test]
    fn buckets_keep_the_weight_mass() {
        let w = Array2::from_elem((3, 7), 1.0 / 7.0);
        let b = value_buckets(w.view(), RelTable::shaw(1), QueryRows::all(3));
        for row in b.rows() {
            assert!((row.sum() - 1.0).abs() < 1e-6);
        }
        let a = gather_table(arr2(&[[1., 1.], [2., 2.], [3., 3.]]).view(), RelTable::shaw(1), QueryRows::all(1), 1, 3);
        // One query aligned to the last of three keys: distances −2, −1, 0 read rows 0, 0, 1.
        assert_eq!(a.sum_axis(Axis(2)), arr2(&[[2., 2., 4.]]));
    }
}
