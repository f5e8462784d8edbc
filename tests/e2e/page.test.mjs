// End-to-end tests of the page: serves www/ on 127.0.0.1, drives Debian's chromium with playwright-core.
// Run with `make test-web` (which builds www/pkg first) or `node --test tests/e2e/`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { artifacts, prepare, startServer, launch, watch, close, readyId, settle } from './harness.mjs';

let server;
let base;
let context;
let page;
let profile;
const problems = [];

before(async () => {
  prepare();
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch());
  watch(page, problems);
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(() => close({ context, server, profile }));

/** Runs `act`, then waits until the page shows a newer result and is no longer busy. */
const stages = () => page.$$eval('figure.view', (fs) => fs.map((f) => f.dataset.stage));

/** Variance of the pixels in each figure's plot area: 0 means a blank canvas. */
const variances = () => page.$$eval('figure.view canvas', (cs) => cs.map((c) => {
  const { x0, x1, y0, y1 } = Object.fromEntries(['x0', 'x1', 'y0', 'y1'].map((k) => [k, Number(c.dataset[k])]));
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let s = 0; let s2 = 0; let n = 0;
  for (let i = 0; i < d.length; i += 4) { const v = d[i] + d[i + 1] + d[i + 2]; s += v; s2 += v * v; n++; }
  let cells = 0;
  if (x1 > x0 && y1 > y0) {
    const p = c.getContext('2d').getImageData(x0, y0, x1 - x0, y1 - y0).data;
    let a = 0; let a2 = 0; let m = 0;
    for (let i = 0; i < p.length; i += 4) { const v = p[i] + p[i + 1] + p[i + 2]; a += v; a2 += v * v; m++; }
    cells = a2 / m - (a / m) ** 2;
  }
  return { stage: c.parentElement.dataset.stage, whole: s2 / n - (s / n) ** 2, cells };
}));

async function assertNotBlank(label) {
  const vs = await variances();
  assert.ok(vs.length >= 8, `${label}: only ${vs.length} figures`);
  for (const v of vs) {
    assert.ok(v.whole > 0, `${label}: ${v.stage} canvas is blank`);
    // The cells: a constant matrix may paint one colour, but never nothing.
    assert.ok(Number.isFinite(v.cells), `${label}: ${v.stage} has no plot area`);
  }
  return vs;
}

/** Waits until the pinned line matches `re` (a pinned table row's readers come from the worker). */
function pinnedMatches(re, timeout = 10000) {
  return page.waitForFunction((src) => new RegExp(src).test(document.getElementById('pinned').innerText), re.source, { timeout });
}

/** Hovers cell (i, j) of a stage's figure; returns the tooltip's data and text. */
async function hover(stage, i, j, tol = 0) {
  const canvas = page.locator(`figure[data-stage="${stage}"] canvas`);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const d = await canvas.evaluate((c) => ({ ...c.dataset, width: c.width }));
  const scale = box.width / d.width;
  const cw = (Number(d.x1) - Number(d.x0)) / Number(d.cols);
  const ch = (Number(d.y1) - Number(d.y0)) / Number(d.rows);
  const x = box.x + (Number(d.x0) + (j + 0.5) * cw) * scale;
  const y = box.y + (Number(d.y0) + (i + 0.5) * ch) * scale;
  await page.mouse.move(x, y);
  const tip = page.locator('#tooltip');
  // A tolerance asked for (a pooled figure, many cells to a pixel) is at least a pixel and a half of cells.
  const perPixel = Math.max(1 / (cw * scale), 1 / (ch * scale));
  const within = tol > 0 ? Math.max(tol, Math.ceil(1.5 * perPixel)) : 0;
  await page.waitForFunction(([s, ii, jj, tl]) => {
    const t = document.getElementById('tooltip');
    return !t.hidden && t.dataset.stage === s && Math.abs(t.dataset.i - ii) <= tl && Math.abs(t.dataset.j - jj) <= tl;
  }, [stage, i, j, within], { timeout: 5000 });
  return { ...(await tip.evaluate((t) => ({ ...t.dataset }))), text: await tip.innerText(), x, y };
}

test('the page loads, draws every stage, and shows the backend and timings', async () => {
  const names = await stages();
  for (const s of ['distances', 'rel_index', 'rel_k', 'rel_v', 'content_logits', 'relative_logits', 'logits', 'weights', 'output']) {
    assert.ok(names.includes(s), `missing ${s} in ${names}`);
  }
  const vs = await assertNotBlank('default');
  // A glossary of the controls' terms, one click away.
  await page.click('#glossary summary');
  for (const term of ['n', 'd_model', 'heads, d_head', 'k (clip)']) assert.ok(await page.locator('#glossary dt', { hasText: term }).count() > 0, `no glossary entry for ${term}`);
  await page.click('#glossary summary');
  // Each figure says what to notice (src/layer/stage_meta.rs).
  assert.match(await page.locator('figure[data-stage="weights"] .notice').innerText(), /Each row sums to 1/);
  assert.ok(vs.find((v) => v.stage === 'weights').cells > 0, 'weights show no variation');
  const footer = await page.locator('footer').innerText();
  assert.match(footer, /CPU \(wasm\)/);
  assert.match(footer, /trace [\d.]+ ms/);
  assert.match(footer, /stages of the head shown [\d.]+ ms · draw \(all figures\) \d+ ms · worker memory \d+ MiB/);
  // Per-stage compute times of the CPU trace, summed over heads.
  const stageTimes = await page.locator('#stage-times').innerText();
  for (const name of ['projections', 'logits', 'QKᵀ', 'relative', 'scale\\+mask', 'softmax', 'values', 'output']) {
    assert.match(stageTimes, new RegExp(`${name} \\d+\\.\\d+ ms`), `no time for ${name} in “${stageTimes}”`);
  }
  assert.match(await page.locator('#stage-times').getAttribute('title'), /summed over heads/);
  await page.locator('#stage-times').screenshot({ path: join(artifacts, 'footer-stage-times.png') });
  // Tokens of the sentence label the axes, and the tooltip names them.
  const t = await hover('weights', 1, 2);
  assert.match(t.text, /“cat” → “sat”/);
  await page.screenshot({ path: join(artifacts, 'default.png'), fullPage: false });
});

test('each preset reproduces its seed', async () => {
  for (const name of ['seed000-shaw', 'seed000-music', 'seed002', 'seed003', 'built-heads', 'seed004']) {
    await settle(page, () => page.selectOption('#preset', name));
    const names = await stages();
    if (name === 'seed000-music') for (const s of ['skew_qer', 'skew_padded', 'skew_reshaped', 'skew_sliced']) assert.ok(names.includes(s), `${name}: no ${s}`);
    else assert.ok(!names.includes('skew_qer'), `${name}: skew stages with Shaw`);
    await assertNotBlank(name);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(artifacts, `preset-${name}.png`) });
  }
  assert.equal(await page.inputValue('#n'), '4');
  assert.equal(await page.locator('#head option').count(), 3);
  assert.equal(await page.locator('#batch option').count(), 2);
  // The seed's relation-key logits (batch 0, head 0): 44, 23, 18, 18 / −29, 129.
  const want = [[0, 0, 44], [0, 1, 23], [0, 2, 18], [0, 3, 18], [1, 0, -29], [1, 1, 129]];
  for (const [i, j, rel] of want) {
    const t = await hover('relative_logits', i, j);
    assert.equal(Number(t.relative), rel, `relative term at (${i}, ${j})`);
    assert.equal(Number(t.value), rel);
    assert.ok(t.text.includes(`relative term = ${rel}`), t.text);
    assert.equal(Number(t.row), Math.max(-2, Math.min(2, j - i)) + 2, `table row at (${i}, ${j})`);
  }
  // The content term is the same pair's q·k and shows too.
  const t = await hover('logits', 0, 1);
  assert.match(t.text, /content term q·k = -?[\d.e+]+/);
  await page.screenshot({ path: join(artifacts, 'seed004-tooltip.png') });
});

