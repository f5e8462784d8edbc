// The Python package in a notebook: starts a real JupyterLab (target/pyvenv, made by make test-python) on
// 127.0.0.1, opens examples/relattn.ipynb (a copy) in chromium, runs every cell, and checks that the widgets
// draw with no console error and that a tooltip's value equals the array's the notebook printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, copyFileSync, rmSync, existsSync, mkdirSync, writeFileSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifacts, prepare, launch, watch, close, root, startServer, hover } from './harness.mjs';

const JUPYTER = join(root, 'target', 'pyvenv', 'bin', 'jupyter');
let lab;
let server;
let pageBase;
let home;
let base;
let context;
let page;
let profile;
const problems = [];

/** A free port on 127.0.0.1. */
const freePort = () => new Promise((ok, fail) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => ok(port)); });
  s.on('error', fail);
});

before(async () => {
  prepare();
  assert.ok(existsSync(JUPYTER), `${JUPYTER} is missing: run make test-python first`);
  home = mkdtempSync(join(tmpdir(), 'relattn-lab-'));
  copyFileSync(join(root, 'examples', 'relattn.ipynb'), join(home, 'relattn.ipynb'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // A home of its own (settings, runtime files), no token, no update or news checks (no network).
  const settings = join(home, '.lab-settings');
  mkdirSync(join(settings, '@jupyterlab', 'apputils-extension'), { recursive: true });
  writeFileSync(join(settings, '@jupyterlab', 'apputils-extension', 'notification.jupyterlab-settings'), '{ "fetchNews": "false", "checkForUpdates": false }');
  // Widgets' state saved with the notebook (Settings ▸ Save Widget State Automatically), as the notebook's size is checked.
  mkdirSync(join(settings, '@jupyter-widgets', 'jupyterlab-manager'), { recursive: true });
  writeFileSync(join(settings, '@jupyter-widgets', 'jupyterlab-manager', 'plugin.jupyterlab-settings'), '{ "saveState": true }');
  const env = { ...process.env, HOME: home, JUPYTER_CONFIG_DIR: join(home, '.jupyter'), JUPYTER_RUNTIME_DIR: join(home, '.runtime'), JUPYTERLAB_SETTINGS_DIR: settings };
  lab = spawn(JUPYTER, ['lab', '--no-browser', `--ServerApp.port=${port}`, '--ServerApp.ip=127.0.0.1', '--ServerApp.token=', '--ServerApp.password=',
    `--ServerApp.root_dir=${home}`, '--ServerApp.port_retries=0', '--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate', '--allow-root'],
  { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`JupyterLab did not start in 60 s:\n${log}`)), 60000);
    lab.stderr.on('data', (d) => { log += d; if (log.includes(`127.0.0.1:${port}/lab`)) { clearTimeout(timer); ok(); } });
    lab.on('exit', (code) => { clearTimeout(timer); fail(new Error(`JupyterLab exited (${code}):\n${log}`)); });
  });
  ({ server, base: pageBase } = await startServer());
  ({ context, page, profile } = await launch({ viewport: { width: 1400, height: 1000 } }));
  watch(page, problems, { failed: false });
});

after(async () => {
  await close({ context, server, profile });
  if (lab) lab.kill();
  if (home) rmSync(home, { recursive: true, force: true });
});

