// Owns the worker's half of Model mode (../worker.js hands it every 'model*' message): the trained models'
// ModelSessions (crates/relattn-wasm/src/model.rs; one per kind, fetched and loaded on first use, then kept), the test
// pieces' bytes (fetched once), the window each session last ran, the sampling loop (16 tokens a batch,
// yielding between batches so that a stop or a newer request gets in) and the NLL comparison. Everything is
// computed here, in wasm: a window's pass, the NLLs and a layer's trace on the backend each request asks for
// (WebGPU when usable, else the CPU, which says why: crates/relattn-wasm/src/backend.rs WebGpu), sampling on the CPU;
// the page only draws. The computing methods are async (they may await the GPU), so other messages are
// answered meanwhile. Messages are typed in ../shared/protocol.js.
import { compareResult, modelError, modelResult, modelSampled, nllResult, typedError, windowKey, windowRequest } from '../shared/protocol.js';

const TILE = 128; // the model view's tiles: at most TILE × TILE pixels each
const BATCH = 16; // tokens per ModelSampled

// This module's state, by job: what is loaded, Model mode's request queue, and the sampling under way.
const loaded = {
  /** @type {Map<string, Promise<any>>} kind → its ModelSession (a promise: loading is shared) */
  sessions: new Map(),
  /** kind → { key, info }: the window its session ran last and its WindowInfo */
  windows: new Map(),
  /** The shipped models' kinds (the wasm's model_kinds()), asked once. */
  kinds: null,
  /** Promise<Uint8Array> of models/chorales-test.json, or null before the first load (or after it failed). */
  dataBytes: null,
  /** Windows run so far: a run ends its session's sampling (ModelSession::run), so a sampling ends at the next. */
  runs: 0,
};
const queue = {
  /** The newest 'model' request not yet answered (a newer one replaces it), or null. */
  pending: null,
  /** True while drain() answers the pending requests. */
  busy: false,
};
const sampler = {
  /** The id of the sampling under way, 0 when none. */
  id: 0,
};

async function fetchBytes(url) {
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw typedError('model', 'file', `could not fetch ${url}: ${e.message || e}`);
  }
  if (!r.ok) throw typedError('model', 'file', `could not fetch ${url}: HTTP ${r.status} (run make wasm, which copies models/ to www/models/)`);
  return new Uint8Array(await r.arrayBuffer());
}

/** The shipped models' kinds, in the comparisons' order. */
function modelKinds(relattn) {
  loaded.kinds = loaded.kinds || relattn.model_kinds();
  return loaded.kinds;
}

/** The ModelSession of `kind`, loaded once (a failed load is forgotten, so a retry fetches again). */
function session(relattn, kind) {
  const kinds = modelKinds(relattn);
  if (!kinds.includes(kind)) return Promise.reject(typedError('model', 'invalid', `invalid model: got '${kind}'; allowed: ${kinds.join(', ')}`));
  if (!loaded.sessions.has(kind)) {
    if (!loaded.dataBytes) {
      loaded.dataBytes = fetchBytes('models/chorales-test.json');
      loaded.dataBytes.catch(() => { loaded.dataBytes = null; });
    }
    const name = `chorales-${kind}.safetensors`;
    const p = Promise.all([fetchBytes(`models/${name}`), loaded.dataBytes]).then(([m, d]) => relattn.ModelSession.load(m, name, d));
    p.catch(() => { loaded.sessions.delete(kind); loaded.windows.delete(kind); });
    loaded.sessions.set(kind, p);
  }
  return loaded.sessions.get(kind);
}

/**
 * Makes `w` the current window of session `s` (of `kind`), running it on `backend` unless it already is
 * (WebGPU tried first when asked for); resolves to { info, ran }.
 */
async function ensureWindow(ctx, s, kind, w, backend) {
  const key = windowKey(kind, w, backend);
  const had = loaded.windows.get(kind);
  if (had && had.key === key && !ctx.stale(had.info.nll.backend)) return { info: had.info, ran: false };
  await ctx.tryGpu(backend);
  // A refused window throws here and changes nothing: the session keeps its window and its sampling.
  const info = await s.run(windowRequest(w, backend));
  loaded.runs += 1;
  loaded.windows.set(kind, { key, info });
  return { info, ran: true };
}

/**
 * Every head of `layer` of the current window of session `s`: its attention by distance (transferred: the
 * buffers are added to `transfer`), its description, and the distances the charts mark.
 */
function layerProfiles(s, layer, transfer) {
  const profiles = [];
  const descriptions = [];
  let landmarks = [];
  const heads = s.info().config.heads;
  for (let h = 0; h < heads; h++) {
    const p = s.distance_profile(layer, h);
    const d = Float64Array.from(p.distribution);
    profiles.push(d);
    descriptions.push(p.description);
    landmarks = p.landmarks;
    transfer.push(d.buffer);
  }
  return { profiles, descriptions, landmarks };
}

