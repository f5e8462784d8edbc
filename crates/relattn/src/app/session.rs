//! A computed layer, held in the worker's memory: [`Session::info`] describes it (one serde struct),
//! [`Session::cut`] cuts the stages of one (batch, head) (the page reads the selected one's values and pixels
//! without a copy), and [`Session::read_cells`] reads exact values of a stage too large to send whole. The
//! layer is a whole trace when it fits [`super::request::WHOLE_LIMIT`], else a [`Layer`] whose (batch, head)
//! selected is computed when selected. [`compute`] makes one from a [`Request`].

use super::request::{Holding, Inputs};
use super::Runner;
use crate::files::capture::CaptureInfo;
use crate::options::LayerOptions;
use crate::pictures::{self, Body, Picture};
use crate::protocol::{BackendUsed, Cut, HeadScale, Info, PictureView, Request, Shown, Timing};
use crate::render::{Palette, Pooler};
use ndarray::{s, Array2, ArrayView2};
use relattn_core::attention::Config;
use relattn_core::error::Result;
use relattn_core::error::{check_index, Error};
use relattn_core::layer::on_demand::Layer;
use relattn_core::layer::presets;
use relattn_core::layer::stage_meta::StageMeta;
use relattn_core::layer::trace::Trace;
use relattn_core::positions::table;
use relattn_core::positions::table::Reach;
use relattn_core::stage::{Scale, Stage};
use relattn_core::timing::{now_ms, StageTimes};
use std::ops::Range;

impl Info {
    fn new(
        cfg: &Config,
        inputs: &Inputs,
        (b, n, d_model): (usize, usize, usize),
        stages: Vec<StageMeta>,
        backend: BackendUsed,
        stage_times: Option<&StageTimes>,
        on_demand: bool,
    ) -> Info {
        let preset_description = if inputs.preset.is_empty() { "" } else { presets::preset(&inputs.preset).map(|p| p.description).unwrap_or("") };
        let spec = relattn_core::layer::scenario::Spec { n, batch: b, d_model, ..inputs.spec };
        Info {
            preset: inputs.preset.clone(),
            preset_description: preset_description.into(),
            options: LayerOptions::of(cfg, &spec, inputs.per_head),
            tokens: inputs.tokens.clone(),
            capture: inputs.capture.clone(),
            capture_title: inputs.capture.as_ref().map_or(String::new(), CaptureInfo::title),
            heading: inputs.capture.as_ref().map_or(cfg.method.label().to_string(), CaptureInfo::title),
            stated: String::new(),
            stages,
            pair: cfg.method.pair_labels(cfg.clip),
            backend,
            stage_times: stage_times.map_or(Vec::new(), |t| t.named().into_iter().map(|(name, ms)| Timing { name: name.into(), ms }).collect()),
            on_demand,
            unattended: Vec::new(),
        }
    }
    /// The same info saying, for each batch element, which query rows see no key ([`table::unattended_rows`]).
    fn with_unattended_rows(self, cfg: &Config, key_mask: Option<&Array2<bool>>) -> Info {
        let notes = |m: &Array2<bool>| m.outer_iter().map(|row| table::unattended_note(&table::unattended_rows(cfg.causal, &row.to_vec()))).collect();
        Info { unattended: key_mask.map_or(Vec::new(), notes), ..self }
    }
}

/// The most pixels a side of a stage's raster: larger stages are pooled ([`render::Pooler`]); the tooltip
/// reads the exact cell ([`Session::cells`]).
pub const RASTER_SIDE: usize = 512;

/// The most cells of a stage whose values come with its raster ([`Session::select`]), and the most cells
/// one [`Session::cells`] reads: 1024 × 1024 (4 MiB). Larger stages send their raster alone; the page asks
/// for the cells it shows in numbers (a tooltip, a zoomed window).
pub const VALUES_CELLS: usize = 1 << 20;

