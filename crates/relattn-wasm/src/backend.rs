//! Where the page computes: [`WebGpu`], the app's [`Runner`] in the browser, runs a computation — a
//! Parameters-mode layer ([`super::session::compute`]) or a trained model's pass
//! ([`super::model::ModelSession`]) — on a [`Backend`]: the GPU of this wasm instance (the worker's), a
//! WebGPU device tried once by [`gpu_init`] and kept in a slot for every later computation, or the CPU.
//! Whatever goes wrong on the GPU — no `navigator.gpu`, no adapter, no device, a kernel whose pipeline fails
//! to build, a device lost later, an error on the device during a compute, or a layer beyond the device's
//! limits — the computation runs on the CPU instead, and its [`BackendUsed::note`] says why.

use super::to_value;
use relattn::app::{Ran, Runner};
use relattn::backend::Backend;
use relattn::error::gpu::GpuError;
use relattn::gpu::GpuContext;
use relattn::protocol::{BackendChoice, BackendUsed};
use relattn::timing::now_ms;
use serde::Serialize;
use std::cell::RefCell;
use std::sync::Mutex;
use wasm_bindgen::prelude::*;

/// The footer's name of the CPU backend.
pub(super) const CPU: &str = "CPU (wasm)";

/// One slot per page, so the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Gpu {
    /// Not tried yet.
    Untried,
    /// A device and the footer's line for it.
    Ready(GpuContext, String),
    /// In use by a compute (taken out of the slot while it awaits the device).
    Busy(String),
    /// No GPU, for this reason (for good: lost devices are not replaced).
    Gone(String),
}

thread_local! {
    static GPU: RefCell<Gpu> = const { RefCell::new(Gpu::Untried) };
}

/// Set by the device-lost callback (which wgpu wants `Send`): the reason the device was lost.
static LOST: Mutex<Option<String>> = Mutex::new(None);

fn lost() -> Option<String> {
    LOST.lock().ok().and_then(|l| l.clone())
}

/// The GPU slot now.
#[derive(Serialize)]
pub struct GpuStatus {
    pub available: bool,
    /// The footer's "WebGPU: <adapter>", when available.
    pub description: String,
    /// Why there is no GPU, when not available.
    pub reason: String,
}

fn status() -> GpuStatus {
    let (available, description, reason) = GPU.with(|g| match &*g.borrow() {
        Gpu::Ready(_, d) | Gpu::Busy(d) => match lost() {
            Some(why) => (false, String::new(), why),
            None => (true, d.clone(), String::new()),
        },
        Gpu::Gone(why) => (false, String::new(), why.clone()),
        Gpu::Untried => (false, String::new(), "WebGPU not tried yet".into()),
    });
    GpuStatus { available, description, reason }
}

/// Whether the global scope (window or worker) has `navigator.gpu`.
fn has_navigator_gpu() -> bool {
    let nav = js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).unwrap_or(JsValue::UNDEFINED);
    !nav.is_undefined() && js_sys::Reflect::get(&nav, &"gpu".into()).map(|g| !g.is_undefined() && !g.is_null()).unwrap_or(false)
}

/// Tries WebGPU once (later calls return the first answer): a [`GpuStatus`] `{ available, description,
/// reason }`, where `reason` says why there is no GPU (no WebGPU, no adapter, no device, or a kernel whose
/// compute pipeline failed to build).
#[wasm_bindgen]
pub async fn gpu_init() -> Result<JsValue, JsValue> {
    let untried = GPU.with(|g| matches!(&*g.borrow(), Gpu::Untried));
    if untried {
        init(GpuContext::try_new()).await;
    }
    to_value(&status())
}

