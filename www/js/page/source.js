// Owns what Parameters mode computes besides the controls: a trained model's layer shown stage by stage (Model
// mode's "stages of this head", or the URL's source=), and the (batch, head) asked for before the first result
// (the URL's, or that head's). worker-client.js reads both into each ComputeRequest; any control leaves the layer.
import { $ } from './dom.js';

// This module's own state: no other module writes it.
const source = {
  /** The trained model's layer computed instead of the controls' settings: { kind, window, layer } (a
   *  ModelWindow and the layer's index), or null. */
  layer: null,
  /** { batch, head } to show in the next result, over the selects; null once a result is shown. */
  slice: null,
};

/** The trained model's layer that Parameters mode computes, or null (the controls' settings). */
export function modelLayer() {
  return source.layer;
}

/** Parameters mode computes layer `src.layer` of model `src.kind` on window `src.window` from now on. */
export function useModelLayer(src) {
  source.layer = src;
}

/** Parameters mode computes the controls' settings from now on (a control, a preset or a file was changed). */
export function useControls() {
  source.layer = null;
}

/** The next result shows batch element `batch`, head `head` (each clamped to the result's by the wasm). */
export function askSlice(batch, head) {
  source.slice = { batch, head };
}

/** A result is shown: the selects say the (batch, head) from now on. */
export function sliceShown() {
  source.slice = null;
}

/** The (batch, head) to show: the one asked for before the first result, else the selects'. */
export function shownSlice() {
  if (source.slice) return source.slice;
  return { batch: Number($('batch').value) || 0, head: Number($('head').value) || 0 };
}
