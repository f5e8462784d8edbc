// Owns Model mode's slides (Present): one panel at a time on the whole screen, each titled with what it shows
// (model, piece, layer, head) and numbered, the slide shown being state.model.slide (body[data-model-slide] tells
// the CSS and the charts' text size) and in the link (&slide=NAME opens on it); → after the last goes on to the
// chosen head stage by stage, and Esc there comes back.
import { $ } from '../dom.js';
import { state } from '../state.js';
import { ensureNll, ensureComparison } from './all-models.js';
import { shownWhere, windowName } from './form.js';
import { saveURL } from '../url.js';

/**
 * The slides in order: name, panel, title (of the result shown), each naming what it shows. After the last
 * comes the chosen head stage by stage (Parameters mode's presentation from its first stage).
 */
/** @type {[string, string, (s: any) => string][]} */
export const SLIDES = [
  ['roll', '.roll-fig', (s) => `What note ${state.model.position} attends to — ${shownWhere(s)}, layer ${s.layer}, head ${s.head}`],
  ['tiles', '#m-panel-tiles', (s) => `Every layer and head, and what each does — ${shownWhere(s)}`],
  ['dist', '#m-panel-dist', (s) => `Attention by distance — ${shownWhere(s)}, layer ${s.layer}`],
  ['models', '#m-panel-models', (s) => `The six models side by side — ${windowName(s.window)}, tokens ${s.window.start}…${s.window.start + s.window.length - 1}, layer ${s.layer}`],
  ['predict', '#m-panel-predict', (s) => `The next token after note ${state.model.position} — ${shownWhere(s)}`],
  ['nll', '#m-panel-nll', (s) => `Longer than trained: loss per position — the six models on ${windowName(s.window)} from its start`],
];

/** The slide the link asks for (&slide=), shown once the first result is in; null when none or shown. */
let wanted = null;

/** Sets the slide to show once the first result is in (main.js, from url.js applyURL's &slide=). */
export function wantSlide(name) {
  wanted = SLIDES.some(([n]) => n === name) ? name : null;
}

/** The first result is in: the slide the link asks for is shown. */
export function showWantedSlide() {
  if (wanted) present(wanted);
  wanted = null;
}

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
  document.addEventListener('touchstart', (e) => { x0 = state.model.slide && e.touches.length === 1 ? e.touches[0].clientX : null; }, { passive: true });
  document.addEventListener('touchend', (e) => {
    if (x0 === null || !state.model.slide) return;
    const dx = e.changedTouches[0].clientX - x0;
    x0 = null;
    if (Math.abs(dx) >= 50) step(dx < 0 ? 1 : -1);
  });
}

/** One slide on (1) or back (−1); on from the last: the head's stages. */
function step(by) {
  const at = SLIDES.findIndex(([n]) => n === state.model.slide);
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
  state.model.slide = name;
  $('m-slide-keys').hidden = !name;
  const at = SLIDES.findIndex(([n]) => n === name);
  const s = shown();
  $('m-slide-title').hidden = !name;
  $('m-slide-title').textContent = name && s ? `${at + 1} / ${SLIDES.length} · ${SLIDES[at][2](s)}` : '';
  // The NLL slide and the six models show their charts: computed on arrival when they are not yet.
  if (name === 'nll') ensureNll();
  if (name === 'models') ensureComparison();
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
  saveURL();
  return done;
}

/** → / PageDown / Space next, ← / PageUp back, Esc leaves; after the last slide, the head's stages presented. */
function keys(e) {
  if (!state.model.slide) return;
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
