//! The whole layer: projections, heads, concatenation, output projection.
//!
//! ```text
//! Q = x W_q + b_q,  K = x W_k + b_k                            (b, n, h·d_head); h·d_head = d_model unless given
//! V = x W_v + b_v                                               (b, n, h·d_v); d_v = d_head unless given
//! Q ← RMSNorm(Q) ⊙ γ_q, K ← RMSNorm(K) ⊙ γ_k                  when the layer has q/k norms (per head or whole)
//! head h reads columns h·d_head .. (h+1)·d_head of Q and K, h·d_v .. (h+1)·d_v of V and table h (or the shared one)
//! output = concat_h(z_h) W_o + b_o                              (b, n, d_out); d_out = d_model unless given
//! ```

use crate::attention::{attend_head_timed, Config, HeadInput, HeadTrace, Implementation};

use crate::attention::fused;
use crate::core::finite::check_overflow;
use crate::core::matmul::matmul_add_rows_parallel;
use crate::error::{Bytes, Error, Result};
use crate::layer::scenario::{repeat_kv, Scenario, Widths};
use crate::layer::trace::{stack_heads, Computed, SkewTrace, Trace};
use crate::positions::rope::RopeTable;
use crate::positions::{absolute, Method};
use crate::timing::{now_ms, StageTimes};
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3, Axis, CowArray, Ix3};
use std::ops::Range;

/// Memory budget of one request unless the caller sets another.
pub const DEFAULT_MEMORY_LIMIT: u64 = 8 << 30;

/// The sizes a request's memory depends on, besides its [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub batch: usize,
    pub n: usize,
    pub d_model: usize,
    /// One table per head (h, R, d_head) instead of one shared (1, R, d_head).
    pub per_head_tables: bool,
    /// Every intermediate kept ([`trace`]) or the output only ([`forward`]).
    pub trace: bool,
    /// Heads computed at once (rayon's threads natively, 1 in wasm).
    pub parallel: usize,
    /// The widths a file's arrays give ([`check_config`]); `None`: a generated layer's, [`Widths::of_model`].
    pub widths: Option<Widths>,
}

/// Σ over `terms` of the product of each term's factors, or `None` when a product or the sum overflows.
fn sum_of_products(terms: &[&[u64]]) -> Option<u64> {
    terms.iter().try_fold(0u64, |sum, t| sum.checked_add(t.iter().try_fold(1u64, |p, &f| p.checked_mul(f))?))
}

