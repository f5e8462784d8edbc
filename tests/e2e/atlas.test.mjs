// The head atlas on the page: an atlas file (written here as relattn.atlas saves one: 2 layers × 4 heads, layer 1
// captured) opened by the file control shows its grid of tiles; the metric select recolours it; a tile's tooltip
// says its metrics; a captured tile opens its layer's stages at that head, an uncaptured one says how to capture
// it; the exports (SVG, PNG, slide, one self-contained HTML file); a bad atlas is refused by its member, keeping
// what the page shows; and the real atlas of a tiny random Llama (tests/fixtures), when it is there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, artifacts, prepare, startServer, launch, watch, close, npyF32, npyU8, writeZip, dropFile, cli, readyId } from './harness.mjs';
import { execFileSync } from 'node:child_process';

let server;
let base;
let context;
let page;
let profile;
let work;
const problems = [];
// Failed blob: requests (downloads) are not counted; failed requests to the server and any outside request are.
const watchOptions = { failed: (url) => !url.startsWith('blob:'), outside: true };

const METRICS = ['mean_distance', 'entropy', 'uniform_entropy', 'previous_token', 'first_token', 'duplicate_token', 'induction', 'position_share', 'offset_share'];
const [L, H, N] = [2, 4, 6];
/** A large model's atlas: 32 layers × 32 heads, prompts of up to 256 tokens. */
const BIG = { layers: 32, heads: 32, n: 256 };
const fill = (len, f) => Array.from({ length: len }, (_, k) => f(k));
/** Metric k of row c, head h: varied, in 0.05 … 0.95 (the uniform entropy 2 nats, above every entropy). */
const metricValue = (k, c, h) => (METRICS[k] === 'uniform_entropy' ? 2 : ((k * 7 + c * 4 + h) % 10) / 10 + 0.05);

/** An atlas's members as relattn.atlas saves them; `describe` may change its description, `edit` replace or
 *  remove any member. */
function atlasFile(edit = () => {}, describe = () => {}) {
  const description = {
    format: 'relattn atlas', version: 1, model: 'tiny-llama', family: 'llama',
    layers: fill(L, (c) => ({ part: 'decoder', layer: c, method: 'rope', heads: H, kv_heads: 2, causal: true })),
    metrics: METRICS,
    prompts: [{ n: N, tokens: ['<s>', 'The', 'cat', 'sat', 'on', 'mats'] }],
    induction: { n: 64, seed: 0 }, offsets: N, captured: [1], notes: ['written by tests/e2e/atlas.test.mjs'],
  };
  describe(description);
  const m = fill(METRICS.length * L * H, (i) => metricValue(Math.floor(i / (L * H)), Math.floor(i / H) % L, i % H));
  // Causal: offsets after 0 (index N − 1) are seen by no query.
  const offset = (i) => (i % (2 * N - 1)) - (N - 1);
  const members = {
    'atlas.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
    'metrics.npy': npyF32([METRICS.length, L, H], m),
    'metrics_std.npy': npyF32([METRICS.length, L, H], m.map((v) => v / 10)),
    'profile.npy': npyF32([L, H, 2 * N - 1], fill(L * H * (2 * N - 1), (i) => (offset(i) > 0 ? NaN : (1 + ((offset(i) + Math.floor(i / (2 * N - 1))) % 3 + 3) % 3) / 10))),
    'term.npy': npyF32([L, H, 2 * N - 1], fill(L * H * (2 * N - 1), (i) => (offset(i) > 0 ? NaN : 0.5 * offset(i)))),
    'kv_head.npy': npyF32([L, H], fill(L * H, (i) => Math.floor((i % H) / 2))),
    ...captureOf(1),
  };
  edit(members);
  return writeZip(members);
}

/** Row c's capture members (layer{c}.*), as features.test.mjs's capture: 4 query heads sharing 2 K/V heads, the
 *  model's own rotary cos and sin (half-split), a padded key, the description. */
