// relattn's notebook widget (anywidget): the stages of one (batch, head) drawn as the relattn page draws them.
// The frame (title, formula, axes, colorbar) by the page's wasm (draw_frame, plotters), the cells coloured by
// it over the page's colour range (colour); a tooltip with the cell's exact value; a click on a (query, key)
// view pins that pair in every such view (the model's `pinned`); a click on a row of a relative table (w^K,
// E_r, T5's bias per bucket) shades every pair that reads it, from the index stage (`rel_index`, shown or
// not: it comes with the values); a PNG and an SVG of any figure. The wasm and its glue come from the Python
// package as a buffer and a string: nothing is fetched.

let loading = null;

/** The page's wasm module, loaded once a page from the widget's own copy. */
function load(model) {
  if (!loading) {
    loading = (async () => {
      const url = URL.createObjectURL(new Blob([model.get('_glue')], { type: 'text/javascript' }));
      const ui = await import(/* webpackIgnore: true */ url);
      const dv = model.get('_wasm');
      await ui.default({ module_or_path: new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength) });
      return ui;
    })();
  }
  return loading;
}

const SIZE = { w: 470, h: 430 };

/** The cell under a pointer event, or null. */
function cellAt(f, e) {
  const r = f.canvas.getBoundingClientRect();
  const x = ((e.clientX - r.left) * f.canvas.width) / r.width;
  const y = ((e.clientY - r.top) * f.canvas.height) / r.height;
  const { x0, x1, y0, y1 } = f.rect;
  if (x < x0 || x >= x1 || y < y0 || y >= y1) return null;
  return { i: Math.floor(((y - y0) / (y1 - y0)) * f.rows), j: Math.floor(((x - x0) / (x1 - x0)) * f.cols) };
}

/** Redraws a figure's frame and cells, the pairs reading a pinned table row (`readers`: a row × col mask of
 *  the index stage's shape, or null), then its pinned pair's outline. */
function paint(f, pinned, readers) {
  f.ctx.putImageData(f.frame, 0, 0);
  const { x0, x1, y0, y1 } = f.rect;
  f.ctx.imageSmoothingEnabled = f.cols > x1 - x0 || f.rows > y1 - y0;
  f.ctx.drawImage(f.cells, x0, y0, x1 - x0, y1 - y0);
  if (readers && f.meta.pairs && readers.rows === f.rows && readers.cols === f.cols) {
    const [cw, ch] = [(x1 - x0) / f.cols, (y1 - y0) / f.rows];
    f.ctx.fillStyle = 'rgba(255, 0, 255, 0.35)';
    for (let i = 0; i < f.rows; i++) {
      for (let j = 0; j < f.cols; j++) if (readers.mask[i * f.cols + j]) f.ctx.fillRect(x0 + j * cw, y0 + i * ch, cw, ch);
    }
  }
  if (pinned.length === 2 && f.meta.pairs && pinned[0] < f.rows && pinned[1] < f.cols) {
    const [cw, ch] = [(x1 - x0) / f.cols, (y1 - y0) / f.rows];
    f.ctx.strokeStyle = '#ff00ff';
    f.ctx.lineWidth = 2;
    f.ctx.strokeRect(x0 + pinned[1] * cw, y0 + pinned[0] * ch, Math.max(2, cw), Math.max(2, ch));
  }
}

