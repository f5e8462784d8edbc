// The heavy half of the page: computes traces off the main thread with the same wasm module. A module worker
// (js/page/worker-client.js starts it with { type: 'module' }); its messages are crates/relattn/src/protocol/'s
// (ToWorker in, FromWorker out), built by js/shared/protocol.js. A newer compute request supersedes one still
// waiting: only the latest pending request is computed. A compute request's `request` goes to the wasm's compute
// untouched (it checks every field), with the scenario file's bytes when it has one. request.backend = 'auto' |
// 'webgpu' | 'cpu': WebGPU is tried once (gpu_init) and its device kept for every recompute, Model mode's too;
// without it (or when it fails on a layer, or is lost) the CPU computes, and the result's backend says where and
// why. The debug-* test hooks are sent by tests/e2e only. Model mode's messages ('model*') go to js/worker/model.js.
// With request.workers > 1, a layer held on demand on the CPU is computed by a pool of helpers, each its own wasm
// instance (js/worker/pool.js); this worker holds the session they make, as it holds its own.
import init, * as relattn from './pkg/relattn.js';
import { progressMessage, resultMessage, backendShown, gpuSettled, errorMessage, fatalMessage, exportReply, exportFailed, cellsReply, cellsFailed, readersReply, readersFailed, schemesReply, schemesFailed, atlasOpened, atlasHeadReply, atlasHeadFailed, typedError } from './js/shared/protocol.js';
import { onModelMessage, layerSession } from './js/worker/model.js';
import { usePool, pooledLayer, pooledCut, pooledCompare, cancel, busy, isSuperseded } from './js/worker/pool.js';
/** @typedef {import('./js/types/protocol').ToWorker} ToWorker */
/** @typedef {import('./js/types/protocol').ComputeRequest} ComputeRequest */
/** @typedef {import('./js/types/protocol').CellsRequest} CellsRequest */
/** @typedef {import('./js/types/protocol').SchemesRequest} SchemesRequest */
/** @typedef {import('./js/types/protocol').Info} Info */
/** @typedef {import('./js/types/protocol').Shown} Shown */
/** @typedef {import('./js/types/protocol').PictureView} PictureView */

const { set_colormaps, compute, gpu_init } = relattn;
// The test hooks exist only in a build with the `test-hooks` feature (make test), not in make serve's.
const hook = (name) => relattn[name] || (() => { throw new Error(`${name}: this build has no test hooks (cargo feature test-hooks)`); });

// The module compiled here once: this worker's instance and every helper of its pool (js/worker/pool.js) share it.
const compiled = (() => {
  const url = new URL('./pkg/relattn_bg.wasm', import.meta.url);
  return WebAssembly.compileStreaming(fetch(url)).catch(() => fetch(url).then((r) => r.arrayBuffer()).then((b) => WebAssembly.compile(b)));
})();
const ready = compiled.then((module) => { usePool(module); return init({ module_or_path: module }); });
/** The wasm instance's exports (its memory), once ready. */
let wasm = null;
/** The wasm instance aborted: only the page's restart helps now. */
let dead = false;

// The worker's state, by job: the layer shown, the compute queue and WebGPU. Model mode's is js/worker/model.js's.
const held = {
  /** @type {import('./pkg/relattn.js').Session | null} The layer shown (crates/relattn-wasm/src/session.rs), or null. */
  session: null,
  /** Its source and backend (keyOf): a compute request with the same key reuses it. */
  key: '',
  /** @type {string[]} Its stage names, in Info order. */
  stages: [],
  /** The ids of the results sent from it: a cells or readers question names one. */
  results: new Set(),
  /** Where it was computed (BackendUsed), or null. */
  backend: null,
  /** The head atlas opened last ({ file: the page's file id, open: an OpenAtlas }), or null: a compute request
   *  whose file is an atlas opens it (answered 'atlas', not 'result'); its heads' charts are asked of it. */
  atlas: null,
};
const queue = {
  /** @type {ComputeRequest | null} The newest compute request not yet worked on (a newer one replaces it). */
  pending: null,
  /** True from a compute's scheduling to its end (also while it awaits the GPU), so computes never overlap. */
  scheduled: false,
  /** @type {ComputeRequest | null} The compute request being worked on. */
  inFlight: null,
};
const gpu = {
  /** WebGPU's one try (gpu_init, then the adapter's name), a promise once a request asked for it. */
  tried: null,
  /** True once that try has ended (the page was told: gpu-settled): a provisional view is computed again. */
  settled: false,
  /** The browser's name of its adapter (vendor, architecture, description), better than wgpu's. */
  adapterName: '',
};

