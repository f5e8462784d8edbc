// The page: controls → worker (computes the trace) → one figure per stage. Each figure's frame is drawn by
// the wasm module with plotters (draw_frame); its cells are blitted from the RGBA buffer the worker made.
// This module owns only the wiring: it loads the page's wasm, restores the URL, starts the worker, turns
// the worker's answers into what is shown, and connects every control to what it does. Model mode (the
// trained models) is wired by model/mode.js; a page opened in Model mode starts its worker and its first request
// before loading its own wasm, so that the first arcs come soon. It is the top floor: every module is below it.
import { $ } from './dom.js';
import { state } from './state.js';
import { PARAMS, tokens, clearErrors, showError, showRefusal, syncControls, setTheme, optionsFollowMethod, methodChosen } from './controls.js';
import { startWorker, request, requestSoon, paramsStarted } from './worker-client.js';
import { loadUi, watchUi, drawFailed } from './ui-wasm.js';
import { show, redraw, stopRendering, showLastGood } from './stage-views.js';
import { clearPins, restorePins, keepPinsWithin } from './tooltip.js';
import { modelLayer, useControls, sliceShown } from './source.js';
import { showBackend } from './status.js';
import { EMBED, applyURL, saveURL, copyLink } from './url.js';
import { enterPresent, exitPresent, presentKeys, attachPresentControls, resultDrawn, drawPresent } from './present.js';
import { exportNpz } from './export.js';
import { loadFile, forgetFile, dropCandidate, acceptCandidate, acceptAtlas, fileInPlay, acceptDrops } from './file.js';
import { initAtlas, showAtlas, redrawAtlas } from './atlas/grid.js';
import { initAtlasExports } from './atlas/export.js';
import { wireModel, setMode, onModelMessage, onWorkerRestart, modelGpuSettled, recolour, firstShown, applyModelEmbed, modelRequest } from './model/mode.js';
import { wireTour } from './tour.js';
import { windowName } from './model/form.js';
import { wantSlide } from './model/slides.js';
import { initCompare, refreshCompare, presentCompare, isCompareSlide } from './compare.js';

/** A value of the link the page does not have, said next to its control with every result (applyURL) until
 *  that control is changed. */
let urlNotice = null;

/** The newest settings' result (worker-client.js passes no other): it becomes what is shown. */
function showResult(msg) {
  sliceShown();
  acceptCandidate();
  clearErrors();
  if (urlNotice) showError(urlNotice.field, urlNotice.message);
  syncControls(msg.info, msg.shown);
  const src = modelLayer();
  if (src) {
    const w = src.window;
    $('preset-desc').textContent = `The trained model “${src.kind}”, layer ${src.layer}, on ${windowName(w)} (tokens ${w.start}…${w.start + w.length - 1}, transposed ${w.transpose}): `
      + 'every stage of its heads on the real hidden states. Any control leaves it.';
  }
  // The stages, then the lecture's pictures of the scheme: shown, presented, linked and exported alike.
  const stages = [...msg.stages, ...msg.pictures];
  const byName = Object.fromEntries(stages.map((s) => [s.name, s]));
  // The labels of the positions: the sentence x was built from, or a captured layer's tokens.
  const toks = msg.info.tokens;
  const n = msg.info.options.n;
  const shown = {
    id: msg.id, info: msg.info, shown: msg.shown, stages, byName, tokens: toks.length === n ? toks : null,
    timings: msg.timings, stageTimes: msg.info.stage_times, onGpu: msg.backend.onGpu, backend: msg.backend, memory: msg.memory,
  };
  keepPinsWithin(n);
  show(shown).then(resultDrawn).catch(drawFailed);
  showBackend(msg.backend);
  refreshCompare();
  saveURL();
}

/**
 * WebGPU's set-up has ended: the view shown, when it was computed on the CPU meanwhile (provisional), is asked
 * for again and computed where the set-up decided; the other mode's is when it is shown again (setMode).
 */
function gpuSettled() {
  if (state.mode === 'model') modelGpuSettled();
  else if (state.current && state.current.backend.provisional) request();
}

/** The newest settings' file was a head atlas: its grid is shown; the view and the controls stay. */
function showAtlasFile(msg) {
  clearErrors();
  showAtlas(msg, acceptAtlas());
}

/** The newest settings were refused: the view stays, the error goes next to its control. */
function showRefused(error) {
  const file = fileInPlay();
  dropCandidate();
  showRefusal(error, file);
}

/** The worker's wasm aborted (it is being replaced): while computing the newest settings, or in no request. */
function showFatal(error, latest) {
  if (latest) dropCandidate();
  showError(error.field, error.message);
}

