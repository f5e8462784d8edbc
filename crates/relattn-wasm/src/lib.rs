//! relattn-wasm: the browser's entry points, thin wasm-bindgen shells over relattn's app (crates/relattn/src/app/, plain Rust tested natively; candle's wasm
//! examples are the model). They read JavaScript values into its requests ([`relattn::protocol`]'s structs, whose JavaScript types the page is checked
//! against), write its answers back as plain objects and typed arrays (a selected stage's straight out of the wasm memory: [`Session::select`]), and convert
//! its errors at the boundary: an `Error` with a `field` (the control to show it next to) and a `kind` ([`relattn::error::ErrorKind`] by name; [`to_js`]);
//! the page never reads the message to decide anything. The crates and their modules: docs/src/architecture.md.

use relattn::app::request;
use relattn::error::{Error, ErrorKind};
use relattn::layer::presets;
use relattn::protocol::Strict;
use relattn::render::{Colormap, Ink, Palette};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;

pub mod atlas;
pub mod backend;
pub mod bench;
pub mod compare;
pub mod figure;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod measure;
pub mod model;
pub mod pool;
pub mod session;

pub use session::{compute, Session};

#[wasm_bindgen(start)]
pub fn start() {
    // A panic aborts the wasm instance: console_error_panic_hook logs it with its message, and the global
    // scope's `relattnPanicked(message)` is called, when it has one, before the abort: the worker and the
    // page replace this instance from there, whether the panic is in a call they can catch or in an async
    // future (whose promise then never settles).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            console_error_panic_hook::hook(info);
            let global = js_sys::global();
            if let Ok(f) = js_sys::Reflect::get(&global, &"relattnPanicked".into()).and_then(|f| f.dyn_into::<js_sys::Function>()) {
                let _ = f.call1(&global, &info.to_string().into());
            }
        }));
    });
}

/// Bytes of wasm linear memory this instance has (it only grows): for checking the memory budget.
#[wasm_bindgen]
pub fn memory_bytes() -> f64 {
    wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64
}

thread_local! {
    /// The colormaps of this module instance (the page and the worker each set theirs).
    static PALETTE: std::cell::Cell<Palette> = std::cell::Cell::new(Palette::default());
    /// The figures' colours around the cells (the page's theme).
    static INK: std::cell::Cell<Ink> = const { std::cell::Cell::new(Ink::LIGHT) };
}

/// The ink set by [`set_theme`].
pub fn ink() -> Ink {
    INK.with(|i| i.get())
}

/// Draws the figures from now on for the page's theme: dark text on white, or light text on the dark panel.
#[wasm_bindgen]
pub fn set_theme(dark: bool) {
    INK.with(|i| i.set(if dark { Ink::DARK } else { Ink::LIGHT }));
}

/// The colormaps set by [`set_colormaps`].
pub fn palette() -> Palette {
    PALETTE.with(|p| p.get())
}

/// Picks the colormaps used from now on by [`Session::select`] and the figures: `sequential` viridis or
/// cividis, `diverging` red_blue or purple_green.
#[wasm_bindgen]
pub fn set_colormaps(sequential: &str, diverging: &str) -> Result<(), JsValue> {
    let pick = |field: &str, name: &str, allowed: [Colormap; 2]| {
        Colormap::from_name(name)
            .filter(|c| allowed.contains(c))
            .ok_or_else(|| to_js(Error::invalid(field, format!("'{name}'"), allowed.map(Colormap::name).join(", "))))
    };
    let sequential = pick("sequential", sequential, [Colormap::Viridis, Colormap::Cividis])?;
    let diverging = pick("diverging", diverging, [Colormap::RedBlue, Colormap::PurpleGreen])?;
    PALETTE.with(|p| p.set(Palette { sequential, diverging }));
    Ok(())
}

/// The options `method` reads ([`SchemeOptions`]), for the controls that follow the method select. Throws an
/// `Error` with field "method" for an unknown scheme.
#[wasm_bindgen]
pub fn scheme_options(method: &str) -> Result<JsValue, JsValue> {
    to_value(&request::scheme_options(method.parse().map_err(to_js)?))
}

/// A preset for the page's list.
#[derive(Serialize)]
pub struct PresetInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// The words a sentence needs to label its positions and make its x (its n), or 0 where its x is part of
    /// what it shows: a preset without the content term (built-heads), whose logits x does not change, shows
    /// the page's 12-word sentence on its axes; a seed's example keeps its seed's x.
    pub sentence_words: usize,
}

/// Every preset: `[{ name, description, sentence_words }]`.
#[wasm_bindgen]
pub fn presets() -> Result<JsValue, JsValue> {
    let info = |name| {
        let p = presets::preset(name)?;
        let labels_only = p.spec.batch == 1 && !p.arrays.contains_key("x") && !p.config.content;
        Ok(PresetInfo { name, description: p.description, sentence_words: if labels_only { p.spec.n } else { 0 } })
    };
    let all: Vec<PresetInfo> = presets::NAMES.iter().map(|&name| info(name)).collect::<Result<_, Error>>().map_err(to_js)?;
    to_value(&all)
}

/// An error as a JavaScript `Error` with `field` and `kind` properties.
pub fn js_error(field: &str, kind: ErrorKind, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    let _ = js_sys::Reflect::set(&e, &"field".into(), &field.into());
    let _ = js_sys::Reflect::set(&e, &"kind".into(), &serde_wasm_bindgen::to_value(&kind).unwrap_or(JsValue::UNDEFINED));
    e.into()
}

/// relattn's [`Error`] as a JavaScript `Error` (field and kind from the error itself).
pub fn to_js(e: Error) -> JsValue {
    js_error(e.field(), e.kind(), &e.to_string())
}

/// The request object `value` as a `T`, refusing a missing field, a wrong type or a key `T` does not name
/// ([`Strict`]), with field `what` ("invalid request: unknown field(s) …").
pub fn from_request<T: DeserializeOwned + Strict>(value: JsValue, what: &str) -> Result<T, JsValue> {
    let invalid = |why: String| js_error(what, ErrorKind::Invalid, &format!("invalid {what}: {why}"));
    let r: T = serde_wasm_bindgen::from_value(value).map_err(|e| invalid(e.to_string()))?;
    let unknown = r.unknown_fields();
    if !unknown.is_empty() {
        return Err(invalid(format!("unknown field(s) {}", unknown.join(", "))));
    }
    Ok(r)
}

/// A choice passed as a string (one of `allowed`, serde's names of `T`), or `T`'s default when the caller left
/// the argument out (undefined); anything else refused by the argument's name, `field`.
pub fn choice_arg<T: DeserializeOwned + Default>(value: JsValue, field: &str, allowed: &str) -> Result<T, JsValue> {
    if value.is_undefined() {
        return Ok(T::default());
    }
    serde_wasm_bindgen::from_value(value.clone()).map_err(|_| to_js(Error::invalid(field, format!("{value:?}"), allowed)))
}

/// A Rust value as a plain JavaScript object (maps as objects, not `Map`s).
pub fn to_value<T: Serialize>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| js_error("general", ErrorKind::Invalid, &e.to_string()))
}
