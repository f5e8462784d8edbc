//! The page on every core: a layer held on demand computed by a pool of workers, each its own wasm instance (no
//! shared memory: each share's arrays travel in messages), with the numbers of one worker, bit for bit.
//!
//! The lead (www/worker.js) holds a [`Plan`], then the [`Session`], and computes the first share itself; each helper
//! (www/pool-worker.js) a [`Share`] of the same request. Heads are split among the workers, then query rows (whole
//! blocks of [`Plan::block_rows`]), each share a contiguous range ([`split`]); the lead
//! resolves the request first, sends the helpers their shares, then builds its own scenario while they build theirs:
//!
//! ```text
//! helper k: Share::heads(H_k)   Q, K, V columns of its heads H_k and their outputs z   (b, n, |H_k|·d_head | d_v)
//! lead:     Plan::project_heads(H_0), attend_head(h ∈ H_0), add_heads   every head's, in place: Q, K, V, concat_h z_h
//! helper k: Share::rows(R_k)    output rows R_k = concat rows R_k · W_o + b_o          (b, |R_k|, d_out)
//!                               and its Layer (its output rows; Q, K, V come a head at a time, with its cuts)
//! lead:     Plan::compute_output(R_0), Plan::add_output, Plan::finish → Session (the whole Layer: cells, exports, pictures)
//! helper k: Share::cut(b, h, head_columns(h))   the stages of (b, h) from query rows R_k, pooled: one CutPart a stage
//! lead:     Session::begin_parts, add_rows(R_0), add_part (row order), cut               coloured as one worker's
//! ```
//!
//! Every number is the one worker's: a projection's element is the same product whichever of its columns or rows
//! are computed with it (one sum over d_model in the same order: src/core/matmul.rs), a head's output and a
//! block's stages depend on that head and block alone, and a pooled cell merged in row order is the one the one
//! worker's pooler keeps ([`crate::render::Pooler::merge`]). This module's test checks it natively, and
//! tests/e2e/pool.test.mjs in the browser.

use super::request::{Holding, Inputs};
use super::session::{layer_cuttings, CutPart, Session};
use crate::protocol::{BackendUsed, Request, Timing};
use ndarray::{s, Array3};
use relattn_core::attention::{attend_head_timed, Config};
use relattn_core::core::finite::check_overflow;
use relattn_core::error::{Error, Result};
use relattn_core::layer::forward::{self, head_input, Projections};
use relattn_core::layer::on_demand::{self, Layer};
use relattn_core::layer::scenario::Scenario;
use relattn_core::positions::rope::RopeTable;
use relattn_core::timing::now_ms;
use std::ops::Range;

/// The query rows the lead cuts between its messages: [`on_demand::BLOCK`], a whole number of blocks whatever the
/// layer's ([`on_demand::block_rows`]: 128 or 32 rows), so that what a cut sets up for a head (RoPE's rotation of
/// every query and key) is done once every 128 rows, not every 32.
pub const LEAD_STEP_ROWS: usize = on_demand::BLOCK;

/// The ranges `parts` workers take of `count` things in order, each a whole number of `unit`s (the last one
/// ends at `count`), as even as that allows; the empty ones left out (more workers than units).
pub fn split(count: usize, parts: usize, unit: usize) -> Vec<Range<usize>> {
    let (units, parts) = (count.div_ceil(unit.max(1)), parts.max(1));
    let edge = |k: usize| (k * units / parts * unit).min(count);
    (0..parts).map(|k| edge(k)..edge(k + 1)).filter(|r| !r.is_empty()).collect()
}

/// A layer's widths: (heads, d_head, d_v, d_out), read from its weights (Q's and V's columns a head, the output's
/// columns).
fn widths(cfg: &Config, sc: &Scenario) -> (usize, usize, usize, usize) {
    let h = cfg.heads.max(1);
    (h, sc.w_q.ncols() / h, sc.w_v.ncols() / h, sc.w_o.ncols())
}

