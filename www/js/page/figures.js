// Owns drawing one stage into one view: the frame (axes, title, labels) drawn by the wasm module with plotters
// (draw_frame), the cells blitted from the RGBA buffer the worker made (no copy: an ImageData over it), cell
// outlines, and the mapping from a pointer position to a cell. A view is { canvas, ctx, off, rect, frame,
// stage, win, cells }; everything about a stage (title, formula, axes, pairs) is read from the stage object.
// `win` is the window of the stage shown ({ r0, c0, rows, cols }, null: all of it; zoom.js sets it): a zoomed
// view draws those cells alone, coloured by the page's wasm over the whole stage's range, with a minimap.
import { state, emit } from './state.js';
import * as core from '../shared/figure-core.js';
import { askCells } from './worker-client.js';

export const FRAME = core.FRAME;

/** The window of a view's stage shown: the whole stage, or the zoomed one (clamped to the stage). */
export function windowOf(v) {
  const { rows, cols } = v.stage;
  const w = v.win;
  if (!w) return { r0: 0, c0: 0, rows, cols };
  const wr = Math.min(w.rows, rows);
  const wc = Math.min(w.cols, cols);
  return { r0: Math.max(0, Math.min(w.r0, rows - wr)), c0: Math.max(0, Math.min(w.c0, cols - wc)), rows: wr, cols: wc };
}

/** The labels of positions from..from + count − 1: the tokens' (when there are some) or the indices. */
function labelsOf(tokens, from, count) {
  return Array.from({ length: count }, (_, k) => (tokens.length ? tokens[from + k] : String(from + k)));
}

/**
 * What a figure says of its stage besides the formula and shape, each a phrase: where in the layer it is (a
 * captured or trained model's layer; the batch element and head where the stage depends on them and there is a
 * choice), its grey masked cells, its rows that see no key, and its colour scale across heads (one for all, or
 * this head's alone where heads differ: a bias with each head its own scale, a layer held on demand). Under the
 * figure's title on the page and in exports; on a slide, under the scheme's options.
 */
export function figureNotes(stage, cur) {
  const s = cur.info.options;
  const picture = 'chart' in stage; // a picture shows every head and batch element
  const where = [
    cur.info.capture_title,
    !picture && stage.per_batch && s.batch_size > 1 ? `b ${cur.shown.batch}` : '',
    !picture && stage.per_head && s.heads > 1 ? `head ${cur.shown.head}` : '',
  ].filter(Boolean).join(', ');
  return [
    where,
    stage.masked_above || stage.masked_window || stage.masked_chunk ? 'grey: masked, no weight' : '',
    stage.rows_are_queries ? cur.info.unattended[cur.shown.batch] || '' : '',
    stage.heads_shared ? 'one colour scale for all heads' : '',
    stage.own_scale ? `colour scale of head ${cur.shown.head} alone: heads that look alike may differ` : '',
  ].filter(Boolean);
}

/** The formula, the shape (a stage's, a heatmap picture's), a picture's scheme options, and the figure's notes. */
function subtitleOf(stage, cur) {
  const shape = stage.chart ? '' : `   [${stage.rows} × ${stage.cols}]`;
  const stated = 'chart' in stage ? [cur.info.stated] : [];
  return [`${stage.formula}${shape}`, ...stated, ...figureNotes(stage, cur)].join(' · ');
}

/** The crates/relattn-wasm/src/figure.rs FigureSpec of a stage's figure (shared/figure-core.js figureSpec). */
export function figureSpec(stage, cur) {
  return core.figureSpec(stage, subtitleOf(stage, cur), cur.tokens);
}

/** A view (its canvas, and an offscreen canvas for the cells) of `stage`, not drawn yet. */
export function newView(stage, width, height) {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  return { canvas, ctx: canvas.getContext('2d'), off: document.createElement('canvas'), rect: null, frame: null, stage };
}

