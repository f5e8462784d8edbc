// RMS norms of the projected queries or keys (Qwen3, Gemma 3: each head's d_head components; OLMo 2: the whole
// projection's h·d_head), in place, after the projections and before any rotation (rope.wgsl), as the CPU's
// relattn::layer::forward::projections:
//
//     a_c ← a_c · (1 / sqrt(Σ_{c' in group} a_c'² / G + ε)) · γ_c            over each group of G = |γ| components
//
// One workgroup (64 invocations) per group of a row: each sums the squares of its components, a tree adds the 64
// partial sums, then each scales its components. ε is Config::norm_eps.
// Grid: x = h·d_head / G groups per row, y = n rows.

struct Params {
    n: u32, inner: u32, group: u32, eps: f32,  // rows, h·d_head (the row length), G = γ's length, ε
}
// Mirrored in Rust by kernels.rs's NormParams, field by field (its tests compare the two).
// Flags tested here: none.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;    // (n, h·d_head): Q or K, normed in place
@group(0) @binding(2) var<storage, read> gamma: array<f32>;      // (G): γ

const WG: u32 = 64u;
var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let base = wid.y * p.inner + wid.x * p.group;   // the group's first component
    var sum = 0.0;
    for (var c = t; c < p.group; c = c + WG) {
        let v = a[base + c];
        sum = sum + v * v;
    }
    red[t] = sum;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    let inv = 1.0 / sqrt(red[0] / f32(p.group) + p.eps);
    for (var c = t; c < p.group; c = c + WG) {
        a[base + c] = a[base + c] * inv * gamma[c];
    }
}
