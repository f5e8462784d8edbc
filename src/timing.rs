//! Per-stage compute times of the CPU path ([`crate::model::trace_timed`], [`crate::model::forward_timed`]).
//!
//! The stages are the GPU's ([`crate::gpu::StageTimes`]: projections, logits, softmax, values, output),
//! with the logits split into their three parts, so the footer and `stages_ms` name the same stages
//! for both backends. Heads run in parallel natively (rayon): per-head times are summed over heads
//! (CPU time, not wall time).

/// Milliseconds from a monotonic clock: `std::time::Instant` natively, `performance.now()` in wasm
/// (where `Instant::now` panics).
pub fn now_ms() -> f64 {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        let global = js_sys::global();
        js_sys::Reflect::get(&global, &"performance".into())
            .ok()
            .filter(|p| !p.is_undefined())
            .and_then(|p| {
                let f = js_sys::Reflect::get(&p, &"now".into()).ok()?.dyn_into::<js_sys::Function>().ok()?;
                f.call0(&p).ok()?.as_f64()
            })
            .unwrap_or_else(js_sys::Date::now)
    }
}

/// Milliseconds per stage of one forward or trace on the CPU; head stages summed over heads and batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Q, K, V projections.
    pub projections: f64,
    /// Q Kᵀ.
    pub content_logits: f64,
    /// The relative logits: gather (Shaw), skew (Music Transformer) or the materialized product.
    pub relative_logits: f64,
    /// Scaling by 1/√d_head and the causal and padding masks.
    pub scale_mask: f64,
    pub softmax: f64,
    /// α V and the value term B w^V.
    pub values: f64,
    /// Concatenated heads times W_o.
    pub output: f64,
}

impl StageTimes {
    /// Content, relative and scale+mask together: the GPU's `logits` stage.
    pub fn logits(&self) -> f64 {
        self.content_logits + self.relative_logits + self.scale_mask
    }

    /// Adds another's times (one head's into the sum).
    pub fn add(&mut self, o: &StageTimes) {
        self.projections += o.projections;
        self.content_logits += o.content_logits;
        self.relative_logits += o.relative_logits;
        self.scale_mask += o.scale_mask;
        self.softmax += o.softmax;
        self.values += o.values;
        self.output += o.output;
    }

    /// `(name, ms)` of every stage in order; "logits" is the sum of the three before it.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("projections", self.projections),
            ("content_logits", self.content_logits),
            ("relative_logits", self.relative_logits),
            ("scale_mask", self.scale_mask),
            ("logits", self.logits()),
            ("softmax", self.softmax),
            ("values", self.values),
            ("output", self.output),
        ]
    }
}