/** The canvas size within `full` at which the plot of view `v` (drawn at `full`) has its stage's shape, columns
 *  over rows held within 1:4 and 4:1 (a square stage drawn square): `full` less the frame's margins as drawn
 *  (title, subtitle, axes, colour bar), narrowed or shortened. */
export function shapedSize(v, full) {
  const ratio = Math.min(4, Math.max(0.25, v.stage.cols / v.stage.rows));
  const { x0, x1, y0, y1 } = v.rect;
  const [mx, my] = [v.canvas.width - (x1 - x0), v.canvas.height - (y1 - y0)];
  const [pw, ph] = [full[0] - mx, full[1] - my];
  return pw / ph > ratio ? [Math.round(ph * ratio + mx), full[1]] : [full[0], Math.round(pw / ratio + my)];
}

/**
 * The values of window `w` of a view's stage: copied out of the stage's values, or — for a stage sent without
 * them — asked of the worker (askCells; refused past VALUES_CELLS), null until they come: the view is drawn
 * again then.
 */
function windowValues(v, stage, w) {
  if (stage.values) {
    const values = new Float32Array(w.rows * w.cols);
    for (let i = 0; i < w.rows; i++) values.set(stage.values.subarray((w.r0 + i) * stage.cols + w.c0, (w.r0 + i) * stage.cols + w.c0 + w.cols), i * w.cols);
    return values;
  }
  const key = [state.current.id, stage.name, w.r0, w.c0, w.rows, w.cols].join('|');
  if (v.asked && v.asked.key === key) return v.asked.values;
  const asked = { key, values: null };
  v.asked = asked;
  askCells(stage.name, w.r0, w.c0, w.rows, w.cols).then((values) => {
    if (v.asked !== asked) return;
    asked.values = values;
    drawView(v, v.stage, state.current);
    emit('view-redrawn', v); // its pins (tooltip.js)
  }).catch(() => { /* too many cells (the pooled raster stays), or a newer result */ });
  return null;
}

/** The wasm ChartSpec of a picture's curves (crates/relattn-wasm/src/figure.rs), its text `textPx` tall; `bare`:
 *  without title and subtitle (a slide states them above the figure). */
export function chartSpec(stage, cur, textPx = 12, bare = false) {
  const [title, subtitle] = bare ? ['', ''] : [stage.title, subtitleOf(stage, cur)];
  return { title, subtitle, x_axis: stage.x_axis, y_axis: stage.y_axis, chart: stage.chart, text_px: Math.round(textPx) };
}

