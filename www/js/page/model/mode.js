// Owns Model mode's wiring: the Parameters | Model switch, the model form's events, the window's requests to
// the worker (ids: only the newest ModelRequest's answer is shown), turning answers into state.model.shown and
// drawing it (selection.js: the roll, the selected token and Play; panels.js: the panels). Continue
// (sampling.js), the six models (all-models.js) and the slides (slides.js) own their state and are given what
// they need here. Every request carries the page's Backend (the toolbar's, Parameters mode's too); the footer
// says where it ran.
import { $, all } from '../dom.js';
import { state } from '../state.js';
import { presentNextResult } from '../present.js';
import { modelRequest as modelMsg, windowKey } from '../../shared/protocol.js';
import { readWindow, readHead, modelKind, wantedNote, noteTaken, syncModelForm, syncChoices, clearModelErrors, showModelError, showOpening } from './form.js';
import { noteName, VOICE_NAMES } from './roll.js';
import { wireRoll, makeRoll, redraw, describe, fadeArcs, togglePlay, selectShown } from './selection.js';
import { drawTiles, markTile, markRow, drawDistances, drawPrediction } from './panels.js';
import { wireSampling, onSampled, onSampleRefused, endSampling, samplingUnderway, whenSamplingEnds } from './sampling.js';
import { wireComparisons, onComparison, drawComparisons, ensureNll, ensureComparison, windowShown } from './all-models.js';
import { wireSlides, showWantedSlide } from './slides.js';
import { stop, playing } from './sound.js';
import { colormaps, backendMode } from '../controls.js';
import { showBackend } from '../status.js';
import { saveURL } from '../url.js';
import { exportRoll, exportPanel } from './export.js';
import { request as requestTrace, post, paramsStarted } from '../worker-client.js';
import { useModelLayer, askSlice } from '../source.js';
import { clearPins } from '../tooltip.js';

const m = state.model;

// This module's own state: no other module writes it (state.model.shown, which others read, is written here only).
const asking = {
  /** The id of the newest ModelRequest: only its answer is shown. */
  lastId: 0,
  /** The debounce timer of typing in a number box. */
  debounce: 0,
  /** Requests ask for the tiles again until a result brings them (the colormap changed). */
  recolour: false,
};

let shownFirst = null;
/** Resolves once the first model result is drawn (or refused): main.js loads the page's own wasm after it. */
export const firstShown = new Promise((ok) => { shownFirst = ok; });

function setBusy(b) {
  $('m-busy').hidden = !b;
}

/** The sequential colormap changed: the tiles again. */
export function recolour() {
  asking.recolour = true;
  modelRequest();
}

/** New model settings (or a new selected token): a new id now, the request now or once typing pauses. */
export function modelRequest(soon = false) {
  asking.lastId += 1;
  setBusy(true);
  clearTimeout(asking.debounce);
  if (soon) asking.debounce = setTimeout(send, 200); else send();
}

function send() {
  const kind = modelKind();
  const w = readWindow();
  const { layer, head } = readHead();
  const backend = backendMode();
  const key = windowKey(kind, w, backend);
  const s = m.shown;
  const newWindow = !s || s.key !== key;
  const parts = { window: newWindow || asking.recolour, head: newWindow || s.layer !== layer || s.head !== head };
  // A new window keeps the token selected (the URL's note= first); the first one selects the soprano at mid-window.
  const mid = Number.isFinite(w.length) ? 4 * Math.floor(w.length / 8) : 0;
  let position = wantedNote() ?? (s ? m.position ?? mid : mid);
  if (Number.isFinite(w.length) && w.length >= 1) position = Math.max(0, Math.min(position, w.length - 1));
  post(modelMsg(asking.lastId, kind, w, layer, head, position, parts, colormaps(), backend));
}

/** A worker message of Model mode (worker-client.js passes every 'model*' message here). */
export function onModelMessage(msg) {
  switch (msg.kind) {
    case 'model-result': if (msg.id === asking.lastId) showResult(msg); return;
    case 'model-sampled': onSampled(msg); return;
    case 'model-nll': case 'model-compare': onComparison(msg); return;
    case 'model-error':
      if (msg.of === 'model' && msg.id === asking.lastId) {
        setBusy(false);
        if (msg.info) syncChoices(msg.info);
        showModelError(msg.error);
        shownFirst();
      }
      if (msg.of === 'model-sample') onSampleRefused(msg);
      if (msg.of === 'model-nll' || msg.of === 'model-compare') onComparison(msg);
      return;
    default:
  }
}

