// The page's time to its first stage and to all stages (#53 item 2), every scheme at n 1024–8192, with 1, 2 and
// all workers (the page's Workers control: a pool of helpers, each its own wasm instance), against native
// `relattn bench` (the fused forward) with the same threads; interleaved in one run, each side's best of --reps.
// Runs the page (www/index.html) in headless Debian Chromium (playwright-core, never a downloaded browser), CPU
// backend, d_model 512, 8 heads, k 16: every such layer is held on demand, so the page computes its forward pass,
// then the stages of head 0 (every cell), then draws them. A page per worker count is opened once (its helpers
// started by a small layer first); each measurement is a new request, from the request to the first figure drawn
// (body.dataset.firstStage) and to the last (body.dataset.ready), and the page's own "forward" timing (the layer's
// forward pass: scenario excluded, the helpers' messages included), which is what native `relattn bench` times.
// Prints a Markdown table and the JSON.
//   make wasm && cargo build --release -p relattn-cli && node bench/browser_bench.mjs [--sizes 1024,2048,4096,8192]
//     [--schemes shaw,music,rope,alibi,t5,absolute,deberta,bert_relative,transformer_xl] [--workers 1,2] [--reps 2]
// With --forward: www/bench.html instead, the wasm forward pass alone (Shaw with a^V) and a 1024 × 1024 redraw, one
// thread, as JSON (the earlier tables of docs/src/benchmarks.md): node bench/browser_bench.mjs --forward --sizes 512,1024
import { chromium } from 'playwright-core';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('sizes', '1024,2048,4096,8192').split(',').map(Number);
const schemes = arg('schemes', 'shaw,music,rope,alibi,t5,absolute,deberta,bert_relative,transformer_xl').split(',');
const all = cpus().length;
const workerCounts = [...new Set(arg('workers', `1,2,${all}`).split(',').map(Number))];
const reps = Number(arg('reps', '2'));
const cli = arg('cli', 'target/release/relattn');
const LAYER = { d_model: 512, heads: 8, clip: 16 };

/** Native `relattn bench`: the forward's median ms on `threads` threads. */
function native(method, n, threads) {
  const out = execFileSync(cli, ['bench', '--method', method, '--n', String(n), '--d-model', String(LAYER.d_model), '--heads', String(LAYER.heads),
    '--clip', String(LAYER.clip), '--max-position', String(n), '--threads', String(threads), '--reps', '1'], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()).ms_per_forward;
}

/** One request of the page `p` for `method` at `n`: { first, all } ms from the request to the first stage drawn and to the last. */
let seed = 0;
async function pageTimes(p, method, n) {
  seed += 1; // a new layer each time (the page reuses the layer held for the same settings)
  return p.evaluate(async ([method, n, layer, seed]) => {
    const { request } = await import('/js/page/worker-client.js');
    const set = (id, v) => { document.getElementById(id).value = String(v); };
    document.getElementById('preset').value = '';
    set('method', method); set('n', n); set('d_model', layer.d_model); set('heads', layer.heads); set('clip', layer.clip);
    set('head', 0); set('seed', seed);
    set('max_position', n); // BERT relative's table covers the sequence (the other schemes do not read it)
    const before = Number(document.body.dataset.ready || 0);
    const t0 = performance.now();
    let first = null;
    const watch = new MutationObserver(() => { if (first === null && Number(document.body.dataset.firstStage || 0) > before) first = performance.now() - t0; });
    watch.observe(document.body, { attributes: true, attributeFilter: ['data-first-stage'] });
    request();
    await new Promise((ok, fail) => {
      const check = () => {
        if (Number(document.body.dataset.ready || 0) > before && document.getElementById('busy').hidden) ok();
        else if (document.getElementById('err-general').textContent) fail(new Error(document.getElementById('err-general').textContent));
        else setTimeout(check, 5);
      };
      check();
    });
    watch.disconnect();
    const all = performance.now() - t0;
    const { state } = await import('/js/page/state.js');
    const o = state.current.info.options;
    if (o.method !== method || o.n !== n || o.d_model !== layer.d_model || o.seed !== seed || !state.current.info.on_demand) throw new Error(`the page computed ${JSON.stringify(o)}`);
    const forward = state.current.timings.find((t) => t.name === 'forward').ms;
    return { first, all, forward };
  }, [method, n, LAYER, seed]);
}

const forwardOnly = process.argv.includes('--forward');

