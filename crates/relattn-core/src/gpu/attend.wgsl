// One chunk of query rows of a head, attended in one kernel: the output z with no (rows, n) logits or
// weights, for a forward that keeps nothing (a trace's stages come from logits.wgsl, softmax.wgsl,
// buckets.wgsl and matmul.wgsl). The same online softmax as the CPU's src/attention/fused/:
//
//     e_ij = (q_i · k_j + P[i, row(j − i)]) / sqrt(d_head)          visible keys only (CAUSAL, key_mask)
//     m'   = max(m, max_{j in tile} e_ij),   γ = exp(m − m')          per tile of TK keys (γ = 0 before any key)
//     l    ← γ l + Σ_j exp(e_ij − m')
//     z    ← γ z + Σ_j exp(e_ij − m') (v_j + w^V[row(j − i)])         w^V only with REL_V: Shaw's a^V as
//                                                                   Σ_j α_ij a^V_ij, equal to B·w^V
//     out_i = z / l                                                  zeros when no key is visible
//
// With DISTANCE_BIAS (ALiBi, T5): e_ij = q_i · k_j / sqrt(d_head) + bias[h, j − i + n − 1] (no table: R = 0).
//
// row(d) as in logits.wgsl (ZERO_EDGE: beyond the table reads nothing, else the edge row); no −∞ is ever
// formed (a flag says whether a row has seen a visible key). Each invocation owns one query row and keeps
// q_i and z_i in private arrays of MAX_DH floats: heads wider than that take the unfused kernels. The
// workgroup loads each tile of K and V rows into shared memory once for its 64 rows.
// Grid: x = ceil(rows / 64), y = heads in the chunk. Writes its rows of the heads' columns of `heads` (n, d).

struct Params {
    rows: u32, n: u32, dh: u32, d: u32,        // rows in the chunk, keys, head width, model width
    i0: u32, h0: u32, r: u32, flags: u32,      // first query, first head, table rows R, flags: see below
    tmin: i32, scale: f32, v_stride: u32, _pad0: u32,   // smallest distance, 1/sqrt(d_head), w^V's per-head stride (0: shared)
}
// Mirrored in Rust by kernels.rs's RowsParams, field by field (its tests compare the two); logits.wgsl takes the same struct.
// Flags tested here: ZERO_EDGE, CAUSAL, NO_CONTENT, REL_V, DISTANCE_BIAS (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // (n, d): all heads' queries
@group(0) @binding(2) var<storage, read> k: array<f32>;         // (n, d)
@group(0) @binding(3) var<storage, read> v: array<f32>;         // (n, d)
@group(0) @binding(4) var<storage, read> prel: array<f32>;      // (z, rows, R): P = Q·Tᵀ
@group(0) @binding(5) var<storage, read> key_mask: array<u32>;  // (n): 0 = padding
@group(0) @binding(6) var<storage, read> rel_v: array<f32>;     // (1 or h, R, d_head): w^V
@group(0) @binding(7) var<storage, read_write> heads: array<f32>;   // (n, d): the heads concatenated
@group(0) @binding(8) var<storage, read> dbias: array<f32>;         // (h, 2n − 1): bias by distance, DISTANCE_BIAS

const ROWS: u32 = 64u;     // query rows per workgroup, one per invocation
const TK: u32 = 32u;       // keys per shared tile
const MAX_DH: u32 = 64u;   // widest head (kernels.rs: ATTEND_MAX_DH)
var<workgroup> tile_k: array<array<f32, 64>, 32>;   // [key][c], 8 KiB
var<workgroup> tile_v: array<array<f32, 64>, 32>;   // [key][c], 8 KiB

