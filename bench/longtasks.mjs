// The page's main-thread tasks (#53 item 3): for every scheme of the page's Method control (or --schemes) at each
// size (--sizes), a fresh page of the CPU backend computes the layer and draws every stage and picture while
// Chrome's trace (devtools.timeline) and its sampling profiler run; every main-thread task of --over ms or more is
// printed with its length, what ran in it at the top (the trace's events: a timer, a message from the worker, a
// style and layout pass, a paint), the style, layout, collections and compiles inside it, its largest events by
// name, and the page's functions that took its time (the profiler's samples inside it, each function with the
// time spent in it and below). Prints the long tasks, then a Markdown table (the longest task of each scheme and
// size). The profiler's own start (CpuProfiler::StartProfiling) can show as a task of its own, which the page
// without the profiler does not have. The tests' own check is tests/e2e/slides.test.mjs (PerformanceObserver's
// longtask entries).
//   make wasm && node bench/longtasks.mjs [--sizes 64,2048,8192] [--schemes shaw,t5] [--over 50]
//     [--query '&d_model=64&heads=8'] (the other controls of the link, each scheme's and size's the same)
import { loadavg } from 'node:os';
import { startServer, launch, close } from '../tests/e2e/harness.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('sizes', '64,2048,8192').split(',').map(Number);
const over = Number(arg('over', '50'));
const query = arg('query', '&d_model=64&heads=8');

/** The trace's events that say what a task ran: [name, what] of an event, or null for the rest. */
function what(e) {
  const d = (e.args && e.args.data) || {};
  switch (e.name) {
    case 'FunctionCall': return `call ${d.functionName || '(anonymous)'} ${(d.url || '').replace(/^.*\/www\//, '').replace(/^http:\/\/[^/]+\//, '')}:${d.lineNumber ?? ''}`;
    case 'TimerFire': return 'timer';
    case 'EventDispatch': return `event ${d.type}`;
    case 'FireAnimationFrame': return 'animation frame';
    case 'EvaluateScript': return `script ${(d.url || '').replace(/^http:\/\/[^/]+\//, '')}`;
    case 'v8.evaluateModule': return 'module';
    case 'ParseHTML': return 'parse HTML';
    case 'UpdateLayoutTree': return 'style';
    case 'Layout': return 'layout';
    case 'PrePaint': return 'pre-paint';
    case 'Paint': return 'paint';
    case 'Commit': return 'commit';
    case 'MajorGC': case 'MinorGC': case 'V8.GCFinalizeMC': return 'GC';
    case 'v8.compile': case 'V8.CompileCode': return 'compile';
    case 'wasm.CompileLazy': case 'wasm.SyncCompile': case 'wasm.AsyncCompile': return 'wasm compile';
    default: return null;
  }
}

/** The sampling profiler's samples of thread `pid`:`tid` in the trace (its Profile and ProfileChunk events, the
 *  trace's clock): [{ t, stack }] with `stack` the page's frames (www/js, the wasm), innermost first. */
