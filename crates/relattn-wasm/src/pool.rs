//! The pool's exports ([`relattn::app::pool`]): [`pool_plan`] and [`PoolPlan`] for the lead (www/worker.js), which
//! splits a layer held on demand between itself and its helpers and gathers the shares into a [`Session`]; [`PoolShare`] for
//! a helper (www/pool-worker.js). Arrays cross as Float32Arrays (row-major), copied once into or out of the wasm
//! memory.

use super::backend::WebGpu;
use super::session::{read_request, Session};
use super::{to_js, to_value};
use ndarray::Array3;
use relattn::app::pool::{self, HeadColumns, HeadsPart, Plan, Share};
use relattn::app::Runner;
use relattn::backend::Backend;
use relattn::error::Error;
use relattn::protocol::BackendUsed;
use std::ops::Range;
use wasm_bindgen::prelude::*;

/// `values` as a (b, n, w) array, refused (naming `what`) when their number is not b·n·w.
fn shaped(values: Vec<f32>, dim: (usize, usize, usize), what: &str) -> Result<Array3<f32>, JsValue> {
    let len = values.len();
    Array3::from_shape_vec(dim, values).map_err(|_| to_js(Error::invalid(what, format!("{len} values"), format!("{} × {} × {}", dim.0, dim.1, dim.2))))
}

/// The ranges `[[a, b], …]` as a JS array.
pub(crate) fn ranges(rs: &[Range<usize>]) -> Result<JsValue, JsValue> {
    to_value(&rs.iter().map(|r| [r.start, r.end]).collect::<Vec<_>>())
}

/// The plan of `request` (a [`relattn::protocol::Request`]; `file`: its scenario file's bytes) for the pool, when
/// its layer is held on demand and computed on the CPU (`request.backend` as the worker's runner decides: the
/// CPU asked for, or WebGPU unusable), its scenario not built yet ([`PoolPlan::build`]); undefined when one worker
/// computes it (a whole trace, or the GPU).
#[wasm_bindgen]
pub async fn pool_plan(request: JsValue, file: Option<Vec<u8>>) -> Result<Option<PoolPlan>, JsValue> {
    let request = read_request(request)?;
    let ran = WebGpu.run(request.backend, async |backend| Ok(matches!(backend, Backend::Cpu))).await;
    if !matches!(ran.result, Ok(true)) {
        return Ok(None);
    }
    Ok(Plan::new(&request, file.as_deref()).map_err(to_js)?.map(|plan| PoolPlan { plan, backend: ran.backend }))
}

/// The lead's plan of a pooled layer ([`Plan`]), and where it runs (the CPU, with the runner's note).
#[wasm_bindgen]
pub struct PoolPlan {
    plan: Plan,
    backend: BackendUsed,
}

#[wasm_bindgen]
impl PoolPlan {
    /// The heads `workers` workers take (the lead the first share), `[[a, b], …]` (as many as have any).
    pub fn head_shares(&self, workers: usize) -> Result<JsValue, JsValue> {
        ranges(&self.plan.head_shares(workers))
    }

    /// The query rows `workers` workers take (the lead the first share), `[[a, b], …]`: whole blocks (as many as
    /// have any).
    pub fn row_shares(&self, workers: usize) -> Result<JsValue, JsValue> {
        ranges(&self.plan.row_shares(workers))
    }

    /// Builds the lead's scenario (once the helpers have been sent their shares: they build theirs meanwhile).
    pub fn build(&mut self) -> Result<(), JsValue> {
        self.plan.build().map_err(to_js)
    }

    /// The lead's own heads `a..b`: their columns of Q, K and V projected here and put in place.
    pub fn project_heads(&mut self, a: usize, b: usize) -> Result<(), JsValue> {
        self.plan.project_heads(a..b).map_err(to_js)
    }

    /// The output of the lead's own head `head`, computed here and put in place.
    pub fn attend_head(&mut self, head: usize) -> Result<(), JsValue> {
        self.plan.attend_head(head).map_err(to_js)
    }

    /// A helper's heads `a..b` (its [`HeadsView`]'s arrays), put in place.
    pub fn add_heads(&mut self, a: usize, b: usize, q: Vec<f32>, k: Vec<f32>, v: Vec<f32>, z: Vec<f32>) -> Result<(), JsValue> {
        let (batch, _, n) = self.plan.dims();
        let dim = |values: &Vec<f32>| (batch, n, values.len() / (batch * n).max(1));
        let (dq, dk, dv, dz) = (dim(&q), dim(&k), dim(&v), dim(&z));
        let part = HeadsPart { q: shaped(q, dq, "q")?, k: shaped(k, dk, "k")?, v: shaped(v, dv, "v")?, z: shaped(z, dz, "heads")? };
        self.plan.add_heads(a..b, part).map_err(to_js)
    }

    /// Rows `a..b` of the heads' concatenated outputs (b, rows, h·d_v), row-major; refused (field "heads") when
    /// they overflowed.
    pub fn concat_rows(&mut self, a: usize, b: usize) -> Result<Vec<f32>, JsValue> {
        Ok(self.plan.concat_rows(a..b).map_err(to_js)?.into_iter().collect())
    }

