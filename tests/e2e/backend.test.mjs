// The page's backends: WebGPU (SwiftShader's software adapter in headless chromium with
// --enable-unsafe-webgpu) shows the same tooltip numbers as the CPU, falls back to the CPU with the reason
// when the device is lost, a kernel's pipeline fails to build or a layer is over the device's limits (each
// forced through a worker test hook), and chromium without that flag reports the CPU fallback and its reason.
// Run with `make test-e2e` (which builds www/pkg first) or `node --test tests/e2e/backend.test.mjs`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, prepare, startServer, launch, watch, close, hover, readyId, settle } from './harness.mjs';

const REL = 1e-4;

let server;
let base;
const opened = [];
const problems = [];

/** A fresh chromium (own profile) with `extra` flags; its page, with console and page errors collected. */
async function browser(extra) {
  const { context, page, profile } = await launch({ args: extra });
  opened.push({ context, profile });
  watch(page, problems, { failed: false, workers: false });
  return page;
}

before(async () => {
  prepare();
  ({ server, base } = await startServer());
});

after(async () => {
  for (const o of opened) await close(o);
  await close({ server });
});

async function open(page, query) {
  await page.goto(`${base}?${query}`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
}

/**
 * The footer once Auto has decided: a view computed while WebGPU was still being set up (Auto does not wait
 * for it) is provisional, and the page asks for it again by itself when the worker says the set-up has ended
 * (gpu-settled): no control is touched here.
 */
async function afterSetUp(page) {
  await page.waitForFunction(() => !/still being set up/.test(document.getElementById('backend').innerText), null, { timeout: 60000 });
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  return footer(page);
}

const footer = (page) => page.locator('#backend').innerText();

/** The tooltip's numbers at cell (i, j) of a stage, by hovering it. */
async function tip(page, stage, i, j) {
  const { value, content, relative, row } = await hover(page, stage, i, j);
  return { value, content, relative, row };
}

/** Tooltip numbers of a few cells of every (query, key) stage that has them, plus the output. */
async function numbers(page, cells) {
  const names = await page.$$eval('figure.view', (fs) => fs.map((f) => f.dataset.stage));
  const out = {};
  for (const stage of ['c2p', 'p2c', 'relative_logits', 'logits', 'weights', 'output'].filter((s) => names.includes(s))) {
    for (const [i, j] of cells) out[`${stage}(${i},${j})`] = await tip(page, stage, i, j);
  }
  return out;
}

function assertClose(gpu, cpu, label) {
  let compared = 0;
  for (const [cell, g] of Object.entries(gpu)) {
    for (const [k, gv] of Object.entries(g)) {
      if (gv === undefined) continue;
      const a = Number(gv);
      const b = Number(cpu[cell][k]);
      compared += 1;
      if (a === b) continue;
      assert.ok(Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= REL * Math.max(Math.abs(a), Math.abs(b)) + 1e-7,
        `${label}: ${cell}.${k}: WebGPU ${gv}, CPU ${cpu[cell][k]}`);
    }
  }
  assert.ok(compared >= 8, `${label}: only ${compared} numbers compared`);
  return compared;
}

test('WebGPU (SwiftShader): the same tooltip numbers as the CPU; a lost device falls back to the CPU with the reason', async (t) => {
  const page = await browser(['--enable-unsafe-webgpu']);
  await page.goto(base);
  const adapter = await page.evaluate(async () => {
    if (!navigator.gpu) return 'navigator.gpu is missing';
    const a = await navigator.gpu.requestAdapter();
    return a ? `adapter ${a.info ? `${a.info.vendor} ${a.info.architecture}` : ''}` : 'requestAdapter() returned null';
  });
  console.log(`# chromium --enable-unsafe-webgpu: ${adapter}`);
  if (!adapter.startsWith('adapter')) { t.skip(`no WebGPU adapter in headless chromium: ${adapter}`); return; }

  // seed004 and one random Music scenario (its seed printed), on WebGPU and then on the CPU.
  const seed = Math.floor(Math.random() * 1e6);
  console.log(`# random Music scenario: seed ${seed}`);
  const scenarios = [
    ['seed004', 'preset=seed004', [[0, 0], [0, 1], [1, 0], [1, 1], [2, 3], [3, 2]]],
    [`music seed ${seed}`, `method=music&n=24&d_model=32&heads=2&clip=6&seed=${seed}&causal=1&rel_v=0`, [[0, 0], [5, 2], [11, 11], [17, 3], [23, 20], [23, 23]]],
    // The other schemes' kernels: rope.wgsl, and the bias by distance in logits.wgsl.
    [`rope seed ${seed}`, `method=rope&n=20&d_model=32&heads=2&seed=${seed}&rope_layout=half&rope_fraction=0.5&causal=0`, [[0, 0], [3, 7], [19, 2]]],
    [`alibi seed ${seed}`, `method=alibi&n=20&d_model=24&heads=3&seed=${seed}&causal=1`, [[0, 0], [9, 4], [19, 2]]],
    [`t5 seed ${seed}`, `method=t5&n=40&d_model=32&heads=2&seed=${seed}&per_head=1&t5_buckets=8&t5_max_distance=20`, [[0, 0], [3, 30], [39, 2]]],
    // DeBERTa's c2p and p2c (Q·K_rᵀ and K·Q_rᵀ read by row in logits.wgsl), exact and log-bucketed distances.
    [`deberta seed ${seed}`, `method=deberta&n=24&d_model=32&heads=2&seed=${seed}&position_buckets=4&max_relative_positions=8`, [[0, 0], [2, 3], [3, 20], [23, 1]]],
  ];
  for (const [label, query, cells] of scenarios) {
    await open(page, `${query}&backend=webgpu`);
    const f = await footer(page);
    assert.match(f, /^WebGPU: \S/, `${label}: footer says ${f}`);
    assert.equal(await page.locator('#err-backend-mode').innerText(), '');
    assert.match(await page.locator('#timings').innerText(), /trace [\d.]+ ms/);
    assert.match(page.url(), /backend=webgpu/);
    // An old link's per_head=1 (the option is per_head_tables everywhere now) still gives per-head tables.
    if (label.startsWith('t5')) assert.equal(await page.isChecked('#per_head_tables'), true, 'per_head=1 in an old link');
    const gpu = await numbers(page, cells);
    if (label.startsWith('deberta')) assert.ok(['c2p(3,20)', 'p2c(3,20)'].every((c) => c in gpu), `DeBERTa's terms on WebGPU: ${Object.keys(gpu)}`);
    if (label === 'seed004') {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(artifacts, 'backend-webgpu.png') });
      assert.equal(Number(gpu['relative_logits(0,0)'].relative), 44, 'seed004 relative logit (0, 0) on WebGPU');
    }
    await settle(page, () => page.selectOption('#backend-mode', 'cpu'));
    assert.equal(await footer(page), 'CPU (wasm)');
    const cpu = await numbers(page, cells);
    const n = assertClose(gpu, cpu, label);
    console.log(`# ${label}: ${n} tooltip numbers agree within ${REL} relative (footer: ${f})`);
  }

  // A layer held on demand (its whole trace would pass 256 MiB): the forward pass on WebGPU (attend.wgsl), the
  // head's stages on the CPU; the output equals the CPU's.
  const big = 'method=shaw&n=700&d_model=64&heads=16&batch_size=2&clip=8&seed=3&causal=0&rel_v=1';
  await page.goto(`${base}?${big}&backend=webgpu`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 180000 });
  assert.match(await footer(page), /^WebGPU: /);
  assert.match(await page.locator('#timings').innerText(), /forward [\d.]+ ms · stages of the head shown [\d.]+ ms/);
  assert.match(await page.locator('#stage-times').innerText(), /^GPU forward pass fused/);
  const outputOf = () => page.evaluate(() => import('./js/page/state.js').then(({ state: s }) => ({ onDemand: s.current.info.on_demand, out: Array.from(s.current.byName.output.values) })));
  const onGpu = await outputOf();
  await page.selectOption('#backend-mode', 'cpu');
  await page.waitForFunction(() => document.getElementById('backend').innerText.startsWith('CPU') && document.getElementById('busy').hidden, null, { timeout: 60000 });
  const onCpu = await outputOf();
  assert.ok(onGpu.onDemand && onCpu.onDemand && onGpu.out.length === 700 * 64, 'held on demand on both backends');
  const scale = Math.max(1, ...onCpu.out.map(Math.abs));
  const worst = Math.max(...onGpu.out.map((v, k) => Math.abs(v - onCpu.out[k])));
  assert.ok(worst <= REL * scale, `on demand: the WebGPU output differs from the CPU's by ${worst} (scale ${scale})`);
  console.log(`# held on demand (n 700 × 16 heads × batch 2): WebGPU and CPU outputs agree within ${(worst / scale).toExponential(1)} relative`);

  // Auto does not wait for WebGPU: a fresh page's first view comes on the CPU while the device is set up
  // beside it (seconds on SwiftShader)...
  const t0 = Date.now();
  await open(page, 'preset=seed004&backend=auto');
  const first = Date.now() - t0;
  assert.match(await footer(page), /^CPU \(wasm\) — WebGPU is still being set up: this view was computed on the CPU \(it is computed again once the set-up ends\)/);
  console.log(`# Auto with a software adapter: the first view in ${first} ms, on the CPU`);
  // ...and then leaves a software adapter (SwiftShader is WebGPU's fallback adapter) for the CPU, quietly.
  // The set-up ends a few seconds later and the page computes its provisional view again, unasked.
  const before = await readyId(page);
  const software = await afterSetUp(page);
  assert.ok((await readyId(page)) > before, 'the provisional view was computed again');
  assert.match(software, /^CPU \(wasm\) — this browser's WebGPU adapter is a software one .*slower than the CPU: Auto computes on the CPU/);
  assert.equal(await page.locator('#err-backend-mode').innerText(), '', 'Auto: no inline error');
  // WebGPU uses it; after the device is lost, the next compute is on the CPU and says why.
  await open(page, 'preset=seed004&backend=webgpu');
  assert.match(await footer(page), /^WebGPU: /);
  const worker = page.workers()[0];
  assert.ok(worker, 'the page has its worker');
  await worker.evaluate(() => self.onmessage({ data: { kind: 'debug-lose-gpu' } }));
  await page.waitForTimeout(300);
  await settle(page, () => page.selectOption('#preset', 'seed003'));
  const lost = await footer(page);
  assert.match(lost, /^CPU \(wasm\) — .*(lost|WebGPU)/, `after the device is lost: ${lost}`);
  assert.ok((await page.locator('figure.view').count()) >= 8, 'the view stays on screen');
  console.log(`# after device loss: ${lost}`);
});