// A panic anywhere in this worker's wasm (crates/relattn-wasm/src/lib.rs `start` calls this before the instance aborts), and any
// other abort (an allocation failure) that escapes as an uncaught RuntimeError: sync or async, the page is
// told, with the request it was computing.
/** @type {any} */ (self).relattnPanicked = (message) => fatal(message);
self.addEventListener('error', (e) => { if (isAbort(e.error)) { e.preventDefault(); fatal(e.error.message); } });
self.addEventListener('unhandledrejection', (e) => { if (isAbort(e.reason)) { e.preventDefault(); fatal(e.reason.message); } });

/** @param {MessageEvent<ToWorker>} e */
self.onmessage = (e) => {
  if (dead) return;
  const m = e.data;
  switch (m.kind) {
    case 'compute':
      // A newer request stops the pool's helpers still computing the one in flight (their shares are superseded),
      // or a comparison of the schemes (whose lead computes their ranges itself).
      if (busy()) cancel();
      queue.pending = m;
      if (!queue.scheduled) {
        queue.scheduled = true;
        setTimeout(work, 0);
      }
      return;
    case 'export': ready.then(() => answer(m, exportBytes, exportReply, exportFailed)); return;
    case 'cells': ready.then(() => answer(m, () => cellsOf(m), cellsReply, cellsFailed)); return;
    case 'readers': ready.then(() => answer(m, () => sessionOf(m.result).table_readers(m.row), readersReply, readersFailed)); return;
    case 'schemes': ready.then(() => compareSchemes(m)); return;
    case 'atlas-head': ready.then(() => atlasHead(m)); return;
    case 'model': case 'model-sample': case 'model-stop': case 'model-nll': case 'model-compare':
      ready.then((w) => onModelMessage(modelContext(w), m));
      return;
    // Test hooks (tests/e2e/reliability.test.mjs, backend.test.mjs): the page never sends them.
    case 'debug-panic': ready.then(() => { try { hook('debug_panic')(); } catch (err) { fatal(err.message); } }); return;
    case 'debug-panic-async': ready.then(() => hook('debug_panic_async')()); return;
    case 'debug-lose-gpu': ready.then(() => gpu.tried && gpu.tried.then(() => hook('gpu_destroy_for_test')())); return;
    // These two chain onto gpuTried, which the next compute awaits, so they take effect before it.
    case 'debug-break-pipeline': { const prev = gpu.tried; gpu.tried = ready.then(() => prev).then(() => hook('gpu_break_pipeline_for_test')(String(m.kernel))).then(nameAdapter); return; }
    case 'debug-gpu-limit': { const prev = gpu.tried || ready.then(() => gpu_init()).then(nameAdapter); gpu.tried = ready.then(() => prev).then((st) => { hook('gpu_limit_binding_for_test')(Number(m.bytes)); return st; }); return; }
    default:
  }
};

// What js/worker/model.js computes with: the module, its memory, the GPU's first try and the footer's
// backend line, posting, and the abort check.
function modelContext(w) {
  return {
    relattn,
    memory: () => w.memory,
    tryGpu,
    used,
    stale,
    post: (msg, transfer) => { if (!dead) self.postMessage(msg, transfer || []); },
    isAbort,
    fail: (err) => { if (isAbort(err)) fatal(err.message); },
  };
}

// The browser names its adapter (vendor, architecture, description) better than wgpu's AdapterInfo does.
async function nameAdapter(status) {
  try {
    const webgpu = /** @type {any} */ (navigator).gpu; // WebGPU's types are not in TypeScript's lib
    const a = status.available && webgpu ? await webgpu.requestAdapter() : null;
    const i = (a && a.info) || {};
    gpu.adapterName = [i.vendor, i.architecture, i.description].filter(Boolean).join(' ');
  } catch { /* keep wgpu's name */ }
  return status;
}

// WebGPU is tried once, by the first request that asks for it ('auto' or 'webgpu'). 'webgpu' waits until it
// was; 'auto' does not: its first view is computed on the CPU at once while the device and its pipelines are
// set up beside it (seconds on a software adapter), marked provisional; when the set-up ends the page is told
// (gpu-settled) and asks for its provisional views again, which are then computed where the set-up decided.
function tryGpu(backend) {
  if (backend !== 'auto' && backend !== 'webgpu') return Promise.resolve();
  if (!gpu.tried) {
    gpu.tried = gpu_init().then(nameAdapter);
    gpu.tried.finally(() => {
      gpu.settled = true;
      if (!dead) self.postMessage(gpuSettled());
    }).catch(() => {}); // a failed try is the computes' to report (they await gpu.tried)
  }
  return backend === 'auto' ? Promise.resolve() : gpu.tried;
}

