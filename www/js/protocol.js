// Owns the worker protocol: every message between the page (worker-client.js) and the worker (../worker.js),
// as JSDoc typedefs, and the small constructors both sides build them with. Every message has a `kind`.
//
//   page → worker                          worker → page
//   'compute' ComputeRequest         →     'progress' ProgressMessage (none or more), then
//                                          'result' ResultMessage | 'error' ErrorMessage
//   'export'  ExportRequest          →     'export' ExportReply
//   'cells'   CellsRequest           →     'cells'  CellsReply (exact values of a stage sent without them)
//   'readers' ReadersRequest         →     'readers' ReadersReply (the pairs that read a pinned table row)
//   'schemes' SchemesRequest         →     'schemes' SchemesReply (the six position schemes on the settings shown)
//   (a wasm abort, at any time)            'fatal'  FatalMessage (then the page replaces the worker)
//   Model mode (js/worker-model.js answers; js/model.js sends and drops stale answers by id):
//   'model'        ModelRequest      →     'model-result' ModelResult | 'model-error' ModelError
//   'model-sample' SampleRequest     →     'model-sampled' ModelSampled (one per batch of 16 tokens) | 'model-error'
//   'model-stop'   ModelStop         →     (nothing: the sampling with that id stops after its batch)
//   'model-nll'    NllRequest        →     'model-nll' NllResult | 'model-error'
//   'model-compare' CompareRequest   →     'model-compare' CompareResult | 'model-error'
//   'debug-*' test hooks (DebugMessage; tests/e2e only, the page never sends them; no reply)
//
// A newer compute request supersedes one still waiting in the worker; the page drops any answer whose id is
// not its newest (worker-client.js). Typed arrays in a result are transferred, never copied again.

/** The three backends a request may ask for. */
export const BACKENDS = ['auto', 'webgpu', 'cpu'];

/**
 * A scenario file picked or dropped on the page: computes from its tensors instead of generated ones.
 * @typedef {object} ScenarioFile
 * @property {number} id the page's pick number (part of the worker's cache key)
 * @property {string} name the file name, for messages
 * @property {ArrayBuffer} bytes the .npz / .npy bytes
 */

/**
 * What to compute. `settings` is the Rust struct `Settings` of src/web/request.rs, field for field (method, n,
 * d_model, heads, clip, seed, batch_size, causal, rel_v, per_head, tokens): controls.js builds it, the worker
 * passes it to `compute` untouched, and the wasm refuses a missing or unknown field, naming it. Numbers may be
 * NaN (an empty box): the wasm refuses them, naming the field.
 * @typedef {object} Params
 * @property {string} preset a preset name, or '' for the settings
 * @property {object} settings src/web/request.rs Settings
 * @property {ScenarioFile} [file] computes from this file (its x sets n, d_model and the batch)
 */

/** @typedef {{ sequential: string, diverging: string }} Colormaps  the colormap names of src/render.rs */

/**
 * page → worker: compute (or reuse the cached session for) these settings, then send the stages of (batch, head).
 * @typedef {object} ComputeRequest
 * @property {'compute'} kind
 * @property {number} id the page's id of these settings (worker-client.js: state.lastId)
 * @property {Params} params
 * @property {number} batch batch element shown (clamped by the worker)
 * @property {number} head head shown (clamped by the worker)
 * @property {Colormaps} colormaps
 * @property {'auto'|'webgpu'|'cpu'} backend
 */

/**
 * page → worker: the session shown, exported.
 * @typedef {object} ExportRequest
 * @property {'export'} kind
 * @property {number} id the page's export id (state.exportSeq)
 * @property {'npz'} what the whole trace as the CLI's .npz
 * @property {Colormaps} colormaps
 */

/**
 * page → worker test hooks (tests/e2e/backend.test.mjs, reliability.test.mjs dispatch them inside the worker):
 * 'debug-panic' panics in the wasm (sync), 'debug-panic-async' inside an async future, 'debug-lose-gpu'
 * destroys the GPU device, 'debug-break-pipeline' rebuilds the GPU context with `kernel`'s WGSL broken,
 * 'debug-gpu-limit' pretends the device allows only `bytes` per storage buffer binding.
 * @typedef {object} DebugMessage
 * @property {'debug-panic'|'debug-panic-async'|'debug-lose-gpu'|'debug-break-pipeline'|'debug-gpu-limit'} kind
 * @property {string} [kernel] for 'debug-break-pipeline'
 * @property {number} [bytes] for 'debug-gpu-limit'
 */

