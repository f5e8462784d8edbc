// Owns the "compare schemes" view: the six position schemes (crates/relattn/src/app/compare.rs, in the order of
// crates/relattn-core/src/positions/mod.rs Method::ALL) on the options shown, for the (batch, head) shown — each
// scheme's attention weights or its position term (the compare select), drawn as every stage is (figures.js),
// and one chart of them by distance — as a panel under the controls, as a 16:9 slide (Present: the six panels,
// then → the chart), and exported as that slide (PNG, 1920 × 1080). It recomputes when a result with other
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

/** The slides' names in the link (&present=), in order. */
export const COMPARE_SLIDES = ['compare', 'compare_chart'];

const view = { key: '', asked: 0, schemes: null, cur: null, what: 'weights' };

export function initCompare() {
  $('compare-btn').addEventListener('click', () => { openCompare(); $('compare').scrollIntoView({ block: 'start' }); });
  $('compare-close').addEventListener('click', () => { leaveSlide(); $('compare').hidden = true; saveURL(); });
  $('compare-png').addEventListener('click', exportSlide);
  $('compare-what').addEventListener('change', () => { refreshCompare(); saveURL(); });
  $('compare-present').addEventListener('click', () => presentCompare(0));
  document.addEventListener('keydown', slideKeys);
  window.addEventListener('resize', () => { if (slideAt() !== null && view.schemes) draw(view.cur, view.schemes); });
}

/** Opens the panel (it computes with the next result, or now). */
export function openCompare() {
  $('compare').hidden = false;
  refreshCompare();
  saveURL();
}

/** The slide shown (0: the six panels, 1: the chart), or null outside the slides. */
export function slideAt() {
  const at = document.body.dataset.compareSlide;
  return at === undefined ? null : Number(at);
}

