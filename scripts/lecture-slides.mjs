// The lecture's slides for the book (docs/src/page.md, "A lecture with it"): each step's slide as a 1280 × 720
// projector shows it, written to docs/src/img/lecture/. Needs the page's wasm (make wasm) and Debian's Chromium,
// as the e2e tests do:   node scripts/lecture-slides.mjs
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { root, startServer, launch, close } from '../tests/e2e/harness.mjs';

const out = join(root, 'docs', 'src', 'img', 'lecture');
const sentence = encodeURIComponent('the cat saw the dog');
/** Each step: its file name, the page's link (a slide: &present= or Model mode's &slide=), and for the real
 *  model the file opened and the button that presents it. */
const READY = {
  page: () => document.body.dataset.ready && document.getElementById('busy').hidden,
  model: () => document.querySelectorAll('#m-tiles .tile canvas').length > 0 && document.body.dataset.modelSlide === 'roll',
};
const STEPS = [
  ['01-built-heads', '?preset=built-heads&backend=cpu&present=weights'],
  ['02-where-numbers-come-from', '?preset=seed004&backend=cpu&pin=3,1&present=rel_index'],
  ['03-content-versus-position', `?method=shaw&n=5&d_model=16&heads=1&clip=2&seed=0&sentence=${sentence}&backend=cpu&present=content_logits`],
  ['04-the-skew', '?method=music&n=6&d_model=64&heads=2&clip=5&causal=1&seed=0&sentence=&backend=cpu&present=skew_reshaped'],
  ['05-any-size', '?method=shaw&n=2048&d_model=64&heads=8&clip=16&seed=0&sentence=&backend=cpu&present=weights'],
  ['06-rope', '?preset=rope-kernel&backend=cpu&present=rope_pair_turn'],
  ['07-alibi', '?preset=alibi-slopes&backend=cpu&present=alibi_bias_by_head'],
  ['08-t5', '?preset=t5-buckets&backend=cpu&present=t5_staircase'],
  ['09-deberta', '?preset=deberta-buckets&backend=cpu&present=deberta_buckets'],
  ['10-compare', '?preset=absolute-positions&backend=cpu&compare=weights&present=compare'],
  ['11-model-mode', '?mode=model&model=music&piece=10.7&length=64&layer=1&head=2&backend=cpu&slide=roll'],
  ['12-a-real-model', '?preset=seed004&backend=cpu', join(root, 'tests', 'fixtures', 'atlas-tiny-llama.atlas.npz'), '#atlas-present'],
];

mkdirSync(out, { recursive: true });
const { server, base } = await startServer();
const { context, page, profile } = await launch({ viewport: { width: 1280, height: 720 } });
try {
  for (const [name, query, file, present] of STEPS) {
    await page.goto(`${base}${query}`);
    await page.waitForFunction(query.includes('mode=model') ? READY.model : READY.page, null, { timeout: 120000 });
    if (file) {
      await page.setInputFiles('#tensors', file);
      await page.waitForFunction(() => Number(document.getElementById('atlas').dataset.ready || 0) > 0 && document.getElementById('busy').hidden, null, { timeout: 60000 });
      await page.click(present);
    }
    await page.evaluate(() => document.fonts.ready);
    // Two frames: the slide fitted again once its fonts are in.
    await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
    await page.screenshot({ path: join(out, `${name}.png`) });
    console.log(`${name}.png`);
  }
} finally {
  await close({ context, server, profile });
}
