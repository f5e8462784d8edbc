// The heavy half of the page: computes traces off the main thread with the same wasm module.
// Messages: { id, params, batch, head } → { id, ok, info, stages, timings, stageTimes } or { id, ok: false, error }.
// A newer message supersedes one still waiting: only the latest pending request is computed.
// params.file = { id, name, bytes } computes from a scenario file; msg.colormaps = { sequential, diverging }.
// Export of the trace: { kind: 'export', id, what: 'npz' } → { kind: 'export', id, ok, data | error }.
// msg.backend = 'auto' | 'webgpu' | 'cpu': WebGPU is tried once (gpu_init) and its device kept for every
// recompute; without it (or when it fails on a layer, or is lost) the CPU computes, and the result's
// backend = { name, note } says where and why. Test hooks (tests/e2e/backend.test.mjs; the page never
// sends them): { kind: 'debug-lose-gpu' } destroys the device; { kind: 'debug-break-pipeline', kernel }
// rebuilds the GPU context with that kernel's WGSL broken (a failed pipeline creation); { kind:
// 'debug-gpu-limit', bytes } pretends the device allows only `bytes` per storage buffer binding.
import init, { set_colormaps, compute, gpu_init, gpu_destroy_for_test, gpu_break_pipeline_for_test, gpu_limit_binding_for_test } from './pkg/relattn.js';
import { debug_panic, debug_panic_async } from './pkg/relattn.js';

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
  if (e.data.kind === 'export') { ready.then(() => exportNow(e.data)); return; }
  // Test hooks (tests/e2e/reliability.test.mjs): the page never sends them; the test dispatches them in the worker.
  if (e.data.kind === 'debug-panic') { ready.then(() => { try { debug_panic(); } catch (err) { fatal(err.message); } }); return; }
  if (e.data.kind === 'debug-panic-async') { ready.then(() => debug_panic_async()); return; }
  if (e.data.kind === 'debug-lose-gpu') { ready.then(() => gpuTried && gpuTried.then(() => gpu_destroy_for_test())); return; }
  // These two chain onto gpuTried, which the next compute awaits, so they take effect before it.
  if (e.data.kind === 'debug-break-pipeline') { const prev = gpuTried; gpuTried = ready.then(() => prev).then(() => gpu_break_pipeline_for_test(String(e.data.kernel))).then(nameAdapter); return; }
  if (e.data.kind === 'debug-gpu-limit') { const prev = gpuTried || ready.then(() => gpu_init()).then(nameAdapter); gpuTried = ready.then(() => prev).then((st) => { gpu_limit_binding_for_test(Number(e.data.bytes)); return st; }); return; }
  pending = e.data;
  if (!scheduled) {
    scheduled = true;
    setTimeout(work, 0);
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
    const data = session.npz();
    self.postMessage({ kind: 'export', id: m.id, ok: true, data });
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    self.postMessage({ kind: 'export', id: m.id, ok: false, error: (err && err.message) || String(err) });
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
    const backend = ['auto', 'webgpu', 'cpu'].includes(msg.backend) ? msg.backend : 'auto';
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
    const name = s.backend();
    const used = { mode: backend, name: name.startsWith('WebGPU') && adapterName ? `WebGPU: ${adapterName}` : name, note: s.backend_note() };
    self.postMessage({ id: msg.id, ok: true, info, stages, timings: s.timings(), stageTimes: s.stage_times(), backend: used }, transfer);
  } catch (err) {
    if (isAbort(err)) { fatal(err.message); return; }
    const field = (err && err.field) || 'general';
    self.postMessage({ id: msg.id, ok: false, error: { field, message: (err && err.message) || String(err) } });
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
  self.postMessage({ id, ok: false, fatal: true, error: { field, message: `internal error in the wasm module (${why}); it was restarted, the view shown is the last good one` } });
}
