// The figure core the page and the notebook widget share (python/relattn/widget.js bundles it: `make widget`):
// no state, no worker, no import, nothing but the canvas, context and values it is given. A figure's geometry is
// its plot area `rect` { x0, x1, y0, y1 } in canvas pixels (draw_frame's answer: crates/relattn-wasm/src/figure.rs)
// and the window of its stage shown `win` { r0, c0, rows, cols } (the whole stage, or a zoomed part of it). The
// charts the page draws itself (the piano roll, Model mode's and the schemes' charts) size their canvas here.

/** The size of a figure's canvas (and of an exported figure, before the PNG's 2×). */
export const FRAME = { w: 470, h: 430 };

/** A number as every tooltip, pinned line and screen reader says it: three significant digits, integers as
 *  they are, −∞ for masked logits. */
export function fmt(v) {
  if (v === -Infinity) return '−∞';
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  if (a >= 0.01 && a < 1000) return v.toFixed(Math.max(0, 2 - Math.floor(Math.log10(a))));
  return v.toExponential(2).replace('e+', 'e'); // 1.23e4, as the Rust figures (render::figure::short) write it
}

/**
 * The texts of a figure's cell values (render::figure::cell_texts writes the exports' the same way): all with one
 * number of decimals, three significant digits of the largest |value|, so that one small value does not need an
 * exponent where the others do not (a −9.72e-3 among values near 1 made every text too long for its cell, and a
 * slide wrote none); exactly 0 as "0", integers as they are, and fmt for each value when the largest is below
 * 0.001 or from 10⁶.
 * @param {ArrayLike<number>} values
 */
export function cellTexts(values) {
  let largest = 0;
  let integers = true;
  for (const v of Array.from(values)) {
    if (!Number.isFinite(v)) continue;
    largest = Math.max(largest, Math.abs(v));
    integers = integers && Number.isInteger(v);
  }
  let decimals = null;
  if (largest < 1e6 && integers) decimals = 0;
  else if (largest >= 1e-3 && largest < 1e6) decimals = Math.max(0, 2 - Math.floor(Math.log10(largest)));
  const text = (v) => {
    if (decimals === null || !Number.isFinite(v)) return fmt(v);
    if (v === 0) return '0';
    const t = v.toFixed(decimals);
    return /^-[0.]+$/.test(t) ? t.slice(1) : t; // a value that rounds to zero has no sign
  };
  return Array.from(values, text);
}

/** A cell's line of a tooltip: where it is ((i, j) for a pair, else by its axes) and its value ('…' while it
 *  is asked for: `value` undefined). */
export function cellText(stage, i, j, value) {
  const where = stage.pairs ? `(i, j) = (${i}, ${j})` : `${stage.y_axis} ${i}, ${stage.x_axis} ${j}`;
  return `${where}   value ${value === undefined ? '…' : fmt(value)}`;
}

/**
 * The crates/relattn-wasm/src/figure.rs FigureSpec of a stage's figure: its title, `subtitle`, axes, colour scale and shape;
 * `tokens` (or null) label the positions where there are as many as the axis has.
 * @param {{ title: string, x_axis: string, y_axis: string, scale: string, pairs: boolean, rows_are_queries: boolean, rows: number, cols: number, x_labels?: string[], y_labels?: string[] }} stage
 */
export function figureSpec(stage, subtitle, tokens) {
  // A picture's own labels (distances, heads, layouts), else the tokens where they label the axis.
  const own = (labels) => (labels && labels.length ? labels : null);
  const x_labels = own(stage.x_labels) || (tokens && stage.pairs && stage.cols === tokens.length ? tokens : []);
  const y_labels = own(stage.y_labels) || (tokens && stage.rows_are_queries && stage.rows === tokens.length ? tokens : []);
  return { title: stage.title, subtitle, x_axis: stage.x_axis, y_axis: stage.y_axis, scale: stage.scale, x_labels, y_labels, rows: stage.rows, cols: stage.cols };
}

/** The cell { i, j } of the stage under a pointer event on `canvas` (through the window), or null outside the
 *  plot area. */
export function cellAt(canvas, rect, win, e) {
  const b = canvas.getBoundingClientRect();
  const x = ((e.clientX - b.left) * canvas.width) / b.width;
  const y = ((e.clientY - b.top) * canvas.height) / b.height;
  const { x0, x1, y0, y1 } = rect;
  if (x < x0 || x >= x1 || y < y0 || y >= y1) return null;
  return { i: win.r0 + Math.floor(((y - y0) / (y1 - y0)) * win.rows), j: win.c0 + Math.floor(((x - x0) / (x1 - x0)) * win.cols) };
}

