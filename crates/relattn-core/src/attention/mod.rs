//! Relative-position multi-head self-attention, one head at a time ([`fused`]: the same forward with no (Lq, Lk) array). For queries Q (Lq, d_head), keys
//! K (Lk, d_head), values V (Lk, d_v) and a relative table T (R, d_head), Shaw's w^K or the Music Transformer's E_r (`B w^V` is Shaw's a^V; Music has none):
//!
//! ```text
//! content_logits  C = Q Kᵀ                                   (Lq, Lk)
//! relative_logits S = q_i · T[row(j − i)]                    (Lq, Lk)   gather or skew: positions::shaw, positions::music
//! logits          E = (C + S) / sqrt(d_head), −inf where masked (causal, outside the window, padding)
//!                 ALiBi, T5: E = C / sqrt(d_head) + b(j − i), S = b the bias by distance (added after the scale)
//!                 RoPE: Q and K rotated by position first (q'_i = R_i q_i), no S
//!                 DeBERTa: S = c2p + p2c, c2p_ij = q_i · K_r[r(i − j)], p2c_ij = k_j · Q_r[r(i − j)], scaled by
//!                 1/√(3·d_head) (positions::deberta; fused and on the GPU: Q K_rᵀ and K Q_rᵀ read by row)
//!                 BERT relative_key(_query): S = q_i · A[i − j + P − 1] (+ k_j · A[i − j + P − 1]), 1/√d_head
//!                 (positions::bert_relative; fused: a query block's rows of A, O(n·d); the GPU refuses it)
//!                 Transformer-XL: C = (Q + u) Kᵀ (AC), S = BD + EF, BD_ij = (q_i + v) · r[i − j] moved into place by
//!                 rel_shift, EF_ij = (q_i + s) · seg[same segment or not], 1/√d_head (positions::transformer_xl; fused:
//!                 (Q + v) rᵀ a query block at a time; the GPU refuses it)
//!                 soft-capped (Gemma 2): E ← c·tanh(E / c) before the masks; another scale than 1/√d_head: logit_scale
//! weights         α = softmax_j(E), a row with every key masked gives zeros; with a sink logit s (gpt-oss),
//!                 α_ij = exp(E_ij) / (Σ_j exp(E_ij) + exp(s)): the sink takes 1 − Σ_j α_ij and adds no value
//! output          z = α V  +  B w^V,  B[i, r] = Σ_{j: row(j−i) = r} α_ij     (Lq, d_v); d_v = d_head unless V says otherwise
//! ```

pub mod fused;

use crate::core::finite::check_overflow;
use crate::core::matmul::matmul;
use crate::core::simd::Isa;
use crate::core::softmax::softmax_rows_with_sink;
use crate::error::{Error, Result};
use crate::positions::bert_relative::{self, BertRelative};
use crate::positions::deberta::{self, Deberta};
use crate::positions::music::SkewSteps;
use crate::positions::rope::{Rope, RopeTable};
use crate::positions::shaw;
use crate::positions::t5::Buckets;
use crate::positions::table::{Edge, QueryRows, Reach, RelTable};
use crate::positions::transformer_xl::{self, TransformerXl};
use crate::positions::{self, Method, Scheme};
use crate::timing::{now_ms, LogitTimes, StageTimes};
use ndarray::{s, Array2, ArrayView1, ArrayView2};
use std::ops::Range;
use std::str::FromStr;

/// How the relative terms are computed; both give the same numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum Implementation {
    /// Gather of the small `Q Tᵀ` product (Shaw) or the skew (Music); weights summed into buckets.
    Efficient,
    /// The seeds' way: an (Lq, Lk, d_head) tensor of table rows per head. Reference and teaching only.
    Materialized,
}

/// What the logits (the content term plus Shaw's or the Music Transformer's relative term) are multiplied by
/// before ALiBi's or T5's bias is added and the softmax taken.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "protocol.d.ts"))]
pub enum LogitScale {
    /// 1/√d_head (Vaswani et al. 2017, and every scheme's paper).
    #[default]
    InvSqrtDHead,
    /// 1: T5's logits, whose 1/√d_head is folded into the initialisation of W_q.
    None,
    /// A model's own factor: Gemma 2's and 3's query_pre_attn_scalar^(−1/2), which need not be 1/√d_head.
    Factor(f32),
}

