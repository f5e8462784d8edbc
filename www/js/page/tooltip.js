// Owns pointing at cells: the hover tooltip, the pinned pair (outlined in every view, named in the status
// line), the keyboard cursor of a focused figure, and what a screen reader hears (the aria-live region).
import { $ } from './dom.js';
import { state, on } from './state.js';
import { fmt, cellText, readerRuns } from '../shared/figure-core.js';
import { blit, cellAt, outline, shade } from './figures.js';
import { saveURL } from './url.js';
import { askCells, askReaders } from './worker-client.js';
import { hideTip, placeTip } from './tip.js';

// A view drawn again by itself (figures.js: its asked cells came) has lost its pins.
on('view-redrawn', () => drawPins());

/** Wires a view's canvas: hover, click to pin, arrow keys, and leaving. */
export function attachPointer(v) {
  const c = v.canvas;
  c.addEventListener('mousemove', (e) => hover(v, e));
  c.addEventListener('mouseleave', hideTip);
  c.addEventListener('click', (e) => click(v, e));
  c.addEventListener('keydown', (e) => keyPin(v, e));
  c.addEventListener('blur', () => { v.cursor = null; hideTip(); drawPins(); });
}

/** The stages a pair (i, j) is read from, by part (a relative term made of terms: DeBERTa's c2p and p2c, BERT's query and key
 * terms, Transformer-XL's BD and EF). */
const PARTS = { content: 'content_logits', relative: 'relative_logits', c2p: 'c2p', p2c: 'p2c', bd: 'bd', ef: 'ef', row: 'rel_index', logit: 'logits', weight: 'weights' };

/**
 * Cell (i, j) of stage `name` of the result shown: from the values the worker sent with it, or from the cells
 * asked for so far (a stage sent without its values); undefined while not known, NaN when the trace lacks it.
 */
function cellOf(name, i, j) {
  const cur = state.current;
  const s = cur.byName[name];
  if (!s) return NaN;
  if (s.values) return s.values[i * s.cols + j];
  return cur.asked ? cur.asked.get(`${name}|${i}|${j}`) : undefined;
}

/**
 * Asks the worker for the cells (i, j) of the stages `names` not known yet (askCells: one cell each); calls
 * `then` once they are, if the same result is still shown. Returns whether any was missing.
 */
function askMissing(names, i, j, then) {
  const cur = state.current;
  if (!cur.asked || cur.asked.size > 4096) { cur.asked = new Map(); cur.asking = new Set(); }
  // Cells already on their way are not asked for again (the first asker's `then` redraws).
  const missing = names.filter((n) => cellOf(n, i, j) === undefined && !cur.asking.has(`${n}|${i}|${j}`));
  if (!missing.length) return false;
  const keys = missing.map((n) => `${n}|${i}|${j}`);
  for (const k of keys) cur.asking.add(k);
  Promise.all(missing.map((n, k) => askCells(n, i, j, 1, 1).then((v) => cur.asked.set(keys[k], v[0]))))
    .then(() => { if (state.current === cur) then(); })
    .catch(() => { /* a newer result, or the worker restarted: nothing to fill */ })
    .finally(() => { for (const k of keys) cur.asking.delete(k); });
  return true;
}

/** A cell's value as text: '…' while it is being asked for. */
function shown(v) {
  return v === undefined ? '…' : fmt(v);
}

// The parts of pair (i, j) of the shown (batch, head) (undefined while asked for; null for a stage the
// scheme has not: a relative term, a table row).
function parts(i, j) {
  const has = state.current.byName;
  return Object.fromEntries(Object.entries(PARTS).map(([part, name]) => [part, has[name] ? cellOf(name, i, j) : null]));
}

/** The PARTS stages the shown result has. */
function presentParts() {
  return Object.values(PARTS).filter((name) => state.current.byName[name]);
}

function hover(v, e) {
  const c = v.rect && cellAt(v, e);
  if (!c) { hideTip(); return; }
  fillTip(v, c.i, c.j);
  placeTip(e.pageX, e.pageY);
}

