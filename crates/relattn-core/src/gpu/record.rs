//! The intermediates of a trace, read back chunk by chunk into (b, h, ...) arrays, and the trace made of
//! them (with the Music Transformer's skew steps filled on the CPU from the GPU's `P`).

use super::plan::Chunk;
use crate::attention::Config;
use crate::layer::scenario::Scenario;
use crate::layer::trace::{Computed, SkewTrace, Trace};
use crate::positions::music;
use ndarray::{s, Array2, Array3, Array4, ArrayView3};

/// The intermediates read back so far, (b, h, ...) like [`Trace`].
pub(super) struct Recorded {
    content: Array4<f32>,
    relative: Array4<f32>,
    logits: Array4<f32>,
    weights: Array4<f32>,
    /// P = Q·Tᵀ (b, h, n, R), for the skew steps and DeBERTa's c2p (P = Q·K_rᵀ).
    p: Option<Array4<f32>>,
    /// DeBERTa's P2 = K·Q_rᵀ (b, h, n, R), for its p2c.
    p2: Option<Array4<f32>>,
    buckets: Option<Array4<f32>>,
    out_content: Array4<f32>,
    out_relative: Array4<f32>,
    /// Q and K (b, n, h·d_head), V and the concatenated heads (b, n, h·d_v).
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
    pub heads: Array3<f32>,
    /// RoPE's rotated Q and K, (b, n, h·d_head).
    pub rotated: Option<(Array3<f32>, Array3<f32>)>,
}

