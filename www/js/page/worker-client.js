// Owns the worker's lifecycle and its requests: starting it, ids, superseding, exports, and replacing it after
// its wasm aborts. The one rule against stale answers lives here: every change of the settings takes a new id
// (supersede) at once, before its debounced request is sent, and only an answer carrying the newest id
// (isLatest) is passed on to the page; an older one is for superseded settings and touches neither the
// controls nor the view. (A render already under way is stopped by its render token: stage-views.js.)
import { state } from './state.js';
import { computeRequest, exportRequest, cellsRequest, readersRequest, schemesRequest, atlasHeadRequest, typedError } from '../shared/protocol.js';
import { readParams, colormaps, headScale, backendMode, workers, showError } from './controls.js';
import { modelLayer, shownSlice } from './source.js';
import { setBusy, showProgress } from './status.js';

// This module's own state: no other module writes it (post() and paramsStarted() are how they use it).
const client = {
  /** The Worker computing traces; replaced by a fresh one after its wasm aborts. */
  worker: null,
  /** The id of the newest settings: taken at every change, before its (debounced) request is sent. Only a
   *  result or error with this id is shown; anything older is for superseded settings and is dropped. */
  lastId: 0,
  /** The id of the last compute request posted to the worker. */
  sentId: 0,
  /** The id of the last result or error taken (shown). */
  answeredId: 0,
  /** The timer of the debounced request (typing in a number field). */
  debounce: 0,
  /** The id of the last export, cells, readers or schemes question. */
  askSeq: 0,
  /** Those questions waiting for the worker: id → callback(reply). */
  asked: new Map(),
  /** True once Parameters mode has sent its first request (a page opened in Model mode computes none). */
  paramsStarted: false,
  /** The file a request computes from ({ id, name, bytes }) or null: file.js fileInPlay, given to startWorker. */
  file: () => null,
  /** The id of the file the last compute request posted computed from (null: none). */
  sentFile: null,
  /** The id of the file whose result the controls show (its options synced into them), or null. */
  shownFile: null,
};

/** Sends `msg` (a ToWorker message, built by ../shared/protocol.js) to the worker. */
export function post(msg) {
  client.worker.postMessage(msg);
}

/** True once Parameters mode has sent its first request. */
export function paramsStarted() {
  return client.paramsStarted;
}

/**
 * Starts the worker. `h.result(msg)` gets the newest settings' ResultMessage, `h.refused(error)` their
 * WorkerError, `h.fatal(error, latest)` a FatalMessage's error when it is the newest settings' (latest) or
 * in no request; `h.model(msg)` every Model-mode message ('model-*': model/mode.js checks their ids),
 * `h.atlas(msg)` the newest settings' AtlasOpened (their file was a head atlas),
 * `h.restarted()` is called after the worker was replaced and `h.gpuSettled()` once WebGPU's set-up has ended;
 * each request computes from the file `h.file()` gives (null: none).
 */
export function startWorker(h) {
  client.file = h.file;
  spawn(h);
}

function spawn(handlers) {
  client.worker = new Worker(new URL('../../worker.js', import.meta.url), { type: 'module' });
  // Assigned (not addEventListener): tests/e2e/reliability.test.mjs wraps the onmessage setter to delay answers.
  client.worker.onmessage = (e) => receive(e.data, handlers);
  client.worker.onerror = (e) => showError('general', `worker failed: ${e.message || e}`);
}

/** True for the newest settings' id: the only answer the page may show. */
export function isLatest(id) {
  return id === client.lastId;
}

/** New settings: any answer still on its way is for old ones from now on. */
export function supersede() {
  client.lastId += 1;
  setBusy(true);
}

/** New settings, computed now. */
export function request() {
  client.paramsStarted = true;
  supersede();
  send();
}

/** New settings, computed once the typing pauses (200 ms). */
export function requestSoon() {
  supersede();
  clearTimeout(client.debounce);
  client.debounce = setTimeout(send, 200);
}

/** Sends the controls as they are now, under the newest id. */
function send() {
  const file = client.file();
  // crates/relattn/src/protocol/layer_view.rs Request: a file's sizes replace the options' (the preset is not used).
  const { options, tokens } = readParams(!!file);
  // A file's first request (new_file) takes a captured layer's own options, not the controls, which still show
  // the previous layer's.
  const request = { backend: backendMode(), file_name: file ? file.name : '', options, tokens, new_file: !!file && file.id !== client.shownFile };
  // A head atlas's captured row, shown stage by stage.
  if (file && file.atlasRow != null) request.atlas_row = file.atlasRow;
  const { batch, head } = shownSlice();
  client.sentId = client.lastId;
  client.sentFile = file ? file.id : null;
  post(computeRequest(client.lastId, request, file ? { id: file.id, bytes: file.bytes } : null, modelLayer(), batch, head, colormaps(), headScale(), workers()));
}