/// Bytes a request needs at its peak, or `None` when that overflows u64 (then it fits no budget). Counted
/// in f32s (i64 arrays as two), with b, n, d = d_model, h heads, d_h the heads' query/key width and d_v their
/// value width (d / h unless the arrays say otherwise, [`Widths`]), q = h·d_h, v = h·d_v, o = the output's width
/// (d unless w_o says otherwise), w = max(q, v, o), R table rows (2k+1, or k+1 for causal Music), t = 1 or h
/// tables, L' = the skew's width (n causal, 2n − 1 bidirectional; 0 for Shaw), P = heads at once (d_h below
/// stands for max(d_h, d_v) where a head holds either):
///
/// ```text
/// inputs      b·n·d (x) + 2·d·q + d·v + v·o (W_q, W_k, W_v, W_o) + 2·q + v + o (biases)
///             + (1 + a^V)·t·R·d_h (tables) + b·n (key mask)
///             + Transformer-XL t·R·d_h + R·d (its tables made a head at a time from R (R, d) and stacked; t = h)
/// layer       b·n·(2·q + 3·v + o + w) (Q, K, V, the heads' z, heads, output, a projection's temporary)
/// per head    traced: 4·n² + 2·n·R + 4·n·d_h (logits, Q·tableᵀ, buckets, outputs) + wasm 2·R·d_h (packed
///             tables) + Music 6·n·(L'+1) + (L'+1)·d_h + materialized n²·d_h                      × P
///             forward (efficient, fused): fused::working_floats(n, d_h, R; Transformer-XL, BERT relative 0) + wasm
///             2·R·d_h (packed Q, K, V, the output, Q·tableᵀ, a logits tile and a block's accumulators) + DeBERTa
///             2·n·R + 4·n (its K·Q_rᵀ, as much again measured, each distance's row) + BERT relative
///             BQ·(BQ + 2·n) (a query block's query-term and key-term products)
///             + Transformer-XL BQ·(BQ + n) + 3·n + 2·n·d_h (a query block's BD product, u·k, EF's
///             two columns, Q + s and Q + v)                                                         × P
///             traced Transformer-XL 7·n² + n·R (BD_rel (n, 2n) and its copy, BD, EF, their sum; (Q + v) rᵀ)
/// trace       2·b·h·(4·n² + n·R + 2·n·d_h + Music 3·n·(L'+1) + n² + Transformer-XL 4·n²)
///             (per-head traces and their stacked copy)
///             + 4·n² (i64 distances, rows) + t·R·d_h·(1 + a^V) + b·n·(d + o) (the trace's copies of x and the output)
/// ```
///
/// plus an eighth of that for the allocator (page rounding, one arena per thread), the margin measured
/// against peak RSS in crates/relattn-cli/tests/cli.rs `memory_estimate_covers_the_measured_peak`.
pub fn estimate_bytes(cfg: &Config, s: &Sizes) -> Option<u64> {
    let u = |v: usize| v as u64;
    let Counts { b, n, d, dh, r, t, tables, music, w, q, v, o, .. } = Counts::of(cfg, s)?;
    let materialized = u((cfg.implementation == Implementation::Materialized) as usize);
    // The wasm kernel packs B whole (src/core/matmul.rs); matrixmultiply packs in fixed-size blocks.
    let packing = if cfg!(target_arch = "wasm32") { 2 } else { 0 };
    let fused = !s.trace && cfg.implementation == Implementation::Efficient;
    let head = if fused {
        // DeBERTa's p2c products K·Q_rᵀ (n, R) beside P, its row of each distance (about 4·n), and one (n, R) more:
        // its peak RSS grew by 2.4·n·R a head over Shaw's at n 1024–4096 (tests/cli.rs measures it).
        let deberta = u(cfg.method.disentangles() as usize);
        // BERT's products are a query block's: (BQ, BQ + n) and (n, BQ), no (n, R) (fused::banded).
        let bert = u((cfg.method == Method::BertRelative) as usize);
        let xl = u(cfg.method.shifts() as usize);
        let bq = fused::BQ as u64;
        // Transformer-XL's fused forward holds no Q·Tᵀ (n, R): its rows of r are read a query block at a time.
        let r_product = if cfg.method.shifts() || bert == 1 { 0 } else { r };
        sum_of_products(&[
            &[fused::working_floats(n, dh, r_product)?],
            &[packing, r, dh],
            &[deberta, 2, n, r],
            &[deberta, 4, n],
            &[xl, bq, bq.checked_add(n)?],
            &[bert, bq, bq.checked_add(n.checked_mul(2)?)?],
            &[xl, 3, n],
            &[xl, 2, n, dh],
        ])?
    } else {
        let xl = u(cfg.method.shifts() as usize);
        sum_of_products(&[
            &[4, n, n],
            &[2, n, r],
            &[packing, r, dh],
            &[4, n, dh],
            &[6, music, n, w],
            &[music, w, dh],
            &[materialized, n, n, dh],
            &[xl, 7, n, n],
            &[xl, n, r],
        ])?
    };
    let widest = q.max(v).max(o);
    let layer = sum_of_products(&[&[2, q], &[3, v], &[1, o], &[1, widest]])?;
    let weights = sum_of_products(&[&[2, d, q], &[d, v], &[v, o], &[2, q], &[v], &[o]])?;
    // Transformer-XL's tables are made per head and stacked (a second copy), each from the sinusoids R (R, d_model).
    let xl = u(cfg.method.shifts() as usize);
    let fixed = sum_of_products(&[&[b, n, d], &[b, n, layer], &[weights], &[tables, t, r, dh], &[xl, t, r, dh], &[xl, r, d], &[b, n]])?;
    let stored = if s.trace { trace_floats(cfg, s)? } else { 0 };
    let bytes = sum_of_products(&[&[4, fixed], &[4, u(s.parallel.max(1)), head], &[4, stored]])?;
    bytes.checked_add(bytes / 8)
}

