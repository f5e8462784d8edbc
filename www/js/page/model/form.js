// Owns Model mode's form: reading the window (the Rust ModelRequest) and the chosen model, layer and head
// from the controls, writing a result back into them (the pieces by BWV and title, the ranges a window
// allows, the layers and heads the model has), the URL's model fields, and the errors shown next to each
// control (an <output id="merr-FIELD"> per field; the wasm's error names the field).
import { $ } from '../dom.js';
import { state } from '../state.js';

/** The fields an error can be shown next to. */
const FIELDS = ['model', 'piece', 'opening', 'start', 'length', 'transpose', 'layer', 'head'];
/** The URL's keys of Model mode (besides mode=model). */
export const MODEL_KEYS = ['model', 'piece', 'opening', 'start', 'length', 'transpose', 'layer', 'head', 'note'];
/** The piece select's first option: a window that is one opening chord (#m-opening), to sample a new piece from. */
const OPENING = 'opening';
const openingOption = () => new Option('An opening chord (sample a new piece from it)', OPENING);

// This module's own state: no other module writes it.
const form = {
  /** The URL's note=: the token the first result selects, or null. */
  wantNote: null,
};

const num = (id) => ($(id).value.trim() === '' ? NaN : Number($(id).value));

/** The model select's name for model `kind` ('music', …): the one the page shows everywhere. */
export function modelLabel(kind) {
  const o = [...$('m-model').options].find((x) => x.value === kind);
  return o ? o.textContent : kind;
}

/** The shipped models' kinds, as the model select (index.html) offers them; the worker's list is the wasm's
 *  model_kinds() (crates/relattn/src/trained/mod.rs MODELS), and the e2e test checks that the two agree. */
export function modelKinds() {
  return [...$('m-model').options].map((o) => o.value);
}

/** The chosen model kind. */
export function modelKind() {
  return $('m-model').value;
}

/** @returns {import('../../shared/protocol.js').ModelWindow} the window as the controls say (NaN for an empty box) */
export function readWindow() {
  const piece = $('m-piece').value || $('m-piece').dataset.want || '';
  if (piece === OPENING) return { piece: '', opening: $('m-opening').value, start: 0, length: 4, transpose: num('m-transpose') };
  return { piece, start: num('m-start'), length: num('m-length'), transpose: num('m-transpose') };
}

/** What window `w` is, in titles and sentences: "BWV 10.7" or "the opening C5 G4 E4 C3". */
export function windowName(w) {
  return w.opening != null ? `the opening ${w.opening}` : `BWV ${w.piece}`;
}

/** "the Music Transformer (relative, skew) model, BWV 10.7, tokens 0…63": the model and window of result `s`
 *  (Model mode's slides and exports). */
export function shownWhere(s) {
  const w = s.window;
  return `${modelLabel(s.model)} model, ${windowName(w)}, tokens ${w.start}…${w.start + w.length - 1}`;
}

/** A file-name-safe form of windowName. */
export function windowSlug(w) {
  return w.opening != null ? `opening-${w.opening.trim().replace(/\s+/g, '-')}` : `BWV${w.piece}`;
}

/** Shows the chord's box and hides start and length when the window is an opening chord. */
export function showOpening() {
  const chord = $('m-piece').value === OPENING;
  $('m-opening-ctl').hidden = !chord;
  for (const k of ['start', 'length']) $(`m-${k}`).disabled = chord;
}

/** The chosen (layer, head). */
export function readHead() {
  return { layer: Number($('m-layer').value) || 0, head: Number($('m-head').value) || 0 };
}

/** Sets a select to `value`, adding it as an option when missing (the URL's layer before the model is known). */
function choose(sel, value) {
  if (![...sel.options].some((o) => o.value === value)) sel.append(new Option(value, value));
  sel.value = value;
}

function fillNumbers(sel, count, value) {
  if (sel.options.length !== count || [...sel.options].some((o, i) => o.value !== String(i))) sel.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i), String(i))));
  sel.value = String(Math.min(value, count - 1));
}

/** The piece select: every test piece by BWV and title (kept once filled). */
function fillPieces(pieces, value) {
  const sel = $('m-piece');
  if (sel.options.length !== pieces.length + 1 || sel.options[1].value !== pieces[0].bwv) {
    sel.replaceChildren(openingOption(), ...pieces.map((p) => new Option(`BWV ${p.bwv} — ${p.title} (${p.time_signature}, ${p.length / 4} steps)`, p.bwv)));
  }
  sel.value = value;
  delete sel.dataset.want;
}

/**
 * Offers `info`'s pieces, layers and heads after a refused request (the model loaded), keeping the value
 * refused selected, so that another can be chosen.
 */
