// Owns the "compare schemes" view: every position scheme (crates/relattn/src/app/compare.rs, in the order of
// crates/relattn-core/src/positions/mod.rs Method::ALL, however many it holds) on the options shown, for the
// (batch, head) shown — each scheme's attention weights or its position term (the compare select), drawn as every
// stage is (figures.js), and one chart of them by distance — as a panel under the controls, as 16:9 slides
// (Present: the panels, at most six a slide, then → the chart), and exported as those slides (PNG, 1920 × 1080). It recomputes when a result with other
// options (or another head) arrives while it is open; it is kept in the link (&compare=weights|term,
// &present=compare or compare_chart); its own state stays here. (Model mode's six models: model/all-models.js.)
import { $, textPx, slideTextScale, wrapLines } from './dom.js';
import { state } from './state.js';
import { askSchemes } from './worker-client.js';
import { FRAME, newView, drawView, shapedSize } from './figures.js';
import { download, sizeCanvas } from '../shared/figure-core.js';
import { hideTip, showTip } from './tip.js';
import { saveURL } from './url.js';
import { SCHEME_COLORS } from './scheme-colors.js';

/** The widest distance the chart shows on each side (all of them for shorter sequences). */
const REACH = 64;

/** The scheme whose curve is dashed and drawn last: absolute positions' similarity and RoPE's kernel are one sum
 *  of cosines (d_rot = d_head, one base), so its curve lay exactly under RoPE's, hidden. */
const DASHED = 'absolute';
/** The exported slide is the slide as a 1920 × 1080 screen shows it: its text grown by half (dom.js slideTextScale). */
const EXPORT_TEXT_SCALE = 1.5;

/** The most panels a slide holds: seven, four to a row, left their plots 83 px of a 1280 × 720 screen with the
 *  panels' text at 14 px, under the 12 % of its height a projector needs (tests/e2e/slides.test.mjs); six, three
 *  to a row, keep it. More schemes are spread evenly over as many slides as that takes. */
const PER_SLIDE = 6;
/** The most panels to a row on a slide. */
const MAX_COLUMNS = 3;
/** The chart's slide name in the link (&present=); the panels' are 'compare', 'compare_2', … */
const CHART_SLIDE = 'compare_chart';

/** The schemes' index ranges [from, to), one per panel slide: `count` split evenly, at most PER_SLIDE a slide. */
function pages(count) {
  const n = Math.max(1, Math.ceil(count / PER_SLIDE));
  const per = Math.ceil(count / n);
  return Array.from({ length: n }, (_, k) => [k * per, Math.min(count, (k + 1) * per)]);
}

/** The slides of `count` schemes in order, as the link names them: a panel slide per page, then the chart. */
function slideNames(count) {
  return [...pages(count).map((_, k) => (k ? `compare_${k + 1}` : 'compare')), CHART_SLIDE];
}

/** Whether `name` (a link's &present=) is one of the comparison's slides. */
export function isCompareSlide(name) {
  return /^compare(_chart|_[1-9][0-9]*)?$/.test(name);
}

const view = { key: '', asked: 0, schemes: null, cur: null, what: 'weights' };

export function initCompare() {
  $('compare-btn').addEventListener('click', () => { openCompare(); $('compare').scrollIntoView({ block: 'start' }); });
  $('compare-close').addEventListener('click', () => { leaveSlide(); $('compare').hidden = true; saveURL(); });
  $('compare-png').addEventListener('click', exportSlide);
  $('compare-what').addEventListener('change', () => { refreshCompare(); saveURL(); });
  $('compare-present').addEventListener('click', () => presentCompare('compare'));
  document.addEventListener('keydown', slideKeys);
  window.addEventListener('resize', () => { if (slideAt() !== null && view.schemes) draw(view.cur, view.schemes); });
}

/** Opens the panel (it computes with the next result, or now). */
export function openCompare() {
  $('compare').hidden = false;
  refreshCompare();
  saveURL();
}

/** The name of the slide shown ('compare', 'compare_2', …, 'compare_chart'), or null outside the slides. */
export function slideAt() {
  return document.body.dataset.compareSlide ?? null;
}

/** The slides of the comparison shown (before one is computed: one slide of panels and the chart). */
function slides() {
  return slideNames(view.schemes ? view.schemes.length : 0);
}

/** Shows the comparison as slide `name` (a panel slide past the last one: the last), full screen, drawn again
 *  at the slide's size. */