export function drawView(v, stage, cur) {
  v.stage = stage;
  if (stage.chart) {
    // Curves: drawn whole by the wasm; no cells to point at, zoom or pin (rect null).
    state.ui.draw_chart(v.canvas, chartSpec(stage, cur, v.minValuePx || 12, v.bare));
    v.rect = null;
    v.win = null;
    v.canvas.dataset.series = String(stage.chart.series.length);
    v.canvas.setAttribute('aria-label', `${stage.title}: ${stage.formula}; ${stage.chart.series.map((s) => s.label).join('; ')}`);
    return;
  }
  const full = { r0: 0, c0: 0, rows: stage.rows, cols: stage.cols };
  const w = windowOf(v);
  const zoomed = w.rows < stage.rows || w.cols < stage.cols;
  v.win = zoomed ? w : null;
  // The stage's colour range always: a window keeps it, and a stage sent without values has only it.
  // A slide's figure has its text scaled with the screen.
  const spec = { ...figureSpec(stage, cur), range: [stage.lo, stage.hi], text_scale: v.textScale || 1 };
  // A slide's figure goes under the slide's own title and formula.
  if (v.bare) Object.assign(spec, { title: '', subtitle: '' });
  let values = stage.values;
  if (zoomed) {
    values = windowValues(v, stage, w);
    Object.assign(spec, {
      rows: w.rows, cols: w.cols,
      x_labels: labelsOf(spec.x_labels, w.c0, w.cols), y_labels: labelsOf(spec.y_labels, w.r0, w.rows),
      subtitle: `${spec.subtitle} · rows ${w.r0}–${w.r0 + w.rows - 1}, columns ${w.c0}–${w.c0 + w.cols - 1} (0 resets)`,
    });
  }
  const r = state.ui.draw_frame(v.canvas, spec, values || NO_VALUES);
  v.rect = r;
  // The frame without outlines, to restore before each redraw of the pins (they overlap the axes): a canvas copy,
  // not getImageData (a readback that, with the putImageData that restored it, took 2 ms a figure on the page's
  // main thread).
  v.frame = v.frame || document.createElement('canvas');
  v.frame.width = v.canvas.width;
  v.frame.height = v.canvas.height;
  v.frame.getContext('2d').drawImage(v.canvas, 0, 0);
  v.crop = null;
  if (zoomed) {
    // The window's cells, coloured like the whole stage; the whole stage's raster is kept for the minimap.
    const rgba = values && new Uint8ClampedArray(state.ui.colour({ rows: w.rows, cols: w.cols, scale: stage.scale, range: [stage.lo, stage.hi], masked_above: stage.masked_above, masked_window: stage.masked_window, masked_chunk: stage.masked_chunk, origin: [w.r0, w.c0] }, values));
    v.cells = { ...w, values, rgba };
    v.mini = v.mini || document.createElement('canvas');
    v.mini.width = stage.raster_cols;
    v.mini.height = stage.raster_rows;
    v.mini.getContext('2d').putImageData(new ImageData(stage.rgba, stage.raster_cols, stage.raster_rows), 0, 0);
    // Until its cells come (or when there are too many to ask for), the window of the pooled raster.
    if (!rgba) {
      const [sy, sx] = [stage.raster_rows / stage.rows, stage.raster_cols / stage.cols];
      v.crop = [w.c0 * sx, w.r0 * sy, Math.max(1, w.cols * sx), Math.max(1, w.rows * sy)];
    }
  } else {
    v.cells = { ...full, values, rgba: stage.raster_cols === stage.cols ? stage.rgba : null };
  }
  // The raster: one pixel per cell (of the window), or per block of cells when the stage is larger than RASTER_SIDE.
  const [pw, ph, px] = zoomed && v.cells.rgba ? [w.cols, w.rows, v.cells.rgba] : [stage.raster_cols, stage.raster_rows, stage.rgba];
  v.off.width = pw;
  v.off.height = ph;
  v.off.getContext('2d').putImageData(new ImageData(px, pw, ph), 0, 0);
  blit(v, true);
  const c = v.canvas;
  Object.assign(c.dataset, { ...r, rows: w.rows, cols: w.cols, r0: w.r0, c0: w.c0 });
  c.setAttribute('aria-label', `${stage.title}: ${stage.formula}, ${stage.rows} × ${stage.cols}${zoomed ? `, zoomed to rows ${w.r0}–${w.r0 + w.rows - 1}, columns ${w.c0}–${w.c0 + w.cols - 1}` : ''}`);
}

/** What draw_frame gets for a stage sent without its values (its spec's range colours the colorbar). */
const NO_VALUES = new Float32Array(0);

/** The smallest cell, in canvas pixels, that gets its value written in it (crates/relattn/src/render/figure.rs VALUE_CELL, for exports). */
const VALUE_CELL = { w: 26, h: 14 };

/** The frame (restored, unless `framed`: the canvas shows it as drawn), then the cells scaled into its plot area (no
 *  smoothing: one block per cell), with their values written in them when the cells are large enough to read (as in
 *  the PNG and SVG exports). */