/// What a helper computed of heads `heads`: their columns of Q and K (b, n, |heads|·d_head), of V and of the
/// heads' outputs z (b, n, |heads|·d_v).
pub struct HeadsPart {
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
    pub z: Array3<f32>,
}

/// Heads `heads` of the layer of `cfg` and `sc`: their columns of Q, K and V ([`forward::project_heads`]) and their outputs,
/// as [`forward::forward`] computes them.
pub fn heads_of(cfg: &Config, sc: &Scenario, heads: Range<usize>) -> Result<HeadsPart> {
    let (_, dh, dv, _) = widths(cfg, sc);
    let (b, n, _) = sc.dims();
    let (p, rope) = (forward::project_heads(cfg, sc, heads.clone())?, sc.rope_table(cfg));
    let mut z = Array3::zeros((b, n, heads.len() * dv));
    for hi in heads.clone() {
        let at = (hi - heads.start) * dv;
        z.slice_mut(s![.., .., at..at + dv]).assign(&attend(cfg, sc, &p, rope.as_ref(), hi)?);
    }
    let cut = |a: &Array3<f32>, cols: Range<usize>| a.slice(s![.., .., cols]).to_owned();
    let (qk, vz) = (heads.start * dh..heads.end * dh, heads.start * dv..heads.end * dv);
    Ok(HeadsPart { q: cut(&p.q, qk.clone()), k: cut(&p.k, qk), v: cut(&p.v, vz), z })
}

/// Head `head`'s output z (b, n, d_v) from projections `p` that hold its columns (`rope`: the layer's
/// [`Scenario::rope_table`]).
fn attend(cfg: &Config, sc: &Scenario, p: &Projections, rope: Option<&RopeTable>, head: usize) -> Result<Array3<f32>> {
    let (_, _, dv, _) = widths(cfg, sc);
    let (b, n, _) = sc.dims();
    let mut z = Array3::zeros((b, n, dv));
    for bi in 0..b {
        relattn_core::core::cancel::check()?;
        let zh = attend_head_timed(cfg, &head_input(sc, p, rope, bi, head), None, None).map_err(|e| e.within(&[bi, head]))?;
        z.slice_mut(s![bi, .., ..]).assign(&zh);
    }
    Ok(z)
}

/// The layer's output rows from the same rows of the heads' concatenated outputs `concat` (b, rows, h·d_v):
/// concat · W_o + b_o (b, rows, d_out), refused (naming "output") when it overflows.
fn output_of(sc: &Scenario, concat: &Array3<f32>) -> Result<Array3<f32>> {
    let part = forward::project(&concat.view(), &sc.w_o, &sc.b_o);
    check_overflow("output", &part)?;
    Ok(part)
}

/// A helper's share of a request: its scenario, then (once [`Share::rows`] gave it the projections) its layer and
/// the query rows it cuts.
pub struct Share {
    cfg: Config,
    held: Held,
}

#[allow(clippy::large_enum_variant)] // one a helper
enum Held {
    Scenario(Scenario),
    Layer(Layer, Range<usize>),
    Moved,
}

impl Share {
    /// The scenario of `request` (`file`: its scenario file's bytes), built as the lead builds it.
    pub fn new(request: &Request, file: Option<&[u8]>) -> Result<Share> {
        let mut inputs = Inputs::resolve(request, file)?;
        let (sc, _) = inputs.scenario()?;
        Ok(Share { cfg: inputs.cfg, held: Held::Scenario(sc) })
    }

    fn scenario(&self) -> Result<&Scenario> {
        match &self.held {
            Held::Scenario(sc) => Ok(sc),
            Held::Layer(l, _) => Ok(&l.scenario),
            Held::Moved => Err(Error::invalid("share", "a share that failed", "a share's scenario")),
        }
    }

    /// ((b, n), (h·d_head, h·d_v)): the shapes of the batch, Q and K, and V and the heads' outputs.
    pub fn dims(&self) -> Result<((usize, usize), (usize, usize))> {
        let sc = self.scenario()?;
        let (h, dh, dv, _) = widths(&self.cfg, sc);
        let (b, n, _) = sc.dims();
        Ok(((b, n), (h * dh, h * dv)))
    }

