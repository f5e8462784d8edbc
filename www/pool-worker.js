// A helper of the worker's pool (js/worker/pool.js starts it, a module worker with its own wasm instance of the
// worker's compiled module, sent first): it computes its share of a layer held on demand
// (crates/relattn/src/app/pool.rs), or of a comparison of the schemes (crates/relattn/src/app/compare.rs), and
// answers each job of the lead's (crates/relattn/src/protocol/pool.rs: ToHelper in, FromHelper out, built by
// js/shared/protocol.js). One share at a time: a `share` job replaces the one held. A superseded job is not
// answered: the lead terminates the helper and starts a fresh one.
import init, { PoolShare, compare_schemes } from './pkg/relattn.js';
import { sharedReply, rowsReply, cutReply, comparedReply, helperFailed } from './js/shared/protocol.js';

/** The wasm instance: the lead's compiled module, instantiated once it comes (its first message, 'init'). */
let ready = null;
/** @type {PoolShare | null} The share of the lead's latest request. */
let share = null;
/** The job in hand, for a panic's report. */
let job = 0;
/** The wasm instance aborted: this helper answers nothing more (the lead replaces it). */
let dead = false;

// A panic (crates/relattn-wasm/src/lib.rs `start` calls this before the instance aborts).
/** @type {any} */ (self).relattnPanicked = (message) => fail(new Error(`internal error in a pool worker's wasm (${message})`), true);

self.onmessage = (e) => {
  if (e.data.kind === 'init') { ready = init({ module_or_path: e.data.module }); return; }
  ready.then(() => { if (!dead) run(e.data); });
};

/** @param {import('./js/types/protocol').ToHelper} m */
function run(m) {
  job = m.job;
  try {
    switch (m.kind) {
      case 'share': {
        if (share) share.free();
        share = null;
        share = new PoolShare(m.request, m.file ? new Uint8Array(m.file.bytes) : undefined);
        const part = m.heads ? share.heads(m.heads[0], m.heads[1]) : null;
        self.postMessage(sharedReply(m.job, part), part ? [part.q.buffer, part.k.buffer, part.v.buffer, part.z.buffer] : []);
        return;
      }
      case 'rows': {
        const output = held().rows(m.concat, m.rows[0], m.rows[1]);
        self.postMessage(rowsReply(m.job, output), [output.buffer]);
        return;
      }
      case 'cut': {
        const parts = held().cut(m.batch, m.head, m.q, m.k, m.v);
        self.postMessage(cutReply(m.job, parts), parts.flatMap((p) => (p.values ? [p.pooled.buffer, p.values.buffer] : [p.pooled.buffer])));
        return;
      }
      case 'compare': {
        // A share of a "compare schemes" request: the share held (its layer's cuts) stays.
        const schemes = compare_schemes({ options: m.options, tokens: m.tokens }, m.batch, m.head, m.what, m.schemes[0], m.schemes[1]);
        self.postMessage(comparedReply(m.job, schemes), schemes.flatMap((v) => (v.values ? [v.rgba.buffer, v.values.buffer] : [v.rgba.buffer])));
        return;
      }
      default:
    }
  } catch (err) {
    fail(err, err instanceof WebAssembly.RuntimeError);
  }
}

/** The share held, or an error (the lead asks for rows or cuts only after a share). */
function held() {
  if (!share) throw new Error('this pool worker holds no share');
  return share;
}

function fail(err, fatal) {
  if (dead) return;
  dead = fatal;
  self.postMessage(helperFailed(job, err, fatal));
}
