// Attention logits of a chunk of query rows for a range of heads, in one pass:
//
//     C[i, j] = q_i · k_j                                   (content, a 16×16-tiled QKᵀ)
//     S[i, j] = P[i, row(j − i)]                            (relative: the small (rows, R) product P = Q·Tᵀ
//                                                           read by index, never an n×n×d_head tensor)
//     E[i, j] = (C + S) / sqrt(d_head)                      (scaled)
//
// row(d) is the table layout of relattn::relpos::RelTable: row = d − min inside min..=max; beyond it Shaw
// clips to the edge row (flag ZERO_EDGE off) and the Music Transformer reads zero (ZERO_EDGE on) or clips.
// For the Music Transformer this gather IS the skew: the skew's sliced (i, j) cell is q_i · E_r[row(j − i)]
// (src/skew.rs proves it on the CPU); causal Music shows S = 0 above the diagonal (flag ZERO_ABOVE).
//
// Masked cells (j > i under CAUSAL, or a padding key) are written as 0 here: WGSL lets a compiler assume no
// infinities, so −∞ never travels through the GPU; softmax.wgsl recomputes the same mask, and the host
// writes −∞ into the logits it shows.
//
// Rows: the chunk holds queries i0 .. i0 + rows of heads h0 .. h0 + (grid z). Outputs are (z, rows, n).
// Grid: x = ceil(n / 16), y = ceil(rows / 16), z = heads in the chunk.

struct Params {
    rows: u32, n: u32, dh: u32, d: u32,        // rows in the chunk, keys, head width, model width
    i0: u32, h0: u32, r: u32, flags: u32,      // first query, first head, table rows R, flags below
    tmin: i32, scale: f32, _pad0: u32, _pad1: u32,
}
const WRITE_CONTENT: u32 = 1u;   // keep C (trace)
const WRITE_RELATIVE: u32 = 2u;  // keep S (trace)
const ZERO_EDGE: u32 = 4u;       // distances beyond the table read zero (else the edge row)
const ZERO_ABOVE: u32 = 8u;      // S = 0 where j > i (causal Music)
const CAUSAL: u32 = 16u;         // mask j > i

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // (n, d): all heads' queries
@group(0) @binding(2) var<storage, read> k: array<f32>;         // (n, d)
@group(0) @binding(3) var<storage, read> prel: array<f32>;      // (z, rows, R): P = Q·Tᵀ
@group(0) @binding(4) var<storage, read> key_mask: array<u32>;  // (n): 0 = padding
@group(0) @binding(5) var<storage, read_write> content: array<f32>;   // (z, rows, n)
@group(0) @binding(6) var<storage, read_write> relative: array<f32>;  // (z, rows, n)
@group(0) @binding(7) var<storage, read_write> logits: array<f32>;    // (z, rows, n)

const TILE: u32 = 16u;
var<workgroup> tile_q: array<array<f32, 16>, 16>;   // [row][c]
var<workgroup> tile_k: array<array<f32, 16>, 16>;   // [c][key]

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.y * TILE + lid.y;          // row in the chunk
    let j = wid.x * TILE + lid.x;          // key
    let z = wid.z;
    let col0 = (p.h0 + z) * p.dh;          // this head's columns in Q and K

    var acc = 0.0;
    let steps = (p.dh + TILE - 1u) / TILE;
    for (var t = 0u; t < steps; t = t + 1u) {
        let cq = t * TILE + lid.x;
        var vq = 0.0;
        if (i < p.rows && cq < p.dh) {
            vq = q[(p.i0 + i) * p.d + col0 + cq];
        }
        tile_q[lid.y][lid.x] = vq;
        let ck = t * TILE + lid.y;
        var vk = 0.0;
        if (ck < p.dh && j < p.n) {
            vk = k[j * p.d + col0 + ck];
        }
        tile_k[lid.y][lid.x] = vk;
        workgroupBarrier();
        for (var c = 0u; c < TILE; c = c + 1u) {
            acc = acc + tile_q[lid.y][c] * tile_k[c][lid.x];
        }
        workgroupBarrier();
    }
    if (i >= p.rows || j >= p.n) {
        return;
    }

    let qi = p.i0 + i;                              // absolute query position
    let dist = i32(j) - i32(qi);                    // j − i (queries and keys have equal length)
    let last = i32(p.r) - 1;
    var r = dist - p.tmin;                          // row inside the table
    var reads = true;
    if (r < 0 || r > last) {
        if ((p.flags & ZERO_EDGE) != 0u) {
            reads = false;
        } else {
            r = clamp(r, 0, last);
        }
    }
    var rel = 0.0;
    if (reads) {
        rel = prel[(z * p.rows + i) * p.r + u32(r)];
    }
    if ((p.flags & ZERO_ABOVE) != 0u && dist > 0) {
        rel = 0.0;
    }
    let masked = ((p.flags & CAUSAL) != 0u && dist > 0) || key_mask[j] == 0u;
    var e = (acc + rel) * p.scale;
    if (masked) {
        e = 0.0;
    }
    let o = (z * p.rows + i) * p.n + j;
    if ((p.flags & WRITE_CONTENT) != 0u) {
        content[o] = acc;
    }
    if ((p.flags & WRITE_RELATIVE) != 0u) {
        relative[o] = rel;
    }
    logits[o] = e;
}
