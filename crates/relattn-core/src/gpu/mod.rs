//! The layer on a GPU through wgpu (Vulkan natively, WebGPU in the browser), with the same numbers and the same [`crate::layer::trace::Trace`] as the CPU path
//! in [`crate::layer::forward`]; why the GPU could not run is a [`crate::error::gpu::GpuError`]. Kernels, one WGSL file each next to this one:
//! - `matmul.wgsl`: strided, batched, tiled (64×64 blocks, 4×4 per invocation) `A·B (+ bias) (+ C)`; the projections `x·W + b`, the small relative product
//!   `P = Q·Tᵀ` (Lq × R, never Lq × Lk × d_head), `α·V`, Shaw's `B·w^V` and `·W_o + b_o`; `norm.wgsl`: q/k RMS norms (per head or over the projection);
//!   `rope.wgsl`: RoPE's rotation of Q and K.
//! - `logits.wgsl`: `(QKᵀ + P[i, row(j − i)]) · scale` in one pass (soft-capped `c·tanh(e / c)`), the relative term read by index (the Music
//!   Transformer's skew is this same gather: [`crate::positions::music`] shows they are equal); `softmax.wgsl`: the stable row softmax with the causal,
//!   window and key-padding masks and a sink logit per head, zeros for a fully masked row; `buckets.wgsl`: Shaw's value buckets
//!   `B[i, r] = Σ_{j: row(j−i) = r} α_ij`.
//! - `attend.wgsl`: a forward's head in one kernel, tiled as flash attention (32 query rows a workgroup, K and V tiles in workgroup memory, online softmax,
//!   `Σ_j α_ij (v_j + a^V_ij)`), no (rows, n) array: [`GpuContext::output`] for heads up to 64 wide (d_head and d_v); traces and [`GpuContext::forward`] use
//!   the staged kernels.
//!
//! Q and K are (n, h·d_head), V and the heads (n, h·d_v), the output (n, d_out): heads and values of their own widths (DeepSeek's multi-head latent
//! attention) as the CPU's [`crate::layer::forward`]; windows, soft-caps and sinks are flags of the kernels that take a chunk of rows.
//!
//! Work is cut into chunks of (heads, query rows) (`plan`, [`WORK_BYTES`]); device set-up is apart from compute (`context`). Readback is asynchronous (WebGPU
//! has no blocking map): [`GpuContext::trace`], [`GpuContext::forward`] and [`GpuContext::output`] are async everywhere (natively: pollster blocks on them).

mod buffers;
mod context;
mod kernels;
mod plan;
mod record;
mod run;

pub use context::GpuContext;
pub use plan::WORK_BYTES;
