// Owns the form: reading the layer's options from the controls, writing a result's options back into them, the
// theme, and the errors shown next to each control (an <output id="err-FIELD"> per field, aria-invalid).
// The options are the Rust struct `LayerOptions` (crates/relattn/src/options.rs), field for field: each option's control
// has the field's name as its id and the attribute data-option in index.html, and is read by its kind (a
// checkbox, a number box or a select). Adding a control: its field in LayerOptions, its element in index.html.
import { $, all } from './dom.js';
import { state } from './state.js';

/** The option controls (LayerOptions' fields, the preset first), in the order of the form. */
export const OPTIONS = [...document.querySelectorAll('[data-option]')].map((el) => el.id);
/** The controls that are trace parameters (each change computes again; each is kept in the URL): the options
 *  but the preset, which replaces them. */
export const PARAMS = OPTIONS.filter((k) => k !== 'preset');
/** The fields an error can be shown next to (those with an <output id="err-FIELD">; a checkbox's go under the
 *  controls); 'file' is the file picker ('tokens': the sentence). */
export const FIELDS = [...OPTIONS, 'tokens', 'file'].filter((f) => document.getElementById(`err-${f}`));

/** The sentence's tokens: with some, x is built from them (one vector per distinct token) and n is their number. */
export function tokens() {
  const s = $('sentence').value.trim();
  return s ? s.split(/\s+/) : [];
}

/** An option control's value: a checkbox's state, a number box's number (NaN when empty), a select's value (an
 *  object when the chosen entry holds one in data-json: a captured model's logit scale, { factor }). */
export function readOption(k) {
  const el = $(k);
  if (el.type === 'checkbox') return el.checked;
  if (el.type === 'number') return el.value.trim() === '' ? NaN : Number(el.value);
  const json = el.selectedOptions?.[0]?.dataset.json;
  return json ? JSON.parse(json) : el.value;
}

/** Sets an option control from a value as readOption gives it (or a link's text: '1'/'0' for a checkbox); an
 *  object value (logit_scale's { factor }) gets an entry of its own in the select, labelled with its numbers. */
export function writeOption(k, v) {
  const el = $(k);
  // A link holds such an object as its JSON text.
  if (el.tagName === 'SELECT' && typeof v === 'string' && v.startsWith('{')) {
    try { v = JSON.parse(v); } catch { return false; }
  }
  if (el.type === 'checkbox') el.checked = v === true || v === '1';
  else if (el.tagName === 'SELECT' && v !== null && typeof v === 'object') {
    const json = JSON.stringify(v);
    let entry = [...el.options].find((o) => o.dataset.json === json);
    if (!entry) {
      entry = new Option(Object.entries(v).map(([name, x]) => `${name} ${x}`).join(', '), json);
      entry.dataset.json = json;
      el.add(entry);
    }
    el.value = json;
  } else if (el.tagName === 'SELECT') return setSelect(el, String(v));
  else el.value = String(v);
  return true;
}

/**
 * The layer's options as the controls give them (the preset alone when one is picked, unless `noPreset`: a
 * file's tables replace a preset's) and the sentence's tokens.
 * @param {boolean} noPreset
 * @returns {{ options: import('../types/protocol').LayerOptions, tokens: string[] }}
 */
export function readParams(noPreset) {
  /** @type {Record<string, string | number | boolean>} */
  const options = {};
  const preset = $('preset').value;
  // The sentence makes x when it has n tokens (typing it sets n); with another n, x is random and unlabelled.
  const toks = tokens();
  if (preset && !noPreset) {
    // A preset whose logits x does not change takes a sentence of its n words (crates/relattn-wasm/src/lib.rs presets).
    const words = state.ui ? state.ui.presets().find((p) => p.name === preset)?.sentence_words : 0;
    return { options: { preset }, tokens: toks.length === words ? toks : [] };
  }
  for (const k of PARAMS) options[k] = readOption(k);
  return { options, tokens: toks.length === options.n ? toks : [] };
}

export function colormaps() {
  return { sequential: $('seq').value, diverging: $('div').value };
}

