// Owns drawing one stage into one view: the frame (axes, title, labels) drawn by the wasm module with plotters
// (draw_frame), the cells blitted from the RGBA buffer the worker made (no copy: an ImageData over it), cell
// outlines, and the mapping from a pointer position to a cell. A view is { canvas, ctx, off, rect, frame,
// stage }; everything about a stage (title, formula, axes, pairs) is read from the stage object.
import { state } from './state.js';
import { fmt } from './format.js';

/** The size of a figure's canvas (and of an exported figure, before the PNG's 2×). */
export const FRAME = { w: 470, h: 430 };

/** [x axis, y axis, x tick labels, y tick labels]: the tokens label positions when there are n of them. */
function axesOf(stage, cur) {
  const toks = cur.tokens;
  const xl = toks && stage.pairs && stage.cols === toks.length ? toks : [];
  const yl = toks && stage.rows_are_queries && stage.rows === toks.length ? toks : [];
  return [stage.x_axis, stage.y_axis, xl, yl];
}

/** The formula, the shape and, where the stage depends on them and there is a choice, the batch element and head. */
function subtitleOf(stage, cur) {
  const s = cur.info.settings;
  const where = [
    stage.per_batch && s.batch_size > 1 ? `b ${cur.shown.batch}` : '',
    stage.per_head && s.heads > 1 ? `head ${cur.shown.head}` : '',
  ].filter(Boolean).join(', ');
  return `${stage.formula}   [${stage.rows} × ${stage.cols}]${where ? ` · ${where}` : ''}`;
}

/** The src/web/figure.rs FigureSpec of a stage's figure. */
export function figureSpec(stage, cur) {
  const [x_axis, y_axis, x_labels, y_labels] = axesOf(stage, cur);
  return { title: stage.title, subtitle: subtitleOf(stage, cur), x_axis, y_axis, scale: stage.scale, x_labels, y_labels, rows: stage.rows, cols: stage.cols };
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
  const r = state.ui.draw_frame(v.canvas, figureSpec(stage, cur), stage.values);
  v.rect = r;
  // The frame without outlines, to restore before each redraw of the pins (they overlap the axes).
  v.frame = v.ctx.getImageData(0, 0, v.canvas.width, v.canvas.height);
  // The raster: one pixel per cell, or per block of cells when the stage is larger than RASTER_SIDE.
  v.off.width = stage.raster_cols;
  v.off.height = stage.raster_rows;
  v.off.getContext('2d').putImageData(new ImageData(stage.rgba, stage.raster_cols, stage.raster_rows), 0, 0);
  blit(v);
  const c = v.canvas;
  Object.assign(c.dataset, { ...r, rows: stage.rows, cols: stage.cols });
  c.setAttribute('aria-label', `${stage.title}: ${stage.formula}, ${stage.rows} × ${stage.cols}`);
}

/** The smallest cell, in canvas pixels, that gets its value written in it (src/render.rs VALUE_CELL, for exports). */
const VALUE_CELL = { w: 26, h: 14 };

/** The frame, then the cells scaled into its plot area (no smoothing: one block per cell), with their values
 *  written in them when the cells are large enough to read (as in the PNG and SVG exports). */
export function blit(v) {
  const { x0, x1, y0, y1 } = v.rect;
  if (v.frame) v.ctx.putImageData(v.frame, 0, 0);
  // Enlarged: one sharp block per cell; shrunk: smoothed, so no row or column of the raster is dropped.
  v.ctx.imageSmoothingEnabled = v.off.width > x1 - x0 || v.off.height > y1 - y0;
  v.ctx.drawImage(v.off, x0, y0, x1 - x0, y1 - y0);
  const { rows, cols, values, rgba } = v.stage;
  const cw = (x1 - x0) / cols;
  const ch = (y1 - y0) / rows;
  if (v.stage.leftover_above) {
    // The causal skew's leftovers (j > i): greyed, the mask removes them.
    v.ctx.fillStyle = 'rgba(128, 128, 128, 0.75)';
    for (let i = 0; i < rows - 1; i++) v.ctx.fillRect(x0 + (i + 1) * cw, y0 + i * ch, (cols - i - 1) * cw, ch);
  }
  if (cw < VALUE_CELL.w || ch < VALUE_CELL.h || v.stage.raster_cols !== cols) return;
  const ctx = v.ctx;
  ctx.font = `${Math.min(13, Math.floor(ch * 0.45), Math.floor(cw / 4))}px sans-serif`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const k = (i * cols + j) * 4;
      // Dark text on light cells, light text on dark ones (Rec. 709 luma of the cell's colour).
      const luma = 0.2126 * rgba[k] + 0.7152 * rgba[k + 1] + 0.0722 * rgba[k + 2];
      ctx.fillStyle = luma > 140 ? '#111' : '#f4f4f4';
      ctx.fillText(fmt(values[i * cols + j]), x0 + (j + 0.5) * cw, y0 + (i + 0.5) * ch);
    }
  }
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

/** Shades the cells `cells` ([i, j] pairs) of a view: the pairs that read one table row. */
export function shade(v, cells) {
  const { x0, x1, y0, y1 } = v.rect;
  const cw = (x1 - x0) / v.stage.cols;
  const ch = (y1 - y0) / v.stage.rows;
  const ctx = v.ctx;
  ctx.fillStyle = 'rgba(255, 0, 170, 0.5)'; // magenta: in neither colormap
  for (const [i, j] of cells) ctx.fillRect(x0 + j * cw, y0 + i * ch, Math.max(1, cw), Math.max(1, ch));
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
