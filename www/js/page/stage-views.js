// Owns the figures on the page: one <figure> per stage of the result shown, created on first need, kept in
// pipeline order, removed when a result lacks their stage, and rendering a result into them; the result shown
// (state.current) and the last one drawn in full (state.good) are written here only. A render takes a token;
// after every await it stops when a newer render has started, so an older result can never finish drawing over
// a newer one.
import { $ } from './dom.js';
import { state } from './state.js';
import { FRAME, newView, drawView } from './figures.js';
import { attachPointer, drawPins } from './tooltip.js';
import { attachZoom } from './zoom.js';
import { drawPresent } from './present.js';
import { exportFigure } from './export.js';
import { showTimings, showStageTimes } from './status.js';
import { EMBED } from './url.js';

// This module's own state: no other module writes it.
const drawing = {
  /** Taken by every render: a render that awaits checks it and stops when a newer one has started. */
  token: 0,
};

/** Shows result `cur` (state.current's shape): it becomes state.current and is drawn. */
export function show(cur) {
  state.current = cur;
  return render(cur);
}

/** Draws the result shown again (the theme changed, the window was resized); nothing when none is. */
export function redraw() {
  return state.current ? render(state.current) : Promise.resolve();
}

/** Stops a render under way at its next figure (the page's wasm instance is being replaced). */
export function stopRendering() {
  drawing.token += 1;
}

/** Shows the last result drawn in full again (after the page's wasm instance was replaced). */
export async function showLastGood() {
  if (state.good) await show(state.good);
}

/** A figure for `stage`: its canvas (focusable, described by the keyboard hint) and, except in an embed, its export buttons. */
function newFigure(stage) {
  const figure = document.createElement('figure');
  figure.className = 'view';
  figure.dataset.stage = stage.name;
  const v = newView(stage, FRAME.w, FRAME.h);
  v.figure = figure;
  const canvas = v.canvas;
  canvas.tabIndex = 0;
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-describedby', 'kbd-hint');
  figure.append(canvas);
  if (!EMBED) {
    // What to notice in this stage (crates/relattn-core/src/layer/stage_meta.rs), under the figure.
    const notice = document.createElement('p');
    notice.className = 'notice';
    figure.append(notice);
    v.notice = notice;
    const cap = document.createElement('figcaption');
    const png = document.createElement('button');
    png.type = 'button'; png.className = 'export-png'; png.textContent = 'PNG';
    const svg = document.createElement('button');
    svg.type = 'button'; svg.className = 'export-svg'; svg.textContent = 'SVG';
    const slide = document.createElement('button');
    slide.type = 'button'; slide.className = 'export-slide'; slide.textContent = 'Slide';
    cap.append(png, svg, slide);
    figure.append(cap);
    png.addEventListener('click', () => exportFigure(v.stage.name, 'png'));
    svg.addEventListener('click', () => exportFigure(v.stage.name, 'svg'));
    slide.addEventListener('click', () => exportFigure(v.stage.name, 'slide'));
  }
  attachPointer(v);
  attachZoom(v);
  return v;
}

/** Milliseconds of drawing a task takes before it yields the thread: with one figure more, under the 100 ms
 *  of a long task (tests/e2e/slides.test.mjs) even when a figure takes 70. */
const SLICE_MS = 25;

/** Resolves in a later task: scheduler.yield() where the browser has it (the render keeps its place ahead of
 *  other timers), else a timer. */
function yieldThread() {
  const s = /** @type {any} */ (globalThis).scheduler;
  return s && typeof s.yield === 'function' ? s.yield() : new Promise((r) => setTimeout(r, 0));
}

/** Draws result `cur` (state.current's shape) into the figures; resolves when drawn or superseded. */
async function render(cur) {
  const token = ++drawing.token;
  const views = state.views;
  const main = $('views');
  const names = new Set(cur.stages.map((s) => s.name));
  for (const [name, v] of views) {
    if (!names.has(name)) { v.figure.remove(); views.delete(name); }
  }
  const drawMs = [];
  let prev = null;
  const shown = EMBED ? cur.stages.filter((s) => s.name === EMBED) : cur.stages;
  if (EMBED && !shown.length) {
    $('err-general').textContent = `embed: no stage '${EMBED}' in this trace; stages: ${cur.stages.map((s) => s.name).join(', ')}`;
  }
  let slice = performance.now();
  for (const stage of shown) {
    // Figures a task while they take under SLICE_MS, then the page gets the thread (input, paint): a figure takes
    // 1–5 ms on a quiet 2-core VM and up to 70 on a loaded one (#53 item 3); a newer render stops this one.
    if (performance.now() - slice > SLICE_MS) {
      await yieldThread();
      if (token !== drawing.token) return;
      slice = performance.now();
    }
    let v = views.get(stage.name);
    if (!v) {
      v = newFigure(stage);
      views.set(stage.name, v);
    }
    if (EMBED) {
      v.canvas.width = Math.max(200, window.innerWidth);
      v.canvas.height = Math.max(160, window.innerHeight);
    }
    for (const b of v.figure.querySelectorAll('figcaption button')) {
      const as = { PNG: 'PNG (2×)', SVG: 'SVG', Slide: 'a 16:9 slide (PNG, 1920 × 1080)' }[b.textContent];
      b.setAttribute('aria-label', `Export ${stage.title} as ${as}`);
    }
    if (prev ? prev.figure.nextSibling !== v.figure : main.firstChild !== v.figure) {
      if (prev) prev.figure.after(v.figure); else main.prepend(v.figure);
    }
    prev = v;
    if (v.notice) v.notice.textContent = stage.notice;
    v.figure.dataset.range = `${stage.lo} ${stage.hi}`;
    const t0 = performance.now();
    drawView(v, stage, cur);
    drawMs.push([stage.name, performance.now() - t0]);
    // The first stage is on the page (bench/browser_bench.mjs times it; body.dataset.ready says all are).
    if (drawMs.length === 1) document.body.dataset.firstStage = String(cur.id);
  }
  drawPins();
  if (state.presentedAt !== null) drawPresent();
  showTimings(cur.timings, drawMs, cur.memory);
  showStageTimes(cur.stageTimes, cur.onGpu);
  state.good = cur;
  document.body.dataset.ready = String(cur.id);
}
