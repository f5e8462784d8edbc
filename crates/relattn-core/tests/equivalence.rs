//! `efficient` equals `materialized`, and both equal the plain-loop f64 definition within 1e-5
//! (relative to each array's scale), over random shapes, clips below and above n, Lq ≠ Lk, masks,
//! shared and per-head tables, both methods.

mod common;

use common::{flat, rel_err};
use ndarray::{Array2, Array3, Axis, Dimension};
use proptest::prelude::*;
use relattn_core::attention::{attend_head, attend_head_fused, attend_rows, HeadInput, HeadTrace};
use relattn_core::core::simd::Isa;
use relattn_core::layer::forward;
use relattn_core::layer::scenario::Arrays;
use relattn_core::positions::rope::{PairLayout, Rope};
use relattn_core::{Config, Implementation, Method, Scenario, Spec, Stage};

const TOL: f64 = 1e-5;

/// Checks a layer's trace against the definition; masked cells' relative logits are not compared. The bound is
/// TOL times the q/k norms' gain ([`common::LayerRef::norm_gain`]: 1 without norms or with runs far from 0; up to
/// 1/√ε where a projection of d_head 1 is near 0 and the norm magnifies its f32 rounding as much).
fn check_layer(cfg: &Config, sc: &Scenario) -> Result<(), TestCaseError> {
    let want = common::layer(cfg, sc);
    let tol = TOL * want.norm_gain.max(1.0);
    for implementation in [Implementation::Efficient, Implementation::Materialized] {
        let cfg = Config { implementation, ..*cfg };
        let t = forward::trace(&cfg, sc).unwrap();
        for (bi, heads) in want.heads.iter().enumerate() {
            for (h, r) in heads.iter().enumerate() {
                let got_rel = t.relative_logits.index_axis(Axis(0), bi).index_axis(Axis(0), h).to_owned();
                let unmasked = |m: &Array2<f32>| -> Vec<f32> { m.indexed_iter().filter(|((i, j), _)| !r.masked[*i][*j]).map(|(_, v)| *v).collect() };
                let want_rel: Vec<f64> = r.relative.iter().flatten().zip(r.masked.iter().flatten()).filter(|(_, m)| !**m).map(|(v, _)| *v).collect();
                let e = rel_err(&unmasked(&got_rel), want_rel);
                prop_assert!(e <= tol, "{implementation:?} relative logits b{bi} h{h}: {e:e}");
                let e = rel_err(t.weights.index_axis(Axis(0), bi).index_axis(Axis(0), h).iter(), flat(&r.weights));
                prop_assert!(e <= tol, "{implementation:?} weights b{bi} h{h}: {e:e}");
                // DeBERTa's terms or BERT's, every cell (masked ones too: a term does not depend on the mask).
                let (c2p, p2c) = match cfg.method {
                    Method::Deberta => (cfg.deberta.terms.c2p(), cfg.deberta.terms.p2c()),
                    Method::BertRelative => (true, cfg.bert.terms.key_term()),
                    _ => (false, false),
                };
                for (stage, want, has) in [(relattn_core::Stage::C2p, &r.c2p, c2p), (relattn_core::Stage::P2c, &r.p2c, p2c)] {
                    prop_assert_eq!(t.stages().contains(&stage), has, "{} present", stage);
                    if has {
                        let e = rel_err(t.stage(stage, bi, h).unwrap().iter(), flat(want));
                        prop_assert!(e <= tol, "{implementation:?} {stage} b{bi} h{h}: {e:e}");
                    }
                }
                // Transformer-XL's BD after rel_shift on the unmasked cells (causal, rel_shift leaves the next row's
                // values above the diagonal) and EF on every cell, each present as the layer has them.
                let xl = cfg.method == Method::TransformerXl;
                prop_assert_eq!(t.stages().contains(&Stage::XlBd), xl);
                prop_assert_eq!(t.stages().contains(&Stage::XlEf), xl && cfg.xl.segments > 0);
                if xl {
                    let want_bd: Vec<f64> = r.bd.iter().flatten().zip(r.masked.iter().flatten()).filter(|(_, m)| !**m).map(|(v, _)| *v).collect();
                    let e = rel_err(&unmasked(&t.stage(Stage::XlBd, bi, h).unwrap()), want_bd);
                    prop_assert!(e <= tol, "{implementation:?} bd b{bi} h{h}: {e:e}");
                }
                if xl && cfg.xl.segments > 0 {
                    let e = rel_err(t.stage(Stage::XlEf, bi, h).unwrap().iter(), flat(&r.ef));
                    prop_assert!(e <= tol, "{implementation:?} ef b{bi} h{h}: {e:e}");
                }
            }
            let e = rel_err(t.output.index_axis(Axis(0), bi).iter(), flat(&want.output[bi]));
            prop_assert!(e <= tol, "{implementation:?} output b{bi}: {e:e}");
        }
        prop_assert!(t.weights.iter().all(|w| w.is_finite()) && t.output.iter().all(|v| v.is_finite()));
        // Without a trace the efficient implementation runs fused (src/attention/fused/), the materialized one staged.
        let fwd = forward::forward(&cfg, sc).unwrap();
        for (bi, want) in want.output.iter().enumerate() {
            let e = rel_err(fwd.index_axis(Axis(0), bi).iter(), flat(want));
            prop_assert!(e <= tol, "{implementation:?} forward b{bi}: {e:e}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn layer_matches_definition(cfg in common::configs(1..=3, 0..=14), d_head in 1usize..=6, n in 1usize..=12, batch in 1usize..=2,
                                per_head in any::<bool>(), seed in any::<u64>(), mask_bits in any::<u32>(), masked in any::<bool>()) {
        let (cfg, d_head) = common::fit(cfg, d_head);
        let spec = Spec { n, d_model: d_head * cfg.heads, batch, seed };
        let mut given = Arrays::new();
        if masked {
            let m = Array2::from_shape_fn((batch, n), |(b, i)| ((mask_bits >> ((b * n + i) % 32)) & 1) as f32);
            given.insert("key_mask".into(), m.into_dyn());
        }
        let sc = Scenario::build(&cfg, &spec, given, per_head).unwrap();
        check_layer(&cfg, &sc)?;
    }

    /// Today's models' layers: heads whose width is not d_model / heads (w_q (d_model, h·d_head)), values of a
    /// width of their own (w_v (d_model, g·d_v), w_o (h·d_v, d_out): DeepSeek's MLA), grouped K/V heads, RMS norms of q and k per head (Qwen3, Gemma 3) or over the whole projection
    /// (OLMo 2), sink logits (gpt-oss), with the configs' windows, soft-caps and scales: trace and forward, both
    /// implementations, against the f64 definition.
    #[test]
    fn model_shaped_layers(cfg in common::configs(1..=4, 0..=6), d_head in 1usize..=6, d_v in 1usize..=7, d_out in 1usize..=9, d_model in 1usize..=12,
                           n in 1usize..=24, groups in 0usize..=2, norm in 0u8..3, sinks in any::<bool>(), seed in any::<u64>()) {
        let (cfg, d_head) = common::fit(cfg, d_head);
        let h = cfg.heads;
        // K/V heads: h, or a divisor of h.
        let kv = [h, 1, if h % 2 == 0 { h / 2 } else { h }][groups];
        let mut r = seed;
        let mut vec = |len: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..len).map(|_| { r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); lo + (hi - lo) * ((r >> 40) as f32 / (1u64 << 24) as f32) }).collect()
        };
        let mut given = Arrays::new();
        let mut put = |name: &str, shape: &[usize], values: Vec<f32>| { given.insert(name.into(), ndarray::ArrayD::from_shape_vec(shape, values).unwrap()); };
        put("w_q", &[d_model, h * d_head], vec(d_model * h * d_head, -0.8, 0.8));
        put("w_k", &[d_model, kv * d_head], vec(d_model * kv * d_head, -0.8, 0.8));
        // Values of their own width (DeepSeek's MLA) and an output of its own (its latents side by side as x).
        put("w_v", &[d_model, kv * d_v], vec(d_model * kv * d_v, -0.8, 0.8));
        put("w_o", &[h * d_v, d_out], vec(h * d_v * d_out, -0.8, 0.8));
        put("b_k", &[kv * d_head], vec(kv * d_head, -0.3, 0.3));
        put("b_v", &[kv * d_v], vec(kv * d_v, -0.3, 0.3));
        put("b_o", &[d_out], vec(d_out, -0.3, 0.3));
        match norm {
            1 => { put("q_norm", &[d_head], vec(d_head, 0.5, 1.5)); put("k_norm", &[d_head], vec(d_head, 0.5, 1.5)); }
            2 => { put("q_norm", &[h * d_head], vec(h * d_head, 0.5, 1.5)); put("k_norm", &[kv * d_head], vec(kv * d_head, 0.5, 1.5)); }
            _ => {}
        }
        if sinks {
            put("sinks", &[h], vec(h, -1.0, 2.0));
        }
        let sc = Scenario::build(&cfg, &Spec { n, d_model, batch: 1, seed }, given, false).unwrap();
        prop_assert_eq!((sc.d_head, sc.d_v, sc.d_out()), (d_head, d_v, d_out));
        check_layer(&cfg, &sc)?;
        // The sink's share: what the definition's weights leave, each query of each head.
        let t = forward::trace(&cfg, &sc).unwrap();
        prop_assert_eq!(t.stages().contains(&relattn_core::Stage::SinkShare), sinks);
        if sinks {
            let want = common::layer(&cfg, &sc);
            for (h, r) in want.heads[0].iter().enumerate() {
                let share = t.stage(relattn_core::Stage::SinkShare, 0, h).unwrap();
                let expected: Vec<f64> = r.weights.iter().map(|row| 1.0 - row.iter().sum::<f64>()).collect();
                prop_assert!(rel_err(share.iter(), expected) <= TOL * want.norm_gain.max(1.0), "sink share h{}", h);
            }
        }
    }

    /// One head with Lq ≠ Lk (queries aligned to the last keys), Shaw's method.
    #[test]
    fn head_with_unequal_lengths(lq in 1usize..=9, lk in 1usize..=11, d_head in 1usize..=5, clip in 0usize..=12,
                                 causal in any::<bool>(), rel_v in any::<bool>(), values in proptest::collection::vec(-1.0f32..1.0, 512)) {
        let cfg = Config { method: Method::Shaw, heads: 1, clip, causal, rel_v, ..Config::default() };
        let rows = 2 * clip + 1;
        let mut it = values.iter().cycle().copied();
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), || it.next().unwrap());
        let (q, k, v, tk, tv) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_head), mat(rows, d_head), mat(rows, d_head));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| j % 3 != 1).index_axis_move(Axis(0), 0);
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: tk.view(), rel_v: Some(tv.view()), key_mask: Some(mask.view()), rope: None, sink: None, segments: None };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&tk), Some(&to_mat(&tv)), Some(mask.as_slice().unwrap()));
        for implementation in [Implementation::Efficient, Implementation::Materialized] {
            let cfg = Config { implementation, ..cfg };
            let mut t = HeadTrace::default();
            let z = attend_head(&cfg, &input, Some(&mut t)).unwrap();
            prop_assert!(rel_err(t.relative_logits.iter(), flat(&want.relative)) <= TOL);
            prop_assert!(rel_err(t.weights.iter(), flat(&want.weights)) <= TOL);
            prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z");
            let z = attend_head(&cfg, &input, None).unwrap();
            prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z without a trace");
        }
    }
}

