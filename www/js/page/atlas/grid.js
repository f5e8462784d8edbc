// Owns the head atlas panel: an atlas file's grid of layer × head tiles (drawn by the page's wasm,
// crates/relattn/src/render/atlas.rs, from the AtlasView the worker sent: the same picture as the command line's
// `relattn atlas render`), the metric colouring it and the order of each layer's tiles, a tooltip per tile (its
// lines are the view's), the hovered or selected head's profile at full size (asked of the worker, drawn as the
// lecture's charts are), and a click: a captured layer's stages at that head (as a file of its own, file.js
// useAtlasRow), else how to capture it; Present shows the grid and then the head's profile as full-screen slides.
// Its own state stays here; atlas/export.js reads it with atlasShown().
import { $, slideTextScale } from '../dom.js';
import { askAtlasHead, request } from '../worker-client.js';
import { useAtlasRow } from '../file.js';
import { askSlice, useControls } from '../source.js';
import { hideTip, showTip } from '../tip.js';
import { state } from '../state.js';
import { drawFailed } from '../ui-wasm.js';

// This module's own state: no other module writes it.
const atlas = {
  /** The atlas file shown ({ id, name, bytes }), or null. */
  file: null,
  /** Its AtlasView (crates/relattn/src/render/atlas.rs), or null. */
  view: null,
  /** The tiles drawn: TileRect[] in canvas pixels. */
  tiles: [],
  /** The tile whose profile is drawn at full size ({ row, head }), and whether a click chose it (else the pointer). */
  shown: null,
  chosen: false,
  /** The newest head chart asked for: an older answer is dropped. */
  asked: 0,
  /** The keyboard's cursor: an index into `tiles` (row by row, in the order shown), or null. */
  cursor: null,
  /** The head chart drawn under the grid ({ chart, tile }: the worker's HeadChart and its tile), or null. */
  head: null,
};

/** The slides: the grid, then the head shown's profile. */
const SLIDES = 2;
/** The grid's text scale on a slide at 1280 × 720: its smallest text, a tile's head number (9 px at scale 1),
 *  at 14 px as every slide's labels are; it grows with the screen as they do. */
const SLIDE_TEXT = 14 / 9;

export function initAtlas() {
  $('atlas-metric').addEventListener('change', draw);
  $('atlas-order').addEventListener('change', draw);
  $('atlas-close').addEventListener('click', () => { $('atlas').hidden = true; hideTip(); });
  $('atlas-present').addEventListener('click', () => presentAtlas(0));
  document.addEventListener('keydown', slideKeys);
  document.addEventListener('fullscreenchange', () => { if (!document.fullscreenElement) leaveSlide(); });
  let resized = 0;
  window.addEventListener('resize', () => { clearTimeout(resized); resized = setTimeout(redrawAtlas, 100); });
}

/** The grid's canvas, made with the first atlas (so that a page that never opens one has no canvas of it). */
function gridCanvas() {
  let c = $('atlas-canvas');
  if (!c) {
    c = Object.assign(document.createElement('canvas'), { id: 'atlas-canvas' });
    c.setAttribute('role', 'img');
    c.addEventListener('mousemove', hover);
    c.addEventListener('mouseleave', () => { hideTip(); if (!atlas.chosen && atlas.shown) atlas.shown = null; });
    c.addEventListener('click', (e) => { const t = tileAt(e); if (t) choose(t); });
    c.addEventListener('keydown', keyTile);
    c.tabIndex = 0;
    $('atlas-holder').append(c);
  }
  return c;
}

/** Shows the atlas `msg.view` (an AtlasOpened's) of file `file`: its metrics in the select, the grid drawn. */
export function showAtlas(msg, file) {
  Object.assign(atlas, { file, view: msg.view, shown: null, chosen: false, cursor: null, head: null });
  const sel = $('atlas-metric');
  const was = sel.value;
  sel.replaceChildren(...msg.view.metrics.map((m) => Object.assign(new Option(m.title, m.name), { title: m.description })));
  if (msg.view.metrics.some((m) => m.name === was)) sel.value = was;
  $('atlas-title').textContent = `${file.name}: ${msg.view.title}`;
  $('atlas-message').textContent = '';
  $('atlas').hidden = false;
  draw();
  $('atlas-head').replaceChildren();
  $('atlas').scrollIntoView({ block: 'start' });
}

/** The atlas shown ({ file, view }) and the grid's spec at `width` (and `height`, fixed: a slide), or null. */
export function atlasShown(width, height = null, textScale = 1) {
  if (!atlas.view) return null;
  return { file: atlas.file, view: atlas.view, spec: { metric: $('atlas-metric').value, order: $('atlas-order').value, width, height, text_scale: textScale } };
}

