// @ts-check
// Builds every message between the page (page/worker-client.js, page/model/) and the worker (../worker.js,
// worker/model.js). The messages are defined once, in Rust (crates/relattn/src/protocol/: who sends what, and what
// every field means); their JavaScript types are generated from it into types/protocol.d.ts (`make protocol`), and
// `make check` type-checks this file against them (tsconfig.json): a message built here that Rust does not
// define fails the check. Every message has a `kind`.
//
// A newer compute request supersedes one still waiting in the worker; the page drops any answer whose id is
// not its newest (page/worker-client.js). Typed arrays in a result are transferred, never copied again.

/** @typedef {import('../types/protocol').ToWorker} ToWorker */
/** @typedef {import('../types/protocol').FromWorker} FromWorker */
/** @typedef {import('../types/protocol').BackendChoice} BackendChoice */
/** @typedef {import('../types/protocol').Colormaps} Colormaps */
/** @typedef {import('../types/protocol').Method} Method */
/** @typedef {import('../types/protocol').ModelWindow} ModelWindow */
/** @typedef {import('../types/protocol').ModelRequest} ModelRequest */
/** @typedef {import('../types/protocol').ModelInfo} ModelInfo */
/** @typedef {import('../types/protocol').Request} Request */
/** @typedef {import('../types/protocol').LayerOptions} LayerOptions */
/** @typedef {import('../types/protocol').LayerSource} LayerSource */
/** @typedef {import('../types/protocol').ScenarioFile} ScenarioFile */
/** @typedef {import('../types/protocol').Parts} Parts */
/** @typedef {import('../types/protocol').WorkerError} WorkerError */
/** @typedef {Extract<FromWorker, { kind: 'progress' }>} ProgressMessage */
/** @typedef {Extract<FromWorker, { kind: 'result' }>} ResultMessage */
/** @typedef {Extract<FromWorker, { kind: 'error' | 'fatal' }>} ErrorMessage */
/** @typedef {Extract<FromWorker, { kind: 'export' }>} ExportReply */
/** @typedef {Extract<FromWorker, { kind: 'cells' }>} CellsReply */
/** @typedef {Extract<FromWorker, { kind: 'readers' }>} ReadersReply */
/** @typedef {Extract<FromWorker, { kind: 'schemes' }>} SchemesReply */
/** @typedef {Extract<FromWorker, { kind: 'model-result' }>} ModelResult */
/** @typedef {Extract<FromWorker, { kind: 'model-sampled' }>} ModelSampled */
/** @typedef {Extract<FromWorker, { kind: 'model-nll' }>} NllResult */
/** @typedef {Extract<FromWorker, { kind: 'model-compare' }>} CompareResult */
/** @typedef {Extract<FromWorker, { kind: 'model-error' }>} ModelError */
/** @typedef {Extract<FromWorker, { kind: 'gpu-settled' }>} GpuSettled */
/** @typedef {Extract<FromWorker, { kind: 'atlas' }>} AtlasOpened */
/** @typedef {Extract<FromWorker, { kind: 'atlas-head' }>} AtlasHeadReply */
/** @typedef {import('../types/protocol').ToHelper} ToHelper */
/** @typedef {import('../types/protocol').FromHelper} FromHelper */
/** @typedef {import('../types/protocol').HeadsView} HeadsView */
/** @typedef {import('../types/protocol').CutPartView} CutPartView */
/** @typedef {import('../types/protocol').SchemesRequest} SchemesRequest */
/** @typedef {import('../types/protocol').SchemeView} SchemeView */
/** @typedef {import('../types/protocol').Compared} Compared */
/** @typedef {import('../types/protocol').BackendUsed} BackendUsed */
/** @typedef {import('../types/protocol').BackendShown} BackendShown */

/**
 * An Error with the wasm errors' shape ({ field, kind }, crates/relattn-wasm/src/lib.rs js_error), for the JS side's own refusals.
 * @param {string} field
 * @param {string} kind
 * @param {string} message
 */
export function typedError(field, kind, message) {
  return Object.assign(new Error(message), { field, kind });
}

/**
 * The WorkerError of an exception: a wasm error keeps its field and kind (crates/relattn-wasm/src/lib.rs js_error); anything else
 * is 'internal', under no control ('general').
 * @param {any} err
 * @returns {WorkerError}
 */
