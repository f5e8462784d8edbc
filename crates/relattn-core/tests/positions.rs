//! The position schemes against the reference implementations people trust: tests/fixtures/positions.json,
//! written offline by train/position_fixtures.py from Hugging Face transformers (T5's bucket function,
//! BLOOM's ALiBi slopes, Llama's, GPT-NeoX's and GPT-J's rotary embeddings). Checked to 1e-5.

use ndarray::Array2;
use relattn_core::positions::alibi;
use relattn_core::positions::rope::Rope;
use relattn_core::positions::t5::Buckets;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixtures {
    transformers: String,
    t5: Vec<T5Case>,
    alibi: Vec<AlibiCase>,
    rope: Vec<RopeCase>,
}

#[derive(Deserialize)]
struct T5Case {
    causal: bool,
    buckets: usize,
    max_distance: usize,
    distances: Vec<isize>,
    bucket: Vec<usize>,
}

#[derive(Deserialize)]
struct AlibiCase {
    heads: usize,
    slopes: Vec<f32>,
}

#[derive(Deserialize)]
struct RopeCase {
    source: String,
    layout: String,
    base: f32,
    fraction: f32,
    scale: f32,
    x: Vec<Vec<f32>>,
    rotated: Vec<Vec<f32>>,
}

fn fixtures() -> Fixtures {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/positions.json")).expect("tests/fixtures/positions.json");
    serde_json::from_str(&text).expect("fixtures parse")
}

fn matrix(rows: &[Vec<f32>]) -> Array2<f32> {
    Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
}

#[test]
fn t5_buckets_are_hugging_faces() {
    let f = fixtures();
    assert!(!f.transformers.is_empty() && f.t5.len() >= 10);
    for case in &f.t5 {
        let b = Buckets { count: case.buckets, max_distance: case.max_distance };
        b.check(case.causal).unwrap();
        for (&d, &want) in case.distances.iter().zip(&case.bucket) {
            assert_eq!(b.bucket(d, case.causal), want, "{b:?} causal {} distance {d}", case.causal);
        }
    }
}

#[test]
fn alibi_slopes_are_blooms() {
    for case in fixtures().alibi {
        let got = alibi::slopes(case.heads);
        assert_eq!(got.len(), case.slopes.len());
        for (h, (g, w)) in got.iter().zip(&case.slopes).enumerate() {
            assert!((g - w).abs() <= 1e-5 * w.abs(), "{} heads, head {h}: {g} vs BLOOM's {w}", case.heads);
        }
    }
}

/// Llama (half-split, base 10000 and 500000, linear scaling 4), GPT-NeoX (rotary_pct 0.25) and GPT-J
/// (interleaved, whole and partial): the same rotated rows for positions 0..24.
#[test]
fn rotary_embeddings_are_the_reference_models() {
    let cases = fixtures().rope;
    assert!(cases.iter().any(|c| c.layout == "interleaved") && cases.iter().any(|c| c.layout == "half") && cases.iter().any(|c| c.scale != 1.0));
    for case in cases {
        let rope = Rope { base: case.base, fraction: case.fraction, layout: case.layout.parse().unwrap(), scale: case.scale };
        let x = matrix(&case.x);
        rope.check(x.ncols()).unwrap();
        let got = rope.rotate(x.view(), 0);
        let want = matrix(&case.rotated);
        let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
        let err = (&got - &want).iter().fold(0f32, |m, v| m.max(v.abs())) / scale;
        assert!(err <= 1e-5, "{}: relative error {err}", case.source);
        // And the other layout gives different numbers for the same weights (the point of the option).
        if case.fraction == 1.0 {
            let other = Rope { layout: if case.layout == "half" { "interleaved".parse().unwrap() } else { "half".parse().unwrap() }, ..rope };
            assert!((&other.rotate(x.view(), 0) - &want).iter().any(|v| v.abs() > 1e-3), "{}", case.source);
        }
    }
}
