// Each position scheme's colour, the same in every chart that shows several schemes (compare.js: every
// scheme on the settings shown; model/panels.js: the six models' NLL by position and their slide) and as in docs/src/models.md's
// figures (train/export.py: matplotlib's tab10 blue, orange, green, red, purple and grey, by scheme name).
export const SCHEME_COLORS = { music: '#1f6fc4', shaw: '#e07000', rope: '#2a9d3a', alibi: '#d62728', t5: '#8a4fbf', absolute: '#555', deberta: '#b8860b', bert_relative: '#e377c2', transformer_xl: '#17becf' };