function captureOf(c) {
  const [n, d, dh, kv] = [N, 16, 4, 2];
  const angle = (mm, p) => mm * 0.5 ** (2 * p);
  const description = {
    options: { method: 'rope', heads: 4, causal: true, rope_layout: 'half' },
    model: 'tiny-llama', family: 'llama', part: 'decoder', layer: c,
    tokens: [['<s>', 'The', 'cat', 'sat', 'on', 'mats']],
    notes: ['Rotary in the half-split layout (rotate_half) with the model\'s own cos and sin.'],
  };
  return {
    [`layer${c}.x.npy`]: npyF32([1, n, d], fill(n * d, (k) => Math.sin(k * 1.3))),
    [`layer${c}.w_k.npy`]: npyF32([d, kv * dh], fill(d * kv * dh, (k) => Math.cos(k * 0.7) * 0.8)),
    [`layer${c}.w_v.npy`]: npyF32([d, kv * dh], fill(d * kv * dh, (k) => Math.sin(k * 0.4))),
    [`layer${c}.rope_cos.npy`]: npyF32([n, dh / 2], fill(n * dh / 2, (k) => Math.cos(angle(Math.floor(k / 2), k % 2)))),
    [`layer${c}.rope_sin.npy`]: npyF32([n, dh / 2], fill(n * dh / 2, (k) => Math.sin(angle(Math.floor(k / 2), k % 2)))),
    [`layer${c}.key_mask.npy`]: npyF32([1, n], [1, 1, 1, 1, 1, 0]),
    [`layer${c}.capture.npy`]: npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
  };
}

before(async () => {
  prepare();
  work = mkdtempSync(join(tmpdir(), 'relattn-e2e-atlas-'));
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch({ acceptDownloads: true }));
  watch(page, problems, watchOptions);
  await page.goto(`${base}?preset=seed004`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(async () => {
  await close({ context, server, profile });
  if (work) rmSync(work, { recursive: true, force: true });
  assert.deepEqual(problems, [], 'console errors, page errors or failed requests');
});
const atlasReady = () => page.evaluate(() => Number(document.getElementById('atlas').dataset.ready || 0));

/** Opens atlas file `path` by the file control; resolves once its grid is drawn. */
async function openAtlas(path) {
  const b = await atlasReady();
  await page.setInputFiles('#tensors', path);
  await page.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready || 0) > x && document.getElementById('busy').hidden, b, { timeout: 30000 });
}

/** The page point at the middle of tile (row, head) of the grid. */
async function tilePoint(row, head) {
  const c = page.locator('#atlas-canvas');
  await c.scrollIntoViewIfNeeded();
  const box = await c.boundingBox();
  const t = await c.evaluate((el, [r, h]) => {
    const found = el.tiles.find((x) => x.row === r && x.head === h);
    return { ...found, width: el.width };
  }, [row, head]);
  const k = box.width / t.width;
  return [box.x + (t.x + t.w / 2) * k, box.y + (t.y + t.h / 2) * k];
}

async function downloadOf(act) {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }), act()]);
  const path = join(work, d.suggestedFilename());
  await d.saveAs(path);
  return { name: d.suggestedFilename(), bytes: readFileSync(path), path };
}

/** A PNG's width and height (its IHDR). */
const pngSize = (b) => [b.readUInt32BE(16), b.readUInt32BE(20)];

