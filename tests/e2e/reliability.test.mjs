// Reliability of the page (docs/src/reliability.md): out-of-range controls, corrupt / NaN / huge files,
// markup in tokens and file names, a panic in the worker's wasm, and the Content-Security-Policy. For each:
// an error next to the right control, no uncaught error, and the previous view still on screen.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, prepare, startServer, launch, watch, close, npyF32, dropFile, readyId, settle } from './harness.mjs';

let server;
let base;
let context;
let page;
let profile;
const problems = [];
// The forced panic logs itself (console_error_panic_hook) on purpose: that one message is expected.
const expected = (text) => /debug_panic(_async)?\(\)/.test(text);

before(async () => {
  prepare();
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch());
  // Every CSP violation is recorded by the page itself, before any of its scripts run.
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    // The worker's answers pass through window.__deliver, which a test may replace to hold or delay them
    // (a slow compute, made deterministic).
    window.__deliver = (e, f) => f(e);
    const W = window.Worker;
    window.Worker = class extends W {
      set onmessage(f) { super.onmessage = (e) => window.__deliver(e, f); }
      get onmessage() { return super.onmessage; }
    };
  });
  watch(page, problems, { expected, failed: false, outside: true, crash: true });
  await page.goto(`${base}?method=shaw&n=12&d_model=64&heads=2&clip=3&seed=0&causal=0&rel_v=1&per_head=0&backend=cpu`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(() => close({ context, server, profile }));

/** What is on screen: every figure's pixels (as a hash) and the ready id. */
const snapshot = () => page.evaluate(() => {
  let h = 0;
  for (const c of document.querySelectorAll('figure.view canvas')) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) | 0;
  }
  return { ready: document.body.dataset.ready, figures: document.querySelectorAll('figure.view').length, pixels: h };
});

/** Waits for an error next to `field` matching `re`; then the view must be the one in `view`. */
async function refused(field, re, view) {
  await page.waitForFunction(([f, src]) => new RegExp(src).test(document.getElementById(`err-${f}`).textContent), [field, re.source], { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById('busy').hidden, null, { timeout: 30000 });
  const text = await page.locator(`#err-${field}`).innerText();
  assert.deepEqual(await snapshot(), view, `the view changed after: ${text}`);
  return text;
}

const drop = (name, bytes) => dropFile(page, name, bytes);

test('the page has a Content-Security-Policy that forbids other origins', async () => {
  const csp = await page.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.content);
  for (const part of ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", 'img-src', "object-src 'none'"]) assert.ok(csp.includes(part), csp);
  assert.ok(!/https?:|\*/.test(csp), `the policy allows another origin: ${csp}`);
  // It is enforced: an inline script and an image from elsewhere are blocked (and reported).
  await page.evaluate(() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s); s.remove(); });
  assert.equal(await page.evaluate(() => window.__inline), undefined);
  const blocked = await page.evaluate(() => window.__csp.splice(0));
  assert.ok(blocked.some((v) => v.startsWith('script-src')), `no violation recorded: ${blocked}`);
  // That one violation was on purpose; the last test checks that normal use has none.
  await page.waitForTimeout(100);
  for (let k = problems.length - 1; k >= 0; k--) if (/Executing inline script violates/.test(problems[k])) problems.splice(k, 1);
});

test('out-of-range values typed into the controls: an error next to that control, the view stays', async () => {
  let view = await snapshot();
  const cases = [
    ['n', '0', /invalid n/], ['n', '-5', /invalid n/], ['n', '8193', /invalid n/], ['n', '2.5', /invalid n/], ['n', '1e400', /invalid n.*not a number/],
    ['d_model', '0', /invalid d_model/], ['d_model', '99999', /invalid d_model/],
    ['heads', '0', /invalid heads/], ['heads', '5', /divisor of d_model/], ['heads', '65', /invalid heads/],
    ['clip', '-1', /invalid clip/], ['clip', '9000', /invalid clip/],
    ['seed', '-1', /invalid seed/], ['seed', '1e20', /invalid seed/], ['seed', '', /invalid seed.*not a number/],
  ];
  for (const [id, value, re] of cases) {
    const good = await page.inputValue(`#${id}`);
    await page.fill(`#${id}`, value);
    await refused(id, re, view);
    assert.equal(await page.getAttribute(`#${id}`, 'aria-invalid'), 'true', `${id} = ${value}`);
    await settle(page, () => page.fill(`#${id}`, good));
    assert.equal(await page.locator(`#err-${id}`).innerText(), '');
    view = await snapshot();
  }
});

