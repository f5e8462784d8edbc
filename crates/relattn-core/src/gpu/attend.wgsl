// One chunk of query rows of a head, attended in one kernel: the output z with no (rows, n) logits or
// weights, for a forward that keeps nothing (a trace's stages come from logits.wgsl, softmax.wgsl,
// buckets.wgsl and matmul.wgsl). The same online softmax as the CPU's src/attention/fused/:
//
//     e_ij = (q_i · k_j + P[i, row(j − i)]) · scale                  visible keys only (CAUSAL, WINDOW, key_mask)
//     e_ij ← c · tanh(e_ij / c)                                      with SOFTCAP (as logits.wgsl: tanh's
//                                                                    argument clamped to ±10)
//     m'   = max(m, max_{j in tile} e_ij),   γ = exp(m − m')          per tile of TK keys (γ = 0 before any key)
//     l    ← γ l + Σ_j exp(e_ij − m')
//     z    ← γ z + Σ_j exp(e_ij − m') (v_j + w^V[row(j − i)])         w^V only with REL_V: Shaw's a^V as
//                                                                   Σ_j α_ij a^V_ij, equal to B·w^V
//     out_i = z / l                                                  zeros when no key is visible
//
// scale is 1/sqrt(d_head), 1 or the model's own. With DISTANCE_BIAS (ALiBi, T5): e_ij = q_i · k_j · scale +
// bias[h, j − i + n − 1] (no table: R = 0). With C2P and P2C (DeBERTa) the relative term is c2p + p2c,
// P[i, r(i, j)] + P2[j, r(i, j)] (P = Q·K_rᵀ, P2 = K·Q_rᵀ from p2_at in P's buffer, r(i, j) the host's row by
// distance in the head terms; either alone without the other's flag), before the scale 1/sqrt(d_head·(1 + terms)). With SINK (gpt-oss) the head's sink logit s_h is a column of the
// softmax with no value: the row starts as if it had seen it, m = s_h and l = exp(s_h − m) = 1 (z = 0), so
// out_i = Σ_j exp(e_ij − m) v_j / (Σ_j exp(e_ij − m) + exp(s_h − m)). WINDOW masks keys at |j − i| ≥ window;
// a workgroup walks only the tiles its rows' windows reach.
// row(d) as in logits.wgsl (ZERO_EDGE: beyond the table reads nothing, else the edge row); no −∞ is ever
// formed (a flag says whether a row has seen a visible key).
//
// Flash attention's tiling: a workgroup of 256 invocations takes ROWS = 32 query rows of one head and walks
// the keys in tiles of TK = 32. Each tile of K, then of V, is loaded into workgroup memory once for all 32
// rows. Invocation t works on row t % 32 as lane t / 32 of 8: a warp (or any group of 32 consecutive
// invocations) is one lane of 32 rows, so its reads of the K and V tiles are broadcasts and its reads and
// writes of the per-row arrays are consecutive. Per tile, in four phases between barriers:
//   1. K tile (TK keys × MAX_DH, zeros past d_head or n) into `tile_kv`;
//   2. scores: each lane the keys lane·4 .. lane·4 + 3 of the tile for its row (q_i in registers, MAX_DH
//      wide, zeros past d_head), kept in registers; its maximum over them into `part_max`;
//   3. V tile (TK keys × MAX_DH, zeros past d_v or n) into `tile_kv`; the row's tile maximum from the 8 lanes' parts; the running m, l, z rescaled;
//      the lane's 4 weights exp(e − m) into `tile_p` (0 for keys it cannot see);
//   4. z ← z + Σ_j p_ij v_j over the tile, each lane for its 8 columns (lane·8 ..), l ← l + Σ_j p_ij.
// Every lane of a row computes the same m and l (the same values in the same order). Queries and keys are
// d_head wide, values and the output d_v (DeepSeek's multi-head latent attention: d_v ≠ d_head); heads with
// either wider than MAX_DH take the unfused kernels.
// Grid: x = ceil(rows / ROWS), y = heads in the chunk. Writes its rows of the heads' columns of `heads` (n, h·d_v).

