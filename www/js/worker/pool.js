// The worker's pool (../../pool-worker.js helpers, each a module worker with its own wasm instance: no shared
// memory, no special server headers): a layer held on demand and computed on the CPU is split among the lead (this
// worker, which takes the first share itself) and its helpers — its heads, then its query rows in whole blocks — and
// gathered here, in the lead's wasm, into the session the worker holds, bit for bit the one worker's
// (crates/relattn/src/app/pool.rs says how); a comparison of the schemes is split by scheme. Its messages are
// crates/relattn/src/protocol/pool.rs's, built by ../shared/protocol.js. cancel() stops a superseded request's
// shares: every helper still busy with one (terminated, and a fresh one started in its place) and the lead's own (at
// its next head or block of rows: it yields to its messages between them).
import { initJob, shareJob, rowsJob, cutJob, compareJob, typedError } from '../shared/protocol.js';
/** @typedef {import('../types/protocol').ComputeRequest} ComputeRequest */
/** @typedef {import('../types/protocol').FromHelper} FromHelper */
/** @typedef {import('../types/protocol').SchemesRequest} SchemesRequest */

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
  /** @type {{ stopped: boolean } | null} The lead's own share in hand (cancel() marks it stopped). */
  lead: null,
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

/** Stops a superseded request's shares: every helper busy with one is terminated and replaced by a fresh one, its
 *  share failing as superseded, and the lead's own stops at its next step (leadStep). */
export function cancel() {
  let stopped = false;
  pool.helpers = pool.helpers.map((h) => {
    if (!h.busy) return h;
    stopped = true;
    h.worker.terminate();
    h.settle(null, superseded());
    return new Helper();
  });
  if (pool.lead) {
    pool.lead.stopped = true;
    stopped = true;
  }
  if (stopped) pool.generation += 1;
}

/** Whether a share is being computed now (a helper's, or the lead's own). */
export function busy() {
  return Boolean(pool.lead) || pool.helpers.some((h) => h.busy);
}

// The lead's yield between the steps of its own share: a message through a channel of its own comes after every
// message already sent to this worker (a newer request, which cancels), and far sooner than a timer.
const steps = new MessageChannel();

/** Lets this worker's messages in, then fails as superseded if cancel() stopped the lead's share meanwhile.
 *  @param {{ stopped: boolean }} lead */
async function leadStep(lead) {
  await new Promise((ok) => { steps.port1.onmessage = ok; steps.port2.postMessage(null); });
  if (lead.stopped) throw superseded();
}

/** Runs `work(lead)`, the lead's part of a pooled request, with pool.lead set while it runs (busy()).
 *  @template T @param {(lead: { stopped: boolean }) => Promise<T>} work @returns {Promise<T>} */
async function asLead(work) {
  const lead = { stopped: false };
  pool.lead = lead;
  try {
    return await work(lead);
  } finally {
    if (pool.lead === lead) pool.lead = null;
  }
}

/** `promise`, marked handled now: the lead awaits it after its own steps, and a share superseded meanwhile
 *  rejects it before then. @template T @param {Promise<T>} promise */
function later(promise) {
  promise.catch(() => {});
  return promise;
}

/**
 * The session of compute request `msg`'s layer computed by `workers` workers (the lead and workers − 1 helpers), or
 * null when one worker computes it (fewer than two workers asked for or given a share, a whole trace, the GPU, a
 * trained model's layer). `relattn` is the wasm module; `progress(text)` tells the page what is being computed. The
 * session remembers its shares (shares.get(session)) for its cuts.
 * @param {any} relattn @param {ComputeRequest} msg @param {number} workers @param {(text: string) => void} progress
 */
