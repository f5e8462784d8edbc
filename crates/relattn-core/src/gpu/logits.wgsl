// Attention logits of a chunk of query rows for a range of heads, in one pass:
//
//     C[i, j] = q_i · k_j                                   (content, a tiled QKᵀ)
//     S[i, j] = P[i, row(j − i)]                            (relative: the small (rows, R) product P = Q·Tᵀ
//                                                           read by index, never an n×n×d_head tensor)
//     E[i, j] = (C + S) · scale                             (scaled: 1/sqrt(d_head), 1 or the model's own)
//
// With DISTANCE_BIAS (ALiBi, T5) the relative term is the head's bias by distance, added after the scale:
// S[i, j] = bias[h, j − i + n − 1], E = C · scale + S (the host reads no table: R = 0, ZERO_EDGE).
// With C2P and P2C (DeBERTa, crates/relattn-core/src/positions/deberta.rs) the relative term is the disentangled
// terms, each read at the pair's one table row r(i, j) (the host's row by distance, in the head-terms buffer):
// S[i, j] = P[i, r(i, j)] + P2[j, r(i, j)], P = Q·K_rᵀ (c2p, rows × R), P2 = K·Q_rᵀ (p2c, n × R, from p2_at in
// P's buffer), either term alone without the other's flag; E = (C + S) · scale, scale 1/sqrt(d_head·(1 + terms)).
// With SOFTCAP (Gemma 2), after the scale and any bias and before the masks:
//
//     E[i, j] ← c · tanh(E[i, j] / c)                       (c = softcap; tanh's argument clamped to ±10,
//                                                           where tanh is ±1 in f32 already, so that no
//                                                           implementation forms e^(2x) past f32's range)
//
// row(d) is the table layout of relattn::positions::table::RelTable: row = d − min inside min..=max; beyond it Shaw
// clips to the edge row (flag ZERO_EDGE off) and the Music Transformer reads zero (ZERO_EDGE on) or clips.
// For the Music Transformer this gather IS the skew: the skew's sliced (i, j) cell is q_i · E_r[row(j − i)]
// (src/positions/music.rs proves it on the CPU); causal Music shows S = 0 above the diagonal (flag ZERO_ABOVE).
//
// Masked cells (j > i under CAUSAL, |j − i| ≥ window under WINDOW, or a padding key) are written as 0 here: WGSL lets a compiler assume no
// infinities, so −∞ never travels through the GPU; softmax.wgsl recomputes the same mask, and the host
// writes −∞ into the logits it shows.
//
// Rows: the chunk holds queries i0 .. i0 + rows of heads h0 .. h0 + (grid z). Outputs are (z, rows, n).
// Tiling as in matmul.wgsl: a 16×16 workgroup computes a 64×64 block, 4×4 cells per invocation.
// Grid: x = ceil(n / 64), y = ceil(rows / 64), z = heads in the chunk.

struct Params {
    rows: u32, n: u32, dh: u32, inner: u32,    // rows in the chunk, keys, head width, h·d_head (Q's and K's row length)
    i0: u32, h0: u32, r: u32, flags: u32,      // first query, first head, table rows R, flags: see below
    tmin: i32, scale: f32, v_stride: u32, window: u32,  // v_stride: attend.wgsl's, unused here; window: WINDOW's
    softcap: f32, sink_at: u32, dv: u32, inner_v: u32,  // softcap: SOFTCAP's c; sink_at, dv, inner_v: attend.wgsl's, unused here
    p2_at: u32, _pad0: u32, _pad1: u32, _pad2: u32,     // p2_at: where P2 starts in prel (P2C)
}
// Mirrored in Rust by kernels.rs's RowsParams, field by field (its tests compare the two); attend.wgsl takes the same struct.
// Flags tested here: WRITE_CONTENT, WRITE_RELATIVE, ZERO_EDGE, ZERO_ABOVE, CAUSAL, NO_CONTENT, DISTANCE_BIAS, WINDOW, SOFTCAP, C2P, P2C (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // (n, h·d_head): all heads' queries
@group(0) @binding(2) var<storage, read> k: array<f32>;         // (n, h·d_head)
@group(0) @binding(3) var<storage, read> prel: array<f32>;      // (z, rows, R): P = Q·Tᵀ; then from p2_at (z, n, R): P2 (P2C)
@group(0) @binding(4) var<storage, read> key_mask: array<u32>;  // (n): 0 = padding
@group(0) @binding(5) var<storage, read_write> content: array<f32>;   // (z, rows, n)
@group(0) @binding(6) var<storage, read_write> relative: array<f32>;  // (z, rows, n)
@group(0) @binding(7) var<storage, read_write> logits: array<f32>;    // (z, rows, n)
// The head terms: the bias by distance (h, 2n − 1) first with DISTANCE_BIAS, DeBERTa's table row by distance
// (2n − 1, element j − i + n − 1, as f32) first with C2P or P2C.
@group(0) @binding(8) var<storage, read> terms: array<f32>;