export function syncChoices(info) {
  const keep = (sel, options) => {
    const v = sel.value;
    const extra = options.some((o) => o.value === v) ? [] : [new Option(v, v)];
    sel.replaceChildren(...extra, ...options);
    sel.value = v;
  };
  keep($('m-piece'), [openingOption(), ...info.pieces.map((p) => new Option(`BWV ${p.bwv} — ${p.title} (${p.time_signature}, ${p.length / 4} steps)`, p.bwv))]);
  delete $('m-piece').dataset.want;
  keep($('m-layer'), Array.from({ length: info.config.layers }, (_, i) => new Option(String(i), String(i))));
  keep($('m-head'), Array.from({ length: info.config.heads }, (_, i) => new Option(String(i), String(i))));
  samplerDefaults(info);
}

/** The sampler's defaults are the runtime's (the CLI's too), until one is typed. */
function samplerDefaults(info) {
  if ($('m-top-k').value === '') $('m-top-k').value = String(info.top_k);
  if ($('m-top-p').value === '') $('m-top-p').value = String(Math.round(info.top_p * 1000) / 1000);
}

/** Writes a result's model and window into the controls and their ranges. */
export function syncModelForm(r) {
  const { info, window: w } = r;
  $('m-model').value = r.model;
  fillPieces(info.pieces, w.opening ? OPENING : w.piece);
  if (w.opening) $('m-opening').value = w.opening;
  showOpening();
  $('m-transpose').value = String(w.transpose);
  $('m-transpose').min = String(w.transpose_min);
  $('m-transpose').max = String(w.transpose_max);
  $('m-transpose-range').textContent = `(${w.transpose_min}…${w.transpose_max})`;
  const piece = info.pieces.find((p) => p.bwv === w.piece);
  if (piece) {
    $('m-start').value = String(w.start);
    $('m-length').value = String(w.length);
    $('m-start').max = String(piece.length - 4);
    $('m-length').max = String(Math.min(piece.length - w.start, info.max_length));
    $('m-start-range').textContent = `(0–${piece.length - 4}, ×4)`;
    $('m-length-range').textContent = `(2–${Math.min(piece.length - w.start, info.max_length)})`;
    $('m-transpose-range').title = `This window allows ${w.transpose_min}…${w.transpose_max} semitones; the whole piece ${piece.transpose_min}…${piece.transpose_max} (every pitch stays in the vocabulary)`;
  } else {
    $('m-transpose-range').title = `This chord allows ${w.transpose_min}…${w.transpose_max} semitones (every pitch stays in the vocabulary)`;
  }
  fillNumbers($('m-layer'), info.config.layers, r.layer);
  fillNumbers($('m-head'), info.config.heads, r.head);
  samplerDefaults(info);
}

export function clearModelErrors() {
  for (const f of FIELDS) $(`merr-${f}`).textContent = '';
  $('merr-general').textContent = '';
  for (const el of $('model-form').querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** One error next to its control (the field named by the wasm), or under the form. */
export function showModelError(error) {
  clearModelErrors();
  const field = FIELDS.includes(error.field) ? error.field : 'general';
  $(`merr-${field}`).textContent = error.message;
  if (field !== 'general') $(`m-${field}`).setAttribute('aria-invalid', 'true');
}

/** Model mode's fields in query `q` (url.js saveURL). */
export function modelQuery(q) {
  const w = readWindow();
  const { layer, head } = readHead();
  q.set('model', modelKind());
  if (w.opening !== undefined) q.set('opening', w.opening);
  else if (w.piece) q.set('piece', w.piece);
  for (const k of ['start', 'length', 'transpose']) q.set(k, $(`m-${k}`).value);
  q.set('layer', String(layer));
  q.set('head', String(head));
  if (state.model.position !== null) q.set('note', String(state.model.position));
}

/** Sets the model controls from query `q` (url.js applyURL), before the first model request. */
export function applyModelURL(q) {
  if (modelKinds().includes(q.get('model'))) $('m-model').value = q.get('model');
  if (q.has('opening')) {
    choose($('m-piece'), OPENING);
    $('m-opening').value = q.get('opening');
    showOpening();
  } else if (q.has('piece')) {
    const sel = $('m-piece');
    choose(sel, q.get('piece'));
    sel.dataset.want = q.get('piece');
  } else {
    choose($('m-piece'), '10.7');
  }
  for (const k of ['start', 'length', 'transpose']) if (q.has(k)) $(`m-${k}`).value = q.get(k);
  for (const k of ['layer', 'head']) if (/^\d+$/.test(q.get(k) || '')) choose($(`m-${k}`), q.get(k));
  const note = /^\d+$/.exec(q.get('note') || '');
  form.wantNote = note ? Number(note[0]) : null;
}

/** The URL's note= (the token to select in the first result), or null once a result was shown. */
export function wantedNote() {
  return form.wantNote;
}

/** A result is shown: the URL's note= is spent. */
export function noteTaken() {
  form.wantNote = null;
}
