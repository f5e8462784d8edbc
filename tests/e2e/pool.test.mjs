// The page on every core (#53 item 1): a layer held on demand, computed by the worker's pool of helpers (each its own
// wasm instance), is bit for bit the one worker's — every stage's values and pixels, its colour range, the output —
// for every scheme, bidirectional and causal, with workers that split heads and query rows unevenly; and a newer
// request stops the helpers still busy with a superseded one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { prepare, startServer, launch, watch, settle, close } from './harness.mjs';

let server;
let base;
let context;
const problems = [];

before(async () => {
  prepare();
  ({ server, base } = await startServer());
  ({ context } = await launch());
});

after(() => close({ context, server }));

/** The smallest layers held on demand (a whole trace past 256 MiB): n 1024, 8 heads, narrow heads so it is quick. */
// max_position: BERT relative's table covers the 1024 positions (the other schemes do not read it).
const LAYER = 'n=1024&d_model=64&heads=8&clip=5&max_position=1024&backend=cpu';

/** A fingerprint of every stage of the result shown: name, shape, colour range, FNV-1a of its values' and pixels' bytes. */
async function fingerprint(p) {
  return p.evaluate(async () => {
    const { state } = await import('/js/page/state.js');
    const fnv = (bytes) => { let h = 0x811c9dc5; for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0; return h; };
    const bytes = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    return state.current.stages.map((s) => `${s.name} ${s.rows}×${s.cols} [${s.lo}, ${s.hi}] values ${s.values ? fnv(bytes(s.values)) : 'none'} pixels ${fnv(bytes(s.rgba))}`);
  });
}

/** The page on `query`, once its result is drawn and nothing is computing; its fingerprint, and the busy lines seen. */
async function shown(query) {
  const p = await context.newPage();
  watch(p, problems);
  const lines = [];
  await p.exposeFunction('busyLine', (t) => lines.push(t));
  await p.addInitScript(() => {
    new MutationObserver(() => { const b = document.getElementById('busy-text'); if (b) window.busyLine(b.textContent); })
      .observe(document, { subtree: true, childList: true, characterData: true });
  });
  await settle(p, () => p.goto(`${base}?${query}`), 120000);
  const print = await fingerprint(p);
  const info = await p.evaluate(async () => (await import('/js/page/state.js')).state.current.info.on_demand);
  await p.close();
  return { print, lines, onDemand: info };
}

for (const method of ['shaw', 'music', 'rope', 'alibi', 't5', 'absolute', 'deberta', 'bert_relative', 'transformer_xl']) {
  test(`${method}: every stage of heads 0 and 5 on 2 and 3 workers equals one worker's, bit for bit`, async () => {
    for (const [causal, head] of [[0, 0], [1, 5]]) {
      const query = `method=${method}&causal=${causal}&head=${head}&${LAYER}`;
      const one = await shown(`${query}&workers=1`);
      assert.ok(one.onDemand, `${query}: the layer is held on demand`);
      assert.ok(!one.lines.some((l) => /workers/.test(l)), `one worker computed it alone: ${one.lines.join(' | ')}`);
      for (const workers of [2, 3]) {
        const pooled = await shown(`${query}&workers=${workers}`);
        assert.ok(pooled.lines.some((l) => l.includes(`on ${workers} workers`)), `${workers} workers computed it: ${pooled.lines.join(' | ')}`);
        assert.deepEqual(pooled.print, one.print, `${query}: ${workers} workers against one`);
      }
    }
    assert.deepEqual(problems, []);
  });
}

test('another head of a pooled layer is cut by its helpers, equal to one worker; a newer request stops the helpers busy with the older', async () => {
  const p = await context.newPage();
  watch(p, problems);
  const helpers = [];
  p.on('worker', (w) => { if (w.url().endsWith('/pool-worker.js')) helpers.push(w); });
  await settle(p, () => p.goto(`${base}?method=rope&head=0&${LAYER}&workers=2`), 120000);
  assert.equal(helpers.length, 1, 'one helper started: the lead takes the first share itself');
  // Head 6 of the same layer: no new layer, the helpers cut it; the same as one worker's head 6.
  await settle(p, () => p.selectOption('#head', '6'), 120000);
  const pooledHead = await fingerprint(p);
  const one = await shown(`method=rope&head=6&${LAYER}&workers=1`);
  assert.deepEqual(pooledHead, one.print, 'head 6 cut by the helpers');
  // A large layer (seconds of work on the lead and its helper), superseded while they compute it: the helper is
  // terminated and replaced (Chromium reports no close of a worker's own workers: the fresh one is counted), the
  // lead stops at its next step, and the newer request is answered.
  await settle(p, async () => {
    await p.evaluate(() => {
      for (const [id, v] of [['n', '8192'], ['d_model', '512']]) { const el = document.getElementById(id); el.value = v; el.dispatchEvent(new Event('input')); }
    });
    await p.waitForFunction(() => /on 2 workers/.test(document.getElementById('busy-text').textContent), null, { timeout: 60000 });
    await p.evaluate(() => { const el = document.getElementById('n'); el.value = '1024'; el.dispatchEvent(new Event('input')); });
  }, 120000);
  assert.equal(helpers.length, 2, 'the helper busy with it was replaced by a fresh one (js/worker/pool.js cancel)');
  assert.equal(await p.evaluate(async () => (await import('/js/page/state.js')).state.current.info.options.n), 1024);
  await p.close();
  assert.deepEqual(problems, []);
});

