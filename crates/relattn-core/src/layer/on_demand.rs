//! A layer whose stages are computed when they are looked at.
//!
//! A [`crate::Trace`] keeps every stage of every (batch, head): b·h·Lq·Lk floats a stage, 2 GiB for each of them at n 8192 with 8 heads. A [`Layer`] keeps
//! what the forward pass needs and gives — the scenario, the projections Q, K, V and the output, O(b·n·d_model) — and computes the stages of one (batch, head)
//! when they are asked for, a block of query rows at a time ([`block_rows`], at most [`BLOCK`]; [`attend_rows`]: a query row's stages depend on its row of Q and on every key), in
//! O(BLOCK·n) memory:
//!
//! ```text
//! stage rows a..b of (batch, head) = attend_rows(q_h[a..b], k_h, v_h, tables)    (b − a, n) each
//! ```
//!
//! The values are those of [`crate::layer::forward::trace`] (the same staged code, tested block against whole in relattn-core's tests/equivalence.rs).

use crate::attention::{attend_blocks, attend_rows, relative_rows, Config, HeadInput, HeadTrace, Implementation};
use crate::positions::rope::RopeTable;

use crate::error::{check_index, Result};
use crate::layer::forward::{head_input, table_of, Projections};
use crate::layer::scenario::Scenario;
use crate::layer::stage_meta::{Present, StageMeta};
use crate::layer::trace::{rope_kernel, scheme_stage, sink_share};
use crate::positions::table;
use crate::stage::Stage;
use ndarray::{s, Array2, Array3, ArrayView2, CowArray, Ix2};
use std::ops::Range;

/// The most query rows computed together ([`block_rows`]).
pub const BLOCK: usize = 128;

/// The fewest query rows computed together ([`block_rows`]).
const FEWEST_ROWS: usize = 32;

/// Keys up to which a block is [`BLOCK`] query rows ([`block_rows`]).
const LARGE_BLOCKS_UP_TO: usize = 2048;

/// Query rows computed together against `keys` keys: [`BLOCK`] up to 2048 keys, [`FEWEST_ROWS`] past them, so that a
/// block's stages (each rows × keys) and the keys stay in a core's cache from their computation to their pooling.
/// The page's pool of two workers cutting a head at n 4096 at once took 1.33× less time than one worker with blocks of
/// 128 rows, 1.46× with 64 and 1.72× with 32 (1.93× at n 2048 with 128), and one worker lost nothing (2026-11-27, a
/// 2-core VM with 2 MiB of L2 a core; issue #53). DeBERTa keeps [`BLOCK`]: each block takes the product of every key
/// with its table (K·Q_rᵀ, p2c), which fewer rows a block would take more often.
pub fn block_rows(cfg: &Config, keys: usize) -> usize {
    if cfg.method.disentangles() || keys <= LARGE_BLOCKS_UP_TO {
        BLOCK
    } else {
        FEWEST_ROWS
    }
}