/// What a session cuts its stages from (one session a worker: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Source {
    /// Every stage of every (batch, head), computed at once (on the GPU when it computes): the page's traces
    /// that fit [`super::request::WHOLE_LIMIT`] and the Model mode's layers.
    Whole(Trace),
    /// The layer ([`Layer`]): the stages of the (batch, head) selected are computed when it is selected, a
    /// block of query rows at a time, on the CPU.
    OnDemand(Layer),
}

/// A cut made: the [`Cut`], its values (empty when not `has_values`) and its pixels.
pub struct Made {
    pub cut: Cut,
    pub values: Vec<f32>,
    pub rgba: Vec<u8>,
}

/// The cells of a (query i, key j) stage that get no weight: keys after the query in a causal layer, and
/// padded keys (false in the batch element's key mask).
#[derive(Clone, Debug, PartialEq)]
pub struct CellMask {
    /// The causal mask and the window.
    pub reach: Reach,
    pub keys: Option<Vec<bool>>,
}

impl CellMask {
    pub fn masked(&self, i: usize, j: usize) -> bool {
        !self.reach.sees(i, j) || self.keys.as_ref().is_some_and(|k| !k[j])
    }

    /// Rows `first..first + m.nrows()` of a stage as they are coloured: the masked cells as masked logits are,
    /// −∞, which the colours grey and the colour range skips.
    fn shown(&self, first: usize, m: ArrayView2<f32>) -> ndarray::Array2<f32> {
        ndarray::Array2::from_shape_fn(m.dim(), |(r, j)| if self.masked(first + r, j) { f32::NEG_INFINITY } else { m[[r, j]] })
    }
}

/// One stage of a (batch, head) being cut, from its rows in order: pooled, and its values kept when they are at
/// most [`VALUES_CELLS`]; the cells a [`CellMask`] masks are coloured grey and left out of the colour range
/// (their values are kept as they are).
pub struct Cutting {
    dim: (usize, usize),
    pooler: Pooler,
    values: Option<Vec<f32>>,
    mask: Option<CellMask>,
}

impl Cutting {
    pub fn new(scale: Scale, dim: (usize, usize)) -> Cutting {
        let values = (dim.0 * dim.1 <= VALUES_CELLS).then(|| Vec::with_capacity(dim.0 * dim.1));
        Cutting { dim, pooler: Pooler::new(dim, scale, RASTER_SIDE), values, mask: None }
    }

    /// The same cut with `mask`'s cells greyed.
    pub fn masked(self, mask: Option<CellMask>) -> Cutting {
        Cutting { mask, ..self }
    }

    /// Rows `first..first + m.nrows()`.
    pub fn add(&mut self, first: usize, m: ArrayView2<f32>) {
        match &self.mask {
            Some(mask) => self.pooler.add(mask.shown(first, m).view(), first),
            None => self.pooler.add(m, first),
        }
        if let Some(v) = self.values.as_mut() {
            v.extend(m.iter().copied());
        }
    }

    /// What this cut has taken, to be merged into the whole stage's cut ([`Cutting::merge`]): a pool's share.
    pub fn into_part(self) -> CutPart {
        let (pooled, first_row, bounds) = self.pooler.part();
        CutPart { pooled: pooled.iter().copied().collect(), first_row, bounds, values: self.values }
    }

    /// Adds the [`CutPart`] of a share whose rows come after every row this cut has (shares are merged in
    /// row order): the same cut as one that took every row itself. A part of another shape is refused.
    pub fn merge(&mut self, part: CutPart) -> Result<()> {
        let (rows, cols) = self.pooler.dim();
        let given = part.pooled.len() / cols.max(1);
        if cols == 0 || part.pooled.len() != given * cols || part.first_row + given > rows {
            let what = format!("{} pooled cells from row {}", part.pooled.len(), part.first_row);
            return Err(Error::invalid("part", what, format!("whole rows of {cols} cells within {rows} rows")));
        }
        let pooled = ndarray::ArrayView2::from_shape((given, cols), &part.pooled).expect("whole rows, checked");
        self.pooler.merge(pooled, part.first_row, part.bounds);
        if let (Some(v), Some(more)) = (self.values.as_mut(), part.values) {
            v.extend(more);
        }
        Ok(())
    }

