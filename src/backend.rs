//! Where the layer runs: the CPU ([`crate::model`]) or a GPU ([`crate::gpu`]), with the same results.
//!
//! [`Backend::detect`] picks the GPU when one is usable and falls back to the CPU, keeping the reason so
//! the page and the CLI can say why.

use crate::error::Result;
use crate::gpu::GpuContext;
use crate::model;
use crate::scenario::Scenario;
use crate::trace::Trace;
use crate::Config;
use ndarray::Array3;

/// The CPU, or a GPU context built once and reused (one per app, so its size does not matter).
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    Cpu,
    Gpu(GpuContext),
}

impl Backend {
    /// The GPU if a device can be had, else the CPU and the reason there is no GPU.
    pub async fn detect() -> (Backend, Option<String>) {
        match GpuContext::try_new().await {
            Ok(ctx) => (Backend::Gpu(ctx), None),
            Err(why) => (Backend::Cpu, Some(why)),
        }
    }

    /// "cpu" or "gpu".
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu(_) => "gpu",
        }
    }

    /// A line for a footer: "CPU" or "GPU: <adapter> (<api>, <type>, <driver>)".
    pub fn description(&self) -> String {
        match self {
            Backend::Cpu => "CPU".into(),
            Backend::Gpu(ctx) => format!("GPU: {}", ctx.description()),
        }
    }

    /// The layer's output (b, n, d_model).
    pub async fn forward_async(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        match self {
            Backend::Cpu => model::forward(cfg, sc),
            Backend::Gpu(ctx) => ctx.forward_async(cfg, sc).await,
        }
    }

    /// The output and every intermediate.
    pub async fn trace_async(&mut self, cfg: &Config, sc: &Scenario) -> Result<Trace> {
        match self {
            Backend::Cpu => model::trace(cfg, sc),
            Backend::Gpu(ctx) => ctx.trace_async(cfg, sc).await,
        }
    }

    /// Blocking [`Backend::forward_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn forward(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        match self {
            Backend::Cpu => model::forward(cfg, sc),
            Backend::Gpu(ctx) => ctx.forward(cfg, sc),
        }
    }

    /// Blocking [`Backend::trace_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn trace(&mut self, cfg: &Config, sc: &Scenario) -> Result<Trace> {
        match self {
            Backend::Cpu => model::trace(cfg, sc),
            Backend::Gpu(ctx) => ctx.trace(cfg, sc),
        }
    }
}
