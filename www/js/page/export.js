// Owns exports: a figure as SVG (the wasm SVG backend) or as a 2× PNG (that SVG rasterised), as a 16:9 slide,
// and the whole trace as the CLI's .npz (asked of the worker); file names from the preset, the settings or the
// file in use. (Model mode's roll and panels: model/export.js.)
import { state } from './state.js';
import { showError } from './controls.js';
import { FRAME, figureSpec, chartSpec } from './figures.js';
import { download, withCells } from '../shared/figure-core.js';
import { askExport } from './worker-client.js';
import { fileInUse } from './file.js';
import { drawFailed } from './ui-wasm.js';

function baseName() {
  const { preset, options: s } = state.current.info;
  const file = fileInUse();
  return file ? file.name.replace(/\.[^.]*$/, '').replace(/[^\w.-]+/g, '_') : preset || `${s.method}-n${s.n}-seed${s.seed}`;
}

/** A stage's export standing alone: its title names the scheme (and a captured layer's model and layer); its
 *  subtitle holds the formula, the shape, the head and batch element, the scheme's options and the pin. */
function standalone(stage, cur) {
  const spec = { ...figureSpec(stage, cur), range: [stage.lo, stage.hi] };
  const pin = state.pinned && stage.pairs ? ` · pinned (i, j) = (${state.pinned.i}, ${state.pinned.j})` : '';
  const row = state.pinnedRow != null ? ` · pinned table row ${state.pinnedRow}` : '';
  // A picture's subtitle states the scheme's options already.
  const stated = 'chart' in stage ? '' : ` · ${cur.info.stated}`;
  return { ...spec, title: `${stage.title} — ${cur.info.heading}`, subtitle: `${spec.subtitle}${stated}${pin}${row}` };
}

/** The pinned pair's cell outlined in an SVG figure whose plot is `area` (black and yellow, as on the page). */
function withPin(svg, stage, area) {
  const p = state.pinned;
  if (!p || !stage.pairs || p.i >= stage.rows || p.j >= stage.cols) return svg;
  const [cw, ch] = [(area.x1 - area.x0) / stage.cols, (area.y1 - area.y0) / stage.rows];
  const [x, y] = [area.x0 + p.j * cw - 1, area.y0 + p.i * ch - 1];
  const rect = (stroke, width) => `<rect x="${x}" y="${y}" width="${cw + 2}" height="${ch + 2}" fill="none" stroke="${stroke}" stroke-width="${width}"/>`;
  return svg.replace(/<\/svg>\s*$/, `${rect('#000', 3)}\n${rect('#ffd400', 1.5)}\n</svg>\n`);
}

// The figure as SVG text of width × height from the wasm SVG backend (on the page: plotters measures text
// with the DOM), standing alone (title, options, pin); large matrices get their cells as an embedded raster
// (one pixel per cell, drawn pixelated). Returns { svg, area } (area: the plot, null for curves).
function figureSVG(name, width = FRAME.w, height = FRAME.h) {
  const cur = state.current;
  const stage = cur.byName[name];
  if (stage.chart) {
    const spec = chartSpec(stage, cur);
    const title = `${stage.title} — ${cur.info.heading}`;
    return { svg: state.ui.chart_svg({ ...spec, title }, width, height), area: null };
  }
  // A stage sent without its values (past VALUES_CELLS) is too large to paint as vectors anyway: its raster goes in.
  const r = state.ui.draw_svg(standalone(stage, cur), stage.values || new Float32Array(0), width, height);
  let svg = r.svg;
  if (!r.painted) {
    const c = document.createElement('canvas');
    c.width = stage.raster_cols; c.height = stage.raster_rows;
    c.getContext('2d').putImageData(new ImageData(stage.rgba, stage.raster_cols, stage.raster_rows), 0, 0);
    svg = withCells(svg, false, r.area, c.toDataURL('image/png'));
  }
  return { svg: withPin(svg, stage, r.area), area: r.area };
}

/** The SVG `svg` (width × height) rasterised into a canvas of cw × ch at (x, y), white around it. */
export async function raster(svg, [width, height], [cw, ch], [x, y] = [0, 0]) {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  const img = new Image();
  img.src = url;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = cw; c.height = ch;
  const ctx = c.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, cw, ch);
  ctx.imageSmoothingEnabled = false;
  const k = Math.min(cw / width, ch / height);
  ctx.drawImage(img, x, y, width * k, height * k);
  URL.revokeObjectURL(url);
  return c;
}

/** The size of a 16:9 slide's drawing (rasterised at 2×: 1920 × 1080). */
const SLIDE = { w: 960, h: 540 };

/** Downloads stage `name` as 'svg', 'png' (2×) or 'slide' (a 16:9 PNG, 1920 × 1080, its plot keeping the stage's shape). */
export async function exportFigure(name, kind) {
  try {
    const file = `${baseName()}-${name}`;
    if (kind === 'slide') {
      // Drawn once on the whole slide to learn the frame's margins, then narrowed so that a square stage's
      // plot stays square (its ratio held within 1:4 and 4:1), centred on the slide.
      const stage = state.current.byName[name];
      let { svg, area } = figureSVG(name, SLIDE.w, SLIDE.h);
      let w = SLIDE.w;
      if (area) {
        const ratio = Math.min(4, Math.max(0.25, stage.cols / stage.rows));
        const [mx, my] = [SLIDE.w - (area.x1 - area.x0), SLIDE.h - (area.y1 - area.y0)];
        w = Math.min(SLIDE.w, Math.round((SLIDE.h - my) * ratio + mx));
        if (w < SLIDE.w) ({ svg } = figureSVG(name, w, SLIDE.h));
      }
      const c = await raster(svg, [w, SLIDE.h], [2 * SLIDE.w, 2 * SLIDE.h], [SLIDE.w - w, 0]);
      const blob = await new Promise((ok) => c.toBlob(ok, 'image/png'));
      download(blob, `${file}-slide.png`);
      return;
    }
    const { svg } = figureSVG(name);
    if (kind === 'svg') { download(new Blob([svg], { type: 'image/svg+xml' }), `${file}.svg`); return; }
    // PNG at 2×: the vector figure rasterised at twice its size (sharp text on HiDPI screens).
    const c = await raster(svg, [FRAME.w, FRAME.h], [FRAME.w * 2, FRAME.h * 2]);
    const blob = await new Promise((ok) => c.toBlob(ok, 'image/png'));
    download(blob, `${file}@2x.png`);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) drawFailed(e);
    else showError('general', `export failed: ${e.message || e}`);
  }
}

/** Downloads the whole trace of the session shown as the CLI's .npz. */
export async function exportNpz() {
  try {
    const bytes = await askExport();
    download(new Blob([bytes], { type: 'application/octet-stream' }), `${baseName()}-trace.npz`);
  } catch (e) {
    showError('general', `export failed: ${e.message || e}`);
  }
}
