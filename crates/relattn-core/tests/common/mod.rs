//! A plain-loop definition of relative attention in f64, written from the papers and independent of the
//! library's code paths, and a tolerance check.
#![allow(dead_code)]
// The definition is written as the formulas' index loops on purpose (i, j, c as in the papers).
#![allow(clippy::needless_range_loop)]

pub mod fixture;

use proptest::prelude::*;
use relattn_core::attention::LogitScale;
use relattn_core::positions::bert_relative::{BertRelative, BertTerms};
use relattn_core::positions::deberta::{Deberta, Terms};
use relattn_core::positions::rope::{PairLayout, Rope};
use relattn_core::positions::t5::Buckets;
use relattn_core::positions::transformer_xl::TransformerXl;
use relattn_core::{Config, Edge, Implementation, Method, Scenario};
use std::ops::RangeInclusive;

pub type Mat = Vec<Vec<f64>>;

/// One head's results by definition.
pub struct HeadRef {
    pub relative: Mat,
    /// DeBERTa's terms, or BERT's query term (`c2p`) and key term (`p2c`); zeros for the other schemes and for a term
    /// the layer leaves out.
    pub c2p: Mat,
    pub p2c: Mat,
    /// Transformer-XL's BD (q_i + v)·r[δ] (zeros where causal masks it) and EF (q_i + s)·seg[σ_i ≠ σ_j]; zeros for the
    /// other schemes and without segments.
    pub bd: Mat,
    pub ef: Mat,
    pub weights: Mat,
    pub z: Mat,
    /// Which cells are masked.
    pub masked: Vec<Vec<bool>>,
}

/// Table row of distance `d`, by the definitions in docs/src/math.md:
/// Shaw: clip(d, k) + k. Music causal: rows for −k..=0; bidirectional: −k..=k; beyond them zero or the edge.
pub fn table_row(cfg: &Config, d: i64) -> Option<usize> {
    let k = cfg.clip as i64;
    let (lo, hi) = match (cfg.method, cfg.causal) {
        (Method::Music, true) => (-k, 0),
        _ => (-k, k),
    };
    if (lo..=hi).contains(&d) {
        return Some((d - lo) as usize);
    }
    match (cfg.method, cfg.edge) {
        (Method::Shaw, _) | (Method::Music, Edge::Clip) => Some((d.clamp(lo, hi) - lo) as usize),
        _ => None,
    }
}

/// DeBERTa's row of δ = i − j, Hugging Face's `make_log_bucket_position` and clamp written out again (float32 as
/// torch computes the log): S = buckets or max_relative_positions; with buckets, m = buckets / 2, |δ| ≤ m keeps δ,
/// farther sign(δ)·(⌈ln(|δ|/m) / ln((P − 1)/m)·(m − 1)⌉ + m); then clamp(· + S, 0, 2S − 1).
pub fn deberta_row(d: &Deberta, delta: i64) -> usize {
    let (b, p) = (d.position_buckets as i64, d.max_relative_positions as i64);
    let span = if b > 0 { b } else { p };
    let mut pos = delta;
    if b > 0 && p > 0 {
        let mid = b / 2;
        let abs = if delta < mid && delta > -mid { mid - 1 } else { delta.abs() };
        let log = ((abs as f32 / mid as f32).ln() / (((p - 1) as f64 / mid as f64) as f32).ln() * (mid - 1) as f32).ceil() + mid as f32;
        pos = if abs <= mid { delta } else { (log * delta.signum() as f32) as i64 };
    }
    (pos + span).clamp(0, 2 * span - 1) as usize
}

/// RoPE by Su et al.'s definition: row r of `x` (at position `first + r`) with pair p = (a, b) turned by the
/// angle (position / scale) · base^(−2p / d_rot); d_rot = ⌊fraction · d_head⌋ rounded down to even, the
/// pairs (2p, 2p + 1) interleaved or (p, p + d_rot/2) half-split.
pub fn rotate(rope: &Rope, x: &Mat, first: i64) -> Mat {
    let dh = x[0].len();
    let d_rot = ((dh as f64 * rope.fraction as f64) as usize) & !1;
    x.iter()
        .enumerate()
        .map(|(r, row)| {
            let mut out = row.clone();
            for p in 0..d_rot / 2 {
                let (a, b) = if rope.layout == PairLayout::Interleaved { (2 * p, 2 * p + 1) } else { (p, p + d_rot / 2) };
                let angle = (first + r as i64) as f64 / rope.scale as f64 * (rope.base as f64).powf(-2.0 * p as f64 / d_rot as f64);
                out[a] = row[a] * angle.cos() - row[b] * angle.sin();
                out[b] = row[b] * angle.cos() + row[a] * angle.sin();
            }
            out
        })
        .collect()
}

