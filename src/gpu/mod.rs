//! The layer on a GPU through wgpu (Vulkan natively, WebGPU in the browser), with the same numbers and
//! the same [`Trace`] as the CPU path in [`crate::model`].
//!
//! Kernels, one WGSL file each next to this one:
//! - `matmul.wgsl`: strided, batched, tiled (64×64 blocks, 4×4 per invocation) `A·B (+ bias) (+ C)`; the projections `x·W + b`, the
//!   small relative product `P = Q·Tᵀ` (Lq × R, never Lq × Lk × d_head), `α·V`, Shaw's `B·w^V` and `·W_o + b_o`.
//! - `logits.wgsl`: `QKᵀ` plus the relative term `P[i, row(j − i)]` read by index in one pass, scaled by
//!   1/sqrt(d_head); the Music Transformer's skew is this same gather (src/skew.rs shows they are equal).
//! - `softmax.wgsl`: stable row softmax with the causal and key-padding masks; fully masked rows give zeros.
//! - `buckets.wgsl`: Shaw's value buckets `B[i, r] = Σ_{j: row(j−i) = r} α_ij`.
//!
//! Work is cut into chunks of (heads, query rows): after the projections everything is row-local, so a
//! chunk needs only its rows of the (rows, n) logits and weights. Small layers run every head in one chunk;
//! larger ones go one head at a time and, beyond [`WORK_BYTES`] or the device's
//! `max_storage_buffer_binding_size` / `max_compute_workgroups_per_dimension`, a few rows at a time. A layer
//! whose single (n, d_model) projection does not fit one binding is refused with [`Error::Gpu`].
//!
//! [`Implementation::Materialized`] is computed with the efficient kernels (the same numbers); its trace,
//! like the CPU's, has no value buckets and no skew steps. The Music Transformer's skew steps are filled on
//! the CPU from the GPU's `P` through [`crate::skew::skew`].
//!
//! Readback is asynchronous (WebGPU has no blocking map); [`GpuContext::forward_async`] and
//! [`GpuContext::trace_async`] work everywhere, [`GpuContext::forward`] and [`GpuContext::trace`] block
//! (native only).

use crate::attention::{Config, Implementation, Method};
use crate::error::{Error, Result};
use crate::relpos::{self, Edge};
use crate::scenario::Scenario;
use crate::skew;
use crate::trace::{SkewTrace, Trace};
use ndarray::{s, Array2, Array3, Array4, ArrayView3, Axis};
use std::collections::HashMap;
use wgpu::util::DeviceExt;

/// Largest work buffer of one chunk ((heads, rows, n) logits or weights), in bytes.
pub const WORK_BYTES: u64 = 128 << 20;

/// Side of the square blocks of C that one workgroup of matmul.wgsl and logits.wgsl computes.
const BLOCK: usize = 64;
/// Side of the square workgroup of buckets.wgsl.
const TILE: usize = 16;

/// Wall-clock milliseconds per stage of one forward, measured by submitting each stage alone and waiting
/// for the device (so their sum is a little above an unprofiled forward).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Uploads of x and the mask, Q, K, V projections.
    pub projections: f64,
    /// P = Q·Tᵀ and the fused logits.
    pub logits: f64,
    pub softmax: f64,
    /// Buckets, α·V and B·w^V.
    pub values: f64,
    /// Output projection and readback of the output.
    pub output: f64,
}

struct Kernels {
    matmul: wgpu::ComputePipeline,
    logits: wgpu::ComputePipeline,
    softmax: wgpu::ComputePipeline,
    buckets: wgpu::ComputePipeline,
}

/// A device, its queue, the compiled kernels and buffers kept between calls: build once, reuse for
/// every recompute.
pub struct GpuContext {
    device: wgpu::Device,
    queue: wgpu::Queue,
    kernels: Kernels,
    limits: wgpu::Limits,
    /// Storage buffers by role, grown on demand and reused.
    buffers: HashMap<&'static str, wgpu::Buffer>,
    staging: Option<wgpu::Buffer>,
    /// Largest work buffer of a chunk, bytes ([`WORK_BYTES`] unless set).
    work_bytes: u64,
}

/// One operand of matmul.wgsl: element (z, row, col) is at `off + z·zs + row·rs + col·cs`.
#[derive(Clone, Copy)]
struct Operand<'a> {
    buf: &'a wgpu::Buffer,
    off: usize,
    rs: usize,
    cs: usize,
    zs: usize,
}