/// DeBERTa's or BERT's head traced by both implementations against the definition `want`: its two terms in the trace's
/// c2p and p2c (named, each there or not as `terms` says), the relative logits, the weights and z; z without a trace.
fn two_terms_traced(cfg: &Config, input: &HeadInput, want: &common::HeadRef, terms: [(&str, bool); 2]) -> Result<(), TestCaseError> {
    for implementation in [Implementation::Efficient, Implementation::Materialized] {
        let cfg = Config { implementation, ..*cfg };
        let mut t = HeadTrace::default();
        let z = attend_head(&cfg, input, Some(&mut t)).unwrap();
        for ((name, has), (got, want)) in terms.into_iter().zip([(&t.c2p, &want.c2p), (&t.p2c, &want.p2c)]) {
            prop_assert_eq!(got.is_some(), has, "{}", name);
            if let Some(got) = got {
                prop_assert!(rel_err(got.iter(), flat(want)) <= TOL, "{implementation:?} {name}");
            }
        }
        prop_assert!(rel_err(t.relative_logits.iter(), flat(&want.relative)) <= TOL, "{implementation:?} relative");
        prop_assert!(rel_err(t.weights.iter(), flat(&want.weights)) <= TOL, "{implementation:?} weights");
        prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z");
        let z = attend_head(&cfg, input, None).unwrap();
        prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z without a trace");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// DeBERTa's head with Lq ≠ Lk (queries aligned to the last keys, as every scheme's), its buckets, terms,
    /// masks (causal, padding keys) and both implementations against the f64 definition: c2p, p2c, their sum,
    /// the weights and z, traced and not (the forward runs staged: no fused kernel).
    #[test]
    fn deberta_head_with_unequal_lengths(lq in 1usize..=9, lk in 1usize..=13, d_head in 1usize..=5, causal in any::<bool>(),
                                         setting in 0usize..5, terms in 0usize..3, values in proptest::collection::vec(-1.0f32..1.0, 512)) {
        use relattn_core::positions::deberta::{Deberta, Terms};
        let (position_buckets, max_relative_positions) = [(0, 2), (0, 6), (4, 5), (6, 12), (256, 512)][setting];
        let terms = [Terms::Both, Terms::C2p, Terms::P2c][terms];
        let cfg = Config { method: Method::Deberta, heads: 1, causal, deberta: Deberta { position_buckets, max_relative_positions, terms }, ..Config::default() };
        let rows = cfg.table_rows();
        let mut it = values.iter().cycle().copied();
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), || it.next().unwrap());
        let (q, k, v, table) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_head), mat(rows, 2 * d_head));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| j % 4 != 2).index_axis_move(Axis(0), 0);
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: table.view(), rel_v: None, key_mask: Some(mask.view()), rope: None, sink: None, segments: None };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&table), None, Some(mask.as_slice().unwrap()));
        two_terms_traced(&cfg, &input, &want, [("c2p", terms.c2p()), ("p2c", terms.p2c())])?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Transformer-XL's head with Lq ≤ Lk (queries aligned to the last keys, XLNet's mems), clamps below and above
    /// the lengths, causal ("uni") and bidirectional ("bi"), padding keys, segments or none, both implementations
    /// against the f64 definition: BD before rel_shift (each column the position Lk − c), BD after it (the visible
    /// cells), EF, their sum, the weights and z, traced and not (the fused forward).
    #[test]
    fn xl_head_with_unequal_lengths(lq in 1usize..=9, extra in 0usize..=5, d_head in 1usize..=5, clip in 0usize..=12, causal in any::<bool>(),
                                    segmented in any::<bool>(), content in any::<bool>(), values in proptest::collection::vec(-1.0f32..1.0, 512)) {
        use relattn_core::positions::transformer_xl::{self as xl, TransformerXl};
        let lk = lq + extra;
        let cfg = Config { method: Method::TransformerXl, heads: 1, clip, causal, content, xl: TransformerXl { segments: segmented as usize * 2 }, ..Config::default() };
        let mut it = values.iter().cycle().copied();
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), || it.next().unwrap());
        let (q, k, v, table) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_head), mat(cfg.table_rows(), d_head));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| j % 4 != 2).index_axis_move(Axis(0), 0);
        let ids = ndarray::Array1::from_shape_fn(lk, |j| (j % 3 == 1) as u32);
        let segments = segmented.then_some(ids.view());
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: table.view(), rel_v: None, key_mask: Some(mask.view()), rope: None, sink: None, segments };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head_with_segments(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&table), None, Some(mask.as_slice().unwrap()), None, segmented_ids(segments));
        let (tq, tt) = (to_mat(&q), to_mat(&table));
        // BD_rel by its definition: column c is position Lk − c, clamped to [lo, k], its row k − position.
        let lo = if causal { 0 } else { -(clip as i64) };
        let width = if causal { lk + 1 } else { lk + lq };
        let rel: Vec<f64> = (0..lq).flat_map(|i| (0..width).map(move |c| (i, c))).map(|(i, c)| {
            let pos = (lk as i64 - c as i64).clamp(lo, clip as i64);
            let v_bias = &tt[tt.len() - 4];
            (0..d_head).map(|x| (tq[i][x] + v_bias[x]) * tt[(clip as i64 - pos) as usize][x]).sum::<f64>()
        }).collect();
        let visible = |m: &Array2<f32>| -> Vec<f32> { m.indexed_iter().filter(|((i, j), _)| !(causal && *j > i + lk - lq)).map(|(_, v)| *v).collect() };
        let want_bd: Vec<f64> = want.bd.iter().enumerate().flat_map(|(i, row)| row.iter().enumerate().filter(move |(j, _)| !(causal && *j > i + lk - lq)).map(|(_, v)| *v)).collect();
        for implementation in [Implementation::Efficient, Implementation::Materialized] {
            let cfg = Config { implementation, ..cfg };
            let mut t = HeadTrace::default();
            let z = attend_head(&cfg, &input, Some(&mut t)).unwrap();
            prop_assert_eq!(t.bd_relative.as_ref().map(|b| b.dim()), Some((lq, xl::width(lq, lk, causal))));
            prop_assert!(rel_err(t.bd_relative.as_ref().unwrap().iter(), rel.iter().copied()) <= TOL, "{implementation:?} bd_relative");
            prop_assert!(rel_err(&visible(t.bd.as_ref().unwrap()), want_bd.iter().copied()) <= TOL, "{implementation:?} bd");
            prop_assert_eq!(t.ef.is_some(), segmented);
            if let Some(ef) = &t.ef {
                prop_assert!(rel_err(ef.iter(), flat(&want.ef)) <= TOL, "{implementation:?} ef");
            }
            prop_assert!(rel_err(t.content_logits.iter(), (0..lq).flat_map(|i| (0..lk).map(move |j| (i, j))).map(|(i, j)| {
                let u = &tt[tt.len() - 5];
                if content { (0..d_head).map(|x| (tq[i][x] + u[x]) * k[[j, x]] as f64).sum::<f64>() } else { 0.0 }
            })) <= TOL, "{implementation:?} AC");
            prop_assert!(rel_err(t.relative_logits.iter(), flat(&want.relative)) <= TOL, "{implementation:?} relative");
            prop_assert!(rel_err(t.weights.iter(), flat(&want.weights)) <= TOL, "{implementation:?} weights");
            prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z");
            let z = attend_head(&cfg, &input, None).unwrap();
            prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{implementation:?} z without a trace");
        }
    }
}

