// The lecture given from the page's slides (#51, teaching round four), on a 1280 × 720 projector and a 1920 × 1080
// screen: every value written on a slide whose cells can hold them, whatever one of them needs, ... Screenshots in
// tests/e2e/artifacts/slide-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { root, artifacts, prepare, startServer, launch, watch, close, writeZip, npyF32, npyU8 } from './harness.mjs';

let server;
let base;
let context;
let profile;
const problems = [];

before(async () => {
  prepare();
  ({ server, base } = await startServer());
  ({ context, profile } = await launch({ acceptDownloads: true }));
});

after(() => close({ context, server, profile }));

const SCREENS = [[1280, 720], [1920, 1080]];

/** A page of `width` × `height` opened on `query` (which presents a stage: &present=) once the slide is drawn with its fonts;
 *  `init`: a script run first in the page (recordCanvasTexts). */
async function presenting(query, [width, height], init) {
  const p = await context.newPage();
  await p.setViewportSize({ width, height });
  watch(p, problems);
  if (init) await p.addInitScript(init);
  await p.goto(`${base}${query}`);
  await p.waitForFunction(() => document.body.dataset.ready && !document.getElementById('present').hidden && document.getElementById('busy').hidden, null, { timeout: 60000 });
  await p.evaluate(() => document.fonts.ready); // KaTeX's, loaded by the first formula shown: the slide is fitted again
  return p;
}

/** The boxes drawn under `within` that leave the screen (a slide's title, options, formula — KaTeX's every
 *  box —, notice and figure), each as 'what: left, top, right, bottom'. */
const outside = (p, within = '#present') => p.evaluate((sel) => {
  const [w, h] = [window.innerWidth, window.innerHeight];
  const out = [];
  for (const el of document.querySelectorAll(`${sel} *`)) {
    if (el.closest('.katex-mathml') || !el.getClientRects().length) continue; // MathML for screen readers, not drawn
    const b = el.getBoundingClientRect();
    if (b.width === 0 || b.height === 0) continue;
    if (b.left < -0.5 || b.top < -0.5 || b.right > w + 0.5 || b.bottom > h + 0.5) {
      out.push(`${el.id || el.className || el.tagName}: ${[b.left, b.top, b.right, b.bottom].map(Math.round).join(', ')}`);
    }
  }
  return out;
}, within);

/** Steps the presentation to stage `name`: from where it is, else from the first (Home), forward (→). */
async function stepTo(p, name) {
  const at = async () => p.getAttribute('#present', 'data-stage');
  const names = await p.evaluate(async () => (await import('/js/page/state.js')).state.current.stages.map((s) => s.name));
  if (names.indexOf(await at()) > names.indexOf(name)) await p.keyboard.press('Home');
  for (let k = 0; k < 40 && (await p.getAttribute('#present', 'data-stage')) !== name; k++) await p.keyboard.press('ArrowRight');
  assert.equal(await p.getAttribute('#present', 'data-stage'), name);
}

/** The slide's stage and figure: its name, values, the smallest value text it may write and the size it wrote them at. */
const slideFigure = (p) => p.evaluate(async () => {
  const { state } = await import('/js/page/state.js');
  const { cellTexts } = await import('/js/shared/figure-core.js');
  const v = state.presentedView;
  const s = v.stage;
  return {
    name: s.name,
    small: s.values ? Array.from(s.values).filter((x) => x !== 0 && Math.abs(x) < 0.01).length : 0,
    texts: s.values ? cellTexts(s.values) : [],
    minPx: v.minValuePx,
    valuePx: v.canvas.dataset.valuePx ? Number(v.canvas.dataset.valuePx) : null,
  };
});

test('a value that needs an exponent alone leaves every value on the slide (#51 item 7)', async () => {
  // A Music Transformer layer of 6 positions: its content logits, skew steps, logits and weights hold values of
  // a few thousandths beside values near 1 (−9.72e-3 took every value off those slides).
  const written = ['content_logits', 'skew_qer', 'skew_padded', 'skew_sliced', 'relative_logits', 'logits', 'weights'];
  for (const screen of SCREENS) {
    const p = await presenting('?method=music&n=6&d_model=64&heads=2&clip=5&seed=0&sentence=&backend=cpu&present=content_logits', screen);
    let small = 0;
    for (const name of written) {
      await stepTo(p, name);
      const f = await slideFigure(p);
      small += f.small;
      assert.ok(f.valuePx !== null && f.valuePx >= f.minPx, `${screen}: ${name}'s values not written (${f.valuePx} px, at least ${f.minPx})`);
      assert.ok(f.texts.every((t) => !/e/.test(t)), `${screen}: ${name} writes ${f.texts.filter((t) => /e/.test(t))}`);
      if (name === 'weights') await p.screenshot({ path: join(artifacts, `slide-values-weights-${screen[1]}p.png`) });
    }
    assert.ok(small > 0, 'no value below 0.01 on these slides: the test shows nothing');
    await p.close();
  }
});

