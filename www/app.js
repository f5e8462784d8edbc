// The page: controls → worker (computes the trace) → one figure per stage. Each figure's frame is drawn by
// the wasm module with plotters (draw_frame); its cells are blitted from the RGBA buffer the worker made.
import init, { draw_frame, preset_names, preset_description } from './pkg/relattn.js';

const $ = (id) => document.getElementById(id);
const PARAMS = ['method', 'n', 'd_model', 'heads', 'clip', 'seed', 'causal', 'rel_v', 'per_head'];
const FIELDS = ['preset', 'method', 'n', 'd_model', 'heads', 'clip', 'seed', 'sentence'];
// Stages whose cells are (query i, key j).
const PAIRS = new Set(['distances', 'rel_index', 'content_logits', 'relative_logits', 'skew_sliced', 'logits', 'weights']);
const AXES = {
  rel_k: ['component of the row (d_head)', 'table row r'],
  rel_v: ['component of the row (d_head)', 'table row r'],
  skew_qer: ['column c (distance c − (n − 1))', 'query i'],
  skew_padded: ['column (zero column first)', 'query i'],
  skew_reshaped: ['column of the reshaped buffer', 'row of the reshaped buffer'],
  value_buckets: ['w^V row r', 'query i'],
  output_content: ['component (d_head)', 'query i'],
  output_relative: ['component (d_head)', 'query i'],
  output: ['feature (d_model)', 'position i'],
};
const FRAME = { w: 470, h: 430 };

let worker = null;
let lastId = 0;
let shownId = 0;
let current = null; // { info, stages, byName, tokens }
let views = new Map(); // stage name → { canvas, ctx, off, rect, stage }
let pinned = null;
let renderToken = 0;

function fmt(v) {
  if (v === -Infinity) return '−∞';
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  if (a >= 0.01 && a < 1000) return v.toFixed(Math.max(0, 2 - Math.floor(Math.log10(a))));
  return v.toExponential(2);
}

function tokens() {
  const s = $('sentence').value.trim();
  return s ? s.split(/\s+/) : [];
}

function readParams() {
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

function clearErrors() {
  for (const f of FIELDS) $(`err-${f}`).textContent = '';
  $('err-general').textContent = '';
  for (const el of document.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

function showError(field, message) {
  clearErrors();
  const out = $(`err-${field}`) || $('err-general');
  out.textContent = message;
  const ctl = $(field);
  if (ctl && FIELDS.includes(field)) ctl.setAttribute('aria-invalid', 'true');
}

function request() {
  const params = readParams();
  lastId += 1;
  $('busy').hidden = false;
  worker.postMessage({ id: lastId, params, batch: Number($('batch').value) || 0, head: Number($('head').value) || 0 });
}

let debounce = 0;
function requestSoon() {
  clearTimeout(debounce);
  debounce = setTimeout(request, 200);
}

function fillSelect(sel, count, value) {
  if (sel.options.length !== count) {
    sel.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i), String(i))));
  }
  sel.value = String(value);
  sel.disabled = count <= 1;
}

function syncControls(info) {
  $('method').value = info.method;
  for (const k of ['n', 'd_model', 'heads', 'clip', 'seed']) $(k).value = String(info[k]);
  $('causal').checked = info.causal;
  $('rel_v').checked = info.rel_v;
  $('per_head').checked = info.per_head;
  fillSelect($('head'), info.heads, info.head);
  fillSelect($('batch'), info.batch_size, info.batch);
  $('preset-desc').textContent = info.preset ? preset_description(info.preset) : '';
}

function onResult(msg) {
  if (msg.id < shownId) return;
  if (msg.id === lastId) $('busy').hidden = true;
  if (!msg.ok) {
    if (msg.id === lastId) showError(msg.error.field, msg.error.message);
    return;
  }
  shownId = msg.id;
  clearErrors();
  syncControls(msg.info);
  const byName = Object.fromEntries(msg.stages.map((s) => [s.name, s]));
  const toks = tokens();
  current = { info: msg.info, stages: msg.stages, byName, tokens: toks.length === msg.info.n ? toks : null, timings: msg.timings };
  if (pinned && (pinned.i >= msg.info.n || pinned.j >= msg.info.n)) pinned = null;
  render(current);
}

