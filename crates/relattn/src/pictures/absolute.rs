//! Absolute positions' picture: how alike the position vectors are, as the cosine of every pair of them.
//!
//! ```text
//! sim(i, j) = PE_i · PE_j / (|PE_i| |PE_j|)      (the sinusoids: a function of j − i alone)
//! ```

use super::{Inputs, Picture, Text};
use ndarray::Array2;
use relattn_core::core::matmul::matmul;
use relattn_core::positions::absolute;
use relattn_core::stage::{Scale, StageText};

pub const SIMILARITY: Text = Text {
    name: "absolute_similarity",
    text: StageText::new(
        "How alike position vectors are",
        "sim(i, j) = PE_i · PE_j / (|PE_i| |PE_j|), for the first 512 positions at most",
        r"\operatorname{sim}(i, j) = \frac{PE_i \cdot PE_j}{\lVert PE_i \rVert\, \lVert PE_j \rVert}",
        "Near positions have near vectors: 1 on the diagonal, falling with distance. For the sinusoids every diagonal holds one value (their dot product is a sum of cos((j − i)ω)), yet attention only sees them mixed into x + PE; a model's learned vectors need not be so regular.",
    )
    .on("position j", "position i"),
};

/// The most positions compared (512² cells; a long layer's similarity would be n² dot products of d_model).
pub const MAX_POSITIONS: usize = 512;

/// The cosine similarity of every pair of the first [`MAX_POSITIONS`] position vectors: each vector scaled to
/// unit length (its norm in f64), then one product U · Uᵀ (512² dot products of d_model: a few ms in the browser,
/// where a sum a pair took 166 ms at d_model 512).
pub fn pictures(inputs: &Inputs) -> Vec<Picture> {
    let n = inputs.n.min(MAX_POSITIONS);
    let pe = inputs.positions.map_or_else(|| absolute::sinusoids(n, inputs.d_model), |p| p.slice(ndarray::s![..n.min(p.nrows()), ..]).to_owned());
    let mut unit: Array2<f32> = pe;
    for mut row in unit.outer_iter_mut() {
        let norm = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt().max(1e-12);
        row.mapv_inplace(|v| (v as f64 / norm) as f32);
    }
    let sim = matmul(unit.view(), unit.t());
    vec![SIMILARITY.heatmap(Scale::Diverging, sim, Vec::new(), Vec::new())]
}

/// "absolute: sinusoids PE of d_model 64, added to x" or a model's own.
pub fn stated(inputs: &Inputs) -> String {
    let added = if inputs.config.positions_in_x { "already in x (shown, not added again)" } else { "added to x before the projections" };
    match inputs.positions {
        Some(_) => format!("absolute: the model's own learned position vectors (d_model {}), {added}", inputs.d_model),
        None => format!("absolute: sinusoids PE of d_model {}, base 10000, {added}", inputs.d_model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sinusoids' similarity is 1 on the diagonal and the same along every diagonal.
    #[test]
    fn the_sinusoids_similarity_is_relative() {
        let cfg = relattn_core::attention::Config { method: relattn_core::positions::Method::Absolute, ..Default::default() };
        let tables = ndarray::Array3::zeros((1, 0, 1));
        let inputs = Inputs { config: &cfg, tables: &tables, rope: None, positions: None, n: 9, d_model: 16, d_head: 16 / cfg.heads };
        let super::super::Body::Heatmap { values, .. } = &pictures(&inputs)[0].body else { panic!("heatmap") };
        // A long layer compares its first MAX_POSITIONS positions.
        let long = Inputs { n: 5000, ..inputs };
        let super::super::Body::Heatmap { values: v, .. } = &pictures(&long)[0].body else { panic!("heatmap") };
        assert_eq!(v.dim(), (MAX_POSITIONS, MAX_POSITIONS));
        // Every cell the f64 cosine of its pair.
        let pe = absolute::sinusoids(9, 16);
        let norm = |i: usize| pe.row(i).iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt();
        for ((i, j), &v) in values.indexed_iter() {
            let dot: f64 = pe.row(i).iter().zip(pe.row(j)).map(|(&a, &b)| a as f64 * b as f64).sum();
            assert!((v as f64 - dot / (norm(i) * norm(j))).abs() < 1e-6, "({i}, {j})");
        }
        for i in 0..9 {
            assert!((values[[i, i]] - 1.0).abs() < 1e-6);
            for j in 0..9 {
                if i + 1 < 9 && j + 1 < 9 {
                    assert!((values[[i, j]] - values[[i + 1, j + 1]]).abs() < 1e-5, "({i}, {j})");
                }
            }
        }
    }
}
