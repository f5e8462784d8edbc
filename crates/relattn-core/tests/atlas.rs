//! The head atlas's summaries against their definitions (crates/relattn-core/src/atlas/mod.rs, docs/src/atlas.md)
//! computed here in f64 from the plain-loop definition of the layer (tests/common): the weights by definition,
//! the row-centred logits as ln α less its row mean (exact for a softmax), each scheme's position term written
//! from its paper. A RoPE term computed with the rotation's sign flipped must not match (the comparison has the
//! power to see it).
#![allow(clippy::needless_range_loop)]

mod common;

use common::{columns, project, rotate, Mat};
use relattn_core::atlas::{summarize, HeadSummary, Projected, METRICS};
use relattn_core::attention::LogitScale;
use relattn_core::layer::scenario::Arrays;
use relattn_core::positions::rope::PairLayout;
use relattn_core::{Config, Method, Scenario, Spec};

/// The layer of `cfg` on a seeded scenario of `batch` sequences of `n` tokens, the second with its first two
/// positions padding (left padding), projected.
fn layer_of(cfg: &Config, n: usize, d_model: usize) -> (Projected, Scenario) {
    let mut given = Arrays::new();
    given.insert("key_mask".into(), ndarray::Array2::from_shape_fn((2, n), |(b, j)| (b == 0 || j >= 2) as u8 as f32).into_dyn());
    let sc = Scenario::build(cfg, &Spec { n, d_model, batch: 2, seed: 11 }, given, true).unwrap();
    (Projected::new(cfg, sc.clone()).unwrap(), sc)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)) (Vaswani et al. 2017).
fn sinusoid(p: usize, c: usize, d: usize) -> f64 {
    let angle = p as f64 / 10000f64.powf((c - c % 2) as f64 / d as f64);
    if c.is_multiple_of(2) {
        angle.sin()
    } else {
        angle.cos()
    }
}

/// The position term T (n, n) of head `h` of sequence `b` by each scheme's definition, in logit units;
/// `sign` −1 turns RoPE's rotation the wrong way.
fn term_by_definition(cfg: &Config, sc: &Scenario, b: usize, h: usize, relative: &Mat, sign: f64) -> Mat {
    let (_, n, d) = sc.x.dim();
    let dh = d / cfg.heads;
    let scale = if cfg.logit_scale == LogitScale::None { 1.0 } else { 1.0 / (dh as f64).sqrt() };
    let x: Mat = (0..n).map(|i| (0..d).map(|c| sc.x[[b, i, c]] as f64).collect()).collect();
    match cfg.method {
        // Transformer-XL's BD + EF (u·k_j belongs to its content term AC), scaled with it by 1/√d_head.
        Method::Shaw | Method::Music | Method::BertRelative | Method::TransformerXl => relative.iter().map(|r| r.iter().map(|v| v * scale).collect()).collect(),
        Method::Alibi | Method::T5 => relative.clone(),
        // c2p + p2c, scaled with the content term by 1/√(d_head·(1 + terms)).
        Method::Deberta => {
            let scale = if cfg.logit_scale == LogitScale::None { 1.0 } else { 1.0 / ((dh * (1 + cfg.deberta.terms.count())) as f64).sqrt() };
            relative.iter().map(|r| r.iter().map(|v| v * scale).collect()).collect()
        }
        Method::Rope => {
            let q = columns(&project(&x, &sc.w_q, &sc.b_q), h * dh, (h + 1) * dh);
            let k = columns(&project(&x, &sc.w_k, &sc.b_k), h * dh, (h + 1) * dh);
            let mut rope = cfg.rope;
            rope.scale *= sign as f32;
            let (rq, rk) = (rotate(&rope, &q, 0), rotate(&rope, &k, 0));
            (0..n).map(|i| (0..n).map(|j| scale * (dot(&rq[i], &rk[j]) - dot(&q[i], &k[j]))).collect()).collect()
        }
        Method::Absolute => {
            let p: Mat = (0..n).map(|i| (0..d).map(|c| sinusoid(i, c, d)).collect()).collect();
            let zero = ndarray::Array1::zeros(d);
            let pq = columns(&project(&p, &sc.w_q, &zero), h * dh, (h + 1) * dh);
            let pk = columns(&project(&p, &sc.w_k, &zero), h * dh, (h + 1) * dh);
            (0..n).map(|i| (0..n).map(|j| scale * dot(&pq[i], &pk[j])).collect()).collect()
        }
    }
}