/// Bytes one block of a head's stages takes while [`Layer::each_block`] or [`Layer::rows`] computes it, or
/// `None` past u64. In f32s, with B = [`block_rows`], R table rows, L' the skew's width (n causal, 2n − 1
/// bidirectional) for the Music Transformer:
///
/// ```text
/// 6·B·n (content, relative, logits and their trace copies, weights) + 2·B·(R + d_h) (buckets, outputs)
///   + B·max(n, L' + 1) (the stage handed on) + Music 4·B·(L' + 1) + L'·d_h (the skew's steps, its table)
///   + materialized B·n·d_h (the gathered (B, n, d_h) table)
///   + DeBERTa and BERT relative 5·B·n + (B + n)·R (c2p, p2c, the rows each pair reads, and the products Q·K_rᵀ and K·Q_rᵀ,
///     BERT's Q·Aᵀ and K·Aᵀ)
///   + Transformer-XL 6·B·n + B·R (BD_rel (B + 1, 2n) and its block's copy, BD, EF, their sum; (Q + v) rᵀ)
/// ```
///
/// plus an eighth for the allocator.
pub fn block_bytes(cfg: &Config, n: usize, d_head: usize) -> Option<u64> {
    let u = |v: usize| v as u64;
    let (b, n, dh, r) = (u(block_rows(cfg, n).min(n.max(1))), u(n), u(d_head), u(cfg.table_rows()));
    let w = cfg.scheme().skew_columns(n)?;
    let music = if cfg.scheme().skews() { b.checked_mul(4)?.checked_mul(w + 1)?.checked_add(w.checked_mul(dh)?)? } else { 0 };
    let gathered = if cfg.implementation == Implementation::Materialized { b.checked_mul(n)?.checked_mul(dh)? } else { 0 };
    let deberta = if cfg.method.has_term_stages() { b.checked_mul(5)?.checked_mul(n)?.checked_add(b.checked_add(n)?.checked_mul(r)?)? } else { 0 };
    let xl = if cfg.method.shifts() { b.checked_mul(6)?.checked_mul(n)?.checked_add(b.checked_mul(r)?)? } else { 0 };
    let floats = b
        .checked_mul(6)?
        .checked_mul(n)?
        .checked_add(b.checked_mul(2)?.checked_mul(r.checked_add(dh)?)?)?
        .checked_add(b.checked_mul(n.max(w + 1))?)?
        .checked_add(music)?
        .checked_add(gathered)?
        .checked_add(deberta)?
        .checked_add(xl)?;
    let bytes = floats.checked_mul(4)?;
    bytes.checked_add(bytes / 8)
}

/// Bytes a [`Layer`] of these sizes needs beside its forward pass to give one whole stage of one (batch, head):
/// the stage ([`largest_stage_floats`]) and one block of a head's work arrays ([`block_bytes`]); `None` past u64.
pub fn stage_work_bytes(cfg: &Config, sizes: &crate::layer::forward::Sizes) -> Option<u64> {
    let stage = largest_stage_floats(cfg, sizes.n, sizes.d_model)?.checked_mul(4)?;
    stage.checked_add(block_bytes(cfg, sizes.n, sizes.d_model / cfg.heads.max(1))?)
}

/// The most floats one stage of a layer of `cfg` holds, or `None` past u64: (n + 1) × the widest of 2n (a
/// Music layer's skew is (n + 1) × (2n − 1) unmasked), R and d_model — what [`Layer::stage`] adds to the layer.
pub fn largest_stage_floats(cfg: &Config, n: usize, d_model: usize) -> Option<u64> {
    let widest = (n as u64).checked_mul(2)?.max(cfg.table_rows() as u64).max(d_model as u64);
    (n as u64).checked_add(1)?.checked_mul(widest)
}

/// A layer's inputs, projections and output, from which any (batch, head)'s stages are computed.
pub struct Layer {
    pub config: Config,
    pub scenario: Scenario,
    pub projections: Projections,
    /// (b, n, d_model)
    pub output: Array3<f32>,
    present: Present,
    /// RoPE's cos and sin, once for every head.
    rope: Option<RopeTable>,
}

impl Layer {
    /// The layer of `cfg` on `sc`, with the projections and the output its forward pass computed.
    pub fn new(cfg: &Config, scenario: Scenario, projections: Projections, output: Array3<f32>) -> Result<Layer> {
        let rope = scenario.rope_table(cfg);
        let present = Present { method: cfg.method, rel_v: false, value_buckets: false, skew: false, sinks: false, c2p: false, p2c: false, ef: false };
        let mut layer = Layer { config: *cfg, scenario, projections, output, present, rope };
        // The optional stages are the ones the staged path computes (one query row tells).
        let mut probe = HeadTrace::default();
        attend_rows(cfg, &layer.head_input(0, 0), 0..1, &mut probe)?;
        layer.present = Present {
            method: cfg.method,
            rel_v: layer.scenario.rel_v.is_some(),
            value_buckets: probe.value_buckets.is_some(),
            skew: probe.skew.is_some(),
            sinks: layer.scenario.sinks.is_some(),
            c2p: probe.c2p.is_some(),
            p2c: probe.p2c.is_some(),
            ef: probe.ef.is_some(),
        };
        Ok(layer)
    }

