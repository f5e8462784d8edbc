// Owns the page's own wasm instance (state.ui: frames, SVG export, preset names): loading it, and replacing it
// after a panic, redrawing the last good view with the fresh one. The worker has an instance of its own.
import { $ } from './dom.js';
import { state } from './state.js';
import { showError } from './controls.js';

// This module's own state (state.ui, the instance every module draws with, is written here only).
const instance = {
  /** How many instances were loaded: 1 at start, +1 after each panic (also body[data-ui-instance]). */
  count: 0,
  /** The restart of a panicked instance under way (a promise), or null: a second panic joins it. */
  broken: null,
};

// Loads a fresh instance: the module's JS again under another URL (a module keeps its one instance), the
// same .wasm. The first is ../../pkg/relattn.js itself.
export async function loadUi() {
  instance.count += 1;
  const m = await import(instance.count === 1 ? '../../pkg/relattn.js' : `../../pkg/relattn.js?instance=${instance.count}`);
  await m.default();
  if (instance.count > 1) {
    m.set_colormaps($('seq').value, $('div').value);
    m.set_theme($('theme').value === 'dark');
  }
  state.ui = m;
  document.body.dataset.uiInstance = String(instance.count);
}

// A panic in the page's instance (the hook in crates/relattn-wasm/src/lib.rs `start` calls relattnPanicked before the abort),
// or an abort that reached a caller (an allocation failure): `stop()` stops a render under way, the error is
// shown, a fresh instance loaded, and `showLastGood()` draws the last good view again with it (stage-views.js).
export function watchUi(stop, showLastGood) {
  globalThis.relattnPanicked = (message) => { instance.broken = instance.broken || replaceUi(message, stop, showLastGood); };
}

async function replaceUi(message, stop, showLastGood) {
  await null; // after the abort has unwound to the caller
  stop();
  showError('general', `internal error in the page's wasm module (${message}); it was restarted, the view shown is the last good one`);
  try {
    await loadUi();
    await showLastGood();
  } catch (e) {
    showError('general', `could not restart the page's wasm module: ${e.message || e}`);
  }
  instance.broken = null;
}

/** A drawing (or export) failed: an abort of the instance replaces it (as its panic hook would); anything
 *  else is shown. */
export function drawFailed(e) {
  if (e instanceof WebAssembly.RuntimeError) globalThis.relattnPanicked(e.message);
  else showError('general', `could not draw: ${e.message || e}`);
}
