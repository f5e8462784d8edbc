// Strided, batched matrix product with an optional bias and an optional accumulate:
//
//     C[z][m, n] = (C[z][m, n] if ACCUMULATE) + Σ_k A[z][m, k] · B[z][k, n] + (bias[n] if BIAS)
//
// Every operand is addressed as `off + z·zs + row·rs + col·cs` (in f32 elements), so one kernel serves the
// projections x·W + b (z unused), the small relative product P = Q·Tᵀ (B read transposed: rs = 1, cs = d_head;
// a shared table has zs = 0), the weighted values α·V and Shaw's bucketed value term B·w^V (accumulated
// into the concatenated heads), and the output projection.
//
// Tiling: a 16×16 workgroup computes a 64×64 block of C, each invocation a 4×4 register block (rows
// lid.y + 16·a, columns lid.x + 16·b). Each step stages a 64×16 tile of A and a 16×64 tile of B in workgroup
// memory, so an input element is read from the storage buffer once per block instead of 64 times, and
// there are 16 multiply-adds per invocation between barriers for every value staged (barriers are what a
// software rasterizer such as lavapipe pays most for).
// Grid: x = ceil(N / 64), y = ceil(M / 64), z = batch (heads of the chunk).

struct Params {
    m: u32, n: u32, k: u32, flags: u32,            // flags: see below
    a_off: u32, a_rs: u32, a_cs: u32, a_zs: u32,
    b_off: u32, b_rs: u32, b_cs: u32, b_zs: u32,
    c_off: u32, c_rs: u32, c_cs: u32, c_zs: u32,
    bias_off: u32, _pad0: u32, _pad1: u32, _pad2: u32,
}
// Mirrored in Rust by kernels.rs's MatmulParams, field by field (its tests compare the two).
// Flags tested here: ADD_BIAS, ACCUMULATE (kernels.rs's `flag` module, written ahead of this file as constants).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const BLOCK: u32 = 64u;   // rows and columns of C per workgroup
const STEP: u32 = 16u;    // k per staged tile

var<workgroup> tile_a: array<array<f32, 64>, 16>;   // [k][row]
var<workgroup> tile_b: array<array<f32, 64>, 16>;   // [k][col]

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tid = lid.y * 16u + lid.x;
    let row0 = wid.y * BLOCK;
    let col0 = wid.x * BLOCK;
    let a0 = p.a_off + wid.z * p.a_zs;
    let b0 = p.b_off + wid.z * p.b_zs;
    let c0 = p.c_off + wid.z * p.c_zs;

    // 4×4 register block as four vectors: accA.b is row lid.y + 16A, column lid.x + 16b.
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let steps = (p.k + STEP - 1u) / STEP;           // uniform: every invocation reaches the barriers
    for (var t = 0u; t < steps; t = t + 1u) {
        // 1024 values of A and 1024 of B per step, 4 each per invocation; zeros outside the matrices.
        for (var e = 0u; e < 4u; e = e + 1u) {
            let idx = tid + e * 256u;
            let ar = idx / STEP;                    // A: k fastest
            let ak = idx % STEP;
            let gr = row0 + ar;
            let gk = t * STEP + ak;
            var va = 0.0;
            if (gr < p.m && gk < p.k) {
                va = a[a0 + gr * p.a_rs + gk * p.a_cs];
            }
            tile_a[ak][ar] = va;
            let bk = idx / BLOCK;                   // B: columns fastest
            let bc = idx % BLOCK;
            let gkb = t * STEP + bk;
            let gc = col0 + bc;
            var vb = 0.0;
            if (gkb < p.k && gc < p.n) {
                vb = b[b0 + gkb * p.b_rs + gc * p.b_cs];
            }
            tile_b[bk][bc] = vb;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < STEP; kk = kk + 1u) {
            let bv = vec4<f32>(tile_b[kk][lid.x], tile_b[kk][lid.x + 16u], tile_b[kk][lid.x + 32u], tile_b[kk][lid.x + 48u]);
            acc0 = acc0 + tile_a[kk][lid.y] * bv;
            acc1 = acc1 + tile_a[kk][lid.y + 16u] * bv;
            acc2 = acc2 + tile_a[kk][lid.y + 32u] * bv;
            acc3 = acc3 + tile_a[kk][lid.y + 48u] * bv;
        }
        workgroupBarrier();
    }

    var acc = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i = i + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
            let row = row0 + lid.y + 16u * i;
            let col = col0 + lid.x + 16u * j;
            if (row < p.m && col < p.n) {
                var v = acc[i][j];
                if ((p.flags & ADD_BIAS) != 0u) {
                    v = v + bias[p.bias_off + col];
                }
                let ci = c0 + row * p.c_rs + col * p.c_cs;
                if ((p.flags & ACCUMULATE) != 0u) {
                    v = c[ci] + v;
                }
                c[ci] = v;
            }
        }
    }
}