struct Params {
    rows: u32, n: u32, dh: u32, inner: u32,    // rows in the chunk, keys, head width d_head, h·d_head (Q's and K's row length)
    i0: u32, h0: u32, r: u32, flags: u32,      // first query, first head, table rows R, flags: see below
    tmin: i32, scale: f32, v_stride: u32, window: u32,  // smallest distance, the scale, w^V's per-head stride (0: shared), WINDOW's
    softcap: f32, sink_at: u32, dv: u32, inner_v: u32,  // SOFTCAP's c; SINK's s_h at terms[sink_at + h]; d_v, h·d_v (V's row length)
    p2_at: u32, _pad0: u32, _pad1: u32, _pad2: u32,     // p2_at: where P2 starts in prel (P2C)
}
// Mirrored in Rust by kernels.rs's RowsParams, field by field (its tests compare the two); logits.wgsl takes the same struct.
// Flags tested here: ZERO_EDGE, CAUSAL, NO_CONTENT, REL_V, DISTANCE_BIAS, WINDOW, SOFTCAP, SINK, C2P, P2C (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // (n, h·d_head): all heads' queries
@group(0) @binding(2) var<storage, read> k: array<f32>;         // (n, h·d_head)
@group(0) @binding(3) var<storage, read> v: array<f32>;         // (n, h·d_v)
@group(0) @binding(4) var<storage, read> prel: array<f32>;      // (z, rows, R): P = Q·Tᵀ; then from p2_at (z, n, R): P2 (P2C)
@group(0) @binding(5) var<storage, read> key_mask: array<u32>;  // (n): 0 = padding
@group(0) @binding(6) var<storage, read> rel_v: array<f32>;     // (1 or h, R, d_v): w^V
@group(0) @binding(7) var<storage, read_write> heads: array<f32>;   // (n, h·d_v): the heads concatenated
// The heads' own logit terms in one buffer (WebGPU's default allows 8 storage buffers a stage): the bias by
// distance (h, 2n − 1) from 0 with DISTANCE_BIAS, or DeBERTa's table row by distance (2n − 1, element
// j − i + n − 1, as f32) from 0 with C2P or P2C; then the sink logits (h) from sink_at with SINK.
@group(0) @binding(8) var<storage, read> terms: array<f32>;

const ROWS: u32 = 32u;      // query rows per workgroup (kernels.rs: ATTEND_ROWS)
const LANES: u32 = 8u;      // invocations per row: 256 in all
const TK: u32 = 32u;        // keys per tile
const KEYS: u32 = 4u;       // keys of a tile per lane (TK / LANES)
const MAX_DH: u32 = 64u;    // widest d_head and d_v (kernels.rs: ATTEND_MAX_DH)
const DH4: u32 = 16u;       // MAX_DH in vec4s
const COLS4: u32 = 2u;      // output columns per lane in vec4s (MAX_DH / LANES / 4)
// 8 KiB + 4 KiB + 1 KiB + 1 KiB: within WebGPU's default 16 KiB of workgroup memory.
var<workgroup> tile_kv: array<array<vec4<f32>, 16>, 32>;   // [key][c / 4]: the tile's K, then its V
var<workgroup> tile_p: array<array<f32, 32>, 32>;          // [key][row]: the tile's weights exp(e − m)
var<workgroup> part_max: array<array<f32, 32>, 8>;         // [lane][row]: a lane's largest visible score
var<workgroup> part_seen: array<array<u32, 32>, 8>;        // [lane][row]: 1 when the lane saw a visible key

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

/// DeBERTa's c2p + p2c of the chunk's row i (query qi) and key j: P[i, r] + P2[j, r] (each only with its flag),
/// r = r(i, j) from the head terms.
fn disentangled(z: u32, i: u32, qi: u32, j: u32) -> f32 {
    let r = u32(terms[j + p.n - 1u - qi]);
    var s = 0.0;
    if ((p.flags & C2P) != 0u) {
        s = prel[(z * p.rows + i) * p.r + r];
    }
    if ((p.flags & P2C) != 0u) {
        s = s + prel[p.p2_at + (z * p.n + j) * p.r + r];
    }
    return s;
}