/** Draws the atlas shown again (the page's theme or colormap changed, a new screen size); nothing when none is shown. */
export function redrawAtlas() {
  if (!atlas.view || $('atlas').hidden) return;
  if (slideAt() !== 1) draw();
  drawHead();
}

/** The slide shown (0: the grid, 1: the head's profile), or null outside the slides. */
function slideAt() {
  const at = document.body.dataset.atlasSlide;
  return at === undefined ? null : Number(at);
}

/** Shows the atlas as slide `at`, full screen, drawn at the screen's size: the grid, or the profile of the head
 *  shown under it (hovered or chosen; the first tile's when none was). */
function presentAtlas(at) {
  const slide = Math.max(0, Math.min(SLIDES - 1, at));
  document.body.classList.add('atlas-slide');
  document.body.dataset.atlasSlide = String(slide);
  $('atlas-step').textContent = `${slide + 1} / ${SLIDES} · → ← · Esc leaves`;
  hideTip();
  const el = document.documentElement;
  if (el.requestFullscreen && !document.fullscreenElement) el.requestFullscreen().catch(() => {});
  if (slide === 1 && !atlas.head) showHead(atlas.tiles[0]);
  redrawAtlas();
}

function leaveSlide() {
  if (slideAt() === null) return;
  document.body.classList.remove('atlas-slide');
  delete document.body.dataset.atlasSlide;
  if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(() => {});
  redrawAtlas();
  $('atlas-present').focus();
}

function slideKeys(e) {
  const at = slideAt();
  if (at === null) return;
  if (['ArrowRight', 'PageDown', ' ', 'ArrowDown'].includes(e.key)) { e.preventDefault(); presentAtlas(at + 1); }
  else if (['ArrowLeft', 'PageUp', 'ArrowUp'].includes(e.key)) { e.preventDefault(); presentAtlas(at - 1); }
  else if (e.key === 'Escape') { e.preventDefault(); leaveSlide(); }
}

/** The metric selected, as the grid shows it. */
function metric() {
  return atlas.view.metrics.find((m) => m.name === $('atlas-metric').value) || atlas.view.metrics[0];
}

function draw() {
  const c = gridCanvas();
  const holder = $('atlas-holder');
  // On a slide the grid fills the screen under the step line, its text grown; on the page, the panel's width.
  const { view, spec } = slideAt() === 0
    ? atlasShown(holder.clientWidth, holder.clientHeight, SLIDE_TEXT * slideTextScale())
    : atlasShown(Math.max(480, Math.floor(holder.clientWidth || 1200)));
  try {
    c.width = spec.width;
    c.height = state.ui.atlas_height(view, spec);
    atlas.tiles = state.ui.draw_atlas(c, view, spec);
    c.tiles = atlas.tiles; // where each tile is, for the tests' pointer
  } catch (e) {
    drawFailed(e);
    return;
  }
  outline(c);
  const m = metric();
  $('atlas-desc').textContent = `${m.title}: ${m.description}.`;
  c.setAttribute('aria-label', `${view.title}: ${atlas.tiles.length} tiles coloured by ${m.title}; the arrow keys move between tiles, Enter opens one`);
  c.dataset.metric = m.name;
  $('atlas').dataset.ready = String(Number($('atlas').dataset.ready || 0) + 1);
}

/** Outlines the tile chosen (clicked, or opened with Enter) and the keyboard's cursor, black and yellow as the
 *  figures' pins are. */
function outline(c) {
  const ctx = c.getContext('2d');
  const chosen = atlas.chosen && atlas.shown ? atlas.tiles.find((t) => t.row === atlas.shown.row && t.head === atlas.shown.head) : null;
  const cursor = atlas.cursor === null ? null : atlas.tiles[atlas.cursor];
  for (const t of [chosen, cursor].filter(Boolean)) {
    for (const [style, width] of [['#000', 3], ['#ffd400', 1.5]]) {
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.strokeRect(t.x - 1.5, t.y - 1.5, t.w + 3, t.h + 3);
    }
  }
  c.dataset.chosen = chosen ? `${chosen.row}/${chosen.head}` : '';
}

/** The tile under a pointer event, or null. */
function tileAt(e) {
  const c = e.currentTarget;
  const box = c.getBoundingClientRect();
  const [x, y] = [((e.clientX - box.left) * c.width) / box.width, ((e.clientY - box.top) * c.height) / box.height];
  return atlas.tiles.find((t) => x >= t.x && x < t.x + t.w && y >= t.y && y < t.y + t.h) || null;
}