// Whether a view computed where BackendUsed `b` says must be computed again: it was computed on the CPU while
// WebGPU was being set up (provisional), and the set-up has ended since.
function stale(b) {
  return Boolean(b && b.provisional && gpu.settled);
}

// Where a computation asked to run on `backend` ran, as the footer shows it, from the Rust BackendUsed `b`.
function used(backend, b) {
  return backendShown(backend, b, gpu.adapterName);
}

// How many workers compute compute request `msg`'s layer, or share a comparison's schemes (the page's Workers
// control): 1, the worker alone.
/** @param {ComputeRequest | SchemesRequest} msg */
function workersOf(msg) {
  return Math.max(1, Math.floor(Number(msg.workers) || 1));
}

// The cached session is reused while the compute request's source (options, sentence, file and its atlas row, or model layer) and
// backend are the same.
/** @param {ComputeRequest} msg */
function keyOf(msg) {
  const r = msg.request;
  if (msg.model) return `${r.backend}|model:${JSON.stringify(msg.model)}`;
  return r.backend + JSON.stringify([msg.file ? msg.file.id : null, r.atlas_row ?? null, r.options, r.tokens]);
}

// Answers the page's message `m` with `reply(m.id, work())` (its typed array's buffer transferred), or with
// `failed(m.id, why)` when `work` throws; an abort of the wasm instance is fatal.
function answer(m, work, reply, failed) {
  try {
    const out = work();
    self.postMessage(reply(m.id, out), [out.buffer]);
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    self.postMessage(failed(m.id, err));
  }
}

// Every scheme on the options shown (crates/relattn-wasm/src/compare.rs), shared by the pool's workers, their rasters
// transferred.
/** @param {SchemesRequest} m */
async function compareSchemes(m) {
  try {
    const schemes = await pooledCompare(relattn, m, workersOf(m));
    self.postMessage(schemesReply(m.id, schemes), schemes.flatMap((s) => (s.values ? [s.rgba.buffer, s.values.buffer] : [s.rgba.buffer])));
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    self.postMessage(schemesFailed(m.id, err));
  }
}

// One head's full-size profile of the atlas opened last (refused as stale when the page asks of another file).
function atlasHead(m) {
  try {
    if (!held.atlas || held.atlas.file !== m.file) throw typedError('general', 'stale', 'stale: the atlas opened has changed');
    self.postMessage(atlasHeadReply(m.id, held.atlas.open.head_chart(m.row, m.head)));
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    self.postMessage(atlasHeadFailed(m.id, err));
  }
}

// A compute request's file that is a head atlas (and not one of its rows shown stage by stage): read and held,
// its picture's data sent ('atlas'); the layer shown stays. True when the file was one.
function openAtlas(msg) {
  if (!msg.file || msg.request.atlas_row != null) return false;
  const bytes = new Uint8Array(msg.file.bytes);
  if (!relattn.is_atlas(bytes)) return false;
  const open = relattn.open_atlas(bytes, msg.request.file_name);
  if (held.atlas) held.atlas.open.free();
  held.atlas = { file: msg.file.id, open };
  self.postMessage(atlasOpened(msg.id, open.view()));
  return true;
}

// The session that result `id` was sent from, or an error when the page has moved on from it.
function sessionOf(id) {
  if (!held.session || !held.results.has(id)) throw typedError('general', 'stale', 'stale: the session shown has changed');
  return held.session;
}

// The session shown, as the CLI's trace .npz (bytes).
function exportBytes() {
  if (!held.session) throw typedError('general', 'stale', 'nothing computed yet');
  return held.session.npz();
}

// Exact values of a stage sent without them (a tooltip's cell, a zoomed window), from the session of result
// `m.result`.
/** @param {CellsRequest} m */
function cellsOf(m) {
  const s = sessionOf(m.result);
  const i = held.stages.indexOf(m.stage);
  if (i < 0) throw new Error(`no stage '${m.stage}' in this trace`);
  return s.cells(i, m.batch, m.head, m.r0, m.c0, m.rows, m.cols);
}