    /// RoPE's cos and sin of positions 0 .. n (the options', or the scenario's own), for a RoPE layer.
    pub fn rope_table(&self) -> Option<&RopeTable> {
        self.rope.as_ref()
    }

    /// (b, h, n).
    pub fn dims(&self) -> (usize, usize, usize) {
        let (b, n, _) = self.scenario.dims();
        (b, self.config.heads, n)
    }

    /// The stages this layer has, in pipeline order (those of its whole trace).
    pub fn stages(&self) -> Vec<Stage> {
        self.present.stages()
    }

    /// What the page and the CLI say about a stage of this layer ([`Stage::meta`]).
    pub fn meta(&self, stage: Stage) -> StageMeta {
        stage.meta_in(&self.config, self.scenario.rel_k.dim().0 > 1, self.rope.as_ref().is_some_and(|r| r.given), self.scenario.sinks.is_some())
    }

    /// The (rows, cols) of a stage of one (batch, head).
    pub fn shape(&self, stage: Stage) -> (usize, usize) {
        let (_, _, n) = self.dims();
        let d = self.scenario.dims().2;
        let (rows, l) = (self.config.table_rows(), if self.config.causal { n } else { 2 * n - 1 });
        let (d_head, d_v) = (self.scenario.d_head, self.scenario.d_v);
        match stage {
            Stage::RelK => (rows, self.config.scheme().table_width(d_head)),
            Stage::RelV => (rows, d_v),
            Stage::Slopes => (self.config.heads, 1),
            Stage::RopeAngles => (n, self.config.rope.rotated_dims(d_head) / 2),
            Stage::RotatedQ | Stage::RotatedK => (n, d_head),
            Stage::Positions => (n, d),
            Stage::SkewQer => (n, l),
            Stage::SkewPadded => (n, l + 1),
            Stage::SkewReshaped => (n + 1, l),
            Stage::XlBdRelative => (n, crate::positions::transformer_xl::width(n, n, self.config.causal)),
            Stage::ValueBuckets => (n, rows),
            Stage::SinkShare => (n, 1),
            Stage::OutputContent | Stage::OutputRelative => (n, d_v),
            Stage::Output => (n, self.scenario.d_out()),
            _ => (n, n),
        }
    }

    /// Rows `rows` of a stage of (batch, head) (a table's rows are its own, not queries' ones; the skew's
    /// reshaped buffer has n + 1 rows). Errors name "batch index", "head", "stage" or "rows".
    pub fn rows(&self, stage: Stage, batch: usize, head: usize, rows: Range<usize>) -> Result<Array2<f32>> {
        let (b, h, n) = self.dims();
        check_index("batch index", batch, b)?;
        check_index("head", head, h)?;
        self.present.check(stage)?;
        let (total, _) = self.shape(stage);
        if rows.start >= rows.end || rows.end > total {
            return Err(crate::error::Error::invalid("rows", format!("{}..{}", rows.start, rows.end), format!("a non-empty range within 0..{total}")));
        }
        if matches!(stage, Stage::RelK | Stage::RelV) {
            return Ok(self.table(stage, head).slice(s![rows, ..]).to_owned());
        }
        if let Some(m) = self.scheme_stage(stage) {
            return Ok(m.slice(s![rows, ..]).to_owned());
        }
        if stage == Stage::RelativeLogits {
            // The relative term alone, not the whole head's rows.
            return relative_rows(&self.config, &self.head_input(batch, head), rows);
        }
        // The reshaped buffer's rows a..=b come with the queries a..b (its last row with the last query).
        let queries = if stage == Stage::SkewReshaped { rows.start.min(n - 1)..rows.end.min(n) } else { rows.clone() };
        let block = self.block(stage, batch, head, queries.clone())?;
        let first = rows.start - queries.start;
        Ok(block.slice(s![first..first + rows.len(), ..]).to_owned())
    }

