// The heavy half of the page: computes traces off the main thread with the same wasm module.
// Messages: { id, params, batch, head } → { id, ok, info, stages, timings } or { id, ok: false, error }.
// A newer message supersedes one still waiting: only the latest pending request is computed.
// params.file = { id, name, bytes } computes from a scenario file; msg.colormaps = { sequential, diverging }.
// Export of the trace: { kind: 'export', id, what: 'npz' } → { kind: 'export', id, ok, data | error }.
import init, { Session, set_colormaps } from './pkg/relattn.js';

const ready = init();
let wasm = null;
let session = null;
let sessionKey = '';
let pending = null;
let scheduled = false;

self.onmessage = (e) => {
  if (e.data.kind === 'export') { ready.then(() => exportNow(e.data)); return; }
  pending = e.data;
  if (!scheduled) {
    scheduled = true;
    setTimeout(work, 0);
  }
};

function keyOf(p) {
  return p.preset ? `preset:${p.preset}` : JSON.stringify([p.file ? p.file.id : null, p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed]);
}

// The session shown, as the CLI's trace .npz (bytes).
function exportNow(m) {
  try {
    if (!session) throw new Error('nothing computed yet');
    const data = session.npz();
    self.postMessage({ kind: 'export', id: m.id, ok: true, data });
  } catch (err) {
    self.postMessage({ kind: 'export', id: m.id, ok: false, error: (err && err.message) || String(err) });
  }
}

async function work() {
  wasm = wasm || (await ready);
  scheduled = false;
  const msg = pending;
  pending = null;
  if (!msg) return;
  try {
    const p = msg.params;
    const key = keyOf(p);
    if (msg.colormaps) set_colormaps(msg.colormaps.sequential, msg.colormaps.diverging);
    if (key !== sessionKey || !session) {
      const s = p.file
        ? Session.from_tensors(new Uint8Array(p.file.bytes), p.file.name, p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed)
        : new Session(p.preset || '', p.method, p.n, p.d_model, p.heads, p.clip, p.causal, p.rel_v, p.per_head, p.seed);
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
    self.postMessage({ id: msg.id, ok: true, info, stages, timings: s.timings() }, transfer);
  } catch (err) {
    const field = (err && err.field) || 'general';
    self.postMessage({ id: msg.id, ok: false, error: { field, message: (err && err.message) || String(err) } });
  }
  if (pending && !scheduled) {
    scheduled = true;
    setTimeout(work, 0);
  }
}