    pub fn finish(self, palette: Palette) -> Made {
        self.finish_over(palette, None, false)
    }

    /// [`Cutting::finish`] over `range` when given (every head's), else over its own values' range;
    /// `own_scale`: [`Cut::own_scale`].
    fn finish_over(self, palette: Palette, range: Option<(f32, f32)>, own_scale: bool) -> Made {
        let (rgba, (raster_rows, raster_cols), (lo, hi)) = match range {
            Some(r) => self.pooler.rgba_over(palette, r),
            None => self.pooler.rgba(palette),
        };
        let (rows, cols) = self.dim;
        let cut = Cut { rows, cols, raster_rows, raster_cols, lo, hi, has_values: self.values.is_some(), heads_shared: range.is_some(), own_scale };
        Made { cut, values: self.values.unwrap_or_default(), rgba }
    }
}

/// A share of a stage's cut, made by one worker of a pool from its query rows ([`Cutting::into_part`]): the pooled
/// rows its rows fall in (−∞ where they give none), the least and greatest finite value of its rows, and those
/// rows' values when the stage comes with its values.
#[derive(Clone, Debug, PartialEq)]
pub struct CutPart {
    /// The pooled rows its rows fall in, from pooled row `first_row` (row-major, the raster's columns wide).
    pub pooled: Vec<f32>,
    pub first_row: usize,
    pub bounds: (f32, f32),
    pub values: Option<Vec<f32>>,
}

/// The cells of `stage` of batch element `batch` that get no weight in a layer of `cfg` with key mask `keys`, when
/// the stage's cells are pairs the mask applies to and the layer masks some (causal, a window, or padded keys).
fn cell_mask(cfg: &Config, keys: Option<&Array2<bool>>, stage: Stage, batch: usize) -> Option<CellMask> {
    let reach = cfg.reach();
    let masks = reach.causal || reach.window.is_some() || keys.is_some();
    (stage.masked_when_causal() && masks).then(|| CellMask { reach, keys: keys.map(|k| k.row(batch).to_vec()) })
}

/// An empty cut of every stage of a layer held on demand, for batch element `batch`: what [`Layer::each_block`]
/// (or [`Layer::each_block_in`], a pool's share) fills.
pub fn layer_cuttings(l: &Layer, batch: usize) -> Vec<Cutting> {
    l.stages()
        .iter()
        .map(|&stage| Cutting::new(stage.scale(), l.shape(stage)).masked(cell_mask(&l.config, l.scenario.key_mask.as_ref(), stage, batch)))
        .collect()
}

/// The cuts of a (batch, head) of a layer held on demand being gathered from a pool's shares ([`Session::begin_parts`]).
struct Parts {
    batch: usize,
    head: usize,
    cuttings: Vec<Cutting>,
}

/// ALiBi's and T5's term and T5's table: stages whose heads differ by design (steep and flat slopes).
fn is_bias(stage: Stage, cfg: &Config) -> bool {
    (stage == Stage::RelativeLogits && cfg.method.adds_distance_bias()) || (stage == Stage::RelK && cfg.method.buckets())
}

/// A picture as the page gets it: a heatmap cut and coloured as a stage, or curves with an empty cut.
fn picture_view(picture: Picture, palette: Palette) -> PictureView {
    let Picture { meta, body } = picture;
    match body {
        Body::Heatmap { values, x_labels, y_labels } => {
            let mut cutting = Cutting::new(meta.scale, values.dim());
            cutting.add(0, values.view());
            let Made { cut, values, rgba } = cutting.finish(palette);
            let values = cut.has_values.then_some(values);
            PictureView { meta, cut, x_labels, y_labels, chart: None, values, rgba }
        }
        Body::Curves(chart) => {
            let cut = Cut { rows: 0, cols: 0, raster_rows: 0, raster_cols: 0, lo: 0.0, hi: 0.0, has_values: false, heads_shared: false, own_scale: false };
            PictureView { meta, cut, x_labels: Vec::new(), y_labels: Vec::new(), chart: Some(chart), values: None, rgba: Vec::new() }
        }
    }
}

