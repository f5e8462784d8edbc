//! Per-stage compute times of either backend ([`crate::Backend::trace`], [`crate::Backend::forward`]).
//!
//! The stages are projections, logits, softmax, values and output; the CPU also times the logits' three
//! parts (content, relative, scale and mask), which the GPU's fused kernel cannot, so the footer and
//! `stages_ms` name the same stages for both backends. Heads run in parallel natively (rayon): per-head
//! CPU times are summed over heads (CPU time, not wall time).

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

/// Milliseconds per stage of one forward or trace, on either backend. On the CPU head stages are summed
/// over heads and batch (CPU time); on the GPU each stage is submitted alone and waited for (wall time, so
/// the sum is a little above an unprofiled forward).
///
/// Serialized as `{"projections": ms, "logits": {"parts": {"content_logits": ms, "relative_logits": ms,
/// "scale_mask": ms}} or {"fused": ms}, "softmax": ms, "values": ms, "output": ms}`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StageTimes {
    /// Q, K, V projections (on the GPU with the uploads of x and the mask).
    pub projections: f64,
    /// Content and relative logits, scaled and masked.
    pub logits: LogitTimes,
    pub softmax: f64,
    /// α V and the value term B w^V (on the GPU with Shaw's value buckets).
    pub values: f64,
    /// Concatenated heads times W_o (on the GPU with the readback of the output).
    pub output: f64,
}

/// The logits' milliseconds: part by part where they are computed apart (the CPU), or as a whole where one
/// kernel computes them together (the GPU's logits.wgsl: its parts are not measurable, so they are unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum LogitTimes {
    Parts {
        /// Q Kᵀ.
        content_logits: f64,
        /// The relative logits: gather (Shaw), skew (Music Transformer) or the materialized product.
        relative_logits: f64,
        /// Scaling by 1/√d_head and the causal and padding masks.
        scale_mask: f64,
    },
    /// The fused kernel: P = Q·Tᵀ, QKᵀ, the gather, the scale and the masks together.
    Fused(f64),
}

impl Default for LogitTimes {
    /// No time yet, in parts (the CPU adds into them).
    fn default() -> Self {
        LogitTimes::Parts { content_logits: 0.0, relative_logits: 0.0, scale_mask: 0.0 }
    }
}

impl LogitTimes {
    /// Content, relative and scale+mask together.
    pub fn total(&self) -> f64 {
        match *self {
            LogitTimes::Parts { content_logits, relative_logits, scale_mask } => content_logits + relative_logits + scale_mask,
            LogitTimes::Fused(ms) => ms,
        }
    }

    /// Adds another's times: part by part when both have parts, else as a whole.
    pub fn add(&mut self, o: &LogitTimes) {
        *self = match (*self, *o) {
            (LogitTimes::Parts { content_logits: c, relative_logits: r, scale_mask: s }, LogitTimes::Parts { content_logits, relative_logits, scale_mask }) => {
                LogitTimes::Parts { content_logits: c + content_logits, relative_logits: r + relative_logits, scale_mask: s + scale_mask }
            }
            (a, b) => LogitTimes::Fused(a.total() + b.total()),
        };
    }
}

impl StageTimes {
    /// Adds another's times (one head's into the sum).
    pub fn add(&mut self, o: &StageTimes) {
        self.projections += o.projections;
        self.logits.add(&o.logits);
        self.softmax += o.softmax;
        self.values += o.values;
        self.output += o.output;
    }

    /// `(name, ms)` of every known stage in order: projections, content_logits, relative_logits,
    /// scale_mask, logits (their sum), softmax, values, output; the logits' parts only where they are known.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        let mut named = vec![("projections", self.projections)];
        if let LogitTimes::Parts { content_logits, relative_logits, scale_mask } = self.logits {
            named.extend([("content_logits", content_logits), ("relative_logits", relative_logits), ("scale_mask", scale_mask)]);
        }
        named.extend([("logits", self.logits.total()), ("softmax", self.softmax), ("values", self.values), ("output", self.output)]);
        named
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn fused_logits_have_no_parts() {
        let gpu = StageTimes { projections: 1.0, logits: LogitTimes::Fused(2.0), softmax: 3.0, values: 4.0, output: 5.0 };
        assert_eq!(gpu.named(), [("projections", 1.0), ("logits", 2.0), ("softmax", 3.0), ("values", 4.0), ("output", 5.0)]);
        let json = serde_json::to_value(gpu).unwrap();
        assert_eq!(json["logits"], serde_json::json!({ "fused": 2.0 }));
        let mut cpu = StageTimes::default();
        cpu.add(&StageTimes { logits: LogitTimes::Parts { content_logits: 1.0, relative_logits: 2.0, scale_mask: 3.0 }, ..StageTimes::default() });
        let names: Vec<_> = cpu.named().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["projections", "content_logits", "relative_logits", "scale_mask", "logits", "softmax", "values", "output"]);
        assert_eq!(cpu.logits.total(), 6.0);
        cpu.add(&gpu);
        assert_eq!(cpu.logits, LogitTimes::Fused(8.0));
    }
}
