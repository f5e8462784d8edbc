// Owns "your own tensors": reading a picked or dropped .npz / .npy (the newest pick wins), the file in use
// (state.tensors) and the one sent but not yet computed (state.candidate), its name in the toolbar, and
// going back to generated tensors.
import { $ } from './dom.js';
import { state } from './state.js';
import { showError } from './controls.js';
import { supersede, request } from './worker-client.js';
import { setBusy } from './status.js';

// The newest pick wins: a file still being read when another is picked (or the file is cleared, or a preset
// chosen) is dropped when its bytes arrive.
export async function loadFile(file) {
  if (!file) return;
  $('err-file').textContent = '';
  const id = ++state.fileSeq;
  supersede();
  let bytes;
  try {
    bytes = await file.arrayBuffer();
  } catch (e) {
    if (id === state.fileSeq) { setBusy(false); showError('file', `${file.name}: cannot read: ${e.message || e}`); }
    return;
  }
  if (id !== state.fileSeq) return;
  state.candidate = { id, name: file.name, bytes };
  $('preset').value = '';
  request();
}

/** Generated tensors again: drops the file in use and any still being read or computed. */
export function forgetFile() {
  state.fileSeq += 1;
  state.candidate = null;
  state.tensors = null;
  $('tensors').value = '';
  showFile();
}

/** The file sent was refused (or its compute lost): the one in use before stays. */
export function dropCandidate() {
  if (state.candidate) { state.candidate = null; $('tensors').value = ''; }
}

/** The file sent was computed: it is the one in use now. */
export function acceptCandidate() {
  if (state.candidate) { state.tensors = state.candidate; state.candidate = null; }
  showFile();
}

/** The file whose errors go next to the picker: the one sent, else the one in use. */
export function fileInPlay() {
  return state.candidate || state.tensors;
}

function showFile() {
  $('tensors-name').textContent = state.tensors ? `using ${state.tensors.name}` : '';
  $('tensors-clear').hidden = !state.tensors;
}

/** Drag and drop a scenario file anywhere on the page. */
export function acceptDrops() {
  document.addEventListener('dragenter', (e) => { e.preventDefault(); state.dragDepth += 1; $('drop-hint').hidden = false; });
  document.addEventListener('dragleave', () => { state.dragDepth = Math.max(0, state.dragDepth - 1); if (!state.dragDepth) $('drop-hint').hidden = true; });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    state.dragDepth = 0; $('drop-hint').hidden = true;
    if (e.dataTransfer && e.dataTransfer.files.length) loadFile(e.dataTransfer.files[0]);
  });
}
