// Owns Model mode's panels beside the roll: the model view (one tile per layer × head, each that head's (T, T)
// weights as the worker coloured them, the selected query's row ticked; clicking a tile chooses it), the
// attention-by-distance charts (per head of the chosen layer, the distribution over j − i with the landmarks
// and each head's one-line description that the worker computes: crates/relattn/src/trained/heads.rs), the
// prediction at the selected token (top candidates with bars, the actual next token's rank), the NLL-per-position
// chart and the six models' slide (drawn from all-models.js's answers). Each canvas carries what the tests check
// (data-layer/head/row, data-sum, data-landmarks, data-description, data-series).
import { $, textPx, wrapLines } from '../dom.js';
import { state } from '../state.js';
import { sizeCanvas } from '../../shared/figure-core.js';
import { hideTip, showTip } from '../tip.js';
import { modelLabel } from './form.js';
import { SCHEME_COLORS } from '../scheme-colors.js';

/** Each tile's pixels (its head's weights), to draw again under the selected row's ticks. @type {WeakMap<HTMLCanvasElement, ImageData>} */
const TILE_PIXELS = new WeakMap();

const HEAD_COLORS = ['#1f6fc4', '#d62728', '#2a9d3a', '#8a4fbf', '#e07000', '#555', '#17becf', '#bcbd22'];

/**
 * Draws the tiles of `r` (its `tiles`); `choose(layer, head)` is called on a click. Marks the chosen one.
 */
export function drawTiles(r, choose) {
  const box = $('m-tiles');
  const { layers, heads } = r.info.config;
  // Each head's column as wide as its tiles, narrower where the width runs out (a slide's tiles wrap their text).
  box.style.gridTemplateColumns = `auto repeat(${heads}, minmax(0, max-content))`;
  const els = [];
  for (let l = 0; l < layers; l++) {
    const label = document.createElement('span');
    label.className = 'range';
    label.textContent = `layer ${l}`;
    label.style.alignSelf = 'center';
    els.push(label);
    for (let h = 0; h < heads; h++) {
      const t = r.tiles.find((x) => x.layer === l && x.head === h);
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'tile';
      b.dataset.layer = String(l);
      b.dataset.head = String(h);
      b.setAttribute('aria-label', `layer ${l}, head ${h}`);
      const c = document.createElement('canvas');
      c.width = t.size; c.height = t.size;
      const pixels = new ImageData(new Uint8ClampedArray(t.rgba), t.size, t.size);
      TILE_PIXELS.set(c, pixels);
      c.getContext('2d').putImageData(pixels, 0, 0);
      c.dataset.layer = String(l);
      c.dataset.head = String(h);
      const cap = document.createElement('span');
      cap.textContent = `L${l} · H${h}`;
      // What the head does, measured on this window (crates/relattn/src/trained/heads.rs).
      const what = document.createElement('span');
      what.className = 'tile-what';
      what.textContent = t.description;
      b.dataset.description = t.description;
      b.setAttribute('aria-label', `layer ${l}, head ${h}: ${t.description}`);
      b.append(c, cap, what);
      b.addEventListener('click', () => choose(l, h));
      els.push(b);
    }
  }
  box.replaceChildren(...els);
  markTile(r.layer, r.head);
}

/** Marks the selected query's row (token `position` of T) on every tile: a tick on each side. */
export function markRow(position, T) {
  for (const c of $('m-tiles').querySelectorAll('canvas')) {
    const ctx = c.getContext('2d');
    ctx.putImageData(TILE_PIXELS.get(c), 0, 0);
    if (position == null) continue;
    const y = ((position + 0.5) * c.height) / T;
    ctx.strokeStyle = '#ff8c00';
    ctx.lineWidth = Math.max(1, c.height / 64);
    const tick = Math.max(3, c.width / 10);
    ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(tick, y); ctx.moveTo(c.width - tick, y); ctx.lineTo(c.width, y); ctx.stroke();
    c.dataset.row = String(position);
  }
}

export function markTile(layer, head) {
  for (const b of $('m-tiles').querySelectorAll('.tile')) {
    b.setAttribute('aria-pressed', String(Number(b.dataset.layer) === layer && Number(b.dataset.head) === head));
  }
}