test('ALiBi at n 1024 with 8 heads: one colour scale for its bias, or a notice on the slide when each head has its own (#51 item 6)', async () => {
  // Held on demand (its whole trace is past 256 MiB): the bias's range over heads comes from every head's first
  // and last rows. Head 0 spans ±511.5, head 7 ±4: on one scale they look different.
  const query = (head, scale) => `?method=alibi&n=1024&d_model=64&heads=8&causal=1&seed=0&sentence=&backend=cpu&head=${head}&head_scale=${scale}&present=relative_logits`;
  const ranges = [];
  for (const head of [0, 7]) {
    const p = await presenting(query(head, 'bias'), [1280, 720]);
    const stage = await p.evaluate(async () => {
      const { state } = await import('/js/page/state.js');
      const s = state.current.byName.relative_logits;
      return { lo: s.lo, hi: s.hi, onDemand: state.current.info.on_demand, head: state.current.shown.head };
    });
    assert.ok(stage.onDemand && stage.head === head, JSON.stringify(stage));
    ranges.push([stage.lo, stage.hi]);
    assert.match(await p.locator('#present-stated').innerText(), new RegExp(`head ${head} · grey: masked, no weight · one colour scale for all heads`));
    if (head === 7) await p.screenshot({ path: join(artifacts, 'slide-alibi-n1024-head7-one-scale.png') });
    await p.close();
  }
  assert.deepEqual(ranges[0], ranges[1]);
  assert.equal(ranges[0][0], -511.5);
  // Each head its own scale: the slide says so.
  const p = await presenting(query(7, 'each'), [1280, 720]);
  assert.match(await p.locator('#present-stated').innerText(), /colour scale of head 7 alone: heads that look alike may differ/);
  await p.screenshot({ path: join(artifacts, 'slide-alibi-n1024-head7-own-scale.png') });
  await p.close();
});

test('T5\'s bias per bucket and head: one labelled row per head when T5 is chosen, its row labelled in the preset (#51 item 8)', async () => {
  const p = await presenting('?method=shaw&n=12&d_model=64&heads=8&clip=3&per_head_tables=0&seed=0&sentence=&backend=cpu&present=weights', [1280, 720]);
  await p.keyboard.press('Escape');
  // T5 chosen by hand: its bias is a table per head, so per-head tables is ticked.
  const before = await p.evaluate(() => Number(document.body.dataset.ready));
  await p.selectOption('#method', 't5');
  await p.waitForFunction((b) => Number(document.body.dataset.ready) > b && document.getElementById('busy').hidden, before);
  assert.ok(await p.isChecked('#per_head_tables'));
  const picture = (page) => page.evaluate(async () => {
    const { state } = await import('/js/page/state.js');
    const s = state.current.byName.t5_bias_by_bucket;
    return { rows: s.rows, cols: s.cols, labels: s.y_labels, axis: s.y_axis };
  });
  assert.deepEqual(await picture(p), { rows: 8, cols: 32, labels: ['0', '1', '2', '3', '4', '5', '6', '7'], axis: 'head h' });
  await p.locator('figure[data-stage="t5_bias_by_bucket"]').screenshot({ path: join(artifacts, 'slide-t5-bias-8-heads.png') });
  // Back to Shaw: its tables are shared again.
  await p.selectOption('#method', 'shaw');
  assert.ok(!(await p.isChecked('#per_head_tables')));
  await p.close();
  // The preset's one head: one row, labelled (render::figure draws a single row's label: its unit test).
  const preset = await presenting('?preset=t5-buckets&backend=cpu&present=t5_bias_by_bucket', [1280, 720]);
  assert.deepEqual(await picture(preset), { rows: 1, cols: 32, labels: ['0'], axis: 'head h' });
  await preset.screenshot({ path: join(artifacts, 'slide-t5-bias-preset.png') });
  await preset.close();
});

test('T5\'s bucket formula stays on the slide at 1280 × 720 and 1920 × 1080 (#51 item 2)', async () => {
  for (const screen of SCREENS) {
    const p = await presenting('?preset=t5-buckets&backend=cpu&present=t5_staircase', screen);
    for (const name of ['t5_staircase', 'rel_index']) {
      await stepTo(p, name);
      assert.deepEqual(await outside(p), [], `${screen}: ${name}`);
      await p.screenshot({ path: join(artifacts, `slide-t5-${name}-${screen[1]}p.png`) });
    }
    await p.close();
  }
});

