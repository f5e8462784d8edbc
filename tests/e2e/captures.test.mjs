// Each of today's families (#49) and of relative attention's own (#50) captured from its tiny random model and
// opened in the page: tests/e2e/captures.py builds the models of python/tests/test_capture.py (nothing downloaded;
// target/pyvenv, made by make test-python), saves layer 1 of each as relattn.capture saves it and writes what the
// model itself computed. The page opens each file with the capture's options, and its weights equal the model's
// own attention probabilities. Screenshots in tests/e2e/artifacts/captures-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, artifacts, prepare, startServer, launch, watch, close, hover, readyId, settle } from './harness.mjs';

const PYTHON = join(root, 'target', 'pyvenv', 'bin', 'python');

let server;
let context;
let profile;
let page;
let work;
const problems = [];

before(async () => {
  prepare();
  assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run make test-python first`);
  work = mkdtempSync(join(tmpdir(), 'relattn-captures-'));
  execFileSync(PYTHON, [join(root, 'tests', 'e2e', 'captures.py'), work], { stdio: ['ignore', 'ignore', 'inherit'] });
  let base;
  ({ server, base } = await startServer());
  ({ context, page, profile } = await launch());
  watch(page, problems);
  await page.goto(`${base}?preset=seed004`);
  await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 30000 });
});

after(async () => {
  await close({ context, server, profile });
  if (work) rmSync(work, { recursive: true, force: true });
});

test('each of today\'s families opens with its options, its new stages, and the model\'s own probabilities', async () => {
  const expected = JSON.parse(readFileSync(join(work, 'expected.json'), 'utf8'));
  assert.equal(Object.keys(expected).length, 18);
  for (const [name, want] of Object.entries(expected)) {
    await settle(page, () => page.setInputFiles('#tensors', join(work, `${name}.npz`)));
    assert.ok((await page.locator('body').innerText()).includes(want.title), `${name}: the page names ${want.title}`);
    // The capture's own options came with it, and none of the previous file's stayed.
    assert.equal(await page.inputValue('#window'), String(want.window ?? 0), `${name}: window`);
    assert.equal(await page.inputValue('#chunk'), String(want.chunk ?? 0), `${name}: chunk`);
    if ((await page.inputValue('#head')) !== '1') await settle(page, () => page.selectOption('#head', '1'));
    const n = want.row.length;
    for (let j = 0; j < n; j++) {
      const tip = await hover(page, 'weights', n - 1, j);
      assert.ok(Math.abs(Number(tip.value) - want.row[j]) <= 1e-5, `${name} weights (${n - 1}, ${j}): page ${tip.value}, model ${want.row[j]}`);
    }
    if (want.stage) assert.equal(await page.locator(`figure[data-stage="${want.stage}"]`).count(), 1, `${name}: its ${want.stage} stage`);
    await page.mouse.move(0, 0);
    await page.locator('figure[data-stage="weights"]').screenshot({ path: join(artifacts, `captures-${name}.png`) });
  }
});

test('no console errors, page errors or requests outside the page\'s origin', () => {
  assert.deepEqual(problems, []);
});
