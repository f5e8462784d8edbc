//! ALiBi (Press, Smith & Lewis 2022, "Train Short, Test Long"): no position embeddings; each head adds a
//! penalty proportional to the distance to its scaled logits.
//!
//! ```text
//! causal:         e_ij = q_i · k_j / √d_head + m_h · (j − i)        (j ≤ i, so the bias is ≤ 0)
//! bidirectional:  e_ij = q_i · k_j / √d_head − m_h · |j − i|
//! slopes, h = 2^a heads:  m_h = 2^(−8h/H), h = 1..H              (8 heads: 1/2, 1/4, …, 1/256)
//! otherwise:      the slopes of the largest power of two 2^a < H, then every other slope of 2^(a+1) heads
//!                 (2^(−4(2h−1)/2^a), h = 1..H − 2^a), the paper's rule as BLOOM's code has it
//! ```
//!
//! BLOOM adds m_h · j instead of m_h · (j − i): a constant per row, so the weights are the same.

use crate::positions::LOGITS_WITH_BIAS;
use crate::stage::{PairLabels, Stage, StageText};

/// The slopes m_h of `heads` heads, largest first.
pub fn slopes(heads: usize) -> Vec<f32> {
    if heads == 0 {
        return Vec::new();
    }
    let power = 1usize << heads.ilog2();
    let geometric = |count: usize, step: usize| -> Vec<f32> {
        let base = 2f64.powf(-8.0 / count as f64);
        (1..=count).step_by(step).map(|h| base.powi(h as i32) as f32).collect()
    };
    let mut m = geometric(power, 1);
    m.extend(geometric(2 * power, 2).into_iter().take(heads - power));
    m
}

/// The bias a head of slope `m` adds at distance d = j − i: m·d causal (keys after the query are masked
/// anyway), −m·|d| bidirectional.
#[inline]
pub fn bias(m: f32, d: isize, causal: bool) -> f32 {
    if causal {
        m * d as f32
    } else {
        -m * d.unsigned_abs() as f32
    }
}

/// What ALiBi says in the stages it shapes: its slopes, its bias (masked: m_h·(j − i); unmasked: −m_h·|j − i|)
/// and the logits it is added to after the scale.
pub fn describe(stage: Stage, causal: bool) -> Option<StageText> {
    Some(match (stage, causal) {
        (Stage::Slopes, _) => StageText::new(
            "ALiBi slope per head m_h",
            "m_h = 2^(−8(h+1)/H), h = 0 … H − 1 (as the axis counts heads)",
            r"m_h = 2^{-8(h+1)/H}, \quad h = 0, \dots, H - 1",
            "A geometric sequence: each head penalises distance at its own rate, from steep (short-range heads) to almost flat (long-range ones). Nothing here is learned.",
        )
        .on("slope m_h", "head h"),
        (Stage::RelativeLogits, true) => StageText::new(
            "ALiBi bias",
            "m_h · (j − i), added after the scale",
            r"b_{ij} = m_h\,(j - i)",
            "A penalty growing linearly with distance into the past, steeper for this head's larger slope. Added after the scale, it never depends on the tokens.",
        ),
        (Stage::RelativeLogits, false) => StageText::new(
            "ALiBi bias",
            "−m_h · |j − i|, added after the scale",
            r"b_{ij} = -m_h\,\lvert j - i \rvert",
            "−m_h·|j − i|: the same linear penalty both ways, zero on the diagonal. Added after the scale, it never depends on the tokens.",
        ),
        (Stage::Logits, _) => LOGITS_WITH_BIAS,
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the slope's bias, no table row.
pub fn pair_labels() -> PairLabels {
    PairLabels::bias()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's examples: 8 heads give 1/2 … 1/256, 16 heads 1/√2 … 1/256; 12 heads take 8 heads' slopes
    /// then the odd ones of 16 heads' (as BLOOM's `build_alibi_tensor`).
    #[test]
    fn slopes_follow_the_paper() {
        let eight = slopes(8);
        assert_eq!(eight, (1..=8).map(|h| 0.5f32.powi(h)).collect::<Vec<_>>());
        let sixteen = slopes(16);
        assert!((sixteen[0] - 0.5f32.sqrt()).abs() < 1e-7 && (sixteen[15] - 1.0 / 256.0).abs() < 1e-9);
        let twelve = slopes(12);
        assert_eq!(&twelve[..8], &eight[..]);
        assert_eq!(&twelve[8..], &[sixteen[0], sixteen[2], sixteen[4], sixteen[6]]);
        assert_eq!(slopes(1), vec![2f32.powi(-8)]);
        assert!(slopes(0).is_empty());
    }

    #[test]
    fn bias_is_a_penalty_growing_with_distance() {
        assert_eq!(bias(0.5, -4, true), -2.0);
        assert_eq!(bias(0.5, 3, false), -1.5);
        assert_eq!(bias(0.5, -3, false), -1.5);
        assert_eq!(bias(0.25, 0, true), 0.0);
    }
}
