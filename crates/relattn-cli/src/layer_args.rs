//! [`LayerArgs`]: a layer's options, scenario file and memory budget turned into a checked scenario, its trace, or
//! a layer whose stages are computed for the (batch, head) asked.

use crate::args::LayerArgs;
use crate::files::read_file;
use relattn::attention::Config;
use relattn::files::capture::CaptureInfo;
use relattn::layer::forward::{self, Sizes, DEFAULT_MEMORY_LIMIT};
use relattn::layer::on_demand::{stage_work_bytes, Layer};
use relattn::layer::scenario::{sizes_of, Arrays, Scenario, Spec};
use relattn::options::{Limits, Resolved};
use relattn::timing::StageTimes;
use relattn::{Backend, Trace};

impl LayerArgs {
    /// The configuration, sizes and given arrays (the preset's, then the file's), checked ([`LayerOptions::resolve`]),
    /// and the description of a captured layer's file: its options are the layer's, save those given beside it.
    pub fn resolve(&self) -> relattn::Result<(Config, Spec, Arrays, bool, Option<CaptureInfo>)> {
        let file = self.tensors.as_deref().map(|p| read_file(p, self.budget())).transpose()?.unwrap_or_default();
        let options = file.capture.as_ref().map_or_else(|| self.options.clone(), |c| self.options.over(&c.options));
        let Resolved { config, spec, mut arrays, per_head_tables } = options.resolve(&Limits::NONE)?;
        arrays.extend(file.arrays);
        Ok((config, spec, arrays, per_head_tables, file.capture))
    }

    /// The memory budget in bytes: --max-memory-mb, or [`DEFAULT_MEMORY_LIMIT`].
    pub fn budget(&self) -> u64 {
        self.max_memory_mb.map_or(DEFAULT_MEMORY_LIMIT, |mb| mb << 20)
    }

    /// Builds the scenario and its trace within the memory budget (plus `extra` bytes the caller needs).
    /// The trace, the milliseconds of each stage and the memory estimate.
    pub fn trace(&self, extra: u64) -> relattn::Result<(Trace, StageTimes, u64)> {
        let (cfg, sc, estimate, _) = self.scenario(true, rayon::current_num_threads(), |_, _| Some(extra))?;
        let (t, times) = pollster::block_on(Backend::Cpu.trace(&cfg, &sc))?;
        Ok((t, times, estimate))
    }

    /// Builds the scenario and a [`Layer`] of it (its forward pass, fused), within the memory budget of the
    /// forward, one block of a head's stages, one whole stage and `extra` bytes: what rendering one stage of one
    /// head needs, however many heads the layer has. With the estimate and a captured layer's description.
    pub fn on_demand(&self, extra: u64) -> relattn::Result<(Layer, u64, Option<CaptureInfo>)> {
        let work = |cfg: &Config, s: &Sizes| stage_work_bytes(cfg, s)?.checked_add(extra);
        let (cfg, sc, estimate, capture) = self.scenario(false, rayon::current_num_threads(), work)?;
        let (projections, output) = forward::forward_projected(&cfg, &sc)?;
        Ok((Layer::new(&cfg, sc, projections, output)?, estimate, capture))
    }

    /// Builds the scenario once its memory estimate (with or without a trace, `parallel` heads at once,
    /// plus the `extra` bytes the caller needs for these sizes; `None`: past u64) fits the budget; returns it
    /// with the estimate and a captured layer's description.
    pub fn scenario(
        &self,
        trace: bool,
        parallel: usize,
        extra: impl Fn(&Config, &Sizes) -> Option<u64>,
    ) -> relattn::Result<(Config, Scenario, u64, Option<CaptureInfo>)> {
        let (cfg, spec, arrays, per_head, capture) = self.resolve()?;
        let sizes = sizes_of(&arrays, &spec)?;
        let widths = relattn::layer::scenario::check_config(&cfg, &sizes, &arrays)?;
        let limit = self.budget();
        let request = Sizes {
            batch: sizes.batch,
            n: sizes.n,
            d_model: sizes.d_model,
            per_head_tables: per_head,
            trace,
            parallel,
            widths: widths.own(sizes.d_model, cfg.heads),
        };
        let estimate = forward::check_budget(&cfg, &request, extra, limit)?;
        Ok((cfg, Scenario::build(&cfg, &spec, arrays, per_head)?, estimate, capture))
    }
}