/** Draws one chart per head of `r.layer`: profiles[h] over distances −(T−1)..=0, shown from −range. */
export function drawDistances(r, box = $('m-dist')) {
  const heads = r.profiles.length;
  const T = r.window.length;
  const full = $('m-dist-full').checked;
  const shownFrom = full ? -(T - 1) : -Math.min(64, T - 1);
  $('m-dist-layer').textContent = `layer ${r.layer}`;
  while (box.children.length > heads) box.lastChild.remove();
  while (box.children.length < heads) {
    const c = document.createElement('canvas');
    c.setAttribute('role', 'img');
    c.addEventListener('mousemove', (e) => distanceHover(c, e));
    c.addEventListener('mouseleave', hideTip);
    box.append(c);
  }
  r.profiles.forEach((d, h) => {
    const c = box.children[h];
    const { ctx, w, h: hh } = sizeCanvas(c, 320, 170);
    const big = document.body.dataset.modelSlide ? 1.5 : 1;
    const fs = textPx(10);
    ctx.font = `${fs}px system-ui, sans-serif`;
    // The head's description under the axis, on as many lines as the width needs.
    const what = r.descriptions[h];
    const lines = wrapLines(ctx, what, w - 8);
    const m = { l: 64 * big, r: 14, t: 28 * big, b: (fs + 4) * (lines.length + 1) + 8 };
    // distribution[k] is distance k − (T − 1): a share of the attention, 0…1.
    const at = (dist) => d[dist + T - 1];
    let max = 0;
    for (let dist = shownFrom; dist <= 0; dist++) max = Math.max(max, at(dist));
    // The y axis runs to the chart's largest share (labelled "max", never past 1), with room above its peak.
    const top = max > 0 ? Math.min(1, max) * 1.12 : 1;
    const X = (dist) => m.l + ((dist - shownFrom) / Math.max(1, -shownFrom)) * (w - m.l - m.r);
    const Y = (v) => hh - m.b - (v / top) * (hh - m.t - m.b);
    // Landmark labels on two rows above the plot; one that would overlap a label already placed is left out
    // (its dashed line stays, and hovering names it).
    const placed = [[], []];
    for (const { distance: dist, label: name } of r.landmarks) {
      if (dist < shownFrom) continue;
      ctx.strokeStyle = '#ccc'; ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(X(dist), m.t); ctx.lineTo(X(dist), hh - m.b); ctx.stroke();
      ctx.setLineDash([]);
      const text = `${dist} ${name}`;
      const width = ctx.measureText(text).width;
      const left = Math.max(2, Math.min(X(dist) - width / 2, w - 2 - width));
      const row = placed.findIndex((spans) => spans.every(([a, b]) => left + width + 4 <= a || b + 4 <= left));
      if (row < 0) continue;
      placed[row].push([left, left + width]);
      ctx.fillStyle = '#777'; ctx.textAlign = 'left';
      ctx.fillText(text, left, row === 0 ? fs : 2 * fs + 2);
    }
    c.dataset.labelRows = JSON.stringify(placed);
    ctx.strokeStyle = '#999'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(m.l, hh - m.b); ctx.lineTo(w - m.r, hh - m.b); ctx.stroke();
    ctx.fillStyle = '#777'; ctx.textAlign = 'center';
    ctx.fillText(String(shownFrom), X(shownFrom) + 8, hh - m.b + fs + 2);
    ctx.fillText('0', X(0) - 4, hh - m.b + fs + 2);
    // The axis's name between its end ticks, in full where it fits.
    const room = w - m.l - m.r - ctx.measureText(`${shownFrom}  0`).width - 24;
    const axis = ['distance j − i (key − query)', 'distance j − i', 'j − i'].find((t) => ctx.measureText(t).width <= room) || '';
    ctx.fillText(axis, (m.l + w - m.r) / 2, hh - m.b + fs + 2);
    ctx.save(); ctx.translate(fs, (m.t + hh - m.b) / 2); ctx.rotate(-Math.PI / 2);
    ctx.fillText('share of attention', 0, 0); ctx.restore();
    ctx.textAlign = 'right';
    if (max > 0) {
      ctx.strokeStyle = '#ddd';
      ctx.beginPath(); ctx.moveTo(m.l, Y(max)); ctx.lineTo(w - m.r, Y(max)); ctx.stroke();
      ctx.fillText(`max ${max.toFixed(2)}`, m.l - 3, Y(max) + 3, m.l - fs - 6);
    }
    ctx.fillText('0', m.l - 3, hh - m.b);
    c.dataset.max = String(max);
    ctx.strokeStyle = HEAD_COLORS[h % HEAD_COLORS.length]; ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (let dist = shownFrom; dist <= 0; dist++) {
      if (dist === shownFrom) ctx.moveTo(X(dist), Y(at(dist))); else ctx.lineTo(X(dist), Y(at(dist)));
    }
    ctx.stroke();
    ctx.fillStyle = '#333'; ctx.textAlign = 'left';
    ctx.fillText(`head ${h}`, m.l + 4, m.t + fs + 4);
    lines.forEach((line, k) => ctx.fillText(line, 4, hh - m.b + (fs + 4) * (k + 2)));
    let sum = 0;
    for (const v of d) sum += v;
    let shown = 0;
    for (let dist = shownFrom; dist <= 0; dist++) shown += at(dist);
    c.hover = { d, T, shownFrom, left: m.l, right: w - m.r, head: h, layer: r.layer, what: r.descriptions[h], meter: r.meter || r.window.meter };
    c.dataset.head = String(h);
    c.dataset.landmarks = r.landmarks.filter((k) => k.distance >= shownFrom).map((k) => `${k.distance} ${k.label}`).join(',');
    c.dataset.description = what;
    c.hover.landmarks = r.landmarks;
    c.dataset.sum = String(sum);
    c.dataset.shownMass = String(shown);
    c.setAttribute('aria-label', `Layer ${r.layer} head ${h}: ${what}; attention by distance, ${(100 * shown).toFixed(0)}% of the weight within ${shownFrom}…0`);
  });
}