/** Saves `blob` as a download named `name`. */
function save(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function fmt(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : String(Number(v.toPrecision(5)));
}

async function render({ model, el }) {
  const ui = await load(model);
  const t0 = performance.now();
  const stages = JSON.parse(model.get('stages'));
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
  // The index stage (which table row each pair reads): reverse linking from a table row.
  const index = stages.find((s) => s.meta.name === 'rel_index');
  const indexValues = index && all.subarray(index.offset, index.offset + index.rows * index.cols);
  let readers = null;
  const figs = stages.map((s) => {
    const { meta, rows, cols, lo, hi, offset } = s;
    const values = all.subarray(offset, offset + rows * cols);
    const box = document.createElement('figure');
    box.style.margin = '0';
    box.dataset.stage = meta.name;
    const canvas = document.createElement('canvas');
    canvas.width = SIZE.w;
    canvas.height = SIZE.h;
    canvas.style.width = '100%';
    const toks = tokens.length ? tokens : null;
    const spec = {
      title: meta.title, subtitle: `${meta.formula}   [${rows} × ${cols}]`, x_axis: meta.x_axis, y_axis: meta.y_axis, scale: meta.scale,
      x_labels: toks && meta.pairs && cols === toks.length ? toks : [], y_labels: toks && meta.rows_are_queries && rows === toks.length ? toks : [],
      rows, cols, range: [lo, hi],
    };
    const rect = ui.draw_frame(canvas, spec, values);
    const ctx = canvas.getContext('2d');
    const cells = document.createElement('canvas');
    cells.width = cols;
    cells.height = rows;
    const rgba = new Uint8ClampedArray(ui.colour({ rows, cols, scale: meta.scale, range: [lo, hi] }, values));
    cells.getContext('2d').putImageData(new ImageData(rgba, cols, rows), 0, 0);
    const f = { meta, rows, cols, values, canvas, ctx, rect, cells, frame: ctx.getImageData(0, 0, canvas.width, canvas.height) };
    Object.assign(canvas.dataset, { x0: rect.x0, x1: rect.x1, y0: rect.y0, y1: rect.y1, rows, cols });
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `${meta.title}: ${meta.formula}, ${rows} × ${cols}`);
    paint(f, model.get('pinned'), readers);
    canvas.addEventListener('mousemove', (e) => {
      const c = cellAt(f, e);
      if (!c) { tip.hidden = true; return; }
      const v = values[c.i * cols + c.j];
      const where = meta.pairs ? `(i, j) = (${c.i}, ${c.j})${toks && c.j < toks.length ? `  “${toks[c.i]}” → “${toks[c.j]}”` : ''}` : `${meta.y_axis} ${c.i}, ${meta.x_axis} ${c.j}`;
      tip.textContent = `${meta.title}\n${where}   value ${fmt(v)}`;
      Object.assign(tip.dataset, { stage: meta.name, i: c.i, j: c.j, value: String(v) });
      tip.style.left = `${e.clientX + 14}px`;
      tip.style.top = `${e.clientY + 14}px`;
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    canvas.addEventListener('click', (e) => {
      const c = cellAt(f, e);
      if (!c) return;
      if (meta.pairs) {
        model.set('pinned', [c.i, c.j]);
        model.save_changes();
      } else if (meta.name === 'rel_k' && indexValues) {
        // Table row c.i: the pairs whose index is that row.
        const mask = new Uint8Array(indexValues.length);
        let count = 0;
        indexValues.forEach((r, k) => { if (r === c.i) { mask[k] = 1; count += 1; } });
        readers = { row: c.i, count, rows: index.rows, cols: index.cols, mask };
        el.dataset.readers = `${c.i}:${count}`;
        repaint();
      }
    });
    const svg = document.createElement('button');
    svg.textContent = 'SVG';
    svg.title = `${meta.title} as an SVG (vectors; cells as a raster past the vector limit)`;
    svg.addEventListener('click', () => {
      const r = ui.draw_svg(spec, values, SIZE.w, SIZE.h);
      let text = r.svg;
      if (!r.painted) {
        const { x0, x1, y0, y1 } = r.area;
        text = text.replace(/<\/svg>\s*$/, `<image x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${cells.toDataURL('image/png')}"/>\n</svg>\n`);
      }
      save(new Blob([text], { type: 'image/svg+xml' }), `relattn-${meta.name}.svg`);
    });
    const png = document.createElement('button');
    png.textContent = 'PNG';
    png.title = `${meta.title} as a PNG`;
    png.addEventListener('click', () => canvas.toBlob((blob) => save(blob, `relattn-${meta.name}.png`), 'image/png'));
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
