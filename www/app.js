// The page: controls → worker (computes the trace) → one figure per stage. Each figure's frame is drawn by
// the wasm module with plotters (draw_frame); its cells are blitted from the RGBA buffer the worker made.
// The page's own wasm instance (frames, SVG export, preset names): loaded by loadUi, replaced after a panic.
let ui = null;
let uiCount = 0;

const $ = (id) => document.getElementById(id);
const PARAMS = ['method', 'n', 'd_model', 'heads', 'clip', 'seed', 'causal', 'rel_v', 'per_head'];
const FIELDS = ['preset', 'method', 'n', 'd_model', 'heads', 'clip', 'seed', 'sentence', 'file'];
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
// ?embed=STAGE: that one heatmap, sized to its frame, and nothing else.
const EMBED = new URLSearchParams(location.search).get('embed');
// LaTeX of each stage's formula (presentation mode), by method.
const TEX = {
  distances: () => String.raw`d_{ij} = j - i`,
  rel_index: (m) => (m === 'shaw' ? String.raw`r_{ij} = \operatorname{clip}(j - i,\, k) + k = \max\bigl(-k, \min(k,\, j - i)\bigr) + k`
    : String.raw`r_{ij} = \text{row of } E_r \text{ for distance } j - i \quad (-1\text{: zero vector})`),
  rel_k: (m) => (m === 'shaw' ? String.raw`w^K = \bigl(w^K_{-k}, \dots, w^K_{k}\bigr), \qquad a^K_{ij} = w^K_{\operatorname{clip}(j - i,\, k)}`
    : String.raw`E_r \in \mathbb{R}^{L \times d_h}: \text{ one row per relative distance}`),
  rel_v: () => String.raw`a^V_{ij} = w^V_{\operatorname{clip}(j - i,\, k)}`,
  content_logits: () => String.raw`q_i \cdot k_j = (x_i W^Q)\,(x_j W^K)^{\top}`,
  relative_logits: (m) => (m === 'shaw' ? String.raw`q_i \cdot a^K_{ij} = \bigl(Q\, {w^K}^{\top}\bigr)\bigl[i,\ \operatorname{clip}(j - i,\, k) + k\bigr]`
    : String.raw`S^{rel}_{ij} = \operatorname{Skew}\bigl(Q E_r^{\top}\bigr)[i, j] = q_i \cdot E_r[j - i]`),
  skew_qer: () => String.raw`Q E_r^{\top} \in \mathbb{R}^{L \times L}, \quad \text{column } c \leftrightarrow \text{distance } c - (L - 1)`,
  skew_padded: () => String.raw`\bigl[\, 0 \mid Q E_r^{\top} \,\bigr] \in \mathbb{R}^{L \times (L + 1)}`,
  skew_reshaped: () => String.raw`\operatorname{reshape}: \ L \times (L + 1) \ \to\ (L + 1) \times L \quad \text{(same memory)}`,
  skew_sliced: () => String.raw`S^{rel} = \operatorname{reshaped}[1{:},\ :\,] \in \mathbb{R}^{L \times L}`,
  logits: (m) => (m === 'shaw' ? String.raw`e_{ij} = \frac{q_i \cdot k_j + q_i \cdot a^K_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})`
    : String.raw`e_{ij} = \frac{q_i \cdot k_j + S^{rel}_{ij}}{\sqrt{d_h}} \quad (-\infty \text{ where masked})`),
  weights: () => String.raw`\alpha_{ij} = \operatorname{softmax}_j(e_{ij}) = \frac{\exp e_{ij}}{\sum_{l} \exp e_{il}}`,
  value_buckets: () => String.raw`B_{ir} = \sum_{j:\ \operatorname{clip}(j - i,\, k) + k \,=\, r} \alpha_{ij}`,
  output_content: () => String.raw`\sum_j \alpha_{ij}\, v_j`,
  output_relative: () => String.raw`\sum_j \alpha_{ij}\, a^V_{ij} = (B\, w^V)_i`,
  output: () => String.raw`z = \operatorname{concat}_h\bigl(z^{h}\bigr)\, W^O + b^O, \qquad z^{h}_i = \sum_j \alpha_{ij}\,\bigl(v_j + a^V_{ij}\bigr)`,
};