// The tooltip's lines for cell (i, j) of a view; also kept in its data attributes. Values of a stage sent
// without them are asked for: '…' until they come, then the tooltip (if still on that cell) and the
// announcement are written again.
function fillTip(v, i, j, announce = false) {
  const tip = $('tooltip');
  const cur = state.current;
  const key = `${cur.id}|${v.stage.name}|${i}|${j}`;
  tip.dataset.key = key;
  const names = [v.stage.name, ...(v.stage.pairs ? presentParts() : [])];
  askMissing(names, i, j, () => {
    if (tip.dataset.key !== key || tip.hidden) return;
    const said = fillTip(v, i, j);
    if (announce) $('announce').textContent = `${v.stage.title}: ${said}`;
  });
  const value = cellOf(v.stage.name, i, j);
  // A pair is (i, j); any other cell is named by its axes (a table row and a component, a buffer's row …).
  const lines = [`<b>${v.stage.title}</b>`, cellText(v.stage, i, j, value)];
  tip.dataset.stage = v.stage.name;
  tip.dataset.i = i;
  tip.dataset.j = j;
  tip.dataset.value = value ?? '';
  for (const k of ['content', 'relative', 'row']) delete tip.dataset[k];
  if (v.stage.pairs) {
    const p = parts(i, j);
    const tok = cur.tokens ? `  “${cur.tokens[i]}” → “${cur.tokens[j]}”` : '';
    lines.push(`distance j − i = ${j - i}${tok}`);
    // The scheme names its parts (Info.pair, from crates/relattn-core/src/positions/); a row of −1 reads nothing.
    const said = cur.info.pair;
    const masked = cur.info.options.causal && j > i;
    const filled = (label, value) => label.replace('{}', value);
    lines.push(filled(said.content, shown(p.content)));
    if (said.relative && p.relative !== null) lines.push(filled(said.relative, shown(p.relative)));
    // The relative term split into its terms, each by its stage's title (DeBERTa's c2p and p2c, BERT's q·a and k·a,
    // Transformer-XL's BD after rel_shift and XLNet's segment term EF).
    for (const term of ['c2p', 'p2c', 'bd', 'ef']) if (p[term] !== null) lines.push(`  ${cur.byName[term].title} = ${shown(p[term])}`);
    if (said.row) lines.push(filled(said.row, p.row < 0 ? (masked ? 'none (a later key: masked)' : 'none (beyond the table: a zero vector)') : shown(p.row)));
    if (masked) lines.push(said.masked);
    lines.push(`logit ${shown(p.logit)}   weight ${shown(p.weight)}`);
    Object.assign(tip.dataset, { content: p.content ?? '', relative: p.relative ?? '', row: p.row ?? '' });
  }
  // Text nodes only: tokens come from the page's own input, but never as HTML.
  const title = document.createElement('b');
  title.textContent = lines[0].replace(/<\/?b>/g, '');
  tip.replaceChildren(title, ...lines.slice(1).flatMap((l) => [document.createElement('br'), document.createTextNode(l)]));
  tip.hidden = false;
  return lines.slice(1).join('; ');
}

/** Lets go of the pins (a preset, a trained model's layer: a result whose cells are others). */
export function clearPins() {
  state.pinned = null;
  state.pinnedRow = null;
}

/** The URL's pins, before the first result: pair `pair` ({ i, j }) or, when there is none, table row `row`. */
export function restorePins(pair, row) {
  state.pinned = pair;
  state.pinnedRow = pair ? null : row;
}

/** A result of `n` tokens is shown: a pinned pair outside it is let go. */
export function keepPinsWithin(n) {
  const p = state.pinned;
  if (p && (p.i >= n || p.j >= n)) state.pinned = null;
}

function setPin(p) {
  state.pinned = p;
  if (p) state.pinnedRow = null;
  drawPins();
}