/**
 * One stage of the trace for the (batch, head) shown: the Rust `StageMeta` of src/layer/stage.rs (name, title,
 * formula, tex, x_axis, y_axis, pairs, rows_are_queries, per_head, per_batch, scale: the page spells none of
 * it), the `Cut` of src/web/session.rs (rows, cols, lo, hi) and the cut's numbers.
 * @typedef {object} Stage
 * @property {string} name the array name of the CLI's .npz (distances, rel_index, …, output)
 * @property {number} rows
 * @property {number} cols
 * @property {number} raster_rows the raster's rows: `rows`, or fewer when pooled (src/web/session.rs RASTER_SIDE)
 * @property {number} raster_cols
 * @property {boolean} has_values whether `values` came (stages of at most VALUES_CELLS cells, src/web/session.rs)
 * @property {Float32Array|null} values rows × cols, row-major (transferred); null past VALUES_CELLS: ask for
 *   the cells needed with a CellsRequest
 * @property {Uint8ClampedArray} rgba raster_rows × raster_cols pixels, the cells as coloured (transferred)
 */

/**
 * The Rust `Info` of src/web/session.rs without its stages (sent as `stages`): preset, preset_description,
 * settings (as computed: a preset's own, a file's sizes), backend { name, note }, stage_times, on_demand (the
 * stages of the head shown were computed when it was shown, on the CPU: the whole trace would not fit).
 * @typedef {object} TraceInfo
 */

/** @typedef {{ name: string, ms: number }} Timing  one measured step (total, or one compute stage) */

/**
 * Where the trace was computed: `onGpu` (the Rust BackendUsed's on_gpu), `name` (WebGPU with the adapter, or
 * the CPU), `note` (why not on the GPU asked for), `mode` (what was asked for).
 * @typedef {{ mode: string, onGpu: boolean, name: string, note: string }} BackendUsed
 */

/**
 * worker → page: the stages of a compute request.
 * @typedef {object} ResultMessage
 * @property {'result'} kind
 * @property {number} id the request's id
 * @property {true} ok
 * @property {TraceInfo} info
 * @property {{ batch: number, head: number }} shown the batch element and head the stages are cut from
 * @property {Stage[]} stages in pipeline order
 * @property {Timing[]} timings building the scenario, the trace (or the forward pass, for a layer held on demand), cutting the stages of the head shown
 * @property {BackendUsed} backend
 * @property {number} memory bytes of the worker's wasm memory after cutting the stages (it only grows)
 */

/**
 * Why a request was refused (or lost). `field` names the control to show it under ('general' when none);
 * `kind` is the Rust `ErrorKind` of src/error/mod.rs ('invalid', 'shape', 'non_finite', 'file', 'write',
 * 'too_large', 'overflow', 'gpu'), or 'stale' (asked of a result no longer held, or of none), 'internal' (any
 * other exception) or 'fatal' (the worker's wasm aborted, or was restarted before answering).
 * The page decides by `field` and `kind`, never by the message. Every failed reply carries one.
 * @typedef {object} WorkerError
 * @property {string} field
 * @property {string} kind
 * @property {string} message
 */

/** An Error with the wasm errors' shape ({ field, kind }, src/web.rs js_error), for the JS side's own refusals. */
export function typedError(field, kind, message) {
  return Object.assign(new Error(message), { field, kind });
}

/**
 * The WorkerError of an exception: a wasm error keeps its field and kind (src/web.rs js_error); anything else
 * is 'internal', under no control ('general').
 * @returns {WorkerError}
 */
export function workerError(err) {
  const typed = err && typeof err.kind === 'string';
  return { field: typed ? err.field : 'general', kind: typed ? err.kind : 'internal', message: (err && err.message) || String(err) };
}

/**
 * worker → page: a compute request refused.
 * @typedef {object} ErrorMessage
 * @property {'error'} kind
 * @property {number} id the request's id
 * @property {false} ok
 * @property {WorkerError} error
 */

/**
 * worker → page, once: its wasm instance aborted (a panic, an allocation failure); it answers nothing more.
 * @typedef {object} FatalMessage
 * @property {'fatal'} kind
 * @property {number} id the compute request in flight, 0 when none
 * @property {false} ok
 * @property {WorkerError} error with kind 'fatal', field 'file' when the request in flight computed from a file
 */

