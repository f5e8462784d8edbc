// The page on the screens it is used on (#14 item 11): a desktop (1440 × 900), a 1280 × 720 projector and a
// 390 × 844 phone, light and dark. Nothing is wider than the screen, tooltips stay inside it, the figures
// follow the theme, and presentation mode works with on-screen buttons and a swipe. Screenshots of each in
// tests/e2e/artifacts/screen-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, prepare, startServer, launch, watch, close, hover } from './harness.mjs';

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

async function open(query, viewport) {
  const p = await context.newPage();
  await p.setViewportSize(viewport);
  watch(p, problems, { outside: true });
  await p.goto(`${base}${query}`);
  await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 30000 });
  return p;
}

/** How far the page is wider than its viewport (0: no sideways scroll). */
const overflow = (p) => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** Rec. 709 luma of a figure's canvas pixel just inside its top-left corner: the figure's background. */
const background = (p, stage) => p.$eval(`figure[data-stage="${stage}"] canvas`, (c) => {
  const d = c.getContext('2d').getImageData(3, 3, 1, 1).data;
  return 0.2126 * d[0] + 0.7152 * d[1] + 0.0722 * d[2];
});

const SCREENS = [
  ['desktop', { width: 1440, height: 900 }],
  ['projector', { width: 1280, height: 720 }],
  ['phone', { width: 390, height: 844 }],
];

test('every screen, light and dark: no sideways scroll, figures in the theme, tooltips inside the viewport', async () => {
  for (const [name, viewport] of SCREENS) {
    for (const theme of ['light', 'dark']) {
      const p = await open(`?preset=seed000-shaw&theme=${theme}&backend=cpu`, viewport);
      assert.equal(await overflow(p), 0, `${name} ${theme}: the page is wider than the screen`);
      const luma = await background(p, 'weights');
      if (theme === 'dark') assert.ok(luma < 60, `${name} dark: a figure's background has luma ${luma}`);
      else assert.ok(luma > 200, `${name} light: a figure's background has luma ${luma}`);
      // A cell at the right edge of a figure: its tooltip is flipped or clamped into the viewport.
      await hover(p, 'weights', 0, 11);
      const box = await p.locator('#tooltip').boundingBox();
      assert.ok(box.x >= 0 && box.x + box.width <= viewport.width && box.y + box.height <= viewport.height + 1,
        `${name} ${theme}: the tooltip leaves the viewport: ${JSON.stringify(box)}`);
      await p.mouse.move(1, 1);
      await p.evaluate(() => window.scrollTo(0, 0));
      await p.screenshot({ path: join(artifacts, `screen-${name}-${theme}.png`) });
      await p.close();
    }
  }
});

test('a 1280 × 720 projector\'s first screen: every control and the first figures, at least 40 % of their height (#51 item 12)', async () => {
  // The page's own controls, a preset with RoPE's options (the most controls) and T5's.
  for (const query of ['?backend=cpu', '?preset=rope-kernel&backend=cpu', '?preset=t5-buckets&backend=cpu']) {
    const p = await open(query, { width: 1280, height: 720 });
    const screen = await p.evaluate(() => {
      const bottom = document.querySelector('footer').getBoundingClientRect().top; // the fixed footer covers the window's foot
      const c = document.querySelector('#views figure canvas').getBoundingClientRect();
      // Every control shown of the toolbar and the form (not those of another method's, hidden).
      const controls = [...document.querySelectorAll('#toolbar :is(button, select, input), #controls :is(button, select, input)')].filter((e) => e.getClientRects().length);
      const off = controls.filter((e) => {
        const b = e.getBoundingClientRect();
        return b.left < 0 || b.right > window.innerWidth || b.top < 0 || b.bottom > bottom;
      });
      const unfocusable = controls.filter((e) => { e.focus(); return !e.disabled && document.activeElement !== e; });
      return { seen: (Math.min(bottom, c.bottom) - Math.max(0, c.top)) / c.height, controls: controls.length, off: off.map((e) => e.id), unfocusable: unfocusable.map((e) => e.id) };
    });
    assert.ok(screen.seen >= 0.4, `${query}: ${Math.round(screen.seen * 100)} % of the first figure on the first screen`);
    assert.ok(screen.controls > 25, `${query}: ${screen.controls} controls`);
    assert.deepEqual(screen.off, [], `${query}: controls off the first screen`);
    assert.deepEqual(screen.unfocusable, [], `${query}: controls that take no focus`);
    assert.equal(await overflow(p), 0);
    await p.evaluate(() => document.activeElement.blur());
    if (query.includes('rope')) await p.screenshot({ path: join(artifacts, 'screen-projector-first-screen.png') });
    await p.close();
  }
});

