// RoPE (Su et al. 2021): every head's queries or keys rotated by position, dst = R(φ_m) src, for the rows
// m = 0 .. n of an (n, h·d_head) projection (after any q/k norm, norm.wgsl). Pair p of a head is its components (2p, 2p + 1) (interleaved, the
// paper and GPT-J) or (p, p + d_rot/2) (HALF_SPLIT: GPT-NeoX, Llama), p < d_rot/2:
//
//     dst_a = src_a cos φ_mp − src_b sin φ_mp
//     dst_b = src_b cos φ_mp + src_a sin φ_mp            components d_rot .. d_head of a head are copied
//
// cos and sin (n, d_rot/2) come from the host (relattn::positions::rope::Rope::table, the CPU's own
// values), so both backends rotate by the same numbers. One invocation per output element.
// Grid: x = ceil(h·d_head / 64), y = n.

struct Params {
    n: u32, inner: u32, dh: u32, d_rot: u32,   // rows, h·d_head (the row length), head width, rotated components per head
    flags: u32, _pad0: u32, _pad1: u32, _pad2: u32,
}
// Mirrored in Rust by kernels.rs's RopeParams, field by field (its tests compare the two).
// Flags tested here: HALF_SPLIT (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;        // (n, h·d_head)
@group(0) @binding(2) var<storage, read> cos_t: array<f32>;      // (n, d_rot/2)
@group(0) @binding(3) var<storage, read> sin_t: array<f32>;      // (n, d_rot/2)
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;  // (n, h·d_head)

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let m = gid.y;
    if (col >= p.inner || m >= p.n) {
        return;
    }
    let c = col % p.dh;                   // component within the head
    let head0 = col - c;                  // the head's first column
    let at = m * p.inner;
    if (c >= p.d_rot) {
        dst[at + col] = src[at + col];
        return;
    }
    let half = p.d_rot / 2u;
    // The pair (a, b) this component belongs to, and whether it is the pair's first.
    var pair = c / 2u;
    var a = 2u * pair;
    var b = a + 1u;
    if ((p.flags & HALF_SPLIT) != 0u) {
        pair = c % half;
        a = pair;
        b = pair + half;
    }
    let cs = cos_t[m * half + pair];
    let sn = sin_t[m * half + pair];
    let xa = src[at + head0 + a];
    let xb = src[at + head0 + b];
    if (c == a) {
        dst[at + col] = xa * cs - xb * sn;
    } else {
        dst[at + col] = xb * cs + xa * sn;
    }
}
