// Owns the page's mutable state: ONE object, shared by every module, so that what the page remembers between
// events is listed (and documented) in one place. Modules read and write its fields directly; no module keeps
// a module-level `let` of its own. Constants (tables of names, sizes) live in the modules that use them.
export const state = {
  // --- the page's own wasm instance (ui-wasm.js) ---
  /** The wasm-bindgen module (namespace object) drawing frames, SVG export, preset names; null before loadUi. */
  ui: null,
  /** How many instances were loaded: 1 at start, +1 after each panic (also body[data-ui-instance]). */
  uiCount: 0,
  /** The restart of a panicked instance under way (a promise), or null: a second panic joins it. */
  uiBroken: null,

  // --- the worker and its requests (worker-client.js) ---
  /** The Worker computing traces; replaced by a fresh one after its wasm aborts. */
  worker: null,
  /** The id of the newest settings: taken at every change, before its (debounced) request is sent. Only a
   *  result or error with this id is shown; anything older is for superseded settings and is dropped. */
  lastId: 0,
  /** The id of the last compute request posted to the worker. */
  sentId: 0,
  /** The id of the last result or error taken (shown). */
  answeredId: 0,
  /** The timer of the debounced request (typing in a number field). */
  debounce: 0,
  /** The id of the last export or cells request. */
  exportSeq: 0,
  /** Export and cells requests waiting for the worker: id → callback(reply). */
  exports: new Map(),

  // --- settings from the URL and the scenario file (url.js, file.js) ---
  /** { head, batch } from the URL, for the first request only; null once a result is shown. */
  want: null,
  /** The scenario file in use: { id, name, bytes }, or null (generated tensors). */
  tensors: null,
  /** A file sent to the worker but not yet computed: becomes `tensors` on success, dropped on an error. */
  candidate: null,
  /** The number of the newest file pick: a file read that finishes after a newer pick (or a clear) is dropped. */
  fileSeq: 0,
  /** Nested dragenter/dragleave events over the page (the drop hint shows while > 0). */
  dragDepth: 0,

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

  // --- presentation mode (present.js) ---
  /** The index (in current.stages) of the stage presented, or null outside presentation mode. */
  presentAt: null,
  /** The presentation's own view (made on first use), or null. */
  presentView: null,

  // --- Model mode (model.js, model-form.js, roll.js, model-views.js, sound.js) ---
  /** 'params' (the stage-by-stage figures) or 'model' (the trained models); also body[data-mode]. */
  mode: 'params',
  /** True once Parameters mode has sent its first request (a page opened in Model mode computes none). */
  paramsStarted: false,
  /** The index of the stage to present once the next result is drawn (the model slides' last step), or null. */
  presentWhenReady: null,
  /** What leaving that presentation does (the model slides: back to Model mode), or null. */
  afterPresent: null,
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
    /** Playback: { ctx, t0, stepDur, steps, raf } while playing, else null; the AudioContext is kept in `audio`. */
    play: null,
    audio: null,
    /** The debounce timer of typing in a number box. */
    debounce: 0,
    /** Requests ask for the tiles again until a result brings them (the colormap changed). */
    recolour: false,
  },

  // --- the toolbar (url.js) ---
  /** The timer clearing the toast ("Link copied"). */
  toastTimer: 0,
};
