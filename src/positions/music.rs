//! Huang et al. 2018 (Music Transformer): relative logits `Q · E_rᵀ` turned into absolute positions by the
//! memory-efficient *skew* (pad, reshape, slice) instead of gathering an (L, L, d_head) tensor.
//!
//! Column `c` of `Q · E_rᵀ` holds the relative distance `c − (L − 1)`. After the skew, cell (i, j) holds
//! `q_i · E_r[row(j − i)]`, the same value as the direct gather [`crate::positions::shaw::relative_logits`] with the
//! Music table layout, which the tests use to check the skew.
//!
//! - Masked (causal) form: `E` has L rows, distances −(L−1)..=0. `QEᵀ` (L, L) → pad one zero column on the
//!   left (L, L+1) → reshape the same memory to (L+1, L) → drop the first row (L, L). Cells with j > i hold
//!   left-overs of the next row and must be masked.
//! - Unmasked (bidirectional) form, tensor2tensor's: `E` has 2L−1 rows, distances −(L−1)..=L−1. `QEᵀ`
//!   (L, 2L−1) → pad one zero column on the right (L, 2L) → flatten, pad L−1 zeros and reshape to
//!   (L+1, 2L−1) → keep rows 0..L and columns L−1.. (L, L).
//!
//! A user's table E_r (R, d_head) may be shorter than the sequence needs. [`table_for_length`] builds the L
//! (or 2L−1) rows the skew needs through a [`RelTable`]: with [`crate::positions::table::Edge::Zero`] (tensor2tensor,
//! our default for this method) missing distances read zero vectors, with `Edge::Clip` (Shaw) the edge row.

use crate::positions::table::RelTable;
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
/// (L, d_head) for the causal form, (2L−1, d_head) for the bidirectional one.
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
