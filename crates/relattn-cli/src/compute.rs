//! `relattn compute`: a layer's whole trace written as an .npz.

use crate::args::LayerArgs;
use crate::files::{write_atomic, write_file};
use crate::report::{peak_rss_mib, stages_json, summary};
use crate::{say, Stop};
use std::path::Path;
use std::time::Instant;

/// Computes the trace of `layer` and writes it to `out`; with `json`, prints its summary.
pub fn run(layer: &LayerArgs, out: &Path, json: bool, start: Instant) -> Result<(), Stop> {
    let (t, times, estimate) = layer.trace(0)?;
    write_atomic(out, |tmp| write_file(tmp, |w| relattn::files::write_trace(&t, w)))?;
    if json {
        let unread = layer.options.unread(t.config.method);
        let mut s = summary(&t.config, t.dims(), t.output.dim().2, &t.stages(), out, start.elapsed().as_secs_f64() * 1e3, &unread);
        s["stages_ms"] = stages_json(&times);
        s["estimate_bytes"] = estimate.into();
        s["peak_rss_mib"] = peak_rss_mib().into();
        say(s)?;
    }
    Ok(())
}
