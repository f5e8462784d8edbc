// Owns "your own tensors": reading a picked or dropped .npz / .npy (the newest pick wins), the file in use and
// the one sent but not yet computed, its name in the toolbar, and going back to generated tensors. A head atlas
// picked or dropped is sent the same way; the worker recognises it (its member `atlas`) and answers with its
// picture (atlas/grid.js shows it), and a captured row of it is computed as a file of its own (useAtlasRow).
import { $ } from './dom.js';
import { showError } from './controls.js';
import { supersede, request } from './worker-client.js';
import { setBusy } from './status.js';

// This module's own state: no other module writes it (fileInPlay() and fileInUse() are how they read it).
const files = {
  /** The scenario file in use: { id, name, bytes, atlasRow } (atlasRow: a head atlas's captured row, else
   *  undefined), or null (generated tensors). */
  tensors: null,
  /** A file sent to the worker but not yet computed: becomes `tensors` on success, dropped on an error. */
  candidate: null,
  /** The number of the newest file pick: a file read that finishes after a newer pick (or a clear) is dropped. */
  seq: 0,
  /** Nested dragenter/dragleave events over the page (the drop hint shows while > 0). */
  dragDepth: 0,
};

// The newest pick wins: a file still being read when another is picked (or the file is cleared, or a preset
// chosen) is dropped when its bytes arrive.
export async function loadFile(file) {
  if (!file) return;
  $('err-file').textContent = '';
  const id = ++files.seq;
  supersede();
  let bytes;
  try {
    bytes = await file.arrayBuffer();
  } catch (e) {
    if (id === files.seq) { setBusy(false); showError('file', `${file.name}: cannot read: ${e.message || e}`); }
    return;
  }
  if (id !== files.seq) return;
  files.candidate = { id, name: file.name, bytes };
  $('preset').value = '';
  request();
}

/** Generated tensors again: drops the file in use and any still being read or computed. */
export function forgetFile() {
  files.seq += 1;
  files.candidate = null;
  files.tensors = null;
  $('tensors').value = '';
  showFile();
}

/** The file sent was refused (or its compute lost): the one in use before stays. */
export function dropCandidate() {
  if (files.candidate) { files.candidate = null; $('tensors').value = ''; }
}

/** The file sent was a head atlas: it is not the tensors in use (the layer shown stays); returned to be shown. */
export function acceptAtlas() {
  const atlas = files.candidate;
  files.candidate = null;
  $('tensors').value = '';
  return atlas;
}

/** Computes row `row` of the head atlas `atlas` ({ id, name, bytes }, as acceptAtlas gave it) stage by stage
 *  next, as a file of its own: it becomes the one in use once computed. */
export function useAtlasRow(atlas, row) {
  files.seq += 1;
  files.candidate = { id: files.seq, name: atlas.name, bytes: atlas.bytes, atlasRow: row };
  $('preset').value = '';
}

/** The file sent was computed: it is the one in use now. */
export function acceptCandidate() {
  if (files.candidate) { files.tensors = files.candidate; files.candidate = null; }
  showFile();
}

/** The file in use (its tensors are the ones shown), or null. */
export function fileInUse() {
  return files.tensors;
}

/** The file the next request computes from, and whose errors go next to the picker: the one sent, else the one
 * in use; null for generated tensors. */
export function fileInPlay() {
  return files.candidate || files.tensors;
}

function showFile() {
  $('tensors-name').textContent = files.tensors ? `using ${files.tensors.name}` : '';
  $('tensors-clear').hidden = !files.tensors;
}

/** Drag and drop a scenario file anywhere on the page. */
export function acceptDrops() {
  document.addEventListener('dragenter', (e) => { e.preventDefault(); files.dragDepth += 1; $('drop-hint').hidden = false; });
  document.addEventListener('dragleave', () => { files.dragDepth = Math.max(0, files.dragDepth - 1); if (!files.dragDepth) $('drop-hint').hidden = true; });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    files.dragDepth = 0; $('drop-hint').hidden = true;
    if (e.dataTransfer && e.dataTransfer.files.length) loadFile(e.dataTransfer.files[0]);
  });
}