/// The (batch, head) selected and every stage of it, cut together (on demand, one pass over its blocks) and
/// coloured with `palette`.
struct ShownCuts {
    batch: usize,
    head: usize,
    palette: Palette,
    cuts: Vec<Made>,
    /// The stage the pointers give.
    selected: usize,
}

/// One computed layer and the (batch, head) selected.
pub struct Session {
    source: Source,
    stages: Vec<Stage>,
    info: Info,
    shown: Option<ShownCuts>,
    /// Which stages share one colour range across heads.
    head_scale: HeadScale,
    /// Building the scenario, computing the layer, and cutting the stages of each (batch, head) selected.
    timings: Vec<Timing>,
    /// The cuts of a (batch, head) a pool's workers are making, merged as their shares come.
    parts: Option<Parts>,
}

impl Session {
    /// A session around a trace computed whole on either backend.
    pub fn whole(trace: Trace, inputs: &Inputs, timings: Vec<Timing>, backend: BackendUsed, stage_times: &StageTimes) -> Session {
        let stages = trace.stages();
        let metas = stages.iter().map(|&s| trace.meta(s)).collect();
        let (b, _, n) = trace.dims();
        let d_model = trace.x.dim().2;
        let info = Info::new(&trace.config, inputs, (b, n, d_model), metas, backend, Some(stage_times), false)
            .with_unattended_rows(&trace.config, trace.key_mask.as_ref());
        Session::stating(Session { source: Source::Whole(trace), stages, info, shown: None, head_scale: HeadScale::default(), timings, parts: None })
    }

    /// A session around a layer whose stages are computed when selected (its forward ran fused: no stage times).
    pub fn on_demand(layer: Layer, inputs: &Inputs, timings: Vec<Timing>, backend: BackendUsed) -> Session {
        let stages = layer.stages();
        let metas = stages.iter().map(|&s| layer.meta(s)).collect();
        let info = Info::new(&layer.config, inputs, layer.scenario.dims(), metas, backend, None, true)
            .with_unattended_rows(&layer.config, layer.scenario.key_mask.as_ref());
        Session::stating(Session { source: Source::OnDemand(layer), stages, info, shown: None, head_scale: HeadScale::default(), timings, parts: None })
    }

    /// The session of a trained model's layer, named in its figures, slides and exports as a captured layer is:
    /// `title` ("Music Transformer chorale model, layer 1") as its [`Info::capture_title`] and [`Info::heading`].
    pub fn titled(mut self, title: String) -> Session {
        self.info.heading = title.clone();
        self.info.capture_title = title;
        self
    }

    /// The session with its scheme's options stated in its info.
    fn stating(mut session: Session) -> Session {
        session.info.stated = pictures::stated(&session.picture_inputs());
        session
    }

