// Owns Model mode's exports: its piano roll with the arcs (the canvas redrawn at 2×) as a PNG, or an SVG with it
// embedded, and a panel (every head, attention by distance, the six models, NLL) as an image of its canvases
// and their text where they stand; titled and named from the model and the window shown.
import { wrapLines } from '../dom.js';
import { state } from '../state.js';
import { download } from '../../shared/figure-core.js';
import { modelLabel, shownWhere, windowName, windowSlug } from './form.js';
import { nllShown } from './all-models.js';

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
  const title = `${shownWhere(s)}: what note ${state.model.position} attends to, layer ${s.layer}, head ${s.head}`;
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
    'm-panel-tiles': `${modelLabel(s.model)} model, ${tokens}; chosen: layer ${s.layer}, head ${s.head}`,
    'm-panel-dist': `${modelLabel(s.model)} model, ${tokens}, layer ${s.layer}, every head`,
    'm-panel-models': `the six models, ${tokens}, layer ${s.layer}`,
    'm-panel-nll': nll ? `the six models, BWV ${nll.piece}, tokens 0…${nll.length - 1} from its start` : 'not computed',
  }[panel.id] || `${modelLabel(s.model)} model, ${tokens}, layer ${s.layer}, head ${s.head}`;
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