async function render(cur) {
  const token = ++renderToken;
  const main = $('views');
  const names = new Set(cur.stages.map((s) => s.name));
  for (const [name, v] of views) {
    if (!names.has(name)) { v.figure.remove(); views.delete(name); }
  }
  const drawMs = [];
  let prev = null;
  for (const stage of cur.stages) {
    let v = views.get(stage.name);
    if (!v) {
      const figure = document.createElement('figure');
      figure.className = 'view';
      figure.dataset.stage = stage.name;
      const canvas = document.createElement('canvas');
      canvas.width = FRAME.w;
      canvas.height = FRAME.h;
      canvas.tabIndex = 0;
      canvas.setAttribute('role', 'img');
      figure.append(canvas);
      v = { figure, canvas, ctx: canvas.getContext('2d'), off: document.createElement('canvas'), rect: null, stage };
      canvas.addEventListener('mousemove', (e) => hover(v, e));
      canvas.addEventListener('mouseleave', () => { $('tooltip').hidden = true; });
      canvas.addEventListener('click', (e) => click(v, e));
      canvas.addEventListener('keydown', (e) => keyPin(v, e));
      views.set(stage.name, v);
    }
    if (prev ? prev.figure.nextSibling !== v.figure : main.firstChild !== v.figure) {
      if (prev) prev.figure.after(v.figure); else main.prepend(v.figure);
    }
    prev = v;
    const t0 = performance.now();
    drawView(v, stage, cur);
    drawMs.push([stage.name, performance.now() - t0]);
    // Let the page breathe between big figures; a newer result stops this one.
    if (stage.rows * stage.cols > 65536) {
      await new Promise((r) => setTimeout(r, 0));
      if (token !== renderToken) return;
    }
  }
  drawPins();
  showTimings(cur.timings, drawMs);
  document.body.dataset.ready = String(shownId);
}

function drawView(v, stage, cur) {
  v.stage = stage;
  const pairs = PAIRS.has(stage.name);
  const [xd, yd] = AXES[stage.name] || ['key j', 'query i'];
  const toks = cur.tokens;
  const xl = toks && pairs && stage.cols === toks.length ? toks : [];
  const yl = toks && stage.rows === toks.length && !['rel_k', 'rel_v', 'skew_reshaped'].includes(stage.name) ? toks : [];
  const info = cur.info;
  const where = info.heads > 1 || info.batch_size > 1 ? ` · b ${info.batch}, head ${info.head}` : '';
  const subtitle = `${stage.formula}   [${stage.rows} × ${stage.cols}]${where}`;
  const r = draw_frame(v.canvas, stage.title, subtitle, xd, yd, stage.values, stage.rows, stage.cols, stage.sequential, xl, yl);
  v.rect = { x0: r[0], x1: r[1], y0: r[2], y1: r[3] };
  v.off.width = stage.cols;
  v.off.height = stage.rows;
  v.off.getContext('2d').putImageData(new ImageData(stage.rgba, stage.cols, stage.rows), 0, 0);
  blit(v);
  const c = v.canvas;
  Object.assign(c.dataset, { x0: r[0], x1: r[1], y0: r[2], y1: r[3], rows: stage.rows, cols: stage.cols });
  c.setAttribute('aria-label', `${stage.title}: ${stage.formula}, ${stage.rows} × ${stage.cols}`);
}

function blit(v) {
  const { x0, x1, y0, y1 } = v.rect;
  v.ctx.imageSmoothingEnabled = false;
  v.ctx.drawImage(v.off, x0, y0, x1 - x0, y1 - y0);
}

function cellAt(v, e) {
  const b = v.canvas.getBoundingClientRect();
  const x = ((e.clientX - b.left) * v.canvas.width) / b.width;
  const y = ((e.clientY - b.top) * v.canvas.height) / b.height;
  const { x0, x1, y0, y1 } = v.rect;
  if (x < x0 || x >= x1 || y < y0 || y >= y1) return null;
  const j = Math.floor(((x - x0) / (x1 - x0)) * v.stage.cols);
  const i = Math.floor(((y - y0) / (y1 - y0)) * v.stage.rows);
  return { i, j };
}

// The parts of pair (i, j) of the shown (batch, head), read from the stages the worker sent.
function parts(i, j) {
  const s = current.byName;
  const n = current.info.n;
  const at = (name) => (s[name] ? s[name].values[i * n + j] : NaN);
  return { content: at('content_logits'), relative: at('relative_logits'), row: at('rel_index'), logit: at('logits'), weight: at('weights') };
}

function hover(v, e) {
  const tip = $('tooltip');
  const c = v.rect && cellAt(v, e);
  if (!c) { tip.hidden = true; return; }
  const { i, j } = c;
  const value = v.stage.values[i * v.stage.cols + j];
  const lines = [`<b>${v.stage.title}</b>`, `(i, j) = (${i}, ${j})   value ${fmt(value)}`];
  tip.dataset.stage = v.stage.name;
  tip.dataset.i = i;
  tip.dataset.j = j;
  tip.dataset.value = value;
  for (const k of ['content', 'relative', 'row']) delete tip.dataset[k];
  if (PAIRS.has(v.stage.name)) {
    const p = parts(i, j);
    const k = current.info.clip;
    const tok = current.tokens ? `  “${current.tokens[i]}” → “${current.tokens[j]}”` : '';
    lines.push(`distance j − i = ${j - i}${tok}`);
    lines.push(`content term q·k = ${fmt(p.content)}`);
    lines.push(`relative term = ${fmt(p.relative)}`);
    lines.push(current.info.method === 'shaw'
      ? `table row clip(j − i, ${k}) + ${k} = ${fmt(p.row)}`
      : `table row of E_r = ${p.row < 0 ? 'none (zero vector)' : fmt(p.row)}`);
    lines.push(`logit ${fmt(p.logit)}   weight ${fmt(p.weight)}`);
    Object.assign(tip.dataset, { content: p.content, relative: p.relative, row: p.row });
  }
  tip.innerHTML = lines.join('<br>');
  tip.hidden = false;
  const pad = 14;
  let left = e.pageX + pad;
  let top = e.pageY + pad;
  if (left + tip.offsetWidth > window.scrollX + window.innerWidth) left = e.pageX - tip.offsetWidth - pad;
  tip.style.left = `${left}px`;
  tip.style.top = `${top}px`;
}

