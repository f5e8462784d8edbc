//! Absolute sinusoidal positions (Vaswani et al. 2017), the baseline every relative scheme is measured
//! against: a vector per position added to x before the projections; attention itself has no position term.
//!
//! ```text
//! PE[p, 2i]     = sin(p / 10000^(2i / d_model))
//! PE[p, 2i + 1] = cos(p / 10000^(2i / d_model))          interleaved, as the paper and the trained models
//! Q = (x + PE) W_q + b_q,  K = (x + PE) W_k + b_k,  V = (x + PE) W_v + b_v
//! ```

use crate::stage::{PairLabels, Stage, StageText, FEATURE_AXIS, LOGITS_TITLE};
use ndarray::{Array2, ArrayViewMut2};

/// Adds PE[p] to `row`: sin at 2i, cos at 2i + 1, computed in f64 (as the training code does).
pub fn add_sinusoid(row: &mut [f32], p: usize) {
    add_at(row, p, &frequencies(row.len()));
}

/// ω_i = 10000^(−i/d) for i = 0, 2, 4, …: the frequency of columns i and i + 1.
fn frequencies(d: usize) -> Vec<f64> {
    (0..d).step_by(2).map(|i| (-(10000f64.ln()) * i as f64 / d as f64).exp()).collect()
}

/// Adds PE[p] to `row`, given its frequencies.
fn add_at(row: &mut [f32], p: usize, frequencies: &[f64]) {
    for (pair, &w) in row.chunks_mut(2).zip(frequencies) {
        let (sin, cos) = (p as f64 * w).sin_cos();
        pair[0] += sin as f32;
        if let Some(c) = pair.get_mut(1) {
            *c += cos as f32;
        }
    }
}

/// Adds PE to every row of `x` (n, d_model), row p at position p; rows split across rayon's threads
/// natively (one thread in wasm) (a sine and a cosine per value: 2.1 M of each at n 8192, d_model 512).
pub fn add_sinusoids(mut x: ArrayViewMut2<f32>) {
    let w = frequencies(x.ncols());
    let d = x.ncols().max(1);
    match x.as_slice_mut() {
        #[cfg(not(target_arch = "wasm32"))]
        Some(rows) => {
            use rayon::prelude::*;
            rows.par_chunks_mut(d).enumerate().for_each(|(p, row)| add_at(row, p, &w))
        }
        #[cfg(target_arch = "wasm32")]
        Some(rows) => rows.chunks_mut(d).enumerate().for_each(|(p, row)| add_at(row, p, &w)),
        None => x.outer_iter_mut().enumerate().for_each(|(p, mut row)| {
            let mut r = row.to_vec();
            add_at(&mut r, p, &w);
            row.iter_mut().zip(r).for_each(|(a, b)| *a = b);
        }),
    }
}

/// PE (n, d_model).
pub fn sinusoids(n: usize, d: usize) -> Array2<f32> {
    let mut pe = Array2::zeros((n, d));
    add_sinusoids(pe.view_mut());
    pe
}

/// What absolute positions say in the stages they shape: the vectors added to x, and the logits of the sums
/// (attention has no position term of its own).
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::Positions => StageText::new(
            "Absolute position vectors PE",
            "PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(…), added to x",
            r"PE_{p,2i} = \sin\bigl(p / 10000^{2i/d}\bigr),\ PE_{p,2i+1} = \cos\bigl(p / 10000^{2i/d}\bigr); \quad Q = (x + PE)\,W^Q",
            "One vector per position, added to x before the projections: the first columns wave fast, the last slowly. Attention sees positions only through these sums, so nothing in it is relative by construction.",
        )
        .on(FEATURE_AXIS, "position p"),
        Stage::ContentLogits => StageText::new(
            "Logits of x + PE",
            "q_i · k_j, q = (x + PE) W_q, k = (x + PE) W_k",
            r"q_i \cdot k_j = \bigl((x_i + PE_i) W^Q\bigr)\,\bigl((x_j + PE_j) W^K\bigr)^{\top}",
            "Token and position mixed in one product: (x + PE) projected. A relative pattern can only appear here if the projections learn to read it out of the sums.",
        ),
        Stage::Logits => StageText::new(
            LOGITS_TITLE,
            "q_i·k_j / √d_head, −∞ where masked",
            r"e_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_h}} \quad (-\infty \text{ where masked})",
            "The products of x + PE scaled by 1/√d_head; masked cells are −∞ and get weight 0.",
        ),
        _ => return None,
    })
}

/// What absolute positions say when x already holds them (`positions_in_x`: a captured GPT-2, OPT or BERT
/// layer, whose model added its learned positions at the embedding, before layer 0), in the stages that
/// differ; the rest as [`describe`].
pub fn describe_in_x(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::Positions => StageText::new(
            "The model's learned positions P",
            "P[p]: row p of the model's position table, added to the token embedding before layer 0",
            r"h^{(0)}_p = E[	ext{token}_p] + P_p \quad (	ext{then every layer before this one})",
            "The model's own position vectors, learned in training and added once, at the embedding: this layer's x already holds them, mixed by the layers before it. Compare their rows: neighbours alike, far positions apart.",
        )
        .on(FEATURE_AXIS, "position p"),
        Stage::ContentLogits => StageText::new(
            "Logits of x (positions inside)",
            "q_i · k_j, q = x W_q + b_q, k = x W_k + b_k: x holds the positions",
            r"q_i \cdot k_j = (x_i W^Q + b^Q)\,(x_j W^K + b^K)^{	op}",
            "Token and position mixed in one product: x came from the token and position embeddings through the layers before. Any relative pattern here was learned, not built in.",
        ),
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the logit of x + PE, no relative term.
pub fn pair_labels() -> PairLabels {
    PairLabels { relative: None, ..PairLabels::plain() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinusoid_of_position_zero_is_zeros_and_ones() {
        let pe = sinusoids(2, 4);
        assert_eq!(pe.row(0).to_vec(), [0.0, 1.0, 0.0, 1.0]);
        assert_eq!(pe[[1, 0]], 1f64.sin() as f32);
        assert_eq!(pe[[1, 1]], 1f64.cos() as f32);
        assert_eq!(pe[[1, 2]], (0.01f64).sin() as f32);
    }
}