/** Which stages share one colour scale across heads (protocol HeadScale). */
export function headScale() {
  return /** @type {import('../types/protocol').HeadScale} */ ($('head-scale').value);
}

export function backendMode() {
  return $('backend-mode').value;
}

/** The Workers control's default: this machine's cores (navigator.hardwareConcurrency), at most 16. */
export const DEFAULT_WORKERS = Math.min(16, Math.max(1, navigator.hardwareConcurrency || 1));

/** How many workers compute a layer held on demand (the Workers control, 1 to 64; its default when not a number). */
export function workers() {
  const w = Math.floor(Number($('workers').value));
  return Number.isFinite(w) && w >= 1 ? Math.min(w, 64) : DEFAULT_WORKERS;
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
 * @param {import('../shared/protocol.js').WorkerError} error
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
 * Writes the options a result was computed with back into the controls, and the (batch, head) shown.
 * @param {import('../types/protocol').Info} info
 * @param {{ batch: number, head: number }} shown
 */
export function syncControls(info, shown) {
  const s = info.options;
  for (const k of PARAMS) writeOption(k, s[k]);
  optionsFollowMethod();
  fillSelect($('head'), s.heads, shown.head);
  fillSelect($('batch'), s.batch_size, shown.batch);
  // A captured model layer says what it is (model, part, layer) and what its family does.
  const c = info.capture;
  $('preset-desc').textContent = c ? `${info.capture_title} (${c.family}). ${c.notes.join(' ')}` : info.preset_description;
}

/** Selects `value` when the select has it; leaves it alone otherwise (a stale URL). Whether it had it. */
export function setSelect(sel, value) {
  const has = [...sel.options].some((o) => o.value === value);
  if (has) sel.value = value;
  return has;
}

/** The page's theme; the figures follow it (drawn by the page's wasm, when loaded). */
export function setTheme(t) {
  document.documentElement.dataset.theme = t;
  $('theme').value = t;
  if (state.ui) state.ui.set_theme(t === 'dark');
}

/** A method chosen by hand: per-head tables as its models learn them (ticked for T5, whose bias is one table per
 *  head; unticked for Shaw's and the Music Transformer's shared tables), then the controls follow it. */
export function methodChosen() {
  if (state.ui) $('per_head_tables').checked = state.ui.scheme_options($('method').value).tables_per_head;
  optionsFollowMethod();
}

/**
 * The controls follow the method: the options it does not read are disabled (k, a^V, per-head tables), greyed
 * with their values kept, or hidden (RoPE's, T5's, DeBERTa's, BERT's, Transformer-XL's segments, the Music Transformer's edge), as the page's wasm says (scheme_options:
 * crates/relattn/src/protocol/layer_view.rs SchemeOptions). Called again once that wasm is loaded (main.js), as a page opened
 * in Model mode restores its URL before.
 */
export function optionsFollowMethod() {
  if (!state.ui) return;
  /** @type {import('../types/protocol').SchemeOptions} */
  const o = state.ui.scheme_options($('method').value);
  $('relative_values').disabled = !o.rel_v;
  $('relative_values').title = o.rel_v ? '' : 'Only Shaw et al. have a relative value term a^V';
  $('per_head_tables').disabled = !o.per_head;
  $('per_head_tables').title = o.per_head ? '' : 'This method has no learned table to give each head its own';
  $('clip').disabled = !o.clip;
  $('clip').title = o.clip ? '' : 'k sizes the tables of Shaw et al. and the Music Transformer and clamps Transformer-XL\'s i − j; this method has none';
  for (const el of all('.scheme-rope')) el.hidden = !o.rope;
  for (const el of all('.scheme-t5')) el.hidden = !o.buckets;
  for (const el of all('.scheme-deberta')) el.hidden = !o.deberta;
  for (const el of all('.scheme-bert')) el.hidden = !o.bert;
  for (const el of all('.scheme-xl')) el.hidden = !o.xl;
  for (const el of all('.scheme-edge')) el.hidden = !o.edge;
  for (const el of all('.scheme-absolute')) el.hidden = !o.positions;
}
