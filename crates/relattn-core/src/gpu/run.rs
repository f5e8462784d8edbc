//! The layer on the device: checks, the plan, uploads, every chunk's kernels, readback; a forward keeps
//! the output, a trace every intermediate ([`Recorded`]), and either may time each stage.

use super::context::GpuContext;
use super::kernels::{flag, rows_of, u, BucketsParams, NormParams, Operand, RopeParams, RowsParams, SoftmaxParams, ATTEND_MAX_DH};
use super::plan::{plan, Chunk};
use super::record::Recorded;
use crate::attention::{Config, Implementation};
use crate::error::{Error, Result};
use crate::layer::forward::{self, table_of};
use crate::layer::scenario::Scenario;
use crate::layer::trace::Trace;
use crate::positions::rope::{PairLayout, RopeTable};
use crate::positions::table::Edge;
use crate::timing::{now_ms, LogitTimes, StageTimes};
use bytemuck::Zeroable;
use ndarray::{Array2, Array3, ArrayView2, Axis};

/// The time since the last lap, for profiling: each stage is submitted alone and waited for.
struct Clock {
    last: f64,
}

impl Clock {
    fn start() -> Clock {
        Clock { last: now_ms() }
    }

    /// Milliseconds since the previous lap.
    fn lap(&mut self) -> f64 {
        let now = now_ms();
        let ms = now - self.last;
        self.last = now;
        ms
    }
}

impl GpuContext {
    /// The output and every intermediate, the same [`Trace`] as the CPU's [`crate::layer::forward::trace`], and the
    /// time of each stage (each submitted alone and waited for). [`Implementation::Materialized`] is computed with
    /// the efficient kernels (the same numbers); its trace, like the CPU's, has no value buckets and no skew steps.
    /// The Music Transformer's skew steps are filled on the CPU from the GPU's `P` ([`crate::positions::music::skew`]).
    pub async fn trace(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Trace, StageTimes)> {
        let (_, trace, times) = self.run(cfg, sc, true, true).await?;
        Ok((trace.expect("recorded"), times.expect("profiled")))
    }

    /// The layer's output (b, n, d_model) and the time of each stage (each submitted alone and waited for,
    /// so a little slower than [`GpuContext::output`]).
    pub async fn forward(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Array3<f32>, StageTimes)> {
        let (output, _, times) = self.run(cfg, sc, false, true).await?;
        Ok((output, times.expect("profiled")))
    }

    /// The layer's output (b, n, d_model) alone, the stages submitted together (nothing waits between them).
    pub async fn output(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        Ok(self.run(cfg, sc, false, false).await?.0)
    }

    /// When profiling, submits what `enc` holds (leaving a fresh encoder), waits for the device and returns
    /// the milliseconds since the last mark; else 0.
    async fn mark(&self, enc: &mut wgpu::CommandEncoder, clock: &mut Option<Clock>) -> Result<f64> {
        let Some(clock) = clock else { return Ok(0.0) };
        let done = std::mem::replace(enc, self.encoder());
        self.queue.submit([done.finish()]);
        self.wait().await?;
        Ok(clock.lap())
    }