/**
 * worker → page: the answer to an ExportRequest.
 * @typedef {object} ExportReply
 * @property {'export'} kind
 * @property {number} id the request's id
 * @property {boolean} ok
 * @property {Uint8Array} [data] the file's bytes, when ok
 * @property {WorkerError} [error] why not, when not ok
 */

/**
 * worker → page: what the compute of request `id` is doing now (the busy line says it).
 * @typedef {{ kind: 'progress', id: number, text: string }} ProgressMessage
 */

/**
 * page → worker: values of stage `stage` of (batch, head) in rows r0..r0+rows, columns c0..c0+cols (at most
 * VALUES_CELLS), from the session that sent result `result` (refused as stale when it is no longer held).
 * @typedef {{ kind: 'cells', id: number, result: number, stage: string, batch: number, head: number, r0: number, c0: number, rows: number, cols: number }} CellsRequest
 */

/**
 * worker → page: the answer to a CellsRequest.
 * @typedef {{ kind: 'cells', id: number, ok: boolean, values?: Float32Array, error?: WorkerError }} CellsReply
 */

/**
 * page → worker: the pairs (i, j) that read row `row` of the relative tables, from the session that sent result
 * `result` (refused as stale when it is no longer held).
 * @typedef {{ kind: 'readers', id: number, result: number, row: number }} ReadersRequest
 */

/**
 * worker → page: the answer to a ReadersRequest: `runs` holds one range of keys per query i, lo..hi, as
 * [lo_0, hi_0, lo_1, hi_1, …] (src/positions/table.rs RelTable::readers).
 * @typedef {{ kind: 'readers', id: number, ok: boolean, runs?: Uint32Array, error?: WorkerError }} ReadersReply
 */

// --- Model mode -------------------------------------------------------------------------------------------

/** The six trained models (models/chorales-KIND.safetensors), one per position scheme; the page's model
 * select names them (index.html's #m-model, read by modelLabel). */
export const MODEL_KINDS = ['music', 'shaw', 'rope', 'alibi', 't5', 'absolute'];

/**
 * A window of a test piece, or an opening chord: the Rust `ModelRequest` of src/web/model.rs, field for field
 * but its `backend`, which the worker adds from the request's (the wasm refuses a missing or unknown field,
 * and a bad value naming its field). Numbers may be NaN (an empty box).
 * @typedef {object} ModelWindow
 * @property {string} piece BWV number, e.g. "10.7" ("" with an opening)
 * @property {string} [opening] an opening chord, soprano to bass ("C5 G4 E4 C3"): the window is that one step
 * @property {number} start first token, a multiple of 4
 * @property {number} length tokens T
 * @property {number} transpose semitones
 */

/** The window as the wasm's ModelRequest reads it, `backend` added. */
export function windowRequest(w, backend) {
  const r = { piece: String(w.piece), start: w.start, length: w.length, transpose: w.transpose, backend };
  if (w.opening != null) r.opening = w.opening;
  return r;
}

/** The key of window `w` of model `kind` on `backend` (page and worker alike): another backend is another window. */
export function windowKey(kind, w, backend) {
  return JSON.stringify([kind, w.piece, w.opening ?? null, w.start, w.length, w.transpose, backend]);
}

/**
 * page → worker: run `window` on model `model` (reusing the window last run on that model when it is the
 * same), then answer what `parts` asks for, for head (layer, head) and the note at `position`.
 * @typedef {object} ModelRequest
 * @property {'model'} kind
 * @property {number} id the page's id (state.model.lastId); only the newest is shown
 * @property {'music'|'shaw'|'rope'|'alibi'|'t5'|'absolute'} model
 * @property {ModelWindow} window
 * @property {number} layer
 * @property {number} head
 * @property {number} position the selected token of the window (its prediction is answered)
 * @property {{ window: boolean, head: boolean }} parts window: info, window and tiles; head: the head's
 *   weights and its layer's distance profiles (the page asks for what the result it shows lacks)
 * @property {Colormaps} colormaps the tiles' colormap
 * @property {'auto'|'webgpu'|'cpu'} backend where to run the window (the page's Backend, as ComputeRequest's)
 */

/**
 * One tile of the model view: head (layer, head)'s (T, T) weights as pixels, sampled down to size × size.
 * @typedef {{ layer: number, head: number, size: number, rgba: Uint8ClampedArray }} Tile
 */