/** Shows the comparison as slide `at`, full screen (drawn again at the slide's size). */
export function presentCompare(at) {
  $('compare').hidden = false;
  document.body.classList.add('compare-slide');
  document.body.dataset.compareSlide = String(Math.max(0, Math.min(COMPARE_SLIDES.length - 1, at)));
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
  if (['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key)) { e.preventDefault(); presentCompare(at + 1); }
  else if (['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key)) { e.preventDefault(); presentCompare(at - 1); }
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
  $('compare-status').textContent = 'computing the six schemes…';
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
    ? "each scheme's own term: the relative logits (Shaw, the Music Transformer: they depend on q), ALiBi's and T5's bias, RoPE's kernel; absolute positions have none in attention, so how alike their vectors are"
    : `${s.relative_only
      ? 'relative term only: the weights come from the positions alone'
      : 'content and position together: with random weights the six look alike (tick “relative term only” or compare the position terms to see the positions alone)'}; each panel on its own colour scale (its colour bar)`;
  return `${input}; d_model ${s.d_model}, ${s.heads} head${s.heads > 1 ? 's' : ''} (head ${cur.shown.head} shown)${s.causal ? ', causal' : ''}; `
    + `Shaw's and the Music Transformer's k ${s.clip}; the same x and weights for every scheme; ${on}`;
}

/** The slide's title: what is compared. */
function heading(what, at) {
  const of = what === 'term' ? 'position terms' : 'attention weights';
  return at === 1 ? `Six schemes: ${what === 'term' ? 'each term' : 'the attention'} by distance` : `Six schemes, one input: ${of}`;
}

function draw(cur, schemes) {
  const what = view.what;
  const at = slideAt();
  $('compare-heading').textContent = at === null ? 'Compare schemes' : heading(what, at);
  $('compare-step').textContent = at === null ? '' : `${at + 1} / ${COMPARE_SLIDES.length} · → ← · Esc leaves`;
  $('compare-desc').textContent = caption(cur, what);
  const grid = $('compare-grid');
  grid.replaceChildren();
  // On a slide each panel fills its third of the width and half of the height, its plot square; on the page at
  // the figures' size.
  const cell = at === null ? null : [(grid.clientWidth - 16) / 3, (grid.clientHeight - 8) / 2];
  schemes.forEach((s) => {
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

/** Scheme `s`'s panel as a stage, titled by the scheme alone (the six titles one size: what they show is the
 *  slide's title, and each formula its subtitle). */
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
  const m = { l: 4.7 * fs, r: 12, t: 12 + (fs + 6) * Math.ceil(schemes.length / 3), b: 2 * fs + 14 };
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
  // The legend: three to a row above the plot, each line drawn as its curve is.
  schemes.forEach((s, k) => {
    const [col, row] = [k % 3, Math.floor(k / 3)];
    const lx = m.l + col * ((w - m.l - m.r) / 3);
    const ly = 6 + row * (fs + 6);
    ctx.strokeStyle = SCHEME_COLORS[s.method];
    ctx.lineWidth = Math.max(3, fs / 5);
    dash(s);
    ctx.beginPath(); ctx.moveTo(lx, ly + fs / 2); ctx.lineTo(lx + 2 * fs, ly + fs / 2); ctx.stroke();
    ctx.fillStyle = '#222';
    ctx.textAlign = 'left';
    ctx.fillText(s.method === DASHED ? `${s.label} (dashed, over the others)` : s.label, lx + 2 * fs + 6, ly + fs - 1);
  });
  ctx.setLineDash([]);
  c.hover = { schemes, n, from, to, left: m.l, right: w - m.r, top: m.t, bottom: h - m.b, what };
  c.dataset.peaks = JSON.stringify(peaks);
  c.dataset.sums = JSON.stringify(Object.fromEntries(schemes.map((s) => [s.method, s.profile.reduce((a, b) => a + b, 0)])));
  c.setAttribute('aria-label', `Attention by distance of the six schemes; the distance each puts most weight on: ${schemes.map((s) => `${s.label} ${peaks[s.method]}`).join(', ')}`);
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

/** The comparison's two slides as 16:9 PNGs, 1920 × 1080, drawn at that size as a 1920 × 1080 screen shows them
 *  (one picture held the six panels and the chart squeezed to 7 px text): title, caption with the settings and
 *  what is on, then the six panels three to a row with their plots square, or the chart of them by distance. */
function exportSlide() {
  const cur = view.cur;
  if (!view.schemes || !cur) return;
  const [W, H] = [1920, 1080];
  const o = cur.info.options;
  COMPARE_SLIDES.forEach((_, at) => {
    const c = Object.assign(document.createElement('canvas'), { id: 'compare-export' });
    c.width = W;
    c.height = H;
    const ctx = c.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    ctx.fillStyle = '#111';
    ctx.font = 'bold 52px sans-serif';
    ctx.fillText(heading(view.what, at), 24, 64, W - 48);
    ctx.font = '24px sans-serif';
    ctx.fillStyle = '#333';
    let y = 104;
    for (const line of wrapLines(ctx, caption(cur, view.what), W - 48)) { ctx.fillText(line, 24, y); y += 30; }
    const top = y;
    if (at === 0) {
      const [pw, ph] = [(W - 48) / 3, (H - top - 12) / 2];
      const holder = document.createElement('div');
      view.schemes.forEach((s, k) => {
        holder.dataset.method = s.method;
        const v = drawPanel(holder, panelStage(s), cur, [pw, ph], EXPORT_TEXT_SCALE);
        const [w, h] = [(v.canvas.width * 14) / 12, (v.canvas.height * 14) / 12];
        ctx.drawImage(v.canvas, 24 + (k % 3) * pw + (pw - w) / 2, top + Math.floor(k / 3) * ph + (ph - h) / 2, w, h);
        holder.replaceChildren();
      });
    } else {
      const chart = Object.assign(document.createElement('canvas'), { id: 'compare-export-chart' });
      const size = { width: W - 48, height: H - top - 12, dpr: 1 };
      drawProfiles(chart, view.schemes, o.causal, view.what, { size, fs: Math.round(14 * EXPORT_TEXT_SCALE) });
      ctx.drawImage(chart, 24, top);
    }
    c.toBlob((blob) => download(blob, `relattn-schemes-${view.what}-n${o.n}-h${cur.shown.head}-${at === 0 ? 'panels' : 'chart'}.png`), 'image/png');
  });
}