export function blit(v, framed = false) {
  const { x0, x1, y0, y1 } = v.rect;
  if (v.frame && !framed) {
    v.ctx.save();
    v.ctx.globalCompositeOperation = 'copy'; // every pixel the frame's, transparent ones too
    v.ctx.drawImage(v.frame, 0, 0);
    v.ctx.restore();
  }
  // Enlarged: one sharp block per cell; shrunk: smoothed, so no row or column of the raster is dropped.
  const [sw, sh] = v.crop ? [v.crop[2], v.crop[3]] : [v.off.width, v.off.height];
  v.ctx.imageSmoothingEnabled = sw > x1 - x0 || sh > y1 - y0;
  if (v.crop) v.ctx.drawImage(v.off, ...v.crop, x0, y0, x1 - x0, y1 - y0);
  else v.ctx.drawImage(v.off, x0, y0, x1 - x0, y1 - y0);
  const { rows, cols, values, rgba } = v.cells;
  const cw = (x1 - x0) / cols;
  const ch = (y1 - y0) / rows;
  if (v.win) drawMinimap(v);
  delete v.canvas.dataset.valuePx; // set below when the values are written
  if (cw < VALUE_CELL.w || ch < VALUE_CELL.h || !rgba) return;
  const ctx = v.ctx;
  const texts = core.cellTexts(values);
  // As large as the cell takes its longest value (about 0.6 em a character), up to 13 px (20 on a slide).
  const longest = Math.max(1, ...texts.map((t) => t.length));
  const px = Math.min(v.minValuePx ? Math.round((v.minValuePx * 5) / 3) : 13, Math.floor(ch * 0.45), Math.floor((cw * 0.85) / (0.6 * longest + 0.2)));
  // A view that must stay legible (the presentation's) writes no value smaller than its minimum.
  if (v.minValuePx && px < v.minValuePx) return;
  v.canvas.dataset.valuePx = String(px);
  ctx.font = `${px}px sans-serif`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const k = (i * cols + j) * 4;
      // Dark text on light cells, light text on dark ones (Rec. 709 luma of the cell's colour).
      const luma = 0.2126 * rgba[k] + 0.7152 * rgba[k + 1] + 0.0722 * rgba[k + 2];
      ctx.fillStyle = luma > 140 ? '#111' : '#f4f4f4';
      ctx.fillText(texts[i * cols + j], x0 + (j + 0.5) * cw, y0 + (i + 0.5) * ch);
    }
  }
}

/** The minimap of a zoomed view: the whole stage, small, in the plot's top-right corner, and the window on it. */
function drawMinimap(v) {
  const { x1, y0 } = v.rect;
  const { rows, cols } = v.stage;
  const side = 72;
  const [mw, mh] = rows > cols ? [Math.max(8, (side * cols) / rows), side] : [side, Math.max(8, (side * rows) / cols)];
  const [mx, my] = [x1 - mw - 4, y0 + 4];
  const ctx = v.ctx;
  ctx.imageSmoothingEnabled = true;
  ctx.fillStyle = '#fff';
  ctx.fillRect(mx - 2, my - 2, mw + 4, mh + 4);
  ctx.drawImage(v.mini, mx, my, mw, mh);
  const w = v.win;
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = '#ff00aa';
  ctx.strokeRect(mx + (w.c0 / cols) * mw, my + (w.r0 / rows) * mh, Math.max(2, (w.cols / cols) * mw), Math.max(2, (w.rows / rows) * mh));
}

/** The cell { i, j } of the stage under a pointer event (through the zoom window), or null outside the plot area. */
export function cellAt(v, e) {
  return core.cellAt(v.canvas, v.rect, windowOf(v), e);
}

/** Shades runs of cells [i, c0, c1] of a view where they lie in its window (shared/figure-core.js shade). */
export function shade(v, runs) {
  core.shade(v.ctx, v.rect, windowOf(v), runs);
}

/** Outlines cells (i, j) … (i + h − 1, j + w − 1) of a view (shared/figure-core.js outline). */
export function outline(v, i, j, w = 1, h = 1) {
  core.outline(v.ctx, v.rect, windowOf(v), i, j, w, h);
}
