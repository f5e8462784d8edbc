// Owns the status line and the footer: the "computing…" indicator, where the trace was computed (and why not
// on the GPU asked for), the compute stages' times and the drawing time.
import { $ } from './dom.js';

export function setBusy(busy) {
  $('busy').hidden = !busy;
  if (busy) $('busy-text').textContent = 'computing…';
}

/** What the worker is computing now, while busy (a layer held on demand takes seconds per head). */
export function showProgress(text) {
  $('busy-text').textContent = text;
}

// The footer names where the trace was computed and, when the GPU asked for was not used, why; with
// Backend = WebGPU that reason is also an inline error under the control (the view is the CPU's).
export function showBackend(b) {
  if (!b) return;
  // The reason is said quietly (a CPU without WebGPU is normal), on the footer's one line; all of it on hover.
  const note = document.createElement('span');
  note.className = 'note';
  note.textContent = b.note ? `— ${b.note}` : '';
  $('backend').replaceChildren(b.name, b.note ? ' ' : '', note);
  $('backend').title = b.note ? `${b.name} — ${b.note}` : b.name;
  $('backend').dataset.name = b.onGpu ? 'webgpu' : 'cpu';
  $('err-backend-mode').textContent = b.mode === 'webgpu' && b.note ? `${b.note} (computed on the CPU instead)` : '';
}

// Milliseconds of each compute stage (crates/relattn-core/src/timing.rs StageTimes::named). The CPU's are measured per head and
// summed over heads (CPU time: heads may run in parallel), with "logits" = QKᵀ + relative + scale+mask; the
// GPU's are each stage submitted alone and waited for, the logits one fused kernel (no parts).
const STAGE_LABELS = { content_logits: 'QKᵀ', relative_logits: 'relative', scale_mask: 'scale+mask' };

export function showStageTimes(stageTimes, onGpu) {
  const el = $('stage-times');
  if (!stageTimes.length) {
    // A layer held on demand: its forward pass ran fused, one pass a head, with no stage to time apart.
    el.textContent = `${onGpu ? 'GPU' : 'CPU'} forward pass fused (no per-stage times); the head shown computed stage by stage when shown`;
    el.title = '';
    return;
  }
  const ms = Object.fromEntries(stageTimes.map((t) => [t.name, t.ms]));
  const f = (v) => `${v.toFixed(2)} ms`;
  const parts = Object.keys(STAGE_LABELS).filter((n) => n in ms).map((n) => `${STAGE_LABELS[n]} ${f(ms[n])}`);
  el.textContent = `${onGpu ? 'GPU stages' : 'CPU stages (Σ heads)'}: projections ${f(ms.projections)} · logits ${f(ms.logits)}${parts.length ? ` (${parts.join(', ')})` : ''} · softmax ${f(ms.softmax)} · values ${f(ms.values)} · output ${f(ms.output)}`;
  el.title = (onGpu ? 'Time of each stage on the GPU, each submitted alone and waited for. '
    : 'Compute time of each stage on the CPU, summed over heads and batch (CPU time, not wall time). ')
    + 'logits = QKᵀ + relative logits (gather or skew) + scale and mask; values = αV + the value term; output = the output projection.';
}

/** The compute timings, the figures' drawing time and the worker's wasm memory (bytes; it never shrinks). */
export function showTimings(timings, drawMs, memory) {
  const parts = timings.map((t) => `${t.name} ${t.ms.toFixed(1)} ms`);
  const draw = drawMs.reduce((a, [, ms]) => a + ms, 0);
  $('timings').textContent = `compute: ${parts.join(' · ')} · draw (all figures) ${draw.toFixed(0)} ms · worker memory ${(memory / 2 ** 20).toFixed(0)} MiB`;
}
