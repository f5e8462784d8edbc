// Owns Continue in Model mode: sampling after the window, one batch of tokens at a time from the worker.
// Its state (the sampling under way, the notes drawn) is its own; the roll and Play read the notes through
// sampledNotes(). Only the newest sampling's batches are kept.
import { $ } from '../dom.js';
import { state } from '../state.js';
import { post } from '../worker-client.js';
import { sampleRequest, modelStop, windowOf } from '../../shared/protocol.js';

/** The sampling under way (its id, 0: none), the last id given, the notes drawn after the window, and what
 *  to call once the sampling under way ends (whenSamplingEnds). */
const sampling = { id: 0, seq: 0, notes: [], then: [] };
/** Redraws the roll (mode.js), given by wireSampling. */
let redrawRoll = () => {};

/** The notes sampled after the window (Notes: token, voice, step, midi). */
export function sampledNotes() {
  return sampling.notes;
}

/** True while a sampling is under way. */
export function samplingUnderway() {
  return sampling.id !== 0;
}

/** Calls `f` once the sampling under way ends (done, stopped, refused or ended by a new window). */
export function whenSamplingEnds(f) {
  sampling.then.push(f);
}

/** Connects Continue, Stop and Clear sampled; `shown()` is the result shown, `redraw()` redraws the roll. */
export function wireSampling(shown, redraw) {
  redrawRoll = redraw;
  $('m-continue').addEventListener('click', () => start(shown()));
  $('m-stop').addEventListener('click', stop);
  $('m-clear').addEventListener('click', () => {
    sampling.notes = [];
    $('m-clear').disabled = true;
    $('m-sample-status').textContent = '';
    redrawRoll();
  });
}

function start(s) {
  if (!s) return;
  if (sampling.id) post(modelStop(sampling.id));
  sampling.seq += 1;
  sampling.id = sampling.seq;
  sampling.notes = [];
  $('roll').dataset.sampleDone = '';
  $('merr-sample').textContent = '';
  const [kind, piece, opening, start, length, transpose, backend] = JSON.parse(s.key);
  const window = windowOf({ piece, opening, start, length, transpose });
  const num = (id) => ($(id).value.trim() === '' ? NaN : Number($(id).value));
  post(sampleRequest(sampling.id, kind, window, num('m-steps'), num('m-temperature'), num('m-top-k'), num('m-top-p'), num('m-seed'), backend));
  $('m-continue').disabled = true;
  $('m-stop').disabled = false;
  $('m-sample-status').textContent = 'sampling…';
  redrawRoll();
}

/** A batch of the sampling (ModelSampled): kept when it is the newest sampling's. */
export function onSampled(msg) {
  if (msg.id !== sampling.id) return;
  if (msg.ended) {
    $('m-sample-status').textContent = `${sampling.notes.length} tokens sampled; ended (the window was computed again).`;
    done();
    return;
  }
  sampling.notes.push(...msg.notes);
  $('m-sample-status').textContent = `${msg.drawn} tokens sampled (${msg.drawn / 4} steps)${msg.remaining ? `, ${msg.remaining} to go…` : '; done.'}`;
  $('roll').dataset.sampleDone = msg.remaining ? '' : String(msg.id);
  redrawRoll();
  if (!msg.remaining) done();
}

/** A refused Continue (a ModelError of 'model-sample'): the reason beside its controls, no 'sampling…' left behind. */
export function onSampleRefused(msg) {
  if (msg.id !== sampling.id) return;
  $('m-sample-status').textContent = '';
  $('merr-sample').textContent = msg.error.message;
  done();
}

function done() {
  sampling.id = 0;
  $('m-continue').disabled = false;
  $('m-stop').disabled = true;
  $('m-clear').disabled = sampling.notes.length === 0;
  for (const f of sampling.then.splice(0)) f();
}

function stop() {
  if (!sampling.id) return;
  post(modelStop(sampling.id));
  $('m-sample-status').textContent = `${sampling.notes.length} tokens sampled; stopped.`;
  done();
}

/**
 * Ends the sampling under way: with `forget` (a new window) its notes go too and the worker is told to
 * stop; without (a new worker, which has no sampling), only the controls are reset.
 */
export function endSampling(forget) {
  if (sampling.id && forget) post(modelStop(sampling.id));
  if (sampling.id) done();
  if (forget) {
    sampling.notes = [];
    $('m-sample-status').textContent = '';
    $('m-clear').disabled = true;
  }
}