impl LogitScale {
    /// The factor for heads of width `d_head`.
    pub fn factor(self, d_head: usize) -> f32 {
        match self {
            LogitScale::InvSqrtDHead => 1.0 / (d_head as f32).sqrt(),
            LogitScale::None => 1.0,
            LogitScale::Factor(f) => f,
        }
    }
}

/// The schemes the GPU computes, for a refusal of the others (the CPU's fused forward computes every scheme).
pub const FUSED_METHODS: &str = "shaw, music, rope, alibi, t5, absolute or deberta (other schemes are computed on the CPU: --backend cpu)";

/// Whether the GPU backend has kernels for the scheme's terms: the schemes of [`FUSED_METHODS`]. It refuses
/// the others naming "method" (the page computes them on the CPU); a new scheme joins with its kernels.
pub fn gpu_computes(method: Method) -> bool {
    match method {
        Method::Absolute | Method::Shaw | Method::Music | Method::Rope | Method::Alibi | Method::T5 | Method::Deberta => true,
        Method::BertRelative => false,
        Method::TransformerXl => false,
    }
}

/// What `logit_scale` may be, for its refusals.
const LOGIT_SCALES: &str = "inv_sqrt_d_head, none, or a factor above 0 and at most 1e4";

impl LogitScale {
    /// The scale, checked: a factor must be finite, above 0 and at most 1e4.
    pub fn checked(self) -> Result<Self> {
        match self {
            LogitScale::Factor(f) if !(f > 0.0 && f <= 1e4) => Err(Error::invalid("logit_scale", f, LOGIT_SCALES)),
            l => Ok(l),
        }
    }
}

impl FromStr for LogitScale {
    type Err = Error;
    /// The command line's spelling: `inv_sqrt_d_head`, `none` or a number (a factor).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "inv_sqrt_d_head" => Ok(LogitScale::InvSqrtDHead),
            "none" => Ok(LogitScale::None),
            _ => s.parse::<f32>().map_err(|_| Error::invalid("logit_scale", format!("'{s}'"), LOGIT_SCALES)).and_then(|f| LogitScale::Factor(f).checked()),
        }
    }
}

/// Everything about the computation that is not a tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub method: Method,
    pub heads: usize,
    /// k: Shaw's tables cover distances −k..=k; the Music Transformer's E_r covers −k..=0 (causal) or −k..=k.
    pub clip: usize,
    /// Mask keys after the query (j − i > 0).
    pub causal: bool,
    /// Add Shaw's value term a^V (ignored by the Music Transformer, which has none).
    pub rel_v: bool,
    /// What a distance beyond the Music Transformer's table reads (Shaw always clips).
    pub edge: Edge,
    pub implementation: Implementation,
    /// Add the content term q_i · k_j to the logits. Off, the logits are the relative term alone (the
    /// content logits are zeros): what relative positions do by themselves, for teaching.
    pub content: bool,
    /// The logits' scale: 1/√d_head, 1 (T5) or a model's own factor.
    pub logit_scale: LogitScale,
    /// Keys at |j − i| ≥ window masked: a sliding window (with `causal`, the query and the window − 1 keys
    /// before it); `None`: no window.
    pub window: Option<usize>,
    /// Keys outside the query's chunk of this many positions masked (Llama 4's chunked attention: query i sees
    /// the keys j with ⌊j / c⌋ = ⌊i / c⌋, and with `causal` only those before it); `None`: no chunks.
    pub chunk: Option<usize>,
    /// Logit soft-capping (Gemma 2): E ← c·tanh(E / c) after the scale and any bias; `None`: no cap.
    pub softcap: Option<f32>,
    /// ε of the RMS norms of Q and K, when the layer has them ([`crate::layer::scenario::Scenario::q_norm`]).
    pub norm_eps: f32,
    /// RoPE's options (method rope).
    pub rope: Rope,
    /// T5's buckets (method t5).
    pub buckets: Buckets,
    /// DeBERTa's buckets, span and terms (method deberta).
    pub deberta: Deberta,
    /// BERT's max_position and terms (method bert_relative).
    pub bert: BertRelative,
    /// Transformer-XL's segments (method transformer_xl; its clamp is `clip`).
    pub xl: TransformerXl,
    /// Absolute positions already in x (a captured model's layer): shown, not added again.
    pub positions_in_x: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            method: Method::Shaw,
            heads: 1,
            clip: 2,
            causal: false,
            rel_v: true,
            edge: Edge::Zero,
            implementation: Implementation::Efficient,
            content: true,
            logit_scale: LogitScale::InvSqrtDHead,
            window: None,
            chunk: None,
            softcap: None,
            norm_eps: 1e-6,
            rope: Rope::default(),
            buckets: Buckets::default(),
            deberta: Deberta::default(),
            bert: BertRelative::default(),
            xl: TransformerXl::default(),
            positions_in_x: false,
        }
    }
}

