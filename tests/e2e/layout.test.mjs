// The page's modules on floors, as crates/relattn/tests/layout.rs keeps the library's: every import in www/*.js
// and www/js/**/*.js (static, re-exports and import()) must go down to a lower floor of FLOORS — never back up,
// never sideways — and the import graph has no cycle. A module missing from FLOORS, a floor for a module that is
// not there, an import of a file that is not there and an index.html script or preload of one fail too. Static:
// no browser and no wasm build (www/pkg/ is git-ignored: its glue is a module of FLOORS all the same).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const www = resolve(dirname(fileURLToPath(import.meta.url)), '../../www');

/** Each module's floor (its path under www/): it may import modules of lower floors only. */
const FLOORS = {
  // 0 — shared by the page, the worker and the notebook widget's bundle (no imports); the wasm-bindgen glue.
  'js/shared/protocol.js': 0,
  'js/shared/figure-core.js': 0,
  'pkg/relattn.js': 0,
  // The worker (a thread of its own, on the shared floor): its Model mode and its pool, then its entry; the pool's
  // helpers' entry.
  'js/worker/model.js': 1,
  'js/worker/pool.js': 1,
  'worker.js': 2,
  'pool-worker.js': 1,
  // The benchmark page's one script.
  'bench.js': 1,
  // 1 — the page's base: DOM helpers; the state several features read, and the page's events; scheme colours.
  'js/page/dom.js': 1,
  'js/page/state.js': 1,
  'js/page/scheme-colors.js': 1,
  // 2 — one part of the page each, reading and writing its own elements: the controls, the status line, the
  // source of Parameters mode, the tooltip's box, the tour; Model mode's form, its piano roll, its sound.
  'js/page/controls.js': 2,
  'js/page/status.js': 2,
  'js/page/source.js': 2,
  'js/page/tip.js': 2,
  'js/page/tour.js': 2,
  'js/page/model/form.js': 2,
  'js/page/model/roll.js': 2,
  'js/page/model/sound.js': 2,
  // 3 — the page's connections: the worker, the page's own wasm instance, the link (the query string).
  'js/page/worker-client.js': 3,
  'js/page/ui-wasm.js': 3,
  'js/page/url.js': 3,
  // 4 — drawing what the worker answers: a stage into a view (figures.js), Model mode's panels and its
  // sampling; and the user's own tensors (sent to the worker).
  'js/page/figures.js': 4,
  'js/page/file.js': 4,
  'js/page/model/panels.js': 4,
  'js/page/model/sampling.js': 4,
  // 5 — features on those: pointing at cells and the pins, comparing the schemes, the figures' exports;
  // Model mode's selected token and the six models side by side; a head atlas's grid.
  'js/page/tooltip.js': 5,
  'js/page/compare.js': 5,
  'js/page/export.js': 5,
  'js/page/model/selection.js': 5,
  'js/page/model/all-models.js': 5,
  'js/page/atlas/grid.js': 5,
  // 6 — what redraws the pins or the six models: zoom, presentation mode; Model mode's slides and exports; the
  // head atlas's exports.
  'js/page/zoom.js': 6,
  'js/page/present.js': 6,
  'js/page/model/slides.js': 6,
  'js/page/model/export.js': 6,
  'js/page/atlas/export.js': 6,
  // 7 — the modes: the figures of the result shown (Parameters mode), Model mode's wiring.
  'js/page/stage-views.js': 7,
  'js/page/model/mode.js': 7,
  // 8 — the page's entry: wiring only.
  'js/page/main.js': 8,
};

/** Files that a build makes (git-ignored), imported or loaded but not in a clean clone's tree: the wasm glue (a
 *  module, in FLOORS) and the wasm the worker compiles once for its pool's helpers. */
const BUILT = new Set(['pkg/relattn.js', 'pkg/relattn_bg.wasm']);

