// Shared set-up of the end-to-end tests (*.test.mjs here): the paths, Debian's chromium and its flags, a
// python3 http.server serving www/ on 127.0.0.1, a chromium with a fresh profile, the listeners that
// collect a page's errors into a test file's `problems`, and teardown. Not a test file itself: node --test
// only runs *.test.mjs (and the like) in this folder.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const artifacts = join(root, 'tests', 'e2e', 'artifacts');
/** Options of a panel's screenshot: the page's fixed footer (the backend line) hidden, as it would cover the panel's
 * bottom, or its middle when the panel is taller than the window. */
export const PANEL_SHOT = { style: 'footer { visibility: hidden !important; }' };
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// --disable-gpu stays even for WebGPU: with --enable-unsafe-webgpu, headless chromium still gives WebGPU a
// SwiftShader (software Vulkan) adapter; without that flag requestAdapter() resolves to null.
export const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

/** The CLI: the newer of target/{release,debug}/relattn (`make test` builds the debug one first), or built here;
 *  under $CARGO_TARGET_DIR when it is set, as cargo does. */
export function cli() {
  const target = process.env.CARGO_TARGET_DIR || join(root, 'target');
  const built = ['release', 'debug'].map((b) => join(target, b, 'relattn')).filter((p) => existsSync(p));
  if (built.length) return built.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  execFileSync('cargo', ['build', '--bin', 'relattn'], { cwd: root, stdio: 'inherit' });
  return join(target, 'debug', 'relattn');
}

/** Fails unless www/pkg is built; makes the artifacts folder. */
export function prepare() {
  assert.ok(existsSync(join(root, 'www', 'pkg', 'relattn.js')), 'www/pkg is missing: run `make wasm` first');
  mkdirSync(artifacts, { recursive: true });
}

/** python3 http.server on a free port of 127.0.0.1, serving www/: resolves to { server, base }. */
export function startServer() {
  return new Promise((ok, fail) => {
    const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', join(root, 'www')], { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => { server.kill(); fail(new Error('http.server did not start')); }, 15000);
    server.stdout.on('data', (d) => {
      const m = /port (\d+)/.exec(String(d));
      if (m) { clearTimeout(timer); ok({ server, base: `http://127.0.0.1:${m[1]}/` }); }
    });
    server.stderr.on('data', () => {}); // request log
    server.on('exit', (code) => fail(new Error(`http.server exited with ${code}`)));
  });
}

/** A chromium with a fresh profile and `args` added to FLAGS; other options go to launchPersistentContext. */
export async function launch({ args = [], viewport = { width: 1500, height: 1000 }, ...options } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'relattn-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: [...FLAGS, ...args], viewport, ...options });
  const page = context.pages()[0] || (await context.newPage());
  return { context, page, profile };
}

/**
 * Pushes a page's errors onto `problems`: console errors (but not those `expected` accepts) and page errors,
 * always; with `failed`, failed requests whose URL it accepts; with `outside`, requests to anywhere but
 * 127.0.0.1, blob: and data:; with `workers`, the workers' console errors; with `crash`, a crash.
 */
