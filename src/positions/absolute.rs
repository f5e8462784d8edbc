//! Absolute sinusoidal positions (Vaswani et al. 2017), the baseline every relative scheme is measured
//! against: a vector per position added to x before the projections; attention itself has no position term.
//!
//! ```text
//! PE[p, 2i]     = sin(p / 10000^(2i / d_model))
//! PE[p, 2i + 1] = cos(p / 10000^(2i / d_model))          interleaved, as the paper and the trained models
//! Q = (x + PE) W_q + b_q,  K = (x + PE) W_k + b_k,  V = (x + PE) W_v + b_v
//! ```

use ndarray::{Array2, ArrayViewMut2};

/// Adds PE[p] to `row`: sin at 2i, cos at 2i + 1, computed in f64 (as the training code does).
pub fn add_sinusoid(row: &mut [f32], p: usize) {
    let d = row.len();
    for i in (0..d).step_by(2) {
        let angle = p as f64 * (-(10000f64.ln()) * i as f64 / d as f64).exp();
        row[i] += angle.sin() as f32;
        if i + 1 < d {
            row[i + 1] += angle.cos() as f32;
        }
    }
}

/// Adds PE to every row of `x` (n, d_model), row p at position p.
pub fn add_sinusoids(mut x: ArrayViewMut2<f32>) {
    for (p, mut row) in x.outer_iter_mut().enumerate() {
        match row.as_slice_mut() {
            Some(r) => add_sinusoid(r, p),
            None => {
                let mut r = row.to_vec();
                add_sinusoid(&mut r, p);
                row.iter_mut().zip(r).for_each(|(a, b)| *a = b);
            }
        }
    }
}

/// PE (n, d_model).
pub fn sinusoids(n: usize, d: usize) -> Array2<f32> {
    let mut pe = Array2::zeros((n, d));
    add_sinusoids(pe.view_mut());
    pe
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