/**
 * WebGPU's set-up has ended: a window computed on the CPU meanwhile (provisional) is asked for again, now or,
 * while Continue samples from it (a new run of the window would end the sampling), once the sampling ends.
 */
export function modelGpuSettled() {
  if (!m.shown || !m.shown.backend.provisional) return;
  if (samplingUnderway()) whenSamplingEnds(modelGpuSettled); else modelRequest();
}

/** The worker was replaced (its wasm aborted): the new one has no window; ask again for the view shown. */
export function onWorkerRestart() {
  endSampling(false);
  if (state.mode === 'model') modelRequest();
}

function showResult(msg) {
  const first = !m.shown;
  const prev = m.shown;
  const windowChanged = !prev || prev.key !== msg.key;
  const headChanged = !prev || prev.layer !== msg.layer || prev.head !== msg.head;
  const next = { ...(prev || {}), id: msg.id, key: msg.key, model: msg.model, layer: msg.layer, head: msg.head, prediction: msg.prediction, backend: msg.backend };
  if (msg.info) Object.assign(next, { info: msg.info, window: msg.window, tiles: msg.tiles });
  if (msg.tiles) asking.recolour = false;
  if (msg.values) Object.assign(next, { values: msg.values, profiles: msg.profiles, descriptions: msg.descriptions, landmarks: msg.landmarks });
  m.shown = next;
  selectShown(msg.position);
  noteTaken();
  if (windowChanged) {
    endSampling(true);
    if (playing()) stop(); // the music played is the old window's
    windowShown(next.window.piece);
  }
  setBusy(false);
  clearModelErrors();
  if (!document.body.classList.contains('embed-model')) $('err-general').textContent = ''; // a worker restart's message: the new worker answered
  syncModelForm(next);
  if (msg.tiles) drawTiles(next, chooseHead); else markTile(next.layer, next.head);
  markRow(m.position, next.window.length);
  if (msg.profiles) drawDistances(next);
  drawPrediction(next.prediction);
  describe();
  if (headChanged && !first) fadeArcs(); else redraw();
  showBackend(msg.backend);
  $('m-timings').textContent = `model: forward pass ${next.window.nll.ms.toFixed(0)} ms · last answer ${msg.ms.toFixed(0)} ms`;
  // ?embed=nll shows its chart: computed once the model has answered.
  if (first && $('m-panel-nll').classList.contains('embed-target')) ensureNll();
  if (first && $('m-panel-models').classList.contains('embed-target')) ensureComparison();
  // &slide=NAME: that slide, once there is something to show on it.
  if (first) showWantedSlide();
  if (first && document.body.dataset.firstArcsMs === undefined) document.body.dataset.firstArcsMs = performance.now().toFixed(0);
  shownFirst();
  if (!playing()) saveURL(); // while playing, the note changes many times a second: saved when it stops
  document.body.dataset.modelReady = String(msg.id);
}

function chooseHead(layer, head) {
  $('m-layer').value = String(layer);
  $('m-head').value = String(head);
  markTile(layer, head);
  modelRequest();
}

// --- the mode switch and the controls -------------------------------------------------------------------------

/** Model mode's views by their ?embed= name. */
const EMBEDS = { arcs: '.roll-fig', tiles: '#m-panel-tiles', distance: '#m-panel-dist', models: '#m-panel-models', prediction: '#m-panel-predict', nll: '#m-panel-nll' };

/** ?mode=model&embed=NAME: marks that view as the one shown (style.css hides the rest); an unknown name is said. */
export function applyModelEmbed(name) {
  const sel = EMBEDS[name];
  if (!sel) {
    $('err-general').textContent = `embed: no view '${name}' in Model mode; views: ${Object.keys(EMBEDS).join(', ')}`;
    return;
  }
  document.querySelector(sel).classList.add('embed-target');
}

/**
 * Model mode's canvases (the roll, the NLL chart), made when the mode is first shown: a page in Parameters
 * mode (and its ?embed=STAGE) holds the stages' canvases alone.
 */
function ensureCanvases() {
  if ($('roll')) return;
  makeRoll();
  const nll = document.createElement('canvas');
  nll.id = 'm-nll';
  nll.setAttribute('role', 'img');
  nll.setAttribute('aria-label', 'NLL per position of the six models');
  $('m-nll-holder').replaceWith(nll);
}

/** Whether a mode's result, computed where BackendShown `b` says, is asked for again when the mode is shown. */
function askAgain(b) {
  return b.mode !== backendMode() || b.provisional;
}

