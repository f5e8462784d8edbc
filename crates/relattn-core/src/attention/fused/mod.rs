//! One head's forward fused into flash attention's blocks (Dao et al. 2022): no (Lq, Lk) array, O((Lq + Lk)·d_head + Lq·R + BQ·BK) memory per head (DeBERTa: (Lq + Lk)·2S for R); the same
//! attention as [`crate::attention`] (Shaw's a^K and a^V; the Music Transformer's skew, which is the gather of `Q E_rᵀ` by index arithmetic, masked or not).
//! With `P = Q Tᵀ` (Lq, R) computed once, each block of [`BQ`] queries walks the keys in blocks of [`BK`] and keeps, per query i, a running maximum m_i, a
//! running sum l_i, an output accumulator o_i (d_head) and, with a^V, R bucket sums b_i (the online softmax; b is ALiBi's or T5's bias by distance, else zero):
//! ```text
//! e_ij = (q_i · k_j + P[i, row(d_ij)]) / sqrt(d_head) + b[d_ij],  −∞ where masked   (BQ, BK) tile; no q·k when content is off
//!        (soft-capped: c·tanh(e_ij / c); another scale than 1/√d_head: the config's)
//! m_i' = max(m_i, max_j e_ij),   γ_i = exp(m_i − m_i'),   p_ij = exp(e_ij − m_i')   (γ = 0 while m_i = −∞)
//!        (m_i = −∞, l_i = 0 at the start; with a sink logit s, m_i = s, l_i = 1: the sink's own term)
//! l_i ← γ_i l_i + Σ_j p_ij
//! o_i ← γ_i o_i + Σ_j p_ij v_j                                               (BQ, BK)·(BK, d_v)
//! b_ir ← γ_i b_ir + Σ_{j: row(d_ij) = r} p_ij                                Shaw's a^V only
//! z_i = (o_i + b_i w^V) / l_i                                                zeros when every key is masked
//! ```
//!
//! DeBERTa's disentangled terms read two products by row, each computed once per head: c2p from `P = Q K_rᵀ`
//! (Lq, 2S) and p2c from `P2 = K Q_rᵀ` (Lk, 2S), at the one row r(i, j) of each pair (a table of the rows by
//! δ = i − j, Lq + Lk − 1 of them), added to the visible keys' logits before the scale 1/√(d_head·(1 + terms)):
//! `e_ij = (q_i · k_j + P[i, r(i, j)] + P2[j, r(i, j)]) · scale`, O((Lq + Lk)·2S) memory beyond the others'.
//! BERT's relative_key(_query) terms read one table A at r(i, j) = i − j + P − 1, a block of queries at a time
//! ([`banded`]: no (Lq, 2P − 1) product, O(n·d) for any max_position), scaled by 1/√d_head.
//! Transformer-XL's u·k_j, BD and EF are read by index per pair ([`shifted`]): BD from a query block's product with
//! the rows of r it reaches, O(BQ·(BQ + Lk)), so no (Lq, 2k + 1) product is held.

mod banded;
mod kernel;
mod shifted;

use crate::attention::{soft_cap, Config, HeadInput};

use crate::core::matmul::matmul;
use crate::core::simd::{F32s, Isa, Portable};
use crate::core::softmax::{exp_nonpositive, madd, reduce, softmax_weight};
use crate::error::{Error, Result};
use crate::positions::deberta;
use crate::positions::table::{Edge, RelTable};
use kernel::Packed;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayViewMut1};
use std::ops::Range;

/// Queries per block: a multiple of every kernel's MR (4, 6). Measured against 24, 96 and 192 (2026-11-26,
/// the 2-core EPYC VM, one head of d_head 64, n 2048 and 4096, AVX-512 and AVX2): within 2% bidirectional,
/// and the fewest keys computed past the diagonal when causal (BQ²/2 a block).
pub const BQ: usize = 48;
/// Keys per block: a multiple of every kernel's NR (8, 16, 64). The (BQ, BK) logits tile (96 KiB) stays
/// in L2 between the two products; 512 ran 5–10% faster than 64 and 128 (more row-pass work per fixed cost
/// of a row and block) and 2–4% faster than 256 and 1024.
pub const BK: usize = 512;

