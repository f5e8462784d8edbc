//! The Music Transformer's skew beside Transformer-XL's `rel_shift`, step by step on one slide: the two ways of
//! moving a position term computed per relative position (a row per query, a column per distance) to the
//! query–key pair that uses it, each by reading the same memory with another row length. Both run on the same
//! small matrix, L = 4 queries against 4 keys, in the layer's masking: each cell holds the δ = i − j its column
//! stands for, so that every step shows where each value goes (and the skew's padding is the zeros out of turn). The core's own [`music::skew`] and
//! [`transformer_xl::rel_shift`] move the values (one spelling of each trick); the picture only lays their steps
//! side by side, the skew's on the top band, rel_shift's on the bottom one, steps apart by a grey (empty) column.
//!
//! ```text
//! skew (bidirectional: zero column last; causal: first)     rel_shift (XLNet: no padding)
//! Q E_rᵀ (L, 2L − 1), column c: d = c − (L − 1) = −δ         BD_rel (L, W), column c: δ = Lk − c, W = Lk + Lq (causal Lk + 1)
//! pad a zero column → (L, 2L)                                 read as (W, L), drop the first row (L values: δ = Lk, never read)
//! read as (L + 1, 2L − 1), slice (L, L)                      read again as (L, W − 1), keep the first Lk columns
//! ```
//!
//! Where they differ: the skew pads a zero column and its reshape pushes the zeros out; rel_shift
//! computes one position more (δ = Lk, column 0) and drops the first L values instead, with no padding. Causal,
//! both leave values of the wrong distance above the diagonal (the skew its padding zeros and the next row's
//! values, rel_shift the next row's), which only the causal mask removes; bidirectionally every cell lands on its
//! own distance and nothing is left over.

use super::{Inputs, Picture, Text};
use ndarray::{s, Array2};
use relattn_core::positions::{music, transformer_xl};
use relattn_core::stage::{Scale, StageText};

pub const SHIFTS: Text = Text {
    name: "skew_and_rel_shift",
    text: StageText::new(
        "The skew beside rel_shift",
        "top: the skew, Q E_rᵀ → pad a zero column → read as (L + 1, 2L − 1) → slice (L, L); bottom: rel_shift, BD_rel (L, W) → read as (W, L) → drop the first row → read as (L, W − 1) → keep Lk columns; each cell the δ = i − j it holds",
        r"\text{skew: } QE_r^{\top} \to [\,\cdot \mid 0\,] \to \text{reshape}(L + 1) \to \text{slice} \qquad \texttt{rel\_shift}: BD_{\text{rel}} \to \text{reshape}(W, L) \to \text{drop row } 0 \to \text{reshape}(L, W - 1) \to [\,:, :L_k]",
        "Both tricks read the same memory with another row length, so that each query's row slides by one more place than the row above. The skew pads a column of zeros to make room (the 0 after −3); rel_shift computes one distance more (i − j = Lk) and drops the first row instead. Both end on i − j at (i, j); causal, the cells above the diagonal hold values of other distances, which the mask removes.",
    )
    .on("steps, left to right", "top: skew; bottom: rel_shift"),
};

/// Queries and keys of the small matrix both tricks run on.
const L: usize = 4;

/// The steps of the skew and of rel_shift on the L × L layer of `causal` masking, as the picture shows them.
pub fn steps(causal: bool) -> [Vec<Array2<f32>>; 2] {
    let l = L as isize;
    // Q E_rᵀ: column c is distance d = c − (L − 1), δ = −d; L columns causal (d ≤ 0), 2L − 1 bidirectional.
    let cols = if causal { L } else { 2 * L - 1 };
    let qer = Array2::from_shape_fn((L, cols), |(_, c)| (l - 1 - c as isize) as f32);
    let skew = music::skew(qer.view(), causal);
    // BD_rel: column c is the position δ = Lk − c.
    let w = transformer_xl::width(L, L, causal);
    let bd = Array2::from_shape_fn((L, w), |(_, c)| (l - c as isize) as f32);
    let shift = transformer_xl::rel_shift(bd.view(), L);
    [vec![skew.qer, skew.padded, skew.reshaped, skew.sliced], vec![shift.relative, shift.reshaped, shift.dropped, shift.reread, shift.shifted]]
}

