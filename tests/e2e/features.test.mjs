// End-to-end tests of the page's lecture features: shareable URLs, presentation and embed modes, exports
// (PNG, SVG, trace .npz checked against the CLI), your own tensors, themes and keyboard use.
// Run with `make test-e2e` (builds www/pkg and www/vendor first). Screenshots in tests/e2e/artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, artifacts, prepare, startServer, launch, watch, close, hover, npyF32, npyU8, writeZip, dropFile, cli, readyId, settle } from './harness.mjs';

let server;
let base;
let context;
let page;
let profile;
let work;
const problems = [];
// Failed blob: requests are not counted here; failed requests to the server and any outside request are.
const watchOptions = { failed: (url) => !url.startsWith('blob:'), outside: true };

async function open(query, viewport = { width: 1500, height: 1000 }) {
  const p = await context.newPage();
  await p.setViewportSize(viewport);
  watch(p, problems, watchOptions);
  await p.goto(`${base}${query}`);
  await p.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
  return p;
}


before(async () => {
  prepare();
  assert.ok(existsSync(join(root, 'www', 'vendor', 'katex', 'katex.min.js')), 'www/vendor/katex is missing: run `make wasm` first');
  work = mkdtempSync(join(tmpdir(), 'relattn-e2e-'));
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch({ acceptDownloads: true }));
  watch(page, problems, watchOptions);
  await page.goto(`${base}?preset=seed004`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(async () => {
  await close({ context, server, profile });
  if (work) rmSync(work, { recursive: true, force: true });
});

// --- .npy / .npz (stored zip) helpers --------------------------------------------------------------------
function parseNpy(buf) {
  assert.equal(buf.subarray(0, 6).toString('latin1'), '\x93NUMPY');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.subarray(start, start + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const body = buf.subarray(start + hlen);
  const count = shape.reduce((a, b) => a * b, 1);
  const data = [];
  for (let k = 0; k < count; k++) {
    if (descr === '<f4') data.push(body.readFloatLE(4 * k));
    else if (descr === '<i8') data.push(Number(body.readBigInt64LE(8 * k)));
    else if (descr === '<f8') data.push(body.readDoubleLE(8 * k));
  }
  return { descr, shape, data };
}

function readZip(buf) {
  const out = {};
  let o = 0;
  while (buf.readUInt32LE(o) === 0x04034b50) {
    const method = buf.readUInt16LE(o + 8);
    let size = buf.readUInt32LE(o + 18);
    const nameLen = buf.readUInt16LE(o + 26);
    const extraLen = buf.readUInt16LE(o + 28);
    const name = buf.subarray(o + 30, o + 30 + nameLen).toString('utf8');
    const dataStart = o + 30 + nameLen + extraLen;
    if (size === 0xffffffff) {
      // zip64: the sizes are in the extra field.
      size = Number(buf.readBigUInt64LE(o + 30 + nameLen + 4 + 8));
    }
    assert.equal(method, 0, `${name}: the trace .npz is stored (uncompressed)`);
    out[name.replace(/\.npy$/, '')] = parseNpy(buf.subarray(dataStart, dataStart + size));
    o = dataStart + size;
    if (buf.readUInt16LE(o - 0) === 0x4b50 && buf.readUInt32LE(o) === 0x08074b50) o += 16; // data descriptor
  }
  return out;
}

async function downloadOf(p, act) {
  const [d] = await Promise.all([p.waitForEvent('download', { timeout: 20000 }), act()]);
  const path = join(work, d.suggestedFilename());
  await d.saveAs(path);
  return { name: d.suggestedFilename(), bytes: readFileSync(path), path };
}

// --- tests ---------------------------------------------------------------------------------------------
test('the URL restores the exact view, pinned cell included', async () => {
  await settle(page, () => page.selectOption('#head', '1'));
  await settle(page, () => page.selectOption('#batch', '1'));
  await settle(page, () => page.selectOption('#seq', 'cividis'));
  await page.selectOption('#theme', 'dark');
  await page.focus('figure[data-stage="weights"] canvas');
  for (const k of ['ArrowDown', 'ArrowDown', 'ArrowRight', 'ArrowRight', 'ArrowRight']) await page.keyboard.press(k);
  const pinned = await page.locator('#pinned').innerText();
  assert.match(pinned, /\(i, j\) = \(2, 3\)/);
  const url = page.url();
  assert.match(url, /preset=seed004/);
  assert.match(url, /pin=2%2C3|pin=2,3/);
  const tip = await hover(page, 'relative_logits', 1, 2);
  const pixels = () => page.$eval('figure[data-stage="weights"] canvas', (c) => c.toDataURL());
  const shot = await pixels();
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'features-dark.png') });

  const p2 = await open(url.replace(base, ''));
  assert.equal(await p2.locator('#pinned').innerText(), pinned);
  for (const [id, v] of [['#preset', 'seed004'], ['#head', '1'], ['#batch', '1'], ['#seq', 'cividis'], ['#theme', 'dark']]) assert.equal(await p2.inputValue(id), v, id);
  assert.equal(await p2.evaluate(() => document.documentElement.dataset.theme), 'dark');
  const tip2 = await hover(p2, 'relative_logits', 1, 2);
  assert.equal(tip2.text, tip.text);
  const shot2 = await p2.$eval('figure[data-stage="weights"] canvas', (c) => c.toDataURL());
  if (shot2 !== shot) for (const [k, v] of [['a', shot], ['b', shot2]]) writeFileSync(join(artifacts, `roundtrip-${k}.png`), Buffer.from(v.split(',')[1], 'base64'));
  assert.ok(shot2 === shot, 'the weights figure differs (tests/e2e/artifacts/roundtrip-*.png)');
  // A custom configuration round-trips too.
  await settle(p2, () => p2.fill('#n', '7'));
  const custom = p2.url();
  for (const k of ['method=shaw', 'n=7', 'd_model=', 'clip=', 'relative_values=1', 'causal=0']) assert.ok(custom.includes(k), `${k} not in ${custom}`);
  const p3 = await open(custom.replace(base, ''));
  assert.equal(await p3.inputValue('#n'), '7');
  assert.equal(await p3.$eval('figure[data-stage="weights"] canvas', (c) => c.dataset.rows), '7');
  // A value the page does not have (a mistyped or stale link) is said next to its control, not silently replaced.
  const p4 = await open('?method=nonsense&n=6&rope_layout=bogus');
  // The allowed values are the method control's own, every scheme (shaw first, the page's default).
  const methods = await p4.$eval('#method', (s) => [...s.options].map((o) => o.value));
  assert.ok(methods.length >= 9 && methods[0] === 'shaw' && methods.includes('transformer_xl'), methods.join(', '));
  const said = await p4.locator('#err-method').innerText();
  assert.ok(said.includes(`The link's method=nonsense is not one of ${methods.join(', ')}: showing shaw.`), said);
  // A stage the layer does not have is said too, and no slide is shown in its place.
  const p5 = await open('?preset=seed004&present=nonsense');
  await p5.waitForFunction(() => document.getElementById('err-general').textContent !== '');
  assert.match(await p5.locator('#err-general').innerText(), /The link's present=nonsense is not one of this layer's stages and pictures \(distances, .*weights.*\): the page is shown, no slide\./);
  assert.equal(await p5.evaluate(() => document.getElementById('present').hidden), true, 'a slide was shown for an unknown stage');
  await Promise.all([p2.close(), p3.close(), p4.close(), p5.close()]);
  // Copy link: the link is the page's URL (the clipboard, or a selected field to copy by hand).
  await page.click('#copy-link');
  await page.waitForFunction(() => document.getElementById('toast').textContent !== '' || document.querySelector('.link-field'));
  await page.selectOption('#theme', 'light');
});

