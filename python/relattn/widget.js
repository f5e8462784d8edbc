// relattn's notebook widget (anywidget): the stages of one (batch, head) drawn as the relattn page draws them,
// with the page's own figure core (www/js/shared/figure-core.js: cell geometry, outlines and shading, number
// format, figure spec, downloads), which `make widget` bundles into python/relattn/static/widget.js. The frame
// (title, formula, axes, colorbar) by the page's wasm (draw_frame, plotters), the cells coloured by it over the
// page's colour range (colour); a tooltip with the cell's exact value; a click on a (query, key) view pins that
// pair in every such view (the model's `pinned`); a click on a row of a relative table (w^K, E_r, T5's bias per
// bucket) shades every pair that reads it (its readers, from Rust: src/positions Scheme::reader_runs); a PNG
// and an SVG of any figure. The figures are src/protocol's NotebookFigure; the wasm and its glue come from the
// Python package, sent once a page on request (load): nothing is fetched, and nothing of them is saved.
import { FRAME, cellAt, cellText, download, figureSpec, outline, readerRuns, shade, withCells } from '../../www/js/shared/figure-core.js';

let loading = null;

/** The page's wasm module, loaded once a page: the first widget asks its kernel for the wasm and its glue (a
 *  custom message, answered with the bytes as a buffer), so neither is kept in any widget's state nor saved with
 *  the notebook. */
function load(model) {
  if (!loading) {
    loading = (async () => {
      const reply = new Promise((resolve) => {
        const got = (msg, buffers) => {
          if (msg?.type !== 'wasm') return;
          model.off('msg:custom', got);
          resolve({ glue: msg.glue, wasm: buffers[0] });
        };
        model.on('msg:custom', got);
      });
      model.send({ type: 'wasm?' });
      const { glue, wasm } = await reply;
      const url = URL.createObjectURL(new Blob([glue], { type: 'text/javascript' }));
      const ui = await import(/* webpackIgnore: true */ url);
      const bytes = wasm instanceof DataView ? new Uint8Array(wasm.buffer, wasm.byteOffset, wasm.byteLength) : new Uint8Array(wasm);
      await ui.default({ module_or_path: bytes });
      return ui;
    })();
    loading.catch(() => { loading = null; });
  }
  return loading;
}

/** Redraws a figure's frame and cells, the pairs reading a pinned table row (`readers`: its runs, or null),
 *  then its pinned pair's outline. */
function paint(f, pinned, readers) {
  f.ctx.putImageData(f.frame, 0, 0);
  const { x0, x1, y0, y1 } = f.rect;
  f.ctx.imageSmoothingEnabled = f.cols > x1 - x0 || f.rows > y1 - y0;
  f.ctx.drawImage(f.cells, x0, y0, x1 - x0, y1 - y0);
  if (readers && f.meta.pairs) shade(f.ctx, f.rect, f.win, readers);
  if (pinned.length === 2 && f.meta.pairs && pinned[0] < f.rows && pinned[1] < f.cols) outline(f.ctx, f.rect, f.win, pinned[0], pinned[1]);
}