/// Row r of `x` with pair p turned by a model's own table: (x_a, x_b) → (x_a c − x_b s, x_b c + x_a s) with
/// c = `cos[r][p]`, s = `sin[r][p]` as given (not unit when the model scales its attention), the pairs as
/// `layout` says over the first 2·|cos[r]| components.
pub fn rotate_by(x: &Mat, cos: &Mat, sin: &Mat, layout: PairLayout) -> Mat {
    x.iter()
        .enumerate()
        .map(|(r, row)| {
            let mut out = row.clone();
            let half = cos[r].len();
            for p in 0..half {
                let (a, b) = if layout == PairLayout::Interleaved { (2 * p, 2 * p + 1) } else { (p, p + half) };
                out[a] = row[a] * cos[r][p] - row[b] * sin[r][p];
                out[b] = row[b] * cos[r][p] + row[a] * sin[r][p];
            }
            out
        })
        .collect()
}

/// x W + b in f64, for x (n, d_in) and W (d_in, d_out) of any width (a grouped K/V projection's g·d_head).
pub fn project(x: &Mat, w: &ndarray::Array2<f32>, b: &ndarray::Array1<f32>) -> Mat {
    matmul_bias(x, w, b)
}

/// Columns `from..to` of `m`.
pub fn columns(m: &Mat, from: usize, to: usize) -> Mat {
    cols(m, from, to)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// e_ij = q_i·(k_j + a^K_ij)·s (q_i·a^K_ij·s with the content term off; s = 1/sqrt(d_head), or 1 for
/// LogitScale::None); α = softmax
/// over unmasked j; z_i = Σ_j α_ij (v_j + a^V_ij). ALiBi: e_ij = q_i·k_j/sqrt(d_head) + m·(j − i) causal,
/// − m·|j − i| otherwise, m = `rel_k[0][0]`; T5: + `rel_k[bucket(j − i)][0]` (the bucket function is the
/// library's, checked against Hugging Face's in tests/positions.rs); RoPE: q and k rotated ([`rotate`]), no
/// relative term. Queries are aligned to the last keys: d_ij = j − (i + Lk − Lq). A window masks |d_ij| ≥ w, chunks of c keys outside the query's chunk; a
/// soft-cap c makes e_ij c·tanh(e_ij / c); a sink logit s adds exp(s) to each row's denominator
/// ([`head_with_sink`]); LogitScale::Factor(f) scales by f.
pub fn head(cfg: &Config, q: &Mat, k: &Mat, v: &Mat, rel_k: &Mat, rel_v: Option<&Mat>, key_mask: Option<&[bool]>) -> HeadRef {
    head_with_sink(cfg, q, k, v, rel_k, rel_v, key_mask, None)
}

#[allow(clippy::too_many_arguments)]
pub fn head_with_sink(cfg: &Config, q: &Mat, k: &Mat, v: &Mat, rel_k: &Mat, rel_v: Option<&Mat>, key_mask: Option<&[bool]>, sink: Option<f64>) -> HeadRef {
    head_with_segments(cfg, q, k, v, rel_k, rel_v, key_mask, sink, None)
}

/// Transformer-XL (Dai et al. 2019, XLNet's rel_attn_core), from its head's table: rows 0..P the projected sinusoids
/// r of δ = k, k − 1, … (δ = i − j clamped to [−k, k], or [0, k] causal), then u, v, s, seg_embed[0], seg_embed[1];
/// e_ij = ((q_i + u)·k_j + (q_i + v)·r[δ] + (q_i + s)·seg[σ_i ≠ σ_j]) / √d_head, the segment term with `segments`
/// (the keys' ids, query i's that of key i + Lk − Lq).
#[allow(clippy::too_many_arguments)]
pub fn head_with_segments(
    cfg: &Config,
    q: &Mat,
    k: &Mat,
    v: &Mat,
    rel_k: &Mat,
    rel_v: Option<&Mat>,
    key_mask: Option<&[bool]>,
    sink: Option<f64>,
    segments: Option<&[u32]>,
) -> HeadRef {
    let (lq, lk, dh) = (q.len(), k.len(), q[0].len());
    // The values' own width d_v (DeepSeek's MLA), d_head elsewhere.
    let dv = v.first().map_or(dh, |r| r.len());
    let rotated;
    let (q, k) = if cfg.method == Method::Rope {
        rotated = (rotate(&cfg.rope, q, lk as i64 - lq as i64), rotate(&cfg.rope, k, 0));
        (&rotated.0, &rotated.1)
    } else {
        (q, k)
    };
    let zero = vec![0.0; dh];
    let mut out = HeadRef {
        relative: vec![vec![0.0; lk]; lq],
        c2p: vec![vec![0.0; lk]; lq],
        p2c: vec![vec![0.0; lk]; lq],
        bd: vec![vec![0.0; lk]; lq],
        ef: vec![vec![0.0; lk]; lq],
        weights: vec![vec![0.0; lk]; lq],
        z: vec![vec![0.0; dv]; lq],
        masked: vec![vec![false; lk]; lq],
    };
    for i in 0..lq {
        let mut e = vec![f64::NEG_INFINITY; lk];
        for j in 0..lk {
            let d = j as i64 - (i as i64 + lk as i64 - lq as i64);
            if cfg.method == Method::Deberta {
                // K_r is the table's first d_head columns, Q_r the rest; δ = i − j.
                let r = &rel_k[deberta_row(&cfg.deberta, -d)];
                out.c2p[i][j] = if cfg.deberta.terms.c2p() { dot(&q[i], &r[..dh]) } else { 0.0 };
                out.p2c[i][j] = if cfg.deberta.terms.p2c() { dot(&k[j], &r[dh..]) } else { 0.0 };
            }
            if cfg.method == Method::BertRelative {
                // Hugging Face's BertSelfAttention: distance_embedding(i − j + P − 1), δ = i − j = −d; no clipping.
                let a = &rel_k[usize::try_from(-d + cfg.bert.max_position as i64 - 1).expect("n ≤ max_position")];
                out.c2p[i][j] = dot(&q[i], a);
                out.p2c[i][j] = if cfg.bert.terms == BertTerms::KeyQuery { dot(&k[j], a) } else { 0.0 };
            }
            // Transformer-XL's biases: the five rows after the P sinusoids.
            let xl = |r: usize| &rel_k[rel_k.len() - 5 + r];
            let plus = |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x + y).collect() };
            if cfg.method == Method::TransformerXl {
                let kk = cfg.clip as i64;
                let lo = if cfg.causal { 0 } else { -kk };
                if !(cfg.causal && d > 0) {
                    out.bd[i][j] = dot(&plus(&q[i], xl(1)), &rel_k[(kk - (-d).clamp(lo, kk)) as usize]);
                }
                if let Some(ids) = segments {
                    let other = ids[i + lk - lq] != ids[j];
                    out.ef[i][j] = dot(&plus(&q[i], xl(2)), xl(3 + other as usize));
                }
            }
            out.relative[i][j] = match cfg.method {
                Method::TransformerXl if cfg.causal && d > 0 => 0.0,
                Method::TransformerXl => out.bd[i][j] + out.ef[i][j],
                Method::Deberta | Method::BertRelative => out.c2p[i][j] + out.p2c[i][j],
                Method::Shaw | Method::Music => dot(&q[i], table_row(cfg, d).map_or(&zero, |r| &rel_k[r])),
                Method::Alibi if cfg.causal => rel_k[0][0] * d as f64,
                Method::Alibi => -rel_k[0][0] * d.abs() as f64,
                Method::T5 => rel_k[cfg.buckets.bucket(d as isize, cfg.causal)][0],
                Method::Rope | Method::Absolute => 0.0,
            };
            // The query's position p = j − d; a chunk of c holds positions ⌊p / c⌋·c .. (⌊p / c⌋ + 1)·c.
            let other_chunk = cfg.chunk.is_some_and(|c| (j as i64 - d).div_euclid(c as i64) != j as i64 / c as i64);
            let outside = cfg.window.is_some_and(|w| d.unsigned_abs() as usize >= w) || other_chunk;
            out.masked[i][j] = (cfg.causal && d > 0) || outside || key_mask.is_some_and(|m| !m[j]);
            if !out.masked[i][j] {
                let content = match (cfg.content, cfg.method) {
                    (false, _) => 0.0,
                    (true, Method::TransformerXl) => dot(&plus(&q[i], xl(0)), &k[j]),
                    (true, _) => dot(&q[i], &k[j]),
                };
                let scale = match cfg.logit_scale {
                    LogitScale::None => 1.0,
                    LogitScale::InvSqrtDHead if cfg.method == Method::Deberta => 1.0 / ((dh * (1 + cfg.deberta.terms.count())) as f64).sqrt(),
                    LogitScale::InvSqrtDHead => 1.0 / (dh as f64).sqrt(),
                    LogitScale::Factor(f) => f as f64,
                };
                e[j] = match cfg.method {
                    Method::Alibi | Method::T5 => content * scale + out.relative[i][j],
                    _ => (content + out.relative[i][j]) * scale,
                };
                if let Some(c) = cfg.softcap {
                    e[j] = c as f64 * (e[j] / c as f64).tanh();
                }
            }
        }
        let max = e.iter().copied().chain(sink).fold(f64::NEG_INFINITY, f64::max);
        if max == f64::NEG_INFINITY {
            continue;
        }
        let sum: f64 = e.iter().chain(sink.as_ref()).map(|x| (x - max).exp()).sum();
        for j in 0..lk {
            let w = (e[j] - max).exp() / sum;
            out.weights[i][j] = w;
            let d = j as i64 - (i as i64 + lk as i64 - lq as i64);
            for c in 0..dv {
                let a_v = match rel_v {
                    Some(t) if cfg.method == Method::Shaw && cfg.rel_v => table_row(cfg, d).map_or(0.0, |r| t[r][c]),
                    _ => 0.0,
                };
                out.z[i][c] += w * (v[j][c] + a_v);
            }
        }
    }
    out
}