/// The picture, drawn for a Transformer-XL layer (whose rel_shift it explains) in its masking.
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let bands = steps(inputs.config.causal);
    // Each band a row of its steps one grey column apart; the bands one grey row apart.
    let width = |band: &Vec<Array2<f32>>| band.iter().map(|m| m.ncols() + 1).sum::<usize>() - 1;
    let height = |band: &Vec<Array2<f32>>| band.iter().map(|m| m.nrows()).max().unwrap_or(0);
    let cols = bands.iter().map(width).max().unwrap_or(0);
    let rows = height(&bands[0]) + 1 + height(&bands[1]);
    let mut values = Array2::from_elem((rows, cols), f32::NAN);
    let mut top = 0;
    for band in &bands {
        let mut left = 0;
        for m in band {
            values.slice_mut(s![top..top + m.nrows(), left..left + m.ncols()]).assign(m);
            left += m.ncols() + 1;
        }
        top += height(band) + 1;
    }
    let y_labels = (0..rows)
        .map(|r| {
            if r == 0 {
                "skew".into()
            } else if r == height(&bands[0]) + 1 {
                "rel_shift".into()
            } else {
                String::new()
            }
        })
        .collect();
    vec![SHIFTS.heatmap(Scale::Diverging, values, vec![String::new(); cols], y_labels)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tricks end on δ(i, j) = i − j at every visible pair (causal: j ≤ i), from the matrices of their
    /// relative positions; the skew adds a column of zeros (first causal, last bidirectionally), rel_shift reads
    /// BD_rel's values alone; causal, the cells above the diagonal hold a padding zero (the skew) or the next row's
    /// first value, δ = Lk (rel_shift), which the mask removes.
    #[test]
    fn both_end_on_i_minus_j() {
        for causal in [false, true] {
            let [skew, shift] = steps(causal);
            for last in [skew.last().unwrap(), shift.last().unwrap()] {
                assert_eq!(last.dim(), (L, L));
                for ((i, j), &v) in last.indexed_iter() {
                    if !causal || j <= i {
                        assert_eq!(v, i as f32 - j as f32, "causal {causal}: ({i}, {j})");
                    }
                }
            }
            let pad = if causal { 0 } else { 2 * L - 1 };
            assert!(skew[1].column(pad).iter().all(|&v| v == 0.0), "the skew's zero column, causal {causal}");
            assert_eq!(skew[1].ncols(), skew[0].ncols() + 1);
            let sorted = |m: &Array2<f32>| {
                let mut v = m.iter().copied().collect::<Vec<_>>();
                v.sort_by(f32::total_cmp);
                v
            };
            assert_eq!(sorted(&shift[1]), sorted(&shift[0]), "rel_shift pads nothing");
            // The first row rel_shift drops: BD_rel's first L values, δ = Lk first.
            assert_eq!(shift[1][[0, 0]], L as f32);
        }
        let [skew, shift] = steps(true);
        assert_eq!((skew[3][[0, 1]], shift[4][[0, 1]]), (0.0, L as f32));
    }

    /// The slide: both bands in one heatmap, every step where the layout puts it.
    #[test]
    fn one_heatmap_holds_both_bands() {
        let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::TransformerXl, ..Default::default() };
        let tables = ndarray::Array3::zeros((1, 1, 1));
        let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 8, d_model: 16, d_head: 16 };
        let pictures = pictures(&inputs);
        let super::super::Body::Heatmap { values, y_labels, .. } = &pictures[0].body else { panic!("a heatmap") };
        // Bidirectional: the skew's band L + 1 rows high, rel_shift's 2L (its (W, L) read); one grey row between.
        assert_eq!(values.nrows(), (L + 1) + 1 + 2 * L);
        assert_eq!((y_labels[0].as_str(), y_labels[L + 2].as_str()), ("skew", "rel_shift"));
        let [skew, shift] = steps(false);
        assert_eq!(values.slice(s![..L, ..2 * L - 1]), skew[0]);
        assert_eq!(values.slice(s![L + 2..2 * L + 2, ..2 * L]), shift[0]);
    }
}