test('presentation mode steps through every stage by keyboard, with rendered formulas, at projector size', async () => {
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 720 });
  await settle(page, () => page.selectOption('#preset', 'seed000-music'));
  const names = await page.$$eval('figure.view', (fs) => fs.map((f) => f.dataset.stage));
  await page.focus('#present-btn');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#present:not([hidden])');
  const seen = [];
  for (let k = 0; k < names.length; k++) {
    seen.push(await page.getAttribute('#present', 'data-stage'));
    assert.ok(await page.locator('#present-formula .katex').count() > 0, `no KaTeX formula at ${seen.at(-1)}`);
    assert.ok((await page.locator('#present-notice').innerText()).length > 60, `nothing to notice at ${seen.at(-1)}`);
    if (k === 5) await page.screenshot({ path: join(artifacts, 'features-present.png') });
    // The slide states title, options and formula once, above a figure drawn without its own.
    if (k === 0) assert.ok(Number(await page.$eval('#present canvas', (e) => e.dataset.y0)) < 30, 'the figure repeats the slide\'s title');
    if (k === 0) assert.match(await page.locator('#present-stated').innerText(), /^Music Transformer: k = \d+/);
    if (k === 0) {
      // The figure fills the slide's height and is shown at 14/12 of its drawing or more: its 12 px labels,
      // ticks and values reach 14 px at 1280 × 720.
      const [w, cw, h, ch] = await page.$eval('#present canvas', (c) => [c.width, c.clientWidth, c.height, c.clientHeight]);
      assert.ok(cw / w >= 14 / 12 - 0.01 && ch / h >= 14 / 12 - 0.01, `drawn ${w}×${h}, shown ${cw}×${ch}`);
      assert.ok(ch >= 0.55 * 720, `the figure takes ${ch} px of 720`);
    }
    // A square stage's plot is drawn square (it was 3.5 : 1 on a wide slide); a skew step's keeps its own ratio.
    const plot = await page.$eval('#present canvas', (c) => ({ w: c.dataset.x1 - c.dataset.x0, h: c.dataset.y1 - c.dataset.y0, rows: Number(c.dataset.rows), cols: Number(c.dataset.cols) }));
    const want = Math.min(4, Math.max(0.25, plot.cols / plot.rows));
    assert.ok(Math.abs(plot.w / plot.h - want) / want < 0.06, `${seen.at(-1)}: plot ${plot.w} × ${plot.h} for a ${plot.rows} × ${plot.cols} stage`);
    await page.keyboard.press(k % 2 ? 'PageDown' : 'ArrowRight');
  }
  assert.deepEqual(seen, names);
  assert.deepEqual(names.slice(0, 6), ['distances', 'rel_index', 'rel_k', 'content_logits', 'skew_qer', 'skew_padded']);
  assert.equal(await page.getAttribute('#present', 'data-stage'), 'output', 'stays on the last stage');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('PageUp');
  assert.equal(await page.getAttribute('#present', 'data-stage'), names.at(-3));
  assert.match(page.url(), new RegExp(`present=${names.at(-3)}`));
  // Slide text grows with the screen: half again at 1920 × 1080, the figure's text with it.
  const sizes = async () => page.evaluate(() => [parseFloat(getComputedStyle(document.getElementById('present-title')).fontSize),
    parseFloat(getComputedStyle(document.getElementById('present-notice')).fontSize), Number(document.querySelector('#present canvas').dataset.textScale)]);
  const small = await sizes();
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.waitForFunction(() => document.querySelector('#present canvas').dataset.textScale === '1.5');
  const large = await sizes();
  assert.ok(Math.abs(large[0] / small[0] - 1.5) < 0.05 && Math.abs(large[1] / small[1] - 1.5) < 0.05 && small[2] === 1, `${small} → ${large}`);
  await page.screenshot({ path: join(artifacts, 'features-present-1080p.png') });
  await page.setViewportSize({ width: 1280, height: 720 });
  assert.equal(await page.locator('#controls').isVisible(), false, 'controls show during the presentation');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#present', { state: 'hidden' });
  assert.ok(await page.locator('#controls').isVisible());
  await page.setViewportSize(viewport);
});