test('the budget: n 8192 × 64 heads (time) and d_model 4096 × batch 4 (memory) are refused with the limit and a smaller n', async () => {
  await settle(page, () => page.fill('#seed', '1'));
  const view = await snapshot();
  await page.fill('#heads', '64');
  await page.fill('#n', '8192');
  const pairs = await refused('n', /too large/, view);
  assert.match(pairs, /4294967296 \(query, key\) pairs.*at most 536870912 \(n 8192 with 8 heads\); use n ≤ 2896 with 64 head/);
  await page.fill('#heads', '8');
  await page.fill('#batch_size', '4');
  await page.fill('#d_model', '4096');
  const memory = await refused('n', /too large.*batch = 4, d_model = 4096/, view);
  assert.match(memory, /needs about [\d.]+ GiB.*limit is 1\.50 GiB.*use n ≤ \d+ with 8 head/);
  const n = Number(/use n ≤ (\d+)/.exec(memory)[1]);
  assert.ok(n > 256 && n < 8192, `${n}`);
  await page.fill('#batch_size', '1');
  await page.fill('#d_model', '64');
  await page.fill('#heads', '2');
  await settle(page, () => page.fill('#n', '64'));
  assert.equal(await page.locator('#err-n').innerText(), '');
});

test('files: corrupt, NaN (named with its index) and a huge n are refused next to the file picker; the view stays', async () => {
  await page.goto(`${base}?method=shaw&n=6&d_model=8&heads=2&clip=2&seed=0&causal=0&rel_v=1&per_head=0&sentence=&backend=cpu`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const view = await snapshot();
  await drop('corrupt.npz', Buffer.from('PK\x03\x04\x14\x00 definitely not a zip archive'));
  assert.match(await refused('file', /corrupt\.npz/, view), /cannot read/);
  const x = Array.from({ length: 40 }, (_, k) => Math.sin(k));
  x[13] = NaN;
  await page.setInputFiles('#tensors', { name: 'nan.npy', mimeType: 'application/octet-stream', buffer: npyF32([5, 8], x) });
  assert.match(await refused('file', /non-finite/, view), /'x'.*NaN at index \[1, 5\]/);
  // x sets n: 30000 positions have 9·10⁸ pairs, past the page's 8192² · 8.
  await drop('huge.npy', npyF32([30000, 2], new Array(60000).fill(0.5)));
  assert.match(await refused('file', /huge\.npy: too large/, view), /n = 30000.*use n ≤ \d+/);
  assert.equal(await page.locator('#tensors-name').innerText(), '');
});

test('markup in the sentence and in a file name is shown as text; no script runs', async () => {
  const evil = '<img src=x onerror="window.__xss=1">';
  await page.evaluate(() => { window.__xss = undefined; });
  await settle(page, () => page.fill('#sentence', `a ${evil} b <script>window.__xss=2</script>`));
  // The token labels the axes (canvas text) and the tooltip (text nodes).
  const canvas = page.locator('figure[data-stage="weights"] canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const d = await canvas.evaluate((c) => ({ ...c.dataset, width: c.width }));
  const s = box.width / d.width;
  await page.mouse.move(box.x + (Number(d.x0) + 1.5 * (d.x1 - d.x0) / d.cols) * s, box.y + (Number(d.y0) + 1.5 * (d.y1 - d.y0) / d.rows) * s);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: 5000 });
  assert.ok((await page.locator('#tooltip').innerText()).includes('<img'), 'the token is not in the tooltip as text');
  await page.mouse.move(1, 1);
  const view = await snapshot();
  await page.setInputFiles('#tensors', { name: `${evil}.npz`, mimeType: 'application/octet-stream', buffer: Buffer.from('not a zip') });
  assert.ok((await refused('file', /onerror/, view)).includes(evil));
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'a script ran');
  assert.equal(await page.locator('#tooltip img, #err-file img, #views img, #tensors-name img').count(), 0, 'markup became HTML');
});

