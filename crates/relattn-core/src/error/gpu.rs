//! Why the GPU backend cannot run: no device to be had, a kernel that does not build, a layer beyond the
//! device's limits, or a device that failed during a compute. Callers decide by the variant, never by the
//! text; the text is for people (the page's footer, the CLI's error line).

/// Why the GPU backend could not run a request.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum GpuError {
    /// The browser has no WebGPU at all (`navigator.gpu` is missing).
    #[error("this browser has no WebGPU (navigator.gpu is missing)")]
    NoWebGpu,

    /// No adapter: WebGPU or Vulkan is there but offers no usable GPU.
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),

    /// The adapter refused to give a device.
    #[error("the adapter '{adapter}' ({backend}) gave no device: {reason}")]
    NoDevice { adapter: String, backend: String, reason: String },

    /// A kernel's shader or compute pipeline failed to build (`kernel`: matmul, logits, softmax, buckets, attend).
    #[error("the compute pipeline of {kernel}.wgsl failed: {reason}")]
    Pipeline { kernel: String, reason: String },

    /// A kernel name that is not one of the five (the test hook that breaks a kernel).
    #[error("no kernel named '{0}' (matmul, logits, softmax, buckets, attend)")]
    NoSuchKernel(String),

    /// The layer does not fit the device: `what` needs more than its `max_binding` bytes per storage
    /// buffer binding or its `max_workgroups` workgroups per dimension.
    #[error("{what}; this device allows {max_binding} bytes per buffer and {max_workgroups} workgroups per dimension; use the CPU backend or a smaller size")]
    TooLarge { what: String, max_binding: u64, max_workgroups: u32 },

    /// The device was lost (destroyed, reset, or its driver gone).
    #[error("the device was lost: {0}")]
    Lost(String),

    /// The device reported an error during a compute.
    #[error("{kind} error on the device: {message}")]
    Device { kind: DeviceErrorKind, message: String },

    /// Reading results back from the device failed (mapping the staging buffer, or waiting for it).
    #[error("reading the results back failed: {0}")]
    Readback(String),

    /// The device is in use by another compute.
    #[error("WebGPU is busy with another compute")]
    Busy,
}

/// The kind of an error the device reports (its error scopes' filters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceErrorKind {
    Validation,
    OutOfMemory,
}

impl std::fmt::Display for DeviceErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceErrorKind::Validation => "validation",
            DeviceErrorKind::OutOfMemory => "out-of-memory",
        })
    }
}