test('lecture pictures: each scheme\'s are figures and slides, with the scheme\'s options stated, linked and exported', async () => {
  const cases = [
    ['method=rope&n=16&d_model=32&heads=2', ['rope_pair_turn', 'rope_kernel_curves', 'rope_layouts'], /^RoPE: base 10000, rotated fraction 1 \(d_rot 16 of d_head 16\), interleaved/],
    ['method=alibi&causal=1&n=8&d_model=64&heads=8', ['alibi_slope_by_head', 'alibi_bias_by_head'], /^ALiBi: 8 heads, slopes 2\^\(−8\(h\+1\)\/8\) = 0\.500 … 3\.91e-3, causal/],
    ['method=t5&n=8&d_model=32&heads=4&per_head_tables=1', ['t5_staircase', 't5_bias_by_bucket'], /^T5: 32 buckets \(16 a side, 8 exact\), max distance 128/],
    ['method=deberta&n=12&d_model=32&heads=2&position_buckets=8&max_relative_positions=20', ['deberta_buckets'], /^DeBERTa: 8 log buckets up to 20 \(tables of 16 rows\), c2p \+ p2c, bidirectional/],
    ['method=absolute&n=12&d_model=32&heads=2', ['absolute_similarity'], /^absolute: sinusoids PE of d_model 32/],
    ['method=transformer_xl&n=12&d_model=32&heads=2', ['skew_and_rel_shift'], /^Transformer-XL: R W_R for i − j clamped at/],
    // Any scheme with a sliding window: the window's reach through stacked layers.
    ['method=shaw&causal=1&window=4&n=12&d_model=32&heads=2', ['window_reach'], /^Shaw et al\. 2018: .*, window 4 \(\|j − i\| < 4\)/],
  ];
  for (const [query, names, stated] of cases) {
    // The link of a picture's slide opens on it, at projector size.
    const p = await open(`?${query}&present=${names[0]}`, { width: 1280, height: 720 });
    const figures = await p.$$eval('figure.view', (fs) => fs.map((f) => f.dataset.stage));
    assert.deepEqual(figures.slice(-names.length), names, 'the pictures follow the stages');
    await p.waitForSelector('#present:not([hidden])');
    for (const [k, name] of names.entries()) {
      if (k) await p.keyboard.press('ArrowRight');
      assert.equal(await p.getAttribute('#present', 'data-stage'), name);
      assert.match(await p.locator('#present-stated').innerText(), stated);
      assert.ok(await p.locator('#present-formula .katex').count() > 0, `no KaTeX formula at ${name}`);
      // One line of title at 1280 × 720.
      const [th, lh] = await p.$eval('#present-title', (h) => [h.clientHeight, parseFloat(getComputedStyle(h).lineHeight) || parseFloat(getComputedStyle(h).fontSize) * 1.4]);
      assert.ok(th <= lh * 1.1, `${name}: the title takes ${th} px`);
      // The figure fills the slide's height, or its width (a wide stage).
      const c = await p.$eval('#present canvas', (e) => ({ ...e.dataset, w: e.clientWidth, h: e.clientHeight }));
      assert.ok(c.h >= 0.4 * 720 || c.w >= 0.8 * 1280, `${name}: the figure takes ${c.w} × ${c.h} px of 1280 × 720`);
      if (c.series) assert.ok(Number(c.series) >= 1, `${name}: no curve`);
      else {
        const want = Math.min(4, Math.max(0.25, c.cols / c.rows));
        assert.ok(Math.abs((c.x1 - c.x0) / (c.y1 - c.y0) - want) / want < 0.06, `${name}: plot ${c.x1 - c.x0} × ${c.y1 - c.y0} for ${c.rows} × ${c.cols}`);
      }
      assert.match(p.url(), new RegExp(`present=${name}`));
    }
    await p.screenshot({ path: join(artifacts, `features-picture-${names[0].split('_')[0]}.png`) });
    await p.keyboard.press('Escape');
    await p.waitForSelector('#present', { state: 'hidden' });
    // A chart's SVG export stands alone: its title, formula and the scheme's options.
    if (names[0] === 'rope_pair_turn') {
      const [download] = await Promise.all([p.waitForEvent('download'), p.click('figure[data-stage="rope_kernel_curves"] .export-svg')]);
      const svg = readFileSync(await download.path(), 'utf8');
      for (const text of ['RoPE&apos;s kernel against distance', 'base 10000, rotated fraction 1', 'distance d = j − i', 'base 100, fraction 1']) {
        assert.ok(svg.includes(text) || svg.includes(text.replace('&apos;', "'")), `${text} not in the SVG`);
      }
    }
    await p.close();
  }
});

test('embed mode shows exactly one canvas, sized to its frame', async () => {
  const p = await open('?embed=weights&preset=seed004&head=2', { width: 640, height: 420 });
  assert.equal(await p.locator('canvas').count(), 1);
  const c = await p.$eval('canvas', (e) => ({ w: e.width, h: e.height, stage: e.parentElement.dataset.stage, box: e.getBoundingClientRect().toJSON() }));
  assert.deepEqual([c.w, c.h, c.stage], [640, 420, 'weights']);
  // The title and the formula line have their height (plotters measures text in the page's DOM).
  assert.ok(Number(await p.$eval('canvas', (e) => e.dataset.y0)) > 50, 'the title overlaps the formula line');
  assert.ok(Math.abs(c.box.width - 640) < 2 && Math.abs(c.box.height - 420) < 2, JSON.stringify(c.box));
  for (const sel of ['#controls', 'header', 'footer', '#toolbar']) assert.equal(await p.locator(sel).isVisible(), false, `${sel} shows`);
  assert.match(await p.$eval('canvas', (e) => e.getAttribute('aria-label')), /Attention weights/);
  assert.equal(await p.inputValue('#head'), '2', 'the URL\'s head is shown');
  await p.screenshot({ path: join(artifacts, 'features-embed.png') });
  await p.close();
});