export function workerError(err) {
  const typed = err && typeof err.kind === 'string';
  return { field: typed ? err.field : 'general', kind: typed ? err.kind : 'internal', message: (err && err.message) || String(err) };
}

/**
 * The window as the wasm's ModelRequest reads it (its fields only: the wasm refuses any other), `backend` added.
 * @param {ModelWindow} w
 * @param {BackendChoice} backend
 * @returns {ModelRequest}
 */
export function windowRequest(w, backend) {
  return { ...windowOf(w), backend };
}

/**
 * The ModelWindow of a window as the page or the wasm describes it (a ModelWindow, or the WindowInfo of a
 * window run): its piece, start, length, transposition and opening chord.
 * @param {ModelWindow | import('../types/protocol').WindowInfo} w
 * @returns {ModelWindow}
 */
export function windowOf(w) {
  const m = { piece: String(w.piece), start: w.start, length: w.length, transpose: w.transpose };
  return w.opening != null ? { ...m, opening: w.opening } : m;
}

/**
 * The key of window `w` of model `kind` on `backend` (page and worker alike): another backend is another window.
 * @param {Method} kind
 * @param {ModelWindow} w
 * @param {BackendChoice} backend
 */
export function windowKey(kind, w, backend) {
  return JSON.stringify([kind, w.piece, w.opening ?? null, w.start, w.length, w.transpose, backend]);
}

// --- page → worker ---

/**
 * @param {number} id
 * @param {Request} request passed to the wasm's compute untouched
 * @param {ScenarioFile | null} file
 * @param {LayerSource | null} model
 * @param {number} batch
 * @param {number} head
 * @param {Colormaps} colormaps
 * @param {import('../types/protocol').HeadScale} headScale
 * @param {number} [workers] how many workers compute a layer held on demand (the Workers control)
 * @returns {ToWorker}
 */
export function computeRequest(id, request, file, model, batch, head, colormaps, headScale, workers = 1) {
  /** @type {ToWorker} */
  const m = { kind: 'compute', id, request, batch, head, colormaps, head_scale: headScale, workers };
  if (file) m.file = file;
  if (model) m.model = model;
  return m;
}

/** @param {number} id @returns {ToWorker} */
export function exportRequest(id) {
  return { kind: 'export', id };
}

/**
 * @param {number} id @param {number} result @param {string} stage @param {number} batch @param {number} head
 * @param {number} r0 @param {number} c0 @param {number} rows @param {number} cols
 * @returns {ToWorker}
 */
export function cellsRequest(id, result, stage, batch, head, r0, c0, rows, cols) {
  return { kind: 'cells', id, result, stage, batch, head, r0, c0, rows, cols };
}

/** @param {number} id @param {number} result @param {number} row @returns {ToWorker} */
export function readersRequest(id, result, row) {
  return { kind: 'readers', id, result, row };
}

/**
 * @param {number} id @param {LayerOptions} options @param {string[]} tokens @param {number} batch @param {number} head
 * @param {Compared} what @param {number} workers how many workers share the schemes
 * @returns {ToWorker}
 */
export function schemesRequest(id, options, tokens, batch, head, what, workers = 1) {
  return { kind: 'schemes', id, options, tokens, batch, head, what, workers };
}

/**
 * @param {number} id @param {Method} model @param {ModelWindow} window @param {number} layer @param {number} head
 * @param {number} position @param {Parts} parts @param {Colormaps} colormaps @param {BackendChoice} backend
 * @returns {ToWorker}
 */
export function modelRequest(id, model, window, layer, head, position, parts, colormaps, backend) {
  return { kind: 'model', id, model, window, layer, head, position, parts, colormaps, backend };
}

/**
 * @param {number} id @param {Method} model @param {ModelWindow} window @param {number} steps
 * @param {number} temperature @param {number} topK @param {number} topP @param {number} seed
 * @param {BackendChoice} backend
 * @returns {ToWorker}
 */
export function sampleRequest(id, model, window, steps, temperature, topK, topP, seed, backend) {
  return { kind: 'model-sample', id, model, window, sampling: { steps, temperature, top_k: topK, top_p: topP, seed }, backend };
}