test('presentation on a phone: on-screen previous, next and close, and a swipe', async () => {
  const p = await open('?preset=seed000-shaw&backend=cpu', { width: 390, height: 844 });
  await p.click('#present-btn');
  await p.waitForSelector('#present:not([hidden])');
  const at = () => p.getAttribute('#present', 'data-stage');
  const first = await at();
  await p.click('#present-next');
  const second = await at();
  assert.notEqual(second, first, 'the next button does not step');
  await p.click('#present-prev');
  assert.equal(await at(), first, 'the previous button does not step back');
  // A swipe to the left steps forward (touch events as a finger makes them).
  await p.evaluate(() => {
    const el = document.getElementById('present');
    const touch = (x) => new Touch({ identifier: 1, target: el, clientX: x, clientY: 400 });
    el.dispatchEvent(new TouchEvent('touchstart', { touches: [touch(300)], changedTouches: [touch(300)], bubbles: true }));
    el.dispatchEvent(new TouchEvent('touchend', { touches: [], changedTouches: [touch(120)], bubbles: true }));
  });
  assert.equal(await at(), second, 'a swipe does not step');
  assert.equal(await overflow(p), 0, 'the presentation is wider than the phone');
  await p.screenshot({ path: join(artifacts, 'screen-phone-present.png') });
  await p.click('#present-close');
  assert.ok(await p.locator('#present').isHidden(), 'the close button does not leave');
  await p.close();
});

test('Model mode on a phone: the tiles fit 390 px, a swipe steps the slides and never leaves the page', async () => {
  const p = await context.newPage();
  await p.setViewportSize({ width: 390, height: 844 });
  watch(p, problems, { outside: true });
  await p.goto(`${base}?mode=model&model=music&piece=10.7&length=64&backend=cpu`);
  await p.waitForFunction(() => document.querySelectorAll('#m-tiles .tile canvas').length === 12, null, { timeout: 60000 });
  assert.equal(await overflow(p), 0, 'Model mode is wider than the phone');
  const right = await p.$$eval('#m-tiles .tile', (ts) => Math.max(...ts.map((t) => t.getBoundingClientRect().right)));
  assert.ok(right <= 390, `a tile reaches ${right} px`);
  await p.screenshot({ path: join(artifacts, 'screen-phone-model.png'), fullPage: true });
  const [url, visits] = [p.url(), await p.evaluate(() => history.length)];
  await p.click('#m-present');
  const slide = () => p.evaluate(() => document.body.dataset.modelSlide || null);
  assert.equal(await slide(), 'roll');
  const swipe = (from, to) => p.evaluate(([a, b]) => {
    const el = document.body;
    const touch = (x) => new Touch({ identifier: 1, target: el, clientX: x, clientY: 400 });
    el.dispatchEvent(new TouchEvent('touchstart', { touches: [touch(a)], changedTouches: [touch(a)], bubbles: true }));
    el.dispatchEvent(new TouchEvent('touchend', { touches: [], changedTouches: [touch(b)], bubbles: true }));
  }, [from, to]);
  await swipe(300, 120);
  assert.equal(await slide(), 'tiles', 'a swipe to the left steps forward');
  await swipe(120, 300);
  assert.equal(await slide(), 'roll', 'a swipe to the right steps back');
  await swipe(120, 300);
  assert.equal(await slide(), 'roll', 'no slide before the first');
  // The link names the slide shown (replaced in place: no navigation, no new history entry).
  assert.equal(p.url().replace(/&slide=\w+/, ''), url, 'the browser did not navigate');
  assert.match(p.url(), /&slide=roll/);
  assert.equal(await p.evaluate(() => history.length), visits, 'no history entry added');
  assert.equal(await p.evaluate(() => getComputedStyle(document.body).overscrollBehaviorX), 'none');
  await p.keyboard.press('Escape');
  await p.close();
});

test('no console errors, page errors or outside requests on any screen', () => {
  assert.deepEqual(problems, []);
});