test('the example notebook runs and its widgets draw the stages, with the arrays\' values', async () => {
  await page.goto(`${base}/lab/tree/relattn.ipynb`);
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 60000 });
  // The kernel is up when the toolbar says Idle.
  await page.waitForSelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', { timeout: 60000 });
  // Run ▸ Run All Cells, once the kernel has said it is idle (the status bar).
  await page.waitForFunction(() => /Idle/.test(document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')?.innerText || ''), null, { timeout: 60000 });
  await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
  await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');
  await page.waitForFunction(() => document.querySelectorAll('.relattn-widget[data-ready]').length === 15, null, { timeout: 180000 });
  const stages = await page.$$eval('.relattn-widget', (ws) => ws.map((w) => [...w.querySelectorAll('figure')].map((f) => f.dataset.stage)));
  assert.deepEqual(stages[0], ['skew_qer', 'skew_padded', 'skew_reshaped', 'skew_sliced', 'relative_logits', 'weights']);
  assert.deepEqual(stages[1], ['rope_kernel', 'rotated_q', 'weights']);
  assert.deepEqual(stages[2], ['rel_index']);
  assert.deepEqual(stages[3], ['rel_index', 'rel_k', 'relative_logits']);
  // show_model: 3 layers × 4 heads of the Music Transformer, each titled with what the head does.
  assert.equal(stages[4].length, 12);
  const heads = await page.locator('.relattn-widget').nth(4).locator('canvas').evaluateAll((cs) => cs.map((c) => c.getAttribute('aria-label')));
  assert.ok(heads.every((l) => /^layer \d, head \d: .*(%|spread)/.test(l)), heads.join('\n'));
  // The 1024 × 1024 stage: drawn (its size and time go to docs/src/benchmarks.md; no timing is asserted here).
  const long = await page.locator('.relattn-widget').nth(2).evaluate((w) => ({ ms: Number(w.dataset.drawMs), cols: Number(w.querySelector('canvas').dataset.cols) }));
  assert.equal(long.cols, 1024);
  console.log(`# the widget drew a 1024 × 1024 stage in ${long.ms.toFixed(0)} ms`);
  // The value the notebook printed, and the tooltip of the same cell.
  await page.waitForFunction(() => /weights\[0, 0, 5, 2\] = /.test(document.body.textContent), null, { timeout: 60000 });
  const printed = Number((await page.evaluate(() => document.body.textContent)).match(/weights\[0, 0, 5, 2\] = ([-\d.e]+)/)[1]);
  // A cell's point on screen, measured when asked (cells above may still grow their outputs and move it).
  const cellPoint = async (widget, stage, i, j) => {
    const c = widget.locator(`figure[data-stage="${stage}"] canvas`);
    await c.scrollIntoViewIfNeeded();
    const b = await c.boundingBox();
    const q = await c.evaluate((cv) => ({ ...cv.dataset, width: cv.width }));
    const k = b.width / q.width;
    return [b.x + (Number(q.x0) + ((j + 0.5) * (q.x1 - q.x0)) / q.cols) * k, b.y + (Number(q.y0) + ((i + 0.5) * (q.y1 - q.y0)) / q.rows) * k];
  };
  // Hovers a cell until its tooltip shows it: measured again if the notebook moved it meanwhile (three tries).
  const hoverCell = async (widget, stage, i, j) => {
    for (let attempt = 1; ; attempt++) {
      await page.mouse.move(...(await cellPoint(widget, stage, i, j)));
      try {
        await page.waitForFunction(([s, ii, jj]) => [...document.querySelectorAll('.relattn-tip')]
          .some((t) => !t.hidden && t.dataset.stage === s && t.dataset.i === String(ii) && t.dataset.j === String(jj)), [stage, i, j], { timeout: 4000 });
        return;
      } catch (e) {
        if (attempt === 3) throw e;
      }
    }
  };
  const first = page.locator('.relattn-widget').first();
  await hoverCell(first, 'weights', 5, 2);
  const visibleTip = page.locator('.relattn-tip:not([hidden])').first();
  const shown = Number(await visibleTip.getAttribute('data-value'));
  assert.ok(Math.abs(shown - printed) <= 1e-6 * Math.max(1, Math.abs(printed)), `tooltip ${shown}, array ${printed}`);
  // The same cell on the page (the same layer: the same options and seed) reads the same, to the character:
  // the widget and the page format it with one figure core (www/js/shared/figure-core.js).
  const widgetText = await visibleTip.getAttribute('data-text');
  const onPage = await context.newPage();
  await onPage.goto(`${pageBase}?method=music&n=8&d_model=32&heads=2&clip=7&causal=1&seed=0&batch_size=1&sentence=&backend=cpu`);
  await onPage.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
  const tip = await hover(onPage, 'weights', 5, 2);
  const pageText = tip.text.split('\n').find((l) => l.includes('value'));
  assert.equal(widgetText, pageText);
  assert.match(widgetText, /^\(i, j\) = \(5, 2\)   value \S+$/);
  await onPage.close();
  // A click pins the pair (the widget's `pinned`, outlined in every (query, key) view).
  await page.mouse.click(...(await cellPoint(first, 'weights', 5, 2)));
  // The refused option names its field.
  await page.locator('.jp-Notebook .jp-Cell').last().scrollIntoViewIfNeeded();
  // Seed 004 (a preset): its relative logit (0, 0) is 44; a click on w^K's row 2 (distance 0) shades the 4 pairs
  // of the diagonal that read it; the figure downloads as SVG.
  const seed = page.locator('.relattn-widget').nth(3);
  await seed.scrollIntoViewIfNeeded();
  await hoverCell(seed, 'relative_logits', 0, 0);
  const tips = await page.$$eval('.relattn-tip', (ts) => ts.filter((t) => !t.hidden).map((t) => Number(t.dataset.value)));
  assert.deepEqual(tips, [44]);
  await page.mouse.click(...(await cellPoint(seed, 'rel_k', 2, 1)));
  assert.equal(await seed.getAttribute('data-readers'), '2:4');
  const [svg] = await Promise.all([page.waitForEvent('download'), seed.locator('figure[data-stage="rel_k"] button:text-is("SVG")').click()]);
  assert.equal(svg.suggestedFilename(), 'relattn-rel_k.svg');
  await page.waitForFunction(() => /t5_buckets - invalid t5_buckets: got 7/.test(document.body.textContent), null, { timeout: 60000 });

  // "Your model": twelve transformers families captured (ten drawn), each printed equal to the model's own probabilities
  // (max |Δ| below 1e-5) and drawn titled with the model and layer.
  const captured = [
    ['T5EncoderModel, encoder layer 1', ['rel_index', 'rel_k', 'relative_logits', 'weights']],
    ['LlamaForCausalLM, decoder layer 1', ['rope_angles', 'rope_kernel', 'weights']],
    ['GPTNeoXForCausalLM, decoder layer 1', ['rope_angles', 'rotated_q', 'weights']],
    ['GPTJForCausalLM, decoder layer 1', ['rope_kernel', 'weights']],
    ['BloomForCausalLM, decoder layer 1', ['slopes', 'relative_logits', 'weights']],
    ['GPT2LMHeadModel, decoder layer 1', ['positions', 'content_logits', 'weights']],
    // Today's models: Qwen3 and Gemma 2 printed, gpt-oss drawn with its sink's share; DeepSeek-V3's latent attention.
    ['GptOssForCausalLM, decoder layer 1', ['weights', 'sink_share']],
    ['DeepseekV3ForCausalLM, decoder layer 1', ['rotated_q', 'weights', 'output_content']],
    // Relative attention's own family: DeBERTa-v3's disentangled terms, XLNet's BD before and after rel_shift.
    ['DebertaV2Model, encoder layer 1', ['c2p', 'p2c', 'weights']],
    ['XLNetModel, content layer 1', ['bd_relative', 'bd', 'weights']],
  ];
  const gaps = (await page.evaluate(() => document.body.textContent)).match(/max \|Δ\| = [-\d.e]+/g) || [];
  assert.equal(gaps.length, captured.length + 2, gaps.join('; '));
  assert.ok(gaps.every((g) => Number(g.split('= ')[1]) < 1e-5), gaps.join('; '));
  for (const [k, [title, want]] of captured.entries()) {
    const w = page.locator('.relattn-widget').nth(5 + k);
    assert.deepEqual(await w.evaluate((el) => [...el.querySelectorAll('figure')].map((f) => f.dataset.stage)), want);
    const labels = await w.locator('canvas').evaluateAll((cs) => cs.map((c) => c.getAttribute('aria-label')));
    assert.ok(labels.every((l) => l.includes(title)), labels.join('\n'));
  }
  await page.locator('.relattn-widget').nth(6).evaluate((w) => w.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: join(artifacts, 'notebook-capture.png') });

  // The head atlas of the tiny Llama (2 layers × 4 heads): relattn.show_atlas's self-contained page in a frame,
  // a tile per head, its tooltip shown on hover.
  await page.waitForFunction(() => /Atlas\(LlamaForCausalLM: 2 layers × 4 heads, 4 prompts/.test(document.body.textContent), null, { timeout: 120000 });
  const atlas = page.frameLocator('iframe.relattn-atlas');
  const data = await atlas.locator('#atlas-data').evaluate((s) => JSON.parse(s.textContent));
  assert.equal(data.tiles.length, 8);
  assert.equal(data.metric.name, 'previous_token');
  await page.locator('iframe.relattn-atlas').scrollIntoViewIfNeeded();
  const box = await atlas.locator('svg').boundingBox();
  const tile = data.tiles.find((t) => t.row === 1 && t.head === 1);
  const scale = box.width / data.width;
  await page.mouse.move(box.x + (tile.x + tile.w / 2) * scale, box.y + (tile.y + tile.h / 2) * scale);
  await atlas.locator('#tip:not([hidden])').waitFor({ timeout: 10000 });
  assert.match(await atlas.locator('#tip').innerText(), /layer 1, head 1 · K\/V head 0/);
  await page.screenshot({ path: join(artifacts, 'notebook-atlas.png') });

  // Saved with its widgets' state, the notebook keeps their figures (the 1024 × 1024 stage's values are 4 MiB, 5.6
  // MB in base64), not the page's 2 MB wasm and its glue once per widget (11 widgets: 23 MB more).
  const saved = join(home, 'relattn.ipynb');
  await page.keyboard.press('Control+s');
  // The tab's dirty mark clears once the server has written the file.
  await page.waitForFunction(() => !document.querySelector('.jp-mod-dirty'), null, { timeout: 30000 });
  const nb = JSON.parse(readFileSync(saved, 'utf8'));
  const states = Object.values(nb.metadata?.widgets?.['application/vnd.jupyter.widget-state+json']?.state || {});
  const widgets = states.filter((w) => w.model_name === 'AnyModel');
  assert.ok(widgets.length >= 11, `saved widget states: ${states.length}`);
  assert.ok(widgets.every((w) => !('_wasm' in w.state) && !('_glue' in w.state)), Object.keys(widgets[0].state).join(', '));
  const size = statSync(saved).size;
  console.log(`# the notebook saved with ${widgets.length} widgets' state: ${(size / 1e6).toFixed(2)} MB`);
  assert.ok(size < 7e6, `${size} bytes`);
  await page.mouse.move(5, 5);
  await page.locator('.relattn-widget').first().evaluate((w) => w.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: join(artifacts, 'notebook.png') });
  assert.deepEqual(problems, []);
});
