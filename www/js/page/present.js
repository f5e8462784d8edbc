// Owns presentation mode: one stage at a time, full screen, its formula typeset by KaTeX (stage.tex), stepped
// with the keyboard, the on-screen buttons or a swipe (phones); the stage presented is in the URL.
import { $, slideTextScale } from './dom.js';
import { state } from './state.js';
import { newView, drawView, figureNotes, shapedSize } from './figures.js';
import { saveURL } from './url.js';
import { drawPins } from './tooltip.js';
import { hideTip } from './tip.js';

// The stage presented and the presentation's view are state.presentedAt and state.presentedView (others read
// them); this module's own state (presentNextResult() is how others use it):
const show = {
  /** The stage to present once the next result is drawn (the model slides' last step), or null. */
  whenReady: null,
  /** What leaving that presentation does (the model slides: back to Model mode), or null. */
  after: null,
};

/** Presents stage `at` once the next result is drawn (resultDrawn), and calls `after` when it is left. */
export function presentNextResult(at, after) {
  show.whenReady = at;
  show.after = after;
}

/** A result was drawn: the presentation asked for by presentNextResult starts now. */
export function resultDrawn() {
  const at = show.whenReady;
  if (at == null) return;
  show.whenReady = null;
  enterPresent(at);
}

export function enterPresent(at = 0) {
  if (!state.current) return;
  state.presentedAt = Math.max(0, Math.min(state.current.stages.length - 1, at));
  document.body.classList.add('presenting');
  $('present').hidden = false;
  hideTip();
  drawPresent();
  $('present').focus();
  fullScreen();
}

/** Asks for full screen; where the browser refuses (a link opened with &present=: no click or key yet), the
 *  slide says so and that F asks again. */
function fullScreen() {
  const el = document.documentElement;
  const hint = $('present-fullscreen');
  if (!el.requestFullscreen || document.fullscreenElement) return;
  el.requestFullscreen().then(() => { hint.hidden = true; }).catch(() => { hint.hidden = state.presentedAt === null; });
}

export function exitPresent() {
  if (state.presentedAt === null) return;
  state.presentedAt = null;
  document.body.classList.remove('presenting');
  $('present').hidden = true;
  $('present-fullscreen').hidden = true;
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  saveURL();
  $('present-btn').focus();
  const after = show.after;
  show.after = null;
  if (after) after();
}

function stepTo(at) {
  if (state.presentedAt === null || !state.current) return;
  state.presentedAt = Math.max(0, Math.min(state.current.stages.length - 1, at));
  drawPresent();
}

/** Draws the stage presented (again: a new result redraws it); nothing outside presentation mode. */
export function drawPresent() {
  const at = state.presentedAt;
  const cur = state.current;
  const stage = at === null ? null : cur.stages[at];
  if (!stage) return;
  const sec = $('present');
  sec.dataset.stage = stage.name;
  $('present-step').textContent = `${at + 1} / ${cur.stages.length}`;
  fitTitle($('present-title'), stage.title);
  // The scheme's options, stated on every slide (its pictures' and its stages'), and what the figure says of
  // itself (the model, layer and head; masked cells; its colour scale across heads).
  $('present-stated').textContent = [cur.info.stated, ...figureNotes(stage, cur)].join(' · ');
  const f = $('present-formula');
  const katex = /** @type {any} */ (window).katex; // www/vendor/katex, loaded by index.html
  if (katex && stage.tex) katex.render(stage.tex, f, { displayMode: true, throwOnError: false });
  else f.textContent = stage.formula;
  $('present-notice').textContent = stage.notice;
  // A square picture beside its formula and notice (style.css), as tall as the slide allows.
  sec.classList.toggle('beside', Boolean(stage.chart?.equal_axes));
  fitWidth(f);
  sec.setAttribute('aria-label', `Step ${at + 1} of ${cur.stages.length}: ${stage.title}, ${stage.formula}`);
  // Drawn at 12/14 of the size it is shown at, so the figure's 12 px labels and ticks (and the cell values it
  // writes, 12 px or more) reach a projector at 14 px or more: at 1280 × 720 too. The plot keeps the stage's
  // shape (a square stage drawn square, its ratio held within 1:4 and 4:1): drawn once on the whole slide to
  // learn the frame's margins (title, formula, axes, colorbar), the canvas is then narrowed or shortened so
  // that the plot inside has the stage's ratio.
  const holder = $('present-holder');
  const [w, h] = [Math.max(200, holder.clientWidth), Math.max(200, holder.clientHeight)];
  const full = [Math.round((w * 12) / 14), Math.round((h * 12) / 14)];
  // The figure's text grows with the screen as the slide's does.
  const textScale = slideTextScale();
  const view = (size) => {
    const old = state.presentedView;
    if (old && old.canvas.width === size[0] && old.canvas.height === size[1] && old.textScale === textScale) return old;
    // Made on first use, so the page (and an embed) has no hidden canvas; made again at a new size.
    const v = newView(stage, size[0], size[1]);
    v.canvas.setAttribute('role', 'img');
    v.textScale = textScale;
    v.canvas.dataset.textScale = String(textScale);
    v.minValuePx = 12 * textScale;
    v.bare = true; // under the slide's own title and formula
    Object.assign(v.canvas.style, { width: `${Math.round((size[0] * 14) / 12)}px`, height: `${Math.round((size[1] * 14) / 12)}px` });
    if (old) old.canvas.replaceWith(v.canvas); else holder.append(v.canvas);
    state.presentedView = v;
    return v;
  };
  // The margins change with the width (a formula that wraps to a second line): measured again, up to three times.
  let v = view(full);
  drawView(v, stage, cur);
  // Curves fill the slide (a turning pair keeps equal axes itself); drawPins keeps the link.
  if (stage.chart) { drawPins(); return; }
  for (let pass = 0; pass < 3; pass++) {
    const size = shapedSize(v, full);
    if (size[0] === v.canvas.width && size[1] === v.canvas.height) break;
    v = view(size);
    drawView(v, stage, cur);
  }
  drawPins();
}