test('a captured layer\'s slides name its model, layer and head; Model mode\'s stage slides its layer and head (#51 item 1)', async () => {
  const [n, d] = [4, 8];
  const description = { options: { method: 'alibi', heads: 2, causal: true }, model: 'tiny-bloom', family: 'bloom', part: 'decoder', layer: 3, tokens: [['a', 'b', 'c', 'd']], notes: [] };
  const buffer = writeZip({
    'x.npy': npyF32([1, n, d], Array.from({ length: n * d }, (_, k) => Math.sin(k))),
    'capture.npy': npyU8(Buffer.from(JSON.stringify(description), 'utf8')),
  });
  const p = await presenting('?method=shaw&n=6&heads=2&sentence=&backend=cpu&head=1&present=weights', [1280, 720]);
  const before = await p.evaluate(() => Number(document.body.dataset.ready));
  await p.setInputFiles('#tensors', { name: 'tiny-bloom-layer3.npz', mimeType: 'application/octet-stream', buffer });
  await p.waitForFunction((b) => Number(document.body.dataset.ready) > b && document.getElementById('busy').hidden, before);
  for (const name of ['weights', 'alibi_bias_by_head']) {
    await stepTo(p, name);
    const head = name === 'weights' ? ', head 1' : ''; // a picture shows every head
    assert.match(await p.locator('#present-stated').innerText(), new RegExp(`· tiny-bloom, decoder layer 3${head}( ·|$)`), name);
    await p.screenshot({ path: join(artifacts, `slide-capture-${name}.png`) });
  }
  await p.close();
  // Model mode: → past its six slides presents the chosen head stage by stage, each slide naming layer and head.
  const m = await context.newPage();
  await m.setViewportSize({ width: 1280, height: 720 });
  watch(m, problems);
  await m.goto(`${base}?mode=model&model=music&piece=10.7&length=64&layer=1&head=2&backend=cpu`);
  await m.waitForFunction(() => document.querySelectorAll('#m-tiles .tile canvas').length === 12, null, { timeout: 60000 });
  await m.click('#m-present');
  for (let k = 0; k < 6; k++) await m.keyboard.press('ArrowRight');
  await m.waitForFunction(() => !document.getElementById('present').hidden && document.body.dataset.ready, null, { timeout: 60000 });
  assert.match(await m.locator('#present-stated').innerText(), /· Music Transformer chorale model, layer 1( ·|$)/);
  await stepTo(m, 'weights');
  assert.match(await m.locator('#present-stated').innerText(), /· Music Transformer chorale model, layer 1, head 2( ·|$)/);
  await m.screenshot({ path: join(artifacts, 'slide-model-stage.png') });
  await m.close();
});

test('Model mode\'s six slides fit 1280 × 720 and 1920 × 1080, without the page\'s Present button (#51 item 3)', async () => {
  for (const [width, height] of SCREENS) {
    const m = await context.newPage();
    await m.setViewportSize({ width, height });
    watch(m, problems);
    await m.goto(`${base}?mode=model&model=music&piece=10.7&length=64&layer=1&head=2&backend=cpu&slide=roll`);
    await m.waitForFunction(() => document.querySelectorAll('#m-tiles .tile canvas').length === 12 && document.body.dataset.modelSlide === 'roll', null, { timeout: 60000 });
    for (const slide of ['roll', 'tiles', 'dist', 'models', 'predict', 'nll']) {
      await m.waitForFunction((s) => document.body.dataset.modelSlide === s, slide);
      assert.deepEqual(await outside(m, '#model'), [], `${width} × ${height}: ${slide}`);
      assert.ok(!(await m.locator('#m-present').isVisible()) && !(await m.locator('#m-slide-keys').isVisible()), `${slide}: the Present button shows`);
      if (slide === 'roll') {
        const roll = await m.locator('#roll').boundingBox();
        assert.ok(roll.height > 0.75 * height, `the roll is ${roll.height} px tall`);
      }
      if (slide === 'tiles') assert.equal(await m.locator('#m-tiles .tile canvas').count(), 12);
      if (slide === 'roll' || slide === 'tiles') await m.screenshot({ path: join(artifacts, `slide-model-${slide}-${height}p.png`) });
      await m.keyboard.press('ArrowRight');
    }
    await m.close();
  }
});

/** The controls at their largest where they widen a scheme's pictures (the page's largest n is 8192): T5's buckets
 *  and staircase (drawn to 1.5 × max distance, at most 8192 either side), DeBERTa's bucket map (to 1.5 ×
 *  max_relative_positions, at most 8192; its buckets stay 256: 8192 of them took the page over 300 s to compute at
 *  n 8192), BERT's table (n ≤ P); a scheme reads its own and leaves the others. */