test('an atlas opens as a grid of tiles that the metric recolours, with a tooltip and a profile per head', async () => {
  const file = join(work, 'tiny.atlas.npz');
  writeFileSync(file, atlasFile());
  await openAtlas(file);
  assert.equal(await page.locator('#atlas').isVisible(), true);
  assert.equal(await page.locator('#atlas-canvas').evaluate((c) => c.tiles.length), L * H);
  assert.match(await page.locator('#atlas-title').innerText(), /tiny\.atlas\.npz: tiny-llama \(llama\): 2 layers × 4 heads, 1 prompt/);
  // The metrics offered are the file's that colour tiles, titled and described by Rust.
  const options = await page.locator('#atlas-metric option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  assert.deepEqual(options.map((o) => o[0]), ['first_token', 'previous_token', 'entropy', 'mean_distance', 'position_share', 'offset_share', 'duplicate_token', 'induction']);
  assert.equal(options[0][1], 'sink (first token)');
  const before = await page.locator('#atlas-canvas').evaluate((c) => c.toDataURL());
  const b = await atlasReady();
  await page.selectOption('#atlas-metric', 'previous_token');
  await page.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready) > x, b);
  assert.equal(await page.locator('#atlas-canvas').getAttribute('data-metric'), 'previous_token');
  assert.notEqual(await page.locator('#atlas-canvas').evaluate((c) => c.toDataURL()), before, 'the tiles were not recoloured');
  assert.match(await page.locator('#atlas-desc').innerText(), /^previous token: the weight on the key just before the query/);
  // Sorted by the metric within each layer: still every tile.
  await page.selectOption('#atlas-order', 'metric');
  await page.waitForFunction(() => document.getElementById('atlas-canvas').tiles.length === 8);
  await page.selectOption('#atlas-order', 'kv_head');
  await page.waitForFunction(() => document.getElementById('atlas-canvas').tiles.length === 8);

  // The tooltip: layer, head, K/V head, each metric's mean ± std, and what a click does.
  const [x, y] = await tilePoint(1, 2);
  await page.mouse.move(x, y);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden);
  const tip = await page.locator('#tooltip').innerText();
  assert.match(tip, /decoder layer 1, head 2 · K\/V head 1 \(rope\)/);
  const sink = metricValue(METRICS.indexOf('first_token'), 1, 2);
  assert.equal(sink, 0.45);
  assert.match(tip, /sink \(first token\): 0\.450 ± 0\.0450/);
  assert.match(tip, /entropy: .* nats \(.* of uniform\)/);
  assert.match(tip, /captured: in the page, a click opens this head's stages/);
  // The hovered head's profile at full size, with its axis.
  await page.waitForFunction(() => document.getElementById('atlas-head-canvas')?.dataset.head === '1/2');
  assert.match(await page.locator('#atlas-head-canvas').getAttribute('aria-label'), /mean attention weight by offset j − i/);
  await page.locator('#atlas').screenshot({ path: join(artifacts, 'atlas-grid.png') });
});

test('the keyboard moves between tiles and opens one; the page\'s colormap and theme redraw the grid', async () => {
  const c = page.locator('#atlas-canvas');
  await c.focus();
  await page.keyboard.press('ArrowRight'); // the first tile
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden);
  // Grouped by K/V head (the order left by the test before): row 1's second tile is head 1.
  assert.match(await page.locator('#tooltip').innerText(), /^decoder layer 1, head 1 · K\/V head 0/);
  assert.match(await page.locator('#announce').innerText(), /decoder layer 1, head 1 · K\/V head 0 \(rope\); sink \(first token\)/);
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /decoder layer 0 is not captured/.test(document.getElementById('atlas-message').textContent));
  const drawn = await c.evaluate((el) => el.toDataURL());
  for (const [sel, value] of [['#seq', 'cividis'], ['#theme', 'dark'], ['#theme', 'light'], ['#seq', 'viridis']]) {
    const b = await atlasReady();
    await page.selectOption(sel, value);
    await page.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready) > x, b);
    if (value === 'cividis') assert.notEqual(await c.evaluate((el) => el.toDataURL()), drawn, 'cividis did not recolour the tiles');
  }
  assert.equal(await c.evaluate((el) => el.toDataURL()), drawn, 'back to viridis and light, the grid is as it was');
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
});

