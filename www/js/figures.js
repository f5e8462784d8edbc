// Owns drawing one stage into one view: the frame (axes, title, labels) drawn by the wasm module with plotters
// (draw_frame), the cells blitted from the RGBA buffer the worker made (no copy: an ImageData over it), cell
// outlines, and the mapping from a pointer position to a cell. A view is { canvas, ctx, off, rect, frame,
// stage }; everything about a stage (title, formula, axes, pairs) is read from the stage object.
import { state } from './state.js';

/** The size of a figure's canvas (and of an exported figure, before the PNG's 2×). */
export const FRAME = { w: 470, h: 430 };

/** [x axis, y axis, x tick labels, y tick labels]: the tokens label positions when there are n of them. */
export function axesOf(stage, cur) {
  const toks = cur.tokens;
  const xl = toks && stage.pairs && stage.cols === toks.length ? toks : [];
  // Rows are positions in pair stages and in those computed per batch element; the relative tables (neither)
  // have table rows, which tokens never label.
  const yl = toks && stage.rows === toks.length && (stage.pairs || stage.per_batch) ? toks : [];
  return [stage.x_axis, stage.y_axis, xl, yl];
}

export function subtitleOf(stage, cur) {
  const info = cur.info;
  const where = info.heads > 1 || info.batch_size > 1 ? ` · b ${info.batch}, head ${info.head}` : '';
  return `${stage.formula}   [${stage.rows} × ${stage.cols}]${where}`;
}

/** A view (its canvas, and an offscreen canvas for the cells) of `stage`, not drawn yet. */
export function newView(stage, width, height) {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  return { canvas, ctx: canvas.getContext('2d'), off: document.createElement('canvas'), rect: null, frame: null, stage };
}

export function drawView(v, stage, cur) {
  v.stage = stage;
  const [xd, yd, xl, yl] = axesOf(stage, cur);
  const subtitle = subtitleOf(stage, cur);
  const r = state.ui.draw_frame(v.canvas, stage.title, subtitle, xd, yd, stage.values, stage.rows, stage.cols, stage.sequential, xl, yl);
  v.rect = { x0: r[0], x1: r[1], y0: r[2], y1: r[3] };
  // The frame without outlines, to restore before each redraw of the pins (they overlap the axes).
  v.frame = v.ctx.getImageData(0, 0, v.canvas.width, v.canvas.height);
  v.off.width = stage.cols;
  v.off.height = stage.rows;
  v.off.getContext('2d').putImageData(new ImageData(stage.rgba, stage.cols, stage.rows), 0, 0);
  blit(v);
  const c = v.canvas;
  Object.assign(c.dataset, { x0: r[0], x1: r[1], y0: r[2], y1: r[3], rows: stage.rows, cols: stage.cols });
  c.setAttribute('aria-label', `${stage.title}: ${stage.formula}, ${stage.rows} × ${stage.cols}`);
}

/** The frame, then the cells scaled into its plot area (no smoothing: one block per cell). */
export function blit(v) {
  const { x0, x1, y0, y1 } = v.rect;
  if (v.frame) v.ctx.putImageData(v.frame, 0, 0);
  v.ctx.imageSmoothingEnabled = false;
  v.ctx.drawImage(v.off, x0, y0, x1 - x0, y1 - y0);
}

/** The cell { i, j } under a pointer event, or null outside the plot area. */
export function cellAt(v, e) {
  const b = v.canvas.getBoundingClientRect();
  const x = ((e.clientX - b.left) * v.canvas.width) / b.width;
  const y = ((e.clientY - b.top) * v.canvas.height) / b.height;
  const { x0, x1, y0, y1 } = v.rect;
  if (x < x0 || x >= x1 || y < y0 || y >= y1) return null;
  const j = Math.floor(((x - x0) / (x1 - x0)) * v.stage.cols);
  const i = Math.floor(((y - y0) / (y1 - y0)) * v.stage.rows);
  return { i, j };
}

/** Outlines cells (i, j) … (i + h − 1, j + w − 1) in black and yellow (visible on every colormap). */
export function outline(v, i, j, w = 1, h = 1) {
  const { x0, x1, y0, y1 } = v.rect;
  const cw = (x1 - x0) / v.stage.cols;
  const ch = (y1 - y0) / v.stage.rows;
  const x = x0 + j * cw;
  const y = y0 + i * ch;
  const rw = Math.max(3, cw * w);
  const rh = Math.max(3, ch * h);
  const ctx = v.ctx;
  ctx.lineWidth = 3;
  ctx.strokeStyle = '#000';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = '#ffd400';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
}
