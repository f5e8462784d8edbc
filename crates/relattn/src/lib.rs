//! relattn: relative-position self-attention with every intermediate exposed — everything above the math.
//!
//! The math (positions, attention, the fused kernel, the layer, on demand, the GPU path) is the crate
//! relattn-core, re-exported here under the same names ([`positions`], [`attention`], [`layer`], …) for the
//! wasm, CLI and Python crates. This crate's own folders, each built only on the ones listed before it and on
//! relattn-core (tests/layout.rs checks that no import runs back up):
//!
//! - [`options`]: a layer's options, one spelling for the command line, Python and the page, checked in one place.
//! - [`files`]: scenario files read (every size checked before anything is inflated), a captured layer's
//!   description, a trace written as an .npz.
//! - [`render`]: colormaps, heatmap rasters and figures; [`pictures`]: the lecture's pictures of each scheme.
//! - [`trained`]: a decoder of these layers loaded from a trained model's safetensors file, with a key/value
//!   cache for sampling, and the Bach chorale data it was trained on, with MIDI.
//! - [`protocol`]: the page ⇄ worker messages and the wasm API's requests and answers, defined once (the page's
//!   JavaScript types are generated from them).
//! - [`app`]: the page's application (Parameters mode's sessions, the schemes compared, Model mode) as plain
//!   Rust, tested natively.
//!
//! The page's worker API, thin wasm-bindgen shells over [`app`], is the crate relattn-wasm; the command line is
//! relattn-cli (the workspace's root Cargo.toml lists them).

pub mod app;
pub mod files;
pub mod options;
pub mod pictures;
pub mod protocol;
pub mod render;
pub mod trained;

pub use relattn_core::{attention, backend, core, error, gpu, layer, positions, stage, timing};
pub use relattn_core::{Backend, Config, Edge, Error, Implementation, Method, Result, Scenario, Spec, Stage, Trace};