/// The ids of `segments`, for the definition.
fn segmented_ids(segments: Option<ndarray::ArrayView1<'_, u32>>) -> Option<&[u32]> {
    segments.map(|s| s.to_slice().expect("contiguous ids"))
}

/// The definition above can fail: with the table's sinusoid rows read backwards (δ = j − i, the Music
/// Transformer's direction instead of Transformer-XL's i − j) its weights are far from the layer's, bidirectional
/// and causal.
#[test]
fn xl_definition_tells_the_direction() {
    use relattn_core::positions::transformer_xl::BIAS_ROWS;
    for causal in [false, true] {
        let cfg = Config { method: Method::TransformerXl, heads: 1, clip: 4, causal, ..Config::default() };
        let sc = Scenario::build(&cfg, &Spec { n: 7, d_model: 8, batch: 1, seed: 11 }, Arrays::new(), false).unwrap();
        // Peaked: the position term scaled up so that it decides the weights.
        let sc = Scenario { rel_k: sc.rel_k.mapv(|v| v * 8.0), ..sc };
        let t = forward::trace(&cfg, &sc).unwrap();
        let right = common::layer(&cfg, &sc);
        let e = rel_err(t.weights.iter(), flat(&right.heads[0][0].weights));
        assert!(e <= TOL, "the definition itself: {e:e}");
        let p = cfg.table_rows() - BIAS_ROWS;
        let mut mirrored = sc.rel_k.clone();
        for r in 0..p {
            mirrored.slice_mut(ndarray::s![0, r, ..]).assign(&sc.rel_k.slice(ndarray::s![0, p - 1 - r, ..]));
        }
        let wrong = common::layer(&cfg, &Scenario { rel_k: mirrored, ..sc.clone() });
        let e = rel_err(t.weights.iter(), flat(&wrong.heads[0][0].weights));
        assert!(e > 1e-2, "causal {causal}: the mirrored definition agrees ({e:e})");
    }
}

