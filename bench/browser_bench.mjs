// Runs www/bench.html in headless Debian Chromium (playwright-core, never a downloaded browser) and prints
// the wasm forward times and the 1024 × 1024 redraw time as JSON.
//   make wasm && node bench/browser_bench.mjs [--sizes 128,512,1024] [--reps 5]
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('sizes', '128,512,1024');
const reps = arg('reps', '5');
const port = 8000 + Math.floor(Math.random() * 900);

const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', 'www'], { stdio: 'ignore' });
try {
  await new Promise((r) => setTimeout(r, 800));
  // A persistent context is how playwright takes a fresh --user-data-dir.
  const browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'relattn-bench-')), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage();
  page.on('pageerror', (e) => { console.error('page error:', e.message); process.exitCode = 1; });
  await page.goto(`http://127.0.0.1:${port}/bench.html?sizes=${sizes}&reps=${reps}`);
  await page.waitForFunction(() => window.benchResults, null, { timeout: 600_000 });
  const results = await page.evaluate(() => window.benchResults);
  results.user_agent = await page.evaluate(() => navigator.userAgent);
  console.log(JSON.stringify(results, null, 2));
  if (results.error) process.exitCode = 1;
  await browser.close();
} finally {
  server.kill();
}
