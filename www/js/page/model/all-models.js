// Owns Model mode's views of all six models on one window (the protocol's NllRequest and CompareRequest): the
// NLL per position of the six models beyond the training length, and the six models' attention by distance
// side by side. Each keeps its own request id and answer; only the newest answer is drawn (panels.js).
// (The six position schemes on Parameters mode's options: ../compare.js.)
import { $ } from '../dom.js';
import { post } from '../worker-client.js';
import { modelLabel } from './form.js';
import { nllRequest, compareRequest, windowOf } from '../../shared/protocol.js';
import { drawDistances, drawNll, drawModelsSlide } from './panels.js';
import { backendMode } from '../controls.js';

const nll = { id: 0, result: null };
const compare = { id: 0, result: null };
/** The result shown (mode.js) and the chosen layer, given by wireComparisons. */
let shown = () => null;
let chosenLayer = () => 0;

/** Connects the two buttons; `shownResult()` is the result shown, `layer()` the layer chosen. */
export function wireComparisons(shownResult, layer) {
  shown = shownResult;
  chosenLayer = layer;
  $('m-nll-btn').addEventListener('click', computeNll);
  $('m-compare-btn').addEventListener('click', computeCompare);
}

/** Computes the six models side by side unless they are there or on their way (their slide). */
export function ensureComparison() {
  if (!compare.result && !$('m-compare-btn').disabled) computeCompare();
}

/** The six models' comparison shown, or null: { window, layer } of its CompareResult. */
export function comparisonShown() {
  return compare.result;
}

/** The NLL chart shown, or null: its NllResult ({ piece, length, series }). */
export function nllShown() {
  return nll.result;
}

/** Computes the NLL chart unless it is there or on its way (the NLL slide, ?embed=nll). */
export function ensureNll() {
  if (!nll.result && !$('m-nll-btn').disabled) computeNll();
}

/** A new window: an NLL chart of another piece is dropped. */
export function windowShown(piece) {
  if (nll.result && nll.result.piece !== piece) {
    nll.result = null;
    drawNll(null);
  }
}

function computeNll() {
  const s = shown();
  if (!s) return;
  const piece = s.info.pieces.find((p) => p.bwv === s.window.piece);
  if (!piece) {
    $('merr-nll').textContent = 'The NLL per position reads a chorale of the test split: choose one in Chorale (this window is an opening chord).';
    return;
  }
  nll.id += 1;
  $('merr-nll').textContent = '';
  $('m-nll-btn').disabled = true;
  $('m-nll-btn').textContent = 'Computing…';
  post(nllRequest(nll.id, s.window.piece, Math.min(1024, piece.length), backendMode()));
}

function nllDone() {
  $('m-nll-btn').disabled = false;
  $('m-nll-btn').textContent = 'Compute NLL per position: the six models';
}

function computeCompare() {
  const s = shown();
  if (!s) return;
  compare.id += 1;
  $('merr-compare').textContent = '';
  $('m-compare-btn').disabled = true;
  post(compareRequest(compare.id, windowOf(s.window), chosenLayer(), backendMode()));
}

/** The worker's answers: NllResult, CompareResult, or a ModelError of either. */
export function onComparison(msg) {
  if (msg.kind === 'model-nll' && msg.id === nll.id) {
    nll.result = msg;
    drawNll(msg);
    nllDone();
  } else if (msg.kind === 'model-compare' && msg.id === compare.id) {
    compare.result = msg;
    drawComparisons();
    $('m-compare-btn').disabled = false;
  } else if (msg.kind === 'model-error' && msg.of === 'model-nll' && msg.id === nll.id) {
    $('merr-nll').textContent = msg.error.message;
    nllDone();
  } else if (msg.kind === 'model-error' && msg.of === 'model-compare' && msg.id === compare.id) {
    $('merr-compare').textContent = msg.error.message;
    $('m-compare-btn').disabled = false;
  }
}

/** Draws both again (at a new size, or on a slide): one row of distance charts per model, and the NLL chart. */
export function drawComparisons() {
  drawNll(nll.result);
  const c = compare.result;
  const s = shown();
  if (!c || !s) return;
  const box = $('m-compare');
  // On its slide: one chart per model, heads overlaid, three to a row (it fits 1280 × 720).
  if (document.body.dataset.modelSlide === 'models') {
    drawModelsSlide(c, box);
    return;
  }
  box.replaceChildren();
  for (const { model, profiles, descriptions, landmarks } of c.series) {
    const row = document.createElement('div');
    row.className = 'compare-row';
    row.dataset.model = model;
    // Each head's distribution sums to 1 (kept for the tests).
    row.dataset.sums = JSON.stringify(profiles.map((d) => d.reduce((a, b) => a + b, 0)));
    const h = document.createElement('h3');
    h.textContent = `${modelLabel(model)}, layer ${c.layer}`;
    const charts = document.createElement('div');
    charts.className = 'dist';
    row.append(h, charts);
    box.append(row);
    drawDistances({ ...s, window: c.window, layer: c.layer, profiles, descriptions, landmarks, meter: s.window.meter }, charts);
  }
  $('m-dist-layer').textContent = `layer ${chosenLayer()}`;
}