/** The page `p`'s comparison of the schemes on `options` (those shown when null; head 1), asked of its worker as the
 *  compare view asks: a fingerprint of each scheme's view (FNV-1a of its pixels', values' and profile's bytes). With
 *  `seed`, a compute request of that seed is sent right after the comparison is asked, before it is answered. */
async function compared(p, what, options = null, seed = null) {
  return p.evaluate(async ([what, given, seed]) => {
    const { askSchemes, request } = await import('/js/page/worker-client.js');
    const { state } = await import('/js/page/state.js');
    const fnv = (bytes) => { let h = 0x811c9dc5; for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0; return h; };
    const bytes = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const asked = askSchemes(given || state.current.info.options, state.current.info.tokens, 0, 1, what);
    if (seed !== null) {
      document.getElementById('seed').value = String(seed);
      request();
    }
    const schemes = await asked;
    return schemes.map((s) => `${s.method} ${s.meta.name} pixels ${fnv(bytes(s.rgba))} values ${s.values ? fnv(bytes(s.values)) : 'none'} profile ${fnv(bytes(new Float32Array(s.profile)))}`);
  }, [what, options, seed]);
}

test('a comparison of the schemes is shared by the helpers, equal to one worker\'s bit for bit, and answered when a newer request cancels them', async () => {
  const one = await context.newPage();
  watch(one, problems);
  await settle(one, () => one.goto(`${base}?method=shaw&${LAYER}&workers=1`), 120000);
  const want = { weights: await compared(one, 'weights'), term: await compared(one, 'term') };
  const options = await one.evaluate(async () => (await import('/js/page/state.js')).state.current.info.options);
  await one.close();
  assert.equal(want.weights.length, 9, 'every scheme compared');

  const p = await context.newPage();
  watch(p, problems);
  const helpers = [];
  p.on('worker', (w) => { if (w.url().endsWith('/pool-worker.js')) helpers.push(w); });
  await settle(p, () => p.goto(`${base}?method=shaw&${LAYER}&workers=3`), 120000);
  assert.equal(helpers.length, 2);
  // Count each helper's answers to comparisons: the helpers computed their schemes, not the lead alone.
  const countAnswers = (w) => w.evaluate(() => {
    const post = self.postMessage.bind(self);
    self.comparedAnswers = 0;
    self.postMessage = (m, t) => { if (m && m.kind === 'compared') self.comparedAnswers += 1; post(m, t); };
  });
  await Promise.all(helpers.map(countAnswers));
  for (const what of ['weights', 'term']) assert.deepEqual(await compared(p, what), want[what], `${what} on 3 workers against one`);
  assert.deepEqual(await Promise.all(helpers.map((w) => w.evaluate(() => self.comparedAnswers))), [2, 2], 'each helper computed its schemes twice');
  // A newer compute request (another seed), sent right after a comparison, comes while the comparison's helpers
  // are busy (the lead takes it between its own schemes and their answers): it cancels them (js/worker/pool.js
  // cancel: terminated, and fresh ones started), the lead computes their schemes itself, so the comparison is
  // still answered, the same; the newer request is answered too.
  const raced = await compared(p, 'weights', options, 77);
  assert.deepEqual(raced, want.weights, 'the comparison whose helpers were cancelled');
  await p.waitForFunction(async () => (await import('/js/page/state.js')).state.current?.info.options.seed === 77 && document.getElementById('busy').hidden, null, { timeout: 60000 });
  assert.equal(helpers.length, 4, 'both helpers busy with the comparison were replaced');
  await p.close();
  assert.deepEqual(problems, []);
});
