//! Huang et al. 2018 (Music Transformer): relative logits `Q · E_rᵀ` turned into absolute positions by the memory-efficient *skew* (pad, reshape, slice)
//! instead of gathering an (L, L, d_head) tensor. Column `c` of `Q · E_rᵀ` holds the relative distance `c − (L − 1)`. After the skew, cell (i, j) holds
//! `q_i · E_r[row(j − i)]`, the same value as the direct gather [`crate::positions::shaw::relative_logits`] with the Music table layout, which the tests use
//! to check the skew ([`table_for_length`]: the rows the skew needs, from a table of any length).
//!
//! - Masked (causal) form: `E` has L rows, distances −(L−1)..=0. `QEᵀ` (L, L) → pad one zero column on the left (L, L+1) → reshape the same memory to
//!   (L+1, L) → drop the first row (L, L). Cells with j > i hold left-overs of the next row and must be masked.
//! - Unmasked (bidirectional) form, tensor2tensor's: `E` has 2L−1 rows, distances −(L−1)..=L−1. `QEᵀ` (L, 2L−1) → pad one zero column on the right
//!   (L, 2L) → flatten, pad L−1 zeros and reshape to (L+1, 2L−1) → keep rows 0..L and columns L−1.. (L, L).

use crate::positions::logits_with_relative_term;
use crate::positions::table::RelTable;
use crate::stage::{PairLabels, Stage, StageText, QUERY_AXIS};
use ndarray::{s, Array2, ArrayView2};
use std::ops::Range;

/// The four stages of a skew, each a 2-D matrix for display.
#[derive(Clone, Debug, PartialEq)]
pub struct SkewSteps {
    /// `Q · Eᵀ`: (L, L) masked, (L, 2L−1) unmasked.
    pub qer: Array2<f32>,
    /// After the zero column: (L, L+1) masked, (L, 2L) unmasked.
    pub padded: Array2<f32>,
    /// The same memory read with another row length: (L+1, L) masked, (L+1, 2L−1) unmasked.
    pub reshaped: Array2<f32>,
    /// The relative logits at absolute positions, (L, L).
    pub sliced: Array2<f32>,
}

/// Distances, in row order, of the table the skew needs for length `l`.
fn skew_distances(l: usize, causal: bool) -> std::ops::RangeInclusive<isize> {
    let l = l as isize;
    if causal {
        1 - l..=0
    } else {
        1 - l..=l - 1
    }
}

/// The rows of `e_r` (R, d_head), read through `layout`, that a length-`l` skew needs:
/// (L, d_head) for the causal form, (2L−1, d_head) for the bidirectional one. A user's table E_r may be shorter
/// than the sequence needs: with [`crate::positions::table::Edge::Zero`] (tensor2tensor, our default for this
/// method) missing distances read zero vectors, with `Edge::Clip` (Shaw) the edge row.
pub fn table_for_length(e_r: ArrayView2<f32>, layout: RelTable, l: usize, causal: bool) -> Array2<f32> {
    let dists: Vec<isize> = skew_distances(l, causal).collect();
    let mut out = Array2::zeros((dists.len(), e_r.ncols()));
    for (mut row, d) in out.rows_mut().into_iter().zip(dists) {
        if let Some(r) = layout.row(d) {
            row.assign(&e_r.row(r));
        }
    }
    out
}

/// Skew `qer` into (L, L) absolute positions, keeping every step. `causal` picks the form.
pub fn skew(qer: ArrayView2<f32>, causal: bool) -> SkewSteps {
    let l = length(qer.ncols(), causal);
    skew_rows(qer, 0, causal, 0..l)
}

/// L of a `cols`-wide `Q · Eᵀ`: L columns masked, 2L−1 unmasked.
fn length(cols: usize, causal: bool) -> usize {
    if causal {
        cols
    } else {
        cols.div_ceil(2)
    }
}