/// Rows `i0 .. i0 + rows` of heads `h0 .. h0 + hc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Chunk {
    h0: usize,
    hc: usize,
    i0: usize,
    rows: usize,
}

/// A row-major operand: element (z, row, col) at `off + z·zs + row·rs + col`.
fn rows_of(buf: &wgpu::Buffer, off: usize, rs: usize, zs: usize) -> Operand<'_> {
    Operand { buf, off, rs, cs: 1, zs }
}

fn gpu_err(what: impl std::fmt::Display) -> Error {
    Error::Gpu(what.to_string())
}

fn u(v: usize) -> u32 {
    v as u32
}

impl GpuContext {
    /// Requests an adapter (high performance preferred) and a device with the adapter's limits, and builds
    /// the kernels. The error says why there is no GPU (no adapter, no device, a kernel's pipeline that
    /// failed to build), for the page and the CLI to show.
    pub async fn try_new() -> std::result::Result<GpuContext, String> {
        let (device, queue) = Self::request_device().await?;
        Self::from_device(device, queue).await
    }

    /// Test hook, not a feature: [`GpuContext::try_new`] with `kernel`'s WGSL ("matmul", "logits",
    /// "softmax" or "buckets") replaced by a module that does not compile, to force a failed pipeline
    /// creation. Always an `Err` naming that kernel's pipeline.
    pub async fn try_new_with_broken_kernel_for_test(kernel: &str) -> std::result::Result<GpuContext, String> {
        let (device, queue) = Self::request_device().await?;
        Self::build(device, queue, Some(kernel)).await
    }