/// The metrics (in [`METRICS`]' order), the profile and the term by offset of one head by their definitions.
fn by_definition(weights: &Mat, masked: &[Vec<bool>], term: &Mat, query_kept: &[bool], tokens: &[i64]) -> ([f64; 9], Vec<f64>, Vec<f64>) {
    let n = weights.len();
    let first = query_kept.iter().position(|&k| k).unwrap();
    let (mut weight_at, mut count_at, mut term_at, mut logit_at) = (vec![0.0; 2 * n - 1], vec![0.0; 2 * n - 1], vec![0.0; 2 * n - 1], vec![0.0; 2 * n - 1]);
    let (mut queries, mut distance, mut entropy, mut uniform) = (0.0, 0.0, 0.0, 0.0);
    let (mut after, mut previous, mut first_token, mut total, mut duplicate, mut induction) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut logit_sq, mut residual_sq) = (0.0, 0.0);
    for i in 0..n {
        let seen: Vec<usize> = (0..n).filter(|&j| !masked[i][j]).collect();
        if !query_kept[i] || seen.is_empty() {
            continue;
        }
        queries += 1.0;
        uniform += (seen.len() as f64).ln();
        let log_mean = seen.iter().map(|&j| weights[i][j].ln()).sum::<f64>() / seen.len() as f64;
        let term_mean = seen.iter().map(|&j| term[i][j]).sum::<f64>() / seen.len() as f64;
        for &j in &seen {
            let a = weights[i][j];
            let at = j + n - 1 - i;
            weight_at[at] += a;
            count_at[at] += 1.0;
            term_at[at] += term[i][j];
            let (s, t) = (a.ln() - log_mean, term[i][j] - term_mean);
            logit_at[at] += s;
            logit_sq += s * s;
            residual_sq += (s - t) * (s - t);
            distance += a * (i as f64 - j as f64).abs();
            entropy -= a * a.ln();
            total += a;
            duplicate += if j < i && tokens[j] == tokens[i] { a } else { 0.0 };
            induction += if j >= 1 && j <= i && tokens[j - 1] == tokens[i] { a } else { 0.0 };
        }
        if i > first {
            after += 1.0;
            previous += weights[i][i - 1];
            first_token += weights[i][first];
        }
    }
    let offset: f64 = logit_at.iter().zip(&count_at).filter(|(_, &c)| c > 0.0).map(|(s, c)| s * s / c).sum();
    let metrics = [
        distance / queries,
        entropy / queries,
        uniform / queries,
        previous / after,
        first_token / after,
        duplicate / total,
        induction / total,
        1.0 - residual_sq / logit_sq,
        offset / logit_sq,
    ];
    let per = |v: &[f64]| v.iter().zip(&count_at).map(|(s, &c)| if c > 0.0 { s / c } else { f64::NAN }).collect();
    (metrics, per(&weight_at), per(&term_at))
}

/// |got − want| ≤ tol·max(1, |want|), NaN where the other is NaN.
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || (got - want).abs() <= tol * want.abs().max(1.0)
}

fn matches(got: &HeadSummary, want: &([f64; 9], Vec<f64>, Vec<f64>), tol: f64) -> Result<(), String> {
    for (k, name) in METRICS.iter().enumerate() {
        if !close(got.metrics[k], want.0[k], tol) {
            return Err(format!("{name}: {} vs {}", got.metrics[k], want.0[k]));
        }
    }
    for (what, g, w) in [("profile", got.profile(), &want.1), ("term", got.term(), &want.2)] {
        if let Some(d) = (0..w.len()).find(|&d| !close(g[d], w[d], tol)) {
            return Err(format!("{what} at index {d}: {} vs {}", g[d], w[d]));
        }
    }
    Ok(())
}

/// Tokens with repeats (for the duplicate and induction scores): a sequence of 5 ids, repeated.
fn tokens(n: usize) -> Vec<i64> {
    (0..n).map(|i| [7, 3, 9, 3, 1][i % 5]).collect()
}

