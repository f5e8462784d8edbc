// Owns nothing: the DOM helpers every module uses (an element of index.html by its id; canvas text size).
export const $ = (id) => document.getElementById(id);

/** Canvas text size: `px` on the page, at least 14 px on a slide (legible on a projector at 1280 × 720). */
export function textPx(px) {
  return document.body.dataset.modelSlide ? Math.max(14, px) : px;
}
