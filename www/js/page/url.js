// Owns the shareable state: every control, the pin and the presented stage in the query string (saveURL after
// each change, applyURL once at start), ?embed=STAGE, and "Copy link" with its toast. In Model mode the query
// is mode=model and Model mode's fields (model/form.js: model, piece, start, length, transpose, layer, head,
// note), its slide, the theme, the backend and the workers (when not this machine's cores). It reads what it saves from state.js, the controls and the DOM.
import { $ } from './dom.js';
import { state } from './state.js';
import { PARAMS, readOption, writeOption, setSelect, setTheme, optionsFollowMethod, workers, DEFAULT_WORKERS } from './controls.js';
import { modelQuery, applyModelURL, modelKinds } from './model/form.js';
import { modelLayer, useModelLayer, askSlice } from './source.js';

/** ?embed=STAGE: that one heatmap, sized to its frame, and nothing else (null: the whole page); in Model mode,
 *  ?embed=arcs (the piano roll with its arcs), tiles, distance, prediction or nll (model/mode.js applyModelEmbed). */
export const EMBED = new URLSearchParams(location.search).get('embed');

/** Links made before the options had one spelling everywhere keep working: an old name → its option. */
const OLD_NAMES = { per_head: 'per_head_tables', rel_v: 'relative_values' };

export function saveURL() {
  const cur = state.current;
  if (state.mode === 'model') {
    const q = new URLSearchParams({ mode: 'model' });
    if (EMBED) q.set('embed', EMBED);
    modelQuery(q);
    if (state.model.slide) q.set('slide', state.model.slide);
    q.set('theme', document.documentElement.dataset.theme);
    q.set('backend', $('backend-mode').value);
    const url = `${location.pathname}?${q}`;
    if (url !== location.pathname + location.search) history.replaceState(null, '', url);
    return;
  }
  if (!cur) return;
  const q = new URLSearchParams();
  if (EMBED) q.set('embed', EMBED);
  const preset = $('preset').value;
  if (preset) q.set('preset', preset);
  else {
    for (const k of PARAMS) {
      const v = readOption(k);
      q.set(k, typeof v === 'boolean' ? (v ? '1' : '0') : $(k).value);
    }
  }
  q.set('head', $('head').value);
  q.set('batch', $('batch').value);
  q.set('sentence', $('sentence').value);
  if (state.pinned) q.set('pin', `${state.pinned.i},${state.pinned.j}`);
  if (state.pinnedRow != null) q.set('row', String(state.pinnedRow));
  q.set('seq', $('seq').value);
  q.set('div', $('div').value);
  q.set('head_scale', $('head-scale').value);
  q.set('theme', document.documentElement.dataset.theme);
  q.set('backend', $('backend-mode').value);
  if (workers() !== DEFAULT_WORKERS) q.set('workers', String(workers()));
  // A trained model's layer shown stage by stage: model, piece, start, length, transpose, layer.
  const src = modelLayer();
  if (src) q.set('source', [src.kind, src.window.piece, src.window.start, src.window.length, src.window.transpose, src.layer].join(','));
  if (state.presentedAt !== null && cur.stages[state.presentedAt]) q.set('present', cur.stages[state.presentedAt].name);
  // The comparison, when open: what it compares, and its slide when presented.
  if (!$('compare').hidden) q.set('compare', $('compare-what').value);
  const slide = document.body.dataset.compareSlide;
  if (slide !== undefined) q.set('present', slide);
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, '', url);
}

/**
 * Sets the controls, Model mode's form and Parameters mode's source (source.js) from the URL, before the first
 * request. Returns what other features restore: `{ notice, present, pin, row, slide }` (a value of the link the
 * page does not have, `{ field, message }`, or null; the stage to present or null, the pinned pair { i, j } or
 * null, the pinned table row or null; in Model mode the slide to show, else null).
 */
export function applyURL() {
  const q = new URLSearchParams(location.search);
  if (q.has('preset')) setSelect($('preset'), q.get('preset'));
  for (const [old, k] of Object.entries(OLD_NAMES)) if (q.has(old) && !q.has(k)) q.set(k, q.get(old));
  // A value a select does not have (a stale or mistyped link) is said, not silently replaced.
  let notice = null;
  for (const k of PARAMS) {
    if (q.has(k) && !writeOption(k, q.get(k)) && !notice) {
      const allowed = [...$(k).options].map((o) => o.value).join(', ');
      notice = { field: k, message: `The link's ${k}=${q.get(k)} is not one of ${allowed}: showing ${$(k).value}.` };
    }
  }
  optionsFollowMethod();
  if (q.has('sentence')) $('sentence').value = q.get('sentence');
  for (const k of ['seq', 'div']) if (q.has(k)) setSelect($(k), q.get(k));
  if (q.has('head_scale')) setSelect($('head-scale'), q.get('head_scale'));
  if (q.has('compare')) { setSelect($('compare-what'), q.get('compare')); $('compare').hidden = false; }
  if (q.has('backend')) setSelect($('backend-mode'), q.get('backend'));
  $('workers').value = q.has('workers') ? q.get('workers') : String(DEFAULT_WORKERS);
  const dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  setTheme(q.get('theme') === 'dark' || q.get('theme') === 'light' ? q.get('theme') : dark ? 'dark' : 'light');
  askSlice(Number(q.get('batch')) || 0, Number(q.get('head')) || 0);
  const src = new RegExp(`^(${modelKinds().join('|')}),([^,]+),(\\d+),(\\d+),(-?\\d+),(\\d+)$`).exec(q.get('source') || '');
  if (src) {
    const [, kind, piece, start, length, transpose, layer] = src;
    useModelLayer({ kind, window: { piece, start: Number(start), length: Number(length), transpose: Number(transpose) }, layer: Number(layer) });
  }
  const pin = /^(\d+),(\d+)$/.exec(q.get('pin') || '');
  const row = /^(\d+)$/.exec(q.get('row') || '');
  applyModelURL(q.get('mode') === 'model' ? q : new URLSearchParams());
  return {
    notice,
    present: q.get('present'),
    pin: pin ? { i: Number(pin[1]), j: Number(pin[2]) } : null,
    row: row ? Number(row[1]) : null,
    slide: q.get('mode') === 'model' ? q.get('slide') : null,
  };
}

/** The timer clearing the toast ("Link copied"). */
let toastTimer = 0;

function toast(text) {
  $('toast').textContent = text;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { $('toast').textContent = ''; }, 4000);
}

export async function copyLink() {
  saveURL();
  const url = location.href;
  try {
    await navigator.clipboard.writeText(url);
    toast('Link copied');
  } catch {
    // No clipboard permission: show the link, selected, to copy by hand.
    const input = document.createElement('input');
    input.value = url; input.readOnly = true; input.className = 'link-field'; input.setAttribute('aria-label', 'Link to this view');
    $('toast').replaceChildren(input);
    input.focus(); input.select();
  }
}
