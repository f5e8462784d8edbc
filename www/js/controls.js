// Owns the form: reading the settings from the controls, writing a result's settings back into them, the
// theme, and the errors shown next to each control (an <output id="err-FIELD"> per field, aria-invalid).
import { $ } from './dom.js';
import { state } from './state.js';

/** The controls that are trace parameters (each change computes again). */
export const PARAMS = ['method', 'n', 'd_model', 'heads', 'clip', 'seed', 'causal', 'rel_v', 'per_head'];
/** The fields an error can be shown next to (err-FIELD); 'file' is the file picker. */
export const FIELDS = ['preset', 'method', 'n', 'd_model', 'heads', 'clip', 'seed', 'sentence', 'file'];
/** The controls saved in the URL, by type. */
export const NUMS = ['n', 'd_model', 'heads', 'clip', 'seed'];
export const BOOLS = ['causal', 'rel_v', 'per_head'];

/** The sentence's tokens (they label the axes when there are n of them). */
export function tokens() {
  const s = $('sentence').value.trim();
  return s ? s.split(/\s+/) : [];
}

/** @returns {import('./protocol.js').Params} the controls as they are (an empty number field is NaN) */
export function readParams() {
  const num = (id) => {
    const el = $(id);
    return el.value.trim() === '' ? NaN : Number(el.value);
  };
  return {
    preset: $('preset').value,
    method: $('method').value,
    n: num('n'), d_model: num('d_model'), heads: num('heads'), clip: num('clip'), seed: num('seed'),
    causal: $('causal').checked, rel_v: $('rel_v').checked, per_head: $('per_head').checked,
  };
}

export function colormaps() {
  return { sequential: $('seq').value, diverging: $('div').value };
}

/** The (batch, head) to show: the URL's for the first request, else the selects'. */
export function shownSlice() {
  if (state.want) return { batch: state.want.batch, head: state.want.head };
  return { batch: Number($('batch').value) || 0, head: Number($('head').value) || 0 };
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
  const field = file && (!FIELDS.slice(0, -1).includes(error.field) || error.kind === 'too-large') ? 'file' : error.field;
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

/** Writes the settings a result was computed with back into the controls. */
export function syncControls(info) {
  $('method').value = info.method;
  for (const k of NUMS) $(k).value = String(info[k]);
  $('causal').checked = info.causal;
  $('rel_v').checked = info.rel_v;
  $('per_head').checked = info.per_head;
  fillSelect($('head'), info.heads, info.head);
  fillSelect($('batch'), info.batch_size, info.batch);
  $('preset-desc').textContent = info.preset ? state.ui.preset_description(info.preset) : '';
}

/** Selects `value` when the select has it; leaves it alone otherwise (a stale URL). */
export function setSelect(sel, value) {
  if ([...sel.options].some((o) => o.value === value)) sel.value = value;
}

export function setTheme(t) {
  document.documentElement.dataset.theme = t;
  $('theme').value = t;
}
