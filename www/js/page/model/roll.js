// Owns the piano roll of Model mode (<canvas id="roll">): the window's notes as bars (16th steps on x with
// bar and beat lines, MIDI pitch on y; soprano, alto, tenor, bass in four colours; a held note, the same
// pitch in consecutive steps of a voice, is one bar; rests are not drawn), the sampled continuation outlined
// and hatched, the playhead, and the selected token's attention arcs to every earlier token with weight
// ≥ 0.01 in the chosen head (width and opacity ∝ weight; a rest's end is on the rest lane at the bottom).
// For the tests the canvas carries data-position (the selected token), data-arcs (JSON [[key, weight], …]
// as drawn), data-bars, data-sampled (the sampled tokens) and data-playhead.
import { textPx } from '../dom.js';
import { sizeCanvas } from '../../shared/figure-core.js';

const VOICE_COLORS = ['#d62728', '#2a9d3a', '#1f6fc4', '#8a4fbf'];
export const VOICE_NAMES = ['S', 'A', 'T', 'B'];
const MIN_WEIGHT = 0.01;
const M = { left: 44, right: 12, top: 18, bottom: 52 }; // margins (CSS px); the rest lane is the bottom's upper part, the legend its last line
const NAMES = ['C', 'C#', 'D', 'D#', 'E', 'F', 'F#', 'G', 'G#', 'A', 'A#', 'B']; // as the vocabulary spells them

const patterns = new Map();

/** A hatch pattern of voice `v`'s colour, for the sampled notes. */
function hatch(ctx, v) {
  const key = `${v}`;
  if (patterns.has(key)) return patterns.get(key);
  const c = document.createElement('canvas');
  c.width = 6; c.height = 6;
  const g = c.getContext('2d');
  g.strokeStyle = VOICE_COLORS[v];
  g.globalAlpha = 0.55;
  g.lineWidth = 1.5;
  g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(5, 7); g.lineTo(7, 5); g.stroke();
  const p = ctx.createPattern(c, 'repeat');
  patterns.set(key, p);
  return p;
}

export function noteName(midi) {
  return midi == null ? 'rest' : `${NAMES[midi % 12]}${Math.floor(midi / 12) - 1}`;
}

/**
 * The roll's geometry for `r` (the result shown) with `sampled` notes after the window, on a canvas of CSS
 * size w × h: step and pitch → pixels, and back.
 */
export function layout(r, sampled, w, h) {
  const notes = r.window.notes.concat(sampled);
  const s0 = Math.floor(r.window.start / 4);
  const steps = Math.max(1, Math.ceil(notes.length / 4));
  const pitched = notes.filter((n) => n.midi != null).map((n) => n.midi);
  const lo = (pitched.length ? Math.min(...pitched) : 60) - 1;
  const hi = (pitched.length ? Math.max(...pitched) : 72) + 1;
  const plotW = w - M.left - M.right;
  const restY = h - M.bottom + 8;
  const plotH = restY - 10 - M.top;
  const sx = plotW / steps;
  const sy = plotH / (hi - lo + 1);
  return {
    notes, s0, steps, lo, hi, sx, sy, w, h, restY,
    x: (step) => M.left + (step - s0) * sx,
    y: (midi) => M.top + (hi - midi) * sy,
    /** The centre of token t's cell (of the window and its continuation). */
    point(t) {
      const n = notes[t];
      const x = M.left + (n.step - s0 + 0.5) * sx;
      return n.midi == null ? [x, restY] : [x, M.top + (hi - n.midi + 0.5) * sy];
    },
  };
}

/** The held notes of `notes` (first index `from` sampled): per voice, runs of one pitch over consecutive steps. */
function runs(notes, windowLength) {
  const out = [];
  const open = [null, null, null, null];
  notes.forEach((n, t) => {
    const v = n.voice;
    const sampled = t >= windowLength;
    const cur = open[v];
    if (cur && n.midi != null && cur.midi === n.midi && cur.end === n.step && cur.sampled === sampled) { cur.end = n.step + 1; return; }
    if (cur) out.push(cur);
    open[v] = n.midi == null ? null : { voice: v, midi: n.midi, start: n.step, end: n.step + 1, sampled };
  });
  for (const cur of open) if (cur) out.push(cur);
  return out;
}