    /// A whole stage of (batch, head), gathered from [`Layer::each_block`]: O(BLOCK·n) work memory beside it.
    pub fn stage(&self, stage: Stage, batch: usize, head: usize) -> Result<Array2<f32>> {
        self.present.check(stage)?;
        let k = self.stages().iter().position(|&s| s == stage).expect("checked present");
        let mut out = Array2::zeros(self.shape(stage));
        self.each_block(batch, head, |i, first, part| {
            if i == k {
                out.slice_mut(s![first..first + part.nrows(), ..]).assign(&part);
            }
        })?;
        Ok(out)
    }

    /// Every stage of (batch, head) row by row, [`block_rows`] query rows at a time: `f(k, first, part)` gets
    /// rows `first..first + part.nrows()` of stage `self.stages()[k]`, each row once, in order (a table at
    /// once, with the first block).
    pub fn each_block(&self, batch: usize, head: usize, f: impl FnMut(usize, usize, ArrayView2<f32>)) -> Result<()> {
        self.each_block_in(batch, head, 0..self.dims().2, f)
    }

    /// [`Layer::each_block`] for the query rows `queries` alone (a share of a pool of workers): `queries.start`
    /// a multiple of [`Layer::block_rows`] (so its blocks are the whole head's), the tables given when it is 0, and the skew's
    /// reshaped buffer's last row with the layer's last query.
    pub fn each_block_in(&self, batch: usize, head: usize, queries: Range<usize>, f: impl FnMut(usize, usize, ArrayView2<f32>)) -> Result<()> {
        self.each_block_by(batch, head, queries, self.block_rows(), f)
    }

    /// [`Layer::each_block_in`] by blocks of `block` query rows.
    fn each_block_by(&self, batch: usize, head: usize, queries: Range<usize>, block: usize, mut f: impl FnMut(usize, usize, ArrayView2<f32>)) -> Result<()> {
        let (b, h, n) = self.dims();
        check_index("batch index", batch, b)?;
        check_index("head", head, h)?;
        let stages = self.stages();
        attend_blocks(&self.config, &self.head_input(batch, head), queries, block, |queries, trace| {
            let a = queries.start;
            for (k, &stage) in stages.iter().enumerate() {
                match stage {
                    Stage::RelK | Stage::RelV if a == 0 => f(k, 0, self.table(stage, head)),
                    Stage::RelK | Stage::RelV => {}
                    Stage::Slopes | Stage::RopeAngles | Stage::Positions if a == 0 => f(k, 0, self.scheme_stage(stage).expect("a scheme stage").view()),
                    Stage::Slopes | Stage::RopeAngles | Stage::Positions => {}
                    _ => {
                        let m = self.of_block(stage, batch, queries.clone(), trace);
                        // The reshaped buffer's rows a..=b: the next block gives row b, except after the last one.
                        let keep = if stage == Stage::SkewReshaped && queries.end < n { m.nrows() - 1 } else { m.nrows() };
                        f(k, a, m.slice(s![..keep, ..]));
                    }
                }
            }
            Ok(())
        })
    }

    /// The (rows, ·) block of a stage computed from query rows `queries` (the reshaped buffer's rows
    /// `queries.start..=queries.end`).
    fn block(&self, stage: Stage, batch: usize, head: usize, queries: Range<usize>) -> Result<Array2<f32>> {
        let mut trace = HeadTrace::default();
        if !matches!(stage, Stage::Distances | Stage::RelIndex | Stage::RopeKernel | Stage::Output) {
            attend_rows(&self.config, &self.head_input(batch, head), queries.clone(), &mut trace)?;
        }
        Ok(self.of_block(stage, batch, queries, &trace).into_owned())
    }

