// The page's state that several features read: the result shown and its views, the selection (pins), the mode and
// Model mode's result, listed and documented in one place. A feature's state that no other
// feature needs is that feature's own (worker-client.js: the worker, its ids and questions; file.js: the files;
// ui-wasm.js: the instances; present.js: the presentation; sound.js: playback; url.js: the toast; model-sampling.js, model-compare.js: theirs),
// kept in one documented object at the top of its module and read through its functions.
export const state = {
  // --- the page's own wasm instance (ui-wasm.js) ---
  /** The wasm-bindgen module (namespace object) drawing frames, SVG export, preset names; null before loadUi. */
  ui: null,

  // --- settings from the URL (url.js) ---
  /** { head, batch } from the URL, for the first request only; null once a result is shown. */
  want: null,

  // --- what is shown (figures.js, views.js, tooltip.js) ---
  /** The result shown: { id, info, shown, stages, byName, tokens, timings, stageTimes, onGpu, backend, memory,
   *  asked, asking }, or null. The stages' buffers are the ones the worker transferred (no copies); `asked` holds
   *  the cells of stages sent without values that the tooltip and pins have asked for ('name|i|j' → value),
   *  `asking` those on their way (tooltip.js). */
  current: null,
  /** The last result drawn in full: what a panic in the page's wasm instance falls back to. */
  good: null,
  /** Stage name → view { figure, canvas, ctx, off, rect, frame, stage, cursor } on the page. */
  views: new Map(),
  /** Taken by every render: a render that awaits checks it and stops when a newer one has started. */
  renderToken: 0,
  /** The pinned pair { i, j } outlined in every view, or null. */
  pinned: null,
  /** The pinned row r of the relative tables (clicked in w^K, w^V or E_r), whose readers (every (i, j) with
   *  rel_index = r) are shaded in every (i, j) view, or null. At most one of pinned and pinnedRow is set. */
  pinnedRow: null,

  // --- Model mode (model.js, model-form.js, roll.js, model-views.js) ---
  /** 'params' (the stage-by-stage figures) or 'model' (the trained models); also body[data-mode]. */
  mode: 'params',
  /** Model mode's layer shown stage by stage in Parameters mode: { kind, window, layer }, or null (until a
   *  control, a preset or a file asks for something else). */
  modelSource: null,
  model: {
    /** The id of the newest ModelRequest: only its answer is shown. */
    lastId: 0,
    /** The result shown: { key, model, info, window, tiles, layer, head, values, profiles, prediction }, or null. */
    shown: null,
    /** The selected token of the window (its arcs and prediction), or null. */
    position: null,
    /** The URL's note=, applied to the first result only. */
    wantNote: null,
    /** The playhead's step while playing (a piece step, fractional), else null. */
    playStep: null,
    /** The debounce timer of typing in a number box. */
    debounce: 0,
    /** Requests ask for the tiles again until a result brings them (the colormap changed). */
    recolour: false,
  },
};
