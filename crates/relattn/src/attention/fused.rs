//! One head's forward fused into tiles: no (Lq, Lk) array, O((TQ + R)·(TK + d_head)) memory per head.
//!
//! The same attention as [`crate::attention`] (Shaw's a^K and a^V; the Music Transformer's skew, which
//! is the gather of `Q E_rᵀ` by index arithmetic, masked or not). With `P = Q Tᵀ` (Lq, R) computed once,
//! each tile of TQ queries walks the keys in tiles of TK and keeps, per query i, a running maximum m_i,
//! a running sum l_i, an output accumulator o_i (d_head) and, with a^V, R bucket sums b_i (the online
//! softmax):
//!
//! ```text
//! e_ij = (q_i · k_j + P[i, row(d_ij)]) / sqrt(d_head) + b[d_ij],  −∞ where masked   (TQ, TK) tile; no q·k when content is off
//! m_i' = max(m_i, max_j e_ij),   γ_i = exp(m_i − m_i')                      (γ = 0 while m_i = −∞)
//! p_ij = exp(e_ij − m_i')
//! l_i ← γ_i l_i + Σ_j p_ij
//! o_i ← γ_i o_i + Σ_j p_ij v_j                                               (TQ, TK)·(TK, d_head)
//! b_ir ← γ_i b_ir + Σ_{j: row(d_ij) = r} p_ij                                Shaw's a^V only
//! z_i = (o_i + b_i w^V) / l_i                                                zeros when every key is masked
//! ```
//!
//! b is ALiBi's or T5's bias by distance (zero for the other schemes; RoPE's Q and K arrive rotated, and
//! they have no table, so P has no columns). With the causal mask a query tile stops at its last visible key, so half the tiles are never computed.
//! The tiles' products go through [`matmul`] (matrixmultiply natively, the SIMD128 kernel in wasm).

use crate::attention::{Config, HeadInput};

use crate::core::finite::any_non_finite;
use crate::core::matmul::{matmul, matmul_add};
use crate::core::softmax::{exp_nonpositive, reduce, softmax_weight};
use crate::error::{Error, Result};
use crate::positions::table::{visible_keys, Edge, RelTable};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayViewMut1, ArrayViewMut2};
use std::ops::Range;

/// Queries per tile: each tile reads the head's K and V once, so larger tiles pack them fewer times.
pub const TQ: usize = 256;
/// Keys per tile: a (TQ, TK) tile of logits is 512 KiB, held in L2 (1 MiB a core here) with its K and V
/// tiles. Measured on the 2-core EPYC VM (2 threads, n 2048 and 8192): 256 × 512 and 512 × 256 are the
/// fastest, 5% ahead of 128 × 256; 64…256 × 128…512 are all within 10%.
pub const TK: usize = 512;

/// z (Lq, d_head) of one head, equal to [`crate::attention::attend_head`]'s within float rounding.
/// The caller has checked the shapes. Errors: [`Error::Overflow`] on "content_logits" (a non-finite q·k)
/// or "logits" (NaN or +∞ after the relative term and the scale), at the pair's (i, j); [`Error::Interrupted`]
/// between query tiles when a stop was requested ([`crate::core::cancel`]).
pub fn attend_head(cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    let (lq, dh) = h.q.dim();
    let lk = h.k.nrows();
    let scale = cfg.logit_scale.factor(dh);
    // This head's Q, K and V as contiguous (L, d_head) copies (they arrive as column slices of the layer's
    // (n, d_model) projections): the tiles' products pack them again and again, reading rows of d_head
    // floats instead of d_model-strided ones (4–5% faster at n 2048 and 8192).
    let (q, k, v) = (h.q.as_standard_layout(), h.k.as_standard_layout(), h.v.as_standard_layout());
    let p = if cfg.method.has_vector_table() { matmul(q.view(), h.rel_k.t()) } else { Array2::zeros((lq, 0)) };
    let bias = cfg.scheme().distance_bias(h.rel_k, lq, lk);
    let rel_v = h.rel_v.filter(|_| cfg.has_rel_v());
    let mut z = Array2::zeros((lq, dh));
    // One logits buffer for every tile of this head (a fresh 512 KiB array per tile cost 7% in the
    // kernel's page clearing).
    let mut buffer = Array2::zeros((TQ.min(lq), TK.min(lk)));
    for i0 in (0..lq).step_by(TQ) {
        crate::core::cancel::check()?;
        let i1 = (i0 + TQ).min(lq);
        // Keys up to the last one visible to the tile's last query.
        let keys = if cfg.causal { visible_keys(i1 - 1, lq, lk) } else { lk };
        let mut tile = Tile::new(i1 - i0, dh, rel_v.map(|t| t.nrows()));
        for j0 in (0..keys).step_by(TK) {
            let j1 = (j0 + TK).min(keys);
            let mut e = buffer.slice_mut(s![..i1 - i0, ..j1 - j0]);
            e.fill(0.0);
            if cfg.content {
                matmul_add(q.slice(s![i0..i1, ..]), k.slice(s![j0..j1, ..]).t(), e.view_mut());
            }
            softmax_tile(&Pass { cfg, h, p: &p, bias: bias.as_ref(), scale, i0, keys: j0..j1 }, &mut tile, &mut e)?;
            matmul_add(e.view(), v.slice(s![j0..j1, ..]), tile.out.view_mut());
        }
        z.slice_mut(s![i0..i1, ..]).assign(&tile.finish(rel_v));
    }
    Ok(z)
}