/// Bytes a trace keeps beyond the layer's work (the "trace" line of [`estimate_bytes`], with its eighth for
/// the allocator), or `None` when that overflows u64.
pub fn trace_bytes(cfg: &Config, s: &Sizes) -> Option<u64> {
    let bytes = trace_floats(cfg, s)?.checked_mul(4)?;
    bytes.checked_add(bytes / 8)
}

/// The sizes [`estimate_bytes`]'s formula names, as u64: b, n, d, h, d_h (max(d_h, d_v)), R, t, the tables
/// (1 + a^V), whether the skew is kept (Music), the skew's width L' + 1, q, v and o; `None` when R overflows.
struct Counts {
    b: u64,
    n: u64,
    d: u64,
    h: u64,
    dh: u64,
    r: u64,
    t: u64,
    tables: u64,
    music: u64,
    w: u64,
    q: u64,
    v: u64,
    o: u64,
}

impl Counts {
    fn of(cfg: &Config, s: &Sizes) -> Option<Counts> {
        let u = |v: usize| v as u64;
        let (b, n, d, h) = (u(s.batch), u(s.n), u(s.d_model), u(cfg.heads.max(1)));
        let r = cfg.scheme().table_rows_u64()?;
        // The skew's padded and reshaped rows: one column more than Q·E_rᵀ.
        let (music, w) = if cfg.scheme().skews() { (1, cfg.scheme().skew_columns(n)? + 1) } else { (0, 0) };
        // Transformer-XL's tables are each head's whatever per_head_tables says (W_R's columns and the biases).
        let t = if s.per_head_tables || cfg.method.shifts() { h } else { 1 };
        let widths = s.widths.unwrap_or(Widths::of_model(s.d_model, cfg.heads));
        let (dh, dv, o) = (u(widths.d_head), u(widths.d_v), u(widths.d_out));
        let tables = if cfg.has_rel_v() { 2 } else { 1 };
        Some(Counts { b, n, d, h, dh: dh.max(dv), r, t, tables, music, w, q: h.checked_mul(dh)?, v: h.checked_mul(dv)?, o })
    }
}

/// The f32s of [`estimate_bytes`]'s "trace" line.
fn trace_floats(cfg: &Config, s: &Sizes) -> Option<u64> {
    let Counts { b, n, d, h, dh, r, t, tables, music, w, o, .. } = Counts::of(cfg, s)?;
    let xl = (cfg.method.shifts() as u64) * 4;
    let per_head = sum_of_products(&[&[4, n, n], &[1, n, r], &[2, n, dh], &[3, music, n, w], &[music, n, n], &[xl, n, n]])?;
    sum_of_products(&[&[2, b, h, per_head], &[4, n, n], &[tables, t, r, dh], &[b, n, d], &[b, n, o]])
}