/** A distance chart's tooltip (the page's own): the distance under the pointer, what it reaches, and the head's share there. */
function distanceHover(c, e) {
  const hv = c.hover;
  if (!hv) return;
  const x = e.clientX - c.getBoundingClientRect().left;
  const dist = Math.round(hv.shownFrom + ((x - hv.left) / (hv.right - hv.left)) * -hv.shownFrom);
  if (dist < hv.shownFrom || dist > 0) { hideTip(); return; }
  const share = hv.d[dist + hv.T - 1];
  const mark = hv.landmarks.find((k) => k.distance === dist);
  c.dataset.hovered = String(dist);
  showTip(`layer ${hv.layer}, head ${hv.head}: distance ${dist}`, [
    state.ui ? state.ui.name_distance(dist, hv.meter.beat, hv.meter.bar) : (mark ? mark.name : ''),
    `share of the attention ${share.toFixed(4)} (${(100 * share).toFixed(2)} %, averaged over the window's queries)`,
    hv.what,
  ], e.pageX, e.pageY);
}

/** The prediction at the selected token: the top candidates and the actual next token's rank. */
export function drawPrediction(p) {
  const list = $('m-predict');
  if (!p) { list.replaceChildren(); $('m-actual').textContent = ''; return; }
  const top = p.candidates[0] ? p.candidates[0].probability : 1;
  list.replaceChildren(...p.candidates.map((c) => {
    const li = document.createElement('li');
    if (p.actual && p.actual.token === c.token) li.className = 'actual';
    const rank = document.createElement('span'); rank.textContent = `${c.rank}.`;
    const name = document.createElement('span'); name.textContent = c.name;
    const bar = document.createElement('span'); bar.className = 'bar'; bar.style.width = `${(100 * c.probability) / top}%`;
    const pr = document.createElement('span'); pr.textContent = `${(100 * c.probability).toFixed(1)}%`;
    li.append(rank, name, bar, pr);
    li.dataset.token = String(c.token);
    li.dataset.probability = String(c.probability);
    return li;
  }));
  $('m-actual').textContent = p.actual
    ? `The piece's next token: ${p.actual.name}, rank ${p.actual.rank} (p = ${(100 * p.actual.probability).toFixed(1)}%).`
    : 'The last token of the window: the piece goes on beyond it.';
  $('m-actual').dataset.rank = p.actual ? String(p.actual.rank) : '';
}