/// What one (query tile, key tile) step reads besides the tile's state.
struct Pass<'a, 'h> {
    cfg: &'a Config,
    h: &'a HeadInput<'h>,
    /// P = Q Tᵀ (Lq, R), standard layout.
    p: &'a Array2<f32>,
    /// The bias by distance, element j − i + Lq − 1 ([`crate::positions::Scheme::distance_bias`]).
    bias: Option<&'a Array1<f32>>,
    scale: f32,
    /// The tile's first query.
    i0: usize,
    keys: Range<usize>,
}

/// Turns the content logits `e` (TQ, TK) of one key tile into weights p in place and folds them into
/// the tile's running state: relative term, scale, overflow check, masks, then [`Tile::absorb`] and the
/// buckets, row by row. Natively on x86-64 the loops are compiled twice and the AVX2 copy runs where the
/// CPU has it (8 lanes instead of SSE2's 4); wasm has SIMD128 throughout.
fn softmax_tile(pass: &Pass, tile: &mut Tile, e: &mut ArrayViewMut2<f32>) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { softmax_tile_avx2(pass, tile, e) };
    }
    softmax_tile_portable(pass, tile, e)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_tile_avx2(pass: &Pass, tile: &mut Tile, e: &mut ArrayViewMut2<f32>) -> Result<()> {
    softmax_tile_portable(pass, tile, e)
}

#[inline(always)]
fn softmax_tile_portable(pass: &Pass, tile: &mut Tile, e: &mut ArrayViewMut2<f32>) -> Result<()> {
    let Pass { cfg, h, p, bias, scale, i0, .. } = *pass;
    let (j0, j1) = (pass.keys.start, pass.keys.end);
    let (lq, lk) = (h.q.nrows(), h.k.nrows());
    let layout = cfg.layout();
    let r = p.ncols();
    let p = p.as_slice().expect("a fresh product is contiguous");
    for (t, mut e_i) in e.outer_iter_mut().enumerate() {
        let i = i0 + t;
        let e_i = e_i.as_slice_mut().expect("a tile's rows are contiguous");
        let p_i = &p[i * r..(i + 1) * r];
        if r > 0 {
            for_each_run(layout, i, lq, lk, j0..j1, |run, rows| rows.add_logits(&mut e_i[run.start - j0..run.end - j0], p_i));
        }
        e_i.iter_mut().for_each(|e| *e *= scale);
        if let Some(b) = bias {
            // Keys j0..j1 of query i read b[j − i + Lq − 1]: one contiguous run.
            let first = j0 + lq - 1 - i;
            e_i.iter_mut().zip(&b.as_slice().expect("a fresh bias is contiguous")[first..first + (j1 - j0)]).for_each(|(e, b)| *e += b);
        }
        // Before any −∞ mask: every value must be finite here.
        if any_non_finite(e_i) {
            return Err(overflow(cfg, h, i, j0 + e_i.iter().position(|v| !v.is_finite()).expect("a non-finite logit"), p_i, bias));
        }
        let end = if cfg.causal { visible_keys(i, lq, lk).clamp(j0, j1) } else { j1 };
        e_i[end - j0..].fill(f32::NEG_INFINITY);
        if let Some(m) = h.key_mask {
            e_i.iter_mut().zip(m.slice(s![j0..j1])).for_each(|(e, &keep)| *e = if keep { *e } else { f32::NEG_INFINITY });
        }
        tile.absorb(t, e_i);
        if let Some(b) = tile.buckets.as_mut() {
            for_each_run(layout, i, lq, lk, j0..j1, |run, rows| rows.add_weights(b.row_mut(t), &e_i[run.start - j0..run.end - j0]));
        }
    }
    Ok(())
}

/// The overflow at (i, j): in q_i · k_j itself ("content_logits", as the staged path reports it), or
/// after the relative term, the scale and the bias ("logits").
fn overflow(cfg: &Config, h: &HeadInput, i: usize, j: usize, p_i: &[f32], bias: Option<&Array1<f32>>) -> Error {
    let content = if cfg.content { h.q.row(i).dot(&h.k.row(j)) } else { 0.0 };
    let (lq, lk) = (h.q.nrows(), h.k.nrows());
    let row = cfg.layout().row(crate::positions::table::distance(i, j, lq, lk));
    let b = bias.map_or(0.0, |b| b[j + lq - 1 - i]);
    let logit = (content + row.map_or(0.0, |r| p_i[r])) * cfg.logit_scale.factor(h.q.ncols()) + b;
    let (array, value) = if content.is_finite() { ("logits", logit) } else { ("content_logits", content) };
    Error::Overflow { array: array.into(), index: vec![i, j], value: value as f64 }
}