test('a click on an uncaptured tile says how to capture it; on a captured one it opens that head\'s stages', async () => {
  const ready = await readyId(page);
  await page.evaluate(() => { document.getElementById('atlas-message').textContent = ''; });
  const [x0, y0] = await tilePoint(0, 1);
  await page.mouse.click(x0, y0);
  await page.waitForFunction(() => document.getElementById('atlas-message').textContent !== '');
  const said = await page.locator('#atlas-message').innerText();
  assert.match(said, /decoder layer 0 is not captured/);
  assert.match(said, /relattn\.capture\(model, layer=0, …\) or relattn\.atlas\(\.\.\., layers=\[0\]\)/);
  assert.equal(await readyId(page), ready, 'an uncaptured tile computed something');

  const [x, y] = await tilePoint(1, 3);
  await page.mouse.click(x, y);
  // The tile chosen is outlined in yellow, as the figures' pins are.
  assert.equal(await page.locator('#atlas-canvas').getAttribute('data-chosen'), '1/3');
  const rim = await page.locator('#atlas-canvas').evaluate((c) => {
    const t = c.tiles.find((r) => r.row === 1 && r.head === 3);
    return [...c.getContext('2d').getImageData(t.x - 2, t.y + Math.floor(t.h / 2), 1, 1).data];
  });
  assert.ok(rim[0] > 200 && rim[1] > 170 && rim[2] < 90, `the chosen tile's rim is ${rim}`);
  await page.waitForFunction((r) => Number(document.body.dataset.ready || 0) > r && document.getElementById('busy').hidden, ready, { timeout: 30000 });
  assert.equal(await page.inputValue('#head'), '3');
  assert.equal(await page.inputValue('#method'), 'rope');
  assert.equal(await page.inputValue('#n'), String(N));
  assert.match(await page.locator('#preset-desc').innerText(), /tiny-llama, decoder layer 1 \(llama\)/);
  assert.match(await page.locator('#tensors-name').innerText(), /using tiny\.atlas\.npz/);
  assert.equal(await page.locator('figure[data-stage="weights"]').count(), 1);
  // The weights figure names the model, the layer and the head (its exported SVG).
  const svg = await downloadOf(() => page.click('figure[data-stage="weights"] .export-svg'));
  assert.match(svg.bytes.toString('utf8'), /tiny-llama, decoder layer 1, head 3/);
  await page.locator('figure[data-stage="weights"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'atlas-stages.png') });
});

test('the exports: SVG, PNG, a 16:9 slide, and one HTML file that needs nothing from outside', async () => {
  const svg = await downloadOf(() => page.click('#atlas [data-export="svg"]'));
  assert.match(svg.name, /^tiny-first_token\.svg$|^tiny-[a-z_]+\.svg$/);
  assert.match(svg.bytes.toString('utf8'), /^<svg[^>]*width="1600"/);
  const png = await downloadOf(() => page.click('#atlas [data-export="png"]'));
  assert.equal(pngSize(png.bytes)[0], 3200);
  const slide = await downloadOf(() => page.click('#atlas [data-export="slide"]'));
  assert.deepEqual(pngSize(slide.bytes), [1920, 1080]);
  writeFileSync(join(artifacts, 'atlas-slide.png'), slide.bytes);
  const html = await downloadOf(() => page.click('#atlas [data-export="html"]'));
  const text = html.bytes.toString('utf8');
  assert.doesNotMatch(text, /https?:\/\/|\bsrc=|<link\b|@import/, 'the HTML file names something outside it');
  // The command line writes the same file.
  const [metric, order] = [await page.inputValue('#atlas-metric'), await page.inputValue('#atlas-order')];
  const fromCli = join(work, 'cli.html');
  execFileSync(cli(), ['atlas', 'render', join(work, 'tiny.atlas.npz'), '--metric', metric, '--order', order, '--out', fromCli]);
  assert.equal(text, readFileSync(fromCli, 'utf8'), 'the page\'s HTML export and relattn atlas render --out x.html differ');
  // Opened offline in a fresh page: no console error, and a tooltip on a tile.
  const fresh = await context.newPage();
  const errors = [];
  fresh.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  fresh.on('pageerror', (e) => errors.push(e.message));
  fresh.on('request', (r) => { if (!r.url().startsWith('file:')) errors.push(`request ${r.url()}`); });
  await fresh.goto(pathToFileURL(html.path).href);
  const box = await fresh.locator('svg').boundingBox();
  const t = await fresh.evaluate(() => { const d = JSON.parse(document.getElementById('atlas-data').textContent); return { ...d.tiles.find((r) => r.row === 1 && r.head === 2), width: d.width }; });
  const k = box.width / t.width;
  await fresh.mouse.move(box.x + (t.x + t.w / 2) * k, box.y + (t.y + t.h / 2) * k);
  await fresh.waitForFunction(() => !document.getElementById('tip').hidden);
  assert.match(await fresh.locator('#tip').innerText(), /decoder layer 1, head 2 · K\/V head 1/);
  await fresh.screenshot({ path: join(artifacts, 'atlas-html.png') });
  await fresh.close();
  assert.deepEqual(errors, []);
});

test('a bad atlas is refused naming its member, and the page keeps what it shows', async () => {
  const bad = join(work, 'bad.atlas.npz');
  writeFileSync(bad, atlasFile((m) => { m['profile.npy'] = npyF32([L, H, 7], new Array(L * H * 7).fill(0.1)); }));
  const shown = await page.locator('#atlas-canvas').evaluate((c) => c.toDataURL());
  await page.setInputFiles('#tensors', bad);
  await page.waitForFunction(() => document.getElementById('err-file').textContent !== '' && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const err = await page.locator('#err-file').innerText();
  assert.match(err, /bad\.atlas\.npz/);
  assert.match(err, /member 'profile' has shape \[2, 4, 7\]; allowed: \(L layers, H heads, 2N − 1 offsets\) = \[2, 4, 11\]/);
  // The atlas shown, the layer shown and the file in use stay.
  assert.equal(await page.locator('#atlas-canvas').evaluate((c) => c.toDataURL()), shown);
  assert.match(await page.locator('#atlas-title').innerText(), /^tiny\.atlas\.npz/);
  assert.equal(await page.locator('figure[data-stage="weights"]').count(), 1);
  assert.match(await page.locator('#tensors-name').innerText(), /using tiny\.atlas\.npz/);
  // An unknown metric is named with the known ones.
  const unknown = join(work, 'unknown.atlas.npz');
  writeFileSync(unknown, atlasFile(() => {}, (d) => { d.metrics = METRICS.map((m) => (m === 'first_token' ? 'sinkiness' : m)); }));
  await page.setInputFiles('#tensors', unknown);
  await page.waitForFunction(() => /sinkiness/.test(document.getElementById('err-file').textContent), null, { timeout: 30000 });
  assert.match(await page.locator('#err-file').innerText(), /first_token, previous_token/);
});

test('an atlas dropped on the page opens as one picked does', async () => {
  const b = await atlasReady();
  await dropFile(page, 'dropped.atlas.npz', atlasFile(() => {}, (d) => { d.model = 'dropped-llama'; }));
  await page.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready || 0) > x && document.getElementById('busy').hidden, b, { timeout: 30000 });
  assert.match(await page.locator('#atlas-title').innerText(), /^dropped\.atlas\.npz: dropped-llama \(llama\)/);
  assert.equal(await page.locator('#err-file').innerText(), '');
  assert.equal(await page.locator('#atlas-canvas').evaluate((c) => c.tiles.length), L * H);
});

