//! The layer on a GPU through wgpu (Vulkan natively, WebGPU in the browser), with the same numbers and
//! the same [`crate::layer::trace::Trace`] as the CPU path in [`crate::layer::forward`].
//!
//! Kernels, one WGSL file each next to this one:
//! - `matmul.wgsl`: strided, batched, tiled (64×64 blocks, 4×4 per invocation) `A·B (+ bias) (+ C)`; the projections `x·W + b`, the
//!   small relative product `P = Q·Tᵀ` (Lq × R, never Lq × Lk × d_head), `α·V`, Shaw's `B·w^V` and `·W_o + b_o`.
//! - `logits.wgsl`: `QKᵀ` plus the relative term `P[i, row(j − i)]` read by index in one pass, scaled by
//!   1/sqrt(d_head); the Music Transformer's skew is this same gather (src/positions/music.rs shows they are equal).
//! - `softmax.wgsl`: stable row softmax with the causal and key-padding masks; fully masked rows give zeros.
//! - `buckets.wgsl`: Shaw's value buckets `B[i, r] = Σ_{j: row(j−i) = r} α_ij`.
//! - `attend.wgsl`: a forward's whole head in one kernel (logits by tile, online softmax, `Σ_j α_ij (v_j +
//!   a^V_ij)`), no (rows, n) array: what [`GpuContext::output`] runs for heads up to 64 wide; traces and
//!   the profiled [`GpuContext::forward`] use the four kernels above, stage by stage.
//!
//! Work is cut into chunks of (heads, query rows): after the projections everything is row-local, so a
//! chunk needs only its rows of the (rows, n) logits and weights. Small layers run every head in one chunk;
//! larger ones go one head at a time and, beyond [`WORK_BYTES`] or the device's
//! `max_storage_buffer_binding_size` / `max_compute_workgroups_per_dimension`, a few rows at a time. A layer
//! whose single (n, d_model) projection does not fit one binding is refused with [`crate::error::gpu::GpuError::TooLarge`].
//!
//! [`crate::attention::Implementation::Materialized`] is computed with the efficient kernels (the same numbers); its trace,
//! like the CPU's, has no value buckets and no skew steps. The Music Transformer's skew steps are filled on
//! the CPU from the GPU's `P` through [`crate::positions::music::skew`].
//!
//! Readback is asynchronous (WebGPU has no blocking map): [`GpuContext::trace`], [`GpuContext::forward`]
//! and [`GpuContext::output`] are async everywhere (natively, block on them with pollster).
//!
//! Modules, device set-up apart from compute (as in wgpu's compute examples):
//! - `context`: adapter and device request, the kernels' pipelines, the [`GpuContext`] that keeps them.
//! - `kernels`: the WGSL sources, each kernel's `Params` uniform mirrored in Rust, one dispatch of each.
//! - `buffers`: storage buffers by role (grown and reused), the staging buffer and readback.
//! - `plan`: the cut of a layer into (heads, rows) chunks against [`WORK_BYTES`] and the device's limits.
//! - `run`: a forward or trace: checks, uploads, every chunk's kernels, profiling, readback.
//! - `record`: a trace's intermediates read back chunk by chunk, and the [`crate::layer::trace::Trace`] of them.
//!
//! Why the GPU could not run is a [`crate::error::gpu::GpuError`] (with the other errors, which every floor uses).

mod buffers;
mod context;
mod kernels;
mod plan;
mod record;
mod run;

pub use context::GpuContext;
pub use plan::WORK_BYTES;