export async function pooledLayer(relattn, msg, workers, progress) {
  if (workers < 2 || msg.model) return null;
  const plan = await relattn.pool_plan(msg.request, msg.file ? new Uint8Array(msg.file.bytes) : undefined);
  if (!plan) return null;
  /** @type {[number, number][]} */
  const heads = plan.head_shares(workers);
  /** @type {[number, number][]} */
  const rows = plan.row_shares(workers);
  const count = Math.max(heads.length, rows.length);
  if (count < 2) {
    plan.free();
    return null;
  }
  try {
    return await asLead(async (lead) => {
      ensure(count - 1);
      // The helpers take this layer's shares from now on: an older session's cuts are its own from now on.
      const generation = ++pool.generation;
      // Helper k takes share k + 1, the lead the first: the helpers are sent theirs before the lead builds its
      // scenario, so they build theirs meanwhile.
      const helpers = pool.helpers.slice(0, count - 1);
      progress(`computing the layer on ${count} workers: heads…`);
      const file = msg.file ? { id: msg.file.id, bytes: msg.file.bytes } : null;
      const shared = later(Promise.all(helpers.map((h, k) => h.ask(++pool.job, shareJob(pool.job, msg.request, file, heads[k + 1] || null)))));
      plan.build();
      plan.project_heads(heads[0][0], heads[0][1]);
      for (let h = heads[0][0]; h < heads[0][1]; h++) {
        await leadStep(lead);
        plan.attend_head(h);
      }
      (await shared).forEach((m, k) => { if (m.kind === 'shared' && m.part) plan.add_heads(heads[k + 1][0], heads[k + 1][1], m.part.q, m.part.k, m.part.v, m.part.z); });
      progress(`computing the layer on ${count} workers: the output…`);
      const outputs = later(Promise.all(rows.slice(1).map(([a, b], k) => {
        const concat = plan.concat_rows(a, b);
        return helpers[k].ask(++pool.job, rowsJob(pool.job, concat, [a, b]), [concat.buffer]);
      })));
      await leadStep(lead);
      plan.compute_output(rows[0][0], rows[0][1]);
      (await outputs).forEach((m, k) => { if (m.kind === 'rows') plan.add_output(rows[k + 1][0], rows[k + 1][1], m.output); });
      const session = plan.finish();
      shares.set(session, { generation, helpers: helpers.slice(0, rows.length - 1), own: rows[0] });
      return session;
    });
  } catch (err) {
    plan.free();
    throw err;
  }
}

/** The shares of a pooled session's rows, by session (a WeakMap: a freed session's entry goes with it): the
 *  helpers holding rows after the lead's, and the lead's own rows `own` [a, b]. */
const shares = new WeakMap();

/**
 * Has the stages of (batch, head) of `session` cut by the workers holding its rows (the lead's own a few blocks at a
 * time, pool_step_rows; each helper sent the head's columns of the projections; `relattn`: the wasm module), merged
 * into it (the next select colours them); nothing when they are cut already, or when the session is not a pool's or its helpers
 * were replaced since (then the session computes them itself).
 * @param {any} relattn @param {any} session @param {number} batch @param {number} head @param {string} headScale
 */
export async function pooledCut(relattn, session, batch, head, headScale) {
  const s = shares.get(session);
  if (!s || s.generation !== pool.generation || session.is_cut(batch, head, headScale)) return;
  const columns = s.helpers.length ? relattn.pool_head_columns(session, head) : null;
  await asLead(async (lead) => {
    const cuts = later(Promise.all(s.helpers.map((h) => h.ask(++pool.job, cutJob(pool.job, batch, head, columns)))));
    session.begin_parts(batch, head);
    try {
      const [a, b] = s.own;
      const step = relattn.pool_step_rows(); // whole blocks
      for (let r = a; r < b; r += step) {
        await leadStep(lead);
        session.add_rows(r, Math.min(r + step, b));
      }
      for (const m of await cuts) {
        if (m.kind !== 'cut') continue;
        m.parts.forEach((p, k) => session.add_part(k, p.pooled, p.first_row, p.lo, p.hi, p.values));
      }
    } catch (err) {
      session.drop_parts(); // a part of the rows: the session computes this head itself when it is shown again
      throw err;
    }
  });
}

/**
 * The comparison of the schemes page request `m` asks for (`relattn`: the wasm module), its schemes split among
 * `workers` workers (the lead the first range, each helper another: crates/relattn/src/app/compare.rs
 * compare_range; each scheme's view is its own, so the views are the one worker's whichever computes them). The
 * lead alone when fewer than two workers are asked for or the pool is busy (a layer's shares in flight). A helper's
 * range superseded meanwhile (a newer compute request cancels the pool's work) or failed is computed by the lead, so
 * the comparison is always answered.
 * @param {any} relattn @param {SchemesRequest} m @param {number} workers
 */
export async function pooledCompare(relattn, m, workers) {
  const request = { options: m.options, tokens: m.tokens };
  /** @param {[number, number] | null} range */
  const views = (range) => relattn.compare_schemes(request, m.batch, m.head, m.what, range ? range[0] : undefined, range ? range[1] : undefined);
  if (workers < 2 || busy()) return views(null);
  /** @type {[number, number][]} */
  const ranges = relattn.compare_shares(request, workers);
  if (ranges.length < 2) return views(null);
  return asLead(async () => {
    ensure(ranges.length - 1);
    const asked = pool.helpers.slice(0, ranges.length - 1).map((h, k) => later(h.ask(++pool.job, compareJob(pool.job, m, ranges[k + 1]))));
    const all = [views(ranges[0])];
    for (const [k, reply] of asked.entries()) {
      all.push(await reply.then((r) => (r.kind === 'compared' ? r.schemes : views(ranges[k + 1])), () => views(ranges[k + 1])));
    }
    return all.flat();
  });
}
