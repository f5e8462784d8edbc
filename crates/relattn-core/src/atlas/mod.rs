//! The head atlas: each head of a layer summarised by position — where its attention falls by offset, how
//! spread it is, whether it looks one token back or at the first token, and how much of its logits the
//! position scheme's own term explains. Computed from a layer's projections ([`Projected`]: its output is not
//! computed) a block of query rows at a time ([`block_rows`](crate::layer::on_demand::block_rows), [`attend_rows`](crate::attention::attend_rows)): O(BLOCK·n) memory beside them, never a
//! head's (n, n) array.
//!
//! For one head of one sequence, with A the attention weights, S the scaled, masked logits (the `logits`
//! stage), T the scheme's position term in logit units ([`position_term`]), the counted queries i the unpadded
//! positions that see at least one key, V(i) the keys query i sees, f the first unpadded position:
//!
//! ```text
//! profile(d)      = Σ_i A[i, i + d] / #{i : i + d ∈ V(i)}          mean weight at offset d = j − i
//! mean_distance   = mean_i Σ_j A_ij·|i − j|                          (Dosovitskiy et al. 2021, fig. 7)
//! entropy         = mean_i −Σ_j A_ij·ln A_ij       uniform_entropy = mean_i ln |V(i)|     (nats)
//! previous_token  = mean_{i > f} A[i, i − 1]       first_token     = mean_{i > f} A[i, f]  (the sink score)
//! duplicate_token = Σ_ij A_ij·[tok_j = tok_i, j < i] / Σ_ij A_ij              (TransformerLens's detect_head,
//! induction       = Σ_ij A_ij·[tok_(j−1) = tok_i, 1 ≤ j ≤ i] / Σ_ij A_ij       error measure "mul")
//! S̃, T̃            = S, T less their mean over V(i), row by row (the softmax ignores a row's constant)
//! position_share  = 1 − Σ (S̃ − T̃)² / Σ S̃²       how much of the logits' spread the position term explains
//! offset_share    = Σ_d (Σ_(j−i=d) S̃)² / #(d) / Σ S̃²   how much the offset alone explains (any scheme)
//! term(d)         = mean of T over the visible pairs at offset d
//! band_q[p]       = mean_i ‖(q_i,a, q_i,b)‖ of RoPE's pair p = (a, b) (q before rotation); band_k the same of k
//! ```
//!
//! The position term T, as each scheme defines it ([`position_term`]): the relative logits of Shaw's and the
//! Music Transformer's a^K (q_i·a^K_(j−i), scaled), ALiBi's −m·|j − i| and T5's bias per bucket (added after the
//! scale); RoPE's change of the logit by the rotation, scale·(R_i q_i·R_j k_j − q_i·k_j); absolute positions'
//! P W_q (P W_k)ᵀ·scale (the positions' own product; the learned table of a captured model, else the sinusoids).

use crate::attention::{Config, HeadInput, HeadTrace};
use crate::core::matmul::matmul;
use crate::error::{check_index, Error, Result};
use crate::layer::forward::head_input;
use crate::layer::forward::{map_heads, projections, Projections};
use crate::layer::on_demand::each_traced_block;
use crate::layer::scenario::Scenario;
use crate::positions::absolute;
use crate::positions::rope::RopeTable;
use ndarray::{s, Array2, ArrayView2};
use std::ops::Range;

/// A layer as the atlas reads it: its options, its inputs and their projections Q, K, V (b, n, d_model each),
/// and RoPE's table made once for every head. The attention's output is not computed.
pub struct Projected {
    pub config: Config,
    pub scenario: Scenario,
    pub projections: Projections,
    rope: Option<RopeTable>,
}

impl Projected {
    /// The layer of `cfg` on `scenario`, projected.
    pub fn new(cfg: &Config, scenario: Scenario) -> Result<Projected> {
        let projections = projections(cfg, &scenario)?;
        let rope = scenario.rope_table(cfg);
        Ok(Projected { config: *cfg, scenario, projections, rope })
    }

    /// (b, h, n).
    pub fn dims(&self) -> (usize, usize, usize) {
        let (b, n, _) = self.scenario.dims();
        (b, self.config.heads, n)
    }

    /// Head `head` of batch element `batch` a block of query rows ([`block_rows`](crate::layer::on_demand::block_rows)) at a time, as [`attend_rows`](crate::attention::attend_rows) traces
    /// them: `f(rows, input, trace)` gets the head's tensors (Q, K and V as projected, before any rotation) and
    /// the trace of the query rows `rows`, every row once, in order.
    fn each_block(&self, batch: usize, head: usize, mut f: impl FnMut(Range<usize>, &HeadInput, &HeadTrace) -> Result<()>) -> Result<()> {
        let (b, h, _) = self.dims();
        check_index("batch index", batch, b)?;
        check_index("head", head, h)?;
        let input = head_input(&self.scenario, &self.projections, self.rope.as_ref(), batch, head);
        each_traced_block(&self.config, &input, |rows, trace| f(rows, &input, trace))
    }
}