function click(v, e) {
  if (v.dragged) { v.dragged = false; return; } // the end of a pan (zoom.js), not a pick
  const c = v.rect && cellAt(v, e);
  if (!c) return;
  if (isTable(v.stage)) { setRow(state.pinnedRow === c.i ? null : c.i); return; }
  if (!v.stage.pairs) return;
  const p = state.pinned;
  setPin(p && p.i === c.i && p.j === c.j ? null : c);
}

/** The relative tables (w^K or E_r, w^V): their rows are read along diagonals of every (i, j) view. */
function isTable(stage) {
  return stage.name === 'rel_k' || stage.name === 'rel_v';
}

/** Pins table row `r` (null: none); a pinned pair is let go. */
function setRow(r) {
  state.pinnedRow = r;
  if (r !== null) state.pinned = null;
  drawPins();
  saveURL();
}

/**
 * The pairs (i, j) that read table row r (rel_index = r) as runs [i, lo, hi], keys lo … hi − 1 of query i: asked
 * of the worker (crates/relattn-core/src/positions/table.rs RelTable::readers) once per result and row; null while they come (the pins are
 * drawn again then).
 */
function readersOf(r) {
  const cur = state.current;
  if (!cur.readers || cur.readers.row !== r) {
    const asked = { row: r, runs: null };
    cur.readers = asked;
    askReaders(r)
      .then((keys) => {
        asked.runs = readerRuns(keys);
        if (state.current === cur && state.pinnedRow === r) drawPins();
      })
      .catch(() => { if (cur.readers === asked) cur.readers = null; /* a newer result, or the worker restarted */ });
  }
  return cur.readers.runs;
}

// Keyboard: the arrow keys move a cursor cell of the focused figure (on (i, j) figures the cursor is
// the pin, shown in every view); its numbers go to the tooltip and to an aria-live region.
function keyPin(v, e) {
  if (!state.current || !v.stage || !v.rect || state.presentedAt !== null) return;
  const pairs = v.stage.pairs;
  const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
  if (e.key === 'Escape') { v.cursor = null; setPin(null); setRow(null); hideTip(); return; }
  if (!d && e.key !== 'Enter' && e.key !== ' ') return;
  e.preventDefault();
  const rows = v.stage.rows;
  const cols = v.stage.cols;
  const p = (pairs ? state.pinned : v.cursor) || v.cursor || { i: 0, j: 0 };
  const c = d ? { i: Math.min(rows - 1, Math.max(0, p.i + d[0])), j: Math.min(cols - 1, Math.max(0, p.j + d[1])) } : p;
  v.cursor = c;
  if (pairs) setPin(c);
  else if (!d && isTable(v.stage)) setRow(c.i);
  else drawPins();
  const said = fillTip(v, c.i, c.j, true);
  const b = v.canvas.getBoundingClientRect();
  const { x0, x1, y0, y1 } = v.rect;
  const sx = b.width / v.canvas.width;
  placeTip(window.scrollX + b.left + (x0 + ((c.j + 1) * (x1 - x0)) / cols) * sx, window.scrollY + b.top + (y0 + ((c.i + 1) * (y1 - y0)) / rows) * sx);
  $('announce').textContent = `${v.stage.title}: ${said}`;
}

/** The views drawn now, by stage name: the page's figures, or in presentation mode the stage presented (so
 *  stepping through the skew with a pin follows its cell, or a pinned row's diagonal, from step to step). */
function shownViews() {
  const v = state.presentedAt !== null ? state.presentedView : null;
  return v && v.rect ? new Map([[v.stage.name, v]]) : state.views;
}