/// The whole layer by definition: per (batch, head) results and the output (b, n, d_out).
pub struct LayerRef {
    pub heads: Vec<Vec<HeadRef>>,
    pub output: Vec<Mat>,
    /// How much the q and k RMS norms amplify an error in their inputs, at most ([`rms_norm`]'s gain; 1 without
    /// norms): the f32 projections' rounding reaches the logits grown by as much, so a comparison's bound scales by it.
    pub norm_gain: f64,
}

fn matmul_bias(x: &Mat, w: &ndarray::Array2<f32>, b: &ndarray::Array1<f32>) -> Mat {
    x.iter().map(|row| (0..w.ncols()).map(|c| b[c] as f64 + row.iter().enumerate().map(|(r, v)| v * w[[r, c]] as f64).sum::<f64>()).collect()).collect()
}

fn cols(m: &Mat, from: usize, to: usize) -> Mat {
    m.iter().map(|r| r[from..to].to_vec()).collect()
}

fn table(t: &ndarray::Array3<f32>, h: usize) -> Mat {
    let h = if t.shape()[0] == 1 { 0 } else { h };
    t.index_axis(ndarray::Axis(0), h).rows().into_iter().map(|r| r.iter().map(|&v| v as f64).collect()).collect()
}

/// RMS norm in f64: each run of γ's length in a row divided by its root mean square (with ε), times γ. Returns its
/// gain: the largest norm of its Jacobian over the runs, max|γ| / rms · (1 for runs of d > 1; ε / rms² for d = 1,
/// whose one direction is x's own: y = γ·x / √(x² + ε) has dy/dx = γ·ε / rms³) — up to max|γ| / √ε where a run is
/// near 0.
fn rms_norm(m: &mut Mat, gamma: &ndarray::Array1<f32>, eps: f32) -> f64 {
    let (d, eps) = (gamma.len(), eps as f64);
    let g_max = gamma.iter().fold(0.0f64, |a, g| a.max(g.abs() as f64));
    let mut gain = 0.0f64;
    for row in m.iter_mut() {
        for group in row.chunks_mut(d) {
            let rms = (group.iter().map(|v| v * v).sum::<f64>() / d as f64 + eps).sqrt();
            gain = gain.max(g_max / rms * if d > 1 { 1.0 } else { eps / (rms * rms) });
            group.iter_mut().zip(gamma).for_each(|(v, g)| *v = *v / rms * *g as f64);
        }
    }
    gain
}