function setPin(p) {
  pinned = p;
  drawPins();
}

function click(v, e) {
  const c = v.rect && cellAt(v, e);
  if (!c || !PAIRS.has(v.stage.name)) return;
  setPin(pinned && pinned.i === c.i && pinned.j === c.j ? null : c);
}

function keyPin(v, e) {
  if (!current) return;
  const n = current.info.n;
  const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
  if (e.key === 'Escape') { setPin(null); return; }
  if (!d && e.key !== 'Enter' && e.key !== ' ') return;
  e.preventDefault();
  const p = pinned || { i: 0, j: 0 };
  if (d) setPin({ i: Math.min(n - 1, Math.max(0, p.i + d[0])), j: Math.min(n - 1, Math.max(0, p.j + d[1])) });
  else setPin(p);
}

function outline(v, i, j, w = 1, h = 1) {
  const { x0, x1, y0, y1 } = v.rect;
  const cw = (x1 - x0) / v.stage.cols;
  const ch = (y1 - y0) / v.stage.rows;
  const x = x0 + j * cw;
  const y = y0 + i * ch;
  const rw = Math.max(3, cw * w);
  const rh = Math.max(3, ch * h);
  const ctx = v.ctx;
  ctx.lineWidth = 3;
  ctx.strokeStyle = '#000';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = '#ffd400';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
}

function drawPins() {
  if (!current) return;
  for (const v of views.values()) if (v.rect) blit(v);
  const label = $('pinned');
  if (!pinned) { label.textContent = ''; return; }
  const { i, j } = pinned;
  const n = current.info.n;
  const p = parts(i, j);
  for (const [name, v] of views) {
    const s = v.stage;
    if (PAIRS.has(name)) outline(v, i, j);
    else if ((name === 'rel_k' || name === 'rel_v') && p.row >= 0) outline(v, p.row, 0, s.cols, 1);
    else if (name === 'value_buckets' && p.row >= 0) outline(v, i, p.row);
    else if (name === 'skew_qer' && j - i + n - 1 >= 0 && j - i + n - 1 < s.cols) outline(v, i, j - i + n - 1);
    else if (name === 'skew_padded' && j - i + n < s.cols) outline(v, i, j - i + n);
    else if (name.startsWith('output')) outline(v, i, 0, s.cols, 1);
  }
  label.textContent = `pinned (i, j) = (${i}, ${j}): content ${fmt(p.content)}, relative ${fmt(p.relative)}, table row ${fmt(p.row)}, weight ${fmt(p.weight)} (Esc unpins)`;
}

function showTimings(timings, drawMs) {
  const parts = timings.map((t) => `${t.name} ${t.ms.toFixed(1)} ms`);
  const draw = drawMs.reduce((a, [, ms]) => a + ms, 0);
  $('timings').textContent = `compute: ${parts.join(' · ')} · draw (all figures) ${draw.toFixed(0)} ms`;
}

async function main() {
  await init();
  const sel = $('preset');
  for (const name of preset_names()) sel.append(new Option(name, name));
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (e) => onResult(e.data);
  worker.onerror = (e) => showError('general', `worker failed: ${e.message || e}`);

  sel.addEventListener('change', () => { pinned = null; $('head').value = '0'; $('batch').value = '0'; request(); });
  for (const id of PARAMS) {
    const el = $(id);
    const custom = () => { sel.value = ''; };
    if (el.type === 'number') el.addEventListener('input', () => { custom(); requestSoon(); });
    else el.addEventListener('change', () => { custom(); request(); });
  }
  $('head').addEventListener('change', request);
  $('batch').addEventListener('change', request);
  $('sentence').addEventListener('input', () => {
    const t = tokens();
    if (t.length > 4096) { showError('sentence', `sentence: got ${t.length} tokens; allowed: 1..=4096 tokens (one per position)`); return; }
    if (t.length > 0) { sel.value = ''; $('n').value = String(t.length); }
    requestSoon();
  });
  request();
}

main().catch((e) => showError('general', `could not start: ${e.message || e}`));