impl Config {
    /// The position scheme and its options.
    pub fn scheme(&self) -> Scheme {
        Scheme {
            method: self.method,
            clip: self.clip,
            causal: self.causal,
            edge: self.edge,
            rope: self.rope,
            buckets: self.buckets,
            deberta: self.deberta,
            bert: self.bert,
            xl: self.xl,
        }
    }

    /// The factor the logits are multiplied by for heads of width `d_head`: [`LogitScale::factor`], whose usual
    /// 1/√d_head is 1/√(d_head · (1 + terms)) for DeBERTa ([`Scheme::scale_width`]).
    pub fn logit_factor(&self, d_head: usize) -> f32 {
        match self.logit_scale {
            LogitScale::InvSqrtDHead => LogitScale::InvSqrtDHead.factor(self.scheme().scale_width(d_head)),
            scale => scale.factor(d_head),
        }
    }

    /// Rows of the relative table ([`Scheme::table_rows`]): 2k+1 for Shaw and bidirectional Music, k+1 for
    /// causal Music, 1 (the slope) for ALiBi, the buckets for T5, 0 for RoPE.
    pub fn table_rows(&self) -> usize {
        self.scheme().table_rows()
    }

    /// The distances the vector table's rows cover and what lies beyond them ([`Scheme::layout`]).
    pub fn layout(&self) -> RelTable {
        self.scheme().layout()
    }

    /// Which keys each query may attend to: the causal mask, the window and the chunks.
    pub fn reach(&self) -> Reach {
        Reach { causal: self.causal, window: self.window, chunk: self.chunk }
    }

    /// Whether the output has Shaw's value term.
    pub fn has_rel_v(&self) -> bool {
        self.rel_v && self.method.has_value_term()
    }
}

/// One head's tensors.
#[derive(Clone, Copy)]
pub struct HeadInput<'a> {
    /// (Lq, d_head)
    pub q: ArrayView2<'a, f32>,
    /// (Lk, d_head)
    pub k: ArrayView2<'a, f32>,
    /// (Lk, d_v): a value width of its own where the model has one (DeepSeek's MLA), else d_head.
    pub v: ArrayView2<'a, f32>,
    /// (R, d_head): w^K or E_r, R = `Config::table_rows`; (1, 1) ALiBi's slope; (B, 1) T5's bias per
    /// bucket; (0, d_head) for RoPE.
    pub rel_k: ArrayView2<'a, f32>,
    /// (R, d_v): w^V, used when `Config::has_rel_v`.
    pub rel_v: Option<ArrayView2<'a, f32>>,
    /// (Lk): false where a key is padding.
    pub key_mask: Option<ArrayView1<'a, bool>>,
    /// RoPE's cos and sin for the positions of the queries and keys, made once for every head of a layer;
    /// `None`: made for this head.
    pub rope: Option<&'a RopeTable>,
    /// The head's learned sink logit (gpt-oss): a column of the softmax with no key and no value.
    pub sink: Option<f32>,
    /// (Lk): the keys' segment ids, query i's that of key i + Lk − Lq (Transformer-XL with segments: XLNet's
    /// token_type_ids); read only by a layer with segments.
    pub segments: Option<ArrayView1<'a, u32>>,
}

