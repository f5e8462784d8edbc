//! relattn: relative-position self-attention with every intermediate exposed.
//!
//! One folder per concept, each built only on the ones listed before it (tests/layout.rs checks that no
//! import runs back up):
//!
//! - [`error`]: every way a request can be refused; [`timing`]: per-stage times of either backend.
//! - [`core`]: matrix products, the row softmax, checks for values that left float32's range; [`stage`]: the
//!   views of a trace by name, and what is said about one (each scheme describes the stages it shapes).
//! - [`positions`]: the position schemes, one module each (Shaw et al. 2018's gather, the Music
//!   Transformer's skew) and the distances and table rows they share.
//! - [`attention`]: one head, end to end, stage by stage or fused with no (n, n) array.
//! - [`layer`]: a layer's tensors, forward pass and memory budget, its trace, which stages it has and what
//!   they say, and a layer whose stages are computed for one (batch, head) when looked at.
//! - [`render`]: colormaps, heatmap rasters and figures; [`gpu`]: the same layer and trace on a GPU (wgpu:
//!   Vulkan natively, WebGPU in the browser).
//! - [`backend`]: CPU or GPU behind one interface; [`pictures`]: the lecture's pictures of each scheme beside
//!   the stages (RoPE's turning pair and kernels, ALiBi's slopes, T5's staircase, how alike positions are).
//! - [`trained`]: a decoder of these layers loaded from a trained model's safetensors file, with a key/value
//!   cache for sampling, and the Bach chorale data it was trained on, with MIDI.
//! - [`protocol`]: the page ⇄ worker messages and the wasm API's requests and answers, defined once (the page's
//!   JavaScript types are generated from them).
//! - [`app`]: the page's application (Parameters mode's sessions, the schemes compared, Model mode's chorale
//!   sessions) as plain Rust, tested natively.
//!
//! The page's worker API, thin wasm-bindgen shells over [`app`], is the crate relattn-wasm; the command line is
//! relattn-cli (the workspace's root Cargo.toml lists them).

pub mod app;
pub mod attention;
pub mod backend;
pub mod core;
pub mod error;
pub mod gpu;
pub mod layer;
pub mod pictures;
pub mod positions;
pub mod protocol;
pub mod render;
pub mod stage;
pub mod timing;
pub mod trained;

pub use attention::{Config, Implementation};
pub use backend::Backend;
pub use error::{Error, Result};
pub use layer::scenario::{Scenario, Spec};
pub use layer::trace::Trace;
pub use positions::table::Edge;
pub use positions::Method;
pub use stage::Stage;
