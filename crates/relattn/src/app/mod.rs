//! The page's application as plain Rust, built and tested natively (`cargo test`: tests/app.rs), candle's way: the wasm exports in crates/relattn-wasm/src/ are
//! thin shells over it that convert JavaScript values and errors at the boundary.
//!
//! - [`request`]: a Parameters-mode [`crate::protocol::Request`] resolved within the page's limits, and how a layer is held (whole, or on demand) within its
//!   memory budget;
//! - [`session`]: a computed layer ([`session::Session`]): its [`crate::protocol::Info`], the stages of the (batch, head) shown cut and coloured, exact cells,
//!   a table row's readers, the trace as an .npz;
//! - [`pool`]: a layer held on demand computed by a pool of workers (the page on every core), bit for bit the one worker's;
//! - [`compare`]: every position scheme side by side on one input; [`model`]: Model mode, a trained model and the test pieces ([`model::ChoraleSession`]).
//!
//! Where a computation runs is a [`Runner`]'s choice: the page's picks WebGPU or the CPU per request and says why (crates/relattn-wasm/src/backend.rs); [`Cpu`]
//! computes on the CPU, as the native tests do.

pub mod compare;
pub mod model;
pub mod pool;
pub mod request;
pub mod session;

use crate::protocol::{BackendChoice, BackendUsed};
use relattn_core::backend::Backend;
use relattn_core::error::Result;

/// What a [`Runner`] computed, and where.
pub struct Ran<T> {
    pub result: Result<T>,
    pub backend: BackendUsed,
    /// Milliseconds spent on the GPU before it failed and the CPU computed instead (0 when it did not fail).
    pub gpu_failed_ms: f64,
}

/// Runs a computation on the backend a request asks for (`choice`), or on the CPU when that one cannot, and
/// says where it ran. `f` may run twice: on the GPU, then again on the CPU when the GPU failed.
#[allow(async_fn_in_trait)] // the app awaits it on one thread: no Send bound is needed
pub trait Runner {
    async fn run<T>(&self, choice: BackendChoice, f: impl AsyncFn(&mut Backend) -> Result<T>) -> Ran<T>;
}

/// The CPU, whatever the request asks for: the native tests' runner.
pub struct Cpu;

impl Runner for Cpu {
    async fn run<T>(&self, _: BackendChoice, f: impl AsyncFn(&mut Backend) -> Result<T>) -> Ran<T> {
        let result = f(&mut Backend::Cpu).await;
        Ran { result, backend: BackendUsed { on_gpu: false, name: "CPU".into(), note: String::new(), provisional: false }, gpu_failed_ms: 0.0 }
    }
}