/// Every intermediate of one head, for display.
#[derive(Clone, Debug, Default)]
pub struct HeadTrace {
    pub content_logits: Array2<f32>,
    pub relative_logits: Array2<f32>,
    /// Scaled and masked, −inf where masked.
    pub logits: Array2<f32>,
    pub weights: Array2<f32>,
    /// B (Lq, R): the weight each query gives each row of w^V (Shaw with a^V only).
    pub value_buckets: Option<Array2<f32>>,
    /// The skew's stages (Music Transformer, efficient implementation).
    pub skew: Option<SkewSteps>,
    /// α V, (Lq, d_v).
    pub out_content: Array2<f32>,
    /// B w^V, (Lq, d_v); zeros without a^V.
    pub out_relative: Array2<f32>,
    /// RoPE's rotated Q (the rows traced) and K (every key), (·, d_head).
    pub rotated: Option<(Array2<f32>, Array2<f32>)>,
    /// DeBERTa's terms (Lq, Lk), unscaled, when the layer has them: their sum is `relative_logits`.
    pub c2p: Option<Array2<f32>>,
    pub p2c: Option<Array2<f32>>,
    /// Transformer-XL's BD before rel_shift (Lq, W), after it (Lq, Lk) and EF (Lq, Lk) with segments, unscaled:
    /// BD + EF is `relative_logits` (zero above the diagonal when causal).
    pub bd_relative: Option<Array2<f32>>,
    pub bd: Option<Array2<f32>>,
    pub ef: Option<Array2<f32>>,
}

fn check_head(cfg: &Config, h: &HeadInput) -> Result<()> {
    let (dh, dv) = (h.q.ncols(), h.v.ncols());
    let lk = h.k.nrows();
    let want = |name: &str, a: &ArrayView2<f32>, rows: usize, cols: usize| {
        if a.dim() != (rows, cols) {
            Err(Error::shape(name, a.shape(), format!("[{rows}, {cols}]")))
        } else {
            Ok(())
        }
    };
    want("k", &h.k, lk, dh)?;
    if h.v.nrows() != lk || dv == 0 {
        return Err(Error::shape("v", h.v.shape(), format!("[{lk}, d_v], d_v ≥ 1")));
    }
    let width = cfg.scheme().table_width(dh);
    if h.rel_k.dim() != (cfg.table_rows(), width) {
        return Err(Error::shape("rel_k", h.rel_k.shape(), format!("[{}, {width}]", cfg.table_rows())));
    }
    if let Some(t) = &h.rel_v {
        want("rel_v", t, cfg.table_rows(), dv)?;
    }
    if cfg.has_rel_v() && h.rel_v.is_none() {
        return Err(Error::invalid("rel_v", "absent", "a (2k+1, d_v) table when a^V is on"));
    }
    cfg.scheme().check_length(h.q.nrows().max(lk))?;
    if cfg.method.shifts() && cfg.xl.segments > 0 {
        match h.segments {
            Some(ids) if ids.len() == lk && h.q.nrows() <= lk => {}
            Some(ids) => return Err(Error::shape("segments", ids.shape(), format!("[{lk}], with no more queries than keys"))),
            None => return Err(Error::invalid("segments", "absent", "the keys' segment ids when the layer has segments")),
        }
    }
    if let Some(m) = h.key_mask {
        if m.len() != lk {
            return Err(Error::shape("key_mask", m.shape(), format!("[{lk}]")));
        }
    }
    Ok(())
}

/// Attends one head; returns z (Lq, d_v) and fills `trace` with every stage when given.
pub fn attend_head(cfg: &Config, h: &HeadInput, trace: Option<&mut HeadTrace>) -> Result<Array2<f32>> {
    attend_head_timed(cfg, h, trace, None)
}

/// [`attend_head`], adding the milliseconds of each of its stages (keeping that stage's intermediate for
/// `trace` included) into `times` when given; projections and output are the layer's, left as they are.
/// With neither, the efficient implementation runs fused ([`crate::attention::fused`]: no (Lq, Lk) array);
/// otherwise stage by stage, each stage a whole (Lq, Lk) array.
pub fn attend_head_timed(cfg: &Config, h: &HeadInput, trace: Option<&mut HeadTrace>, times: Option<&mut StageTimes>) -> Result<Array2<f32>> {
    if trace.is_none() && times.is_none() && cfg.implementation == Implementation::Efficient {
        return attend_head_fused(Isa::best(), cfg, h);
    }
    check_head(cfg, h)?;
    let rotated = rotate(cfg, h);
    let h = &with_rotated(h, rotated.as_ref());
    let all = 0..h.q.nrows();
    keep_rotated(trace, rotated.as_ref(), all.clone(), |trace| staged(cfg, h, all, trace, times))
}