    /// A stage's rows for the query rows `queries`: a view of their [`HeadTrace`] (for the stages of a head)
    /// or of the layer's output, computed for the distances and table rows.
    fn of_block<'a>(&'a self, stage: Stage, batch: usize, queries: Range<usize>, t: &'a HeadTrace) -> CowArray<'a, f32, Ix2> {
        let (_, _, n) = self.dims();
        let skew = || t.skew.as_ref().expect("present");
        match stage {
            Stage::Distances => table::by_distance(queries, n, n, |d| d as f32).into(),
            Stage::RelIndex => {
                let scheme = self.config.scheme();
                table::by_distance(queries, n, n, |d| scheme.row(d).map_or(-1.0, |r| r as f32)).into()
            }
            Stage::Output => self.output.slice(s![batch, queries, ..]).into(),
            Stage::RopeKernel => rope_kernel(self.rope.as_ref().expect("present"), queries, n, self.scenario.d_head).into(),
            Stage::RelK | Stage::RelV | Stage::Slopes | Stage::RopeAngles | Stage::Positions => unreachable!("tables are not computed in blocks"),
            Stage::RotatedQ => t.rotated.as_ref().expect("present").0.view().into(),
            Stage::RotatedK => t.rotated.as_ref().expect("present").1.slice(s![queries, ..]).into(),
            Stage::ContentLogits => t.content_logits.view().into(),
            Stage::RelativeLogits => t.relative_logits.view().into(),
            Stage::SkewQer => skew().qer.view().into(),
            Stage::SkewPadded => skew().padded.view().into(),
            Stage::SkewReshaped => skew().reshaped.view().into(),
            Stage::SkewSliced => skew().sliced.view().into(),
            Stage::C2p => t.c2p.as_ref().expect("present").view().into(),
            Stage::P2c => t.p2c.as_ref().expect("present").view().into(),
            Stage::XlBdRelative => t.bd_relative.as_ref().expect("present").view().into(),
            Stage::XlBd => t.bd.as_ref().expect("present").view().into(),
            Stage::XlEf => t.ef.as_ref().expect("present").view().into(),
            Stage::Logits => t.logits.view().into(),
            Stage::Weights => t.weights.view().into(),
            Stage::SinkShare => sink_share(t.weights.view()).into(),
            Stage::ValueBuckets => t.value_buckets.as_ref().expect("present").view().into(),
            Stage::OutputContent => t.out_content.view().into(),
            Stage::OutputRelative => t.out_relative.view().into(),
        }
    }

    /// A stage the scheme computes from its options and tables alone ([`scheme_stage`]).
    fn scheme_stage(&self, stage: Stage) -> Option<Array2<f32>> {
        let (_, _, n) = self.dims();
        scheme_stage(stage, &self.scenario.rel_k, self.rope.as_ref(), self.scenario.positions.as_ref(), n, self.scenario.dims().2)
    }

    /// Table w^K (or E_r) or w^V of `head`, (R, d_head).
    fn table(&self, stage: Stage, head: usize) -> ArrayView2<'_, f32> {
        let t = if stage == Stage::RelK { &self.scenario.rel_k } else { self.scenario.rel_v.as_ref().expect("present") };
        table_of(t, head)
    }

    /// The query rows its stages are computed together by ([`block_rows`] of its keys).
    pub fn block_rows(&self) -> usize {
        block_rows(&self.config, self.dims().2)
    }

    /// Head `head` of batch element `batch`: its columns of Q, K, V, its tables, its key mask.
    fn head_input(&self, batch: usize, head: usize) -> HeadInput<'_> {
        head_input(&self.scenario, &self.projections, self.rope.as_ref(), batch, head)
    }
}