    /// What the scheme's pictures are drawn from: the layer's options and tables.
    fn picture_inputs(&self) -> pictures::Inputs<'_> {
        let (_, _, n) = self.dims();
        match &self.source {
            Source::Whole(t) => {
                let d_head = t.q.dim().2 / t.config.heads.max(1);
                pictures::Inputs {
                    config: &t.config,
                    tables: &t.rel_k,
                    rope: t.rope.as_ref(),
                    positions: t.positions.as_ref(),
                    n,
                    d_model: t.x.dim().2,
                    d_head,
                }
            }
            Source::OnDemand(l) => pictures::Inputs {
                config: &l.config,
                tables: &l.scenario.rel_k,
                rope: l.rope_table(),
                positions: l.scenario.positions.as_ref(),
                n,
                d_model: l.scenario.dims().2,
                d_head: l.scenario.d_head,
            },
        }
    }

    /// The lecture's pictures of the layer's scheme ([`pictures::of`]), a heatmap's cut and coloured with
    /// `palette` as a stage is.
    pub fn pictures(&self, palette: Palette) -> Vec<PictureView> {
        pictures::of(&self.picture_inputs()).into_iter().map(|p| picture_view(p, palette)).collect()
    }

    /// The trace, when it was computed whole.
    pub fn trace(&self) -> Option<&Trace> {
        match &self.source {
            Source::Whole(t) => Some(t),
            Source::OnDemand(_) => None,
        }
    }

    /// The layer, when it is held on demand.
    pub fn layer(&self) -> Option<&Layer> {
        match &self.source {
            Source::Whole(_) => None,
            Source::OnDemand(l) => Some(l),
        }
    }

    /// Colours the stages from now on with `head_scale`'s stages over every head's range (the cuts already made
    /// are made again when it changes).
    pub fn set_head_scale(&mut self, head_scale: HeadScale) {
        if head_scale != self.head_scale {
            self.head_scale = head_scale;
            self.shown = None;
        }
    }

    /// Whether `head_scale` picks stage `k` to be coloured over every head's range: a stage that differs by
    /// head, of a layer with more than one head (for [`HeadScale::Bias`], the bias stages: ALiBi's and T5's
    /// term, T5's table).
    fn picked(&self, k: usize, head_scale: HeadScale) -> bool {
        let (stage, cfg) = (self.stages[k], self.config());
        let picked = match head_scale {
            HeadScale::Each => false,
            HeadScale::All => true,
            HeadScale::Bias => is_bias(stage, cfg),
        };
        picked && self.info.stages[k].per_head && self.dims().1 > 1
    }

    /// The colour range of stage `k` over every head of batch element `batch` (its masked cells left out), or
    /// None where finding it would compute every head of a layer held on demand: there, a table is read whole
    /// and a bias of j − i alone (no key mask) from its first and last rows, which hold every distance (the
    /// last row every one a causal layer shows).
    fn range_over_heads(&self, k: usize, batch: usize) -> Result<Option<(f32, f32)>> {
        let stage = self.stages[k];
        let (_, heads, n) = self.dims();
        let mask = self.cell_mask(stage, batch);
        let shown_range = |first: usize, m: ArrayView2<f32>| match &mask {
            Some(mask) => crate::render::value_range(mask.shown(first, m).view(), stage.scale()),
            None => crate::render::value_range(m, stage.scale()),
        };
        let mut range = (f32::INFINITY, f32::NEG_INFINITY);
        let mut widen = |(lo, hi): (f32, f32)| range = (range.0.min(lo), range.1.max(hi));
        match &self.source {
            Source::Whole(t) => {
                for head in 0..heads {
                    widen(shown_range(0, t.stage_view(stage, batch, head)?.view()));
                }
            }
            Source::OnDemand(l) if stage == Stage::RelK => {
                for head in 0..heads {
                    widen(shown_range(0, l.rows(stage, batch, head, 0..l.shape(stage).0)?.view()));
                }
            }
            Source::OnDemand(l) if is_bias(stage, &l.config) && l.scenario.key_mask.is_none() => {
                for head in 0..heads {
                    for row in [0, n - 1] {
                        widen(shown_range(row, l.rows(stage, batch, head, row..row + 1)?.view()));
                    }
                }
            }
            Source::OnDemand(_) => return Ok(None),
        }
        Ok(Some(range))
    }

    /// Selects stage `i` (of [`Info::stages`]) of (batch, head), cutting and colouring every stage of that
    /// (batch, head) with `palette` the first time it is selected; returns its [`Cut`]. The selected stage's
    /// values and pixels are [`Session::selected`]'s. Errors name "stage", "batch index" or "head".
    pub fn cut(&mut self, i: usize, batch: usize, head: usize, palette: Palette) -> Result<Cut> {
        self.check(i, batch, head)?;
        if self.shown.as_ref().is_none_or(|s| (s.batch, s.head, s.palette) != (batch, head, palette)) {
            let t0 = now_ms();
            self.shown = None; // the previous cuts' memory goes before the new ones take theirs
            let cuts = self.make_cuts(batch, head, palette)?;
            let ms = now_ms() - t0;
            let name = "stages of the head shown";
            match self.timings.iter_mut().find(|t| t.name == name) {
                Some(t) => t.ms = ms,
                None => self.timings.push(Timing { name: name.into(), ms }),
            }
            self.shown = Some(ShownCuts { batch, head, palette, cuts, selected: 0 });
        }
        let shown = self.shown.as_mut().expect("made above");
        shown.selected = i;
        Ok(shown.cuts[i].cut)
    }

    /// The values of stage `i` of (batch, head) in `rows` × `cols`, row-major (at most [`VALUES_CELLS`]): the
    /// tooltip's exact cell and a zoomed window of a stage sent without values. Errors name "stage", "batch
    /// index", "head" or "cells".
    pub fn read_cells(&self, i: usize, batch: usize, head: usize, rows: Range<usize>, cols: Range<usize>) -> Result<Vec<f32>> {
        self.check(i, batch, head)?;
        let stage = self.stages[i];
        // The ranges, checked against the stage's (rows, cols) before anything of it is computed.
        let within = |(all_rows, all_cols): (usize, usize)| {
            let fits = |r: &Range<usize>, n: usize| r.start < r.end && r.end <= n;
            if !fits(&rows, all_rows) || !fits(&cols, all_cols) {
                let given = format!("rows {}..{}, columns {}..{}", rows.start, rows.end, cols.start, cols.end);
                return Err(Error::invalid("cells", given, format!("non-empty ranges within the stage's {all_rows} × {all_cols}")));
            }
            if rows.len() * cols.len() > VALUES_CELLS {
                return Err(Error::invalid("cells", format!("{} cells", rows.len() * cols.len()), format!("at most {VALUES_CELLS} cells at once")));
            }
            Ok(())
        };
        let m = match &self.source {
            Source::Whole(t) => t.stage_view(stage, batch, head).and_then(|m| within(m.dim()).map(|()| m.slice_move(s![rows.clone(), cols.clone()]))),
            Source::OnDemand(l) => {
                within(l.shape(stage)).and_then(|()| l.rows(stage, batch, head, rows.clone())).map(|m| m.slice_move(s![.., cols.clone()]).into())
            }
        };
        Ok(m?.iter().copied().collect())
    }

    /// The layer's configuration (the trace's, or the layer held on demand's).
    fn config(&self) -> &Config {
        match &self.source {
            Source::Whole(t) => &t.config,
            Source::OnDemand(l) => &l.config,
        }
    }

    /// The layer's (batch, heads, n).
    fn dims(&self) -> (usize, usize, usize) {
        match &self.source {
            Source::Whole(t) => t.dims(),
            Source::OnDemand(l) => l.dims(),
        }
    }

    /// Refuses a stage, batch element or head outside the session's.
    fn check(&self, i: usize, batch: usize, head: usize) -> Result<()> {
        let (batches, heads, _) = self.dims();
        check_index("stage", i, self.stages.len())?;
        check_index("batch index", batch, batches)?;
        check_index("head", head, heads)
    }

    /// The cells of `stage` of batch element `batch` that get no weight, when the stage's cells are pairs the
    /// mask applies to and the layer masks some (causal, or padded keys).
    fn cell_mask(&self, stage: Stage, batch: usize) -> Option<CellMask> {
        let keys = match &self.source {
            Source::Whole(t) => t.key_mask.as_ref(),
            Source::OnDemand(l) => l.scenario.key_mask.as_ref(),
        };
        cell_mask(self.config(), keys, stage, batch)
    }

    /// Whether the stages of (batch, head) in `palette` are cut already (the next [`Session::cut`] of them makes
    /// nothing). For a layer held on demand a pool's workers make them otherwise: [`Session::begin_parts`].
    pub fn is_cut(&self, batch: usize, head: usize, palette: Palette) -> bool {
        self.shown.as_ref().is_some_and(|s| (s.batch, s.head, s.palette) == (batch, head, palette))
    }

    /// Starts gathering the stages of (batch, head) of a layer held on demand from a pool's shares, each added
    /// in row order by [`Session::add_part`]; the next [`Session::cut`] of that (batch, head) colours them
    /// instead of computing them. Errors name "batch index", "head" or "part" (a whole trace).
    pub fn begin_parts(&mut self, batch: usize, head: usize) -> Result<()> {
        self.check(0, batch, head)?;
        let Source::OnDemand(l) = &self.source else {
            return Err(Error::invalid("part", "a whole trace", "a layer held on demand"));
        };
        self.parts = Some(Parts { batch, head, cuttings: layer_cuttings(l, batch) });
        Ok(())
    }

    /// Adds a share's [`CutPart`] of stage `k` (of [`Info::stages`]) to the cuts begun by
    /// [`Session::begin_parts`]. The error names "part".
    pub fn add_part(&mut self, k: usize, part: CutPart) -> Result<()> {
        let cutting = self.parts.as_mut().and_then(|p| p.cuttings.get_mut(k));
        cutting.ok_or_else(|| Error::invalid("part", format!("stage {k}"), "a stage of the cuts begun (begin_parts)"))?.merge(part)
    }

    /// Cuts query rows `rows` (starting at a multiple of [`Layer::block_rows`]) of the (batch, head) begun by
    /// [`Session::begin_parts`] here: the lead's own share of a pool, whose rows come before every helper's
    /// [`Session::add_part`]. Errors name "part" (no cuts begun) or "rows".
    pub fn add_rows(&mut self, rows: Range<usize>) -> Result<()> {
        let (Source::OnDemand(l), Some(parts)) = (&self.source, self.parts.as_mut()) else {
            return Err(Error::invalid("part", "no cuts begun", "begin_parts first"));
        };
        let block = l.block_rows();
        if !rows.start.is_multiple_of(block) {
            return Err(Error::invalid("rows", format!("{}..{}", rows.start, rows.end), format!("rows from a multiple of {block}")));
        }
        let Parts { batch, head, cuttings } = parts;
        l.each_block_in(*batch, *head, rows, |k, first, m| cuttings[k].add(first, m))
    }

    /// Drops the cuts begun by [`Session::begin_parts`] (a pool's share that failed or was superseded): the
    /// next [`Session::cut`] computes them itself.
    pub fn drop_parts(&mut self) {
        self.parts = None;
    }

    /// Every stage of (batch, head) cut and coloured with `palette`: pooled to [`RASTER_SIDE`], with its values
    /// when they are at most [`VALUES_CELLS`], its masked cells grey.
    fn make_cuts(&mut self, batch: usize, head: usize, palette: Palette) -> Result<Vec<Made>> {
        let mut cutting: Vec<Cutting> = Vec::with_capacity(self.stages.len());
        match &self.source {
            Source::Whole(t) => {
                for &stage in &self.stages {
                    let m = t.stage_view(stage, batch, head)?;
                    let mut c = Cutting::new(stage.scale(), m.dim()).masked(self.cell_mask(stage, batch));
                    c.add(0, m.view());
                    cutting.push(c);
                }
            }
            Source::OnDemand(_) if self.parts.as_ref().is_some_and(|p| (p.batch, p.head) == (batch, head)) => {
                cutting = self.parts.take().expect("checked").cuttings;
            }
            Source::OnDemand(l) => {
                cutting = layer_cuttings(l, batch);
                l.each_block(batch, head, |k, first, m| cutting[k].add(first, m))?;
            }
        }
        let ranges: Vec<Option<(f32, f32)>> =
            (0..self.stages.len()).map(|k| if self.picked(k, self.head_scale) { self.range_over_heads(k, batch) } else { Ok(None) }).collect::<Result<_>>()?;
        // A stage the head scale asked to share, or a bias stage, coloured over this head's range alone says so.
        let own_scale = |k: usize, range: &Option<(f32, f32)>| range.is_none() && (self.picked(k, self.head_scale) || self.picked(k, HeadScale::Bias));
        Ok(cutting.into_iter().zip(ranges).enumerate().map(|(k, (c, range))| c.finish_over(palette, range, own_scale(k, &range))).collect())
    }

    /// The cut last selected: its values (empty when the cut has none) and its pixels.
    pub fn selected(&self) -> Option<(&[f32], &[u8])> {
        self.shown.as_ref().map(|s| &s.cuts[s.selected]).map(|m| (&m.values[..], &m.rgba[..]))
    }

    /// The [`Info`]: `{ preset, preset_description, options, tokens, stages, backend, stage_times, on_demand }`.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// `[{ name, ms }]`: building the scenario, the layer, and cutting the stages of the head shown.
    pub fn timings(&self) -> &[Timing] {
        &self.timings
    }

    /// The whole trace as an .npz (uncompressed), under the CLI's names (`relattn compute --out`); a layer
    /// computed on demand is refused (field "export": its whole trace does not fit the page).
    pub fn npz(&self) -> Result<Vec<u8>> {
        let Source::Whole(trace) = &self.source else {
            let why = "this layer's stages are computed one head at a time (its whole trace does not fit the page's memory)";
            return Err(Error::invalid("export", "the whole trace", format!("{why}: export it with `relattn compute … --out trace.npz`")));
        };
        let mut out = std::io::Cursor::new(Vec::new());
        crate::files::write_trace(trace, &mut out)?;
        Ok(out.into_inner())
    }

    /// The (batch, head) to show for the one asked: each clamped into this layer's range, so a head asked of a
    /// larger layer (the URL's, or the selects' before a smaller preset) shows this layer's last instead of
    /// failing. A negative one (JavaScript's NaN arrives as 0) is 0.
    pub fn shown_for(&self, batch: i32, head: i32) -> Shown {
        let (batches, heads, _) = self.dims();
        let clamp = |x: i32, size: usize| (x.max(0) as usize).min(size.saturating_sub(1));
        Shown { batch: clamp(batch, batches), head: clamp(head, heads) }
    }

    /// Reverse linking: the pairs (i, j) that read row `row` of the relative tables (those whose rel_index is
    /// `row`), as one range of keys per query, `lo..hi`: 2n numbers `[lo_0, hi_0, lo_1, hi_1, …]`
    /// ([`relattn_core::positions::Scheme::readers`]: a table row, or a T5 bucket; the same for every batch element and
    /// head). The error names "row" and the table's rows.
    pub fn table_readers(&self, row: usize) -> Result<Vec<u32>> {
        let cfg = self.config();
        check_index("row", row, cfg.table_rows())?;
        Ok(cfg.scheme().reader_runs(row, self.dims().2))
    }
}