/** Figures whose canvas has no two different pixels (a blank view). */
const blankCanvases = (page) => page.$$eval('figure.view', (fs) => fs.filter((f) => {
  const c = f.querySelector('canvas');
  if (!c || !c.width || !c.height) return true;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 4; i < d.length; i += 4) if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return false;
  return true;
}).map((f) => f.dataset.stage));

test('WebGPU forced faults (test hooks): a failed pipeline creation and a buffer over the limits fall back to the CPU with the reason', async (t) => {
  const page = await browser(['--enable-unsafe-webgpu']);
  await page.goto(base);
  const has = await page.evaluate(async () => !!(navigator.gpu && (await navigator.gpu.requestAdapter())));
  if (!has) { t.skip('no WebGPU adapter in headless chromium'); return; }

  // A buffer over the device's limits: the context pretends 1 KiB per binding; seed004's (n, d_model)
  // projection needs more, so the layer is refused before anything is allocated and the CPU computes it.
  await open(page, 'preset=seed004&backend=webgpu');
  assert.match(await footer(page), /^WebGPU: /);
  let worker = page.workers()[0];
  assert.ok(worker, 'the page has its worker');
  await worker.evaluate(() => self.onmessage({ data: { kind: 'debug-gpu-limit', bytes: 1024 } }));
  await settle(page, () => page.selectOption('#preset', 'seed003'));
  const over = await footer(page);
  assert.match(over, /^CPU \(wasm\) — WebGPU cannot compute this layer: .*projection needs \d+ bytes; this device allows 1024 bytes per buffer/, `over the limits: ${over}`);
  assert.ok((await page.locator('figure.view').count()) >= 8, 'the view stays on screen');
  assert.deepEqual(await blankCanvases(page), [], 'no blank canvas after the over-limit fallback');
  console.log(`# buffer over the limits: ${over}`);

  // A failed pipeline creation: the context is rebuilt with softmax.wgsl broken; every later compute is
  // on the CPU with the pipeline's error.
  await open(page, 'preset=seed004&backend=webgpu');
  assert.match(await footer(page), /^WebGPU: /);
  worker = page.workers().at(-1);
  await worker.evaluate(() => self.onmessage({ data: { kind: 'debug-break-pipeline', kernel: 'softmax' } }));
  await settle(page, () => page.selectOption('#preset', 'seed003'));
  const broken = await footer(page);
  assert.match(broken, /^CPU \(wasm\) — WebGPU unavailable: the compute pipeline of softmax\.wgsl failed: \S/, `pipeline failure: ${broken}`);
  assert.ok((await page.locator('figure.view').count()) >= 8, 'the view stays on screen');
  assert.deepEqual(await blankCanvases(page), [], 'no blank canvas after the pipeline fallback');
  // Backend = WebGPU: the reason is also shown under the control.
  assert.match(await page.locator('#err-backend-mode').innerText(), /pipeline of softmax\.wgsl failed: .*computed on the CPU instead/);
  console.log(`# failed pipeline creation: ${broken}`);
});

test('chromium without --enable-unsafe-webgpu: the CPU fallback and its reason; Backend = WebGPU shows it inline', async () => {
  const page = await browser([]);
  await open(page, 'preset=seed004');
  const f = await afterSetUp(page);
  assert.match(f, /^CPU \(wasm\) — WebGPU unavailable: \S/, f);
  console.log(`# without the flag: ${f}`);
  assert.equal(await page.locator('#err-backend-mode').innerText(), '', 'Auto: no inline error');
  await settle(page, () => page.selectOption('#backend-mode', 'webgpu'));
  assert.match(await page.locator('#err-backend-mode').innerText(), /WebGPU unavailable: .*computed on the CPU instead/);
  assert.ok((await page.locator('figure.view').count()) >= 8, 'the CPU view is shown');
  const t = await tip(page, 'relative_logits', 0, 0);
  assert.equal(Number(t.relative), 44);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'backend-cpu-fallback.png') });
  // Keyboard-reachable and labelled.
  assert.equal(await page.locator('label[for="backend-mode"]').innerText(), 'Backend');
  await page.focus('#backend-mode');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'backend-mode');
  assert.match(page.url(), /backend=webgpu/);
});

test('no page errors or console errors on either backend', () => {
  assert.deepEqual(problems, []);
});