/// Each head's table is the sinusoids of δ = k … lo (XLNet's: sines of δ·10000^(−2m/D), then cosines; an odd D one sine
/// more) times the head's columns of W_R, in f64 here, then u, v, s and the two segment embeddings, as the scenario file
/// gives them.
#[test]
fn xl_table_is_the_projected_sinusoids_and_the_biases() {
    for (causal, d) in [(false, 4usize), (true, 4), (false, 5)] {
        let (k, h, dh) = (3usize, 2usize, 2usize);
        let cfg = Config { method: Method::TransformerXl, heads: h, clip: k, causal, ..Config::default() };
        let val = |i: usize| ((i * 37 % 17) as f32 - 8.0) / 10.0;
        let mut given = Arrays::new();
        let arr = |shape: &[usize], off: usize| ndarray::ArrayD::from_shape_fn(shape, |ix| val(off + ix.slice().iter().fold(0, |a, &x| a * 7 + x)));
        given.insert("xl_w_r".into(), arr(&[d, h * dh], 1));
        // Heads of d_head 2 whatever d_model (w_q says so): d_model 5 is odd.
        given.insert("w_q".into(), arr(&[d, h * dh], 50));
        for (i, name) in ["xl_u", "xl_v", "xl_s"].into_iter().enumerate() {
            given.insert(name.into(), arr(&[h, dh], 100 * (i + 2)));
        }
        given.insert("xl_seg_embed".into(), arr(&[2, h, dh], 900));
        let sc = Scenario::build(&cfg, &Spec { n: 5, d_model: d, batch: 1, seed: 0 }, given.clone(), false).unwrap();
        let p = if causal { k + 1 } else { 2 * k + 1 };
        assert_eq!(sc.rel_k.dim(), (h, p + 5, dh));
        for head in 0..h {
            for r in 0..p {
                let delta = k as f64 - r as f64;
                // ⌈d/2⌉ sines, then ⌊d/2⌋ cosines (XLNet's halves for an even d).
                let sines = d.div_ceil(2);
                let f = |m: usize| 10000f64.powf(-((2 * m) as f64) / d as f64);
                let sinusoid: Vec<f64> = (0..d).map(|c| if c < sines { (delta * f(c)).sin() } else { (delta * f(c - sines)).cos() }).collect();
                for x in 0..dh {
                    let want: f64 = (0..d).map(|c| sinusoid[c] * given["xl_w_r"][[c, head * dh + x]] as f64).sum();
                    assert!((sc.rel_k[[head, r, x]] as f64 - want).abs() < 1e-5, "head {head} row {r} x {x}");
                }
            }
            for x in 0..dh {
                let got = |row: usize| sc.rel_k[[head, p + row, x]];
                assert_eq!([got(0), got(1), got(2)], [given["xl_u"][[head, x]], given["xl_v"][[head, x]], given["xl_s"][[head, x]]]);
                assert_eq!([got(3), got(4)], [given["xl_seg_embed"][[0, head, x]], given["xl_seg_embed"][[1, head, x]]]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// BERT's relative_key and relative_key_query with sequences up to max_position itself (the table's first and last
    /// rows read), Lq ≠ Lk (queries aligned to the last keys), lengths across the fused blocks of 48 queries and 512
    /// keys, masks (causal, padding keys), both implementations traced (the query term, the key term, their sum, the
    /// weights, z), the fused forward on every instruction set and `attend_head` without a trace, against the f64
    /// definition (Hugging Face's A[i − j + P − 1]). One position more than max_position is refused naming it on
    /// each path.
    #[test]
    fn bert_head_near_max_position(lq in prop_oneof![1usize..=9, 40usize..=600], lk in prop_oneof![1usize..=13, 500usize..=600], d_head in 1usize..=5,
                                   causal in any::<bool>(), spare in 0usize..3, key_query in any::<bool>(), seed in any::<u64>()) {
        use relattn_core::positions::bert_relative::{BertRelative, BertTerms};
        let terms = if key_query { BertTerms::KeyQuery } else { BertTerms::Key };
        let bert = BertRelative { max_position: lq.max(lk) + spare, terms };
        let cfg = Config { method: Method::BertRelative, heads: 1, causal, bert, ..Config::default() };
        let mut rng = seed;
        let mut next = move || {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((rng >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), &mut next);
        let (q, k, v, table) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_head), mat(cfg.table_rows(), d_head));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| j % 4 != 2).index_axis_move(Axis(0), 0);
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: table.view(), rel_v: None, key_mask: Some(mask.view()), rope: None, sink: None, segments: None };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&table), None, Some(mask.as_slice().unwrap()));
        two_terms_traced(&cfg, &input, &want, [("query term", true), ("key term", key_query)])?;
        for isa in Isa::ALL.into_iter().filter(|isa| isa.available()) {
            let z = attend_head_fused(isa, &cfg, &input).unwrap();
            prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "{} fused", isa.name());
        }
        // One position past P: no row for it, refused by name traced, staged and fused.
        let short = Config { bert: BertRelative { max_position: lq.max(lk) - 1, terms }, ..cfg };
        if short.bert.max_position > 0 {
            let small = table.slice(ndarray::s![spare + 1..table.nrows() - spare - 1, ..]);
            let input = HeadInput { rel_k: small, ..input };
            let traced = attend_head(&short, &input, Some(&mut HeadTrace::default())).unwrap_err();
            let fused = attend_head(&short, &input, None).unwrap_err();
            prop_assert_eq!((traced.field(), fused.field()), ("max_position", "max_position"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// The fused forward (src/attention/fused/) on every instruction set this CPU has, over lengths that cross
    /// its query and key blocks (48, 512) and its kernels' tiles, Lq ≤ Lk (decoding with a cache) and Lq > Lk,
    /// head widths below, across and beyond the kernels' panels (8…32 columns), every method, edge, mask and
    /// content switch, against the f64 definition.
    #[test]
    fn fused_tiles_match_definition(cfg in common::configs(1..=1, 0..=40), lk in 1usize..=1100, lq in 1usize..=1100,
                                    d_head in prop_oneof![1usize..=8, Just(17), Just(33), Just(64)], seed in any::<u64>(), masked in any::<bool>()) {
        let (cfg, d_head) = common::fit(cfg, d_head);
        // Values of d_head's width, or (1 in 4) of their own, across the kernels' panels (DeepSeek's MLA).
        let d_v = if seed % 4 == 1 { [1, 5, 9, 24, 40][(seed / 4 % 5) as usize] } else { d_head };
        let mut rng = seed;
        let mut next = move || {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((rng >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), &mut next);
        let rows = cfg.table_rows();
        let width = cfg.scheme().table_width(d_head);
        let (q, k, v, tk, tv) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_v), mat(rows, width), mat(rows, d_v));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| !masked || j % 5 != 2).index_axis_move(Axis(0), 0);
        // A sink logit (gpt-oss) in 1 of 3.
        let sink = (seed % 3 == 0).then_some(0.7f32);
        // Transformer-XL's segments (three runs of keys), where the layer has them and no more queries than keys.
        let cfg = if lq > lk { Config { xl: relattn_core::positions::transformer_xl::TransformerXl { segments: 0 }, ..cfg } } else { cfg };
        let ids = ndarray::Array1::from_shape_fn(lk, |j| (j * 3 / lk) as u32);
        let segments = (cfg.method == Method::TransformerXl && cfg.xl.segments > 0).then_some(ids.view());
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: tk.view(), rel_v: Some(tv.view()), key_mask: Some(mask.view()), rope: None, sink, segments };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head_with_segments(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&tk), Some(&to_mat(&tv)), Some(mask.as_slice().unwrap()), sink.map(f64::from), segmented_ids(segments));
        // A logit e is known to |e|·2⁻²⁴ in f32: ALiBi's bias reaches |m|·max(Lq, Lk) (a thousand here). RoPE's
        // angle m·θ is known to |m·θ|·2⁻²⁴ (θ₀ = 1): the rotated vectors carry an error that grows with the
        // position, up to max(Lq, Lk) (a query block at positions past 200 gave 1.1e-5 against the definition).
        let largest = match cfg.method {
            Method::Alibi => tk[[0, 0]].abs() as f64 * lq.max(lk) as f64,
            Method::Rope => lq.max(lk) as f64,
            _ => 0.0,
        };
        let tol = TOL.max(largest * 1e-7);
        for isa in Isa::ALL.into_iter().filter(|isa| isa.available()) {
            let z = attend_head_fused(isa, &cfg, &input).unwrap();
            let e = rel_err(z.iter(), flat(&want.z));
            prop_assert!(e <= tol, "{} {cfg:?} lq {lq} lk {lk} d_head {d_head} d_v {d_v}: {e:e}", isa.name());
        }
    }

    /// DeBERTa's terms in the fused forward (c2p read by row from Q K_rᵀ, p2c from K Q_rᵀ) on every instruction set
    /// this CPU has, every draw DeBERTa's: its buckets and spans (the v3 default's 512 rows among them), each choice
    /// of terms, lengths across the blocks of 48 queries and 512 keys, Lq ≤ Lk and Lq > Lk, the configs' windows,
    /// chunks, causal masks, soft-caps, scales and content switch, padding keys and a sink logit, against the f64
    /// definition; and `attend_head` without a trace (the layer's forward) equal to it.
    #[test]
    fn fused_deberta_matches_definition(cfg in common::configs(1..=1, 0..=4), lk in prop_oneof![1usize..=60, 500usize..=1100], lq in prop_oneof![1usize..=60, 40usize..=1100],
                                        d_head in prop_oneof![1usize..=8, Just(17), Just(64)], seed in any::<u64>(), masked in any::<bool>()) {
        let (cfg, d_head) = common::fit(Config { method: Method::Deberta, rel_v: false, ..cfg }, d_head);
        let mut rng = seed;
        let mut next = move || {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((rng >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let mut mat = |r: usize, c: usize| Array2::from_shape_simple_fn((r, c), &mut next);
        let (q, k, v, tk) = (mat(lq, d_head), mat(lk, d_head), mat(lk, d_head), mat(cfg.table_rows(), 2 * d_head));
        let mask = Array2::from_shape_fn((1, lk), |(_, j)| !masked || j % 7 != 3).index_axis_move(Axis(0), 0);
        let sink = (seed % 3 == 0).then_some(-0.4f32);
        let input = HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: tk.view(), rel_v: None, key_mask: Some(mask.view()), rope: None, sink, segments: None };
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head_with_sink(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&tk), None, Some(mask.as_slice().unwrap()), sink.map(f64::from));
        for isa in Isa::ALL.into_iter().filter(|isa| isa.available()) {
            let z = attend_head_fused(isa, &cfg, &input).unwrap();
            let e = rel_err(z.iter(), flat(&want.z));
            prop_assert!(e <= TOL, "{} {cfg:?} lq {lq} lk {lk} d_head {d_head}: {e:e}", isa.name());
        }
        let z = attend_head(&cfg, &input, None).unwrap();
        prop_assert!(rel_err(z.iter(), flat(&want.z)) <= TOL, "attend_head without a trace: {cfg:?} lq {lq} lk {lk} d_head {d_head}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// A head's trace computed a block of query rows at a time ([`attend_rows`], the page's traces of long
    /// sequences) equals the whole head's rows: every stage, the skew's steps (its reshaped buffer's rows
    /// start..=end), the output; blocks cut at random, both implementations.
    #[test]
    fn row_blocks_match_the_whole_head(cfg in common::configs(1..=1, 0..=14), materialized in any::<bool>(), n in 1usize..=40,
                                        d_head in 1usize..=6, seed in any::<u64>(), cuts in proptest::collection::vec(1usize..=40, 0..6)) {
        let implementation = if materialized { Implementation::Materialized } else { Implementation::Efficient };
        let (cfg, d_head) = common::fit(Config { implementation, ..cfg }, d_head);
        let sc = Scenario::build(&cfg, &Spec { n, d_model: d_head, batch: 1, seed }, Arrays::new(), false).unwrap();
        let t = forward::trace(&cfg, &sc).unwrap();
        let head = |a: &ndarray::Array4<f32>| a.index_axis(Axis(0), 0).index_axis(Axis(0), 0).to_owned();
        let (q, k, v) = (t.q.index_axis(Axis(0), 0), t.k.index_axis(Axis(0), 0), t.v.index_axis(Axis(0), 0));
        let input = HeadInput { q, k, v, rel_k: t.rel_k.index_axis(Axis(0), 0), rel_v: t.rel_v.as_ref().map(|a| a.index_axis(Axis(0), 0)), key_mask: None, rope: None, sink: None, segments: sc.segments.as_ref().map(|s| s.row(0)) };
        let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c < n).chain([0, n]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mut part = HeadTrace::default();
            let z = attend_rows(&cfg, &input, a..b, &mut part).unwrap();
            let rows = |m: Array2<f32>| m.slice(ndarray::s![a..b, ..]).to_owned();
            let close = |got: &Array2<f32>, want: &Array2<f32>| got.dim() == want.dim() && rel_err(got.iter(), want.iter().map(|&v| v as f64)) <= 1e-6;
            let relative = if cfg.method.has_relative_term() { rows(head(&t.relative_logits)) } else { Array2::zeros((0, 0)) };
            if let (Some((q, k)), Some((wq, wk))) = (&part.rotated, &t.rotated) {
                prop_assert!(close(q, &rows(head(wq))) && close(k, &head(wk)), "{cfg:?} rows {a}..{b}: rotated Q or K differ");
            }
            prop_assert_eq!(part.rotated.is_some(), cfg.method == Method::Rope);
            for (name, got, want) in [
                ("content_logits", &part.content_logits, rows(head(&t.content_logits))),
                ("relative_logits", &part.relative_logits, relative),
                ("weights", &part.weights, rows(head(&t.weights))),
                ("output_content", &part.out_content, rows(head(&t.out_content))),
                ("output_relative", &part.out_relative, rows(head(&t.out_relative))),
                ("heads", &z, t.heads.index_axis(Axis(0), 0).slice(ndarray::s![a..b, ..]).to_owned()),
            ] {
                prop_assert!(close(got, &want), "{cfg:?} n {n} rows {a}..{b}: {name} differs");
            }
            let finite = |m: &Array2<f32>| m.mapv(|v| if v.is_finite() { v } else { -1e30 });
            prop_assert!(close(&finite(&part.logits), &finite(&rows(head(&t.logits)))), "{cfg:?} rows {a}..{b}: logits differ");
            if let Some(bk) = &t.value_buckets {
                prop_assert!(close(part.value_buckets.as_ref().unwrap(), &rows(head(bk))), "rows {a}..{b}: buckets differ");
            }
            for (name, got, whole) in [("c2p", &part.c2p, &t.c2p), ("p2c", &part.p2c, &t.p2c), ("bd", &part.bd, &t.bd), ("ef", &part.ef, &t.ef), ("bd_relative", &part.bd_relative, &t.bd_relative)] {
                prop_assert_eq!(got.is_some(), whole.is_some(), "{}", name);
                if let (Some(got), Some(whole)) = (got, whole) {
                    prop_assert!(close(got, &rows(head(whole))), "{cfg:?} rows {a}..{b}: {name} differs");
                }
            }
            prop_assert_eq!(part.skew.is_some(), t.skew.is_some());
            if let (Some(got), Some(whole)) = (&part.skew, &t.skew) {
                prop_assert!(close(&got.qer, &rows(head(&whole.qer))) && close(&got.padded, &rows(head(&whole.padded))) && close(&got.sliced, &rows(head(&whole.sliced))));
                let reshaped = head(&whole.reshaped).slice(ndarray::s![a..=b, ..]).to_owned();
                prop_assert!(close(&got.reshaped, &reshaped), "{cfg:?} n {n} rows {a}..{b}: reshaped rows differ");
            }
        }
    }
}

/// Every key masked: zero weights and zero output, never NaN.
#[test]
fn fully_masked_rows_give_zeros() {
    let cfg = Config { heads: 2, ..Config::default() };
    let given = Arrays::from([("key_mask".to_string(), Array2::<f32>::zeros((1, 5)).into_dyn())]);
    let sc = Scenario::build(&cfg, &Spec { n: 5, d_model: 8, batch: 1, seed: 3 }, given, false).unwrap();
    let t = forward::trace(&cfg, &sc).unwrap();
    assert!(t.weights.iter().all(|&w| w == 0.0));
    assert!(t.out_content.iter().chain(t.out_relative.iter()).all(|&v| v == 0.0));
    // output = 0 · W_o + b_o, with b_o generated as zeros.
    assert!(t.output.iter().all(|&v| v == 0.0));
}

/// Logits scaled by 1e4 stay finite and rows still sum to 1.
#[test]
fn huge_logits_stay_finite() {
    let cfg = Config { heads: 2, clip: 3, causal: true, ..Config::default() };
    let spec = Spec { n: 16, d_model: 8, batch: 1, seed: 9 };
    let sc = Scenario::build(&cfg, &spec, Arrays::new(), false).unwrap();
    let sc = Scenario { x: sc.x.mapv(|v| v * 1e4), ..sc };
    let t = forward::trace(&cfg, &sc).unwrap();
    assert!(t.weights.iter().all(|w| w.is_finite()));
    for row in t.weights.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-5);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A captured model's layer: g grouped K/V heads (w_k, w_v (d_model, g·d_head) and their biases; query
    /// head h reads K/V head ⌊h·g/heads⌋) and the model's own rotary cos and sin (any frequencies, scaled by
    /// an attention factor as YaRN's), by definition in f64 from the grouped arrays themselves; traced,
    /// forward, on demand.
    #[test]
    fn grouped_heads_and_given_rotary_match_definition(kv_heads in 1usize..=2, groups in 1usize..=3, d_half in 1usize..=3, n in 1usize..=9,
                                                       half in any::<bool>(), partial in any::<bool>(), causal in any::<bool>(),
                                                       mscale in prop_oneof![Just(1.0f32), Just(1.2)], seed in any::<u64>()) {
        let heads = kv_heads * groups;
        let dh = 2 * d_half * if partial { 2 } else { 1 };
        let d = heads * dh;
        let rope = Rope { fraction: if partial { 0.5 } else { 1.0 }, layout: if half { PairLayout::Half } else { PairLayout::Interleaved }, ..Rope::default() };
        let cfg = Config { method: Method::Rope, heads, causal, rope, ..Config::default() };
        let pairs = rope.rotated_dims(dh) / 2;
        let mut r = seed;
        let mut draw = move || { r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((r >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0 };
        let mut arr = |shape: &[usize]| ndarray::ArrayD::from_shape_simple_fn(shape, &mut draw);
        let inv_freq: Vec<f32> = (0..pairs).map(|p| 0.9f32.powi(3 * p as i32 + 1)).collect();
        let angle = |m: usize, p: usize| m as f32 * inv_freq[p];
        let cos = Array2::from_shape_fn((n, pairs), |(m, p)| angle(m, p).cos() * mscale);
        let sin = Array2::from_shape_fn((n, pairs), |(m, p)| angle(m, p).sin() * mscale);
        let mut given = Arrays::new();
        for (name, shape) in [("x", vec![n, d]), ("w_q", vec![d, d]), ("w_k", vec![d, kv_heads * dh]), ("w_v", vec![d, kv_heads * dh]), ("w_o", vec![d, d]),
                              ("b_q", vec![d]), ("b_k", vec![kv_heads * dh]), ("b_v", vec![kv_heads * dh]), ("b_o", vec![d])] {
            given.insert(name.into(), arr(&shape));
        }
        given.insert("rope_cos".into(), cos.clone().into_dyn());
        given.insert("rope_sin".into(), sin.clone().into_dyn());
        let two = |name: &str| given[name].clone().into_dimensionality::<ndarray::Ix2>().unwrap();
        let one = |name: &str| given[name].clone().into_dimensionality::<ndarray::Ix1>().unwrap();
        let x: common::Mat = two("x").rows().into_iter().map(|r| r.iter().map(|&v| v as f64).collect()).collect();
        let f64s = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&v| v as f64).collect()).collect() };
        let (q, k, v) = (common::project(&x, &two("w_q"), &one("b_q")), common::project(&x, &two("w_k"), &one("b_k")), common::project(&x, &two("w_v"), &one("b_v")));
        // No rotation inside the definition's head (the method's rotation is the one given): its other steps as RoPE's.
        let plain = Config { method: Method::Absolute, ..cfg };
        let mut concat = vec![vec![0.0; d]; n];
        let mut weights = vec![];
        for h in 0..heads {
            let g = h * kv_heads / heads;
            let turn = |m: &common::Mat| common::rotate_by(m, &f64s(&cos), &f64s(&sin), rope.layout);
            let head = common::head(&plain, &turn(&common::columns(&q, h * dh, (h + 1) * dh)), &turn(&common::columns(&k, g * dh, (g + 1) * dh)),
                                    &common::columns(&v, g * dh, (g + 1) * dh), &vec![], None, None);
            for (row, z) in concat.iter_mut().zip(&head.z) {
                row[h * dh..(h + 1) * dh].copy_from_slice(z);
            }
            weights.push(head.weights);
        }
        let output = common::project(&concat, &two("w_o"), &one("b_o"));
        let sc = Scenario::build(&cfg, &Spec::default(), given, false).unwrap();
        let t = forward::trace(&cfg, &sc).unwrap();
        for (h, w) in weights.iter().enumerate() {
            let e = rel_err(t.weights.index_axis(Axis(0), 0).index_axis(Axis(0), h).iter(), flat(w));
            prop_assert!(e <= TOL, "weights h{h}: {e:e}");
        }
        prop_assert!(rel_err(t.output.iter(), flat(&output)) <= TOL, "trace output");
        prop_assert!(rel_err(forward::forward(&cfg, &sc).unwrap().iter(), flat(&output)) <= TOL, "forward output");
        let layer = relattn_core::layer::on_demand::Layer::new(&cfg, sc.clone(), forward::projections(&cfg, &sc).unwrap(), t.output.clone()).unwrap();
        for (h, w) in weights.iter().enumerate() {
            prop_assert!(rel_err(layer.stage(relattn_core::stage::Stage::Weights, 0, h).unwrap().iter(), flat(w)) <= TOL, "on demand h{h}");
        }
        // The angles read back from the given table are the model's own, and their figure says so.
        prop_assert!(t.meta(relattn_core::stage::Stage::RopeAngles).title.contains("the model's own"));
        prop_assert!(layer.meta(relattn_core::stage::Stage::RopeKernel).formula.contains("model's cos and sin"));
        let angles = t.stage(relattn_core::stage::Stage::RopeAngles, 0, 0).unwrap();
        prop_assert!(angles.indexed_iter().all(|((m, p), a)| (a - angle(m, p)).abs() < 1e-4), "{angles:?}");
    }
}

