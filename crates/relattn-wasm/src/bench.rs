//! The browser benchmark's hooks (www/bench.html): a generated scenario whose forward pass (no trace kept)
//! and a side × side raster the page times with `performance.now()`.

use super::{js_error, to_js};
use ndarray::Array2;
use relattn::app::request::{LIMITS, MEMORY_LIMIT};
use relattn::attention::Config;
use relattn::error::ErrorKind;
use relattn::layer::forward;
use relattn::layer::scenario::Scenario;
use relattn::options::{LayerOptions, Resolved};
use relattn::render;
use relattn::stage::Scale;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Bench {
    cfg: Config,
    sc: Scenario,
    rgba: Vec<u8>,
}

#[wasm_bindgen]
impl Bench {
    /// A generated scenario for these [`LayerOptions`] (within the page's [`LIMITS`]), refused like the page's
    /// when over [`MEMORY_LIMIT`] (counting the forward pass only).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Bench, JsValue> {
        let options: LayerOptions =
            serde_wasm_bindgen::from_value(options).map_err(|e| js_error("options", ErrorKind::Invalid, &format!("invalid options: {e}")))?;
        let Resolved { config: cfg, spec, arrays, per_head_tables } = options.resolve(&LIMITS).map_err(to_js)?;
        let sizes = forward::Sizes { batch: spec.batch, n: spec.n, d_model: spec.d_model, per_head_tables, trace: false, parallel: 1, widths: None };
        forward::check_budget(&cfg, &sizes, |_, _| Some(0), MEMORY_LIMIT).map_err(to_js)?;
        let sc = Scenario::build(&cfg, &spec, arrays, per_head_tables).map_err(to_js)?;
        Ok(Bench { cfg, sc, rgba: Vec::new() })
    }

    /// One forward pass.
    pub fn forward(&self) -> Result<(), JsValue> {
        forward::forward(&self.cfg, &self.sc).map(drop).map_err(to_js)
    }

    /// Colours a side × side matrix of signed values into RGBA; returns the pixels' address in wasm memory.
    pub fn raster(&mut self, side: usize) -> *const u8 {
        let m = Array2::from_shape_fn((side, side), |(i, j)| ((i * 31 + j * 17) % 101) as f32 - 50.0);
        self.rgba = render::rgba(m.view(), Scale::Diverging).0;
        self.rgba.as_ptr()
    }
}