/// z (Lq, d_v) of one head, equal to [`crate::attention::attend_head`]'s within float rounding, with the
/// kernels of `isa`. The caller has checked the shapes and rotated RoPE's Q and K. Errors:
/// [`Error::Overflow`] on "content_logits" (a non-finite q·k) or "logits" (NaN or +∞ after the relative
/// term and the scale), at the pair's (i, j); [`Error::Interrupted`] between query blocks when a stop was
/// requested ([`crate::core::cancel`]). Panics when this CPU lacks `isa` ([`Isa::available`]).
pub fn attend_head(isa: Isa, cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    assert!(isa.available(), "this CPU has no {}", isa.name());
    match isa {
        // SAFETY: the CPU has the instruction set, asserted just above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { attend_avx512(cfg, h) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { attend_avx2(cfg, h) },
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        Isa::Simd128 => attend::<crate::core::simd::Simd128, 4, 2>(cfg, h),
        _ => attend::<Portable, 4, 2>(cfg, h),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_avx512(cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    attend::<crate::core::simd::Avx512, 6, 4>(cfg, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2(cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    attend::<crate::core::simd::Avx2, 6, 2>(cfg, h)
}

/// The floats one head's fused forward holds at its peak for n queries and keys, for
/// [`crate::layer::forward::estimate_bytes`]; `None` past u64. The packed Q and K (padded by fewer than 64
/// rows), V (its columns padded to a multiple of 64, the widest NR), the output z, P = Q Tᵀ (n, R), a
/// logits tile and a block's accumulators:
///
/// ```text
/// 2·(n + 64)·d_h + n·⌈d_h⌉₆₄ + n·d_h + n·R + BQ·BK + BQ·(⌈d_h⌉₆₄ + R)
/// ```
pub fn working_floats(n: u64, dh: u64, r: u64) -> Option<u64> {
    let wide = dh.checked_next_multiple_of(64)?;
    let (bq, bk) = (BQ as u64, BK as u64);
    let terms = [
        2 * (n.checked_add(64)?).checked_mul(dh)?,
        n.checked_mul(wide)?,
        n.checked_mul(dh)?,
        n.checked_mul(r)?,
        bq * bk,
        bq.checked_mul(wide.checked_add(r)?)?,
    ];
    terms.into_iter().try_fold(0u64, |sum, t| sum.checked_add(t))
}

/// The blocked forward with `V`'s kernels of MR × NV·LANES; inlined into each instruction set's
/// `#[target_feature]` function, which compiles it (the row pass too) for that instruction set ([`Isa`]). Per
/// (query block, key block): the (BQ, BK) tile of logits by [`kernel::qk`], the row pass ([`row_pass`]: relative
/// term, scale, bias, overflow check, masks, online softmax, buckets, in two sweeps of each row), then
/// [`kernel::pv`]. A query block walks only the keys its queries reach: with the causal mask it stops at its last
/// visible key, so half the blocks are never computed; with a window it starts at its first query's first key.
#[inline(always)]
fn attend<V: F32s, const MR: usize, const NV: usize>(cfg: &Config, h: &HeadInput) -> Result<Array2<f32>> {
    let (lq, dh) = h.q.dim();
    let lk = h.k.nrows();
    let scale = cfg.logit_factor(dh);
    let packed = Packed::new(h.q, h.k, h.v, MR, NV * V::LANES);
    let p = if cfg.method.has_vector_table() { matmul(h.q, h.rel_k.t()) } else { Array2::zeros((lq, 0)) };
    let bias = cfg.scheme().distance_bias(h.rel_k, lq, lk);
    let disentangled = Disentangled::new(cfg, h);
    let shifted = shifted::Shifted::new(cfg, h);
    let banded = banded::Banded::new(cfg, h);
    let rel_v = h.rel_v.filter(|_| cfg.has_rel_v());
    let dv = h.v.ncols();
    let mut z = Array2::zeros((lq, dv));
    let mut logits = vec![0.0f32; BQ * BK];
    let mut block = Block::new(packed.dv_padded(), rel_v.map(|t| t.nrows()));
    let reach = cfg.reach();
    for i0 in (0..lq).step_by(BQ) {
        crate::core::cancel::check()?;
        let i1 = (i0 + BQ).min(lq);
        let rows = (i1 - i0).next_multiple_of(MR);
        // From the key block of the first query's first key to the last query's last key: every query's reach
        // slides right with it (the kernels read key blocks from multiples of their width; BK is one).
        let (first, keys) = (reach.keys(i0, lq, lk).start / BK * BK, reach.keys(i1 - 1, lq, lk).end);
        block.reset(h.sink);
        let xl_block = shifted.as_ref().map(|x| x.block(h.q, i0..i1));
        let xl = shifted.as_ref().zip(xl_block.as_ref());
        let bert_block = banded.as_ref().map(|b| b.block(h.q, i0..i1));
        let bert = banded.as_ref().zip(bert_block.as_ref());
        for j0 in (first..keys).step_by(BK) {
            let j1 = (j0 + BK).min(keys);
            // The keys the row block from r0 needs: up to its last query's last visible key.
            let needed = |r0: usize| reach.keys(i0 + r0 + MR - 1, lq, lk).end.clamp(j0, j1) - j0;
            if cfg.content {
                // SAFETY: the CPU runs V (the caller's target feature); rows of the packed Q from i0 and keys j0..j1 exist; the tile holds BQ ≥ rows rows of BK.
                unsafe { kernel::qk::<V, MR, NV>(&packed, i0, rows, j0, needed, logits.as_mut_ptr(), BK) };
            } else {
                logits[..rows * BK].fill(0.0);
            }
            let pass = Pass { cfg, h, p: &p, bias: bias.as_ref(), disentangled: disentangled.as_ref(), xl, bert, scale, i0, keys: j0..j1 };
            for (t, e) in logits.chunks_exact_mut(BK).take(i1 - i0).enumerate() {
                let e = &mut e[..j1 - j0];
                if V::FMA {
                    row_pass::<true>(&pass, &mut block, t, e)?;
                } else {
                    row_pass::<false>(&pass, &mut block, t, e)?;
                }
            }
            // SAFETY: as above; the tile's rows past the block's queries hold finite values (zero queries'
            // logits, or zeros), and the accumulator has BQ ≥ rows rows of dv_padded.
            unsafe { kernel::pv::<V, MR, NV>(&packed, logits.as_ptr(), BK, rows, j0, needed, block.out.as_mut_ptr()) };
        }
        z.slice_mut(s![i0..i1, ..]).assign(&block.finish(i1 - i0, dv, rel_v));
    }
    Ok(z)
}

/// What one (query block, key block) step reads besides the block's state.
struct Pass<'a, 'h> {
    cfg: &'a Config,
    h: &'a HeadInput<'h>,
    /// P = Q Tᵀ (Lq, R), standard layout; no columns for a scheme without a vector table (RoPE, whose Q and K
    /// arrive rotated; ALiBi, T5, absolute).
    p: &'a Array2<f32>,
    /// ALiBi's or T5's bias by distance, element j − i + Lq − 1 ([`crate::positions::Scheme::distance_bias`]);
    /// `None` for the other schemes.
    bias: Option<&'a Array1<f32>>,
    /// DeBERTa's products and rows; `None` for the other schemes.
    disentangled: Option<&'a Disentangled>,
    /// Transformer-XL's parts and this query block's BD products; `None` for the other schemes.
    xl: Option<(&'a shifted::Shifted<'h>, &'a shifted::ShiftedBlock)>,
    /// BERT's table and this query block's products; `None` for the other schemes.
    bert: Option<(&'a banded::Banded<'h>, &'a banded::BandedBlock)>,
    scale: f32,
    /// The block's first query.
    i0: usize,
    keys: Range<usize>,
}

/// Turns query `i0 + t`'s content logits `e` of one key block into weights p in place and folds them
/// into the block's running state: relative term, then scale, bias, overflow check and maximum in one
/// sweep of the visible keys, masks, then [`Block::absorb`] (e^x and sum) and the buckets. `FMA`: multiply-adds fused
/// ([`madd`]).
#[inline(always)]
fn row_pass<const FMA: bool>(pass: &Pass, block: &mut Block, t: usize, e: &mut [f32]) -> Result<()> {
    let Pass { cfg, h, p, bias, disentangled, xl, bert, scale, i0, .. } = *pass;
    let (j0, j1) = (pass.keys.start, pass.keys.end);
    let (lq, lk) = (h.q.nrows(), h.k.nrows());
    let layout = cfg.layout();
    let i = i0 + t;
    let r = p.ncols();
    let p_i = &p.as_slice().expect("a fresh product is contiguous")[i * r..(i + 1) * r];
    if r > 0 {
        for_each_run(layout, i, lq, lk, j0..j1, |run, rows| rows.add_logits(&mut e[run.start - j0..run.end - j0], p_i));
    }
    // Keys out of the query's reach (causal, window) are masked: only those in `start..end` are scaled, checked
    // and compared.
    let reach = cfg.reach().keys(i, lq, lk);
    let (start, end) = (reach.start.clamp(j0, j1), reach.end.clamp(j0, j1));
    if let Some(d) = disentangled {
        d.add_logits(&mut e[start - j0..end - j0], i, start..end);
    }
    if let Some((x, b)) = xl {
        x.add_logits(b, &mut e[start - j0..end - j0], i, start..end);
    }
    if let Some((x, b)) = bert {
        x.add_logits(b, &mut e[start - j0..end - j0], i, start..end);
    }
    let (before, rest) = e.split_at_mut(start - j0);
    let (visible, after) = rest.split_at_mut(end - start);
    let (finite, mut max) = match bias {
        // Keys start..end of query i read b[j − i + Lq − 1]: one contiguous run.
        Some(b) => {
            let first = start + lq - 1 - i;
            scale_add_max::<FMA>(visible, scale, &b.as_slice().expect("a fresh bias is contiguous")[first..first + visible.len()])
        }
        None => scale_max(visible, scale),
    };
    // Before any −∞ mask: every visible value must be finite here.
    if !finite {
        let j = start + visible.iter().position(|v| !v.is_finite()).expect("a non-finite logit");
        return Err(overflow(cfg, h, i, j, p_i, bias, disentangled, xl, bert));
    }
    if let (Some(c), false) = (cfg.softcap, visible.is_empty()) {
        // The cap rises with e: the capped maximum is the maximum capped.
        visible.iter_mut().for_each(|v| *v = soft_cap(c, *v));
        max = soft_cap(c, max);
    }
    // The weights to compute: the visible keys' (the others are 0), or with a key mask every key's, the masked
    // ones −∞.
    let live = match h.key_mask {
        Some(m) => {
            before.fill(f32::NEG_INFINITY);
            after.fill(f32::NEG_INFINITY);
            e.iter_mut().zip(m.slice(s![j0..j1])).for_each(|(e, &keep)| *e = if keep { *e } else { f32::NEG_INFINITY });
            max = reduce(e, f32::NEG_INFINITY, |m, v| if v > m { v } else { m });
            0..j1 - j0
        }
        None => {
            before.fill(0.0);
            after.fill(0.0);
            start - j0..end - j0
        }
    };
    block.absorb::<FMA>(t, &mut e[live], max);
    if let Some(b) = block.buckets.as_mut() {
        for_each_run(layout, i, lq, lk, j0..j1, |run, rows| rows.add_weights(b.row_mut(t), &e[run.start - j0..run.end - j0]));
    }
    Ok(())
}

/// Lanes of the row pass's sweeps, so the compiler keeps them in vector registers.
const LANES: usize = 16;

/// `e ← e · scale`; whether every result is finite (a NaN or ±∞ makes `v · 0` NaN, and the lanes' sums
/// with it), and their maximum.
#[inline(always)]
fn scale_max(e: &mut [f32], scale: f32) -> (bool, f32) {
    let (mut nan, mut max) = ([0.0f32; LANES], [f32::NEG_INFINITY; LANES]);
    let mut chunks = e.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            c[k] *= scale;
            nan[k] += c[k] * 0.0;
            max[k] = if c[k] > max[k] { c[k] } else { max[k] };
        }
    }
    let rest = chunks.into_remainder();
    rest.iter_mut().for_each(|v| *v *= scale);
    lanes_finite_max(rest, &nan, &max)
}

/// `e ← e · scale + b`; whether every result is finite, and their maximum.
#[inline(always)]
fn scale_add_max<const FMA: bool>(e: &mut [f32], scale: f32, b: &[f32]) -> (bool, f32) {
    let (mut nan, mut max) = ([0.0f32; LANES], [f32::NEG_INFINITY; LANES]);
    let mut chunks = e.chunks_exact_mut(LANES);
    let mut bias = b.chunks_exact(LANES);
    for (c, b) in (&mut chunks).zip(&mut bias) {
        // The bias copied out before any logit is written: read in place, the compiler cannot tell that the
        // writes to e miss it, and the sweep stayed scalar (9% of an ALiBi head).
        let b: [f32; LANES] = b.try_into().expect("a whole chunk");
        for k in 0..LANES {
            c[k] = madd::<FMA>(c[k], scale, b[k]);
            nan[k] += c[k] * 0.0;
            max[k] = if c[k] > max[k] { c[k] } else { max[k] };
        }
    }
    let rest = chunks.into_remainder();
    rest.iter_mut().zip(bias.remainder()).for_each(|(v, b)| *v = madd::<FMA>(*v, scale, *b));
    lanes_finite_max(rest, &nan, &max)
}

/// Folds a sweep's lanes and the values past its last whole chunk: (all finite, maximum).
#[inline(always)]
fn lanes_finite_max(rest: &[f32], nan: &[f32; LANES], max: &[f32; LANES]) -> (bool, f32) {
    let finite = rest.iter().chain(nan).all(|v| v * 0.0 == 0.0);
    (finite, rest.iter().chain(max).fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m }))
}

/// `e ← softmax_weight(e − max)`; returns their sum.
#[inline(always)]
fn exp_sum<const FMA: bool>(e: &mut [f32], max: f32) -> f32 {
    let mut sum = [0.0f32; LANES];
    let mut chunks = e.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            c[k] = softmax_weight::<FMA>(c[k] - max);
            sum[k] += c[k];
        }
    }
    let rest = chunks.into_remainder();
    rest.iter_mut().for_each(|v| *v = softmax_weight::<FMA>(*v - max));
    rest.iter().chain(&sum).sum()
}