/// A model's learned absolute positions: added to x as the sinusoids would be, or, when x holds them already
/// (`positions_in_x`, a captured GPT-2 layer), shown and not added; by definition either way.
#[test]
fn learned_positions_match_definition() {
    let (n, d) = (7, 12);
    let table = ndarray::Array2::from_shape_fn((n, d), |(p, c)| ((p * 5 + c * 3) % 7) as f32 / 3.0 - 1.0);
    for in_x in [false, true] {
        let cfg = Config { method: Method::Absolute, heads: 3, causal: true, positions_in_x: in_x, ..Config::default() };
        let given: Arrays = [("positions".to_string(), table.clone().into_dyn())].into();
        let sc = Scenario::build(&cfg, &Spec { n, d_model: d, batch: 2, seed: 5 }, given, false).unwrap();
        check_layer(&cfg, &sc).unwrap();
        let t = forward::trace(&cfg, &sc).unwrap();
        assert_eq!(t.stage(relattn_core::stage::Stage::Positions, 1, 0).unwrap(), table);
        assert_eq!(t.meta(relattn_core::stage::Stage::Positions).title.contains("learned"), in_x);
    }
    let e = Scenario::build(
        &Config { method: Method::Absolute, ..Config::default() },
        &Spec { n, d_model: d, batch: 1, seed: 0 },
        [("positions".to_string(), ndarray::ArrayD::zeros(vec![n, d + 1]))].into(),
        false,
    )
    .unwrap_err();
    assert!(e.field() == "positions" && e.to_string().contains("(n, d_model)"), "{e}");
}