pub fn layer(cfg: &Config, sc: &Scenario) -> LayerRef {
    let (b, n, d) = sc.x.dim();
    let (dh, dv) = (sc.d_head, sc.d_v);
    let mut out = LayerRef { heads: vec![], output: vec![], norm_gain: 1.0 };
    for bi in 0..b {
        // Absolute positions (Vaswani et al.): x_p + PE_p, PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(…).
        let pe = |p: usize, c: usize| {
            let angle = p as f64 / 10000f64.powf((c - c % 2) as f64 / d as f64);
            if c.is_multiple_of(2) {
                angle.sin()
            } else {
                angle.cos()
            }
        };
        // A model's own table when given; nothing when x holds the positions already.
        let added = |i: usize, c: usize| match (cfg.method, cfg.positions_in_x, &sc.positions) {
            (Method::Absolute, false, Some(p)) => p[[i, c]] as f64,
            (Method::Absolute, false, None) => pe(i, c),
            _ => 0.0,
        };
        let x: Mat = (0..n).map(|i| (0..d).map(|c| sc.x[[bi, i, c]] as f64 + added(i, c)).collect()).collect();
        let (mut q, mut k, v) = (matmul_bias(&x, &sc.w_q, &sc.b_q), matmul_bias(&x, &sc.w_k, &sc.b_k), matmul_bias(&x, &sc.w_v, &sc.b_v));
        if let Some(g) = &sc.q_norm {
            out.norm_gain = out.norm_gain.max(rms_norm(&mut q, g, cfg.norm_eps));
        }
        if let Some(g) = &sc.k_norm {
            out.norm_gain = out.norm_gain.max(rms_norm(&mut k, g, cfg.norm_eps));
        }
        let mask: Option<Vec<bool>> = sc.key_mask.as_ref().map(|m| m.row(bi).to_vec());
        let mut concat = vec![vec![0.0; cfg.heads * dv]; n];
        let mut heads = vec![];
        for h in 0..cfg.heads {
            let (a, z) = (h * dh, (h + 1) * dh);
            let (va, vz) = (h * dv, (h + 1) * dv);
            let rel_v = sc.rel_v.as_ref().map(|t| table(t, h));
            let sink = sc.sinks.as_ref().map(|s| s[h] as f64);
            let segments: Option<Vec<u32>> = sc.segments.as_ref().map(|s| s.row(bi).to_vec());
            let (qh, kh, vh) = (cols(&q, a, z), cols(&k, a, z), cols(&v, va, vz));
            let r = head_with_segments(cfg, &qh, &kh, &vh, &table(&sc.rel_k, h), rel_v.as_ref(), mask.as_deref(), sink, segments.as_deref());
            for i in 0..n {
                concat[i][va..vz].copy_from_slice(&r.z[i]);
            }
            heads.push(r);
        }
        out.output.push(matmul_bias(&concat, &sc.w_o, &sc.b_o));
        out.heads.push(heads);
    }
    out
}