const WIDEST = '&t5_buckets=1024&t5_max_distance=8192&max_relative_positions=8192&max_position=8192';

// #53 item 3: no main-thread task over 100 ms, every scheme the method control offers (read from it: a scheme
// added there is checked too) with its pictures at their widest (WIDEST), at n 64 (every stage small: a render
// yields between figures, not only after big ones), 2048 and 8192 (the page's largest). A case passes when one of
// up to three tries has no task over 100 ms: a task is also as long as the scheduler of a loaded 2-core machine
// makes it (the Music Transformer at n 64: 124–174 ms in three tries in a row at load about 7, 0–81 ms at load
// 3–6), while a task of the page's own over 100 ms shows in every try; each case's tries are printed with the load
// average (docs/src/benchmarks.md). bench/longtasks.mjs says what each long task is.
test('no main-thread task over 100 ms for any scheme and picture at n 64, 2048 and 8192, the page\'s largest (#53 item 3)', async () => {
  const first = await context.newPage();
  await first.goto(`${base}?backend=cpu`);
  const schemes = await first.$$eval('#method option', (os) => os.map((o) => o.value));
  await first.close();
  assert.ok(schemes.length >= 9, `${schemes}`);
  const cases = [64, 2048, 8192].flatMap((n) => schemes.map((m) => [m, n]));
  for (const [method, n] of cases) {
    const tries = [];
    for (let t = 0; t < 3 && !(tries.length && tries.at(-1) <= 100); t++) {
      const p = await context.newPage();
      watch(p, problems);
      await p.addInitScript(() => {
        window.__long = [];
        new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: true });
      });
      await p.goto(`${base}?method=${method}&n=${n}&d_model=64&heads=8${WIDEST}&seed=0&sentence=&backend=cpu`);
      const drawn = await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 180000 }).then(() => true, () => false);
      assert.ok(drawn, `${method} at n ${n}: not drawn in 180 s (${await p.locator('#busy-text').innerText()})`);
      tries.push(Math.round(await p.evaluate(() => Math.max(0, ...window.__long))));
      await p.close();
    }
    const said = `${method} at n ${n}: the longest main-thread task of each try ${tries.join(', ')} ms (load average ${loadavg()[0].toFixed(1)})`;
    console.log(said);
    assert.ok(tries.at(-1) <= 100, said);
  }
});

/** The file `click` downloads, as text. */
async function downloaded(p, click) {
  const [d] = await Promise.all([p.waitForEvent('download'), click()]);
  return readFileSync(await d.path(), 'utf8');
}

test('smaller things (#51 item 12): exports with no empty text and the scheme once, the roll named by its model, the built-heads sentence on the axes, a hint where full screen is refused', async () => {
  const p = await presenting('?method=alibi&n=8&d_model=64&heads=8&causal=1&seed=0&sentence=&backend=cpu&present=alibi_bias_by_head', [1280, 720]);
  await p.keyboard.press('Escape');
  const svg = await downloaded(p, () => p.click('figure[data-stage="alibi_bias_by_head"] .export-svg'));
  const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1].trim());
  assert.ok(texts.length > 10 && texts.every((t) => t !== ''), `${texts.filter((t) => t === '').length} empty <text> of ${texts.length}`);
  assert.equal(texts.join(' ').split('ALiBi: 8 heads').length - 1, 1, 'the scheme line once');
  await p.close();
  // The built-heads preset: the page's 12-word sentence on the axes (its logits do not read x).
  const b = await presenting('?preset=built-heads&sentence=the%20cat%20sat%20on%20the%20mat%20because%20it%20was%20very%20warm%20today&backend=cpu&present=weights', [1280, 720]);
  assert.deepEqual(await b.evaluate(async () => (await import('/js/page/state.js')).state.current.tokens), 'the cat sat on the mat because it was very warm today'.split(' '));
  await b.screenshot({ path: join(artifacts, 'slide-built-heads-words.png') });
  await b.close();
  // A link that opens a slide in a browser that refuses full screen without a click or key (headless Chromium
  // allows it: refused here as a desktop browser refuses it): the slide says so, and that F asks again.
  const f = await context.newPage();
  watch(f, problems);
  await f.setViewportSize({ width: 1280, height: 720 });
  await f.addInitScript(() => { Element.prototype.requestFullscreen = () => Promise.reject(new TypeError('Permissions check failed')); });
  await f.goto(`${base}?preset=built-heads&backend=cpu&present=weights`);
  await f.waitForFunction(() => !document.getElementById('present').hidden && !document.getElementById('present-fullscreen').hidden, null, { timeout: 60000 });
  assert.match(await f.locator('#present-fullscreen').innerText(), /press F/);
  assert.deepEqual(await outside(f), []);
  await f.screenshot({ path: join(artifacts, 'slide-fullscreen-refused.png') });
  await f.keyboard.press('Escape');
  assert.ok(await f.locator('#present-fullscreen').isHidden());
  await f.close();
  // The roll's export names the model as the page does, not by its key ('music model').
  const m = await context.newPage();
  watch(m, problems);
  await m.goto(`${base}?mode=model&model=music&piece=10.7&length=64&layer=1&head=2&backend=cpu`);
  await m.waitForFunction(() => document.querySelectorAll('#m-tiles .tile canvas').length === 12, null, { timeout: 60000 });
  const roll = await downloaded(m, () => m.click('#m-export-svg'));
  assert.match(roll, /<title>Music Transformer \(relative, skew\) model, BWV 10\.7, tokens 0…63: what note \d+ attends to, layer 1, head 2<\/title>/);
  await m.close();
});

