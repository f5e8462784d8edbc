//! T5's bucketed relative bias (Raffel et al. 2020): each head learns one scalar per bucket of distances, added to the logits; buckets are exact for small
//! distances and log-spaced up to `max_distance`. With d = j − i (Hugging Face's `memory_position − context_position`), B buckets and D = max_distance:
//!
//! ```text
//! bidirectional: B' = B/2; offset = B' if d > 0 else 0; n = |d|
//! causal:        B' = B;   offset = 0;                   n = max(−d, 0)       (keys after the query: bucket 0)
//! E = B'/2 exact buckets:  bucket = offset + n                                          n < E
//!                          bucket = offset + min(E + ⌊ln(n/E) / ln(D/E) · (B' − E)⌋, B' − 1)   n ≥ E
//! e_ij = q_i · k_j / √d_head + b_h[bucket(j − i)]
//! ```
//!
//! T5 itself leaves out the 1/√d_head (folded into its initialisation); relattn keeps it on the content term so that every scheme scales alike.

use crate::error::{Error, Result};
use crate::positions::LOGITS_WITH_BIAS;
use crate::stage::{PairLabels, Stage, StageText};

/// T5's bucket options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    /// B: 32 in T5.
    pub count: usize,
    /// D: 128 in T5; every distance from D on shares the last bucket (of its side).
    pub max_distance: usize,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets { count: 32, max_distance: 128 }
    }
}

/// The most buckets and the largest max_distance accepted.
pub const MAX_BUCKETS: usize = 1024;
pub const MAX_DISTANCE: usize = 1 << 20;

impl Buckets {
    /// (B', E): buckets per side and exact buckets.
    fn sides(&self, causal: bool) -> (usize, usize) {
        let per_side = if causal { self.count } else { self.count / 2 };
        (per_side, per_side / 2)
    }

    /// Refuses a count or max_distance outside its range, naming it: B from 2 (causal) or 4 (bidirectional)
    /// to [`MAX_BUCKETS`], even when bidirectional; D above the exact buckets, at most [`MAX_DISTANCE`].
    pub fn check(&self, causal: bool) -> Result<()> {
        let least = if causal { 2 } else { 4 };
        if self.count < least || self.count > MAX_BUCKETS || (!causal && self.count % 2 == 1) {
            return Err(Error::invalid("t5_buckets", self.count.to_string(), Buckets::count_range(causal)));
        }
        let (_, exact) = self.sides(causal);
        if self.max_distance <= exact || self.max_distance > MAX_DISTANCE {
            return Err(Error::invalid("t5_max_distance", self.max_distance.to_string(), self.distance_range(causal)));
        }
        Ok(())
    }

    /// The buckets allowed, as messages say it: 2 to 1024 causal; 4 to 1024, even, bidirectional.
    pub fn count_range(causal: bool) -> String {
        if causal {
            format!("2 to {MAX_BUCKETS}")
        } else {
            format!("4 to {MAX_BUCKETS}, even (half for each side)")
        }
    }

    /// The maximum distances allowed with these buckets, as messages say it: above the exact buckets, up to
    /// 1048576 (the exact buckets' count once the buckets themselves are allowed).
    pub fn distance_range(&self, causal: bool) -> String {
        let least = if causal { 2 } else { 4 };
        if self.count < least || self.count > MAX_BUCKETS || (!causal && self.count % 2 == 1) {
            return format!("above the exact buckets, up to {MAX_DISTANCE}");
        }
        let (_, exact) = self.sides(causal);
        format!("{} to {MAX_DISTANCE} (above the {exact} exact buckets)", exact + 1)
    }

    /// The bucket of distance d = j − i. The logarithm is taken in f32 as Hugging Face's `_relative_position_bucket`
    /// does, so the buckets are its buckets.
    pub fn bucket(&self, d: isize, causal: bool) -> usize {
        let (per_side, exact) = self.sides(causal);
        let (offset, n) = if causal { (0, (-d).max(0) as usize) } else { (if d > 0 { per_side } else { 0 }, d.unsigned_abs()) };
        if n < exact {
            return offset + n;
        }
        // As Hugging Face: log in f32 of n / E, divided by the f64 log of D / E (cast to f32), times B' − E.
        let scaled = (n as f32 / exact as f32).ln() / ((self.max_distance as f64 / exact as f64).ln() as f32) * (per_side - exact) as f32;
        offset + (exact + scaled as usize).min(per_side - 1)
    }

    /// The distances d in −limit..=limit that read bucket `b`, as (lowest, highest): one run, since buckets never
    /// decrease as |d| grows on either side; `None` when none does (a log-spaced bucket that rounding skips).
    /// Reverse linking: the keys that read a pinned bucket.
    pub fn distances_of(&self, b: usize, causal: bool, limit: usize) -> Option<(isize, isize)> {
        let limit = limit as isize;
        let mut reading = (-limit..=limit).filter(|&d| self.bucket(d, causal) == b);
        let lo = reading.next()?;
        Some((lo, reading.next_back().unwrap_or(lo)))
    }
}

