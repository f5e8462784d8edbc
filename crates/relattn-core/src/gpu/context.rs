//! Device set-up, apart from compute (as in wgpu's compute examples): the adapter and device request, the
//! kernels' compute pipelines, and the context that keeps them (with the buffers of [`super::buffers`]) from
//! one compute to the next.

use super::kernels::{flag, Kernels, SOURCES};
use super::plan::WORK_BYTES;
use crate::error::gpu::GpuError;
use crate::positions::rope::Rope;
use std::collections::HashMap;

/// A device, its queue, the compiled kernels and buffers kept between calls: build once, reuse for
/// every recompute.
pub struct GpuContext {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) kernels: Kernels,
    pub(super) limits: wgpu::Limits,
    /// Storage buffers by role, grown on demand and reused.
    pub(super) buffers: HashMap<&'static str, wgpu::Buffer>,
    /// The mappable buffer results are copied into for reading back.
    pub(super) staging: Option<wgpu::Buffer>,
    /// Largest work buffer of a chunk, bytes ([`WORK_BYTES`] unless set).
    pub(super) work_bytes: u64,
    /// The RoPE options, n and d_head whose table (made from the options) the "rope_cos" and "rope_sin"
    /// buffers hold, if any.
    pub(super) rope_kept: Option<(Rope, usize, usize)>,
}

impl GpuContext {
    /// Requests an adapter (high performance preferred) and a device with the adapter's limits, and builds
    /// the kernels. The error says why there is no GPU (no adapter, no device, a kernel's pipeline that
    /// failed to build), for the page and the CLI to show.
    pub async fn try_new() -> Result<GpuContext, GpuError> {
        let (device, queue) = Self::request_device().await?;
        Self::build(device, queue, None).await
    }

    /// Test hook, not a feature: [`GpuContext::try_new`] with `kernel`'s WGSL ("matmul", "logits",
    /// "softmax", "buckets", "attend", "rope" or "norm") replaced by a module that does not compile, to force a failed pipeline
    /// creation. Always an `Err`: [`GpuError::Pipeline`] naming that kernel.
    #[cfg(feature = "test-hooks")]
    pub async fn try_new_with_broken_kernel_for_test(kernel: &str) -> Result<GpuContext, GpuError> {
        let (device, queue) = Self::request_device().await?;
        Self::build(device, queue, Some(kernel)).await
    }

    async fn request_device() -> Result<(wgpu::Device, wgpu::Queue), GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        adapter
            .request_device(&wgpu::DeviceDescriptor { label: Some("relattn"), required_limits: adapter.limits(), ..Default::default() })
            .await
            .map_err(|e| GpuError::NoDevice { adapter: info.name.clone(), backend: format!("{:?}", info.backend), reason: e.to_string() })
    }

    /// The context with every kernel's pipeline built. Each pipeline is created inside a validation error
    /// scope: a shader that does not compile or a pipeline the device refuses is [`GpuError::Pipeline`]
    /// ("the compute pipeline of <kernel>.wgsl failed: …"), not a panic. `broken` names a kernel whose
    /// WGSL is replaced by a module that does not compile (the test hook).
    async fn build(device: wgpu::Device, queue: wgpu::Queue, broken: Option<&str>) -> Result<GpuContext, GpuError> {
        /// Deliberately invalid WGSL (an unknown identifier), for the test hook above.
        const BROKEN: &str = "// test hook: this module does not compile\n@compute @workgroup_size(1)\nfn main() { let x: u32 = no_such_value; }\n";
        if let Some(b) = broken {
            if !SOURCES.iter().any(|(name, _)| *name == b) {
                return Err(GpuError::NoSuchKernel(b.into()));
            }
        }
        let mut pipelines = Vec::with_capacity(SOURCES.len());
        for (name, source) in SOURCES {
            let source = format!("{}\n{}", flag::wgsl(), if broken == Some(name) { BROKEN } else { source });
            let label = format!("{name}.wgsl");
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(&label), source: wgpu::ShaderSource::Wgsl(source.into()) });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            if let Some(e) = scope.pop().await {
                return Err(GpuError::Pipeline { kernel: name.into(), reason: one_line(e) });
            }
            pipelines.push(pipeline);
        }
        let [matmul, logits, softmax, buckets, attend, rope, norm] =
            <[wgpu::ComputePipeline; 7]>::try_from(pipelines).unwrap_or_else(|_| unreachable!("one pipeline per kernel"));
        let kernels = Kernels { matmul, logits, softmax, buckets, attend, rope, norm };
        let limits = device.limits();
        Ok(GpuContext { device, queue, kernels, limits, buffers: HashMap::new(), staging: None, work_bytes: WORK_BYTES, rope_kept: None })
    }

    /// The adapter behind the device: name, backend, driver.
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.device.adapter_info()
    }

    /// One line naming the adapter, e.g. "llvmpipe (LLVM 19.1.7, 256 bits) (Vulkan, Cpu)".
    pub fn description(&self) -> String {
        let i = self.adapter_info();
        let driver = if i.driver_info.is_empty() { String::new() } else { format!(", {}", i.driver_info) };
        format!("{} ({:?}, {:?}{driver})", i.name, i.backend, i.device_type)
    }

    /// The device, for a caller that watches it (lost callback, error scopes) or destroys it.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The device's limits that decide how a layer is cut.
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Caps the (heads, rows, n) work buffers of one chunk at `bytes` (default [`WORK_BYTES`]): smaller caps
    /// cut a layer into more chunks (one head, then fewer rows, at a time). Tests use it to reach every cut.
    pub fn set_work_bytes(&mut self, bytes: u64) {
        self.work_bytes = bytes;
    }

    /// Test hook, not a feature: pretends the device allows only `bytes` per storage buffer binding (the
    /// real limit is unchanged), so that an ordinary layer takes the over-the-limits path
    /// ([`GpuError::TooLarge`] from the plan, nothing allocated) in a test without allocating gigabytes.
    #[cfg(feature = "test-hooks")]
    pub fn pretend_max_binding_for_test(&mut self, bytes: u64) {
        self.limits.max_storage_buffer_binding_size = bytes;
    }
}

/// `e`'s text on one line (wgpu's validation errors span several).
fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}