    /// The whole layer; `record` keeps every intermediate, `profile` times each stage.
    async fn run(&mut self, cfg: &Config, sc: &Scenario, record: bool, profile: bool) -> Result<(Array3<f32>, Option<Trace>, Option<StageTimes>)> {
        let (b, n, d) = sc.dims();
        let (h, dh, dv) = (cfg.heads, sc.d_head, sc.d_v);
        if !crate::attention::gpu_computes(cfg.method) {
            // A scheme without kernels here: refused by name, the page computes it on the CPU.
            return Err(Error::invalid("method", cfg.method, crate::attention::FUSED_METHODS));
        }
        if let Some(c) = cfg.chunk {
            // Llama 4's chunks have no kernel flag here (windows do): refused by name, the CPU masks them.
            return Err(Error::invalid("chunk", c, "none on the GPU backend (the CPU masks chunks)"));
        }
        // Q and K are (n, h·d_head): d_model unless the heads have a width of their own; V and the concatenated
        // heads (n, h·d_v), d_v = d_head unless the values have a width of their own (DeepSeek's multi-head latent
        // attention); the output (n, d_out), w_o's columns (d_model unless the model's w_o says otherwise).
        let (inner, inner_v, d_out) = (h * dh, h * dv, sc.d_out());
        if h == 0 || dh == 0 || dv == 0 || sc.w_q.dim() != (d, inner) || sc.w_v.dim() != (d, inner_v) || sc.w_o.dim() != (inner_v, d_out) {
            return Err(Error::invalid("heads", h, format!("heads of d_head = {dh} and d_v = {dv} filling w_q's and w_v's columns")));
        }
        let (layout, scheme) = (cfg.layout(), cfg.scheme());
        let (th, tr, tc) = sc.rel_k.dim();
        let width = scheme.table_width(dh);
        if (th != 1 && th != h) || tr != cfg.table_rows() || tc != width {
            return Err(Error::shape("rel_k", sc.rel_k.shape(), format!("[1 or {h}, {}, {width}]", cfg.table_rows())));
        }
        // The rows of the vector table that P = Q·Tᵀ has: none for ALiBi and T5 (their bias by distance is
        // added instead) and for RoPE (whose Q and K are rotated instead). DeBERTa's table [K_r | Q_r] (2S, 2·d_head)
        // gives P = Q·K_rᵀ (c2p) and P2 = K·Q_rᵀ (p2c, (n, 2S) a head, after P in its buffer).
        let deberta = cfg.method.disentangles().then_some(cfg.deberta.terms);
        let (c2p, p2c) = deberta.map_or((false, false), |t| (t.c2p(), t.p2c()));
        let r = if cfg.method.has_vector_table() || deberta.is_some() { cfg.table_rows() } else { 0 };
        let rel_v = match (cfg.has_rel_v(), &sc.rel_v) {
            (true, Some(t)) if t.dim() == (th, r, dv) => Some(t),
            (true, Some(t)) => return Err(Error::shape("rel_v", t.shape(), format!("[{th}, {r}, {dv}]"))),
            (true, None) => return Err(Error::invalid("rel_v", "absent", "a (2k+1, d_v) table when a^V is on")),
            (false, _) => None,
        };
        // A forward that keeps and times nothing runs each chunk in attend.wgsl (no (rows, n) arrays).
        let fused = !record && !profile && cfg.implementation == Implementation::Efficient && dh.max(dv) <= ATTEND_MAX_DH;
        let chunks = plan(&self.limits, self.work_bytes, n, d.max(inner).max(inner_v).max(d_out), h, r, dh.max(dv), fused, p2c)?;
        let shared = th == 1;
        let music_skew = record && cfg.scheme().skews() && cfg.implementation == Implementation::Efficient;
        // A trace's c2p and p2c stages are gathered on the CPU from the GPU's P and P2 ([`Recorded`]).
        let keep_p = music_skew || (record && c2p);
        let keep_buckets = record && rel_v.is_some() && cfg.implementation == Implementation::Efficient;
        let zero_edge = layout.edge == Edge::Zero || r == 0;
        let mut clock = profile.then(Clock::start);

        // Weights, biases and tables: once per call.
        let contiguous = |a: &Array2<f32>| a.as_standard_layout().into_owned().into_raw_vec_and_offset().0;
        let w = [contiguous(&sc.w_q), contiguous(&sc.w_k), contiguous(&sc.w_v), contiguous(&sc.w_o)];
        let w = [self.upload("w_q", &w[0]), self.upload("w_k", &w[1]), self.upload("w_v", &w[2]), self.upload("w_o", &w[3])];
        // b_q, b_k (h·d_head each), b_v (h·d_v) from 2·h·d_head, then b_o (d_out) from 2·h·d_head + h·d_v.
        let biases: Vec<f32> = [&sc.b_q, &sc.b_k, &sc.b_v, &sc.b_o].iter().flat_map(|v| v.iter().copied()).collect();
        let bias = self.upload("bias", &biases);
        let rel_k_buf = self.upload("rel_k", &sc.rel_k.as_standard_layout().into_owned().into_raw_vec_and_offset().0);
        let rel_v_buf = rel_v.map(|t| self.upload("rel_v", &t.as_standard_layout().into_owned().into_raw_vec_and_offset().0));
        let dummy = [self.buffer("dummy_content", 16), self.buffer("dummy_relative", 16)];
        // The heads' own logit terms, one buffer (attend.wgsl binds 8 storage buffers, WebGPU's default most):
        // ALiBi's and T5's bias by distance, (h, 2n − 1), computed from each head's table as the CPU does, or
        // DeBERTa's table row r(i, j) of each distance j − i (element j − i + n − 1; δ = i − j, the CPU's buckets in
        // float32, exact as f32 below 2²⁴), then the sink logits (h) from `sink_at`.
        let mut terms: Vec<f32> = Vec::new();
        if cfg.method.adds_distance_bias() {
            terms.extend((0..h).flat_map(|hh| scheme.distance_bias(table_of(&sc.rel_k, hh), n, n).expect("a bias scheme")));
        }
        if deberta.is_some() {
            terms.extend((0..2 * n - 1).map(|t| cfg.deberta.row(n as isize - 1 - t as isize) as f32));
        }
        let sink_at = terms.len();
        if let Some(s) = &sc.sinks {
            terms.extend(s.iter().copied());
        }
        let head_terms = (!terms.is_empty()).then(|| self.upload("head_terms", &terms));
        let bias_flag =
            if cfg.method.adds_distance_bias() { flag::DISTANCE_BIAS } else { 0 } | if c2p { flag::C2P } else { 0 } | if p2c { flag::P2C } else { 0 };
        // The window (a window of n or more masks nothing, and keeps the kernels' sums within u32), the soft-cap
        // and the sinks, as flags for every kernel that takes a chunk of rows.
        let window = cfg.window.map_or(0, |w| w.min(n));
        let head_flags = if cfg.window.is_some() { flag::WINDOW } else { 0 }
            | if cfg.softcap.is_some() { flag::SOFTCAP } else { 0 }
            | if sc.sinks.is_some() { flag::SINK } else { 0 };
        // q/k norms' γ, and their params: groups of γ's length (d_head or h·d_head) of each row.
        let mut norms: Vec<(NormParams, wgpu::Buffer, bool)> = Vec::new();
        for (name, g, is_q) in [("q_norm", &sc.q_norm, true), ("k_norm", &sc.k_norm, false)] {
            let Some(g) = g else { continue };
            if g.is_empty() || inner % g.len() != 0 {
                return Err(Error::shape(name, &[g.len()], format!("[{dh}] or [{inner}] = (d_head) or (h·d_head)")));
            }
            let params = NormParams { n: u(n), inner: u(inner), group: u(g.len()), eps: cfg.norm_eps };
            norms.push((params, self.upload(name, &g.to_vec()), is_q));
        }
        // RoPE: the rotated Q and K the logits read, from the angles' cos and sin (the CPU's values). A table made
        // from the options is computed and uploaded once per (options, n, d_head) and kept for the next calls (it
        // made RoPE's forward about 5 ms slower than Shaw's at n 4096 on an H200); a model's own is uploaded each time.
        let rope = if cfg.method.rotates() {
            let d_rot = cfg.rope.rotated_dims(dh);
            let params = RopeParams {
                n: u(n),
                inner: u(inner),
                dh: u(dh),
                d_rot: u(d_rot),
                flags: if cfg.rope.layout == PairLayout::Half { flag::HALF_SPLIT } else { 0 },
                ..Zeroable::zeroed()
            };
            let made = sc.rope.is_none().then_some((cfg.rope, n, dh));
            let (cos, sin) = if made.is_some() && self.rope_kept == made {
                let bytes = n * (d_rot / 2) * 4;
                (self.buffer("rope_cos", bytes), self.buffer("rope_sin", bytes))
            } else {
                let RopeTable { cos, sin, .. } = sc.rope_table(cfg).expect("a rotating scheme");
                self.rope_kept = made;
                (self.upload("rope_cos", &contiguous(&cos)), self.upload("rope_sin", &contiguous(&sin)))
            };
            Some((params, cos, sin))
        } else {
            None
        };
        let max_work = chunks.iter().map(|c| c.hc * c.rows).max().unwrap_or(0);
        let [q, k] = ["q", "k"].map(|role| self.buffer(role, n * inner * 4));
        let [v, heads] = ["v", "heads"].map(|role| self.buffer(role, n * inner_v * 4));
        let x = self.buffer("x", n * d * 4);
        let out = self.buffer("out", n * d_out * 4);
        let rotated = rope.is_some().then(|| ["q_rotated", "k_rotated"].map(|role| self.buffer(role, n * inner * 4)));
        // The Q and K the logits read: rotated for RoPE.
        let (qr, kr) = rotated.as_ref().map_or((&q, &k), |[a, b]| (a, b));
        let work = if fused { 0 } else { max_work * n * 4 };
        let [logits, weights] = ["logits", "weights"].map(|role| self.buffer(role, work));
        let [content, relative] = if record { ["content", "relative"].map(|role| self.buffer(role, max_work * n * 4)) } else { dummy.clone() };
        // P (a chunk's (heads, rows, R)), then from `p2_at` DeBERTa's P2 (heads, n, R).
        let p2_at = max_work * r;
        let max_heads = chunks.iter().map(|c| c.hc).max().unwrap_or(0);
        let p = self.buffer("p", (p2_at + if p2c { max_heads * n * r } else { 0 }) * 4);
        let buckets = self.buffer("buckets", max_work * r * 4);
        let [oc, orl] = ["out_content", "out_relative"].map(|role| self.buffer(role, max_work * dv * 4));

        // x, or x + PE for absolute positions.
        let input = forward::input(cfg, sc);
        let mut output = Array3::zeros((b, n, d_out));
        let mut times = StageTimes { logits: LogitTimes::Fused(0.0), ..StageTimes::default() };
        let mut rec = record.then(|| Recorded::new(b, h, n, (inner, inner_v), dv, r, (keep_p, record && p2c), keep_buckets, rope.is_some()));
        let no_terms = self.buffer("dummy_terms", 16);
        let terms_buf = head_terms.as_ref().unwrap_or(&no_terms);
        let scale = cfg.logit_factor(dh);

        for bi in 0..b {
            let mut enc = self.encoder();
            // x straight from the scenario's array when it is contiguous (a copy of 32 MiB at n 16384 otherwise).
            let xb = input.index_axis(Axis(0), bi);
            match xb.as_slice() {
                Some(xs) => self.queue.write_buffer(&x, 0, bytemuck::cast_slice(xs)),
                None => self.queue.write_buffer(&x, 0, bytemuck::cast_slice(&xb.as_standard_layout().into_owned().into_raw_vec_and_offset().0)),
            }
            let mask: Vec<u32> = match &sc.key_mask {
                Some(m) => m.row(bi).iter().map(|&keep| u32::from(keep)).collect(),
                None => vec![1; n],
            };
            let mask = self.upload("mask", &mask);
            for (wi, dst, cols) in [(0, &q, inner), (1, &k, inner), (2, &v, inner_v)] {
                let a = rows_of(&x, 0, d, 0);
                self.matmul(&mut enc, (n, cols, d, 1), a, rows_of(&w[wi], 0, cols, 0), rows_of(dst, 0, cols, 0), Some((&bias, wi * inner)), false);
            }
            // q/k norms after the projections, before any rotation.
            for (params, gamma, is_q) in &norms {
                self.norm(&mut enc, params, if *is_q { &q } else { &k }, gamma);
            }
            if let (Some((params, cos, sin)), Some([q_rot, k_rot])) = (&rope, &rotated) {
                self.rope(&mut enc, params, &q, cos, sin, q_rot);
                self.rope(&mut enc, params, &k, cos, sin, k_rot);
            }
            times.projections += self.mark(&mut enc, &mut clock).await?;

            for &Chunk { h0, hc, i0, rows } in &chunks {
                // P = Q·Tᵀ, (hc, rows, R): B(c, r) = T[head, r, c] (rows `width` wide: DeBERTa's K_r is their first
                // d_head columns).
                let (t_off, t_zs) = if shared { (0, 0) } else { (h0 * r * width, r * width) };
                // w^V's rows are d_v wide.
                let (tv_off, tv_zs) = if shared { (0, 0) } else { (h0 * r * dv, r * dv) };
                if r > 0 && (deberta.is_none() || c2p) {
                    let tk = Operand { buf: &rel_k_buf, off: t_off, rs: 1, cs: width, zs: t_zs };
                    self.matmul(&mut enc, (rows, r, dh, hc), rows_of(&q, i0 * inner + h0 * dh, inner, dh), tk, rows_of(&p, 0, r, rows * r), None, false);
                }
                if p2c {
                    // P2 = K·Q_rᵀ, (hc, n, R), every key of the chunk's heads: Q_r is the table's last d_head columns.
                    let qr_t = Operand { buf: &rel_k_buf, off: t_off + dh, rs: 1, cs: width, zs: t_zs };
                    self.matmul(&mut enc, (n, r, dh, hc), rows_of(&k, h0 * dh, inner, dh), qr_t, rows_of(&p, p2_at, r, n * r), None, false);
                }
                let masks = if zero_edge { flag::ZERO_EDGE } else { 0 }
                    | if cfg.causal { flag::CAUSAL } else { 0 }
                    | if cfg.content { 0 } else { flag::NO_CONTENT }
                    | bias_flag
                    | head_flags;
                #[rustfmt::skip]
                let chunk = RowsParams {
                    rows: u(rows), n: u(n), dh: u(dh), inner: u(inner), i0: u(i0), h0: u(h0), r: u(r), flags: masks,
                    tmin: if r > 0 { layout.min as i32 } else { 0 }, scale, v_stride: if shared { 0 } else { u(r * dv) },
                    dv: u(dv), inner_v: u(inner_v),
                    window: u(window), softcap: cfg.softcap.unwrap_or(1.0), sink_at: u(sink_at), p2_at: u(p2_at),
                    ..Zeroable::zeroed()
                };
                if fused {
                    let flags = masks | if rel_v_buf.is_some() { flag::REL_V } else { 0 };
                    let w_v = rel_v_buf.as_ref().unwrap_or(&dummy[0]);
                    self.attend(&mut enc, &RowsParams { flags, ..chunk }, hc, [qr, kr, &v, &p, &mask, w_v, &heads, terms_buf]);
                    continue;
                }
                let flags = masks
                    | if record { flag::WRITE_CONTENT | flag::WRITE_RELATIVE } else { 0 }
                    | if cfg.scheme().zeroes_above_diagonal() { flag::ZERO_ABOVE } else { 0 };
                let params = RowsParams { flags, ..chunk };
                self.logits(&mut enc, &params, hc, [qr, kr, &p, &mask, &content, &relative, &logits, terms_buf]);
                let ms = self.mark(&mut enc, &mut clock).await?;
                times.logits.add(&LogitTimes::Fused(ms));

                let flags = if cfg.causal { flag::CAUSAL } else { 0 } | head_flags;
                #[rustfmt::skip]
                let sm = SoftmaxParams { rows: u(rows), n: u(n), i0: u(i0), flags, window: u(window), h0: u(h0), sink_at: u(sink_at), ..Zeroable::zeroed() };
                self.softmax(&mut enc, &sm, hc, &logits, &mask, terms_buf, &weights);
                times.softmax += self.mark(&mut enc, &mut clock).await?;

                // z = α·V (+ B·w^V): into the concatenated heads, or kept apart for a trace.
                let (z_buf, z_off, z_rs, z_zs) = if record { (&oc, 0, dv, rows * dv) } else { (&heads, i0 * inner_v + h0 * dv, inner_v, dv) };
                self.matmul(
                    &mut enc,
                    (rows, dv, n, hc),
                    rows_of(&weights, 0, n, rows * n),
                    rows_of(&v, h0 * dv, inner_v, dv),
                    rows_of(z_buf, z_off, z_rs, z_zs),
                    None,
                    false,
                );
                if let Some(tv) = &rel_v_buf {
                    let edge = if zero_edge { flag::ZERO_EDGE } else { 0 };
                    let params = BucketsParams { rows: u(rows), n: u(n), i0: u(i0), r: u(r), tmin: layout.min as i32, flags: edge, ..Zeroable::zeroed() };
                    self.buckets(&mut enc, &params, hc, &weights, &buckets);
                    let wv = Operand { buf: tv, off: tv_off, rs: dv, cs: 1, zs: tv_zs };
                    let (dst, off, rs, zs) = if record { (&orl, 0, dv, rows * dv) } else { (&heads, i0 * inner_v + h0 * dv, inner_v, dv) };
                    self.matmul(&mut enc, (rows, dv, r, hc), rows_of(&buckets, 0, r, rows * r), wv, rows_of(dst, off, rs, zs), None, !record);
                }
                times.values += self.mark(&mut enc, &mut clock).await?;

                if let Some(rec) = rec.as_mut() {
                    let (wn, wr, wd) = (hc * rows * n, hc * rows * r, hc * rows * dv);
                    let orl_len = if rel_v_buf.is_some() { wd } else { 0 };
                    // DeBERTa's P2 (hc, n, R) from p2_at in P's buffer (read whole with it; none without p2c).
                    let p_len = if p2c { p2_at + hc * n * r } else { wr };
                    let mut parts = self
                        .read(enc, &[(&content, wn), (&relative, wn), (&logits, wn), (&weights, wn), (&p, p_len), (&buckets, wr), (&oc, wd), (&orl, orl_len)])
                        .await?;
                    let p2 = if p2c { parts[4].split_off(p2_at) } else { Vec::new() };
                    parts.push(p2);
                    enc = self.encoder();
                    rec.store(bi, Chunk { h0, hc, i0, rows }, &parts);
                    // Reading a trace's intermediates back counts with the output's readback.
                    if let Some(clock) = clock.as_mut() {
                        times.output += clock.lap();
                    }
                }
            }

            if let Some(rec) = rec.as_mut() {
                // Heads = α·V + B·w^V, added here exactly as the GPU adds them in a forward.
                let concat = rec.concat(bi);
                self.queue.write_buffer(&heads, 0, bytemuck::cast_slice(concat.as_slice().expect("standard layout")));
                rec.heads.index_axis_mut(Axis(0), bi).assign(&concat);
            }
            #[rustfmt::skip]
            let b_o = 2 * inner + inner_v;
            self.matmul(
                &mut enc,
                (n, d_out, inner_v, 1),
                rows_of(&heads, 0, inner_v, 0),
                rows_of(&w[3], 0, d_out, 0),
                rows_of(&out, 0, d_out, 0),
                Some((&bias, b_o)),
                false,
            );
            let (ni, nv) = (n * inner, n * inner_v);
            let mut want: Vec<(&wgpu::Buffer, usize)> = if record { vec![(&out, n * d_out), (&q, ni), (&k, ni), (&v, nv)] } else { vec![(&out, n * d_out)] };
            if record && rotated.is_some() {
                want.extend([(qr, ni), (kr, ni)]);
            }
            // Each array read back, the output (n, d_out), V (n, h·d_v) and the rest (n, h·d_head), is copied once, from the
            // mapped staging buffer into its place.
            self.read_into(enc, &want, |part, data| {
                let src = ArrayView2::from_shape((n, data.len() / n), data).expect("n rows");
                match (part, rec.as_mut()) {
                    (0, _) => output.index_axis_mut(Axis(0), bi).assign(&src),
                    (_, None) => {}
                    (1, Some(rec)) => rec.q.index_axis_mut(Axis(0), bi).assign(&src),
                    (2, Some(rec)) => rec.k.index_axis_mut(Axis(0), bi).assign(&src),
                    (3, Some(rec)) => rec.v.index_axis_mut(Axis(0), bi).assign(&src),
                    (4, Some(rec)) => rec.rotated.as_mut().expect("rotated").0.index_axis_mut(Axis(0), bi).assign(&src),
                    (_, Some(rec)) => rec.rotated.as_mut().expect("rotated").1.index_axis_mut(Axis(0), bi).assign(&src),
                }
            })
            .await?;
            if let Some(clock) = clock.as_mut() {
                times.output += clock.lap();
            }
        }

        let trace = rec.map(|rec| rec.finish(cfg, sc, output.clone(), music_skew, keep_buckets));
        Ok((output, trace, clock.map(|_| times)))
    }
}