#[test]
fn every_metric_of_every_scheme_equals_its_definition() {
    let n = 150; // past one block of query rows (128)
    let cases = [
        Config { method: Method::Shaw, heads: 2, clip: 4, causal: false, ..Config::default() },
        Config { method: Method::Music, heads: 2, clip: 6, causal: true, rel_v: false, ..Config::default() },
        Config { method: Method::Rope, heads: 2, causal: true, rel_v: false, ..Config::default() },
        Config { method: Method::Alibi, heads: 2, causal: true, rel_v: false, ..Config::default() },
        Config { method: Method::T5, heads: 2, causal: false, rel_v: false, logit_scale: LogitScale::None, ..Config::default() },
        Config { method: Method::Absolute, heads: 2, causal: true, rel_v: false, ..Config::default() },
    ];
    for mut cfg in cases {
        if cfg.method == Method::Rope {
            cfg.rope.layout = PairLayout::Half;
        }
        let (layer, sc) = layer_of(&cfg, n, 8);
        let reference = common::layer(&cfg, &sc);
        let toks = tokens(n);
        for b in 0..2 {
            let got = summarize(&layer, b, Some(&toks)).unwrap();
            let kept: Vec<bool> = (0..n).map(|j| b == 0 || j >= 2).collect();
            for (h, head) in got.iter().enumerate() {
                let r = &reference.heads[b][h];
                let term = term_by_definition(&cfg, &sc, b, h, &r.relative, 1.0);
                let want = by_definition(&r.weights, &r.masked, &term, &kept, &toks);
                matches(head, &want, 2e-4).unwrap_or_else(|e| panic!("{:?} causal {} batch {b} head {h}: {e}", cfg.method, cfg.causal));
                assert_eq!(head.band_q.len(), if cfg.method == Method::Rope { 2 } else { 0 });
            }
        }
    }
}

#[test]
fn a_rope_term_turned_the_wrong_way_does_not_match() {
    let cfg = Config { method: Method::Rope, heads: 1, causal: true, rel_v: false, ..Config::default() };
    let n = 24;
    let (layer, sc) = layer_of(&cfg, n, 4);
    let reference = common::layer(&cfg, &sc);
    let r = &reference.heads[0][0];
    let kept = vec![true; n];
    let got = &summarize(&layer, 0, Some(&tokens(n))).unwrap()[0];
    let right = by_definition(&r.weights, &r.masked, &term_by_definition(&cfg, &sc, 0, 0, &r.relative, 1.0), &kept, &tokens(n));
    let wrong = by_definition(&r.weights, &r.masked, &term_by_definition(&cfg, &sc, 0, 0, &r.relative, -1.0), &kept, &tokens(n));
    matches(got, &right, 2e-4).unwrap();
    let err = matches(got, &wrong, 2e-4).unwrap_err();
    assert!(err.starts_with("position_share") || err.starts_with("term"), "{err}");
}

#[test]
fn band_norms_are_the_pairs_norms_before_rotation() {
    let mut cfg = Config { method: Method::Rope, heads: 2, causal: true, rel_v: false, ..Config::default() };
    cfg.rope.layout = PairLayout::Interleaved;
    let n = 10;
    let (layer, sc) = layer_of(&cfg, n, 8);
    let d = 8;
    let x: Mat = (0..n).map(|i| (0..d).map(|c| sc.x[[1, i, c]] as f64).collect()).collect();
    let (q, k) = (project(&x, &sc.w_q, &sc.b_q), project(&x, &sc.w_k, &sc.b_k));
    let got = summarize(&layer, 1, None).unwrap();
    for h in 0..2 {
        for p in 0..2 {
            let (a, b) = (h * 4 + 2 * p, h * 4 + 2 * p + 1);
            // Sequence 1's first two positions are padding.
            let want = |m: &Mat| (2..n).map(|i| m[i][a].hypot(m[i][b])).sum::<f64>() / (n - 2) as f64;
            assert!(close(got[h].band_q[p], want(&q), 1e-5) && close(got[h].band_k[p], want(&k), 1e-5), "head {h} pair {p}");
        }
        assert!(got[h].metrics[5].is_nan() && got[h].metrics[6].is_nan(), "no tokens: no token scores");
    }
    assert_eq!(summarize(&layer, 0, Some(&[1, 2])).unwrap_err().field(), "tokens");
    assert_eq!(summarize(&layer, 2, None).unwrap_err().field(), "batch index");
}
