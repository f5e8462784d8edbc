// Owns the "compare schemes" view: the six position schemes (crates/relattn-wasm/src/compare.rs ORDER) on the options shown,
// for the (batch, head) shown — each scheme's attention weights, drawn as every stage is (figures.js), and one
// chart of their attention by distance — and its export as one slide (PNG). It recomputes when a result with
// other options (or another head) arrives while it is open; its own state stays here.
import { $, textPx } from './dom.js';
import { state } from './state.js';
import { askSchemes } from './worker-client.js';
import { FRAME, newView, drawView } from './figures.js';
import { download } from '../shared/figure-core.js';
import { hideTip, showTip } from './tooltip.js';
import { SCHEME_COLORS } from './scheme-colors.js';

/** The widest distance the chart shows on each side (all of them for shorter sequences). */
const REACH = 64;

const view = { key: '', asked: 0, schemes: null };

export function initCompare() {
  $('compare-btn').addEventListener('click', () => { $('compare').hidden = false; refreshCompare(); $('compare').scrollIntoView({ block: 'start' }); });
  $('compare-close').addEventListener('click', () => { $('compare').hidden = true; });
  $('compare-png').addEventListener('click', exportSlide);
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
  const key = JSON.stringify([cur.info.options, cur.info.tokens, batch, head]);
  if (key === view.key) return;
  view.key = key;
  const asked = ++view.asked;
  $('compare-status').textContent = 'computing the six schemes…';
  $('compare').dataset.ready = '';
  askSchemes(cur.info.options, cur.info.tokens, batch, head).then((schemes) => {
    if (asked !== view.asked) return;
    view.schemes = schemes;
    $('compare-status').textContent = '';
    draw(cur, schemes);
  }).catch((e) => {
    if (asked !== view.asked) return;
    view.key = '';
    $('compare-status').textContent = `Not compared: ${e.message}`;
  });
}

/** What the comparison was computed on, in one line (the slide's title and the panel's description). */
function caption(cur) {
  const s = cur.info.options;
  const input = cur.tokens ? `“${cur.tokens.join(' ')}”` : `n ${s.n}, seed ${s.seed}`;
  return `${input}; d_model ${s.d_model}, ${s.heads} head${s.heads > 1 ? 's' : ''} (head ${cur.shown.head} shown)${s.causal ? ', causal' : ''}; `
    + `Shaw's and the Music Transformer's k ${s.clip}; the same x and weights for every scheme`;
}

function draw(cur, schemes) {
  $('compare-desc').textContent = caption(cur);
  const grid = $('compare-grid');
  grid.replaceChildren();
  schemes.forEach((s, k) => {
    const stage = { ...s.meta, ...s.cut, title: `${s.label}: attention weights`, rgba: s.rgba, values: s.values };
    const fig = document.createElement('figure');
    fig.className = 'compare-fig';
    fig.dataset.method = s.method;
    fig.style.borderTopColor = SCHEME_COLORS[s.method];
    const v = newView(stage, FRAME.w, FRAME.h);
    fig.append(v.canvas);
    grid.append(fig);
    drawView(v, stage, cur);
  });
  drawProfiles(schemes, cur.info.options.causal);
  $('compare').dataset.ready = String(view.asked);
}