    /// The lead's own output rows `a..b`, computed here and put in place (once every head's share is in).
    pub fn compute_output(&mut self, a: usize, b: usize) -> Result<(), JsValue> {
        self.plan.compute_output(a..b).map_err(to_js)
    }

    /// A helper's output rows `a..b` (b, rows, d_out), put in place.
    pub fn add_output(&mut self, a: usize, b: usize, output: Vec<f32>) -> Result<(), JsValue> {
        let (batch, _, _) = self.plan.dims();
        let d_out = output.len() / (batch * (b - a)).max(1);
        self.plan.add_output(a..b, shaped(output, (batch, b - a, d_out), "output")?).map_err(to_js)
    }

    /// The layer's session, once every share is in (the plan is used up).
    pub fn finish(self) -> Result<Session, JsValue> {
        self.plan.finish(self.backend).map(Session).map_err(to_js)
    }
}

/// A helper's share of a request ([`Share`]).
#[wasm_bindgen]
pub struct PoolShare(Share);

#[wasm_bindgen]
impl PoolShare {
    /// The scenario of `request` (`file`: its scenario file's bytes), built as the lead builds it.
    #[wasm_bindgen(constructor)]
    pub fn new(request: JsValue, file: Option<Vec<u8>>) -> Result<PoolShare, JsValue> {
        let request = read_request(request)?;
        Share::new(&request, file.as_deref()).map(PoolShare).map_err(to_js)
    }

    /// Heads `a..b`: a [`relattn::protocol::HeadsView`] `{ q, k, v, z }` of Float32Arrays.
    pub fn heads(&self, a: usize, b: usize) -> Result<JsValue, JsValue> {
        let HeadsPart { q, k, v, z } = self.0.heads(a..b).map_err(to_js)?;
        let out = js_sys::Object::new();
        for (name, a) in [("q", q), ("k", k), ("v", v), ("z", z)] {
            js_sys::Reflect::set(&out, &name.into(), &js_sys::Float32Array::from(&a.into_raw_vec_and_offset().0[..]))?;
        }
        Ok(out.into())
    }

    /// Output rows `a..b` (b, rows, d_out) from those rows of the heads' concatenated outputs; the share then cuts
    /// query rows `a..b` ([`PoolShare::cut`]).
    pub fn rows(&mut self, concat: Vec<f32>, a: usize, b: usize) -> Result<Vec<f32>, JsValue> {
        let ((batch, _), (_, vz)) = self.0.dims().map_err(to_js)?;
        let concat = shaped(concat, (batch, b.saturating_sub(a), vz), "heads")?;
        Ok(self.0.rows(concat, a..b).map_err(to_js)?.into_iter().collect())
    }

    /// Every stage of (batch, head) cut from this share's query rows, with that head's columns of the projections
    /// ([`pool_head_columns`]): `[{ pooled, first_row, lo, hi, values }]` ([`relattn::protocol::CutPartView`]), Float32Arrays,
    /// in the stages' order.
    pub fn cut(&mut self, batch: usize, head: usize, q: Vec<f32>, k: Vec<f32>, v: Vec<f32>) -> Result<JsValue, JsValue> {
        let ((b, n), _) = self.0.dims().map_err(to_js)?;
        let dim = |values: &Vec<f32>| (b, n, values.len() / (b * n).max(1));
        let (dq, dk, dv) = (dim(&q), dim(&k), dim(&v));
        let columns = HeadColumns { q: shaped(q, dq, "q")?, k: shaped(k, dk, "k")?, v: shaped(v, dv, "v")? };
        let out = js_sys::Array::new();
        for part in self.0.cut(batch, head, columns).map_err(to_js)? {
            let item = js_sys::Object::new();
            js_sys::Reflect::set(&item, &"pooled".into(), &js_sys::Float32Array::from(&part.pooled[..]))?;
            js_sys::Reflect::set(&item, &"first_row".into(), &part.first_row.into())?;
            js_sys::Reflect::set(&item, &"lo".into(), &part.bounds.0.into())?;
            js_sys::Reflect::set(&item, &"hi".into(), &part.bounds.1.into())?;
            let values = part.values.as_deref().map_or(JsValue::NULL, |v| js_sys::Float32Array::from(v).into());
            js_sys::Reflect::set(&item, &"values".into(), &values)?;
            out.push(&item);
        }
        Ok(out.into())
    }
}

/// The query rows the lead cuts between its messages ([`pool::LEAD_STEP_ROWS`]).
#[wasm_bindgen]
pub fn pool_step_rows() -> usize {
    pool::LEAD_STEP_ROWS
}

/// Head `head`'s columns of the projections of `session`'s layer (held on demand, a pool's): `{ q, k, v }`
/// Float32Arrays, Q's and K's (b, n, d_head), V's (b, n, d_v), for the helpers' cuts.
#[wasm_bindgen]
pub fn pool_head_columns(session: &Session, head: usize) -> Result<JsValue, JsValue> {
    let HeadColumns { q, k, v } = pool::head_columns(&session.0, head).map_err(to_js)?;
    let out = js_sys::Object::new();
    for (name, a) in [("q", q), ("k", k), ("v", v)] {
        js_sys::Reflect::set(&out, &name.into(), &js_sys::Float32Array::from(&a.into_raw_vec_and_offset().0[..]))?;
    }
    Ok(out.into())
}
