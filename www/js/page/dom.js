// Owns nothing: the DOM helpers every module uses (an element of index.html by its id; canvas text size).
/** An element of index.html by its id (any kind: an input, a select, a canvas …). @type {(id: string) => any} */
export const $ = (id) => document.getElementById(id);

/** The elements `selector` matches, as an array of HTMLElements. @type {(selector: string, within?: ParentNode) => HTMLElement[]} */
export const all = (selector, within = document) => [.../** @type {NodeListOf<HTMLElement>} */ (within.querySelectorAll(selector))];

/** Canvas text size: `px` on the page, at least 14 px on a slide (legible on a projector at 1280 × 720). */
export function textPx(px) {
  return document.body.dataset.modelSlide ? Math.max(14, px) : px;
}

/** How much a slide's text grows with the screen, as the stylesheet's slide sizes do: 1 at 1280 × 720, half
 *  again at 1920 × 1080, three times at 3840 × 2160 (never below 1). */
export function slideTextScale() {
  return Math.max(1, Math.min(window.innerWidth / 1280, window.innerHeight / 720));
}

/** `text` split into lines of at most `width` px in the context's font, breaking between words. */
export function wrapLines(ctx, text, width) {
  // Spaces, tabs and line breaks separate words; a no-break space ("98 %") does not.
  const lines = [];
  let line = '';
  for (const word of text.split(/[ \t\r\n]+/)) {
    const next = line ? `${line} ${word}` : word;
    if (line && ctx.measureText(next).width > width) { lines.push(line); line = word; } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}