/// Fills the slot: the context `built` gives (the test hook's has a kernel that does not compile), or why
/// there is none.
async fn init(built: impl std::future::Future<Output = Result<GpuContext, GpuError>>) {
    GPU.with(|g| *g.borrow_mut() = Gpu::Busy(String::new()));
    let next = if !has_navigator_gpu() {
        Gpu::Gone(GpuError::NoWebGpu.to_string())
    } else {
        match built.await {
            Ok(ctx) => {
                ctx.device().set_device_lost_callback(|reason, message| {
                    if let Ok(mut l) = LOST.lock() {
                        let message = if message.is_empty() { String::new() } else { format!(": {message}") };
                        *l = Some(format!("the WebGPU device was lost ({reason:?}){message}"));
                    }
                });
                let i = ctx.adapter_info();
                let name = [i.name.as_str(), i.driver.as_str(), i.driver_info.as_str()].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
                let name = if name.is_empty() { format!("{:?} adapter", i.device_type) } else { name };
                Gpu::Ready(ctx, format!("WebGPU: {name}"))
            }
            Err(GpuError::NoAdapter(_)) => {
                Gpu::Gone("WebGPU unavailable: requestAdapter() gave no adapter (WebGPU is off in this browser, or no usable GPU)".into())
            }
            Err(why) => Gpu::Gone(format!("WebGPU unavailable: {why}")),
        }
    };
    GPU.with(|g| *g.borrow_mut() = next);
}

/// Test hook, not a feature: builds the WebGPU context again (a new device) with `kernel`'s WGSL ("matmul",
/// "logits", "softmax" or "buckets") replaced by a module that does not compile, so the e2e test can check
/// that a failed pipeline creation leaves every later compute on the CPU with the reason. The previous
/// context is dropped (not destroyed). Refused while a compute holds the GPU. Returns [`gpu_status`].
#[cfg(feature = "test-hooks")]
#[wasm_bindgen]
pub async fn gpu_break_pipeline_for_test(kernel: String) -> Result<JsValue, JsValue> {
    let busy = GPU.with(|g| matches!(&*g.borrow(), Gpu::Busy(_)));
    if !busy {
        init(GpuContext::try_new_with_broken_kernel_for_test(&kernel)).await;
    }
    to_value(&status())
}

/// Test hook, not a feature: makes the GPU context pretend its device allows only `bytes` per storage
/// buffer binding ([`GpuContext::pretend_max_binding_for_test`]), so the e2e test can check that an
/// ordinary layer beyond the (pretended) limits is computed on the CPU with the reason. Returns whether
/// there was a context.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen]
pub fn gpu_limit_binding_for_test(bytes: f64) -> bool {
    GPU.with(|g| match &mut *g.borrow_mut() {
        Gpu::Ready(ctx, _) => {
            ctx.pretend_max_binding_for_test(bytes.max(0.0) as u64);
            true
        }
        _ => false,
    })
}

/// Test hook, not a feature: destroys the WebGPU device as a lost GPU would be, so the e2e test can check
/// that the next compute falls back to the CPU with the reason. Returns whether there was a device.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen]
pub fn gpu_destroy_for_test() -> bool {
    GPU.with(|g| match &*g.borrow() {
        Gpu::Ready(ctx, _) => {
            ctx.device().destroy();
            true
        }
        _ => false,
    })
}

/// The browser's [`Runner`]: [`BackendChoice::Cpu`] on [`Backend::Cpu`]; Auto or WebGPU on the GPU from
/// [`gpu_init`], taken out of its slot while `f` awaits it and put back after (a compute that finds it taken
/// computes on the CPU). Auto leaves a software adapter alone. When the GPU cannot be had or fails — no
/// context, a device error during `f`, an error from `f`, the device lost — `f` runs again on the CPU and
/// [`BackendUsed::note`] says why.
pub struct WebGpu;

