// Owns the guided tour for first-time visitors: the book's lecture, step by step (docs/src/page.md), inside the page. Each
// step sets the controls (as a person would: the control's value, then its change or input event) and says
// what to look at. It opens by itself on a first plain visit (no query string), from the toolbar's Tour
// button at any time, and once closed or finished it is remembered (localStorage) and no longer opens by
// itself. Its state (the step shown) is its own.
import { $ } from './dom.js';

/** Remembered once the tour is closed or finished. */
const DONE = 'relattn-tour-done';

/** Sets control `id` to `value` and fires the event a person's change would. */
function set(id, value) {
  const el = $(id);
  if (el.type === 'checkbox') el.checked = value; else el.value = value;
  el.dispatchEvent(new Event(el.type === 'number' || el.type === 'text' ? 'input' : 'change', { bubbles: true }));
}

/** The steps: title, what to look at, and what to set first (a mode change included). */
/** @type {[string, string, () => void][]} */
const STEPS = [
  ['What relative attention can do, before any training',
    'The preset built-heads: three hand-built Shaw heads, relative term only. Head 0 attends to the previous token, head 1 to the next, head 2 evenly to every key within k − 1. Switch "head shown" and watch the diagonal of the weights move; Present steps through every stage with its formula.',
    () => { $('mode-params').click(); set('preset', 'built-heads'); }],
  ['Where the numbers come from',
    'Click a cell of the weights: it is pinned and outlined in every view, and the tooltip gives its distance, table row, content and relative terms. Click a row of w^K instead: every pair that reads it is shaded, one row for a whole diagonal.',
    () => {}],
  ['Content versus position',
    'A sentence with a repeated word, on random weights with the content term on: the two "the" get the same vector, so their content logits are equal and only the relative term tells them apart. Tick "relative term only" to see what the positions do alone.',
    // Step 1's preset leaves the content term off and W_q zero: the custom layer, content on, makes the point.
    () => { set('preset', ''); set('relative_only', false); set('sentence', 'the cat saw the dog'); }],
  ['The skew, step by step',
    'The Music Transformer, n 6, causal: pin a pair and present the four skew steps (they come before the relative logits they produce); the pinned cell is outlined in Q E_rᵀ, after the zero column, in the reshaped buffer and in the slice.',
    () => { set('sentence', ''); set('method', 'music'); set('n', '6'); set('causal', true); }],
  ['Any size',
    'n 512 here, up to 8192: the axes keep round ticks and a large stage is drawn block by block. On a focused figure + and − zoom, dragging pans, 0 resets; the tooltip still reads the exact cell.',
    () => { set('n', '512'); }],
  ['RoPE: position as a rotation',
    'The preset rope-kernel: q and k are turned by angles that grow with the position, so their product depends on j − i alone. Present, then End: the last slides show one pair of q turning, the kernel against distance for several bases and fractions, and the two pair layouts.',
    () => { set('preset', 'rope-kernel'); }],
  ['ALiBi: one slope per head',
    'The preset alibi-slopes: no position vectors at all, a penalty m_h · (j − i) added to the logits. The pictures after the stages: the slope of every head, and every head\'s bias on one colour scale — steep near heads, flat far ones.',
    () => { set('preset', 'alibi-slopes'); }],
  ['T5: buckets of distance',
    'The preset t5-buckets: one learned number per bucket of j − i. The staircase picture shows the buckets: exact near the diagonal, logarithmic farther, capped from max_distance on.',
    () => { set('preset', 't5-buckets'); }],
  ['DeBERTa: content and position apart',
    'The preset deberta-buckets: two position terms beside q·k. c2p is what the query\'s content says about where the key is (q_i · K_r[r]), p2c what the key\'s content says about where the query is (k_j · Q_r[r]); both read the same row r of i − j, and the logits add them to q·k under 1/√(3·d_head). The picture after the stages is the bucket map: exact to ±8, log steps to ±63, then the edge rows, mirrored about the middle row where T5 gives each side its own half.',
    () => { set('preset', 'deberta-buckets'); }],
  ['Absolute positions, the baseline',
    'The preset absolute-positions: sinusoids added to x before the projections, nothing relative in attention itself. Its picture shows how alike the position vectors are; Compare schemes puts every scheme side by side on one input.',
    () => { set('preset', 'absolute-positions'); $('compare-btn').click(); }],
  ['Why it matters',
    'Model mode: the same attention, trained on Bach chorales. Click a note to see what it attends to; each head says what it does, measured on the window.',
    () => { $('mode-model').click(); }],
];

let at = null;
/** Whether the step shown has set its controls (a tour that opened by itself has not, until Start). */
let applied = false;

/** Connects the Tour button and the panel's buttons; opens the tour on a first plain visit. */
export function wireTour() {
  $('tour-btn').addEventListener('click', () => show(0));
  $('tour-prev').addEventListener('click', () => show(at - 1));
  $('tour-next').addEventListener('click', () => {
    if (!applied) show(at);
    else if (at + 1 < STEPS.length) show(at + 1);
    else close();
  });
  $('tour-close').addEventListener('click', close);
  let done = true;
  try { done = localStorage.getItem(DONE) === '1'; } catch { /* storage refused: no tour by itself */ }
  if (!done && location.search === '') {
    applied = false;
    showText(0);
  }
}

/** Shows step `k`'s text (the first opening shows it without touching the controls). */
function showText(k) {
  at = Math.max(0, Math.min(STEPS.length - 1, k));
  const [title, text] = STEPS[at];
  $('tour').hidden = false;
  $('tour-step').textContent = `${at + 1} / ${STEPS.length}`;
  $('tour-title').textContent = title;
  $('tour-text').textContent = text;
  $('tour-prev').disabled = at === 0;
  $('tour-next').textContent = !applied ? 'Start' : at + 1 < STEPS.length ? 'Next' : 'Finish';
  $('tour').dataset.step = String(at);
}

/** Step `k`: its controls set, then its text. */
function show(k) {
  applied = true;
  showText(k);
  STEPS[at][2]();
}

function close() {
  $('tour').hidden = true;
  at = null;
  applied = false;
  try { localStorage.setItem(DONE, '1'); } catch { /* nothing to remember with */ }
}