/**
 * worker → page: a ModelRequest's answer. `info` (the Rust ModelInfo), `window` (WindowInfo) and `tiles`
 * only with parts.window; `values` ((T, T) f32 weights of (layer, head), row-major: row i is query i's
 * weights over keys 0..=i) and `profiles` (per head of `layer`: DistanceProfile.distribution over
 * distances −(T−1)..=0) only with parts.head; `prediction` (Prediction at `position`) always.
 * @typedef {object} ModelResult
 * @property {'model-result'} kind
 * @property {number} id
 * @property {string} model
 * @property {string} key the window's key (model, ModelWindow and backend)
 * @property {number} layer
 * @property {number} head
 * @property {number} position
 * @property {object} [info]
 * @property {object} [window]
 * @property {Tile[]} [tiles]
 * @property {Float32Array} [values] transferred
 * @property {Float64Array[]} [profiles] transferred
 * @property {object} prediction
 * @property {number} ms the worker's milliseconds for this answer (fetching and loading included)
 * @property {BackendUsed} backend where the window's forward pass ran (WindowInfo's nll.backend), as
 *   ResultMessage's
 */

/**
 * page → worker: continue the window `key` of `model` (the worker runs it first when it is not its
 * current one): `steps` tokens at `temperature` with `seed` (the Rust SampleRequest), drawn 16 at a time.
 * @typedef {object} SampleRequest
 * @property {'model-sample'} kind
 * @property {number} id the page's sampling id (model-sampling.js): a newer one, or a ModelStop, ends it
 * @property {string} model
 * @property {ModelWindow} window
 * @property {number} steps
 * @property {number} temperature
 * @property {number} top_k draw only from the K most likely tokens (0: every token)
 * @property {number} top_p draw only from the nucleus of probability P (1: every token)
 * @property {number} seed
 * @property {'auto'|'webgpu'|'cpu'} backend where to run the window when it must be (the sampling itself
 *   runs on the CPU: the key/value cache's steps have no GPU path)
 */

/** page → worker: stop the sampling `id`. @typedef {{ kind: 'model-stop', id: number }} ModelStop */

/**
 * worker → page: a batch of sampled tokens (the Rust `Sampled`: notes, drawn, remaining, ms).
 * @typedef {object} ModelSampled
 * @property {'model-sampled'} kind
 * @property {number} id the sampling's id
 * @property {object[]} notes the new tokens as Notes (token, voice, step, midi)
 * @property {number} drawn
 * @property {number} remaining 0 when done
 * @property {number} ms milliseconds of drawing this batch
 * @property {boolean} [ended] the sampling ended before its last step (stopped, superseded, or its window
 *   was run again); no notes
 */

/**
 * page → worker: NLL per position of the window (piece, start 0, `length`, transpose 0) under the music
 * and absolute models, computed on `backend`.
 * @typedef {{ kind: 'model-nll', id: number, piece: string, length: number, backend: string }} NllRequest
 */

/**
 * worker → page: the NLLs (the Rust PositionNll per model).
 * @typedef {{ kind: 'model-nll', id: number, piece: string, length: number, series: { model: string, values: number[], mean: number, ms: number }[] }} NllResult
 */

/**
 * worker → page: a model request refused (field and kind as in WorkerError; field 'model' for a model or
 * data file that could not be fetched or loaded). `of` names the request: 'model', 'model-sample', 'model-nll'.
 * A refused 'model' whose model did load carries its `info` (ModelInfo: the pieces, layers and heads to offer).
 * @typedef {{ kind: 'model-error', id: number, of: string, error: WorkerError, info?: object }} ModelError
 */

/** @typedef {ComputeRequest | ExportRequest | CellsRequest | ReadersRequest | DebugMessage | ModelRequest | SampleRequest | ModelStop | NllRequest} ToWorker */
/** @typedef {ResultMessage | ProgressMessage | ErrorMessage | FatalMessage | ExportReply | CellsReply | ReadersReply | ModelResult | ModelSampled | NllResult | ModelError} FromWorker */

// --- page side ---

/** @returns {ComputeRequest} */
export function computeRequest(id, params, batch, head, colormaps, backend) {
  return { kind: 'compute', id, params, batch, head, colormaps, backend };
}

/** @returns {ExportRequest} */
export function exportRequest(id, what, colormaps) {
  return { kind: 'export', id, what, colormaps };
}

/** @returns {CellsRequest} */
export function cellsRequest(id, result, stage, batch, head, r0, c0, rows, cols) {
  return { kind: 'cells', id, result, stage, batch, head, r0, c0, rows, cols };
}

/** @returns {ReadersRequest} */
export function readersRequest(id, result, row) {
  return { kind: 'readers', id, result, row };
}

