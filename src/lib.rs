//! relattn: relative-position self-attention with every intermediate exposed.
//!
//! - [`relpos`]: distances j − i and the table row each (query, key) pair reads.
//! - [`shaw`]: Shaw et al. 2018's relative terms, efficient (gather, buckets) and materialized.
//! - [`skew`]: the Music Transformer's skew, masked and unmasked.
//! - [`attention`]: one head, end to end; [`model`]: projections, heads, output.
//! - [`scenario`]: the tensors of a layer, from a file or generated; [`trace`]: every intermediate;
//!   [`layer`]: a layer whose stages are computed for one (batch, head) when looked at;
//!   [`stage`]: each view of a trace and its title, formula and axes (the one place they are spelled).
//! - [`render`]: colormaps, heatmap rasters and figures; [`timing`]: per-stage times of either backend.
//! - [`gpu`]: the same layer and trace on a GPU (wgpu: Vulkan natively, WebGPU in the browser);
//!   [`backend`]: CPU or GPU behind one interface.
//! - [`transformer`]: a decoder of these layers, loaded from a trained model's safetensors file, with a
//!   key/value cache for sampling; [`chorales`]: the Bach chorale data it was trained on, and MIDI.

pub mod attention;
pub mod backend;
pub mod chorales;
pub mod error;
pub mod fused;
pub mod gpu;
pub mod layer;
pub mod matmul;
pub mod model;
pub mod presets;
pub mod relpos;
pub mod render;
pub mod scenario;
pub mod shaw;
pub mod skew;
pub mod stage;
pub mod timing;
pub mod trace;
pub mod transformer;

#[cfg(target_arch = "wasm32")]
pub mod web;

pub use attention::{Config, Implementation, Method};
pub use backend::Backend;
pub use error::{Error, Result};
pub use relpos::Edge;
pub use scenario::{Scenario, Spec};
pub use stage::Stage;
pub use trace::Trace;