/** Where cell (i, j) of the stage is drawn: { x, y, cw, ch } in canvas pixels, or null outside the window. */
export function cellBox(rect, win, i, j) {
  const { x0, x1, y0, y1 } = rect;
  if (i < win.r0 || j < win.c0 || i >= win.r0 + win.rows || j >= win.c0 + win.cols) return null;
  const cw = (x1 - x0) / win.cols;
  const ch = (y1 - y0) / win.rows;
  return { x: x0 + (j - win.c0) * cw, y: y0 + (i - win.r0) * ch, cw, ch };
}

/**
 * Shades runs of cells, [i, c0, c1] for cells (i, c0) … (i, c1 − 1), where they lie in the window: the pairs
 * that read one table row. One path, filled once: runs that share a pixel (cells under a pixel, n past the
 * raster's side) are not darkened twice.
 */
export function shade(ctx, rect, win, runs) {
  const { x0, x1, y0, y1 } = rect;
  const cw = (x1 - x0) / win.cols;
  const ch = (y1 - y0) / win.rows;
  ctx.beginPath();
  for (const [i, c0, c1] of runs) {
    const a = Math.max(c0, win.c0);
    const b = Math.min(c1, win.c0 + win.cols);
    if (i >= win.r0 && i < win.r0 + win.rows && a < b) ctx.rect(x0 + (a - win.c0) * cw, y0 + (i - win.r0) * ch, Math.max(1, (b - a) * cw), Math.max(1, ch));
  }
  ctx.fillStyle = 'rgba(255, 0, 170, 0.5)'; // magenta: in neither colormap
  ctx.fill();
}

/** The runs [i, lo, hi] of a table row's readers as the wasm and Python give them: one range of keys per
 *  query, [lo_0, hi_0, lo_1, hi_1, …] (src/positions Scheme::reader_runs); empty ranges left out. */
export function readerRuns(ranges) {
  const runs = [];
  for (let i = 0; 2 * i < ranges.length; i++) if (ranges[2 * i] < ranges[2 * i + 1]) runs.push([i, ranges[2 * i], ranges[2 * i + 1]]);
  return runs;
}

/** Outlines cells (i, j) … (i + h − 1, j + w − 1) in black and yellow (visible on every colormap). */
export function outline(ctx, rect, win, i, j, w = 1, h = 1) {
  const b = cellBox(rect, win, i, j);
  if (!b) return;
  const { x, y, cw, ch } = b;
  const rw = Math.max(3, cw * w);
  const rh = Math.max(3, ch * h);
  ctx.lineWidth = 3;
  ctx.strokeStyle = '#000';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = '#ffd400';
  ctx.strokeRect(x - 1, y - 1, rw + 2, rh + 2);
}

/** A figure's SVG (draw_svg's) with its cells, when it drew none (`painted` false: past the vector limit), as
 *  the raster `href` (a PNG data URL, one pixel per cell) drawn pixelated over the plot `area`. */
export function withCells(svg, painted, area, href) {
  if (painted) return svg;
  const { x0, x1, y0, y1 } = area;
  const img = `<image x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${href}"/>`;
  return svg.replace(/<\/svg>\s*$/, `${img}\n</svg>\n`);
}

/** Saves `blob` as a download named `name`. */
export function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

/**
 * Sizes a chart's canvas and clears it to white, for drawing in CSS pixels: `w` × `h` (`size.width` × `size.height`
 * when given, else the canvas's CSS box, else `w0` × `h0`) at pixel ratio `size.dpr` (else the screen's), the
 * context scaled to it. `keep`: a canvas already at that size is not reset, only painted over (the piano roll,
 * drawn again every frame while it plays). Returns { ctx, w, h }.
 * @param {HTMLCanvasElement} canvas
 * @param {{ width?: number, height?: number, dpr?: number } | null} [size]
 */
export function sizeCanvas(canvas, w0, h0, size = null, keep = false) {
  const dpr = (size && size.dpr) || window.devicePixelRatio || 1;
  const w = (size && size.width) || canvas.clientWidth || w0;
  const h = (size && size.height) || canvas.clientHeight || h0;
  if (!keep || canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, w, h);
  return { ctx, w, h };
}