    async fn request_device() -> std::result::Result<(wgpu::Device, wgpu::Queue), String> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() })
            .await
            .map_err(|e| format!("no GPU adapter: {e}"))?;
        let info = adapter.get_info();
        adapter
            .request_device(&wgpu::DeviceDescriptor { label: Some("relattn"), required_limits: adapter.limits(), ..Default::default() })
            .await
            .map_err(|e| format!("the adapter '{}' ({:?}) gave no device: {e}", info.name, info.backend))
    }

    /// [`GpuContext::try_new`] without the reason: `None` when there is no usable GPU.
    pub async fn available() -> Option<GpuContext> {
        Self::try_new().await.ok()
    }

    /// Builds the kernels on a device the caller already has (tests, or an app with its own device). Each
    /// pipeline is created inside a validation error scope: a shader that does not compile or a pipeline
    /// the device refuses is an `Err` ("the compute pipeline of <kernel>.wgsl failed: …"), not a panic.
    pub async fn from_device(device: wgpu::Device, queue: wgpu::Queue) -> std::result::Result<GpuContext, String> {
        Self::build(device, queue, None).await
    }

    /// Test hook, not a feature: [`GpuContext::from_device`] with `kernel`'s WGSL replaced by a module that
    /// does not compile (see [`GpuContext::try_new_with_broken_kernel_for_test`]).
    pub async fn from_device_with_broken_kernel_for_test(device: wgpu::Device, queue: wgpu::Queue, kernel: &str) -> std::result::Result<GpuContext, String> {
        Self::build(device, queue, Some(kernel)).await
    }

    async fn build(device: wgpu::Device, queue: wgpu::Queue, broken: Option<&str>) -> std::result::Result<GpuContext, String> {
        /// Deliberately invalid WGSL (an unknown identifier), for the test hooks above.
        const BROKEN: &str = "// test hook: this module does not compile\n@compute @workgroup_size(1)\nfn main() { let x: u32 = no_such_value; }\n";
        let sources = [
            ("matmul", include_str!("matmul.wgsl")),
            ("logits", include_str!("logits.wgsl")),
            ("softmax", include_str!("softmax.wgsl")),
            ("buckets", include_str!("buckets.wgsl")),
        ];
        if let Some(b) = broken {
            if !sources.iter().any(|(name, _)| *name == b) {
                return Err(format!("no kernel named '{b}' (matmul, logits, softmax, buckets)"));
            }
        }
        let mut pipelines = Vec::with_capacity(sources.len());
        for (name, source) in sources {
            let source = if broken == Some(name) { BROKEN } else { source };
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
                let why = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                return Err(format!("the compute pipeline of {label} failed: {why}"));
            }
            pipelines.push(pipeline);
        }
        let [matmul, logits, softmax, buckets] = <[wgpu::ComputePipeline; 4]>::try_from(pipelines).map_err(|_| "four kernels".to_string())?;
        let kernels = Kernels { matmul, logits, softmax, buckets };
        let limits = device.limits();
        Ok(GpuContext { device, queue, kernels, limits, buffers: HashMap::new(), staging: None, work_bytes: WORK_BYTES })
    }

    /// The adapter behind the device: name, backend, driver.
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.device.adapter_info()
    }

    /// One line for a footer, e.g. "llvmpipe (LLVM 19.1.7, 256 bits) (Vulkan, Cpu)".
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
    /// real limit is unchanged), so that an ordinary layer takes the over-the-limits path ([`Error::Gpu`]
    /// from the plan, nothing allocated) in a test without allocating gigabytes.
    pub fn pretend_max_binding_for_test(&mut self, bytes: u64) {
        self.limits.max_storage_buffer_binding_size = bytes;
    }

    /// The layer's output (b, n, d_model).
    pub async fn forward_async(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        Ok(self.run(cfg, sc, false, false).await?.0)
    }

    /// The output and every intermediate, the same [`Trace`] as [`crate::model::trace`].
    pub async fn trace_async(&mut self, cfg: &Config, sc: &Scenario) -> Result<Trace> {
        Ok(self.run(cfg, sc, true, false).await?.1.expect("recorded"))
    }

    /// Blocking [`GpuContext::forward_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn forward(&mut self, cfg: &Config, sc: &Scenario) -> Result<Array3<f32>> {
        pollster::block_on(self.forward_async(cfg, sc))
    }

    /// Blocking [`GpuContext::trace_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn trace(&mut self, cfg: &Config, sc: &Scenario) -> Result<Trace> {
        pollster::block_on(self.trace_async(cfg, sc))
    }

    /// A forward that waits for the device after each stage and times it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn forward_profiled(&mut self, cfg: &Config, sc: &Scenario) -> Result<(Array3<f32>, StageTimes)> {
        let (out, _, times) = pollster::block_on(self.run(cfg, sc, false, true))?;
        Ok((out, times.expect("profiled")))
    }

    /// How the layer is cut into chunks on this device, or why it cannot run here.
    fn plan(&self, n: usize, d: usize, h: usize, r: usize, dh: usize) -> Result<Vec<Chunk>> {
        let max_bind = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        let max_groups = self.limits.max_compute_workgroups_per_dimension as usize;
        let too_large = |what: String| {
            Err(gpu_err(format!(
                "{what}; this device allows {max_bind} bytes per buffer and {max_groups} workgroups per dimension; use the CPU backend or a smaller size"
            )))
        };
        if (n * d * 4) as u64 > max_bind {
            return too_large(format!("one (n, d_model) = ({n}, {d}) projection needs {} bytes", n * d * 4));
        }
        if n.div_ceil(BLOCK).max(d.div_ceil(BLOCK)).max(r.div_ceil(TILE)) > max_groups || h > max_groups {
            return too_large(format!("n = {n}, d_model = {d}, R = {r}, heads = {h} need too many workgroups"));
        }
        let per_row = (n.max(r).max(dh) * 4) as u64;
        let budget = max_bind.min(self.work_bytes);
        if (h * n) as u64 * per_row <= budget && n <= max_groups {
            return Ok(vec![Chunk { h0: 0, hc: h, i0: 0, rows: n }]);
        }
        let rows = ((budget / per_row) as usize).min(n).min(max_groups);
        if rows == 0 {
            return too_large(format!("one row of {} keys needs {per_row} bytes", n.max(r)));
        }
        let mut chunks = Vec::new();
        for h0 in 0..h {
            for i0 in (0..n).step_by(rows) {
                chunks.push(Chunk { h0, hc: 1, i0, rows: rows.min(n - i0) });
            }
        }
        Ok(chunks)
    }

    /// A cached storage buffer of at least `bytes` bytes for `role`.
    fn buffer(&mut self, role: &'static str, bytes: usize) -> wgpu::Buffer {
        let bytes = (bytes.max(16) as u64).next_multiple_of(16);
        if let Some(b) = self.buffers.get(role) {
            if b.size() >= bytes {
                return b.clone();
            }
        }
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(role),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.buffers.insert(role, b.clone());
        b
    }

    /// A cached storage buffer holding `data`.
    fn upload<T: bytemuck::Pod>(&mut self, role: &'static str, data: &[T]) -> wgpu::Buffer {
        let b = self.buffer(role, std::mem::size_of_val(data));
        if !data.is_empty() {
            self.queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
        }
        b
    }

    /// Records one dispatch of `pipe` with `params` (uniform, binding 0) and `bufs` (bindings 1..).
    fn dispatch(&self, enc: &mut wgpu::CommandEncoder, pipe: &wgpu::ComputePipeline, params: &[u32], bufs: &[&wgpu::Buffer], groups: [usize; 3]) {
        if groups.contains(&0) {
            return;
        }
        let mut words = params.to_vec();
        words.resize(words.len().next_multiple_of(4), 0);
        let uniform = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::cast_slice(&words),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        entries.extend(bufs.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() }));
        let layout = pipe.get_bind_group_layout(0);
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(u(groups[0]), u(groups[1]), u(groups[2]));
    }

    /// `c (+)= a·b (+ bias)` for `z` matrices of (m, k)·(k, n).
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &self,
        enc: &mut wgpu::CommandEncoder,
        (m, n, k, z): (usize, usize, usize, usize),
        a: Operand,
        b: Operand,
        c: Operand,
        bias: Option<(&wgpu::Buffer, usize)>,
        accumulate: bool,
    ) {
        let flags = u32::from(bias.is_some()) | (u32::from(accumulate) << 1);
        let (bias_buf, bias_off) = bias.unwrap_or((a.buf, 0));
        #[rustfmt::skip]
        let params = [
            u(m), u(n), u(k), flags,
            u(a.off), u(a.rs), u(a.cs), u(a.zs),
            u(b.off), u(b.rs), u(b.cs), u(b.zs),
            u(c.off), u(c.rs), u(c.cs), u(c.zs),
            u(bias_off), 0, 0, 0,
        ];
        self.dispatch(enc, &self.kernels.matmul, &params, &[a.buf, b.buf, bias_buf, c.buf], [n.div_ceil(BLOCK), m.div_ceil(BLOCK), z]);
    }

    fn encoder(&self) -> wgpu::CommandEncoder {
        self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("relattn") })
    }

    /// Submits what `enc` holds (leaving a fresh encoder) and, when profiling, waits and adds the time
    /// since the last mark to `slot`.
    fn mark(&self, enc: &mut wgpu::CommandEncoder, clock: &mut Option<(StageTimes, std::time::Instant)>, slot: fn(&mut StageTimes) -> &mut f64) -> Result<()> {
        if let Some((times, last)) = clock {
            let done = std::mem::replace(enc, self.encoder());
            self.queue.submit([done.finish()]);
            #[cfg(not(target_arch = "wasm32"))]
            self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(gpu_err)?;
            let now = std::time::Instant::now();
            *slot(times) += now.duration_since(*last).as_secs_f64() * 1e3;
            *last = now;
        }
        Ok(())
    }

    /// Submits `enc` after copying `parts` (buffer, f32 count) into the staging buffer, and reads them back.
    async fn read(&mut self, mut enc: wgpu::CommandEncoder, parts: &[(&wgpu::Buffer, usize)]) -> Result<Vec<Vec<f32>>> {
        let total: u64 = parts.iter().map(|(_, len)| (*len as u64 * 4).next_multiple_of(8)).sum::<u64>().max(8);
        if self.staging.as_ref().is_none_or(|s| s.size() < total) {
            self.staging = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: total,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let staging = self.staging.clone().expect("just made");
        let mut offset = 0;
        for (buf, len) in parts {
            let bytes = *len as u64 * 4;
            if bytes > 0 {
                enc.copy_buffer_to_buffer(buf, 0, &staging, offset, bytes);
            }
            offset += bytes.next_multiple_of(8);
        }
        self.queue.submit([enc.finish()]);
        map_read(&self.device, &staging, total).await?;
        let mut out = Vec::with_capacity(parts.len());
        {
            let view = staging.slice(..total).get_mapped_range().map_err(gpu_err)?;
            let mut offset = 0;
            for (_, len) in parts {
                let bytes = &view[offset..offset + len * 4];
                out.push(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
                offset += (len * 4).next_multiple_of(8);
            }
        }
        staging.unmap();
        Ok(out)
    }

    /// The whole layer; `record` keeps every intermediate, `profile` times each stage.
    async fn run(&mut self, cfg: &Config, sc: &Scenario, record: bool, profile: bool) -> Result<(Array3<f32>, Option<Trace>, Option<StageTimes>)> {
        let (b, n, d) = sc.dims();
        let h = cfg.heads;
        if h == 0 || d % h != 0 {
            return Err(Error::invalid("heads", h, format!("a divisor of d_model = {d}")));
        }
        let (dh, r, layout) = (d / h, cfg.table_rows(), cfg.layout());
        let (th, tr, tc) = sc.rel_k.dim();
        if (th != 1 && th != h) || tr != r || tc != dh {
            return Err(Error::shape("rel_k", sc.rel_k.shape(), format!("[1 or {h}, {r}, {dh}]")));
        }
        let rel_v = match (cfg.has_rel_v(), &sc.rel_v) {
            (true, Some(t)) if t.dim() == (th, r, dh) => Some(t),
            (true, Some(t)) => return Err(Error::shape("rel_v", t.shape(), format!("[{th}, {r}, {dh}]"))),
            (true, None) => return Err(Error::invalid("rel_v", "absent", "a (2k+1, d_head) table when a^V is on")),
            (false, _) => None,
        };
        let chunks = self.plan(n, d, h, r, dh)?;
        let shared = th == 1;
        let music_skew = record && cfg.method == Method::Music && cfg.implementation == Implementation::Efficient;
        let keep_buckets = record && rel_v.is_some() && cfg.implementation == Implementation::Efficient;
        let zero_edge = layout.edge == Edge::Zero;
        let mut clock = profile.then(|| (StageTimes::default(), std::time::Instant::now()));

        // Weights, biases and tables: once per call.
        let contiguous = |a: &Array2<f32>| a.as_standard_layout().into_owned().into_raw_vec_and_offset().0;
        let w = [contiguous(&sc.w_q), contiguous(&sc.w_k), contiguous(&sc.w_v), contiguous(&sc.w_o)];
        let w = [self.upload("w_q", &w[0]), self.upload("w_k", &w[1]), self.upload("w_v", &w[2]), self.upload("w_o", &w[3])];
        let biases: Vec<f32> = [&sc.b_q, &sc.b_k, &sc.b_v, &sc.b_o].iter().flat_map(|v| v.iter().copied()).collect();
        let bias = self.upload("bias", &biases);
        let rel_k_buf = self.upload("rel_k", &sc.rel_k.as_standard_layout().into_owned().into_raw_vec_and_offset().0);
        let rel_v_buf = rel_v.map(|t| self.upload("rel_v", &t.as_standard_layout().into_owned().into_raw_vec_and_offset().0));
        let dummy = [self.buffer("dummy_content", 16), self.buffer("dummy_relative", 16)];
        let max_work = chunks.iter().map(|c| c.hc * c.rows).max().unwrap_or(0);
        let [q, k, v, x, heads, out] = ["q", "k", "v", "x", "heads", "out"].map(|role| self.buffer(role, n * d * 4));
        let [logits, weights] = ["logits", "weights"].map(|role| self.buffer(role, max_work * n * 4));
        let [content, relative] = if record { ["content", "relative"].map(|role| self.buffer(role, max_work * n * 4)) } else { dummy.clone() };
        let [p, buckets] = ["p", "buckets"].map(|role| self.buffer(role, max_work * r * 4));
        let [oc, orl] = ["out_content", "out_relative"].map(|role| self.buffer(role, max_work * dh * 4));

        let mut output = Array3::zeros((b, n, d));
        let mut rec = record.then(|| Recorded::new(b, h, n, d, dh, r, music_skew, keep_buckets));
        let scale = 1.0 / (dh as f32).sqrt();

        for bi in 0..b {
            let mut enc = self.encoder();
            let xb = sc.x.index_axis(Axis(0), bi).as_standard_layout().into_owned().into_raw_vec_and_offset().0;
            self.queue.write_buffer(&x, 0, bytemuck::cast_slice(&xb));
            let mask: Vec<u32> = match &sc.key_mask {
                Some(m) => m.row(bi).iter().map(|&keep| u32::from(keep)).collect(),
                None => vec![1; n],
            };
            let mask = self.upload("mask", &mask);
            for (wi, dst) in [&q, &k, &v].into_iter().enumerate() {
                self.matmul(&mut enc, (n, d, d, 1), rows_of(&x, 0, d, 0), rows_of(&w[wi], 0, d, 0), rows_of(dst, 0, d, 0), Some((&bias, wi * d)), false);
            }
            self.mark(&mut enc, &mut clock, |t| &mut t.projections)?;

            for &Chunk { h0, hc, i0, rows } in &chunks {
                // P = Q·Tᵀ, (hc, rows, R): B(c, r) = T[head, r, c].
                let (t_off, t_zs) = if shared { (0, 0) } else { (h0 * r * dh, r * dh) };
                let tk = Operand { buf: &rel_k_buf, off: t_off, rs: 1, cs: dh, zs: t_zs };
                self.matmul(&mut enc, (rows, r, dh, hc), rows_of(&q, i0 * d + h0 * dh, d, dh), tk, rows_of(&p, 0, r, rows * r), None, false);
                let flags = if record { 1 | 2 } else { 0 }
                    | if zero_edge { 4 } else { 0 }
                    | if cfg.method == Method::Music && cfg.causal { 8 } else { 0 }
                    | if cfg.causal { 16 } else { 0 };
                #[rustfmt::skip]
                let params = [u(rows), u(n), u(dh), u(d), u(i0), u(h0), u(r), flags, layout.min as i32 as u32, scale.to_bits(), 0, 0];
                self.dispatch(
                    &mut enc,
                    &self.kernels.logits,
                    &params,
                    &[&q, &k, &p, &mask, &content, &relative, &logits],
                    [n.div_ceil(BLOCK), rows.div_ceil(BLOCK), hc],
                );
                self.mark(&mut enc, &mut clock, |t| &mut t.logits)?;

                let params = [u(rows), u(n), u(i0), u32::from(cfg.causal)];
                self.dispatch(&mut enc, &self.kernels.softmax, &params, &[&logits, &mask, &weights], [rows, hc, 1]);
                self.mark(&mut enc, &mut clock, |t| &mut t.softmax)?;

                // z = α·V (+ B·w^V): into the concatenated heads, or kept apart for a trace.
                let (z_buf, z_off, z_rs, z_zs) = if record { (&oc, 0, dh, rows * dh) } else { (&heads, i0 * d + h0 * dh, d, dh) };
                self.matmul(
                    &mut enc,
                    (rows, dh, n, hc),
                    rows_of(&weights, 0, n, rows * n),
                    rows_of(&v, h0 * dh, d, dh),
                    rows_of(z_buf, z_off, z_rs, z_zs),
                    None,
                    false,
                );
                if let Some(tv) = &rel_v_buf {
                    let params = [u(rows), u(n), u(i0), u(r), layout.min as i32 as u32, u32::from(zero_edge), 0, 0];
                    self.dispatch(&mut enc, &self.kernels.buckets, &params, &[&weights, &buckets], [r.div_ceil(TILE), rows.div_ceil(TILE), hc]);
                    let wv = Operand { buf: tv, off: t_off, rs: dh, cs: 1, zs: t_zs };
                    let (dst, off, rs, zs) = if record { (&orl, 0, dh, rows * dh) } else { (&heads, i0 * d + h0 * dh, d, dh) };
                    self.matmul(&mut enc, (rows, dh, r, hc), rows_of(&buckets, 0, r, rows * r), wv, rows_of(dst, off, rs, zs), None, !record);
                }
                self.mark(&mut enc, &mut clock, |t| &mut t.values)?;

                if let Some(rec) = rec.as_mut() {
                    let (wn, wr, wd) = (hc * rows * n, hc * rows * r, hc * rows * dh);
                    let orl_len = if rel_v_buf.is_some() { wd } else { 0 };
                    let parts = self
                        .read(enc, &[(&content, wn), (&relative, wn), (&logits, wn), (&weights, wn), (&p, wr), (&buckets, wr), (&oc, wd), (&orl, orl_len)])
                        .await?;
                    enc = self.encoder();
                    rec.store(bi, Chunk { h0, hc, i0, rows }, &parts);
                }
            }

            if let Some(rec) = rec.as_mut() {
                // Heads = α·V + B·w^V, added here exactly as the GPU adds them in a forward.
                let concat = rec.concat(bi);
                self.queue.write_buffer(&heads, 0, bytemuck::cast_slice(concat.as_slice().expect("standard layout")));
                rec.heads.index_axis_mut(Axis(0), bi).assign(&concat);
            }
            self.matmul(&mut enc, (n, d, d, 1), rows_of(&heads, 0, d, 0), rows_of(&w[3], 0, d, 0), rows_of(&out, 0, d, 0), Some((&bias, 3 * d)), false);
            let want: Vec<(&wgpu::Buffer, usize)> = if record { vec![(&out, n * d), (&q, n * d), (&k, n * d), (&v, n * d)] } else { vec![(&out, n * d)] };
            let parts = self.read(enc, &want).await?;
            let as_nd = |data: &Vec<f32>| ArrayView3::from_shape((1, n, d), data).expect("n·d values").index_axis_move(Axis(0), 0).to_owned();
            output.index_axis_mut(Axis(0), bi).assign(&as_nd(&parts[0]));
            if let Some(rec) = rec.as_mut() {
                rec.q.index_axis_mut(Axis(0), bi).assign(&as_nd(&parts[1]));
                rec.k.index_axis_mut(Axis(0), bi).assign(&as_nd(&parts[2]));
                rec.v.index_axis_mut(Axis(0), bi).assign(&as_nd(&parts[3]));
            }
            if let Some((times, last)) = clock.as_mut() {
                let now = std::time::Instant::now();
                times.output += now.duration_since(*last).as_secs_f64() * 1e3;
                *last = now;
            }
        }

        let trace = rec.map(|rec| rec.finish(cfg, sc, output.clone(), music_skew, keep_buckets));
        Ok((output, trace, clock.map(|(t, _)| t)))
    }
}

/// Maps `bytes` of `buf` for reading and waits for it (polling the device natively; the browser maps on
/// its own).
async fn map_read(device: &wgpu::Device, buf: &wgpu::Buffer, bytes: u64) -> Result<()> {
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};
    type Slot = Arc<Mutex<(Option<std::result::Result<(), wgpu::BufferAsyncError>>, Option<Waker>)>>;
    let slot: Slot = Arc::default();
    let done = slot.clone();
    buf.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
        let mut g = done.lock().expect("map slot");
        g.0 = Some(r);
        if let Some(w) = g.1.take() {
            w.wake();
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(gpu_err)?;
    #[cfg(target_arch = "wasm32")]
    let _ = device;
    std::future::poll_fn(|cx| {
        let mut g = slot.lock().expect("map slot");
        match g.0.take() {
            Some(r) => Poll::Ready(r),
            None => {
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    })
    .await
    .map_err(gpu_err)
}

/// The intermediates read back so far, (b, h, ...) like [`Trace`].
struct Recorded {
    content: Array4<f32>,
    relative: Array4<f32>,
    logits: Array4<f32>,
    weights: Array4<f32>,
    /// P = Q·Tᵀ (b, h, n, R), for the skew steps.
    p: Option<Array4<f32>>,
    buckets: Option<Array4<f32>>,
    out_content: Array4<f32>,
    out_relative: Array4<f32>,
    q: Array3<f32>,
    k: Array3<f32>,
    v: Array3<f32>,
    heads: Array3<f32>,
}

impl Recorded {
    #[allow(clippy::too_many_arguments)]
    fn new(b: usize, h: usize, n: usize, d: usize, dh: usize, r: usize, keep_p: bool, keep_buckets: bool) -> Self {
        let nn = || Array4::zeros((b, h, n, n));
        Recorded {
            content: nn(),
            relative: nn(),
            logits: nn(),
            weights: nn(),
            p: keep_p.then(|| Array4::zeros((b, h, n, r))),
            buckets: keep_buckets.then(|| Array4::zeros((b, h, n, r))),
            out_content: Array4::zeros((b, h, n, dh)),
            out_relative: Array4::zeros((b, h, n, dh)),
            q: Array3::zeros((b, n, d)),
            k: Array3::zeros((b, n, d)),
            v: Array3::zeros((b, n, d)),
            heads: Array3::zeros((b, n, d)),
        }
    }

    /// Copies a chunk's buffers (content, relative, logits, weights, P, buckets, αV, B·w^V) into place.
    fn store(&mut self, bi: usize, c: Chunk, parts: &[Vec<f32>]) {
        let put = |dst: &mut Array4<f32>, data: &[f32]| {
            let cols = dst.dim().3;
            let src = ArrayView3::from_shape((c.hc, c.rows, cols), &data[..c.hc * c.rows * cols]).expect("chunk shape");
            dst.slice_mut(s![bi, c.h0..c.h0 + c.hc, c.i0..c.i0 + c.rows, ..]).assign(&src);
        };
        put(&mut self.content, &parts[0]);
        put(&mut self.relative, &parts[1]);
        put(&mut self.logits, &parts[2]);
        put(&mut self.weights, &parts[3]);
        if let Some(pa) = self.p.as_mut() {
            put(pa, &parts[4]);
        }
        if let Some(ba) = self.buckets.as_mut() {
            put(ba, &parts[5]);
        }
        put(&mut self.out_content, &parts[6]);
        if !parts[7].is_empty() {
            put(&mut self.out_relative, &parts[7]);
        }
    }

    /// Batch element `bi`'s heads side by side: (n, d_model), α·V + B·w^V.
    fn concat(&self, bi: usize) -> Array2<f32> {
        let (_, h, n, dh) = self.out_content.dim();
        let mut out = Array2::zeros((n, h * dh));
        for hi in 0..h {
            let z = &self.out_content.slice(s![bi, hi, .., ..]) + &self.out_relative.slice(s![bi, hi, .., ..]);
            out.slice_mut(s![.., hi * dh..(hi + 1) * dh]).assign(&z);
        }
        out
    }

    fn finish(mut self, cfg: &Config, sc: &Scenario, output: Array3<f32>, music_skew: bool, keep_buckets: bool) -> Trace {
        let (b, h, n, _) = self.logits.dim();
        // The GPU never carries −∞: masked logits are shown as the CPU shows them.
        for bi in 0..b {
            let mask = sc.key_mask.as_ref().map(|m| m.row(bi));
            for hi in 0..h {
                let mut l = self.logits.slice_mut(s![bi, hi, .., ..]);
                for ((i, j), e) in l.indexed_iter_mut() {
                    if (cfg.causal && j > i) || mask.is_some_and(|m| !m[j]) {
                        *e = f32::NEG_INFINITY;
                    }
                }
            }
        }
        let skew = music_skew.then(|| self.skew_steps(cfg));
        Trace {
            config: *cfg,
            distances: relpos::distances(n, n),
            rel_index: relpos::row_matrix(n, n, cfg.layout()),
            rel_k: sc.rel_k.clone(),
            rel_v: sc.rel_v.clone(),
            x: sc.x.clone(),
            q: self.q,
            k: self.k,
            v: self.v,
            content_logits: self.content,
            relative_logits: self.relative,
            logits: self.logits,
            weights: self.weights,
            value_buckets: if keep_buckets { self.buckets } else { None },
            skew,
            out_content: self.out_content,
            out_relative: self.out_relative,
            heads: self.heads,
            output,
        }
    }

    /// The Music Transformer's skew steps from P: `Q·E_rᵀ` column c holds distance c − (n − 1), which reads
    /// table row `row(c − (n − 1))` of P (zero beyond a zero-edged table), then [`skew::skew`].
    fn skew_steps(&mut self, cfg: &Config) -> SkewTrace {
        let p = self.p.as_ref().expect("kept for the skew");
        let (b, h, n, _) = p.dim();
        let layout = cfg.layout();
        let cols = if cfg.causal { n } else { 2 * n - 1 };
        let rows: Vec<Option<usize>> = (0..cols).map(|c| layout.row(c as isize - (n as isize - 1))).collect();
        let mut steps = Vec::with_capacity(b * h);
        for bi in 0..b {
            for hi in 0..h {
                let ph = p.slice(s![bi, hi, .., ..]);
                let qer = Array2::from_shape_fn((n, cols), |(i, c)| rows[c].map_or(0.0, |r| ph[[i, r]]));
                steps.push(skew::skew(qer.view(), cfg.causal));
            }
        }
        let stack = |f: &dyn Fn(&skew::SkewSteps) -> &Array2<f32>| {
            let (r, c) = f(&steps[0]).dim();
            let mut out = Array4::zeros((b, h, r, c));
            for (idx, st) in steps.iter().enumerate() {
                out.slice_mut(s![idx / h, idx % h, .., ..]).assign(f(st));
            }
            out
        };
        SkewTrace { qer: stack(&|s| &s.qer), padded: stack(&|s| &s.padded), reshaped: stack(&|s| &s.reshaped), sliced: stack(&|s| &s.sliced) }
    }
}
