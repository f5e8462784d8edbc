// The page's state that several features read, listed and documented in one place; each field is written by
// one module only, the one its section names (a path under www/js/; tests/page_state.rs checks it). A feature's state that no other
// feature needs is that feature's own, kept in one documented object at the top of its module and read through
// its functions (worker-client.js: the worker, its ids and questions; source.js: what Parameters mode computes
// besides the controls; file.js: the files; ui-wasm.js: the instances; views.js: the render under way;
// present.js: the presentation; chorales/sound.js: playback; url.js: the toast; chorales/mode.js: Model mode's requests;
// chorales/form.js: the URL's note; chorales/sampling.js, chorales/compare.js: theirs).
export const state = {
  // --- written by page/ui-wasm.js ---
  /** The page's own wasm-bindgen module (namespace object) drawing frames, SVG export, preset names; null
   *  before loadUi. */
  ui: null,

  // --- written by page/views.js ---
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

  // --- written by page/chorales/mode.js ---
  /** 'params' (the stage-by-stage figures) or 'model' (the trained models); also body[data-mode]. */
  mode: 'params',

  // --- Model mode's result ---
  model: {
    // --- written by page/chorales/mode.js ---
    /** The result shown: { key, model, info, window, tiles, layer, head, values, profiles, prediction }, or null. */
    shown: null,
    // --- written by page/chorales/selection.js ---
    /** The selected token of the window (its arcs and prediction), or null. */
    position: null,
    /** The playhead's step while playing (a piece step, fractional), else null. */
    playStep: null,
  },
};
