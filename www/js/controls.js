// Owns the form: reading the settings from the controls, writing a result's settings back into them, the
// theme, and the errors shown next to each control (an <output id="err-FIELD"> per field, aria-invalid).
// The settings are the Rust struct `Settings` (src/web/request.rs), field for field: each number control's
// id is its field's name. Adding a control: its field in Settings, its element in index.html, its name here.
import { $ } from './dom.js';
import { state } from './state.js';

/** The Settings fields that are numbers and checkboxes (each change computes again; each is kept in the URL). */
export const NUMS = ['n', 'd_model', 'heads', 'clip', 'seed', 'batch_size', 'rope_base', 'rope_fraction', 'rope_scale', 't5_buckets', 't5_max_distance'];
/** The Settings fields that are selects. */
export const CHOICES = ['method', 'rope_layout'];
export const BOOLS = ['causal', 'rel_v', 'per_head', 'relative_only'];
/** The controls that are trace parameters. */
export const PARAMS = [...CHOICES, ...NUMS, ...BOOLS];
/** The fields an error can be shown next to (err-FIELD); 'file' is the file picker ('tokens': the sentence). */
export const FIELDS = ['preset', ...CHOICES, ...NUMS, 'tokens', 'file'];

/** The sentence's tokens: with some, x is built from them (one vector per distinct token) and n is their number. */
export function tokens() {
  const s = $('sentence').value.trim();
  return s ? s.split(/\s+/) : [];
}

/** @returns {import('./protocol.js').Params} the controls as they are (an empty number field is NaN) */
export function readParams() {
  const settings = {};
  for (const k of CHOICES) settings[k] = $(k).value;
  for (const k of NUMS) settings[k] = $(k).value.trim() === '' ? NaN : Number($(k).value);
  for (const k of BOOLS) settings[k] = $(k).checked;
  // The sentence makes x when it has n tokens (typing it sets n); with another n, x is random and unlabelled.
  const toks = tokens();
  settings.tokens = toks.length === settings.n ? toks : [];
  return { preset: $('preset').value, settings };
}

export function colormaps() {
  return { sequential: $('seq').value, diverging: $('div').value };
}

export function backendMode() {
  return $('backend-mode').value;
}

export function clearErrors() {
  for (const f of FIELDS) $(`err-${f}`).textContent = '';
  $('err-general').textContent = '';
  for (const el of document.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** Shows one error, next to its control (under the controls when the field has none), clearing the others. */
export function showError(field, message) {
  clearErrors();
  const out = $(`err-${field}`) || $('err-general');
  out.textContent = message;
  const ctl = $(field);
  if (ctl && FIELDS.includes(field)) ctl.setAttribute('aria-invalid', 'true');
}

/**
 * A refused request's error, where it belongs: with a file in play (`file`), errors about it (and a size too
 * large, which its x fixed) go next to the file picker, prefixed with its name unless they name it.
 * @param {import('./protocol.js').WorkerError} error
 * @param {{ name: string } | null} file
 */
export function showRefusal(error, file) {
  const field = file && (!FIELDS.slice(0, -1).includes(error.field) || error.kind === 'too_large') ? 'file' : error.field;
  const named = field === 'file' && file && !error.message.includes(file.name);
  showError(field, named ? `${file.name}: ${error.message}` : error.message);
}

function fillSelect(sel, count, value) {
  if (sel.options.length !== count) {
    sel.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i), String(i))));
  }
  sel.value = String(value);
  sel.disabled = count <= 1;
}

/**
 * Writes the settings a result was computed with back into the controls, and the (batch, head) shown.
 * @param {import('./protocol.js').TraceInfo} info
 * @param {{ batch: number, head: number }} shown
 */
export function syncControls(info, shown) {
  const s = info.settings;
  for (const k of CHOICES) $(k).value = s[k];
  for (const k of NUMS) $(k).value = String(s[k]);
  for (const k of BOOLS) $(k).checked = s[k];
  optionsFollowMethod();
  fillSelect($('head'), s.heads, shown.head);
  fillSelect($('batch'), s.batch_size, shown.batch);
  $('preset-desc').textContent = info.preset_description;
}

/** Selects `value` when the select has it; leaves it alone otherwise (a stale URL). */
export function setSelect(sel, value) {
  if ([...sel.options].some((o) => o.value === value)) sel.value = value;
}

/** The page's theme; the figures follow it (drawn by the page's wasm, when loaded). */
export function setTheme(t) {
  document.documentElement.dataset.theme = t;
  $('theme').value = t;
  if (state.ui) state.ui.set_theme(t === 'dark');
}

/**
 * The controls follow the method: the options it does not read are disabled (k, a^V, per-head tables), greyed
 * with their values kept, or hidden (RoPE's, T5's), as the page's wasm says (scheme_options:
 * src/protocol/parameters.rs SchemeOptions). Called again once that wasm is loaded (main.js), as a page opened
 * in Model mode restores its URL before.
 */
export function optionsFollowMethod() {
  if (!state.ui) return;
  /** @type {import('./types/protocol').SchemeOptions} */
  const o = state.ui.scheme_options($('method').value);
  $('rel_v').disabled = !o.rel_v;
  $('rel_v').title = o.rel_v ? '' : 'Only Shaw et al. have a relative value term a^V';
  $('per_head').disabled = !o.per_head;
  $('per_head').title = o.per_head ? '' : 'This method has no learned table to give each head its own';
  $('clip').disabled = !o.clip;
  $('clip').title = o.clip ? '' : 'k sizes the tables of Shaw et al. and the Music Transformer; this method has none';
  for (const el of document.querySelectorAll('.scheme-rope')) el.hidden = !o.rope;
  for (const el of document.querySelectorAll('.scheme-t5')) el.hidden = !o.buckets;
}
