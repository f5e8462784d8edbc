// Owns Model mode's wiring: the Parameters | Model switch, the model form's events, the window's requests to
// the worker (ids: only the newest ModelRequest's answer is shown), turning answers into state.model.shown and
// drawing it (roll.js, model-views.js), the selected token (click, ← / →, the URL's note=, the playhead) and
// Play (sound.js). Continue (model-sampling.js), the comparisons (model-compare.js) and the slides
// (model-slides.js) own their state and are given what they need here. Every request carries the page's
// Backend (the toolbar's, Parameters mode's too); the footer says where it ran.
import { $ } from './dom.js';
import { state } from './state.js';
import { modelRequest as modelMsg, windowKey } from './protocol.js';
import { readWindow, readHead, modelKind, syncModelForm, syncChoices, clearModelErrors, showModelError, showOpening, windowName, modelLabel } from './model-form.js';
import { drawRoll, hit, noteName, arcsOf, VOICE_NAMES } from './roll.js';
import { drawTiles, markTile, markRow, drawDistances, drawPrediction } from './model-views.js';
import { wireSampling, sampledNotes, onSampled, onSampleRefused, endSampling } from './model-sampling.js';
import { wireComparisons, onComparison, drawComparisons, ensureNll, windowShown } from './model-compare.js';
import { wireSlides } from './model-slides.js';
import { play, stop, playing } from './sound.js';
import { colormaps, backendMode } from './controls.js';
import { showBackend } from './status.js';
import { saveURL } from './url.js';
import { exportRoll, exportPanel } from './export.js';
import { request as requestTrace } from './worker-client.js';

const m = state.model;
const FADE_MS = 180;

let shownFirst = null;
/** Resolves once the first model result is drawn (or refused): main.js loads the page's own wasm after it. */
export const firstShown = new Promise((ok) => { shownFirst = ok; });

function setBusy(b) {
  $('m-busy').hidden = !b;
}

/** The sequential colormap changed: the tiles again. */
export function recolour() {
  m.recolour = true;
  modelRequest();
}

/** New model settings (or a new selected token): a new id now, the request now or once typing pauses. */
export function modelRequest(soon = false) {
  m.lastId += 1;
  setBusy(true);
  clearTimeout(m.debounce);
  if (soon) m.debounce = setTimeout(send, 200); else send();
}

function send() {
  const kind = modelKind();
  const w = readWindow();
  const { layer, head } = readHead();
  const backend = backendMode();
  const key = windowKey(kind, w, backend);
  const s = m.shown;
  const newWindow = !s || s.key !== key;
  const parts = { window: newWindow || m.recolour, head: newWindow || s.layer !== layer || s.head !== head };
  // A new window keeps the token selected (the URL's note= first); the first one selects the soprano at mid-window.
  const mid = Number.isFinite(w.length) ? 4 * Math.floor(w.length / 8) : 0;
  let position = m.wantNote ?? (s ? m.position ?? mid : mid);
  if (Number.isFinite(w.length) && w.length >= 1) position = Math.max(0, Math.min(position, w.length - 1));
  state.worker.postMessage(modelMsg(m.lastId, kind, w, layer, head, position, parts, colormaps(), backend));
}