export function watch(page, problems, { expected = () => false, failed = () => true, outside = false, workers = true, crash = false } = {}) {
  page.on('console', (m) => { if (m.type() === 'error' && !expected(m.text())) problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  if (crash) page.on('crash', () => problems.push('the page crashed'));
  if (failed) page.on('requestfailed', (r) => { if (failed(r.url())) problems.push(`request failed: ${r.url()}`); });
  if (outside) page.on('request', (r) => { if (!/^(http:\/\/127\.0\.0\.1|blob:|data:)/.test(r.url())) problems.push(`outside request: ${r.url()}`); });
  if (workers) page.on('worker', (w) => w.on('console', (m) => { if (m.type() === 'error' && !expected(m.text())) problems.push(`worker console: ${m.text()}`); }));
}

/** How many views page `p` has finished (its body's data-ready; 0 before the first). */
export const readyId = (p) => p.evaluate(() => Number(document.body.dataset.ready || 0));

/** Runs `act` and waits for page `p`'s next finished view: a higher ready id, and nothing busy. */
export async function settle(p, act, timeout = 30000) {
  const before = await readyId(p);
  await act();
  await p.waitForFunction((b) => Number(document.body.dataset.ready || 0) > b && document.getElementById('busy').hidden, before, { timeout });
}

/** Closes what `launch` and `startServer` gave (any of them): the browser, the server, the profile. */
export async function close({ context, server, profile } = {}) {
  if (context) await context.close();
  if (server) server.kill();
  if (profile) rmSync(profile, { recursive: true, force: true });
}

/** Hovers cell (i, j) of a stage's figure and waits for its tooltip; returns the tooltip's data and text. */
export async function hover(p, stage, i, j) {
  const canvas = p.locator(`figure[data-stage="${stage}"] canvas`);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const d = await canvas.evaluate((c) => ({ ...c.dataset, width: c.width }));
  const scale = box.width / d.width;
  // A whole pixel inside the cell (the browser's mouse events land on whole pixels: a cell under 2 px seen at
  // its centre's fraction could be read as its neighbour), else the cell's centre.
  const inside = (start, size, k, count) => {
    const [a, b] = [start + (k * size) / count, start + ((k + 1) * size) / count];
    const whole = Math.ceil(a + 1e-3);
    return whole < b - 1e-3 ? whole : (a + b) / 2;
  };
  const x = inside(box.x + Number(d.x0) * scale, (d.x1 - d.x0) * scale, j, Number(d.cols));
  const y = inside(box.y + Number(d.y0) * scale, (d.y1 - d.y0) * scale, i, Number(d.rows));
  await p.mouse.move(x, y);
  await p.waitForFunction(([s, ii, jj]) => {
    const t = document.getElementById('tooltip');
    return !t.hidden && t.dataset.stage === s && Number(t.dataset.i) === ii && Number(t.dataset.j) === jj;
  }, [stage, i, j], { timeout: 5000 });
  return p.locator('#tooltip').evaluate((t) => ({ ...t.dataset, text: t.innerText }));
}

/** Drops a file on page `p` as a person would (a DataTransfer with the file, dispatched as `drop`). */
export async function dropFile(p, name, bytes) {
  const dt = await p.evaluateHandle(([n, b]) => {
    const t = new DataTransfer();
    t.items.add(new File([new Uint8Array(b)], n, { type: 'application/octet-stream' }));
    return t;
  }, [name, [...bytes]]);
  await p.dispatchEvent('body', 'dragenter', { dataTransfer: dt });
  await p.dispatchEvent('body', 'drop', { dataTransfer: dt });
}

/** A uint8 .npy file of `bytes` (1-D), as numpy writes it (format 1.0): a capture's description. */
export function npyU8(bytes) {
  let header = `{'descr': '|u1', 'fortran_order': False, 'shape': (${bytes.length},), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1'); h[6] = 1; h[7] = 0; h.writeUInt16LE(header.length, 8);
  return Buffer.concat([h, Buffer.from(header, 'latin1'), Buffer.from(bytes)]);
}

/** A float32 .npy file of `values` with `shape`, as numpy writes it (format 1.0). */
export function npyF32(shape, values) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1'); h[6] = 1; h[7] = 0; h.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(4 * values.length);
  values.forEach((v, k) => body.writeFloatLE(v, 4 * k));
  return Buffer.concat([h, Buffer.from(header, 'latin1'), body]);
}

const CRC = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
function crc32(b) { let c = 0xffffffff; for (const x of b) c = CRC[(c ^ x) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; }

/** A stored (uncompressed) zip of `files` (name → bytes): an .npz as numpy's savez writes it. */
export function writeZip(files) {
  const locals = [];
  const central = [];
  let offset = 0;
  for (const [name, data] of Object.entries(files)) {
    const n = Buffer.from(name);
    const crc = crc32(data);
    const l = Buffer.alloc(30);
    l.writeUInt32LE(0x04034b50, 0); l.writeUInt16LE(20, 4); l.writeUInt32LE(crc, 14); l.writeUInt32LE(data.length, 18); l.writeUInt32LE(data.length, 22); l.writeUInt16LE(n.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0); c.writeUInt16LE(20, 4); c.writeUInt16LE(20, 6); c.writeUInt32LE(crc, 16); c.writeUInt32LE(data.length, 20); c.writeUInt32LE(data.length, 24); c.writeUInt16LE(n.length, 28); c.writeUInt32LE(offset, 42);
    locals.push(l, n, data);
    central.push(c, n);
    offset += 30 + n.length + data.length;
  }
  const cd = Buffer.concat(central);
  const e = Buffer.alloc(22);
  const count = Object.keys(files).length;
  e.writeUInt32LE(0x06054b50, 0); e.writeUInt16LE(count, 8); e.writeUInt16LE(count, 10); e.writeUInt32LE(cd.length, 12); e.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, e]);
}
