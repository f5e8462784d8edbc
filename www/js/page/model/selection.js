// Owns Model mode's roll: drawing it from state.model.shown (the arcs fading in on a new head), the selected
// token (a click, ← / → / ↑ / ↓ / Home / End, the URL's note=, the playhead), the lines that describe the
// window and the selected token, the hover title, and Play (sound.js). Selecting a token asks the worker for
// its prediction through the `ask` given to wireRoll (mode.js's modelRequest).
import { $ } from '../dom.js';
import { state } from '../state.js';
import { drawRoll, hit, noteName, arcsOf } from './roll.js';
import { markRow } from './panels.js';
import { windowName, modelLabel } from './form.js';
import { sampledNotes } from './sampling.js';
import { play, stop, playing } from './sound.js';
import { saveURL } from '../url.js';

const m = state.model;
const FADE_MS = 180;
/** What selecting a token asks of the worker (mode.js: a new ModelRequest). */
let ask = () => {};
let fadeRaf = 0;

/** Connects the roll to Model mode's requests (once, at start). */
export function wireRoll(askPrediction) {
  ask = askPrediction;
}

/** The window's summary and the selected token's line. */
export function describe() {
  const s = m.shown;
  const w = s.window;
  const piece = s.info.pieces.find((p) => p.bwv === w.piece);
  $('m-summary').textContent = `${modelLabel(s.model)}, ${s.info.parameters.toLocaleString('en')} parameters · ${piece ? `BWV ${w.piece} ${piece.title} (${piece.time_signature})` : windowName(w)} · ` +
    `tokens ${w.start}…${w.start + w.length - 1} (16th steps ${w.start / 4}…${(w.start + w.length) / 4 - 1})` +
    `${w.transpose ? `, transposed ${w.transpose > 0 ? '+' : ''}${w.transpose}` : ''} · mean NLL ${w.nll.mean.toFixed(3)} nats per token` +
    `${s.info.test_nll != null ? ` (the test split in windows of ${s.info.config.context}: ${s.info.test_nll.toFixed(3)})` : ''}`;
  const t = m.position;
  const n = t == null ? null : w.notes[t];
  const top = arcsOf(s.values, w.length, t).sort((a, b) => b[1] - a[1]).slice(0, 3)
    .map(([j, a]) => `${noteLabel(w.notes[j])} at ${j - t}, ${keyName(j - t, n)} (${a.toFixed(2)})`);
  $('m-selected').textContent = n
    ? `Selected: token ${t} of the window, ${noteLabel(n)}, step ${n.step}; it predicts the next token, the ${VOICES[(n.voice + 1) % 4]}. ` +
      `In layer ${s.layer}, head ${s.head} it attends most to: ${top.join('; ')}.`
    : '';
}

const VOICES = ['soprano', 'alto', 'tenor', 'bass'];
/** What the key at distance `d` from the query note `q` reaches, named from the token q predicts (crates/relattn/src/trained/heads.rs). */
function keyName(d, q) {
  const { beat, bar } = m.shown.window.meter;
  return state.ui ? state.ui.name_key(d, (q.voice + 1) % 4, beat, bar) : `distance ${d}`;
}
function noteLabel(n) {
  return `${VOICES[n.voice]} ${noteName(n.midi)}`;
}

/** The roll's tooltip (its title): the token under the pointer and the selected token's weight on it. */
function hoverRoll(e) {
  const roll = $('roll');
  const s = m.shown;
  if (!s) return;
  const b = roll.getBoundingClientRect();
  const t = hit(roll, s, sampledNotes(), e.clientX - b.left, e.clientY - b.top);
  if (t == null) { roll.title = ''; return; }
  const n = s.window.notes[t];
  const i = m.position;
  const weight = i != null && t <= i && s.values
    ? `; weight from the selected token (distance ${t - i}, ${keyName(t - i, s.window.notes[i])}): ${s.values[i * s.window.length + t].toFixed(3)}` : '';
  roll.title = `token ${t}: ${noteLabel(n)}, step ${n.step}${weight}`;
}