/// The widths of the padded and of the reshaped buffers: (L+1, L) masked, (2L, 2L−1) unmasked.
fn widths(l: usize, causal: bool) -> (usize, usize) {
    if causal {
        (l + 1, l)
    } else {
        (2 * l, 2 * l - 1)
    }
}

/// Cell (r, c) of the reshaped buffer is element `r · W' + c` of the padded one read in row-major order
/// (the same memory with rows W' long instead of W): its (row, column) there, or `None` past the padded
/// buffer's end (the unmasked form's L−1 extra zeros).
fn reshaped_source(l: usize, causal: bool, r: usize, c: usize) -> Option<(usize, usize)> {
    let (w, w2) = widths(l, causal);
    let f = r * w2 + c;
    (f < l * w).then_some((f / w, f % w))
}

/// The rows of `Q · Eᵀ` that the skew's steps for query rows `queries` read: the queries' own, and the
/// neighbours the reshape moves into them (the row before; masked, the next row's leftovers).
pub fn qer_rows(l: usize, causal: bool, queries: Range<usize>) -> Range<usize> {
    let (w, w2) = widths(l, causal);
    let reshaped = queries.start..queries.end + 1;
    let first = (reshaped.start * w2 / w).min(queries.start);
    let last = ((reshaped.end * w2 - 1) / w).min(l - 1).max(queries.end - 1);
    first..last + 1
}

/// The skew's steps for query rows `queries` of a length-L layer, from `qer`: rows
/// `first..first + qer.nrows()` of `Q · Eᵀ`, at least [`qer_rows`]`(queries)`. The steps hold the queries'
/// rows of `Q · Eᵀ`, of the padded buffer and of the result, and rows `queries.start..=queries.end` of the
/// reshaped buffer (all L+1 of them when `queries` is `0..L`). Every cell is read by index from the one
/// before, as the pad, the reshape and the slice place it:
///
/// ```text
/// padded[i, c]   = 0 in the zero column (first masked, last unmasked), else qer[i, c − 1] (masked) or qer[i, c]
/// reshaped[r, c] = padded[f / W, f % W],  f = r·W' + c   (0 past the end)
/// sliced[i, j]   = reshaped[i + 1, j] (masked)  or  reshaped[i, j + L − 1] (unmasked)
/// ```
pub fn skew_rows(qer: ArrayView2<f32>, first: usize, causal: bool, queries: Range<usize>) -> SkewSteps {
    let l = length(qer.ncols(), causal);
    let (w, w2) = widths(l, causal);
    let held = first..first + qer.nrows();
    debug_assert!({
        let need = qer_rows(l, causal, queries.clone());
        held.start <= need.start && need.end <= held.end
    });
    let padded_at = |i: usize, c: usize| -> f32 {
        let row = qer.row(i - held.start);
        match (causal, c) {
            (true, 0) => 0.0,
            (true, c) => row[c - 1],
            (false, c) if c == w - 1 => 0.0,
            (false, c) => row[c],
        }
    };
    let rows = queries.len();
    let reshaped = Array2::from_shape_fn((rows + 1, w2), |(r, c)| reshaped_source(l, causal, queries.start + r, c).map_or(0.0, |(i, c)| padded_at(i, c)));
    let sliced = Array2::from_shape_fn((rows, l), |(i, j)| if causal { reshaped[[i + 1, j]] } else { reshaped[[i, j + l - 1]] });
    SkewSteps {
        qer: qer.slice(s![queries.start - held.start..queries.end - held.start, ..]).to_owned(),
        padded: Array2::from_shape_fn((rows, w), |(i, c)| padded_at(queries.start + i, c)),
        reshaped,
        sliced,
    }
}