test('exports: PNG at 2×, SVG, and the trace .npz with the CLI\'s names and numbers', async () => {
  await settle(page, () => page.selectOption('#preset', 'seed004'));
  const png = await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-png'));
  assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.deepEqual([png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)], [940, 860], 'PNG is 2× the 470 × 430 figure');
  const svg = await downloadOf(page, () => page.click('figure[data-stage="relative_logits"] .export-svg'));
  const text = svg.bytes.toString('utf8');
  assert.match(text, /<svg[^>]*>/);
  const parsed = await page.evaluate((t) => {
    const d = new DOMParser().parseFromString(t, 'image/svg+xml');
    return { error: d.querySelector('parsererror') !== null, root: d.documentElement.nodeName, rects: d.querySelectorAll('rect').length, text: d.documentElement.textContent };
  }, text);
  assert.deepEqual([parsed.error, parsed.root], [false, 'svg']);
  assert.ok(parsed.rects >= 16, `only ${parsed.rects} rects`);
  assert.match(parsed.text, /Relative logits/);
  assert.match(parsed.text, /129/, 'the cell values are written in a 4 × 4 figure');
  // Standing alone: the scheme in the title, its options and the pin under it, the pinned cell outlined.
  assert.match(parsed.text, /Relative logits — Shaw et al. 2018/);
  assert.match(parsed.text, /Shaw et\s+al\.\s+2018:\s+clip\s+k\s+=\s+2/);
  await hover(page, 'weights', 1, 2);
  await page.mouse.down();
  await page.mouse.up();
  const pinned = (await downloadOf(page, () => page.click('figure[data-stage="relative_logits"] .export-svg'))).bytes.toString('utf8');
  assert.match(pinned, /pinned \(i, j\) = \(1, 2\)/);
  assert.equal((pinned.match(/stroke="#ffd400"/g) || []).length, 1, 'the pinned cell is outlined');
  // A 16:9 slide: 1920 × 1080.
  const slide = await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-slide'));
  assert.deepEqual([slide.bytes.readUInt32BE(16), slide.bytes.readUInt32BE(20)], [1920, 1080]);
  assert.match(slide.name, /-weights-slide\.png$/);
  writeFileSync(join(artifacts, 'features-export-slide.png'), slide.bytes);
  await page.keyboard.press('Escape');

  const npz = await downloadOf(page, () => page.click('#export-npz'));
  const t = readZip(npz.bytes);
  for (const k of ['distances', 'rel_index', 'rel_k', 'x', 'q', 'k', 'v', 'output', 'content_logits', 'relative_logits', 'logits', 'weights']) assert.ok(t[k], `no ${k} in ${Object.keys(t)}`);
  assert.deepEqual(t.weights.shape, [2, 3, 4, 4]);
  assert.equal(t.rel_index.descr, '<i8');
  assert.deepEqual(t.rel_index.shape, [4, 4]);
  assert.deepEqual(t.output.shape.slice(0, 2), [2, 4]);
  const ref = join(work, 'cli-seed004.npz');
  execFileSync(cli(), ['compute', '--preset', 'seed004', '--out', ref]);
  const want = readZip(readFileSync(ref));
  assert.deepEqual(t.relative_logits.shape, want.relative_logits.shape);
  assert.deepEqual(t.relative_logits.data, want.relative_logits.data);
  assert.deepEqual(t.relative_logits.data.slice(0, 4), [44, 23, 18, 18]);

  // A large matrix: vector frame, cells as an embedded raster.
  await settle(page, () => page.fill('#sentence', ''));
  await settle(page, () => page.fill('#n', '80'));
  const big = await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-svg'));
  const bt = big.bytes.toString('utf8');
  assert.match(bt, /<image [^>]*href="data:image\/png;base64,/);
  assert.ok(bt.length < 400000, `SVG of 80 × 80 is ${bt.length} bytes`);
  const bigPng = await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-png'));
  assert.deepEqual([bigPng.bytes.readUInt32BE(16), bigPng.bytes.readUInt32BE(20)], [940, 860]);
  writeFileSync(join(artifacts, 'features-export-small@2x.png'), png.bytes);
  writeFileSync(join(artifacts, 'features-export-n80@2x.png'), bigPng.bytes);
});

test('your own tensors: the page shows the CLI\'s numbers; bad files show an error and keep the view', async () => {
  // x (5, 8) and a w^K table (2k+1 = 5, d_head = 4) for 2 heads, clip 2.
  const x = Array.from({ length: 40 }, (_, k) => Math.sin(k * 1.7) * 2);
  const relk = Array.from({ length: 20 }, (_, k) => Math.cos(k * 0.9));
  const file = join(work, 'mine.npz');
  writeFileSync(file, writeZip({ 'x.npy': npyF32([5, 8], x), 'rel_k.npy': npyF32([5, 4], relk) }));
  const ref = join(work, 'mine-trace.npz');
  execFileSync(cli(), ['compute', '--tensors', file, '--method', 'shaw', '--heads', '2', '--clip', '2', '--seed', '0', '--out', ref]);
  const want = readZip(readFileSync(ref));

  await page.goto(`${base}?method=shaw&n=8&d_model=16&heads=2&clip=2&seed=0&causal=0&rel_v=1&per_head=0&sentence=`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
  await settle(page, () => page.setInputFiles('#tensors', file));
  assert.equal(await page.inputValue('#n'), '5');
  assert.equal(await page.inputValue('#d_model'), '8');
  assert.equal(await page.locator('#tensors-name').innerText(), 'using mine.npz');
  const rel = want.relative_logits;
  for (const [i, j] of [[0, 0], [1, 3], [4, 0], [2, 2]]) {
    const tip = await hover(page, 'relative_logits', i, j);
    const w = rel.data[i * 5 + j];
    assert.ok(Math.abs(Number(tip.relative) - w) <= 1e-4 * Math.max(1, Math.abs(w)), `(${i}, ${j}): page ${tip.relative}, CLI ${w}`);
  }
  const out = await page.$eval('figure[data-stage="weights"] canvas', (c) => c.toDataURL());
  const before = await readyId(page);

  // Malformed: an error next to the picker, the name as text, and the view stays.
  const evil = '<img src=x onerror=alert(1)>.npz';
  await page.setInputFiles('#tensors', { name: evil, mimeType: 'application/octet-stream', buffer: Buffer.from('PK\x03\x04 this is not a zip') });
  await page.waitForFunction(() => document.getElementById('err-file').textContent !== '', null, { timeout: 10000 });
  const err = await page.locator('#err-file').innerText();
  assert.ok(err.includes(evil), err);
  assert.equal(await page.locator('#err-file img').count(), 0, 'the file name became HTML');
  assert.equal(await readyId(page), before, 'the view changed on a bad file');
  assert.equal(await page.$eval('figure[data-stage="weights"] canvas', (c) => c.toDataURL()), out);
  assert.equal(await page.locator('#tensors-name').innerText(), 'using mine.npz');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'features-bad-file.png') });

  // A shape mismatch is named in words.
  const bad = join(work, 'mismatch.npz');
  writeFileSync(bad, writeZip({ 'x.npy': npyF32([5, 8], x), 'w_q.npy': npyF32([3, 8], new Array(24).fill(0.1)) }));
  await page.setInputFiles('#tensors', bad);
  await page.waitForFunction(() => /w_q/.test(document.getElementById('err-file').textContent), null, { timeout: 10000 });
  assert.match(await page.locator("#err-file").innerText(), /mismatch\.npz.*w_q.*\[3, 8\]/);
  assert.equal(await readyId(page), before);

  // A control change still computes with the accepted file; clearing goes back to generated tensors.
  await settle(page, () => page.fill('#seed', '3'));
  assert.equal(await page.inputValue('#n'), '5');
  assert.equal(await page.locator('#err-file').innerText(), '');
  await settle(page, () => page.click('#tensors-clear'));
  assert.equal(await page.locator('#tensors-name').innerText(), '');
});

