//! The page's GPU backend: one WebGPU device per wasm instance (the worker's), tried once by
//! [`gpu_init`] and reused by every [`compute`]. Whatever goes wrong — no `navigator.gpu`, no adapter, no
//! device, a kernel whose pipeline fails to build, a device lost later, an error on the device during a
//! compute, or a layer beyond the device's limits — the trace is computed on the CPU instead, and the
//! session says why ([`Session::backend_note`]).

use super::{to_js, Inputs, Session};
use crate::gpu::{GpuContext, GpuError};
use crate::model;
use crate::timing::now_ms;
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

/// `{ available, description, reason }` of the GPU slot now.
fn status() -> JsValue {
    let (available, description, reason) = GPU.with(|g| match &*g.borrow() {
        Gpu::Ready(_, d) | Gpu::Busy(d) => match lost() {
            Some(why) => (false, String::new(), why),
            None => (true, d.clone(), String::new()),
        },
        Gpu::Gone(why) => (false, String::new(), why.clone()),
        Gpu::Untried => (false, String::new(), "WebGPU not tried yet".into()),
    });
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &"available".into(), &available.into());
    let _ = js_sys::Reflect::set(&o, &"description".into(), &description.into());
    let _ = js_sys::Reflect::set(&o, &"reason".into(), &reason.into());
    o.into()
}

/// Whether the global scope (window or worker) has `navigator.gpu`.
fn has_navigator_gpu() -> bool {
    let nav = js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).unwrap_or(JsValue::UNDEFINED);
    !nav.is_undefined() && js_sys::Reflect::get(&nav, &"gpu".into()).map(|g| !g.is_undefined() && !g.is_null()).unwrap_or(false)
}

/// Tries WebGPU once (later calls return the first answer): `{ available, description, reason }`, where
/// `description` is the footer's "WebGPU: <adapter>" and `reason` says why there is no GPU (no WebGPU, no
/// adapter, no device, or a kernel whose compute pipeline failed to build).
#[wasm_bindgen]
pub async fn gpu_init() -> JsValue {
    let untried = GPU.with(|g| matches!(&*g.borrow(), Gpu::Untried));
    if untried {
        init(GpuContext::try_new()).await;
    }
    status()
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
pub async fn gpu_break_pipeline_for_test(kernel: String) -> JsValue {
    let busy = GPU.with(|g| matches!(&*g.borrow(), Gpu::Busy(_)));
    if !busy {
        init(GpuContext::try_new_with_broken_kernel_for_test(&kernel)).await;
    }
    status()
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

/// Computes a trace: `backend` "cpu" on the CPU; "auto" or "webgpu" on the GPU from [`gpu_init`] when it
/// has one and can compute this layer, else on the CPU with the reason in [`Session::backend_note`]. The
/// other parameters as in [`Session::new`]; with `file` (a scenario file's bytes) as in
/// [`Session::from_tensors`]. Throws like they do for bad input.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub async fn compute(
    backend: String,
    preset: String,
    method: String,
    n: f64,
    d_model: f64,
    heads: f64,
    clip: f64,
    causal: bool,
    rel_v: bool,
    per_head_tables: bool,
    seed: f64,
    file: Option<Vec<u8>>,
    file_name: String,
) -> Result<Session, JsValue> {
    let t0 = now_ms();
    let mut inp = match &file {
        Some(bytes) => Inputs::of_file(bytes, &file_name, &method, n, d_model, heads, clip, causal, rel_v, per_head_tables, seed)?,
        None => Inputs::of(&preset, &method, n, d_model, heads, clip, causal, rel_v, per_head_tables, seed)?,
    };
    drop(file);
    let sc = inp.scenario()?;
    let t1 = now_ms();
    let mut note = String::new();
    if backend != "cpu" {
        match take_gpu() {
            Ok((mut ctx, name)) => {
                let device = ctx.device().clone();
                let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
                let invalid = device.push_error_scope(wgpu::ErrorFilter::Validation);
                let result = ctx.trace(&inp.cfg, &sc).await.map(|(trace, _)| trace);
                let (invalid, oom) = (invalid.pop(), oom.pop());
                let device_error = match (invalid.await, oom.await) {
                    (Some(e), _) | (None, Some(e)) => Some(e.to_string()),
                    (None, None) => None,
                };
                let t2 = now_ms();
                match (lost(), device_error, result) {
                    (Some(why), _, _) => {
                        GPU.with(|g| *g.borrow_mut() = Gpu::Gone(why.clone()));
                        note = why;
                    }
                    (None, Some(e), _) => {
                        GPU.with(|g| *g.borrow_mut() = Gpu::Ready(ctx, name));
                        note = format!("WebGPU failed on this layer: {e}");
                    }
                    (None, None, Err(e)) => {
                        GPU.with(|g| *g.borrow_mut() = Gpu::Ready(ctx, name));
                        note = format!("WebGPU cannot compute this layer: {e}");
                    }
                    (None, None, Ok(trace)) => {
                        GPU.with(|g| *g.borrow_mut() = Gpu::Ready(ctx, name.clone()));
                        return Ok(Session::assemble(trace, &inp, &sc, vec![("scenario".into(), t1 - t0), ("trace".into(), t2 - t1)], name, String::new()));
                    }
                }
            }
            Err(why) => note = why,
        }
    }
    let t2 = now_ms();
    let (trace, times) = model::trace_timed(&inp.cfg, &sc).map_err(to_js)?;
    let t3 = now_ms();
    let mut timings = vec![("scenario".into(), t1 - t0), ("trace".into(), t3 - t2)];
    if t2 - t1 > 0.05 {
        timings.insert(1, ("WebGPU (failed)".into(), t2 - t1));
    }
    let mut s = Session::assemble(trace, &inp, &sc, timings, CPU.into(), note);
    s.stage_times = times.named();
    Ok(s)
}

/// The GPU context, taken out of the slot for one compute, or why there is none.
fn take_gpu() -> Result<(GpuContext, String), String> {
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
                Err(why)
            }
            Gpu::Busy(name) => {
                *g = Gpu::Busy(name);
                Err("WebGPU is busy with another compute".into())
            }
            Gpu::Untried => Err("WebGPU was not tried (gpu_init was not called)".into()),
        }
    })
}

/// `{ available, description, reason }` of the GPU now (after [`gpu_init`]).
#[wasm_bindgen]
pub fn gpu_status() -> JsValue {
    status()
}