/** Records every text drawn on a canvas, on the canvas and by its id (or its scheme, a comparison's panel): [text, font px, left, right, top, bottom] in the canvas's pixels
 *  (turned as drawn: an axis title on its side), and every dot (a filled arc) on the canvas: [x, y, radius, colour] (a page's init script). */
function recordCanvasTexts() {
  const fill = CanvasRenderingContext2D.prototype.fillText;
  window.__texts = {};
  CanvasRenderingContext2D.prototype.fillText = function fillText(text, x, y, ...rest) {
    const m = this.measureText(text);
    const w = m.width;
    const start = { right: x - w, end: x - w, center: x - w / 2 }[this.textAlign] ?? x;
    const t = this.getTransform();
    const ends = [start, start + w].map((at) => t.transformPoint({ x: at, y }).x);
    const ys = [start, start + w].flatMap((at) => [y - m.actualBoundingBoxAscent, y + m.actualBoundingBoxDescent].map((yy) => t.transformPoint({ x: at, y: yy }).y));
    const entry = [String(text), Number(/([\d.]+)px/.exec(this.font)[1]), Math.min(...ends), Math.max(...ends), Math.min(...ys), Math.max(...ys)];
    (window.__texts[this.canvas.id || this.canvas.dataset.method] ||= []).push(entry);
    (this.canvas.texts ||= []).push(entry);
    return fill.call(this, text, x, y, ...rest);
  };
  const arc = CanvasRenderingContext2D.prototype.arc;
  CanvasRenderingContext2D.prototype.arc = function recordArc(x, y, r, ...rest) {
    const t = this.getTransform();
    const at = t.transformPoint({ x, y });
    (this.canvas.dots ||= []).push([at.x, at.y, r * Math.hypot(t.a, t.b), String(this.fillStyle)]);
    return arc.call(this, x, y, r, ...rest);
  };
}

/** Forgets the texts and dots drawn so far. */
const clearTexts = (p) => p.evaluate(() => {
  window.__texts = {};
  for (const c of document.querySelectorAll('canvas')) Object.assign(c, { texts: [], dots: [] });
});

/** The texts drawn on canvas `id` (or a comparison panel's, by its scheme) since they were last cleared: how many, the smallest in screen pixels (font
 *  size times the canvas's scale on the screen), and those running past its left or right edge. */
const canvasTexts = (p, id) => p.evaluate((cid) => {
  const c = document.getElementById(cid) || document.querySelector(`canvas[data-method="${cid}"]`);
  const k = c.getBoundingClientRect().width / c.width;
  const texts = (c.texts || []).filter(([t]) => t.trim() !== '');
  const cut = texts.filter(([, , left, right]) => left < -0.5 || right > c.width + 0.5).map(([t, , left, right]) => `${t}: ${Math.round(left)} … ${Math.round(right)} of ${c.width}`);
  return { px: Math.min(...texts.map(([, px]) => px * k)), count: texts.length, cut };
}, id);