/** Shows mode `mode` ('params' or 'model'); `startParams()` sends Parameters mode's first request. */
export function setMode(mode, startParams) {
  state.mode = mode === 'model' ? 'model' : 'params';
  if (state.mode === 'model') ensureCanvases();
  document.body.dataset.mode = state.mode;
  $('mode-params').setAttribute('aria-pressed', String(state.mode === 'params'));
  $('mode-model').setAttribute('aria-pressed', String(state.mode === 'model'));
  // Each mode's footer line is its own result's; a result of another Backend than the one chosen is asked
  // again, and a provisional one (the worker computes it again once WebGPU's set-up has ended).
  if (state.mode === 'model') {
    if (m.shown) { redraw(); showBackend(m.shown.backend); }
    if (!m.shown || askAgain(m.shown.backend)) modelRequest();
  } else {
    if (playing()) stop();
    if (state.current) showBackend(state.current.backend);
    if (!paramsStarted() && startParams) startParams();
    else if (state.current && askAgain(state.current.backend)) requestTrace();
  }
  saveURL();
}

/** Connects Model mode's controls (once, at start). */
export function wireModel(startParams) {
  $('mode-params').addEventListener('click', () => setMode('params', startParams));
  $('mode-model').addEventListener('click', () => setMode('model', startParams));
  for (const b of all('#model .panel-export button')) b.addEventListener('click', () => exportPanel(b.closest('section'), b.dataset.export));
  wireRoll(() => modelRequest());
  const shown = () => m.shown;
  wireSampling(shown, () => redraw());
  wireComparisons(shown, () => readHead().layer);
  wireSlides(shown, redrawAll, () => {
    // This head's stages from the first (the indices, the table, the logits, the skew's steps in order, the
    // weights, the outputs); Esc there returns to Model mode as it was left.
    presentNextResult(0, () => setMode('model', null));
    $('m-stages').click();
  });
  // The charts are drawn at their displayed size: again when the window (or an embedding frame) resizes.
  let resizing = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(() => { if (m.shown && state.mode === 'model') redrawAll(); });
  });
  // The chosen layer and head, stage by stage, in Parameters mode's figures (crates/relattn/src/app/model.rs ChoraleSession::trace).
  $('m-stages').addEventListener('click', () => {
    const { layer, head } = readHead();
    useModelLayer({ kind: modelKind(), window: readWindow(), layer });
    askSlice(0, head);
    clearPins();
    // The axes name the window's tokens (voice and pitch), not the sentence Parameters mode had.
    if (m.shown) $('sentence').value = m.shown.window.notes.map((n) => `${VOICE_NAMES[n.voice]}:${noteName(n.midi)}`).join(' ');
    setMode('params', null);
    requestTrace();
  });
  $('model-form').addEventListener('submit', (e) => e.preventDefault());
  $('m-model').addEventListener('change', () => modelRequest());
  $('m-piece').addEventListener('change', () => {
    showOpening();
    // A new piece: its window from the start, untransposed (its ranges differ).
    $('m-start').value = '0';
    $('m-transpose').value = '0';
    const s = m.shown;
    const p = s && s.info.pieces.find((x) => x.bwv === $('m-piece').value);
    if (p && Number($('m-length').value) > p.length) $('m-length').value = String(Math.min(p.length, 256));
    selectShown(null); // the new window's middle
    modelRequest();
  });
  for (const id of ['m-start', 'm-length', 'm-transpose', 'm-opening']) $(id).addEventListener('input', () => modelRequest(true));
  for (const id of ['m-layer', 'm-head']) $(id).addEventListener('change', () => modelRequest());
  $('m-dist-full').addEventListener('change', () => { if (m.shown) redrawAll(); });
  $('m-play').addEventListener('click', togglePlay);
  $('m-export-png').addEventListener('click', () => exportRoll((c, size) => redraw(1, c, size), 'png'));
  $('m-export-svg').addEventListener('click', () => exportRoll((c, size) => redraw(1, c, size), 'svg'));
  $('m-fullscreen').addEventListener('click', () => {
    const fig = $('m-fullscreen').closest('figure');
    if (document.fullscreenElement) { document.exitFullscreen().catch(() => {}); return; }
    if (fig.requestFullscreen) fig.requestFullscreen().then(() => $('roll').focus()).catch(() => {});
  });
  document.addEventListener('fullscreenchange', () => {
    if (state.mode !== 'model') return;
    $('m-fullscreen').textContent = document.fullscreenElement ? 'Leave full screen' : 'Full screen';
    requestAnimationFrame(() => redraw());
  });
}

/** Every chart of Model mode drawn again (a new size, a slide, the whole window asked for). */
function redrawAll() {
  if (!m.shown) return;
  redraw();
  drawDistances(m.shown);
  drawComparisons();
}