/// The running state of a tile of queries: maxima, sums, outputs and a^V buckets.
struct Tile {
    max: Array1<f32>,
    sum: Array1<f32>,
    /// (TQ, d_head)
    out: Array2<f32>,
    /// (TQ, R), with a^V.
    buckets: Option<Array2<f32>>,
}

impl Tile {
    fn new(rows: usize, dh: usize, table_rows: Option<usize>) -> Self {
        Tile {
            max: Array1::from_elem(rows, f32::NEG_INFINITY),
            sum: Array1::zeros(rows),
            out: Array2::zeros((rows, dh)),
            buckets: table_rows.map(|r| Array2::zeros((rows, r))),
        }
    }

    /// Takes query t's logits of one key tile: rescales its state to the new maximum, turns `e` into
    /// p = exp(e − m') in place and adds them to the sum. The caller adds p to the buckets and p·V to
    /// `out` for the whole tile.
    #[inline(always)]
    fn absorb(&mut self, t: usize, e: &mut [f32]) {
        let new_max = reduce(e, self.max[t], |m, v| if v > m { v } else { m });
        if new_max == f32::NEG_INFINITY {
            // Every key so far masked: p = 0 and nothing to rescale.
            e.fill(0.0);
            return;
        }
        let gamma = exp_nonpositive(self.max[t] - new_max);
        self.max[t] = new_max;
        e.iter_mut().for_each(|v| *v = softmax_weight(*v - new_max));
        self.sum[t] = gamma * self.sum[t] + reduce(e, 0.0, |a, v| a + v);
        self.out.row_mut(t).mapv_inplace(|o| o * gamma);
        if let Some(b) = self.buckets.as_mut() {
            b.row_mut(t).mapv_inplace(|v| v * gamma);
        }
    }

    /// z = (o + B w^V) / l per query, zeros where every key was masked.
    fn finish(mut self, rel_v: Option<ndarray::ArrayView2<f32>>) -> Array2<f32> {
        if let (Some(b), Some(w_v)) = (&self.buckets, rel_v) {
            self.out += &matmul(b.view(), w_v);
        }
        for (mut o, &l) in self.out.outer_iter_mut().zip(&self.sum) {
            let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
            o.mapv_inplace(|v| v * inv);
        }
        self.out
    }
}

/// Which table rows a run of consecutive keys reads.
#[derive(Clone, Copy)]
enum Rows {
    /// Every key reads this row (a clipped edge).
    Same(usize),
    /// The keys read consecutive rows from this one (the diagonal band).
    From(usize),
}

impl Rows {
    /// `e += P[i, row]` for each key's logit e; `p_i` is P's row i.
    #[inline(always)]
    fn add_logits(self, e: &mut [f32], p_i: &[f32]) {
        match self {
            Rows::Same(r) => e.iter_mut().for_each(|e| *e += p_i[r]),
            Rows::From(r) => {
                let n = e.len();
                e.iter_mut().zip(&p_i[r..r + n]).for_each(|(e, p)| *e += p)
            }
        }
    }

    /// `b[row] += p` for each key's weight p.
    #[inline(always)]
    fn add_weights(self, mut b: ArrayViewMut1<f32>, p: &[f32]) {
        match self {
            Rows::Same(r) => b[r] += reduce(p, 0.0, |a, v| a + v),
            Rows::From(r) => b.slice_mut(s![r..r + p.len()]).zip_mut_with(&ArrayView1::from(p), |b, p| *b += p),
        }
    }
}

/// Calls `f(run, rows)` for each run of the keys in `keys` that query i reads the table with: the clipped
/// left edge, the diagonal band, the clipped right edge (a zero edge reads nothing). See
/// [`RelTable::segments`].
#[inline(always)]
fn for_each_run(layout: RelTable, i: usize, lq: usize, lk: usize, keys: Range<usize>, mut f: impl FnMut(Range<usize>, Rows)) {
    let seg = layout.segments(i, lq, lk);
    let within = |r: &Range<usize>| r.start.max(keys.start)..r.end.min(keys.end);
    let last = layout.rows() - 1;
    let band = within(&seg.mid);
    let runs = [
        (within(&seg.left), (layout.edge == Edge::Clip).then_some(Rows::Same(0))),
        (band.clone(), Some(Rows::From(seg.mid_row + band.start.saturating_sub(seg.mid.start)))),
        (within(&seg.right), (layout.edge == Edge::Clip).then_some(Rows::Same(last))),
    ];
    for (run, rows) in runs {
        if let (false, Some(rows)) = (run.is_empty(), rows) {
            f(run, rows);
        }
    }
}