test('the head atlas as slides: its grid, then a head\'s profile, fill 1280 × 720 and 1920 × 1080 with legible text (#51 item 13)', async () => {
  const fixture = join(root, 'tests', 'fixtures', 'atlas-tiny-llama.atlas.npz');
  for (const [width, height] of SCREENS) {
    const p = await context.newPage();
    await p.setViewportSize({ width, height });
    watch(p, problems);
    await p.addInitScript(recordCanvasTexts);
    await p.goto(`${base}?preset=seed004&backend=cpu`);
    await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 60000 });
    await p.setInputFiles('#tensors', fixture);
    await p.waitForFunction(() => Number(document.getElementById('atlas').dataset.ready || 0) > 0 && document.getElementById('busy').hidden, null, { timeout: 30000 });
    // Text at 14 px or more on a 1280 × 720 projector, growing with the screen as the stages' slides' does.
    const legible = 14 * Math.min(width / 1280, height / 720);
    await clearTexts(p);
    await p.click('#atlas-present');
    // The grid fills the screen under the step line.
    await p.waitForFunction(() => {
      const [c, holder] = ['atlas-canvas', 'atlas-holder'].map((id) => document.getElementById(id));
      return document.body.dataset.atlasSlide === '0' && c.width === holder.clientWidth && c.height === holder.clientHeight;
    });
    assert.deepEqual(await outside(p, '#atlas'), [], `${width} × ${height}: the grid's slide`);
    const grid = await p.locator('#atlas-canvas').evaluate((c) => ({ tiles: c.tiles, h: c.height, w: c.width, box: c.getBoundingClientRect().toJSON() }));
    assert.equal(grid.tiles.length, 4 * 8);
    assert.ok(grid.tiles.every((t) => t.x >= 0 && t.y >= 0 && t.x + t.w <= grid.w && t.y + t.h <= grid.h), 'a tile outside the grid');
    assert.ok(grid.box.height > 0.85 * height && grid.box.width > 0.9 * width, `the grid is ${grid.box.width} × ${grid.box.height}`);
    const gridText = await canvasTexts(p, 'atlas-canvas');
    assert.ok(gridText.count > 32 && gridText.px >= legible - 0.5, `the grid's smallest text is ${gridText.px} px (at least ${legible})`);
    assert.deepEqual(gridText.cut, [], 'a text of the grid cut by its edge');
    await p.screenshot({ path: join(artifacts, `slide-atlas-grid-${height}p.png`) });
    // A tile hovered on the grid's slide is the head whose profile → presents.
    const t = grid.tiles.find((x) => x.row === 2 && x.head === 5);
    await p.mouse.move(grid.box.x + t.x + t.w / 2, grid.box.y + t.y + t.h / 2);
    await p.waitForFunction(() => document.getElementById('atlas-head-canvas')?.dataset.head === '2/5');
    await clearTexts(p);
    await p.keyboard.press('ArrowRight');
    await p.waitForFunction(() => {
      const [c, box] = ['atlas-head-canvas', 'atlas-head'].map((id) => document.getElementById(id));
      return document.body.dataset.atlasSlide === '1' && c.width === box.clientWidth && c.height === box.clientHeight;
    });
    assert.deepEqual(await outside(p, '#atlas'), [], `${width} × ${height}: the profile's slide`);
    assert.match(await p.locator('#atlas-head-canvas').getAttribute('aria-label'), /^decoder layer 2, head 5/);
    assert.match(await p.locator('#atlas-title').innerText(), /atlas-tiny-llama\.atlas\.npz: /);
    const chart = await p.locator('#atlas-head-canvas').boundingBox();
    assert.ok(chart.height > 0.7 * height && chart.width > 0.9 * width, `the profile is ${chart.width} × ${chart.height}`);
    const chartText = await canvasTexts(p, 'atlas-head-canvas');
    assert.ok(chartText.px >= legible - 0.5, `the profile's smallest text is ${chartText.px} px (at least ${legible})`);
    assert.deepEqual(chartText.cut, [], 'a text of the profile cut by its edge');
    const title = await p.locator('#atlas-title').evaluate((h) => [h.scrollWidth, h.clientWidth]);
    assert.ok(title[0] <= title[1], `the slide's title is cut (${title})`);
    await p.screenshot({ path: join(artifacts, `slide-atlas-profile-${height}p.png`) });
    // Esc: the page again, the grid at the panel's width.
    await p.keyboard.press('Escape');
    await p.waitForFunction(() => document.body.dataset.atlasSlide === undefined && !document.body.classList.contains('atlas-slide'));
    assert.ok(await p.locator('#controls').isVisible());
    await p.close();
  }
});