test('every control recomputes; bad input shows an inline error and keeps the view', async () => {
  await settle(page, () => page.selectOption('#preset', 'seed000-shaw'));
  await settle(page, () => page.fill('#sentence', ''));
  await settle(page, () => page.fill('#n', '10'));
  assert.equal(await page.inputValue('#preset'), '');
  assert.equal((await page.$eval('figure[data-stage="weights"] canvas', (c) => c.dataset.rows)), '10');
  await settle(page, () => page.selectOption('#method', 'music'));
  assert.ok((await stages()).includes('skew_sliced'));
  assert.equal(await page.isDisabled('#relative_values'), true, 'a^V is Shaw\'s: off for the Music Transformer');
  await settle(page, () => page.check('#causal'));
  await settle(page, () => page.selectOption('#method', 'shaw'));
  assert.equal(await page.isDisabled('#relative_values'), false);
  await settle(page, () => page.fill('#d_model', '32'));
  await settle(page, () => page.fill('#heads', '4'));
  assert.equal(await page.locator('#head option').count(), 4);
  await settle(page, () => page.selectOption('#head', '2'));
  assert.match(await page.locator('figure[data-stage="weights"] canvas').getAttribute('aria-label'), /Attention weights/);
  await settle(page, () => page.fill('#clip', '1'));
  assert.equal(await page.$eval('figure[data-stage="rel_k"] canvas', (c) => c.dataset.rows), '3');
  await settle(page, () => page.check('#relative_values'));
  await settle(page, () => page.uncheck('#relative_values'));
  assert.ok(!(await stages()).includes('rel_v'), 'a^V off still shows w^V');
  // The content term off: its stage is zeros, coloured over ±1 (not ±1.18e-38), and the logits' note says so.
  await settle(page, () => page.check('#relative_only'));
  assert.equal(await page.getAttribute('figure[data-stage="content_logits"]', 'data-range'), '-1 1');
  assert.match(await page.locator('figure[data-stage="logits"] .notice').innerText(), /relative term alone/);
  await settle(page, () => page.uncheck('#relative_only'));
  await settle(page, () => page.check('#per_head_tables'));
  // The logits' scale (an option of every front end): T5's unscaled logits say so, and the link keeps it.
  await settle(page, () => page.selectOption('#logit_scale', 'none'));
  assert.match(await page.locator('figure[data-stage="logits"] .notice').innerText(), /Not scaled by 1\/√d_head/);
  assert.match(page.url(), /logit_scale=none/);
  await settle(page, () => page.selectOption('#logit_scale', 'inv_sqrt_d_head'));
  await settle(page, () => page.fill('#seed', '7'));
  await settle(page, () => page.fill('#sentence', 'a b c d e f'));
  assert.equal(await page.inputValue('#n'), '6');
  await assertNotBlank('after every control');

  // Keyboard: the controls are reachable and change with keys.
  await page.focus('#clip');
  await settle(page, () => page.keyboard.press('ArrowUp'));
  assert.equal(await page.inputValue('#clip'), '2');

  // Bad input: an error naming the field and its range next to the control; the last view stays.
  const before = await readyId(page);
  const figures = (await stages()).length;
  await page.fill('#n', '0');
  await page.waitForFunction(() => document.getElementById('err-n').textContent !== '', null, { timeout: 10000 });
  const msg = await page.locator('#err-n').innerText();
  assert.match(msg, /invalid n/);
  assert.match(msg, /1\.\.=8192/);
  assert.equal(await page.getAttribute('#n', 'aria-invalid'), 'true');
  assert.equal(await readyId(page), before, 'the view changed on bad input');
  assert.equal((await stages()).length, figures);
  await page.screenshot({ path: join(artifacts, 'bad-input.png') });
  await settle(page, () => page.fill('#n', '6'));
  assert.equal(await page.locator('#err-n').innerText(), '');
  await page.fill('#heads', '5');
  await page.waitForFunction(() => document.getElementById('err-heads').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-heads').innerText(), /divisor of d_model = 32/);
  assert.equal(await page.locator('#err-n').innerText(), '');
  await settle(page, () => page.fill('#heads', '2'));
  assert.equal(await page.locator('#err-heads').innerText(), '');
});

test('clicking a cell pins it in every view and marks the table row it used', async () => {
  await settle(page, () => page.selectOption('#preset', 'seed000-shaw'));
  const t = await hover('weights', 3, 5);
  const pixel = (stage, i, j) => page.$eval(`figure[data-stage="${stage}"] canvas`, (c, [ii, jj]) => {
    const d = c.dataset;
    const cw = (d.x1 - d.x0) / d.cols;
    const ch = (d.y1 - d.y0) / d.rows;
    // The outline's edge, just inside the cell's top-left corner.
    const x = Math.round(Number(d.x0) + jj * cw);
    const y = Math.round(Number(d.y0) + ii * ch);
    return Array.from(c.getContext('2d').getImageData(x, y - 1, 1, 1).data);
  }, [i, j]);
  const unpinned = await pixel('content_logits', 3, 5);
  await page.mouse.click(t.x, t.y);
  const label = await page.locator('#pinned').innerText();
  assert.match(label, /\(i, j\) = \(3, 5\)/);
  assert.match(label, /table row 9/); // clip(5 − 3, 7) + 7
  assert.notDeepEqual(await pixel('content_logits', 3, 5), unpinned, 'the pin is not drawn in another view');
  await page.keyboard.press('Escape');
  const rowBefore = await pixel('rel_k', 9, 0);
  await page.mouse.click(t.x, t.y);
  assert.notDeepEqual(await pixel('rel_k', 9, 0), rowBefore, 'table row 9 is not outlined');
  await page.locator('figure[data-stage="rel_k"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'pinned.png') });
  // Arrow keys move the pin.
  await page.focus('figure[data-stage="weights"] canvas');
  await page.keyboard.press('ArrowRight');
  assert.match(await page.locator('#pinned').innerText(), /\(i, j\) = \(3, 6\)/);
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#pinned').innerText(), '');
});

test('reverse linking: a table row pinned shades every pair that reads it, in every (i, j) view', async () => {
  await settle(page, () => page.selectOption('#preset', 'seed000-shaw'));
  const pixel = (stage, i, j) => page.$eval(`figure[data-stage="${stage}"] canvas`, (c, [ii, jj]) => {
    const d = c.dataset;
    const x = Math.round(Number(d.x0) + (jj + 0.5) * ((d.x1 - d.x0) / d.cols));
    const y = Math.round(Number(d.y0) + (ii + 0.5) * ((d.y1 - d.y0) / d.rows));
    return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
  }, [i, j]);
  // k = 7: row 9 is distance +2, read by the 10 pairs (i, i + 2) of n = 12.
  const before = { on: await pixel('weights', 3, 5), off: await pixel('weights', 3, 4), rel: await pixel('relative_logits', 7, 9) };
  const t = await hover('rel_k', 9, 3);
  await page.mouse.click(t.x, t.y);
  await pinnedMatches(/pinned table row 9 \(distance 2\): read by 10 pairs/);
  assert.notDeepEqual(await pixel('weights', 3, 5), before.on, 'a reader of row 9 is not shaded');
  // The pinned row is in the link, and the link brings it back.
  assert.match(page.url(), /[?&]row=9(&|$)/);
  const again = await page.context().newPage();
  await again.goto(page.url());
  await again.waitForFunction(() => document.body.dataset.ready && /pinned table row 9/.test(document.getElementById('pinned').innerText), null, { timeout: 30000 });
  await again.close();
  assert.notDeepEqual(await pixel('relative_logits', 7, 9), before.rel, 'not shaded in another (i, j) view');
  assert.deepEqual(await pixel('weights', 3, 4), before.off, 'a pair at another distance is shaded');
  await page.locator('figure[data-stage="weights"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'reverse-link.png') });
  await page.keyboard.press('Escape');
  await page.mouse.click(t.x, t.y);
  await page.mouse.click(t.x, t.y);
  assert.equal(await page.locator('#pinned').innerText(), '', 'a second click unpins');
});

test('the skew: a pinned pair is outlined on its own value in every step, causal and bidirectional', async () => {
  const pixel = (stage, i, j) => page.$eval(`figure[data-stage="${stage}"] canvas`, (c, [ii, jj]) => {
    const d = c.dataset;
    const x = Math.round(Number(d.x0) + jj * ((d.x1 - d.x0) / d.cols));
    const y = Math.round(Number(d.y0) + ii * ((d.y1 - d.y0) / d.rows));
    return Array.from(c.getContext('2d').getImageData(x, y - 1, 1, 1).data);
  }, [i, j]);
  const n = 6;
  for (const causal of [false, true]) {
    await page.goto(`${base}?method=music&n=${n}&d_model=16&heads=1&clip=5&causal=${causal ? 1 : 0}&rel_v=0&sentence=&backend=cpu`);
    await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
    const [i, j] = causal ? [3, 1] : [2, 3];
    // Where (i, j) of the relative logits sits in each step (src/positions/music.rs): column j − i + n − 1 of Q E_rᵀ, one
    // further right after the causal zero column (the bidirectional one is last), and in the reshaped buffer
    // row i + 1 (causal: the slice drops row 0) or column j + n − 1 (bidirectional: the slice drops n − 1 columns).
    const at = {
      skew_qer: [i, j - i + n - 1],
      skew_padded: [i, j - i + n - (causal ? 0 : 1)],
      skew_reshaped: causal ? [i + 1, j] : [i, j + n - 1],
      skew_sliced: [i, j],
    };
    const before = {};
    for (const [stage, [r, c]] of Object.entries(at)) before[stage] = await pixel(stage, r, c);
    const want = Number((await hover('relative_logits', i, j)).value);
    const t = await hover('weights', i, j);
    await page.mouse.click(t.x, t.y);
    for (const [stage, [r, c]] of Object.entries(at)) {
      assert.equal(Number((await hover(stage, r, c)).value), want, `causal ${causal}: ${stage} (${r}, ${c}) holds the pair's relative logit`);
      assert.notDeepEqual(await pixel(stage, r, c), before[stage], `causal ${causal}: the pin is not drawn in ${stage} at (${r}, ${c})`);
    }
    // Presentation: stepping to a skew step with the pin on, the pinned cell is outlined there too.
    await page.click('#present-btn');
    await page.waitForSelector('#present:not([hidden])');
    for (let k = 0; k < 20 && (await page.getAttribute('#present', 'data-stage')) !== 'skew_reshaped'; k++) await page.keyboard.press('ArrowRight');
    const edge = await page.$eval('#present canvas', (c, [r, col]) => {
      const d = c.dataset;
      const x = Math.round(Number(d.x0) + col * ((d.x1 - d.x0) / d.cols)) - 1;
      const y = Math.round(Number(d.y0) + r * ((d.y1 - d.y0) / d.rows)) - 1;
      return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
    }, at.skew_reshaped);
    const [er, eg, eb] = edge;
    // The outline's yellow (or its black rim), anti-aliased where the cell's edge falls between pixels.
    assert.ok((er > 150 && eg > 120 && eb < 90) || (er < 50 && eg < 50 && eb < 50), `causal ${causal}: no outline at the pinned cell of the presented reshaped step: ${edge}`);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#present', { state: 'hidden' });
    const padded = await page.locator('figure[data-stage="skew_padded"] canvas').getAttribute('aria-label');
    assert.match(padded, causal ? /zero column first, L × \(L \+ 1\)/ : /zero column last, L × 2L/);
    // Reverse linking through the skew: the row of E_r this pair reads, pinned, shades its diagonal's cells
    // in every step (here: column j − i + n − 1 of Q E_rᵀ).
    const corner = (stage, r, c) => page.$eval(`figure[data-stage="${stage}"] canvas`, (cv, [rr, cc]) => {
      const d = cv.dataset;
      const x = Math.round(Number(d.x0) + cc * ((d.x1 - d.x0) / d.cols)) + 4;
      const y = Math.round(Number(d.y0) + rr * ((d.y1 - d.y0) / d.rows)) + 4;
      return Array.from(cv.getContext('2d').getImageData(x, y, 1, 1).data);
    }, [r, c]);
    const row = Number((await hover('rel_index', i, j)).value);
    const qer = [i + 1 < n ? i + 1 : i - 1, j - i + n - 1];
    const unshaded = await corner('skew_qer', qer[0], qer[1]);
    const e = await hover('rel_k', row, 0);
    await page.mouse.click(e.x, e.y);
    await pinnedMatches(new RegExp(`pinned table row ${row} .*read by \\d+ pairs`));
    assert.notDeepEqual(await corner('skew_qer', qer[0], qer[1]), unshaded, `causal ${causal}: the diagonal is not followed into Q E_rᵀ`);
    await page.keyboard.press('Escape');
    // n = 6: cells are large enough for their values to be written in them (more than the cell's colour).
    const colours = await page.$eval('figure[data-stage="content_logits"] canvas', (c) => {
      const d = c.dataset;
      const [w, h] = [(d.x1 - d.x0) / d.cols, (d.y1 - d.y0) / d.rows];
      const px = c.getContext('2d').getImageData(Math.round(Number(d.x0) + 3), Math.round(Number(d.y0) + 3), Math.floor(w) - 6, Math.floor(h) - 6).data;
      const seen = new Set();
      for (let k = 0; k < px.length; k += 4) seen.add(`${px[k]},${px[k + 1]},${px[k + 2]}`);
      return seen.size;
    });
    assert.ok(colours > 4, `cell (0, 0) has ${colours} colours: no value written in it`);
    // Above the diagonal (causal): a masked leftover, not a "zero vector".
    if (causal) assert.match((await hover('skew_sliced', 1, 4)).text, /masked \(j > i\)/);
    if (causal) {
      const [r, g, b] = await corner('skew_sliced', 1, 4);
      assert.ok(Math.abs(r - g) < 30 && Math.abs(g - b) < 30, `a leftover (j > i) of the causal skew is not greyed: ${[r, g, b]}`);
    }
    await page.locator('figure[data-stage="skew_reshaped"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(artifacts, `skew-pin-${causal ? 'causal' : 'bidirectional'}.png`) });
  }
});

test('a control added on both sides: batch sets the generated batch, the batch-element select follows, the URL keeps it', async () => {
  await page.goto(`${base}?method=shaw&n=5&d_model=8&heads=2&clip=2&seed=0&sentence=&backend=cpu`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  await settle(page, () => page.fill('#batch_size', '3'));
  assert.equal(await page.locator('#batch option').count(), 3);
  assert.match(page.url(), /batch_size=3/);
  const a = (await hover('content_logits', 1, 2)).value;
  await settle(page, () => page.selectOption('#batch', '2'));
  assert.notEqual((await hover('content_logits', 1, 2)).value, a, 'batch element 2 has its own x');
  await page.fill('#batch_size', '17');
  await page.waitForFunction(() => document.getElementById('err-batch_size').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-batch_size').innerText(), /batch_size.*1\.\.=16/);
  assert.equal(await page.locator('#batch option').count(), 3, 'the view stays');
  await settle(page, () => page.fill('#batch_size', '1'));
  // Back to the default page for the tests after this one.
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
});

test('zoom and pan: + / Ctrl+wheel zoom into a figure, dragging pans, 0 resets; the cells read stay exact, a minimap shows where', async () => {
  await page.goto(`${base}?method=shaw&n=64&d_model=16&heads=1&clip=4&seed=3&sentence=&backend=cpu`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const canvas = page.locator('figure[data-stage="weights"] canvas');
  const data = () => canvas.evaluate((c) => ({ ...c.dataset, width: c.width }));
  /** Hovers stage cell (i, j) through the view's window; returns the tooltip's data. */
  const at = async (i, j) => {
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    const d = await data();
    const scale = box.width / d.width;
    const x = box.x + (Number(d.x0) + (j - Number(d.c0) + 0.5) * ((d.x1 - d.x0) / d.cols)) * scale;
    const y = box.y + (Number(d.y0) + (i - Number(d.r0) + 0.5) * ((d.y1 - d.y0) / d.rows)) * scale;
    await page.mouse.move(x, y);
    await page.waitForFunction(([ii, jj]) => { const t = document.getElementById('tooltip'); return !t.hidden && Number(t.dataset.i) === ii && Number(t.dataset.j) === jj; }, [i, j], { timeout: 5000 });
    return page.locator('#tooltip').evaluate((t) => ({ ...t.dataset }));
  };
  const before = await at(40, 41);
  await canvas.focus();
  await page.keyboard.press('+');
  let d = await data();
  assert.deepEqual([d.rows, d.cols, d.r0, d.c0], ['32', '32', '16', '16'], 'zoomed on the centre');
  assert.equal((await at(40, 41)).value, before.value, 'the zoomed cell holds the same value');
  const magenta = await canvas.evaluate((c) => {
    const px = c.getContext('2d').getImageData(Number(c.dataset.x1) - 90, Number(c.dataset.y0), 90, 90).data;
    for (let k = 0; k < px.length; k += 4) if (px[k] > 200 && px[k + 1] < 80 && px[k + 2] > 120) return true;
    return false;
  });
  assert.ok(magenta, 'no minimap window drawn');
  // Ctrl + wheel zooms in further, at the pointer.
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -100);
  await page.keyboard.up('Control');
  d = await data();
  assert.equal(d.rows, '16');
  // Dragging pans.
  const box = await canvas.boundingBox();
  const [cx, cy] = [box.x + box.width / 3, box.y + box.height / 2];
  const r0 = Number(d.r0);
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  await page.mouse.move(cx, cy - 60, { steps: 4 });
  await page.mouse.up();
  assert.ok(Number((await data()).r0) > r0, 'dragging up does not pan down');
  assert.equal(await page.locator('#pinned').innerText(), '', 'a drag is not a pick');
  await page.screenshot({ path: join(artifacts, 'zoom.png') });
  await canvas.focus();
  await page.keyboard.press('0');
  d = await data();
  assert.deepEqual([d.rows, d.r0], ['64', '0'], '0 resets');
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
});

test('n = 1024 recomputes off the main thread and redraws', async () => {
  await settle(page, () => page.fill('#sentence', ''));
  await settle(page, () => page.selectOption('#method', 'music'));
  await page.fill('#n', '1024');
  await page.waitForFunction(() => !document.getElementById('busy').hidden, null, { timeout: 5000 });
  // The main thread answers while the worker computes.
  const t0 = Date.now();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  assert.ok(Date.now() - t0 < 1000, `a frame took ${Date.now() - t0} ms while busy`);
  await page.waitForFunction(() => document.getElementById('busy').hidden
    && document.querySelector('figure[data-stage="weights"] canvas').dataset.rows === '1024', null, { timeout: 90000 });
  await assertNotBlank('n = 1024');
  // A cell is under half a pixel here: the tooltip names the cell under the pointer, within 4 cells (about a pixel).
  const t = await hover('relative_logits', 700, 650, 4);
  assert.ok(Math.abs(t.i - 700) <= 4 && Math.abs(t.j - 650) <= 4, `${t.i}, ${t.j}`);
  assert.match(t.text, /relative term = /);
  // Music n 1024: its whole trace would pass 256 MiB, so the forward runs and the head's stages are cut on demand.
  assert.match(await page.locator('footer').innerText(), /forward [\d.]+ ms · stages of the head shown [\d.]+ ms/);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'n1024.png') });
});

test('n = 8192 with 8 heads: held on demand, every stage drawn pooled; the tooltip, a row and a zoomed window read exact cells', async () => {
  const t0 = Date.now();
  await page.goto(`${base}?method=shaw&n=8192&d_model=512&heads=8&clip=16&seed=0&causal=0&rel_v=1&per_head=0&sentence=&backend=cpu`);
  // The busy line says what takes the time: the layer, then the stages of the head shown.
  await page.waitForFunction(() => document.getElementById('busy-text').textContent.startsWith('computing the stages of head 0 (held on demand: 8192 query rows'), null, { timeout: 300000, polling: 50 });
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 300000 });
  const opened = Date.now() - t0;
  const cur = () => page.evaluate(() => import('./js/page/state.js').then(({ state: s }) => ({
    onDemand: s.current.info.on_demand, memory: s.current.memory, head: s.current.shown.head, timings: s.current.timings,
    withValues: s.current.stages.filter((st) => st.values).map((st) => st.name),
  })));
  const c = await cur();
  assert.ok(c.onDemand, 'n 8192 × 8 heads is held on demand');
  // Only the stages of at most 1024 × 1024 cells come with their values: the tables, buckets and head outputs.
  assert.deepEqual(c.withValues, ['rel_k', 'rel_v', 'value_buckets', 'output_content', 'output_relative']);
  assert.ok(c.memory < 1.5 * 2 ** 30, `worker memory ${c.memory}`);
  await assertNotBlank('n = 8192 × 8 heads');
  assert.equal(await page.locator('figure[data-stage="weights"] canvas').evaluate((cv) => cv.dataset.rows), '8192');
  // No whole trace to export: the export says so and names the CLI.
  await page.click('#export-npz');
  await page.waitForFunction(() => document.getElementById('err-general').textContent.includes('relattn compute'), null, { timeout: 10000 });
  // A figure's SVG: the vector frame with the pooled cells embedded as a raster.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('figure[data-stage="weights"] .export-svg')]);
  const svg = readFileSync(await dl.path(), 'utf8');
  assert.ok(svg.startsWith('<svg') && svg.includes('<image') && svg.includes('[8192 × 8192]'), svg.slice(0, 300));
  // The tooltip asks for the cell: '…', then the exact value; a row of the weights (asked the same way) sums to 1
  // and holds it.
  const t = await hover('weights', 5000, 4990, 16);
  await page.waitForFunction(() => { const tip = document.getElementById('tooltip'); return tip.dataset.value !== '' && !tip.innerText.includes('…'); }, null, { timeout: 20000 });
  const tip = await page.locator('#tooltip').evaluate((el) => ({ ...el.dataset, text: el.innerText }));
  const row = await page.evaluate((i) => import('./js/page/worker-client.js').then((m) => m.askCells('weights', i, 0, 1, 8192)).then((v) => Array.from(v)), Number(tip.i));
  assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-3, 'the row sums to 1');
  assert.equal(Number(tip.value), row[Number(tip.j)], `tooltip (${t.i}, ${t.j})`);
  assert.match(tip.text, /content term q·k = -?[\d.]/);
  // Three zooms (8192 → 1024 a side): the window's cells come from the worker; the value under the pointer is the same.
  const canvas = page.locator('figure[data-stage="weights"] canvas');
  await canvas.focus();
  for (let k = 0; k < 3; k++) await page.keyboard.press('+');
  assert.equal(await canvas.evaluate((cv) => cv.dataset.rows), '1024');
  await page.waitForFunction(() => import('./js/page/state.js').then(({ state: s }) => { const v = s.views.get('weights'); return v.asked && v.asked.values && v.cells.values; }), null, { timeout: 20000, polling: 200 });
  await page.keyboard.press('0');
  // A table row pinned: its readers come from the worker and are shaded though no (n, n) stage came with its
  // values. Row 16 is distance 0 (the diagonal: 8192 pairs); row 0 the edge, j − i ≤ −16 (8176 · 8177 / 2 pairs).
  const weightsPixel = (i, j) => page.$eval('figure[data-stage="weights"] canvas', (cv, [ii, jj]) => {
    const d = cv.dataset;
    const x = Math.floor(Number(d.x0) + (jj + 0.5) * ((d.x1 - d.x0) / d.cols));
    const y = Math.floor(Number(d.y0) + (ii + 0.5) * ((d.y1 - d.y0) / d.rows));
    return Array.from(cv.getContext('2d').getImageData(x, y, 1, 1).data);
  }, [i, j]);
  // B's column 16 is outlined: a pixel just left of it (its outline's edge).
  const bucketsEdge = () => page.$eval('figure[data-stage="value_buckets"] canvas', (cv) => {
    const d = cv.dataset;
    const x = Math.round(Number(d.x0) + 16 * ((d.x1 - d.x0) / d.cols)) - 2;
    const y = Math.round((Number(d.y0) + Number(d.y1)) / 2);
    return Array.from(cv.getContext('2d').getImageData(x, y, 1, 1).data);
  });
  const before = { diagonal: await weightsPixel(4000, 4000), below: await weightsPixel(6000, 1000), above: await weightsPixel(1000, 6000), buckets: await bucketsEdge() };
  let e = await hover('rel_k', 16, 3);
  await page.mouse.click(e.x, e.y);
  await pinnedMatches(/pinned table row 16 \(distance 0\): read by 8192 pairs/, 20000);
  assert.notDeepEqual(await weightsPixel(4000, 4000), before.diagonal, 'the diagonal is not shaded');
  assert.notDeepEqual(await bucketsEdge(), before.buckets, "B's column 16 is not outlined");
  assert.deepEqual(await weightsPixel(6000, 1000), before.below, 'a pair far below the diagonal is shaded');
  await page.keyboard.press('Escape');
  e = await hover('rel_k', 0, 3);
  await page.mouse.click(e.x, e.y);
  await pinnedMatches(/pinned table row 0 \(distances -\d+ … -16\): read by 33427576 pairs/, 20000);
  assert.notDeepEqual(await weightsPixel(6000, 1000), before.below, 'the lower corner is not shaded');
  assert.deepEqual(await weightsPixel(1000, 6000), before.above, 'the upper corner is shaded');
  await page.locator('figure[data-stage="weights"]').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, 'n8192-row.png') });
  await page.keyboard.press('Escape');
  // Another head: its stages are computed when it is selected (and the busy line says so).
  await page.evaluate(() => {
    const el = document.getElementById('busy-text');
    window.busyTexts = [];
    new MutationObserver(() => window.busyTexts.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
  });
  const t1 = Date.now();
  await settle(page, () => page.selectOption('#head', '5'), 300000);
  const switched = Date.now() - t1;
  assert.equal((await cur()).head, 5);
  const said = await page.evaluate(() => window.busyTexts);
  assert.ok(said.some((t) => t.startsWith('computing the stages of head 5 (')), JSON.stringify(said));
  console.log(`n 8192 × 8 heads: first view ${opened} ms, another head ${switched} ms, worker memory ${(c.memory / 2 ** 20).toFixed(0)} MiB; ${JSON.stringify((await cur()).timings)}`);
  // The Music Transformer's bidirectional skew at n 8192: its steps are (8192, 16383) … (8193, 16383), cut on demand too.
  const t2 = Date.now();
  await settle(page, () => page.selectOption('#method', 'music'), 300000);
  const music = await cur();
  assert.equal(await page.locator('figure[data-stage="skew_reshaped"] canvas').evaluate((cv) => cv.dataset.rows), '8193');
  assert.ok(music.memory < 1.5 * 2 ** 30, `worker memory ${music.memory}`);
  await assertNotBlank('Music n 8192 × 8 heads');
  console.log(`Music n 8192 × 8 heads (bidirectional): ${Date.now() - t2} ms, worker memory ${(music.memory / 2 ** 20).toFixed(0)} MiB; ${JSON.stringify(music.timings)}`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'n8192.png') });
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
});

test('no console errors or page errors', () => {
  assert.deepEqual(problems, []);
});
