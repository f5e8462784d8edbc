//! The row softmax every backend's CPU path uses, and the vectorized reductions and e^x it is built from.

use ndarray::Array2;

/// Row-wise softmax in place, stable for logits of any magnitude: `exp(e − max) / Σ exp(e − max)`.
/// A row that is all −inf (every key masked) becomes zeros.
pub fn softmax_rows(a: &mut Array2<f32>) {
    softmax_rows_with_sink(a, None);
}

/// [`softmax_rows`], with a sink logit s when given (gpt-oss's learned per-head sink): one more column in each
/// row's softmax, `exp(e_j − m) / (Σ_j exp(e_j − m) + exp(s − m))` with m = max(max_j e_j, s), whose own weight
/// is dropped: a row's weights sum to less than 1, the rest taken by the sink.
pub fn softmax_rows_with_sink(a: &mut Array2<f32>, sink: Option<f32>) {
    for mut row in a.rows_mut() {
        match row.as_slice_mut() {
            Some(r) => softmax(r, sink),
            None => {
                let mut r = row.to_vec();
                softmax(&mut r, sink);
                row.assign(&ndarray::ArrayView1::from(&r));
            }
        }
    }
}

/// Lanes of the hand-split reductions below, so the compiler can keep them in vector registers.
const LANES: usize = 8;

/// Softmax of one row, with the sink's column when given; written as plain loops that vectorize (SSE2
/// natively, SIMD128 in wasm).
fn softmax(row: &mut [f32], sink: Option<f32>) {
    let max = reduce(row, sink.unwrap_or(f32::NEG_INFINITY), |m, v| if v > m { v } else { m });
    if max == f32::NEG_INFINITY {
        row.fill(0.0);
        return;
    }
    row.iter_mut().for_each(|v| *v = softmax_weight::<false>(*v - max));
    let sunk = sink.map_or(0.0, |s| softmax_weight::<false>(s - max));
    let inv = 1.0 / (reduce(row, 0.0, |s, v| s + v) + sunk);
    row.iter_mut().for_each(|v| *v *= inv);
}

/// Folds `row` with `f` in LANES independent lanes, then folds the lanes.
#[inline(always)]
pub(crate) fn reduce(row: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [init; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            lanes[k] = f(lanes[k], c[k]);
        }
    }
    chunks.remainder().iter().chain(&lanes).fold(init, |a, &v| f(a, v))
}

/// Below this, [`softmax_weight`] is 0: e^−64 ≈ 1.6e-28 of the row's largest weight, which no f32 sum of fewer
/// than 10^20 terms can show, while its products with values would be denormals, which the CPU computes
/// tens of times slower (ALiBi's far keys at n 4096: −m·|j − i| reaches −2048).
pub(crate) const NEGLIGIBLE: f32 = -64.0;

/// `a · b + c`: one fused instruction when `FMA` (the caller is compiled with FMA: AVX2's and AVX-512's
/// kernels), else a multiply and an add (`f32::mul_add` without FMA hardware is a slow library call).
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// A softmax weight e^x for x ≤ 0 (x = logit − the row's maximum): [`exp_nonpositive`], and 0 below
/// [`NEGLIGIBLE`].
#[inline(always)]
pub(crate) fn softmax_weight<const FMA: bool>(x: f32) -> f32 {
    let y = exp_clamped::<FMA>(x);
    if x < NEGLIGIBLE {
        0.0
    } else {
        y
    }
}

/// e^x for x ≤ 0 (−∞ gives 0), within 2 ulp.
#[inline(always)]
pub(crate) fn exp_nonpositive<const FMA: bool>(x: f32) -> f32 {
    let y = exp_clamped::<FMA>(x);
    if x < -87.0 {
        0.0
    } else {
        y
    }
}

/// e^max(x, −87) for x ≤ 0: x = n·ln2 + r with n rounded to nearest (by the 1.5·2²³ trick, no floor
/// call), e^r by Cephes' degree-6 polynomial, 2^n by writing the exponent bits.
#[inline(always)]
fn exp_clamped<const FMA: bool>(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23
    let xc = if x > -87.0 { x } else { -87.0 };
    let t = madd::<FMA>(xc, std::f32::consts::LOG2_E, ROUND);
    let n = t - ROUND;
    // t's low mantissa bits hold n: a bit cast, not a (saturating, unvectorizable) float-to-int conversion.
    let n_bits = t.to_bits().wrapping_sub(ROUND.to_bits());
    let r = madd::<FMA>(n, 2.121_944_4e-4, madd::<FMA>(n, -0.693_359_4, xc));
    let mut p = 1.987_569_1e-4;
    for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
        p = madd::<FMA>(p, r, c);
    }
    let y = madd::<FMA>(p, r * r, r) + 1.0;
    y * f32::from_bits(n_bits.wrapping_add(127) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr2;

    #[test]
    fn exp_is_accurate() {
        for i in 0..=200_000 {
            let x = -(i as f32) * 87.0 / 200_000.0;
            for (got, want) in [(exp_nonpositive::<false>(x), (x as f64).exp()), (exp_nonpositive::<true>(x), (x as f64).exp())] {
                assert!(((got as f64 - want) / want).abs() < 3e-7, "exp({x}) = {got}, want {want}");
            }
        }
        assert_eq!(exp_nonpositive::<false>(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive::<true>(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive::<false>(-1000.0), 0.0);
        assert_eq!(exp_nonpositive::<false>(0.0), 1.0);
        assert_eq!(exp_nonpositive::<true>(0.0), 1.0);
    }

    #[test]
    fn softmax_rows_of_any_length() {
        for n in [1, 7, 8, 9, 17, 100] {
            let mut a = Array2::from_shape_fn((2, n), |(i, j)| (i as f32 - j as f32) * 0.37);
            softmax_rows(&mut a);
            for row in a.rows() {
                let sum: f32 = row.sum();
                assert!((sum - 1.0).abs() < 1e-6, "n {n}: {sum}");
            }
            assert!(a[[0, 0]] > a[[0, n - 1]] || n == 1);
        }
    }

    #[test]
    fn softmax_masked_row_is_zero_and_huge_logits_are_finite() {
        let mut a = arr2(&[[f32::NEG_INFINITY, f32::NEG_INFINITY], [1e30, -1e30], [3e4, 3e4]]);
        softmax_rows(&mut a);
        assert_eq!(a, arr2(&[[0.0, 0.0], [1.0, 0.0], [0.5, 0.5]]));
    }
}
