//! The whole layer: projections, heads, concatenation, output projection.
//!
//! ```text
//! Q = x W_q + b_q,  K = x W_k + b_k,  V = x W_v + b_v          (b, n, d_model)
//! head h reads columns h·d_head .. (h+1)·d_head of Q, K, V and table h (or the shared table)
//! output = concat_h(z_h) W_o + b_o                              (b, n, d_model)
//! ```

use crate::attention::{attend_head_timed, Config, HeadInput, HeadTrace, Implementation, Method};
use crate::error::{Bytes, Error, Result};
use crate::matmul::matmul;
use crate::relpos;
use crate::scenario::Scenario;
use crate::timing::{now_ms, StageTimes};
use crate::trace::{SkewTrace, Trace};
use ndarray::{s, Array2, Array3, Array4, ArrayView2, Axis};

/// Memory budget of one request unless the caller sets another.
pub const DEFAULT_MEMORY_LIMIT: u64 = 8 << 30;

/// Bytes a request needs at its peak, estimated from its sizes: inputs and projections, the (Lq, Lk)
/// work arrays of one head, the materialized (n, n, d_head) tensors when asked, and with `trace` every
/// stored stage of every head.
pub fn estimate_bytes(cfg: &Config, batch: usize, n: usize, d_model: usize, trace: bool) -> u64 {
    let (b, n, d, h) = (batch as u64, n as u64, d_model as u64, cfg.heads.max(1) as u64);
    let dh = d / h;
    let music_skew = if cfg.method == Method::Music { 4 * n * (2 * n + 1) } else { 0 };
    let per_head_work = 4 * n * n + music_skew;
    let materialized = if cfg.implementation == Implementation::Materialized { 2 * n * n * dh } else { 0 };
    let inputs = 6 * b * n * d + 4 * d * d;
    let stored = if trace { b * h * (4 * n * n + music_skew + 2 * n * dh) } else { 0 };
    4 * (inputs + per_head_work + materialized + stored)
}

/// Refuses a request whose estimate exceeds `limit` bytes.
pub fn check_budget(cfg: &Config, batch: usize, n: usize, d_model: usize, trace: bool, limit: u64) -> Result<()> {
    let estimate = estimate_bytes(cfg, batch, n, d_model, trace);
    if estimate > limit {
        let what = format!("{} with n = {n}, batch = {batch}, d_model = {d_model}, heads = {}", if trace { "the trace" } else { "the forward pass" }, cfg.heads);
        return Err(Error::TooLarge { what, estimate: Bytes(estimate), limit: Bytes(limit) });
    }
    Ok(())
}

/// `x W + b` for every batch: (b, n, d_model).
fn project(x: &Array3<f32>, w: &Array2<f32>, bias: &ndarray::Array1<f32>) -> Array3<f32> {
    let (b, n, _) = x.dim();
    let mut out = Array3::zeros((b, n, w.ncols()));
    for (xb, mut ob) in x.outer_iter().zip(out.outer_iter_mut()) {
        ob.assign(&(matmul(xb, w.view()) + bias));
    }
    out
}

/// The table of head `h`: per-head tables have one per head, a shared one has a single slice.
fn table_of(t: &Array3<f32>, h: usize) -> ArrayView2<'_, f32> {
    t.index_axis(Axis(0), if t.len_of(Axis(0)) == 1 { 0 } else { h })
}

/// `f(0..count)` in order: on rayon's threads natively, on the one thread in wasm.
fn map_heads<R: Send>(count: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        (0..count).into_par_iter().map(f).collect()
    }
    #[cfg(target_arch = "wasm32")]
    {
        (0..count).map(f).collect()
    }
}

/// Runs the layer; with `record`, keeps every intermediate; with `timed`, measures each stage.
fn run(cfg: &Config, sc: &Scenario, record: bool, timed: bool) -> Result<(Array3<f32>, Option<Trace>, Option<StageTimes>)> {
    let (b, n, d) = sc.dims();
    let (h, dh) = (cfg.heads, d / cfg.heads);
    let t0 = timed.then(now_ms);
    let q = project(&sc.x, &sc.w_q, &sc.b_q);
    let k = project(&sc.x, &sc.w_k, &sc.b_k);
    let v = project(&sc.x, &sc.w_v, &sc.b_v);
    let mut times = t0.map(|t0| StageTimes { projections: now_ms() - t0, ..StageTimes::default() });
    let results = map_heads(b * h, |idx| {
        let (bi, hi) = (idx / h, idx % h);
        let cols = s![.., hi * dh..(hi + 1) * dh];
        let input = HeadInput {
            q: q.index_axis(Axis(0), bi).slice_move(cols),
            k: k.index_axis(Axis(0), bi).slice_move(cols),
            v: v.index_axis(Axis(0), bi).slice_move(cols),
            rel_k: table_of(&sc.rel_k, hi),
            rel_v: sc.rel_v.as_ref().map(|t| table_of(t, hi)),
            key_mask: sc.key_mask.as_ref().map(|m| m.row(bi)),
        };
        let mut t = record.then(HeadTrace::default);
        let mut ht = timed.then(StageTimes::default);
        attend_head_timed(cfg, &input, t.as_mut(), ht.as_mut()).map(|z| (z, t, ht))
    });
    let mut heads = Array3::zeros((b, n, d));
    let mut traces: Vec<HeadTrace> = Vec::new();
    for (idx, r) in results.into_iter().enumerate() {
        let (z, t, ht) = r?;
        if let (Some(sum), Some(ht)) = (times.as_mut(), ht) {
            sum.add(&ht);
        }
        let (bi, hi) = (idx / h, idx % h);
        heads.slice_mut(s![bi, .., hi * dh..(hi + 1) * dh]).assign(&z);
        traces.extend(t);
    }
    let t_out = timed.then(now_ms);
    let output = project(&heads, &sc.w_o, &sc.b_o);
    if let (Some(sum), Some(t)) = (times.as_mut(), t_out) {
        sum.output = now_ms() - t;
    }
    let trace = record.then(|| assemble(cfg, sc, traces, q, k, v, heads, output.clone()));
    Ok((output, trace, times))
}