/// A bias past float32's range (ALiBi's slope of 1e38 times a distance) is refused as an overflow in "logits" by the trace, the fused forward and a layer held on demand alike (the
/// trace once gave −∞ in unmasked cells and exit 0, where the forward refused).
#[test]
fn a_bias_past_float32_is_refused_on_every_path() {
    let given: Arrays = [("alibi_slopes".to_string(), ndarray::arr1(&[1e38f32, 0.5]).into_dyn())].into();
    for causal in [false, true] {
        let cfg = Config { method: Method::Alibi, heads: 2, causal, ..Config::default() };
        let sc = Scenario::build(&cfg, &Spec { n: 8, d_model: 16, batch: 1, seed: 1 }, given.clone(), false).unwrap();
        let named = |r: relattn_core::Result<()>| match r {
            Err(relattn_core::Error::Overflow { array, .. }) => array,
            other => panic!("causal {causal}: {other:?}"),
        };
        assert_eq!(named(forward::trace(&cfg, &sc).map(drop)), "logits", "causal {causal}: trace");
        assert_eq!(named(forward::forward(&cfg, &sc).map(drop)), "logits", "causal {causal}: forward");
        assert_eq!(named(forward::forward_projected(&cfg, &sc).map(drop)), "logits", "causal {causal}: on demand");
    }
}