test('a captured model layer: its options, tokens and description come with the file; the page shows the CLI\'s numbers', async () => {
  // A Llama-like layer as relattn.capture saves it: 4 query heads sharing 2 K/V heads, the model's own rotary
  // cos and sin (half-split, scaled by an attention factor of 1.1), a padded key, and the description.
  const [n, d, dh, kv] = [6, 16, 4, 2];
  const fill = (len, f) => Array.from({ length: len }, (_, k) => f(k));
  const angle = (m, p) => m * 0.5 ** (2 * p);
  const description = {
    options: { method: 'rope', heads: 4, causal: true, rope_layout: 'half' },
    model: 'tiny-llama', family: 'llama', part: 'decoder', layer: 1,
    tokens: [['<s>', 'The', 'cat', 'sat', 'on', 'mats']],
    notes: ['Rotary in the half-split layout (rotate_half) with the model\'s own cos and sin.'],
  };
  const file = join(work, 'tiny-llama-layer1.npz');
  writeFileSync(file, writeZip({
    'x.npy': npyF32([1, n, d], fill(n * d, (k) => Math.sin(k * 1.3))),
    'w_k.npy': npyF32([d, kv * dh], fill(d * kv * dh, (k) => Math.cos(k * 0.7) * 0.8)),
    'w_v.npy': npyF32([d, kv * dh], fill(d * kv * dh, (k) => Math.sin(k * 0.4))),
    'rope_cos.npy': npyF32([n, dh / 2], fill(n * dh / 2, (k) => 1.1 * Math.cos(angle(Math.floor(k / 2), k % 2)))),
    'rope_sin.npy': npyF32([n, dh / 2], fill(n * dh / 2, (k) => 1.1 * Math.sin(angle(Math.floor(k / 2), k % 2)))),
    'key_mask.npy': npyF32([1, n], [1, 1, 1, 1, 1, 0]),
    'capture.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
  }));
  const ref = join(work, 'tiny-llama-trace.npz');
  execFileSync(cli(), ['compute', '--tensors', file, '--out', ref]);
  const want = readZip(readFileSync(ref));

  // The controls hold an option the capture does not carry (as after a T5 capture: logit scale none).
  await page.goto(`${base}?method=shaw&n=8&d_model=16&heads=2&clip=2&seed=0&sentence=&logit_scale=none`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
  await settle(page, () => page.setInputFiles('#tensors', file));
  // The file's options replace the controls' and the controls show them; the others are reset to their defaults.
  assert.equal(await page.inputValue('#logit_scale'), 'inv_sqrt_d_head');
  assert.equal(await page.inputValue('#method'), 'rope');
  assert.equal(await page.inputValue('#rope_layout'), 'half');
  assert.equal(await page.isChecked('#causal'), true);
  assert.equal(await page.inputValue('#n'), String(n));
  assert.match(await page.locator('#preset-desc').innerText(), /tiny-llama, decoder layer 1 \(llama\)\. Rotary in the half-split layout/);
  // Every figure says which model's layer it is (its subtitle), in its exports too.
  const svg = await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-svg'));
  assert.match(svg.bytes.toString('utf8'), /tiny-llama, decoder layer 1/);
  await settle(page, () => page.selectOption('#head', '3'));
  const w = want.weights;
  for (const [i, j] of [[2, 1], [4, 4], [5, 0], [5, 5]]) {
    const tip = await hover(page, 'weights', i, j);
    const v = w.data[((0 * 4 + 3) * n + i) * n + j];
    assert.ok(Math.abs(Number(tip.value) - v) <= 1e-5, `(${i}, ${j}): page ${tip.value}, CLI ${v}`);
    assert.ok(tip.text.includes(`“${description.tokens[0][i]}” → “${description.tokens[0][j]}”`), tip.text);
  }
  // The angles are the model's own, read back from its cos and sin.
  const a = await hover(page, 'rope_angles', 5, 0);
  assert.ok(Math.abs(Number(a.value) - 5) <= 1e-5, a.text);
  // A control changed by hand then changes the captured layer: without the scale, the weights differ.
  await settle(page, () => page.selectOption('#logit_scale', 'none'));
  assert.equal(await page.inputValue('#logit_scale'), 'none');
  const unscaled = await hover(page, 'weights', 5, 0);
  assert.ok(Math.abs(Number(unscaled.value) - w.data[((0 * 4 + 3) * n + 5) * n + 0]) > 1e-4, unscaled.text);
  await settle(page, () => page.selectOption('#logit_scale', 'inv_sqrt_d_head'));
  await page.locator('figure[data-stage="weights"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'features-capture.png') });
  await settle(page, () => page.click('#tensors-clear'));
  // Dropped on the page, the same file gives the same layer.
  await settle(page, () => page.selectOption('#method', 'shaw'));
  await settle(page, () => dropFile(page, 'tiny-llama-layer1.npz', readFileSync(file)));
  assert.equal(await page.inputValue('#method'), 'rope');
  assert.match(await page.locator('#preset-desc').innerText(), /tiny-llama, decoder layer 1/);
  await settle(page, () => page.click('#tensors-clear'));
  // Left padding under the causal mask: the first query sees no key (weight 0, where transformers spreads the
  // row evenly), and the weights' figure says so.
  const padded = join(work, 'left-padded.npz');
  writeFileSync(padded, writeZip({ 'x.npy': npyF32([1, 4, 16], fill(64, (k) => Math.cos(k * 0.3))), 'key_mask.npy': npyF32([1, 4], [0, 1, 1, 1]) }));
  await settle(page, () => page.setInputFiles('#tensors', padded));
  const paddedSvg = (await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-svg'))).bytes.toString('utf8');
  const texts = [...paddedSvg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).join(' ').replace(/\s+/g, ' ');
  assert.match(texts, /row 0 sees no key \(all padding\): weight 0/);
  await settle(page, () => page.click('#tensors-clear'));
});

test('a captured layer of today\'s models (#49): heads of their own width, q/k norms, a sink, a window drawn as a mask, a soft-cap and a scale of its own, as the CLI computes them', async () => {
  // A Gemma-2-like layer with gpt-oss's sinks: 2 query heads of 8 in a width of 12 sharing one K/V head.
  const [n, d, dh, heads] = [7, 12, 8, 2];
  const fill = (len, f) => Array.from({ length: len }, (_, k) => f(k));
  const angle = (m, p) => m * 0.5 ** (2 * p);
  const description = {
    options: { method: 'rope', heads, causal: true, rope_layout: 'half', window: 3, softcap: 2.5, logit_scale: { factor: 0.3 }, norm_eps: 1e-6 },
    model: 'tiny-gemma', family: 'gemma2', part: 'decoder', layer: 1,
    notes: ['A sliding window of 3: each query sees itself and the 2 keys before it (farther keys masked).'],
  };
  const file = join(work, 'tiny-gemma-layer1.npz');
  writeFileSync(file, writeZip({
    'x.npy': npyF32([1, n, d], fill(n * d, (k) => Math.sin(k * 1.3))),
    'w_q.npy': npyF32([d, heads * dh], fill(d * heads * dh, (k) => Math.cos(k * 0.9))),
    'w_k.npy': npyF32([d, dh], fill(d * dh, (k) => Math.cos(k * 0.7) * 0.8)),
    'w_v.npy': npyF32([d, dh], fill(d * dh, (k) => Math.sin(k * 0.4))),
    'w_o.npy': npyF32([heads * dh, d], fill(heads * dh * d, (k) => Math.sin(k * 0.2))),
    'q_norm.npy': npyF32([dh], fill(dh, (k) => 1 + k / 4)),
    'k_norm.npy': npyF32([dh], fill(dh, (k) => 2 - k / 8)),
    'sinks.npy': npyF32([heads], [0.5, 2.0]),
    'rope_cos.npy': npyF32([n, dh / 2], fill(n * dh / 2, (k) => Math.cos(angle(Math.floor(k / 4), k % 4)))),
    'rope_sin.npy': npyF32([n, dh / 2], fill(n * dh / 2, (k) => Math.sin(angle(Math.floor(k / 4), k % 4)))),
    'capture.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
  }));
  const ref = join(work, 'tiny-gemma-trace.npz');
  execFileSync(cli(), ['compute', '--tensors', file, '--out', ref]);
  const want = readZip(readFileSync(ref));
  await settle(page, () => page.setInputFiles('#tensors', file));
  assert.equal(await page.inputValue('#window'), '3');
  assert.equal(await page.inputValue('#softcap'), '2.5');
  assert.match(await page.locator('#logit_scale option:checked').innerText(), /factor 0\.3/);
  await settle(page, () => page.selectOption('#head', '1'));
  const w = want.weights;
  let row = 0;
  for (let j = 0; j < n; j++) {
    const tip = await hover(page, 'weights', 6, j);
    const v = w.data[(1 * n + 6) * n + j];
    assert.ok(Math.abs(Number(tip.value) - v) <= 1e-5, `(6, ${j}): page ${tip.value}, CLI ${v}`);
    if (j < 4) assert.equal(v, 0, `(6, ${j}) is outside the window of 3`);
    row += v;
  }
  // The sink (logit 2) takes its share: the row's weights sum to less than 1, and its stage shows the rest.
  assert.ok(row < 0.95 && row > 0, `row 6 sums to ${row}`);
  const share = await hover(page, 'sink_share', 6, 0);
  assert.ok(Math.abs(Number(share.value) - (1 - row)) <= 1e-5, `sink share ${share.value}, 1 − ${row}`);
  assert.ok(Math.abs(Number(share.value) - want.sink_share.data[1 * n + 6]) <= 1e-6, share.text);
  // The figure says its grey cells are masked (under its title, in its exports too).
  const svg = (await downloadOf(page, () => page.click('figure[data-stage="weights"] .export-svg'))).bytes.toString('utf8');
  const said = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).join(' ').replace(/\s+/g, ' ');
  assert.match(said, /tiny-gemma, decoder layer 1, head 1 · grey: masked, no weight/);
  assert.match(said, /d_rot 8 of d_head 8/);
  assert.match(said, /α_ij = exp\(e_ij\) \/ \(exp\(s_h\) \+ Σ_l exp\(e_il\)\)/);
  // The logits say they are the model's own: its scale and cap, stated with the layer.
  const logits = (await downloadOf(page, () => page.click('figure[data-stage="logits"] .export-svg'))).bytes.toString('utf8');
  const told = [...logits.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).join(' ').replace(/\s+/g, ' ');
  assert.match(told, /Scaled, capped, masked logits/);
  // The layer's options, stated in full on its slides.
  await page.click('#present-btn');
  await page.waitForFunction(() => !document.getElementById('present').hidden);
  assert.match(await page.locator('#present-stated').innerText(), /window 3 \(\|j − i\| < 3\), logits × 0\.300 \(the model's scale\), soft-capped at ±2\.50/);
  await page.click('#present-close');
  await page.locator('figure[data-stage="weights"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'features-capture-today.png') });
  await settle(page, () => page.click('#tensors-clear'));
});

test('a captured DeepSeek layer (#49): x its latents, heads of 6 query/key and 4 value components, an output of the model\'s width, as the CLI computes them', async () => {
  // Multi-head latent attention in miniature: x = [c_Q (5) | c_KV (5) | k_R (2)], 2 heads of 6 components (2 rotary,
  // first) reading k_R through W_k's last two rows, values of 4 (d_v), an output of 8 (the model's width).
  const [n, width, heads, dqk, dv, out] = [6, 12, 2, 6, 4, 8];
  const fill = (len, f) => Array.from({ length: len }, (_, k) => f(k));
  const description = {
    options: { method: 'rope', heads, causal: true, rope_layout: 'interleaved', rope_fraction: 1 / 3 },
    model: 'tiny-deepseek', family: 'deepseek_v3', part: 'decoder', layer: 1,
    notes: ['Multi-head latent attention: x is [c_Q | c_KV | k_R].'],
  };
  const wk = fill(width * heads * dqk, (k) => {
    const [row, col] = [Math.floor(k / (heads * dqk)), k % (heads * dqk)];
    if (row >= 10) return col % dqk === row - 10 ? 1 : 0; // k_R, every head's rotary components
    return row >= 5 && col % dqk >= 2 ? Math.cos(k * 0.7) : 0; // c_KV, the others
  });
  const file = join(work, 'tiny-deepseek-layer1.npz');
  writeFileSync(file, writeZip({
    'x.npy': npyF32([1, n, width], fill(n * width, (k) => Math.sin(k * 1.3))),
    'w_q.npy': npyF32([width, heads * dqk], fill(width * heads * dqk, (k) => (k < 5 * heads * dqk ? Math.cos(k * 0.9) : 0))),
    'w_k.npy': npyF32([width, heads * dqk], wk),
    'w_v.npy': npyF32([width, heads * dv], fill(width * heads * dv, (k) => (k >= 5 * heads * dv && k < 10 * heads * dv ? Math.sin(k * 0.4) : 0))),
    'w_o.npy': npyF32([heads * dv, out], fill(heads * dv * out, (k) => Math.sin(k * 0.2))),
    'capture.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
  }));
  const ref = join(work, 'tiny-deepseek-trace.npz');
  execFileSync(cli(), ['compute', '--tensors', file, '--out', ref]);
  const want = readZip(readFileSync(ref));
  assert.deepEqual(want.output_content.shape, [1, heads, n, dv]);
  assert.deepEqual(want.output.shape, [1, n, out]);
  await settle(page, () => page.setInputFiles('#tensors', file));
  await settle(page, () => page.selectOption('#head', '1'));
  for (const [stage, i, j, value] of [['weights', 5, 2, want.weights.data[(n + 5) * n + 2]],
    ['output_content', 5, dv - 1, want.output_content.data[(n + 5) * dv + dv - 1]],
    ['output', 4, out - 1, want.output.data[4 * out + out - 1]]]) {
    const tip = await hover(page, stage, i, j);
    assert.ok(Math.abs(Number(tip.value) - value) <= 1e-5, `${stage} (${i}, ${j}): page ${tip.value}, CLI ${value}`);
  }
  // The heads' outputs are d_v wide, the layer's output the model's width: each figure has its own columns.
  const cols = async (stage) => Number(await page.locator(`figure[data-stage="${stage}"] canvas`).first().getAttribute('data-cols'));
  assert.equal(await cols('output_content'), dv);
  assert.equal(await cols('output'), out);
  assert.equal(await cols('rotated_q'), dqk);
  await page.locator('figure[data-stage="output_content"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'features-capture-deepseek.png') });
  await settle(page, () => page.click('#tensors-clear'));
});

test('crafted capture files (a 16,000-character model name, a 4,000-character token, a right-to-left override) keep every main-thread task under 300 ms', async () => {
  const p = await open('?method=shaw&n=6&d_model=8&heads=2&clip=2&seed=0&sentence=');
  await p.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask' });
  });
  const [n, d] = [4, 8];
  const crafted = {
    'long-name.npz': { model: 'm'.repeat(16000), tokens: [['a', 'b', 'c', 'd']] },
    'long-token.npz': { model: 'tiny', tokens: [['x'.repeat(4000), 'b', '\u202Eevil', 'd']] },
  };
  for (const [name, said] of Object.entries(crafted)) {
    const description = { options: { method: 'rope', heads: 2, causal: true }, family: 'llama', part: 'decoder', layer: 0, notes: [], ...said };
    const buffer = writeZip({
      'x.npy': npyF32([1, n, d], Array.from({ length: n * d }, (_, k) => Math.sin(k))),
      'capture.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
    });
    await settle(p, () => p.setInputFiles('#tensors', { name, mimeType: 'application/octet-stream', buffer }));
    assert.equal(await p.locator('#err-file').innerText(), '', name);
  }
  const longest = await p.evaluate(() => Math.max(0, ...window.__long));
  assert.ok(longest < 300, `a main-thread task of ${longest} ms`);
  await p.close();
});

test('keyboard: controls reachable with labels, the cursor cell is announced', async () => {
  await settle(page, () => page.selectOption('#preset', 'seed004'));
  // Every control has an accessible name.
  const unnamed = await page.$$eval('input, select, button, canvas[tabindex]', (els) => els.filter((e) => {
    if (e.closest('[hidden]') || e.offsetParent === null) return false;
    const id = e.id && document.querySelector(`label[for="${e.id}"]`);
    return !(id || e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent.trim()));
  }).map((e) => e.id || e.outerHTML.slice(0, 60)));
  assert.deepEqual(unnamed, []);
  // Tab reaches the toolbar buttons, with a visible focus ring.
  await page.focus('.skip');
  const reached = new Set();
  for (let k = 0; k < 40; k++) {
    await page.keyboard.press('Tab');
    reached.add(await page.evaluate(() => document.activeElement.id || document.activeElement.className));
  }
  for (const id of ['copy-link', 'present-btn', 'export-npz', 'tensors', 'seq', 'div', 'theme', 'n']) assert.ok(reached.has(id), `Tab never reaches #${id}: ${[...reached]}`);
  await page.focus('#copy-link');
  const ring = await page.$eval('#copy-link', (e) => getComputedStyle(e).outlineStyle);
  assert.equal(ring, 'solid');
  // A non-(i, j) figure: the cursor moves within it and its numbers are announced.
  await page.mouse.move(1, 1);
  await page.focus('figure[data-stage="rel_k"] canvas');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  const said = await page.locator('#announce').innerText();
  assert.match(said, /table row r 1, component of the row \(d_head\) 1/, 'a table cell is a row and a component, not (i, j)');
  assert.match(said, /value/);
  assert.equal(await page.getAttribute('#announce', 'aria-live'), 'polite');
  // On (i, j) figures the cursor is the pin, and the announcement has the parts.
  await page.focus('figure[data-stage="logits"] canvas');
  await page.keyboard.press('ArrowRight');
  const parts = await page.locator('#announce').innerText();
  assert.match(parts, /relative term = /);
  assert.ok(!(await page.locator('#tooltip').isHidden()), 'the tooltip shows for the keyboard too');
  await page.keyboard.press('Escape');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'features-light.png') });
});