let worker = null;
// Every change of the settings takes a new id at once (before its debounced request is sent): a result or
// error for an older id is for superseded settings and is dropped, so the last settings always win.
let lastId = 0;
let sentId = 0; // the id of the last request sent to the worker
let answeredId = 0; // the id of the last result or error taken
let shownId = 0;
let good = null; // the last result drawn in full: what a panic in the page's instance falls back to
let current = null; // { info, stages, byName, tokens }
let views = new Map(); // stage name → { canvas, ctx, off, rect, stage }
let pinned = null;
let renderToken = 0;
let want = null; // { head, batch } from the URL, for the first request
let tensors = null; // the scenario file in use: { id, name, bytes }
let candidate = null; // a file sent but not yet computed
let fileSeq = 0;
let presentAt = null; // index of the stage shown in presentation mode
let presentView = null;
let exportSeq = 0;
const exports = new Map();

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

function colormaps() {
  return { sequential: $('seq').value, diverging: $('div').value };
}

// New settings: any result still on its way is for old ones from now on.
function supersede() {
  lastId += 1;
  $('busy').hidden = false;
}

function request() {
  supersede();
  send();
}

function send() {
  const params = readParams();
  const file = candidate || tensors;
  if (file) { params.file = file; params.preset = ''; }
  sentId = lastId;
  const batch = want ? want.batch : Number($('batch').value) || 0;
  const head = want ? want.head : Number($('head').value) || 0;
  worker.postMessage({ id: lastId, params, batch, head, colormaps: colormaps(), backend: $('backend-mode').value });
}

let debounce = 0;
function requestSoon() {
  supersede();
  clearTimeout(debounce);
  debounce = setTimeout(send, 200);
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
  $('preset-desc').textContent = info.preset ? ui.preset_description(info.preset) : '';
}

function onResult(msg) {
  if (msg.kind === 'export') { const cb = exports.get(msg.id); exports.delete(msg.id); if (cb) cb(msg); return; }
  if (msg.fatal) { restartWorker(msg); return; }
  // Superseded settings: the controls and the view are not touched.
  if (msg.id !== lastId) return;
  answeredId = msg.id;
  $('busy').hidden = true;
  if (!msg.ok) {
    const fileInPlay = candidate || tensors;
    // With a file, errors about it (and a size too large, which its x fixed) go next to the file picker.
    const field = fileInPlay && (!FIELDS.slice(0, -1).includes(msg.error.field) || /^too large/.test(msg.error.message)) ? 'file' : msg.error.field;
    const named = field === 'file' && fileInPlay && !msg.error.message.includes(fileInPlay.name);
    const text = named ? `${fileInPlay.name}: ${msg.error.message}` : msg.error.message;
    if (candidate) { candidate = null; $('tensors').value = ''; }
    showError(field, text);
    return;
  }
  shownId = msg.id;
  want = null;
  if (candidate) { tensors = candidate; candidate = null; }
  showFile();
  clearErrors();
  syncControls(msg.info);
  const byName = Object.fromEntries(msg.stages.map((s) => [s.name, s]));
  const toks = tokens();
  current = { info: msg.info, stages: msg.stages, byName, tokens: toks.length === msg.info.n ? toks : null, timings: msg.timings, stageTimes: msg.stageTimes || [], backendName: msg.backend ? msg.backend.name : '' };
  if (pinned && (pinned.i >= msg.info.n || pinned.j >= msg.info.n)) pinned = null;
  render(current).catch(drawFailed);
  showBackend(msg.backend);
  saveURL();
}