impl Runner for WebGpu {
    async fn run<T>(&self, choice: BackendChoice, f: impl AsyncFn(&mut Backend) -> relattn::error::Result<T>) -> Ran<T> {
        let t0 = now_ms();
        let mut note = String::new();
        let mut provisional = false;
        if choice != BackendChoice::Cpu {
            match take_gpu() {
                // A software adapter (WebGPU's fallback adapter, SwiftShader in headless chromium) is slower than
                // this CPU code (n 2048: 12.0 s against 3.2 s): Auto leaves it alone; WebGPU uses it.
                Ok((ctx, name)) if choice == BackendChoice::Auto && ctx.adapter_info().device_type == wgpu::DeviceType::Cpu => {
                    note = "this browser's WebGPU adapter is a software one (its fallback adapter), slower than the CPU: Auto computes on the CPU (choose WebGPU to use it)".into();
                    GPU.with(|g| *g.borrow_mut() = Gpu::Ready(ctx, name));
                }
                Ok((ctx, name)) => match on_gpu(ctx, &name, &f).await {
                    Ok(value) => {
                        let backend = BackendUsed { on_gpu: true, name, note: String::new(), provisional: false };
                        return Ran { result: Ok(value), backend, gpu_failed_ms: 0.0 };
                    }
                    Err(why) => note = why,
                },
                Err(NoGpu::SettingUp) => {
                    note = "WebGPU is still being set up: this view was computed on the CPU (it is computed again once the set-up ends)".into();
                    provisional = true;
                }
                Err(NoGpu::Because(why)) => note = why,
            }
        }
        let gpu_failed_ms = now_ms() - t0;
        let result = f(&mut Backend::Cpu).await;
        Ran { result, backend: BackendUsed { on_gpu: false, name: CPU.into(), note, provisional }, gpu_failed_ms }
    }
}

/// `f` on the GPU taken from the slot (put back unless it was lost), or why it failed.
async fn on_gpu<T>(ctx: GpuContext, name: &str, f: &impl AsyncFn(&mut Backend) -> relattn::error::Result<T>) -> Result<T, String> {
    let device = ctx.device().clone();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let invalid = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut gpu = Backend::Gpu(ctx);
    let result = f(&mut gpu).await;
    let (invalid, oom) = (invalid.pop(), oom.pop());
    let device_error = match (invalid.await, oom.await) {
        (Some(e), _) | (None, Some(e)) => Some(e.to_string()),
        (None, None) => None,
    };
    if let Some(why) = lost() {
        GPU.with(|g| *g.borrow_mut() = Gpu::Gone(why.clone()));
        return Err(why);
    }
    if let Backend::Gpu(ctx) = gpu {
        GPU.with(|g| *g.borrow_mut() = Gpu::Ready(ctx, name.into()));
    }
    match (device_error, result) {
        (Some(e), _) => Err(format!("WebGPU failed on this layer: {e}")),
        (None, Err(e)) => Err(format!("WebGPU cannot compute this layer: {e}")),
        (None, Ok(done)) => Ok(done),
    }
}

/// Why a compute found no GPU context in the slot.
enum NoGpu {
    /// [`gpu_init`] is still building the device and its pipelines (seconds on a software adapter), which
    /// Auto does not wait for: the view is provisional ([`BackendUsed::provisional`]).
    SettingUp,
    /// No GPU for this compute, for this reason.
    Because(String),
}

/// The GPU context, taken out of the slot for one compute, or why there is none.
fn take_gpu() -> Result<(GpuContext, String), NoGpu> {
    GPU.with(|g| {
        let mut g = g.borrow_mut();
        if let Some(why) = lost() {
            *g = Gpu::Gone(why);
        }
        match std::mem::replace(&mut *g, Gpu::Untried) {
            Gpu::Ready(ctx, name) => {
                *g = Gpu::Busy(name.clone());
                Ok((ctx, name))
            }
            Gpu::Gone(why) => {
                *g = Gpu::Gone(why.clone());
                Err(NoGpu::Because(why))
            }
            // Busy with no name: gpu_init has not filled the slot yet.
            Gpu::Busy(name) if name.is_empty() => {
                *g = Gpu::Busy(name);
                Err(NoGpu::SettingUp)
            }
            Gpu::Busy(name) => {
                *g = Gpu::Busy(name);
                Err(NoGpu::Because(GpuError::Busy.to_string()))
            }
            Gpu::Untried => Err(NoGpu::Because("WebGPU was not tried (gpu_init was not called)".into())),
        }
    })
}

/// The [`GpuStatus`] now (after [`gpu_init`]).
#[wasm_bindgen]
pub fn gpu_status() -> Result<JsValue, JsValue> {
    to_value(&status())
}
