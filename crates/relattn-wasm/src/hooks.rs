//! Test hooks, not features (built only with the `test-hooks` cargo feature, which `make test` enables and
//! `make serve` does not): panics on purpose, so tests/e2e/reliability.test.mjs can check that a panic in
//! the worker or in the page's own instance is reported and the page recovers. The page never calls them;
//! the test sends the worker `{ kind: 'debug-panic' }` or `{ kind: 'debug-panic-async' }`, or calls
//! [`debug_panic`] in the page from the browser's devtools protocol.

use wasm_bindgen::prelude::*;

/// Panics at once.
#[wasm_bindgen]
pub fn debug_panic() {
    panic!("debug_panic(): a panic on purpose (test hook)");
}

/// Panics inside an async future after an await, where a panic in [`super::compute`] would happen (its
/// promise never settles).
#[wasm_bindgen]
pub async fn debug_panic_async() {
    let _ = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL)).await;
    panic!("debug_panic_async(): a panic on purpose inside an async future (test hook)");
}
