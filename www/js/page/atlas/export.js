// Owns the head atlas's exports: the grid as SVG and as a 2× PNG, as a 16:9 slide (PNG, 1920 × 1080), and the
// whole atlas as one self-contained HTML page (inline SVG, data and tooltip script; the command line's
// `relattn atlas render --out x.html` writes the same), all drawn by the page's wasm from the atlas shown.
import { $ } from '../dom.js';
import { state } from '../state.js';
import { atlasShown } from './grid.js';
import { raster } from '../export.js';
import { download } from '../../shared/figure-core.js';
import { drawFailed } from '../ui-wasm.js';

/** The grid's width in the files (its height follows from the layers). */
const WIDTH = 1600;

export function initAtlasExports() {
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('#atlas [data-export]'))) b.addEventListener('click', () => exportAtlas(b.dataset.export));
}

function baseName(file, metric) {
  return `${file.name.replace(/\.atlas\.npz$|\.[^.]*$/, '').replace(/[^\w.-]+/g, '_')}-${metric}`;
}

/** Downloads the atlas shown as 'svg', 'png' (2×), 'slide' (16:9 PNG) or 'html'. */
async function exportAtlas(kind) {
  try {
    const shown = kind === 'slide' ? atlasShown(1600, 900, 1.25) : atlasShown(WIDTH);
    if (!shown) return;
    const { file, view, spec } = shown;
    const name = baseName(file, spec.metric);
    if (kind === 'html') { download(new Blob([state.ui.atlas_html(view, spec)], { type: 'text/html' }), `${name}.html`); return; }
    const svg = state.ui.atlas_svg(view, spec);
    if (kind === 'svg') { download(new Blob([svg], { type: 'image/svg+xml' }), `${name}.svg`); return; }
    /** @type {[number, number]} */
    const size = [spec.width, state.ui.atlas_height(view, spec)];
    const c = await raster(svg, size, kind === 'slide' ? [1920, 1080] : [2 * size[0], 2 * size[1]]);
    const blob = await new Promise((ok) => c.toBlob(ok, 'image/png'));
    download(blob, kind === 'slide' ? `${name}-slide.png` : `${name}@2x.png`);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) drawFailed(e);
    else $('atlas-message').textContent = `export failed: ${e.message || e}`;
  }
}