/// DeBERTa's terms past float32's range (a K_r of 3e38) are refused as an overflow in "logits" at the same pair by
/// the trace (stage by stage), the fused forward and a layer held on demand.
#[test]
fn deberta_terms_past_float32_are_refused_on_every_path() {
    use relattn_core::positions::deberta::Deberta;
    let deberta = Deberta { position_buckets: 0, max_relative_positions: 3, ..Deberta::default() };
    let given: Arrays = [("deberta_k_r".to_string(), Array2::<f32>::from_elem((6, 8), 3e38).into_dyn())].into();
    for causal in [false, true] {
        let cfg = Config { method: Method::Deberta, heads: 2, causal, deberta, ..Config::default() };
        let sc = Scenario::build(&cfg, &Spec { n: 8, d_model: 16, batch: 1, seed: 1 }, given.clone(), false).unwrap();
        let at = |r: relattn_core::Result<()>| match r {
            Err(relattn_core::Error::Overflow { array, index, .. }) => (array, index),
            other => panic!("causal {causal}: {other:?}"),
        };
        let traced = at(forward::trace(&cfg, &sc).map(drop));
        assert_eq!(traced.0, "logits", "causal {causal}: trace");
        assert_eq!(at(forward::forward(&cfg, &sc).map(drop)), traced, "causal {causal}: forward");
        assert_eq!(at(forward::forward_projected(&cfg, &sc).map(drop)).0, "logits", "causal {causal}: on demand");
    }
}

/// Arrays in any memory layout (a reversed NumPy view, a transposed table, strided rows) build the scenario
/// their row-major copies build: ALiBi's slopes reversed once panicked ("incompatible memory layout").
#[test]
fn any_layout_builds_the_same_scenario() {
    use ndarray::{s, ArrayD};
    let standard = |pairs: &[(&str, ArrayD<f32>)]| pairs.iter().map(|(n, a)| (n.to_string(), a.as_standard_layout().into_owned())).collect::<Arrays>();
    let slopes = ndarray::arr1(&[0.5f32, 0.25, 0.125, 0.0625]);
    let t5 = ndarray::Array2::from_shape_fn((4, 8), |(h, b)| (h * 8 + b) as f32 / 10.0); // (heads, buckets): transposed below
    let x = ndarray::Array2::from_shape_fn((12, 16), |(i, c)| ((i * 16 + c) as f32 * 0.37).sin());
    let reversed_rows = x.slice(s![..;-2, ..]).to_owned().into_dyn();
    let strided_rows = x.slice(s![..;2, ..]).into_dyn();
    for (method, pairs) in [
        (Method::Alibi, vec![("alibi_slopes", slopes.slice(s![..;-1]).to_owned().into_dyn()), ("x", reversed_rows)]),
        (Method::T5, vec![("t5_bias", t5.clone().reversed_axes().into_dyn()), ("x", strided_rows.to_owned())]),
    ] {
        let cfg = Config { method, heads: 4, buckets: relattn_core::positions::t5::Buckets { count: 8, max_distance: 20 }, ..Config::default() };
        assert!(pairs.iter().any(|(_, a)| !a.is_standard_layout()));
        let odd: Arrays = pairs.iter().map(|(n, a)| (n.to_string(), a.clone())).collect();
        let a = Scenario::build(&cfg, &Spec::default(), odd, false).unwrap();
        let b = Scenario::build(&cfg, &Spec::default(), standard(&pairs), false).unwrap();
        assert_eq!(a, b, "{method}");
        assert_eq!(a.x.index_axis(Axis(0), 0).row(0), x.row(if method == Method::Alibi { 11 } else { 0 }));
    }
}

