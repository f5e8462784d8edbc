// Owns presentation mode: one stage at a time, full screen, its formula typeset by KaTeX (stage.tex), stepped
// with the keyboard, the on-screen buttons or a swipe (phones); the stage presented is in the URL.
import { $ } from './dom.js';
import { state } from './state.js';
import { newView, drawView } from './figures.js';
import { saveURL } from './url.js';
import { hideTip, drawPins } from './tooltip.js';

export function enterPresent(at = 0) {
  if (!state.current) return;
  state.presentAt = Math.max(0, Math.min(state.current.stages.length - 1, at));
  document.body.classList.add('presenting');
  $('present').hidden = false;
  hideTip();
  drawPresent();
  $('present').focus();
  const el = document.documentElement;
  if (el.requestFullscreen && !document.fullscreenElement) el.requestFullscreen().catch(() => {});
}

export function exitPresent() {
  if (state.presentAt === null) return;
  state.presentAt = null;
  document.body.classList.remove('presenting');
  $('present').hidden = true;
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  saveURL();
  $('present-btn').focus();
  const after = state.afterPresent;
  state.afterPresent = null;
  if (after) after();
}

function stepTo(at) {
  if (state.presentAt === null || !state.current) return;
  state.presentAt = Math.max(0, Math.min(state.current.stages.length - 1, at));
  drawPresent();
}

/** Draws the stage presented (again: a new result redraws it); nothing outside presentation mode. */
export function drawPresent() {
  const at = state.presentAt;
  const cur = state.current;
  const stage = at === null ? null : cur.stages[at];
  if (!stage) return;
  const sec = $('present');
  sec.dataset.stage = stage.name;
  $('present-step').textContent = `${at + 1} / ${cur.stages.length}`;
  $('present-title').textContent = stage.title;
  const f = $('present-formula');
  if (window.katex && stage.tex) window.katex.render(stage.tex, f, { displayMode: true, throwOnError: false });
  else f.textContent = stage.formula;
  $('present-notice').textContent = stage.notice;
  sec.setAttribute('aria-label', `Step ${at + 1} of ${cur.stages.length}: ${stage.title}, ${stage.formula}`);
  // Drawn at 12/14 of the size it is shown at, so the figure's 12 px labels and ticks (and the cell values it
  // writes, 12 px or more) reach a projector at 14 px or more: at 1280 × 720 too.
  const holder = $('present-holder');
  const [w, h] = [Math.max(200, holder.clientWidth), Math.max(200, holder.clientHeight)];
  const size = [Math.round((w * 12) / 14), Math.round((h * 12) / 14)];
  const old = state.presentView;
  if (!old || old.canvas.width !== size[0] || old.canvas.height !== size[1]) {
    // Made on first use, so the page (and an embed) has no hidden canvas; made again at a new size.
    const v = newView(stage, size[0], size[1]);
    v.canvas.setAttribute('role', 'img');
    v.minValuePx = 12;
    Object.assign(v.canvas.style, { width: `${w}px`, height: `${h}px` });
    if (old) old.canvas.replaceWith(v.canvas); else holder.append(v.canvas);
    state.presentView = v;
  }
  drawView(state.presentView, stage, cur);
  drawPins();
}

/** The on-screen previous / next / close buttons and a horizontal swipe of at least 50 px. */
export function attachPresentControls() {
  $('present-prev').addEventListener('click', () => stepTo(state.presentAt - 1));
  $('present-next').addEventListener('click', () => stepTo(state.presentAt + 1));
  $('present-close').addEventListener('click', exitPresent);
  let x0 = null;
  $('present').addEventListener('touchstart', (e) => { x0 = e.touches.length === 1 ? e.touches[0].clientX : null; }, { passive: true });
  $('present').addEventListener('touchend', (e) => {
    if (x0 === null || state.presentAt === null) return;
    const dx = e.changedTouches[0].clientX - x0;
    x0 = null;
    if (Math.abs(dx) >= 50) stepTo(state.presentAt + (dx < 0 ? 1 : -1));
  });
}

export function presentKeys(e) {
  if (state.presentAt === null) return;
  const next = ['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key);
  const back = ['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key);
  const last = state.current.stages.length - 1;
  if (next || back) { e.preventDefault(); stepTo(state.presentAt + (next ? 1 : -1)); }
  else if (e.key === 'Home') { e.preventDefault(); stepTo(0); }
  else if (e.key === 'End') { e.preventDefault(); stepTo(last); }
  else if (e.key === 'Escape') { e.preventDefault(); exitPresent(); }
}