/// The metrics of a head, in the order of [`HeadSummary::metrics`], by their names in files and in Python.
pub const METRICS: [&str; 9] =
    ["mean_distance", "entropy", "uniform_entropy", "previous_token", "first_token", "duplicate_token", "induction", "position_share", "offset_share"];

/// One head of one sequence, summarised. Offsets d = j − i run from −(n − 1) to n − 1, at index d + n − 1.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadSummary {
    /// The metrics in the order of [`METRICS`]; NaN where undefined (no counted query; the token scores
    /// without tokens; a share of logits that do not vary).
    pub metrics: [f64; 9],
    /// Σ over the counted queries that see offset d of A[i, i + d], (2n − 1).
    pub offset_weight: Vec<f64>,
    /// How many counted queries see offset d, (2n − 1).
    pub offset_queries: Vec<u64>,
    /// Σ over those pairs of the position term T, (2n − 1).
    pub offset_term: Vec<f64>,
    /// RoPE's mean norm of each rotated pair of q and of k, (d_rot/2) each; empty for other schemes.
    pub band_q: Vec<f64>,
    pub band_k: Vec<f64>,
}

impl HeadSummary {
    /// profile(d): mean weight at offset d over the queries that see it, NaN where none does.
    pub fn profile(&self) -> Vec<f64> {
        self.offset_weight.iter().zip(&self.offset_queries).map(|(&w, &c)| if c == 0 { f64::NAN } else { w / c as f64 }).collect()
    }

    /// term(d): the position term's mean at offset d, NaN where no query sees it.
    pub fn term(&self) -> Vec<f64> {
        self.offset_term.iter().zip(&self.offset_queries).map(|(&t, &c)| if c == 0 { f64::NAN } else { t / c as f64 }).collect()
    }
}

/// Every head of batch element `batch` of `layer`, summarised; `tokens` (n): that sequence's token ids, for
/// the duplicate-token and induction scores (NaN without). Heads on rayon's threads natively.
pub fn summarize(layer: &Projected, batch: usize, tokens: Option<&[i64]>) -> Result<Vec<HeadSummary>> {
    let (_, heads, n) = layer.dims();
    if let Some(t) = tokens {
        if t.len() != n {
            return Err(Error::invalid("tokens", format!("{} ids", t.len()), format!("one id per position: {n}")));
        }
    }
    map_heads(heads, |head| summarize_head(layer, batch, head, tokens)).into_iter().collect()
}

/// Sums over the counted queries, turned into [`HeadSummary`]'s means at the end.
#[derive(Default)]
struct Sums {
    queries: f64,
    distance: f64,
    entropy: f64,
    uniform: f64,
    after_first: f64,
    previous: f64,
    first: f64,
    weight: f64,
    duplicate: f64,
    induction: f64,
    logit_sq: f64,
    residual_sq: f64,
}

/// Head `head` of batch element `batch`, summarised ([`summarize`]).
pub fn summarize_head(layer: &Projected, batch: usize, head: usize, tokens: Option<&[i64]>) -> Result<HeadSummary> {
    let (_, _, n) = layer.dims();
    let width = 2 * n - 1;
    let (mut offset_weight, mut offset_queries, mut offset_term, mut offset_logit) = (vec![0.0; width], vec![0u64; width], vec![0.0; width], vec![0.0; width]);
    let mut sums = Sums::default();
    let absolute = absolute_positions(layer, head);
    let mut bands = None;
    // The keys a query row sees, one buffer for every row (not an allocation a row).
    let mut visible: Vec<usize> = Vec::with_capacity(n);
    layer.each_block(batch, head, |rows, input, trace| {
        if bands.is_none() {
            bands = Some(band_norms(layer, input));
        }
        let first = input.key_mask.and_then(|m| m.iter().position(|&k| k)).unwrap_or(0);
        let term = position_term(layer, input, trace, rows.clone(), absolute.as_ref());
        for (r, i) in rows.enumerate() {
            if input.key_mask.is_some_and(|m| !m[i]) {
                continue;
            }
            let (s_row, a_row, t_row) = (trace.logits.row(r), trace.weights.row(r), term.row(r));
            visible.clear();
            visible.extend((0..n).filter(|&j| s_row[j].is_finite()));
            if visible.is_empty() {
                continue;
            }
            let count = visible.len() as f64;
            let s_mean = visible.iter().map(|&j| s_row[j] as f64).sum::<f64>() / count;
            let t_mean = visible.iter().map(|&j| t_row[j] as f64).sum::<f64>() / count;
            sums.queries += 1.0;
            sums.uniform += count.ln();
            for &j in &visible {
                let (a, d) = (a_row[j] as f64, j as isize - i as isize);
                let at = (d + n as isize - 1) as usize;
                offset_weight[at] += a;
                offset_queries[at] += 1;
                offset_term[at] += t_row[j] as f64;
                let (s, t) = (s_row[j] as f64 - s_mean, t_row[j] as f64 - t_mean);
                offset_logit[at] += s;
                sums.logit_sq += s * s;
                sums.residual_sq += (s - t) * (s - t);
                sums.distance += a * d.unsigned_abs() as f64;
                if a > 0.0 {
                    sums.entropy -= a * a.ln();
                }
                sums.weight += a;
                if let Some(tok) = tokens {
                    if j < i && tok[j] == tok[i] {
                        sums.duplicate += a;
                    }
                    if (1..=i).contains(&j) && tok[j - 1] == tok[i] {
                        sums.induction += a;
                    }
                }
            }
            if i > first {
                sums.after_first += 1.0;
                sums.previous += a_row[i - 1] as f64;
                sums.first += a_row[first] as f64;
            }
        }
        Ok(())
    })?;
    let mean = |sum: f64, count: f64| if count > 0.0 { sum / count } else { f64::NAN };
    let share = |explained: f64| if sums.logit_sq > 0.0 { explained / sums.logit_sq } else { f64::NAN };
    let by_offset: f64 = offset_logit.iter().zip(&offset_queries).filter(|(_, &c)| c > 0).map(|(&s, &c)| s * s / c as f64).sum();
    let tokens_mean = |sum: f64| if tokens.is_some() { mean(sum, sums.weight) } else { f64::NAN };
    let metrics = [
        mean(sums.distance, sums.queries),
        mean(sums.entropy, sums.queries),
        mean(sums.uniform, sums.queries),
        mean(sums.previous, sums.after_first),
        mean(sums.first, sums.after_first),
        tokens_mean(sums.duplicate),
        tokens_mean(sums.induction),
        share(sums.logit_sq - sums.residual_sq),
        share(by_offset),
    ];
    let (band_q, band_k) = bands.unwrap_or_default();
    Ok(HeadSummary { metrics, offset_weight, offset_queries, offset_term, band_q, band_k })
}