    /// Heads `heads` ([`heads_of`]).
    pub fn heads(&self, heads: Range<usize>) -> Result<HeadsPart> {
        heads_of(&self.cfg, self.scenario()?, heads)
    }

    /// Rows `rows` of the layer's output from the same rows of the heads' concatenated outputs `concat` (b,
    /// |rows|, h·d_v); the share then holds the layer with those output rows (its projections come a head at a
    /// time, with the cuts: [`Share::cut`]) and cuts the stages of those query rows: `rows` must start at a
    /// multiple of [`Plan::block_rows`].
    pub fn rows(&mut self, concat: Array3<f32>, rows: Range<usize>) -> Result<Array3<f32>> {
        let sc = self.scenario()?;
        let (h, dh, dv, d_out) = widths(&self.cfg, sc);
        let (b, n, _) = sc.dims();
        let block = on_demand::block_rows(&self.cfg, n);
        if rows.is_empty() || rows.end > n || !rows.start.is_multiple_of(block) || concat.dim() != (b, rows.len(), h * dv) {
            let given = format!("rows {}..{} with concatenated heads {:?}", rows.start, rows.end, concat.dim());
            return Err(Error::invalid("rows", given, format!("whole blocks of {block} within 0..{n} and their (b, rows, h·d_v)")));
        }
        let part = output_of(sc, &concat)?;
        let mut output = Array3::zeros((b, n, d_out));
        output.slice_mut(s![.., rows.clone(), ..]).assign(&part);
        let Held::Scenario(sc) = std::mem::replace(&mut self.held, Held::Moved) else {
            return Err(Error::invalid("rows", "a second share of rows", "one share of rows a helper"));
        };
        let p = Projections { q: Array3::zeros((b, n, h * dh)), k: Array3::zeros((b, n, h * dh)), v: Array3::zeros((b, n, h * dv)) };
        self.held = Held::Layer(Layer::new(&self.cfg, sc, p, output)?, rows);
        Ok(part)
    }

    /// Every stage of (batch, head) cut from this share's query rows, with `columns`, that head's columns of the
    /// projections ([`head_columns`]): one [`CutPart`] a stage, in [`Layer::stages`] order. Errors name "batch
    /// index", "head", "q", "k", "v" or "rows" (no [`Share::rows`] yet).
    pub fn cut(&mut self, batch: usize, head: usize, columns: HeadColumns) -> Result<Vec<CutPart>> {
        let Held::Layer(l, rows) = &mut self.held else {
            return Err(Error::invalid("rows", "a share without its rows", "Share::rows first"));
        };
        let (h, dh, dv, _) = widths(&l.config, &l.scenario);
        relattn_core::error::check_index("head", head, h)?;
        let p = &mut l.projections;
        for (whole, part, w, name) in [(&mut p.q, &columns.q, dh, "q"), (&mut p.k, &columns.k, dh, "k"), (&mut p.v, &columns.v, dv, "v")] {
            let mut cols = whole.slice_mut(s![.., .., head * w..(head + 1) * w]);
            if cols.dim() != part.dim() {
                return Err(Error::invalid(name, format!("{:?}", part.dim()), format!("{:?}", cols.dim())));
            }
            cols.assign(part);
        }
        let mut cutting = layer_cuttings(l, batch);
        l.each_block_in(batch, head, rows.clone(), |k, first, m| cutting[k].add(first, m))?;
        Ok(cutting.into_iter().map(|c| c.into_part()).collect())
    }
}

/// One head's columns of a layer's projections: Q's and K's (b, n, d_head), V's (b, n, d_v).
pub struct HeadColumns {
    pub q: Array3<f32>,
    pub k: Array3<f32>,
    pub v: Array3<f32>,
}