/** Redraws the roll with the arcs fading in (a change of head or layer). */
export function fadeArcs() {
  cancelAnimationFrame(fadeRaf);
  const t0 = performance.now();
  const step = () => {
    const f = Math.min(1, (performance.now() - t0) / FADE_MS);
    redraw(f);
    if (f < 1) fadeRaf = requestAnimationFrame(step);
  };
  step();
}

/** Draws the roll as state.model says (on `canvas`, the page's roll unless given, at `size` when given). */
export function redraw(fade = 1, canvas = $('roll'), size = null) {
  if (!m.shown) return;
  drawRoll(canvas, m.shown, { sampled: sampledNotes(), position: m.position, playhead: playing() ? m.playStep : null, fade, size });
}

/** The worker's answer selected token `t` of the window (null: none yet, the window's middle at the next
 *  request); drawn with the result. */
export function selectShown(t) {
  m.position = t;
}

/** Selects token `t` of the window: arcs at once (the head's weights are here), the prediction from the worker. */
export function select(t) {
  const s = m.shown;
  if (!s || t == null) return;
  t = Math.max(0, Math.min(t, s.window.length - 1));
  if (t === m.position) return;
  m.position = t;
  redraw();
  describe();
  markRow(t, s.window.length);
  ask();
}

export function togglePlay() {
  if (playing()) { stop(); return; }
  const s = m.shown;
  if (!s) return;
  const notes = s.window.notes.concat(sampledNotes());
  const from = s.window.notes[0].step;
  const voice = (m.position ?? 0) % 4;
  let lastPx = -1;
  $('m-selected').setAttribute('aria-live', 'off'); // not a note read aloud at every 16th
  play(notes, from, (step) => {
    m.playStep = step;
    const t = (Math.floor(step) - from) * 4 + voice;
    if (t < s.window.length && t !== m.position) { select(t); return; }
    // The roll is drawn again only when the playhead has moved a pixel (a long window moves it slowly).
    const px = Math.round(((step - from) * $('roll').clientWidth) / ((s.window.length + sampledNotes().length) / 4));
    if (px !== lastPx) { lastPx = px; redraw(); }
  }, () => { m.playStep = null; redraw(); saveURL(); $('m-selected').setAttribute('aria-live', 'polite'); }).catch((e) => { $('merr-general').textContent = `sound: ${e.message || e}`; });
}

/** The roll's canvas, made when Model mode is first shown, with its click, key and hover handlers. */
export function makeRoll() {
  const roll = document.createElement('canvas');
  Object.assign(roll, { id: 'roll', tabIndex: 0 });
  roll.setAttribute('role', 'img');
  roll.setAttribute('aria-describedby', 'roll-hint');
  roll.setAttribute('aria-label', "Piano roll of the window with the selected note's attention arcs");
  $('roll-holder').replaceWith(roll);
  roll.addEventListener('click', (e) => {
    if (!m.shown) return;
    const b = roll.getBoundingClientRect();
    const t = hit(roll, m.shown, sampledNotes(), e.clientX - b.left, e.clientY - b.top);
    if (t != null) select(t);
  });
  roll.addEventListener('mousemove', hoverRoll);
  roll.addEventListener('keydown', (e) => {
    if (!m.shown) return;
    const t = m.position ?? 0;
    const T = m.shown.window.length;
    // ← / →: the previous / next token (Shift: the same voice a step away); ↑ / ↓: the voice above / below at
    // the same step; Home / End: the first / last token.
    const to = {
      ArrowLeft: t - (e.shiftKey ? 4 : 1),
      ArrowRight: t + (e.shiftKey ? 4 : 1),
      ArrowUp: t % 4 > 0 ? t - 1 : t,
      ArrowDown: t % 4 < 3 ? t + 1 : t,
      Home: 0,
      End: T - 1,
    }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(to);
  });
}