// The newest pending compute request: an atlas opened (openAtlas), or its layer shown (showLayer); then the next
// pending one, if any.
async function work() {
  wasm = wasm || (await ready);
  const msg = queue.pending;
  queue.pending = null;
  if (!msg || dead) { queue.scheduled = false; return; }
  queue.inFlight = msg;
  try {
    if (!openAtlas(msg)) await showLayer(msg);
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    if (!isSuperseded(err)) self.postMessage(errorMessage(msg.id, err));
  }
  queue.inFlight = null;
  queue.scheduled = false;
  if (queue.pending) {
    queue.scheduled = true;
    setTimeout(work, 0);
  }
}

// The layer of compute request `msg` (computed, or the one held when its key is the same), then the stages of
// the (batch, head) it shows, posted as one ResultMessage.
/** @param {ComputeRequest} msg */
async function showLayer(msg) {
  const backend = msg.request.backend;
  const key = keyOf(msg);
  if (msg.colormaps) set_colormaps(msg.colormaps.sequential, msg.colormaps.diverging);
  // A layer computed on the CPU while WebGPU was set up is computed again once the set-up has ended.
  if (key !== held.key || !held.session || stale(held.backend)) {
    self.postMessage(progressMessage(msg.id, 'computing the layer…'));
    await tryGpu(backend);
    // msg.model: one layer of a trained model (Model mode's "stages of this head"), on the same backend.
    // msg.workers > 1: a layer held on demand on the CPU is computed by the pool (js/worker/pool.js), else here.
    const progress = (text) => self.postMessage(progressMessage(msg.id, text));
    const s = msg.model
      ? await layerSession(modelContext(wasm), msg.model, backend)
      : (await pooledLayer(relattn, msg, workersOf(msg), progress)) || (await compute(msg.request, msg.file ? new Uint8Array(msg.file.bytes) : undefined));
    if (held.session) held.session.free();
    held.session = s;
    held.key = key;
    held.stages = s.info().stages.map((st) => st.name);
    held.results = new Set();
  }
  const s = held.session;
  /** @type {Info} */
  const info = s.info();
  held.backend = info.backend;
  /** @type {Shown} clamped into this layer's (crates/relattn-wasm/src/session.rs) */
  const shown = s.shown_for(msg.batch, msg.head);
  // A layer held on demand computes the stages of the (batch, head) shown now: seconds at n 8192.
  if (info.on_demand) {
    self.postMessage(progressMessage(msg.id, `computing the stages of head ${shown.head}${info.options.batch_size > 1 ? `, batch element ${shown.batch}` : ''} (held on demand: ${info.options.n} query rows)…`));
    // A layer the pool computed: its helpers cut their query rows (the selects below colour them).
    await pooledCut(relattn, s, shown.batch, shown.head, msg.head_scale);
  }
  const stages = [];
  const transfer = [];
  info.stages.forEach((meta, i) => {
    // { rows, cols, raster_rows, raster_cols, lo, hi, has_values, heads_shared, own_scale }: the first select of a
    // (batch, head) cuts every stage of it (computing them, for a layer held on demand).
    const cut = s.select(i, shown.batch, shown.head, msg.head_scale);
    // Zero-copy views into the wasm memory, copied once into buffers that move to the page. A stage past
    // VALUES_CELLS comes without its values (null): the page asks for the cells it needs ('cells').
    const values = cut.has_values ? new Float32Array(wasm.memory.buffer, s.values_ptr(), s.values_len()).slice() : null;
    const rgba = new Uint8ClampedArray(wasm.memory.buffer, s.rgba_ptr(), s.rgba_len()).slice();
    stages.push({ ...meta, ...cut, values, rgba });
    transfer.push(rgba.buffer);
    if (values) transfer.push(values.buffer);
  });
  delete info.stages; // sent as `stages`, with their values
  // The lecture's pictures of the scheme (heatmaps with their pixels and values, or curves).
  /** @type {PictureView[]} */
  const pictures = s.pictures();
  for (const p of pictures) {
    transfer.push(p.rgba.buffer);
    if (p.values) transfer.push(p.values.buffer);
  }
  held.results.add(msg.id);
  self.postMessage(resultMessage(msg.id, info, shown, stages, pictures, s.timings(), used(backend, info.backend), wasm.memory.buffer.byteLength), transfer);
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
  const id = queue.inFlight ? queue.inFlight.id : 0;
  const field = queue.inFlight && queue.inFlight.file ? 'file' : 'general';
  self.postMessage(fatalMessage(id, field, `internal error in the wasm module (${why}); it was restarted, the view shown is the last good one`));
}
