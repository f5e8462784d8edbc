//! relattn-core: relative-position self-attention with every intermediate exposed — the math alone.
//!
//! One folder per concept, each built only on the ones listed before it (relattn's tests/layout.rs checks
//! that no import runs back up):
//!
//! - [`error`]: every way a request can be refused; [`timing`]: per-stage times of either backend.
//! - [`core`]: matrix products, the row softmax, SIMD lanes, checks for values that left float32's range;
//!   [`stage`]: the views of a trace by name, and what is said about one.
//! - [`positions`]: the position schemes, one module each (Shaw et al. 2018's gather, the Music Transformer's
//!   skew, RoPE, ALiBi, T5's buckets, absolute sinusoids) and the distances and table rows they share.
//! - [`attention`]: one head, end to end, stage by stage or fused (flash-style, no (n, n) array).
//! - [`layer`]: a layer's tensors, forward pass and memory budget, its trace, which stages it has and what
//!   they say, and a layer whose stages are computed for one (batch, head) when looked at.
//! - [`gpu`]: the same layer and trace on a GPU (wgpu: Vulkan natively, WebGPU in the browser);
//!   [`backend`]: CPU or GPU behind one interface.
//!
//! Files, options, figures, the trained models and the page's application are the crate `relattn`, above it.
//! Features: `serde` (Serialize/Deserialize of the options' enums, stage metadata, times and error kinds),
//! `ts` (their TypeScript types, for the page), `test-hooks` (broken GPU kernels for tests).

pub mod attention;
pub mod backend;
pub mod core;
pub mod error;
pub mod gpu;
pub mod layer;
pub mod positions;
pub mod stage;
pub mod timing;

pub use attention::{Config, Implementation};
pub use backend::Backend;
pub use error::{Error, Result};
pub use layer::scenario::{Scenario, Spec};
pub use layer::trace::Trace;
pub use positions::table::Edge;
pub use positions::Method;
pub use stage::Stage;