/// Refuses a request whose estimate plus `extra` bytes (what the caller adds for those sizes, such as a figure
/// or a stage; `None`: past u64) exceeds `limit`, naming the size that, reduced alone, fits best (the least
/// reduction relative to its value: n, batch, d_model or clip, with the largest value that fits). Returns the
/// estimate.
pub fn check_budget(cfg: &Config, s: &Sizes, extra: impl Fn(&Config, &Sizes) -> Option<u64>, limit: u64) -> Result<u64> {
    let total = |cfg: &Config, s: &Sizes| estimate_bytes(cfg, s).and_then(|e| e.checked_add(extra(cfg, s)?));
    let estimate = total(cfg, s);
    if let Some(e) = estimate.filter(|&e| e <= limit) {
        return Ok(e);
    }
    // The largest value of one size, the others fixed, that fits (sizes only grow the estimate).
    let largest = |lo: usize, hi: usize, with: &dyn Fn(usize) -> (Config, Sizes)| -> Option<usize> {
        let fits = |v: usize| {
            let (c, s) = with(v);
            total(&c, &s).is_some_and(|e| e <= limit)
        };
        if lo >= hi || !fits(lo) {
            return None;
        }
        Some(largest_fitting(lo, hi, fits))
    };
    let candidates = [
        ("n", s.n, largest(1, s.n, &|v| (*cfg, Sizes { n: v, ..*s }))),
        ("batch_size", s.batch, largest(1, s.batch, &|v| (*cfg, Sizes { batch: v, ..*s }))),
        ("d_model", s.d_model, largest(cfg.heads.max(1), s.d_model, &|v| (*cfg, Sizes { d_model: v, ..*s }))),
        ("clip", cfg.clip, largest(0, cfg.clip, &|v| (Config { clip: v, ..*cfg }, *s))),
    ];
    let best = candidates.iter().filter_map(|&(f, given, fit)| fit.map(|fit| (f, fit, given as f64 / fit.max(1) as f64))).min_by(|a, b| a.2.total_cmp(&b.2));
    let what = format!(
        "{} with n = {}, batch_size = {}, d_model = {}, heads = {}, clip = {}",
        if s.trace { "the trace" } else { "the forward pass" },
        s.n,
        s.batch,
        s.d_model,
        cfg.heads,
        cfg.clip
    );
    Err(Error::TooLarge { what, estimate: estimate.map(Bytes), limit: Bytes(limit), field: best.map_or("n", |b| b.0).into(), fits: best.map(|b| b.1 as u64) })
}

/// The largest v in lo..hi with `fits(v)`, by bisection, for a `fits` that holds up to some value and not
/// beyond (sizes only grow an estimate) and is false at `hi`; `lo` when nothing above it fits (`fits(lo)`
/// itself is not asked: `lo` may be a floor the caller reports as "nothing fits").
pub fn largest_fitting(mut lo: usize, mut hi: usize, fits: impl Fn(usize) -> bool) -> usize {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// `x W + b` for every batch: (b, n, d_model).
pub fn project(x: &ArrayView3<f32>, w: &Array2<f32>, bias: &ndarray::Array1<f32>) -> Array3<f32> {
    let (b, n, _) = x.dim();
    // Every row starts as the bias, and the product is added to it in place (no temporary, no extra pass).
    let mut out = Array3::from_shape_fn((b, n, w.ncols()), |(_, _, j)| bias[j]);
    for (xb, ob) in x.outer_iter().zip(out.outer_iter_mut()) {
        matmul_add_rows_parallel(xb, w.view(), ob);
    }
    out
}

/// `x W + b` for a w whose `heads` column blocks repeat `kv_heads` K/V heads' (each `heads / kv_heads` times in
/// a row): projected with one block of each, the result's columns repeated — the same numbers at 1/times the work.
fn project_grouped(x: &ArrayView3<f32>, w: &Array2<f32>, bias: &ndarray::Array1<f32>, heads: usize, kv_heads: usize) -> Array3<f32> {
    if kv_heads == heads || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return project(x, w, bias);
    }
    let (dh, times) = (w.ncols() / heads, heads / kv_heads);
    let first: Vec<usize> = (0..kv_heads).flat_map(|g| g * times * dh..g * times * dh + dh).collect();
    let narrow = project(x, &w.select(Axis(1), &first), &bias.select(Axis(0), &first));
    let (b, n, _) = x.dim();
    let rows = narrow.into_shape_with_order((b * n, kv_heads * dh)).expect("a projection is in standard layout");
    repeat_kv(rows, dh, times).into_shape_with_order((b, n, heads * dh)).expect("b·n rows")
}

