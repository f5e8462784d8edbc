// Owns exports: a figure as SVG (the wasm SVG backend) or as a 2× PNG (that SVG rasterised), the whole
// trace as the CLI's .npz (asked of the worker), and Model mode's piano roll with its arcs as a PNG (the
// canvas redrawn at 2×); file names from the preset, the settings, the file in use or the model's window.
import { wrapLines } from './dom.js';
import { state } from './state.js';
import { showError } from './controls.js';
import { FRAME, figureSpec, chartSpec } from './figures.js';
import { download, withCells } from '../shared/figure-core.js';
import { askExport } from './worker-client.js';
import { fileInUse } from './file.js';
import { windowName, windowSlug } from './chorales/form.js';
import { nllShown } from './chorales/compare.js';
import { drawFailed } from './ui-wasm.js';

/** Model mode's roll (with the arcs and the sampled notes) at twice its size on screen, titled with what it shows
 *  (model, piece, tokens, layer, head, note): a PNG with the title drawn above it, or an SVG with it as its
 *  <title>; `draw(canvas, size)` draws it. */
export function exportRoll(draw, kind = 'png') {
  const s = state.model.shown;
  if (!s) return;
  const on = document.getElementById('roll');
  const c = document.createElement('canvas');
  draw(c, { width: on.clientWidth, height: on.clientHeight, dpr: 2 });
  const w = s.window;
  const title = `${s.model} model, ${windowName(w)}, tokens ${w.start}…${w.start + w.length - 1}: what note ${state.model.position} attends to, layer ${s.layer}, head ${s.head}`;
  const name = `relattn-${s.model}-${windowSlug(w)}-t${w.start}-${w.length}-L${s.layer}H${s.head}-note${state.model.position}`;
  if (kind === 'svg') { download(rasterSVG(c, on.clientWidth, on.clientHeight, title), `${name}.svg`); return; }
  const top = 2 * 28;
  const t = document.createElement('canvas');
  t.width = c.width;
  t.height = c.height + top;
  const ctx = t.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, t.width, t.height);
  ctx.fillStyle = '#111';
  ctx.font = 'bold 28px sans-serif';
  ctx.fillText(title, 16, 38, t.width - 32);
  ctx.drawImage(c, 0, top);
  t.toBlob((blob) => download(blob, `${name}.png`), 'image/png');
}

/** An SVG of `width` × `height` with `title` and canvas `c` embedded as a PNG. */
function rasterSVG(c, width, height, title) {
  const esc = (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">\n<title>${esc(title)}</title>\n`
    + `<image x="0" y="0" width="${width}" height="${height}" href="${c.toDataURL('image/png')}"/>\n</svg>\n`;
  return new Blob([svg], { type: 'image/svg+xml' });
}

/**
 * A Model mode panel (every head, attention by distance, NLL) as an image: its title and its canvases where
 * they stand, at 2×. 'png' downloads that image; 'svg' an SVG with the title as text and the canvases as one
 * embedded raster (they are drawn on canvases, not as vectors).
 */
export function exportPanel(panel, kind) {
  const s = state.model.shown;
  if (!s) return;
  const box = panel.getBoundingClientRect();
  const w = s.window;
  // The panel's heading without its on-page hints ("(click a tile…)"), and what it was computed on.
  const heading = [...panel.querySelector('h2').childNodes].filter((n) => !(n.classList && n.classList.contains('range'))).map((n) => n.textContent).join('').trim();
  const tokens = `${windowName(w)}, tokens ${w.start}…${w.start + w.length - 1}${w.transpose ? ` (transposed ${w.transpose})` : ''}`;
  // What each panel shows: one model's layers and heads (the chosen one outlined), one layer's heads, the six
  // models on one layer, the six models' loss over the piece from its start.
  const nll = nllShown();
  const what = {
    'm-panel-tiles': `${s.model} model, ${tokens}; chosen: layer ${s.layer}, head ${s.head}`,
    'm-panel-dist': `${s.model} model, ${tokens}, layer ${s.layer}, every head`,
    'm-panel-models': `the six models, ${tokens}, layer ${s.layer}`,
    'm-panel-nll': nll ? `the six models, BWV ${nll.piece}, tokens 0…${nll.length - 1} from its start` : 'not computed',
  }[panel.id] || `${s.model} model, ${tokens}, layer ${s.layer}, head ${s.head}`;
  const title = `${heading} — ${what}`;
  const scale = 2;
  const top = 28;
  const c = document.createElement('canvas');
  c.width = Math.round(box.width * scale);
  c.height = Math.round((box.height + top) * scale);
  const ctx = c.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.scale(scale, scale);
  ctx.fillStyle = '#111';
  ctx.font = 'bold 14px sans-serif';
  ctx.fillText(title, 8, 18, box.width - 16);
  for (const cv of panel.querySelectorAll('canvas')) {
    const b = cv.getBoundingClientRect();
    if (b.width && b.height) ctx.drawImage(cv, b.left - box.left, b.top - box.top + top, b.width, b.height);
  }
  // The panel's own text that explains its canvases (tile captions and what each head does, the compare
  // view's rows, notes), each where it is on the page, wrapped to its width.
  ctx.font = '11px sans-serif';
  ctx.fillStyle = '#333';
  for (const el of panel.querySelectorAll('.tile span, .compare-row h3, .desc, .axis-note')) {
    const b = el.getBoundingClientRect();
    if (!b.width || !el.textContent.trim()) continue;
    wrapText(ctx, el.textContent.trim(), b.left - box.left, b.top - box.top + top + 11, b.width, 13, getComputedStyle(el).textAlign === 'center');
  }
  const name = `relattn-${s.model}-${windowSlug(w)}-t${w.start}-${w.length}-L${s.layer}-${panel.id.replace(/^m-panel-/, '')}`;
  if (kind === 'png') c.toBlob((blob) => download(blob, `${name}.png`), 'image/png');
  else download(rasterSVG(c, box.width, box.height + top, title), `${name}.svg`);
}

/** Draws `text` from (x, y) in lines of at most `width` px, `lineHeight` apart (centred within `width` when asked). */
function wrapText(ctx, text, x, y, width, lineHeight, centred) {
  ctx.textAlign = centred ? 'center' : 'left';
  wrapLines(ctx, text, width).forEach((line, k) => ctx.fillText(line, centred ? x + width / 2 : x, y + k * lineHeight, width));
  ctx.textAlign = 'left';
}

function baseName() {
  const { preset, options: s } = state.current.info;
  const file = fileInUse();
  return file ? file.name.replace(/\.[^.]*$/, '').replace(/[^\w.-]+/g, '_') : preset || `${s.method}-n${s.n}-seed${s.seed}`;
}

/** A stage's export standing alone: its title names the scheme (and a captured layer's model and layer); its
 *  subtitle holds the formula, the shape, the head and batch element, the scheme's options and the pin. */
function standalone(stage, cur) {
  const spec = { ...figureSpec(stage, cur), range: [stage.lo, stage.hi] };
  const scheme = cur.info.capture_title || cur.info.options.method;
  const pin = state.pinned && stage.pairs ? ` · pinned (i, j) = (${state.pinned.i}, ${state.pinned.j})` : '';
  const row = state.pinnedRow != null ? ` · pinned table row ${state.pinnedRow}` : '';
  return { ...spec, title: `${stage.title} — ${scheme}`, subtitle: `${spec.subtitle} · ${cur.info.stated}${pin}${row}` };
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
    const title = `${stage.title} — ${cur.info.capture_title || cur.info.options.method}`;
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
async function raster(svg, [width, height], [cw, ch], [x, y] = [0, 0]) {
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