/// The bucket of a distance as every view of T5 writes it (the bucket stage, the staircase picture): exact,
/// then logarithmic, then capped, with B', E and D defined.
pub const BUCKET_FORMULA: &str = "bucket(d), d = j − i: |d| below E, then min(E + ⌊ln(|d|/E) / ln(D/E) · (B' − E)⌋, B' − 1); + B' for d > 0 (bidirectional: B' = B/2 a side; causal: B' = B and d > 0 reads 0); E = B'/2, D = max distance";
/// [`BUCKET_FORMULA`] in TeX.
pub const BUCKET_TEX: &str = r"\begin{gathered} \operatorname{bucket}(d) = \begin{cases} |d| & |d| < E \\ \min\Bigl(E + \bigl\lfloor \frac{\ln(|d| / E)}{\ln(D / E)}\,(B' - E) \bigr\rfloor,\ B' - 1\Bigr) & |d| \ge E \end{cases} \;(+B' \text{ for } d > 0) \\ B' = B/2 \text{ a side } (B \text{ causal, where } d > 0 \text{ reads } 0), \quad E = B'/2, \quad D = \text{max distance} \end{gathered}";

/// What T5 says in the stages it shapes: the bucket of each pair, the bias per bucket, the bias it reads for
/// each pair and the logits it is added to after the scale.
pub fn describe(stage: Stage) -> Option<StageText> {
    Some(match stage {
        Stage::RelIndex => StageText::new(
            "Bucket of j − i",
            BUCKET_FORMULA,
            BUCKET_TEX,
            "Small distances get a bucket each; beyond half the buckets, distances share log-spaced buckets up to max_distance, and everything farther reads the last one. Keys after the query use the other half (bidirectional) or bucket 0 (causal).",
        ),
        Stage::RelK => StageText::new(
            "Bias per bucket b_h",
            "one learned scalar per bucket (and head)",
            r"b_h \in \mathbb{R}^{B}: \text{ one learned scalar per bucket}",
            "One learned number per bucket (per head): the whole of T5's position signal. A head that prefers nearby keys learns large values for the first buckets.",
        )
        .on("bias", "bucket r"),
        Stage::RelativeLogits => StageText::new(
            "T5 bias",
            "b_h[bucket(j − i)], added after the scale",
            r"b_{ij} = b_h\bigl[\operatorname{bucket}(j - i)\bigr]",
            "Each cell is this head's bias for the pair's bucket: constant along each diagonal near the middle, then in widening bands, then flat beyond max_distance.",
        ),
        Stage::Logits => LOGITS_WITH_BIAS,
        _ => return None,
    })
}

/// How the tooltip names a pair's parts: the bucket's bias, and the bucket.
pub fn pair_labels() -> PairLabels {
    PairLabels { row: Some("bucket of j − i = {}".into()), ..PairLabels::bias() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T5's defaults (32 buckets, max_distance 128, bidirectional): 0..7 exact, then log-spaced up to
    /// bucket 15 from 128 on; keys after the query use 16..31. Values from Hugging Face's function.
    #[test]
    fn t5_defaults() {
        let b = Buckets::default();
        let at = |d: isize| b.bucket(d, false);
        assert_eq!((at(0), at(-1), at(-7), at(-8), at(-12), at(-16), at(-127), at(-128), at(-5000)), (0, 1, 7, 8, 9, 10, 15, 15, 15));
        assert_eq!((at(1), at(7), at(8), at(40), at(100), at(128)), (17, 23, 24, 28, 31, 31));
        let c = |d: isize| b.bucket(d, true);
        assert_eq!((c(3), c(0), c(-15), c(-16), c(-200)), (0, 0, 15, 16, 31));
    }

    #[test]
    fn buckets_never_decrease_with_the_distance_and_stay_in_range() {
        for b in [Buckets::default(), Buckets { count: 8, max_distance: 20 }, Buckets { count: 4, max_distance: 3 }] {
            for causal in [true, false] {
                let (per_side, _) = b.sides(causal);
                let mut last = 0;
                for m in 0..600 {
                    let bucket = b.bucket(-(m as isize), causal);
                    assert!(bucket >= last && bucket < per_side, "{b:?} causal {causal} m {m}");
                    last = bucket;
                }
            }
        }
    }

    #[test]
    fn distances_of_a_bucket_are_the_ones_that_read_it() {
        let b = Buckets { count: 16, max_distance: 40 };
        for causal in [true, false] {
            for bucket in 0..16 {
                if let Some((lo, hi)) = b.distances_of(bucket, causal, 60) {
                    for d in -60..=60isize {
                        assert_eq!((lo..=hi).contains(&d), b.bucket(d, causal) == bucket, "causal {causal} bucket {bucket} d {d}");
                    }
                }
            }
        }
    }

    #[test]
    fn options_are_ranged_by_name() {
        assert!(Buckets { count: 7, max_distance: 128 }.check(false).unwrap_err().to_string().contains("t5_buckets"));
        assert!(Buckets { count: 7, max_distance: 128 }.check(true).is_ok());
        assert!(Buckets { count: 32, max_distance: 8 }.check(false).unwrap_err().to_string().contains("t5_max_distance"));
        assert!(Buckets { count: 32, max_distance: 9 }.check(false).is_ok());
    }
}
