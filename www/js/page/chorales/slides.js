// Owns Model mode's slides (Present): one panel at a time on the whole screen, each titled and numbered, the
// slide shown being its own state (body[data-model-slide] tells the CSS and the charts' text size); → after
// the last goes on to the chosen head stage by stage, and Esc there comes back.
import { $ } from '../dom.js';
import { ensureNll } from './compare.js';

/**
 * The slides in order: name, panel, title (of the result shown). After the last comes the chosen head stage
 * by stage (Parameters mode's presentation from its first stage).
 */
/** @type {[string, string, (s: any) => string][]} */
const SLIDES = [
  ['roll', '.roll-fig', (s) => `The window and what the selected note attends to (layer ${s.layer}, head ${s.head})`],
  ['tiles', '#m-panel-tiles', () => 'Every layer and head, and what each does'],
  ['dist', '#m-panel-dist', (s) => `Attention by distance, layer ${s.layer}`],
  ['predict', '#m-panel-predict', () => 'The next token after the selected one'],
  ['nll', '#m-panel-nll', () => 'Longer than trained: loss per position'],
];

/** The slide shown, or null. */
let current = null;
/** Given by wireSlides: the result shown, redrawing every chart, and presenting the head's stages. */
let shown = () => null;
let redrawAll = () => {};
let toStages = () => {};

/** Connects Present and the keys; `toStagesThenBack()` presents the chosen head's stages and returns here on Esc. */
export function wireSlides(shownResult, redraw, toStagesThenBack) {
  shown = shownResult;
  redrawAll = redraw;
  toStages = toStagesThenBack;
  $('m-present').addEventListener('click', () => present('roll'));
  document.addEventListener('keydown', keys);
  // A horizontal swipe of 50 px or more steps as ← / → do (style.css keeps it from being a browser gesture).
  let x0 = null;
  document.addEventListener('touchstart', (e) => { x0 = current && e.touches.length === 1 ? e.touches[0].clientX : null; }, { passive: true });
  document.addEventListener('touchend', (e) => {
    if (x0 === null || !current) return;
    const dx = e.changedTouches[0].clientX - x0;
    x0 = null;
    if (Math.abs(dx) >= 50) step(dx < 0 ? 1 : -1);
  });
}

/** One slide on (1) or back (−1); on from the last: the head's stages. */
function step(by) {
  const at = SLIDES.findIndex(([n]) => n === current);
  if (by > 0 && at + 1 >= SLIDES.length) {
    // Once full screen is left: its fullscreenchange, coming after the stages are presented, would end them.
    present(null).then(toStages);
  } else if (at + by >= 0) {
    present(SLIDES[at + by][0]);
  }
}

/** Shows slide `name` alone, full screen (null: back to the page); resolves once full screen is left or entered. */
function present(name) {
  let done = Promise.resolve();
  for (const [, sel] of SLIDES) document.querySelector(sel).removeAttribute('data-slide');
  current = name;
  $('m-slide-keys').hidden = !name;
  const at = SLIDES.findIndex(([n]) => n === name);
  const s = shown();
  $('m-slide-title').hidden = !name;
  $('m-slide-title').textContent = name && s ? `${at + 1} / ${SLIDES.length} · ${SLIDES[at][2](s)}` : '';
  // The NLL slide shows its chart: computed on arrival when it is not yet.
  if (name === 'nll') ensureNll();
  if (!name) {
    delete document.body.dataset.modelSlide;
    if (document.fullscreenElement && document.exitFullscreen) done = document.exitFullscreen().catch(() => {});
  } else {
    document.body.dataset.modelSlide = name;
    document.querySelector(SLIDES[at][1]).setAttribute('data-slide', '');
    const el = document.documentElement;
    if (el.requestFullscreen && !document.fullscreenElement) done = el.requestFullscreen().catch(() => {});
  }
  // The panels draw at their new size (and text size: 14 px or more on a slide).
  if (s) redrawAll();
  return done;
}

/** → / PageDown / Space next, ← / PageUp back, Esc leaves; after the last slide, the head's stages presented. */
function keys(e) {
  if (!current) return;
  if (['ArrowRight', 'PageDown', ' '].includes(e.key)) {
    e.preventDefault();
    step(1);
  } else if (['ArrowLeft', 'PageUp'].includes(e.key)) {
    e.preventDefault();
    step(-1);
  } else if (e.key === 'Escape') {
    e.preventDefault();
    present(null);
  }
}
