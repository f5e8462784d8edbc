// End-to-end tests of RoPE, ALiBi, T5's buckets and DeBERTa's disentangled terms on the page: their stages, values read against the papers'
// formulas, their controls, reverse linking from a T5 bucket, and a refused option that keeps the result shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, prepare, startServer, launch, watch, close, hover, PANEL_SHOT, readyId, settle } from './harness.mjs';

let server;
let context;
let page;
let profile;
const problems = [];

before(async () => {
  prepare();
  let base;
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch({ acceptDownloads: true }));
  watch(page, problems);
  await page.goto(`${base}?backend=cpu`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(() => close({ context, server, profile }));

/** Runs `act`, then waits until the page shows a newer result and is no longer busy. */
const stages = () => page.$$eval('figure.view', (fs) => fs.map((f) => f.dataset.stage));
const near = (a, b, tol = 1e-3) => Math.abs(Number(a) - b) <= tol * Math.max(1, Math.abs(b));

test('each scheme shows its own stages and controls', async () => {
  const want = {
    rope: { has: ['rope_angles', 'rope_kernel', 'rotated_q', 'rotated_k', 'content_logits', 'weights'], not: ['rel_index', 'rel_k', 'relative_logits', 'slopes'] },
    alibi: { has: ['slopes', 'relative_logits', 'weights'], not: ['rel_index', 'rel_k', 'rotated_q'] },
    t5: { has: ['rel_index', 'rel_k', 'relative_logits', 'weights'], not: ['slopes', 'rotated_q', 'rel_v'] },
  };
  for (const [method, { has, not }] of Object.entries(want)) {
    await settle(page, () => page.selectOption('#method', method));
    const names = await stages();
    for (const s of has) assert.ok(names.includes(s), `${method}: no ${s} in ${names}`);
    for (const s of not) assert.ok(!names.includes(s), `${method}: ${s} shown`);
    assert.equal(await page.locator('#rope_base').isVisible(), method === 'rope');
    assert.equal(await page.locator('#t5_buckets').isVisible(), method === 't5');
    assert.ok(await page.locator('#relative_values').isDisabled() && await page.locator('#clip').isDisabled(), `${method}: a^V and k are Shaw's and Music's`);
    await page.screenshot({ path: join(artifacts, `scheme-${method}.png`) });
  }
});

test('ALiBi: the paper\'s slopes, and a bias of m·(j − i) added after the scale', async () => {
  await settle(page, () => page.selectOption('#preset', 'alibi-slopes'));
  for (let h = 0; h < 8; h++) assert.ok(near((await hover(page, 'slopes', h, 0)).value, 2 ** -(h + 1)), `slope of head ${h}`);
  const t = await hover(page, 'relative_logits', 5, 2);
  assert.ok(near(t.value, 0.5 * (2 - 5)), t.text);
  assert.match(t.text, /bias \(added after the scale\) = -1\.5/);
  assert.doesNotMatch(t.text, /table row/);
});

test('T5: buckets as Hugging Face computes them, and a pinned bucket shades its readers', async () => {
  await settle(page, () => page.selectOption('#preset', 't5-buckets'));
  assert.ok((await stages()).includes('rel_index'));
  // The preset's settings at n 160, so that a cell is a few pixels wide.
  await page.fill('#n', '160');
  await settle(page, () => page.dispatchEvent('#n', 'change'));
  // Bidirectional, 32 buckets, max_distance 128: keys after the query use 16..31; d = 7 is exact (23),
  // d = 100 is log-spaced (31), d = −12 … −15 share bucket 9.
  for (const [j, b] of [[7, 23], [100, 31], [0, 0]]) assert.equal(Number((await hover(page, 'rel_index', 0, j)).value), b, `bucket of ${j}`);
  assert.equal(Number((await hover(page, 'rel_index', 20, 6)).value), 9);
  const tip = await hover(page, 'rel_index', 20, 6);
  assert.match(tip.text, /bucket of j − i = 9/);
  const bias = Number((await hover(page, 'rel_k', 9, 0)).value);
  assert.ok(near((await hover(page, 'relative_logits', 20, 6)).value, bias), 'the bias is the bucket\'s');
  const canvas = page.locator('figure[data-stage="rel_k"] canvas');
  const box = await canvas.boundingBox();
  const d = await canvas.evaluate((c) => ({ ...c.dataset, width: c.width }));
  const scale = box.width / d.width;
  await page.mouse.click(box.x + ((Number(d.x0) + Number(d.x1)) / 2) * scale, box.y + (Number(d.y0) + ((9 + 0.5) * (d.y1 - d.y0)) / d.rows) * scale);
  // Distances −15 … −12 at n 160: Σ (160 − |d|) = 586 pairs.
  await page.waitForFunction(() => /pinned table row 9 \(distances -?\d+ … -?\d+\): read by 586 pairs/.test(document.getElementById('pinned').innerText), null, { timeout: 10000 });
  await page.keyboard.press('Escape');
});

test('DeBERTa: its log-bucketed rows, a stage per term, their sum, its controls, a bucket count refused by name', async () => {
  await settle(page, () => page.selectOption('#preset', ''));
  await settle(page, () => page.selectOption('#method', 'deberta'));
  for (const id of ['position_buckets', 'max_relative_positions', 'deberta_terms']) assert.ok(await page.locator(`#${id}`).isVisible(), `${id} shown`);
  assert.ok(!(await page.locator('#t5_buckets').isVisible()) && await page.locator('#clip').isDisabled());
  for (const [id, value] of [['n', '12'], ['d_model', '64'], ['heads', '2'], ['position_buckets', '4'], ['max_relative_positions', '8']]) {
    if ((await page.inputValue(`#${id}`)) === value) continue;
    await page.fill(`#${id}`, value);
    await settle(page, () => page.dispatchEvent(`#${id}`, 'change'));
  }
  const names = await stages();
  for (const s of ['rel_index', 'rel_k', 'content_logits', 'c2p', 'p2c', 'relative_logits', 'logits', 'weights']) assert.ok(names.includes(s), `no ${s} in ${names}`);
  assert.ok(names.indexOf('c2p') < names.indexOf('p2c') && names.indexOf('p2c') < names.indexOf('relative_logits'));
  for (const [stage, title] of [['c2p', 'Content → position c2p: c2p_ij = q_i · K_r[r(i, j)]'], ['p2c', 'Position → content p2c: p2c_ij = k_j · Q_r[r(i, j)]'], ['rel_k', 'Relative tables K_r | Q_r']]) {
    const label = await page.locator(`figure[data-stage="${stage}"] canvas`).getAttribute('aria-label');
    assert.ok(label.startsWith(title), label);
  }
  // δ = i − j in 4 buckets up to 8 (m = 2, S = 4): |δ| ≤ 2 exact, δ = 3 → 3, δ = −8 → −4, then + S, clamped to 0..7.
  for (const [i, j, row] of [[5, 5, 4], [0, 1, 3], [3, 0, 7], [0, 8, 0], [11, 0, 7]]) assert.equal(Number((await hover(page, 'rel_index', i, j)).value), row, `row of (${i}, ${j})`);
  assert.match((await hover(page, 'rel_index', 0, 1)).text, /table row of i − j = 3/);
  const sum = Number((await hover(page, 'c2p', 4, 9)).value) + Number((await hover(page, 'p2c', 4, 9)).value);
  const t = await hover(page, 'relative_logits', 4, 9);
  assert.ok(near(t.value, sum), `${t.value} vs c2p + p2c ${sum}`);
  assert.match(t.text, /c2p \+ p2c = /);
  // The logits: (q·k + c2p + p2c) / √(3·d_head), d_head 32.
  const content = Number((await hover(page, 'content_logits', 4, 9)).value);
  assert.ok(near((await hover(page, 'logits', 4, 9)).value, (content + sum) / Math.sqrt(3 * 32)));
  await page.selectOption('#deberta_terms', 'p2c');
  await page.waitForFunction(() => !document.querySelector('figure[data-stage="c2p"]') && document.getElementById('busy').hidden, null, { timeout: 30000 });
  assert.ok((await stages()).includes('p2c'));
  const shown = await readyId(page);
  await page.fill('#position_buckets', '1');
  await page.dispatchEvent('#position_buckets', 'change');
  await page.waitForFunction(() => document.getElementById('err-position_buckets').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-position_buckets').innerText(), /position_buckets.*0 \(no buckets\) or 2 to 65536/);
  assert.equal(await readyId(page), shown);
  await page.fill('#position_buckets', '4');
  await settle(page, () => page.dispatchEvent('#position_buckets', 'change'));
  await settle(page, () => page.selectOption('#deberta_terms', 'both'));
});

test('BERT relative: rows i − j + P − 1, the query and key terms as stages and in the tooltip, a sequence past max_position refused by name', async () => {
  await settle(page, () => page.selectOption('#preset', ''));
  await settle(page, () => page.selectOption('#method', 'bert_relative'));
  for (const id of ['max_position', 'bert_terms']) assert.ok(await page.locator(`#${id}`).isVisible(), `${id} shown`);
  assert.ok(!(await page.locator('#position_buckets').isVisible()) && await page.locator('#clip').isDisabled());
  for (const [id, value] of [['n', '12'], ['d_model', '64'], ['heads', '2'], ['max_position', '16']]) {
    if ((await page.inputValue(`#${id}`)) === value) continue;
    await page.fill(`#${id}`, value);
    await settle(page, () => page.dispatchEvent(`#${id}`, 'change'));
  }
  await settle(page, () => page.selectOption('#bert_terms', 'key_query'));
  const names = await stages();
  for (const s of ['rel_index', 'rel_k', 'content_logits', 'c2p', 'p2c', 'relative_logits', 'logits', 'weights']) assert.ok(names.includes(s), `no ${s} in ${names}`);
  for (const [stage, title] of [['c2p', 'Query term q_i · a_ij'], ['p2c', 'Key term k_j · a_ij'], ['rel_k', 'Distance embeddings A'], ['rel_index', 'Table row i − j + P − 1']]) {
    const label = await page.locator(`figure[data-stage="${stage}"] canvas`).getAttribute('aria-label');
    assert.ok(label.startsWith(title), label);
  }
  // r = i − j + P − 1, P = 16: no clipping.
  for (const [i, j] of [[5, 5], [0, 11], [11, 0], [3, 7]]) assert.equal(Number((await hover(page, 'rel_index', i, j)).value), i - j + 15, `row of (${i}, ${j})`);
  const query = Number((await hover(page, 'c2p', 4, 9)).value);
  const key = Number((await hover(page, 'p2c', 4, 9)).value);
  const t = await hover(page, 'relative_logits', 4, 9);
  assert.ok(near(t.value, query + key), `${t.value} vs q·a + k·a ${query + key}`);
  // The tooltip splits the cell into its terms.
  assert.match(t.text, /q·a \(\+ k·a\) = /);
  assert.match(t.text, /Query term q_i · a_ij = /);
  assert.match(t.text, /Key term k_j · a_ij = /);
  // The logits: (q·k + q·a + k·a) / √d_head, d_head 32.
  const content = Number((await hover(page, 'content_logits', 4, 9)).value);
  assert.ok(near((await hover(page, 'logits', 4, 9)).value, (content + query + key) / Math.sqrt(32)));
  await page.selectOption('#bert_terms', 'key');
  await page.waitForFunction(() => !document.querySelector('figure[data-stage="p2c"]') && document.getElementById('busy').hidden, null, { timeout: 30000 });
  assert.ok((await stages()).includes('c2p'));
  const shown = await readyId(page);
  await page.fill('#max_position', '11');
  await page.dispatchEvent('#max_position', 'change');
  await page.waitForFunction(() => document.getElementById('err-max_position').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-max_position').innerText(), /max_position.*at least the 12 positions/);
  assert.equal(await readyId(page), shown);
  await page.fill('#max_position', '16');
  await settle(page, () => page.dispatchEvent('#max_position', 'change'));
});

test('Transformer-XL: AC with u, BD before and after rel_shift, EF with segments, the tooltip\'s parts, segments refused by name', async () => {
  await settle(page, () => page.selectOption('#preset', ''));
  await settle(page, () => page.selectOption('#method', 'transformer_xl'));
  assert.ok(await page.locator('#segments').isVisible() && !(await page.locator('#clip').isDisabled()));
  assert.ok(!(await page.locator('#position_buckets').isVisible()));
  if (await page.isChecked('#causal')) await settle(page, () => page.uncheck('#causal'));
  for (const [id, value] of [['n', '12'], ['d_model', '64'], ['heads', '2'], ['clip', '11'], ['segments', '2']]) {
    if ((await page.inputValue(`#${id}`)) === value) continue;
    await page.fill(`#${id}`, value);
    await settle(page, () => page.dispatchEvent(`#${id}`, 'change'));
  }
  const names = await stages();
  for (const s of ['rel_index', 'rel_k', 'content_logits', 'bd_relative', 'bd', 'ef', 'relative_logits', 'logits', 'weights']) assert.ok(names.includes(s), `no ${s} in ${names}`);
  assert.ok(names.indexOf('bd_relative') < names.indexOf('bd') && names.indexOf('bd') < names.indexOf('ef') && names.indexOf('ef') < names.indexOf('relative_logits'));
  for (const [stage, title] of [['content_logits', 'AC = (q_i + u) · k_j'], ['bd_relative', 'BD before rel_shift'], ['bd', 'BD after rel_shift']]) {
    const label = await page.locator(`figure[data-stage="${stage}"] canvas`).getAttribute('aria-label');
    assert.ok(label.startsWith(title), label);
  }
  // k 11, bidirectional: the row of r is k − (i − j), XLNet's descending order.
  for (const [i, j, row] of [[5, 5, 11], [0, 1, 12], [3, 0, 8]]) assert.equal(Number((await hover(page, 'rel_index', i, j)).value), row, `row of (${i}, ${j})`);
  // rel_shift: BD(i, j) is BD_rel(i, Lq − i + j) (position Lk − c = i − j).
  const bd = Number((await hover(page, 'bd', 4, 9)).value);
  assert.ok(near((await hover(page, 'bd_relative', 4, 12 - 4 + 9)).value, bd), 'rel_shift moved BD_rel\'s column into place');
  const ef = Number((await hover(page, 'ef', 4, 9)).value);
  const t = await hover(page, 'relative_logits', 4, 9);
  assert.ok(near(t.value, bd + ef), `${t.value} vs BD + EF ${bd + ef}`);
  assert.match(t.text, /AC = \(q \+ u\)·k = /);
  assert.match(t.text, /BD \+ EF = /);
  assert.match(t.text, /BD after rel_shift = /);
  assert.match(t.text, /EF: segment term \(q_i \+ s\) · seg = /);
  // The logits: (AC + BD + EF) / √d_head, d_head 32.
  const content = Number((await hover(page, 'content_logits', 4, 9)).value);
  assert.ok(near((await hover(page, 'logits', 4, 9)).value, (content + bd + ef) / Math.sqrt(32)));
  // No segments: no EF stage.
  await page.fill('#segments', '0');
  await page.dispatchEvent('#segments', 'change');
  await page.waitForFunction(() => !document.querySelector('figure[data-stage="ef"]') && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const shown = await readyId(page);
  await page.fill('#segments', '-1');
  await page.dispatchEvent('#segments', 'change');
  await page.waitForFunction(() => document.getElementById('err-segments').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-segments').innerText(), /segments.*0\.\.=65536/);
  assert.equal(await readyId(page), shown);
  await page.fill('#segments', '0');
  await settle(page, () => page.dispatchEvent('#segments', 'change'));
});

test('RoPE: a kernel of the distance alone, layouts that differ on the same weights, options refused by name', async () => {
  await settle(page, () => page.selectOption('#preset', 'rope-kernel'));
  // κ(0) = 1 on the diagonal; every diagonal holds one value.
  for (const i of [0, 10, 40]) assert.ok(near((await hover(page, 'rope_kernel', i, i)).value, 1), `κ(0) at ${i}`);
  assert.ok(near((await hover(page, 'rope_kernel', 3, 9)).value, Number((await hover(page, 'rope_kernel', 30, 36)).value), 1e-5));
  const t = await hover(page, 'content_logits', 4, 2);
  assert.match(t.text, /rotated q'·k' = /);
  const interleaved = Number((await hover(page, 'rotated_q', 5, 1)).value);
  await settle(page, () => page.selectOption('#preset', 'rope-half-split'));
  assert.equal(await page.inputValue('#rope_layout'), 'half');
  const half = Number((await hover(page, 'rotated_q', 5, 1)).value);
  assert.ok(Math.abs(half - interleaved) > 1e-3, `the same component after both layouts: ${half} vs ${interleaved}`);
  // A fraction that leaves no pair is refused naming the option; the result shown stays.
  const shown = await readyId(page);
  await page.fill('#rope_fraction', '0.01');
  await page.dispatchEvent('#rope_fraction', 'change');
  await page.waitForFunction(() => document.getElementById('err-rope_fraction').textContent !== '', null, { timeout: 10000 });
  assert.match(await page.locator('#err-rope_fraction').innerText(), /rope_fraction.*0\.01.*at least/);
  assert.equal(await readyId(page), shown);
  assert.ok((await stages()).includes('rotated_q'));
  await page.fill('#rope_fraction', '1');
  await settle(page, () => page.dispatchEvent('#rope_fraction', 'change'));
  assert.equal(await page.locator('#err-rope_fraction').innerText(), '');
});

test('compare schemes: every scheme on one input, their attention by distance, one slide', async () => {
  await page.selectOption('#preset', '');
  await page.fill('#sentence', 'the cat sat on the mat because it was warm');
  await settle(page, () => page.dispatchEvent('#sentence', 'input'));
  await settle(page, () => page.selectOption('#method', 'shaw'));
  await page.fill('#heads', '2');
  await settle(page, () => page.dispatchEvent('#heads', 'input'));
  await page.click('#compare-btn');
  await page.waitForFunction(() => document.getElementById('compare').dataset.ready, null, { timeout: 60000 });
  // The schemes compared (Method::ALL's, however many, less those app::compare leaves out), DeBERTa among them,
  // each one the method control offers, once, with its colour.
  const methods = await page.$$eval('#compare-grid figure', (fs) => fs.map((f) => f.dataset.method));
  const offered = await page.$$eval('#method option', (os) => os.map((o) => o.value));
  assert.ok(methods.every((m) => offered.includes(m)) && new Set(methods).size === methods.length, methods.join());
  for (const m of ['absolute', 'shaw', 'music', 'rope', 'alibi', 't5', 'deberta']) assert.ok(methods.includes(m), `${m} not compared: ${methods}`);
  const colours = await page.evaluate(async () => (await import('/js/page/scheme-colors.js')).SCHEME_COLORS);
  for (const m of methods) assert.ok(colours[m], `${m} has no colour (www/js/page/scheme-colors.js)`);
  // Every figure drew (a frame and cells), each under its scheme's name.
  const drawn = await page.$$eval('#compare-grid canvas', (cs) => cs.map((c) => ({ label: c.getAttribute('aria-label'), cols: Number(c.dataset.cols) })));
  for (const d of drawn) assert.ok(d.cols === 10 && /softmax_j/.test(d.label), JSON.stringify(d));
  // Each profile is a distribution over distances (the rows of the weights sum to 1).
  const sums = JSON.parse(await page.getAttribute('#compare-profile', 'data-sums'));
  for (const [m, s] of Object.entries(sums)) assert.ok(Math.abs(s - 1) < 1e-4, `${m}: ${s}`);
  assert.match(await page.locator('#compare-desc').innerText(), /“the cat sat on the mat because it was warm”/);
  // The chart's tooltip names every scheme's share at the distance under the pointer (the chart scrolled into view:
  // with nine schemes their panels fill more than the window).
  await page.locator('#compare-profile').scrollIntoViewIfNeeded();
  const box = await page.locator('#compare-profile').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: 5000 });
  const tip = await page.locator('#tooltip').innerText();
  for (const label of ['absolute (sinusoidal)', 'Shaw et al. 2018', 'Music Transformer', 'RoPE', 'ALiBi', 'T5 buckets', 'DeBERTa']) assert.ok(tip.includes(label), tip);
  assert.equal(tip.split('\n').filter((l) => /% of the attention$/.test(l)).length, methods.length, tip);
  // Another head: the comparison follows it.
  const before = await page.getAttribute('#compare', 'data-ready');
  await settle(page, () => page.selectOption('#head', '1'));
  await page.waitForFunction((b) => { const r = document.getElementById('compare').dataset.ready; return r && r !== b; }, before, { timeout: 60000 });
  assert.match(await page.locator('#compare-desc').innerText(), /head 1 shown/);
  // The exported slides are 16:9, 1920 × 1080 (the PNGs' IHDR): the panels, at most six a slide, then the chart.
  const panelSlides = Math.ceil(methods.length / 6);
  const downloads = [];
  const all = new Promise((done) => page.on('download', (d) => { downloads.push(d); if (downloads.length === panelSlides + 1) done(); }));
  await page.click('#compare-png');
  await all;
  const names = ['panels', ...Array.from({ length: panelSlides - 1 }, (_, k) => `panels_${k + 2}`), 'chart'];
  assert.deepEqual(downloads.map((d) => d.suggestedFilename()), names.map((x) => `relattn-schemes-weights-n10-h1-${x}.png`));
  for (const d of downloads) {
    const png = readFileSync(await d.path());
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [1920, 1080]);
  }
  await page.locator('#compare').screenshot({ ...PANEL_SHOT, path: join(artifacts, 'compare-schemes.png') });
  // Kept in the link; the caption says what is on.
  assert.match(page.url(), /[?&]compare=weights/);
  assert.match(await page.locator('#compare-desc').innerText(), /content and position together: with random weights the schemes look alike/);
  // The position terms: each scheme's own stage (DeBERTa's c2p + p2c, its relative logits), its mean by distance.
  let ready = await page.getAttribute('#compare', 'data-ready');
  await page.selectOption('#compare-what', 'term');
  await page.waitForFunction((b) => { const r = document.getElementById('compare').dataset.ready; return r && r !== b; }, ready, { timeout: 60000 });
  const own = { absolute: 'absolute_similarity', rope: 'rope_kernel' };
  assert.deepEqual(await page.$$eval('#compare-grid figure', (fs) => fs.map((f) => f.dataset.stage)), methods.map((m) => own[m] ?? 'relative_logits'));
  assert.match(await page.locator('#compare-desc').innerText(), /DeBERTa's: c2p \+ p2c, before the scale/);
  assert.match(page.url(), /[?&]compare=term/);
  // As slides at 1280 × 720: the panels, at most six a slide and three to a row, every one inside the screen,
  // each scheme on one slide (seven: four, then three), then the chart; the link opens on that slide.
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.click('#compare-present');
  const slid = [];
  for (let k = 0; k < panelSlides; k++) {
    const name = k ? `compare_${k + 1}` : 'compare';
    if (k) await page.keyboard.press('ArrowRight');
    await page.waitForFunction((n) => document.body.dataset.compareSlide === n, name);
    const shown = await page.$$eval('#compare-grid figure', (fs) => fs.map((f) => ({ method: f.dataset.method, ...f.getBoundingClientRect().toJSON() })));
    assert.ok(shown.length <= 6 && shown.length >= Math.floor(methods.length / panelSlides), `${name}: ${shown.length} panels`);
    for (const b of await page.$$eval('#compare-grid canvas', (cs) => cs.map((c) => c.getBoundingClientRect().toJSON()))) {
      assert.ok(b.left >= 0 && b.top >= 0 && b.right <= 1280 && b.bottom <= 720 && b.height > 200, JSON.stringify(b));
    }
    assert.ok(new Set(shown.map((f) => Math.round(f.left))).size <= 3, `${name}: at most three to a row`);
    assert.match(await page.locator('#compare-heading').innerText(), /^\S+ schemes, one input: position terms$/);
    assert.equal(await page.locator('#compare-step').innerText(), `${k + 1} / ${panelSlides + 1} · → ← · Esc leaves`);
    assert.match(page.url(), new RegExp(`present=${name}(&|$)`));
    await page.screenshot({ path: join(artifacts, `compare-slide${k ? `-${k + 1}` : ''}.png`) });
    slid.push(...shown.map((f) => f.method));
  }
  assert.deepEqual(slid, methods, 'every scheme on one slide, in order');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.body.dataset.compareSlide === 'compare_chart');
  const chart = await page.locator('#compare-profile').boundingBox();
  assert.ok(chart.height > 400 && chart.width > 1100, JSON.stringify(chart));
  assert.match(page.url(), /present=compare_chart/);
  const linked = await context.newPage();
  watch(linked, problems);
  await linked.setViewportSize({ width: 1280, height: 720 });
  await linked.goto(page.url());
  await linked.waitForFunction(() => document.body.dataset.compareSlide === 'compare_chart' && document.getElementById('compare').dataset.ready, null, { timeout: 60000 });
  assert.equal(await linked.inputValue('#compare-what'), 'term');
  await linked.close();
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.body.dataset.compareSlide === undefined);
  await page.setViewportSize(viewport);
  // Too long a sequence to compare is refused by name, and the view stays.
  await page.fill('#sentence', '');
  await page.dispatchEvent('#sentence', 'input');
  await page.fill('#n', '3000');
  await settle(page, () => page.dispatchEvent('#n', 'input'));
  await page.waitForFunction(() => /Not compared: .*n.*2048/.test(document.getElementById('compare-status').innerText), null, { timeout: 60000 });
  assert.equal(await page.locator('#compare-grid figure').count(), methods.length);
  await page.click('#compare-close');
  assert.ok(await page.locator('#compare').isHidden());
});

test('no console or page errors', () => {
  assert.deepEqual(problems, []);
});
