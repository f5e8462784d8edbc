// Owns zooming into a figure and panning it (#14: large n): + / − / 0 on a focused figure, Ctrl + wheel over
// it, and dragging a zoomed one. The window shown is the view's `win` ({ r0, c0, rows, cols }, figures.js);
// each change redraws that view (its cells coloured over the whole stage's range, a minimap in the corner) and
// the pins. The tooltip, the pin and the keyboard cursor keep reading the exact cells.
import { state } from './state.js';
import { drawView, windowOf, cellAt } from './figures.js';
import { drawPins } from './tooltip.js';

/** The smallest window, in cells a side. */
const MIN_SIDE = 8;

/** Wires a view's canvas for zooming and panning. */
export function attachZoom(v) {
  const c = v.canvas;
  c.addEventListener('keydown', (e) => {
    if (!v.stage || !v.rect || state.presentedAt !== null) return;
    const focus = v.cursor || state.pinned;
    if (e.key === '+' || e.key === '=') { e.preventDefault(); zoom(v, 0.5, focus); }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); zoom(v, 2, focus); }
    else if (e.key === '0') { e.preventDefault(); setWindow(v, null); }
  });
  c.addEventListener('wheel', (e) => {
    if (!e.ctrlKey || !v.stage || !v.rect) return;
    e.preventDefault();
    zoom(v, e.deltaY < 0 ? 0.5 : 2, cellAt(v, e));
  }, { passive: false });
  let drag = null;
  c.addEventListener('mousedown', (e) => {
    if (!v.win || e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, win: { ...v.win } };
    v.dragged = false;
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const b = c.getBoundingClientRect();
    const { x0, x1, y0, y1 } = v.rect;
    const sx = c.width / b.width;
    const dc = Math.round(((drag.x - e.clientX) * sx * drag.win.cols) / (x1 - x0));
    const dr = Math.round(((drag.y - e.clientY) * sx * drag.win.rows) / (y1 - y0));
    if (dc || dr) {
      v.dragged = true;
      setWindow(v, { ...drag.win, r0: drag.win.r0 + dr, c0: drag.win.c0 + dc });
    }
  });
  window.addEventListener('mouseup', () => { drag = null; });
}

/** Zooms by `factor` (0.5: in, 2: out) around cell `at` ({ i, j }; the window's centre when null). */
function zoom(v, factor, at) {
  const s = v.stage;
  const w = windowOf(v);
  const rows = Math.max(Math.min(MIN_SIDE, s.rows), Math.min(s.rows, Math.round(w.rows * factor)));
  const cols = Math.max(Math.min(MIN_SIDE, s.cols), Math.min(s.cols, Math.round(w.cols * factor)));
  if (rows >= s.rows && cols >= s.cols) { setWindow(v, null); return; }
  const ci = at ? at.i : w.r0 + w.rows / 2;
  const cj = at ? at.j : w.c0 + w.cols / 2;
  setWindow(v, { r0: Math.round(ci - rows / 2), c0: Math.round(cj - cols / 2), rows, cols });
}

/** Shows window `win` of the view (null: all of it), clamped to the stage. */
function setWindow(v, win) {
  v.win = win;
  if (win) v.win = windowOf(v);
  drawView(v, v.stage, state.current);
  drawPins();
}
