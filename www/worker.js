// The heavy half of the page: computes traces off the main thread with the same wasm module. A module worker
// (worker-client.js starts it with { type: 'module' }); its messages are typed in js/protocol.js.
// A newer compute request supersedes one still waiting: only the latest pending request is computed.
// params.file = { id, name, bytes } computes from a scenario file; msg.colormaps = { sequential, diverging }.
// msg.backend = 'auto' | 'webgpu' | 'cpu': WebGPU is tried once (gpu_init) and its device kept for every
// recompute; without it (or when it fails on a layer, or is lost) the CPU computes, and the result's
// backend = { name, note } says where and why. The debug-* test hooks (protocol.js: DebugMessage) are sent
// by tests/e2e only.
import init, { set_colormaps, compute, gpu_init, gpu_destroy_for_test, gpu_break_pipeline_for_test, gpu_limit_binding_for_test } from './pkg/relattn.js';
import { debug_panic, debug_panic_async } from './pkg/relattn.js';
import { BACKENDS, resultMessage, errorMessage, fatalMessage, exportReply, exportFailed } from './js/protocol.js';

const ready = init();
let wasm = null;
let session = null;
let sessionKey = '';
let pending = null;
let scheduled = false;
let gpuTried = null;
let inFlight = null; // the compute request being worked on
let dead = false; // the wasm instance aborted: only the page's restart helps now

// A panic anywhere in this worker's wasm (src/web.rs `start` calls this before the instance aborts), and any
// other abort (an allocation failure) that escapes as an uncaught RuntimeError: sync or async, the page is
// told, with the request it was computing.
self.relattnPanicked = (message) => fatal(message);
self.addEventListener('error', (e) => { if (isAbort(e.error)) { e.preventDefault(); fatal(e.error.message); } });
self.addEventListener('unhandledrejection', (e) => { if (isAbort(e.reason)) { e.preventDefault(); fatal(e.reason.message); } });

self.onmessage = (e) => {
  if (dead) return;
  const m = e.data;
  switch (m.kind) {
    case 'compute':
      pending = m;
      if (!scheduled) {
        scheduled = true;
        setTimeout(work, 0);
      }
      return;
    case 'export': ready.then(() => exportNow(m)); return;
    // Test hooks (tests/e2e/reliability.test.mjs, backend.test.mjs): the page never sends them.
    case 'debug-panic': ready.then(() => { try { debug_panic(); } catch (err) { fatal(err.message); } }); return;
    case 'debug-panic-async': ready.then(() => debug_panic_async()); return;
    case 'debug-lose-gpu': ready.then(() => gpuTried && gpuTried.then(() => gpu_destroy_for_test())); return;
    // These two chain onto gpuTried, which the next compute awaits, so they take effect before it.
    case 'debug-break-pipeline': { const prev = gpuTried; gpuTried = ready.then(() => prev).then(() => gpu_break_pipeline_for_test(String(m.kernel))).then(nameAdapter); return; }
    case 'debug-gpu-limit': { const prev = gpuTried || ready.then(() => gpu_init()).then(nameAdapter); gpuTried = ready.then(() => prev).then((st) => { gpu_limit_binding_for_test(Number(m.bytes)); return st; }); return; }
    default:
  }
};

// The browser names its adapter (vendor, architecture, description) better than wgpu's AdapterInfo does.
let adapterName = '';
async function nameAdapter(status) {
  try {
    const a = status.available && navigator.gpu ? await navigator.gpu.requestAdapter() : null;
    const i = (a && a.info) || {};
    adapterName = [i.vendor, i.architecture, i.description].filter(Boolean).join(' ');
  } catch { /* keep wgpu's name */ }
  return status;
}

function keyOf(p, backend) {
  return backend + (p.preset ? `|preset:${p.preset}` : JSON.stringify([p.file ? p.file.id : null, p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed]));
}

// The session shown, as the CLI's trace .npz (bytes).
function exportNow(m) {
  try {
    if (!session) throw new Error('nothing computed yet');
    self.postMessage(exportReply(m.id, session.npz()));
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    self.postMessage(exportFailed(m.id, (err && err.message) || String(err)));
  }
}