test('the comparison\'s slides and their export: square panels, one title size, legible text, absolute\'s curve seen over RoPE\'s (#51 item 4)', async () => {
  // One head of 64: absolute positions' similarity and RoPE's kernel are the same sum of cosines, one curve.
  // Every scheme compared (Method::ALL's, however many, less those app::compare leaves out) has its panel.
  const query = '?method=shaw&n=10&d_model=64&heads=1&clip=3&seed=0&sentence=the%20cat%20sat%20on%20the%20mat%20because%20it%20was%20warm&backend=cpu&compare=term&present=compare';
  for (const [width, height] of SCREENS) {
    const p = await context.newPage();
    await p.setViewportSize({ width, height });
    watch(p, problems);
    await p.addInitScript(recordCanvasTexts);
    await p.goto(`${base}${query}`);
    await p.waitForFunction(() => document.body.dataset.compareSlide === 'compare' && document.getElementById('compare').dataset.ready, null, { timeout: 60000 });
    // The panel slides, → from the first to the chart: at most six panels each, every scheme on one of them.
    const offered = await p.$$eval('#method option', (os) => os.map((o) => o.value));
    const legible = 14 * Math.min(width / 1280, height / 720);
    const [shown, titles] = [[], []];
    for (let k = 0; k < 12 && (await p.evaluate(() => document.body.dataset.compareSlide)) !== 'compare_chart'; k++) {
      assert.deepEqual(await outside(p, '#compare'), [], `${width} × ${height}: the panels of slide ${k + 1}`);
      const panels = await p.$$eval('#compare-grid canvas', (cs) => cs.map((c) => ({ method: c.dataset.method, title: c.getAttribute('aria-label').split(':')[0], plot: c.plot, k: c.getBoundingClientRect().width / c.width })));
      assert.ok(panels.length <= 6, `${panels.length} panels on slide ${k + 1}`);
      for (const { method, title, plot, k: scale } of panels) {
        const [pw, ph] = [plot.x1 - plot.x0, plot.y1 - plot.y0];
        assert.ok(Math.abs(pw - ph) <= 2 && pw * scale > 0.12 * height, `${width} × ${height}: ${method}'s plot is ${pw} × ${ph}`);
        const texts = await canvasTexts(p, method);
        assert.ok(texts.px >= legible - 0.5, `${method}'s smallest text is ${texts.px} px (at least ${legible})`);
        assert.deepEqual(texts.cut, [], method);
        const px = await p.evaluate(([m, name]) => document.querySelector(`canvas[data-method="${m}"]`).texts.filter(([t]) => t === name).map(([, size]) => size)[0], [method, title]);
        assert.ok(px > 0, `${method}'s title '${title}' is drawn whole`);
        titles.push(px);
        shown.push(method);
      }
      await p.screenshot({ path: join(artifacts, `slide-compare-panels-${height}p${k ? `-${k + 1}` : ''}.png`) });
      await p.keyboard.press('ArrowRight');
    }
    assert.ok(shown.every((m) => offered.includes(m)) && new Set(shown).size === shown.length, `each scheme on one slide: ${shown}`);
    for (const m of ['absolute', 'shaw', 'music', 'rope', 'alibi', 't5', 'deberta']) assert.ok(shown.includes(m), `${m} on no slide: ${shown}`);
    assert.equal(new Set(titles).size, 1, `the panels' titles are ${titles} px`);
    assert.deepEqual(await outside(p, '#compare'), [], `${width} × ${height}: the chart`);
    // Absolute's curve (grey) shows over RoPE's (green), which it equals: pixels of each colour in the plot.
    const seen = await p.locator('#compare-profile').evaluate(async (c) => {
      const { SCHEME_COLORS } = await import('/js/page/scheme-colors.js');
      const k = c.width / c.clientWidth;
      const { left, right, top, bottom } = c.hover;
      const data = c.getContext('2d').getImageData(Math.ceil(left * k) + 2, Math.ceil(top * k), Math.floor((right - left) * k) - 4, Math.floor((bottom - top) * k) - 2).data;
      const rgb = (hex) => (hex.length === 4 ? [...hex.slice(1)].map((x) => parseInt(x + x, 16)) : [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
      const count = (hex) => {
        const [r, g, b] = rgb(hex);
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) <= 24) n++;
        return n;
      };
      return { absolute: count(SCHEME_COLORS.absolute), rope: count(SCHEME_COLORS.rope) };
    });
    assert.ok(seen.absolute > 0.3 * seen.rope, `absolute's curve: ${seen.absolute} pixels, RoPE's ${seen.rope}`);
    assert.match(await p.locator('#compare-profile').evaluate((c) => window.__texts[c.id].map(([t]) => t).join(' | ')), /absolute \(sinusoidal\) \(dashed, over the others\)/);
    await p.screenshot({ path: join(artifacts, `slide-compare-chart-${height}p.png`) });
    await p.keyboard.press('Escape');
    await p.waitForFunction(() => document.body.dataset.compareSlide === undefined);
    if (width === 1280) {
      // The export: the slides as a 1920 × 1080 screen shows them, a PNG each. Its panels are drawn at 12/14 of
      // their size and enlarged, so 18 px there is 21 px in the PNG, the 1920 × 1080 slide's 14 px × 1.5.
      await clearTexts(p);
      const files = [];
      const slides = Math.ceil(shown.length / 6) + 1;
      const all = new Promise((done) => p.on('download', async (d) => { files.push([d.suggestedFilename(), readFileSync(await d.path())]); if (files.length === slides) done(); }));
      await p.click('#compare-png');
      await all;
      files.sort();
      for (const [name, bytes] of files) writeFileSync(join(artifacts, `slide-compare-export-${name.replace(/.*-/, '')}`), bytes);
      assert.deepEqual(files.map(([, b]) => [b.readUInt32BE(16), b.readUInt32BE(20)]), files.map(() => [1920, 1080]));
      const drawn = await p.evaluate(() => Object.entries(window.__texts).map(([key, texts]) => [key, Math.min(...texts.filter(([t]) => t.trim()).map(([, px]) => px))]));
      for (const [key, px] of drawn) assert.ok(px >= (shown.includes(key) ? 18 : 21), `the export's ${key}: ${px} px`);
      assert.deepEqual(drawn.map(([key]) => key).sort(), ['compare-export', 'compare-export-chart', ...shown].sort());
    }
    await p.close();
  }
});