/** The chart: each scheme's share of the attention at each distance, over −R … R (… 0 when causal). */
function drawProfiles(schemes, causal) {
  const c = chartCanvas();
  const n = (schemes[0].profile.length + 1) / 2;
  const reach = Math.min(n - 1, REACH);
  const [from, to] = [-reach, causal ? 0 : reach];
  const w = c.clientWidth || 900;
  const h = c.clientHeight || 300;
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(w * dpr);
  c.height = Math.round(h * dpr);
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, w, h);
  const fs = textPx(12);
  ctx.font = `${fs}px system-ui, sans-serif`;
  const at = (s, d) => s.profile[d + n - 1];
  let max = 0;
  for (const s of schemes) for (let d = from; d <= to; d++) max = Math.max(max, at(s, d));
  const top = max > 0 ? max * 1.1 : 1;
  const m = { l: 56, r: 12, t: 12 + (fs + 6) * Math.ceil(schemes.length / 3), b: 2 * fs + 14 };
  const X = (d) => m.l + ((d - from) / Math.max(1, to - from)) * (w - m.l - m.r);
  const Y = (v) => h - m.b - (v / top) * (h - m.t - m.b);
  ctx.strokeStyle = '#999';
  ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(m.l, h - m.b); ctx.lineTo(w - m.r, h - m.b); ctx.moveTo(m.l, m.t); ctx.lineTo(m.l, h - m.b); ctx.stroke();
  ctx.fillStyle = '#444';
  ctx.textAlign = 'center';
  for (const d of [from, Math.round(from / 2), 0, Math.round(to / 2), to].filter((d, k, all) => all.indexOf(d) === k)) ctx.fillText(String(d), X(d), h - m.b + fs + 2);
  ctx.fillText(`distance j − i (key − query)${reach < n - 1 ? `, within ±${reach}` : ''}`, (m.l + w - m.r) / 2, h - 4);
  ctx.textAlign = 'right';
  ctx.fillText(max.toFixed(2), m.l - 4, Y(max) + 4);
  ctx.fillText('0', m.l - 4, h - m.b);
  ctx.save(); ctx.translate(fs, (m.t + h - m.b) / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = 'center';
  ctx.fillText('share of attention', 0, 0); ctx.restore();
  const peaks = {};
  schemes.forEach((s, k) => {
    ctx.strokeStyle = SCHEME_COLORS[s.method];
    ctx.lineWidth = 1.75;
    ctx.beginPath();
    let peak = from;
    for (let d = from; d <= to; d++) {
      if (at(s, d) > at(s, peak)) peak = d;
      if (d === from) ctx.moveTo(X(d), Y(at(s, d))); else ctx.lineTo(X(d), Y(at(s, d)));
    }
    ctx.stroke();
    peaks[s.method] = peak;
    // The legend: three to a row above the plot.
    const [col, row] = [k % 3, Math.floor(k / 3)];
    const lx = m.l + col * ((w - m.l - m.r) / 3);
    const ly = 6 + row * (fs + 6);
    ctx.fillStyle = SCHEME_COLORS[s.method];
    ctx.fillRect(lx, ly + fs / 2 - 2, 16, 4);
    ctx.fillStyle = '#222';
    ctx.textAlign = 'left';
    ctx.fillText(s.label, lx + 22, ly + fs - 1);
  });
  c.hover = { schemes, n, from, to, left: m.l, right: w - m.r };
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
  showTip(`distance j − i = ${d}`, hv.schemes.map((s) => `${s.label}: ${(100 * s.profile[d + hv.n - 1]).toFixed(2)} % of the attention`), e.pageX, e.pageY);
}

/** The panel as one slide: its caption as the title, the six figures in two rows of three, the chart below. */
function exportSlide() {
  const cur = state.current;
  if (!view.schemes || !cur) return;
  const figs = [...$('compare-grid').querySelectorAll('canvas')];
  const chart = $('compare-profile');
  const [fw, fh] = [figs[0].width, figs[0].height];
  const width = 3 * fw;
  const chartH = Math.round((chart.height / chart.width) * width);
  const top = 64;
  const c = document.createElement('canvas');
  c.width = width;
  c.height = top + 2 * fh + chartH;
  const ctx = c.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.fillStyle = '#111';
  ctx.font = 'bold 26px sans-serif';
  ctx.fillText('Six position schemes on one input', 12, 30, width - 24);
  ctx.font = '16px sans-serif';
  ctx.fillText(caption(cur), 12, 54, width - 24);
  figs.forEach((f, k) => ctx.drawImage(f, (k % 3) * fw, top + Math.floor(k / 3) * fh));
  ctx.drawImage(chart, 0, top + 2 * fh, width, chartH);
  const s = cur.info.options;
  c.toBlob((blob) => download(blob, `relattn-schemes-n${s.n}-h${cur.shown.head}.png`), 'image/png');
}