test('a large atlas (32 layers × 32 heads, N 256, a 16,000-character model name) keeps every main-thread task under 300 ms', async () => {
  const p = await context.newPage();
  watch(p, problems, watchOptions);
  await p.goto(`${base}?method=shaw&n=6&d_model=8&heads=2&clip=2&seed=0&sentence=`);
  await p.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
  // Playwright builds the 4 MB file in the page itself (from base64: a long task of its own, before the file
  // control's change event): the tasks counted are those that start once the page has the file.
  await p.evaluate(() => {
    window.__long = [];
    window.__picked = Infinity;
    document.getElementById('tensors').addEventListener('change', () => { window.__picked = performance.now(); }, { once: true });
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push([e.startTime, e.duration]); }).observe({ type: 'longtask' });
  });
  const { layers, heads, n } = BIG;
  const offsets = 2 * n - 1;
  const description = {
    format: 'relattn atlas', version: 1, model: 'm'.repeat(16000), family: 'llama',
    layers: fill(layers, (c) => ({ part: 'decoder', layer: c, method: 'rope', heads, kv_heads: 8, causal: true })),
    metrics: METRICS, prompts: [{ n, tokens: fill(n, (k) => (k === 3 ? '\u202Eevil' : `t${k}`)) }],
    induction: { n: 64, seed: 0 }, offsets: n, captured: [], notes: [],
  };
  const m = fill(METRICS.length * layers * heads, (i) => ((i * 7) % 100) / 100);
  const curve = (f) => fill(layers * heads * offsets, (i) => ((i % offsets) > n - 1 ? NaN : f(i)));
  const buffer = writeZip({
    'atlas.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
    'metrics.npy': npyF32([METRICS.length, layers, heads], m),
    'metrics_std.npy': npyF32([METRICS.length, layers, heads], m.map((v) => v / 10)),
    'profile.npy': npyF32([layers, heads, offsets], curve((i) => Math.abs(Math.sin(i * 0.37)) / 50)),
    'term.npy': npyF32([layers, heads, offsets], curve((i) => -((n - 1 - (i % offsets)) * 0.01))),
    'kv_head.npy': npyF32([layers, heads], fill(layers * heads, (i) => Math.floor((i % heads) / 4))),
  });
  const b = await p.evaluate(() => Number(document.getElementById('atlas').dataset.ready || 0));
  await p.setInputFiles('#tensors', { name: 'big.atlas.npz', mimeType: 'application/octet-stream', buffer });
  await p.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready || 0) > x && document.getElementById('busy').hidden, b, { timeout: 60000 });
  assert.equal(await p.locator('#atlas-canvas').evaluate((c) => c.tiles.length), layers * heads);
  for (const [sel, value] of [['#atlas-metric', 'entropy'], ['#atlas-order', 'metric'], ['#atlas-order', 'kv_head']]) {
    const r = await p.evaluate(() => Number(document.getElementById('atlas').dataset.ready));
    await p.selectOption(sel, value);
    await p.waitForFunction((x) => Number(document.getElementById('atlas').dataset.ready) > x, r);
  }
  const longest = await p.evaluate(() => Math.max(0, ...window.__long.filter(([start]) => start >= window.__picked).map(([, d]) => d)));
  assert.ok(Number.isFinite(await p.evaluate(() => window.__picked)), 'the file control changed');
  await p.locator('#atlas').screenshot({ path: join(artifacts, 'atlas-large.png') });
  await p.close();
  assert.ok(longest < 300, `a main-thread task of ${longest} ms`);
});

