//! What `compute`, `render` and `bench` print with --json: a layer's summary, its stages' times, the peak memory.

use relattn::attention::Config;
use relattn::timing::StageTimes;
use relattn::Stage;
use std::path::Path;

/// The JSON summary of a computed layer; `unread`: the options given that its method does not read
/// ([`relattn::options::LayerOptions::unread`]).
pub fn summary(cfg: &Config, (b, h, n): (usize, usize, usize), d_model: usize, stages: &[Stage], out: &Path, ms: f64, unread: &[String]) -> serde_json::Value {
    serde_json::json!({
        "method": cfg.method.to_string(),
        "unread_options": unread,
        "batch": b, "heads": h, "n": n, "d_model": d_model, "clip": cfg.clip,
        "causal": cfg.causal, "rel_v": stages.contains(&Stage::RelV),
        "stages": stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "out": out.display().to_string(),
        "ms": ms,
    })
}

/// `stages_ms`: projections, logits, softmax, values, output, and on the CPU the logits' parts; CPU head
/// stages summed over heads (CPU time).
pub fn stages_json(t: &StageTimes) -> serde_json::Value {
    serde_json::Value::Object(t.named().into_iter().map(|(name, ms)| (name.to_string(), serde_json::json!(ms))).collect())
}

/// Peak resident memory of this process in MiB (Linux's VmHWM), if known.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