/** Answers one ModelMessage (posting a ModelResult or a ModelError). */
async function answer(ctx, m) {
  const t0 = performance.now();
  const { relattn, memory, post } = ctx;
  let s = null;
  try {
    if (m.colormaps) relattn.set_colormaps(m.colormaps.sequential, m.colormaps.diverging);
    s = await session(relattn, m.model);
    const { info: win, ran } = await ensureWindow(ctx, s, m.model, m.window, m.backend);
    const transfer = [];
    const parts = {};
    if (m.parts.window || ran) {
      const info = s.info();
      const { layers, heads } = info.config;
      const tiles = [];
      for (let l = 0; l < layers; l++) {
        for (let h = 0; h < heads; h++) {
          // Pooled in Rust to at most TILE a side, each pixel its block's largest weight (a thin diagonal stays).
          const cut = s.weights(l, h, TILE);
          const rgba = new Uint8ClampedArray(memory().buffer, s.rgba_ptr(), s.rgba_len()).slice();
          tiles.push({ layer: l, head: h, size: cut.raster_rows, rgba, description: s.head_description(l, h) });
          transfer.push(rgba.buffer);
        }
      }
      Object.assign(parts, { info, window: win, tiles });
    }
    if (m.parts.head || m.parts.window || ran) {
      s.weights(m.layer, m.head, TILE);
      const values = new Float32Array(memory().buffer, s.values_ptr(), s.values_len()).slice();
      transfer.push(values.buffer);
      const { profiles, descriptions, landmarks } = layerProfiles(s, m.layer, transfer);
      Object.assign(parts, { values, profiles, descriptions, landmarks });
    }
    const prediction = s.predict(m.position, 8);
    const { id, model, layer, head, position } = m;
    const key = windowKey(model, m.window, m.backend);
    const backend = ctx.used(m.backend, win.nll.backend);
    post(modelResult({ id, model, key, layer, head, position, ...parts, prediction, ms: performance.now() - t0, backend }), transfer);
  } catch (err) {
    if (ctx.isAbort(err)) throw err;
    // With the model loaded, its pieces, layers and heads come along: the page's choices stay usable.
    post(modelError(m.id, 'model', err, s && s.info()));
  }
}

/**
 * Runs the sampling of SampleMessage `m` (on the CPU; its window on `m.backend` when it must be run first),
 * posting each batch, until done, stopped, superseded, or a window is run again.
 */
async function sample(ctx, m) {
  const { relattn, post } = ctx;
  sampler.id = m.id;
  try {
    const s = await session(relattn, m.model);
    if (sampler.id !== m.id) return;
    await ensureWindow(ctx, s, m.model, m.window, m.backend);
    if (sampler.id !== m.id) return; // stopped or superseded while the window ran
    const at = loaded.runs;
    s.start_sampling(m.sampling);
    for (;;) {
      const r = s.next_tokens(BATCH);
      post(modelSampled(m.id, r));
      if (r.remaining === 0) break;
      await new Promise((ok) => setTimeout(ok, 0));
      if (sampler.id !== m.id || loaded.runs !== at) {
        // Stopped, superseded, or the window was run again: said, so that a page still waiting knows.
        post(modelSampled(m.id, { notes: [], drawn: r.drawn, remaining: r.remaining, ms: 0 }, true));
        return;
      }
    }
  } catch (err) {
    if (ctx.isAbort(err)) throw err;
    post(modelError(m.id, 'model-sample', err));
  }
  if (sampler.id === m.id) sampler.id = 0;
}

/** NllRequest `m`: every model on the same window (start 0, no transposition). */
async function nll(ctx, m) {
  const { relattn, post } = ctx;
  try {
    const series = [];
    await ctx.tryGpu(m.backend);
    for (const kind of modelKinds(relattn)) {
      const s = await session(relattn, kind);
      const r = await s.nll_by_position(windowRequest({ piece: m.piece, start: 0, length: m.length, transpose: 0 }, m.backend));
      series.push({ model: kind, values: r.values, mean: r.mean, ms: r.ms });
      await new Promise((ok) => setTimeout(ok, 0));
    }
    post(nllResult(m.id, m.piece, m.length, series));
  } catch (err) {
    if (ctx.isAbort(err)) throw err;
    post(modelError(m.id, 'model-nll', err));
  }
}

/** The six models' distance profiles for one window and layer, side by side. */
async function compare(ctx, m) {
  const { relattn, post } = ctx;
  try {
    const series = [];
    const transfer = [];
    for (const kind of modelKinds(relattn)) {
      const s = await session(relattn, kind);
      await ensureWindow(ctx, s, kind, m.window, m.backend);
      series.push({ model: kind, ...layerProfiles(s, m.layer, transfer) });
      await new Promise((ok) => setTimeout(ok, 0));
    }
    post(compareResult(m.id, m.layer, m.window, series), transfer);
  } catch (err) {
    if (ctx.isAbort(err)) throw err;
    post(modelError(m.id, 'model-compare', err));
  }
}

async function drain(ctx) {
  queue.busy = true;
  while (queue.pending) {
    const m = queue.pending;
    queue.pending = null;
    await answer(ctx, m);
  }
  queue.busy = false;
}

/**
 * One 'model*' message. ctx = { relattn (the wasm-bindgen module, initialised), memory() (its memory), post(msg,
 * transfer), isAbort(err) }. Requests wait for nothing but their own; only the newest 'model' is answered.
 */
/**
 * One layer of a trained model on a window, as a trace Session (crates/relattn-wasm/src/model.rs ModelSession::trace): the
 * stages of every head of that layer on the real hidden states, for Parameters mode's figures, computed on
 * `backend` (the worker tried WebGPU already when it is asked for).
 * @param {{ kind: string, window: object, layer: number }} source
 */
export async function layerSession(ctx, source, backend) {
  const s = await session(ctx.relattn, source.kind);
  await ensureWindow(ctx, s, source.kind, source.window, backend);
  return s.trace(source.layer, backend);
}

export function onModelMessage(ctx, m) {
  switch (m.kind) {
    case 'model':
      queue.pending = m;
      if (!queue.busy) drain(ctx).catch(ctx.fail);
      return;
    case 'model-sample': sample(ctx, m).catch(ctx.fail); return;
    case 'model-stop': if (sampler.id === m.id) sampler.id = 0; return;
    case 'model-nll': nll(ctx, m).catch(ctx.fail); return;
    case 'model-compare': compare(ctx, m).catch(ctx.fail); return;
    default:
  }
}