/// One head's forward fused ([`fused`]: no (Lq, Lk) array) with the kernels of `isa`; [`attend_head`]
/// without a trace runs it on the CPU's best ([`Isa::best`]), tests and benchmarks on each. Panics when the
/// CPU lacks `isa` ([`Isa::available`]). Every scheme, DeBERTa's terms included.
pub fn attend_head_fused(isa: Isa, cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    check_head(cfg, h)?;
    let rotated = rotate(cfg, h);
    fused::attend_head(isa, cfg, &with_rotated(h, rotated.as_ref()))
}

/// `h` with RoPE's rotated Q and K in place of its own.
fn with_rotated<'a, 'b: 'a>(h: &HeadInput<'b>, rotated: Option<&'a (Array2<f32>, Array2<f32>)>) -> HeadInput<'a> {
    let (q, k) = match rotated {
        Some((q, k)) => (q.view(), k.view()),
        None => (h.q.reborrow(), h.k.reborrow()),
    };
    HeadInput {
        q,
        k,
        v: h.v.reborrow(),
        rel_k: h.rel_k.reborrow(),
        rel_v: h.rel_v.map(|t| t.reborrow()),
        key_mask: h.key_mask.map(|m| m.reborrow()),
        rope: h.rope,
        sink: h.sink,
        segments: h.segments.map(|m| m.reborrow()),
    }
}

/// RoPE's Q and K rotated by their positions (query i at i + Lk − Lq, key j at j), with the head's table when
/// it covers them, else one made here; `None` for other schemes.
fn rotate(cfg: &Config, h: &HeadInput) -> Option<(Array2<f32>, Array2<f32>)> {
    if !cfg.method.rotates() {
        return None;
    }
    let (lq, lk, dh) = (h.q.nrows(), h.k.nrows(), h.q.ncols());
    let first = lk as isize - lq as isize;
    let made;
    let table = match h.rope {
        Some(t) if t.rope == cfg.rope && t.covers(first.min(0), lk.max(lq), dh) => t,
        _ => {
            made = rope_table(cfg, lq, lk, dh);
            &made
        }
    };
    Some((table.rotate(h.q, first), table.rotate(h.k, 0)))
}

/// The RoPE table for Lq queries aligned to the last of Lk keys: positions min(Lk − Lq, 0) .. Lk.
pub fn rope_table(cfg: &Config, lq: usize, lk: usize, d_head: usize) -> RopeTable {
    let first = (lk as isize - lq as isize).min(0);
    cfg.rope.table(first, (lk as isize - first) as usize, d_head)
}

/// Runs `f` with `trace`, then keeps the rotated Q (rows `rows`) and K in it.
fn keep_rotated<T>(
    mut trace: Option<&mut HeadTrace>,
    rotated: Option<&(Array2<f32>, Array2<f32>)>,
    rows: Range<usize>,
    f: impl FnOnce(Option<&mut HeadTrace>) -> T,
) -> T {
    let out = f(trace.as_deref_mut());
    if let (Some(t), Some((q, k))) = (trace, rotated) {
        t.rotated = Some((q.slice(s![rows, ..]).to_owned(), k.clone()));
    }
    out
}

/// Rows `rows` of one head stage by stage: z (rows, d_v), and those rows of every stage in `trace` (each
/// (rows, ·); the skew's reshaped buffer has the rows `rows.start..=rows.end`, see [`music::skew_rows`]).
/// Each query row's stages depend on that row of Q and on every key, so a head's trace can be computed a
/// block of rows at a time, in O(rows · Lk) memory (the page's traces of long sequences). Errors as
/// [`attend_head`]'s; a row range beyond the queries names "rows".
pub fn attend_rows(cfg: &Config, h: &HeadInput, rows: Range<usize>, trace: &mut HeadTrace) -> Result<Array2<f32>> {
    let rotated = rotated_for_rows(cfg, h, &rows)?;
    let h = &with_rotated(h, rotated.as_ref());
    keep_rotated(Some(trace), rotated.as_ref(), rows.clone(), |trace| staged(cfg, h, rows, trace, None))
}

/// What [`attend_rows`] and [`relative_rows`] begin with: the head checked ([`check_head`]), `rows` a non-empty
/// range of its queries (else an error naming "rows"), then RoPE's Q and K rotated when the scheme rotates.
fn rotated_for_rows(cfg: &Config, h: &HeadInput, rows: &Range<usize>) -> Result<Option<(Array2<f32>, Array2<f32>)>> {
    check_head(cfg, h)?;
    let lq = h.q.nrows();
    if rows.start >= rows.end || rows.end > lq {
        return Err(Error::invalid("rows", format!("{}..{}", rows.start, rows.end), format!("a non-empty range within 0..{lq}")));
    }
    Ok(rotate(cfg, h))
}