function samplesOf(events, pid, tid) {
  const nodes = new Map();
  const out = [];
  // The thread's Profile event names its profile; the chunks come from the process's profiler thread, with that id.
  const starts = new Map(events.filter((e) => e.name === 'Profile' && e.pid === pid && e.tid === tid).map((e) => [e.id, e.args.data.startTime]));
  for (const e of events.filter((x) => x.name === 'ProfileChunk' && x.pid === pid && starts.has(x.id))) {
    const d = e.args.data;
    const cp = d.cpuProfile || {};
    for (const n of cp.nodes || []) nodes.set(`${e.id}:${n.id}`, { parent: n.parent === undefined ? null : `${e.id}:${n.parent}`, f: n.callFrame });
    let t = starts.get(e.id);
    (cp.samples || []).forEach((id, k) => {
      t += d.timeDeltas[k];
      out.push({ t, node: `${e.id}:${id}` });
    });
    starts.set(e.id, t);
  }
  return out.map(({ t, node }) => {
    const stack = [];
    for (let id = node; id !== null && nodes.has(id); id = nodes.get(id).parent) {
      const f = { url: "", ...nodes.get(id).f };
      if (!/\/(js|pkg)\//.test(f.url) && !f.url.startsWith('wasm://')) continue;
      stack.push(`${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(js|pkg)\//, '$1/').replace(/^wasm:\/\/.*/, 'wasm')}`);
    }
    return { t, stack };
  }).sort((a, b) => a.t - b.t);
}

/** Each of the page's functions sampled between `from` and `to` (µs) with the time spent in it and below, longest first. */
function functionsIn(samples, from, to) {
  const time = new Map();
  const inside = samples.filter((s) => s.t >= from && s.t <= to);
  inside.forEach((s, k) => {
    const dt = ((inside[k + 1] ? inside[k + 1].t : to) - s.t) / 1000;
    for (const name of new Set(s.stack)) time.set(name, (time.get(name) || 0) + dt);
  });
  return [...time].sort((a, b) => b[1] - a[1]);
}

/** Opens the page on `method` at `n` and returns its main-thread tasks of `over` ms or more, each
 *  { ms, top: [what, ms][], functions: [name, ms][] }, longest first. */
async function measure(context, base, method, n) {
  const p = await context.newPage();
  const cdp = await context.newCDPSession(p);
  const events = [];
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  const done = new Promise((ok) => cdp.once('Tracing.tracingComplete', ok));
  await cdp.send('Tracing.start', { categories: 'devtools.timeline,disabled-by-default-devtools.timeline,v8,disabled-by-default-v8.cpu_profiler', transferMode: 'ReportEvents' });
  await p.goto(`${base}?method=${method}&n=${n}${query}&seed=0&sentence=&backend=cpu`);
  await p.waitForFunction(() => document.body.dataset.ready && document.getElementById('busy').hidden, null, { timeout: 300000 });
  await p.waitForTimeout(300);
  await cdp.send('Tracing.end');
  await done;
  await p.close();
  const names = new Map(events.filter((e) => e.name === 'thread_name').map((e) => [`${e.pid}:${e.tid}`, e.args.name]));
  const main = events.filter((e) => names.get(`${e.pid}:${e.tid}`) === 'CrRendererMain' && e.ph === 'X');
  const tasks = main.filter((e) => (e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask') && e.dur >= over * 1000);
  const samples = tasks.length ? samplesOf(events, tasks[0].pid, tasks[0].tid) : [];
  return tasks.map((task) => {
    const inside = main.filter((e) => e !== task && e.tid === task.tid && e.pid === task.pid && e.ts >= task.ts && e.ts + e.dur <= task.ts + task.dur);
    const top = new Map();
    for (const e of inside) {
      const w = what(e);
      // Only the outermost of each kind: a FunctionCall inside a TimerFire is the timer's.
      if (!w || inside.some((o) => o !== e && what(o) && o.ts <= e.ts && o.ts + o.dur >= e.ts + e.dur && o.dur > e.dur)) continue;
      top.set(w, (top.get(w) || 0) + e.dur / 1000);
    }
    // Inside the page's calls: the style and layout passes they forced, the collections, the compiles.
    const inner = new Map();
    for (const e of inside) {
      const w = what(e);
      if (!['style', 'layout', 'GC', 'compile', 'wasm compile'].includes(w)) continue;
      if (inside.some((o) => o !== e && what(o) === w && o.ts <= e.ts && o.ts + o.dur >= e.ts + e.dur && o.dur > e.dur)) continue;
      inner.set(w, (inner.get(w) || 0) + e.dur / 1000);
    }
    // The task's own largest events by name, whatever they are (a task whose time the kinds above do not hold).
    const raw = new Map();
    for (const e of inside) if (e.dur < 0.9 * task.dur) raw.set(e.name, (raw.get(e.name) || 0) + e.dur / 1000);
    return {
      raw: [...raw].sort((a, b) => b[1] - a[1]).slice(0, 8),
      ms: task.dur / 1000,
      top: [...top].sort((a, b) => b[1] - a[1]),
      inner: [...inner].sort((a, b) => b[1] - a[1]),
      functions: functionsIn(samples, task.ts, task.ts + task.dur),
    };
  }).sort((a, b) => b.ms - a.ms);
}

const { server, base } = await startServer();
const { context, page, profile } = await launch();
await page.goto(base);
await page.waitForFunction(() => document.getElementById('method').options.length > 0);
const schemes = arg('schemes', null)?.split(',') ?? await page.evaluate(() => [...document.getElementById('method').options].map((o) => o.value));
await page.goto('about:blank'); // the traced page's renderer is then the only one at work
const rows = [];
try {
  for (const n of sizes) {
    for (const method of schemes) {
      const t0 = Date.now();
      const tasks = await measure(context, base, method, n);
      const load = loadavg()[0].toFixed(1);
      rows.push({ method, n, tasks, load, at: new Date().toISOString().slice(11, 19), s: (Date.now() - t0) / 1000 });
      const first = tasks[0];
      console.error(`${method} n ${n}: ${tasks.length} tasks ≥ ${over} ms, longest ${first ? first.ms.toFixed(0) : '-'} ms (load ${load})`);
      for (const t of tasks.slice(0, 4)) {
        console.error(`  ${t.ms.toFixed(0)} ms: ${t.top.slice(0, 3).map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join('; ')} (within: ${t.inner.map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join('; ')})`);
        console.error(`    events: ${t.raw.map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join('; ')}`);
        console.error(`    ${t.functions.slice(0, 14).map(([f, ms]) => `${f} ${ms.toFixed(0)}`).join('; ')}`);
      }
    }
  }
} finally {
  await close({ context, server, profile });
}
console.log(`| scheme | n | tasks ≥ ${over} ms | longest (ms) | what (the trace's top events, ms) | the page's functions in it (ms) | load | UTC |`);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const t = r.tasks[0];
  const top = t ? t.top.slice(0, 2).map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join('; ') : '';
  const fns = t ? t.functions.slice(0, 4).map(([f, ms]) => `${f} ${ms.toFixed(0)}`).join('; ') : '';
  console.log(`| ${r.method} | ${r.n} | ${r.tasks.length} | ${t ? t.ms.toFixed(0) : '–'} | ${top} | ${fns} | ${r.load} | ${r.at} |`);
}
