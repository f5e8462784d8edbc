//! `relattn bench`: the forward pass alone, timed, on the CPU (threads) or the GPU.

use crate::args::LayerArgs;
use crate::files::{write_atomic, write_file};
use crate::model::backend_named;
use crate::report::{peak_rss_mib, stages_json};
use relattn::attention::Config;
use relattn::{Backend, Error};
use std::path::Path;

/// Useful floating-point operations of one forward: four projections, QKᵀ and αV over the pairs that are
/// computed (n(n + 1)/2 when causal: a causal forward skips the keys after each query), and the two small
/// relative products.
pub fn forward_flops(cfg: &Config, (b, n, d): (usize, usize, usize)) -> f64 {
    let (b, n, d, h, r) = (b as f64, n as f64, d as f64, cfg.heads as f64, cfg.table_rows() as f64);
    let dh = d / h;
    let rel_v = if cfg.has_rel_v() { 1.0 } else { 0.0 };
    let pairs = if cfg.causal { n * (n + 1.0) / 2.0 } else { n * n };
    b * (8.0 * n * d * d + h * (4.0 * pairs * dh + 2.0 * n * r * dh * (1.0 + rel_v)))
}

pub fn run(layer: &LayerArgs, reps: u64, threads: Option<u64>, backend: &str, save_output: Option<&Path>, stages: bool) -> relattn::Result<serde_json::Value> {
    let threads = threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| Error::invalid("threads", threads, e))?;
    let (cfg, sc, estimate, _) = layer.scenario(false, threads, |_, _| Some(0))?;
    let mut backend = backend_named(backend)?;
    pool.install(|| -> relattn::Result<serde_json::Value> {
        // One warm-up (pipelines, buffers), then the timed repetitions.
        let output = pollster::block_on(backend.output(&cfg, &sc))?;
        let mut ms = Vec::new();
        for _ in 0..reps {
            let start = std::time::Instant::now();
            let out = pollster::block_on(backend.output(&cfg, &sc))?;
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            drop(out);
        }
        // The peak before the staged forward, which keeps (n, n) stages on the CPU.
        let peak_rss = peak_rss_mib();
        let stages = if stages { Some(stages_json(&pollster::block_on(backend.forward(&cfg, &sc))?.1)) } else { None };
        let adapter = match &backend {
            Backend::Gpu(ctx) => serde_json::json!(ctx.description()),
            Backend::Cpu => serde_json::Value::Null,
        };
        ms.sort_by(f64::total_cmp);
        if let Some(path) = save_output {
            use ndarray_npy::WriteNpyExt;
            write_atomic(path, |tmp| write_file(tmp, |w| output.write_npy(w).map_err(|e| Error::Write { path: "the output".into(), reason: e.to_string() })))?;
        }
        let (b, n, d) = sc.dims();
        let median = ms[ms.len() / 2];
        Ok(serde_json::json!({
            "backend": backend.name(), "adapter": adapter, "method": cfg.method.to_string(), "implementation": format!("{:?}", cfg.implementation).to_lowercase(),
            "batch": b, "n": n, "d_model": d, "heads": cfg.heads, "clip": cfg.clip, "causal": cfg.causal, "rel_v": cfg.has_rel_v(),
            "threads": threads, "reps": reps, "isa": relattn::core::simd::Isa::best().name(),
            "ms_per_forward": median, "ms_min": ms[0],
            "gflop_per_s": forward_flops(&cfg, sc.dims()) / median / 1e6,
            "peak_rss_mib": peak_rss, "estimate_bytes": estimate,
            "stages_ms": stages,
        }))
    })
}