export function presentCompare(name) {
  $('compare').hidden = false;
  document.body.classList.add('compare-slide');
  document.body.dataset.compareSlide = name;
  const el = document.documentElement;
  if (el.requestFullscreen && !document.fullscreenElement) el.requestFullscreen().catch(() => {});
  if (view.schemes) draw(view.cur, view.schemes); else refreshCompare();
  saveURL();
}

function leaveSlide() {
  if (slideAt() === null) return;
  document.body.classList.remove('compare-slide');
  delete document.body.dataset.compareSlide;
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  if (view.schemes) draw(view.cur, view.schemes);
  saveURL();
}

function slideKeys(e) {
  const at = slideAt();
  if (at === null) return;
  const names = slides();
  const step = (by) => { e.preventDefault(); presentCompare(names[Math.max(0, Math.min(names.length - 1, names.indexOf(at) + by))]); };
  if (['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key)) step(1);
  else if (['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key)) step(-1);
  else if (e.key === 'Escape') { e.preventDefault(); leaveSlide(); }
}

/** The chart's canvas, made with the first comparison (so that a page that never compares has no canvas of it). */
function chartCanvas() {
  let c = $('compare-profile');
  if (!c) {
    c = document.createElement('canvas');
    c.id = 'compare-profile';
    c.className = 'compare-profile';
    c.setAttribute('role', 'img');
    c.addEventListener('mousemove', hoverProfile);
    c.addEventListener('mouseleave', hideTip);
    $('compare-chart').append(c);
  }
  return c;
}

/** After each result (and on opening): asks for the comparison of the options shown when they changed. */
export function refreshCompare() {
  const cur = state.current;
  if ($('compare').hidden || !cur) return;
  const { batch, head } = cur.shown;
  const what = /** @type {import('../types/protocol').Compared} */ ($('compare-what').value);
  const key = JSON.stringify([cur.info.options, cur.info.tokens, batch, head, what]);
  if (key === view.key) return;
  view.key = key;
  const asked = ++view.asked;
  $('compare-status').textContent = 'computing every scheme…';
  $('compare').dataset.ready = '';
  askSchemes(cur.info.options, cur.info.tokens, batch, head, what).then((schemes) => {
    if (asked !== view.asked) return;
    Object.assign(view, { schemes, cur, what });
    $('compare-status').textContent = '';
    draw(cur, schemes);
  }).catch((e) => {
    if (asked !== view.asked) return;
    view.key = '';
    $('compare-status').textContent = `Not compared: ${e.message}`;
  });
}

/** What the comparison was computed on and what is on, in one line (the slide's caption and the panel's description). */
function caption(cur, what) {
  const s = cur.info.options;
  const input = cur.tokens ? `“${cur.tokens.join(' ')}”` : `n ${s.n}, seed ${s.seed}`;
  const on = what === 'term'
    ? "each scheme's own term, its formula under its name (DeBERTa's: c2p + p2c, before the scale); absolute positions have none in attention, so how alike their vectors are"
    : `${s.relative_only
      ? 'relative term only: the weights come from the positions alone'
      : 'content and position together: with random weights the schemes look alike (tick “relative term only” or compare the position terms to see the positions alone)'}; each panel on its own colour scale (its colour bar)`;
  return `${input}; d_model ${s.d_model}, ${s.heads} head${s.heads > 1 ? 's' : ''} (head ${cur.shown.head} shown)${s.causal ? ', causal' : ''}; `
    + `Shaw's and the Music Transformer's k ${s.clip}; the same x and weights for every scheme; ${on}`;
}

/** "Seven" for 7: a slide's title counts its schemes in words up to twelve. */
function counted(n) {
  const words = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve'];
  return words[n] ?? String(n);
}

/** Slide `at`'s title: how many schemes and what is compared. */
function heading(what, at, count) {
  const of = what === 'term' ? 'position terms' : 'attention weights';
  return at === CHART_SLIDE ? `${counted(count)} schemes: ${what === 'term' ? 'each term' : 'the attention'} by distance` : `${counted(count)} schemes, one input: ${of}`;
}

/** The schemes on panel slide `at` (a slide past the last: the last one's). */
function onSlide(schemes, at) {
  const all = pages(schemes.length);
  const k = slideNames(schemes.length).indexOf(at);
  const [from, to] = all[k < 0 || k >= all.length ? all.length - 1 : k];
  return schemes.slice(from, to);
}

/** The grid of `count` panels in a `w` × `h` box, at most MAX_COLUMNS to a row: the number of columns (and
 *  rows) whose cells have the largest smaller side, so that square plots are as large as they can be (fewer
 *  columns on a tie: six panels 3 × 2, four 2 × 2, three 3 × 1 on a 16:9 slide). Returns { cols, rows }. */
function gridOf(count, w, h) {
  let best = { cols: 1, rows: count, side: 0 };
  for (let cols = 1; cols <= Math.min(count, MAX_COLUMNS); cols++) {
    const rows = Math.ceil(count / cols);
    const side = Math.min(w / cols, h / rows);
    if (side > best.side) best = { cols, rows, side };
  }
  return { cols: best.cols, rows: best.rows };
}

/** The grid's gap, in CSS px (style.css .compare-grid). */
const GAP = 8;

function draw(cur, schemes) {
  const what = view.what;
  const at = slideAt();
  const names = slideNames(schemes.length);
  $('compare-heading').textContent = at === null ? 'Compare schemes' : heading(what, at, schemes.length);
  $('compare-step').textContent = at === null ? '' : `${Math.max(0, names.indexOf(at)) + 1} / ${names.length} · → ← · Esc leaves`;
  $('compare-desc').textContent = caption(cur, what);
  const grid = $('compare-grid');
  grid.replaceChildren();
  // On a slide each panel fills its cell of the grid that gives the plots the most room, its plot square; on the
  // page at the figures' size, as many to a row as fit (style.css).
  let cell = null;
  let shown = schemes;
  if (at === null) Object.assign(grid.style, { gridTemplateColumns: '', gridTemplateRows: '' });
  else {
    if (at !== CHART_SLIDE) shown = onSlide(schemes, at);
    const { cols, rows } = gridOf(shown.length, grid.clientWidth, grid.clientHeight);
    Object.assign(grid.style, { gridTemplateColumns: `repeat(${cols}, 1fr)`, gridTemplateRows: `repeat(${rows}, 1fr)` });
    cell = [(grid.clientWidth - GAP * (cols - 1)) / cols, (grid.clientHeight - GAP * (rows - 1)) / rows];
  }
  shown.forEach((s) => {
    const fig = document.createElement('figure');
    fig.className = 'compare-fig';
    fig.dataset.method = s.method;
    fig.dataset.stage = s.meta.name;
    fig.style.borderTopColor = SCHEME_COLORS[s.method];
    grid.append(fig);
    // The text grows with the screen as a stage's slide's does.
    if (cell) drawPanel(fig, panelStage(s), cur, cell, slideTextScale());
    else {
      const v = newView(panelStage(s), FRAME.w, FRAME.h);
      fig.append(v.canvas);
      drawView(v, v.stage, cur);
    }
  });
  drawProfiles(chartCanvas(), schemes, cur.info.options.causal, what);
  $('compare').dataset.ready = String(view.asked);
}

/** Scheme `s`'s panel as a stage, titled by the scheme alone (the titles one size: what they show is the slide's
 *  title, and each formula its subtitle). */
function panelStage(s) {
  return { ...s.meta, ...s.cut, title: s.label, rgba: s.rgba, values: s.values };
}

/** Draws `stage` in `holder` as a slide's panel within `box` (CSS px), as a stage's slide is drawn: at 12/14 of
 *  the size it is shown at (its 12 px text shown at 14 px or more), its text grown by `textScale`, the canvas
 *  then narrowed or shortened so that its plot has the stage's shape (a square stage square). Returns the view. */
function drawPanel(holder, stage, cur, box, textScale) {
  const full = [Math.max(160, Math.round((box[0] * 12) / 14)), Math.max(140, Math.round((box[1] * 12) / 14))];
  let size = full;
  let v = null;
  // The margins change with the width (a subtitle that wraps to another line): measured again, up to four times.
  for (let pass = 0; pass < 4 && (!v || size[0] !== v.canvas.width || size[1] !== v.canvas.height); pass++) {
    const next = newView(stage, size[0], size[1]);
    next.textScale = textScale;
    next.minValuePx = 12 * textScale; // cell values too small for that are left out, as on a stage's slide
    next.canvas.dataset.method = holder.dataset.method || '';
    Object.assign(next.canvas.style, { width: `${Math.round((size[0] * 14) / 12)}px`, height: `${Math.round((size[1] * 14) / 12)}px` });
    if (v) v.canvas.replaceWith(next.canvas); else holder.append(next.canvas);
    v = next;
    drawView(v, stage, cur);
    /** @type {any} */ (v.canvas).plot = v.rect; // where the plot is, for the tests
    size = shapedSize(v, full);
  }
  return v;
}

/** The chart on canvas `c`: each scheme's share of the attention (or its term's mean) at each distance, over
 *  −R … R (… 0 when causal); at `size` ({ width, height, dpr }, else the canvas's own) with text `fs` px tall
 *  (else the page's, or the slide's: it fills the screen). */
function drawProfiles(c, schemes, causal, what, { size = null, fs = null } = {}) {
  // Every scheme's profile covers −(n − 1) … n − 1 (absolute positions' similarity at most its first 512).
  const n = Math.max(...schemes.map((s) => (s.profile.length + 1) / 2));
  const reach = Math.min(n - 1, REACH);
  const [from, to] = [-reach, causal ? 0 : reach];
  const { ctx, w, h } = sizeCanvas(c, 900, 300, size);
  fs = fs || (slideAt() === null ? textPx(12) : Math.max(14, Math.round(h / 40)));
  ctx.font = `${fs}px system-ui, sans-serif`;
  const at = (s, d) => s.profile[d + (s.profile.length + 1) / 2 - 1];
  const has = (s, d) => Math.abs(d) <= (s.profile.length - 1) / 2;
  let [min, max] = [0, 0];
  for (const s of schemes) for (let d = from; d <= to; d++) if (has(s, d)) { min = Math.min(min, at(s, d)); max = Math.max(max, at(s, d)); }
  const [bottom, top] = [min < 0 ? min * 1.1 : 0, max > 0 ? max * 1.1 : min < 0 ? 0 : 1];
  // The legend's entries: a line 2 fs long, its label, as many to a row as the widest fits (at most three).
  const legend = (s) => (s.method === DASHED ? `${s.label} (dashed, over the others)` : s.label);
  const entry = 2 * fs + 6 + Math.max(...schemes.map((s) => ctx.measureText(legend(s)).width)) + fs;
  const perRow = Math.max(1, Math.min(3, Math.floor((w - 4.7 * fs - 12) / entry)));
  const m = { l: 4.7 * fs, r: 12, t: 12 + (fs + 6) * Math.ceil(schemes.length / perRow), b: 2 * fs + 14 };
  const X = (d) => m.l + ((d - from) / Math.max(1, to - from)) * (w - m.l - m.r);
  const Y = (v) => h - m.b - ((v - bottom) / (top - bottom)) * (h - m.t - m.b);
  ctx.strokeStyle = '#999';
  ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(m.l, Y(0)); ctx.lineTo(w - m.r, Y(0)); ctx.moveTo(m.l, m.t); ctx.lineTo(m.l, h - m.b); ctx.stroke();
  ctx.fillStyle = '#444';
  ctx.textAlign = 'center';
  for (const d of [from, Math.round(from / 2), 0, Math.round(to / 2), to].filter((d, k, all) => all.indexOf(d) === k)) ctx.fillText(String(d), X(d), h - m.b + fs + 2);
  ctx.fillText(`distance j − i (key − query)${reach < n - 1 ? `, within ±${reach}` : ''}`, (m.l + w - m.r) / 2, h - 4);
  ctx.textAlign = 'right';
  if (max > 0) ctx.fillText(max.toFixed(2), m.l - 4, Y(max) + 4);
  if (min < 0) ctx.fillText(min.toFixed(2), m.l - 4, Y(min) + 4);
  ctx.fillText('0', m.l - 4, Y(0) + 4);
  ctx.save(); ctx.translate(fs, (m.t + h - m.b) / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = 'center';
  ctx.fillText(what === 'term' ? "the term's mean at the distance" : 'share of attention', 0, 0); ctx.restore();
  const peaks = {};
  const dash = (s) => ctx.setLineDash(s.method === DASHED ? [3 * fs / 4, fs / 2] : []);
  // The dashed curve last, over the others: a curve under it shows between its dashes.
  for (const s of [...schemes.filter((x) => x.method !== DASHED), ...schemes.filter((x) => x.method === DASHED)]) {
    ctx.strokeStyle = SCHEME_COLORS[s.method];
    ctx.lineWidth = Math.max(1.75, fs / 7);
    dash(s);
    ctx.beginPath();
    let peak = null;
    for (let d = from; d <= to; d++) {
      if (!has(s, d)) continue;
      if (peak === null || at(s, d) > at(s, peak)) { if (peak === null) ctx.moveTo(X(d), Y(at(s, d))); peak = d; }
      ctx.lineTo(X(d), Y(at(s, d)));
    }
    ctx.stroke();
    peaks[s.method] = peak;
  }
  // The legend: perRow to a row above the plot, each line drawn as its curve is.
  schemes.forEach((s, k) => {
    const [col, row] = [k % perRow, Math.floor(k / perRow)];
    const lx = m.l + col * ((w - m.l - m.r) / perRow);
    const ly = 6 + row * (fs + 6);
    ctx.strokeStyle = SCHEME_COLORS[s.method];
    ctx.lineWidth = Math.max(3, fs / 5);
    dash(s);
    ctx.beginPath(); ctx.moveTo(lx, ly + fs / 2); ctx.lineTo(lx + 2 * fs, ly + fs / 2); ctx.stroke();
    ctx.fillStyle = '#222';
    ctx.textAlign = 'left';
    ctx.fillText(legend(s), lx + 2 * fs + 6, ly + fs - 1);
  });
  ctx.setLineDash([]);
  c.hover = { schemes, n, from, to, left: m.l, right: w - m.r, top: m.t, bottom: h - m.b, what };
  c.dataset.peaks = JSON.stringify(peaks);
  c.dataset.sums = JSON.stringify(Object.fromEntries(schemes.map((s) => [s.method, s.profile.reduce((a, b) => a + b, 0)])));
  c.setAttribute('aria-label', `Attention by distance of the ${schemes.length} schemes; the distance each puts most weight on: ${schemes.map((s) => `${s.label} ${peaks[s.method]}`).join(', ')}`);
}

/** The chart's tooltip: the distance under the pointer and every scheme's share there. */
function hoverProfile(e) {
  const c = e.currentTarget;
  const hv = c.hover;
  if (!hv) return;
  const x = e.clientX - c.getBoundingClientRect().left;
  const d = Math.round(hv.from + ((x - hv.left) / (hv.right - hv.left)) * (hv.to - hv.from));
  if (d < hv.from || d > hv.to) { hideTip(); return; }
  c.dataset.hovered = String(d);
  const line = (s) => {
    const k = d + (s.profile.length + 1) / 2 - 1;
    if (k < 0 || k >= s.profile.length) return `${s.label}: —`;
    return hv.what === 'term' ? `${s.label}: mean term ${s.profile[k].toFixed(3)}` : `${s.label}: ${(100 * s.profile[k]).toFixed(2)} % of the attention`;
  };
  showTip(`distance j − i = ${d}`, hv.schemes.map(line), e.pageX, e.pageY);
}

/** The comparison's slides as 16:9 PNGs, 1920 × 1080, drawn at that size as a 1920 × 1080 screen shows them
 *  (one picture held the panels and the chart squeezed to 7 px text): title, caption with the settings and
 *  what is on, then a slide's panels in its grid (gridOf) with their plots square, or the chart of them by
 *  distance; named …-panels, …-panels_2, …, …-chart. */
function exportSlide() {
  const cur = view.cur;
  if (!view.schemes || !cur) return;
  const [W, H] = [1920, 1080];
  const o = cur.info.options;
  slideNames(view.schemes.length).forEach((at) => {
    const c = Object.assign(document.createElement('canvas'), { id: 'compare-export' });
    c.width = W;
    c.height = H;
    const ctx = c.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    ctx.fillStyle = '#111';
    ctx.font = 'bold 52px sans-serif';
    ctx.fillText(heading(view.what, at, view.schemes.length), 24, 64, W - 48);
    ctx.font = '24px sans-serif';
    ctx.fillStyle = '#333';
    let y = 104;
    for (const line of wrapLines(ctx, caption(cur, view.what), W - 48)) { ctx.fillText(line, 24, y); y += 30; }
    const top = y;
    if (at !== CHART_SLIDE) {
      const shown = onSlide(view.schemes, at);
      const { cols, rows } = gridOf(shown.length, W - 48, H - top - 12);
      const [pw, ph] = [(W - 48) / cols, (H - top - 12) / rows];
      const holder = document.createElement('div');
      shown.forEach((s, k) => {
        holder.dataset.method = s.method;
        const v = drawPanel(holder, panelStage(s), cur, [pw, ph], EXPORT_TEXT_SCALE);
        const [w, h] = [(v.canvas.width * 14) / 12, (v.canvas.height * 14) / 12];
        ctx.drawImage(v.canvas, 24 + (k % cols) * pw + (pw - w) / 2, top + Math.floor(k / cols) * ph + (ph - h) / 2, w, h);
        holder.replaceChildren();
      });
    } else {
      const chart = Object.assign(document.createElement('canvas'), { id: 'compare-export-chart' });
      const size = { width: W - 48, height: H - top - 12, dpr: 1 };
      drawProfiles(chart, view.schemes, o.causal, view.what, { size, fs: Math.round(14 * EXPORT_TEXT_SCALE) });
      ctx.drawImage(chart, 24, top);
    }
    const name = at === CHART_SLIDE ? 'chart' : at.replace('compare', 'panels');
    c.toBlob((blob) => download(blob, `relattn-schemes-${view.what}-n${o.n}-h${cur.shown.head}-${name}.png`), 'image/png');
  });
}