/// The table of head `h`: per-head tables have one per head, a shared one has a single slice.
pub fn table_of(t: &Array3<f32>, h: usize) -> ArrayView2<'_, f32> {
    t.index_axis(Axis(0), if t.len_of(Axis(0)) == 1 { 0 } else { h })
}

/// `f(0..count)` in order: on rayon's threads natively, on the one thread in wasm.
pub(crate) fn map_heads<R: Send>(count: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
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

/// `a ← a / √(mean(a²) + ε) ⊙ γ` over each run of γ's length in a row (Hugging Face's RMSNorm, in f32):
/// each head's d_head components, or a row's whole width.
fn rms_norm(a: &mut Array3<f32>, gamma: &ndarray::Array1<f32>, eps: f32) {
    let g = gamma.as_slice().expect("a fresh vector");
    for group in a.as_slice_mut().expect("a fresh projection").chunks_exact_mut(g.len()) {
        let inv = 1.0 / (group.iter().map(|v| v * v).sum::<f32>() / g.len() as f32 + eps).sqrt();
        group.iter_mut().zip(g).for_each(|(v, g)| *v = *v * inv * g);
    }
}

/// Q and K of a layer, (b, n, h·d_head) each, and V, (b, n, h·d_v).
pub struct Projections {
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
}

/// `x W_q + b_q`, `x W_k + b_k`, `x W_v + b_v`, Q and K then normed when the layer has q/k norms; an overflow
/// names "q", "k" or "v". With grouped K/V heads, K and V are projected once per K/V head and their columns
/// repeated for the query heads it serves.
pub fn projections(cfg: &Config, sc: &Scenario) -> Result<Projections> {
    let x = input(cfg, sc);
    let x = x.view();
    let mut q = project(&x, &sc.w_q, &sc.b_q);
    let mut k = project_grouped(&x, &sc.w_k, &sc.b_k, cfg.heads, sc.kv_heads);
    if let Some(g) = &sc.q_norm {
        rms_norm(&mut q, g, cfg.norm_eps);
    }
    if let Some(g) = &sc.k_norm {
        rms_norm(&mut k, g, cfg.norm_eps);
    }
    let v = project_grouped(&x, &sc.w_v, &sc.b_v, cfg.heads, sc.kv_heads);
    for (name, a) in [("q", &q), ("k", &k), ("v", &v)] {
        check_overflow(name, a)?;
    }
    Ok(Projections { q, k, v })
}

/// Heads `heads`' columns of Q, K and V (b, n, ·) in arrays of the whole width, the other columns left 0 (a head
/// reads its own alone: [`head_input`]): one head's stages, or a pool's share of the heads, at |heads| / h of
/// [`projections`]' work, each element the same product (one sum over d_model in the same order, whichever columns
/// are computed with it). A layer with q/k norms gets the whole projections (a norm may span a row's width). Errors
/// name "heads" (an empty range, or one past h), and "q", "k" or "v" on overflow.
pub fn project_heads(cfg: &Config, sc: &Scenario, heads: Range<usize>) -> Result<Projections> {
    let h = cfg.heads;
    let (b, n, _) = sc.dims();
    if heads.is_empty() || heads.end > h {
        return Err(Error::invalid("heads", format!("{}..{}", heads.start, heads.end), format!("a non-empty range within 0..{h}")));
    }
    if sc.q_norm.is_some() || sc.k_norm.is_some() {
        return projections(cfg, sc);
    }
    let (dh, dv) = (sc.d_head, sc.d_v);
    let (qk, vz) = (heads.start * dh..heads.end * dh, heads.start * dv..heads.end * dv);
    let x = input(cfg, sc);
    let project_cols = |w: &Array2<f32>, bias: &ndarray::Array1<f32>, cols: &Range<usize>, name: &str| -> Result<Array3<f32>> {
        let part = project(&x.view(), &w.slice(s![.., cols.clone()]).to_owned(), &bias.slice(s![cols.clone()]).to_owned());
        check_overflow(name, &part)?;
        let mut whole = Array3::zeros((b, n, w.ncols()));
        whole.slice_mut(s![.., .., cols.clone()]).assign(&part);
        Ok(whole)
    };
    Ok(Projections { q: project_cols(&sc.w_q, &sc.b_q, &qk, "q")?, k: project_cols(&sc.w_k, &sc.b_k, &qk, "k")?, v: project_cols(&sc.w_v, &sc.b_v, &vz, "v")? })
}

/// What the projections read: x, or x + PE for absolute positions (each batch element's rows at 0 .. n; PE the
/// given table or the sinusoids), or x as given when it holds them already (`positions_in_x`).
pub fn input<'a>(cfg: &Config, sc: &'a Scenario) -> CowArray<'a, f32, Ix3> {
    if !cfg.method.adds_to_input() || cfg.positions_in_x {
        return sc.x.view().into();
    }
    let mut x = sc.x.clone();
    match &sc.positions {
        Some(pe) => x.outer_iter_mut().for_each(|mut b| b += pe),
        None => x.outer_iter_mut().for_each(absolute::add_sinusoids),
    }
    x.into()
}