function hover(e) {
  const t = tileAt(e);
  e.currentTarget.style.cursor = t ? 'pointer' : '';
  if (!t) { hideTip(); return; }
  const [title, ...lines] = atlas.view.tips[t.row * atlas.view.heads + t.head];
  showTip(title, lines, e.pageX, e.pageY);
  if (!atlas.chosen) showHead(t);
}

// Keyboard: the arrow keys move a cursor tile (left and right within a row as shown, up and down to the same
// place in the next row), its tooltip shown beside it and read aloud, its profile drawn; Enter or Space opens
// it as a click does; Escape hides the tooltip.
function keyTile(e) {
  if (slideAt() !== null) return; // the keys step the slides
  if (e.key === 'Escape') { hideTip(); return; }
  const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -atlas.view.heads, ArrowDown: atlas.view.heads }[e.key];
  if (step === undefined && e.key !== 'Enter' && e.key !== ' ') return;
  e.preventDefault();
  const n = atlas.tiles.length;
  atlas.cursor = atlas.cursor === null ? 0 : Math.max(0, Math.min(n - 1, atlas.cursor + (step || 0)));
  const t = atlas.tiles[atlas.cursor];
  if (step === undefined) { choose(t); return; }
  draw();
  const c = e.currentTarget;
  const box = c.getBoundingClientRect();
  const k = box.width / c.width;
  const [title, ...lines] = atlas.view.tips[t.row * atlas.view.heads + t.head];
  showTip(title, lines, window.scrollX + box.left + (t.x + t.w) * k, window.scrollY + box.top + (t.y + t.h) * k);
  $('announce').textContent = [title, ...lines].join('; ');
  if (!atlas.chosen) showHead(t);
}

// A click (or Enter): the head's profile stays shown; a captured layer's stages at that head are computed (the
// page's capture-file path: the atlas's row read by the worker as a capture file), else the message says how to
// capture it.
function choose(t) {
  atlas.chosen = true;
  showHead(t);
  draw();
  const row = atlas.view.rows[t.row];
  if (!row.captured) { $('atlas-message').textContent = row.how_to_capture; return; }
  $('atlas-message').textContent = `${row.title}, head ${t.head}: its stages are computed below (an error, if any, next to the file picker).`;
  useControls();
  useAtlasRow(atlas.file, t.row);
  askSlice(0, t.head);
  request();
}

/** Draws tile `t`'s head at full size: its profile and the scheme's term by offset (asked of the worker). */
function showHead(t) {
  if (atlas.shown && atlas.shown.row === t.row && atlas.shown.head === t.head) return;
  atlas.shown = { row: t.row, head: t.head };
  const asked = ++atlas.asked;
  askAtlasHead(atlas.file.id, t.row, t.head).then((chart) => {
    if (asked !== atlas.asked) return;
    atlas.head = { chart, tile: t };
    drawHead();
  }).catch((err) => {
    if (err instanceof WebAssembly.RuntimeError) { drawFailed(err); return; }
    if (asked !== atlas.asked) return;
    // The worker holds another atlas, or none since it was restarted (a panic): this one is opened again by picking it.
    $('atlas-message').textContent = err.kind === 'stale' || err.kind === 'fatal' ? `No profile: the worker no longer holds ${atlas.file.name}; open it again.` : `No profile: ${err.message}`;
  });
}

/** Draws the head chart shown (900 × 320 on the page; on the profile's slide, the screen under the title, its
 *  text at 14 px at 1280 × 720, growing with the screen); nothing before one came. */
function drawHead() {
  if (!atlas.head) return;
  const { chart, tile } = atlas.head;
  let c = $('atlas-head-canvas');
  if (!c) {
    c = Object.assign(document.createElement('canvas'), { id: 'atlas-head-canvas' });
    c.setAttribute('role', 'img');
    $('atlas-head').append(c);
  }
  const box = $('atlas-head');
  const slide = slideAt() === 1;
  [c.width, c.height] = slide ? [box.clientWidth, box.clientHeight] : [900, 320];
  try {
    state.ui.draw_chart(c, { ...chart, text_px: slide ? Math.round(14 * slideTextScale()) : 12 });
  } catch (e) {
    drawFailed(e);
    return;
  }
  c.setAttribute('aria-label', `${chart.title}: ${chart.y_axis} by ${chart.x_axis}`);
  c.dataset.head = `${tile.row}/${tile.head}`;
}
