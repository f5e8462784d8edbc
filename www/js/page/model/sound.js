// Owns Model mode's sound: Play/Stop of the window and its sampled continuation with Web Audio (no files):
// one triangle-wave voice per part, a held note (the same pitch in consecutive 16th steps) one tone with a
// short attack and release, at the tempo of the ♩ = box, scheduled 1.5 s ahead as it plays (never thousands
// of nodes in one task). While it plays, `onStep(step)` is called each animation frame with the playhead's
// (fractional) 16th step, from the first step of the window.
import { $ } from '../dom.js';

// This module's own state: no other module writes it (playing() is how they read it).
const sound = {
  /** { ctx, t0, stepDur, steps, raf } while playing, else null. */
  play: null,
  /** The AudioContext, made on the first Play and kept. */
  audio: null,
};

const GAIN = 0.12;
const LOOKAHEAD = 1.5; // seconds of music scheduled ahead

function freq(midi) {
  return 440 * 2 ** ((midi - 69) / 12);
}

/** The held notes of `notes` (window then sampled, in token order) as { voice, midi, start, end } steps. */
function tones(notes) {
  const out = [];
  const open = [null, null, null, null];
  for (const n of notes) {
    const cur = open[n.voice];
    if (cur && n.midi != null && cur.midi === n.midi && cur.end === n.step) { cur.end += 1; continue; }
    if (cur) out.push(cur);
    open[n.voice] = n.midi == null ? null : { voice: n.voice, midi: n.midi, start: n.step, end: n.step + 1 };
  }
  return out.concat(open.filter(Boolean));
}

export function playing() {
  return sound.play !== null;
}

/** Plays `notes` from `fromStep` (a piece step); calls onStep(step) per frame and onEnd() when done or stopped. */
export async function play(notes, fromStep, onStep, onEnd) {
  stop();
  const m = sound;
  if (!m.audio) m.audio = new AudioContext();
  const ctx = m.audio;
  if (ctx.state !== 'running') await ctx.resume();
  const bpm = Math.min(400, Math.max(20, Number($('m-bpm').value) || 80));
  const stepDur = 60 / bpm / 4;
  const last = notes.length ? notes[notes.length - 1].step + 1 : fromStep;
  const t0 = ctx.currentTime + 0.08;
  const master = ctx.createGain();
  master.gain.value = 1;
  master.connect(ctx.destination);
  const queue = tones(notes).filter((n) => n.end > fromStep).sort((a, b) => a.start - b.start);
  const p = { ctx, master, t0, stepDur, fromStep, last, raf: 0, timer: 0, onEnd, queue, next: 0 };
  m.play = p;
  // The tones are scheduled a little ahead of time (LOOKAHEAD s), a few at a time: a long piece never
  // makes thousands of nodes in one task on the main thread.
  const schedule = () => {
    const horizon = ctx.currentTime + LOOKAHEAD;
    while (p.next < queue.length) {
      const n = queue[p.next];
      const a = t0 + (Math.max(n.start, fromStep) - fromStep) * stepDur;
      if (a > horizon) break;
      p.next += 1;
      const b = t0 + (n.end - fromStep) * stepDur;
      const osc = ctx.createOscillator();
      osc.type = 'triangle';
      osc.frequency.value = freq(n.midi);
      const g = ctx.createGain();
      g.gain.setValueAtTime(0, a);
      g.gain.linearRampToValueAtTime(GAIN, a + 0.015);
      g.gain.setValueAtTime(GAIN, Math.max(a + 0.015, b - 0.04));
      g.gain.linearRampToValueAtTime(0, b);
      osc.connect(g).connect(master);
      osc.start(a);
      osc.stop(b + 0.02);
    }
  };
  schedule();
  p.timer = setInterval(schedule, 250);
  $('m-play').textContent = 'Stop';
  $('m-play').dataset.audio = ctx.state;
  const frame = () => {
    if (m.play !== p) return;
    const step = fromStep + Math.max(0, ctx.currentTime - t0) / stepDur;
    if (step >= last) { stop(); return; }
    onStep(step);
    p.raf = requestAnimationFrame(frame);
  };
  p.raf = requestAnimationFrame(frame);
}

/** Stops playback (silences at once) and calls its onEnd. */
export function stop() {
  const p = sound.play;
  if (!p) return;
  sound.play = null;
  cancelAnimationFrame(p.raf);
  clearInterval(p.timer);
  try { p.master.gain.setValueAtTime(0, p.ctx.currentTime); p.master.disconnect(); } catch { /* already gone */ }
  $('m-play').textContent = 'Play';
  $('m-play').dataset.audio = p.ctx.state;
  if (p.onEnd) p.onEnd();
}