/// max |got − want| / max(1, max |want|): relative to the array's scale, absolute for arrays below 1.
pub fn rel_err<'a>(got: impl IntoIterator<Item = &'a f32>, want: impl IntoIterator<Item = f64>) -> f64 {
    let (mut diff, mut scale) = (0.0f64, 1.0f64);
    for (g, w) in got.into_iter().zip(want) {
        diff = diff.max((*g as f64 - w).abs());
        scale = scale.max(w.abs());
    }
    diff / scale
}

pub fn flat(m: &Mat) -> Vec<f64> {
    m.iter().flatten().copied().collect()
}

/// Random configurations: every method, `heads` and `clip` in the given ranges, causal or not, a^V on or
/// off, either edge, the content term on (3 in 4) or off, the logits scaled by 1/√d_head (2 in 4), by 0.3 (1 in 4) or not, a window, chunks, a soft-cap, RoPE's options (base, fraction, layout, scale) and
/// T5's buckets, DeBERTa's buckets and terms, BERT's terms (with a max_position of 1100 or 1500, at least every n the
/// tests draw: `bert_head_near_max_position` tries n near P), Transformer-XL's segments; the efficient implementation. The d_head of the tests (≥ 2) leaves RoPE a pair at any
/// fraction drawn here (½ or 1).
pub fn configs(heads: RangeInclusive<usize>, clip: RangeInclusive<usize>) -> impl Strategy<Value = Config> {
    let flags = (any::<bool>(), any::<bool>(), any::<bool>(), 0..4u8, 0..4u8, any::<bool>());
    let rope = (prop_oneof![Just(10000.0f32), Just(50.0)], any::<bool>(), any::<bool>(), prop_oneof![Just(1.0f32), Just(2.5)]);
    let buckets = prop_oneof![Just((4, 5)), Just((8, 20)), Just((32, 128))];
    // DeBERTa: plain clipping at a small span, small and v3's log buckets, each set of terms.
    let terms = prop_oneof![Just(Terms::Both), Just(Terms::C2p), Just(Terms::P2c)];
    let deberta = (prop_oneof![Just((0, 3)), Just((0, 1)), Just((6, 9)), Just((4, 40)), Just((256, 512))], terms)
        .prop_map(|((position_buckets, max_relative_positions), terms)| Deberta { position_buckets, max_relative_positions, terms });
    let bert = (prop_oneof![Just(1100), Just(1500)], prop_oneof![Just(BertTerms::Key), Just(BertTerms::KeyQuery)])
        .prop_map(|(max_position, terms)| BertRelative { max_position, terms });
    // A window in 1 of 3, a soft-cap in 1 of 4, a factor of its own in 1 of 4 of the scaled ones.
    let window = prop_oneof![2 => Just(None), 1 => prop_oneof![1..6usize, Just(70), Just(600)].prop_map(Some)];
    let softcap = prop_oneof![3 => Just(None), 1 => Just(Some(1.5f32))];
    // Chunks (Llama 4) in 1 of 4: a few keys, or across the fused kernel's blocks of 48 and 512.
    let chunk = prop_oneof![3 => Just(None), 1 => prop_oneof![1..5usize, Just(64), Just(520)].prop_map(Some)];
    // Transformer-XL: no segments, one, two or three.
    let xl = (0..4usize).prop_map(|segments| TransformerXl { segments });
    (0..Method::ALL.len(), heads, clip, flags, rope, buckets, (window, softcap, chunk), (deberta, bert, xl)).prop_map(
        |(
            method,
            heads,
            clip,
            (causal, rel_v, clip_edge, content, unscaled, in_x),
            (base, half, partial, scale),
            (count, max_distance),
            (window, softcap, chunk),
            (deberta, bert, xl),
        )| {
            Config {
                method: Method::ALL[method],
                heads,
                clip,
                causal,
                rel_v,
                edge: if clip_edge { Edge::Clip } else { Edge::Zero },
                implementation: Implementation::Efficient,
                content: content != 0,
                logit_scale: match unscaled {
                    0 => LogitScale::None,
                    1 => LogitScale::Factor(0.3),
                    _ => LogitScale::InvSqrtDHead,
                },
                window,
                chunk,
                softcap,
                norm_eps: 1e-6,
                rope: Rope { base, fraction: if partial { 0.5 } else { 1.0 }, layout: if half { PairLayout::Half } else { PairLayout::Interleaved }, scale },
                buckets: Buckets { count, max_distance },
                deberta,
                bert,
                xl,
                positions_in_x: in_x,
            }
        },
    )
}

/// `cfg` and `d_head` made to fit each other: RoPE rotates whole pairs, so its d_head is even (2 or more) and
/// its fraction 1 where the one drawn leaves no pair or half a pair. Other methods are left as they are.
pub fn fit(cfg: Config, d_head: usize) -> (Config, usize) {
    if cfg.method != Method::Rope {
        return (cfg, d_head);
    }
    let d_head = (d_head + d_head % 2).max(2);
    let rope = if cfg.rope.check(d_head).is_err() { Rope { fraction: 1.0, ..cfg.rope } } else { cfg.rope };
    (Config { rope, ..cfg }, d_head)
}

/// An .npy file's bytes: `descr` and `shape` in the header, then `data`.
pub fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}").into_bytes();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header);
    bytes.extend(data);
    bytes
}