/// One head's query rows a block ([`block_rows`]) at a time, traced by [`attend_blocks`] (as [`Layer::each_block`]
/// reads them): `f(rows, trace)` gets every row once, in order; a cancel request ([`crate::core::cancel`]) stops it
/// between blocks. What the atlas ([`crate::atlas`]) reads a head by, in O(BLOCK·n) memory.
pub fn each_traced_block(cfg: &Config, input: &HeadInput, f: impl FnMut(Range<usize>, &HeadTrace) -> Result<()>) -> Result<()> {
    attend_blocks(cfg, input, 0..input.q.nrows(), block_rows(cfg, input.k.nrows()), f)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::layer::forward;
    use crate::layer::scenario::{Arrays, Spec};
    use crate::positions::Method;

    /// Every stage of every (batch, head), gathered from [`Layer::each_block`] and cut by [`Layer::rows`],
    /// equals the whole trace's, for lengths across blocks, both methods, both masks, a^V, per-head tables
    /// and a key mask; the shapes are the trace's. RoPE's layer has heads of 6 in a width of 8 (a model's own
    /// head_dim), a window, a cap and sinks.
    #[test]
    fn stages_on_demand_equal_the_whole_trace() {
        let cases = [
            (Method::Shaw, false, true, 300),
            (Method::Shaw, true, false, 129),
            (Method::Music, true, false, 257),
            (Method::Music, false, false, 130),
            (Method::Rope, true, false, 140),
            (Method::Deberta, false, false, 150),
            (Method::TransformerXl, true, false, 150),
            (Method::TransformerXl, false, false, 131),
        ];
        for (method, causal, rel_v, n) in cases {
            // DeBERTa's buckets reach past the blocks: exact to ±4, log-spaced to 40, clamped beyond.
            let deberta = crate::positions::deberta::Deberta { position_buckets: 8, max_relative_positions: 40, ..Default::default() };
            // Transformer-XL with two segments: EF as well as BD, BD_rel's rows read one past a block's (causal).
            let xl = crate::positions::transformer_xl::TransformerXl { segments: 2 };
            let cfg = Config { method, heads: 2, clip: 5, causal, rel_v, implementation: Implementation::Efficient, deberta, xl, ..Config::default() };
            let mut given = Arrays::new();
            given.insert("key_mask".into(), ndarray::Array2::from_shape_fn((2, n), |(b, j)| ((b + j) % 7 != 3) as u8 as f32).into_dyn());
            let cfg = if method == Method::Rope {
                given.insert("w_q".into(), ndarray::Array2::from_shape_fn((8, 12), |(r, c)| ((r * 5 + c * 3) % 7) as f32 / 7.0 - 0.4).into_dyn());
                given.insert("sinks".into(), ndarray::arr1(&[0.5f32, -1.0]).into_dyn());
                Config { window: Some(9), softcap: Some(3.0), ..cfg }
            } else {
                cfg
            };
            let sc = Scenario::build(&cfg, &Spec { n, d_model: 8, batch: 2, seed: 3 }, given, true).unwrap();
            let whole = forward::trace(&cfg, &sc).unwrap();
            let (p, output) = forward::forward_projected(&cfg, &sc).unwrap();
            let layer = Layer::new(&cfg, sc, p, output).unwrap();
            assert_eq!(layer.stages(), whole.stages(), "{method:?} causal {causal}");
            let close =
                |a: &Array2<f32>, b: &Array2<f32>| a.dim() == b.dim() && a.iter().zip(b).all(|(x, y)| x == y || (x - y).abs() <= 1e-5 * y.abs().max(1.0));
            for batch in 0..2 {
                for head in 0..2 {
                    let stages = layer.stages();
                    let mut gathered: Vec<Array2<f32>> = stages.iter().map(|&s| Array2::from_elem(layer.shape(s), f32::NAN)).collect();
                    layer.each_block(batch, head, |k, first, part| gathered[k].slice_mut(s![first..first + part.nrows(), ..]).assign(&part)).unwrap();
                    for (k, &stage) in stages.iter().enumerate() {
                        let want = whole.stage(stage, batch, head).unwrap();
                        assert!(close(&gathered[k], &want), "{method:?} causal {causal} b{batch} h{head} {stage}: blocks differ");
                        let (rows, _) = want.dim();
                        for r in [0..rows, rows / 2..rows / 2 + 1, rows - 1..rows] {
                            let got = layer.rows(stage, batch, head, r.clone()).unwrap();
                            assert!(close(&got, &want.slice(s![r.clone(), ..]).to_owned()), "{method:?} causal {causal} {stage} rows {r:?}");
                        }
                    }
                }
            }
            assert_eq!(layer.rows(Stage::Weights, 0, 0, 0..n + 1).unwrap_err().field(), "rows");
            assert_eq!(layer.rows(Stage::Weights, 2, 0, 0..1).unwrap_err().field(), "batch index");
        }
    }

    /// A layer of `cfg` held on demand: n positions, d_model 8, one batch element, generated from `seed`.
    fn small_layer(cfg: &Config, n: usize, seed: u64) -> Layer {
        let sc = Scenario::build(cfg, &Spec { n, d_model: 8, batch: 1, seed }, Arrays::new(), true).unwrap();
        let (p, output) = forward::forward_projected(cfg, &sc).unwrap();
        Layer::new(cfg, sc, p, output).unwrap()
    }

    /// [`Layer::rows`] of the relative logits (the relative term alone, [`relative_rows`]) are what the whole
    /// head's rows give ([`attend_rows`]'s trace) bit for bit, for every scheme with a relative term, both masks;
    /// and the rows of its blocks, but for DeBERTa's (whose p2c takes another path in blocks of one row).
    #[test]
    fn relative_rows_alone_are_the_heads_rows() {
        for method in Method::ALL.into_iter().filter(|m| m.has_relative_term()) {
            for causal in [false, true] {
                let (cfg, n) = (Config { method, heads: 2, clip: 5, causal, ..Config::default() }, 140);
                let layer = small_layer(&cfg, n, 7);
                let k = layer.stages().iter().position(|&st| st == Stage::RelativeLogits).expect("a relative term's stage");
                let mut whole = Array2::from_elem(layer.shape(Stage::RelativeLogits), f32::NAN);
                layer
                    .each_block(0, 1, |i, first, part| {
                        if i == k {
                            whole.slice_mut(s![first..first + part.nrows(), ..]).assign(&part)
                        }
                    })
                    .unwrap();
                let same = |a: &Array2<f32>, b: ArrayView2<f32>| a.dim() == b.dim() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                for r in [0..1, 70..73, n - 1..n] {
                    let got = layer.rows(Stage::RelativeLogits, 0, 1, r.clone()).unwrap();
                    let mut trace = HeadTrace::default();
                    attend_rows(&cfg, &layer.head_input(0, 1), r.clone(), &mut trace).unwrap();
                    assert!(same(&got, trace.relative_logits.view()), "{method:?} causal {causal} rows {r:?}: the whole rows' term");
                    assert!(method.disentangles() || same(&got, whole.slice(s![r.clone(), ..])), "{method:?} causal {causal} rows {r:?}: the blocks'");
                }
            }
        }
    }

    /// Blocks of 32 query rows (what [`block_rows`] takes past 2048 keys) give every stage bit for bit as blocks
    /// of [`BLOCK`] do, for every scheme whose blocks [`block_rows`] varies, both masks (a short last block; the
    /// skew's reshaped rows across blocks); and [`block_rows`] is [`BLOCK`] up to 2048 keys, 32 past them,
    /// DeBERTa's always [`BLOCK`] (its p2c takes another path, a dot a cell, in blocks of fewer rows than a
    /// quarter of its table's: the same numbers to rounding, not bit for bit).
    #[test]
    fn blocks_of_any_size_give_the_same_stages() {
        for method in Method::ALL.into_iter().filter(|m| !m.disentangles()) {
            for causal in [false, true] {
                let (cfg, n) = (Config { method, heads: 2, clip: 5, causal, ..Config::default() }, 300);
                let layer = small_layer(&cfg, n, 5);
                let gather = |block: usize| {
                    let mut gathered: Vec<Array2<f32>> = layer.stages().iter().map(|&s| Array2::from_elem(layer.shape(s), f32::NAN)).collect();
                    layer.each_block_by(0, 1, 0..n, block, |k, first, part| gathered[k].slice_mut(s![first..first + part.nrows(), ..]).assign(&part)).unwrap();
                    gathered
                };
                let (small, large) = (gather(FEWEST_ROWS), gather(BLOCK));
                for (k, stage) in layer.stages().iter().enumerate() {
                    let same = small[k].iter().zip(&large[k]).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{method:?} causal {causal} {stage}: blocks of {FEWEST_ROWS} against {BLOCK}");
                }
            }
        }
        let shaw = Config::default();
        assert_eq!([1, 2048, 4096, 8192, 20000].map(|keys| block_rows(&shaw, keys)), [BLOCK, BLOCK, 32, 32, 32]);
        assert_eq!(block_rows(&Config { method: Method::Deberta, ..shaw }, 8192), BLOCK);
    }
}