/// The scheme's position term T of the query rows `rows`, (rows, n), in logit units (module docs). For the
/// relative schemes, their relative logits (Shaw's and the Music Transformer's scaled as the logits are,
/// ALiBi's and T5's bias added after the scale as they are); for RoPE the rotation's change of the logit; for
/// absolute positions P_q P_kᵀ·scale with `absolute` = (P W_q, P W_k) of this head.
fn position_term(layer: &Projected, input: &HeadInput, trace: &HeadTrace, rows: Range<usize>, absolute: Option<&(Array2<f32>, Array2<f32>)>) -> Array2<f32> {
    let cfg = &layer.config;
    let scale = cfg.logit_factor(input.q.ncols());
    let method = cfg.method;
    if method.has_relative_term() {
        let r = &trace.relative_logits;
        if method.adds_distance_bias() {
            r.clone()
        } else {
            r * scale
        }
    } else if method.rotates() {
        if !cfg.content {
            return Array2::zeros(trace.logits.dim());
        }
        let plain = matmul(input.q.slice(s![rows, ..]), input.k.t());
        (&trace.content_logits - &plain) * scale
    } else if let Some((pq, pk)) = absolute {
        matmul(pq.slice(s![rows, ..]), pk.t()) * scale
    } else {
        Array2::zeros(trace.logits.dim())
    }
}

/// (P W_q, P W_k) of `head`, (n, d_head) each, for a layer with absolute positions: the layer's own table
/// (a captured model's) or the sinusoids; `None` for other schemes.
fn absolute_positions(layer: &Projected, head: usize) -> Option<(Array2<f32>, Array2<f32>)> {
    if !layer.config.method.adds_to_input() {
        return None;
    }
    let sc = &layer.scenario;
    let (_, n, d) = sc.dims();
    let dh = sc.d_head;
    let table = sc.positions.clone().unwrap_or_else(|| absolute::sinusoids(n, d));
    let cols = s![.., head * dh..(head + 1) * dh];
    let project = |w: &Array2<f32>| matmul(table.view(), w.slice(cols));
    Some((project(&sc.w_q), project(&sc.w_k)))
}

/// RoPE's mean norm of each rotated pair of the head's q and k (before rotation), over the unpadded
/// positions; empty for other schemes.
fn band_norms(layer: &Projected, input: &HeadInput) -> (Vec<f64>, Vec<f64>) {
    let cfg = &layer.config;
    if !cfg.method.rotates() {
        return (Vec::new(), Vec::new());
    }
    let d_rot = cfg.rope.rotated_dims(input.q.ncols());
    let kept: Vec<usize> = (0..input.q.nrows()).filter(|&i| input.key_mask.is_none_or(|m| m[i])).collect();
    let norms = |x: ArrayView2<f32>| -> Vec<f64> {
        (0..d_rot / 2)
            .map(|p| {
                let (a, b) = cfg.rope.pair(p, d_rot);
                let sum: f64 = kept.iter().map(|&i| ((x[[i, a]] as f64).powi(2) + (x[[i, b]] as f64).powi(2)).sqrt()).sum();
                if kept.is_empty() {
                    f64::NAN
                } else {
                    sum / kept.len() as f64
                }
            })
            .collect()
    };
    (norms(input.q), norms(input.k))
}