/// What the Music Transformer says in the stages it shapes: E_r and the row each pair reads, the skew's four
/// steps (masked: a zero column first; unmasked: tensor2tensor's, a zero column last), the relative logits
/// they produce and the logits they are added to.
pub fn describe(stage: Stage, causal: bool) -> Option<StageText> {
    const SKEW_NOTICE: &str = "Column c holds distance c − (L − 1) for every query: the right numbers, in the wrong place. Row i's distance-0 cell is in the last column (causal) or the middle one (bidirectional).";
    Some(match (stage, causal) {
        (Stage::RelIndex, _) => StageText::new(
            "Table row of E_r (−1: zero vector)",
            "row of distance j − i in E_r",
            r"r_{ij} = \text{row of } E_r \text{ for distance } j - i \quad (-1\text{: zero vector})",
            "Each diagonal reads one row of E_r; −1 marks pairs that read nothing (a zero vector): keys after the query when causal, and distances beyond the table.",
        ),
        (Stage::RelK, _) => StageText::new(
            "Relative embeddings E_r",
            if causal { "rows for distances −k … 0" } else { "rows for distances −k … k" },
            if causal {
                r"E_r \in \mathbb{R}^{(k + 1) \times d_h}: \text{ one row per distance } -k, \dots, 0"
            } else {
                r"E_r \in \mathbb{R}^{(2k + 1) \times d_h}: \text{ one row per distance } -k, \dots, k"
            },
            "One learned vector per distance. The skew never builds an (L, L, d) tensor of them: it multiplies Q by this small table once and moves the products into place.",
        ),
        (Stage::SkewQer, true) => StageText::new(
            "Skew 1: Q E_rᵀ",
            "Q E_rᵀ (L × L), column c = distance c − (L − 1)",
            r"Q E_r^{\top} \in \mathbb{R}^{L \times L}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)",
            SKEW_NOTICE,
        )
        .on("column c (distance c − (n − 1))", QUERY_AXIS),
        (Stage::SkewQer, false) => StageText::new(
            "Skew 1: Q E_rᵀ",
            "Q E_rᵀ (L × (2L − 1)), column c = distance c − (L − 1)",
            r"Q E_r^{\top} \in \mathbb{R}^{L \times (2L - 1)}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)",
            SKEW_NOTICE,
        )
        .on("column c (distance c − (n − 1))", QUERY_AXIS),
        (Stage::SkewPadded, true) => StageText::new(
            "Skew 2: padded",
            "[0 | Q E_rᵀ]: a zero column first, L × (L + 1)",
            r"\bigl[\, 0 \mid Q E_r^{\top} \,\bigr] \in \mathbb{R}^{L \times (L + 1)}",
            "A zero column is put in front. Nothing moves yet: the trick is in how the same memory will be read next.",
        )
        .on("column (zero column first)", QUERY_AXIS),
        (Stage::SkewPadded, false) => StageText::new(
            "Skew 2: padded",
            "[Q E_rᵀ | 0]: a zero column last, L × 2L",
            r"\bigl[\, Q E_r^{\top} \mid 0 \,\bigr] \in \mathbb{R}^{L \times 2L}",
            "A zero column is appended on the right. Nothing moves yet: the trick is in how the same memory will be read next.",
        )
        .on("column (zero column last)", QUERY_AXIS),
        (Stage::SkewReshaped, true) => StageText::new(
            "Skew 3: reshaped",
            "the same memory read as (L + 1) × L",
            r"\operatorname{reshape}: \ L \times (L + 1) \ \to\ (L + 1) \times L \quad \text{(same memory)}",
            "The same numbers read with rows one shorter: each row slides one cell left of the row above, which moves every distance to its absolute key column. Row 0 is left over.",
        )
        .on("column of the reshaped buffer", "row of the reshaped buffer"),
        (Stage::SkewReshaped, false) => StageText::new(
            "Skew 3: reshaped",
            "flattened, L − 1 zeros appended, read as (L + 1) × (2L − 1)",
            r"\operatorname{reshape}: \ 2L^2 + (L - 1) \text{ values} \ \to\ (L + 1) \times (2L - 1) \quad \text{(same memory)}",
            "The flat buffer, with L − 1 zeros more, read with rows of 2L − 1: each row starts one cell further along, so every row's cells shift and distance j − i lands in column j + L − 1.",
        )
        .on("column of the reshaped buffer", "row of the reshaped buffer"),
        (Stage::SkewSliced, true) => StageText::new(
            "Skew 4: sliced",
            "reshaped[1:, :]: absolute positions (i, j)",
            r"S^{rel} = \operatorname{reshaped}[1{:},\ :\,] \in \mathbb{R}^{L \times L}",
            "Row 0 dropped: the relative logits at absolute positions. Cells above the diagonal hold leftovers of the next row; the causal mask removes them.",
        ),
        (Stage::SkewSliced, false) => StageText::new(
            "Skew 4: sliced",
            "reshaped[:L, L − 1:]: absolute positions (i, j)",
            r"S^{rel} = \operatorname{reshaped}[\,{:}L,\ L - 1{:}\,] \in \mathbb{R}^{L \times L}",
            "Rows 0..L and columns L − 1.. of the reshaped buffer: the relative logits at absolute positions (i, j), equal to the gather q_i · E_r[j − i].",
        ),
        (Stage::RelativeLogits, _) => StageText::new(
            "Relative logits",
            "Skew(Q E_rᵀ)[i, j] = q_i · E_r[j − i]",
            r"S^{rel}_{ij} = \operatorname{Skew}\bigl(Q E_r^{\top}\bigr)[i, j] = q_i \cdot E_r[j - i]",
            if causal {
                "q_i · E_r[j − i], produced by the skew from Q E_rᵀ without an (L, L, d) tensor. On and below the diagonal it is Skew 4; above it, Skew 4's leftovers are zeroed here (those keys are masked anyway)."
            } else {
                "q_i · E_r[j − i], produced by the skew from Q E_rᵀ without an (L, L, d) tensor. Compare it with Skew 4: they are the same matrix."
            },
        ),
        (Stage::Logits, _) => logits_with_relative_term(r"e_{ij} = \frac{q_i \cdot k_j + S^{rel}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})"),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the row of E_r, and the skew's leftover where the mask falls.
pub fn pair_labels() -> PairLabels {
    PairLabels {
        row: Some("table row of E_r = {}".into()),
        masked: "masked (j > i): the skew leaves a leftover here, the mask removes it",
        ..PairLabels::plain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::positions::shaw::relative_logits;
    use crate::positions::table::Edge;

    fn ramp(rows: usize, cols: usize, scale: f32) -> Array2<f32> {
        Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * scale - 2.0)
    }

    #[test]
    fn skew_equals_direct_gather() {
        for l in [1, 2, 3, 5, 8, 13] {
            for causal in [true, false] {
                for (rows, edge) in [(l, Edge::Zero), (3, Edge::Zero), (3, Edge::Clip), (2 * l + 3, Edge::Clip)] {
                    let rows = if causal { rows } else { rows | 1 };
                    let layout = if causal { RelTable::music_causal(rows, edge) } else { RelTable::music_bidirectional(rows, edge) };
                    let q = ramp(l, 4, 0.5);
                    let e_r = ramp(rows, 4, 0.25);
                    let table = table_for_length(e_r.view(), layout, l, causal);
                    let steps = skew(q.dot(&table.t()).view(), causal);
                    let direct = relative_logits(q.view(), e_r.view(), layout, l, crate::positions::table::QueryRows::all(l));
                    for i in 0..l {
                        for j in 0..l {
                            if !causal || j <= i {
                                assert_eq!(steps.sliced[[i, j]], direct[[i, j]], "L {l} causal {causal} rows {rows} ({i},{j})");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn masked_shapes() {
        let st = skew(ramp(4, 4, 1.0).view(), true);
        assert_eq!((st.padded.dim(), st.reshaped.dim(), st.sliced.dim()), ((4, 5), (5, 4), (4, 4)));
        let st = skew(ramp(4, 7, 1.0).view(), false);
        assert_eq!((st.padded.dim(), st.reshaped.dim(), st.sliced.dim()), ((4, 8), (5, 7), (4, 4)));
    }
}