// The footer names where the trace was computed and, when the GPU asked for was not used, why; with
// Backend = WebGPU that reason is also an inline error under the control (the view is the CPU's).
function showBackend(b) {
  if (!b) return;
  const text = b.note ? `${b.name} — ${b.note}` : b.name;
  $('backend').textContent = text;
  $('backend').dataset.name = b.name.startsWith('WebGPU') ? 'webgpu' : 'cpu';
  $('err-backend-mode').textContent = b.mode === 'webgpu' && b.note ? `${b.note} (computed on the CPU instead)` : '';
}

function showFile() {
  const name = $('tensors-name');
  name.textContent = tensors ? `using ${tensors.name}` : '';
  $('tensors-clear').hidden = !tensors;
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
  const shown = EMBED ? cur.stages.filter((s) => s.name === EMBED) : cur.stages;
  if (EMBED && !shown.length) {
    $('err-general').textContent = `embed: no stage '${EMBED}' in this trace; stages: ${cur.stages.map((s) => s.name).join(', ')}`;
  }
  for (const stage of shown) {
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
      canvas.setAttribute('aria-describedby', 'kbd-hint');
      figure.append(canvas);
      if (!EMBED) {
        const cap = document.createElement('figcaption');
        const png = document.createElement('button');
        png.type = 'button'; png.className = 'export-png'; png.textContent = 'PNG';
        const svg = document.createElement('button');
        svg.type = 'button'; svg.className = 'export-svg'; svg.textContent = 'SVG';
        cap.append(png, svg);
        figure.append(cap);
        png.addEventListener('click', () => exportFigure(v.stage.name, 'png'));
        svg.addEventListener('click', () => exportFigure(v.stage.name, 'svg'));
      }
      v = { figure, canvas, ctx: canvas.getContext('2d'), off: document.createElement('canvas'), rect: null, stage };
      canvas.addEventListener('mousemove', (e) => hover(v, e));
      canvas.addEventListener('mouseleave', () => { $('tooltip').hidden = true; });
      canvas.addEventListener('click', (e) => click(v, e));
      canvas.addEventListener('keydown', (e) => keyPin(v, e));
      canvas.addEventListener('blur', () => { v.cursor = null; $('tooltip').hidden = true; drawPins(); });
      views.set(stage.name, v);
    }
    if (EMBED) {
      v.canvas.width = Math.max(200, window.innerWidth);
      v.canvas.height = Math.max(160, window.innerHeight);
    }
    for (const b of v.figure.querySelectorAll('figcaption button')) {
      b.setAttribute('aria-label', `Export ${stage.title} as ${b.textContent}${b.textContent === 'PNG' ? ' (2×)' : ''}`);
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
  if (presentAt !== null) drawPresent();
  showTimings(cur.timings, drawMs);
  showStageTimes(cur.stageTimes, cur.backendName);
  good = cur;
  document.body.dataset.ready = String(shownId);
}

// --- the page's own wasm instance -----------------------------------------------------------------------
// Loads a fresh instance: the module's JS again under another URL (a module keeps its one instance), the
// same .wasm. The first is ./pkg/relattn.js itself.
async function loadUi() {
  uiCount += 1;
  const m = await import(uiCount === 1 ? './pkg/relattn.js' : `./pkg/relattn.js?instance=${uiCount}`);
  await m.default();
  if (uiCount > 1) m.set_colormaps($('seq').value, $('div').value);
  ui = m;
  document.body.dataset.uiInstance = String(uiCount);
}

// A panic in the page's instance (the hook in src/web.rs `start` calls relattnPanicked before the abort),
// or an abort that reached a caller (an allocation failure): the error is shown, a fresh instance loaded,
// and the last good view drawn again with it.
let uiBroken = null;
globalThis.relattnPanicked = (message) => { uiBroken = uiBroken || replaceUi(message); };

async function replaceUi(message) {
  await null; // after the abort has unwound to the caller
  renderToken += 1; // a render under way stops at its next figure
  showError('general', `internal error in the page's wasm module (${message}); it was restarted, the view shown is the last good one`);
  try {
    await loadUi();
    if (good) { current = good; await render(good); }
  } catch (e) {
    showError('general', `could not restart the page's wasm module: ${e.message || e}`);
  }
  uiBroken = null;
}

function drawFailed(e) {
  if (e instanceof WebAssembly.RuntimeError) uiBroken = uiBroken || replaceUi(e.message);
  else showError('general', `could not draw: ${e.message || e}`);
}

function axesOf(stage, cur) {
  const pairs = PAIRS.has(stage.name);
  const [xd, yd] = AXES[stage.name] || ['key j', 'query i'];
  const toks = cur.tokens;
  const xl = toks && pairs && stage.cols === toks.length ? toks : [];
  const yl = toks && stage.rows === toks.length && !['rel_k', 'rel_v', 'skew_reshaped'].includes(stage.name) ? toks : [];
  return [xd, yd, xl, yl];
}

function subtitleOf(stage, cur) {
  const info = cur.info;
  const where = info.heads > 1 || info.batch_size > 1 ? ` · b ${info.batch}, head ${info.head}` : '';
  return `${stage.formula}   [${stage.rows} × ${stage.cols}]${where}`;
}

function drawView(v, stage, cur) {
  v.stage = stage;
  const [xd, yd, xl, yl] = axesOf(stage, cur);
  const subtitle = subtitleOf(stage, cur);
  const r = ui.draw_frame(v.canvas, stage.title, subtitle, xd, yd, stage.values, stage.rows, stage.cols, stage.sequential, xl, yl);
  v.rect = { x0: r[0], x1: r[1], y0: r[2], y1: r[3] };
  // The frame without outlines, to restore before each redraw of the pins (they overlap the axes).
  v.frame = v.ctx.getImageData(0, 0, v.canvas.width, v.canvas.height);
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
  if (v.frame) v.ctx.putImageData(v.frame, 0, 0);
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
  fillTip(v, c.i, c.j);
  placeTip(e.pageX, e.pageY);
}

// The tooltip's lines for cell (i, j) of a view; also kept in its data attributes.
function fillTip(v, i, j) {
  const tip = $('tooltip');
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
  // Text nodes only: tokens come from the page's own input, but never as HTML.
  const title = document.createElement('b');
  title.textContent = lines[0].replace(/<\/?b>/g, '');
  tip.replaceChildren(title, ...lines.slice(1).flatMap((l) => [document.createElement('br'), document.createTextNode(l)]));
  tip.hidden = false;
  return lines.slice(1).join('; ');
}

function placeTip(pageX, pageY) {
  const tip = $('tooltip');
  const pad = 14;
  let left = pageX + pad;
  const top = pageY + pad;
  if (left + tip.offsetWidth > window.scrollX + window.innerWidth) left = pageX - tip.offsetWidth - pad;
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

// Keyboard: the arrow keys move a cursor cell of the focused figure (on (i, j) figures the cursor is
// the pin, shown in every view); its numbers go to the tooltip and to an aria-live region.
function keyPin(v, e) {
  if (!current || !v.stage || presentAt !== null) return;
  const pairs = PAIRS.has(v.stage.name);
  const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
  if (e.key === 'Escape') { v.cursor = null; setPin(null); $('tooltip').hidden = true; return; }
  if (!d && e.key !== 'Enter' && e.key !== ' ') return;
  e.preventDefault();
  const rows = v.stage.rows;
  const cols = v.stage.cols;
  const p = (pairs ? pinned : v.cursor) || v.cursor || { i: 0, j: 0 };
  const c = d ? { i: Math.min(rows - 1, Math.max(0, p.i + d[0])), j: Math.min(cols - 1, Math.max(0, p.j + d[1])) } : p;
  v.cursor = c;
  if (pairs) setPin(c); else drawPins();
  const said = fillTip(v, c.i, c.j);
  const b = v.canvas.getBoundingClientRect();
  const { x0, x1, y0, y1 } = v.rect;
  const sx = b.width / v.canvas.width;
  placeTip(window.scrollX + b.left + (x0 + ((c.j + 1) * (x1 - x0)) / cols) * sx, window.scrollY + b.top + (y0 + ((c.i + 1) * (y1 - y0)) / rows) * sx);
  $('announce').textContent = `${v.stage.title}: ${said}`;
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
  for (const v of views.values()) if (v.rect && v.cursor && !PAIRS.has(v.stage.name)) outline(v, v.cursor.i, v.cursor.j);
  const label = $('pinned');
  saveURL();
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

// Milliseconds of each compute stage. The CPU's are measured per head and summed over heads (CPU time:
// heads may run in parallel); "logits" is QKᵀ + relative + scale+mask. The GPU path reports only its total.
const STAGE_LABELS = { content_logits: 'QKᵀ', relative_logits: 'relative', scale_mask: 'scale+mask' };
function showStageTimes(stageTimes, backendName) {
  const el = $('stage-times');
  if (!stageTimes.length) {
    el.textContent = backendName.startsWith('WebGPU') ? 'stages: GPU total only (see trace)' : '';
    el.title = '';
    return;
  }
  const ms = Object.fromEntries(stageTimes.map((t) => [t.name, t.ms]));
  const f = (v) => `${v.toFixed(2)} ms`;
  const parts = ['content_logits', 'relative_logits', 'scale_mask'].map((n) => `${STAGE_LABELS[n]} ${f(ms[n])}`);
  el.textContent = `CPU stages (Σ heads): projections ${f(ms.projections)} · logits ${f(ms.logits)} (${parts.join(', ')}) · softmax ${f(ms.softmax)} · values ${f(ms.values)} · output ${f(ms.output)}`;
  el.title = 'Compute time of each stage on the CPU, summed over heads and batch (CPU time, not wall time). '
    + 'logits = QKᵀ + relative logits (gather or skew) + scale and mask; values = αV + the value term; output = the output projection.';
}

function showTimings(timings, drawMs) {
  const parts = timings.map((t) => `${t.name} ${t.ms.toFixed(1)} ms`);
  const draw = drawMs.reduce((a, [, ms]) => a + ms, 0);
  $('timings').textContent = `compute: ${parts.join(' · ')} · draw (all figures) ${draw.toFixed(0)} ms`;
}


// --- shareable state: every control in the query string ------------------------------------------------
const BOOLS = ['causal', 'rel_v', 'per_head'];
const NUMS = ['n', 'd_model', 'heads', 'clip', 'seed'];

function saveURL() {
  if (!current) return;
  const q = new URLSearchParams();
  if (EMBED) q.set('embed', EMBED);
  const preset = $('preset').value;
  if (preset) q.set('preset', preset);
  else {
    q.set('method', $('method').value);
    for (const k of NUMS) q.set(k, $(k).value);
    for (const k of BOOLS) q.set(k, $(k).checked ? '1' : '0');
  }
  q.set('head', $('head').value);
  q.set('batch', $('batch').value);
  q.set('sentence', $('sentence').value);
  if (pinned) q.set('pin', `${pinned.i},${pinned.j}`);
  q.set('seq', $('seq').value);
  q.set('div', $('div').value);
  q.set('theme', document.documentElement.dataset.theme);
  q.set('backend', $('backend-mode').value);
  if (presentAt !== null && current.stages[presentAt]) q.set('present', current.stages[presentAt].name);
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, '', url);
}

function setSelect(sel, value) {
  if ([...sel.options].some((o) => o.value === value)) sel.value = value;
}

// Sets the controls from the URL before the first request; returns the stage to present, if any.
function applyURL() {
  const q = new URLSearchParams(location.search);
  if (q.has('preset')) setSelect($('preset'), q.get('preset'));
  if (q.has('method')) setSelect($('method'), q.get('method'));
  for (const k of NUMS) if (q.has(k)) $(k).value = q.get(k);
  for (const k of BOOLS) if (q.has(k)) $(k).checked = q.get(k) === '1';
  if (q.has('sentence')) $('sentence').value = q.get('sentence');
  for (const k of ['seq', 'div']) if (q.has(k)) setSelect($(k), q.get(k));
  if (q.has('backend')) setSelect($('backend-mode'), q.get('backend'));
  const dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  setTheme(q.get('theme') === 'dark' || q.get('theme') === 'light' ? q.get('theme') : dark ? 'dark' : 'light');
  want = { head: Number(q.get('head')) || 0, batch: Number(q.get('batch')) || 0 };
  const pin = /^(\d+),(\d+)$/.exec(q.get('pin') || '');
  if (pin) pinned = { i: Number(pin[1]), j: Number(pin[2]) };
  return q.get('present');
}

function setTheme(t) {
  document.documentElement.dataset.theme = t;
  $('theme').value = t;
}

function toast(text) {
  $('toast').textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { $('toast').textContent = ''; }, 4000);
}

async function copyLink() {
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

// --- presentation mode ---------------------------------------------------------------------------------
function enterPresent(at = 0) {
  if (!current) return;
  presentAt = Math.max(0, Math.min(current.stages.length - 1, at));
  document.body.classList.add('presenting');
  $('present').hidden = false;
  $('tooltip').hidden = true;
  drawPresent();
  $('present').focus();
  const el = document.documentElement;
  if (el.requestFullscreen && !document.fullscreenElement) el.requestFullscreen().catch(() => {});
}

function exitPresent() {
  if (presentAt === null) return;
  presentAt = null;
  document.body.classList.remove('presenting');
  $('present').hidden = true;
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  saveURL();
  $('present-btn').focus();
}

function stepPresent(d) {
  if (presentAt === null || !current) return;
  presentAt = Math.max(0, Math.min(current.stages.length - 1, presentAt + d));
  drawPresent();
}

function drawPresent() {
  const stage = current.stages[presentAt];
  if (!stage) return;
  const sec = $('present');
  sec.dataset.stage = stage.name;
  $('present-step').textContent = `${presentAt + 1} / ${current.stages.length}`;
  $('present-title').textContent = stage.title;
  const f = $('present-formula');
  const tex = TEX[stage.name] ? TEX[stage.name](current.info.method) : '';
  if (window.katex && tex) window.katex.render(tex, f, { displayMode: true, throwOnError: false });
  else f.textContent = stage.formula;
  sec.setAttribute('aria-label', `Step ${presentAt + 1} of ${current.stages.length}: ${stage.title}, ${stage.formula}`);
  if (!presentView) {
    // Made on first use, so the page (and an embed) has no hidden canvas.
    const canvas = document.createElement('canvas');
    canvas.width = 760; canvas.height = 640;
    canvas.setAttribute('role', 'img');
    $('present-holder').append(canvas);
    presentView = { canvas, ctx: canvas.getContext('2d'), off: document.createElement('canvas'), rect: null, stage };
  }
  drawView(presentView, stage, current);
  saveURL();
}

function presentKeys(e) {
  if (presentAt === null) return;
  const next = ['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key);
  const back = ['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key);
  if (next || back) { e.preventDefault(); stepPresent(next ? 1 : -1); } else if (e.key === 'Home') { e.preventDefault(); presentAt = 0; drawPresent(); } else if (e.key === 'End') { e.preventDefault(); presentAt = current.stages.length - 1; drawPresent(); } else if (e.key === 'Escape') { e.preventDefault(); exitPresent(); }
}

// --- exports -------------------------------------------------------------------------------------------
function askWorker(msg) {
  const id = ++exportSeq;
  return new Promise((ok, fail) => {
    exports.set(id, (r) => (r.ok ? ok(r.data) : fail(new Error(r.error))));
    worker.postMessage({ kind: 'export', id, colormaps: colormaps(), ...msg });
  });
}

function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function baseName() {
  const info = current.info;
  return tensors ? tensors.name.replace(/\.[^.]*$/, '').replace(/[^\w.-]+/g, '_') : info.preset || `${info.method}-n${info.n}-seed${info.seed}`;
}

// The figure as SVG text from the wasm SVG backend (on the page: plotters measures text with the DOM);
// large matrices get their cells as an embedded raster (one pixel per cell, drawn pixelated).
function figureSVG(name) {
  const stage = current.byName[name];
  const [xd, yd, xl, yl] = axesOf(stage, current);
  const r = ui.draw_svg(stage.title, subtitleOf(stage, current), xd, yd, stage.values, stage.rows, stage.cols, stage.sequential, xl, yl, FRAME.w, FRAME.h);
  let svg = r.svg;
  if (!r.painted) {
    const [x0, x1, y0, y1] = r.area;
    const c = document.createElement('canvas');
    c.width = stage.cols; c.height = stage.rows;
    c.getContext('2d').putImageData(new ImageData(stage.rgba, stage.cols, stage.rows), 0, 0);
    const img = `<image x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${c.toDataURL('image/png')}"/>`;
    svg = svg.replace(/<\/svg>\s*$/, `${img}\n</svg>\n`);
  }
  return svg;
}

async function exportFigure(name, kind) {
  try {
    const svg = figureSVG(name);
    const file = `${baseName()}-${name}`;
    if (kind === 'svg') { download(new Blob([svg], { type: 'image/svg+xml' }), `${file}.svg`); return; }
    // PNG at 2×: the vector figure rasterised at twice its size (sharp text on HiDPI screens).
    const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
    const img = new Image();
    img.src = url;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = FRAME.w * 2; c.height = FRAME.h * 2;
    const ctx = c.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(img, 0, 0, c.width, c.height);
    URL.revokeObjectURL(url);
    const blob = await new Promise((ok) => c.toBlob(ok, 'image/png'));
    download(blob, `${file}@2x.png`);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) drawFailed(e);
    else showError('general', `export failed: ${e.message || e}`);
  }
}

async function exportNpz() {
  try {
    const bytes = await askWorker({ what: 'npz' });
    download(new Blob([bytes], { type: 'application/octet-stream' }), `${baseName()}-trace.npz`);
  } catch (e) {
    showError('general', `export failed: ${e.message || e}`);
  }
}

// --- your own tensors ----------------------------------------------------------------------------------
// The newest pick wins: a file still being read when another is picked (or the file is cleared, or a preset
// chosen) is dropped when its bytes arrive.
async function loadFile(file) {
  if (!file) return;
  $('err-file').textContent = '';
  const id = ++fileSeq;
  supersede();
  let bytes;
  try {
    bytes = await file.arrayBuffer();
  } catch (e) {
    if (id === fileSeq) { $('busy').hidden = true; showError('file', `${file.name}: cannot read: ${e.message || e}`); }
    return;
  }
  if (id !== fileSeq) return;
  candidate = { id, name: file.name, bytes };
  $('preset').value = '';
  request();
}

function startWorker() {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (e) => onResult(e.data);
  worker.onerror = (e) => showError('general', `worker failed: ${e.message || e}`);
}

// The worker's wasm instance aborted (a panic, sync or async): it is discarded and a fresh worker started;
// the view on screen (the last good result) stays and pending exports fail. An abort while computing the
// latest settings is their error, next to its control (the file picker for a file); one outside any
// compute (id 0) is shown under the controls; one for superseded settings is not shown. The latest settings,
// when the dead worker had them and had not answered, are sent again to the fresh one.
function restartWorker(msg) {
  worker.terminate();
  for (const [id, cb] of exports) { exports.delete(id); cb({ ok: false, error: 'the worker was restarted' }); }
  startWorker();
  if (msg.id === lastId) {
    answeredId = lastId;
    $('busy').hidden = true;
    if (candidate) { candidate = null; $('tensors').value = ''; }
    showError(msg.error.field, msg.error.message);
    return;
  }
  if (!msg.id) showError(msg.error.field, msg.error.message);
  if (sentId === lastId && answeredId !== lastId) send();
}

async function main() {
  await loadUi();
  const sel = $('preset');
  for (const name of ui.preset_names()) sel.append(new Option(name, name));
  if (EMBED) document.body.classList.add('embed');
  const presentStage = applyURL();
  ui.set_colormaps($('seq').value, $('div').value);
  startWorker();
  $('controls').addEventListener('submit', (e) => e.preventDefault());

  sel.addEventListener('change', () => {
    pinned = null; $('head').value = '0'; $('batch').value = '0';
    // A preset replaces any file, also one still being read or computed.
    fileSeq += 1; candidate = null; tensors = null; $('tensors').value = ''; showFile();
    request();
  });
  for (const id of PARAMS) {
    const el = $(id);
    const custom = () => { sel.value = ''; };
    if (el.type === 'number') el.addEventListener('input', () => { custom(); requestSoon(); });
    else el.addEventListener('change', () => { custom(); request(); });
  }
  $('head').addEventListener('change', request);
  $('backend-mode').addEventListener('change', request);
  $('batch').addEventListener('change', request);
  $('sentence').addEventListener('input', () => {
    const t = tokens();
    if (t.length > 4096) { showError('sentence', `sentence: got ${t.length} tokens; allowed: 1..=4096 tokens (one per position)`); return; }
    if (t.length > 0) { sel.value = ''; $('n').value = String(t.length); }
    requestSoon();
  });
  for (const id of ['seq', 'div']) $(id).addEventListener('change', () => { ui.set_colormaps($('seq').value, $('div').value); request(); });
  $('theme').addEventListener('change', () => { setTheme($('theme').value); saveURL(); });
  $('copy-link').addEventListener('click', copyLink);
  $('present-btn').addEventListener('click', () => enterPresent(0));
  $('export-npz').addEventListener('click', exportNpz);
  $('tensors').addEventListener('change', () => loadFile($('tensors').files[0]));
  $('tensors-clear').addEventListener('click', () => { fileSeq += 1; candidate = null; tensors = null; $('tensors').value = ''; showFile(); request(); });
  document.addEventListener('keydown', presentKeys);
  document.addEventListener('fullscreenchange', () => { if (!document.fullscreenElement && presentAt !== null) exitPresent(); });
  // Drag and drop a scenario file anywhere on the page.
  let drag = 0;
  document.addEventListener('dragenter', (e) => { e.preventDefault(); drag += 1; $('drop-hint').hidden = false; });
  document.addEventListener('dragleave', () => { drag = Math.max(0, drag - 1); if (!drag) $('drop-hint').hidden = true; });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    drag = 0; $('drop-hint').hidden = true;
    if (e.dataTransfer && e.dataTransfer.files.length) loadFile(e.dataTransfer.files[0]);
  });
  if (EMBED) {
    let t = 0;
    window.addEventListener('resize', () => { clearTimeout(t); t = setTimeout(() => current && render(current), 100); });
  }
  if (presentStage) {
    // Presentation restored from the URL: start on that stage once the first result is in.
    const once = setInterval(() => {
      if (!current) return;
      clearInterval(once);
      const at = current.stages.findIndex((s) => s.name === presentStage);
      enterPresent(at < 0 ? 0 : at);
    }, 50);
  }
  request();
}

main().catch((e) => showError('general', `could not start: ${e.message || e}`));