/// Head `head`'s columns of the projections of `session`'s layer (held on demand), for a helper's cut. The error
/// names "head" (or "part": a whole trace).
pub fn head_columns(session: &Session, head: usize) -> Result<HeadColumns> {
    let l = session.layer().ok_or_else(|| Error::invalid("part", "a whole trace", "a layer held on demand"))?;
    let (h, dh, dv, _) = widths(&l.config, &l.scenario);
    relattn_core::error::check_index("head", head, h)?;
    let p = &l.projections;
    let cols = |a: &Array3<f32>, w: usize| a.slice(s![.., .., head * w..(head + 1) * w]).to_owned();
    Ok(HeadColumns { q: cols(&p.q, dh), k: cols(&p.k, dh), v: cols(&p.v, dv) })
}

/// The lead's plan of a pooled layer: its inputs, resolved first (whether the layer is held on demand, and the shares,
/// known before its scenario is built, so the helpers start at once); then its scenario ([`Plan::build`]), the
/// projections and the heads' outputs as the shares come (the lead's own, share 0, computed in place:
/// [`Plan::project_heads`], [`Plan::attend_head`], [`Plan::compute_output`]), then the output.
pub struct Plan {
    inputs: Inputs,
    gathered: Option<Gathered>,
    /// When the plan began and when its scenario was built (the session's "scenario" and "forward" timings).
    t0: f64,
    t1: f64,
}

/// A plan's scenario and what the shares gave: Q, K, V (b, n, ·), the heads' outputs concatenated (b, n, h·d_v),
/// the output (b, n, d_out).
struct Gathered {
    sc: Scenario,
    /// The scenario's RoPE table, for the lead's own heads ([`Plan::attend_head`]).
    rope: Option<RopeTable>,
    p: Projections,
    concat: Array3<f32>,
    output: Array3<f32>,
}

impl Plan {
    /// The plan of `request` (`file`: its scenario file's bytes) when its layer is held on demand; `None` for a
    /// whole trace, which one worker computes. Its scenario is not built yet ([`Plan::build`]).
    pub fn new(request: &Request, file: Option<&[u8]>) -> Result<Option<Plan>> {
        let t0 = now_ms();
        let inputs = Inputs::resolve(request, file)?;
        if inputs.holding()? == Holding::Whole {
            return Ok(None);
        }
        Ok(Some(Plan { inputs, gathered: None, t0, t1: t0 }))
    }

    /// (batch, heads, n): what the shares split.
    pub fn dims(&self) -> (usize, usize, usize) {
        (self.inputs.spec.batch, self.inputs.cfg.heads, self.inputs.spec.n)
    }

    /// The query rows the layer's stages are computed together by ([`on_demand::block_rows`]): the rows of a share
    /// are whole blocks of them.
    fn block_rows(&self) -> usize {
        on_demand::block_rows(&self.inputs.cfg, self.inputs.spec.n)
    }

    /// The heads each of `parts` workers computes: contiguous ranges, the first the lead's.
    pub fn head_shares(&self, parts: usize) -> Vec<Range<usize>> {
        split(self.inputs.cfg.heads, parts, 1)
    }

    /// The query rows each of `parts` workers computes the output of and cuts the stages of: whole blocks
    /// ([`Plan::block_rows`]), the first the lead's.
    pub fn row_shares(&self, parts: usize) -> Vec<Range<usize>> {
        split(self.inputs.spec.n, parts, self.block_rows())
    }

    /// Builds the scenario (once), as each helper builds its own.
    pub fn build(&mut self) -> Result<()> {
        if self.gathered.is_none() {
            let (sc, _) = self.inputs.scenario()?;
            let (h, dh, dv, d_out) = widths(&self.inputs.cfg, &sc);
            let (b, n, _) = sc.dims();
            let zeros = |w: usize| Array3::zeros((b, n, w));
            let p = Projections { q: zeros(h * dh), k: zeros(h * dh), v: zeros(h * dv) };
            let rope = sc.rope_table(&self.inputs.cfg);
            self.gathered = Some(Gathered { sc, rope, p, concat: zeros(h * dv), output: zeros(d_out) });
            self.t1 = now_ms();
        }
        Ok(())
    }