test('after a panic in the worker the atlas stays: a head\'s profile says to open it again, a captured tile still opens its stages', async () => {
  const p = await context.newPage();
  // The forced panic logs itself (console_error_panic_hook) on purpose: that one message is expected.
  watch(p, problems, { ...watchOptions, expected: (text) => /debug_panic\(\)/.test(text) });
  await p.goto(`${base}?preset=seed004`);
  await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  await p.setInputFiles('#tensors', join(work, 'tiny.atlas.npz'));
  await p.waitForFunction(() => Number(document.getElementById('atlas').dataset.ready || 0) > 0 && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const drawn = await p.locator('#atlas-canvas').evaluate((c) => c.toDataURL());
  await p.workers().at(-1).evaluate(() => self.dispatchEvent(new MessageEvent('message', { data: { kind: 'debug-panic', id: 0 } })));
  await p.waitForFunction(() => /internal error/.test(document.getElementById('err-general').textContent));
  assert.equal(await p.locator('#atlas-canvas').evaluate((c) => c.toDataURL()), drawn, 'the grid changed');
  const point = async (row, head) => {
    const c = p.locator('#atlas-canvas');
    const box = await c.boundingBox();
    const t = await c.evaluate((el, [r, h]) => ({ ...el.tiles.find((x) => x.row === r && x.head === h), width: el.width }), [row, head]);
    const k = box.width / t.width;
    return [box.x + (t.x + t.w / 2) * k, box.y + (t.y + t.h / 2) * k];
  };
  const [hx, hy] = await point(0, 2);
  await p.mouse.move(hx, hy);
  await p.waitForFunction(() => /no longer holds tiny\.atlas\.npz; open it again/.test(document.getElementById('atlas-message').textContent), null, { timeout: 10000 });
  const ready = await p.evaluate(() => Number(document.body.dataset.ready || 0));
  const [cx, cy] = await point(1, 2);
  await p.mouse.click(cx, cy);
  await p.waitForFunction((r) => Number(document.body.dataset.ready || 0) > r && document.getElementById('busy').hidden, ready, { timeout: 30000 });
  assert.equal(await p.inputValue('#head'), '2');
  assert.match(await p.locator('#preset-desc').innerText(), /tiny-llama, decoder layer 1 \(llama\)/);
  await p.close();
});

test('the atlas relattn.atlas made of a tiny random Llama opens, and its captured layer\'s stages too', { skip: !existsSync(join(root, 'tests', 'fixtures', 'atlas-tiny-llama.atlas.npz')) }, async () => {
  const file = join(root, 'tests', 'fixtures', 'atlas-tiny-llama.atlas.npz');
  await openAtlas(file);
  const tiles = await page.locator('#atlas-canvas').evaluate((c) => c.tiles.length);
  assert.equal(tiles, 4 * 8, 'its 4 layers × 8 heads');
  await page.locator('#atlas').screenshot({ path: join(artifacts, 'atlas-fixture.png') });
  const ready = await readyId(page);
  const [x, y] = await tilePoint(1, 0);
  await page.mouse.click(x, y);
  await page.waitForFunction((r) => Number(document.body.dataset.ready || 0) > r && document.getElementById('busy').hidden, ready, { timeout: 30000 });
  assert.match(await page.locator('#preset-desc').innerText(), /decoder layer 1/);
  assert.equal(await page.locator('figure[data-stage="weights"]').count(), 1);
});