test('a panic in the worker is reported, the worker restarts, and the page keeps working without a reload', async () => {
  await page.fill('#sentence', '');
  await settle(page, () => page.fill('#seed', '5'));
  const view = await snapshot();
  const w = page.workers()[0];
  // The test hook: the page never sends this message; the test delivers it inside the worker.
  await w.evaluate(() => self.dispatchEvent(new MessageEvent('message', { data: { kind: 'debug-panic', id: 0 } })));
  const text = await refused('general', /internal error/, view);
  assert.match(text, /debug_panic\(\): a panic on purpose.*restarted/);
  await page.waitForFunction(() => document.getElementById('busy').hidden);
  // A fresh worker computes the next change; the hover numbers are there again.
  await settle(page, () => page.fill('#seed', '6'));
  assert.equal(await page.locator('#err-general').innerText(), '');
  assert.notDeepEqual((await snapshot()).pixels, view.pixels);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, 'reliability-after-panic.png') });
});

/** Loads `url` in a second page of the same browser and returns its snapshot once drawn. */
async function fresh(url) {
  const p = await context.newPage();
  try {
    await p.goto(url);
    await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 60000 });
    return await p.evaluate(() => {
      let h = 0;
      for (const c of document.querySelectorAll('figure.view canvas')) {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) | 0;
      }
      return { figures: document.querySelectorAll('figure.view').length, pixels: h };
    });
  } finally {
    await p.close();
  }
}

/** Waits until the latest settings are shown (no debounce or request left). */
async function quiet() {
  await page.waitForTimeout(400);
  await page.waitForFunction(() => document.getElementById('busy').hidden, null, { timeout: 60000 });
}

const START = '?method=shaw&n=12&d_model=64&heads=2&clip=3&seed=0&causal=0&rel_v=1&per_head=0&sentence=&backend=cpu';