const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', 'www'], { stdio: ['ignore', 'pipe', 'ignore'] });
const port = await new Promise((ok) => server.stdout.on('data', (d) => { const m = /port (\d+)/.exec(String(d)); if (m) ok(m[1]); }));
const profile = mkdtempSync(join(tmpdir(), 'relattn-bench-'));
const started = new Date();
const load = [loadavg()[0]];
try {
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1500, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  if (forwardOnly) {
    const page = await browser.newPage();
    page.on('pageerror', (e) => { console.error('page error:', e.message); process.exitCode = 1; });
    await page.goto(`http://127.0.0.1:${port}/bench.html?sizes=${arg('sizes', '128,512,1024')}&reps=${arg('reps', '5')}`);
    await page.waitForFunction(() => window.benchResults, null, { timeout: 600_000 });
    const results = await page.evaluate(() => window.benchResults);
    results.user_agent = await page.evaluate(() => navigator.userAgent);
    console.log(JSON.stringify(results, null, 2));
    if (results.error) process.exitCode = 1;
    await browser.close();
  } else {
    // One page per worker count, its helpers started by a first, small layer held on demand.
    const pages = new Map();
    for (const w of workerCounts) {
      const p = await browser.newPage();
      p.on('pageerror', (e) => { console.error('page error:', e.message); process.exitCode = 1; });
      await p.goto(`http://127.0.0.1:${port}/?method=shaw&n=1024&d_model=64&heads=8&clip=5&backend=cpu&workers=${w}`);
      await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 120000 });
      pages.set(w, p);
    }
    const rows = [];
    for (const method of schemes) {
      for (const n of sizes) {
        const row = { method, n, page: {}, native: {} };
        for (let r = 0; r < reps; r++) {
          // Interleaved: each worker count's page, then native with the same threads, in turn.
          for (const w of workerCounts) {
            const t = await pageTimes(pages.get(w), method, n);
            if (process.env.BENCH_VERBOSE) console.error(w, method, n, t);
            const best = row.page[w];
            row.page[w] = best ? { first: Math.min(best.first, t.first), all: Math.min(best.all, t.all), forward: Math.min(best.forward, t.forward) } : t;
            const ms = native(method, n, w);
            row.native[w] = Math.min(row.native[w] ?? Infinity, ms);
          }
        }
        rows.push(row);
        console.error(JSON.stringify(row));
      }
    }
    load.push(loadavg()[0]);
    const version = await pages.get(workerCounts[0]).evaluate(() => navigator.userAgent.match(/Chrome\/(\d+)/)?.[1]);
    await browser.close();
    const f = (ms) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
    console.log(`*${started.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC, ${all} CPUs, load average ${load.map((l) => l.toFixed(1)).join(' → ')}, Chromium ${version} headless, CPU backend; d_model ${LAYER.d_model}, ${LAYER.heads} heads, k ${LAYER.clip}; best of ${reps}, interleaved.*\n`);
    const [one] = workerCounts;
    const head = ['scheme', 'n', ...workerCounts.flatMap((w) => [`${w} worker${w > 1 ? 's' : ''}: first ms`, 'all ms', 'forward ms']),
      ...workerCounts.filter((w) => w !== one).map((w) => `all, ${w} vs ${one}`), ...workerCounts.filter((w) => w !== one).map((w) => `forward, ${w} vs ${one}`),
      ...workerCounts.map((w) => `native ${w} thread${w > 1 ? 's' : ''} ms`), ...workerCounts.filter((w) => w !== one).map((w) => `native, ${w} vs ${one}`),
      ...workerCounts.map((w) => `forward/native, ${w}`), ...workerCounts.map((w) => `all/native, ${w}`)];
    console.log(`| ${head.join(' | ')} |`);
    console.log(`|${head.map((_, i) => (i < 1 ? '---' : '---:')).join('|')}|`);
    for (const r of rows) {
      const ratio = (a, b) => `${(a / b).toFixed(2)}×`;
      const cells = [r.method, r.n, ...workerCounts.flatMap((w) => [f(r.page[w].first), f(r.page[w].all), f(r.page[w].forward)]),
        ...workerCounts.filter((w) => w !== one).map((w) => ratio(r.page[one].all, r.page[w].all)),
        ...workerCounts.filter((w) => w !== one).map((w) => ratio(r.page[one].forward, r.page[w].forward)), ...workerCounts.map((w) => f(r.native[w])),
        ...workerCounts.filter((w) => w !== one).map((w) => ratio(r.native[one], r.native[w])),
        ...workerCounts.map((w) => ratio(r.page[w].forward, r.native[w])), ...workerCounts.map((w) => ratio(r.page[w].all, r.native[w]))];
      console.log(`| ${cells.join(' | ')} |`);
    }
    console.log(`\n${JSON.stringify(rows)}`);
  }
} finally {
  server.kill();
  rmSync(profile, { recursive: true, force: true });
}