    fn gathered(&mut self) -> Result<&mut Gathered> {
        self.build()?;
        Ok(self.gathered.as_mut().expect("built"))
    }

    /// The lead's own heads `heads`: their columns of Q, K and V projected here ([`project_heads`]) and put in
    /// place; their outputs come a head at a time ([`Plan::attend_head`]).
    pub fn project_heads(&mut self, heads: Range<usize>) -> Result<()> {
        let cfg = self.inputs.cfg;
        let g = self.gathered()?;
        let (_, dh, dv, _) = widths(&cfg, &g.sc);
        let part = forward::project_heads(&cfg, &g.sc, heads.clone())?;
        for (whole, part, w) in [(&mut g.p.q, &part.q, dh), (&mut g.p.k, &part.k, dh), (&mut g.p.v, &part.v, dv)] {
            let cols = s![.., .., heads.start * w..heads.end * w];
            whole.slice_mut(cols).assign(&part.slice(cols));
        }
        Ok(())
    }

    /// The output of the lead's own head `head` (its columns projected: [`Plan::project_heads`]), put in place.
    pub fn attend_head(&mut self, head: usize) -> Result<()> {
        let cfg = self.inputs.cfg;
        let g = self.gathered()?;
        let (h, _, dv, _) = widths(&cfg, &g.sc);
        relattn_core::error::check_index("head", head, h)?;
        let z = attend(&cfg, &g.sc, &g.p, g.rope.as_ref(), head)?;
        g.concat.slice_mut(s![.., .., head * dv..(head + 1) * dv]).assign(&z);
        Ok(())
    }

    /// A helper's [`HeadsPart`] of heads `heads`, put in place.
    pub fn add_heads(&mut self, heads: Range<usize>, part: HeadsPart) -> Result<()> {
        let cfg = self.inputs.cfg;
        let g = self.gathered()?;
        let (_, dh, dv, _) = widths(&cfg, &g.sc);
        let (b, n, _) = g.sc.dims();
        let put = |whole: &mut Array3<f32>, w: usize, a: &Array3<f32>, name: &str| {
            if heads.end * w > whole.dim().2 || a.dim() != (b, n, heads.len() * w) {
                return Err(Error::invalid(name, format!("{:?} for heads {}..{}", a.dim(), heads.start, heads.end), format!("(b, n, heads · {w})")));
            }
            whole.slice_mut(s![.., .., heads.start * w..heads.end * w]).assign(a);
            Ok(())
        };
        put(&mut g.p.q, dh, &part.q, "q")?;
        put(&mut g.p.k, dh, &part.k, "k")?;
        put(&mut g.p.v, dv, &part.v, "v")?;
        put(&mut g.concat, dv, &part.z, "heads")
    }

    /// Rows `rows` of the heads' concatenated outputs (b, |rows|, h·d_v), once every head's share is in; refused
    /// when they overflowed (as the one worker's forward refuses them, naming "heads").
    pub fn concat_rows(&mut self, rows: Range<usize>) -> Result<Array3<f32>> {
        let g = self.gathered()?;
        check_overflow("heads", &g.concat)?;
        Ok(g.concat.slice(s![.., rows, ..]).to_owned())
    }

    /// The lead's own output rows `rows`, computed here ([`output_of`]) and put in place.
    pub fn compute_output(&mut self, rows: Range<usize>) -> Result<()> {
        let concat = self.concat_rows(rows.clone())?;
        let part = output_of(&self.gathered()?.sc, &concat)?;
        self.add_output(rows, part)
    }

    /// A helper's output rows `rows` (b, |rows|, d_out), put in place.
    pub fn add_output(&mut self, rows: Range<usize>, part: Array3<f32>) -> Result<()> {
        let output = &mut self.gathered()?.output;
        let (b, _, d_out) = output.dim();
        if rows.end > output.dim().1 || part.dim() != (b, rows.len(), d_out) {
            return Err(Error::invalid("output", format!("{:?} for rows {}..{}", part.dim(), rows.start, rows.end), format!("(b, rows, {d_out})")));
        }
        output.slice_mut(s![.., rows, ..]).assign(&part);
        Ok(())
    }