/// Computes the layer of a [`Request`] (`file`: a scenario file's bytes, named by `request.file_name`) where
/// `request.backend` asks, as `runner` decides: whole when its trace fits the page, else its forward pass, its
/// stages computed on demand. Timed: the scenario, the trace (or forward), and the GPU's time when it failed.
pub async fn compute(runner: &impl Runner, request: &Request, file: Option<Vec<u8>>) -> Result<Session> {
    let t0 = now_ms();
    let mut inputs = Inputs::resolve(request, file.as_deref())?;
    drop(file); // its bytes go before the layer takes its memory
    let (sc, holding) = inputs.scenario()?;
    let t1 = now_ms();
    let cfg = inputs.cfg;
    let timings = |name: &str, gpu_failed_ms: f64| {
        let mut t = vec![Timing { name: "scenario".into(), ms: t1 - t0 }, Timing { name: name.into(), ms: now_ms() - t1 - gpu_failed_ms }];
        if gpu_failed_ms > 0.05 {
            t.insert(1, Timing { name: "WebGPU (failed)".into(), ms: gpu_failed_ms });
        }
        t
    };
    match holding {
        Holding::Whole => {
            let ran = runner.run(request.backend, async |backend| backend.trace(&cfg, &sc).await).await;
            let (trace, times) = ran.result?;
            Ok(Session::whole(trace, &inputs, timings("trace", ran.gpu_failed_ms), ran.backend, &times))
        }
        Holding::OnDemand => {
            let ran = runner.run(request.backend, async |backend| backend.forward_projected(&cfg, &sc).await).await;
            let (projections, output) = ran.result?;
            let layer = Layer::new(&cfg, sc, projections, output)?;
            Ok(Session::on_demand(layer, &inputs, timings("forward", ran.gpu_failed_ms), ran.backend))
        }
    }
}
