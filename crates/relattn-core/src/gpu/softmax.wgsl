// Row softmax of the logits, one workgroup (64 invocations) per row, numerically stable:
//
//     α_ij = exp(e_ij − m) · (1 / Σ_j exp(e_ij − m)),   m = max_j e_ij         over the visible keys j
//
// With SINK (gpt-oss) the head's sink logit s_h is one more column of the softmax, with no key and no value:
//
//     α_ij = exp(e_ij − m) · (1 / (Σ_j exp(e_ij − m) + exp(s_h − m))),   m = max(max_j e_ij, s_h)
//
// so a row's weights sum to 1 − (the sink's share). A key is visible unless it is after the query (CAUSAL),
// outside the window (WINDOW: |j − i| ≥ window) or padding (key_mask = 0): the same mask as logits.wgsl,
// recomputed here instead of passing −∞ through the GPU. A row with no visible key gives zeros (with a sink
// too: its every exp(−∞ − s_h) is 0).
// Grid: x = rows in the chunk, y = heads in the chunk. Buffers are (z, rows, n).

struct Params {
    rows: u32, n: u32, i0: u32, flags: u32,    // flags: see below
    window: u32, h0: u32, sink_at: u32, _pad0: u32,   // WINDOW's window; the chunk's first head; SINK's s_h at terms[sink_at + h]
}
// Mirrored in Rust by kernels.rs's SoftmaxParams, field by field (its tests compare the two).
// Flags tested here: CAUSAL, WINDOW, SINK (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> key_mask: array<u32>;
@group(0) @binding(3) var<storage, read> terms: array<f32>;     // head terms: the sink logits (h) from sink_at, SINK
@group(0) @binding(4) var<storage, read_write> weights: array<f32>;

const WG: u32 = 64u;
const LOWEST: f32 = -3.4028234663852886e38;   // the lowest f32 exactly (Tint rejects -3.4028235e38)
var<workgroup> red: array<f32, 64>;
var<workgroup> seen: array<u32, 64>;

fn visible(qi: u32, j: u32) -> bool {
    let outside = (p.flags & WINDOW) != 0u && max(j, qi) - min(j, qi) >= p.window;
    return !((p.flags & CAUSAL) != 0u && j > qi) && !outside && key_mask[j] != 0u;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let qi = p.i0 + wid.x;
    let base = (wid.y * p.rows + wid.x) * p.n;

    // 1. max over the visible keys, and whether there is any.
    var m = LOWEST;
    var found = 0u;
    for (var j = t; j < p.n; j = j + WG) {
        if (visible(qi, j)) {
            m = max(m, logits[base + j]);
            found = 1u;
        }
    }
    red[t] = m;
    seen[t] = found;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (t < s) {
            red[t] = max(red[t], red[t + s]);
            seen[t] = seen[t] | seen[t + s];
        }
        workgroupBarrier();
    }
    let sink = (p.flags & SINK) != 0u;
    var s_h = 0.0;
    if (sink) {
        s_h = terms[p.sink_at + p.h0 + wid.y];
    }
    var row_max = red[0];
    if (sink) {
        row_max = max(row_max, s_h);         // red[0] is LOWEST when no key is visible
    }
    let row_any = seen[0];
    workgroupBarrier();

    // 2. Σ exp(e − max).
    var sum = 0.0;
    for (var j = t; j < p.n; j = j + WG) {
        if (visible(qi, j)) {
            sum = sum + exp(logits[base + j] - row_max);
        }
    }
    red[t] = sum;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    var total = red[0];
    if (sink) {
        total = total + exp(s_h - row_max);
    }
    let inv = 1.0 / total;

    // 3. normalise; masked keys and all-masked rows get 0.
    for (var j = t; j < p.n; j = j + WG) {
        var w = 0.0;
        if (row_any != 0u && visible(qi, j)) {
            w = exp(logits[base + j] - row_max) * inv;
        }
        weights[base + j] = w;
    }
}