/** Every script of www/ itself and of www/js/ (www/js/types/ holds TypeScript declarations only). */
function scripts() {
  const out = readdirSync(www).filter((f) => f.endsWith('.js'));
  const walk = (dir) => {
    for (const e of readdirSync(join(www, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.js')) out.push(path);
    }
  };
  walk('js');
  return out.sort();
}

/**
 * `src` read as JavaScript: `code`, the same length, with every comment, string, template text and regular
 * expression blanked (a JSDoc `import('…')` is a type, not an import), and `strings`, its string and template
 * literals { at, text } (a template's text up to its first `${`). A regular expression is told from a division
 * by the token before it.
 */
export function lex(src) {
  const code = src.split('');
  const strings = [];
  const blank = (a, b) => { for (let k = a; k < b; k++) if (code[k] !== '\n') code[k] = ' '; };
  const opened = []; // the `{` depth of each `${` open
  let depth = 0;
  let last = ''; // the last significant character of code
  let i = 0;
  /** From after a backtick or the `}` closing a `${`: the index of the closing backtick or of the next `${`. */
  const templateEnd = (k) => {
    while (k < src.length && src[k] !== '`' && !(src[k] === '$' && src[k + 1] === '{')) k += src[k] === '\\' ? 2 : 1;
    return k;
  };
  while (i < src.length) {
    const c = src[i];
    const n = src[i + 1];
    if (c === '/' && n === '/') { const e = src.indexOf('\n', i); const end = e < 0 ? src.length : e; blank(i, end); i = end; continue; }
    if (c === '/' && n === '*') { const e = src.indexOf('*/', i + 2); const end = e < 0 ? src.length : e + 2; blank(i, end); i = end; continue; }
    if (c === "'" || c === '"') {
      let k = i + 1;
      while (k < src.length && src[k] !== c && src[k] !== '\n') k += src[k] === '\\' ? 2 : 1;
      strings.push({ at: i, text: src.slice(i + 1, k) });
      blank(i + 1, k);
      i = k + 1; last = c; continue;
    }
    if (c === '`' || (c === '}' && opened.length && opened[opened.length - 1] === depth - 1)) {
      if (c === '}') { opened.pop(); depth -= 1; }
      const k = templateEnd(i + 1);
      if (c === '`') strings.push({ at: i, text: src.slice(i + 1, k) });
      blank(i + 1, k);
      if (src[k] === '$') { opened.push(depth); depth += 1; i = k + 2; last = '{'; continue; }
      i = k + 1; last = '`'; continue;
    }
    const before = /[\w$]+$/.exec(src.slice(Math.max(0, i - 12), i).trimEnd());
    if (c === '/' && (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last) || (before && /^(return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/.test(before[0])))) {
      let k = i + 1;
      let inClass = false;
      while (k < src.length && (inClass || src[k] !== '/') && src[k] !== '\n') {
        if (src[k] === '\\') k += 1; else if (src[k] === '[') inClass = true; else if (src[k] === ']') inClass = false;
        k += 1;
      }
      blank(i + 1, k);
      i = k + 1; last = ')'; continue;
    }
    if (c === '{') depth += 1;
    if (c === '}') depth -= 1;
    if (!/\s/.test(c)) last = c;
    i += 1;
  }
  return { code: code.join(''), strings };
}

/** The specifiers `src` imports: [{ line, spec }], static imports, re-exports and import() with a literal path. */
export function importsOf(src) {
  const { code, strings } = lex(src);
  const lineAt = (at) => code.slice(0, at).split('\n').length;
  const firstString = (from) => strings.find((s) => s.at >= from);
  const out = [];
  for (const m of code.matchAll(/\bimport\b(?!\s*[.(])|\bexport\s*(?:\*[^;]*?|\{[^}]*\})\s*from\b|\bimport\s*\(/g)) {
    const at = m.index;
    if (m[0].endsWith('(')) {
      // import(…): the string literals in its parentheses (a template's text before `${`), less any ?query.
      let d = 0;
      let end = at + m[0].length - 1;
      for (; end < code.length; end++) { if (code[end] === '(') d += 1; else if (code[end] === ')' && --d === 0) break; }
      const inside = strings.filter((s) => s.at > at && s.at < end);
      if (!inside.length) out.push({ line: lineAt(at), spec: null });
      for (const s of inside) out.push({ line: lineAt(at), spec: s.text.replace(/\?.*$/, '') });
      continue;
    }
    const s = firstString(at);
    out.push({ line: lineAt(at), spec: s ? s.text : null });
  }
  // `new URL('…', import.meta.url)`: a file the module loads (the worker's script), checked to exist.
  for (const m of code.matchAll(/\bnew\s+URL\s*\(/g)) {
    const s = firstString(m.index);
    if (s && /^\s*,\s*import\.meta\.url/.test(code.slice(s.at + s.text.length + 2))) out.push({ line: lineAt(m.index), spec: s.text, loads: true });
  }
  return out;
}

/** The module a specifier of `from` names, as a path under www/ (null: outside www/ or not relative). */
function target(from, spec) {
  if (!spec || !/^\.\.?\//.test(spec)) return null;
  const path = relative(www, resolve(www, dirname(from), spec)).split('\\').join('/');
  return path.startsWith('..') ? null : path;
}

/** The import graph: module → [{ to, line }], and what is wrong with its imports. */
function graph() {
  const edges = new Map();
  const wrong = [];
  for (const from of scripts()) {
    const list = [];
    for (const { line, spec, loads } of importsOf(readFileSync(join(www, from), 'utf8'))) {
      const to = target(from, spec);
      if (!to) { wrong.push(`www/${from}:${line} imports ${spec === null ? 'a computed specifier' : `'${spec}'`}: only a relative path to a module of www/ is checked`); continue; }
      if (!BUILT.has(to) && !existsSync(join(www, to))) { wrong.push(`www/${from}:${line} ${loads ? 'loads' : 'imports'} '${spec}': www/${to} does not exist`); continue; }
      if (!loads) list.push({ to, line });
    }
    edges.set(from, list);
  }
  return { edges, wrong };
}

test('every module of www/ has a floor, and every floor names a module that is there', () => {
  const found = scripts();
  const missing = found.filter((m) => !(m in FLOORS));
  assert.deepEqual(missing, [], `modules with no floor in tests/e2e/layout.test.mjs FLOORS: ${missing.map((m) => `www/${m}`).join(', ')}`);
  const gone = Object.keys(FLOORS).filter((m) => !BUILT.has(m) && !found.includes(m));
  assert.deepEqual(gone, [], `FLOORS names modules that are not there: ${gone.join(', ')}`);
});

test('no import runs back up (or sideways): each goes to a lower floor', () => {
  const { edges, wrong } = graph();
  for (const [from, list] of edges) {
    for (const { to, line } of list) {
      if (!(from in FLOORS) || !(to in FLOORS)) continue; // the test above names them
      if (FLOORS[to] >= FLOORS[from]) wrong.push(`www/${from}:${line} (floor ${FLOORS[from]}) imports www/${to} (floor ${FLOORS[to]})`);
    }
  }
  assert.deepEqual(wrong, [], `imports running back up or sideways, or to nothing:\n${wrong.join('\n')}`);
});

test('the modules import each other in no circle', () => {
  const { edges } = graph();
  const cycles = [];
  const state = new Map(); // module → 1 on the path, 2 done
  const path = [];
  const visit = (m) => {
    state.set(m, 1);
    path.push(m);
    for (const { to } of edges.get(m) || []) {
      if (state.get(to) === 1) cycles.push([...path.slice(path.indexOf(to)), to].map((p) => `www/${p}`).join(' → '));
      else if (!state.has(to)) visit(to);
    }
    path.pop();
    state.set(m, 2);
  };
  for (const m of edges.keys()) if (!state.has(m)) visit(m);
  assert.deepEqual(cycles, [], `import cycles:\n${cycles.join('\n')}`);
});

test("the pages' module scripts and preloads name modules that are there", () => {
  const wrong = [];
  for (const page of readdirSync(www).filter((f) => f.endsWith('.html'))) {
    const html = readFileSync(join(www, page), 'utf8');
    const named = [
      ...[...html.matchAll(/<script\b[^>]*\btype="module"[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]),
      ...[...html.matchAll(/<link\b[^>]*\brel="modulepreload"[^>]*\bhref="([^"]+)"/g)].map((m) => m[1]),
    ];
    assert.ok(named.length, `www/${page}: no module script found`);
    for (const src of named) if (!(src in FLOORS) || (!BUILT.has(src) && !existsSync(join(www, src)))) wrong.push(`www/${page}: ${src}`);
  }
  assert.deepEqual(wrong, [], `module scripts or preloads of no module in FLOORS:\n${wrong.join('\n')}`);
});

test('the parser finds every form of import and none in comments or strings', () => {
  const src = [
    "import a from './a.js';",
    "import { b,\n  c as d } from '../b.js';",
    "import * as e from \"./e.js\";",
    "import './side.js';",
    "export { f } from './f.js';",
    "/** @type {import('./type.js').T} */ const g = 1;",
    "// import h from './h.js';",
    "const s = 'import i from \"./i.js\"'; const r = /import\\('j'\\)/; const q = x / 2 / y;",
    "const m = await import(k ? './k.js' : `./k.js?n=${k}`);",
    "const w = new Worker(new URL('./w.js', import.meta.url));",
  ].join('\n');
  assert.deepEqual(importsOf(src).map(({ line, spec, loads }) => [line, spec, !!loads]), [
    [1, './a.js', false], [2, '../b.js', false], [4, './e.js', false], [5, './side.js', false], [6, './f.js', false],
    [10, './k.js', false], [10, './k.js', false], [11, './w.js', true],
  ]);
});
