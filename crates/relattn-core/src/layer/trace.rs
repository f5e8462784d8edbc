//! A trace: every intermediate of one forward pass, the thing the page and the CLI show.
//!
//! Arrays are indexed (b, h, ...) for per-head stages. [`Stage`] names each view ([`crate::layer::stage`]: what it says); [`Trace::stage`] cuts
//! the 2-D matrix of one (batch, head); relattn's `files::write_trace` saves everything under the names in
//! [`Stage::name`] (plus `x`, `q`, `k`, `v`, `heads`).

use crate::attention::Config;

use crate::error::{check_index, Result};
use crate::layer::forward::table_of;
use crate::layer::scenario::Scenario;
use crate::layer::stage_meta::{Present, StageMeta};
use crate::positions::music::SkewSteps;
use crate::positions::rope::RopeTable;
use crate::positions::{absolute, table};
use crate::stage::Stage;
use ndarray::{s, Array1, Array2, Array3, Array4, ArrayView2, ArrayViewD, Axis, CowArray, Ix2, IxDyn};

/// One array of a trace ([`Trace::arrays`]): float32, or int64 for the distances and table rows.
pub enum Named<'a> {
    F32(CowArray<'a, f32, IxDyn>),
    I64(ArrayViewD<'a, i64>),
}

/// The Music Transformer's skew stages for every (batch, head).
#[derive(Clone, Debug)]
pub struct SkewTrace {
    pub qer: Array4<f32>,
    pub padded: Array4<f32>,
    pub reshaped: Array4<f32>,
    pub sliced: Array4<f32>,
}

/// Every intermediate of one forward pass.
#[derive(Clone, Debug)]
pub struct Trace {
    pub config: Config,
    /// j − i, (Lq, Lk).
    pub distances: Array2<i64>,
    /// Table row each pair reads, (Lq, Lk); −1 where it reads a zero vector.
    pub rel_index: Array2<i64>,
    /// (1 or h, R, d_head): w^K or E_r.
    pub rel_k: Array3<f32>,
    /// (1 or h, R, d_v): w^V.
    pub rel_v: Option<Array3<f32>>,
    /// Input (b, n, d_model) and projections, (b, n, h·d_head) Q and K, (b, n, h·d_v) V.
    pub x: Array3<f32>,
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
    /// (b, h, Lq, Lk) each.
    pub content_logits: Array4<f32>,
    pub relative_logits: Array4<f32>,
    pub logits: Array4<f32>,
    pub weights: Array4<f32>,
    /// (b, h, Lq, R).
    pub value_buckets: Option<Array4<f32>>,
    pub skew: Option<SkewTrace>,
    /// DeBERTa's terms, (b, h, Lq, Lk) each, when the layer has them.
    pub c2p: Option<Array4<f32>>,
    pub p2c: Option<Array4<f32>>,
    /// Transformer-XL's BD before rel_shift (b, h, Lq, W), after it and EF (b, h, Lq, Lk), when the layer has them.
    pub bd_relative: Option<Array4<f32>>,
    pub bd: Option<Array4<f32>>,
    pub ef: Option<Array4<f32>>,
    /// (b, h, Lq, d_v) each.
    pub out_content: Array4<f32>,
    pub out_relative: Array4<f32>,
    /// RoPE's rotated Q and K, (b, h, n, d_head) each.
    pub rotated: Option<(Array4<f32>, Array4<f32>)>,
    /// RoPE's cos, sin and angles for positions 0 .. n ([`Scenario::rope_table`]).
    pub rope: Option<RopeTable>,
    /// The absolute position vectors (n, d_model) when the scenario gave a model's own.
    pub positions: Option<Array2<f32>>,
    /// (b, n): false where a key is padding (the scenario's), if any.
    pub key_mask: Option<Array2<bool>>,
    /// (h): each head's sink logit (the scenario's), if any.
    pub sinks: Option<Array1<f32>>,
    /// Heads concatenated, before W_o, (b, Lq, h·d_v).
    pub heads: Array3<f32>,
    /// (b, Lq, d_out).
    pub output: Array3<f32>,
}

/// What a backend computed for a [`Trace`]; [`Trace::assemble`] adds what follows from the inputs.
pub struct Computed {
    /// Projections, (b, n, h·d_head) Q and K, (b, n, h·d_v) V.
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
    /// (b, h, Lq, Lk) each.
    pub content_logits: Array4<f32>,
    pub relative_logits: Array4<f32>,
    pub logits: Array4<f32>,
    pub weights: Array4<f32>,
    /// (b, h, Lq, R): Shaw's value buckets, efficient implementation only.
    pub value_buckets: Option<Array4<f32>>,
    /// The Music Transformer's skew steps, efficient implementation only.
    pub skew: Option<SkewTrace>,
    /// DeBERTa's terms, (b, h, Lq, Lk) each, when the layer has them.
    pub c2p: Option<Array4<f32>>,
    pub p2c: Option<Array4<f32>>,
    /// Transformer-XL's BD before rel_shift (b, h, Lq, W), after it and EF (b, h, Lq, Lk), when the layer has them.
    pub bd_relative: Option<Array4<f32>>,
    pub bd: Option<Array4<f32>>,
    pub ef: Option<Array4<f32>>,
    /// (b, h, Lq, d_v) each.
    pub out_content: Array4<f32>,
    pub out_relative: Array4<f32>,
    /// RoPE's rotated Q and K, (b, h, n, d_head) each.
    pub rotated: Option<(Array4<f32>, Array4<f32>)>,
    /// Heads concatenated, (b, Lq, h·d_v), and the output (b, Lq, d_out).
    pub heads: Array3<f32>,
    pub output: Array3<f32>,
}

impl Trace {
    /// The trace of `computed` for `cfg` on `sc`: the CPU's and the GPU's are assembled here alike, with
    /// the distances j − i, the table rows they read, the tables and x taken from the inputs.
    pub fn assemble(cfg: &Config, sc: &Scenario, computed: Computed) -> Trace {
        let Computed {
            q,
            k,
            v,
            content_logits,
            relative_logits,
            logits,
            weights,
            value_buckets,
            skew,
            c2p,
            p2c,
            bd_relative,
            bd,
            ef,
            out_content,
            out_relative,
            rotated,
            heads,
            output,
        } = computed;
        let (_, n, _) = sc.dims();
        Trace {
            config: *cfg,
            distances: table::distances(0..n, n, n),
            rel_index: cfg.scheme().row_matrix(0..n, n, n),
            rel_k: sc.rel_k.clone(),
            rel_v: sc.rel_v.clone(),
            x: sc.x.clone(),
            q,
            k,
            v,
            content_logits,
            relative_logits,
            logits,
            weights,
            value_buckets,
            skew,
            c2p,
            p2c,
            bd_relative,
            bd,
            ef,
            out_content,
            out_relative,
            rotated,
            rope: sc.rope_table(cfg),
            positions: sc.positions.clone(),
            key_mask: sc.key_mask.clone(),
            sinks: sc.sinks.clone(),
            heads,
            output,
        }
    }
}

/// The stages a scheme computes from its tables alone, the same for every batch element (and, but for the
/// slopes' table, every head): ALiBi's slopes (h, 1) from its (h, 1, 1) table, RoPE's angles (n, d_rot/2)
/// from its table of positions 0 .. n, the absolute position vectors (n, d_model): a model's own (`positions`)
/// or the sinusoids. `None` for any other stage.
pub fn scheme_stage(
    stage: Stage,
    tables: &Array3<f32>,
    rope: Option<&RopeTable>,
    positions: Option<&Array2<f32>>,
    n: usize,
    d_model: usize,
) -> Option<Array2<f32>> {
    match stage {
        Stage::Slopes => Some(tables.index_axis(Axis(2), 0).to_owned()),
        Stage::RopeAngles => Some(rope.expect("a RoPE layer has its table").angles.clone()),
        Stage::Positions => Some(positions.cloned().unwrap_or_else(|| absolute::sinusoids(n, d_model))),
        _ => None,
    }
}

/// RoPE's relative kernel at the pairs of the query rows `queries` of n, from the layer's table of positions
/// 0 .. n: κ(j − i) at (i, j), the same curve along every diagonal ([`RopeTable::kernel`]).
pub fn rope_kernel(rope: &RopeTable, queries: std::ops::Range<usize>, n: usize, dh: usize) -> Array2<f32> {
    let kernel = rope.kernel(1 - n as isize..n as isize, dh);
    Array2::from_shape_fn((queries.len(), n), |(i, j)| kernel[j + n - 1 - (queries.start + i)])
}

/// The sink's share of each query's weight, (rows, 1): 1 − Σ_j α_ij of the weights `w` (rows, Lk) of a layer
/// with sinks, whose softmax gives the sink the rest.
pub fn sink_share(w: ArrayView2<f32>) -> Array2<f32> {
    Array2::from_shape_fn((w.nrows(), 1), |(i, _)| (1.0 - w.row(i).iter().map(|&a| a as f64).sum::<f64>()).max(0.0) as f32)
}

/// One matrix per (batch, head), batch-major then head (`h` heads), stacked into (b, h, rows, cols).
pub fn stack_heads<T>(items: &[T], h: usize, matrix: impl Fn(&T) -> &Array2<f32>) -> Array4<f32> {
    let (rows, cols) = matrix(&items[0]).dim();
    let mut out = Array4::zeros((items.len() / h, h, rows, cols));
    for (idx, item) in items.iter().enumerate() {
        out.slice_mut(s![idx / h, idx % h, .., ..]).assign(matrix(item));
    }
    out
}

impl SkewTrace {
    /// The skew steps of every (batch, head), batch-major then head (`h` heads), stacked.
    pub fn stack<T>(items: &[T], h: usize, steps: impl Fn(&T) -> &SkewSteps) -> SkewTrace {
        SkewTrace {
            qer: stack_heads(items, h, |t| &steps(t).qer),
            padded: stack_heads(items, h, |t| &steps(t).padded),
            reshaped: stack_heads(items, h, |t| &steps(t).reshaped),
            sliced: stack_heads(items, h, |t| &steps(t).sliced),
        }
    }
}

impl Trace {
    /// (b, h, n).
    pub fn dims(&self) -> (usize, usize, usize) {
        let (b, h, n, _) = self.weights.dim();
        (b, h, n)
    }

    /// The trace of head `head` alone: the per-head stages (b, 1, ·, ·), its table (1, R, ·) and its
    /// columns of `q`, `k` (b, n, d_head), `v` and `heads` (b, n, d_v); `x` and `output` stay the layer's.
    pub fn head(mut self, head: usize) -> Result<Trace> {
        let h = self.check_head(head)?;
        let one = |a: &mut Array4<f32>| *a = a.slice(ndarray::s![.., head..=head, .., ..]).to_owned();
        let table = |t: &mut Array3<f32>| *t = table_of(t, head).insert_axis(Axis(0)).to_owned();
        // A head's columns: the array's width over the heads (d_head for Q and K, d_v for V and the heads).
        let cols = |a: &mut Array3<f32>| {
            let w = a.dim().2 / h;
            *a = a.slice(ndarray::s![.., .., head * w..(head + 1) * w]).to_owned()
        };
        for a in [&mut self.content_logits, &mut self.relative_logits, &mut self.logits, &mut self.weights, &mut self.out_content, &mut self.out_relative] {
            one(a);
        }
        if let Some((q, k)) = self.rotated.as_mut() {
            one(q);
            one(k);
        }
        for b in [&mut self.value_buckets, &mut self.c2p, &mut self.p2c, &mut self.bd_relative, &mut self.bd, &mut self.ef].into_iter().flatten() {
            one(b);
        }
        if let Some(s) = self.skew.as_mut() {
            for a in [&mut s.qer, &mut s.padded, &mut s.reshaped, &mut s.sliced] {
                one(a);
            }
        }
        // ALiBi's slopes stay whole: the slopes stage shows every head's.
        if !self.config.method.has_slopes() {
            table(&mut self.rel_k);
        }
        if let Some(t) = self.rel_v.as_mut() {
            table(t);
        }
        if let Some(s) = self.sinks.as_mut() {
            *s = s.slice(ndarray::s![head..=head]).to_owned();
        }
        for a in [&mut self.q, &mut self.k, &mut self.v, &mut self.heads] {
            cols(a);
        }
        Ok(self)
    }

    /// Refuses a head beyond the trace's; returns the number of heads.
    fn check_head(&self, head: usize) -> Result<usize> {
        let (_, h, _) = self.dims();
        check_index("head", head, h)?;
        Ok(h)
    }

    /// What the page and the CLI say about a stage of this trace ([`Stage::meta`] for its layer and tables).
    pub fn meta(&self, stage: Stage) -> StageMeta {
        stage.meta_in(&self.config, self.rel_k.dim().0 > 1, self.rope.as_ref().is_some_and(|r| r.given), self.sinks.is_some())
    }

    /// The stages this trace has (skew steps only for the Music Transformer, w^V only with a^V).
    pub fn stages(&self) -> Vec<Stage> {
        self.present().stages()
    }

    fn present(&self) -> Present {
        Present {
            method: self.config.method,
            rel_v: self.rel_v.is_some(),
            value_buckets: self.value_buckets.is_some(),
            skew: self.skew.is_some(),
            sinks: self.sinks.is_some(),
            c2p: self.c2p.is_some(),
            p2c: self.p2c.is_some(),
            ef: self.ef.is_some(),
        }
    }

    /// The 2-D matrix a view shows for one batch element and head.
    pub fn stage(&self, stage: Stage, batch: usize, head: usize) -> Result<Array2<f32>> {
        self.stage_view(stage, batch, head).map(CowArray::into_owned)
    }

    /// [`Trace::stage`] without a copy where the trace holds it as f32 (every stage but the distances and the
    /// table rows, which are i64): what reading a few cells or pooling a stage needs.
    pub fn stage_view<'a>(&'a self, stage: Stage, batch: usize, head: usize) -> Result<CowArray<'a, f32, Ix2>> {
        check_index("batch index", batch, self.dims().0)?;
        self.check_head(head)?;
        self.present().check(stage)?;
        let bh = |a: &'a Array4<f32>| -> CowArray<'a, f32, Ix2> { a.index_axis(Axis(0), batch).index_axis_move(Axis(0), head).into() };
        let table = |t: &'a Array3<f32>| -> CowArray<'a, f32, Ix2> { table_of(t, head).into() };
        let skew = || self.skew.as_ref().expect("checked present");
        let rotated = || self.rotated.as_ref().expect("checked present");
        let (d, dh) = (self.x.dim().2, self.q.dim().2 / self.dims().1);
        if let Some(m) = scheme_stage(stage, &self.rel_k, self.rope.as_ref(), self.positions.as_ref(), self.dims().2, d) {
            return Ok(m.into());
        }
        if stage == Stage::RopeKernel {
            return Ok(rope_kernel(self.rope.as_ref().expect("checked present"), 0..self.dims().2, self.dims().2, dh).into());
        }
        Ok(match stage {
            Stage::Distances => self.distances.mapv(|v| v as f32).into(),
            Stage::RelIndex => self.rel_index.mapv(|v| v as f32).into(),
            Stage::RelK => table(&self.rel_k),
            Stage::Slopes | Stage::RopeAngles | Stage::RopeKernel | Stage::Positions => unreachable!("computed above"),
            Stage::RotatedQ => bh(&rotated().0),
            Stage::RotatedK => bh(&rotated().1),
            Stage::RelV => table(self.rel_v.as_ref().expect("checked present")),
            Stage::ContentLogits => bh(&self.content_logits),
            Stage::RelativeLogits => bh(&self.relative_logits),
            Stage::SkewQer => bh(&skew().qer),
            Stage::SkewPadded => bh(&skew().padded),
            Stage::SkewReshaped => bh(&skew().reshaped),
            Stage::SkewSliced => bh(&skew().sliced),
            Stage::C2p => bh(self.c2p.as_ref().expect("checked present")),
            Stage::P2c => bh(self.p2c.as_ref().expect("checked present")),
            Stage::XlBdRelative => bh(self.bd_relative.as_ref().expect("checked present")),
            Stage::XlBd => bh(self.bd.as_ref().expect("checked present")),
            Stage::XlEf => bh(self.ef.as_ref().expect("checked present")),
            Stage::Logits => bh(&self.logits),
            Stage::Weights => bh(&self.weights),
            Stage::SinkShare => sink_share(bh(&self.weights).view()).into(),
            Stage::ValueBuckets => bh(self.value_buckets.as_ref().expect("checked present")),
            Stage::OutputContent => bh(&self.out_content),
            Stage::OutputRelative => bh(&self.out_relative),
            Stage::Output => self.output.index_axis(Axis(0), batch).into(),
        })
    }

    /// The query rows of batch element `batch` that see no key ([`table::unattended_rows`]: all their keys are
    /// padding); none without a key mask.
    pub fn unattended_rows(&self, batch: usize) -> Vec<usize> {
        self.key_mask.as_ref().map_or(Vec::new(), |m| table::unattended_rows(self.config.causal, &m.row(batch).to_vec()))
    }

    /// Every array of the trace under its name: the stage names plus `x`, `q`, `k`, `v`, `heads` (the names of
    /// [`Trace::write_npz`] and of the Python package's dictionaries). The Music Transformer's table is also
    /// under `e_r`, ALiBi's as `alibi_slopes`, T5's as `t5_bias` and DeBERTa's halves as `deberta_k_r` and `deberta_q_r`; the stages a scheme computes from its
    /// options (slopes, RoPE's angles and kernel, the absolute positions) are made here.
    pub fn arrays(&self) -> Result<Vec<(&'static str, Named<'_>)>> {
        fn f(a: ArrayViewD<'_, f32>) -> Named<'_> {
            Named::F32(a.into())
        }
        let mut out = vec![("distances", Named::I64(self.distances.view().into_dyn())), ("rel_index", Named::I64(self.rel_index.view().into_dyn()))];
        out.push(("rel_k", f(self.rel_k.view().into_dyn())));
        let (logits_table, _) = self.config.method.table_names();
        if self.config.method.disentangles() {
            // DeBERTa's [K_r | Q_r] under the names a scenario file gives them.
            let dh = self.rel_k.dim().2 / 2;
            out.push((logits_table, f(self.rel_k.slice(s![.., .., ..dh]).into_dyn())));
            out.push(("deberta_q_r", f(self.rel_k.slice(s![.., .., dh..]).into_dyn())));
        } else if !logits_table.is_empty() && logits_table != "rel_k" {
            out.push((logits_table, f(self.rel_k.view().into_dyn())));
        }
        for stage in [Stage::Slopes, Stage::RopeAngles, Stage::RopeKernel, Stage::Positions].into_iter().filter(|&st| self.present().has(st)) {
            out.push((stage.name(), Named::F32(self.stage(stage, 0, 0)?.into_dyn().into())));
        }
        if let Some(t) = &self.rel_v {
            out.push(("rel_v", f(t.view().into_dyn())));
        }
        for (name, a) in [("x", &self.x), ("q", &self.q), ("k", &self.k), ("v", &self.v), ("heads", &self.heads), ("output", &self.output)] {
            out.push((name, f(a.view().into_dyn())));
        }
        // With a key mask, (b, n): 1 for the queries that see no key (weights 0, see `unattended_rows`).
        if let Some(m) = &self.key_mask {
            let mut rows = ndarray::Array2::<f32>::zeros(m.dim());
            for (b, mut row) in rows.outer_iter_mut().enumerate() {
                self.unattended_rows(b).into_iter().for_each(|i| row[i] = 1.0);
            }
            out.push(("unattended", Named::F32(rows.into_dyn().into())));
        }
        // With sinks, each head's (h) and the share each query gives it, (b, h, Lq, 1).
        if let Some(sinks) = &self.sinks {
            out.push(("sinks", f(sinks.view().into_dyn())));
            let (b, h, n) = self.dims();
            let mut share = Array4::<f32>::zeros((b, h, n, 1));
            for bi in 0..b {
                for hi in 0..h {
                    share.slice_mut(s![bi, hi, .., ..]).assign(&sink_share(self.weights.slice(s![bi, hi, .., ..])));
                }
            }
            out.push((Stage::SinkShare.name(), Named::F32(share.into_dyn().into())));
        }
        let mut four: Vec<(&'static str, &Array4<f32>)> = vec![
            ("content_logits", &self.content_logits),
            ("relative_logits", &self.relative_logits),
            ("logits", &self.logits),
            ("weights", &self.weights),
            ("output_content", &self.out_content),
            ("output_relative", &self.out_relative),
        ];
        if let Some(b) = &self.value_buckets {
            four.push(("value_buckets", b));
        }
        if let Some(s) = &self.skew {
            four.extend([("skew_qer", &s.qer), ("skew_padded", &s.padded), ("skew_reshaped", &s.reshaped), ("skew_sliced", &s.sliced)]);
        }
        if let Some((q, k)) = &self.rotated {
            four.extend([("rotated_q", q), ("rotated_k", k)]);
        }
        four.extend(
            [("c2p", &self.c2p), ("p2c", &self.p2c), ("bd_relative", &self.bd_relative), ("bd", &self.bd), ("ef", &self.ef)]
                .into_iter()
                .filter_map(|(name, a)| a.as_ref().map(|a| (name, a))),
        );
        out.extend(four.into_iter().map(|(name, a)| (name, f(a.view().into_dyn()))));
        Ok(out)
    }
}