/// The relative logits (rows, Lk) of the query rows `rows` alone, the values [`attend_rows`] traces as its
/// `relative_logits` (the same computation), without the rest of the head: what the colour range of a bias
/// stage over every head reads (its first and last rows). Errors as [`attend_rows`]'s.
pub(crate) fn relative_rows(cfg: &Config, h: &HeadInput, rows: Range<usize>) -> Result<Array2<f32>> {
    let rotated = rotated_for_rows(cfg, h, &rows)?;
    if !cfg.method.has_relative_term() {
        return Err(Error::invalid("rows", format!("{}..{}", rows.start, rows.end), "rows of a scheme with a relative term"));
    }
    let h = &with_rotated(h, rotated.as_ref());
    Ok(relative_logits(cfg, h, rows, Some(&mut HeadTrace::default())))
}

/// [`attend_rows`] for the query rows `queries`, `block` rows at a time: `f(rows, trace)` gets each block's trace
/// in order, RoPE's Q and K rotated once for them all (a rotation of every key a block took a third of a head's
/// stages at n 8192 in blocks of 32 rows) and the rotated K kept from block to block, not copied. A cancel request
/// ([`crate::core::cancel`]) stops it between blocks. Errors as [`attend_rows`]'s.
pub fn attend_blocks(
    cfg: &Config,
    h: &HeadInput,
    queries: Range<usize>,
    block: usize,
    mut f: impl FnMut(Range<usize>, &HeadTrace) -> Result<()>,
) -> Result<()> {
    check_head(cfg, h)?;
    let end = queries.end.min(h.q.nrows());
    let rotated = rotate(cfg, h);
    let h = &with_rotated(h, rotated.as_ref());
    let block = block.max(1);
    let mut trace = HeadTrace::default();
    for a in (queries.start..end).step_by(block) {
        crate::core::cancel::check()?;
        let rows = a..(a + block).min(end);
        let kept = trace.rotated.take().map(|(_, k)| k);
        trace = HeadTrace::default();
        staged(cfg, h, rows.clone(), Some(&mut trace), None)?;
        if let Some((q, k)) = &rotated {
            trace.rotated = Some((q.slice(s![rows.clone(), ..]).to_owned(), kept.unwrap_or_else(|| k.clone())));
        }
        f(rows, &trace)?;
    }
    Ok(())
}

