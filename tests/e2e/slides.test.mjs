// The lecture given from the page's slides (#51, teaching round four), on a 1280 × 720 projector and a 1920 × 1080
// screen: every value written on a slide whose cells can hold them, whatever one of them needs, ... Screenshots in
// tests/e2e/artifacts/slide-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, prepare, startServer, launch, watch, close } from './harness.mjs';

let server;
let base;
let context;
let profile;
const problems = [];

before(async () => {
  prepare();
  ({ server, base } = await startServer());
  ({ context, profile } = await launch());
});

after(() => close({ context, server, profile }));

const SCREENS = [[1280, 720], [1920, 1080]];

/** A page of `width` × `height` opened on `query` (which presents a stage: &present=) once the slide is drawn. */
async function presenting(query, [width, height]) {
  const p = await context.newPage();
  await p.setViewportSize({ width, height });
  watch(p, problems);
  await p.goto(`${base}${query}`);
  await p.waitForFunction(() => document.body.dataset.ready && !document.getElementById('present').hidden && document.getElementById('busy').hidden, null, { timeout: 60000 });
  return p;
}

/** Steps the presentation forward (→) to stage `name`. */
async function stepTo(p, name) {
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

test('no console or page errors', () => {
  assert.deepEqual(problems, []);
});
