//! Huang et al. 2018 (Music Transformer): relative logits `Q · E_rᵀ` turned into absolute positions by the
//! memory-efficient *skew* (pad, reshape, slice) instead of gathering an (L, L, d_head) tensor.
//!
//! Column `c` of `Q · E_rᵀ` holds the relative distance `c − (L − 1)`. After the skew, cell (i, j) holds
//! `q_i · E_r[row(j − i)]`, the same value as the direct gather [`crate::shaw::relative_logits`] with the
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
//! (or 2L−1) rows the skew needs through a [`RelTable`]: with [`crate::relpos::Edge::Zero`] (tensor2tensor,
//! our default for this method) missing distances read zero vectors, with `Edge::Clip` (Shaw) the edge row.

use crate::relpos::RelTable;
use ndarray::{s, Array1, Array2, ArrayView2};

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
    if causal {
        skew_masked(qer)
    } else {
        skew_unmasked(qer)
    }
}

/// Masked form: (L, L) → pad left (L, L+1) → reshape (L+1, L) → drop row 0 (L, L).
fn skew_masked(qer: ArrayView2<f32>) -> SkewSteps {
    let l = qer.nrows();
    let mut padded = Array2::zeros((l, l + 1));
    padded.slice_mut(s![.., 1..]).assign(&qer);
    let flat: Array1<f32> = padded.iter().copied().collect();
    let reshaped = flat.into_shape_with_order((l + 1, l)).expect("(L, L+1) has (L+1)·L cells");
    let sliced = reshaped.slice(s![1.., ..]).to_owned();
    SkewSteps { qer: qer.to_owned(), padded, reshaped, sliced }
}

/// Unmasked form: (L, 2L−1) → pad right (L, 2L) → flatten, pad L−1 zeros, reshape (L+1, 2L−1)
/// → rows 0..L, columns L−1.. (L, L).
fn skew_unmasked(qer: ArrayView2<f32>) -> SkewSteps {
    let l = qer.nrows();
    let mut padded = Array2::zeros((l, 2 * l));
    padded.slice_mut(s![.., ..2 * l - 1]).assign(&qer);
    let mut flat: Vec<f32> = padded.iter().copied().collect();
    flat.resize(flat.len() + l - 1, 0.0);
    let reshaped = Array2::from_shape_vec((l + 1, 2 * l - 1), flat).expect("L·2L + L−1 = (L+1)(2L−1)");
    let sliced = reshaped.slice(s![..l, l - 1..]).to_owned();
    SkewSteps { qer: qer.to_owned(), padded, reshaped, sliced }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relpos::Edge;
    use crate::shaw::relative_logits;

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
                    let direct = relative_logits(q.view(), e_r.view(), layout, l);
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