/// The layer's output (b, n, d_model), keeping only one head's (n, n) work arrays at a time.
pub fn forward(cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
    Ok(run(cfg, sc, false, false)?.0)
}

/// The output and every intermediate.
pub fn trace(cfg: &Config, sc: &Scenario) -> Result<Trace> {
    Ok(run(cfg, sc, true, false)?.1.expect("recorded"))
}

/// [`forward`] and the milliseconds of each stage (head stages summed over heads and batch: CPU time,
/// the heads run in parallel natively).
pub fn forward_timed(cfg: &Config, sc: &Scenario) -> Result<(Array3<f32>, StageTimes)> {
    let (output, _, times) = run(cfg, sc, false, true)?;
    Ok((output, times.expect("timed")))
}

/// [`trace`] and the milliseconds of each stage, as in [`forward_timed`].
pub fn trace_timed(cfg: &Config, sc: &Scenario) -> Result<(Trace, StageTimes)> {
    let (_, trace, times) = run(cfg, sc, true, true)?;
    Ok((trace.expect("recorded"), times.expect("timed")))
}

/// Stacks per-head traces (batch-major, then head) into (b, h, ·, ·) arrays.
#[allow(clippy::too_many_arguments)]
fn assemble(cfg: &Config, sc: &Scenario, heads: Vec<HeadTrace>, q: Array3<f32>, k: Array3<f32>, v: Array3<f32>, concat: Array3<f32>, output: Array3<f32>) -> Trace {
    let (b, n, _) = sc.dims();
    let h = cfg.heads;
    let stack = |f: &dyn Fn(&HeadTrace) -> &Array2<f32>| -> Array4<f32> {
        let (r, c) = f(&heads[0]).dim();
        let mut out = Array4::zeros((b, h, r, c));
        for (idx, t) in heads.iter().enumerate() {
            out.slice_mut(s![idx / h, idx % h, .., ..]).assign(f(t));
        }
        out
    };
    let skew = heads[0].skew.as_ref().map(|_| SkewTrace {
        qer: stack(&|t| &t.skew.as_ref().expect("every head has a skew").qer),
        padded: stack(&|t| &t.skew.as_ref().expect("every head has a skew").padded),
        reshaped: stack(&|t| &t.skew.as_ref().expect("every head has a skew").reshaped),
        sliced: stack(&|t| &t.skew.as_ref().expect("every head has a skew").sliced),
    });
    let value_buckets = heads[0].value_buckets.as_ref().map(|_| stack(&|t| t.value_buckets.as_ref().expect("every head has buckets")));
    Trace {
        config: *cfg,
        distances: relpos::distances(n, n),
        rel_index: relpos::row_matrix(n, n, cfg.layout()),
        rel_k: sc.rel_k.clone(),
        rel_v: sc.rel_v.clone(),
        x: sc.x.clone(),
        q,
        k,
        v,
        content_logits: stack(&|t| &t.content_logits),
        relative_logits: stack(&|t| &t.relative_logits),
        logits: stack(&|t| &t.logits),
        weights: stack(&|t| &t.weights),
        value_buckets,
        skew,
        out_content: stack(&|t| &t.out_content),
        out_relative: stack(&|t| &t.out_relative),
        heads: concat,
        output,
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::scenario::Spec;

    #[test]
    fn stage_times_are_present_and_non_negative() {
        for (method, causal) in [(Method::Shaw, false), (Method::Music, true)] {
            let cfg = Config { method, heads: 4, causal, ..Config::default() };
            let sc = Scenario::build(&cfg, &Spec { n: 96, d_model: 64, batch: 2, seed: 1 }, Default::default(), false).unwrap();
            let (t, times) = trace_timed(&cfg, &sc).unwrap();
            let (out, forward_times) = forward_timed(&cfg, &sc).unwrap();
            assert_eq!(t.output, trace(&cfg, &sc).unwrap().output);
            assert_eq!(out, forward(&cfg, &sc).unwrap());
            for st in [times, forward_times] {
                let named = st.named();
                assert_eq!(named.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]);
                for (name, ms) in named {
                    assert!(ms.is_finite() && ms >= 0.0, "{method:?} {name}: {ms}");
                }
                assert!(st.logits() > 0.0 && st.softmax + st.values > 0.0, "{method:?}: the head stages took no time: {st:?}");
            }
        }
    }
}