/// The overflow at (i, j): in q_i · k_j itself ("content_logits", as the staged path reports it), or
/// after the relative term, the scale and the bias ("logits").
#[allow(clippy::too_many_arguments)]
fn overflow(
    cfg: &Config,
    h: &HeadInput,
    i: usize,
    j: usize,
    p_i: &[f32],
    bias: Option<&Array1<f32>>,
    disentangled: Option<&Disentangled>,
    xl: Option<(&shifted::Shifted, &shifted::ShiftedBlock)>,
    bert: Option<(&banded::Banded, &banded::BandedBlock)>,
) -> Error {
    let content = if cfg.content { h.q.row(i).dot(&h.k.row(j)) } else { 0.0 };
    let (lq, lk) = (h.q.nrows(), h.k.nrows());
    let row = cfg.layout().row(crate::positions::table::distance(i, j, lq, lk));
    let b = bias.map_or(0.0, |b| b[j + lq - 1 - i]);
    let relative = row.map_or(0.0, |r| p_i[r])
        + disentangled.map_or(0.0, |d| d.terms(i, j))
        + xl.map_or(0.0, |(x, b)| x.term(b, i, j))
        + bert.map_or(0.0, |(x, b)| x.term(b, i, j));
    let logit = (content + relative) * cfg.logit_factor(h.q.ncols()) + b;
    let (array, value) = if content.is_finite() { ("logits", logit) } else { ("content_logits", content) };
    Error::Overflow { array: array.into(), index: vec![i, j], value: value as f64 }
}

