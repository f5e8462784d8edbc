//! relattn-core: relative-position self-attention with every intermediate exposed — the math alone: the position schemes (Shaw et al. 2018's gather, the
//! Music Transformer's skew, RoPE, ALiBi, T5's buckets, absolute sinusoids), one head stage by stage or fused (flash-style, no (n, n) array), a layer with its
//! trace and memory budget, whole or a (batch, head) on demand, on the CPU or a GPU (wgpu: Vulkan natively, WebGPU in the browser). No I/O, no front end:
//! files, options, figures, the trained models and the page's application are the crate `relattn`, above it.
//!
//! The modules, each built only on the ones below it (relattn's tests/layout.rs checks that no import runs back up): docs/src/architecture.md.
//! Features: `serde` (Serialize/Deserialize of the options' enums, stage metadata, times and error kinds), `ts` (their TypeScript types, for the page),
//! `test-hooks` (broken GPU kernels and pretended device limits, for tests).

pub mod atlas;
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
