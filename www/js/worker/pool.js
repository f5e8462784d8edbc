// The worker's pool of helpers (../../pool-worker.js, each a module worker with its own wasm instance: no shared
// memory, no special server headers): a layer held on demand and computed on the CPU is split among them — its
// heads, then its query rows in whole blocks — and gathered here, in the lead's wasm, into the session the worker
// holds, bit for bit the one worker's (crates/relattn/src/app/pool.rs says how). Its messages are
// crates/relattn/src/protocol/pool.rs's, built by ../shared/protocol.js. cancel() stops every helper still busy
// with a superseded request (terminated, and a fresh one started in its place).
import { initJob, shareJob, rowsJob, cutJob, typedError } from '../shared/protocol.js';
/** @typedef {import('../types/protocol').ComputeRequest} ComputeRequest */
/** @typedef {import('../types/protocol').FromHelper} FromHelper */

/** A helper: its Worker and the job it has in hand (resolve, reject), or null when idle. */
class Helper {
  constructor() {
    this.worker = new Worker(new URL('../../pool-worker.js', import.meta.url), { type: 'module' });
    /** @type {{ job: number, ok: (m: FromHelper) => void, fail: (e: Error) => void } | null} */
    this.busy = null;
    /** Its wasm instance aborted: ensure() replaces it. */
    this.dead = false;
    this.worker.onmessage = (e) => this.answered(e.data);
    this.worker.onerror = (e) => { e.preventDefault(); this.settle(null, new Error(`a pool worker failed: ${e.message || e}`)); };
    this.worker.postMessage(initJob(pool.module));
  }

  /** @param {FromHelper} m */
  answered(m) {
    if (m.kind === 'failed' && m.fatal) this.dead = true;
    if (!this.busy || m.job !== this.busy.job) return;
    if (m.kind === 'failed') this.settle(null, typedError(m.error.field, m.error.kind, m.error.message));
    else this.settle(m, null);
  }

  settle(m, err) {
    const b = this.busy;
    this.busy = null;
    if (!b) return;
    if (err) b.fail(err); else b.ok(m);
  }

  /** Sends `msg` (a ToHelper of job `job`; `transfer`: its buffers to move); resolves to the helper's answer. */
  ask(job, msg, transfer = []) {
    return new Promise((ok, fail) => {
      this.busy = { job, ok, fail };
      this.worker.postMessage(msg, transfer);
    });
  }
}

// The pool's state: its helpers, and the generation that a layer's shares belong to (a cancel or a resize starts
// a new one: helpers of an older one hold no share of the layer shown).
const pool = {
  /** @type {WebAssembly.Module | null} The worker's compiled wasm, which every helper instantiates (usePool). */
  module: null,
  /** @type {Helper[]} */
  helpers: [],
  generation: 0,
  job: 0,
};

/** The worker's compiled wasm module, which the helpers instantiate: compiled once, its optimised code shared. */
export function usePool(module) {
  pool.module = module;
}

/** An Error saying a request was superseded (the worker posts nothing for it). */
function superseded() {
  return Object.assign(new Error('superseded'), { superseded: true });
}

/** Whether `err` is a share stopped by cancel(). */
export function isSuperseded(err) {
  return Boolean(err && err.superseded);
}

/** At least `size` helpers (started now when there are fewer), none of them dead (a dead one is replaced). */
function ensure(size) {
  pool.helpers = pool.helpers.map((h) => (h.dead ? (h.worker.terminate(), new Helper()) : h));
  while (pool.helpers.length < size) pool.helpers.push(new Helper());
}

/** Stops every helper busy with a share (a superseded request): each is terminated and replaced by a fresh one,
 *  and its share fails as superseded. */
export function cancel() {
  let stopped = false;
  pool.helpers = pool.helpers.map((h) => {
    if (!h.busy) return h;
    stopped = true;
    h.worker.terminate();
    h.settle(null, superseded());
    return new Helper();
  });
  if (stopped) pool.generation += 1;
}

/** Whether a helper is computing now. */
export function busy() {
  return pool.helpers.some((h) => h.busy);
}

/**
 * The session of compute request `msg`'s layer computed by `workers` helpers, or null when one worker computes it
 * (fewer than two workers asked for, a whole trace, the GPU, a trained model's layer). `relattn` is the wasm
 * module; `progress(text)` tells the page what is being computed. The session remembers its shares
 * (poolOf(session)) for its cuts.
 * @param {any} relattn @param {ComputeRequest} msg @param {number} workers @param {(text: string) => void} progress
 */
export async function pooledLayer(relattn, msg, workers, progress) {
  if (workers < 2 || msg.model) return null;
  const plan = await relattn.pool_plan(msg.request, msg.file ? new Uint8Array(msg.file.bytes) : undefined);
  if (!plan) return null;
  try {
    /** @type {[number, number][]} */
    const heads = plan.head_shares(workers);
    /** @type {[number, number][]} */
    const rows = plan.row_shares(workers);
    ensure(Math.max(heads.length, rows.length));
    // The helpers take this layer's share from now on: an older session's cuts are its own from now on.
    const generation = ++pool.generation;
    const helpers = pool.helpers.slice(0, Math.max(heads.length, rows.length));
    progress(`computing the layer on ${helpers.length} workers: heads…`);
    const file = msg.file ? { id: msg.file.id, bytes: msg.file.bytes } : null;
    const shared = await Promise.all(helpers.map((h, k) => h.ask(++pool.job, shareJob(pool.job, msg.request, file, heads[k] || null))));
    shared.forEach((m, k) => { if (m.kind === 'shared' && m.part) plan.add_heads(heads[k][0], heads[k][1], m.part.q, m.part.k, m.part.v, m.part.z); });
    progress(`computing the layer on ${helpers.length} workers: the output…`);
    const outputs = await Promise.all(rows.map(([a, b], i) => {
      const concat = plan.concat_rows(a, b);
      return helpers[i].ask(++pool.job, rowsJob(pool.job, concat, [a, b]), [concat.buffer]);
    }));
    outputs.forEach((m, i) => { if (m.kind === 'rows') plan.add_output(rows[i][0], rows[i][1], m.output); });
    const session = plan.finish();
    shares.set(session, { generation, helpers: helpers.slice(0, rows.length) });
    return session;
  } catch (err) {
    plan.free();
    throw err;
  }
}

/** The helpers that hold a pooled session's rows, by session (a WeakMap: a freed session's entry goes with it). */
const shares = new WeakMap();

/**
 * Has the stages of (batch, head) of `session` cut by the helpers holding its rows (each sent the head's columns of
 * the projections; `relattn`: the wasm module), merged into it (the next select
 * colours them); nothing when they are cut already, or when the session is not a pool's or its helpers were
 * replaced since (then the session computes them itself).
 * @param {any} relattn @param {any} session @param {number} batch @param {number} head @param {string} headScale
 */
export async function pooledCut(relattn, session, batch, head, headScale) {
  const s = shares.get(session);
  if (!s || s.generation !== pool.generation || session.is_cut(batch, head, headScale)) return;
  const columns = relattn.pool_head_columns(session, head);
  const cuts = await Promise.all(s.helpers.map((h) => h.ask(++pool.job, cutJob(pool.job, batch, head, columns))));
  session.begin_parts(batch, head);
  for (const m of cuts) {
    if (m.kind !== 'cut') continue;
    m.parts.forEach((p, k) => session.add_part(k, p.pooled, p.lo, p.hi, p.values));
  }
}
