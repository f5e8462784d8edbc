//! Finite-value checks: finite inputs can still leave float32's range (x ≈ 3e38, weights ≈ 1e30), and a NaN
//! or ±∞ that reaches the softmax becomes a wrong but finite weight, so every stage that can overflow is
//! checked here and refused with [`Error::Overflow`].

use super::softmax::reduce;
use crate::error::{Error, Result};
use ndarray::{ArrayBase, Data, Dimension, IntoDimension};

/// An [`Error::Overflow`] naming `name` at the first NaN or ±Inf of `a`. Finite inputs can still leave
/// float32's range (x ≈ 3e38, weights ≈ 1e30). (Masked logits, −∞ on purpose, are checked where the mask is
/// applied: attention's `scale_and_mask`.)
pub fn check_overflow<S: Data<Elem = f32>, D: Dimension>(name: &str, a: &ArrayBase<S, D>) -> Result<()> {
    // Fast path: one vectorized pass over contiguous data.
    if a.as_slice_memory_order().is_some_and(|s| !any_non_finite(s)) {
        return Ok(());
    }
    match a.indexed_iter().find(|(_, v)| !v.is_finite()) {
        Some((idx, v)) => Err(Error::Overflow { array: name.into(), index: idx.into_dimension().slice().to_vec(), value: *v as f64 }),
        None => Ok(()),
    }
}

/// Whether `s` holds a NaN or ±∞, in one vectorized pass: v·0 is NaN exactly for NaN and ±∞, so the sum of
/// them is NaN exactly when one is there.
#[inline(always)]
pub(crate) fn any_non_finite(s: &[f32]) -> bool {
    reduce(s, 0.0, |acc, v| acc + v * 0.0).is_nan()
}