impl Recorded {
    /// For b batch elements of h heads of n positions, `(inner, inner_v)` = (h·d_head, h·d_v), values `dv` = d_v
    /// wide, R = `r` table rows; `keep_p`: whether P and P2 are kept.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        b: usize,
        h: usize,
        n: usize,
        (inner, inner_v): (usize, usize),
        dv: usize,
        r: usize,
        keep_p: (bool, bool),
        keep_buckets: bool,
        rotated: bool,
    ) -> Self {
        let nn = || Array4::zeros((b, h, n, n));
        Recorded {
            content: nn(),
            relative: nn(),
            logits: nn(),
            weights: nn(),
            p: keep_p.0.then(|| Array4::zeros((b, h, n, r))),
            p2: keep_p.1.then(|| Array4::zeros((b, h, n, r))),
            buckets: keep_buckets.then(|| Array4::zeros((b, h, n, r))),
            out_content: Array4::zeros((b, h, n, dv)),
            out_relative: Array4::zeros((b, h, n, dv)),
            q: Array3::zeros((b, n, inner)),
            k: Array3::zeros((b, n, inner)),
            v: Array3::zeros((b, n, inner_v)),
            heads: Array3::zeros((b, n, inner_v)),
            rotated: rotated.then(|| (Array3::zeros((b, n, inner)), Array3::zeros((b, n, inner)))),
        }
    }

    /// Copies a chunk's buffers (content, relative, logits, weights, P, buckets, αV, B·w^V, P2) into place; P2
    /// has every key's row of the chunk's heads.
    pub(super) fn store(&mut self, bi: usize, c: Chunk, parts: &[Vec<f32>]) {
        let put = |dst: &mut Array4<f32>, data: &[f32]| {
            let cols = dst.dim().3;
            let src = ArrayView3::from_shape((c.hc, c.rows, cols), &data[..c.hc * c.rows * cols]).expect("chunk shape");
            dst.slice_mut(s![bi, c.h0..c.h0 + c.hc, c.i0..c.i0 + c.rows, ..]).assign(&src);
        };
        if let Some(p2) = self.p2.as_mut() {
            let (_, _, n, r) = p2.dim();
            let src = ArrayView3::from_shape((c.hc, n, r), &parts[8][..c.hc * n * r]).expect("P2's shape");
            p2.slice_mut(s![bi, c.h0..c.h0 + c.hc, .., ..]).assign(&src);
        }
        put(&mut self.content, &parts[0]);
        put(&mut self.relative, &parts[1]);
        put(&mut self.logits, &parts[2]);
        put(&mut self.weights, &parts[3]);
        if let Some(pa) = self.p.as_mut() {
            put(pa, &parts[4]);
        }
        if let Some(ba) = self.buckets.as_mut() {
            put(ba, &parts[5]);
        }
        put(&mut self.out_content, &parts[6]);
        if !parts[7].is_empty() {
            put(&mut self.out_relative, &parts[7]);
        }
    }

    /// Batch element `bi`'s heads side by side: (n, h·d_v), α·V + B·w^V.
    pub(super) fn concat(&self, bi: usize) -> Array2<f32> {
        let (_, h, n, dv) = self.out_content.dim();
        let mut out = Array2::zeros((n, h * dv));
        for hi in 0..h {
            let z = &self.out_content.slice(s![bi, hi, .., ..]) + &self.out_relative.slice(s![bi, hi, .., ..]);
            out.slice_mut(s![.., hi * dv..(hi + 1) * dv]).assign(&z);
        }
        out
    }

    pub(super) fn finish(mut self, cfg: &Config, sc: &Scenario, output: Array3<f32>, music_skew: bool, keep_buckets: bool) -> Trace {
        let (b, h, _, _) = self.logits.dim();
        // The GPU never carries −∞: masked logits (out of the query's reach, causal or window, or padding) are
        // shown as the CPU shows them.
        let reach = cfg.reach();
        for bi in 0..b {
            let mask = sc.key_mask.as_ref().map(|m| m.row(bi));
            for hi in 0..h {
                let mut l = self.logits.slice_mut(s![bi, hi, .., ..]);
                for ((i, j), e) in l.indexed_iter_mut() {
                    if !reach.sees(i, j) || mask.is_some_and(|m| !m[j]) {
                        *e = f32::NEG_INFINITY;
                    }
                }
            }
        }
        let skew = music_skew.then(|| self.skew_steps(cfg));
        let (c2p, p2c) = self.disentangled(cfg);
        // (b, n, h·d_head) → (b, h, n, d_head), as the CPU's per-head traces stack.
        let by_head = |a: Array3<f32>| {
            let (b, n, d) = a.dim();
            a.into_shape_with_order((b, n, h, d / h)).expect("heads divide d").permuted_axes([0, 2, 1, 3]).as_standard_layout().into_owned()
        };
        let rotated = self.rotated.take().map(|(q, k)| (by_head(q), by_head(k)));
        if !cfg.method.has_relative_term() {
            // RoPE adds no relative term: no relative logits, as on the CPU.
            self.relative = Array4::zeros((b, h, 0, 0));
        }
        let computed = Computed {
            q: self.q,
            k: self.k,
            v: self.v,
            content_logits: self.content,
            relative_logits: self.relative,
            logits: self.logits,
            weights: self.weights,
            value_buckets: if keep_buckets { self.buckets } else { None },
            skew,
            c2p,
            p2c,
            // Transformer-XL is refused on the GPU (attention::gpu_computes).
            bd_relative: None,
            bd: None,
            ef: None,
            out_content: self.out_content,
            out_relative: self.out_relative,
            rotated,
            heads: self.heads,
            output,
        };
        Trace::assemble(cfg, sc, computed)
    }

    /// DeBERTa's c2p and p2c (b, h, n, n), each when the layer has it, gathered from P = Q·K_rᵀ and P2 = K·Q_rᵀ at
    /// the pair's row: `c2p_ij = P[i, r(i, j)]`, `p2c_ij = P2[j, r(i, j)]` ([`crate::positions::deberta`]).
    fn disentangled(&self, cfg: &Config) -> (Option<Array4<f32>>, Option<Array4<f32>>) {
        if !cfg.method.disentangles() {
            return (None, None);
        }
        let d = &cfg.deberta;
        let gather = |prod: &Option<Array4<f32>>, query_side: bool| {
            prod.as_ref().map(|a| {
                let (b, h, n, _) = a.dim();
                Array4::from_shape_fn((b, h, n, n), |(bi, hi, i, j)| {
                    let r = d.row(i as isize - j as isize);
                    a[[bi, hi, if query_side { i } else { j }, r]]
                })
            })
        };
        // P is kept with c2p, P2 with p2c (run.rs).
        (gather(&self.p, true), gather(&self.p2, false))
    }

    /// The Music Transformer's skew steps from P: `Q·E_rᵀ` column c holds distance c − (n − 1), which reads
    /// table row `row(c − (n − 1))` of P (zero beyond a zero-edged table), then [`music::skew`].
    fn skew_steps(&self, cfg: &Config) -> SkewTrace {
        let p = self.p.as_ref().expect("kept for the skew");
        let (b, h, n, _) = p.dim();
        let layout = cfg.layout();
        let cols = if cfg.causal { n } else { 2 * n - 1 };
        let rows: Vec<Option<usize>> = (0..cols).map(|c| layout.row(c as isize - (n as isize - 1))).collect();
        let mut steps = Vec::with_capacity(b * h);
        for bi in 0..b {
            for hi in 0..h {
                let ph = p.slice(s![bi, hi, .., ..]);
                let qer = Array2::from_shape_fn((n, cols), |(i, c)| rows[c].map_or(0.0, |r| ph[[i, r]]));
                steps.push(music::skew(qer.view(), cfg.causal));
            }
        }
        SkewTrace::stack(&steps, h, |st| st)
    }
}