/// The table row distance `dist` reads, or −1 for none (ZERO_EDGE beyond the table).
fn table_row(dist: i32) -> i32 {
    let last = i32(p.r) - 1;
    let r = dist - p.tmin;
    if (r >= 0 && r <= last) {
        return r;
    }
    if ((p.flags & ZERO_EDGE) != 0u) {
        return -1;
    }
    return clamp(r, 0, last);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x * ROWS + lid.x;          // row in the chunk
    let z = wid.y;
    let col0 = (p.h0 + z) * p.dh;          // this head's columns
    let in_chunk = i < p.rows;
    let qi = p.i0 + i;                     // absolute query position
    var qv: array<f32, 64>;
    var acc: array<f32, 64>;
    for (var c = 0u; c < MAX_DH; c = c + 1u) {
        qv[c] = 0.0;
        acc[c] = 0.0;
        if (in_chunk && c < p.dh) {
            qv[c] = q[qi * p.d + col0 + c];
        }
    }
    var m = 0.0;
    var l = 0.0;
    var seen = false;
    // Keys the workgroup's last row can see (the same for every invocation: barriers stay uniform).
    var keys = p.n;
    if ((p.flags & CAUSAL) != 0u) {
        keys = min(p.n, p.i0 + min(wid.x * ROWS + ROWS, p.rows));
    }
    let v_table = (p.h0 + z) * p.v_stride;
    for (var t0 = 0u; t0 < keys; t0 = t0 + TK) {
        for (var idx = lid.x; idx < TK * MAX_DH; idx = idx + ROWS) {
            let kk = idx / MAX_DH;
            let c = idx % MAX_DH;
            let j = t0 + kk;
            var vk = 0.0;
            var vv = 0.0;
            if (j < p.n && c < p.dh) {
                vk = k[j * p.d + col0 + c];
                vv = v[j * p.d + col0 + c];
            }
            tile_k[kk][c] = vk;
            tile_v[kk][c] = vv;
        }
        workgroupBarrier();
        if (in_chunk) {
            var e: array<f32, 32>;
            var tile_max = m;
            var found = false;
            for (var kk = 0u; kk < TK; kk = kk + 1u) {
                let j = t0 + kk;
                e[kk] = 0.0;
                if (j < p.n && key_mask[j] != 0u && !((p.flags & CAUSAL) != 0u && j > qi)) {
                    var dot = 0.0;
                    if ((p.flags & NO_CONTENT) == 0u) {
                        for (var c = 0u; c < p.dh; c = c + 1u) {
                            dot = dot + qv[c] * tile_k[kk][c];
                        }
                    }
                    let row = table_row(i32(j) - i32(qi));
                    var rel = 0.0;
                    if (row >= 0) {
                        rel = prel[(z * p.rows + i) * p.r + u32(row)];
                    }
                    var ek = (dot + rel) * p.scale;
                    if ((p.flags & DISTANCE_BIAS) != 0u) {
                        ek = dot * p.scale + dbias[(p.h0 + z) * (2u * p.n - 1u) + j + p.n - 1u - qi];
                    }
                    e[kk] = ek;
                    if (!(seen || found) || ek > tile_max) {
                        tile_max = ek;
                    }
                    found = true;
                }
            }
            if (found) {
                var gamma = 0.0;
                if (seen) {
                    gamma = exp(m - tile_max);
                }
                m = tile_max;
                seen = true;
                l = l * gamma;
                for (var c = 0u; c < p.dh; c = c + 1u) {
                    acc[c] = acc[c] * gamma;
                }
                for (var kk = 0u; kk < TK; kk = kk + 1u) {
                    let j = t0 + kk;
                    if (j < p.n && key_mask[j] != 0u && !((p.flags & CAUSAL) != 0u && j > qi)) {
                        let w = exp(e[kk] - m);
                        l = l + w;
                        let row = table_row(i32(j) - i32(qi));
                        let with_rel_v = (p.flags & REL_V) != 0u && row >= 0;
                        for (var c = 0u; c < p.dh; c = c + 1u) {
                            var add = tile_v[kk][c];
                            if (with_rel_v) {
                                add = add + rel_v[v_table + u32(row) * p.dh + c];
                            }
                            acc[c] = acc[c] + w * add;
                        }
                    }
                }
            }
        }
        workgroupBarrier();
    }
    if (in_chunk) {
        var inv = 0.0;
        if (l > 0.0) {
            inv = 1.0 / l;
        }
        for (var c = 0u; c < p.dh; c = c + 1u) {
            heads[qi * p.d + col0 + c] = acc[c] * inv;
        }
    }
}