/** The NLL-per-position chart of NllResult `n`, or none (moving mean over 32 positions, the raw values faint). */
export function drawNll(n) {
  const c = $('m-nll');
  if (!c) return;
  if (!n) { delete c.dataset.drawn; $('m-nll-note').textContent = ''; return; }
  // Shown before it is measured (style.css hides it until drawn), so it is drawn at its displayed size.
  c.dataset.drawn = '1';
  const { ctx, w, h: hh } = sizeCanvas(c, 900, 240);
  const fs = textPx(11);
  ctx.font = `${fs}px system-ui, sans-serif`;
  // The legend, sized to its text, in a margin of its own right of the plot (six lines would hide curves).
  const names = n.series.map((s) => modelLabel(s.model));
  const text = Math.max(...names.map((t) => ctx.measureText(t).width));
  const m = { l: 40 * fs / 11, r: text + 50, t: 14, b: 2 * fs + 14 };
  const len = n.series[0].values.length;
  const smooth = (v) => v.map((_, k) => { const a = Math.max(0, k - 31); let s = 0; for (let q = a; q <= k; q++) s += v[q]; return s / (k - a + 1); });
  const lines = n.series.map((s) => ({ ...s, smooth: smooth(s.values) }));
  const top = Math.max(4, ...lines.map((s) => Math.max(...s.smooth))) * 1.05;
  const X = (k) => m.l + (k / Math.max(1, len - 1)) * (w - m.l - m.r);
  const Y = (v) => hh - m.b - (Math.min(v, top) / top) * (hh - m.t - m.b);
  ctx.strokeStyle = '#999'; ctx.beginPath(); ctx.moveTo(m.l, hh - m.b); ctx.lineTo(w - m.r, hh - m.b); ctx.moveTo(m.l, m.t); ctx.lineTo(m.l, hh - m.b); ctx.stroke();
  ctx.fillStyle = '#666'; ctx.textAlign = 'right';
  for (let v = 0; v <= top; v += 1) ctx.fillText(`${v}`, m.l - 4, Y(v) + 4);
  ctx.textAlign = 'center';
  for (let k = 0; k <= len; k += 256) {
    ctx.fillText(String(k), X(Math.min(k, len - 1)), hh - m.b + fs + 3);
    if (k > 0) { ctx.strokeStyle = k === 256 ? '#222' : '#ddd'; ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(X(k), m.t); ctx.lineTo(X(k), hh - m.b); ctx.stroke(); ctx.setLineDash([]); }
  }
  if (len > 256) { ctx.fillStyle = '#222'; ctx.fillText('training length', X(256), m.t - 2); }
  for (const s of lines) {
    ctx.strokeStyle = SCHEME_COLORS[s.model]; ctx.lineWidth = 1.8;
    ctx.beginPath();
    s.smooth.forEach((v, k) => (k ? ctx.lineTo(X(k), Y(v)) : ctx.moveTo(X(k), Y(v))));
    ctx.stroke();
  }
  ctx.textAlign = 'left';
  const row = fs + 4;
  const x0 = w - m.r + 16;
  lines.forEach((s, k) => {
    const y = m.t + row / 2 + row * k;
    ctx.strokeStyle = SCHEME_COLORS[s.model]; ctx.lineWidth = 2.5;
    ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x0 + 20, y); ctx.stroke();
    ctx.fillStyle = '#333';
    ctx.fillText(names[k], x0 + 26, y + fs / 3);
  });
  ctx.save(); ctx.translate(12, (m.t + hh - m.b) / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = 'center'; ctx.fillStyle = '#666';
  ctx.fillText('NLL (nats)', 0, 0); ctx.restore();
  ctx.textAlign = 'center'; ctx.fillStyle = '#666';
  ctx.fillText('position in the window (token), from the piece\'s start', (m.l + w - m.r) / 2, hh - 4);
  const mean = (v, a, b) => { const x = v.slice(a, b); return x.length ? x.reduce((p, q) => p + q, 0) / x.length : NaN; };
  const parts = lines.map((s) => {
    const before = mean(s.values, 0, 255);
    const after = mean(s.values, 255, len);
    return `${modelLabel(s.model)}: mean ${s.mean.toFixed(3)} nats` +
      (len > 256 ? ` (positions < 256: ${before.toFixed(3)}, ≥ 256: ${after.toFixed(3)})` : '');
  });
  $('m-nll-note').textContent = `BWV ${n.piece}, ${n.length} tokens from its start; a 32-position moving mean. ${parts.join('; ')}.`;
  c.setAttribute('aria-label', `NLL per position: ${$('m-nll-note').textContent}`);
  c.dataset.series = JSON.stringify(lines.map((s) => ({ model: s.model, count: s.values.length, mean: s.mean })));
}

