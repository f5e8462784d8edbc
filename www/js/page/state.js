// The page's state that several features read, listed and documented in one place; each field is written by
// one module only, the one its section names (a path under www/js/; crates/relattn/tests/page_state.rs checks it).
// A feature's state that no other feature needs is that feature's own, kept in one documented object at the top
// of its module and read through its functions (worker-client.js: the worker, its ids and questions; source.js:
// what Parameters mode computes besides the controls; file.js: the files; ui-wasm.js: the instances;
// stage-views.js: the render under way; present.js: what starts and what ends a presentation; model/sound.js:
// playback; url.js: the toast; model/mode.js: Model mode's requests; model/form.js: the URL's note;
// model/sampling.js, model/all-models.js, model/slides.js: theirs). And the page's events (EVENTS): how a module
// tells those on floors above it (tests/e2e/layout.test.mjs) what happened, without importing them.
export const state = {
  // --- written by page/ui-wasm.js ---
  /** The page's own wasm-bindgen module (namespace object) drawing frames, SVG export, preset names; null
   *  before loadUi. */
  ui: null,

  // --- written by page/stage-views.js ---
  /** The result shown: { id, info, shown, stages, byName, tokens, timings, stageTimes, onGpu, backend, memory,
   *  asked, asking }, or null. The stages' buffers are the ones the worker transferred (no copies); `asked` holds
   *  the cells of stages sent without values that the tooltip and pins have asked for ('name|i|j' → value),
   *  `asking` those on their way (tooltip.js fills both). */
  current: null,
  /** The last result drawn in full: what a panic in the page's wasm instance falls back to. */
  good: null,
  /** Stage name → view { figure, canvas, ctx, off, rect, frame, stage, cursor } on the page. */
  views: new Map(),

  // --- written by page/tooltip.js ---
  /** The pinned pair { i, j } outlined in every view, or null. */
  pinned: null,
  /** The pinned row r of the relative tables (clicked in w^K, w^V or E_r), whose readers (every (i, j) with
   *  rel_index = r) are shaded in every (i, j) view, or null. At most one of pinned and pinnedRow is set. */
  pinnedRow: null,

  // --- written by page/present.js ---
  /** The stage presented (its index in current.stages), or null outside presentation mode. */
  presentedAt: null,
  /** The presentation's own view (made on first use, again at a new size), or null. */
  presentedView: null,

  // --- written by page/model/mode.js ---
  /** 'params' (the stage-by-stage figures) or 'model' (the trained models); also body[data-mode]. */
  mode: 'params',

  // --- Model mode's result ---
  model: {
    // --- written by page/model/mode.js ---
    /** The result shown: { key, model, info, window, tiles, layer, head, values, profiles, prediction }, or null. */
    shown: null,
    // --- written by page/model/selection.js ---
    /** The selected token of the window (its arcs and prediction), or null. */
    position: null,
    /** The playhead's step while playing (a piece step, fractional), else null. */
    playStep: null,
    // --- written by page/model/slides.js ---
    /** The slide shown (its name, as in &slide=), or null; also body[data-model-slide]. */
    slide: null,
  },
};

/** The page's events, each with who sends it and who answers it. */
const EVENTS = {
  /** A view was drawn again by itself (figures.js: the cells it asked the worker for came); tooltip.js draws
   *  the pins over every view again. */
  'view-redrawn': [],
};

/** Calls `f(...args)` whenever `event` (one of EVENTS) is sent. */
export function on(event, f) {
  if (!EVENTS[event]) throw new Error(`no page event '${event}'`);
  EVENTS[event].push(f);
}

/** Sends `event` (one of EVENTS): every function given to on() for it is called now, in order. */
export function emit(event, ...args) {
  if (!EVENTS[event]) throw new Error(`no page event '${event}'`);
  for (const f of EVENTS[event]) f(...args);
}