/**
 * page → worker: the "compare schemes" view of these settings (the Rust Settings of the result shown) for
 * (batch, head): src/web/compare.rs compare_schemes.
 * @typedef {object} SchemesRequest
 * @property {'schemes'} kind
 * @property {number} id
 * @property {object} settings
 * @property {number} batch
 * @property {number} head
 */

/** @returns {SchemesRequest} */
export function schemesRequest(id, settings, batch, head) {
  return { kind: 'schemes', id, settings, batch, head };
}

// --- worker side ---

/** @returns {ProgressMessage} */
export function progressMessage(id, text) {
  return { kind: 'progress', id, text };
}

/** @returns {ResultMessage} */
export function resultMessage(id, info, shown, stages, timings, backend, memory) {
  return { kind: 'result', id, ok: true, info, shown, stages, timings, backend, memory };
}

/** @returns {ErrorMessage} */
export function errorMessage(id, err) {
  return { kind: 'error', id, ok: false, error: workerError(err) };
}

/** @returns {FatalMessage} */
export function fatalMessage(id, field, message) {
  return { kind: 'fatal', id, ok: false, error: { field, kind: 'fatal', message } };
}

/** @returns {ExportReply} */
export function exportReply(id, data) {
  return { kind: 'export', id, ok: true, data };
}

/** @returns {ExportReply} */
export function exportFailed(id, err) {
  return { kind: 'export', id, ok: false, error: workerError(err) };
}

/** @returns {CellsReply} */
export function cellsReply(id, values) {
  return { kind: 'cells', id, ok: true, values };
}

/** @returns {CellsReply} */
export function cellsFailed(id, err) {
  return { kind: 'cells', id, ok: false, error: workerError(err) };
}

/** @returns {ReadersReply} */
export function readersReply(id, runs) {
  return { kind: 'readers', id, ok: true, runs };
}

/** @returns {ReadersReply} */
export function readersFailed(id, err) {
  return { kind: 'readers', id, ok: false, error: workerError(err) };
}

/**
 * worker → page: one entry per scheme, in src/web/compare.rs ORDER: { method, label, meta (the weights
 * stage's StageMeta), cut (Cut: rows, cols, raster_rows, raster_cols, lo, hi), profile (2n − 1 shares of the
 * attention by distance, index k: distance k − (n − 1)), rgba (Uint8ClampedArray, transferred), values (the
 * weights, Float32Array, transferred; null for more than VALUES_CELLS) }; or the error.
 * @typedef {{ kind: 'schemes', id: number, ok: boolean, schemes?: object[], error?: WorkerError }} SchemesReply
 */

/** @returns {SchemesReply} */
export function schemesReply(id, schemes) {
  return { kind: 'schemes', id, ok: true, schemes };
}

/** @returns {SchemesReply} */
export function schemesFailed(id, err) {
  return { kind: 'schemes', id, ok: false, error: workerError(err) };
}

// --- Model mode ---

/** @returns {ModelRequest} */
export function modelRequest(id, model, window, layer, head, position, parts, colormaps, backend) {
  return { kind: 'model', id, model, window, layer, head, position, parts, colormaps, backend };
}

/** @returns {SampleRequest} */
export function sampleRequest(id, model, window, steps, temperature, topK, topP, seed, backend) {
  return { kind: 'model-sample', id, model, window, steps, temperature, top_k: topK, top_p: topP, seed, backend };
}

/** @returns {ModelStop} */
export function modelStop(id) {
  return { kind: 'model-stop', id };
}

/**
 * page → worker: the attention-by-distance profiles of every head of `layer` for the six models on one window.
 * @typedef {{ kind: 'model-compare', id: number, window: object, layer: number, backend: string }} CompareRequest
 */
/**
 * worker → page: per model, its profiles (one per head: the distribution over distances −(T−1)…0).
 * @typedef {{ kind: 'model-compare', id: number, layer: number, window: object, series: { model: string, profiles: Float64Array[] }[] }} CompareResult
 */

/** @returns {CompareRequest} */
export function compareRequest(id, window, layer, backend) {
  return { kind: 'model-compare', id, window, layer, backend };
}

/** @returns {NllRequest} */
export function nllRequest(id, piece, length, backend) {
  return { kind: 'model-nll', id, piece, length, backend };
}

/** @returns {ModelError} */
export function modelError(id, of, err) {
  return { kind: 'model-error', id, of, error: workerError(err) };
}