/// Components c .. c + 3 of row j of head `hd`'s columns (zeros past its width or n): `which` 0 reads k
/// (rows of h·d_head, heads d_head wide), 1 reads v (rows of h·d_v, heads d_v wide).
fn load4(which: u32, j: u32, hd: u32, c: u32) -> vec4<f32> {
    var out = vec4<f32>(0.0);
    if (j < p.n) {
        for (var e = 0u; e < 4u; e = e + 1u) {
            if (which == 0u) {
                if (c + e < p.dh) {
                    out[e] = k[j * p.inner + hd * p.dh + c + e];
                }
            } else if (c + e < p.dv) {
                out[e] = v[j * p.inner_v + hd * p.dv + c + e];
            }
        }
    }
    return out;
}

/// Components c .. c + 3 of w^V's row at `at` (zeros past d_v).
fn rel_v4(at: u32, c: u32) -> vec4<f32> {
    var out = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e = e + 1u) {
        if (c + e < p.dv) {
            out[e] = rel_v[at + c + e];
        }
    }
    return out;
}

/// Stores components c .. c + 3 of `val` into row qi of `heads`, head `hd`'s columns (those below d_v).
fn store4(qi: u32, hd: u32, c: u32, val: vec4<f32>) {
    for (var e = 0u; e < 4u; e = e + 1u) {
        if (c + e < p.dv) {
            heads[qi * p.inner_v + hd * p.dv + c + e] = val[e];
        }
    }
}