/// Head `head` of batch element `batch` of a projected layer: its columns of Q, K, V (as projected, before any
/// rotation), its tables, its key mask and the layer's RoPE table (made once for every head).
pub fn head_input<'a>(sc: &'a Scenario, p: &'a Projections, rope: Option<&'a RopeTable>, batch: usize, head: usize) -> HeadInput<'a> {
    let (dh, dv) = (sc.d_head, sc.d_v);
    let cols = s![.., head * dh..(head + 1) * dh];
    HeadInput {
        q: p.q.index_axis(Axis(0), batch).slice_move(cols),
        k: p.k.index_axis(Axis(0), batch).slice_move(cols),
        v: p.v.index_axis(Axis(0), batch).slice_move(s![.., head * dv..(head + 1) * dv]),
        rel_k: table_of(&sc.rel_k, head),
        rel_v: sc.rel_v.as_ref().map(|t| table_of(t, head)),
        key_mask: sc.key_mask.as_ref().map(|m| m.row(batch)),
        rope,
        sink: sc.sinks.as_ref().map(|s| s[head]),
        segments: sc.segments.as_ref().map(|s| s.row(batch)),
    }
}

/// What [`run`] computed: the output, and the trace (with `record`) or else the projections.
struct Run {
    output: Array3<f32>,
    trace: Option<Trace>,
    projections: Option<Projections>,
    times: Option<StageTimes>,
}