// `scheduled` stays true while a compute awaits the GPU, so computes never overlap.
async function work() {
  wasm = wasm || (await ready);
  const msg = pending;
  pending = null;
  if (!msg || dead) { scheduled = false; return; }
  inFlight = msg;
  try {
    const p = msg.params;
    const backend = BACKENDS.includes(msg.backend) ? msg.backend : 'auto';
    const key = keyOf(p, backend);
    if (msg.colormaps) set_colormaps(msg.colormaps.sequential, msg.colormaps.diverging);
    if (key !== sessionKey || !session) {
      if (backend !== 'cpu') await (gpuTried = gpuTried || gpu_init().then(nameAdapter));
      const s = p.file
        ? await compute(backend, '', p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed, new Uint8Array(p.file.bytes), p.file.name)
        : await compute(backend, p.preset || '', p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed, undefined, '');
      if (session) session.free();
      session = s;
      sessionKey = key;
    }
    const s = session;
    const batch = Math.min(Math.max(0, msg.batch | 0), s.batch() - 1);
    const head = Math.min(Math.max(0, msg.head | 0), s.heads() - 1);
    const stages = [];
    const transfer = [];
    for (let i = 0; i < s.stage_count(); i++) {
      s.select(i, batch, head);
      // Zero-copy views into the wasm memory, copied once into buffers that move to the page.
      const values = new Float32Array(wasm.memory.buffer, s.values_ptr(), s.values_len()).slice();
      const rgba = new Uint8ClampedArray(wasm.memory.buffer, s.rgba_ptr(), s.rgba_len()).slice();
      stages.push({
        name: s.stage_name(i), title: s.stage_title(i), formula: s.stage_formula(i), sequential: s.stage_sequential(i),
        rows: s.rows(), cols: s.cols(), lo: s.lo(), hi: s.hi(), values, rgba,
      });
      transfer.push(values.buffer, rgba.buffer);
    }
    const info = {
      preset: s.preset(), method: s.method(), n: s.n(), d_model: s.d_model(), heads: s.heads(), batch_size: s.batch(),
      clip: s.clip(), causal: s.causal(), rel_v: s.rel_v(), per_head: s.per_head_tables(), seed: s.seed(), batch, head,
    };
    for (const stage of stages) bridgeStage(stage, info); // BRIDGE: goes with the BRIDGE block at the end
    const name = s.backend();
    const used = { mode: backend, name: name.startsWith('WebGPU') && adapterName ? `WebGPU: ${adapterName}` : name, note: s.backend_note() };
    self.postMessage(resultMessage(msg.id, info, stages, s.timings(), s.stage_times(), used), transfer);
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    const message = (err && err.message) || String(err);
    self.postMessage(errorMessage(msg.id, (err && err.field) || 'general', kindOf(err, message), message));
  }
  inFlight = null;
  scheduled = false;
  if (pending) {
    scheduled = true;
    setTimeout(work, 0);
  }
}

// A panic (or an allocation failure) aborts the wasm instance with a RuntimeError and leaves it unusable.
// The page is told once (fatal: true) with the request in flight (id 0: none), and the field to show it
// under (the file picker when that request computed from a file); it replaces this worker with a fresh one,
// keeping the view it has. The panic's own message comes first (the hook runs before the abort).
function isAbort(err) {
  return err instanceof WebAssembly.RuntimeError;
}

function fatal(why) {
  if (dead) return;
  dead = true;
  const id = inFlight ? inFlight.id : 0;
  const field = inFlight && inFlight.params.file ? 'file' : 'general';
  self.postMessage(fatalMessage(id, field, `internal error in the wasm module (${why}); it was restarted, the view shown is the last good one`));
}

// A refusal's kind (protocol.js: WorkerError): the wasm's own `kind` when it names one, else from its message.
function kindOf(err, message) {
  if (err && typeof err.kind === 'string') return err.kind;
  if (/^too large/.test(message)) return 'too-large';
  return err && err.field ? 'refused' : 'internal';
}

// BRIDGE (removed when src/trace.rs sends stage metadata)
// Until the Rust side sends each stage's metadata, it is added here, once per stage before posting; the page
// reads it only from the stage object (protocol.js: Stage). title and formula already come from the wasm.
const BRIDGE_PAIRS = new Set(['distances', 'rel_index', 'content_logits', 'relative_logits', 'skew_sliced', 'logits', 'weights']);
const BRIDGE_AXES = {
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
const BRIDGE_DEFAULT_AXES = ['key j', 'query i'];
const BRIDGE_TEX = {
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
// src/trace.rs Trace::stage: distances and rel_index depend on neither; the tables on the head only with
// per-head tables; output on the batch element only; the rest on both.
function bridgeStage(stage, info) {
  const name = stage.name;
  [stage.x_axis, stage.y_axis] = BRIDGE_AXES[name] || BRIDGE_DEFAULT_AXES;
  stage.tex = BRIDGE_TEX[name] ? BRIDGE_TEX[name](info.method) : '';
  stage.pairs = BRIDGE_PAIRS.has(name);
  const table = name === 'rel_k' || name === 'rel_v';
  stage.per_head = table ? info.per_head : !['distances', 'rel_index', 'output'].includes(name);
  stage.per_batch = !table && !['distances', 'rel_index'].includes(name);
}
// END BRIDGE
