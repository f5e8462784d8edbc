// Owns the tooltip's box (<div id="tooltip">): showing lines in it beside a point, placing it within the
// viewport, hiding it. What it says is its callers': a cell's numbers (tooltip.js), a chart's values at a
// distance (compare.js, model/panels.js).
import { $ } from './dom.js';

export function hideTip() {
  $('tooltip').hidden = true;
}

/** Shows the page's tooltip at page point (pageX, pageY): `title` in bold, then `lines`, as text nodes only. */
export function showTip(title, lines, pageX, pageY) {
  const tip = $('tooltip');
  const b = document.createElement('b');
  b.textContent = title;
  tip.replaceChildren(b, ...lines.flatMap((l) => [document.createElement('br'), document.createTextNode(l)]));
  tip.hidden = false;
  placeTip(pageX, pageY);
}

/** Puts the tooltip beside the point, flipped to the other side at the viewport's edges and never outside it. */
export function placeTip(pageX, pageY) {
  const tip = $('tooltip');
  const pad = 14;
  const [minX, minY] = [window.scrollX + 4, window.scrollY + 4];
  const [maxX, maxY] = [window.scrollX + window.innerWidth - tip.offsetWidth - 4, window.scrollY + window.innerHeight - tip.offsetHeight - 4];
  let left = pageX + pad;
  let top = pageY + pad;
  if (left > maxX) left = pageX - tip.offsetWidth - pad;
  if (top > maxY) top = pageY - tip.offsetHeight - pad;
  tip.style.left = `${Math.max(minX, Math.min(left, maxX))}px`;
  tip.style.top = `${Math.max(minY, Math.min(top, maxY))}px`;
}
