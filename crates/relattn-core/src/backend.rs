//! Where the layer runs: the CPU ([`crate::layer::forward`]) or a GPU ([`crate::gpu`]), with the same results and
//! the same [`StageTimes`], behind one async interface (natively, block on it with pollster).

use crate::attention::Config;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::layer::forward::{self, Projections};
use crate::layer::scenario::Scenario;
use crate::layer::trace::Trace;
use crate::timing::StageTimes;
use ndarray::Array3;

/// The CPU, or a GPU context built once and reused (one per app, so its size does not matter).
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    Cpu,
    Gpu(GpuContext),
}

impl Backend {
    /// "cpu" or "gpu".
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu(_) => "gpu",
        }
    }

    /// The output and every intermediate, and the time of each stage.
    pub async fn trace(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Trace, StageTimes)> {
        match self {
            Backend::Cpu => forward::trace_timed(cfg, sc),
            Backend::Gpu(ctx) => ctx.trace(cfg, sc).await,
        }
    }

    /// The layer's output (b, n, d_model) and the time of each stage (on the GPU each stage is submitted
    /// alone and waited for, a little slower than [`Backend::output`]).
    pub async fn forward(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Array3<f32>, StageTimes)> {
        match self {
            Backend::Cpu => forward::forward_timed(cfg, sc),
            Backend::Gpu(ctx) => ctx.forward(cfg, sc).await,
        }
    }

    /// [`Backend::output`] and the projections Q, K, V a [`crate::layer::on_demand::Layer`] computes its stages from
    /// (the CPU's forward keeps its own; the GPU's stay on the GPU, so the CPU computes them again).
    pub async fn forward_projected(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Projections, Array3<f32>)> {
        match self {
            Backend::Cpu => forward::forward_projected(cfg, sc),
            Backend::Gpu(ctx) => {
                let output = ctx.output(cfg, sc).await?;
                Ok((forward::projections(cfg, sc)?, output))
            }
        }
    }

    /// The layer's output (b, n, d_model) alone, as fast as the backend goes (what a timed repetition or a
    /// model's layer needs).
    pub async fn output(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        match self {
            Backend::Cpu => forward::forward(cfg, sc),
            Backend::Gpu(ctx) => ctx.output(cfg, sc).await,
        }
    }
}