test('a header-only .npy claiming shape (0, 70000, 70000) is refused next to the file picker; the page goes on', async () => {
  await page.goto(`${base}${START}`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  const view = await snapshot();
  const bomb = npyF32([0, 70000, 70000], []);
  assert.ok(bomb.length <= 128, `${bomb.length} bytes`);
  await drop('empty.npy', bomb);
  assert.match(await refused('file', /too large/, view), /empty\.npy.*shape \[0, 70000, 70000\] is too large/);
  await settle(page, () => page.fill('#seed', '4'));
  assert.notDeepEqual((await snapshot()).pixels, view.pixels);
});

test('a panic inside the worker\'s async compute is reported, the worker restarts, later changes compute', async () => {
  await settle(page, () => page.fill('#seed', '5'));
  const view = await snapshot();
  await page.workers().at(-1).evaluate(() => self.dispatchEvent(new MessageEvent('message', { data: { kind: 'debug-panic-async' } })));
  assert.match(await refused('general', /internal error/, view), /debug_panic_async\(\): a panic on purpose inside an async future.*restarted/);
  await settle(page, () => page.fill('#seed', '6'));
  assert.equal(await page.locator('#err-general').innerText(), '');
  assert.notDeepEqual((await snapshot()).pixels, view.pixels);
});

test('a panic in the page\'s own wasm instance: reported, a fresh instance draws, the last good view is kept', async () => {
  const view = await snapshot();
  assert.equal(await page.evaluate(() => document.body.dataset.uiInstance), '1');
  await page.evaluate(async () => {
    const m = await import('./pkg/relattn.js');
    try { m.debug_panic(); } catch { /* the abort, reported by the panic hook */ }
  });
  // The fresh instance is loaded, and the last good view drawn again with it: the same pixels.
  await page.waitForFunction(() => document.body.dataset.uiInstance === '2', null, { timeout: 30000 });
  assert.match(await refused('general', /internal error in the page's wasm module/, view), /debug_panic\(\).*restarted/);
  await settle(page, () => page.fill('#seed', '7'));
  assert.equal(await page.locator('#err-general').innerText(), '');
  assert.notDeepEqual((await snapshot()).pixels, view.pixels);
});

test('a late result never overwrites what was typed since: n = 2000, then seed 7 while it computes', async () => {
  await page.goto(`${base}${START.replace('heads=2', 'heads=1')}`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  // The n = 2000 result is held until seed 7 has been typed (its request still in the 200 ms debounce).
  await page.evaluate(() => { window.__held = []; window.__deliver = (e, f) => window.__held.push(() => f(e)); });
  await page.fill('#n', '2000');
  await page.waitForFunction(() => window.__held.length > 0, null, { timeout: 60000 });
  await page.fill('#seed', '7');
  await page.evaluate(() => { window.__deliver = (e, f) => f(e); for (const g of window.__held.splice(0)) g(); });
  await quiet();
  assert.equal(await page.inputValue('#seed'), '7');
  assert.equal(await page.inputValue('#n'), '2000');
  assert.equal(new URL(page.url()).searchParams.get('seed'), '7');
  assert.deepEqual(await fresh(page.url()), { figures: (await snapshot()).figures, pixels: (await snapshot()).pixels });
});

test('200 changes in about 2 s: the last settings win, on the controls and in the view', async () => {
  await page.goto(`${base}${START}`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  // Every answer of the worker arrives 150 ms late, in order: results of superseded settings land while
  // the changes go on.
  await page.evaluate(() => { window.__deliver = (e, f) => setTimeout(() => f(e), 150); });
  let state = 12345;
  const next = (k) => { state = (state * 1103515245 + 12345) % 2147483648; return state % k; };
  const last = {};
  const t0 = Date.now();
  for (let k = 0; k < 200; k++) {
    const which = next(6);
    if (which === 0) { last.method = ['shaw', 'music'][next(2)]; await page.selectOption('#method', last.method); }
    else if (which === 1) { last.causal = next(2) === 1; await page.setChecked('#causal', last.causal); }
    else {
      const [id, values] = [['n', [4, 9, 16, 24, 40]], ['seed', [0, 1, 2, 3, 9]], ['heads', [1, 2, 4]], ['clip', [0, 1, 3, 5]]][which - 2];
      last[id] = String(values[next(values.length)]);
      await page.fill(`#${id}`, last[id]);
    }
  }
  const took = Date.now() - t0;
  await quiet();
  await page.evaluate(() => { window.__deliver = (e, f) => f(e); });
  for (const [id, v] of Object.entries(last)) {
    if (typeof v === 'boolean') assert.equal(await page.isChecked(`#${id}`), v, id);
    else assert.equal(await page.inputValue(`#${id}`), v, `${id} after ${took} ms of changes`);
  }
  const shown = await snapshot();
  assert.deepEqual(await fresh(page.url()), { figures: shown.figures, pixels: shown.pixels });
});

test('the newest file pick wins, even when an older, slower file finishes reading later', async () => {
  await page.goto(`${base}${START}`);
  await page.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  // The big file's bytes arrive 600 ms late, as a 256 MB file's would.
  await page.evaluate(() => {
    const read = File.prototype.arrayBuffer;
    File.prototype.arrayBuffer = function slow() {
      const p = read.call(this);
      return this.name === 'big.npy' ? p.then((b) => new Promise((ok) => { setTimeout(() => ok(b), 600); })) : p;
    };
  });
  const x = (n) => npyF32([n, 8], Array.from({ length: n * 8 }, (_, k) => Math.cos(k)));
  await page.setInputFiles('#tensors', { name: 'big.npy', mimeType: 'application/octet-stream', buffer: x(6) });
  await page.waitForTimeout(50);
  await page.setInputFiles('#tensors', { name: 'small.npy', mimeType: 'application/octet-stream', buffer: x(5) });
  await page.waitForTimeout(900);
  await quiet();
  assert.equal(await page.locator('#tensors-name').innerText(), 'using small.npy');
  assert.equal(await page.inputValue('#n'), '5');
});

test('no uncaught errors, console errors, CSP violations or outside requests in all of the above', async () => {
  const csp = await page.evaluate(() => window.__csp);
  assert.deepEqual(csp, []);
  assert.deepEqual(problems, []);
});