/// The staged path ([`attend_head_timed`] and [`attend_rows`]) for the query rows `rows`.
fn staged(cfg: &Config, h: &HeadInput, rows: Range<usize>, mut trace: Option<&mut HeadTrace>, times: Option<&mut StageTimes>) -> Result<Array2<f32>> {
    let (lq, dh) = (h.q.nrows(), h.q.ncols());
    let block = QueryRows { first: rows.start, lq };
    let q = h.q.slice(s![rows.clone(), ..]);
    let layout = cfg.layout();
    // Milliseconds since the previous lap (0 when not timed).
    let mut clock = times.is_some().then(now_ms);
    let mut lap = || {
        clock.as_mut().map_or(0.0, |c| {
            let now = now_ms();
            let ms = now - *c;
            *c = now;
            ms
        })
    };

    let mut logits = match (cfg.content, cfg.method.shifts()) {
        (false, _) => Array2::zeros((rows.len(), h.k.nrows())),
        // Transformer-XL's AC = (q_i + u) · k_j.
        (true, true) => matmul(transformer_xl::biased(q, transformer_xl::split(h.rel_k).u).view(), h.k.t()),
        (true, false) => matmul(q, h.k.t()),
    };
    check_overflow("content_logits", &logits)?;
    if let Some(t) = trace.as_deref_mut() {
        t.content_logits = logits.clone();
    }
    let content_ms = lap();

    let method = cfg.method;
    // The relative term, added here, or after the scale when it is ALiBi's or T5's bias.
    let mut rel = None;
    if trace.is_none() && method == Method::Shaw && cfg.implementation == Implementation::Efficient {
        // Forward only: add the gathered relative logits straight into the content logits.
        shaw::add_relative_logits(logits.view_mut(), q, h.rel_k, layout, block);
    } else if method.has_relative_term() {
        let r = relative_logits(cfg, h, rows.clone(), trace.as_deref_mut());
        if !method.adds_distance_bias() {
            logits += &r;
        }
        rel = Some(r);
    }
    let relative_ms = lap();

    let bias = rel.as_ref().filter(|_| method.adds_distance_bias());
    scale_and_mask(&mut logits, cfg, dh, bias, h.key_mask, block)?;
    if let (Some(t), Some(r)) = (trace.as_deref_mut(), rel) {
        t.relative_logits = r;
    }
    if let Some(t) = trace.as_deref_mut() {
        t.logits = logits.clone();
    }
    let scale_mask_ms = lap();

    softmax_rows_with_sink(&mut logits, h.sink);
    let weights = logits;
    let softmax_ms = lap();
    let out_content = matmul(weights.view(), h.v);
    let (buckets, out_relative) = match (cfg.has_rel_v(), h.rel_v, cfg.implementation) {
        (true, Some(w_v), Implementation::Efficient) => {
            let b = shaw::value_buckets(weights.view(), layout, block);
            let r = shaw::relative_values(b.view(), w_v);
            (Some(b), r)
        }
        (true, Some(w_v), Implementation::Materialized) => (None, shaw::relative_values_materialized(weights.view(), w_v, layout, block)),
        _ => (None, Array2::zeros((rows.len(), h.v.ncols()))),
    };
    let z = &out_content + &out_relative;
    if let Some(t) = trace {
        t.weights = weights;
        t.value_buckets = buckets;
        t.out_content = out_content;
        t.out_relative = out_relative;
    }
    let values_ms = lap();
    if let Some(t) = times {
        let logits = LogitTimes::Parts { content_logits: content_ms, relative_logits: relative_ms, scale_mask: scale_mask_ms };
        t.add(&StageTimes { logits, softmax: softmax_ms, values: values_ms, ..StageTimes::default() });
    }
    Ok(z)
}

/// The relative logits (rows, Lk) of the query rows `rows` on their own, by the scheme
/// ([`positions::relative_logits`]), recording the skew's steps in `trace`.
fn relative_logits(cfg: &Config, h: &HeadInput, rows: Range<usize>, trace: Option<&mut HeadTrace>) -> Array2<f32> {
    let materialized = cfg.implementation == Implementation::Materialized;
    if cfg.method.disentangles() {
        // DeBERTa's terms read K as well as Q: c2p + p2c, each kept in the trace.
        let block = QueryRows { first: rows.start, lq: h.q.nrows() };
        let q = h.q.slice(s![rows.clone(), ..]);
        let (c2p, p2c) = deberta::relative_terms(&cfg.deberta, q, h.k, h.rel_k, block, materialized);
        let mut sum = Array2::zeros((rows.len(), h.k.nrows()));
        for term in [&c2p, &p2c].into_iter().flatten() {
            sum += term;
        }
        if let Some(t) = trace {
            (t.c2p, t.p2c) = (c2p, p2c);
        }
        return sum;
    }
    if cfg.method == Method::BertRelative {
        // BERT's terms: the query term (Shaw's gather, the table read backwards) and the key term, each kept in the trace.
        let block = QueryRows { first: rows.start, lq: h.q.nrows() };
        let q = h.q.slice(s![rows.clone(), ..]);
        let (query, key) = bert_relative::relative_terms(&cfg.bert, q, h.k, h.rel_k, block, materialized);
        let sum = key.as_ref().map_or_else(|| query.clone(), |key| &query + key);
        if let Some(t) = trace {
            (t.c2p, t.p2c) = (Some(query), key);
        }
        return sum;
    }
    if cfg.method.shifts() {
        // Transformer-XL's BD (before and after rel_shift) and EF, each kept in the trace; BD + EF, zero above the
        // diagonal when causal (the leftovers rel_shift leaves there are masked).
        let (lq, lk) = (h.q.nrows(), h.k.nrows());
        let segments = h.segments.filter(|_| cfg.xl.segments > 0);
        let terms = transformer_xl::terms(h.rel_k, h.q, lk, rows.clone(), segments, cfg.clip, cfg.causal, materialized);
        let mut sum = terms.bd.clone();
        if let Some(ef) = &terms.ef {
            sum += ef;
        }
        if cfg.causal {
            for (t, mut row) in sum.rows_mut().into_iter().enumerate() {
                let first_masked = (rows.start + t + lk + 1).saturating_sub(lq).min(lk);
                row.slice_mut(s![first_masked..]).fill(0.0);
            }
        }
        if let Some(t) = trace {
            (t.bd_relative, t.bd, t.ef) = (Some(terms.bd_relative), Some(terms.bd), terms.ef);
        }
        return sum;
    }
    let skew = trace.map(|t| &mut t.skew);
    positions::relative_logits(&cfg.scheme(), materialized, h.q, h.rel_k, h.k.nrows(), rows, skew)
}