/// DeBERTa's two products, each read by row: c2p_ij = P[i, r(i, j)], P = Q K_rᵀ (Lq, 2S); p2c_ij = P2[j, r(i, j)],
/// P2 = K Q_rᵀ (Lk, 2S); each present when the layer has its term ([`deberta::Terms`]).
struct Disentangled {
    c2p: Option<Array2<f32>>,
    p2c: Option<Array2<f32>>,
    /// The table row of each δ = i − j (query aligned to the last keys): `rows[i + Lk − 1 − j] = r(i, j)`, Lq + Lk − 1
    /// of them.
    rows: Vec<usize>,
    lk: usize,
}

impl Disentangled {
    /// The products and rows of DeBERTa's head `h` (its table [K_r | Q_r], (2S, 2·d_head)); `None` for another scheme.
    fn new(cfg: &Config, h: &HeadInput) -> Option<Self> {
        if !cfg.method.disentangles() {
            return None;
        }
        let d = &cfg.deberta;
        let (lq, lk) = (h.q.nrows(), h.k.nrows());
        let (k_r, q_r) = deberta::split(h.rel_k);
        let rows = (0..(lq + lk).saturating_sub(1)).map(|x| d.row(x as isize + 1 - lq as isize)).collect();
        let c2p = d.terms.c2p().then(|| matmul(h.q, k_r.t()));
        let p2c = d.terms.p2c().then(|| matmul(h.k, q_r.t()));
        Some(Disentangled { c2p, p2c, rows, lk })
    }