async function main() {
  const handlers = { result: showResult, refused: showRefused, fatal: showFatal, atlas: showAtlasFile, model: onModelMessage, restarted: onWorkerRestart, gpuSettled, file: fileInPlay };
  // Parameters mode's first request waits for the page's own wasm (it draws the figures).
  /** @type {(value?: unknown) => void} */
  let uiLoaded = () => {};
  const uiReady = new Promise((ok) => { uiLoaded = ok; });
  const startParams = () => uiReady.then(() => request());
  wireModel(startParams);
  wireTour();
  initCompare();
  initAtlas();
  initAtlasExports();
  const modelFirst = new URLSearchParams(location.search).get('mode') === 'model';
  if (EMBED) document.body.classList.add(modelFirst ? 'embed-model' : 'embed');
  if (EMBED && modelFirst) applyModelEmbed(EMBED);
  // The URL's controls, form, source, pins and Model mode's slide, before the first request; the stage to
  // present (Parameters mode).
  const restore = () => {
    const r = applyURL();
    wantSlide(r.slide);
    urlNotice = r.notice;
    if (urlNotice) $(urlNotice.field).addEventListener('change', () => { urlNotice = null; }, { once: true });
    restorePins(r.pin, r.row);
    return r.present;
  };
  let presentStage = null;
  if (modelFirst) {
    restore();
    startWorker(handlers);
    setMode('model', startParams);
    // The page's own wasm (Parameters mode's figures) is compiled once the first arcs are drawn, not
    // competing with the worker for the CPU before (at most 5 s later).
    await Promise.race([firstShown, new Promise((ok) => setTimeout(ok, 5000))]);
  }
  watchUi(stopRendering, showLastGood);
  await loadUi();
  const sel = $('preset');
  for (const { name, description } of state.ui.presets()) sel.append(Object.assign(new Option(`${name} — ${description}`, name), { title: description }));
  if (!modelFirst) {
    presentStage = restore();
    startWorker(handlers);
    setMode('params', null);
  }
  state.ui.set_colormaps($('seq').value, $('div').value);
  state.ui.set_theme($('theme').value === 'dark');
  $('controls').addEventListener('submit', (e) => e.preventDefault());

  sel.addEventListener('change', () => {
    clearPins(); $('head').value = '0'; $('batch').value = '0';
    useControls();
    // A preset replaces any file, also one still being read or computed.
    forgetFile();
    request();
  });
  // Before the request its change makes: the method sets per-head tables.
  $('method').addEventListener('change', methodChosen);
  for (const id of PARAMS) {
    const el = $(id);
    const custom = () => { sel.value = ''; useControls(); };
    if (el.type === 'number') el.addEventListener('input', () => { custom(); requestSoon(); });
    else el.addEventListener('change', () => { custom(); request(); });
  }
  optionsFollowMethod();
  for (const id of ['head', 'batch']) $(id).addEventListener('change', request);
  // The Backend (in the toolbar) is both modes': the mode shown computes again, the other when shown (setMode).
  $('backend-mode').addEventListener('change', () => (state.mode === 'model' ? modelRequest() : request()));
  // The Workers: the same layer (bit for bit), its stages cut by the new pool.
  $('workers').addEventListener('change', () => { if (state.mode !== 'model') request(); });
  $('sentence').addEventListener('input', () => {
    useControls();
    const t = tokens();
    if (t.length > 0) { sel.value = ''; $('n').value = String(t.length); }
    requestSoon();
  });
  $('head-scale').addEventListener('change', () => { if (state.mode !== 'model') request(); });
  for (const id of ['seq', 'div']) {
    $(id).addEventListener('change', () => {
      state.ui.set_colormaps($('seq').value, $('div').value);
      redrawAtlas();
      if (state.mode === 'model') { recolour(); if (paramsStarted()) request(); } else request();
    });
  }
  $('theme').addEventListener('change', () => {
    setTheme($('theme').value);
    redrawAtlas();
    saveURL();
    redraw().catch(drawFailed);
  });
  $('copy-link').addEventListener('click', copyLink);
  $('present-btn').addEventListener('click', () => enterPresent(0));
  $('export-npz').addEventListener('click', exportNpz);
  $('tensors').addEventListener('change', () => { useControls(); loadFile($('tensors').files[0]); });
  $('tensors-clear').addEventListener('click', () => { forgetFile(); request(); });
  document.addEventListener('keydown', presentKeys);
  attachPresentControls();
  document.addEventListener('fullscreenchange', () => { if (!document.fullscreenElement && state.presentedAt !== null) exitPresent(); });
  // A slide is drawn again for a new screen (a projector plugged in): its size and its text's.
  let resized = 0;
  window.addEventListener('resize', () => { clearTimeout(resized); resized = setTimeout(() => { if (state.presentedAt !== null) drawPresent(); }, 100); });
  acceptDrops();
  if (EMBED) {
    let t = 0;
    window.addEventListener('resize', () => { clearTimeout(t); t = setTimeout(() => redraw().catch(drawFailed), 100); });
  }
  if (presentStage) {
    // Presentation restored from the URL: start on that stage once the first result is in.
    const once = setInterval(() => {
      if (!state.current) return;
      clearInterval(once);
      // The comparison's slides (compare.js), or a stage's.
      if (isCompareSlide(presentStage)) { presentCompare(presentStage); return; }
      const at = state.current.stages.findIndex((s) => s.name === presentStage);
      if (at >= 0) { enterPresent(at); return; }
      // A stage the layer does not have (a mistyped or stale link): said under the controls with every result
      // until a control is changed, and no slide.
      const names = [...state.current.stages.map((s) => s.name), 'compare', 'compare_chart'].join(', ');
      const notice = { field: 'general', message: `The link's present=${presentStage} is not one of this layer's stages and pictures (${names}): the page is shown, no slide.` };
      urlNotice = urlNotice || notice;
      $('controls').addEventListener('change', () => { if (urlNotice === notice) urlNotice = null; }, { once: true });
      showError(urlNotice.field, urlNotice.message);
    }, 50);
  }
  uiLoaded();
  if (state.mode === 'params') request();
}

main().catch((e) => showError('general', `could not start: ${e.message || e}`));