/// `e ← e · scale + bias` (ALiBi's or T5's, when given), soft-capped `e ← c·tanh(e / c)` with `softcap`, then
/// −∞ for keys out of the query's reach (causal, window) and for padding keys; `logits` and `bias` are the query
/// rows `block`'s.
///
/// A logit that is not finite where no mask puts −∞ (NaN or ±∞ from finite inputs past float32's range: ALiBi's
/// slope of 1e38 times a distance) would pass the softmax as a wrong but finite weight: it is refused as an
/// overflow in "logits" at (query, key), as the fused forward refuses it.
fn scale_and_mask(
    logits: &mut Array2<f32>,
    cfg: &Config,
    d_head: usize,
    bias: Option<&Array2<f32>>,
    key_mask: Option<ArrayView1<bool>>,
    block: QueryRows,
) -> Result<()> {
    let (lk, scale, reach) = (logits.ncols(), cfg.logit_factor(d_head), cfg.reach());
    for (i, mut row) in logits.rows_mut().into_iter().enumerate() {
        let keys = reach.keys(block.query(i), block.lq, lk);
        row.slice_mut(s![keys.clone()]).mapv_inplace(|e| e * scale);
        if let Some(b) = bias {
            row.slice_mut(s![keys.clone()]).zip_mut_with(&b.slice(s![i, keys.clone()]), |e, b| *e += b);
        }
        let kept = |j: usize| key_mask.is_none_or(|m| m[j]);
        if let Some((j, v)) = row.slice(s![keys.clone()]).iter().enumerate().find(|&(j, v)| !v.is_finite() && kept(keys.start + j)) {
            return Err(Error::Overflow { array: "logits".into(), index: vec![block.query(i), keys.start + j], value: *v as f64 });
        }
        if let Some(c) = cfg.softcap {
            row.slice_mut(s![keys.clone()]).mapv_inplace(|e| soft_cap(c, e));
        }
        row.slice_mut(s![..keys.start]).fill(f32::NEG_INFINITY);
        row.slice_mut(s![keys.end..]).fill(f32::NEG_INFINITY);
        if let Some(m) = key_mask {
            row.zip_mut_with(&m, |e, &keep| {
                if !keep {
                    *e = f32::NEG_INFINITY;
                }
            });
        }
    }
    Ok(())
}

/// A logit soft-capped at ±c (Gemma 2): `c·tanh(e / c)`, rising with e.
#[inline]
pub(crate) fn soft_cap(c: f32, e: f32) -> f32 {
    c * (e / c).tanh()
}

impl FromStr for Implementation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "efficient" => Ok(Implementation::Efficient),
            "materialized" => Ok(Implementation::Materialized),
            _ => Err(Error::invalid("implementation", format!("'{s}'"), "efficient, materialized")),
        }
    }
}

/// A head's attention by distance, from its weights α (Lq, Lk) with queries aligned to the last keys:
/// `profile[d + Lk − 1] = (1/Lq) Σ_i α[i, j]` over the pairs at distance d = j − (i + Lk − Lq), for d in
/// −(Lk − 1)..=Lq − 1: each query's softmax row as a distribution over distances, averaged over the queries
/// (it sums to 1 when no row is fully masked; causal weights put nothing at d > 0).
pub fn by_distance(weights: ArrayView2<f32>) -> Vec<f64> {
    let (lq, lk) = weights.dim();
    let mut sum = vec![0.0f64; lq + lk - 1];
    for (i, row) in weights.rows().into_iter().enumerate() {
        for (j, &a) in row.iter().enumerate() {
            sum[(positions::table::distance(i, j, lq, lk) + lk as isize - 1) as usize] += a as f64;
        }
    }
    sum.iter().map(|s| s / lq as f64).collect()
}