async function render({ model, el }) {
  const ui = await load(model);
  const t0 = performance.now();
  /** @type {import('../../www/js/types/protocol').NotebookFigure[]} */
  const figures = JSON.parse(model.get('stages'));
  const dv = model.get('values');
  const all = new Float32Array(dv.buffer.slice(dv.byteOffset, dv.byteOffset + dv.byteLength));
  const tokens = model.get('tokens');
  el.classList.add('relattn-widget');
  const grid = document.createElement('div');
  grid.style.cssText = 'display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:8px';
  const tip = document.createElement('div');
  tip.className = 'relattn-tip';
  tip.style.cssText = 'position:fixed;z-index:1000;background:#fffbe6;border:1px solid #999;padding:4px 6px;font:12px sans-serif;pointer-events:none;white-space:pre';
  tip.hidden = true;
  el.append(grid, tip);
  let readers = null;
  const figs = figures.map((fig) => {
    const { meta, cut: { rows, cols, lo, hi }, offset } = fig;
    const values = all.subarray(offset, offset + rows * cols);
    const box = document.createElement('figure');
    box.style.margin = '0';
    box.dataset.stage = meta.name;
    const canvas = document.createElement('canvas');
    canvas.width = FRAME.w;
    canvas.height = FRAME.h;
    canvas.style.width = '100%';
    const toks = tokens.length ? tokens : null;
    const spec = { ...figureSpec({ ...meta, title: fig.title, rows, cols }, `${fig.formula}   [${rows} × ${cols}]`, toks), range: [lo, hi] };
    const rect = ui.draw_frame(canvas, spec, values);
    const ctx = canvas.getContext('2d');
    const cells = document.createElement('canvas');
    cells.width = cols;
    cells.height = rows;
    const rgba = new Uint8ClampedArray(ui.colour({ rows, cols, scale: meta.scale, range: [lo, hi], masked_above: meta.masked_above, masked_window: meta.masked_window, masked_chunk: meta.masked_chunk }, values));
    cells.getContext('2d').putImageData(new ImageData(rgba, cols, rows), 0, 0);
    const win = { r0: 0, c0: 0, rows, cols };
    const f = { meta, rows, cols, values, canvas, ctx, rect, win, cells, frame: ctx.getImageData(0, 0, canvas.width, canvas.height) };
    Object.assign(canvas.dataset, { x0: rect.x0, x1: rect.x1, y0: rect.y0, y1: rect.y1, rows, cols });
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `${fig.title}: ${fig.formula}, ${rows} × ${cols}`);
    paint(f, model.get('pinned'), readers);
    canvas.addEventListener('mousemove', (e) => {
      const c = cellAt(canvas, rect, win, e);
      if (!c) { tip.hidden = true; return; }
      const v = values[c.i * cols + c.j];
      const said = cellText(meta, c.i, c.j, v);
      const tok = toks && meta.pairs && c.j < toks.length ? `\n“${toks[c.i]}” → “${toks[c.j]}”` : '';
      tip.textContent = `${fig.title}\n${said}${tok}`;
      Object.assign(tip.dataset, { stage: meta.name, i: c.i, j: c.j, value: String(v), text: said });
      tip.style.left = `${e.clientX + 14}px`;
      tip.style.top = `${e.clientY + 14}px`;
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    canvas.addEventListener('click', (e) => {
      const c = cellAt(canvas, rect, win, e);
      if (!c) return;
      if (meta.pairs) {
        model.set('pinned', [c.i, c.j]);
        model.save_changes();
      } else if (fig.readers.length > c.i) {
        // Table row c.i: the pairs that read it (its readers, from Rust).
        readers = readerRuns(fig.readers[c.i]);
        el.dataset.readers = `${c.i}:${readers.reduce((sum, [, a, b]) => sum + b - a, 0)}`;
        repaint();
      }
    });
    const svg = document.createElement('button');
    svg.textContent = 'SVG';
    svg.title = `${fig.title} as an SVG (vectors; cells as a raster past the vector limit)`;
    svg.addEventListener('click', () => {
      const r = ui.draw_svg(spec, values, FRAME.w, FRAME.h);
      download(new Blob([withCells(r.svg, r.painted, r.area, cells.toDataURL('image/png'))], { type: 'image/svg+xml' }), `relattn-${meta.name}.svg`);
    });
    const png = document.createElement('button');
    png.textContent = 'PNG';
    png.title = `${fig.title} as a PNG`;
    png.addEventListener('click', () => canvas.toBlob((blob) => download(blob, `relattn-${meta.name}.png`), 'image/png'));
    box.append(canvas, png, svg);
    grid.append(box);
    return f;
  });
  function repaint() {
    figs.forEach((f) => paint(f, model.get('pinned'), readers));
  }
  model.on('change:pinned', repaint);
  // How long the figures took to draw (the frame, the cells' colours, the blit), for the benchmark.
  el.dataset.drawMs = String(performance.now() - t0);
  el.dataset.ready = String(figs.length);
  return () => model.off('change:pinned', repaint);
}

export default { render };
