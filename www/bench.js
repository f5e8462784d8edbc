// The browser benchmark: median times of the wasm forward pass and of a 1024 × 1024 redraw.
// Query parameters: sizes=128,512 (n), reps=5. Run headless with bench/browser_bench.mjs.
import init, { Bench } from './pkg/relattn.js';

// The Rust `LayerOptions` (crates/relattn/src/options.rs) of a generated Shaw layer with a^V.
const options = (n, d_model, heads, clip) => ({ method: 'shaw', n, d_model, heads, clip, seed: 0, batch_size: 1, causal: false, relative_values: true, per_head_tables: false, relative_only: false });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function time(reps, fn) {
  fn(); // warm-up
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const start = performance.now();
    fn();
    ms.push(performance.now() - start);
  }
  return median(ms);
}

async function run() {
  const { memory } = await init();
  const params = new URLSearchParams(location.search);
  const sizes = (params.get('sizes') || '128,512').split(',').map(Number);
  const reps = Number(params.get('reps') || 5);
  const results = { forward: [], redraw: null };

  for (const n of sizes) {
    const bench = new Bench(options(n, 512, 8, 16));
    results.forward.push({ n, d_model: 512, heads: 8, clip: 16, ms_per_forward: time(reps, () => bench.forward()) });
    bench.free();
  }

  const side = 1024;
  const bench = new Bench(options(4, 16, 1, 2));
  const canvas = document.getElementById('target');
  const ctx = canvas.getContext('2d');
  const offscreen = new OffscreenCanvas(side, side);
  const octx = offscreen.getContext('2d');
  const redraw = () => {
    const ptr = bench.raster(side);
    const pixels = new Uint8ClampedArray(memory.buffer, ptr, side * side * 4);
    octx.putImageData(new ImageData(pixels, side, side), 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(offscreen, 0, 0, canvas.width, canvas.height);
    ctx.getImageData(0, 0, 1, 1); // wait for the draw to land
  };
  results.redraw = { side, ms: time(reps, redraw) };
  bench.free();

  document.getElementById('out').textContent = JSON.stringify(results, null, 2);
  window.benchResults = results;
}

run().catch((e) => {
  document.getElementById('out').textContent = `error: ${e.message || e}`;
  window.benchResults = { error: String(e.message || e) };
});