/// The K (`which` 0) or V (1) rows t0 .. t0 + TK of head `hd` into `tile_kv`, two vec4s per invocation.
fn stage(which: u32, t0: u32, hd: u32, tid: u32) {
    for (var idx = tid; idx < TK * DH4; idx = idx + ROWS * LANES) {
        let kk = idx / DH4;
        let c4 = idx % DH4;
        tile_kv[kk][c4] = load4(which, t0 + kk, hd, 4u * c4);
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = tid % ROWS;                  // row in the workgroup
    let lane = tid / ROWS;                 // 0 .. LANES
    let i = wid.x * ROWS + row;            // row in the chunk
    let z = wid.y;
    let hd = p.h0 + z;                     // this head
    let col0 = hd * p.dh;                  // its columns of Q
    let in_chunk = i < p.rows;
    let qi = p.i0 + i;                     // absolute query position
    let causal = (p.flags & CAUSAL) != 0u;
    // q_i in registers (zeros past d_head; none outside the chunk).
    var qv: array<vec4<f32>, 16>;
    for (var c4 = 0u; c4 < DH4; c4 = c4 + 1u) {
        qv[c4] = vec4<f32>(0.0);
        if (in_chunk && (p.flags & NO_CONTENT) == 0u) {
            for (var e = 0u; e < 4u; e = e + 1u) {
                let c = 4u * c4 + e;
                if (c < p.dh) {
                    qv[c4][e] = q[qi * p.inner + col0 + c];
                }
            }
        }
    }
    let c_a = lane * 4u * COLS4;            // z_i's columns c_a .. c_a + 7, in two vec4s
    var acc_a = vec4<f32>(0.0);
    var acc_b = vec4<f32>(0.0);
    var m = 0.0;
    var l = 0.0;
    var seen = false;
    if ((p.flags & SINK) != 0u) {
        m = terms[p.sink_at + p.h0 + z];   // the sink's column, seen first: exp(s_h − m) = 1, no value
        l = 1.0;
        seen = true;
    }
    let windowed = (p.flags & WINDOW) != 0u;
    let deberta = (p.flags & C2P) != 0u || (p.flags & P2C) != 0u;
    // The keys the workgroup's rows can see, from the first row's first to the last row's last (the same for
    // every invocation: barriers stay uniform): under CAUSAL none after the last row, under WINDOW none
    // before first − (window − 1) nor (without CAUSAL) from last + window on; the first tile starts at a
    // multiple of TK.
    let first = p.i0 + wid.x * ROWS;
    let last = p.i0 + min(wid.x * ROWS + ROWS, p.rows) - 1u;
    var keys = p.n;
    if (causal) {
        keys = min(p.n, last + 1u);
    }
    var start = 0u;
    if (windowed) {
        keys = min(keys, last + p.window);
        if (first + 1u > p.window) {
            start = (first + 1u - p.window) / TK * TK;
        }
    }
    let v_table = (p.h0 + z) * p.v_stride;
    let bias_row = (p.h0 + z) * (2u * p.n - 1u);
    for (var t0 = start; t0 < keys; t0 = t0 + TK) {
        // 1. The K tile.
        stage(0u, t0, hd, tid);
        workgroupBarrier();
        // 2. This lane's scores, and their maximum.
        var e: array<f32, 4>;
        var vis: array<bool, 4>;
        var lane_max = 0.0;
        var lane_seen = false;
        for (var s = 0u; s < KEYS; s = s + 1u) {
            let kk = lane * KEYS + s;
            let j = t0 + kk;
            e[s] = 0.0;
            let outside = windowed && max(j, qi) - min(j, qi) >= p.window;
            vis[s] = in_chunk && j < p.n && key_mask[j] != 0u && !(causal && j > qi) && !outside;
            if (vis[s]) {
                var dot4 = vec4<f32>(0.0);
                for (var c4 = 0u; c4 < DH4; c4 = c4 + 1u) {
                    dot4 = dot4 + qv[c4] * tile_kv[kk][c4];
                }
                let dot = (dot4.x + dot4.y) + (dot4.z + dot4.w);
                var ek = 0.0;
                if ((p.flags & DISTANCE_BIAS) != 0u) {
                    ek = dot * p.scale + terms[bias_row + j + p.n - 1u - qi];
                } else if (deberta) {
                    ek = (dot + disentangled(z, i, qi, j)) * p.scale;
                } else {
                    let tr = table_row(i32(j) - i32(qi));
                    var rel = 0.0;
                    if (tr >= 0) {
                        rel = prel[(z * p.rows + i) * p.r + u32(tr)];
                    }
                    ek = (dot + rel) * p.scale;
                }
                if ((p.flags & SOFTCAP) != 0u) {
                    ek = p.softcap * tanh(clamp(ek / p.softcap, -10.0, 10.0));
                }
                e[s] = ek;
                if (!lane_seen || ek > lane_max) {
                    lane_max = ek;
                }
                lane_seen = true;
            }
        }
        part_max[lane][row] = lane_max;
        part_seen[lane][row] = select(0u, 1u, lane_seen);
        workgroupBarrier();
        // 3. The V tile; the row's new maximum, the running sums rescaled, this lane's weights.
        stage(1u, t0, hd, tid);
        var tile_max = 0.0;
        var found = false;
        for (var ln = 0u; ln < LANES; ln = ln + 1u) {
            if (part_seen[ln][row] != 0u) {
                let pm = part_max[ln][row];
                if (!found || pm > tile_max) {
                    tile_max = pm;
                }
                found = true;
            }
        }
        if (found) {
            var gamma = 0.0;
            if (seen && m > tile_max) {
                tile_max = m;
            }
            if (seen) {
                gamma = exp(m - tile_max);
            }
            m = tile_max;
            seen = true;
            l = l * gamma;
            acc_a = acc_a * gamma;
            acc_b = acc_b * gamma;
        }
        for (var s = 0u; s < KEYS; s = s + 1u) {
            var w = 0.0;
            if (vis[s]) {
                w = exp(e[s] - m);
            }
            tile_p[lane * KEYS + s][row] = w;
        }
        workgroupBarrier();
        // 4. z and l over the tile: this lane's 8 columns.
        let with_rel_v = (p.flags & REL_V) != 0u;
        for (var kk = 0u; kk < TK; kk = kk + 1u) {
            let w = tile_p[kk][row];
            l = l + w;
            acc_a = acc_a + w * tile_kv[kk][lane * COLS4];
            acc_b = acc_b + w * tile_kv[kk][lane * COLS4 + 1u];
            if (with_rel_v && w != 0.0) {
                let tr = table_row(i32(t0 + kk) - i32(qi));
                if (tr >= 0) {
                    let at = v_table + u32(tr) * p.dv;
                    acc_a = acc_a + w * rel_v4(at, c_a);
                    acc_b = acc_b + w * rel_v4(at, c_a + 4u);
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
        store4(qi, hd, c_a, acc_a * inv);
        store4(qi, hd, c_a + 4u, acc_b * inv);
    }
}