    /// `e += c2p_ij + p2c_ij` for query i's keys `keys` (e holds their logits).
    #[inline(always)]
    fn add_logits(&self, e: &mut [f32], i: usize, keys: Range<usize>) {
        if keys.is_empty() {
            return;
        }
        // Key j reads rows[i + Lk − 1 − j]: the keys' rows, last key first.
        let base = i + self.lk - 1;
        let rows = &self.rows[base + 1 - keys.end..=base - keys.start];
        let row_of = |t: usize| rows[rows.len() - 1 - t];
        fn contiguous(a: &Array2<f32>) -> &[f32] {
            a.as_slice().expect("a fresh product is contiguous")
        }
        match (&self.c2p, &self.p2c) {
            (Some(p), Some(p2)) => {
                let (w, p_i, p2) = (p.ncols(), &contiguous(p)[i * p.ncols()..(i + 1) * p.ncols()], contiguous(p2));
                for (t, (e, j)) in e.iter_mut().zip(keys).enumerate() {
                    let r = row_of(t);
                    *e += p_i[r] + p2[j * w + r];
                }
            }
            (Some(p), None) => {
                let p_i = &contiguous(p)[i * p.ncols()..(i + 1) * p.ncols()];
                e.iter_mut().enumerate().for_each(|(t, e)| *e += p_i[row_of(t)]);
            }
            (None, Some(p2)) => {
                let (w, p2) = (p2.ncols(), contiguous(p2));
                for (t, (e, j)) in e.iter_mut().zip(keys).enumerate() {
                    *e += p2[j * w + row_of(t)];
                }
            }
            (None, None) => {}
        }
    }