/**
 * The six models side by side as one slide: a chart per model (into `box`, three to a row), every head of the
 * layer a curve of its own colour over distances −64 … 0 (the whole window when asked), named in a legend.
 * `c` is a CompareResult (its window, layer and one series per model).
 */
export function drawModelsSlide(c, box) {
  const T = c.window.length;
  const shownFrom = $('m-dist-full').checked ? -(T - 1) : -Math.min(64, T - 1);
  box.replaceChildren();
  for (const { model, profiles } of c.series) {
    const canvas = document.createElement('canvas');
    canvas.setAttribute('role', 'img');
    canvas.dataset.model = model;
    box.append(canvas);
    const { ctx, w, h } = sizeCanvas(canvas, 400, 280);
    const fs = Math.max(14, Math.round(h / 18));
    ctx.font = `${fs}px system-ui, sans-serif`;
    const m = { l: 3.2 * fs, r: 8, t: 3.2 * fs, b: 2.6 * fs };
    const at = (d, dist) => d[dist + T - 1];
    let max = 0;
    for (const d of profiles) for (let dist = shownFrom; dist <= 0; dist++) max = Math.max(max, at(d, dist));
    const top = max > 0 ? Math.min(1, max) * 1.1 : 1;
    const X = (dist) => m.l + ((dist - shownFrom) / Math.max(1, -shownFrom)) * (w - m.l - m.r);
    const Y = (v) => h - m.b - (v / top) * (h - m.t - m.b);
    ctx.fillStyle = SCHEME_COLORS[model];
    ctx.fillRect(0, 0, w, 4);
    ctx.fillStyle = '#111';
    ctx.textAlign = 'left';
    ctx.font = `bold ${fs}px system-ui, sans-serif`;
    ctx.fillText(modelLabel(model), 4, fs + 4);
    ctx.font = `${fs}px system-ui, sans-serif`;
    ctx.strokeStyle = '#999'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(m.l, h - m.b); ctx.lineTo(w - m.r, h - m.b); ctx.moveTo(m.l, m.t); ctx.lineTo(m.l, h - m.b); ctx.stroke();
    ctx.fillStyle = '#555'; ctx.textAlign = 'center';
    ctx.fillText(String(shownFrom), X(shownFrom), h - m.b + fs + 2);
    ctx.fillText('0', X(0), h - m.b + fs + 2);
    ctx.fillText('distance j − i', (m.l + w - m.r) / 2, h - 4);
    ctx.textAlign = 'right';
    ctx.fillText(max.toFixed(2), m.l - 4, Y(max) + fs / 3);
    ctx.fillText('0', m.l - 4, h - m.b);
    profiles.forEach((d, head) => {
      ctx.strokeStyle = HEAD_COLORS[head % HEAD_COLORS.length]; ctx.lineWidth = 2;
      ctx.beginPath();
      for (let dist = shownFrom; dist <= 0; dist++) (dist === shownFrom ? ctx.moveTo : ctx.lineTo).call(ctx, X(dist), Y(at(d, dist)));
      ctx.stroke();
    });
    // The legend: the heads in their colours, on the line under the title.
    ctx.textAlign = 'left';
    let x = 4;
    profiles.forEach((_, head) => {
      ctx.fillStyle = HEAD_COLORS[head % HEAD_COLORS.length];
      ctx.fillRect(x, 1.5 * fs + 4, fs * 1.2, 4);
      ctx.fillStyle = '#333';
      ctx.fillText(`head ${head}`, x + 1.5 * fs, 2 * fs + 6);
      x += 5.5 * fs;
    });
    canvas.setAttribute('aria-label', `${modelLabel(model)}, layer ${c.layer}: each head's attention by distance, ${shownFrom}…0`);
  }
}