    /// The session of the layer, once every share of heads and rows is in: computed on the CPU (`backend`, as the
    /// lead's runner chose it), timed as the one worker's ("scenario", "forward").
    pub fn finish(mut self, backend: BackendUsed) -> Result<Session> {
        self.build()?;
        let Plan { inputs, gathered, t0, t1 } = self;
        let Gathered { sc, p, output, .. } = gathered.expect("built");
        let layer = Layer::new(&inputs.cfg, sc, p, output)?;
        let timings = vec![Timing { name: "scenario".into(), ms: t1 - t0 }, Timing { name: "forward".into(), ms: now_ms() - t1 }];
        Ok(Session::on_demand(layer, &inputs, timings, backend))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::session::compute;
    use crate::app::Cpu;
    use crate::options::LayerOptions;
    use crate::render::Palette;
    use relattn_core::positions::Method;

    #[test]
    fn splits_are_contiguous_whole_units_ending_at_the_count() {
        assert_eq!(split(8, 3, 1), [0..2, 2..5, 5..8]);
        assert_eq!(split(2, 4, 1), [0..1, 1..2]);
        assert_eq!(split(1000, 3, 128), [0..256, 256..640, 640..1000]);
        assert_eq!(split(100, 2, 128).len(), 1, "one block: one share");
    }

    fn request(method: Method, causal: bool, n: usize) -> Request {
        let mut r: Request = serde_json::from_value(serde_json::json!({ "backend": "cpu", "options": {} })).unwrap();
        r.options = LayerOptions {
            method: Some(method),
            n: Some(n as f64),
            d_model: Some(48.0),
            heads: Some(3.0),
            clip: Some(4.0),
            batch_size: Some(2.0),
            causal: Some(causal),
            // BERT's table covers this n.
            max_position: Some(n as f64),
            ..LayerOptions::default()
        };
        r
    }

    /// What the lead and `workers` − 1 helpers make of `request` ([`Plan`], [`Share`]): the lead takes the first
    /// share of heads and of rows itself (its rows cut [`LEAD_STEP_ROWS`] at a time, as the page's lead does
    /// between its yields), the helpers the others; each helper's cut of (batch, head) merged into the session.
    fn pooled(request: &Request, workers: usize, batch: usize, head: usize) -> Session {
        let mut plan = Plan::new(request, None).unwrap().expect("a layer held on demand");
        let (heads, rows) = (plan.head_shares(workers), plan.row_shares(workers));
        let mut shares: Vec<Share> = (1..heads.len().max(rows.len())).map(|_| Share::new(request, None).unwrap()).collect();
        plan.build().unwrap();
        plan.project_heads(heads[0].clone()).unwrap();
        for hi in heads[0].clone() {
            plan.attend_head(hi).unwrap();
        }
        for (share, r) in shares.iter().zip(&heads[1..]) {
            plan.add_heads(r.clone(), share.heads(r.clone()).unwrap()).unwrap();
        }
        plan.compute_output(rows[0].clone()).unwrap();
        for (share, r) in shares.iter_mut().zip(&rows[1..]) {
            let out = share.rows(plan.concat_rows(r.clone()).unwrap(), r.clone()).unwrap();
            plan.add_output(r.clone(), out).unwrap();
        }
        let backend = BackendUsed { on_gpu: false, name: "CPU".into(), note: String::new(), provisional: false };
        let mut session = plan.finish(backend).unwrap();
        session.begin_parts(batch, head).unwrap();
        for a in rows[0].clone().step_by(LEAD_STEP_ROWS) {
            session.add_rows(a..(a + LEAD_STEP_ROWS).min(rows[0].end)).unwrap();
        }
        for share in shares.iter_mut().take(rows.len() - 1) {
            for (k, part) in share.cut(batch, head, head_columns(&session, head).unwrap()).unwrap().into_iter().enumerate() {
                session.add_part(k, part).unwrap();
            }
        }
        session
    }

    /// Every stage of a layer computed by 2 and 3 workers (heads and query rows split unevenly, the last block
    /// short) is the one worker's bit for bit: its cut (shape, colour range), values and pixels, for every scheme,
    /// bidirectional (2 workers, head 2) and causal (3 workers, head 0), on batch element 1; and cells read from it.
    /// At n 1100 (blocks of 128 rows), and for the Music Transformer and BERT at n 2100 (blocks of 32).
    #[test]
    fn a_pool_computes_the_one_workers_layer_bit_for_bit() {
        let palette = Palette::default();
        let cases = Method::ALL.into_iter().map(|m| (m, 1100)).chain([(Method::Music, 2100), (Method::BertRelative, 2100)]);
        for (method, n) in cases {
            for causal in [false, true] {
                let r = request(method, causal, n);
                let mut one = pollster::block_on(compute(&Cpu, &r, None)).unwrap();
                assert!(one.info().on_demand, "{method:?}: held on demand");
                for (workers, head) in [if causal { (3, 0) } else { (2, 2) }] {
                    let mut pool = pooled(&r, workers, 1, head);
                    for i in 0..one.info().stages.len() {
                        let name = one.info().stages[i].name.to_string();
                        let (a, b) = (one.cut(i, 1, head, palette).unwrap(), pool.cut(i, 1, head, palette).unwrap());
                        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{method:?} n {n} causal {causal}, {workers} workers: {name}'s cut");
                        let (ov, op) = one.selected().unwrap();
                        let (pv, pp) = pool.selected().unwrap();
                        assert!(
                            ov.iter().zip(pv).all(|(x, y)| x.to_bits() == y.to_bits()) && ov.len() == pv.len(),
                            "{method:?} causal {causal}, {workers} workers: {name}'s values"
                        );
                        assert!(op == pp, "{method:?} causal {causal}, {workers} workers: {name}'s pixels");
                    }
                    let cells = |s: &Session| s.read_cells(0, 0, 1, 1000..1100, 0..40).unwrap();
                    assert_eq!(cells(&one).iter().map(|v| v.to_bits()).collect::<Vec<_>>(), cells(&pool).iter().map(|v| v.to_bits()).collect::<Vec<_>>());
                }
            }
        }
    }

    /// A cut stopped part way (a superseded request: the lead's first block in, no helper's part) and dropped
    /// leaves nothing behind: the next cut of that head computes every stage itself, the one worker's; rows that
    /// do not start a block are refused by name.
    #[test]
    fn a_dropped_cut_leaves_no_part_behind() {
        let palette = Palette::default();
        let r = request(Method::Shaw, true, 1100);
        let mut one = pollster::block_on(compute(&Cpu, &r, None)).unwrap();
        let mut pool = pooled(&r, 2, 0, 0);
        let block = pool.layer().unwrap().block_rows();
        pool.begin_parts(1, 1).unwrap();
        assert_eq!(pool.add_rows(1..block).unwrap_err().field(), "rows");
        pool.add_rows(0..block).unwrap();
        // A helper's part that is not whole rows of the raster, or runs past its last row, is refused by name.
        let part = |cells: usize, first_row: usize| CutPart { pooled: vec![0.0; cells], first_row, bounds: (0.0, 0.0), values: None };
        let (rows, cols) = one.cut(0, 1, 1, palette).map(|c| (c.raster_rows, c.raster_cols)).unwrap();
        assert_eq!(pool.add_part(0, part(cols + 1, 0)).unwrap_err().field(), "part");
        assert_eq!(pool.add_part(0, part(2 * cols, rows - 1)).unwrap_err().field(), "part");
        pool.add_part(0, part(2 * cols, rows - 2)).unwrap();
        pool.drop_parts();
        for i in 0..one.info().stages.len() {
            assert_eq!(format!("{:?}", one.cut(i, 1, 1, palette).unwrap()), format!("{:?}", pool.cut(i, 1, 1, palette).unwrap()), "stage {i}");
            assert!(one.selected().unwrap().1 == pool.selected().unwrap().1, "stage {i}'s pixels");
        }
    }
}