/** @param {number} id @returns {ToWorker} */
export function modelStop(id) {
  return { kind: 'model-stop', id };
}

/** @param {number} id @param {ModelWindow} window @param {number} layer @param {BackendChoice} backend @returns {ToWorker} */
export function compareRequest(id, window, layer, backend) {
  return { kind: 'model-compare', id, window, layer, backend };
}

/** @param {number} id @param {string} piece @param {number} length @param {BackendChoice} backend @returns {ToWorker} */
export function nllRequest(id, piece, length, backend) {
  return { kind: 'model-nll', id, piece, length, backend };
}

/** @param {number} id @param {number} file @param {number} row @param {number} head @returns {ToWorker} */
export function atlasHeadRequest(id, file, row, head) {
  return { kind: 'atlas-head', id, file, row, head };
}

// --- worker → page ---

/** @param {number} id @param {string} text @returns {ProgressMessage} */
export function progressMessage(id, text) {
  return { kind: 'progress', id, text };
}

/**
 * @param {number} id @param {ResultMessage['info']} info @param {ResultMessage['shown']} shown
 * @param {ResultMessage['stages']} stages @param {ResultMessage['pictures']} pictures
 * @param {ResultMessage['timings']} timings @param {ResultMessage['backend']} backend @param {number} memory
 * @returns {ResultMessage}
 */
export function resultMessage(id, info, shown, stages, pictures, timings, backend, memory) {
  return { kind: 'result', id, ok: true, info, shown, stages, pictures, timings, backend, memory };
}

/**
 * Where a computation asked to run on `mode` ran, as the footer shows it, from the wasm's BackendUsed `b`: the
 * browser's name `adapter` for its adapter (better than wgpu's) when the GPU computed it and the browser gave one.
 * @param {BackendChoice} mode @param {BackendUsed} b @param {string} adapter @returns {BackendShown}
 */
export function backendShown(mode, b, adapter) {
  return { mode, onGpu: b.on_gpu, name: b.on_gpu && adapter ? `WebGPU: ${adapter}` : b.name, note: b.note, provisional: b.provisional };
}

/** @returns {GpuSettled} */
export function gpuSettled() {
  return { kind: 'gpu-settled' };
}

/** @param {number} id @param {any} err @returns {ErrorMessage} */
export function errorMessage(id, err) {
  return { kind: 'error', id, ok: false, error: workerError(err) };
}

/** @param {number} id @param {AtlasOpened['view']} view @returns {AtlasOpened} */
export function atlasOpened(id, view) {
  return { kind: 'atlas', id, view };
}

/** @param {number} id @param {AtlasHeadReply['chart']} chart @returns {AtlasHeadReply} */
export function atlasHeadReply(id, chart) {
  return { kind: 'atlas-head', id, ok: true, chart };
}

/** @param {number} id @param {any} err @returns {AtlasHeadReply} */
export function atlasHeadFailed(id, err) {
  return { kind: 'atlas-head', id, ok: false, error: workerError(err) };
}

/** @param {number} id @param {string} field @param {string} message @returns {ErrorMessage} */
export function fatalMessage(id, field, message) {
  return { kind: 'fatal', id, ok: false, error: { field, kind: 'fatal', message } };
}

/** @param {number} id @param {Uint8Array} data @returns {ExportReply} */
export function exportReply(id, data) {
  return { kind: 'export', id, ok: true, data };
}

/** @param {number} id @param {any} err @returns {ExportReply} */
export function exportFailed(id, err) {
  return { kind: 'export', id, ok: false, error: workerError(err) };
}

/** @param {number} id @param {Float32Array} values @returns {CellsReply} */
export function cellsReply(id, values) {
  return { kind: 'cells', id, ok: true, values };
}

/** @param {number} id @param {any} err @returns {CellsReply} */
export function cellsFailed(id, err) {
  return { kind: 'cells', id, ok: false, error: workerError(err) };
}

/** @param {number} id @param {Uint32Array} runs @returns {ReadersReply} */
export function readersReply(id, runs) {
  return { kind: 'readers', id, ok: true, runs };
}

/** @param {number} id @param {any} err @returns {ReadersReply} */
export function readersFailed(id, err) {
  return { kind: 'readers', id, ok: false, error: workerError(err) };
}