/** The arcs of token `i`: [[key j, weight], …] for the keys j ≤ i with weight ≥ 0.01 (row i of the (T, T) values). */
export function arcsOf(values, T, i) {
  const out = [];
  if (!values || i == null || i >= T) return out;
  for (let j = 0; j <= i; j++) {
    const a = values[i * T + j];
    if (a >= MIN_WEIGHT) out.push([j, a]);
  }
  return out;
}

/**
 * Draws the roll on `canvas` for `r` (state.model.shown), the sampled notes, the selected token, the playhead
 * step (or null) and the arcs' opacity `fade` (0..1, for the change of head); `size` { width, height, dpr }
 * overrides the canvas's CSS size and the screen's pixel ratio (the PNG export).
 */
export function drawRoll(canvas, r, { sampled = [], position = null, playhead = null, fade = 1, size = null } = {}) {
  const { ctx, w, h } = sizeCanvas(canvas, 1200, 420, size, true);
  const L = layout(r, sampled, w, h);
  const T = r.window.length;
  const piece = r.info.pieces.find((p) => p.bwv === r.window.piece);
  const spq = r.info.steps_per_quarter;

  // Pitch lines at every C, and labels.
  ctx.font = `${textPx(11)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  for (let m = L.lo; m <= L.hi; m++) {
    if (m % 12 !== 0) continue;
    const y = L.y(m) + L.sy / 2;
    ctx.strokeStyle = '#eee'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(M.left, y); ctx.lineTo(w - M.right, y); ctx.stroke();
    ctx.fillStyle = '#666'; ctx.textAlign = 'right';
    ctx.fillText(noteName(m), M.left - 4, y);
  }
  ctx.fillStyle = '#888'; ctx.textAlign = 'right';
  ctx.fillText('rest', M.left - 4, L.restY);

  // Beat lines, bar lines with their numbers, the end of the window.
  const s1 = L.s0 + L.steps;
  ctx.textAlign = 'center'; ctx.textBaseline = 'alphabetic';
  for (let s = Math.ceil(L.s0 / spq) * spq; s <= s1; s += spq) {
    ctx.strokeStyle = '#f0f0f0'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(L.x(s), M.top); ctx.lineTo(L.x(s), L.restY + 6); ctx.stroke();
  }
  const bars = (piece && piece.bars) || [];
  bars.forEach((s, k) => {
    if (s < L.s0 || s > s1) return;
    ctx.strokeStyle = '#bbb'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(L.x(s), M.top); ctx.lineTo(L.x(s), L.restY + 6); ctx.stroke();
    if (L.sx * 16 > 18 || k % 4 === 0) { ctx.fillStyle = '#888'; ctx.fillText(String(k + 2), L.x(s), M.top - 5); }
  });
  if (sampled.length) {
    const x = L.x(L.s0 + T / 4);
    ctx.strokeStyle = '#444'; ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(x, M.top - 4); ctx.lineTo(x, L.restY + 6); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = '#444'; ctx.textAlign = 'left'; ctx.fillText('sampled →', x + 4, L.restY - 2);
  }
  // Steps along the bottom.
  ctx.fillStyle = '#888'; ctx.textAlign = 'center'; ctx.textBaseline = 'top';
  const every = Math.max(spq, Math.ceil(60 / L.sx / spq) * spq);
  for (let s = Math.ceil(L.s0 / every) * every; s <= s1; s += every) ctx.fillText(String(s), L.x(s), h - M.bottom + 18);
  // The legend and the axis's name, on the last line (so an exported roll explains itself).
  ctx.textBaseline = 'alphabetic';
  ctx.textAlign = 'left';
  let lx = M.left;
  const ly = h - 6;
  const fs = textPx(11);
  for (const [v, name] of ['soprano', 'alto', 'tenor', 'bass'].entries()) {
    ctx.fillStyle = VOICE_COLORS[v];
    ctx.fillRect(lx, ly - fs + 2, fs - 2, fs - 2);
    ctx.fillStyle = '#444';
    ctx.fillText(name, lx + fs + 2, ly);
    lx += fs + 6 + ctx.measureText(name).width + 10;
  }
  ctx.fillStyle = '#888'; ctx.textAlign = 'right';
  ctx.fillText('16th-note step (bar numbers above); pitch up', w - M.right, ly);

  // Notes.
  const rs = runs(L.notes, T);
  const bh = Math.max(2, Math.min(L.sy - 1, Math.max(9, 0.7 * L.sy))); // thicker on a big (full) screen
  for (const n of rs) {
    const x = L.x(n.start) + 0.5;
    const y = L.y(n.midi) + (L.sy - bh) / 2;
    const bw = Math.max(1, (n.end - n.start) * L.sx - 1);
    if (n.sampled) {
      ctx.fillStyle = hatch(ctx, n.voice);
      ctx.fillRect(x, y, bw, bh);
      ctx.strokeStyle = VOICE_COLORS[n.voice]; ctx.lineWidth = 1.2;
      ctx.strokeRect(x + 0.5, y + 0.5, bw - 1, bh - 1);
    } else {
      ctx.fillStyle = VOICE_COLORS[n.voice];
      ctx.globalAlpha = 0.85;
      ctx.fillRect(x, y, bw, bh);
      ctx.globalAlpha = 1;
    }
  }

  // Arcs from the selected token to the keys it attends to.
  const arcs = arcsOf(r.values, T, position);
  if (position != null && position < L.notes.length) {
    const [xi, yi] = L.point(position);
    for (const [j, a] of arcs) {
      const [xj, yj] = L.point(j);
      ctx.strokeStyle = VOICE_COLORS[L.notes[j].voice];
      ctx.globalAlpha = fade * (0.3 + 0.7 * a);
      ctx.lineWidth = 1 + 8 * a;
      ctx.beginPath();
      if (j === position) {
        ctx.arc(xi, yi - 8, 6, 0, 2 * Math.PI);
      } else {
        const lift = Math.min(M.top + 40, 14 + Math.abs(xi - xj) * 0.3);
        ctx.moveTo(xi, yi);
        ctx.quadraticCurveTo((xi + xj) / 2, Math.min(yi, yj) - lift, xj, yj);
      }
      ctx.stroke();
      ctx.beginPath(); ctx.arc(xj, yj, 1.5 + 3 * a, 0, 2 * Math.PI); ctx.fillStyle = ctx.strokeStyle; ctx.fill();
    }
    ctx.globalAlpha = 1;
    ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
    const cw = Math.max(4, L.sx);
    ctx.strokeRect(xi - cw / 2, yi - Math.max(bh, 6) / 2 - 2, cw, Math.max(bh, 6) + 4);
  }

  // The playhead.
  if (playhead != null) {
    const x = L.x(playhead);
    ctx.strokeStyle = '#e07000'; ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(x, M.top - 8); ctx.lineTo(x, L.restY + 8); ctx.stroke();
  }

  canvas.dataset.position = position == null ? '' : String(position);
  canvas.dataset.arcs = JSON.stringify(arcs);
  canvas.dataset.bars = String(rs.length);
  canvas.dataset.sampled = sampled.map((n) => n.token).join(',');
  canvas.dataset.playhead = playhead == null ? '' : playhead.toFixed(2);
  canvas.dataset.drawn = String(r.id || 0);
}

/** The window's token at CSS point (x, y) of the roll: the note of that step nearest in pitch (rests on their lane). */
export function hit(canvas, r, sampled, x, y) {
  const L = layout(r, sampled, canvas.clientWidth || 1200, canvas.clientHeight || 420);
  const step = Math.floor((x - M.left) / L.sx) + L.s0;
  const first = (step - L.s0) * 4;
  if (first < 0 || first >= r.window.length) return null;
  let best = null;
  for (let t = first; t < Math.min(first + 4, r.window.length); t++) {
    const d = Math.abs(L.point(t)[1] - y);
    if (!best || d < best.d) best = { t, d };
  }
  return best ? best.t : null;
}