const BLOCK: u32 = 64u;
const STEP: u32 = 16u;
var<workgroup> tile_q: array<array<f32, 64>, 16>;   // [c][row]
var<workgroup> tile_k: array<array<f32, 64>, 16>;   // [c][key]

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tid = lid.y * 16u + lid.x;
    let row0 = wid.y * BLOCK;             // rows in the chunk
    let key0 = wid.x * BLOCK;
    let z = wid.z;
    let col0 = (p.h0 + z) * p.dh;         // this head's columns in Q and K

    // 4×4 register block as four vectors: accA.b is row lid.y + 16A, column lid.x + 16b.
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let steps = (p.dh + STEP - 1u) / STEP;
    for (var t = 0u; t < steps; t = t + 1u) {
        for (var e = 0u; e < 4u; e = e + 1u) {
            let idx = tid + e * 256u;
            let c = t * STEP + idx % STEP;  // head column, fastest
            let rr = idx / STEP;            // row (of Q) or key (of K) in the block
            var vq = 0.0;
            if (row0 + rr < p.rows && c < p.dh) {
                vq = q[(p.i0 + row0 + rr) * p.inner + col0 + c];
            }
            tile_q[idx % STEP][rr] = vq;
            var vk = 0.0;
            if (key0 + rr < p.n && c < p.dh) {
                vk = k[(key0 + rr) * p.inner + col0 + c];
            }
            tile_k[idx % STEP][rr] = vk;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < STEP; kk = kk + 1u) {
            let bv = vec4<f32>(tile_k[kk][lid.x], tile_k[kk][lid.x + 16u], tile_k[kk][lid.x + 32u], tile_k[kk][lid.x + 48u]);
            acc0 = acc0 + tile_q[kk][lid.y] * bv;
            acc1 = acc1 + tile_q[kk][lid.y + 16u] * bv;
            acc2 = acc2 + tile_q[kk][lid.y + 32u] * bv;
            acc3 = acc3 + tile_q[kk][lid.y + 48u] * bv;
        }
        workgroupBarrier();
    }

    var acc = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var a = 0u; a < 4u; a = a + 1u) {
        for (var b = 0u; b < 4u; b = b + 1u) {
            let i = row0 + lid.y + 16u * a;
            let j = key0 + lid.x + 16u * b;
            if (i < p.rows && j < p.n) {
                store(z, i, j, acc[a][b]);
            }
        }
    }
}

/// e soft-capped at ±c: c·tanh(e / c).
fn soft_cap(c: f32, e: f32) -> f32 {
    return c * tanh(clamp(e / c, -10.0, 10.0));
}

/// DeBERTa's c2p + p2c of the chunk's row i and key j at distance j − i = dist: P[i, r] + P2[j, r] (each only
/// with its flag), r = r(i, j) from the head terms.
fn disentangled(z: u32, i: u32, j: u32, dist: i32) -> f32 {
    let r = u32(terms[u32(dist + i32(p.n) - 1)]);
    var s = 0.0;
    if ((p.flags & C2P) != 0u) {
        s = prel[(z * p.rows + i) * p.r + r];
    }
    if ((p.flags & P2C) != 0u) {
        s = s + prel[p.p2_at + (z * p.n + j) * p.r + r];
    }
    return s;
}

/// The epilogue of one cell: relative term by index, scale, soft-cap, mask, stores.
fn store(z: u32, i: u32, j: u32, qk: f32) {
    let content_logit = select(qk, 0.0, (p.flags & NO_CONTENT) != 0u);
    let qi = p.i0 + i;                              // absolute query position
    let dist = i32(j) - i32(qi);                    // j − i (queries and keys have equal length)
    let deberta = (p.flags & C2P) != 0u || (p.flags & P2C) != 0u;
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
    if (deberta) {
        rel = disentangled(z, i, j, dist);
    } else if (reads) {
        rel = prel[(z * p.rows + i) * p.r + u32(r)];
    }
    if ((p.flags & ZERO_ABOVE) != 0u && dist > 0) {
        rel = 0.0;
    }
    let outside = (p.flags & WINDOW) != 0u && u32(abs(dist)) >= p.window;
    let masked = ((p.flags & CAUSAL) != 0u && dist > 0) || outside || key_mask[j] == 0u;
    var e = (content_logit + rel) * p.scale;
    if ((p.flags & DISTANCE_BIAS) != 0u) {
        rel = terms[(p.h0 + z) * (2u * p.n - 1u) + u32(dist + i32(p.n) - 1)];
        e = content_logit * p.scale + rel;
    }
    if ((p.flags & SOFTCAP) != 0u) {
        e = soft_cap(p.softcap, e);
    }
    if (masked) {
        e = 0.0;
    }
    let o = (z * p.rows + i) * p.n + j;
    if ((p.flags & WRITE_CONTENT) != 0u) {
        content[o] = content_logit;
    }
    if ((p.flags & WRITE_RELATIVE) != 0u) {
        relative[o] = rel;
    }
    logits[o] = e;
}