/** @param {number} id @param {SchemesReply['schemes']} schemes @returns {SchemesReply} */
export function schemesReply(id, schemes) {
  return { kind: 'schemes', id, ok: true, schemes };
}

/** @param {number} id @param {any} err @returns {SchemesReply} */
export function schemesFailed(id, err) {
  return { kind: 'schemes', id, ok: false, error: workerError(err) };
}

/**
 * @param {number} id @param {ModelError['of']} of the request refused @param {any} err
 * @param {ModelInfo | null} [info] the model's info, when it loaded
 * @returns {ModelError}
 */
export function modelError(id, of, err, info = null) {
  /** @type {ModelError} */
  const m = { kind: 'model-error', id, of, error: workerError(err) };
  if (info) m.info = info;
  return m;
}

/** @param {Omit<ModelResult, 'kind'>} fields @returns {ModelResult} */
export function modelResult(fields) {
  return { kind: 'model-result', ...fields };
}

/**
 * @param {number} id @param {import('../types/protocol').Sampled} sampled
 * @param {boolean} [ended] the sampling ended before its last step (no notes)
 * @returns {ModelSampled}
 */
export function modelSampled(id, sampled, ended = false) {
  return ended ? { kind: 'model-sampled', id, ...sampled, ended } : { kind: 'model-sampled', id, ...sampled };
}

/** @param {number} id @param {string} piece @param {number} length @param {NllResult['series']} series @returns {NllResult} */
export function nllResult(id, piece, length, series) {
  return { kind: 'model-nll', id, piece, length, series };
}

/** @param {number} id @param {number} layer @param {ModelWindow} window @param {CompareResult['series']} series @returns {CompareResult} */
export function compareResult(id, layer, window, series) {
  return { kind: 'model-compare', id, layer, window, series };
}

// --- the worker (the lead) ⇄ its pool's helpers (crates/relattn/src/protocol/pool.rs) ---

/** @param {WebAssembly.Module} module the lead's compiled wasm @returns {ToHelper} */
export function initJob(module) {
  return { kind: 'init', module };
}

/**
 * @param {number} job @param {Request} request @param {ScenarioFile | null} file
 * @param {[number, number] | null} heads the heads it computes, or none (it only takes rows)
 * @returns {ToHelper}
 */
export function shareJob(job, request, file, heads) {
  /** @type {ToHelper} */
  const m = { kind: 'share', job, request, heads };
  if (file) m.file = file;
  return m;
}

/** @param {number} job @param {Float32Array} concat @param {[number, number]} rows @returns {ToHelper} */
export function rowsJob(job, concat, rows) {
  return { kind: 'rows', job, concat, rows };
}

/**
 * @param {number} job @param {number} batch @param {number} head
 * @param {{ q: Float32Array, k: Float32Array, v: Float32Array }} columns the head's columns of the projections
 * @returns {ToHelper}
 */
export function cutJob(job, batch, head, { q, k, v }) {
  return { kind: 'cut', job, batch, head, q, k, v };
}

/**
 * @param {number} job @param {SchemesRequest} m the page's request @param {[number, number]} schemes the range of its
 * schemes the helper computes
 * @returns {ToHelper}
 */
export function compareJob(job, m, schemes) {
  return { kind: 'compare', job, options: m.options, tokens: m.tokens, batch: m.batch, head: m.head, what: m.what, schemes };
}

/** @param {number} job @param {HeadsView | null} part @returns {FromHelper} */
export function sharedReply(job, part) {
  return { kind: 'shared', job, part };
}

/** @param {number} job @param {Float32Array} output @returns {FromHelper} */
export function rowsReply(job, output) {
  return { kind: 'rows', job, output };
}

/** @param {number} job @param {CutPartView[]} parts @returns {FromHelper} */
export function cutReply(job, parts) {
  return { kind: 'cut', job, parts };
}

/** @param {number} job @param {SchemeView[]} schemes @returns {FromHelper} */
export function comparedReply(job, schemes) {
  return { kind: 'compared', job, schemes };
}

/** @param {number} job @param {any} err @param {boolean} fatal @returns {FromHelper} */
export function helperFailed(job, err, fatal) {
  return { kind: 'failed', job, error: workerError(err), fatal };
}
