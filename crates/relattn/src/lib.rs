//! relattn: relative-position self-attention with every intermediate exposed — everything above the math: a layer's options, scenario and capture files and
//! the trace as an .npz, figures and the lecture's pictures, the trained chorale models, the page ⇄ worker protocol and the page's application as plain Rust.
//!
//! The math is the crate relattn-core, re-exported here under the same names ([`positions`], [`attention`], [`layer`], …) for the wasm, CLI and Python crates.
//! This crate's modules, each built only on the ones below it and on relattn-core (tests/layout.rs checks that no import runs back up), and the crates around
//! it: docs/src/architecture.md.

pub mod app;
pub mod files;
pub mod options;
pub mod pictures;
pub mod protocol;
pub mod render;
pub mod trained;

pub use relattn_core::{atlas, attention, backend, core, error, gpu, layer, positions, stage, timing};
pub use relattn_core::{Backend, Config, Edge, Error, Implementation, Method, Result, Scenario, Spec, Stage, Trace};