/** Sets a slide's title on one line: at the stylesheet's size when it fits, else shrunk (to 60 % at most), then
 *  cut with an ellipsis (the whole title stays in `title` and the section's aria-label). */
function fitTitle(h, text) {
  h.textContent = text;
  h.title = text;
  h.style.fontSize = '';
  const full = parseFloat(getComputedStyle(h).fontSize);
  for (let px = full; h.scrollWidth > h.clientWidth + 1 && px > full * 0.6; px -= 2) h.style.fontSize = `${px - 2}px`;
}

/** Shrinks a slide's formula (from the stylesheet's size, to 50 % at most) until it is as wide as the slide at
 *  most: T5's bucket formula ran past the right edge of a 1280 and a 1920 screen. */
function fitWidth(el) {
  el.style.fontSize = '';
  const full = parseFloat(getComputedStyle(el).fontSize);
  for (let px = full; el.scrollWidth > el.clientWidth + 1 && px > full * 0.5; px -= 1) el.style.fontSize = `${px - 1}px`;
}

/** The on-screen previous / next / close buttons and a horizontal swipe of at least 50 px. */
export function attachPresentControls() {
  $('present-prev').addEventListener('click', () => stepTo(state.presentedAt - 1));
  $('present-next').addEventListener('click', () => stepTo(state.presentedAt + 1));
  $('present-close').addEventListener('click', exitPresent);
  // KaTeX's fonts load when a formula is first shown, and widen it: the slide is fitted again then.
  document.fonts.addEventListener('loadingdone', () => { if (state.presentedAt !== null) drawPresent(); });
  let x0 = null;
  $('present').addEventListener('touchstart', (e) => { x0 = e.touches.length === 1 ? e.touches[0].clientX : null; }, { passive: true });
  $('present').addEventListener('touchend', (e) => {
    if (x0 === null || state.presentedAt === null) return;
    const dx = e.changedTouches[0].clientX - x0;
    x0 = null;
    if (Math.abs(dx) >= 50) stepTo(state.presentedAt + (dx < 0 ? 1 : -1));
  });
}

export function presentKeys(e) {
  if (state.presentedAt === null) return;
  const next = ['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key);
  const back = ['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key);
  const last = state.current.stages.length - 1;
  if (next || back) { e.preventDefault(); stepTo(state.presentedAt + (next ? 1 : -1)); }
  else if (e.key === 'Home') { e.preventDefault(); stepTo(0); }
  else if (e.key === 'End') { e.preventDefault(); stepTo(last); }
  else if (e.key === 'Escape') { e.preventDefault(); exitPresent(); }
  else if (e.key === 'f' || e.key === 'F') { e.preventDefault(); fullScreen(); }
}