test('the guided tour: opens on a first plain visit, each step sets the controls, remembered once finished', async () => {
  const p = await context.newPage();
  watch(p, problems, watchOptions);
  // A first visit: nothing remembered (set before the page's scripts run, so nothing is reloaded).
  await p.addInitScript(() => localStorage.removeItem('relattn-tour-done'));
  await p.goto(base);
  await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  assert.ok(await p.locator('#tour').isVisible(), 'the tour opens by itself on a first plain visit');
  assert.equal(await p.locator('#tour-step').innerText(), '1 / 11');
  // Opening by itself changes nothing: Start sets the first step's controls.
  assert.notEqual(await p.inputValue('#preset'), 'built-heads');
  assert.equal(await p.locator('#tour-next').innerText(), 'Start');
  await settle(p, () => p.click('#tour-next'));
  assert.equal(await p.inputValue('#preset'), 'built-heads');
  await p.click('#tour-next');
  assert.equal(await p.locator('#tour-step').innerText(), '2 / 11');
  await settle(p, () => p.click('#tour-next'));
  assert.equal(await p.inputValue('#sentence'), 'the cat saw the dog');
  // Content versus position: the content term is on (step 1's preset had it off), and the two "the" (keys 0 and 3)
  // give "dog" the same content logit, not 0.
  assert.equal(await p.isChecked('#relative_only'), false);
  const [first, second] = [await hover(p, 'content_logits', 4, 0), await hover(p, 'content_logits', 4, 3)];
  assert.ok(first.value === second.value && Number(first.value) !== 0, `${first.value} and ${second.value}`);
  await settle(p, () => p.click('#tour-next'));
  assert.deepEqual([await p.inputValue('#method'), await p.inputValue('#n'), await p.isChecked('#causal')], ['music', '6', true]);
  assert.ok(await p.locator('figure[data-stage="skew_sliced"]').count() === 1, 'the skew is shown');
  await settle(p, () => p.click('#tour-next'));
  assert.equal(await p.inputValue('#n'), '512');
  // The schemes after the 2018 ones, each with its pictures after its stages.
  for (const [preset, picture] of [['rope-kernel', 'rope_kernel_curves'], ['alibi-slopes', 'alibi_bias_by_head'], ['t5-buckets', 't5_staircase'], ['deberta-buckets', 'deberta_buckets'], ['absolute-positions', 'absolute_similarity']]) {
    await settle(p, () => p.click('#tour-next'));
    assert.equal(await p.inputValue('#preset'), preset);
    assert.equal(await p.locator(`figure[data-stage="${picture}"]`).count(), 1, `${preset}: no ${picture}`);
    // DeBERTa's step: its two terms before the bucket map.
    if (preset === 'deberta-buckets') for (const term of ['c2p', 'p2c']) assert.equal(await p.locator(`figure[data-stage="${term}"]`).count(), 1, `no ${term}`);
  }
  await p.click('#tour-next');
  await p.waitForFunction(() => document.body.dataset.mode === 'model');
  assert.equal(await p.locator('#tour-next').innerText(), 'Finish');
  await p.screenshot({ path: join(artifacts, 'features-tour.png') });
  await p.click('#tour-next');
  assert.ok(await p.locator('#tour').isHidden(), 'Finish closes the tour');
  await p.waitForFunction(() => document.body.dataset.modelReady, null, { timeout: 60000 });
  await p.close();
  // Remembered: a plain visit again does not open it; the Tour button does.
  const again = await context.newPage();
  watch(again, problems, watchOptions);
  await again.goto(base);
  await again.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  assert.ok(await again.locator('#tour').isHidden(), 'the finished tour opened again');
  await again.click('#tour-btn');
  assert.ok(await again.locator('#tour').isVisible());
  await again.click('#tour-close');
  await again.close();
});

test('no console errors, page errors or requests outside the page\'s origin', () => {
  assert.deepEqual(problems, []);
});