/** A worker message of Model mode (worker-client.js passes every 'model*' message here). */
export function onModelMessage(msg) {
  switch (msg.kind) {
    case 'model-result': if (msg.id === m.lastId) showResult(msg); return;
    case 'model-sampled': onSampled(msg); return;
    case 'model-nll': case 'model-compare': onComparison(msg); return;
    case 'model-error':
      if (msg.of === 'model' && msg.id === m.lastId) {
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
  if (msg.tiles) m.recolour = false;
  if (msg.values) Object.assign(next, { values: msg.values, profiles: msg.profiles, descriptions: msg.descriptions, landmarks: msg.landmarks });
  m.shown = next;
  m.position = msg.position;
  m.wantNote = null;
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
  if (first && document.body.dataset.firstArcsMs === undefined) document.body.dataset.firstArcsMs = performance.now().toFixed(0);
  shownFirst();
  if (!playing()) saveURL(); // while playing, the note changes many times a second: saved when it stops
  document.body.dataset.modelReady = String(msg.id);
}

/** The window's summary and the selected token's line. */
function describe() {
  const s = m.shown;
  const w = s.window;
  const piece = s.info.pieces.find((p) => p.bwv === w.piece);
  $('m-summary').textContent = `${modelLabel(s.model)}, ${s.info.parameters.toLocaleString('en')} parameters · ${piece ? `BWV ${w.piece} ${piece.title} (${piece.time_signature})` : windowName(w)} · ` +
    `tokens ${w.start}…${w.start + w.length - 1} (16th steps ${w.start / 4}…${(w.start + w.length) / 4 - 1})` +
    `${w.transpose ? `, transposed ${w.transpose > 0 ? '+' : ''}${w.transpose}` : ''} · mean NLL ${w.nll.mean.toFixed(3)} nats per token` +
    `${s.info.test_nll != null ? ` (the test split in windows of ${s.info.config.context}: ${s.info.test_nll.toFixed(3)})` : ''}`;
  const t = m.position;
  const n = t == null ? null : w.notes[t];
  const top = arcsOf(s.values, w.length, t).sort((a, b) => b[1] - a[1]).slice(0, 3)
    .map(([j, a]) => `${noteLabel(w.notes[j])} at ${j - t}, ${keyName(j - t, n)} (${a.toFixed(2)})`);
  $('m-selected').textContent = n
    ? `Selected: token ${t} of the window, ${noteLabel(n)}, step ${n.step}; it predicts the next token, the ${VOICES[(n.voice + 1) % 4]}. ` +
      `In layer ${s.layer}, head ${s.head} it attends most to: ${top.join('; ')}.`
    : '';
}

const VOICES = ['soprano', 'alto', 'tenor', 'bass'];
/** What the key at distance `d` from the query note `q` reaches, named from the token q predicts (src/trained/heads.rs). */
function keyName(d, q) {
  const { beat, bar } = m.shown.window.meter;
  return state.ui ? state.ui.name_key(d, (q.voice + 1) % 4, beat, bar) : `distance ${d}`;
}
function noteLabel(n) {
  return `${VOICES[n.voice]} ${noteName(n.midi)}`;
}

/** The roll's tooltip (its title): the token under the pointer and the selected token's weight on it. */
function hoverRoll(e) {
  const roll = $('roll');
  const s = m.shown;
  if (!s) return;
  const b = roll.getBoundingClientRect();
  const t = hit(roll, s, sampledNotes(), e.clientX - b.left, e.clientY - b.top);
  if (t == null) { roll.title = ''; return; }
  const n = s.window.notes[t];
  const i = m.position;
  const weight = i != null && t <= i && s.values
    ? `; weight from the selected token (distance ${t - i}, ${keyName(t - i, s.window.notes[i])}): ${s.values[i * s.window.length + t].toFixed(3)}` : '';
  roll.title = `token ${t}: ${noteLabel(n)}, step ${n.step}${weight}`;
}

let fadeRaf = 0;
/** Redraws the roll with the arcs fading in (a change of head or layer). */
function fadeArcs() {
  cancelAnimationFrame(fadeRaf);
  const t0 = performance.now();
  const step = () => {
    const f = Math.min(1, (performance.now() - t0) / FADE_MS);
    redraw(f);
    if (f < 1) fadeRaf = requestAnimationFrame(step);
  };
  step();
}

/** Draws the roll as state.model says (on `canvas`, the page's roll unless given, at `size` when given). */
export function redraw(fade = 1, canvas = $('roll'), size = null) {
  if (!m.shown) return;
  drawRoll(canvas, m.shown, { sampled: sampledNotes(), position: m.position, playhead: m.play ? m.playStep : null, fade, size });
}

/** Selects token `t` of the window: arcs at once (the head's weights are here), the prediction from the worker. */
export function select(t) {
  const s = m.shown;
  if (!s || t == null) return;
  t = Math.max(0, Math.min(t, s.window.length - 1));
  if (t === m.position) return;
  m.position = t;
  redraw();
  describe();
  markRow(t, s.window.length);
  modelRequest();
}

function chooseHead(layer, head) {
  $('m-layer').value = String(layer);
  $('m-head').value = String(head);
  markTile(layer, head);
  modelRequest();
}

// --- Play -------------------------------------------------------------------------------------------------

function togglePlay() {
  if (playing()) { stop(); return; }
  const s = m.shown;
  if (!s) return;
  const notes = s.window.notes.concat(sampledNotes());
  const from = s.window.notes[0].step;
  const voice = (m.position ?? 0) % 4;
  let lastPx = -1;
  $('m-selected').setAttribute('aria-live', 'off'); // not a note read aloud at every 16th
  play(notes, from, (step) => {
    m.playStep = step;
    const t = (Math.floor(step) - from) * 4 + voice;
    if (t < s.window.length && t !== m.position) { select(t); return; }
    // The roll is drawn again only when the playhead has moved a pixel (a long window moves it slowly).
    const px = Math.round(((step - from) * $('roll').clientWidth) / ((s.window.length + sampledNotes().length) / 4));
    if (px !== lastPx) { lastPx = px; redraw(); }
  }, () => { m.playStep = null; redraw(); saveURL(); $('m-selected').setAttribute('aria-live', 'polite'); }).catch((e) => { $('merr-general').textContent = `sound: ${e.message || e}`; });
}

// --- the mode switch and the controls -------------------------------------------------------------------------

/** Model mode's views by their ?embed= name. */
const EMBEDS = { arcs: '.roll-fig', tiles: '#m-panel-tiles', distance: '#m-panel-dist', prediction: '#m-panel-predict', nll: '#m-panel-nll' };

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
  const roll = document.createElement('canvas');
  Object.assign(roll, { id: 'roll', tabIndex: 0 });
  roll.setAttribute('role', 'img');
  roll.setAttribute('aria-describedby', 'roll-hint');
  roll.setAttribute('aria-label', "Piano roll of the window with the selected note's attention arcs");
  $('roll-holder').replaceWith(roll);
  roll.addEventListener('click', (e) => {
    if (!m.shown) return;
    const b = roll.getBoundingClientRect();
    const t = hit(roll, m.shown, sampledNotes(), e.clientX - b.left, e.clientY - b.top);
    if (t != null) select(t);
  });
  roll.addEventListener('mousemove', hoverRoll);
  roll.addEventListener('keydown', (e) => {
    if (!m.shown) return;
    const t = m.position ?? 0;
    const T = m.shown.window.length;
    // ← / →: the previous / next token (Shift: the same voice a step away); ↑ / ↓: the voice above / below at
    // the same step; Home / End: the first / last token.
    const to = {
      ArrowLeft: t - (e.shiftKey ? 4 : 1),
      ArrowRight: t + (e.shiftKey ? 4 : 1),
      ArrowUp: t % 4 > 0 ? t - 1 : t,
      ArrowDown: t % 4 < 3 ? t + 1 : t,
      Home: 0,
      End: T - 1,
    }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(to);
  });
  const nll = document.createElement('canvas');
  nll.id = 'm-nll';
  nll.setAttribute('role', 'img');
  nll.setAttribute('aria-label', 'NLL per position of the six models');
  $('m-nll-holder').replaceWith(nll);
}

/** Shows mode `mode` ('params' or 'model'); `startParams()` sends Parameters mode's first request. */
export function setMode(mode, startParams) {
  state.mode = mode === 'model' ? 'model' : 'params';
  if (state.mode === 'model') ensureCanvases();
  document.body.dataset.mode = state.mode;
  $('mode-params').setAttribute('aria-pressed', String(state.mode === 'params'));
  $('mode-model').setAttribute('aria-pressed', String(state.mode === 'model'));
  // Each mode's footer line is its own result's; a result of another Backend than the one chosen is asked again.
  if (state.mode === 'model') {
    if (m.shown) { redraw(); showBackend(m.shown.backend); }
    if (state.worker && (!m.shown || m.shown.backend.mode !== backendMode())) modelRequest();
  } else {
    if (playing()) stop();
    if (state.current) showBackend(state.current.backend);
    if (!state.paramsStarted && startParams) startParams();
    else if (state.current && state.current.backend.mode !== backendMode()) requestTrace();
  }
  saveURL();
}

/** Connects Model mode's controls (once, at start). */
export function wireModel(startParams) {
  $('mode-params').addEventListener('click', () => setMode('params', startParams));
  $('mode-model').addEventListener('click', () => setMode('model', startParams));
  for (const b of document.querySelectorAll('#model .panel-export button')) b.addEventListener('click', () => exportPanel(b.closest('section'), b.dataset.export));
  const shown = () => m.shown;
  wireSampling(shown, () => redraw());
  wireComparisons(shown, () => readHead().layer);
  wireSlides(shown, redrawAll, () => {
    // This head's stages from the first (the indices, the table, the logits, the skew's steps in order, the
    // weights, the outputs); Esc there returns to Model mode as it was left.
    state.presentWhenReady = 0;
    state.afterPresent = () => setMode('model', null);
    $('m-stages').click();
  });
  // The charts are drawn at their displayed size: again when the window (or an embedding frame) resizes.
  let resizing = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(() => { if (m.shown && state.mode === 'model') redrawAll(); });
  });
  // The chosen layer and head, stage by stage, in Parameters mode's figures (src/web/model.rs trace).
  $('m-stages').addEventListener('click', () => {
    const { layer, head } = readHead();
    state.modelSource = { kind: modelKind(), window: readWindow(), layer };
    state.want = { batch: 0, head };
    state.pinned = null;
    state.pinnedRow = null;
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
    m.position = null; // the new window's middle
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