/// Runs the layer; with `record`, keeps every intermediate; with `timed`, measures each stage.
fn run(cfg: &Config, sc: &Scenario, record: bool, timed: bool) -> Result<Run> {
    let (b, n, _) = sc.dims();
    let (h, dv) = (cfg.heads, sc.d_v);
    let t0 = timed.then(now_ms);
    let projected = projections(cfg, sc)?;
    let mut times = t0.map(|t0| StageTimes { projections: now_ms() - t0, ..StageTimes::default() });
    // RoPE's cos and sin, once for every head.
    let rope = sc.rope_table(cfg);
    let results = map_heads(b * h, |idx| {
        let (bi, hi) = (idx / h, idx % h);
        let input = head_input(sc, &projected, rope.as_ref(), bi, hi);
        crate::core::cancel::check()?;
        let mut t = record.then(HeadTrace::default);
        let mut ht = timed.then(StageTimes::default);
        attend_head_timed(cfg, &input, t.as_mut(), ht.as_mut()).map(|z| (z, t, ht)).map_err(|e| e.within(&[bi, hi]))
    });
    let mut heads = Array3::zeros((b, n, h * dv));
    let mut traces: Vec<HeadTrace> = Vec::new();
    for (idx, r) in results.into_iter().enumerate() {
        let (z, t, ht) = r?;
        if let (Some(sum), Some(ht)) = (times.as_mut(), ht) {
            sum.add(&ht);
        }
        let (bi, hi) = (idx / h, idx % h);
        heads.slice_mut(s![bi, .., hi * dv..(hi + 1) * dv]).assign(&z);
        traces.extend(t);
    }
    check_overflow("heads", &heads)?;
    let t_out = timed.then(now_ms);
    let output = project(&heads.view(), &sc.w_o, &sc.b_o);
    check_overflow("output", &output)?;
    if let (Some(sum), Some(t)) = (times.as_mut(), t_out) {
        sum.output = now_ms() - t;
    }
    let (trace, projections) = if record { (Some(assemble(cfg, sc, traces, projected, heads, output.clone())), None) } else { (None, Some(projected)) };
    Ok(Run { output, trace, projections, times })
}

/// The layer's output (b, n, d_out), keeping only one head's (n, n) work arrays at a time.
pub fn forward(cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
    Ok(run(cfg, sc, false, false)?.output)
}

/// The output and every intermediate.
pub fn trace(cfg: &Config, sc: &Scenario) -> Result<Trace> {
    Ok(run(cfg, sc, true, false)?.trace.expect("recorded"))
}

/// [`forward`] and the milliseconds of each stage (head stages summed over heads and batch: CPU time,
/// the heads run in parallel natively).
pub fn forward_timed(cfg: &Config, sc: &Scenario) -> Result<(Array3<f32>, StageTimes)> {
    let r = run(cfg, sc, false, true)?;
    Ok((r.output, r.times.expect("timed")))
}

/// [`forward`] (fused, untimed: timing the stages would run them one by one, each a whole (n, n) array),
/// keeping the projections it computed (a [`crate::layer::on_demand::Layer`] computes stages from them).
pub fn forward_projected(cfg: &Config, sc: &Scenario) -> Result<(Projections, Array3<f32>)> {
    let r = run(cfg, sc, false, false)?;
    Ok((r.projections.expect("not recorded"), r.output))
}

/// [`trace`] and the milliseconds of each stage, as in [`forward_timed`].
pub fn trace_timed(cfg: &Config, sc: &Scenario) -> Result<(Trace, StageTimes)> {
    let r = run(cfg, sc, true, true)?;
    Ok((r.trace.expect("recorded"), r.times.expect("timed")))
}

