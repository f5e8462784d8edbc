// Owns number formatting for the tooltip, the pinned line and the screen reader: three significant digits,
// integers as they are, −∞ for masked logits.
export function fmt(v) {
  if (v === -Infinity) return '−∞';
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  if (a >= 0.01 && a < 1000) return v.toFixed(Math.max(0, 2 - Math.floor(Math.log10(a))));
  return v.toExponential(2);
}