/// Grouped K/V arrays of a width no divisor of the heads gives, values and an output of their own widths, and a
/// cos without its sin: taken or refused by name.
#[test]
fn grouped_and_rotary_arrays_are_checked() {
    let cfg = Config { method: Method::Rope, heads: 4, ..Config::default() };
    let spec = Spec { n: 3, d_model: 16, batch: 1, seed: 0 };
    let build = |pairs: &[(&str, Vec<usize>)]| {
        let given: Arrays = pairs.iter().map(|(n, s)| (n.to_string(), ndarray::ArrayD::zeros(s.as_slice()))).collect();
        Scenario::build(&cfg, &spec, given, false)
    };
    assert!(build(&[("w_k", vec![16, 8]), ("w_v", vec![16, 8]), ("b_k", vec![8]), ("b_v", vec![8])]).is_ok());
    let e = build(&[("w_k", vec![16, 12])]).unwrap_err();
    assert_eq!(e.field(), "w_k");
    assert!(e.to_string().contains("g dividing heads = 4"), "{e}");
    let e = build(&[("w_k", vec![16, 8]), ("w_v", vec![16, 9])]).unwrap_err();
    assert!(e.field() == "w_v" && e.to_string().contains("2·d_v"), "{e}");
    // Values of their own width (d_v 8 for d_head 4): w_o's rows follow them, its columns give the output's width.
    let sc = build(&[("w_k", vec![16, 8]), ("w_v", vec![16, 16]), ("w_o", vec![32, 5]), ("b_v", vec![16]), ("b_o", vec![5])]).unwrap();
    assert_eq!((sc.d_head, sc.d_v, sc.d_out(), sc.w_v.dim()), (4, 8, 5, (16, 32)));
    let e = build(&[("w_k", vec![16, 8]), ("w_v", vec![16, 16]), ("w_o", vec![16, 16])]).unwrap_err();
    assert!(e.field() == "w_o" && e.to_string().contains("[32, d_out] = (heads·d_v, d_out)"), "{e}");
    let e = build(&[("w_v", vec![16, 8]), ("b_v", vec![16])]).unwrap_err();
    assert!(e.field() == "b_v" && e.to_string().contains("[8]"), "{e}");
    let e = build(&[("rope_cos", vec![3, 2])]).unwrap_err();
    assert_eq!(e.field(), "rope_sin");
    let e = build(&[("rope_cos", vec![3, 3]), ("rope_sin", vec![3, 3])]).unwrap_err();
    assert!(e.field() == "rope_cos" && e.to_string().contains("[3, 2]"), "{e}");
    let shaw = Scenario::build(
        &Config::default(),
        &Spec { n: 3, d_model: 4, batch: 1, seed: 0 },
        [("rope_cos".to_string(), ndarray::ArrayD::zeros(vec![3, 1]))].into(),
        false,
    );
    assert!(shaw.unwrap_err().to_string().contains("rope_cos"));
}

/// Per-head tables really differ per head; a shared table is one slice.
#[test]
fn shared_and_per_head_tables() {
    let cfg = Config { heads: 4, ..Config::default() };
    let spec = Spec { n: 6, d_model: 16, batch: 1, seed: 1 };
    let shared = Scenario::build(&cfg, &spec, Arrays::new(), false).unwrap();
    let per_head = Scenario::build(&cfg, &spec, Arrays::new(), true).unwrap();
    assert_eq!(shared.rel_k.dim(), (1, 5, 4));
    assert_eq!(per_head.rel_k.dim(), (4, 5, 4));
    assert_ne!(per_head.rel_k.index_axis(Axis(0), 0), per_head.rel_k.index_axis(Axis(0), 1));
    let _: Array3<f32> = per_head.rel_k;
}

/// The negative control of BERT's checks: the same head with its distance table read the other way (row j − i + P − 1,
/// the direction Shaw's tables use, not Hugging Face's i − j + P − 1) is far from the definition, for both types, so
/// the comparisons above would fail on a term turned around.
#[test]
fn bert_turned_around_fails_the_definition() {
    use relattn_core::positions::bert_relative::{BertRelative, BertTerms};
    let (n, dh) = (7, 4);
    let wave = |r: usize, c: usize, f: f32| Array2::from_shape_fn((r, c), |(i, j)| ((i * c + j) as f32 * f).sin());
    for terms in [BertTerms::Key, BertTerms::KeyQuery] {
        let cfg = Config { method: Method::BertRelative, bert: BertRelative { max_position: n, terms }, ..Config::default() };
        let (q, k, v, table) = (wave(n, dh, 0.7), wave(n, dh, 1.3), wave(n, dh, 0.4), wave(2 * n - 1, dh, 2.1));
        let turned = table.slice(ndarray::s![..;-1, ..]).to_owned();
        let to_mat = |a: &Array2<f32>| -> common::Mat { a.rows().into_iter().map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
        let want = common::head(&cfg, &to_mat(&q), &to_mat(&k), &to_mat(&v), &to_mat(&table), None, None);
        let run = |t: &Array2<f32>| {
            let input =
                HeadInput { q: q.view(), k: k.view(), v: v.view(), rel_k: t.view(), rel_v: None, key_mask: None, rope: None, sink: None, segments: None };
            let mut trace = HeadTrace::default();
            attend_head(&cfg, &input, Some(&mut trace)).unwrap();
            trace.relative_logits
        };
        assert!(rel_err(run(&table).iter(), flat(&want.relative)) <= TOL, "{terms:?}");
        assert!(rel_err(run(&turned).iter(), flat(&want.relative)) > 0.1, "{terms:?}: the turned table passes");
    }
}

/// DeBERTa's tables as a file gives them (a captured model's K_r and Q_r, per head or shared; one of them alone)
/// are the ones the layer reads: [K_r | Q_r] side by side in each head's table, the trace's `deberta_k_r` and
/// `deberta_q_r` the given ones, and the layer equal to the f64 definition on them; a table of another shape is
/// refused naming it.
#[test]
fn given_deberta_tables_are_read() {
    use relattn_core::positions::deberta::Deberta;
    let deberta = Deberta { position_buckets: 4, max_relative_positions: 8, ..Deberta::default() };
    let cfg = Config { method: Method::Deberta, heads: 2, deberta, ..Config::default() };
    let spec = Spec { n: 11, d_model: 8, batch: 1, seed: 5 };
    let k_r = Array3::from_shape_fn((2, 8, 4), |(h, r, c)| (h * 32 + r * 4 + c) as f32 * 0.01 - 0.3);
    let q_r = Array2::from_shape_fn((8, 4), |(r, c)| ((r * 7 + c * 3) % 11) as f32 * 0.05 - 0.25);
    let mut given = Arrays::new();
    given.insert("deberta_k_r".into(), k_r.clone().into_dyn());
    given.insert("deberta_q_r".into(), q_r.clone().into_dyn());
    let sc = Scenario::build(&cfg, &spec, given, false).unwrap();
    assert_eq!(sc.rel_k.dim(), (2, 8, 8));
    for h in 0..2 {
        assert_eq!(sc.rel_k.slice(ndarray::s![h, .., ..4]), k_r.index_axis(Axis(0), h));
        assert_eq!(sc.rel_k.slice(ndarray::s![h, .., 4..]), q_r);
    }
    let t = forward::trace(&cfg, &sc).unwrap();
    let arrays = t.arrays().unwrap();
    let named = |name: &str| match &arrays.iter().find(|(n, _)| *n == name).unwrap().1 {
        relattn_core::layer::trace::Named::F32(a) => a.to_owned(),
        relattn_core::layer::trace::Named::I64(_) => unreachable!(),
    };
    assert_eq!(named("deberta_k_r"), k_r.into_dyn());
    assert_eq!(named("deberta_q_r").index_axis(Axis(0), 1), q_r.clone().into_dyn());
    check_layer(&cfg, &sc).unwrap();
    let mut wrong = Arrays::new();
    wrong.insert("deberta_q_r".into(), Array2::<f32>::zeros((7, 4)).into_dyn());
    let e = Scenario::build(&cfg, &spec, wrong, false).unwrap_err();
    assert!(matches!(&e, relattn_core::error::Error::Shape { array, .. } if array == "deberta_q_r"), "{e}");
}