    /// c2p_ij + p2c_ij of one pair, for an overflow's message.
    fn terms(&self, i: usize, j: usize) -> f32 {
        let r = self.rows[i + self.lk - 1 - j];
        self.c2p.as_ref().map_or(0.0, |p| p[[i, r]]) + self.p2c.as_ref().map_or(0.0, |p2| p2[[j, r]])
    }
}

/// The running state of a block of queries: maxima, sums, outputs and a^V buckets, kept for BQ rows and
/// reset for each block.
struct Block {
    max: Array1<f32>,
    sum: Array1<f32>,
    /// (BQ, d_v rounded up to NR): the product's accumulator, zero in the padded columns.
    out: Array2<f32>,
    /// (BQ, R), with a^V.
    buckets: Option<Array2<f32>>,
}

impl Block {
    fn new(dv_padded: usize, table_rows: Option<usize>) -> Self {
        Block { max: Array1::zeros(BQ), sum: Array1::zeros(BQ), out: Array2::zeros((BQ, dv_padded)), buckets: table_rows.map(|r| Array2::zeros((BQ, r))) }
    }

    /// Empties the state for the next block of queries; with a sink logit s, the sink's own term (m = s, l = 1).
    fn reset(&mut self, sink: Option<f32>) {
        self.max.fill(sink.unwrap_or(f32::NEG_INFINITY));
        self.sum.fill(if sink.is_some() { 1.0 } else { 0.0 });
        self.out.fill(0.0);
        if let Some(b) = self.buckets.as_mut() {
            b.fill(0.0);
        }
    }

    /// Takes query t's logits `e` of one key block and their maximum: rescales its state to the new
    /// maximum (when it grew), turns `e` into p = exp(e − m') in place and adds them to the sum. The
    /// caller adds p to the buckets, and the kernel p·V to `out` for the whole block.
    #[inline(always)]
    fn absorb<const FMA: bool>(&mut self, t: usize, e: &mut [f32], max: f32) {
        let new_max = if max > self.max[t] { max } else { self.max[t] };
        if new_max == f32::NEG_INFINITY {
            // Every key so far masked: p = 0 and nothing to rescale.
            e.fill(0.0);
            return;
        }
        let sum = exp_sum::<FMA>(e, new_max);
        if new_max > self.max[t] {
            let gamma = exp_nonpositive::<FMA>(self.max[t] - new_max);
            self.sum[t] *= gamma;
            self.out.row_mut(t).mapv_inplace(|o| o * gamma);
            if let Some(b) = self.buckets.as_mut() {
                b.row_mut(t).mapv_inplace(|v| v * gamma);
            }
            self.max[t] = new_max;
        }
        self.sum[t] += sum;
    }

    /// z = (o + B w^V) / l for the block's `rows` queries and d_v columns, zeros where every key was
    /// masked.
    fn finish(&self, rows: usize, dv: usize, rel_v: Option<ndarray::ArrayView2<f32>>) -> Array2<f32> {
        let mut z = self.out.slice(s![..rows, ..dv]).to_owned();
        if let (Some(b), Some(w_v)) = (&self.buckets, rel_v) {
            z += &matmul(b.slice(s![..rows, ..]), w_v);
        }
        for (mut o, &l) in z.outer_iter_mut().zip(&self.sum) {
            let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
            o.mapv_inplace(|v| v * inv);
        }
        z
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