/** Every view's cells again, the cursors of non-pair views, and the pinned pair where it lives in each stage. */
export function drawPins() {
  const cur = state.current;
  if (!cur) return;
  const views = shownViews();
  for (const v of views.values()) if (v.rect) blit(v);
  for (const v of views.values()) if (v.rect && v.cursor && !v.stage.pairs) outline(v, v.cursor.i, v.cursor.j);
  const label = $('pinned');
  saveURL();
  if (state.pinnedRow !== null) { drawRow(state.pinnedRow, label); return; }
  if (!state.pinned) { label.textContent = ''; return; }
  const { i, j } = state.pinned;
  const { n, causal } = cur.info.options;
  // Parts of a stage sent without values are asked for; the pins are drawn again when they come.
  const pin = state.pinned;
  askMissing(Object.values(PARTS), i, j, () => { if (state.pinned === pin) drawPins(); });
  const p = parts(i, j);
  for (const [name, v] of views) {
    const s = v.stage;
    const at = skewCell(name, i, j, n, causal);
    if (s.pairs) outline(v, i, j);
    else if (at) { if (at[1] < s.cols) outline(v, at[0], at[1]); }
    else if ((name === 'rel_k' || name === 'rel_v') && p.row >= 0) outline(v, p.row, 0, s.cols, 1);
    else if (name === 'value_buckets' && p.row >= 0) outline(v, i, p.row);
    else if (name.startsWith('output')) outline(v, i, 0, s.cols, 1);
  }
  label.textContent = `pinned (i, j) = (${i}, ${j}): content ${shown(p.content)}, relative ${shown(p.relative)}, table row ${shown(p.row)}, weight ${shown(p.weight)} (Esc unpins)`;
}

/**
 * Where pair (i, j) of the relative logits sits in the skew's first three steps (crates/relattn-core/src/positions/music.rs), or null for
 * another stage: column j − i + n − 1 of Q E_rᵀ; one further right after the causal zero column (the
 * bidirectional one is last); in the reshaped buffer row i + 1 (causal: the slice drops row 0) or column
 * j + n − 1 (bidirectional: it drops n − 1 columns).
 */
function skewCell(name, i, j, n, causal) {
  if (name === 'skew_qer') return [i, j - i + n - 1];
  if (name === 'skew_padded') return [i, j - i + n - (causal ? 0 : 1)];
  if (name === 'skew_reshaped') return causal ? [i + 1, j] : [i, j + n - 1];
  return null;
}

/**
 * Reverse linking: table row r outlined in the tables and its column in the weight per w^V row, and every pair
 * that reads it shaded in every (i, j) view and followed through the skew's steps (one diagonal of the result
 * is one column of Q E_rᵀ).
 */
function drawRow(r, label) {
  const cur = state.current;
  const readers = readersOf(r);
  const { n, causal } = cur.info.options;
  for (const [name, v] of shownViews()) {
    if (!v.rect) continue;
    if (isTable(v.stage) && r < v.stage.rows) outline(v, r, 0, v.stage.cols, 1);
    // B[i, r]: the weight each query gives the pairs that read row r, summed (Shaw's a^V = B·w^V).
    else if (name === 'value_buckets' && r < v.stage.cols) outline(v, 0, r, 1, v.stage.rows);
    else if (!readers) continue;
    else if (v.stage.pairs) shade(v, readers);
    else if (skewCell(name, 0, 0, n, causal)) {
      // A run of keys is a run of columns in every step of the skew (the column moves one with the key).
      shade(v, readers.map(([i, lo, hi]) => { const [row, c] = skewCell(name, i, lo, n, causal); return [row, c, c + hi - lo]; }));
    }
  }
  // What the row stands for, read from its readers: the distances j − i that read it.
  const [near, far] = (readers || []).reduce(([a, b], [i, lo, hi]) => [Math.min(a ?? lo - i, lo - i), Math.max(b ?? hi - 1 - i, hi - 1 - i)], [null, null]);
  const what = !readers ? '…' : near === null ? 'no pair reads it' : near === far ? `distance ${near}` : `distances ${near} … ${far}`;
  const pairs = readers && readers.reduce((sum, [, lo, hi]) => sum + hi - lo, 0);
  const read = readers ? `read by ${pairs} pairs (i, j), shaded in every (i, j) view` : 'its readers: …';
  label.textContent = `pinned table row ${r} (${what}): ${read} (Esc unpins)`;
}