/// Stacks per-head traces (batch-major, then head) into (b, h, ·, ·) arrays and assembles the trace.
#[allow(clippy::too_many_arguments)]
fn assemble(cfg: &Config, sc: &Scenario, traces: Vec<HeadTrace>, Projections { q, k, v }: Projections, heads: Array3<f32>, output: Array3<f32>) -> Trace {
    let h = cfg.heads;
    let stack = |f: fn(&HeadTrace) -> &Array2<f32>| stack_heads(&traces, h, f);
    let skew = traces[0].skew.is_some().then(|| SkewTrace::stack(&traces, h, |t| t.skew.as_ref().expect("every head has a skew")));
    let value_buckets = traces[0].value_buckets.is_some().then(|| stack_heads(&traces, h, |t| t.value_buckets.as_ref().expect("every head has buckets")));
    let rotated = traces[0].rotated.is_some().then(|| {
        let part = |k: usize| stack_heads(&traces, h, |t| t.rotated.as_ref().map(|r| if k == 0 { &r.0 } else { &r.1 }).expect("every head is rotated"));
        (part(0), part(1))
    });
    let term = |of: fn(&HeadTrace) -> Option<&Array2<f32>>| of(&traces[0]).is_some().then(|| stack_heads(&traces, h, |t| of(t).expect("every head has it")));
    let (c2p, p2c) = (term(|t| t.c2p.as_ref()), term(|t| t.p2c.as_ref()));
    let (bd_relative, bd, ef) = (term(|t| t.bd_relative.as_ref()), term(|t| t.bd.as_ref()), term(|t| t.ef.as_ref()));
    let computed = Computed {
        q,
        k,
        v,
        content_logits: stack(|t| &t.content_logits),
        relative_logits: stack(|t| &t.relative_logits),
        logits: stack(|t| &t.logits),
        weights: stack(|t| &t.weights),
        value_buckets,
        skew,
        c2p,
        p2c,
        bd_relative,
        bd,
        ef,
        out_content: stack(|t| &t.out_content),
        out_relative: stack(|t| &t.out_relative),
        rotated,
        heads,
        output,
    };
    Trace::assemble(cfg, sc, computed)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::layer::scenario::Spec;
    use crate::positions::Method;

    /// Grouped K/V heads projected once each equal the projection of their repeated columns.
    #[test]
    fn grouped_projections_equal_the_repeated_ones() {
        let cfg = Config { method: Method::Rope, heads: 6, causal: true, rel_v: false, ..Config::default() };
        let mut given = crate::layer::scenario::Arrays::new();
        let (d, dh) = (24, 4);
        given.insert("w_k".into(), ndarray::Array2::from_shape_fn((d, 2 * dh), |(r, c)| ((r * 7 + c * 3) % 11) as f32 / 11.0 - 0.5).into_dyn());
        given.insert("b_v".into(), ndarray::Array1::from_shape_fn(2 * dh, |c| c as f32 * 0.1).into_dyn());
        let sc = Scenario::build(&cfg, &Spec { n: 40, d_model: d, batch: 2, seed: 1 }, given, false).unwrap();
        assert_eq!(sc.kv_heads, 2);
        let grouped = projections(&cfg, &sc).unwrap();
        let whole = projections(&cfg, &Scenario { kv_heads: cfg.heads, ..sc.clone() }).unwrap();
        for (g, w) in [(&grouped.k, &whole.k), (&grouped.v, &whole.v)] {
            assert!(g.iter().zip(w.iter()).all(|(a, b)| (a - b).abs() <= 1e-6 * b.abs().max(1.0)));
        }
        assert_eq!(grouped.q, whole.q);
    }

    #[test]
    fn stage_times_are_present_and_non_negative() {
        for (method, causal) in [(Method::Shaw, false), (Method::Music, true)] {
            let cfg = Config { method, heads: 4, causal, ..Config::default() };
            let sc = Scenario::build(&cfg, &Spec { n: 96, d_model: 64, batch: 2, seed: 1 }, Default::default(), false).unwrap();
            let (t, times) = trace_timed(&cfg, &sc).unwrap();
            let (out, forward_times) = forward_timed(&cfg, &sc).unwrap();
            assert_eq!(t.output, trace(&cfg, &sc).unwrap().output);
            // The forward runs fused (src/attention/fused/), the timed one stage by stage: equal within rounding.
            let fused = forward(&cfg, &sc).unwrap();
            let scale = out.iter().fold(1.0f32, |m, v| m.max(v.abs()));
            assert!(out.iter().zip(&fused).all(|(a, b)| (a - b).abs() <= 1e-5 * scale), "{method:?}: fused and staged outputs differ");
            for st in [times, forward_times] {
                let named = st.named();
                assert_eq!(
                    named.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
                    ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]
                );
                for (name, ms) in named {
                    assert!(ms.is_finite() && ms >= 0.0, "{method:?} {name}: {ms}");
                }
                assert!(st.logits.total() > 0.0 && st.softmax + st.values > 0.0, "{method:?}: the head stages took no time: {st:?}");
            }
        }
    }
}