test('RoPE\'s turning pairs: the plot as tall as the slide allows, beside its formula; no point label over a dot or another label (#51 item 10)', async () => {
  for (const [width, height] of SCREENS) {
    const p = await presenting('?preset=rope-kernel&backend=cpu&present=rope_pair_turn', [width, height], recordCanvasTexts);
    assert.deepEqual(await outside(p), [], `${width} × ${height}`);
    // Drawn again with nothing recorded before it: the slide's figure's texts and dots, in screen pixels.
    await clearTexts(p);
    const drawn = await p.evaluate(async () => {
      (await import('/js/page/present.js')).drawPresent();
      const c = (await import('/js/page/state.js')).state.presentedView.canvas;
      const b = c.getBoundingClientRect();
      const k = b.width / c.width;
      const box = (r) => ({ l: r.left, t: r.top, r: r.right, b: r.bottom });
      return {
        figure: box(b),
        sides: ['present-formula', 'present-notice'].map((id) => box(document.getElementById(id).getBoundingClientRect())),
        labels: c.texts.filter(([t]) => /^m=\d+$/.test(t)).map(([t, , l, r, top, bottom]) => ({ t, l: b.left + l * k, r: b.left + r * k, top: b.top + top * k, b: b.top + bottom * k })),
        dots: c.dots.map(([x, y, r]) => ({ x: b.left + x * k, y: b.top + y * k, r: r * k })),
      };
    });
    // Three pairs at 12 positions; the fastest numbered m=0 … m=6, the two slower ones at their last dot.
    assert.equal(drawn.dots.length, 36);
    assert.deepEqual(drawn.labels.map((l) => l.t), ['m=0', 'm=1', 'm=2', 'm=3', 'm=4', 'm=5', 'm=6', 'm=11', 'm=11']);
    // The fastest pair spans the circle's diameter: it was a third of a 1280 × 720 slide's height.
    const ys = drawn.dots.map((d) => d.y);
    assert.ok(Math.max(...ys) - Math.min(...ys) > 0.45 * height, `the circle is ${Math.round(Math.max(...ys) - Math.min(...ys))} px tall on a ${height} px slide`);
    // Its formula and what to notice beside it, not over it.
    const apart = (a, o) => a.r <= o.l || o.r <= a.l || a.b <= o.t || o.b <= a.t;
    assert.ok(drawn.sides.every((s) => apart(s, drawn.figure)), JSON.stringify(drawn));
    // No label's box over a dot (the circle's nearest point to the box within its radius) or another label.
    for (const [k, l] of drawn.labels.entries()) {
      const covered = drawn.dots.filter((d) => Math.hypot(Math.max(l.l - d.x, 0, d.x - l.r), Math.max(l.top - d.y, 0, d.y - l.b)) < d.r);
      assert.deepEqual(covered, [], `${width} × ${height}: ${l.t} (${[l.l, l.top, l.r, l.b].map(Math.round)}) covers a dot`);
      const over = drawn.labels.filter((o, j) => j !== k && !apart({ l: l.l, r: l.r, t: l.top, b: l.b }, { l: o.l, r: o.r, t: o.top, b: o.b }));
      assert.deepEqual(over.map((o) => o.t), [], `${width} × ${height}: ${l.t} covers a label`);
    }
    await p.screenshot({ path: join(artifacts, `slide-rope-pair-turn-${height}p.png`) });
    await p.close();
  }
});

test('no console or page errors', () => {
  assert.deepEqual(problems, []);
});