/**
 * Sends the worker the question `request(id)` builds; resolves to `pick(reply)`, rejects with the reply's
 * error (or when the worker is restarted: restart() fails every question waiting).
 */
function ask(request, pick) {
  const id = ++client.askSeq;
  return new Promise((ok, fail) => {
    client.asked.set(id, (r) => (r.ok ? ok(pick(r)) : fail(typedError(r.error.field, r.error.kind, r.error.message))));
    post(request(id));
  });
}

/** Asks the worker for an export of the session shown; resolves to its bytes. */
export function askExport() {
  return ask((id) => exportRequest(id), (r) => r.data);
}

/**
 * Asks the worker for the values of `stage` of the result shown, rows r0..r0+rows and columns c0..c0+cols (a
 * stage sent without its values); resolves to a Float32Array (row-major), rejects when the result shown has
 * changed or the worker was restarted.
 */
export function askCells(stage, r0, c0, rows, cols) {
  const cur = state.current;
  return ask((id) => cellsRequest(id, cur.id, stage, cur.shown.batch, cur.shown.head, r0, c0, rows, cols), (r) => r.values);
}

/**
 * Asks the worker for the pairs of the result shown that read table row `row`; resolves to a Uint32Array of
 * one key range per query, [lo_0, hi_0, lo_1, hi_1, …]; rejects as askCells does.
 */
export function askReaders(row) {
  const cur = state.current;
  return ask((id) => readersRequest(id, cur.id, row), (r) => r.runs);
}

/** Asks the worker for every scheme on `options` (and the sentence's `tokens`) for (batch, head), their
 *  weights or their position terms (`what`), shared by the Workers control's workers; resolves to SchemesReply's schemes. */
export function askSchemes(options, tokens, batch, head, what) {
  return ask((id) => schemesRequest(id, options, tokens, batch, head, what, workers()), (r) => r.schemes);
}

/** Asks the worker for row `row`, head `head`'s full-size profile of the atlas it opened from file `file` (the
 *  page's file id); resolves to a HeadChart. */
export function askAtlasHead(file, row, head) {
  return ask((id) => atlasHeadRequest(id, file, row, head), (r) => r.chart);
}

/** @param {import('../shared/protocol.js').FromWorker} msg */
function receive(msg, handlers) {
  switch (msg.kind) {
    case 'export': case 'cells': case 'readers': case 'schemes': case 'atlas-head': {
      const cb = client.asked.get(msg.id);
      client.asked.delete(msg.id);
      if (cb) cb(msg);
      return;
    }
    case 'fatal': restart(msg, handlers); return;
    case 'gpu-settled': handlers.gpuSettled(); return;
    case 'progress': if (isLatest(msg.id)) showProgress(msg.text); return;
    case 'model-result': case 'model-error': case 'model-sampled': case 'model-nll': case 'model-compare':
      if (handlers.model) handlers.model(msg);
      return;
    case 'atlas':
      // The newest settings' file is a head atlas: shown beside the layer, which stays.
      if (!isLatest(msg.id)) return;
      client.answeredId = msg.id;
      setBusy(false);
      handlers.atlas(msg);
      return;
    case 'result':
    case 'error':
      if (!isLatest(msg.id)) return; // superseded settings: the controls and the view are not touched
      client.answeredId = msg.id;
      if (msg.kind === 'result') client.shownFile = client.sentFile;
      setBusy(false);
      if (msg.kind === 'result') handlers.result(msg); else handlers.refused(msg.error);
      return;
    default:
  }
}

// The worker's wasm instance aborted (a panic, sync or async): it is discarded and a fresh worker started;
// the view on screen (the last good result) stays and pending exports fail. An abort while computing the
// latest settings is their error, next to its control (the file picker for a file); one outside any
// compute (id 0) is shown under the controls; one for superseded settings is not shown. The latest settings,
// when the dead worker had them and had not answered, are sent again to the fresh one.
function restart(msg, handlers) {
  client.worker.terminate();
  for (const [id, cb] of client.asked) { client.asked.delete(id); cb({ ok: false, error: { field: 'general', kind: 'fatal', message: 'the worker was restarted' } }); }
  spawn(handlers);
  if (handlers.restarted) handlers.restarted();
  if (isLatest(msg.id)) {
    client.answeredId = msg.id;
    setBusy(false);
    handlers.fatal(msg.error, true);
    return;
  }
  if (!msg.id) handlers.fatal(msg.error, false);
  if (client.sentId === client.lastId && client.answeredId !== client.lastId) send();
}
